"""``SELECT NEXT`` under a window: the thesis's Algorithm 2, one instance per group of starts.

NXT (CEL thesis §4, spec §9.2) keeps, among the complex events that end at a
position, the maximum of the order ``M ≤ M'`` iff ``min(M △ M') ∈ M'``.
Algorithm 2 evaluates it in constant time per event without a tECS: an
ordered list of *entries* ``(T, M)``, best first, where each automaton state
is in at most one entry and ``M`` is the best partial match of every run in
a state of ``T``.  Two runs in the same state keep their order whatever
follows (adding the same positions to both does not change their first
difference), so a state only needs its best run.

**Why per start.**  Under WITHIN, the strategy chooses among the matches that
start inside the window (docs/cel-semantics.md), and NXT prefers the
earliest start: ``min(M △ M')`` is the smaller start when the starts differ.
The best run of a state may therefore expire while a worse one, started
later, is still needed, so one Algorithm 2 for the whole stream is wrong
under a window.  Instead every start ``s`` (a run's first, marked, event)
gets its own Algorithm 2, and the answer at end ``i`` is the best match of
the earliest start ``>= tau`` that has one.

**Groups.**  The *configuration* of a start is its list of state sets
``(T1, ..., Tk)`` without the matches; it evolves deterministically with the
events, so starts whose configurations meet stay together forever.  Starts
are kept in *groups* by configuration: each event updates each group once
(a cached function of configuration and predicate bit vector), and groups
that reach the same configuration merge.  The number of groups is bounded
by the number of configurations, which depends on the query only, not on
the window.  A group keeps its starts in a min-heap (the earliest valid
start is the one that answers) and merges smaller into larger.

**Matches.**  As in Algorithm 2, each entry holds its match as a persistent
chain of marked positions, newest first, shared with the entries it came
from; but a group's chains hold only the marks made since its starts joined
it.  The chain of a new group is its start alone.  When a smaller group
merges into a larger one at position ``m``, each of its starts records the
two groups' chain heads at ``m``.  The match of the chosen start is read by
walking the chain of the output entry: on reaching the larger group's head
recorded at ``m`` (by identity), the walk continues on the smaller group's
head for the same entry.  Every node visited is a position of the output,
or a switch, and a start moves at most ``log2(window)`` times (smaller into
larger), so reading a match is linear in its size.  Chains are cut below
the window now and then, so memory stays bounded.

Cost per event: one cached transition per group plus amortized
``O(log window)`` heap work when groups merge; it does not scan the window.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from typing import Any

from kleene.automata.determinize import LazyDFA
from kleene.native import load

Config = tuple[frozenset[int], ...]
"""The state sets of a group's entries, best entry first."""

Step = tuple[tuple[int, bool], ...]
"""Per new entry: the old entry it comes from and whether it marked the event."""

Chain = Any
"""Marked positions, newest first: ``[pos, time, older]`` lists (a start's own chain ends in None)."""

Record = tuple[int, dict[int, int], tuple[Chain, ...], tuple[Chain, ...]]
"""A move of a start into a larger group at a position: that position, the larger
group's chain heads then (``id`` to entry, and the heads themselves, which keeps
them alive so that no other node can reuse their ``id``), the start's own heads then."""

SWEEP_STEPS = 4096
"""Steps between two cuts of the chains below the window (at least)."""


