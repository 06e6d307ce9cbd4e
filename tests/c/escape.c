/* Escape attempts from inside an isolated run (tests/isolate_escape.rs). Each attempt prints
 * one line "NAME ok" (the attempt worked: isolation did not hold) or "NAME refused: why" to
 * the report file given first. Nothing here harms the host when an attempt works: sysctl and
 * sysfs values are written back unchanged, the block device is opened but never written, a
 * file written on the host is one the test removes.
 *
 *   escape REPORT HOSTDIR BLOCKDEV HOSTPID SOCKET... + ABSTRACT SETUID_COPY
 *   escape caps            (prints its own CapEff: used through the set-user-ID copy)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static FILE *out;

static void report(const char *name, int ok, int err) {
    if (ok)
        fprintf(out, "%s ok\n", name);
    else
        fprintf(out, "%s refused: %s\n", name, strerror(err));
    fflush(out);
}

static int write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return n < 0 ? -1 : 0;
}

/* Reads a small value and writes it back unchanged. */
static void rewrite(const char *name, const char *path) {
    char buf[256];
    int fd = open(path, O_RDONLY);
    if (fd < 0) { report(name, 0, errno); return; }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) { report(name, 0, errno); return; }
    buf[n] = 0;
    fd = open(path, O_WRONLY);
    if (fd < 0) { report(name, 0, errno); return; }
    ssize_t w = write(fd, buf, (size_t)n);
    int e = errno;
    close(fd);
    report(name, w >= 0, e);
}

static void connect_to(const char *name, const char *path, int abstract) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0) { report(name, 0, errno); return; }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    socklen_t alen;
    if (abstract) {
        memcpy(a.sun_path + 1, path, len);
        alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
    } else {
        memcpy(a.sun_path, path, len);
        alen = sizeof a;
    }
    int r = connect(s, (struct sockaddr *)&a, alen);
    int e = errno;
    close(s);
    report(name, r == 0, e);
}

static void remount_and_write(const char *prefix, const char *hostdir) {
    char name[64], path[512];
    snprintf(name, sizeof name, "%sREMOUNT_ROOT_RW", prefix);
    int r = mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL);
    if (r != 0) r = mount(NULL, "/", NULL, MS_REMOUNT, NULL);
    report(name, r == 0, errno);
    snprintf(name, sizeof name, "%sWRITE_HOST_FILE", prefix);
    snprintf(path, sizeof path, "%s/%swritten", hostdir, prefix);
    r = write_file(path, "escaped\n");
    report(name, r == 0, errno);
}

