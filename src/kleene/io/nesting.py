"""How deep a JSON Lines value may be nested: :data:`MAX_JSON_DEPTH`, checked on the bytes of
a chunk of lines before any parser sees them.

A value nested 10,000 deep in one 20 KB line crashed the process (SIGSEGV inside Arrow, which
builds a list type per level), and 1,000 to 8,000 deep made Python's :mod:`json` (reading) and
the writers (printing events) raise RecursionError.  Events are flat records with, at most, a
few levels of lists and objects, so kleene refuses deeper lines with a
:class:`~kleene.language.errors.DataError` naming the line, the row and the depth (exit 3).

The check is vectorized (numpy over the chunk's bytes) and cheap on ordinary data: a line's
depth is at most its number of ``[`` and ``{``, so only a chunk with a line holding more than
:data:`MAX_JSON_DEPTH` of them is measured exactly (brackets inside strings, escaped quotes
and one line's unbalanced brackets do not carry over to the next line).
"""

from __future__ import annotations

import numpy as np

MAX_JSON_DEPTH = 64
"""Levels of ``[`` and ``{`` in one JSON Lines line, the row's own object included."""

_OPEN_SQUARE, _OPEN_CURLY, _CLOSE_SQUARE, _CLOSE_CURLY = 91, 123, 93, 125
_QUOTE, _BACKSLASH, _NEWLINE = 34, 92, 10


def too_deep(data: bytes) -> tuple[int, int] | None:
    """The first line of ``data`` (lines joined by ``\\n``) nested over :data:`MAX_JSON_DEPTH`,
    as (0-based line index, its depth); None when every line is within the limit."""
    arr = np.frombuffer(data, np.uint8)
    if arr.size == 0:
        return None
    opens = (arr == _OPEN_SQUARE) | (arr == _OPEN_CURLY)
    newlines = np.flatnonzero(arr == _NEWLINE)
    per_line = np.bincount(
        np.searchsorted(newlines, np.flatnonzero(opens)), minlength=newlines.size + 1
    )
    if per_line.max(initial=0) <= MAX_JSON_DEPTH:
        return None  # the cheap bound: no line has enough brackets to be too deep
    depths = _line_depths(arr, opens, newlines)
    over = np.flatnonzero(depths > MAX_JSON_DEPTH)
    if over.size == 0:
        return None
    return int(over[0]), int(depths[over[0]])


def _line_depths(arr: np.ndarray, opens: np.ndarray, newlines: np.ndarray) -> np.ndarray:
    """The exact greatest nesting of each line (strings and escapes understood)."""
    n = arr.size
    quotes = arr == _QUOTE
    backslashes = arr == _BACKSLASH
    if backslashes.any():  # a quote after an odd run of backslashes is inside a string
        where = np.flatnonzero(quotes)
        last_other = np.maximum.accumulate(np.where(backslashes, -1, np.arange(n)))
        before = where - 1
        run = np.where(before >= 0, before - last_other[np.maximum(before, 0)], 0)
        quotes[where[run % 2 == 1]] = False
    is_newline = np.zeros(n, np.int64)
    is_newline[newlines] = 1
    line = np.cumsum(is_newline) - is_newline  # the line of each byte (a newline ends its line)
    quote_count = np.cumsum(quotes)
    quotes_before = np.concatenate(([0], quote_count[newlines]))[line]
    in_string = ((quote_count - quotes_before) & 1).astype(bool)
    closes = (arr == _CLOSE_SQUARE) | (arr == _CLOSE_CURLY)
    delta = opens.astype(np.int64) - closes.astype(np.int64)
    delta[in_string] = 0
    level = np.cumsum(delta)
    level_before = np.concatenate(([0], level[newlines]))[line]
    depth = level - level_before
    starts = np.concatenate(([0], newlines + 1))
    starts = starts[starts < n]
    out = np.zeros(newlines.size + 1, np.int64)
    out[: starts.size] = np.maximum.reduceat(depth, starts)
    return out
