//! Shards of the example suite for real: `--shard 1/2` and `2/2` (one after another, and at
//! the same time) together run exactly the runs of an unsharded run, every input whole in
//! one shard; `tare table` merges the shard directories into the classifications of the
//! local run; shards whose machine fingerprints differ are refused in one line naming both,
//! or shown per machine with `--per-machine`; a bad `--shard` is a one-line usage error.
//! Needs root (cgroups, namespaces) and gzip, xz, cmp; skipped with a message otherwise.

mod remote_support;

use remote_support::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn run_suite(args: &[&str], out: &Path) -> std::process::Output {
    tare()
        .args(["suite", "run"])
        .arg(suite_file())
        .arg("-q")
        .arg("--output-dir")
        .arg(out)
        .args(args)
        .output()
        .unwrap()
}

fn input_of(key: &str) -> String {
    // tool/config/set/input#rep → set/input
    let k = key.split('#').next().unwrap();
    k.splitn(3, '/').nth(2).unwrap().to_string()
}

#[test]
fn shards_together_equal_one_run_and_the_table_merges_them() {
    if !suite_possible() {
        return;
    }
    let dir = scratch("shards");
    let local = dir.join("local");
    let o = run_suite(&[], &local);
    assert!(o.status.success(), "{}", stderr(&o));
    let whole = categories(&local);
    assert_eq!(
        whole.len(),
        40,
        "5 configurations × 4 inputs × 2 repetitions"
    );

    // One after another.
    let seq = dir.join("seq");
    for s in ["1/2", "2/2"] {
        let o = run_suite(&["--shard", s], &seq);
        assert!(o.status.success(), "--shard {s}: {}", stderr(&o));
    }
    // At the same time (two sessions; the pinned-core registry keeps their cores apart).
    let par = dir.join("par");
    let children: Vec<_> = ["1/2", "2/2"]
        .iter()
        .map(|s| {
            tare()
                .args(["suite", "run"])
                .arg(suite_file())
                .args(["-q", "--shard", s, "--output-dir"])
                .arg(&par)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "parallel shard: {}", stderr(&o));
    }

    for base in [&seq, &par] {
        let a = categories(&base.join("shard-1-of-2"));
        let b = categories(&base.join("shard-2-of-2"));
        assert!(!a.is_empty() && !b.is_empty(), "both shards ran something");
        // Disjoint, and together exactly the whole suite with the same classifications.
        assert!(a.keys().all(|k| !b.contains_key(k)));
        let mut union = a.clone();
        union.extend(b.clone());
        assert_eq!(union, whole, "{}", base.display());
        // Every configuration and repetition of an input in the same shard.
        let ia: BTreeSet<_> = a.keys().map(|k| input_of(k)).collect();
        let ib: BTreeSet<_> = b.keys().map(|k| input_of(k)).collect();
        assert!(ia.is_disjoint(&ib), "{ia:?} {ib:?}");
        for i in &ia {
            assert_eq!(a.keys().filter(|k| &input_of(k) == i).count(), 10);
        }
        // suite.json says which shard, and on what machine.
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(base.join("shard-2-of-2/suite.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(meta["shard"]["index"], 2);
        assert_eq!(meta["shard"]["count"], 2);
        assert_eq!(meta["machine"]["fingerprint"].as_str().unwrap().len(), 16);
    }

    // The merged table shows the local run's classifications, cell by cell.
    let local_t = table_classes(&[&local]);
    let seq_t = table_classes(&[&seq]);
    let par_t = table_classes(&[&par]);
    assert!(!local_t.is_empty());
    assert_eq!(seq_t, local_t);
    assert_eq!(par_t, local_t);
    // Shard directories given one by one merge too.
    let one_by_one = table_classes(&[&seq.join("shard-2-of-2"), &seq.join("shard-1-of-2")]);
    assert_eq!(one_by_one, local_t);

    // A shard short of a run, and one with a record more than its runs: the table says so
    // (issue 23), naming the shard and the counts.
    let odd = dir.join("odd");
    for s in ["shard-1-of-2", "shard-2-of-2"] {
        std::fs::create_dir_all(odd.join(s)).unwrap();
        for f in ["suite.json", "results.jsonl"] {
            std::fs::copy(seq.join(s).join(f), odd.join(s).join(f)).unwrap();
        }
    }
    let one = odd.join("shard-1-of-2/results.jsonl");
    let text = std::fs::read_to_string(&one).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let n1 = lines.len();
    std::fs::write(&one, lines[..n1 - 1].join("\n") + "\n").unwrap();
    let two = odd.join("shard-2-of-2/results.jsonl");
    let text = std::fs::read_to_string(&two).unwrap();
    let mut extra: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let key = extra["key"].as_str().unwrap().replace('#', "#9");
    extra["key"] = key.into();
    let n2 = text.lines().count();
    std::fs::write(&two, format!("{text}{extra}\n")).unwrap();
    let o = tare()
        .arg("table")
        .arg(&odd)
        .arg("--dump")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "shard 1/2 is incomplete: {} of its {n1} runs",
            n1 - 1
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "shard 2/2 is over-full: {} records for its {n2} runs",
            n2 + 1
        )),
        "{err}"
    );

    // A shard from another machine: refused, one line, naming both and their fingerprints.
    let other = seq.join("shard-2-of-2/suite.json");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&other).unwrap()).unwrap();
    let mine = meta["machine"]["fingerprint"].as_str().unwrap().to_string();
    meta["machine"]["fingerprint"] = "00000000deadbeef".into();
    meta["machine"]["hostname"] = "node7".into();
    std::fs::write(&other, serde_json::to_vec(&meta).unwrap()).unwrap();
    let o = tare()
        .arg("table")
        .arg(&seq)
        .arg("--dump")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("tare: error: "), "{err}");
    for want in [
        "shard-1-of-2",
        "shard-2-of-2",
        mine.as_str(),
        "00000000deadbeef",
        "--per-machine",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
    // Per machine: one column set per fingerprint, each holding its shard's inputs.
    let per = table_classes_args(&seq, &["--per-machine"]);
    let cols: BTreeSet<String> = per.keys().map(|(_, _, c)| c.clone()).collect();
    assert!(
        cols.iter().any(|c| c.contains("@node7-00000000")),
        "{cols:?}"
    );
    assert!(cols.iter().any(|c| c.contains(&mine[..8])), "{cols:?}");
    assert_eq!(cols.len(), 10, "5 configurations × 2 machines: {cols:?}");
}

