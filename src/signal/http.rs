//! The bounded HTTP fetch shared by every signal source and read-back.
//!
//! Why it exists: every read of someone else's endpoint needs the same
//! guards: a total timeout, a body-size limit enforced while streaming (so a
//! huge body is refused, not buffered), and errors mapped to bounded types.
//! And one redirect policy: a redirect is followed only to the same origin
//! (scheme, host and port), so a tool cannot send the governor to read
//! another tool's counters on the same machine.
//!
//! And one bound on requests in flight for the whole process
//! ([`MAX_IN_FLIGHT`], taken by [`in_flight`]): when reads slow down
//! (a stalled tool, a busy machine), every request that finds no idle
//! pooled connection opens a new one, each costing buffers and a file
//! descriptor. Measured at 5,000 targets on one host, a 1.5 s stall grew
//! the pool to 8,700 connections and the heap to 450 MB. With the bound,
//! a stall queues requests (within their own timeouts) instead.

use std::time::Duration;

use super::SignalError;

/// Default limit on a response body: 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = crate::config::limits::DEFAULT_MAX_BODY_BYTES;

/// Redirects followed in a row at most.
pub const MAX_REDIRECTS: usize = 5;

/// Outbound HTTP requests in flight at once, across every target.
///
/// A read takes about a millisecond on a healthy tool, so 10,000 targets at
/// 1 s windows keep a few dozen in flight; the bound only queues requests
/// when reads slow down, and waiting for it counts against the request's
/// own timeout.
pub const MAX_IN_FLIGHT: usize = 256;

static IN_FLIGHT: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(MAX_IN_FLIGHT);

/// Waits for one of the [`MAX_IN_FLIGHT`] request slots; hold the permit
/// until the response body has been read.
pub async fn in_flight() -> tokio::sync::SemaphorePermit<'static> {
    // The semaphore is never closed, so acquiring cannot fail.
    IN_FLIGHT
        .acquire()
        .await
        .unwrap_or_else(|_| unreachable!("the in-flight semaphore is never closed"))
}

/// Whether a redirect from `from` to `to` stays at the same origin: the same
/// scheme, host and port (a missing port is the scheme's default).
pub fn same_origin(from: &reqwest::Url, to: &reqwest::Url) -> bool {
    from.scheme() == to.scheme()
        && from.host_str() == to.host_str()
        && from.port_or_known_default() == to.port_or_known_default()
}

/// The redirect policy of every client: same origin only, at most
/// [`MAX_REDIRECTS`] in a row.
pub fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt
            .previous()
            .first()
            .is_some_and(|first| same_origin(first, attempt.url()));
        if attempt.previous().len() > MAX_REDIRECTS || !same {
            attempt.stop()
        } else {
            attempt.follow()
        }
    })
}

/// GETs `request` and returns the body as text, within `timeout` and `max_bytes`.
pub async fn fetch_text(
    request: reqwest::RequestBuilder,
    timeout: Duration,
    max_bytes: usize,
) -> Result<String, SignalError> {
    let fut = async {
        let _slot = in_flight().await;
        let mut resp = request.send().await.map_err(map_reqwest)?;
        let status = resp.status();
        if !status.is_success() {
            return Err(SignalError::Status(status.as_u16()));
        }
        let length = resp.content_length().map(|n| n as usize);
        if length.is_some_and(|n| n > max_bytes) {
            return Err(SignalError::TooLarge(max_bytes));
        }
        let mut body = Vec::with_capacity(length.unwrap_or(0));
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

#[cfg(test)]
mod tests {
    use super::same_origin;

    #[test]
    fn origin_is_scheme_host_and_port() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert!(same_origin(
            &u("http://127.0.0.1:9100/a"),
            &u("http://127.0.0.1:9100/b?x")
        ));
        assert!(same_origin(&u("http://h/a"), &u("http://h:80/b")));
        assert!(!same_origin(
            &u("http://127.0.0.1:9100/a"),
            &u("http://127.0.0.1:9101/a")
        ));
        assert!(!same_origin(&u("http://h/a"), &u("https://h/a")));
        assert!(!same_origin(&u("http://h/a"), &u("http://g/a")));
    }
}
