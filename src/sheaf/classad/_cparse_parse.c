/* The grammar of sheaf.classad._cparse: tokens to the node tuples _parser.py makes, rule by rule, and
 * the leaves (names, literals) shared through a bounded cache (see _cparse.c for the policy). */
#include "_cparse.h"

/* ---- leaves ----------------------------------------------------------------------------------- */

/* A node whose items are all atoms or settled nodes can never be part of a reference cycle: stop the
 * collector tracking it, as CPython's own collector does with such tuples when it first meets them
 * (parsed trees are many and long-lived; tracking them made collections half of the parse time). */
PyObject *settle(PyObject *t) {
    if (t == NULL) return NULL;
    for (Py_ssize_t k = PyTuple_GET_SIZE(t); k-- > 0;) {
        PyObject *item = PyTuple_GET_ITEM(t, k);
        if (PyObject_IS_GC(item) && PyObject_GC_IsTracked(item)) return t;
    }
    PyObject_GC_UnTrack(t);
    return t;
}

PyObject *text(Parser *P, Py_ssize_t s, Py_ssize_t e) {
    return PyUnicode_Substring(P->src, s, e);
}

static PyObject *pair(Parser *P, PyObject *kind, PyObject *value) {
    if (value == NULL || !P->build) return value;
    PyObject *t = PyTuple_Pack(2, kind, value);
    Py_DECREF(value);
    return settle(t);
}

/* The body of a quoted token, escapes resolved by the Python helpers (one reading of escapes): an
 * old-syntax string goes whole to its own helper. */
static PyObject *body(Parser *P, const Tok *t) {
    if (!P->build) return none();
    Py_ssize_t at = PyUnicode_FindChar(P->src, '\\', t->s + 1, t->e - 1, 1);
    if (at < 0) return at == -1 ? text(P, t->s + 1, t->e - 1) : NULL;
    int whole = P->old && t->kind == K_STR;
    PyObject *raw = whole ? text(P, t->s, t->e) : text(P, t->s + 1, t->e - 1);
    if (raw == NULL) return NULL;
    PyObject *out = PyObject_CallOneArg(whole ? g_old_string : g_unescape, raw);
    Py_DECREF(raw);
    return out;
}

static PyObject *interned(PyObject *s) {
    if (s != NULL) PyUnicode_InternInPlace(&s);
    return s;
}

/* An integer literal's value (19 digits at most, else 0; past 2**63 - 1 it reads 0, or for a
 * negative literal past 2**63), as _lexer.integer and _lexer.negative. */
static PyObject *int_value(Parser *P, Py_ssize_t s, Py_ssize_t e, int negative) {
    if (e - s > 19) return PyLong_FromLong(0);
    uint64_t v = 0;
    for (Py_ssize_t k = s; k < e; k++) v = v * 10 + (uint64_t)(CH(P, k) - '0');
    const uint64_t sign = (uint64_t)1 << 63;
    if (!negative) return PyLong_FromLongLong(v < sign ? (long long)v : 0);
    if (v > sign) return PyLong_FromLong(0);
    if (v == sign) return PyLong_FromLongLong(INT64_MIN);
    return PyLong_FromLongLong(-(long long)v);
}

static PyObject *real_value(Parser *P, Py_ssize_t s, Py_ssize_t e, int negative) {
    char buf[64];
    char *p = buf;
    Py_ssize_t n = e - s;
    if (n >= (Py_ssize_t)sizeof(buf)) {
        p = PyMem_Malloc((size_t)n + 1);
        if (p == NULL) return PyErr_NoMemory();
    }
    for (Py_ssize_t k = 0; k < n; k++) p[k] = (char)CH(P, s + k);
    p[n] = '\0';
    double d = PyOS_string_to_double(p, NULL, NULL);
    if (p != buf) PyMem_Free(p);
    if (d == -1.0 && PyErr_Occurred()) return NULL;
    return PyFloat_FromDouble(negative ? -d : d);
}

static PyObject *keyword_literal(Parser *P, const Tok *t) {
    if (lower_is(P, t, "true", 4)) return g_true;
    if (lower_is(P, t, "false", 5)) return g_false;
    if (lower_is(P, t, "undefined", 9)) return g_undef;
    if (lower_is(P, t, "error", 5)) return g_error;
    return NULL;
}


