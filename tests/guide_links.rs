//! The README and the user guide (docs/, the site mkdocs.yml builds) hold together: every
//! relative link in README.md and docs/**/*.md names a file that exists and, where it has a
//! `#anchor`, a heading of that page (GitHub's anchors: what a reader of the repository
//! follows); every page of docs/ is in mkdocs.yml's nav and every nav entry exists; and the
//! README's quickstarts for kernels, suites and history are lines of the guide's command blocks
//! (checked as written by tests/readme_commands.rs), so they cannot drift from what runs.
//! The site itself is built by `mkdocs build --strict` in scripts/test.sh.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown page under docs/.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The text outside fenced code blocks and inline code spans (links there are examples).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            let mut code = false;
            for part in line.split('`') {
                if !code {
                    out.push_str(part);
                }
                code = !code;
            }
            out.push('\n');
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped (letters, digits, `-`, `_`
/// and spaces kept), spaces as `-`; the n-th repeat gets `-n`.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    out
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for m in link.captures_iter(&prose(&text)) {
            let target = &m[1];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            let rel = page.strip_prefix(root()).unwrap().display().to_string();
            checked += 1;
            if !file.exists() {
                broken.push(format!("{rel}: {target}: no such file"));
                continue;
            }
            if !anchor.is_empty() && file.extension().is_some_and(|x| x == "md") {
                let heads = anchors(&std::fs::read_to_string(&file).unwrap());
                if !heads.contains(anchor) {
                    broken.push(format!("{rel}: {target}: no heading with that anchor"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked >= 20,
        "only {checked} links found: is the pattern right?"
    );
}

#[test]
fn every_page_of_docs_is_in_the_nav_and_every_entry_exists() {
    let yml = std::fs::read_to_string(root().join("mkdocs.yml")).unwrap();
    let entry = regex::Regex::new(r"(?m)^\s*- [^:\n]+: ([\w./-]+\.md)\s*$").unwrap();
    let nav: BTreeSet<String> = entry
        .captures_iter(&yml)
        .map(|c| c[1].to_string())
        .collect();
    for p in &nav {
        assert!(
            root().join("docs").join(p).is_file(),
            "mkdocs.yml names {p}: no such page in docs/"
        );
    }
    let docs = root().join("docs");
    let pages: BTreeSet<String> = pages()
        .iter()
        .filter_map(|p| p.strip_prefix(&docs).ok())
        .map(|p| p.display().to_string())
        .collect();
    let missing: Vec<&String> = pages.difference(&nav).collect();
    assert!(
        missing.is_empty(),
        "pages of docs/ not in mkdocs.yml's nav: {missing:?}"
    );
}

/// The lines of every `sh` block of `text`, each without its trailing comment.
fn sh_lines(text: &str) -> Vec<String> {
    text.split("```sh")
        .skip(1)
        .flat_map(|b| b.split("```").next().unwrap().lines())
        .map(|l| l.split("  #").next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn the_readme_quickstarts_are_lines_of_the_guide() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let quick = readme
        .split("### Kernels inside programs")
        .nth(1)
        .expect("README has the kernels quickstart")
        .split("\n## ")
        .next()
        .unwrap();
    for (section, page) in [
        ("", "kernels.md"),
        ("### A suite", "suites.md"),
        ("### A team's history", "history.md"),
    ] {
        let part = if section.is_empty() {
            quick
        } else {
            quick.split(section).nth(1).expect(section)
        };
        let first = part
            .split("```sh")
            .nth(1)
            .expect(page)
            .split("```")
            .next()
            .unwrap();
        let lines = sh_lines(&format!("```sh{first}```"));
        assert!(!lines.is_empty(), "{page}");
        let guide =
            sh_lines(&std::fs::read_to_string(root().join("docs/guide").join(page)).unwrap());
        for l in lines {
            assert!(
                guide.contains(&l),
                "README line `{l}` is not a line of docs/guide/{page}"
            );
        }
    }
}

#[test]
fn anchors_follow_github() {
    let a = anchors(
        "# Install\n## Coming from hyperfine?\n## Results\n## Results\n```sh\n# not\n```\n",
    );
    let want: BTreeSet<String> = ["install", "coming-from-hyperfine", "results", "results-1"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(a, want);
}
