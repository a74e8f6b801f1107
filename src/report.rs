//! The capacity report: the throttled steady state, as a measurement.
//!
//! Why it exists: the offer the governor settles on is the target's capacity
//! at the declared failure bound, and that number is what users run the tool
//! for. But a load figure taken while failures are high is an artefact of
//! saturation, so a report must say which of the two it shows. This module
//! decides steadiness from a target's window history (purely, no clock) and
//! renders the report as JSON and as one self-contained HTML file with an
//! inline SVG chart (no network fetches).
//!
//! # The steady-state rule
//! A target is **steady** when its last `windows` (default 10) valid windows
//! contain no Down and every committed offer in them lies within
//! `band` (default ±10 %) of their mean. Windows without a valid signal break
//! the run. One addition: at least half of those windows must be Holds, so
//! that a slow additive climb (+2 % of `last_bad` per window stays inside a
//! ±10 % band for ten windows) is not mistaken for a plateau. The figure is a **capacity** only when the target is steady *and*
//! the observed failure ratio over those windows is within the bound
//! (`<= high`); otherwise the report says so and gives no capacity.

use std::fmt::Write as _;

use serde::Serialize;

use crate::telemetry::WindowRecord;

/// The steady-state rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyRule {
    /// Consecutive windows required.
    pub windows: usize,
    /// Allowed relative distance of each offer from the mean (0.10 = ±10 %).
    pub band: f64,
}

impl Default for SteadyRule {
    fn default() -> Self {
        SteadyRule {
            windows: 10,
            band: 0.10,
        }
    }
}

/// The steady stretch found in a history.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Steady {
    /// Mean committed offer over the steady windows.
    pub offer: f64,
    /// Failures / attempts over the steady windows.
    pub failure_ratio: Option<f64>,
    /// Successful attempts per second over the steady windows.
    pub throughput_per_sec: f64,
}

/// Whether the trailing windows of `history` are steady under `rule`.
pub fn steady(history: &[WindowRecord], rule: &SteadyRule) -> Option<Steady> {
    if rule.windows == 0 {
        return None;
    }
    let mut tail = Vec::with_capacity(rule.windows);
    for r in history.iter().rev() {
        if r.attempts.is_none() || r.decision == "down" {
            return None;
        }
        tail.push(r);
        if tail.len() == rule.windows {
            break;
        }
    }
    if tail.len() < rule.windows {
        return None;
    }
    let holds = tail.iter().filter(|r| r.decision == "hold").count();
    if holds * 2 < tail.len() {
        return None;
    }
    let mean = tail.iter().map(|r| r.offer).sum::<f64>() / tail.len() as f64;
    if !tail
        .iter()
        .all(|r| (r.offer - mean).abs() <= rule.band * mean.abs())
    {
        return None;
    }
    let attempts: f64 = tail.iter().filter_map(|r| r.attempts).sum();
    let failures: f64 = tail.iter().filter_map(|r| r.failures).sum();
    let secs: f64 = tail.iter().filter_map(|r| r.window_secs).sum();
    Some(Steady {
        offer: mean,
        failure_ratio: (attempts > 0.0).then(|| failures / attempts),
        throughput_per_sec: if secs > 0.0 {
            (attempts - failures) / secs
        } else {
            0.0
        },
    })
}

/// One target in the report.
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    /// The target's name.
    pub name: String,
    /// `concurrency` or `rate`.
    pub control: &'static str,
    /// Whether the run ended in a steady state.
    pub steady: bool,
    /// Whether the steady figure is within the failure bound: a capacity.
    pub within_bound: bool,
    /// Mean committed offer over the steady windows (null when not steady).
    pub steady_offer: Option<f64>,
    /// The declared failure bound (`high`).
    pub failure_bound: f64,
    /// Failure ratio over the steady windows.
    pub observed_failure_ratio: Option<f64>,
    /// Successful attempts per second over the steady windows.
    pub throughput_per_sec: Option<f64>,
    /// The congestion memory at the end.
    pub last_bad: Option<f64>,
    /// Windows recorded.
    pub windows: usize,
    /// A plain sentence saying what the figure is.
    pub verdict: String,
    /// Per window: time, offer, attempts, failures, frac, decision.
    pub history: Vec<WindowRecord>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The tool's version.
    pub version: &'static str,
    /// The steady-state rule in force.
    pub steady_rule: String,
    /// One entry per target.
    pub targets: Vec<TargetReport>,
}

