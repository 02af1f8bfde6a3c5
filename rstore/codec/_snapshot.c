/*
 * Optional C accelerator for RDB snapshots (rstore.codec.speedups loads it):
 *
 *   pack(...)            the loops of saving: stream nodes (LZF-compressed through the given
 *                        function), group PEL entries or consumer PEL IDs into the bytes of
 *                        their RDB records, as rstore.rdb.writer.encode_stream writes them one
 *                        by one.
 *   read_nodes(...)      the node loop of restoring: RDB node records out of a buffer, each
 *                        listpack decompressed and checked in depth once (node_check.h), as
 *                        rstore.rdb.values.read_nodes reads them one by one.
 *
 * Like the other accelerators, the readers never raise on bad data: read_nodes stops before the
 * first record it does not find plainly valid (or that runs past the buffer) and the Python
 * reader takes that record, reporting damage precisely.  Every read is bounds-checked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "node_check.h"

/* ----------------------------------------------------------------- saving */

typedef struct {
    unsigned char *b;
    Py_ssize_t len, cap;
} Buf;

static int buf_room(Buf *o, Py_ssize_t n)
{
    if (o->len + n <= o->cap) return 0;
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < o->len + n) cap *= 2;
    unsigned char *b = PyMem_Realloc(o->b, (size_t)cap);
    if (b == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->b = b;
    o->cap = cap;
    return 0;
}

static void put_be64(unsigned char *p, uint64_t v)
{
    int i;
    for (i = 7; i >= 0; i--, v >>= 8) p[i] = (unsigned char)(v & 0xFF);
}

/* An RDB length (rstore.rdb.encoding.encode_length); o must have 9 bytes of room. */
static void put_length(Buf *o, uint64_t n)
{
    unsigned char *p = o->b + o->len;
    if (n < 64) {
        p[0] = (unsigned char)n;
        o->len += 1;
    } else if (n < 16384) {
        p[0] = (unsigned char)(0x40 | (n >> 8));
        p[1] = (unsigned char)(n & 0xFF);
        o->len += 2;
    } else if (n <= 0xFFFFFFFFULL) {
        p[0] = 0x80;
        p[1] = (unsigned char)(n >> 24);
        p[2] = (unsigned char)(n >> 16);
        p[3] = (unsigned char)(n >> 8);
        p[4] = (unsigned char)n;
        o->len += 5;
    } else {
        p[0] = 0x81;
        put_be64(p + 1, n);
        o->len += 9;
    }
}

/* Whether s[0..n) (n <= 11) is the canonical decimal text of an int32 (rstore.numbers.string2ll
 * plus the range check of encode_string); its value in *v. */
static int canonical_int32(const unsigned char *s, Py_ssize_t n, int64_t *v)
{
    Py_ssize_t i = 0;
    int64_t acc = 0;
    int neg = 0;
    if (n == 0) return 0;
    if (s[0] == '-') {
        neg = 1;
        i = 1;
        if (n == 1) return 0;
    }
    if (s[i] == '0') {
        if (n != 1) return 0; /* "007", "-0" */
        *v = 0;
        return 1;
    }
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        acc = acc * 10 + (s[i] - '0');
    }
    acc = neg ? -acc : acc;
    if (acc < INT32_MIN || acc > INT32_MAX) return 0;
    *v = acc;
    return 1;
}

/* A string as rstore.rdb.encoding.encode_string encodes it; `compress` is None or a callable
 * with rstore.codec.lzf.compress's contract. */
