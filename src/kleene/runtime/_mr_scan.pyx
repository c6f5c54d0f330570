# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
# distutils: language = c++
"""The fast path's partition loop of MATCH_RECOGNIZE, compiled.

The same algorithm as :func:`kleene.runtime.match_recognize.scan.scan` (its pure-Python
original and readable reference, which runs when this module was not built or
``KLEENE_PURE_PYTHON`` is set), with the same arguments and result: the searches of one
partition over per-row truth bits, threads in preferment order merged on (state,
registers), the MATCH cut, the dead (row, state) memory of failed searches, and the skip
driver.  Threads, the closure stack and the match histories live in C++ vectors; a merge
key packs the state and the register mask into one 64-bit integer (state < 2**18,
registers <= 14, rows < 2**32); the merge within one row is a generation array indexed by
(state, register mask), so the caller keeps ``len(ops) << registers`` small
(:data:`kleene.runtime.match_recognize.scan.MAX_SEEN`).
"""

from libc.stdint cimport int64_t, uint64_t
from libcpp.unordered_set cimport unordered_set
from libcpp.vector cimport vector

from kleene.automata.row_pattern import (
    BEGIN as _BEGIN, CHECK as _CHECK, END as _END, JMP as _JMP, MARK as _MARK, MATCH as _MATCH,
    SPLIT as _SPLIT, VAR as _VAR,
)
from kleene.runtime.match_recognize.scan import (
    DEAD_CAP as _DEAD_CAP, MAX_REGISTERS as _MAX_REGISTERS, MAX_SEEN as _MAX_SEEN,
)

cdef enum:
    VAR = 0
    SPLIT = 1
    JMP = 2
    BEGIN = 3
    END = 4
    MARK = 5
    CHECK = 6
    MATCH = 7

assert (_VAR, _SPLIT, _JMP, _BEGIN, _END, _MARK, _CHECK, _MATCH) == (0, 1, 2, 3, 4, 5, 6, 7)

cdef Py_ssize_t DEAD_CAP = _DEAD_CAP


cdef class _Scanner:
    cdef vector[int] ops, a, b
    cdef int nregs
    cdef int64_t n
    cdef const unsigned char[:, ::1] truth
    cdef vector[int] c_pc, n_pc, st_pc
    cdef vector[int64_t] c_hist, n_hist, c_regs, n_regs, st_regs, cur
    cdef vector[int64_t] cell_row, cell_parent
    cdef vector[int] cell_label, cell_excl
    cdef unordered_set[uint64_t] dead
    cdef vector[int64_t] seen  # generation at which (pc << nregs | mask) was last seen
    cdef int64_t generation
    cdef vector[uint64_t] visited
    cdef int64_t best
    cdef int64_t steps, max_threads

    cdef int closure(self, int pc0, int64_t* regs, int64_t hist, int64_t pos, bint into_next):
        """Epsilon moves from pc0, preferred first; 1 when MATCH was reached."""
        cdef int nregs = self.nregs
        cdef int i, pc, op
        cdef uint64_t mask, key
        cdef size_t top
        self.st_pc.clear()
        self.st_regs.clear()
        self.st_pc.push_back(pc0)
        for i in range(nregs):
            self.st_regs.push_back(regs[i])
        while self.st_pc.size() > 0:
            pc = self.st_pc.back()
            self.st_pc.pop_back()
            top = self.st_regs.size() - nregs
            for i in range(nregs):
                self.cur[i] = self.st_regs[top + i]
            self.st_regs.resize(top)
            mask = 0
            for i in range(nregs):
                if self.cur[i] == pos:
                    mask |= (<uint64_t>1) << i
            key = ((<uint64_t>pc) << nregs) | mask
            if self.seen[key] == self.generation:
                continue
            self.seen[key] = self.generation
            key = ((<uint64_t>pos) << 32) | (((<uint64_t>pc) << 14) | mask)
            if self.dead.size() > 0 and self.dead.count(key):
                continue
            self.visited.push_back(key)
            op = self.ops[pc]
            if op == VAR:
                if into_next:
                    self.n_pc.push_back(pc)
                    self.n_hist.push_back(hist)
                    for i in range(nregs):
                        self.n_regs.push_back(self.cur[i])
                else:
                    self.c_pc.push_back(pc)
                    self.c_hist.push_back(hist)
                    for i in range(nregs):
                        self.c_regs.push_back(self.cur[i])
            elif op == SPLIT:
                self.st_pc.push_back(self.b[pc])
                for i in range(nregs):
                    self.st_regs.push_back(self.cur[i])
                self.st_pc.push_back(self.a[pc])
                for i in range(nregs):
                    self.st_regs.push_back(self.cur[i])
            elif op == JMP:
                self.st_pc.push_back(self.a[pc])
                for i in range(nregs):
                    self.st_regs.push_back(self.cur[i])
            elif op == MARK:
                self.cur[self.a[pc]] = pos
                self.st_pc.push_back(pc + 1)
                for i in range(nregs):
                    self.st_regs.push_back(self.cur[i])
            elif op == CHECK:
                i = self.a[pc]
                self.st_pc.push_back(self.b[pc] if self.cur[i] == pos else pc + 1)
                self.cur[i] = -1
                for i in range(nregs):
                    self.st_regs.push_back(self.cur[i])
            elif op == BEGIN or op == END:
                if (op == BEGIN and pos == 0) or (op == END and pos == self.n):
                    self.st_pc.push_back(pc + 1)
                    for i in range(nregs):
                        self.st_regs.push_back(self.cur[i])
            else:  # MATCH
                self.best = hist
                return 1
        return 0

    cdef bint find(self, int64_t start):
        cdef vector[int64_t] init
        cdef int64_t pos, cell, t, size
        cdef int pc, label, nregs = self.nregs
        init.resize(nregs if nregs > 0 else 1, -1)
        self.cell_row.clear()
        self.cell_parent.clear()
        self.cell_label.clear()
        self.cell_excl.clear()
        self.c_pc.clear()
        self.c_hist.clear()
        self.c_regs.clear()
        self.generation += 1
        self.visited.clear()
        self.best = -2
        self.closure(0, &init[0], -1, start, False)
        pos = start
        while self.c_pc.size() > 0 and pos < self.n:
            size = self.c_pc.size()
            self.steps += size
            if size > self.max_threads:
                self.max_threads = size
            self.n_pc.clear()
            self.n_hist.clear()
            self.n_regs.clear()
            self.generation += 1
            for t in range(size):
                pc = self.c_pc[t]
                label = self.a[pc]
                if not self.truth[label, pos]:
                    continue
                cell = self.cell_row.size()
                self.cell_row.push_back(pos)
                self.cell_label.push_back(label)
                self.cell_excl.push_back(self.b[pc])
                self.cell_parent.push_back(self.c_hist[t])
                if self.closure(pc + 1, &self.c_regs[t * nregs] if nregs > 0 else &init[0],
                                cell, pos + 1, True):
                    break
            self.c_pc.swap(self.n_pc)
            self.c_hist.swap(self.n_hist)
            self.c_regs.swap(self.n_regs)
            pos += 1
        return self.best != -2


