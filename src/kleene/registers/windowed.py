"""Windowed unrolling and determinization of symbolic register transducers.

The SRT papers show that under a window a symbolic register automaton (SRA:
an SRT whose outputs are ignored) can be *unrolled* into an automaton without
cycles in which every register is written once (SRT TR Alg 3-6, RMA Alg 6-8),
and that such an automaton can be *determinized* by a subset construction over
syntactic minterms of the transitions' conditions (SRT TR Alg 7, Fig 14; RMA
Alg 5, Corollary 16).  This module builds both, typed and immutable:

* :class:`SRA`: states, transitions ``(source, condition, writes, •?, target)``
  where a :class:`Condition` is a named formula and its *register selection*
  (which register feeds each argument register of the formula, RMA Def 4);
  :func:`from_srt` reads one off an ε-free SRT of
  :mod:`kleene.registers.automaton`, with the gap self-loops explicit.
* :class:`Unrolling`: the tree of walks of at most ``depth`` events from the
  initial state, built lazily node by node (Alg 6, ``UnrollK``).  A node is
  ``(state, depth, registers, marks)``: the SRT state it copies (CopyOfQ),
  the number of events consumed since the start, for each register of the
  SRT the depth at which the copy it holds was written (CopyOfR and
  FindLastAppearance: the copy of ``r`` written at depth ``j`` is a register
  of its own, written once, by the ``j``-th event of the walk; None when
  the walk never wrote it, or cleared it, so atoms over it are false) and
  the depths of the marked events.  Nodes with equal contents are one node
  (the tree up to merging of identical subtrees, as the runtime merges equal
  runs); walks that cannot accept within the depth are pruned (the walk
  length bound of the papers, by the shortest distance to acceptance).
  :func:`unroll` builds all of it as an :class:`SRA`.
* :func:`determinize` (Alg 7): reachable subsets, one transition per minterm
  of the conditions leaving a subset, with the union of the targets and of
  the write sets; output-agnostic (Def 37): the output is • when some
  component transition marks.  :func:`run_sra` and :func:`run_dsra` give the
  runs of the non-deterministic and the deterministic automaton as traces of
  configurations ``[i, q, γ]`` (RMA Def 5).

A finding, kept as a test: the papers add a TRUE self-loop on the root of the
unrolled automaton "so that a match may start anywhere" (RMA Alg 6) and then
determinize.  With one register file this is *not* exact for windows of three
events and more: a run that entered the tree earlier still reads a register
copy that a run entering later has just overwritten (``φ1 WINDOW 3`` on
``T(1) T(2) H(1)`` is not recognized).  The streaming evaluator
(:mod:`kleene.registers.window_runtime`) avoids it by reading the copy
written at depth ``j`` of a node at depth ``d`` from the event ``d - j``
events back in the partition's history: the deterministic automaton's
registers are the last ``depth`` events, and a node determines where each of
its registers lives.

Size: the SRT technical report's unrolling, register automaton runs and
determinization (Algorithms 5-7) are one construction, tested step by step against each other.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kleene.registers.automaton import SRT, RTransition

Event = tuple[Any, ...]
Registers = Sequence[Event | None]
Symbol = tuple[int, Event]
"""An input event as the automata read it: (unary predicate bits, attribute values)."""
FormulaTest = Callable[[int, Event, Registers], bool]
INFINITE = 1 << 30


@dataclass(frozen=True, slots=True)
class Formula:
    """A condition ``φ(~, r1..rn)`` over the event and its argument registers; equal by name."""

    name: str
    test: FormulaTest = field(compare=False, repr=False)


def _true(bits: int, event: Event, registers: Registers) -> bool:
    return True


TRUE = Formula("⊤", _true)


@dataclass(frozen=True, slots=True)
class Condition:
    """A formula with its register selection: argument ``i`` reads register ``selection[i]``.

    Two transitions share a condition in a minterm when both formula and
    selection are equal (each guard "keeps its own register selection", TR
    Alg 7).  ``None`` in a selection: a register that is empty on every run
    through the transition.
    """

    formula: Formula
    selection: tuple[int | None, ...] = ()

    def holds(self, symbol: Symbol, registers: Registers) -> bool:
        args = tuple(None if r is None else registers[r] for r in self.selection)
        return self.formula.test(symbol[0], symbol[1], args)

    def __str__(self) -> str:
        if not self.selection:
            return self.formula.name
        regs = ",".join("♯" if r is None else f"r{r}" for r in self.selection)
        return f"{self.formula.name}({regs})"


@dataclass(frozen=True, slots=True)
class SRATransition:
    """``source --condition / writes, •?--> target``; ``accepting``: entering ``target`` reports."""

    source: int
    condition: Condition
    writes: frozenset[int]
    marked: bool
    accepting: bool
    target: int
    clears: frozenset[int] = frozenset()
    """Registers emptied before the condition is evaluated (CEQL's ``prev``; none after unrolling)."""


@dataclass(frozen=True)
class SRA:
    """A symbolic register automaton with outputs (an SRT, RMA Def 3-4)."""

    num_states: int
    initial: int
    finals: frozenset[int]
    transitions: tuple[SRATransition, ...]
    num_registers: int
    copy_of_state: tuple[int, ...]
    """CopyOfQ: the state of the original automaton each state copies."""
    copy_of_register: tuple[int, ...]
    """CopyOfR: the register of the original automaton each register copies."""
    depth: tuple[int, ...] | None = None
    """Per state of an unrolled automaton: the length of its walk from the root."""

    @cached_property
    def outgoing(self) -> Mapping[int, tuple[SRATransition, ...]]:
        out: dict[int, list[SRATransition]] = {}
        for t in self.transitions:
            out.setdefault(t.source, []).append(t)
        return {q: tuple(ts) for q, ts in out.items()}

    def out(self, q: int) -> tuple[SRATransition, ...]:
        return self.outgoing.get(q, ())

    @property
    def acyclic(self) -> bool:
        """No cycle (the unrolled automata; a start self-loop is a cycle)."""
        indegree = [0] * self.num_states
        for t in self.transitions:
            indegree[t.target] += 1
        todo = [q for q in range(self.num_states) if indegree[q] == 0]
        seen = 0
        while todo:
            q = todo.pop()
            seen += 1
            for t in self.out(q):
                indegree[t.target] -= 1
                if indegree[t.target] == 0:
                    todo.append(t.target)
        return seen == self.num_states

    def writes_once(self) -> bool:
        """Every walk writes each register at most once."""
        if not self.acyclic:
            return False
        written: dict[int, list[frozenset[int]]] = {self.initial: [frozenset()]}
        order = self._topological()
        for q in order:
            for before in written.get(q, []):
                for t in self.out(q):
                    if before & t.writes:
                        return False
                    after = before | t.writes
                    lst = written.setdefault(t.target, [])
                    if after not in lst:
                        lst.append(after)
        return True

    def _topological(self) -> list[int]:
        indegree = [0] * self.num_states
        for t in self.transitions:
            indegree[t.target] += 1
        todo = [q for q in range(self.num_states) if indegree[q] == 0]
        order = []
        while todo:
            q = todo.pop()
            order.append(q)
            for t in self.out(q):
                indegree[t.target] -= 1
                if indegree[t.target] == 0:
                    todo.append(t.target)
        return order


# ------------------------------------------------------------- from an SRT


def transition_formula(name: str, t: RTransition) -> Formula:
    """The condition of an SRT transition: its unary bits, then its n-ary guards."""
    mask, neg, guards = t.mask, t.neg, t.guards

    def test(bits: int, event: Event, registers: Registers) -> bool:
        return bits & mask == mask and not bits & neg and all(g(event, registers) for g in guards)

    return Formula(name, test)


def _srt_transitions(
    srt: SRT, q: int, strict: bool, streaming: bool = False
) -> list[tuple[str, RTransition | None]]:
    """The transitions leaving ``q`` as the runtime takes them; None: the TRUE self-loop.

    ``streaming``: the initial state has the TRUE self-loop of ``⊤*·e``.
    """
    out: list[tuple[str, RTransition | None]] = []
    if streaming and q == srt.initial:
        out.append(("⊤", None))
    if not strict and q != srt.initial:
        if srt.stationary[q]:
            if not srt.dead[q]:
                out.append(("⊤", None))
        else:
            out.extend((f"g{q}.{k}", g) for k, g in enumerate(srt.gaps[q]))
    out.extend((f"δ{q}.{k}", t) for k, t in enumerate(srt.labelled[q]))
    return out


def from_srt(srt: SRT, *, streaming: bool = False, strict: bool = False) -> SRA:
    """The SRA of an ε-free SRT, with the TRUE self-loops explicit.

    ``streaming``: with the TRUE self-loop on the initial state (SRT Def 32,
    ``⊤*·e``), so that a run may start at any event.  Every argument register
    of a formula is the SRT register of the same number.
    """
    ident = tuple(range(srt.num_registers))
    transitions: list[SRATransition] = []
    for q in range(srt.num_states):
        if streaming and q == srt.initial:
            transitions.append(SRATransition(q, Condition(TRUE), frozenset(), False, False, q))
        for name, t in _srt_transitions(srt, q, strict):
            if t is None:
                transitions.append(SRATransition(q, Condition(TRUE), frozenset(), False, False, q))
                continue
            transitions.append(
                SRATransition(
                    q, Condition(transition_formula(name, t), ident), frozenset(t.writes),
                    t.marked, t.target in srt.finals, t.target, frozenset(t.clears),
                )
            )
    # Keep the states reachable from the initial one (a gap state that a
    # stationary state stands for is not), numbered in the order reached.
    number = {srt.initial: 0}
    order = [srt.initial]
    for q in order:
        for tr in transitions:
            if tr.source == q and tr.target not in number:
                number[tr.target] = len(order)
                order.append(tr.target)
    kept = tuple(
        dataclasses.replace(tr, source=number[tr.source], target=number[tr.target])
        for tr in transitions
        if tr.source in number
    )
    return SRA(
        len(order), 0, frozenset(number[q] for q in srt.finals if q in number), kept,
        srt.num_registers, tuple(order), ident,
    )


def with_start_loop(sra: SRA) -> SRA:
    """RMA Alg 6, last step: a TRUE self-loop on the root, so that a match may start anywhere."""
    loop = SRATransition(sra.initial, Condition(TRUE), frozenset(), False, False, sra.initial)
    return SRA(
        sra.num_states, sra.initial, sra.finals, (loop, *sra.transitions), sra.num_registers,
        sra.copy_of_state, sra.copy_of_register, sra.depth,
    )


# --------------------------------------------------------------- unrolling


NodeKey = tuple[int, int, tuple[int | None, ...], tuple[int, ...]]
"""``(state, depth, write depth of each register's copy or None, marked depths)``."""


@dataclass(frozen=True, slots=True)
class Edge:
    """A transition of the unrolled tree, from a node at depth ``d`` to one at ``d + 1``."""

    name: str
    mask: int
    neg: int
    guards: tuple[Callable[[Event, Registers], bool], ...]
    selection: tuple[int | None, ...]
    """Per SRT register: the depth at which the copy it reads was written (None: empty)."""
    writes: tuple[int, ...]
    marked: bool
    accepting: bool
    marks: tuple[int, ...]
    """The marked depths of the walk up to and including this edge (the complex event);
    ``~d`` for a ``hidden`` one (see :class:`kleene.registers.automaton.RTransition`)."""
    child: int
    live: bool
    """The child can still accept within the depth (else only the report matters)."""


def distances(srt: SRT, strict: bool = False) -> tuple[int, ...]:
    """Per state: the fewest events that lead from it to a report (INFINITE: never)."""
    dist = [INFINITE] * srt.num_states
    changed = True
    while changed:
        changed = False
        for q in range(srt.num_states):
            best = dist[q]
            for _, t in _srt_transitions(srt, q, strict):
                if t is None:
                    continue  # a self-loop never shortens the way
                d = 1 if t.target in srt.finals else 1 + dist[t.target]
                best = min(best, d)
            if best < dist[q]:
                dist[q] = best
                changed = True
    return tuple(dist)


class Unrolling:
    """The unrolled tree of an SRT's walks of at most ``depth`` events (TR Alg 6), built lazily.

    Node 0 is the root (the initial state, nothing consumed).  :meth:`out`
    creates a node's edges, and their children, the first time it is asked.
    """

    def __init__(self, srt: SRT, depth: int, *, strict: bool = False, streaming: bool = False) -> None:
        self.srt = srt
        self.depth = depth
        self.strict = strict
        self.streaming = streaming
        """Unroll ``⊤*·e``: walks may first skip events at the initial state (RMA Alg 6-8)."""
        self.dist = distances(srt, strict)
        self.keys: list[NodeKey] = []
        self.index: dict[NodeKey, int] = {}
        self.edges: list[tuple[Edge, ...] | None] = []
        self.node((srt.initial, 0, (None,) * srt.num_registers, ()))

    def node(self, key: NodeKey) -> int:
        n = self.index.get(key)
        if n is None:
            n = len(self.keys)
            self.index[key] = n
            self.keys.append(key)
            self.edges.append(None)
        return n

    def __len__(self) -> int:
        return len(self.keys)

    def out(self, n: int) -> tuple[Edge, ...]:
        edges = self.edges[n]
        if edges is None:
            edges = self._expand(n)
            self.edges[n] = edges
        return edges

    def _expand(self, n: int) -> tuple[Edge, ...]:
        srt = self.srt
        q, d, regs, marks = self.keys[n]
        if d >= self.depth:
            return ()
        out: list[Edge] = []
        for name, t in _srt_transitions(srt, q, self.strict, self.streaming):
            guards: tuple[Callable[[Event, Registers], bool], ...]
            writes: tuple[int, ...]
            clears: tuple[int, ...]
            if t is None:
                target, mask, neg, guards, writes, clears = q, 0, 0, (), (), ()
                marked = accepting = hidden = False
            else:
                target, mask, neg, guards = t.target, t.mask, t.neg, t.guards
                writes, clears, marked, hidden = t.writes, t.clears, t.marked, t.hidden
                accepting = t.target in srt.finals
            selection = list(regs)
            for r in clears:
                selection[r] = None
            after = list(selection)
            for r in writes:
                after[r] = d + 1
            new_marks = (*marks, ~(d + 1) if hidden else d + 1) if marked else marks
            live = not srt.dead[target] and d + 1 + self.dist[target] <= self.depth
            if not (live or accepting):
                continue
            child = self.node((target, d + 1, tuple(after), new_marks))
            out.append(
                Edge(name, mask, neg, tuple(guards), tuple(selection), tuple(writes), marked,
                     accepting, new_marks, child, live)
            )
        return tuple(out)

    def expand_all(self) -> None:
        """Build every node (Alg 4-6 as written: the whole tree up front)."""
        k = 0
        while k < len(self.keys):
            self.out(k)
            k += 1


def unroll(srt: SRT, depth: int, *, strict: bool = False, streaming: bool = False) -> SRA:
    """The unrolled SRA of ``srt`` for walks of at most ``depth`` events (TR Alg 3-6).

    Its registers are the copies ``(r, j)``: SRT register ``r`` as written by
    the ``j``-th event of a walk; each is written by one depth of the tree
    only, so every walk writes it at most once.
    """
    tree = Unrolling(srt, depth, strict=strict, streaming=streaming)
    tree.expand_all()
    copies: dict[tuple[int, int], int] = {}

    def copy(r: int, j: int) -> int:
        return copies.setdefault((r, j), len(copies))

    formulas: dict[str, Formula] = {"⊤": TRUE}
    for q in range(srt.num_states):
        for name, t in _srt_transitions(srt, q, strict):
            if t is not None:
                formulas[name] = transition_formula(name, t)
    transitions = []
    for n in range(len(tree)):
        d = tree.keys[n][1]
        for e in tree.out(n):
            selection = tuple(None if j is None else copy(r, j) for r, j in enumerate(e.selection))
            condition = Condition(formulas[e.name], selection if e.name != "⊤" else ())
            writes = frozenset(copy(r, d + 1) for r in e.writes)
            transitions.append(SRATransition(n, condition, writes, e.marked, e.accepting, e.child))
    finals = frozenset(n for n, key in enumerate(tree.keys) if key[0] in srt.finals)
    by_number = sorted(copies, key=copies.__getitem__)
    return SRA(
        len(tree), 0, finals, tuple(transitions), len(copies),
        tuple(key[0] for key in tree.keys), tuple(r for r, _ in by_number),
        tuple(key[1] for key in tree.keys),
    )


# ---------------------------------------------------------- determinization


Minterm = tuple[tuple[Condition, bool], ...]


@dataclass(frozen=True, slots=True)
class DTransition:
    """A transition of the deterministic automaton: one minterm of its state's conditions."""

    source: int
    minterm: Minterm
    writes: frozenset[int]
    marked: bool
    accepting: bool
    target: int

    def holds(self, truth: Mapping[Condition, bool]) -> bool:
        return all(truth[c] == positive for c, positive in self.minterm)


@dataclass(frozen=True)
class DSRA:
    """An output-agnostic deterministic SRA: states are subsets of the SRA's states (TR Alg 7)."""

    subsets: tuple[frozenset[int], ...]
    finals: frozenset[int]
    transitions: tuple[DTransition, ...]
    num_registers: int
    initial: int = 0

    @cached_property
    def outgoing(self) -> Mapping[int, tuple[DTransition, ...]]:
        out: dict[int, list[DTransition]] = {}
        for t in self.transitions:
            out.setdefault(t.source, []).append(t)
        return {q: tuple(ts) for q, ts in out.items()}

    def out(self, q: int) -> tuple[DTransition, ...]:
        return self.outgoing.get(q, ())

    def state(self, subset: Iterable[int]) -> int:
        return self.subsets.index(frozenset(subset))

    def conditions(self, q: int) -> tuple[Condition, ...]:
        ts = self.out(q)
        return tuple(c for c, _ in ts[0].minterm) if ts else ()

    def is_deterministic(self) -> bool:
        """TR Def 36: two transitions of a state with different targets never hold together.

        Syntactically: their minterms give some condition opposite signs.
        """
        for ts in self.outgoing.values():
            for a, b in itertools.combinations(ts, 2):
                if a.target == b.target:
                    continue
                signs = dict(a.minterm)
                if not any(c in signs and signs[c] != s for c, s in b.minterm):
                    return False
        return True


MAX_CONDITIONS = 12
"""Eager minterms: 2^n transitions per subset; larger states are for the lazy runtime."""


def determinize(sra: SRA, *, max_conditions: int = MAX_CONDITIONS) -> DSRA:
    """The output-agnostic deterministic SRA of ``sra`` (TR Alg 7, RMA Alg 5), reachable subsets.

    For each subset, the distinct conditions of its outgoing transitions
    (formula and register selection) give ``2^n`` minterms; a minterm's
    target is the set of targets of the transitions whose condition it has
    positive (syntactic entailment), its writes the union of theirs, its
    output • when one of them marks, and it accepts when one of them does.
    The registers are those of ``sra``.  Exact when every walk writes a
    register at most once and runs are read from the root (the unrolled
    automata, :func:`unroll`); the empty subset is the dead state.
    """
    if any(t.clears for t in sra.transitions):
        raise ValueError("determinize an unrolled automaton (clears are resolved by unrolling)")
    subsets: list[frozenset[int]] = [frozenset({sra.initial})]
    number = {subsets[0]: 0}
    transitions: list[DTransition] = []
    k = 0
    while k < len(subsets):
        current = subsets[k]
        out = [t for q in sorted(current) for t in sra.out(q)]
        conditions = list(dict.fromkeys(t.condition for t in out))
        if len(conditions) > max_conditions:
            raise ValueError(
                f"{len(conditions)} conditions leave one subset: 2^{len(conditions)} minterms"
            )
        for signs in itertools.product((True, False), repeat=len(conditions)):
            truth = dict(zip(conditions, signs, strict=True))
            fired = [t for t in out if truth[t.condition]]
            target = frozenset(t.target for t in fired)
            if target not in number:
                number[target] = len(subsets)
                subsets.append(target)
            transitions.append(
                DTransition(
                    k, tuple(truth.items()),
                    frozenset().union(*(t.writes for t in fired)),
                    any(t.marked for t in fired), any(t.accepting for t in fired),
                    number[target],
                )
            )
        k += 1
    finals = frozenset(i for i, s in enumerate(subsets) if s & sra.finals)
    return DSRA(tuple(subsets), finals, tuple(transitions), sra.num_registers)


# ------------------------------------------------------------------- traces


Configuration = tuple[int, int, tuple[Event | None, ...]]
"""RMA Def 5: ``[i, q, γ]``, i the index of the next event to read."""


@dataclass(frozen=True, slots=True)
class Trace:
    """A run: its configurations, the output of each step, and whether its last step accepts."""

    configurations: tuple[Configuration, ...]
    outputs: tuple[bool, ...]
    accepting: bool

    @property
    def match(self) -> frozenset[int]:
        """RMA Def 7: the indices of the steps that output •."""
        return frozenset(i for i, o in enumerate(self.outputs) if o)

    @property
    def states(self) -> tuple[int, ...]:
        return tuple(c[1] for c in self.configurations)


def _fire(
    registers: tuple[Event | None, ...], clears: Iterable[int], writes: Iterable[int], event: Event
) -> tuple[tuple[Event | None, ...], tuple[Event | None, ...]]:
    """(registers the condition reads, registers after the writes)."""
    read = list(registers)
    for r in clears:
        read[r] = None
    after = list(read)
    for r in writes:
        after[r] = event
    return tuple(read), tuple(after)


def run_sra(sra: SRA, symbols: Sequence[Symbol]) -> list[Trace]:
    """Every run of the non-deterministic ``sra`` over the whole of ``symbols`` (exponential)."""
    empty: tuple[Event | None, ...] = (None,) * sra.num_registers
    runs: list[tuple[list[Configuration], list[bool], bool]] = [([(0, sra.initial, empty)], [], False)]
    for i, symbol in enumerate(symbols):
        nxt = []
        for configs, outputs, _ in runs:
            _, q, regs = configs[-1]
            for t in sra.out(q):
                read, after = _fire(regs, t.clears, t.writes, symbol[1])
                if t.condition.holds(symbol, read):
                    nxt.append(
                        ([*configs, (i + 1, t.target, after)], [*outputs, t.marked], t.accepting)
                    )
        runs = nxt
    return [Trace(tuple(c), tuple(o), a) for c, o, a in runs]


def run_dsra(dsra: DSRA, symbols: Sequence[Symbol]) -> Trace:
    """The single run of ``dsra`` over ``symbols`` (the dead state ∅ absorbs)."""
    regs: tuple[Event | None, ...] = (None,) * dsra.num_registers
    q = dsra.initial
    configs: list[Configuration] = [(0, q, regs)]
    outputs: list[bool] = []
    accepting = False
    for i, symbol in enumerate(symbols):
        truth = {c: c.holds(symbol, regs) for c in dsra.conditions(q)}
        fired = [t for t in dsra.out(q) if t.holds(truth)]
        if len(fired) != 1:
            raise AssertionError(f"{len(fired)} transitions apply: not deterministic")
        t = fired[0]
        _, regs = _fire(regs, (), t.writes, symbol[1])
        q = t.target
        configs.append((i + 1, q, regs))
        outputs.append(t.marked)
        accepting = t.accepting
    return Trace(tuple(configs), tuple(outputs), accepting)


def recognizes(traces: Iterable[Trace]) -> bool:
    """Some run accepts at the last event."""
    return any(t.accepting for t in traces)


__all__ = [
    "DSRA",
    "SRA",
    "TRUE",
    "Condition",
    "DTransition",
    "Edge",
    "Formula",
    "SRATransition",
    "Symbol",
    "Trace",
    "Unrolling",
    "determinize",
    "distances",
    "from_srt",
    "recognizes",
    "run_dsra",
    "run_sra",
    "unroll",
    "with_start_loop",
]
