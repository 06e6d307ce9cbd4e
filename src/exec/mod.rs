//! One measured run: spawn, cgroup (v1 | v2 | rusage fallback), limits, kill.
//!
//! Knows nothing of repetitions: the `method` layer decides how many runs and in which order.
