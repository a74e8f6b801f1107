//! The PromQL source's unit tests.

use super::*;

#[test]
fn selectors_are_found_in_counter_expressions() {
    let cases: &[(&str, &[&str])] = &[
        ("sim_attempts_total", &["sim_attempts_total"]),
        (
            r#"sum(sim_requests_total{outcome="failure", route=~"/a|/b"})"#,
            &[r#"sim_requests_total{outcome="failure", route=~"/a|/b"}"#],
        ),
        (
            "sum by (instance) (rate(k6_http_reqs_total{expected_response=\"false\"}[1m]))",
            &["k6_http_reqs_total{expected_response=\"false\"}"],
        ),
        (
            "sum(increase(a_total[2s])) + sum without (pod) (b_total offset 1m) * 1e+06",
            &["a_total", "b_total"],
        ),
        (
            r#"a / on(job) group_left(team) b{x="}{"} and bool c > 0.5"#,
            &["a", r#"b{x="}{"}"#, "c"],
        ),
        (
            r#"{__name__="x", job="y"}"#,
            &[r#"{__name__="x", job="y"}"#],
        ),
        ("vector(1) + scalar(time())", &[]),
        ("sum without(pod) (x_total)", &["x_total"]),
    ];
    for (expr, want) in cases {
        assert_eq!(selectors_in(expr), *want, "{expr}");
    }
}

#[test]
fn freshness_takes_the_oldest_newest_sample() {
    assert_eq!(
        freshness_query(&["sum(a)", "sum(a)"]).unwrap(),
        "max(timestamp(a))"
    );
    let q = freshness_query(&["sum(a)", "sum(b{o=\"f\"})"]).unwrap();
    assert!(q.starts_with("min(label_replace(max(timestamp(a))"), "{q}");
    assert!(q.contains("max(timestamp(b{o=\"f\"}))"), "{q}");
    assert!(freshness_query(&["vector(0)"]).is_none());
}

#[test]
fn answers_parse_vectors_scalars_and_errors() {
    let v = r#"{"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"a":"1"},"value":[1700000000.5,"10"]},
        {"metric":{"a":"2"},"value":[1700000000.5,"2.5"]}]}}"#;
    let a = parse_answer(v).unwrap();
    assert_eq!(a.at, 1700000000.5);
    assert_eq!(a.require("x").unwrap(), 12.5);

    let s = r#"{"status":"success","data":{"resultType":"scalar","result":[1.5,"+Inf"]}}"#;
    assert_eq!(parse_answer(s).unwrap().values, vec![f64::INFINITY]);

    let empty = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
    let e = parse_answer(empty).unwrap().require("nope").unwrap_err();
    assert_eq!(e.error_type(), "missing_series");

    let m = r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
    assert!(parse_answer(m)
        .unwrap_err()
        .to_string()
        .contains("instant vector"));

    let bad = r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#;
    assert!(parse_answer(bad)
        .unwrap_err()
        .to_string()
        .contains("parse error"));

    let html = "<html>not an api</html>";
    assert!(parse_answer(html)
        .unwrap_err()
        .to_string()
        .contains("base of the HTTP API"));
}

#[test]
fn a_sample_older_than_max_age_is_stale() {
    let fresh = Answer {
        at: 100.0,
        values: vec![97.0, 99.5],
    };
    assert!(check_fresh(&fresh, Duration::from_secs(1)).is_ok());
    let old = Answer {
        at: 100.0,
        values: vec![95.0],
    };
    let e = check_fresh(&old, Duration::from_secs(2)).unwrap_err();
    assert_eq!(e.error_type(), "stale");
    assert!(e.to_string().contains("5.0s old"), "{e}");
    assert!(e.to_string().contains("-search.latencyOffset"), "{e}");
}

