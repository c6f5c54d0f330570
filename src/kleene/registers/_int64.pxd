# cython: language_level=3
"""Checked int64 kernels of the compiled count tree (``_vectortree.pyx``): inline C, no module.

Products, compositions, sums and dots of small non-negative int64 vectors and ``k × k``
matrices, each either completing in int64 or reporting an overflow with its operand untouched,
so that the tree redoes the operation in limbs (:mod:`kleene.registers._limbs`).

Size: ~160 lines, one job (the int64 kernels, in C, ``k`` unrolled for 2, 3 and 4).
"""

# In C, in place: each entry is accumulated in a register and the results are written only when
# nothing overflowed (so the operand is untouched on failure); ``k`` is small (2-3 on the paper's
# rows), so no branch per entry (a zero is multiplied like any other: the sparsity patterns
# vary and mispredicted tests cost more than the products; overflow flags are or-ed and tested
# once), no memset/memcpy calls and no vector copies (GCC would turn the copy loops into
# them; its loop-distribute-patterns and vectorizer passes are off here: a 16-byte load of two
# 8-byte stores just made stalls, store-to-load forwarding fails, and cost 40% of a product).  Counts and moves are non-negative, so a sum
# overflows in one order of its terms exactly when it does in any other: the switch to Python
# ints happens at the same step as in a column-by-column or a row-by-row product.  When every
# entry of both operands is below 2^30 (or-ed together as unsigned: a negative one is not), no
# product reaches 2^60 and no sum of k <= 8 of them 2^63: the product is taken unchecked.

