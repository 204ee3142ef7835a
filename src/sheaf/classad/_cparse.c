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
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <stdint.h>

enum { T_EOF, T_NAME, T_STR, T_QNAME, T_INT, T_REAL, T_NEGINT, T_NEGREAL, T_OP };

/* Operators: codes index OP_TEXT. */
static const char *const OP_TEXT[] = {
    "||", "&&", "=?=", "=!=", "==", "!=", "<=", ">=", "<<", ">>>", ">>", "?:",
    "-", "+", "*", "/", "%", "^", "~", "!", "?", ":", "(", ")", "{", "}", "[", "]",
    ",", ";", ".", "<", ">", "=", "|", "&", "is", "isnt",
};
#define N_OPS ((int)(sizeof(OP_TEXT) / sizeof(OP_TEXT[0])))
enum {
    O_OROR, O_ANDAND, O_META_EQ, O_META_NE, O_EQ, O_NE, O_LE, O_GE, O_SHL, O_USHR, O_SHR, O_ELVIS,
    O_MINUS, O_PLUS, O_STAR, O_SLASH, O_PCT, O_CARET, O_TILDE, O_BANG, O_QUEST, O_COLON,
    O_LPAREN, O_RPAREN, O_LBRACE, O_RBRACE, O_LBRACKET, O_RBRACKET, O_COMMA, O_SEMI, O_DOT,
    O_LT, O_GT, O_ASSIGN, O_BAR, O_AMP, O_IS, O_ISNT,
};

typedef struct {
    int kind;
    int op;
    Py_ssize_t s, e;
} Tok;

/* Configuration from Python (configure()). */
static int g_level[N_OPS];          /* binary level, 0 when not a binary operator */
static PyObject *g_spelled[N_OPS];  /* the operator's name in a "bin" node */
static PyObject *g_optext[N_OPS];   /* the operator's text (a "un" node keeps it) */
static PyObject *g_true, *g_false, *g_undef, *g_error;  /* keyword literal nodes */
static PyObject *g_unescape, *g_time_literal;
static int g_max_depth = 0, g_max_brackets = 0;
static PyObject *S_bin, *S_un, *S_attr, *S_absattr, *S_sel, *S_sub, *S_cond, *S_elvis, *S_paren,
    *S_call, *S_list, *S_ad, *S_int, *S_real, *S_str;

typedef struct {
    PyObject *src;
    int kind;
    const void *data;
    Tok *toks;
    Py_ssize_t ntok, cap;
    int on_heap;  /* toks grew out of the caller's stack array */
    int depth, brackets;
} Parser;

#define CH(P, i) PyUnicode_READ((P)->kind, (P)->data, (i))
/* A node or NULL: NULL with an exception set is a real failure, NULL without one means "fall back". */
#define BAIL NULL

