//! The terminal view: one status line per target, redrawn in place below
//! the log, while stderr is a terminal.
//!
//! Why it exists: on a terminal, a person watching a run (`run` or `demo`)
//! wants each target's offer, failure fraction and last decision now, not
//! scrolled away in the log. The block is redrawn every 250 ms; a log line
//! first erases it (`clear_block`, called by the log writer) and the next
//! redraw puts it back below, so the two never overwrite each other. When
//! stderr is not a terminal nothing here runs: piped output stays plain log
//! lines.
//!
//! What it may touch: stderr, and nothing else.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{lock, TargetStatus, Telemetry};

/// The most targets the block shows; a last line counts the rest.
pub const MAX_LINES: usize = 20;

/// Status lines now on the screen below the log.
static DRAWN: Mutex<usize> = Mutex::new(0);

/// Erases the status block (the caller holds stderr's lock), leaving the
/// cursor where the block began.
pub(crate) fn clear_block(err: &mut impl Write) -> std::io::Result<()> {
    let mut drawn = lock(&DRAWN);
    let n = std::mem::take(&mut *drawn);
    if n > 0 {
        write!(err, "\x1b[{n}A")?;
    }
    err.write_all(b"\r\x1b[J")
}

/// One target's line.
pub fn status_line(s: &TargetStatus) -> String {
    let knob = if s.knob == "rate" {
        crate::governor::Control::Rate
    } else {
        crate::governor::Control::Concurrency
    };
    let mut line = format!(
        "{}: offer {} | failures {} | {} | windows {}",
        s.name,
        super::logging::offer(knob, s.offer),
        s.last_frac.map(crate::governor::pct).unwrap_or("-".into()),
        match (s.last_decision, s.last_label) {
            (Some(d), Some(l)) if !l.is_empty() => format!("{d} ({l})"),
            (Some(d), _) => d.to_string(),
            (None, _) => "waiting".to_string(),
        },
        s.windows
    );
    if let Some(c) = s.capacity.figure() {
        line.push_str(&format!(
            " | capacity {}{} {}",
            if c.lower_bound { ">= " } else { "" },
            super::logging::offer(knob, c.offer),
            if c.lower_bound {
                "steady, a lower bound"
            } else {
                s.capacity.state().unwrap_or("")
            }
        ));
        if let Some(b) = &c.dead_band {
            line.push_str(&format!(
                ", in the dead band: {} failed (clean below {}; set `low` above it if that is the background)",
                crate::governor::pct(b.failure_ratio),
                crate::governor::pct(b.clean_below)
            ));
        }
    }
    if let Some(e) = &s.last_error {
        line.push_str(&format!(" | error: {e}"));
    }
    line
}

/// The block: a header with the elapsed time, then one line per target (at
/// most [`MAX_LINES`]), each cut to `width` characters.
pub fn block(statuses: &[TargetStatus], elapsed: Duration, width: usize) -> Vec<String> {
    let mut out = vec![format!("[{:>6.1}s]", elapsed.as_secs_f64())];
    out.extend(
        statuses
            .iter()
            .take(MAX_LINES)
            .map(|s| status_line(s).chars().take(width).collect()),
    );
    if statuses.len() > MAX_LINES {
        out.push(format!(
            "... and {} more targets (see the live page)",
            statuses.len() - MAX_LINES
        ));
    }
    out
}

fn draw(lines: &[String]) {
    let mut err = std::io::stderr().lock();
    let _ = clear_block(&mut err);
    for l in lines {
        let _ = writeln!(err, "{l}");
    }
    *lock(&DRAWN) = lines.len();
    let _ = err.flush();
}

/// Redraws the block every 250 ms until `token` is cancelled, then erases
/// it. Call it only when stderr is a terminal.
pub fn spawn(telemetry: Arc<Telemetry>, token: CancellationToken) -> tokio::task::JoinHandle<()> {
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(160usize)
        .max(20);
    tokio::spawn(async move {
        let started = Instant::now();
        let mut iv = tokio::time::interval(Duration::from_millis(250));
        loop {
            tokio::select! {
                _ = token.cancelled() => break,
                _ = iv.tick() => {}
            }
            draw(&block(&telemetry.statuses(), started.elapsed(), width));
        }
        let mut err = std::io::stderr().lock();
        let _ = clear_block(&mut err);
        let _ = err.flush();
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(name: &str, offer: f64) -> TargetStatus {
        let p = crate::governor::Params::new(
            crate::governor::Control::Concurrency,
            Some(100.0),
            1.0,
            None,
            0.05,
            None,
        )
        .unwrap();
        let mut s = TargetStatus::initial(name, &p, false);
        s.offer = offer;
        s
    }

    #[test]
    fn one_line_per_target_up_to_the_cap_then_a_count() {
        let few: Vec<_> = (0..3)
            .map(|i| status(&format!("t{i}"), 10.0 + i as f64))
            .collect();
        let lines = block(&few, Duration::from_secs(2), 200);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(
            lines[2].starts_with("t1: offer 11 | failures - | waiting"),
            "{lines:?}"
        );
        let many: Vec<_> = (0..MAX_LINES + 5)
            .map(|i| status(&format!("t{i}"), 1.0))
            .collect();
        let lines = block(&many, Duration::from_secs(2), 10);
        assert_eq!(lines.len(), MAX_LINES + 2);
        assert!(lines[1].chars().count() <= 10);
        assert!(lines.last().unwrap().contains("5 more targets"));
    }

    #[test]
    fn a_steady_figure_that_is_a_lower_bound_says_so() {
        use crate::telemetry::{CapacityEstimate, CapacityFigure};
        let figure = CapacityFigure {
            offer: 8.0,
            failure_ratio: 0.0,
            interval: [0.0, 0.01],
            windows: 10,
            attempts: 800.0,
            failures: 0.0,
            next_step_up: None,
            lower_bound: true,
            dead_band: None,
        };
        let mut s = status("t", 8.0);
        s.capacity = CapacityEstimate::Steady(figure);
        let line = status_line(&s);
        assert!(
            line.ends_with("| capacity >= 8 steady, a lower bound"),
            "{line}"
        );
        s.capacity = CapacityEstimate::Steady(CapacityFigure {
            dead_band: Some(crate::telemetry::DeadBand {
                failure_ratio: 0.029,
                attempts: 3488.0,
                failures: 101.0,
                clean_below: 0.01,
            }),
            ..figure
        });
        let line = status_line(&s);
        assert!(
            line.ends_with("| capacity >= 8 steady, a lower bound, in the dead band: 2.9% failed (clean below 1%; set `low` above it if that is the background)"),
            "{line}"
        );
        s.capacity = CapacityEstimate::Steady(CapacityFigure {
            lower_bound: false,
            next_step_up: Some(9.0),
            ..figure
        });
        assert!(
            status_line(&s).ends_with("| capacity 8 steady"),
            "{}",
            status_line(&s)
        );
    }
}
