"""Reading the input while the query compiles: the first batch fetched in a background thread.

``kleene run`` has two cores and, before its first event, two jobs that do not depend on each
other: compiling the query (Python, holding the GIL) and reading the file (Arrow's CSV, JSON
and Parquet readers release the GIL while they parse; a CSV below 64 MiB is read whole at the
first batch, :mod:`kleene.io.readers`).  :class:`Prefetched` makes the reader and takes its
first batch in a thread started at once; the consumer gets that batch, then the rest from the
same iterator in its own thread.  Errors come where they came without the thread, so they keep
their order (a query error before a data error): what making the reader raised (a missing
file, an unknown format: :func:`~kleene.io.readers.read_batches` checks these before any work)
is raised by :meth:`Prefetched.made`, which the caller calls where it used to make the reader;
what reading raised (a bad row) is raised at the first ``next()``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["Prefetched"]


class Prefetched(Generic[T]):
    """``make()``'s items, the first one fetched in a background thread started at once."""

    def __init__(self, make: Callable[[], Iterator[T]]) -> None:
        self._make = make
        self._items: Iterator[T] | None = None
        self._first: list[T] = []
        self._error: BaseException | None = None
        self._made = threading.Event()
        self._making_error: BaseException | None = None
        self._thread: threading.Thread | None = threading.Thread(
            target=self._fetch, name="kleene-prefetch", daemon=True
        )
        self._thread.start()

    def _fetch(self) -> None:
        try:
            self._items = self._make()
        except BaseException as exc:  # noqa: BLE001 - raised by made()
            self._making_error = exc
            return
        finally:
            self._made.set()
        try:
            self._first.append(next(self._items))
        except StopIteration:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            self._error = exc

    def made(self) -> None:
        """Wait until the reader is made (not read); raise what making it raised."""
        self._made.wait()
        if self._making_error is not None:
            error, self._making_error = self._making_error, None
            self.wait()
            raise error

    def wait(self) -> None:
        """Wait for the background fetch (idempotent); its error, if any, is kept for ``next()``."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        self.made()
        self.wait()
        if self._error is not None:
            error, self._error = self._error, None
            self._items = None
            raise error
        if self._first:
            return self._first.pop()
        if self._items is None:
            raise StopIteration
        return next(self._items)

    def close(self) -> None:
        """Wait for the fetch and close the reader (its files), as a generator's ``close``."""
        self.wait()
        close = getattr(self._items, "close", None)
        if close is not None:
            close()
        self._items = None
        self._first.clear()
        self._error = self._making_error = None
