//! Thermal zones (`/sys/class/thermal/thermal_zone*`): type, temperature, trip points.
//!
//! For: reading temperatures defensively (some sensors report nonsense; those readings are
//! dropped) and choosing the zones that matter for the CPU. Not for: waiting on them (see
//! [`super::cooldown`]). hwmon sensors (k10temp, coretemp under /sys/class/hwmon) are not read.

use super::sysfs::SysRoot;
use serde::{Deserialize, Serialize};

pub const THERMAL_DIR: &str = "/sys/class/thermal";

/// Readings outside this range (°C) are taken as invalid sensor values.
pub const PLAUSIBLE_C: (f64, f64) = (-40.0, 150.0);

/// One trip point of a zone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TripPoint {
    /// "passive", "active", "hot" or "critical".
    pub kind: String,
    pub temp_c: f64,
}

/// One thermal zone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    /// Directory name, e.g. "thermal_zone1".
    pub name: String,
    /// The `type` file, e.g. "x86_pkg_temp", "acpitz", "soc-thermal".
    pub kind: String,
    /// Current temperature in °C; `None` if unreadable or implausible.
    pub temp_c: Option<f64>,
    /// Trip points with a plausible, non-zero temperature.
    pub trips: Vec<TripPoint>,
    /// Whether this zone is taken to measure the CPU (see [`is_cpu_zone`]).
    pub cpu: bool,
}

/// Parses a millidegree Celsius value; `None` if not a number or implausible.
pub fn parse_millicelsius(s: &str) -> Option<f64> {
    let v: i64 = s.trim().parse().ok()?;
    let c = v as f64 / 1000.0;
    (c >= PLAUSIBLE_C.0 && c <= PLAUSIBLE_C.1).then_some(c)
}

/// Whether a zone type names a CPU/SoC sensor (x86_pkg_temp, cpu*-thermal, soc-thermal, ...).
pub fn is_cpu_zone(kind: &str) -> bool {
    let k = kind.to_lowercase();
    [
        "cpu", "pkg", "soc", "core", "k10temp", "tctl", "tsens", "big", "little",
    ]
    .iter()
    .any(|n| k.contains(n))
}

/// All zones, in number order. A missing directory gives an empty list.
pub fn read_zones(root: &SysRoot) -> Vec<Zone> {
    let mut zones = Vec::new();
    for (_, name) in root.list_numbered(THERMAL_DIR, "thermal_zone") {
        let d = format!("{THERMAL_DIR}/{name}");
        let kind = root
            .opt_string(&format!("{d}/type"))
            .unwrap_or_else(|| "unknown".into());
        let temp_c = root
            .opt_string(&format!("{d}/temp"))
            .and_then(|s| parse_millicelsius(&s));
        let mut trips = Vec::new();
        for i in 0..32 {
            let Some(t) = root.opt_string(&format!("{d}/trip_point_{i}_temp")) else {
                break;
            };
            let kind = root
                .opt_string(&format!("{d}/trip_point_{i}_type"))
                .unwrap_or_else(|| "unknown".into());
            if let Some(c) = parse_millicelsius(&t).filter(|c| *c > 0.0) {
                trips.push(TripPoint { kind, temp_c: c });
            }
        }
        let cpu = is_cpu_zone(&kind);
        zones.push(Zone {
            name,
            kind,
            temp_c,
            trips,
            cpu,
        });
    }
    zones
}

/// Paths (kernel paths, for [`SysRoot`]) of the `temp` files of the zones that matter: the CPU
/// zones if any, else all zones.
pub fn relevant_temp_paths(root: &SysRoot) -> Vec<String> {
    let zones = read_zones(root);
    let any_cpu = zones.iter().any(|z| z.cpu);
    zones
        .into_iter()
        .filter(|z| z.cpu || !any_cpu)
        .map(|z| format!("{THERMAL_DIR}/{}/temp", z.name))
        .collect()
}

/// Highest plausible temperature (°C) among `paths`, reusing `buf`; `None` if none readable.
pub fn hottest(root: &SysRoot, paths: &[String], buf: &mut String) -> Option<f64> {
    let mut best: Option<f64> = None;
    for p in paths {
        if root.read_into(p, buf).is_ok() {
            if let Some(c) = parse_millicelsius(buf) {
                best = Some(best.map_or(c, |b: f64| b.max(c)));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millicelsius() {
        assert_eq!(parse_millicelsius("52000\n"), Some(52.0));
        assert_eq!(parse_millicelsius("-273000"), None);
        assert_eq!(parse_millicelsius("255000"), None);
        assert_eq!(parse_millicelsius(""), None);
        assert!(is_cpu_zone("x86_pkg_temp"));
        assert!(is_cpu_zone("soc-thermal"));
        assert!(!is_cpu_zone("acpitz"));
        assert!(!is_cpu_zone("gpu-thermal"));
    }
}
