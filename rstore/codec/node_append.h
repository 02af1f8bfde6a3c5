/* A stream node appended to in C: what _append.c (XADD's entries, runs of automatic IDs) and
 * _append_columns.c (entries of a Columns batch) share.
 *
 * The appender works in three steps: read the master entry (live count, deleted count, field
 * names), encode the new entries into a buffer of their own, then grow the node once: the live
 * count is rewritten (its element may grow, e.g. from 127 to 128, which moves the rest of the
 * node), the entries go where the EOF byte was, and the header's total size and element count
 * follow.  The Python reference is rstore.codec.stream_node.append_entry.
 */
#ifndef RSTORE_NODE_APPEND_H
#define RSTORE_NODE_APPEND_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "listpack_read.h"
#include "listpack_write.h"

/* A field name or value: bytes somewhere (a bytes object's, or a Columns buffer's). */
typedef struct {
    const unsigned char *p;
    Py_ssize_t n;
} span;

/* Whether the element e (read from b) has the text s (integers compared as decimal). */
static int same_text(const unsigned char *b, const element *e, span s)
{
    const char *p = (const char *)s.p;
    Py_ssize_t n = s.n;
    if (e->is_int) {
        char text[24];
        int len = snprintf(text, sizeof text, "%lld", (long long)e->ival);
        return len == n && memcmp(text, p, (size_t)n) == 0;
    }
    return e->str_len == n && memcmp(b + e->str_at, p, (size_t)n) == 0;
}

/* The encoded size of an integer element (what put_int writes). */
static Py_ssize_t int_size(int64_t v)
{
    unsigned char tmp[10];
    return put_int(tmp, v);
}

#define MASTER_FIELDS_INLINE 16
#define SPANS_INLINE 32 /* the fields and values of an entry held without a malloc */

/* A node being appended to: what its master entry says, and the new bytes waiting. */
typedef struct {
    PyObject *node;
    Py_ssize_t len;                  /* the node's length before this append */
    Py_ssize_t count_size;           /* bytes of the live count element as stored */
    int64_t count, used;             /* live entries; entries including tombstones */
    Py_ssize_t nmaster;              /* master field names ... */
    element *mf;                     /* ... read from the node (offsets into it) */
    element mf_inline[MASTER_FIELDS_INLINE];
    unsigned char *buf;              /* the encoded new entries */
    Py_ssize_t buf_len, buf_cap;
    Py_ssize_t added;                /* listpack elements added */
    Py_ssize_t appended;             /* entries added */
} appender;

static void appender_free(appender *a)
{
    if (a->mf != a->mf_inline) PyMem_Free(a->mf);
    PyMem_Free(a->buf);
}

/* Read the master entry of node.  0: ready; 1: not a case for C (nothing set); -1: error
 * (exception set). */
static int appender_open(appender *a, PyObject *node)
{
    const unsigned char *b;
    Py_ssize_t stop, p, q, i;
    int64_t v;
    element e;

    memset(a, 0, sizeof *a);
    a->mf = a->mf_inline;
    a->node = node;
    a->len = PyByteArray_GET_SIZE(node);
    b = (const unsigned char *)PyByteArray_AS_STRING(node);
    stop = a->len - 1;
    if (a->len < HEADER_SIZE + 3 || b[stop] != 0xFF) return 1;
    if ((q = read_int(b, stop, HEADER_SIZE, &a->count)) < 0 || a->count < 0) return 1;
    a->count_size = q - HEADER_SIZE;
    if ((p = read_int(b, stop, q, &v)) < 0 || v < 0) return 1; /* deleted */
    a->used = a->count + v;
    if ((p = read_int(b, stop, p, &v)) < 0 || v < 0 || v > stop) return 1;
    a->nmaster = (Py_ssize_t)v;
    if (a->nmaster > MASTER_FIELDS_INLINE) {
        a->mf = PyMem_Malloc((size_t)a->nmaster * sizeof(element));
        if (a->mf == NULL) {
            a->mf = a->mf_inline;
            PyErr_NoMemory();
            return -1;
        }
    }
    for (i = 0; i < a->nmaster; i++) {
        if ((p = read_el(b, stop, p, &a->mf[i])) < 0) {
            appender_free(a);
            return 1;
        }
    }
    if (read_el(b, stop, p, &e) < 0) { /* the master terminator */
        appender_free(a);
        return 1;
    }
    return 0;
}

