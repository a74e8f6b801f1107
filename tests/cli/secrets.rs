//! Secrets never leak: a distinct secret in every secret-bearing field
//! (bearer token file, bearer token env, basic-auth password file and env),
//! used for real against a tool that requires them, must never appear in
//! the logs (text and JSON), `check` output, `/api/v1/targets`, /metrics or
//! the reports. And credentials written inline are refused by `check`.

use crate::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::FakeTool;

const BIN: &str = env!("CARGO_BIN_EXE_throttle-governor");
const TOKEN_FILE_SECRET: &str = "s3cr3t-token-from-file-9f2c";
const PASSWORD_ENV_SECRET: &str = "s3cr3t-password-from-env-77ab";

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tg-secrets-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn basic(user: &str, pw: &str) -> String {
    // Minimal base64 for the test's own expectation.
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let input = format!("{user}:{pw}");
    let bytes = input.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    format!("Basic {out}")
}

fn config(tool: &FakeTool, listen: &str) -> String {
    let d = dir();
    std::fs::write(d.join("token"), format!("{TOKEN_FILE_SECRET}\n")).unwrap();
    tool.target_toml("secret", 100, 100, "")
        .replace(
            "timeout = \"500ms\"\n\n[targets.control]",
            &format!(
                "timeout = \"500ms\"\nauth = {{ bearer_token_file = \"{}\" }}\n\n[targets.control]",
                d.join("token").display()
            ),
        )
        .replace(
            "confirm_interval = \"20ms\"",
            "confirm_interval = \"20ms\"\nauth = { username = \"ops\", password_env = \"TG_TEST_ADMIN_PASSWORD\" }",
        )
        .replace("[[targets]]", &format!("[server]\nlisten = \"{listen}\"\n\n[[targets]]"))
}

fn assert_clean(what: &str, text: &str) {
    for secret in [TOKEN_FILE_SECRET, PASSWORD_ENV_SECRET] {
        assert!(!text.contains(secret), "{what} leaks a secret:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_appear_anywhere() {
    let tool = FakeTool::start(30.0, 1.0).await;
    tool.state.lock().unwrap().require = Some((
        format!("Bearer {TOKEN_FILE_SECRET}"),
        basic("ops", PASSWORD_ENV_SECRET),
    ));
    let port = support::free_port();
    let path = dir().join("secret.toml");
    std::fs::write(&path, config(&tool, &format!("127.0.0.1:{port}"))).unwrap();

    // check
    let out = Command::new(BIN)
        .args(["check", "--config", path.to_str().unwrap()])
        .env("TG_TEST_ADMIN_PASSWORD", PASSWORD_ENV_SECRET)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_clean("check", &String::from_utf8_lossy(&out.stdout));
    assert_clean("check", &String::from_utf8_lossy(&out.stderr));

    for format in ["text", "json"] {
        let json = dir().join(format!("r-{format}.json"));
        let html = dir().join(format!("r-{format}.html"));
        let child = Command::new(BIN)
            .args([
                "--log-format",
                format,
                "run",
                "--config",
                path.to_str().unwrap(),
                "--max-duration",
                "4s",
                "--report-json",
                json.to_str().unwrap(),
                "--report-html",
                html.to_str().unwrap(),
            ])
            .env("TG_TEST_ADMIN_PASSWORD", PASSWORD_ENV_SECRET)
            .env("RUST_LOG", "trace")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read the API and metrics while it runs.
        let deadline = Instant::now() + Duration::from_secs(4);
        let (mut api, mut metrics) = (String::new(), String::new());
        while Instant::now() < deadline {
            let a = reqwest::get(format!("http://127.0.0.1:{port}/api/v1/targets")).await;
            let m = reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await;
            if let (Ok(a), Ok(m)) = (a, m) {
                let (a, m) = (
                    a.text().await.unwrap_or_default(),
                    m.text().await.unwrap_or_default(),
                );
                let windows = serde_json::from_str::<serde_json::Value>(&a)
                    .ok()
                    .and_then(|v| v["targets"][0]["windows"].as_u64())
                    .unwrap_or(0);
                (api, metrics) = (a, m);
                if windows >= 5 {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(api.contains("secret"), "API never answered: {api}");
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        // The secrets were really used: the tool accepted the requests.
        assert!(tool.writes() > 0, "no authorised write reached the tool");
        assert!(api.contains("\"has_baseline\":true"), "{api}");
        assert_clean("logs", &stderr);
        assert_clean("stdout", &String::from_utf8_lossy(&out.stdout));
        assert_clean("/api/v1/targets", &api);
        assert_clean("/metrics", &metrics);
        assert_clean("JSON report", &std::fs::read_to_string(&json).unwrap());
        assert_clean("HTML report", &std::fs::read_to_string(&html).unwrap());
    }
}

#[test]
fn inline_credentials_are_refused() {
    let good = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/example.toml"))
        .unwrap();
    let path = dir().join("inline.toml");
    let bad = good
        .replace(
            "http://127.0.0.1:9100/metrics",
            "http://user:hunter2@127.0.0.1:9100/metrics",
        )
        .replace(
            "# headers = { \"X-Scope-OrgID\" = \"load\" }",
            "headers = { Authorization = \"Bearer hunter2\" }",
        );
    std::fs::write(&path, bad).unwrap();
    let out = Command::new(BIN)
        .args(["check", "--config", path.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("targets[checkout].signal.url")
            && stderr.contains("credentials in the URL"),
        "{stderr}"
    );
    assert!(
        stderr.contains("targets[checkout].signal.headers"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("hunter2"),
        "check echoes the inline secret:\n{stderr}"
    );
}
