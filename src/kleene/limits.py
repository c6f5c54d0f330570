"""The limits that keep a query from growing until the operating system kills the process.

Every limit stops the run with a :class:`~kleene.language.errors.LimitError` that names the
limit, its value and the option that raises it (exit 2 in the CLI), checked while the thing
grows, so that it stops early:

* ``max_states``: states of the automaton while it is built (the CEA and its products for
  AND, ALL, UNLESS; transitions at most :data:`TRANSITIONS_PER_STATE` times as many), and
  states of its lazy determinization as events reach them;
* ``max_runs``: runs alive at once (the tECS engine counts its partitions, each holding the
  runs of one key; the register engine does not check it yet);
* ``max_matches``: complex events completed by one event (the output of ``A ; B+ ; C`` over a
  wide window grows exponentially with the window); ``LIMIT n`` below it cuts silently, as
  the query asked;
* ``max_held``: rows ``max_delay`` holds back at once (the reorder buffer,
  :mod:`kleene.io.reorder`), checked after each batch pushed into it has released the rows
  behind the watermark;
* ``max_memory``: the resident memory of the process, looked at per batch, per
  :data:`CHECK_EVERY` complex events (by the tECS engine) and by the reorder buffer of
  ``max_delay``.

The register engine (conditions between events) checks ``max_states`` while its automaton is
built, ``max_runs`` (its runs, or the pair join's indexed first events) and ``max_matches`` at
each event; the session looks at ``max_memory`` per batch for every engine.  The CLI turns a
``MemoryError`` that slips past them into a message (exit 2).

docs/reliability.md ("Limits and memory") lists them with their defaults and tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kleene.language.errors import KleeneError, LimitError

DEFAULT_MAX_STATES = 100_000
"""Automaton states (built or determinized); a query needing more is refused."""
TRANSITIONS_PER_STATE = 10
"""An automaton under construction may hold this many transitions per allowed state."""
DEFAULT_MAX_RUNS = 10_000_000
"""Runs (partitions for the tECS engine) alive at once."""
DEFAULT_MAX_MATCHES = 1_000_000
"""Complex events one event may complete."""
DEFAULT_MAX_HELD = 1_000_000
"""Rows ``max_delay`` may hold back at once (a day's delay over a fast feed holds millions)."""
CHECK_EVERY = 1 << 16
"""Complex events output between two looks at the resident memory."""

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def default_max_memory() -> int:
    """Three quarters of the memory this process may have: the machine's physical memory, or
    less when a cgroup (a container) caps it; a third of the address space when that is capped
    (``ulimit -v``, ``prlimit --as``: resident memory stays well below it).  8 GiB when the
    system does not say."""
    caps = []
    try:
        caps.append(int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) * 3 // 4)
    except (ValueError, OSError, AttributeError):
        caps.append(8 << 30)
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            caps.append(int(f.read().strip()) * 3 // 4)
    except (OSError, ValueError):
        pass  # no cgroup v2 limit ("max"), or not Linux
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            caps.append(soft // 3)
    except (ImportError, OSError, ValueError):
        pass
    return max(1, min(caps))


def resident_bytes() -> int | None:
    """The resident memory of this process now (None where ``/proc`` does not say)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def size_text(n: int) -> str:
    """``n`` bytes for a message: ``1.5 GiB``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True)
class Limits:
    """The limits of one run (all ints; see the module's docstring and :class:`InputOptions`)."""

    max_states: int = DEFAULT_MAX_STATES
    max_runs: int = DEFAULT_MAX_RUNS
    max_matches: int = DEFAULT_MAX_MATCHES
    max_memory: int = 0
    """Bytes of resident memory; 0: :func:`default_max_memory`."""
    max_held: int = DEFAULT_MAX_HELD

    def __post_init__(self) -> None:
        for name in ("max_states", "max_runs", "max_matches", "max_held"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise KleeneError(f"{name} must be a positive integer, not {value!r}")
        if self.max_memory == 0:
            object.__setattr__(self, "max_memory", default_max_memory())

    def states_error(self, what: str, states: int, transitions: int | None = None) -> LimitError:
        """The error of an automaton that passed ``max_states`` (or its transitions' bound)."""
        if transitions is None:
            size = f"{states:,} states"
        else:
            size = f"{transitions:,} transitions (at most {TRANSITIONS_PER_STATE} per allowed state)"
        return LimitError(
            f"{what} passed {size}: the limit is max_states = {self.max_states:,}. Simplify the "
            "query (AND, ALL and UNLESS multiply the automata of their sides), or raise the "
            "limit with --max-states N (max_states=N in Python)",
            "max_states", self.max_states,
        )

    def check_states(self, what: str, states: int, transitions: int = 0) -> None:
        """Raise when ``states`` or ``transitions`` passed the limit."""
        if states > self.max_states:
            raise self.states_error(what, states)
        if transitions > self.max_states * TRANSITIONS_PER_STATE:
            raise self.states_error(what, states, transitions)

    def runs_error(self, runs: int, what: str = "runs") -> LimitError:
        return LimitError(
            f"{runs:,} {what} alive at once passed the limit max_runs = {self.max_runs:,}: "
            "narrow the window or the partitions, or raise the limit with --max-runs N "
            "(max_runs=N in Python)",
            "max_runs", self.max_runs,
        )

    def matches_error(self, position: int) -> LimitError:
        return LimitError(
            f"the event at input position {position} completes more than {self.max_matches:,} "
            f"complex events: the limit is max_matches = {self.max_matches:,} per event. Add "
            "LIMIT n to the query to keep the first n, narrow the window, or raise the limit "
            "with --max-matches N (max_matches=N in Python)",
            "max_matches", self.max_matches,
        )

    def held_error(self, held: int, delay: str, row: int) -> LimitError:
        """``max_delay`` holds back more rows than ``max_held`` (the reorder buffer)."""
        return LimitError(
            f"holding back {held:,} rows for max_delay = {delay} (--max-delay) passed the limit "
            f"max_held = {self.max_held:,} rows by input row {row}: lower --max-delay to the "
            "disorder the input really has, sort the input beforehand (--sort), or raise the "
            "limit with --max-held N (max_held=N in Python)",
            "max_held", self.max_held,
        )

    def check_memory(self, where: str) -> None:
        """Raise when the process's resident memory passed ``max_memory``."""
        now = resident_bytes()
        if now is not None and now > self.max_memory:
            raise self.memory_error(now, where)

    def memory_error(self, now: int, where: str) -> LimitError:
        return LimitError(
            f"kleene's process holds {size_text(now)} of memory {where}, past the limit "
            f"max_memory = {size_text(self.max_memory)}: narrow the window, add LIMIT n, or "
            "raise the limit with --max-memory SIZE (max_memory= in Python)",
            "max_memory", self.max_memory,
        )
