"""Count-windowed queries with conditions between events on the unrolled, determinized SRA.

Under ``WITHIN n EVENTS`` a complex event spans at most ``D = n + 1``
positions, so a run consumes at most ``D`` events of its partition and the
SRT can be unrolled to depth ``D`` (:class:`kleene.registers.unrolling.Unrolling`).
The evaluation state of a partition is then *one* configuration of the
deterministic automaton (SRT TR Alg 7): the set ``S`` of tree nodes its runs
are at, plus the deterministic automaton's registers, which are the last
``D`` events of the partition.  A node at depth ``d`` started ``d`` events
ago, and the register copy it reads that was written at depth ``j`` is the
event ``d - j`` events before the current one; its marked positions are
likewise the positions of the events at its marked depths.  So a run costs no
register tuple, no position tuple and no hashing of events: it is an integer,
and equal runs are one node.

Per visited event of a partition:

1. the subset's *plan* for the event's unary bits (cached per subset and bit
   vector): the edges of its nodes whose unary bits match, split into those
   without n-ary guards (they always fire) and the guarded ones;
2. the guarded edges' guards are evaluated on the event and the history: their
   truth values are the minterm, which indexes the cached next subset
   (``{root}`` plus the children of the edges that fire) and its reports,
   ``(start, marked positions)`` read from the history at the node's depth;
3. nodes whose start left the window (partitions and skipped events make
   walks shorter than the window's span) are dropped first.

Cost per visited event: the guarded edges' guards plus O(1) on a cache hit;
a miss costs ``O(|S| · d)`` (``|S|`` live nodes, ``d`` edges per node).
Memory: the tree nodes reached plus ``D`` events per partition.

Measured (docs/semantics.md, "Windowed unrolling and determinization"), this
is not faster than the runs of :mod:`kleene.registers.runtime`: subsets
include the runs' ages, so they repeat rarely once several runs are live,
and where they do repeat the guards remain and the bookkeeping costs about
what the runs' set updates cost.  So the planner does not choose it
unless asked (``Tuning.windowed``); it hands over to the runs by itself when the cache
misses on more than :data:`MISS_LIMIT` of the events.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from kleene.language import ast
from kleene.limits import Limits
from kleene.registers.index import applies
from kleene.registers.pairs import pair_plan
from kleene.registers.runtime import RegisterEngine
from kleene.registers.srt import SRT

if TYPE_CHECKING:  # the unrolling is imported when this runtime is chosen (start-up time)
    from kleene.registers.unrolling import Edge

Found = list[tuple[int, tuple[int, ...]]]
Step = tuple[int, "Edge"]
"""``(depth of the node, edge)``: an edge leaving a node of a subset."""
CACHE_LIMIT = 200_000
"""Cached subset transitions before the cache starts over (bounds memory, as LazyDFA does)."""
WARM_UP = 2048
"""Visited events before the hit rate of the subset cache is first measured."""
PERIOD = 4096
"""Visited events between two measurements of the hit rate."""
MISS_LIMIT = 0.1
"""Above this share of subset transitions computed rather than cached, runs are cheaper."""


def _positions(positions: list[int], base: int, marks: tuple[int, ...]) -> tuple[int, ...]:
    """The marked positions of a walk from its marked depths (``~d``, hidden: ``~position``)."""
    return tuple(positions[base + j] if j >= 0 else ~positions[base + ~j] for j in marks)


class _Plan:
    """What a subset does on an event with given unary bits: the lazily built minterm table.

    Edges whose unary bits fail are gone; those without n-ary guards always
    fire (``children``, ``accepts``); ``guarded`` are the conditions of the
    minterm, whose truth values index ``outcomes``.
    """

    __slots__ = ("accepts", "children", "guarded", "outcomes", "writes")

    def __init__(self) -> None:
        self.guarded: list[Step] = []
        self.children: set[int] = {0}
        self.accepts: list[Step] = []
        self.writes = False
        self.outcomes: dict[int, _Next] = {}


class _Next:
    """The target of one minterm: the next subset, what it reports, whether it writes."""

    __slots__ = ("accepts", "subset", "writes")

    def __init__(self, subset: int, accepts: tuple[Step, ...], writes: bool) -> None:
        self.subset = subset
        self.accepts = accepts
        self.writes = writes


class _Partition:
    """The configuration of the deterministic automaton for one partition."""

    __slots__ = ("events", "positions", "subset")

    def __init__(self) -> None:
        self.subset = 0
        """The subset of tree nodes the runs are at (subset 0: only the root)."""
        self.events: list[tuple[Any, ...] | None] = []
        """The deterministic automaton's registers: the partition's last visited events
        (None for those no transition wrote, which no guard can read)."""
        self.positions: list[int] = []


class WindowedEngine(RegisterEngine):
    """:class:`RegisterEngine` for ``WITHIN n EVENTS``, on the unrolled tree (see the module doc)."""

    def __init__(
        self,
        srt: SRT,
        *,
        window: int,
        partitioned: bool,
        consume: str,
        limit: int | None,
        strategy: str,
        type_column: str = "type",
        limits: Limits | None = None,
    ) -> None:
        super().__init__(
            srt, window=window, partitioned=partitioned, consume=consume, limit=limit,
            strategy=strategy, type_column=type_column, limits=limits,
        )
        if srt.monitors:
            raise ValueError("the windowed runtime does not evaluate UNLESS: use the runs")
        self.pairs = None
        self.depth = int(window) + 1
        from kleene.registers.unrolling import Unrolling

        self.tree = Unrolling(srt, self.depth, strict=self.strict)
        self.parts: dict[Hashable, _Partition] = {}
        self.subsets: list[frozenset[int]] = []
        self.oldest: list[int] = []
        """Per subset: the depth of its deepest node (the run that started first)."""
        self._subset_id: dict[frozenset[int], int] = {}
        self._plans: dict[int, _Plan] = {}
        """Per ``bits << 32 | subset``: the subset's plan for events with those unary bits."""
        self._cached = 0
        self.misses = 0
        """Subset transitions computed (the others came from the cache)."""
        self.on_runs = False
        """Switched to the runs of :class:`RegisterEngine` (the subset cache missed too often)."""
        self.switched_at: int | None = None
        """The visited event at which it switched."""
        self._check_at = WARM_UP
        self._since: tuple[int, int] | None = None
        self._intern(frozenset({0}))

    @property
    def live_runs(self) -> int:
        if self.on_runs:
            return sum(len(r) for r in self.runs.values())
        return sum(len(self.subsets[p.subset]) - 1 for p in self.parts.values())

    def _intern(self, nodes: frozenset[int]) -> int:
        sid = self._subset_id.get(nodes)
        if sid is None:
            self._cached += 1  # bounds the subset numbers too (below 2^32: plan keys)
            sid = len(self.subsets)
            self._subset_id[nodes] = sid
            self.subsets.append(nodes)
            keys = self.tree.keys
            self.oldest.append(max(keys[n][1] for n in nodes))
        return sid

    def _restart_cache(self) -> None:
        """Forget the cached subsets and transitions, keeping the partitions' current subsets."""
        live = {key: self.subsets[p.subset] for key, p in self.parts.items()}
        self.subsets, self.oldest, self._subset_id = [], [], {}
        self._plans.clear()
        self._cached = 0
        self._intern(frozenset({0}))
        for key, nodes in live.items():
            self.parts[key].subset = self._intern(nodes)

    def _plan(self, sid: int, bits: int) -> _Plan:
        plan = _Plan()
        keys, out = self.tree.keys, self.tree.out
        for n in sorted(self.subsets[sid]):
            d = keys[n][1]
            for e in out(n):
                if bits & e.mask != e.mask or bits & e.neg:
                    continue
                if e.guards:
                    plan.guarded.append((d, e))
                    continue
                if e.live:
                    plan.children.add(e.child)
                if e.accepting:
                    plan.accepts.append((d, e))
                plan.writes = plan.writes or bool(e.writes)
        self._plans[bits << 32 | sid] = plan
        self._cached += 1
        return plan

    def _outcome(self, plan: _Plan, truth: int) -> _Next:
        self.misses += 1
        self._cached += 1
        children = set(plan.children)
        accepts = list(plan.accepts)
        writes = plan.writes
        for i, (d, e) in enumerate(plan.guarded):
            if truth >> i & 1:
                if e.live:
                    children.add(e.child)
                if e.accepting:
                    accepts.append((d, e))
                writes = writes or bool(e.writes)
        nxt = _Next(self._intern(frozenset(children)), tuple(accepts), writes)
        plan.outcomes[truth] = nxt
        return nxt

    def _within(self, part: _Partition, tau: Any, k: int) -> int:
        """The partition's subset without the runs whose start left the window (index k: now)."""
        positions = part.positions
        keys = self.tree.keys
        kept = frozenset(
            n for n in self.subsets[part.subset] if n and positions[k - keys[n][1]] >= tau
        )
        return self._intern(kept | {0})

    def _step(
        self,
        key: Hashable,
        pos: int,
        time: Any,
        bits: int,
        columns: Sequence[Sequence[Any]],
        row: int,
        tau: Any,
    ) -> Found:
        if self.on_runs:
            return super()._step(key, pos, time, bits, columns, row, tau)
        if self.steps >= self._check_at:
            self._measure()
            if self.on_runs:
                return super()._step(key, pos, time, bits, columns, row, tau)
        if self._cached >= CACHE_LIMIT:
            self._restart_cache()
        part = self.parts.get(key)
        if part is None:
            part = self.parts[key] = _Partition()
        events, positions = part.events, part.positions
        positions.append(pos)
        events.append(None)
        k = len(positions) - 1
        sid = part.subset
        if positions[k - self.oldest[sid]] < tau:
            sid = self._within(part, tau, k)
        plan = self._plans.get(bits << 32 | sid)
        if plan is None:
            plan = self._plan(sid, bits)
        event: tuple[Any, ...] | None = None
        truth = 0
        if plan.guarded:
            event = tuple(col[row] for col in columns)
            bit = 1
            for d, e in plan.guarded:
                base = k - d - 1
                regs = tuple(None if j is None else events[base + j] for j in e.selection)
                for g in e.guards:
                    if not g(event, regs):
                        break
                else:
                    truth |= bit
                bit <<= 1
        nxt = plan.outcomes.get(truth)
        if nxt is None:
            nxt = self._outcome(plan, truth)
        if nxt.writes:
            events[k] = event if event is not None else tuple(col[row] for col in columns)
        found: Found = []
        for d, e in nxt.accepts:
            base = k - d - 1
            found.append((positions[k - d], _positions(positions, base, e.marks)))
        part.subset = nxt.subset
        if not nxt.subset:  # only the root: no run needs the history (the sweep drops the key)
            events.clear()
            positions.clear()
        elif len(positions) > 2 * self.depth + 64:
            keep = self.depth + 1
            del events[: len(events) - keep]
            del positions[: len(positions) - keep]
        return found

    def _measure(self) -> None:
        """Go on with runs when the subsets repeat too rarely for the cache to pay.

        Each miss builds a subset transition (``O(|S| · d)`` plus interning),
        which costs more than stepping the runs directly; the miss rate
        depends on the data (how varied the sets of live runs are), so it is
        measured on the stream, after a warm-up, every :data:`PERIOD` events.
        """
        now = (self.steps, self.misses)
        if self._since is not None:
            steps, misses = now[0] - self._since[0], now[1] - self._since[1]
            if misses > MISS_LIMIT * steps:
                self._to_runs()
                return
        self._since = now
        self._check_at = self.steps + PERIOD

    def _to_runs(self) -> None:
        """Hand the state over to :class:`RegisterEngine`: each node becomes the run it stands for.

        A node ``(state, d, registers, marks)`` of a partition whose last
        ``L`` events are known started at event ``L - d``; its register copy
        written at depth ``j`` is event ``L - d + j - 1``, likewise its marks.
        """
        keys = self.tree.keys
        for key, part in self.parts.items():
            events, positions = part.events, part.positions
            last = len(positions)
            runs: dict[Any, None] = {}
            for n in self.subsets[part.subset]:
                if not n:
                    continue
                state, d, regs, marks = keys[n]
                base = last - d - 1
                start = positions[last - d]
                registers = tuple(None if j is None else events[base + j] for j in regs)
                marked = _positions(positions, base, marks)
                runs[(state, registers, start, start, marked)] = None
            self.adopt(key, runs)  # counted in self.live
        self.parts.clear()
        self._plans.clear()
        self.subsets, self.oldest, self._subset_id = [], [], {}
        self.on_runs = True
        self.switched_at = self.steps

    def _evict_expired(self, tau: Any) -> None:
        if self.on_runs:
            super()._evict_expired(tau)
            return
        live = 0
        for key in list(self.parts):
            part = self.parts[key]
            sid = self._within(part, tau, len(part.positions))
            if sid:
                part.subset = sid
                live += len(self.subsets[sid]) - 1
            else:
                del self.parts[key]
        self._sweep_at = self.steps + max(8192, live)

    def _forget(self, key: Hashable) -> None:
        if self.on_runs:
            super()._forget(key)
        elif key is None:
            self.parts.clear()
        else:
            self.parts.pop(key, None)


