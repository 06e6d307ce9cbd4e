/* Kernels that differ by a known amount of work, for `tare kernels --baseline base`
 * (docs/head-to-head.md): each runs a dependent chain of multiply-adds, `base` n of them,
 * `same` the very same function (an A/A pair), `more1`, `more3` and `more30` 1%, 3% and 30%
 * more. Environment variable WORK_SCALE (default 1) scales every kernel's work, so that two
 * processes of this program can differ by a known amount (bench/head_to_head.sh).
 * Build: ./build.sh; run standalone: ./work. */
#include <stdlib.h>

#include "tare_worker.h"

typedef struct {
    long long n;
    double x;
} work_state;

static int work_setup(tare_ctx *ctx, void **state, double factor) {
    long long n = tare_param_int(ctx, "n");
    if (n < 1 || n > 1000000000LL) return tare_fail(ctx, "work: n=%lld must be in 1..1000000000", n);
    work_state *s = calloc(1, sizeof *s);
    if (!s) return tare_fail(ctx, "work: out of memory");
    const char *scale = getenv("WORK_SCALE");
    if (scale && *scale) factor *= atof(scale);
    s->n = (long long)((double)n * factor + 0.5);
    s->x = 1.0;
    *state = s;
    return 0;
}

static int setup_1(tare_ctx *ctx, void **state) { return work_setup(ctx, state, 1.0); }
static int setup_101(tare_ctx *ctx, void **state) { return work_setup(ctx, state, 1.01); }
static int setup_103(tare_ctx *ctx, void **state) { return work_setup(ctx, state, 1.03); }
static int setup_130(tare_ctx *ctx, void **state) { return work_setup(ctx, state, 1.30); }

/* One loop: s->n multiply-adds, each waiting on the one before. */
static void work_body(void *state) {
    work_state *s = state;
    double x = s->x;
    for (long long i = 0; i < s->n; i++) x = x * 0.999999 + 0.5;
    s->x = x;
    TARE_DO_NOT_OPTIMIZE(s->x);
}

static int work_teardown(tare_ctx *ctx, void *state) {
    (void)ctx;
    free(state);
    return 0;
}

static void add(const char *name, const char *doc, tare_setup_fn setup) {
    tare_kernel *k = tare_register(name, doc);
    tare_param(k, "n", "20000", "multiply-adds of the baseline per loop");
    tare_on_setup(k, setup);
    tare_on_body(k, work_body);
    tare_on_teardown(k, work_teardown);
}

int main(int argc, char **argv) {
    add("base", "n multiply-adds", setup_1);
    add("same", "the same as base", setup_1);
    add("more1", "1% more multiply-adds than base", setup_101);
    add("more3", "3% more multiply-adds than base", setup_103);
    add("more30", "30% more multiply-adds than base", setup_130);
    return tare_main(argc, argv);
}
