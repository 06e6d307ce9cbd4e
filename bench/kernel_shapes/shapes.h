/* The kernels of bench/kernel_shapes.sh, shared by the tare worker (worker.c, written from
 * docs/protocol.md and clients/c/README.md only) and the plain timing loops (plain.c). */
#ifndef SHAPES_H
#define SHAPES_H
#include <stdint.h>
#include <string.h>

#define SORT_N 1000
#define HASH_N 4096

/* FNV-1a over a buffer, 64-bit: a pure function of its input (about 4 µs for 4 KiB). */
static inline uint64_t fnv(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static inline void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (unsigned char)(seed >> 16);
    }
}

static inline void fill_ints(int *a, size_t n) {
    unsigned x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        a[i] = (int)(x >> 1);
    }
}

/* In place: O(n^2) on unsorted data, O(n) on sorted (why it needs per-loop init). */
static inline void insertion_sort(int *a, size_t n) {
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

/* A long kernel: about 0.3 s of dependent multiply-adds. */
#define LONG_ROUNDS 150000000ull
static inline uint64_t long_spin(uint64_t x) {
    for (uint64_t i = 0; i < LONG_ROUNDS; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}
#endif
