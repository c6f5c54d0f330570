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
5. ``AND`` and ``ALL`` are products of their sides' ε-NFAs (:mod:`kleene.registers.products`),
   each side with registers of its own; ``φ1 UNLESS φ2`` runs φ2 as a *monitor*
   SRT next to the query's runs and checks, on the transitions that end φ1,
   that no φ2 match lies inside φ1's interval (``Builder._Unless``).
6. **ε-elimination per state** (:mod:`kleene.registers.enfa`; the spec's recommended variant of Alg 2):
   each state gets the consuming transitions of its ε-closure, with the
   registers cleared along the ε-path; a state is final when its closure
   holds the final state.  Every transition keeps its own write set.

A run accepts when a transition that binds a variable enters a final state
(SRT Def 24: the last transition is marked).  Outputs (•) are the
transitions whose variables meet the projection.

This module does steps 1 and 6 and compiles the guards (:func:`compile_srt`); steps 2-5 are
:class:`kleene.registers.construction.Builder`'s.  The SRT's types are in
:mod:`kleene.registers.srt`, the ε-NFA's records and its elimination in :mod:`kleene.registers.enfa`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from kleene.automata.unroll import unroll
from kleene.language import ast
from kleene.language.conditions import atoms
from kleene.language.variables import WILDCARD, nullable
from kleene.limits import Limits
from kleene.registers.construction import Builder
from kleene.registers.enfa import Frag, eliminate
from kleene.registers.guards import Guard, compile_guard
from kleene.registers.srt import SRT, Condition


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


def _finish(builder: Builder, frag: Frag) -> SRT:
    """The SRT of the built ``frag``: its guards compiled (the register numbering is final now),
    ε-eliminated, with its UNLESS monitors."""
    attr_index = {a: k for k, a in enumerate(builder.attributes)}
    for t, pred, x, slots, vacuous in builder.pending:
        guard = compile_guard(pred, x, slots, attr_index)
        if vacuous is not None:
            guard = _unless_empty(guard, vacuous)
        t.guards.append(guard)
        t.conditions.append(Condition(pred, x, vacuous is not None, tuple(slots.items())))
    for t in builder.cons:  # creation order: a product's parts come before it
        if t.parts:
            t.guards[:0] = [g for part in t.parts for g in part.guards]
            t.conditions[:0] = [c for part in t.parts for c in part.conditions]
    srt = _eliminate(builder, frag)
    if frag.entries:  # a selector at the start of the pattern (kleene.registers.selectors)
        assert not srt.stationary[srt.initial], "an anchored run's start waits by itself"
        srt = dataclasses.replace(srt, anchored=True)
    if not builder.monitors:
        return srt
    monitors = tuple(_eliminate(builder, m) for m in builder.monitors)
    seeded = tuple(builder.seeded.get(k, ()) for k in range(len(monitors)))
    return dataclasses.replace(srt, monitors=monitors, seeded=seeded)


def _eliminate(builder: Builder, frag: Frag) -> SRT:
    """The ε-free SRT of ``frag`` (:func:`kleene.registers.enfa.eliminate`)."""
    states = eliminate(frag, builder.eps, builder.cons, builder.projection, builder.strategy_first)
    return SRT(
        initial=0,
        num_registers=len(builder.registers),
        event_types=tuple(builder.event_types),
        preds=tuple(builder.preds),
        attributes=tuple(builder.attributes),
        register_names=tuple(builder.registers),
        streams=tuple(builder.streams),
        variable_registers=dict(builder.var_register),
        strategy_first=builder.strategy_first,
        selectors=tuple(builder.selectors),
        **states._asdict(),
    )


def _unless_empty(guard: Guard, slot: int) -> Guard:
    """A conjunct over ``prev(x)``: holds when there is no previous event of ``x``."""

    def vacuous(ev: tuple[Any, ...], regs: Sequence[tuple[Any, ...] | None]) -> bool:
        return regs[slot] is None or guard(ev, regs)

    return vacuous


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
        counting = Builder(projection, limits=limits)
        _collect_types(pattern, counting.event_types)
        counting.build(expanded)
        base = len(counting.event_types) + len(counting.preds)
    builder = Builder(projection, streams, base, strategy_first, limits)
    _collect_types(pattern, builder.event_types)  # type bits first, as in Atoms
    return _finish(builder, builder.build(expanded))


__all__ = ["atoms", "compile_srt"]
