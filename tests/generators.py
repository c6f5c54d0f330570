"""Hypothesis strategies for differential tests of the engine against the oracle.

Queries use event types A, B, C, whose events all carry ``v`` and ``w``
(ints 0..9), ``s`` (one of "x", "y", "z") and ``k`` (int 0..2, the partition
key).  Patterns use the core CEL operators (``;``, ``:``, OR, ``+``, ``:+``,
AS, FILTER) up to depth 4 over unary predicates; with ``full_cel=True`` also
AND, ALL, UNLESS, single-event NOT(...), ``*`` and counted repetition
(``{n,m}``, ``?``, ``:{n,m}``, counts up to 4) and the wildcard event ``_``
(``S>_``), and every selection
strategy (the default is unchanged, for the core engine's tests).  Every FILTER variable and
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

from dataclasses import replace
from typing import Any

from hypothesis import strategies as st

from kleene.language import ast
from kleene.language.conditions import has_conditions
from kleene.language.variables import WILDCARD
from kleene.reference.semantics import shortest

TYPES = ("A", "B", "C")
VARIABLES = ("a", "b", "c")
STRINGS = ("x", "y", "z")
NUMERIC_ATTRS = ("v", "w", "k")
LIKE_PATTERNS = ("x|y", "x", "[xz]", ".*", "y?", "z+", "(x|z)", "[^y]")
SEC = 10**9

Event = dict[str, Any]
Stream = tuple[list[Event], list[int]]


# ------------------------------------------------------------------- streams


STREAMS = ("S1", "S2", "S3")
"""Stream names of multi-stream cases; events carry theirs under ``STREAM_KEY``."""
STREAM_KEY = "stream"


def events(
    max_size: int = 30, min_size: int = 0, with_streams: bool = False
) -> st.SearchStrategy[list[Event]]:
    fields = {
        "type": st.sampled_from(TYPES),
        "v": st.integers(0, 9),
        "w": st.integers(0, 9),
        "s": st.sampled_from(STRINGS),
        "k": st.integers(0, 2),
    }
    if with_streams:
        fields[STREAM_KEY] = st.sampled_from(STREAMS)
    return st.lists(st.fixed_dictionaries(fields), min_size=min_size, max_size=max_size)


@st.composite
def streams(
    draw: st.DrawFn, max_size: int = 30, min_size: int = 0, with_streams: bool = False
) -> Stream:
    """``(events, times)``; times are non-decreasing nanoseconds, whole seconds apart.

    ``with_streams``: each event also names its stream (one of :data:`STREAMS`).
    """
    evs = draw(events(max_size, min_size, with_streams))
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
def thresholds(draw: st.DrawFn) -> ast.Pred:
    """``attr op c`` with ``c`` inside the attribute's values (v, w: 1..8; k: 0..2).

    On a stream of 30 events such an atom is neither always true nor always
    false, so a FILTER built of them decides something.
    """
    attr = draw(st.sampled_from(NUMERIC_ATTRS))
    if attr == "k":
        op: ast.CompareOp = draw(st.sampled_from(("==", "!=", "<", ">")))
        value = 1 if op in ("<", ">") else draw(st.integers(0, 2))
        return ast.Compare(op, ast.Attr(attr), ast.Const(value))
    op = draw(st.sampled_from(("<", "<=", ">", ">=", "<", ">", "!=", "==")))
    return ast.Compare(op, ast.Attr(attr), ast.Const(draw(st.integers(1, 8))))


@st.composite
def atoms(draw: st.DrawFn) -> ast.Pred:
    kind = draw(
        st.sampled_from(("threshold",) * 5 + ("num", "num", "str", "inset", "instr", "range", "like"))
    )
    op = draw(st.sampled_from(COMPARE_OPS))
    negated = draw(st.booleans())
    if kind == "threshold":
        return draw(thresholds())
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
        if draw(st.booleans()):  # a real slice of v or w's values
            low = draw(st.integers(0, 7))
            high = draw(st.integers(low + 1, 9))
            operand: ast.Expr = ast.Attr(draw(st.sampled_from(("v", "w"))))
        else:
            low, high = draw(st.integers(-1, 9)), draw(st.integers(-1, 10))
            operand = draw(numeric_exprs(1))
        return ast.InRange(operand, ast.Const(low), ast.Const(high), negated)
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
    """Variables a match of ``pattern`` can carry (event types included).

    The right side of UNLESS and the inside of NOT(...) bind nothing outside
    (only the left side's valuation survives UNLESS; NOT binds no variable),
    so filters and SELECT lists never refer to them.
    """
    if isinstance(pattern, ast.EventType):
        return frozenset() if pattern.name == WILDCARD else frozenset({pattern.name})
    if isinstance(pattern, ast.As):
        return variables_of(pattern.pattern) | {pattern.var}
    if isinstance(pattern, ast.Filter | ast.Iter | ast.Star | ast.Repeat):
        return variables_of(pattern.pattern)
    if isinstance(pattern, ast.Seq | ast.Or | ast.And | ast.All):
        return variables_of(pattern.left) | variables_of(pattern.right)
    if isinstance(pattern, ast.Unless):
        return variables_of(pattern.left)
    if isinstance(pattern, ast.NotEvent):
        return frozenset()
    raise TypeError(f"unexpected pattern {pattern!r}")


def types_in_order(p: ast.Pattern) -> list[ast.EventType]:
    """The event types of ``p`` left to right."""
    if isinstance(p, ast.EventType):
        return [p]
    return [
        e
        for name in ("pattern", "left", "right")
        if isinstance(child := getattr(p, name, None), ast.Pattern)
        for e in types_in_order(child)
    ]


@st.composite
def event_types(draw: st.DrawFn, qualifiers: tuple[str, ...] = ()) -> ast.EventType:
    """``E``, or ``S>E`` with S one of ``qualifiers`` (streams the query reads)."""
    name = draw(st.sampled_from(TYPES))
    if qualifiers and draw(st.booleans()):
        return ast.EventType(name, draw(st.sampled_from(qualifiers)))
    return ast.EventType(name)


@st.composite
def not_events(draw: st.DrawFn, qualifiers: tuple[str, ...] = ()) -> ast.NotEvent:
    """``NOT(E)``, ``NOT(E FILTER E[P])`` or ``NOT(E AS v FILTER v[P])``: single events."""
    event = draw(event_types(qualifiers))
    kind = draw(st.sampled_from(("type", "filter", "as")))
    if kind == "type":
        return ast.NotEvent(event)
    if kind == "filter":
        return ast.NotEvent(ast.Filter(event, ast.FilterAtom(event.name, draw(predicates(1)))))
    var = draw(st.sampled_from(VARIABLES))
    return ast.NotEvent(ast.Filter(ast.As(event, var), ast.FilterAtom(var, draw(predicates(1)))))


BASE_KINDS = frozenset(("as", "filter", "seq", "contig", "or", "iter", "citer"))
"""What the core engine has always supported; ``full_cel`` may add to it."""

Language = bool | frozenset[str]
"""``full_cel``: False (core), True (everything), or the extra kinds and strategies to use."""

FULL_KINDS = (
    "as", "filter", "seq", "seq", "contig", "or", "iter", "citer",
    "star", "star", "and", "all", "all", "unless", "unless", "not", "not", "repeat", "repeat",
)  # fmt: skip

TOP_KINDS = (
    "seq", "seq", "seq", "seq", "contig", "iter", "iter", "citer", "filter", "filter", "as", "or",
    "star", "all", "unless", "unless", "unless", "repeat", "and",
)  # fmt: skip
"""The outermost operator: what can match several events (a sequence, an iteration...), so that
a strategy, a window, PARTITION BY or CONSUME BY has matches to decide between.  FILTER, AS and
OR keep drawing until they wrap such a pattern."""


def _allowed(kinds: tuple[str, ...], full_cel: Language) -> tuple[str, ...]:
    if isinstance(full_cel, frozenset):
        return tuple(k for k in kinds if k in BASE_KINDS or k in full_cel)
    return kinds if full_cel else tuple(k for k in kinds if k in BASE_KINDS)


@st.composite
def leaves(draw: st.DrawFn, full_cel: Language = False, qualifiers: tuple[str, ...] = ()) -> ast.Pattern:
    """An event type (``S>E``, or ``_`` when ``full_cel`` has the wildcard), bound to a variable
    one time in three so that sequences relate several variables."""
    wildcard = full_cel is True or (isinstance(full_cel, frozenset) and "wildcard" in full_cel)
    leaf: ast.Pattern
    if wildcard and draw(st.integers(0, 4)) == 0:  # `_` (or `S>_`): any event
        stream = draw(st.sampled_from(qualifiers)) if qualifiers and draw(st.booleans()) else None
        leaf = ast.EventType(WILDCARD, stream)
    elif qualifiers:
        leaf = draw(event_types(qualifiers))
    else:
        leaf = ast.EventType(draw(st.sampled_from(TYPES)))
    if draw(st.integers(0, 2)) == 0:
        leaf = ast.As(leaf, draw(st.sampled_from(VARIABLES)))
    return leaf


@st.composite
def single_event_sides(
    draw: st.DrawFn, depth: int, full_cel: Language, qualifiers: tuple[str, ...]
) -> ast.Pattern:
    """The right side of UNLESS: most often one (maybe filtered) event, which often occurs inside
    a match's span (a random pattern rarely does, and UNLESS then changes nothing)."""
    if depth == 0 or draw(st.integers(0, 2)) > 0:
        leaf = draw(leaves(full_cel, qualifiers))
        bound = tuple(sorted(variables_of(leaf)))
        if bound and draw(st.booleans()):
            return ast.Filter(leaf, ast.FilterAtom(draw(st.sampled_from(bound)), draw(thresholds())))
        return leaf
    return draw(patterns(depth, full_cel, qualifiers))


@st.composite
def patterns(
    draw: st.DrawFn,
    depth: int = 4,
    full_cel: Language = False,
    qualifiers: tuple[str, ...] = (),
    top: bool = False,
) -> ast.Pattern:
    """Random patterns; ``full_cel`` adds AND, ALL, UNLESS, NOT(...) and ``*``.

    ``qualifiers``: stream names that event types may be qualified with
    (``S>E``).  ``top``: the pattern is a query's whole WHERE, drawn from
    :data:`TOP_KINDS` (never a bare event type).
    """
    if depth == 0 or (not top and draw(st.integers(0, 3)) == 0):
        return draw(leaves(full_cel, qualifiers))
    kind = draw(st.sampled_from(_allowed(TOP_KINDS if top else FULL_KINDS, full_cel)))
    if kind == "not":
        return draw(not_events(qualifiers))
    if kind == "and":
        # Two independent patterns rarely have a match in common; AND of a
        # pattern with a (re-filtered) copy of itself, or with a pattern of
        # the same shape, makes non-empty results likely.
        left = draw(patterns(depth - 1, full_cel, qualifiers, top))
        right = draw(
            st.one_of(
                st.just(left),
                _refiltered(left),
                patterns(depth - 1, full_cel, qualifiers),
            )
        )
        return ast.And(left, right)
    if kind == "unless":
        left = draw(patterns(depth - 1, full_cel, qualifiers, top=True))
        return ast.Unless(left, draw(single_event_sides(depth - 1, full_cel, qualifiers)))
    if kind in ("seq", "contig", "or", "all"):
        left = draw(patterns(depth - 1, full_cel, qualifiers, top and kind == "or"))
        right = draw(patterns(depth - 1, full_cel, qualifiers))
        if kind == "or":
            return ast.Or(left, right)
        if kind == "all":
            return ast.All(left, right)
        return ast.Seq(left, right, kind == "contig")
    inner = draw(patterns(depth - 1, full_cel, qualifiers, top and kind in ("as", "filter")))
    bound = tuple(sorted(variables_of(inner)))
    if kind == "as" or (kind == "filter" and not bound):
        return ast.As(inner, draw(st.sampled_from(VARIABLES)))
    if kind == "filter":
        return ast.Filter(inner, draw(filter_exprs(bound)))
    if kind == "star":
        return ast.Star(inner)
    if kind == "repeat":
        return draw(repeats(inner))
    return ast.Iter(inner, kind == "citer")


@st.composite
def repeats(draw: st.DrawFn, inner: ast.Pattern, most: int = 4) -> ast.Repeat:
    """``inner{n,m}`` (``{n}``, ``{n,}``, ``{,m}``, ``?``), or ``inner:{n,m}``: counts up to ``most``."""
    low = draw(st.integers(0, most - 1))
    high = draw(st.one_of(st.none(), st.integers(max(low, 1), most)))
    return ast.Repeat(inner, low, high, draw(st.integers(0, 2)) == 0)


@st.composite
def _refiltered(draw: st.DrawFn, pattern: ast.Pattern) -> ast.Pattern:
    """``pattern`` under one more filter (or AS when it binds nothing)."""
    bound = tuple(sorted(variables_of(pattern)))
    if not bound:
        return ast.As(pattern, draw(st.sampled_from(VARIABLES)))
    return ast.Filter(pattern, draw(filter_exprs(bound, depth=0)))


def one_event(pattern: ast.Pattern) -> bool:
    """Whether every match of ``pattern`` is a single event (an event type, maybe bound,
    filtered or OR-ed with another)."""
    if isinstance(pattern, ast.EventType | ast.NotEvent):
        return True
    if isinstance(pattern, ast.As | ast.Filter):
        return one_event(pattern.pattern)
    if isinstance(pattern, ast.Or):
        return one_event(pattern.left) and one_event(pattern.right)
    if isinstance(pattern, ast.And):
        return one_event(pattern.left) or one_event(pattern.right)
    if isinstance(pattern, ast.Unless):
        return one_event(pattern.left)
    return False


@st.composite
def fitted_window(draw: st.DrawFn, query: ast.Query, most: int) -> ast.Query:
    """``query`` with a window that can hold a match (its fewest events and a few more), yet spans
    at most ``most`` events (the oracle's brute force); a window that no match fits in would
    decide nothing."""
    span = window_events(query.within)
    if span is None:
        return query
    least = min(most, max(1, shortest(query.where)) + draw(st.integers(1, 5)))
    if least <= span <= most:
        return query
    count = min(most, max(least, span)) - 1
    if isinstance(query.within, ast.EventsWindow):
        return replace(query, within=ast.EventsWindow(count))
    return replace(query, within=ast.DurationWindow(count * SEC))


def iteration_depth(pattern: ast.Pattern) -> int:
    """Iterations along the worst path, counting every ``+`` of a sequence.

    A rough measure of how fast the oracle's work grows with the stream.  ALL
    pairs every match of one side with every match of the other, so it
    counts like a sequence plus one.
    """
    if isinstance(pattern, ast.EventType | ast.NotEvent):
        return 0
    if isinstance(pattern, ast.Iter | ast.Star):
        return 1 + iteration_depth(pattern.pattern)
    if isinstance(pattern, ast.Repeat):  # its copies in sequence, then maybe a `*`
        copies = pattern.low if pattern.high is None else pattern.high
        return copies * iteration_depth(pattern.pattern) + (pattern.high is None)
    if isinstance(pattern, ast.As | ast.Filter):
        return iteration_depth(pattern.pattern)
    if isinstance(pattern, ast.Seq):
        return iteration_depth(pattern.left) + iteration_depth(pattern.right)
    if isinstance(pattern, ast.All):
        return iteration_depth(pattern.left) + iteration_depth(pattern.right) + 1
    if isinstance(pattern, ast.Or | ast.And | ast.Unless):
        return max(iteration_depth(pattern.left), iteration_depth(pattern.right))
    raise TypeError(f"unexpected pattern {pattern!r}")


FULL_STRATEGIES: tuple[ast.Strategy, ...] = ("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")


@st.composite
def windows(draw: st.DrawFn) -> ast.Window | None:
    """WITHIN: four times in five a window of 1-10 events or 1-15 seconds (0 rarely), far shorter
    than the 30-40 events :func:`cases` draws for a windowed query, so that it cuts matches."""
    kind = draw(st.sampled_from(("none", "events", "events", "seconds", "seconds")))
    if kind == "none":
        return None
    zero = draw(st.integers(0, 19)) == 0
    if kind == "events":
        return ast.EventsWindow(0 if zero else draw(st.integers(1, 10)))
    return ast.DurationWindow(0 if zero else draw(st.integers(1, 15)) * SEC)


def window_events(within: ast.Window | None) -> int | None:
    """About how many events ``within`` spans in a :func:`streams` stream (None: unbounded).

    Times advance 0-3 seconds per event (1.5 on average), so a window of n
    seconds holds about n events or fewer.
    """
    if isinstance(within, ast.EventsWindow):
        return within.count + 1
    if isinstance(within, ast.DurationWindow):
        return within.nanos // SEC + 1
    return None


@st.composite
def queries(
    draw: st.DrawFn,
    max_depth: int = 4,
    full_cel: Language = False,
    with_streams: bool = False,
    strategy: ast.Strategy | None = None,
) -> ast.Query:
    """Random well-formed queries; ``full_cel`` uses the whole CEL language and every strategy.

    ``with_streams``: the FROM clause lists some of :data:`STREAMS` (or is
    absent: every stream), and event types may be qualified ``S>E`` by the
    streams the query reads.  ``strategy``: this selection strategy (else
    one drawn).  A strategy other than ALL and ANY, or a LIMIT, only decides
    something when several matches end at one event, one inside another for
    MAX: a pattern without an iteration then gets one in front (``X+ ; P``).
    """
    from_streams: tuple[str, ...] = ("S",)
    qualifiers: tuple[str, ...] = ()
    if with_streams:
        from_streams = tuple(
            sorted(draw(st.sets(st.sampled_from(STREAMS), min_size=0, max_size=len(STREAMS))))
        )
        qualifiers = from_streams or STREAMS
    if strategy is None:
        if isinstance(full_cel, frozenset):
            strategy = draw(st.sampled_from(("ALL", "ANY", *sorted(full_cel & set(FULL_STRATEGIES)))))
        elif full_cel:
            strategy = draw(st.sampled_from(FULL_STRATEGIES))
        else:
            strategy = draw(st.sampled_from(("ALL", "ALL", "ALL", "ANY")))
    limit = None
    # NEXT and LAST keep one match per end, so a LIMIT cuts nothing; MAX's matches at one end are
    # maximal under inclusion and almost never several (a probe: a LIMIT cut 1 of 37 MAX cases).
    if strategy not in ("NEXT", "LAST", "MAX"):
        limit = draw(st.sampled_from((None, None, 1, 1, 2, 3)))
    where = draw(patterns(max_depth, full_cel, qualifiers, top=max_depth > 0))
    choosy = strategy in ("NEXT", "LAST", "MAX") or limit is not None
    if choosy and max_depth > 0 and (iteration_depth(where) == 0 or draw(st.booleans())):
        where = ast.Seq(ast.Iter(draw(leaves(full_cel, qualifiers))), where)
    bound = tuple(sorted(variables_of(where)))
    choice = draw(st.sampled_from(("*", "*", "none", "vars")))
    items: tuple[ast.SelectItem, ...] | None = None
    if choice == "none":
        items = ()
    elif choice == "vars" and bound:  # NOT(...) alone binds nothing
        chosen = draw(st.lists(st.sampled_from(bound), min_size=1, max_size=3, unique=True))
        items = tuple(ast.SelectItem(v) for v in chosen)
    partition: tuple[tuple[str, ...], ...] = draw(st.sampled_from(((), (), (("k",),))))
    within = draw(windows())
    consume: ast.Consume = draw(st.sampled_from(("NONE", "NONE", "NONE", "ANY", "PARTITION")))
    return ast.Query(
        ast.Select(strategy, items), from_streams, where, partition, within, consume, limit
    )


@st.composite
def cases(
    draw: st.DrawFn,
    max_size: int = 40,
    max_depth: int = 4,
    full_cel: Language = False,
    with_streams: bool = False,
    strategy: ast.Strategy | None = None,
    planted: bool = False,
) -> tuple[ast.Query, list[Event], list[int]]:
    """``(query, events, times)`` sized so that the oracle stays fast.

    A windowed query gets a stream of 30-40 events (a window short enough
    for the brute force: deep iterations get at most 7 events of window);
    without a window, the more iterations a query chains or nests, the
    shorter its stream.
    ``full_cel`` draws from the whole CEL language (see :func:`patterns`),
    where ALL counts as one more iteration (it multiplies match sets).
    ``with_streams`` draws multi-stream cases (see :func:`queries`): events
    name their stream under :data:`STREAM_KEY`.  ``strategy``: see :func:`queries`.
    ``planted``: the stream is drawn from the query (:func:`planted_streams`, two or three of its
    matches planted among random events), so that a strategy, UNLESS, a window or LIMIT has
    matches to decide between; a query with a LIMIT always gets such a stream (on a random one,
    two in five such cases had no match at all, and a LIMIT cut 30% of them).
    """
    q = draw(queries(max_depth, full_cel, with_streams, strategy))
    depth = iteration_depth(q.where)
    q = draw(fitted_window(q, 12 if depth <= 1 else 7))  # what the oracle's brute force affords
    if q.within is not None or depth == 0:
        low, high = min(30, max_size), max_size
    else:
        sizes = (24, 16, 12, 10) if full_cel else (24, 16, 12)
        high = min(max_size, sizes[min(depth, len(sizes)) - 1])
        low = high // 2
    n = draw(st.integers(low, high))  # hypothesis alone favours tiny streams
    if planted or q.limit is not None:
        evs, times, _ = draw(planted_streams(q, n, with_streams=with_streams))
    else:
        evs, times = draw(streams(max_size=n, min_size=n, with_streams=with_streams))
    return q, evs, times


# ------------------------------------------------- conditions between events


@st.composite
def nary_predicates(draw: st.DrawFn, target: str, other: str | None) -> ast.Pred:
    """A predicate on ``target`` reading ``other.attr`` (or ``prev(target).attr`` when None)."""

    def ref(attr: str) -> ast.VarAttr:
        return ast.VarAttr(target, attr, True) if other is None else ast.VarAttr(other, attr)

    kind = draw(st.sampled_from(("num", "num", "arith", "str")))
    op = draw(st.sampled_from(COMPARE_OPS))
    if kind == "str":
        core: ast.Pred = ast.Compare(draw(st.sampled_from(("==", "!="))), ast.Attr("s"), ref("s"))
    elif kind == "arith":
        left = ast.BinOp("+", ast.Attr(draw(st.sampled_from(("v", "w")))), ast.Const(draw(st.integers(-3, 3))))
        right = ast.BinOp(draw(st.sampled_from(("*", "-", "+"))), ref(draw(st.sampled_from(("v", "w")))), ast.Const(draw(st.integers(1, 2))))
        core = ast.Compare(op, left, right)
    else:
        core = ast.Compare(op, ast.Attr(draw(st.sampled_from(("v", "w")))), ref(draw(st.sampled_from(("v", "w")))))
    shape = draw(st.sampled_from(("plain", "plain", "plain", "and", "and", "or", "not")))
    if shape == "and":
        return ast.PAnd(draw(atoms()), core) if draw(st.booleans()) else ast.PAnd(core, draw(atoms()))
    if shape == "or":
        return ast.POr(core, draw(atoms()))
    if shape == "not":
        return ast.PNot(core)
    return core


def iterated_variables(pattern: ast.Pattern, inside: bool = False) -> frozenset[str]:
    """Variables bound inside an iteration (``+``, ``*``, ``{n,m}``) of ``pattern``: the only ones
    for which ``prev(x)`` can be an event (elsewhere a condition on it always holds)."""
    if isinstance(pattern, ast.EventType | ast.NotEvent):
        return frozenset({pattern.name}) if inside and isinstance(pattern, ast.EventType) else frozenset()
    if isinstance(pattern, ast.Iter | ast.Star | ast.Repeat):
        return iterated_variables(pattern.pattern, True)
    if isinstance(pattern, ast.As):
        inner = iterated_variables(pattern.pattern, inside)
        return inner | {pattern.var} if inside else inner
    if isinstance(pattern, ast.Filter):
        return iterated_variables(pattern.pattern, inside)
    if isinstance(pattern, ast.Unless):
        return iterated_variables(pattern.left, inside)
    return iterated_variables(pattern.left, inside) | iterated_variables(pattern.right, inside)  # type: ignore[union-attr]


def condition_choices(pattern: ast.Pattern) -> list[tuple[str, str | None]]:
    """``(target, other)`` pairs a FILTER on ``pattern`` may relate (other None: prev, only for
    a variable bound inside an iteration)."""
    from kleene.language.conditions import problem

    bound = sorted(variables_of(pattern))
    iterated = iterated_variables(pattern)
    out: list[tuple[str, str | None]] = []
    for x in bound:
        if x in iterated:
            out.append((x, None))
        for a in bound:
            if a != x:
                atom = ast.FilterAtom(x, ast.Compare("==", ast.Attr("v"), ast.VarAttr(a, "v")))
                if problem(pattern, atom, ast.VarAttr(a, "v")) is None:
                    out.append((x, a))
    return out


@st.composite
def condition_filter(draw: st.DrawFn, inner: ast.Pattern) -> ast.Pattern:
    """``inner FILTER x[...]`` with a condition between events, preferring other variables."""
    if not variables_of(inner):  # NOT(...) alone binds nothing
        inner = ast.As(inner, draw(st.sampled_from(VARIABLES)))
    choices = condition_choices(inner) or [(x, None) for x in sorted(variables_of(inner))]
    pairs = [c for c in choices if c[1] is not None]
    x, other = draw(st.sampled_from(pairs if pairs and draw(st.integers(0, 3)) else choices))
    atom = ast.FilterAtom(x, draw(nary_predicates(x, other)))
    cond: ast.FilterExpr = atom
    if draw(st.integers(0, 3)) == 0:  # mixed with a unary atom
        unary = ast.FilterAtom(draw(st.sampled_from(sorted(variables_of(inner)))), draw(atoms()))
        cond = ast.FilterOr(atom, unary) if draw(st.integers(0, 2)) == 0 else ast.FilterAnd(atom, unary)
    return ast.Filter(inner, cond)


CONDITION_KINDS = (
    "as", "as", "cond", "cond", "filter", "seq", "seq", "seq", "contig", "or", "iter", "citer", "star",
    "repeat",
)  # fmt: skip


@st.composite
def condition_patterns(draw: st.DrawFn, depth: int = 3, conjunctions: bool = False) -> ast.Pattern:
    """Random patterns of the register engine's language, with conditions between events.

    ``conjunctions``: AND, ALL and UNLESS too (not by default, so that the cases
    drawn before they were supported stay the same).
    """
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 7)) == 0:
            return draw(not_events())
        if draw(st.integers(0, 7)) == 0:
            return ast.EventType(WILDCARD)
        return ast.EventType(draw(st.sampled_from(TYPES)))
    kinds = CONDITION_KINDS + (("and", "all", "unless") if conjunctions else ())
    kind = draw(st.sampled_from(kinds))
    if kind == "and":
        left = draw(condition_patterns(depth - 1, conjunctions))
        right = draw(st.one_of(st.just(left), _refiltered(left), condition_patterns(depth - 1, conjunctions)))
        return ast.And(left, right)
    if kind in ("seq", "contig", "or", "all", "unless"):
        left = draw(condition_patterns(depth - 1, conjunctions))
        right = draw(condition_patterns(depth - 1, conjunctions))
        if kind == "all":
            return ast.All(left, right)
        if kind == "unless":
            return ast.Unless(left, right)
        return ast.Or(left, right) if kind == "or" else ast.Seq(left, right, kind == "contig")
    inner = draw(condition_patterns(depth - 1, conjunctions))
    if kind == "as" or (kind == "filter" and not variables_of(inner)):
        return ast.As(inner, draw(st.sampled_from(VARIABLES)))
    if kind == "cond":
        return draw(condition_filter(inner))
    if kind == "filter":
        return ast.Filter(inner, draw(filter_exprs(tuple(sorted(variables_of(inner))), depth=1)))
    if kind == "star":
        return ast.Star(inner)
    if kind == "repeat":
        return draw(repeats(inner, most=3))
    return ast.Iter(inner, kind == "citer")


