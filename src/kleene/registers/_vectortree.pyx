# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The treap of count vectors (:class:`kleene.registers.vectortree.VectorTree`), compiled.

The same tree, node for node: the same priorities (drawn from the same ``random.Random``), the
same splits, merges, pushes and sums, the same ``work`` counted, the same exact counts.
Nodes are typed objects instead of lists and the matrix and vector loops run without the
interpreter's dispatch.  The pure-Python class stays the readable reference and is what runs
when this module was not built or ``KLEENE_PURE_PYTHON`` is set; tests/registers/test_aggregate.py
and tests/registers/test_vectortree_twin.py compare the two.

**int64 fast path, then limbs.**  A node's vector, sum and pending tag are C int64 arrays
(``k``, ``k`` and ``k × k``, one block the node owns) while every entry fits; a move
(:class:`Mat`, shared and read only) is a dense int64 ``k × k`` array while every entry fits.
Every product and sum is checked (``__builtin_mul_overflow`` / ``__builtin_add_overflow``, in C
kernels with ``k`` unrolled for 2, 3 and 4) into locals before anything is written; on overflow
that node's vectors (or its tag) switch, exactly, to unsigned multi-limb numbers
(:mod:`kleene.registers._limbs`: uint64 limbs in one C block the node owns, each entry's length
kept beside it, a width that doubles, 2, 4, 8 ... limbs, when a result needs more) and stay
there (a tag until it is pushed).  So each primitive (apply, push, pull) either completes in
int64 or is redone in limbs, and a limb result is computed into the tree's scratch at a width
where it always fits, then stored, the node growing first if needed: never a wrapped count.
Counts are never negative, so int64 arrays hold non-negative values only (a negative inserted
count or move entry, which kleene never hands the tree, goes to Python ints, the reference's
lists and sparse rows, as does a node whose neighbour is there).  A path sum
(:meth:`VectorTree._prefix`) changes nothing but ``work``: it runs in int64, else in limbs
(its signed column ``g`` split into two non-negative ones, each carried down and summed on its
own, the result their difference), else, with a Python-int node on the path, in Python ints.

