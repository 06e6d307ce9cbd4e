//! Units for people: parsing sizes and durations the user types, and printing seconds and
//! bytes with SI prefixes and as many significant digits as the measurement supports
//! (seed 003 §7.2–7.3: a digit below the precision of a value is noise presented as fact).

use std::time::Duration;

/// The largest size tare accepts: 1 EiB.
pub const MAX_BYTES: u64 = 1 << 60;

/// Parses a memory size: plain bytes ("1048576"), SI ("512MB", "1.5GB", "10kB") or binary
/// ("2GiB", "512MiB", "64KiB"). Case-insensitive suffixes; "B" alone means bytes.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        format!("invalid size '{s}': expected a number with an optional unit, e.g. 512MB or 2GiB")
    })?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "invalid size unit '{other}' in '{s}': use B, kB, MB, GB, KiB, MiB or GiB"
            ))
        }
    };
    let bytes = value * mult;
    if !bytes.is_finite() || bytes < 1.0 {
        return Err(format!("invalid size '{s}': must be at least 1 byte"));
    }
    if bytes > MAX_BYTES as f64 {
        return Err(format!(
            "invalid size '{s}': larger than 1 EiB, the most tare accepts"
        ));
    }
    Ok(bytes.round() as u64)
}

/// The longest duration tare accepts anywhere (limits, budgets, waits): 100 days. Longer ones
/// are typos, and would overflow clocks and deadlines.
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 24 * 3600);

/// Parses a duration: plain seconds ("1.5"), or with a unit ("500ms", "2s", "1m", "1h30m").
/// Zero, negative, not-a-number and longer than [`MAX_DURATION`] are refused in one line.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let too_long = || {
        format!(
            "invalid duration '{s}': longer than {} days, the most tare accepts",
            MAX_DURATION.as_secs() / 86_400
        )
    };
    if let Ok(secs) = t.parse::<f64>() {
        if !(secs.is_finite() && secs > 0.0) {
            return Err(format!(
                "invalid duration '{s}': must be a positive number of seconds"
            ));
        }
        if secs > MAX_DURATION.as_secs_f64() {
            return Err(too_long());
        }
        return Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("invalid duration '{s}': shorter than a nanosecond"));
    }
    if t.starts_with('-') {
        return Err(format!("invalid duration '{s}': must be positive"));
    }
    let d = humantime::parse_duration(t)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            format!("invalid duration '{s}': use seconds (1.5) or a unit (500ms, 2s, 1m)")
        })?;
    if d > MAX_DURATION {
        return Err(too_long());
    }
    Ok(d)
}

/// Parses a duration that may be zero ("0", "0ms"): for pauses, where none is a choice.
pub fn parse_duration_or_zero(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let zero = t
        .trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == 'µ')
        .trim();
    if !zero.is_empty() && zero.parse::<f64>() == Ok(0.0) {
        return parse_duration(&format!("1{}", &t[zero.len()..]))
            .map(|_| Duration::ZERO)
            .map_err(|_| {
                format!("invalid duration '{s}': use seconds (1.5) or a unit (500ms, 2s, 1m)")
            });
    }
    parse_duration(s)
}

/// Parses a size limit like [`parse_bytes`], but refuses a number without a unit below 1 MiB:
/// `512` is 512 bytes, almost surely meant as 512MB.
pub fn parse_size_limit(s: &str) -> Result<u64, String> {
    let v = parse_bytes(s)?;
    let t = s.trim();
    if t.chars().all(|c| c.is_ascii_digit() || c == '.') && v < 1 << 20 {
        return Err(format!(
            "'{t}' without a unit is {t} bytes, too little to run anything; did you mean {t}MB? (units: kB, MB, GB, KiB, MiB, GiB; B for bytes)"
        ));
    }
    Ok(v)
}

/// Parses a share strictly between 0 and 1: a percentage "5%", "0.5 %" or a fraction "0.05".
/// The error says what to write; callers put the option and the value given before it, as in
/// "--fail-if-slower 5: write a percentage such as 5%, or a fraction such as 0.05".
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    parse_share(s, false)
}

/// Like [`parse_fraction`], but 100% is allowed too, for thresholds where it means "never".
/// Only a percentage reaches 100%: a bare `1` is refused, as it more likely means 1%.
pub fn parse_fraction_to_whole(s: &str) -> Result<f64, String> {
    parse_share(s, true)
}

