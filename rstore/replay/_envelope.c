/*
 * Optional C accelerator for reading rstore's JSONL envelope (rstore/replay/envelope.py):
 * decode_run() decodes, from a position of a block of lines, the lines that are entries of one
 * stream into the nine buffers of a Columns batch, straight from the bytes: no JSON object, no
 * str, no Python value per entry.
 *
 * It reads only lines written the way encode_entry writes them, without spaces:
 *
 *     {"stream":STRING,"id":"MS-SEQ","fields":[[STRING,STRING],...]}\n
 *
 * where a STRING is a JSON string: UTF-8 (checked as strictly as Python's decoder), the
 * escapes \" \\ \/ \b \f \n \r \t and \uXXXX (a surrogate pair for a character past U+FFFF).
 * It stops, before the line, at anything else -- a {"base64": ...} value, a lone surrogate, a
 * space, a blank or malformed line, a number past 64 bits, another stream -- and the Python
 * decoder (the reference) reads that line, decoding it or naming what is wrong.  A line it
 * stops at leaves every buffer as it was.  tests/replay/test_envelope_decode_run.py compares
 * the two on random and mutated lines.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { B_MS, B_SEQ, B_IDOFF, B_IDDATA, B_ENTRYOFF, B_KEYOFF, B_KEYDATA, B_VALOFF, B_VALDATA,
       NBUFS };

/* The nine buffers, each used up to len[i] while decode_run runs: a bytearray is resized in
 * big steps, then to its used length at the end (finish). */
typedef struct {
    PyObject *buf[NBUFS];
    Py_ssize_t len[NBUFS];  /* bytes used */
    Py_ssize_t mark[NBUFS]; /* used before the line being decoded */
} Out;

/* Room for n more bytes at the end of buffer i; a pointer to them, NULL on error (memory). */
static unsigned char *grow(Out *o, int i, Py_ssize_t n)
{
    Py_ssize_t size = o->len[i];
    if (size + n > PyByteArray_GET_SIZE(o->buf[i])) {
        Py_ssize_t want = 2 * PyByteArray_GET_SIZE(o->buf[i]) + n + 4096;
        if (PyByteArray_Resize(o->buf[i], want) < 0) return NULL;
    }
    o->len[i] = size + n;
    return (unsigned char *)PyByteArray_AS_STRING(o->buf[i]) + size;
}

/* Give back n bytes taken by grow at the end of buffer i. */
static void shrink(Out *o, int i, Py_ssize_t n) { o->len[i] -= n; }

/* Every bytearray cut to what is used; 0, or -1 on error. */
static int finish(Out *o)
{
    int rc = 0;
    for (int i = 0; i < NBUFS; i++)
        if (PyByteArray_Resize(o->buf[i], o->len[i]) < 0) rc = -1;
    return rc;
}

static int put_le(Out *o, int i, uint64_t v, int width)
{
    unsigned char *p = grow(o, i, width);
    if (p == NULL) return -1;
    for (int k = 0; k < width; k++) p[k] = (unsigned char)(v >> (8 * k));
    return 0;
}

/* The end of a data buffer as an int32 offset after it; 0 ok, 1 past int32, -1 error. */
static int put_offset(Out *o, int off, int data)
{
    Py_ssize_t end = o->len[data];
    if (end > INT32_MAX) return 1;
    return put_le(o, off, (uint64_t)end, 4);
}

static void rewind_line(Out *o)
{
    for (int i = 0; i < NBUFS; i++) o->len[i] = o->mark[i];
}

static int hex4(const unsigned char *p, unsigned *v)
{
    unsigned r = 0;
    for (int k = 0; k < 4; k++) {
        unsigned c = p[k], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return 0;
        r = r << 4 | d;
    }
    *v = r;
    return 1;
}

/* The length of the valid UTF-8 sequence at p (its first byte >= 0x80), 0 if invalid: no
 * overlong form, no surrogate, nothing past U+10FFFF -- what Python's decoder refuses. */
static int utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    if (c >= 0xC2 && c <= 0xDF) return end - p >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (end - p < 3 || p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80) return 0;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (end - p < 4 || p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80 ||
            (p[3] & 0xC0) != 0x80)
            return 0;
        return 4;
    }
    return 0;
}

