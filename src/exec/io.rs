//! The I/O meter of one run (`--io`): bytes and operations at the block layer for the whole
//! tree, bytes at the system-call level for the waited-for processes, and dirty data left
//! behind. Not for limits or throttling: tare never slows a run's I/O.
//!
//! Block layer, cgroup v1: a `blkio` group of tare's own (made once, reused run after run like
//! the cpuacct group) that the child joins with its other groups; the run's bytes and
//! operations are the deltas of `blkio.throttle.io_service_bytes` / `io_serviced` across it.
//! Since Linux 6.10 the throttle layer (and with it those counters) is set up on a disk's queue
//! only once some group has a throttle rule on it, so tare gives its own group a rule far
//! above any device's speed (1 PiB/s) for every disk in `/sys/block`: nothing is slowed, and
//! the counters count. The `blkio.bfq.*` files count only under the bfq scheduler, so they are
//! not used. Writes are charged to the group of the task that submits them: data written back
//! by the flusher threads after the run (no fsync) is charged to the root group and is not in
//! the run's numbers — that is what `dirty_left_bytes` flags.
//!
//! Block layer, cgroup v2: `io.stat` of the run group (`rbytes`, `wbytes`, `rios`, `wios`),
//! when the io controller is enabled there; tare does not enable it yet (see docs/meters.md).
//!
//! System calls: `/proc/PID/io` of the main process read after it exited and before it is
//! reaped: it then holds its own counts and those of every descendant it waited for (the
//! kernel adds a reaped child's counts to its parent). Children that were not waited for are
//! not in it — unlike the block-layer numbers. There is no per-cgroup syscall counter.

use super::cgroup::{
    cgroup_mounts, group_name, lease, own_cgroup, read_small, remove_dir_retrying, ControlFile,
};
use crate::results::RunIo;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

/// A throttle rule no device reaches: it only switches the counters on.
const NO_LIMIT_BPS: u64 = 1 << 50;

/// Block-layer counts (bytes, operations), read and write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockCounts {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ops: u64,
    pub write_ops: u64,
}

impl BlockCounts {
    fn since(self, before: BlockCounts) -> BlockCounts {
        BlockCounts {
            read_bytes: self.read_bytes.saturating_sub(before.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(before.write_bytes),
            read_ops: self.read_ops.saturating_sub(before.read_ops),
            write_ops: self.write_ops.saturating_sub(before.write_ops),
        }
    }
}

/// Sums the `Read` and `Write` lines over all devices of a v1 blkio "rwstat" file
/// (`MAJ:MIN Read N`, ..., `Total N`).
pub fn parse_v1_rwstat(text: &str) -> (u64, u64) {
    let (mut r, mut w) = (0u64, 0u64);
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(dev), Some(op), Some(n)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if !dev.contains(':') {
            continue;
        }
        let Ok(n) = n.parse::<u64>() else { continue };
        match op {
            "Read" => r = r.saturating_add(n),
            "Write" => w = w.saturating_add(n),
            _ => {}
        }
    }
    (r, w)
}

/// Sums a cgroup v2 `io.stat` (`MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N`)
/// over its devices.
pub fn parse_v2_io_stat(text: &str) -> BlockCounts {
    let mut c = BlockCounts::default();
    for line in text.lines() {
        for kv in line.split_whitespace().skip(1) {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let Ok(v) = v.parse::<u64>() else { continue };
            let slot = match k {
                "rbytes" => &mut c.read_bytes,
                "wbytes" => &mut c.write_bytes,
                "rios" => &mut c.read_ops,
                "wios" => &mut c.write_ops,
                _ => continue,
            };
            *slot = slot.saturating_add(v);
        }
    }
    c
}

/// The counters of `/proc/PID/io`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcIo {
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub cancelled_write_bytes: u64,
}

/// Parses `/proc/PID/io` (`rchar: N` lines); missing keys are 0.
pub fn parse_proc_io(text: &str) -> ProcIo {
    let mut p = ProcIo::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let Ok(v) = v.trim().parse::<u64>() else {
            continue;
        };
        match k.trim() {
            "rchar" => p.rchar = v,
            "wchar" => p.wchar = v,
            "syscr" => p.syscr = v,
            "syscw" => p.syscw = v,
            "read_bytes" => p.read_bytes = v,
            "write_bytes" => p.write_bytes = v,
            "cancelled_write_bytes" => p.cancelled_write_bytes = v,
            _ => {}
        }
    }
    p
}

