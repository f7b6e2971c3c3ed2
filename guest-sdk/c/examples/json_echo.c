/*
 * json_echo: parses the string argument "json" with the SDK's reader and
 * returns it re-written by the writer. Malformed input is an
 * invalid_arguments error naming the offset. The SDK's tests fuzz the
 * reader through it.
 */
#include "../warden.h"

static int json_echo(wd_call *call, const wd_json *args) {
    const char *text;
    size_t len;
    if (wd_arg_string(call, args, "json", 1, &text, &len) < 0) return -1;
    const wd_json *v = wd_call_parse(call, "json", text, len);
    if (!v) return -1; /* wd_call_parse recorded the error */
    wd_writer w = WD_WRITER_INIT;
    wd_w_json(&w, v);
    const char *werr = wd_w_error(&w); /* a static message: outlives the buffer */
    if (werr) {
        wd_w_free(&w);
        return wd_error(call, WD_FAILED, "re-write: %s", werr);
    }
    wd_text_n(call, w.data, w.len);
    wd_w_free(&w);
    return 0;
}

static const wd_tool tool = {
    .name = "json_echo",
    .description = "Parses a JSON text and returns it re-written compactly.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"json\":{\"type\":\"string\"}},\"required\":[\"json\"]}",
    .annotations = "{\"readOnlyHint\":true}",
    .fn = json_echo,
};

__attribute__((constructor)) static void init(void) { wd_register(&tool); }
