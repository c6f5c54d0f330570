# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The layout of JSON Lines of :func:`kleene.io.writers._line_array`, compiled.

A line is ``head start, "end": end, "positions": [p1, p2, ...], "events": [row1, row2, ...tail``
where the head (``{"start": ``, or with the query's name) and the tail (``]}`` and a newline,
or with the partition) are texts chosen per line, and the rows are the input rows already
rendered as JSON objects (:func:`kleene.io.writers.json_rows`).  The pure-Python original lays
the lines out with Arrow kernels (casts, list joins and one ``take`` over all pieces); that
makes several passes over hundreds of megabytes and allocates as much again in intermediates.
Here one pass measures the lines and a second writes them into one buffer: integers are
formatted in place, rows and texts are copied with ``memcpy``.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.string cimport memcpy

import numpy as np

cdef const char* END = b', "end": '
cdef const char* POSITIONS = b', "positions": ['
cdef const char* EVENTS = b'], "events": ['
cdef Py_ssize_t END_LEN = 9
cdef Py_ssize_t POSITIONS_LEN = 16
cdef Py_ssize_t EVENTS_LEN = 14


cdef inline Py_ssize_t _digits(long long v) noexcept:
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


cdef inline char* _format(char* out, long long v) noexcept:
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


def lines(
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
    """The lines of ``n = len(start)`` complex events: ``(text, line_offsets)``.

    Complex event ``i`` has positions ``positions[offsets[i]:offsets[i + 1]]``, whose events
    are the rendered rows ``rows[offsets[i]:offsets[i + 1]]`` (row ``r`` is
    ``row_data[row_offsets[r]:row_offsets[r + 1]]``).  Its head is ``heads[head_of[i]]``
    and its tail ``tails[tail_of[i]]`` (``heads[0]`` and ``tails[0]`` when the index is None).
    ``text`` is bytes; line ``i`` is ``text[line_offsets[i]:line_offsets[i + 1]]``.
    """
    cdef Py_ssize_t n = start.shape[0], i, k, total = 0, size, r
    cdef long long[::1] line_offsets
    cdef bytes text
    cdef char* out
    cdef const char* piece
    cdef Py_ssize_t hlen, tlen
    for part in heads:
        if not isinstance(part, bytes):
            raise TypeError("heads are bytes")
    for part in tails:
        if not isinstance(part, bytes):
            raise TypeError("tails are bytes")
    if end.shape[0] != n or offsets.shape[0] != n + 1:
        raise ValueError("start, end and offsets disagree on the number of complex events")
    if positions.shape[0] < offsets[n] or rows.shape[0] < offsets[n]:
        raise ValueError("fewer positions or rows than the offsets say")
    cdef Py_ssize_t nrows = row_offsets.shape[0] - 1
    offsets_np = np.empty(n + 1, dtype=np.int64)
    line_offsets = offsets_np
    # Pass 1: the length of every line.
    line_offsets[0] = 0
    for i in range(n):
        hlen = len(<bytes>heads[0 if head_of is None else head_of[i]])
        tlen = len(<bytes>tails[0 if tail_of is None else tail_of[i]])
        size = hlen + _digits(start[i]) + END_LEN + _digits(end[i]) + POSITIONS_LEN + EVENTS_LEN + tlen
        for k in range(offsets[i], offsets[i + 1]):
            r = rows[k]
            if r < 0 or r >= nrows:
                raise IndexError(f"row {r} out of range")
            size += _digits(positions[k]) + row_offsets[r + 1] - row_offsets[r]
        if offsets[i + 1] > offsets[i]:
            size += 4 * (offsets[i + 1] - offsets[i] - 1)  # ", " between positions and between rows
        total += size
        line_offsets[i + 1] = total
    text = PyBytes_FromStringAndSize(NULL, total)
    out = PyBytes_AS_STRING(text)
    # Pass 2: the lines.
    for i in range(n):
        piece = <bytes>heads[0 if head_of is None else head_of[i]]
        hlen = len(<bytes>heads[0 if head_of is None else head_of[i]])
        memcpy(out, piece, hlen)
        out = _format(out + hlen, start[i])
        memcpy(out, END, END_LEN)
        out = _format(out + END_LEN, end[i])
        memcpy(out, POSITIONS, POSITIONS_LEN)
        out += POSITIONS_LEN
        for k in range(offsets[i], offsets[i + 1]):
            if k > offsets[i]:
                out[0] = b','
                out[1] = b' '
                out += 2
            out = _format(out, positions[k])
        memcpy(out, EVENTS, EVENTS_LEN)
        out += EVENTS_LEN
        for k in range(offsets[i], offsets[i + 1]):
            if k > offsets[i]:
                out[0] = b','
                out[1] = b' '
                out += 2
            r = rows[k]
            size = row_offsets[r + 1] - row_offsets[r]
            if size:
                memcpy(out, &row_data[row_offsets[r]], size)
            out += size
        piece = <bytes>tails[0 if tail_of is None else tail_of[i]]
        tlen = len(<bytes>tails[0 if tail_of is None else tail_of[i]])
        memcpy(out, piece, tlen)
        out += tlen
    if out - PyBytes_AS_STRING(text) != total:
        raise AssertionError("line lengths measured and written disagree")
    return text, offsets_np


def join(list constants, list offsets, list datas):
    """Row ``i`` of ``k`` text columns joined with ``k + 1`` constants: ``(text, row_offsets)``.

    Row ``i`` is ``constants[0] + column_0[i] + constants[1] + ... + column_k-1[i] +
    constants[k]``, column ``j``'s value ``i`` being ``datas[j][offsets[j][i]:offsets[j][i + 1]]``
    (int64 offsets, as in an Arrow ``large_string`` array): the rows of
    :func:`kleene.io.writers.json_rows` in one pass instead of Arrow's element-wise join.
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
        for i in range(n):
            memcpy(base + cursor[i], c, clen)
            cursor[i] += clen
            if j < k:
                size = o[i + 1] - o[i]
                if size:
                    memcpy(base + cursor[i], &d[o[i]], size)
                cursor[i] += size
    return text, row_np
