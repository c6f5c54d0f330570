"""A compiled query's plan: what the planner decided, frozen, and the engine it builds.

The plan is the one place that knows which engine evaluates a query; a
session asks it for a fresh engine (:meth:`Plan.build_engine`) and talks to
that through the one contract, :class:`~kleene.runtime.contract.BatchEngine`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from kleene.language import ast
from kleene.language.printer import window_to_ceql
from kleene.language.schema import Schema
from kleene.options import InputOptions
from kleene.predicates.atoms import Atoms
from kleene.predicates.conform import Requirement
from kleene.predicates.table import PredicateTable
from kleene.runtime.contract import BatchEngine
from kleene.runtime.settings import Settings

if TYPE_CHECKING:
    from kleene.automata.cea import CEA
    from kleene.automata.compile import Labels
    from kleene.registers.srt import SRT


@dataclass(frozen=True)
class Tuning:
    """Choices that change how a query is evaluated, never what it returns.

    Tests and benchmarks turn them to compare paths; users need not.
    ``register_runtime`` forces a runtime of the register engine
    (``"merged"``, ``"runs"``, ``"windowed"``); None lets the planner choose, and
    ``windowed`` lets it choose the windowed runtime where that applies.
    """

    skip_inert: bool = True
    """Skip events that cannot change any run (kleene.runtime.engine)."""
    lookahead: bool = True
    """Skip events no complex event can contain (kleene.runtime.lookahead)."""
    windowed: bool = False
    register_runtime: str | None = None
    aggregates: bool = True
    """Count by aggregates over register values where the query allows it
    (kleene.registers.aggregate); False keeps the merged runs' count."""


RUNTIME_EXPLAINED = {
    "pairs": "vectorized pair join over a per-window index of first events",
    "windowed": (
        "the SRT unrolled under the window (a tree of walks of at most n+1 events, "
        "each register written once) and determinized lazily: one subset of tree nodes "
        "per partition, registers read from the last n+1 events, subset transitions cached "
        "per minterm; hands over to runs if the cache misses on more than 10% of events"
    ),
    "runs": "runs (state, registers, start, positions), merged when equal",
    "merged": (
        "runs merged by (state, registers): one run per distinct register values, its "
        "starts and positions shared in a tECS (output-linear enumeration under the window)"
    ),
}
"""What ``explain()`` says about each runtime of the register engine."""


