/* The first evaluation of sheaf.classad._cparse: the commonest shapes of an expression, walked in C
 * (see _eval.first_evaluation and the policy below). */
#include "_cparse.h"

/* ---- a first evaluation in C, for the common shapes (see _eval.first_evaluation) ----------------
 *
 * Policy: like the parser, an accelerator that answers only what it is sure of.  It walks literals,
 * parentheses, names bound to constants in the scope ad, TARGET.name bound to a constant in the other
 * ad (the lookup _eval.target_member makes), && and ||, and comparisons of numbers, ASCII strings,
 * UNDEFINED and ERROR -- and gives up (None) on anything else: the Python walk then answers.  It
 * reads ads and never changes them, so giving up half-way costs only time. */



/* The constant bound to lname in ad (borrowed), NULL when it is not one (or ad has no such name:
 * *missing is then set). */
static PyObject *bound_constant(PyObject *ad, PyObject *lname, int *missing) {
    *missing = 0;
    if (!PyObject_TypeCheck(ad, g_ad_type)) return NULL;
    PyObject *ex = slot_of(ad, off_ex);
    if (ex == NULL || !PyDict_CheckExact(ex)) return NULL;
    PyObject *expr = PyDict_GetItemWithError(ex, lname);
    if (expr == NULL) {
        *missing = !PyErr_Occurred();
        return NULL;
    }
    if (!PyObject_TypeCheck(expr, g_expr_type)) return NULL;
    PyObject *value = slot_of(expr, off_const);
    return value == NULL || value == g_not_constant ? NULL : value;
}

typedef struct {
    PyObject *scope, *my, *target;
} Quick;

static PyObject *quick(Quick *Q, PyObject *node);

static PyObject *quick_attr(Quick *Q, PyObject *name) {
    PyObject *lname = PyUnicode_Check(name) ? lowered(name) : NULL;
    int missing;
    PyObject *value = lname && Q->scope != Py_None ? bound_constant(Q->scope, lname, &missing) : NULL;
    return Py_XNewRef(value);
}

/* TARGET.name, as _eval.target_member finds it. */
static PyObject *quick_target(Quick *Q, PyObject *name) {
    PyObject *scope = Q->scope, *other, *lname = PyUnicode_Check(name) ? lowered(name) : NULL;
    if (lname == NULL || Q->target == Py_None || !PyObject_TypeCheck(scope, g_ad_type)
        || slot_of(scope, off_parent) != Py_None || PySet_Contains(g_not_plain, lname) != 0)
        return NULL;
    PyObject *ex = slot_of(scope, off_ex);
    if (ex == NULL || !PyDict_CheckExact(ex) || PyDict_Contains(ex, S_target) != 0) return NULL;
    if (scope == Q->my) other = Q->target;
    else if (scope == Q->target && Q->my != Py_None) other = Q->my;
    else return NULL;
    int missing;
    PyObject *value = bound_constant(other, lname, &missing);
    if (value == NULL && missing && PyObject_TypeCheck(other, g_ad_type) && slot_of(other, off_parent) == Py_None)
        return Py_NewRef(g_undefined_value);
    return Py_XNewRef(value);
}

/* _logic.truth: True/False, UNDEFINED or ERROR (borrowed). */
static PyObject *truth(PyObject *v) {
    if (PyBool_Check(v) || v == g_undefined_value) return v;
    if (PyLong_CheckExact(v)) return PyObject_IsTrue(v) ? Py_True : Py_False;
    if (PyFloat_CheckExact(v)) return PyFloat_AS_DOUBLE(v) != 0.0 ? Py_True : Py_False;
    return g_error_value;
}

/* && and || as _logic.logical_and_values / logical_or_values. */
static PyObject *quick_logical(Quick *Q, PyObject *node, int is_and) {
    PyObject *left = quick(Q, PyTuple_GET_ITEM(node, 2));
    if (left == NULL) return NULL;
    PyObject *a = truth(left), *decisive = is_and ? Py_False : Py_True;
    Py_DECREF(left);
    if (a == g_error_value || a == decisive) return Py_NewRef(a);
    PyObject *right = quick(Q, PyTuple_GET_ITEM(node, 3));
    if (right == NULL) return NULL;
    PyObject *b = truth(right);
    Py_DECREF(right);
    if (b == g_error_value || b == decisive) return Py_NewRef(b);
    return Py_NewRef(a == g_undefined_value ? g_undefined_value : b);
}

