//! NVIDIA GPUs through NVML, loaded at run time (no build dependency, nothing needed where there
//! is no GPU): each GPU's name, SM and memory clocks, temperature, power draw and energy counter,
//! for the machine report and for every run's environment (clocks and temperature before and
//! after, energy used during the run where the GPU has a counter — Volta and newer).
//!
//! The library is `libnvidia-ml.so.1` (the driver's), or the file `TARE_NVML_LIB` names (the
//! tests build a fake one). Every NVML call goes through [`Nvml::call`]: the only `unsafe` here.

use serde::{Deserialize, Serialize};

/// NVML's opaque device handle.
type Device = *mut std::ffi::c_void;
type Ret = i32;
const NVML_SUCCESS: Ret = 0;
const NVML_CLOCK_SM: u32 = 1;
const NVML_CLOCK_MEM: u32 = 2;
const NVML_TEMPERATURE_GPU: u32 = 0;

/// One GPU at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuReading {
    pub index: u32,
    pub name: String,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_w: Option<f64>,
    /// Energy since the driver loaded, joules (where the GPU has the counter).
    pub energy_j: Option<f64>,
}

/// What one GPU did during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuDelta {
    pub index: u32,
    pub name: String,
    pub sm_clock_mhz_before: Option<u32>,
    pub sm_clock_mhz_after: Option<u32>,
    pub temperature_c_before: Option<u32>,
    pub temperature_c_after: Option<u32>,
    pub power_w_after: Option<f64>,
    /// Joules the GPU used during the run (energy counter after − before).
    pub energy_j: Option<f64>,
}

/// The loaded library, initialized; shut down when dropped.
pub struct Nvml {
    lib: libloading::Library,
}

impl std::fmt::Debug for Nvml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Nvml")
    }
}

/// The library file to load.
pub fn library_path() -> std::ffi::OsString {
    std::env::var_os("TARE_NVML_LIB")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "libnvidia-ml.so.1".into())
}

impl Nvml {
    /// Loads and initializes NVML; `None` where there is no library or no driver (most
    /// machines), which is not an error.
    pub fn load() -> Option<Nvml> {
        // SAFETY: loading a shared library runs its initializers; NVML's (or the test's fake)
        // are plain C libraries without global constructors that touch tare's state.
        let lib = unsafe { libloading::Library::new(library_path()) }.ok()?;
        let nvml = Nvml { lib };
        (nvml.call0("nvmlInit_v2")? == NVML_SUCCESS).then_some(nvml)
    }

