/*
 * warden.c - the C guest SDK of warden; see warden.h and docs/abi.md.
 *
 * Memory discipline: the host writes requests and capability replies into
 * blocks it gets from warden_alloc (malloc), and reads the response block
 * warden_call returns. The SDK frees each request and reply as soon as it is
 * parsed, everything a call allocated when the tool returns, and the last
 * response at the start of the next export call (the host copies a response
 * before calling the module again). So the heap of a long-lived instance
 * stays flat however many calls it serves.
 */
/* strdup and strcasecmp are POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "warden.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------------ */
/* ABI imports                                                               */
/* ------------------------------------------------------------------------ */

#define WD_IMPORT(name) __attribute__((import_module("warden"), import_name(name)))

WD_IMPORT("log") void wd_import_log(int32_t level, uint64_t message);
WD_IMPORT("progress") void wd_import_progress(uint64_t report);
WD_IMPORT("fs") uint64_t wd_import_fs(uint64_t request);
WD_IMPORT("memory") uint64_t wd_import_memory(uint64_t request);
WD_IMPORT("lsp") uint64_t wd_import_lsp(uint64_t request);
WD_IMPORT("net") uint64_t wd_import_net(uint64_t request);
WD_IMPORT("env") uint64_t wd_import_env(uint64_t request);
WD_IMPORT("elicit") uint64_t wd_import_elicit(uint64_t request);
WD_IMPORT("sample") uint64_t wd_import_sample(uint64_t request);
WD_IMPORT("roots") uint64_t wd_import_roots(uint64_t request);
WD_IMPORT("ask") uint64_t wd_import_ask(uint64_t request);

static uint64_t pack(const void *p, size_t n) {
    if (n == 0) return 0;
    return ((uint64_t)(uintptr_t)p << 32) | (uint64_t)(uint32_t)n;
}

/* ------------------------------------------------------------------------ */
/* Kinds                                                                     */
/* ------------------------------------------------------------------------ */

static const char *const kind_names[] = {
    "", "invalid_arguments", "not_found", "denied", "failed", "cancelled", "unsupported",
    "timeout", "out_of_fuel", "out_of_memory", "trapped", "guest_exit", "bad_output",
    "internal", "unavailable",
};
#define KIND_COUNT (sizeof kind_names / sizeof kind_names[0])

const char *wd_kind_name(wd_kind kind) {
    if ((unsigned)kind >= KIND_COUNT) return "failed";
    return kind_names[kind];
}

wd_kind wd_kind_parse(const char *name, size_t n) {
    for (size_t k = 1; k < KIND_COUNT; k++)
        if (strlen(kind_names[k]) == n && memcmp(kind_names[k], name, n) == 0) return (wd_kind)k;
    return WD_FAILED;
}

/* ------------------------------------------------------------------------ */
/* JSON reader                                                               */
/* ------------------------------------------------------------------------ */

struct wd_json {
    uint8_t type;       /* wd_json_type */
    uint32_t len;       /* string/number bytes, or element count */
    const char *str;    /* decoded string or number text, NUL-terminated */
    const char *key;    /* member key inside an object */
    uint32_t keylen;
    wd_json **items;    /* array elements / object members */
};

/* An arena: a chain of blocks freed together with the document. */
typedef struct block {
    struct block *next;
    size_t used, cap;
    _Alignas(8) unsigned char data[];
} block;

struct wd_json_doc {
    block *blocks;
    wd_json *root;
};

