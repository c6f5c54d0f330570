"""An index of the runs waiting at a state, by the register value a guard compares with.

A run at a *stationary* state (a gap, ``;``) waits for an event that one of
the state's labelled transitions accepts, e.g. in ``SELL as s; BUY+ as t
FILTER t[price > s.price]`` every SELL of the window waits for a BUY priced
above it.  Trying every waiting run on every event costs ``O(w)`` per event
for a window of ``w`` events.  When a transition's guard has a conjunct
``E op K`` with ``E`` reading only the current event and ``K`` reading only
registers (``price > s.price``, ``name = a.name``, ``2 * price >= a.price``;
``op`` one of ``< <= > >= =``), the runs are kept ordered by ``K`` (sorted
lists and ``bisect``; a dict for ``=``), and an event takes, with one or two
binary searches, exactly the runs for which the conjunct holds.  Those are
then tried as before (every guard), so results are unchanged, and the cost per
event is ``O(log w)`` plus the runs that pass the indexed conjunct, which is
at most the runs the event moves (new partial matches or complex events).

Keys are ``(kind, value)`` (:func:`kleene.registers.guards.compile_key`):
values of different kinds never compare, so each kind has its own ordered
list; a run whose key is undefined (null, NaN, an empty register) can never
pass the conjunct and is not in that transition's index.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kleene.language import ast
from kleene.registers.guards import Event, Key, Registers, compile_key
from kleene.registers.srt import SRT, Condition, RTransition

FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}
"""``K op E`` is ``E FLIP[op] K``."""


def _reads_event(node: Any, target: str) -> bool:
    """Does an expression read the current event (``attr``, ``target.attr``)?"""
    if isinstance(node, ast.Attr):
        return True
    if isinstance(node, ast.VarAttr):
        return node.var == target and not node.prev
    return any(
        _reads_event(child, target)
        for name in ("left", "right", "operand")
        if (child := getattr(node, name, None)) is not None
    )


def _reads_registers(node: Any, target: str) -> bool:
    if isinstance(node, ast.VarAttr):
        return node.prev or node.var != target
    return any(
        _reads_registers(child, target)
        for name in ("left", "right", "operand")
        if (child := getattr(node, name, None)) is not None
    )


@dataclass(frozen=True)
class Probe:
    """How a transition's indexed conjunct ``event op key`` selects runs."""

    op: str
    event: Callable[[Event, Registers], Key | None]
    """The conjunct's side over the current event."""
    key: Callable[[Event, Registers], Key | None]
    """The conjunct's side over the registers (the run's key)."""
    target: str = ""
    """The variable whose condition it is (for explain())."""


def probe_for(t: RTransition, attributes: Sequence[str]) -> Probe | None:
    """The first conjunct of ``t``'s guards that the index can answer, or None."""
    attrs = {a: k for k, a in enumerate(attributes)}
    for c in t.conditions:
        probe = _probe(c, attrs)
        if probe is not None:
            return probe
    return None


def _probe(c: Condition, attrs: dict[str, int]) -> Probe | None:
    p = c.pred
    if c.vacuous_when_empty or not isinstance(p, ast.Compare) or p.op not in FLIP:
        return None
    x, slots = c.target, dict(c.slots)
    left, right = p.left, p.right
    l_event, l_regs = _reads_event(left, x), _reads_registers(left, x)
    r_event, r_regs = _reads_event(right, x), _reads_registers(right, x)
    if l_event and not l_regs and r_regs and not r_event:
        return Probe(p.op, compile_key(left, x, slots, attrs), compile_key(right, x, slots, attrs), x)
    if r_event and not r_regs and l_regs and not l_event:
        return Probe(
            FLIP[p.op], compile_key(right, x, slots, attrs), compile_key(left, x, slots, attrs), x
        )
    return None


def probes(srt: SRT) -> list[list[Probe | None]]:
    """Per state, per labelled transition: its probe (only at stationary states)."""
    return [
        [probe_for(t, srt.attributes) if srt.stationary[q] else None for t in srt.labelled[q]]
        for q in range(srt.num_states)
    ]


