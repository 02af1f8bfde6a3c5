/*
 * Optional C accelerator for appending entries to a stream node: the inner loop of XADD, of
 * pipelines of XADDs and of bulk loads (rstore.streams.bulk, Store.append_entries).
 *
 * append_entry() does exactly what rstore.codec.stream_node.append_entry does and
 * append_auto() what rstore.codec.stream_append.append_auto_py does (a run of entries with
 * automatic IDs, while they fit in the node), for the plain case only: every field and value a
 * `bytes` object, a well-formed master entry.  For anything else they change nothing and
 * return None, and the caller runs the Python version (the reference;
 * tests/codec/test_append_speedup.py compares them byte for byte).
 *
 * encode_args() is the hot case of rstore.commands.argv.encode_argv (str and bytes arguments),
 * which pipelines run on every queued command.
 *
 * The appender is node_append.h's (shared with _append_columns.c); listpack elements are
 * written by listpack_write.h and read by listpack_read.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "node_append.h"

/* The raw size of items (Redis's totelelen), or -1 unless they are an even number (at least
 * two) of bytes objects. */
static Py_ssize_t plain_size(PyObject **items, Py_ssize_t n)
{
    Py_ssize_t i, total = 0;
    if (n < 2 || n % 2) return -1;
    for (i = 0; i < n; i++) {
        if (!PyBytes_CheckExact(items[i])) return -1;
        total += PyBytes_GET_SIZE(items[i]);
    }
    return total;
}

