//! Cool-down against a synthetic thermal zone whose `temp` changes over time, and heat-up
//! against a synthetic cpufreq directory (the CI VM has neither).

use std::cell::{Cell, RefCell};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;
use tare::machine::cooldown::{cool_down, heat_up, Clock, CoolDown, SystemClock};
use tare::machine::SysRoot;

/// A tree with one CPU thermal zone and one non-CPU zone (ignored while a CPU zone exists).
fn thermal_tree(milli_c: i64) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let z = d.path().join("sys/class/thermal/thermal_zone0");
    fs::create_dir_all(&z).unwrap();
    fs::write(z.join("type"), "x86_pkg_temp\n").unwrap();
    fs::write(z.join("temp"), format!("{milli_c}\n")).unwrap();
    let z1 = d.path().join("sys/class/thermal/thermal_zone1");
    fs::create_dir_all(&z1).unwrap();
    fs::write(z1.join("type"), "acpitz\n").unwrap();
    fs::write(z1.join("temp"), "99000\n").unwrap();
    let temp = z.join("temp");
    (d, temp)
}

/// Writes like the kernel shows: the reader never sees a half-written file.
fn set_temp(path: &Path, c: f64) {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, format!("{}\n", (c * 1000.0) as i64)).unwrap();
    fs::rename(&tmp, path).unwrap();
}

/// Virtual time; each sleep advances it and lets the "hardware" react.
struct FakeClock<'a> {
    t: Cell<Duration>,
    on_sleep: RefCell<Box<dyn FnMut(Duration) + 'a>>,
}
impl Clock for FakeClock<'_> {
    fn now(&self) -> Duration {
        self.t.get()
    }
    fn sleep(&self, d: Duration) {
        self.t.set(self.t.get() + d);
        (self.on_sleep.borrow_mut())(self.t.get());
    }
}

#[test]
fn cool_down_waits_to_target_minus_hysteresis_on_a_virtual_clock() {
    let (d, temp) = thermal_tree(80_000);
    let root = SysRoot::new(d.path());
    // Cools by 2 °C per second from 80 °C.
    let clock = FakeClock {
        t: Cell::new(Duration::ZERO),
        on_sleep: RefCell::new(Box::new(|t: Duration| {
            set_temp(&temp, 80.0 - 2.0 * t.as_secs_f64())
        })),
    };
    let p = CoolDown {
        target_c: 60.0,
        hysteresis_c: 5.0,
        max_wait: Duration::from_secs(30),
        poll: Duration::from_secs(1),
    };
    let o = cool_down(&root, &p, &clock);
    assert!(o.reached, "{o:?}");
    assert_eq!(o.start_temp_c, Some(80.0));
    assert_eq!(o.final_temp_c, Some(54.0)); // first poll at or below 55 °C
    assert_eq!(o.waited, 13.0);

    // Bounded: gives up at max_wait exactly, saying where it stopped.
    set_temp(&temp, 80.0);
    let clock = FakeClock {
        t: Cell::new(Duration::from_secs(100)),
        on_sleep: RefCell::new(Box::new(|t: Duration| {
            set_temp(&temp, 80.0 - 2.0 * (t.as_secs_f64() - 100.0))
        })),
    };
    let p = CoolDown {
        max_wait: Duration::from_millis(5500),
        ..p
    };
    let o = cool_down(&root, &p, &clock);
    assert!(!o.reached);
    assert_eq!(o.waited, 5.5);
    assert_eq!(o.final_temp_c, Some(69.0));
    assert!(o
        .note
        .unwrap()
        .starts_with("gave up after 5.5 s: still 69.0 °C"));

    // Already cool: no wait at all (hysteresis only applies once it was above).
    set_temp(&temp, 59.0);
    let o = cool_down(&root, &p, &SystemClock::default());
    assert!(o.reached && o.waited == 0.0);
}

