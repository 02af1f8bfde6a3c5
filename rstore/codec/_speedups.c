/*
 * Optional C accelerator for the hottest pure function of rstore.codec: decoding the entries
 * of a stream node in ID order (XRANGE, XREAD, XREADGROUP).
 *
 * It does exactly what rstore.codec.stream_node._scan_forward_py does and nothing more.  It
 * never raises on bad data: on anything it does not expect (an unknown encoding, an element
 * running past the end, a counter stored as a string) it puts `out` back as it found it and
 * returns None, and the caller runs the Python version, which reports the problem precisely.
 * Every read is bounds-checked against the buffer, so a corrupt node cannot make it read
 * outside the node.
 * The listpack element reader is in listpack_read.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "listpack_read.h"
#include "node_check.h"

static PyObject *small_text[128]; /* b"0" .. b"127", as replies show small integers */

/* The element as the bytes a client sees (integers as decimal text); new reference. */
static PyObject *element_text(const unsigned char *b, const element *e)
{
    if (!e->is_int) return PyBytes_FromStringAndSize((const char *)b + e->str_at, e->str_len);
    if (e->ival >= 0 && e->ival < 128) {
        PyObject *o = small_text[e->ival];
        Py_INCREF(o);
        return o;
    }
    {
        char text[24];
        int n = snprintf(text, sizeof text, "%lld", (long long)e->ival);
        return PyBytes_FromStringAndSize(text, n);
    }
}

static PyObject *make_id(uint64_t ms, uint64_t seq)
{
    PyObject *a = PyLong_FromUnsignedLongLong(ms), *c, *t;
    if (a == NULL) return NULL;
    c = PyLong_FromUnsignedLongLong(seq);
    if (c == NULL) {
        Py_DECREF(a);
        return NULL;
    }
    t = PyTuple_Pack(2, a, c);
    Py_DECREF(a);
    Py_DECREF(c);
    /* two ints: in no cycle ever.  Python's collector untracks such a tuple the first time it
     * looks at it; untracked now, a page of entries does not set off collections that walk it */
    if (t != NULL) PyObject_GC_UnTrack(t);
    return t;
}

/* Outcome of the scan proper. */
enum { SCAN_GO_ON = 0, SCAN_STOP = 1, SCAN_BAIL = 2, SCAN_ERROR = 3 };

/* b"<ms>-<seq>"; new reference. */
static PyObject *id_text(uint64_t ms, uint64_t seq)
{
    char buf[48], *p = buf + sizeof buf;
    Py_ssize_t n;
    do *--p = (char)('0' + seq % 10); while (seq /= 10);
    *--p = '-';
    do *--p = (char)('0' + ms % 10); while (ms /= 10);
    n = (Py_ssize_t)(buf + sizeof buf - p);
    return PyBytes_FromStringAndSize(p, n);
}

/* The entry (b"<ms>-<seq>", {field: value, ...}) of `vals` (field, value, ... as the internal
 * entry holds them; a later field overwrites an earlier one, as dict() does); new reference. */