static int put_string(Buf *o, PyObject *s, const unsigned char *b, Py_ssize_t n, PyObject *compress)
{
    int64_t v;
    if (n <= 11 && canonical_int32(b, n, &v)) {
        if (buf_room(o, 5) < 0) return -1;
        unsigned char *p = o->b + o->len;
        if (v >= -128 && v <= 127) {
            p[0] = 0xC0;
            p[1] = (unsigned char)(v & 0xFF);
            o->len += 2;
        } else if (v >= -32768 && v <= 32767) {
            p[0] = 0xC1;
            p[1] = (unsigned char)(v & 0xFF);
            p[2] = (unsigned char)((v >> 8) & 0xFF);
            o->len += 3;
        } else {
            uint32_t u = (uint32_t)(int32_t)v;
            p[0] = 0xC2;
            p[1] = (unsigned char)(u & 0xFF);
            p[2] = (unsigned char)((u >> 8) & 0xFF);
            p[3] = (unsigned char)((u >> 16) & 0xFF);
            p[4] = (unsigned char)(u >> 24);
            o->len += 5;
        }
        return 0;
    }
    if (compress != Py_None && n > 20) {
        PyObject *packed = PyObject_CallFunction(compress, "On", s, n - 4);
        if (packed == NULL) return -1;
        if (packed != Py_None) {
            char *pb;
            Py_ssize_t plen;
            if (PyBytes_AsStringAndSize(packed, &pb, &plen) < 0 || buf_room(o, 19 + plen) < 0) {
                Py_DECREF(packed);
                return -1;
            }
            o->b[o->len++] = 0xC3;
            put_length(o, (uint64_t)plen);
            put_length(o, (uint64_t)n);
            memcpy(o->b + o->len, pb, (size_t)plen);
            o->len += plen;
            Py_DECREF(packed);
            return 0;
        }
        Py_DECREF(packed);
    }
    if (buf_room(o, 9 + n) < 0) return -1;
    put_length(o, (uint64_t)n);
    memcpy(o->b + o->len, b, (size_t)n);
    o->len += n;
    return 0;
}

static PyObject *str_master_id, *str_listpack, *str_id, *str_delivery_time_ms,
    *str_delivery_count;

/* An ID (ms, seq) as 16 big-endian bytes, as node keys and PEL entries store it. */
static int put_raw_id(Buf *o, PyObject *sid)
{
    unsigned long long ms, seq;
    if (!PyTuple_Check(sid) || PyTuple_GET_SIZE(sid) != 2) {
        PyErr_SetString(PyExc_TypeError, "a stream ID must be a (ms, seq) tuple");
        return -1;
    }
    ms = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(sid, 0));
    if (ms == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    seq = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(sid, 1));
    if (seq == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    if (buf_room(o, 16) < 0) return -1;
    put_be64(o->b + o->len, ms);
    put_be64(o->b + o->len + 8, seq);
    o->len += 16;
    return 0;
}

/* A group PEL entry: raw ID, delivery time (8 bytes, little-endian, signed), delivery count. */
static int pack_pending(Buf *o, PyObject *item)
{
    PyObject *sid, *ms_obj, *count_obj;
    long long ms;
    unsigned long long count;
    int i, rc = -1;

    sid = PyObject_GetAttr(item, str_id);
    if (sid == NULL) return -1;
    ms_obj = PyObject_GetAttr(item, str_delivery_time_ms);
    count_obj = PyObject_GetAttr(item, str_delivery_count);
    if (ms_obj == NULL || count_obj == NULL || put_raw_id(o, sid) < 0) goto out;
    ms = PyLong_AsLongLong(ms_obj);
    if (ms == -1 && PyErr_Occurred()) goto out;
    count = PyLong_AsUnsignedLongLongMask(count_obj); /* negatives as their uint64 */
    if (count == (unsigned long long)-1 && PyErr_Occurred()) goto out;
    if (buf_room(o, 17) < 0) goto out;
    for (i = 0; i < 8; i++) o->b[o->len + i] = (unsigned char)(((uint64_t)ms >> (8 * i)) & 0xFF);
    o->len += 8;
    put_length(o, count);
    rc = 0;
out:
    Py_DECREF(sid);
    Py_XDECREF(ms_obj);
    Py_XDECREF(count_obj);
    return rc;
}

/* One node's record: 0x10 + the master ID as 16 big-endian bytes + the listpack string. */
static int pack_node(Buf *o, PyObject *item, PyObject *compress)
{
    PyObject *mid, *lp;
    Py_buffer view;
    int rc = -1;

    if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 2) {
        mid = PyTuple_GET_ITEM(item, 0);
        lp = PyTuple_GET_ITEM(item, 1);
        Py_INCREF(mid);
        Py_INCREF(lp);
    } else {
        mid = PyObject_GetAttr(item, str_master_id);
        if (mid == NULL) return -1;
        lp = PyObject_GetAttr(item, str_listpack);
        if (lp == NULL) {
            Py_DECREF(mid);
            return -1;
        }
    }
    if (buf_room(o, 1) == 0) {
        o->b[o->len++] = 0x10;
        if (put_raw_id(o, mid) == 0 && PyObject_GetBuffer(lp, &view, PyBUF_SIMPLE) == 0) {
            rc = put_string(o, lp, view.buf, view.len, compress);
            PyBuffer_Release(&view);
        }
    }
    Py_DECREF(mid);
    Py_DECREF(lp);
    return rc;
}

