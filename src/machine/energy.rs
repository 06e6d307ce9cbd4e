//! Energy from the kernel's powercap interface (RAPL: `package-N`, `core`, `uncore`, `dram`,
//! `psys`), read around each run (`--energy`). For: joules per domain per run, counter
//! wrap-around, idle power measured before the session and the dynamic energy (total − idle
//! power × wall time), and whether the run may be charged with its package's energy. Not for:
//! GPUs (NVML is not read: no GPU on the machines tare is tested on), nor per-process energy
//! (RAPL counts whole packages; the kernel offers nothing finer).
//!
//! Files: `/sys/class/powercap/intel-rapl:N[:M]/{name,energy_uj,max_energy_range_uj}` (AMD
//! CPUs expose theirs under the same names); read through the machine's [`SysRoot`], so tests
//! use synthetic trees. A counter runs from 0 to `max_energy_range_uj` and then starts again
//! at 0: a reading lower than the one before means it wrapped once (a run long enough to wrap
//! twice — about an hour for a 65 W package with the common 262 kJ range — cannot be told
//! apart from one that wrapped once).
//!
//! Attribution: a package's energy is the run's only when the run may use every CPU of the
//! package (its pinned cores cover it, or it is not pinned); otherwise other work shares the
//! package, the record says `attributed: false`, and no dynamic energy is given. Even when
//! attributed, other processes running on the package are counted too (the run probe's
//! "other CPU time" says how much ran).

use super::sysfs::SysRoot;
use serde::{Deserialize, Serialize};

const CLASS: &str = "/sys/class/powercap";

/// One RAPL domain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Domain {
    /// The powercap zone, e.g. `intel-rapl:0:1`.
    pub zone: String,
    /// The kernel's name: `package-0`, `core`, `uncore`, `dram`, `psys`.
    pub name: String,
    /// The package the zone belongs to (`None` for psys, which covers the platform).
    pub package: Option<usize>,
    pub max_energy_range_uj: u64,
}

/// Energy consumed between two readings of a counter that wraps after `max_range` (values
/// 0..=max_range), in microjoules.
pub fn delta_uj(before: u64, after: u64, max_range: u64) -> u64 {
    if after >= before {
        after - before
    } else {
        // Wrapped once: up to the top, then from 0.
        (max_range.saturating_sub(before))
            .saturating_add(after)
            .saturating_add(1)
    }
}

/// The RAPL domains of the machine (empty when there is no powercap interface).
pub fn domains(root: &SysRoot) -> Vec<Domain> {
    let Ok(zones) = root.list_dir(CLASS) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for z in zones {
        // `intel-rapl` itself is the control type; `intel-rapl-mmio:*` repeats package domains.
        let Some(ids) = z.strip_prefix("intel-rapl:") else {
            continue;
        };
        let dir = format!("{CLASS}/{z}");
        let (Some(name), Some(max)) = (
            root.opt_string(&format!("{dir}/name")),
            root.opt_u64(&format!("{dir}/max_energy_range_uj")),
        ) else {
            continue;
        };
        if !root.exists(&format!("{dir}/energy_uj")) {
            continue;
        }
        let package = if name == "psys" {
            None
        } else if let Some(n) = name.strip_prefix("package-") {
            n.parse().ok()
        } else {
            // A subzone's package is its parent's.
            let parent = ids.split(':').next().unwrap_or("");
            root.opt_string(&format!("{CLASS}/intel-rapl:{parent}/name"))
                .and_then(|n| n.strip_prefix("package-")?.parse().ok())
        };
        out.push(Domain {
            zone: z.clone(),
            name: name.trim().to_string(),
            package,
            max_energy_range_uj: max,
        });
    }
    out.sort_by(|a, b| a.zone.cmp(&b.zone));
    out
}

/// The CPUs of each package (`physical_package_id` of every online CPU).
fn package_cpus(root: &SysRoot, package: usize) -> Vec<usize> {
    root.list_numbered("/sys/devices/system/cpu", "cpu")
        .into_iter()
        .filter(|(_, name)| {
            root.opt_u64(&format!(
                "/sys/devices/system/cpu/{name}/topology/physical_package_id"
            )) == Some(package as u64)
        })
        .map(|(i, _)| i)
        .collect()
}