static void *arena_alloc(wd_json_doc *d, size_t n) {
    n = (n + 7) & ~(size_t)7;
    block *b = d->blocks;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 4000 ? n : 4000;
        block *nb = malloc(sizeof(block) + cap);
        if (!nb) return NULL;
        nb->used = 0;
        nb->cap = cap;
        /* A block too big for the chunk size goes behind the current one, so
         * the current block's remaining space stays usable. */
        if (b && n > 4000) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            d->blocks = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

typedef struct {
    const unsigned char *s;
    size_t n, i;
    wd_json_doc *doc;
    wd_json_error *err;
    int failed;
    /* A scratch stack of child pointers shared by all nesting levels: an
     * array or object pushes its children, then copies them into the arena. */
    wd_json **stack;
    size_t sp, scap;
} parser;

/* The parser recurses once per nesting level and the wasm stack is 64 KiB
 * (wasm-ld's default): the helpers stay out of line so that parse_value's own
 * frame, the one repeated WD_JSON_MAX_DEPTH times, stays small. */
#define OUT_OF_LINE __attribute__((noinline))

static OUT_OF_LINE void fail(parser *p, const char *msg) {
    if (p->failed) return;
    p->failed = 1;
    if (p->err) {
        p->err->offset = p->i;
        snprintf(p->err->message, sizeof p->err->message, "offset %zu: %s", p->i, msg);
    }
}

static void skip_ws(parser *p) {
    while (p->i < p->n) {
        unsigned char c = p->s[p->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->i++;
    }
}

static OUT_OF_LINE int push(parser *p, wd_json *v) {
    if (p->sp == p->scap) {
        size_t cap = p->scap ? p->scap * 2 : 64;
        wd_json **ns = realloc(p->stack, cap * sizeof *ns);
        if (!ns) {
            fail(p, "out of memory");
            return 0;
        }
        p->stack = ns;
        p->scap = cap;
    }
    p->stack[p->sp++] = v;
    return 1;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex4(parser *p, size_t at, unsigned *out) {
    if (at + 4 > p->n) return 0;
    unsigned v = 0;
    for (size_t k = 0; k < 4; k++) {
        int h = hexval(p->s[at + k]);
        if (h < 0) return 0;
        v = v << 4 | (unsigned)h;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *out, unsigned cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* utf8_len is the length of the valid UTF-8 sequence at s[0..n), 0 if invalid
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* parse_string reads a string at p->i (on the opening quote) into the arena.
 * The decoded form is never longer than the source, which sizes the copy. */
static OUT_OF_LINE const char *parse_string(parser *p, uint32_t *outlen) {
    size_t start = ++p->i, end = start;
    /* First pass: find the closing quote, so the copy is sized once. */
    while (end < p->n && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
    if (end >= p->n) {
        fail(p, "unterminated string");
        return NULL;
    }
    char *out = arena_alloc(p->doc, end - start + 1);
    if (!out) {
        fail(p, "out of memory");
        return NULL;
    }
    size_t o = 0;
    while (p->s[p->i] != '"') {
        unsigned char c = p->s[p->i];
        if (c < 0x20) {
            fail(p, "control character in string");
            return NULL;
        }
        if (c < 0x80 && c != '\\') {
            /* A run of plain ASCII is copied at once: one memcpy per
             * character was most of a short call's instructions. */
            size_t run = 1;
            while (p->i + run < p->n) {
                unsigned char r = p->s[p->i + run];
                if (r < 0x20 || r >= 0x80 || r == '"' || r == '\\') break;
                run++;
            }
            memcpy(out + o, p->s + p->i, run);
            o += run;
            p->i += run;
            continue;
        }
        if (c != '\\') {
            size_t l = utf8_len(p->s + p->i, p->n - p->i);
            if (l == 0) {
                fail(p, "invalid UTF-8 in string");
                return NULL;
            }
            memcpy(out + o, p->s + p->i, l);
            o += l;
            p->i += l;
            continue;
        }
        unsigned char e = p->s[p->i + 1];
        p->i += 2;
        switch (e) {
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case '/': out[o++] = '/'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (!read_hex4(p, p->i, &cp)) {
                p->i -= 2;
                fail(p, "invalid \\u escape");
                return NULL;
            }
            p->i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && p->i + 6 <= p->n && p->s[p->i] == '\\' &&
                p->s[p->i + 1] == 'u' && read_hex4(p, p->i + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p->i += 6;
            } else if (cp >= 0xD800 && cp <= 0xDFFF) {
                cp = 0xFFFD; /* a lone surrogate, as Go's and JavaScript's decoders treat it */
            }
            /* 6 source bytes (12 for a pair) always cover the 3 (4) written. */
            o += put_utf8(out + o, cp);
            break;
        }
        default:
            p->i -= 2;
            fail(p, "invalid escape in string");
            return NULL;
        }
    }
    p->i++; /* the closing quote */
    out[o] = 0;
    *outlen = (uint32_t)o;
    return out;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static wd_json *parse_value(parser *p, int depth);

static OUT_OF_LINE wd_json *new_value(parser *p, wd_json_type t) {
    wd_json *v = arena_alloc(p->doc, sizeof *v);
    if (!v) {
        fail(p, "out of memory");
        return NULL;
    }
    memset(v, 0, sizeof *v);
    v->type = (uint8_t)t;
    return v;
}

static OUT_OF_LINE int finish_container(parser *p, wd_json *v, size_t base) {
    size_t count = p->sp - base;
    if (count > UINT32_MAX) {
        fail(p, "too many elements");
        return 0;
    }
    v->len = (uint32_t)count;
    if (count) {
        v->items = arena_alloc(p->doc, count * sizeof *v->items);
        if (!v->items) {
            fail(p, "out of memory");
            return 0;
        }
        memcpy(v->items, p->stack + base, count * sizeof *v->items);
    }
    p->sp = base;
    return 1;
}

static OUT_OF_LINE wd_json *parse_number(parser *p) {
    size_t start = p->i;
    if (p->s[p->i] == '-') p->i++;
    if (p->i >= p->n || !is_digit(p->s[p->i])) {
        fail(p, "invalid number");
        return NULL;
    }
    if (p->s[p->i] == '0') {
        p->i++;
    } else {
        while (p->i < p->n && is_digit(p->s[p->i])) p->i++;
    }
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        if (p->i >= p->n || !is_digit(p->s[p->i])) {
            fail(p, "invalid number: digit expected after '.'");
            return NULL;
        }
        while (p->i < p->n && is_digit(p->s[p->i])) p->i++;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        if (p->i >= p->n || !is_digit(p->s[p->i])) {
            fail(p, "invalid number: digit expected in exponent");
            return NULL;
        }
        while (p->i < p->n && is_digit(p->s[p->i])) p->i++;
    }
    wd_json *v = new_value(p, WD_JSON_NUMBER);
    if (!v) return NULL;
    size_t len = p->i - start;
    char *text = arena_alloc(p->doc, len + 1);
    if (!text) {
        fail(p, "out of memory");
        return NULL;
    }
    memcpy(text, p->s + start, len);
    text[len] = 0;
    v->str = text;
    v->len = (uint32_t)len;
    return v;
}

static OUT_OF_LINE int literal(parser *p, const char *word) {
    size_t n = strlen(word);
    if (p->n - p->i < n || memcmp(p->s + p->i, word, n) != 0) {
        fail(p, "invalid literal");
        return 0;
    }
    p->i += n;
    return 1;
}

static wd_json *parse_value(parser *p, int depth) {
    skip_ws(p);
    if (p->i >= p->n) {
        fail(p, "unexpected end of input, a value expected");
        return NULL;
    }
    unsigned char c = p->s[p->i];
    wd_json *v;
    switch (c) {
    case '{':
    case '[': {
        if (depth >= WD_JSON_MAX_DEPTH) {
            fail(p, "nested too deep");
            return NULL;
        }
        int object = c == '{';
        unsigned char close = object ? '}' : ']';
        v = new_value(p, object ? WD_JSON_OBJECT : WD_JSON_ARRAY);
        if (!v) return NULL;
        p->i++;
        size_t base = p->sp;
        skip_ws(p);
        if (p->i < p->n && p->s[p->i] == close) {
            p->i++;
            return v;
        }
        for (;;) {
            const char *key = NULL;
            uint32_t keylen = 0;
            if (object) {
                skip_ws(p);
                if (p->i >= p->n || p->s[p->i] != '"') {
                    fail(p, "expected '\"' starting an object key");
                    return NULL;
                }
                key = parse_string(p, &keylen);
                if (!key) return NULL;
                skip_ws(p);
                if (p->i >= p->n || p->s[p->i] != ':') {
                    fail(p, "expected ':' after object key");
                    return NULL;
                }
                p->i++;
            }
            wd_json *item = parse_value(p, depth + 1);
            if (!item) return NULL;
            item->key = key;
            item->keylen = keylen;
            if (!push(p, item)) return NULL;
            skip_ws(p);
            if (p->i < p->n && p->s[p->i] == ',') {
                p->i++;
                continue;
            }
            if (p->i < p->n && p->s[p->i] == close) {
                p->i++;
                break;
            }
            fail(p, object ? "expected ',' or '}' in object" : "expected ',' or ']' in array");
            return NULL;
        }
        return finish_container(p, v, base) ? v : NULL;
    }
    case '"':
        v = new_value(p, WD_JSON_STRING);
        if (!v) return NULL;
        v->str = parse_string(p, &v->len);
        return v->str ? v : NULL;
    case 't':
        return literal(p, "true") ? new_value(p, WD_JSON_TRUE) : NULL;
    case 'f':
        return literal(p, "false") ? new_value(p, WD_JSON_FALSE) : NULL;
    case 'n':
        return literal(p, "null") ? new_value(p, WD_JSON_NULL) : NULL;
    default:
        if (c == '-' || is_digit(c)) return parse_number(p);
        fail(p, "unexpected character, a value expected");
        return NULL;
    }
}

wd_json_doc *wd_json_parse(const char *text, size_t len, wd_json_error *err) {
    wd_json_doc *doc = calloc(1, sizeof *doc);
    if (!doc) {
        if (err) {
            err->offset = 0;
            snprintf(err->message, sizeof err->message, "out of memory");
        }
        return NULL;
    }
    parser p = {.s = (const unsigned char *)(text ? text : ""), .n = text ? len : 0, .doc = doc, .err = err};
    doc->root = parse_value(&p, 0);
    if (doc->root) {
        skip_ws(&p);
        if (p.i < p.n) fail(&p, "unexpected data after the value");
    }
    free(p.stack);
    if (p.failed) {
        wd_json_free(doc);
        return NULL;
    }
    return doc;
}

void wd_json_free(wd_json_doc *doc) {
    if (!doc) return;
    for (block *b = doc->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(doc);
}

const wd_json *wd_json_root(const wd_json_doc *doc) { return doc ? doc->root : NULL; }

wd_json_type wd_json_typeof(const wd_json *v) { return v ? (wd_json_type)v->type : WD_JSON_NULL; }

const char *wd_json_type_name(wd_json_type t) {
    switch (t) {
    case WD_JSON_NULL: return "null";
    case WD_JSON_FALSE:
    case WD_JSON_TRUE: return "boolean";
    case WD_JSON_NUMBER: return "number";
    case WD_JSON_STRING: return "string";
    case WD_JSON_ARRAY: return "array";
    case WD_JSON_OBJECT: return "object";
    }
    return "unknown";
}

const wd_json *wd_json_get(const wd_json *obj, const char *key) {
    if (!obj || obj->type != WD_JSON_OBJECT || !key) return NULL;
    size_t n = strlen(key);
    for (size_t i = obj->len; i-- > 0;) {
        const wd_json *m = obj->items[i];
        if (m->keylen == n && memcmp(m->key, key, n) == 0) return m;
    }
    return NULL;
}

size_t wd_json_len(const wd_json *v) {
    if (!v) return 0;
    switch (v->type) {
    case WD_JSON_ARRAY:
    case WD_JSON_OBJECT:
    case WD_JSON_STRING: return v->len;
    default: return 0;
    }
}

const wd_json *wd_json_at(const wd_json *v, size_t i) {
    if (!v || (v->type != WD_JSON_ARRAY && v->type != WD_JSON_OBJECT) || i >= v->len) return NULL;
    return v->items[i];
}

const char *wd_json_key(const wd_json *member, size_t *len) {
    if (!member || !member->key) return NULL;
    if (len) *len = member->keylen;
    return member->key;
}

int wd_json_string(const wd_json *v, const char **s, size_t *len) {
    if (!v || v->type != WD_JSON_STRING) return 0;
    if (s) *s = v->str;
    if (len) *len = v->len;
    return 1;
}

int wd_json_number(const wd_json *v, double *out) {
    if (!v || v->type != WD_JSON_NUMBER) return 0;
    if (out) *out = strtod(v->str, NULL);
    return 1;
}

int wd_json_int(const wd_json *v, int64_t *out) {
    if (!v || v->type != WD_JSON_NUMBER) return 0;
    if (!strpbrk(v->str, ".eE")) {
        errno = 0;
        char *end;
        long long x = strtoll(v->str, &end, 10);
        if (errno == ERANGE || *end) return 0;
        if (out) *out = (int64_t)x;
        return 1;
    }
    /* A fraction or exponent: accept exact integers a double holds exactly. */
    double d = strtod(v->str, NULL);
    if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != floor(d)) return 0;
    if (out) *out = (int64_t)d;
    return 1;
}

int wd_json_bool(const wd_json *v, int *out) {
    if (!v || (v->type != WD_JSON_TRUE && v->type != WD_JSON_FALSE)) return 0;
    if (out) *out = v->type == WD_JSON_TRUE;
    return 1;
}

const char *wd_json_number_text(const wd_json *v, size_t *len) {
    if (!v || v->type != WD_JSON_NUMBER) return NULL;
    if (len) *len = v->len;
    return v->str;
}

/* ------------------------------------------------------------------------ */
/* JSON writer                                                               */
/* ------------------------------------------------------------------------ */

static void w_fail(wd_writer *w, const char *msg) {
    if (!w->err) w->err = msg;
}

static int w_grow(wd_writer *w, size_t extra) {
    if (w->err) return 0;
    if (extra > SIZE_MAX / 2 - w->len) {
        w_fail(w, "JSON text too large");
        return 0;
    }
    size_t need = w->len + extra + 1;
    if (need <= w->cap) return 1;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < need) cap *= 2;
    char *nd = realloc(w->data, cap);
    if (!nd) {
        w_fail(w, "out of memory");
        return 0;
    }
    w->data = nd;
    w->cap = cap;
    return 1;
}

static void w_put(wd_writer *w, const char *s, size_t n) {
    if (!w_grow(w, n)) return;
    memcpy(w->data + w->len, s, n);
    w->len += n;
    w->data[w->len] = 0;
}

/* w_value prepares for a value: a comma between elements, nothing after a
 * key. It returns 0 when the writer has failed or no value is allowed. */
static int w_value(wd_writer *w) {
    if (w->err) return 0;
    if (w->depth == 0) {
        if (w->len > 0) {
            w_fail(w, "a second top-level value");
            return 0;
        }
        return 1;
    }
    if (w->object[w->depth]) {
        if (!w->after_key) {
            w_fail(w, "a value in an object without a key");
            return 0;
        }
        w->after_key = 0;
        return 1;
    }
    if (!w->first[w->depth]) w_put(w, ",", 1);
    w->first[w->depth] = 0;
    return !w->err;
}

static void w_begin(wd_writer *w, int object) {
    if (!w_value(w)) return;
    if (w->depth >= WD_WRITER_MAX_DEPTH) {
        w_fail(w, "nested too deep");
        return;
    }
    w_put(w, object ? "{" : "[", 1);
    w->depth++;
    w->first[w->depth] = 1;
    w->object[w->depth] = (unsigned char)object;
}

static void w_end(wd_writer *w, int object) {
    if (w->err) return;
    if (w->depth == 0 || w->object[w->depth] != object || w->after_key) {
        w_fail(w, object ? "unbalanced end of object" : "unbalanced end of array");
        return;
    }
    w->depth--;
    w_put(w, object ? "}" : "]", 1);
}

void wd_w_begin_object(wd_writer *w) { w_begin(w, 1); }
void wd_w_end_object(wd_writer *w) { w_end(w, 1); }
void wd_w_begin_array(wd_writer *w) { w_begin(w, 0); }
void wd_w_end_array(wd_writer *w) { w_end(w, 0); }

static void w_quoted(wd_writer *w, const char *str, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    if (!w_grow(w, n + 2)) return;
    w_put(w, "\"", 1);
    size_t i = 0;
    while (i < n && !w->err) {
        size_t run = i;
        /* Copy runs of plain ASCII at once. */
        while (run < n && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\') run++;
        if (run > i) {
            w_put(w, str + i, run - i);
            i = run;
            continue;
        }
        unsigned char c = s[i];
        if (c >= 0x80) {
            size_t l = utf8_len(s + i, n - i);
            if (l == 0) {
                w_put(w, "\\ufffd", 6);
                i++;
            } else {
                w_put(w, str + i, l);
                i += l;
            }
            continue;
        }
        char esc[6] = {'\\', 0};
        size_t el = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            el = 6;
        }
        w_put(w, esc, el);
        i++;
    }
    w_put(w, "\"", 1);
}

void wd_w_key_n(wd_writer *w, const char *key, size_t n) {
    if (w->err) return;
    if (w->depth == 0 || !w->object[w->depth] || w->after_key) {
        w_fail(w, "a key outside an object or after another key");
        return;
    }
    if (!w->first[w->depth]) w_put(w, ",", 1);
    w->first[w->depth] = 0;
    w_quoted(w, key ? key : "", key ? n : 0);
    w_put(w, ":", 1);
    w->after_key = 1;
}

void wd_w_key(wd_writer *w, const char *key) { wd_w_key_n(w, key, key ? strlen(key) : 0); }

void wd_w_string_n(wd_writer *w, const char *s, size_t n) {
    if (!s) {
        wd_w_null(w);
        return;
    }
    if (w_value(w)) w_quoted(w, s, n);
}

void wd_w_string(wd_writer *w, const char *s) { wd_w_string_n(w, s, s ? strlen(s) : 0); }

static char *vformat(const char *fmt, va_list ap, size_t *len) {
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    if (len) *len = (size_t)n;
    return s;
}

void wd_w_stringf(wd_writer *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t n = 0;
    char *s = vformat(fmt, ap, &n);
    va_end(ap);
    if (!s) {
        w_fail(w, "out of memory");
        return;
    }
    wd_w_string_n(w, s, n);
    free(s);
}

void wd_w_int(wd_writer *w, int64_t v) {
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)v);
    if (w_value(w)) w_put(w, buf, (size_t)n);
}

void wd_w_double(wd_writer *w, double v) {
    if (isnan(v) || isinf(v)) {
        wd_w_null(w);
        return;
    }
    char buf[32];
    /* The shortest of %.15g..%.17g that reads back as v. */
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    if (w_value(w)) w_put(w, buf, (size_t)n);
}

void wd_w_bool(wd_writer *w, int v) {
    if (w_value(w)) w_put(w, v ? "true" : "false", v ? 4 : 5);
}

void wd_w_null(wd_writer *w) {
    if (w_value(w)) w_put(w, "null", 4);
}

void wd_w_raw_n(wd_writer *w, const char *json, size_t n) {
    if (w_value(w)) w_put(w, json, n);
}

void wd_w_raw(wd_writer *w, const char *json) { wd_w_raw_n(w, json ? json : "null", json ? strlen(json) : 4); }

void wd_w_json(wd_writer *w, const wd_json *v) {
    if (!v) {
        wd_w_null(w);
        return;
    }
    switch ((wd_json_type)v->type) {
    case WD_JSON_NULL: wd_w_null(w); break;
    case WD_JSON_FALSE: wd_w_bool(w, 0); break;
    case WD_JSON_TRUE: wd_w_bool(w, 1); break;
    case WD_JSON_NUMBER: wd_w_raw_n(w, v->str, v->len); break;
    case WD_JSON_STRING: wd_w_string_n(w, v->str, v->len); break;
    case WD_JSON_ARRAY:
        wd_w_begin_array(w);
        for (uint32_t i = 0; i < v->len; i++) wd_w_json(w, v->items[i]);
        wd_w_end_array(w);
        break;
    case WD_JSON_OBJECT:
        wd_w_begin_object(w);
        for (uint32_t i = 0; i < v->len; i++) {
            wd_w_key_n(w, v->items[i]->key, v->items[i]->keylen);
            wd_w_json(w, v->items[i]);
        }
        wd_w_end_object(w);
        break;
    }
}

const char *wd_w_error(const wd_writer *w) {
    if (w->err) return w->err;
    if (w->depth > 0 || w->after_key) return "unclosed object or array";
    return NULL;
}

void wd_w_free(wd_writer *w) {
    free(w->data);
    memset(w, 0, sizeof *w);
}

/* ------------------------------------------------------------------------ */
/* Registry                                                                  */
/* ------------------------------------------------------------------------ */

static const wd_tool *tools[WD_MAX_TOOLS];
static size_t ntools;
static int warned;

static int register_fail(const char *why, const char *name) {
    if (!warned) {
        warned = 1;
        fprintf(stderr, "warden: tool %s not registered: %s\n", name ? name : "(unnamed)", why);
    }
    return -1;
}

int wd_register(const wd_tool *tool) {
    if (!tool || !tool->name || !*tool->name) return register_fail("it has no name", NULL);
    if (!tool->fn) return register_fail("it has no function", tool->name);
    for (size_t i = 0; i < ntools; i++)
        if (strcasecmp(tools[i]->name, tool->name) == 0) return register_fail("the name is taken", tool->name);
    if (ntools == WD_MAX_TOOLS) return register_fail("too many tools (WD_MAX_TOOLS)", tool->name);
    tools[ntools++] = tool;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Calls                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct owned {
    struct owned *next;
    wd_json_doc *doc;
} owned;

struct wd_call {
    const char *tool;
    const char *call_id;
    const char *cursor;
    owned *docs;          /* documents to free when the call ends */
    wd_writer content;    /* the content blocks, comma-separated, without brackets */
    int blocks;
    wd_writer structured;
    wd_writer details;
    char *next_cursor;
    wd_kind kind;         /* the call's error, WD_OK if none */
    char *message;
    int oom;              /* an allocation for the result failed */
    wd_kind host_kind;    /* last failed capability call */
    char *host_message;
};

const char *wd_call_id(const wd_call *c) { return c->call_id ? c->call_id : ""; }
const char *wd_call_cursor(const wd_call *c) { return c->cursor; }
const char *wd_call_tool(const wd_call *c) { return c->tool; }

static int own(wd_call *c, wd_json_doc *doc) {
    owned *o = malloc(sizeof *o);
    if (!o) {
        wd_json_free(doc);
        c->oom = 1;
        return 0;
    }
    o->doc = doc;
    o->next = c->docs;
    c->docs = o;
    return 1;
}

const wd_json *wd_call_parse(wd_call *c, const char *what, const char *text, size_t len) {
    wd_json_error err;
    wd_json_doc *doc = wd_json_parse(text, len, &err);
    if (!doc) {
        wd_error(c, WD_INVALID_ARGUMENTS, "%s: %s", what ? what : "JSON", err.message);
        return NULL;
    }
    return own(c, doc) ? doc->root : NULL;
}

static void set_error(wd_call *c, wd_kind kind, char *message) {
    free(c->message);
    c->kind = kind == WD_OK ? WD_FAILED : kind;
    c->message = message;
    if (!message) c->oom = 1;
}

int wd_error(wd_call *c, wd_kind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error(c, kind, vformat(fmt, ap, NULL));
    va_end(ap);
    return -1;
}

int wd_error_host(wd_call *c) {
    return wd_error(c, c->host_kind == WD_OK ? WD_FAILED : c->host_kind, "%s",
                    c->host_message ? c->host_message : "host capability failed");
}

static int arg_fail(wd_call *c, const char *name, const char *want, const wd_json *v) {
    if (!v) return wd_error(c, WD_INVALID_ARGUMENTS, "%s: required", name);
    return wd_error(c, WD_INVALID_ARGUMENTS, "%s: want %s, got %s", name, want,
                    wd_json_type_name(wd_json_typeof(v)));
}

static const wd_json *arg_lookup(const wd_json *args, const char *name) {
    const wd_json *v = wd_json_get(args, name);
    return v && v->type == WD_JSON_NULL ? NULL : v;
}

int wd_arg_string(wd_call *c, const wd_json *args, const char *name, int required, const char **s, size_t *len) {
    const wd_json *v = arg_lookup(args, name);
    if (!v && !required) return 0;
    if (!wd_json_string(v, s, len)) return arg_fail(c, name, "a string", v);
    return 1;
}

int wd_arg_int(wd_call *c, const wd_json *args, const char *name, int required, int64_t *out) {
    const wd_json *v = arg_lookup(args, name);
    if (!v && !required) return 0;
    if (!wd_json_int(v, out)) return arg_fail(c, name, "an integer", v);
    return 1;
}

int wd_arg_number(wd_call *c, const wd_json *args, const char *name, int required, double *out) {
    const wd_json *v = arg_lookup(args, name);
    if (!v && !required) return 0;
    if (!wd_json_number(v, out)) return arg_fail(c, name, "a number", v);
    return 1;
}

int wd_arg_bool(wd_call *c, const wd_json *args, const char *name, int required, int *out) {
    const wd_json *v = arg_lookup(args, name);
    if (!v && !required) return 0;
    if (!wd_json_bool(v, out)) return arg_fail(c, name, "a boolean", v);
    return 1;
}

/* content_next prepares the content writer for one more block. */
static wd_writer *content_next(wd_call *c) {
    if (c->blocks++ > 0) w_put(&c->content, ",", 1);
    /* Each block is written as its own top-level value. */
    c->content.depth = 0;
    c->content.after_key = 0;
    return &c->content;
}

void wd_text_n(wd_call *c, const char *text, size_t n) {
    wd_writer *w = content_next(c);
    w_put(w, "{\"type\":\"text\",\"text\":", 22);
    w_quoted(w, text ? text : "", text ? n : 0);
    w_put(w, "}", 1);
}

void wd_text(wd_call *c, const char *text) { wd_text_n(c, text, text ? strlen(text) : 0); }

void wd_textf(wd_call *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t n = 0;
    char *s = vformat(fmt, ap, &n);
    va_end(ap);
    if (!s) {
        c->oom = 1;
        return;
    }
    wd_text_n(c, s, n);
    free(s);
}

void wd_image(wd_call *c, const char *base64, const char *mime_type) {
    wd_writer *w = content_next(c);
    w_put(w, "{\"type\":\"image\",\"data\":", 23);
    w_quoted(w, base64 ? base64 : "", base64 ? strlen(base64) : 0);
    w_put(w, ",\"mimeType\":", 12);
    w_quoted(w, mime_type ? mime_type : "", mime_type ? strlen(mime_type) : 0);
    w_put(w, "}", 1);
}

void wd_content_raw(wd_call *c, const char *block_json) {
    wd_writer *w = content_next(c);
    w_put(w, block_json ? block_json : "null", block_json ? strlen(block_json) : 4);
}

wd_writer *wd_structured(wd_call *c) { return &c->structured; }
wd_writer *wd_details(wd_call *c) { return &c->details; }

void wd_next_cursor(wd_call *c, const char *cursor) {
    free(c->next_cursor);
    c->next_cursor = cursor ? strdup(cursor) : NULL;
    if (cursor && !c->next_cursor) c->oom = 1;
}

/* ------------------------------------------------------------------------ */
/* Host functions                                                            */
/* ------------------------------------------------------------------------ */

const char *wd_host_message(const wd_call *c) { return c->host_message ? c->host_message : ""; }
wd_kind wd_host_kind(const wd_call *c) { return c->host_kind; }

static wd_kind host_fail(wd_call *c, wd_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static wd_kind host_fail(wd_call *c, wd_kind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    free(c->host_message);
    c->host_message = vformat(fmt, ap, NULL);
    va_end(ap);
    c->host_kind = kind;
    return kind;
}

typedef uint64_t (*import_fn)(uint64_t);

/* capability sends request to one import, frees the reply block once parsed
 * and splits the {"result"} / {"error"} envelope. */
static wd_kind capability(wd_call *c, const char *name, import_fn fn, const char *request, const wd_json **result) {
    if (result) *result = NULL;
    if (!request) return host_fail(c, WD_INVALID_ARGUMENTS, "%s: no request", name);
    uint64_t reply = fn(pack(request, strlen(request)));
    char *ptr = (char *)(uintptr_t)(uint32_t)(reply >> 32);
    size_t len = (uint32_t)reply;
    wd_json_error err;
    wd_json_doc *doc = wd_json_parse(ptr, len, &err);
    free(ptr); /* the host placed the reply in a block from warden_alloc */
    if (!doc) return host_fail(c, WD_FAILED, "%s: reply is not JSON: %s", name, err.message);
    if (!own(c, doc)) return host_fail(c, WD_FAILED, "%s: out of memory", name);
    const wd_json *e = wd_json_get(doc->root, "error");
    if (e && e->type != WD_JSON_NULL) {
        const char *kind = "failed", *msg = "";
        size_t kn = 6;
        wd_json_string(wd_json_get(e, "kind"), &kind, &kn);
        wd_json_string(wd_json_get(e, "message"), &msg, NULL);
        wd_kind k = wd_kind_parse(kind, kn);
        return host_fail(c, k, "%s", msg);
    }
    if (result) *result = wd_json_get(doc->root, "result");
    return WD_OK;
}

wd_kind wd_fs(wd_call *c, const char *r, const wd_json **out) { return capability(c, "fs", wd_import_fs, r, out); }
wd_kind wd_memory(wd_call *c, const char *r, const wd_json **out) { return capability(c, "memory", wd_import_memory, r, out); }
wd_kind wd_lsp(wd_call *c, const char *r, const wd_json **out) { return capability(c, "lsp", wd_import_lsp, r, out); }
wd_kind wd_net(wd_call *c, const char *r, const wd_json **out) { return capability(c, "net", wd_import_net, r, out); }
wd_kind wd_env(wd_call *c, const char *r, const wd_json **out) { return capability(c, "env", wd_import_env, r, out); }
wd_kind wd_elicit(wd_call *c, const char *r, const wd_json **out) { return capability(c, "elicit", wd_import_elicit, r, out); }
wd_kind wd_sample(wd_call *c, const char *r, const wd_json **out) { return capability(c, "sample", wd_import_sample, r, out); }
wd_kind wd_roots(wd_call *c, const char *r, const wd_json **out) { return capability(c, "roots", wd_import_roots, r, out); }
wd_kind wd_ask(wd_call *c, const char *r, const wd_json **out) { return capability(c, "ask", wd_import_ask, r, out); }

typedef wd_kind (*cap_fn)(wd_call *, const char *, const wd_json **);

/* simple_op sends {"op": op, k1: v1[, k2: v2]} and, if field is not NULL,
 * returns that string member of the result. */
static wd_kind simple_op(wd_call *c, cap_fn fn, const char *op, const char *k1, const char *v1, const char *k2,
                         const char *v2, const char *field, const char **out, size_t *len) {
    wd_writer w = WD_WRITER_INIT;
    wd_w_begin_object(&w);
    wd_w_key(&w, "op");
    wd_w_string(&w, op);
    wd_w_key(&w, k1);
    wd_w_string(&w, v1);
    if (k2) {
        wd_w_key(&w, k2);
        wd_w_string(&w, v2);
    }
    wd_w_end_object(&w);
    if (wd_w_error(&w)) {
        wd_w_free(&w);
        return host_fail(c, WD_FAILED, "%s: out of memory", op);
    }
    const wd_json *result;
    wd_kind k = fn(c, w.data, &result);
    wd_w_free(&w);
    if (k != WD_OK || !field) return k;
    if (!wd_json_string(wd_json_get(result, field), out, len))
        return host_fail(c, WD_FAILED, "%s reply has no string %s", op, field);
    return WD_OK;
}

wd_kind wd_fs_read(wd_call *c, const char *path, const char **content, size_t *len) {
    return simple_op(c, wd_fs, "read", "path", path, NULL, NULL, "content", content, len);
}
wd_kind wd_fs_write(wd_call *c, const char *path, const char *content) {
    return simple_op(c, wd_fs, "write", "path", path, "content", content, NULL, NULL, NULL);
}
wd_kind wd_memory_get(wd_call *c, const char *topic, const char **value, size_t *len) {
    return simple_op(c, wd_memory, "get", "topic", topic, NULL, NULL, "value", value, len);
}
wd_kind wd_memory_set(wd_call *c, const char *topic, const char *value) {
    return simple_op(c, wd_memory, "set", "topic", topic, "value", value, NULL, NULL, NULL);
}
wd_kind wd_memory_append(wd_call *c, const char *topic, const char *value) {
    return simple_op(c, wd_memory, "append", "topic", topic, "value", value, NULL, NULL, NULL);
}
wd_kind wd_env_get(wd_call *c, const char *key, const char **value, size_t *len) {
    return simple_op(c, wd_env, "get", "key", key, NULL, NULL, "value", value, len);
}

void wd_logv(wd_call *c, wd_level level, const char *fmt, va_list ap) {
    (void)c;
    size_t n = 0;
    char *s = vformat(fmt, ap, &n);
    if (!s) return;
    wd_import_log((int32_t)level, pack(s, n));
    free(s);
}

void wd_log(wd_call *c, wd_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    wd_logv(c, level, fmt, ap);
    va_end(ap);
}

void wd_progress(wd_call *c, double done, double total, const char *message) {
    (void)c;
    wd_writer w = WD_WRITER_INIT;
    wd_w_begin_object(&w);
    wd_w_key(&w, "progress");
    wd_w_double(&w, done);
    if (total > 0) {
        wd_w_key(&w, "total");
        wd_w_double(&w, total);
    }
    if (message) {
        wd_w_key(&w, "message");
        wd_w_string(&w, message);
    }
    wd_w_end_object(&w);
    if (!wd_w_error(&w)) wd_import_progress(pack(w.data, w.len));
    wd_w_free(&w);
}

/* ------------------------------------------------------------------------ */
/* Exports                                                                   */
/* ------------------------------------------------------------------------ */

#define WD_EXPORT(name) __attribute__((export_name(name)))

/* The last response: the host reads it after the export returns, so it is
 * freed at the start of the next describe or call. */
static char *last_response;

static void forget_response(void) {
    free(last_response);
    last_response = NULL;
}

/* respond keeps w's text as the response and returns its packed range. */
static int64_t respond(wd_writer *w) {
    last_response = w->data;
    int64_t packed = (int64_t)pack(w->data, w->len);
    w->data = NULL;
    w->len = w->cap = 0;
    return packed;
}

/* static_response is used when even the response cannot be allocated. */
static const char oom_response[] = "{\"error\":{\"kind\":\"failed\",\"message\":\"out of memory building the response\"}}";

WD_EXPORT("warden_abi_version") int32_t warden_abi_version(void) { return 1; }

/* warden_alloc only allocates: it runs while the host places a request or,
 * re-entrantly from inside an import, a reply. */
WD_EXPORT("warden_alloc") int32_t warden_alloc(int32_t size) {
    if (size < 0) return 0;
    return (int32_t)(uintptr_t)malloc(size ? (size_t)size : 1);
}

WD_EXPORT("warden_describe") int64_t warden_describe(void) {
    forget_response();
    wd_writer w = WD_WRITER_INIT;
    wd_w_begin_object(&w);
    wd_w_key(&w, "tools");
    wd_w_begin_array(&w);
    for (size_t i = 0; i < ntools; i++) {
        const wd_tool *t = tools[i];
        wd_w_begin_object(&w);
        wd_w_key(&w, "name");
        wd_w_string(&w, t->name);
        if (t->title) {
            wd_w_key(&w, "title");
            wd_w_string(&w, t->title);
        }
        wd_w_key(&w, "description");
        wd_w_string(&w, t->description ? t->description : "");
        wd_w_key(&w, "inputSchema");
        wd_w_raw(&w, t->input_schema ? t->input_schema : "{\"type\":\"object\"}");
        if (t->output_schema) {
            wd_w_key(&w, "outputSchema");
            wd_w_raw(&w, t->output_schema);
        }
        if (t->annotations) {
            wd_w_key(&w, "annotations");
            wd_w_raw(&w, t->annotations);
        }
        if (t->capabilities) {
            wd_w_key(&w, "capabilities");
            wd_w_raw(&w, t->capabilities);
        }
        if (t->task_support) {
            wd_w_key(&w, "execution");
            wd_w_begin_object(&w);
            wd_w_key(&w, "taskSupport");
            wd_w_string(&w, t->task_support);
            wd_w_end_object(&w);
        }
        if (t->extra && *t->extra) {
            /* Verbatim members: the writer has no state to track them by. */
            w_put(&w, ",", 1);
            w_put(&w, t->extra, strlen(t->extra));
        }
        wd_w_end_object(&w);
    }
    wd_w_end_array(&w);
    wd_w_end_object(&w);
    if (wd_w_error(&w)) {
        wd_w_free(&w);
        return (int64_t)pack(oom_response, sizeof oom_response - 1);
    }
    return respond(&w);
}

static void call_free(wd_call *c) {
    for (owned *o = c->docs, *next; o; o = next) {
        next = o->next;
        wd_json_free(o->doc);
        free(o);
    }
    wd_w_free(&c->content);
    wd_w_free(&c->structured);
    wd_w_free(&c->details);
    free(c->next_cursor);
    free(c->message);
    free(c->host_message);
}

/* guest_kind is kind if a guest may report it, else WD_FAILED. */
static int guest_may_report(wd_kind k) { return k >= WD_INVALID_ARGUMENTS && k <= WD_UNSUPPORTED; }

static void write_details(wd_writer *w, wd_call *c) {
    if (c->details.len == 0 || wd_w_error(&c->details)) return;
    wd_w_key(w, "details");
    wd_w_raw_n(w, c->details.data, c->details.len);
}

static int64_t respond_error(wd_call *c, wd_kind kind, const char *message) {
    wd_writer w = WD_WRITER_INIT;
    wd_w_begin_object(&w);
    wd_w_key(&w, "error");
    wd_w_begin_object(&w);
    wd_w_key(&w, "kind");
    if (guest_may_report(kind)) {
        wd_w_string(&w, wd_kind_name(kind));
        wd_w_key(&w, "message");
        wd_w_string(&w, message);
    } else {
        wd_w_string(&w, "failed");
        wd_w_key(&w, "message");
        wd_w_stringf(&w, "%s: %s", wd_kind_name(kind), message);
    }
    wd_w_end_object(&w);
    if (c) write_details(&w, c);
    wd_w_end_object(&w);
    if (wd_w_error(&w)) {
        wd_w_free(&w);
        return (int64_t)pack(oom_response, sizeof oom_response - 1);
    }
    return respond(&w);
}

static int64_t finish(wd_call *c, int rc) {
    if (c->oom) return respond_error(c, WD_FAILED, "out of memory building the result");
    if (c->kind != WD_OK) return respond_error(c, c->kind, c->message ? c->message : "");
    if (rc != 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "tool returned %d without recording an error", rc);
        return respond_error(c, WD_FAILED, msg);
    }
    const char *werr = wd_w_error(&c->content);
    if (!werr) werr = wd_w_error(&c->structured);
    if (!werr) werr = wd_w_error(&c->details);
    if (werr) {
        char msg[128];
        snprintf(msg, sizeof msg, "building the result: %s", werr);
        return respond_error(c, WD_FAILED, msg);
    }
    wd_writer w = WD_WRITER_INIT;
    w_put(&w, "{\"content\":[", 12);
    if (c->content.len) w_put(&w, c->content.data, c->content.len);
    w_put(&w, "]", 1);
    /* Hand-written so far: let the writer know it is inside the object. */
    w.depth = 1;
    w.object[1] = 1;
    w.first[1] = 0;
    if (c->structured.len) {
        wd_w_key(&w, "structuredContent");
        wd_w_raw_n(&w, c->structured.data, c->structured.len);
    }
    write_details(&w, c);
    if (c->next_cursor) {
        wd_w_key(&w, "nextCursor");
        wd_w_string(&w, c->next_cursor);
    }
    wd_w_end_object(&w);
    if (wd_w_error(&w)) {
        wd_w_free(&w);
        return respond_error(c, WD_FAILED, "out of memory building the response");
    }
    return respond(&w);
}

WD_EXPORT("warden_call") int64_t warden_call(int64_t request) {
    forget_response();
    char *ptr = (char *)(uintptr_t)(uint32_t)((uint64_t)request >> 32);
    size_t len = (uint32_t)request;
    wd_json_error err;
    wd_json_doc *doc = wd_json_parse(ptr, len, &err);
    free(ptr); /* from warden_alloc; everything needed is now in doc */
    if (!doc) {
        char msg[160];
        snprintf(msg, sizeof msg, "decode request: %s", err.message);
        return respond_error(NULL, WD_FAILED, msg);
    }
    const wd_json *root = doc->root;
    const char *name = NULL;
    if (!wd_json_string(wd_json_get(root, "tool"), &name, NULL)) {
        wd_json_free(doc);
        return respond_error(NULL, WD_FAILED, "decode request: no \"tool\" string");
    }
    const wd_tool *t = NULL;
    for (size_t i = 0; i < ntools && !t; i++)
        if (strcmp(tools[i]->name, name) == 0) t = tools[i];
    if (!t) {
        char msg[200];
        snprintf(msg, sizeof msg, "this module has no tool \"%.128s\"", name);
        wd_json_free(doc);
        return respond_error(NULL, WD_NOT_FOUND, msg);
    }
    wd_call c;
    memset(&c, 0, sizeof c);
    c.tool = t->name;
    wd_json_string(wd_json_get(root, "callId"), &c.call_id, NULL);
    wd_json_string(wd_json_get(root, "cursor"), &c.cursor, NULL);
    const wd_json *args = wd_json_get(root, "arguments");
    static const wd_json empty = {.type = WD_JSON_OBJECT};
    if (!args || args->type == WD_JSON_NULL) args = &empty;
    int rc;
    if (args->type != WD_JSON_OBJECT)
        rc = wd_error(&c, WD_INVALID_ARGUMENTS, "arguments: want an object, got %s",
                      wd_json_type_name(wd_json_typeof(args)));
    else
        rc = t->fn(&c, args);
    int64_t out = finish(&c, rc);
    call_free(&c);
    wd_json_free(doc);
    return out;
}