static PyObject *dict_entry(uint64_t ms, uint64_t seq, PyObject *vals)
{
    PyObject *d = PyDict_New(), *sid, *t;
    Py_ssize_t i, n = PyList_GET_SIZE(vals);
    if (d == NULL) return NULL;
    for (i = 0; i + 1 < n; i += 2)
        if (PyDict_SetItem(d, PyList_GET_ITEM(vals, i), PyList_GET_ITEM(vals, i + 1)) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    if ((sid = id_text(ms, seq)) == NULL) {
        Py_DECREF(d);
        return NULL;
    }
    t = PyTuple_Pack(2, sid, d);
    Py_DECREF(sid);
    Py_DECREF(d);
    /* bytes and a dict of bytes (which Python leaves untracked): untracked as Python's
     * collector would untrack it on its first look, so a page of entries sets off no
     * collection that walks it */
    if (t != NULL && !PyObject_GC_IsTracked(d)) PyObject_GC_UnTrack(t);
    return t;
}

/* The node's master entry: its field count and the offset of its first field; the offset
 * after it (the first entry), or -1 when it is not plainly valid. */
static Py_ssize_t node_master(const unsigned char *b, Py_ssize_t len, Py_ssize_t *nfields,
                              Py_ssize_t *fields_at)
{
    Py_ssize_t stop = len - 1, p = HEADER_SIZE, i;
    int64_t v;
    element e;

    if (len < HEADER_SIZE + 1 || b[stop] != 0xFF) return -1;
    if ((p = read_int(b, stop, p, &v)) < 0) return -1; /* count */
    if ((p = read_int(b, stop, p, &v)) < 0) return -1; /* deleted */
    if ((p = read_int(b, stop, p, &v)) < 0 || v < 0 || v > len) return -1;
    *nfields = (Py_ssize_t)v;
    *fields_at = p;
    for (i = 0; i < *nfields; i++)
        if ((p = read_el(b, stop, p, &e)) < 0) return -1;
    return read_el(b, stop, p, &e); /* master terminator */
}

/* The head of the entry at p: its flags, its ID (the master's plus the deltas, modulo 2^64 as
 * Redis stores them), how many values follow and whether they come with their field names;
 * the offset of its first value, or -1. */
typedef struct {
    int64_t flags, nvals;
    uint64_t ms, seq;
    int named;
} entry_head;

static Py_ssize_t read_entry_head(const unsigned char *b, Py_ssize_t len, Py_ssize_t p,
                                  uint64_t mms, uint64_t mseq, Py_ssize_t nfields,
                                  entry_head *h)
{
    Py_ssize_t stop = len - 1;
    int64_t ms_d, seq_d;
    if ((p = read_int(b, stop, p, &h->flags)) < 0) return -1;
    if ((p = read_int(b, stop, p, &ms_d)) < 0) return -1;
    if ((p = read_int(b, stop, p, &seq_d)) < 0) return -1;
    h->ms = mms + (uint64_t)ms_d;
    h->seq = mseq + (uint64_t)seq_d;
    if (h->flags & FLAG_SAMEFIELDS) {
        h->nvals = nfields;
        h->named = 0;
    } else {
        if ((p = read_int(b, stop, p, &h->nvals)) < 0 || h->nvals < 0 || h->nvals > len) return -1;
        h->nvals *= 2;
        h->named = 1;
    }
    return p;
}

/* Past an entry's values and its lp_count; -1 when they are not well formed. */
static Py_ssize_t skip_values(const unsigned char *b, Py_ssize_t len, Py_ssize_t p,
                              int64_t nvals)
{
    element e;
    int64_t i;
    for (i = 0; i <= nvals && p >= 0; i++) p = read_el(b, len - 1, p, &e);
    return p;
}

enum { NEXT_LIVE = 0, NEXT_DONE = 1, NEXT_PAST = 2, NEXT_BAIL = 3 };

/* Move *p to the values of the next live entry with start <= id <= end, its head in *h:
 * NEXT_LIVE; NEXT_PAST at an entry past `end`, NEXT_DONE at the node's end, NEXT_BAIL on
 * anything not plainly valid.  Tombstones and entries below `start` are skipped unread. */
static int next_live(const unsigned char *b, Py_ssize_t len, Py_ssize_t *p, uint64_t mms,
                     uint64_t mseq, Py_ssize_t nfields, uint64_t sms, uint64_t sseq,
                     uint64_t ems, uint64_t eseq, entry_head *h)
{
    while (*p < len - 1) {
        Py_ssize_t q = read_entry_head(b, len, *p, mms, mseq, nfields, h);
        if (q < 0) return NEXT_BAIL;
        if (h->ms > ems || (h->ms == ems && h->seq > eseq)) return NEXT_PAST;
        if ((h->flags & FLAG_DELETED) || h->ms < sms || (h->ms == sms && h->seq < sseq)) {
            if ((*p = skip_values(b, len, q, h->nvals)) < 0) return NEXT_BAIL;
            continue;
        }
        *p = q;
        return NEXT_LIVE;
    }
    return NEXT_DONE;
}

static int scan(const unsigned char *b, Py_ssize_t len, uint64_t mms, uint64_t mseq,
                uint64_t sms, uint64_t sseq, uint64_t ems, uint64_t eseq, Py_ssize_t limit,
                PyObject *out, PyObject *fields, int dicts)
{
    Py_ssize_t stop = len - 1, p, f, nfields, fields_at, i;
    element e;

    if ((p = node_master(b, len, &nfields, &fields_at)) < 0) return SCAN_BAIL;
    for (i = 0, f = fields_at; i < nfields; i++) {
        PyObject *text;
        if ((f = read_el(b, stop, f, &e)) < 0) return SCAN_BAIL;
        if ((text = element_text(b, &e)) == NULL) return SCAN_ERROR;
        if (PyList_Append(fields, text) < 0) {
            Py_DECREF(text);
            return SCAN_ERROR;
        }
        Py_DECREF(text);
    }

    for (;;) {
        entry_head h;
        int64_t nvals;
        uint64_t ms, seq;
        int named, next;
        PyObject *fv, *sid, *pair;

        next = next_live(b, len, &p, mms, mseq, nfields, sms, sseq, ems, eseq, &h);
        if (next == NEXT_BAIL) return SCAN_BAIL;
        if (next == NEXT_PAST) return SCAN_STOP;
        if (next == NEXT_DONE) return SCAN_GO_ON;
        ms = h.ms;
        seq = h.seq;
        nvals = h.nvals;
        named = h.named;
        fv = PyList_New(named ? nvals : 2 * nvals);
        if (fv == NULL) return SCAN_ERROR;
        for (i = 0; i < nvals; i++) {
            PyObject *val;
            if ((p = read_el(b, stop, p, &e)) < 0) {
                Py_DECREF(fv);
                return SCAN_BAIL;
            }
            if ((val = element_text(b, &e)) == NULL) {
                Py_DECREF(fv);
                return SCAN_ERROR;
            }
            if (named) {
                PyList_SET_ITEM(fv, i, val);
            } else {
                PyObject *f = PyList_GET_ITEM(fields, i);
                Py_INCREF(f);
                PyList_SET_ITEM(fv, 2 * i, f);
                PyList_SET_ITEM(fv, 2 * i + 1, val);
            }
        }
        if ((p = read_el(b, stop, p, &e)) < 0) { /* lp_count */
            Py_DECREF(fv);
            return SCAN_BAIL;
        }
        if (dicts) {
            pair = dict_entry(ms, seq, fv);
            Py_DECREF(fv);
            if (pair == NULL) return SCAN_ERROR;
        } else {
            if ((sid = make_id(ms, seq)) == NULL) {
                Py_DECREF(fv);
                return SCAN_ERROR;
            }
            pair = PyTuple_Pack(2, sid, fv);
            Py_DECREF(sid);
            Py_DECREF(fv);
            if (pair == NULL) return SCAN_ERROR;
        }
        if (PyList_Append(out, pair) < 0) {
            Py_DECREF(pair);
            return SCAN_ERROR;
        }
        Py_DECREF(pair);
        if (limit > 0 && PyList_GET_SIZE(out) >= limit) return SCAN_STOP;
    }
}

static PyObject *scan_forward(PyObject *self, PyObject *args)
{
    Py_buffer node;
    unsigned long long mms, mseq, sms, sseq, ems, eseq;
    Py_ssize_t limit, before;
    PyObject *out, *fields;
    int outcome, dicts = 0;

    (void)self;
    if (!PyArg_ParseTuple(args, "y*KKKKKKnO!|p:scan_forward", &node, &mms, &mseq, &sms, &sseq,
                          &ems, &eseq, &limit, &PyList_Type, &out, &dicts))
        return NULL;
    before = PyList_GET_SIZE(out);
    fields = PyList_New(0);
    if (fields == NULL) {
        PyBuffer_Release(&node);
        return NULL;
    }
    outcome = scan((const unsigned char *)node.buf, node.len, mms, mseq, sms, sseq, ems, eseq,
                   limit, out, fields, dicts);
    Py_DECREF(fields);
    PyBuffer_Release(&node);
    if (outcome == SCAN_BAIL || outcome == SCAN_ERROR) {
        /* leave `out` as it was given, keeping a pending exception aside meanwhile */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (PyList_SetSlice(out, before, PyList_GET_SIZE(out), NULL) < 0) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            return NULL;
        }
        if (outcome == SCAN_ERROR) {
            PyErr_Restore(type, value, tb);
            return NULL;
        }
        Py_RETURN_NONE;
    }
    if (outcome == SCAN_STOP) Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

/* ----------------------------------------------------------------- RESP of a node's entries
 *
 * scan_resp(node, master_ms, master_seq, start_ms, start_seq, end_ms, end_seq, limit, out,
 * reverse=False) -> int | None: append to the bytearray `out` the RESP bytes of the node's live
 * entries with start <= id <= end -- each *2, the ID's bulk, the fields' array -- ascending, or
 * descending with `reverse`, at most `limit` of them (0: no limit); the number written.  What
 * rstore.codec.stream_node.scan_resp_py writes, with no Python object per entry.  None (and
 * `out` unchanged) for anything the Python version must look at. */

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} growbuf;

