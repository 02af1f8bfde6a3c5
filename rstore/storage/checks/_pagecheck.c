/* The walk of one LMDB tree, in C: rstore/storage/checks/pagecheck.py's _Walker.walk, page for page.
 *
 * It reads only the bytes it was given (the mapped data file) and checks every bound before
 * reading, so any file -- zeroed pages, random bytes, truncations -- gives problems, never a
 * crash.  Messages are the Python reference's, word for word: tests compare the two.
 *
 * walk_tree(buf, file_size, psize, last, used, tree, depth, root, integer_keys, kind)
 *   buf        the data file (a buffer of file_size bytes)
 *   used       a bytearray of last+1 bytes: pages already reached (updated)
 *   kind       0 a sub-database, 1 LMDB's main tree (collects sub-database records),
 *              2 the free list (collects free pages)
 * -> (branch, leaf, overflow, entries, pages_walked, problems, subdbs, free_pages)
 *   problems   [(tree, page, what, low, high, key)]; subdbs [(name, record bytes)];
 *   free_pages [(page, listed_in)]
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define HDR 16
#define NODESZ 8
#define P_BRANCH 0x01
#define P_LEAF 0x02
#define KIND_BITS (0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40)
#define P_OVERFLOW 0x04
#define F_BIGDATA 0x01
#define F_SUBDATA 0x02
#define F_DUPDATA 0x04
#define DB_RECORD 48

typedef struct {
    const uint8_t *p;
    Py_ssize_t n; /* -1: no bound */
} Key;

typedef struct {
    uint64_t page;
    int level;
    Key low, high;
} Frame;

typedef struct {
    const uint8_t *buf;
    uint64_t file_size, psize, last;
    uint8_t *used;
    PyObject *tree, *problems, *subdbs, *free_pages;
    int depth, integer_keys, kind;
    uint64_t counts[4], walked;
} Walk;

static uint16_t u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static PyObject *key_obj(Key k) {
    if (k.n < 0) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)k.p, k.n);
}

/* Record a problem (what: a new reference, stolen) about a page, or about the record ``rec``
 * on it.  0 on success, -1 on error. */
static int record_problem(Walk *w, uint64_t page, int has_page, PyObject *what, Key low,
                          Key high, Key rec) {
    if (what == NULL) return -1;
    PyObject *pg = has_page ? PyLong_FromUnsignedLongLong(page) : (Py_INCREF(Py_None), Py_None);
    PyObject *lo = key_obj(low), *hi = key_obj(high), *k = key_obj(rec);
    PyObject *t = (pg && lo && hi && k) ? PyTuple_Pack(6, w->tree, pg, what, lo, hi, k) : NULL;
    Py_XDECREF(pg); Py_XDECREF(lo); Py_XDECREF(hi); Py_XDECREF(k); Py_DECREF(what);
    if (t == NULL) return -1;
    int rc = PyList_Append(w->problems, t);
    Py_DECREF(t);
    return rc;
}

static int problem(Walk *w, uint64_t page, int has_page, PyObject *what, Key low, Key high) {
    Key none = {NULL, -1};
    return record_problem(w, page, has_page, what, low, high, none);
}

/* Why pages page..page+count-1 cannot be read, or NULL with no error set. */
static PyObject *in_file(Walk *w, uint64_t page, uint64_t count) {
    if (page < 2 || count == 0 || page + count - 1 < page || page + count - 1 > w->last)
        return PyUnicode_FromFormat("page number %llu is outside the pages in use (2..%llu)",
                                    (unsigned long long)page, (unsigned long long)w->last);
    if ((page + count) * w->psize > w->file_size)
        return PyUnicode_FromFormat(
            "the file is truncated: page %llu is in use but the file ends at page %llu "
            "(%llu bytes)", (unsigned long long)(page + count - 1),
            (unsigned long long)(w->file_size / w->psize), (unsigned long long)w->file_size);
    return NULL;
}

