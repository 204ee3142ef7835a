/* Whole ads read by sheaf.classad._cparse into the dicts of a ClassAd, with Expr objects made here:
 * values that may be constants built at once, compound ones checked now and parsed on first use
 * (LazyExpr).  See _cparse.c for the policy, _classad.py for the objects. */
#include "_cparse.h"

/* ---- loading whole ads: Expr objects made here, compound values parsed on first use ------------- */



/* The value a leaf node stands for when the expression is that constant, else NULL. */
static PyObject *leaf_const(PyObject *node) {
    PyObject *kind = PyTuple_GET_ITEM(node, 0);
    if (kind == S_int || kind == S_real || kind == S_str) return PyTuple_GET_ITEM(node, 1);
    if (node == g_true || node == g_false) return PyTuple_GET_ITEM(node, 1);
    if (node == g_undef) return g_undefined_value;
    if (node == g_error) return g_error_value;
    return NULL;
}

/* An Expr for node: leaves and attribute references here, anything else by Expr(node) (one reading
 * of what is constant). */
PyObject *make_expr(PyObject *node) {
    PyObject *kind = PyTuple_GET_ITEM(node, 0), *value = leaf_const(node);
    int compound = kind == S_attr || kind == S_bin || kind == S_sel || kind == S_call || kind == S_cond
        || kind == S_paren || kind == S_list || kind == S_ad || kind == S_sub || kind == S_absattr
        || kind == S_elvis;
    if (value == NULL && !compound) return PyObject_CallOneArg((PyObject *)g_expr_type, node);
    PyObject *e = g_expr_type->tp_alloc(g_expr_type, 0);
    if (e == NULL) return NULL;
    put(e, off_node, Py_NewRef(node));
    put(e, off_const, Py_NewRef(value ? value : g_not_constant));
    put(e, off_fn, none());
    put(e, off_hash, none());
    put(e, off_used, Py_NewRef(Py_False));
    PyObject_GC_UnTrack(e);  /* atoms and a settled tree only; tracked again with a closure (track()) */
    return e;
}


/* name.lower(), remembered (bounded): names repeat. Borrowed; NULL with an exception on failure. */
PyObject *lowered(PyObject *name) {
    PyObject *low = PyDict_GetItemWithError(g_lowered, name);
    if (low != NULL || PyErr_Occurred()) return low;
    if (PyDict_GET_SIZE(g_lowered) >= 65536) PyDict_Clear(g_lowered);
    low = PyObject_CallMethodNoArgs(name, S_lower);
    if (low == NULL || PyDict_SetItem(g_lowered, name, low) < 0) {
        Py_XDECREF(low);
        return NULL;
    }
    Py_DECREF(low);
    return low;
}

/* An Expr whose node is read from src[start:stop] on first use (the text was checked already). */
static PyObject *make_lazy(PyObject *src, Py_ssize_t start, Py_ssize_t stop) {
    PyObject *e = g_lazy_type->tp_alloc(g_lazy_type, 0), *a = NULL, *b = NULL;
    if (e == NULL || (a = PyLong_FromSsize_t(start)) == NULL || (b = PyLong_FromSsize_t(stop)) == NULL) {
        Py_XDECREF(e);
        Py_XDECREF(a);
        return NULL;
    }
    put(e, off_node, none());  /* not parsed yet */
    put(e, off_const, Py_NewRef(g_not_constant));
    put(e, off_fn, none());
    put(e, off_hash, none());
    put(e, off_used, Py_NewRef(Py_False));
    put(e, off_src, Py_NewRef(src));
    put(e, off_start, a);
    put(e, off_stop, b);
    PyObject_GC_UnTrack(e);
    return e;
}

/* track(expr): the collector follows expr again (it now holds a closure, which might reach back). */
PyObject *py_track(PyObject *self, PyObject *obj) {
    (void)self;
    if (PyObject_IS_GC(obj) && !PyObject_GC_IsTracked(obj)) PyObject_GC_Track(obj);
    Py_RETURN_NONE;
}

/* Where the value starting at pos ends: the first ';' or ']' outside brackets (or the end). */
static Py_ssize_t value_end(Parser *P, Py_ssize_t pos) {
    int nest = 0;
    for (;; pos++) {
        const Tok *t = &P->toks[pos];
        if (t->kind == K_EOF) return pos;
        if (t->kind != K_OP) continue;
        if (t->op == O_LPAREN || t->op == O_LBRACKET || t->op == O_LBRACE) nest++;
        else if (nest > 0 && (t->op == O_RPAREN || t->op == O_RBRACKET || t->op == O_RBRACE)) nest--;
        else if (nest == 0 && (t->op == O_SEMI || t->op == O_RBRACKET)) return pos;
    }
}

static int backslash_string(Parser *P, Py_ssize_t start, Py_ssize_t stop) {
    for (Py_ssize_t k = start; k < stop; k++) {
        const Tok *t = &P->toks[k];
        if (t->kind == K_STR && PyUnicode_FindChar(P->src, '\\', t->s, t->e, 1) >= 0) return 1;
    }
    return 0;
}

