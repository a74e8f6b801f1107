//! The process around the engine: what starts it, reloads it and checks it
//! from outside.
//!
//! - [`supervisor`]: starts every target, serves the HTTP surface, shuts
//!   down in bounded time;
//! - [`reload`]: hot reload on SIGHUP or a config change, keeping governor
//!   state;
//! - [`healthcheck`]: `healthcheck`, a GET of `/healthz` for the
//!   container's `HEALTHCHECK`.

pub mod healthcheck;
pub mod reload;
pub mod supervisor;
