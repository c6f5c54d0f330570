"""kleene: complex event recognition with CEQL, evaluated by the CORE algorithm.

Quick start::

    import kleene
    q = kleene.compile("SELECT * FROM S WHERE SELL as a; BUY as b "
                       "FILTER a[price > 100] WITHIN 10 EVENTS")
    for ce in q.run(events):   # pyarrow Table, RecordBatches, DataFrame or dicts
        print(ce.start, ce.end, ce.positions)
"""

from kleene.api import ComplexEvent, Match, Query, compile
from kleene.language.errors import DataError, KleeneError, QueryError, UnsupportedError

__all__ = [
    "ComplexEvent",
    "DataError",
    "KleeneError",
    "Match",
    "Query",
    "QueryError",
    "UnsupportedError",
    "compile",
]
