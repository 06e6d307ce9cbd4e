//! The table as CSV: one row per input, per column group the status, category, score,
//! median CPU and wall time (seconds), median peak memory (bytes) and repetition count.
//!
//! Plain numbers in base units, for spreadsheets and scripts. Not for: people (see html).

use super::model::Table;
use super::view::View;
use std::io::Write;

/// Writes the view as CSV to `out`.
pub fn write(t: &Table, v: &View, out: impl Write) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    let mut header = vec!["set".to_string(), "input".into(), "expected".into()];
    for &c in &v.columns {
        let l = &t.columns[c].label;
        for f in [
            "status",
            "category",
            "score",
            "cpu_time",
            "wall_time",
            "peak_memory",
            "repetitions",
        ] {
            header.push(format!("{l} {f}"));
        }
    }
    w.write_record(&header)?;
    // Nanosecond (and byte) resolution is all the data has; trailing zeros dropped.
    let num = |x: Option<f64>| {
        x.map_or(String::new(), |x| {
            let s = format!("{x:.9}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        })
    };
    for (ri, cells) in &v.rows {
        let row = &t.rows[*ri];
        let mut rec = vec![
            row.set.clone(),
            row.input.clone(),
            row.expected.clone().unwrap_or_default(),
        ];
        for cell in cells {
            match cell {
                None => rec.extend(std::iter::repeat_n(String::new(), 7)),
                Some(c) => {
                    rec.push(t.statuses[c.status as usize].clone());
                    rec.push(c.category.as_str().into());
                    rec.push(num(Some(c.score)));
                    rec.push(num(c.cpu.map(|s| s.median)));
                    rec.push(num(c.wall.map(|s| s.median)));
                    rec.push(num(c.memory.map(|s| s.median)));
                    rec.push(c.reps.to_string());
                }
            }
        }
        w.write_record(&rec)?;
    }
    w.flush()?;
    Ok(())
}
