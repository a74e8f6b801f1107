//! The push endpoint's parser: grouping path and exposition body, through
//! `PushStore::ingest` with two live readers: job `load` (cumulative) and
//! job `delta` (per-push deltas, whose running totals must stay finite
//! however large the pushes: issue 27).
//!
//! Why it exists: pushes arrive from the network; any path and body must be
//! taken or refused with a bounded error, never panic. The input's first
//! byte picks the method, the rest up to the first newline is the path after
//! `/metrics/`, and the remainder is the body.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use throttle_governor::signal::push::{
    PushMethod, PushServerConfig, PushSignalConfig, PushSource, PushStore,
};

struct Harness {
    store: PushStore,
    _source: PushSource,
    delta: PushSource,
}

static HARNESS: LazyLock<Harness> = LazyLock::new(|| {
    let cfg = PushSignalConfig {
        job: "load".into(),
        labels: Default::default(),
        attempts: Some("req_total".into()),
        successes: None,
        failures: "req_total{outcome=\"error\"}".into(),
        cumulative: true,
        max_age: None,
        group_ttl: None,
    };
    let source = PushSource::new(&cfg).expect("fuzz push source");
    let delta = PushSource::new(&PushSignalConfig {
        job: "delta".into(),
        cumulative: false,
        ..cfg
    })
    .expect("fuzz delta source");
    let store = PushStore::default();
    store
        .configure(&PushServerConfig::default())
        .expect("default push guards");
    store.register(source.inbox());
    store.register(delta.inbox());
    Harness {
        store,
        _source: source,
        delta,
    }
});

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Ok(rest) = std::str::from_utf8(rest) else {
        return;
    };
    let method = match first % 3 {
        0 => PushMethod::Put,
        1 => PushMethod::Post,
        _ => PushMethod::Delete,
    };
    let (grouping, body) = rest.split_once('\n').unwrap_or((rest, ""));
    match HARNESS.store.ingest(method, grouping, body) {
        Ok(n) => assert!(n >= 1, "an accepted push reached no reader"),
        Err(e) => {
            assert!(!e.to_string().is_empty());
            assert!(!e.result().is_empty());
        }
    }
    if let Ok(c) = poll_once(HARNESS.delta.read()) {
        assert!(
            c.first.is_finite() && c.failures.is_finite(),
            "delta totals went non-finite: {c:?}"
        );
    }
});

/// `PushSource::read` is async but never awaits anything: poll it once.
fn poll_once<F: std::future::Future>(f: F) -> F::Output {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("PushSource::read awaited"),
    }
}
