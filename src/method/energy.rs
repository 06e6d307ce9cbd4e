//! `--energy` as built-in meters (`method::stages::Meter`) that `tare run` and `tare kernels`
//! both use: RAPL ([`Rapl`], read around each interval) and NVIDIA GPUs ([`Gpu`], a sampler
//! thread whose energies are known only once the intervals are over), with idle power from one
//! quiet window before the first interval.
//!
//! Each meter gives a run its record (`meters.energy`, `meters.energy.gpus`: the fields of
//! docs/meters.md) and an invocation its flat values (`energy.DOMAIN.joules`,
//! `energy.DOMAIN.dynamic_joules`, `gpu_energy.INDEX.joules`, `gpu_energy.INDEX.dynamic_joules`).
//!
//! Not for: reading the counters (`machine::energy`, `machine::gpu_energy`) or comparing
//! energies (`energy_ratio`).

use super::stages::{Meter, Reading, Span};
use crate::machine::energy::EnergyMeter;
use crate::machine::gpu_energy::GpuEnergyMeter;
use crate::machine::sysfs::SysRoot;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The name of the RAPL meter: its record is a run's `meters.energy`.
pub const RAPL: &str = "energy";
/// The name of the GPU meter: its record is a run's `meters.energy.gpus`.
pub const GPU: &str = "gpu_energy";

/// The `--energy` meters of the machine (RAPL, then GPUs), idle power measured over `idle`;
/// where it has neither, the session record that says so.
pub fn meters(
    root: &SysRoot,
    cores: Option<&[usize]>,
    idle: Duration,
) -> Result<Vec<Box<dyn Meter>>, Value> {
    let mut out: Vec<Box<dyn Meter>> = Vec::new();
    if let Some(meter) = EnergyMeter::discover(root) {
        out.push(Box::new(Rapl {
            meter,
            cores: cores.map(<[usize]>::to_vec),
            before: None,
            idle,
        }));
    }
    if let Some(meter) = GpuEnergyMeter::start() {
        out.push(Box::new(Gpu {
            meter: Some(meter),
            spans: Vec::new(),
            idle,
        }));
    }
    if out.is_empty() {
        return Err(
            json!({"available": false, "reason": "no RAPL domains under /sys/class/powercap and no NVIDIA GPU with an energy counter (NVML)"}),
        );
    }
    Ok(out)
}

/// The session's `energy` record: the idle window and what each meter learnt in it.
pub fn session_record(idle: Duration, quiet: Vec<(String, Value)>) -> Value {
    let mut record = json!({"available": true, "idle_seconds": idle.as_secs_f64()});
    for (_, v) in quiet {
        if let Value::Object(o) = v {
            for (k, v) in o {
                record[k] = v;
            }
        }
    }
    record
}

/// RAPL domains read around each interval (`machine::energy`).
pub struct Rapl {
    meter: EnergyMeter,
    /// The cores the measured process may use (`None`: all), for attribution.
    cores: Option<Vec<usize>>,
    before: Option<Vec<Option<u64>>>,
    idle: Duration,
}

impl Meter for Rapl {
    fn name(&self) -> String {
        RAPL.into()
    }
    fn start(&mut self) -> anyhow::Result<()> {
        self.before = Some(self.meter.read());
        Ok(())
    }
    fn stop(&mut self, span: &Span) -> Reading {
        let Some(before) = self.before.take() else {
            return Reading::default();
        };
        let e = self.meter.record(
            &before,
            &self.meter.read(),
            span.wall,
            self.cores.as_deref(),
        );
        let mut values = BTreeMap::new();
        // A subzone (core, uncore, dram) is named after its package where there are several.
        let mut seen = BTreeMap::<&str, usize>::new();
        for d in &e.domains {
            let n = seen.entry(d.name.as_str()).or_default();
            *n += 1;
            let key = if *n == 1 {
                d.name.clone()
            } else {
                format!("{}#{n}", d.name)
            };
            values.insert(format!("{RAPL}.{key}.joules"), d.joules);
            if let Some(x) = d.dynamic_joules {
                values.insert(format!("{RAPL}.{key}.dynamic_joules"), x);
            }
        }
        Reading {
            values,
            record: Some(json!(e)),
        }
    }
    fn wants_quiet(&self) -> Option<Duration> {
        Some(self.idle)
    }
    fn quiet(&mut self, span: &Span) -> Option<Value> {
        let before = self.before.take()?;
        let after = self.meter.read();
        self.meter.set_idle(&before, &after, span.wall);
        Some(json!({"domains": self.meter.domains, "idle_watts": self.meter.idle_watts}))
    }
}

/// NVIDIA GPUs' energy counters, sampled off the intervals' path (`machine::gpu_energy`): an
/// interval's energy is known at [`Meter::finish`].
pub struct Gpu {
    meter: Option<GpuEnergyMeter>,
    spans: Vec<(Instant, Instant, f64)>,
    idle: Duration,
}

impl Meter for Gpu {
    fn name(&self) -> String {
        GPU.into()
    }
    fn start(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
    fn stop(&mut self, span: &Span) -> Reading {
        self.spans.push((span.start, span.end, span.wall));
        Reading::default()
    }
    fn wants_quiet(&self) -> Option<Duration> {
        Some(self.idle)
    }
    fn quiet(&mut self, span: &Span) -> Option<Value> {
        let m = self.meter.as_mut()?;
        m.set_idle(span.start, span.end);
        Some(json!({"gpus": m.info}))
    }
    fn finish(&mut self) -> Vec<Reading> {
        let Some(m) = self.meter.take() else {
            return Vec::new();
        };
        m.finish(&self.spans)
            .into_iter()
            .map(|gpus| {
                let mut values = BTreeMap::new();
                for g in &gpus {
                    values.insert(format!("{GPU}.{}.joules", g.index), g.joules);
                    if let Some(x) = g.dynamic_joules {
                        values.insert(format!("{GPU}.{}.dynamic_joules", g.index), x);
                    }
                }
                Reading {
                    values,
                    record: (!gpus.is_empty()).then(|| json!(gpus)),
                }
            })
            .collect()
    }
}

/// Puts a meter's record into a run's record where `tare run` keeps it: RAPL's as
/// `meters.energy`, the GPUs' as `meters.energy.gpus` (beside RAPL's, or in a record of its
/// own); any other meter's values into `extra.meters`.
pub fn place(run: &mut crate::results::Run, meter: &str, r: Reading) {
    match (meter, r.record) {
        (RAPL, Some(rec)) => run.meters.energy = Some(rec),
        (GPU, Some(gpus)) => {
            let record = run.meters.energy.get_or_insert_with(|| {
                json!({"domains": [], "attributed": false,
                       "note": "no RAPL domains: GPU energy only"})
            });
            record["gpus"] = gpus;
        }
        (RAPL | GPU, None) => {}
        _ if r.values.is_empty() => {}
        _ => {
            let slot = run
                .extra
                .entry("meters".to_string())
                .or_insert_with(|| json!({}));
            for (k, v) in r.values {
                slot[k] = json!(v);
            }
        }
    }
}
