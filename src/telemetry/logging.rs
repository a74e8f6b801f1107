//! Logging: setup, and the one line per movement that names the signal.
//!
//! Why it exists: nothing may move silently. Every Up, Down and memory clear
//! logs exactly one line a person can read ("checkout: failures 7% (7/100
//! over 2s) > high 5%; concurrency 100 -> 90, backing-off") with the same
//! facts as structured fields (`target`, `frac`, `failures`, `attempts`,
//! `window_secs`, `from`, `to`, `mode`) for machines. At debug level every
//! window, a hold too, has a line with its verdict (`log_window`): a run's
//! log then says why it held as well as why it moved.
//!
//! Logging never stops governing: a log line that cannot be written (a
//! closed pipe after `| head`, a full disk behind a redirect) is dropped and
//! counted in `throttle_log_write_errors_total`, never panics and never
//! blocks. (tracing-subscriber's own error report would `eprintln!` into the
//! same broken stderr, and `eprintln!` panics on EPIPE.) URLs in log lines
//! are redacted (the config's `redact` module) whoever wrote the message.

use std::sync::LazyLock;

use clap::ValueEnum;
use prometheus_client::metrics::counter::Counter;
use tracing::info;

use crate::governor::latency_bound::seconds;
use crate::governor::{pct, Control, Outcome};

/// `--log-format`
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the global subscriber; `RUST_LOG` overrides the default `info`.
pub fn init(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(LineClearingStderr::new)
        .with_ansi(std::io::stderr().is_terminal())
        // Its report of a failed write goes through `eprintln!`, which
        // panics when stderr is gone; the writer counts the failure instead.
        .log_internal_errors(false)
        .with_target(false);
    let result = match format {
        LogFormat::Text => builder.event_format(TextLine).try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    // A second init (tests, embedding) keeps the first subscriber.
    let _ = result;
}

/// The text format: time, level and the message, then `error`,
/// `error_type` and the target. The message of every movement already
/// states all its facts in words; the same facts are structured fields in
/// `--log-format json`. The target (an event's `target` field, else the
/// `target` of the span it runs in) is added as `target=NAME` unless the
/// message already begins with it, so that with many targets every line
/// says whose it is (issue 27).
struct TextLine;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for TextLine
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        #[derive(Default)]
        struct Message {
            text: String,
            extras: Vec<String>,
            target: Option<String>,
        }
        impl tracing::field::Visit for Message {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                match field.name() {
                    "message" => self.text = value.to_string(),
                    "error" | "error_type" => self.extras.push(format!("{}={value}", field.name())),
                    "target" => self.target = Some(value.to_string()),
                    _ => {}
                }
            }
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                match field.name() {
                    "message" => self.text = format!("{value:?}"),
                    "error" | "error_type" => {
                        self.extras.push(format!("{}={value:?}", field.name()))
                    }
                    // `target = %name` records through Display-as-Debug.
                    "target" => self.target = Some(format!("{value:?}")),
                    _ => {}
                }
            }
        }
        let mut m = Message::default();
        event.record(&mut m);
        if m.target.is_none() {
            m.target = ctx.event_scope().and_then(|scope| {
                scope.from_root().fold(None, |found, span| {
                    let ext = span.extensions();
                    let fields = ext.get::<tracing_subscriber::fmt::FormattedFields<N>>();
                    fields.and_then(|f| span_target(f.as_str())).or(found)
                })
            });
        }
        let now = humantime::format_rfc3339_millis(std::time::SystemTime::now());
        let level = event.metadata().level();
        write!(writer, "{now} {level:>5} {}", m.text)?;
        for extra in m.extras {
            write!(writer, " {extra}")?;
        }
        if let Some(t) = m.target.filter(|t| !m.text.starts_with(t.as_str())) {
            write!(writer, " target={t}")?;
        }
        writeln!(writer)
    }
}

