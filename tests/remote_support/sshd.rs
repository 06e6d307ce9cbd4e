//! An OpenSSH server in a network namespace of its own, made and removed by the test that
//! starts it (see `tests/remote_ssh.rs`).

use super::{ci, have, is_root, scratch, skip};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static NEXT: AtomicUsize = AtomicUsize::new(0);

pub fn sh(cmd: &str) -> std::process::Output {
    Command::new("sh").args(["-c", cmd]).output().unwrap()
}

pub fn must(cmd: &str) {
    let o = sh(cmd);
    assert!(
        o.status.success(),
        "`{cmd}`: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// An sshd in its own network namespace, removed on drop.
pub struct Sshd {
    ns: String,
    veth: String,
    pub dir: PathBuf,
    /// The listening sshd, in the foreground (`-D`), so this process reaps it.
    listener: Option<std::process::Child>,
}

impl Sshd {
    pub fn possible() -> bool {
        let tools = ["ssh", "ssh-keygen", "ip", "nsenter"];
        let ok = is_root() && Path::new("/usr/sbin/sshd").exists() && tools.iter().all(|t| have(t));
        if !ok {
            assert!(
                !ci(),
                "CI=true but root, /usr/sbin/sshd or one of {tools:?} is missing (.ci/services.d/31-sshd.sh installs them)"
            );
            skip::skip(
                "root, sshd, ssh, ip and nsenter",
                "run .ci/services.d/31-sshd.sh as root",
            );
        }
        ok
    }

    pub fn start() -> Sshd {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}{n}", std::process::id() % 10000);
        let dir = scratch(&format!("sshd{n}"));
        let mut me = Sshd {
            ns: format!("tare-ssh-{id}"),
            veth: format!("tsh{id}"),
            dir: dir.clone(),
            listener: None,
        };
        let (ns, veth, d) = (&me.ns, &me.veth, dir.display().to_string());
        // 10.213.X.Y/30: a subnet of our own for each server of this process.
        let third = (std::process::id() as usize * 7 + n) % 250 + 1;
        let (a, b) = (format!("10.213.{third}.1"), format!("10.213.{third}.2"));
        must(&format!("ip netns add {ns}"));
        must(&format!("ip link add {veth}a type veth peer name {veth}b"));
        must(&format!("ip link set {veth}b netns {ns}"));
        must(&format!(
            "ip addr add {a}/30 dev {veth}a && ip link set {veth}a up"
        ));
        must(&format!(
            "ip -n {ns} addr add {b}/30 dev {veth}b && ip -n {ns} link set {veth}b up && ip -n {ns} link set lo up"
        ));
        must(&format!(
            "ssh-keygen -q -t ed25519 -N '' -f {d}/host_key && ssh-keygen -q -t ed25519 -N '' -f {d}/client_key && cp {d}/client_key.pub {d}/authorized_keys && chmod 600 {d}/authorized_keys"
        ));
        std::fs::write(
            dir.join("sshd_config"),
            format!(
                "ListenAddress {b}:22\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
                 AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 StrictModes no\nLogLevel ERROR\nClientAliveInterval 2\nClientAliveCountMax 2\n"
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("ssh_config"),
            format!(
                "Host tare-remote\n  HostName {b}\n  User root\n  IdentityFile {d}/client_key\n\
                 \x20 IdentitiesOnly yes\n  UserKnownHostsFile {d}/known_hosts\n\
                 \x20 StrictHostKeyChecking accept-new\n"
            ),
        )
        .unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        // nsenter execs sshd: the child is the listener.
        me.listener = Some(
            Command::new("nsenter")
                .arg(format!("--net=/run/netns/{ns}"))
                .args(["/usr/sbin/sshd", "-D", "-f"])
                .arg(dir.join("sshd_config"))
                .arg("-E")
                .arg(dir.join("sshd.log"))
                .stdin(std::process::Stdio::null())
                .spawn()
                .expect("start sshd"),
        );
        // Up when a key login works (bounded).
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let o = sh(&format!(
                "ssh -F {d}/ssh_config -o BatchMode=yes -o ConnectTimeout=2 tare-remote true"
            ));
            if o.status.success() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "sshd in {ns} did not accept a key login: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        me
    }

    pub fn ssh_option(&self) -> String {
        format!("--ssh-option=-F{}/ssh_config", self.dir.display())
    }

    pub fn listener(&self) -> String {
        self.listener
            .as_ref()
            .map(|c| c.id().to_string())
            .unwrap_or_default()
    }

    /// Processes in the namespace: (pid, name).
    pub fn processes(&self) -> Vec<(String, String)> {
        let o = sh(&format!("ip netns pids {}", self.ns));
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .map(|p| {
                let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
                (p.to_string(), comm.trim().to_string())
            })
            .collect()
    }

    /// Deletes the veth pair: the network between the two sides is gone (no FIN, no RST;
    /// each side notices only through its keep-alives).
    pub fn drop_link(&self) {
        let _ = sh(&format!("ip link del {}a", self.veth));
    }

    /// Kills the sshd processes serving sessions (not the listener): the connection drops.
    pub fn cut(&self) {
        let l = self.listener();
        for (p, c) in self.processes() {
            if c == "sshd" && p != l {
                let _ = sh(&format!("kill -9 {p}"));
            }
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        for (p, _) in self.processes() {
            let _ = sh(&format!("kill -9 {p}"));
        }
        if let Some(mut c) = self.listener.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = sh(&format!("ip netns del {}", self.ns));
        let _ = sh(&format!("ip link del {}a 2>/dev/null", self.veth));
    }
}
