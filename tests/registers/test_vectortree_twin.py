"""The compiled tree (kleene.registers._vectortree) against the pure-Python reference
(kleene.registers.vectortree), driven directly, node for node.

The twin compares keys as C doubles when both are a ``float`` or an ``int`` of at most 2^53 in
magnitude and with Python's operators otherwise, composes tags in place, walks splits, merges,
inserts and deletes iteratively, and keeps counts in int64 until they overflow.  Here random
inserts, deletes and steps run on both trees with keys that mix ints and floats across 2^53
(``2**53 + 1`` sorts above ``2.0**53``, which a double cannot tell apart), ints past 2^63, equal
ints and floats (``3`` and ``3.0``), NaN-free floats, and strings in a tree of their own; counts
that pass 2^63; and moves with entries past 2^63.  After every operation the two trees must
agree on the count returned, the work counted, and every node: key, sequence number, priority,
vector, subtree sum, pending tag and place in the tree.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kleene import native
from kleene.registers.vectortree import LEFT, PRIO, RIGHT, SEQ, SUM, TAG, VALUE, VEC, VectorTree

_twin = native.load("kleene.registers._vectortree")
pytestmark = pytest.mark.skipif(_twin is None, reason="the compiled twins are not built here")

BIG = 1 << 62  # the sequence number of an "after every start with this key" cut (freshness.BIG)
EXACT = 1 << 53


def _rows(tag: Any) -> Any:
    """A tag as sparse rows without zeros (None: none pending)."""
    if tag is None:
        return None
    return tuple(tuple((j, c) for j, c in row if c) for row in tag)


def ref_nodes(node: Any) -> Any:
    """The reference tree as nested tuples, children included."""
    if node is None:
        return None
    return (node[VALUE], node[SEQ], node[PRIO], list(node[VEC]), list(node[SUM]), _rows(node[TAG]),
            ref_nodes(node[LEFT]), ref_nodes(node[RIGHT]))


def twin_nodes(node: Any) -> Any:
    """The compiled tree as the same nested tuples."""
    if node is None:
        return None
    return (node.value, node.seq, node.prio, node.vec, node.sum, _rows(node.tag),
            twin_nodes(node.left), twin_nodes(node.right))


def twin_flags(node: Any) -> set[str]:
    """Which arithmetics the compiled tree's nodes are in: ``int64``, ``limbs N`` (vectors of N
    uint64 limbs), ``big`` (Python ints); tags: ``limbs tag N``, ``big tag``."""
    if node is None:
        return set()
    here = {"big" if node.big else f"limbs {node.limbs}" if node.limbs else "int64"}
    if node.tag_big:
        here.add("big tag")
    elif node.tag_limbs:
        here.add(f"limbs tag {node.tag_limbs}")
    return here | twin_flags(node.left) | twin_flags(node.right)


def widest(node: Any) -> int:
    """The longest count (in bits) held by any vector or sum of the compiled tree."""
    if node is None:
        return 0
    here = max(abs(x).bit_length() for x in node.vec + node.sum)
    return max(here, widest(node.left), widest(node.right))


def same_keys(a: Any, b: Any) -> bool:
    """Nested trees equal, keys compared by type and value (``3`` is not ``3.0`` here)."""
    if a is None or b is None:
        return a is b
    return (type(a[0]) is type(b[0]) and a[0] == b[0] and a[1:6] == b[1:6]
            and same_keys(a[6], b[6]) and same_keys(a[7], b[7]))


def numeric_keys(rng: random.Random) -> list[Any]:
    """Keys where a comparison through doubles would go wrong, and ordinary ones."""
    keys: list[Any] = [3, 3.0, -0.0, 0, 2.5, -7, float(EXACT), EXACT, EXACT + 1, EXACT + 2,
                       -EXACT - 1, float(-EXACT), 2.0 ** 60, 2 ** 60 + 1, 2 ** 63 + 5, -(2 ** 64),
                       float("inf"), float("-inf"), 1e300, True]
    keys += [rng.uniform(-10, 10) for _ in range(10)] + [rng.randint(-10, 10) for _ in range(10)]
    keys += [EXACT + rng.randint(-4, 4) for _ in range(6)] + [float(EXACT + 2 * rng.randint(-2, 2)) for _ in range(4)]
    return keys


def drive(keys: list[Any], k: int, ops: int, seed: int, huge: bool, entries: tuple[int, ...] = (),
          counts: tuple[int, ...] = (), bits: list[int] | None = None) -> tuple[int, int, set[str]]:
    """Random operations on both trees, compared after each; returns the steps that counted
    something, the steps that went through the path sums, and the twin's arithmetics seen.
    ``entries`` and ``counts`` are extra move entries and inserted counts; ``bits`` collects the
    longest count after each operation."""
    rng = random.Random(seed)
    work_ref, work_twin = [0], [0]
    ref = VectorTree(k, work_ref, seed=seed)
    twin = _twin.VectorTree(k, work_twin, seed=seed)  # type: ignore[union-attr]
    alive: list[tuple[Any, int]] = []
    seq = 0
    moves_pool = []
    for _ in range(6):
        rows = []
        for _i in range(k):
            row = [(j, rng.choice([1, 1, 2, 3] + ([1 << 40, (1 << 63) + 3] if huge else []) + list(entries)))
                   for j in range(k) if rng.random() < 0.5]
            rows.append(tuple(row))
        moves_pool.append(tuple(rows))
    finals_pool = [tuple(rng.choice([0, 1, 2]) for _ in range(k)) for _ in range(4)]
    if huge:
        finals_pool.append(tuple([1 << 64] * k))
    counted = paths = 0
    flags: set[str] = set()
    for _ in range(ops):
        r = rng.random()
        if r < 0.35 or not alive:
            seq += 1
            value = rng.choice(keys)
            vec = [rng.choice([0, 1, 5] + ([(1 << 62) + 1, 1 << 70] if huge else []) + list(counts))
                   for _ in range(k)]
            ref.insert(value, seq, list(vec))
            twin.insert(value, seq, list(vec))
            alive.append((value, seq))
        elif r < 0.55:
            value, s = alive.pop(rng.randrange(len(alive)))
            ref.delete(value, s)
            twin.delete(value, s)
        else:
            cut_keys = sorted({rng.choice(keys) for _ in range(rng.randint(0, 3))})
            cuts = sorted([(v, rng.choice([-1, BIG])) for v in cut_keys])
            for a, b in zip(cuts, cuts[1:]):  # strictly ascending cuts, as the counter hands them
                assert a < b
            still = rng.random() < 0.3 and cuts
            moves = [(None if still or rng.random() < 0.2 else rng.choice(moves_pool),
                      None if rng.random() < 0.3 else rng.choice(finals_pool)) for _ in range(len(cuts) + 1)]
            got_ref, got_twin = ref.step(cuts, moves), twin.step(cuts, moves)
            assert got_ref == got_twin, (cuts, moves)
            counted += got_ref != 0
            paths += bool(still)
        assert work_ref == work_twin
        assert ref.size == twin.size == len(alive)
        assert ref.total() == twin.total()
        assert same_keys(ref_nodes(ref.root), twin_nodes(twin.root))
        flags |= twin_flags(twin.root)
        if bits is not None:
            bits.append(widest(twin.root))
    return counted, paths, flags


def test_mixed_numeric_keys_across_two_to_the_53() -> None:
    """ints and floats in one tree, across 2^53 and 2^63: the twin's order is Python's."""
    rng = random.Random(1)
    counted, paths, flags = drive(numeric_keys(rng), 3, 2500, seed=11, huge=False)
    assert counted > 100 and paths > 50 and "int64" in flags, (counted, paths, flags)


def test_string_keys_compare_with_python() -> None:
    keys = ["a", "b", "ab", "", "ä", "B", "zz", "a\x00"]
    counted, paths, flags = drive(keys, 2, 1500, seed=5, huge=False)
    assert counted > 50 and paths > 20 and "int64" in flags, (counted, paths, flags)


def test_counts_and_moves_past_int64_switch_exactly() -> None:
    """Vectors, tags and moves past 2^63 (uint64 limbs) beside int64 ones, mixed keys."""
    rng = random.Random(2)
    counted, paths, flags = drive(numeric_keys(rng), 3, 1500, seed=23, huge=True)
    assert counted > 50 and paths > 20, (counted, paths, flags)
    assert "int64" in flags and {"limbs 2", "limbs tag 2"} <= flags and "big" not in flags, flags


@pytest.mark.parametrize(("seed", "k"), [(31, 2), (37, 3)])
def test_limb_widths_grow_across_two_to_the_64_128_256_1024(seed: int, k: int) -> None:
    """Counts that cross 2^64, 2^128, 2^256 and 2^1024: moves with entries at the edges of a
    limb (2^63 - 1 in int64; 2^64 - 1, 2^64 + 1 and 2^200 in limbs) and inserted counts at
    2^64 - 1, 2^128 - 1, 2^255 and 2^1023, so every carry out of a limb and every doubling of
    the width (2, 4, 8, 16, 32 limbs) happens while the twin is compared node by node."""
    top = (1 << 64) - 1
    bits: list[int] = []
    counted, paths, flags = drive(numeric_keys(random.Random(seed)), k, 700, seed=seed, huge=True,
                                  entries=((1 << 63) - 1, top, top + 2, 1 << 200),
                                  counts=(top, (1 << 128) - 1, 1 << 255, 1 << 1023), bits=bits)
    assert counted > 50 and paths > 10, (counted, paths)
    widths = {int(f.split()[-1]) for f in flags if f.startswith("limbs")}
    assert {2, 4, 8, 16, 32} <= widths, flags
    assert {"limbs tag 2", "limbs tag 4"} <= flags, flags
    for edge in (64, 128, 256, 1024):
        assert any(b > edge for b in bits), (edge, max(bits))


def test_negative_entries_fall_back_to_python_ints() -> None:
    """Counts are never negative in kleene, but the tree does not assume it: a negative inserted
    count or move entry is kept in Python ints (limbs are unsigned), exactly as the reference."""
    rng = random.Random(4)
    counted, paths, flags = drive(numeric_keys(rng), 3, 1200, seed=41, huge=True, entries=(-2,),
                                  counts=(-7,))
    assert counted > 50 and paths > 20, (counted, paths)
    assert {"int64", "big", "big tag"} <= flags, flags


def test_key_order_needs_more_than_doubles() -> None:
    """The keys of these tests do tell a comparison through doubles from Python's: a tree that
    rounded ``2**53 + 1`` to ``2.0**53`` would order (and cut) them differently."""
    assert float(EXACT + 1) == float(EXACT) and EXACT + 1 > float(EXACT)
    assert float(2 ** 60 + 1) == 2.0 ** 60 and 2 ** 60 + 1 > 2.0 ** 60
    for value in (EXACT + 1, 2 ** 60 + 1):
        work_ref, work_twin = [0], [0]
        ref, twin = VectorTree(1, work_ref), _twin.VectorTree(1, work_twin)  # type: ignore[union-attr]
        for tree in (ref, twin):
            tree.insert(float(value - 1), 1, [1])
            tree.insert(value, 2, [10])
        # the cut (value, -1): the float below it, the int at or above it
        moves = [(None, (1,)), (None, (100,))]
        assert ref.step([(value, -1)], moves) == twin.step([(value, -1)], moves) == 1 + 1000
