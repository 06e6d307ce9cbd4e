//! Block-device facts for `tare machine`: per disk in `/sys/block`, the I/O scheduler, the
//! request queue's depth (`nr_requests`; SCSI devices' `device/queue_depth` too), whether the
//! kernel believes it rotates, its write cache mode and size. For: saying what a storage-bound
//! benchmark ran on (the thesis's measurements change with scheduler and queue depth). Not for:
//! changing any of it, nor measuring the disks.
//!
//! Devices of size 0 (unused loop and zram devices) are left out. The kernel's `rotational`
//! is what the driver says: virtio disks often claim 1 whatever backs them.

use super::sysfs::SysRoot;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// One disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockDevice {
    pub name: String,
    pub size_bytes: u64,
    /// The active scheduler (the bracketed one in `queue/scheduler`).
    pub scheduler: Option<String>,
    /// All schedulers the queue offers.
    pub schedulers: Vec<String>,
    /// `queue/nr_requests`: requests the block layer queues per hardware queue.
    pub nr_requests: Option<u64>,
    /// `device/queue_depth` (SCSI/SATA): commands the device itself takes at once.
    pub queue_depth: Option<u64>,
    pub rotational: Option<bool>,
    /// `queue/write_cache`: `write back` or `write through`.
    pub write_cache: Option<String>,
}

/// Splits `none [mq-deadline] kyber bfq` into the active one and all.
pub fn parse_scheduler(s: &str) -> (Option<String>, Vec<String>) {
    let mut active = None;
    let mut all = Vec::new();
    for w in s.split_whitespace() {
        match w.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
            Some(a) => {
                active = Some(a.to_string());
                all.push(a.to_string());
            }
            None => all.push(w.to_string()),
        }
    }
    (active, all)
}

/// The disks of the machine, by name.
pub fn read(root: &SysRoot) -> Vec<BlockDevice> {
    let Ok(names) = root.list_dir("/sys/block") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for name in names {
        let base = format!("/sys/block/{name}");
        let size = root.opt_u64(&format!("{base}/size")).unwrap_or(0) * 512;
        if size == 0 {
            continue;
        }
        let (scheduler, schedulers) = root
            .opt_string(&format!("{base}/queue/scheduler"))
            .map(|s| parse_scheduler(&s))
            .unwrap_or_default();
        out.push(BlockDevice {
            size_bytes: size,
            scheduler,
            schedulers,
            nr_requests: root.opt_u64(&format!("{base}/queue/nr_requests")),
            queue_depth: root.opt_u64(&format!("{base}/device/queue_depth")),
            rotational: root
                .opt_u64(&format!("{base}/queue/rotational"))
                .map(|r| r == 1),
            write_cache: root
                .opt_string(&format!("{base}/queue/write_cache"))
                .map(|s| s.trim().to_string()),
            name,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The disks as text for `tare machine`.
pub fn render_text(devs: &[BlockDevice]) -> String {
    let mut out = String::from("Block devices\n");
    if devs.is_empty() {
        out.push_str("  none found in /sys/block\n");
        return out;
    }
    for d in devs {
        let _ = writeln!(
            out,
            "  {:<10} {:>10}  scheduler {}  nr_requests {}{}  {}  write cache {}",
            d.name,
            crate::units::format_bytes(d.size_bytes as f64, None),
            d.scheduler.as_deref().unwrap_or("?"),
            d.nr_requests.map_or("?".into(), |n| n.to_string()),
            d.queue_depth
                .map_or(String::new(), |q| format!("  queue depth {q}")),
            match d.rotational {
                Some(true) => "rotational",
                Some(false) => "non-rotational",
                None => "rotational?",
            },
            d.write_cache.as_deref().unwrap_or("?"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::parse_scheduler;

    #[test]
    fn active_scheduler_is_the_bracketed_one() {
        assert_eq!(
            parse_scheduler("none [mq-deadline] kyber bfq\n"),
            (
                Some("mq-deadline".into()),
                vec![
                    "none".into(),
                    "mq-deadline".into(),
                    "kyber".into(),
                    "bfq".into()
                ]
            )
        );
        assert_eq!(
            parse_scheduler("[none] "),
            (Some("none".into()), vec!["none".into()])
        );
        assert_eq!(parse_scheduler("none"), (None, vec!["none".into()]));
    }
}