/* appender_add_spans for items that are bytes objects (plain_size said yes). */
static int appender_add(appender *a, uint64_t mms, uint64_t mseq, uint64_t ms, uint64_t seq,
                        PyObject **items, Py_ssize_t n_items, Py_ssize_t raw_size)
{
    span inline_spans[SPANS_INLINE], *spans = inline_spans;
    Py_ssize_t i;
    int rc;
    if (n_items > SPANS_INLINE) {
        spans = PyMem_Malloc((size_t)n_items * sizeof(span));
        if (spans == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    for (i = 0; i < n_items; i++) {
        spans[i].p = (const unsigned char *)PyBytes_AS_STRING(items[i]);
        spans[i].n = PyBytes_GET_SIZE(items[i]);
    }
    rc = appender_add_spans(a, mms, mseq, ms, seq, spans, n_items, raw_size);
    if (spans != inline_spans) PyMem_Free(spans);
    return rc;
}

/* Write "<ms>-<seq>" in decimal at out (at most 41 bytes); its length. */
static Py_ssize_t format_id(char *out, uint64_t ms, uint64_t seq)
{
    char digits[20];
    Py_ssize_t w = 0;
    int n, k;
    uint64_t parts[2] = {ms, seq};
    for (k = 0; k < 2; k++) {
        uint64_t v = parts[k];
        n = 0;
        do {
            digits[n++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        while (n) out[w++] = digits[--n];
        if (k == 0) out[w++] = '-';
    }
    return w;
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
    PyObject *node, *fv;
    unsigned long long mms, mseq, ms, seq;
    Py_ssize_t size;
    appender a;
    int rc;

    if (!PyArg_ParseTuple(args, "YKKKKO", &node, &mms, &mseq, &ms, &seq, &fv)) return NULL;
    if (!PyList_CheckExact(fv) && !PyTuple_CheckExact(fv)) Py_RETURN_NONE;
    size = plain_size(PySequence_Fast_ITEMS(fv), PySequence_Fast_GET_SIZE(fv));
    if (size < 0) Py_RETURN_NONE;
    if ((rc = appender_open(&a, node)) != 0) {
        if (rc < 0) return NULL;
        Py_RETURN_NONE;
    }
    rc = appender_add(&a, mms, mseq, ms, seq, PySequence_Fast_ITEMS(fv),
                      PySequence_Fast_GET_SIZE(fv), size);
    if (rc == 0) rc = appender_commit(&a) ? 1 : 0;
    appender_free(&a);
    if (rc < 0) return NULL;
    if (rc > 0) Py_RETURN_NONE;
    Py_RETURN_TRUE;
}

/* append_auto(node, master_ms, master_seq, last_ms, last_seq, now_ms, entries, start, stop,
 *             offset, max_bytes, max_entries, ids) -> (next, last_ms, last_seq) | None
 * Append entries[start:stop] (each a list or tuple whose fields and values start at `offset`)
 * with automatic IDs under now_ms, while each fits in the node; the IDs go to `ids` as
 * b"<ms>-<seq>". */
static PyObject *append_auto(PyObject *self, PyObject *args)
{
    PyObject *node, *entries, *ids, *id;
    unsigned long long mms, mseq, lms, lseq, now;
    Py_ssize_t start, stop, offset, max_bytes, max_entries, i, ids_before;
    appender a;
    int rc;
    char text[48];

    if (!PyArg_ParseTuple(args, "YKKKKKOnnnnnO", &node, &mms, &mseq, &lms, &lseq, &now,
                          &entries, &start, &stop, &offset, &max_bytes, &max_entries, &ids))
        return NULL;
    if (!PyList_CheckExact(entries) || !PyList_CheckExact(ids)) Py_RETURN_NONE;
    if (start < 0 || offset < 0 || stop > PyList_GET_SIZE(entries)) Py_RETURN_NONE;
    if ((rc = appender_open(&a, node)) != 0) {
        if (rc < 0) return NULL;
        Py_RETURN_NONE;
    }
    ids_before = PyList_GET_SIZE(ids);
    for (i = start; i < stop; i++) {
        PyObject *entry = PyList_GET_ITEM(entries, i);
        Py_ssize_t n, size;
        if (!PyList_CheckExact(entry) && !PyTuple_CheckExact(entry)) break;
        n = PySequence_Fast_GET_SIZE(entry) - offset;
        if (n < 2) break;
        size = plain_size(PySequence_Fast_ITEMS(entry) + offset, n);
        if (size < 0) break;
        if (lms == UINT64_MAX && lseq == UINT64_MAX) break; /* no ID left: XADD's error */
        if (0 < max_entries && max_entries <= a.used + a.appended) break;
        if (appender_len(&a) + size >= max_bytes) break; /* a new node: the caller's work */
        if (now > lms) {
            lms = now;
            lseq = 0;
        } else if (lseq < UINT64_MAX) {
            lseq += 1;
        } else {
            lms += 1;
            lseq = 0;
        }
        if (appender_add(&a, mms, mseq, lms, lseq, PySequence_Fast_ITEMS(entry) + offset, n,
                         size) < 0)
            goto error;
        id = PyBytes_FromStringAndSize(text, format_id(text, lms, lseq));
        if (id == NULL) goto error;
        rc = PyList_Append(ids, id);
        Py_DECREF(id);
        if (rc < 0) goto error;
    }
    if (appender_commit(&a) != 0) {
        appender_free(&a);
        if (PyList_SetSlice(ids, ids_before, PyList_GET_SIZE(ids), NULL) < 0) return NULL;
        Py_RETURN_NONE;
    }
    appender_free(&a);
    return Py_BuildValue("nKK", i, lms, lseq);
error:
    appender_free(&a);
    PyList_SetSlice(ids, ids_before, PyList_GET_SIZE(ids), NULL);
    return NULL;
}

/* encode_args(argv) -> list | None: a new list with each str item UTF-8 encoded and each bytes
 * item as it is (redis-py's encoding of command arguments); None unless argv is a list of str
 * and bytes objects that encode (the Python version then decides). */
static PyObject *encode_args(PyObject *self, PyObject *argv)
{
    Py_ssize_t i, n;
    PyObject *out;
    if (!PyList_CheckExact(argv)) Py_RETURN_NONE;
    n = PyList_GET_SIZE(argv);
    if ((out = PyList_New(n)) == NULL) return NULL;
    for (i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(argv, i);
        if (PyBytes_CheckExact(item)) {
            Py_INCREF(item);
        } else if (PyUnicode_CheckExact(item)) {
            item = PyUnicode_AsUTF8String(item);
            if (item == NULL) {
                PyErr_Clear(); /* e.g. a lone surrogate: the Python version raises */
                Py_DECREF(out);
                Py_RETURN_NONE;
            }
        } else {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        PyList_SET_ITEM(out, i, item);
    }
    /* bytes only, and read by the dispatch, never handed to anyone who could put it in a
     * cycle: untracked, a pipeline's thousand queued commands set off no collection that walks
     * them (such collections were an eighth of a pipeline's time) */
    PyObject_GC_UnTrack(out);
    return out;
}

static PyMethodDef methods[] = {
    {"entry_size", entry_size, METH_O,
     "entry_size(fields_values) -> int | None\n\nThe raw length of the items; None unless "
     "all are bytes."},
    {"append_entry", append_entry, METH_VARARGS,
     "append_entry(node, master_ms, master_seq, ms, seq, fields_values) -> True | None\n\n"
     "Like rstore.codec.stream_node.append_entry; None (node unchanged) when only the Python "
     "version handles the case."},
    {"append_auto", append_auto, METH_VARARGS,
     "append_auto(node, master_ms, master_seq, last_ms, last_seq, now_ms, entries, start, "
     "stop, offset, max_bytes, max_entries, ids) -> (next, last_ms, last_seq) | None\n\n"
     "Like rstore.codec.stream_append.append_auto_py; None (node and ids unchanged) when only "
     "the Python version handles the case."},
    {"encode_args", encode_args, METH_O,
     "encode_args(argv) -> list | None\n\nstr items UTF-8 encoded, bytes as they are; None "
     "unless all are str or bytes and encode."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_append", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__append(void) { return PyModule_Create(&module); }