/* The node of a leaf token (a name, literal or quoted name), or NULL (BAIL) for any other token. */
static PyObject *new_leaf(Parser *P, const Tok *t) {
    PyObject *node;
    switch (t->kind) {
    case K_NAME:
        node = keyword_literal(P, t);
        if (node != NULL) return Py_NewRef(node);
        return pair(P, S_attr, interned(text(P, t->s, t->e)));
    case K_STR: return pair(P, S_str, body(P, t));
    case K_QNAME: return pair(P, S_attr, interned(body(P, t)));
    case K_INT: return pair(P, S_int, int_value(P, t->s, t->e, 0));
    case K_NEGINT: return pair(P, S_int, int_value(P, t->s + 1, t->e, 1));
    case K_REAL: return pair(P, S_real, real_value(P, t->s, t->e, 0));
    case K_NEGREAL: return pair(P, S_real, real_value(P, t->s + 1, t->e, 1));
    default: return BAIL;
    }
}


/* Leaves seen before, by their text: a direct-mapped table of ready nodes (names repeat: TARGET,
 * Memory, ...), so a known leaf costs a hash of its characters and no allocation.  Bounded: a new
 * leaf replaces the one in its slot.  A string's node depends on the escape rules: part of the key. */
#define LEAF_SLOTS 1024
typedef struct {
    Py_hash_t hash;
    int kind;
    int old;
    Py_ssize_t length;
    PyObject *text;  /* the token's text (compared on a hit) */
    PyObject *node;
} LeafSlot;
static LeafSlot g_leaves[LEAF_SLOTS];

#define LEAF_CACHED_LENGTH 40  /* longer leaves (paths, arguments) are seldom seen twice */

static Py_hash_t token_hash(Parser *P, const Tok *t) {
    Py_uhash_t h = 2166136261u ^ (Py_uhash_t)t->kind;
    if (P->kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = (const Py_UCS1 *)P->data;
        for (Py_ssize_t k = t->s; k < t->e; k++) h = (h ^ p[k]) * 16777619u;
    } else {
        for (Py_ssize_t k = t->s; k < t->e; k++) h = (h ^ CH(P, k)) * 16777619u;
    }
    return (Py_hash_t)h;
}

static int same_text(Parser *P, const Tok *t, PyObject *text) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND && P->kind == PyUnicode_1BYTE_KIND)
        return memcmp(data, (const Py_UCS1 *)P->data + t->s, (size_t)(t->e - t->s)) == 0;
    for (Py_ssize_t k = 0; k < t->e - t->s; k++)
        if (PyUnicode_READ(kind, data, k) != CH(P, t->s + k)) return 0;
    return 1;
}

static PyObject *leaf(Parser *P, const Tok *t) {
    if (!P->build) return is_leaf(t) ? none() : BAIL;
    if (!is_leaf(t)) return BAIL;
    if (t->e - t->s > LEAF_CACHED_LENGTH) return new_leaf(P, t);
    Py_hash_t h = token_hash(P, t);
    LeafSlot *slot = &g_leaves[(Py_uhash_t)h % LEAF_SLOTS];
    if (slot->node != NULL && slot->hash == h && slot->kind == t->kind && slot->old == P->old
        && slot->length == t->e - t->s && same_text(P, t, slot->text))
        return Py_NewRef(slot->node);
    PyObject *node = new_leaf(P, t), *text_ = node ? text(P, t->s, t->e) : NULL;
    if (text_ == NULL) return node;
    Py_XSETREF(slot->node, Py_NewRef(node));
    Py_XSETREF(slot->text, text_);
    slot->hash = h;
    slot->kind = t->kind;
    slot->old = P->old;
    slot->length = t->e - t->s;
    return node;
}

/* ---- the grammar (mirrors _parser._Parser) ------------------------------------------------------ */

static PyObject *binary(Parser *P, Py_ssize_t *pos, int min_level);
static PyObject *primary(Parser *P, Py_ssize_t *pos);

/* Depth and brackets are counted where the Python parser counts them; near either limit this module
 * falls back (a margin, so that the Python parser's shortcuts never decide). */
static int enter(Parser *P) { return ++P->depth <= g_max_depth - 8; }
int open_bracket(Parser *P) { return ++P->brackets <= g_max_brackets; }

static PyObject *tuple3(Parser *P, PyObject *a, PyObject *b, PyObject *c) {
    if (!P->build) {
        Py_DECREF(c);
        return b;
    }
    PyObject *t = PyTuple_Pack(3, a, b, c);
    Py_DECREF(b);
    Py_DECREF(c);
    return settle(t);
}

/* A name, bare or quoted; NULL (BAIL) for anything else.  true, false, undefined and error are
 * literals, never bare names, except as an old-syntax line's name; a binding's name is never empty
 * (''), as in HTCondor's parser.  binding: the name a binding defines. */
