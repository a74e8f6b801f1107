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
//! What it may touch: that one file and its temporary sibling.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use thiserror::Error;

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
}

impl StateStore {
    /// Loads the file (a missing file is an empty state).
    pub fn open(path: &Path) -> Result<StateStore, StateError> {
        let targets = match std::fs::read_to_string(path) {
            Ok(text) => {
                let doc: StateDoc =
                    serde_json::from_str(&text).map_err(|e| StateError::Format {
                        path: path.display().to_string(),
                        reason: e.to_string(),
                    })?;
                doc.targets
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
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
        })
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
            version: 1,
            targets: lock(&self.targets).clone(),
        };
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let tmp = self.path.with_extension("tmp");
        let io = |source| StateError::Io {
            path: self.path.display().to_string(),
            source,
        };
        let result = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &self.path));
        if let Err(e) = result {
            self.dirty.store(true, Ordering::Release);
            return Err(io(e));
        }
        Ok(())
    }
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
            !dir.join("state.tmp").exists(),
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
        std::fs::write(&path, "garbage").unwrap();
        let e = StateStore::open(&path).unwrap_err().to_string();
        assert!(e.contains("not valid JSON state"), "{e}");
    }
}
