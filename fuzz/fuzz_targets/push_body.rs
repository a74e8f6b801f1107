//! The push endpoint's parser: grouping path and exposition body, through
//! `PushStore::ingest` with a live reader.
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
    };
    let source = PushSource::new(&cfg).expect("fuzz push source");
    let store = PushStore::default();
    store
        .configure(&PushServerConfig::default())
        .expect("default push guards");
    store.register(source.inbox());
    Harness {
        store,
        _source: source,
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
});
