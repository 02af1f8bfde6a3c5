/*
 * Optional C twin of the argv a redis-py method builds, for the hottest one: XADD without
 * options (rstore.client.append, whose Python branch is the reference and the fallback).
 * xadd_argv() builds [b"XADD", name, id, field, value, ...] and encodes it as
 * rstore.commands.argv.encode_argv does (str as UTF-8, bytes as they are) in one step; for
 * anything else -- fields that are not a non-empty dict, an argument neither str nor bytes, a
 * str UTF-8 cannot encode -- it returns None (no exception) and Python builds it, or raises.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* One argument as rstore.commands.argv.encode_argv encodes it (a new reference); NULL with no exception when it is
   neither bytes nor str (or a str that UTF-8 cannot encode). */
static PyObject *encoded(PyObject *item)
{
    PyObject *out;
    if (PyBytes_CheckExact(item)) return Py_NewRef(item);
    if (!PyUnicode_CheckExact(item)) return NULL;
    out = PyUnicode_AsUTF8String(item);
    if (out == NULL) PyErr_Clear();
    return out;
}

/* xadd_argv(name, id, fields) -> list | None: [b"XADD", name, id, field, value, ...] encoded as
 * encode_args encodes it, for a dict of fields that is not empty; None for anything else (the
 * Python version then builds it, or raises). */
static PyObject *xadd_argv(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *out, *key, *value, *item;
    Py_ssize_t pos = 0, at = 3, n;
    (void)self;
    if (nargs != 3 || !PyDict_CheckExact(args[2]) || (n = PyDict_GET_SIZE(args[2])) == 0)
        Py_RETURN_NONE;
    if ((out = PyList_New(3 + 2 * n)) == NULL) return NULL;
    PyList_SET_ITEM(out, 0, PyBytes_FromString("XADD"));
    if (PyList_GET_ITEM(out, 0) == NULL) goto failed;
    if ((item = encoded(args[0])) == NULL) goto unexpected;
    PyList_SET_ITEM(out, 1, item);
    if ((item = encoded(args[1])) == NULL) goto unexpected;
    PyList_SET_ITEM(out, 2, item);
    while (PyDict_Next(args[2], &pos, &key, &value)) {
        if (at + 2 > 3 + 2 * n) goto unexpected; /* cannot happen: the dict is not changed */
        if ((item = encoded(key)) == NULL) goto unexpected;
        PyList_SET_ITEM(out, at++, item);
        if ((item = encoded(value)) == NULL) goto unexpected;
        PyList_SET_ITEM(out, at++, item);
    }
    PyObject_GC_UnTrack(out); /* bytes only, read by the dispatch alone: as encode_args leaves it */
    return out;
unexpected:
    if (PyErr_Occurred()) goto failed;
    Py_DECREF(out);
    Py_RETURN_NONE;
failed:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"xadd_argv", (PyCFunction)(void (*)(void))xadd_argv, METH_FASTCALL,
     "xadd_argv(name, id, fields) -> list | None\n\n[b'XADD', name, id, field, value, ...] "
     "encoded, for a dict of fields that is not empty; None for anything else."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_argv", "C twin of a plain XADD's argv (optional).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__argv(void)
{
    return PyModule_Create(&module);
}
