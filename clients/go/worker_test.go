package worker

// Tests with a fake master: the test binary re-executes itself as a worker (TARE_GO_TEST_WORKER
// set) on one end of a real Unix socketpair and the test drives the protocol on the other end,
// as tare does. The blur example is built with `go build` and driven the same way.

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var bodyCalls, initCalls int

func registerTestKernels() {
	Register(Kernel{
		Name:   "count",
		Doc:    "counts its loops",
		Params: []Param{{Name: "per", Default: "3", Doc: "bytes per loop"}, {Name: "label", Default: "a b%c"}},
		Setup: func(b *B) error {
			b.SetBytes(int64(b.Int("per")))
			b.SetItems(2)
			return nil
		},
		Init: func(b *B) error { initCalls++; bodyCalls = 0; return nil },
		Run: func(b *B) {
			for i := 0; i < b.N; i++ {
				bodyCalls++
			}
		},
		After: func(b *B) error {
			b.ReportMetric("calls", float64(bodyCalls))
			b.ReportMetric("inits", float64(initCalls))
			b.ReportMetric("label_len", float64(len(b.Param("label"))))
			return nil
		},
	})
	Register(Kernel{
		Name: "boom",
		Run:  func(b *B) { panic("kaboom\nsecond line") },
	})
	Register(Kernel{
		Name:  "failsetup",
		Setup: func(b *B) error { return errors.New("no GPU here") },
		Run:   func(b *B) {},
	})
	Register(Kernel{
		Name: "probe",
		Run:  func(b *B) {},
		After: func(b *B) error {
			_, set := os.LookupEnv("TARE_WORKER_FD")
			b.ReportMetric("env_set", boolf(set))
			flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, 3, syscall.F_GETFD, 0)
			b.ReportMetric("cloexec", boolf(errno == 0 && flags&syscall.FD_CLOEXEC != 0))
			return nil
		},
	})
	// Per-loop input: every loop must get a fresh input of its own.
	var each [3][2]int
	var eachInits, eachLoops, eachStale int
	Register(Kernel{
		Name:  "each",
		Batch: 3,
		Init:  func(b *B) error { eachInits, eachLoops, eachStale = 0, 0, 0; return nil },
		InitEach: func(b *B, i int) error {
			eachInits++
			each[i] = [2]int{eachInits, 0}
			return nil
		},
		RunEach: func(b *B, i int) {
			eachLoops++
			if each[i][1] != 0 {
				eachStale++
			}
			each[i][1] = 1
		},
		After: func(b *B) error {
			b.ReportMetric("inits", float64(eachInits))
			b.ReportMetric("loops", float64(eachLoops))
			b.ReportMetric("stale", float64(eachStale))
			return nil
		},
	})
	// Threaded: 4 goroutines, each loop sleeps 4 ms and counts in its goroutine's slot.
	var threadLoops [4]atomic.Int64
	Register(Kernel{
		Name:    "threads",
		Threads: 4,
		Init: func(b *B) error {
			for i := range threadLoops {
				threadLoops[i].Store(0)
			}
			return nil
		},
		Run: func(b *B) {
			for i := 0; i < b.N; i++ {
				threadLoops[b.Thread()].Add(1)
				time.Sleep(4 * time.Millisecond)
			}
		},
		After: func(b *B) error {
			for i := range threadLoops {
				b.ReportMetric(fmt.Sprintf("t%d", i), float64(threadLoops[i].Load()))
			}
			return nil
		},
	})
	Register(Kernel{Name: "sleepy", Run: func(b *B) {
		for i := 0; i < b.N; i++ {
			time.Sleep(time.Millisecond)
		}
	}})
}

func boolf(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

func TestMain(m *testing.M) {
	if os.Getenv("TARE_GO_TEST_WORKER") == "1" {
		registerTestKernels()
		os.Args = append([]string{os.Args[0]}, strings.Fields(os.Getenv("TARE_GO_TEST_ARGS"))...)
		Main()
	}
	os.Exit(m.Run())
}

// master is the fake tare: one end of the socketpair and the worker process.
type master struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	cmd  *exec.Cmd
}

