//! Setups: the parts of a run's surroundings that should not matter but do (seed 002,
//! Mytkowicz et al.): the size of the environment, address-space randomization, the length of
//! the working directory's path and of the program's path (argv[0]). Each moves the initial
//! stack, and so the alignment of everything the program puts there.
//!
//! A [`Setup`] is drawn from a seed ([`Setup::draw`]), so it can be replayed from the seed
//! alone; a [`SetupPlan`] says which setup each run gets (fresh per block of runs, a rotated
//! pool, or one replayed setup). [`realize`] turns a setup into what a run is given (extra
//! environment variables, a working directory, an argv[0], the ASLR flag) using symlinks under
//! a temporary directory.
//!
//! Not for: measuring (that is `exec`) or analysing setups (that is `conclude::setups`).

pub mod build;
pub mod realize;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The environment variable whose size the `env` factor sets.
pub const PAD_VARIABLE: &str = "TARE_PAD";

/// One factor of a setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Factor {
    /// A padding environment variable of random size.
    Env,
    /// Address-space layout randomization on or off.
    Aslr,
    /// The working directory reached through a path of random length and depth.
    Cwd,
    /// The program reached through a path of random length (argv[0] is that path).
    Argv0,
}

impl Factor {
    pub const ALL: [Factor; 4] = [Factor::Env, Factor::Aslr, Factor::Cwd, Factor::Argv0];

    pub fn name(self) -> &'static str {
        match self {
            Factor::Env => "env",
            Factor::Aslr => "aslr",
            Factor::Cwd => "cwd",
            Factor::Argv0 => "argv0",
        }
    }

    pub fn parse(s: &str) -> Result<Factor, String> {
        Factor::ALL
            .into_iter()
            .find(|f| f.name() == s.trim())
            .ok_or_else(|| format!("unknown factor '{s}': choose from env, aslr, cwd, argv0"))
    }

    /// A comma list of factors, e.g. `env,aslr`; `all` means every factor.
    pub fn parse_list(s: &str) -> Result<Vec<Factor>, String> {
        if s.trim() == "all" {
            return Ok(Factor::ALL.to_vec());
        }
        let mut out = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let f = Factor::parse(part)?;
            if !out.contains(&f) {
                out.push(f);
            }
        }
        if out.is_empty() {
            return Err("give at least one factor: env, aslr, cwd, argv0 (or all)".into());
        }
        out.sort();
        Ok(out)
    }
}

/// Inclusive range of a drawn size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Range {
    pub min: usize,
    pub max: usize,
}

impl Range {
    /// `MIN:MAX` (sizes may carry a unit, e.g. `0:4KiB`).
    pub fn parse(s: &str) -> Result<Range, String> {
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| format!("'{s}' is not a range: write MIN:MAX, e.g. 0:4096"))?;
        let num = |t: &str| -> Result<usize, String> {
            let t = t.trim();
            t.parse::<usize>()
                .or_else(|_| crate::units::parse_bytes(t).map(|v| v as usize))
                .map_err(|_| format!("'{t}' in '{s}' is not a size: write MIN:MAX, e.g. 0:4096"))
        };
        let r = Range {
            min: num(a)?,
            max: num(b)?,
        };
        if r.min > r.max {
            return Err(format!(
                "range '{s}' has MIN above MAX: write MIN:MAX, e.g. 0:4096"
            ));
        }
        if r.max > 1 << 20 {
            return Err(format!(
                "range '{s}' goes above 1 MiB: the kernel limits one environment string to 128 KiB; keep it small"
            ));
        }
        Ok(r)
    }

    fn draw(&self, rng: &mut ChaCha8Rng) -> usize {
        rng.gen_range(self.min..=self.max)
    }
}

/// Which factors are randomized and within which ranges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub factors: Vec<Factor>,
    /// Size in bytes of the padding variable's value.
    pub env_pad: Range,
    /// Depth (number of path components below tare's directory) of the working directory.
    pub cwd_depth: Range,
    /// Characters in those components together.
    pub cwd_length: Range,
    /// Characters of the directory component before the program's name.
    pub argv0_length: Range,
    /// Build variants (`--build`): a setup's variant is `seed mod N`, plus 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_variants: Option<usize>,
}

