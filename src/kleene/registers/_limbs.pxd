# cython: language_level=3
"""Exact unsigned multi-limb arithmetic for the compiled count tree (``_vectortree.pyx``).

A number is ``w`` little-endian uint64 limbs; an array of ``n`` numbers of width ``w`` is
``n * w`` limbs, entry ``e`` at ``e * w``.  An int64 array of non-negative counts is read as an
array of width 1 (the same bits).  Each kernel writes into an output of width ``ow`` that the
caller sizes so that the result always fits (products: ``wa + wb + 1``, sums of three: ``max +
1``) and the length of each entry of the result (the limbs it really uses) into an array
beside it; the node's storage grows to the longest.  Every kernel still returns the carry it
could not place (nonzero: the caller sized it wrong), which the caller turns into an error:
never a wrapped count.

Products are schoolbook, a limb times a limb in ``unsigned __int128``; zero limbs and the unused
top of an operand are skipped (a width is a capacity, the value may be shorter).  Compiling with
``-DKL_LIMBS_CARRY_BUG`` drops the carry out of each row of a product (a deliberately wrong build
that tests/registers/test_vectortree_twin.py must catch).

Size: ~310 lines, one job (the limb kernels and their conversions to and from Python ints,
inline, in C, cimported by the tree's module).
"""

from cpython.long cimport PyLong_CheckExact
from libc.string cimport memcpy

cdef extern from "Python.h":
    object PyLong_FromUnsignedLongLong(unsigned long long)
    object _PyLong_FromByteArray(const unsigned char*, size_t, int, int)