def scan(ops, a, b, int registers, const unsigned char[:, ::1] truth, int64_t n, int skip, uint64_t skip_mask, list steps):
    """See :func:`kleene.runtime.match_recognize.scan.scan`; ``truth`` here is a C-contiguous
    uint8 array (labels x rows)."""
    if registers > _MAX_REGISTERS or (len(ops) << registers) > _MAX_SEEN or len(ops) >= 1 << 18:
        raise ValueError("program too large for the compiled loop: use the pure-Python twin")
    if truth.shape[0] * truth.shape[1] and truth.shape[1] != n:
        raise ValueError("truth must have one column per row")
    cdef _Scanner s = _Scanner()
    cdef int64_t r = 0, number = 0, covered = 0, dead_top = -1, last, target, h, i
    cdef int64_t first_hit, last_hit, length, offset
    cdef size_t k
    cdef vector[int64_t] events, rows, path_rows
    cdef vector[int] labels, excluded, path_labels, path_excl
    s.ops = ops
    s.a = a
    s.b = b
    s.nregs = registers
    s.n = n
    s.cur.resize(registers if registers > 0 else 1)
    s.seen.resize(len(ops) << registers, -1)
    s.truth = truth
    while r < n:
        if r > dead_top or <Py_ssize_t>s.dead.size() > DEAD_CAP:
            s.dead.clear()
        if not s.find(r):
            for k in range(s.visited.size()):
                s.dead.insert(s.visited[k])
                h = <int64_t>(s.visited[k] >> 32)
                if h > dead_top:
                    dead_top = h
            if r >= covered:
                events.push_back(r)
                events.push_back(rows.size())
                events.push_back(-1)
            r += 1
            continue
        number += 1
        path_rows.clear()
        path_labels.clear()
        path_excl.clear()
        h = s.best
        while h >= 0:
            path_rows.push_back(s.cell_row[h])
            path_labels.push_back(s.cell_label[h])
            path_excl.push_back(s.cell_excl[h])
            h = s.cell_parent[h]
        length = path_rows.size()
        events.push_back(r)
        events.push_back(rows.size())
        events.push_back(length)
        first_hit = -1
        last_hit = -1
        for i in range(length - 1, -1, -1):
            rows.push_back(path_rows[i])
            labels.push_back(path_labels[i])
            excluded.push_back(path_excl[i])
            if (skip_mask >> path_labels[i]) & 1:
                if first_hit < 0:
                    first_hit = path_rows[i]
                last_hit = path_rows[i]
        if length == 0:
            r += 1
            continue
        last = path_rows[0]
        if last + 1 > covered:
            covered = last + 1
        if skip == 0:
            r = last + 1
        elif skip == 1:
            r += 1
        else:
            if first_hit < 0:
                steps[0] += s.steps
                steps[1] = max(steps[1], s.max_threads)
                return events, rows, labels, excluded, (1, number, r)
            target = first_hit if skip == 2 else last_hit
            if target == r:
                steps[0] += s.steps
                steps[1] = max(steps[1], s.max_threads)
                return events, rows, labels, excluded, (2, number, r)
            r = target
    steps[0] += s.steps
    steps[1] = max(steps[1], s.max_threads)
    return events, rows, labels, excluded, None
