"""The predicate stage: every atomic predicate evaluated column-wise into one bit vector per event.

A query's atoms — its event types, its unary predicates and its streams — are
numbered into bit positions (:class:`~kleene.predicates.atoms.Atoms`); a
:class:`~kleene.predicates.table.PredicateTable` compiles the predicates once
and evaluates them over whole Arrow batches with numpy / pyarrow.compute
kernels, giving one ``uint64`` per event that the automata run on.  Before
that, :func:`~kleene.predicates.conform.conform` casts the columns to the
kinds the query needs (:func:`~kleene.predicates.kinds.infer_kinds`) and
finds the bad rows; :class:`~kleene.predicates.shared.SharedPredicates`
evaluates the atoms of several queries once.

Modules: :mod:`.atoms` (the numbering), :mod:`.kinds` (kind inference),
:mod:`.values` (runtime values, reading Arrow columns), :mod:`.arithmetic`,
:mod:`.comparison`, :mod:`.nodes` (compiled predicates, ``structural_key``),
:mod:`.per_value` (evaluation per distinct value), :mod:`.table`
(``PredicateTable``, ``TooManyPredicatesError``, ``MAX_WIDTH``),
:mod:`.conform` (``Requirement``, ``conform``) and :mod:`.shared`
(``SharedPredicates``).  Nothing is imported here, so importing one module
loads only what it needs.
"""
