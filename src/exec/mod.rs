//! One measured run: spawn, cgroup (v1 | v2 | rusage fallback), limits, kill.
//!
//! Knows nothing of repetitions: the `method` layer decides how many runs and in which order.
//! The flow of one run ([`Executor::run`]): create a fresh group → fork → the child joins the
//! group and execs (no instruction of the command runs outside) → wait, enforcing wall and CPU
//! limits → freeze and kill whatever is left in the group → read CPU time and peak memory →
//! remove the group.

pub mod capture;
pub mod cgroup;
pub mod io;
pub mod isolate;
pub mod protocol;
pub mod ready;
pub mod reaper;
pub mod run;
pub mod spawn;
pub mod spec;
pub mod sys;
pub mod timeline;
pub mod worker;

pub use cgroup::{detect, Backend, Needs, Preference};
pub use run::{After, Executor, SpawnError};
pub use spec::{Input, Limits, Measurement, Meters, Priority, RunSpec, Sink};