PyObject *attribute_name(Parser *P, Py_ssize_t *pos, int binding) {
    const Tok *t = &P->toks[*pos];
    if (t->kind == K_NAME && keyword_literal(P, t) != NULL && !(binding && P->old)) return BAIL;
    if (t->kind == K_QNAME && binding && t->e - t->s <= 2) return BAIL;
    if (!P->build && (t->kind == K_NAME || t->kind == K_QNAME)) {
        (*pos)++;
        return none();
    }
    if (t->kind == K_NAME) {
        (*pos)++;
        if (keyword_literal(P, t) != NULL) return text(P, t->s, t->e);
        PyObject *node = leaf(P, t), *name = node ? Py_NewRef(PyTuple_GET_ITEM(node, 1)) : NULL;
        Py_XDECREF(node);
        return name;  /* the ("attr", name) leaf's name: interned, shared */
    }
    if (t->kind == K_QNAME) {
        (*pos)++;
        return interned(body(P, t));
    }
    return BAIL;
}

static PyObject *selection_tail(Parser *P, Py_ssize_t *pos, PyObject *node) {
    int depth = P->depth;
    for (;;) {
        const Tok *t = &P->toks[*pos];
        PyObject *part;
        if (is_op(t, O_DOT)) {
            (*pos)++;
            part = attribute_name(P, pos, 0);
            if (part == NULL) break;
            node = tuple3(P, S_sel, node, part);
        } else if (is_op(t, O_LBRACKET)) {
            if (!open_bracket(P)) break;
            (*pos)++;
            part = expression(P, pos);
            if (part == NULL) break;
            P->brackets--;
            if (!is_op(&P->toks[*pos], O_RBRACKET)) {
                Py_DECREF(part);
                break;
            }
            (*pos)++;
            node = tuple3(P, S_sub, node, part);
        } else {
            P->depth = depth;
            return node;
        }
        if (node == NULL) return NULL;
        if (!enter(P)) break;
    }
    Py_XDECREF(node);
    return NULL;
}

static PyObject *postfix_tail(Parser *P, Py_ssize_t *pos, PyObject *node) {
    node = selection_tail(P, pos, node);
    if (node == NULL) return NULL;
    int depth = P->depth;
    while (is_op(&P->toks[*pos], O_ELVIS)) {
        (*pos)++;
        PyObject *orelse = primary(P, pos);
        if (orelse != NULL) orelse = selection_tail(P, pos, orelse);
        if (orelse == NULL || (node = tuple3(P, S_elvis, node, orelse)) == NULL || !enter(P)) {
            Py_XDECREF(node);
            return NULL;
        }
    }
    P->depth = depth;
    return node;
}

/* unary := ('-' | '+' | '!' | '~') unary | postfix */
static PyObject *unary(Parser *P, Py_ssize_t *pos) {
    const Tok *t = &P->toks[*pos];
    if (t->kind == K_OP && (t->op == O_MINUS || t->op == O_PLUS || t->op == O_BANG || t->op == O_TILDE)) {
        int op = t->op;
        if (!enter(P)) return BAIL;
        (*pos)++;
        PyObject *operand = unary(P, pos);
        if (operand == NULL) return NULL;
        P->depth--;
        if (!P->build) return operand;
        PyObject *node = PyTuple_Pack(3, S_un, g_optext[op], operand);
        Py_DECREF(operand);
        return settle(node);
    }
    PyObject *node = primary(P, pos);
    if (node == NULL) return NULL;
    const Tok *n = &P->toks[*pos];
    if (is_op(n, O_DOT) || is_op(n, O_LBRACKET) || is_op(n, O_ELVIS)) return postfix_tail(P, pos, node);
    return node;
}

/* binary := unary ( op binary )*  by precedence climbing, as _parser._Parser.binary.  A "-5" token
 * after an operand is binary minus and 5: taken, the token becomes the 5 and the '-' is virtual. */
static PyObject *binary(Parser *P, Py_ssize_t *pos, int min_level) {
    PyObject *left = unary(P, pos);
    if (left == NULL) return NULL;
    int chain = 0;
    for (;;) {
        Tok *t = &P->toks[*pos];
        int op, split = t->kind == K_NEGINT || t->kind == K_NEGREAL;
        if (t->kind == K_OP) op = t->op;
        else if (split) op = O_MINUS;
        else break;
        int level = g_level[op];
        if (level == 0 || level < min_level) break;
        if (split) {
            t->kind = t->kind == K_NEGINT ? K_INT : K_REAL;
            t->s += 1;
        } else {
            (*pos)++;
        }
        chain++;
        if (!enter(P)) goto bail;
        PyObject *right = binary(P, pos, level + 1);
        if (right == NULL) goto bail;
        if (!P->build) {
            Py_DECREF(right);
            continue;
        }
        PyObject *node = settle(PyTuple_Pack(4, S_bin, g_spelled[op], left, right));
        Py_DECREF(left);
        Py_DECREF(right);
        if ((left = node) == NULL) return NULL;
    }
    P->depth -= chain;
    return left;
bail:
    Py_DECREF(left);
    return NULL;
}

