"""Windowed unrolling of an SRT (SRT TR Alg 3-6, RMA Alg 6).

:class:`Unrolling` is the tree of walks of at most ``depth`` events from the
initial state, built lazily node by node (Alg 6, ``UnrollK``).  A node is
``(state, depth, registers, marks)``: the SRT state it copies (CopyOfQ), the
number of events consumed since the start, for each register of the SRT the
depth at which the copy it holds was written (CopyOfR and
FindLastAppearance: the copy of ``r`` written at depth ``j`` is a register of
its own, written once, by the ``j``-th event of the walk; None when the walk
never wrote it, or cleared it, so atoms over it are false) and the depths of
the marked events.  Nodes with equal contents are one node (the tree up to
merging of identical subtrees, as the runtime merges equal runs); walks that
cannot accept within the depth are pruned (the walk length bound of the
papers, by the shortest distance to acceptance).  :func:`unroll` builds all
of it as an :class:`~kleene.registers.sra.SRA`, which
:mod:`kleene.registers.window_runtime` evaluates lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kleene.registers.sra import (
    INFINITE,
    SRA,
    TRUE,
    Condition,
    Event,
    Formula,
    Registers,
    SRATransition,
    srt_transitions,
    transition_formula,
)
from kleene.registers.srt import SRT

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
            for _, t in srt_transitions(srt, q, strict):
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
        for name, t in srt_transitions(srt, q, self.strict, self.streaming):
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
        for name, t in srt_transitions(srt, q, strict):
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


__all__ = [
    "Edge",
    "Unrolling",
    "distances",
    "unroll",
]
