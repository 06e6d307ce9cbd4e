//! The memory timeline of a benchmark's runs (`--memory-sample`), drawn for the meters block
//! (`report::meters`), not the plot grid.
//!
//! For: [`memory_timeline`]. Not for: the memory numbers themselves (`results::facts`) or the
//! meters' text (`report::meters`).

use super::{title_text, H, M_BOTTOM, M_LEFT, M_RIGHT, M_TOP, W};
use crate::report::html::svg::{color, Canvas, Frame, Scale};
use crate::results::Benchmark;

/// The memory timelines of a benchmark's runs (`--memory-sample`): bytes of the run group over
/// seconds since spawn, one line per run (counted runs in colour, the others grey), or `None`
/// when no run has one. Drawn for the meters block (`report::meters`), not the plot grid.
pub fn memory_timeline(b: &Benchmark, id: &str) -> Option<String> {
    let lines: Vec<(bool, &Vec<[f64; 2]>)> = b
        .runs
        .iter()
        .filter_map(|r| Some((r.counted, r.meters.memory_timeline.as_ref()?)))
        .filter(|(_, t)| !t.is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let t_max = lines
        .iter()
        .flat_map(|(_, t)| t.iter().map(|p| p[0]))
        .fold(0.0, f64::max);
    let b_max = lines
        .iter()
        .flat_map(|(_, t)| t.iter().map(|p| p[1]))
        .fold(0.0, f64::max);
    let (scale, unit) = crate::units::bytes_scale(b_max.max(1.0));
    let mut c = Canvas::new(W, H);
    title_text(&mut c, "Memory of the run group over time");
    let frame = Frame {
        left: M_LEFT,
        top: M_TOP,
        width: W - M_LEFT - M_RIGHT,
        height: H - M_TOP - M_BOTTOM,
        x: Scale::linear((0.0, t_max.max(1e-3)), (M_LEFT, W - M_RIGHT)),
        y: Scale::linear(
            (0.0, (b_max * scale).max(1e-9) * 1.05),
            (H - M_BOTTOM, M_TOP),
        ),
    };
    frame.axes(
        &mut c,
        "seconds since spawn",
        &format!("memory ({unit})"),
        true,
    );
    for (i, (counted, t)) in lines.iter().enumerate() {
        let pts: Vec<(f64, f64)> = t
            .iter()
            .map(|p| (frame.x.map(p[0]), frame.y.map(p[1] * scale)))
            .collect();
        let stroke = if *counted {
            color::SERIES[i % color::SERIES.len()]
        } else {
            color::WARMUP
        };
        c.polyline(&pts, stroke, 1.5);
    }
    Some(c.finish(id, "plot-memory", "Memory of the run group over time"))
}
