package worker

// The worker side of the conversation with tare: announce kernels, then answer one request at
// a time (clock, setup, run, teardown, exit) on the inherited socket.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// serveFD adopts the inherited descriptor named by TARE_WORKER_FD and serves on it.
func serveFD(fdText string) int {
	fd, err := strconv.Atoi(strings.TrimSpace(fdText))
	if err != nil || fd < 0 {
		fmt.Fprintf(os.Stderr, "tare-worker: error: TARE_WORKER_FD=%q is not a file descriptor number; unset it to run standalone\n", fdText)
		return 1
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		fmt.Fprintf(os.Stderr, "tare-worker: error: TARE_WORKER_FD=%d is not an inherited socket; start the worker from tare, or unset TARE_WORKER_FD to run standalone\n", fd)
		return 1
	}
	// Children of the worker must not inherit the socket nor believe they are workers.
	syscall.CloseOnExec(fd)
	os.Unsetenv("TARE_WORKER_FD")
	f := os.NewFile(uintptr(fd), "tare-worker-socket")
	defer f.Close()
	return serve(f, f)
}

// conn is the worker's end of the conversation.
type conn struct {
	r *bufio.Reader
	w *bufio.Writer
}

func (c *conn) send(verb string, kv ...string) error {
	if _, err := c.w.WriteString(encodeLine(verb, kv...)); err != nil {
		return err
	}
	return c.w.Flush()
}

// sendQueued adds a line without flushing (announcement, batches of samples are flushed once).
func (c *conn) queue(verb string, kv ...string) error {
	_, err := c.w.WriteString(encodeLine(verb, kv...))
	return err
}

// serve speaks the protocol on r/w until exit or EOF. It returns the process exit status.
func serve(r io.Reader, w io.Writer) int {
	c := &conn{r: bufio.NewReaderSize(r, 4096), w: bufio.NewWriterSize(w, 4096)}
	if err := announce(c); err != nil {
		return fail("cannot write the hello: %v", err)
	}
	var cur *B // the kernel set up, if any
	for {
		line, err := readLine(c.r)
		if err == io.EOF {
			return 0 // tare went away
		}
		if err != nil {
			return fail("reading from tare: %v", err)
		}
		msg, err := decodeLine(line)
		if err != nil {
			if e := c.send("error", "message", "bad message: "+err.Error()); e != nil {
				return fail("writing to tare: %v", e)
			}
			continue
		}
		var werr error
		switch msg.verb {
		case "clock":
			res, cost := measureClock()
			werr = c.send("clock", "resolution_ns", formatFloat(res), "cost_ns", formatFloat(cost))
		case "setup":
			if cur != nil {
				werr = c.send("error", "message", fmt.Sprintf("kernel %s is set up already; send teardown first", cur.kernel.Name))
				break
			}
			b, e := setup(msg)
			if e != nil {
				werr = c.send("error", "message", oneLine(e.Error()))
				break
			}
			cur = b
			werr = c.send("ok")
		case "run":
			if cur == nil {
				werr = c.send("error", "message", "run before setup: no kernel is set up")
				break
			}
			werr = run(c, cur, msg)
		case "teardown":
			if cur == nil {
				werr = c.send("error", "message", "teardown with no kernel set up")
				break
			}
			b := cur
			cur = nil
			if e := call(b, "teardown", func() error { return callStage(b.kernel.Teardown, b) }); e != nil {
				werr = c.send("error", "message", oneLine(e.Error()))
			} else {
				werr = c.send("ok")
			}
		case "exit":
			if err := c.send("bye"); err != nil {
				return fail("writing to tare: %v", err)
			}
			return 0
		default:
			werr = c.send("error", "message", fmt.Sprintf("unknown verb %q", msg.verb))
		}
		if werr != nil {
			if errors.Is(werr, syscall.EPIPE) {
				return 0 // tare went away mid-reply
			}
			return fail("writing to tare: %v", werr)
		}
	}
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "tare-worker: error: "+format+"\n", args...)
	return 1
}

