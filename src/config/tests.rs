use std::path::Path;
use std::time::Duration;

use super::*;
use crate::governor::{Control, Profile};

const GOOD: &str = r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "checkout"
knob = "concurrency"
ceiling = 256
floor = 1
high = 0.05
window = "500ms"

[targets.signal]
kind = "prometheus"
url = "http://127.0.0.1:9100/metrics"
attempts = 'myload_requests_total'
failures = 'myload_requests_total{outcome="error"}'
timeout = "1s"

[targets.control]
kind = "http"
url = "http://127.0.0.1:9100/admin/workers"
body = '{"workers": {{value}}}'
[targets.control.read_back]
url = "http://127.0.0.1:9100/admin/workers"
json_pointer = "/workers"
"#;

#[test]
fn max_connections_defaults_to_256_and_is_bounded() {
    assert_eq!(Config::parse(GOOD).unwrap().server.max_connections, 256);
    let with = |n: &str| GOOD.replace("[server]\n", &format!("[server]\nmax_connections = {n}\n"));
    assert_eq!(
        Config::parse(&with("2048")).unwrap().server.max_connections,
        2048
    );
    for bad in ["8", "100000"] {
        let err = Config::parse(&with(bad)).unwrap_err().to_string();
        assert!(
            err.contains("server.max_connections") && err.contains(bad),
            "{err}"
        );
    }
}

#[test]
fn good_config_parses_with_defaults() {
    let c = Config::parse(GOOD).unwrap();
    let t = &c.targets[0];
    assert_eq!(t.window, Duration::from_millis(500));
    let p = t.params().unwrap();
    assert_eq!(p.start, 1.0);
    assert!((p.low - 0.01).abs() < 1e-12);
    assert_eq!(t.on_exit, OnExit::Leave);
    assert_eq!(t.profile, Profile::Gentle, "gentle unless asked");
    assert_eq!(t.profile_key, ProfileKey::Omitted);
    assert!(t.profile_description().contains("the default"));
    let ControlConfig::Http(h) = &t.control else {
        panic!("expected http")
    };
    assert_eq!(h.method, "PUT");
    assert_eq!(h.content_type, "application/json");
}

#[test]
fn every_bad_field_is_reported_by_target() {
    let bad = GOOD
        .replace("ceiling = 256", "ceiling = 256\nlow = 0.2")
        .replace(
            "url = \"http://127.0.0.1:9100/metrics\"",
            "url = \"ftp://x\"",
        )
        .replace("window = \"500ms\"", "window = \"0s\"")
        .replace("json_pointer = \"/workers\"", "json_pointer = \"workers\"")
        .replace("'myload_requests_total'", "'myload_requests_total{'");
    let Err(ConfigError::Invalid(errors)) = Config::parse(&bad) else {
        panic!("expected errors");
    };
    let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    for field in [
        "targets[checkout].low",
        "targets[checkout].signal.url",
        "targets[checkout].window",
        "targets[checkout].control.read_back.json_pointer",
        "targets[checkout].signal.attempts",
    ] {
        assert!(
            text.iter().any(|t| t.starts_with(field)),
            "{field} missing in {text:#?}"
        );
    }
}

#[test]
fn unknown_keys_and_control_string_are_explained() {
    let bad = GOOD.replace("floor = 1", "floor = 1\nflor = 2");
    let err = Config::parse(&bad).unwrap_err().to_string();
    assert!(
        err.contains("targets[checkout]") && err.contains("flor"),
        "{err}"
    );

    let bad = GOOD.replace("knob = \"concurrency\"", "control = \"concurrency\"");
    let err = Config::parse(&bad).unwrap_err().to_string();
    assert!(err.contains("knob"), "{err}");
}

#[test]
fn duplicate_names_and_missing_confirmation_are_rejected() {
    let two = format!("{GOOD}\n{}", &GOOD[GOOD.find("[[targets]]").unwrap()..]);
    let err = Config::parse(&two).unwrap_err().to_string();
    assert!(err.contains("duplicate target name"), "{err}");

    let start = GOOD.find("[targets.control.read_back]").unwrap();
    let no_rb = &GOOD[..start];
    let err = Config::parse(no_rb).unwrap_err().to_string();
    assert!(err.contains("control.read_back"), "{err}");
}

