package dev.tare.worker;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Standalone mode: the program run by hand (no TARE_WORKER_FD) measures its kernels itself, as a
 * Google Benchmark binary does. Because the JVM compiles hot code while it runs, each kernel first
 * runs for a warm-up time (1 s unless {@code --warmup S}); then N is calibrated by doubling until
 * a sample takes at least 10 ms, and 10 samples are taken. A quick look: tare, which detects the
 * JIT's steady state per process and runs several processes, is the measurement.
 */
final class Standalone {
    static final long MIN_SAMPLE_NS = 10_000_000L;
    static final int SAMPLES = 10;

    private final Worker worker;
    private final PrintStream out, err;

    Standalone(Worker worker, PrintStream out, PrintStream err) {
        this.worker = worker;
        this.out = out;
        this.err = err;
    }

    private static final class Usage extends Exception {
        Usage(String m) {
            super(m);
        }
    }

    int run(String[] args) {
        try {
            return go(args);
        } catch (Usage | Worker.StageFailure e) {
            err.println("tare-worker: error: " + Worker.oneLine(e.getMessage()));
            return 1;
        }
    }

    private int go(String[] args) throws Usage, Worker.StageFailure {
        boolean list = false, verbose = false;
        Pattern filter = null;
        double warmupS = 1.0;
        Map<String, String> params = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String inline = a.startsWith("--") && a.indexOf('=') > 0 ? a.substring(a.indexOf('=') + 1) : null;
            String flag = inline != null ? a.substring(0, a.indexOf('=')) : a;
            switch (flag) {
                case "--list":
                    list = true;
                    break;
                case "-v":
                case "--verbose":
                    verbose = true;
                    break;
                case "--filter": {
                    String v = inline != null ? inline : next(args, ++i, a);
                    try {
                        filter = Pattern.compile(v);
                    } catch (PatternSyntaxException e) {
                        throw new Usage("--filter '" + v + "' is not a regular expression: " + e.getDescription());
                    }
                    break;
                }
                case "-p":
                case "--param": {
                    String v = inline != null ? inline : next(args, ++i, a);
                    int eq = v.indexOf('=');
                    if (eq <= 0) throw new Usage("parameter '" + v + "' must be NAME=VALUE");
                    params.put(v.substring(0, eq), v.substring(eq + 1));
                    break;
                }
                case "--warmup": {
                    String v = inline != null ? inline : next(args, ++i, a);
                    try {
                        warmupS = Double.parseDouble(v);
                    } catch (NumberFormatException e) {
                        warmupS = -1;
                    }
                    if (!(warmupS >= 0)) throw new Usage("--warmup '" + v + "' must be seconds >= 0");
                    break;
                }
                case "-h":
                case "--help":
                    out.println("usage: PROGRAM [--list] [--filter REGEX] [-p NAME=VALUE]... [--warmup SECONDS] [-v]\n"
                            + "Measures this program's kernels (standalone mode of the tare worker library);\n"
                            + "run it under `tare kernels` for the real measurement.");
                    return 0;
                default:
                    throw new Usage("unknown argument '" + a + "' (known: --list, --filter REGEX, -p NAME=VALUE, --warmup S, -v)");
            }
        }
        List<Kernel> selected = new ArrayList<>();
        for (Kernel k : worker.kernels()) {
            if (filter == null || filter.matcher(k.name).find()) selected.add(k);
        }
        if (selected.isEmpty()) throw new Usage("no kernel matches --filter; see --list");
        for (String name : params.keySet()) {
            boolean found = selected.stream().anyMatch(k -> k.params.stream().anyMatch(p -> p.name.equals(name)));
            if (!found) throw new Usage("no selected kernel has parameter '" + name + "'; see --list");
        }
        if (list) {
            for (Kernel k : selected) {
                out.println(k.name + suffix(k.doc));
                for (Kernel.Param p : k.params) out.println("  " + p.name + "=" + p.defaultValue + suffix(p.doc));
            }
            return 0;
        }
        for (Kernel k : selected) out.println(measure(k, params, (long) (warmupS * 1e9), verbose));
        return 0;
    }

    private static String next(String[] args, int i, String flag) throws Usage {
        if (i >= args.length) throw new Usage(flag + " needs a value");
        return args[i];
    }

    private static String suffix(String doc) {
        return doc.isEmpty() ? "" : "  # " + Worker.oneLine(doc);
    }

    private String measure(Kernel k, Map<String, String> all, long warmupNs, boolean verbose) throws Worker.StageFailure {
        Map<String, String> mine = new LinkedHashMap<>();
        for (Kernel.Param p : k.params) {
            if (all.containsKey(p.name)) mine.put(p.name, all.get(p.name));
        }
        State s = worker.newState(k, mine);
        Worker.stage("setup", k.setup, s);
        // Warm-up: let the JIT compile the kernel before anything counts (N doubles so that the
        // kernel's loop, not the harness, is what gets hot).
        long spent = 0;
        s.loops = 1;
        while (spent < warmupNs) {
            Worker.Sample w = Worker.repetition(s);
            spent += w.ns;
            if (verbose) err.printf(Locale.ROOT, "warm-up %s N=%d %.1f ns/loop%n", k.name, s.loops, (double) w.ns / s.loops);
            if (w.ns < MIN_SAMPLE_NS) s.loops *= 2;
        }
        s.loops = calibrate(s);
        double[] perLoop = new double[SAMPLES];
        for (int i = 0; i < SAMPLES; i++) {
            Worker.Sample x = Worker.repetition(s);
            perLoop[i] = (double) x.ns / s.loops;
            if (verbose) err.printf(Locale.ROOT, "sample %s N=%d %.1f ns/loop%n", k.name, s.loops, perLoop[i]);
        }
        long n = s.loops;
        s.loops = 0;
        Worker.stage("teardown", k.teardown, s);
        double med = median(perLoop);
        StringBuilder b = new StringBuilder(k.name);
        for (Kernel.Param p : k.params) b.append(' ').append(p.name).append('=').append(s.params.get(p.name));
        b.append(' ').append(formatNs(med)).append(" ns/loop");
        if (s.bytesPerLoop > 0 && med > 0) b.append("  ").append(scaled(s.bytesPerLoop / med * 1e9, "B/s"));
        if (s.itemsPerLoop > 0 && med > 0) b.append("  ").append(scaled(s.itemsPerLoop / med * 1e9, "items/s"));
        b.append(String.format(Locale.ROOT, "  (N=%d, %d samples, warm-up %.1f s)", n, SAMPLES, warmupNs / 1e9));
        return b.toString();
    }

    /** Doubles N from 1 until one sample takes at least 10 ms. */
    static long calibrate(State s) throws Worker.StageFailure {
        s.loops = 1;
        while (true) {
            Worker.Sample x = Worker.repetition(s);
            if (x.ns >= MIN_SAMPLE_NS || s.loops >= (1L << 40)) return s.loops;
            s.loops *= 2;
        }
    }

    static double median(double[] xs) {
        double[] s = xs.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    static String formatNs(double ns) {
        if (ns >= 100) return String.format(Locale.ROOT, "%.0f", ns);
        if (ns >= 10) return String.format(Locale.ROOT, "%.1f", ns);
        return String.format(Locale.ROOT, "%.2f", ns);
    }

    static String scaled(double v, String unit) {
        String[] prefixes = {"", "k", "M", "G", "T"};
        int i = 0;
        while (v >= 1000 && i < prefixes.length - 1) {
            v /= 1000;
            i++;
        }
        return String.format(Locale.ROOT, "%.3g %s%s", v, prefixes[i], unit);
    }
}
