//! `throttle-governor healthcheck`: GET the controller's `/healthz` and exit
//! 0 when it answers 200.
//!
//! Why it exists: the container image is `FROM scratch`, which has no curl
//! or wget, so its `HEALTHCHECK` runs the binary itself. The probe is also
//! handy in scripts (`until throttle-governor healthcheck; do sleep 1; done`).
//!
//! What it may touch: one HTTP GET with a timeout. Nothing else in the crate.

use std::time::Duration;

use thiserror::Error;

/// The default probe URL: the controller's default `[server] listen`.
pub const DEFAULT_URL: &str = "http://127.0.0.1:9464/healthz";

/// Arguments of `throttle-governor healthcheck`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct HealthcheckArgs {
    /// The URL to GET; healthy when it answers 200.
    #[arg(long, default_value = DEFAULT_URL, value_name = "URL")]
    pub url: String,
    /// Give up after this long, e.g. `2s`.
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
}

/// Why the probe failed.
#[derive(Debug, Error)]
pub enum HealthcheckError {
    /// The request could not be made or timed out.
    #[error("GET {url} failed (is the controller running, and is `[server] listen` this address?)")]
    Request {
        /// The probed URL.
        url: String,
        /// What reqwest said.
        #[source]
        source: reqwest::Error,
    },
    /// The controller answered, but not with 200.
    #[error("GET {url}: status {status}")]
    Status {
        /// The probed URL.
        url: String,
        /// The status it answered with.
        status: u16,
    },
}

/// GETs `args.url` once; `Ok` when it answers 200 within `args.timeout`.
pub async fn probe(args: &HealthcheckArgs) -> Result<(), HealthcheckError> {
    let request = |source| HealthcheckError::Request {
        url: args.url.clone(),
        source,
    };
    let client = reqwest::Client::builder()
        .timeout(args.timeout)
        .build()
        .map_err(request)?;
    let status = client
        .get(&args.url)
        .send()
        .await
        .map_err(request)?
        .status();
    if status == reqwest::StatusCode::OK {
        Ok(())
    } else {
        Err(HealthcheckError::Status {
            url: args.url.clone(),
            status: status.as_u16(),
        })
    }
}
