/*
 * Optional C accelerator for reading RDB files (rstore.codec.speedups loads it):
 *
 *   read_nodes(...)   the node loop of rstore.rdb.values.read_nodes: node records out of the
 *                     reader's buffer, each listpack raw or LZF-decompressed and checked in
 *                     depth once (node_check.h).
 *   read_pel(...)     the PEL loops of rstore.rdb.values.read_stream: a group's PEL entries or
 *                     a consumer's PEL IDs.
 *
 * Both also have a "run" form for the importer of a restore (rstore.model.NodeRun, PendingRun,
 * ConsumerPendingRun): the records of the buffer in the shape it consumes them, without the
 * offset after each one (the reader moves past the whole run at once).
 *
 * Like the other accelerators they never raise on bad data: each stops before the first record
 * it does not find plainly valid (or that runs past the buffer), and the Python reader takes
 * that record, reporting damage precisely.  Every read is bounds-checked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "node_check.h"

/* LZF decompression of in[0..n) into exactly ulen bytes at out; 1 if it is well formed. */
static int lzf_expand(const unsigned char *in, Py_ssize_t n, unsigned char *out, Py_ssize_t ulen)
{
    Py_ssize_t ip = 0, op = 0;
    while (ip < n) {
        unsigned int c = in[ip++];
        if (c < 32) {
            Py_ssize_t run = (Py_ssize_t)c + 1;
            if (ip + run > n || op + run > ulen) return 0;
            memcpy(out + op, in + ip, (size_t)run);
            ip += run;
            op += run;
        } else {
            Py_ssize_t len = c >> 5, ref;
            if (len == 7) {
                if (ip >= n) return 0;
                len += in[ip++];
            }
            if (ip >= n) return 0;
            ref = op - (Py_ssize_t)(((c & 0x1F) << 8) | in[ip++]) - 1;
            len += 2;
            if (ref < 0 || op + len > ulen) return 0;
            if (ref + len <= op) {
                memcpy(out + op, out + ref, (size_t)len);
                op += len;
            } else {
                while (len--) out[op++] = out[ref++];
            }
        }
    }
    return op == ulen;
}

/* An RDB length at b[*p] (not a special encoding); 0 when absent, special or incomplete. */
static int get_length(const unsigned char *b, Py_ssize_t end, Py_ssize_t *p, uint64_t *n)
{
    Py_ssize_t q = *p;
    unsigned int c;
    if (q >= end) return 0;
    c = b[q];
    if (c < 0x40) {
        *n = c;
        *p = q + 1;
    } else if (c < 0x80) {
        if (q + 2 > end) return 0;
        *n = ((uint64_t)(c & 0x3F) << 8) | b[q + 1];
        *p = q + 2;
    } else if (c == 0x80) {
        if (q + 5 > end) return 0;
        *n = (uint64_t)b[q + 1] << 24 | (uint64_t)b[q + 2] << 16 | (uint64_t)b[q + 3] << 8 |
             b[q + 4];
        *p = q + 5;
    } else if (c == 0x81) {
        uint64_t v = 0;
        int i;
        if (q + 9 > end) return 0;
        for (i = 1; i <= 8; i++) v = (v << 8) | b[q + i];
        *n = v;
        *p = q + 9;
    } else {
        return 0;
    }
    return 1;
}

#define MAX_STRING ((uint64_t)1 << 32)

/* The listpack string at b[*p]: raw or LZF (the forms servers write for nodes); a new bytes
 * object, or NULL without an exception when it is anything else, incomplete or malformed. */
static PyObject *get_listpack(const unsigned char *b, Py_ssize_t end, Py_ssize_t *p)
{
    Py_ssize_t q = *p;
    uint64_t n, clen, ulen;
    PyObject *out;
    if (q >= end) return NULL;
    if (b[q] != 0xC3) {
        if (!get_length(b, end, &q, &n) || n > MAX_STRING || n > (uint64_t)(end - q)) return NULL;
        out = PyBytes_FromStringAndSize((const char *)b + q, (Py_ssize_t)n);
        if (out != NULL) *p = q + (Py_ssize_t)n;
        return out;
    }
    q++;
    if (!get_length(b, end, &q, &clen) || !get_length(b, end, &q, &ulen)) return NULL;
    /* the plausibility test of rstore.rdb.decoding.Source.string */
    if (ulen > MAX_STRING || ulen > clen * 90 + 64 || clen > ulen + ulen / 32 + 16) return NULL;
    if (clen > (uint64_t)(end - q) || ulen == 0) return NULL;
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)ulen);
    if (out == NULL) return NULL;
    if (!lzf_expand(b + q, (Py_ssize_t)clen, (unsigned char *)PyBytes_AS_STRING(out),
                    (Py_ssize_t)ulen)) {
        Py_DECREF(out);
        return NULL;
    }
    *p = q + (Py_ssize_t)clen;
    return out;
}

