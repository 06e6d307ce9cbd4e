/* The blur example kernel (docs/protocol.md) on the C client, and the empty kernel that
 * measures per-iteration overhead. Build: ./build.sh; run standalone: ./blur -p size=64. */
#include <math.h>
#include <stdlib.h>

#include "tare_worker.h"

typedef struct {
    int size, radius;
    double *img, *tmp, *out, *w;
} blur_state;

static int blur_teardown(tare_ctx *ctx, void *state) {
    (void)ctx;
    blur_state *s = state;
    if (s) {
        free(s->img);
        free(s->tmp);
        free(s->out);
        free(s->w);
        free(s);
    }
    return 0;
}

static int blur_setup(tare_ctx *ctx, void **state) {
    long long size = tare_param_int(ctx, "size"), radius = tare_param_int(ctx, "radius");
    if (size < 1 || radius < 1 || size > 65536 || radius > 65536)
        return tare_fail(ctx, "blur: size=%lld and radius=%lld must be integers in 1..65536", size, radius);
    blur_state *s = calloc(1, sizeof *s);
    if (!s) return tare_fail(ctx, "blur: out of memory");
    s->size = (int)size;
    s->radius = (int)radius;
    size_t n = (size_t)size * (size_t)size;
    s->img = malloc(n * sizeof(double));
    s->tmp = malloc(n * sizeof(double));
    s->out = malloc(n * sizeof(double));
    s->w = malloc((size_t)(2 * radius + 1) * sizeof(double));
    if (!s->img || !s->tmp || !s->out || !s->w) {
        blur_teardown(ctx, s);
        return tare_fail(ctx, "blur: out of memory for size=%lld", size);
    }
    for (int y = 0; y < s->size; y++)
        for (int x = 0; x < s->size; x++) s->img[(size_t)y * s->size + x] = ((x * 7 + y * 13) % 256) / 255.0;
    double sigma = radius / 2.0, sum = 0;
    for (int i = -s->radius; i <= s->radius; i++) {
        s->w[i + s->radius] = exp(-(double)(i * i) / (2 * sigma * sigma));
        sum += s->w[i + s->radius];
    }
    for (int i = 0; i <= 2 * s->radius; i++) s->w[i] /= sum;
    tare_bytes_per_loop(ctx, (double)n * 8);
    *state = s;
    return 0;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static void blur_once(blur_state *s) {
    int n = s->size, r = s->radius;
    const double *w = s->w;
    for (int y = 0; y < n; y++) {
        const double *row = s->img + (size_t)y * n;
        double *t = s->tmp + (size_t)y * n;
        for (int x = 0; x < n; x++) {
            double acc = 0;
            for (int i = -r; i <= r; i++) acc += w[i + r] * row[clampi(x + i, 0, n - 1)];
            t[x] = acc;
        }
    }
    for (int y = 0; y < n; y++) {
        double *o = s->out + (size_t)y * n;
        for (int x = 0; x < n; x++) {
            double acc = 0;
            for (int i = -r; i <= r; i++) acc += w[i + r] * s->tmp[(size_t)clampi(y + i, 0, n - 1) * n + x];
            o[x] = acc;
        }
    }
}

static int blur_run(tare_ctx *ctx, void *state, uint64_t loops) {
    blur_state *s = state;
    for (uint64_t l = 0; l < loops; l++) {
        blur_once(s);
        tare_escape(s->out);
    }
    double sum = 0;
    size_t n = (size_t)s->size * s->size;
    for (size_t i = 0; i < n; i++) sum += s->out[i];
    tare_metric(ctx, "checksum", sum);
    return 0;
}

static int empty_run(tare_ctx *ctx, void *state, uint64_t loops) {
    (void)ctx;
    (void)state;
    for (uint64_t l = 0; l < loops; l++) {
        uint64_t v = l;
        TARE_DO_NOT_OPTIMIZE(v);
    }
    return 0;
}

int main(int argc, char **argv) {
    tare_kernel *k = tare_register("blur", "separable Gaussian blur of a generated size x size image");
    tare_param(k, "size", "256", "image side in pixels");
    tare_param(k, "radius", "3", "kernel radius in pixels");
    tare_on_setup(k, blur_setup);
    tare_on_run(k, blur_run);
    tare_on_teardown(k, blur_teardown);
    k = tare_register("empty", "does nothing: the per-iteration overhead");
    tare_on_run(k, empty_run);
    return tare_main(argc, argv);
}
