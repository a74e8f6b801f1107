//! The capacity report as one self-contained HTML page.
//!
//! Why it exists: a report is passed around (attached to a ticket, opened
//! from a CI artefact), so it must render with no network and no script: an
//! inline SVG chart per target (offer against attempt-failure fraction, the
//! settled period shaded, the capacity line, non-evidence windows marked,
//! each movement's verdict in a tooltip) and the evidence table the
//! capacity figure rests on, with the background failure rate and the
//! verdicts' confidence under `robust` and `gentle`.
//!
//! What it may touch: nothing; it renders a [`Report`] into a string.

use std::fmt::Write as _;

use super::{level_offers, short, verdicts, LevelStats, Report, TargetReport};
use crate::governor::pct;

/// Renders the page.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>throttle-governor capacity report</title>\n<style>\nbody{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}td:first-child{text-align:left}.ok{color:#176917}.bad{color:#a11}svg{border:1px solid #ddd;background:#fff}.legend span{margin-right:1.5em}tr.capacity{background:#e6f4e6;font-weight:bold}tr.next-up{background:#fbeaea}\n</style></head><body>\n");
    out.push_str("<h1>throttle-governor capacity report</h1>\n");
    let _ = writeln!(out, "<p>Steady state: {}.</p>", esc(&report.steady_rule));
    out.push_str("<table class=\"summary\"><tr><th>target</th><th>knob</th><th>steady</th><th>capacity</th><th>steady offer (mean)</th><th>failure bound</th><th>observed failure ratio</th><th>throughput /s</th><th>last_bad</th><th>windows</th></tr>\n");
    for t in &report.targets {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td class=\"capacity\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&t.name),
            t.control,
            if t.within_bound { "ok" } else { "bad" },
            if t.steady { "yes" } else { "no" },
            t.capacity.map(short).unwrap_or("&mdash;".into()),
            t.steady_offer.map(short).unwrap_or("&mdash;".into()),
            pct(t.failure_bound),
            t.observed_failure_ratio.map(pct).unwrap_or("&mdash;".into()),
            t.throughput_per_sec.map(|v| format!("{v:.1}")).unwrap_or("&mdash;".into()),
            t.last_bad.map(short).unwrap_or("&mdash;".into()),
            t.windows
        );
    }
    out.push_str("</table>\n");
    for t in &report.targets {
        let _ = writeln!(
            out,
            "<h2>{}</h2>\n<p class=\"verdict {}\">{}</p>",
            esc(&t.name),
            if t.within_bound { "ok" } else { "bad" },
            esc(&t.verdict)
        );
        if let Some(why) = &t.why_not_steady {
            let _ = writeln!(
                out,
                "<p class=\"why-not-steady bad\">Not steady ({}): {}</p>",
                t.not_steady_reason.unwrap_or(""),
                esc(why)
            );
        }
        out.push_str(&charts(t));
        out.push_str(&evidence_table(t));
        out.push_str(&verdicts_table(t));
    }
    out.push_str("</body></html>\n");
    out
}

/// One target's charts, as the report inlines them: offer against
/// attempt-failure fraction, and the window latency against its bound when
/// there is one. The live page (the `http` module's chart route) serves the
/// same fragment, so the two cannot drift.
pub fn charts(t: &TargetReport) -> String {
    let mut out = svg_chart(t);
    out.push_str(&latency_chart(t));
    out
}

