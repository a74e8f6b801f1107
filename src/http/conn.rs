//! The accept loop of the controller's own server: a header-read timeout, a
//! connection cap and a per-connection idle timeout.
//!
//! Why it exists: `axum::serve` accepts every connection and keeps it for
//! as long as the client likes. 2,000 slowloris connections held 52 MB and,
//! under `ulimit -n 1024`, ran the process out of file descriptors, so
//! `/metrics` timed out and the scrapes that carry the signal failed. Here
//! each connection is served by hyper's HTTP/1 connection with
//! [`ServerLimits::header_read_timeout`]; at most
//! [`ServerLimits::max_connections`] are open, and a new one past the cap
//! closes the longest-idle connection (one with no request in flight), so a
//! scrape always gets in while the idle ones are shed. When none is idle,
//! the connection whose request body has been arriving longest is closed
//! instead: a request whose body is still in flight is a client that holds
//! a connection without asking anything of the server yet, and 300 of them
//! dribbling one byte each starved `/metrics` before (issue 27). A request
//! whose handler is running (its body read) is never shed. The cap being
//! reached is logged (at most once a minute) and counted in
//! `throttle_server_connections_shed_total`.
//!
//! What it may touch: the listener it is given and the connections it
//! accepts.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::telemetry::lock;
use crate::telemetry::metrics::FaultMetrics;

/// How long the server may take to finish in-flight requests at shutdown.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The server's guards.
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    /// A request's head (request line and headers) must arrive within this.
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed.
    pub idle_timeout: Duration,
    /// Connections open at once; past it the longest-idle one is closed.
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            header_read_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(60),
            max_connections: 256,
        }
    }
}

/// One open connection, as the accept loop sees it.
struct Conn {
    /// Requests in flight.
    busy: AtomicUsize,
    /// Requests begun on it so far.
    requests: AtomicU64,
    /// Milliseconds since the server's start of the last request's end (or
    /// the accept).
    last_active_ms: AtomicU64,
    /// 0, or 1 + the milliseconds since the server's start at which the
    /// current request's body began to be awaited (the body not yet read
    /// to its end).
    body_since_ms: AtomicU64,
    /// Closes it at once.
    close: CancellationToken,
}

struct Table {
    start: Instant,
    conns: Mutex<BTreeMap<u64, Arc<Conn>>>,
}

impl Table {
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Chooses a connection to close, in this order: the longest idle of
    /// those kept alive after a request; else the one whose request body
    /// has been arriving longest; else the longest idle of those that have
    /// not sent a whole request head yet (a scrape that just connected is
    /// one of these, so it is shed last). False if every open connection has
    /// a request whose handler is running. It leaves the table at once (its
    /// task closes the socket next).
    fn shed_one(&self) -> bool {
        let mut conns = lock(&self.conns);
        let idle = |served: bool| {
            conns
                .iter()
                .filter(|(_, c)| {
                    c.busy.load(Ordering::Acquire) == 0
                        && (c.requests.load(Ordering::Relaxed) > 0) == served
                })
                .min_by_key(|(_, c)| c.last_active_ms.load(Ordering::Relaxed))
                .map(|(id, _)| *id)
        };
        let body = || {
            conns
                .iter()
                .map(|(id, c)| (*id, c.body_since_ms.load(Ordering::Acquire)))
                .filter(|(_, since)| *since != 0)
                .min_by_key(|(_, since)| *since)
                .map(|(id, _)| id)
        };
        let victim = idle(true).or_else(body).or_else(|| idle(false));
        match victim.and_then(|id| conns.remove(&id)) {
            Some(conn) => {
                conn.close.cancel();
                true
            }
            None => false,
        }
    }

    /// Open connections, not counting those being closed.
    fn open(&self) -> usize {
        lock(&self.conns).len()
    }
}

/// Counts a request in flight on a connection while it lives.
struct InFlight {
    conn: Arc<Conn>,
    table: Arc<Table>,
}

