//! Building targets from the config: the engine's only `match` over signal
//! and control kinds.
//!
//! Why it exists: the rest of the engine works through the
//! [`CounterSource`] and [`KnobApi`] traits and never names a kind. Adding
//! a signal or control kind touches:
//! - its own module (a source in `signal` or `adapters`, a knob in
//!   `control` or `adapters`);
//! - the config: its variant of `SignalConfig` or `ControlConfig` and the
//!   kind's config type, and the matches in `src/config.rs` that describe
//!   and check each kind (`kind`, `lag_description`, `has_offer`,
//!   `resolve_window`, `tls`, the adapter checks) and, for a latency bound
//!   read from the tool, `config/latency.rs`;
//! - this file: the source or actuator it builds ([`source`],
//!   `actuator_for`), its default lag ([`default_lag`]) and, for a latency
//!   bound read from the tool, [`latency_source`].
//!
//! The [`Builder`] also owns the HTTP clients: one shared pool for every
//! target, and one per distinct TLS setting, reused across targets and
//! reloads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use thiserror::Error;

use crate::adapters::{goose, k6, locust};
use crate::auth::TlsConfig;
use crate::config::group::MemberSpec;
use crate::config::latency::{LatencyConfig, LatencySourceSpec};
use crate::config::{ControlConfig, SignalConfig, TargetConfig};
use crate::control::pull::{PullBoard, PullKey, PullKnob};
use crate::control::{http, Actuator, Confirm, ControlError, KnobApi, ReadBack};
use crate::signal::latency::LatencySource;
use crate::signal::push::{self, PushStore};
use crate::signal::{prometheus, promql, CounterSource};
use crate::state::StateStore;
use crate::telemetry::Telemetry;

/// Options of `run` beyond the config file.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Read and decide, never write.
    pub dry_run: bool,
    /// Windows of history kept per target (for reports and steadiness).
    pub history_limit: usize,
    /// Where congestion memory is kept across restarts (opened from
    /// `[server] state_file` by the supervisor).
    pub state: Option<Arc<StateStore>>,
    /// The steady-state rule of the live capacity estimate (the report's,
    /// so that a steady live figure is the report's).
    pub steady: crate::report::SteadyRule,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            dry_run: false,
            history_limit: crate::telemetry::HISTORY_LIMIT,
            state: None,
            steady: crate::report::SteadyRule::default(),
        }
    }
}

/// Why a target could not be built.
#[derive(Debug, Error)]
pub enum BuildError {
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// A target's signal or control could not be built.
    #[error("target `{target}`: {reason}")]
    Target {
        /// The target's name.
        target: String,
        /// What went wrong.
        reason: String,
    },
}

fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(2))
        .redirect(crate::signal::http::redirect_policy())
        .pool_idle_timeout(Duration::from_secs(30))
        .user_agent(concat!("throttle-governor/", env!("CARGO_PKG_VERSION")))
}

/// The shared HTTP client: pooled connections, a connect timeout, and
/// redirects only to the same scheme, host and port.
pub fn http_client() -> Result<reqwest::Client, BuildError> {
    client_builder()
        .build()
        .map_err(|e| BuildError::Client(e.to_string()))
}

/// Builds targets; holds the clients and the telemetry they report to.
#[derive(Debug, Clone)]
pub struct Builder {
    pub(super) client: reqwest::Client,
    tls: Arc<Mutex<HashMap<String, reqwest::Client>>>,
    pub(super) telemetry: Arc<Telemetry>,
    /// Where `push` sources are registered (the HTTP surface feeds it).
    push: Arc<PushStore>,
    /// Where `pull` knobs publish (the HTTP surface serves it).
    pull: PullBoard,
    pub(super) opts: RunOptions,
}

impl Builder {
    /// A builder with a new shared client; `push` sources register with
    /// `push`, `pull` knobs publish on `pull`.
    pub fn new(
        telemetry: Arc<Telemetry>,
        push: Arc<PushStore>,
        pull: PullBoard,
        opts: RunOptions,
    ) -> Result<Self, BuildError> {
        Ok(Builder {
            client: http_client()?,
            tls: Arc::default(),
            telemetry,
            push,
            pull,
            opts,
        })
    }

    /// The shared client (service discovery uses it).
    pub fn client(&self) -> reqwest::Client {
        self.client.clone()
    }

