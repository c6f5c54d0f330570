"""Counting register runs by aggregates over register values (``Query.count``, issue 18 item 2).

:class:`kleene.registers.merged.MergedEngine` keeps one run per ``(state, registers)``.  In
``SELL as a; BUY as b; BUY as c FILTER c[price > a.price]`` the register is ``a``'s price, a
float: every ``a`` of the window has a run of its own, and every ``b`` (no guard) moves each of
them, so the work per event grows with the window.  For the class below, counting needs no run
at all, only a vector of counts per start, kept in a balanced tree ordered by register value.

**The class** (:func:`aggregate_plan`; anything else keeps the merged runs' count):

* every register is written by the transitions out of the initial state only (the pattern's
  first variable), so a start's registers are fixed; they all write the same registers, no
  transition enters the initial state, no other transition clears or sets a register, and no
  gap transition enters a final state;
* every guard conjunct compares an expression of the current event with one and the same
  expression ``K`` of the registers (``price > a.price``, ``2 * price <= a.price + 1``) by
  ``<``, ``<=``, ``>``, ``>=`` or ``=``; no ``prev()``, no guard on the first event;
* ALL or ANY, no LIMIT, no UNLESS, no CONSUME BY, not STRICT, no contiguity (``:``), no nested
  selector, and the SRT
  is unambiguous (:func:`kleene.registers.counting.unambiguous`): its paths are its complex
  events.

**The count.**  For one start ``s`` with key ``K(s)``, its runs are a vector ``v_s`` of counts
over the SRT's live states (not the initial one, not the dead ones).  An event moves them by a
matrix ``M`` and completes ``v_s · F`` complex events, where ``M[q][q']`` and ``F[q]`` count the
distinct ways (target, marks) a run at ``q`` takes the event: staying at a gap state or its gap
transitions, plus the labelled transitions whose mask the event has and whose guards hold.
Steps of one run with the same target and marks are one run (as the merged runs' ``_ident``
merges them), and reports of one run with the same marks one complex event.  The guards hold or
not depending on ``K(s)`` only through where it lies among the event's values of the conjuncts'
event sides: at most ``2·c + 1`` pieces of the key order for ``c`` conjuncts, adjacent pieces
with the same truths merged.  So an event cuts each tree into its pieces, adds ``sum · F`` of
each, multiplies each by its ``M`` (lazily: :mod:`kleene.registers.vectortree`), and merges them
back: ``O(pieces · log w)`` nodes.  A start inserts its vector (the initial transitions it
takes), the window removes the starts older than it (a FIFO per partition), and the total is the
exact count (Python ints).  Keys of different kinds never compare (a guard across kinds is
false), so there is one tree per kind of ``K`` (numbers, strings, booleans) and one for the starts
whose ``K`` is undefined (null, NaN), where every conjunct is false.  Events no labelled
transition accepts change nothing and are not visited (the vectorized prefilter).

``work`` counts tree nodes touched (pushes and sums recomputed), for tests that count work.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from kleene.language import ast
from kleene.limits import CHECK_EVERY, Limits
from kleene.native import load
from kleene.registers.counting import unambiguous
from kleene.registers.guards import Key, compile_key, guard_columns
from kleene.registers.srt import SRT, Condition, RTransition
from kleene.registers.vectortree import Matrix, VectorTree
from kleene.runtime.enumeration import Count

_compiled = load("kleene.registers._vectortree")
TREE: Any = VectorTree if _compiled is None else _compiled.VectorTree
"""The tree class in use: the compiled twin when built, else the pure-Python reference."""

OPS = {"<", "<=", ">", ">=", "=="}
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}
BIG = 1 << 62
"""A sequence number above every start's: the cut after every key of one value."""
Conjunct = tuple[str, Callable[[Any, Any], Key | None]]
"""``(op, event side)``: the conjunct ``event op K``."""


def _reads(node: Any, target: str, event: bool) -> bool:
    """Does an expression read the current event (``event``) or a register (not ``event``)?"""
    if isinstance(node, ast.Attr):
        return event
    if isinstance(node, ast.VarAttr):
        here = node.var == target and not node.prev
        return here if event else not here
    return any(
        _reads(child, target, event)
        for name in ("left", "right", "operand")
        if (child := getattr(node, name, None)) is not None
    )


