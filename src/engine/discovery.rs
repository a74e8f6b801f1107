//! Service discovery for groups: Prometheus `file_sd` files and HTTP SD.
//!
//! Why it exists: a fleet of load generators changes under a long test.
//! Discovery re-reads its sources every `refresh`, and keeps the last good
//! list when a source fails, so a half-written file never empties a group.
//!
//! What it may touch: the `file_sd` files and the HTTP SD endpoint, each
//! read with a timeout and a size limit. A source that fails is returned
//! as an [`SdFailure`]; the task emits it through the exporter, which logs
//! it.

use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;

use crate::config::group::{parse_sd, Discovered, GroupConfig};
use crate::telemetry::export::SdFailure;

/// The largest service-discovery answer accepted: 4 MiB.
const MAX_SD_BYTES: usize = 4 * 1024 * 1024;

/// Re-reads `file_sd` files and HTTP SD; keeps the last good list when a
/// source fails, so a half-written file never empties a group.
pub struct Discovery {
    files: Vec<PathBuf>,
    http: Option<String>,
    client: reqwest::Client,
    timeout: Duration,
    refresh: Duration,
    next: Instant,
    /// The last good list of instances.
    pub last: Vec<Discovered>,
}

impl Discovery {
    pub fn new(g: &GroupConfig, client: reqwest::Client) -> Self {
        Discovery {
            files: g.file_sd.clone(),
            http: g.http_sd.clone(),
            client,
            timeout: g.timeout,
            refresh: g.refresh,
            next: Instant::now(),
            last: Vec::new(),
        }
    }

    pub fn due(&self) -> bool {
        (!self.files.is_empty() || self.http.is_some()) && Instant::now() >= self.next
    }

    /// Re-reads every source; returns what failed (for the exporter), in
    /// the order it failed.
    pub async fn refresh(&mut self) -> Vec<SdFailure> {
        self.next = Instant::now() + self.refresh;
        let mut found: Vec<Discovered> = Vec::new();
        let mut failures = Vec::new();
        for f in &self.files {
            let text = tokio::time::timeout(self.timeout, tokio::fs::read_to_string(f)).await;
            match text.map(|r| r.map_err(|e| e.to_string())) {
                Ok(Ok(text)) => match parse_sd(&text) {
                    Ok(d) => found.extend(d),
                    Err(e) => failures.push(SdFailure::FileParse {
                        file: f.clone(),
                        error: e.to_string(),
                    }),
                },
                Ok(Err(error)) => failures.push(SdFailure::FileRead {
                    file: f.clone(),
                    error,
                }),
                Err(_) => failures.push(SdFailure::FileTimeout { file: f.clone() }),
            }
        }
        if let Some(url) = &self.http {
            let request = self.client.get(url);
            match crate::signal::http::fetch_text(request, self.timeout, MAX_SD_BYTES).await {
                Ok(text) => match parse_sd(&text) {
                    Ok(d) => found.extend(d),
                    Err(e) => failures.push(SdFailure::Http {
                        url: url.clone(),
                        error: e.to_string(),
                    }),
                },
                Err(e) => failures.push(SdFailure::Http {
                    url: url.clone(),
                    error: e.to_string(),
                }),
            }
        }
        if failures.is_empty() {
            let mut unique: Vec<Discovered> = Vec::new();
            for d in found {
                if !unique.iter().any(|u| u.address == d.address) {
                    unique.push(d);
                }
            }
            self.last = unique;
        }
        failures
    }
}