    /// The telemetry targets report to.
    pub fn telemetry(&self) -> &Arc<Telemetry> {
        &self.telemetry
    }

    /// The store `push` sources are registered with.
    pub(crate) fn push_store(&self) -> &PushStore {
        &self.push
    }

    /// The board `pull` knobs publish on.
    pub(crate) fn pull_board(&self) -> &PullBoard {
        &self.pull
    }

    /// The client for a TLS config: the shared one when it is empty, else
    /// one per distinct TLS setting (cached).
    fn client_for(&self, tls: Option<&TlsConfig>) -> Result<reqwest::Client, String> {
        let Some(tls) = tls.filter(|t| !t.is_empty()) else {
            return Ok(self.client.clone());
        };
        let key = serde_json::to_string(tls).unwrap_or_default();
        let mut cache = self.tls.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.get(&key) {
            return Ok(c.clone());
        }
        let c = crate::auth::apply_tls(client_builder(), tls)
            .map_err(|e| format!("tls: {e}"))?
            .build()
            .map_err(|e| format!("tls: {e}"))?;
        cache.insert(key, c.clone());
        Ok(c)
    }

    /// One member's source and actuator, and the lag its signal kind has
    /// by default (seconds).
    pub fn member(&self, t: &TargetConfig, spec: &MemberSpec) -> Result<Built, String> {
        let signal_client = self.client_for(spec.signal.tls())?;
        let control_client = self.client_for(spec.control.tls())?;
        let source = source_with(&spec.signal, signal_client, Some(&self.push))?;
        let seat = PullSeat {
            board: &self.pull,
            key: PullKey {
                target: t.name.clone(),
                member: t.is_group().then(|| spec.name.clone()),
            },
            address: spec.address.as_deref(),
        };
        let actuator = actuator_for(
            &spec.control,
            t.knob.is_integer(),
            &source,
            control_client,
            t.window,
            Some(seat),
        )
        .map_err(|e| e.to_string())?;
        Ok((source, actuator, default_lag(&spec.signal, t.window)))
    }
}

/// A built member: its source, its actuator, and the lag its signal kind
/// has by default (seconds).
pub type Built = (Arc<dyn CounterSource>, Actuator, f64);

/// A single target's one member: its own signal and control.
pub(super) fn single_member(t: &TargetConfig) -> MemberSpec {
    MemberSpec {
        name: t.name.clone(),
        address: None,
        weight: 1.0,
        signal: t.signal.clone(),
        control: t.control.clone(),
    }
}

/// Builds the source of a target's latency bound.
pub fn latency_source(
    t: &TargetConfig,
    l: &LatencyConfig,
    client: reqwest::Client,
) -> Result<Arc<dyn LatencySource>, String> {
    let spec = l.source(t).map_err(|(f, r)| format!("{f}: {r}"))?;
    Ok(match spec {
        LatencySourceSpec::Histogram { url, selector } => {
            Arc::new(crate::signal::latency::HistogramSource::new(
                client, &url, &selector, &l.headers, l.timeout,
            )?)
        }
        LatencySourceSpec::Query { url, expr } => {
            Arc::new(crate::signal::latency::QuerySource::new(
                client, &url, &expr, &l.headers, l.timeout, t.window,
            )?)
        }
        LatencySourceSpec::Goose { url } => Arc::new(goose::GooseLatency::new(&url, l.timeout)),
        LatencySourceSpec::Locust { url } => Arc::new(locust::LocustLatency::new(
            client, &url, l.quantile, l.timeout,
        )),
    })
}

/// The lag a signal kind has when the source cannot estimate it: Locust's
/// stats cache; k6's metrics batching (1 s); a push or PromQL signal one
/// window (until the source sees its real interval); a direct scrape or
/// Goose none.
pub fn default_lag(signal: &SignalConfig, window: Duration) -> f64 {
    match signal {
        SignalConfig::Locust(_) => crate::config::limits::LOCUST_STATS_CACHE.as_secs_f64(),
        SignalConfig::K6(_) => crate::config::limits::K6_METRICS_LAG.as_secs_f64(),
        SignalConfig::Push(_) | SignalConfig::Promql(_) => window.as_secs_f64(),
        SignalConfig::Prometheus(_) | SignalConfig::Goose(_) => 0.0,
    }
}

