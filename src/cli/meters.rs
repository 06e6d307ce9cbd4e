//! The `tare run` flags of the optional meters and controlled factors (`--io`, `--cache`,
//! `--cache-file`), turned into a [`MeterPlan`]. Only parsing and checking: the work is in
//! `exec::io` and `method::cache`.

use crate::error::usage;
use crate::plan::meters::{CachePlan, CacheState, MeterPlan};
use crate::plan::BenchmarkPlan;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct MeterArgs {
    /// Measure each run's I/O: bytes and operations at the block layer for the whole tree,
    /// bytes at the system-call level, dirty data left behind (see docs/meters.md).
    #[arg(long)]
    pub io: bool,
    /// Page-cache state before each run: cold (dropped), warm (the files read first), or
    /// cold,warm to measure every command in both states, interleaved and compared.
    #[arg(long, value_name = "cold|warm|cold,warm")]
    pub cache: Option<String>,
    /// A file whose cache state --cache controls and records (repeatable; the program, its
    /// libraries and --input are always included).
    #[arg(long, value_name = "FILE", requires = "cache")]
    pub cache_file: Vec<PathBuf>,
    /// Time each run until it is ready — stdout:REGEX, stderr:REGEX, port:N (localhost TCP),
    /// file:PATH or notify (sd_notify READY=1) — then stop it (its whole group): the run's
    /// time is its time to ready.
    #[arg(long, value_name = "SIGN", conflicts_with = "isolate")]
    pub ready: Option<String>,
    /// After --ready: stop (default) the program, or wait for it to end (the run's time is
    /// then its whole life, and the time to ready is recorded beside it).
    #[arg(long, value_name = "stop|wait", requires = "ready")]
    pub ready_then: Option<String>,
    /// A co-runner (through the shell, in its own process group) during every other run:
    /// each command is measured [background=off] and [background=on], interleaved, and the
    /// comparison is the slowdown with its CI.
    #[arg(long, value_name = "CMD")]
    pub background: Option<String>,
    /// How long the co-runner runs before each run starts.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "100ms",
        requires = "background"
    )]
    pub background_lead: String,
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
    /// `NAME [cache=cold]` and `NAME [cache=warm]`, with a `cache` parameter.
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
        let (plans, mut mp) = self.plan_cache(plans, input, mp)?;
        if let Some(cmd) = &self.background {
            mp.background_lead = crate::units::parse_duration(&self.background_lead)
                .map_err(|e| usage(format!("--background-lead: {e}")))?;
            let mut out = Vec::new();
            let mut cache = Vec::new();
            for (b, c) in plans.into_iter().zip(mp.cache) {
                for on in [false, true] {
                    let mut nb = b.clone();
                    let word = if on { "on" } else { "off" };
                    nb.name = format!("{} [background={word}]", b.name);
                    nb.parameters.insert("background".into(), word.into());
                    out.push(nb);
                    cache.push(c.clone());
                    mp.background.push(on.then(|| cmd.clone()));
                }
            }
            mp.cache = cache;
            return Ok((out, mp));
        }
        mp.background = vec![None; plans.len()];
        Ok((plans, mp))
    }

    fn plan_cache(
        &self,
        plans: Vec<BenchmarkPlan>,
        input: Option<&PathBuf>,
        mut mp: MeterPlan,
    ) -> anyhow::Result<(Vec<BenchmarkPlan>, MeterPlan)> {
        let Some(spec) = &self.cache else {
            mp.cache = vec![None; plans.len()];
            return Ok((plans, mp));
        };
        let mut states = Vec::new();
        for w in spec.split(',').map(str::trim) {
            let s = match w {
                "cold" => CacheState::Cold,
                "warm" => CacheState::Warm,
                _ => {
                    return Err(usage(format!(
                        "--cache: unknown state '{w}'; use cold, warm or cold,warm"
                    )))
                }
            };
            if !states.contains(&s) {
                states.push(s);
            }
        }
        for f in &self.cache_file {
            std::fs::metadata(f).map_err(|e| {
                usage(format!(
                    "--cache-file: cannot read {}: {e}; name an existing file",
                    f.display()
                ))
            })?;
        }
        let mut out = Vec::new();
        for b in plans {
            let mut files = crate::method::cache::files_of(&b.argv);
            files.extend(input.cloned());
            files.extend(self.cache_file.iter().cloned());
            for &s in &states {
                let mut nb = b.clone();
                if states.len() > 1 {
                    nb.name = format!("{} [cache={}]", b.name, s.as_str());
                    nb.parameters.insert("cache".into(), s.as_str().into());
                }
                out.push(nb);
                mp.cache.push(Some(CachePlan {
                    state: s,
                    files: files.clone(),
                }));
            }
        }
        Ok((out, mp))
    }
}