/* name '=' value into ex/names ({lower name: Expr}, {lower name: first spelling}), as
 * ClassAd._from_node does; a value of three tokens or more (never a constant, unless a time literal)
 * is checked now and parsed when first used.  1 done, 0 fall back, -1 failure. */
static int load_binding(Parser *P, Py_ssize_t *pos, PyObject *ex, PyObject *names) {
    P->build = 1;
    PyObject *name = attribute_name(P, pos, 1), *lname = NULL, *expr = NULL;
    if (name == NULL || !is_op(&P->toks[*pos], O_ASSIGN)) goto done;
    Py_ssize_t start = ++*pos, stop = value_end(P, start);
    /* built now: what may be a constant, and an old-syntax value with a backslash in a string (read
     * lazily it would be read as new syntax, the same in everything else) */
    int eager = stop - start <= 2 || (stop - start == 4 && P->toks[start].kind == K_NAME)
        || (P->old && backslash_string(P, start, stop));
    P->build = eager;
    PyObject *node = expression(P, pos);
    if (node == NULL || *pos != stop) {
        Py_XDECREF(node);
        goto done;
    }
    if (eager) expr = make_expr(node);
    else expr = make_lazy(P->src, P->toks[start].s, P->toks[stop - 1].e);
    Py_DECREF(node);
    if (expr == NULL) goto done;
    lname = Py_XNewRef(lowered(name));
    if (lname == NULL || PyDict_SetItem(ex, lname, expr) < 0) goto done;
    if (PyDict_SetDefault(names, lname, name) == NULL) goto done;
    Py_DECREF(name);
    Py_DECREF(lname);
    Py_DECREF(expr);
    return 1;
done:
    Py_XDECREF(name);
    Py_XDECREF(lname);
    Py_XDECREF(expr);
    return PyErr_Occurred() ? -1 : 0;
}

static int load_record(Parser *P, PyObject *ex, PyObject *names) {
    Py_ssize_t pos = 1;
    if (!is_op(&P->toks[0], O_LBRACKET) || !open_bracket(P)) return 0;
    while (!is_op(&P->toks[pos], O_RBRACKET)) {
        int loaded = load_binding(P, &pos, ex, names);
        if (loaded <= 0) return loaded;
        if (is_op(&P->toks[pos], O_SEMI)) pos++;
        else if (!is_op(&P->toks[pos], O_RBRACKET)) return 0;
    }
    return P->toks[pos + 1].kind == K_EOF;
}

static int load_line(Parser *P, PyObject *ex, PyObject *names) {
    Py_ssize_t pos = 0;
    int loaded = load_binding(P, &pos, ex, names);
    return loaded <= 0 ? loaded : P->toks[pos].kind == K_EOF;
}

/* Parse src[start:stop] with rule into ex/names: 1 done, 0 fall back, -1 failure. */
static int load_span(PyObject *src, Py_ssize_t start, Py_ssize_t stop, int old,
                     int (*rule)(Parser *, PyObject *, PyObject *), PyObject *ex, PyObject *names) {
    Tok local[256];
    Parser P = {src, PyUnicode_KIND(src), PyUnicode_DATA(src), local, 0, 256, 0, 0, 0, 1, old};
    int done = scan(&P, start, stop);
    done = done == 0 ? rule(&P, ex, names) : done > 0 ? 0 : -1;
    if (P.on_heap) PyMem_Free(P.toks);
    return done;
}


/* The ad of cls (ClassAd or a subclass) holding ex and names, made as ClassAd._view makes one (no
 * __init__); the pair (ex, names) when cls is None. */
static PyObject *loaded(int done, PyObject *ex, PyObject *names, PyObject *cls) {
    if (done <= 0) return done < 0 ? NULL : Py_NewRef(Py_None);
    if (cls == Py_None) return PyTuple_Pack(2, ex, names);
    if (g_ad_type == NULL) Py_RETURN_NONE;  /* not configured yet: the Python parser answers */
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, g_ad_type))
        return PyErr_Format(PyExc_TypeError, "a ClassAd class expected");
    PyObject *ad = ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
    if (ad == NULL) return NULL;
    put(ad, off_ex, Py_NewRef(ex));
    put(ad, off_names, Py_NewRef(names));
    put(ad, off_parent, none());
    put(ad, off_shared, Py_NewRef(Py_False));
    return ad;
}

int ready(void) {
    if (g_expr_type != NULL) return 1;
    PyErr_SetString(PyExc_RuntimeError, "_cparse.configure() was not called");
    return 0;
}

/* parse(src) -> Expr of the whole text, or None (fall back). */
PyObject *py_parse(PyObject *self, PyObject *src) {
    (void)self;
    if (!ready()) return NULL;
    if (!PyUnicode_Check(src)) return PyErr_Format(PyExc_TypeError, "str expected");
    PyObject *node = parse_rule(src, 0, PyUnicode_GET_LENGTH(src), 0, R_EXPR);
    if (node == NULL || node == Py_None) return node;
    PyObject *e = make_expr(node);
    Py_DECREF(node);
    return e;
}