static int gb_room(growbuf *g, Py_ssize_t more)
{
    if (g->len + more <= g->cap) return 1;
    Py_ssize_t cap = g->cap ? g->cap : 4096;
    while (cap < g->len + more) cap *= 2;
    char *p = PyMem_Realloc(g->p, (size_t)cap);
    if (p == NULL) return 0;
    g->p = p;
    g->cap = cap;
    return 1;
}

/* "<prefix><n>\r\n" */
static int gb_header(growbuf *g, char prefix, unsigned long long n)
{
    char tmp[24];
    int k = 0, i;
    if (!gb_room(g, 24)) return 0;
    g->p[g->len++] = prefix;
    do tmp[k++] = (char)('0' + n % 10); while (n /= 10);
    for (i = k - 1; i >= 0; i--) g->p[g->len++] = tmp[i];
    g->p[g->len++] = '\r';
    g->p[g->len++] = '\n';
    return 1;
}

/* A bulk string of an element as clients see it (integers as decimal text). */
static int gb_element(growbuf *g, const unsigned char *b, const element *e)
{
    if (e->is_int) {
        char text[24];
        int n = snprintf(text, sizeof text, "%lld", (long long)e->ival);
        if (!gb_header(g, '$', (unsigned long long)n) || !gb_room(g, n + 2)) return 0;
        memcpy(g->p + g->len, text, (size_t)n);
        g->len += n;
    } else {
        if (!gb_header(g, '$', (unsigned long long)e->str_len) || !gb_room(g, e->str_len + 2))
            return 0;
        memcpy(g->p + g->len, b + e->str_at, (size_t)e->str_len);
        g->len += e->str_len;
    }
    g->p[g->len++] = '\r';
    g->p[g->len++] = '\n';
    return 1;
}

