//! The pull control: offers that the tool asks for, confirmed by who asked.
//!
//! Why it exists: k6 v2 removed live VU control, and Artillery, Gatling and
//! home-grown scripts never had it. What every such tool can do is ask. With
//! `kind = "pull"` nothing is written: a write publishes the offer on the
//! [`PullBoard`] (a new generation), the controller's server answers
//! `GET /api/v1/targets/{name}/offer` from it, and the tool gates itself.
//!
//! Confirmation without a write: a pull that served a generation proves that
//! the tool has seen it, so the committed offer is the newest value that at
//! least one client has pulled ([`PullKnob::committed`]). When nobody has
//! pulled for `stale_after`, that read fails with
//! [`ControlError::NotPulled`]: a new offer stays unconfirmed (counted like
//! an unconfirmed write), and the engine's window step treats the window as
//! one without a valid signal, so the signal-loss policy applies. When the
//! tool's own report is configured (`read_back`, or a signal offer gauge),
//! the [`super::Actuator`] reads that instead, as for `http`.
//!
//! Where the board lives: it sits here, below both of its users, so that
//! neither imports the other. The supervisor makes one board and hands it
//! to both: the HTTP surface answers pulls from it (`http::pull`), and the
//! engine builds a [`PullKnob`] over it (`engine::build`).
//!
//! A pull may wait for the next publication (`?wait=`, [`wait`]): the tool
//! then takes a new offer within milliseconds of its publication, not up
//! to a poll interval later.
//!
//! What it may touch: only the board's memory (a mutex held for a few map
//! operations, never across an await). The HTTP side is `http::pull`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use thiserror::Error;
use tokio::sync::watch;

use super::ControlError;
use crate::auth::Secret;
use crate::config::pull::{PullControlConfig, DEFAULT_MAX_CLIENTS};

pub mod wait;
pub use wait::MAX_WAIT;

/// What is served: one single target, or one member of a target group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PullKey {
    /// The target's name.
    pub target: String,
    /// The group member's name, for a member of a group.
    pub member: Option<String>,
}

/// One offer as served to a puller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Served {
    /// The offer.
    pub offer: f64,
    /// `concurrency` or `rate`.
    pub knob: &'static str,
    /// Whether the knob is an integer (the text answer has no decimals).
    pub integer: bool,
    /// Bumped by every publication, even of the same value.
    pub generation: u64,
    /// When this generation was published.
    pub updated_at: SystemTime,
    /// Distinct pullers remembered for this target.
    pub clients: usize,
}

/// Why a pull is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PullError {
    /// No target (or member) of that name pulls its offer.
    #[error("no target `{0}` with kind = \"pull\"")]
    UnknownTarget(String),
    /// The target is a group: each member asks for its own share.
    #[error("`{0}` is a target group: ask for your share with ?instance=ADDR or /api/v1/targets/{0}/members/NAME/offer")]
    NeedMember(String),
    /// No member of that name or address.
    #[error("target group `{target}` has no member `{member}`")]
    UnknownMember {
        /// The group.
        target: String,
        /// The name or address asked for.
        member: String,
    },
    /// Nothing published yet (the controller is starting).
    #[error("no offer published yet for `{0}`; retry in a second")]
    NoOffer(String),
}

impl PullError {
    /// A bounded label for metrics.
    pub fn result(&self) -> &'static str {
        match self {
            PullError::UnknownTarget(_) | PullError::UnknownMember { .. } => "unknown_target",
            PullError::NeedMember(_) => "need_member",
            PullError::NoOffer(_) => "no_offer",
        }
    }
}

#[derive(Debug)]
struct Entry {
    knob: &'static str,
    integer: bool,
    offer: Option<f64>,
    generation: u64,
    updated_at: SystemTime,
    /// The newest generation any client has pulled, with its value.
    pulled: Option<(u64, f64)>,
    last_pull: Option<Instant>,
    /// Per puller: the generation it pulled last, and when.
    clients: HashMap<String, (u64, Instant)>,
    /// Pulls waiting for the next publication: pullers listening now.
    waiting: usize,
}

#[derive(Debug)]
struct Board {
    entries: HashMap<PullKey, Entry>,
    /// (target, member address) -> member name, for `?instance=ADDR`.
    aliases: HashMap<(String, String), String>,
    token: Option<Secret>,
    max_clients: usize,
    /// Pulls waiting, over every target, and the most that may.
    waiters: usize,
    max_waiters: usize,
    /// The server is stopping: no pull waits.
    closed: bool,
}

