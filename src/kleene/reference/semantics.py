"""The oracle's own semantic helpers, written from the definitions, not from the engine.

The oracle (:mod:`kleene.reference.oracle`) shares the parser and the AST with
the engine and nothing else: a bug in a helper both used would make them agree
on a wrong answer, and no property test would see it.  So each helper the
oracle needs is defined here from the text it comes from, by a formulation of
its own, and ``tests/differential/test_oracle_independence.py`` compares each
with the engine's counterpart (``kleene.language.variables``,
``kleene.language.conditions``) on hand-written and generated queries.

* :func:`shortest` / :func:`nullable`: the least number of events of a match
  (docs/semantics.md: ``*``, ``{0,m}`` and ``?`` may match nothing; ``;``
  drops an empty operand; AS, FILTER, AND, ALL, UNLESS and NOT keep only
  non-empty matches).  ``nullable`` is "the shortest match has no event".
* :func:`single_event`: the patterns docs/semantics.md allows inside
  ``NOT(...)``: an event type, or AS, FILTER and OR of such patterns.
* :func:`var_attrs`, :func:`conjuncts`, :func:`reads_prev`: the
  ``a.attr`` / ``prev(x).attr`` references of a predicate and its top-level
  conjuncts (SRT register semantics, docs/semantics.md "Conditions between
  events").
* :func:`binds`: the variables whose events a pattern's matches carry outside it
  (``AS`` names and event types; not ``_``, not inside ``NOT(...)`` or on the right
  of ``UNLESS``, which bind nothing outside): a FILTER naming another variable reads
  the nearest enclosing pattern that binds it (docs/semantics.md, issue 18).
* :func:`has_selector`: does a pattern hold a nested selector (``MAX(p)``...), whose
  matches depend on where the enclosing pattern lets it start.
* :func:`vdef_plus` and :func:`safety_violations`: the CEL thesis's safe
  formulas (§5.1): for every ``φ1 OP φ2`` with OP in {``;``, AND, ALL},
  ``vdef₊(φ1) ∩ vdef₊(φ2) = ∅``, where ``vdef₊`` are the variables defined by
  ``AS`` outside the scope of every ``+``.  kleene accepts unsafe formulas
  (docs/semantics.md, "Safe formulas"); these only classify them.

The oracle may import ``kleene.language.ast``, ``kleene.language.parser`` and
``kleene.language.errors`` and nothing else of kleene outside ``kleene.reference``
(``tests/api/test_architecture.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Iterator

from kleene.language import ast

__all__ = [
    "ONE_EVENT_NODES",
    "binds",
    "conjuncts",
    "has_selector",
    "nullable",
    "reads_prev",
    "safety_violations",
    "shortest",
    "single_event",
    "var_attrs",
    "vdef_plus",
]

# ------------------------------------------------------------ match lengths


def shortest(pattern: ast.Pattern) -> int:
    """The least number of events in a match of ``pattern`` (0: ε is a match).

    Counted on the definitions: an event pattern (``R``, ``_``, ``NOT(ψ)``)
    is one event; ``φ1 ; φ2`` and ``φ1 : φ2`` join an operand's events to the
    other's (ε being the identity); OR takes the shorter side; ``φ+`` at least
    one copy, ``φ*`` none, ``φ{n,m}`` at least ``n`` copies.  The operators
    that keep only the non-empty matches of their operand (AS, FILTER, AND,
    ALL, UNLESS) need at least one event.  Only ``== 0`` is used, but the
    count makes the rule checkable by hand on every operator.
    """
    match pattern:
        case ast.EventType() | ast.NotEvent():
            return 1
        case ast.Star():
            return 0
        case ast.Iter(pattern=inner):
            return shortest(inner)
        case ast.Repeat(pattern=inner, low=low):
            return low * shortest(inner)
        case ast.Seq(left=left, right=right):
            return shortest(left) + shortest(right)
        case ast.Or(left=left, right=right):
            return min(shortest(left), shortest(right))
        case ast.As(pattern=inner) | ast.Filter(pattern=inner) | ast.Selector(pattern=inner):
            return max(1, shortest(inner))
        case ast.And(left=left, right=right):
            return max(1, shortest(left), shortest(right))
        case ast.All(left=left, right=right):
            return max(1, shortest(left), shortest(right))
        case ast.Unless(left=left):
            return max(1, shortest(left))
    raise TypeError(f"not a pattern: {pattern!r}")


def nullable(pattern: ast.Pattern) -> bool:
    """Whether the empty match ε is a match of ``pattern`` (its shortest match has no event)."""
    return shortest(pattern) == 0


# ------------------------------------------------------- single-event patterns

ONE_EVENT_NODES = (ast.EventType, ast.As, ast.Filter, ast.Or)
"""The node kinds a ``NOT(...)`` argument may be built of (docs/semantics.md)."""


def _subpatterns(pattern: ast.Pattern) -> Iterator[ast.Pattern]:
    """Every node of a pattern tree, the root first (iterative: deep trees are fine)."""
    todo = [pattern]
    while todo:
        node = todo.pop()
        yield node
        for name in ("pattern", "left", "right"):
            child = getattr(node, name, None)
            if child is not None:  # a pattern's children are patterns (a FILTER's
                todo.append(child)  # condition is under ``condition``, not walked)


def has_selector(pattern: ast.Pattern) -> bool:
    """Is there a ``STRICT(...)``, ``NEXT(...)``, ``LAST(...)`` or ``MAX(...)`` in ``pattern``?"""
    return any(isinstance(node, ast.Selector) for node in _subpatterns(pattern))


def single_event(pattern: ast.Pattern) -> bool:
    """Is ``pattern`` made only of event types, AS, FILTER and OR (every match one event)?"""
    return all(isinstance(node, ONE_EVENT_NODES) for node in _subpatterns(pattern))


# ----------------------------------------------------- references in predicates


def var_attrs(node: ast.Pred | ast.Expr) -> Iterator[ast.VarAttr]:
    """Every ``a.attr`` / ``prev(a).attr`` of a predicate or expression, left to right."""
    match node:
        case ast.VarAttr():
            yield node
        case ast.Const() | ast.Attr():
            return
        case ast.BinOp(left=left, right=right) | ast.Compare(left=left, right=right):
            yield from var_attrs(left)
            yield from var_attrs(right)
        case ast.PAnd(left=left, right=right) | ast.POr(left=left, right=right):
            yield from var_attrs(left)
            yield from var_attrs(right)
        case ast.Neg(operand=operand) | ast.PNot(operand=operand) | ast.Like(operand=operand):
            yield from var_attrs(operand)
        case ast.InSet(operand=operand):
            yield from var_attrs(operand)  # the listed values are constants
        case ast.InRange(operand=operand, low=low, high=high):
            yield from var_attrs(operand)
            yield from var_attrs(low)
            yield from var_attrs(high)
        case _:
            raise TypeError(f"not a predicate or expression: {node!r}")


def conjuncts(pred: ast.Pred) -> list[ast.Pred]:
    """The top-level conjuncts of ``pred``: ``P AND (Q AND R)`` -> ``[P, Q, R]`` (left to right)."""
    out: list[ast.Pred] = []
    todo: list[ast.Pred] = [pred]
    while todo:
        p = todo.pop()
        if isinstance(p, ast.PAnd):
            todo.extend((p.right, p.left))  # left popped first
        else:
            out.append(p)
    return out


def reads_prev(pred: ast.Pred) -> bool:
    """Does ``pred`` read ``prev(x).attr`` somewhere?"""
    return any(ref.prev for ref in var_attrs(pred))


# ------------------------------------------------------- safe formulas (thesis §5.1)


def vdef_plus(pattern: ast.Pattern) -> frozenset[str]:
    """``vdef₊``: the variables defined by AS outside the scope of every ``+`` (thesis §5.1).

    ``*`` is ``+`` or nothing, so it hides its variables like ``+``.  A
    repetition ``φ{n,m}`` is its copies written out with ``;`` (docs/semantics.md),
    so the variables of ``φ`` are defined outside any ``+`` unless ``m`` is
    unbounded, where the copies after the n-th are under ``*``: the first ``n``
    still define them.  Event type names are not counted: in the thesis an
    event type is not a variable (``R AS x`` defines only ``x``).
    """
    match pattern:
        case ast.EventType() | ast.NotEvent() | ast.Iter() | ast.Star():
            return frozenset()
        case ast.As(pattern=inner, var=var):
            return vdef_plus(inner) | {var}
        case ast.Filter(pattern=inner) | ast.Selector(pattern=inner):
            return vdef_plus(inner)
        case ast.Repeat(pattern=inner, low=low, high=high):
            return vdef_plus(inner) if (low > 0 or high is not None) else frozenset()
        case (ast.Seq(left=left, right=right) | ast.Or(left=left, right=right)
              | ast.And(left=left, right=right) | ast.All(left=left, right=right)
              | ast.Unless(left=left, right=right)):  # fmt: skip
            return vdef_plus(left) | vdef_plus(right)
    raise TypeError(f"not a pattern: {pattern!r}")


def safety_violations(pattern: ast.Pattern) -> list[tuple[ast.Pattern, frozenset[str]]]:
    """Each ``φ1 OP φ2`` (OP: ``;``, AND, ALL) whose sides both define a variable, with those.

    Empty when the formula is *safe* (thesis §5.1).  A repetition of two or
    more copies is a ``;`` of its copies, so ``(T AS x){2}`` is unsafe like
    ``T AS x ; T AS x``.
    """
    found: list[tuple[ast.Pattern, frozenset[str]]] = []
    for node in _subpatterns(pattern):
        if isinstance(node, ast.Seq | ast.And | ast.All):
            shared = vdef_plus(node.left) & vdef_plus(node.right)
            if shared:
                found.append((node, shared))
        elif isinstance(node, ast.Repeat) and (node.high is None or node.high >= 2):
            copies = node.low if node.high is None else node.high
            shared = vdef_plus(node.pattern) if copies >= 2 else frozenset()
            if shared:
                found.append((node, shared))
    return found


def binds(pattern: ast.Pattern) -> frozenset[str]:
    """The variables ``pattern``'s matches can bind, as seen from outside it."""
    if isinstance(pattern, ast.EventType):
        return frozenset() if pattern.name == "_" else frozenset({pattern.name})
    if isinstance(pattern, ast.NotEvent):
        return frozenset()
    if isinstance(pattern, ast.As):
        return binds(pattern.pattern) | {pattern.var}
    if isinstance(pattern, ast.Unless):
        return binds(pattern.left)
    if isinstance(pattern, ast.Filter | ast.Iter | ast.Star | ast.Repeat | ast.Selector):
        return binds(pattern.pattern)
    return binds(pattern.left) | binds(pattern.right)
