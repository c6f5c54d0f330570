"""A query's automaton as a picture: Graphviz DOT text, rendered by Graphviz's ``dot`` program.

The picture shows the automaton the engine runs, labelled in the query's own
words rather than predicate bit numbers: for the tECS engine the CEA of the
CORE paper, each transition read as ``SELL as a [price > 100] •`` (the event
type, the variables the event is bound to, the unary predicates it must
satisfy, and • when the event is part of the output, ◦ when it is skipped);
for the register engine the symbolic register transducer, whose transitions
also carry their guards (``b[price < a.price]``) and the registers they
write.  Initial state: an arrow from nowhere; final states: double circles.

Rendering calls Graphviz's ``dot`` program directly (no Python package
needed): it is a system program, and its absence is reported with the ways
to install it.  DOT text needs nothing.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kleene.automata.cea import Transition
from kleene.automata.compile import compile_named
from kleene.automata.fragments import NOT_LABEL
from kleene.language import ast
from kleene.language.conditions import without_self_references
from kleene.language.errors import KleeneError
from kleene.language.printer import pred_to_ceql, quote_name
from kleene.language.variables import WILDCARD
from kleene.pictures.text import query_lines
from kleene.planning.planner import WHOLE_MATCH_STRATEGIES

if TYPE_CHECKING:
    from kleene.planning.plan import Plan
    from kleene.registers.srt import SRT, RTransition

RENDERED = {".svg": "svg", ".png": "png", ".pdf": "pdf"}
"""Picture formats by file extension; ``.dot`` and ``.gv`` are the DOT text itself."""
DRAWN_AS = (*RENDERED, ".dot", ".gv")

GRAPHVIZ_HINT = (
    "Graphviz's 'dot' program is needed to render the automaton as a picture; install it "
    "with 'apt-get install graphviz' (Debian, Ubuntu), 'brew install graphviz' (macOS) or "
    "'conda install graphviz', or write the DOT text with --dot (or an --output ending in "
    ".dot), which needs nothing"
)
MARKED, SKIPPED = "•", "◦"


class GraphvizMissingError(KleeneError):
    """Graphviz's ``dot`` program is not on the PATH (the message says how to get it)."""


def automaton_dot(plan: Plan) -> str:
    """The DOT text of the automaton of ``plan`` (see the module docstring)."""
    if plan.srt is not None:
        return _srt_dot(plan, plan.srt)
    return _cea_dot(plan)


def render(dot: str, path: str | Path) -> Path:
    """Write ``dot`` to ``path``: as text for ``.dot``/``.gv``, else rendered by Graphviz."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".dot", ".gv"):
        path.write_text(dot, encoding="utf-8")
        return path
    fmt = RENDERED.get(suffix)
    if fmt is None:
        raise KleeneError(
            f"cannot draw the automaton as {path.name!r}: choose a file ending in {', '.join(DRAWN_AS)}"
        )
    program = shutil.which("dot")
    if program is None:
        raise GraphvizMissingError(GRAPHVIZ_HINT)
    done = subprocess.run(
        [program, f"-T{fmt}", "-o", str(path)], input=dot.encode("utf-8"), capture_output=True
    )
    if done.returncode != 0:
        raise KleeneError(f"Graphviz failed: {done.stderr.decode(errors='replace').strip()}")
    return path


# -------------------------------------------------------------------- the CEA


def _cea_dot(plan: Plan) -> str:
    """The CEA the planner built, recompiled with the names each transition binds."""
    query = plan.query
    items = query.select.items
    projection = None if items is None else frozenset(i.var for i in items)
    whole = projection is not None and query.select.strategy in WHOLE_MATCH_STRATEGIES
    cea, names = compile_named(
        without_self_references(query.where),
        plan.atoms,
        None if whole else projection,
        strict=not whole and query.select.strategy == "STRICT",
    )
    assert plan.cea is None or cea == plan.cea, "the drawing must show the automaton that runs"
    kept = plan.labels or {}
    edges: dict[tuple[int, int], list[str]] = {}
    for t in cea.transitions:
        binds = " | ".join(
            sorted({_bound(v, plan.atoms.event_types, t.mask) for v in names[t] if v})
        )
        label = _atoms_text(
            plan.atoms.event_types, plan.atoms.preds, plan.atoms.streams, t.mask, t.neg, binds
        )
        edges.setdefault((t.source, t.target), []).append(f"{label} {_mark(t, kept)}")
    return _graph(
        plan, "complex event automaton (CEA)", range(cea.num_states), cea.initial, cea.finals, edges
    )


def _mark(t: Transition, kept: dict[Transition, frozenset[bool]]) -> str:
    if not t.marked:
        return SKIPPED
    if t in kept and True not in kept[t]:  # NEXT/LAST/MAX compare it, SELECT drops it
        return MARKED + " (not selected)"
    return MARKED


def _bound(names: frozenset[str], types: list[str], mask: int) -> str:
    """``as a, b``: the variables besides the event type the transition tests (``_ as c``
    for the wildcard event)."""
    tested = {n for i, n in enumerate(types) if mask >> i & 1}
    variables = sorted(n for n in names - tested - {WILDCARD} if n != NOT_LABEL)
    text = "as " + ", ".join(quote_name(v) for v in variables) if variables else ""
    if WILDCARD in names and not tested:  # the wildcard event: it tests no type
        return f"{WILDCARD} {text}".rstrip()
    return text


def _atoms_text(
    types: Iterable[str],
    preds: Iterable[ast.Pred],
    streams: Iterable[str],
    mask: int,
    neg: int,
    binds: str = "",
) -> str:
    """A conjunction of atoms in CEQL words, the variables after the event type:
    ``S>SELL as a [price > 100] NOT [volume < 5]``."""
    type_names = [quote_name(t) for t in types]
    pred_texts = [f"[{_plain(pred_to_ceql(p))}]" for p in preds]
    stream_names = [quote_name(s) for s in streams]
    words = type_names + pred_texts + [f"stream {s}" for s in stream_names]
    stream_base = len(type_names) + len(pred_texts)
    stream = next((s for k, s in enumerate(stream_names) if mask >> (stream_base + k) & 1), None)
    out: list[str] = []
    for i, word in enumerate(words[:stream_base]):
        if i == len(type_names) and binds:
            out.append(binds)
        if mask >> i & 1:
            out.append(f"{stream}>{word}" if stream is not None and i < len(type_names) else word)
    if binds and len(type_names) >= stream_base:
        out.append(binds)
    out += ["NOT " + word for i, word in enumerate(words) if neg >> i & 1]
    return " ".join(out) or "TRUE"


def _plain(text: str) -> str:
    """``(price > 100)`` without the printer's outer parentheses, when they enclose it all."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(text) - 1:
            return text
    return text[1:-1]