@dataclass(frozen=True, eq=False)
class Plan:
    """Everything decided about one query before the first event (see kleene.planning.planner).

    ``predicates`` numbers string values across batches as it meets them (a
    cache: the bits of a value never change), so it is shared by the plan's
    sessions like the lazily determinized automaton's transitions.
    """

    query: ast.Query
    text: str
    schema: Schema | None
    options: InputOptions
    tuning: Tuning
    engine: str
    """``"tecs"`` (CORE's algorithm) or ``"registers"`` (SRT runs)."""
    engine_reason: str
    atoms: Atoms
    cea: CEA | None
    labels: Labels | None
    """The labels of a strategy's whole-match automaton, to project chosen matches."""
    srt: SRT | None
    register_runtime: str | None
    """For the register engine: ``"pairs"``, ``"merged"``, ``"windowed"`` or ``"runs"``."""
    settings: Settings
    predicates: PredicateTable
    requirements: dict[str, Requirement]
    """Which attributes must be valid on which event types (conform)."""
    untyped: dict[str, frozenset[str]]
    """Attributes compared only with other events' values: kinded by the input's columns."""
    partition_by: tuple[str, ...]
    columns: tuple[str, ...]
    """The input columns the query reads (type, filters, time, window, partitions, stream)."""
    attrs: tuple[str, ...] | None
    """Attributes to show per event (``SELECT a[x, y]``); None for all."""
    from_streams: frozenset[str] | None
    """The streams the query reads (None: every event of the input)."""

    @property
    def type_column(self) -> str | None:
        """The input column of event types, None when the query names none (only ``_``)."""
        return self.options.type_column if self.atoms.event_types else None

    def build_engine(self) -> BatchEngine:
        """A fresh engine of the kind the planner chose, in its initial state."""
        if self.srt is not None:
            # Loaded only by queries with conditions between events: most runs never need
            # the register engine, and importing it costs start-up time (each runtime too).
            from kleene.registers.runtime import RegisterEngine

            settings = self.settings
            runtime: type[RegisterEngine] = RegisterEngine
            if self.register_runtime == "windowed":
                from kleene.registers.window_runtime import WindowedEngine

                runtime = WindowedEngine
            elif self.register_runtime == "merged":
                from kleene.registers.merged import MergedEngine

                runtime = MergedEngine
            extra = {"aggregates": self.tuning.aggregates} if self.register_runtime == "merged" else {}
            return runtime(
                self.srt,
                **extra,
                window=settings.window,
                partitioned=settings.partitioned,
                consume=settings.consume,
                limit=settings.limit,
                strategy=settings.strategy,
                type_column=self.options.type_column,
                limits=self.options.limits,
            )
        # CORE's engine, loaded only by the queries it runs (start-up time of the others)
        from kleene.automata.determinize import LazyDFA
        from kleene.runtime.engine import Engine
        from kleene.runtime.projection import Projector

        assert self.cea is not None
        projector = None
        if self.labels is not None:  # a fresh projector: it keeps this engine's events
            projector = Projector(self.cea, self.labels)
        return Engine(
            LazyDFA(self.cea, self.options.limits),
            self.settings,
            skip_inert=self.tuning.skip_inert,
            lookahead=self.tuning.lookahead,
            projector=projector,
            limits=self.options.limits,
        )

    def requirements_for(self, schema: pa.Schema) -> dict[str, Requirement]:
        """:attr:`requirements`, plus the attributes of unknown kind, kinded by the input's columns.

        ``b[price < a.price]`` gives ``price`` no kind (it is only compared with
        itself); its values must still be valid, of the kind its column has.
        """
        if not self.untyped:
            return self.requirements
        out = dict(self.requirements)
        for attr, types in self.untyped.items():
            if attr not in schema.names:
                continue
            t = schema.field(attr).type
            if pa.types.is_dictionary(t):
                t = t.value_type
            if pa.types.is_boolean(t):
                kind = "boolean"
            elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
                kind = "number"
            elif pa.types.is_string(t) or pa.types.is_large_string(t):
                kind = "string"
            else:
                continue
            out[attr] = Requirement(kind, None if "_" in types else types)  # `_`: every row
        return out

    def explain(self) -> str:
        """Which engine evaluates this query, why, and what it compiled to."""
        lines = [f"engine: {self.engine}", f"why: {self.engine_reason}"]
        if self.srt is not None:
            srt = self.srt
            transitions = sum(len(ts) for ts in srt.labelled)
            lines.append(
                f"automaton: symbolic register transducer, {srt.num_states} states, "
                f"{transitions} transitions, registers: "
                + (", ".join(srt.register_names) or "none")
            )
            lines.append(
                f"prefilter: {len(srt.event_types)} event types and {len(srt.preds)} unary "
                "predicates evaluated vectorized; "
                + (
                    "every event visited (a nested selector's product)"
                    if srt.selectors
                    else "every event visited (contiguity)"
                    if srt.contiguous or self.query.select.strategy == "STRICT"
                    else "every event visited (UNLESS: its monitors may start on any event)"
                    if srt.monitors
                    else "only events some transition accepts are visited"
                )
            )
            if srt.selectors:
                lines.append(
                    f"nested selectors: {', '.join(srt.selectors)}, each a finite product over "
                    "unary predicates (the tECS engine's) carried in the automaton's states, "
                    "entered where the tECS engine enters it; merged runs and the run index do "
                    "not apply (its runs move on every event)"
                )
            if srt.anchored:
                lines.append(
                    "anchored: a selector starts the pattern, so one run per partition starts at "
                    "its first event and waits (a match starts at its first bound event)"
                )
            lines.append("runtime: " + RUNTIME_EXPLAINED[self.register_runtime or "runs"])
            for k, seeded in enumerate(srt.seeded):
                if seeded:  # issue 18: the right side reads the left side's variables
                    names = ", ".join(srt.register_names[r] for r in seeded)
                    lines.append(
                        f"UNLESS #{k + 1}: its right side reads {names} (the left match's first "
                        "event): run once per left start still held by a run (seeded monitor)"
                    )
            if self.register_runtime != "pairs":
                from kleene.registers.index import describe

                lines.append(describe(srt, self.settings.strategy, self.settings.limit))
            if self.register_runtime == "merged" and self.tuning.aggregates:
                from kleene.registers.aggregate import describe as counting

                s = self.settings
                lines.append(counting(srt, s.strategy, s.limit, s.consume))
        elif self.cea is not None:
            lines.append(
                f"automaton: complex event automaton, {self.cea.num_states} states, "
                f"{len(self.cea.transitions)} transitions, determinized lazily"
            )
            if self.cea.anchored:
                lines.append(
                    "anchored: a selector starts the pattern, so its runs start at the stream's "
                    "start (per partition) and wait for their first event, every event stepped"
                )
        lines.extend(self._input_lines())
        return "\n".join(lines)

    def _input_lines(self) -> list[str]:
        """What the plan reads of the input: the part of explain() the input options change."""
        opts = self.options
        lines = []
        window = self.query.within
        if window is not None:
            text = f"window: WITHIN {window_to_ceql(window)}"
            if isinstance(window, ast.DurationWindow):
                text += (
                    f", on the time column {opts.time_column!r} (unit {opts.time_unit} if numeric)"
                    if opts.time_column is not None
                    else "; running it needs a time column (--time-column, time_column=)"
                )
            lines.append(text)
        if self.partition_by:
            lines.append("partitions: one per value of " + ", ".join(self.partition_by))
        if opts.stream_column is not None:
            lines.append(
                f"streams: from the column {opts.stream_column!r}"
                + (f", reading {', '.join(sorted(self.from_streams))}" if self.from_streams else "")
            )
        typed = (
            f"event type in {self.type_column!r}"
            if self.type_column is not None
            else "no event type column: every event pattern is _"
        )
        lines.append(f"reads columns: {', '.join(self.columns)} ({typed})")
        return lines
