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

// Sub-benchmarks (b.Run), as most real suites have: kernels "Sized/10" and "Sized/100" (one
// name a prefix of the other, so a pattern that is not anchored per level runs both).
func BenchmarkSized(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(itoa(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				sink += sum(n * 100)
			}
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
