# cython: language_level=3, wraparound=False
"""Algorithm 1's step (:meth:`kleene.runtime.evaluator.Evaluator.step`), compiled.

The same updates of the same objects in the same order: the union-lists (Python lists of tECS
nodes), the tuples and lists of :mod:`kleene.runtime.tecs`, the lazily determinized automaton's
cache (:class:`kleene.automata.determinize.LazyDFA`, whose ``compute`` still fills misses).  So
the pure-Python method stays the readable reference and the two can be swapped at any event.
What the compilation removes is the interpreter's cost per operation: dictionary and list
accesses become C calls, the states and marks C integers, and the comparisons of times with
the window bound integer comparisons when both are integers.
"""

from cpython.dict cimport PyDict_GetItem, PyDict_Next, PyDict_SetItem
from cpython.list cimport PyList_Append, PyList_GET_SIZE, PyList_Insert
from cpython.ref cimport PyObject

from kleene.runtime.tecs import sever

cdef extern from "Python.h":
    PyObject* PyList_GET_ITEM(object, Py_ssize_t)
    PyObject* PyTuple_GET_ITEM(object, Py_ssize_t)
    Py_ssize_t PyTuple_GET_SIZE(object)

cdef enum:
    DEAD = -1
    UNION = 2

cdef object _BOTTOM = 0
cdef object _OUTPUT = 1
cdef object _UNION = 2


cdef inline object _get(object n, Py_ssize_t i):
    """Field ``i`` of a tECS node (a tuple, or a list for union nodes)."""
    if type(n) is tuple and i < PyTuple_GET_SIZE(n):
        return <object>PyTuple_GET_ITEM(n, i)
    return n[i]


cdef inline bint _less(object a, object b) except -1:
    """``a < b`` for times: integer comparison when both are ints."""
    if type(a) is int and type(b) is int:
        return <long long>a < <long long>b
    return a < b


cdef inline bint _is_union(object n) noexcept:
    return type(n) is list


cdef object _union(object n1, object n2, list created):
    """:func:`kleene.runtime.tecs.union`."""
    cdef list u, u1, u2
    if not _is_union(n1):
        u = [_UNION, _get(n1, 1), n1, n2]
        created.append(u)
        return u
    if not _is_union(n2):
        u = [_UNION, _get(n1, 1), n2, n1]
        created.append(u)
        return u
    r1 = n1[3]
    r2 = n2[3]
    if not _less(_get(r1, 1), _get(r2, 1)):
        u2 = [_UNION, _get(r1, 1), r1, r2]
    else:
        u2 = [_UNION, _get(r2, 1), r2, r1]
    u1 = [_UNION, n1[1], n2[2], u2]
    u = [_UNION, n1[1], n1[2], u1]
    created.append(u2)
    created.append(u1)
    created.append(u)
    return u


cdef int _insert(list ul, object node, list created) except -1:
    """:func:`kleene.runtime.tecs.insert`."""
    cdef Py_ssize_t i, size = PyList_GET_SIZE(ul)
    m = _get(node, 1)
    for i in range(1, size):
        mi = _get(<object>PyList_GET_ITEM(ul, i), 1)
        if mi == m:
            ul[i] = _union(<object>PyList_GET_ITEM(ul, i), node, created)
            return 0
        if _less(mi, m):
            PyList_Insert(ul, i, node)
            return 0
    PyList_Append(ul, node)
    return 0


cdef object _merge(list ul, list created):
    """:func:`kleene.runtime.tecs.merge`."""
    cdef Py_ssize_t i
    cdef list u
    n = <object>PyList_GET_ITEM(ul, PyList_GET_SIZE(ul) - 1)
    for i in range(PyList_GET_SIZE(ul) - 2, -1, -1):
        a = <object>PyList_GET_ITEM(ul, i)
        u = [_UNION, _get(a, 1), a, n]
        created.append(u)
        n = u
    return n


