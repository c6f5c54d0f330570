# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The treap of count vectors (:class:`kleene.registers.vectortree.VectorTree`), compiled.

The same tree, node for node: the same priorities (drawn from the same ``random.Random``), the
same splits, merges, pushes and sums, the same ``work`` counted, the same exact counts.
Nodes are typed objects instead of lists and the matrix and vector loops run without the
interpreter's dispatch.  The pure-Python class stays the readable reference and is what runs
when this module was not built or ``KLEENE_PURE_PYTHON`` is set; tests/registers/test_aggregate.py
compares the two.

**int64 fast path.**  A node's vector and sum are C int64 arrays while every entry fits; a tag
(:class:`Mat`) is a dense int64 ``k × k`` array while every entry fits.  Every product and sum
is checked (``__builtin_mul_overflow`` / ``__builtin_add_overflow``) into a scratch buffer
before anything is written; on overflow that node (or that tag) switches, exactly, to Python
ints (``big``: lists and sparse tuples as in the reference) and stays there.  So each primitive
(apply, push, pull) either completes in int64 or is redone in Python ints: never a wrapped count.

Size: ~560 lines, one job (the compiled tree); the two arithmetics (int64 and Python ints) of
each primitive sit side by side so that the switch between them can be read in one place.
"""

from random import Random
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy


cdef extern from *:
    bint mul_ovf "__builtin_mul_overflow"(long long a, long long b, long long* out) nogil
    bint add_ovf "__builtin_add_overflow"(long long a, long long b, long long* out) nogil

cdef object LO = -(1 << 63)
cdef object HI = (1 << 63) - 1


cdef inline bint fits(object x):
    return LO <= x <= HI


# -- Python-int arithmetic (the reference's, on sparse rows) --------------------------------------

cdef list py_vec_mat(list v, tuple m):
    cdef Py_ssize_t k = len(v), i, j
    cdef list out = [0] * k
    cdef object x
    cdef tuple row, jc
    for i in range(k):
        x = v[i]
        if x:
            row = <tuple>m[i]
            for jc in row:
                j = jc[0]
                out[j] = out[j] + x * jc[1]
    return out


cdef tuple py_compose(tuple a, tuple b):
    cdef Py_ssize_t k = len(a), i, j, m
    cdef list rows = [], acc
    cdef tuple jx, lc
    for i in range(k):
        acc = [0] * k
        for jx in <tuple>a[i]:
            x = jx[1]
            for lc in <tuple>b[<Py_ssize_t>jx[0]]:
                m = lc[0]
                acc[m] = acc[m] + x * lc[1]
        rows.append(tuple([(j, acc[j]) for j in range(k) if acc[j]]))
    return tuple(rows)


cdef object py_dot(list v, object f):
    cdef object total = 0
    cdef Py_ssize_t i
    for i in range(len(v)):
        x = v[i]
        if x:
            c = f[i]
            if c:
                total = total + x * c
    return total


# -- matrices -------------------------------------------------------------------------------------

cdef class Mat:
    """A move or a tag: the sparse rows (``py``, always kept when ``big``) and, while every entry
    fits, the dense int64 array ``d`` (row-major ``k × k``)."""
    cdef Py_ssize_t k
    cdef bint big
    cdef long long* d
    cdef tuple py

    def __dealloc__(self):
        if self.d != NULL:
            free(self.d)

    cdef tuple rows(self):
        """The sparse rows (built from ``d`` on first use)."""
        cdef Py_ssize_t i, j, k = self.k
        if self.py is None:
            self.py = tuple([tuple([(j, self.d[i * k + j]) for j in range(k) if self.d[i * k + j]])
                             for i in range(k)])
        return self.py


cdef dict _MATS = {}
"""Moves already converted, by ``id`` of their rows (the rows kept alive beside, so the id
stays theirs): the counter hands the same few move tuples again and again."""


cdef Mat mat_of(tuple m, Py_ssize_t k):
    """The matrix of sparse rows ``m``: int64 when every entry fits (cached)."""
    cdef tuple hit = _MATS.get(id(m))
    if hit is not None and hit[0] is m:
        return <Mat>hit[1]
    if len(_MATS) > 4096:
        _MATS.clear()
    out = make_mat(m, k)
    _MATS[id(m)] = (m, out)
    return out


cdef Mat make_mat(tuple m, Py_ssize_t k):
    cdef Mat out = Mat.__new__(Mat)
    cdef Py_ssize_t i, j
    cdef tuple row, jc
    out.k = k
    out.py = m
    out.d = <long long*>malloc(k * k * sizeof(long long))
    for i in range(k * k):
        out.d[i] = 0
    for i in range(k):
        row = <tuple>m[i]
        for jc in row:
            if not fits(jc[1]):
                free(out.d)
                out.d = NULL
                out.big = True
                return out
            j = jc[0]
            out.d[i * k + j] = jc[1]
    return out


cdef Mat compose(Mat a, Mat b):
    """``a · b``: first ``a``, then ``b``; int64 unless an entry overflows."""
    cdef Py_ssize_t k = a.k, i, j, l
    cdef long long x, p
    cdef long long* d
    cdef Mat out = Mat.__new__(Mat)
    out.k = k
    if not a.big and not b.big:
        d = <long long*>malloc(k * k * sizeof(long long))
        for i in range(k * k):
            d[i] = 0
        for i in range(k):
            for j in range(k):
                x = a.d[i * k + j]
                if x:
                    for l in range(k):
                        if b.d[j * k + l]:
                            if mul_ovf(x, b.d[j * k + l], &p) or add_ovf(d[i * k + l], p, &d[i * k + l]):
                                free(d)
                                d = NULL
                                break
                    if d == NULL:
                        break
            if d == NULL:
                break
        if d != NULL:
            out.d = d
            return out
    out.big = True
    out.py = py_compose(a.rows(), b.rows())
    return out


# -- nodes ----------------------------------------------------------------------------------------

cdef class Node:
    """``vec`` and ``sum``: int64 arrays (``v``, ``s``) unless ``big``, then Python lists
    (``pv``, ``ps``)."""
    cdef public object value
    cdef public long long seq
    cdef public double prio
    cdef public Node left
    cdef public Node right
    cdef public Mat tag
    cdef readonly bint big
    cdef Py_ssize_t k
    cdef long long* v
    cdef long long* s
    cdef list pv
    cdef list ps

    def __dealloc__(self):
        if self.v != NULL:
            free(self.v)

    cdef void to_big(self):
        """Switch to Python ints (exact: the int64 values are copied)."""
        cdef Py_ssize_t i
        if not self.big:
            self.pv = [self.v[i] for i in range(self.k)]
            self.ps = [self.s[i] for i in range(self.k)]
            self.big = True
            free(self.v)
            self.v = self.s = NULL

    cdef list sum_list(self):
        cdef Py_ssize_t i
        return list(self.ps) if self.big else [self.s[i] for i in range(self.k)]

    @property
    def vec(self):
        cdef Py_ssize_t i
        return list(self.pv) if self.big else [self.v[i] for i in range(self.k)]

    @property
    def sum(self):
        return self.sum_list()


cdef bint mat_vec_c(long long* v, Mat m, long long* out, Py_ssize_t k):
    """``out = v · m`` in int64; False on overflow (``out`` then garbage)."""
    cdef Py_ssize_t i, j
    cdef long long x, p
    for j in range(k):
        out[j] = 0
    for i in range(k):
        x = v[i]
        if x:
            for j in range(k):
                if m.d[i * k + j]:
                    if mul_ovf(x, m.d[i * k + j], &p) or add_ovf(out[j], p, &out[j]):
                        return False
    return True


cdef object dot_node(Node node, bint own, object f):
    """``(node's vec if own else its sum) · f``, ``f`` a sequence of Python ints."""
    cdef Py_ssize_t i, k = node.k
    cdef long long* a
    cdef long long acc = 0, p, c
    cdef object total
    if not node.big:
        a = node.v if own else node.s
        for i in range(k):
            if a[i]:
                c_obj = f[i]
                if c_obj:
                    if not fits(c_obj):
                        break
                    c = c_obj
                    if mul_ovf(a[i], c, &p) or add_ovf(acc, p, &acc):
                        break
        else:
            return acc
        total = 0
        for i in range(k):
            if a[i]:
                c_obj = f[i]
                if c_obj:
                    total = total + a[i] * c_obj
        return total
    return py_dot(node.pv if own else node.ps, f)


cdef inline bint below(Node node, object value, long long seq):
    """``(node.value, node.seq) < (value, seq)``."""
    if node.value < value:
        return True
    if node.value == value:
        return node.seq < seq
    return False


cdef class VectorTree:
    cdef public Py_ssize_t k
    cdef public object root
    cdef public Py_ssize_t size
    cdef public list work
    cdef public object random
    cdef long long _work
    cdef long long* tmp

    def __cinit__(self, Py_ssize_t k, list work, seed=0):
        self.tmp = <long long*>malloc((k + 1) * sizeof(long long))

    def __dealloc__(self):
        if self.tmp != NULL:
            free(self.tmp)

    def __init__(self, Py_ssize_t k, list work, seed=0):
        self.k = k
        self.root = None
        self.size = 0
        self.work = work
        self.random = Random(seed)
        self._work = 0

    cdef void _flush(self):
        if self._work:
            self.work[0] += self._work
            self._work = 0

    cdef void _mul(self, Node node, Mat m, bint own):
        """Node's vec (``own``) or sum times ``m``, in int64 unless that overflows."""
        cdef Py_ssize_t k = self.k
        cdef long long* a
        if not node.big and not m.big:
            a = node.v if own else node.s
            if mat_vec_c(a, m, self.tmp, k):
                memcpy(a, self.tmp, k * sizeof(long long))
                return
            node.to_big()
        elif not node.big:
            node.to_big()
        if own:
            node.pv = py_vec_mat(node.pv, m.rows())
        else:
            node.ps = py_vec_mat(node.ps, m.rows())

    cdef void _apply(self, Node node, Mat m):
        self._mul(node, m, False)
        if node.tag is None:
            node.tag = m
        else:
            node.tag = compose(node.tag, m)

    cdef void _push(self, Node node):
        cdef Mat tag
        if node.tag is not None:
            tag = node.tag
            self._work += 1
            self._mul(node, tag, True)
            if node.left is not None:
                self._apply(node.left, tag)
            if node.right is not None:
                self._apply(node.right, tag)
            node.tag = None

    cdef void _pull(self, Node node):
        cdef Py_ssize_t i, k = self.k
        cdef long long* t = self.tmp
        cdef Node left = node.left, right = node.right
        cdef list total, other
        cdef bint ok = True
        self._work += 1
        if not node.big and (left is None or not left.big) and (right is None or not right.big):
            memcpy(t, node.v, k * sizeof(long long))
            if left is not None:
                for i in range(k):
                    if add_ovf(t[i], left.s[i], &t[i]):
                        ok = False
            if right is not None:
                for i in range(k):
                    if add_ovf(t[i], right.s[i], &t[i]):
                        ok = False
            if ok:
                memcpy(node.s, t, k * sizeof(long long))
                return
        node.to_big()
        total = node.pv
        if left is not None:
            other = left.ps if left.big else left.sum_list()
            total = [total[i] + other[i] for i in range(k)]
        if right is not None:
            other = right.ps if right.big else right.sum_list()
            total = [total[i] + other[i] for i in range(k)]
        node.ps = total if total is not node.pv else list(total)

    cdef tuple _split(self, Node node, object value, long long seq):
        if node is None:
            return None, None
        self._push(node)
        if below(node, value, seq):
            left, right = self._split(node.right, value, seq)
            node.right = left
            self._pull(node)
            return node, right
        left, right = self._split(node.left, value, seq)
        node.left = right
        self._pull(node)
        return left, node

    cdef Node _merge(self, Node a, Node b):
        if a is None:
            return b
        if b is None:
            return a
        if a.prio > b.prio:
            self._push(a)
            a.right = self._merge(a.right, b)
            self._pull(a)
            return a
        self._push(b)
        b.left = self._merge(a, b.left)
        self._pull(b)
        return b

    def insert(self, value, long long seq, list vec):
        cdef Node node = Node()
        cdef Py_ssize_t i, k = self.k
        node.value, node.seq, node.prio = value, seq, self.random.random()
        node.left = node.right = None
        node.tag = None
        node.k = k
        if all(fits(x) for x in vec):
            node.v = <long long*>malloc(2 * k * sizeof(long long))
            node.s = node.v + k
            for i in range(k):
                node.v[i] = vec[i]
                node.s[i] = vec[i]
        else:
            node.big = True
            node.pv, node.ps = list(vec), list(vec)
        self.size += 1
        self.root = self._insert(self.root, node)
        self._flush()

    cdef Node _insert(self, Node node, Node new):
        if node is None:
            return new
        if new.prio > node.prio:
            new.left, new.right = self._split(node, new.value, new.seq)
            self._pull(new)
            return new
        self._push(node)
        if below(new, node.value, node.seq):
            node.left = self._insert(node.left, new)
        else:
            node.right = self._insert(node.right, new)
        self._pull(node)
        return node

    def delete(self, value, long long seq):
        self.size -= 1
        self.root = self._delete(self.root, value, seq)
        self._flush()

    cdef Node _delete(self, Node node, object value, long long seq):
        assert node is not None, "deleting a key the tree does not hold"
        self._push(node)
        if node.seq == seq and node.value == value:
            return self._merge(node.left, node.right)
        if below(node, value, seq):
            node.right = self._delete(node.right, value, seq)
        else:
            node.left = self._delete(node.left, value, seq)
        self._pull(node)
        return node

    def step(self, list cuts, list moves):
        cdef Node root = self.root
        cdef Node part, merged, left, rest
        cdef list parts
        cdef Py_ssize_t k = self.k
        if root is None:
            return 0
        if not cuts:
            m, f = moves[0]
            found = dot_node(root, False, f) if f is not None else 0
            if m is not None:
                self._apply(root, mat_of(<tuple>m, k))
            return found
        if all(mv[0] is None for mv in moves):
            found = self._count(cuts, [mv[1] for mv in moves])
            self._flush()
            return found
        parts = []
        rest = root
        for cut in cuts:
            left, rest = self._split(rest, cut[0], cut[1])
            parts.append(left)
        parts.append(rest)
        found = 0
        merged = None
        for i in range(len(parts)):
            part = parts[i]
            m, f = moves[i]
            if part is not None:
                if f is not None:
                    found += dot_node(part, False, f)
                if m is not None:
                    self._apply(part, mat_of(<tuple>m, k))
            merged = self._merge(merged, part)
        self.root = merged
        self._flush()
        return found

    cdef object _count(self, list cuts, list finals):
        cdef Py_ssize_t k = self.k, r, i
        cdef tuple zero = (0,) * k
        cdef list fs = [zero if f is None else f for f in finals]
        cdef Node root = self.root
        found = dot_node(root, False, fs[len(fs) - 1])
        for r in range(len(cuts)):
            a, b = fs[r], fs[r + 1]
            g = [a[i] - b[i] for i in range(k)]
            if any(g):
                found = found + self._prefix(root, cuts[r][0], cuts[r][1], g)
        return found

    cdef object _prefix(self, Node node, object value, long long seq, list g):
        """The prefix sum along one path; ``g`` (a column vector carried through the tags) is
        kept as Python ints (``k`` entries: the products with the int64 vectors are checked in
        :func:`dot_node`); a tag's product with ``g`` runs in int64 when both fit."""
        cdef object found = 0
        cdef Node left
        cdef list low
        cdef Mat tag
        cdef tuple row, jc
        cdef Py_ssize_t i, j, k = self.k
        cdef long long acc64, p, gj
        cdef bint ok
        while node is not None:
            self._work += 1
            left = node.left
            tag = node.tag
            if tag is None:
                low = g
            else:
                low = [0] * k
                ok = not tag.big
                if ok:
                    for j in range(k):
                        if not fits(g[j]):
                            ok = False
                            break
                        self.tmp[j] = g[j]
                if ok:
                    for i in range(k):
                        acc64 = 0
                        for j in range(k):
                            if tag.d[i * k + j]:
                                if mul_ovf(tag.d[i * k + j], self.tmp[j], &p) or add_ovf(acc64, p, &acc64):
                                    ok = False
                                    break
                        if not ok:
                            break
                        low[i] = acc64
                if not ok:
                    for i in range(k):
                        acc = 0
                        row = <tuple>tag.rows()[i]
                        for jc in row:
                            acc = acc + jc[1] * g[<Py_ssize_t>jc[0]]
                        low[i] = acc
            if below(node, value, seq):
                found = found + dot_node(node, True, low)
                if left is not None:
                    found = found + dot_node(left, False, low)
                node = node.right
            else:
                node = left
            g = low
        return found

    def total(self):
        return [0] * self.k if self.root is None else (<Node>self.root).sum_list()