cdef extern from *:
    """
    typedef unsigned long long kl_u64;
    typedef unsigned __int128 kl_u128;

    /* Limbs x (width w) really uses: 0 for zero. */
    static inline Py_ssize_t lb_used(const kl_u64 *x, Py_ssize_t w) {
        while (w > 0 && x[w - 1] == 0) w--;
        return w;
    }
    /* acc (width aw) += a (na limbs) * b (nb limbs); returns the carry that did not fit; *top
       becomes at least one past the highest limb written. */
    static inline kl_u64 lb_addmul(kl_u64 *acc, Py_ssize_t aw, Py_ssize_t *top, const kl_u64 *a,
                                   Py_ssize_t na, const kl_u64 *b, Py_ssize_t nb) {
        kl_u64 lost = 0;
        Py_ssize_t hi = *top;
        if (na > nb) {  /* rows over the shorter operand: the carry chains along the longer one */
            const kl_u64 *c = a; a = b; b = c;
            Py_ssize_t n = na; na = nb; nb = n;
        }
        for (Py_ssize_t i = 0; i < na; i++) {
            kl_u64 x = a[i], carry = 0;
            Py_ssize_t p;
            if (!x) continue;
            for (Py_ssize_t j = 0; j < nb; j++) {
                if (i + j >= aw) { lost |= x; break; }
                kl_u128 t = (kl_u128)x * b[j] + acc[i + j] + carry;
                acc[i + j] = (kl_u64)t;
                carry = (kl_u64)(t >> 64);
            }
    #ifdef KL_LIMBS_CARRY_BUG
            carry = 0;
    #endif
            for (p = i + nb; carry && p < aw; p++) {
                kl_u64 s = acc[p] + carry;
                carry = s < carry;
                acc[p] = s;
            }
            if (p > hi) hi = p;
            lost |= carry;
        }
        *top = hi < aw ? hi : aw;
        return lost;
    }
    /* acc (width aw) += a (na limbs); the carry that did not fit; *top as in lb_addmul. */
    static inline kl_u64 lb_add(kl_u64 *acc, Py_ssize_t aw, Py_ssize_t *top, const kl_u64 *a,
                                Py_ssize_t na) {
        kl_u64 carry = 0;
        Py_ssize_t i = 0;
        for (; i < na; i++) {
            if (i >= aw) return 1;
            kl_u128 t = (kl_u128)acc[i] + a[i] + carry;
            acc[i] = (kl_u64)t;
            carry = (kl_u64)(t >> 64);
        }
        for (; carry && i < aw; i++) {
            kl_u64 s = acc[i] + carry;
            carry = s < carry;
            acc[i] = s;
        }
        if (i > *top) *top = i;
        return carry;
    }
    /* The limbs each of n entries of width w uses (into used), and the most of them. */
    static inline Py_ssize_t lb_trim(const kl_u64 *x, Py_ssize_t w, Py_ssize_t n,
                                     Py_ssize_t *used) {
        Py_ssize_t best = 0;
        for (Py_ssize_t e = 0; e < n; e++) {
            used[e] = lb_used(x + e * w, w);
            if (used[e] > best) best = used[e];
        }
        return best;
    }
    /* The most of n lengths. */
    static inline Py_ssize_t lb_max(const Py_ssize_t *len, Py_ssize_t n) {
        Py_ssize_t best = 0;
        for (Py_ssize_t e = 0; e < n; e++) if (len[e] > best) best = len[e];
        return best;
    }
    /* Operand lengths: the given ones, or (NULL: an int64 array or one without them) read. */
    #define LB_LENS(name, x, w, n) \
        Py_ssize_t name##_own[n]; \
        const Py_ssize_t *name = name##_given; \
        if (!name) { lb_trim(x, w, n, name##_own); name = name##_own; }
    /* Entry lengths of an output of width w from the tops written (the top limbs may be 0). */
    static inline void lb_close(const kl_u64 *out, Py_ssize_t w, Py_ssize_t *top, Py_ssize_t n) {
        for (Py_ssize_t e = 0; e < n; e++) top[e] = lb_used(out + e * w, top[e]);
    }
    /* out[j] = sum_i v[i] * m[i][j] (v: k entries of width vw, lengths vl_given; m: k x k
       row-major of width mw, lengths ml_given; NULL lengths are read from the limbs) into out
       with entries of width *ow, which the kernel sets to the most limbs the result can take
       (room for k * (vw + mw + 1) limbs at out), and their lengths into ol; returns nonzero
       when something did not fit.  Lengths are kept, not rescanned: a width is a capacity. */
    static kl_u64 lb_vec_mat(kl_u64 *out, Py_ssize_t *ow, Py_ssize_t *ol,
                             const kl_u64 *v, Py_ssize_t vw, const Py_ssize_t *vl_given,
                             const kl_u64 *m, Py_ssize_t mw, const Py_ssize_t *ml_given,
                             Py_ssize_t k) {
        kl_u64 lost = 0;
        LB_LENS(vl, v, vw, k)
        LB_LENS(ml, m, mw, k * k)
        Py_ssize_t w = lb_max(vl, k) + lb_max(ml, k * k) + 1;
        *ow = w;
        for (Py_ssize_t e = 0; e < k * w; e++) out[e] = 0;
        for (Py_ssize_t j = 0; j < k; j++) ol[j] = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            if (!vl[i]) continue;
            for (Py_ssize_t j = 0; j < k; j++)
                if (ml[i * k + j])
                    lost |= lb_addmul(out + j * w, w, ol + j, v + i * vw, vl[i],
                                      m + (i * k + j) * mw, ml[i * k + j]);
        }
        lb_close(out, w, ol, k);
        return lost;
    }
    /* out = t . m (first t, then m; k x k; widths, lengths and *ow, ol as in lb_vec_mat; room
       for k * k * (tw + mw + 1) limbs). */
    static kl_u64 lb_compose(kl_u64 *out, Py_ssize_t *ow, Py_ssize_t *ol,
                             const kl_u64 *t, Py_ssize_t tw, const Py_ssize_t *tl_given,
                             const kl_u64 *m, Py_ssize_t mw, const Py_ssize_t *ml_given,
                             Py_ssize_t k) {
        kl_u64 lost = 0;
        LB_LENS(tl, t, tw, k * k)
        LB_LENS(ml, m, mw, k * k)
        Py_ssize_t w = lb_max(tl, k * k) + lb_max(ml, k * k) + 1;
        *ow = w;
        for (Py_ssize_t e = 0; e < k * k * w; e++) out[e] = 0;
        for (Py_ssize_t e = 0; e < k * k; e++) ol[e] = 0;
        for (Py_ssize_t i = 0; i < k; i++)
            for (Py_ssize_t j = 0; j < k; j++) {
                if (!tl[i * k + j]) continue;
                for (Py_ssize_t l = 0; l < k; l++)
                    if (ml[j * k + l])
                        lost |= lb_addmul(out + (i * k + l) * w, w, ol + i * k + l,
                                          t + (i * k + j) * tw, tl[i * k + j],
                                          m + (j * k + l) * mw, ml[j * k + l]);
            }
        lb_close(out, w, ol, k * k);
        return lost;
    }
    /* out = v + l + r (k entries; l, r may be NULL; widths and lengths as in lb_vec_mat; room
       for k * (max(vw, lw, rw) + 1) limbs). */
    static kl_u64 lb_sum(kl_u64 *out, Py_ssize_t *ow, Py_ssize_t *ol,
                         const kl_u64 *v, Py_ssize_t vw, const Py_ssize_t *vl_given,
                         const kl_u64 *l, Py_ssize_t lw, const Py_ssize_t *ll_given,
                         const kl_u64 *r, Py_ssize_t rw, const Py_ssize_t *rl_given,
                         Py_ssize_t k) {
        kl_u64 lost = 0;
        LB_LENS(vl, v, vw, k)
        Py_ssize_t w = lb_max(vl, k), x;
        Py_ssize_t ll_own[k], rl_own[k];
        const Py_ssize_t *ll = ll_given, *rl = rl_given;
        if (l) {
            if (!ll) { lb_trim(l, lw, k, ll_own); ll = ll_own; }
            x = lb_max(ll, k); if (x > w) w = x;
        }
        if (r) {
            if (!rl) { lb_trim(r, rw, k, rl_own); rl = rl_own; }
            x = lb_max(rl, k); if (x > w) w = x;
        }
        w += 1;
        *ow = w;
        for (Py_ssize_t i = 0; i < k; i++) {
            kl_u64 *o = out + i * w;
            Py_ssize_t e = 0;
            for (; e < vl[i]; e++) o[e] = v[i * vw + e];
            for (; e < w; e++) o[e] = 0;
            ol[i] = vl[i];
            if (l) lost |= lb_add(o, w, ol + i, l + i * lw, ll[i]);
            if (r) lost |= lb_add(o, w, ol + i, r + i * rw, rl[i]);
        }
        lb_close(out, w, ol, k);
        return lost;
    }
    /* out = sum_i a[i] * c[i] (a: k entries of width aw, lengths al; c: k entries of width cw,
       lengths cl_given or NULL) into out of width *ow (room for max(al) + max(cl) + 2 limbs);
       its length into *ol. */
    static kl_u64 lb_dot(kl_u64 *out, Py_ssize_t *ow, Py_ssize_t *ol,
                         const kl_u64 *a, Py_ssize_t aw, const Py_ssize_t *al,
                         const kl_u64 *c, Py_ssize_t cw, const Py_ssize_t *cl_given, Py_ssize_t k) {
        kl_u64 lost = 0;
        LB_LENS(cl, c, cw, k)
        Py_ssize_t w = lb_max(al, k) + lb_max(cl, k) + 2;
        *ow = w;
        *ol = 0;
        for (Py_ssize_t e = 0; e < w; e++) out[e] = 0;
        for (Py_ssize_t i = 0; i < k; i++)
            if (al[i] && cl[i])
                lost |= lb_addmul(out, w, ol, a + i * aw, al[i], c + i * cw, cl[i]);
        lb_close(out, w, ol, 1);
        return lost;
    }
    /* out[i] = sum_j t[i][j] * c[j] (t: k x k of width tw, lengths tl_given or NULL; c: k
       entries of width cw, lengths cl) into out of the given width ow, lengths into ol. */
    static kl_u64 lb_mat_col(kl_u64 *out, Py_ssize_t ow, Py_ssize_t *ol,
                             const kl_u64 *t, Py_ssize_t tw, const Py_ssize_t *tl_given,
                             const kl_u64 *c, Py_ssize_t cw, const Py_ssize_t *cl, Py_ssize_t k) {
        kl_u64 lost = 0;
        LB_LENS(tl, t, tw, k * k)
        for (Py_ssize_t e = 0; e < k * ow; e++) out[e] = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            ol[i] = 0;
            for (Py_ssize_t j = 0; j < k; j++)
                if (tl[i * k + j] && cl[j])
                    lost |= lb_addmul(out + i * ow, ow, ol + i, t + (i * k + j) * tw, tl[i * k + j],
                                      c + j * cw, cl[j]);
        }
        lb_close(out, ow, ol, k);
        return lost;
    }
    """
    ctypedef unsigned long long u64 "kl_u64"
    Py_ssize_t lb_used(const u64* x, Py_ssize_t w) noexcept nogil
    u64 lb_vec_mat(u64* out, Py_ssize_t* ow, Py_ssize_t* ol, const u64* v, Py_ssize_t vw,
                   const Py_ssize_t* vl, const u64* m, Py_ssize_t mw, const Py_ssize_t* ml,
                   Py_ssize_t k) noexcept nogil
    u64 lb_compose(u64* out, Py_ssize_t* ow, Py_ssize_t* ol, const u64* t, Py_ssize_t tw,
                   const Py_ssize_t* tl, const u64* m, Py_ssize_t mw, const Py_ssize_t* ml,
                   Py_ssize_t k) noexcept nogil
    u64 lb_sum(u64* out, Py_ssize_t* ow, Py_ssize_t* ol, const u64* v, Py_ssize_t vw,
               const Py_ssize_t* vl, const u64* l, Py_ssize_t lw, const Py_ssize_t* ll,
               const u64* r, Py_ssize_t rw, const Py_ssize_t* rl, Py_ssize_t k) noexcept nogil
    Py_ssize_t lb_trim(const u64* x, Py_ssize_t w, Py_ssize_t n, Py_ssize_t* used) noexcept nogil
    Py_ssize_t lb_max(const Py_ssize_t* length, Py_ssize_t n) noexcept nogil
    u64 lb_dot(u64* out, Py_ssize_t* ow, Py_ssize_t* ol, const u64* a, Py_ssize_t aw,
               const Py_ssize_t* al, const u64* c, Py_ssize_t cw, const Py_ssize_t* cl,
               Py_ssize_t k) noexcept nogil
    u64 lb_mat_col(u64* out, Py_ssize_t ow, Py_ssize_t* ol, const u64* t, Py_ssize_t tw,
                   const Py_ssize_t* tl, const u64* c, Py_ssize_t cw, const Py_ssize_t* cl,
                   Py_ssize_t k) noexcept nogil
    u64 lb_add(u64* acc, Py_ssize_t aw, Py_ssize_t* top, const u64* a, Py_ssize_t na) noexcept nogil