/// Dirty plus under-writeback page cache from a `memory.stat` (v1 `dirty` + `writeback`, v2
/// `file_dirty` + `file_writeback`), in bytes; `None` when the file has neither.
pub fn dirty_from_memory_stat(text: &str) -> Option<u64> {
    let get = |key: &str| super::cgroup::keyed_value(text, key);
    match (get("file_dirty"), get("file_writeback")) {
        (Some(d), w) => Some(d + w.unwrap_or(0)),
        (None, _) => match (get("dirty"), get("writeback")) {
            (Some(d), w) => Some(d + w.unwrap_or(0)),
            (None, _) => None,
        },
    }
}

/// tare's blkio group under cgroup v1, reused by every run of the session.
pub struct BlkioGroup {
    path: PathBuf,
    procs: File,
    bytes: ControlFile,
    ops: ControlFile,
    /// The disks given a rule, taken off again when the group goes.
    devices: Vec<String>,
}

impl BlkioGroup {
    /// Makes the group below tare's own blkio cgroup and switches its counters on; `None`
    /// when there is no v1 blkio hierarchy (the error says why when there is one but it is
    /// unusable).
    pub fn create(root: &Path) -> io::Result<Option<BlkioGroup>> {
        let mounts = cgroup_mounts(root)?;
        let Some(mount) = mounts
            .iter()
            .find(|(fs, _, opts)| fs == "cgroup" && opts.split(',').any(|o| o == "blkio"))
            .map(|(_, mp, _)| mp.clone())
        else {
            return Ok(None);
        };
        let own = own_cgroup(root, Some("blkio"))?;
        let parent = root
            .join(mount.trim_start_matches('/'))
            .join(own.trim_start_matches('/'));
        lease::sweep(&parent);
        let path = parent.join(group_name());
        std::fs::create_dir(&path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create cgroup {}: {e}", path.display()),
            )
        })?;
        let devices = block_devices(root);
        let made = (|| {
            for dev in &devices {
                for f in [
                    "blkio.throttle.read_bps_device",
                    "blkio.throttle.write_bps_device",
                ] {
                    // A device without a request queue refuses; it has nothing to count.
                    let _ = std::fs::write(path.join(f), format!("{dev} {NO_LIMIT_BPS}"));
                }
            }
            Ok::<_, io::Error>(BlkioGroup {
                procs: crate::exec::cgroup::v1::open_join(&path)?,
                bytes: ControlFile::open(path.join("blkio.throttle.io_service_bytes"))?,
                ops: ControlFile::open(path.join("blkio.throttle.io_serviced"))?,
                path: path.clone(),
                devices: devices.clone(),
            })
        })();
        if made.is_err() {
            let _ = remove_dir_retrying(&path);
        }
        made.map(Some)
    }

    /// The `tasks` file the child writes `0` into before exec (see `cgroup::v1::open_join`).
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// The group's counters so far.
    pub fn read(&self) -> io::Result<BlockCounts> {
        let mut buf = vec![0u8; 16 * 1024];
        let (read_bytes, write_bytes) = parse_v1_rwstat(self.bytes.read(&mut buf)?);
        let (read_ops, write_ops) = parse_v1_rwstat(self.ops.read(&mut buf)?);
        Ok(BlockCounts {
            read_bytes,
            write_bytes,
            read_ops,
            write_ops,
        })
    }
}

impl Drop for BlkioGroup {
    fn drop(&mut self) {
        for dev in &self.devices {
            for f in [
                "blkio.throttle.read_bps_device",
                "blkio.throttle.write_bps_device",
            ] {
                let _ = std::fs::write(self.path.join(f), format!("{dev} 0"));
            }
        }
        let _ = remove_dir_retrying(&self.path);
    }
}

/// `MAJ:MIN` of every disk in `/sys/block` (partitions are counted in their disk).
pub fn block_devices(root: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(root.join("sys/block")) else {
        return Vec::new();
    };
    let mut out: Vec<String> = rd
        .flatten()
        .filter_map(|e| read_small(&e.path().join("dev")).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| s.contains(':'))
        .collect();
    out.sort();
    out
}

