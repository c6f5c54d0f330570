# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The engine's per-event loop (:meth:`kleene.runtime.engine.Engine.loop`), compiled.

The same events visited in the same order, the same calls of the evaluators' ``step`` (itself
compiled, :mod:`kleene.runtime._step`), the same tECS nodes enumerated into the same sink in the
same order, the same partitions created, freed and swept, and the same bookkeeping of the
engine (``steps``, ``tau``, the per-state counts of active partitions); the pure-Python method
stays the readable reference (:mod:`kleene.native`).  What the compilation removes is the
interpreter around the step, about 1.5 µs per visited event: positions, times and bit-vector
numbers are read straight from the numpy arrays (no conversion to Python lists, sparse or
dense), partition keys are built as tuples in C, and the skip tables, the window bound, the
step counter and the comparison of an evaluator's states with those last reported are C
lookups and comparisons.

**What it takes.**  Every strategy (ALL, STRICT, NEXT, LAST, MAX), CONSUME BY and LIMIT (and the
limits ``max_matches``, ``max_runs`` and ``max_memory`` of :mod:`kleene.limits`), with or
without PARTITION BY, into a list or a :class:`~kleene.runtime.enumeration.Columns`; positions
as int64 and times as int64 or float64 (or none).  It declines, before doing anything, a
projector (NEXT/LAST/MAX with a projection) and other array types: :func:`steps` returns False
and the engine runs the Python loop.  The selection strategies, CONSUME BY, the sweep of
expired partitions and a new partition's evaluator call the engine's own Python methods
(``_select``, ``_consume``, ``_evict_expired``, ``_new``).
"""

import numpy as np

from cpython.dict cimport PyDict_GetItem, PyDict_Next, PyDict_SetItem, PyDict_Size
from cpython.long cimport PyLong_FromLongLong
from cpython.float cimport PyFloat_FromDouble
from cpython.ref cimport PyObject, Py_INCREF
from cpython.set cimport PySet_Contains, PySet_GET_SIZE
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

from kleene.runtime.enumeration import enumerate_node
from kleene.runtime.maximal import MaxEvaluator
from kleene.runtime.tecs import FILTER

cdef long long NO_BOUND = -(1 << 62)  # kleene.runtime.engine.NO_BOUND
cdef object NO_BOUND_OBJ = NO_BOUND
cdef long long UNLIMITED = 1 << 62  # kleene.runtime.engine.UNLIMITED
cdef object _INT64 = np.dtype(np.int64)
cdef object _FLOAT64 = np.dtype(np.float64)
cdef object _INTP = np.dtype(np.intp)


cdef inline bint _same_states(object table, object active) except -1:
    """``table.keys() == active`` (the states of an evaluator against those last reported)."""
    cdef Py_ssize_t at = 0
    cdef PyObject* key
    cdef PyObject* value
    if type(table) is not dict or type(active) is not frozenset:
        return table.keys() == active
    if PyDict_Size(table) != PySet_GET_SIZE(active):
        return False
    while PyDict_Next(table, &at, &key, &value):
        if not PySet_Contains(active, <object>key):
            return False
    return True


cdef bint _has_null(list cols) except -1:
    """``any(None in col for col in cols)``, comparing only what may equal None."""
    cdef Py_ssize_t i
    for col in cols:
        for i in range(len(<list>col)):
            item = (<list>col)[i]
            if item is None:
                return True
            if type(item) is str or type(item) is int or type(item) is float or type(item) is bool:
                continue  # never equal to None
            if item == None:  # noqa: E711 (what `in` does)
                return True
    return False


cdef int _update(object engine, object ev, object table, object old, bint partitioned,
                 dict counts) except -1:
    """:meth:`kleene.runtime.engine.Engine._update` of an evaluator whose states (``table``'s
    keys) are no longer ``old``, its ``active_key``: the same counts, without the two set
    differences (a state of ``old`` not in ``new``, then one of ``new`` not in ``old``)."""
    cdef frozenset new = frozenset(table)
    ev.active_key = new
    if partitioned:
        for s in old:
            if s in new:
                continue
            counts[s] -= 1
            if not counts[s]:
                del counts[s]
                engine._global = None
        for s in new:
            if s in old:
                continue
            if s not in counts:
                counts[s] = 0
                engine._global = None
            counts[s] += 1
    return 0


cdef Py_ssize_t _bisect_left(list todo, Py_ssize_t j) except -1:
    """``bisect.bisect_left(todo, j)`` on a sorted list of ints."""
    cdef Py_ssize_t lo = 0, hi = len(todo), mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if <Py_ssize_t>todo[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef object _active(object engine, bint partitioned, dict counts):
    """:meth:`kleene.runtime.engine.Engine._active`."""
    if not partitioned:
        return engine.single.active_key
    if engine._global is None:
        engine._global = frozenset(counts)
    return engine._global


cdef inline object _table(object plan, dict tables, object active):
    """``plan.skip_table(active)``, without a call when it is made already."""
    cdef PyObject* hit = PyDict_GetItem(tables, active)
    if hit != NULL:
        return <object>hit
    return plan.skip_table(active)


cdef inline object _visits(object plan, dict lists, object active):
    """``plan.visits(active)``, without a call when it is made already."""
    cdef PyObject* hit = PyDict_GetItem(lists, active)
    if hit != NULL:
        return <object>hit
    return plan.visits(active)


def steps(engine, plan, positions, times, key_columns, cand, out):
    """:meth:`kleene.runtime.engine.Engine.loop` over the candidates ``cand`` (all when None).

    Returns False, having done nothing, when it does not take the configuration (see the
    module's docstring); True when it ran.
    """
    if engine.projector is not None or positions.dtype != _INT64:
        return False
    if times is not None and times.dtype != _INT64 and times.dtype != _FLOAT64:
        return False
    if cand is not None and cand.dtype != _INTP:
        return False
    if plan.inverse.dtype != _INTP:
        return False
    # The loop reads the arrays and key lists without bounds checks: check them once here.
    n = len(positions)
    if (times is not None and len(times) != n) or len(plan.inverse) != plan.size:
        return False
    if cand is None:
        if plan.size != n:
            return False
    elif len(cand) != plan.size or (len(cand) and (cand.min() < 0 or cand.max() >= n)):
        return False
    cdef list cols = None
    if key_columns is not None:
        cols = list(key_columns)
        for col in cols:
            if type(col) is not list or len(<list>col) < n:
                return False
    _run(engine, plan, positions, times, cols, cand, out)
    return True


cdef int _run(object engine, object plan, object positions, object times, list cols, object cand,
              object out) except -1:
    settings = engine.settings
    window = settings.window
    cdef long long limit = settings.limit if settings.limit is not None else UNLIMITED
    limits = engine.limits
    cdef long long cap = limits.max_matches
    cdef long long room = limit if limit <= cap else cap + 1  # see Engine.loop
    cdef Py_ssize_t max_runs = limits.max_runs
    cdef long long produced = engine.produced, check_at = engine.check_at
    cdef bint consuming = settings.consume != "NONE"
    cdef bint nxt = settings.strategy == "NEXT"
    cdef bint selecting = settings.strategy == "LAST" or (
        settings.strategy == "MAX" and not isinstance(engine.single, MaxEvaluator)
    )
    cdef bint all_partitioned = settings.partitioned
    cdef const long long[:] pos_mv = positions
    cdef const long long[:] itime_mv
    cdef const double[:] ftime_mv
    cdef const Py_ssize_t[:] inv = plan.inverse
    cdef const Py_ssize_t[:] cand_mv
    cdef bint has_cand = cand is not None
    cdef int time_kind = 0  # 0: positions are the times, 1: int64 times, 2: float64 times
    if times is not None:
        if times.dtype == _INT64:
            itime_mv = times
            time_kind = 1
        else:
            ftime_mv = times
            time_kind = 2
    if has_cand:
        cand_mv = cand
    # The window bound in C when it is an integer and so are the times.
    cdef bint windowed = window is not None
    cdef bint int_window = windowed and type(window) is int and 0 <= window < (1 << 62) and time_kind != 2
    cdef long long cwindow = window if int_window else 0
    cdef object best = engine.tau
    cdef bint int_best = type(best) is int and -(1 << 62) <= best < (1 << 62)
    cdef long long cbest = best if int_best else 0
    cdef long long t, ctau = NO_BOUND
    cdef bint c_tau

    cdef list values = plan.values
    cdef Py_ssize_t m = plan.size
    cdef dict tables = plan.tables
    cdef dict lists = plan.lists
    cdef dict partitions = engine.partitions
    cdef dict counts = engine._counts
    cdef bint partitioned = cols is not None
    cdef Py_ssize_t ncols = 0 if cols is None else len(cols)
    cdef bint nulls = partitioned and _has_null(cols)
    cdef bint out_is_list = out.__class__ is list
    add_node = None if out_is_list else out.add_node
    new_evaluator = engine._new
    step = type(engine.single).step  # every evaluator is made by engine._new: one class
    cdef long long nsteps = engine.steps
    cdef long long sweep_at = engine._sweep_at

    cdef Py_ssize_t j = 0, k = 0, i, c, code, found, ntodo = 0
    cdef PyObject* hit
    cdef object key = None, ev = engine.single, tau, pos, time, outputs, now, item, states, reported
    cdef list todo, skip, table

    active = _active(engine, all_partitioned, counts)
    todo = _visits(plan, lists, active)
    skip = _table(plan, tables, active)
    if todo is not None:
        ntodo = len(todo)
    try:
        while j < m:
            if todo is not None:
                if k >= ntodo:
                    break
                j = <Py_ssize_t>todo[k]
                k += 1
                code = inv[j]
            else:
                code = inv[j]
                if skip[code]:
                    j += 1
                    continue
            i = cand_mv[j] if has_cand else j
            if partitioned:
                key = PyTuple_New(ncols)
                for c in range(ncols):
                    item = (<list>cols[c])[i]
                    Py_INCREF(item)
                    PyTuple_SET_ITEM(key, c, item)
                if nulls and None in key:
                    j += 1
                    continue
                hit = PyDict_GetItem(partitions, key)
                if hit == NULL:
                    if PyDict_Size(partitions) >= max_runs:
                        raise limits.runs_error(PyDict_Size(partitions) + 1, "partitions holding runs")
                    ev = new_evaluator()
                    PyDict_SetItem(partitions, key, ev)
                else:
                    ev = <object>hit
                table = _table(plan, tables, ev.active_key)
                if table[code]:
                    j += 1
                    continue
            t = pos_mv[i]
            pos = PyLong_FromLongLong(t)
            if time_kind == 0:
                time = pos
            elif time_kind == 1:
                t = itime_mv[i]
                time = PyLong_FromLongLong(t)
            else:
                time = PyFloat_FromDouble(ftime_mv[i])
            c_tau = True
            if not windowed:
                tau = NO_BOUND_OBJ
                ctau = NO_BOUND
            elif int_window and t >= -(1 << 62):
                ctau = t - cwindow
                tau = PyLong_FromLongLong(ctau)
            else:
                tau = time - window
                c_tau = False
            if int_best and c_tau:
                if ctau > cbest:
                    cbest = ctau
                    best = tau
            elif tau > best:
                best = tau
                int_best = False
            nsteps += 1
            outputs = step(ev, pos, time, values[code], tau)
            if outputs:
                if nxt:
                    out.extend([(start, pos, found_positions, key) for start, found_positions in outputs])
                    found = len(outputs)
                elif selecting:
                    found = engine._select(outputs, tau, out, room, pos, key)
                else:
                    found = 0
                    for node in outputs:
                        if out_is_list or node[0] == FILTER:
                            found += enumerate_node(node, tau, out, room - found, pos, key)
                        else:
                            found += add_node(node, tau, room - found, pos, key)
                        if found >= room:
                            break
                if found > cap:
                    raise limits.matches_error(pos)
                produced += found
                if produced >= check_at:
                    engine.produced = produced
                    engine.checkpoint(pos)
                    check_at = engine.check_at
                if found and consuming:
                    engine._consume(ev)
            j += 1
            if partitioned:
                if not ev.table:
                    partitions.pop(key, None)  # an empty evaluator is a fresh one: free it
                if nsteps >= sweep_at:
                    engine.steps = nsteps
                    engine._evict_expired(tau)
                    sweep_at = engine._sweep_at
            states = ev.table
            reported = ev.active_key
            if not _same_states(states, reported):
                _update(engine, ev, states, reported, all_partitioned, counts)
                now = _active(engine, all_partitioned, counts)
                if now is not active and now != active:
                    active = now
                    skip = _table(plan, tables, active)
                    todo = _visits(plan, lists, active)
                    if todo is not None:
                        ntodo = len(todo)
                        k = _bisect_left(todo, j)
    finally:
        engine.steps = nsteps
        engine.tau = best
        engine.produced = produced
    return 0
