//! The controller's HTTP surface: one listener for every route.
//!
//! Why it exists: Prometheus scrapes the decisions, orchestrators probe
//! health and readiness, people ask "what is each target doing?", push
//! tools send counters and pull tools ask for their offer, all on one
//! port. This module routes those requests; the state behind each route
//! belongs to the stage that owns the concept:
//!
//! - [`server`]: the router, and the read-only routes (`/metrics`,
//!   `/healthz`, `/readyz`, `/api/v1/targets`, `/api/v1/groups`), which read
//!   [`crate::telemetry`];
//! - [`push`]: the Pushgateway-compatible push route, which feeds the
//!   [`PushStore`] (a signal);
//! - [`pull`]: the offer route, which reads the [`PullBoard`] (a control);
//! - [`page`]: the live page at `/` and the per-target chart it polls,
//!   drawn by the capacity report's own chart code ([`crate::report::html`]);
//! - [`conn`]: the accept loop and its guards (a header-read timeout, a
//!   connection cap that sheds idle and slow-body connections, an idle
//!   timeout), below the router.
//!
//! Within this module `server` imports the routes and `conn`; nothing
//! imports `server` back.
//!
//! What it may touch: its own listener and the connections it accepts. It
//! never decides and never writes to a load tool, and it does not know the
//! engine: the supervisor hands both of them the same store and board.

pub mod conn;
pub mod page;
pub mod pull;
pub mod push;
pub mod server;

use std::sync::Arc;

use crate::control::pull::PullBoard;
use crate::report::SteadyRule;
use crate::signal::push::PushStore;
use crate::telemetry::Telemetry;

/// What the routes read and feed: the telemetry, the push store and the
/// pull board (the last two shared with the targets that use them).
#[derive(Debug, Clone, Default)]
pub struct Surface {
    /// Metrics, status and history.
    pub telemetry: Arc<Telemetry>,
    /// Where pushes go (`kind = "push"` signals read them).
    pub push: Arc<PushStore>,
    /// What the offer route serves (`kind = "pull"` controls publish there).
    pub pull: PullBoard,
    /// The steady-state rule the live page's charts judge the settled
    /// period by (the run's own rule).
    pub steady: SteadyRule,
}
