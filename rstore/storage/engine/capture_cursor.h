/*
 * LoggedCursor of rstore/storage/engine/_capture.c: a py-lmdb cursor of a LoggedTxn whose changes the
 * transaction records; and the iterator putmulti hands LMDB, which records each pair once LMDB
 * asks for the next one (so it took that one).
 */

static PyObject *cur_put(Cursor *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    static const char *const names[] = {"key", "value"};
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *kv[2], *rest = NULL, *r;
    int done;
    if (nargs == 2 && !kwnames) {
        PyObject *stack[4] = {NULL, self->raw, args[0], args[1]};
        kv[0] = args[0];
        kv[1] = args[1];
        r = PyObject_VectorcallMethod(s_put, stack + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    } else {
        PyObject *pair;
        if (bind("put", args, nargs, kwnames, 2, names, kv, &rest) < 0) return NULL;
        pair = PyTuple_Pack(2, kv[0], kv[1]);
        r = pair ? call_kw(self->raw, s_put, pair, rest) : NULL;
        Py_XDECREF(pair);
        Py_XDECREF(rest);
    }
    done = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(r);
    if (done > 0 && record_put(self->txn, self->db, kv[0], kv[1]) < 0) done = -1;
    return done < 0 ? NULL : PyBool_FromLong(done);
}

static PyObject *cur_delete(Cursor *self, PyObject *unused)
{
    PyObject *k = PyObject_CallMethodNoArgs(self->raw, s_key), *key, *r;
    int found;
    if (!k) return NULL;
    key = to_bytes(k);  /* a copy: a buffer's key is gone once deleted */
    Py_DECREF(k);
    if (!key) return NULL;
    r = PyObject_CallMethodNoArgs(self->raw, s_delete);
    found = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(r);
    if (found > 0 && record(self->txn, self->db, key, NULL) < 0) found = -1;
    Py_DECREF(key);
    return found < 0 ? NULL : PyBool_FromLong(found);
}

static int refused(PyObject *kw, PyObject *name, int when)  /* kw[name]'s truth is `when` */
{
    PyObject *v = kw_get(kw, name);
    int truth;
    if (!v) return PyErr_Occurred() ? -1 : 0;
    if ((truth = PyObject_IsTrue(v)) < 0) return -1;
    if (truth != when) return 0;
    PyErr_SetString(PyExc_ValueError,
                    "putmulti without overwrite, or with dupdata or append, is not recorded for the "
                    "write-ahead log");
    return -1;
}

static PyObject *cur_putmulti(Cursor *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames)
{
    static const char *const names[] = {"items"};
    PyObject *items, *rest = NULL, *arg = NULL, *r = NULL, *seq = NULL, *given = NULL,
        *out = NULL;
    Passing *pass = NULL;
    if (bind("putmulti", args, PyVectorcall_NARGS(nargsf), kwnames, 1, names, &items, &rest) < 0)
        return NULL;
    if (refused(rest, s_overwrite, 0) || refused(rest, s_dupdata, 1) ||
        refused(rest, s_append, 1) || !(pass = PyObject_GC_New(Passing, &PassingType)))
        goto done;
    pass->txn = (Txn *)Py_NewRef(self->txn);
    pass->db = Py_NewRef(self->db);
    pass->key = pass->value = NULL;
    pass->given = 0;
    pass->it = PyObject_GetIter(items);
    PyObject_GC_Track(pass);
    if (!pass->it || !(arg = PyTuple_Pack(1, (PyObject *)pass))) goto done;
    if (!(r = call_kw(self->raw, s_putmulti, arg, rest))) goto done;
    if (!(seq = PySequence_Fast(r, "putmulti() returned no (consumed, added)"))) goto done;
    if (PySequence_Fast_GET_SIZE(seq) != 2) {
        PyErr_SetString(PyExc_ValueError, "putmulti() returned no (consumed, added)");
        goto done;
    }
    if (!(given = PyLong_FromSsize_t(pass->given))) goto done;
    switch (PyObject_RichCompareBool(PySequence_Fast_GET_ITEM(seq, 0), given, Py_NE)) {
    case 0:
        out = PyTuple_Pack(2, PySequence_Fast_GET_ITEM(seq, 0), PySequence_Fast_GET_ITEM(seq, 1));
        break;
    case 1:
        PyErr_SetString(PyExc_RuntimeError,
                        "putmulti stopped early; the transaction must be aborted");
    }
done:
    Py_XDECREF(rest); Py_XDECREF(pass); Py_XDECREF(arg);
    Py_XDECREF(r); Py_XDECREF(seq); Py_XDECREF(given);
    return out;
}

static PyObject *passing_next(Passing *p)
{
    PyObject *item, *seq, *key, *value;
    if (p->key) {  /* LMDB took the last pair */
        int rc;
        key = p->key;
        value = p->value;
        p->key = p->value = NULL;
        rc = record_put(p->txn, p->db, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (rc < 0) return NULL;
    }
    if (!p->it || !(item = PyIter_Next(p->it))) {
        Py_CLEAR(p->it);
        return NULL;
    }
    seq = PySequence_Fast(item, "cannot unpack non-iterable object");  /* k, v = item */
    Py_DECREF(item);
    if (!seq) return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != 2) {
        PyErr_Format(PyExc_ValueError, "expected 2 values to unpack, got %zd",
                     PySequence_Fast_GET_SIZE(seq));
        Py_DECREF(seq);
        return NULL;
    }
    key = to_bytes(PySequence_Fast_GET_ITEM(seq, 0));
    value = key ? to_bytes(PySequence_Fast_GET_ITEM(seq, 1)) : NULL;
    Py_DECREF(seq);
    if (!value) {
        Py_XDECREF(key);
        return NULL;
    }
    p->given++;
    p->key = key;
    p->value = value;
    return PyTuple_Pack(2, key, value);
}

static int passing_traverse(Passing *p, visitproc visit, void *arg)
{
    Py_VISIT(p->txn); Py_VISIT(p->db); Py_VISIT(p->it);
    return 0;
}

static int passing_clear(Passing *p)
{
    Py_CLEAR(p->txn); Py_CLEAR(p->db); Py_CLEAR(p->it); Py_CLEAR(p->key); Py_CLEAR(p->value);
    return 0;
}

static void passing_dealloc(Passing *p)
{
    PyObject_GC_UnTrack(p);
    passing_clear(p);
    PyObject_GC_Del(p);
}

static PyTypeObject PassingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rstore.storage.engine._capture.Passing",
    .tp_basicsize = sizeof(Passing),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)passing_dealloc,
    .tp_traverse = (traverseproc)passing_traverse,
    .tp_clear = (inquiry)passing_clear,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)passing_next,
};

