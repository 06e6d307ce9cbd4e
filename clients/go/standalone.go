package worker

// Standalone mode: the program run by hand (no TARE_WORKER_FD) measures its kernels itself, as
// a Google Benchmark binary does: calibrate N by doubling until a sample takes >= 10 ms, take 10
// samples, print the median per loop. A quick look; tare is the measurement.

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
)

const (
	minSampleNs       = int64(10 * time.Millisecond)
	standaloneSamples = 10
)

func standalone(args []string, stdout, stderr io.Writer) int {
	if err := standaloneRun(args, stdout); err != nil {
		fmt.Fprintf(stderr, "tare-worker: error: %s\n", oneLine(err.Error()))
		return 1
	}
	return 0
}

func standaloneRun(args []string, out io.Writer) error {
	list := false
	var filter *regexp.Regexp
	params := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() (string, error) {
			if eq := strings.IndexByte(a, '='); eq >= 0 && strings.HasPrefix(a, "--") {
				return a[eq+1:], nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			i++
			return args[i], nil
		}
		switch {
		case a == "--list":
			list = true
		case a == "--filter" || strings.HasPrefix(a, "--filter="):
			v, err := value()
			if err != nil {
				return err
			}
			re, err := regexp.Compile(v)
			if err != nil {
				return fmt.Errorf("--filter %q is not a regular expression: %v", v, err)
			}
			filter = re
		case a == "-p" || a == "--param" || strings.HasPrefix(a, "--param="):
			v, err := value()
			if err != nil {
				return err
			}
			eq := strings.IndexByte(v, '=')
			if eq <= 0 {
				return fmt.Errorf("parameter %q must be NAME=VALUE", v)
			}
			params[v[:eq]] = v[eq+1:]
		case a == "-h" || a == "--help":
			fmt.Fprintln(out, "usage: PROGRAM [--list] [--filter REGEX] [-p NAME=VALUE]...\n"+
				"Measures the kernels of this program (standalone mode of the tare worker library);\n"+
				"run it under `tare kernels` for the real measurement.")
			return nil
		default:
			return fmt.Errorf("unknown argument %q (known: --list, --filter REGEX, -p NAME=VALUE)", a)
		}
	}
	var selected []*Kernel
	for _, k := range registry {
		if filter == nil || filter.MatchString(k.Name) {
			selected = append(selected, k)
		}
	}
	if len(selected) == 0 {
		return errors.New("no kernel matches --filter; see --list")
	}
	for name := range params {
		found := false
		for _, k := range selected {
			for _, p := range k.Params {
				found = found || p.Name == name
			}
		}
		if !found {
			return fmt.Errorf("no selected kernel has parameter %q; see --list", name)
		}
	}
	if list {
		for _, k := range selected {
			fmt.Fprintf(out, "%s%s\n", k.Name, docSuffix(k.Doc))
			for _, p := range k.Params {
				fmt.Fprintf(out, "  %s=%s%s\n", p.Name, p.Default, docSuffix(p.Doc))
			}
		}
		return nil
	}
	for _, k := range selected {
		line, err := measureStandalone(k, params)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, line)
	}
	return nil
}

func docSuffix(doc string) string {
	if doc == "" {
		return ""
	}
	return "  # " + oneLine(doc)
}

func measureStandalone(k *Kernel, all map[string]string) (string, error) {
	mine := map[string]string{}
	for _, p := range k.Params {
		if v, ok := all[p.Name]; ok {
			mine[p.Name] = v
		}
	}
	b, err := newB(k, mine)
	if err != nil {
		return "", err
	}
	if err := call(b, "setup", func() error { return callStage(k.Setup, b) }); err != nil {
		return "", err
	}
	// Calibrate: double N from 1 until one sample takes at least 10 ms.
	b.N = 1
	for {
		s, err := repetition(b)
		if err != nil {
			return "", err
		}
		if s.ns >= minSampleNs || b.N >= 1<<40 {
			break
		}
		b.N *= 2
	}
	perLoop := make([]float64, 0, standaloneSamples)
	for i := 0; i < standaloneSamples; i++ {
		s, err := repetition(b)
		if err != nil {
			return "", err
		}
		perLoop = append(perLoop, float64(s.ns)/float64(b.N))
	}
	if err := call(b, "teardown", func() error { return callStage(k.Teardown, b) }); err != nil {
		return "", err
	}
	med := median(perLoop)
	var parts []string
	parts = append(parts, k.Name)
	for _, p := range k.Params {
		parts = append(parts, p.Name+"="+b.params[p.Name])
	}
	line := fmt.Sprintf("%s %s ns/loop", strings.Join(parts, " "), formatNs(med))
	if tp := throughput(b, med); tp != "" {
		line += "  " + tp
	}
	return line + fmt.Sprintf("  (N=%d, %d samples)", b.N, standaloneSamples), nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func formatNs(ns float64) string {
	switch {
	case ns >= 100:
		return fmt.Sprintf("%.0f", ns)
	case ns >= 10:
		return fmt.Sprintf("%.1f", ns)
	default:
		return fmt.Sprintf("%.2f", ns)
	}
}

// throughput is "<x> MB/s" and/or "<y> Mitems/s" from the per-loop counts and time per loop.
func throughput(b *B, nsPerLoop float64) string {
	var parts []string
	if b.bytes > 0 && nsPerLoop > 0 {
		parts = append(parts, scaled(float64(b.bytes)/nsPerLoop*1e9, "B/s"))
	}
	if b.items > 0 && nsPerLoop > 0 {
		parts = append(parts, scaled(float64(b.items)/nsPerLoop*1e9, "items/s"))
	}
	return strings.Join(parts, "  ")
}

func scaled(v float64, unit string) string {
	prefixes := []string{"", "k", "M", "G", "T"}
	i := 0
	for v >= 1000 && i < len(prefixes)-1 {
		v /= 1000
		i++
	}
	return fmt.Sprintf("%.3g %s%s", v, prefixes[i], unit)
}
