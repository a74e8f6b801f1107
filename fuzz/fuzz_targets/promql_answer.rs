//! The JSON answer of a Prometheus `/api/v1/query`.
//!
//! Why it exists: a `kind = "promql"` signal reads this from a server the
//! governor does not control; any body must give an answer or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use throttle_governor::signal::promql::parse_answer;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_answer(text) {
        Ok(answer) => {
            // The sum over the result is defined whenever there is one.
            if !answer.values.is_empty() {
                let _ = answer
                    .require("fuzz")
                    .expect("a non-empty answer has a sum");
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