#[test]
fn cool_down_follows_a_zone_heated_then_cooled_by_another_thread() {
    let (d, temp) = thermal_tree(50_000);
    let root = SysRoot::new(d.path());
    let (heated_tx, heated_rx) = mpsc::channel();
    let t2 = temp.clone();
    let writer = std::thread::spawn(move || {
        for c in [55.0, 62.0, 70.0, 78.0] {
            set_temp(&t2, c);
            std::thread::sleep(Duration::from_millis(10));
        }
        heated_tx.send(()).unwrap();
        // Plateau: cool_down must see the heat before the zone cools (the machine may be busy).
        std::thread::sleep(Duration::from_millis(300));
        let mut c = 78.0;
        while c > 40.0 {
            std::thread::sleep(Duration::from_millis(15));
            c -= 2.0;
            set_temp(&t2, c);
        }
    });
    heated_rx.recv().unwrap();
    let p = CoolDown {
        target_c: 60.0,
        hysteresis_c: 5.0,
        max_wait: Duration::from_secs(20), // generous: the machine may be loaded
        poll: Duration::from_millis(5),
    };
    let o = cool_down(&root, &p, &SystemClock::default());
    writer.join().unwrap();
    assert!(o.reached, "{o:?}");
    assert!(o.start_temp_c.unwrap() >= 60.0, "{o:?}");
    // It did not stop between 55 and 60 °C: hysteresis.
    assert!(o.final_temp_c.unwrap() <= 55.0, "{o:?}");
    assert!(o.waited > 0.0 && o.waited < 20.0, "{o:?}");
}

#[test]
fn cool_down_without_zones_is_skipped() {
    let d = tempfile::tempdir().unwrap();
    let o = cool_down(
        &SysRoot::new(d.path()),
        &CoolDown::new(60.0),
        &SystemClock::default(),
    );
    assert!(o.skipped && !o.reached && o.waited == 0.0);
    assert_eq!(
        o.note.as_deref(),
        Some("no thermal zones; cool-down skipped")
    );
    // The CI VM has none either.
    if !SysRoot::host().exists("/sys/class/thermal/thermal_zone0") {
        let o = cool_down(
            &SysRoot::host(),
            &CoolDown::new(60.0),
            &SystemClock::default(),
        );
        assert!(o.skipped);
    }
}

#[test]
fn heat_up_without_cpufreq_returns_at_once() {
    let o = heat_up(&SysRoot::new("/nonexistent"), &[0], Duration::from_secs(10));
    assert!(o.skipped && o.waited == 0.0);
    assert_eq!(
        o.note.as_deref(),
        Some("no frequency information; heat-up skipped")
    );
    if !SysRoot::host().exists("/sys/devices/system/cpu/cpu0/cpufreq") {
        let o = heat_up(&SysRoot::host(), &[0], Duration::from_secs(10));
        assert!(o.skipped);
        assert_eq!(
            o.note.as_deref(),
            Some("no frequency information; heat-up skipped")
        );
    }
}

#[test]
fn heat_up_spins_until_the_frequency_reaches_the_maximum() {
    let d = tempfile::tempdir().unwrap();
    let cpufreq = d.path().join("sys/devices/system/cpu/cpu0/cpufreq");
    fs::create_dir_all(&cpufreq).unwrap();
    fs::write(cpufreq.join("cpuinfo_max_freq"), "3000000\n").unwrap();
    fs::write(cpufreq.join("scaling_max_freq"), "2800000\n").unwrap();
    let cur = cpufreq.join("scaling_cur_freq");
    fs::write(&cur, "800000\n").unwrap();
    let root = SysRoot::new(d.path());
    // The "governor" raises the frequency after a while.
    let c2 = cur.clone();
    let gov = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        let tmp = c2.with_extension("tmp");
        fs::write(&tmp, "2790000\n").unwrap();
        fs::rename(&tmp, &c2).unwrap();
    });
    let o = heat_up(&root, &[0], Duration::from_secs(20));
    gov.join().unwrap();
    assert!(o.reached, "{o:?}");
    assert_eq!(o.target_khz, vec![Some(2_800_000)]); // scaling_max below cpuinfo_max
    assert_eq!(o.final_khz, vec![Some(2_790_000)]);
    assert!(o.waited >= 0.05, "{o:?}");

    // Never reached: bounded.
    fs::write(&cur, "800000\n").unwrap();
    let o = heat_up(&root, &[0], Duration::from_millis(150));
    assert!(!o.reached);
    assert!(o.note.unwrap().contains("not reached"));
}
