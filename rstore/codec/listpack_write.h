/* Writing listpack elements as Redis's lpAppend does, for the C accelerators (_append.c).
 *
 * A string that is a canonical int64 decimal (Redis's string2ll) becomes an integer element in
 * the smallest integer encoding; any other string a 6-bit, 12-bit or 32-bit length string.
 * Every element is followed by its backlen (see listpack_read.h for the encodings).  The
 * Python reference is rstore.codec.listpack (encode_value, encode_int, encode_backlen).
 */
#ifndef RSTORE_LISTPACK_WRITE_H
#define RSTORE_LISTPACK_WRITE_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Canonical signed 64-bit decimal (Redis's string2ll); 1 and *v on success. */
static int string2ll(const unsigned char *s, Py_ssize_t n, int64_t *v)
{
    Py_ssize_t i = 0;
    int neg = 0;
    uint64_t u = 0;

    if (n == 0 || n > 20) return 0;
    if (n == 1 && s[0] == '0') {
        *v = 0;
        return 1;
    }
    if (s[0] == '-') {
        neg = 1;
        i = 1;
        if (n == 1) return 0;
    }
    if (s[i] < '1' || s[i] > '9') return 0;
    for (; i < n; i++) {
        unsigned d;
        if (s[i] < '0' || s[i] > '9') return 0;
        d = (unsigned)(s[i] - '0');
        if (u > (UINT64_MAX - d) / 10) return 0;
        u = u * 10 + d;
    }
    if (neg) {
        if (u > (uint64_t)INT64_MAX + 1) return 0;
        *v = (int64_t)(0 - u);
    } else {
        if (u > (uint64_t)INT64_MAX) return 0;
        *v = (int64_t)u;
    }
    return 1;
}

/* Write the backlen of an element of `size` bytes at out; its length. */
static Py_ssize_t put_backlen(unsigned char *out, Py_ssize_t size)
{
    if (size <= 127) {
        out[0] = (unsigned char)size;
        return 1;
    }
    if (size < 16383) {
        out[0] = (unsigned char)(size >> 7);
        out[1] = (unsigned char)((size & 127) | 128);
        return 2;
    }
    if (size < 2097151) {
        out[0] = (unsigned char)(size >> 14);
        out[1] = (unsigned char)(((size >> 7) & 127) | 128);
        out[2] = (unsigned char)((size & 127) | 128);
        return 3;
    }
    if (size < 268435455) {
        out[0] = (unsigned char)(size >> 21);
        out[1] = (unsigned char)(((size >> 14) & 127) | 128);
        out[2] = (unsigned char)(((size >> 7) & 127) | 128);
        out[3] = (unsigned char)((size & 127) | 128);
        return 4;
    }
    out[0] = (unsigned char)((size >> 28) & 0xFF);
    out[1] = (unsigned char)(((size >> 21) & 127) | 128);
    out[2] = (unsigned char)(((size >> 14) & 127) | 128);
    out[3] = (unsigned char)(((size >> 7) & 127) | 128);
    out[4] = (unsigned char)((size & 127) | 128);
    return 5;
}

/* An integer element in Redis's smallest form (at most 10 bytes); its length. */
static Py_ssize_t put_int(unsigned char *out, int64_t v)
{
    int width, i;
    if (v >= 0 && v <= 127) {
        out[0] = (unsigned char)v;
        out[1] = 1;
        return 2;
    }
    if (v >= -4096 && v <= 4095) {
        uint64_t u = (uint64_t)v & 0x1FFF;
        out[0] = (unsigned char)(0xC0 | (u >> 8));
        out[1] = (unsigned char)(u & 0xFF);
        out[2] = 2;
        return 3;
    }
    if (v >= -32768 && v <= 32767) {
        out[0] = 0xF1;
        width = 2;
    } else if (v >= -8388608 && v <= 8388607) {
        out[0] = 0xF2;
        width = 3;
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        out[0] = 0xF3;
        width = 4;
    } else {
        out[0] = 0xF4;
        width = 8;
    }
    for (i = 0; i < width; i++) out[1 + i] = (unsigned char)(((uint64_t)v >> (8 * i)) & 0xFF);
    out[1 + width] = (unsigned char)(width + 1);
    return width + 2;
}

/* The bytes `encode_value` gives for s (at most len + 10); its length. */
static Py_ssize_t put_value(unsigned char *out, const unsigned char *s, Py_ssize_t n)
{
    int64_t v;
    Py_ssize_t head;
    if (n && ((s[0] >= '0' && s[0] <= '9') || s[0] == '-') && string2ll(s, n, &v))
        return put_int(out, v);
    if (n < 64) {
        out[0] = (unsigned char)(0x80 | n);
        head = 1;
    } else if (n < 4096) {
        out[0] = (unsigned char)(0xE0 | (n >> 8));
        out[1] = (unsigned char)(n & 0xFF);
        head = 2;
    } else {
        out[0] = 0xF0;
        out[1] = (unsigned char)(n & 0xFF);
        out[2] = (unsigned char)((n >> 8) & 0xFF);
        out[3] = (unsigned char)((n >> 16) & 0xFF);
        out[4] = (unsigned char)((n >> 24) & 0xFF);
        head = 5;
    }
    memcpy(out + head, s, (size_t)n);
    return head + n + put_backlen(out + head + n, head + n);
}

#endif
