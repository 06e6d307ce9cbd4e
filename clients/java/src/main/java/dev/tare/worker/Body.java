package dev.tare.worker;

/**
 * One iteration of a kernel body, for {@link Kernel#body}: the client loops and calls it. Simpler
 * than {@link Loop}, at the cost of a call per iteration that the JIT may not inline when several
 * kernels share the call site.
 */
@FunctionalInterface
public interface Body {
    void run(State state) throws Exception;
}
