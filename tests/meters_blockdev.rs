//! Block-device facts in `tare machine`: this machine's real disks (checked against
//! /sys/block directly) and a synthetic tree shaped like a SCSI SSD's.

mod common;
use common::tare;

use serde_json::Value;

fn machine_json(root: Option<&std::path::Path>) -> Value {
    let mut c = tare();
    if let Some(r) = root {
        c.env("TARE_SYSROOT", r);
    }
    let out = c.args(["machine", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn real_disks_match_sys_block() {
    let v = machine_json(None);
    let disks = v["block_devices"].as_array().unwrap();
    for d in disks {
        let name = d["name"].as_str().unwrap();
        let sched = std::fs::read_to_string(format!("/sys/block/{name}/queue/scheduler"))
            .unwrap_or_default();
        if let Some(active) = d["scheduler"].as_str() {
            assert!(sched.contains(&format!("[{active}]")), "{name}: {sched}");
        }
        let nr = std::fs::read_to_string(format!("/sys/block/{name}/queue/nr_requests"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok());
        assert_eq!(d["nr_requests"].as_u64(), nr, "{name}");
        eprintln!("{d}");
    }
    let text = tare().arg("machine").output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("Block devices"));
}

#[test]
fn synthetic_scsi_ssd_and_unused_loop() {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, v: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{v}\n")).unwrap();
    };
    w("sys/block/sda/size", "1953525168");
    w("sys/block/sda/queue/scheduler", "[none] mq-deadline");
    w("sys/block/sda/queue/nr_requests", "64");
    w("sys/block/sda/queue/rotational", "0");
    w("sys/block/sda/queue/write_cache", "write through");
    w("sys/block/sda/device/queue_depth", "32");
    w("sys/block/loop0/size", "0");
    let v = machine_json(Some(dir.path()));
    let disks = v["block_devices"].as_array().unwrap();
    assert_eq!(disks.len(), 1, "{disks:?}");
    let d = &disks[0];
    assert_eq!(d["name"], "sda");
    assert_eq!(d["size_bytes"], 1953525168u64 * 512);
    assert_eq!(d["scheduler"], "none");
    assert_eq!(d["nr_requests"], 64);
    assert_eq!(d["queue_depth"], 32);
    assert_eq!(d["rotational"], false);
    assert_eq!(d["write_cache"], "write through");
}