@st.composite
def condition_cases(draw: st.DrawFn, max_size: int = 36) -> tuple[ast.Query, list[Event], list[int]]:
    """``(query, events, times)``: a query with at least one condition between events.

    The condition relates two parts of a sequence, or the events of an
    iteration (``prev``), or is drawn anywhere inside a random pattern; the
    outermost pattern always matches several events, so that the condition
    has events to relate.
    """
    shape = draw(st.sampled_from(("seq", "seq", "seq", "seq", "iter", "any")))
    if shape == "seq":  # two parts to relate, most often
        left, right = draw(condition_patterns(2)), draw(condition_patterns(draw(st.integers(1, 2))))
        where = draw(condition_filter(ast.Seq(left, right, draw(st.integers(0, 3)) == 0)))
    elif shape == "iter":  # x+ FILTER x[... prev(x) ...]
        inner = ast.As(draw(condition_patterns(1)), draw(st.sampled_from(VARIABLES)))
        where = draw(condition_filter(ast.Iter(inner, draw(st.integers(0, 3)) == 0)))
    else:
        inner = draw(condition_patterns(3))
        if one_event(inner):
            inner = ast.Seq(inner, draw(condition_patterns(1)))
        where = draw(condition_filter(inner))
    return draw(_condition_query(where, max_size))