#[test]
fn a_vanished_failure_series_is_not_a_reset() {
    let mut seen = Seen::default();
    assert_eq!(seen.carry(100.0, 10.0), (100.0, 10.0));
    // The failure series vanished (`or vector(0)` answers 0): keep 10.
    assert_eq!(seen.carry(150.0, 0.0), (150.0, 10.0));
    assert_eq!(seen.carry(200.0, 0.0), (200.0, 10.0));
    // It comes back with its old total plus 3 new failures: the window
    // sees those 3, never the old 10 again.
    assert_eq!(seen.carry(250.0, 13.0), (250.0, 13.0));
    // A real reset (attempts fall too) passes through.
    assert_eq!(seen.carry(5.0, 1.0), (5.0, 1.0));
    assert_eq!(seen.carry(9.0, 2.0), (9.0, 2.0));
}

#[test]
fn the_lag_hint_is_the_smallest_recent_change_of_the_newest_sample() {
    let mut seen = Seen::default();
    assert_eq!(
        seen.lag(Some(100.0)),
        None,
        "one sample time: no change yet"
    );
    assert_eq!(seen.lag(Some(100.0)), None, "unchanged");
    assert_eq!(seen.lag(Some(115.0)), Some(Duration::from_secs(15)));
    assert_eq!(
        seen.lag(Some(145.0)),
        Some(Duration::from_secs(15)),
        "30 s is an alias"
    );
    assert_eq!(
        seen.lag(None),
        Some(Duration::from_secs(15)),
        "no answer keeps the hint"
    );
    // Older changes age out.
    for i in 1..=LAG_CHANGES {
        seen.lag(Some(145.0 + 20.0 * i as f64));
    }
    assert_eq!(seen.lag(None), Some(Duration::from_secs(20)));
}

#[test]
fn freshness_follows_the_attempts_series_only() {
    let cfg: PromqlSignalConfig = toml::from_str(
        r#"url = "http://p:9090"
           attempts = "sum(k6_http_reqs_total)"
           failures = "sum(k6_failed_attempts_total) or vector(0)""#,
    )
    .unwrap();
    let s = PromqlSource::new(&cfg, reqwest::Client::new()).unwrap();
    assert_eq!(s.freshness(), Some("max(timestamp(k6_http_reqs_total))"));
}