fn parse_share(s: &str, whole: bool) -> Result<f64, String> {
    let t = s.trim();
    let (v, percent) = match t.strip_suffix('%') {
        Some(p) => (p.trim().parse::<f64>().map(|v| v / 100.0), true),
        None => (t.parse::<f64>(), false),
    };
    let v = v.unwrap_or(f64::NAN);
    let top_ok = v < 1.0 || (whole && percent && v == 1.0);
    if v.is_finite() && v > 0.0 && top_ok {
        return Ok(v);
    }
    if !percent && (1.0..100.0).contains(&v) {
        // A bare number such as 5 is almost surely meant as 5%.
        return Err(format!(
            "write a percentage such as {t}%, or a fraction such as {}",
            v / 100.0
        ));
    }
    let range = if whole {
        "above 0% and at most 100%"
    } else {
        "above 0% and below 100%"
    };
    Err(format!(
        "write a percentage {range} such as 5%, or a fraction such as 0.05"
    ))
}

/// Number of decimals needed to show `value` down to the precision of `resolution` (both in
/// the same unit), at most `max_sig` significant digits of `value`. The resolution is kept to
/// the Particle Data Group's rule: two significant digits when its leading three are 100–354
/// (so 7.4 ± 1.2 ns is not cut to 7 ns, where a ±1 would hide a 15% difference), one otherwise.
fn decimals_for(value: f64, resolution: Option<f64>, max_sig: i32) -> usize {
    let mag = if value.abs() > 0.0 {
        value.abs().log10().floor() as i32
    } else {
        0
    };
    let by_value = (max_sig - 1 - mag).max(0);
    let by_res = match resolution {
        Some(r) if r.is_finite() && r > 0.0 => {
            let e = r.log10().floor() as i32;
            let lead3 = r / 10f64.powi(e - 2);
            (-e + i32::from(lead3 < 355.0)).max(0)
        }
        _ => by_value,
    };
    by_value.min(by_res).clamp(0, 9) as usize
}

/// Chooses the SI prefix for seconds so the number is in [1, 1000) where possible.
pub fn time_scale(seconds: f64) -> (f64, &'static str) {
    let a = seconds.abs();
    if a >= 1.0 || a == 0.0 {
        (1.0, "s")
    } else if a >= 1e-3 {
        (1e3, "ms")
    } else if a >= 1e-6 {
        (1e6, "µs")
    } else {
        (1e9, "ns")
    }
}

/// Formats seconds with an SI prefix. `resolution` (seconds) is the precision of the value,
/// e.g. the half-width of its confidence interval: digits below it are not printed; at most
/// four significant digits are shown.
pub fn format_time(seconds: f64, resolution: Option<f64>) -> String {
    let (scale, unit) = time_scale(seconds);
    format_scaled(seconds, scale, unit, resolution)
}

/// Formats `value` (in base units) in a given scale and unit with precision-driven digits.
pub fn format_scaled(value: f64, scale: f64, unit: &str, resolution: Option<f64>) -> String {
    if !value.is_finite() {
        return "n/a".to_string();
    }
    let v = value * scale;
    let d = decimals_for(v, resolution.map(|r| r * scale), 4);
    format!("{v:.d$} {unit}")
}

/// Chooses the SI prefix for bytes (kB, MB, GB: powers of 1000).
pub fn bytes_scale(bytes: f64) -> (f64, &'static str) {
    let a = bytes.abs();
    if a >= 1e9 {
        (1e-9, "GB")
    } else if a >= 1e6 {
        (1e-6, "MB")
    } else if a >= 1e3 {
        (1e-3, "kB")
    } else {
        (1.0, "B")
    }
}

/// Formats bytes with an SI prefix and precision-driven digits (see [`format_time`]).
pub fn format_bytes(bytes: f64, resolution: Option<f64>) -> String {
    let (scale, unit) = bytes_scale(bytes);
    if unit == "B" {
        return format!("{bytes:.0} B");
    }
    format_scaled(bytes, scale, unit, resolution)
}

/// The finest peak memory the kernel's memory counters resolve: they move in per-CPU charge
/// batches of 64 pages (256 KiB), so a process tree that stays inside the batch its group
/// already holds rises by 0 (see `exec::cgroup::v1`).
pub const PEAK_RESOLUTION: f64 = 262_144.0;

/// Formats a peak memory: as [`format_bytes`], and a peak of 0 — a tree that stayed below the
/// counters' resolution, not one that used no memory — as `< 262 kB`.
pub fn format_peak(bytes: f64, resolution: Option<f64>) -> String {
    if bytes < 1.0 {
        format!("< {:.0} kB", PEAK_RESOLUTION / 1e3)
    } else {
        format_bytes(bytes, resolution)
    }
}

/// Formats a fraction as a percentage with two significant digits (at least one decimal
/// below 10%).
pub fn format_percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    if !p.is_finite() {
        "n/a".to_string()
    } else if p.abs() < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// A count for people: 1234 as is, larger ones with an SI prefix and three significant digits
