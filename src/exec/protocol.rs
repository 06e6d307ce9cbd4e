//! The worker protocol's messages (docs/protocol.md, version 1): one line, a verb and
//! `key=value` fields with percent-encoded values. Parsing and printing only; no I/O.
//!
//! Hand-written rather than a crate: the format is ours (a subset of URL percent-encoding with
//! a wider safe set, strict single-space framing, unique keys) and small; a general crate would
//! accept what the protocol forbids.

use std::fmt::Write as _;

/// The protocol version this tare speaks.
pub const VERSION: u32 = 1;
/// Longest message in bytes, the newline included.
pub const MAX_LINE: usize = 65_536;

/// One message: a verb and its fields, in order, keys unique.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub verb: String,
    pub fields: Vec<(String, String)>,
}

/// Bytes written as themselves; every other byte is `%XX`.
fn safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~:/,+".contains(&b)
}

fn key_ok(k: &str) -> bool {
    !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b))
}

/// Whether `s` is a kernel or parameter name (`[A-Za-z0-9_./-]+`).
pub fn name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./-".contains(&b))
}

/// Percent-encodes a value.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for &b in value.as_bytes() {
        if safe(b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Decodes a percent-encoded value (upper- or lowercase hex); the result must be UTF-8.
pub fn decode(value: &str) -> Result<String, String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| "a '%' not followed by two hex digits".to_string())?;
            out.push(hex);
            i += 3;
        } else if safe(b) {
            out.push(b);
            i += 1;
        } else {
            return Err(format!("byte 0x{b:02X} must be percent-encoded"));
        }
    }
    String::from_utf8(out).map_err(|_| "a value that is not UTF-8 once decoded".to_string())
}

impl Message {
    pub fn new(verb: &str) -> Self {
        Message {
            verb: verb.to_string(),
            fields: Vec::new(),
        }
    }

    /// Adds a field (the value is encoded when printed).
    pub fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.fields.push((key.to_string(), value.to_string()));
        self
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The line for this message, without the newline.
    pub fn to_line(&self) -> String {
        let mut s = self.verb.clone();
        for (k, v) in &self.fields {
            s.push(' ');
            s.push_str(k);
            s.push('=');
            s.push_str(&encode(v));
        }
        s
    }

    /// Parses one line (without its newline). Errors say what is wrong, in a few words.
    pub fn parse(line: &str) -> Result<Message, String> {
        if line.contains('\r') {
            return Err("a carriage return in the line".into());
        }
        let mut parts = line.split(' ');
        let verb = parts.next().unwrap_or_default();
        if verb.is_empty() || !verb.bytes().all(|b| b.is_ascii_lowercase()) {
            return Err("it does not start with a verb".into());
        }
        let mut fields: Vec<(String, String)> = Vec::new();
        for part in parts {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("field '{}' has no '='", clip(part)))?;
            if !key_ok(k) {
                return Err(format!("'{}' is not a key", clip(k)));
            }
            if fields.iter().any(|(x, _)| x == k) {
                return Err(format!("key '{k}' repeats"));
            }
            let v = decode(v).map_err(|e| format!("field '{k}': {e}"))?;
            fields.push((k.to_string(), v));
        }
        Ok(Message {
            verb: verb.to_string(),
            fields,
        })
    }

    /// An integer field: absent → `None`, present but not a decimal integer → error.
    pub fn uint(&self, key: &str) -> Result<Option<u64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .parse::<u64>()
                .map(Some)
                .map_err(|_| format!("{key}={} is not a non-negative integer", clip(v))),
        }
    }

    /// A finite float field (JSON number syntax): absent → `None`.
    pub fn float(&self, key: &str) -> Result<Option<f64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => {
                let ok = !v.is_empty()
                    && v.bytes()
                        .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
                match v.parse::<f64>() {
                    Ok(x) if ok && x.is_finite() => Ok(Some(x)),
                    _ => Err(format!("{key}={} is not a finite number", clip(v))),
                }
            }
        }
    }
}

/// At most 40 characters of `s`, for error messages.
pub fn clip(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(40)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_any_text() {
        for s in [
            "",
            "plain",
            "a b",
            "x=y%z",
            "é\n\t\u{0}",
            "-._~:/,+",
            "100%",
        ] {
            let enc = encode(s);
            assert!(!enc.contains(' ') && !enc.contains('\n') && !enc.contains('='));
            assert_eq!(decode(&enc).unwrap(), s);
        }
        assert_eq!(encode("a b=c"), "a%20b%3Dc");
        assert_eq!(decode("a%2fb%2F").unwrap(), "a/b/");
    }

    #[test]
    fn parses_and_prints_messages() {
        let m = Message::parse("sample loops=4 ns=100 m.checksum=1.5e-3 doc=").unwrap();
        assert_eq!(m.verb, "sample");
        assert_eq!(m.uint("loops").unwrap(), Some(4));
        assert_eq!(m.float("m.checksum").unwrap(), Some(1.5e-3));
        assert_eq!(m.get("doc"), Some(""));
        assert_eq!(m.uint("bytes").unwrap(), None);
        let line = Message::new("setup")
            .with("kernel", "blur")
            .with("p.name", "a b")
            .to_line();
        assert_eq!(line, "setup kernel=blur p.name=a%20b");
        assert_eq!(Message::parse(&line).unwrap().get("p.name"), Some("a b"));
        assert_eq!(Message::parse("ready").unwrap().fields.len(), 0);
    }

    #[test]
    fn refuses_what_the_protocol_forbids() {
        for bad in [
            "",
            "Hello world",
            "ok  x=1",
            "ok x",
            "ok X=1",
            "ok x=1 x=2",
            "ok x=%G1",
            "ok x=%4",
            "ok x=a b",
            "ok x=é",
            "ok x=%FF",
            "ok\r",
            " ok",
            "ok ",
        ] {
            assert!(Message::parse(bad).is_err(), "{bad:?} was accepted");
        }
        let m = Message::parse("sample ns=-1 a=NaN b=inf c=1e400 d=0x10").unwrap();
        assert!(m.uint("ns").is_err());
        for k in ["a", "b", "c", "d"] {
            assert!(m.float(k).is_err(), "{k}");
        }
    }
}
