//! The generic HTTP control: a templated request, and a JSON read-back.
//!
//! Why it exists: most admin APIs take "set the workers to N" as one HTTP
//! request, so one template (`{{value}}` in the URL or body) covers them
//! without code. The read-back is a GET and an RFC 6901 JSON pointer.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};

use super::{format_offer, ControlError};
use crate::auth::Credentials;
use crate::config::{HttpControlConfig, ReadBackConfig};
use crate::signal::http::root_cause;

crate::knob_api!(HttpWriter);

/// Longest body kept from an error response, for the log.
const ERROR_BODY_CHARS: usize = 200;

/// How much of a successful write's answer is read to keep its connection
/// pooled; a longer answer closes the connection instead.
const DRAIN_BYTES: usize = 64 * 1024;
/// Largest read-back body accepted.
const MAX_READ_BACK_BYTES: usize = 1024 * 1024;

/// Sends the templated write.
#[derive(Debug, Clone)]
pub struct HttpWriter {
    client: reqwest::Client,
    method: reqwest::Method,
    url: String,
    body: String,
    headers: HeaderMap,
    timeout: Duration,
    integer: bool,
    credentials: Credentials,
}

impl HttpWriter {
    /// Builds the writer from validated config.
    pub fn new(
        cfg: &HttpControlConfig,
        integer: bool,
        client: reqwest::Client,
    ) -> Result<Self, ControlError> {
        let method = reqwest::Method::from_bytes(cfg.method.as_bytes())
            .map_err(|_| ControlError::Config(format!("`{}` is not an HTTP method", cfg.method)))?;
        let mut headers = HeaderMap::new();
        let ct = HeaderValue::from_str(&cfg.content_type)
            .map_err(|e| ControlError::Config(format!("content_type: {e}")))?;
        headers.insert(CONTENT_TYPE, ct);
        for (k, v) in &cfg.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| ControlError::Config(format!("header `{k}`: {e}")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|e| ControlError::Config(format!("header `{k}`: {e}")))?;
            headers.insert(name, value);
        }
        Ok(HttpWriter {
            client,
            method,
            url: cfg.url.clone(),
            body: cfg.body.clone(),
            headers,
            timeout: cfg.timeout,
            integer,
            credentials: Credentials::resolve(&cfg.auth)
                .map_err(|e| ControlError::Config(format!("auth: {e}")))?,
        })
    }

    /// The templated knob has no read-back of its own: it is confirmed
    /// through `[control.read_back]` or the signal's offer gauge.
    pub async fn committed(&self) -> Result<f64, ControlError> {
        Err(ControlError::Config(
            "the http control reads back through read_back or signal.offer".into(),
        ))
    }

    /// Sends one write of `value`.
    pub async fn write(&self, value: f64) -> Result<(), ControlError> {
        let v = format_offer(self.integer, value);
        let request = self
            .credentials
            .apply(
                self.client
                    .request(self.method.clone(), self.url.replace("{{value}}", &v)),
            )
            .headers(self.headers.clone())
            .body(self.body.replace("{{value}}", &v));
        let fut = async {
            let _slot = crate::signal::http::in_flight().await;
            let mut resp = request.send().await.map_err(map_err)?;
            let status = resp.status();
            if status.is_success() {
                // Read the (small) answer to its end, so that the
                // connection goes back to the pool instead of closing.
                let mut read = 0;
                while let Ok(Some(chunk)) = resp.chunk().await {
                    read += chunk.len();
                    if read > DRAIN_BYTES {
                        break;
                    }
                }
                return Ok(());
            }
            let body = resp.text().await.unwrap_or_default();
            Err(ControlError::Status {
                status: status.as_u16(),
                body: body.chars().take(ERROR_BODY_CHARS).collect(),
            })
        };
        match tokio::time::timeout(self.timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(ControlError::Timeout(self.timeout)),
        }
    }
}

