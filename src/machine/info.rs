//! What the machine is, for the record of a session: [`collect_info`] fills
//! [`crate::results::MachineInfo`] (hostname, CPU model, CPUs, cores, RAM, kernel, OS,
//! virtualization).
//!
//! For: a few stable facts stored with every session. Not for: the machine's state
//! (frequencies, load, temperatures: see [`super::inventory`] and [`super::probe`]).

use super::procfs::{cpuinfo_field, cpuinfo_has_flag, meminfo_bytes};
use super::sysfs::SysRoot;
use super::topology::{read_topology, Topology};
use crate::results::MachineInfo;

/// Collects the machine's facts. Never fails: what cannot be read is "unknown" or 0.
pub fn collect_info(root: &SysRoot) -> MachineInfo {
    let topo = read_topology(root).ok();
    collect_info_with(root, topo.as_ref())
}

/// [`collect_info`] with an already read topology.
pub fn collect_info_with(root: &SysRoot, topo: Option<&Topology>) -> MachineInfo {
    let cpuinfo = root.read_static("/proc/cpuinfo").unwrap_or_default();
    let meminfo = root.read_raw("/proc/meminfo").unwrap_or_default();
    let (logical_cpus, physical_cores) = match topo {
        Some(t) => (t.cpus.len(), t.cores.len()),
        None => (0, 0),
    };
    MachineInfo {
        hostname: root
            .opt_string("/proc/sys/kernel/hostname")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".into()),
        cpu_model: cpu_model(root, &cpuinfo),
        logical_cpus,
        physical_cores,
        memory_bytes: meminfo_bytes(&meminfo, "MemTotal").unwrap_or(0),
        kernel: root
            .opt_string("/proc/sys/kernel/osrelease")
            .unwrap_or_else(|| "unknown".into()),
        os: os_name(root),
        virtualization: detect_virtualization(root),
    }
}

/// CPU model from /proc/cpuinfo (`model name` on x86, `cpu` on POWER); on arm64, which has no
/// model name, the implementer and part numbers, plus the board model from the device tree.
pub fn cpu_model(root: &SysRoot, cpuinfo: &str) -> String {
    for key in ["model name", "cpu", "Processor", "Hardware"] {
        if let Some(v) = cpuinfo_field(cpuinfo, key).filter(|v| !v.is_empty()) {
            return v.to_string();
        }
    }
    let board = root
        .opt_string("/sys/firmware/devicetree/base/model")
        .map(|s| s.trim_end_matches('\0').to_string());
    let mut parts: Vec<String> = Vec::new();
    if let Some(i) = cpuinfo_field(cpuinfo, "CPU implementer") {
        let mut p: Vec<&str> = Vec::new();
        for line in cpuinfo.lines() {
            if let Some((k, v)) = line.split_once(':') {
                if k.trim() == "CPU part" && !p.contains(&v.trim()) {
                    p.push(v.trim());
                }
            }
        }
        parts.push(format!("CPU implementer {i}, part {}", p.join("/")));
    }
    if let Some(b) = board {
        parts.push(b);
    }
    if parts.is_empty() {
        "unknown".into()
    } else {
        parts.join(", ")
    }
}

/// `PRETTY_NAME` from /etc/os-release (or /usr/lib/os-release).
pub fn os_name(root: &SysRoot) -> String {
    for p in ["/etc/os-release", "/usr/lib/os-release"] {
        if let Ok(s) = root.read_raw(p) {
            for line in s.lines() {
                if let Some(v) = line.strip_prefix("PRETTY_NAME=") {
                    let v = v.trim().trim_matches('"').trim_matches('\'');
                    if !v.is_empty() {
                        return v.to_string();
                    }
                }
            }
        }
    }
    "unknown".into()
}

/// What kind of virtual machine this is, if any: `/sys/hypervisor/type` (Xen), DMI vendor and
/// product (KVM/QEMU, VMware, Hyper-V, VirtualBox, cloud vendors), then the `hypervisor` CPU
/// flag ("vm (hypervisor flag)"). `None` on bare metal as far as these files tell.
pub fn detect_virtualization(root: &SysRoot) -> Option<String> {
    if let Some(t) = root
        .opt_string("/sys/hypervisor/type")
        .filter(|s| !s.is_empty())
    {
        return Some(t);
    }
    let vendor = root
        .opt_string("/sys/class/dmi/id/sys_vendor")
        .unwrap_or_default();
    let product = root
        .opt_string("/sys/class/dmi/id/product_name")
        .unwrap_or_default();
    let both = format!("{vendor} {product}").to_lowercase();
    let known = [
        ("qemu", "kvm"),
        ("kvm", "kvm"),
        ("amazon ec2", "kvm (Amazon EC2)"),
        ("google compute engine", "kvm (Google Compute Engine)"),
        ("openstack", "kvm (OpenStack)"),
        ("vmware", "vmware"),
        ("virtualbox", "virtualbox"),
        ("innotek", "virtualbox"),
        ("xen", "xen"),
        ("parallels", "parallels"),
        ("bochs", "bochs"),
    ];
    for (needle, name) in known {
        if both.contains(needle) {
            return Some(name.to_string());
        }
    }
    if both.contains("microsoft") && both.contains("virtual") {
        return Some("hyperv".into());
    }
    let cpuinfo = root.read_static("/proc/cpuinfo").unwrap_or_default();
    if cpuinfo_has_flag(&cpuinfo, "hypervisor") {
        return Some("vm (hypervisor flag)".into());
    }
    None
}