/* The entry's ID bulk and its array header: "*2\r\n$<n>\r\n<ms>-<seq>\r\n*<k>\r\n". */
static int gb_entry_head(growbuf *g, uint64_t ms, uint64_t seq, long long k)
{
    char buf[48], *q = buf + sizeof buf;
    Py_ssize_t n;
    do *--q = (char)('0' + seq % 10); while (seq /= 10);
    *--q = '-';
    do *--q = (char)('0' + ms % 10); while (ms /= 10);
    n = (Py_ssize_t)(buf + sizeof buf - q);
    if (!gb_room(g, 4) ) return 0;
    memcpy(g->p + g->len, "*2\r\n", 4);
    g->len += 4;
    if (!gb_header(g, '$', (unsigned long long)n) || !gb_room(g, n + 2)) return 0;
    memcpy(g->p + g->len, q, (size_t)n);
    g->len += n;
    g->p[g->len++] = '\r';
    g->p[g->len++] = '\n';
    return gb_header(g, '*', (unsigned long long)k);
}

enum { RESP_OK = 0, RESP_BAIL = 1, RESP_NOMEM = 2 };

/* The RESP of every live entry in range, ascending, into `g`, each entry's start offset in
 * `starts` (grown as needed); stops after `limit` entries when `forward_limit`. */