/// The time axis of a history: from the start of its first window (0 for
/// a whole run; later when a live history has dropped its oldest windows)
/// to its last window.
fn time_span(hist: &[crate::telemetry::WindowRecord]) -> (f64, f64) {
    let t0 = hist
        .first()
        .map(|r| (r.time_secs - r.window_secs.unwrap_or(0.0)).max(0.0))
        .unwrap_or(0.0);
    let t1 = hist.last().map(|r| r.time_secs).unwrap_or(1.0);
    // A full run starts at 0 as before; only a trimmed history starts later.
    let t0 = if t0 <= t1 * 0.05 { 0.0 } else { t0 };
    (t0, t1.max(t0 + 1e-9))
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The settled period's levels, highest first, with the capacity and the
/// next step up marked.
fn evidence_table(t: &TargetReport) -> String {
    let Some(e) = &t.evidence else {
        return String::new();
    };
    let mut out = String::new();
    if let Some(s) = &t.settled {
        let _ = writeln!(
            out,
            "<p class=\"settled\">Settled over {} evidence windows ({:.1}–{:.1} s): offer {}–{}, {} back-off{}{}; levels of {}. Not evidence: {} discarded, {} unconfirmed windows.</p>",
            s.windows,
            s.from_secs,
            s.to_secs,
            short(s.offer_min),
            short(s.offer_max),
            s.backoffs,
            if s.backoffs == 1 { "" } else { "s" },
            match (s.peak_min, s.peak_max) {
                (Some(a), Some(b)) if a == b => format!(" from {}", short(a)),
                (Some(a), Some(b)) => format!(" from {}–{}", short(a), short(b)),
                _ => String::new(),
            },
            short(s.level_width),
            t.discarded_windows,
            t.unconfirmed_windows
        );
    }
    let lat_head = t
        .latency_bound
        .map(|b| {
            format!(
                "<th>{} (median of windows)</th>",
                crate::governor::latency_bound::quantile_name(b.quantile)
            )
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "<table class=\"evidence\" id=\"evidence-{}\"><tr><th>offer</th><th>windows</th><th>attempts</th><th>failures</th><th>failure ratio</th><th>95% interval</th>{lat_head}<th>within bound</th><th></th></tr>",
        esc(&t.name)
    );
    let is = |a: &Option<LevelStats>, l: &LevelStats| a.as_ref().is_some_and(|c| c == l);
    for l in e.levels.iter().rev() {
        let (class, note) = if is(&e.capacity, l) {
            ("capacity", "capacity")
        } else if is(&e.next_step_up, l) {
            ("next-up", "next step up")
        } else {
            ("", "")
        };
        let lat_cell = match (t.latency_bound, l.latency_within_bound) {
            (Some(_), Some(ok)) => format!(
                "<td class=\"{}\">{}</td>",
                if ok { "ok" } else { "bad" },
                l.latency_secs
                    .map(crate::governor::latency_bound::seconds)
                    .unwrap_or("&mdash;".into())
            ),
            (Some(_), None) => "<td>&mdash;</td>".into(),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}–{}</td>{lat_cell}<td class=\"{}\">{}</td><td>{note}</td></tr>",
            level_offers(l),
            l.windows,
            short(l.attempts.round()),
            short(l.failures.round()),
            pct(l.failure_ratio),
            pct(l.interval.low),
            pct(l.interval.high),
            if l.within_bound { "ok" } else { "bad" },
            if l.within_bound { "yes" } else { "no" }
        );
    }
    out.push_str("</table>\n");
    out
}

/// The background failure rate in a sentence, and per verdict class the
/// windows and what they rested on (`robust` and `gentle` only).
fn verdicts_table(t: &TargetReport) -> String {
    let Some(v) = &t.verdicts else {
        return String::new();
    };
    let mut out = format!(
        "<p class=\"background\">Background: {}.</p>\n<table class=\"verdicts\" id=\"verdicts-{}\"><tr><th>verdict</th><th>windows</th><th>median attempts</th><th>median 95% interval width</th></tr>\n",
        esc(&v.background_note),
        esc(&t.name)
    );
    for c in &v.classes {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            c.verdict,
            c.windows,
            short(c.median_attempts),
            pct(c.median_interval_width)
        );
    }
    out.push_str("</table>\n");
    out
}