impl TargetReport {
    /// Builds one target's report from its history.
    pub fn new(
        name: &str,
        control: &'static str,
        high: f64,
        last_bad: Option<f64>,
        history: Vec<WindowRecord>,
        rule: &SteadyRule,
    ) -> Self {
        let s = steady(&history, rule);
        let within = s.is_some_and(|s| s.failure_ratio.is_some_and(|f| f <= high));
        let verdict = match s {
            None => format!(
                "{name}: never became steady ({} windows); no capacity figure",
                history.len()
            ),
            Some(s) if within => format!(
                "{name}: capacity {} {control} at steady state, failure ratio {} within the bound {}",
                short(s.offer),
                s.failure_ratio.map(crate::governor::pct).unwrap_or_default(),
                crate::governor::pct(high)
            ),
            Some(s) => format!(
                "{name}: steady at {} {control} but the failure ratio {} exceeds the bound {}; this is saturation, not a capacity",
                short(s.offer),
                s.failure_ratio.map(crate::governor::pct).unwrap_or("n/a".into()),
                crate::governor::pct(high)
            ),
        };
        TargetReport {
            name: name.to_string(),
            control,
            steady: s.is_some(),
            within_bound: within,
            steady_offer: s.map(|s| s.offer),
            failure_bound: high,
            observed_failure_ratio: s.and_then(|s| s.failure_ratio),
            throughput_per_sec: s.map(|s| s.throughput_per_sec),
            last_bad,
            windows: history.len(),
            verdict,
            history,
        }
    }
}

fn short(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v:.1}")
    }
}

