/* tare_worker.c - the C client of the tare worker protocol, version 1: registry of kernels,
 * the line codec, the worker loop over TARE_WORKER_FD, and standalone mode. See tare_worker.h
 * for the API and docs/protocol.md for the protocol. Hand-written on purpose: the protocol is a
 * few line-oriented verbs and a C client must not pull in dependencies. */
#define _POSIX_C_SOURCE 200809L
#include "tare_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_METRICS 32
#define MAX_FIELDS 256

typedef struct {
    char *name, *def, *doc;
} param_def;

struct tare_kernel {
    char *name, *doc;
    param_def *params;
    size_t nparams;
    tare_setup_fn setup;
    tare_init_fn init;
    tare_run_fn run;
    tare_body_fn body;
    tare_teardown_fn teardown;
    tare_init_each_fn init_each;
    tare_body_each_fn body_each;
    size_t each_batch;
    unsigned threads;
    void *user;
};

struct tare_ctx {
    tare_kernel *k;
    char **values; /* one per parameter of k */
    void *state;
    int active;
    double bytes_per_loop, items_per_loop;
    size_t nmetrics;
    char metric_names[MAX_METRICS][64];
    double metric_values[MAX_METRICS];
    int has_error;
    char error[1024];
};

static tare_kernel **g_kernels;
static size_t g_nkernels;
static const char *g_client = "tare-worker-c";
static const char *g_lang = "c";

/* ---------- small helpers ---------- */

static void die(const char *what) {
    fprintf(stderr, "tare-worker: error: %s\n", what);
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory");
    return p;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s ? s : "") + 1;
    char *p = xmalloc(n);
    memcpy(p, s ? s : "", n);
    return p;
}

static int valid_name(const char *s, int allow_upper_and_slash) {
    if (!s || !*s) return 0;
    for (; *s; s++) {
        char c = *s;
        int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (allow_upper_and_slash) ok = ok || (c >= 'A' && c <= 'Z') || c == '/';
        if (!ok) return 0;
    }
    return 1;
}

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Parses a decimal unsigned integer (digits only, no sign, no overflow). */
static int parse_u64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (!s || !*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

/* ---------- registry ---------- */

static tare_kernel *find_kernel(const char *name) {
    for (size_t i = 0; i < g_nkernels; i++)
        if (strcmp(g_kernels[i]->name, name) == 0) return g_kernels[i];
    return NULL;
}

tare_kernel *tare_register(const char *name, const char *doc) {
    char msg[512];
    if (!valid_name(name, 1)) {
        snprintf(msg, sizeof msg, "kernel name '%.200s' must match [A-Za-z0-9_./-]+", name ? name : "");
        die(msg);
    }
    if (find_kernel(name)) {
        snprintf(msg, sizeof msg, "kernel '%.200s' is registered twice", name);
        die(msg);
    }
    tare_kernel *k = xmalloc(sizeof *k);
    memset(k, 0, sizeof *k);
    k->name = xstrdup(name);
    k->doc = doc ? xstrdup(doc) : NULL;
    tare_kernel **n = realloc(g_kernels, (g_nkernels + 1) * sizeof *n);
    if (!n) die("out of memory");
    g_kernels = n;
    g_kernels[g_nkernels++] = k;
    return k;
}

void tare_param(tare_kernel *k, const char *name, const char *default_value, const char *doc) {
    char msg[512];
    if (!valid_name(name, 1)) {
        snprintf(msg, sizeof msg, "parameter name '%.200s' of kernel '%.200s' must match [A-Za-z0-9_./-]+",
                 name ? name : "", k->name);
        die(msg);
    }
    for (size_t i = 0; i < k->nparams; i++)
        if (strcmp(k->params[i].name, name) == 0) {
            snprintf(msg, sizeof msg, "parameter '%.200s' of kernel '%.200s' is declared twice", name, k->name);
            die(msg);
        }
    param_def *n = realloc(k->params, (k->nparams + 1) * sizeof *n);
    if (!n) die("out of memory");
    k->params = n;
    k->params[k->nparams].name = xstrdup(name);
    k->params[k->nparams].def = xstrdup(default_value ? default_value : "");
    k->params[k->nparams].doc = doc ? xstrdup(doc) : NULL;
    k->nparams++;
}

void tare_on_setup(tare_kernel *k, tare_setup_fn fn) { k->setup = fn; }
void tare_on_init(tare_kernel *k, tare_init_fn fn) { k->init = fn; }
void tare_on_run(tare_kernel *k, tare_run_fn fn) { k->run = fn; }
void tare_on_body(tare_kernel *k, tare_body_fn fn) { k->body = fn; }
void tare_on_each(tare_kernel *k, size_t batch, tare_init_each_fn init_each,
                  tare_body_each_fn body_each) {
    k->each_batch = batch ? batch : 1;
    k->init_each = init_each;
    k->body_each = body_each;
}
void tare_on_teardown(tare_kernel *k, tare_teardown_fn fn) { k->teardown = fn; }
void tare_set_threads(tare_kernel *k, unsigned threads) { k->threads = threads ? threads : 1; }

static _Thread_local unsigned t_thread_index;
unsigned tare_thread_index(void) { return t_thread_index; }
void tare_set_user(tare_kernel *k, void *user) { k->user = user; }
void tare_set_client(const char *client, const char *lang) {
    if (client) g_client = client;
    if (lang) g_lang = lang;
}

/* ---------- context (used inside stages) ---------- */

void *tare_user(const tare_ctx *ctx) { return ctx->k->user; }
const char *tare_kernel_name(const tare_ctx *ctx) { return ctx->k->name; }

int tare_fail(tare_ctx *ctx, const char *fmt, ...) {
    if (!ctx->has_error) { /* keep the first error: it is usually the cause */
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
        va_end(ap);
        ctx->has_error = 1;
    }
    return -1;
}

const char *tare_param_str(tare_ctx *ctx, const char *name) {
    for (size_t i = 0; i < ctx->k->nparams; i++)
        if (strcmp(ctx->k->params[i].name, name) == 0) return ctx->values[i];
    tare_fail(ctx, "kernel %s has no parameter '%s'", ctx->k->name, name);
    return "";
}

long long tare_param_int(tare_ctx *ctx, const char *name) {
    const char *s = tare_param_str(ctx, name);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno) {
        tare_fail(ctx, "parameter %s=%s of kernel %s is not an integer", name, s, ctx->k->name);
        return 0;
    }
    return v;
}

