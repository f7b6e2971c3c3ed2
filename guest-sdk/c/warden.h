/*
 * warden.h - the C guest SDK of warden (docs/abi.md, ABI version 1).
 *
 * One header and one source file (warden.c): compile both into a WASI
 * reactor, e.g.
 *
 *   clang --target=wasm32-wasi --sysroot=/usr -std=gnu11 -O2 -mexec-model=reactor \
 *         -Wl,--strip-debug -o tool.wasm tool.c warden.c
 *
 * warden.c defines the module's exports (warden_abi_version, warden_alloc,
 * warden_describe, warden_call); the tool's source registers its tools from a
 * constructor, which the reactor's _initialize runs once:
 *
 *   __attribute__((constructor)) static void init(void) { wd_register(&my_tool); }
 *
 * Memory: everything the SDK hands a tool during a call (arguments, parsed
 * host replies, strings) belongs to the call and is freed when the tool
 * returns. Nothing leaks across calls, so one instance can serve any number
 * of calls of a session. Use malloc/free for state that must outlive a call.
 *
 * Names: everything is prefixed wd_ / WD_; the warden_* names are the ABI's
 * exports and are not to be called from C.
 */
#ifndef WARDEN_H
#define WARDEN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Error kinds                                                               */
/* ------------------------------------------------------------------------ */

/*
 * wd_kind is the kind of an error (docs/abi.md, "warden_call"). WD_OK means
 * no error. A tool may report WD_INVALID_ARGUMENTS ... WD_UNSUPPORTED; the
 * kinds after them are the host's alone and appear only in capability
 * replies. A tool that reports one of those is answered as WD_FAILED with the
 * kind prefixed to the message (the host would otherwise turn it into
 * bad_output and lose the message).
 */
typedef enum {
    WD_OK = 0,
    WD_INVALID_ARGUMENTS,
    WD_NOT_FOUND,
    WD_DENIED,
    WD_FAILED,
    WD_CANCELLED,
    WD_UNSUPPORTED,
    /* host-only kinds */
    WD_TIMEOUT,
    WD_OUT_OF_FUEL,
    WD_OUT_OF_MEMORY,
    WD_TRAPPED,
    WD_GUEST_EXIT,
    WD_BAD_OUTPUT,
    WD_INTERNAL,
    WD_UNAVAILABLE
} wd_kind;

/* wd_kind_name returns the wire name of kind ("invalid_arguments"), "" for WD_OK. */
const char *wd_kind_name(wd_kind kind);

/* wd_kind_parse returns the kind named name (n bytes); WD_FAILED for an unknown name. */
wd_kind wd_kind_parse(const char *name, size_t n);

/* ------------------------------------------------------------------------ */
/* JSON reader                                                               */
/* ------------------------------------------------------------------------ */

/*
 * The reader parses a whole document (RFC 8259, strict: UTF-8, no trailing
 * bytes but whitespace, nesting at most WD_JSON_MAX_DEPTH) into a tree of
 * wd_json values owned by a wd_json_doc. Strings are decoded (escapes
 * resolved, lone surrogates replaced by U+FFFD) and NUL-terminated; they may
 * still hold a NUL byte of their own (\u0000), so prefer the length.
 * Numbers keep their source text, so a value re-written by the writer is
 * byte-for-byte the number that was read.
 *
 * Every accessor accepts NULL and answers "absent": chains such as
 * wd_json_get(wd_json_get(v, "a"), "b") need no checks in between.
 */
#define WD_JSON_MAX_DEPTH 256

typedef enum {
    WD_JSON_NULL,
    WD_JSON_FALSE,
    WD_JSON_TRUE,
    WD_JSON_NUMBER,
    WD_JSON_STRING,
    WD_JSON_ARRAY,
    WD_JSON_OBJECT
} wd_json_type;

typedef struct wd_json wd_json;         /* one value */
typedef struct wd_json_doc wd_json_doc; /* a parsed document: owns its values */

/* wd_json_error describes why a parse failed: a message and the byte offset. */
typedef struct {
    char message[96];
    size_t offset;
} wd_json_error;

