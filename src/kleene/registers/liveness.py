"""Registers no path reads any more: dropped from merged runs so that more of them merge.

A run's future depends on its state and on the registers some later guard may still read (the
*live* ones).  In the SRT paper's ``seq6`` (``a; b; c[price > a.price]; d; e; f[price > d.price]``)
``a``'s register is read by ``c`` and never again, yet a run keeps it: after ``d`` the merged runs
(:mod:`kleene.registers.merged`) are one per pair ``(a.price, d.price)`` instead of one per
``d.price``.  Classic backward liveness over the SRT gives, per transition, the registers that
may hold a value after it and are not live at its target; the merged engine sets them to
``None`` after the transition's guards and writes, where no guard can tell the difference.

A transition reads the registers its conditions name (:func:`registers_read`) and those of its
UNLESS checks, after its clears and before its writes::

    live(q) = ∪ over t leaving q (labelled and gaps) of
              ((live(t.target) − t.writes − t.sets) ∪ reads(t)) − t.clears

Staying at a stationary state changes no register and adds nothing.  A guard with no
condition to read its slots from (none today) makes every register live: nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kleene.language import ast
from kleene.registers.srt import SRT, Condition, RTransition


def registers_read(c: Condition) -> set[int]:
    """The registers a conjunct reads (its ``slots`` are its whole FILTER's)."""
    slots = dict(c.slots)
    found: set[int] = set()

    def walk(node: Any) -> None:
        if isinstance(node, ast.VarAttr):
            if node.var != c.target or node.prev:
                found.add(slots[(node.var, node.prev)])
            return
        for name in ("left", "right", "operand", "low", "high"):
            child = getattr(node, name, None)
            if child is not None:
                walk(child)

    walk(c.pred)
    return found


def _after(held: set[int], t: RTransition) -> set[int]:
    """The registers that may hold a value after ``t``, given those before it."""
    return (held - set(t.clears)) | set(t.writes) | set(t.sets)


def may_hold(
    transitions: Sequence[RTransition], num_states: int, live: Sequence[set[int]] | None = None
) -> list[set[int]]:
    """Per state: the registers some path of ``transitions`` leaves holding a value there (a
    forward fixpoint from nothing held); with ``live``, only the live ones (after the drops)."""
    held: list[set[int]] = [set() for _ in range(num_states)]
    changed = True
    while changed:  # sets only grow, bounded by the registers
        changed = False
        for t in transitions:
            after = _after(held[t.source], t)
            if live is not None:
                after &= live[t.target]
            if not after <= held[t.target]:
                held[t.target] |= after
                changed = True
    return held


def _reads(t: RTransition) -> set[int] | None:
    if len(t.guards) != len(t.conditions):
        return None
    regs = {r for c in t.conditions for r in registers_read(c)}
    regs.update(r for r, _ in t.checks)
    return regs


def dead_after(srt: SRT) -> dict[int, tuple[int, ...]]:
    """Per transition (``id``) that leaves a dead register behind: the registers to drop."""
    transitions = [t for ts in srt.labelled for t in ts] + [g for gs in srt.gaps for g in gs]
    reads: dict[int, set[int]] = {}
    for t in transitions:
        found = _reads(t)
        if found is None:
            return {}
        reads[id(t)] = found
    n = srt.num_states
    live: list[set[int]] = [set() for _ in range(n)]
    changed = True
    while changed:  # a fixpoint: sets only grow, bounded by the registers
        changed = False
        for t in transitions:
            before = ((live[t.target] - set(t.writes) - set(t.sets)) | reads[id(t)]) - set(t.clears)
            if not before <= live[t.source]:
                live[t.source] |= before
                changed = True
    held = may_hold(transitions, n, live)
    drops: dict[int, tuple[int, ...]] = {}
    for t in transitions:
        if srt.dead[t.target]:
            continue
        drop = tuple(sorted(_after(held[t.source], t) - live[t.target]))
        if drop:
            drops[id(t)] = drop
    return drops
