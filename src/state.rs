//! The state file: congestion memory that survives a controller restart.
//!
//! Why it exists: `last_bad` is what the governor learned the hard way, by
//! overloading the target once. A restarted controller that forgot it would
//! slow-start by doubling straight back into the same wall. With
//! `[server] state_file` set, each target's `last_bad` and clean streak are
//! kept in a small JSON file, written atomically (a temporary file in the
//! same directory, then a rename) at most once a second, and restored at
//! start-up.
//!
//! What it may touch: that one file and its temporary sibling, whose name
//! ([`temp_path`]) is always longer than the file's own, so the two can
//! never be the same file: a failed write (a full disk) leaves the last good
//! state in place. Failed writes are counted
//! (`throttle_state_write_errors_total`) and logged at most once a minute.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use tracing::warn;

/// What is kept per target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// The offer at which congestion was last seen.
    pub last_bad: Option<f64>,
    /// Clean windows at or above it.
    pub clean_streak: u32,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StateDoc {
    version: u32,
    targets: BTreeMap<String, Memory>,
}

/// A state file problem.
#[derive(Debug, Error)]
pub enum StateError {
    /// Reading or writing failed.
    #[error("state file {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not ours.
    #[error("state file {path} is not valid JSON state ({reason}); move it away or fix it")]
    Format {
        /// The path.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// The shared store behind the state file.
#[derive(Debug)]
pub struct StateStore {
    path: PathBuf,
    targets: Mutex<BTreeMap<String, Memory>>,
    dirty: AtomicBool,
    /// `throttle_state_write_errors_total`, once attached.
    errors: OnceLock<Counter>,
    /// When a write failure was last logged, and how many since.
    last_logged: Mutex<Option<Instant>>,
    unlogged: AtomicU64,
}

/// The largest state file read: a few hundred bytes per target, so 10,000
/// targets fit many times over. A larger file is refused unread (issue 27: a
/// 300 MB file took 315 MB of memory).
pub const MAX_STATE_BYTES: u64 = 16 * 1024 * 1024;

/// The `version` this controller writes and reads.
pub const STATE_VERSION: u32 = 1;

/// Reads `path` whole if it is at most [`MAX_STATE_BYTES`], checked before
/// reading and again while reading (a file that grows).
fn read_limited(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let too_large = || std::io::Error::from(std::io::ErrorKind::FileTooLarge);
    if file.metadata()?.len() > MAX_STATE_BYTES {
        return Err(too_large());
    }
    let mut text = String::new();
    file.take(MAX_STATE_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_STATE_BYTES {
        return Err(too_large());
    }
    Ok(text)
}

/// Write failures are logged at most this often (each is counted).
pub const ERROR_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// The temporary file a write goes through: `.<name>.tmp` beside the state
/// file. Strictly longer than the file's own name, so never the same path.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "state".into());
    path.with_file_name(format!(".{name}.tmp"))
}

pub use crate::config::state_file_problem as problem;

impl StateStore {
    /// Loads the file (a missing file is an empty state). Refused, so that
    /// it is never overwritten: a file over [`MAX_STATE_BYTES`] (checked
    /// before reading it), one that is not our JSON, and one written by a
    /// newer controller (`version` above [`STATE_VERSION`]). An entry whose
    /// `last_bad` cannot be an offer (negative, zero, not finite) is dropped
    /// with one warning.
    pub fn open(path: &Path) -> Result<StateStore, StateError> {
        let format = |reason: String| StateError::Format {
            path: path.display().to_string(),
            reason,
        };
        let targets = match read_limited(path) {
            Ok(text) => {
                let doc: StateDoc =
                    serde_json::from_str(&text).map_err(|e| format(e.to_string()))?;
                if doc.version > STATE_VERSION {
                    return Err(format(format!(
                        "version {} was written by a newer controller (this one writes version \
                         {STATE_VERSION}); it is not overwritten",
                        doc.version
                    )));
                }
                let mut targets = doc.targets;
                targets.retain(|name, m| {
                    let valid = m.last_bad.is_none_or(|b| b.is_finite() && b > 0.0);
                    if !valid {
                        warn!(
                            target = %name,
                            last_bad = ?m.last_bad,
                            "{name}: the state file's last_bad {:?} cannot be an offer; that memory is discarded",
                            m.last_bad
                        );
                    }
                    valid
                });
                targets
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                return Err(format(format!("larger than {MAX_STATE_BYTES} bytes")))
            }
            Err(source) => {
                return Err(StateError::Io {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        Ok(StateStore {
            path: path.to_path_buf(),
            targets: Mutex::new(targets),
            dirty: AtomicBool::new(false),
            errors: OnceLock::new(),
            last_logged: Mutex::new(None),
            unlogged: AtomicU64::new(0),
        })
    }

    /// Counts write failures in `counter` (`throttle_state_write_errors_total`).
    pub fn count_errors_in(&self, counter: Counter) {
        let _ = self.errors.set(counter);
    }

    /// [`Self::flush`] for the periodic writer: a failure is counted, and
    /// logged at most once per [`ERROR_LOG_INTERVAL`] with the number of
    /// failures since the last line. Returns whether the write succeeded.
    pub fn flush_reporting(&self) -> bool {
        let Err(e) = self.flush() else {
            return true;
        };
        if let Some(c) = self.errors.get() {
            c.inc();
        }
        let mut last = lock(&self.last_logged);
        let now = Instant::now();
        if last.is_none_or(|t| now.duration_since(t) >= ERROR_LOG_INTERVAL) {
            *last = Some(now);
            let suppressed = self.unlogged.swap(0, Ordering::Relaxed);
            warn!(
                error = %e,
                suppressed,
                "Cannot write the state file; the last good state is kept and writes are retried every second (logged at most once a minute, {suppressed} failures since the last line)"
            );
        } else {
            self.unlogged.fetch_add(1, Ordering::Relaxed);
        }
        false
    }

    /// The remembered memory of a target.
    pub fn get(&self, target: &str) -> Option<Memory> {
        lock(&self.targets).get(target).copied()
    }

    /// Records a target's memory; written by the next [`Self::flush`].
    pub fn set(&self, target: &str, memory: Memory) {
        let mut t = lock(&self.targets);
        if t.get(target) != Some(&memory) {
            t.insert(target.to_string(), memory);
            self.dirty.store(true, Ordering::Release);
        }
    }

    /// Writes the file atomically if anything changed.
    pub fn flush(&self) -> Result<(), StateError> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let doc = StateDoc {
            version: STATE_VERSION,
            targets: lock(&self.targets).clone(),
        };
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let tmp = temp_path(&self.path);
        let io = |source| StateError::Io {
            path: self.path.display().to_string(),
            source,
        };
        let result =
            write_new(&tmp, text.as_bytes()).and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = result {
            // A partial temporary file is no use to anyone. `remove_file`
            // removes a link itself, never what it points at.
            let _ = std::fs::remove_file(&tmp);
            self.dirty.store(true, Ordering::Release);
            return Err(io(e));
        }
        Ok(())
    }
}

/// Writes `bytes` to a file at `tmp` that this call creates itself, never
/// through a symlink or into a file someone else prepared: a stale `tmp`
/// (a crashed write, or a link planted by anyone who can write to the
/// directory) is removed without following it, and the new file is opened
/// with `O_CREAT | O_EXCL` (`create_new`), which refuses to follow a link
/// at the last path component; on Unix also `O_NOFOLLOW`. If the name is
/// taken again between the removal and the open, the write fails (counted
/// and retried by the caller) rather than write anywhere else.
fn write_new(tmp: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    match std::fs::symlink_metadata(tmp) {
        Ok(_) => std::fs::remove_file(tmp)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let mut file = options.open(tmp)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_atomically() {
        let dir = std::env::temp_dir().join(format!("tg-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.json");
        let _ = std::fs::remove_file(&path);
        let s = StateStore::open(&path).unwrap();
        assert_eq!(s.get("a"), None);
        s.set(
            "a",
            Memory {
                last_bad: Some(48.0),
                clean_streak: 2,
            },
        );
        s.flush().unwrap();
        assert!(
            !dir.join(".state.json.tmp").exists(),
            "temporary file left behind"
        );
        let again = StateStore::open(&path).unwrap();
        assert_eq!(
            again.get("a"),
            Some(Memory {
                last_bad: Some(48.0),
                clean_streak: 2
            })
        );
        // A file named like a temporary file is still written through
        // another path.
        let odd = dir.join("state.tmp");
        assert_ne!(temp_path(&odd), odd);
        assert_ne!(temp_path(&temp_path(&odd)), temp_path(&odd));
        assert!(problem(&dir).is_some_and(|p| p.contains("is a directory")));
        assert!(problem(&dir.join("no/such/state.json")).is_some());
        assert_eq!(problem(&path), None);
        std::fs::write(&path, "garbage").unwrap();
        let e = StateStore::open(&path).unwrap_err().to_string();
        assert!(e.contains("not valid JSON state"), "{e}");
        std::fs::remove_file(&path).unwrap();
    }

    /// Issue 27 #1: a `.state.json.tmp` planted as a symlink to another file
    /// in the state directory is neither written through nor left as the
    /// state file. Fails on the old `std::fs::write(tmp)` + rename, which
    /// overwrote the victim and renamed the link over `state.json`.
    #[cfg(unix)]
    #[test]
    fn a_planted_temporary_symlink_is_never_written_through() {
        let dir = std::env::temp_dir().join(format!("tg-state-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.json");
        let victim = dir.join("victim.conf");
        std::fs::write(&victim, "precious\n").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(".state.json.tmp")).unwrap();
        let s = StateStore::open(&path).unwrap();
        s.set(
            "a",
            Memory {
                last_bad: Some(7.0),
                clean_streak: 0,
            },
        );
        s.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(
            meta.file_type().is_file(),
            "state.json is not a regular file"
        );
        assert!(!dir.join(".state.json.tmp").exists());
        assert_eq!(
            StateStore::open(&path).unwrap().get("a").unwrap().last_bad,
            Some(7.0)
        );
        // A stale regular temporary file (a crashed write) is replaced too.
        std::fs::write(dir.join(".state.json.tmp"), "stale").unwrap();
        s.set(
            "a",
            Memory {
                last_bad: Some(9.0),
                clean_streak: 1,
            },
        );
        s.flush().unwrap();
        assert_eq!(
            StateStore::open(&path).unwrap().get("a").unwrap().last_bad,
            Some(9.0)
        );
        // A state.json that is itself a link is replaced, not written through.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        s.set(
            "a",
            Memory {
                last_bad: Some(11.0),
                clean_streak: 0,
            },
        );
        s.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_file());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue 27 #8: a newer version is refused (not overwritten), a file
    /// over the limit is refused unread, and a last_bad that cannot be an
    /// offer is dropped at load.
    #[test]
    fn newer_oversized_and_invalid_state_is_refused_or_dropped() {
        let dir = std::env::temp_dir().join(format!("tg-state-v-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.json");
        std::fs::write(&path, r#"{"version": 2, "targets": {}}"#).unwrap();
        let e = StateStore::open(&path).unwrap_err().to_string();
        assert!(e.contains("newer controller"), "{e}");
        let big = std::fs::File::create(&path).unwrap();
        big.set_len(MAX_STATE_BYTES + 1).unwrap();
        let e = StateStore::open(&path).unwrap_err().to_string();
        assert!(e.contains("larger than"), "{e}");
        std::fs::write(
            &path,
            r#"{"version": 1, "targets": {"a": {"last_bad": -5.0, "clean_streak": 0},
                "b": {"last_bad": 8.0, "clean_streak": 1}}}"#,
        )
        .unwrap();
        let s = StateStore::open(&path).unwrap();
        assert_eq!(s.get("a"), None);
        assert_eq!(s.get("b").unwrap().last_bad, Some(8.0));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
