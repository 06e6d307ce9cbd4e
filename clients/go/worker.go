// Package worker lets a Go program hold kernels that tare measures (`tare kernels`), speaking
// tare's worker protocol version 1 (docs/protocol.md) over the socket tare passes in
// TARE_WORKER_FD; started without it, the program measures its kernels itself (standalone mode).
//
// A kernel is written like a testing.B benchmark: its Run stage receives a *B and loops b.N
// times. tare holds all policy (how many loops, samples, warm-up, processes); this package only
// obeys, times the loop with the monotonic clock and reports raw samples.
//
//	func main() {
//		worker.Register(worker.Kernel{
//			Name:   "sum",
//			Params: []worker.Param{{Name: "n", Default: "1000"}},
//			Setup:  func(b *worker.B) error { data = make([]int, b.Int("n")); return nil },
//			Run: func(b *worker.B) {
//				for i := 0; i < b.N; i++ {
//					worker.KeepAlive(sum(data))
//				}
//			},
//		})
//		worker.Main()
//	}
//
// What it is not: a statistics package or a runner with policies of its own; standalone mode
// is a quick look, tare is the measurement.
package worker

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// Version is this library's version, sent in the hello line.
const Version = "0.1.0"

// Param declares one kernel parameter. Values are strings on the wire; B.Int, B.Float and
// B.Param convert them for the kernel's code.
type Param struct {
	Name    string
	Default string
	Doc     string
}

// Kernel is one measurable piece of code and its stages. Only Name and Run are required.
type Kernel struct {
	Name   string
	Doc    string
	Params []Param
	// Setup runs once after tare chose the parameters (untimed).
	Setup func(b *B) error
	// Init runs before each repetition (sample), untimed.
	Init func(b *B) error
	// Run is the timed body: it must do the kernel's work exactly b.N times and nothing else.
	Run func(b *B)
	// InitEach and RunEach, instead of Run, give every loop an input of its own (a body that
	// sorts in place; Init runs once per sample, so loops 2..N would see what loop 1 left):
	// InitEach(b, i) prepares slot i (0..Batch-1) untimed, RunEach(b, i) is one loop on it,
	// timed. The client calls InitEach for a batch of slots, reads the clock, calls RunEach on
	// them, reads the clock (Criterion's iter_batched: the clock's cost once a batch, not once
	// a loop); a sample's time is the sum of its batches'. Batch 0 means 1.
	InitEach func(b *B, i int) error
	RunEach  func(b *B, i int)
	Batch    int
	// Threads > 1 runs Run on that many goroutines at once (Google Benchmark's ->Threads,
	// JMH's @Threads), each doing b.N loops: started before the clock, released together; the
	// sample's time is from the release to the last one's end (so the time per loop is per
	// goroutine and tare reports the total throughput). Each gets its own *B (b.Thread() is
	// 0..Threads-1) over state shared by all: report metrics from After. Not with RunEach.
	Threads int
	// After runs after each repetition's timed loop, untimed: report per-sample metrics here
	// (b.ReportMetric), e.g. a checksum of the result.
	After func(b *B) error
	// Teardown runs once when tare is done with the kernel (the protocol's finalize stage).
	Teardown func(b *B) error
}

// B is the state a kernel's stages receive: the loop count, the parameters, and setters for
// the sample's metrics.
type B struct {
	// N is how many times Run must execute the kernel body in this repetition.
	N int

	kernel   *Kernel
	params   map[string]string
	bytes    int64
	items    int64
	metrics  map[string]float64
	mkeys    []string
	failures []string
	thread   int
}

// Thread is which of a threaded kernel's goroutines runs this Run (0..Threads-1; 0 otherwise).
func (b *B) Thread() int { return b.thread }

// Param returns the string value of parameter name (its default unless tare sent another).
// An undeclared name stops the stage with an error.
func (b *B) Param(name string) string {
	v, ok := b.params[name]
	if !ok {
		panic(stageError(fmt.Sprintf("kernel %s has no parameter %q", b.kernel.Name, name)))
	}
	return v
}

// Int returns parameter name as an int; a value that is not an integer stops the stage with
// an error naming the parameter.
func (b *B) Int(name string) int {
	v := b.Param(name)
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		panic(stageError(fmt.Sprintf("parameter %s=%q is not an integer", name, v)))
	}
	return n
}

// Float returns parameter name as a float64; a value that is not a number stops the stage.
func (b *B) Float(name string) float64 {
	v := b.Param(name)
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		panic(stageError(fmt.Sprintf("parameter %s=%q is not a number", name, v)))
	}
	return f
}

// Params returns a copy of all parameter values of the kernel set up.
func (b *B) Params() map[string]string {
	out := make(map[string]string, len(b.params))
	for k, v := range b.params {
		out[k] = v
	}
	return out
}

