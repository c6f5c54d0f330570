"""Determinization of an unrolled SRA (SRT TR Alg 7, RMA Alg 5) and runs as traces.

:func:`determinize`: reachable subsets, one transition per minterm of the
conditions leaving a subset, with the union of the targets and of the write
sets; output-agnostic (Def 37): the output is • when some component
transition marks.  :func:`run_sra` and :func:`run_dsra` give the runs of the
non-deterministic and the deterministic automaton as traces of configurations
``[i, q, γ]`` (RMA Def 5), so the constructions are tested against each other.

A finding, kept as a test: the papers add a TRUE self-loop on the root of the
unrolled automaton "so that a match may start anywhere" (RMA Alg 6,
:func:`kleene.registers.sra.with_start_loop`) and then determinize.  With one
register file this is *not* exact for windows of three events and more: a run
that entered the tree earlier still reads a register copy that a run entering
later has just overwritten (``φ1 WINDOW 3`` on ``T(1) T(2) H(1)`` is not
recognized).  The streaming evaluator (:mod:`kleene.registers.window_runtime`)
avoids it by reading the copy written at depth ``j`` of a node at depth ``d``
from the event ``d - j`` events back in the partition's history: the
deterministic automaton's registers are the last ``depth`` events, and a node
determines where each of its registers lives.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from kleene.registers.sra import SRA, Condition, Event, Symbol

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
    "DTransition",
    "Trace",
    "determinize",
    "recognizes",
    "run_dsra",
    "run_sra",
]
