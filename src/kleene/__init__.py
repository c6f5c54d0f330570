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


def __getattr__(name: str) -> object:
    """``kleene.match_recognize`` is loaded on first use (``import kleene`` stays light)."""
    if name == "match_recognize":
        from kleene.row_patterns import match_recognize

        return match_recognize
    raise AttributeError(f"module 'kleene' has no attribute {name!r}")
