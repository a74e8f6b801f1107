//! The push store's unit tests: grouping keys, ingest, expiry, lag.

use super::*;

fn source(cumulative: bool, labels: &[(&str, &str)]) -> PushSource {
    PushSource::new(&PushSignalConfig {
        job: "nb".into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        attempts: Some("nb_ops_total".into()),
        successes: None,
        failures: r#"nb_ops_total{result="error"}"#.into(),
        cumulative,
        max_age: Some(Duration::from_secs(60)),
        group_ttl: None,
    })
    .unwrap()
}

/// Issue 27 #5: with `group_ttl = 300ms`, 10,000 grouping keys fill the
/// cap; a new key is refused while they are fresh and accepted once
/// they expire. The old inbox kept every key for good.
#[test]
fn grouping_keys_expire_and_free_the_cap() {
    let store = PushStore::default();
    let s = PushSource::new(&PushSignalConfig {
        job: "nb".into(),
        labels: BTreeMap::new(),
        attempts: Some("nb_ops_total".into()),
        successes: None,
        failures: r#"nb_ops_total{result="error"}"#.into(),
        cumulative: true,
        max_age: Some(Duration::from_secs(60)),
        group_ttl: Some(Duration::from_millis(300)),
    })
    .unwrap();
    store.register(s.inbox());
    let started = Instant::now();
    let text = body(1.0, 0.0);
    for i in 0..MAX_GROUPS_PER_TARGET {
        store
            .ingest(PushMethod::Put, &format!("job/nb/instance/i{i}"), &text)
            .unwrap();
    }
    if started.elapsed() < Duration::from_millis(250) {
        let e = store
            .ingest(PushMethod::Put, "job/nb/instance/new", &text)
            .unwrap_err();
        assert_eq!(e.result(), "unusable", "{e}");
    }
    std::thread::sleep(Duration::from_millis(400));
    store
        .ingest(PushMethod::Put, "job/nb/instance/new", &text)
        .expect("a new key once the old ones expired");
    // The expired groups left the sums.
    assert_eq!(read(&s), (1.0, 0.0));
}

fn body(ok: f64, err: f64) -> String {
    format!(
        "# TYPE nb_ops_total counter\nnb_ops_total{{result=\"ok\"}} {ok}\nnb_ops_total{{result=\"error\"}} {err}\n"
    )
}

fn read(s: &PushSource) -> (f64, f64) {
    let c = s.inbox.read().unwrap();
    (c.first, c.failures)
}