WINDOWED_MAX = 64
"""The largest ``WITHIN n EVENTS`` the windowed runtime may be chosen for."""


def choose_register_runtime(
    srt: SRT, settings: Any, within: ast.Window | None, type_column: str, *, windowed: bool
) -> str:
    """``"pairs"`` (vectorized pair join), ``"windowed"`` (this module), ``"merged"``
    (:mod:`kleene.registers.merged`, wherever the run index applies) or ``"runs"``.

    ``windowed``: choose this module's runtime where it applies.  The planner
    passes False by default: measured on benchmarks/registers.py it is 5-30%
    slower than the runs (docs/semantics.md, "Windowed unrolling and
    determinization"); the tests ask for it to check it against the oracle.
    """
    plan = pair_plan(
        srt, window=settings.window, partitioned=settings.partitioned, consume=settings.consume,
        limit=settings.limit, strategy=settings.strategy, type_column=type_column,
    )
    if plan is not None:
        return "pairs"
    if srt.monitors:
        return "runs"  # UNLESS monitors run next to the runs only
    if srt.selectors:
        return "runs"  # a nested selector's product moves its runs on every event
    if windowed and windowed_applies(srt, within):
        return "windowed"
    if applies(srt, settings.strategy, settings.limit):
        return "merged"
    return "runs"


def windowed_applies(srt: SRT, within: ast.Window | None) -> bool:
    """The windowed runtime needs a count window of at most :data:`WINDOWED_MAX` and no UNLESS."""
    return (
        not srt.monitors
        and not srt.selectors
        and isinstance(within, ast.EventsWindow)
        and within.count <= WINDOWED_MAX
    )
