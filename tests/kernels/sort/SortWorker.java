// A worker on the Java client (clients/java) for tare's test of per-loop state: an in-place
// insertion sort of n pseudo-random ints in three shapes, as tests/kernels/sort.c: per_sample
// (init once per sample; loops 2..N sort sorted data), per_loop (each: a fresh copy before every
// loop, untimed), copy_sort (copy and sort, both timed).
import dev.tare.worker.Blackhole;
import dev.tare.worker.Worker;

public final class SortWorker {
    static int[] src, work;

    static int[] data(int n) {
        int[] v = new int[n];
        int x = 12345;
        for (int i = 0; i < n; i++) {
            x = x * 1103515245 + 12345;
            v[i] = x >>> 1;
        }
        return v;
    }

    static void insertionSort(int[] a) {
        for (int i = 1; i < a.length; i++) {
            int v = a[i];
            int j = i;
            while (j > 0 && a[j - 1] > v) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = v;
        }
    }

    public static void main(String[] args) {
        Worker w = new Worker();
        w.kernel("per_sample").doc("init per sample, sort in place").param("n", "2000")
                .setup(s -> { src = data(s.intParam("n")); work = new int[src.length]; })
                .init(s -> System.arraycopy(src, 0, work, 0, src.length))
                .loop((s, loops) -> {
                    for (long i = 0; i < loops; i++) {
                        insertionSort(work);
                        Blackhole.consume(work[0]);
                    }
                });
        w.kernel("per_loop").doc("a fresh copy before every loop, sort in place").param("n", "2000")
                .setup(s -> src = data(s.intParam("n")))
                .each(4, s -> src.clone(), (s, in) -> {
                    insertionSort(in);
                    Blackhole.consume(in[0]);
                });
        w.kernel("copy_sort").doc("copy and sort, both timed").param("n", "2000")
                .setup(s -> { src = data(s.intParam("n")); work = new int[src.length]; })
                .loop((s, loops) -> {
                    for (long i = 0; i < loops; i++) {
                        System.arraycopy(src, 0, work, 0, src.length);
                        insertionSort(work);
                        Blackhole.consume(work[0]);
                    }
                });
        w.main(args);
    }
}
