/* A worker on the C client (clients/c) for tare's test of per-loop state: the same in-place
 * insertion sort of n pseudo-random ints (O(n^2) unsorted, O(n) on sorted data) in three shapes.
 *   per_sample  init copies the unsorted data once per sample; the body sorts in place, so
 *               loops 2..N sort sorted data (the shape the issue found: 3x too fast)
 *   per_loop    init_each copies the unsorted data before every loop, untimed (tare_on_each,
 *               batches of 4); the body sorts it
 *   copy_sort   the plain timing loop: the body copies, then sorts, all timed (a copy of n ints
 *               costs far less than sorting them)
 */
#include <stdlib.h>
#include <string.h>
#include "tare_worker.h"

#define BATCH 4

typedef struct {
    size_t n;
    int *src;
    int *work[BATCH];
} sort_state;

/* Not inlined: every shape runs the same machine code (inlined, each shape's copy of the loop
   is placed and aligned differently, which moved one 2x against another on an AMD EPYC). */
__attribute__((noinline)) static void insertion_sort(int *a, size_t n) {
    for (size_t i = 1; i < n; i++) {
        int v = a[i];
        size_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

static int setup(tare_ctx *ctx, void **out) {
    long long n = tare_param_int(ctx, "n");
    if (n < 1) return tare_fail(ctx, "n must be at least 1");
    sort_state *s = calloc(1, sizeof *s);
    if (!s) return tare_fail(ctx, "out of memory");
    s->n = (size_t)n;
    s->src = malloc(s->n * sizeof(int));
    for (size_t b = 0; b < BATCH; b++) s->work[b] = malloc(s->n * sizeof(int));
    unsigned x = 12345;
    for (size_t i = 0; i < s->n; i++) {
        x = x * 1103515245u + 12345u;
        s->src[i] = (int)(x >> 1);
    }
    *out = s;
    return 0;
}

static int teardown(tare_ctx *ctx, void *p) {
    (void)ctx;
    sort_state *s = p;
    free(s->src);
    for (size_t b = 0; b < BATCH; b++) free(s->work[b]);
    free(s);
    return 0;
}

static int init_sample(tare_ctx *ctx, void *p) {
    (void)ctx;
    sort_state *s = p;
    memcpy(s->work[0], s->src, s->n * sizeof(int));
    return 0;
}

static void sort_in_place(void *p) {
    sort_state *s = p;
    insertion_sort(s->work[0], s->n);
    tare_escape(s->work[0]);
}

static int init_each(tare_ctx *ctx, void *p, size_t slot) {
    (void)ctx;
    sort_state *s = p;
    memcpy(s->work[slot], s->src, s->n * sizeof(int));
    return 0;
}

static void sort_slot(void *p, size_t slot) {
    sort_state *s = p;
    insertion_sort(s->work[slot], s->n);
    tare_escape(s->work[slot]);
}

static void copy_sort(void *p) {
    sort_state *s = p;
    memcpy(s->work[0], s->src, s->n * sizeof(int));
    insertion_sort(s->work[0], s->n);
    tare_escape(s->work[0]);
}

static tare_kernel *kernel(const char *name, const char *doc) {
    tare_kernel *k = tare_register(name, doc);
    tare_param(k, "n", "2000", "ints to sort");
    tare_on_setup(k, setup);
    tare_on_teardown(k, teardown);
    return k;
}

int main(int argc, char **argv) {
    tare_kernel *k = kernel("per_sample", "init per sample, sort in place");
    tare_on_init(k, init_sample);
    tare_on_body(k, sort_in_place);
    k = kernel("per_loop", "init before every loop, sort in place");
    tare_on_each(k, BATCH, init_each, sort_slot);
    k = kernel("copy_sort", "copy and sort, both timed");
    tare_on_body(k, copy_sort);
    return tare_main(argc, argv);
}