static PyObject *cur_getattro(PyObject *self, PyObject *name)
{
    return pass_through(self, ((Cursor *)self)->raw, name);
}

static PyObject *cur_iter(Cursor *self) { return PyObject_GetIter(self->raw); }

static PyObject *cur_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"raw", "db", "txn", NULL};
    PyObject *raw, *db, *txn;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO!:LoggedCursor", kwlist, &raw, &db, &TxnType,
                                     &txn))
        return NULL;
    return cursor_make(raw, db, (Txn *)txn);
}

static int cur_traverse(Cursor *c, visitproc visit, void *arg)
{
    Py_VISIT(c->raw); Py_VISIT(c->db); Py_VISIT(c->txn);
    return 0;
}

static int cur_clear(Cursor *c)
{
    Py_CLEAR(c->raw); Py_CLEAR(c->db); Py_CLEAR(c->txn);
    return 0;
}

static void cur_dealloc(Cursor *c)
{
    PyObject_GC_UnTrack(c);
    cur_clear(c);
    PyObject_GC_Del(c);
}

static PyMethodDef cur_methods[] = {
    {"put", (PyCFunction)(void (*)(void))cur_put, METH_FASTCALL | METH_KEYWORDS,
     "put(key, value, **kw): LMDB's put, recorded when it stored."},
    {"delete", (PyCFunction)cur_delete, METH_NOARGS,
     "delete(): LMDB's delete of the current record, recorded when there was one."},
    {"putmulti", (PyCFunction)(void (*)(void))cur_putmulti, METH_FASTCALL | METH_KEYWORDS,
     "putmulti(items, **kw): LMDB's putmulti (overwriting), each pair recorded."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef cur_members[] = {
    {"raw", T_OBJECT, offsetof(Cursor, raw), READONLY, "the py-lmdb cursor"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject CursorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rstore.storage.engine._capture.LoggedCursor",
    .tp_basicsize = sizeof(Cursor),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A cursor of a LoggedTxn: its changes are recorded by the transaction.",
    .tp_new = cur_new,
    .tp_dealloc = (destructor)cur_dealloc,
    .tp_traverse = (traverseproc)cur_traverse,
    .tp_clear = (inquiry)cur_clear,
    .tp_getattro = cur_getattro,
    .tp_iter = (getiterfunc)cur_iter,
    .tp_methods = cur_methods,
    .tp_members = cur_members,
};
