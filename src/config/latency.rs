//! `[targets.latency]`: an optional latency bound, and where its windowed
//! quantile comes from.
//!
//! Why it lives here: config is the leaf every stage imports. The quantile
//! maths is `crate::window::quantiles`, the reads `signal::latency`, and the rule
//! `governor::latency_bound`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::io_checks::{bad_selector, check_url};
use super::{duration, SignalConfig, TargetConfig};
use crate::promtext::promql::check_balanced;

/// `[targets.latency]`
///
/// ```toml
/// [targets.latency]
/// quantile = 0.99
/// bound = "250ms"
/// histogram = "http_request_duration_seconds"   # or `query`, or `locust = true`
/// url = "http://127.0.0.1:8080/metrics"
/// ```
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LatencyConfig {
    /// The quantile bounded, in (0, 1): 0.99 for p99.
    pub quantile: f64,
    /// Back off when the window's quantile is above this.
    #[serde(with = "duration")]
    pub bound: Duration,
    /// A window is latency-clean below this (default: 80 % of `bound`).
    #[serde(default, with = "duration", skip_serializing_if = "Option::is_none")]
    pub low: Option<Duration>,
    /// A Prometheus histogram (seconds) in an exposition: its `_bucket`
    /// series, summed by `le` over the series the selector matches. The
    /// window's quantile comes from bucket deltas.
    pub histogram: Option<String>,
    /// A PromQL expression returning the quantile in seconds over the
    /// window (`{{window}}` is replaced by the target's window).
    pub query: Option<String>,
    /// Locust's own rolling percentile (`current_response_time_percentiles`
    /// of `/stats/requests`), from the target's Locust signal.
    #[serde(default)]
    pub locust: bool,
    /// Goose's own response times (`raw_data.times_us` of `metrics-json`,
    /// a cumulative histogram windowed from its deltas), from the target's
    /// Goose signal.
    #[serde(default)]
    pub goose: bool,
    /// Where to read: the exposition for `histogram` (default: the
    /// signal's URL when it is a Prometheus scrape), the Prometheus API for
    /// `query` (default: the signal's when it is PromQL).
    pub url: Option<String>,
    /// Timeout of one latency read.
    #[serde(default = "default_timeout", with = "duration")]
    pub timeout: Duration,
    /// Extra request headers (no credentials).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

fn default_timeout() -> Duration {
    Duration::from_secs(1)
}

/// Where a latency bound's quantile is read, resolved against the target.
#[derive(Debug, Clone, PartialEq)]
pub enum LatencySourceSpec {
    /// Scrape `url` and window the histogram's buckets.
    Histogram {
        /// The exposition endpoint.
        url: String,
        /// The `_bucket` selector.
        selector: String,
    },
    /// An instant query at `url` (the API base) returning seconds.
    Query {
        /// The Prometheus API base URL.
        url: String,
        /// The expression, `{{window}}` filled.
        expr: String,
    },
    /// Locust's rolling percentile at `url` (the web UI's base).
    Locust {
        /// The web UI's base URL.
        url: String,
    },
    /// Goose's response-time histogram at `url` (its WebSocket controller).
    Goose {
        /// The controller's `ws://` URL.
        url: String,
    },
}

impl LatencyConfig {
    /// The clean level in seconds.
    pub(crate) fn low_secs(&self) -> f64 {
        self.low.map_or(
            self.bound.as_secs_f64() * crate::governor::latency_bound::DEFAULT_LOW_FRACTION,
            |d| d.as_secs_f64(),
        )
    }

    /// The `_bucket` selector for `histogram`: the name gets `_bucket`
    /// unless it already ends so.
    pub(crate) fn bucket_selector(histogram: &str) -> String {
        let (name, rest) = match histogram.find('{') {
            Some(i) => histogram.split_at(i),
            None => (histogram, ""),
        };
        let name = name.trim();
        if name.ends_with("_bucket") {
            format!("{name}{rest}")
        } else {
            format!("{name}_bucket{rest}")
        }
    }

    /// Resolves the source against the target's signal; `Err` is a
    /// (field, reason) problem for `check`.
    pub fn source(&self, t: &TargetConfig) -> Result<LatencySourceSpec, (&'static str, String)> {
        let given = [
            self.histogram.is_some(),
            self.query.is_some(),
            self.locust,
            self.goose,
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err((
                "latency",
                "give exactly one source: `histogram` (a Prometheus histogram to scrape), `query` (PromQL returning seconds), `locust = true` or `goose = true`".into(),
            ));
        }
        let window = crate::promtext::promql::promql_duration(t.window);
        if let Some(h) = &self.histogram {
            let url = match (&self.url, &t.signal) {
                (Some(u), _) => u.clone(),
                (None, SignalConfig::Prometheus(p)) => p.url.clone(),
                _ => return Err((
                    "latency.url",
                    "give the exposition to scrape for `histogram` (the signal is not a Prometheus scrape)".into(),
                )),
            };
            return Ok(LatencySourceSpec::Histogram {
                url,
                selector: Self::bucket_selector(h),
            });
        }
        if let Some(q) = &self.query {
            let url =
                match (&self.url, &t.signal) {
                    (Some(u), _) => u.clone(),
                    (None, SignalConfig::Promql(p)) => p.url.clone(),
                    _ => return Err((
                        "latency.url",
                        "give the Prometheus API base URL for `query` (the signal is not PromQL)"
                            .into(),
                    )),
                };
            return Ok(LatencySourceSpec::Query {
                url,
                expr: q.replace("{{window}}", &window),
            });
        }
        if self.goose {
            return match (&self.url, &t.signal) {
                (Some(u), _) => Ok(LatencySourceSpec::Goose { url: u.clone() }),
                (None, SignalConfig::Goose(g)) => Ok(LatencySourceSpec::Goose { url: g.url.clone() }),
                _ => Err((
                    "latency.url",
                    "give Goose's WebSocket controller URL for `goose = true` (the signal is not Goose)".into(),
                )),
            };
        }
        match (&self.url, &t.signal) {
            (Some(u), _) => Ok(LatencySourceSpec::Locust { url: u.clone() }),
            (None, SignalConfig::Locust(l)) => Ok(LatencySourceSpec::Locust { url: l.url.clone() }),
            _ => Err((
                "latency.url",
                "give Locust's web UI URL for `locust = true` (the signal is not Locust)".into(),
            )),
        }
    }

    /// The bound in words (`check` shows it): `p99 <= 250ms (clean below
    /// 200ms), from the histogram ... at ...`.
    pub fn describe(&self, t: &TargetConfig) -> String {
        let q = crate::governor::latency_bound::quantile_name(self.quantile);
        let secs = crate::governor::latency_bound::seconds;
        let from = match self.source(t) {
            Ok(LatencySourceSpec::Histogram { url, selector }) => {
                format!("the histogram buckets `{selector}` scraped from {url} (windowed from bucket deltas)")
            }
            Ok(LatencySourceSpec::Query { url, expr }) => format!(
                "the PromQL `{expr}` at {url} (windows start one window after each change, or `signal_lag`)"
            ),
            Ok(LatencySourceSpec::Goose { url }) => format!(
                "Goose's response-time buckets at {url} (windowed from their deltas, within one 1.6 % bucket)"
            ),
            Ok(LatencySourceSpec::Locust { url }) => format!(
                "Locust's rolling {}-s percentile at {url} (windows start 10 s after each change)",
                LOCUST_PERCENTILE_WINDOW.as_secs()
            ),
            Err((_, r)) => r,
        };
        format!(
            "{q} <= {} (clean below {}), from {from}",
            secs(self.bound.as_secs_f64()),
            secs(self.low_secs())
        )
    }

    /// Every problem, as (field, reason).
    pub fn problems(&self, t: &TargetConfig) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut err = |f: &str, r: String| out.push((f.to_string(), r));
        if !(self.quantile > 0.0 && self.quantile < 1.0) {
            err(
                "latency.quantile",
                format!(
                    "must be between 0 and 1, exclusive, e.g. 0.99 for p99 (got {})",
                    self.quantile
                ),
            );
        }
        if self.bound.is_zero() {
            err(
                "latency.bound",
                "must be longer than 0s, e.g. \"250ms\"".into(),
            );
        }
        if let Some(low) = self.low {
            if low >= self.bound {
                err(
                    "latency.low",
                    format!(
                        "must be below `bound` ({}), or leave it out for 80 % of the bound",
                        humantime::format_duration(self.bound)
                    ),
                );
            }
        }
        if self.timeout.is_zero() {
            err("latency.timeout", "must be longer than 0s".into());
        }
        for name in self.headers.keys() {
            let lower = name.to_ascii_lowercase();
            if lower == "authorization" || lower == "proxy-authorization" || lower == "cookie" {
                err(
                    "latency.headers",
                    format!("`{name}` carries a credential; latency sources take no credentials yet: read through a Prometheus that needs none, or a loopback exposition"),
                );
            }
        }
        match self.source(t) {
            Err((f, r)) => err(f, r),
            Ok(spec) => match spec {
                LatencySourceSpec::Histogram { url, selector } => {
                    check_url(&mut err, "latency.url", &url);
                    if let Some(reason) = bad_selector(&selector) {
                        err("latency.histogram", reason);
                    }
                }
                LatencySourceSpec::Query { url, expr } => {
                    check_url(&mut err, "latency.url", &url);
                    if let Err(e) = check_balanced(&expr) {
                        err("latency.query", e);
                    }
                }
                LatencySourceSpec::Locust { url } => {
                    check_url(&mut err, "latency.url", &url);
                }
                LatencySourceSpec::Goose { url } => {
                    if !(url.starts_with("ws://") || url.starts_with("wss://")) {
                        err(
                            "latency.url",
                            format!("`{url}` is not a ws:// URL (Goose's WebSocket controller)"),
                        );
                    }
                }
            },
        }
        if t.is_group() {
            err(
                "latency",
                "a latency bound on a group is not supported yet: govern each instance as its own target, or bound the latency the target itself exposes on a single target".into(),
            );
        }
        out
    }
}

