/* The fast path of rstore serve's reply writer (rstore/server/resp.py).
 *
 * setup(nil_array, map_type, fallback)   once, at import
 * encode(reply, proto) -> bytes          the RESP2 (proto 2) or RESP3 bytes of a reply
 *
 * Writes the kinds nearly every reply is made of -- bytes (bulk), int (integer), list
 * (array), str (status, ASCII), None (nil bulk), the NIL_ARRAY object (nil array) and a
 * Map of (key, value) tuples (RESP3 "%", RESP2 a flat array) -- in one pass into one buffer,
 * with no Python object per element.  Anything else (an error, a bool, a double, a verbatim
 * text, a non-ASCII status, an int beyond 64 bits, a subclass) is written by `fallback(item,
 * proto) -> bytes`, the Python writer, which is also the reference: a property test checks
 * that both give the same bytes for any reply (tests/server/test_reply_writer.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static PyObject *nil_array = NULL;
static PyObject *map_type = NULL;
static PyObject *fallback = NULL;

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Buffer;

static int
reserve(Buffer *b, Py_ssize_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *data = PyMem_Realloc(b->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static int
put(Buffer *b, const char *bytes, Py_ssize_t n)
{
    if (reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, bytes, (size_t)n);
    b->len += n;
    return 0;
}

/* "<kind><number>\r\n" */
static int
header(Buffer *b, char kind, long long number)
{
    if (reserve(b, 24) < 0)
        return -1;
    b->len += PyOS_snprintf(b->data + b->len, 24, "%c%lld\r\n", kind, number);
    return 0;
}

static int
bulk(Buffer *b, const char *bytes, Py_ssize_t n)
{
    if (header(b, '$', n) < 0 || reserve(b, n + 2) < 0)
        return -1;
    memcpy(b->data + b->len, bytes, (size_t)n);
    b->len += n;
    b->data[b->len++] = '\r';
    b->data[b->len++] = '\n';
    return 0;
}

static int write_reply(Buffer *b, PyObject *reply, int proto);

/* The Python writer's bytes for `reply`. */
static int
write_fallback(Buffer *b, PyObject *reply, int proto)
{
    PyObject *bytes = PyObject_CallFunction(fallback, "Oi", reply, proto);
    if (bytes == NULL)
        return -1;
    if (!PyBytes_Check(bytes)) {
        Py_DECREF(bytes);
        PyErr_SetString(PyExc_TypeError, "the reply fallback must return bytes");
        return -1;
    }
    int rc = put(b, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
    Py_DECREF(bytes);
    return rc;
}

static int
write_list(Buffer *b, PyObject *list, int proto)
{
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (header(b, '*', n) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        if (write_reply(b, PyList_GET_ITEM(list, i), proto) < 0)
            return -1;
    }
    return 0;
}

static int
write_map(Buffer *b, PyObject *map, int proto)
{
    Py_ssize_t n = PyList_GET_SIZE(map);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(map, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2)
            return write_fallback(b, map, proto);
    }
    if (header(b, proto == 3 ? '%' : '*', proto == 3 ? n : 2 * n) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(map, i);
        if (write_reply(b, PyTuple_GET_ITEM(pair, 0), proto) < 0 ||
            write_reply(b, PyTuple_GET_ITEM(pair, 1), proto) < 0)
            return -1;
    }
    return 0;
}

static int
write_reply(Buffer *b, PyObject *reply, int proto)
{
    if (PyBytes_CheckExact(reply))
        return bulk(b, PyBytes_AS_STRING(reply), PyBytes_GET_SIZE(reply));
    if (PyLong_CheckExact(reply)) {
        int overflow = 0;
        long long value = PyLong_AsLongLongAndOverflow(reply, &overflow);
        if (overflow)
            return write_fallback(b, reply, proto);
        if (value == -1 && PyErr_Occurred())
            return -1;
        return header(b, ':', value);
    }
    if (PyList_CheckExact(reply)) {
        if (Py_EnterRecursiveCall(" while writing a reply"))
            return -1;
        int rc = write_list(b, reply, proto);
        Py_LeaveRecursiveCall();
        return rc;
    }
    if (reply == Py_None)
        return put(b, proto == 3 ? "_\r\n" : "$-1\r\n", proto == 3 ? 3 : 5);
    if (reply == nil_array)
        return put(b, proto == 3 ? "_\r\n" : "*-1\r\n", proto == 3 ? 3 : 5);
    if (PyUnicode_CheckExact(reply) && PyUnicode_IS_ASCII(reply)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(reply);
        const char *text = (const char *)PyUnicode_DATA(reply);
        if (memchr(text, '\r', (size_t)n) == NULL && memchr(text, '\n', (size_t)n) == NULL) {
            if (put(b, "+", 1) < 0 || put(b, text, n) < 0)
                return -1;
            return put(b, "\r\n", 2);
        }
        return write_fallback(b, reply, proto);
    }
    if (Py_TYPE(reply) == (PyTypeObject *)map_type) {
        if (Py_EnterRecursiveCall(" while writing a reply"))
            return -1;
        int rc = write_map(b, reply, proto);
        Py_LeaveRecursiveCall();
        return rc;
    }
    return write_fallback(b, reply, proto);
}

static PyObject *
setup(PyObject *self, PyObject *args)
{
    PyObject *nil, *map, *fb;
    if (!PyArg_ParseTuple(args, "OOO", &nil, &map, &fb))
        return NULL;
    if (!PyType_Check(map) || !PyCallable_Check(fb)) {
        PyErr_SetString(PyExc_TypeError, "setup(nil_array, map_type, fallback)");
        return NULL;
    }
    Py_INCREF(nil);
    Py_INCREF(map);
    Py_INCREF(fb);
    Py_XSETREF(nil_array, nil);
    Py_XSETREF(map_type, map);
    Py_XSETREF(fallback, fb);
    Py_RETURN_NONE;
}

static PyObject *
encode(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "encode(reply, proto)");
        return NULL;
    }
    if (fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "encode before setup");
        return NULL;
    }
    int proto = (int)PyLong_AsLong(args[1]);
    if (proto == -1 && PyErr_Occurred())
        return NULL;
    Buffer b = {NULL, 0, 0};
    if (write_reply(&b, args[0], proto) < 0) {
        PyMem_Free(b.data);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(b.data, b.len);
    PyMem_Free(b.data);
    return out;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(nil_array, map_type, fallback): once, at import."},
    {"encode", (PyCFunction)(void (*)(void))encode, METH_FASTCALL,
     "encode(reply, proto) -> bytes: the RESP bytes of a reply."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_replies", "rstore serve's reply writer (fast path).", -1, methods,
};

PyMODINIT_FUNC
PyInit__replies(void)
{
    return PyModule_Create(&module);
}
