"""Nested selectors (``STRICT(p)``, ``NEXT(p)``, ``LAST(p)``, ``MAX(p)``) put in engine form.

The oracle evaluates the selectors as written (:mod:`kleene.reference.oracle`); for the
engines a query is rewritten, before it is checked and planned (docs/semantics.md,
"Nested selectors"):

* ``STRICT(p)`` anywhere: its matches are those of ``p`` whose events are
  contiguous in the (partition's) stream, which is ``p`` with every ``;``
  made ``:``, ``+`` made ``:+``, ``*`` and ``{n,m}`` made ``:{...}``, through
  OR, AS, FILTER (an interval made of intervals that follow each other), AND
  (both sides have the same events) and UNLESS's left side (its right side is
  another pattern, kept as written); an event pattern is an interval.  This is
  the thesis's Thm 7.4 (two copies of the automaton: skip before the first
  mark, never after) done on the formula, so both engines get it for free.
* ``NEXT``/``LAST``/``MAX(p)`` as the whole WHERE clause (under ``AS`` too):
  the query's strategy, ``SELECT MAX * WHERE p``; the strategies compose
  (``NEXT(MAX(p))`` is ``NEXT(p)``, since ⊆ refines ≤_next, and ``MAX(NEXT(p))``
  is ``NEXT(p)``, one match per end).
* ``NEXT``/``LAST``/``MAX(p)`` right after the left side of ``;`` or ``:``
  (``H ; MAX(T+) ; H``, also under OR, AS, FILTER, or starting an iteration or a
  repetition there): kept, and compiled in place by the tECS engine
  (:mod:`kleene.automata.selection`).
* ``NEXT``/``LAST``/``MAX(p)`` at the start of the pattern but not all of it
  (``MAX(T+) ; H``, also under OR, AS, FILTER, or starting an iteration there):
  without a window its competitors are every match of ``p`` since the stream's
  start, so it is compiled in place too, entered once at the stream's start (an
  *anchored* automaton, :mod:`kleene.runtime.anchored`).  Refused with WITHIN
  (the competitors start at the window of the whole match, which depends on
  where the whole match ends), CONSUME BY, or a query strategy.
* at the start of a side of AND or of UNLESS's left side: entered where the
  product is (both sides wait together, kleene.automata.fragments.waiting).
* everything else is refused with :class:`UnsupportedError` at the selector,
  saying why: a NEXT/LAST/MAX at the start of a side of ALL or of UNLESS's
  right side, after ``:`` and a pattern that may match nothing (after ``;`` it is
  entered both after the left side and where the sequence is), ``STRICT`` over
  ``ALL`` (the union of two matches is an interval without each being one) or
  over NEXT/LAST/MAX, and a selector inside ``NOT(...)`` (one event).  The
  register engine (conditions between events) takes a nested NEXT/LAST/MAX where the
  tECS engine does, but inside ALL/UNLESS and at the start of a ``:+`` iteration, when no
  such condition reads its events (:func:`register_refusal` says where and why otherwise;
  the planner refuses it; kleene.registers.selectors builds it).
"""

from __future__ import annotations

import dataclasses

from kleene.language import ast
from kleene.language.conditions import nary_filters, var_attrs
from kleene.language.errors import QueryError, UnsupportedError
from kleene.language.variables import bound_variables, nullable

__all__ = [
    "anchored_selectors",
    "desugar_selectors",
    "first_selector",
    "has_selectors",
    "register_refusal",
]

_CHOOSING = ("NEXT", "LAST", "MAX")


def has_selectors(p: ast.Pattern) -> bool:
    """Does ``p`` hold a ``STRICT(...)``, ``NEXT(...)``, ``LAST(...)`` or ``MAX(...)``?"""
    return isinstance(first_selector(p), ast.Selector)


def desugar_selectors(query: ast.Query, text: str) -> ast.Query:
    """``query`` without selectors in its pattern (the same object when it has none)."""
    if not has_selectors(query.where):
        return query
    strategy = query.select.strategy
    where = query.where
    while True:
        sel = where.pattern if isinstance(where, ast.As) else where
        if not (isinstance(sel, ast.Selector) and sel.strategy in _CHOOSING):
            break
        strategy = _compose(strategy, sel, query, text)
        if isinstance(where, ast.As):  # MAX(p) AS x is MAX(p AS x): AS keeps the events
            where = ast.As(sel.pattern, where.var, where.span)
        else:
            where = sel.pattern
    where = _Rewriter(text, _anchor_refusal(query, strategy)).pattern(where, strict=False, top=True)
    select = dataclasses.replace(query.select, strategy=strategy)
    return dataclasses.replace(query, select=select, where=where)


