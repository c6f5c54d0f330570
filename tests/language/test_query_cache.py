"""kleene.language.query_cache: a parse restored from disk is the parser's, and only a safe,
current file is ever read."""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import pytest

from kleene.language import query_cache
from kleene.language.errors import QueryError
from kleene.language.names import Name
from kleene.language.parser import parse as parse_text

QUERIES = [
    "SELECT * FROM S WHERE SELL as a; BUY as b FILTER a[price > 100] AND b[price < a.price] WITHIN 10 EVENTS",
    "SELECT a, b FROM S WHERE (SELL as a; BUY+ as b) FILTER b[name = a.name] PARTITION BY [name] WITHIN 2 seconds",
    "CREATE STREAM S { EVENT BUY { name:string, price:double } }\nSELECT MAX * FROM S WHERE (BUY:+) as b FILTER b[price > 150] WITHIN 30 EVENTS",
]


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KLEENE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "queries"


@pytest.mark.parametrize("text", QUERIES)
def test_a_cached_parse_is_the_parsers(text: str, cache: Path) -> None:
    first = query_cache.parse(text)  # parsed, then written
    path = query_cache.cache_path(text)
    assert path.parent == cache and path.exists()
    again = query_cache.parse(text)  # read back
    assert again == first == parse_text(text)
    assert again is not first
    # the spans of names (for carets) survive: FROM's streams, PARTITION BY's attributes, ...
    spans = [n.span for n in names(first)]
    assert spans and [n.span for n in names(again)] == spans


def names(node: object) -> list[Name]:
    """Every Name in an AST, in the order of its fields."""
    if isinstance(node, Name):
        return [node]
    if isinstance(node, (tuple, list)):
        return [n for item in node for n in names(item)]
    if dataclasses.is_dataclass(node):
        return [n for f in dataclasses.fields(node) for n in names(getattr(node, f.name))]
    return []

def test_the_file_is_what_is_read(cache: Path) -> None:
    """A different Program planted under a query's name is returned: the cache is really read
    (and so only files nobody else could plant are, see below)."""
    text, other = QUERIES[0], QUERIES[1]
    query_cache.parse(text)
    path = query_cache.cache_path(text)
    path.write_bytes(pickle.dumps(parse_text(other)))
    assert query_cache.parse(text) == parse_text(other)


def test_files_others_could_write_are_not_read(cache: Path) -> None:
    text, other = QUERIES[0], QUERIES[1]
    query_cache.parse(text)
    path = query_cache.cache_path(text)
    path.write_bytes(pickle.dumps(parse_text(other)))
    os.chmod(path, 0o666)
    assert query_cache.parse(text) == parse_text(text)
    os.chmod(path, 0o600)
    os.chmod(cache, 0o777)
    assert query_cache.parse(text) == parse_text(text)


def test_anything_but_a_program_is_parsed_again(cache: Path) -> None:
    text = QUERIES[0]
    query_cache.parse(text)
    path = query_cache.cache_path(text)
    for junk in (b"not a pickle", pickle.dumps({"a": 1}), b""):
        path.write_bytes(junk)
        assert query_cache.parse(text) == parse_text(text)


def test_errors_are_the_parsers_and_not_kept(cache: Path) -> None:
    bad = "SELECT * FROM S WHERE SELL as a; ; BUY as b"
    with pytest.raises(QueryError) as cached:
        query_cache.parse(bad)
    with pytest.raises(QueryError) as direct:
        parse_text(bad)
    assert str(cached.value) == str(direct.value) and "^" in str(cached.value)
    assert not query_cache.cache_path(bad).exists()
    with pytest.raises(TypeError, match="not bytes"):
        query_cache.parse(b"SELECT * WHERE A")  # type: ignore[arg-type]


def test_the_name_changes_with_the_parsers_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    before = query_cache.cache_path(QUERIES[0])
    assert query_cache.cache_path(QUERIES[0] + " ") != before
    monkeypatch.setattr(query_cache, "_sources_digest", lambda: b"another grammar")
    assert query_cache.cache_path(QUERIES[0]) != before


def test_the_folder_stays_bounded(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(query_cache, "MAX_ENTRIES", 4)
    texts = [f"SELECT * FROM S WHERE A as a; B as b WITHIN {n} EVENTS" for n in range(1, 11)]
    for text in texts:
        query_cache.parse(text)
        assert len(list(cache.glob("*.pickle"))) <= 4
    assert query_cache.cache_path(texts[-1]).exists()  # the newest is kept


def test_a_read_only_cache_still_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("KLEENE_CACHE_DIR", str(blocked))
    assert query_cache.parse(QUERIES[0]) == parse_text(QUERIES[0])


def test_without_the_parsers_sources_there_is_no_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable() -> bytes:
        raise FileNotFoundError("grammar.lark")

    monkeypatch.setattr(query_cache, "_sources_digest", unreadable)
    assert query_cache.parse(QUERIES[0]) == parse_text(QUERIES[0])
    assert not cache.exists() or not list(cache.iterdir())
