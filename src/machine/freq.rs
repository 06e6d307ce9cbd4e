//! CPU frequency scaling as cpufreq exposes it: driver, governor, limits, current frequency,
//! and turbo/boost controls (intel_pstate `no_turbo`, global `cpufreq/boost` of acpi-cpufreq,
//! per-policy `boost` of amd-pstate since Linux 6.11).
//!
//! For: reading these files into plain structs. Not for: changing them (see [`super::tune`]).
//! All frequencies are in kHz, as the kernel writes them.

use super::sysfs::SysRoot;
use serde::{Deserialize, Serialize};

pub const CPU_DIR: &str = "/sys/devices/system/cpu";

/// cpufreq state of one logical CPU.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuFreq {
    pub cpu: usize,
    pub driver: Option<String>,
    pub governor: Option<String>,
    pub available_governors: Vec<String>,
    pub min_khz: Option<u64>,
    pub max_khz: Option<u64>,
    pub cur_khz: Option<u64>,
    pub hw_min_khz: Option<u64>,
    pub hw_max_khz: Option<u64>,
}

/// Kernel path of a CPU's cpufreq directory.
pub fn cpufreq_dir(cpu: usize) -> String {
    format!("{CPU_DIR}/cpu{cpu}/cpufreq")
}

/// Kernel path of the file holding a CPU's current frequency: `scaling_cur_freq`, or
/// `cpuinfo_cur_freq` (root-only on most drivers) when the first is absent.
pub fn cur_freq_path(root: &SysRoot, cpu: usize) -> Option<String> {
    let d = cpufreq_dir(cpu);
    ["scaling_cur_freq", "cpuinfo_cur_freq"]
        .into_iter()
        .map(|f| format!("{d}/{f}"))
        .find(|p| root.exists(p))
}

/// cpufreq state of `cpu`, or `None` when it has no cpufreq directory.
pub fn read_cpufreq(root: &SysRoot, cpu: usize) -> Option<CpuFreq> {
    let d = cpufreq_dir(cpu);
    if !root.exists(&d) {
        return None;
    }
    let s = |f: &str| {
        root.opt_string(&format!("{d}/{f}"))
            .filter(|v| !v.is_empty())
    };
    let u = |f: &str| root.opt_u64(&format!("{d}/{f}"));
    Some(CpuFreq {
        cpu,
        driver: s("scaling_driver"),
        governor: s("scaling_governor"),
        available_governors: s("scaling_available_governors")
            .map(|v| v.split_ascii_whitespace().map(String::from).collect())
            .unwrap_or_default(),
        min_khz: u("scaling_min_freq"),
        max_khz: u("scaling_max_freq"),
        cur_khz: u("scaling_cur_freq").or_else(|| u("cpuinfo_cur_freq")),
        hw_min_khz: u("cpuinfo_min_freq"),
        hw_max_khz: u("cpuinfo_max_freq"),
    })
}

/// One control that turns turbo/boost on or off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurboControl {
    /// Kernel path of the file.
    pub path: String,
    /// What is in it now (trimmed).
    pub value: String,
    /// What to write to turn turbo off.
    pub off_value: String,
    /// Whether turbo is on according to this file.
    pub on: bool,
}

/// Turbo/boost controls present on this machine: intel_pstate `no_turbo`, the global
/// `cpufreq/boost`, and per-policy `cpufreq/policy*/boost`.
pub fn turbo_controls(root: &SysRoot) -> Vec<TurboControl> {
    let mut out = Vec::new();
    let no_turbo = format!("{CPU_DIR}/intel_pstate/no_turbo");
    if let Some(v) = root.opt_string(&no_turbo) {
        out.push(TurboControl {
            on: v == "0",
            path: no_turbo,
            value: v,
            off_value: "1".into(),
        });
    }
    let boost = format!("{CPU_DIR}/cpufreq/boost");
    if let Some(v) = root.opt_string(&boost) {
        out.push(TurboControl {
            on: v == "1",
            path: boost,
            value: v,
            off_value: "0".into(),
        });
    }
    for (_, name) in root.list_numbered(&format!("{CPU_DIR}/cpufreq"), "policy") {
        let p = format!("{CPU_DIR}/cpufreq/{name}/boost");
        if let Some(v) = root.opt_string(&p) {
            out.push(TurboControl {
                on: v == "1",
                path: p,
                value: v,
                off_value: "0".into(),
            });
        }
    }
    out
}

/// cpufreq policy directories (`cpufreq/policyN`), as kernel paths; empty when there are none.
pub fn policies(root: &SysRoot) -> Vec<String> {
    root.list_numbered(&format!("{CPU_DIR}/cpufreq"), "policy")
        .into_iter()
        .map(|(_, n)| format!("{CPU_DIR}/cpufreq/{n}"))
        .collect()
}

/// Formats kHz as MHz or GHz: `2601000` → "2.601 GHz".
pub fn format_khz(khz: u64) -> String {
    if khz >= 1_000_000 {
        let s = format!("{:.3}", khz as f64 / 1e6);
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s} GHz")
    } else {
        format!("{} MHz", khz / 1000)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn khz() {
        assert_eq!(super::format_khz(2601000), "2.601 GHz");
        assert_eq!(super::format_khz(4700000), "4.7 GHz");
        assert_eq!(super::format_khz(400000), "400 MHz");
    }
}