impl Config {
    pub fn new(factors: Vec<Factor>) -> Config {
        Config {
            factors,
            env_pad: Range { min: 0, max: 4096 },
            cwd_depth: Range { min: 1, max: 8 },
            cwd_length: Range { min: 8, max: 256 },
            argv0_length: Range { min: 0, max: 256 },
            build_variants: None,
        }
    }

    pub fn has(&self, f: Factor) -> bool {
        self.factors.contains(&f)
    }
}

/// One setup: the value of each randomized factor (absent: left as it is), and the seed it
/// was drawn from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Setup {
    /// The seed the values were drawn from (for the fixed setups of `tare bias`: the level
    /// index, plus 2³² in the pass with ASLR on).
    pub seed: u64,
    /// Bytes in the value of `TARE_PAD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_pad: Option<usize>,
    /// Address-space layout randomization: true = as the system has it, false = off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aslr: Option<bool>,
    /// Path components of the working directory below tare's setup directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd_depth: Option<usize>,
    /// Characters in those components together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd_length: Option<usize>,
    /// Characters of the directory component in front of the program's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv0_length: Option<usize>,
    /// The build variant (1…N) whose output `{out}` stands for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<usize>,
}

impl Setup {
    /// The setup of `seed` under `config`. Every factor's value is drawn in a fixed order
    /// whether or not it is randomized, so a seed gives the same value of a factor whatever
    /// other factors are chosen.
    pub fn draw(seed: u64, config: &Config) -> Setup {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let env_pad = config.env_pad.draw(&mut rng);
        let aslr = rng.gen_bool(0.5);
        let cwd_depth = config.cwd_depth.draw(&mut rng).max(1);
        let cwd_length = config.cwd_length.draw(&mut rng).max(cwd_depth);
        let argv0_length = config.argv0_length.draw(&mut rng);
        Setup {
            seed,
            env_pad: config.has(Factor::Env).then_some(env_pad),
            aslr: config.has(Factor::Aslr).then_some(aslr),
            cwd_depth: config.has(Factor::Cwd).then_some(cwd_depth),
            cwd_length: config.has(Factor::Cwd).then_some(cwd_length),
            argv0_length: config.has(Factor::Argv0).then_some(argv0_length),
            build: config
                .build_variants
                .filter(|&n| n > 0)
                .map(|n| (seed % n as u64) as usize + 1),
        }
    }

    /// Whether the run is to have ASLR turned off.
    pub fn aslr_off(&self) -> bool {
        self.aslr == Some(false)
    }

    /// A short description, e.g. `env=1234 aslr=off cwd=3/87 argv0=40`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(v) = self.env_pad {
            parts.push(format!("env={v}"));
        }
        if let Some(v) = self.aslr {
            parts.push(format!("aslr={}", if v { "on" } else { "off" }));
        }
        if let (Some(d), Some(l)) = (self.cwd_depth, self.cwd_length) {
            parts.push(format!("cwd={d}/{l}"));
        }
        if let Some(v) = self.argv0_length {
            parts.push(format!("argv0={v}"));
        }
        if let Some(v) = self.build {
            parts.push(format!("build={v}"));
        }
        if parts.is_empty() {
            "as is".into()
        } else {
            parts.join(" ")
        }
    }
}

/// Which setups the runs of a session get.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "mode")]
pub enum Mode {
    /// A fresh setup for every block of runs.
    Fresh,
    /// This many setups drawn up front, rotated block by block.
    Pool { setups: usize },
    /// Every run in the setup of this seed.
    Replay { seed: u64 },
}

/// The setups of a session: what is randomized, how setups are assigned to runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupPlan {
    pub config: Config,
    #[serde(flatten)]
    pub mode: Mode,
    /// Runs (rounds, when interleaved) per block: a new setup every this many.
    pub every: usize,
    /// The session seed setups are derived from.
    pub session_seed: u64,
    /// The build command of `--build` (`{seed}`, `{out}`), run once per variant before measuring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

