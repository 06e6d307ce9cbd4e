//! A tiny hand-written SVG builder for tare's plots: escaping, linear and log scales with
//! "nice" ticks, and a canvas that collects shapes and text.
//!
//! For: drawing plots that look the same inline in the HTML report and as standalone files
//! (every style is a presentation attribute; no CSS class is needed). Not for: deciding what to
//! plot (see `plots/`) or laying out the page (see `page.rs`).

use std::fmt::Write;

/// Colors of the report, shared by plots and page.
pub mod color {
    pub const INK: &str = "#1f2328";
    pub const MUTED: &str = "#656d76";
    pub const GRID: &str = "#e6e8eb";
    pub const AXIS: &str = "#8c959f";
    pub const PRIMARY: &str = "#2f6fb3";
    pub const PRIMARY_LIGHT: &str = "#a9c6e8";
    pub const ACCENT: &str = "#d9480f";
    pub const BAND: &str = "#f2b84b";
    pub const WARN: &str = "#c92a2a";
    pub const GOOD: &str = "#2b8a3e";
    pub const WARMUP: &str = "#adb5bd";
    /// Series colors for several benchmarks or setups.
    pub const SERIES: [&str; 8] = [
        "#2f6fb3", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0c8599", "#c2255c", "#5c940d",
    ];
}

/// Escapes text for XML and HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0; show them as a replacement mark.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Formats a coordinate compactly (two decimals, no trailing zeros, finite).
pub fn n(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" || s.is_empty() {
        "0".into()
    } else {
        s.to_string()
    }
}

/// Widens a data range so it is finite, non-empty and has a little margin.
pub fn pad_domain(lo: f64, hi: f64, margin: f64) -> (f64, f64) {
    let (lo, hi) = match (lo.is_finite(), hi.is_finite()) {
        (true, true) if lo <= hi => (lo, hi),
        (true, true) => (hi, lo),
        (true, false) => (lo, lo),
        (false, true) => (hi, hi),
        _ => (0.0, 1.0),
    };
    if hi - lo <= f64::EPSILON * hi.abs().max(1e-300) {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
        return (lo - d, hi + d);
    }
    let d = (hi - lo) * margin;
    (lo - d, hi + d)
}

/// A "nice" step (1, 2, 2.5 or 5 × 10^k) so that `span` holds about `count` steps.
pub fn nice_step(span: f64, count: usize) -> f64 {
    let raw = span / count.max(1) as f64;
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    // Nearest nice step (so the count is about, not at most, `count`).
    let nice = if f < 1.5 {
        1.0
    } else if f < 2.25 {
        2.0
    } else if f < 3.5 {
        2.5
    } else if f < 7.5 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// Ticks at multiples of a nice step inside `[lo, hi]`, about `count` of them.
pub fn nice_ticks(lo: f64, hi: f64, count: usize) -> (Vec<f64>, f64) {
    let step = nice_step(hi - lo, count);
    let mut ticks = Vec::new();
    if !(lo.is_finite() && hi.is_finite()) || hi < lo {
        return (ticks, step);
    }
    let first = (lo / step).ceil();
    let mut k = 0.0;
    while ticks.len() < 50 {
        let t = (first + k) * step;
        if t > hi + step * 1e-9 {
            break;
        }
        ticks.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        k += 1.0;
    }
    (ticks, step)
}

/// Formats a tick value with as many decimals as its step needs.
pub fn tick_label(v: f64, step: f64) -> String {
    let d = if step > 0.0 && step.is_finite() {
        let d = -(step.log10() + 1e-9).floor();
        let mut d = d.max(0.0) as usize;
        // 2.5 × 10^k needs one more digit.
        let m = step / 10f64.powi(-(d as i32));
        if (m - m.round()).abs() > 1e-6 {
            d += 1;
        }
        d.min(9)
    } else {
        2
    };
    let s = format!("{v:.d$}");
    if s.starts_with('-') && s.trim_start_matches(['-', '0', '.']).is_empty() {
        s[1..].to_string()
    } else {
        s
    }
}

/// Maps data values to pixels, linearly or logarithmically.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub d0: f64,
    pub d1: f64,
    pub r0: f64,
    pub r1: f64,
    pub log: bool,
    /// Ticks only at whole numbers (counts).
    pub integer: bool,
}

