"""CEL formula → CEA, the linear-size construction of the CORE paper's appendix A.

The construction first builds a *VCEA*: transitions carry the set of
variables that the event read by the transition is bound to.  By induction on
the formula (``R``, ``AS``, ``FILTER``, ``OR``, ``;``, ``+``) and then:

* a fresh initial state ``q0`` replicates the transitions out of the initial
  states, so no transition re-enters ``q0`` (runs may start anywhere);
* a transition is *marked* (•) iff its variable set meets the projected
  variables (every non-empty set for ``SELECT *``), else unmarked (◦).

Two errata of the printed construction are fixed (see docs/semantics.md): the
fresh state of ``ψ+`` gets a TRUE/∅ self-loop, exactly like the initial states
of the right operand of ``;`` (iterations are not contiguous); and the ◦ case
reads ``L ∩ proj = ∅``.  CORE's contiguous operators ``:`` and ``:+`` are the
same constructions without those self-loops.

Size: about 600 lines: one construction per operator of the language, read together
(they share the fragment invariants, such as the waiting of nested selectors, whose product
itself is in :mod:`kleene.automata.selection`), plus the limit checks of :mod:`kleene.limits`
as the products grow.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from kleene.automata.cea import CEA, Transition
from kleene.automata.selection import Arc, Key, select_product
from kleene.automata.unroll import unroll
from kleene.language import ast
from kleene.language.variables import nullable
from kleene.limits import Limits
from kleene.predicates.atoms import Atoms


@dataclass(frozen=True, slots=True)
class _VT:
    """A VCEA transition: predicate masks (see cea.py) and the variables it binds."""

    source: int
    mask: int
    labels: frozenset[str]
    target: int
    neg: int = 0

    def moved(self, source: int, target: int) -> _VT:
        return _VT(source, self.mask, self.labels, target, self.neg)


K = TypeVar("K", bound=Hashable)


class StateNumbering(Generic[K]):
    """The states of a product construction, numbered when first reached.

    Calling it with a key (a pair of states, a state and a set...) gives the
    key's state, made with ``new_state`` the first time; :meth:`pending`
    hands out each new key once to be expanded, which may reach more.
    """

    def __init__(self, new_state: Callable[[], int]) -> None:
        self.ids: dict[K, int] = {}
        self._todo: list[K] = []
        self._new = new_state

    def __call__(self, key: K) -> int:
        number = self.ids.get(key)
        if number is None:
            number = self.ids[key] = self._new()
            self._todo.append(key)
        return number

    def pending(self) -> Iterator[tuple[K, int]]:
        """``(key, state)`` for every key not expanded yet, the latest reached first."""
        while self._todo:
            key = self._todo.pop()
            yield key, self.ids[key]


NOT_LABEL = "<not>"
"""The label of the event matched by NOT(...): part of the match, bound to no variable."""


@dataclass(frozen=True)
class _Fragment:
    """A VCEA under construction.

    Invariant: initial states have no incoming transitions (so no TRUE
    self-loop either).  ``nullable`` marks patterns that may match no event
    (``φ*``); the empty match is only ever used inside a sequence or OR, never
    output on its own.
    """

    transitions: tuple[_VT, ...]
    initial: frozenset[int]
    finals: frozenset[int]
    nullable: bool = False
    waits: frozenset[int] = frozenset()
    """Initial states of nested selectors: they wait for their first event with transitions
    of their own (which track the other runs), so no TRUE self-loop is added there.  The
    initial pairs of a product one of whose sides waits (AND, UNLESS's left) wait too, with
    the product's own transitions (which may loop on the pair: the exception to the invariant
    above, harmless since nothing is added around a waiting state)."""


class _Builder:
    def __init__(self, atoms: Atoms, limits: Limits | None = None) -> None:
        self.atoms = atoms
        self.count = 0
        self.limits = limits or Limits()

    def state(self) -> int:
        self.count += 1
        if self.count > self.limits.max_states:
            raise self.limits.states_error("the automaton under construction", self.count)
        return self.count - 1

    def grew(self, transitions: int) -> None:
        """Stop a construction whose transitions passed the limit (checked as products grow)."""
        self.limits.check_states("the automaton under construction", self.count, transitions)

    def build(self, p: ast.Pattern) -> _Fragment:
        method: Callable[[ast.Pattern], _Fragment] = getattr(self, "_" + type(p).__name__)
        frag = method(p)
        self.grew(len(frag.transitions))
        return frag

    def _EventType(self, p: ast.EventType) -> _Fragment:  # noqa: N802 (dispatch on class name)
        q1, q2 = self.state(), self.state()
        t = _VT(q1, self.atoms.event_mask(p), frozenset({p.name}), q2)
        return _Fragment((t,), frozenset({q1}), frozenset({q2}))

    def _As(self, p: ast.As) -> _Fragment:  # noqa: N802
        f = self.build(p.pattern)
        ts = tuple(
            _VT(t.source, t.mask, t.labels | {p.var}, t.target, t.neg) if t.labels else t
            for t in f.transitions
        )
        return _Fragment(ts, f.initial, f.finals, waits=f.waits)

    def _Filter(self, p: ast.Filter) -> _Fragment:  # noqa: N802
        cond = p.condition
        if isinstance(cond, ast.FilterAnd):  # (φ FILTER θ1) FILTER θ2
            return self.build(ast.Filter(ast.Filter(p.pattern, cond.left), cond.right))
        if isinstance(cond, ast.FilterOr):  # (φ FILTER θ1) OR (φ FILTER θ2)
            return self.build(
                ast.Or(ast.Filter(p.pattern, cond.left), ast.Filter(p.pattern, cond.right))
            )
        f = self.build(p.pattern)
        bit = self.atoms.pred_mask(cond.pred)
        ts = tuple(
            _VT(t.source, t.mask | bit, t.labels, t.target, t.neg) if cond.var in t.labels else t
            for t in f.transitions
        )
        return _Fragment(ts, f.initial, f.finals, waits=f.waits)

    def _Or(self, p: ast.Or) -> _Fragment:  # noqa: N802
        a, b = self.build(p.left), self.build(p.right)
        return _Fragment(
            a.transitions + b.transitions,
            a.initial | b.initial,
            a.finals | b.finals,
            a.nullable or b.nullable,
            a.waits | b.waits,
        )

    def _Seq(self, p: ast.Seq) -> _Fragment:  # noqa: N802
        a, b = self.build(p.left), self.build(p.right)
        if b.waits and a.nullable and p.contiguous:
            raise ValueError("a nested selector after ':' and a pattern that may match nothing")
        ts = list(a.transitions + b.transitions)
        if not p.contiguous:
            ts.extend(_VT(i, 0, frozenset(), i) for i in sorted(b.initial - b.waits))
        else:  # a nested selector right after the left side: it may not wait
            ts = [t for t in ts if t.labels or t.source not in b.waits]
        ts.extend(
            t.moved(t.source, i)
            for t in a.transitions
            if t.target in a.finals
            for i in sorted(b.initial)
        )
        initial, waits = a.initial, a.waits
        if a.nullable:
            # The empty left side: a match may start with the right side.  Enter it
            # through a fresh copy of its initial states without their TRUE loops,
            # so the match starts at its first event and `:` stays contiguous.
            entry = self.state()
            ts.extend(
                t.moved(entry, t.target)
                for t in b.transitions
                if t.source in b.initial - b.waits and t.labels
            )
            initial = initial | {entry}
            if b.waits:
                # A nested selector there is entered where this sequence is (the thesis reads
                # ε ; ψ as ψ): a copy of its start, which waits with its own transitions.
                again = self.state()
                ts.extend(t.moved(again, t.target) for t in b.transitions if t.source in b.waits)
                initial, waits = initial | {again}, waits | {again}
        finals = b.finals | a.finals if b.nullable else b.finals
        return _Fragment(tuple(ts), initial, finals, a.nullable and b.nullable, waits)

    def _Iter(self, p: ast.Iter) -> _Fragment:  # noqa: N802
        f = self.build(p.pattern)
        if f.waits:
            return self._iter_waiting(f, p.contiguous)
        q = self.state()
        ts = list(f.transitions)
        for t in f.transitions:
            sources = (t.source, q) if t.source in f.initial else (t.source,)
            targets = (t.target, q) if t.target in f.finals else (t.target,)
            ts.extend(
                t.moved(s, d) for s in sources for d in targets if (s, d) != (t.source, t.target)
            )
        if not p.contiguous:
            ts.append(_VT(q, 0, frozenset(), q))
        return _Fragment(tuple(ts), f.initial, f.finals, f.nullable)

    def _iter_waiting(self, f: _Fragment, contiguous: bool) -> _Fragment:
        """``φ+`` where ``φ`` starts with a nested selector (its initial states in ``f.waits``).

        Each later iteration is entered at a copy of each initial state of ``φ``, instead of one
        state with a TRUE loop: a selector's copy waits with its own transitions, which track
        the runs it compares with (a plain loop would not); the other copies get the TRUE loop.
        The first iteration is entered as ``φ`` is (``waits`` stays), and under ``:+`` a
        selector's copy may not wait.
        """
        again = {i: self.state() for i in sorted(f.initial)}
        ts = list(f.transitions)
        for t in f.transitions:
            sources = (t.source, again[t.source]) if t.source in f.initial else (t.source,)
            targets = (t.target, *again.values()) if t.target in f.finals else (t.target,)
            for s in sources:
                if contiguous and s != t.source and t.source in f.waits and not t.labels:
                    continue
                ts.extend(t.moved(s, d) for d in targets if (s, d) != (t.source, t.target))
        if not contiguous:
            ts.extend(_VT(q, 0, frozenset(), q) for i, q in again.items() if i not in f.waits)
        return _Fragment(tuple(ts), f.initial, f.finals, f.nullable, f.waits)

    def _And(self, p: ast.And) -> _Fragment:  # noqa: N802
        """``φ1 AND φ2``: both read the same events, with the same events in the match.

        A product automaton: a pair of transitions fires together when both
        fire (their predicates conjoined) and both take the event into the
        match or both skip it; the variables are unioned.  Starting together
        and ending together, the two matches share their interval and their
        positions.  ``φ*`` counts as ``φ+`` here (the empty match is no match).
        """
        a, b = self.build(p.left), self.build(p.right)
        waits = bool(a.waits or b.waits)
        if waits:  # a side starts with a nested selector: both sides wait, the plain ones
            a, b = _waiting(a), _waiting(b)  # with a TRUE loop (as after ';')
        pair: StateNumbering[tuple[int, int]] = StateNumbering(self.state)
        out_a = _by_source(a.transitions)
        out_b = _by_source(b.transitions)
        initial = frozenset(pair((x, y)) for x in a.initial for y in b.initial)
        ts: list[_VT] = []
        for (x, y), source in pair.pending():
            for ta in out_a.get(x, ()):
                for tb in out_b.get(y, ()):
                    mask, neg = ta.mask | tb.mask, ta.neg | tb.neg
                    if bool(ta.labels) != bool(tb.labels) or mask & neg:
                        continue
                    ts.append(_VT(source, mask, ta.labels | tb.labels, pair((ta.target, tb.target)), neg))
            self.grew(len(ts))
        finals = frozenset(i for (x, y), i in pair.ids.items() if x in a.finals and y in b.finals)
        return _Fragment(tuple(ts), initial, finals, waits=initial if waits else frozenset())

    def _All(self, p: ast.All) -> _Fragment:  # noqa: N802
        """``φ1 ALL φ2``: both matches, in any order, possibly overlapping.

        A product where each side is *before* its match (it ignores events),
        *inside* it (in one of its states), or *after* it.  On each event each
        side either ignores it (before/after) or takes one of its transitions;
        a side whose transition enters a final state may finish there.  The
        match starts at the first event either side takes and ends when the
        second side finishes, so the interval spans both matches.
        """
        a, b = self._unwaited(self.build(p.left)), self._unwaited(self.build(p.right))
        before, after = -1, -2

        def moves(f: _Fragment, out: dict[int, list[_VT]], mode: int) -> list[tuple[_VT | None, int]]:
            if mode == after:
                return [(None, after)]
            sources = f.initial if mode == before else (mode,)
            found: list[tuple[_VT | None, int]] = [(None, before)] if mode == before else []
            for q in sources:
                for t in out.get(q, ()):
                    found.append((t, t.target))
                    if t.target in f.finals and t.labels:
                        found.append((t, after))
            return found

        out_a, out_b = _by_source(a.transitions), _by_source(b.transitions)
        pair: StateNumbering[tuple[int, int]] = StateNumbering(self.state)
        start = pair((before, before))
        ts: list[_VT] = []
        for (x, y), source in pair.pending():
            if (x, y) == (after, after):
                continue  # both matches are complete: the run ends here
            for ta, nx in moves(a, out_a, x):
                for tb, ny in moves(b, out_b, y):
                    if ta is None and tb is None and (x, y) == (before, before):
                        continue  # a match starts with an event of one side
                    mask = (ta.mask if ta else 0) | (tb.mask if tb else 0)
                    neg = (ta.neg if ta else 0) | (tb.neg if tb else 0)
                    if mask & neg:
                        continue
                    labels = (ta.labels if ta else frozenset()) | (tb.labels if tb else frozenset())
                    ts.append(_VT(source, mask, labels, pair((nx, ny)), neg))
            self.grew(len(ts))
        finals = frozenset(i for key, i in pair.ids.items() if key == (after, after))
        return _Fragment(tuple(ts), frozenset({start}), finals)

    def _Unless(self, p: ast.Unless) -> _Fragment:  # noqa: N802
        """``φ1 UNLESS φ2``: a match of φ1 whose span contains no match of φ2.

        Each run of φ1 carries the set of states of the runs of φ2 that
        started inside its span (a subset construction, since φ2 is only
        tested for existence); a run dies as soon as one of them completes.
        Which φ2 transitions fire depends on the event's bits, so each φ1
        transition is split into *cells* (conjunctions of literals) on which
        the fired set is constant: :meth:`_cells` splits on one bit at a time,
        only where the result still depends on it, with event types exclusive
        (one type per event).  So the split grows with the distinct outcomes,
        not with ``2**bits`` (the former limit of 10 atoms); a construction
        that still grows too large stops at ``max_states`` (a LimitError).
        """
        a, b = self.build(p.left), self._unwaited(self.build(p.right))
        waits = bool(a.waits)
        if waits:  # the left side starts with a nested selector: it waits, and its span
            a = _waiting(a)  # (where φ2's runs start) begins at its first event taken
        out_a, out_b = _by_source(a.transitions), _by_source(b.transitions)
        pair: StateNumbering[tuple[int, frozenset[int], bool]] = StateNumbering(self.state)
        initial = frozenset(pair((q, frozenset(), not waits)) for q in a.initial)
        ts: list[_VT] = []
        for (q, subset, begun), source in pair.pending():
            live = [t for s in subset | b.initial for t in out_b.get(s, ())]
            for t in out_a.get(q, ()):
                if not (begun or t.labels):  # still waiting: no φ2 run has started
                    ts.append(_VT(source, t.mask, t.labels, pair((t.target, subset, False)), t.neg))
                    continue
                for mask, neg, nxt in self._cells(live, b.finals, t.mask, t.neg, len(ts)):
                    if nxt is not None:
                        ts.append(_VT(source, mask, t.labels, pair((t.target, nxt, True)), neg))
            self.grew(len(ts))
        finals = frozenset(i for (q, _, _), i in pair.ids.items() if q in a.finals)
        return _Fragment(tuple(ts), initial, finals, waits=initial if waits else frozenset())

    def _cells(
        self, live: list[_VT], finals: frozenset[int], mask: int, neg: int, made: int
    ) -> list[tuple[int, int, frozenset[int] | None]]:
        """Split the events with bits ``mask`` set and ``neg`` clear by what ``live`` does.

        Returns ``(mask, neg, next)`` cells covering them: ``next`` is the set
        of targets of the ``live`` transitions that fire on every event of the
        cell, None when one of them reaches a final state (φ2 matched).  A
        literal is added only while some transition's firing is undecided and
        would change ``next``.  ``made`` counts the transitions built so far,
        for the ``max_states`` limit.
        """
        types = (1 << len(self.atoms.event_types)) - 1
        out: list[tuple[int, int, frozenset[int] | None]] = []
        stack = [(mask, neg)]
        while stack:
            m, n = stack.pop()
            if m & n or (m & types) & ((m & types) - 1):
                continue  # contradictory, or two event types at once
            off = n | (types & ~m if m & types else 0)  # one type set: the others are clear
            fired: set[int] = set()
            undecided: list[_VT] = []
            for t in live:
                if t.mask & off or t.neg & m:
                    continue
                if t.mask & ~m == 0 and t.neg & ~off == 0:
                    fired.add(t.target)
                else:
                    undecided.append(t)
            if fired & finals:
                out.append((m, n, None))
                continue
            split = next(
                (t for t in undecided if t.target in finals or t.target not in fired), None
            )
            if split is None:
                out.append((m, n, frozenset(fired)))
                if len(out) % 1024 == 0:
                    self.grew(made + len(out))
                continue
            free = (split.mask & ~m) | (split.neg & ~off)
            bit = free & -free
            stack.append((m, n | bit))
            stack.append((m | bit, n))
        return out

    @staticmethod
    def _unwaited(f: _Fragment) -> _Fragment:
        """``f``, which must not start with a nested selector (kleene.language.selectors
        refuses those positions: the selector's competitors would start elsewhere)."""
        if f.waits:
            raise ValueError("a nested selector at the start of a side of ALL or UNLESS's right")
        return f

    def _Selector(self, p: ast.Selector) -> _Fragment:  # noqa: N802
        """``NEXT(ρ)``, ``LAST(ρ)``, ``MAX(ρ)`` in place (kleene.automata.selection).

        The runs of ρ wait at its initial states (TRUE self-loops, or a nested selector's
        own waiting) and the product tracks them from where the selector is entered; a
        fresh initial state copies the start states' transitions, so nothing enters it.
        """
        if p.strategy == "STRICT":
            raise ValueError("STRICT(...) is rewritten before compiling")
        body = self.build(p.pattern)
        vts = list(body.transitions)
        vts.extend(_VT(i, 0, frozenset(), i) for i in sorted(body.initial - body.waits))
        arcs = [
            Arc(t.source, t.mask, t.neg, bool(t.labels), t.target, k) for k, t in enumerate(vts)
        ]
        types = (1 << len(self.atoms.event_types)) - 1
        made, starts = select_product(
            p.strategy, arcs, body.initial, body.finals, types, self.grew
        )
        number: StateNumbering[Key] = StateNumbering(self.state)
        entry = self.state()
        begins = set(starts)
        ts: list[_VT] = []
        for source, mask, neg, arc, target in made:
            t = _VT(number(source), mask, vts[arc.ref].labels, number(target), neg)
            ts.append(t)
            if source in begins:
                ts.append(t.moved(entry, t.target))
        finals = frozenset(n for key, n in number.ids.items() if key[4])
        return _Fragment(tuple(ts), frozenset({entry}), finals, False, frozenset({entry}))

    def _Star(self, p: ast.Star) -> _Fragment:  # noqa: N802
        """``φ*``: ``φ+`` or nothing (see :class:`_Fragment`)."""
        f = self._Iter(ast.Iter(p.pattern))
        return _Fragment(f.transitions, f.initial, f.finals, True, f.waits)

    def _Repeat(self, p: ast.Repeat) -> _Fragment:  # noqa: N802
        """``φ{n,m}``: its copies written out (kleene.automata.unroll), nullable when n = 0."""
        f = self.build(unroll(p))
        return _Fragment(f.transitions, f.initial, f.finals, nullable(p), f.waits)

    def _NotEvent(self, p: ast.NotEvent) -> _Fragment:  # noqa: N802
        """``NOT(ψ)``: one event on which the single-event pattern ψ does not hold.

        ψ compiles to one-transition alternatives, conjunctions of atoms
        ``c1 ∨ c2 ∨ ...``; their negation ``¬c1 ∧ ¬c2 ∧ ...`` is expanded into
        alternatives that each forbid one atom of every ``ci``.  Overlapping
        alternatives are harmless: determinization merges their runs.
        """
        inner = self.build(p.pattern)
        terms = {(t.mask, t.neg) for t in inner.transitions}
        if any(neg for _, neg in terms):
            raise ValueError("NOT(...) cannot be nested")
        choices: set[int] = {0}
        for mask, _ in terms:
            bits = [1 << i for i in range(mask.bit_length()) if mask >> i & 1]
            choices = {c | b for c in choices for b in bits}
        q1, q2 = self.state(), self.state()
        label = frozenset({NOT_LABEL})
        ts = tuple(_VT(q1, 0, label, q2, neg) for neg in sorted(choices))
        return _Fragment(ts, frozenset({q1}), frozenset({q2}))


@dataclass(frozen=True)
class SelectorAutomaton:
    """A nested selector's product (kleene.automata.selection) as this module builds it, for
    the register engine (kleene.registers.selectors), which carries it in its own states.

    ``transitions``: ``(source, mask, neg, names, target)``, masks in the ``Atoms`` numbering it
    was built with; ``names`` empty: the current run skips the event (its bits still decide
    the target, since the other runs may take it).  ``entry`` waits with its own transitions.
    """

    transitions: tuple[tuple[int, int, int, frozenset[str], int], ...]
    entry: int
    finals: frozenset[int]


def selector_automaton(
    p: ast.Selector, atoms: Atoms, limits: Limits | None = None
) -> SelectorAutomaton:
    """``NEXT(ρ)``, ``LAST(ρ)`` or ``MAX(ρ)`` compiled in place, as inside a tECS automaton:
    the one construction of the product, reused by the register engine."""
    frag = _Builder(atoms, limits)._Selector(p)
    (entry,) = frag.initial
    return SelectorAutomaton(
        tuple((t.source, t.mask, t.neg, t.labels, t.target) for t in frag.transitions),
        entry,
        frag.finals,
    )


def _waiting(f: _Fragment) -> _Fragment:
    """``f`` whose initial states all wait: those of nested selectors with their own
    transitions, the others with a TRUE loop (as after ';'); for a product (AND, UNLESS's left)
    one of whose sides starts with a selector, so that both sides wait together."""
    loops = tuple(_VT(i, 0, frozenset(), i) for i in sorted(f.initial - f.waits))
    return _Fragment(f.transitions + loops, f.initial, f.finals, f.nullable, f.initial)


def compile_pattern(
    pattern: ast.Pattern,
    atoms: Atoms,
    projection: frozenset[str] | None = None,
    *,
    strict: bool = False,
    limits: Limits | None = None,
) -> CEA:
    """Compile a CEL pattern to a CEA.

    ``projection`` is the set of SELECTed variables (``None`` for ``*``): an
    event is marked iff it is bound to one of them.  ``strict`` keeps only
    runs whose events are contiguous (``SELECT STRICT``).  A construction
    passing ``limits.max_states`` stops with a LimitError (:mod:`kleene.limits`).
    """
    return compile_labelled(pattern, atoms, projection, strict=strict, limits=limits)[0]


Labels = dict[Transition, frozenset[bool]]
"""Per marked transition: whether the event it reads is bound to a projected variable
(both when several variable sets give the same transition)."""


def compile_labelled(
    pattern: ast.Pattern,
    atoms: Atoms,
    projection: frozenset[str] | None = None,
    *,
    strict: bool = False,
    project: frozenset[str] | None = None,
    limits: Limits | None = None,
) -> tuple[CEA, Labels]:
    """:func:`compile_pattern`, plus which marked transitions bind a variable of ``project``.

    A selection strategy compares whole matches, so it runs on the CEA of
    ``SELECT *`` (``projection=None``); the labels then say which positions
    of a chosen match the projection ``project`` keeps (runtime/projection.py).
    """
    cea, labels, _ = _compile(pattern, atoms, projection, strict, project, limits)
    return cea, labels


Variables = dict[Transition, frozenset[frozenset[str]]]
"""Per transition: the sets of names (event types and variables) the event it reads is bound
to; several when several transitions of the construction became one."""


def compile_named(
    pattern: ast.Pattern,
    atoms: Atoms,
    projection: frozenset[str] | None = None,
    *,
    strict: bool = False,
) -> tuple[CEA, Variables]:
    """:func:`compile_pattern`, plus the names each transition binds: to draw the automaton."""
    cea, _, variables = _compile(pattern, atoms, projection, strict, None)
    return cea, variables


def _compile(
    pattern: ast.Pattern,
    atoms: Atoms,
    projection: frozenset[str] | None,
    strict: bool,
    project: frozenset[str] | None,
    limits: Limits | None = None,
) -> tuple[CEA, Labels, Variables]:
    builder = _Builder(atoms, limits)
    # The construction makes many small objects and frees none: the cyclic garbage
    # collector would scan them again and again (a large product took 2.7x as long).
    collecting = gc.isenabled()
    gc.disable()
    try:
        frag = builder.build(pattern)
    finally:
        if collecting:
            gc.enable()
    q0 = builder.state()
    vts = list(frag.transitions)
    anchored = bool(frag.waits)
    if anchored:
        # A NEXT/LAST/MAX at the start of the pattern (kleene.language.selectors allows it
        # without a window): the automaton runs once, from the stream's start, so that the
        # selector's competitors are all the matches of its pattern since then; the other
        # starts wait with a TRUE loop, as after ';' (kleene.runtime.anchored).
        if strict:
            raise ValueError("a nested selector at the start of the pattern under SELECT STRICT")
        vts.extend(_VT(i, 0, frozenset(), i) for i in sorted(frag.initial - frag.waits))
    vts.extend(t.moved(q0, t.target) for t in list(vts) if t.source in frag.initial)
    builder.grew(len(vts))
    finals_in = set(frag.finals)
    if strict:
        vts, q0, finals_in = _strict(vts, q0, finals_in)
        builder.grew(len(vts))

    def marked(labels: frozenset[str]) -> bool:
        return bool(labels) if projection is None else bool(labels & projection)

    # Keep only useful states, reachable from q0 and reaching a final state:
    # runs anywhere else can never output, so they need not be tracked.
    forward: dict[int, set[int]] = {}
    backward: dict[int, set[int]] = {}
    for t in vts:
        forward.setdefault(t.source, set()).add(t.target)
        backward.setdefault(t.target, set()).add(t.source)
    reachable = _closure({q0}, forward)
    useful = reachable & _closure(finals_in, backward)
    reachable = useful | {q0}
    numbering = {s: n for n, s in enumerate(sorted(reachable))}
    labels: dict[Transition, set[bool]] = {}
    names: dict[Transition, set[frozenset[str]]] = {}
    for t in vts:
        if t.source in reachable and t.target in useful:
            tr = Transition(
                numbering[t.source], t.mask, marked(t.labels), numbering[t.target], t.neg
            )
            flags = labels.setdefault(tr, set())
            names.setdefault(tr, set()).add(t.labels)
            if tr.marked and project is not None:
                flags.add(bool(t.labels & project))
    transitions = tuple(
        sorted(labels, key=lambda t: (t.source, t.target, t.mask, t.neg, t.marked))
    )
    finals = frozenset(numbering[s] for s in finals_in if s in useful)
    cea = CEA(len(numbering), transitions, numbering[q0], finals, anchored)
    return (
        cea,
        {t: frozenset(f) for t, f in labels.items() if f},
        {t: frozenset(v) for t, v in names.items()},
    )


def _strict(vts: list[_VT], q0: int, finals: set[int]) -> tuple[list[_VT], int, set[int]]:
    """Product with a monitor that allows no gap inside a match (CEL thesis Thm 7.4).

    An event is in the match iff its transition binds a variable (non-empty
    label); a TRUE/∅ transition skips an event.  Once a run has skipped an
    event after its first one, it may only skip: it can still reach a final
    state only if it already did.  Runs start in mode "contiguous" (their
    first event is in the match), so the product has two copies of each
    state: ``(q, False)`` contiguous so far, ``(q, True)`` after a gap.
    The strategy sees the whole match, before projection.
    """
    ids: dict[tuple[int, bool], int] = {}

    def state(q: int, gap: bool) -> int:
        return ids.setdefault((q, gap), len(ids))

    start = state(q0, False)
    by_source: dict[int, list[_VT]] = {}
    for t in vts:
        by_source.setdefault(t.source, []).append(t)
    out: list[_VT] = []
    todo = [(q0, False)]
    seen = {(q0, False)}
    while todo:
        q, gap = todo.pop()
        for t in by_source.get(q, ()):
            if t.labels and gap:
                continue  # an event of the match after a gap: not contiguous
            nxt = (t.target, gap or not t.labels)
            out.append(t.moved(state(q, gap), state(*nxt)))
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    new_finals = {i for (q, _), i in ids.items() if q in finals}
    return out, start, new_finals


def _by_source(transitions: tuple[_VT, ...]) -> dict[int, list[_VT]]:
    out: dict[int, list[_VT]] = {}
    for t in transitions:
        out.setdefault(t.source, []).append(t)
    return out


def _closure(start: set[int], edges: dict[int, set[int]]) -> set[int]:
    seen, todo = set(start), list(start)
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen
