//! The layers, enforced (issue 41): reads every file under `src/`, collects each reference to
//! another top-level module (`use crate::report::…`, an inline `crate::report::meters::x(…)`,
//! a `super::` that climbs out of its module to the crate root), and fails on any edge that
//! [`LAYERS`] does not permit, printing file:line and the edge. A module may use the modules of
//! the layers below its own, never one of its own layer or above; `super::` within a layer is
//! fine. [`EXCEPTIONS`] lists the upward edges still in the code, each with its reason; the
//! test fails as well when one of them is gone, so the list only shrinks. The layers that the
//! code's edges join must form no cycle, nor may files import each other in a loop (within a
//! layer too; [`FILE_LOOPS`] the ones left), and docs/architecture.md's picture of the layers
//! is the one [`picture`] draws from [`LAYERS`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, top first. Data flows one way: `cli` → `plan` → `method` → `exec`, `machine`;
/// `conclude` turns runs into conclusions; `results` is the data model every layer above
/// speaks; `report` presents; `stats` is pure and imports nothing of the crate.
const LAYERS: &[&[&str]] = &[
    &["cli"],
    &["serve", "remote"],
    &["table", "method"],
    &["suite", "plan", "report"],
    &["store", "native"],
    &["conclude", "exec", "machine"],
    &["setup"],
    &["results"],
    &["lock", "error"],
    &["stats", "units", "output", "sys", "harness"],
];

/// Upward edges the code still has: (file under `src/`, module it uses, why it is still there).
/// Only ever remove entries: the test fails when an entry no longer matches an edge.
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// One reference from a file to another top-level module.
#[derive(Debug, Clone)]
struct Edge {
    file: String,
    line: usize,
    from: String,
    /// The top-level module the path reaches.
    to: String,
    /// The whole path, from the crate root, as far as it was read.
    target: Vec<String>,
    path: String,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules: `src/NAME.rs` and `src/NAME/`, the crate roots left out.
fn top_modules() -> BTreeSet<String> {
    std::fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            if p.is_dir() {
                Some(name)
            } else {
                name.strip_suffix(".rs").map(String::from)
            }
        })
        .filter(|n| n != "lib" && n != "main")
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Dollar,
    Other,
}

/// The tokens of Rust source that matter for paths, with their lines; comments, strings and
/// character literals skipped.
fn tokens(text: &str) -> Vec<(usize, Tok)> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if at(i) == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
            out.push((line, Tok::Other));
        } else if ch == '\'' {
            if at(i + 1) == '\\' {
                // An escaped character literal: to its closing quote.
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1; // a lifetime or label: its name follows as an identifier
            }
            out.push((line, Tok::Other));
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            // Raw strings: r"…", r#"…"#, br#"…"#.
            if (word == "r" || word == "br") && (at(i) == '"' || at(i) == '#') {
                let mut hashes = 0;
                while at(i + hashes) == '#' {
                    hashes += 1;
                }
                if at(i + hashes) == '"' {
                    i += hashes + 1;
                    loop {
                        if i >= c.len() {
                            break;
                        }
                        if c[i] == '"' && (0..hashes).all(|h| at(i + 1 + h) == '#') {
                            i += 1 + hashes;
                            break;
                        }
                        if c[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                    out.push((line, Tok::Other));
                    continue;
                }
                if word == "r" && hashes == 1 {
                    i += 1; // a raw identifier: r#name
                    continue;
                }
            }
            out.push((line, Tok::Ident(word)));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                if c[i] == '.' && !at(i + 1).is_ascii_digit() {
                    break;
                }
                i += 1;
            }
            out.push((line, Tok::Other));
        } else {
            let tok = match ch {
                ':' if at(i + 1) == ':' => {
                    i += 1;
                    Tok::Colons
                }
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                '$' => Tok::Dollar,
                _ => Tok::Other,
            };
            i += 1;
            out.push((line, tok));
        }
    }
    out
}

/// The module path of a file: `src/report/html/data.rs` → report, html, data.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
    if stem != "mod" {
        parts.push(stem);
    }
    parts
}

