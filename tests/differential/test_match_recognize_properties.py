"""Internal consistency of the MATCH_RECOGNIZE reference evaluator on random cases (hypothesis).

The engine to compare with comes later (issue 17, item 3); until then these
properties tie the output modes and skip modes together, and measure how often
the features under test change the result (printed, and asserted above a floor
so that the generators keep exercising them).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from against_oracle import share_bounds
from kleene.language.errors import DataError, QueryError
from kleene.language.match_recognize import ast
from kleene.language.match_recognize.parser import parse, parse_unchecked
from kleene.reference.match_recognize import SearchBudgetError, match_recognize
from match_recognize_generators import (
    Case,
    can_match_empty,
    cases,
    flip_greediness,
    has_quantifier,
    strip_exclusions,
)

BUDGET = 20_000
SETTINGS = settings(max_examples=120, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def run(case: Case, query: str) -> list[dict[str, Any]] | None:
    """The output rows, or None when the search exceeded its budget or a SKIP TO failed
    (at run time, or statically when it would fail on every match)."""
    try:
        return match_recognize(case.records(), query, max_steps=BUDGET).to_pylist()  # type: ignore[no-any-return]
    except SearchBudgetError:
        return None
    except DataError as err:
        assert "AFTER MATCH SKIP" in str(err)
        return None
    except QueryError as err:  # a SKIP TO certain to loop, found statically
        assert "every match starts with" in str(err)
        return None


SKIPS = st.sampled_from(["PAST LAST ROW", "TO NEXT ROW", "TO FIRST {v}", "TO LAST {v}"])


def test_one_row_and_all_rows_describe_the_same_matches() -> None:
    """ONE ROW's matches are ALL ROWS' distinct MATCH_NUMBERs, with as many rows as COUNT(*)
    (one row for an empty match), starting at FIRST(t), numbered 1, 2, ... per partition;
    the rows of a non-empty match are consecutive in the partition."""
    stats: Counter[str] = Counter()

    @SETTINGS
    @given(cases(), SKIPS, st.data())
    def check(case: Case, skip: str, data: st.DataObject) -> None:
        skip = skip.format(v=data.draw(st.sampled_from(case.variables)))
        one = run(case, case.query("MATCH_NUMBER() AS m, COUNT(*) AS n, FIRST(t) AS f", skip=skip))
        every = run(case, case.query("MATCH_NUMBER() AS m, CLASSIFIER() AS c", "ALL ROWS PER MATCH",
                                     skip=skip))
        if one is None or every is None:
            assert one is None and every is None
            stats["skipped"] += 1
            return
        stats["cases"] += 1
        groups: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
        for r in every:
            groups[(r["k"], r["m"])].append(r)
        assert [(r["k"], r["m"]) for r in one] == list(groups)
        order = {r: i for i, r in enumerate(sorted(range(len(case.rows)), key=lambda i: (
            case.rows[i][0], case.rows[i][1])))}
        for r in one:
            rows = groups[(r["k"], r["m"])]
            assert len(rows) == max(r["n"], 1)
            if r["n"] == 0:
                stats["empty"] += 1
                assert rows[0]["c"] is None and r["f"] is None
            else:
                assert rows[0]["t"] == r["f"]
                positions = [order[x["id"]] for x in rows]
                assert positions == list(range(positions[0], positions[0] + len(positions)))
        for k in {r["k"] for r in one}:
            assert [r["m"] for r in one if r["k"] == k] == list(range(1, 1 + sum(
                1 for r in one if r["k"] == k)))
        stats["with matches"] += bool(one)

    check()
    print(dict(stats))
    assert stats["cases"] >= 85
    assert stats["with matches"] >= 0.35 * stats["cases"]
    assert stats["empty"] >= 10


def test_unmatched_rows_past_last_row_give_each_input_row_once() -> None:
    """T-DOC: WITH UNMATCHED ROWS and SKIP PAST LAST ROW output every input row exactly once
    (so PAST LAST ROW matches never overlap); OMIT EMPTY MATCHES is SHOW EMPTY MATCHES
    without the rows of empty matches."""
    stats: Counter[str] = Counter()

    @SETTINGS
    @given(cases(min_rows=4, max_rows=12))
    def check(case: Case) -> None:
        unmatched = run(case, case.query("MATCH_NUMBER() AS m, CLASSIFIER() AS c",
                                         "ALL ROWS PER MATCH WITH UNMATCHED ROWS"))
        show = run(case, case.query("MATCH_NUMBER() AS m, CLASSIFIER() AS c", "ALL ROWS PER MATCH"))
        omit = run(case, case.query("MATCH_NUMBER() AS m, CLASSIFIER() AS c",
                                    "ALL ROWS PER MATCH OMIT EMPTY MATCHES"))
        if unmatched is None or show is None or omit is None:
            stats["skipped"] += 1
            return
        stats["cases"] += 1
        assert sorted(r["id"] for r in unmatched) == list(range(len(case.rows)))
        assert omit == [r for r in show if r["c"] is not None]
        assert [r for r in unmatched if r["m"] is not None] == show
        stats["unmatched rows"] += sum(r["m"] is None for r in unmatched) > 0
        if can_match_empty(case.pattern):  # where an empty match can happen at all
            stats["can match empty"] += 1
            stats["empty matches"] += len(show) > len(omit)

    check()
    print(dict(stats))
    assert stats["cases"] >= 85 and stats["can match empty"] >= 20
    assert share_bounds(stats["unmatched rows"], stats["cases"])[1] >= 1 / 3
    assert share_bounds(stats["empty matches"], stats["can match empty"])[1] >= 1 / 3


def test_reluctance_and_skip_modes_change_results_in_a_measured_share() -> None:
    """Greedy vs reluctant quantifiers, and PAST LAST ROW vs TO NEXT ROW: how often the
    answer differs (printed).  The first match of a partition never depends on the skip mode."""
    stats: Counter[str] = Counter()

    @SETTINGS
    @given(cases(undefined=0.5, min_rows=4, max_rows=12).filter(
        lambda c: has_quantifier(c.pattern)))
    def check(case: Case) -> None:
        measures = "MATCH_NUMBER() AS m, FIRST(t) AS f, COUNT(*) AS n, ARRAY_AGG(CLASSIFIER()) AS l"
        greedy = run(case, case.query(measures))
        reluctant = run(case, case.query(measures, pattern=flip_greediness(case.pattern)))
        overlapping = run(case, case.query(measures, skip="TO NEXT ROW"))
        if greedy is None or reluctant is None or overlapping is None:
            stats["skipped"] += 1
            return
        stats["cases"] += 1
        stats["reluctance changed the result"] += greedy != reluctant
        if any(r["n"] >= 2 for r in greedy):  # a match that a later start could overlap
            stats["with a match of 2+ rows"] += 1
            stats["skip mode changed the result"] += greedy != overlapping
        first = {r["k"]: r for r in reversed(greedy)}
        assert first == {r["k"]: r for r in reversed(overlapping)}

    check()
    print(dict(stats))
    assert stats["cases"] >= 85
    assert share_bounds(stats["reluctance changed the result"], stats["cases"])[1] >= 1 / 3
    assert stats["with a match of 2+ rows"] >= 20  # measured 41-51 of 120
    assert share_bounds(stats["skip mode changed the result"],
                        stats["with a match of 2+ rows"])[1] >= 1 / 3


def test_exclusion_changes_only_which_rows_all_rows_outputs() -> None:
    """T-DOC: {- -} matches like a group; ONE ROW PER MATCH is unchanged (measures see the
    excluded rows too), and ALL ROWS PER MATCH outputs a subsequence of the rows it gives
    without the exclusion, with the same measures on each."""
    stats: Counter[str] = Counter()

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(cases(exclusion=True, undefined=0.4, min_rows=4, max_rows=12).filter(
        lambda c: strip_exclusions(c.pattern) != c.pattern and excludes_rows(c.pattern)))
    def check(case: Case) -> None:
        plain = strip_exclusions(case.pattern)
        measures = "MATCH_NUMBER() AS m, COUNT(*) AS n, RUNNING SUM(v) AS s, CLASSIFIER() AS c"
        one = [run(case, case.query(measures, pattern=p)) for p in (case.pattern, plain)]
        every = [run(case, case.query(measures, "ALL ROWS PER MATCH", pattern=p))
                 for p in (case.pattern, plain)]
        if None in one or None in every:
            stats["skipped"] += 1
            return
        stats["cases"] += 1
        assert one[0] == one[1]
        excluded, full = every
        assert excluded is not None and full is not None
        rest = iter(full)
        assert all(any(r == f for f in rest) for r in excluded)  # a subsequence
        stats["rows left out"] += len(excluded) < len(full)

    check()
    print(dict(stats))
    assert stats["cases"] >= 40
    assert share_bounds(stats["rows left out"], stats["cases"])[1] >= 1 / 3


def test_the_static_skip_loop_error_is_sound() -> None:
    """Where the checker rejects SKIP TO FIRST/LAST v as certain to target a match's first
    row, running the clause anyway either hits that runtime error or finds no non-empty match."""
    stats: Counter[str] = Counter()

    @settings(max_examples=50, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(cases(undefined=0.5), st.sampled_from(["FIRST", "LAST"]), st.data())
    def check(case: Case, which: str, data: st.DataObject) -> None:
        var = data.draw(st.sampled_from(case.variables))
        query = case.query("COUNT(*) AS n", skip=f"TO {which} {var}")
        try:
            parse(query)
            stats["accepted"] += 1
            return
        except QueryError as err:
            assert "every match starts with" in str(err)
        stats["rejected"] += 1
        try:
            out = match_recognize(case.records(), parse_unchecked(query), max_steps=BUDGET)
        except SearchBudgetError:
            return
        except DataError as err:
            assert "cannot skip to the first row" in str(err)
            stats["runtime error confirmed"] += 1
            return
        assert all(r["n"] == 0 for r in out.to_pylist())

    check()
    print(dict(stats))
    assert stats["rejected"] >= 8
    assert stats["runtime error confirmed"] >= 2


def excludes_rows(p: ast.Pattern) -> bool:
    """Some exclusion ``{- x -}`` in ``p`` needs at least one row (so it can leave rows out)."""
    if isinstance(p, ast.Exclude):
        return not can_match_empty(p.body) or excludes_rows(p.body)
    if isinstance(p, ast.Quantified):
        return excludes_rows(p.body)
    if isinstance(p, (ast.Concat, ast.Alternation, ast.Permute)):
        return any(excludes_rows(q) for q in p.items)
    return False
