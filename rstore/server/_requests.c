/* The fast path of rstore serve's request parser (rstore/server/protocol.py).
 *
 * scan(data, pos, max_bulk, out) -> new pos
 *
 * Reads complete requests in the canonical form every client library sends -- "*<count>\r\n"
 * then <count> times "$<size>\r\n<size bytes>\r\n", each number plain digits without a
 * leading zero, 0 < count, size <= max_bulk -- from data[pos:], appending each as a list of
 * bytes to `out`, and returns the position after the last one.  It stops, without consuming
 * it, at the first request that is anything else: inline, incomplete, an unusual number, an
 * error.  The Python parser then reads that one, with Valkey's exact errors and limits, and
 * the two give the same requests for the same bytes (tests/server/test_request_parser.py).
 *
 * Like Valkey, the two bytes after a bulk string are skipped unread, and only the "\r" after a
 * number is looked at, not the "\n" (it must be there: the parser waits for it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The largest count or size read here; more is left to the Python parser (which refuses
 * counts over INT_MAX and sizes over proto-max-bulk-len exactly as Valkey does). */
#define MAX_NUMBER 0x7fffffffLL

/* A plain decimal number at d[*at] ending with "\r" that has a byte after it; -1 when it is
 * not one (or not all here). */
static long long
number(const char *d, Py_ssize_t n, Py_ssize_t *at)
{
    Py_ssize_t i = *at;
    long long value = 0;
    if (i >= n || d[i] < '0' || d[i] > '9' || (d[i] == '0' && i + 1 < n && d[i + 1] != '\r'))
        return -1;
    for (; i < n && d[i] >= '0' && d[i] <= '9'; i++) {
        value = value * 10 + (d[i] - '0');
        if (value > MAX_NUMBER)
            return -1;
    }
    if (i + 1 >= n || d[i] != '\r')
        return -1;
    *at = i + 2;
    return value;
}

/* One request at d[pos]; its list, and *end after it, or NULL with no error set when it is
 * not one this scanner reads. */
static PyObject *
request(const char *d, Py_ssize_t n, Py_ssize_t pos, long long max_bulk, Py_ssize_t *end)
{
    if (d[pos] != '*')
        return NULL;
    Py_ssize_t at = pos + 1;
    long long count = number(d, n, &at);
    if (count <= 0)
        return NULL;
    /* every argument takes at least 6 bytes ("$0\r\n\r\n"): a count the buffer cannot hold
     * is an incomplete request, and never allocates a large list */
    if (count > (n - at) / 6 + 1)
        return NULL;
    PyObject *args = PyList_New((Py_ssize_t)count);
    if (args == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < (Py_ssize_t)count; k++) {
        if (at >= n || d[at] != '$')
            goto not_ours;
        at++;
        long long size = number(d, n, &at);
        if (size < 0 || size > max_bulk || n - at < size + 2)
            goto not_ours;
        PyObject *arg = PyBytes_FromStringAndSize(d + at, (Py_ssize_t)size);
        if (arg == NULL) {
            Py_DECREF(args);
            return NULL;
        }
        PyList_SET_ITEM(args, k, arg);
        at += (Py_ssize_t)size + 2;
    }
    *end = at;
    return args;
not_ours:
    Py_DECREF(args);
    return NULL;
}

static PyObject *
scan(PyObject *self, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 4 || !PyBytes_Check(argv[0]) || !PyList_Check(argv[3])) {
        PyErr_SetString(PyExc_TypeError, "scan(data: bytes, pos: int, max_bulk: int, out: list)");
        return NULL;
    }
    const char *d = PyBytes_AS_STRING(argv[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(argv[0]);
    Py_ssize_t pos = PyLong_AsSsize_t(argv[1]);
    long long max_bulk = PyLong_AsLongLong(argv[2]);
    if (PyErr_Occurred())
        return NULL;
    if (pos < 0)
        pos = 0;
    PyObject *out = argv[3];
    while (pos < n) {
        Py_ssize_t end = pos;
        PyObject *args = request(d, n, pos, max_bulk, &end);
        if (args == NULL) {
            if (PyErr_Occurred())
                return NULL;
            break;
        }
        int failed = PyList_Append(out, args);
        Py_DECREF(args);
        if (failed)
            return NULL;
        pos = end;
    }
    return PyLong_FromSsize_t(pos);
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL,
     "scan(data, pos, max_bulk, out) -> pos: the canonical requests at data[pos:]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_requests", "The fast path of the request parser.", -1, methods,
};

PyMODINIT_FUNC
PyInit__requests(void)
{
    return PyModule_Create(&module);
}
