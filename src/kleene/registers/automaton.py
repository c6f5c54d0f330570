"""CEQL with conditions between events -> a symbolic register transducer (SRT).

The construction of the SRT papers (TR §4, Fig 11; RMA Algorithms 3-4), on
CEQL patterns:

1. **Nullable parts are expanded away** first, so that no fragment accepts the
   empty string: ``φ1 ; φ2`` with a nullable side becomes the OR of the
   sequence and the other side, exactly the oracle's ``ψ ; ε = ψ`` rule, and
   ``φ*`` becomes ``φ+`` there.  (Thompson's ε-edges would otherwise let a
   gap be followed by an *empty* right side, i.e. accept a gap that the
   valuation semantics does not allow.)
2. **Thompson construction** with one start and one final state per
   fragment: ``R`` is one transition binding the variable ``R``; ``AS x``
   adds ``x`` to the variables of the fragment's transitions; ``;`` links
   the two fragments through a *gap state* with a TRUE self-loop that binds
   nothing (CEQL's skip-till-any-match, the SRT's ``(⊤↑⊗)*``), ``:`` links
   them directly (strict contiguity); ``OR`` and ``+``/``:+`` are Thompson's
   union and iteration (iterations separated by a gap state unless ``:+``).
3. **Registers, one per variable** that some condition reads (RMA's
   ``CreateNewRs``): every transition that binds ``a`` writes ``a``'s
   register.  A FILTER atom ``x[P]`` conjoins P's *unary* conjuncts into one
   atomic predicate (a bit evaluated vectorized by
   :class:`~kleene.predicates.table.PredicateTable`, the prefilter) and
   its *n-ary* conjuncts into a guard (:mod:`kleene.registers.guards`), on
   every transition of the fragment that binds ``x``.  The checker made sure
   every register a guard reads was written before on every path (a
   variable bound to one event, before ``x``).
4. ``prev(x)`` gets a register of its own per FILTER: written by the
   fragment's ``x`` transitions, **cleared on entering the fragment** (a
   fresh start state with an ε-edge that empties it), and read by the guard
   before the write (SRT Def 23).  A conjunct reading an empty ``prev``
   register holds: the first event of ``x`` has no predecessor.
5. ``AND`` and ``ALL`` are products of their sides' ε-NFAs (:meth:`_Builder._product`),
   each side with registers of its own; ``φ1 UNLESS φ2`` runs φ2 as a *monitor*
   SRT next to the query's runs and checks, on the transitions that end φ1,
   that no φ2 match lies inside φ1's interval (:meth:`_Builder._Unless`).
6. **ε-elimination per state** (:mod:`kleene.registers.enfa`; the spec's recommended variant of Alg 2):
   each state gets the consuming transitions of its ε-closure, with the
   registers cleared along the ε-path; a state is final when its closure
   holds the final state.  Every transition keeps its own write set.

A run accepts when a transition that binds a variable enters a final state
(SRT Def 24: the last transition is marked).  Outputs (•) are the
transitions whose variables meet the projection.

Size: the SRT compiler is one recursive construction over the pattern (one case per
operator, the register bookkeeping threaded through all of them); the SRT's types are in
:mod:`kleene.registers.srt`, the ε-NFA's records and its elimination in :mod:`kleene.registers.enfa`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from kleene.automata.fragments import NOT_LABEL, StateNumbering
from kleene.automata.unroll import unroll
from kleene.language import ast
from kleene.language.conditions import (
    across_pair,
    atoms,
    conjuncts,
    outer_names,
    plain_attrs,
    reads_others,
    reads_prev,
    swap_target,
    var_attrs,
)
from kleene.language.variables import WILDCARD, nullable
from kleene.limits import Limits
from kleene.predicates.nodes import structural_key
from kleene.registers.enfa import Cons, Frag, eliminate
from kleene.registers.guards import Guard, compile_guard
from kleene.registers.srt import SRT, Condition

# ---------------------------------------------------------------- rewriting


def without_empty(p: ast.Pattern) -> ast.Pattern:
    """An equivalent pattern whose fragments never match the empty string."""
    if isinstance(p, ast.EventType | ast.NotEvent | ast.Selector):
        return p  # a selector's pattern is compiled by the tECS construction, as written
    if isinstance(p, ast.Star):
        return ast.Iter(without_empty(p.pattern), False, p.span)
    if isinstance(p, ast.Repeat):
        return without_empty(unroll(p))
    if isinstance(p, ast.Iter | ast.As | ast.Filter):
        return dataclasses.replace(p, pattern=without_empty(p.pattern))
    if isinstance(p, ast.Or | ast.And | ast.All | ast.Unless):
        # AND, ALL and UNLESS take a nullable side's non-empty matches only (docs/cel-semantics.md).
        return dataclasses.replace(p, left=without_empty(p.left), right=without_empty(p.right))
    if isinstance(p, ast.Seq):
        left, right = without_empty(p.left), without_empty(p.right)
        out: ast.Pattern = ast.Seq(left, right, p.contiguous, p.span)
        if nullable(p.right):
            out = ast.Or(out, left, p.span)
        if nullable(p.left):
            out = ast.Or(out, right, p.span)
        return out
    raise TypeError(f"the register engine does not evaluate {type(p).__name__}")


def _and(preds: list[ast.Pred]) -> ast.Pred:
    out = preds[0]
    for p in preds[1:]:
        out = ast.PAnd(out, p)
    return out


# ----------------------------------------------------------------- building


class _Builder:
    def __init__(
        self,
        projection: frozenset[str] | None,
        streams: list[str] | None = None,
        stream_base: int = 0,
        strategy_first: bool = False,
        limits: Limits | None = None,
    ) -> None:
        self.limits = limits or Limits()
        """``max_states``: states made while the SRT is built (:mod:`kleene.limits`).  Its
        transitions are not counted: a product state gets at most the pairs of its sides'
        few transitions, so the states bound them (measured: fewer than 2 per state)."""
        self.projection = projection
        self.strategy_first = strategy_first
        """Mark every event of a match; ``hidden`` flags those outside the projection."""
        self.streams = streams or []
        """Stream bits (``S>E`` with a stream column), numbered after the predicates."""
        self.stream_base = stream_base
        self.states = 0
        self.eps: list[tuple[int, frozenset[int], int]] = []
        self.cons: list[Cons] = []
        self.event_types: list[str] = []
        self.preds: list[ast.Pred] = []
        self.pred_keys: list[object] = []
        self.registers: list[str] = []
        self.var_register: dict[str, int] = {}
        """Per variable a condition reads (``a`` at the top, ``a@k`` inside the k-th side of an
        AND/ALL): its register."""
        self.scope = ""
        """The AND/ALL sides the builder is inside (``""``: none; ``"@1"``, ``"@1.2"``, ...)."""
        self.sides = 0
        self.attributes: list[str] = []
        self.selectors: list[str] = []
        self.monitors: list[Frag] = []
        """The right sides of UNLESS, built into the same ε-NFA (unreachable from the query's
        start) and ε-eliminated on their own."""
        self.seeded: dict[int, tuple[int, ...]] = {}
        """Monitor -> the registers of the left side's variables its conditions read."""
        # Guards are compiled once the register numbering is final.
        self.pending: list[tuple[Cons, ast.Pred, str, dict[tuple[str, bool], int], int | None]] = []

    def state(self) -> int:
        self.states += 1
        if self.states > self.limits.max_states:
            raise self.limits.states_error("the register automaton under construction", self.states)
        return self.states - 1

    def edge(self, a: int, b: int, clears: frozenset[int] = frozenset()) -> None:
        self.eps.append((a, clears, b))

    def gap_state(self) -> int:
        g = self.state()
        self.cons.append(Cons(g, 0, set(), g))
        return g

    def bit(self, pred: ast.Pred) -> int:
        key = structural_key(pred)
        if key not in self.pred_keys:
            self.pred_keys.append(key)
            self.preds.append(pred)
        return 1 << (len(self.event_types) + self.pred_keys.index(key))

    def register(self, name: str) -> int:
        self.registers.append(name)
        return len(self.registers) - 1

    def attribute(self, name: str) -> None:
        if name not in self.attributes:
            self.attributes.append(name)

    # ------------------------------------------------------------- patterns
    def build(self, p: ast.Pattern) -> Frag:
        method: Callable[[ast.Pattern], Frag] = getattr(self, "_" + type(p).__name__)
        return method(p)

    def _EventType(self, p: ast.EventType) -> Frag:  # noqa: N802 (dispatch on class name)
        if p.name not in self.event_types and p.name != WILDCARD:
            if self.preds:
                raise AssertionError("event types are numbered before predicates")
            self.event_types.append(p.name)
        s, f = self.state(), self.state()
        # The wildcard `_` tests no type bit: mask 0 holds on every event.
        mask = 0 if p.name == WILDCARD else 1 << self.event_types.index(p.name)
        if p.stream is not None and p.stream in self.streams:
            mask |= 1 << (self.stream_base + self.streams.index(p.stream))
        t = Cons(s, mask, {p.name}, f)
        self.cons.append(t)
        return Frag(s, f, (t,))

    def _As(self, p: ast.As) -> Frag:  # noqa: N802
        frag = self.build(p.pattern)
        for t in frag.cons:
            if t.variables:
                t.variables.add(p.var)
        return frag

    def _Filter(self, p: ast.Filter) -> Frag:  # noqa: N802
        cond = p.condition
        if isinstance(cond, ast.FilterAnd):
            return self.build(ast.Filter(ast.Filter(p.pattern, cond.left), cond.right))
        if isinstance(cond, ast.FilterOr):
            return self.build(
                ast.Or(ast.Filter(p.pattern, cond.left), ast.Filter(p.pattern, cond.right))
            )
        frag = self.build(p.pattern)
        x = cond.var
        parts: list[ast.Pred] = [plain_attrs(c, x) for c in conjuncts(cond.pred)]
        unary = [c for c in parts if not reads_others(c, x)]
        nary = [c for c in parts if reads_others(c, x)]
        mask = self.bit(_and(unary)) if unary else 0
        prev_reg: int | None = None
        if any(reads_prev(c) for c in nary):
            prev_reg = self.register(f"prev({x})")
        mine = [t for t in frag.cons if x in t.variables]
        for t in mine:
            t.mask |= mask
            if prev_reg is not None:
                t.writes.add(prev_reg)
        slots: dict[tuple[str, bool], int] = {}
        for c in nary:
            for ref in var_attrs(c):
                self.attribute(ref.name)
                if ref.prev:
                    assert prev_reg is not None
                    slots[(x, True)] = prev_reg
                elif (ref.var, False) not in slots:
                    # The checker made sure `a` is bound to one event of every match of this
                    # FILTER's pattern, before x: its transitions here write the register.
                    # Registers are per AND/ALL side, where the other side may bind `a` too.
                    name = ref.var + self.scope
                    if name not in self.var_register:
                        self.var_register[name] = self.register(name)
                    slots[(ref.var, False)] = self.var_register[name]
                    for t in frag.cons:
                        if ref.var in t.variables:
                            t.writes.add(self.var_register[name])
            for e in _attrs_of(c):
                self.attribute(e)
        for c in nary:
            a = across_pair(p.pattern, ast.FilterAtom(x, c))
            if a is not None:  # two events in either order (AND/ALL sides): the second decides
                self._either_order(frag, c, x, a, slots)
                continue
            vacuous = prev_reg if reads_prev(c) else None
            for t in mine:
                self.pending.append((t, c, x, slots, vacuous))
        if prev_reg is None:
            return frag
        entry = self.state()
        self.edge(entry, frag.start, frozenset({prev_reg}))
        return Frag(entry, frag.final, frag.cons, frag.entries)

    def _either_order(
        self, frag: Frag, c: ast.Pred, x: str, a: str, slots: dict[tuple[str, bool], int]
    ) -> None:
        """``x[c]`` reading ``a``, one event each, in either order (issue 18): on ``x``'s event
        it holds while ``a``'s register is empty, on ``a``'s event (swapped onto ``a``) while
        ``x``'s is, and on an event bound to both it reads that event for both."""
        name = x + self.scope
        if name not in self.var_register:
            self.var_register[name] = self.register(name)
        x_reg, a_reg = self.var_register[name], slots[(a, False)]
        swapped = swap_target(c, x, a)
        for t in frag.cons:
            if x in t.variables:
                t.writes.add(x_reg)
        for t in frag.cons:
            if x in t.variables and a in t.variables:
                self.pending.append((t, plain_attrs(c, a), x, slots, None))
            elif x in t.variables:
                self.pending.append((t, c, x, slots, a_reg))
            elif a in t.variables:
                self.pending.append((t, swapped, a, {(x, False): x_reg}, x_reg))

    def _NotEvent(self, p: ast.NotEvent) -> Frag:  # noqa: N802
        """``NOT(ψ)``: one event on which the single-event pattern ψ does not hold.

        As in :mod:`kleene.automata.compile`: ψ's alternatives are conjunctions
        of bits ``c1 ∨ c2 ∨ ...``; the negation ``¬c1 ∧ ¬c2 ∧ ...`` becomes
        alternatives that each forbid one bit of every ``ci``.  The event is
        part of the match but bound to no variable.
        """
        inner = self.build(p.pattern)  # its transitions stay unreachable
        choices: set[int] = {0}
        for t in inner.cons:
            bits = [1 << i for i in range(t.mask.bit_length()) if t.mask >> i & 1]
            choices = {c | b for c in choices for b in bits}
        s, f = self.state(), self.state()
        out = []
        for neg in sorted(choices):
            t = Cons(s, 0, {NOT_LABEL}, f, neg)
            self.cons.append(t)
            out.append(t)
        return Frag(s, f, tuple(out))

    def _Or(self, p: ast.Or) -> Frag:  # noqa: N802
        a, b = self.build(p.left), self.build(p.right)
        if bool(a.entries) != bool(b.entries):  # the other side waits with a TRUE loop
            a, b = self._waiting(a), self._waiting(b)
        s, f = self.state(), self.state()
        self.edge(s, a.start)
        self.edge(s, b.start)
        self.edge(a.final, f)
        self.edge(b.final, f)
        return Frag(s, f, a.cons + b.cons, a.entries + b.entries)

    def _waiting(self, frag: Frag) -> Frag:
        """``frag`` entered through a gap state, unless it starts with a nested selector."""
        if frag.entries:
            return frag
        g = self.gap_state()
        self.edge(g, frag.start)
        return Frag(g, frag.final, frag.cons, (g,))

    def _Seq(self, p: ast.Seq) -> Frag:  # noqa: N802
        a, b = self.build(p.left), self.build(p.right)
        if p.contiguous or b.entries:
            # A nested selector waits with its own transitions (no gap state); after ':' it
            # may not wait, as in kleene.automata.compile, nor the other branches there.
            if p.contiguous and b.entries:
                b = self._unwaited(b)
            self.edge(a.final, b.start)
            return Frag(a.start, b.final, a.cons + b.cons, a.entries)
        g = self.gap_state()
        self.edge(a.final, g)
        self.edge(g, b.start)
        return Frag(a.start, b.final, a.cons + b.cons, a.entries)

    def _unwaited(self, frag: Frag) -> Frag:
        """``frag`` whose waiting states at its start (``entries``) do not wait: their skipping
        transitions go (a selector entered after ':')."""
        waiting = set(frag.entries)
        drop = {
            id(t)
            for t in self.cons
            if t.source in waiting and not t.variables and (t.reads or t.target == t.source)
        }
        self.cons = [t for t in self.cons if id(t) not in drop]
        return Frag(frag.start, frag.final, tuple(t for t in frag.cons if id(t) not in drop))

    def _Selector(self, p: ast.Selector) -> Frag:  # noqa: N802
        """``NEXT/LAST/MAX(ρ)``: the tECS product in this automaton's states (registers/selectors.py)."""
        from kleene.registers.selectors import selector_in_registers

        made = selector_in_registers(
            p, self.event_types, self.streams, self.stream_base, self.bit, self.limits
        )
        self.selectors.append(p.strategy)
        ids: dict[int, int] = {}

        def state(q: int) -> int:
            if q not in ids:
                ids[q] = self.state()
            return ids[q]

        out = []
        for source, mask, neg, names, target in made.transitions:
            t = Cons(state(source), mask, set(names), state(target), neg, reads=not names)
            self.cons.append(t)
            out.append(t)
        f = self.state()
        for q in made.finals:
            self.edge(state(q), f)
        return Frag(state(made.entry), f, tuple(out), (state(made.entry),))

    def _And(self, p: ast.And) -> Frag:  # noqa: N802
        return self._product(p.left, p.right, interleave=False)

    def _All(self, p: ast.All) -> Frag:  # noqa: N802
        return self._product(p.left, p.right, interleave=True)

    def _side(self, p: ast.Pattern) -> Frag:
        """Build one side of an AND/ALL with registers of its own (a scope)."""
        outer = self.scope
        self.sides += 1
        self.scope = f"{outer}.{self.sides}" if outer else f"@{self.sides}"
        try:
            return self.build(p)
        finally:
            self.scope = outer

    def _product(self, left: ast.Pattern, right: ast.Pattern, *, interleave: bool) -> Frag:
        """``φ1 AND φ2`` (``interleave`` False) or ``φ1 ALL φ2``: a product of the two fragments.

        As in :mod:`kleene.automata.compile`, on the ε-NFAs of the two sides
        (their ε-edges, with their register clears, move one side at a time).
        A labelled transition of the product fires labelled transitions of
        both sides together (the event satisfies both: masks and guards
        conjoined, variables and register writes united), or, for ALL, of one
        side while the other *stays*: before its match (at its start state,
        which no edge enters), after it (at its final state, which no edge
        leaves) or at a gap (its TRUE self-loop).  An event no side takes is
        skipped when both sides can stay; for AND only at gaps of both (the
        two matches have the same events), for ALL also before or after one
        side's match, but not before both (the match starts with an event of
        one side: skipping before it is the enclosing pattern's business) nor
        after both (the product is final).  A condition inside a side reads
        that side's registers; the checker allows a condition above the
        product only on variables of one side.
        """
        a, b = self._side(left), self._side(right)
        waits = not interleave and bool(a.entries or b.entries)
        if waits:  # a side starts with a nested selector: both wait, together (as in compile.py)
            a, b = self._waiting(a), self._waiting(b)
        eps_out: dict[int, list[tuple[frozenset[int], int]]] = {}
        for x, clears, y in self.eps:
            eps_out.setdefault(x, []).append((clears, y))
        labelled: dict[int, list[Cons]] = {}
        reading: dict[int, list[Cons]] = {}  # a nested selector's skips (registers/selectors.py)
        loops: set[int] = set()
        for t in self.cons:
            if t.variables:
                labelled.setdefault(t.source, []).append(t)
            elif t.reads:
                assert not interleave, "a nested selector inside ALL"
                reading.setdefault(t.source, []).append(t)
            else:
                assert t.source == t.target, "unlabelled transitions are TRUE self-loops"
                loops.add(t.source)
        pair: StateNumbering[tuple[int, int]] = StateNumbering(self.state)

        out: list[Cons] = []

        def add(source: int, parts: tuple[Cons, ...], target: int, reads: bool = False) -> None:
            mask = neg = 0
            variables: set[str] = set()
            writes: set[int] = set()
            checks: set[tuple[int, int]] = set()
            for t in parts:
                mask, neg = mask | t.mask, neg | t.neg
                variables |= t.variables
                writes |= t.writes
                checks |= t.checks
            if mask & neg:
                return  # the event would need a bit and its absence
            t = Cons(
                source, mask, variables, target, neg, writes=writes, parts=parts, checks=checks,
                reads=reads,
            )
            self.cons.append(t)
            out.append(t)

        start = pair((a.start, b.start))
        for (x, y), source in pair.pending():
            for clears, x2 in eps_out.get(x, ()):
                self.edge(source, pair((x2, y)), clears)
            for clears, y2 in eps_out.get(y, ()):
                self.edge(source, pair((x, y2)), clears)
            for ta in labelled.get(x, ()):
                for tb in labelled.get(y, ()):
                    add(source, (ta, tb), pair((ta.target, tb.target)))
            if interleave:
                begun = (x, y) != (a.start, b.start)
                stay_a = x in loops or x == a.start or x == a.final
                stay_b = y in loops or y == b.start or y == b.final
                if stay_b:
                    for ta in labelled.get(x, ()):
                        add(source, (ta,), pair((ta.target, y)))
                if stay_a:
                    for tb in labelled.get(y, ()):
                        add(source, (tb,), pair((x, tb.target)))
                skip_a = x in loops or (x == a.start and begun) or (x == a.final and y != b.final)
                skip_b = y in loops or (y == b.start and begun) or (y == b.final and x != a.final)
            else:
                skip_a, skip_b = x in loops, y in loops
                if x in reading or y in reading:  # both skip the event, one reading its bits
                    for ta in (*reading.get(x, ()), *((None,) if skip_a else ())):
                        for tb in (*reading.get(y, ()), *((None,) if skip_b else ())):
                            if ta is not None or tb is not None:
                                parts = tuple(t for t in (ta, tb) if t is not None)
                                target = pair((ta.target if ta else x, tb.target if tb else y))
                                add(source, parts, target, reads=True)
            if skip_a and skip_b:
                loop = Cons(source, 0, set(), source)
                self.cons.append(loop)
        final = pair.ids.get((a.final, b.final))
        entries = (start,) if waits else ()
        return Frag(start, self.state() if final is None else final, tuple(out), entries)

    def _Unless(self, p: ast.Unless) -> Frag:  # noqa: N802
        """``φ1 UNLESS φ2``: a match of φ1 with no match of φ2 inside its interval.

        φ2 is evaluated on its own (its matches do not depend on φ1's), so it
        becomes a *monitor*: an SRT of its own, run next to the query's runs
        on every event of the partition, which records the latest start of
        its matches ended so far.  φ1's fragment is entered through an ε-edge
        that sets a position register to the first event's position (encoded
        as ``~r`` among the edge's clears), and left only through copies of
        its *ending* transitions (those after which φ1's final state is
        ε-reachable), which carry the check "the monitor's latest start is
        before the register": a φ2 match inside ``[start, now]`` would have
        started at or after the start and ended by now.  The check runs on the
        event that ends φ1's match, after the monitor has seen that event (a
        φ2 match may end with it: the bounds are inclusive).
        """
        a = self.build(p.left)
        self.monitors.append(self.build(p.right))
        k = len(self.monitors) - 1
        # Left variables the right side reads (the checker made sure each is the left match's
        # first event): the monitor's runs start with them (issue 18, kleene.registers.runtime).
        names = [v + self.scope for v in sorted(outer_names(p.right))]
        self.seeded[k] = tuple(self.var_register[n] for n in names if n in self.var_register)
        r = self.register(f"start of UNLESS #{k + 1}")
        s, f = self.state(), self.state()
        self.edge(s, a.start, frozenset({~r}))
        eps_out: dict[int, list[int]] = {}
        for x, _, y in self.eps:
            eps_out.setdefault(x, []).append(y)
        out = list(a.cons)
        for c in a.cons:
            if not _reaches(c.target, a.final, eps_out):
                continue
            x = self.state()
            copy = Cons(
                c.source, c.mask, set(c.variables), x, c.neg, writes=set(c.writes),
                parts=c.parts, checks=c.checks | {(r, k)},
            )
            self.cons.append(copy)
            out.append(copy)
            for entry in list(self.pending):  # c's guards so far (inside φ1)
                if entry[0] is c:
                    self.pending.append((copy, entry[1], entry[2], entry[3], entry[4]))
            self.edge(x, f)
        return Frag(s, f, tuple(out))

    def _Iter(self, p: ast.Iter) -> Frag:  # noqa: N802
        body = self.build(p.pattern)
        s, f = self.state(), self.state()
        self.edge(s, body.start)
        self.edge(body.final, f)
        if body.entries:  # a nested selector starts each iteration: it waits by itself
            if p.contiguous:
                raise ValueError("a nested selector starting an iteration ':+'")
            self.edge(body.final, body.start)
            return Frag(s, f, body.cons, body.entries)
        if p.contiguous:
            self.edge(body.final, body.start)
        else:
            g = self.gap_state()
            self.edge(body.final, g)
            self.edge(g, body.start)
        return Frag(s, f, body.cons)

    # ------------------------------------------------------------ finishing
    def finish(self, frag: Frag) -> SRT:
        attr_index = {a: k for k, a in enumerate(self.attributes)}
        for t, pred, x, slots, vacuous in self.pending:
            guard = compile_guard(pred, x, slots, attr_index)
            if vacuous is not None:
                guard = _unless_empty(guard, vacuous)
            t.guards.append(guard)
            t.conditions.append(Condition(pred, x, vacuous is not None, tuple(slots.items())))
        for t in self.cons:  # creation order: a product's parts come before it
            if t.parts:
                t.guards[:0] = [g for part in t.parts for g in part.guards]
                t.conditions[:0] = [c for part in t.parts for c in part.conditions]
        srt = self.eliminate(frag)
        if frag.entries:  # a selector at the start of the pattern (kleene.registers.selectors)
            assert not srt.stationary[srt.initial], "an anchored run's start waits by itself"
            srt = dataclasses.replace(srt, anchored=True)
        if not self.monitors:
            return srt
        monitors = tuple(self.eliminate(m) for m in self.monitors)
        seeded = tuple(self.seeded.get(k, ()) for k in range(len(monitors)))
        return dataclasses.replace(srt, monitors=monitors, seeded=seeded)

    def eliminate(self, frag: Frag) -> SRT:
        """The ε-free SRT of ``frag`` (:func:`kleene.registers.enfa.eliminate`)."""
        states = eliminate(frag, self.eps, self.cons, self.projection, self.strategy_first)
        return SRT(
            initial=0,
            num_registers=len(self.registers),
            event_types=tuple(self.event_types),
            preds=tuple(self.preds),
            attributes=tuple(self.attributes),
            register_names=tuple(self.registers),
            streams=tuple(self.streams),
            variable_registers=dict(self.var_register),
            strategy_first=self.strategy_first,
            selectors=tuple(self.selectors),
            **states._asdict(),
        )