double tare_param_double(tare_ctx *ctx, const char *name) {
    const char *s = tare_param_str(ctx, name);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v)) {
        tare_fail(ctx, "parameter %s=%s of kernel %s is not a finite number", name, s, ctx->k->name);
        return 0;
    }
    return v;
}

void tare_bytes_per_loop(tare_ctx *ctx, double bytes) { ctx->bytes_per_loop = bytes; }
void tare_items_per_loop(tare_ctx *ctx, double items) { ctx->items_per_loop = items; }

void tare_metric(tare_ctx *ctx, const char *name, double value) {
    if (!valid_name(name, 0) || strlen(name) >= sizeof ctx->metric_names[0] || !isfinite(value)) return;
    for (size_t i = 0; i < ctx->nmetrics; i++)
        if (strcmp(ctx->metric_names[i], name) == 0) {
            ctx->metric_values[i] = value;
            return;
        }
    if (ctx->nmetrics == MAX_METRICS) return;
    strcpy(ctx->metric_names[ctx->nmetrics], name);
    ctx->metric_values[ctx->nmetrics++] = value;
}

static void ctx_clear(tare_ctx *ctx) {
    if (ctx->values) {
        for (size_t i = 0; i < ctx->k->nparams; i++) free(ctx->values[i]);
        free(ctx->values);
    }
    memset(ctx, 0, sizeof *ctx);
}

/* Fills ctx for kernel k with defaults; overrides are applied by the caller. */
static void ctx_start(tare_ctx *ctx, tare_kernel *k) {
    memset(ctx, 0, sizeof *ctx);
    ctx->k = k;
    ctx->values = xmalloc((k->nparams ? k->nparams : 1) * sizeof(char *));
    for (size_t i = 0; i < k->nparams; i++) ctx->values[i] = xstrdup(k->params[i].def);
}

static int ctx_set_param(tare_ctx *ctx, const char *name, const char *value) {
    for (size_t i = 0; i < ctx->k->nparams; i++)
        if (strcmp(ctx->k->params[i].name, name) == 0) {
            free(ctx->values[i]);
            ctx->values[i] = xstrdup(value);
            return 0;
        }
    return -1;
}

static const char *ctx_error(tare_ctx *ctx, const char *stage, int rc) {
    if (!ctx->has_error)
        snprintf(ctx->error, sizeof ctx->error, "kernel %s: %s stage returned %d", ctx->k->name, stage, rc);
    ctx->has_error = 0;
    return ctx->error;
}

/* Runs the setup stage; on failure the context is cleared and the message is returned. */
static const char *do_setup(tare_ctx *ctx) {
    if (ctx->k->setup) {
        int rc = ctx->k->setup(ctx, &ctx->state);
        if (rc != 0 || ctx->has_error) return ctx_error(ctx, "setup", rc);
    }
    ctx->active = 1;
    return NULL;
}