class NxtRules:
    """The configuration dynamics of one automaton, shared by all evaluators of a query."""

    def __init__(self, dfa: LazyDFA) -> None:
        cea = dfa.cea
        self.out = cea.outgoing()
        self.initial = cea.initial
        self.finals = cea.finals
        self.configs: list[Config] = []
        self._ids: dict[Config, int] = {}
        self.moves: list[dict[int, tuple[int, Step, int, bool]]] = []
        self.starts: dict[int, tuple[int, bool]] = {}
        self.states: list[frozenset[int]] = []
        """Per configuration: the automaton states of its entries, as DFA ids of singletons."""
        self._dfa = dfa

    def intern(self, config: Config) -> int:
        cid = self._ids.get(config)
        if cid is None:
            cid = self._ids[config] = len(self.configs)
            self.configs.append(config)
            self.moves.append({})
            self.states.append(
                frozenset(self._dfa.state_of(frozenset({q})) for t in config for q in t)
            )
        return cid

    def _live(self, states: set[int]) -> frozenset[int]:
        """Drop the states with no way out: a run there can never mark again."""
        return frozenset(q for q in states if self.out[q])

    def start(self, bits: int) -> tuple[int, bool]:
        """A run starting at an event with ``bits``: its configuration id (-1: none), and
        whether the one-event match ends here."""
        hit = self.starts.get(bits)
        if hit is None:
            targets = {
                t.target
                for t in self.out[self.initial]
                if t.marked and bits & t.mask == t.mask and not bits & t.neg
            }
            live = self._live(targets)
            hit = (self.intern((live,)) if live else -1, bool(targets & self.finals))
            self.starts[bits] = hit
        return hit

    def move(self, cid: int, bits: int) -> tuple[int, Step, int, bool]:
        """One event on a configuration (Algorithm 2's UPDATE on each entry, best first).

        Returns the new configuration id (-1: every run died), the step, the
        first old entry that reaches a final state by marking this event (its
        match plus this event is the best one ending here; -1: none), and
        whether the step is trivial (same entries, nothing marked).
        """
        hit = self.moves[cid].get(bits)
        if hit is not None:
            return hit
        config = self.configs[cid]
        claimed: set[int] = set()
        entries: list[frozenset[int]] = []
        step: list[tuple[int, bool]] = []
        final_entry = -1
        for j, states in enumerate(config):
            marked: set[int] = set()
            unmarked: set[int] = set()
            for q in states:
                for t in self.out[q]:
                    if bits & t.mask == t.mask and not bits & t.neg:
                        (marked if t.marked else unmarked).add(t.target)
            if final_entry < 0 and marked & self.finals:
                final_entry = j
            # Within an entry, marking successors rank above skipping ones.
            for successors, mark in ((marked, True), (unmarked, False)):
                fresh = successors - claimed
                if fresh:
                    claimed |= fresh
                    live = self._live(fresh)
                    if live:
                        entries.append(live)
                        step.append((j, mark))
        new = self.intern(tuple(entries)) if entries else -1
        trivial = new == cid and all(o == j and not m for j, (o, m) in enumerate(step))
        hit = (new, tuple(step), final_entry, trivial)
        self.moves[cid][bits] = hit
        return hit


class _Group:
    """Starts whose runs are in the same configuration."""

    __slots__ = ("config", "heap", "chains")

    def __init__(self, config: int, time: int | float, pos: int) -> None:
        self.config = config
        self.heap: list[tuple[int | float, int]] = [(time, pos)]
        """(time, position) of the starts, earliest first; expired ones are popped lazily."""
        self.chains: tuple[Chain, ...] = ([pos, time, None],)

    def earliest(self, tau: int | float) -> tuple[int | float, int] | None:
        heap = self.heap
        while heap and heap[0][0] < tau:
            heapq.heappop(heap)
        return heap[0] if heap else None


