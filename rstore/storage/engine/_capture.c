/*
 * Optional C twin of rstore.storage.engine.wal_capture's LoggedTxn and LoggedCursor (that module loads
 * it; its Python classes are the reference and the fallback).  A LoggedTxn stands in for a
 * py-lmdb write transaction: each put, delete and drop goes to the raw transaction (or cursor)
 * first, and once LMDB took it, its encoding -- wal_log.op_prefix(kind, name), u32 key length,
 * key and, for a put, u32 value length, value -- is appended to one growing buffer.  The
 * buffer is handed to `spill` when the count the Python version keeps (key + value + 32 bytes
 * per put, key + 32 per delete) passes the spill threshold after a put or a nested commit, to
 * the parent when a nested transaction commits, and dropped when it aborts.
 *
 *   configure(puts, deletes, spill_bytes)   sub-database name -> first bytes of a put / delete
 *                                           (wal_capture's tables), and SPILL_BYTES
 *   LoggedTxn(raw, names, parent=None, spill=None), LoggedCursor(raw, db, txn)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

static PyObject *puts_tab, *deletes_tab;  /* set by configure() */
static Py_ssize_t spill_bytes = 256 << 10;
static PyObject *s_put, *s_delete, *s_drop, *s_cursor, *s_commit, *s_abort, *s_key, *s_putmulti,
    *s_get, *s_id, *s_db, *s_overwrite, *s_dupdata, *s_append, *kw_db, *kw_delete, *decode_ops;

typedef struct {
    PyObject_HEAD
    PyObject *raw, *get, *id, *names, *parent, *spill;
    PyObject *bound_put, *bound_delete;  /* self.put and self.delete, made once */
    PyObject *buf;   /* a bytes object used as the buffer (not shared), or NULL */
    Py_ssize_t len;  /* the bytes of buf in use */
    Py_ssize_t size; /* what decides a spill, counted as the Python version counts it */
} Txn;

typedef struct {
    PyObject_HEAD
    PyObject *raw, *db;
    Txn *txn;
} Cursor;

/* putmulti's items as LMDB takes them: each pair is recorded when the next one is asked for. */
typedef struct {
    PyObject_HEAD
    Txn *txn;
    PyObject *db, *it, *key, *value;
    Py_ssize_t given;
} Passing;

static PyTypeObject TxnType, CursorType, PassingType;

#include "capture_record.h"
#include "capture_call.h"

/* ------------------------------------------------------------------------------ LoggedTxn */

static PyObject *txn_put(Txn *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    static const char *const names[] = {"key", "value"};
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *kv[2], *db, *rest = NULL, *r;
    int done;
    if (nargs == 2 && is_db(kwnames)) {  /* put(key, value, db=db): every write of rstore */
        PyObject *stack[5] = {NULL, self->raw, args[0], args[1], args[2]};
        kv[0] = args[0];
        kv[1] = args[1];
        db = args[2];
        r = PyObject_VectorcallMethod(s_put, stack + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                      kwnames);
    } else {  /* other keywords go to LMDB as they are */
        PyObject *pair;
        if (bind("put", args, nargs, kwnames, 2, names, kv, &rest) < 0) return NULL;
        if (!(db = kw_get(rest, s_db))) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "put() missing keyword argument: 'db'");
            Py_XDECREF(rest);
            return NULL;
        }
        pair = PyTuple_Pack(2, kv[0], kv[1]);
        r = pair ? call_kw(self->raw, s_put, pair, rest) : NULL;
        Py_XDECREF(pair);
    }
    done = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(r);
    if (done > 0 && record_put(self, db, kv[0], kv[1]) < 0) done = -1;
    Py_XDECREF(rest);  /* held db */
    return done < 0 ? NULL : PyBool_FromLong(done);
}

static PyObject *txn_delete(Txn *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    static const char *const names[] = {"key"};
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *key, *db, *rest = NULL, *r;
    int found;
    if (nargs == 1 && is_db(kwnames)) {
        key = args[0];
        db = args[1];
    } else {
        if (bind("delete", args, nargs, kwnames, 1, names, &key, &rest) < 0) return NULL;
        db = kw_get(rest, s_db);
        if (!db || PyDict_GET_SIZE(rest) != 1) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError,
                                db ? "delete() takes only key and db" : "delete() missing 'db'");
            Py_XDECREF(rest);
            return NULL;
        }
    }
    {
        PyObject *stack[4] = {NULL, self->raw, key, db};
        r = PyObject_VectorcallMethod(s_delete, stack + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                      kw_db);
    }
    found = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(r);
    if (found > 0 && record_delete(self, db, key) < 0) found = -1;
    Py_XDECREF(rest);  /* held db */
    return found < 0 ? NULL : PyBool_FromLong(found);
}