/// (1.23M, 4.56G); fractions with up to three decimals.
/// A count with every digit, in groups of three: `80,127,191` (a median of two counts may end
/// in `.5`).
pub fn format_thousands(v: f64) -> String {
    let neg = v < 0.0;
    let whole = v.abs().trunc() as u128;
    let digits = whole.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    let frac = v.abs().fract();
    if frac > 0.0 {
        out.push_str(&format!("{frac:.1}")[1..]);
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// Chooses the SI prefix for a count (k, M, G, T; none below 1000).
pub fn count_scale(v: f64) -> (f64, &'static str) {
    let a = v.abs();
    if a >= 1e12 {
        (1e-12, "T")
    } else if a >= 1e9 {
        (1e-9, "G")
    } else if a >= 1e6 {
        (1e-6, "M")
    } else if a >= 1e3 {
        (1e-3, "k")
    } else {
        (1.0, "")
    }
}

/// Chooses the SI prefix for joules (mJ, µJ below one joule, kJ above a thousand).
pub fn energy_scale(v: f64) -> (f64, &'static str) {
    let a = v.abs();
    if a >= 1e3 {
        (1e-3, "kJ")
    } else if a >= 1.0 || a == 0.0 {
        (1.0, "J")
    } else if a >= 1e-3 {
        (1e3, "mJ")
    } else {
        (1e6, "µJ")
    }
}

/// One display unit fitted to a set of values, so that an axis, its tooltips and the labels
/// beside it all read in it: `33.9 ms`, `1.52 MB`, `80.13M` (a count). Made from the unit a
/// value is stored in (`s`, `B`, `J`, anything else a count) and the largest magnitude shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fitted {
    /// Multiply a stored value by it to get the displayed number.
    pub scale: f64,
    /// `ms`, `MB`, `M` (a count's prefix, or empty: a count below 1000).
    pub unit: &'static str,
    /// A count: the prefix is written against the number (`80.13M`).
    pub count: bool,
}

impl Fitted {
    /// The unit for values of `stored_unit` up to `magnitude` (non-finite: the base unit).
    pub fn new(stored_unit: &str, magnitude: f64) -> Fitted {
        let m = if magnitude.is_finite() {
            magnitude
        } else {
            0.0
        };
        let ((scale, unit), count) = match stored_unit {
            "s" => (time_scale(m), false),
            "B" => (bytes_scale(m), false),
            "J" => (energy_scale(m), false),
            _ => (count_scale(m), true),
        };
        Fitted { scale, unit, count }
    }

    /// `v` in this unit, with digits down to `resolution` (see [`format_time`]).
    pub fn format(&self, v: f64, resolution: Option<f64>) -> String {
        if self.count || self.unit.is_empty() {
            let s = format_scaled(v, self.scale, "", resolution);
            return format!("{}{}", s.trim_end(), self.unit);
        }
        format_scaled(v, self.scale, self.unit, resolution)
    }

    /// The unit in an axis title: `ms`, `MB`, `millions`; empty for a count below 1000.
    pub fn name(&self) -> &'static str {
        match (self.count, self.unit) {
            (true, "k") => "thousands",
            (true, "M") => "millions",
            (true, "G") => "billions",
            (true, "T") => "trillions",
            (true, _) => "",
            (false, u) => u,
        }
    }
}