/// The paths a use tree (or an inline path) names from `toks[i]` on, each `prefix` followed by
/// its segments: `a::{b, c::d}` → a::b, a::c::d; `self` in a group names the prefix itself.
fn use_tree(toks: &[(usize, Tok)], i: usize, prefix: &[String]) -> Vec<Vec<String>> {
    match toks.get(i).map(|t| &t.1) {
        Some(Tok::Ident(w)) => {
            let mut p = prefix.to_vec();
            if w != "self" {
                p.push(w.clone());
            }
            let next = toks.get(i + 2).map(|t| &t.1);
            if toks.get(i + 1).is_some_and(|t| t.1 == Tok::Colons)
                && matches!(next, Some(Tok::Ident(_)) | Some(Tok::Open))
            {
                use_tree(toks, i + 2, &p)
            } else {
                vec![p]
            }
        }
        Some(Tok::Open) => {
            let mut out = Vec::new();
            let (mut depth, mut k, mut start) = (0, i, true);
            while k < toks.len() {
                match &toks[k].1 {
                    Tok::Open => {
                        if depth == 1 && start {
                            out.extend(use_tree(toks, k, prefix));
                            start = false;
                        }
                        depth += 1;
                    }
                    Tok::Close => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Tok::Comma if depth == 1 => start = true,
                    Tok::Ident(_) if depth == 1 && start => {
                        out.extend(use_tree(toks, k, prefix));
                        start = false;
                    }
                    _ => {
                        if depth == 1 {
                            start = false;
                        }
                    }
                }
                k += 1;
            }
            out
        }
        _ => vec![prefix.to_vec()],
    }
}

/// The path text from `toks[i]` on, for messages: identifiers joined by `::`.
fn path_text(toks: &[(usize, Tok)], mut i: usize) -> String {
    let mut s = String::new();
    while i < toks.len() {
        match &toks[i].1 {
            Tok::Ident(w) => s.push_str(w),
            Tok::Colons => s.push_str("::"),
            Tok::Open => {
                s.push_str("{…}");
                break;
            }
            _ => break,
        }
        i += 1;
    }
    s
}

/// The references of one file to modules of the crate, its own included.
fn edges_of(rel: &Path, text: &str, tops: &BTreeSet<String>) -> Vec<Edge> {
    let toks = tokens(text);
    let file = rel.to_string_lossy().replace('\\', "/");
    let base = module_path(rel);
    let from = base[0].clone();
    let mut out = Vec::new();
    // Braces, and which of them opened an inline `mod name { … }`.
    let mut braces: Vec<Option<String>> = Vec::new();
    let mut pending_mod: Option<String> = None;
    let ident = |i: usize| match toks.get(i) {
        Some((_, Tok::Ident(w))) => Some(w.as_str()),
        _ => None,
    };
    let is = |i: usize, t: Tok| toks.get(i).is_some_and(|(_, x)| *x == t);
    for i in 0..toks.len() {
        let (line, tok) = &toks[i];
        match tok {
            Tok::Open => braces.push(pending_mod.take()),
            Tok::Close => {
                braces.pop();
            }
            Tok::Ident(w) if w == "mod" => {
                pending_mod = ident(i + 1)
                    .map(String::from)
                    .filter(|_| is(i + 2, Tok::Open));
            }
            _ => {}
        }
        let Tok::Ident(w) = tok else { continue };
        let starts_path = i == 0 || !(is(i - 1, Tok::Colons) || is(i - 1, Tok::Dollar));
        if !starts_path || !is(i + 1, Tok::Colons) {
            continue;
        }
        // Where the path starts: `crate::` at the root; `super::` climbs from this module.
        let mut j = i + 2;
        let here: Vec<String> = if w == "crate" {
            Vec::new()
        } else if w == "super" {
            let mut here: Vec<String> = base.clone();
            here.extend(braces.iter().flatten().cloned());
            here.pop();
            while ident(j) == Some("super") && is(j + 1, Tok::Colons) {
                here.pop();
                j += 2;
            }
            here
        } else {
            continue;
        };
        for target in use_tree(&toks, j, &here) {
            if target.is_empty() || !tops.contains(&target[0]) {
                continue;
            }
            out.push(Edge {
                file: file.clone(),
                line: *line,
                from: from.clone(),
                to: target[0].clone(),
                target,
                path: format!(
                    "{}{}",
                    if w == "crate" {
                        "crate::"
                    } else {
                        "super::…::"
                    },
                    path_text(&toks, j)
                ),
            });
        }
    }
    out
}