impl Scale {
    /// A linear scale whose ticks fall on whole numbers.
    pub fn counts(domain: (f64, f64), range: (f64, f64)) -> Scale {
        Scale {
            integer: true,
            ..Scale::linear(domain, range)
        }
    }

    pub fn linear(domain: (f64, f64), range: (f64, f64)) -> Scale {
        let (d0, d1) = pad_domain(domain.0, domain.1, 0.0);
        Scale {
            d0,
            d1,
            r0: range.0,
            r1: range.1,
            log: false,
            integer: false,
        }
    }

    /// A log scale; non-positive bounds are replaced by a small positive range.
    pub fn log(domain: (f64, f64), range: (f64, f64)) -> Scale {
        let lo = if domain.0 > 0.0 && domain.0.is_finite() {
            domain.0
        } else {
            0.5
        };
        let hi = if domain.1 > lo && domain.1.is_finite() {
            domain.1
        } else {
            lo * 2.0
        };
        Scale {
            d0: lo,
            d1: hi,
            r0: range.0,
            r1: range.1,
            log: true,
            integer: false,
        }
    }

    /// Pixel position of `v` (clamped to a little outside the range for odd input).
    pub fn map(&self, v: f64) -> f64 {
        let t = if self.log {
            if v <= 0.0 || !v.is_finite() {
                0.0
            } else {
                (v.ln() - self.d0.ln()) / (self.d1.ln() - self.d0.ln())
            }
        } else {
            (v - self.d0) / (self.d1 - self.d0)
        };
        let t = if t.is_finite() {
            t.clamp(-0.05, 1.05)
        } else {
            0.0
        };
        self.r0 + t * (self.r1 - self.r0)
    }

    /// Ticks and their labels. Log scales use ratio-friendly values (0.5, 0.9, 1, 1.1, 2, ...).
    pub fn ticks(&self, count: usize) -> Vec<(f64, String)> {
        if self.log {
            // Values people read as ratios; a log axis gets those inside its domain.
            let nice = [
                0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98,
                0.99, 1.0, 1.01, 1.02, 1.05, 1.1, 1.2, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 10.0,
                20.0, 50.0, 100.0,
            ];
            let inside: Vec<f64> = nice
                .into_iter()
                .filter(|&c| c >= self.d0 * 0.9999 && c <= self.d1 * 1.0001)
                .collect();
            // Keep ticks at least ~1/count of the width apart, always keeping 1.
            let min_gap = (self.d1.ln() - self.d0.ln()) / (count.max(2) as f64 + 1.0);
            let mut out: Vec<f64> = Vec::new();
            let ones: Vec<f64> = inside.iter().copied().filter(|c| *c == 1.0).collect();
            for c in ones.iter().chain(inside.iter().filter(|c| **c != 1.0)) {
                if out.iter().all(|o| (o.ln() - c.ln()).abs() >= min_gap) {
                    out.push(*c);
                }
            }
            out.sort_by(f64::total_cmp);
            out.into_iter()
                .map(|v| (v, format!("{}×", trim_float(v))))
                .collect()
        } else {
            let (mut ticks, mut step) = nice_ticks(self.d0, self.d1, count);
            if self.integer && step < 1.0 {
                step = 1.0;
                ticks = (self.d0.ceil() as i64..=self.d1.floor() as i64)
                    .map(|t| t as f64)
                    .collect();
            } else if self.integer {
                ticks.retain(|t| t.fract() == 0.0);
            }
            let step = if self.integer { 1.0 } else { step };
            ticks
                .into_iter()
                .map(|t| (t, tick_label(t, step)))
                .collect()
        }
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Text anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG canvas of a fixed size (in user units; it scales to its container).
#[derive(Debug, Clone)]
pub struct Canvas {
    pub width: f64,
    pub height: f64,
    body: String,
}

impl Canvas {
    pub fn new(width: f64, height: f64) -> Canvas {
        Canvas {
            width,
            height,
            body: String::new(),
        }
    }

    /// Appends raw, already escaped SVG markup.
    pub fn raw(&mut self, s: &str) {
        self.body.push_str(s);
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, width: f64) {
        let _ = write!(
            self.body,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" stroke-width="{}"/>"#,
            n(x1),
            n(y1),
            n(x2),
            n(y2),
            n(width)
        );
    }

    pub fn dashed(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, width: f64) {
        let _ = write!(
            self.body,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}" stroke-width="{}" stroke-dasharray="4 3"/>"#,
            n(x1),
            n(y1),
            n(x2),
            n(y2),
            n(width)
        );
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, opacity: f64) {
        let (x, w) = if w < 0.0 { (x + w, -w) } else { (x, w) };
        let (y, h) = if h < 0.0 { (y + h, -h) } else { (y, h) };
        let _ = write!(
            self.body,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}" fill-opacity="{}"/>"#,
            n(x),
            n(y),
            n(w),
            n(h),
            n(opacity)
        );
    }