def _compose(outer: ast.Strategy, sel: ast.Selector, query: ast.Query, text: str) -> ast.Strategy:
    """The query's strategy once the whole pattern's selector ``sel`` joins ``outer``."""
    why = None
    if query.consume != "NONE":
        why = (
            "CONSUME BY removes matches before the query's strategy chooses, but after a "
            f"selector on the whole pattern has: write SELECT {sel.strategy} * instead"
        )
    elif isinstance(query.within, ast.AttrWindow):
        why = (
            "a WITHIN n [attribute] window does not say where a match may start (the "
            "attribute need not grow), which the selector's choice depends on"
        )
    elif outer == "STRICT":
        why = "SELECT STRICT keeps the contiguous matches among those the selector chose"
    if why is not None:
        raise _refuse(f"{sel.strategy}(...) on the whole pattern is not supported here: {why}", sel, text)
    if outer in ("ALL", "ANY") or sel.strategy in ("NEXT", "LAST"):
        # NEXT and LAST (inside) keep one match per end: whatever chooses among them after
        # keeps it.
        return sel.strategy
    # MAX inside NEXT, LAST or MAX: NEXT's and LAST's one match per end is maximal (⊆ refines
    # their orders), so they choose the same among MAX's matches.
    return outer


def _anchor_refusal(query: ast.Query, strategy: ast.Strategy) -> str | None:
    """Why a NEXT/LAST/MAX at the start of the pattern (not all of it) cannot run here; None:
    it runs, the automaton read once from the stream's start (kleene.runtime.anchored)."""
    if query.within is not None:
        return (
            "with WITHIN, its matches are chosen among those that start inside the window of "
            "the whole match, which depends on where the whole match ends, not known when its "
            "part ends (a match dominated by one that started at d is chosen only if the whole "
            "match ends more than the window after d); without WITHIN it runs (it chooses among "
            "every match since the stream's start), or write something before it, "
            "'H ; {sel}(T+) ; H', or apply it to the whole pattern, SELECT {sel} *"
        )
    if query.consume != "NONE":
        return "CONSUME BY would discard the runs that track the matches it chooses among"
    if strategy not in ("ALL", "ANY"):
        return f"SELECT {strategy} chooses again among whole matches; write the selector there"
    return None


def _refuse(message: str, node: ast.Selector | ast.Pattern, text: str) -> QueryError:
    span = node.span
    return UnsupportedError(message, span.line, span.column, text)


