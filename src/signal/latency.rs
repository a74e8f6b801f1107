//! Reads of a latency bound's source: a Prometheus histogram scrape, or a
//! PromQL expression returning seconds. (Locust's rolling percentile is a
//! tool adapter's: `adapters::locust`.)
//!
//! Why it exists: `[targets.latency]` needs one read per window, taken with
//! the counters, bounded in time and turned into a bounded error on any
//! failure, like every other signal read. The windowing itself (bucket
//! deltas, resets) is pure and lives in `crate::window::quantiles`.

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT};

use super::http::fetch_text;
use super::promql::parse_answer;
use super::{BoxFuture, SignalError};
use crate::promtext::exposition::{for_each_sample, Limits};
use crate::promtext::selector::Selector;
use crate::window::{Buckets, LatencySample};

/// Where a target's latency quantile comes from: one implementation per
/// source (histogram scrape, PromQL, Locust).
pub trait LatencySource: Send + Sync + fmt::Debug {
    /// Reads the source once (bounded in time by the source).
    fn read(&self) -> BoxFuture<'_, Result<LatencySample, SignalError>>;

    /// How far the source's quantile trails the load, when it is known
    /// (Locust's rolling percentiles cover the last 10 s).
    fn lag(&self) -> Option<Duration> {
        None
    }
}

/// The largest histogram exposition accepted (the whole page is read).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// The largest query answer accepted.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

fn headers(given: &std::collections::BTreeMap<String, String>) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for (k, v) in given {
        let name =
            HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header `{k}`: {e}"))?;
        let value = HeaderValue::from_str(v).map_err(|e| format!("header `{k}`: {e}"))?;
        headers.insert(name, value);
    }
    Ok(headers)
}

/// A Prometheus histogram, scraped: its `_bucket` series summed by `le`.
#[derive(Debug, Clone)]
pub struct HistogramSource {
    client: reqwest::Client,
    url: String,
    selector: Selector,
    headers: HeaderMap,
    timeout: Duration,
}

impl HistogramSource {
    /// A scrape of `url` for the `_bucket` series `selector` matches.
    pub fn new(
        client: reqwest::Client,
        url: &str,
        selector: &str,
        given_headers: &std::collections::BTreeMap<String, String>,
        timeout: Duration,
    ) -> Result<Self, String> {
        let selector = selector
            .parse::<Selector>()
            .map_err(|e| format!("selector `{selector}`: {e}"))?;
        let mut headers = headers(given_headers)?;
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
        );
        Ok(HistogramSource {
            client,
            url: url.to_string(),
            selector,
            headers,
            timeout,
        })
    }

    /// Scrapes once.
    pub async fn read(&self) -> Result<LatencySample, SignalError> {
        let request = self.client.get(&self.url).headers(self.headers.clone());
        let body = fetch_text(request, self.timeout, MAX_BODY_BYTES).await?;
        self.evaluate(&body)
    }

    /// The buckets in one exposition body.
    pub fn evaluate(&self, body: &str) -> Result<LatencySample, SignalError> {
        histogram_in(&self.selector, body)
    }
}

/// The `_bucket` series `selector` matches in one exposition body, summed by
/// `le`: the histogram reader behind [`HistogramSource`], pure (fuzzed by
/// `fuzz/fuzz_targets/latency_histogram.rs`).
pub fn histogram_in(selector: &Selector, body: &str) -> Result<LatencySample, SignalError> {
    let mut pairs: Vec<(f64, f64)> = Vec::new();
    let mut bad_le: Option<String> = None;
    // One series twice in one scrape (a duplicated `+Inf` bucket) would
    // be summed into a larger total (issue 27: it drove the offer 68 to
    // 1); a histogram that repeats a bucket is not a histogram.
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut repeated: Option<String> = None;
    let limits = Limits {
        max_samples: 1_000_000,
    };
    for_each_sample(body, &limits, |s| {
        if !selector.matches_ref(&s) {
            return;
        }
        let mut labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        labels.sort();
        let series = format!("{}{{{}}}", s.name, labels.join(","));
        if !seen.insert(series.clone()) {
            repeated.get_or_insert(series);
        }
        match s.label("le").map(parse_le) {
            Some(Some(le)) => pairs.push((le, s.value)),
            Some(None) | None => {
                bad_le.get_or_insert_with(|| format!("{:?}", s.label("le")));
            }
        }
    })
    .map_err(SignalError::Parse)?;
    if let Some(le) = bad_le {
        return Err(SignalError::Format(format!(
            "a `{}` series has no numeric `le` label ({le}): is it a histogram's _bucket series?",
            selector
        )));
    }
    if let Some(series) = repeated {
        return Err(SignalError::Format(format!(
            "the bucket series {series} appears more than once in one scrape"
        )));
    }
    if pairs.is_empty() {
        return Err(SignalError::MissingSeries(selector.to_string()));
    }
    Buckets::new(pairs)
        .map(LatencySample::Histogram)
        .map_err(|e| SignalError::Format(format!("`{}`: {e}", selector)))
}