/// Every reference of every file under `src/` (the crate roots left out) to a module of the
/// crate.
fn all_references() -> Vec<Edge> {
    let tops = top_modules();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut out = Vec::new();
    for p in files {
        let rel = p.strip_prefix(src()).unwrap().to_path_buf();
        if rel == Path::new("lib.rs") || rel == Path::new("main.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        out.extend(edges_of(&rel, &text, &tops));
    }
    out
}

/// The references from one top-level module to another.
fn all_edges() -> Vec<Edge> {
    let mut out = all_references();
    out.retain(|e| e.to != e.from);
    out
}

/// Loops of files that import each other (files sorted, the loop's reason), the ones left;
/// like [`EXCEPTIONS`], the list only shrinks.
const FILE_LOOPS: &[(&[&str], &str)] = &[];

/// The module files: module path (report, html, data) → file under `src/`.
fn module_files() -> BTreeMap<Vec<String>, String> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files
        .iter()
        .map(|p| p.strip_prefix(src()).unwrap())
        .filter(|rel| *rel != Path::new("lib.rs") && *rel != Path::new("main.rs"))
        .map(|rel| (module_path(rel), rel.to_string_lossy().replace('\\', "/")))
        .collect()
}

/// The graph of files: an edge from a file to each module file its paths reach, and from a
/// module's file to each of its children's (its `mod child;` line: the parent holds the child,
/// and uses it by a relative path the scan does not read). A file's use of the modules it sits
/// in (a child's `super::Item` from its mod.rs) is its module's structure, not an edge; so a
/// loop through a parent is one that leaves the parent's subtree and comes back to the parent
/// (cli/history.rs ⊃ history/builds.rs → run/… → cli/history.rs was one).
fn file_graph(
    files: &BTreeMap<Vec<String>, String>,
    refs: &[Edge],
) -> BTreeMap<String, BTreeSet<String>> {
    let by_file: BTreeMap<&String, &Vec<String>> = files.iter().map(|(m, f)| (f, m)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in refs {
        let here = by_file[&e.file];
        // The longest prefix of the path that is a module file.
        let Some(to) = (1..=e.target.len())
            .rev()
            .find_map(|k| files.get(&e.target[..k]).map(|f| (k, f)))
        else {
            continue;
        };
        let target_module = &e.target[..to.0];
        if *to.1 == e.file || here.starts_with(target_module) {
            continue;
        }
        graph
            .entry(e.file.clone())
            .or_default()
            .insert(to.1.clone());
    }
    for (module, file) in files {
        if let Some(parent) = module
            .len()
            .checked_sub(1)
            .filter(|&n| n > 0)
            .and_then(|n| files.get(&module[..n]))
        {
            graph
                .entry(parent.clone())
                .or_default()
                .insert(file.clone());
        }
    }
    graph
}

/// The loops of a graph of files (Tarjan's strongly connected components of more than one
/// file), each sorted.
fn loops_of(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, (usize, usize)>,
        stack: Vec<String>,
        on: BTreeSet<String>,
        loops: Vec<Vec<String>>,
    }
    fn strong(t: &mut T, v: &str) {
        let i = t.index.len();
        t.index.insert(v.to_string(), (i, i));
        t.stack.push(v.to_string());
        t.on.insert(v.to_string());
        for w in t.g.get(v).into_iter().flatten() {
            if !t.index.contains_key(w) {
                strong(t, w);
                let lw = t.index[w].1;
                let e = t.index.get_mut(v).unwrap();
                e.1 = e.1.min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w].0;
                let e = t.index.get_mut(v).unwrap();
                e.1 = e.1.min(iw);
            }
        }
        if t.index[v].0 == t.index[v].1 {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(&w);
                let done = w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.loops.push(comp);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        loops: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            strong(&mut t, v);
        }
    }
    t.loops
}