static int is_number(PyObject *v) { return PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v); }

/* ASCII strings, case folded as ascii_lower: <0, 0, >0; -2 for other strings. */
static int fold_compare(PyObject *a, PyObject *b) {
    if (!PyUnicode_IS_ASCII(a) || !PyUnicode_IS_ASCII(b)) return -2;
    const unsigned char *x = PyUnicode_1BYTE_DATA(a), *y = PyUnicode_1BYTE_DATA(b);
    Py_ssize_t n = PyUnicode_GET_LENGTH(a), m = PyUnicode_GET_LENGTH(b);
    for (Py_ssize_t k = 0; k < n && k < m; k++) {
        int c = x[k] >= 'A' && x[k] <= 'Z' ? x[k] + 32 : x[k], d = y[k] >= 'A' && y[k] <= 'Z' ? y[k] + 32 : y[k];
        if (c != d) return c < d ? -1 : 1;
    }
    return n == m ? 0 : n < m ? -1 : 1;
}

/* The comparison operator a node names (Py_LT...), -1 for any other. */
static int comparison(PyObject *op) {
    if (!PyUnicode_Check(op) || !PyUnicode_IS_ASCII(op) || PyUnicode_GET_LENGTH(op) > 2) return -1;
    const char *s = (const char *)PyUnicode_1BYTE_DATA(op);
    if (s[1] == '\0') return s[0] == '<' ? Py_LT : s[0] == '>' ? Py_GT : -1;
    if (s[1] != '=') return -1;
    switch (s[0]) {
    case '<': return Py_LE;
    case '>': return Py_GE;
    case '=': return Py_EQ;
    case '!': return Py_NE;
    default: return -1;
    }
}

/* A comparison as the compiled one (and _ops.compare behind it). */
static PyObject *quick_compare(Quick *Q, PyObject *node, int op) {
    PyObject *a = quick(Q, PyTuple_GET_ITEM(node, 2)), *b = a ? quick(Q, PyTuple_GET_ITEM(node, 3)) : NULL;
    PyObject *out = NULL;
    if (b == NULL) goto done;
    if (a == g_error_value || b == g_error_value) out = Py_NewRef(g_error_value);
    else if (a == g_undefined_value || b == g_undefined_value) out = Py_NewRef(g_undefined_value);
    else if (is_number(a) && is_number(b)) out = PyObject_RichCompare(a, b, op);
    else if (PyUnicode_CheckExact(a) && PyUnicode_CheckExact(b)) {
        int c = fold_compare(a, b);
        if (c != -2) {
            int r = op == Py_LT ? c < 0 : op == Py_LE ? c <= 0 : op == Py_GT ? c > 0 : op == Py_GE ? c >= 0
                  : op == Py_EQ ? c == 0 : c != 0;
            out = Py_NewRef(r ? Py_True : Py_False);
        }
    } else if ((is_number(a) || PyUnicode_CheckExact(a)) && (is_number(b) || PyUnicode_CheckExact(b))) {
        out = Py_NewRef(g_error_value);  /* a number against a string */
    }
done:
    Py_XDECREF(a);
    Py_XDECREF(b);
    return out;
}