    pub fn rect_outline(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: &str) {
        let (x, w) = if w < 0.0 { (x + w, -w) } else { (x, w) };
        let (y, h) = if h < 0.0 { (y + h, -h) } else { (y, h) };
        let _ = write!(
            self.body,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}" stroke="{stroke}" stroke-width="1.2"/>"#,
            n(x),
            n(y),
            n(w),
            n(h)
        );
    }

    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, fill: &str, opacity: f64) {
        let _ = write!(
            self.body,
            r#"<circle cx="{}" cy="{}" r="{}" fill="{fill}" fill-opacity="{}"/>"#,
            n(cx),
            n(cy),
            n(r),
            n(opacity)
        );
    }

    pub fn ring(&mut self, cx: f64, cy: f64, r: f64, stroke: &str) {
        let _ = write!(
            self.body,
            r#"<circle cx="{}" cy="{}" r="{}" fill="none" stroke="{stroke}" stroke-width="1.5"/>"#,
            n(cx),
            n(cy),
            n(r)
        );
    }

    /// A small "×" marker.
    pub fn cross(&mut self, cx: f64, cy: f64, r: f64, stroke: &str) {
        let _ = write!(
            self.body,
            r#"<path d="M{} {}L{} {}M{} {}L{} {}" stroke="{stroke}" stroke-width="1.6"/>"#,
            n(cx - r),
            n(cy - r),
            n(cx + r),
            n(cy + r),
            n(cx - r),
            n(cy + r),
            n(cx + r),
            n(cy - r)
        );
    }

    /// A triangle marker pointing up.
    pub fn triangle(&mut self, cx: f64, cy: f64, r: f64, fill: &str) {
        let _ = write!(
            self.body,
            r#"<path d="M{} {}L{} {}L{} {}Z" fill="{fill}"/>"#,
            n(cx),
            n(cy - r),
            n(cx + r),
            n(cy + r * 0.8),
            n(cx - r),
            n(cy + r * 0.8)
        );
    }

    /// A polyline through `points` (pixel coordinates); non-finite points break the line.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, width: f64) {
        let d = path_data(points, false);
        if d.is_empty() {
            return;
        }
        let _ = write!(
            self.body,
            r#"<path d="{d}" fill="none" stroke="{stroke}" stroke-width="{}" stroke-linejoin="round"/>"#,
            n(width)
        );
    }

    /// A filled polygon through `points` (pixel coordinates).
    pub fn polygon(&mut self, points: &[(f64, f64)], fill: &str, opacity: f64) {
        let d = path_data(points, true);
        if d.is_empty() {
            return;
        }
        let _ = write!(
            self.body,
            r#"<path d="{d}" fill="{fill}" fill-opacity="{}" stroke="none"/>"#,
            n(opacity)
        );
    }

    /// Text; `s` is escaped here.
    #[allow(clippy::too_many_arguments)]
    pub fn text(&mut self, x: f64, y: f64, s: &str, anchor: Anchor, size: f64, fill: &str) {
        let _ = write!(
            self.body,
            r#"<text x="{}" y="{}" text-anchor="{}" font-size="{}" fill="{fill}">{}</text>"#,
            n(x),
            n(y),
            anchor.as_str(),
            n(size),
            esc(s)
        );
    }

    /// Text rotated by -90° (for y-axis titles); `s` is escaped here.
    pub fn vtext(&mut self, x: f64, y: f64, s: &str, size: f64, fill: &str) {
        let _ = write!(
            self.body,
            r#"<text transform="translate({} {}) rotate(-90)" text-anchor="middle" font-size="{}" fill="{fill}">{}</text>"#,
            n(x),
            n(y),
            n(size),
            esc(s)
        );
    }

    /// A hover tooltip for the next shape group: `<title>` inside a `<g>`.
    pub fn titled<F: FnOnce(&mut Canvas)>(&mut self, title: &str, f: F) {
        let _ = write!(self.body, "<g><title>{}</title>", esc(title));
        f(self);
        self.body.push_str("</g>");
    }

    /// The finished `<svg>` element with an id, a class naming the plot kind, and an
    /// accessible title. Always carries `xmlns`, so it is valid standalone and inline.
    pub fn finish(&self, id: &str, class: &str, title: &str) -> String {
        format!(
            concat!(
                r#"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" class="plot {class}" "#,
                r#"viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" "#,
                r#"font-family="system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif">"#,
                r##"<title>{title}</title><rect width="100%" height="100%" fill="#ffffff"/>{body}</svg>"##
            ),
            id = esc(id),
            class = esc(class),
            w = n(self.width),
            h = n(self.height),
            title = esc(title),
            body = self.body
        )
    }
}

