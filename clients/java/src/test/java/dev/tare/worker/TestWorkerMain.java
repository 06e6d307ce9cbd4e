package dev.tare.worker;

/** The worker program the tests start as a child JVM: kernels that expose the client's behaviour. */
public final class TestWorkerMain {
    static long bodyCalls, initCalls;

    public static void main(String[] args) {
        Worker w = new Worker();
        w.kernel("count").doc("counts its loops")
                .param("per", "3", "bytes per loop").param("label", "a b%c")
                .setup(s -> {
                    s.bytesPerLoop(s.intParam("per"));
                    s.itemsPerLoop(2);
                })
                .init(s -> {
                    initCalls++;
                    bodyCalls = 0;
                })
                .loop((s, loops) -> {
                    for (long i = 0; i < loops; i++) bodyCalls++;
                })
                .after(s -> {
                    s.metric("calls", bodyCalls);
                    s.metric("inits", initCalls);
                    s.metric("label_len", s.param("label").length());
                    s.metric("frac", 0.25);
                });
        w.kernel("bodycount").body(s -> bodyCalls++).init(s -> bodyCalls = 0).after(s -> s.metric("calls", bodyCalls));
        w.kernel("boom").loop((s, loops) -> {
            throw new IllegalStateException("kaboom\nsecond line");
        });
        w.kernel("failsetup").setup(s -> {
            throw new java.io.IOException("no GPU here");
        }).loop((s, loops) -> {});
        w.kernel("probe").loop((s, loops) -> {}).after(s -> s.metric("how", Worker.lastTransport == null ? 0
                : switch (Worker.lastTransport) {
                    case "fd-reflection" -> 1;
                    case "fd-unsafe" -> 2;
                    case "path" -> 3;
                    default -> 9;
                }));
        // Per-loop input: every loop must get a fresh input of its own.
        long[] each = new long[3]; // inits, loops, stale
        w.kernel("each").init(s -> java.util.Arrays.fill(each, 0))
                .each(3, s -> new long[] {++each[0], 0}, (s, in) -> {
                    each[1]++;
                    if (in[1] != 0) each[2]++;
                    in[1] = 1;
                })
                .after(s -> {
                    s.metric("inits", each[0]);
                    s.metric("loops", each[1]);
                    s.metric("stale", each[2]);
                });
        // Threaded: 4 threads, each loop sleeps 4 ms and counts in its thread's slot.
        java.util.concurrent.atomic.AtomicLongArray perThread = new java.util.concurrent.atomic.AtomicLongArray(4);
        w.kernel("threads").threads(4)
                .init(s -> { for (int i = 0; i < 4; i++) perThread.set(i, 0); })
                .loop((s, loops) -> {
                    for (long i = 0; i < loops; i++) {
                        perThread.incrementAndGet(s.thread());
                        Thread.sleep(4);
                    }
                })
                .after(s -> { for (int i = 0; i < 4; i++) s.metric("t" + i, perThread.get(i)); });
        w.kernel("sleepy").loop((s, loops) -> {
            for (long i = 0; i < loops; i++) Thread.sleep(1);
        });
        w.main(args);
    }
}