def _reaches(start: int, goal: int, eps_out: dict[int, list[int]]) -> bool:
    """Is ``goal`` ε-reachable from ``start``?"""
    seen, todo = {start}, [start]
    while todo:
        q = todo.pop()
        if q == goal:
            return True
        for n in eps_out.get(q, ()):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return False


def _unless_empty(guard: Guard, slot: int) -> Guard:
    """A conjunct over ``prev(x)``: holds when there is no previous event of ``x``."""

    def vacuous(ev: tuple[Any, ...], regs: Sequence[tuple[Any, ...] | None]) -> bool:
        return regs[slot] is None or guard(ev, regs)

    return vacuous


def _attrs_of(node: ast.Pred | ast.Expr) -> list[str]:
    if isinstance(node, ast.Attr):
        return [node.name]
    out: list[str] = []
    for name in ("left", "right", "operand", "low", "high"):
        child = getattr(node, name, None)
        if child is not None:
            out += _attrs_of(child)
    return out


def _collect_types(p: ast.Pattern, out: list[str]) -> None:
    if isinstance(p, ast.EventType):
        if p.name not in out and p.name != WILDCARD:
            out.append(p.name)
        return
    if isinstance(p, ast.As | ast.Filter | ast.Iter | ast.Star | ast.Repeat | ast.NotEvent | ast.Selector):
        _collect_types(p.pattern, out)
    else:
        _collect_types(p.left, out)
        _collect_types(p.right, out)