func callStage(f func(*B) error, b *B) error {
	if f == nil {
		return nil
	}
	return f(b)
}

func announce(c *conn) error {
	if err := c.queue("hello", "protocol", "1", "client", "tare-worker-go", "version", Version, "lang", "go"); err != nil {
		return err
	}
	for _, k := range registry {
		kv := []string{"name", k.Name}
		if k.Doc != "" {
			kv = append(kv, "doc", oneLine(k.Doc))
		}
		if k.Threads > 1 {
			kv = append(kv, "threads", strconv.Itoa(k.Threads))
		}
		if err := c.queue("kernel", kv...); err != nil {
			return err
		}
		for _, p := range k.Params {
			kv := []string{"kernel", k.Name, "name", p.Name, "default", p.Default}
			if p.Doc != "" {
				kv = append(kv, "doc", oneLine(p.Doc))
			}
			if err := c.queue("param", kv...); err != nil {
				return err
			}
		}
	}
	return c.send("ready")
}

func setup(msg *message) (*B, error) {
	name, ok := msg.get("kernel")
	if !ok {
		return nil, errors.New("setup without kernel=")
	}
	k := findKernel(name)
	if k == nil {
		return nil, fmt.Errorf("unknown kernel %q", name)
	}
	overrides := map[string]string{}
	for _, key := range msg.keys {
		if strings.HasPrefix(key, "p.") {
			overrides[key[2:]] = msg.fields[key]
		}
	}
	b, err := newB(k, overrides)
	if err != nil {
		return nil, err
	}
	if err := call(b, "setup", func() error { return callStage(k.Setup, b) }); err != nil {
		return nil, err
	}
	return b, nil
}

func positiveInt(msg *message, key string) (int, error) {
	v, ok := msg.get(key)
	if !ok {
		return 0, fmt.Errorf("run without %s=", key)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("run %s=%q is not an integer >= 1", key, v)
	}
	return n, nil
}

// sample is one repetition's raw measurement.
type sample struct {
	ns, cpuNs int64
	cpuOK     bool
}

// repetition runs init, the timed loop and after for one sample of b.N loops.
func repetition(b *B) (sample, error) {
	k := b.kernel
	b.metrics = map[string]float64{}
	b.mkeys = nil
	if err := call(b, "init", func() error { return callStage(k.Init, b) }); err != nil {
		return sample{}, err
	}
	var s sample
	if k.RunEach != nil {
		var err error
		s, err = repetitionEach(b)
		if err != nil {
			return sample{}, err
		}
		return afterRep(b, s)
	}
	if k.Threads > 1 {
		s, err := repetitionThreads(b)
		if err != nil {
			return sample{}, err
		}
		return afterRep(b, s)
	}
	err := call(b, "run", func() error {
		cpu0, ok0 := processCPU()
		start := time.Now()
		k.Run(b)
		s.ns = int64(time.Since(start))
		cpu1, ok1 := processCPU()
		s.cpuNs, s.cpuOK = cpu1-cpu0, ok0 && ok1
		return nil
	})
	if err != nil {
		return sample{}, err
	}
	return afterRep(b, s)
}

// runBatch is one batch of a per-loop kernel, the part between the clock reads.
//
//go:noinline
func runBatch(b *B, run func(*B, int), n int) {
	for i := 0; i < n; i++ {
		run(b, i)
	}
}

