/*
 * Stream nodes decoded straight into Arrow-ready columns: rstore/codec/columns.py's
 * append_node, in C.  It appends to the nine bytearrays of a Columns batch
 * (ms, seq, id offsets + data, entry offsets, key offsets + data, value offsets + data) and
 * returns (appended, done) -- the same entries scan_forward gives.
 *
 * Like _speedups.c it never raises on bad data: on anything it does not expect it puts every
 * buffer back to the size it had and returns None, and the caller runs the Python version,
 * which reports the problem.  Reads are bounds-checked (listpack_read.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "listpack_read.h"

enum { B_MS, B_SEQ, B_IDOFF, B_IDDATA, B_ENTRYOFF, B_KEYOFF, B_KEYDATA, B_VALOFF, B_VALDATA,
       NBUFS };

typedef struct {
    PyObject *buf[NBUFS];
    Py_ssize_t initial[NBUFS];
} Out;

/* Append n bytes to buffer i; 0 on success, -1 on error (memory). */
static int put(Out *o, int i, const void *data, Py_ssize_t n)
{
    Py_ssize_t size = PyByteArray_GET_SIZE(o->buf[i]);
    if (PyByteArray_Resize(o->buf[i], size + n) < 0) return -1;
    memcpy(PyByteArray_AS_STRING(o->buf[i]) + size, data, (size_t)n);
    return 0;
}

static int put_i64(Out *o, int i, int64_t v)
{
    unsigned char b[8];
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)((uint64_t)v >> (8 * k));
    return put(o, i, b, 8);
}

/* Append a string to (offsets, data): 1 ok, 0 too large for int32 offsets, -1 error. */
static int put_string(Out *o, int off, int data, const char *s, Py_ssize_t n)
{
    Py_ssize_t end = PyByteArray_GET_SIZE(o->buf[data]) + n;
    unsigned char b[4];
    if (end > INT32_MAX) return 0;
    if (put(o, data, s, n) < 0) return -1;
    for (int k = 0; k < 4; k++) b[k] = (unsigned char)((uint32_t)end >> (8 * k));
    return put(o, off, b, 4) < 0 ? -1 : 1;
}

/* An element's text (integers in decimal) as (pointer, length); ints written into tmp. */
static const char *text_of(const unsigned char *b, const element *e, char tmp[24],
                           Py_ssize_t *n)
{
    if (!e->is_int) {
        *n = e->str_len;
        return (const char *)b + e->str_at;
    }
    *n = snprintf(tmp, 24, "%lld", (long long)e->ival);
    return tmp;
}

typedef struct {
    const char *p;
    Py_ssize_t n;
    char tmp[24];
} text;

/* One entry's fields and values, as texts (kept for the duplicate check). */
static int entry_out(Out *o, const unsigned char *b, const element *keys, const element *vals,
                     Py_ssize_t npairs, int dedupe)
{
    text *k = PyMem_Malloc(sizeof(text) * (size_t)(npairs ? npairs : 1));
    int rc = 1;
    if (k == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < npairs; i++) k[i].p = text_of(b, &keys[i], k[i].tmp, &k[i].n);
    for (Py_ssize_t i = 0; i < npairs && rc == 1; i++) {
        if (dedupe) { /* a later pair with the same name wins: skip this one */
            int later = 0;
            for (Py_ssize_t j = i + 1; j < npairs && !later; j++)
                later = k[j].n == k[i].n && memcmp(k[j].p, k[i].p, (size_t)k[i].n) == 0;
            if (later) continue;
        }
        char vt[24];
        Py_ssize_t vn;
        const char *v = text_of(b, &vals[i], vt, &vn);
        rc = put_string(o, B_KEYOFF, B_KEYDATA, k[i].p, k[i].n);
        if (rc == 1) rc = put_string(o, B_VALOFF, B_VALDATA, v, vn);
    }
    PyMem_Free(k);
    return rc;
}