# -------------------------------------------------------- the register automaton


def _srt_dot(plan: Plan, srt: SRT) -> str:
    """The states reachable from the initial one (ε-elimination leaves others behind), with
    the TRUE ◦ loop of each state where a run waits (``stationary``) and that it may leave."""
    edges: dict[tuple[int, int], list[str]] = {}
    reached, todo = {srt.initial}, [srt.initial]
    while todo:
        q = todo.pop()
        for t in (*srt.labelled[q], *srt.gaps[q]):
            edges.setdefault((t.source, t.target), []).append(_srt_label(srt, t))
            if t.target not in reached:
                reached.add(t.target)
                todo.append(t.target)
        if srt.stationary[q] and q != srt.initial and not srt.dead[q]:
            edges.setdefault((q, q), []).append(f"TRUE {SKIPPED}")
    title = "symbolic register transducer (registers: " + (", ".join(srt.register_names) or "none") + ")"
    if srt.monitors:
        title += f"; {len(srt.monitors)} UNLESS monitor(s) not drawn"
    return _graph(plan, title, sorted(reached), srt.initial, srt.finals, edges)


def _srt_label(srt: SRT, t: RTransition) -> str:
    binds = _bound(t.variables, list(srt.event_types), t.mask)
    parts = [_atoms_text(srt.event_types, srt.preds, srt.streams, t.mask, t.neg, binds)]
    parts += [f"if {quote_name(c.target)}[{_plain(pred_to_ceql(c.pred))}]" for c in t.conditions]
    if t.writes:
        parts.append("/ " + ", ".join(f"{srt.register_names[r]} := event" for r in t.writes))
    if t.clears:
        parts.append("clear " + ", ".join(srt.register_names[r] for r in t.clears))
    if t.checks:
        parts.append("UNLESS check")
    mark = MARKED if t.marked and not t.hidden else SKIPPED if not t.marked else MARKED + " (not selected)"
    return " ".join(p for p in parts if p) + " " + mark


# --------------------------------------------------------------- the DOT text


def _graph(
    plan: Plan,
    kind: str,
    states: Iterable[int],
    initial: int,
    finals: frozenset[int],
    edges: dict[tuple[int, int], list[str]],
) -> str:
    title = "\n".join(
        [*query_lines(plan.query, plan.text), f"{kind}: • event in the complex event, ◦ skipped"]
    )
    lines = [
        "digraph kleene {",
        "  rankdir=LR;",
        f"  label={_quote(title, end_of_line=chr(92) + 'l')};",
        "  labelloc=t;",
        '  fontname="Helvetica";',
        '  node [shape=circle, fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=11];',
        '  start [shape=point, label=""];',
    ]
    for q in states:
        shape = "doublecircle" if q in finals else "circle"
        lines.append(f"  q{q} [label=\"q{q}\", shape={shape}];")
    lines.append(f"  start -> q{initial};")
    for (source, target), labels in sorted(edges.items()):
        lines.append(f"  q{source} -> q{target} [label={_quote(chr(10).join(labels))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _quote(text: str, end_of_line: str = "\\n") -> str:
    """A DOT string: quotes and backslashes escaped, newlines as centred line breaks
    (``\\l``: left-justified lines, then every line ends with one)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", end_of_line)
    return '"' + escaped + (end_of_line if end_of_line != "\\n" else "") + '"'
