//! Build-time setups (`--build 'make SEED={seed} OUT={out}' --build-variants N`): the build
//! command runs once per variant before measuring, through the shell, with `{seed}` = the
//! variant number (1…N) and `{out}` = a fresh path under a temporary directory; in the
//! benchmark commands `{out}` then stands for the output of the run's variant. What differs
//! between variants is up to the build (link order shuffled with the seed, see docs/bias.md).

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The built variants, removed when dropped.
#[derive(Debug)]
pub struct Builds {
    dir: PathBuf,
    pub variants: Vec<Variant>,
}

/// One built variant.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Variant {
    /// 1…N, also the `{seed}` it was built with.
    pub variant: usize,
    pub out: PathBuf,
    /// The build command as run.
    pub command: String,
    /// Seconds the build took.
    pub seconds: f64,
}

/// `template` with `{seed}` and `{out}` replaced.
pub fn substitute(template: &str, seed: usize, out: &Path) -> String {
    template
        .replace("{seed}", &seed.to_string())
        .replace("{out}", &out.to_string_lossy())
}

impl Builds {
    /// Runs the build of every variant with `shell -c`, in `cwd` with `env`. The error is one
    /// line naming the variant, the command and the last line of its error output.
    pub fn build_all(
        template: &str,
        variants: usize,
        shell: &str,
        env: &[(std::ffi::OsString, std::ffi::OsString)],
        cwd: Option<&Path>,
    ) -> io::Result<Builds> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "tare-build-{:010}-{:08x}",
            std::process::id(),
            nanos
        ));
        std::fs::create_dir_all(&dir)?;
        let mut builds = Builds {
            dir,
            variants: Vec::new(),
        };
        for v in 1..=variants {
            let out = builds.dir.join(format!("variant-{v}"));
            let command = substitute(template, v, &out);
            let start = Instant::now();
            let mut cmd = Command::new(shell);
            cmd.arg("-c")
                .arg(&command)
                .env_clear()
                .envs(env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            if let Some(d) = cwd {
                cmd.current_dir(d);
            }
            let o = cmd.output()?;
            if !o.status.success() {
                let last = String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .to_string();
                return Err(io::Error::other(format!(
                    "--build variant {v} failed ({}): {command}: {last}; run it by hand to see why",
                    o.status
                )));
            }
            builds.variants.push(Variant {
                variant: v,
                out,
                command,
                seconds: start.elapsed().as_secs_f64(),
            });
        }
        Ok(builds)
    }

    /// The output path of variant `v` (1…N).
    pub fn out(&self, v: usize) -> Option<&Path> {
        self.variants
            .get(v.checked_sub(1)?)
            .map(|x| x.out.as_path())
    }
}

impl Drop for Builds {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