/// Builds the source of a signal config (a push source is not connected
/// to any push endpoint: see [`Builder`]).
pub fn source(
    cfg: &SignalConfig,
    client: reqwest::Client,
) -> Result<Arc<dyn CounterSource>, String> {
    source_with(cfg, client, None)
}

fn source_with(
    cfg: &SignalConfig,
    client: reqwest::Client,
    store: Option<&PushStore>,
) -> Result<Arc<dyn CounterSource>, String> {
    Ok(match cfg {
        SignalConfig::Prometheus(p) => Arc::new(prometheus::PrometheusSource::new(p, client)?),
        SignalConfig::Locust(l) => Arc::new(locust::LocustSource::new(l, client)),
        SignalConfig::K6(k) => Arc::new(k6::K6Source::new(k, client)),
        SignalConfig::Goose(g) => Arc::new(goose::GooseSource::new(g)),
        SignalConfig::Promql(q) => Arc::new(promql::PromqlSource::new(q, client)?),
        SignalConfig::Push(p) => {
            let source = push::PushSource::new(p)?;
            if let Some(store) = store {
                store.register(source.inbox());
            }
            Arc::new(source)
        }
    })
}

/// Builds the actuator of a control config; `signal` serves as read-back
/// when an `http` control has none. A `pull` control needs the
/// controller's server to be pulled from: build it with a [`Builder`].
pub fn actuator(
    cfg: &ControlConfig,
    integer: bool,
    signal: &Arc<dyn CounterSource>,
    client: reqwest::Client,
) -> Result<Actuator, ControlError> {
    actuator_for(
        cfg,
        integer,
        signal,
        client,
        TargetConfig::default_window(),
        None,
    )
}

/// Where a `pull` knob publishes: the board the HTTP surface answers
/// pulls from, what it serves there, and a group member's address (for
/// `?instance=ADDR`).
struct PullSeat<'a> {
    board: &'a PullBoard,
    key: PullKey,
    address: Option<&'a str>,
}