impl Report {
    /// A report over targets.
    pub fn new(targets: Vec<TargetReport>, rule: &SteadyRule) -> Self {
        Report {
            version: env!("CARGO_PKG_VERSION"),
            steady_rule: format!(
                "{} consecutive valid windows with no Down, at least half of them Holds, and every offer within ±{}% of their mean",
                rule.windows,
                rule.band * 100.0
            ),
            targets,
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// Plain text for the terminal.
    pub fn to_text(&self) -> String {
        let mut out = String::from("Capacity report\n");
        for t in &self.targets {
            let _ = writeln!(out, "  {}", t.verdict);
            if let Some(tp) = t.throughput_per_sec {
                let _ = writeln!(
                    out,
                    "    throughput {tp:.1} successful attempts/s over the steady windows"
                );
            }
            if let Some(lb) = t.last_bad {
                let _ = writeln!(out, "    congestion last seen at {}", short(lb));
            }
        }
        let _ = writeln!(out, "  (steady: {})", self.steady_rule);
        out
    }

    /// One self-contained HTML page with an inline SVG chart per target.
    pub fn to_html(&self) -> String {
        let mut out = String::new();
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>throttle-governor capacity report</title>\n<style>\nbody{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}td:first-child{text-align:left}.ok{color:#176917}.bad{color:#a11}svg{border:1px solid #ddd;background:#fff}.legend span{margin-right:1.5em}\n</style></head><body>\n");
        out.push_str("<h1>throttle-governor capacity report</h1>\n");
        let _ = writeln!(out, "<p>Steady state: {}.</p>", esc(&self.steady_rule));
        out.push_str("<table><tr><th>target</th><th>knob</th><th>steady</th><th>steady offer</th><th>failure bound</th><th>observed failure ratio</th><th>throughput /s</th><th>last_bad</th><th>windows</th></tr>\n");
        for t in &self.targets {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&t.name),
                t.control,
                if t.within_bound { "ok" } else { "bad" },
                if t.steady { "yes" } else { "no" },
                t.steady_offer.map(short).unwrap_or("&mdash;".into()),
                crate::governor::pct(t.failure_bound),
                t.observed_failure_ratio.map(crate::governor::pct).unwrap_or("&mdash;".into()),
                t.throughput_per_sec.map(|v| format!("{v:.1}")).unwrap_or("&mdash;".into()),
                t.last_bad.map(short).unwrap_or("&mdash;".into()),
                t.windows
            );
        }
        out.push_str("</table>\n");
        for t in &self.targets {
            let _ = writeln!(
                out,
                "<h2>{}</h2>\n<p class=\"{}\">{}</p>",
                esc(&t.name),
                if t.within_bound { "ok" } else { "bad" },
                esc(&t.verdict)
            );
            out.push_str(&svg_chart(t));
        }
        out.push_str("</body></html>\n");
        out
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Offer (left axis) against attempt-failure fraction (right axis, 0-100 %).
fn svg_chart(t: &TargetReport) -> String {
    let (w, h, pad) = (900.0, 320.0, 50.0);
    let pw = w - 2.0 * pad;
    let ph = h - 2.0 * pad;
    let hist = &t.history;
    let tmax = hist.last().map(|r| r.time_secs).unwrap_or(1.0).max(1e-9);
    let omax = hist
        .iter()
        .map(|r| r.offer.max(r.to))
        .chain(t.last_bad)
        .fold(1.0, f64::max)
        * 1.1;
    let x = |s: f64| pad + pw * s / tmax;
    let yo = |o: f64| pad + ph * (1.0 - o / omax);
    let yf = |f: f64| pad + ph * (1.0 - f.clamp(0.0, 1.0));
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"chart-{}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"offer against attempt-failure fraction\">\n",
        esc(&t.name)
    );
    let _ = writeln!(svg, "<rect x=\"{pad}\" y=\"{pad}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>");
    // Axes labels.
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#1f5fbf\">offer ({})</text>",
        pad,
        pad - 10.0,
        t.control
    );
    let _ = writeln!(svg, "<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#c0392b\" text-anchor=\"end\">attempt-failure fraction</text>", w - pad, pad - 10.0);
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>",
        pad - 5.0,
        pad + 4.0,
        short(omax)
    );
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\">0</text>",
        pad - 12.0,
        h - pad
    );
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\">100%</text>",
        w - pad + 4.0,
        pad + 4.0
    );
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{:.0}s</text>",
        w - pad,
        h - pad + 16.0,
        tmax
    );
    // Failure bound (right axis) and last_bad (left axis).
    let yb = yf(t.failure_bound);
    let _ = writeln!(svg, "<line class=\"bound\" x1=\"{pad}\" x2=\"{}\" y1=\"{yb:.1}\" y2=\"{yb:.1}\" stroke=\"#c0392b\" stroke-dasharray=\"6 4\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" fill=\"#c0392b\" text-anchor=\"end\">failure bound {}</text>", w - pad, w - pad - 4.0, yb - 4.0, crate::governor::pct(t.failure_bound));
    if let Some(lb) = t.last_bad {
        let y = yo(lb);
        let _ = writeln!(svg, "<line class=\"last-bad\" x1=\"{pad}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#8e44ad\" stroke-dasharray=\"2 3\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" fill=\"#8e44ad\">last_bad {}</text>", w - pad, pad + 4.0, y - 4.0, short(lb));
    }
    if let Some(so) = t.steady_offer {
        let y = yo(so);
        let _ = writeln!(svg, "<line class=\"steady\" x1=\"{pad}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#176917\" stroke-opacity=\"0.5\"/>", w - pad);
    }
    let offer_pts: Vec<String> = hist
        .iter()
        .map(|r| format!("{:.1},{:.1}", x(r.time_secs), yo(r.offer)))
        .collect();
    let frac_pts: Vec<String> = hist
        .iter()
        .filter_map(|r| {
            r.frac
                .map(|f| format!("{:.1},{:.1}", x(r.time_secs), yf(f)))
        })
        .collect();
    let _ = writeln!(svg, "<polyline class=\"offer\" fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"2\" points=\"{}\"/>", offer_pts.join(" "));
    let _ = writeln!(svg, "<polyline class=\"frac\" fill=\"none\" stroke=\"#c0392b\" stroke-width=\"1.5\" points=\"{}\"/>", frac_pts.join(" "));
    svg.push_str("</svg>\n<p class=\"legend\"><span style=\"color:#1f5fbf\">&#9644; offer</span><span style=\"color:#c0392b\">&#9644; attempt-failure fraction</span><span style=\"color:#c0392b\">- - failure bound</span><span style=\"color:#8e44ad\">&middot;&middot; last_bad</span></p>\n");
    svg
}

/// A report file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct ReportError {
    /// The path.
    pub path: String,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

