"""Counting the complex events of merged register runs without enumerating them.

:class:`kleene.registers.merged.MergedEngine` keeps, per ``(state, registers)``, one tECS node
for the outputs of every run there (a *handle*).  Counting an event's complex events is then
counting the root-to-bottom paths of the nodes that reached a final state whose bottom (start)
is inside the window, ``start time >= tau``, provided that

1. no complex event is on two such paths (*unambiguity*, :func:`unambiguous`), and
2. the count of a node at ``tau`` is cheap to get (:func:`window_count`).

**Unambiguity.**  Two runs of the SRT give the same complex event when they read the same events
with the same marks but took different transitions (``A as x OR B as x`` on an event both ``A``
and ``B``): the listing path drops the copies (``dict.fromkeys``), a count cannot.  The check is
on the SRT's self-product with guards and registers forgotten (an over-approximation: two paths
the guards would separate still count as two), the classic test of NFA ambiguity: pairs of states
of two runs that read the same events, with a bit *diverged* set once they took steps that put
them at different handles (a different target or different register effects); two runs that
report on the same event with the same marks after diverging are copies.  Reachable in
``O(|Q|² · d²)``, once per query.  Steps with the same target and effect lead to the same handle
and output node (:func:`kleene.registers.merged._ident` merges them), so they do not diverge.

**Counts under the window, memoized.**  The count of a node at ``tau`` only changes when ``tau``
passes one of its starts.  A union node (a list) keeps ``[count, until]`` after its four fields:
``until`` is its smallest start at or after the ``tau`` of the last computation, so the count
stays valid while ``tau <= until`` (``tau`` only grows).  A bottom node counts 1 while its start
is in the window; an output node counts its child; a node whose newest start left the window
counts 0 for ever and is not entered.  A union node is recomputed (from its children, themselves
memoized) only when ``tau`` has passed a start below it since its last count: per event, the
work is the nodes reached from the event's final runs whose window count changed, never a walk of
the complex events.  ``work`` counts the nodes a call visits, for tests that count work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kleene.registers.srt import SRT, RTransition
from kleene.runtime.tecs import BOTTOM, OUTPUT, Node

NEVER = float("inf")
"""``until`` of a count that no later ``tau`` changes (no start of the node is still ahead)."""

Move = tuple[int, int, Any, int, Any]
"""``(mask, neg, marks, target, effect)``: one way a run leaves a state on an event."""


def _moves(srt: SRT, q: int) -> list[Move]:
    """How a run at ``q`` may take an event: its labelled transitions, then staying where it
    is (a stationary state) or its gap transitions (the others)."""
    def marks(t: RTransition) -> Any:
        return ("hidden" if t.hidden else "marked") if t.marked else None

    def effect(t: RTransition) -> Any:
        return (t.target, t.clears, t.sets, t.writes, marks(t))

    moves: list[Move] = [(t.mask, t.neg, marks(t), t.target, effect(t)) for t in srt.labelled[q]]
    if srt.stationary[q]:
        moves.append((0, 0, None, q, ("stay", q)))
    else:
        moves.extend((0, 0, None, g.target, effect(g)) for g in srt.gaps[q])
    return moves


def _together(a: Move, b: Move, exclusive: Sequence[int]) -> bool:
    """Can one event take both moves with the same marks?  An event has one type and comes
    from one stream: ``exclusive`` are the masks of the type bits and of the stream bits."""
    need = a[0] | b[0]
    if a[2] != b[2] or need & (a[1] | b[1]):
        return False
    return all((need & group).bit_count() <= 1 for group in exclusive)


def unambiguous(srt: SRT) -> bool:
    """Whether no two runs of ``srt`` can report the same complex event on the same event.

    Guards and registers are ignored, so True is a proof; False may be a false alarm (the engine
    then counts what it enumerates).  A fresh run starts from the initial state on every event
    with its labelled transitions; two runs with different starts differ in their complex event.
    """
    moves = [_moves(srt, q) for q in range(srt.num_states)]
    types = len(srt.event_types)
    base = types + len(srt.preds)
    exclusive = ((1 << types) - 1, ((1 << len(srt.streams)) - 1) << base)
    finals, dead = srt.finals, srt.dead
    first = moves[srt.initial][: len(srt.labelled[srt.initial])]
    seen: set[tuple[int, int, bool]] = set()
    todo: list[tuple[int, int, bool]] = []

    def step(pairs: Sequence[tuple[Move, Move]], diverged: bool) -> bool:
        for a, b in pairs:
            if not _together(a, b, exclusive):
                continue
            apart = diverged or a[4] != b[4]
            if diverged and a[3] in finals and b[3] in finals and a[4][0] != "stay" and b[4][0] != "stay":
                return False
            if dead[a[3]] or dead[b[3]]:
                continue
            node = (a[3], b[3], apart)
            if node not in seen:
                seen.add(node)
                todo.append(node)
        return True

    if not step([(a, b) for a in first for b in first], False):
        return False
    while todo:
        p, q, diverged = todo.pop()
        if not step([(a, b) for a in moves[p] for b in moves[q]], diverged):
            return False
    return True


def window_count(node: Node, tau: int | float, work: list[int]) -> int:
    """The complex events of ``node`` whose start time is at least ``tau`` (memoized, see the
    module doc).  ``work[0]`` grows by the nodes visited."""
    if node[1] < tau:
        return 0
    stack = [node]
    visited = 0
    result = 0
    # Each entry is computed once its children are: union nodes keep (count, until) in place.
    while stack:
        n = stack[-1]
        visited += 1
        kind = n[0]
        if kind == BOTTOM:
            stack.pop()
            result = 1
            continue
        if kind == OUTPUT:
            # An output node has its child's count: walk down the chain without a frame.
            child = n[3]
            while child[0] == OUTPUT:
                child = child[3]
                visited += 1
            stack[-1] = child
            continue
        if len(n) > 4 and tau <= n[5]:
            stack.pop()
            result = n[4]
            continue
        left, right = n[2], n[3]
        lc, lu = _known(left, tau)
        if lc is None:
            stack.append(left)
            continue
        rc, ru = _known(right, tau)
        if rc is None:
            stack.append(right)
            continue
        value, until = lc + rc, min(lu, ru)
        if len(n) > 4:
            n[4], n[5] = value, until
        else:
            n.extend((value, until))
        stack.pop()
        result = value
    work[0] += visited
    return result


def _known(n: Node, tau: int | float) -> tuple[Any, Any]:
    """``(count, until)`` of ``n`` at ``tau`` if known without visiting it, else ``(None, None)``.

    Output chains are followed down to their bottom or union node (they add no count)."""
    while n[0] == OUTPUT:
        n = n[3]
    if n[1] < tau:
        return 0, NEVER
    if n[0] == BOTTOM:
        return 1, n[1]
    if len(n) > 4 and tau <= n[5]:
        return n[4], n[5]
    return None, None