#[test]
fn resolve_fills_window_and_max_age() {
    let mut cfg: PromqlSignalConfig = toml::from_str(
        r#"url = "http://p:9090"
           attempts = "sum(increase(a[{{window}}]))"
           failures = "sum(increase(f[{{window}}]))"
           mode = "increase""#,
    )
    .unwrap();
    cfg.resolve(Duration::from_millis(2500));
    assert_eq!(cfg.attempts.as_deref(), Some("sum(increase(a[2500ms]))"));
    assert_eq!(cfg.max_age, Some(Duration::from_millis(2500)));
    assert_eq!(cfg.range, Some(Duration::from_millis(2500)));
    assert_eq!(promql_duration(Duration::from_secs(3)), "3s");
    // Never read from the file.
    let e = toml::from_str::<PromqlSignalConfig>(
        r#"url = "http://p:9090"
           failures = "f"
           range = "3s""#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("range"), "{e}");
}

/// An increase answer covers its range whenever it is asked: added whole
/// at every early-verdict look (every `window / 48`), one window's counts
/// became 48 windows'. Each is added for the time since the last.
#[test]
fn an_increase_counts_for_the_time_since_the_last_answer() {
    let range = Some(Duration::from_secs(3));
    let ms = |n| Some(Duration::from_millis(n));
    // The baseline, and a range that is not known: all of it.
    assert_eq!(increase_share(None, range), 1.0);
    assert_eq!(increase_share(ms(62), None), 1.0);
    assert_eq!(increase_share(ms(62), Some(Duration::ZERO)), 1.0);
    // At the window's cadence, exactly the increase.
    assert_eq!(increase_share(ms(3000), range), 1.0);
    // 48 looks a window add up to one window, not 48.
    let looks: f64 = (0..48).map(|_| increase_share(ms(62), range)).sum();
    assert!((looks - 0.992).abs() < 1e-9, "{looks}");
    // A read that failed in between: the answer stands for the whole gap.
    assert_eq!(increase_share(ms(6000), range), 2.0);
}

#[test]
fn promql_and_push_targets_are_validated_by_field() {
    let target = |signal: &str, read_back: bool| {
        format!(
            "[[targets]]\nname = \"t\"\nknob = \"rate\"\nfloor = 1\nhigh = 0.05\n\
             [targets.signal]\n{signal}\n\
             [targets.control]\nkind = \"http\"\nurl = \"http://127.0.0.1:1/r\"\n{}",
            if read_back {
                "[targets.control.read_back]\nurl = \"http://127.0.0.1:1/r\"\njson_pointer = \"/r\"\n"
            } else {
                ""
            }
        )
    };
    let ok = target(
        "kind = \"promql\"\nurl = \"http://p:9090\"\nattempts = 'sum(a)'\nfailures = 'sum(b)'",
        true,
    );
    crate::config::Config::parse(&ok).unwrap();
    let bad = target(
        "kind = \"promql\"\nurl = \"p:9090\"\nattempts = 'sum(a'\nfailures = 'sum(b)'\nmax_age = \"0s\"",
        false,
    );
    let err = crate::config::Config::parse(&bad).unwrap_err().to_string();
    for field in [
        "targets[t].signal.url",
        "targets[t].signal.attempts: `sum(a` is not valid PromQL",
        "targets[t].signal.max_age",
        "targets[t].control.read_back",
    ] {
        assert!(err.contains(field), "{field} missing in:\n{err}");
    }
    let push = target(
        "kind = \"push\"\njob = \"nb\"\nattempts = 'x'\nfailures = 'y{'",
        true,
    );
    let err = crate::config::Config::parse(&push).unwrap_err().to_string();
    assert!(err.contains("cumulative"), "{err}");
    let push = target(
        "kind = \"push\"\njob = \"\"\nlabels = { job = \"x\" }\nsuccesses = 'x'\nattempts = 'x'\nfailures = 'y{'\ncumulative = false",
        true,
    );
    let err = crate::config::Config::parse(&push).unwrap_err().to_string();
    for field in [
        "signal.job",
        "signal.labels",
        "signal.successes: give either",
        "signal.failures: bad selector",
    ] {
        assert!(err.contains(field), "{field} missing in:\n{err}");
    }
}

#[test]
fn auth_and_tenant_become_headers() {
    let dir = std::env::temp_dir().join(format!("tg-basic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("password");
    std::fs::write(&file, "open sesame\n").unwrap();
    let cfg: PromqlSignalConfig = toml::from_str(&format!(
        r#"url = "http://p:9090"
           attempts = "sum(a)"
           failures = "sum(b)"
           org_id = "tenant-1"
           basic_auth_user = "Aladdin"
           basic_auth_password_file = "{}""#,
        file.display()
    ))
    .unwrap();
    assert!(cfg.problems().is_empty(), "{:?}", cfg.problems());
    let h = header_map(&cfg).unwrap();
    assert_eq!(h["authorization"], "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
    assert!(h["authorization"].is_sensitive());
    assert_eq!(h["x-scope-orgid"], "tenant-1");
    let mut both = cfg.clone();
    both.bearer_token_file = Some(file.clone());
    assert!(both.problems().iter().any(|(_, e)| e.contains("not both")));
    let mut no_password = cfg;
    no_password.basic_auth_password_file = None;
    assert!(no_password
        .problems()
        .iter()
        .any(|(_, e)| e.contains("needs a password")));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn typos_are_caught_before_the_server_sees_them() {
    assert!(check_balanced("sum(rate(x[1m]))").is_ok());
    assert!(check_balanced(r#"x{a="(}"}"#).is_ok());
    assert!(check_balanced("sum(x")
        .unwrap_err()
        .contains("never closed"));
    assert!(check_balanced("x{a=\"b}").is_err());
    assert!(check_balanced("x]").is_err());
}