func startWorker(t *testing.T, cmd *exec.Cmd) *master {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine := os.NewFile(uintptr(fds[0]), "master")
	theirs := os.NewFile(uintptr(fds[1]), "worker")
	conn, err := net.FileConn(mine)
	if err != nil {
		t.Fatal(err)
	}
	mine.Close()
	cmd.ExtraFiles = []*os.File{theirs} // fd 3 in the child
	cmd.Env = append(cmd.Env, "TARE_WORKER_FD=3")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	m := &master{t: t, conn: conn, r: bufio.NewReader(conn), cmd: cmd}
	t.Cleanup(func() { conn.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return m
}

func startSelf(t *testing.T) *master {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TARE_GO_TEST_WORKER=1")
	return startWorker(t, cmd)
}

func (m *master) send(line string) {
	m.t.Helper()
	if _, err := m.conn.Write([]byte(line + "\n")); err != nil {
		m.t.Fatal(err)
	}
}

func (m *master) recv() *message {
	m.t.Helper()
	m.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, err := readLine(m.r)
	if err != nil {
		m.t.Fatalf("reading from worker: %v", err)
	}
	if strings.Contains(line, "\r") {
		m.t.Fatalf("line has a carriage return: %q", line)
	}
	msg, err := decodeLine(line)
	if err != nil {
		m.t.Fatalf("worker sent %q: %v", line, err)
	}
	return msg
}

func (m *master) expect(verb string) *message {
	m.t.Helper()
	msg := m.recv()
	if msg.verb != verb {
		m.t.Fatalf("expected %s, got %s %v", verb, msg.verb, msg.fields)
	}
	return msg
}

// handshake reads the announcement and returns kernels → their params' defaults.
func (m *master) handshake() map[string]map[string]string {
	m.t.Helper()
	hello := m.expect("hello")
	if hello.fields["protocol"] != "1" || hello.fields["lang"] != "go" || hello.fields["client"] == "" || hello.fields["version"] != Version {
		m.t.Fatalf("bad hello %v", hello.fields)
	}
	kernels := map[string]map[string]string{}
	for {
		msg := m.recv()
		switch msg.verb {
		case "kernel":
			kernels[msg.fields["name"]] = map[string]string{}
			if th, ok := msg.fields["threads"]; ok {
				kernels[msg.fields["name"]]["(threads)"] = th
			}
		case "param":
			kernels[msg.fields["kernel"]][msg.fields["name"]] = msg.fields["default"]
		case "ready":
			return kernels
		default:
			m.t.Fatalf("unexpected %s in the announcement", msg.verb)
		}
	}
}

func num(t *testing.T, msg *message, key string) float64 {
	t.Helper()
	v, ok := msg.fields[key]
	if !ok {
		t.Fatalf("%s has no %s: %v", msg.verb, key, msg.fields)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s=%q is not a number", key, v)
	}
	return f
}

func (m *master) exit() {
	m.t.Helper()
	m.send("exit")
	m.expect("bye")
	if err := m.cmd.Wait(); err != nil {
		m.t.Fatalf("worker exit: %v", err)
	}
}

func TestConversation(t *testing.T) {
	m := startSelf(t)
	kernels := m.handshake()
	if kernels["count"]["per"] != "3" || kernels["count"]["label"] != "a b%c" || kernels["boom"] == nil {
		t.Fatalf("announcement: %v", kernels)
	}

	m.send("clock")
	c := m.expect("clock")
	if res, cost := num(t, c, "resolution_ns"), num(t, c, "cost_ns"); res <= 0 || cost <= 0 || res > 1e6 || cost > 1e5 {
		t.Fatalf("clock resolution %v cost %v", res, cost)
	}

	m.send("setup kernel=nosuch")
	if e := m.expect("error"); !strings.Contains(e.fields["message"], "nosuch") {
		t.Fatalf("message %q", e.fields["message"])
	}
	m.send("setup kernel=count p.bogus=1")
	if e := m.expect("error"); !strings.Contains(e.fields["message"], "bogus") {
		t.Fatalf("message %q", e.fields["message"])
	}
	m.send("run loops=1 reps=1")
	m.expect("error")
	m.send("teardown")
	m.expect("error")

	m.send("setup kernel=count p.per=5 unknownfield=x")
	m.expect("ok")
	m.send("setup kernel=count")
	m.expect("error") // setup after setup
	m.send("run loops=7 reps=3")
	for i := 1; i <= 3; i++ {
		s := m.expect("sample")
		if num(t, s, "loops") != 7 || num(t, s, "m.calls") != 7 || num(t, s, "bytes") != 35 || num(t, s, "items") != 14 {
			t.Fatalf("sample %v", s.fields)
		}
		if num(t, s, "ns") <= 0 || num(t, s, "cpu_ns") < 0 || num(t, s, "m.inits") != float64(i) || num(t, s, "m.label_len") != 5 {
			t.Fatalf("sample %v", s.fields)
		}
	}
	m.expect("done")
	m.send("run loops=0 reps=1")
	m.expect("error")
	m.send("run loops=2")
	m.expect("error")
	m.send("frobnicate x=1")
	if e := m.expect("error"); !strings.Contains(e.fields["message"], "frobnicate") {
		t.Fatalf("message %q", e.fields["message"])
	}
	m.send("teardown")
	m.expect("ok")
	m.send("teardown")
	m.expect("error")

	// User failures become one-line errors and the worker stays usable.
	m.send("setup kernel=failsetup")
	if e := m.expect("error"); !strings.Contains(e.fields["message"], "no GPU here") {
		t.Fatalf("message %q", e.fields["message"])
	}
	m.send("setup kernel=boom")
	m.expect("ok")
	m.send("run loops=1 reps=2")
	e := m.expect("error")
	if !strings.Contains(e.fields["message"], "kaboom second line") {
		t.Fatalf("message %q", e.fields["message"])
	}
	m.send("teardown")
	m.expect("ok")
	m.send("setup kernel=count p.per=x")
	if e := m.expect("error"); !strings.Contains(e.fields["message"], "per") {
		t.Fatalf("message %q", e.fields["message"])
	}
	m.exit()
}

func TestSampleTimesTheLoop(t *testing.T) {
	m := startSelf(t)
	m.handshake()
	m.send("setup kernel=sleepy")
	m.expect("ok")
	m.send("run loops=20 reps=1")
	s := m.expect("sample")
	// 20 sleeps of 1 ms: at least 20 ms, and (wide margin for a loaded machine) under 5 s.
	if ns := num(t, s, "ns"); ns < 20e6 || ns > 5e9 {
		t.Fatalf("ns=%v for 20 x 1 ms", ns)
	}
	m.expect("done")
	m.exit()
}

func TestPerLoopInputIsFreshForEveryLoop(t *testing.T) {
	m := startSelf(t)
	m.handshake()
	m.send("setup kernel=each")
	m.expect("ok")
	for _, loops := range []int{5, 1, 7} { // batches of 3: 3+2, 1, 3+3+1
		m.send(fmt.Sprintf("run loops=%d reps=2", loops))
		for r := 0; r < 2; r++ {
			s := m.expect("sample")
			l := float64(loops)
			if num(t, s, "loops") != l || num(t, s, "m.inits") != l || num(t, s, "m.loops") != l || num(t, s, "m.stale") != 0 {
				t.Fatalf("loops=%d: sample %v", loops, s.fields)
			}
		}
		m.expect("done")
	}
	m.exit()
}

func TestThreadedKernel(t *testing.T) {
	m := startSelf(t)
	kernels := m.handshake()
	if kernels["threads"]["(threads)"] != "4" || kernels["count"]["(threads)"] != "" {
		t.Fatalf("announcement: %v", kernels)
	}
	m.send("setup kernel=threads")
	m.expect("ok")
	m.send("run loops=5 reps=2")
	for r := 0; r < 2; r++ {
		s := m.expect("sample")
		for i := 0; i < 4; i++ {
			if num(t, s, fmt.Sprintf("m.t%d", i)) != 5 {
				t.Fatalf("goroutine %d: %v", i, s.fields)
			}
		}
		// 4 goroutines x 5 loops of 4 ms released together: about 20 ms, not 80 ms.
		if ns := num(t, s, "ns"); ns < 20e6 || ns >= 70e6 {
			t.Fatalf("ns=%v", ns)
		}
	}
	m.expect("done")
	m.exit()
}

func TestSocketHiddenFromChildren(t *testing.T) {
	m := startSelf(t)
	m.handshake()
	m.send("setup kernel=probe")
	m.expect("ok")
	m.send("run loops=1 reps=1")
	s := m.expect("sample")
	if num(t, s, "m.env_set") != 0 || num(t, s, "m.cloexec") != 1 {
		t.Fatalf("TARE_WORKER_FD still set or fd 3 not close-on-exec: %v", s.fields)
	}
	m.expect("done")
	m.exit()
}

func TestEOFExitsZero(t *testing.T) {
	m := startSelf(t)
	m.handshake()
	m.conn.Close()
	done := make(chan error, 1)
	go func() { done <- m.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("worker after EOF: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not exit after EOF")
	}
}

func TestBadLineIsAnError(t *testing.T) {
	m := startSelf(t)
	m.handshake()
	m.send("setup kernel=count p.x=%zz")
	m.expect("error")
	m.send("setup kernel=count kernel=count")
	m.expect("error")
	m.exit()
}

func TestCodec(t *testing.T) {
	in := "a b%c\n=é~:/,+-._"
	enc := encodeValue(in)
	if enc != "a%20b%25c%0A%3D%C3%A9~:/,+-._" {
		t.Fatalf("encode: %q", enc)
	}
	back, err := decodeValue(strings.ToLower(enc[:4]) + enc[4:])
	if err != nil || back != in {
		t.Fatalf("decode: %q %v", back, err)
	}
	for _, bad := range []string{"%", "%4", "%G0"} {
		if _, err := decodeValue(bad); err == nil {
			t.Fatalf("decoded %q", bad)
		}
	}
	line := encodeLine("sample", "loops", "3", "m.x", "1.5e-3")
	if line != "sample loops=3 m.x=1.5e-3\n" {
		t.Fatalf("line %q", line)
	}
	for _, bad := range []string{"", "verb  x=1", "verb x", "Verb x=1", "v X=1"} {
		if _, err := decodeLine(bad); err == nil {
			t.Fatalf("decoded %q", bad)
		}
	}
	r := bufio.NewReader(strings.NewReader(strings.Repeat("x", maxLine+10) + "\n"))
	if _, err := readLine(r); err != errLineTooLong {
		t.Fatalf("long line: %v", err)
	}
	// The edge: 65536 bytes with the newline are accepted, 65537 refused.
	r = bufio.NewReader(strings.NewReader(strings.Repeat("x", maxLine-1) + "\n"))
	if l, err := readLine(r); err != nil || len(l) != maxLine-1 {
		t.Fatalf("line at the limit: %d %v", len(l), err)
	}
	r = bufio.NewReader(strings.NewReader(strings.Repeat("x", maxLine) + "\n"))
	if _, err := readLine(r); err != errLineTooLong {
		t.Fatalf("line one over the limit: %v", err)
	}
}

func runStandalone(t *testing.T, args string) (string, string, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TARE_GO_TEST_WORKER=1", "TARE_GO_TEST_ARGS="+args)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

func TestStandalone(t *testing.T) {
	out, _, err := runStandalone(t, "--list")
	if err != nil || !strings.Contains(out, "count  # counts its loops\n  per=3  # bytes per loop\n") {
		t.Fatalf("--list: %v %q", err, out)
	}
	out, _, err = runStandalone(t, "--filter ^count$ -p per=8")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(out)
	// count per=8 label=a b%c <ns> ns/loop <x> <unit>B/s <y> <unit>items/s (N=<n>, 10 samples)
	if len(fields) < 8 || fields[0] != "count" || fields[1] != "per=8" || !strings.Contains(out, " ns/loop  ") ||
		!strings.Contains(out, "B/s") || !strings.Contains(out, "items/s") || !strings.HasSuffix(out, ", 10 samples)\n") {
		t.Fatalf("standalone line %q", out)
	}
	i := strings.Index(out, "(N=")
	n, err := strconv.Atoi(out[i+3 : strings.Index(out[i:], ",")+i])
	if err != nil || n < 1024 {
		t.Fatalf("calibrated N in %q (a 10 ms sample of an increment needs many loops)", out)
	}
	_, errOut, err := runStandalone(t, "--filter ^boom$")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "kaboom") {
		t.Fatalf("failing kernel: %v %q", err, errOut)
	}
	_, errOut, err = runStandalone(t, "--bogus")
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.HasPrefix(errOut, "tare-worker: error: unknown argument") {
		t.Fatalf("bad argument: %v %q", err, errOut)
	}
}

func TestDescriptorThatIsNoSocket(t *testing.T) {
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	// fd 3 a regular file, a number nothing holds, and no number at all.
	for _, fd := range []string{"3", "99", "x"} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "TARE_GO_TEST_WORKER=1", "TARE_WORKER_FD="+fd)
		cmd.ExtraFiles = []*os.File{devNull}
		var errOut strings.Builder
		cmd.Stderr = &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Count(errOut.String(), "\n") != 1 ||
			!strings.HasPrefix(errOut.String(), "tare-worker: error: TARE_WORKER_FD=") {
			t.Fatalf("TARE_WORKER_FD=%s: %v %q", fd, err, errOut.String())
		}
	}
}

