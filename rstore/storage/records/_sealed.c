/*
 * Optional C accelerator for sealing records (rstore.storage.records.layout and .sealed load
 * it).  A sealed record is its payload followed by the CRC-32 (zlib's) of the key then the
 * payload, big-endian
 * (rstore.storage.records.layout.seal, the reference).
 *
 *   crc32(data, crc=0)                      zlib.crc32(data, crc)
 *   seal(key, payload), unseal(key, value)  one record sealed, or its payload checked
 *   seal_nodes(prefix, nodes)               [(prefix + master ID, sealed listpack)] for the
 *                                           (master ID, listpack, ...) tuples of a NodeRun
 *   pop_sealed(raw, db, keys)               the payloads of records checked and deleted in
 *                                           one run (XACK's group PEL records)
 *   seal_nacks(pel_prefix, owned_prefix, owner, nacks)
 *                                           the group PEL and consumer index records of
 *                                           (raw ID, delivery time, delivery count) NACKs
 *
 * The seal functions return None (no exception) for any input they do not expect -- a wrong
 * type, an integer out of range -- and the Python version then does the work (and raises what
 * it raises), so the records written never depend on whether this module is built.
 *
 * CRC-32: slicing-by-8 tables everywhere; on x86-64 with PCLMULQDQ (checked at run time),
 * blocks of 64 bytes and more are folded four 128-bit lanes at a time with carry-less
 * multiplications by x^n mod P, and the folded 16 bytes and the tail finish with the tables.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_CLMUL 1
#include <immintrin.h>
#endif

static uint32_t crc_table[8][256];
static PyObject *s_get, *s_delete, *kw_db; /* "get", "delete", ("db",): set at import */
static int use_clmul;