impl Report {
    /// Writes the JSON and the HTML report where asked.
    pub fn write_files(
        &self,
        json: Option<&std::path::PathBuf>,
        html: Option<&std::path::PathBuf>,
    ) -> Result<(), ReportError> {
        let write = |path: &std::path::PathBuf, text: String| {
            std::fs::write(path, text).map_err(|source| ReportError {
                path: path.display().to_string(),
                source,
            })
        };
        if let Some(p) = json {
            write(p, self.to_json())?;
        }
        if let Some(p) = html {
            write(p, self.to_html())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(
        t: f64,
        offer: f64,
        attempts: f64,
        failures: f64,
        decision: &'static str,
    ) -> WindowRecord {
        WindowRecord {
            time_secs: t,
            offer,
            attempts: Some(attempts),
            failures: Some(failures),
            frac: (attempts > 0.0).then(|| failures / attempts),
            window_secs: Some(1.0),
            decision,
            to: offer,
            label: "dead-band",
            discarded: false,
            unconfirmed: false,
        }
    }

    #[test]
    fn steady_needs_n_windows_without_down_in_band() {
        let rule = SteadyRule::default();
        let mut h: Vec<_> = (0..10)
            .map(|i| rec(i as f64, 100.0, 100.0, 2.0, "hold"))
            .collect();
        let s = steady(&h, &rule).unwrap();
        assert_eq!(s.offer, 100.0);
        assert_eq!(s.failure_ratio, Some(0.02));
        assert_eq!(s.throughput_per_sec, 98.0);
        // Nine windows are not enough.
        assert!(steady(&h[1..], &rule).is_none());
        // A Down in the stretch breaks it.
        h[5].decision = "down";
        assert!(steady(&h, &rule).is_none());
        // An offer outside ±10 % of the mean breaks it.
        let mut h: Vec<_> = (0..10)
            .map(|i| rec(i as f64, 100.0, 100.0, 0.0, "hold"))
            .collect();
        h[9].offer = 130.0;
        assert!(steady(&h, &rule).is_none());
        // A steady climb (Ups, no Downs) inside the band is not a plateau.
        let h: Vec<_> = (0..10)
            .map(|i| rec(i as f64, 100.0 + i as f64, 100.0, 0.0, "up"))
            .collect();
        assert!(steady(&h, &rule).is_none());
        // A signal error breaks it.
        let mut h: Vec<_> = (0..10)
            .map(|i| rec(i as f64, 100.0, 100.0, 0.0, "hold"))
            .collect();
        h[3].attempts = None;
        assert!(steady(&h, &rule).is_none());
    }

    #[test]
    fn verdict_separates_capacity_from_saturation() {
        let rule = SteadyRule::default();
        let good: Vec<_> = (0..12)
            .map(|i| rec(i as f64, 40.0, 400.0, 4.0, "hold"))
            .collect();
        let t = TargetReport::new("a", "concurrency", 0.05, Some(48.0), good, &rule);
        assert!(t.steady && t.within_bound);
        assert!(t.verdict.contains("capacity 40"), "{}", t.verdict);

        let sat: Vec<_> = (0..12)
            .map(|i| rec(i as f64, 1.0, 10.0, 9.0, "hold"))
            .collect();
        let t = TargetReport::new("b", "concurrency", 0.05, Some(2.0), sat, &rule);
        assert!(t.steady && !t.within_bound);
        assert!(t.verdict.contains("not a capacity"), "{}", t.verdict);

        let t = TargetReport::new("c", "rate", 0.05, None, vec![], &rule);
        assert!(!t.steady && t.steady_offer.is_none());
        assert!(t.verdict.contains("never became steady"));
    }

    #[test]
    fn html_is_self_contained_with_svg() {
        let rule = SteadyRule::default();
        let h: Vec<_> = (0..12)
            .map(|i| rec(i as f64, 40.0 + i as f64, 400.0, 4.0, "up"))
            .collect();
        let r = Report::new(
            vec![TargetReport::new(
                "x<y",
                "concurrency",
                0.05,
                Some(48.0),
                h,
                &rule,
            )],
            &rule,
        );
        let html = r.to_html();
        assert!(html.contains("<svg") && html.contains("class=\"offer\""));
        assert!(html.contains("x&lt;y"));
        assert!(
            !html.contains("http://")
                || html
                    .matches("http://")
                    .all(|_| html.contains("xmlns=\"http://www.w3.org/2000/svg\""))
        );
        assert!(!html.contains("<script src") && !html.contains("<link"));
        let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(json["targets"][0]["history"].as_array().unwrap().len(), 12);
    }
}
