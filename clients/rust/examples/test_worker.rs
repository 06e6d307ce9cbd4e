//! A worker exercising every path of the Rust client; driven by tests/fake_master.rs.
use std::cell::Cell;
use std::rc::Rc;
use tare_worker::{black_box, Kernel, Worker};

struct Counter {
    inits: u64,
    loops: u64,
    label: String,
    live: Rc<Cell<i64>>,
}

impl Drop for Counter {
    fn drop(&mut self) {
        self.live.set(self.live.get() - 1);
    }
}

fn main() {
    let live = Rc::new(Cell::new(0i64));
    let (l1, l2) = (live.clone(), live.clone());
    let body_count = Rc::new(Cell::new(0u64));
    let (b1, b2) = (body_count.clone(), body_count.clone());
    Worker::new()
        .kernel(
            Kernel::new("counter")
                .doc("counts loops & inits: 100%")
                .param("n", 3)
                .param("scale", 0.5)
                .param("label", "x")
                .setup(move |s| {
                    s.items_per_loop(s.int("n")? as f64);
                    s.bytes_per_loop(s.float("scale")? * 10.0);
                    l1.set(l1.get() + 1);
                    Ok(Counter {
                        inits: 0,
                        loops: 0,
                        label: s.str("label")?.to_string(),
                        live: l1.clone(),
                    })
                })
                .init(|c, _| c.inits += 1)
                .run(|c, sample, loops| {
                    for _ in 0..loops {
                        c.loops = black_box(c.loops + 1);
                    }
                    sample.metric("inits", c.inits as f64);
                    sample.metric("loops", c.loops as f64);
                    sample.metric("labellen", c.label.len() as f64);
                    sample.metric("live", c.live.get() as f64);
                    sample.metric("env_set", std::env::var_os("TARE_WORKER_FD").is_some() as u8 as f64);
                    // Sockets a child process inherits: the protocol socket must not be one.
                    let child = std::process::Command::new("sh")
                        .args(["-c", "for f in /proc/self/fd/*; do readlink \"$f\"; done"])
                        .stdin(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .output()
                        .map(|o| String::from_utf8_lossy(&o.stdout).matches("socket:").count())
                        .unwrap_or(99);
                    sample.metric("child_sockets", child as f64);
                }),
        )
        .kernel(
            Kernel::new("body")
                .param("expect", 0)
                .setup(move |s| {
                    b1.set(0);
                    s.int("expect")
                })
                .body(move |_| b2.set(b2.get() + 1))
                .teardown(move |expect| {
                    if body_count.get() as i64 != expect {
                        return Err(format!("body ran {} times, expected {expect}", body_count.get()).into());
                    }
                    Ok(())
                }),
        )
        .kernel(
            // Per-loop input: every loop must get a fresh input of its own.
            Kernel::new("each")
                .param("expect", 0)
                .setup(|s| Ok((s.int("expect")?, 0i64, 0i64, 0i64)))
                .each(
                    3,
                    |st| {
                        st.1 += 1;
                        vec![st.1, 0]
                    },
                    |st, input| {
                        st.2 += 1;
                        if input[1] != 0 {
                            st.3 += 1;
                        }
                        input[1] = 1;
                    },
                )
                .teardown(|(expect, inits, loops, stale)| {
                    if loops != expect || inits != loops || stale != 0 {
                        return Err(format!("loops {loops} inits {inits} stale {stale}").into());
                    }
                    Ok(())
                }),
        )
        .kernel(
            // Threaded: 3 threads, each counting its loops in its own slot.
            Kernel::new("threads")
                .param("expect", 0)
                .setup(|s| {
                    Ok((
                        s.int("expect")?,
                        [0, 1, 2].map(|_| std::sync::atomic::AtomicI64::new(0)),
                    ))
                })
                .threads(3, |(_, counts), t, loops| {
                    for _ in 0..loops {
                        counts[t as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                })
                .teardown(|(expect, counts)| {
                    let got: Vec<i64> = counts
                        .iter()
                        .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
                        .collect();
                    if got.iter().any(|&c| c != expect) {
                        return Err(format!("loops per thread {got:?}").into());
                    }
                    Ok(())
                }),
        )
        .kernel(Kernel::new("live").run(move |_, sample, _| sample.metric("live", l2.get() as f64)))
        .kernel(
            Kernel::new("setup_fails")
                .setup(|_| -> Result<(), tare_worker::Error> { Err("no setup today\nsecond line".into()) })
                .run(|_, _, _| {}),
        )
        .kernel(
            Kernel::new("setup_panics")
                .setup(|_| -> Result<(), tare_worker::Error> { panic!("setup exploded") })
                .run(|_, _, _| {}),
        )
        .kernel(Kernel::new("run_panics").run(|_, _, loops| {
            if loops == 3 {
                panic!("three is a bad number");
            }
        }))
        .kernel(
            Kernel::new("teardown_fails")
                .run(|_, _, _| {})
                .teardown(|_| Err("teardown refused".into())),
        )
        .main()
}