static int resp_entries(const unsigned char *b, Py_ssize_t len, uint64_t mms, uint64_t mseq,
                        uint64_t sms, uint64_t sseq, uint64_t ems, uint64_t eseq,
                        Py_ssize_t forward_limit, growbuf *g, Py_ssize_t **starts,
                        Py_ssize_t *count, Py_ssize_t *cap)
{
    Py_ssize_t stop = len - 1, p, nfields, i, fields_at;
    element e;

    if ((p = node_master(b, len, &nfields, &fields_at)) < 0) return RESP_BAIL;
    for (;;) {
        entry_head h;
        int64_t nvals;
        int named, next;
        Py_ssize_t f = fields_at;

        next = next_live(b, len, &p, mms, mseq, nfields, sms, sseq, ems, eseq, &h);
        if (next == NEXT_BAIL) return RESP_BAIL;
        if (next != NEXT_LIVE) return RESP_OK;
        nvals = h.nvals;
        named = h.named;
        if (*count == *cap) {
            Py_ssize_t ncap = *cap ? *cap * 2 : 256;
            Py_ssize_t *ns = PyMem_Realloc(*starts, (size_t)ncap * sizeof **starts);
            if (ns == NULL) return RESP_NOMEM;
            *starts = ns;
            *cap = ncap;
        }
        (*starts)[(*count)++] = g->len;
        if (!gb_entry_head(g, h.ms, h.seq, named ? nvals : 2 * nvals)) return RESP_NOMEM;
        for (i = 0; i < nvals; i++) {
            if (!named) { /* the master's field, then the value */
                element fe;
                if ((f = read_el(b, stop, f, &fe)) < 0) return RESP_BAIL;
                if (!gb_element(g, b, &fe)) return RESP_NOMEM;
            }
            if ((p = read_el(b, stop, p, &e)) < 0) return RESP_BAIL;
            if (!gb_element(g, b, &e)) return RESP_NOMEM;
        }
        if ((p = read_el(b, stop, p, &e)) < 0) return RESP_BAIL; /* lp_count */
        if (forward_limit > 0 && *count >= forward_limit) return RESP_OK;
    }
}

static PyObject *scan_resp(PyObject *self, PyObject *args)
{
    Py_buffer node;
    unsigned long long mms, mseq, sms, sseq, ems, eseq;
    Py_ssize_t limit, count = 0, cap = 0, *starts = NULL, take, i, at, size;
    PyObject *out;
    int reverse = 0, outcome;
    growbuf g = {NULL, 0, 0};

    (void)self;
    if (!PyArg_ParseTuple(args, "y*KKKKKKnO!|p:scan_resp", &node, &mms, &mseq, &sms, &sseq,
                          &ems, &eseq, &limit, &PyByteArray_Type, &out, &reverse))
        return NULL;
    outcome = resp_entries((const unsigned char *)node.buf, node.len, mms, mseq, sms, sseq, ems,
                           eseq, reverse ? 0 : limit, &g, &starts, &count, &cap);
    PyBuffer_Release(&node);
    if (outcome != RESP_OK) {
        PyMem_Free(g.p);
        PyMem_Free(starts);
        if (outcome == RESP_NOMEM) return PyErr_NoMemory();
        Py_RETURN_NONE;
    }
    take = limit > 0 && limit < count ? limit : count;
    at = PyByteArray_GET_SIZE(out);
    size = 0;
    if (reverse) { /* the last `take` entries, from the end */
        for (i = count - take; i < count; i++)
            size += (i + 1 < count ? starts[i + 1] : g.len) - starts[i];
    } else {
        size = take ? (take < count ? starts[take] : g.len) : 0;
    }
    if (PyByteArray_Resize(out, at + size) < 0) {
        PyMem_Free(g.p);
        PyMem_Free(starts);
        return NULL;
    }
    if (reverse) {
        char *dst = PyByteArray_AS_STRING(out) + at;
        for (i = count - 1; i >= count - take; i--) {
            Py_ssize_t n = (i + 1 < count ? starts[i + 1] : g.len) - starts[i];
            memcpy(dst, g.p + starts[i], (size_t)n);
            dst += n;
        }
    } else if (size) {
        memcpy(PyByteArray_AS_STRING(out) + at, g.p, (size_t)size);
    }
    PyMem_Free(g.p);
    PyMem_Free(starts);
    return PyLong_FromSsize_t(take);
}

