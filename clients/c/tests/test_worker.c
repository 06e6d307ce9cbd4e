/* A worker with kernels that exercise every path of the C client, driven by test_master.c. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "../tare_worker.h"

typedef struct {
    long long inits, loops, reps;
} counter;

static int count_setup(tare_ctx *ctx, void **state) {
    counter *c = calloc(1, sizeof *c);
    if (!c) return tare_fail(ctx, "out of memory");
    tare_bytes_per_loop(ctx, (double)tare_param_int(ctx, "bytes"));
    tare_items_per_loop(ctx, 2);
    *state = c;
    return 0;
}
static int count_init(tare_ctx *ctx, void *state) {
    (void)ctx;
    ((counter *)state)->inits++;
    return 0;
}
static int count_run(tare_ctx *ctx, void *state, uint64_t loops) {
    counter *c = state;
    for (uint64_t i = 0; i < loops; i++) {
        c->loops++;
        TARE_DO_NOT_OPTIMIZE(c->loops);
    }
    tare_metric(ctx, "inits", (double)c->inits);
    tare_metric(ctx, "loops", (double)c->loops);
    const char *fd = getenv("TEST_FD");
    tare_metric(ctx, "env_set", getenv("TARE_WORKER_FD") != NULL);
    if (fd) tare_metric(ctx, "cloexec", (fcntl(atoi(fd), F_GETFD) & FD_CLOEXEC) != 0);
    return 0;
}
static int count_teardown(tare_ctx *ctx, void *state) {
    (void)ctx;
    free(state);
    return 0;
}

static long long body_count;
static void body(void *state) {
    (void)state;
    body_count++;
}
static int body_setup(tare_ctx *ctx, void **state) {
    (void)ctx;
    (void)state;
    body_count = 0;
    return 0;
}
static int body_teardown(tare_ctx *ctx, void *state) {
    (void)state;
    long long want = tare_param_int(ctx, "expect");
    if (body_count != want) return tare_fail(ctx, "body ran %lld times, expected %lld", body_count, want);
    return 0;
}

static int params_run(tare_ctx *ctx, void *state, uint64_t loops) {
    (void)state;
    (void)loops;
    tare_metric(ctx, "textlen", (double)strlen(tare_param_str(ctx, "text")));
    tare_metric(ctx, "first", (double)(unsigned char)tare_param_str(ctx, "text")[0]);
    tare_metric(ctx, "num", tare_param_double(ctx, "num"));
    return 0;
}

static int fail_setup(tare_ctx *ctx, void **state) {
    (void)state;
    return tare_fail(ctx, "setup failed on purpose\nsecond line");
}
static int fail_run_state;
static int fail_run(tare_ctx *ctx, void *state, uint64_t loops) {
    (void)state;
    (void)loops;
    if (++fail_run_state == 2) return 7;
    (void)ctx;
    return 0;
}
static int fail_teardown(tare_ctx *ctx, void *state) {
    (void)state;
    return tare_fail(ctx, "teardown failed on purpose");
}

/* A threaded kernel: 4 threads, each loop sleeps 4 ms and counts in its thread's slot. */
static long long thread_loops[4];
static int threads_setup(tare_ctx *ctx, void **state) {
    (void)ctx;
    (void)state;
    memset(thread_loops, 0, sizeof thread_loops);
    return 0;
}
static int threads_run(tare_ctx *ctx, void *state, uint64_t loops) {
    (void)state;
    unsigned i = tare_thread_index();
    if (i >= 4) return tare_fail(ctx, "thread index %u", i);
    struct timespec ts = {0, 4000000};
    for (uint64_t l = 0; l < loops; l++) {
        thread_loops[i]++;
        nanosleep(&ts, NULL);
    }
    return 0;
}
static int threads_teardown(tare_ctx *ctx, void *state) {
    (void)state;
    long long want = tare_param_int(ctx, "expect");
    for (int i = 0; i < 4; i++)
        if (thread_loops[i] != want) return tare_fail(ctx, "thread %d ran %lld loops, expected %lld", i, thread_loops[i], want);
    return 0;
}

int main(int argc, char **argv) {
    tare_kernel *k = tare_register("count", "counts loops & inits: 100%");
    tare_param(k, "bytes", "16", "bytes per loop");
    tare_on_setup(k, count_setup);
    tare_on_init(k, count_init);
    tare_on_run(k, count_run);
    tare_on_teardown(k, count_teardown);

    k = tare_register("body", NULL);
    tare_param(k, "expect", "0", NULL);
    tare_on_setup(k, body_setup);
    tare_on_body(k, body);
    tare_on_teardown(k, body_teardown);

    k = tare_register("params", NULL);
    tare_param(k, "text", "x", NULL);
    tare_param(k, "num", "1.5", NULL);
    tare_on_run(k, params_run);

    k = tare_register("fail_setup", NULL);
    tare_on_setup(k, fail_setup);
    tare_on_run(k, fail_run);
    k = tare_register("fail_run", NULL);
    tare_on_run(k, fail_run);
    k = tare_register("fail_teardown", NULL);
    tare_on_run(k, fail_run);
    tare_on_teardown(k, fail_teardown);
    k = tare_register("threads", NULL);
    tare_param(k, "expect", "0", NULL);
    tare_set_threads(k, 4);
    tare_on_setup(k, threads_setup);
    tare_on_run(k, threads_run);
    tare_on_teardown(k, threads_teardown);
    return tare_main(argc, argv);
}