static int is_name_start(Py_UCS4 c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_name_char(Py_UCS4 c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
static int is_digit(Py_UCS4 c) { return c >= '0' && c <= '9'; }

static int push(Parser *P, int kind, int op, Py_ssize_t s, Py_ssize_t e) {
    if (P->ntok == P->cap) {
        Py_ssize_t cap = P->cap * 2;
        Tok *toks = P->on_heap ? PyMem_Realloc(P->toks, (size_t)cap * sizeof(Tok))
                               : PyMem_Malloc((size_t)cap * sizeof(Tok));
        if (toks == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (!P->on_heap) memcpy(toks, P->toks, (size_t)P->ntok * sizeof(Tok));
        P->on_heap = 1;
        P->toks = toks;
        P->cap = cap;
    }
    Tok *t = &P->toks[P->ntok++];
    t->kind = kind;
    t->op = op;
    t->s = s;
    t->e = e;
    return 0;
}

/* Skip blanks and comments from i; -1 when a comment does not close (the Python lexer would then
 * read "/" and "*" as operators: text this module leaves to it). */
static Py_ssize_t skip_blank(Parser *P, Py_ssize_t i, Py_ssize_t end) {
    while (i < end) {
        Py_UCS4 c = CH(P, i);
        if (Py_UNICODE_ISSPACE(c)) {
            i++;
        } else if (c == '/' && i + 1 < end && CH(P, i + 1) == '*') {
            Py_ssize_t j = i + 2;
            while (j + 1 < end && !(CH(P, j) == '*' && CH(P, j + 1) == '/')) j++;
            if (j + 1 >= end) return -1;
            i = j + 2;
        } else if (c == '/' && i + 1 < end && CH(P, i + 1) == '/') {
            Py_ssize_t j = i + 2;
            while (j < end && CH(P, j) != '\n') j++;
            if (j >= end) return -1;
            i = j + 1;
        } else {
            break;
        }
    }
    return i;
}

static Py_ssize_t digits(Parser *P, Py_ssize_t i, Py_ssize_t end) {
    while (i < end && is_digit(CH(P, i))) i++;
    return i;
}

/* An exponent [eE][+-]?\d+ at i: its end, or i when there is none. */
static Py_ssize_t exponent(Parser *P, Py_ssize_t i, Py_ssize_t end) {
    if (i < end && (CH(P, i) == 'e' || CH(P, i) == 'E')) {
        Py_ssize_t j = i + 1;
        if (j < end && (CH(P, j) == '+' || CH(P, j) == '-')) j++;
        Py_ssize_t k = digits(P, j, end);
        if (k > j) return k;
    }
    return i;
}

/* A number at i (a digit, or '.' and a digit): its end and whether it is real; -1 when the Python
 * lexer would not read one here (a leading zero: "007"). */
static Py_ssize_t number(Parser *P, Py_ssize_t i, Py_ssize_t end, int *real) {
    Py_ssize_t j = digits(P, i, end);
    *real = 1;
    if (j < end && CH(P, j) == '.' && j + 1 < end && is_digit(CH(P, j + 1)))
        return exponent(P, digits(P, j + 1, end), end);  /* \d+\.\d+ or \.\d+, exponent optional */
    if (j > i) {
        Py_ssize_t k = exponent(P, j, end);
        if (k > j) return k;  /* \d+[eE][+-]?\d+ */
    }
    *real = 0;
    if (j == i) return -1;
    if (CH(P, i) == '0') return (j == i + 1) ? j : -1;
    return j;
}

static Py_ssize_t quoted(Parser *P, Py_ssize_t i, Py_ssize_t end, Py_UCS4 quote) {
    for (i++; i < end; i++) {
        Py_UCS4 c = CH(P, i);
        if (c == '\\') i++;
        else if (c == quote) return i + 1;
    }
    return -1;
}

static int op_at(Parser *P, Py_ssize_t i, Py_ssize_t end, Py_ssize_t *len) {
    Py_UCS4 c = CH(P, i), n = i + 1 < end ? CH(P, i + 1) : 0, m = i + 2 < end ? CH(P, i + 2) : 0;
    *len = 1;
    switch (c) {
    case '|': if (n == '|') { *len = 2; return O_OROR; } return O_BAR;
    case '&': if (n == '&') { *len = 2; return O_ANDAND; } return O_AMP;
    case '=':
        if (n == '?' && m == '=') { *len = 3; return O_META_EQ; }
        if (n == '!' && m == '=') { *len = 3; return O_META_NE; }
        if (n == '=') { *len = 2; return O_EQ; }
        return O_ASSIGN;
    case '!': if (n == '=') { *len = 2; return O_NE; } return O_BANG;
    case '<':
        if (n == '=') { *len = 2; return O_LE; }
        if (n == '<') { *len = 2; return O_SHL; }
        return O_LT;
    case '>':
        if (n == '=') { *len = 2; return O_GE; }
        if (n == '>' && m == '>') { *len = 3; return O_USHR; }
        if (n == '>') { *len = 2; return O_SHR; }
        return O_GT;
    case '?': if (n == ':') { *len = 2; return O_ELVIS; } return O_QUEST;
    case '-': return O_MINUS;
    case '+': return O_PLUS;
    case '*': return O_STAR;
    case '/': return O_SLASH;
    case '%': return O_PCT;
    case '^': return O_CARET;
    case '~': return O_TILDE;
    case ':': return O_COLON;
    case '(': return O_LPAREN;
    case ')': return O_RPAREN;
    case '{': return O_LBRACE;
    case '}': return O_RBRACE;
    case '[': return O_LBRACKET;
    case ']': return O_RBRACKET;
    case ',': return O_COMMA;
    case ';': return O_SEMI;
    case '.': return O_DOT;
    default: return -1;
    }
}

static int lower_is(Parser *P, const Tok *t, const char *word) {
    Py_ssize_t n = (Py_ssize_t)strlen(word);
    if (t->e - t->s != n) return 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_UCS4 c = CH(P, t->s + k);
        if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
        if (c != (Py_UCS4)word[k]) return 0;
    }
    return 1;
}

/* Scan src[i:end] into P->toks: 0 done, 1 fall back, -1 failure. */
static int scan(Parser *P, Py_ssize_t i, Py_ssize_t end) {
    for (;;) {
        i = skip_blank(P, i, end);
        if (i < 0) return 1;
        if (i >= end) return push(P, T_EOF, 0, end, end);
        Py_UCS4 c = CH(P, i);
        Py_ssize_t j;
        int real, op;
        if (is_name_start(c)) {
            for (j = i + 1; j < end && is_name_char(CH(P, j)); j++) {}
            Tok t = {T_NAME, 0, i, j};
            if (lower_is(P, &t, "is")) { t.kind = T_OP; t.op = O_IS; }
            else if (lower_is(P, &t, "isnt")) { t.kind = T_OP; t.op = O_ISNT; }
            if (push(P, t.kind, t.op, i, j) < 0) return -1;
        } else if (c == '"' || c == '\'') {
            j = quoted(P, i, end, c);
            if (j < 0) return 1;
            if (push(P, c == '"' ? T_STR : T_QNAME, 0, i, j) < 0) return -1;
        } else if (is_digit(c) || (c == '.' && i + 1 < end && is_digit(CH(P, i + 1)))) {
            j = number(P, i, end, &real);
            if (j < 0) return 1;
            if (push(P, real ? T_REAL : T_INT, 0, i, j) < 0) return -1;
        } else if (c == '-' && i + 1 < end
                   && (is_digit(CH(P, i + 1))
                       || (CH(P, i + 1) == '.' && i + 2 < end && is_digit(CH(P, i + 2))))
                   && (j = number(P, i + 1, end, &real)) >= 0) {
            if (push(P, real ? T_NEGREAL : T_NEGINT, 0, i, j) < 0) return -1;
        } else if ((op = op_at(P, i, end, &j)) >= 0) {
            if (push(P, T_OP, op, i, i + j) < 0) return -1;
            j += i;
        } else {
            return 1;  /* a character that starts no token (or one outside ASCII) */
        }
        i = j;
    }
}

/* ---- leaves ----------------------------------------------------------------------------------- */

/* A node whose items are all atoms or settled nodes can never be part of a reference cycle: stop the
 * collector tracking it, as CPython's own collector does with such tuples when it first meets them
 * (parsed trees are many and long-lived; tracking them made collections half of the parse time). */
static PyObject *settle(PyObject *t) {
    if (t == NULL) return NULL;
    for (Py_ssize_t k = PyTuple_GET_SIZE(t); k-- > 0;) {
        PyObject *item = PyTuple_GET_ITEM(t, k);
        if (PyObject_IS_GC(item) && PyObject_GC_IsTracked(item)) return t;
    }
    PyObject_GC_UnTrack(t);
    return t;
}

static PyObject *text(Parser *P, Py_ssize_t s, Py_ssize_t e) {
    return PyUnicode_Substring(P->src, s, e);
}

static PyObject *pair(PyObject *kind, PyObject *value) {
    if (value == NULL) return NULL;
    PyObject *t = PyTuple_Pack(2, kind, value);
    Py_DECREF(value);
    return settle(t);
}

/* The body of a quoted token, escapes resolved (by the Python helper: one reading of escapes). */
static PyObject *body(Parser *P, const Tok *t) {
    PyObject *raw = text(P, t->s + 1, t->e - 1);
    if (raw == NULL) return NULL;
    if (PyUnicode_FindChar(raw, '\\', 0, PyUnicode_GET_LENGTH(raw), 1) == -1) return raw;
    PyObject *out = PyObject_CallOneArg(g_unescape, raw);
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
    if (lower_is(P, t, "true")) return g_true;
    if (lower_is(P, t, "false")) return g_false;
    if (lower_is(P, t, "undefined")) return g_undef;
    if (lower_is(P, t, "error")) return g_error;
    return NULL;
}

/* The node of a leaf token (a name, literal or quoted name), or NULL (BAIL) for any other token. */
static PyObject *leaf(Parser *P, const Tok *t) {
    PyObject *node;
    switch (t->kind) {
    case T_NAME:
        node = keyword_literal(P, t);
        if (node != NULL) return Py_NewRef(node);
        return pair(S_attr, interned(text(P, t->s, t->e)));
    case T_STR: return pair(S_str, body(P, t));
    case T_QNAME: return pair(S_attr, interned(body(P, t)));
    case T_INT: return pair(S_int, int_value(P, t->s, t->e, 0));
    case T_NEGINT: return pair(S_int, int_value(P, t->s + 1, t->e, 1));
    case T_REAL: return pair(S_real, real_value(P, t->s, t->e, 0));
    case T_NEGREAL: return pair(S_real, real_value(P, t->s + 1, t->e, 1));
    default: return BAIL;
    }
}

static int is_leaf(const Tok *t) { return t->kind != T_OP && t->kind != T_EOF; }
static int is_op(const Tok *t, int op) { return t->kind == T_OP && t->op == op; }

/* ---- the grammar (mirrors _parser._Parser) ------------------------------------------------------ */

static PyObject *expression(Parser *P, Py_ssize_t *pos);
static PyObject *binary(Parser *P, Py_ssize_t *pos, int min_level);
static PyObject *primary(Parser *P, Py_ssize_t *pos);

/* Depth and brackets are counted where the Python parser counts them; near either limit this module
 * falls back (a margin, so that the Python parser's shortcuts never decide). */
static int enter(Parser *P) { return ++P->depth <= g_max_depth - 8; }
static int open_bracket(Parser *P) { return ++P->brackets <= g_max_brackets; }

static PyObject *tuple3(PyObject *a, PyObject *b, PyObject *c) {
    PyObject *t = PyTuple_Pack(3, a, b, c);
    Py_DECREF(b);
    Py_DECREF(c);
    return settle(t);
}

static PyObject *attribute_name(Parser *P, Py_ssize_t *pos) {
    const Tok *t = &P->toks[*pos];
    if (t->kind == T_NAME) {
        (*pos)++;
        PyObject *name = text(P, t->s, t->e);
        return keyword_literal(P, t) != NULL ? name : interned(name);
    }
    if (t->kind == T_QNAME) {
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
            part = attribute_name(P, pos);
            if (part == NULL) break;
            node = tuple3(S_sel, node, part);
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
            node = tuple3(S_sub, node, part);
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
        if (orelse == NULL || (node = tuple3(S_elvis, node, orelse)) == NULL || !enter(P)) {
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
    if (t->kind == T_OP && (t->op == O_MINUS || t->op == O_PLUS || t->op == O_BANG || t->op == O_TILDE)) {
        int op = t->op;
        if (!enter(P)) return BAIL;
        (*pos)++;
        PyObject *operand = unary(P, pos);
        if (operand == NULL) return NULL;
        P->depth--;
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
        int op, split = t->kind == T_NEGINT || t->kind == T_NEGREAL;
        if (t->kind == T_OP) op = t->op;
        else if (split) op = O_MINUS;
        else break;
        int level = g_level[op];
        if (level == 0 || level < min_level) break;
        if (split) {
            t->kind = t->kind == T_NEGINT ? T_INT : T_REAL;
            t->s += 1;
        } else {
            (*pos)++;
        }
        chain++;
        if (!enter(P)) goto bail;
        PyObject *right = binary(P, pos, level + 1);
        if (right == NULL) goto bail;
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
    PyObject *node = settle(PyTuple_Pack(4, S_cond, test, then, orelse));
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

static PyObject *expression(Parser *P, Py_ssize_t *pos) {
    if (!enter(P)) return BAIL;
    PyObject *node = conditional(P, pos);
    if (node != NULL) P->depth--;
    return node;
}

/* Append a new reference (NULL: a failure or a fall-back, passed on as -1). */
static int append(PyObject *list, PyObject *item) {
    if (item == NULL) return -1;
    int failed = PyList_Append(list, item);
    Py_DECREF(item);
    return failed;
}

/* items ( ',' items )* up to close, after an opening bracket at pos - 1. */
static PyObject *sequence(Parser *P, Py_ssize_t *pos, int close) {
    if (!open_bracket(P)) return BAIL;
    PyObject *items = PyList_New(0);
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
    PyObject *tuple = settle(PyList_AsTuple(items));
    Py_DECREF(items);
    return tuple;
}

static PyObject *call(Parser *P, Py_ssize_t *pos) {
    const Tok *t = &P->toks[*pos];
    PyObject *name = interned(text(P, t->s, t->e));
    if (name == NULL) return NULL;
    *pos += 2;
    PyObject *args = sequence(P, pos, O_RPAREN);
    if (args == NULL) {
        Py_DECREF(name);
        return NULL;
    }
    if (PyTuple_GET_SIZE(args) == 1 && PyUnicode_GET_LENGTH(name) == 7) {
        PyObject *arg = PyTuple_GET_ITEM(args, 0);
        if (PyTuple_GET_ITEM(arg, 0) == S_str
            || PyUnicode_Compare(PyTuple_GET_ITEM(arg, 0), S_str) == 0) {
            /* absTime("...") / relTime("..."): the Python helper reads it; it answers a node, None
             * (not a time function: a plain call) or False (bad time text: fall back) */
            PyObject *node = PyObject_CallFunctionObjArgs(g_time_literal, name, PyTuple_GET_ITEM(arg, 1), NULL);
            if (node != Py_None) {
                Py_DECREF(name);
                Py_DECREF(args);
                if (node == Py_False) {
                    Py_DECREF(node);
                    return BAIL;
                }
                return node;
            }
            Py_DECREF(node);
        }
    }
    return tuple3(S_call, name, args);
}

static PyObject *record(Parser *P, Py_ssize_t *pos);

/* primary := literal | name | call | '(' expression ')' | '{' list '}' | '[' ad ']' | '.' name */
static PyObject *primary(Parser *P, Py_ssize_t *pos) {
    const Tok *t = &P->toks[*pos];
    if (is_leaf(t)) {
        if (t->kind == T_NAME && is_op(&P->toks[*pos + 1], O_LPAREN)) return call(P, pos);
        (*pos)++;
        return leaf(P, t);
    }
    if (t->kind != T_OP) return BAIL;
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
        return pair(S_paren, inner);
    }
    case O_LBRACE:
        (*pos)++;
        return pair(S_list, sequence(P, pos, O_RBRACE));
    case O_LBRACKET:
        return record(P, pos);
    case O_DOT:
        (*pos)++;
        return pair(S_absattr, attribute_name(P, pos));
    default:
        return BAIL;
    }
}

/* binding := name '=' expression */
static PyObject *binding(Parser *P, Py_ssize_t *pos) {
    PyObject *name = attribute_name(P, pos);
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
    PyObject *b = settle(PyTuple_Pack(2, name, value));
    Py_DECREF(name);
    Py_DECREF(value);
    return b;
}

/* ad := '[' ( binding ( ';' binding )* ';'? )? ']' */
static PyObject *record(Parser *P, Py_ssize_t *pos) {
    if (!open_bracket(P)) return BAIL;
    (*pos)++;
    PyObject *bindings = PyList_New(0);
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
    PyObject *tuple = settle(PyList_AsTuple(bindings));
    Py_DECREF(bindings);
    return pair(S_ad, tuple);
}

/* ---- entry points ------------------------------------------------------------------------------ */

enum { R_EXPR, R_AD, R_BINDING };

static PyObject *run(PyObject *args, int rule) {
    PyObject *src;
    Py_ssize_t start = 0, stop = PY_SSIZE_T_MAX;
    if (g_unescape == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_cparse.configure() was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "U|nn", &src, &start, &stop)) return NULL;
    Py_ssize_t length = PyUnicode_GET_LENGTH(src);
    if (stop > length) stop = length;
    if (start < 0 || start > stop) Py_RETURN_NONE;
    Tok local[128];
    Parser P = {src, PyUnicode_KIND(src), PyUnicode_DATA(src), local, 0, 128, 0, 0, 0};
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
        if (node != NULL && P.toks[pos].kind != T_EOF) Py_CLEAR(node);  /* text after the end */
    }
    if (P.on_heap) PyMem_Free(P.toks);
    if (node == NULL && (scanned < 0 || PyErr_Occurred())) return NULL;
    if (node == NULL) Py_RETURN_NONE;
    return node;
}

static PyObject *py_expr(PyObject *self, PyObject *args) { (void)self; return run(args, R_EXPR); }
static PyObject *py_ad(PyObject *self, PyObject *args) { (void)self; return run(args, R_AD); }
static PyObject *py_binding(PyObject *self, PyObject *args) { (void)self; return run(args, R_BINDING); }

static PyObject *py_configure(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *levels, *literals, *unescape, *time_literal;
    int max_depth, max_brackets;
    if (!PyArg_ParseTuple(args, "O!O!OOii", &PyDict_Type, &levels, &PyDict_Type, &literals, &unescape,
                          &time_literal, &max_depth, &max_brackets))
        return NULL;
    for (int op = 0; op < N_OPS; op++) {
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
    Py_XSETREF(g_time_literal, Py_NewRef(time_literal));
    g_max_depth = max_depth;
    g_max_brackets = max_brackets;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", py_configure, METH_VARARGS,
     "configure(levels, keyword_literals, unescape, time_literal, max_depth, max_brackets)"},
    {"expr", py_expr, METH_VARARGS, "expr(src, start=0, stop=len) -> node or None (fall back)"},
    {"ad", py_ad, METH_VARARGS, "ad(src, start=0, stop=len) -> ('ad', bindings) or None (fall back)"},
    {"binding", py_binding, METH_VARARGS, "binding(src, start=0, stop=len) -> (name, node) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cparse", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cparse(void) {
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
