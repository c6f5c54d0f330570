# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The tECS walk of :meth:`kleene.runtime.enumeration.Columns.add_node`, compiled.

The same left-first walk (CORE Algorithm 2), into the same three arrays, in the same order; the
pure-Python method stays the readable reference and is what runs when this module was not
built (no C compiler) or ``KLEENE_PURE_PYTHON`` is set.  In Python the walk costs about 1 µs
per complex event, most of it the interpreter's dispatch over ``n[0]``, ``n[3]`` and list
appends; here a node costs a type check and two pointer reads, and positions go straight
into the arrays' int64 buffers (no Python int per position, no conversion afterwards).

The walk holds *borrowed* pointers to nodes: the DAG below ``node`` is neither
changed nor freed while it runs (:func:`kleene.runtime.tecs.sever` only runs between events),
and nothing in the loop calls back into Python code that could change it (comparing a time
with ``tau`` is a comparison of two numbers).
"""

from cpython cimport array
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.ref cimport PyObject
from libc.string cimport memcpy

cdef extern from "Python.h":
    Py_ssize_t Py_SIZE(object)
    PyObject* PyTuple_GET_ITEM(object, Py_ssize_t)
    PyObject* PyList_GET_ITEM(object, Py_ssize_t)
    long PyLong_AsLong(object) except? -1

cdef enum:
    OUTPUT = 1
    UNION = 2

# Scratch space reused by every call (the GIL is held throughout): the current path's
# positions, latest first, and the pending right children with the path's length at each.
cdef long long* _path = NULL
cdef Py_ssize_t _path_cap = 0
cdef PyObject** _stack = NULL
cdef Py_ssize_t* _depth = NULL
cdef Py_ssize_t _stack_cap = 0


cdef inline PyObject* _item(object n, Py_ssize_t i) except NULL:
    """Field ``i`` of a node (a tuple, or a list for union nodes), borrowed."""
    if type(n) is not tuple and type(n) is not list:
        raise TypeError(f"not a tECS node: {type(n).__name__}")
    if i >= Py_SIZE(n):
        raise IndexError(f"a tECS node without field {i}: {n!r}")
    if type(n) is tuple:
        return PyTuple_GET_ITEM(n, i)
    return PyList_GET_ITEM(n, i)


cdef inline bint _reaches(object m, object tau, long long ctau, bint int_tau) except -1:
    """``m >= tau``, without a rich comparison when both are integers."""
    if int_tau and type(m) is int:
        return <long long>m >= ctau
    return m >= tau


cdef int _grow_path() except -1:
    global _path, _path_cap
    cdef Py_ssize_t cap = 64 if _path_cap == 0 else 2 * _path_cap
    cdef long long* p = <long long*>PyMem_Realloc(_path, cap * sizeof(long long))
    if p == NULL:
        raise MemoryError()
    _path, _path_cap = p, cap
    return 0


cdef int _grow_stack() except -1:
    global _stack, _depth, _stack_cap
    cdef Py_ssize_t cap = 64 if _stack_cap == 0 else 2 * _stack_cap
    cdef PyObject** s = <PyObject**>PyMem_Realloc(_stack, cap * sizeof(PyObject*))
    if s == NULL:
        raise MemoryError()
    _stack = s
    cdef Py_ssize_t* d = <Py_ssize_t*>PyMem_Realloc(_depth, cap * sizeof(Py_ssize_t))
    if d == NULL:
        raise MemoryError()
    _depth, _stack_cap = d, cap
    return 0


cdef inline int _append(array.array a, long long value) except -1:
    cdef Py_ssize_t size = Py_SIZE(a)
    array.resize_smart(a, size + 1)
    a.data.as_longlongs[size] = value
    return 0


def walk(object node, object tau, Py_ssize_t limit, array.array starts, array.array lengths,
         array.array flat):
    """:func:`kleene.runtime.enumeration.walk`: append the complex events of ``node`` that start
    at ``tau`` or later (at most ``limit``) to the arrays (typecode ``q``); how many."""
    return _walk(node, tau, limit, starts, lengths, flat)


def add_node(self, object node, object tau, Py_ssize_t limit, object end, object key):
    """:meth:`kleene.runtime.enumeration.Columns.add_node` (it replaces it on the class)."""
    if node[1] < tau or limit <= 0:
        return 0
    cdef Py_ssize_t count = _walk(node, tau, limit, self.starts, self.lengths, self.flat)
    self.run_ends.append(end)
    self.run_keys.append(key)
    self.run_counts.append(count)
    return count


cdef Py_ssize_t _walk(object node, object tau, Py_ssize_t limit, array.array starts,
                      array.array lengths, array.array flat) except -1:
    if starts.ob_descr.typecode != b"q" or lengths.ob_descr.typecode != b"q" or flat.ob_descr.typecode != b"q":
        raise TypeError("walk() writes into arrays of typecode 'q'")
    cdef bint int_tau = type(tau) is int
    cdef long long ctau = <long long>tau if int_tau else 0
    cdef Py_ssize_t count = 0, plen = 0, sp = 0, size
    cdef long kind
    cdef object n = node
    cdef object right
    while True:
        kind = PyLong_AsLong(<object>_item(n, 0))
        if kind == OUTPUT:
            if plen == _path_cap:
                _grow_path()
            _path[plen] = <long long><object>_item(n, 2)
            plen += 1
            n = <object>_item(n, 3)
        elif kind == UNION:
            right = <object>_item(n, 3)
            if _reaches(<object>_item(right, 1), tau, ctau, int_tau):
                if sp == _stack_cap:
                    _grow_stack()
                _stack[sp] = <PyObject*>right
                _depth[sp] = plen
                sp += 1
            n = <object>_item(n, 2)
        else:
            _append(starts, <long long><object>_item(n, 2))
            _append(lengths, plen)
            size = Py_SIZE(flat)
            array.resize_smart(flat, size + plen)
            memcpy(flat.data.as_longlongs + size, _path, plen * sizeof(long long))
            count += 1
            if count >= limit or sp == 0:
                return count
            sp -= 1
            n = <object>_stack[sp]
            plen = _depth[sp]


def _release() -> None:
    """Free the scratch space (for tests of the growth path; it is reallocated on demand)."""
    global _path, _path_cap, _stack, _depth, _stack_cap
    PyMem_Free(_path)
    PyMem_Free(_stack)
    PyMem_Free(_depth)
    _path = NULL
    _stack = NULL
    _depth = NULL
    _path_cap = 0
    _stack_cap = 0
