/*
 * Optional C accelerator for the redis-py reply shapes of rstore.client.shapes (which loads
 * it): stream_list() is parse_stream_list() without XREADGROUP's CLAIM extras -- each entry
 * [id, [field, value, ...]] of an XRANGE, XREVRANGE, XREAD or XREADGROUP reply turned into
 * the tuple (id, {field: value, ...}), a nil entry into (None, None).
 *
 * It returns None (no exception) for any reply it does not expect -- not a list, an entry that
 * is not a list or tuple of at least two items, fields that are not a list or tuple of even
 * length -- and the Python function then does the work (and raises what it raises), so the
 * shapes never depend on whether this module is built.  An unhashable field raises TypeError,
 * as dict() does in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* {field: value} of a flat sequence of even length; NULL with no exception when it is not one. */
static PyObject *pairs(PyObject *flat)
{
    PyObject *seq, *out, **items;
    Py_ssize_t n, i;
    if (flat == Py_None) return PyDict_New();
    if (!PyList_CheckExact(flat) && !PyTuple_CheckExact(flat)) return NULL;
    seq = PySequence_Fast(flat, "fields");
    if (seq == NULL) return NULL;
    n = PySequence_Fast_GET_SIZE(seq);
    if (n % 2) {
        Py_DECREF(seq);
        return NULL;
    }
    out = PyDict_New();
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    items = PySequence_Fast_ITEMS(seq);
    for (i = 0; i < n; i += 2) {
        if (PyDict_SetItem(out, items[i], items[i + 1]) < 0) {
            Py_DECREF(out);
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    return out;
}

static PyObject *stream_list(PyObject *self, PyObject *reply)
{
    PyObject *out, *entry, *fields, *tuple, *seq;
    Py_ssize_t n, i;
    (void)self;
    if (!PyList_CheckExact(reply)) Py_RETURN_NONE;
    n = PyList_GET_SIZE(reply);
    out = PyList_New(n);
    if (out == NULL) return NULL;
    for (i = 0; i < n; i++) {
        entry = PyList_GET_ITEM(reply, i);
        if (entry == Py_None) {
            tuple = PyTuple_Pack(2, Py_None, Py_None);
        } else {
            if (!PyList_CheckExact(entry) && !PyTuple_CheckExact(entry)) goto unexpected;
            seq = PySequence_Fast(entry, "entry");
            if (seq == NULL) goto failed;
            if (PySequence_Fast_GET_SIZE(seq) < 2) {
                Py_DECREF(seq);
                goto unexpected;
            }
            fields = pairs(PySequence_Fast_GET_ITEM(seq, 1));
            if (fields == NULL) {
                Py_DECREF(seq);
                if (PyErr_Occurred()) goto failed;
                goto unexpected;
            }
            tuple = PyTuple_Pack(2, PySequence_Fast_GET_ITEM(seq, 0), fields);
            /* an ID and a dict of atoms (not tracked: Python tracks a dict once it holds a
             * container): untracked as Python's collector would untrack it on its first look */
            if (tuple != NULL && !PyObject_GC_IsTracked(fields) &&
                !PyObject_GC_IsTracked(PySequence_Fast_GET_ITEM(seq, 0)))
                PyObject_GC_UnTrack(tuple);
            Py_DECREF(fields);
            Py_DECREF(seq);
        }
        if (tuple == NULL) goto failed;
        PyList_SET_ITEM(out, i, tuple);
    }
    return out;
unexpected:
    Py_DECREF(out);
    Py_RETURN_NONE;
failed:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"stream_list", stream_list, METH_O,
     "stream_list(reply) -> list | None\n\n[(id, {field: value}), ...] of a stream reply's "
     "entries; None when the reply is not the shape expected (then Python does the work)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_shapes",
    "C twin of rstore.client.shapes' stream entries (optional).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__shapes(void)
{
    return PyModule_Create(&module);
}
