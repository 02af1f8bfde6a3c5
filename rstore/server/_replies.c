/* The fast path of rstore serve's reply encoding (rstore/server/resp.py).
 *
 * encode_entries(entries) -> bytes | None
 *
 * The RESP bytes of stream entries as a scan gives them -- a list of ((ms, seq), fields), the
 * ID a tuple of two ints, fields a list of bytes -- each written as
 * "*2\r\n$<n>\r\n<ms>-<seq>\r\n*<k>\r\n" then "$<size>\r\n<bytes>\r\n" per field: what
 * resp.encode_entries_py writes, in one pass and one allocation.  None when an entry is not
 * that shape (the Python reference then does the work); it never raises on the data.
 * tests/server/test_replies_c.py compares the two.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>
#include <string.h>

/* The decimal digits of v, at most 20. */
static int
digits(unsigned long long v, char *out)
{
    char tmp[24];
    int n = 0, i;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* "<prefix><n>\r\n" at p; the bytes written. */
static Py_ssize_t
header(char *p, char prefix, unsigned long long n)
{
    p[0] = prefix;
    Py_ssize_t k = 1 + digits(n, p + 1);
    p[k] = '\r';
    p[k + 1] = '\n';
    return k + 2;
}

/* The ID and the fields of an entry ((ms, seq), fields); 0 when it is not that shape. */
static int
parts(PyObject *entry, unsigned long long *ms, unsigned long long *seq, PyObject **fields)
{
    PyObject *sid;
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2)
        return 0;
    sid = PyTuple_GET_ITEM(entry, 0);
    *fields = PyTuple_GET_ITEM(entry, 1);
    if (!PyTuple_CheckExact(sid) || PyTuple_GET_SIZE(sid) != 2 || !PyList_CheckExact(*fields) ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(sid, 0)) || !PyLong_CheckExact(PyTuple_GET_ITEM(sid, 1)))
        return 0;
    *ms = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(sid, 0));
    *seq = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(sid, 1));
    if (PyErr_Occurred()) { /* negative, or past 64 bits */
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* The bytes an entry takes, or -1 when it is not the expected shape. */
static Py_ssize_t
entry_size(PyObject *entry)
{
    unsigned long long ms, seq;
    PyObject *fields;
    Py_ssize_t size, i, k;
    if (!parts(entry, &ms, &seq, &fields))
        return -1;
    k = PyList_GET_SIZE(fields);
    size = 4 + (1 + 20 + 2) + (20 + 1 + 20 + 2) + (1 + 20 + 2); /* *2, $n, the ID, *k */
    for (i = 0; i < k; i++) {
        PyObject *f = PyList_GET_ITEM(fields, i);
        if (!PyBytes_CheckExact(f))
            return -1;
        size += 1 + 20 + 2 + PyBytes_GET_SIZE(f) + 2;
    }
    return size;
}

static PyObject *
encode_entries(PyObject *self, PyObject *entries)
{
    Py_ssize_t n, i, j, bound = 0, used = 0;
    PyObject *out;
    char *p;
    (void)self;
    if (!PyList_CheckExact(entries))
        Py_RETURN_NONE;
    n = PyList_GET_SIZE(entries);
    for (i = 0; i < n; i++) {
        Py_ssize_t size = entry_size(PyList_GET_ITEM(entries, i));
        if (size < 0)
            Py_RETURN_NONE;
        bound += size;
    }
    out = PyBytes_FromStringAndSize(NULL, bound);
    if (out == NULL)
        return NULL;
    p = PyBytes_AS_STRING(out);
    for (i = 0; i < n; i++) {
        unsigned long long ms, seq;
        PyObject *fields;
        char sid[48];
        int len;
        parts(PyList_GET_ITEM(entries, i), &ms, &seq, &fields); /* checked above */
        len = digits(ms, sid);
        sid[len++] = '-';
        len += digits(seq, sid + len);
        memcpy(p + used, "*2\r\n", 4);
        used += 4;
        used += header(p + used, '$', (unsigned long long)len);
        memcpy(p + used, sid, (size_t)len);
        used += len;
        memcpy(p + used, "\r\n", 2);
        used += 2;
        used += header(p + used, '*', (unsigned long long)PyList_GET_SIZE(fields));
        for (j = 0; j < PyList_GET_SIZE(fields); j++) {
            PyObject *f = PyList_GET_ITEM(fields, j);
            Py_ssize_t size = PyBytes_GET_SIZE(f);
            used += header(p + used, '$', (unsigned long long)size);
            memcpy(p + used, PyBytes_AS_STRING(f), (size_t)size);
            used += size;
            memcpy(p + used, "\r\n", 2);
            used += 2;
        }
    }
    if (_PyBytes_Resize(&out, used) < 0)
        return NULL;
    return out;
}

static PyMethodDef methods[] = {
    {"encode_entries", encode_entries, METH_O,
     "encode_entries(entries) -> bytes | None: the RESP bytes of scanned stream entries"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_replies", "The fast path of reply encoding.", -1, methods,
};

PyMODINIT_FUNC
PyInit__replies(void)
{
    return PyModule_Create(&module);
}