/// No files import each other in a loop, within a layer too (report/'s five files did: html/data
/// → terminal → meters → html/plots → html/table → html/data), through a parent's `mod` line
/// too (see [`file_graph`]).
#[test]
fn files_form_no_loop() {
    let loops = loops_of(&file_graph(&module_files(), &all_references()));
    let listed: Vec<Vec<String>> = FILE_LOOPS
        .iter()
        .map(|(fs, _)| fs.iter().map(|f| f.to_string()).collect())
        .collect();
    let new: Vec<String> = loops
        .iter()
        .filter(|l| !listed.contains(l))
        .map(|l| l.join(" ⇄ "))
        .collect();
    let gone: Vec<String> = listed
        .iter()
        .filter(|l| !loops.contains(l))
        .map(|l| l.join(" ⇄ "))
        .collect();
    assert!(
        new.is_empty(),
        "files that import each other in a loop:\n{}",
        new.join("\n")
    );
    assert!(
        gone.is_empty(),
        "loops no longer in the code; remove them from tests/layers.rs FILE_LOOPS:\n{}",
        gone.join("\n")
    );
}

/// Each module's layer, 0 the lowest.
fn rank() -> BTreeMap<&'static str, usize> {
    let mut r = BTreeMap::new();
    for (i, layer) in LAYERS.iter().enumerate() {
        for m in *layer {
            assert!(
                r.insert(*m, LAYERS.len() - 1 - i).is_none(),
                "{m} twice in LAYERS"
            );
        }
    }
    r
}

#[test]
fn every_module_has_a_layer() {
    let rank = rank();
    let tops = top_modules();
    let missing: Vec<_> = tops
        .iter()
        .filter(|t| !rank.contains_key(t.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "modules without a layer in tests/layers.rs LAYERS: {missing:?}"
    );
}

#[test]
fn imports_go_down_the_layers() {
    let rank = rank();
    let edges = all_edges();
    assert!(
        edges.len() > 300,
        "too few references found ({}): is the scan broken?",
        edges.len()
    );
    let mut used = vec![false; EXCEPTIONS.len()];
    let mut bad = Vec::new();
    for e in &edges {
        let (Some(&f), Some(&t)) = (rank.get(e.from.as_str()), rank.get(e.to.as_str())) else {
            continue; // every_module_has_a_layer names it
        };
        if t < f {
            continue;
        }
        if let Some(k) = EXCEPTIONS
            .iter()
            .position(|(file, to, _)| *file == e.file && *to == e.to)
        {
            used[k] = true;
            continue;
        }
        let why = if t == f {
            "the same layer"
        } else {
            "a layer above"
        };
        bad.push(format!(
            "src/{}:{}: {} → {} ({}): {} is {why}",
            e.file, e.line, e.from, e.to, e.path, e.to
        ));
    }
    let stale: Vec<String> = EXCEPTIONS
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|((file, to, _), _)| format!("src/{file} → {to}"))
        .collect();
    assert!(
        bad.is_empty(),
        "imports the layer table (tests/layers.rs LAYERS) does not permit:\n{}",
        bad.join("\n")
    );
    assert!(
        stale.is_empty(),
        "exceptions no longer in the code; remove them from tests/layers.rs EXCEPTIONS:\n{}",
        stale.join("\n")
    );
}

#[test]
fn layers_form_no_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in all_edges() {
        graph.entry(e.from).or_default().insert(e.to);
    }
    // Depth-first search; a grey node met again closes a cycle.
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            match state.get(m.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|s| s == m).unwrap();
                    cycles.push(format!("{} → {m}", stack[at..].join(" → ")));
                }
                Some(_) => {}
                None => visit(m, g, state, stack, cycles),
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
    }
    let (mut state, mut stack, mut cycles) = (BTreeMap::new(), Vec::new(), Vec::new());
    for n in graph.keys() {
        if !state.contains_key(n) {
            visit(n, &graph, &mut state, &mut stack, &mut cycles);
        }
    }
    assert!(
        cycles.is_empty(),
        "layers that import each other:\n{}",
        cycles.join("\n")
    );
}

