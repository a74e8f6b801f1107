//! Support for the shipped gates of tools that cannot be driven from
//! outside (Artillery, JMeter): each gate holds at most the pulled offer's
//! requests in flight and serves its own attempt and failure counters on
//! 127.0.0.1 (`throttle_gate_attempts_total`, `throttle_gate_failures_total`),
//! read with `kind = "prometheus"`. The gates live under `clients/`, and
//! their pages under `docs/tools/` include them verbatim (checked here, so
//! the docs never drift from what the tests run).

use std::path::PathBuf;

use super::pull::repo;

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