static PyObject *conditional(Parser *P, Py_ssize_t *pos);

static PyObject *conditional_tail(Parser *P, Py_ssize_t *pos, PyObject *test) {
    (*pos)++;
    PyObject *then = expression(P, pos), *orelse = NULL;
    if (then == NULL || !is_op(&P->toks[*pos], O_COLON)) goto fail;
    (*pos)++;
    if (!enter(P)) goto fail;
    orelse = conditional(P, pos);
    if (orelse == NULL) goto fail;
    P->depth--;
    PyObject *node = P->build ? settle(PyTuple_Pack(4, S_cond, test, then, orelse)) : Py_NewRef(test);
    Py_DECREF(test);
    Py_DECREF(then);
    Py_DECREF(orelse);
    return node;
fail:
    Py_DECREF(test);
    Py_XDECREF(then);
    return NULL;
}

static PyObject *conditional(Parser *P, Py_ssize_t *pos) {
    PyObject *test = binary(P, pos, 1);
    if (test != NULL && is_op(&P->toks[*pos], O_QUEST)) return conditional_tail(P, pos, test);
    return test;
}

PyObject *expression(Parser *P, Py_ssize_t *pos) {
    if (!enter(P)) return BAIL;
    PyObject *node = conditional(P, pos);
    if (node != NULL) P->depth--;
    return node;
}

/* Append a new reference (NULL: a failure or a fall-back, passed on as -1). */
static int append(PyObject *list, PyObject *item) {
    if (item == NULL) return -1;
    int failed = list == Py_None ? 0 : PyList_Append(list, item);
    Py_DECREF(item);
    return failed;
}

/* items ( ',' items )* up to close, after an opening bracket at pos - 1. */
static PyObject *sequence(Parser *P, Py_ssize_t *pos, int close) {
    if (!open_bracket(P)) return BAIL;
    PyObject *items = P->build ? PyList_New(0) : none();
    if (items == NULL) return NULL;
    if (is_op(&P->toks[*pos], close)) {
        (*pos)++;
    } else {
        for (;;) {
            if (append(items, expression(P, pos)) < 0) {
                Py_DECREF(items);
                return NULL;
            }
            if (is_op(&P->toks[*pos], O_COMMA)) {
                (*pos)++;
                continue;
            }
            if (!is_op(&P->toks[*pos], close)) {
                Py_DECREF(items);
                return BAIL;
            }
            (*pos)++;
            break;
        }
    }
    P->brackets--;
    if (!P->build) return items;
    PyObject *tuple = settle(PyList_AsTuple(items));
    Py_DECREF(items);
    return tuple;
}

/* absTime("...") / relTime("...") of one string literal: the Python helper reads it and answers a
 * node, None (no time function: a plain call) or False (bad time text: fall back). */
static PyObject *time_literal(Parser *P, Py_ssize_t pos) {
    const Tok *t = &P->toks[pos], *arg = &P->toks[pos + 2];
    if (t->e - t->s != 7 || arg->kind != K_STR || !is_op(&P->toks[pos + 3], O_RPAREN)) return none();
    if (P->brackets >= g_max_brackets || P->depth + 1 > g_max_depth - 8) return BAIL;  /* as sequence() */
    int build = P->build;
    P->build = 1;
    PyObject *name = interned(text(P, t->s, t->e)), *value = name ? body(P, arg) : NULL, *node = NULL;
    P->build = build;
    if (value != NULL) node = PyObject_CallFunctionObjArgs(g_time_literal, name, value, NULL);
    Py_XDECREF(name);
    Py_XDECREF(value);
    if (node == Py_False) {
        Py_DECREF(node);
        return BAIL;
    }
    if (node != NULL && node != Py_None && !build) Py_SETREF(node, none());
    return node;
}

static PyObject *call(Parser *P, Py_ssize_t *pos) {
    PyObject *node = time_literal(P, *pos);
    if (node != Py_None) {
        if (node != NULL) *pos += 4;
        return node;
    }
    Py_DECREF(node);
    const Tok *t = &P->toks[*pos];
    PyObject *name = P->build ? interned(text(P, t->s, t->e)) : none();
    if (name == NULL) return NULL;
    *pos += 2;
    PyObject *args = sequence(P, pos, O_RPAREN);
    if (args == NULL) {
        Py_DECREF(name);
        return NULL;
    }
    return tuple3(P, S_call, name, args);
}