def _split(c: Condition) -> tuple[str, ast.Expr, ast.Expr] | None:
    """``(op, event side, register side)`` of ``event op K``, or None if not of that form."""
    p = c.pred
    if c.vacuous_when_empty or not isinstance(p, ast.Compare) or p.op not in OPS:
        return None
    x = c.target
    left, right = p.left, p.right
    if _reads(left, x, True) and not _reads(left, x, False) and _reads(right, x, False) \
            and not _reads(right, x, True):
        return p.op, left, right
    if _reads(right, x, True) and not _reads(right, x, False) and _reads(left, x, False) \
            and not _reads(left, x, True):
        return FLIP[p.op], right, left
    return None


def _marks(t: RTransition) -> Any:
    return ("hidden" if t.hidden else "marked") if t.marked else None


@dataclass(frozen=True)
class AggregatePlan:
    """What the counter needs of the SRT (see the module doc), built by :func:`aggregate_plan`."""

    states: tuple[int, ...]
    """The live states (reachable from the initial one, not it, not dead): vector positions."""
    key: Callable[[Any, Any], Key | None] | None
    """``K`` over the registers (None: no guard at all, every start in one piece)."""
    written: tuple[int, ...]
    """The registers the initial transitions write."""
    conjuncts: dict[int, tuple[Conjunct, ...]]
    """Per labelled transition (``id``): its conjuncts ``event op K``."""
    described: str
    """``K`` as CEQL text, for explain()."""


def aggregate_plan(
    srt: SRT, *, strategy: str, limit: int | None, consume: str
) -> tuple[AggregatePlan | None, str]:
    """The plan, or None and why the query is outside the class."""
    if strategy not in ("ALL", "ANY") or limit is not None:
        return None, "a strategy other than ALL/ANY, or LIMIT"
    if srt.monitors or consume != "NONE":
        return None, "UNLESS or CONSUME BY"
    if srt.contiguous or srt.strategy_first:
        return None, "contiguity (':')"
    if srt.selectors or srt.anchored:
        return None, "a nested selector (its product moves the runs on every event)"
    init = srt.initial
    firsts = srt.labelled[init]
    if not firsts or srt.gaps[init]:
        return None, "the pattern does not start with one event"
    written = {t.writes for t in firsts}
    if len(written) != 1 or any(t.guards or t.sets or t.checks for t in firsts):
        return None, "the first event's transitions differ in registers, or carry a guard"
    everything = [t for ts in srt.labelled for t in ts] + [g for gs in srt.gaps for g in gs]
    if any(t.target == init for t in everything):
        return None, "the initial state is entered again"
    later = [t for q, ts in enumerate(srt.labelled) if q != init for t in ts]
    later += [g for q, gs in enumerate(srt.gaps) if q != init for g in gs]
    if any(t.writes or t.clears or t.sets or t.checks for t in later):
        return None, "a register is written after the first event"
    if any(g.target in srt.finals for gs in srt.gaps for g in gs):
        return None, "a gap transition reports"
    attrs = {a: k for k, a in enumerate(srt.attributes)}
    key_side: tuple[Any, ...] | None = None
    key_fn: Callable[[Any, Any], Key | None] | None = None
    conjuncts: dict[int, tuple[Conjunct, ...]] = {}
    for t in later:
        if len(t.guards) != len(t.conditions):
            return None, "a guard without its condition"
        mine: list[Conjunct] = []
        for c in t.conditions:
            parts = _split(c)
            if parts is None:
                return None, f"the condition {c.pred} is not a comparison of the event with a register"
            op, event_side, register_side = parts
            slots = dict(c.slots)
            reads = tuple(sorted((v, s) for (v, prev), s in slots.items() if v != c.target))
            side = (register_side, reads)
            if key_side is None:
                key_side = side
                key_fn = compile_key(register_side, c.target, slots, attrs)
            elif side != key_side:
                return None, "the conditions compare with more than one register expression"
            mine.append((op, compile_key(event_side, c.target, slots, attrs)))
        if mine:
            conjuncts[id(t)] = tuple(mine)
    if not unambiguous(srt):
        return None, "two runs of the automaton may give the same complex event"
    reach: set[int] = set()
    todo = [t.target for t in firsts]
    while todo:
        q = todo.pop()
        if q in reach or srt.dead[q]:
            continue
        reach.add(q)
        todo.extend(t.target for t in srt.labelled[q])
        todo.extend(g.target for g in srt.gaps[q])
    described = "none" if key_side is None else _text(key_side[0])
    plan = AggregatePlan(tuple(sorted(reach)), key_fn, firsts[0].writes, conjuncts, described)
    return plan, ""


