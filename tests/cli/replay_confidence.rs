//! `throttle-governor replay` shows each verdict's confidence (issue 30,
//! item 4): the built binary on a file of counts whose every offer fails
//! 2 % of attempts (a background), then a breach.
//!
//! Why here: the `confidence` object and the table's column are the
//! user-visible contract of the verdicts; the rows' unit tests check the
//! format, these check that the default profile's real verdicts reach it.

use serde_json::{json, Value};

use super::replay::{replay_as_given, temp_file};

/// Eight windows of 20 failures in 1,000 attempts (2 %: in the dead band
/// without a background, clean with one), then 200 in 1,000.
fn background_then_breach() -> String {
    let mut input = "{\"attempts\": 1000, \"failures\": 20}\n".repeat(8);
    input.push_str("{\"attempts\": 1000, \"failures\": 200}\n");
    input
}

#[test]
fn replay_gives_each_verdict_its_confidence_and_the_background() {
    let path = temp_file("confidence", &background_then_breach());
    let rows = replay_as_given(&["--ceiling", "1000", path.to_str().unwrap()], "").rows();
    assert_eq!(rows.len(), 9, "{rows:?}");
    let confidence = |i: usize| rows[i]["confidence"].clone();
    // The first window has no low offer behind it: no background, so 2 %
    // is above `low` (1 %) and below `high`.
    assert_eq!(confidence(0)["verdict"], "dead-band", "{rows:?}");
    assert_eq!(confidence(0)["attempts"], json!(1000), "{rows:?}");
    assert_eq!(confidence(0)["failures"], json!(20), "{rows:?}");
    assert_eq!(confidence(0)["clean_below"], json!(0.01), "{rows:?}");
    assert!(confidence(0).get("background").is_none(), "{rows:?}");
    // Climbing from it leaves its 1,000 attempts as the background: 2 %
    // is now explained, and clean below 2 % + 1 %.
    assert_eq!(rows[1]["decision"], "up", "{rows:?}");
    assert_eq!(confidence(1)["verdict"], "clean", "{rows:?}");
    assert_eq!(confidence(1)["clean_below"], json!(0.03), "{rows:?}");
    assert_eq!(
        confidence(1)["background"],
        json!({"rate": 0.02, "attempts": 1000, "failures": 20}),
        "{rows:?}"
    );
    let breach = confidence(8);
    assert_eq!(rows[8]["decision"], "down", "{rows:?}");
    assert_eq!(breach["verdict"], "breach", "{rows:?}");
    assert_eq!(
        (&breach["attempts"], &breach["failures"]),
        (&json!(1000), &json!(200))
    );
    let (lower, upper) = (
        breach["lower"].as_f64().unwrap(),
        breach["upper"].as_f64().unwrap(),
    );
    assert!(
        0.17 < lower && lower < 0.2 && 0.2 < upper && upper < 0.23,
        "{breach}"
    );
    assert_eq!(breach["high"], json!(0.05));
    assert_eq!(
        breach["background"],
        json!({"rate": 0.02, "attempts": 2000, "failures": 40}),
        "{rows:?}"
    );
}

#[test]
fn the_table_shows_the_confidence_and_the_seed_rules_have_none() {
    let input = background_then_breach();
    let table = replay_as_given(&["--ceiling", "1000", "--format", "table"], &input);
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert!(
        lines[0].ends_with("memory_cleared  confidence"),
        "{}",
        table.stdout
    );
    assert!(
        lines[2].ends_with("clean 20/1000 [1.3%, 3.07%] bg 2%"),
        "{}",
        table.stdout
    );
    assert!(
        lines[9].ends_with("breach 200/1000 [17.64%, 22.59%] bg 2%"),
        "{}",
        table.stdout
    );
    let seed = replay_as_given(&["--ceiling", "1000", "--profile", "seed"], &input).rows();
    assert!(
        seed.iter().all(|r: &Value| r.get("confidence").is_none()),
        "{seed:?}"
    );
}
