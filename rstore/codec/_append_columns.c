/*
 * Optional C accelerator for building stream nodes from a batch of columns
 * (rstore.codec.columns.Columns): the inner loop of turning a file of entries into nodes
 * (rstore.streams.node_build.NodeBuilder, behind `rstore import`).
 *
 * append_columns() does what rstore.codec.stream_append.append_columns_py does (entries with
 * their own IDs appended to a node while they rise and fit) and new_node_columns() what
 * rstore.codec.stream_node.new_node does for one entry of the batch; for anything they do not
 * expect they change nothing and return None, and the caller runs the Python version (the
 * reference; tests/codec/test_append_columns.py compares them byte for byte).  Every offset
 * read from the buffers is checked against them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "node_append.h"

/* Little-endian integers of a Columns buffer. */
static int32_t le32(const unsigned char *b, Py_ssize_t i)
{
    const unsigned char *p = b + 4 * i;
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

static uint64_t le64(const unsigned char *b, Py_ssize_t i)
{
    const unsigned char *p = b + 8 * i;
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = v << 8 | p[k];
    return v;
}

enum { C_MS, C_SEQ, C_ENTRYOFF, C_KEYOFF, C_KEYDATA, C_VALOFF, C_VALDATA, C_NBUFS };

/* Whether the Columns buffers have the sizes of a batch of `count` entries; each entry's
 * offsets are checked when it is read (entry_pairs).  0 when not (the caller leaves it to
 * the Python version). */
static int columns_ok(Py_buffer *c, Py_ssize_t *count)
{
    Py_ssize_t n = c[C_MS].len / 8;
    if (c[C_MS].len != 8 * n || c[C_SEQ].len != 8 * n || c[C_ENTRYOFF].len != 4 * (n + 1))
        return 0;
    if (c[C_KEYOFF].len < 4 || c[C_KEYOFF].len % 4 || c[C_VALOFF].len != c[C_KEYOFF].len)
        return 0;
    *count = n;
    return 1;
}

/* The first pair and the number of pairs of entry i, checked against the buffers; 0 when
 * they do not hold together. */
static int entry_pairs(Py_buffer *c, Py_ssize_t i, Py_ssize_t *first, Py_ssize_t *pairs)
{
    Py_ssize_t a = le32(c[C_ENTRYOFF].buf, i), b = le32(c[C_ENTRYOFF].buf, i + 1);
    Py_ssize_t total = c[C_KEYOFF].len / 4 - 1;
    if (a < 0 || b < a || b > total) return 0;
    *first = a;
    *pairs = b - a;
    return 1;
}

/* append_columns(node, master_ms, master_seq, last_ms, last_seq, ms, seq, entry_offsets,
 *                key_offsets, key_data, value_offsets, value_data, start, max_bytes,
 *                max_entries) -> (next, last_ms, last_seq) | None
 * Append the entries start.. of a Columns batch with their own IDs, while each is above the
 * last ID, has fields, and fits in the node by XADD's rule; the index of the first entry not
 * appended and the last ID appended. */
static PyObject *append_columns(PyObject *self, PyObject *args)
{
    PyObject *node, *result = NULL;
    unsigned long long mms, mseq, lms, lseq;
    Py_ssize_t start, max_bytes, max_entries, count, i;
    Py_buffer c[C_NBUFS];
    span inline_spans[SPANS_INLINE], *spans = inline_spans;
    Py_ssize_t spans_cap = SPANS_INLINE;
    appender a;
    int rc, k;

    memset(c, 0, sizeof c);
    if (!PyArg_ParseTuple(args, "YKKKKy*y*y*y*y*y*y*nnn", &node, &mms, &mseq, &lms, &lseq,
                          &c[C_MS], &c[C_SEQ], &c[C_ENTRYOFF], &c[C_KEYOFF], &c[C_KEYDATA],
                          &c[C_VALOFF], &c[C_VALDATA], &start, &max_bytes, &max_entries))
        return NULL;
    if (!columns_ok(c, &count) || start < 0 || start > count) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if ((rc = appender_open(&a, node)) != 0) {
        if (rc > 0) result = Py_NewRef(Py_None);
        goto done;
    }
    {
        const unsigned char *ko = c[C_KEYOFF].buf, *vo = c[C_VALOFF].buf;
        const unsigned char *kd = c[C_KEYDATA].buf, *vd = c[C_VALDATA].buf;
        for (i = start; i < count; i++) {
            uint64_t ms = le64(c[C_MS].buf, i), seq = le64(c[C_SEQ].buf, i);
            Py_ssize_t first, pairs, size = 0, j;
            if (!entry_pairs(c, i, &first, &pairs)) break; /* the Python version says why */
            if (pairs < 1) break;
            if (ms < lms || (ms == lms && seq <= lseq)) break; /* not above the last ID */
            if (0 < max_entries && max_entries <= a.used + a.appended) break;
            if (2 * pairs > spans_cap) {
                span *grown = PyMem_Malloc((size_t)(2 * pairs) * sizeof(span));
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto error;
                }
                if (spans != inline_spans) PyMem_Free(spans);
                spans = grown;
                spans_cap = 2 * pairs;
            }
            for (j = 0; j < pairs; j++) {
                Py_ssize_t kb = le32(ko, first + j), ke = le32(ko, first + j + 1);
                Py_ssize_t vb = le32(vo, first + j), ve = le32(vo, first + j + 1);
                if (kb < 0 || ke < kb || ke > c[C_KEYDATA].len || vb < 0 || ve < vb ||
                    ve > c[C_VALDATA].len)
                    break;
                spans[2 * j].p = kd + kb;
                spans[2 * j].n = ke - kb;
                spans[2 * j + 1].p = vd + vb;
                spans[2 * j + 1].n = ve - vb;
                size += ke - kb + ve - vb;
            }
            if (j < pairs) break; /* offsets past the data: the Python version says why */
            if (appender_len(&a) + size >= max_bytes) break; /* a new node: the caller's */
            if (appender_add_spans(&a, mms, mseq, ms, seq, spans, 2 * pairs, size) < 0)
                goto error;
            lms = ms;
            lseq = seq;
        }
    }
    if (appender_commit(&a) != 0) {
        appender_free(&a);
        result = Py_NewRef(Py_None);
        goto done;
    }
    appender_free(&a);
    result = Py_BuildValue("nKK", i, lms, lseq);
    goto done;
error:
    appender_free(&a);
done:
    if (spans != inline_spans) PyMem_Free(spans);
    for (k = 0; k < C_NBUFS; k++)
        if (c[k].obj != NULL) PyBuffer_Release(&c[k]);
    return result;
}

