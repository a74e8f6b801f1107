//! Every example config in `config/` loads and validates as shipped, so a
//! user who copies one gets a config that works as shown. The directory is
//! scanned, so a new example is covered without touching this test.

use std::path::Path;

use throttle_governor::config::Config;

#[test]
fn every_shipped_config_loads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let mut loaded = Vec::new();
    let mut failed = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        match Config::load(&path) {
            Ok(c) => {
                assert!(
                    !c.targets.is_empty() || path.ends_with("distributed.toml"),
                    "{}: no targets",
                    path.display()
                );
                loaded.push(path.file_name().unwrap().to_string_lossy().to_string());
            }
            Err(e) => failed.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    for want in [
        "locust.toml",
        "locust-workers.toml",
        "k6.toml",
        "k6-promql.toml",
        "push.toml",
        "latency.toml",
    ] {
        assert!(
            loaded.iter().any(|l| l == want),
            "{want} not found in {loaded:?}"
        );
    }
}
