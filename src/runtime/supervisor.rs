//! The supervisor: builds every target from the config, runs each in its own
//! task, serves the HTTP surface ([`crate::http`]), and shuts everything
//! down in bounded time. It is where the engine and the HTTP surface meet:
//! it hands both the same push store and pull board.
//!
//! Why it exists: start-up and shutdown are where controllers leak tasks or
//! hang. One `CancellationToken` stops every loop; a `JoinSet` drains them
//! with a deadline; the HTTP server stops last so the final state can still
//! be scraped while targets wind down.

use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::config::Config;
use crate::control::pull::PullBoard;
use crate::engine::build::Builder;
use crate::engine::BuildError;
use crate::http::{conn, server, Surface};
use crate::report::{self, Report, SteadyRule};
use crate::runtime::reload::Roster;
use crate::signal::push::PushStore;
use crate::state::StateStore;
use crate::telemetry::Telemetry;

pub use crate::engine::RunOptions;

/// Why the controller could not start.
#[derive(Debug, Error)]
pub enum SupervisorError {
    /// A target (or the shared HTTP client) could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The state file could not be read.
    #[error("{0}")]
    State(String),
    /// The push endpoint's settings could not be applied.
    #[error("server.push: {0}")]
    Push(String),
    /// The offer endpoint's token could not be read.
    #[error("server.pull: {0}")]
    Pull(String),
    /// The telemetry listener could not be bound.
    #[error(
        "cannot listen on {addr}: {source} (is another process using it? set [server] listen)"
    )]
    Listen {
        /// The address.
        addr: std::net::SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// A running controller.
pub struct Running {
    /// Shared metrics and state.
    pub telemetry: Arc<Telemetry>,
    /// The bound telemetry address.
    pub addr: std::net::SocketAddr,
    cancel: CancellationToken,
    server: tokio::task::JoinHandle<()>,
    server_cancel: CancellationToken,
    /// The pull board, closed at shutdown so that no pull waits then.
    board: PullBoard,
    state: Option<Arc<StateStore>>,
    roster: Roster,
}

/// Starts the server and every target; returns at once.
pub async fn start(
    config: &Config,
    opts: RunOptions,
    listener: Option<tokio::net::TcpListener>,
) -> Result<Running, SupervisorError> {
    let telemetry = Arc::new(Telemetry::with_history(opts.history_limit));
    let mut opts = opts;
    if opts.state.is_none() {
        if let Some(path) = &config.server.state_file {
            opts.state = Some(Arc::new(
                StateStore::open(path).map_err(|e| SupervisorError::State(e.to_string()))?,
            ));
        }
    }
    let state = opts.state.clone();
    if let Some(store) = &state {
        store.count_errors_in(telemetry.metrics.faults.state_write_errors.clone());
    }
    // The push store and the pull board, shared by the targets that use
    // them (through the builder) and the HTTP surface that feeds and
    // serves them.
    let push = Arc::new(PushStore::default());
    let pull = PullBoard::default();
    let builder = Builder::new(telemetry.clone(), push.clone(), pull.clone(), opts.clone())?;
    let tasks = config
        .targets
        .iter()
        .map(|t| builder.task(t))
        .collect::<Result<Vec<_>, _>>()?;
    push.configure(&config.server.push)
        .map_err(SupervisorError::Push)?;
    let pull_token = config.server.pull.token().map_err(SupervisorError::Pull)?;
    pull.configure(pull_token, config.server.pull.max_clients);
    // Waiting pulls hold a connection each: at most half the cap, so the
    // scrapes always find one.
    pull.set_max_waiters(config.server.max_connections as usize / 2);
    let listener = match listener {
        Some(l) => l,
        None => bind(config.server.listen, config.server.max_connections).map_err(|source| {
            SupervisorError::Listen {
                addr: config.server.listen,
                source,
            }
        })?,
    };
    let addr = listener
        .local_addr()
        .map_err(|source| SupervisorError::Listen {
            addr: config.server.listen,
            source,
        })?;
    let server_cancel = CancellationToken::new();
    let sc = server_cancel.clone();
    let board = pull.clone();
    let surface = Arc::new(Surface {
        telemetry: telemetry.clone(),
        push,
        pull,
        steady: opts.steady,
    });
    let limits = conn::ServerLimits {
        max_connections: config.server.max_connections as usize,
        ..Default::default()
    };
    let server = tokio::spawn(async move {
        if let Err(e) = server::serve(
            listener,
            surface,
            limits,
            async move { sc.cancelled().await },
        )
        .await
        {
            warn!(error = %e, "Telemetry server stopped");
        }
    });
    info!(%addr, targets = tasks.len(), dry_run = opts.dry_run, "Serving the live page, /metrics, /healthz, /readyz and /api/v1/targets on http://{addr}/");
    let cancel = CancellationToken::new();
    let roster = Roster::start(config, tasks, &cancel, builder);
    if let Some(store) = state.clone() {
        let token = cancel.child_token();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = token.cancelled() => break,
                    _ = tick.tick() => {}
                }
                store.flush_reporting();
            }
        });
    }
    Ok(Running {
        telemetry,
        addr,
        cancel,
        server,
        server_cancel,
        board,
        state,
        roster,
    })
}

