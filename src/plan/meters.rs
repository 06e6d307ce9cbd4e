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

/// The controlled factors a session was given (`--cache`, `--background`), the same for
/// `tare run` (a unit is a command) and `tare kernels` (a unit is a program): every unit is
/// measured at each of their [`Level`]s, as a unit of its own, interleaved in rounds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Factors {
    /// The page-cache states (none: not controlled).
    pub cache: Vec<CacheState>,
    /// Files whose state `--cache` controls besides each unit's own (`--cache-file`).
    pub cache_files: Vec<PathBuf>,
    /// The co-runner (`--background`): each unit measured without it and with it.
    pub background: Option<String>,
    /// How long the co-runner runs before each interval starts.
    pub background_lead: std::time::Duration,
}

/// One unit's level of the factors: the part of its name that says it (` [cache=cold]`), its
/// parameters, and what is done for it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Level {
    /// Appended to the unit's name; empty where there is one level.
    pub suffix: String,
    /// `cache` and `background` as benchmark parameters, where they vary.
    pub parameters: Vec<(String, String)>,
    pub cache: Option<CachePlan>,
    /// The co-runner's command line, at the `on` level.
    pub background: Option<String>,
    /// At the `off` level: the co-runner's lead waited all the same, with no co-runner, so
    /// both levels start their intervals after the same pause and differ by the co-runner
    /// alone (a pause alone changed a run by 6–56% on this VM).
    pub lead_alone: bool,
}

impl Factors {
    /// Whether there is a factor at all.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty() && self.background.is_none()
    }

    /// The levels of a unit whose own files (program, libraries, input) are `files`: every
    /// cache state crossed with background off and on, in that order; one plain level when no
    /// factor was given. A factor with one value is applied without a name or parameter.
    pub fn levels(&self, files: &[PathBuf]) -> Vec<Level> {
        let mut all = files.to_vec();
        all.extend(self.cache_files.iter().cloned());
        let cache: Vec<Option<CacheState>> = if self.cache.is_empty() {
            vec![None]
        } else {
            self.cache.iter().copied().map(Some).collect()
        };
        let background: Vec<Option<&String>> = match &self.background {
            None => vec![None],
            Some(cmd) => vec![None, Some(cmd)],
        };
        let mut out = Vec::new();
        for c in &cache {
            for b in &background {
                let mut level = Level {
                    cache: c.map(|state| CachePlan {
                        state,
                        files: all.clone(),
                    }),
                    background: b.cloned(),
                    lead_alone: self.background.is_some() && b.is_none(),
                    ..Level::default()
                };
                if let (Some(c), true) = (c, cache.len() > 1) {
                    level.parameters.push(("cache".into(), c.as_str().into()));
                }
                if self.background.is_some() {
                    let word = if b.is_some() { "on" } else { "off" };
                    level.parameters.push(("background".into(), word.into()));
                }
                level.suffix = level
                    .parameters
                    .iter()
                    .map(|(k, v)| format!(" [{k}={v}]"))
                    .collect();
                out.push(level);
            }
        }
        out
    }
}

/// The optional meters and factors of a session.
#[derive(Debug, Clone, Default)]
pub struct MeterPlan {
    /// What each run measures besides time and memory.
    pub run: crate::exec::Meters,
    /// Each benchmark's level of the factors (index into the plan's benchmarks; empty when
    /// there are none).
    pub levels: Vec<Level>,
    /// How long the co-runner runs before each run's clock starts.
    pub background_lead: std::time::Duration,
    /// Read RAPL energy around each run (`--energy`), after measuring idle power this long.
    pub energy: Option<std::time::Duration>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_cross_cache_states_with_background() {
        let none = Factors::default();
        assert_eq!(none.levels(&[]), vec![Level::default()]);
        let f = Factors {
            cache: vec![CacheState::Cold, CacheState::Warm],
            cache_files: vec![PathBuf::from("/data")],
            background: Some("yes".into()),
            ..Factors::default()
        };
        let l = f.levels(&[PathBuf::from("/bin/prog")]);
        let names: Vec<&str> = l.iter().map(|l| l.suffix.as_str()).collect();
        assert_eq!(
            names,
            [
                " [cache=cold] [background=off]",
                " [cache=cold] [background=on]",
                " [cache=warm] [background=off]",
                " [cache=warm] [background=on]"
            ]
        );
        assert_eq!(l[1].background.as_deref(), Some("yes"));
        assert_eq!(l[2].background, None);
        assert!(l[2].lead_alone && !l[1].lead_alone);
        let c = l[3].cache.as_ref().unwrap();
        assert_eq!(c.state, CacheState::Warm);
        assert_eq!(
            c.files,
            [PathBuf::from("/bin/prog"), PathBuf::from("/data")]
        );
        // One state: controlled, but neither named nor a parameter.
        let cold = Factors {
            cache: vec![CacheState::Cold],
            ..Factors::default()
        };
        let l = cold.levels(&[]);
        assert_eq!(l.len(), 1);
        assert!(l[0].suffix.is_empty() && l[0].parameters.is_empty());
        assert!(l[0].cache.is_some());
    }
}
