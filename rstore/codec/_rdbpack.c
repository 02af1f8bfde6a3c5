/*
 * Optional C accelerator for saving RDB files (rstore.codec.speedups loads it):
 *
 *   pack(kind, iterator, limit, compress)   the loops of rstore.rdb.writer.encode_stream --
 *       stream nodes (LZF-compressed through the given function), group PEL entries or consumer
 *       PEL IDs -- into the bytes of their RDB records, about 1 MiB per call, the same bytes as
 *       the Python loops write one record at a time.
 *   pack_sealed(kind, iterator, prefix, limit, compress)   the same records straight from a
 *       store's sub-database: the iterator yields (key, value) buffers as LMDB hands them over
 *       (rstore.codec.sealed_records), each value verified against its CRC-32 seal
 *       (rstore.storage.records.layout.seal) here; the first key outside `prefix` ends the range, and
 *       a record that fails its checksum, or is anything but what the store writes, stops the
 *       call and is named, for the Python reader to report.  Nodes are LZF-compressed here,
 *       where they lie in the map (lzf_pack, the port of rstore.codec.lzf.py_compress).
 *   lzf_compress(data, max_len)   that port on its own (for tests).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "lzf_pack.h"

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
        PyObject *packed;
        if (s == NULL) { /* from a store's map: the compressor takes bytes */
            PyObject *copy = PyBytes_FromStringAndSize((const char *)b, n);
            if (copy == NULL) return -1;
            packed = PyObject_CallFunction(compress, "On", copy, n - 4);
            Py_DECREF(copy);
        } else {
            packed = PyObject_CallFunction(compress, "On", s, n - 4);
        }
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

/* ------------------------------------------------------------------ LZF (lzf_pack.h) */

static PyObject *lzf_compress_c(PyObject *self, PyObject *args)
{
    Py_buffer data;
    Py_ssize_t max_len, got;
    PyObject *out;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*n:lzf_compress", &data, &max_len)) return NULL;
    if (max_len < 0) max_len = 0;
    out = PyBytes_FromStringAndSize(NULL, max_len + 8);
    if (out == NULL) {
        PyBuffer_Release(&data);
        return NULL;
    }
    got = lzf_pack(data.buf, data.len, (unsigned char *)PyBytes_AS_STRING(out), max_len);
    PyBuffer_Release(&data);
    if (got == 0) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    _PyBytes_Resize(&out, got);
    return out;
}

/* A string as put_string encodes it with compression on, the LZF done here. */
static int put_string_lzf(Buf *o, const unsigned char *b, Py_ssize_t n)
{
    Py_ssize_t got, header;
    if (n <= 20) return put_string(o, NULL, b, n, Py_None); /* never compressed */
    if (buf_room(o, 19 + n + 8) < 0) return -1;
    header = 1 + 9 + 9; /* C3, compressed length, length: written once the first is known */
    got = lzf_pack(b, n, o->b + o->len + header, n - 4);
    if (got == 0) return put_string(o, NULL, b, n, Py_None);
    {
        unsigned char tmp[19];
        Buf h = {tmp, 0, sizeof tmp};
        tmp[h.len++] = 0xC3;
        put_length(&h, (uint64_t)got);
        put_length(&h, (uint64_t)n);
        memmove(o->b + o->len + h.len, o->b + o->len + header, (size_t)got);
        memcpy(o->b + o->len, tmp, (size_t)h.len);
        o->len += h.len + got;
    }
    return 0;
}

/* ------------------------------------------------------------------ records of a store */

enum { SEALED_NODES = 0, SEALED_PENDING = 1, SEALED_IDS = 2 };
enum { RECORD_OK = 0, RECORD_PROBLEM = 1 };

