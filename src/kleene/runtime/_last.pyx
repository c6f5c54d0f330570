# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""LAST's dynamic program below one tECS node (:func:`kleene.runtime.strategies._last_below`), compiled.

The same nodes evaluated in the same order, the same values in ``memo`` and in the union
nodes' cache slot, the same preference (:func:`kleene.runtime.strategies.last_better`); the
pure-Python function stays the readable reference and is what runs when this module was not
built (no C compiler) or ``KLEENE_PURE_PYTHON`` is set.  LAST runs it at every end position,
over the nodes created since the ends before: in Python that is about 1 µs per node of
interpreter dispatch, here a few pointer reads and comparisons.
"""

cdef enum:
    BOTTOM = 0
    OUTPUT = 1
    UNION = 2
    CACHE = 4  # kleene.runtime.strategies.CACHE

cdef object _MISSING = object()


cdef inline bint _better(object a, object b) except -1:
    """:func:`kleene.runtime.strategies.last_better`: is ``a`` preferred to ``b``?"""
    cdef object x = a[2]
    cdef object y = b[2]
    while x is not None and y is not None:
        if x is y:
            return False
        if x[0] != y[0]:
            return x[0] > y[0]
        x = x[1]
        y = y[1]
    return x is not None


cdef inline object _cached(object n, object tau):
    """A union node's cached best if it still holds at ``tau``, else ``_MISSING``."""
    if type(n) is not list or len(<list>n) <= CACHE or (<list>n)[0] != UNION:
        return _MISSING
    value = (<list>n)[CACHE]
    if value is None or value[0] >= tau:
        return value
    return _MISSING


def last_below(object root, object tau, dict memo):
    """:func:`kleene.runtime.strategies._last_below`, compiled (see the module docstring)."""
    cdef list stack = [root]
    cdef object n, key, child, below, value, left, right, lv, rv
    cdef long kind
    while stack:
        n = stack[len(stack) - 1]
        key = id(n)
        if key in memo:
            stack.pop()
            continue
        if n[1] < tau:
            memo[key] = None
            stack.pop()
            continue
        kind = n[0]
        if kind == OUTPUT:
            child = n[3]
            below = _cached(child, tau)
            if below is _MISSING:
                below = memo.get(id(child), _MISSING)
                if below is _MISSING:
                    stack.append(child)
                    continue
            memo[key] = None if below is None else (below[0], below[1], (n[2], below[2]))
        elif kind == UNION:
            value = _cached(n, tau)
            if value is _MISSING:
                left = n[2]
                right = n[3]
                lv = _cached(left, tau)
                if lv is _MISSING:
                    lv = memo.get(id(left), _MISSING)
                    if lv is _MISSING:
                        stack.append(left)
                        continue
                rv = None
                if right[1] >= tau:
                    rv = _cached(right, tau)
                    if rv is _MISSING:
                        rv = memo.get(id(right), _MISSING)
                        if rv is _MISSING:
                            stack.append(right)
                            continue
                if lv is None or (rv is not None and not _better(lv, rv)):
                    value = rv
                else:
                    value = lv
                if len(<list>n) > CACHE:
                    (<list>n)[CACHE] = value
                else:
                    (<list>n).append(value)
            memo[key] = value
        else:
            memo[key] = (n[1], n[2], None)
        stack.pop()
    return memo[id(root)]
