use std::path::Path;
use std::time::Duration;

use super::*;
use crate::governor::Profile;

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
