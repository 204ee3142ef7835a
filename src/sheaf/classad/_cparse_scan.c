/* The scanner of sheaf.classad._cparse: text in, tokens (kind, start, end) out, as _lexer.scan cuts
 * it; a character it is not sure of ends the scan with "fall back" (see _cparse.c). */
#include "_cparse.h"

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
    if (j == i || (j < end && CH(P, j) == '.')) return -1;  /* "3.a": a broken real, as _lexer._INT */
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
    case '?': {  /* '?' and ':' with only white space between are the elvis operator, as in HTCondor */
        Py_ssize_t j = i + 1;
        while (j < end && (CH(P, j) == ' ' || (CH(P, j) >= '\t' && CH(P, j) <= '\r'))) j++;
        if (j < end && CH(P, j) == ':') { *len = j - i + 1; return O_ELVIS; }
        return O_QUEST;
    }
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

int lower_is(Parser *P, const Tok *t, const char *word, Py_ssize_t n) {
    if (t->e - t->s != n) return 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_UCS4 c = CH(P, t->s + k);
        if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
        if (c != (Py_UCS4)word[k]) return 0;
    }
    return 1;
}

/* Scan src[i:end] into P->toks: 0 done, 1 fall back, -1 failure. */
int scan(Parser *P, Py_ssize_t i, Py_ssize_t end) {
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