/* Kept a separate function of this exact name under any optimization (see the header). */
#if defined(__clang__)
__attribute__((noinline))
#elif defined(__GNUC__)
__attribute__((noipa))
#endif
int tare_timed_region(tare_ctx *ctx, uint64_t loops) {
    tare_kernel *k = ctx->k;
    if (k->run) return k->run(ctx, ctx->state, loops);
    tare_body_fn body = k->body;
    void *state = ctx->state;
    for (uint64_t i = 0; i < loops; i++) body(state);
    return 0;
}

/* One batch of a per-loop kernel: body_each over slots 0..b-1. Not inlined, so the compiler
 * cannot move the clock reads around it. */
#if defined(__clang__)
__attribute__((noinline))
#elif defined(__GNUC__)
__attribute__((noinline, noclone))
#endif
static void timed_batch(tare_body_each_fn body, void *state, size_t b) {
    for (size_t s = 0; s < b; s++) body(state, s);
}

/* One repetition of a per-loop kernel: batches of init_each (untimed) then body_each (timed),
 * the sample's time the sum of its batches' (its CPU time likewise). */
static const char *do_rep_each(tare_ctx *ctx, uint64_t loops, uint64_t *ns, uint64_t *cpu) {
    tare_kernel *k = ctx->k;
    uint64_t total = 0, total_cpu = 0;
    for (uint64_t done = 0; done < loops;) {
        size_t b = k->each_batch;
        if (loops - done < b) b = (size_t)(loops - done);
        for (size_t s = 0; s < b; s++) {
            int rc = k->init_each(ctx, ctx->state, s);
            if (rc != 0 || ctx->has_error) return ctx_error(ctx, "init_each", rc);
        }
        uint64_t c0 = cpu ? cpu_ns() : 0;
        uint64_t t0 = mono_ns();
        timed_batch(k->body_each, ctx->state, b);
        uint64_t t1 = mono_ns();
        if (cpu) total_cpu += cpu_ns() - c0;
        total += t1 - t0;
        if (ctx->has_error) return ctx_error(ctx, "run", 0);
        done += b;
    }
    *ns = total;
    if (cpu) *cpu = total_cpu;
    return NULL;
}

/* Threaded kernels: T threads started before the clock wait at a gate (a mutex and condition
 * variable, as Google Benchmark's barrier); the main thread reads the clock and opens it, each
 * thread runs the timed region (N loops), the last one to finish reads the clock: the sample is
 * from the release to the last thread's end. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open, abort;
    atomic_uint finished;
    unsigned threads;
    uint64_t t1;
} thread_gate;

typedef struct {
    tare_ctx *ctx;
    uint64_t loops;
    unsigned index;
    int rc;
    thread_gate *gate;
} thread_job;

static void *thread_main(void *p) {
    thread_job *j = p;
    thread_gate *g = j->gate;
    t_thread_index = j->index;
    pthread_mutex_lock(&g->mu);
    while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
    int abort_run = g->abort;
    pthread_mutex_unlock(&g->mu);
    if (!abort_run) j->rc = tare_timed_region(j->ctx, j->loops);
    if (atomic_fetch_add(&g->finished, 1) + 1 == g->threads) g->t1 = mono_ns();
    return NULL;
}

static const char *do_rep_threads(tare_ctx *ctx, uint64_t loops, uint64_t *ns, uint64_t *cpu) {
    unsigned n = ctx->k->threads;
    thread_gate g = {.open = 0, .abort = 0, .threads = n, .t1 = 0};
    atomic_init(&g.finished, 0);
    thread_job *jobs = calloc(n, sizeof *jobs);
    pthread_t *ids = calloc(n, sizeof *ids);
    if (!jobs || !ids) {
        free(jobs);
        free(ids);
        snprintf(ctx->error, sizeof ctx->error, "out of memory for %u threads", n);
        ctx->has_error = 1;
        return ctx_error(ctx, "run", -1);
    }
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    unsigned started = 0;
    int create_err = 0;
    for (; started < n; started++) {
        jobs[started] = (thread_job){ctx, loops, started, 0, &g};
        create_err = pthread_create(&ids[started], NULL, thread_main, &jobs[started]);
        if (create_err) break;
    }
    if (started < n) g.threads = started; /* the last started one reads the clock */
    uint64_t c0 = cpu ? cpu_ns() : 0;
    pthread_mutex_lock(&g.mu);
    g.open = 1;
    g.abort = started < n;
    uint64_t t0 = mono_ns();
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    int rc = 0;
    for (unsigned i = 0; i < started; i++) {
        pthread_join(ids[i], NULL);
        if (jobs[i].rc) rc = jobs[i].rc;
    }
    if (cpu) *cpu = cpu_ns() - c0;
    *ns = g.t1 > t0 ? g.t1 - t0 : 0;
    pthread_mutex_destroy(&g.mu);
    pthread_cond_destroy(&g.cv);
    free(jobs);
    free(ids);
    if (started < n) {
        snprintf(ctx->error, sizeof ctx->error, "could not start thread %u of %u: %s", started + 1, n, strerror(create_err));
        ctx->has_error = 1;
        return ctx_error(ctx, "run", -1);
    }
    if (rc != 0 || ctx->has_error) return ctx_error(ctx, "run", rc);
    return NULL;
}

