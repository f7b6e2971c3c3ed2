/* countdown: reports progress (warden.progress) once per step. */
#include <stdint.h>
#include <stdio.h>

#include "../warden.h"

static int countdown(wd_call *call, const wd_json *args) {
    int64_t steps = 3;
    if (wd_arg_int(call, args, "steps", 0, &steps) < 0) return -1;
    if (steps < 1 || steps > 100) return wd_error(call, WD_INVALID_ARGUMENTS, "steps: want 1..100, got %lld", (long long)steps);
    for (int64_t i = 1; i <= steps; i++) {
        char message[32];
        snprintf(message, sizeof message, "step %lld", (long long)i);
        wd_progress(call, (double)i, (double)steps, message);
    }
    wd_textf(call, "counted %lld steps", (long long)steps);
    return 0;
}

static const wd_tool tool = {
    .name = "countdown",
    .description = "Counts to steps, reporting progress at each step.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"steps\":{\"type\":\"integer\",\"minimum\":1}}}",
    .annotations = "{\"readOnlyHint\":true,\"idempotentHint\":true}",
    .fn = countdown,
};

__attribute__((constructor)) static void init(void) { wd_register(&tool); }
