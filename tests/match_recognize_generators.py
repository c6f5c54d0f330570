"""Hypothesis strategies for MATCH_RECOGNIZE: random patterns, DEFINE conditions and inputs.

Patterns are drawn as :mod:`kleene.language.match_recognize.ast` trees over the
variables A, B, C (concatenation, alternation, greedy and reluctant quantifiers
with small bounds, PERMUTE, optional exclusions and anchors) and rendered with
:func:`~kleene.language.match_recognize.printer.pattern_text`.  DEFINE
conditions come from a pool that mixes conditions on the current row, physical
navigation, running aggregates and references to other variables (so that the
path matters), and may leave a variable undefined (true).  Inputs have a
partition key ``k`` (0..1), an order key ``t`` and small values ``v`` (0..3),
so that conditions hold often enough to give matches of several rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from kleene.language.match_recognize import ast
from kleene.language.match_recognize.checks import pattern_variables
from kleene.language.match_recognize.printer import pattern_text

VARIABLES = ("A", "B", "C")

CONDITIONS = (
    "v > PREV(v)", "v < PREV(v)", "v >= PREV(v)", "v = PREV(v)", "v <= 1", "v >= 2", "v = 0",
    "MOD(v, 2) = 0", "v <> NEXT(v)", "COUNT({x}.*) <= 2", "SUM({x}.v) < 5",
    "LAST({x}.v, 1) IS NULL OR v > LAST({x}.v, 1)", "v >= {y}.v", "{y}.v IS NULL OR v < {y}.v",
    "AVG({y}.v) > 1", "v <> FIRST(v)",
)


@dataclass(frozen=True)
class Case:
    """One drawn case: the pattern, DEFINE conditions by variable, the input rows."""

    pattern: ast.Pattern
    defines: tuple[tuple[str, str], ...]
    rows: tuple[tuple[int, int, int], ...]  # (k, t, v)

    def records(self) -> list[dict[str, Any]]:
        return [{"id": i, "k": k, "t": t, "v": v} for i, (k, t, v) in enumerate(self.rows)]

    def query(self, measures: str, rows: str = "ONE ROW PER MATCH", skip: str = "PAST LAST ROW",
              pattern: ast.Pattern | None = None) -> str:
        define = ""
        if self.defines:
            define = "DEFINE " + ", ".join(f"{v} AS {c}" for v, c in self.defines)
        return (f"PARTITION BY k ORDER BY t MEASURES {measures} {rows} AFTER MATCH SKIP {skip} "
                f"PATTERN ({pattern_text(pattern or self.pattern)}) {define}")

    @property
    def variables(self) -> list[str]:
        return pattern_variables(self.pattern)


def _quantify(draw: st.DrawFn, body: ast.Pattern) -> ast.Pattern:
    low, high = draw(st.sampled_from([(0, None), (1, None), (0, 1), (2, 2), (1, 3), (0, 2),
                                      (2, None)]))
    return ast.Quantified(body, low, high, greedy=draw(st.booleans()))


@st.composite
def patterns(draw: st.DrawFn, depth: int = 3, exclusion: bool = False) -> ast.Pattern:
    """A random row pattern of bounded depth."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        leaf: ast.Pattern = ast.Var(draw(st.sampled_from(VARIABLES)))
        if draw(st.integers(0, 2)) == 0:
            leaf = _quantify(draw, leaf)
        return leaf
    kind = draw(st.sampled_from(["concat", "concat", "alt", "quant", "permute", "exclude", "anchor"]))
    sub = patterns(depth - 1, exclusion)
    if kind == "concat":
        return ast.Concat(tuple(draw(st.lists(sub, min_size=2, max_size=3))))
    if kind == "alt":
        return ast.Alternation(tuple(draw(st.lists(sub, min_size=2, max_size=3))))
    if kind == "permute":
        return ast.Permute(tuple(draw(st.lists(sub, min_size=2, max_size=3))))
    if kind == "exclude" and exclusion:
        return ast.Exclude(draw(sub))
    if kind == "anchor":
        anchor = ast.Anchor(draw(st.booleans()))
        inner = draw(sub)
        return ast.Concat((anchor, inner) if anchor.start else (inner, anchor))
    return _quantify(draw, draw(sub))


@st.composite
def cases(draw: st.DrawFn, exclusion: bool = False, max_rows: int = 10,
          undefined: float = 0.2, min_rows: int = 1) -> Case:
    """A case; ``undefined`` is the chance that a variable has no DEFINE (always true)."""
    pattern = draw(patterns(exclusion=exclusion))
    used = pattern_variables(pattern)
    defines = []
    for var in used:
        if draw(st.integers(0, 99)) < undefined * 100:
            continue  # undefined: always true
        others = [v for v in used if v != var] or [var]
        text = draw(st.sampled_from(CONDITIONS)).format(x=var, y=draw(st.sampled_from(others)))
        defines.append((var, text))
    n = draw(st.integers(min_rows, max_rows))
    rows = tuple((draw(st.integers(0, 1)), t, draw(st.integers(0, 3))) for t in range(n))
    return Case(pattern, tuple(defines), rows)


def flip_greediness(p: ast.Pattern) -> ast.Pattern:
    """The same pattern with every quantifier's greediness reversed."""
    if isinstance(p, ast.Quantified):
        return ast.Quantified(flip_greediness(p.body), p.low, p.high, not p.greedy)
    if isinstance(p, ast.Concat):
        return ast.Concat(tuple(flip_greediness(i) for i in p.items))
    if isinstance(p, ast.Alternation):
        return ast.Alternation(tuple(flip_greediness(i) for i in p.items))
    if isinstance(p, ast.Permute):
        return ast.Permute(tuple(flip_greediness(i) for i in p.items))
    if isinstance(p, ast.Exclude):
        return ast.Exclude(flip_greediness(p.body))
    return p


def has_quantifier(p: ast.Pattern) -> bool:
    return flip_greediness(p) != p


def strip_exclusions(p: ast.Pattern) -> ast.Pattern:
    """The same pattern with every ``{- p -}`` replaced by ``(p)``."""
    if isinstance(p, ast.Exclude):
        return strip_exclusions(p.body)
    if isinstance(p, ast.Quantified):
        return ast.Quantified(strip_exclusions(p.body), p.low, p.high, p.greedy)
    if isinstance(p, ast.Concat):
        return ast.Concat(tuple(strip_exclusions(i) for i in p.items))
    if isinstance(p, ast.Alternation):
        return ast.Alternation(tuple(strip_exclusions(i) for i in p.items))
    if isinstance(p, ast.Permute):
        return ast.Permute(tuple(strip_exclusions(i) for i in p.items))
    return p


def can_match_empty(p: ast.Pattern) -> bool:
    """Whether ``p`` matches the empty row sequence (written here, apart from the engine)."""
    if isinstance(p, (ast.Empty, ast.Anchor)):
        return True
    if isinstance(p, ast.Var):
        return False
    if isinstance(p, ast.Quantified):
        return p.low == 0 or can_match_empty(p.body)
    if isinstance(p, ast.Exclude):
        return can_match_empty(p.body)
    if isinstance(p, (ast.Concat, ast.Permute)):
        return all(can_match_empty(q) for q in p.items)
    if isinstance(p, ast.Alternation):
        return any(can_match_empty(q) for q in p.items)
    raise TypeError(p)