/// What one run's I/O meter started from.
pub struct IoStart {
    block: Option<BlockCounts>,
}

/// Reads the block counters before the run (nothing when there is no block source).
pub fn start(blkio: Option<&BlkioGroup>) -> IoStart {
    IoStart {
        block: blkio.and_then(|g| g.read().ok()),
    }
}

/// `/proc/PID/io` of the exited, not yet reaped main process (`None` when unreadable).
pub fn proc_io(pid: i32) -> Option<ProcIo> {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .map(|t| parse_proc_io(&t))
}

/// The run's record: block counters since `start` (v1) or the v2 group's `io.stat`, the
/// main process's syscall counts, and the dirty data in `memory_stat` (the run's memory
/// group's `memory.stat`) at the end.
pub fn finish(
    start: IoStart,
    blkio: Option<&BlkioGroup>,
    v2_io_stat: Option<&Path>,
    proc: Option<ProcIo>,
    memory_stat: Option<&Path>,
) -> RunIo {
    let mut io = RunIo::default();
    let block = match (start.block, blkio) {
        (Some(before), Some(g)) => g
            .read()
            .ok()
            .map(|now| ("cgroup v1 blkio.throttle", now.since(before))),
        _ => v2_io_stat
            .and_then(|p| read_small(p).ok())
            .map(|t| ("cgroup v2 io.stat", parse_v2_io_stat(&t))),
    };
    if let Some((source, c)) = block {
        io.block_source = Some(source.into());
        io.block_read_bytes = Some(c.read_bytes);
        io.block_write_bytes = Some(c.write_bytes);
        io.block_read_ops = Some(c.read_ops);
        io.block_write_ops = Some(c.write_ops);
    }
    if let Some(p) = proc {
        io.syscall_read_bytes = Some(p.rchar);
        io.syscall_write_bytes = Some(p.wchar);
        io.syscall_reads = Some(p.syscr);
        io.syscall_writes = Some(p.syscw);
        io.storage_read_bytes = Some(p.read_bytes);
        io.storage_write_bytes = Some(p.write_bytes.saturating_sub(p.cancelled_write_bytes));
    }
    io.dirty_left_bytes = memory_stat
        .and_then(|p| read_small(p).ok())
        .and_then(|t| dirty_from_memory_stat(&t));
    io
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_rwstat_sums_devices_and_skips_totals() {
        let t = "254:0 Read 54013952\n254:0 Write 52469760\n254:0 Sync 106483712\n\
                 254:0 Async 0\n254:0 Discard 0\n254:0 Total 106483712\n\
                 8:0 Read 4096\n8:0 Write 0\nTotal 106487808\n";
        assert_eq!(parse_v1_rwstat(t), (54013952 + 4096, 52469760));
        assert_eq!(parse_v1_rwstat("Total 0\n"), (0, 0));
    }

    #[test]
    fn v2_io_stat_sums_devices() {
        let t = "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n\
                 254:0 rbytes=100 wbytes=200 rios=1 wios=2 dbytes=0 dios=0\n";
        assert_eq!(
            parse_v2_io_stat(t),
            BlockCounts {
                read_bytes: 1459300,
                write_bytes: 314773704,
                read_ops: 193,
                write_ops: 355
            }
        );
    }

    #[test]
    fn proc_io_and_dirty() {
        let t = "rchar: 10\nwchar: 52428800\nsyscr: 3\nsyscw: 50\nread_bytes: 0\n\
                 write_bytes: 52428800\ncancelled_write_bytes: 4096\n";
        let p = parse_proc_io(t);
        assert_eq!((p.rchar, p.wchar, p.syscw), (10, 52428800, 50));
        assert_eq!(p.cancelled_write_bytes, 4096);
        assert_eq!(
            dirty_from_memory_stat("cache 1\ndirty 8192\nwriteback 4096\n"),
            Some(12288)
        );
        assert_eq!(
            dirty_from_memory_stat("file 1\nfile_dirty 4096\nfile_writeback 0\n"),
            Some(4096)
        );
        assert_eq!(dirty_from_memory_stat("cache 1\n"), None);
    }
}
