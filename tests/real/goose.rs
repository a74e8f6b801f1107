//! Live Goose: a tiny Goose load test (tests/goose-harness, its own package,
//! built by scripts/setup: `GET /` in a loop, no wait) runs with its
//! WebSocket controller on 127.0.0.1; the controller governs it through
//! `kind = "goose"` signal and control with the config a new user writes
//! (no `profile` key, window 3 s), against a loopback wall of 10 concurrent
//! requests that answers 503 in 10 ms above it. The verdict is the fast
//! tier's (`support::goals`: backs off at the wall, report figure
//! within ±15 %). Goose is stopped on every exit path (a Drop guard).

use crate::support;

use support::goals::{run_path, Length, Rig, Wall};
use support::real::Goose;

/// Starts the Goose harness against `target`.
async fn goose(target: String) -> Option<Rig> {
    let goose = Goose::start(&target).await?;
    let ws = &goose.ws;
    let tables = format!(
        r#"[targets.signal]
kind = "goose"
url = "{ws}"

[targets.control]
kind = "goose"
url = "{ws}"
"#
    );
    Some(Rig {
        name: "goose",
        path: "Goose".to_string(),
        tables,
        listen: None,
        procs: vec![Box::new(goose.proc)],
        keep: vec![Box::new(goose.dir)],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goose_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Fast, goose).await;
}
