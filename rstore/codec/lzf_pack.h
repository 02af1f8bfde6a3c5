/*
 * LZF compression for rstore/codec/_rdbpack.c: rstore.codec.lzf.py_compress in C (the port
 * that reproduces liblzf as Redis builds it, token for token; docs/rdb.md#lzf), so that nodes
 * read from a store's map are compressed where they lie, with no copy and no call into Python.
 *
 * Its table: 2^16 slots of positions, each tagged by adding `lzf_base`, which moves past every
 * position of a call, so one call never sees the previous ones' entries (the dict of the Python
 * port, without clearing 256 KiB per string).  The includer holds the GIL throughout a call, so
 * one static table serves.
 */
#ifndef RSTORE_LZF_PACK_H
#define RSTORE_LZF_PACK_H

#include <stdint.h>
#include <string.h>

#define LZF_HLOG 16
#define LZF_HSIZE (1u << LZF_HLOG)
#define LZF_MAX_LIT 32
#define LZF_MAX_OFF (1 << 13)
#define LZF_MAX_REF ((1 << 8) + (1 << 3))

static uint32_t lzf_table[LZF_HSIZE];
static uint32_t lzf_base;

static uint32_t lzf_hash(const unsigned char *p)
{
    uint32_t v = ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2];
    return ((v >> 8) - v * 5) & (LZF_HSIZE - 1);
}

/* `in` compressed into `out` (room for max_len + 8 bytes): its length, or 0 when it does not
   fit in max_len bytes (then Redis stores the string raw). */
static Py_ssize_t lzf_pack(const unsigned char *in, Py_ssize_t n, unsigned char *out,
                           Py_ssize_t max_len)
{
    Py_ssize_t ip = 0, op = 1, lit = 0, len, maxlen, ref, off, k;
    uint32_t base, entry, *slot;

    if (n <= 0 || max_len <= 0 || n >= (Py_ssize_t)(UINT32_MAX / 2)) return 0;
    if (lzf_base > UINT32_MAX - (uint32_t)n - 2) {
        memset(lzf_table, 0, sizeof lzf_table);
        lzf_base = 0;
    }
    base = lzf_base;
    lzf_base += (uint32_t)n + 1;
    out[0] = 0; /* the header of the current literal run */
    while (ip < n - 2) {
        slot = &lzf_table[lzf_hash(in + ip)];
        entry = *slot;
        *slot = base + (uint32_t)ip + 1;
        if (entry > base + 1) { /* a position of this string, after the first */
            ref = (Py_ssize_t)(entry - base - 1);
            off = ip - ref - 1;
            if (off < LZF_MAX_OFF && in[ref] == in[ip] && in[ref + 1] == in[ip + 1] &&
                in[ref + 2] == in[ip + 2]) {
                len = 2;
                maxlen = n - ip - len;
                if (maxlen > LZF_MAX_REF) maxlen = LZF_MAX_REF;
                if (maxlen > 16) { /* liblzf compares 3..18 unrolled, without the maxlen check */
                    for (k = 3; k < 19; k++) {
                        len = k;
                        if (in[ref + k] != in[ip + k]) break;
                    }
                    if (k == 19) {
                        len = 18;
                        do len++;
                        while (len < maxlen && in[ref + len] == in[ip + len]);
                    }
                } else {
                    do len++;
                    while (len < maxlen && in[ref + len] == in[ip + len]);
                }
                if (op - (lit == 0) + 4 >= max_len) return 0;
                if (lit)
                    out[op - lit - 1] = (unsigned char)(lit - 1);
                else
                    op--;
                k = len - 2;
                if (k < 7) {
                    out[op++] = (unsigned char)((off >> 8) + (k << 5));
                } else {
                    out[op++] = (unsigned char)((off >> 8) + 0xE0);
                    out[op++] = (unsigned char)(k - 7);
                }
                out[op++] = (unsigned char)(off & 0xFF);
                out[op++] = 0;
                lit = 0;
                ip += len;
                if (ip >= n - 2) break;
                lzf_table[lzf_hash(in + ip - 2)] = base + (uint32_t)(ip - 2) + 1;
                lzf_table[lzf_hash(in + ip - 1)] = base + (uint32_t)(ip - 1) + 1;
                continue;
            }
        }
        if (op >= max_len) return 0;
        out[op++] = in[ip++];
        if (++lit == LZF_MAX_LIT) {
            out[op - lit - 1] = LZF_MAX_LIT - 1;
            out[op++] = 0;
            lit = 0;
        }
    }
    if (op + 3 > max_len) return 0;
    while (ip < n) {
        out[op++] = in[ip++];
        if (++lit == LZF_MAX_LIT) {
            out[op - lit - 1] = LZF_MAX_LIT - 1;
            out[op++] = 0;
            lit = 0;
        }
    }
    if (lit)
        out[op - lit - 1] = (unsigned char)(lit - 1);
    else
        op--;
    return op;
}

#endif
