//! PromQL selectors: parse, and the canonical form round-trips.
//!
//! Why it exists: selectors come from config files and are matched against
//! every scraped sample; a panic or a canonical form that reads differently
//! would govern on the wrong series.
#![no_main]

use libfuzzer_sys::fuzz_target;
use throttle_governor::promtext::selector::Selector;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match text.parse::<Selector>() {
        Ok(sel) => {
            let canonical = sel.to_string();
            let again: Selector = canonical
                .parse()
                .unwrap_or_else(|e| panic!("canonical form {canonical:?} does not parse: {e}"));
            assert_eq!(again, sel, "round trip via {canonical:?}");
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