/// Reads the committed offer from a JSON endpoint.
#[derive(Debug, Clone)]
pub struct JsonReadBack {
    client: reqwest::Client,
    url: String,
    pointer: String,
    timeout: Duration,
    credentials: Credentials,
}

impl JsonReadBack {
    /// Builds the read-back; `default_timeout` applies when none is set.
    pub fn new(
        cfg: &ReadBackConfig,
        default_timeout: Duration,
        credentials: Credentials,
        client: reqwest::Client,
    ) -> Self {
        JsonReadBack {
            client,
            url: cfg.url.clone(),
            pointer: cfg.json_pointer.clone(),
            timeout: cfg.timeout.unwrap_or(default_timeout),
            credentials,
        }
    }

    /// GETs the URL and returns the number at the pointer.
    pub async fn read(&self) -> Result<f64, ControlError> {
        let request = self.credentials.apply(self.client.get(&self.url));
        let body = crate::signal::http::fetch_text(request, self.timeout, MAX_READ_BACK_BYTES)
            .await
            .map_err(|e| match e {
                crate::signal::SignalError::Timeout(_) => ControlError::Timeout(self.timeout),
                crate::signal::SignalError::Connect(m) => ControlError::Connect(m),
                crate::signal::SignalError::Status(s) => ControlError::Status {
                    status: s,
                    body: String::new(),
                },
                other => ControlError::ReadBack(other.to_string()),
            })?;
        json_number_at(&body, &self.pointer)
    }
}

/// The number at an RFC 6901 pointer in a JSON document.
pub fn json_number_at(body: &str, pointer: &str) -> Result<f64, ControlError> {
    let doc: serde_json::Value = serde_json::from_str(body)
        .map_err(|e| ControlError::ReadBack(format!("response is not JSON: {e}")))?;
    let v = doc
        .pointer(pointer)
        .ok_or_else(|| ControlError::ReadBack(format!("nothing at JSON pointer `{pointer}`")))?;
    let n = match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if n.is_finite() => Ok(n),
        _ => Err(ControlError::ReadBack(format!(
            "value at `{pointer}` is not a finite number: {v}"
        ))),
    }
}

fn map_err(e: reqwest::Error) -> ControlError {
    if e.is_timeout() {
        ControlError::Timeout(Duration::ZERO)
    } else if e.is_connect() {
        ControlError::Connect(root_cause(&e))
    } else {
        ControlError::Transport(root_cause(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_pointer_reads_numbers_and_numeric_strings() {
        assert_eq!(
            json_number_at(r#"{"workers": 12}"#, "/workers").unwrap(),
            12.0
        );
        assert_eq!(
            json_number_at(r#"{"a": {"b": "3.5"}}"#, "/a/b").unwrap(),
            3.5
        );
        assert_eq!(
            json_number_at(
                r#"{"data":{"attributes":{"vus":7}}}"#,
                "/data/attributes/vus"
            )
            .unwrap(),
            7.0
        );
    }

    #[test]
    fn json_pointer_errors_name_the_problem() {
        let e = json_number_at("not json", "/w").unwrap_err().to_string();
        assert!(e.contains("not JSON"), "{e}");
        let e = json_number_at(r#"{"w": 1}"#, "/x").unwrap_err().to_string();
        assert!(e.contains("/x"), "{e}");
        let e = json_number_at(r#"{"w": null}"#, "/w")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a finite number"), "{e}");
    }

    #[test]
    fn offers_format_and_compare_per_knob() {
        assert_eq!(format_offer(true, 16.0), "16");
        assert_eq!(format_offer(true, 15.6), "16");
        assert_eq!(format_offer(false, 12.5), "12.5");
        assert_eq!(format_offer(false, 100.0), "100");
        assert!(super::super::same_offer(true, 16.0, 16.3));
        assert!(!super::super::same_offer(true, 16.0, 17.0));
        assert!(super::super::same_offer(false, 41000.0, 41000.0001));
        assert!(!super::super::same_offer(false, 12.5, 12.6));
    }
}
