"""Hypothesis strategies for differential tests of the engine against the oracle.

Queries use event types A, B, C, whose events all carry ``v`` and ``w``
(ints 0..9), ``s`` (one of "x", "y", "z") and ``k`` (int 0..2, the partition
key).  Patterns use the core CEL operators (``;``, ``:``, OR, ``+``, ``:+``,
AS, FILTER) up to depth 4 over unary predicates.  Every FILTER variable and
every SELECT variable occurs in the pattern it applies to, so generated
queries are well-formed; a FILTER may still be vacuous at run time (a
variable bound only on the other branch of an OR), on purpose.

Division and modulo only ever divide by a non-zero constant or by ``w + 1``,
so no generated predicate depends on how division by zero is treated.

The brute-force oracle is exponential in the number of events an iteration
can pick, so :func:`cases` draws the query first and then a stream whose
length depends on how much iteration the query has.  Tests can additionally
pass a ``budget`` to the oracle and discard the rare case that exceeds it.

To hand a generated query to something that takes text, render it with
:func:`kleene.language.printer.to_ceql`.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from kleene.language import ast

TYPES = ("A", "B", "C")
VARIABLES = ("a", "b", "c")
STRINGS = ("x", "y", "z")
NUMERIC_ATTRS = ("v", "w", "k")
LIKE_PATTERNS = ("x|y", "x", "[xz]", ".*", "y?", "z+", "(x|z)", "[^y]")
SEC = 10**9

Event = dict[str, Any]
Stream = tuple[list[Event], list[int]]


# ------------------------------------------------------------------- streams


def events(max_size: int = 30, min_size: int = 0) -> st.SearchStrategy[list[Event]]:
    event = st.fixed_dictionaries(
        {
            "type": st.sampled_from(TYPES),
            "v": st.integers(0, 9),
            "w": st.integers(0, 9),
            "s": st.sampled_from(STRINGS),
            "k": st.integers(0, 2),
        }
    )
    return st.lists(event, min_size=min_size, max_size=max_size)


@st.composite
def streams(draw: st.DrawFn, max_size: int = 30, min_size: int = 0) -> Stream:
    """``(events, times)``; times are non-decreasing nanoseconds, whole seconds apart."""
    evs = draw(events(max_size, min_size))
    steps = draw(st.lists(st.integers(0, 3), min_size=len(evs), max_size=len(evs)))
    times, now = [], 0
    for step in steps:
        now += step * SEC
        times.append(now)
    return evs, times


# --------------------------------------------------------------- predicates


@st.composite
def numeric_exprs(draw: st.DrawFn, depth: int = 2) -> ast.Expr:
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        if draw(st.booleans()):
            return ast.Attr(draw(st.sampled_from(NUMERIC_ATTRS)))
        return ast.Const(draw(st.integers(-2, 10)))
    kind: ast.ArithOp | None = draw(st.sampled_from(("+", "-", "*", "/", "%", None)))
    left = draw(numeric_exprs(depth - 1))
    if kind is None:
        return ast.Neg(left)
    if kind in ("/", "%"):
        divisor: ast.Expr = draw(
            st.one_of(
                st.integers(1, 4).map(ast.Const),
                st.just(ast.BinOp("+", ast.Attr("w"), ast.Const(1))),
            )
        )
        return ast.BinOp(kind, left, divisor)
    return ast.BinOp(kind, left, draw(numeric_exprs(depth - 1)))


COMPARE_OPS: tuple[ast.CompareOp, ...] = ("<", "<=", ">", ">=", "==", "!=")


@st.composite
def atoms(draw: st.DrawFn) -> ast.Pred:
    kind = draw(st.sampled_from(("num", "num", "str", "inset", "instr", "range", "like")))
    op = draw(st.sampled_from(COMPARE_OPS))
    negated = draw(st.booleans())
    if kind == "num":
        left = ast.Attr(draw(st.sampled_from(NUMERIC_ATTRS)))
        if draw(st.booleans()):
            return ast.Compare(op, draw(numeric_exprs()), draw(numeric_exprs()))
        return ast.Compare(op, left, draw(numeric_exprs(1)))
    if kind == "str":
        return ast.Compare(op, ast.Attr("s"), ast.Const(draw(st.sampled_from(STRINGS + ("w",)))))
    if kind == "inset":
        values = draw(st.lists(st.integers(0, 9), min_size=1, max_size=4, unique=True))
        consts = tuple(ast.Const(float(n) if n == 1 else n) for n in values)  # 1.0 == 1
        return ast.InSet(ast.Attr(draw(st.sampled_from(NUMERIC_ATTRS))), consts, negated)
    if kind == "instr":
        strs = draw(st.lists(st.sampled_from(STRINGS), min_size=1, max_size=2, unique=True))
        return ast.InSet(ast.Attr("s"), tuple(ast.Const(s) for s in strs), negated)
    if kind == "range":
        low, high = draw(st.integers(-1, 9)), draw(st.integers(-1, 10))
        return ast.InRange(draw(numeric_exprs(1)), ast.Const(low), ast.Const(high), negated)
    return ast.Like(ast.Attr("s"), draw(st.sampled_from(LIKE_PATTERNS)))


@st.composite
def predicates(draw: st.DrawFn, depth: int = 2) -> ast.Pred:
    if depth == 0 or draw(st.integers(0, 2)) > 0:
        return draw(atoms())
    kind = draw(st.sampled_from(("not", "and", "or")))
    if kind == "not":
        return ast.PNot(draw(predicates(depth - 1)))
    left, right = draw(predicates(depth - 1)), draw(predicates(depth - 1))
    return ast.PAnd(left, right) if kind == "and" else ast.POr(left, right)


@st.composite
def filter_exprs(draw: st.DrawFn, variables: tuple[str, ...], depth: int = 2) -> ast.FilterExpr:
    if depth == 0 or draw(st.integers(0, 2)) > 0:
        return ast.FilterAtom(draw(st.sampled_from(variables)), draw(predicates()))
    left = draw(filter_exprs(variables, depth - 1))
    right = draw(filter_exprs(variables, depth - 1))
    return ast.FilterAnd(left, right) if draw(st.booleans()) else ast.FilterOr(left, right)


# ----------------------------------------------------------------- patterns


def variables_of(pattern: ast.Pattern) -> frozenset[str]:
    """Variables bound somewhere in ``pattern`` (event types included)."""
    if isinstance(pattern, ast.EventType):
        return frozenset({pattern.name})
    if isinstance(pattern, ast.As):
        return variables_of(pattern.pattern) | {pattern.var}
    if isinstance(pattern, ast.Filter | ast.Iter):
        return variables_of(pattern.pattern)
    if isinstance(pattern, ast.Seq | ast.Or):
        return variables_of(pattern.left) | variables_of(pattern.right)
    raise TypeError(f"unexpected pattern {pattern!r}")


@st.composite
def patterns(draw: st.DrawFn, depth: int = 4) -> ast.Pattern:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return ast.EventType(draw(st.sampled_from(TYPES)))
    kind = draw(st.sampled_from(("as", "filter", "seq", "seq", "contig", "or", "iter", "citer")))
    if kind in ("seq", "contig", "or"):
        left, right = draw(patterns(depth - 1)), draw(patterns(depth - 1))
        if kind == "or":
            return ast.Or(left, right)
        return ast.Seq(left, right, kind == "contig")
    inner = draw(patterns(depth - 1))
    if kind == "as":
        return ast.As(inner, draw(st.sampled_from(VARIABLES)))
    if kind == "filter":
        return ast.Filter(inner, draw(filter_exprs(tuple(sorted(variables_of(inner))))))
    return ast.Iter(inner, kind == "citer")


def iteration_depth(pattern: ast.Pattern) -> int:
    """Iterations along the worst path, counting every ``+`` of a sequence.

    A rough measure of how fast the oracle's work grows with the stream.
    """
    if isinstance(pattern, ast.EventType):
        return 0
    if isinstance(pattern, ast.Iter):
        return 1 + iteration_depth(pattern.pattern)
    if isinstance(pattern, ast.As | ast.Filter):
        return iteration_depth(pattern.pattern)
    if isinstance(pattern, ast.Seq):
        return iteration_depth(pattern.left) + iteration_depth(pattern.right)
    if isinstance(pattern, ast.Or):
        return max(iteration_depth(pattern.left), iteration_depth(pattern.right))
    raise TypeError(f"unexpected pattern {pattern!r}")


@st.composite
def queries(draw: st.DrawFn, max_depth: int = 4) -> ast.Query:
    where = draw(patterns(max_depth))
    bound = tuple(sorted(variables_of(where)))
    choice = draw(st.sampled_from(("*", "*", "none", "vars")))
    items: tuple[ast.SelectItem, ...] | None = None
    if choice == "none":
        items = ()
    elif choice == "vars":
        chosen = draw(st.lists(st.sampled_from(bound), min_size=1, max_size=3, unique=True))
        items = tuple(ast.SelectItem(v) for v in chosen)
    strategy: ast.Strategy = draw(st.sampled_from(("ALL", "ALL", "ALL", "ANY")))
    partition: tuple[tuple[str, ...], ...] = draw(st.sampled_from(((), (), (("k",),))))
    within = draw(
        st.one_of(
            st.none(),
            st.integers(0, 12).map(ast.EventsWindow),
            st.integers(0, 20).map(lambda n: ast.DurationWindow(n * SEC)),
        )
    )
    consume: ast.Consume = draw(st.sampled_from(("NONE", "NONE", "NONE", "ANY", "PARTITION")))
    limit = draw(st.one_of(st.none(), st.none(), st.integers(1, 5)))
    return ast.Query(ast.Select(strategy, items), ("S",), where, partition, within, consume, limit)


@st.composite
def cases(
    draw: st.DrawFn, max_size: int = 30, max_depth: int = 4
) -> tuple[ast.Query, list[Event], list[int]]:
    """``(query, events, times)`` sized so that the oracle stays fast.

    The more iterations a query chains or nests, the shorter its stream; a
    window bounds the work too, so windowed queries get longer streams.
    """
    q = draw(queries(max_depth))
    depth = iteration_depth(q.where)
    windowed = isinstance(q.within, ast.EventsWindow) and q.within.count <= 6
    limit = max_size if depth == 0 or windowed else (24, 16, 12)[min(depth, 3) - 1]
    size = min(max_size, limit)
    n = draw(st.integers(size // 2, size))  # hypothesis alone favours tiny streams
    evs, times = draw(streams(max_size=n, min_size=n))
    return q, evs, times