/* Leave the cyclic GC out of the tuple t and of the tuples in it.  They hold only numbers,
 * bytes, None and such tuples, so they can be in no cycle (CPython untracks such a tuple
 * itself, but only when a collection first walks it); tracked, the ~10^5 tuples of a restore
 * set off collections that walk them again and again, and the full ones walk the process. */
static void untrack_atoms(PyObject *t)
{
    Py_ssize_t i;
    if (!PyTuple_CheckExact(t)) return;
    for (i = 0; i < PyTuple_GET_SIZE(t); i++) untrack_atoms(PyTuple_GET_ITEM(t, i));
    if (PyObject_GC_IsTracked(t)) PyObject_GC_UnTrack(t);
}

static uint64_t get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    int i;
    for (i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

static PyObject *read_nodes(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t pos;
    unsigned long long limit, got = 0; /* a count read from the file: any 64-bit length */
    int have_prev, run = 0;
    unsigned long long prev_ms, prev_seq;
    PyObject *list, *result = NULL;

    (void)self;
    if (!PyArg_ParseTuple(args, "y*nKpKK|p:read_nodes", &buf, &pos, &limit, &have_prev, &prev_ms,
                          &prev_seq, &run))
        return NULL;
    list = PyList_New(0);
    if (list == NULL) goto fail;
    while (got < limit && pos >= 0 && pos < buf.len) {
        const unsigned char *b = buf.buf;
        Py_ssize_t q = pos;
        uint64_t ms, seq;
        node_facts_t f;
        PyObject *lp, *rec;

        if (b[q] != 0x10 || q + 17 > buf.len) break; /* a raw 16-byte key */
        ms = get_be64(b + q + 1);
        seq = get_be64(b + q + 9);
        if (have_prev && (ms < prev_ms || (ms == prev_ms && seq <= prev_seq))) break;
        q += 17;
        lp = get_listpack(b, buf.len, &q);
        if (lp == NULL) {
            if (PyErr_Occurred()) goto fail;
            break;
        }
        if (!check_stream_node((const unsigned char *)PyBytes_AS_STRING(lp),
                               PyBytes_GET_SIZE(lp), ms, seq, &f) ||
            !f.ascending) {
            Py_DECREF(lp);
            break;
        }
        if (run && f.have_first)
            rec = Py_BuildValue("((KK)NL(KK)(KK))", ms, seq, lp, (long long)f.count, f.first_ms,
                                f.first_seq, f.last_ms, f.last_seq);
        else if (run)
            rec = Py_BuildValue("((KK)NLO(KK))", ms, seq, lp, (long long)f.count, Py_None,
                                f.last_ms, f.last_seq);
        else if (f.have_first)
            rec = Py_BuildValue("(KKNLKKKKn)", ms, seq, lp, (long long)f.count, f.first_ms,
                                f.first_seq, f.last_ms, f.last_seq, q);
        else
            rec = Py_BuildValue("(KKNLiiKKn)", ms, seq, lp, (long long)f.count, -1, -1,
                                f.last_ms, f.last_seq, q);
        if (rec != NULL) untrack_atoms(rec);
        if (rec == NULL || PyList_Append(list, rec) < 0) {
            Py_XDECREF(rec);
            goto fail;
        }
        Py_DECREF(rec);
        prev_ms = ms;
        prev_seq = seq;
        have_prev = 1;
        pos = q;
        got++;
    }
    result = Py_BuildValue("(On)", list, pos);
fail:
    Py_XDECREF(list);
    PyBuffer_Release(&buf);
    return result;
}

/* read_pel: PEL records out of a buffer, strictly ascending -- with_times: a group's (raw ID,
 * delivery time, delivery count), else a consumer's raw IDs -- each as a tuple ending with the
 * offset after it; stops before a record that is incomplete, out of order or not plain.
 * Run form (`into` given): with times, into[raw ID] = (delivery time, delivery count) in the
 * dict `into`; else the raw IDs appended to the list `into` (a raw ID: its 16 bytes as stored,
 * big-endian ms then seq). */
static PyObject *read_pel(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t pos;
    unsigned long long limit, got = 0; /* a count read from the file: any 64-bit length */
    int with_times, have_prev;
    unsigned long long prev_ms, prev_seq;
    PyObject *list, *into = NULL, *result = NULL;

    (void)self;
    if (!PyArg_ParseTuple(args, "y*nKppKK|O:read_pel", &buf, &pos, &limit, &with_times,
                          &have_prev, &prev_ms, &prev_seq, &into))
        return NULL;
    if (into == Py_None) into = NULL;
    if (into != NULL && !(with_times ? PyDict_CheckExact(into) : PyList_CheckExact(into))) {
        PyErr_SetString(PyExc_TypeError, "read_pel: into must be a dict (with times) or a list");
        PyBuffer_Release(&buf);
        return NULL;
    }
    if (into != NULL) {
        Py_INCREF(into);
        list = into;
    } else {
        list = PyList_New(0);
    }
    if (list == NULL) goto fail;
    while (got < limit && pos >= 0 && pos + 16 <= buf.len) {
        const unsigned char *b = buf.buf;
        Py_ssize_t q = pos + 16;
        uint64_t ms = get_be64(b + pos), seq = get_be64(b + pos + 8), count = 0;
        int64_t when = 0;
        PyObject *rec;
        int i;

        if (have_prev && (ms < prev_ms || (ms == prev_ms && seq <= prev_seq))) break;
        if (with_times) {
            uint64_t u = 0;
            if (q + 8 > buf.len) break;
            for (i = 7; i >= 0; i--) u = (u << 8) | b[q + i];
            when = (int64_t)u;
            q += 8;
            if (!get_length(b, buf.len, &q, &count)) break;
        }
        if (into != NULL && with_times) { /* the run form of a group's PEL: into[raw] = nack */
            PyObject *raw = PyBytes_FromStringAndSize((const char *)b + pos, 16);
            PyObject *nack = raw == NULL ? NULL : Py_BuildValue("(LK)", (long long)when, count);
            int bad;
            if (nack != NULL) untrack_atoms(nack);
            bad = nack == NULL || PyDict_SetItem(list, raw, nack) < 0;
            Py_XDECREF(raw);
            Py_XDECREF(nack);
            if (bad) goto fail;
        } else {
            if (into != NULL)
                rec = PyBytes_FromStringAndSize((const char *)b + pos, 16);
            else if (with_times)
                rec = Py_BuildValue("(KKLKn)", ms, seq, (long long)when, count, q);
            else
                rec = Py_BuildValue("(KKn)", ms, seq, q);
            if (rec != NULL) untrack_atoms(rec);
            if (rec == NULL || PyList_Append(list, rec) < 0) {
                Py_XDECREF(rec);
                goto fail;
            }
            Py_DECREF(rec);
        }
        prev_ms = ms;
        prev_seq = seq;
        have_prev = 1;
        pos = q;
        got++;
    }
    result = Py_BuildValue("(On)", list, pos);
fail:
    Py_XDECREF(list);
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef methods[] = {
    {"read_nodes", read_nodes, METH_VARARGS,
     "read_nodes(buffer, pos, limit, have_prev, prev_ms, prev_seq, run=False) -> (records, pos)"
     "\n\nUp to `limit` node records from buffer[pos:], each (ms, seq, listpack, live, "
     "first_ms, first_seq, last_ms, last_seq, end), checked in depth; stops before anything "
     "else.  With run: each ((ms, seq), listpack, live, (first_ms, first_seq) or None, "
     "(last_ms, last_seq))."},
    {"read_pel", read_pel, METH_VARARGS,
     "read_pel(buffer, pos, limit, with_times, have_prev, prev_ms, prev_seq, into=None) -> "
     "(records, pos)\n\nUp to `limit` PEL records from buffer[pos:], strictly ascending: (ms, "
     "seq, delivery_time, delivery_count, end) with times, else (ms, seq, end).  With into (a "
     "dict with times, else a list), records is into: into[raw ID] = (delivery_time, "
     "delivery_count), or the raw IDs (16 bytes) appended."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rdbread", "C accelerator for reading RDB files (optional).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rdbread(void) { return PyModule_Create(&module); }
