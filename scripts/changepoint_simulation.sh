#!/usr/bin/env bash
# Prints the simulated error rates of tare's change-point alerts (the table in docs/store.md):
# false alarms on stationary noise, power for a 3% step, creep of 0.5% per commit over 10
# commits, 1000 series per case, per-commit noise CV 0.5–2%. Runs the ignored test
# `error_rate_table` of tests/store_changepoint.rs in a release build (~5 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --test store_changepoint -- --ignored --nocapture error_rate_table 2>/dev/null | grep '^|'
