/*
 * selection_core._layout: where the values of a JSON text are, found fast.
 *
 * The optional compiled half of selection_core/layout.py, which holds the same
 * two functions in pure Python (the reference and the fallback; the tests check
 * that the two agree):
 *
 *     value_end(buffer, pos) -> int
 *     array_spans(buffer, pos) -> (close, starts, ends) or None
 *
 * Neither parses: they only find where values start and end, so that a batch can
 * be cut into runs of whole articles that are then parsed and validated in full
 * by orjson (selection_core.batch.parse_batch), each run by its own worker.
 *
 * Lexing is exact for any input: a string starts at a '"' outside a string and
 * ends at the next '"' not escaped by an odd run of backslashes right before
 * it; brackets are counted only outside strings and must match in kind. Text a
 * JSON parser would refuse (a bad literal, a control character in a string,
 * invalid UTF-8) is not looked for here: it stays inside one of the cut pieces,
 * whose parse then refuses it.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* Deeper nesting is left to the full parser (orjson refuses more than 1024). */
#define MAX_NESTING 4096

static inline int
is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static inline Py_ssize_t
skip_ws(const unsigned char *b, Py_ssize_t n, Py_ssize_t p)
{
    while (p < n && is_ws(b[p])) {
        p++;
    }
    return p;
}

/* b[p] is '"': the offset just after the closing quote, or -1. */
static Py_ssize_t
string_end(const unsigned char *b, Py_ssize_t n, Py_ssize_t p)
{
    Py_ssize_t first = p + 1;
    Py_ssize_t at = first;
    for (;;) {
        const unsigned char *q = memchr(b + at, '"', (size_t)(n - at));
        if (q == NULL) {
            return -1;
        }
        Py_ssize_t k = q - b;
        Py_ssize_t backslashes = 0;
        while (k - 1 - backslashes >= first && b[k - 1 - backslashes] == '\\') {
            backslashes++;
        }
        if ((backslashes & 1) == 0) {
            return k + 1;
        }
        at = k + 1;
    }
}

/* b[p] starts a value (no whitespace before it): the offset just after it, or -1. */
static Py_ssize_t
skip_value(const unsigned char *b, Py_ssize_t n, Py_ssize_t p)
{
    if (p >= n) {
        return -1;
    }
    unsigned char c = b[p];
    if (c == '"') {
        return string_end(b, n, p);
    }
    if (c == '{' || c == '[') {
        unsigned char stack[MAX_NESTING];
        Py_ssize_t depth = 0;
        stack[depth++] = c == '{' ? '}' : ']';
        p++;
        while (p < n) {
            c = b[p];
            if (c == '"') {
                p = string_end(b, n, p);
                if (p < 0) {
                    return -1;
                }
                continue;
            }
            if (c == '{' || c == '[') {
                if (depth == MAX_NESTING) {
                    return -1;
                }
                stack[depth++] = c == '{' ? '}' : ']';
            }
            else if (c == '}' || c == ']') {
                if (stack[--depth] != c) {
                    return -1;
                }
                if (depth == 0) {
                    return p + 1;
                }
            }
            p++;
        }
        return -1;
    }
    if (c == ',' || c == ':' || c == '}' || c == ']') {
        return -1;
    }
    /* A literal or a number: up to the next delimiter. */
    while (p < n) {
        c = b[p];
        if (is_ws(c) || c == ',' || c == '}' || c == ']' || c == '"' || c == '{' || c == '[' || c == ':') {
            break;
        }
        p++;
    }
    return p;
}

static PyObject *
value_end(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer buf = {0};
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "y*n:value_end", &buf, &pos)) {
        return NULL;
    }
    Py_ssize_t end = -1;
    if (pos >= 0 && pos < buf.len) {
        Py_BEGIN_ALLOW_THREADS
        end = skip_value(buf.buf, buf.len, pos);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&buf);
    return PyLong_FromSsize_t(end);
}

static int
append_offset(PyObject *list, Py_ssize_t value)
{
    PyObject *item = PyLong_FromSsize_t(value);
    if (item == NULL) {
        return -1;
    }
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

static PyObject *
array_spans(PyObject *Py_UNUSED(module), PyObject *args)
{
    Py_buffer buf = {0};
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "y*n:array_spans", &buf, &pos)) {
        return NULL;
    }
    PyObject *starts = PyList_New(0);
    PyObject *ends = PyList_New(0);
    PyObject *out = NULL;
    if (starts == NULL || ends == NULL) {
        goto done;
    }
    const unsigned char *b = buf.buf;
    Py_ssize_t n = buf.len;
    if (pos < 0 || pos >= n || b[pos] != '[') {
        out = Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t p = skip_ws(b, n, pos + 1);
    if (p < n && b[p] == ']') {
        out = Py_BuildValue("(nOO)", p, starts, ends);
        goto done;
    }
    for (;;) {
        Py_ssize_t end;
        Py_BEGIN_ALLOW_THREADS
        end = skip_value(b, n, p);
        Py_END_ALLOW_THREADS
        if (end < 0) {
            out = Py_NewRef(Py_None);
            goto done;
        }
        if (append_offset(starts, p) < 0 || append_offset(ends, end) < 0) {
            goto done;
        }
        p = skip_ws(b, n, end);
        if (p < n && b[p] == ',') {
            p = skip_ws(b, n, p + 1);
            continue;
        }
        if (p < n && b[p] == ']') {
            out = Py_BuildValue("(nOO)", p, starts, ends);
        }
        else {
            out = Py_NewRef(Py_None);
        }
        goto done;
    }
done:
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    PyBuffer_Release(&buf);
    return out;
}

PyDoc_STRVAR(value_end_doc,
"value_end(buffer, pos, /)\n"
"--\n"
"\n"
"The offset just after the JSON value that starts at buffer[pos], or -1 when\n"
"none can be delimited there (an unterminated string, unbalanced brackets).");

PyDoc_STRVAR(array_spans_doc,
"array_spans(buffer, pos, /)\n"
"--\n"
"\n"
"For the JSON array whose '[' is at buffer[pos]: (close, starts, ends), the\n"
"offset of its ']' and the start and end offsets of each element, in order;\n"
"None when the array cannot be delimited.");

static PyMethodDef layout_methods[] = {
    {"value_end", value_end, METH_VARARGS, value_end_doc},
    {"array_spans", array_spans, METH_VARARGS, array_spans_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef layout_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "selection_core._layout",
    .m_doc = "Where the values of a JSON text start and end (the compiled half of selection_core.layout).",
    .m_size = 0,
    .m_methods = layout_methods,
};

PyMODINIT_FUNC
PyInit__layout(void)
{
    return PyModuleDef_Init(&layout_module);
}