impl Default for Board {
    fn default() -> Self {
        Board {
            entries: HashMap::new(),
            aliases: HashMap::new(),
            token: None,
            max_clients: DEFAULT_MAX_CLIENTS,
            waiters: 0,
            max_waiters: wait::DEFAULT_MAX_WAITERS,
            closed: false,
        }
    }
}

impl Board {
    /// The key a pull of `target` (and `member`, by name or address) reads.
    fn key_of(&self, target: &str, member: Option<&str>) -> PullKey {
        PullKey {
            target: target.to_string(),
            member: member.map(|m| {
                self.aliases
                    .get(&(target.to_string(), m.to_string()))
                    .cloned()
                    .unwrap_or_else(|| m.to_string())
            }),
        }
    }
}

/// What each pulling target (and group member) serves; shared by the
/// knobs that publish and the server that answers pulls.
#[derive(Debug, Clone)]
pub struct PullBoard {
    inner: Arc<Mutex<Board>>,
    /// Bumped by every publication and removal: what a waiting pull wakes
    /// on.
    changes: Arc<watch::Sender<u64>>,
}

impl Default for PullBoard {
    fn default() -> Self {
        PullBoard {
            inner: Arc::default(),
            changes: Arc::new(watch::channel(0).0),
        }
    }
}