pub fn format_count(v: f64) -> String {
    let a = v.abs();
    if a >= 1e4 {
        let (scale, unit) = count_scale(v);
        let x = v * scale;
        let d = if x.abs() >= 100.0 {
            0
        } else if x.abs() >= 10.0 {
            1
        } else {
            2
        };
        format!("{x:.d$}{unit}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// `n` and the noun, plural when `n` is not 1: "1 run", "3 runs".
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `p = 0.27`, or `p < 0.0001` below the bound: a p-value in a sentence.
pub fn p_phrase(p: f64) -> String {
    let v = format_p(p);
    if v.starts_with('<') {
        format!("p {v}")
    } else {
        format!("p = {v}")
    }
}

/// A p-value with two significant digits, or a bound below 0.0001.
pub fn format_p(p: f64) -> String {
    if !p.is_finite() {
        "n/a".into()
    } else if p < 1e-4 {
        "< 0.0001".into()
    } else {
        sig2(p)
    }
}

fn sig2(p: f64) -> String {
    let mag = p.log10().floor() as i32;
    let decimals = (1 - mag).max(0) as usize;
    format!("{p:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_keep_every_digit() {
        assert_eq!(format_thousands(80127191.0), "80,127,191");
        assert_eq!(format_thousands(999.0), "999");
        assert_eq!(format_thousands(1000.5), "1,000.5");
        assert_eq!(format_thousands(-1234.0), "-1,234");
    }

    #[test]
    fn size_limits_without_unit_below_a_mebibyte_are_refused() {
        let e = parse_size_limit("512").unwrap_err();
        assert!(e.contains("did you mean 512MB?"), "{e}");
        assert!(parse_size_limit("1048575").is_err());
        assert_eq!(parse_size_limit("1048576").unwrap(), 1 << 20);
        assert_eq!(parse_size_limit("512B").unwrap(), 512);
        assert_eq!(parse_size_limit("512MB").unwrap(), 512_000_000);
    }

    #[test]
    fn pauses_may_be_zero() {
        assert_eq!(parse_duration_or_zero("0ms").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration_or_zero("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration_or_zero("0.0s").unwrap(), Duration::ZERO);
        assert_eq!(
            parse_duration_or_zero("20ms").unwrap(),
            Duration::from_millis(20)
        );
        assert!(parse_duration_or_zero("0parsecs").is_err());
        assert!(parse_duration("0ms").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("512MB"), Ok(512_000_000));
        assert_eq!(parse_bytes("2GiB"), Ok(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_bytes("1048576"), Ok(1_048_576));
        assert_eq!(parse_bytes("1.5kb"), Ok(1500));
        assert!(parse_bytes("12XB").is_err());
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("0").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn fractions() {
        assert_eq!(parse_fraction("1%"), Ok(0.01));
        assert_eq!(parse_fraction("0.05"), Ok(0.05));
        assert!(parse_fraction("150%").is_err());
        assert_eq!(
            parse_fraction("5"),
            Err("write a percentage such as 5%, or a fraction such as 0.05".to_string())
        );
        assert_eq!(
            parse_fraction("2.5"),
            Err("write a percentage such as 2.5%, or a fraction such as 0.025".to_string())
        );
        assert!(parse_fraction("100%").is_err());
        assert!(parse_fraction("0%")
            .unwrap_err()
            .contains("above 0% and below 100%"));
        assert!(parse_fraction("x").unwrap_err().contains("such as 5%"));
        assert_eq!(parse_fraction_to_whole("100%"), Ok(1.0));
        assert_eq!(parse_fraction_to_whole("5%"), Ok(0.05));
        assert!(parse_fraction_to_whole("1").is_err());
        assert!(parse_fraction_to_whole("101%")
            .unwrap_err()
            .contains("at most 100%"));
    }

    #[test]
    fn time_digits_follow_precision() {
        // 101.23 ms known to ±0.4 ms: one decimal of ms, not four.
        assert_eq!(format_time(0.10123, Some(0.0004)), "101.2 ms");
        // Known to ±5 ms: no decimals; to ±3 ms (leading digits 300 < 355): one more.
        assert_eq!(format_time(0.10123, Some(0.005)), "101 ms");
        assert_eq!(format_time(0.10123, Some(0.003)), "101.2 ms");
        // 7.4 ± 1.2 ns keeps its tenth: "7 ns" beside a ratio of 0.87 says nothing.
        assert_eq!(format_time(7.4e-9, Some(1.2e-9)), "7.4 ns");
        // No resolution: four significant digits.
        assert_eq!(format_time(1.234567, None), "1.235 s");
        assert_eq!(format_time(0.000_789_1, None), "789.1 µs");
        assert_eq!(format_time(0.0, None), "0.000 s");
    }

    #[test]
    fn fitted_units_follow_the_largest_value() {
        let f = Fitted::new("s", 0.0405);
        assert_eq!((f.unit, f.name()), ("ms", "ms"));
        assert_eq!(f.format(0.03393, None), "33.93 ms");
        // One unit for every value of the set, small ones too.
        assert_eq!(f.format(0.0009, None), "0.9000 ms");
        assert_eq!(Fitted::new("s", 4e-7).format(3.5e-7, None), "350.0 ns");
        assert_eq!(Fitted::new("B", 3.2e6).format(1.5e6, None), "1.500 MB");
        let c = Fitted::new("count", 8.0e7);
        assert_eq!((c.unit, c.name()), ("M", "millions"));
        assert_eq!(c.format(80_127_191.0, None), "80.13M");
        assert_eq!(Fitted::new("count", 512.0).format(500.0, None), "500.0");
        assert_eq!(Fitted::new("J", 0.02).format(0.0123, None), "12.30 mJ");
        assert_eq!(Fitted::new("s", f64::NAN).unit, "s");
    }

    #[test]
    fn bytes_digits() {
        assert_eq!(format_bytes(314_572_800.0, None), "314.6 MB");
        assert_eq!(format_bytes(512.0, None), "512 B");
        assert_eq!(format_bytes(1_500_000.0, Some(100_000.0)), "1.50 MB");
        assert_eq!(format_bytes(1_500_000.0, Some(400_000.0)), "1.5 MB");
    }

    #[test]
    fn a_peak_of_zero_is_below_the_counters_resolution() {
        assert_eq!(format_peak(0.0, None), "< 262 kB");
        assert_eq!(format_peak(524_288.0, None), format_bytes(524_288.0, None));
    }
}
