//! The `tare run` flags of the optional meters and controlled factors (`--io`, `--ready`,
//! `--memory-*`; `--cache` and `--background` from `opts::FactorArgs`, shared with
//! `tare kernels`), turned into a [`MeterPlan`]. Only parsing and checking: the work is in
//! `exec` and `method`.

use crate::error::usage;
use crate::plan::meters::MeterPlan;
use crate::plan::BenchmarkPlan;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct MeterArgs {
    /// Measure each run's I/O: bytes and operations at the block layer for the whole tree,
    /// bytes at the system-call level, dirty data left behind (see docs/meters.md).
    #[arg(long)]
    pub io: bool,
    #[command(flatten)]
    pub factors: super::opts::FactorArgs,
    /// Time each run until it is ready — stdout:REGEX, stderr:REGEX, port:N (localhost TCP),
    /// file:PATH or notify (sd_notify READY=1) — then stop it (its whole group): the run's
    /// time is its time to ready.
    #[arg(long, value_name = "SIGN", conflicts_with = "isolate")]
    pub ready: Option<String>,
    /// After --ready: stop (default) the program, or wait for it to end (the run's time is
    /// then its whole life, and the time to ready is recorded beside it).
    #[arg(long, value_name = "stop|wait", requires = "ready")]
    pub ready_then: Option<String>,
    /// Sample each run's memory (its whole group) at this interval into a timeline, plotted
    /// in the HTML report (e.g. 10ms).
    #[arg(long, value_name = "INTERVAL")]
    pub memory_sample: Option<String>,
    /// Memory pressure without killing: cgroup v2 memory.high of each run's group (bytes or
    /// with a unit); the kernel reclaims and throttles above it. Not available on cgroup v1.
    #[arg(long, value_name = "BYTES")]
    pub memory_high: Option<String>,
    #[command(flatten)]
    pub energy: super::opts::EnergyArgs,
}

/// Refuses, before the first run, meters the chosen backend cannot give.
pub fn check_backend(mp: &MeterPlan, kind: crate::results::MethodKind) -> anyhow::Result<()> {
    if mp.run.memory_high.is_some() && kind != crate::results::MethodKind::CgroupV2 {
        return Err(usage(
            "--memory-high needs cgroup v2 (memory.high); cgroup v1's memory.soft_limit_in_bytes only matters when the whole machine is short of memory, so it cannot emulate pressure — use --memory-limit for a hard limit instead",
        ));
    }
    Ok(())
}

impl MeterArgs {
    /// Builds the meter plan; with `--cache cold,warm` every benchmark becomes two, named
    /// `NAME [cache=cold]` and `NAME [cache=warm]`, with a `cache` parameter, and with
    /// `--background` two more of each (`plan::meters::Factors::levels`).
    pub fn plan(
        &self,
        plans: Vec<BenchmarkPlan>,
        input: Option<&PathBuf>,
    ) -> anyhow::Result<(Vec<BenchmarkPlan>, MeterPlan)> {
        let mut mp = MeterPlan::default();
        mp.run.io = self.io;
        mp.energy = self.energy.idle()?;
        if let Some(s) = &self.memory_sample {
            let d = crate::units::parse_duration(s)
                .map_err(|e| usage(format!("--memory-sample: {e}")))?;
            if d < std::time::Duration::from_millis(1) {
                return Err(usage(format!(
                    "--memory-sample {s}: sample at most every millisecond"
                )));
            }
            mp.run.memory_sample = Some(d);
        }
        if let Some(s) = &self.memory_high {
            let b =
                crate::units::parse_bytes(s).map_err(|e| usage(format!("--memory-high: {e}")))?;
            mp.run.memory_high = Some(b);
        }
        if let Some(r) = &self.ready {
            let source = r
                .parse::<crate::exec::ready::ReadySource>()
                .map_err(usage)?;
            let then_wait = match self.ready_then.as_deref() {
                None | Some("stop") => false,
                Some("wait") => true,
                Some(o) => return Err(usage(format!("--ready-then '{o}': use stop or wait"))),
            };
            mp.run.ready = Some(crate::exec::ready::Ready { source, then_wait });
        }
        let factors = self.factors.factors()?;
        mp.background_lead = factors.background_lead;
        if factors.is_empty() {
            return Ok((plans, mp));
        }
        let mut out = Vec::new();
        for b in plans {
            // The files whose cache state the runs depend on, as far as tare can tell.
            let mut files = Vec::new();
            if !factors.cache.is_empty() {
                files = crate::method::cache::files_of(&b.argv);
                files.extend(input.cloned());
            }
            for level in factors.levels(&files) {
                let mut nb = b.clone();
                nb.name.push_str(&level.suffix);
                for (k, v) in &level.parameters {
                    nb.parameters.insert(k.clone(), v.clone());
                }
                out.push(nb);
                mp.levels.push(level);
            }
        }
        Ok((out, mp))
    }
}
