/*
 * Calls of rstore/storage/engine/_capture.c: a fastcall's arguments bound by name, py-lmdb called with
 * keywords, attributes passed through to the raw object.
 */

/* The parameters `names` of a fastcall (positional or by keyword) in out[] (borrowed); the other
   keywords in *rest (a new dict, NULL when there are none). */
static int bind(const char *fn, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                Py_ssize_t npos, const char *const *names, PyObject **out, PyObject **rest)
{
    Py_ssize_t i, j, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    *rest = NULL;
    if (nargs > npos) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments but %zd were given",
                     fn, npos, nargs);
        return -1;
    }
    for (i = 0; i < npos; i++) out[i] = i < nargs ? args[i] : NULL;
    for (j = 0; j < nkw; j++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, j);
        for (i = 0; i < npos && PyUnicode_CompareWithASCIIString(k, names[i]) != 0; i++) {}
        if (i < npos && out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fn,
                         names[i]);
            goto fail;
        }
        if (i < npos) out[i] = args[nargs + j];
        else if ((!*rest && !(*rest = PyDict_New())) || PyDict_SetItem(*rest, k, args[nargs + j]))
            goto fail;
    }
    for (i = 0; i < npos; i++)
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument: '%s'", fn, names[i]);
            goto fail;
        }
    return 0;
fail:
    Py_CLEAR(*rest);
    return -1;
}

static PyObject *kw_get(PyObject *kw, PyObject *name)  /* borrowed; NULL when absent or on error */
{
    return kw ? PyDict_GetItemWithError(kw, name) : NULL;
}

static int is_db(PyObject *kwnames)  /* kwnames == ("db",) */
{
    PyObject *k;
    if (!kwnames || PyTuple_GET_SIZE(kwnames) != 1) return 0;
    k = PyTuple_GET_ITEM(kwnames, 0);
    return k == s_db || PyUnicode_CompareWithASCIIString(k, "db") == 0;
}

/* obj.<method>(*args, **kw) for a generic call */
static PyObject *call_kw(PyObject *obj, PyObject *method, PyObject *args, PyObject *kw)
{
    PyObject *m = PyObject_GetAttr(obj, method), *r;
    if (!m) return NULL;
    r = PyObject_Call(m, args, kw);
    Py_DECREF(m);
    return r;
}

/* self.<name> as object.__getattribute__ finds it (these types have no instance dict), else
   raw.<name>, but for the writes that would go unrecorded */
static PyObject *pass_through(PyObject *self, PyObject *raw, PyObject *name)
{
    PyObject *descr = _PyType_Lookup(Py_TYPE(self), name), *r;
    if (descr) {
        descrgetfunc get = Py_TYPE(descr)->tp_descr_get;
        if (!get) return Py_NewRef(descr);
        Py_INCREF(descr);
        r = get(descr, self, (PyObject *)Py_TYPE(self));
        Py_DECREF(descr);
        return r;
    }
    if (PyUnicode_Check(name) && (PyUnicode_CompareWithASCIIString(name, "replace") == 0 ||
                                  PyUnicode_CompareWithASCIIString(name, "pop") == 0)) {
        PyErr_Format(PyExc_AttributeError, "%U() is not recorded for the write-ahead log", name);
        return NULL;
    }
    return PyObject_GetAttr(raw, name);
}