fn lock(m: &Mutex<Board>) -> std::sync::MutexGuard<'_, Board> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl PullBoard {
    /// Applies `[server.pull]`: the token pullers must present, and how many
    /// distinct pullers are remembered per target.
    pub fn configure(&self, token: Option<Secret>, max_clients: usize) {
        let mut b = lock(&self.inner);
        b.token = token;
        b.max_clients = max_clients.max(1);
    }

    /// Whether a presented bearer token (None: none sent) is accepted.
    pub fn authorized(&self, presented: Option<&str>) -> bool {
        let b = lock(&self.inner);
        match &b.token {
            None => true,
            Some(expected) => presented.is_some_and(|p| constant_time_eq(p, expected.expose())),
        }
    }

    /// Registers a key before its first publication (kept if present).
    pub fn register(&self, key: &PullKey, integer: bool, address: Option<&str>) {
        let mut b = lock(&self.inner);
        if let (Some(member), Some(addr)) = (&key.member, address) {
            b.aliases
                .insert((key.target.clone(), addr.to_string()), member.clone());
        }
        b.entries.entry(key.clone()).or_insert_with(|| Entry {
            knob: if integer { "concurrency" } else { "rate" },
            integer,
            offer: None,
            generation: 0,
            updated_at: SystemTime::now(),
            pulled: None,
            last_pull: None,
            clients: HashMap::new(),
            waiting: 0,
        });
    }

    /// Forgets a target and its members (it left the config).
    pub fn remove_target(&self, target: &str) {
        {
            let mut b = lock(&self.inner);
            b.entries.retain(|k, _| k.target != target);
            b.aliases.retain(|(t, _), _| t != target);
        }
        self.changed();
    }

    /// Publishes `value` as a new generation; returns the generation.
    pub fn publish(&self, key: &PullKey, integer: bool, value: f64) -> u64 {
        self.register(key, integer, None);
        let mut b = lock(&self.inner);
        let e = b.entries.get_mut(key).expect("registered above");
        e.offer = Some(if e.integer { value.round() } else { value });
        e.generation += 1;
        e.updated_at = SystemTime::now();
        let generation = e.generation;
        drop(b);
        self.changed();
        generation
    }

    /// Serves one pull of a target's offer (or of a member's, by name or
    /// address) to `client`, and records it as evidence.
    pub fn pull(
        &self,
        target: &str,
        member: Option<&str>,
        client: &str,
        now: Instant,
    ) -> Result<Served, PullError> {
        let mut b = lock(&self.inner);
        let key = b.key_of(target, member);
        let max_clients = b.max_clients;
        let Some(e) = b.entries.get_mut(&key) else {
            let is_group = b
                .entries
                .keys()
                .any(|k| k.target == target && k.member.is_some());
            return Err(match member {
                None if is_group => PullError::NeedMember(target.to_string()),
                None => PullError::UnknownTarget(target.to_string()),
                Some(m) if is_group => PullError::UnknownMember {
                    target: target.to_string(),
                    member: m.to_string(),
                },
                Some(_) => PullError::UnknownTarget(target.to_string()),
            });
        };
        e.last_pull = Some(now);
        let Some(offer) = e.offer else {
            return Err(PullError::NoOffer(target.to_string()));
        };
        if e.pulled.is_none_or(|(g, _)| g < e.generation) {
            e.pulled = Some((e.generation, offer));
        }
        if !e.clients.contains_key(client) && e.clients.len() >= max_clients {
            // Bounded: forget the puller seen longest ago.
            if let Some(oldest) = e
                .clients
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(k, _)| k.clone())
            {
                e.clients.remove(&oldest);
            }
        }
        e.clients.insert(client.to_string(), (e.generation, now));
        Ok(Served {
            offer,
            knob: e.knob,
            integer: e.integer,
            generation: e.generation,
            updated_at: e.updated_at,
            clients: e.clients.len(),
        })
    }

    /// The committed offer by pull evidence: the newest value at least one
    /// client has pulled. Fails when nobody has pulled for `stale_after`.
    pub fn committed(
        &self,
        key: &PullKey,
        stale_after: Duration,
        now: Instant,
    ) -> Result<f64, ControlError> {
        let b = lock(&self.inner);
        let Some(e) = b.entries.get(key) else {
            return Err(ControlError::NotPulled(
                "no offer has been published yet".into(),
            ));
        };
        match (e.last_pull, e.pulled) {
            (None, _) => Err(ControlError::NotPulled(
                "no client has pulled the offer yet".into(),
            )),
            // A pull waiting for the next publication is a puller
            // listening now, however long ago it asked.
            (Some(at), _) if e.waiting == 0 && now.saturating_duration_since(at) > stale_after => {
                Err(ControlError::NotPulled(format!(
                    "no client has pulled the offer for {:.1}s (stale_after {})",
                    now.saturating_duration_since(at).as_secs_f64(),
                    humantime::format_duration(stale_after)
                )))
            }
            (Some(_), Some((_, v))) => Ok(v),
            (Some(_), None) => Err(ControlError::NotPulled(
                "clients ask, but no offer has been published yet".into(),
            )),
        }
    }

    /// Which generation each remembered client pulled last (for the API
    /// and tests), sorted by client.
    pub fn clients(&self, key: &PullKey) -> Vec<(String, u64)> {
        let b = lock(&self.inner);
        let mut out: Vec<(String, u64)> = b
            .entries
            .get(key)
            .map(|e| {
                e.clients
                    .iter()
                    .map(|(c, (g, _))| (c.clone(), *g))
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }

    /// The published offer and its generation, if any.
    pub fn published(&self, key: &PullKey) -> Option<(f64, u64)> {
        let b = lock(&self.inner);
        b.entries
            .get(key)
            .and_then(|e| e.offer.map(|o| (o, e.generation)))
    }
}

fn constant_time_eq(presented: &str, expected: &str) -> bool {
    let (a, b) = (presented.as_bytes(), expected.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, &x) in b.iter().enumerate() {
        diff |= usize::from(x ^ a.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// The knob of one pulling target or group member: publishing on the
/// [`PullBoard`] is its write, pull evidence its read-back.
#[derive(Debug, Clone)]
pub struct PullKnob {
    board: PullBoard,
    key: PullKey,
    integer: bool,
    stale_after: Duration,
}

crate::knob_api!(PullKnob);

impl PullKnob {
    /// The knob of `key` on `board` (registered now, so that a pull before
    /// the first publication answers "no offer yet" rather than 404). A
    /// group member gives its `address` too, for `?instance=ADDR`.
    pub fn new(
        cfg: &PullControlConfig,
        integer: bool,
        board: &PullBoard,
        key: PullKey,
        address: Option<&str>,
    ) -> Self {
        board.register(&key, integer, address);
        PullKnob {
            board: board.clone(),
            key,
            integer,
            stale_after: cfg.stale_after,
        }
    }

    /// What this knob serves.
    pub fn key(&self) -> &PullKey {
        &self.key
    }

    /// Publishes `value` as a new generation (no confirmation: the
    /// Actuator confirms).
    pub async fn write(&self, value: f64) -> Result<(), ControlError> {
        self.board.publish(&self.key, self.integer, value);
        Ok(())
    }

    /// The newest value at least one client has pulled; an error when
    /// nobody has pulled for `stale_after` (so a new offer is unconfirmed,
    /// and the engine counts the window as one without a valid signal).
    pub async fn committed(&self) -> Result<f64, ControlError> {
        self.board
            .committed(&self.key, self.stale_after, Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: &str) -> PullKey {
        PullKey {
            target: t.into(),
            member: None,
        }
    }

    #[test]
    fn a_pull_of_the_new_generation_confirms_it() {
        let b = PullBoard::default();
        let k = key("t");
        let t0 = Instant::now();
        let stale = Duration::from_secs(5);
        b.register(&k, true, None);
        assert!(matches!(
            b.pull("t", None, "a", t0),
            Err(PullError::NoOffer(_))
        ));
        b.publish(&k, true, 4.4);
        // Asked, but nothing was served yet: no evidence of a value.
        assert_eq!(
            b.committed(&k, stale, t0).unwrap_err().error_type(),
            "not_pulled"
        );
        let s = b.pull("t", None, "a", t0).unwrap();
        assert_eq!((s.offer, s.generation, s.knob), (4.0, 1, "concurrency"));
        assert_eq!(b.committed(&k, stale, t0).unwrap(), 4.0);
        // A new generation is not committed until someone pulls it.
        b.publish(&k, true, 9.0);
        assert_eq!(b.committed(&k, stale, t0).unwrap(), 4.0);
        b.pull("t", None, "b", t0).unwrap();
        assert_eq!(b.committed(&k, stale, t0).unwrap(), 9.0);
        assert_eq!(b.clients(&k), vec![("a".into(), 1), ("b".into(), 2)]);
    }

    #[test]
    fn no_pull_for_stale_after_is_an_error() {
        let b = PullBoard::default();
        let k = key("t");
        let t0 = Instant::now();
        let stale = Duration::from_secs(5);
        b.publish(&k, false, 2.5);
        let e = b.committed(&k, stale, t0).unwrap_err();
        assert_eq!(e.error_type(), "not_pulled");
        b.pull("t", None, "", t0).unwrap();
        assert_eq!(b.committed(&k, stale, t0).unwrap(), 2.5);
        let later = t0 + Duration::from_secs(6);
        let e = b.committed(&k, stale, later).unwrap_err();
        assert!(e.to_string().contains("for 6.0s"), "{e}");
    }

    #[test]
    fn unknown_targets_groups_and_members_are_told_apart() {
        let b = PullBoard::default();
        let m = PullKey {
            target: "g".into(),
            member: Some("m1".into()),
        };
        b.register(&m, true, Some("127.0.0.1:6565"));
        b.publish(&m, true, 3.0);
        let t0 = Instant::now();
        assert!(matches!(
            b.pull("x", None, "", t0),
            Err(PullError::UnknownTarget(_))
        ));
        assert!(matches!(
            b.pull("g", None, "", t0),
            Err(PullError::NeedMember(_))
        ));
        assert!(matches!(
            b.pull("g", Some("m2"), "", t0),
            Err(PullError::UnknownMember { .. })
        ));
        assert_eq!(b.pull("g", Some("m1"), "", t0).unwrap().offer, 3.0);
        assert_eq!(
            b.pull("g", Some("127.0.0.1:6565"), "", t0).unwrap().offer,
            3.0
        );
        b.remove_target("g");
        assert!(matches!(
            b.pull("g", Some("m1"), "", t0),
            Err(PullError::UnknownTarget(_))
        ));
    }

    #[test]
    fn client_bookkeeping_is_bounded() {
        let b = PullBoard::default();
        b.configure(None, 3);
        let k = key("t");
        b.publish(&k, true, 1.0);
        let t0 = Instant::now();
        for i in 0..10u64 {
            let s = b
                .pull("t", None, &format!("c{i}"), t0 + Duration::from_millis(i))
                .unwrap();
            assert!(s.clients <= 3);
        }
        let kept: Vec<String> = b.clients(&k).into_iter().map(|(c, _)| c).collect();
        assert_eq!(kept, vec!["c7", "c8", "c9"], "the most recent are kept");
    }

    #[test]
    fn the_token_is_checked_when_set() {
        let b = PullBoard::default();
        assert!(b.authorized(None));
        b.configure(Some(Secret::new("s3cret")), 10);
        assert!(!b.authorized(None));
        assert!(!b.authorized(Some("s3cre")));
        assert!(!b.authorized(Some("s3cret!")));
        assert!(b.authorized(Some("s3cret")));
    }

    #[tokio::test]
    async fn the_knob_publishes_and_pulls_confirm() {
        use crate::control::KnobApi;
        let cfg: PullControlConfig = toml::from_str("").unwrap();
        let board = PullBoard::default();
        let k = PullKnob::new(&cfg, true, &board, key("t"), None);
        // Registered before the first publication: asked, not unknown.
        assert!(matches!(
            board.pull("t", None, "vu-1", Instant::now()),
            Err(PullError::NoOffer(_))
        ));
        let api: &dyn KnobApi = &k;
        api.write(7.0).await.unwrap();
        assert_eq!(board.published(&key("t")), Some((7.0, 1)));
        // The pull above was before any offer: no evidence of a value.
        assert_eq!(
            api.committed().await.unwrap_err().error_type(),
            "not_pulled"
        );
        board.pull("t", None, "vu-1", Instant::now()).unwrap();
        assert_eq!(api.committed().await.unwrap(), 7.0);
    }
}
