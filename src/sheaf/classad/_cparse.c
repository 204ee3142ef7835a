/* sheaf.classad._cparse: the ClassAd scanner and parser in C, for text the common paths meet.
 *
 * Policy: this module is an accelerator, never an authority.  It builds exactly the node tuples the
 * pure-Python parser (_parser.py) builds, and for anything unusual -- a syntax error, a character
 * outside ASCII where a token may start, a comment that does not close, nesting near the limits --
 * it returns None and the Python parser reads the text again (and reports the error with its caret).
 * Hence: where this module returns a node, it equals the Python parser's; where the Python parser
 * raises, this module returns None.  tests/classad/test_cparse.py checks both on arbitrary text.
 *
 * The grammar, the node shapes and the depth accounting mirror _parser.py rule by rule (see there).
 * The tables that carry meaning -- operator levels and spellings, keyword literals, the limits --
 * and the two helpers that read literal text (escapes, absTime/relTime strings) come from Python
 * through configure(), so that there is one source of truth for them.
 *
 * Tokens are scanned first into an array (kind, start, end), as _lexer.scan does; a "-5" is one token
 * and is split by the binary-operator loop when it follows an operand, as in _parser.py.
 *
 * The parts: _cparse_scan.c (tokens), _cparse_parse.c (leaves and the grammar), _cparse_load.c (whole
 * ads, Expr objects, values parsed on first use), _cparse_eval.c (a first evaluation of the commonest
 * shapes); this file holds the configuration and the module.
 */
#include "_cparse.h"

/* The configuration (configure*()); see _cparse.h. */
const char *const OP_TEXT[O_COUNT] = {
    "||", "&&", "=?=", "=!=", "==", "!=", "<=", ">=", "<<", ">>>", ">>", "?:",
    "-", "+", "*", "/", "%", "^", "~", "!", "?", ":", "(", ")", "{", "}", "[", "]",
    ",", ";", ".", "<", ">", "=", "|", "&", "is", "isnt",
};
int g_level[O_COUNT];
PyObject *g_spelled[O_COUNT], *g_optext[O_COUNT];
PyObject *g_true, *g_false, *g_undef, *g_error;
PyObject *g_unescape, *g_old_string, *g_time_literal;
int g_max_depth, g_max_brackets;
PyObject *S_bin, *S_un, *S_attr, *S_absattr, *S_sel, *S_sub, *S_cond, *S_elvis, *S_paren, *S_call, *S_list,
    *S_ad, *S_int, *S_real, *S_str, *S_lower, *S_target;
PyTypeObject *g_expr_type, *g_lazy_type, *g_ad_type;
Py_ssize_t off_node, off_const, off_fn, off_hash, off_used, off_src, off_start, off_stop;
Py_ssize_t off_ex, off_names, off_parent, off_shared;
PyObject *g_not_constant, *g_undefined_value, *g_error_value, *g_lowered, *g_not_plain;

static PyObject *run(PyObject *args, int rule) {
    PyObject *src;
    Py_ssize_t start = 0, stop = PY_SSIZE_T_MAX;
    int old = 0;
    if (g_unescape == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_cparse.configure() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "U|nnp", &src, &start, &stop, &old)) return NULL;
    return parse_rule(src, start, stop, old, rule);
}

static PyObject *py_expr(PyObject *self, PyObject *args) { (void)self; return run(args, R_EXPR); }
static PyObject *py_ad(PyObject *self, PyObject *args) { (void)self; return run(args, R_AD); }
static PyObject *py_binding(PyObject *self, PyObject *args) { (void)self; return run(args, R_BINDING); }

static PyObject *py_configure(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *levels, *literals, *unescape, *old_string, *time_literal;
    int max_depth, max_brackets;
    if (!PyArg_ParseTuple(args, "O!O!OOOii", &PyDict_Type, &levels, &PyDict_Type, &literals, &unescape,
                          &old_string, &time_literal, &max_depth, &max_brackets))
        return NULL;
    for (int op = 0; op < O_COUNT; op++) {
        PyObject *entry = PyDict_GetItemString(levels, OP_TEXT[op]);  /* (level, spelled) or absent */
        Py_XSETREF(g_optext[op], PyUnicode_InternFromString(OP_TEXT[op]));
        g_level[op] = 0;
        Py_CLEAR(g_spelled[op]);
        if (entry != NULL) {
            int level;
            PyObject *spelled;
            if (!PyArg_ParseTuple(entry, "iU", &level, &spelled)) return NULL;
            g_level[op] = level;
            g_spelled[op] = Py_NewRef(spelled);
        }
    }
    PyObject **slots[] = {&g_true, &g_false, &g_undef, &g_error};
    const char *words[] = {"true", "false", "undefined", "error"};
    for (int k = 0; k < 4; k++) {
        PyObject *node = PyDict_GetItemString(literals, words[k]);
        if (node == NULL) {
            PyErr_Format(PyExc_KeyError, "keyword literal %s", words[k]);
            return NULL;
        }
        Py_XSETREF(*slots[k], Py_NewRef(node));
    }
    Py_XSETREF(g_unescape, Py_NewRef(unescape));
    Py_XSETREF(g_old_string, Py_NewRef(old_string));
    Py_XSETREF(g_time_literal, Py_NewRef(time_literal));
    g_max_depth = max_depth;
    g_max_brackets = max_brackets;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", py_configure, METH_VARARGS,
     "configure(levels, keyword_literals, unescape, old_string_value, time_literal, max_depth, max_brackets)"},
    {"expr", py_expr, METH_VARARGS, "expr(src, start=0, stop=len) -> node or None (fall back)"},
    {"ad", py_ad, METH_VARARGS, "ad(src, start=0, stop=len) -> ('ad', bindings) or None (fall back)"},
    {"binding", py_binding, METH_VARARGS,
     "binding(src, start=0, stop=len, old=False) -> (name, node) or None"},
    {"configure_load", py_configure_load, METH_VARARGS,
     "configure_load(Expr, LazyExpr, NOT_CONSTANT, UNDEFINED, ERROR)"},
    {"parse", py_parse, METH_O, "parse(src) -> Expr, or None (fall back)"},
    {"track", py_track, METH_O, "track(obj): the garbage collector follows obj (again)"},
    {"configure_evaluation", py_configure_evaluation, METH_VARARGS, "configure_evaluation(ClassAd, NOT_PLAIN)"},
    {"first_evaluation", py_first_evaluation, METH_VARARGS,
     "first_evaluation(node, scope, my, target) -> value, or None (the Python walk answers)"},
    {"load_ad", py_load_ad, METH_VARARGS,
     "load_ad(src, cls=None) -> an ad of cls, or ({lower name: Expr}, {lower name: name}); None: fall back"},
    {"load_old", py_load_old, METH_VARARGS,
     "load_old(src, cls=None) -> an ad of cls, or ({lower name: Expr}, {lower name: name}); None: fall back"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cparse", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cparse(void) {
    S_lower = PyUnicode_InternFromString("lower");
    if (S_lower == NULL) return NULL;
    PyObject **strings[] = {&S_bin, &S_un, &S_attr, &S_absattr, &S_sel, &S_sub, &S_cond, &S_elvis,
                            &S_paren, &S_call, &S_list, &S_ad, &S_int, &S_real, &S_str};
    const char *names[] = {"bin", "un", "attr", "absattr", "sel", "sub", "cond", "elvis",
                           "paren", "call", "list", "ad", "int", "real", "str"};
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        *strings[k] = PyUnicode_InternFromString(names[k]);
        if (*strings[k] == NULL) return NULL;
    }
    return PyModule_Create(&module);
}
