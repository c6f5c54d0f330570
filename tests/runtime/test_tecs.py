"""The tECS operations of CORE §4.2 and the enumeration of appendix B.1."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kleene.runtime import tecs
from kleene.runtime.enumeration import Found, enumerate_node
from kleene.runtime.tecs import UNION


def collect(node: tecs.Node, tau: int = -(10**9), limit: int = 10**9) -> list[tuple[int, tuple[int, ...]]]:
    out: list[Found] = []
    enumerate_node(node, tau, out, limit, 0)
    return [(s, ps) for s, _, ps, _ in out]


def odepth(n: tecs.Node) -> int:
    return odepth(n[2]) + 1 if n[0] == UNION else 0


def check_structure(n: tecs.Node, seen: set[int] | None = None) -> None:
    """Time-ordered and 3-bounded, recursively."""
    seen = set() if seen is None else seen
    if id(n) in seen:
        return
    seen.add(id(n))
    assert odepth(n) <= 3
    if n[0] == UNION:
        assert n[2][1] == n[1] >= n[3][1]
        check_structure(n[2], seen)
        check_structure(n[3], seen)
    elif n[0] == tecs.OUTPUT:
        assert n[3][1] == n[1]
        check_structure(n[3], seen)


def test_figure4_example() -> None:
    # Example 2: node 4 encodes (0,{0,2,4}) and (1,{1,2,4}); node 6 adds 5 as
    # an alternative to 2.  Built with the operations of §4.2.
    created: list[tecs.Node] = []
    b0, b1 = tecs.new_bottom(0, 0), tecs.new_bottom(1, 1)
    o0, o1 = tecs.extend(b0, 0), tecs.extend(b1, 1)
    ul = [o1]
    tecs.insert(ul, o0, created)
    two = tecs.extend(tecs.merge(ul, created), 2)
    four = tecs.extend(two, 4)
    assert sorted(collect(four)) == [(0, (0, 2, 4)), (1, (1, 2, 4))]
    # enumeration order: the run that started later comes first
    assert collect(four)[0] == (1, (1, 2, 4))
    five = tecs.extend(tecs.merge(ul, created), 5)
    six = tecs.extend(tecs.union(two, five, created), 6)
    assert sorted(collect(six)) == [
        (0, (0, 2, 6)),
        (0, (0, 5, 6)),
        (1, (1, 2, 6)),
        (1, (1, 5, 6)),
    ]
    # Example 3: with window 6 at j = 6 nothing is pruned; with tau = 1 the
    # runs from 0 are pruned.
    assert sorted(collect(six, tau=1)) == [(1, (1, 2, 6)), (1, (1, 5, 6))]
    assert len(collect(six, limit=1)) == 1


Denoted = set[tuple[int, tuple[int, ...]]]


@st.composite
def safe_nodes(draw: st.DrawFn) -> list[tuple[tecs.Node, Denoted]]:
    """Random safe nodes, all with max 5, each with the open complex events it denotes.

    Leaves are what Algorithm 1 builds: merged union-lists whose first entry
    is a run started at 5; inner nodes are unions of random pairs.
    """
    created: list[tecs.Node] = []
    pool: list[tuple[tecs.Node, Denoted]] = []
    fresh = iter(range(100, 10**6))
    for _ in range(draw(st.integers(2, 5))):
        ul: list[tecs.Node] = []
        denoted: Denoted = set()
        for start in [5, *sorted(draw(st.sets(st.integers(0, 4), max_size=3)), reverse=True)]:
            pos = next(fresh)
            ul.append(tecs.extend(tecs.new_bottom(start, start), pos))
            denoted.add((start, (pos,)))
        pool.append((tecs.merge(ul, created), denoted))
    for _ in range(draw(st.integers(1, 8))):
        i = draw(st.integers(0, len(pool) - 1))
        j = draw(st.integers(0, len(pool) - 1).filter(lambda k, i=i: k != i))
        (a, sa), (b, sb) = pool[i], pool[j]
        if sa & sb:
            continue  # Algorithm 1 never unions overlapping sets (duplicate-freeness)
        pool.append((tecs.union(a, b, created), sa | sb))
    return pool


@settings(max_examples=200, deadline=None)
@given(safe_nodes())
def test_union_gadgets_keep_semantics_and_bounds(pool: list[tuple[tecs.Node, Denoted]]) -> None:
    for node, expected in pool:
        check_structure(node)
        got = collect(node)
        assert len(got) == len(set(got))  # duplicate-free
        assert set(got) == expected
        # window pruning drops exactly the complex events that start too early
        for tau in range(7):
            assert set(collect(node, tau)) == {(s, ps) for s, ps in expected if s >= tau}


def test_union_list_insert_and_merge() -> None:
    created: list[tecs.Node] = []
    n0 = tecs.extend(tecs.new_bottom(9, 9), 9)
    ul = [n0]
    for start in (3, 7, 5, 7, 9):
        tecs.insert(ul, tecs.extend(tecs.new_bottom(start, start), start), created)
    maxima = [n[1] for n in ul]
    assert maxima[0] == 9
    assert maxima[1:] == sorted(set(maxima[1:]), reverse=True)
    merged = tecs.merge(ul, created)
    check_structure(merged)
    assert sorted(collect(merged)) == sorted(
        [(9, (9,)), (3, (3,)), (7, (7,)), (5, (5,)), (7, (7,)), (9, (9,))]
    )
    # window pruning: only starts >= 7 survive
    assert sorted(s for s, _ in collect(merged, tau=7)) == [7, 7, 9, 9]


def test_prune_and_sever() -> None:
    created: list[tecs.Node] = []
    old = tecs.extend(tecs.new_bottom(1, 1), 1)
    new = tecs.extend(tecs.new_bottom(8, 8), 8)
    ul = [new, old]
    assert tecs.prune(ul, 5) and ul == [new]
    assert not tecs.prune([old], 5)
    u = tecs.merge([new, old], created)
    alive = tecs.sever(created, 5)
    assert alive == [] and u[3] is tecs.DEAD_NODE
    assert collect(u) == [(8, (8,))]
