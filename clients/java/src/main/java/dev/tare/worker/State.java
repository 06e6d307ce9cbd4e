package dev.tare.worker;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a kernel's stages receive: its parameters (strings on the wire, converted here), the loop
 * count of the current repetition, and setters for the sample's metrics.
 */
public final class State {
    final Kernel kernel;
    final Map<String, String> params;
    long loops;
    long bytesPerLoop;
    long itemsPerLoop;
    final Map<String, Double> metrics = new LinkedHashMap<>();

    State(Kernel kernel, Map<String, String> params) {
        this.kernel = kernel;
        this.params = params;
    }

    static final ThreadLocal<Integer> THREAD = ThreadLocal.withInitial(() -> 0);

    /** Which of a threaded kernel's threads runs this loop (0..threads-1; 0 otherwise). */
    public int thread() {
        return THREAD.get();
    }

    /** The kernel's name. */
    public String kernel() {
        return kernel.name;
    }

    /** Loops of the current repetition (0 during setup and teardown). */
    public long loops() {
        return loops;
    }

    /** The string value of a declared parameter (its default unless tare sent another). */
    public String param(String name) {
        String v = params.get(name);
        if (v == null) throw new IllegalArgumentException("kernel " + kernel.name + " has no parameter '" + name + "'");
        return v;
    }

    /** A parameter as an int; a value that is not an integer fails the stage naming it. */
    public int intParam(String name) {
        String v = param(name);
        try {
            return Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("parameter " + name + "='" + v + "' is not an integer");
        }
    }

    /** A parameter as a long. */
    public long longParam(String name) {
        String v = param(name);
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("parameter " + name + "='" + v + "' is not an integer");
        }
    }

    /** A parameter as a double. */
    public double doubleParam(String name) {
        String v = param(name);
        try {
            return Double.parseDouble(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("parameter " + name + "='" + v + "' is not a number");
        }
    }

    /** All parameter values, in declaration order. */
    public Map<String, String> params() {
        return new LinkedHashMap<>(params);
    }

    /** Bytes one loop processes; samples carry bytes = n × loops (throughput). */
    public void bytesPerLoop(long n) {
        bytesPerLoop = n;
    }

    /** Items one loop processes; samples carry items = n × loops. */
    public void itemsPerLoop(long n) {
        itemsPerLoop = n;
    }

    /** A user metric for the current sample, sent as {@code m.<name>}; call it from the after stage. */
    public void metric(String name, double value) {
        if (!Protocol.validKey(name)) throw new IllegalArgumentException("metric name '" + name + "' must match [a-z0-9_.-]+");
        if (Double.isNaN(value) || Double.isInfinite(value)) throw new IllegalArgumentException("metric " + name + " is not a finite number");
        metrics.put(name, value);
    }
}