/// Offer (left axis) against attempt-failure fraction (right axis, 0-100 %).
fn svg_chart(t: &TargetReport) -> String {
    let (w, h, pad) = (900.0, 320.0, 50.0);
    let pw = w - 2.0 * pad;
    let ph = h - 2.0 * pad;
    let hist = &t.history;
    let (tmin, tmax) = time_span(hist);
    let omax = hist
        .iter()
        .map(|r| r.offer.max(r.to))
        .chain(t.last_bad)
        .fold(1.0, f64::max)
        * 1.1;
    let x = |s: f64| pad + pw * (s - tmin) / (tmax - tmin);
    let yo = |o: f64| pad + ph * (1.0 - o / omax);
    let yf = |f: f64| pad + ph * (1.0 - f.clamp(0.0, 1.0));
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"chart-{}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"offer against attempt-failure fraction\">\n",
        esc(&t.name)
    );
    if let Some(s) = &t.settled {
        let (x0, x1) = (x(s.from_secs), x(s.to_secs));
        let _ = writeln!(svg, "<rect class=\"settled\" x=\"{x0:.1}\" y=\"{pad}\" width=\"{:.1}\" height=\"{ph}\" fill=\"#176917\" fill-opacity=\"0.07\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#176917\">settled</text>", (x1 - x0).max(1.0), x0 + 3.0, h - pad - 4.0);
    }
    let _ = writeln!(svg, "<rect x=\"{pad}\" y=\"{pad}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>");
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
    if tmin > 0.0 {
        let _ = writeln!(
            svg,
            "<text x=\"{pad}\" y=\"{}\" font-size=\"11\">{tmin:.0}s</text>",
            h - pad + 16.0
        );
    }
    let yb = yf(t.failure_bound);
    let _ = writeln!(svg, "<line class=\"bound\" x1=\"{pad}\" x2=\"{}\" y1=\"{yb:.1}\" y2=\"{yb:.1}\" stroke=\"#c0392b\" stroke-dasharray=\"6 4\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" fill=\"#c0392b\" text-anchor=\"end\">failure bound {}</text>", w - pad, w - pad - 4.0, yb - 4.0, pct(t.failure_bound));
    if let Some(lb) = t.last_bad {
        let y = yo(lb);
        let _ = writeln!(svg, "<line class=\"last-bad\" x1=\"{pad}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#8e44ad\" stroke-dasharray=\"2 3\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" fill=\"#8e44ad\">last_bad {}</text>", w - pad, pad + 4.0, y - 4.0, short(lb));
    }
    if let Some(c) = t.capacity {
        let y = yo(c);
        let _ = writeln!(svg, "<line class=\"capacity\" x1=\"{pad}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#176917\" stroke-width=\"1.5\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" fill=\"#176917\">capacity {}</text>", w - pad, pad + 90.0, y - 4.0, short(c));
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
    // Each movement with a verdict: a marker whose tooltip says how sure
    // the verdict was (holds are too many to mark on a long run).
    for r in hist.iter().filter(|r| r.decision != "hold") {
        if let Some(tip) = verdicts::tooltip(r) {
            let _ = writeln!(svg, "<circle class=\"verdict\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#1f5fbf\" fill-opacity=\"0.5\"><title>{} {} → {}: {}</title></circle>", x(r.time_secs), yo(r.offer), r.decision, short(r.offer), short(r.to), esc(&tip));
        }
    }
    for r in hist.iter().filter(|r| r.discarded || r.unconfirmed) {
        let (class, colour) = if r.unconfirmed {
            ("unconfirmed", "#e67e22")
        } else {
            ("discarded", "#7f8c8d")
        };
        let _ = writeln!(svg, "<circle class=\"{class}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"none\" stroke=\"{colour}\"/>", x(r.time_secs), yo(r.offer));
    }
    svg.push_str("</svg>\n<p class=\"legend\"><span style=\"color:#1f5fbf\">&#9644; offer</span><span style=\"color:#c0392b\">&#9644; attempt-failure fraction</span><span style=\"color:#c0392b\">- - failure bound</span><span style=\"color:#8e44ad\">&middot;&middot; last_bad</span><span style=\"color:#176917\">&#9644; capacity, shaded: settled period</span><span style=\"color:#7f8c8d\">&#9675; discarded</span><span style=\"color:#e67e22\">&#9675; unconfirmed</span>");
    if t.verdicts.is_some() {
        svg.push_str(
            "<span style=\"color:#1f5fbf\">&#9679; a movement: hover for its verdict</span>",
        );
    }
    svg.push_str("</p>\n");
    svg
}

