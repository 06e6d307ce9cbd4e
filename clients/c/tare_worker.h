/* tare_worker.h - the C client of the tare worker protocol, version 1 (docs/protocol.md).
 *
 * A program registers kernels (a name, parameters with defaults, and stages), then calls
 * tare_main(argc, argv). Started by `tare kernels` (TARE_WORKER_FD set) it obeys the master
 * over that socket; otherwise it runs in standalone mode and prints a quick measurement per
 * kernel, as Google Benchmark programs do. This library holds no policy (loops, samples,
 * warm-up belong to tare) and prints nothing on stdout in worker mode.
 *
 * Stages of a kernel (all optional except a run or a body):
 *   setup(ctx, &state)        parameters -> state; untimed
 *   init(ctx, state)          before each repetition (sample), NOT before each loop; untimed:
 *                             a body that changes its state (sorts in place) sees the state
 *                             loop 1 left in loops 2..N; for state of its own per loop use
 *   each: init_each(ctx, state, slot) + body_each(state, slot)   (tare_on_each): per loop,
 *                             the init untimed, in batches as Criterion's iter_batched: for up
 *                             to `batch` loops the client calls init_each for slots 0..b-1,
 *                             reads the clock, calls body_each for slots 0..b-1, reads the
 *                             clock; a sample's time is the sum of its batches' (the clock's
 *                             cost is paid once a batch, not once a loop)
 *   run(ctx, state, loops)    the timed region: the user's loop runs `loops` times
 *   body(state)               convenience instead of run: called once per loop by the client
 *   teardown(ctx, state)      finalize
 * Stages return 0 on success; on failure they return non-zero, ideally via tare_fail(), and
 * the worker answers `error message=...` and stays usable.
 *
 * Not thread-safe: one kernel is set up at a time, on the thread that called tare_main.
 * Usable from C++ (extern "C"); clients/cpp/tare_worker.hpp is the C++ layer over it.
 */
#ifndef TARE_WORKER_H
#define TARE_WORKER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TARE_WORKER_VERSION "0.1.0"
#define TARE_PROTOCOL_VERSION 1
/* The protocol's line limit, newline included. */
#define TARE_MAX_LINE 65536

typedef struct tare_kernel tare_kernel;
typedef struct tare_ctx tare_ctx;

typedef int (*tare_setup_fn)(tare_ctx *ctx, void **state);
typedef int (*tare_init_fn)(tare_ctx *ctx, void *state);
typedef int (*tare_run_fn)(tare_ctx *ctx, void *state, uint64_t loops);
typedef void (*tare_body_fn)(void *state);
typedef int (*tare_teardown_fn)(tare_ctx *ctx, void *state);
typedef int (*tare_init_each_fn)(tare_ctx *ctx, void *state, size_t slot);
typedef void (*tare_body_each_fn)(void *state, size_t slot);

/* Registration (before tare_main). Names match [A-Za-z0-9_./-]+; an invalid or duplicate
 * name, or running out of memory, prints one line on stderr and exits 1 (a programming error). */
tare_kernel *tare_register(const char *name, const char *doc);
void tare_param(tare_kernel *k, const char *name, const char *default_value, const char *doc);
void tare_on_setup(tare_kernel *k, tare_setup_fn fn);
void tare_on_init(tare_kernel *k, tare_init_fn fn);
void tare_on_run(tare_kernel *k, tare_run_fn fn);
void tare_on_body(tare_kernel *k, tare_body_fn fn);
void tare_on_teardown(tare_kernel *k, tare_teardown_fn fn);
/* Per-loop state: before every loop init_each prepares slot `slot` (untimed), body_each is one
 * loop on it (timed); slots 0..batch-1, so state holds `batch` inputs (batch >= 1; 1 times each
 * loop on its own, paying two clock reads a loop). Instead of run/body. Under
 * `tare kernels --counters` such a kernel has no counts (each batch is timed on its own). */
void tare_on_each(tare_kernel *k, size_t batch, tare_init_each_fn init_each,
                  tare_body_each_fn body_each);
/* Threaded kernel (Google Benchmark's ->Threads, JMH's @Threads): the run or body stage runs
 * on `threads` threads at once, started before the clock and released together by a barrier,
 * each doing the sample's N loops; the sample's time is from the release to the last thread's
 * end (per-thread time per loop; tare reports the total throughput, T x N loops in that time).
 * init runs once per sample before the threads start; the stage must be thread-safe (state
 * shared by all threads; tare_thread_index() says which one runs). Not with tare_on_each. */
