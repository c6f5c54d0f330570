"""The MATCH_RECOGNIZE engine: linear-time search over a prioritised automaton.

:func:`evaluate` has the reference evaluator's contract (``evaluate(mr, table) ->
pa.Table``); the modules: :mod:`.conditions` (physical DEFINEs, vectorised),
:mod:`.summary` and :mod:`.expressions` (what DEFINE and MEASURES read of a match),
:mod:`.threads` (the search), :mod:`.output` (measures, rows per match, skip),
:mod:`.engine` (partitions and the driver).
"""

from kleene.runtime.match_recognize.engine import evaluate

__all__ = ["evaluate"]
