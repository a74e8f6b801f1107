//! Scraping a Prometheus (or OpenMetrics) text endpoint.
//!
//! Why it exists: it is the one signal almost every load tool can offer.
//! The configured selectors are evaluated in one pass over the body; each
//! is summed over its matching series, and a selector that matches nothing
//! is a [`SignalError::MissingSeries`], never a zero.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT};

use super::http::fetch_text;
use super::{Counters, SignalError};
use crate::config::PrometheusSignalConfig;
use crate::promtext::exposition::Limits;
use crate::promtext::selector::{sum_many, Selector};

/// The `Accept` header Prometheus itself sends: text 0.0.4 or OpenMetrics.
const ACCEPT_TEXT: &str =
    "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1";

/// A configured scrape.
#[derive(Debug, Clone)]
pub struct PrometheusSource {
    client: reqwest::Client,
    /// Parsed once: parsing on every scrape showed in the profile.
    url: reqwest::Url,
    headers: HeaderMap,
    timeout: Duration,
    first: Selector,
    successes_form: bool,
    failures: Selector,
    offer: Option<Selector>,
    limits: Limits,
    max_body_bytes: usize,
    credentials: crate::auth::Credentials,
}

impl PrometheusSource {
    /// Builds a scrape from validated config.
    pub fn new(cfg: &PrometheusSignalConfig, client: reqwest::Client) -> Result<Self, String> {
        let parse = |s: &str| {
            s.parse::<Selector>()
                .map_err(|e| format!("selector `{s}`: {e}"))
        };
        let (first, successes_form) = match (&cfg.attempts, &cfg.successes) {
            (Some(a), _) => (parse(a)?, false),
            (None, Some(s)) => (parse(s)?, true),
            (None, None) => return Err("give `attempts` or `successes`".into()),
        };
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_TEXT));
        for (k, v) in &cfg.headers {
            let name =
                HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header `{k}`: {e}"))?;
            let value = HeaderValue::from_str(v).map_err(|e| format!("header `{k}`: {e}"))?;
            headers.insert(name, value);
        }
        Ok(PrometheusSource {
            client,
            url: reqwest::Url::parse(&cfg.url).map_err(|e| format!("url `{}`: {e}", cfg.url))?,
            headers,
            timeout: cfg.timeout,
            first,
            successes_form,
            failures: parse(&cfg.failures)?,
            offer: cfg.offer.as_deref().map(parse).transpose()?,
            limits: Limits {
                max_samples: cfg.max_samples,
            },
            max_body_bytes: cfg.max_body_bytes,
            credentials: crate::auth::Credentials::resolve(&cfg.auth)
                .map_err(|e| format!("auth: {e}"))?,
        })
    }

    /// Whether an offer gauge is configured.
    pub fn has_offer(&self) -> bool {
        self.offer.is_some()
    }

    /// Scrapes once and sums the selectors.
    pub async fn read(&self) -> Result<Counters, SignalError> {
        let request = self.credentials.apply(
            self.client
                .get(self.url.clone())
                .headers(self.headers.clone()),
        );
        let body = fetch_text(request, self.timeout, self.max_body_bytes).await?;
        self.evaluate(&body)
    }

    /// Sums the selectors over one exposition body.
    pub fn evaluate(&self, body: &str) -> Result<Counters, SignalError> {
        let mut selectors = vec![&self.first, &self.failures];
        if let Some(o) = &self.offer {
            selectors.push(o);
        }
        let sums = sum_many(body, &selectors, &self.limits)?;
        let need = |i: usize| {
            sums.get(i)
                .copied()
                .flatten()
                .ok_or_else(|| SignalError::MissingSeries(selectors[i].to_string()))
        };
        Ok(Counters {
            first: need(0)?,
            failures: need(1)?,
            successes_form: self.successes_form,
            offer: if self.offer.is_some() {
                Some(need(2)?)
            } else {
                None
            },
            // A scrape reads the tool's own counters: no lag to speak of.
            lag: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_reads_the_counters_with_no_lag_hint() {
        let cfg: PrometheusSignalConfig = toml::from_str(
            r#"url = "http://127.0.0.1:1/metrics"
               attempts = 'a_total'
               failures = 'f_total{outcome="failure"}'"#,
        )
        .unwrap();
        let s = PrometheusSource::new(&cfg, reqwest::Client::new()).unwrap();
        let c = s
            .evaluate("a_total 10\nf_total{outcome=\"failure\"} 2\nf_total{outcome=\"ok\"} 8\n")
            .unwrap();
        assert_eq!((c.first, c.failures, c.offer), (10.0, 2.0, None));
        // The tool's own counters, read directly: nothing trails them.
        assert_eq!(c.lag, None);
        let e = s.evaluate("a_total 10\n").unwrap_err();
        assert_eq!(e.error_type(), "missing_series");
    }
}
