package dev.tare.suite;

import java.util.Arrays;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * A small JMH suite for tests/kernels_jmh.rs: a benchmark with a @Param (two values), plain
 * ones. SLOWER_HASH is the percentage of extra work {@code hash} does; the test builds a copy
 * with it raised (the "one benchmark slower" build).
 */
@State(Scope.Benchmark)
public class SuiteBench {
    static final int SLOWER_HASH = 0;

    /** The numbers {@code sum} adds: a @Param of its own state. */
    @State(Scope.Benchmark)
    public static class Numbers {
        @Param({"256", "4096"})
        public int size;

        long[] numbers;

        @Setup
        public void setup() {
            numbers = new long[size];
            for (int i = 0; i < size; i++) numbers[i] = i + 1;
        }
    }

    int[] unsorted;
    byte[] buf;

    @Setup
    public void setup() {
        unsorted = new int[512];
        for (int i = 0; i < unsorted.length; i++) unsorted[i] = i * (int) 2654435761L;
        buf = new byte[2048 * (100 + SLOWER_HASH) / 100];
        for (int i = 0; i < buf.length; i++) buf[i] = (byte) (i * 31);
    }

    @Benchmark
    public long sum(Numbers n) {
        long s = 0;
        for (long x : n.numbers) s += x;
        return s;
    }

    @Benchmark
    public int[] sort() {
        int[] v = unsorted.clone();
        Arrays.sort(v);
        return v;
    }

    /** FNV-1a over 2 KiB: each byte depends on the last. */
    @Benchmark
    public long hash() {
        long h = 1469598103934665603L;
        for (byte c : buf) h = (h ^ (c & 0xff)) * 1099511628211L;
        return h;
    }
}