/// The window latency quantile against its bound and clean level (a
/// latency bound only; empty otherwise).
fn latency_chart(t: &TargetReport) -> String {
    let Some(b) = t.latency_bound else {
        return String::new();
    };
    let (w, h, pad) = (900.0, 220.0, 50.0);
    let pw = w - 2.0 * pad;
    let ph = h - 2.0 * pad;
    let hist = &t.history;
    let (tmin, tmax) = time_span(hist);
    let lmax = hist
        .iter()
        .filter_map(|r| r.latency_secs)
        .fold(b.bound_secs, f64::max)
        * 1.15;
    let x = |s: f64| pad + pw * (s - tmin) / (tmax - tmin);
    let y = |v: f64| pad + ph * (1.0 - (v / lmax).clamp(0.0, 1.0));
    let q = crate::governor::latency_bound::quantile_name(b.quantile);
    let secs = crate::governor::latency_bound::seconds;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"latency-{}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"window latency {q} against its bound\">\n",
        esc(&t.name)
    );
    if let Some(s) = &t.settled {
        let (x0, x1) = (x(s.from_secs), x(s.to_secs));
        let _ = writeln!(svg, "<rect class=\"settled\" x=\"{x0:.1}\" y=\"{pad}\" width=\"{:.1}\" height=\"{ph}\" fill=\"#176917\" fill-opacity=\"0.07\"/>", (x1 - x0).max(1.0));
    }
    let _ = writeln!(svg, "<rect x=\"{pad}\" y=\"{pad}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>");
    let _ = writeln!(
        svg,
        "<text x=\"{pad}\" y=\"{}\" font-size=\"12\" fill=\"#16a085\">window latency {q}</text>",
        pad - 10.0
    );
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text><text x=\"{}\" y=\"{}\" font-size=\"11\">0</text>",
        pad - 5.0,
        pad + 4.0,
        secs(lmax),
        pad - 12.0,
        h - pad
    );
    for (class, v, dash, label) in [
        ("latency-bound", b.bound_secs, "6 4", "bound"),
        ("latency-low", b.low_secs, "2 3", "clean below"),
    ] {
        let yv = y(v);
        let _ = writeln!(svg, "<line class=\"{class}\" x1=\"{pad}\" x2=\"{}\" y1=\"{yv:.1}\" y2=\"{yv:.1}\" stroke=\"#c0392b\" stroke-dasharray=\"{dash}\"/><text x=\"{}\" y=\"{:.1}\" font-size=\"11\" fill=\"#c0392b\" text-anchor=\"end\">{label} {}</text>", w - pad, w - pad - 4.0, yv - 4.0, secs(v));
    }
    let pts: Vec<String> = hist
        .iter()
        .filter_map(|r| {
            r.latency_secs
                .map(|v| format!("{:.1},{:.1}", x(r.time_secs), y(v)))
        })
        .collect();
    let _ = writeln!(svg, "<polyline class=\"latency\" fill=\"none\" stroke=\"#16a085\" stroke-width=\"1.5\" points=\"{}\"/>", pts.join(" "));
    for r in hist
        .iter()
        .filter(|r| r.latency_drove && r.decision == "down")
    {
        if let Some(v) = r.latency_secs {
            let _ = writeln!(svg, "<circle class=\"latency-backoff\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"#c0392b\"/>", x(r.time_secs), y(v));
        }
    }
    svg.push_str("</svg>\n<p class=\"legend\"><span style=\"color:#16a085\">&#9644; window latency</span><span style=\"color:#c0392b\">- - latency bound, &middot;&middot; clean level</span><span style=\"color:#c0392b\">&#9679; back-off driven by latency</span></p>\n");
    svg
}