/* ----------------------------------------------------------------- node checking
 *
 * check_node(node, master_ms, master_seq) -> (entries, count, deleted, ascending, last_ms,
 * last_seq, first_live_ms, first_live_seq) or None: the deep check of node_check.h and its
 * facts (-1, -1 for the first live entry when there is none); None for anything that is not
 * plainly valid, and the Python version then decides and explains. */

static PyObject *check_node(PyObject *self, PyObject *args)
{
    Py_buffer node;
    unsigned long long mms, mseq;
    node_facts_t f;
    int ok;

    (void)self;
    if (!PyArg_ParseTuple(args, "y*KK:check_node", &node, &mms, &mseq)) return NULL;
    ok = check_stream_node((const unsigned char *)node.buf, node.len, mms, mseq, &f);
    PyBuffer_Release(&node);
    if (!ok) Py_RETURN_NONE;
    if (f.have_first)
        return Py_BuildValue("(nLLOKKKK)", f.entries, (long long)f.count, (long long)f.deleted,
                             f.ascending ? Py_True : Py_False, f.last_ms, f.last_seq,
                             f.first_ms, f.first_seq);
    return Py_BuildValue("(nLLOKKii)", f.entries, (long long)f.count, (long long)f.deleted,
                         f.ascending ? Py_True : Py_False, f.last_ms, f.last_seq, -1, -1);
}

/* The parts of an entry ((ms, seq), fields) as a scan gives it: the fields (borrowed), with the
 * ID in *ms and *seq; NULL with no exception when the entry is not that shape. */
static PyObject *entry_parts(PyObject *entry, unsigned long long *ms, unsigned long long *seq)
{
    PyObject *sid;
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2) return NULL;
    sid = PyTuple_GET_ITEM(entry, 0);
    if (!PyTuple_CheckExact(sid) || PyTuple_GET_SIZE(sid) != 2 ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(sid, 0)) ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(sid, 1)))
        return NULL;
    *ms = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(sid, 0));
    *seq = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(sid, 1));
    if (PyErr_Occurred()) { /* negative, or past 64 bits */
        PyErr_Clear();
        return NULL;
    }
    return PyTuple_GET_ITEM(entry, 1);
}

/* entries_reply(entries) -> list | None: [[b"<ms>-<seq>", fields], ...] of the entries
 * ((ms, seq), fields) a scan gives (rstore.commands.reply.entries_reply); None when an entry is
 * not that shape (Python then does the work). */
static PyObject *entries_reply(PyObject *self, PyObject *entries)
{
    PyObject *out, *fields, *pair, *text;
    unsigned long long ms, seq;
    Py_ssize_t n, i;
    (void)self;
    if (!PyList_CheckExact(entries)) Py_RETURN_NONE;
    n = PyList_GET_SIZE(entries);
    out = PyList_New(n);
    if (out == NULL) return NULL;
    for (i = 0; i < n; i++) {
        if ((fields = entry_parts(PyList_GET_ITEM(entries, i), &ms, &seq)) == NULL) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        if ((text = id_text(ms, seq)) == NULL || (pair = PyList_New(2)) == NULL) {
            Py_XDECREF(text);
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(pair, 0, text);
        PyList_SET_ITEM(pair, 1, Py_NewRef(fields));
        PyList_SET_ITEM(out, i, pair);
    }
    return out;
}

/* One plain stream ID, "<ms>-<seq>" of 1 to 19 decimal digits each (rstore.ids's _PLAIN_ID):
   1 when b[0..n) is one, with its parts in *ms and *seq. */
static int plain_id(const char *b, Py_ssize_t n, unsigned long long *ms, unsigned long long *seq)
{
    Py_ssize_t i = 0, start;
    unsigned long long *part = ms;
    int k;
    for (k = 0; k < 2; k++, part = seq) {
        *part = 0;
        for (start = i; i < n && b[i] >= '0' && b[i] <= '9'; i++)
            *part = *part * 10 + (unsigned long long)(b[i] - '0');  /* 19 digits fit in 64 bits */
        if (i == start || i - start > 19) return 0;
        if (k == 0 && (i == n || b[i++] != '-')) return 0;
    }
    return i == n;
}

/* parse_ids(args) -> list | None: [(ms, seq), ...] of a list of bytes that are all plain IDs
 * (rstore.ids.parse_ids gives the same); None when one is anything else (Python then parses them
 * all, and raises the error of the first invalid one). */
static PyObject *parse_ids(PyObject *self, PyObject *args)
{
    PyObject *out, *arg, *sid;
    unsigned long long ms, seq;
    Py_ssize_t n, i;
    (void)self;
    if (!PyList_CheckExact(args)) Py_RETURN_NONE;
    n = PyList_GET_SIZE(args);
    out = PyList_New(n);
    if (out == NULL) return NULL;
    for (i = 0; i < n; i++) {
        arg = PyList_GET_ITEM(args, i);
        if (!PyBytes_CheckExact(arg) ||
            !plain_id(PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg), &ms, &seq)) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        sid = make_id(ms, seq);
        if (sid == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, sid);
    }
    return out;
}