def _collect_streams(p: ast.Pattern, out: list[str]) -> None:
    if isinstance(p, ast.EventType):
        if p.stream is not None and p.stream not in out:
            out.append(p.stream)
        return
    if isinstance(p, ast.As | ast.Filter | ast.Iter | ast.Star | ast.Repeat | ast.NotEvent | ast.Selector):
        _collect_streams(p.pattern, out)
    else:
        _collect_streams(p.left, out)
        _collect_streams(p.right, out)


def compile_srt(
    pattern: ast.Pattern,
    projection: frozenset[str] | None,
    *,
    with_streams: bool = False,
    strategy_first: bool = False,
    limits: Limits | None = None,
) -> SRT:
    """The ε-free SRT of a CEQL pattern (see the module docstring).

    ``limits.max_states`` bounds the states built (a LimitError past it).

    ``with_streams``: the input says which stream each event comes from, so
    ``S>E`` also tests a stream bit (numbered after the predicates, whose
    number a first pass finds).  ``strategy_first`` (NEXT, LAST or MAX with a
    projection): the strategy compares whole matches, so every event of a
    match is marked, and the transitions whose events the projection drops
    are ``hidden`` (the runtime projects the chosen matches).
    """
    expanded = without_empty(pattern)
    streams: list[str] = []
    base = 0
    if with_streams:
        _collect_streams(pattern, streams)
    if streams:
        counting = _Builder(projection, limits=limits)
        _collect_types(pattern, counting.event_types)
        counting.build(expanded)
        base = len(counting.event_types) + len(counting.preds)
    builder = _Builder(projection, streams, base, strategy_first, limits)
    _collect_types(pattern, builder.event_types)  # type bits first, as in Atoms
    return builder.finish(builder.build(expanded))


__all__ = ["atoms", "compile_srt"]