static PyObject *record(Parser *P, Py_ssize_t *pos);

/* primary := literal | name | call | '(' expression ')' | '{' list '}' | '[' ad ']' | '.' name */
static PyObject *primary(Parser *P, Py_ssize_t *pos) {
    const Tok *t = &P->toks[*pos];
    if (is_leaf(t)) {
        if (t->kind == K_NAME && is_op(&P->toks[*pos + 1], O_LPAREN)) return call(P, pos);
        (*pos)++;
        return leaf(P, t);
    }
    if (t->kind != K_OP) return BAIL;
    switch (t->op) {
    case O_LPAREN: {
        if (!open_bracket(P)) return BAIL;
        (*pos)++;
        PyObject *inner = expression(P, pos);
        if (inner == NULL) return NULL;
        P->brackets--;
        if (!is_op(&P->toks[*pos], O_RPAREN)) {
            Py_DECREF(inner);
            return BAIL;
        }
        (*pos)++;
        return pair(P, S_paren, inner);
    }
    case O_LBRACE:
        (*pos)++;
        return pair(P, S_list, sequence(P, pos, O_RBRACE));
    case O_LBRACKET:
        return record(P, pos);
    case O_DOT:
        (*pos)++;
        return pair(P, S_absattr, attribute_name(P, pos, 0));
    default:
        return BAIL;
    }
}

/* binding := name '=' expression */
static PyObject *binding(Parser *P, Py_ssize_t *pos) {
    PyObject *name = attribute_name(P, pos, 1);
    if (name == NULL) return NULL;
    if (!is_op(&P->toks[*pos], O_ASSIGN)) {
        Py_DECREF(name);
        return BAIL;
    }
    (*pos)++;
    PyObject *value = expression(P, pos);
    if (value == NULL) {
        Py_DECREF(name);
        return NULL;
    }
    if (!P->build) {
        Py_DECREF(name);
        return value;
    }
    PyObject *b = settle(PyTuple_Pack(2, name, value));
    Py_DECREF(name);
    Py_DECREF(value);
    return b;
}

/* ad := '[' ( binding ( ';' binding )* ';'? )? ']' */
static PyObject *record(Parser *P, Py_ssize_t *pos) {
    if (!open_bracket(P)) return BAIL;
    (*pos)++;
    PyObject *bindings = P->build ? PyList_New(0) : none();
    if (bindings == NULL) return NULL;
    while (!is_op(&P->toks[*pos], O_RBRACKET)) {
        if (append(bindings, binding(P, pos)) < 0) {
            Py_DECREF(bindings);
            return NULL;
        }
        if (is_op(&P->toks[*pos], O_SEMI)) {
            (*pos)++;
        } else if (!is_op(&P->toks[*pos], O_RBRACKET)) {
            Py_DECREF(bindings);
            return BAIL;
        }
    }
    (*pos)++;
    P->brackets--;
    if (!P->build) return bindings;
    PyObject *tuple = settle(PyList_AsTuple(bindings));
    Py_DECREF(bindings);
    return pair(P, S_ad, tuple);
}

/* ---- entry points ------------------------------------------------------------------------------ */

/* The node of rule over src[start:stop], or None (fall back); NULL on a failure. */
PyObject *parse_rule(PyObject *src, Py_ssize_t start, Py_ssize_t stop, int old, int rule) {
    Py_ssize_t length = PyUnicode_GET_LENGTH(src);
    if (stop > length) stop = length;
    if (start < 0 || start > stop) Py_RETURN_NONE;
    Tok local[128];
    Parser P = {src, PyUnicode_KIND(src), PyUnicode_DATA(src), local, 0, 128, 0, 0, 0, 1, old};
    PyObject *node = NULL;
    int scanned = scan(&P, start, stop);
    Py_ssize_t pos = 0;
    if (scanned == 0) {
        if (rule == R_EXPR) {
            node = expression(&P, &pos);
        } else if (rule == R_AD) {
            node = is_op(&P.toks[0], O_LBRACKET) ? record(&P, &pos) : NULL;
        } else {
            node = binding(&P, &pos);
        }
        if (node != NULL && P.toks[pos].kind != K_EOF) Py_CLEAR(node);  /* text after the end */
    }
    if (P.on_heap) PyMem_Free(P.toks);
    if (node == NULL && (scanned < 0 || PyErr_Occurred())) return NULL;
    if (node == NULL) Py_RETURN_NONE;
    return node;
}