fn path_data(points: &[(f64, f64)], close: bool) -> String {
    let mut d = String::new();
    let mut pen_down = false;
    for &(x, y) in points {
        if !(x.is_finite() && y.is_finite()) {
            pen_down = false;
            continue;
        }
        let _ = write!(d, "{}{} {}", if pen_down { "L" } else { "M" }, n(x), n(y));
        pen_down = true;
    }
    if close && !d.is_empty() {
        d.push('Z');
    }
    d
}

/// A plot area inside a canvas, with its scales, and how to draw axes and grid.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
    pub x: Scale,
    pub y: Scale,
}

impl Frame {
    pub fn bottom(&self) -> f64 {
        self.top + self.height
    }
    pub fn right(&self) -> f64 {
        self.left + self.width
    }

    /// Draws the grid, the axes, tick labels and axis titles. `y_ticks = false` leaves the y
    /// axis bare (for histograms of densities, say).
    pub fn axes(&self, c: &mut Canvas, x_title: &str, y_title: &str, y_ticks: bool) {
        self.axes_with(c, x_title, y_title, y_ticks, true);
    }

    /// Like [`Frame::axes`]; `x_labels = false` leaves out the x tick labels (for panels
    /// stacked above another that shares the x axis).
    pub fn axes_with(
        &self,
        c: &mut Canvas,
        x_title: &str,
        y_title: &str,
        y_ticks: bool,
        x_labels: bool,
    ) {
        let font = 11.0;
        for (v, label) in self.x.ticks(6) {
            let px = self.x.map(v);
            c.line(px, self.top, px, self.bottom(), color::GRID, 1.0);
            c.line(px, self.bottom(), px, self.bottom() + 4.0, color::AXIS, 1.0);
            if !x_labels {
                continue;
            }
            c.text(
                px,
                self.bottom() + 16.0,
                &label,
                Anchor::Middle,
                font,
                color::MUTED,
            );
        }
        self.y_axis_and_titles(c, x_title, y_title, y_ticks);
    }