fn actuator_for(
    cfg: &ControlConfig,
    integer: bool,
    signal: &Arc<dyn CounterSource>,
    client: reqwest::Client,
    window: Duration,
    seat: Option<PullSeat<'_>>,
) -> Result<Actuator, ControlError> {
    let (knob, read_back, confirm): (Arc<dyn KnobApi>, ReadBack, Confirm) = match cfg {
        ControlConfig::Http(h) => {
            let read_back = match &h.read_back {
                Some(rb) => {
                    let creds = crate::auth::Credentials::resolve(&h.auth)
                        .map_err(|e| ControlError::Config(format!("auth: {e}")))?;
                    ReadBack::Http(http::JsonReadBack::new(
                        rb,
                        h.timeout,
                        creds,
                        client.clone(),
                    ))
                }
                None if signal.has_offer() => ReadBack::Signal(signal.clone()),
                None => {
                    return Err(ControlError::Config(
                        "no read-back: give [control.read_back] or signal.offer".into(),
                    ))
                }
            };
            (
                Arc::new(http::HttpWriter::new(h, integer, client)?),
                read_back,
                Confirm {
                    confirm_attempts: h.confirm_attempts,
                    confirm_interval: h.confirm_interval,
                    write_attempts: h.write_attempts,
                },
            )
        }
        ControlConfig::Locust(l) => (
            Arc::new(locust::LocustControl::new(l, window, client)),
            ReadBack::Knob,
            Confirm {
                confirm_attempts: l.confirm_attempts,
                confirm_interval: l.confirm_interval,
                write_attempts: l.write_attempts,
            },
        ),
        ControlConfig::K6(k) => (
            Arc::new(k6::K6Control::new(k, client)),
            ReadBack::Knob,
            Confirm {
                confirm_attempts: k.confirm_attempts,
                confirm_interval: k.confirm_interval,
                write_attempts: k.write_attempts,
            },
        ),
        ControlConfig::Goose(g) => (
            Arc::new(goose::GooseControl::new(g)),
            ReadBack::Knob,
            Confirm {
                confirm_attempts: g.confirm_attempts,
                confirm_interval: g.confirm_interval,
                write_attempts: g.write_attempts,
            },
        ),
        ControlConfig::Pull(p) => {
            let seat = seat.ok_or_else(|| {
                ControlError::Config(
                    "a pull control is served by the controller's own server; build it with the engine's Builder".into(),
                )
            })?;
            // The tool's own report is the stronger evidence; without one,
            // the pulls themselves confirm (the knob reads back).
            let read_back = match &p.read_back {
                Some(rb) => {
                    let creds = crate::auth::Credentials::resolve(&p.auth)
                        .map_err(|e| ControlError::Config(format!("auth: {e}")))?;
                    ReadBack::Http(http::JsonReadBack::new(rb, p.timeout, creds, client))
                }
                None if signal.has_offer() => ReadBack::Signal(signal.clone()),
                None => ReadBack::Knob,
            };
            (
                Arc::new(PullKnob::new(
                    p,
                    integer,
                    seat.board,
                    seat.key,
                    seat.address,
                )),
                read_back,
                Confirm {
                    confirm_attempts: p.confirm_attempts,
                    confirm_interval: p.confirm_interval,
                    write_attempts: p.write_attempts,
                },
            )
        }
    };
    Ok(Actuator::new(knob, read_back, integer, confirm))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::control::pull::PullError;
    use crate::control::WriteOutcome;

    const PULL: &str = r#"
[[targets]]
name = "k6"
knob = "concurrency"
ceiling = 40
floor = 1
high = 0.05

[targets.signal]
kind = "k6"
url = "http://127.0.0.1:1"

[targets.control]
kind = "pull"
confirm_attempts = 2
confirm_interval = "10ms"
"#;

    #[tokio::test]
    async fn a_pull_control_publishes_on_the_board_the_server_answers_from() {
        let tel = Arc::new(Telemetry::with_history(10));
        let board = PullBoard::default();
        let builder =
            Builder::new(tel, Arc::default(), board.clone(), RunOptions::default()).unwrap();
        let config = Config::parse(PULL).unwrap();
        let t = &config.targets[0];
        let spec = MemberSpec {
            name: t.name.clone(),
            address: None,
            weight: 1.0,
            signal: t.signal.clone(),
            control: t.control.clone(),
        };
        let (_, actuator, _) = builder.member(t, &spec).unwrap();
        let now = std::time::Instant::now;
        // Registered at build time: asked before any offer, "not yet".
        assert!(matches!(
            board.pull("k6", None, "vu-1", now()),
            Err(PullError::NoOffer(_))
        ));
        // Published, but nobody pulls: unconfirmed, never assumed.
        let outcome = actuator.write_confirmed(5.0).await;
        assert!(
            matches!(outcome, WriteOutcome::Unconfirmed { .. }),
            "{outcome:?}"
        );
        assert_eq!(board.pull("k6", None, "vu-1", now()).unwrap().offer, 5.0);
        assert_eq!(actuator.committed().await.unwrap(), 5.0);
        let outcome = actuator.write_confirmed(5.0).await;
        assert!(
            matches!(outcome, WriteOutcome::Confirmed { .. }),
            "{outcome:?}"
        );

        // Without the controller's server there is nothing to pull from.
        let source = source(&t.signal, builder.client()).unwrap();
        let err = super::actuator(&t.control, true, &source, builder.client()).unwrap_err();
        assert_eq!(err.error_type(), "config");
    }

    /// Every example config parses to a signal kind whose default lag is
    /// the documented one (`check` shows the same in words).
    #[test]
    fn each_signal_kind_has_its_documented_default_lag() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/config");
        let mut seen = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("toml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let cfg = Config::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for t in &cfg.targets {
                let w = t.window.as_secs_f64();
                let (kind, want) = match &t.signal {
                    SignalConfig::Locust(_) => ("locust", 2.0),
                    SignalConfig::Push(_) => ("push", w),
                    SignalConfig::Promql(_) => ("promql", w),
                    SignalConfig::Prometheus(_) => ("prometheus", 0.0),
                    SignalConfig::K6(_) => ("k6", 1.0),
                    SignalConfig::Goose(_) => ("goose", 0.0),
                };
                assert_eq!(
                    default_lag(&t.signal, t.window),
                    want,
                    "{kind} in {}",
                    path.display()
                );
                seen.insert(kind);
            }
        }
        for kind in ["locust", "push", "promql", "prometheus", "k6", "goose"] {
            assert!(seen.contains(kind), "no example config reads {kind}");
        }
    }
}