static PyObject *quick(Quick *Q, PyObject *node) {
    if (!PyTuple_CheckExact(node) || PyTuple_GET_SIZE(node) < 1) return NULL;
    PyObject *kind = PyTuple_GET_ITEM(node, 0);
    Py_ssize_t size = PyTuple_GET_SIZE(node);
    if (kind == S_bin && size == 4) {
        PyObject *op = PyTuple_GET_ITEM(node, 1);
        if (PyUnicode_Check(op) && PyUnicode_GET_LENGTH(op) == 2 && PyUnicode_READ_CHAR(op, 0) == PyUnicode_READ_CHAR(op, 1)) {
            Py_UCS4 c = PyUnicode_READ_CHAR(op, 0);
            if (c == '&' || c == '|') return quick_logical(Q, node, c == '&');
        }
        int cmp = comparison(op);
        return cmp < 0 ? NULL : quick_compare(Q, node, cmp);
    }
    if (kind == S_sel && size == 3) {
        PyObject *base = PyTuple_GET_ITEM(node, 1);
        if (!PyTuple_CheckExact(base) || PyTuple_GET_SIZE(base) != 2 || PyTuple_GET_ITEM(base, 0) != S_attr)
            return NULL;
        PyObject *lbase = lowered(PyTuple_GET_ITEM(base, 1));
        if (lbase == NULL || PyUnicode_Compare(lbase, S_target) != 0) return NULL;
        return quick_target(Q, PyTuple_GET_ITEM(node, 2));
    }
    if (kind == S_attr && size == 2) return quick_attr(Q, PyTuple_GET_ITEM(node, 1));
    if ((kind == S_int || kind == S_real || kind == S_str) && size == 2) return Py_NewRef(PyTuple_GET_ITEM(node, 1));
    if (node == g_true || node == g_false) return Py_NewRef(PyTuple_GET_ITEM(node, 1));
    if (node == g_undef) return Py_NewRef(g_undefined_value);
    if (node == g_error) return Py_NewRef(g_error_value);
    if (kind == S_paren && size == 2) return quick(Q, PyTuple_GET_ITEM(node, 1));
    return NULL;
}

/* The node of an Expr, a LazyExpr's parsed here on first use (as LazyExpr.node would); borrowed. */
static PyObject *node_of(PyObject *expr) {
    PyObject *node = slot_of(expr, off_node);
    if (node != NULL && node != Py_None) return node;
    if (!PyObject_TypeCheck(expr, g_lazy_type)) return NULL;
    PyObject *src = slot_of(expr, off_src), *start = slot_of(expr, off_start), *stop = slot_of(expr, off_stop);
    if (src == NULL || start == NULL || stop == NULL || !PyUnicode_Check(src)) return NULL;
    node = parse_rule(src, PyLong_AsSsize_t(start), PyLong_AsSsize_t(stop), 0, R_EXPR);
    if (node == NULL || node == Py_None) {
        Py_XDECREF(node);
        return NULL;  /* the Python path parses it (and would report) */
    }
    put(expr, off_node, node);
    return node;
}

/* first_evaluation(expr or node, scope, my, target) -> the value, or None (the Python walk answers). */
PyObject *py_first_evaluation(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *node;
    Quick Q;
    if (!PyArg_ParseTuple(args, "OOOO", &node, &Q.scope, &Q.my, &Q.target)) return NULL;
    if (g_ad_type == NULL) Py_RETURN_NONE;
    if (PyObject_TypeCheck(node, g_expr_type) && (node = node_of(node)) == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *value = quick(&Q, node);
    if (value == NULL) {
        PyErr_Clear();  /* whatever went wrong, the Python walk answers (and reports) */
        Py_RETURN_NONE;
    }
    return value;
}

/* configure_evaluation(ClassAd, NOT_PLAIN) */
PyObject *py_configure_evaluation(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ad_type, *not_plain;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &ad_type, &PyFrozenSet_Type, &not_plain)) return NULL;
    if (g_expr_type == NULL) return PyErr_Format(PyExc_RuntimeError, "configure_load() first");
    if ((off_ex = slot_offset((PyTypeObject *)ad_type, "_ex")) < 0
        || (off_names = slot_offset((PyTypeObject *)ad_type, "_names")) < 0
        || (off_parent = slot_offset((PyTypeObject *)ad_type, "_parent")) < 0
        || (off_shared = slot_offset((PyTypeObject *)ad_type, "_shared")) < 0)
        return NULL;
    if (S_target == NULL && (S_target = PyUnicode_InternFromString("target")) == NULL) return NULL;
    Py_XSETREF(g_not_plain, Py_NewRef(not_plain));
    Py_XSETREF(g_ad_type, (PyTypeObject *)Py_NewRef(ad_type));
    Py_RETURN_NONE;
}
