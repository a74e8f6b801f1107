//! The bounded HTTP fetch shared by every signal source and read-back.
//!
//! Why it exists: every read of someone else's endpoint needs the same
//! guards: a total timeout, a body-size limit enforced while streaming (so a
//! huge body is refused, not buffered), and errors mapped to bounded types.

use std::time::Duration;

use super::SignalError;

/// Default limit on a response body: 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = crate::config::limits::DEFAULT_MAX_BODY_BYTES;

/// GETs `request` and returns the body as text, within `timeout` and `max_bytes`.
pub async fn fetch_text(
    request: reqwest::RequestBuilder,
    timeout: Duration,
    max_bytes: usize,
) -> Result<String, SignalError> {
    let fut = async {
        let mut resp = request.send().await.map_err(map_reqwest)?;
        let status = resp.status();
        if !status.is_success() {
            return Err(SignalError::Status(status.as_u16()));
        }
        if resp
            .content_length()
            .is_some_and(|n| n as usize > max_bytes)
        {
            return Err(SignalError::TooLarge(max_bytes));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(map_reqwest)? {
            if body.len() + chunk.len() > max_bytes {
                return Err(SignalError::TooLarge(max_bytes));
            }
            body.extend_from_slice(&chunk);
        }
        String::from_utf8(body).map_err(|_| SignalError::Format("body is not UTF-8 text".into()))
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(SignalError::Timeout(timeout)),
    }
}

/// Maps a reqwest error to a bounded signal error.
pub fn map_reqwest(e: reqwest::Error) -> SignalError {
    if e.is_timeout() {
        SignalError::Timeout(Duration::ZERO)
    } else if e.is_connect() {
        SignalError::Connect(root_cause(&e))
    } else {
        SignalError::Transport(root_cause(&e))
    }
}

/// The innermost error message, which is the useful one for reqwest.
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}