/* One repetition: init (untimed), then the timed loop. Returns NULL or an error message. */
static const char *do_rep(tare_ctx *ctx, uint64_t loops, uint64_t *ns, uint64_t *cpu) {
    tare_kernel *k = ctx->k;
    ctx->nmetrics = 0;
    if (k->init) {
        int rc = k->init(ctx, ctx->state);
        if (rc != 0 || ctx->has_error) return ctx_error(ctx, "init", rc);
    }
    if (k->body_each) return do_rep_each(ctx, loops, ns, cpu);
    if (k->threads > 1) return do_rep_threads(ctx, loops, ns, cpu);
    uint64_t c0 = cpu ? cpu_ns() : 0;
    uint64_t t0 = mono_ns();
    int rc = tare_timed_region(ctx, loops);
    uint64_t t1 = mono_ns();
    if (cpu) *cpu = cpu_ns() - c0;
    *ns = t1 - t0;
    if (rc != 0 || ctx->has_error) return ctx_error(ctx, "run", rc);
    return NULL;
}

static const char *do_teardown(tare_ctx *ctx) {
    const char *err = NULL;
    if (ctx->k->teardown) {
        int rc = ctx->k->teardown(ctx, ctx->state);
        if (rc != 0 || ctx->has_error) err = ctx_error(ctx, "teardown", rc);
    }
    ctx->active = 0;
    ctx->state = NULL;
    return err;
}

/* ---------- clock ---------- */

void tare_clock_measure(double *resolution_ns, double *cost_ns) {
    /* Cost: a tight loop of reads for ~5 ms, mean ns per read. */
    uint64_t start = mono_ns(), t = start, reads = 0;
    while (t - start < 5000000u) {
        for (int i = 0; i < 64; i++) t = mono_ns();
        reads += 64;
    }
    *cost_ns = (double)(t - start) / (double)reads;
    /* Resolution: the smallest non-zero difference of consecutive reads, for ~5 ms. */
    uint64_t best = UINT64_MAX, prev = mono_ns();
    start = prev;
    while (prev - start < 5000000u) {
        uint64_t now = mono_ns();
        if (now > prev && now - prev < best) best = now - prev;
        prev = now;
    }
    *resolution_ns = best == UINT64_MAX ? 0.0 : (double)best;
}

/* ---------- codec ---------- */

static int unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~' || c == ':' || c == '/' || c == ',' || c == '+';
}

long tare_percent_encode(const char *src, size_t len, char *dst, size_t cap) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        if (unreserved(c)) {
            if (o + 1 >= cap) return -1;
            dst[o++] = (char)c;
        } else {
            if (o + 3 >= cap) return -1;
            dst[o++] = '%';
            dst[o++] = hex[c >> 4];
            dst[o++] = hex[c & 15];
        }
    }
    if (o >= cap) return -1;
    dst[o] = 0;
    return (long)o;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

long tare_percent_decode(const char *src, char *dst, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; src[i]; i++) {
        char c = src[i];
        if (c == '%') {
            int h = hexval(src[i + 1]), l = h < 0 ? -1 : hexval(src[i + 2]);
            if (h < 0 || l < 0) return -1;
            c = (char)(h * 16 + l);
            i += 2;
        }
        if (o + 1 >= cap) return -1;
        dst[o++] = c;
    }
    if (o >= cap) return -1;
    dst[o] = 0;
    return (long)o;
}

/* ---------- worker mode: I/O ---------- */

typedef struct {
    int fd;
    char in[TARE_MAX_LINE + 1];
    size_t in_len;
    int skipping; /* discarding the rest of an over-long line */
    char out[TARE_MAX_LINE + 16]; /* one line, and room for a `done` sent with the last sample */
    size_t out_len;
} conn;

