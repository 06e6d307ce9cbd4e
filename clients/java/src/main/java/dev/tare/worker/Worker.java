package dev.tare.worker;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A Java program's kernels, measured by tare ({@code tare kernels}) over tare's worker protocol
 * version 1 (docs/protocol.md), or by the program itself when run by hand (standalone mode).
 *
 * <pre>{@code
 * public static void main(String[] args) {
 *     Worker w = new Worker();
 *     double[] data = new double[1000];
 *     w.kernel("sum").param("n", "1000")
 *         .loop((s, loops) -> {
 *             for (long i = 0; i < loops; i++) Blackhole.consume(sum(data));
 *         });
 *     w.main(args); // serves tare, or measures standalone; exits the JVM
 * }
 * }</pre>
 *
 * <p>tare holds all policy (loops per sample, samples, warm-up and the JIT's steady state,
 * processes); this class obeys: it announces the kernels, times exactly the loops asked with
 * {@code System.nanoTime()}, and reports raw samples. Not a statistics package.
 */
public final class Worker {
    /** This library's version, sent in the hello line. */
    public static final String VERSION = "0.1.0";

    private final List<Kernel> kernels = new ArrayList<>();

    /** How the last connection to tare was made (fd-reflection, fd-unsafe, path); for tests. */
    static volatile String lastTransport;

    /** Declares a kernel; configure it with the returned object's chained calls. */
    public Kernel kernel(String name) {
        if (!Protocol.validName(name)) throw new IllegalArgumentException("kernel name '" + name + "' must match [A-Za-z0-9_./-]+");
        for (Kernel k : kernels) {
            if (k.name.equals(name)) throw new IllegalArgumentException("kernel " + name + " declared twice");
        }
        Kernel k = new Kernel(name);
        kernels.add(k);
        return k;
    }

    /**
     * Serves tare when {@code TARE_WORKER_FD} is set, otherwise measures standalone with
     * {@code args}; then exits the JVM with the status the protocol or standalone mode asks for.
     */
    public void main(String[] args) {
        System.out.flush();
        System.exit(run(args, System.getenv("TARE_WORKER_FD"), System.getenv("TARE_WORKER_PATH"), System.out, System.err));
    }

    /** {@link #main} without exiting: returns the exit status. */
    public int run(String[] args, String fdText, String path, PrintStream stdout, PrintStream stderr) {
        for (Kernel k : kernels) {
            if (k.threads > 1 && k.loop == null) {
                stderr.println("tare-worker: error: kernel " + k.name + " has threads; give it .loop(...) or .body(...), not .each(...)");
                return 1;
            }
            if (k.loop == null && k.eachBody == null) {
                stderr.println("tare-worker: error: kernel " + k.name + " has no timed stage; give it .loop(...) or .body(...)");
                return 1;
            }
        }
        if (fdText == null && (path == null || path.isEmpty())) {
            return new Standalone(this, stdout, stderr).run(args);
        }
        Transport t;
        try {
            t = Transport.fromEnvironment(fdText, path);
        } catch (IOException e) {
            stderr.println("tare-worker: error: " + oneLine(e.getMessage()));
            return 1;
        }
        lastTransport = t.how;
        try {
            return serve(t.in, t.out);
        } catch (IOException e) {
            if (isBrokenPipe(e)) return 0; // tare went away mid-reply
            stderr.println("tare-worker: error: talking to tare: " + oneLine(String.valueOf(e.getMessage())));
            return 1;
        }
    }

    private static boolean isBrokenPipe(IOException e) {
        String m = String.valueOf(e.getMessage());
        return m.contains("Broken pipe") || m.contains("Connection reset");
    }

    List<Kernel> kernels() {
        return kernels;
    }

    Kernel find(String name) {
        for (Kernel k : kernels) {
            if (k.name.equals(name)) return k;
        }
        return null;
    }

    static String oneLine(String s) {
        return s == null ? "" : s.replace('\r', ' ').replace('\n', ' ');
    }

    /** A failed stage of user code, as one line. */
    static final class StageFailure extends Exception {
        StageFailure(String message) {
            super(message);
        }
    }

    static StageFailure failure(String stage, Kernel k, Throwable t) {
        Throwable cause = t;
        String what = cause instanceof IllegalArgumentException && cause.getStackTrace().length > 0
                && cause.getStackTrace()[0].getClassName().startsWith("dev.tare.worker.")
                ? String.valueOf(cause.getMessage()) // the client's own message about a parameter
                : stage + " of " + k.name + " failed: " + cause;
        return new StageFailure(oneLine(what));
    }