static uint64_t get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    int i;
    for (i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

/* The payload length of a sealed value (rstore.storage.records.layout.unseal), or -1 when its CRC-32
 * (of the key, then the payload) does not match the big-endian u32 after it. */
static Py_ssize_t unsealed_length(const unsigned char *k, Py_ssize_t klen, const unsigned char *v,
                                  Py_ssize_t vlen)
{
    uLong crc;
    Py_ssize_t n = vlen - 4;
    if (n < 0) return -1;
    crc = crc32_z(0L, k, (z_size_t)klen);
    crc = crc32_z(crc, v, (z_size_t)n);
    if ((uint32_t)crc != (((uint32_t)v[n] << 24) | ((uint32_t)v[n + 1] << 16) |
                          ((uint32_t)v[n + 2] << 8) | v[n + 3]))
        return -1;
    return n;
}

/* One record of the store as its RDB record: a node (0x10, master ID, listpack string), a
 * group PEL entry (ID, delivery time little-endian, count) or a consumer PEL ID.  Keys are
 * `plen` bytes of prefix then the 16-byte ID; anything else, or a failed checksum, is a
 * problem, left to the Python reader. */
static int pack_record(Buf *o, int kind, const unsigned char *k, Py_ssize_t klen,
                       const unsigned char *v, Py_ssize_t vlen, Py_ssize_t plen, int compress)
{
    Py_ssize_t n = unsealed_length(k, klen, v, vlen);
    const unsigned char *id = k + plen;
    int i;
    if (n < 0 || klen != plen + 16) return RECORD_PROBLEM;
    if (kind == SEALED_NODES) {
        if (buf_room(o, 17) < 0) return -1;
        o->b[o->len++] = 0x10;
        memcpy(o->b + o->len, id, 16);
        o->len += 16;
        return compress ? put_string_lzf(o, v, n) : put_string(o, NULL, v, n, Py_None);
    }
    if (kind == SEALED_PENDING && n < 16) return RECORD_PROBLEM;
    if (buf_room(o, 16 + 8 + 9) < 0) return -1;
    memcpy(o->b + o->len, id, 16);
    o->len += 16;
    if (kind == SEALED_PENDING) {
        for (i = 0; i < 8; i++) o->b[o->len + i] = v[7 - i]; /* the time, big- to little-endian */
        o->len += 8;
        put_length(o, get_be64(v + 8));
    }
    return RECORD_OK;
}

static PyObject *pack_sealed(PyObject *self, PyObject *args)
{
    PyObject *it, *item, *problem = NULL, *result = NULL;
    Py_buffer prefix, key, value;
    Py_ssize_t limit, count = 0;
    int kind, rc, compress, exhausted = 0;
    Buf o = {NULL, 0, 0};

    (void)self;
    if (!PyArg_ParseTuple(args, "iOy*np:pack_sealed", &kind, &it, &prefix, &limit, &compress))
        return NULL;
    if (!PyIter_Check(it) || kind < SEALED_NODES || kind > SEALED_IDS) {
        PyErr_SetString(PyExc_TypeError, "pack_sealed needs a kind (0, 1, 2) and an iterator");
        goto done;
    }
    while (count < limit && o.len < PACK_CHUNK) {
        item = PyIter_Next(it);
        if (item == NULL) {
            if (PyErr_Occurred()) goto done;
            exhausted = 1;
            break;
        }
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            Py_DECREF(item);
            PyErr_SetString(PyExc_TypeError, "pack_sealed needs (key, value) pairs");
            goto done;
        }
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 0), &key, PyBUF_SIMPLE) < 0) {
            Py_DECREF(item);
            goto done;
        }
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 1), &value, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&key);
            Py_DECREF(item);
            goto done;
        }
        if (key.len < prefix.len || memcmp(key.buf, prefix.buf, (size_t)prefix.len) != 0) {
            exhausted = 1; /* past the range */
            rc = RECORD_OK;
        } else {
            rc = pack_record(&o, kind, key.buf, key.len, value.buf, value.len, prefix.len,
                             compress);
            if (rc == RECORD_PROBLEM)
                problem = PyBytes_FromStringAndSize(key.buf, key.len);
        }
        PyBuffer_Release(&value);
        PyBuffer_Release(&key);
        Py_DECREF(item);
        if (rc < 0 || (rc == RECORD_PROBLEM && problem == NULL)) goto done;
        if (exhausted || problem != NULL) break;
        count++;
    }
    result = Py_BuildValue("(y#nOO)", o.b ? (const char *)o.b : "", o.len, count,
                           exhausted ? Py_True : Py_False, problem ? problem : Py_None);
done:
    Py_XDECREF(problem);
    PyBuffer_Release(&prefix);
    PyMem_Free(o.b);
    return result;
}

static PyMethodDef methods[] = {
    {"pack", pack, METH_VARARGS,
     "pack(kind, iterator, limit, compress) -> (bytes, count, exhausted)\n\nThe RDB records "
     "of up to `limit` items taken from the iterator, stopping after about 1 MiB: kind 0 "
     "stream nodes (StreamNode or (master_id, listpack); `compress` is None or "
     "rstore.codec.lzf.compress), 1 group PEL entries (PendingEntry), 2 raw IDs ((ms, seq))."},
    {"lzf_compress", lzf_compress_c, METH_VARARGS,
     "lzf_compress(data, max_len) -> bytes | None\n\nrstore.codec.lzf.py_compress in C."},
    {"pack_sealed", pack_sealed, METH_VARARGS,
     "pack_sealed(kind, iterator, prefix, limit, compress) -> (bytes, count, exhausted, "
     "problem)\n\nThe RDB records of up to `limit` sealed (key, value) pairs of a store taken "
     "from the iterator while their keys start with `prefix` (then `exhausted`), stopping "
     "after about 1 MiB: kind 0 nodes, 1 group PEL entries, 2 consumer PEL IDs.  `problem` is "
     "the key of a record that failed its checksum or is malformed (packing stops before "
     "it), else None.  `compress`: LZF (lzf_compress) for node strings, as rdbcompression."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rdbpack", "C accelerator for writing RDB files (optional).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rdbpack(void)
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