class NxtEvaluator:
    """NEXT over one (sub)stream: feed events with :meth:`step` (the engine's evaluator interface)."""

    __slots__ = (
        "rules", "groups", "moved", "starts", "table", "active_key", "count_only", "_sweep_at", "_steps",
    )

    def __init__(self, dfa: LazyDFA, rules: NxtRules | None = None, *, count_only: bool = False) -> None:
        self.rules = rules if rules is not None else NxtRules(dfa)
        self.count_only = count_only
        """Only the number of matches is wanted (a count sink): :meth:`step` returns the chosen
        start with no positions, and the match's chain is never walked (O(1) per end)."""
        self.groups: list[_Group] = []
        self.moved: dict[int, list[Record]] = {}
        """Per start position: its moves, newest first."""
        self.starts: deque[tuple[int | float, int]] = deque()
        """Starts that have moved, so their records expire with the window."""
        self.table: dict[int, bool] = {}
        """The automaton states of all groups, as DFA ids of singletons (for skipping)."""
        self.active_key: frozenset[int] = frozenset()
        self._sweep_at = SWEEP_STEPS
        self._steps = 0

    def clear(self) -> None:
        """Discard every partial match (CONSUME BY)."""
        self.groups = []
        self.moved = {}
        self.starts = deque()
        self.table = {}

    def expired(self, tau: int | float) -> bool:
        """True when no start is inside the window any more."""
        return all(g.earliest(tau) is None for g in self.groups)

    def step(
        self, pos: int, time: int | float, bits: int, tau: int | float
    ) -> list[tuple[int, tuple[int, ...]]]:
        """Process the event at ``pos``; the best complex event ending here, if any."""
        rules = self.rules
        best: tuple[int | float, int] | None = None
        best_chain: Chain = None
        seen: set[int] = set()
        merge = False
        kept: list[_Group] = []
        for g in self.groups:
            first = g.earliest(tau)
            if first is None:
                continue
            new, step, final_entry, trivial = rules.move(g.config, bits)
            if final_entry >= 0 and (best is None or first < best):
                best, best_chain = first, g.chains[final_entry]
            if new < 0:
                continue
            if not trivial:
                chains = g.chains
                g.chains = tuple(
                    [pos, time, chains[j]] if marked else chains[j] for j, marked in step
                )
                g.config = new
            kept.append(g)
            if new in seen:
                merge = True
            seen.add(new)
        cid, single = rules.start(bits)
        if single and best is None:
            best = (time, pos)
        if cid >= 0:
            kept.append(_Group(cid, time, pos))
            merge = merge or cid in seen
        self.groups = self._merge(kept, pos) if merge else kept
        self._refresh()
        self._steps += 1
        if self._steps >= self._sweep_at:
            self._sweep(tau)
        if best is None:
            return []
        start = best[1]
        if self.count_only:
            return [(start, ())]
        if start == pos:
            return [(pos, (pos,))]
        return [(start, self._match(start, best_chain, pos))]

    def _merge(self, groups: list[_Group], pos: int) -> list[_Group]:
        """Merge the groups that reached the same configuration, smaller into larger."""
        by_config: dict[int, list[_Group]] = {}
        for g in groups:
            by_config.setdefault(g.config, []).append(g)
        out: list[_Group] = []
        for same in by_config.values():
            same.sort(key=lambda g: len(g.heap), reverse=True)
            big = same[0]
            heads = {id(chain): j for j, chain in enumerate(big.chains)}
            for small in same[1:]:
                record = (pos, heads, small.chains, big.chains)
                for start in small.heap:
                    records = self.moved.get(start[1])
                    if records is None:
                        self.moved[start[1]] = [record]
                        self.starts.append(start)
                    else:
                        records.insert(0, record)
                    heapq.heappush(big.heap, start)
            out.append(big)
        return out

    def _match(self, start: int, chain: Chain, end: int) -> tuple[int, ...]:
        """The positions of the best match of ``start``, ending at ``end``, from its entry's chain."""
        # Moves at this very event came after the output was taken.
        records = [r for r in self.moved.get(start, ()) if r[0] < end]
        return WALK_MATCH(records, chain, end)

    def _refresh(self) -> None:
        states = self.rules.states
        union: set[int] = set()
        for g in self.groups:
            union |= states[g.config]
        if union != self.table.keys():
            self.table = dict.fromkeys(union, True)

    def _sweep(self, tau: int | float) -> None:
        """Cut the chains below the window and drop the move records of expired starts.

        A start inside the window only ever walks its own marks, all at or
        after its time, and switch nodes, which may be older: so a chain is
        cut right below its first node older than ``tau``, never above it.
        """
        for g in self.groups:
            for chain in g.chains:
                here = chain
                while here is not None and here[1] >= tau:
                    here = here[2]
                if here is not None:
                    here[2] = None
        starts = self.starts
        while starts and starts[0][0] < tau:
            self.moved.pop(starts.popleft()[1], None)
        self._sweep_at = self._steps + SWEEP_STEPS


def walk_match(records: list[Record], chain: Chain, end: int) -> tuple[int, ...]:
    """The positions of a match, ascending: ``end``, then the marks of ``chain`` across the
    start's moves ``records`` (oldest last, each before ``end``).

    Walk to the larger group's head recorded at each move, then switch to the start's own
    head for the same entry.  Nodes are made at their position, so the marks after the move
    (position > moved_at) are passed without a lookup.  ``kleene.runtime._nxt.walk_match`` is
    its compiled twin (:mod:`kleene.native`).
    """
    found = [end]
    append = found.append
    for moved_at, heads, own, theirs in records:
        while chain is not None:
            if chain[0] > moved_at:
                append(chain[0])
                chain = chain[2]
                continue
            j = heads.get(id(chain))
            if j is not None and theirs[j] is chain:
                chain = own[j]
                break
            append(chain[0])
            chain = chain[2]
    while chain is not None:  # past the last move: the start's own marks only
        append(chain[0])
        chain = chain[2]
    found.reverse()
    return tuple(found)


PURE_WALK_MATCH = walk_match
"""The pure-Python :func:`walk_match`: the readable reference of ``kleene.runtime._nxt``."""
_compiled = load("kleene.runtime._nxt")
WALK_MATCH: Callable[[list[Record], Chain, int], tuple[int, ...]] = (
    walk_match if _compiled is None else _compiled.walk_match
)
"""Reading a match: :func:`walk_match`, or its compiled twin when that is built."""