    /// Calls `name() -> nvmlReturn_t`.
    fn call0(&self, name: &str) -> Option<Ret> {
        // SAFETY: the symbol has NVML's documented signature `nvmlReturn_t f(void)`.
        unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn() -> Ret> =
                self.lib.get(name.as_bytes()).ok()?;
            Some(f())
        }
    }

    fn count(&self) -> u32 {
        let mut n = 0u32;
        // SAFETY: nvmlDeviceGetCount_v2(unsigned int *count) writes one u32 into `n`.
        let ok = unsafe {
            self.lib
                .get::<unsafe extern "C" fn(*mut u32) -> Ret>(b"nvmlDeviceGetCount_v2")
                .map(|f| f(&mut n))
        };
        if matches!(ok, Ok(NVML_SUCCESS)) {
            n
        } else {
            0
        }
    }

    fn device(&self, index: u32) -> Option<Device> {
        let mut d: Device = std::ptr::null_mut();
        // SAFETY: nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t *) writes a handle.
        let r = unsafe {
            self.lib
                .get::<unsafe extern "C" fn(u32, *mut Device) -> Ret>(
                    b"nvmlDeviceGetHandleByIndex_v2",
                )
                .ok()?(index, &mut d)
        };
        (r == NVML_SUCCESS).then_some(d)
    }

    fn name(&self, d: Device) -> Option<String> {
        let mut buf = [0u8; 96];
        // SAFETY: nvmlDeviceGetName(nvmlDevice_t, char *name, unsigned int length) writes a
        // NUL-terminated string of at most `length` bytes into `buf`.
        let r = unsafe {
            self.lib
                .get::<unsafe extern "C" fn(Device, *mut u8, u32) -> Ret>(b"nvmlDeviceGetName")
                .ok()?(d, buf.as_mut_ptr(), buf.len() as u32)
        };
        (r == NVML_SUCCESS).then(|| {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).into_owned()
        })
    }

    /// A getter `f(device, [arg,] *out)`.
    fn get_u32(&self, sym: &[u8], d: Device, arg: Option<u32>) -> Option<u32> {
        let mut v = 0u32;
        // SAFETY: the NVML getters used here take (nvmlDevice_t, [unsigned int,] unsigned int *)
        // and write one u32: nvmlDeviceGetClockInfo, nvmlDeviceGetTemperature,
        // nvmlDeviceGetPowerUsage.
        let r = unsafe {
            match arg {
                Some(a) => self
                    .lib
                    .get::<unsafe extern "C" fn(Device, u32, *mut u32) -> Ret>(sym)
                    .ok()?(d, a, &mut v),
                None => self
                    .lib
                    .get::<unsafe extern "C" fn(Device, *mut u32) -> Ret>(sym)
                    .ok()?(d, &mut v),
            }
        };
        (r == NVML_SUCCESS).then_some(v)
    }

    fn energy_mj(&self, d: Device) -> Option<u64> {
        let mut v = 0u64;
        // SAFETY: nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t, unsigned long long *) writes
        // one u64 (millijoules).
        let r = unsafe {
            self.lib
                .get::<unsafe extern "C" fn(Device, *mut u64) -> Ret>(
                    b"nvmlDeviceGetTotalEnergyConsumption",
                )
                .ok()?(d, &mut v)
        };
        (r == NVML_SUCCESS).then_some(v)
    }

    /// Every GPU now.
    pub fn read(&self) -> Vec<GpuReading> {
        (0..self.count())
            .filter_map(|i| {
                let d = self.device(i)?;
                Some(GpuReading {
                    index: i,
                    name: self.name(d).unwrap_or_else(|| format!("GPU {i}")),
                    sm_clock_mhz: self.get_u32(b"nvmlDeviceGetClockInfo", d, Some(NVML_CLOCK_SM)),
                    mem_clock_mhz: self.get_u32(b"nvmlDeviceGetClockInfo", d, Some(NVML_CLOCK_MEM)),
                    temperature_c: self.get_u32(
                        b"nvmlDeviceGetTemperature",
                        d,
                        Some(NVML_TEMPERATURE_GPU),
                    ),
                    power_w: self
                        .get_u32(b"nvmlDeviceGetPowerUsage", d, None)
                        .map(|mw| mw as f64 / 1000.0),
                    energy_j: self.energy_mj(d).map(|mj| mj as f64 / 1000.0),
                })
            })
            .collect()
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        let _ = self.call0("nvmlShutdown");
    }
}

/// What each GPU did between two readings (matched by index).
pub fn delta(before: &[GpuReading], after: &[GpuReading]) -> Vec<GpuDelta> {
    after
        .iter()
        .map(|a| {
            let b = before.iter().find(|b| b.index == a.index);
            GpuDelta {
                index: a.index,
                name: a.name.clone(),
                sm_clock_mhz_before: b.and_then(|b| b.sm_clock_mhz),
                sm_clock_mhz_after: a.sm_clock_mhz,
                temperature_c_before: b.and_then(|b| b.temperature_c),
                temperature_c_after: a.temperature_c,
                power_w_after: a.power_w,
                energy_j: match (b.and_then(|b| b.energy_j), a.energy_j) {
                    (Some(x), Some(y)) if y >= x => Some(y - x),
                    _ => None,
                },
            }
        })
        .collect()
}
