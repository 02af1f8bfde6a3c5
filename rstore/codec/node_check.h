/* The deep check of a stream node, shared by the C accelerators (_speedups.c: check_node;
 * _rdbread.c: the node loop of restoring an RDB file).
 *
 * It is the deep validation of rstore.codec.node_validate.validate_node -- the listpack walk
 * with every backlen checked, the master entry, each entry's element count and lp-count, the
 * entry total -- plus the facts a restore needs: whether the entry IDs rise strictly from the
 * master ID, the last entry's ID and the first live entry's ID.  It answers "plainly valid" or
 * "not"; the Python version decides and explains everything that is not plainly valid.
 *
 * One pass: the stream-node layout covers every element up to the end byte, so reading the
 * layout element by element, each one's backlen checked as it is read, walks the whole
 * listpack once (the element total is then compared with the header's count).
 */
#ifndef RSTORE_NODE_CHECK_H
#define RSTORE_NODE_CHECK_H

#include "listpack_read.h"

typedef struct {
    Py_ssize_t entries; /* physical entries, tombstones included */
    int64_t count;      /* the master's live count */
    int64_t deleted;    /* the master's deleted count */
    int ascending;      /* entry IDs rise strictly, from the master ID on */
    uint64_t last_ms, last_seq;
    int have_first; /* a live entry exists */
    uint64_t first_ms, first_seq;
} node_facts_t;

/* Read the element at p as read_el does, and also check its backlen: read right to left, it
 * must say exactly the element's size in exactly the bytes Redis would use.  The next
 * element's offset, or -1. */
static Py_ssize_t read_el_checked(const unsigned char *b, Py_ssize_t stop, Py_ssize_t p,
                                  element *e)
{
    Py_ssize_t next = read_el(b, stop, p, e), q, size, bl, decoded, shift, nbytes;
    if (next < 0) return -1;
    q = next - 1;
    decoded = b[q] & 127;
    if (!(b[q] & 128)) {
        /* the common case: a one-byte backlen, which fits sizes up to 127 */
        return decoded == q - p && decoded <= 127 ? next : -1;
    }
    shift = 7;
    nbytes = 1;
    while (b[q] & 128) {
        q--;
        nbytes++;
        if (nbytes > 5 || q <= p) return -1;
        decoded |= (Py_ssize_t)(b[q] & 127) << shift;
        shift += 7;
    }
    size = q - p; /* the bytes before the backlen */
    bl = next - q;
    return decoded == size && bl == backlen_size(size) ? next : -1;
}

/* The integer element at p, as read_el_checked reads it; -1 if it is not an integer.  The
 * common small forms are read inline: a 7-bit integer (its backlen must be 1) and a 13-bit
 * one (backlen 2); any other byte in the backlen's place fails read_el_checked too. */
static inline Py_ssize_t read_int_checked(const unsigned char *b, Py_ssize_t stop, Py_ssize_t p,
                                          int64_t *v)
{
    element e;
    Py_ssize_t next;
    if (p + 3 <= stop) {
        unsigned int c = b[p];
        if (c < 0x80) {
            if (b[p + 1] != 1) return -1;
            *v = c;
            return p + 2;
        }
        if ((c & 0xE0) == 0xC0) {
            unsigned int u = ((c & 0x1F) << 8) | b[p + 1];
            if (b[p + 2] != 2) return -1;
            *v = u >= 4096 ? (int64_t)u - 8192 : (int64_t)u;
            return p + 3;
        }
    }
    next = read_el_checked(b, stop, p, &e);
    if (next < 0 || !e.is_int) return -1;
    *v = e.ival;
    return next;
}

/* The offset after the element at p, its backlen checked as read_el_checked checks it, or -1
 * (the value is not decoded).  Inline: a 7-bit integer, a string of up to 63 bytes (backlen:
 * its size, 1 + length, always one byte) and a 16-bit integer (backlen 3). */