/// The value of `target=...` in a span's formatted fields (`target=checkout
/// member=a`; a quoted value for a Debug-recorded string).
fn span_target(fields: &str) -> Option<String> {
    let at = fields
        .match_indices("target=")
        .find(|(i, _)| *i == 0 || fields.as_bytes()[i - 1] == b' ')?
        .0;
    let value = &fields[at + "target=".len()..];
    let value = match value.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next().unwrap_or(""),
        None => value.split(' ').next().unwrap_or(""),
    };
    (!value.is_empty()).then(|| value.to_string())
}

/// Log lines (and other diagnostics) that could not be written to stderr or
/// stdout since the start: `throttle_log_write_errors_total`.
pub fn write_errors() -> &'static Counter {
    static ERRORS: LazyLock<Counter> = LazyLock::new(Counter::default);
    &ERRORS
}

/// Writes `text` to stderr; a failure (EPIPE, a full disk) is counted, never
/// a panic. For the few lines written outside the subscriber.
pub fn stderr_text(text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    if err
        .write_all(text.as_bytes())
        .and_then(|()| err.flush())
        .is_err()
    {
        write_errors().inc();
    }
}

/// Stderr that first clears a progress line drawn in place (on a terminal
/// only), so that log lines and the demo's progress line do not mix.
///
/// A write that fails is reported as written and counted in
/// [`write_errors`]: the caller (the subscriber, inside some target's task)
/// must never see an error it would try to report on the same stream.
pub struct LineClearingStderr {
    tty: bool,
    cleared: bool,
}

impl LineClearingStderr {
    /// One writer per event.
    pub fn new() -> Self {
        use std::io::IsTerminal;
        LineClearingStderr {
            tty: std::io::stderr().is_terminal(),
            cleared: false,
        }
    }
}

impl Default for LineClearingStderr {
    fn default() -> Self {
        Self::new()
    }
}

impl std::io::Write for LineClearingStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut err = std::io::stderr().lock();
        let mut result = Ok(());
        if self.tty && !self.cleared {
            // The terminal view's status lines, if any, go first; they are
            // redrawn below this line.
            result = super::console::clear_block(&mut err);
            self.cleared = true;
        }
        // Never a credential in a log line, whoever wrote the message.
        let redacted;
        let line = match std::str::from_utf8(buf) {
            Ok(text) if text.contains("://") && (text.contains('@') || text.contains('?')) => {
                redacted = crate::config::redact::urls(text);
                redacted.as_bytes()
            }
            _ => buf,
        };
        // One event arrives as one buffer: write it whole or drop it whole.
        if result.and_then(|()| err.write_all(line)).is_err() {
            write_errors().inc();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if std::io::stderr().flush().is_err() {
            write_errors().inc();
        }
        Ok(())
    }
}