static void caps(void) {
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "CapEff:", 7)) fputs(line, stdout);
    printf("EUID: %d\n", (int)geteuid());
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "caps")) { caps(); return 0; }
    if (argc < 8) { fprintf(stderr, "usage: see escape.c\n"); return 2; }
    out = fopen(argv[1], "w");
    if (!out) { perror(argv[1]); return 2; }
    const char *hostdir = argv[2], *dev = argv[3];
    pid_t hostpid = (pid_t)atoi(argv[4]);
    int i = 5;
    int n_sock = 0;
    for (; i < argc && strcmp(argv[i], "+"); i++) {
        char name[32];
        snprintf(name, sizeof name, "UNIX_SOCKET_%d", ++n_sock);
        connect_to(name, argv[i], 0);
    }
    const char *abstract = argv[i + 1], *setuid_copy = argv[i + 2];

    /* The tool's own privileges: any capability, no_new_privs off, or host uid 0. */
    {
        char line[256];
        int caps = 0, nnp = 0;
        FILE *f = fopen("/proc/self/status", "r");
        while (f && fgets(line, sizeof line, f)) {
            if (!strncmp(line, "Cap", 3) && strtoull(strchr(line, ':') + 1, NULL, 16) != 0)
                caps = 1;
            if (!strncmp(line, "NoNewPrivs:", 11)) nnp = atoi(line + 11);
        }
        if (f) fclose(f);
        report("TOOL_HAS_CAPABILITIES", caps, EPERM);
        report("TOOL_CAN_GAIN_PRIVILEGES", !nnp, EPERM);
        unsigned inside = 1, outside = 1;
        f = fopen("/proc/self/uid_map", "r");
        if (f && fscanf(f, "%u %u", &inside, &outside) == 2 && outside == 0)
            report("TOOL_IS_HOST_ROOT", 1, 0);
        else
            report("TOOL_IS_HOST_ROOT", 0, EPERM);
        if (f) fclose(f);
    }
    connect_to("ABSTRACT_SOCKET", abstract, 1);

    remount_and_write("", hostdir);
    {
        char path[512];
        snprintf(path, sizeof path, "/root/tare-escape-%d", (int)hostpid);
        int r = write_file(path, "escaped\n");
        report("WRITE_ROOT_HOME", r == 0, errno);
    }

    /* Mount the host's block device and write to it. */
    mkdir("/tmp/escape-mnt", 0755);
    if (mount(dev, "/tmp/escape-mnt", "ext4", 0, NULL) == 0) {
        report("MOUNT_BLOCK_DEVICE", 1, 0);
        char path[512];
        snprintf(path, sizeof path, "/tmp/escape-mnt/tare-escape-%d", (int)hostpid);
        int r = write_file(path, "escaped\n");
        report("WRITE_VIA_MOUNT", r == 0, errno);
        umount("/tmp/escape-mnt");
    } else {
        report("MOUNT_BLOCK_DEVICE", 0, errno);
    }
    {
        int fd = open(dev, O_RDWR);
        report("OPEN_BLOCK_DEVICE_RW", fd >= 0, errno);
        if (fd >= 0) close(fd);
    }
    {
        int fd = open("/dev/mem", O_RDONLY);
        report("OPEN_DEV_MEM", fd >= 0, errno);
        if (fd >= 0) close(fd);
    }
    rewrite("WRITE_SYSCTL", "/proc/sys/vm/swappiness");
    {
        const char *base = strrchr(dev, '/');
        char path[256];
        snprintf(path, sizeof path, "/sys/block/%s/queue/read_ahead_kb", base ? base + 1 : dev);
        rewrite("WRITE_SYSFS", path);
    }
    {
        long r = syscall(SYS_finit_module, -1, "", 0);
        /* EPERM: no CAP_SYS_MODULE; ENOSYS: a kernel without modules. EBADF: permitted, and
         * only the fd was bad. */
        report("LOAD_MODULE", r == 0 || errno == EBADF, errno);
    }
    {
        int r = kill(hostpid, SIGTERM);
        report("KILL_HOST_PROCESS", r == 0, errno);
    }
    {
        long r = ptrace(PTRACE_ATTACH, hostpid, 0, 0);
        report("PTRACE_HOST_PROCESS", r == 0, errno);
        if (r == 0) ptrace(PTRACE_DETACH, hostpid, 0, 0);
        r = ptrace(PTRACE_ATTACH, 1, 0, 0);
        report("PTRACE_INIT", r == 0, errno);
        if (r == 0) { waitpid(1, NULL, __WALL); ptrace(PTRACE_DETACH, 1, 0, 0); }
    }

    /* A set-user-ID root program keeps no privilege. */
    {
        int p[2];
        if (pipe(p) == 0) {
            pid_t c = fork();
            if (c == 0) {
                dup2(p[1], 1);
                execl(setuid_copy, setuid_copy, "caps", (char *)NULL);
                _exit(127);
            }
            close(p[1]);
            char buf[512] = {0};
            ssize_t n = read(p[0], buf, sizeof buf - 1);
            waitpid(c, NULL, 0);
            unsigned long long cap = 0;
            char *at = n > 0 ? strstr(buf, "CapEff:") : NULL;
            if (at) cap = strtoull(at + 7, NULL, 16);
            if (!at) report("SETUID_GAINS_PRIVILEGE", 0, ENOEXEC);
            else report("SETUID_GAINS_PRIVILEGE", cap != 0, EPERM);
        }
    }

    /* A fresh user namespace gives capabilities again, over copies of the mounts whose
     * read-only flag is then locked. */
    {
        uid_t uid = getuid();
        gid_t gid = getgid();
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0) {
            char map[64];
            int fd = open("/proc/self/setgroups", O_WRONLY);
            if (fd >= 0) { (void)!write(fd, "deny", 4); close(fd); }
            snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
            fd = open("/proc/self/uid_map", O_WRONLY);
            if (fd >= 0) { (void)!write(fd, map, strlen(map)); close(fd); }
            snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
            fd = open("/proc/self/gid_map", O_WRONLY);
            if (fd >= 0) { (void)!write(fd, map, strlen(map)); close(fd); }
            remount_and_write("NESTED_USERNS_", hostdir);
        } else {
            report("NESTED_USERNS_REMOUNT_ROOT_RW", 0, errno);
            report("NESTED_USERNS_WRITE_HOST_FILE", 0, errno);
        }
    }
    fclose(out);
    return 0;
}