def _text(e: Any) -> str:
    if isinstance(e, ast.VarAttr):
        return f"{e.var}.{e.name}"
    if isinstance(e, ast.Attr):
        return e.name
    return type(e).__name__.lower()


def describe(srt: SRT, strategy: str, limit: int | None, consume: str) -> str:
    """``explain()``'s line about counting."""
    plan, why = aggregate_plan(srt, strategy=strategy, limit=limit, consume=consume)
    if plan is None:
        return f"counting (count, --count): merged runs' tECS counts (no aggregates: {why})"
    return (
        "counting (count, --count): aggregates over register values, no runs: per start a "
        f"vector of run counts over {len(plan.states)} states in a tree ordered by "
        f"{plan.described}, an event moving each range of it by a matrix (O(log w) per range)"
    )


@dataclass
class _EventKind:
    """What an event of one predicate bit pattern does (cached per ``bits``)."""

    fired: list[list[tuple[int, bool, Any, tuple[int, ...]]]]
    """Per live state: the labelled transitions it takes, ``(target index or -1 when dead,
    into a final state, marks, indexes of its conjuncts in conds)``."""
    conds: list[Conjunct]
    """The conjuncts the event's transitions carry (their event sides evaluated per event)."""
    start: list[int] | None
    """The vector of a run started by this event (None: it starts none that lives on)."""
    start_final: int
    """Complex events of one event (first transitions into a final state)."""
    active: bool
    """Some live state takes it (else only a start can come of it)."""


@dataclass
class _Partition:
    trees: dict[int | None, VectorTree]
    """Per kind of ``K`` (None: undefined): the starts' vectors."""
    fifo: deque[tuple[Any, int | None, Any, int]]
    """``(start time, kind, value, seq)`` in start order: the window removes from the left."""


