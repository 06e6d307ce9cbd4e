/* A fake tare master: starts a real worker process with TARE_WORKER_FD on one end of a
 * socketpair and drives the protocol, checking every reply. Also unit-tests the codec and
 * standalone mode. Usage: test_master TEST_WORKER BLUR_WORKER CHECKSUMS_FILE */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tare_worker.h"

static int failures, checks;
#define S(x) ((x) ? (x) : "(null)")
#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        checks++;                                                          \
        if (!(cond)) {                                                     \
            failures++;                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
        }                                                                  \
    } while (0)

typedef struct {
    pid_t pid;
    int fd;
    char buf[1 << 17];
    size_t len;
    char line[1 << 17];
} worker;

static void start(worker *w, const char *path, char *const argv[]) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("socketpair");
        exit(2);
    }
    w->len = 0;
    w->pid = fork();
    if (w->pid == 0) {
        close(sv[0]);
        char fd[16];
        snprintf(fd, sizeof fd, "%d", sv[1]);
        setenv("TARE_WORKER_FD", fd, 1);
        setenv("TEST_FD", fd, 1);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1); /* the worker's stdout is not the protocol */
        execv(path, argv);
        _exit(127);
    }
    close(sv[1]);
    w->fd = sv[0];
}

/* Next line from the worker (10 s limit); NULL at EOF or timeout. */
static const char *next(worker *w) {
    for (;;) {
        char *nl = memchr(w->buf, '\n', w->len);
        if (nl) {
            size_t n = (size_t)(nl - w->buf);
            memcpy(w->line, w->buf, n);
            w->line[n] = 0;
            memmove(w->buf, nl + 1, w->len - n - 1);
            w->len -= n + 1;
            return w->line;
        }
        struct pollfd p = {w->fd, POLLIN, 0};
        if (poll(&p, 1, 10000) <= 0) return NULL;
        ssize_t r = read(w->fd, w->buf + w->len, sizeof w->buf - w->len);
        if (r <= 0) return NULL;
        w->len += (size_t)r;
    }
}

static void say(worker *w, const char *text) {
    size_t n = strlen(text);
    if (write(w->fd, text, n) != (ssize_t)n) perror("write");
}

/* Value of key in a protocol line (decoded), or NULL. */
static const char *get(const char *line, const char *key) {
    static char out[1 << 16];
    size_t kl = strlen(key);
    for (const char *p = strchr(line, ' '); p; p = strchr(p + 1, ' ')) {
        if (strncmp(p + 1, key, kl) == 0 && p[1 + kl] == '=') {
            const char *v = p + 2 + kl;
            size_t vl = strcspn(v, " ");
            char enc[1 << 16];
            memcpy(enc, v, vl);
            enc[vl] = 0;
            if (tare_percent_decode(enc, out, sizeof out) < 0) return NULL;
            return out;
        }
    }
    return NULL;
}

static int starts(const char *line, const char *prefix) { return line && strncmp(line, prefix, strlen(prefix)) == 0; }