/* dict_entries(entries) -> list | None: [(b"<ms>-<seq>", {field: value}), ...] of the entries
 * ((ms, seq), [field, value, ...]) a scan gives (rstore.codec.stream_node.dict_entry each); None
 * when an entry is not that shape (Python then does the work). */
static PyObject *dict_entries(PyObject *self, PyObject *entries)
{
    PyObject *out, *fields, *item;
    unsigned long long ms, seq;
    Py_ssize_t n, i;
    (void)self;
    if (!PyList_CheckExact(entries)) Py_RETURN_NONE;
    n = PyList_GET_SIZE(entries);
    if ((out = PyList_New(n)) == NULL) return NULL;
    for (i = 0; i < n; i++) {
        fields = entry_parts(PyList_GET_ITEM(entries, i), &ms, &seq);
        if (fields == NULL || !PyList_CheckExact(fields) || PyList_GET_SIZE(fields) % 2) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        if ((item = dict_entry(ms, seq, fields)) == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"entries_reply", entries_reply, METH_O,
     "entries_reply(entries) -> list | None\n\n[[b'<ms>-<seq>', fields], ...] of scanned "
     "entries ((ms, seq), fields); None when one is not that shape."},
    {"dict_entries", dict_entries, METH_O,
     "dict_entries(entries) -> list | None\n\n[(b'<ms>-<seq>', {field: value}), ...] of "
     "scanned entries ((ms, seq), [field, value, ...]); None when one is not that shape."},
    {"parse_ids", parse_ids, METH_O,
     "parse_ids(args) -> list | None\n\n[(ms, seq), ...] of a list of plain IDs "
     "(b'<ms>-<seq>', 1 to 19 digits each); None when one is anything else."},
    {"check_node", check_node, METH_VARARGS,
     "check_node(node, master_ms, master_seq) -> (entries, count, deleted, ascending, last_ms, "
     "last_seq, first_live_ms, first_live_seq) | None\n\nDeep validation of a stream node "
     "(as rstore.codec.node_validate.validate_node) and its ID facts; None when not plainly "
     "valid."},
    {"scan_resp", scan_resp, METH_VARARGS,
     "scan_resp(node, master_ms, master_seq, start_ms, start_seq, end_ms, end_seq, limit, out, "
     "reverse=False) -> int | None\n\nAppend to the bytearray out the RESP of the node's live "
     "entries in range (descending with reverse), at most limit; how many.  None (out "
     "unchanged) when only the Python version handles the node."},
    {"scan_forward", scan_forward, METH_VARARGS,
     "scan_forward(node, master_ms, master_seq, start_ms, start_seq, end_ms, end_seq, limit, "
     "out, dicts=False) -> bool | None\n\nLike rstore.codec.stream_node.scan_forward (with "
     "dicts, entries as (b'<ms>-<seq>', {field: value})); None when the node holds something "
     "only the Python version handles (out is then left unchanged)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups", "C accelerator for rstore.codec (optional).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    int i;
    for (i = 0; i < 128; i++) {
        small_text[i] = PyBytes_FromFormat("%d", i);
        if (small_text[i] == NULL) return NULL;
    }
    return PyModule_Create(&module);
}
