/* The plain timing loops of bench/kernel_shapes.sh: the same kernels (shapes.h) timed with
 * clock_gettime(CLOCK_MONOTONIC) the way one would by hand, no library. Prints one line per
 * shape: NAME NS_PER_LOOP CPU_NS_PER_LOOP MIN_NS_PER_LOOP (process CPU time: both threads' for
 * hash_threads; MIN the fastest timing loop's, or the fastest single sort or long loop).
 *   hash, hash_fixed  one clock read around LOOPS (1000, or 100) calls, the mean of 30 such
 *   sort              per loop: copy (untimed), clock, sort, clock; summed
 *   long              3 loops, each timed alone; their mean
 *   hash_threads      2 threads released by a barrier, each LOOPS calls, to the last end;
 *                     the mean of 30 such */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "shapes.h"

static uint64_t now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static volatile uint64_t sink;
static unsigned char bufs[2][HASH_N];

static double hash_loop(unsigned char *b, long loops) {
    uint64_t t0 = now();
    for (long i = 0; i < loops; i++) {
        uint64_t h = fnv(b, HASH_N);
        __asm__ volatile("" : : "r"(h) : "memory");
    }
    return (double)(now() - t0) / loops;
}

static pthread_barrier_t start;
static uint64_t ends[2];
static long tloops;
static void *thread_main(void *p) {
    long i = (long)p;
    pthread_barrier_wait(&start);
    hash_loop(bufs[i], tloops);
    ends[i] = now();
    return NULL;
}

/* The mean of REPS runs of a timing loop (as tare's value is the mean of its samples). */
#define REPS 30

int main(int argc, char **argv) {
    long loops = argc > 1 ? atol(argv[1]) : 1000;
    fill(bufs[0], HASH_N, 1);
    fill(bufs[1], HASH_N, 8);
    hash_loop(bufs[0], loops);
    double sum = 0, best = 1e300, x;
    uint64_t c0 = cpu_now();
    for (int r = 0; r < REPS; r++) {
        sum += x = hash_loop(bufs[0], loops);
        best = x < best ? x : best;
    }
    printf("hash %.1f %.1f %.1f\n", sum / REPS, (double)(cpu_now() - c0) / (REPS * loops), best);
    sum = 0;
    best = 1e300;
    c0 = cpu_now();
    for (int r = 0; r < REPS; r++) {
        sum += x = hash_loop(bufs[0], 100);
        best = x < best ? x : best;
    }
    printf("hash_fixed %.1f %.1f %.1f\n", sum / REPS, (double)(cpu_now() - c0) / (REPS * 100), best);

    static int src[SORT_N], work[SORT_N];
    fill_ints(src, SORT_N);
    /* Wall: each sort alone (the copy untimed); CPU: around all of them, copies included
     * (a 4 KB copy is under 1% of a sort; two CPU-clock reads a sort cost more here). */
    uint64_t total = 0, d, fastest = UINT64_MAX;
    int sorts = 300;
    c0 = cpu_now();
    for (int r = 0; r < sorts; r++) {
        memcpy(work, src, sizeof src);
        uint64_t t0 = now();
        insertion_sort(work, SORT_N);
        __asm__ volatile("" : : "r"(work) : "memory");
        total += d = now() - t0;
        fastest = d < fastest ? d : fastest;
    }
    printf("sort %.1f %.1f %.1f\n", (double)total / sorts, (double)(cpu_now() - c0) / sorts,
           (double)fastest);

    total = 0;
    fastest = UINT64_MAX;
    c0 = cpu_now();
    for (int r = 0; r < 3; r++) {
        uint64_t t0 = now();
        sink = long_spin(88172645463325252ull + (uint64_t)r);
        total += d = now() - t0;
        fastest = d < fastest ? d : fastest;
    }
    printf("long %.1f %.1f %.1f\n", (double)total / 3, (double)(cpu_now() - c0) / 3, (double)fastest);

    tloops = loops;
    sum = 0;
    double csum = 0;
    best = 1e300;
    for (int r = 0; r < REPS; r++) {
        pthread_barrier_init(&start, NULL, 3);
        pthread_t ids[2];
        for (long i = 0; i < 2; i++) pthread_create(&ids[i], NULL, thread_main, (void *)i);
        c0 = cpu_now();
        /* The clock before the release: read after it, on 2 CPUs this thread could be
         * scheduled again only after a worker had finished (end before start). */
        uint64_t t0 = now();
        pthread_barrier_wait(&start);
        for (int i = 0; i < 2; i++) pthread_join(ids[i], NULL);
        uint64_t end = ends[0] > ends[1] ? ends[0] : ends[1];
        sum += x = (double)(end - t0) / tloops;
        best = x < best ? x : best;
        csum += (double)(cpu_now() - c0) / tloops;
        pthread_barrier_destroy(&start);
    }
    printf("hash_threads %.1f %.1f %.1f\n", sum / REPS, csum / REPS, best);
    return 0;
}
