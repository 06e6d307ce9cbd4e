package dev.tare.worker;

/** The clock samples are timed with, System.nanoTime(): its resolution and cost per read. */
final class Clock {
    private Clock() {}

    /**
     * {resolution_ns, cost_ns}: the smallest non-zero difference of consecutive reads, and the
     * mean ns per read, from about 10 ms of reads.
     */
    static double[] measure() {
        long start = System.nanoTime();
        long prev = start;
        long minDiff = Long.MAX_VALUE;
        long reads = 0;
        while (true) {
            for (int i = 0; i < 1000; i++) {
                long now = System.nanoTime();
                long d = now - prev;
                if (d > 0 && d < minDiff) minDiff = d;
                prev = now;
            }
            reads += 1000;
            if (prev - start >= 10_000_000L) break;
        }
        return new double[] {minDiff, (double) (prev - start) / reads};
    }
}