    /** Creates the state for kernel k with overrides on top of the defaults. */
    State newState(Kernel k, Map<String, String> overrides) throws StageFailure {
        Map<String, String> params = new LinkedHashMap<>();
        for (Kernel.Param p : k.params) params.put(p.name, p.defaultValue);
        for (Map.Entry<String, String> e : overrides.entrySet()) {
            if (!params.containsKey(e.getKey())) throw new StageFailure("kernel " + k.name + " has no parameter '" + e.getKey() + "'");
            params.put(e.getKey(), e.getValue());
        }
        return new State(k, params);
    }

    static void stage(String name, Stage s, State state) throws StageFailure {
        if (s == null) return;
        try {
            s.call(state);
        } catch (Exception | StackOverflowError | AssertionError e) {
            throw failure(name, state.kernel, e);
        }
    }

    /**
     * One repetition's raw measurement. No cpu_ns: the JDK's process CPU time
     * (OperatingSystemMXBean.getProcessCpuTime) moves in 10 ms steps on Linux and costs about
     * 7 µs a call here, too coarse for samples of a few ms; the protocol makes it optional.
     */
    static final class Sample {
        long ns;
        long cpuNs = -1;
    }

    /** init, the timed loop, after: one sample of state.loops loops. */
    static Sample repetition(State state) throws StageFailure {
        Kernel k = state.kernel;
        state.metrics.clear();
        stage("init", k.init, state);
        Sample s = new Sample();
        long loops = state.loops;
        if (k.threads > 1) {
            s.ns = repetitionThreads(state, k, loops);
            stage("after", k.after, state);
            return s;
        }
        if (k.eachBody != null) {
            s.ns = repetitionEach(state, k, loops);
            stage("after", k.after, state);
            return s;
        }
        Loop loop = k.loop;
        long t0 = System.nanoTime();
        try {
            loop.run(state, loops);
        } catch (Exception | StackOverflowError | AssertionError e) {
            throw failure("run", k, e);
        }
        long t1 = System.nanoTime();
        s.ns = t1 - t0;
        stage("after", k.after, state);
        return s;
    }

    /**
     * A threaded kernel's sample: k.threads threads started, waiting on a latch the main thread
     * opens after reading the clock; the last thread to finish reads it again.
     */
    private static long repetitionThreads(State state, Kernel k, long loops) throws StageFailure {
        int n = k.threads;
        java.util.concurrent.CountDownLatch ready = new java.util.concurrent.CountDownLatch(n);
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicInteger finished = new java.util.concurrent.atomic.AtomicInteger();
        long[] end = new long[1];
        Throwable[] failed = new Throwable[n];
        Thread[] threads = new Thread[n];
        Loop loop = k.loop;
        for (int t = 0; t < n; t++) {
            final int index = t;
            threads[t] = new Thread(() -> {
                State.THREAD.set(index);
                ready.countDown();
                try {
                    go.await();
                    loop.run(state, loops);
                } catch (Throwable e) {
                    failed[index] = e;
                }
                if (finished.incrementAndGet() == n) end[0] = System.nanoTime();
            }, "tare-" + k.name + "-" + t);
            threads[t].start();
        }
        long t0;
        try {
            ready.await();
            t0 = System.nanoTime();
            go.countDown();
            for (Thread t : threads) t.join();
        } catch (InterruptedException e) {
            throw failure("run", k, e);
        }
        for (Throwable e : failed) {
            if (e instanceof Exception || e instanceof StackOverflowError || e instanceof AssertionError) throw failure("run", k, e);
            if (e != null) throw failure("run", k, new RuntimeException(e));
        }
        return end[0] - t0;
    }

    /** A per-loop kernel's loops in batches: inputs made untimed, the body timed; total ns. */
    private static long repetitionEach(State state, Kernel k, long loops) throws StageFailure {
        Object[] inputs = new Object[k.eachBatch];
        Input<?> input = k.eachInput;
        Each<Object> body = k.eachBody;
        long total = 0;
        for (long done = 0; done < loops; ) {
            int b = (int) Math.min(inputs.length, loops - done);
            try {
                for (int i = 0; i < b; i++) inputs[i] = input.make(state);
            } catch (Exception | StackOverflowError | AssertionError e) {
                throw failure("input", k, e);
            }
            long t0 = System.nanoTime();
            try {
                for (int i = 0; i < b; i++) body.run(state, inputs[i]);
            } catch (Exception | StackOverflowError | AssertionError e) {
                throw failure("run", k, e);
            }
            total += System.nanoTime() - t0;
            done += b;
        }
        return total;
    }

