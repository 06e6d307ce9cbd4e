package dev.tare.worker;

/**
 * Do-not-optimize helper: pass a kernel's result to {@code consume} in each loop so the JIT must
 * compute it.
 *
 * <p>Why this is needed: HotSpot's C2 compiler removes computations whose results are never used
 * (dead-code elimination), and it can sink or merge repeated stores of a loop to an ordinary field
 * so that only the last value is computed. Writing to a {@code volatile} field would stop both,
 * but costs a store barrier per call, which is larger than many kernels. The trick, as in JMH's
 * Blackhole (read to learn, not copied): compare the value with two {@code volatile} fields that
 * hold different values, so the comparison can never succeed, yet the JIT cannot prove it (a
 * volatile read may see any value written by another thread) and must keep the value and the code
 * that made it; a volatile read is a plain load on x86. For references, a fresh object compared
 * with a field could be proven distinct by escape analysis and the allocation removed, so objects
 * are instead stored, rarely (on a growing power-of-two schedule), into a volatile field: they may
 * escape, so they must exist.
 */
public final class Blackhole {
    private static volatile int i1 = 1, i2 = 2;
    private static volatile long l1 = 1, l2 = 2;
    private static volatile double d1 = 1, d2 = 2;
    private static volatile float f1 = 1, f2 = 2;
    private static volatile boolean z1 = true, z2 = false;
    private static volatile Object sink;
    private static volatile int never;
    private static int counter;
    private static int mask = 1;

    private Blackhole() {}

    public static void consume(int v) {
        if (v == i1 & v == i2) never = v; // never both: i1 != i2
    }

    public static void consume(long v) {
        if (v == l1 & v == l2) never = (int) v;
    }

    public static void consume(double v) {
        if (v == d1 & v == d2) never = (int) v;
    }

    public static void consume(float v) {
        if (v == f1 & v == f2) never = (int) v;
    }

    public static void consume(boolean v) {
        if (v == z1 & v == z2) never = 1;
    }

    public static void consume(byte v) {
        consume((int) v);
    }

    public static void consume(short v) {
        consume((int) v);
    }

    public static void consume(char v) {
        consume((int) v);
    }

    public static void consume(Object v) {
        int c = counter + 1;
        counter = c;
        if ((c & mask) == 0) { // rare: after 2, 4, 8, ... calls; the object escapes then
            sink = v;
            mask = (mask << 1) | 1;
        }
    }
}