# -- limbs <-> Python ints (the conversions at the edges: vectors read out, moves past int64 read in)

cdef inline Py_ssize_t width_for(Py_ssize_t used) noexcept:
    """The width a limb array grows to for ``used`` limbs: a power of two, at least 2."""
    cdef Py_ssize_t w = 2
    while w < used:
        w *= 2
    return w


cdef inline object lb_int(const u64* x, Py_ssize_t n):
    """The ``n`` limbs at ``x`` (its exact length) as a Python int."""
    if n <= 1:
        return PyLong_FromUnsignedLongLong(x[0] if n else 0)
    return _PyLong_FromByteArray(<const unsigned char*>x, n * 8, 1, 0)


cdef inline list lb_list(const u64* x, Py_ssize_t w, const Py_ssize_t* lens, Py_ssize_t n):
    cdef Py_ssize_t e
    return [lb_int(x + e * w, lens[e]) for e in range(n)]


cdef inline tuple lb_rows(const u64* m, Py_ssize_t w, const Py_ssize_t* lens, Py_ssize_t k):
    """The sparse rows of the limb ``k × k`` matrix ``m`` (``lens``: its entries' lengths, or
    NULL: read from the limbs)."""
    cdef Py_ssize_t i, j, n
    cdef list rows = [], row
    for i in range(k):
        row = []
        for j in range(k):
            n = lens[i * k + j] if lens != NULL else lb_used(m + (i * k + j) * w, w)
            if n:
                row.append((j, lb_int(m + (i * k + j) * w, n)))
        rows.append(tuple(row))
    return tuple(rows)


cdef inline Py_ssize_t limbs_needed(object x) except -2:
    """Limbs the Python int ``x`` needs, or -1 when it is not a non-negative ``int``."""
    if not PyLong_CheckExact(x) or x < 0:
        return -1
    return (x.bit_length() + 63) // 64


cdef inline int int_to_limbs(object x, u64* dst, Py_ssize_t w) except -1:
    """``dst`` (width ``w``) = the non-negative int ``x`` (which fits)."""
    cdef bytes b = x.to_bytes(w * 8, "little")
    memcpy(dst, <const char*>b, w * 8)
    return 0
