# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The layout of JSON Lines of :func:`kleene.io.jsonl_bulk._line_array`, compiled.

A line is ``head start, "end": end, "positions": [p1, p2, ...], "events": [row1, row2, ...tail``
where the head (``{"start": ``, or with the query's name) and the tail (``]}`` and a newline,
or with the partition) are texts chosen per line, and the rows are the input rows already
rendered as JSON objects (:func:`kleene.io.jsonl_bulk.json_rows`).  The pure-Python original lays
the lines out with Arrow kernels (casts, list joins and one ``take`` over all pieces); that
makes several passes over hundreds of megabytes and allocates as much again in intermediates.
Here one pass measures the lines and a second writes them into one buffer: integers are
formatted in place, rows and texts are copied with ``memcpy``.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.string cimport memcpy

import numpy as np

cdef const char* END = b', "end": '
cdef const char* POSITIONS = b', "positions": ['
cdef const char* EVENTS = b'], "events": ['
cdef const char* SEPARATOR = b", "
cdef Py_ssize_t END_LEN = 9
cdef Py_ssize_t POSITIONS_LEN = 16
cdef Py_ssize_t EVENTS_LEN = 14


cdef inline char* _put(char* out, const char* text, Py_ssize_t size) noexcept nogil:
    """Copy ``size`` bytes of ``text`` to ``out``; return the end."""
    if size:
        memcpy(out, text, size)
    return out + size


cdef inline Py_ssize_t _digits(long long v) noexcept nogil:
    """The length of ``str(v)``."""
    cdef Py_ssize_t n = 1
    cdef unsigned long long u
    if v < 0:
        n = 2
        u = <unsigned long long>(-(v + 1)) + 1
    else:
        u = <unsigned long long>v
    while u >= 10:
        u //= 10
        n += 1
    return n


cdef inline char* _format(char* out, long long v) noexcept nogil:
    """Write ``str(v)`` at ``out``; return the end."""
    cdef char tmp[24]
    cdef Py_ssize_t k = 0, i
    cdef unsigned long long u
    if v < 0:
        out[0] = b'-'
        out += 1
        u = <unsigned long long>(-(v + 1)) + 1
    else:
        u = <unsigned long long>v
    while True:
        tmp[k] = <char>(48 + u % 10)
        k += 1
        u //= 10
        if u == 0:
            break
    for i in range(k):
        out[i] = tmp[k - 1 - i]
    return out + k


cdef class Lines:
    """The lines of ``n = len(start)`` complex events, measured, to be written out.

    Complex event ``i`` has positions ``positions[offsets[i]:offsets[i + 1]]``, whose events
    are the rendered rows ``rows[offsets[i]:offsets[i + 1]]`` (row ``r`` is
    ``row_data[row_offsets[r]:row_offsets[r + 1]]``).  Its head is ``heads[head_of[i]]``
    and its tail ``tails[tail_of[i]]`` (``heads[0]`` and ``tails[0]`` when the index is None).
    Line ``i`` takes bytes ``line_offsets[i]:line_offsets[i + 1]`` of the text.
    """

    cdef const long long[::1] start, end, offsets, positions, rows, row_offsets, head_of, tail_of
    cdef const unsigned char[::1] row_data
    cdef list heads, tails
    cdef readonly object line_offsets
    cdef long long[::1] _line
    # The heads' and tails' bytes as C pointers (the lists keep them alive), for the layout
    # without the GIL.
    cdef const char** _head_text
    cdef const char** _tail_text
    cdef Py_ssize_t* _head_len
    cdef Py_ssize_t* _tail_len
    cdef bint _has_head_of, _has_tail_of
    cdef Py_ssize_t _n_heads, _n_tails

    def __dealloc__(self):
        PyMem_Free(self._head_text)
        PyMem_Free(self._tail_text)
        PyMem_Free(self._head_len)
        PyMem_Free(self._tail_len)

    def __init__(
        self,
        const long long[::1] start,
        const long long[::1] end,
        const long long[::1] offsets,
        const long long[::1] positions,
        const long long[::1] rows,
        const long long[::1] row_offsets,
        const unsigned char[::1] row_data,
        list heads,
        const long long[::1] head_of,
        list tails,
        const long long[::1] tail_of,
    ):
        cdef Py_ssize_t n = start.shape[0], i, k, total = 0, size, r
        cdef Py_ssize_t nrows = row_offsets.shape[0] - 1
        for part in heads + tails:
            if not isinstance(part, bytes):
                raise TypeError("heads and tails are bytes")
        if end.shape[0] != n or offsets.shape[0] != n + 1:
            raise ValueError("start, end and offsets disagree on the number of complex events")
        if positions.shape[0] < offsets[n] or rows.shape[0] < offsets[n]:
            raise ValueError("fewer positions or rows than the offsets say")
        if (head_of is not None and head_of.shape[0] < n) or (tail_of is not None and tail_of.shape[0] < n):
            raise ValueError("fewer head or tail indices than complex events")
        if nrows < 0 or (nrows > 0 and (row_offsets[0] < 0 or row_offsets[nrows] > row_data.shape[0])):
            raise ValueError("row offsets outside the rows' data")
        for i in range(n):
            if offsets[i] < 0 or offsets[i + 1] < offsets[i]:
                raise ValueError("offsets must start at 0 or later and not decrease")
        for r in range(nrows):
            if row_offsets[r + 1] < row_offsets[r]:
                raise ValueError("row offsets must not decrease")
        self.start, self.end, self.offsets, self.positions = start, end, offsets, positions
        self.rows, self.row_offsets, self.row_data = rows, row_offsets, row_data
        self.heads, self.head_of, self.tails, self.tail_of = heads, head_of, tails, tail_of
        self._has_head_of, self._has_tail_of = head_of is not None, tail_of is not None
        self._n_heads, self._n_tails = len(heads), len(tails)
        self._head_text = <const char**>PyMem_Malloc(max(1, len(heads)) * sizeof(char*))
        self._tail_text = <const char**>PyMem_Malloc(max(1, len(tails)) * sizeof(char*))
        self._head_len = <Py_ssize_t*>PyMem_Malloc(max(1, len(heads)) * sizeof(Py_ssize_t))
        self._tail_len = <Py_ssize_t*>PyMem_Malloc(max(1, len(tails)) * sizeof(Py_ssize_t))
        if not (self._head_text and self._tail_text and self._head_len and self._tail_len):
            raise MemoryError()
        for i in range(len(heads)):
            self._head_text[i] = PyBytes_AS_STRING(heads[i])
            self._head_len[i] = len(<bytes>heads[i])
        for i in range(len(tails)):
            self._tail_text[i] = PyBytes_AS_STRING(tails[i])
            self._tail_len[i] = len(<bytes>tails[i])
        self.line_offsets = np.empty(n + 1, dtype=np.int64)
        self._line = self.line_offsets
        # The length of every line (and every index checked, so writing reads nothing out of bounds).
        self._line[0] = 0
        for i in range(n):
            size = (len(<bytes>heads[self._head(i)]) + _digits(start[i]) + END_LEN + _digits(end[i])
                    + POSITIONS_LEN + EVENTS_LEN + len(<bytes>tails[self._tail(i)]))
            for k in range(offsets[i], offsets[i + 1]):
                r = rows[k]
                if r < 0 or r >= nrows:
                    raise IndexError(f"row {r} out of range")
                size += _digits(positions[k]) + row_offsets[r + 1] - row_offsets[r]
            if offsets[i + 1] > offsets[i]:
                size += 4 * (offsets[i + 1] - offsets[i] - 1)  # ", " between positions and between rows
            total += size
            self._line[i + 1] = total

    cdef inline Py_ssize_t _head(self, Py_ssize_t i) except -1:
        cdef Py_ssize_t h = 0 if self.head_of is None else self.head_of[i]
        if h < 0 or h >= len(self.heads):
            raise IndexError(f"head {h} out of range")
        return h

    cdef inline Py_ssize_t _tail(self, Py_ssize_t i) except -1:
        cdef Py_ssize_t t = 0 if self.tail_of is None else self.tail_of[i]
        if t < 0 or t >= len(self.tails):
            raise IndexError(f"tail {t} out of range")
        return t

    cdef int _write(self, Py_ssize_t lo, Py_ssize_t hi, char* out) except -1:
        """Lines ``lo`` to ``hi - 1`` at ``out`` (which has room for them), without the GIL:
        ``kleene.io.writers`` lays a batch out in a thread while the next batch is evaluated."""
        cdef char* end
        with nogil:
            end = self._lay_out(lo, hi, out)
        if end == NULL:
            raise IndexError("a head or tail index out of range")
        if end - out != self._line[hi] - self._line[lo]:
            raise AssertionError("line lengths measured and written disagree")
        return 0

    cdef char* _lay_out(self, Py_ssize_t lo, Py_ssize_t hi, char* out) noexcept nogil:
        """The loop of :meth:`_write`; NULL when a head or tail index is out of range."""
        cdef Py_ssize_t i, k, r, h, t
        for i in range(lo, hi):
            h = self.head_of[i] if self._has_head_of else 0
            t = self.tail_of[i] if self._has_tail_of else 0
            if h < 0 or h >= self._n_heads or t < 0 or t >= self._n_tails:
                return NULL
            out = _put(out, self._head_text[h], self._head_len[h])
            out = _format(out, self.start[i])
            out = _put(out, END, END_LEN)
            out = _format(out, self.end[i])
            out = _put(out, POSITIONS, POSITIONS_LEN)
            for k in range(self.offsets[i], self.offsets[i + 1]):
                if k > self.offsets[i]:
                    out = _put(out, SEPARATOR, 2)
                out = _format(out, self.positions[k])
            out = _put(out, EVENTS, EVENTS_LEN)
            for k in range(self.offsets[i], self.offsets[i + 1]):
                if k > self.offsets[i]:
                    out = _put(out, SEPARATOR, 2)
                r = self.rows[k]
                out = _put(out, <const char*>&self.row_data[0] + self.row_offsets[r],
                           self.row_offsets[r + 1] - self.row_offsets[r])
            out = _put(out, self._tail_text[t], self._tail_len[t])
        return out

    def text(self):
        """All the lines as one bytes object."""
        cdef Py_ssize_t n = self._line.shape[0] - 1
        cdef bytes text = PyBytes_FromStringAndSize(NULL, self._line[n])
        self._write(0, n, PyBytes_AS_STRING(text))
        return text

    def write_to(self, write, Py_ssize_t chunk=1 << 22):
        """Hand the lines to ``write`` in pieces of about ``chunk`` bytes (whole lines; a longer
        line alone); return the number of bytes.

        One buffer serves every piece: its memory stays mapped and warm, instead of hundreds
        of megabytes of fresh pages for one text (the page faults cost more than the copies).
        """
        cdef Py_ssize_t n = self._line.shape[0] - 1, lo = 0, hi
        buffer = bytearray(chunk)
        view = memoryview(buffer)
        cdef char* out
        while lo < n:
            hi = lo + 1
            while hi < n and self._line[hi + 1] - self._line[lo] <= chunk:
                hi += 1
            size = self._line[hi] - self._line[lo]
            if size > len(buffer):
                buffer = bytearray(size)
                view = memoryview(buffer)
            out = buffer
            self._write(lo, hi, out)
            write(view[:size])
            lo = hi
        return self._line[n]


def join(list constants, list offsets, list datas):
    """Row ``i`` of ``k`` text columns joined with ``k + 1`` constants: ``(text, row_offsets)``.

    Row ``i`` is ``constants[0] + column_0[i] + constants[1] + ... + column_k-1[i] +
    constants[k]``, column ``j``'s value ``i`` being ``datas[j][offsets[j][i]:offsets[j][i + 1]]``
    (int64 offsets, as in an Arrow ``large_string`` array): the rows of
    :func:`kleene.io.jsonl_bulk.json_rows` in one pass instead of Arrow's element-wise join.
    """
    cdef Py_ssize_t k = len(offsets), j, i, n, total = 0, size
    if len(constants) != k + 1 or len(datas) != k or k == 0:
        raise ValueError("join() takes k columns and k + 1 constants, k >= 1")
    cdef const long long[::1] o
    cdef const unsigned char[::1] d
    cdef list offs = [None] * k
    cdef list dats = [None] * k
    for j in range(k):
        if not isinstance(constants[j], bytes):
            raise TypeError("constants are bytes")
        offs[j] = np.ascontiguousarray(offsets[j], dtype=np.int64)
        dats[j] = np.ascontiguousarray(datas[j], dtype=np.uint8)
    if not isinstance(constants[k], bytes):
        raise TypeError("constants are bytes")
    n = len(offs[0]) - 1
    cdef Py_ssize_t fixed = sum(len(c) for c in constants)
    row_np = np.full(n + 1, fixed, dtype=np.int64)
    cdef long long[::1] rows = row_np
    rows[0] = 0
    for j in range(k):
        o = offs[j]
        d = dats[j]
        if o.shape[0] != n + 1:
            raise ValueError("columns of different lengths")
        if n and (o[0] < 0 or o[n] > d.shape[0]):
            raise ValueError("offsets outside the data")
        for i in range(n):
            size = o[i + 1] - o[i]
            if size < 0:
                raise ValueError("offsets decrease")
            rows[i + 1] += size
    for i in range(n):
        rows[i + 1] += rows[i]
    total = rows[n]
    cdef bytes text = PyBytes_FromStringAndSize(NULL, total)
    cdef char* base = PyBytes_AS_STRING(text)
    cdef const char* c
    cdef Py_ssize_t clen
    # Column by column (each column's views are taken once), a cursor per row.
    cursor_np = row_np[:n].copy()
    cdef long long[::1] cursor = cursor_np
    for j in range(k + 1):
        c = <bytes>constants[j]
        clen = len(<bytes>constants[j])
        if j < k:
            o = offs[j]
            d = dats[j]
        with nogil:  # the copies without the GIL: the writer's thread lays lines out meanwhile
            for i in range(n):
                memcpy(base + cursor[i], c, clen)
                cursor[i] += clen
                if j < k:
                    size = o[i + 1] - o[i]
                    if size:
                        memcpy(base + cursor[i], &d[o[i]], size)
                    cursor[i] += size
    return text, row_np
