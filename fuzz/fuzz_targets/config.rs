//! The config loader: TOML, typed fields and validation.
//!
//! Why it exists: `check` and `run` must answer any file with a config or a
//! list of problems, never a panic; an accepted config always has targets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use throttle_governor::config::Config;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Config::parse(text) {
        Ok(c) => assert!(!c.targets.is_empty()),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
