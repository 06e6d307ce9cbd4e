/* The hidden kernel of bench/kernel_shapes.sh in its five shapes, written against the docs
 * only (docs/protocol.md, clients/c/README.md, clients/c/tare_worker.h), for tare kernels:
 *   hash          per-sample init (fill the buffer), body: FNV-1a of 4 KiB
 *   sort          per-loop init (tare_on_each: a fresh unsorted copy), body: insertion sort
 *   long          about 0.3 s a loop (tare makes N = 1)
 *   hash_fixed    the hash kernel, run with --loops (bench script)
 *   hash_threads  the hash kernel on 2 threads (tare_set_threads), each its own buffer */
#include <stdlib.h>
#include "shapes.h"
#include "tare_worker.h"

typedef struct {
    unsigned char buf[2][HASH_N];
    unsigned seed;
} hash_state;

static int hash_setup(tare_ctx *ctx, void **out) {
    hash_state *s = calloc(1, sizeof *s);
    if (!s) return tare_fail(ctx, "out of memory");
    *out = s;
    return 0;
}
static int hash_init(tare_ctx *ctx, void *p) {
    (void)ctx;
    hash_state *s = p;
    s->seed++;
    fill(s->buf[0], HASH_N, s->seed);
    fill(s->buf[1], HASH_N, s->seed + 7);
    return 0;
}
static void hash_body(void *p) {
    hash_state *s = p;
    uint64_t h = fnv(s->buf[tare_thread_index() & 1], HASH_N);
    TARE_DO_NOT_OPTIMIZE(h);
}
static int free_state(tare_ctx *ctx, void *p) {
    (void)ctx;
    free(p);
    return 0;
}

#define BATCH 8
typedef struct {
    int src[SORT_N];
    int work[BATCH][SORT_N];
} sort_state;
static int sort_setup(tare_ctx *ctx, void **out) {
    sort_state *s = malloc(sizeof *s);
    if (!s) return tare_fail(ctx, "out of memory");
    fill_ints(s->src, SORT_N);
    *out = s;
    return 0;
}
static int sort_init_each(tare_ctx *ctx, void *p, size_t slot) {
    (void)ctx;
    sort_state *s = p;
    memcpy(s->work[slot], s->src, sizeof s->src);
    return 0;
}
static void sort_body_each(void *p, size_t slot) {
    sort_state *s = p;
    insertion_sort(s->work[slot], SORT_N);
    tare_escape(s->work[slot]);
}

static void long_body(void *p) {
    (void)p;
    uint64_t x = long_spin(88172645463325252ull);
    TARE_DO_NOT_OPTIMIZE(x);
}

static tare_kernel *hash_kernel(const char *name, const char *doc) {
    tare_kernel *k = tare_register(name, doc);
    tare_on_setup(k, hash_setup);
    tare_on_init(k, hash_init);
    tare_on_body(k, hash_body);
    tare_on_teardown(k, free_state);
    return k;
}

int main(int argc, char **argv) {
    hash_kernel("hash", "FNV-1a of 4 KiB, buffer filled once per sample");
    hash_kernel("hash_fixed", "the same, for --loops");
    tare_set_threads(hash_kernel("hash_threads", "the same on 2 threads"), 2);
    tare_kernel *k = tare_register("sort", "insertion sort of 1000 ints, a fresh copy per loop");
    tare_on_setup(k, sort_setup);
    tare_on_each(k, BATCH, sort_init_each, sort_body_each);
    tare_on_teardown(k, free_state);
    k = tare_register("long", "about 0.3 s of multiply-adds");
    tare_on_body(k, long_body);
    return tare_main(argc, argv);
}