/// `le` as written: `0.25`, `+Inf`, `1e-3`.
fn parse_le(s: &str) -> Option<f64> {
    match s.trim() {
        "+Inf" | "Inf" | "inf" | "+inf" => Some(f64::INFINITY),
        v => v.parse::<f64>().ok().filter(|v| !v.is_nan()),
    }
}

/// A PromQL expression returning the window's quantile in seconds.
#[derive(Debug, Clone)]
pub struct QuerySource {
    client: reqwest::Client,
    endpoint: String,
    expr: String,
    headers: HeaderMap,
    timeout: Duration,
    lag: Duration,
}

impl QuerySource {
    /// An instant query of `expr` at the API base `url`. `lag` is how far
    /// its answer trails the load: the tool's push or scrape interval, which
    /// the controller cannot see; one window is the default (as for the
    /// PromQL counters), and `signal_lag` overrides it.
    pub fn new(
        client: reqwest::Client,
        url: &str,
        expr: &str,
        given_headers: &std::collections::BTreeMap<String, String>,
        timeout: Duration,
        lag: Duration,
    ) -> Result<Self, String> {
        Ok(QuerySource {
            client,
            endpoint: format!("{}/api/v1/query", url.trim_end_matches('/')),
            expr: expr.to_string(),
            headers: headers(given_headers)?,
            timeout,
            lag,
        })
    }

    /// The lag hint (see [`Self::new`]).
    pub fn lag(&self) -> Duration {
        self.lag
    }

    /// Queries once: the highest value over the result (a quantile per
    /// series is bounded by its worst); NaN (no observations in the
    /// window) is no quantile.
    pub async fn read(&self) -> Result<LatencySample, SignalError> {
        let request = self
            .client
            .get(&self.endpoint)
            .query(&[("query", self.expr.as_str())])
            .headers(self.headers.clone());
        let body = fetch_text(request, self.timeout, MAX_ANSWER_BYTES).await?;
        Self::evaluate(&self.expr, &body)
    }

    /// The quantile in one `/api/v1/query` answer.
    pub fn evaluate(expr: &str, body: &str) -> Result<LatencySample, SignalError> {
        let answer = parse_answer(body)?;
        if answer.values.is_empty() {
            return Err(SignalError::MissingSeries(expr.to_string()));
        }
        let finite: Vec<f64> = answer
            .values
            .iter()
            .copied()
            .filter(|v| !v.is_nan())
            .collect();
        if let Some(v) = finite.iter().find(|v| **v < 0.0 || v.is_infinite()) {
            return Err(SignalError::Format(format!(
                "`{expr}` returned {v}; a latency must be a finite number of seconds >= 0"
            )));
        }
        Ok(LatencySample::Quantile(finite.into_iter().reduce(f64::max)))
    }
}

/// Implements [`LatencySource`] for a type with an inherent
/// `async fn read(&self) -> Result<LatencySample, SignalError>`.
#[macro_export]
macro_rules! latency_source {
    ($ty:ty, lag = $lag:expr) => {
        impl $crate::signal::latency::LatencySource for $ty {
            fn read(
                &self,
            ) -> $crate::signal::BoxFuture<
                '_,
                Result<$crate::window::LatencySample, $crate::signal::SignalError>,
            > {
                Box::pin(<$ty>::read(self))
            }
            fn lag(&self) -> Option<std::time::Duration> {
                let f: fn(&$ty) -> Option<std::time::Duration> = $lag;
                f(self)
            }
        }
    };
}

latency_source!(HistogramSource, lag = |_| None);
latency_source!(QuerySource, lag = |q| Some(q.lag()));

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn hist(sel: &str) -> HistogramSource {
        HistogramSource::new(
            reqwest::Client::new(),
            "http://127.0.0.1:1/metrics",
            sel,
            &BTreeMap::new(),
            Duration::from_secs(1),
        )
        .unwrap()
    }

    const BODY: &str = "# TYPE req_seconds histogram