#define PACK_CHUNK (1 << 20)

enum { PACK_NODES = 0, PACK_PENDING = 1, PACK_IDS = 2 };

static PyObject *pack(PyObject *self, PyObject *args)
{
    PyObject *it, *compress, *item, *result = NULL;
    Py_ssize_t limit, count = 0;
    int kind, rc, exhausted = 0;
    Buf o = {NULL, 0, 0};

    (void)self;
    if (!PyArg_ParseTuple(args, "iOnO:pack", &kind, &it, &limit, &compress)) return NULL;
    if (!PyIter_Check(it) || kind < PACK_NODES || kind > PACK_IDS) {
        PyErr_SetString(PyExc_TypeError, "pack needs a kind (0, 1, 2) and an iterator");
        return NULL;
    }
    while (count < limit && o.len < PACK_CHUNK) {
        item = PyIter_Next(it);
        if (item == NULL) {
            if (PyErr_Occurred()) goto done;
            exhausted = 1;
            break;
        }
        rc = kind == PACK_NODES     ? pack_node(&o, item, compress)
             : kind == PACK_PENDING ? pack_pending(&o, item)
                                    : put_raw_id(&o, item);
        if (rc < 0) {
            Py_DECREF(item);
            goto done;
        }
        Py_DECREF(item);
        count++;
    }
    result = Py_BuildValue("(y#nO)", o.b ? (const char *)o.b : "", o.len, count,
                           exhausted ? Py_True : Py_False);
done:
    PyMem_Free(o.b);
    return result;
}

/* ----------------------------------------------------------------- restoring */

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
    Py_ssize_t pos, limit, got = 0;
    int have_prev;
    unsigned long long prev_ms, prev_seq;
    PyObject *list, *result = NULL;

    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnpKK:read_nodes", &buf, &pos, &limit, &have_prev, &prev_ms,
                          &prev_seq))
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
        if (f.have_first)
            rec = Py_BuildValue("(KKNLKKKKn)", ms, seq, lp, (long long)f.count, f.first_ms,
                                f.first_seq, f.last_ms, f.last_seq, q);
        else
            rec = Py_BuildValue("(KKNLiiKKn)", ms, seq, lp, (long long)f.count, -1, -1,
                                f.last_ms, f.last_seq, q);
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

static PyMethodDef methods[] = {
    {"pack", pack, METH_VARARGS,
     "pack(kind, iterator, limit, compress) -> (bytes, count, exhausted)\n\nThe RDB records "
     "of up to `limit` items taken from the iterator, stopping after about 1 MiB: kind 0 "
     "stream nodes (StreamNode or (master_id, listpack); `compress` is None or "
     "rstore.codec.lzf.compress), 1 group PEL entries (PendingEntry), 2 raw IDs ((ms, seq))."},
    {"read_nodes", read_nodes, METH_VARARGS,
     "read_nodes(buffer, pos, limit, have_prev, prev_ms, prev_seq) -> (records, pos)\n\nUp to "
     "`limit` node records from buffer[pos:], each (ms, seq, listpack, live, first_ms, "
     "first_seq, last_ms, last_seq, end), checked in depth; stops before anything else."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_snapshot", "C accelerator for RDB snapshots (optional).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__snapshot(void)
{
    str_master_id = PyUnicode_InternFromString("master_id");
    str_listpack = PyUnicode_InternFromString("listpack");
    str_id = PyUnicode_InternFromString("id");
    str_delivery_time_ms = PyUnicode_InternFromString("delivery_time_ms");
    str_delivery_count = PyUnicode_InternFromString("delivery_count");
    if (str_master_id == NULL || str_listpack == NULL || str_id == NULL ||
        str_delivery_time_ms == NULL || str_delivery_count == NULL)
        return NULL;
    return PyModule_Create(&module);
}