/// The percentiles Locust 2.x serves unless `locust.stats.PERCENTILES_TO_CHART`
/// is set in the locustfile.
pub const LOCUST_DEFAULT_PERCENTILES: [f64; 2] = [0.5, 0.95];

/// The window of Locust's rolling percentiles
/// (`CURRENT_RESPONSE_TIME_PERCENTILE_WINDOW`).
pub(crate) const LOCUST_PERCENTILE_WINDOW: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn cfg(latency: &str, signal: &str) -> Result<Config, String> {
        let text = format!(
            r#"
[[targets]]
name = "t"
knob = "concurrency"
ceiling = 100
floor = 1
high = 0.05
window = "3s"
{signal}
[targets.control]
kind = "locust"
url = "http://127.0.0.1:8089"
[targets.latency]
{latency}
"#
        );
        Config::parse(&text).map_err(|e| e.to_string())
    }

    const LOCUST: &str = "[targets.signal]\nkind = \"locust\"\nurl = \"http://127.0.0.1:8089\"";

    #[test]
    fn a_histogram_bound_parses_and_defaults_its_low_to_80_percent() {
        let c = cfg(
            "quantile = 0.99\nbound = \"250ms\"\nhistogram = 'req_seconds{route=\"/\"}'\nurl = \"http://127.0.0.1:9/metrics\"",
            LOCUST,
        )
        .unwrap();
        let l = c.targets[0].latency.as_ref().unwrap();
        assert!((l.low_secs() - 0.2).abs() < 1e-12);
        assert_eq!(
            l.source(&c.targets[0]).unwrap(),
            LatencySourceSpec::Histogram {
                url: "http://127.0.0.1:9/metrics".into(),
                selector: "req_seconds_bucket{route=\"/\"}".into()
            }
        );
    }

    #[test]
    fn bad_bounds_name_their_field() {
        let e = cfg(
            "quantile = 1.5\nbound = \"0s\"\nlow = \"1s\"\nlocust = true",
            LOCUST,
        )
        .unwrap_err();
        assert!(
            e.contains("targets[t].latency.quantile: must be between 0 and 1"),
            "{e}"
        );
        assert!(
            e.contains("targets[t].latency.bound: must be longer than 0s"),
            "{e}"
        );
        assert!(
            e.contains("targets[t].latency.low: must be below `bound`"),
            "{e}"
        );
        let e = cfg("quantile = 0.99\nbound = \"250ms\"", LOCUST).unwrap_err();
        assert!(
            e.contains("targets[t].latency: give exactly one source"),
            "{e}"
        );
        let e = cfg(
            "quantile = 0.99\nbound = \"250ms\"\nhistogram = \"h\"",
            LOCUST,
        )
        .unwrap_err();
        assert!(
            e.contains("targets[t].latency.url: give the exposition"),
            "{e}"
        );
        let e = cfg("quantile = 0.99\nbound = \"fast\"\nlocust = true", LOCUST).unwrap_err();
        assert!(e.contains("latency.bound"), "{e}");
        let e = cfg(
            "quantile = 0.99\nbound = \"1s\"\nlocust = true\ncolour = 1",
            LOCUST,
        )
        .unwrap_err();
        assert!(e.contains("colour"), "{e}");
    }

    #[test]
    fn a_query_fills_the_window() {
        let c = cfg(
            "quantile = 0.99\nbound = \"1s\"\nquery = 'histogram_quantile(0.99, sum by (le) (rate(x_bucket[{{window}}])))'\nurl = \"http://127.0.0.1:9090\"",
            LOCUST,
        )
        .unwrap();
        let t = &c.targets[0];
        let LatencySourceSpec::Query { expr, .. } = t.latency.as_ref().unwrap().source(t).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            expr,
            "histogram_quantile(0.99, sum by (le) (rate(x_bucket[3s])))"
        );
    }

    #[test]
    fn the_bucket_selector_keeps_labels() {
        assert_eq!(LatencyConfig::bucket_selector("h"), "h_bucket");
        assert_eq!(LatencyConfig::bucket_selector("h_bucket"), "h_bucket");
        assert_eq!(
            LatencyConfig::bucket_selector("h{a=\"b\"}"),
            "h_bucket{a=\"b\"}"
        );
    }
}
