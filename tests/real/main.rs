//! Real load tools governed over real sockets, one test binary: Locust (one
//! process and with workers), k6 (REST API, remote-write to Prometheus,
//! pull), Goose, Python harnesses, Artillery and
//! JMeter (their shipped gates) through the pull control, pushed counters
//! (direct and through a Pushgateway), and the latency sources.
//!
//! Every path runs with the config a new user writes (no `profile` key), so
//! the runs follow whatever that config gets, against loopback walls of 10
//! concurrent requests that answer 503 in 1 ms or in 10 ms above it
//! (`support::goals`). Two tiers (docs/TESTING.md): the fast tier (the
//! default, and `.ci/run`) drives every path once until the governor backs
//! off at the wall and the report gives a capacity figure; the full tier
//! (`scripts/test --full`, which sets `THROTTLE_TEST_TIER=full` and runs the
//! ignored tests too) adds issue 26's goal runs (300 s each, at both walls),
//! the seed rules' "before" figure and the comparison with the ramp users
//! write today, the figures docs/BENCHMARKS.md records.
//!
//! Runs share a semaphore (`support::real::serial`): one at a time in the
//! full tier, so that the figures are not measured under each other's load,
//! and a few at a time in the fast tier, whose verdicts do not depend on it.

#[path = "../support/mod.rs"]
mod support;

mod artillery;
mod goose;
mod jmeter;
mod k6;
mod k6_remote_write;
mod latency;
mod locust;
mod pull_k6;
mod pull_python;
mod push;
mod quick;