impl InFlight {
    fn new(conn: &Arc<Conn>, table: &Arc<Table>) -> Self {
        conn.busy.fetch_add(1, Ordering::AcqRel);
        conn.requests.fetch_add(1, Ordering::Relaxed);
        InFlight {
            conn: conn.clone(),
            table: table.clone(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.conn
            .last_active_ms
            .store(self.table.now_ms(), Ordering::Relaxed);
        self.conn.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A request body that marks its connection as "body in flight" until it
/// is read to its end, fails or is dropped, so that [`Table::shed_one`] may
/// shed a connection that is only dribbling a body.
struct TrackedBody {
    inner: Incoming,
    conn: Option<Arc<Conn>>,
}

impl TrackedBody {
    fn new(inner: Incoming, conn: &Arc<Conn>, table: &Table) -> Self {
        use hyper::body::Body as _;
        let conn = (!inner.is_end_stream()).then(|| {
            conn.body_since_ms
                .store(table.now_ms() + 1, Ordering::Release);
            conn.clone()
        });
        TrackedBody { inner, conn }
    }

    fn finish(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.body_since_ms.store(0, Ordering::Release);
        }
    }
}

impl Drop for TrackedBody {
    fn drop(&mut self) {
        self.finish();
    }
}

impl hyper::body::Body for TrackedBody {
    type Data = hyper::body::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            std::task::Poll::Ready(None) | std::task::Poll::Ready(Some(Err(_))) => self.finish(),
            _ => {
                if self.inner.is_end_stream() {
                    self.finish();
                }
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown`
/// completes; then closes idle connections, lets requests in flight finish
/// and returns when every connection is closed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    faults: FaultMetrics,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let table = Arc::new(Table {
        start: Instant::now(),
        conns: Mutex::new(BTreeMap::new()),
    });
    let stopping = CancellationToken::new();
    let mut tasks = JoinSet::new();
    let mut next_id = 0u64;
    let mut cap_logged: Option<Instant> = None;
    let mut accept_logged: Option<Instant> = None;
    let once_a_minute = |last: &mut Option<Instant>| {
        let due = last.is_none_or(|t| t.elapsed() >= Duration::from_secs(60));
        if due {
            *last = Some(Instant::now());
        }
        due
    };
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            r = listener.accept() => r,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning, and make
                // room by shedding an idle connection.
                if once_a_minute(&mut accept_logged) {
                    warn!(error = %e, "Cannot accept a connection to the controller's server; shedding idle connections");
                }
                if table.shed_one() {
                    faults.connections_shed.inc();
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if table.open() >= limits.max_connections {
            let shed = table.shed_one();
            faults.connections_shed.inc();
            if once_a_minute(&mut cap_logged) {
                warn!(
                    max_connections = limits.max_connections,
                    "Connection cap of the controller's server reached ({} open): the longest-idle connection is closed for each new one (logged at most once a minute; counted in throttle_server_connections_shed_total)",
                    limits.max_connections
                );
            }
            if !shed {
                // Every connection has a request in flight: refuse this one.
                drop(stream);
                continue;
            }
        }
        let _ = stream.set_nodelay(true);
        let id = next_id;
        next_id += 1;
        let conn = Arc::new(Conn {
            busy: AtomicUsize::new(0),
            requests: AtomicU64::new(0),
            last_active_ms: AtomicU64::new(table.now_ms()),
            body_since_ms: AtomicU64::new(0),
            close: CancellationToken::new(),
        });
        lock(&table.conns).insert(id, conn.clone());
        faults.connections.set(lock(&table.conns).len() as i64);
        let table = table.clone();
        let router = router.clone();
        let stopping = stopping.clone();
        let gauge = faults.connections.clone();
        tasks.spawn(async move {
            serve_one(stream, router, &conn, &table, limits, &stopping).await;
            let mut conns = lock(&table.conns);
            conns.remove(&id);
            gauge.set(conns.len() as i64);
        });
    }
    stopping.cancel();
    while tasks.join_next().await.is_some() {}
    Ok(())
}

async fn serve_one(
    stream: tokio::net::TcpStream,
    router: axum::Router,
    conn: &Arc<Conn>,
    table: &Arc<Table>,
    limits: ServerLimits,
    stopping: &CancellationToken,
) {
    let tower = TowerToHyperService::new(router);
    let (c, t) = (conn.clone(), table.clone());
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let guard = InFlight::new(&c, &t);
        let req = req.map(|body| TrackedBody::new(body, &c, &t));
        let fut = hyper::service::Service::call(&tower, req);
        async move {
            let response = fut.await;
            drop(guard);
            response
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let idle_check = (limits.idle_timeout / 4).max(Duration::from_millis(50));
    let idle_ms = limits.idle_timeout.as_millis() as u64;
    loop {
        tokio::select! {
            // Done, or a protocol error (a timed-out head included): closed.
            _ = connection.as_mut() => return,
            // Shed at the cap: close now.
            _ = conn.close.cancelled() => return,
            _ = stopping.cancelled() => {
                connection.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(SHUTDOWN_GRACE, connection.as_mut()).await;
                return;
            }
            _ = tokio::time::sleep(idle_check) => {
                let idle = conn.busy.load(Ordering::Acquire) == 0
                    && table.now_ms().saturating_sub(conn.last_active_ms.load(Ordering::Relaxed)) >= idle_ms;
                if idle {
                    return;
                }
            }
        }
    }
}