static void crc_init(void)
{
    int i, k;
    for (i = 0; i < 256; i++) {
        uint32_t c = (uint32_t)i;
        for (k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        crc_table[0][i] = c;
    }
    for (i = 0; i < 256; i++)
        for (k = 1; k < 8; k++)
            crc_table[k][i] = (crc_table[k - 1][i] >> 8) ^ crc_table[0][crc_table[k - 1][i] & 0xFF];
#ifdef HAVE_CLMUL
    __builtin_cpu_init();
    use_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
#endif
}

/* The CRC register (not inverted) after n more bytes at p. */
static uint32_t crc_tables(uint32_t c, const unsigned char *p, size_t n)
{
    while (n > 0 && ((uintptr_t)p & 7)) {
        c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
                      (uint32_t)p[7] << 24;
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
            crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^
            crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
            crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n-- > 0) c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c;
}

#ifdef HAVE_CLMUL
/* x mod P multiplied into the next 128 bits: the low half of x by k's low 64 bits, the high
 * half by its high 64 bits (the constants are x^n mod P for the reflected polynomial, n
 * chosen for a fold over 512 bits or over 128 bits). */
__attribute__((target("pclmul,sse2"))) static inline __m128i fold(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("pclmul,sse2"))) static uint32_t crc_clmul(uint32_t c,
                                                                  const unsigned char *p,
                                                                  size_t n)
{
    const __m128i k512 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
    const __m128i k128 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
    __m128i x0, x1, x2, x3;
    unsigned char rest[16];

    /* n >= 64: the register goes into the first 4 bytes, then 64 bytes at a time */
    x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)c));
    x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    n -= 64;
    while (n >= 64) {
        x0 = _mm_xor_si128(fold(x0, k512), _mm_loadu_si128((const __m128i *)p));
        x1 = _mm_xor_si128(fold(x1, k512), _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = _mm_xor_si128(fold(x2, k512), _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = _mm_xor_si128(fold(x3, k512), _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    x0 = _mm_xor_si128(fold(x0, k128), x1);
    x0 = _mm_xor_si128(fold(x0, k128), x2);
    x0 = _mm_xor_si128(fold(x0, k128), x3);
    while (n >= 16) {
        x0 = _mm_xor_si128(fold(x0, k128), _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    /* the 16 folded bytes stand for everything read so far: finish them, then the tail */
    _mm_storeu_si128((__m128i *)rest, x0);
    return crc_tables(crc_tables(0, rest, 16), p, n);
}
#endif

/* The CRC register (not inverted) after n more bytes at p. */
static uint32_t crc_update(uint32_t c, const unsigned char *p, size_t n)
{
#ifdef HAVE_CLMUL
    if (use_clmul && n >= 64) return crc_clmul(c, p, n);
#endif
    return crc_tables(c, p, n);
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void put_be64(unsigned char *p, uint64_t v)
{
    int i;
    for (i = 7; i >= 0; i--) {
        p[i] = (unsigned char)v;
        v >>= 8;
    }
}

/* A new (key, sealed value) tuple: the value is head + body + the CRC-32 of key, head, body. */
static PyObject *sealed_item(PyObject *key, const unsigned char *head, Py_ssize_t head_len,
                             const unsigned char *body, Py_ssize_t body_len)
{
    PyObject *value = PyBytes_FromStringAndSize(NULL, head_len + body_len + 4), *item;
    unsigned char *v;
    uint32_t c;
    if (value == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    v = (unsigned char *)PyBytes_AS_STRING(value);
    if (head_len) memcpy(v, head, (size_t)head_len);
    if (body_len) memcpy(v + head_len, body, (size_t)body_len);
    c = crc_update(0xFFFFFFFFu, (const unsigned char *)PyBytes_AS_STRING(key),
                   (size_t)PyBytes_GET_SIZE(key));
    c = crc_update(c, v, (size_t)(head_len + body_len));
    put_be32(v + head_len + body_len, ~c);
    item = Py_BuildValue("(NN)", key, value);
    /* two bytes objects: in no cycle (see untrack_atoms in _rdbread.c); tracked, a restore's ~10^4
     * items set off collections that walk them again and again */
    if (item != NULL) PyObject_GC_UnTrack(item);
    return item;
}

static PyObject *crc32(PyObject *self, PyObject *args)
{
    Py_buffer data;
    unsigned int crc = 0;
    uint32_t c;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*|I:crc32", &data, &crc)) return NULL;
    if (data.len >= 65536) {
        Py_BEGIN_ALLOW_THREADS
        c = crc_update(~(uint32_t)crc, data.buf, (size_t)data.len);
        Py_END_ALLOW_THREADS
    } else {
        c = crc_update(~(uint32_t)crc, data.buf, (size_t)data.len);
    }
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(~c);
}

/* seal(key, payload) -> bytes: payload + CRC-32(key + payload), big-endian. */
static PyObject *seal(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer key, payload;
    PyObject *value;
    unsigned char *v;
    uint32_t c;
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "seal(key, payload) takes 2 arguments");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &key, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &payload, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&key);
        return NULL;
    }
    value = PyBytes_FromStringAndSize(NULL, payload.len + 4);
    if (value != NULL) {
        v = (unsigned char *)PyBytes_AS_STRING(value);
        if (payload.len) memcpy(v, payload.buf, (size_t)payload.len);
        c = crc_update(0xFFFFFFFFu, key.buf, (size_t)key.len);
        c = crc_update(c, v, (size_t)payload.len);
        put_be32(v + payload.len, ~c);
    }
    PyBuffer_Release(&payload);
    PyBuffer_Release(&key);
    return value;
}

/* unseal(key, value) -> bytes or None: the payload of a sealed value whose CRC matches. */
static PyObject *unseal(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer key, value;
    PyObject *out = NULL;
    const unsigned char *v;
    uint32_t c, stored;
    Py_ssize_t end;
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "unseal(key, value) takes 2 arguments");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &key, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &value, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&key);
        return NULL;
    }
    end = value.len - 4;
    if (end >= 0) {
        v = (const unsigned char *)value.buf;
        c = crc_update(0xFFFFFFFFu, key.buf, (size_t)key.len);
        c = ~crc_update(c, v, (size_t)end);
        stored = (uint32_t)v[end] << 24 | (uint32_t)v[end + 1] << 16 | (uint32_t)v[end + 2] << 8 |
                 (uint32_t)v[end + 3];
        if (c == stored) out = PyBytes_FromStringAndSize((const char *)v, end);
    }
    PyBuffer_Release(&value);
    PyBuffer_Release(&key);
    if (out == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return out;
}

/* An unsigned 64-bit integer out of an int object; 0 (and no exception) if it is not one. */
static int get_u64(PyObject *o, uint64_t *v)
{
    if (!PyLong_CheckExact(o)) return 0;
    *v = PyLong_AsUnsignedLongLong(o);
    if (*v == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

static int get_i64(PyObject *o, int64_t *v)
{
    if (!PyLong_CheckExact(o)) return 0;
    *v = PyLong_AsLongLong(o);
    if (*v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

static PyObject *seal_nodes(PyObject *self, PyObject *args)
{
    PyObject *prefix, *nodes, *out;
    Py_ssize_t i, n;
    (void)self;
    if (!PyArg_ParseTuple(args, "SO:seal_nodes", &prefix, &nodes)) return NULL;
    if (!PyBytes_CheckExact(prefix) || PyBytes_GET_SIZE(prefix) != 8 || !PyList_CheckExact(nodes))
        Py_RETURN_NONE;
    n = PyList_GET_SIZE(nodes);
    out = PyList_New(n);
    if (out == NULL) return NULL;
    for (i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(nodes, i), *mid, *lp, *key, *item;
        uint64_t ms, seq;
        unsigned char *k;
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) < 2) goto refuse;
        mid = PyTuple_GET_ITEM(t, 0);
        lp = PyTuple_GET_ITEM(t, 1);
        if (!PyTuple_CheckExact(mid) || PyTuple_GET_SIZE(mid) != 2 || !PyBytes_CheckExact(lp) ||
            !get_u64(PyTuple_GET_ITEM(mid, 0), &ms) || !get_u64(PyTuple_GET_ITEM(mid, 1), &seq))
            goto refuse;
        key = PyBytes_FromStringAndSize(NULL, 24);
        if (key == NULL) goto fail;
        k = (unsigned char *)PyBytes_AS_STRING(key);
        memcpy(k, PyBytes_AS_STRING(prefix), 8);
        put_be64(k + 8, ms);
        put_be64(k + 16, seq);
        item = sealed_item(key, NULL, 0, (const unsigned char *)PyBytes_AS_STRING(lp),
                           PyBytes_GET_SIZE(lp));
        if (item == NULL) goto fail;
        PyList_SET_ITEM(out, i, item);
    }
    return out;
refuse:
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *seal_nacks(PyObject *self, PyObject *args)
{
    PyObject *pel_prefix, *owned_prefix, *owner, *nacks, *pel = NULL, *owned = NULL;
    Py_ssize_t i, n, plen, olen, wlen;
    unsigned char *head = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "SSSO:seal_nacks", &pel_prefix, &owned_prefix, &owner, &nacks))
        return NULL;
    if (!PyBytes_CheckExact(pel_prefix) || !PyBytes_CheckExact(owned_prefix) ||
        !PyBytes_CheckExact(owner) || !PyList_CheckExact(nacks))
        Py_RETURN_NONE;
    n = PyList_GET_SIZE(nacks);
    plen = PyBytes_GET_SIZE(pel_prefix);
    olen = PyBytes_GET_SIZE(owned_prefix);
    wlen = PyBytes_GET_SIZE(owner);
    head = PyMem_Malloc((size_t)(16 + wlen));
    pel = PyList_New(n);
    owned = PyList_New(n);
    if (head == NULL || pel == NULL || owned == NULL) {
        if (head == NULL) PyErr_NoMemory();
        goto fail;
    }
    memcpy(head + 16, PyBytes_AS_STRING(owner), (size_t)wlen);
    for (i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(nacks, i), *raw, *key, *item;
        int64_t when;
        uint64_t count;
        unsigned char *k;
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 3) goto refuse;
        raw = PyTuple_GET_ITEM(t, 0);
        if (!PyBytes_CheckExact(raw) || !get_i64(PyTuple_GET_ITEM(t, 1), &when) ||
            !get_u64(PyTuple_GET_ITEM(t, 2), &count))
            goto refuse;
        put_be64(head, (uint64_t)when);
        put_be64(head + 8, count);
        key = PyBytes_FromStringAndSize(NULL, plen + PyBytes_GET_SIZE(raw));
        if (key == NULL) goto fail;
        k = (unsigned char *)PyBytes_AS_STRING(key);
        memcpy(k, PyBytes_AS_STRING(pel_prefix), (size_t)plen);
        memcpy(k + plen, PyBytes_AS_STRING(raw), (size_t)PyBytes_GET_SIZE(raw));
        item = sealed_item(key, head, 16 + wlen, NULL, 0);
        if (item == NULL) goto fail;
        PyList_SET_ITEM(pel, i, item);
        key = PyBytes_FromStringAndSize(NULL, olen + PyBytes_GET_SIZE(raw));
        if (key == NULL) goto fail;
        k = (unsigned char *)PyBytes_AS_STRING(key);
        memcpy(k, PyBytes_AS_STRING(owned_prefix), (size_t)olen);
        memcpy(k + olen, PyBytes_AS_STRING(raw), (size_t)PyBytes_GET_SIZE(raw));
        item = sealed_item(key, NULL, 0, NULL, 0);
        if (item == NULL) goto fail;
        PyList_SET_ITEM(owned, i, item);
    }
    PyMem_Free(head);
    return Py_BuildValue("(NN)", pel, owned);
refuse:
    PyMem_Free(head);
    Py_DECREF(pel);
    Py_DECREF(owned);
    Py_RETURN_NONE;
fail:
    PyMem_Free(head);
    Py_XDECREF(pel);
    Py_XDECREF(owned);
    return NULL;
}

/* pop_sealed(raw, db, keys) -> (payloads, damaged): for each key of the list keys, in order, the
   payload of its sealed record in sub-database db of the write transaction raw (raw.get, then
   raw.delete, each with db=db), or None when there is none.  A record whose seal does not match
   stops the run before it is deleted: damaged is its index (-1 when every record was sound). */
static PyObject *pop_sealed(PyObject *self, PyObject *args)
{
    PyObject *raw, *db, *keys, *payloads;
    Py_ssize_t i, n, damaged = -1;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOO!:pop_sealed", &raw, &db, &PyList_Type, &keys)) return NULL;
    n = PyList_GET_SIZE(keys);
    if (!(payloads = PyList_New(n))) return NULL;
    for (i = 0; i < n; i++) {
        PyObject *key = PyList_GET_ITEM(keys, i), *value, *payload = NULL, *r;
        PyObject *stack[4] = {NULL, raw, key, db};
        Py_buffer k, v;
        int sound = 0;
        value = PyObject_VectorcallMethod(s_get, stack + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                          kw_db);
        if (value == NULL) goto fail;
        if (value == Py_None) {
            PyList_SET_ITEM(payloads, i, value);  /* the reference to None moves to the list */
            continue;
        }
        if (PyObject_GetBuffer(key, &k, PyBUF_SIMPLE) < 0) {
            Py_DECREF(value);
            goto fail;
        }
        if (PyObject_GetBuffer(value, &v, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&k);
            Py_DECREF(value);
            goto fail;
        }
        if (v.len >= 4) {
            const unsigned char *b = (const unsigned char *)v.buf;
            Py_ssize_t end = v.len - 4;
            uint32_t c = crc_update(0xFFFFFFFFu, k.buf, (size_t)k.len);
            uint32_t stored = (uint32_t)b[end] << 24 | (uint32_t)b[end + 1] << 16 |
                              (uint32_t)b[end + 2] << 8 | (uint32_t)b[end + 3];
            c = ~crc_update(c, b, (size_t)end);
            if (c == stored) {
                sound = 1;
                payload = PyBytes_FromStringAndSize((const char *)b, end);  /* before the delete */
            }
        }
        PyBuffer_Release(&v);
        PyBuffer_Release(&k);
        Py_DECREF(value);
        if (!sound) {
            for (damaged = i; i < n; i++) PyList_SET_ITEM(payloads, i, Py_NewRef(Py_None));
            break;
        }
        if (payload == NULL) goto fail;
        PyList_SET_ITEM(payloads, i, payload);
        r = PyObject_VectorcallMethod(s_delete, stack + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                      kw_db);
        if (r == NULL) goto fail;
        Py_DECREF(r);
    }
    return Py_BuildValue("(Nn)", payloads, damaged);
fail:
    Py_DECREF(payloads);  /* the slots not reached yet are NULL: list_dealloc skips them */
    return NULL;
}

static PyMethodDef methods[] = {
    {"crc32", crc32, METH_VARARGS,
     "crc32(data, crc=0) -> int\n\nzlib.crc32(data, crc): the CRC-32 of records' seals."},
    {"seal", (PyCFunction)(void (*)(void))seal, METH_FASTCALL,
     "seal(key, payload) -> bytes\n\nThe payload, then the CRC-32 of key and payload (big-endian)."},
    {"unseal", (PyCFunction)(void (*)(void))unseal, METH_FASTCALL,
     "unseal(key, value) -> bytes or None\n\nThe payload of a sealed value, None when its "
     "CRC-32 does not match."},
    {"seal_nodes", seal_nodes, METH_VARARGS,
     "seal_nodes(prefix, nodes) -> list or None\n\n(prefix + ms + seq, listpack + seal) for "
     "each ((ms, seq), listpack, ...) of the list nodes; prefix: the stream handle (8 bytes)."},
    {"pop_sealed", pop_sealed, METH_VARARGS,
     "pop_sealed(raw, db, keys) -> (payloads, damaged)\n\nEach key's sealed record in db of the "
     "write transaction raw, checked, then deleted; None where there is none.  damaged: the "
     "index of the first record whose seal does not match (not deleted; the run stops), or -1."},
    {"seal_nacks", seal_nacks, METH_VARARGS,
     "seal_nacks(pel_prefix, owned_prefix, owner, nacks) -> (pel, owned) or None\n\nFor each "
     "(raw ID, delivery time, delivery count) of the list nacks: (pel_prefix + raw ID, sealed "
     "NACK of owner) and (owned_prefix + raw ID, sealed empty value)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_sealed", "C accelerator for sealing records in bulk (optional).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__sealed(void)
{
    crc_init();
    if (!(s_get = PyUnicode_InternFromString("get")) ||
        !(s_delete = PyUnicode_InternFromString("delete")) || !(kw_db = Py_BuildValue("(s)", "db")))
        return NULL;
    return PyModule_Create(&module);
}
