package dev.tare.worker;

import java.util.ArrayList;
import java.util.List;

/**
 * A kernel being declared: name, parameters and stages, set with chained calls on the object
 * {@link Worker#kernel} returns. Only the timed stage ({@link #loop} or {@link #body}) is required.
 */
public final class Kernel {
    /** A declared parameter. */
    static final class Param {
        final String name, defaultValue, doc;

        Param(String name, String defaultValue, String doc) {
            this.name = name;
            this.defaultValue = defaultValue;
            this.doc = doc;
        }
    }

    final String name;
    String doc = "";
    final List<Param> params = new ArrayList<>();
    Stage setup, init, after, teardown;
    Loop loop;
    int eachBatch;
    int threads = 1;
    Input<?> eachInput;
    Each<Object> eachBody;

    Kernel(String name) {
        this.name = name;
    }

    /** A one-line description, shown by tare and --list. */
    public Kernel doc(String text) {
        this.doc = text;
        return this;
    }

    /** Declares a parameter with its default value. */
    public Kernel param(String name, String defaultValue) {
        return param(name, defaultValue, "");
    }

    /** Declares a parameter with its default value and a one-line description. */
    public Kernel param(String name, String defaultValue, String doc) {
        if (!Protocol.validName(name)) throw new IllegalArgumentException("parameter name '" + name + "' must match [A-Za-z0-9_./-]+");
        for (Param p : params) {
            if (p.name.equals(name)) throw new IllegalArgumentException("kernel " + this.name + ": parameter " + name + " declared twice");
        }
        params.add(new Param(name, defaultValue, doc));
        return this;
    }

    /** Runs once after tare chose the parameters (untimed). */
    public Kernel setup(Stage s) {
        setup = s;
        return this;
    }

    /** Runs before each repetition (untimed). */
    public Kernel init(Stage s) {
        init = s;
        return this;
    }

    /** The timed stage: runs the body exactly {@code loops} times. */
    public Kernel loop(Loop l) {
        loop = l;
        eachBody = null;
        return this;
    }

    /** The timed stage as one iteration; the client loops. See {@link Body} for the cost. */
    public Kernel body(Body b) {
        eachBody = null;
        loop = (state, loops) -> {
            for (long i = 0; i < loops; i++) b.run(state);
        };
        return this;
    }

    /**
     * Per-loop input, instead of {@link #loop} or {@link #body}, for a body that changes its
     * input (sorts in place): {@link #init} runs once per sample, so loops 2..N would see what loop
     * 1 left. {@code input} makes one loop's input, untimed; {@code body} is the loop on it. The
     * client makes {@code batch} inputs, reads the clock, runs the body on each, reads the clock
     * (Criterion's iter_batched; JMH's {@code Level.Invocation} without its clock read per call);
     * a sample's time is the sum of its batches'.
     */
    @SuppressWarnings("unchecked")
    public <T> Kernel each(int batch, Input<T> input, Each<T> body) {
        eachBatch = Math.max(1, batch);
        eachInput = input;
        eachBody = (Each<Object>) body;
        loop = null;
        return this;
    }

    /**
     * Runs the timed stage ({@link #loop} or {@link #body}) on {@code n} threads at once (JMH's
     * {@code @Threads}, Google Benchmark's {@code ->Threads}), each doing the sample's loops:
     * started before the clock and released together; the sample's time is from the release to
     * the last thread's end (per-thread time per loop; tare reports the total throughput). The
     * state is shared ({@link State#thread} says which thread); report metrics from
     * {@link #after}. Not with {@link #each}.
     */
    public Kernel threads(int n) {
        if (n < 1) throw new IllegalArgumentException("kernel " + name + ": threads must be at least 1");
        threads = n;
        return this;
    }

    /** Runs after each repetition's timed loop (untimed): report the sample's metrics here. */
    public Kernel after(Stage s) {
        after = s;
        return this;
    }

    /** Runs once when tare is done with the kernel (the protocol's finalize stage). */
    public Kernel teardown(Stage s) {
        teardown = s;
        return this;
    }
}
