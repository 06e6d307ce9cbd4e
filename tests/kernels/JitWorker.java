// A worker on the Java client for tare's test of calibration under a JIT: a sum over an int
// array, tens of times faster once C2 has compiled it than in the interpreter that runs its
// first loops. Calibrated on the interpreter's pace, its steady-state samples would be far
// shorter than --sample-time.
import dev.tare.worker.Blackhole;
import dev.tare.worker.Worker;

public final class JitWorker {
    static int[] data;

    public static void main(String[] args) {
        Worker w = new Worker();
        w.kernel("sum").doc("sum of n ints").param("n", "2000")
                .setup(s -> {
                    data = new int[s.intParam("n")];
                    for (int i = 0; i < data.length; i++) data[i] = i * 7;
                })
                .loop((s, loops) -> {
                    for (long l = 0; l < loops; l++) {
                        long total = 0;
                        for (int x : data) total += x;
                        Blackhole.consume(total);
                    }
                });
        // JIT-like by construction: 10x the work for the first 150 ms after setup, as code
        // that a JIT compiles after calibration ran on the interpreter's pace.
        long[] since = new long[1];
        w.kernel("warming").doc("slow for 150 ms after setup, then 10x faster")
                .setup(s -> since[0] = System.nanoTime())
                .loop((s, loops) -> {
                    for (long l = 0; l < loops; l++) {
                        int rounds = System.nanoTime() - since[0] < 150_000_000L ? 10 : 1;
                        long x = l;
                        for (int r = 0; r < rounds * 2000; r++) x = x * 6364136223846793005L + 1442695040888963407L;
                        Blackhole.consume(x);
                    }
                });
        w.main(args);
    }
}