req_seconds_bucket{route=\"/a\",le=\"0.1\"} 5
req_seconds_bucket{route=\"/a\",le=\"0.5\"} 8
req_seconds_bucket{route=\"/a\",le=\"+Inf\"} 10
req_seconds_bucket{route=\"/b\",le=\"0.1\"} 1
req_seconds_bucket{route=\"/b\",le=\"0.5\"} 2
req_seconds_bucket{route=\"/b\",le=\"+Inf\"} 2
req_seconds_sum 3.5
req_seconds_count 12
other_bucket{le=\"0.1\"} 99
";

    #[test]
    fn a_scrape_sums_the_matching_buckets_by_le() {
        let LatencySample::Histogram(b) = hist("req_seconds_bucket").evaluate(BODY).unwrap() else {
            panic!()
        };
        assert_eq!(b.pairs(), &[(0.1, 6.0), (0.5, 10.0), (f64::INFINITY, 12.0)]);
        let LatencySample::Histogram(b) = hist("req_seconds_bucket{route=\"/b\"}")
            .evaluate(BODY)
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(b.total(), 2.0);
    }

    #[test]
    fn garbage_and_missing_series_are_bounded_errors() {
        let e = hist("nope_bucket").evaluate(BODY).unwrap_err();
        assert_eq!(e.error_type(), "missing_series");
        let e = hist("req_seconds_sum").evaluate(BODY).unwrap_err();
        assert_eq!(e.error_type(), "format");
        let e = hist("x_bucket")
            .evaluate("x_bucket{le=\"0.1\"} 1\n")
            .unwrap_err();
        assert_eq!(e.error_type(), "format", "{e}");
        let e = hist("x_bucket")
            .evaluate("x_bucket{le=\"0.1\" 1\n")
            .unwrap_err();
        assert_eq!(e.error_type(), "parse");
        let e = hist("x_bucket")
            .evaluate("x_bucket{le=\"0.1\"} -3\nx_bucket{le=\"+Inf\"} 1\n")
            .unwrap_err();
        assert_eq!(e.error_type(), "format");
    }

    #[test]
    fn a_query_answer_gives_its_highest_value_and_nan_is_no_quantile() {
        let one = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"a":"1"},"value":[100,"0.2"]},{"metric":{"a":"2"},"value":[100,"0.3"]}]}}"#;
        assert_eq!(
            QuerySource::evaluate("q", one).unwrap(),
            LatencySample::Quantile(Some(0.3))
        );
        let nan = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{},"value":[100,"NaN"]}]}}"#;
        assert_eq!(
            QuerySource::evaluate("q", nan).unwrap(),
            LatencySample::Quantile(None)
        );
        let empty = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        assert_eq!(
            QuerySource::evaluate("q", empty).unwrap_err().error_type(),
            "missing_series"
        );
        let neg = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{},"value":[100,"-1"]}]}}"#;
        assert_eq!(
            QuerySource::evaluate("q", neg).unwrap_err().error_type(),
            "format"
        );
    }

    /// Issue 27 #4 at the scrape: a duplicated `+Inf` bucket, decreasing
    /// counts, a negative `le` and NaN are `format` errors (counted in
    /// `throttle_latency_errors_total` and logged by the engine), never a
    /// quantile. The old reader summed the duplicate and accepted the rest.
    #[test]
    fn invalid_histogram_scrapes_are_format_errors() {
        let h = hist("h_bucket");
        for body in [
            "h_bucket{le=\"0.1\"} 5\nh_bucket{le=\"+Inf\"} 10\nh_bucket{le=\"+Inf\"} 10\n",
            "h_bucket{le=\"0.005\"} 100\nh_bucket{le=\"0.1\"} 3\nh_bucket{le=\"+Inf\"} 3\n",
            "h_bucket{le=\"-1\"} 10\nh_bucket{le=\"0.1\"} 10\nh_bucket{le=\"+Inf\"} 10\n",
            "h_bucket{le=\"0.1\"} NaN\nh_bucket{le=\"+Inf\"} 10\n",
            "h_bucket{le=\"NaN\"} 1\nh_bucket{le=\"+Inf\"} 10\n",
        ] {
            let e = h.evaluate(body).unwrap_err();
            assert_eq!(e.error_type(), "format", "{body}: {e}");
        }
    }
}
