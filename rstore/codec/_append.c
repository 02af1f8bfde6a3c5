/*
 * Optional C accelerator for appending entries to a stream node: the inner loop of bulk loads
 * (rstore.streams.bulk, Store.append_entries).
 *
 * append_entry() does exactly what rstore.codec.stream_node.append_entry does, for the plain
 * case only: every field and value a `bytes` object, the node's live count a one-byte integer
 * below 127 (so bumping it changes no size), a well-formed master entry.  For anything else it
 * changes nothing and returns None, and the caller runs the Python version (the reference;
 * tests/codec/test_append_speedup.py compares the two byte for byte).
 *
 * Listpack encodings written (as Redis's lpAppend): a canonical int64 decimal as the smallest
 * integer encoding, any other string as a 6-bit, 12-bit or 32-bit length string; each element
 * followed by its backlen.  The reading side is in listpack_read.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "listpack_read.h"

/* Canonical signed 64-bit decimal (Redis's string2ll); 1 and *v on success. */
static int string2ll(const unsigned char *s, Py_ssize_t n, int64_t *v)
{
    Py_ssize_t i = 0;
    int neg = 0;
    uint64_t u = 0;

    if (n == 0 || n > 20) return 0;
    if (n == 1 && s[0] == '0') {
        *v = 0;
        return 1;
    }
    if (s[0] == '-') {
        neg = 1;
        i = 1;
        if (n == 1) return 0;
    }
    if (s[i] < '1' || s[i] > '9') return 0;
    for (; i < n; i++) {
        unsigned d;
        if (s[i] < '0' || s[i] > '9') return 0;
        d = (unsigned)(s[i] - '0');
        if (u > (UINT64_MAX - d) / 10) return 0;
        u = u * 10 + d;
    }
    if (neg) {
        if (u > (uint64_t)INT64_MAX + 1) return 0;
        *v = (int64_t)(0 - u);
    } else {
        if (u > (uint64_t)INT64_MAX) return 0;
        *v = (int64_t)u;
    }
    return 1;
}

/* Write the backlen of an element of `size` bytes at out; its length. */
static Py_ssize_t put_backlen(unsigned char *out, Py_ssize_t size)
{
    if (size <= 127) {
        out[0] = (unsigned char)size;
        return 1;
    }
    if (size < 16383) {
        out[0] = (unsigned char)(size >> 7);
        out[1] = (unsigned char)((size & 127) | 128);
        return 2;
    }
    if (size < 2097151) {
        out[0] = (unsigned char)(size >> 14);
        out[1] = (unsigned char)(((size >> 7) & 127) | 128);
        out[2] = (unsigned char)((size & 127) | 128);
        return 3;
    }
    if (size < 268435455) {
        out[0] = (unsigned char)(size >> 21);
        out[1] = (unsigned char)(((size >> 14) & 127) | 128);
        out[2] = (unsigned char)(((size >> 7) & 127) | 128);
        out[3] = (unsigned char)((size & 127) | 128);
        return 4;
    }
    out[0] = (unsigned char)((size >> 28) & 0xFF);
    out[1] = (unsigned char)(((size >> 21) & 127) | 128);
    out[2] = (unsigned char)(((size >> 14) & 127) | 128);
    out[3] = (unsigned char)(((size >> 7) & 127) | 128);
    out[4] = (unsigned char)((size & 127) | 128);
    return 5;
}

/* An integer element in Redis's smallest form (at most 10 bytes); its length. */
static Py_ssize_t put_int(unsigned char *out, int64_t v)
{
    int width, i;
    if (v >= 0 && v <= 127) {
        out[0] = (unsigned char)v;
        out[1] = 1;
        return 2;
    }
    if (v >= -4096 && v <= 4095) {
        uint64_t u = (uint64_t)v & 0x1FFF;
        out[0] = (unsigned char)(0xC0 | (u >> 8));
        out[1] = (unsigned char)(u & 0xFF);
        out[2] = 2;
        return 3;
    }
    if (v >= -32768 && v <= 32767) {
        out[0] = 0xF1;
        width = 2;
    } else if (v >= -8388608 && v <= 8388607) {
        out[0] = 0xF2;
        width = 3;
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        out[0] = 0xF3;
        width = 4;
    } else {
        out[0] = 0xF4;
        width = 8;
    }
    for (i = 0; i < width; i++) out[1 + i] = (unsigned char)(((uint64_t)v >> (8 * i)) & 0xFF);
    out[1 + width] = (unsigned char)(width + 1);
    return width + 2;
}

