// Benchmarks for tests/kernels_state.rs: a first loop dear in every fresh sample that is
// start-up, not state that carries over. tare drives them through `tare native-worker go`.
package gostartup

import "testing"

var sink int

func sum(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i ^ (s >> 3)
	}
	return s
}

// Setup timed once a sample (no b.ResetTimer): time(n) = a + b·n with a about 20 loops'
// worth; every loop does the same work on the same read-only input, so the time per loop at
// a large N is honest.
func BenchmarkStartup(b *testing.B) {
	sink += sum(20 * 20000)
	for i := 0; i < b.N; i++ {
		sink += sum(20000)
	}
}

// b.RunParallel over a read-only body (fastjson's shape): goroutines started every sample.
func BenchmarkParallel(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		s := 0
		for pb.Next() {
			s += sum(20000)
		}
		sink += s
	})
}
