"""The parser's limits (kleene.language.limits, issue 16): each is a QueryError with line,
column and caret that names the limit (exit 2 in the CLI), never a RecursionError, a
ValueError of Python's integer conversion or an OverflowError in the engine; and a long
flat list is no deep query."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kleene
from kleene.cli import main
from kleene.language import ast, limits
from kleene.language.errors import QueryError
from kleene.language.parser import parse_duration, parse_query

STOCK = str(Path(__file__).resolve().parents[2] / "examples" / "stock.csv")


def refused(text: str) -> QueryError:
    with pytest.raises(QueryError) as info:
        kleene.compile(text)
    return info.value


def caret_at(err: QueryError, needle: str, text: str) -> None:
    """The error points at the first character of ``needle`` (line 1), with a caret."""
    assert (err.line, err.column) == (1, text.index(needle) + 1)
    assert str(err).splitlines()[-1] == "  " + " " * text.index(needle) + "^"


def ast_depth(node: Any) -> int:
    """Depth of an AST (iterative: the nested one may be deep)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        for field in dataclasses.fields(item):
            child = getattr(item, field.name)
            if dataclasses.is_dataclass(child) and not isinstance(child, ast.Span):
                stack.append((child, depth + 1))
    return deepest


# ------------------------------------------------------------------ a flat list is not deep
def test_the_issues_500_term_or_list_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """`name = 'a' OR ...` with 500 terms (a RecursionError traceback before): the same
    complex events as the IN set it spells."""
    names = [f"n{i}" for i in range(498)] + ["MSFT", "INTC"]
    listed = " OR ".join(f"name = '{n}'" for n in names)
    as_set = ", ".join(f"'{n}'" for n in names)
    flat = kleene.compile(f"SELECT * FROM S WHERE SELL AS s FILTER s[{listed}]")
    in_set = kleene.compile(f"SELECT * FROM S WHERE SELL AS s FILTER s[name IN {{{as_set}}}]")
    got = [m.positions for m in flat.matches(STOCK)]
    assert got and got == [m.positions for m in in_set.matches(STOCK)]
    assert ast_depth(parse_query(f"SELECT * WHERE SELL AS s FILTER s[{listed}]").where) < 20


CHAINS: dict[str, Callable[[int], str]] = {
    "predicate OR": lambda n: (
        "SELECT * FROM S WHERE SELL AS s FILTER s["
        + " OR ".join(f"price > {100 + i % 70}" for i in range(n))
        + "]"
    ),
    "predicate AND": lambda n: (
        "SELECT * FROM S WHERE SELL AS s FILTER s["
        + " AND ".join(f"price > {i % 101}" for i in range(n))
        + "]"
    ),
    "FILTER OR": lambda n: (
        "SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER "
        + " OR ".join(f"{'sb'[i % 2]}[volume > {3000 + 50 * i}]" for i in range(n))
        + " WITHIN 4 EVENTS"
    ),
    "FILTER AND": lambda n: (
        "SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER "
        + " AND ".join(f"{'sb'[i % 2]}[volume > {i % 40}]" for i in range(n))
        + " WITHIN 4 EVENTS"
    ),
    "pattern OR": lambda n: (
        "SELECT * FROM S WHERE " + " OR ".join(["SELL", "BUY"] + [f"T{i}" for i in range(n - 2)])
    ),
    "pattern ;": lambda n: (
        "SELECT * FROM S WHERE " + " ; ".join(f"T{i}" for i in range(n)) + f" WITHIN {n + 6} EVENTS"
    ),
}


