/* What the parts of sheaf.classad._cparse share: tokens, the parser's state, the configuration that
 * Python hands over (configure*() in _cparse.c), and the functions one part calls in another.  The
 * policy -- an accelerator answering only what it is sure of -- is stated in _cparse.c. */
#ifndef SHEAF_CPARSE_H
#define SHEAF_CPARSE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h> /* PyMemberDef: the offsets of the slots of Expr and ClassAd */

#if defined(__GNUC__)
#pragma GCC visibility push(hidden) /* only PyInit__cparse leaves the shared object */
#endif

enum { K_EOF, K_NAME, K_STR, K_QNAME, K_INT, K_REAL, K_NEGINT, K_NEGREAL, K_OP };

/* Operators: codes index OP_TEXT. */
enum {
    O_OROR, O_ANDAND, O_META_EQ, O_META_NE, O_EQ, O_NE, O_LE, O_GE, O_SHL, O_USHR, O_SHR, O_ELVIS,
    O_MINUS, O_PLUS, O_STAR, O_SLASH, O_PCT, O_CARET, O_TILDE, O_BANG, O_QUEST, O_COLON,
    O_LPAREN, O_RPAREN, O_LBRACE, O_RBRACE, O_LBRACKET, O_RBRACKET, O_COMMA, O_SEMI, O_DOT,
    O_LT, O_GT, O_ASSIGN, O_BAR, O_AMP, O_IS, O_ISNT, O_COUNT
};
extern const char *const OP_TEXT[O_COUNT];

enum { R_EXPR, R_AD, R_BINDING };  /* what parse_rule reads */

typedef struct {
    int kind;
    int op;
    Py_ssize_t s, e;
} Tok;

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

/* The grammar's tables and helpers (configure()). */
extern int g_level[O_COUNT];          /* binary level, 0 when not a binary operator */
extern PyObject *g_spelled[O_COUNT];  /* the operator's name in a "bin" node */
extern PyObject *g_optext[O_COUNT];   /* the operator's text (a "un" node keeps it) */
extern PyObject *g_true, *g_false, *g_undef, *g_error;  /* keyword literal nodes */
extern PyObject *g_unescape, *g_old_string, *g_time_literal;
extern int g_max_depth, g_max_brackets;
extern PyObject *S_bin, *S_un, *S_attr, *S_absattr, *S_sel, *S_sub, *S_cond, *S_elvis, *S_paren,
    *S_call, *S_list, *S_ad, *S_int, *S_real, *S_str, *S_lower, *S_target;
/* The objects (configure_load(), configure_evaluation()): classes, slot offsets, singletons. */
extern PyTypeObject *g_expr_type, *g_lazy_type, *g_ad_type;
extern Py_ssize_t off_node, off_const, off_fn, off_hash, off_used, off_src, off_start, off_stop;
extern Py_ssize_t off_ex, off_names, off_parent, off_shared;
extern PyObject *g_not_constant, *g_undefined_value, *g_error_value, *g_lowered, *g_not_plain;

static inline PyObject *none(void) { return Py_NewRef(Py_None); }
static inline int is_leaf(const Tok *t) { return t->kind != K_OP && t->kind != K_EOF; }
static inline int is_op(const Tok *t, int op) { return t->kind == K_OP && t->op == op; }
static inline PyObject *slot_of(PyObject *obj, Py_ssize_t offset) { return *(PyObject **)((char *)obj + offset); }
static inline void put(PyObject *obj, Py_ssize_t offset, PyObject *value) {
    PyObject **slot = (PyObject **)((char *)obj + offset);
    Py_XSETREF(*slot, value);
}

/* _cparse_scan.c */
int scan(Parser *P, Py_ssize_t i, Py_ssize_t end);
int lower_is(Parser *P, const Tok *t, const char *word, Py_ssize_t n);
/* _cparse_parse.c */
PyObject *settle(PyObject *t);
PyObject *text(Parser *P, Py_ssize_t s, Py_ssize_t e);
PyObject *expression(Parser *P, Py_ssize_t *pos);
PyObject *attribute_name(Parser *P, Py_ssize_t *pos, int binding);
int open_bracket(Parser *P);
PyObject *parse_rule(PyObject *src, Py_ssize_t start, Py_ssize_t stop, int old, int rule);
/* _cparse_load.c */
int ready(void);
PyObject *make_expr(PyObject *node);
PyObject *lowered(PyObject *name);
Py_ssize_t slot_offset(PyTypeObject *type, const char *name);
PyObject *py_parse(PyObject *self, PyObject *src);
PyObject *py_load_ad(PyObject *self, PyObject *args);
PyObject *py_load_old(PyObject *self, PyObject *args);
PyObject *py_track(PyObject *self, PyObject *obj);
PyObject *py_configure_load(PyObject *self, PyObject *args);
/* _cparse_eval.c */
PyObject *py_first_evaluation(PyObject *self, PyObject *args);
PyObject *py_configure_evaluation(PyObject *self, PyObject *args);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