    /// Like [`Frame::axes`], with the x axis labelled at the given positions instead of
    /// numeric ticks (commits, say): `(x, label, hover title)`, the title shown on hover
    /// (escaped here, as the label is).
    pub fn axes_labelled(
        &self,
        c: &mut Canvas,
        x_labels: &[(f64, String, String)],
        x_title: &str,
        y_title: &str,
    ) {
        for (v, label, title) in x_labels {
            let px = self.x.map(*v);
            c.line(px, self.bottom(), px, self.bottom() + 4.0, color::AXIS, 1.0);
            c.raw(&format!(
                "<g class=\"x-label\"><title>{}</title>",
                esc(title)
            ));
            c.text(
                px,
                self.bottom() + 16.0,
                label,
                Anchor::Middle,
                10.5,
                color::MUTED,
            );
            c.raw("</g>");
        }
        self.y_axis_and_titles(c, x_title, y_title, true);
    }

    fn y_axis_and_titles(&self, c: &mut Canvas, x_title: &str, y_title: &str, y_ticks: bool) {
        let font = 11.0;
        if y_ticks {
            for (v, label) in self.y.ticks(4) {
                let py = self.y.map(v);
                c.line(self.left, py, self.right(), py, color::GRID, 1.0);
                c.text(
                    self.left - 6.0,
                    py + 4.0,
                    &label,
                    Anchor::End,
                    font,
                    color::MUTED,
                );
            }
        }
        c.line(
            self.left,
            self.bottom(),
            self.right(),
            self.bottom(),
            color::AXIS,
            1.0,
        );
        c.line(
            self.left,
            self.top,
            self.left,
            self.bottom(),
            color::AXIS,
            1.0,
        );
        if !x_title.is_empty() {
            c.text(
                self.left + self.width / 2.0,
                self.bottom() + 32.0,
                x_title,
                Anchor::Middle,
                font,
                color::INK,
            );
        }
        if !y_title.is_empty() {
            c.vtext(
                self.left - 40.0,
                self.top + self.height / 2.0,
                y_title,
                font,
                color::INK,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc(r#"<a & "b" 'c'>"#),
            "&lt;a &amp; &quot;b&quot; &#39;c&#39;&gt;"
        );
        assert_eq!(esc("a\u{1}b"), "a\u{fffd}b");
    }

    #[test]
    fn ticks_are_nice() {
        let (t, step) = nice_ticks(0.0113, 0.0237, 5);
        assert!((step - 0.0025).abs() < 1e-12, "{step}");
        assert_eq!(tick_label(t[0], step), "0.0125");
        let (t, step) = nice_ticks(11.3, 23.7, 6);
        assert_eq!(step, 2.0);
        assert_eq!(t, vec![12.0, 14.0, 16.0, 18.0, 20.0, 22.0]);
        assert_eq!(tick_label(12.0, 2.0), "12");
        assert_eq!(tick_label(-0.0, 0.5), "0.0");
        // A step of a power of ten needs no more digits than it has.
        assert_eq!(tick_label(17.0, 1.0), "17");
        assert_eq!(tick_label(0.3, 0.1), "0.3");
        assert_eq!(tick_label(200.0, 100.0), "200");
    }

    #[test]
    fn odd_domains_do_not_break() {
        let s = Scale::linear((f64::NAN, f64::NAN), (0.0, 100.0));
        assert!(s.map(0.5).is_finite());
        let s = Scale::linear((3.0, 3.0), (0.0, 100.0));
        assert!((s.map(3.0) - 50.0).abs() < 1e-9);
        let s = Scale::log((-1.0, 0.0), (0.0, 100.0));
        assert!(s.map(1.0).is_finite());
        assert!(!Scale::log((0.9, 1.2), (0.0, 300.0)).ticks(6).is_empty());
    }

    #[test]
    fn log_ticks_include_one() {
        let t = Scale::log((0.8, 1.3), (0.0, 400.0)).ticks(6);
        assert!(t.iter().any(|(v, l)| *v == 1.0 && l == "1×"), "{t:?}");
    }

    #[test]
    fn broken_paths_skip_nan() {
        let d = path_data(
            &[(0.0, 0.0), (f64::NAN, 1.0), (2.0, 2.0), (3.0, 3.0)],
            false,
        );
        assert_eq!(d, "M0 0M2 2L3 3");
    }
}