/// The picture of the layers docs/architecture.md shows, drawn from [`LAYERS`].
fn picture() -> String {
    let mut s = String::from("```text\n");
    for layer in LAYERS {
        s.push_str(layer.join("  ").trim_end());
        s.push('\n');
    }
    s.push_str("```\n");
    s
}

#[test]
fn the_docs_show_the_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    let doc = std::fs::read_to_string(path).unwrap();
    const START: &str = "<!-- layers: drawn from tests/layers.rs LAYERS -->\n";
    let at = doc
        .find(START)
        .map(|i| i + START.len())
        .expect("docs/architecture.md has no layer picture after its marker");
    let want = picture();
    assert!(
        doc[at..].starts_with(&want),
        "docs/architecture.md's layer picture differs from LAYERS; it should read:\n{want}"
    );
}

#[test]
fn the_scan_sees_paths_as_the_compiler_does() {
    let tops: BTreeSet<String> = ["report", "exec", "results", "lock"]
        .map(String::from)
        .into();
    let text = r##"
use crate::report::meters;
use crate::{exec::sys, results::{Run, Session}};
// crate::lock::ignored in a comment
/* crate::lock::ignored /* nested */ crate::lock::ignored */
fn f() { let s = "crate::lock::ignored"; let r = r#"crate::lock::"#; let c = '"'; }
fn g<'a>(x: &'a str) { crate::exec::sys::euid(); $crate::lock::x; }
mod tests { use super::super::super::lock; }
"##;
    let got: Vec<(usize, String)> = edges_of(Path::new("stats/x.rs"), text, &tops)
        .into_iter()
        .map(|e| (e.line, e.target.join("::")))
        .collect();
    let want: Vec<(usize, String)> = vec![
        (2, "report::meters".into()),
        (3, "exec::sys".into()),
        (3, "results::Run".into()),
        (3, "results::Session".into()),
        (7, "exec::sys::euid".into()),
        (8, "lock".into()),
    ];
    assert_eq!(got, want);
    // `super::` from a top-level module's mod.rs reaches the crate root; in a child it does not.
    let text = "use super::lock::x;\nmod t { use super::super::exec; }\n";
    let got: Vec<String> = edges_of(Path::new("stats/mod.rs"), text, &tops)
        .into_iter()
        .map(|e| e.to)
        .collect();
    assert_eq!(got, vec!["lock", "exec"]);
}

/// The loop check on a made-up crate: a parent whose child reaches a file that uses the parent
/// is a loop; the child's own use of its parent is not.
#[test]
fn a_loop_through_a_parents_mod_line_is_seen() {
    let tops: BTreeSet<String> = ["cli"].map(String::from).into();
    let sources = [
        ("cli/history.rs", "fn a() { builds::b(); }\n"),
        (
            "cli/history/builds.rs",
            "use super::open;\nfn b() { crate::cli::run::go(); }\n",
        ),
        ("cli/run.rs", "fn go() { crate::cli::opts::x(); }\n"),
        ("cli/opts.rs", "fn x() {}\n"),
    ];
    let files: BTreeMap<Vec<String>, String> = sources
        .iter()
        .map(|(f, _)| (module_path(Path::new(f)), f.to_string()))
        .collect();
    let refs = |extra: Option<(&str, &str)>| -> Vec<Edge> {
        sources
            .iter()
            .map(|&(f, text)| match extra {
                Some((g, more)) if g == f => (f, format!("{text}{more}")),
                _ => (f, text.to_string()),
            })
            .flat_map(|(f, text)| edges_of(Path::new(f), &text, &tops))
            .collect()
    };
    assert!(loops_of(&file_graph(&files, &refs(None))).is_empty());
    let back = Some(("cli/opts.rs", "fn y() { crate::cli::history::open(); }\n"));
    assert_eq!(
        loops_of(&file_graph(&files, &refs(back))),
        vec![vec![
            "cli/history.rs".to_string(),
            "cli/history/builds.rs".to_string(),
            "cli/opts.rs".to_string(),
            "cli/run.rs".to_string(),
        ]]
    );
}
