package dev.tare.worker;

/**
 * Makes one loop's input for {@link Kernel#each}, untimed: the client calls it for every loop,
 * a batch at a time, before the clock starts.
 */
@FunctionalInterface
public interface Input<T> {
    T make(State state) throws Exception;
}