/* The bytes `encode_value` gives for s (at most len + 10); its length. */
static Py_ssize_t put_value(unsigned char *out, const unsigned char *s, Py_ssize_t n)
{
    int64_t v;
    Py_ssize_t head;
    if (n && ((s[0] >= '0' && s[0] <= '9') || s[0] == '-') && string2ll(s, n, &v))
        return put_int(out, v);
    if (n < 64) {
        out[0] = (unsigned char)(0x80 | n);
        head = 1;
    } else if (n < 4096) {
        out[0] = (unsigned char)(0xE0 | (n >> 8));
        out[1] = (unsigned char)(n & 0xFF);
        head = 2;
    } else {
        out[0] = 0xF0;
        out[1] = (unsigned char)(n & 0xFF);
        out[2] = (unsigned char)((n >> 8) & 0xFF);
        out[3] = (unsigned char)((n >> 16) & 0xFF);
        out[4] = (unsigned char)((n >> 24) & 0xFF);
        head = 5;
    }
    memcpy(out + head, s, (size_t)n);
    return head + n + put_backlen(out + head + n, head + n);
}

/* Whether the element e (read from b) has the text s (integers compared as decimal). */
static int same_text(const unsigned char *b, const element *e, PyObject *s)
{
    const char *p = PyBytes_AS_STRING(s);
    Py_ssize_t n = PyBytes_GET_SIZE(s);
    if (e->is_int) {
        char text[24];
        int len = snprintf(text, sizeof text, "%lld", (long long)e->ival);
        return len == n && memcmp(text, p, (size_t)n) == 0;
    }
    return e->str_len == n && memcmp(b + e->str_at, p, (size_t)n) == 0;
}

/* entry_size(fields_values) -> int | None: the raw length of the items (Redis's totelelen),
 * None unless fields_values is a list or tuple of bytes objects. */
static PyObject *entry_size(PyObject *self, PyObject *fv)
{
    Py_ssize_t i, n, total = 0;
    PyObject **items;
    if (!PyList_CheckExact(fv) && !PyTuple_CheckExact(fv)) Py_RETURN_NONE;
    n = PySequence_Fast_GET_SIZE(fv);
    items = PySequence_Fast_ITEMS(fv);
    for (i = 0; i < n; i++) {
        if (!PyBytes_CheckExact(items[i])) Py_RETURN_NONE;
        total += PyBytes_GET_SIZE(items[i]);
    }
    return PyLong_FromSsize_t(total);
}

