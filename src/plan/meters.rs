//! Which optional meters and controlled factors a session asked for (`--io`, `--cache`, ...).
//! Plain data; `method` and `exec` do the work.

use std::path::PathBuf;

/// The page-cache state every run starts in (`--cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheState {
    /// Dropped before each run.
    Cold,
    /// The named files read (untimed) before each run.
    Warm,
}

impl CacheState {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheState::Cold => "cold",
            CacheState::Warm => "warm",
        }
    }
}

/// `--cache`: the state, and the files whose residency proves it (the program, its
/// libraries, `--input` and `--cache-file` files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachePlan {
    pub state: CacheState,
    pub files: Vec<PathBuf>,
}

/// The optional meters and factors of a session.
#[derive(Debug, Clone, Default)]
pub struct MeterPlan {
    /// What each run measures besides time and memory.
    pub run: crate::exec::Meters,
    /// Cache state per benchmark (index into the plan's benchmarks; `None`: not controlled).
    pub cache: Vec<Option<CachePlan>>,
    /// The `--background` co-runner per benchmark (`None`: the runs without it).
    pub background: Vec<Option<String>>,
    /// How long the co-runner runs before each run's clock starts.
    pub background_lead: std::time::Duration,
    /// Read RAPL energy around each run (`--energy`), after measuring idle power this long.
    pub energy: Option<std::time::Duration>,
}
