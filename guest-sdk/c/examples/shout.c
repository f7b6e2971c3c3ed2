/* shout: logs through warden.log at every level, then upper-cases its text. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "../warden.h"

/* calls outlives each call: state kept by the instance, which a session
 * reuses (isolation "session") and every sessionless call gets fresh. */
static int calls;

static int shout(wd_call *call, const wd_json *args) {
    const char *text;
    size_t len;
    if (wd_arg_string(call, args, "text", 1, &text, &len) < 0) return -1;
    wd_log(call, WD_DEBUG, "shouting %zu bytes", len);
    wd_log(call, WD_INFO, "call number %d of this instance", ++calls);
    if (len == 0) wd_log(call, WD_WARNING, "nothing to shout");

    char *loud = malloc(len + 1);
    if (!loud) return wd_error(call, WD_FAILED, "out of memory");
    for (size_t i = 0; i < len; i++) loud[i] = (char)toupper((unsigned char)text[i]);
    wd_text_n(call, loud, len);
    free(loud);
    return 0;
}

static const wd_tool tool = {
    .name = "shout",
    .description = "Upper-cases a text, logging what it does.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}",
    .annotations = "{\"readOnlyHint\":true}",
    .fn = shout,
};

__attribute__((constructor)) static void init(void) { wd_register(&tool); }