/* append_entry(node, master_ms, master_seq, ms, seq, fields_values) -> True | None */
static PyObject *append_entry(PyObject *self, PyObject *args)
{
    PyObject *node, *fv, **items;
    unsigned long long mms, mseq, ms, seq;
    Py_ssize_t len, stop, p, n, i, nmaster, body_len, added, lp_count, old_len, w;
    int64_t v, ms_d, seq_d;
    int same;
    unsigned char *b, *out;
    element e;

    if (!PyArg_ParseTuple(args, "YKKKKO", &node, &mms, &mseq, &ms, &seq, &fv)) return NULL;
    if (!PyList_CheckExact(fv) && !PyTuple_CheckExact(fv)) Py_RETURN_NONE;
    n = PySequence_Fast_GET_SIZE(fv);
    items = PySequence_Fast_ITEMS(fv);
    if (n < 2 || n % 2) Py_RETURN_NONE;
    body_len = 0;
    for (i = 0; i < n; i++) {
        if (!PyBytes_CheckExact(items[i])) Py_RETURN_NONE;
        body_len += PyBytes_GET_SIZE(items[i]) + 10; /* an element is at most its bytes + 10 */
    }
    n /= 2;
    len = PyByteArray_GET_SIZE(node);
    b = (unsigned char *)PyByteArray_AS_STRING(node);
    stop = len - 1;
    if (len < HEADER_SIZE + 3 || b[stop] != 0xFF || b[HEADER_SIZE] >= 127) Py_RETURN_NONE;
    p = HEADER_SIZE + 2;                                     /* past the live count */
    if ((p = read_int(b, stop, p, &v)) < 0) Py_RETURN_NONE; /* deleted */
    if ((p = read_int(b, stop, p, &v)) < 0 || v < 0) Py_RETURN_NONE;
    nmaster = (Py_ssize_t)v;
    same = nmaster == n;
    for (i = 0; same && i < n; i++) {
        if ((p = read_el(b, stop, p, &e)) < 0) Py_RETURN_NONE;
        same = same_text(b, &e, items[2 * i]);
    }
    ms_d = (int64_t)((uint64_t)ms - (uint64_t)mms);
    seq_d = (int64_t)((uint64_t)seq - (uint64_t)mseq);
    lp_count = same ? n + 3 : 2 * n + 4;
    added = same ? n + 4 : 2 * n + 5;
    body_len += 3 * 10 + 10 + 10; /* flags, deltas, field count, lp_count */
    out = PyMem_Malloc((size_t)body_len);
    if (out == NULL) return PyErr_NoMemory();
    w = put_int(out, same ? FLAG_SAMEFIELDS : 0);
    w += put_int(out + w, ms_d);
    w += put_int(out + w, seq_d);
    if (!same) w += put_int(out + w, (int64_t)n);
    for (i = 0; i < n; i++) {
        PyObject *f = items[2 * i], *val = items[2 * i + 1];
        if (!same)
            w += put_value(out + w, (const unsigned char *)PyBytes_AS_STRING(f), PyBytes_GET_SIZE(f));
        w += put_value(out + w, (const unsigned char *)PyBytes_AS_STRING(val),
                       PyBytes_GET_SIZE(val));
    }
    w += put_int(out + w, (int64_t)lp_count);
    old_len = len;
    if (old_len - 1 + w + 1 > (Py_ssize_t)UINT32_MAX ||
        PyByteArray_Resize(node, old_len - 1 + w + 1) < 0) {
        PyMem_Free(out);
        PyErr_Clear(); /* exported buffer or no memory: the Python version decides */
        Py_RETURN_NONE;
    }
    b = (unsigned char *)PyByteArray_AS_STRING(node);
    memcpy(b + old_len - 1, out, (size_t)w);
    PyMem_Free(out);
    len = old_len + w;
    b[len - 1] = 0xFF;
    b[HEADER_SIZE] += 1; /* live count, below 127: same size */
    b[0] = (unsigned char)(len & 0xFF);
    b[1] = (unsigned char)((len >> 8) & 0xFF);
    b[2] = (unsigned char)((len >> 16) & 0xFF);
    b[3] = (unsigned char)((len >> 24) & 0xFF);
    {
        unsigned cur = (unsigned)b[4] | ((unsigned)b[5] << 8);
        if (cur != 65535) {
            Py_ssize_t next = (Py_ssize_t)cur + added;
            if (next > 65535) next = 65535;
            b[4] = (unsigned char)(next & 0xFF);
            b[5] = (unsigned char)((next >> 8) & 0xFF);
        }
    }
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"entry_size", entry_size, METH_O,
     "entry_size(fields_values) -> int | None\n\nThe raw length of the items; None unless "
     "all are bytes."},
    {"append_entry", append_entry, METH_VARARGS,
     "append_entry(node, master_ms, master_seq, ms, seq, fields_values) -> True | None\n\n"
     "Like rstore.codec.stream_node.append_entry; None (node unchanged) when only the Python "
     "version handles the case."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_append", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__append(void) { return PyModule_Create(&module); }
