//! `tare run`'s randomized setups: `--randomize`, `--randomize-every`, `--setups`,
//! `--replay-setup`, `--build`, `--build-variants`, `--env-pad-range`, and whether ASLR can
//! be a factor here.
//!
//! For: [`setup_plan`] and [`aslr_usable`] (which `tare bias` uses too). Not for: drawing or
//! applying a setup (`setup`).

use crate::cli::run::args::*;
use crate::error::usage;
use crate::exec;
use crate::setup::{self, Factor, Mode, SetupPlan};
use std::path::Path;

/// The setup plan from --randomize, --randomize-every, --setups, --replay-setup.
pub(super) fn setup_plan(a: &RunArgs, seed: u64) -> anyhow::Result<Option<SetupPlan>> {
    if a.randomize.is_none() && a.replay_setup.is_none() && a.build.is_none() {
        if a.setups.is_some() {
            return Err(usage(
                "--setups needs --randomize FACTORS (e.g. --randomize env,aslr)",
            ));
        }
        return Ok(None);
    }
    let replay = a.replay_setup.as_deref().map(replay_source).transpose()?;
    let factors = match (&a.randomize, &replay) {
        (Some(list), _) => {
            Factor::parse_list(list).map_err(|e| usage(format!("--randomize: {e}")))?
        }
        (None, Some((_, Some(recorded)))) => recorded.factors.clone(),
        (None, Some((_, None))) => {
            return Err(usage(
                "--replay-setup SEED needs the factors the setup was drawn with: repeat its --randomize (e.g. --randomize env,aslr), or give RESULTS.json:SEED to take them from the results",
            ))
        }
        (None, None) => Vec::new(),
    };
    let mut config = setup::Config::new(factors);
    if let (None, Some((_, Some(recorded)))) = (&a.randomize, &replay) {
        config = recorded.clone();
    }
    if let Some(b) = &a.build {
        if !b.contains("{out}") {
            return Err(usage(
                "--build must write to {out}, e.g. --build 'make SEED={seed} OUT={out}'",
            ));
        }
        if a.build_variants == 0 {
            return Err(usage("--build-variants must be at least 1"));
        }
        config.build_variants = Some(a.build_variants);
    }
    if replay.as_ref().is_none_or(|r| r.1.is_none()) || a.env_pad_range != "0:4096" {
        config.env_pad = setup::Range::parse(&a.env_pad_range)
            .map_err(|e| usage(format!("--env-pad-range: {e}")))?;
    }
    if a.randomize_every == 0 {
        return Err(usage("--randomize-every must be at least 1"));
    }
    if config.has(Factor::Aslr) {
        aslr_usable()?;
    }
    let mode = match (replay.as_ref().map(|r| r.0), a.setups) {
        (Some(seed), _) => Mode::Replay { seed },
        (None, Some(0)) => return Err(usage("--setups must be at least 1")),
        (None, Some(n)) => Mode::Pool { setups: n },
        (None, None) => Mode::Fresh,
    };
    Ok(Some(SetupPlan {
        config,
        mode,
        every: a.randomize_every,
        session_seed: seed,
        build: a.build.clone(),
    }))
}

/// `--replay-setup SEED` or `RESULTS.json:SEED`: the seed and, from a results file, the
/// setup configuration it was drawn under (checked to have been used there).
fn replay_source(text: &str) -> anyhow::Result<(u64, Option<setup::Config>)> {
    let (file, seed_text) = match text.rsplit_once(':') {
        Some((f, s)) => (Some(f), s),
        None => (None, text),
    };
    let seed: u64 = seed_text.trim().parse().map_err(|_| {
        usage(format!(
            "--replay-setup '{text}': '{seed_text}' is not a seed; give a run's setup.seed, e.g. --replay-setup results.json:7000116726367251297"
        ))
    })?;
    let Some(file) = file else {
        return Ok((seed, None));
    };
    let body = crate::results::input::read_text(Path::new(file), "--replay-setup: results file")?;
    let doc: serde_json::Value = serde_json::from_str(&body).map_err(|e| {
        usage(format!(
            "--replay-setup: {file} is not a tare results file ({e}); give the --export-json of a run with --randomize"
        ))
    })?;
    let config: setup::Config = doc["extra"]["setups"]["config"]
        .as_object()
        .and_then(|c| serde_json::from_value(serde_json::Value::Object(c.clone())).ok())
        .ok_or_else(|| {
            usage(format!(
                "--replay-setup: {file} records no randomized setups; give the results of a run with --randomize"
            ))
        })?;
    let used = doc["benchmarks"].as_array().into_iter().flatten().any(|b| {
        b["runs"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["extra"]["setup"]["seed"].as_u64() == Some(seed))
    });
    if !used {
        return Err(usage(format!(
            "--replay-setup: no run in {file} has setup seed {seed}; copy a seed from a run's extra.setup.seed"
        )));
    }
    Ok((seed, Some(config)))
}

/// ASLR as a factor needs the kernel to randomize at all and tare to be allowed to turn it off.
pub(crate) fn aslr_usable() -> anyhow::Result<()> {
    let level = std::fs::read_to_string("/proc/sys/kernel/randomize_va_space").unwrap_or_default();
    if level.trim() == "0" {
        return Err(usage(
            "ASLR is off on this machine (kernel.randomize_va_space = 0), so it cannot be a factor; \
             enable it (sysctl kernel.randomize_va_space=2) or leave aslr out",
        ));
    }
    if !exec::sys::can_disable_aslr() {
        return Err(usage(
            "cannot turn ASLR off for runs here (personality(ADDR_NO_RANDOMIZE) is refused, e.g. by a container's seccomp filter); leave aslr out",
        ));
    }
    Ok(())
}