/*
 * wd_json_parse parses the len bytes at text. It returns the document, or
 * NULL with *err filled in (err may be NULL): "offset 7: expected ':' after
 * object key", or "out of memory". Free the document with wd_json_free,
 * unless it came from a call (wd_call_parse), which frees it itself.
 */
wd_json_doc *wd_json_parse(const char *text, size_t len, wd_json_error *err);

/* wd_json_free frees doc and every value in it. NULL is fine. */
void wd_json_free(wd_json_doc *doc);

/* wd_json_root is the document's top-level value. */
const wd_json *wd_json_root(const wd_json_doc *doc);

/* wd_json_typeof is v's type; WD_JSON_NULL for NULL. */
wd_json_type wd_json_typeof(const wd_json *v);

/* wd_json_type_name is "null", "boolean", "number", "string", "array" or "object". */
const char *wd_json_type_name(wd_json_type t);

/* wd_json_get is the member key of object obj (the last one if the key
 * repeats, as most decoders do), or NULL if obj is no object or lacks it. */
const wd_json *wd_json_get(const wd_json *obj, const char *key);

/* wd_json_len is the number of elements of an array or members of an
 * object, the byte length of a string, and 0 for anything else. */
size_t wd_json_len(const wd_json *v);

/* wd_json_at is element i of an array, or member i of an object (in source
 * order; its key is wd_json_key), or NULL when i is out of bounds. */
const wd_json *wd_json_at(const wd_json *v, size_t i);

/* wd_json_key is the key of a value found by wd_json_at on an object (and
 * its length in *len if len is not NULL); NULL for any other value. */
const char *wd_json_key(const wd_json *member, size_t *len);

/* wd_json_string returns 1 and the decoded string (NUL-terminated; its
 * length in *len if len is not NULL) if v is a string; otherwise 0. */
int wd_json_string(const wd_json *v, const char **s, size_t *len);

/* wd_json_number returns 1 and v's value if v is a number (possibly rounded
 * to the nearest double); otherwise 0. */
int wd_json_number(const wd_json *v, double *out);

/* wd_json_int returns 1 and v's value if v is a number with an exact
 * integer value in int64 range (1, -7, 2.0, 1e3); otherwise 0. */
int wd_json_int(const wd_json *v, int64_t *out);

/* wd_json_bool returns 1 and v's value (0 or 1) if v is true or false; otherwise 0. */
int wd_json_bool(const wd_json *v, int *out);

/* wd_json_number_text is the source text of a number ("1.50e3"), NULL for
 * any other value. */
const char *wd_json_number_text(const wd_json *v, size_t *len);

/* ------------------------------------------------------------------------ */
/* JSON writer                                                               */
/* ------------------------------------------------------------------------ */

/*
 * A wd_writer builds a JSON text in a growable buffer. Commas and colons are
 * inserted for you: write a key with wd_w_key, then its value. Strings are
 * escaped (quotes, backslashes, control characters) and invalid UTF-8 is
 * replaced by U+FFFD, so the output is always valid JSON text when the calls
 * are balanced. The buffer stays NUL-terminated.
 *
 * Errors are sticky: after an allocation failure or a misuse (a value where
 * a key is due, nesting past WD_WRITER_MAX_DEPTH, unbalanced ends) every
 * later call does nothing and wd_w_error returns a message.
 *
 * A writer declared by you starts as WD_WRITER_INIT and is freed with
 * wd_w_free. The writers the SDK hands out for a result (wd_structured,
 * wd_details) belong to the call.
 */
#define WD_WRITER_MAX_DEPTH 256

typedef struct {
    char *data;   /* the text so far, NUL-terminated (NULL before the first write) */
    size_t len;   /* its length */
    size_t cap;
    const char *err; /* first error, or NULL */
    int depth;
    int after_key;   /* a key was written; its value is due */
    unsigned char first[WD_WRITER_MAX_DEPTH + 1]; /* nothing written yet at this depth */
    unsigned char object[WD_WRITER_MAX_DEPTH + 1]; /* depth is an object */
} wd_writer;

#define WD_WRITER_INIT {0}

