//! Support for the shipped gates of tools that cannot be driven from
//! outside (Artillery, JMeter): each gate holds at most the pulled offer's
//! requests in flight and serves its own attempt and failure counters on
//! 127.0.0.1 (`throttle_gate_attempts_total`, `throttle_gate_failures_total`),
//! read with `kind = "prometheus"`. The gates live under `clients/`, and
//! their pages under `docs/tools/` include them verbatim (checked here, so
//! the docs never drift from what the tests run).

use std::path::PathBuf;
use std::time::Duration;

use super::goals::Rig;
use super::pull::{repo, wait_http};
use super::{ChildGuard, TempDir};

/// A file under `clients/`, checked to be included byte for byte in
/// `docs/tools/{page}`. Returns the file's path.
pub fn shipped(file: &str, page: &str) -> PathBuf {
    let path = repo().join("clients").join(file);
    let code = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let doc = std::fs::read_to_string(repo().join("docs/tools").join(page))
        .unwrap_or_else(|e| panic!("cannot read docs/tools/{page}: {e}"));
    assert!(
        doc.contains(code.trim_end()),
        "docs/tools/{page} does not include clients/{file} verbatim"
    );
    path
}

/// The `[targets.signal]` (the gate's own counters at `metrics_url`) and
/// `[targets.control]` (pulled) tables of a gated tool.
pub fn gate_tables(metrics_url: &str) -> String {
    format!(
        r#"[targets.signal]
kind = "prometheus"
url = "{metrics_url}"
attempts = 'throttle_gate_attempts_total'
failures = 'throttle_gate_failures_total'

[targets.control]
kind = "pull"
"#
    )
}

/// The rig of a gated tool once it runs: waits (at most 60 s) for the
/// gate's counters at `metrics_url`, then governs them through the pull
/// control. `tool` is stopped, and `dir` removed, with the rig.
pub async fn rig(
    name: &'static str,
    path: &str,
    metrics_url: String,
    listen: String,
    tool: ChildGuard,
    dir: TempDir,
) -> Rig {
    // The gate serves its counters from the first request on.
    let up = wait_http(&metrics_url, Duration::from_secs(60)).await;
    assert!(up, "the gate never served /metrics:\n{}", tool.tail());
    Rig {
        name,
        path: path.to_string(),
        tables: gate_tables(&metrics_url),
        listen: Some(listen),
        procs: vec![Box::new(tool)],
        keep: vec![Box::new(dir)],
    }
}