class _Rewriter:
    def __init__(self, text: str, unanchored: str | None) -> None:
        self.text = text
        self.unanchored = unanchored
        """Why a selector at the start of the pattern is refused (None: it runs anchored)."""

    def pattern(
        self, p: ast.Pattern, strict: bool, entered: bool = False, top: bool = False
    ) -> ast.Pattern:
        """``p`` without STRICT; ``strict``: only its contiguous matches (``STRICT(p)``).

        ``entered``: ``p`` starts right after the left side of a ``;`` or ``:`` (which
        cannot match nothing), the one place a nested NEXT, LAST or MAX is compiled in
        place (kleene.automata.selection): its competitors start there.  ``top``: ``p``
        starts where the whole pattern does: a selector there is entered at the stream's
        start (the automaton is *anchored*, kleene.runtime.anchored), when
        :func:`_anchor_refusal` allows it.
        """
        if isinstance(p, ast.EventType):
            return p
        if isinstance(p, ast.Selector):
            if p.strategy == "STRICT":
                return self.pattern(p.pattern, strict=True, entered=entered, top=top)
            if strict:
                raise _refuse(
                    f"STRICT over {p.strategy}(...) is not supported: the contiguous matches "
                    f"among those {p.strategy} chose are not a rewrite into ':'",
                    p,
                    self.text,
                )
            if top and not entered and self.unanchored is not None:
                raise _refuse(
                    f"{p.strategy}(...) at the start of the pattern is not supported here: "
                    + self.unanchored.replace("{sel}", p.strategy),
                    p,
                    self.text,
                )
            if not entered and not top:
                raise _refuse(
                    f"{p.strategy}(...) here is not supported: it chooses among the matches "
                    "of its pattern that start where the enclosing pattern lets it start, "
                    "which the engine knows only right after the left side of ';' or ':' "
                    "(not after a pattern that may match nothing) or at the start of the "
                    f"whole pattern: write something before it, 'H ; {p.strategy}(T+) ; H'",
                    p,
                    self.text,
                )
            return dataclasses.replace(p, pattern=self.pattern(p.pattern, False, entered=True))
        if isinstance(p, ast.NotEvent):
            if has_selectors(p.pattern):
                raise _refuse(
                    "NOT(...) takes a single-event pattern: a selector has nothing to choose "
                    "there",
                    first_selector(p.pattern),
                    self.text,
                )
            return p
        if isinstance(p, ast.As | ast.Filter):
            return dataclasses.replace(p, pattern=self.pattern(p.pattern, strict, entered, top))
        # An iteration's first part is entered as the iteration is, the later ones after the
        # previous one (kleene.automata.construction.Builder._iter_waiting).
        if isinstance(p, ast.Iter):
            return dataclasses.replace(
                p,
                pattern=self.pattern(p.pattern, strict, entered, top),
                contiguous=p.contiguous or strict,
            )
        if isinstance(p, ast.Star):
            inner = self.pattern(p.pattern, strict, entered, top)
            if strict:
                return ast.Repeat(inner, 0, None, True, p.span)
            return dataclasses.replace(p, pattern=inner)
        if isinstance(p, ast.Repeat):
            return dataclasses.replace(
                p,
                pattern=self.pattern(p.pattern, strict, entered, top),
                contiguous=p.contiguous or strict,
            )
        if isinstance(p, ast.Seq):
            # The right side is entered after the left one, and, when the left may match
            # nothing, also where the sequence is (ε ; ψ = ψ); not both under ':' (a selector
            # entered after the left may not wait there, one entered with the sequence may).
            empty = nullable(p.left)
            contiguous = p.contiguous or strict
            return dataclasses.replace(
                p,
                left=self.pattern(p.left, strict, entered, top),
                right=self.pattern(
                    p.right,
                    strict,
                    entered=not empty or (entered and not contiguous),
                    top=empty and top and not contiguous,
                ),
                contiguous=contiguous,
            )
        if isinstance(p, ast.Or):
            return dataclasses.replace(
                p,
                left=self.pattern(p.left, strict, entered, top),
                right=self.pattern(p.right, strict, entered, top),
            )
        # AND's sides and UNLESS's left are entered where the product is (both wait for their
        # first event together, kleene.automata.fragments.waiting); UNLESS's right side starts
        # inside the left match, and ALL's sides at different events.
        if isinstance(p, ast.And):
            return dataclasses.replace(
                p,
                left=self.pattern(p.left, strict, entered, top),
                right=self.pattern(p.right, strict, entered, top),
            )
        if isinstance(p, ast.Unless):
            return dataclasses.replace(
                p,
                left=self.pattern(p.left, strict, entered, top),
                right=self.pattern(p.right, False),
            )
        if isinstance(p, ast.All):
            if strict:
                raise _refuse(
                    "STRICT(... ALL ...) is not supported: the union of two matches can be "
                    "contiguous without either being so, which no rewrite into ':' says; "
                    "write the orders out with ':' and OR",
                    p,
                    self.text,
                )
            return dataclasses.replace(
                p, left=self.pattern(p.left, False), right=self.pattern(p.right, False)
            )
        raise TypeError(f"not a pattern: {p!r}")


def first_selector(p: ast.Pattern) -> ast.Pattern:
    """The first selector of ``p`` in reading order (``p`` itself if it has none): for carets."""
    todo = [p]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Selector):
            return node
        todo.extend(
            child
            for name in ("right", "left", "pattern")
            if isinstance(child := getattr(node, name, None), ast.Pattern)
        )
    return p


def anchored_selectors(p: ast.Pattern) -> list[ast.Selector]:
    """The NEXT/LAST/MAX of ``p`` (desugared) at its start, entered at the stream's start: a
    pattern holding one compiles to an anchored automaton (kleene.runtime.anchored)."""
    if isinstance(p, ast.Selector):
        return [p]
    if isinstance(p, ast.As | ast.Filter | ast.Iter | ast.Star | ast.Repeat):
        return anchored_selectors(p.pattern)
    if isinstance(p, ast.Seq):
        return anchored_selectors(p.left) + (anchored_selectors(p.right) if nullable(p.left) else [])
    if isinstance(p, ast.Or | ast.And):
        return anchored_selectors(p.left) + anchored_selectors(p.right)
    if isinstance(p, ast.Unless):
        return anchored_selectors(p.left)
    return []


