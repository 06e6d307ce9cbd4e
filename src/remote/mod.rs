//! Where runs happen when not here: a deterministic part of a suite (`shard`), a suite as one
//! Slurm array job (`slurm`), and measurements on another machine driven over a transport
//! such as ssh (`transport`, `host`). Every path speaks the formats tare already writes — the
//! suite's `results.jsonl` records and the run journal's JSON lines — so what finished on the
//! other side is kept here even when the other side or the connection dies.
//!
//! ```text
//! shard      --shard I/N: which inputs a part runs; the shard directory layout
//! machine    the machine fingerprint recorded with suite results; Slurm job context
//! merge      `tare table`: shard directories merged into one source, machines checked
//! slurm      --slurm: the batch script, sbatch, following with squeue, resubmission, scancel
//! transport  how a command reaches another machine (ssh; adb would be another)
//! host       --host: tare run / tare suite run measured by tare on the other machine
//! ```
//!
//! Not for: measuring (the tare at the other end does that with its own `exec`) or deciding
//! what to run (see `crate::suite::plan` and `crate::plan`).

pub mod host;
pub mod machine;
pub mod merge;
pub mod shard;
pub mod slurm;
pub mod transport;
