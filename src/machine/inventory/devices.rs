//! The inventory's `gpu`, `thermal` and `power` sections: each GPU's clocks, temperature, power
//! and energy counter, each thermal zone against its trip points, and the power supply.
//!
//! For: turning [`Facts`]' device readings into items. Not for: reading them (`machine::gpu`,
//! `machine::thermal`, the power supplies in `mod.rs`) or waiting for a cool-down
//! (`machine::cooldown`).

use super::{Facts, Items, Verdict};

/// One line per GPU (NVML).
pub(super) fn gpu_items(it: &mut Items, f: &Facts) {
    for g in &f.gpus {
        let opt = |v: Option<String>| v.unwrap_or_else(|| "?".into());
        it.push(
            "gpu",
            format!("GPU {} ({})", g.index, g.name),
            format!(
                "SM clock {} MHz, memory clock {} MHz, {} °C, {} W, energy counter {}",
                opt(g.sm_clock_mhz.map(|v| v.to_string())),
                opt(g.mem_clock_mhz.map(|v| v.to_string())),
                opt(g.temperature_c.map(|v| v.to_string())),
                opt(g.power_w.map(|v| format!("{v:.1}"))),
                match g.energy_j {
                    Some(j) => format!("{j:.1} J"),
                    None => "none (runs record no GPU energy)".into(),
                }
            ),
            Verdict::Ok,
            None,
        );
    }
}

/// One line per thermal zone, a warning within 10 °C of a throttling trip point.
pub(super) fn thermal_items(it: &mut Items, f: &Facts) {
    use Verdict::*;
    if f.thermal.is_empty() {
        it.push(
            "thermal",
            "thermal zones",
            "unavailable (no /sys/class/thermal/thermal_zone*)",
            Unknown,
            Some("temperature cannot be watched; cool-down waits are not possible"),
        );
    } else {
        for z in &f.thermal {
            let trips: Vec<String> = z
                .trips
                .iter()
                .map(|t| format!("{} {:.0} °C", t.kind, t.temp_c))
                .collect();
            let temp = z
                .temp_c
                .map(|t| format!("{t:.1} °C"))
                .unwrap_or_else(|| "unreadable".into());
            let value = if trips.is_empty() {
                temp.clone()
            } else {
                format!("{temp} (trips: {})", trips.join(", "))
            };
            let lowest = z
                .trips
                .iter()
                .filter(|t| t.kind != "active")
                .map(|t| t.temp_c)
                .fold(f64::INFINITY, f64::min);
            let (v, adv) = match z.temp_c {
                None => (Unknown, None),
                Some(t) if lowest.is_finite() && t >= lowest - 10.0 => (
                    Warn,
                    Some("within 10 °C of a throttling trip point; let it cool down (--cool-down)"),
                ),
                Some(_) => (Ok, None),
            };
            it.push(
                "thermal",
                format!(
                    "{} ({}{})",
                    z.name,
                    z.kind,
                    if z.cpu { ", cpu" } else { "" }
                ),
                value,
                v,
                adv,
            );
        }
    }
}

/// The power supplies: on battery is a warning.
pub(super) fn power_items(it: &mut Items, f: &Facts) {
    use Verdict::*;
    match f.on_battery() {
        None => it.push(
            "power",
            "power supply",
            "no /sys/class/power_supply entries (server or VM)",
            Unknown,
            None,
        ),
        Some(true) => {
            let b = f.power.iter().find(|p| p.kind == "Battery");
            let cap = b
                .and_then(|b| b.capacity_percent)
                .map(|c| format!(", {c}%"))
                .unwrap_or_default();
            it.push(
                "power",
                "power supply",
                format!(
                    "on battery ({} discharging{cap})",
                    b.map(|b| b.name.as_str()).unwrap_or("?")
                ),
                Warn,
                Some("plug in: on battery the governors and firmware save power"),
            );
        }
        Some(false) => {
            let v: Vec<String> = f
                .power
                .iter()
                .map(|p| {
                    format!(
                        "{} {}{}",
                        p.name,
                        p.kind,
                        match (p.online, &p.status) {
                            (Some(o), _) => format!(" {}", if o { "online" } else { "offline" }),
                            (None, Some(s)) => format!(" {s}"),
                            _ => String::new(),
                        }
                    )
                })
                .collect();
            it.push("power", "power supply", v.join(", "), Ok, None);
        }
    }
}
