/*
 * text_stats: a structured result checked against an output schema, and a
 * second tool in the same module (several tools per module).
 */
#include <stdint.h>
#include <string.h>

#include "../warden.h"

#define OUTPUT_SCHEMA                                                                                   \
    "{\"type\":\"object\",\"properties\":{"                                                             \
    "\"bytes\":{\"type\":\"integer\"},\"lines\":{\"type\":\"integer\"},"                                \
    "\"longestLine\":{\"type\":\"string\"},\"blank\":{\"type\":\"boolean\"},"                           \
    "\"lineLengths\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}},"                          \
    "\"required\":[\"bytes\",\"lines\",\"longestLine\",\"blank\",\"lineLengths\"],"                     \
    "\"additionalProperties\":false}"

static int text_stats(wd_call *call, const wd_json *args) {
    const char *text;
    size_t len;
    if (wd_arg_string(call, args, "text", 1, &text, &len) < 0) return -1;

    wd_writer *out = wd_structured(call);
    wd_w_begin_object(out);
    wd_w_key(out, "lineLengths");
    wd_w_begin_array(out);
    size_t lines = 0, start = 0, best = 0, best_len = 0;
    int blank = 1;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != '\n') {
            if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r') blank = 0;
            continue;
        }
        if (i == len && start == len) break; /* no line after a final newline, none in "" */
        size_t n = i - start;
        wd_w_int(out, (int64_t)n);
        if (n > best_len) {
            best = start;
            best_len = n;
        }
        lines++;
        start = i + 1;
    }
    wd_w_end_array(out);
    wd_w_key(out, "bytes");
    wd_w_int(out, (int64_t)len);
    wd_w_key(out, "lines");
    wd_w_int(out, (int64_t)lines);
    wd_w_key(out, "longestLine");
    wd_w_string_n(out, text + best, best_len);
    wd_w_key(out, "blank");
    wd_w_bool(out, blank);
    wd_w_end_object(out);

    wd_textf(call, "%zu lines, %zu bytes", lines, len);
    return 0;
}

/* byte_at shows the bounds checks of the JSON reader: an index past the end
 * of the array is not_found, a wrong type invalid_arguments. */
static int byte_at(wd_call *call, const wd_json *args) {
    const wd_json *list = wd_json_get(args, "list");
    int64_t index;
    if (wd_json_typeof(list) != WD_JSON_ARRAY) return wd_error(call, WD_INVALID_ARGUMENTS, "list: want an array");
    if (wd_arg_int(call, args, "index", 1, &index) < 0) return -1;
    const wd_json *item = index < 0 ? NULL : wd_json_at(list, (size_t)index);
    if (!item)
        return wd_error(call, WD_NOT_FOUND, "index %lld is outside the list of %zu", (long long)index, wd_json_len(list));
    wd_writer *out = wd_structured(call);
    wd_w_begin_object(out);
    wd_w_key(out, "item");
    wd_w_json(out, item);
    wd_w_end_object(out);
    wd_text(call, wd_json_type_name(wd_json_typeof(item)));
    return 0;
}

static const wd_tool stats = {
    .name = "text_stats",
    .title = "Text statistics",
    .description = "Counts the bytes and lines of a text and finds its longest line.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}",
    .output_schema = OUTPUT_SCHEMA,
    .annotations = "{\"readOnlyHint\":true}",
    .extra = "\"version\":\"1.0.0\",\"tags\":[\"text\",\"example\"]",
    .fn = text_stats,
};

static const wd_tool at = {
    .name = "item_at",
    .description = "Returns the element of a list at an index.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"list\":{\"type\":\"array\"},\"index\":{\"type\":\"integer\"}},"
                    "\"required\":[\"list\",\"index\"]}",
    .output_schema = "{\"type\":\"object\",\"properties\":{\"item\":{}},\"required\":[\"item\"]}",
    .fn = byte_at,
};

__attribute__((constructor)) static void init(void) {
    wd_register(&stats);
    wd_register(&at);
}
