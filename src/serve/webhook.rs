//! The webhook of `tare history check --webhook URL` and `tare serve --webhook URL`: each alert
//! a check raised `new` POSTed to URL as one JSON object (the shape is `payload`'s, documented
//! in docs/store.md), one request per alert, with a bounded timeout. A failure is a one-line
//! warning (stderr: the CLI's, the server's log), never the gate's outcome: a webhook that is
//! down must not fail (or pass) a pull request, nor hold up an upload's answer (the server
//! posts from a thread of its own, [`spawn`]). Not for: reading the store or judging (the
//! caller gives the alerts and their series).

use crate::store::detect::Alert;
use crate::store::query::Series;
use serde_json::{json, Value};
use std::time::Duration;

/// How long one POST may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

fn finite(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

/// The JSON of one new alert: `event` "tare.alert", benchmark (with parameters), metric,
/// machine, commit and the one before it, `change` (the ratio new/old), `interval` (low,
/// high and what it is: "95% CI" or "98% interval"), `verdict` (regression or improvement),
/// p-value, alert id and status, and `link` (given with `--webhook-link`, else null).
pub fn payload(a: &Alert, s: &Series, link: Option<&str>) -> Value {
    json!({
        "event": "tare.alert",
        "benchmark": s.label(),
        "metric": s.metric,
        "unit": s.unit,
        "machine": s.hostname,
        "commit": a.commit_key,
        "before": a.before_key,
        "change": finite(a.ratio),
        "interval": {
            "low": finite(a.ratio_low),
            "high": finite(a.ratio_high),
            "name": a.interval_name(),
        },
        "verdict": a.kind,
        "p_value": finite(a.p_value),
        "alert": a.id,
        "status": a.status,
        "note": a.note,
        "link": link,
    })
}

/// POSTs each alert to `url`; returns how many were delivered (2xx). Each failure is one
/// warning line (after `who`: "tare", "tare serve") naming the alert and what went wrong.
pub fn post(url: &str, alerts: &[(&Alert, &Series)], link: Option<&str>, who: &str) -> usize {
    let agent = match super::client::agent_for(url, TIMEOUT, TIMEOUT) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{who}: warning: --webhook {url}: {e:#}; no alert was posted");
            return 0;
        }
    };
    let mut sent = 0;
    for (a, s) in alerts {
        let body = payload(a, s, link).to_string();
        match agent
            .post(url)
            .set("Content-Type", "application/json")
            .send_string(&body)
        {
            Ok(_) => sent += 1,
            Err(e) => {
                let why = match e {
                    ureq::Error::Status(code, _) => format!("it answered {code}"),
                    other => other.to_string(),
                };
                eprintln!(
                    "{who}: warning: webhook {url}: alert #{} not delivered ({}); the gate's outcome stands",
                    a.id,
                    why.lines().next().unwrap_or("")
                );
            }
        }
    }
    sent
}

/// `tare serve --webhook`: posts `alerts` from a thread of its own (the request that raised
/// them is answered without waiting; each POST is bounded by [`TIMEOUT`]), logging what was
/// delivered and each failure.
pub fn spawn(url: String, alerts: Vec<(Alert, Series)>) {
    if alerts.is_empty() {
        return;
    }
    let to = url.clone();
    let spawned = std::thread::Builder::new()
        .name("tare-webhook".into())
        .spawn(move || {
            let list: Vec<(&Alert, &Series)> = alerts.iter().map(|(a, s)| (a, s)).collect();
            let sent = post(&url, &list, None, "tare serve");
            eprintln!(
                "tare serve: webhook: {sent} of {} new alert(s) delivered to {url}",
                list.len()
            );
        });
    if let Err(e) = spawned {
        eprintln!(
            "tare serve: warning: webhook {to}: cannot start its thread ({e}); no alert was posted"
        );
    }
}
