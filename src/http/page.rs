//! The live page at `/` and the per-target chart it polls.
//!
//! Why it exists: while a run goes, people want to see what each target is
//! doing (its offer and failure fraction over time, the decisions, the
//! capacity estimate, the signal's lag and errors, any advice) without
//! Prometheus or Grafana. The page is one static, self-contained HTML file
//! (inline CSS and script, no fetch outside the controller): every second
//! it reads `/api/v1/targets` for a summary table, and for each selected
//! target `GET /api/v1/targets/{name}/chart`, an HTML fragment holding the
//! capacity report's own charts ([`crate::report::html::charts`], drawn
//! from the live history by [`Report::target_from_telemetry`]) and the
//! latest decisions. There is no second chart implementation in the page.
//!
//! What it may touch: nothing; both routes are read-only, under the same
//! (absent) access rules as `/api/v1/targets`, which they show in another
//! form.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::Surface;
use crate::report::{html, Report};
use crate::telemetry::WindowRecord;

/// The page: static, so it is served as it was compiled.
pub const PAGE: &str = include_str!("page.html");

/// The decisions the chart fragment lists under the charts.
pub const RECENT_DECISIONS: usize = 10;

/// `GET /`.
pub async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        PAGE,
    )
        .into_response()
}

/// `GET /api/v1/targets/{name}/chart`: the target's charts as the capacity
/// report draws them, over the history kept so far, and its latest
/// decisions; 404 for an unknown target.
pub async fn chart(State(s): State<Arc<Surface>>, Path(name): Path<String>) -> Response {
    let Some(t) = Report::target_from_telemetry(&s.telemetry, &name, &s.steady) else {
        return (StatusCode::NOT_FOUND, format!("no target named {name:?}\n")).into_response();
    };
    let mut out = format!(
        "<div class=\"chart\" data-target=\"{}\" data-windows=\"{}\">\n<p class=\"verdict\">{}</p>\n",
        html::esc(&t.name),
        t.history.len(),
        html::esc(&t.verdict)
    );
    out.push_str(&html::charts(&t));
    out.push_str(&decisions(&t.history, RECENT_DECISIONS));
    out.push_str("</div>\n");
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        out,
    )
        .into_response()
}

/// The latest `n` windows that moved the offer or held for a reason worth
/// reading (not the dead band, and not the windows an offer change
/// discards), newest first.
fn decisions(history: &[WindowRecord], n: usize) -> String {
    let mut out = String::from(
        "<table class=\"decisions\"><tr><th>time</th><th>offer</th><th>failures</th><th>decision</th><th>to</th><th>why</th></tr>\n",
    );
    let moves = history
        .iter()
        .rev()
        .filter(|r| r.decision != "hold" || !matches!(r.label, "" | "dead-band" | "offer-change"))
        .take(n);
    for r in moves {
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td>{:.1} s</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.decision,
            r.time_secs,
            num(r.offer),
            r.frac
                .map(|f| format!("{:.1}%", f * 100.0))
                .unwrap_or_else(|| "&mdash;".into()),
            r.decision,
            num(r.to),
            html::esc(r.label)
        );
    }
    out.push_str("</table>\n");
    out
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}
