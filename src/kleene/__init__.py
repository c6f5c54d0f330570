"""kleene: complex event recognition with CEQL, evaluated by the CORE algorithm.

Quick start::

    import kleene
    q = kleene.compile("SELECT * FROM S WHERE SELL as a; BUY as b "
                       "FILTER a[price > 100] WITHIN 10 EVENTS")
    for ce in q.run(events):   # pyarrow Table, RecordBatches, DataFrame or dicts
        print(ce.start, ce.end, ce.positions)

Several queries in one pass share the predicate evaluation::

    qs = kleene.compile_many({"rise": "SELECT ...", "fall": "SELECT ..."})
    for ce in qs.run(events):
        print(ce.query, ce.start, ce.end)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kleene.api import Query, compile
    from kleene.io.merge import merge_streams
    from kleene.io.sources import to_batches
    from kleene.language.errors import (
        DataError,
        KleeneError,
        LimitError,
        QueryError,
        UnseenNameError,
        UnseenNameWarning,
        UnsupportedError,
    )
    from kleene.options import InputOptions
    from kleene.queryset import QuerySet, compile_many
    from kleene.results import ComplexEvent, Match, MatchBatch, QueryMatch

__all__ = [
    "ComplexEvent",
    "DataError",
    "InputOptions",
    "KleeneError",
    "LimitError",
    "Match",
    "MatchBatch",
    "Query",
    "QueryError",
    "QueryMatch",
    "QuerySet",
    "UnseenNameError",
    "UnseenNameWarning",
    "UnsupportedError",
    "compile",
    "compile_many",
    "merge_streams",
    "to_batches",
]


_HOMES = {
    "Query": "kleene.api",
    "compile": "kleene.api",
    "merge_streams": "kleene.io.merge",
    "to_batches": "kleene.io.sources",
    "DataError": "kleene.language.errors",
    "KleeneError": "kleene.language.errors",
    "LimitError": "kleene.language.errors",
    "QueryError": "kleene.language.errors",
    "UnseenNameError": "kleene.language.errors",
    "UnseenNameWarning": "kleene.language.errors",
    "UnsupportedError": "kleene.language.errors",
    "InputOptions": "kleene.options",
    "QuerySet": "kleene.queryset",
    "compile_many": "kleene.queryset",
    "ComplexEvent": "kleene.results",
    "Match": "kleene.results",
    "MatchBatch": "kleene.results",
    "QueryMatch": "kleene.results",
    "match_recognize": "kleene.row_patterns",
}
"""Where each public name lives.  ``import kleene`` loads none of them: each is imported on
first use (PEP 562), so that the ``kleene`` command (:mod:`kleene.console`) runs before
numpy and pyarrow are loaded, and a program that imports one submodule pays for that one."""


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use and kept here after."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kleene' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
