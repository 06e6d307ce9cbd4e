//! Counts of a kernel's timed loop for workers whose loop is no native function Callgrind can
//! toggle on (the Python, Go, Java and JS clients, `tare native-worker` harnesses): the
//! difference of two whole invocations, each counted from its first instruction to its exit,
//! that differ only in the loops of one sample. Invocation A runs `loops` loops, invocation B
//! twice as many; everything else (start-up, the runtime's init, the kernel's setup, the
//! protocol, teardown, exit) is the same in both and cancels: `(count(B) − count(A)) / loops`
//! is the count of one loop of the body, loops `loops + 1 ..= 2 · loops` of a process. A JIT
//! worker runs a warm-up sample of `loops` loops first in both, so the difference is of loops
//! the JIT has seen before. What does not cancel: the digits of the numbers in the protocol
//! (a few instructions), and in a runtime with a JIT or a garbage collector the compilation and
//! collection the extra loops cause (their counts repeat less exactly: see docs/counters.md).
//!
//! Pure: totals in, counts per loop out.

use super::CounterValue;

/// Counts per loop from the counts of invocation A (`one`, `loops_one` loops in its counted
/// sample) and B (`two`, `loops_two` loops): the difference over the difference in loops. An
/// event whose difference is not positive (a count that went down with more work: noise of a
/// JIT or GC larger than the body) is `not-counted`.
pub fn per_loop(
    one: &[CounterValue],
    two: &[CounterValue],
    loops_one: u64,
    loops_two: u64,
) -> Vec<CounterValue> {
    let extra = loops_two.saturating_sub(loops_one);
    one.iter()
        .map(|a| {
            let b = two.iter().find(|b| b.event == a.event);
            let value = match (a.value, b.and_then(|b| b.value)) {
                (Some(x), Some(y)) if extra > 0 && y > x => Some((y - x) / extra as f64),
                _ => None,
            };
            CounterValue::exact(&a.event, value, "per loop")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(event: &str, value: f64) -> CounterValue {
        CounterValue {
            event: event.into(),
            value: Some(value),
            unit: String::new(),
            status: "counted".into(),
            running: None,
        }
    }

    #[test]
    fn setup_cancels_and_the_loops_remain() {
        // Start-up 5e7 and setup 1e8 in both, 16 and 32 loops of 60 000.
        let a = [v("instructions", 1.5e8 + 16.0 * 6e4), v("l1-misses", 100.0)];
        let b = [v("instructions", 1.5e8 + 32.0 * 6e4), v("l1-misses", 90.0)];
        let p = per_loop(&a, &b, 16, 32);
        assert_eq!(p[0].value, Some(6e4));
        assert_eq!(p[0].unit, "per loop");
        // Fewer misses with more loops: not a count of the loops.
        assert_eq!(p[1].value, None);
        assert_eq!(p[1].status, "not-counted");
        assert!(per_loop(&a, &b, 16, 16)[0].value.is_none());
    }
}
