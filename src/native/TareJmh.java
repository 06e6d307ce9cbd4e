import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.BenchmarkList;
import org.openjdk.jmh.runner.BenchmarkListEntry;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.format.OutputFormatFactory;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.VerboseMode;

/**
 * tare's driver of a JMH benchmarks jar inside one JVM (tare native-worker jmh): lists the
 * benchmarks and their @Param values, then serves requests from stdin, one a line:
 * "BENCHMARK LOOPS REPS [NAME=VALUE ...]" runs BENCHMARK with forks 0 (in this JVM), no
 * warm-up iterations, REPS single-shot iterations of a batch of LOOPS calls each, and replies
 * "ok NS NS ..." (each iteration's time for its batch, in ns) or "error REASON".
 */
public class TareJmh {
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err); // JMH and the benchmarks print to stdout
        List<BenchmarkListEntry> all = new ArrayList<>(BenchmarkList.defaultList()
            .getAll(OutputFormatFactory.createFormatInstance(System.err, VerboseMode.SILENT), new ArrayList<>()));
        all.sort((a, b) -> a.getUsername().compareTo(b.getUsername()));
        List<String> seen = new ArrayList<>();
        for (BenchmarkListEntry e : all) {
            if (seen.contains(e.getUsername())) continue;
            seen.add(e.getUsername());
            StringBuilder l = new StringBuilder("bench ").append(e.getUsername());
            if (e.getParams().hasValue()) {
                for (Map.Entry<String, String[]> p : e.getParams().get().entrySet()) {
                    l.append(' ').append(p.getKey()).append('=').append(String.join(",", p.getValue()));
                }
            }
            out.println(l);
        }
        out.println("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            if (f.length < 3) {
                out.println("error a request is BENCHMARK LOOPS REPS [NAME=VALUE ...]");
                continue;
            }
            try {
                int loops = Integer.parseInt(f[1]);
                int reps = Integer.parseInt(f[2]);
                ChainedOptionsBuilder o = new OptionsBuilder()
                    .include("^" + Pattern.quote(f[0]) + "$")
                    .forks(0)
                    .warmupIterations(0)
                    .measurementIterations(reps)
                    .mode(Mode.SingleShotTime)
                    .measurementBatchSize(loops)
                    .timeUnit(TimeUnit.NANOSECONDS)
                    .shouldFailOnError(true)
                    .verbosity(VerboseMode.SILENT);
                for (int i = 3; i < f.length; i++) {
                    int eq = f[i].indexOf('=');
                    o = o.param(f[i].substring(0, eq), f[i].substring(eq + 1));
                }
                Collection<RunResult> rr = new Runner(o.build()).run();
                StringBuilder l = new StringBuilder("ok");
                for (RunResult r : rr) {
                    for (BenchmarkResult b : r.getBenchmarkResults()) {
                        for (IterationResult it : b.getIterationResults()) {
                            l.append(' ').append(it.getPrimaryResult().getScore());
                        }
                    }
                }
                out.println(l);
            } catch (Throwable t) {
                Throwable c = t;
                while (c.getCause() != null) c = c.getCause();
                out.println(("error " + c).replace('\n', ' '));
            }
        }
        System.exit(0);
    }
}