/// Issue 27 #3: two deltas of 1.7e308 left the totals at +Inf for good
/// (every later window non-finite: signal loss at the floor). Fails on
/// the old code, which added them unchecked.
#[test]
fn a_delta_push_that_would_overflow_is_refused_and_does_not_stick() {
    let store = PushStore::default();
    let s = source(false, &[]);
    store.register(s.inbox());
    store
        .ingest(PushMethod::Post, "job/nb", &body(1.7e308, 0.0))
        .unwrap();
    let e = store
        .ingest(PushMethod::Post, "job/nb", &body(1.7e308, 0.0))
        .unwrap_err();
    assert_eq!(e.result(), "unusable", "{e}");
    assert_eq!(e.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // The totals restarted: finite, and later pushes add up again.
    assert_eq!(read(&s), (0.0, 0.0));
    store
        .ingest(PushMethod::Post, "job/nb", &body(9.0, 1.0))
        .unwrap();
    assert_eq!(read(&s), (10.0, 1.0));
    store.ingest(PushMethod::Delete, "job/nb", "").unwrap();
    store
        .ingest(PushMethod::Post, "job/nb", &body(9.0, 1.0))
        .unwrap();
    let c = s.inbox.read().unwrap();
    assert!(c.first.is_finite() && c.failures.is_finite());
}

#[test]
fn grouping_keys_decode_like_pushgateway() {
    let k = parse_grouping("job/nb/instance/a%3A1/zone@base64/ZXUvd2VzdA==").unwrap();
    assert_eq!(k["job"], "nb");
    assert_eq!(k["instance"], "a:1");
    assert_eq!(k["zone"], "eu/west");
    let k = parse_grouping("job@base64/bmI/empty@base64/=").unwrap();
    assert_eq!((k["job"].as_str(), k["empty"].as_str()), ("nb", ""));
    for bad in [
        "",
        "job",
        "nope/x",
        "job/",
        "job/x/a",
        "job/x/job/y",
        "job/x/1a/v",
    ] {
        assert!(parse_grouping(bad).is_err(), "{bad}");
    }
}

#[test]
fn cumulative_pushes_sum_over_groups_and_replace_per_group() {
    let store = PushStore::default();
    let s = source(true, &[]);
    store.register(s.inbox());
    assert_eq!(s.inbox.read().unwrap_err().error_type(), "stale");
    store
        .ingest(PushMethod::Put, "job/nb/instance/a", &body(90.0, 10.0))
        .unwrap();
    store
        .ingest(PushMethod::Put, "job/nb/instance/b", &body(45.0, 5.0))
        .unwrap();
    assert_eq!(read(&s), (150.0, 15.0));
    // A newer push of group a replaces a's values only.
    store
        .ingest(PushMethod::Put, "job/nb/instance/a", &body(190.0, 20.0))
        .unwrap();
    assert_eq!(read(&s), (260.0, 25.0));
    // POST of another metric keeps a's counters; DELETE drops b.
    store
        .ingest(PushMethod::Post, "job/nb/instance/a", "other_metric 1\n")
        .unwrap_err();
    assert_eq!(read(&s), (260.0, 25.0));
    store
        .ingest(PushMethod::Delete, "job/nb/instance/b", "")
        .unwrap();
    assert_eq!(read(&s), (210.0, 20.0));
}

#[test]
fn the_lag_hint_is_the_slowest_groups_push_interval() {
    let store = PushStore::default();
    let s = source(true, &[]);
    store.register(s.inbox());
    let push = |group: &str| {
        store
            .ingest(
                PushMethod::Put,
                &format!("job/nb/instance/{group}"),
                &body(1.0, 0.0),
            )
            .unwrap();
    };
    push("a");
    push("b");
    assert_eq!(
        s.inbox.read().unwrap().lag,
        None,
        "one push each: no interval yet"
    );
    std::thread::sleep(Duration::from_millis(200));
    push("a");
    push("b");
    push("b");
    let lag = s.inbox.read().unwrap().lag.expect("a lag after two pushes");
    // a's interval (>= 200 ms) wins over b's back-to-back pushes.
    assert!(lag >= Duration::from_millis(200), "{lag:?}");
    // Deleting a group forgets its interval.
    store
        .ingest(PushMethod::Delete, "job/nb/instance/a", "")
        .unwrap();
    let lag = s.inbox.read().unwrap().lag.expect("b pushed twice");
    assert!(lag < Duration::from_millis(200), "{lag:?}");
}

#[test]
fn per_push_deltas_accumulate() {
    let store = PushStore::default();
    let s = source(false, &[("region", "eu")]);
    store.register(s.inbox());
    store
        .ingest(
            PushMethod::Post,
            "job/nb/region/eu/pod/1",
            &body(40.0, 10.0),
        )
        .unwrap();
    store
        .ingest(PushMethod::Post, "job/nb/region/eu/pod/2", &body(45.0, 5.0))
        .unwrap();
    assert_eq!(read(&s), (100.0, 15.0));
    // Another region is not this target's.
    let e = store.ingest(PushMethod::Post, "job/nb/region/us", &body(1.0, 1.0));
    assert!(matches!(e, Err(PushError::NoTarget(_))), "{e:?}");
    // A delta push without the failure series cannot be split.
    let e = store.ingest(
        PushMethod::Post,
        "job/nb/region/eu",
        "nb_ops_total{result=\"ok\"} 5\n",
    );
    assert!(matches!(e, Err(PushError::Unusable(_))), "{e:?}");
    assert_eq!(read(&s), (100.0, 15.0));
}

#[test]
fn conflicting_labels_and_garbage_are_refused() {
    let store = PushStore::default();
    let s = source(true, &[]);
    store.register(s.inbox());
    let e = store
        .ingest(PushMethod::Put, "job/nb", "nb_ops_total{job=\"other\"} 1\n")
        .unwrap_err();
    assert!(matches!(e, PushError::Conflict { .. }), "{e}");
    let e = store
        .ingest(PushMethod::Put, "job/nb", "<html>")
        .unwrap_err();
    assert_eq!(e.result(), "bad_request");
}

#[test]
fn a_stopped_target_no_longer_receives() {
    let store = PushStore::default();
    let s = source(true, &[]);
    store.register(s.inbox());
    drop(s);
    let e = store
        .ingest(PushMethod::Put, "job/nb", &body(1.0, 0.0))
        .unwrap_err();
    assert!(matches!(e, PushError::NoTarget(_)));
}