static int key_cmp(Walk *w, Key a, Key b) {
    if (w->integer_keys) {
        uint64_t x = u64(a.p), y = u64(b.p);
        return x < y ? -1 : x > y;
    }
    Py_ssize_t n = a.n < b.n ? a.n : b.n;
    int c = n ? memcmp(a.p, b.p, (size_t)n) : 0;
    if (c) return c;
    return a.n < b.n ? -1 : a.n > b.n;
}

static int ordered(Walk *w, Key prev, Key key, Key low, Key high) {
    if (prev.n >= 0 && !(key_cmp(w, prev, key) < 0)) return 0;
    if (low.n >= 0 && key_cmp(w, key, low) < 0) return 0;
    return high.n < 0 || key_cmp(w, key, high) < 0;
}

/* Check one leaf node's data.  1: fine, 0: a problem was recorded, -1: error. */
static int leaf_data(Walk *w, Frame *f, unsigned i, uint64_t node, uint64_t size,
                     unsigned nflags, unsigned ksize, Key key) {
    uint64_t off = f->page * w->psize + node + NODESZ + ksize;
    const uint8_t *data;
    PyObject *why = NULL;
    if ((nflags & F_DUPDATA) || ((nflags & F_SUBDATA) && w->kind != 1))
        return record_problem(w, f->page, 1, PyUnicode_FromFormat("node %u has flags 0x%x", i,
                              nflags), f->low, f->high, key) ? -1 : 0;
    if (nflags & F_BIGDATA) {
        if (node + NODESZ + ksize + 8 > w->psize)
            return record_problem(w, f->page, 1, PyUnicode_FromFormat(
                "node %u's overflow reference runs past the page", i), f->low, f->high,
                key) ? -1 : 0;
        uint64_t first = u64(w->buf + off);
        uint64_t pages = (HDR - 1 + size) / w->psize + 1;
        why = in_file(w, first, pages);
        if (why == NULL && PyErr_Occurred()) return -1;
        if (why == NULL) {
            const uint8_t *op = w->buf + first * w->psize;
            uint64_t count = u32(op + 12);
            if (u64(op) != first || !(u16(op + 10) & P_OVERFLOW) || count < pages) {
                why = PyUnicode_FromFormat("the overflow run at page %llu has a bad header "
                                           "(node %u)", (unsigned long long)first, i);
            } else if (first + count - 1 > w->last) {
                why = PyUnicode_FromFormat("the overflow run at page %llu ends past the pages "
                                           "in use", (unsigned long long)first);
            } else {
                for (uint64_t j = 0; j < count && why == NULL; j++)
                    if (w->used[first + j])
                        why = PyUnicode_FromFormat("the overflow run at page %llu overlaps "
                                                   "another page in use",
                                                   (unsigned long long)first);
                if (why == NULL) {
                    memset(w->used + first, 1, (size_t)count);
                    w->counts[2] += count;
                    w->walked += count;
                }
            }
        }
        if (why != NULL) return record_problem(w, f->page, 1, why, f->low, f->high, key) ? -1 : 0;
        data = w->buf + first * w->psize + HDR;
    } else {
        if (node + NODESZ + ksize + size > w->psize)
            return record_problem(w, f->page, 1, PyUnicode_FromFormat(
                "node %u's data runs past the page", i), f->low, f->high, key) ? -1 : 0;
        data = w->buf + off;
    }
    Key none = {NULL, -1};
    if (w->kind == 1 && (nflags & F_SUBDATA)) {
        if (size != DB_RECORD) {
            PyObject *name = PyBytes_FromStringAndSize((const char *)key.p, key.n);
            if (name == NULL) return -1;
            why = PyUnicode_FromFormat("the record of sub-database %R has %llu bytes", name,
                                       (unsigned long long)size);
            Py_DECREF(name);
            return problem(w, f->page, 1, why, none, none) ? -1 : 0;
        }
        PyObject *t = Py_BuildValue("(y#y#)", key.p, key.n, data, (Py_ssize_t)DB_RECORD);
        if (t == NULL || PyList_Append(w->subdbs, t)) { Py_XDECREF(t); return -1; }
        Py_DECREF(t);
    } else if (w->kind == 2) {
        uint64_t n = size >= 8 ? u64(data) : 0;
        if (size < 8 || n > size / 8 || size != 8 * (n + 1)) {
            if (size < 8)
                why = PyUnicode_FromFormat("a free-page list of %llu bytes claims -1 pages",
                                           (unsigned long long)size);
            else
                why = PyUnicode_FromFormat("a free-page list of %llu bytes claims %llu pages",
                                           (unsigned long long)size, (unsigned long long)n);
            return problem(w, f->page, 1, why, none, none) ? -1 : 0;
        }
        for (uint64_t j = 0; j < n; j++) {
            PyObject *t = Py_BuildValue("(KK)", (unsigned long long)u64(data + 8 * (j + 1)),
                                        (unsigned long long)f->page);
            if (t == NULL || PyList_Append(w->free_pages, t)) { Py_XDECREF(t); return -1; }
            Py_DECREF(t);
        }
    }
    return 1;
}

