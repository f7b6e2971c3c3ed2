/*
 * hostcall: a test fixture that forwards {"capability": NAME, "request": {...}}
 * to the SDK's wrapper of that warden.* import and returns the reply's result
 * as structuredContent {"result": ...}, or the reply's error as its own.
 * It proves each wrapper reaches the import of its name.
 */
#include <string.h>

#include "../../warden.h"

typedef wd_kind (*capability_fn)(wd_call *, const char *, const wd_json **);

static const struct {
    const char *name;
    capability_fn fn;
} capabilities[] = {
    {"fs", wd_fs}, {"memory", wd_memory}, {"lsp", wd_lsp}, {"net", wd_net}, {"env", wd_env},
    {"elicit", wd_elicit}, {"sample", wd_sample}, {"roots", wd_roots}, {"ask", wd_ask},
};

static int hostcall(wd_call *call, const wd_json *args) {
    const char *name;
    if (wd_arg_string(call, args, "capability", 1, &name, NULL) < 0) return -1;
    capability_fn fn = NULL;
    for (size_t i = 0; i < sizeof capabilities / sizeof capabilities[0]; i++)
        if (strcmp(capabilities[i].name, name) == 0) fn = capabilities[i].fn;
    if (!fn) return wd_error(call, WD_INVALID_ARGUMENTS, "capability: no capability %s", name);

    wd_writer req = WD_WRITER_INIT;
    wd_w_json(&req, wd_json_get(args, "request"));
    const wd_json *result;
    wd_kind k = fn(call, req.data, &result);
    wd_w_free(&req);
    if (k != WD_OK) return wd_error_host(call);

    wd_writer *out = wd_structured(call);
    wd_w_begin_object(out);
    wd_w_key(out, "result");
    wd_w_json(out, result);
    wd_w_end_object(out);
    wd_text(call, "ok");
    return 0;
}

/* envget exercises the wd_env_get shortcut. */
static int envget(wd_call *call, const wd_json *args) {
    const char *key, *value;
    size_t len;
    if (wd_arg_string(call, args, "key", 1, &key, NULL) < 0) return -1;
    if (wd_env_get(call, key, &value, &len) != WD_OK) return wd_error_host(call);
    wd_text_n(call, value, len);
    return 0;
}

/* fail reports {"kind", "message"} as its error, with details; kind "silent"
 * returns -1 without recording one, kind "" succeeds with a next cursor. */
static int fail(wd_call *call, const wd_json *args) {
    const char *kind, *message = "";
    size_t n;
    if (wd_arg_string(call, args, "kind", 1, &kind, &n) < 0) return -1;
    if (wd_arg_string(call, args, "message", 0, &message, NULL) < 0) return -1;
    wd_writer *details = wd_details(call);
    wd_w_begin_object(details);
    wd_w_key(details, "asked");
    wd_w_string(details, kind);
    wd_w_end_object(details);
    if (strcmp(kind, "silent") == 0) return -1;
    if (n == 0) {
        wd_text(call, "fine");
        wd_next_cursor(call, "page-2");
        return 0;
    }
    return wd_error(call, wd_kind_parse(kind, n), "%s", message);
}

static const wd_tool tools[] = {
    {
        .name = "hostcall",
        .description = "Forwards one request to a warden.* capability.",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"capability\":{\"type\":\"string\"},\"request\":{}},"
                        "\"required\":[\"capability\",\"request\"]}",
        .fn = hostcall,
    },
    {
        .name = "envget",
        .description = "Reads a granted env value.",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\"}},\"required\":[\"key\"]}",
        .fn = envget,
    },
    {
        .name = "fail",
        .description = "Fails as asked.",
        .input_schema = "{\"type\":\"object\",\"properties\":{\"kind\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"}},"
                        "\"required\":[\"kind\"]}",
        .extra = "\"paginates\":true",
        .fn = fail,
    },
};

__attribute__((constructor)) static void init(void) {
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) wd_register(&tools[i]);
}
