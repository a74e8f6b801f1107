//! `throttle-governor healthcheck`: GET the controller's `/healthz` and exit
//! 0 when it answers 200.
//!
//! Why it exists: the container image is `FROM scratch`, which has no curl
//! or wget, so its `HEALTHCHECK` runs the binary itself. The probe is also
//! handy in scripts (`until throttle-governor healthcheck; do sleep 1; done`).
//!
//! What it may touch: one HTTP GET with a timeout, and the config file when
//! the address comes from its `[server] listen`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

use crate::config::{Config, ConfigError};

/// The default probe URL: the controller's default `[server] listen`.
pub const DEFAULT_URL: &str = "http://127.0.0.1:9464/healthz";

/// Arguments of `throttle-governor healthcheck`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct HealthcheckArgs {
    /// The URL to GET; healthy when it answers 200.
    #[arg(long, default_value = DEFAULT_URL, value_name = "URL", conflicts_with = "config")]
    pub url: String,
    /// Probe the `/healthz` of this config's `[server] listen` instead of
    /// `--url` (an unspecified address such as 0.0.0.0 means loopback).
    #[arg(long, short, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Give up after this long, e.g. `2s`.
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
}

/// Why the probe failed.
#[derive(Debug, Error)]
pub enum HealthcheckError {
    /// The config named by `--config` is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The request could not be made or timed out.
    #[error(
        "GET {url} failed (is the controller running, and is `[server] listen` this address?)"
    )]
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

/// The `/healthz` URL of a controller listening on `listen`.
pub fn healthz_url(listen: SocketAddr) -> String {
    let mut addr = listen;
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    format!("http://{addr}/healthz")
}

/// GETs the URL once (`--url`, or the one `--config` gives); `Ok` when it
/// answers 200 within `args.timeout`.
pub async fn probe(args: &HealthcheckArgs) -> Result<(), HealthcheckError> {
    let url = match &args.config {
        Some(path) => healthz_url(Config::load(path)?.server.listen),
        None => args.url.clone(),
    };
    let request = |source| HealthcheckError::Request {
        url: url.clone(),
        source,
    };
    let client = reqwest::Client::builder()
        .timeout(args.timeout)
        .build()
        .map_err(request)?;
    let status = client.get(&url).send().await.map_err(request)?.status();
    if status == reqwest::StatusCode::OK {
        Ok(())
    } else {
        Err(HealthcheckError::Status {
            url,
            status: status.as_u16(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unspecified_listen_is_probed_on_loopback() {
        assert_eq!(
            healthz_url("0.0.0.0:9464".parse().unwrap()),
            "http://127.0.0.1:9464/healthz"
        );
        assert_eq!(
            healthz_url("[::]:9464".parse().unwrap()),
            "http://[::1]:9464/healthz"
        );
        assert_eq!(
            healthz_url("10.1.2.3:80".parse().unwrap()),
            "http://10.1.2.3:80/healthz"
        );
    }
}
