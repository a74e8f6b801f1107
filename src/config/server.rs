//! `[server]`: the controller's own HTTP server (listen address, state
//! file, connection cap, and the push and pull endpoints' guards).
//!
//! Why it exists: the one table that is not per target; its keys and
//! their defaults sit together so that `check` and the server agree.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::{pull, push};

/// `[server]`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address for `/metrics`, `/healthz`, `/readyz` and `/api/v1/targets`.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Keeps each target's congestion memory (`last_bad`, streak) across
    /// restarts of the controller; written atomically after every change.
    pub state_file: Option<std::path::PathBuf>,
    /// The push endpoint's guards (`kind = "push"` signals).
    #[serde(default)]
    pub push: push::PushServerConfig,
    /// Accept pushes without a token on a listener off loopback (refused
    /// unless set; logged as a warning at start).
    #[serde(default)]
    pub allow_unauthenticated_push: bool,
    /// Connections the controller's server keeps open at once; past it the
    /// longest-idle one is closed. Raise it above the number of `pull`
    /// clients that keep a connection each (k6 VUs, harness threads).
    #[serde(default = "default_max_connections")]
    pub max_connections: u32,
    /// The offer endpoint's guard (`kind = "pull"` controls).
    #[serde(default)]
    pub pull: pull::PullServerConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: default_listen(),
            state_file: None,
            push: Default::default(),
            allow_unauthenticated_push: false,
            max_connections: default_max_connections(),
            pull: Default::default(),
        }
    }
}

/// The default cap on the server's open connections.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 256;

fn default_max_connections() -> u32 {
    DEFAULT_MAX_CONNECTIONS
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9464))
}
