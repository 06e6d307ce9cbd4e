//! What the machine is and does: topology, probes (frequency, thermal, load, steal), tuning.
//!
//! Every sysfs/procfs file is read through one root (see [`sysfs`]) so tests can point it at a
//! synthetic tree.

pub mod cooldown;
pub mod freq;
pub mod info;
pub mod inventory;
pub mod probe;
pub mod procfs;
pub mod sysfs;
pub mod thermal;
pub mod topology;
pub mod tune;
pub mod warnings;

pub use sysfs::SysRoot;
