//! Real load tools governed over real sockets, one test binary: Locust (one
//! process and with workers), k6 (REST API, remote-write to Prometheus,
//! pull), Goose, a Python harness through the pull control, pushed counters
//! (direct and through a Pushgateway), and the latency sources.
//!
//! Two tiers (docs/TESTING.md): the fast tier (the default, and `.ci/run`)
//! drives every path once, with one profile, until the governor backs off at
//! the wall and the report gives a capacity figure; the full tier
//! (`scripts/test --full`, which sets `THROTTLE_TEST_TIER=full` and runs the
//! ignored tests too) runs both profiles on every path long enough to
//! measure failure shares and time to a figure, the figures
//! docs/BENCHMARKS.md records.
//!
//! Runs share a semaphore (`support::real::serial`): one at a time in the
//! full tier, so that the figures are not measured under each other's load,
//! and a few at a time in the fast tier, whose verdicts do not depend on it.

#[path = "../support/mod.rs"]
mod support;

mod goose;
mod k6;
mod k6_remote_write;
mod latency;
mod locust;
mod pull_k6;
mod pull_python;
mod push;
