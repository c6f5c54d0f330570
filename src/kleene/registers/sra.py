"""Symbolic register automata (SRA) read off an SRT, for windowed evaluation.

The SRT papers show that under a window a symbolic register automaton (SRA:
an SRT whose outputs are ignored) can be *unrolled* into an automaton without
cycles in which every register is written once (SRT TR Alg 3-6, RMA Alg 6-8;
:mod:`kleene.registers.unrolling`), and that such an automaton can be
*determinized* by a subset construction over syntactic minterms of the
transitions' conditions (SRT TR Alg 7, Fig 14; RMA Alg 5, Corollary 16;
:mod:`kleene.registers.determinize`).  This module holds the automaton they
share, typed and immutable: :class:`SRA`, its states and transitions
``(source, condition, writes, •?, target)`` where a :class:`Condition` is a
named formula and its *register selection* (which register feeds each
argument register of the formula, RMA Def 4); :func:`from_srt` reads one off
an ε-free SRT of :mod:`kleene.registers.automaton`, with the gap self-loops
explicit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kleene.registers.srt import SRT, RTransition

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


def srt_transitions(
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
        for name, t in srt_transitions(srt, q, strict):
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


__all__ = [
    "SRA",
    "TRUE",
    "Condition",
    "Formula",
    "SRATransition",
    "Symbol",
    "from_srt",
    "srt_transitions",
    "transition_formula",
    "with_start_loop",
]
