/*
 * echo: the bundled Go echo tool (tools-wasm/echo) written with the C SDK,
 * with the same descriptor, schemas and result. bench serves it beside the
 * Go one to split a call's cost into warden's call path and the guest's own
 * work (docs/performance.md, "The call path").
 */
#include "../warden.h"

static int echo(wd_call *call, const wd_json *args) {
    const char *text;
    size_t len;
    if (wd_arg_string(call, args, "text", 1, &text, &len) < 0) return -1;
    wd_text_n(call, text, len);
    wd_writer *w = wd_structured(call);
    wd_w_begin_object(w);
    wd_w_key(w, "text");
    wd_w_string_n(w, text, len);
    wd_w_end_object(w);
    return 0;
}

static const wd_tool tool = {
    .name = "echo",
    .title = "Echo",
    .description = "Returns the given text unchanged. Useful to test that tools work.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"The text to return.\"}},\"required\":[\"text\"],\"additionalProperties\":false}",
    .output_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}",
    .annotations = "{\"readOnlyHint\":true,\"idempotentHint\":true}",
    .extra = "\"version\":\"1.0.0\",\"category\":\"utility\"",
    .fn = echo,
};

__attribute__((constructor)) static void init(void) { wd_register(&tool); }
