/* A minimal tare master for bench/kernel_overhead.sh. Starts a worker with TARE_WORKER_FD and
 *   minimaster roundtrip COUNT WORKER...   sets up `empty`, times `run loops=1 reps=1` → sample +
 *                                          done COUNT times; prints median and mean round trip (ns)
 *   minimaster measure KERNEL WORKER...    sets up KERNEL, doubles loops from 1 until a sample
 *                                          lasts >= 20 ms, takes 15 samples; prints the medians of
 *                                          wall ns per loop and CPU ns per loop (the sample's
 *                                          ns and cpu_ns fields, as the worker measured them) */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 16];
static size_t len;
static int fd;

static uint64_t now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reads until a line starting with `until` has arrived (inclusive). */
static int read_until(const char *until) {
    for (;;) {
        char *p = buf;
        char *nl;
        while ((nl = memchr(p, '\n', len - (size_t)(p - buf)))) {
            if (strncmp(p, until, strlen(until)) == 0) {
                size_t rest = len - (size_t)(nl + 1 - buf);
                memmove(buf, nl + 1, rest);
                len = rest;
                return 0;
            }
            if (strncmp(p, "error", 5) == 0) {
                fprintf(stderr, "roundtrip: error: the worker answered: %.*s\n", (int)(nl - p), p);
                return -1;
            }
            p = nl + 1;
        }
        size_t rest = len - (size_t)(p - buf);
        memmove(buf, p, rest);
        len = rest;
        ssize_t n = read(fd, buf + len, sizeof buf - len);
        if (n <= 0) return -1;
        len += (size_t)n;
    }
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The value of key in the last line read_until consumed is not kept; this parses a sample line. */
static double field(const char *line, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    return p ? atof(p + strlen(pat)) : -1;
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Reads one line into line (cap bytes). */
static int read_line(char *line, size_t cap) {
    for (;;) {
        char *nl = memchr(buf, '\n', len);
        if (nl) {
            size_t n = (size_t)(nl - buf);
            if (n >= cap) n = cap - 1;
            memcpy(line, buf, n);
            line[n] = 0;
            size_t rest = len - (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, rest);
            len = rest;
            return 0;
        }
        ssize_t r = read(fd, buf + len, sizeof buf - len);
        if (r <= 0) return -1;
        len += (size_t)r;
    }
}

static int measure(const char *kernel) {
    char req[256], line[4096];
    snprintf(req, sizeof req, "setup kernel=%s\n", kernel);
    if (read_until("ready") || write(fd, req, strlen(req)) < 0 || read_until("ok")) return 1;
    unsigned long long loops = 1;
    for (;;) {
        snprintf(req, sizeof req, "run loops=%llu reps=1\n", loops);
        if (write(fd, req, strlen(req)) < 0 || read_line(line, sizeof line) || strncmp(line, "sample ", 7)) return 1;
        if (read_until("done")) return 1;
        if (field(line, "ns") >= 20e6 || loops >= (1ULL << 40)) break;
        loops *= 2;
    }
    enum { REPS = 15 };
    double wall[REPS], cpu[REPS];
    snprintf(req, sizeof req, "run loops=%llu reps=%d\n", loops, REPS);
    if (write(fd, req, strlen(req)) < 0) return 1;
    for (int i = 0; i < REPS; i++) {
        if (read_line(line, sizeof line) || strncmp(line, "sample ", 7)) return 1;
        wall[i] = field(line, "ns") / (double)loops;
        cpu[i] = field(line, "cpu_ns") / (double)loops;
    }
    if (read_until("done")) return 1;
    qsort(wall, REPS, sizeof wall[0], cmpd);
    qsort(cpu, REPS, sizeof cpu[0], cmpd);
    printf("%.6g %.6g\n", wall[REPS / 2], cpu[REPS / 2]);
    const char *bye = "teardown\nexit\n";
    if (write(fd, bye, strlen(bye)) < 0) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4 || (strcmp(argv[1], "roundtrip") && strcmp(argv[1], "measure"))) {
        fprintf(stderr, "usage: minimaster roundtrip COUNT WORKER... | minimaster measure KERNEL WORKER...\n");
        return 2;
    }
    int is_measure = strcmp(argv[1], "measure") == 0;
    int count = is_measure ? 1 : atoi(argv[2]);
    argv += 1; /* argv[1] = COUNT or KERNEL, argv[2..] = the worker */
    int sv[2];
    if (count < 1 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 2;
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        char t[16];
        snprintf(t, sizeof t, "%d", sv[1]);
        setenv("TARE_WORKER_FD", t, 1);
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    close(sv[1]);
    fd = sv[0];
    if (is_measure) {
        int rc = measure(argv[1]);
        waitpid(pid, NULL, 0);
        if (rc) fprintf(stderr, "minimaster: error: the worker broke off or answered an error\n");
        return rc;
    }
    const char *setup = "setup kernel=empty\n", *run = "run loops=1 reps=1\n";
    if (read_until("ready") || write(fd, setup, strlen(setup)) < 0 || read_until("ok")) return 1;
    uint64_t *rt = malloc(sizeof(uint64_t) * (size_t)count);
    for (int i = 0; i < count; i++) {
        uint64_t t0 = now();
        if (write(fd, run, strlen(run)) < 0 || read_until("done")) return 1;
        rt[i] = now() - t0;
    }
    const char *bye = "teardown\nexit\n";
    if (write(fd, bye, strlen(bye)) < 0) return 1;
    read_until("bye");
    waitpid(pid, NULL, 0);
    double sum = 0;
    for (int i = 0; i < count; i++) sum += (double)rt[i];
    qsort(rt, (size_t)count, sizeof rt[0], cmp);
    printf("%llu %.0f\n", (unsigned long long)rt[count / 2], sum / count);
    return 0;
}
