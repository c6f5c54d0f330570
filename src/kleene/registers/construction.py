"""Thompson's construction of the register engine: a CEQL pattern → an ε-NFA with registers.

One case per operator (steps 2-5 of :mod:`kleene.registers.automaton`'s construction): ``R``
is one transition binding ``R``; ``AS x`` adds ``x`` to the variables of the fragment's
transitions; ``FILTER`` puts a condition's unary conjuncts in a predicate bit and its n-ary
ones in guards over registers (one per variable a condition reads, and one per ``prev(x)``);
``;`` links two fragments through a gap state with a TRUE self-loop, ``:`` directly; ``OR``,
``+`` and ``:+`` are Thompson's union and iteration; ``AND`` and ``ALL`` are products
(:mod:`kleene.registers.products`); ``UNLESS`` builds its right side as a monitor; nested
selectors are the tECS product in this automaton's states (:mod:`kleene.registers.selectors`).
:func:`kleene.registers.automaton.compile_srt` compiles the guards and ε-eliminates the result.
"""

from __future__ import annotations

from collections.abc import Callable

from kleene.automata.fragments import NOT_LABEL
from kleene.language import ast
from kleene.language.conditions import (
    across_pair,
    conjuncts,
    outer_names,
    plain_attrs,
    reads_others,
    reads_prev,
    swap_target,
    var_attrs,
)
from kleene.language.variables import WILDCARD
from kleene.limits import Limits
from kleene.predicates.nodes import structural_key
from kleene.registers.enfa import Cons, Frag


def _and(preds: list[ast.Pred]) -> ast.Pred:
    out = preds[0]
    for p in preds[1:]:
        out = ast.PAnd(out, p)
    return out


class Builder:
    """The ε-NFA of a pattern under construction, with its registers, predicates and guards
    (compiled once the register numbering is final: :attr:`pending`)."""

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

        As in :mod:`kleene.automata.construction`: ψ's alternatives are conjunctions
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
            # may not wait, as in kleene.automata.construction, nor the other branches there.
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
        """``φ1 AND φ2`` (``interleave`` False) or ``φ1 ALL φ2``: a product of the two sides, each
        built with registers of its own (:func:`kleene.registers.products.product`)."""
        from kleene.registers.products import product  # only AND and ALL need it

        a, b = self._side(left), self._side(right)
        waits = not interleave and bool(a.entries or b.entries)
        if waits:  # a side starts with a nested selector: both wait, together (as in kleene.automata.construction)
            a, b = self._waiting(a), self._waiting(b)
        return product(self, a, b, interleave=interleave, waits=waits)

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


def _attrs_of(node: ast.Pred | ast.Expr) -> list[str]:
    if isinstance(node, ast.Attr):
        return [node.name]
    out: list[str] = []
    for name in ("left", "right", "operand", "low", "high"):
        child = getattr(node, name, None)
        if child is not None:
            out += _attrs_of(child)
    return out
