//! NVIDIA GPUs through NVML, loaded at run time (no build dependency, nothing needed where there
//! is no GPU): each GPU's name, SM and memory clocks, temperature, power draw and energy counter,
//! for the machine report, for every run's environment (clocks, temperature and power before
//! and after: microseconds a GPU) and for the GPU energy meter (`machine::gpu_energy`, the only
//! reader of the energy counter during runs: a read costs milliseconds).
//!
//! The library is `libnvidia-ml.so.1` (the driver's), or the file `TARE_NVML_LIB` names (the
//! tests build a fake one). Entry points and GPU handles are looked up once at load; the
//! `unsafe` here is the calls through them, each with the signature NVML documents.

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
    /// Joules the GPU used between the readings (energy counter after − before), where both
    /// readings had the counter; a run's environment has none (the counter is the GPU energy
    /// meter's, `--energy`: see `machine::gpu_energy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
}

type FnVoid = unsafe extern "C" fn() -> Ret;
type FnCount = unsafe extern "C" fn(*mut u32) -> Ret;
type FnHandle = unsafe extern "C" fn(u32, *mut Device) -> Ret;
type FnName = unsafe extern "C" fn(Device, *mut u8, u32) -> Ret;
type FnGetArg = unsafe extern "C" fn(Device, u32, *mut u32) -> Ret;
type FnGet = unsafe extern "C" fn(Device, *mut u32) -> Ret;
type FnEnergy = unsafe extern "C" fn(Device, *mut u64) -> Ret;
type FnSetClocks = unsafe extern "C" fn(Device, u32, u32) -> Ret;

/// NVML's entry points, looked up once at load (a symbol lookup per call cost more than some
/// of the calls). Each is `None` where the library lacks it.
struct Fns {
    shutdown: Option<FnVoid>,
    name: Option<FnName>,
    clock: Option<FnGetArg>,
    temperature: Option<FnGetArg>,
    power: Option<FnGet>,
    energy: Option<FnEnergy>,
    applications_clock: Option<FnGetArg>,
    max_clock: Option<FnGetArg>,
    set_applications_clocks: Option<FnSetClocks>,
}

/// The loaded library, initialized, with its GPUs' handles resolved once; shut down when
/// dropped.
pub struct Nvml {
    fns: Fns,
    /// (index, handle as an address, name) of every GPU, found at load.
    devices: Vec<(u32, usize, String)>,
    // Last: the entry points above point into it, so it is dropped after them.
    _lib: libloading::Library,
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

/// `lib`'s symbol `name` as a function pointer of type `T`.
///
/// # Safety
/// `T` must be the symbol's C signature, and the pointer must not be called after `lib` is
/// unloaded.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, name: &[u8]) -> Option<T> {
    // SAFETY: the caller names the signature; copying the pointer out of the `Symbol` is
    // allowed while the library stays loaded (the caller's promise).
    unsafe { lib.get::<T>(name).ok().map(|s| *s) }
}

impl Nvml {
    /// Loads and initializes NVML and finds its GPUs; `None` where there is no library or no
    /// driver (most machines), which is not an error.
    pub fn load() -> Option<Nvml> {
        // SAFETY: loading a shared library runs its initializers; NVML's (or the test's fake)
        // are plain C libraries without global constructors that touch tare's state.
        let lib = unsafe { libloading::Library::new(library_path()) }.ok()?;
        // SAFETY (every `symbol` call below): each type is the documented signature of the
        // NVML function of that name; the pointers live in `Nvml` beside `lib`, which is
        // dropped last.
        let (init, count, handle, fns) = unsafe {
            (
                symbol::<FnVoid>(&lib, b"nvmlInit_v2")?,
                symbol::<FnCount>(&lib, b"nvmlDeviceGetCount_v2"),
                symbol::<FnHandle>(&lib, b"nvmlDeviceGetHandleByIndex_v2"),
                Fns {
                    shutdown: symbol(&lib, b"nvmlShutdown"),
                    name: symbol(&lib, b"nvmlDeviceGetName"),
                    clock: symbol(&lib, b"nvmlDeviceGetClockInfo"),
                    temperature: symbol(&lib, b"nvmlDeviceGetTemperature"),
                    power: symbol(&lib, b"nvmlDeviceGetPowerUsage"),
                    energy: symbol(&lib, b"nvmlDeviceGetTotalEnergyConsumption"),
                    applications_clock: symbol(&lib, b"nvmlDeviceGetApplicationsClock"),
                    max_clock: symbol(&lib, b"nvmlDeviceGetMaxClockInfo"),
                    set_applications_clocks: symbol(&lib, b"nvmlDeviceSetApplicationsClocks"),
                },
            )
        };
        // SAFETY: nvmlInit_v2(void) takes nothing.
        if unsafe { init() } != NVML_SUCCESS {
            return None;
        }
        let mut nvml = Nvml {
            fns,
            devices: Vec::new(),
            _lib: lib,
        };
        let mut n = 0u32;
        // SAFETY: nvmlDeviceGetCount_v2(unsigned int *count) writes one u32 into `n`.
        if count.map(|f| unsafe { f(&mut n) }) != Some(NVML_SUCCESS) {
            n = 0;
        }
        for i in 0..n {
            let mut d: Device = std::ptr::null_mut();
            // SAFETY: nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t *) writes one
            // handle into `d`.
            if handle.map(|f| unsafe { f(i, &mut d) }) == Some(NVML_SUCCESS) {
                let name = nvml.name(d).unwrap_or_else(|| format!("GPU {i}"));
                nvml.devices.push((i, d as usize, name));
            }
        }
        Some(nvml)
    }