static Py_ssize_t put_utf8(unsigned char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Where the JSON string at p (its opening quote) ends: past its closing quote, or NULL when
 * it does not end before `end`.  A string never decodes longer than it is written. */
static const unsigned char *string_end(const unsigned char *p, const unsigned char *end)
{
    if (p >= end || *p != '"') return NULL;
    for (p++; p < end; p++) {
        if (*p == '"') return p + 1;
        if (*p == '\\') p++;
    }
    return NULL;
}

/* Decode the JSON string at *pp (its opening quote) into out (room for its written length);
 * its decoded length, *pp moved past the closing quote, or -1 for anything this reader
 * leaves to Python. */
static Py_ssize_t json_string(const unsigned char **pp, const unsigned char *end,
                              unsigned char *out)
{
    const unsigned char *p = *pp;
    Py_ssize_t w = 0;
    if (p >= end || *p != '"') return -1;
    p++;
    for (;;) {
        unsigned c;
        if (p >= end) return -1;
        c = *p;
        if (c == '"') break;
        if (c < 0x20) return -1; /* a control character: not JSON */
        if (c < 0x80 && c != '\\') {
            out[w++] = (unsigned char)c;
            p++;
            continue;
        }
        if (c >= 0x80) {
            int n = utf8_len(p, end);
            if (n == 0) return -1;
            memcpy(out + w, p, (size_t)n);
            w += n;
            p += n;
            continue;
        }
        if (end - p < 2) return -1;
        switch (p[1]) {
        case '"': out[w++] = '"'; break;
        case '\\': out[w++] = '\\'; break;
        case '/': out[w++] = '/'; break;
        case 'b': out[w++] = '\b'; break;
        case 'f': out[w++] = '\f'; break;
        case 'n': out[w++] = '\n'; break;
        case 'r': out[w++] = '\r'; break;
        case 't': out[w++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (end - p < 6 || !hex4(p + 2, &cp)) return -1;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return -1; /* a lone low surrogate */
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - p < 12 || p[6] != '\\' || p[7] != 'u' || !hex4(p + 8, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return -1; /* a lone high surrogate */
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            w += put_utf8(out + w, cp);
            p += 6;
            continue;
        }
        default: return -1;
        }
        p += 2;
    }
    *pp = p + 1;
    return w;
}

/* A JSON string appended to (offsets, data); 0 ok, 1 left to Python, -1 error. */
static int put_string(Out *o, int off, int data, const unsigned char **pp,
                      const unsigned char *end)
{
    Py_ssize_t n, room;
    const unsigned char *stop = string_end(*pp, end);
    unsigned char *out;
    if (stop == NULL) return 1;
    room = stop - *pp;
    if ((out = grow(o, data, room)) == NULL) return -1;
    n = json_string(pp, stop, out);
    shrink(o, data, n < 0 ? room : room - n);
    if (n < 0) return 1;
    return put_offset(o, off, data);
}

static int expect(const unsigned char **pp, const unsigned char *end, const char *text)
{
    size_t n = strlen(text);
    if ((size_t)(end - *pp) < n || memcmp(*pp, text, n) != 0) return 0;
    *pp += n;
    return 1;
}

/* 1 to 20 decimal digits up to 2**64 - 1 at *pp. */
static int number(const unsigned char **pp, const unsigned char *end, uint64_t *v)
{
    const unsigned char *p = *pp;
    uint64_t r = 0;
    int digits = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (++digits > 20 || r > (UINT64_MAX - d) / 10) return 0;
        r = r * 10 + d;
        p++;
    }
    if (digits == 0) return 0;
    *pp = p;
    *v = r;
    return 1;
}

static Py_ssize_t format_u64(char *out, uint64_t v)
{
    char digits[20];
    Py_ssize_t n = 0, w = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) out[w++] = digits[--n];
    return w;
}

/* Decode the line at *pp (up to end, the block's end) into the buffers; its stream name in
 * *name (a new bytes object).  1: decoded, *pp past its newline; 0: left to Python (buffers
 * as they were); -1: error. */