/* 1 done (past end or limit), 0 node ended, -1 error, -2 unexpected data. */
static int scan(Out *o, const unsigned char *b, Py_ssize_t len, uint64_t mms, uint64_t mseq,
                uint64_t sms, uint64_t sseq, uint64_t ems, uint64_t eseq, Py_ssize_t limit,
                int dedupe, Py_ssize_t *appended)
{
    Py_ssize_t stop = len - 1, p = HEADER_SIZE, nfields, i;
    int64_t count, deleted, nf, v;
    element *mf = NULL, *keys = NULL, *vals = NULL;
    int rc = 0;

    if (len < HEADER_SIZE + 1 || b[stop] != 0xFF) return -2;
    if ((p = read_int(b, stop, p, &count)) < 0 || (p = read_int(b, stop, p, &deleted)) < 0 ||
        (p = read_int(b, stop, p, &nf)) < 0 || nf < 0 || nf > len)
        return -2;
    nfields = (Py_ssize_t)nf;
    mf = PyMem_Malloc(sizeof(element) * (size_t)(nfields + 1));
    keys = PyMem_Malloc(sizeof(element) * (size_t)(len + 1));
    vals = PyMem_Malloc(sizeof(element) * (size_t)(len + 1));
    if (mf == NULL || keys == NULL || vals == NULL) {
        PyErr_NoMemory();
        rc = -1;
        goto out;
    }
    for (i = 0; i < nfields; i++)
        if ((p = read_el(b, stop, p, &mf[i])) < 0) goto bad;
    if ((p = read_int(b, stop, p, &v)) < 0) goto bad; /* the master's lp_count */
    while (p < stop) {
        int64_t flags, msd, seqd, n;
        Py_ssize_t npairs;
        if ((p = read_int(b, stop, p, &flags)) < 0 || (p = read_int(b, stop, p, &msd)) < 0 ||
            (p = read_int(b, stop, p, &seqd)) < 0)
            goto bad;
        uint64_t ms = mms + (uint64_t)msd, seq = mseq + (uint64_t)seqd;
        if (ms > ems || (ms == ems && seq > eseq)) {
            rc = 1;
            goto out;
        }
        int same = (flags & FLAG_SAMEFIELDS) != 0;
        if (same) {
            npairs = nfields;
        } else {
            if ((p = read_int(b, stop, p, &n)) < 0 || n < 0 || n > len) goto bad;
            npairs = (Py_ssize_t)n;
        }
        for (i = 0; i < npairs; i++) {
            if (same) {
                keys[i] = mf[i];
            } else if ((p = read_el(b, stop, p, &keys[i])) < 0) {
                goto bad;
            }
            if ((p = read_el(b, stop, p, &vals[i])) < 0) goto bad;
        }
        if ((p = read_int(b, stop, p, &v)) < 0) goto bad; /* lp_count */
        if ((flags & FLAG_DELETED) || ms < sms || (ms == sms && seq < sseq)) continue;
        char id[48];
        int idn = snprintf(id, sizeof id, "%llu-%llu", (unsigned long long)ms,
                           (unsigned long long)seq);
        int r;
        if (put_i64(o, B_MS, (int64_t)ms) < 0 || put_i64(o, B_SEQ, (int64_t)seq) < 0 ||
            (r = put_string(o, B_IDOFF, B_IDDATA, id, idn)) < 0) {
            rc = -1;
            goto out;
        }
        if (r == 0 || (r = entry_out(o, b, keys, vals, npairs, dedupe)) == 0) goto bad;
        if (r < 0) {
            rc = -1;
            goto out;
        }
        Py_ssize_t pairs = PyByteArray_GET_SIZE(o->buf[B_KEYOFF]) / 4 - 1;
        unsigned char ob[4];
        for (int k = 0; k < 4; k++) ob[k] = (unsigned char)((uint32_t)pairs >> (8 * k));
        if (put(o, B_ENTRYOFF, ob, 4) < 0) {
            rc = -1;
            goto out;
        }
        (*appended)++;
        if (limit > 0 && *appended >= limit) {
            rc = 1;
            goto out;
        }
    }
    goto out;
bad:
    rc = -2;
out:
    PyMem_Free(mf);
    PyMem_Free(keys);
    PyMem_Free(vals);
    return rc;
}

/* append_node(node, mms, mseq, sms, sseq, ems, eseq, limit, dedupe, buffers) */
static PyObject *append_node(PyObject *self, PyObject *args)
{
    Py_buffer node;
    unsigned long long mms, mseq, sms, sseq, ems, eseq;
    Py_ssize_t limit, appended = 0;
    int dedupe, rc;
    PyObject *bufs;
    Out o;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*KKKKKKnpO!", &node, &mms, &mseq, &sms, &sseq, &ems, &eseq,
                          &limit, &dedupe, &PyTuple_Type, &bufs))
        return NULL;
    if (PyTuple_GET_SIZE(bufs) != NBUFS) {
        PyBuffer_Release(&node);
        PyErr_SetString(PyExc_ValueError, "append_node: nine buffers expected");
        return NULL;
    }
    for (int i = 0; i < NBUFS; i++) {
        o.buf[i] = PyTuple_GET_ITEM(bufs, i);
        if (!PyByteArray_Check(o.buf[i])) {
            PyBuffer_Release(&node);
            PyErr_SetString(PyExc_TypeError, "append_node: buffers must be bytearrays");
            return NULL;
        }
        o.initial[i] = PyByteArray_GET_SIZE(o.buf[i]);
    }
    rc = scan(&o, node.buf, node.len, mms, mseq, sms, sseq, ems, eseq, limit, dedupe,
              &appended);
    PyBuffer_Release(&node);
    if (rc == -1 || rc == -2) { /* put everything back; -2: let Python report the damage */
        for (int i = 0; i < NBUFS; i++) {
            if (PyByteArray_Resize(o.buf[i], o.initial[i]) < 0) return NULL;
        }
        if (rc == -1) return NULL;
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(nO)", appended, rc == 1 ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"append_node", append_node, METH_VARARGS,
     "Append a node's live entries in a range to a Columns batch's buffers."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_columns", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__columns(void) { return PyModule_Create(&module); }