/* The node's length if the pending entries were written now. */
static Py_ssize_t appender_len(const appender *a)
{
    return a->len + a->buf_len + int_size(a->count + a->appended) - a->count_size;
}

/* Encode one entry (items: field, value, ...; an even number, at least two) into the
 * buffer; raw_size is the sum of their lengths. */
static int appender_add_spans(appender *a, uint64_t mms, uint64_t mseq, uint64_t ms,
                              uint64_t seq, const span *items, Py_ssize_t n_items,
                              Py_ssize_t raw_size)
{
    const unsigned char *b = (const unsigned char *)PyByteArray_AS_STRING(a->node);
    Py_ssize_t n = n_items / 2, i, need, w;
    int same = a->nmaster == n;
    unsigned char *out;

    for (i = 0; same && i < n; i++) same = same_text(b, &a->mf[i], items[2 * i]);
    need = raw_size + 10 * n_items + 50; /* an element is at most its bytes + 10 */
    if (a->buf_len + need > a->buf_cap) {
        Py_ssize_t cap = 2 * a->buf_cap + need;
        unsigned char *grown = PyMem_Realloc(a->buf, (size_t)cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        a->buf = grown;
        a->buf_cap = cap;
    }
    out = a->buf + a->buf_len;
    w = put_int(out, same ? FLAG_SAMEFIELDS : 0);
    w += put_int(out + w, (int64_t)(ms - mms));
    w += put_int(out + w, (int64_t)(seq - mseq));
    if (!same) w += put_int(out + w, (int64_t)n);
    for (i = same ? 1 : 0; i < n_items; i += same ? 2 : 1)
        w += put_value(out + w, items[i].p, items[i].n);
    w += put_int(out + w, same ? n + 3 : 2 * n + 4); /* lp_count */
    a->buf_len += w;
    a->added += same ? n + 4 : 2 * n + 5;
    a->appended += 1;
    return 0;
}

/* Write the pending entries into the node.  0: done; 1: the node cannot be resized (an exported
 * buffer, or too large): nothing changed, no exception set. */
static int appender_commit(appender *a)
{
    unsigned char *b, cnt[10];
    Py_ssize_t cnt_size, new_len, body_at;
    unsigned cur;

    if (a->appended == 0) return 0;
    cnt_size = put_int(cnt, a->count + a->appended);
    new_len = appender_len(a);
    if (new_len > (Py_ssize_t)UINT32_MAX || PyByteArray_Resize(a->node, new_len) < 0) {
        PyErr_Clear(); /* the Python version decides what to raise */
        return 1;
    }
    b = (unsigned char *)PyByteArray_AS_STRING(a->node);
    body_at = HEADER_SIZE + a->count_size;
    if (cnt_size != a->count_size)
        memmove(b + HEADER_SIZE + cnt_size, b + body_at, (size_t)(a->len - 1 - body_at));
    memcpy(b + HEADER_SIZE, cnt, (size_t)cnt_size);
    memcpy(b + a->len - 1 + cnt_size - a->count_size, a->buf, (size_t)a->buf_len);
    b[new_len - 1] = 0xFF;
    b[0] = (unsigned char)(new_len & 0xFF);
    b[1] = (unsigned char)((new_len >> 8) & 0xFF);
    b[2] = (unsigned char)((new_len >> 16) & 0xFF);
    b[3] = (unsigned char)((new_len >> 24) & 0xFF);
    cur = (unsigned)b[4] | ((unsigned)b[5] << 8);
    if (cur != 65535) {
        Py_ssize_t next = (Py_ssize_t)cur + a->added;
        if (next > 65535) next = 65535;
        b[4] = (unsigned char)(next & 0xFF);
        b[5] = (unsigned char)((next >> 8) & 0xFF);
    }
    return 0;
}

#endif