static inline Py_ssize_t skip_el_checked(const unsigned char *b, Py_ssize_t stop, Py_ssize_t p)
{
    element e;
    if (p < stop) {
        unsigned int c = b[p];
        Py_ssize_t next;
        if (c < 0x80) {
            next = p + 2;
            return next <= stop && b[p + 1] == 1 ? next : -1;
        }
        if (c < 0xC0) {
            next = p + (Py_ssize_t)(c & 0x3F) + 2;
            return next <= stop && b[next - 1] == (c & 0x3F) + 1 ? next : -1;
        }
        if (c == 0xF1) {
            next = p + 4;
            return next <= stop && b[p + 3] == 3 ? next : -1;
        }
    }
    return read_el_checked(b, stop, p, &e);
}

/* Check the node b[0..n) whose master ID is (mms, mseq); 1 and the facts in *f when it is
 * plainly valid (the entries' deleted flags agreeing with the master's live count included),
 * else 0. */
static int check_stream_node(const unsigned char *b, Py_ssize_t n, uint64_t mms, uint64_t mseq,
                             node_facts_t *f)
{
    Py_ssize_t stop = n - 1, p, i;
    int64_t nmaster, terminator, flagged_live = 0, elements;
    unsigned int header_count;
    int have_prev = 0;

    f->entries = 0;
    f->ascending = 1;
    f->have_first = 0;
    f->last_ms = f->last_seq = f->first_ms = f->first_seq = 0;
    if (n <= 7) return 0;
    if (((Py_ssize_t)b[0] | (Py_ssize_t)b[1] << 8 | (Py_ssize_t)b[2] << 16 |
         (Py_ssize_t)b[3] << 24) != n || b[stop] != 0xFF)
        return 0;
    header_count = b[4] | (unsigned int)b[5] << 8;
    p = HEADER_SIZE;
    if ((p = read_int_checked(b, stop, p, &f->count)) < 0) return 0;
    if ((p = read_int_checked(b, stop, p, &f->deleted)) < 0) return 0;
    if ((p = read_int_checked(b, stop, p, &nmaster)) < 0) return 0;
    if (f->count < 0 || f->deleted < 0 || nmaster < 0 || nmaster > n) return 0;
    for (i = 0; i < nmaster; i++)
        if ((p = skip_el_checked(b, stop, p)) < 0) return 0;
    if ((p = read_int_checked(b, stop, p, &terminator)) < 0 || terminator != 0) return 0;
    elements = 4 + nmaster;
    while (p < stop) {
        int64_t flags, ms_d, seq_d, nvals, expected, lp_count;
        uint64_t ms, seq;
        if ((p = read_int_checked(b, stop, p, &flags)) < 0) return 0;
        if ((p = read_int_checked(b, stop, p, &ms_d)) < 0) return 0;
        if ((p = read_int_checked(b, stop, p, &seq_d)) < 0) return 0;
        if (flags & FLAG_SAMEFIELDS) {
            nvals = nmaster;
            expected = nmaster + 3;
        } else {
            int64_t nf;
            if ((p = read_int_checked(b, stop, p, &nf)) < 0 || nf < 0 || nf > n) return 0;
            nvals = 2 * nf;
            expected = 2 * nf + 4;
        }
        for (i = 0; i < nvals; i++)
            if ((p = skip_el_checked(b, stop, p)) < 0) return 0;
        if (p >= stop) return 0;
        if ((p = read_int_checked(b, stop, p, &lp_count)) < 0 || lp_count != expected) return 0;
        elements += expected + 1; /* flags, ID deltas, [field count], values, lp-count */
        ms = mms + (uint64_t)ms_d;
        seq = mseq + (uint64_t)seq_d;
        if (ms < mms || (ms == mms && seq < mseq)) f->ascending = 0;
        if (have_prev && (ms < f->last_ms || (ms == f->last_ms && seq <= f->last_seq)))
            f->ascending = 0;
        f->last_ms = ms;
        f->last_seq = seq;
        have_prev = 1;
        if (!(flags & FLAG_DELETED)) {
            flagged_live++;
            if (!f->have_first) {
                f->first_ms = ms;
                f->first_seq = seq;
                f->have_first = 1;
            }
        }
        f->entries++;
    }
    /* the entries' deleted flags must agree with the master's live count (Redis checks only
     * count + deleted); a node where they do not is left to the Python version to refuse */
    return p == stop && f->entries == f->count + f->deleted && have_prev &&
           flagged_live == f->count && (header_count == 65535 || header_count == elements);
}

#endif
