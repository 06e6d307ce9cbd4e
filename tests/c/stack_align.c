/* Test program for `tare bias` (tests/bias_programs.rs).
 * A pointer-chasing loop over 8-byte loads at fixed offsets from a stack buffer. Whether the
 * loads straddle cache lines depends on where the buffer lands, which (with ASLR off) moves
 * with the size of the environment: its speed depends on stack alignment.
 * Build: cc -O2 -o stack_align stack_align.c; run: stack_align [ITERATIONS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINES 64
#ifndef ALIGN_OFFSET
/* 60 + 8 > 64: the loads straddle two cache lines when the buffer starts on a line. */
#define ALIGN_OFFSET 60
#endif

static uint64_t load(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static void store(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

__attribute__((noinline)) static uint64_t chase(unsigned char *buf, long iters) {
    const long off = ALIGN_OFFSET;
    for (long k = 0; k < LINES; k++) store(buf + off + 64 * k, (uint64_t)((k * 7 + 1) % LINES));
    uint64_t k = 0, sum = 0;
    for (long i = 0; i < iters; i++) {
        k = load(buf + off + 64 * k);
        sum += k;
    }
    return sum;
}

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 20000000L;
    unsigned char raw[LINES * 64 + 128];
    unsigned char *buf = raw;
#ifdef ALIGNED
    buf = (unsigned char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
#endif
    uint64_t s = chase(buf, iters);
    if (getenv("STACK_ALIGN_VERBOSE")) fprintf(stderr, "buf %% 64 = %u\n", (unsigned)((uintptr_t)buf % 64));
    return s == 1 ? 1 : 0;
}