/* Writes all of buf; returns -1 when the peer is gone. */
static int write_all(int fd, const char *buf, size_t len) {
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK) n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Line building: out holds one line at a time; sent by line_end. */
static void line_start(conn *c, const char *verb) {
    c->out_len = strlen(verb);
    memcpy(c->out, verb, c->out_len);
}

/* Appends " key=<encoded value>"; a field that would pass the line limit is dropped. */
static void line_field(conn *c, const char *key, const char *value) {
    char enc[TARE_MAX_LINE];
    size_t klen = strlen(key);
    long n = tare_percent_encode(value, strlen(value), enc, sizeof enc);
    if (n < 0 || c->out_len + 2 + klen + (size_t)n + 1 > TARE_MAX_LINE) return;
    c->out[c->out_len++] = ' ';
    memcpy(c->out + c->out_len, key, klen);
    c->out_len += klen;
    c->out[c->out_len++] = '=';
    memcpy(c->out + c->out_len, enc, (size_t)n);
    c->out_len += (size_t)n;
}

/* The shortest of %.15g..%.17g that reads back as the same double (JSON number syntax). */
static void format_double(char *buf, size_t cap, double v) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

static void line_num(conn *c, const char *key, double v) {
    char buf[64];
    if (!isfinite(v)) return;
    format_double(buf, sizeof buf, v);
    line_field(c, key, buf);
}

static void line_u64(conn *c, const char *key, uint64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    line_field(c, key, buf);
}

static int line_end(conn *c) {
    c->out[c->out_len++] = '\n';
    int rc = write_all(c->fd, c->out, c->out_len);
    c->out_len = 0;
    return rc;
}

/* Ends the line and sends it with a `done` line after it, in one write: the last sample of a
 * run and its `done` reach tare together (one send, one wake-up of tare, not two). */
static int line_end_done(conn *c) {
    memcpy(c->out + c->out_len, "\ndone\n", 6);
    c->out_len += 6;
    int rc = write_all(c->fd, c->out, c->out_len);
    c->out_len = 0;
    return rc;
}

static int send_simple(conn *c, const char *verb) {
    line_start(c, verb);
    return line_end(c);
}

/* error message=<one line>: newlines in user text become spaces. */
static int send_error(conn *c, const char *message) {
    char one[1024];
    size_t i = 0;
    for (; message[i] && i + 1 < sizeof one; i++) one[i] = (message[i] == '\n' || message[i] == '\r') ? ' ' : message[i];
    one[i] = 0;
    line_start(c, "error");
    line_field(c, "message", one);
    return line_end(c);
}

/* Reads one line (without its newline) into *line. Returns 1 for a line, 0 at EOF, -1 for a
 * line over the limit (already discarded up to its newline, or pending). */
