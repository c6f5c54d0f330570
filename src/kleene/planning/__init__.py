"""Planning: between the language (a checked query) and the engines.

:func:`~kleene.planning.planner.plan_query` decides, once per query, the
engine, the automaton, the settings and the columns to read, and freezes them
in a :class:`~kleene.planning.plan.Plan`, which builds a fresh engine for
every session.  A new engine is chosen here and nowhere else.
"""

from kleene.planning.plan import Plan, Tuning
from kleene.planning.planner import choose_engine, plan_query

__all__ = ["Plan", "Tuning", "choose_engine", "plan_query"]
