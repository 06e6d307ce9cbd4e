// A worker on the Go client (clients/go) for tare's test of per-loop state: an in-place
// insertion sort of n pseudo-random ints in three shapes, as tests/kernels/sort.c: per_sample
// (Init once per sample; loops 2..N sort sorted data), per_loop (InitEach: a fresh copy before
// every loop, untimed), copy_sort (copy and sort, both timed).
package main

import worker "tare.dev/worker"

const batch = 4

var src, work []int
var slots [batch][]int

func data(n int) []int {
	v := make([]int, n)
	x := uint32(12345)
	for i := range v {
		x = x*1103515245 + 12345
		v[i] = int(x >> 1)
	}
	return v
}

// insertionSort is not inlined: every shape runs the same machine code (inlined into each
// closure, the per-loop shape ran 1.9x slower than copy_sort here).
//
//go:noinline
func insertionSort(a []int) {
	for i := 1; i < len(a); i++ {
		v := a[i]
		j := i
		for j > 0 && a[j-1] > v {
			a[j] = a[j-1]
			j--
		}
		a[j] = v
	}
}

func setup(b *worker.B) error {
	n := b.Int("n")
	if n < 1 {
		b.Errorf("n must be at least 1")
		return nil
	}
	src = data(n)
	work = make([]int, n)
	for i := range slots {
		slots[i] = make([]int, n)
	}
	return nil
}

func main() {
	params := []worker.Param{{Name: "n", Default: "2000"}}
	worker.Register(worker.Kernel{
		Name: "per_sample", Doc: "init per sample, sort in place", Params: params, Setup: setup,
		Init: func(b *worker.B) error { copy(work, src); return nil },
		Run: func(b *worker.B) {
			for i := 0; i < b.N; i++ {
				insertionSort(work)
				worker.KeepAlive(work)
			}
		},
	})
	worker.Register(worker.Kernel{
		Name: "per_loop", Doc: "a fresh copy before every loop, sort in place", Params: params, Setup: setup,
		Batch:    batch,
		InitEach: func(b *worker.B, i int) error { copy(slots[i], src); return nil },
		RunEach: func(b *worker.B, i int) {
			insertionSort(slots[i])
			worker.KeepAlive(slots[i])
		},
	})
	worker.Register(worker.Kernel{
		Name: "copy_sort", Doc: "copy and sort, both timed", Params: params, Setup: setup,
		Run: func(b *worker.B) {
			for i := 0; i < b.N; i++ {
				copy(work, src)
				insertionSort(work)
				worker.KeepAlive(work)
			}
		},
	})
	worker.Main()
}