class AggregateCounter:
    """Counts a query's complex events into a :class:`Count` (see the module doc)."""

    def __init__(self, srt: SRT, plan: AggregatePlan, *, window: int | float | None,
                 limits: Limits, relevant: Callable[[np.ndarray], np.ndarray]) -> None:
        self.srt, self.plan, self.window, self.limits = srt, plan, window, limits
        self.relevant = relevant
        self.index = {q: i for i, q in enumerate(plan.states)}
        self.k = len(plan.states)
        self.tree: Any = TREE
        """The tree class (tests set the pure-Python one to compare it with the twin)."""
        self.parts: dict[Hashable, _Partition] = {}
        self.kinds: dict[int, _EventKind] = {}
        self.moves: dict[tuple[int, tuple[bool, ...]], tuple[Matrix | None, tuple[int, ...] | None]] = {}
        self.work = [0]
        """Tree nodes touched (pushes, sums recomputed), for tests that count work."""
        self.pieces = 0
        """Key ranges the events applied a move to (each costs O(log w) nodes)."""
        self.steps = 0
        self.live = 0
        """Starts alive in the window (all partitions)."""
        self.peak = 0
        """The most starts alive at once."""
        self.tau: int | float = -(1 << 62)
        self._seq = 0
        self._sweep_at = 8192
        self._look_at = min(limits.max_runs, CHECK_EVERY)

    # -- per bit pattern ------------------------------------------------------------------

    def _kind(self, bits: int) -> _EventKind:
        srt, plan, index = self.srt, self.plan, self.index
        conds: list[Conjunct] = []
        fired: list[list[tuple[int, bool, Any, tuple[int, ...]]]] = []
        for q in plan.states:
            mine = []
            for t in srt.labelled[q]:
                if bits & t.mask != t.mask or bits & t.neg:
                    continue
                at = []
                for c in plan.conjuncts.get(id(t), ()):
                    at.append(len(conds))
                    conds.append(c)
                target = -1 if srt.dead[t.target] else index[t.target]
                mine.append((target, t.target in srt.finals, _marks(t), tuple(at)))
            fired.append(mine)
        start = [0] * self.k
        ways: dict[int, set[Any]] = {}
        finals: set[Any] = set()
        for t in srt.labelled[srt.initial]:
            if bits & t.mask != t.mask or bits & t.neg:
                continue
            if not srt.dead[t.target]:
                ways.setdefault(index[t.target], set()).add(_marks(t))
            if t.target in srt.finals:
                finals.add(_marks(t))
        for i, marks in ways.items():
            start[i] = len(marks)
        kind = _EventKind(fired, conds, start if ways else None, len(finals), any(fired))
        self.kinds[bits] = kind
        return kind

    def _move(self, bits: int, kind: _EventKind, truth: tuple[bool, ...]) -> tuple[Matrix | None, tuple[int, ...] | None]:
        """``(M, F)`` of the event on the starts whose conjuncts have ``truth``: None for the
        identity and for no final."""
        got = self.moves.get((bits, truth))
        if got is not None:
            return got
        srt, plan, index = self.srt, self.plan, self.index
        rows: list[tuple[tuple[int, int], ...]] = []
        finals: list[int] = []
        identity = True
        for i, q in enumerate(plan.states):
            ways: dict[int, set[Any]] = {}
            if srt.stationary[q]:
                ways[i] = {None}
            else:
                for g in srt.gaps[q]:
                    if not srt.dead[g.target]:
                        ways.setdefault(index[g.target], set()).add(None)
            reported: set[Any] = set()
            for target, final, marks, at in kind.fired[i]:
                if all(truth[c] for c in at):
                    if target >= 0:
                        ways.setdefault(target, set()).add(marks)
                    if final:
                        reported.add(marks)
            row = tuple(sorted((j, len(m)) for j, m in ways.items()))
            identity = identity and row == ((i, 1),)
            rows.append(row)
            finals.append(len(reported))
        got = (None if identity else tuple(rows), tuple(finals) if any(finals) else None)
        self.moves[(bits, truth)] = got
        return got

    # -- per event ------------------------------------------------------------------------

    def run_batch(self, batch: pa.RecordBatch, bits: np.ndarray, positions: np.ndarray,
                  times: np.ndarray | None, key_columns: Sequence[Sequence[Hashable]] | None,
                  out: Count) -> None:
        """Count one batch's complex events into ``out`` (rows in stream order)."""
        n = len(positions)
        if n == 0:
            return
        visit = np.flatnonzero(self.relevant(bits)).tolist()
        bit_list: list[int] = bits.tolist()
        columns = guard_columns(batch, self.srt.attributes)
        pos_list: list[int] = positions.tolist()
        time_of = pos_list if times is None else times.tolist()
        window = self.window
        kinds = self.kinds
        for i in visit:
            key: Hashable = None
            if key_columns is not None:
                key = tuple(col[i] for col in key_columns)
                if None in key:
                    continue
            time = time_of[i]
            tau = -(1 << 62) if window is None else time - window
            self.tau = tau
            self.steps += 1
            b = bit_list[i]
            kind = kinds.get(b)
            if kind is None:
                kind = self._kind(b)
            found = 0
            part = self.parts.get(key)
            event: tuple[Any, ...] | None = None
            if part is not None:
                if part.fifo and part.fifo[0][0] < tau:
                    self._expire(part, tau)
                if kind.active and part.trees:
                    if kind.conds:
                        event = tuple(col[i] for col in columns)
                    found += self._step(part, b, kind, event)
            if kind.start_final:
                found += kind.start_final
            if kind.start is not None:
                if event is None:
                    event = tuple(col[i] for col in columns)
                if part is None:
                    part = self.parts[key] = _Partition({}, deque())
                self._start(part, kind.start, event, time)
            if found:
                if found > self.limits.max_matches:
                    raise self.limits.matches_error(pos_list[i])
                out.add(found)
            if self.steps >= self._sweep_at:
                self._sweep(tau)

    def _step(self, part: _Partition, bits: int, kind: _EventKind, event: tuple[Any, ...] | None) -> int:
        found = 0
        if event is None:
            move = self._move(bits, kind, ())
            for tree in part.trees.values():
                self.pieces += 1
                found += tree.step([], [move])
            return found
        values = [fn(event, ()) for _, fn in kind.conds]
        for tree_kind, tree in part.trees.items():
            cuts, moves = self._pieces(bits, kind, values, tree_kind)
            self.pieces += len(moves)
            found += tree.step(cuts, moves)
        return found

    def _pieces(self, bits: int, kind: _EventKind, values: list[Key | None],
                tree_kind: int | None) -> tuple[list[tuple[Any, int]], list[Any]]:
        """The cuts of the key order where the conjuncts' truths change, and each range's move."""
        ops = [op for op, _ in kind.conds]
        mine = [None if v is None or v[0] != tree_kind else v[1] for v in values]
        ts = sorted({v for v in mine if v is not None})
        if not ts:
            return [], [self._move(bits, kind, (False,) * len(ops))]
        cuts: list[tuple[Any, int]] = []
        moves: list[Any] = []
        last: tuple[bool, ...] | None = None
        r = len(ts)
        for p in range(2 * r + 1):
            if p % 2:  # the point ts[p // 2]
                k = ts[p // 2]
                truth = tuple(e is not None and _holds(op, e, k) for op, e in zip(ops, mine, strict=True))
                cut = (k, -1)
            else:  # strictly between ts[p//2 - 1] and ts[p//2] (open ends at the extremes)
                hi = ts[p // 2] if p // 2 < r else None
                truth = tuple(
                    e is not None and _beside(op, hi is not None and e >= hi)
                    for op, e in zip(ops, mine, strict=True)
                )
                cut = (ts[p // 2 - 1], BIG) if p else (None, 0)
            if truth == last:
                continue
            if p:
                cuts.append(cut)
            moves.append(self._move(bits, kind, truth))
            last = truth
        return cuts, moves

    def _start(self, part: _Partition, vec: list[int], event: tuple[Any, ...], time: Any) -> None:
        plan = self.plan
        if plan.key is None:
            key: Key | None = (0, 0)
        else:
            regs: list[Any] = [None] * self.srt.num_registers
            for r in plan.written:
                regs[r] = event
            key = plan.key((), regs)
        kind, value = (None, 0) if key is None else key
        tree = part.trees.get(kind)
        if tree is None:
            tree = part.trees[kind] = self.tree(self.k, self.work, seed=self._seq)
        self._seq += 1
        tree.insert(value, self._seq, list(vec))
        if self.window is not None:
            part.fifo.append((time, kind, value, self._seq))
        self.live += 1
        if self.live > self.peak:
            self.peak = self.live
        if self.live > self._look_at:
            if self.live > self.limits.max_runs:
                raise self.limits.runs_error(self.live, "starts counted in the window")
            self.limits.check_memory(f"with {self.live:,} starts counted in the window")
            self._look_at = min(self.limits.max_runs, self.live + CHECK_EVERY)

    def _expire(self, part: _Partition, tau: Any) -> None:
        fifo, trees = part.fifo, part.trees
        while fifo and fifo[0][0] < tau:
            _, kind, value, seq = fifo.popleft()
            tree = trees[kind]
            tree.delete(value, seq)
            self.live -= 1
            if not tree.size:
                del trees[kind]

    def _sweep(self, tau: Any) -> None:
        """Remove the expired starts of partitions no recent event visited (amortized)."""
        for key in list(self.parts):
            part = self.parts[key]
            self._expire(part, tau)
            if not part.trees:
                del self.parts[key]
        self._sweep_at = self.steps + max(8192, self.live)


def _holds(op: str, e: Any, k: Any) -> bool:
    """``e op k``."""
    if op == ">":
        return bool(e > k)
    if op == ">=":
        return bool(e >= k)
    if op == "<":
        return bool(e < k)
    if op == "<=":
        return bool(e <= k)
    return bool(e == k)


def _beside(op: str, above: bool) -> bool:
    """``e op K`` for every ``K`` strictly between two thresholds, ``e`` one of them: above
    them (``above``) or below."""
    return op in (">", ">=") if above else op in ("<", "<=")