@st.composite
def conjunction_cases(draw: st.DrawFn, max_size: int = 32) -> tuple[ast.Query, list[Event], list[int]]:
    """Like :func:`condition_cases`, with an AND, ALL or UNLESS (conditions inside or around it).

    As in :func:`patterns`, the right side of an AND is often the left side
    again (maybe filtered once more), else two random patterns rarely share a
    match.  The conjunction stands alone, is filtered, or is sequenced with a
    pattern the condition then relates it to.
    """
    left = draw(condition_patterns(2, conjunctions=True))
    if one_event(left):  # events for the condition to relate
        left = ast.Seq(left, draw(condition_patterns(1)))
    kind = draw(st.sampled_from(("and", "all", "unless")))
    if kind == "and":
        right = draw(
            st.one_of(st.just(left), _refiltered(left), _refiltered(left), condition_patterns(2, conjunctions=True))
        )
        core: ast.Pattern = ast.And(left, right)
    elif kind == "all":
        core = ast.All(left, draw(condition_patterns(1, conjunctions=True)))
    else:  # most often one event, which then occurs inside a match's span
        core = ast.Unless(left, draw(single_event_sides(1, False, ())))
    shape = draw(st.sampled_from(("alone", "filter", "before", "after")))
    if shape == "before":
        core = ast.Seq(draw(condition_patterns(1)), core, draw(st.integers(0, 3)) == 0)
    elif shape == "after":
        core = ast.Seq(core, draw(condition_patterns(1)), draw(st.integers(0, 3)) == 0)
    if shape != "alone" or not has_conditions(core):
        core = draw(condition_filter(core))
    return draw(_condition_query(core, max_size))


