/* Reading listpack elements, shared by the C accelerators (_speedups.c, _columns.c).
 *
 * Listpack element encodings (first byte):
 *
 *   0xxxxxxx                 7-bit unsigned int                       backlen 1
 *   10LLLLLL <L bytes>       string up to 63 bytes                    backlen 1
 *   110xxxxx xxxxxxxx        13-bit signed int                        backlen 1
 *   1110LLLL LLLLLLLL <L>    string up to 4095 bytes                  backlen 1-2
 *   11110000 <u32 LE L> <L>  string up to 2^32-1 bytes                backlen 1-5
 *   0xF1 / F2 / F3 / F4      16 / 24 / 32 / 64-bit signed int, LE     backlen 1
 *
 * The backlen is sized by the element's encoding+payload size with Redis's thresholds
 * (<= 127: 1, < 16383: 2, < 2097151: 3, < 268435455: 4, else 5).  Every read is checked
 * against `stop` (the offset of the listpack's end byte): a damaged node cannot make a reader
 * look outside it.
 */
#ifndef RSTORE_LISTPACK_READ_H
#define RSTORE_LISTPACK_READ_H

#include <Python.h>
#include <stdint.h>

#define FLAG_DELETED 1
#define FLAG_SAMEFIELDS 2
#define HEADER_SIZE 6

typedef struct {
    int is_int;
    int64_t ival;
    Py_ssize_t str_at; /* offset of the string's bytes */
    Py_ssize_t str_len;
} element;

static Py_ssize_t backlen_size(Py_ssize_t size)
{
    if (size <= 127) return 1;
    if (size < 16383) return 2;
    if (size < 2097151) return 3;
    if (size < 268435455) return 4;
    return 5;
}

/* Decode the element at p (which must lie before `stop`, the EOF byte); return the offset
 * of the next element, or -1 if the element is not well formed within the buffer. */
static Py_ssize_t read_el(const unsigned char *b, Py_ssize_t stop, Py_ssize_t p, element *e)
{
    unsigned int c;
    Py_ssize_t n, size, next;

    if (p >= stop) return -1;
    c = b[p];
    e->is_int = 1;
    if (c < 0x80) {
        e->ival = c;
        next = p + 2;
    } else if (c < 0xC0) {
        n = c & 0x3F;
        e->is_int = 0;
        e->str_at = p + 1;
        e->str_len = n;
        next = p + 1 + n + 1;
    } else if (c < 0xE0) {
        unsigned int u;
        if (p + 1 >= stop) return -1;
        u = ((c & 0x1F) << 8) | b[p + 1];
        e->ival = u >= 4096 ? (int64_t)u - 8192 : (int64_t)u;
        next = p + 3;
    } else if (c < 0xF0) {
        if (p + 1 >= stop) return -1;
        n = (Py_ssize_t)(((c & 0x0F) << 8) | b[p + 1]);
        e->is_int = 0;
        e->str_at = p + 2;
        e->str_len = n;
        size = 2 + n;
        next = p + size + backlen_size(size);
    } else if (c == 0xF0) {
        uint32_t u;
        if (p + 4 >= stop) return -1;
        u = (uint32_t)b[p + 1] | ((uint32_t)b[p + 2] << 8) | ((uint32_t)b[p + 3] << 16) |
            ((uint32_t)b[p + 4] << 24);
        if ((Py_ssize_t)u > stop) return -1;
        n = (Py_ssize_t)u;
        e->is_int = 0;
        e->str_at = p + 5;
        e->str_len = n;
        size = 5 + n;
        next = p + size + backlen_size(size);
    } else if (c >= 0xF1 && c <= 0xF4) {
        int width = c == 0xF1 ? 2 : c == 0xF2 ? 3 : c == 0xF3 ? 4 : 8;
        uint64_t u = 0;
        int i;
        if (p + width >= stop) return -1;
        for (i = width - 1; i >= 0; i--) u = (u << 8) | b[p + 1 + i];
        if (width < 8 && (u >> (8 * width - 1)) & 1) u |= ~(uint64_t)0 << (8 * width);
        e->ival = (int64_t)u;
        next = p + 1 + width + 1;
    } else {
        return -1;
    }
    return next <= stop ? next : -1;
}

/* Read an element that must be an integer; -1 if it is not (or is malformed). */
static Py_ssize_t read_int(const unsigned char *b, Py_ssize_t stop, Py_ssize_t p, int64_t *v)
{
    element e;
    Py_ssize_t next = read_el(b, stop, p, &e);
    if (next < 0 || !e.is_int) return -1;
    *v = e.ival;
    return next;
}

#endif
