"""CEL formula → VCEA fragment, by induction on the formula: the construction of the CORE
paper's appendix A, one method per operator (``R``, ``AS``, ``FILTER``, ``OR``, ``;``, ``+``,
and kleene's ``AND``, ``ALL``, ``UNLESS``, ``NOT``, selectors, ``*``, ``{n,m}``).

Two errata of the printed construction are fixed (see docs/semantics.md): the
fresh state of ``ψ+`` gets a TRUE/∅ self-loop, exactly like the initial states
of the right operand of ``;`` (iterations are not contiguous); CORE's contiguous operators
``:`` and ``:+`` are the same constructions without those self-loops.  The products (AND,
ALL, UNLESS) check the limits of :mod:`kleene.limits` as they grow; the product of a nested
selector is :mod:`kleene.automata.selection`'s.  :mod:`kleene.automata.compile` finishes the
fragment into a CEA.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kleene.automata.fragments import NOT_LABEL, VT, Fragment, StateNumbering, by_source, waiting
from kleene.automata.selection import Arc, Key, select_product
from kleene.automata.unroll import unroll
from kleene.language import ast
from kleene.language.variables import nullable
from kleene.limits import Limits
from kleene.predicates.atoms import Atoms


class Builder:
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

    def build(self, p: ast.Pattern) -> Fragment:
        method: Callable[[ast.Pattern], Fragment] = getattr(self, "_" + type(p).__name__)
        frag = method(p)
        self.grew(len(frag.transitions))
        return frag

    def _EventType(self, p: ast.EventType) -> Fragment:  # noqa: N802 (dispatch on class name)
        q1, q2 = self.state(), self.state()
        t = VT(q1, self.atoms.event_mask(p), frozenset({p.name}), q2)
        return Fragment((t,), frozenset({q1}), frozenset({q2}))

    def _As(self, p: ast.As) -> Fragment:  # noqa: N802
        f = self.build(p.pattern)
        ts = tuple(
            VT(t.source, t.mask, t.labels | {p.var}, t.target, t.neg) if t.labels else t
            for t in f.transitions
        )
        return Fragment(ts, f.initial, f.finals, waits=f.waits)

    def _Filter(self, p: ast.Filter) -> Fragment:  # noqa: N802
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
            VT(t.source, t.mask | bit, t.labels, t.target, t.neg) if cond.var in t.labels else t
            for t in f.transitions
        )
        return Fragment(ts, f.initial, f.finals, waits=f.waits)

    def _Or(self, p: ast.Or) -> Fragment:  # noqa: N802
        a, b = self.build(p.left), self.build(p.right)
        return Fragment(
            a.transitions + b.transitions,
            a.initial | b.initial,
            a.finals | b.finals,
            a.nullable or b.nullable,
            a.waits | b.waits,
        )

    def _Seq(self, p: ast.Seq) -> Fragment:  # noqa: N802
        a, b = self.build(p.left), self.build(p.right)
        if b.waits and a.nullable and p.contiguous:
            raise ValueError("a nested selector after ':' and a pattern that may match nothing")
        ts = list(a.transitions + b.transitions)
        if not p.contiguous:
            ts.extend(VT(i, 0, frozenset(), i) for i in sorted(b.initial - b.waits))
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
        return Fragment(tuple(ts), initial, finals, a.nullable and b.nullable, waits)

    def _Iter(self, p: ast.Iter) -> Fragment:  # noqa: N802
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
            ts.append(VT(q, 0, frozenset(), q))
        return Fragment(tuple(ts), f.initial, f.finals, f.nullable)

    def _iter_waiting(self, f: Fragment, contiguous: bool) -> Fragment:
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
            ts.extend(VT(q, 0, frozenset(), q) for i, q in again.items() if i not in f.waits)
        return Fragment(tuple(ts), f.initial, f.finals, f.nullable, f.waits)

    def _And(self, p: ast.And) -> Fragment:  # noqa: N802
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
            a, b = waiting(a), waiting(b)  # with a TRUE loop (as after ';')
        pair: StateNumbering[tuple[int, int]] = StateNumbering(self.state)
        out_a = by_source(a.transitions)
        out_b = by_source(b.transitions)
        initial = frozenset(pair((x, y)) for x in a.initial for y in b.initial)
        ts: list[VT] = []
        for (x, y), source in pair.pending():
            for ta in out_a.get(x, ()):
                for tb in out_b.get(y, ()):
                    mask, neg = ta.mask | tb.mask, ta.neg | tb.neg
                    if bool(ta.labels) != bool(tb.labels) or mask & neg:
                        continue
                    ts.append(VT(source, mask, ta.labels | tb.labels, pair((ta.target, tb.target)), neg))
            self.grew(len(ts))
        finals = frozenset(i for (x, y), i in pair.ids.items() if x in a.finals and y in b.finals)
        return Fragment(tuple(ts), initial, finals, waits=initial if waits else frozenset())

    def _All(self, p: ast.All) -> Fragment:  # noqa: N802
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

        def moves(f: Fragment, out: dict[int, list[VT]], mode: int) -> list[tuple[VT | None, int]]:
            if mode == after:
                return [(None, after)]
            sources = f.initial if mode == before else (mode,)
            found: list[tuple[VT | None, int]] = [(None, before)] if mode == before else []
            for q in sources:
                for t in out.get(q, ()):
                    found.append((t, t.target))
                    if t.target in f.finals and t.labels:
                        found.append((t, after))
            return found

        out_a, out_b = by_source(a.transitions), by_source(b.transitions)
        pair: StateNumbering[tuple[int, int]] = StateNumbering(self.state)
        start = pair((before, before))
        ts: list[VT] = []
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
                    ts.append(VT(source, mask, labels, pair((nx, ny)), neg))
            self.grew(len(ts))
        finals = frozenset(i for key, i in pair.ids.items() if key == (after, after))
        return Fragment(tuple(ts), frozenset({start}), finals)

    def _Unless(self, p: ast.Unless) -> Fragment:  # noqa: N802
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
            a = waiting(a)  # (where φ2's runs start) begins at its first event taken
        out_a, out_b = by_source(a.transitions), by_source(b.transitions)
        pair: StateNumbering[tuple[int, frozenset[int], bool]] = StateNumbering(self.state)
        initial = frozenset(pair((q, frozenset(), not waits)) for q in a.initial)
        ts: list[VT] = []
        for (q, subset, begun), source in pair.pending():
            live = [t for s in subset | b.initial for t in out_b.get(s, ())]
            for t in out_a.get(q, ()):
                if not (begun or t.labels):  # still waiting: no φ2 run has started
                    ts.append(VT(source, t.mask, t.labels, pair((t.target, subset, False)), t.neg))
                    continue
                for mask, neg, nxt in self._cells(live, b.finals, t.mask, t.neg, len(ts)):
                    if nxt is not None:
                        ts.append(VT(source, mask, t.labels, pair((t.target, nxt, True)), neg))
            self.grew(len(ts))
        finals = frozenset(i for (q, _, _), i in pair.ids.items() if q in a.finals)
        return Fragment(tuple(ts), initial, finals, waits=initial if waits else frozenset())

    def _cells(
        self, live: list[VT], finals: frozenset[int], mask: int, neg: int, made: int
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
            undecided: list[VT] = []
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
    def _unwaited(f: Fragment) -> Fragment:
        """``f``, which must not start with a nested selector (kleene.language.selectors
        refuses those positions: the selector's competitors would start elsewhere)."""
        if f.waits:
            raise ValueError("a nested selector at the start of a side of ALL or UNLESS's right")
        return f

    def _Selector(self, p: ast.Selector) -> Fragment:  # noqa: N802
        """``NEXT(ρ)``, ``LAST(ρ)``, ``MAX(ρ)`` in place (kleene.automata.selection).

        The runs of ρ wait at its initial states (TRUE self-loops, or a nested selector's
        own waiting) and the product tracks them from where the selector is entered; a
        fresh initial state copies the start states' transitions, so nothing enters it.
        """
        if p.strategy == "STRICT":
            raise ValueError("STRICT(...) is rewritten before compiling")
        body = self.build(p.pattern)
        vts = list(body.transitions)
        vts.extend(VT(i, 0, frozenset(), i) for i in sorted(body.initial - body.waits))
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
        ts: list[VT] = []
        for source, mask, neg, arc, target in made:
            t = VT(number(source), mask, vts[arc.ref].labels, number(target), neg)
            ts.append(t)
            if source in begins:
                ts.append(t.moved(entry, t.target))
        finals = frozenset(n for key, n in number.ids.items() if key[4])
        return Fragment(tuple(ts), frozenset({entry}), finals, False, frozenset({entry}))

    def _Star(self, p: ast.Star) -> Fragment:  # noqa: N802
        """``φ*``: ``φ+`` or nothing (see :class:`Fragment`)."""
        f = self._Iter(ast.Iter(p.pattern))
        return Fragment(f.transitions, f.initial, f.finals, True, f.waits)

    def _Repeat(self, p: ast.Repeat) -> Fragment:  # noqa: N802
        """``φ{n,m}``: its copies written out (kleene.automata.unroll), nullable when n = 0."""
        f = self.build(unroll(p))
        return Fragment(f.transitions, f.initial, f.finals, nullable(p), f.waits)

    def _NotEvent(self, p: ast.NotEvent) -> Fragment:  # noqa: N802
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
        ts = tuple(VT(q1, 0, label, q2, neg) for neg in sorted(choices))
        return Fragment(ts, frozenset({q1}), frozenset({q2}))


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
    frag = Builder(atoms, limits)._Selector(p)
    (entry,) = frag.initial
    return SelectorAutomaton(
        tuple((t.source, t.mask, t.neg, t.labels, t.target) for t in frag.transitions),
        entry,
        frag.finals,
    )
