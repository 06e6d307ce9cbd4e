package dev.tare.examples.blur;

import dev.tare.worker.Blackhole;
import dev.tare.worker.Worker;

/**
 * The blur example kernel in Java (docs/protocol.md, "The example kernel every client ships"): a
 * separable Gaussian blur of a generated square image with the same arithmetic as every other
 * language's, so checksums agree across them, plus the {@code empty} kernel that measures the
 * per-loop overhead. Run it under {@code tare kernels "$(./build.sh --print-command)"} or by hand.
 */
public final class Blur {
    int size, radius;
    double[] w, img, tmp, out;

    void setup(int size, int radius) {
        if (size < 1 || radius < 1) throw new IllegalArgumentException("size=" + size + " and radius=" + radius + " must be integers >= 1");
        this.size = size;
        this.radius = radius;
        int n = size;
        img = new double[n * n];
        tmp = new double[n * n];
        out = new double[n * n];
        for (int y = 0; y < n; y++) {
            for (int x = 0; x < n; x++) img[y * n + x] = ((x * 7 + y * 13) % 256) / 255.0;
        }
        double s = radius / 2.0;
        w = new double[2 * radius + 1];
        for (int i = -radius; i <= radius; i++) w[i + radius] = Math.exp(-(double) (i * i) / (2 * s * s));
        double sum = 0;
        for (double v : w) sum += v; // in order i = -radius..radius
        for (int i = 0; i < w.length; i++) w[i] /= sum;
    }

    private static int clamp(int v, int lo, int hi) {
        return v < lo ? lo : v > hi ? hi : v;
    }

    /** One blur: horizontal pass into tmp, vertical pass into out, sums in order i = -r..r. */
    void pass() {
        final int n = size, r = radius;
        final double[] w = this.w, img = this.img, tmp = this.tmp, out = this.out;
        for (int y = 0; y < n; y++) {
            int row = y * n;
            for (int x = 0; x < n; x++) {
                double acc = 0;
                for (int i = -r; i <= r; i++) acc += w[i + r] * img[row + clamp(x + i, 0, n - 1)];
                tmp[row + x] = acc;
            }
        }
        for (int y = 0; y < n; y++) {
            for (int x = 0; x < n; x++) {
                double acc = 0;
                for (int i = -r; i <= r; i++) acc += w[i + r] * tmp[clamp(y + i, 0, n - 1) * n + x];
                out[y * n + x] = acc;
            }
        }
    }

    double checksum() {
        double total = 0;
        for (double v : out) total += v; // row-major order
        return total;
    }

    public static void main(String[] args) {
        Worker worker = new Worker();
        Blur b = new Blur();
        worker.kernel("blur")
                .doc("separable Gaussian blur of a generated size x size image")
                .param("size", "256", "image width and height in pixels")
                .param("radius", "3", "kernel radius in pixels")
                .setup(s -> {
                    b.setup(s.intParam("size"), s.intParam("radius"));
                    s.bytesPerLoop((long) b.size * b.size * 8);
                })
                .loop((s, loops) -> {
                    for (long i = 0; i < loops; i++) b.pass();
                })
                .after(s -> s.metric("checksum", b.checksum()));
        worker.kernel("empty")
                .doc("does nothing but pass a value to Blackhole.consume: the per-loop overhead")
                .loop((s, loops) -> {
                    for (long i = 0; i < loops; i++) Blackhole.consume(i);
                });
        worker.main(args);
    }
}