#[test]
fn profile_is_named_or_gentle_and_checked() {
    let with = |name: &str| {
        let text = GOOD.replace("floor = 1", &format!("floor = 1\nprofile = \"{name}\""));
        Config::parse(&text).map(|c| c.targets[0].clone())
    };
    for (name, profile) in [
        ("seed", Profile::Seed),
        ("robust", Profile::Robust),
        ("gentle", Profile::Gentle),
    ] {
        let t = with(name).unwrap();
        assert_eq!((t.profile, t.profile_key), (profile, ProfileKey::Given));
        assert_eq!(t.profile_description(), name);
    }
    // A config that names a profile keeps its meaning: "default" was
    // the seed rules, and still is; check says so.
    let t = with("default").unwrap();
    assert_eq!(
        (t.profile, t.profile_key),
        (Profile::Seed, ProfileKey::OldDefault)
    );
    let said = t.profile_description();
    assert!(
        said.starts_with("seed (spelled \"default\"") && said.contains("\"gentle\""),
        "{said}"
    );
    let err = with("rubust").unwrap_err().to_string();
    assert!(err.contains("profile") && err.contains("rubust"), "{err}");
    for valid in ["seed", "robust", "gentle"] {
        assert!(err.contains(valid), "{err}");
    }
}

#[test]
fn bad_duration_names_the_unit() {
    let bad = GOOD.replace("window = \"500ms\"", "window = \"2\"");
    let err = Config::parse(&bad).unwrap_err().to_string();
    assert!(err.contains("unit"), "{err}");
}