static int read_line(conn *c, char **line, size_t *consumed) {
    for (;;) {
        char *nl = memchr(c->in, '\n', c->in_len);
        if (nl) {
            size_t len = (size_t)(nl - c->in);
            *nl = 0;
            *line = c->in;
            *consumed = len + 1;
            if (c->skipping) {
                c->skipping = 0;
                return -1;
            }
            return 1;
        }
        if (c->in_len >= TARE_MAX_LINE) { /* no newline within the limit */
            c->in_len = 0;
            c->skipping = 1;
        }
        ssize_t n = read(c->fd, c->in + c->in_len, TARE_MAX_LINE - c->in_len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0;
        c->in_len += (size_t)n;
    }
}

static void consume(conn *c, size_t n) {
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
}

/* ---------- worker mode: messages ---------- */

typedef struct {
    char *verb;
    size_t n;
    char *keys[MAX_FIELDS];
    char *vals[MAX_FIELDS];
} message;

/* Splits and decodes a line in place. Returns NULL or an error text. */
static const char *parse_message(char *line, message *m) {
    m->n = 0;
    if (!*line) return "empty line";
    char *p = line;
    m->verb = p;
    char *sp = strchr(p, ' ');
    if (sp) *sp = 0;
    for (char *v = m->verb; *v; v++)
        if (!((*v >= 'a' && *v <= 'z') || (*v >= '0' && *v <= '9') || *v == '_' || *v == '.' || *v == '-'))
            return "malformed verb";
    while (sp) {
        p = sp + 1;
        sp = strchr(p, ' ');
        if (sp) *sp = 0;
        char *eq = strchr(p, '=');
        if (!eq) return "malformed field (expected key=value)";
        *eq = 0;
        if (!valid_name(p, 0)) return "malformed field key";
        if (m->n == MAX_FIELDS) return "too many fields";
        for (size_t i = 0; i < m->n; i++)
            if (strcmp(m->keys[i], p) == 0) return "repeated key";
        long len = tare_percent_decode(eq + 1, eq + 1, strlen(eq + 1) + 1);
        if (len < 0) return "bad percent-encoding";
        if ((size_t)len != strlen(eq + 1)) return "value contains a NUL byte";
        m->keys[m->n] = p;
        m->vals[m->n] = eq + 1;
        m->n++;
    }
    return NULL;
}

static const char *field(const message *m, const char *key) {
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
    return NULL;
}

static int send_hello(conn *c) {
    line_start(c, "hello");
    line_field(c, "protocol", "1");
    line_field(c, "client", g_client);
    line_field(c, "version", TARE_WORKER_VERSION);
    line_field(c, "lang", g_lang);
    if (line_end(c)) return -1;
    for (size_t i = 0; i < g_nkernels; i++) {
        tare_kernel *k = g_kernels[i];
        line_start(c, "kernel");
        line_field(c, "name", k->name);
        if (k->doc) line_field(c, "doc", k->doc);
        char threads[16];
        snprintf(threads, sizeof threads, "%u", k->threads);
        if (k->threads > 1) line_field(c, "threads", threads);
        if (line_end(c)) return -1;
        for (size_t j = 0; j < k->nparams; j++) {
            line_start(c, "param");
            line_field(c, "kernel", k->name);
            line_field(c, "name", k->params[j].name);
            line_field(c, "default", k->params[j].def);
            if (k->params[j].doc) line_field(c, "doc", k->params[j].doc);
            if (line_end(c)) return -1;
        }
    }
    return send_simple(c, "ready");
}

static int handle_setup(conn *c, tare_ctx *ctx, const message *m) {
    char msg[512];
    const char *name = field(m, "kernel");
    if (ctx->active) {
        snprintf(msg, sizeof msg, "kernel %s is already set up; send teardown first", ctx->k->name);
        return send_error(c, msg);
    }
    if (!name) return send_error(c, "setup needs kernel=<name>");
    tare_kernel *k = find_kernel(name);
    if (!k) {
        snprintf(msg, sizeof msg, "unknown kernel '%.200s'", name);
        return send_error(c, msg);
    }
    ctx_start(ctx, k);
    for (size_t i = 0; i < m->n; i++) {
        if (strncmp(m->keys[i], "p.", 2) != 0) continue;
        if (ctx_set_param(ctx, m->keys[i] + 2, m->vals[i]) != 0) {
            snprintf(msg, sizeof msg, "kernel %s has no parameter '%.200s'", k->name, m->keys[i] + 2);
            ctx_clear(ctx);
            return send_error(c, msg);
        }
    }
    const char *err = do_setup(ctx);
    if (err) {
        snprintf(msg, sizeof msg, "%s", err);
        ctx_clear(ctx);
        return send_error(c, msg);
    }
    return send_simple(c, "ok");
}

static int handle_run(conn *c, tare_ctx *ctx, const message *m) {
    uint64_t loops, reps;
    if (!ctx->active) return send_error(c, "run with no kernel set up; send setup first");
    if (!field(m, "loops") || parse_u64(field(m, "loops"), &loops) || loops < 1)
        return send_error(c, "run needs loops=<integer >= 1>");
    if (!field(m, "reps") || parse_u64(field(m, "reps"), &reps) || reps < 1)
        return send_error(c, "run needs reps=<integer >= 1>");
    for (uint64_t r = 0; r < reps; r++) {
        uint64_t ns, cpu;
        const char *err = do_rep(ctx, loops, &ns, &cpu);
        if (err) return send_error(c, err);
        line_start(c, "sample");
        line_u64(c, "loops", loops);
        line_u64(c, "ns", ns);
        line_u64(c, "cpu_ns", cpu);
        if (ctx->bytes_per_loop > 0) line_num(c, "bytes", ctx->bytes_per_loop * (double)loops);
        if (ctx->items_per_loop > 0) line_num(c, "items", ctx->items_per_loop * (double)loops);
        for (size_t i = 0; i < ctx->nmetrics; i++) {
            char key[80];
            snprintf(key, sizeof key, "m.%s", ctx->metric_names[i]);
            line_num(c, key, ctx->metric_values[i]);
        }
        /* Each sample is sent as soon as it is measured; the last one carries the `done`. */
        if (r + 1 < reps ? line_end(c) : line_end_done(c)) return -1;
    }
    return 0;
}

static int handle_teardown(conn *c, tare_ctx *ctx) {
    char msg[1024];
    if (!ctx->active) return send_error(c, "teardown with no kernel set up");
    const char *err = do_teardown(ctx);
    if (err) snprintf(msg, sizeof msg, "%s", err);
    ctx_clear(ctx);
    return err ? send_error(c, msg) : send_simple(c, "ok");
}

static int worker_main(const char *fdtext) {
    uint64_t fd64;
    if (parse_u64(fdtext, &fd64) || fd64 > 1000000 || fcntl((int)fd64, F_GETFD) < 0) {
        fprintf(stderr, "tare-worker: error: TARE_WORKER_FD=%s is not an open file descriptor; start this program with tare kernels, or unset TARE_WORKER_FD for standalone mode\n", fdtext);
        return 1;
    }
    static conn c; /* 128 KiB of buffers: static, not on the stack */
    memset(&c, 0, sizeof c);
    c.fd = (int)fd64;
    fcntl(c.fd, F_SETFD, FD_CLOEXEC);
    unsetenv("TARE_WORKER_FD");
    /* static: at exit (bye or EOF) a kernel still set up stays reachable, not leaked */
    static tare_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    if (send_hello(&c)) return 0;
    for (;;) {
        char *line;
        size_t used = 0;
        int r = read_line(&c, &line, &used);
        if (r == 0) return 0; /* EOF: tare went away */
        int rc;
        if (r < 0) {
            rc = send_error(&c, "request line longer than 65536 bytes");
        } else {
            message m;
            const char *perr = parse_message(line, &m);
            if (perr) {
                char msg[128];
                snprintf(msg, sizeof msg, "malformed request: %s", perr);
                rc = send_error(&c, msg);
            } else if (strcmp(m.verb, "clock") == 0) {
                double res, cost;
                tare_clock_measure(&res, &cost);
                char a[64], b[64];
                snprintf(a, sizeof a, "%.6g", res);
                snprintf(b, sizeof b, "%.6g", cost);
                line_start(&c, "clock");
                line_field(&c, "resolution_ns", a);
                line_field(&c, "cost_ns", b);
                rc = line_end(&c);
            } else if (strcmp(m.verb, "setup") == 0) {
                rc = handle_setup(&c, &ctx, &m);
            } else if (strcmp(m.verb, "run") == 0) {
                rc = handle_run(&c, &ctx, &m);
            } else if (strcmp(m.verb, "teardown") == 0) {
                rc = handle_teardown(&c, &ctx);
            } else if (strcmp(m.verb, "exit") == 0) {
                send_simple(&c, "bye");
                return 0;
            } else {
                char msg[160];
                snprintf(msg, sizeof msg, "unknown request '%.100s'", m.verb);
                rc = send_error(&c, msg);
            }
        }
        if (rc) return 0; /* the peer is gone */
        consume(&c, used);
    }
}

/* ---------- standalone mode ---------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void format_throughput(char *buf, size_t cap, double per_sec, const char *unit) {
    const char *pre[] = {"", "k", "M", "G", "T"};
    int i = 0;
    while (per_sec >= 1000 && i < 4) {
        per_sec /= 1000;
        i++;
    }
    snprintf(buf, cap, "%.3g %s%s/s", per_sec, pre[i], unit);
}

static int standalone_kernel(tare_kernel *k, char **overrides, size_t noverrides) {
    tare_ctx ctx;
    ctx_start(&ctx, k);
    char params[1024] = "";
    for (size_t i = 0; i < noverrides; i++) {
        char *eq = strchr(overrides[i], '=');
        *eq = 0;
        ctx_set_param(&ctx, overrides[i], eq + 1);
        *eq = '=';
    }
    for (size_t i = 0; i < k->nparams; i++) {
        size_t len = strlen(params);
        snprintf(params + len, sizeof params - len, "%s%s=%s", i ? " " : "", k->params[i].name, ctx.values[i]);
    }
    const char *err = do_setup(&ctx);
    if (err) {
        fprintf(stderr, "tare-worker: error: %s\n", err);
        ctx_clear(&ctx);
        return 1;
    }
    uint64_t loops = 1, ns = 0;
    for (;;) {
        err = do_rep(&ctx, loops, &ns, NULL);
        if (err || ns >= 10000000u || loops >= (UINT64_C(1) << 62)) break;
        loops *= 2;
    }
    double per[10];
    for (int s = 0; s < 10 && !err; s++) {
        err = do_rep(&ctx, loops, &ns, NULL);
        per[s] = (double)ns / (double)loops;
    }
    if (err) {
        fprintf(stderr, "tare-worker: error: %s\n", err);
        do_teardown(&ctx);
        ctx_clear(&ctx);
        return 1;
    }
    qsort(per, 10, sizeof per[0], cmp_double);
    double med = (per[4] + per[5]) / 2;
    char tp[64] = "";
    if (ctx.bytes_per_loop > 0 && med > 0)
        format_throughput(tp, sizeof tp, ctx.bytes_per_loop / (med * 1e-9), "B");
    else if (ctx.items_per_loop > 0 && med > 0)
        format_throughput(tp, sizeof tp, ctx.items_per_loop / (med * 1e-9), "items");
    char medtext[64];
    snprintf(medtext, sizeof medtext, med < 1000 ? "%.4g" : "%.0f", med);
    printf("%s%s%s %s ns/loop%s%s  (N=%llu, 10 samples)\n", k->name, *params ? " " : "", params, medtext,
           *tp ? "  " : "", tp, (unsigned long long)loops);
    fflush(stdout);
    err = do_teardown(&ctx);
    ctx_clear(&ctx);
    if (err) {
        fprintf(stderr, "tare-worker: error: %s\n", err);
        return 1;
    }
    return 0;
}

static int standalone_main(int argc, char **argv) {
    int list = 0;
    const char *filter = NULL;
    char **overrides = xmalloc((size_t)(argc > 0 ? argc : 1) * sizeof(char *));
    size_t noverrides = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--list") == 0) {
            list = 1;
        } else if (strcmp(a, "--filter") == 0 || strcmp(a, "-p") == 0 || strcmp(a, "--param") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tare-worker: error: %s needs a value\n", a);
                free(overrides);
                return 1;
            }
            if (a[2] == 'f') filter = argv[++i];
            else overrides[noverrides++] = argv[++i];
        } else if (strncmp(a, "--filter=", 9) == 0) {
            filter = a + 9;
        } else if (strncmp(a, "--param=", 8) == 0) {
            overrides[noverrides++] = (char *)a + 8;
        } else {
            fprintf(stderr, "tare-worker: error: unknown argument '%s' (known: --list, --filter REGEX, -p NAME=VALUE)\n", a);
            free(overrides);
            return 1;
        }
    }
    for (size_t i = 0; i < noverrides; i++) {
        char *eq = strchr(overrides[i], '=');
        int known = 0;
        if (eq) {
            *eq = 0;
            for (size_t k = 0; k < g_nkernels && !known; k++)
                for (size_t j = 0; j < g_kernels[k]->nparams; j++)
                    if (strcmp(g_kernels[k]->params[j].name, overrides[i]) == 0) known = 1;
            *eq = '=';
        }
        if (!eq || !known) {
            fprintf(stderr, "tare-worker: error: -p %s: %s\n", overrides[i],
                    eq ? "no kernel has this parameter (see --list)" : "expected NAME=VALUE");
            free(overrides);
            return 1;
        }
    }
    regex_t re;
    if (filter) {
        int e = regcomp(&re, filter, REG_EXTENDED | REG_NOSUB);
        if (e) {
            char why[128];
            regerror(e, &re, why, sizeof why);
            fprintf(stderr, "tare-worker: error: --filter '%s' is not a valid regular expression: %s\n", filter, why);
            free(overrides);
            return 1;
        }
    }
    for (size_t i = 0; i < g_nkernels && rc == 0; i++) {
        tare_kernel *k = g_kernels[i];
        if (filter && regexec(&re, k->name, 0, NULL, 0) != 0) continue;
        if (list) {
            printf("%s%s%s\n", k->name, k->doc ? "  # " : "", k->doc ? k->doc : "");
            for (size_t j = 0; j < k->nparams; j++)
                printf("  -p %s=%s%s%s\n", k->params[j].name, k->params[j].def, k->params[j].doc ? "  # " : "",
                       k->params[j].doc ? k->params[j].doc : "");
        } else {
            rc = standalone_kernel(k, overrides, noverrides);
        }
    }
    if (filter) regfree(&re);
    free(overrides);
    return rc;
}

int tare_main(int argc, char **argv) {
    for (size_t i = 0; i < g_nkernels; i++)
        if (!g_kernels[i]->run && !g_kernels[i]->body && !g_kernels[i]->body_each) {
            fprintf(stderr, "tare-worker: error: kernel %s has neither a run nor a body stage; call tare_on_run or tare_on_body\n", g_kernels[i]->name);
            return 1;
        }
    for (size_t i = 0; i < g_nkernels; i++)
        if (g_kernels[i]->body_each && g_kernels[i]->threads > 1) {
            fprintf(stderr, "tare-worker: error: kernel %s has per-loop init (tare_on_each) and threads; use one or the other\n", g_kernels[i]->name);
            return 1;
        }
    const char *fd = getenv("TARE_WORKER_FD");
    if (fd) return worker_main(fd);
    return standalone_main(argc, argv);
}