/* load_ad(src) -> (ex, names) of a new-syntax ad, or None (fall back). */
PyObject *py_load_ad(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *src, *cls = Py_None;
    if (!ready() || !PyArg_ParseTuple(args, "U|O", &src, &cls)) return NULL;
    PyObject *ex = PyDict_New(), *names = PyDict_New(), *out = NULL;
    if (ex != NULL && names != NULL)
        out = loaded(load_span(src, 0, PyUnicode_GET_LENGTH(src), 0, load_record, ex, names), ex, names, cls);
    Py_XDECREF(ex);
    Py_XDECREF(names);
    return out;
}

static int blank_or_comment(PyObject *line, Py_ssize_t *stop) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(line), k = 0;
    int kind = PyUnicode_KIND(line);
    const void *data = PyUnicode_DATA(line);
    while (k < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, k))) k++;
    for (*stop = n; *stop > 0; --*stop) {
        Py_UCS4 c = PyUnicode_READ(kind, data, *stop - 1);
        if (c != '\r' && c != '\n') break;
    }
    return k == n || PyUnicode_READ(kind, data, k) == '#';
}

/* The lines of src, each with its newline: a line ends at '\n' only (as _parser.OLD_LINE). */
static PyObject *old_lines(PyObject *src) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(src), start = 0;
    PyObject *lines = PyList_New(0);
    while (lines != NULL && start < n) {
        Py_ssize_t nl = PyUnicode_FindChar(src, '\n', start, n, 1);
        Py_ssize_t end = nl == -2 ? -1 : nl < 0 ? n : nl + 1;
        PyObject *line = end < 0 ? NULL : PyUnicode_Substring(src, start, end);
        if (line == NULL || PyList_Append(lines, line) < 0) Py_CLEAR(lines);
        Py_XDECREF(line);
        start = end;
    }
    return lines;
}

/* load_old(src) -> (ex, names) of an old-syntax ad (one binding a line, as _parser.parse_old_ad),
 * or None (fall back). */
PyObject *py_load_old(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *src, *cls = Py_None;
    if (!ready() || !PyArg_ParseTuple(args, "U|O", &src, &cls)) return NULL;
    PyObject *lines = old_lines(src), *ex = PyDict_New(), *names = PyDict_New(), *out = NULL;
    if (lines != NULL && ex != NULL && names != NULL) {
        Py_ssize_t offset = 0, stop;
        int done = 1;
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(lines) && done > 0; k++) {
            PyObject *line = PyList_GET_ITEM(lines, k);
            if (!blank_or_comment(line, &stop))
                done = load_span(src, offset, offset + stop, 1, load_line, ex, names);
            offset += PyUnicode_GET_LENGTH(line);
        }
        out = loaded(done, ex, names, cls);
    }
    Py_XDECREF(lines);
    Py_XDECREF(ex);
    Py_XDECREF(names);
    return out;
}

Py_ssize_t slot_offset(PyTypeObject *type, const char *name) {
    PyObject *d = PyObject_GetAttrString((PyObject *)type, name);
    Py_ssize_t offset = -1;
    if (d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type))
        offset = ((PyMemberDescrObject *)d)->d_member->offset;
    else if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "%s is not a slot", name);
    Py_XDECREF(d);
    return offset;
}

/* configure_load(Expr, LazyExpr, NOT_CONSTANT, UNDEFINED, ERROR) */
PyObject *py_configure_load(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *expr_type, *lazy_type, *not_constant, *undefined, *error;
    if (!PyArg_ParseTuple(args, "O!O!OOO", &PyType_Type, &expr_type, &PyType_Type, &lazy_type, &not_constant,
                          &undefined, &error))
        return NULL;
    PyTypeObject *e = (PyTypeObject *)expr_type, *l = (PyTypeObject *)lazy_type;
    if ((off_node = slot_offset(e, "node")) < 0 || (off_const = slot_offset(e, "const")) < 0
        || (off_fn = slot_offset(e, "_fn")) < 0 || (off_hash = slot_offset(e, "_hash")) < 0
        || (off_used = slot_offset(e, "_used")) < 0
        || (off_src = slot_offset(l, "_src")) < 0 || (off_start = slot_offset(l, "_start")) < 0
        || (off_stop = slot_offset(l, "_stop")) < 0)
        return NULL;
    if (g_lowered == NULL && (g_lowered = PyDict_New()) == NULL) return NULL;
    Py_XSETREF(g_expr_type, (PyTypeObject *)Py_NewRef(expr_type));
    Py_XSETREF(g_lazy_type, (PyTypeObject *)Py_NewRef(lazy_type));
    Py_XSETREF(g_not_constant, Py_NewRef(not_constant));
    Py_XSETREF(g_undefined_value, Py_NewRef(undefined));
    Py_XSETREF(g_error_value, Py_NewRef(error));
    Py_RETURN_NONE;
}