static int decode_line(Out *o, const unsigned char **pp, const unsigned char *end,
                       PyObject **name)
{
    const unsigned char *p = *pp, *stop;
    unsigned char small[256], *tmp;
    Py_ssize_t n;
    uint64_t ms, seq;
    char id[41];
    int rc;

    for (int i = 0; i < NBUFS; i++) o->mark[i] = o->len[i];
    if (!expect(&p, end, "{\"stream\":") || (stop = string_end(p, end)) == NULL) return 0;
    tmp = stop - p <= (Py_ssize_t)sizeof small ? small : PyMem_Malloc((size_t)(stop - p));
    if (tmp == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    n = json_string(&p, stop, tmp);
    if (n >= 0) *name = PyBytes_FromStringAndSize((const char *)tmp, n);
    if (tmp != small) PyMem_Free(tmp);
    if (n < 0) return 0;
    if (*name == NULL) return -1;
    if (!expect(&p, end, ",\"id\":\"") || !number(&p, end, &ms) || !expect(&p, end, "-") ||
        !number(&p, end, &seq) || !expect(&p, end, "\",\"fields\":["))
        goto leave;
    for (;;) {
        if (!expect(&p, end, "[")) goto leave;
        if ((rc = put_string(o, B_KEYOFF, B_KEYDATA, &p, end)) != 0) goto failed;
        if (!expect(&p, end, ",")) goto leave;
        if ((rc = put_string(o, B_VALOFF, B_VALDATA, &p, end)) != 0) goto failed;
        if (!expect(&p, end, "]")) goto leave;
        if (expect(&p, end, "]}")) break;
        if (!expect(&p, end, ",")) goto leave;
    }
    if (p < end && !expect(&p, end, "\n")) goto leave;
    n = format_u64(id, ms);
    id[n++] = '-';
    n += format_u64(id + n, seq);
    if (put_le(o, B_MS, ms, 8) < 0 || put_le(o, B_SEQ, seq, 8) < 0) goto error;
    tmp = grow(o, B_IDDATA, n);
    if (tmp == NULL) goto error;
    memcpy(tmp, id, (size_t)n);
    if ((rc = put_offset(o, B_IDOFF, B_IDDATA)) != 0) goto failed;
    rc = put_le(o, B_ENTRYOFF, (uint64_t)(o->len[B_KEYOFF] / 4 - 1), 4);
    if (rc < 0) goto error;
    *pp = p;
    return 1;
failed:
    if (rc < 0) goto error;
leave:
    rewind_line(o);
    Py_CLEAR(*name);
    return 0;
error:
    rewind_line(o);
    Py_CLEAR(*name);
    return -1;
}

/* decode_run(data, pos, ms, seq, id_offsets, id_data, entry_offsets, key_offsets, key_data,
 *            value_offsets, value_data) -> (stream | None, pos, lines) */
static PyObject *decode_run(PyObject *self, PyObject *args)
{
    Py_buffer data;
    Py_ssize_t pos, lines = 0;
    Out o;
    PyObject *stream = NULL, *result = NULL;
    const unsigned char *p, *end;

    if (!PyArg_ParseTuple(args, "y*nYYYYYYYYY", &data, &pos, &o.buf[0], &o.buf[1], &o.buf[2],
                          &o.buf[3], &o.buf[4], &o.buf[5], &o.buf[6], &o.buf[7], &o.buf[8]))
        return NULL;
    if (pos < 0 || pos > data.len) {
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_ValueError, "pos is outside the data");
        return NULL;
    }
    for (int i = 0; i < NBUFS; i++) o.len[i] = PyByteArray_GET_SIZE(o.buf[i]);
    p = (const unsigned char *)data.buf + pos;
    end = (const unsigned char *)data.buf + data.len;
    while (p < end) {
        PyObject *name = NULL;
        const unsigned char *at = p;
        int rc = decode_line(&o, &p, end, &name);
        if (rc < 0) {
            rewind_line(&o);
            finish(&o);
            goto done;
        }
        if (rc == 0) break;
        if (stream == NULL) {
            stream = name;
        } else {
            int same = PyBytes_GET_SIZE(name) == PyBytes_GET_SIZE(stream) &&
                       memcmp(PyBytes_AS_STRING(name), PyBytes_AS_STRING(stream),
                              (size_t)PyBytes_GET_SIZE(name)) == 0;
            Py_DECREF(name);
            if (!same) { /* another stream: the next run's */
                rewind_line(&o);
                p = at;
                break;
            }
        }
        lines++;
    }
    if (finish(&o) < 0) goto done;
    result = Py_BuildValue("Onn", stream ? stream : Py_None,
                           (Py_ssize_t)(p - (const unsigned char *)data.buf), lines);
done:
    Py_XDECREF(stream);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"decode_run", decode_run, METH_VARARGS,
     "decode_run(data, pos, ms, seq, id_offsets, id_data, entry_offsets, key_offsets, "
     "key_data, value_offsets, value_data) -> (stream | None, pos, lines)\n\n"
     "Decode the lines from pos that are entries of one stream, written as encode_entry "
     "writes them, into the buffers of a Columns batch; stops before any other line."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_envelope", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__envelope(void) { return PyModule_Create(&module); }