/// When a run ends by itself (besides a shutdown signal).
#[derive(Debug, Clone, Copy, Default)]
pub struct StopWhen {
    /// Stop once every target is steady under this rule.
    pub steady: Option<SteadyRule>,
    /// Stop after this long.
    pub after: Option<Duration>,
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// A shutdown signal (or the caller's token).
    Signal,
    /// Every target became steady.
    Steady,
    /// The time limit passed.
    Deadline,
}

impl Running {
    /// Waits until `stop` says so, `cancel` fires, or the run is steady.
    pub async fn wait(&self, stop: StopWhen, cancel: &CancellationToken) -> Ended {
        let deadline = stop.after.map(|d| tokio::time::Instant::now() + d);
        let mut poll = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return Ended::Signal,
                _ = poll.tick() => {}
            }
            if let Some(rule) = &stop.steady {
                if self.all_steady(rule) {
                    return Ended::Steady;
                }
            }
            if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                return Ended::Deadline;
            }
        }
    }

    /// Whether every target's trailing windows are steady.
    pub fn all_steady(&self, rule: &SteadyRule) -> bool {
        let statuses = self.telemetry.statuses();
        !statuses.is_empty()
            && statuses
                .iter()
                .all(|s| report::steady(&self.telemetry.history(&s.name), rule, s.high).is_some())
    }

    /// The capacity report over every target's history so far.
    pub fn report(&self, rule: &SteadyRule) -> Report {
        Report::from_telemetry(&self.telemetry, rule)
    }

    /// Applies a new, validated config (see [`crate::runtime::reload`]); on error
    /// the running config stays in effect.
    pub async fn reload(
        &self,
        config: Config,
    ) -> Result<crate::runtime::reload::ReloadSummary, crate::runtime::reload::ReloadError> {
        self.roster.reload(config).await
    }

    /// The handle [`crate::runtime::reload::watch`] reloads through.
    pub fn reloader(&self) -> Roster {
        self.roster.clone()
    }

    /// Stops every target (bounded), then the server.
    pub async fn shutdown(mut self, grace: Duration) {
        self.cancel.cancel();
        self.roster.drain(grace).await;
        if let Some(store) = &self.state {
            if let Err(e) = store.flush() {
                warn!(error = %e, "Cannot write the state file");
            }
        }
        // Waiting pulls are answered now, not held through the grace.
        self.board.close();
        self.server_cancel.cancel();
        let _ = tokio::time::timeout(server::SHUTDOWN_GRACE, &mut self.server).await;
        self.server.abort();
        info!("Stopped");
    }
}

/// Binds the controller's listener with an accept backlog of at least the
/// connection cap, so a burst of new clients (pollers of a `pull` offer
/// starting together) waits in the queue instead of overflowing it (tokio's
/// `bind` uses 1,024).
fn bind(
    addr: std::net::SocketAddr,
    max_connections: u32,
) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(max_connections.max(1024))
}

/// Resolves when SIGINT or SIGTERM arrives; a second signal exits at once.
pub async fn shutdown_signal() {
    wait_signal().await;
    info!("Shutting down (send the signal again to exit at once)");
    tokio::spawn(async {
        wait_signal().await;
        warn!("Second signal: exiting now");
        std::process::exit(130);
    });
}

async fn wait_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
