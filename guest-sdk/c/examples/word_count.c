/* word_count: the tool every warden SDK starts with. Pure: no host functions. */
#include <stddef.h>

#include "../warden.h"

static int word_count(wd_call *call, const wd_json *args) {
    const char *text;
    size_t len;
    if (wd_arg_string(call, args, "text", 1, &text, &len) < 0) return -1; /* invalid_arguments naming "text" */

    /* A word is a maximal run of bytes that are not ASCII whitespace. */
    long words = 0;
    int in_word = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        int space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
        if (!space && !in_word) words++;
        in_word = !space;
    }

    wd_textf(call, "%ld words", words);
    wd_writer *out = wd_structured(call);
    wd_w_begin_object(out);
    wd_w_key(out, "words");
    wd_w_int(out, words);
    wd_w_end_object(out);
    return 0;
}

static const wd_tool tool = {
    .name = "word_count",
    .description = "Counts the words in a text.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}",
    .output_schema = "{\"type\":\"object\",\"properties\":{\"words\":{\"type\":\"integer\"}},\"required\":[\"words\"]}",
    .annotations = "{\"readOnlyHint\":true}",
    .fn = word_count,
};

__attribute__((constructor)) static void init(void) { wd_register(&tool); }