cdef inline object _whole(list ul, list created):
    """One node for a union-list: its only node, or the merge."""
    if PyList_GET_SIZE(ul) == 1:
        return <object>PyList_GET_ITEM(ul, 0)
    return _merge(ul, created)


cdef int _prune(list ul, object tau) except -1:
    """:func:`kleene.runtime.tecs.prune` of a list whose first node reaches ``tau``."""
    cdef Py_ssize_t k = PyList_GET_SIZE(ul)
    while _less(_get(<object>PyList_GET_ITEM(ul, k - 1), 1), tau):
        k -= 1
    if k < PyList_GET_SIZE(ul):
        del ul[k:]
    return 0


cdef inline object _lookup(object dfa, list cache, long state, object bits):
    """The cached ``(marked, unmarked)`` successors, computed on a miss."""
    cdef PyObject* hit = PyDict_GetItem(cache[state], bits)
    if hit != NULL:
        return <object>hit
    return dfa.compute(state, bits)


def step(self, object pos, object time, object bits, object tau):
    """:meth:`kleene.runtime.evaluator.Evaluator.step`: one event; the nodes to enumerate."""
    dfa = self.dfa
    cdef list cache = dfa.cache
    cdef dict old = self.table
    cdef dict merged = self.merged
    cdef list unions = self.unions
    cdef dict new = {}
    cdef long m, u
    cdef Py_ssize_t at = 0
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject* found
    cdef list ul, target
    cdef tuple hit

    # A run may start here: q0 first, it has the largest maximum start.
    hit = _lookup(dfa, cache, 0, bits)
    m = hit[0]
    u = hit[1]
    if m != DEAD:
        new[m] = [(_OUTPUT, time, pos, (_BOTTOM, time, pos))]
    if u != DEAD:
        found = PyDict_GetItem(new, u)
        if found != NULL:
            _insert(<list>found, (_BOTTOM, time, pos), unions)
        else:
            new[u] = [(_BOTTOM, time, pos)]

    while PyDict_Next(old, &at, &key, &value):
        ul = <list?><object>value
        if PyList_GET_SIZE(ul) == 0:
            raise IndexError("an empty union-list")  # never made by step(): a broken table
        if _less(_get(<object>PyList_GET_ITEM(ul, 0), 1), tau):
            continue  # every run in p started before the window
        hit = _lookup(dfa, cache, <long><object>key, bits)
        m = hit[0]
        u = hit[1]
        if m == DEAD and u == DEAD:
            continue
        if _less(_get(<object>PyList_GET_ITEM(ul, PyList_GET_SIZE(ul) - 1), 1), tau):
            _prune(ul, tau)
        # merge(T[p]) only when a node for the whole list is needed.
        found = PyDict_GetItem(merged, <object>key)
        n = None if found == NULL else <object>found
        if m != DEAD:
            if n is None:
                n = _whole(ul, unions)
            node = (_OUTPUT, _get(n, 1), pos, n)
            found = PyDict_GetItem(new, m)
            if found == NULL:
                new[m] = [node]
            else:
                _insert(<list>found, node, unions)
        if u != DEAD:
            found = PyDict_GetItem(new, u)
            if found == NULL:
                new[u] = ul
            else:
                if n is None:
                    n = _whole(ul, unions)
                _insert(<list>found, n, unions)

    self.table = new
    cdef list outputs = []
    cdef dict now_merged = {}
    cdef list final = dfa.final
    at = 0
    while PyDict_Next(new, &at, &key, &value):
        if final[<long><object>key]:
            n = _whole(<list>value, unions)
            PyDict_SetItem(now_merged, <object>key, n)
            outputs.append(n)
    self.merged = now_merged
    if PyList_GET_SIZE(unions) > self._sweep_at:
        self.unions = sever(unions, tau)
        self._sweep_at = max(4096, 2 * len(self.unions))
    return outputs
