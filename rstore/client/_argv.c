/*
 * Optional C twin of the argv a redis-py method builds, for the hottest one: XADD without
 * options (rstore.client.append, whose Python branch is the reference and the fallback).
 * xadd_argv() builds [b"XADD", name, id, field, value, ...] from a non-empty dict of fields in
 * one step and returns None (no exception) for anything else, for Python to build or refuse.
 * The arguments are left as they are: rstore.commands.argv.encode_argv encodes them, as it
 * encodes every argv.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *xadd_word; /* b"XADD", made at import */

/* xadd_argv(name, id, fields) -> list | None */
static PyObject *xadd_argv(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *out, *key, *value;
    Py_ssize_t pos = 0, at = 3, n;
    (void)self;
    if (nargs != 3 || !PyDict_CheckExact(args[2]) || (n = PyDict_GET_SIZE(args[2])) == 0)
        Py_RETURN_NONE;
    if ((out = PyList_New(3 + 2 * n)) == NULL) return NULL;
    PyList_SET_ITEM(out, 0, Py_NewRef(xadd_word));
    PyList_SET_ITEM(out, 1, Py_NewRef(args[0]));
    PyList_SET_ITEM(out, 2, Py_NewRef(args[1]));
    while (PyDict_Next(args[2], &pos, &key, &value) && at + 2 <= 3 + 2 * n) {
        PyList_SET_ITEM(out, at++, Py_NewRef(key));
        PyList_SET_ITEM(out, at++, Py_NewRef(value));
    }
    return out;
}

static PyMethodDef methods[] = {
    {"xadd_argv", (PyCFunction)(void (*)(void))xadd_argv, METH_FASTCALL,
     "xadd_argv(name, id, fields) -> list | None\n\n[b'XADD', name, id, field, value, ...] "
     "for a dict of fields that is not empty; None for anything else."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_argv", "C twin of a plain XADD's argv (optional).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__argv(void)
{
    if ((xadd_word = PyBytes_FromString("XADD")) == NULL) return NULL;
    return PyModule_Create(&module);
}