class RunIndex:
    """The runs waiting at one state of one partition, indexed per labelled transition."""

    __slots__ = ("by_key", "ordered", "probes", "runs")

    def __init__(self, probes: Sequence[Probe | None]) -> None:
        self.probes = probes
        self.runs: dict[Hashable, Key | None] = {}
        """Every run waiting here (insertion order)."""
        self.ordered: list[dict[int, tuple[list[Any], list[Hashable]]]] = [{} for _ in probes]
        """Per transition with an ordering probe: per kind, sorted keys and their runs."""
        self.by_key: list[dict[Key, dict[Hashable, None]]] = [{} for _ in probes]
        """Per transition with an ``=`` probe: the runs of each key."""

    def __len__(self) -> int:
        return len(self.runs)

    def add(self, run: Any) -> bool:
        """Index ``run`` (False: it was already here)."""
        if run in self.runs:
            return False
        self.runs[run] = None
        regs = run[1]
        for k, probe in enumerate(self.probes):
            if probe is None:
                continue
            key = probe.key((), regs)
            if key is None:
                continue
            if probe.op == "==":
                self.by_key[k].setdefault(key, {})[run] = None
            else:
                kind, value = key
                keys, runs = self.ordered[k].setdefault(kind, ([], []))
                i = bisect_right(keys, value)
                keys.insert(i, value)
                runs.insert(i, run)
        return True

    def remove(self, run: Any) -> None:
        """Forget ``run`` (nothing if it is not here)."""
        if run not in self.runs:
            return
        del self.runs[run]
        regs = run[1]
        for k, probe in enumerate(self.probes):
            if probe is None:
                continue
            key = probe.key((), regs)
            if key is None:
                continue
            if probe.op == "==":
                bucket = self.by_key[k][key]
                del bucket[run]
                if not bucket:
                    del self.by_key[k][key]
                continue
            kind, value = key
            keys, runs = self.ordered[k][kind]
            i = bisect_left(keys, value)
            while runs[i] != run:
                i += 1
            del keys[i], runs[i]

    def candidates(self, k: int, event: Event) -> Iterator[Any]:
        """The runs for which transition ``k``'s indexed conjunct holds on ``event``
        (every run when ``k`` has no probe)."""
        probe = self.probes[k]
        if probe is None:
            return iter(list(self.runs))
        key = probe.event(event, ())
        if key is None:
            return iter(())
        kind, value = key
        if probe.op == "==":
            return iter(list(self.by_key[k].get(key, ())))
        found = self.ordered[k].get(kind)
        if found is None:
            return iter(())
        keys, runs = found
        op = probe.op
        if op == ">":  # key < value
            return iter(runs[: bisect_left(keys, value)])
        if op == ">=":
            return iter(runs[: bisect_right(keys, value)])
        if op == "<":  # key > value
            return iter(runs[bisect_right(keys, value):])
        return iter(runs[bisect_left(keys, value):])



def applies(srt: SRT, strategy: str, limit: int | None) -> bool:
    """Whether the runs engine parks runs at stationary states in run indexes.

    Not under STRICT (no state is stationary), UNLESS (its monitors step every
    run), LIMIT, and the strategies that choose among an event's complex
    events: these take them in the order the runs produce them; nor with a nested
    selector (kleene.registers.selectors), whose product moves its runs on every event.
    """
    return strategy in ("ALL", "ANY") and limit is None and not srt.monitors and not srt.selectors


def describe(srt: SRT, strategy: str, limit: int | None) -> str:
    """``explain()``'s line about the run index."""
    if not applies(srt, strategy, limit):
        return (
            "run index: off (LIMIT, UNLESS, a nested selector or a strategy other than ALL/ANY): "
            "every run tried"
        )
    found = [f"{p.target} ({p.op})" for ps in probes(srt) for p in ps if p is not None]
    if not found:
        return "run index: runs wait at gap states, tried only by events their transitions accept"
    return (
        "run index: runs wait at gap states, ordered by the register value the conditions of "
        f"{', '.join(dict.fromkeys(found))} compare with (bisect, or a dict for =): an event "
        "tries only the runs its condition selects"
    )