static PyObject *txn_drop(Txn *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"db", "delete", NULL};
    PyObject *db, *del = Py_True, *r;
    int refuse;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:drop", kwlist, &db, &del)) return NULL;
    if ((refuse = PyObject_IsTrue(del)) != 0) {
        if (refuse > 0)
            PyErr_SetString(PyExc_ValueError,
                            "deleting a sub-database is not recorded for the write-ahead log");
        return NULL;
    }
    {
        PyObject *stack[4] = {NULL, self->raw, db, Py_False};
        r = PyObject_VectorcallMethod(s_drop, stack + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                      kw_delete);
    }
    if (!r) return NULL;
    Py_DECREF(r);
    {
        PyObject *empty = PyBytes_FromStringAndSize(NULL, 0);  /* CLEAR: the whole db */
        int rc = empty ? record(self, db, empty, NULL) : -1;
        Py_XDECREF(empty);
        if (rc < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *cursor_make(PyObject *raw, PyObject *db, Txn *txn)
{
    Cursor *c = PyObject_GC_New(Cursor, &CursorType);
    if (!c) return NULL;
    c->raw = Py_NewRef(raw);
    c->db = Py_NewRef(db);
    c->txn = (Txn *)Py_NewRef(txn);
    PyObject_GC_Track(c);
    return (PyObject *)c;
}

static PyObject *txn_cursor(Txn *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"db", NULL};
    PyObject *db, *raw, *c;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:cursor", kwlist, &db)) return NULL;
    {
        PyObject *stack[3] = {NULL, self->raw, db};
        raw = PyObject_VectorcallMethod(s_cursor, stack + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                        kw_db);
    }
    if (!raw) return NULL;
    c = cursor_make(raw, db, self);
    Py_DECREF(raw);
    return c;
}

static PyObject *txn_commit(Txn *self, PyObject *unused)
{
    Txn *parent = (Txn *)self->parent;
    char *p;
    PyObject *r = PyObject_CallMethodNoArgs(self->raw, s_commit);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_CLEAR(self->bound_put);  /* they refer to self */
    Py_CLEAR(self->bound_delete);
    if (parent && self->len) {  /* the changes go to the parent (and stay here too) */
        if (!(p = reserve(parent, self->len))) return NULL;
        memcpy(p, PyBytes_AS_STRING(self->buf), self->len);
        parent->len += self->len;
        parent->size += self->size;
        if (maybe_spill(parent) < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *txn_abort(Txn *self, PyObject *unused)
{
    PyObject *r = PyObject_CallMethodNoArgs(self->raw, s_abort);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_CLEAR(self->bound_put);
    Py_CLEAR(self->bound_delete);
    Py_CLEAR(self->buf);
    self->len = self->size = 0;
    Py_RETURN_NONE;
}

static PyObject *txn_take(Txn *self, PyObject *unused) { return take(self); }

static PyObject *txn_ops(Txn *self, void *closure)
{
    PyObject *body, *ops;
    if (!decode_ops) {
        PyObject *mod = PyImport_ImportModule("rstore.storage.engine.wal_log");
        if (!mod) return NULL;
        decode_ops = PyObject_GetAttrString(mod, "decode_ops");
        Py_DECREF(mod);
        if (!decode_ops) return NULL;
    }
    body = PyBytes_FromStringAndSize(self->buf ? PyBytes_AS_STRING(self->buf) : NULL, self->len);
    if (!body) return NULL;
    ops = PyObject_CallOneArg(decode_ops, body);
    Py_DECREF(body);
    return ops;
}

static PyObject *txn_pending(Txn *self, void *closure) { return PyBool_FromLong(self->len > 0); }

/* An attribute: this type's, else the raw transaction's.  Looking up a method of a type that
   has its own getattro makes a bound method at each call; put and delete, called for every
   change, are made once (until commit or abort). */
static PyObject *txn_getattro(PyObject *self, PyObject *name)
{
    Txn *t = (Txn *)self;
    PyObject **bound = name == s_put ? &t->bound_put : name == s_delete ? &t->bound_delete : NULL;
    if (!bound) return pass_through(self, t->raw, name);
    if (!*bound && !(*bound = pass_through(self, t->raw, name))) return NULL;
    return Py_NewRef(*bound);
}

static PyObject *txn_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"raw", "names", "parent", "spill", NULL};
    PyObject *raw, *names, *parent = Py_None, *spill = Py_None;
    Txn *t;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO:LoggedTxn", kwlist, &raw, &names, &parent,
                                     &spill))
        return NULL;
    if (parent != Py_None && !PyObject_TypeCheck(parent, &TxnType)) {
        PyErr_SetString(PyExc_TypeError, "the parent of a LoggedTxn must be a LoggedTxn");
        return NULL;
    }
    if (!(t = (Txn *)type->tp_alloc(type, 0))) return NULL;
    t->raw = Py_NewRef(raw);
    t->names = Py_NewRef(names);
    t->parent = parent == Py_None ? NULL : Py_NewRef(parent);
    t->spill = Py_NewRef(spill);
    if (!(t->get = PyObject_GetAttr(raw, s_get)) || !(t->id = PyObject_GetAttr(raw, s_id))) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static int txn_traverse(Txn *t, visitproc visit, void *arg)
{
    Py_VISIT(t->raw); Py_VISIT(t->get); Py_VISIT(t->id);
    Py_VISIT(t->names); Py_VISIT(t->parent); Py_VISIT(t->spill);
    Py_VISIT(t->bound_put); Py_VISIT(t->bound_delete);
    return 0;
}

static int txn_clear(Txn *t)
{
    Py_CLEAR(t->raw); Py_CLEAR(t->get); Py_CLEAR(t->id);
    Py_CLEAR(t->names); Py_CLEAR(t->parent); Py_CLEAR(t->spill); Py_CLEAR(t->buf);
    Py_CLEAR(t->bound_put); Py_CLEAR(t->bound_delete);
    return 0;
}

static void txn_dealloc(Txn *t)
{
    PyObject_GC_UnTrack(t);
    txn_clear(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyMethodDef txn_methods[] = {
    {"put", (PyCFunction)(void (*)(void))txn_put, METH_FASTCALL | METH_KEYWORDS,
     "put(key, value, *, db, **kw): LMDB's put, recorded when it stored."},
    {"delete", (PyCFunction)(void (*)(void))txn_delete, METH_FASTCALL | METH_KEYWORDS,
     "delete(key, *, db): LMDB's delete, recorded when the key was there."},
    {"drop", (PyCFunction)(void (*)(void))txn_drop, METH_VARARGS | METH_KEYWORDS,
     "drop(db, delete=True): empty db (delete=True is refused), recorded."},
    {"cursor", (PyCFunction)(void (*)(void))txn_cursor, METH_VARARGS | METH_KEYWORDS,
     "cursor(db): a LoggedCursor."},
    {"commit", (PyCFunction)txn_commit, METH_NOARGS, "Commit; a nested one hands its changes up."},
    {"abort", (PyCFunction)txn_abort, METH_NOARGS, "Abort; the recorded changes are dropped."},
    {"take", (PyCFunction)txn_take, METH_NOARGS, "The encoded operations so far, removed."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef txn_members[] = {
    {"raw", T_OBJECT, offsetof(Txn, raw), READONLY, "the py-lmdb transaction"},
    {"get", T_OBJECT, offsetof(Txn, get), READONLY, "raw.get"},
    {"id", T_OBJECT, offsetof(Txn, id), READONLY, "raw.id"},
    {"spill", T_OBJECT, offsetof(Txn, spill), 0, "called with the encoded operations to spill"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef txn_getset[] = {
    {"ops", (getter)txn_ops, NULL, "the recorded operations, decoded", NULL},
    {"pending", (getter)txn_pending, NULL, "whether take() has operations to return", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TxnType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rstore.storage.engine._capture.LoggedTxn",
    .tp_basicsize = sizeof(Txn),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A py-lmdb write transaction whose changes are recorded for the write-ahead log.",
    .tp_new = txn_new,
    .tp_dealloc = (destructor)txn_dealloc,
    .tp_traverse = (traverseproc)txn_traverse,
    .tp_clear = (inquiry)txn_clear,
    .tp_getattro = txn_getattro,
    .tp_methods = txn_methods,
    .tp_members = txn_members,
    .tp_getset = txn_getset,
};

#include "capture_cursor.h"

static PyObject *configure(PyObject *mod, PyObject *args)
{
    PyObject *puts, *deletes;
    Py_ssize_t spill;
    if (!PyArg_ParseTuple(args, "O!O!n:configure", &PyDict_Type, &puts, &PyDict_Type, &deletes,
                          &spill))
        return NULL;
    Py_XSETREF(puts_tab, Py_NewRef(puts));
    Py_XSETREF(deletes_tab, Py_NewRef(deletes));
    spill_bytes = spill;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(puts, deletes, spill_bytes): the prefix tables and the spill threshold."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_capture",
    "C twin of wal_capture's LoggedTxn and LoggedCursor (optional).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__capture(void)
{
    PyObject *m;
#define INTERN(var, text) if (!(var = PyUnicode_InternFromString(text))) return NULL
    INTERN(s_put, "put"); INTERN(s_delete, "delete"); INTERN(s_drop, "drop");
    INTERN(s_cursor, "cursor"); INTERN(s_commit, "commit"); INTERN(s_abort, "abort");
    INTERN(s_key, "key"); INTERN(s_putmulti, "putmulti"); INTERN(s_get, "get");
    INTERN(s_id, "id"); INTERN(s_db, "db"); INTERN(s_overwrite, "overwrite");
    INTERN(s_dupdata, "dupdata"); INTERN(s_append, "append");
#undef INTERN
    if (!(kw_db = PyTuple_Pack(1, s_db)) || !(kw_delete = PyTuple_Pack(1, s_delete))) return NULL;
    if (PyType_Ready(&TxnType) < 0 || PyType_Ready(&CursorType) < 0 ||
        PyType_Ready(&PassingType) < 0 || !(m = PyModule_Create(&module)))
        return NULL;
    if (PyModule_AddObjectRef(m, "LoggedTxn", (PyObject *)&TxnType) < 0 ||
        PyModule_AddObjectRef(m, "LoggedCursor", (PyObject *)&CursorType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