@pytest.mark.parametrize("kind", sorted(CHAINS))
def test_a_rebalanced_chain_means_what_the_nested_one_means(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chain longer than BALANCE_AT is rebalanced (logarithmic depth): the same complex
    events as the left-nested tree the grammar gives, on the stock example and on a random
    stream of SELL and BUY events."""
    text = CHAINS[kind](limits.BALANCE_AT + 8)
    rng = random.Random(16)
    n = limits.BALANCE_AT + 8
    types = []  # cycles of T0 ... Tn-1 (for the sequence), with SELL, BUY and other T between
    for i in range(8 * n):
        types.append(f"T{i % n}")
        if rng.random() < 0.1:
            types.append(rng.choice(["SELL", "BUY", f"T{rng.randrange(n)}"]))
    types += [rng.choice(["SELL", "BUY"]) for _ in range(200)]
    events = [
        {"type": t, "name": "X", "price": rng.uniform(90, 180), "volume": rng.randrange(0, 5000)}
        for t in types
    ]
    balanced = kleene.compile(text)
    depth_balanced = ast_depth(parse_query(text).where)
    monkeypatch.setattr(limits, "BALANCE_AT", 10**6)
    nested = kleene.compile(text)
    assert ast_depth(parse_query(text).where) > depth_balanced + 20
    for source in (STOCK, events):
        got = [m.positions for m in balanced.matches(source)]
        assert got == [m.positions for m in nested.matches(source)]
    assert any(balanced.matches(events)), "the case must find something to compare"


# ------------------------------------------------------------------------- nesting depth
DEEP: dict[str, Callable[[int], str]] = {
    "NOT": lambda k: "SELECT * FROM S WHERE SELL AS s FILTER s[" + "NOT " * k + "price > 1]",
    "arithmetic": lambda k: (
        "SELECT * FROM S WHERE SELL AS s FILTER s[" + "(" * k + "price" + " + 1)" * k + " > 1]"
    ),
    "negation": lambda k: (
        "SELECT * FROM S WHERE SELL AS s FILTER s[" + "-(" * k + "price" + ")" * k + " < 1]"
    ),
    "OR in AND": lambda k: (
        "SELECT * FROM S WHERE SELL AS s FILTER s["
        + "".join(f"price > {i % 3} {'OR' if i % 2 else 'AND'} (" for i in range(k))
        + "price > 1"
        + ")" * k
        + "]"
    ),
    "FILTER OR in AND": lambda k: (
        "SELECT * FROM S WHERE SELL AS s FILTER "
        + "".join(f"s[price > {i % 3}] {'OR' if i % 2 else 'AND'} (" for i in range(k))
        + "s[price > 1]"
        + ")" * k
    ),
    "+": lambda k: "SELECT * FROM S WHERE " + "(" * k + "SELL" + ")+" * k + " WITHIN 3 EVENTS",
    "OR in ;": lambda k: (
        "SELECT * FROM S WHERE "
        + "".join(f"SELL {'OR' if i % 2 else ';'} (" for i in range(k))
        + "BUY"
        + ")" * k
        + " WITHIN 3 EVENTS"
    ),
    "AND": lambda k: (
        "SELECT * FROM S WHERE " + "SELL AND (" * k + "BUY" + ")" * k + " WITHIN 3 EVENTS"
    ),
    "AS": lambda k: "SELECT * FROM S WHERE SELL" + " AS x" * k,
}


def deepest_accepted(make: Callable[[int], str]) -> int:
    """The largest k whose query passes the depth check (by bisection on parse alone)."""
    low, high = 1, limits.MAX_DEPTH + 1
    while low < high:
        mid = (low + high + 1) // 2
        try:
            parse_query(make(mid))
            low = mid
        except QueryError as err:
            assert "levels deep" in err.message
            high = mid - 1
    return low


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_nesting_up_to_the_limit_runs_and_beyond_it_is_a_query_error(kind: str) -> None:
    """At the deepest accepted nesting every stage (checks, planning, compilation, the run,
    the printer) works without reaching Python's recursion limit, here inside pytest's own
    deep stack; one level more and 1,000 levels more are a QueryError naming the limit."""
    make = DEEP[kind]
    k = deepest_accepted(make)
    assert k > limits.MAX_DEPTH // 2 - 20
    query = kleene.compile(make(k))
    list(query.matches(STOCK))
    query.explain()
    for deeper in (k + 1, k + 1000):
        text = make(deeper)
        err = refused(text)
        assert f"nested more than {limits.MAX_DEPTH} levels deep" in err.message
        assert "kleene.language.limits.MAX_DEPTH" in err.message
        assert err.line == 1 and str(err).splitlines()[-1].strip() == "^"


def test_a_deep_query_is_exit_2_in_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    text = DEEP["NOT"](5000)
    assert main(["run", text, "--input", STOCK]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("kleene: query error: the query is nested more than")
        and "Traceback" not in err
    )


# --------------------------------------------------------------------- numbers and windows
def test_a_number_longer_than_the_limit() -> None:
    digits = "9" * 5000  # Python refuses to convert over 4,300 digits (was a traceback)
    text = f"SELECT * FROM S WHERE SELL AS s FILTER s[price > {digits}]"
    err = refused(text)
    assert err.message.startswith("a number of 5,000 characters is over kleene's limit of 400")
    caret_at(err, digits, text)
    err = refused("SELECT * FROM S WHERE SELL AS s FILTER s[price > 0." + "0" * 500 + "1]")
    assert "MAX_NUMBER_LENGTH" in err.message
    # Within the length, a value no float holds is "too large", as 1e400 always was.
    for big in ("1" + "0" * 350, "1e400"):
        text = f"SELECT * FROM S WHERE SELL AS s FILTER s[price > {big}]"
        err = refused(text)
        assert err.message == f"number {big} is too large"
        caret_at(err, big, text)
    longest = "0." + "0" * (limits.MAX_NUMBER_LENGTH - 3) + "1"
    kleene.compile(f"SELECT * FROM S WHERE SELL AS s FILTER s[price > {longest}]")


@pytest.mark.parametrize(
    ("clause", "what"),
    [
        ("WITHIN {n} EVENTS", "WITHIN n EVENTS"),
        ("WITHIN {n} [volume]", "WITHIN n [attribute]"),
        ("LIMIT {n}", "LIMIT"),
    ],
)
def test_counts_fit_the_engines_integers(
    clause: str, what: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 20-digit WITHIN ... EVENTS was an OverflowError in the compiled step."""
    n = "99999999999999999999"
    text = "SELECT * FROM S WHERE SELL ; BUY " + clause.format(n=n)
    err = refused(text)
    assert err.message.startswith(
        f"{what}: {n} is over kleene's limit of 1,000,000,000,000,000,000"
    )
    caret_at(err, n, text)
    assert main(["run", text, "--input", STOCK]) == 2
    assert "Traceback" not in capsys.readouterr().err
    at_limit = kleene.compile("SELECT * FROM S WHERE SELL ; BUY " + clause.format(n=10**18))
    assert (
        len(list(at_limit.matches(STOCK))) > 0 if "EVENTS" in clause or "LIMIT" in clause else True
    )


def test_the_longest_duration(capsys: pytest.CaptureFixture[str]) -> None:
    text = "SELECT * FROM S WHERE SELL ; BUY WITHIN 36501 days"
    err = refused(text)
    assert "at most 36,500 days" in err.message and "MAX_DURATION_NANOS" in err.message
    caret_at(err, "36501", text)
    code = main(
        [
            "run",
            "SELECT * FROM S WHERE SELL ; BUY WITHIN 9999999999999 days",
            "--input",
            STOCK,
            "--time-column",
            "time",
        ]
    )
    assert code == 2 and "Traceback" not in capsys.readouterr().err
    longest = kleene.compile(
        "SELECT * FROM S WHERE SELL ; BUY WITHIN 36500 days", time_column="time"
    )
    assert len(list(longest.matches(STOCK))) > 0
    assert parse_duration("36500 days") == limits.MAX_DURATION_NANOS
    with pytest.raises(QueryError, match="36,500 days"):
        parse_duration("1000000 days")  # --max-delay uses the same rule


def test_the_query_length_limit() -> None:
    text = "SELECT * FROM S\nWHERE SELL" + " " * limits.MAX_QUERY_LENGTH
    err = refused(text)
    assert err.message.startswith(
        f"the query is {len(text):,} characters long, over kleene's limit"
    )
    assert (err.line, err.column) == (2, limits.MAX_QUERY_LENGTH - len("SELECT * FROM S\n") + 1)
    kleene.compile(text[: limits.MAX_QUERY_LENGTH])


def test_limits_are_what_the_docs_say() -> None:
    assert (limits.MAX_QUERY_LENGTH, limits.MAX_DEPTH, limits.MAX_NUMBER_LENGTH) == (
        1_000_000,
        200,
        400,
    )
    assert limits.MAX_COUNT == 10**18 < 2**63
    assert limits.MAX_DURATION_NANOS == 36_500 * 86_400 * 10**9 < 2**63