/* Check one page; push its children.  0 fine or problem recorded, -1 error. */
static int visit(Walk *w, Frame *f, Frame **stack, Py_ssize_t *top, Py_ssize_t *cap) {
    PyObject *why = in_file(w, f->page, 1);
    if (why != NULL) return problem(w, f->page, 1, why, f->low, f->high);
    if (PyErr_Occurred()) return -1;
    if (w->used[f->page])
        return problem(w, f->page, 1, PyUnicode_FromString("the page is reached twice"),
                       f->low, f->high);
    w->used[f->page] = 1;
    w->walked++;
    const uint8_t *pg = w->buf + f->page * w->psize;
    uint64_t pgno = u64(pg);
    unsigned flags = u16(pg + 10), lower = u16(pg + 12), upper = u16(pg + 14);
    if (pgno != f->page)
        return problem(w, f->page, 1, PyUnicode_FromFormat(
            "the page says it is page %llu (zeroed or misplaced)", (unsigned long long)pgno),
            f->low, f->high);
    int leaf = f->level == w->depth;
    if ((flags & KIND_BITS) != (unsigned)(leaf ? P_LEAF : P_BRANCH))
        return problem(w, f->page, 1, PyUnicode_FromFormat(
            "a %s page was expected, its flags are 0x%x", leaf ? "leaf" : "branch", flags),
            f->low, f->high);
    if (lower < HDR || upper > w->psize || lower > upper || (lower - HDR) % 2)
        return problem(w, f->page, 1, PyUnicode_FromFormat(
            "bounds %u..%u are impossible", lower, upper), f->low, f->high);
    unsigned nkeys = (lower - HDR) / 2;
    if (nkeys == 0 || (!leaf && nkeys < 2 && w->kind != 2))
        return problem(w, f->page, 1, PyUnicode_FromFormat(
            "a %s page with %u keys", leaf ? "leaf" : "branch", nkeys), f->low, f->high);
    w->counts[leaf ? 1 : 0]++;
    Key prev = {NULL, -1};
    Py_ssize_t first_child = *top;
    for (unsigned i = 0; i < nkeys; i++) {
        unsigned node = u16(pg + HDR + 2 * i);
        if (node < upper || node + NODESZ > w->psize) {
            *top = first_child;
            return problem(w, f->page, 1, PyUnicode_FromFormat(
                "node %u at offset %u is outside the node area", i, node), f->low, f->high);
        }
        const uint8_t *np = pg + node;
        unsigned lo = u16(np), hi = u16(np + 2), nflags = u16(np + 4), ksize = u16(np + 6);
        if (node + NODESZ + ksize > w->psize) {
            *top = first_child;
            return problem(w, f->page, 1, PyUnicode_FromFormat(
                "node %u's key runs past the page", i), f->low, f->high);
        }
        Key key = {np + NODESZ, (Py_ssize_t)ksize};
        if (leaf || i > 0) {
            if (w->integer_keys && ksize != 8) {
                *top = first_child;
                return problem(w, f->page, 1, PyUnicode_FromFormat(
                    "node %u has a key of %u bytes", i, ksize), f->low, f->high);
            }
            if (!ordered(w, prev, key, f->low, f->high)) {
                *top = first_child;
                return problem(w, f->page, 1, PyUnicode_FromFormat(
                    "node %u's key is out of order", i), f->low, f->high);
            }
            prev = key;
        }
        if (!leaf) {
            if (*top == *cap) {
                Py_ssize_t ncap = *cap * 2;
                Frame *grown = PyMem_Realloc(*stack, (size_t)ncap * sizeof(Frame));
                if (grown == NULL) { PyErr_NoMemory(); return -1; }
                *stack = grown;
                *cap = ncap; /* f is the caller's copy, never inside the stack */
            }
            Frame *c = &(*stack)[(*top)++];
            c->page = (uint64_t)lo | ((uint64_t)hi << 16) | ((uint64_t)nflags << 32);
            c->level = 0; /* filled below, once the page is done */
            c->low = key;
            continue;
        }
        w->counts[3]++;
        int rc = leaf_data(w, f, i, node, (uint64_t)lo | ((uint64_t)hi << 16), nflags, ksize, key);
        if (rc <= 0) return rc;
    }
    return 0;
}