void tare_set_threads(tare_kernel *k, unsigned threads);
/* 0..T-1 in a threaded kernel's run/body (0 elsewhere). */
unsigned tare_thread_index(void);
/* An opaque pointer handed back by tare_user() in every stage (the C++ layer keeps its
 * closures there). */
void tare_set_user(tare_kernel *k, void *user);

/* Inside stages. */
void *tare_user(const tare_ctx *ctx);
const char *tare_kernel_name(const tare_ctx *ctx);
/* Parameter values (defaults filled in). tare_param_int/double on a value that is not a
 * number record an error (the stage should then return non-zero) and return 0. */
const char *tare_param_str(tare_ctx *ctx, const char *name);
long long tare_param_int(tare_ctx *ctx, const char *name);
double tare_param_double(tare_ctx *ctx, const char *name);
/* Throughput: totals per sample = per-loop count x loops. Set in setup (or any stage). */
void tare_bytes_per_loop(tare_ctx *ctx, double bytes);
void tare_items_per_loop(tare_ctx *ctx, double items);
/* A named metric for the current sample (sent as m.<name>=<value>); set during run or after
 * the loop. Names match [a-z0-9_.-]+; finite values only (others are dropped). */
void tare_metric(tare_ctx *ctx, const char *name, double value);
/* Records a one-line error message (printf format) and returns -1, for `return tare_fail(...)`. */
int tare_fail(tare_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Worker mode when TARE_WORKER_FD is set, standalone mode otherwise. Returns the process exit
 * status: `return tare_main(argc, argv);` from main. */
int tare_main(int argc, char **argv);
/* Overrides the client name and language announced in `hello` (the C++ layer uses it). */
void tare_set_client(const char *client, const char *lang);

/* The timed region of one repetition: the kernel's run, or its body called `loops` times.
 * Called by the worker loop, never inlined, cloned or renamed: `tare kernels --counters`
 * counts instructions under Valgrind's Callgrind with --toggle-collect=tare_timed_region and
 * --dump-after=tare_timed_region, so that each sample's count holds this region only (not
 * setup, init, the clock reads or the protocol). A stripped worker loses the name. */
int tare_timed_region(tare_ctx *ctx, uint64_t loops);

/* The clock measurement the `clock` request answers (monotonic clock, bounded to ~10 ms). */
void tare_clock_measure(double *resolution_ns, double *cost_ns);

/* Protocol codec, exposed for tests and other clients built on this one.
 * tare_percent_encode writes the encoding of src[0..len) into dst (capacity cap, NUL added);
 * returns the encoded length, or -1 when it does not fit. tare_percent_decode decodes a
 * NUL-terminated string into dst (capacity cap); returns the decoded length, or -1 on a bad
 * escape or when it does not fit. */
long tare_percent_encode(const char *src, size_t len, char *dst, size_t cap);
long tare_percent_decode(const char *src, char *dst, size_t cap);

/* Do-not-optimize helpers, the idiom Google Benchmark uses. An empty asm statement the compiler
 * cannot look into: with the value as an in/out memory operand it must assume the asm reads and
 * changes the value (so computing it cannot be dropped, and later uses cannot be folded), and
 * the "memory" clobber makes it assume any memory may be read or written (so stores before it
 * are kept and loads after it are redone). It emits no instruction. */
#if defined(__GNUC__) || defined(__clang__)
/* The value must be an lvalue (a variable); it is forced to memory for that point. */
#define TARE_DO_NOT_OPTIMIZE(x) __asm__ __volatile__("" : "+m"(x) : : "memory")
/* The pointed-to object escapes: the compiler must assume it is read and written. */
static inline void tare_escape(const void *p) { __asm__ __volatile__("" : : "g"(p) : "memory"); }
/* Any memory may have been read or written here. */
static inline void tare_clobber_memory(void) { __asm__ __volatile__("" : : : "memory"); }
#else
/* Portable fallback: a volatile read of the object (costs a load). */
#define TARE_DO_NOT_OPTIMIZE(x) ((void)*(volatile const char *)&(x))
static inline void tare_escape(const void *p) {
    static const void *volatile sink;
    sink = p;
}
static inline void tare_clobber_memory(void) {}
#endif

#ifdef __cplusplus
}
#endif
#endif