**Cost per node.**  No allocation per node touched: a tag is composed in place in the node's own
buffer (``has_tag`` says whether one is pending), split, merge, insert and delete walk down
iteratively and recompute the sums on the way back from a stack of borrowed pointers (every
node on it stays referenced by the tree or by the pieces being built), and keys are compared as
C doubles when both are a ``float`` or an ``int`` of at most 2^53 in magnitude (then the double
comparison is Python's exactly, NaN included), else with Python's ``<`` and ``==`` (strings,
larger ints, other types).  A node's block sits inside the node object when ``k <= 3``.
tests/registers/replay_tree.py measures this tree alone against another build.

Size: ~1,240 lines, one job (the compiled tree); the three arithmetics (int64, limbs and Python
ints) of each primitive sit side by side so that the switches between them can be read in one
place.  The C kernels are apart, inline, in ``.pxd`` files (the int64 ones in ``_int64.pxd``,
the limb ones and their conversions in ``_limbs.pxd``); the nodes and the tree stay in this
module, whose generated C is the same as before the kernels moved out (the nodes' methods and
the tree's are called through Cython's vtables, which a second module would not change, but
a second extension to build, load and keep in step with this one would).
"""

from random import Random
from cpython.object cimport PyObject
from cpython.float cimport PyFloat_CheckExact, PyFloat_AS_DOUBLE
from cpython.long cimport PyLong_CheckExact
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy
from kleene.registers._limbs cimport (u64, lb_used, lb_vec_mat, lb_compose, lb_sum, lb_trim,
                                      lb_max, lb_dot, lb_mat_col, lb_add, width_for, lb_int,
                                      lb_list, lb_rows, limbs_needed, int_to_limbs)
from kleene.registers._int64 cimport kl_vec_mat, kl_compose, kl_sum, kl_dot, kl_mat_col


cdef extern from *:
    bint mul_ovf "__builtin_mul_overflow"(long long a, long long b, long long* out) noexcept nogil
    bint add_ovf "__builtin_add_overflow"(long long a, long long b, long long* out) noexcept nogil

cdef extern from "Python.h":
    long long PyLong_AsLongLongAndOverflow(object, int*) except? -1

cdef object LO = -(1 << 63)
cdef object HI = (1 << 63) - 1
cdef long long EXACT = 1LL << 53
DEF INLINE = 15


cdef inline bint fits(object x) except -1:
    """``x`` fits in int64 (an exact ``int`` is asked in C, without comparing Python ints)."""
    cdef int ovf = 0
    if PyLong_CheckExact(x):
        PyLong_AsLongLongAndOverflow(x, &ovf)
        return ovf == 0
    return LO <= x <= HI


cdef inline bint key_double(object x, double* out) except -1:
    """``x`` as a C double when that is exact (a ``float``, or an ``int`` with ``|x| <= 2^53``)."""
    cdef int ovf = 0
    cdef long long n
    if PyFloat_CheckExact(x):
        out[0] = PyFloat_AS_DOUBLE(x)
        return True
    if PyLong_CheckExact(x):
        n = PyLong_AsLongLongAndOverflow(x, &ovf)
        if ovf == 0 and -EXACT <= n <= EXACT:
            out[0] = <double>n
            return True
    return False


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


cdef tuple dense_rows(long long* d, Py_ssize_t k):
    """The sparse rows of the dense int64 ``k × k`` matrix ``d``."""
    cdef Py_ssize_t i, j
    return tuple([tuple([(j, d[i * k + j]) for j in range(k) if d[i * k + j]]) for i in range(k)])


# -- matrices -------------------------------------------------------------------------------------

cdef class Mat:
    """A move: its sparse rows (``py``) and, while every entry fits, the dense int64 array ``d``
    (row-major ``k × k``; NULL when ``big``); when one does not but all are non-negative ints,
    the dense limb array ``lm`` of width ``lw`` instead (else both NULL: Python ints only).
    Shared (cached by :func:`mat_of`), never written."""
    cdef Py_ssize_t k
    cdef bint big
    cdef long long* d
    cdef u64* lm
    cdef Py_ssize_t lw
    cdef tuple py

    def __dealloc__(self):
        if self.d != NULL:
            free(self.d)
        if self.lm != NULL:
            free(self.lm)


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
            if not fits(jc[1]) or jc[1] < 0:
                free(out.d)
                out.d = NULL
                out.big = True
                limb_mat(out, m, k)
                return out
            j = jc[0]
            out.d[i * k + j] = jc[1]
    return out


cdef int limb_mat(Mat out, tuple m, Py_ssize_t k) except -1:
    """Give ``out`` its limb array when every entry of ``m`` is a non-negative int."""
    cdef Py_ssize_t i, j, w = 1, n
    cdef tuple row, jc
    for row in m:
        for jc in row:
            n = limbs_needed(jc[1])
            if n < 0:
                return 0
            w = max(w, n)
    w = width_for(w)
    out.lm = <u64*>malloc(k * k * w * sizeof(u64))
    if out.lm == NULL:
        raise MemoryError()
    out.lw = w
    for i in range(k * k * w):
        out.lm[i] = 0
    for i in range(k):
        for jc in <tuple>m[i]:
            j = jc[0]
            int_to_limbs(jc[1], out.lm + (i * k + j) * w, w)
    return 0


# -- nodes ----------------------------------------------------------------------------------------

cdef class Node:
    """``vec`` and ``sum``: int64 arrays (``v``, ``s``) unless ``big``, then Python lists
    (``pv``, ``ps``); the pending tag (``has_tag``): the int64 array ``t`` unless ``tbig``, then
    the sparse rows ``ptag``.  ``v``, ``s`` and ``t`` are one block the node owns, inside the node itself when
    ``2k + k²`` entries fit in ``INLINE`` (``k ≤ 3``: one fewer pointer to chase per node); ``kf``
    says whether ``kd`` holds the key exactly as a double."""
    # the fields a walk reads first, then the arrays: one node, few cache lines
    cdef public Node left
    cdef public Node right
    cdef double kd
    cdef public long long seq
    cdef public double prio
    cdef bint kf
    cdef readonly bint big
    cdef bint has_tag
    cdef bint tbig
    cdef long long* v
    cdef long long* s
    cdef long long* t
    cdef long long inline[INLINE]
    cdef Py_ssize_t k
    # limbs: one block (``blk``) holding the lengths of the vector, sum and tag entries, then
    # the vector and the sum (width ``vw``) and the tag (width ``tw``, room for ``tcap``)
    cdef Py_ssize_t vw
    cdef Py_ssize_t tw
    cdef Py_ssize_t* vl
    cdef Py_ssize_t* tl
    cdef u64* lv
    cdef u64* ls
    cdef u64* lt
    cdef u64* blk
    cdef Py_ssize_t tcap
    cdef public object value
    cdef list pv
    cdef list ps
    cdef tuple ptag

    def __dealloc__(self):
        if self.v != NULL and self.v != self.inline:
            free(self.v)
        free(self.blk)

    cdef int relayout(self, Py_ssize_t vw, Py_ssize_t tcap, bint keep_tag) except -1:
        """The limb block for vectors of width ``vw`` and a tag of ``tcap``: one allocation
        (lengths, vector, sum and tag side by side: one pointer to chase per node); the lengths
        and vectors are kept, the tag too when ``keep_tag``."""
        cdef Py_ssize_t k = self.k, n = k * k, e
        cdef u64* nb = <u64*>malloc((2 * k + n + 2 * k * vw + n * tcap) * sizeof(u64))
        cdef Py_ssize_t* nvl = <Py_ssize_t*>nb
        cdef u64* nlv = nb + 2 * k + n
        cdef u64* nls = nlv + k * vw
        cdef u64* nlt = nls + k * vw
        if nb == NULL:
            raise MemoryError()
        if self.blk == NULL:
            for e in range(2 * k + n):
                nvl[e] = 0
        else:
            memcpy(nvl, self.vl, (2 * k + n) * sizeof(Py_ssize_t))
            if self.vw:
                for e in range(k):
                    memcpy(nlv + e * vw, self.lv + e * self.vw, self.vl[e] * sizeof(u64))
                    memcpy(nls + e * vw, self.ls + e * self.vw, self.vl[k + e] * sizeof(u64))
            if keep_tag and self.has_tag and not self.tbig and self.tw:
                memcpy(nlt, self.lt, n * self.tw * sizeof(u64))
        free(self.blk)
        self.blk, self.vl, self.tl = nb, nvl, nvl + 2 * k
        self.lv, self.ls, self.lt = nlv, nls, nlt
        self.vw, self.tcap = vw, tcap
        return 0

    cdef int to_limbs(self) except -1:
        """Switch the int64 vectors to limbs of width 2 (exact: counts are non-negative)."""
        cdef Py_ssize_t i, k = self.k
        self.grow_v(1)
        for i in range(k):
            self.lv[i * self.vw] = <u64>self.v[i]
            self.vl[i] = self.v[i] != 0
            self.ls[i * self.vw] = <u64>self.s[i]
            self.vl[k + i] = self.s[i] != 0
        return 0

    cdef int grow_v(self, Py_ssize_t used) except -1:
        """Vector and sum limbs at least ``used`` wide (values kept; ``vl``: each entry's length,
        the limbs above it are not read)."""
        cdef Py_ssize_t w = width_for(used)
        if w > self.vw:
            self.relayout(w, self.tcap, True)
        return 0

    cdef int store_v(self, bint own, const u64* src, Py_ssize_t sw, const Py_ssize_t* sl) except -1:
        """The vector (``own``) or the sum = ``src`` (``k`` entries of width ``sw``, lengths
        ``sl``), growing."""
        cdef Py_ssize_t k = self.k, e, used = lb_max(sl, k)
        cdef u64* dst
        cdef Py_ssize_t* lens
        if used > self.vw:
            self.grow_v(used)
        dst = self.lv if own else self.ls
        lens = self.vl if own else self.vl + k
        for e in range(k):
            memcpy(dst + e * self.vw, src + e * sw, sl[e] * sizeof(u64))
            lens[e] = sl[e]
        return 0

    cdef int store_t(self, const u64* src, Py_ssize_t sw, const Py_ssize_t* sl) except -1:
        """The tag = ``src`` (``k × k`` entries of width ``sw``, lengths ``sl`` or NULL: read)
        in limbs, growing (``tw``: 0 before, the tag was in int64 or none)."""
        cdef Py_ssize_t n = self.k * self.k, e, used, w = self.tw
        if self.blk == NULL:
            self.relayout(0, 0, False)
        if sl == NULL:
            used = lb_trim(src, sw, n, self.tl)
        else:
            used = lb_max(sl, n)
            for e in range(n):
                self.tl[e] = sl[e]
        if used > w or w == 0:
            w = width_for(used)
            if w > self.tcap:
                self.relayout(self.vw, w, False)
        for e in range(n):
            memcpy(self.lt + e * w, src + e * sw, self.tl[e] * sizeof(u64))
        self.tw = w
        return 0

    cdef void to_big(self):
        """Switch the vectors to Python ints (exact: the int64 or limb values are copied)."""
        cdef Py_ssize_t i
        if not self.big:
            if self.vw:
                self.pv = lb_list(self.lv, self.vw, self.vl, self.k)
                self.ps = lb_list(self.ls, self.vw, self.vl + self.k, self.k)
                self.vw = 0
            else:
                self.pv = [self.v[i] for i in range(self.k)]
                self.ps = [self.s[i] for i in range(self.k)]
            self.big = True

    cdef list sum_list(self):
        cdef Py_ssize_t i
        if self.big:
            return list(self.ps)
        if self.vw:
            return lb_list(self.ls, self.vw, self.vl + self.k, self.k)
        return [self.s[i] for i in range(self.k)]

    cdef tuple tag_rows(self):
        """The pending tag's sparse rows (None: no tag)."""
        if not self.has_tag:
            return None
        if self.tbig:
            return self.ptag
        if self.tw:
            return lb_rows(self.lt, self.tw, self.tl, self.k)
        return dense_rows(self.t, self.k)

    @property
    def vec(self):
        cdef Py_ssize_t i
        if self.big:
            return list(self.pv)
        if self.vw:
            return lb_list(self.lv, self.vw, self.vl, self.k)
        return [self.v[i] for i in range(self.k)]

    @property
    def limbs(self):
        """The width in limbs of the vectors (0: int64 or Python ints)."""
        return self.vw

    @property
    def tag_limbs(self):
        """The width in limbs of the pending tag (0: none, int64 or Python ints)."""
        return self.tw if self.has_tag and not self.tbig else 0

    @property
    def sum(self):
        return self.sum_list()

    @property
    def tag(self):
        """The pending tag as the reference's sparse rows, or None."""
        return self.tag_rows()

    @property
    def tag_big(self):
        """Whether the pending tag is in Python ints."""
        return self.has_tag and self.tbig


cdef object dot_node(Node node, bint own, object f):
    """``(node's vec if own else its sum) · f``, ``f`` a sequence of Python ints."""
    cdef Py_ssize_t i, k = node.k
    cdef long long* a
    cdef long long acc = 0, p, c
    cdef object total
    if not node.big and not node.vw:
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
    if node.vw:
        return dot_limbs(node, own, f)
    return py_dot(node.pv if own else node.ps, f)


cdef inline bint fits_u64s(const u64* x, Py_ssize_t w, const Py_ssize_t* lens,
                           Py_ssize_t n) noexcept:
    """Every entry of ``x`` (width ``w``, lengths ``lens`` at most 1) is below 2^63."""
    cdef Py_ssize_t e
    for e in range(n):
        if lens[e] and x[e * w] >> 63:
            return False
    return True


cdef object dot_limbs(Node node, bint own, object f):
    """:func:`dot_node` of a node in limbs: in limbs (one Python int made, for the result) when
    every entry of ``f`` is a non-negative int64, else through Python ints."""
    cdef Py_ssize_t k = node.k, i, ow, ol
    cdef u64 fc[16]
    cdef u64 out[80]
    cdef u64* buf = out
    cdef const u64* a = node.lv if own else node.ls
    cdef const Py_ssize_t* al = node.vl if own else node.vl + k
    cdef object x
    if k <= 16:
        for i in range(k):
            x = f[i]
            if not fits(x) or x < 0:
                break
            fc[i] = <u64><long long>x
        else:
            if lb_max(al, k) + 3 > 80:
                buf = <u64*>malloc((lb_max(al, k) + 3) * sizeof(u64))
                if buf == NULL:
                    raise MemoryError()
            try:
                if lb_dot(buf, &ow, &ol, a, node.vw, al, fc, 1, NULL, k):
                    raise OverflowError("limb dot sized too small (a kleene bug)")
                return lb_int(buf, ol)
            finally:
                if buf != out:
                    free(buf)
    return py_dot(lb_list(a, node.vw, al, k), f)


cdef inline bint below(Node node, object value, bint kf, double kd, long long seq) except -1:
    """``(node.value, node.seq) < (value, seq)``: in C when both keys are exact doubles."""
    if kf and node.kf:
        if node.kd < kd:
            return True
        if node.kd == kd:
            return node.seq < seq
        return False
    if node.value < value:
        return True
    if node.value == value:
        return node.seq < seq
    return False


cdef inline bint same_key(Node node, object value, bint kf, double kd, long long seq) except -1:
    """``(node.value, node.seq) == (value, seq)``."""
    if node.seq != seq:
        return False
    if kf and node.kf:
        return node.kd == kd
    return node.value == value


cdef class VectorTree:
    cdef public Py_ssize_t k
    cdef public object root
    cdef public Py_ssize_t size
    cdef public list work
    cdef public object random
    cdef long long _work
    cdef long long* ga
    cdef long long* gb
    cdef u64* scr
    cdef Py_ssize_t* lens
    cdef Py_ssize_t* plens
    cdef Py_ssize_t scap
    cdef PyObject** path
    cdef Py_ssize_t cap
    cdef Node sl
    cdef Node sr

    def __cinit__(self, Py_ssize_t k, list work, seed=0):
        self.ga = <long long*>malloc((k + 1) * sizeof(long long))
        self.lens = <Py_ssize_t*>malloc((k * k + 1) * sizeof(Py_ssize_t))
        self.plens = <Py_ssize_t*>malloc((5 * k + 1) * sizeof(Py_ssize_t))
        self.gb = <long long*>malloc((k + 1) * sizeof(long long))
        self.cap = 64
        self.path = <PyObject**>malloc(self.cap * sizeof(PyObject*))
        if self.ga == NULL or self.gb == NULL or self.path == NULL or self.lens == NULL or self.plens == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.ga)
        free(self.gb)
        free(self.path)
        free(self.scr)
        free(self.lens)
        free(self.plens)

    cdef u64* _scratch(self, Py_ssize_t n) except NULL:
        """The tree's limb scratch, at least ``n`` limbs (grown, never shrunk: no allocation
        per operation while the widths stay)."""
        cdef u64* grown
        if n > self.scap:
            grown = <u64*>realloc(self.scr, 2 * n * sizeof(u64))
            if grown == NULL:
                raise MemoryError()
            self.scr, self.scap = grown, 2 * n
        return self.scr

    cdef int _lmul(self, Node node, const u64* m, Py_ssize_t mw, const Py_ssize_t* ml,
                   bint own) except -1:
        """Node's vec (``own``) or sum (limbs) times the limb matrix ``m`` of width ``mw`` (its
        entries' lengths ``ml``, or NULL: read)."""
        cdef Py_ssize_t k = self.k, ow
        cdef u64* out = self._scratch(k * (node.vw + mw + 1))
        if lb_vec_mat(out, &ow, self.lens, node.lv if own else node.ls, node.vw,
                      node.vl if own else node.vl + k, m, mw, ml, k):
            raise OverflowError("limb product sized too small (a kleene bug)")
        node.store_v(own, out, ow, self.lens)
        return 0

    cdef int _lcompose(self, Node node, const u64* m, Py_ssize_t mw, const Py_ssize_t* ml) except -1:
        """Node's tag (limbs) = tag . ``m`` (width ``mw``, lengths ``ml`` or NULL)."""
        cdef Py_ssize_t k = self.k, ow
        cdef u64* out = self._scratch(k * k * (node.tw + mw + 1))
        if lb_compose(out, &ow, self.lens, node.lt, node.tw, node.tl, m, mw, ml, k):
            raise OverflowError("limb composition sized too small (a kleene bug)")
        node.store_t(out, ow, self.lens)
        return 0

    cdef int _lsum(self, Node node, Node left, Node right) except -1:
        """Node's sum (limbs) = vec + the children's sums (int64 ones read as width 1)."""
        cdef Py_ssize_t k = self.k, lw = 0, rw = 0, ow
        cdef const u64* l = NULL
        cdef const u64* r = NULL
        cdef const Py_ssize_t* ll = NULL
        cdef const Py_ssize_t* rl = NULL
        cdef u64* out
        if left is not None:
            if left.vw:
                l, lw, ll = left.ls, left.vw, left.vl + k
            else:
                l, lw = <u64*>left.s, 1
        if right is not None:
            if right.vw:
                r, rw, rl = right.ls, right.vw, right.vl + k
            else:
                r, rw = <u64*>right.s, 1
        out = self._scratch(k * (max(node.vw, lw, rw) + 1))
        if lb_sum(out, &ow, self.lens, node.lv, node.vw, node.vl, l, lw, ll, r, rw, rl, k):
            raise OverflowError("limb sum sized too small (a kleene bug)")
        node.store_v(False, out, ow, self.lens)
        return 0

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

    cdef int _keep(self, Py_ssize_t n, Node node) except -1:
        """``path[n] = node`` (borrowed: the node stays referenced by a tree or a piece)."""
        cdef PyObject** grown
        if n >= self.cap:
            grown = <PyObject**>realloc(self.path, 2 * self.cap * sizeof(PyObject*))
            if grown == NULL:
                raise MemoryError()
            self.path = grown
            self.cap *= 2
        self.path[n] = <PyObject*>node
        return 0

    cdef int _mul(self, Node node, long long* d, const u64* lm, Py_ssize_t lw,
                  const Py_ssize_t* ml, tuple rows, bint own) except -1:
        """Node's vec (``own``) or sum times a matrix: ``d`` its int64 array, else ``lm`` its limb
        array of width ``lw`` and lengths ``ml`` (or NULL: read; both NULL: Python ints only), ``rows`` its sparse rows (None: built
        when needed); in int64 unless that overflows, then in limbs (the node switches and stays
        there), in Python ints when the node or the matrix is."""
        cdef Py_ssize_t k = self.k
        cdef long long* a
        if not node.big:
            if d != NULL:
                if not node.vw:
                    a = node.v if own else node.s
                    if kl_vec_mat(a, d, k):
                        return 0
                    node.to_limbs()
                self._lmul(node, <u64*>d, 1, NULL, own)
                return 0
            if lm != NULL:
                if not node.vw:
                    node.to_limbs()
                self._lmul(node, lm, lw, ml, own)
                return 0
            node.to_big()
        if rows is None:
            rows = dense_rows(d, k) if d != NULL else lb_rows(lm, lw, ml, k)
        if own:
            node.pv = py_vec_mat(node.pv, rows)
        else:
            node.ps = py_vec_mat(node.ps, rows)
        return 0

    cdef int _apply(self, Node node, long long* d, const u64* lm, Py_ssize_t lw,
                    const Py_ssize_t* ml, tuple rows) except -1:
        """Tag ``node`` with a matrix (``d`` / ``lm`` / ``rows`` as in :meth:`_mul`): its sum now,
        the rest when pushed; the tag is composed in place (int64, else limbs, else Python)."""
        cdef Py_ssize_t k = self.k, i
        self._mul(node, d, lm, lw, ml, rows, False)
        if not node.has_tag:
            node.has_tag = True
            node.tw = 0
            if d != NULL:
                for i in range(k * k):
                    node.t[i] = d[i]
                node.tbig = False
            elif lm != NULL:
                node.tbig = False
                if ml == NULL:
                    lb_trim(lm, lw, k * k, self.lens)
                    ml = self.lens
                if lb_max(ml, k * k) <= 1 and fits_u64s(lm, lw, ml, k * k):
                    for i in range(k * k):
                        node.t[i] = <long long>lm[i * lw] if ml[i] else 0
                else:
                    node.store_t(lm, lw, ml)
            else:
                node.tbig = True
                node.ptag = rows
            return 0
        if not node.tbig:
            if not node.tw and d != NULL:
                if kl_compose(node.t, d, k):
                    return 0
            if d != NULL or lm != NULL:
                if not node.tw:
                    node.store_t(<u64*>node.t, 1, NULL)
                if d != NULL:
                    self._lcompose(node, <u64*>d, 1, NULL)
                else:
                    self._lcompose(node, lm, lw, ml)
                return 0
        if rows is None:
            rows = dense_rows(d, k) if d != NULL else lb_rows(lm, lw, ml, k)
        node.ptag = py_compose(node.tag_rows(), rows)
        node.tbig = True
        node.tw = 0
        return 0

    cdef int _push(self, Node node) except -1:
        cdef long long* d = NULL
        cdef const u64* lm = NULL
        cdef const Py_ssize_t* ml = NULL
        cdef Py_ssize_t lw = 0
        cdef tuple rows = None
        cdef Node left, right
        if node.has_tag:
            self._work += 1
            left = node.left
            right = node.right
            if node.tbig:
                rows = node.ptag
            else:
                if node.tw:
                    lm = node.lt
                    lw = node.tw
                    ml = node.tl
                else:
                    d = node.t
                if node.big or (left is not None and (left.big or left.tbig)) or (
                        right is not None and (right.big or right.tbig)):
                    rows = node.tag_rows()
            self._mul(node, d, lm, lw, ml, rows, True)
            if left is not None:
                self._apply(left, d, lm, lw, ml, rows)
            if right is not None:
                self._apply(right, d, lm, lw, ml, rows)
            node.has_tag = False
            node.tw = 0
            if node.tbig:
                node.tbig = False
                node.ptag = None
        return 0

    cdef int _pull(self, Node node) except -1:
        cdef Py_ssize_t i, k = self.k
        cdef Node left = node.left, right = node.right
        cdef list total, other
        self._work += 1
        if not node.big and (left is None or not left.big) and (right is None or not right.big):
            if not node.vw and (left is None or not left.vw) and (right is None or not right.vw):
                if kl_sum(node.s, node.v, NULL if left is None else left.s,
                          NULL if right is None else right.s, k):
                    return 0
            if not node.vw:
                node.to_limbs()
            self._lsum(node, left, right)
            return 0
        node.to_big()
        total = node.pv
        if left is not None:
            other = left.ps if left.big else left.sum_list()
            total = [total[i] + other[i] for i in range(k)]
        if right is not None:
            other = right.ps if right.big else right.sum_list()
            total = [total[i] + other[i] for i in range(k)]
        node.ps = total if total is not node.pv else list(total)
        return 0

    cdef int _pull_from(self, Py_ssize_t n, Py_ssize_t base) except -1:
        """Recompute the sums of ``path[base:n]``, deepest first."""
        cdef Py_ssize_t i
        for i in range(n - 1, base - 1, -1):
            self._pull(<Node>self.path[i])
        return 0

    cdef int _split(self, Node node, object value, bint kf, double kd, long long seq,
                    Py_ssize_t base) except -1:
        """``self.sl, self.sr = (keys < cut, keys >= cut)``: the recursive split of the reference
        walked down once (each node pushed, then linked to the left or the right piece) and the
        sums recomputed on the way back, deepest first, as the recursion would."""
        cdef Node lroot = None, rroot = None, ltail = None, rtail = None
        cdef Py_ssize_t n = base
        while node is not None:
            self._push(node)
            self._keep(n, node)
            n += 1
            if below(node, value, kf, kd, seq):
                if ltail is None:
                    lroot = node
                else:
                    ltail.right = node
                ltail = node
                node = node.right
            else:
                if rtail is None:
                    rroot = node
                else:
                    rtail.left = node
                rtail = node
                node = node.left
        if ltail is not None:
            ltail.right = None
        if rtail is not None:
            rtail.left = None
        self._pull_from(n, base)
        self.sl = lroot
        self.sr = rroot
        return 0

    cdef Node _merge(self, Node a, Node b, Py_ssize_t base):
        """Every key of ``a`` below every key of ``b``: the reference's recursion walked down once
        (the higher priority on top, pushed), sums recomputed on the way back."""
        cdef Node root = None, parent = None, rest
        cdef bint right = False, nxt_right
        cdef Py_ssize_t n = base
        if a is None:
            return b
        if b is None:
            return a
        while a is not None and b is not None:
            if a.prio > b.prio:
                self._push(a)
                rest = a
                a = a.right
                nxt_right = True
            else:
                self._push(b)
                rest = b
                b = b.left
                nxt_right = False
            if parent is None:
                root = rest
            elif right:
                parent.right = rest
            else:
                parent.left = rest
            self._keep(n, rest)
            n += 1
            parent = rest
            right = nxt_right
        rest = a if a is not None else b
        if right:
            parent.right = rest
        else:
            parent.left = rest
        self._pull_from(n, base)
        return root

    def insert(self, value, long long seq, list vec):
        cdef Node node = Node.__new__(Node)
        cdef Py_ssize_t i, k = self.k
        cdef bint small = True
        cdef Py_ssize_t w = 0, n
        cdef double kd = 0.0
        for x in vec:
            if not fits(x) or x < 0:
                small = False
                break
        if not small:
            for x in vec:
                n = limbs_needed(x)
                if n < 0:
                    w = -1
                    break
                w = max(w, n)
        node.value, node.seq, node.prio = value, seq, self.random.random()
        node.kf = key_double(value, &kd)
        node.kd = kd
        node.k = k
        if 2 * k + k * k <= INLINE:
            node.v = node.inline
        else:
            node.v = <long long*>malloc((2 * k + k * k) * sizeof(long long))
            if node.v == NULL:
                raise MemoryError()
        node.s = node.v + k
        node.t = node.s + k
        if small:
            for i in range(k):
                node.v[i] = vec[i]
                node.s[i] = node.v[i]
        elif w > 0:
            node.grow_v(w)
            for i in range(k):
                int_to_limbs(vec[i], node.lv + i * node.vw, node.vw)
                int_to_limbs(vec[i], node.ls + i * node.vw, node.vw)
                node.vl[i] = node.vl[k + i] = limbs_needed(vec[i])
        else:
            node.big = True
            node.pv, node.ps = list(vec), list(vec)
        self.size += 1
        self._insert(node)
        self._flush()

    cdef int _insert(self, Node new) except -1:
        """The reference's recursive insert: down while the priorities are higher than the new
        node's (each pushed), there split the rest at the new key under it."""
        cdef Node node = self.root, parent = None
        cdef bint right = False
        cdef Py_ssize_t n = 0
        while node is not None and not (new.prio > node.prio):
            self._push(node)
            self._keep(n, node)
            n += 1
            parent = node
            if below(new, node.value, node.kf, node.kd, node.seq):
                right = False
                node = node.left
            else:
                right = True
                node = node.right
        if node is not None:
            self._split(node, new.value, new.kf, new.kd, new.seq, n)
            new.left = self.sl
            new.right = self.sr
            self.sl = self.sr = None
            self._pull(new)
        if parent is None:
            self.root = new
        elif right:
            parent.right = new
        else:
            parent.left = new
        self._pull_from(n, 0)
        return 0

    def delete(self, value, long long seq):
        cdef double kd = 0.0
        cdef bint kf = key_double(value, &kd)
        cdef Node node = self.root, parent = None, rest
        cdef bint right = False
        cdef Py_ssize_t n = 0
        self.size -= 1
        while True:
            assert node is not None, "deleting a key the tree does not hold"
            self._push(node)
            if same_key(node, value, kf, kd, seq):
                break
            self._keep(n, node)
            n += 1
            parent = node
            if below(node, value, kf, kd, seq):
                right = True
                node = node.right
            else:
                right = False
                node = node.left
        rest = self._merge(node.left, node.right, n)
        if parent is None:
            self.root = rest
        elif right:
            parent.right = rest
        else:
            parent.left = rest
        self._pull_from(n, 0)
        self._flush()

    def step(self, list cuts, list moves):
        cdef Node root = self.root
        cdef Node part, merged, rest
        cdef Mat mat
        cdef list parts
        cdef Py_ssize_t k = self.k, i
        cdef double kd = 0.0
        cdef bint kf, still = True
        if root is None:
            return 0
        if not cuts:
            m, f = moves[0]
            found = dot_node(root, False, f) if f is not None else 0
            if m is not None:
                mat = mat_of(<tuple>m, k)
                self._apply(root, mat.d, mat.lm, mat.lw, NULL, mat.py)
            return found
        for mv in moves:
            if mv[0] is not None:
                still = False
                break
        if still:
            found = self._count(cuts, [mv[1] for mv in moves])
            self._flush()
            return found
        parts = []
        rest = root
        for cut in cuts:
            value = cut[0]
            kf = key_double(value, &kd)
            self._split(rest, value, kf, kd, cut[1], 0)
            parts.append(self.sl)
            rest = self.sr
            self.sl = self.sr = None
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
                    mat = mat_of(<tuple>m, k)
                    self._apply(part, mat.d, mat.lm, mat.lw, NULL, mat.py)
            merged = self._merge(merged, part, 0)
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
        """The prefix sum along one path, ``g`` a column vector carried through the tags: in
        int64 (:meth:`_prefix64`), or, when anything there does not fit, redone in Python ints
        (only ``work`` changes, and it is restored first)."""
        cdef double kd = 0.0
        cdef bint kf = key_double(value, &kd)
        cdef long long found64 = 0, work0 = self._work
        if self._prefix64(node, value, kf, kd, seq, g, &found64):
            return found64
        self._work = work0
        found = self._prefix_lb(node, value, kf, kd, seq, g)
        if found is not None:
            return found
        return self._prefix_py(node, value, kf, kd, seq, g)

    cdef object _prefix_lb(self, Node node, object value, bint kf, double kd, long long seq,
                           list g):
        """:meth:`_prefix` in limbs: ``g = gp - gn`` with both parts non-negative, each carried
        down as a limb column through the tags and dotted with the vectors into its own limb
        sum; the result is the difference of the two, made a Python int once.  None (nothing
        done) when a node or tag on the path is in Python ints or ``g`` does not fit in int64.
        A first walk down the path (no pushes, no ``work``) bounds every width."""
        cdef Py_ssize_t k = self.k, j, cw = 1, vmax = 1, aw, ow, ol, a_w
        cdef Node x = node, left
        cdef long long gi
        cdef u64* buf
        cdef u64* cp
        cdef u64* cn
        cdef u64* lp
        cdef u64* ln_
        cdef u64* accp
        cdef u64* accn
        cdef u64* tmp
        cdef u64* swap
        cdef const u64* t
        cdef const u64* a
        cdef const Py_ssize_t* tl
        cdef const Py_ssize_t* al
        cdef Py_ssize_t* cpl = self.plens
        cdef Py_ssize_t* cnl = cpl + k
        cdef Py_ssize_t* lpl = cnl + k
        cdef Py_ssize_t* lnl = lpl + k
        cdef Py_ssize_t* vtl = lnl + k
        cdef Py_ssize_t* pswap
        cdef Py_ssize_t accpl = 0, accnl = 0, tw
        cdef u64 lost = 0
        for j in range(k):
            if not fits(g[j]):
                return None
        while x is not None:
            if x.big or (x.has_tag and x.tbig):
                return None
            if x.has_tag:
                cw += (lb_max(x.tl, k * k) if x.tw else 1) + 1
            vmax = max(vmax, x.vw)
            left = x.left
            if below(x, value, kf, kd, seq):
                if left is not None:
                    if left.big:
                        return None
                    vmax = max(vmax, left.vw)
                x = x.right
            else:
                x = left
        aw = vmax + cw + 4
        buf = self._scratch(4 * k * cw + 3 * aw)
        cp = buf
        cn = buf + k * cw
        lp = cn + k * cw
        ln_ = lp + k * cw
        accp = ln_ + k * cw
        accn = accp + aw
        tmp = accn + aw
        for j in range(aw):
            accp[j] = accn[j] = 0
        for j in range(k):
            gi = g[j]
            cp[j * cw] = <u64>gi if gi > 0 else 0
            cn[j * cw] = (<u64>(-(gi + 1)) + 1) if gi < 0 else 0
            cpl[j] = gi > 0
            cnl[j] = gi < 0
        while node is not None:
            self._work += 1
            left = node.left
            if node.has_tag:
                if node.tw:
                    t, tw, tl = node.lt, node.tw, node.tl
                else:
                    t, tw, tl = <u64*>node.t, 1, NULL
                lost |= lb_mat_col(lp, cw, lpl, t, tw, tl, cp, cw, cpl, k)
                lost |= lb_mat_col(ln_, cw, lnl, t, tw, tl, cn, cw, cnl, k)
                swap = cp
                cp = lp
                lp = swap
                swap = cn
                cn = ln_
                ln_ = swap
                pswap = cpl
                cpl = lpl
                lpl = pswap
                pswap = cnl
                cnl = lnl
                lnl = pswap
            if below(node, value, kf, kd, seq):
                x = node
                for j in range(2 if left is not None else 1):
                    if x.vw:
                        a_w = x.vw
                        if x is node:
                            a, al = x.lv, x.vl
                        else:
                            a, al = x.ls, x.vl + k
                    else:
                        a_w = 1
                        if x is node:
                            a = <u64*>x.v
                        else:
                            a = <u64*>x.s
                        lb_trim(a, 1, k, vtl)
                        al = vtl
                    lost |= lb_dot(tmp, &ow, &ol, a, a_w, al, cp, cw, cpl, k)
                    lost |= lb_add(accp, aw, &accpl, tmp, ol)
                    lost |= lb_dot(tmp, &ow, &ol, a, a_w, al, cn, cw, cnl, k)
                    lost |= lb_add(accn, aw, &accnl, tmp, ol)
                    x = left
                node = node.right
            else:
                node = left
        if lost:
            raise OverflowError("limb path sum sized too small (a kleene bug)")
        return lb_int(accp, lb_used(accp, accpl)) - lb_int(accn, lb_used(accn, accnl))

    cdef bint _prefix64(self, Node node, object value, bint kf, double kd, long long seq, list g,
                        long long* found) except -1:
        cdef Py_ssize_t i, j, k = self.k
        cdef long long* cur = self.ga
        cdef long long* low = self.gb
        cdef long long* swap
        cdef Node left
        for j in range(k):
            if not fits(g[j]):
                return False
            cur[j] = g[j]
        while node is not None:
            self._work += 1
            if node.big or node.vw:
                return False
            left = node.left
            if node.has_tag:
                if node.tbig or node.tw:
                    return False
                if not kl_mat_col(node.t, cur, low, k):
                    return False
                swap = cur
                cur = low
                low = swap
            if below(node, value, kf, kd, seq):
                if not kl_dot(node.v, cur, k, found):
                    return False
                if left is not None:
                    if left.big or left.vw or not kl_dot(left.s, cur, k, found):
                        return False
                node = node.right
            else:
                node = left
        return True

    cdef object _prefix_py(self, Node node, object value, bint kf, double kd, long long seq, list g):
        """:meth:`_prefix` with ``g`` in Python ints (its products with int64 vectors checked in
        :func:`dot_node`); an int64 tag's product with ``g`` runs in int64 while both fit."""
        cdef object found = 0
        cdef Node left
        cdef list low
        cdef tuple row, jc, rows
        cdef Py_ssize_t i, j, k = self.k
        cdef long long* gc = self.ga
        cdef long long* out = self.gb
        cdef bint ok
        while node is not None:
            self._work += 1
            left = node.left
            if not node.has_tag:
                low = g
            else:
                low = [0] * k
                ok = not node.tbig and not node.tw
                if ok:
                    for j in range(k):
                        if not fits(g[j]):
                            ok = False
                            break
                        gc[j] = g[j]
                if ok and kl_mat_col(node.t, gc, out, k):
                    for i in range(k):
                        low[i] = out[i]
                else:
                    rows = node.tag_rows()
                    for i in range(k):
                        acc = 0
                        row = <tuple>rows[i]
                        for jc in row:
                            acc = acc + jc[1] * g[<Py_ssize_t>jc[0]]
                        low[i] = acc
            if below(node, value, kf, kd, seq):
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