static PyObject *walk_tree(PyObject *self, PyObject *args) {
    Py_buffer buf, used;
    unsigned long long file_size, psize, last, root;
    int depth, integer_keys, kind;
    PyObject *tree;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*KKKw*UiKpi", &buf, &file_size, &psize, &last, &used, &tree,
                          &depth, &root, &integer_keys, &kind))
        return NULL;
    PyObject *result = NULL;
    Frame *stack = NULL;
    Walk w = {0};
    if ((uint64_t)buf.len < file_size || (uint64_t)used.len < last + 1 || psize < 512) {
        PyErr_SetString(PyExc_ValueError, "walk_tree: inconsistent sizes");
        goto done;
    }
    w.buf = buf.buf; w.file_size = file_size; w.psize = psize; w.last = last;
    w.used = used.buf; w.tree = tree; w.depth = depth; w.integer_keys = integer_keys;
    w.kind = kind;
    w.problems = PyList_New(0); w.subdbs = PyList_New(0); w.free_pages = PyList_New(0);
    Py_ssize_t cap = 64, top = 0;
    stack = PyMem_Malloc((size_t)cap * sizeof(Frame));
    if (!w.problems || !w.subdbs || !w.free_pages || !stack) { PyErr_NoMemory(); goto done; }
    Key none = {NULL, -1};
    stack[top++] = (Frame){root, 1, none, none};
    while (top > 0) {
        Frame f = stack[--top];
        Py_ssize_t base = top;
        if (visit(&w, &f, &stack, &top, &cap) < 0) goto done;
        /* Children pushed by a branch page: set their levels and upper bounds.  The first
         * child's lower bound is the page's own; each upper bound is the next child's key. */
        Py_ssize_t n = top - base;
        for (Py_ssize_t j = 0; j < n; j++) {
            Frame *c = &stack[base + j];
            c->level = f.level + 1;
            if (j == 0) c->low = f.low;
            c->high = (j + 1 < n) ? stack[base + j + 1].low : f.high;
        }
    }
    result = Py_BuildValue("(KKKKKOOO)", (unsigned long long)w.counts[0],
                           (unsigned long long)w.counts[1], (unsigned long long)w.counts[2],
                           (unsigned long long)w.counts[3], (unsigned long long)w.walked,
                           w.problems, w.subdbs, w.free_pages);
done:
    PyMem_Free(stack);
    Py_XDECREF(w.problems); Py_XDECREF(w.subdbs); Py_XDECREF(w.free_pages);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&used);
    return result;
}

static PyMethodDef methods[] = {
    {"walk_tree", walk_tree, METH_VARARGS, "Walk one LMDB tree (see pagecheck.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pagecheck", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__pagecheck(void) { return PyModule_Create(&module); }