// repoRoot is the repository holding this module (clients/go).
func repoRoot(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}

// referenceChecksum reads examples/kernels/blur/CHECKSUMS (or $TARE_BLUR_CHECKSUMS).
func referenceChecksum(t *testing.T, size, radius int) float64 {
	path := os.Getenv("TARE_BLUR_CHECKSUMS")
	if path == "" {
		path = filepath.Join(repoRoot(t), "examples", "kernels", "blur", "CHECKSUMS")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no reference checksums (%v): they come with examples/kernels/blur/reference.py", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == strconv.Itoa(size) && f[1] == strconv.Itoa(radius) {
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				t.Fatalf("%s: %q", path, line)
			}
			return v
		}
	}
	t.Fatalf("%s has no line for size %d radius %d", path, size, radius)
	return 0
}

func TestBlurExample(t *testing.T) {
	want := referenceChecksum(t, 64, 3)
	dir := filepath.Join(repoRoot(t), "examples", "kernels", "blur", "go")
	bin := filepath.Join(t.TempDir(), "blur")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", dir, err, out)
	}
	m := startWorker(t, exec.Command(bin))
	kernels := m.handshake()
	if kernels["blur"]["size"] != "256" || kernels["blur"]["radius"] != "3" || kernels["empty"] == nil {
		t.Fatalf("blur announcement: %v", kernels)
	}
	m.send("setup kernel=blur p.size=64 p.radius=3")
	m.expect("ok")
	m.send("run loops=2 reps=2")
	for i := 0; i < 2; i++ {
		s := m.expect("sample")
		got := num(t, s, "m.checksum")
		if math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Fatalf("checksum %.17g, reference %.17g", got, want)
		}
		if num(t, s, "bytes") != 2*64*64*8 {
			t.Fatalf("bytes %v", s.fields)
		}
	}
	m.expect("done")
	m.send("teardown")
	m.expect("ok")
	m.send("setup kernel=blur p.size=0")
	m.expect("error")
	m.send("setup kernel=empty")
	m.expect("ok")
	m.send("run loops=1000 reps=1")
	m.expect("sample")
	m.expect("done")
	m.send("teardown")
	m.expect("ok")
	m.exit()
	fmt.Fprintf(os.Stderr, "blur size=64 radius=3 checksum matches the reference %.17g\n", want)
}

// KeepAlive's documentation promises it never allocates, whatever the value's type.
func TestKeepAliveDoesNotAllocate(t *testing.T) {
	type wide struct{ a, b, c, d float64 }
	allocs := testing.AllocsPerRun(100, func() {
		for i := 0; i < 100; i++ {
			KeepAlive(i + 1000)
			KeepAlive(float64(i) * 1.5)
			KeepAlive(wide{float64(i), 1, 2, 3})
			KeepAlive("s")
		}
	})
	if allocs != 0 {
		t.Fatalf("KeepAlive allocated %v times per 400 calls", allocs)
	}
}