#[test]
fn shipped_tool_configs_parse() {
    for (file, kind) in [
        ("locust.toml", "locust"),
        ("k6.toml", "k6"),
        ("goose.toml", "goose"),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("config")
            .join(file);
        let c = Config::load(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(c.targets[0].signal.kind(), kind);
        assert_eq!(c.targets[0].control.kind(), kind);
    }
}

#[test]
fn adapter_configs_are_checked() {
    let base = |signal: &str, control: &str, extra: &str| {
        format!(
            "[[targets]]\nname = \"t\"\nknob = \"concurrency\"\nceiling = 10\nfloor = 1\nhigh = 0.05\nwindow = \"3s\"\n{extra}\n[targets.signal]\n{signal}\n[targets.control]\n{control}\n"
        )
    };
    // Locust: window below the stats cache, bad spawn rate, rate knob.
    let text = base(
        "kind = \"locust\"\nurl = \"http://h:8089\"",
        "kind = \"locust\"\nurl = \"http://h:8089\"\nspawn_rate = 0",
        "",
    )
    .replace("window = \"3s\"", "window = \"1s\"")
    .replace("knob = \"concurrency\"", "knob = \"rate\"");
    let err = Config::parse(&text).unwrap_err().to_string();
    for field in ["targets[t].window", "control.spawn_rate", "targets[t].knob"] {
        assert!(err.contains(field), "{field} missing in {err}");
    }
    // k6: bad metric name; Goose: not a ws:// URL, ceiling above Goose's max.
    let text = base(
        "kind = \"k6\"\nurl = \"http://h:6565\"\nfailures = \"failed-attempts\"",
        "kind = \"goose\"\nurl = \"http://h:5117\"",
        "",
    )
    .replace("ceiling = 10", "ceiling = 200000");
    let err = Config::parse(&text).unwrap_err().to_string();
    for field in ["signal.failures", "control.url", "targets[t].ceiling"] {
        assert!(err.contains(field), "{field} missing in {err}");
    }
    // Mixed: a Locust signal confirms a generic http control (user_count).
    let text = base(
        "kind = \"locust\"\nurl = \"http://h:8089\"",
        "kind = \"http\"\nurl = \"http://h:9000/users\"",
        "",
    );
    Config::parse(&text).unwrap();
    // ...but a k6 signal has no offer, so http needs a read_back.
    let text = base(
        "kind = \"k6\"\nurl = \"http://h:6565\"",
        "kind = \"http\"\nurl = \"http://h:9000/users\"",
        "",
    );
    let err = Config::parse(&text).unwrap_err().to_string();
    assert!(err.contains("control.read_back"), "{err}");
}

#[test]
fn syntax_error_gives_line() {
    let err = Config::parse("[[targets]\nname=").unwrap_err().to_string();
    assert!(err.contains("line 1"), "{err}");
}

/// The shortest Locust config: the signal alone (issue 29).
const SHORTEST_LOCUST: &str = r#"
[[targets]]
ceiling = 200
[targets.signal]
kind = "locust"
url = "http://127.0.0.1:8089"
"#;

#[test]
fn a_tool_target_needs_only_its_url_and_ceiling() {
    let short = Config::parse(SHORTEST_LOCUST).unwrap();
    let long = Config::parse(&std::fs::read_to_string("config/locust.toml").unwrap()).unwrap();
    assert_eq!(
        serde_json::to_value(&short).unwrap(),
        serde_json::to_value(&long).unwrap()
    );
    let t = &short.targets[0];
    assert_eq!((t.name.as_str(), t.knob), ("locust", Control::Concurrency));
    assert_eq!((t.floor, t.high), (1.0, 0.05));
    assert_eq!(t.window, Duration::from_secs(3), "Locust's window");
    assert_eq!(t.control.kind(), "locust");
}

#[test]
fn the_control_gives_the_signal_and_k6_keeps_the_plain_window() {
    let c = Config::parse(
        "[[targets]]\nceiling = 40\n[targets.control]\nkind = \"k6\"\nurl = \"http://127.0.0.1:6565\"\n",
    )
    .unwrap();
    let t = &c.targets[0];
    assert_eq!((t.signal.kind(), t.name.as_str()), ("k6", "k6"));
    assert_eq!(t.window, Duration::from_secs(2));
}

#[test]
fn keys_that_are_set_keep_their_values() {
    let set = SHORTEST_LOCUST.replace(
        "ceiling = 200",
        "name = \"shop\"\nceiling = 200\nfloor = 4\nhigh = 0.1\nwindow = \"5s\"",
    );
    let t = &Config::parse(&set).unwrap().targets[0];
    assert_eq!(
        (t.name.as_str(), t.floor, t.high, t.window.as_secs()),
        ("shop", 4.0, 0.1, 5)
    );
    // A rate target: floor 1 (one request per second), no ceiling needed.
    let rate = GOOD
        .replace("knob = \"concurrency\"", "knob = \"rate\"")
        .replace("ceiling = 256\nfloor = 1\n", "");
    let t = &Config::parse(&rate).unwrap().targets[0];
    assert_eq!((t.floor, t.ceiling), (1.0, None));
    // A non-tool target is not named for you.
    let err = Config::parse(&GOOD.replace("name = \"checkout\"\n", ""))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing field `name`"), "{err}");
}

#[test]
fn every_type_error_of_a_target_is_reported_with_the_semantic_ones() {
    let bad = GOOD
        .replace("ceiling = 256", "ceiling = \"lots\"\nwndow = \"2s\"")
        .replace("window = \"500ms\"", "window = \"5\"")
        .replace("timeout = \"1s\"", "timeout = 1\nretries = 3")
        .replace("json_pointer = \"/workers\"", "json_pointer = \"workers\"")
        .replace("high = 0.05", "high = 2.0");
    let err = Config::parse(&bad).unwrap_err().to_string();
    for field in [
        "targets[checkout].ceiling: expected a number",
        "targets[checkout].wndow: unknown field",
        "targets[checkout].window: `5` is not a duration",
        "targets[checkout].signal.timeout",
        "targets[checkout].signal.retries: unknown field",
        "targets[checkout].control.read_back.json_pointer",
        "targets[checkout].high",
    ] {
        assert!(err.contains(field), "{field} missing from:\n{err}");
    }
}