/// Formats a value of the knob: integers without decimals.
pub fn offer(knob: Control, v: f64) -> String {
    if !v.is_finite() {
        return if v > 0.0 {
            "unbounded".into()
        } else {
            v.to_string()
        };
    }
    if knob.is_integer() || v.fract() == 0.0 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// The human text of one movement (also used by `demo` and tests).
pub fn movement_line(name: &str, knob: Control, o: &Outcome, window_secs: f64) -> String {
    let sig = o.signal.as_ref();
    let mut frac = sig.and_then(|s| s.frac).unwrap_or(0.0);
    let (mut f, mut n) = sig.map(|s| (s.failures, s.attempts)).unwrap_or((0.0, 0.0));
    let mut window_secs = window_secs;
    // The robust profile decides on pooled windows: name that evidence.
    if let Some(e) = o.evidence {
        (f, n) = (e.failures, e.attempts);
        frac = if n > 0.0 { f / n } else { 0.0 };
        window_secs *= f64::from(e.windows);
    }
    let threshold = sig
        .and_then(|s| s.threshold)
        .map(|t| format!(" {t}"))
        .unwrap_or_default();
    let failures = format!(
        "attempt failures {} ({}/{} over {:.1}s){threshold}",
        pct(frac),
        f,
        n,
        window_secs
    );
    // With a latency bound, the line names the signal that drove the move
    // first, and the other beside it.
    let signals = match o.latency {
        Some(l) => {
            let q = l.quantile_name();
            let lat = match (l.observed, l.threshold) {
                (Some(v), Some(t)) => {
                    let t = match t {
                        crate::governor::Threshold::High(b) => format!("> bound {}", seconds(b)),
                        crate::governor::Threshold::Low(b) => format!("< low {}", seconds(b)),
                        crate::governor::Threshold::Band(a, b) => {
                            format!("within [{}, {}]", seconds(a), seconds(b))
                        }
                    };
                    format!("latency {q} {} {t}", seconds(v))
                }
                _ => format!("latency {q} unknown (no observations)"),
            };
            if l.drove {
                format!("{lat} (drove this); {failures}")
            } else {
                format!("{failures}; {lat}")
            }
        }
        None => failures,
    };
    format!(
        "{name}: {signals}; {knob} {} -> {}, {}",
        offer(knob, o.from),
        offer(knob, o.to),
        o.mode.map(|m| m.as_str()).unwrap_or("hold"),
    )
}

/// Logs one movement line with its structured fields.
pub fn log_movement(name: &str, knob: Control, o: &Outcome, window_secs: f64, dry_run: bool) {
    let sig = o.signal.as_ref();
    let line = movement_line(name, knob, o, window_secs);
    let line = if dry_run {
        format!("{line} (dry run: not written)")
    } else {
        line
    };
    info!(
        target = name,
        frac = sig.and_then(|s| s.frac).unwrap_or(0.0),
        failures = sig.map(|s| s.failures).unwrap_or(0.0),
        attempts = sig.map(|s| s.attempts).unwrap_or(0.0),
        window_secs,
        from = o.from,
        to = o.to,
        mode = o.mode.map(|m| m.as_str()).unwrap_or("hold"),
        knob = knob.as_str(),
        "{line}"
    );
}

/// Logs every window at debug level, holds as well as movements: the
/// decision, the window's counts and, under `robust` and `gentle`, the
/// verdict with its interval and background estimate. `info` shows only
/// movements; `RUST_LOG=throttle_governor=debug` shows why it held.
pub fn log_window(name: &str, knob: Control, o: &Outcome) {
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let (f, n) = o
        .signal
        .as_ref()
        .map(|s| (s.failures, s.attempts))
        .unwrap_or((0.0, 0.0));
    let decision = match (o.mode, o.reason) {
        (Some(m), _) => format!(
            "{} -> {} ({})",
            offer(knob, o.from),
            offer(knob, o.to),
            m.as_str()
        ),
        (None, Some(r)) => format!("holds at {} ({r})", offer(knob, o.from)),
        (None, None) => format!("holds at {}", offer(knob, o.from)),
    };
    let verdict = o
        .confidence
        .map(|c| format!("; verdict {}", c.summary()))
        .unwrap_or_default();
    tracing::debug!(
        target = name,
        from = o.from,
        to = o.to,
        failures = f,
        attempts = n,
        "{name}: window {f}/{n}: {knob} {decision}{verdict}"
    );
}

/// Logs the one line of a memory clear: after a clean streak, or
/// (`gentle`) on a clean verdict that refuted the breach behind it. The
/// streak counts verdicts: one window each under `seed`, a pool of windows
/// under `robust` and `gentle` (the line said "clean windows", which a
/// pooled verdict is not).
pub fn log_memory_clear(name: &str, knob: Control, at: f64, refuted: bool) {
    if refuted {
        info!(
            target = name,
            offer = at,
            refuted,
            "{name}: congestion memory cleared at {} {knob}: a wall its clean counts allow explains far fewer failures than the breach that set it; slow start resumes",
            offer(knob, at)
        );
        return;
    }
    info!(
        target = name,
        offer = at,
        refuted,
        "{name}: congestion memory cleared after {} clean verdicts at {} {knob}; slow start resumes",
        crate::governor::MEMORY_CLEAR_STREAK,
        offer(knob, at)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `f` logs, in the text format, at the default level (info).
    fn text_lines(f: impl FnOnce()) -> String {
        text_lines_at(tracing::Level::INFO, f)
    }

    /// What `f` logs, in the text format, at `level` and above.
    fn text_lines_at(level: tracing::Level, f: impl FnOnce()) -> String {
        let buf = Buf::default();
        let writer = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(level)
            .event_format(TextLine)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let text = buf.0.lock().unwrap().clone();
        String::from_utf8(text).unwrap()
    }

    /// Issue 27 #8: with many targets, every text line says whose it is.
    #[test]
    fn text_lines_name_the_target() {
        let text = text_lines(|| {
            tracing::info!(target = "checkout", "Write failed");
            tracing::info!(target = %"checkout", "checkout: moved");
            let span = tracing::info_span!("tick", target = %"cart");
            let _entered = span.enter();
            tracing::warn!("Signal lost");
        });
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].ends_with("Write failed target=checkout"), "{text}");
        assert!(lines[1].ends_with("checkout: moved"), "{text}");
        assert!(lines[2].ends_with("Signal lost target=cart"), "{text}");
        assert_eq!(span_target("member=a target=\"x y\""), Some("x y".into()));
        assert_eq!(span_target("subtarget=a"), None);
    }

    /// A memory clear says why it cleared: a clean streak, or a clean
    /// verdict that refuted the breach behind it (which takes no streak).
    #[test]
    fn a_memory_clear_says_why() {
        let text = text_lines(|| {
            log_memory_clear("jm", Control::Concurrency, 10.0, false);
            log_memory_clear("jm", Control::Concurrency, 10.0, true);
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].contains("cleared after 3 clean verdicts at 10 concurrency"),
            "{text}"
        );
        assert!(!lines[1].contains("clean verdicts"), "{text}");
        assert!(
            lines[1].contains("cleared at 10 concurrency: a wall"),
            "{text}"
        );
    }

    /// Every window has a debug line, holds as well as movements, with
    /// the verdict's counts and background: how a decision log shows why
    /// the governor held. At `info` there is none.
    #[test]
    fn every_window_has_a_debug_line_with_its_verdict() {
        use crate::governor::robust::background::BackgroundEstimate;
        use crate::governor::{Confidence, Decision, HoldReason, Signal, VerdictClass};
        let held = Outcome {
            decision: Decision::Hold,
            from: 10.0,
            to: 10.0,
            mode: None,
            reason: Some(HoldReason::DeadBand),
            signal: Some(Signal {
                attempts: 40.0,
                failures: 1.0,
                frac: Some(0.025),
                threshold: None,
            }),
            last_bad: None,
            clean_streak: 0,
            memory_cleared: false,
            memory_refuted: false,
            evidence: None,
            confidence: Some(Confidence {
                verdict: VerdictClass::DeadBand,
                attempts: 400.0,
                failures: 13.0,
                lower: 0.019,
                upper: 0.055,
                clean_below: 0.05,
                high: 0.05,
                background: Some(BackgroundEstimate {
                    rate: 0.02,
                    attempts: 500.0,
                    failures: 10.0,
                }),
            }),
            latency: None,
        };
        let text = text_lines_at(tracing::Level::DEBUG, || {
            log_window("t", Control::Concurrency, &held)
        });
        assert!(
            text.contains(
                "t: window 1/40: concurrency holds at 10 (dead-band); verdict dead-band 13/400"
            ),
            "{text}"
        );
        assert!(text.contains("background 2"), "{text}");
        let info = text_lines(|| log_window("t", Control::Concurrency, &held));
        assert!(info.is_empty(), "{info}");
    }
}
