// Benchmarks for tests/kernels_native.rs: tare drives them through `tare native-worker go`.
package gobench

import "testing"

var sink int

func sum(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i
	}
	return s
}

func BenchmarkSum(b *testing.B) {
	b.SetBytes(8 * 1000)
	for i := 0; i < b.N; i++ {
		sink += sum(1000)
	}
}

func BenchmarkSum2(b *testing.B) {
	for i := 0; i < b.N; i++ {
		sink += sum(2000)
	}
}
