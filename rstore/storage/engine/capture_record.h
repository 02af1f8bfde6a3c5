/*
 * The buffer of a LoggedTxn (rstore/storage/engine/_capture.c): its operations encoded as
 * rstore.storage.engine.wal_log encodes them, taken, handed to `spill`.
 */

static PyObject *to_bytes(PyObject *o)  /* bytes(o) */
{
    if (PyBytes_CheckExact(o)) return Py_NewRef(o);
    return PyObject_CallOneArg((PyObject *)&PyBytes_Type, o);
}

static char *reserve(Txn *t, Py_ssize_t more)  /* room for `more` bytes at the end */
{
    Py_ssize_t cap = t->buf ? PyBytes_GET_SIZE(t->buf) : 0, need = t->len + more;
    if (more > PY_SSIZE_T_MAX / 4 - t->len) return (char *)PyErr_NoMemory();
    if (need > cap) {
        PyObject *grown;
        for (cap = cap ? cap : 4096; cap < need; cap *= 2) {}
        if (!(grown = PyBytes_FromStringAndSize(NULL, cap))) return NULL;  /* buf kept */
        if (t->len) memcpy(PyBytes_AS_STRING(grown), PyBytes_AS_STRING(t->buf), t->len);
        Py_XSETREF(t->buf, grown);
    }
    return PyBytes_AS_STRING(t->buf) + t->len;
}

static char *put_u32(char *p, Py_ssize_t n)
{
    p[0] = (char)(n & 0xFF); p[1] = (char)((n >> 8) & 0xFF);
    p[2] = (char)((n >> 16) & 0xFF); p[3] = (char)((n >> 24) & 0xFF);
    return p + 4;
}

/* Append the operation on sub-database handle `db` (a put of `value`, or a delete when it is
   NULL; key and value are bytes).  On an error nothing is appended. */
static int record(Txn *t, PyObject *db, PyObject *key, PyObject *value)
{
    PyObject *name, *prefix;
    Py_ssize_t klen = PyBytes_GET_SIZE(key), vlen = value ? PyBytes_GET_SIZE(value) : 0, plen;
    char *p;
    if (!puts_tab) {
        PyErr_SetString(PyExc_RuntimeError, "_capture.configure() was not called");
        return -1;
    }
    if (!(name = PyObject_GetItem(t->names, db))) return -1;
    prefix = PyDict_GetItemWithError(value ? puts_tab : deletes_tab, name);
    if (!prefix || !PyBytes_Check(prefix)) {
        if (!PyErr_Occurred()) {
            if (prefix) PyErr_SetString(PyExc_TypeError, "an operation prefix must be bytes");
            else PyErr_SetObject(PyExc_KeyError, name);
        }
        Py_DECREF(name);
        return -1;
    }
    Py_DECREF(name);  /* prefix stays alive in its table */
    if ((size_t)klen > 0xFFFFFFFFu || (size_t)vlen > 0xFFFFFFFFu) {
        PyErr_SetString(PyExc_ValueError, "a key or value of 4 GiB or more cannot be logged");
        return -1;
    }
    plen = PyBytes_GET_SIZE(prefix);
    if (!(p = reserve(t, plen + 8 + klen + vlen))) return -1;
    memcpy(p, PyBytes_AS_STRING(prefix), plen);
    p = put_u32(p + plen, klen);
    memcpy(p, PyBytes_AS_STRING(key), klen);
    p += klen;
    if (value) {
        p = put_u32(p, vlen);
        memcpy(p, PyBytes_AS_STRING(value), vlen);
        p += vlen;
    }
    t->len = p - PyBytes_AS_STRING(t->buf);
    t->size += klen + vlen + 32;
    return 0;
}

static PyObject *take(Txn *t)  /* the encoded operations so far, removed */
{
    PyObject *body = t->buf;
    Py_ssize_t len = t->len;
    t->buf = NULL;
    t->len = t->size = 0;
    if (!len) {
        Py_XDECREF(body);
        return PyBytes_FromStringAndSize(NULL, 0);
    }
    if (len < PyBytes_GET_SIZE(body) && _PyBytes_Resize(&body, len) < 0) return NULL;
    return body;
}

static int maybe_spill(Txn *t)
{
    PyObject *spill = t->spill, *body, *r;
    if (t->size <= spill_bytes || !spill || spill == Py_None) return 0;
    Py_INCREF(spill);
    if (!(body = take(t))) {
        Py_DECREF(spill);
        return -1;
    }
    r = PyObject_CallOneArg(spill, body);
    Py_DECREF(spill);
    Py_DECREF(body);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

/* key and value as bytes, recorded as a put (then a spill, if due) */
static int record_put(Txn *t, PyObject *db, PyObject *key, PyObject *value)
{
    PyObject *k = to_bytes(key), *v = k ? to_bytes(value) : NULL;
    int rc = v ? record(t, db, k, v) : -1;
    Py_XDECREF(k);
    Py_XDECREF(v);
    return rc < 0 ? -1 : maybe_spill(t);
}

static int record_delete(Txn *t, PyObject *db, PyObject *key)
{
    PyObject *k = to_bytes(key);
    int rc = k ? record(t, db, k, NULL) : -1;
    Py_XDECREF(k);
    return rc;
}