@st.composite
def _condition_query(
    draw: st.DrawFn, where: ast.Pattern, max_size: int
) -> tuple[ast.Query, list[Event], list[int]]:
    """A query around ``where`` (every strategy, projections too) and a stream sized for the oracle."""
    q, n = draw(_condition_query_and_size(where, max_size))
    evs, times = draw(streams(max_size=n, min_size=n))
    return q, evs, times


@st.composite
def _condition_query_and_size(draw: st.DrawFn, where: ast.Pattern, max_size: int) -> tuple[ast.Query, int]:
    """The query of :func:`_condition_query` and the length of its stream."""
    template = draw(queries(1, full_cel=frozenset({"STRICT", "NEXT", "LAST", "MAX"})))
    items = template.select.items
    bound = sorted(variables_of(where))
    if items and not bound:  # e.g. NOT(...) UNLESS ...: nothing to project on
        items = ()
    elif items:  # project on variables of this pattern
        chosen = draw(st.lists(st.sampled_from(bound), min_size=1, max_size=2, unique=True))
        items = tuple(ast.SelectItem(v) for v in chosen)
    q = ast.Query(
        ast.Select(template.select.strategy, items), ("S",), where, template.partition_by,
        template.within, template.consume, template.limit,
    )
    depth = iteration_depth(where)
    q = draw(fitted_window(q, 10 if depth <= 1 else 6))  # what the oracle's brute force affords
    if q.within is not None or depth == 0:  # long streams, windows that cut matches
        low, high = min(30, max_size), max_size
    else:
        high = min(max_size, (12, 9, 7, 6)[min(depth, 4) - 1])
        low = high // 2
    return q, draw(st.integers(low, high))