def register_refusal(p: ast.Pattern, reason: str) -> tuple[ast.Selector, str] | None:
    """Where and why a NEXT/LAST/MAX inside ``p`` (desugared) cannot run on the register
    engine, which ``reason`` (a condition between events) chose; None: every one can.

    A condition between events *inside* a selector, or reading a variable bound inside it:
    which runs of its pattern survive depends on the values their conditions read, so the
    selector's classes of competing runs (sets of states, kleene.automata.selection) would have
    to hold register values, which no finite product does.  Conditions only outside it: the
    product is finite and rides in the register automaton's states (kleene.registers.selectors),
    entered where the tECS engine enters it; the positions the register builder does not reach
    (inside ALL or UNLESS, the start of a ``:+`` iteration or of one right after ``:``) are
    refused with the reason.
    """
    everyone = _selectors(p)
    if not everyone:
        raise ValueError("register_refusal: no selector in the pattern")
    for sel in everyone:
        inside = bound_variables(sel.pattern)
        own = {id(atom) for _, atom in nary_filters(sel.pattern)}
        for _, atom in nary_filters(p):
            names = {atom.var} | {v.var for v in var_attrs(atom.pred)}
            if id(atom) in own or names & inside:
                return sel, (
                    f"{sel.strategy}(...) with a condition between events on its events is not "
                    "supported: its choice compares runs of its pattern that the condition keeps "
                    "or drops by the values it reads, which no finite product of states tracks "
                    "(the register engine's runs differ in data, not only in states); write the "
                    f"condition outside the selector on events it does not choose, or choose on "
                    f"the whole pattern (SELECT {sel.strategy} *), which the register engine runs"
                )
    found = _misplaced(p, after=";", product=None)
    if found is None:
        return None
    sel, where = found
    return sel, (
        f"{sel.strategy}(...) {where} is evaluated by the tECS engine only, and this query has "
        f"conditions between events ({reason}); the register engine carries a selector's "
        "product in its states after the left side of ';' or ':', at the start of the pattern "
        "(without a window), under AS, FILTER, OR, AND, or starting an iteration '+' or a "
        "repetition after ';', but not inside ALL or UNLESS, nor starting a ':+' iteration: write it "
        f"outside them, or choose on the whole pattern (SELECT {sel.strategy} *) if that is what "
        "is meant"
    )


def _selectors(p: ast.Pattern) -> list[ast.Selector]:
    """The outermost NEXT/LAST/MAX of ``p`` (those inside them are their product's business)."""
    if isinstance(p, ast.Selector):
        return [p]
    return [s for child in _children(p) for s in _selectors(child)]


def _children(p: ast.Pattern) -> list[ast.Pattern]:
    return [
        child
        for name in ("left", "right", "pattern")
        if isinstance(child := getattr(p, name, None), ast.Pattern)
    ]


def _misplaced(
    p: ast.Pattern, after: str, product: str | None
) -> tuple[ast.Selector, str] | None:
    """The first selector of ``p`` the register builder cannot enter, and where it is.

    ``after``: what ``p``'s start follows, ``";"`` (the left side of ``;`` or the start of the
    pattern, where the planner made sure a selector may be anchored: both wait), ``":"`` (it
    may not wait) or ``""`` (the start of an iteration whose first turn may not wait but the
    later ones may, or of a ':+' iteration, which the tECS engine only builds); ``product``: ``p``
    is inside a side of ALL or UNLESS (named), whose register construction takes TRUE loops
    only (AND pairs a selector's skips with the other side's).
    """
    if isinstance(p, ast.Selector):
        if product is not None:
            return p, f"inside {product}"
        if not after:
            return p, "at the start of an iteration after ':' or of a ':+' iteration"
        return None
    if isinstance(p, ast.As | ast.Filter):
        return _misplaced(p.pattern, after, product)
    if isinstance(p, ast.Iter | ast.Star):
        # each later turn is entered after the previous one, by ';' (':+': contiguously, which
        # the tECS engine gives the later turns only); a repetition is written out into ';'/':'
        contiguous = isinstance(p, ast.Iter) and p.contiguous
        return _misplaced(p.pattern, "" if contiguous or after != ";" else after, product)
    if isinstance(p, ast.Repeat):  # written out (kleene.automata.unroll): an iteration if open
        turns = p.high is None and (p.contiguous or (max(p.low, 1) == 1 and after != ";"))
        return _misplaced(p.pattern, "" if turns else after, product)
    if isinstance(p, ast.Seq):
        here = ":" if p.contiguous else ";"
        return _misplaced(p.left, after, product) or _misplaced(
            p.right, after if nullable(p.left) else here, product
        )
    if isinstance(p, ast.Or):
        return _misplaced(p.left, after, product) or _misplaced(p.right, after, product)
    if isinstance(p, ast.And):  # both sides read the same events: entered where AND is
        return _misplaced(p.left, after, product) or _misplaced(p.right, after, product)
    if isinstance(p, ast.All | ast.Unless):
        name = "a side of ALL" if isinstance(p, ast.All) else "UNLESS"
        return _misplaced(p.left, after, name) or _misplaced(p.right, after, name)
    return None
