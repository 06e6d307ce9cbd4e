//! The result lines of `go test -bench` (the benchfmt format):
//! `BenchmarkName[-GOMAXPROCS] N value unit [value unit]…`. Configuration lines, `PASS`, `ok`,
//! `--- FAIL` and logs are not result lines.

use super::{Descriptor, Drive, Import, Input};

pub const HARNESS: Descriptor = Descriptor {
    name: "go",
    aliases: &["benchfmt"],
    tool: "go test -bench",
    import: Some(Import {
        reads: "the text of go test -bench",
        detect,
    }),
    drive: Some(Drive {
        target: "testing.B",
        args: "the test binary",
        client: "tare-native-go",
        lang: "go",
        python: false,
        bench: false,
    }),
};

/// Text (not JSON) with a line that starts like a result.
pub fn detect(input: &Input) -> bool {
    input.json.is_none()
        && input
            .text()
            .is_some_and(|t| t.lines().any(|l| line(l).is_some()))
}

/// A line that starts like a benchmark result: `Benchmark` and a character that is not a
/// lower-case letter, then a whole iteration count.
pub struct Line<'a> {
    /// The whole line.
    pub text: &'a str,
    /// The first field: `BenchmarkName[-GOMAXPROCS]`.
    pub head: &'a str,
    /// The iteration count N.
    pub n: u64,
    /// The fields after N (values and units, if well formed).
    pub fields: Vec<&'a str>,
}

/// Some(line) for a line that starts like a benchmark result; None for any other line.
pub fn line(text: &str) -> Option<Line<'_>> {
    let rest = text.strip_prefix("Benchmark")?;
    // benchfmt: "Benchmark" followed by a character that is not a lower-case letter.
    if rest.starts_with(|c: char| c.is_lowercase()) {
        return None;
    }
    let mut fields = text.split_whitespace();
    let head = fields.next()?;
    // `--- FAIL`, `--- BENCH` and log lines have no iteration count: not results.
    let n = fields.next()?.parse::<u64>().ok()?;
    Some(Line {
        text,
        head,
        n,
        fields: fields.collect(),
    })
}

impl<'a> Line<'a> {
    /// The name (with `Benchmark`) and the `-GOMAXPROCS` suffix, where the head has one.
    pub fn name_procs(&self) -> (&'a str, Option<&'a str>) {
        match self.head.rsplit_once('-') {
            Some((a, p)) if !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()) => (a, Some(p)),
            _ => (self.head, None),
        }
    }

    /// The (value, unit) pairs after N; an error names the line where a value has no unit or
    /// is not a finite number.
    pub fn pairs(&self) -> Result<Vec<(f64, &'a str)>, String> {
        if !self.fields.len().is_multiple_of(2) {
            return Err(format!("'{}' has a value without a unit", self.text.trim()));
        }
        let mut values = Vec::new();
        for pair in self.fields.chunks(2) {
            match pair[0].parse::<f64>() {
                Ok(v) if v.is_finite() => values.push((v, pair[1])),
                _ => {
                    return Err(format!(
                        "'{}': '{}' is not a number",
                        self.text.trim(),
                        pair[0]
                    ))
                }
            }
        }
        Ok(values)
    }

    /// The value before the last field `unit` (`ns/op`, `MB/s`), read leniently: any two
    /// neighbouring fields; None where the unit is missing or its value is not a number.
    pub fn value(&self, unit: &str) -> Option<f64> {
        self.fields
            .windows(2)
            .rev()
            .find(|w| w[1] == unit)
            .and_then(|w| w[0].parse().ok())
    }

    /// Whether the head is `Benchmark` + `name`, then `-GOMAXPROCS` or nothing.
    pub fn is(&self, name: &str) -> bool {
        let Some(procs) = self
            .head
            .strip_prefix("Benchmark")
            .and_then(|b| b.strip_prefix(name))
        else {
            return false;
        };
        procs.is_empty()
            || procs
                .strip_prefix('-')
                .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
    }
}

#[cfg(test)]
mod tests {
    use super::line;

    #[test]
    fn result_lines() {
        let l = line("BenchmarkJoin/n=10-2   185742   699.6 ns/op   32 B/op").unwrap();
        assert_eq!(l.name_procs(), ("BenchmarkJoin/n=10", Some("2")));
        assert_eq!(l.n, 185742);
        assert_eq!(l.pairs().unwrap(), vec![(699.6, "ns/op"), (32.0, "B/op")]);
        assert_eq!(l.value("ns/op"), Some(699.6));
        assert!(l.is("Join/n=10") && !l.is("Join/n=1"));
        assert!(line("Benchmarking is fun").is_none());
        assert!(line("BenchmarkX-2 --- FAIL: x").is_none());
        assert!(line("BenchmarkX-2  10  12").unwrap().pairs().is_err());
        assert_eq!(line("BenchmarkX-2  10  12").unwrap().value("ns/op"), None);
    }
}
