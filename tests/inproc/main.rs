//! The in-process integration tests, one binary: the library driven over
//! real sockets on 127.0.0.1 against in-process fakes, simulators and small
//! real processes (Prometheus, promtool, curl). One binary so that
//! `tests/support` is compiled and linked once (issue 25).
//!
//! Run one module with `cargo test --test inproc fault_matrix::`.

#[path = "../support/mod.rs"]
mod support;

mod adapters;
mod attribution;
mod band_proof;
mod configs;
mod early_verdicts;
mod engine_faults;
mod exposition_differential;
mod exposition_properties;
mod fault_matrix;
mod fuzz;
mod group;
mod group_engine;
mod hardening_iii;
mod late_cost;
mod live_capacity;
mod live_controller;
mod live_page;
mod module_graph;
mod outbound;
mod promql;
mod pull_endpoint;
mod push;
mod reload;
mod silent_opening;
mod sim_http;
mod thin_windows;
