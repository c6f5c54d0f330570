"""The query's automaton as DOT text, as a picture, and ``kleene explain --dot/--output``.

The DOT text is parsed back here (states, initial arrow, final states, edge
labels) and checked against the automaton the engine runs.  The rendering
tests need Graphviz's ``dot`` program: without it they are skipped, saying
so; the DOT tests always run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

import kleene
from kleene.cli import main
from kleene.pictures.automaton import GraphvizMissingError

NEEDS_DOT = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot program is not installed (apt-get install graphviz): no picture to check",
)
PAIR = "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100]"


@dataclass
class Dot:
    states: dict[int, str]
    """State number -> shape (circle, doublecircle)."""
    initial: int
    edges: dict[tuple[int, int], list[str]]
    title: str

    @property
    def finals(self) -> set[int]:
        return {q for q, shape in self.states.items() if shape == "doublecircle"}

    def labels(self) -> list[str]:
        return sorted(label for ls in self.edges.values() for label in ls)


def parse_dot(text: str) -> Dot:
    assert text.startswith("digraph kleene {") and text.rstrip().endswith("}")
    states = {int(q): shape for q, shape in re.findall(r'^  q(\d+) \[label="q\d+", shape=(\w+)\];$', text, re.M)}
    (initial,) = re.findall(r"^  start -> q(\d+);$", text, re.M)
    edges: dict[tuple[int, int], list[str]] = {}
    for s, t, label in re.findall(r'^  q(\d+) -> q(\d+) \[label="(.*)"\];$', text, re.M):
        edges[(int(s), int(t))] = label.split("\\n")
    (title,) = re.findall(r'^  label="(.*)";$', text, re.M)
    return Dot(states, int(initial), edges, title.replace("\\l", "\n"))


def test_a_sequence_with_a_filter() -> None:
    q = kleene.compile(PAIR)
    dot = parse_dot(q.automaton_dot())
    assert q.plan.cea is not None
    assert len(dot.states) == q.plan.cea.num_states == 3
    assert dot.initial == q.plan.cea.initial and dot.finals == set(q.plan.cea.finals)
    assert dot.labels() == ["BUY as b •", "SELL as a [price > 100] •", "TRUE ◦"]
    (sell,) = [k for k, ls in dot.edges.items() if ls == ["SELL as a [price > 100] •"]]
    (buy,) = [k for k, ls in dot.edges.items() if ls == ["BUY as b •"]]
    assert sell[0] == dot.initial and sell[1] == buy[0] and buy[1] in dot.finals
    assert dot.edges[(buy[0], buy[0])] == ["TRUE ◦"]  # skip-till-any-match between a and b
    assert "SELECT * FROM S\nWHERE SELL as a; BUY as b\nFILTER a[price > 100]" in dot.title
    assert "complex event automaton (CEA)" in dot.title


def test_one_label_line_per_transition_of_the_engine_automaton() -> None:
    for text in (PAIR, "SELECT * WHERE A as x; (B OR C)+ as y; D FILTER y[v < 3] WITHIN 9 EVENTS"):
        q = kleene.compile(text)
        assert q.plan.cea is not None
        dot = parse_dot(q.automaton_dot())
        assert len(dot.labels()) == len(q.plan.cea.transitions)
        assert set(dot.edges) == {(t.source, t.target) for t in q.plan.cea.transitions}


def test_iteration_loops_on_its_variable() -> None:
    dot = parse_dot(kleene.compile("SELECT * WHERE SELL as a; BUY+ as b").automaton_dot())
    loops = [ls for (s, t), ls in dot.edges.items() if s == t and "BUY as b •" in ls]
    assert loops, dot.edges  # b+ reads more BUY events in the same state
    assert any("BUY as b •" in ls for (s, t), ls in dot.edges.items() if t in dot.finals)


def test_or_gives_one_label_per_branch() -> None:
    dot = parse_dot(kleene.compile("SELECT * WHERE (SELL OR BUY) as a; STOP").automaton_dot())
    first = dot.edges[next(k for k in dot.edges if k[0] == dot.initial)]
    assert sorted(first) == ["BUY as a •", "SELL as a •"]
    assert "STOP •" in dot.labels()


def test_projection_marks_only_selected_events() -> None:
    dot = parse_dot(kleene.compile("SELECT b FROM S WHERE SELL as a; BUY as b").automaton_dot())
    assert "SELL as a ◦" in dot.labels() and "BUY as b •" in dot.labels()


def test_the_register_automaton_shows_guards_and_registers() -> None:
    q = kleene.compile("SELECT * WHERE T as x ; H as y FILTER y[id = x.id] AND x[v > 2]")
    assert q.engine == "registers"
    dot = parse_dot(q.automaton_dot())
    labels = dot.labels()
    assert "T as x [v > 2] / x := event •" in labels
    assert "H as y if y[id == x.id] •" in labels or "H as y if y[id = x.id] •" in labels
    assert "symbolic register transducer (registers: x)" in dot.title
    assert len(dot.finals) == 1 and dot.initial not in dot.finals
    reached = {dot.initial} | {t for (_, t) in dot.edges}
    assert set(dot.states) == reached  # only states a run can reach are drawn


def test_quotes_in_the_query_are_escaped() -> None:
    text = kleene.compile("SELECT * WHERE A as a FILTER a[name = 'say \"hi\"']").automaton_dot()
    assert '\\"hi\\"' in text
    dot = parse_dot(text)
    assert len(dot.labels()) == 1


# ------------------------------------------------------------------- the CLI


def run_explain(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["explain", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_dot_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_explain(capsys, PAIR, "--dot")
    assert code == 0, err
    assert out == kleene.compile(PAIR).automaton_dot()
    assert "engine:" not in out  # only the DOT text: it can be piped into dot


def test_cli_dot_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "a.dot"
    code, out, err = run_explain(capsys, PAIR, "--output", str(target))
    assert code == 0, err
    assert target.read_text() == kleene.compile(PAIR).automaton_dot()
    assert "engine: tecs" in out and f"automaton drawn to {target}" in err


def test_cli_unknown_picture_format_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_explain(capsys, PAIR, "--output", str(tmp_path / "a.txt"))
    assert code == 2 and out == ""
    assert "choose a file ending in .svg, .png, .pdf, .dot" in err
    assert not (tmp_path / "a.txt").exists()


def test_without_graphviz_the_message_says_how_to_get_it(tmp_path: Path) -> None:
    target = tmp_path / "a.svg"
    env = {**os.environ, "PATH": str(tmp_path / "empty")}  # no dot on this PATH
    done = subprocess.run(
        [sys.executable, "-m", "kleene", "explain", PAIR, "--output", str(target)],
        capture_output=True, text=True, env=env,
    )
    assert done.returncode == 1, done.stderr
    for hint in ("apt-get install graphviz", "brew install graphviz", "conda install graphviz", "--dot"):
        assert hint in done.stderr
    assert not target.exists()
    # The DOT text needs no Graphviz.
    done = subprocess.run(
        [sys.executable, "-m", "kleene", "explain", PAIR, "--dot"],
        capture_output=True, text=True, env=env,
    )
    assert done.returncode == 0 and done.stdout.startswith("digraph kleene {")


def test_draw_raises_when_dot_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GraphvizMissingError, match="apt-get install graphviz"):
        kleene.compile(PAIR).draw(tmp_path / "a.png")
    assert kleene.compile(PAIR).draw(tmp_path / "a.gv").read_text().startswith("digraph")


@NEEDS_DOT
def test_render_svg_and_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg = tmp_path / "a.svg"
    code, _, err = run_explain(capsys, PAIR, "--output", str(svg))
    assert code == 0, err
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    texts = [t.text for t in root.iter() if t.tag.endswith("text")]
    assert "SELL as a [price &gt; 100] •" in texts or "SELL as a [price > 100] •" in texts
    assert {"q0", "q1", "q2"} <= set(texts)
    png = kleene.compile("SELECT * WHERE T as x ; H as y FILTER y[id = x.id]").draw(tmp_path / "r.png")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > 200 and height > 50


def test_cli_output_of_several_queries_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "two.ceql"
    f.write_text("QUERY a: SELECT * WHERE SELL\nQUERY b: SELECT * WHERE BUY\n")
    code, _, err = run_explain(capsys, str(f), "--output", str(tmp_path / "a.dot"))
    assert code == 2 and "QUERY holds several" in err
    code, out, err = run_explain(capsys, str(f), "--dot")
    assert code == 0 and out.count("digraph kleene {") == 2


def test_the_wildcard_and_counted_repetition_read_as_written() -> None:
    q = kleene.compile("SELECT * WHERE SELL as a; BUY{2} as b; _ as c; _")
    dot = parse_dot(q.automaton_dot())
    assert q.plan.cea is not None and len(dot.labels()) == len(q.plan.cea.transitions)
    assert dot.labels().count("BUY as b •") == 2  # {2}: two BUY events, one after the other
    assert "_ as c •" in dot.labels() and "_ •" in dot.labels()
