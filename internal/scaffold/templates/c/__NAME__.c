/* __NAME__: a warden tool. Build with `make`, try with `make test`. */
#include <stddef.h>

#include "warden.h"

static int count_words(wd_call *call, const wd_json *args) {
    const char *text;
    size_t len;
    /* A missing or non-string "text" is an invalid_arguments error naming it. */
    if (wd_arg_string(call, args, "text", 1, &text, &len) < 0) return -1;

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
    wd_writer *out = wd_structured(call); /* must match output_schema */
    wd_w_begin_object(out);
    wd_w_key(out, "words");
    wd_w_int(out, words);
    wd_w_end_object(out);
    return 0;
}

static const wd_tool tool = {
    .name = "__NAME__",
    .description = "Counts the words in a text.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}",
    .output_schema = "{\"type\":\"object\",\"properties\":{\"words\":{\"type\":\"integer\"}},\"required\":[\"words\"]}",
    .annotations = "{\"readOnlyHint\":true}",
    .fn = count_words,
    /* A tool that runs for minutes may run as an MCP task, under the task
     * budget instead of the interactive timeout (docs/tasks.md):
     * .task_support = WD_TASK_OPTIONAL, */
};

/* The reactor's _initialize runs constructors once: register tools here. */
__attribute__((constructor)) static void init(void) { wd_register(&tool); }
