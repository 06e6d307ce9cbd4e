package dev.tare.worker;

/** One loop of a {@link Kernel#each} kernel on the input {@link Input} made for it (timed). */
@FunctionalInterface
public interface Each<T> {
    void run(State state, T input) throws Exception;
}