cdef extern from *:
    """
    #if defined(__GNUC__) && !defined(__clang__)
    #define KL_NODIST __attribute__((optimize("no-tree-loop-distribute-patterns", "no-tree-vectorize")))
    #else
    #define KL_NODIST
    #endif
    /* v = v . d (v a row vector of k, d row-major k x k); 0 on overflow, v then unchanged. */
    static inline __attribute__((always_inline)) int kl_vec_mat_k(long long *v, const long long *d,
                                                                   Py_ssize_t k) {
        long long o[k];
        int ovf = 0;
        unsigned long long bits = 0;
        for (Py_ssize_t i = 0; i < k; i++) bits |= (unsigned long long)v[i];
        for (Py_ssize_t i = 0; i < k * k; i++) bits |= (unsigned long long)d[i];
        if (bits < (1ULL << 30) && k <= 8) {
            for (Py_ssize_t j = 0; j < k; j++) {
                long long acc = 0;
                for (Py_ssize_t i = 0; i < k; i++) acc += v[i] * d[i * k + j];
                o[j] = acc;
            }
        } else {
        for (Py_ssize_t j = 0; j < k; j++) {
            long long acc = 0, p;
            for (Py_ssize_t i = 0; i < k; i++) {
                ovf |= __builtin_mul_overflow(v[i], d[i * k + j], &p);
                ovf |= __builtin_add_overflow(acc, p, &acc);
            }
            o[j] = acc;
        }
        if (ovf) return 0;
        }
        for (Py_ssize_t j = 0; j < k; j++) v[j] = o[j];
        return 1;
    }
    /* t = t . d (first t, then d); 0 on overflow, t then unchanged. */
    static inline __attribute__((always_inline)) int kl_compose_k(long long *t, const long long *d,
                                                                   Py_ssize_t k) {
        long long o[k * k];
        int ovf = 0;
        unsigned long long bits = 0;
        for (Py_ssize_t i = 0; i < k * k; i++) bits |= (unsigned long long)t[i] | (unsigned long long)d[i];
        if (bits < (1ULL << 30) && k <= 8) {
            for (Py_ssize_t i = 0; i < k; i++)
                for (Py_ssize_t l = 0; l < k; l++) {
                    long long acc = 0;
                    for (Py_ssize_t j = 0; j < k; j++) acc += t[i * k + j] * d[j * k + l];
                    o[i * k + l] = acc;
                }
            for (Py_ssize_t i = 0; i < k * k; i++) t[i] = o[i];
            return 1;
        }
        for (Py_ssize_t i = 0; i < k; i++) {
            for (Py_ssize_t l = 0; l < k; l++) {
                long long acc = 0, p;
                for (Py_ssize_t j = 0; j < k; j++) {
                    ovf |= __builtin_mul_overflow(t[i * k + j], d[j * k + l], &p);
                    ovf |= __builtin_add_overflow(acc, p, &acc);
                }
                o[i * k + l] = acc;
            }
        }
        if (ovf) return 0;
        for (Py_ssize_t i = 0; i < k * k; i++) t[i] = o[i];
        return 1;
    }
    /* s = v + l + r (l, r may be NULL); 0 on overflow, s then unchanged. */
    static inline __attribute__((always_inline)) int kl_sum_k(long long *s, const long long *v,
                                                               const long long *l, const long long *r,
                                                               Py_ssize_t k) {
        long long o[k];
        int ovf = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            long long acc = v[i];
            if (l) ovf |= __builtin_add_overflow(acc, l[i], &acc);
            if (r) ovf |= __builtin_add_overflow(acc, r[i], &acc);
            o[i] = acc;
        }
        if (ovf) return 0;
        for (Py_ssize_t i = 0; i < k; i++) s[i] = o[i];
        return 1;
    }
    /* The same with k a constant for the small sizes (unrolled), else the loops. */
    static KL_NODIST int kl_vec_mat(long long *v, const long long *d, Py_ssize_t k) {
        switch (k) {
            case 2: return kl_vec_mat_k(v, d, 2);
            case 3: return kl_vec_mat_k(v, d, 3);
            case 4: return kl_vec_mat_k(v, d, 4);
            default: return kl_vec_mat_k(v, d, k);
        }
    }
    static KL_NODIST int kl_compose(long long *t, const long long *d, Py_ssize_t k) {
        switch (k) {
            case 2: return kl_compose_k(t, d, 2);
            case 3: return kl_compose_k(t, d, 3);
            case 4: return kl_compose_k(t, d, 4);
            default: return kl_compose_k(t, d, k);
        }
    }
    static KL_NODIST int kl_sum(long long *s, const long long *v, const long long *l,
                                const long long *r, Py_ssize_t k) {
        switch (k) {
            case 2: return kl_sum_k(s, v, l, r, 2);
            case 3: return kl_sum_k(s, v, l, r, 3);
            case 4: return kl_sum_k(s, v, l, r, 4);
            default: return kl_sum_k(s, v, l, r, k);
        }
    }
    /* *acc += a . g; 0 on overflow. */
    static inline int kl_dot(const long long *a, const long long *g, Py_ssize_t k, long long *acc) {
        long long p;
        for (Py_ssize_t i = 0; i < k; i++) {
            if (a[i] && g[i]) {
                if (__builtin_mul_overflow(a[i], g[i], &p) || __builtin_add_overflow(*acc, p, acc)) return 0;
            }
        }
        return 1;
    }
    /* out = t . g (g a column vector; may be negative); 0 on overflow. */
    static inline int kl_mat_col(const long long *t, const long long *g, long long *out, Py_ssize_t k) {
        for (Py_ssize_t i = 0; i < k; i++) {
            long long acc = 0, p;
            for (Py_ssize_t j = 0; j < k; j++) {
                if (t[i * k + j]) {
                    if (__builtin_mul_overflow(t[i * k + j], g[j], &p) || __builtin_add_overflow(acc, p, &acc)) return 0;
                }
            }
            out[i] = acc;
        }
        return 1;
    }
    """
    bint kl_vec_mat(long long* v, const long long* d, Py_ssize_t k) noexcept nogil
    bint kl_compose(long long* t, const long long* d, Py_ssize_t k) noexcept nogil
    bint kl_sum(long long* s, const long long* v, const long long* l, const long long* r,
                Py_ssize_t k) noexcept nogil
    bint kl_dot(const long long* a, const long long* g, Py_ssize_t k, long long* acc) noexcept nogil
    bint kl_mat_col(const long long* t, const long long* g, long long* out, Py_ssize_t k) noexcept nogil
