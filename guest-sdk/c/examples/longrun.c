/*
 * longrun_c: runs as long as it is asked to. It loops a given number of
 * iterations of real work (mixing a 64-bit state), reports progress every
 * few iterations, and declares that it may run as an MCP task, so a client
 * that supports tasks can start it, follow its progress and cancel it.
 * The C example of docs/tasks.md; tools-wasm/longrun is the same tool in Go.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "../warden.h"

/* work mixes state rounds times (xorshift64*): work the compiler cannot
 * skip, whose every round costs fuel. */
static uint64_t work(uint64_t state, int64_t rounds) {
    for (int64_t r = 0; r < rounds; r++) {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state *= UINT64_C(0x2545f4914f6cdd1d);
    }
    return state;
}

static int longrun(wd_call *call, const wd_json *args) {
    int64_t iterations = 0, every = 1000, rounds = 10000;
    if (wd_arg_int(call, args, "iterations", 1, &iterations) < 0) return -1;
    if (wd_arg_int(call, args, "every", 0, &every) < 0) return -1;
    if (wd_arg_int(call, args, "rounds", 0, &rounds) < 0) return -1;
    uint64_t state = UINT64_C(0x9e3779b97f4a7c15);
    for (int64_t i = 1; i <= iterations; i++) {
        state = work(state, rounds);
        if (i % every == 0 || i == iterations) {
            char message[64];
            snprintf(message, sizeof message, "iteration %" PRId64 " of %" PRId64, i, iterations);
            wd_progress(call, (double)i, (double)iterations, message);
        }
    }
    char checksum[17];
    snprintf(checksum, sizeof checksum, "%016" PRIx64, state);
    wd_textf(call, "ran %" PRId64 " iterations; checksum %s", iterations, checksum);
    wd_writer *w = wd_structured(call);
    wd_w_begin_object(w);
    wd_w_key(w, "iterations");
    wd_w_int(w, iterations);
    wd_w_key(w, "checksum");
    wd_w_string(w, checksum);
    wd_w_end_object(w);
    return 0;
}

static const wd_tool tool = {
    .name = "longrun_c",
    .title = "Long run (C)",
    .description = "Runs iterations rounds of work each and returns a checksum of it, reporting progress every few iterations. For trying out long-running calls and tasks.",
    .input_schema = "{\"type\":\"object\",\"properties\":{"
                    "\"iterations\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000000000,\"description\":\"How many iterations to run.\"},"
                    "\"every\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Iterations between two progress reports (default 1000).\"},"
                    "\"rounds\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000000,\"description\":\"Rounds of work in one iteration (default 10000).\"}},"
                    "\"required\":[\"iterations\"],\"additionalProperties\":false}",
    .output_schema = "{\"type\":\"object\",\"properties\":{\"iterations\":{\"type\":\"integer\"},\"checksum\":{\"type\":\"string\"}},\"required\":[\"iterations\",\"checksum\"]}",
    .annotations = "{\"readOnlyHint\":true,\"idempotentHint\":true}",
    .fn = longrun,
    /* It may run as a task: then tools.limits.longrun_c.task_timeout and
     * task_fuel apply, not the interactive timeout, and its progress is
     * the task's status message. */
    .task_support = WD_TASK_OPTIONAL,
};

__attribute__((constructor)) static void init(void) { wd_register(&tool); }