    private int serve(InputStream rawIn, OutputStream rawOut) throws IOException {
        InputStream in = new BufferedInputStream(rawIn, 4096);
        OutputStream out = new BufferedOutputStream(rawOut, 4096);
        announce(out);
        State current = null;
        while (true) {
            String line;
            Protocol.Message msg;
            try {
                line = Protocol.readLine(in);
                if (line == null) return 0; // EOF: tare went away
                msg = Protocol.decode(line);
            } catch (Protocol.BadLine e) {
                send(out, Protocol.encode("error", "message", "bad message: " + e.getMessage()));
                continue;
            }
            switch (msg.verb) {
                case "clock": {
                    double[] rc = Clock.measure();
                    send(out, Protocol.encode("clock", "resolution_ns", Protocol.number(rc[0]), "cost_ns", Protocol.number(rc[1])));
                    break;
                }
                case "setup": {
                    if (current != null) {
                        send(out, error("kernel " + current.kernel.name + " is set up already; send teardown first"));
                        break;
                    }
                    try {
                        current = setup(msg);
                        send(out, Protocol.encode("ok"));
                    } catch (StageFailure e) {
                        send(out, error(e.getMessage()));
                    }
                    break;
                }
                case "run": {
                    if (current == null) {
                        send(out, error("run before setup: no kernel is set up"));
                        break;
                    }
                    runReps(out, current, msg);
                    break;
                }
                case "teardown": {
                    if (current == null) {
                        send(out, error("teardown with no kernel set up"));
                        break;
                    }
                    State s = current;
                    current = null;
                    s.loops = 0;
                    try {
                        stage("teardown", s.kernel.teardown, s);
                        send(out, Protocol.encode("ok"));
                    } catch (StageFailure e) {
                        send(out, error(e.getMessage()));
                    }
                    break;
                }
                case "exit":
                    send(out, Protocol.encode("bye"));
                    return 0;
                default:
                    send(out, error("unknown verb '" + msg.verb + "'"));
            }
        }
    }

    private static String error(String message) {
        return Protocol.encode("error", "message", oneLine(message));
    }

    private static void send(OutputStream out, String line) throws IOException {
        out.write(line.getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    private void announce(OutputStream out) throws IOException {
        StringBuilder b = new StringBuilder();
        b.append(Protocol.encode("hello", "protocol", "1", "client", "tare-worker-java", "version", VERSION, "lang", "java"));
        for (Kernel k : kernels) {
            Protocol.Fields f = new Protocol.Fields().put("name", k.name);
            if (!k.doc.isEmpty()) f.put("doc", oneLine(k.doc));
            if (k.threads > 1) f.put("threads", Integer.toString(k.threads));
            b.append(Protocol.encode("kernel", f.kv));
            for (Kernel.Param p : k.params) {
                Protocol.Fields pf = new Protocol.Fields().put("kernel", k.name).put("name", p.name).put("default", p.defaultValue);
                if (!p.doc.isEmpty()) pf.put("doc", oneLine(p.doc));
                b.append(Protocol.encode("param", pf.kv));
            }
        }
        b.append(Protocol.encode("ready"));
        send(out, b.toString());
    }

    private State setup(Protocol.Message msg) throws StageFailure {
        String name = msg.get("kernel");
        if (name == null) throw new StageFailure("setup without kernel=");
        Kernel k = find(name);
        if (k == null) throw new StageFailure("unknown kernel '" + name + "'");
        Map<String, String> overrides = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : msg.fields.entrySet()) {
            if (e.getKey().startsWith("p.")) overrides.put(e.getKey().substring(2), e.getValue());
        }
        State s = newState(k, overrides);
        stage("setup", k.setup, s);
        return s;
    }

    private static long positive(Protocol.Message msg, String key) throws StageFailure {
        String v = msg.get(key);
        if (v == null) throw new StageFailure("run without " + key + "=");
        try {
            long n = Long.parseLong(v);
            if (n >= 1) return n;
        } catch (NumberFormatException e) {
            // falls through to the error below
        }
        throw new StageFailure("run " + key + "='" + v + "' is not an integer >= 1");
    }

    private static void runReps(OutputStream out, State state, Protocol.Message msg) throws IOException {
        long loops, reps;
        try {
            loops = positive(msg, "loops");
            reps = positive(msg, "reps");
        } catch (StageFailure e) {
            send(out, error(e.getMessage()));
            return;
        }
        state.loops = loops;
        for (long r = 0; r < reps; r++) {
            Sample s;
            try {
                s = repetition(state);
            } catch (StageFailure e) {
                send(out, error(e.getMessage()));
                return;
            }
            Protocol.Fields f = new Protocol.Fields().put("loops", Long.toString(loops)).put("ns", Long.toString(s.ns));
            if (s.cpuNs >= 0) f.put("cpu_ns", Long.toString(s.cpuNs));
            if (state.bytesPerLoop > 0) f.put("bytes", Long.toString(state.bytesPerLoop * loops));
            if (state.itemsPerLoop > 0) f.put("items", Long.toString(state.itemsPerLoop * loops));
            for (Map.Entry<String, Double> m : state.metrics.entrySet()) f.put("m." + m.getKey(), Protocol.number(m.getValue()));
            send(out, Protocol.encode("sample", f.kv)); // at once: tare may limit time per sample
        }
        send(out, Protocol.encode("done"));
    }
}
