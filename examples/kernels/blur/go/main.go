// The blur example kernel in Go (docs/protocol.md, "The example kernel every client ships"):
// a separable Gaussian blur of a generated square image, with the same arithmetic as every
// other language's so checksums agree across them, plus the `empty` kernel that measures the
// per-loop overhead. Run it under `tare kernels "$(./build.sh --print-command)"`, or by hand.
package main

import (
	"math"

	"tare.dev/worker"
)

type blur struct {
	size, radius int
	w            []float64
	img, tmp     []float64
	out          []float64
}

func (s *blur) setup(b *worker.B) error {
	s.size, s.radius = b.Int("size"), b.Int("radius")
	if s.size < 1 || s.radius < 1 {
		b.Errorf("size=%d and radius=%d must be integers >= 1", s.size, s.radius)
		return nil
	}
	n := s.size
	s.img = make([]float64, n*n)
	s.tmp = make([]float64, n*n)
	s.out = make([]float64, n*n)
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			s.img[y*n+x] = float64((x*7+y*13)%256) / 255.0
		}
	}
	r := s.radius
	sigma := float64(r) / 2.0
	s.w = make([]float64, 2*r+1)
	sum := 0.0
	for i := -r; i <= r; i++ {
		s.w[i+r] = math.Exp(-float64(i*i) / (2 * sigma * sigma))
	}
	for _, v := range s.w { // summed in order i = -r..r
		sum += v
	}
	for i := range s.w {
		s.w[i] /= sum
	}
	b.SetBytes(int64(n * n * 8))
	return nil
}

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// pass is one blur: horizontal into tmp, then vertical into out, sums in order i = -r..r.
func (s *blur) pass() {
	n, r, w := s.size, s.radius, s.w
	img, tmp, out := s.img, s.tmp, s.out
	for y := 0; y < n; y++ {
		row := img[y*n : y*n+n]
		for x := 0; x < n; x++ {
			acc := 0.0
			for i := -r; i <= r; i++ {
				acc += w[i+r] * row[clamp(x+i, 0, n-1)]
			}
			tmp[y*n+x] = acc
		}
	}
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			acc := 0.0
			for i := -r; i <= r; i++ {
				acc += w[i+r] * tmp[clamp(y+i, 0, n-1)*n+x]
			}
			out[y*n+x] = acc
		}
	}
}

func (s *blur) checksum() float64 {
	total := 0.0
	for _, v := range s.out { // row-major order
		total += v
	}
	return total
}

func main() {
	s := &blur{}
	worker.Register(worker.Kernel{
		Name: "blur",
		Doc:  "separable Gaussian blur of a generated size x size image",
		Params: []worker.Param{
			{Name: "size", Default: "256", Doc: "image width and height in pixels"},
			{Name: "radius", Default: "3", Doc: "kernel radius in pixels"},
		},
		Setup: s.setup,
		Run: func(b *worker.B) {
			for i := 0; i < b.N; i++ {
				s.pass()
			}
		},
		After: func(b *worker.B) error {
			b.ReportMetric("checksum", s.checksum())
			return nil
		},
	})
	worker.Register(worker.Kernel{
		Name: "empty",
		Doc:  "does nothing but pass a value to worker.KeepAlive: the per-loop overhead",
		Run: func(b *worker.B) {
			for i := 0; i < b.N; i++ {
				worker.KeepAlive(i)
			}
		},
	})
	worker.Main()
}