@st.composite
def single_events(draw: st.DrawFn, var: str) -> ast.Pattern:
    """A single-event pattern bound to ``var``: a type, or an OR of two, maybe filtered."""
    p: ast.Pattern = ast.EventType(draw(st.sampled_from(TYPES)))
    if draw(st.integers(0, 3)) == 0:
        p = ast.Or(p, ast.EventType(draw(st.sampled_from(TYPES))))
    p = ast.As(p, var)
    if draw(st.booleans()):
        p = ast.Filter(p, ast.FilterAtom(var, draw(atoms())))
    return p


@st.composite
def pair_cases(draw: st.DrawFn, max_size: int = 30) -> tuple[ast.Query, list[Event], list[int]]:
    """Two-event patterns with a condition between them, under a window (the pair join's shape)."""
    where: ast.Pattern = ast.Seq(draw(single_events("a")), draw(single_events("b")))
    where = ast.Filter(where, ast.FilterAtom("b", draw(nary_predicates("b", "a"))))
    if draw(st.booleans()):
        where = ast.Filter(where, ast.FilterAtom(draw(st.sampled_from(("a", "b"))), draw(atoms())))
    within = draw(
        st.one_of(
            st.integers(1, 8).map(ast.EventsWindow),  # 0 events: no pair, a count of 0
            st.integers(0, 10).map(lambda n: ast.DurationWindow(n * SEC)),
        )
    )
    items = draw(st.sampled_from((None, None, (ast.SelectItem("a"),), (ast.SelectItem("b"),), ())))
    strategy = draw(st.sampled_from(("ALL", "ANY")))
    q = ast.Query(ast.Select(strategy, items), ("S",), where, (), within)
    evs, times = draw(streams(max_size=max_size, min_size=max_size // 2))
    return q, evs, times


# ------------------------------------------ conditions written on an earlier variable (issue 18)


@st.composite
def earlier_variable_cases(draw: st.DrawFn, max_size: int = 30) -> tuple[ast.Query, list[Event], list[int]]:
    """A condition written on a variable bound *before* one it reads (``a[v < b.v]``, ``b`` after
    ``a``): single events ``a ; b [; c]`` (maybe contiguous, with a pattern in between), the
    condition on ``a`` (or ``b``) reading later ones, the whole maybe under ``+`` or sequenced.
    kleene moves such a condition onto the variable bound last
    (kleene.language.conditions.on_later_variables); the oracle evaluates it as written."""
    n = draw(st.integers(2, 3))
    names = VARIABLES[:n]

    def part(var: str) -> ast.Pattern:  # most often unfiltered: matches for the condition to cut
        if draw(st.integers(0, 3)) == 0:
            return draw(single_events(var))
        return ast.As(ast.EventType(draw(st.sampled_from(TYPES))), var)

    where: ast.Pattern = part(names[0])
    for var in names[1:]:
        right = part(var)
        if draw(st.integers(0, 3)) == 0:  # something in between
            right = ast.Seq(draw(_unbound(names)), right, draw(st.integers(0, 5)) == 0)
        where = ast.Seq(where, right, draw(st.integers(0, 5)) == 0)
    target = draw(st.sampled_from(names[:-1]))
    later = names[names.index(target) + 1 :]
    reads = draw(st.lists(st.sampled_from(later), min_size=1, max_size=len(later), unique=True))
    pred = draw(_selective(target, reads[0]))
    if len(reads) > 1:  # two later variables, or an earlier and a later one
        pred = ast.PAnd(pred, draw(_selective(target, reads[1])))
    elif target != names[0] and draw(st.booleans()):
        pred = ast.PAnd(draw(_selective(target, names[0])), pred)
    where = ast.Filter(where, ast.FilterAtom(target, pred))
    shape = draw(st.sampled_from(("alone", "alone", "iter", "before", "after")))
    if shape == "iter":
        where = ast.Iter(where)
    elif shape == "before":
        where = ast.Seq(draw(_unbound(names)), where)
    elif shape == "after":
        where = ast.Seq(where, draw(_unbound(names)))
    query, evs, times = draw(_condition_query(where, max_size))
    if draw(st.integers(0, 2)):  # partitions of a 30-event stream rarely hold a whole match
        query = replace(query, partition_by=())
    return query, evs, times


@st.composite
def _selective(draw: st.DrawFn, target: str, other: str) -> ast.Pred:
    """Mostly a bare comparison of ``target`` with ``other`` (an OR or NOT around it, as
    :func:`nary_predicates` often draws, more often holds whatever the events)."""
    if draw(st.integers(0, 3)) == 0:
        return draw(nary_predicates(target, other))
    if draw(st.integers(0, 4)) == 0:
        return ast.Compare(draw(st.sampled_from(("==", "!="))), ast.Attr("s"), ast.VarAttr(other, "s"))
    attr, read = draw(st.sampled_from(("v", "w"))), ast.VarAttr(other, draw(st.sampled_from(("v", "w"))))
    return ast.Compare(draw(st.sampled_from(("<", "<=", ">", ">="))), ast.Attr(attr), read)


def _unbound(names: tuple[str, ...]) -> st.SearchStrategy[ast.Pattern]:
    """A small pattern that binds none of ``names`` (which would bind them twice)."""
    return condition_patterns(1).filter(lambda p: not variables_of(p) & set(names))


# ----------------------------------------------- UNLESS over many predicates (issue 18)


@st.composite
def wide_unless_cases(draw: st.DrawFn, max_size: int = 24) -> tuple[ast.Query, list[Event], list[int]]:
    """``φ1 UNLESS φ2`` with many atomic predicates in ``φ2`` (often more than the 10 kleene once
    allowed): an OR of single events or short sequences, each filtered by several thresholds
    (``B[v > 3] AND B[w != 5]`` counts two atoms).  ``φ1`` is two or three events, maybe with an
    iteration, under a window, so that ``φ2`` lands inside some matches and not others."""
    parts = [ast.EventType(draw(st.sampled_from(TYPES))) for _ in range(draw(st.integers(2, 3)))]
    if draw(st.integers(0, 2)) == 0:
        parts[1] = ast.Iter(parts[1])
    left: ast.Pattern = parts[0]
    for p in parts[1:]:
        left = ast.Seq(left, p)

    def filtered() -> ast.Pattern:
        name = draw(st.sampled_from(TYPES))
        cond: ast.FilterExpr = ast.FilterAtom(name, draw(thresholds()))
        for _ in range(draw(st.integers(0, 2))):
            cond = ast.FilterAnd(cond, ast.FilterAtom(name, draw(thresholds())))
        return ast.Filter(ast.EventType(name), cond)

    def alternative() -> ast.Pattern:
        first = filtered()
        return ast.Seq(first, filtered()) if draw(st.integers(0, 3)) == 0 else first

    right = alternative()
    for _ in range(draw(st.integers(2, 7))):
        right = ast.Or(right, alternative())
    where = ast.Unless(left, right)
    strategy = draw(st.sampled_from(("ALL", "ALL", "ALL", "NEXT", "LAST", "MAX", "STRICT")))
    q = ast.Query(ast.Select(strategy), ("S",), where, (), ast.EventsWindow(draw(st.integers(2, 7))))
    evs, times = draw(streams(max_size=max_size, min_size=max_size // 2))
    return q, evs, times


def unless_atoms(pattern: ast.Pattern) -> int:
    """How many distinct atomic predicates (event types and unary predicates) the right sides of
    the UNLESS of ``pattern`` test."""
    from kleene.predicates.atoms import Atoms

    found: set[tuple[int, int]] = set()

    def walk(p: ast.Pattern) -> None:
        if isinstance(p, ast.Unless):
            atoms_ = Atoms()
            atoms_.collect(p.right)
            found.add((id(p), len(atoms_.event_types) + len(atoms_.preds)))
        for name in ("pattern", "left", "right"):
            child = getattr(p, name, None)
            if isinstance(child, ast.Pattern):  # type: ignore[arg-type]
                walk(child)

    walk(pattern)
    return max((n for _, n in found), default=0)


# ------------------------------------ FILTERs naming an enclosing pattern's variable (issue 18)


@st.composite
def outer_scope_cases(draw: st.DrawFn, max_size: int = 24) -> tuple[ast.Query, list[Event], list[int]]:
    """A FILTER inside a sub-pattern naming a variable bound around it (the CEL thesis's φ4 and
    φ6 forms), which kleene evaluates where that variable is bound (kleene.language.scopes):

    * φ4: ``A AS a ; (B AS b FILTER b[v > a.v])+ ; C`` (the outer ``a`` first), or
      ``(B AS b FILTER b[v > a.v]) ; A AS a`` (after: then moved onto ``a``);
    * φ6: ``A AS a ; ((B AS b FILTER a[v > 4]) OR (C AS b FILTER a[v <= 4]))``, a condition
      on ``a`` choosing the branch, maybe with one between ``b`` and ``a`` too;
    * either nested one level deeper, under an OR with a plain event or an iteration.
    """
    outer: ast.Pattern = ast.As(ast.EventType(draw(st.sampled_from(TYPES))), "a")

    def inner_event(var: str) -> ast.Pattern:
        return ast.As(ast.EventType(draw(st.sampled_from(TYPES))), var)

    shape = draw(st.sampled_from(("phi4", "phi4", "phi4_after", "phi6", "phi6")))
    if shape == "phi6":
        guard = draw(thresholds())
        left = ast.Filter(inner_event("b"), ast.FilterAtom("a", guard))
        right = ast.Filter(inner_event("b"), ast.FilterAtom("a", ast.PNot(guard)))
        if draw(st.booleans()):
            right = ast.Filter(
                right.pattern,
                ast.FilterAnd(right.condition, ast.FilterAtom("b", draw(_selective("b", "a")))),
            )
        inner: ast.Pattern = ast.Or(left, right)
    else:
        inner = ast.Filter(inner_event("b"), ast.FilterAtom("b", draw(_selective("b", "a"))))
        if shape == "phi4":
            inner = ast.Iter(inner)
    if shape != "phi4_after" and draw(st.integers(0, 3)) == 0:  # one level deeper
        inner = ast.Or(inner, ast.EventType(draw(st.sampled_from(TYPES))))
    if shape == "phi4_after":
        where: ast.Pattern = ast.Seq(inner, outer)
    else:
        where = ast.Seq(outer, inner)
    if draw(st.booleans()):
        where = ast.Seq(where, ast.EventType(draw(st.sampled_from(TYPES))))
    query, evs, times = draw(_condition_query(where, max_size))
    if draw(st.integers(0, 2)):  # partitions of a short stream rarely hold a whole match
        query = replace(query, partition_by=())
    return query, evs, times


@st.composite
def across_cases(draw: st.DrawFn, max_size: int = 20) -> tuple[ast.Query, list[Event], list[int]]:
    """A condition between the two sides of an AND or ALL, one event each (issue 18): ``(P ALL Q)
    FILTER b[v > a.v]`` with ``a`` in ``P`` and ``b`` in ``Q``, which may come in either order
    (or be one event); sometimes written on ``a``, sometimes sequenced with more."""

    def side(var: str) -> ast.Pattern:
        core = ast.As(ast.EventType(draw(st.sampled_from(TYPES))), var)
        kind = draw(st.sampled_from(("one", "one", "one", "before", "after")))
        other = ast.EventType(draw(st.sampled_from(TYPES + (WILDCARD,))))
        if kind == "before":
            return ast.Seq(other, core)
        return ast.Seq(core, other) if kind == "after" else core

    core: ast.Pattern
    if draw(st.integers(0, 3)):
        core = ast.All(side("a"), side("b"))
    else:  # AND: the same events on both sides, a and b on different ones
        t1, t2 = ast.EventType(draw(st.sampled_from(TYPES))), ast.EventType(draw(st.sampled_from(TYPES)))
        core = ast.And(ast.Seq(ast.As(t1, "a"), t2), ast.Seq(t1, ast.As(t2, "b")))
    target, other = draw(st.sampled_from((("b", "a"), ("a", "b"))))
    where: ast.Pattern = ast.Filter(core, ast.FilterAtom(target, draw(_selective(target, other))))
    if draw(st.integers(0, 3)) == 0:
        where = ast.Seq(where, ast.EventType(draw(st.sampled_from(TYPES))))
    query, evs, times = draw(_condition_query(where, max_size))
    return replace(query, partition_by=()), evs, times  # whole matches in a short stream


# ------------------------------------- conditions between events, streams drawn from the query


FRESH_VARIABLES = (*VARIABLES, "d", "e")
"""Names for the later events :func:`aimed_condition_filter` adds (``d``, ``e`` when a, b, c
are taken)."""


def _fresh_variable(pattern: ast.Pattern) -> str:
    taken = variables_of(pattern)
    return next(v for v in FRESH_VARIABLES if v not in taken)


@st.composite
def aimed_condition_filter(draw: st.DrawFn, inner: ast.Pattern) -> ast.Pattern:
    """Like :func:`condition_filter`, but never ``prev(x)`` where ``x`` is bound outside every
    iteration (such a condition always holds): when ``inner`` has no pair of variables to relate,
    a later event bound to a fresh variable is sequenced after it, and the condition relates the
    two (:func:`planted_streams` makes the longer pattern match all the same)."""
    if not variables_of(inner):
        inner = ast.As(inner, draw(st.sampled_from(VARIABLES)))
    for _ in range(2):  # the second one relates to the first when nothing else can be related
        if condition_choices(inner):
            break
        inner = ast.Seq(inner, ast.As(draw(event_types()), _fresh_variable(inner)))
    return draw(condition_filter(inner))


@st.composite
def aimed_condition_patterns(draw: st.DrawFn, depth: int = 3, conjunctions: bool = False) -> ast.Pattern:
    """:func:`condition_patterns` whose conditions are drawn by :func:`aimed_condition_filter`."""
    pattern = draw(condition_patterns(depth, conjunctions))

    def aim_filters(p: ast.Pattern) -> ast.Pattern:
        # A condition reading prev(x) of a variable bound outside any iteration holds always:
        # replace such a FILTER by one drawn on the same pattern with a fresh later event.
        changes = {
            name: aim_filters(getattr(p, name))
            for name in ("pattern", "left", "right")
            if isinstance(getattr(p, name, None), ast.Pattern)
        }
        p = replace(p, **changes) if changes else p  # type: ignore[arg-type]
        if isinstance(p, ast.Filter) and _idle_prev(p):
            return draw(aimed_condition_filter(p.pattern))
        return p

    return aim_filters(pattern)


def _idle_prev(p: ast.Filter) -> bool:
    """Whether the FILTER reads ``prev(x)`` of a variable ``x`` bound outside every iteration."""
    iterated = iterated_variables(p.pattern)
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, ast.VarAttr):
            if node.prev:
                found.append(node.var)
            return
        for name in ("left", "right", "operand", "expr", "low", "high", "pred", "condition"):
            child = getattr(node, name, None)
            if child is not None and not isinstance(child, str | int | float):
                walk(child)
        for value in getattr(node, "values", ()):
            walk(value)

    walk(p.condition)
    return any(v not in iterated for v in found)


@st.composite
def witness(draw: st.DrawFn, pattern: ast.Pattern, streams: tuple[str, ...] | None = None) -> list[Event]:
    """Events that match ``pattern`` read without its conditions (mostly: unary filters and NOT
    are left to chance), with values drawn afresh so that a condition between them decides.

    ``streams``: the events name their stream under :data:`STREAM_KEY`, the one an atom's
    ``S>E`` names, else one of ``streams`` (the query's FROM; empty: any of :data:`STREAMS`)."""

    key = draw(st.integers(0, 2))  # one partition key: PARTITION BY [k] keeps the match

    def event(name: str, stream: str | None = None) -> Event:
        out = {
            "type": draw(st.sampled_from(TYPES)) if name == WILDCARD else name,
            "v": draw(st.integers(0, 9)),
            "w": draw(st.integers(0, 9)),
            "s": draw(st.sampled_from(STRINGS)),
            "k": key,
        }
        if streams is not None:
            out[STREAM_KEY] = stream or draw(st.sampled_from(streams or STREAMS))
        return out

    def not_type(p: ast.Pattern) -> str:
        """A type that is not the one NOT(...) excludes."""
        while not isinstance(p, ast.EventType):
            p = p.pattern  # type: ignore[union-attr]
        return draw(st.sampled_from([t for t in TYPES if t != p.name] or TYPES))

    def copies(p: ast.Pattern, n: int) -> list[Event]:
        return [e for _ in range(n) for e in walk(p)]

    def walk(p: ast.Pattern) -> list[Event]:
        if isinstance(p, ast.EventType):
            return [event(p.name, p.stream)]
        if isinstance(p, ast.NotEvent):
            return [event(not_type(p.pattern))]
        if isinstance(p, ast.As | ast.Filter):
            return walk(p.pattern)
        if isinstance(p, ast.Iter):
            return copies(p.pattern, draw(st.integers(1, 2)))
        if isinstance(p, ast.Star):
            return copies(p.pattern, draw(st.integers(0, 2)))
        if isinstance(p, ast.Repeat):
            high = p.low + 1 if p.high is None else min(p.high, p.low + 1)
            return copies(p.pattern, draw(st.integers(p.low, high)))
        if isinstance(p, ast.Seq):
            return walk(p.left) + walk(p.right)
        if isinstance(p, ast.Or):
            return walk(draw(st.sampled_from((p.left, p.right))))
        if isinstance(p, ast.And | ast.Unless):
            return walk(p.left)
        if isinstance(p, ast.All):
            return walk(p.left) + walk(p.right)
        raise TypeError(f"unexpected pattern {p!r}")

    return walk(pattern)


@st.composite
def planted_streams(
    draw: st.DrawFn, query: ast.Query, n: int, tries: int = 4, with_streams: bool = False
) -> tuple[list[Event], list[int], bool]:
    """A random stream of ``n`` events with two or three :func:`witness` matches of ``query``'s
    pattern planted in it (events of the pattern's types in its order, a second apart at most, so
    that they fit in a fitted window): the query matches without its conditions between events,
    and the conditions decide which of the planted (and chance) matches remain.

    A witness is kept when the oracle finds a match of the query without its conditions in it
    alone (the best of ``tries`` draws: unary filters, NOT, UNLESS and AND are left to chance);
    the flag says whether one was found (some queries match no stream, e.g. ``B ; A ; B UNLESS A``).
    ``with_streams``: events name their stream (:func:`streams`), the witnesses one the query reads.
    """
    from against_oracle import without  # the measure's own notion of "without the conditions"
    from kleene.reference.oracle import OracleBudgetExceeded, evaluate

    bare = without(query, "conditions")
    evs, _ = draw(streams(max_size=n, min_size=n, with_streams=with_streams))
    planted = [False] * n
    hit = False
    key = STREAM_KEY if with_streams else None
    for _ in range(draw(st.integers(2, 3))):
        for _ in range(tries):
            found = draw(witness(query.where, query.streams if with_streams else None))[:n]
            steps = [draw(st.integers(0, 1)) for _ in found]
            times = [sum(steps[: i + 1]) * SEC for i in range(len(found))]
            try:
                if evaluate(bare, found, times=times, budget=5_000, stream_key=key):
                    hit = True
                    break
            except OracleBudgetExceeded:
                break
        at = draw(st.integers(0, n - len(found)))
        evs[at : at + len(found)] = found
        planted[at : at + len(found)] = [True] * len(found)
    times, now = [], 0
    for i in range(n):
        now += draw(st.integers(0, 1 if planted[i] and i and planted[i - 1] else 3)) * SEC
        times.append(now)
    return evs, times, hit


REDRAWS = 3
"""Queries an aimed generator draws at most until it finds one a witness stream matches."""


@st.composite
def aimed_condition_cases(draw: st.DrawFn, max_size: int = 36) -> tuple[ast.Query, list[Event], list[int]]:
    """:func:`condition_cases` aimed at the conditions: no ``prev`` where it cannot bind, and a
    stream drawn from the query (:func:`planted_streams`); a query that no witness matches
    without its conditions is drawn again (up to :data:`REDRAWS` times)."""
    for _ in range(REDRAWS):
        case, hit = draw(_planted_query(draw(_aimed_condition_where()), max_size))
        if hit:
            break
    return case


@st.composite
def _aimed_condition_where(draw: st.DrawFn) -> ast.Pattern:
    shape = draw(st.sampled_from(("seq", "seq", "seq", "seq", "iter", "any")))
    if shape == "seq":
        left = draw(aimed_condition_patterns(2))
        right = draw(aimed_condition_patterns(draw(st.integers(1, 2))))
        return draw(aimed_condition_filter(ast.Seq(left, right, draw(st.integers(0, 3)) == 0)))
    if shape == "iter":
        inner = ast.As(draw(aimed_condition_patterns(1)), draw(st.sampled_from(VARIABLES)))
        return draw(aimed_condition_filter(ast.Iter(inner, draw(st.integers(0, 3)) == 0)))
    inner = draw(aimed_condition_patterns(3))
    if one_event(inner):
        inner = ast.Seq(inner, draw(aimed_condition_patterns(1)))
    return draw(aimed_condition_filter(inner))


@st.composite
def aimed_conjunction_cases(draw: st.DrawFn, max_size: int = 32) -> tuple[ast.Query, list[Event], list[int]]:
    """:func:`conjunction_cases` aimed at the conditions, as :func:`aimed_condition_cases`."""
    for _ in range(REDRAWS):
        case, hit = draw(_planted_query(draw(_aimed_conjunction_where()), max_size))
        if hit:
            break
    return case


@st.composite
def _aimed_conjunction_where(draw: st.DrawFn) -> ast.Pattern:
    left = draw(aimed_condition_patterns(2, conjunctions=True))
    if one_event(left):
        left = ast.Seq(left, draw(aimed_condition_patterns(1)))
    kind = draw(st.sampled_from(("and", "all", "unless")))
    if kind == "and":
        right = draw(
            st.one_of(st.just(left), _refiltered(left), _refiltered(left), aimed_condition_patterns(2, conjunctions=True))
        )
        core: ast.Pattern = ast.And(left, right)
    elif kind == "all":
        core = ast.All(left, draw(aimed_condition_patterns(1, conjunctions=True)))
    else:
        core = ast.Unless(left, draw(single_event_sides(1, False, ())))
    shape = draw(st.sampled_from(("alone", "filter", "before", "after")))
    if shape == "before":
        core = ast.Seq(draw(aimed_condition_patterns(1)), core, draw(st.integers(0, 3)) == 0)
    elif shape == "after":
        core = ast.Seq(core, draw(aimed_condition_patterns(1)), draw(st.integers(0, 3)) == 0)
    if shape != "alone" or not has_conditions(core):
        core = draw(aimed_condition_filter(core))
    return core


@st.composite
def _planted_query(
    draw: st.DrawFn, where: ast.Pattern, max_size: int
) -> tuple[tuple[ast.Query, list[Event], list[int]], bool]:
    """:func:`_condition_query` with the stream from :func:`planted_streams`, and its flag."""
    q, n = draw(_condition_query_and_size(where, max_size))
    evs, times, hit = draw(planted_streams(q, n))
    return (q, evs, times), hit


# ------------------------- conditions inside NOT(...) and on UNLESS's right (issue 18, item 3)


@st.composite
def negated_outer_cases(
    draw: st.DrawFn, kind: str = "not", max_size: int = 20
) -> tuple[ast.Query, list[Event], list[int]]:
    """A condition inside ``NOT(...)`` (``kind`` "not") reading a variable bound around it, or on
    UNLESS's right side reading the left side's (``kind`` "unless"); kleene.language.negation,
    kleene.language.scopes:

    * ``A AS a ; NOT(B AS c FILTER c[v > a.v]) ; C`` (the outer variable first), maybe with
      another alternative in the NOT (``OR (C AS d FILTER d[w < 4])``, ``OR C``), under ``+``;
    * ``A ; NOT(B AS c FILTER c[v > b.v]) ; C AS b`` (the variable bound after the NOT);
    * ``A AS a ; NOT(B FILTER a[v > 4]) ; C`` (a unary atom on the outer variable: Thm 5.3's lift);
    * ``(A AS a ; C) UNLESS (B AS c FILTER c[v > a.v])`` (a seeded monitor), the right side
      maybe a sequence (the condition on its later event, maybe with one between its own
      events), or ``(A AS a ; C) UNLESS (B FILTER a[v > 4])`` (lifted); the UNLESS maybe
      sequenced with more.
    """

    def event(var: str | None = None) -> ast.Pattern:
        e: ast.Pattern = ast.EventType(draw(st.sampled_from(TYPES)))
        return e if var is None else ast.As(e, var)

    if kind == "unless":
        shape = draw(st.sampled_from(("nary", "nary", "nary", "unary")))
    else:
        shape = draw(st.sampled_from(("before", "before", "after", "unary")))
    outer = "b" if shape == "after" else "a"
    if shape == "unary":
        psi: ast.Pattern = ast.Filter(event(), ast.FilterAtom("a", draw(thresholds())))
    else:
        psi = ast.Filter(event("c"), ast.FilterAtom("c", draw(_selective("c", outer))))
    if kind == "unless":
        right = psi
        if draw(st.booleans()):
            if shape == "nary" and draw(st.booleans()):  # c after d, compared with both
                cond = ast.PAnd(draw(_selective("c", "a")), draw(_selective("c", "d")))
                right = ast.Filter(ast.Seq(event("d"), event("c")), ast.FilterAtom("c", cond))
            else:
                right = ast.Seq(event(), psi) if draw(st.booleans()) else ast.Seq(psi, event())
        left: ast.Pattern = ast.Seq(event("a"), event())
        if draw(st.integers(0, 3)) == 0:
            left = ast.Seq(left, event())
        where: ast.Pattern = ast.Unless(left, right)
        place = draw(st.integers(0, 3))
        if place == 1:
            where = ast.Seq(where, event())
        elif place == 2:
            where = ast.Seq(event(), where)
    else:
        if draw(st.integers(0, 2)) == 0:
            other = draw(st.sampled_from(("plain", "filtered")))
            extra = event() if other == "plain" else ast.Filter(
                event("d"), ast.FilterAtom("d", draw(thresholds()))
            )
            psi = ast.Or(psi, extra)
        neg: ast.Pattern = ast.NotEvent(psi)
        if shape != "after" and draw(st.integers(0, 3)) == 0:
            neg = ast.Iter(neg)
        first = event("a") if shape != "after" else event()
        last = event("b") if shape == "after" else event()
        where = ast.Seq(ast.Seq(first, neg), last)
    query, evs, times = draw(_condition_query(where, max_size))
    evs = [dict(e) for e in evs]
    plan = _negated_plan(where)
    for _ in range(draw(st.integers(1, 3))):  # the pattern, with the negated event inside
        if len(evs) < len(plan):
            break
        at = draw(st.integers(0, len(evs) - len(plan)))
        for k, name in enumerate(plan):
            evs[at + k].update(type=name, v=draw(st.integers(0, 9)), w=draw(st.integers(0, 9)))
    items = query.select.items
    if items:  # an event type selected would bind the NOT's event too: not rewritten (refused)
        kept = tuple(i for i in items if i.var in ("a", "b"))
        query = replace(query, select=replace(query.select, items=kept or None))
    if kind == "not" or draw(st.integers(0, 2)):  # a seeded monitor per partition, sometimes
        query = replace(query, partition_by=())
    return query, evs, times


def _negated_plan(p: ast.Pattern) -> list[str]:
    """Event types of a match of ``p`` in order, with the event a NOT excludes (a candidate its
    condition decides) and the right side of UNLESS inside the left's span."""
    if isinstance(p, ast.EventType):
        return [p.name]
    if isinstance(p, ast.As | ast.Filter | ast.Iter | ast.NotEvent):
        return _negated_plan(p.pattern)
    if isinstance(p, ast.Or):
        return _negated_plan(p.left)
    if isinstance(p, ast.Unless):
        left = _negated_plan(p.left)
        return left[:1] + _negated_plan(p.right) + left[1:]
    if isinstance(p, ast.Seq):
        return _negated_plan(p.left) + _negated_plan(p.right)
    raise TypeError(f"unexpected pattern {p!r}")