    fn device(&self, index: u32) -> Option<Device> {
        self.devices
            .iter()
            .find(|(i, _, _)| *i == index)
            .map(|(_, d, _)| *d as Device)
    }

    /// The GPUs, as (index, name).
    pub fn gpus(&self) -> Vec<(u32, String)> {
        self.devices
            .iter()
            .map(|(i, _, n)| (*i, n.clone()))
            .collect()
    }

    fn name(&self, d: Device) -> Option<String> {
        let mut buf = [0u8; 96];
        // SAFETY: nvmlDeviceGetName(nvmlDevice_t, char *name, unsigned int length) writes a
        // NUL-terminated string of at most `length` bytes into `buf`.
        let r = unsafe { self.fns.name?(d, buf.as_mut_ptr(), buf.len() as u32) };
        (r == NVML_SUCCESS).then(|| {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).into_owned()
        })
    }

    /// A getter `f(device, arg, *out)` that writes one u32.
    fn get_arg(f: Option<FnGetArg>, d: Device, arg: u32) -> Option<u32> {
        let mut v = 0u32;
        // SAFETY: the NVML getters passed here take (nvmlDevice_t, unsigned int, unsigned int
        // *) and write one u32: nvmlDeviceGetClockInfo, nvmlDeviceGetTemperature,
        // nvmlDeviceGetApplicationsClock, nvmlDeviceGetMaxClockInfo.
        let r = unsafe { f?(d, arg, &mut v) };
        (r == NVML_SUCCESS).then_some(v)
    }

    /// Power draw now, watts (what the driver reports: on recent GPUs an average over about
    /// a second).
    pub fn power_w(&self, index: u32) -> Option<f64> {
        let d = self.device(index)?;
        let mut mw = 0u32;
        // SAFETY: nvmlDeviceGetPowerUsage(nvmlDevice_t, unsigned int *) writes one u32 (mW).
        let r = unsafe { self.fns.power?(d, &mut mw) };
        (r == NVML_SUCCESS).then(|| mw as f64 / 1000.0)
    }

    /// The energy counter, millijoules since the driver loaded (Volta and newer). Slow: a
    /// read took 3 ms (up to 18) on an H200, so it is read off the runs' path only.
    pub fn energy_mj(&self, index: u32) -> Option<u64> {
        let d = self.device(index)?;
        let mut v = 0u64;
        // SAFETY: nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t, unsigned long long *)
        // writes one u64 (millijoules).
        let r = unsafe { self.fns.energy?(d, &mut v) };
        (r == NVML_SUCCESS).then_some(v)
    }

    /// Clocks of a kind by getter, as (memory, SM) MHz.
    fn clock_pair(&self, f: Option<FnGetArg>, index: u32) -> Option<(u32, u32)> {
        let d = self.device(index)?;
        Some((
            Self::get_arg(f, d, NVML_CLOCK_MEM)?,
            Self::get_arg(f, d, NVML_CLOCK_SM)?,
        ))
    }

    /// The application clocks a GPU runs kernels at, (memory, SM) MHz.
    pub fn applications_clocks(&self, index: u32) -> Option<(u32, u32)> {
        self.clock_pair(self.fns.applications_clock, index)
    }

    /// The highest clocks a GPU supports, (memory, SM) MHz.
    pub fn max_clocks(&self, index: u32) -> Option<(u32, u32)> {
        self.clock_pair(self.fns.max_clock, index)
    }

    /// Sets a GPU's application clocks (root; the driver checks the pair is supported).
    pub fn set_applications_clocks(&self, index: u32, mem: u32, sm: u32) -> Result<(), String> {
        let d = self
            .device(index)
            .ok_or_else(|| format!("no GPU {index}"))?;
        let f = self
            .fns
            .set_applications_clocks
            .ok_or("NVML has no nvmlDeviceSetApplicationsClocks")?;
        // SAFETY: nvmlDeviceSetApplicationsClocks(nvmlDevice_t, unsigned int memClockMHz,
        // unsigned int graphicsClockMHz) takes values only.
        let r = unsafe { f(d, mem, sm) };
        if r == NVML_SUCCESS {
            Ok(())
        } else {
            Err(format!(
                "NVML error {r} setting application clocks {mem},{sm} MHz"
            ))
        }
    }

    /// Every GPU now, the energy counter included (for the machine report).
    pub fn read(&self) -> Vec<GpuReading> {
        self.read_with(true)
    }

    /// Every GPU's clocks, temperature and power now, without the energy counter: the
    /// microseconds-cheap reading every run's environment takes.
    pub fn read_cheap(&self) -> Vec<GpuReading> {
        self.read_with(false)
    }

    fn read_with(&self, energy: bool) -> Vec<GpuReading> {
        self.devices
            .iter()
            .map(|(i, d, name)| {
                let d = *d as Device;
                GpuReading {
                    index: *i,
                    name: name.clone(),
                    sm_clock_mhz: Self::get_arg(self.fns.clock, d, NVML_CLOCK_SM),
                    mem_clock_mhz: Self::get_arg(self.fns.clock, d, NVML_CLOCK_MEM),
                    temperature_c: Self::get_arg(self.fns.temperature, d, NVML_TEMPERATURE_GPU),
                    power_w: self.power_w(*i),
                    energy_j: if energy {
                        self.energy_mj(*i).map(|mj| mj as f64 / 1000.0)
                    } else {
                        None
                    },
                }
            })
            .collect()
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        if let Some(f) = self.fns.shutdown {
            // SAFETY: nvmlShutdown(void) takes nothing; the library is still loaded.
            unsafe { f() };
        }
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
