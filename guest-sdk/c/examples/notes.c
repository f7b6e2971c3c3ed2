/*
 * notes: reads a project file through warden.fs and remembers a note about
 * it in the project memory store (warden.memory), returning the note the
 * previous call left. Needs fs.read and memory: read-write grants.
 */
#include <stdint.h>
#include <string.h>

#include "../warden.h"

static int notes(wd_call *call, const wd_json *args) {
    const char *path, *note = NULL;
    if (wd_arg_string(call, args, "path", 1, &path, NULL) < 0) return -1;
    if (wd_arg_string(call, args, "note", 0, &note, NULL) < 0) return -1;

    const char *content;
    size_t len;
    if (wd_fs_read(call, path, &content, &len) != WD_OK) return wd_error_host(call); /* denied, not_found, ... */

    /* The note the previous call left, if any. */
    const char *previous = NULL;
    wd_kind k = wd_memory_get(call, "notes/last", &previous, NULL);
    if (k == WD_NOT_FOUND)
        previous = NULL;
    else if (k != WD_OK)
        return wd_error_host(call);

    if (note && wd_memory_set(call, "notes/last", note) != WD_OK) return wd_error_host(call);

    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += content[i] == '\n';
    wd_textf(call, "%s: %zu bytes, %zu lines", path, len, lines);
    wd_writer *out = wd_structured(call);
    wd_w_begin_object(out);
    wd_w_key(out, "path");
    wd_w_string(out, path);
    wd_w_key(out, "bytes");
    wd_w_int(out, (int64_t)len);
    wd_w_key(out, "previousNote");
    wd_w_string(out, previous); /* NULL writes null */
    wd_w_end_object(out);
    return 0;
}

static const wd_tool tool = {
    .name = "notes",
    .description = "Reads a project file and remembers a note about it; returns the previous note.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                    "\"note\":{\"type\":\"string\"}},\"required\":[\"path\"]}",
    .capabilities = "{\"fs\":{\"read\":[\".\"]},\"memory\":\"read-write\",\"memoryTopics\":[\"notes\"]}",
    .fn = notes,
};

__attribute__((constructor)) static void init(void) { wd_register(&tool); }