// SetBytes records how many bytes one loop processes; samples carry bytes = n × N, from
// which tare derives throughput (like testing.B.SetBytes).
func (b *B) SetBytes(n int64) { b.bytes = n }

// SetItems records how many items one loop processes; samples carry items = n × N.
func (b *B) SetItems(n int64) { b.items = n }

// ReportMetric attaches a user metric to the current sample (sent as m.<name>). Call it from
// After (untimed) or Run. The name must match [a-z0-9_.-]+ and the value be finite.
func (b *B) ReportMetric(name string, value float64) {
	if _, ok := b.metrics[name]; !ok {
		b.mkeys = append(b.mkeys, name)
	}
	b.metrics[name] = value
}

// Errorf makes the current stage fail with a one-line message once it returns.
func (b *B) Errorf(format string, args ...any) {
	b.failures = append(b.failures, fmt.Sprintf(format, args...))
}

// stageError is what the parameter accessors panic with; the stage runner turns it into an
// `error` reply.
type stageError string

// KeepAlive keeps v, and the computation that made it, from being optimized away: it is a
// call the compiler may not inline, so the argument must be computed, and runtime.KeepAlive
// marks it live. It costs one function call (about a nanosecond) and never allocates; use it on
// a kernel's result in each loop.
//
//go:noinline
func KeepAlive[T any](v T) { runtime.KeepAlive(v) }

var registry []*Kernel

// Register adds a kernel; call it before Main. A bad or duplicate name panics at start-up
// (a programming error, found before tare sees the program).
func Register(k Kernel) {
	if !validName(k.Name) {
		panic(fmt.Sprintf("tare worker: kernel name %q must match [A-Za-z0-9_./-]+", k.Name))
	}
	if k.Run == nil && k.RunEach == nil {
		panic(fmt.Sprintf("tare worker: kernel %s has no Run stage", k.Name))
	}
	if k.Threads < 0 || (k.Threads > 1 && k.RunEach != nil) {
		panic(fmt.Sprintf("tare worker: kernel %s: Threads must be >= 1 and goes with Run, not RunEach", k.Name))
	}
	if (k.RunEach == nil) != (k.InitEach == nil) || (k.Run != nil && k.RunEach != nil) {
		panic(fmt.Sprintf("tare worker: kernel %s: InitEach and RunEach go together, instead of Run", k.Name))
	}
	for _, o := range registry {
		if o.Name == k.Name {
			panic(fmt.Sprintf("tare worker: kernel %s registered twice", k.Name))
		}
	}
	seen := map[string]bool{}
	for _, p := range k.Params {
		if !validName(p.Name) || seen[p.Name] {
			panic(fmt.Sprintf("tare worker: kernel %s: parameter name %q is invalid or repeats", k.Name, p.Name))
		}
		seen[p.Name] = true
	}
	kk := k
	registry = append(registry, &kk)
}

func findKernel(name string) *Kernel {
	for _, k := range registry {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// newB makes the state for kernel k with parameters overrides on top of the defaults.
func newB(k *Kernel, overrides map[string]string) (*B, error) {
	params := map[string]string{}
	for _, p := range k.Params {
		params[p.Name] = p.Default
	}
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := params[n]; !ok {
			return nil, fmt.Errorf("kernel %s has no parameter %q", k.Name, n)
		}
		params[n] = overrides[n]
	}
	return &B{kernel: k, params: params, metrics: map[string]float64{}}, nil
}

// call runs one stage, turning a panic, a returned error or b.Errorf into one error line.
func call(b *B, stage string, f func() error) (err error) {
	b.failures = nil
	defer func() {
		if r := recover(); r != nil {
			if s, ok := r.(stageError); ok {
				err = fmt.Errorf("%s", string(s))
			} else {
				err = fmt.Errorf("%s of %s panicked: %v", stage, b.kernel.Name, r)
			}
		}
		if err == nil && len(b.failures) > 0 {
			err = fmt.Errorf("%s of %s failed: %s", stage, b.kernel.Name, strings.Join(b.failures, "; "))
		}
	}()
	if f == nil {
		return nil
	}
	if e := f(); e != nil {
		return fmt.Errorf("%s of %s failed: %v", stage, b.kernel.Name, e)
	}
	return nil
}

// oneLine flattens a message to one line for `error message=` and stderr.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\r", " ")
	return strings.ReplaceAll(s, "\n", " ")
}

// formatFloat writes f in the JSON number syntax the protocol asks for.
func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Main runs the program as a worker when tare started it (TARE_WORKER_FD set), otherwise in
// standalone mode with os.Args; it then exits the process.
func Main() {
	if fdText, ok := os.LookupEnv("TARE_WORKER_FD"); ok {
		os.Exit(serveFD(fdText))
	}
	os.Exit(standalone(os.Args[1:], os.Stdout, os.Stderr))
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