/// SplitMix64: a well-mixed 64-bit value from the session seed and a slot number.
fn mix(seed: u64, slot: u64) -> u64 {
    let mut z = seed
        .wrapping_add(0x5e70_5e70_5e70_5e70)
        .wrapping_add(slot.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl SetupPlan {
    /// The block a run belongs to: its round (interleaved) or its position among the
    /// benchmark's measured runs, divided by `every`. Warm-up runs use block 0.
    pub fn block_of(&self, measured_index: usize) -> usize {
        measured_index / self.every.max(1)
    }

    /// The seed of the setup of block `block`. With build variants the seed is adjusted so that
    /// `seed mod N` rotates with the block (fresh) or the pool slot (pool): variants take turns,
    /// and a seed alone still names its variant.
    pub fn seed_for(&self, block: usize) -> u64 {
        let slot = match self.mode {
            Mode::Fresh => block,
            Mode::Pool { setups } => block % setups.max(1),
            Mode::Replay { seed } => return seed,
        };
        let raw = mix(self.session_seed, slot as u64);
        match self.config.build_variants.filter(|&n| n > 0) {
            None => raw,
            Some(n) => {
                let n = n as u64;
                let mut base = raw - raw % n;
                if base > u64::MAX - n {
                    base -= n;
                }
                base + slot as u64 % n
            }
        }
    }

    /// The setup of block `block`.
    pub fn setup_for(&self, block: usize) -> Setup {
        Setup::draw(self.seed_for(block), &self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_factors() {
        assert_eq!(
            Factor::parse_list("aslr,env,aslr").unwrap(),
            vec![Factor::Env, Factor::Aslr]
        );
        assert_eq!(Factor::parse_list("all").unwrap().len(), 4);
        assert!(Factor::parse_list("heap").is_err());
        assert!(Factor::parse_list(",").is_err());
    }

    #[test]
    fn ranges() {
        assert_eq!(Range::parse("0:4096").unwrap(), Range { min: 0, max: 4096 });
        assert_eq!(Range::parse("1KiB:2KiB").unwrap().max, 2048);
        assert!(Range::parse("5:1").is_err());
        assert!(Range::parse("5").is_err());
        assert!(Range::parse("a:b").is_err());
    }

    #[test]
    fn draw_is_reproducible_and_independent_of_other_factors() {
        let all = Config::new(Factor::ALL.to_vec());
        let env = Config::new(vec![Factor::Env]);
        for seed in 0..200 {
            let a = Setup::draw(seed, &all);
            assert_eq!(a, Setup::draw(seed, &all));
            let e = Setup::draw(seed, &env);
            assert_eq!(a.env_pad, e.env_pad);
            assert_eq!(e.aslr, None);
            assert!(a.env_pad.unwrap() <= 4096);
            let (d, l) = (a.cwd_depth.unwrap(), a.cwd_length.unwrap());
            assert!((1..=8).contains(&d) && l >= d && l <= 256);
        }
    }

    #[test]
    fn pool_rotates_and_fresh_does_not() {
        let mut p = SetupPlan {
            config: Config::new(vec![Factor::Env]),
            mode: Mode::Pool { setups: 3 },
            every: 2,
            session_seed: 7,
            build: None,
        };
        assert_eq!(p.block_of(5), 2);
        assert_eq!(p.seed_for(0), p.seed_for(3));
        assert_ne!(p.seed_for(0), p.seed_for(1));
        p.mode = Mode::Fresh;
        let seeds: std::collections::HashSet<u64> = (0..100).map(|b| p.seed_for(b)).collect();
        assert_eq!(seeds.len(), 100);
        p.mode = Mode::Replay { seed: 42 };
        assert_eq!(p.setup_for(9).seed, 42);
        p.config.build_variants = Some(3);
        p.mode = Mode::Fresh;
        let variants: Vec<usize> = (0..6).map(|b| p.setup_for(b).build.unwrap()).collect();
        assert_eq!(variants, [1, 2, 3, 1, 2, 3]);
        p.mode = Mode::Replay {
            seed: p.seed_for(4),
        };
        assert_eq!(p.setup_for(0).build, Some(2));
    }
}
