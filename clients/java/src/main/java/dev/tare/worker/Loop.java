package dev.tare.worker;

/**
 * The timed stage: execute the kernel body exactly {@code loops} times and nothing else. Writing
 * the loop yourself (rather than having the client call a lambda per iteration) lets the JIT
 * compile the kernel and its loop together.
 */
@FunctionalInterface
public interface Loop {
    void run(State state, long loops) throws Exception;
}