static int wait_exit(worker *w) {
    for (int i = 0; i < 1000; i++) {
        int st;
        pid_t r = waitpid(w->pid, &st, WNOHANG);
        if (r == w->pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    kill(w->pid, SIGKILL);
    waitpid(w->pid, NULL, 0);
    return -1;
}

static void expect(worker *w, const char *prefix, const char *what) {
    const char *l = next(w);
    CHECK(starts(l, prefix), "%s: expected '%s', got '%s'", what, prefix, l ? l : "(EOF)");
}

static void expect_error(worker *w, const char *request, const char *needle) {
    say(w, request);
    const char *l = next(w);
    CHECK(starts(l, "error message="), "request '%.60s' should fail, got '%s'", request, l ? l : "(EOF)");
    const char *m = l ? get(l, "message") : NULL;
    CHECK(m && strstr(m, needle), "error for '%.60s' should mention '%s', got '%s'", request, needle, m ? m : "");
}

static void test_codec(void) {
    char all[256], enc[1024], dec[512];
    for (int i = 0; i < 256; i++) all[i] = (char)i;
    long n = tare_percent_encode(all, 256, enc, sizeof enc);
    CHECK(n > 0, "encode all bytes");
    CHECK(strlen(enc) == (size_t)n && !strchr(enc, ' ') && !strchr(enc, '=') && !strchr(enc, '\n'), "no separators in %s", enc);
    CHECK(tare_percent_decode(enc + 3, dec, sizeof dec) == 255 && memcmp(dec, all + 1, 255) == 0, "round trip (minus NUL)");
    tare_percent_encode("Az09-._~:/,+", 12, enc, sizeof enc);
    CHECK(strcmp(enc, "Az09-._~:/,+") == 0, "unreserved kept: %s", enc);
    tare_percent_encode("a b=c%\n\xc3\xa9", 9, enc, sizeof enc);
    CHECK(strcmp(enc, "a%20b%3Dc%25%0A%C3%A9") == 0, "uppercase hex: %s", enc);
    CHECK(tare_percent_decode("a%3d%3D%c3%A9", dec, sizeof dec) == 5 && strcmp(dec, "a==\xc3\xa9") == 0, "lowercase hex");
    CHECK(tare_percent_decode("%", dec, sizeof dec) < 0, "lone %%");
    CHECK(tare_percent_decode("%4", dec, sizeof dec) < 0, "short escape");
    CHECK(tare_percent_decode("%zz", dec, sizeof dec) < 0, "non-hex escape");
    CHECK(tare_percent_decode("", dec, sizeof dec) == 0 && dec[0] == 0, "empty value");
    CHECK(tare_percent_encode("abc", 3, enc, 3) < 0, "encode overflow");
    CHECK(tare_percent_encode(" ", 1, enc, 3) < 0, "escape overflow");
    CHECK(tare_percent_decode("abcd", dec, 4) < 0, "decode overflow");
}

static double checksum_ref(const char *path, int size, int radius) {
    FILE *f = fopen(path, "r");
    char line[256];
    double v = NAN;
    while (f && fgets(line, sizeof line, f)) {
        int s, r;
        double c;
        if (line[0] != '#' && sscanf(line, "%d %d %lf", &s, &r, &c) == 3 && s == size && r == radius) v = c;
    }
    if (f) fclose(f);
    return v;
}

static void test_protocol(const char *exe) {
    worker w;
    char *argv[] = {(char *)exe, NULL};
    start(&w, exe, argv);
    const char *l = next(&w);
    CHECK(l && strcmp(l, "hello protocol=1 client=tare-worker-c version=" TARE_WORKER_VERSION " lang=c") == 0, "hello: %s", S(l));
    l = next(&w);
    CHECK(l && strcmp(l, "kernel name=count doc=counts%20loops%20%26%20inits:%20100%25") == 0, "kernel line: %s", S(l));
    l = next(&w);
    CHECK(l && strcmp(l, "param kernel=count name=bytes default=16 doc=bytes%20per%20loop") == 0, "param line: %s", S(l));
    int kernels = 1;
    while ((l = next(&w)) && !starts(l, "ready")) {
        kernels += starts(l, "kernel ");
        if (starts(l, "kernel name=threads")) CHECK(strcmp(l, "kernel name=threads threads=4") == 0, "threads kernel line: %s", l);
    }
    CHECK(l && strcmp(l, "ready") == 0 && kernels == 7, "ready after 7 kernels (%d)", kernels);

    say(&w, "clock\n");
    l = next(&w);
    CHECK(starts(l, "clock "), "clock reply: %s", S(l));
    double res = l ? atof(get(l, "resolution_ns") ? get(l, "resolution_ns") : "0") : 0;
    double cost = l ? atof(get(l, "cost_ns") ? get(l, "cost_ns") : "0") : 0;
    CHECK(res > 0 && res < 1e6 && cost > 0 && cost < 1e5, "clock resolution %g cost %g", res, cost);

    expect_error(&w, "setup kernel=nope\n", "unknown kernel");
    expect_error(&w, "setup kernel=count p.nope=1\n", "no parameter 'nope'");
    expect_error(&w, "setup\n", "kernel=");
    expect_error(&w, "run loops=1 reps=1\n", "no kernel set up");
    expect_error(&w, "teardown\n", "no kernel set up");
    expect_error(&w, "frobnicate x=1\n", "unknown request");
    expect_error(&w, "setup kernel=count kernel=count\n", "repeated key");
    expect_error(&w, "setup kernel=co%zunt\n", "percent");
    expect_error(&w, "setup kernel\n", "key=value");
    expect_error(&w, "\n", "empty");

    /* setup / run / teardown with init, metrics, bytes and items; unknown fields ignored */
    say(&w, "setup kernel=count p.bytes=100 future=field\n");
    expect(&w, "ok", "setup count");
    expect_error(&w, "setup kernel=count\n", "already set up");
    expect_error(&w, "run loops=0 reps=1\n", "loops");
    expect_error(&w, "run loops=5\n", "reps");
    say(&w, "run loops=5 reps=3 extra=1\n");
    for (int r = 1; r <= 3; r++) {
        l = next(&w);
        CHECK(starts(l, "sample loops=5 ns="), "sample %d: %s", r, S(l));
        if (!l) break;
        char want[32];
        snprintf(want, sizeof want, "%d", r);
        CHECK(get(l, "m.inits") && strcmp(get(l, "m.inits"), want) == 0, "init once per repetition: %s", S(l));
        snprintf(want, sizeof want, "%d", 5 * r);
        CHECK(get(l, "m.loops") && strcmp(get(l, "m.loops"), want) == 0, "exactly N loops: %s", S(l));
        CHECK(get(l, "bytes") && strcmp(get(l, "bytes"), "500") == 0, "bytes total: %s", S(l));
        CHECK(get(l, "items") && strcmp(get(l, "items"), "10") == 0, "items total: %s", S(l));
        CHECK(get(l, "cpu_ns") != NULL, "cpu_ns: %s", S(l));
        CHECK(get(l, "m.env_set") && strcmp(get(l, "m.env_set"), "0") == 0, "TARE_WORKER_FD removed: %s", S(l));
        CHECK(get(l, "m.cloexec") && strcmp(get(l, "m.cloexec"), "1") == 0, "FD_CLOEXEC set: %s", S(l));
    }
    expect(&w, "done", "run count");
    say(&w, "teardown\n");
    expect(&w, "ok", "teardown count");

    /* threads: 4 threads of 5 loops of 4 ms each, released together: about 20 ms a sample,
     * not the 80 ms of one after the other; every thread runs its loops */
    say(&w, "setup kernel=threads p.expect=10\nrun loops=5 reps=2\n");
    expect(&w, "ok", "setup threads");
    for (int r = 0; r < 2; r++) {
        l = next(&w);
        CHECK(starts(l, "sample loops=5 ns="), "threads sample: %s", S(l));
        double ns = l && get(l, "ns") ? atof(get(l, "ns")) : 0;
        CHECK(ns >= 20e6 && ns < 70e6, "4 threads x 5 loops of 4 ms in %g ns (one after the other: 80 ms)", ns);
    }
    expect(&w, "done", "threads run");
    say(&w, "teardown\n");
    expect(&w, "ok", "each thread ran its loops");

    /* body form: exactly loops x reps calls */
    say(&w, "setup kernel=body p.expect=21\nrun loops=7 reps=3\n");
    expect(&w, "ok", "setup body");
    for (int r = 0; r < 3; r++) expect(&w, "sample loops=7 ", "body sample");
    expect(&w, "done", "body run");
    say(&w, "teardown\n");
    expect(&w, "ok", "body counted loops x reps");
    say(&w, "setup kernel=body p.expect=1\nrun loops=2 reps=1\nteardown\n");
    expect(&w, "ok", "setup body");
    expect(&w, "sample ", "body sample");
    expect(&w, "done", "body run");
    l = next(&w);
    CHECK(starts(l, "error message=") && strstr(S(get(l, "message")), "ran 2 times"), "teardown failure: %s", S(l));

    /* the last sample and its done come in one write: one read gets both */
    say(&w, "setup kernel=body p.expect=1\n");
    expect(&w, "ok", "setup body");
    CHECK(w.len == 0, "nothing pending before the run (%zu bytes)", w.len);
    say(&w, "run loops=1 reps=1\n");
    {
        struct pollfd p = {w.fd, POLLIN, 0};
        ssize_t r = poll(&p, 1, 10000) > 0 ? read(w.fd, w.buf, sizeof w.buf) : -1;
        w.len = r > 0 ? (size_t)r : 0;
        CHECK(r > 6 && starts(w.buf, "sample loops=1 ") && memcmp(w.buf + r - 6, "\ndone\n", 6) == 0,
              "one read of the reply: '%.*s'", (int)w.len, w.buf);
    }
    expect(&w, "sample loops=1 ", "body sample");
    expect(&w, "done", "body run");
    say(&w, "teardown\n");
    expect(&w, "ok", "teardown body");

    /* parameters are decoded (upper and lowercase hex) and converted */
    say(&w, "setup kernel=params p.text=a%20b%3d%C3%A9 p.num=2.5e-3\nrun loops=1 reps=1\n");
    expect(&w, "ok", "setup params");
    l = next(&w);
    CHECK(l && get(l, "m.textlen") && strcmp(get(l, "m.textlen"), "6") == 0, "decoded length: %s", S(l));
    CHECK(l && get(l, "m.first") && strcmp(get(l, "m.first"), "97") == 0, "decoded text: %s", S(l));
    CHECK(l && get(l, "m.num") && strcmp(get(l, "m.num"), "0.0025") == 0, "float param: %s", S(l));
    expect(&w, "done", "params run");
    say(&w, "teardown\nsetup kernel=params p.num=abc\nrun loops=1 reps=1\n");
    expect(&w, "ok", "teardown params");
    expect(&w, "ok", "setup params abc");
    l = next(&w);
    CHECK(starts(l, "error ") && strstr(S(get(l, "message")), "not a finite number"), "bad number: %s", S(l));
    say(&w, "teardown\nsetup kernel=params p.text=\nrun loops=1 reps=1\n");
    expect(&w, "ok", "teardown");
    expect(&w, "ok", "setup with an empty value");
    l = next(&w);
    CHECK(l && get(l, "m.textlen") && strcmp(get(l, "m.textlen"), "0") == 0, "empty value: %s", S(l));
    expect(&w, "done", "params run");
    say(&w, "teardown\n");
    expect(&w, "ok", "teardown");

    /* user failures become one-line errors and the worker stays usable */
    say(&w, "setup kernel=fail_setup\n");
    l = next(&w);
    CHECK(starts(l, "error message=setup%20failed%20on%20purpose%20second%20line"), "setup failure, one line: %s", S(l));
    expect_error(&w, "run loops=1 reps=1\n", "no kernel set up");
    say(&w, "setup kernel=fail_run\nrun loops=3 reps=5\n");
    expect(&w, "ok", "setup fail_run");
    expect(&w, "sample loops=3 ", "first repetition");
    l = next(&w);
    CHECK(starts(l, "error message=") && strstr(S(get(l, "message")), "run stage returned 7"), "run failure: %s", S(l));
    say(&w, "teardown\n");
    expect(&w, "ok", "teardown after a failed run");
    say(&w, "setup kernel=fail_teardown\nteardown\nteardown\n");
    expect(&w, "ok", "setup fail_teardown");
    l = next(&w);
    CHECK(starts(l, "error ") && strstr(S(get(l, "message")), "on purpose"), "teardown failure: %s", S(l));
    l = next(&w);
    CHECK(starts(l, "error ") && strstr(S(get(l, "message")), "no kernel set up"), "torn down anyway: %s", S(l));

    /* a line over the limit is refused, and the next one works */
    static char big[70010];
    memset(big, 'a', sizeof big);
    memcpy(big, "clock x=", 8);
    big[sizeof big - 2] = '\n';
    big[sizeof big - 1] = 0;
    say(&w, big);
    l = next(&w);
    CHECK(starts(l, "error ") && strstr(S(get(l, "message")), "longer than"), "long line: %s", S(l));
    say(&w, "clock\n");
    expect(&w, "clock ", "after a long line");
    /* exactly at the limit: 65536 bytes with the newline is a valid line */
    static char edge[TARE_MAX_LINE + 2];
    memset(edge, 'a', TARE_MAX_LINE);
    memcpy(edge, "clock x=", 8);
    edge[TARE_MAX_LINE - 1] = '\n';
    edge[TARE_MAX_LINE] = 0;
    say(&w, edge);
    expect(&w, "clock ", "a line of exactly 65536 bytes");
    edge[TARE_MAX_LINE - 1] = 'a';
    edge[TARE_MAX_LINE] = '\n';
    edge[TARE_MAX_LINE + 1] = 0;
    say(&w, edge);
    l = next(&w);
    CHECK(starts(l, "error ") && strstr(S(get(l, "message")), "longer than"), "65537 bytes: %s", S(l));

    say(&w, "exit\n");
    expect(&w, "bye", "exit");
    CHECK(next(&w) == NULL, "EOF after bye");
    CHECK(wait_exit(&w) == 0, "exit status 0 after bye");
    close(w.fd);

    /* EOF: tare went away */
    start(&w, exe, argv);
    while ((l = next(&w)) && !starts(l, "ready")) {
    }
    say(&w, "setup kernel=count\n");
    expect(&w, "ok", "setup before EOF");
    close(w.fd);
    CHECK(wait_exit(&w) == 0, "exit status 0 at EOF");

    /* a bad TARE_WORKER_FD is a one-line error */
    pid_t pid = fork();
    if (pid == 0) {
        setenv("TARE_WORKER_FD", "99", 1);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        execv(exe, argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1, "bad fd exits 1");
}

static void test_blur(const char *exe, const char *checksums) {
    worker w;
    char *argv[] = {(char *)exe, NULL};
    start(&w, exe, argv);
    const char *l;
    while ((l = next(&w)) && !starts(l, "ready")) {
    }
    say(&w, "setup kernel=blur p.size=64 p.radius=3\nrun loops=2 reps=2\n");
    expect(&w, "ok", "setup blur");
    double want = checksum_ref(checksums, 64, 3);
    CHECK(!isnan(want), "CHECKSUMS has size 64 radius 3");
    for (int r = 0; r < 2; r++) {
        l = next(&w);
        CHECK(starts(l, "sample loops=2 "), "blur sample: %s", S(l));
        const char *c = l ? get(l, "m.checksum") : NULL;
        double got = c ? atof(c) : NAN;
        CHECK(fabs(got - want) <= 1e-9 * fabs(want), "blur checksum %.17g vs CHECKSUMS %.17g", got, want);
        CHECK(l && get(l, "bytes") && strcmp(get(l, "bytes"), "65536") == 0, "blur bytes: %s", S(l));
    }
    expect(&w, "done", "blur run");
    say(&w, "teardown\nsetup kernel=blur p.size=0\nsetup kernel=empty\nrun loops=1000 reps=1\nexit\n");
    expect(&w, "ok", "blur teardown");
    l = next(&w);
    CHECK(starts(l, "error ") && strstr(S(get(l, "message")), "size=0"), "blur size=0: %s", S(l));
    expect(&w, "ok", "setup empty");
    expect(&w, "sample loops=1000 ", "empty sample");
    expect(&w, "done", "empty run");
    expect(&w, "bye", "exit");
    CHECK(wait_exit(&w) == 0, "blur exit status");
    close(w.fd);
}

/* Runs exe in standalone mode; returns its exit status and stdout in out. */
static int run_standalone(char *const argv[], char *out, size_t cap) {
    int p[2];
    if (pipe(p) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        unsetenv("TARE_WORKER_FD");
        dup2(p[1], 1);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < cap && (r = read(p[0], out + len, cap - len - 1)) > 0) len += (size_t)r;
    out[len] = 0;
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_standalone(const char *exe) {
    char out[8192];
    char *list[] = {(char *)exe, "--list", NULL};
    CHECK(run_standalone(list, out, sizeof out) == 0, "--list exits 0");
    CHECK(strstr(out, "count  # counts loops") && strstr(out, "  -p bytes=16  # bytes per loop") && strstr(out, "fail_teardown"),
          "--list output: %s", out);
    char *one[] = {(char *)exe, "--filter", "^cou", "-p", "bytes=1000", NULL};
    CHECK(run_standalone(one, out, sizeof out) == 0, "--filter exits 0");
    CHECK(strncmp(out, "count bytes=1000 ", 17) == 0 && strstr(out, " ns/loop  ") && strstr(out, "B/s  (N=") &&
              strstr(out, ", 10 samples)\n") && !strstr(out, "body"),
          "standalone line: %s", out);
    char *bad[] = {(char *)exe, "--frob", NULL};
    CHECK(run_standalone(bad, out, sizeof out) == 1, "unknown argument exits 1");
    char *badp[] = {(char *)exe, "-p", "nope=1", NULL};
    CHECK(run_standalone(badp, out, sizeof out) == 1, "unknown parameter exits 1");
    char *badre[] = {(char *)exe, "--filter", "(", NULL};
    CHECK(run_standalone(badre, out, sizeof out) == 1, "bad regex exits 1");
    char *failing[] = {(char *)exe, "--filter", "^fail_setup$", NULL};
    CHECK(run_standalone(failing, out, sizeof out) == 1, "failing setup exits 1");
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: test_master TEST_WORKER BLUR_WORKER CHECKSUMS\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    test_codec();
    test_protocol(argv[1]);
    test_blur(argv[2], argv[3]);
    test_standalone(argv[1]);
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