fn table_classes_args(
    path: &Path,
    args: &[&str],
) -> BTreeMap<(String, String, String), (String, String)> {
    let out = tare()
        .arg("table")
        .arg(path)
        .args(args)
        .args(["--csv", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    let mut map = BTreeMap::new();
    for rec in rdr.records() {
        let rec = rec.unwrap();
        for (i, h) in headers.iter().enumerate() {
            if let Some(col) = h.strip_suffix(" status") {
                if !rec[i].is_empty() {
                    map.insert(
                        (rec[0].to_string(), rec[1].to_string(), col.to_string()),
                        (rec[i].to_string(), String::new()),
                    );
                }
            }
        }
    }
    map
}

#[test]
fn a_bad_shard_is_one_line() {
    for bad in ["0/2", "3/2", "x", "1/0"] {
        let o = tare()
            .args(["suite", "run"])
            .arg(suite_file())
            .args(["--shard", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = stderr(&o);
        assert!(err.contains("I/N"), "{bad}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{bad}: {err}");
    }
    // The example suite has 4 inputs: a fifth shard would run nothing (it exited 0 before).
    for bad in ["5/5", "1/7"] {
        let o = tare()
            .args(["suite", "run"])
            .arg(suite_file())
            .args(["--shard", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = stderr(&o);
        assert!(err.contains("only 4 inputs"), "{bad}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{bad}: {err}");
    }
}

#[test]
fn resume_with_another_shard_count_measures_and_counts_each_run_once() {
    if !suite_possible() {
        return;
    }
    let dir = scratch("shards-recount");
    let out = dir.join("out");
    let o = run_suite(&["--shard", "1/2"], &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = categories(&out.join("shard-1-of-2"));
    assert_eq!(
        first.len(),
        20,
        "2 of 4 inputs × 5 configurations × 2 repetitions"
    );
    // Another count without --resume would measure the same runs again: refused.
    let o = run_suite(&["--shard", "1/3"], &out);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("another shard count"), "{}", stderr(&o));
    for s in ["1/3", "2/3", "3/3"] {
        let o = run_suite(&["--shard", s, "--resume"], &out);
        assert!(o.status.success(), "--shard {s}: {}", stderr(&o));
    }
    let mut all: BTreeMap<String, String> = first.clone();
    let mut total = first.len();
    for s in ["shard-1-of-3", "shard-2-of-3", "shard-3-of-3"] {
        let part = categories(&out.join(s));
        total += part.len();
        for (k, v) in part {
            assert!(!first.contains_key(&k), "{k} measured again in {s}");
            all.insert(k, v);
        }
    }
    assert_eq!(all.len(), 40, "every run once");
    assert_eq!(total, 40, "no run twice");
    // The table merges both counts, counts each run once, and says so.
    let t = tare()
        .arg("table")
        .arg(&out)
        .args(["--csv", "-"])
        .output()
        .unwrap();
    assert!(t.status.success(), "{}", stderr(&t));
    assert!(
        stderr(&t).contains("shards of 2 and 3 parts"),
        "{}",
        stderr(&t)
    );
}