/// The energy meter of a session: its domains and their idle power.
#[derive(Debug, Clone)]
pub struct EnergyMeter {
    root: SysRoot,
    pub domains: Vec<Domain>,
    /// Watts per domain measured before the session (`None` until measured).
    pub idle_watts: Vec<Option<f64>>,
}

/// One run's energy in one domain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DomainEnergy {
    pub name: String,
    /// Joules the domain used during the run (whatever ran on it).
    pub joules: f64,
    /// Joules above the idle power: `joules − idle_watts × wall time`; only when attributed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_joules: Option<f64>,
    /// The counter wrapped during the run (handled).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wrapped: bool,
}

/// One run's energy record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnergy {
    pub domains: Vec<DomainEnergy>,
    /// The run could use every CPU of the packages measured: their energy is charged to it.
    pub attributed: bool,
    /// Why not, or what else is included.
    pub note: String,
}

impl EnergyMeter {
    /// `None` when the machine has no RAPL domains.
    pub fn discover(root: &SysRoot) -> Option<EnergyMeter> {
        let domains = domains(root);
        (!domains.is_empty()).then(|| EnergyMeter {
            root: root.clone(),
            idle_watts: vec![None; domains.len()],
            domains,
        })
    }

    /// The counters now (µJ; `None` for a domain that cannot be read, e.g. not root on
    /// kernels that restrict `energy_uj`).
    pub fn read(&self) -> Vec<Option<u64>> {
        self.domains
            .iter()
            .map(|d| self.root.opt_u64(&format!("{CLASS}/{}/energy_uj", d.zone)))
            .collect()
    }

    /// Idle power from two readings `seconds` apart with nothing measured in between.
    pub fn set_idle(&mut self, before: &[Option<u64>], after: &[Option<u64>], seconds: f64) {
        for (i, d) in self.domains.iter().enumerate() {
            self.idle_watts[i] = match (
                before.get(i).copied().flatten(),
                after.get(i).copied().flatten(),
            ) {
                (Some(b), Some(a)) if seconds > 0.0 => {
                    Some(delta_uj(b, a, d.max_energy_range_uj) as f64 / 1e6 / seconds)
                }
                _ => None,
            };
        }
    }

    /// The record of a run between readings `before` and `after`, `wall` seconds apart, on
    /// `run_cpus` (`None`: not pinned).
    pub fn record(
        &self,
        before: &[Option<u64>],
        after: &[Option<u64>],
        wall: f64,
        run_cpus: Option<&[usize]>,
    ) -> RunEnergy {
        let mut not_owned = Vec::new();
        let packages: std::collections::BTreeSet<usize> =
            self.domains.iter().filter_map(|d| d.package).collect();
        if let Some(cpus) = run_cpus {
            for p in packages {
                let all = package_cpus(&self.root, p);
                if !all.iter().all(|c| cpus.contains(c)) {
                    not_owned.push(p);
                }
            }
        }
        let attributed = not_owned.is_empty();
        let mut out = Vec::new();
        for (i, d) in self.domains.iter().enumerate() {
            let (Some(b), Some(a)) = (
                before.get(i).copied().flatten(),
                after.get(i).copied().flatten(),
            ) else {
                continue;
            };
            let joules = delta_uj(b, a, d.max_energy_range_uj) as f64 / 1e6;
            let mine = attributed
                && d.package
                    .map_or(run_cpus.is_none(), |p| !not_owned.contains(&p));
            out.push(DomainEnergy {
                name: d.name.clone(),
                joules,
                dynamic_joules: if mine {
                    self.idle_watts[i].map(|w| joules - w * wall)
                } else {
                    None
                },
                wrapped: a < b,
            });
        }
        let note = if attributed {
            "whole packages: other processes running on them are included".to_string()
        } else {
            format!(
                "not attributed: the run's cores do not cover package{} {:?}, which also ran other work",
                if not_owned.len() == 1 { "" } else { "s" },
                not_owned
            )
        };
        RunEnergy {
            domains: out,
            attributed,
            note,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::delta_uj;

    #[test]
    fn wrap_around_counts_through_the_top() {
        assert_eq!(delta_uj(100, 250, 1000), 150);
        // 990 → 1000 is 10, 1000 → 0 is 1, 0 → 5 is 5.
        assert_eq!(delta_uj(990, 5, 1000), 16);
        assert_eq!(delta_uj(7, 7, 1000), 0);
    }
}
