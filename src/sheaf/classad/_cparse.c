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
#include <structmember.h> /* PyMemberDef: the offsets of Expr's slots */
#include <string.h>
#include <stdint.h>

enum { K_EOF, K_NAME, K_STR, K_QNAME, K_INT, K_REAL, K_NEGINT, K_NEGREAL, K_OP };

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
static PyObject *g_unescape, *g_old_string, *g_time_literal;
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
    int build;    /* 0: check the grammar only, every node is None (an ad's values read lazily) */
    int old;      /* old syntax: a backslash in a string is itself, but before a quote */
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

static int lower_is(Parser *P, const Tok *t, const char *word, Py_ssize_t n) {
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
        if (i >= end) return push(P, K_EOF, 0, end, end);
        Py_UCS4 c = CH(P, i);
        Py_ssize_t j;
        int real, op;
        if (is_name_start(c)) {
            for (j = i + 1; j < end && is_name_char(CH(P, j)); j++) {}
            Tok t = {K_NAME, 0, i, j};
            if (lower_is(P, &t, "is", 2)) { t.kind = K_OP; t.op = O_IS; }
            else if (lower_is(P, &t, "isnt", 4)) { t.kind = K_OP; t.op = O_ISNT; }
            if (push(P, t.kind, t.op, i, j) < 0) return -1;
        } else if (c == '"' || c == '\'') {
            j = quoted(P, i, end, c);
            if (j < 0) return 1;
            if (push(P, c == '"' ? K_STR : K_QNAME, 0, i, j) < 0) return -1;
        } else if (is_digit(c) || (c == '.' && i + 1 < end && is_digit(CH(P, i + 1)))) {
            j = number(P, i, end, &real);
            if (j < 0) return 1;
            if (push(P, real ? K_REAL : K_INT, 0, i, j) < 0) return -1;
        } else if (c == '-' && i + 1 < end
                   && (is_digit(CH(P, i + 1))
                       || (CH(P, i + 1) == '.' && i + 2 < end && is_digit(CH(P, i + 2))))
                   && (j = number(P, i + 1, end, &real)) >= 0) {
            if (push(P, real ? K_NEGREAL : K_NEGINT, 0, i, j) < 0) return -1;
        } else if ((op = op_at(P, i, end, &j)) >= 0) {
            if (push(P, K_OP, op, i, i + j) < 0) return -1;
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

static PyObject *none(void) { return Py_NewRef(Py_None); }

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

static int is_leaf(const Tok *t) { return t->kind != K_OP && t->kind != K_EOF; }
static int is_op(const Tok *t, int op) { return t->kind == K_OP && t->op == op; }

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

static PyObject *expression(Parser *P, Py_ssize_t *pos);
static PyObject *binary(Parser *P, Py_ssize_t *pos, int min_level);
static PyObject *primary(Parser *P, Py_ssize_t *pos);

/* Depth and brackets are counted where the Python parser counts them; near either limit this module
 * falls back (a margin, so that the Python parser's shortcuts never decide). */
static int enter(Parser *P) { return ++P->depth <= g_max_depth - 8; }
static int open_bracket(Parser *P) { return ++P->brackets <= g_max_brackets; }

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

static PyObject *attribute_name(Parser *P, Py_ssize_t *pos) {
    const Tok *t = &P->toks[*pos];
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
            part = attribute_name(P, pos);
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

static PyObject *expression(Parser *P, Py_ssize_t *pos) {
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
        return pair(P, S_absattr, attribute_name(P, pos));
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

enum { R_EXPR, R_AD, R_BINDING };

/* The node of rule over src[start:stop], or None (fall back); NULL on a failure. */
static PyObject *parse_rule(PyObject *src, Py_ssize_t start, Py_ssize_t stop, int old, int rule) {
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

static PyObject *py_expr(PyObject *self, PyObject *args);

/* ---- loading whole ads: Expr objects made here, compound values parsed on first use ------------- */

static PyTypeObject *g_expr_type, *g_lazy_type;
static Py_ssize_t off_node, off_const, off_fn, off_hash, off_used, off_src, off_start, off_stop;
static PyObject *g_not_constant, *g_undefined_value, *g_error_value, *S_lower;

static void put(PyObject *obj, Py_ssize_t offset, PyObject *value) {
    PyObject **slot = (PyObject **)((char *)obj + offset);
    Py_XSETREF(*slot, value);
}

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
static PyObject *make_expr(PyObject *node) {
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

static PyObject *g_lowered;

/* name.lower(), remembered (bounded): names repeat. Borrowed; NULL with an exception on failure. */
static PyObject *lowered(PyObject *name) {
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
static PyObject *py_track(PyObject *self, PyObject *obj) {
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
    PyObject *name = attribute_name(P, pos), *lname = NULL, *expr = NULL;
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

static PyTypeObject *g_ad_type;
static Py_ssize_t off_ex, off_names, off_parent, off_shared;

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

static int ready(void) {
    if (g_expr_type != NULL) return 1;
    PyErr_SetString(PyExc_RuntimeError, "_cparse.configure() was not called");
    return 0;
}

/* parse(src) -> Expr of the whole text, or None (fall back). */
static PyObject *py_parse(PyObject *self, PyObject *src) {
    if (!ready()) return NULL;
    PyObject *args = PyTuple_Pack(1, src), *node = args ? py_expr(self, args) : NULL;
    Py_XDECREF(args);
    if (node == NULL || node == Py_None) return node;
    PyObject *e = make_expr(node);
    Py_DECREF(node);
    return e;
}

/* load_ad(src) -> (ex, names) of a new-syntax ad, or None (fall back). */
static PyObject *py_load_ad(PyObject *self, PyObject *args) {
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

/* load_old(src) -> (ex, names) of an old-syntax ad (one binding a line, as _parser.parse_old_ad),
 * or None (fall back). */
static PyObject *py_load_old(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *src, *cls = Py_None;
    if (!ready() || !PyArg_ParseTuple(args, "U|O", &src, &cls)) return NULL;
    PyObject *lines = PyUnicode_Splitlines(src, 1), *ex = PyDict_New(), *names = PyDict_New(), *out = NULL;
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

static Py_ssize_t slot_offset(PyTypeObject *type, const char *name) {
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
static PyObject *py_configure_load(PyObject *self, PyObject *args) {
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


/* ---- a first evaluation in C, for the common shapes (see _eval.first_evaluation) ----------------
 *
 * Policy: like the parser, an accelerator that answers only what it is sure of.  It walks literals,
 * parentheses, names bound to constants in the scope ad, TARGET.name bound to a constant in the other
 * ad (the lookup _eval.target_member makes), && and ||, and comparisons of numbers, ASCII strings,
 * UNDEFINED and ERROR -- and gives up (None) on anything else: the Python walk then answers.  It
 * reads ads and never changes them, so giving up half-way costs only time. */

static PyObject *g_not_plain, *S_target;

static PyObject *slot_of(PyObject *obj, Py_ssize_t offset) { return *(PyObject **)((char *)obj + offset); }

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
static PyObject *py_first_evaluation(PyObject *self, PyObject *args) {
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
static PyObject *py_configure_evaluation(PyObject *self, PyObject *args) {
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