void wd_w_begin_object(wd_writer *w);
void wd_w_end_object(wd_writer *w);
void wd_w_begin_array(wd_writer *w);
void wd_w_end_array(wd_writer *w);
/* wd_w_key writes an object member's key; the next call writes its value. */
void wd_w_key(wd_writer *w, const char *key);
void wd_w_key_n(wd_writer *w, const char *key, size_t n);
/* wd_w_string writes a string; NULL writes null. */
void wd_w_string(wd_writer *w, const char *s);
void wd_w_string_n(wd_writer *w, const char *s, size_t n);
void wd_w_stringf(wd_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wd_w_int(wd_writer *w, int64_t v);
/* wd_w_double writes v with enough digits to read back the same double;
 * NaN and infinities, which JSON cannot hold, are written as null. */
void wd_w_double(wd_writer *w, double v);
void wd_w_bool(wd_writer *w, int v);
void wd_w_null(wd_writer *w);
/* wd_w_raw writes json, which must be one valid JSON value, unchanged. */
void wd_w_raw(wd_writer *w, const char *json);
void wd_w_raw_n(wd_writer *w, const char *json, size_t n);
/* wd_w_json writes a parsed value (numbers keep their source text). */
void wd_w_json(wd_writer *w, const wd_json *v);
/* wd_w_error is NULL while the writer is fine, else what went wrong first.
 * It also reports unclosed objects and arrays and a key without a value. */
const char *wd_w_error(const wd_writer *w);
/* wd_w_free releases the buffer and resets w to WD_WRITER_INIT. */
void wd_w_free(wd_writer *w);

/* ------------------------------------------------------------------------ */
/* Tools                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct wd_call wd_call; /* one call in progress */

/*
 * wd_tool_fn runs one call. args is the call's "arguments" object (an empty
 * object when the request had none), already validated by the host against
 * the tool's inputSchema. The function adds content (wd_text, ...) and
 * returns 0, or records an error (wd_error, wd_error_host, a failing
 * wd_arg_*) and returns -1. Returning non-zero without recording an error
 * reports WD_FAILED.
 */
typedef int (*wd_tool_fn)(wd_call *call, const wd_json *args);

/*
 * wd_tool describes one tool. Schemas, annotations, capabilities and extra
 * are JSON text written into the descriptor unchanged (the host checks them
 * at load, naming the field it refuses). Only name, description,
 * input_schema and fn are required; leave the others NULL.
 */
typedef struct {
    const char *name;          /* 1-128 of A-Za-z0-9_-. */
    const char *description;   /* what the model reads to choose the tool */
    const char *input_schema;  /* JSON Schema object, "type":"object" at its root */
    const char *output_schema; /* optional; results must then carry matching structuredContent */
    const char *title;         /* optional human-readable label */
    const char *annotations;   /* optional, e.g. {"readOnlyHint":true} */
    const char *capabilities;  /* optional requests, e.g. {"fs":{"read":["."]},"memory":"read-write"} */
    const char *extra;         /* optional members appended verbatim, e.g. "\"version\":\"1.0\"" */
    wd_tool_fn fn;
    /* optional: whether the tool may run as an MCP task, under the task
     * budget (tools.limits.<tool>.task_timeout, task_fuel) instead of the
     * interactive timeout: WD_TASK_OPTIONAL or WD_TASK_REQUIRED; NULL is
     * WD_TASK_FORBIDDEN, MCP's default. Config may override it
     * (tools.tasks; docs/tasks.md). Last, so that positional initializers
     * written before it still compile. */
    const char *task_support;
} wd_tool;

/* The values of wd_tool.task_support (the descriptor's execution.taskSupport). */
#define WD_TASK_FORBIDDEN "forbidden"
#define WD_TASK_OPTIONAL "optional"
#define WD_TASK_REQUIRED "required"

/*
 * wd_register adds tool (the pointer is kept: give it static storage) to the
 * module. Call it from a constructor. It returns 0, or -1 if the name is
 * missing or taken (ignoring case) or the table is full (WD_MAX_TOOLS).
 * A rejected tool is left out of the descriptor, so the mistake shows as a
 * missing tool; the first rejection is also printed to stderr.
 */
#define WD_MAX_TOOLS 64
int wd_register(const wd_tool *tool);

/* wd_call_id is the request's callId ("" when absent). */
const char *wd_call_id(const wd_call *call);
/* wd_call_cursor is the continuation cursor of a paginated tool, NULL on a first call. */
const char *wd_call_cursor(const wd_call *call);
/* wd_call_tool is the name of the tool being called. */
const char *wd_call_tool(const wd_call *call);

/*
 * wd_call_parse parses text like wd_json_parse into a document the call owns
 * (freed when the tool returns). On failure it returns NULL and records an
 * invalid_arguments error "what: <parse error>"; the tool then returns -1.
 */
const wd_json *wd_call_parse(wd_call *call, const char *what, const char *text, size_t len);

/* ------------------------------------------------------------------------ */
/* Arguments                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * Each wd_arg_* reads the member name of args. It returns 1 with the value
 * stored, 0 if the member is absent (or null) and not required (the output
 * is left as it was: initialise it to your default), and -1 after recording
 * an invalid_arguments error naming the member ("text: required",
 * "limit: want an integer, got string") when it is required and absent or
 * has the wrong type.
 */
int wd_arg_string(wd_call *call, const wd_json *args, const char *name, int required,
                  const char **s, size_t *len);
int wd_arg_int(wd_call *call, const wd_json *args, const char *name, int required, int64_t *out);
int wd_arg_number(wd_call *call, const wd_json *args, const char *name, int required, double *out);
int wd_arg_bool(wd_call *call, const wd_json *args, const char *name, int required, int *out);

/* ------------------------------------------------------------------------ */
/* Results                                                                   */
/* ------------------------------------------------------------------------ */

/* wd_text adds a text content block. */
void wd_text(wd_call *call, const char *text);
void wd_text_n(wd_call *call, const char *text, size_t n);
void wd_textf(wd_call *call, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* wd_image adds an image block: base64 data and a media type ("image/png"). */
void wd_image(wd_call *call, const char *base64, const char *mime_type);
/* wd_content_raw adds a content block given as JSON text (an MCP content
 * object: resource_link, resource, audio, ...), unchanged. */
void wd_content_raw(wd_call *call, const char *block_json);

/* wd_structured is the writer of the result's structuredContent: write one
 * object into it. A tool with an output_schema must do so on success. */
wd_writer *wd_structured(wd_call *call);
/* wd_details is the writer of the result's details (kept in logs, never
 * shown to the model): write one value into it. */
wd_writer *wd_details(wd_call *call);
/* wd_next_cursor sets the result's nextCursor (paginated tools). */
void wd_next_cursor(wd_call *call, const char *cursor);

/*
 * wd_error records the call's error (replacing an earlier one) and returns
 * -1, so a tool can `return wd_error(call, WD_INVALID_ARGUMENTS, "text: %s",
 * why);`. The result's content is dropped; details are kept.
 */
int wd_error(wd_call *call, wd_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------------ */
/* Host functions                                                            */
/* ------------------------------------------------------------------------ */

/*
 * All host functions serve a call only: use them from a tool function, never
 * from a constructor (the load fails with bad_output).
 *
 * Capability functions send one JSON request (NUL-terminated; build it with
 * a wd_writer) to a warden.* import and parse the reply. They return WD_OK
 * and set *result to the reply's "result" value (owned by the call; result
 * may be NULL to discard it), or the reply's error kind, keeping its message
 * for wd_host_message and wd_error_host. A capability the tool is not
 * granted answers WD_DENIED, never a trap. A reply that does not parse is
 * WD_FAILED.
 */

/* wd_host_message is the message of the last failed capability call of
 * this call ("" if none). */
const char *wd_host_message(const wd_call *call);
/* wd_host_kind is the kind of the last failed capability call (WD_OK if none). */
wd_kind wd_host_kind(const wd_call *call);

/* wd_error_host reports the last capability failure as the tool's own
 * error (same kind, same message) and returns -1; host-only kinds become
 * WD_FAILED as wd_error does. */
int wd_error_host(wd_call *call);

/* warden.fs: project files, under the fs grants (docs/abi.md, "warden.fs
 * operations": read, list, stat, glob, search, write, append, mkdir, remove). */
wd_kind wd_fs(wd_call *call, const char *request, const wd_json **result);
/* warden.memory: the project memory store (get, set, append, list, delete). */
wd_kind wd_memory(wd_call *call, const char *request, const wd_json **result);
/* warden.lsp: language-server queries (documentSymbol, workspaceSymbol,
 * definition, references, hover, diagnostics). */
wd_kind wd_lsp(wd_call *call, const char *request, const wd_json **result);
/* warden.net: an HTTP request to a granted host (op "request"). */
wd_kind wd_net(wd_call *call, const char *request, const wd_json **result);
/* warden.env: granted configuration values (get, list). */
wd_kind wd_env(wd_call *call, const char *request, const wd_json **result);
/* warden.elicit: ask the person ({"key", "params"}: MCP elicitation/create). */
wd_kind wd_elicit(wd_call *call, const char *request, const wd_json **result);
/* warden.sample: ask the client's model (MCP sampling/createMessage params).
 * Deprecated: MCP 2026-07-28 deprecates sampling (SEP-2577); a tool that
 * needs a model calls the provider's API itself (a net grant). It keeps
 * working while clients support it. */
wd_kind wd_sample(wd_call *call, const char *request, const wd_json **result);
/* warden.roots: the client's roots (MCP roots/list).
 * Deprecated: MCP 2026-07-28 deprecates roots (SEP-2577); take directories
 * and files as tool arguments, or from config (project.roots, fs grants).
 * It keeps working while clients support it. */
wd_kind wd_roots(wd_call *call, const char *request, const wd_json **result);
/* warden.ask: several elicit/sample/roots requests at once ({"requests": [...]}). */
wd_kind wd_ask(wd_call *call, const char *request, const wd_json **result);

/* Convenience forms of common operations. Strings they return belong to the call. */

/* wd_fs_read reads a whole project file (op "read"): its content and length.
 * A binary file comes back base64-encoded; see the result's "encoding". */
wd_kind wd_fs_read(wd_call *call, const char *path, const char **content, size_t *len);
/* wd_fs_write replaces (or creates) a project file with the NUL-terminated content. */
wd_kind wd_fs_write(wd_call *call, const char *path, const char *content);
/* wd_memory_get reads a memory topic's value (WD_NOT_FOUND if it has none). */
wd_kind wd_memory_get(wd_call *call, const char *topic, const char **value, size_t *len);
/* wd_memory_set replaces a memory topic's value. */
wd_kind wd_memory_set(wd_call *call, const char *topic, const char *value);
/* wd_memory_append appends value to a topic, creating it if missing. */
wd_kind wd_memory_append(wd_call *call, const char *topic, const char *value);
/* wd_env_get reads a granted configuration value. */
wd_kind wd_env_get(wd_call *call, const char *key, const char **value, size_t *len);

/* Log levels of wd_log. */
typedef enum { WD_DEBUG = 0, WD_INFO = 1, WD_WARNING = 2, WD_ERROR = 3 } wd_level;

/* wd_log sends one log line (warden.log) to warden's log and, when the
 * client asked for it, to the client's log. That forwarding is MCP
 * logging, which MCP 2026-07-28 deprecates (SEP-2577): write for the
 * operator, who reads warden's log (stderr) and traces, and report to the
 * client with wd_progress (a task's status message) and the result. A call may log
 * at most log_lines lines and log_bytes bytes (config); one line at most
 * 16 KiB. */
void wd_log(wd_call *call, wd_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void wd_logv(wd_call *call, wd_level level, const char *fmt, va_list ap);

/* wd_progress reports progress (warden.progress): done must increase from
 * one report to the next; total <= 0 and message NULL are left out. */
void wd_progress(wd_call *call, double done, double total, const char *message);

#ifdef __cplusplus
}
#endif

#endif /* WARDEN_H */
