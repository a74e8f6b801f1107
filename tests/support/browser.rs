//! Headless Chromium driven over the DevTools protocol, for the live page.
//!
//! The browser runs with a fresh profile and no background networking (the
//! flags the environment notes give), on a DevTools port the OS picks
//! (read back from `DevToolsActivePort`), and is killed on drop. The page's
//! websocket is spoken with `tokio-tungstenite`, which the crate already
//! depends on for Goose, so no dependency is added.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use super::{ChildGuard, TempDir};

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The Chromium binary, if one is installed.
pub fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| super::require_tool_quiet(c))
}

/// A headless Chromium showing one page.
pub struct Browser {
    socket: Socket,
    next_id: u64,
    // Dropped after the socket: the process first, then its profile.
    guard: ChildGuard,
    _profile: TempDir,
}

impl Browser {
    /// Starts Chromium on `url` in a `width` x `height` window.
    pub async fn launch(binary: &str, url: &str, width: u32, height: u32) -> Browser {
        let profile = TempDir::new("chromium");
        let mut cmd = Command::new(binary);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            &format!("--window-size={width},{height}"),
            &format!("--user-data-dir={}", profile.0.display()),
            url,
        ]);
        let guard = ChildGuard::spawn("chromium", cmd, profile.path("chromium.log"));
        let active = profile.path("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(30);
        let port: u16 = loop {
            if let Some(p) = std::fs::read_to_string(&active)
                .ok()
                .and_then(|t| t.lines().next().and_then(|l| l.trim().parse().ok()))
            {
                break p;
            }
            assert!(
                Instant::now() < deadline,
                "chromium did not open its DevTools port:\n{}",
                guard.tail()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        // The page target the URL opened in.
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .no_proxy()
            .build()
            .unwrap();
        let ws = loop {
            let list: Value = match client
                .get(format!("http://127.0.0.1:{port}/json/list"))
                .send()
                .await
            {
                Ok(r) => r.json().await.unwrap_or(Value::Null),
                Err(_) => Value::Null,
            };
            let page = list.as_array().and_then(|l| {
                l.iter()
                    .find(|t| t["type"] == "page")
                    .and_then(|t| t["webSocketDebuggerUrl"].as_str())
                    .map(String::from)
            });
            if let Some(ws) = page {
                break ws;
            }
            assert!(
                Instant::now() < deadline,
                "chromium has no page target:\n{}",
                guard.tail()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let (socket, _) = tokio_tungstenite::connect_async(ws.as_str())
            .await
            .unwrap_or_else(|e| panic!("cannot connect to {ws}: {e}"));
        Browser {
            socket,
            next_id: 0,
            guard,
            _profile: profile,
        }
    }

    /// Sends one DevTools command and returns its result (events in
    /// between are ignored).
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let text = json!({"id": id, "method": method, "params": params}).to_string();
        self.socket.send(Message::text(text)).await.unwrap();
        let reply = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let msg = self
                    .socket
                    .next()
                    .await
                    .expect("the DevTools socket closed")
                    .unwrap();
                if let Message::Text(t) = msg {
                    let v: Value = serde_json::from_str(t.as_str()).unwrap();
                    if v["id"] == id {
                        return v;
                    }
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no answer to {method}"));
        assert!(reply.get("error").is_none(), "{method} failed: {reply}");
        reply["result"].clone()
    }

    /// Evaluates a JavaScript expression in the page (awaiting a promise)
    /// and returns its value.
    pub async fn eval(&mut self, expression: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        assert!(
            r.get("exceptionDetails").is_none(),
            "{expression} threw: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Evaluates `expression` until it is truthy (every 100 ms), and
    /// returns its value; panics after `limit`, a guard against a hang,
    /// not a measured bound.
    pub async fn wait_for(&mut self, expression: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let v = self.eval(expression).await;
            if !(v.is_null() || v == false || v == 0 || v == "") {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "still false after {limit:?}: {expression}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Saves a PNG of the page's viewport.
    pub async fn screenshot(&mut self, path: &Path) {
        let r = self
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .await;
        std::fs::write(path, base64(r["data"].as_str().unwrap())).unwrap();
    }
}

/// Decodes standard base64 (what DevTools sends images in).
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &d)| n | (d as u32) << (18 - 6 * i));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

/// Where a test saves the README's pictures: `TG_PICTURES_DIR` when set
/// (`scripts/pictures` sets it to `docs/img`), else a scratch directory.
pub fn pictures_dir() -> std::path::PathBuf {
    match std::env::var_os("TG_PICTURES_DIR") {
        Some(d) => std::path::PathBuf::from(d),
        None => super::scratch_dir("pictures"),
    }
}