// repetitionEach runs b.N loops of a per-loop kernel in batches: InitEach untimed, RunEach
// timed; the sample's times are the sums over its batches.
func repetitionEach(b *B) (sample, error) {
	k := b.kernel
	batch := k.Batch
	if batch < 1 {
		batch = 1
	}
	s := sample{cpuOK: true}
	for done := 0; done < b.N; {
		n := batch
		if b.N-done < n {
			n = b.N - done
		}
		err := call(b, "init_each", func() error {
			for i := 0; i < n; i++ {
				if e := k.InitEach(b, i); e != nil {
					return e
				}
			}
			return nil
		})
		if err != nil {
			return sample{}, err
		}
		err = call(b, "run", func() error {
			cpu0, ok0 := processCPU()
			start := time.Now()
			runBatch(b, k.RunEach, n)
			s.ns += int64(time.Since(start))
			cpu1, ok1 := processCPU()
			s.cpuNs += cpu1 - cpu0
			s.cpuOK = s.cpuOK && ok0 && ok1
			return nil
		})
		if err != nil {
			return sample{}, err
		}
		done += n
	}
	return s, nil
}

// repetitionThreads runs Run on k.Threads goroutines, each b.N loops with a *B of its own: all
// started before the clock and released together by closing a channel; the last to finish
// reads the clock. A panic in one fails the sample.
func repetitionThreads(b *B) (sample, error) {
	k := b.kernel
	n := k.Threads
	release := make(chan struct{})
	var wg sync.WaitGroup
	var finished atomic.Int32
	var end time.Time
	errs := make([]error, n)
	ready := make(chan struct{}, n)
	for t := 0; t < n; t++ {
		bt := *b
		bt.thread = t
		wg.Add(1)
		go func(t int, bt *B) {
			defer wg.Done()
			ready <- struct{}{}
			<-release
			errs[t] = call(bt, "run", func() error { k.Run(bt); return nil })
			if finished.Add(1) == int32(n) {
				end = time.Now()
			}
		}(t, &bt)
	}
	for t := 0; t < n; t++ {
		<-ready
	}
	cpu0, ok0 := processCPU()
	start := time.Now()
	close(release)
	wg.Wait()
	cpu1, ok1 := processCPU()
	for _, e := range errs {
		if e != nil {
			return sample{}, e
		}
	}
	return sample{ns: int64(end.Sub(start)), cpuNs: cpu1 - cpu0, cpuOK: ok0 && ok1}, nil
}

// afterRep runs the After stage and checks the sample's metrics.
func afterRep(b *B, s sample) (sample, error) {
	k := b.kernel
	if err := call(b, "after", func() error { return callStage(k.After, b) }); err != nil {
		return sample{}, err
	}
	for _, name := range b.mkeys {
		if !validKey(name) {
			return sample{}, fmt.Errorf("metric name %q of %s must match [a-z0-9_.-]+", name, k.Name)
		}
		if !finite(b.metrics[name]) {
			return sample{}, fmt.Errorf("metric %s of %s is not a finite number", name, k.Name)
		}
	}
	return s, nil
}

func run(c *conn, b *B, msg *message) error {
	loops, err := positiveInt(msg, "loops")
	if err == nil {
		var reps int
		reps, err = positiveInt(msg, "reps")
		if err == nil {
			return runReps(c, b, loops, reps)
		}
	}
	return c.send("error", "message", err.Error())
}

func runReps(c *conn, b *B, loops, reps int) error {
	b.N = loops
	for i := 0; i < reps; i++ {
		s, err := repetition(b)
		if err != nil {
			return c.send("error", "message", oneLine(err.Error()))
		}
		kv := []string{"loops", strconv.Itoa(loops), "ns", strconv.FormatInt(s.ns, 10)}
		if s.cpuOK {
			kv = append(kv, "cpu_ns", strconv.FormatInt(s.cpuNs, 10))
		}
		if b.bytes > 0 {
			kv = append(kv, "bytes", strconv.FormatInt(b.bytes*int64(loops), 10))
		}
		if b.items > 0 {
			kv = append(kv, "items", strconv.FormatInt(b.items*int64(loops), 10))
		}
		for _, name := range b.mkeys {
			kv = append(kv, "m."+name, formatFloat(b.metrics[name]))
		}
		// Sent at once: tare may enforce a time limit per sample.
		if err := c.send("sample", kv...); err != nil {
			return err
		}
	}
	return c.send("done")
}
