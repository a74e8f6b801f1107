//! Limits that the load tools impose, shared by config checks and adapters.
//!
//! Why it exists: `check` must refuse what a tool would refuse, and the
//! adapter must respect the same numbers. Keeping them in the config leaf
//! lets both import them without config importing the adapters.

use std::time::Duration;

/// How far k6's `/v1/metrics` counters trail the requests: k6 hands each
/// VU's samples to its metrics engine in batches, about once a second, and
/// VUs stopped by a lower `vus` finish the iteration in hand. Measured with
/// k6 1.1.0 against a fast-failing target: with no lag, the window just
/// after a back-off still held the old offer's failures (a second Down, a
/// `last_bad` far below the wall, and slow start back into it).
pub(crate) const K6_METRICS_LAG: Duration = Duration::from_secs(1);

/// How long Locust caches `/stats/requests` (`DEFAULT_CACHE_TIME = 2.0` in
/// Locust 2.x `web.py`).
pub(crate) const LOCUST_STATS_CACHE: Duration = Duration::from_secs(2);

/// How often Locust workers report their stats to the master
/// (`WORKER_REPORT_INTERVAL = 3.0` in Locust 2.x `runners.py`).
pub(crate) const LOCUST_WORKER_REPORT_INTERVAL: Duration = Duration::from_secs(3);

/// The most users Goose's controller accepts.
pub(crate) const GOOSE_MAX_USERS: usize = 100_000;

/// The largest body read from a scrape by default: 16 MiB.
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Whether `name` is a valid k6 metric name.
pub fn is_k6_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 128
}
