package dev.tare.worker;

/** A kernel stage that is not timed: setup, per-repetition init, after, teardown. */
@FunctionalInterface
public interface Stage {
    void call(State state) throws Exception;
}
