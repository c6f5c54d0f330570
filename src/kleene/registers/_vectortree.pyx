# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The treap of count vectors (:class:`kleene.registers.vectortree.VectorTree`), compiled.

The same tree, node for node: the same priorities (drawn from the same ``random.Random``), the
same splits, merges, pushes and sums, the same ``work`` counted, the same exact Python ints.
Nodes are typed objects instead of lists and the matrix and vector loops run without the
interpreter's dispatch.  The pure-Python class stays the readable reference and is what runs
when this module was not built or ``KLEENE_PURE_PYTHON`` is set; tests/registers/test_aggregate.py
compares the two.
"""

from random import Random


cdef class Node:
    cdef public object value
    cdef public long long seq
    cdef public double prio
    cdef public Node left
    cdef public Node right
    cdef public list vec
    cdef public list sum
    cdef public object tag


cdef list vec_mat(list v, tuple m):
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


cdef tuple compose(tuple a, tuple b):
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


cdef object dot(list v, object f):
    cdef object total = 0
    cdef Py_ssize_t i
    for i in range(len(v)):
        x = v[i]
        if x:
            c = f[i]
            if c:
                total = total + x * c
    return total


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

    cdef void _apply(self, Node node, tuple m):
        node.sum = vec_mat(node.sum, m)
        if node.tag is None:
            node.tag = m
        else:
            node.tag = compose(<tuple>node.tag, m)

    cdef void _push(self, Node node):
        cdef tuple tag
        if node.tag is not None:
            tag = <tuple>node.tag
            self._work += 1
            node.vec = vec_mat(node.vec, tag)
            if node.left is not None:
                self._apply(node.left, tag)
            if node.right is not None:
                self._apply(node.right, tag)
            node.tag = None

    cdef void _pull(self, Node node):
        cdef list total = node.vec, other
        cdef Py_ssize_t i, k = self.k
        self._work += 1
        if node.left is not None:
            other = node.left.sum
            total = [total[i] + other[i] for i in range(k)]
        if node.right is not None:
            other = node.right.sum
            total = [total[i] + other[i] for i in range(k)]
        node.sum = total

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
        node.value, node.seq, node.prio = value, seq, self.random.random()
        node.left = node.right = None
        node.vec, node.sum, node.tag = vec, list(vec), None
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
        if root is None:
            return 0
        if not cuts:
            m, f = moves[0]
            found = dot(root.sum, f) if f is not None else 0
            if m is not None:
                self._apply(root, <tuple>m)
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
                    found += dot(part.sum, f)
                if m is not None:
                    self._apply(part, <tuple>m)
            merged = self._merge(merged, part)
        self.root = merged
        self._flush()
        return found

    cdef object _count(self, list cuts, list finals):
        cdef Py_ssize_t k = self.k, r, i
        cdef tuple zero = (0,) * k
        cdef list fs = [zero if f is None else f for f in finals]
        cdef Node root = self.root
        found = dot(root.sum, fs[len(fs) - 1])
        for r in range(len(cuts)):
            a, b = fs[r], fs[r + 1]
            g = [a[i] - b[i] for i in range(k)]
            if any(g):
                found = found + self._prefix(root, cuts[r][0], cuts[r][1], g)
        return found

    cdef object _prefix(self, Node node, object value, long long seq, list g):
        cdef object found = 0
        cdef Node left
        cdef list low
        cdef tuple row, jc
        cdef Py_ssize_t i, k = self.k
        while node is not None:
            self._work += 1
            left = node.left
            if node.tag is None:
                low = g
            else:
                low = [0] * k
                for i in range(k):
                    acc = 0
                    row = <tuple>(<tuple>node.tag)[i]
                    for jc in row:
                        acc = acc + jc[1] * g[<Py_ssize_t>jc[0]]
                    low[i] = acc
            if below(node, value, seq):
                found = found + dot(node.vec, low)
                if left is not None:
                    found = found + dot(left.sum, low)
                node = node.right
            else:
                node = left
            g = low
        return found

    def total(self):
        return [0] * self.k if self.root is None else list((<Node>self.root).sum)
