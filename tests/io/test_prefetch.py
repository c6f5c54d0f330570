"""kleene.io.prefetch: the first item read in a background thread, errors raised where the
reader would have raised them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kleene.io.prefetch import Prefetched
from kleene.io.readers import read_batches
from kleene.language.errors import DataError


def test_the_items_are_the_readers_and_the_first_comes_from_another_thread() -> None:
    threads: list[int] = []

    def numbers() -> Iterator[int]:
        for n in range(5):
            threads.append(threading.get_ident())
            yield n

    got = list(Prefetched(numbers))
    assert got == [0, 1, 2, 3, 4]
    assert threads[0] != threading.get_ident()  # fetched in the background
    assert set(threads[1:]) == {threading.get_ident()}  # the rest by the consumer


def test_errors_come_where_the_reader_raised_them(tmp_path: Path) -> None:
    missing = tmp_path / "nope.csv"
    items = Prefetched(lambda: read_batches(missing))  # read_batches raises when made
    items.wait()
    with pytest.raises(DataError, match="does not exist"):
        items.made()
    with pytest.raises(StopIteration):
        next(items)
    items = Prefetched(lambda: read_batches(missing))
    with pytest.raises(DataError, match="does not exist"):
        next(items)  # made() is implied

    def failing() -> Iterator[int]:
        yield 1
        raise ValueError("the second item")

    def bad_first() -> Iterator[int]:
        raise ValueError("the first item")
        yield 0  # a generator: raises at its first next(), not when made

    items = Prefetched(bad_first)
    items.made()  # made fine
    with pytest.raises(ValueError, match="the first item"):
        next(items)
    items = Prefetched(failing)
    items.made()
    assert next(items) == 1
    with pytest.raises(ValueError, match="the second item"):
        next(items)


def test_empty_and_a_file(tmp_path: Path) -> None:
    assert list(Prefetched(lambda: iter(()))) == []
    path = tmp_path / "e.csv"
    path.write_text("type,price\nSELL,1\nBUY,2\nBUY,3\n")
    batches = list(Prefetched(lambda: read_batches(path, batch_size=2)))
    assert [b.num_rows for b in batches] == [2, 1]
    assert [b.column("price").to_pylist() for b in batches] == [[1, 2], [3]]


def test_close_closes_the_reader() -> None:
    closed = threading.Event()

    def reader() -> Iterator[int]:
        try:
            yield from range(10)
        finally:
            closed.set()

    items = Prefetched(reader)
    assert next(items) == 0
    items.close()
    assert closed.is_set()
    with pytest.raises(StopIteration):
        next(items)