/* new_node_columns(ms, seq, entry_offsets, key_offsets, key_data, value_offsets, value_data,
 *                  i) -> bytearray | None
 * The node entry i of a Columns batch opens (rstore.codec.stream_node.new_node of its fields
 * and values); None when the entry has no fields or the buffers do not hold it together. */
static PyObject *new_node_columns(PyObject *self, PyObject *args)
{
    Py_buffer c[C_NBUFS];
    Py_ssize_t i, count, first, pairs, j, size = 0, w;
    PyObject *node = NULL;
    unsigned char *out;
    int k;

    memset(c, 0, sizeof c);
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*n", &c[C_MS], &c[C_SEQ], &c[C_ENTRYOFF],
                          &c[C_KEYOFF], &c[C_KEYDATA], &c[C_VALOFF], &c[C_VALDATA], &i))
        return NULL;
    if (!columns_ok(c, &count) || i < 0 || i >= count || !entry_pairs(c, i, &first, &pairs) ||
        pairs < 1) {
        node = Py_NewRef(Py_None);
        goto done;
    }
    {
        const unsigned char *ko = c[C_KEYOFF].buf, *vo = c[C_VALOFF].buf;
        for (j = first; j < first + pairs; j++) {
            Py_ssize_t kb = le32(ko, j), ke = le32(ko, j + 1), vb = le32(vo, j), ve = le32(vo, j + 1);
            if (kb < 0 || ke < kb || ke > c[C_KEYDATA].len || vb < 0 || ve < vb ||
                ve > c[C_VALDATA].len) {
                node = Py_NewRef(Py_None);
                goto done;
            }
            size += ke - kb + ve - vb;
        }
        /* header, 8 small elements of at most 10 bytes each, and each field and value */
        node = PyByteArray_FromStringAndSize(NULL, HEADER_SIZE + 80 + size + 20 * pairs + 1);
        if (node == NULL) goto done;
        out = (unsigned char *)PyByteArray_AS_STRING(node);
        w = HEADER_SIZE;
        w += put_int(out + w, 1);     /* live count */
        w += put_int(out + w, 0);     /* deleted */
        w += put_int(out + w, pairs); /* master fields */
        for (j = first; j < first + pairs; j++)
            w += put_value(out + w, (const unsigned char *)c[C_KEYDATA].buf + le32(ko, j),
                           le32(ko, j + 1) - le32(ko, j));
        w += put_int(out + w, 0);               /* master terminator */
        w += put_int(out + w, FLAG_SAMEFIELDS); /* the entry: same fields, deltas 0 and 0 */
        w += put_int(out + w, 0);
        w += put_int(out + w, 0);
        for (j = first; j < first + pairs; j++)
            w += put_value(out + w, (const unsigned char *)c[C_VALDATA].buf + le32(vo, j),
                           le32(vo, j + 1) - le32(vo, j));
        w += put_int(out + w, pairs + 3); /* lp-count */
        out[w++] = 0xFF;
        if (w > (Py_ssize_t)UINT32_MAX || PyByteArray_Resize(node, w) < 0) {
            Py_CLEAR(node);
            if (w > (Py_ssize_t)UINT32_MAX) node = Py_NewRef(Py_None);
            goto done;
        }
        out = (unsigned char *)PyByteArray_AS_STRING(node);
        for (k = 0; k < 4; k++) out[k] = (unsigned char)((uint64_t)w >> (8 * k));
        {
            Py_ssize_t elements = 2 * pairs + 8;
            if (elements > 65535) elements = 65535;
            out[4] = (unsigned char)(elements & 0xFF);
            out[5] = (unsigned char)(elements >> 8);
        }
    }
done:
    for (k = 0; k < C_NBUFS; k++)
        if (c[k].obj != NULL) PyBuffer_Release(&c[k]);
    return node;
}

static PyMethodDef methods[] = {
    {"append_columns", append_columns, METH_VARARGS,
     "append_columns(node, master_ms, master_seq, last_ms, last_seq, ms, seq, entry_offsets, "
     "key_offsets, key_data, value_offsets, value_data, start, max_bytes, max_entries) -> "
     "(next, last_ms, last_seq) | None\n\nLike rstore.codec.stream_append.append_columns_py; "
     "None (node unchanged) when only the Python version handles the case."},
    {"new_node_columns", new_node_columns, METH_VARARGS,
     "new_node_columns(ms, seq, entry_offsets, key_offsets, key_data, value_offsets, "
     "value_data, i) -> bytearray | None\n\nThe node entry i of a Columns batch opens, as "
     "rstore.codec.stream_node.new_node builds it; None when only the Python version does."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_append_columns", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__append_columns(void) { return PyModule_Create(&module); }
