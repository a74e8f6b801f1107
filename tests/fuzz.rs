//! Fuzzing the three parsers that read untrusted text: PromQL selectors,
//! the exposition format (parse and the one-pass selector sums), and the
//! config loader.
//!
//! cargo-fuzz needs a nightly toolchain, which cannot be installed here, so
//! this is a seeded mutation fuzzer: it starts from a corpus of valid inputs
//! and applies random byte flips, token insertions, truncations, splices and
//! duplications. Each target must never panic and must keep its contract
//! (an accepted exposition has exactly one sample per sample line; an error
//! always has a message). `FUZZ_ITERS` sets the executions per target
//! (default 20,000: a smoke run in CI); docs/RELIABILITY.md records a long
//! run. `FUZZ_SEED` picks the seed (default 1) so any failure reproduces.

use throttle_governor::config::Config;
use throttle_governor::signal::exposition::{self, Limits};
use throttle_governor::signal::selector::{sum_many, Selector};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // SplitMix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&str] = &[
    "{",
    "}",
    "\"",
    "\\",
    "\\\"",
    "\\n",
    "=",
    "!=",
    "=~",
    "!~",
    ",",
    " ",
    "\n",
    "\r\n",
    "#",
    "# TYPE ",
    "# HELP ",
    "# EOF",
    "NaN",
    "+Inf",
    "-Inf",
    "1e308",
    "-0",
    "0x1",
    "{__name__=\"a\"}",
    "é",
    "\u{0}",
    "[[targets]]",
    "[targets.signal]",
    "kind = \"prometheus\"",
    "window = \"",
    "\"2s\"",
    "'",
    ".*",
    "(",
    ")",
    "|",
    "_total",
    "le=\"+Inf\"",
    "  ",
    "\t",
    "\u{feff}",
];

fn mutate(rng: &mut Rng, corpus: &[&str]) -> String {
    let mut s: Vec<u8> = corpus[rng.below(corpus.len())].as_bytes().to_vec();
    for _ in 0..=rng.below(4) {
        match rng.below(6) {
            0 if !s.is_empty() => {
                let i = rng.below(s.len());
                s[i] ^= 1 << rng.below(8);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                let i = rng.below(s.len() + 1);
                s.splice(i..i, t.iter().copied());
            }
            2 if !s.is_empty() => {
                let i = rng.below(s.len());
                s.truncate(i);
            }
            3 => {
                let other = corpus[rng.below(corpus.len())].as_bytes();
                let i = rng.below(s.len() + 1);
                let j = rng.below(other.len() + 1);
                s.truncate(i);
                s.extend_from_slice(&other[j..]);
            }
            4 if !s.is_empty() => {
                let i = rng.below(s.len());
                let j = (i + rng.below(16)).min(s.len());
                let chunk = s[i..j].to_vec();
                s.splice(j..j, chunk);
            }
            _ if !s.is_empty() => {
                let i = rng.below(s.len());
                s.remove(i);
            }
            _ => {}
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

fn iters() -> usize {
    std::env::var("FUZZ_ITERS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(20_000)
}

fn seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

#[test]
fn fuzz_selector() {
    let corpus = [
        "a",
        "a{b=\"c\"}",
        "a{b!=\"c\",d=~\"e.*\",f!~'g|h'}",
        "{__name__=\"x\", y=\"z\"}",
        "myload_requests_total{outcome=\"error\",route=\"/users/{id}\"}",
        "a{ b = \"c\" , }",
        "a{b=\"\\\"q\\\" \\\\ \\n\"}",
    ];
    let mut rng = Rng(seed());
    for _ in 0..iters() {
        let input = mutate(&mut rng, &corpus);
        match input.parse::<Selector>() {
            Ok(sel) => {
                // Canonical form round-trips.
                let again: Selector = sel.to_string().parse().unwrap_or_else(|e| {
                    panic!("canonical form of {input:?} ({sel}) does not parse: {e}")
                });
                assert_eq!(again, sel, "round trip of {input:?}");
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

#[test]
fn fuzz_exposition() {
    let corpus = [
        "# HELP a A counter.\n# TYPE a counter\na_total{op=\"read\",result=\"failure\",route=\"/users/{id}\"} 10\na_total{op=\"write\"} 3 1700000000000\n",
        "a{ op = \"read\" } 10\nb 1e3\nc NaN\nd +Inf\n",
        "a{route=\"/x?ids=1,2\",q=\"a=b\",msg=\"say \\\"hi\\\"\\n\"} 10\r\n",
        "# TYPE f counter\nf_total 1.0 # {trace_id=\"x\"} 1.0\nf_created 1.7e9\n# EOF\n",
        "{\"my.metric\", a=\"b\"} 1\n",
    ];
    let sel_a: Selector = "a_total{result=\"failure\"}".parse().unwrap();
    let sel_any: Selector = "{__name__=~\".+\"}".parse().unwrap();
    let limits = Limits {
        max_samples: 10_000,
    };
    let mut rng = Rng(seed() ^ 0xE);
    for _ in 0..iters() {
        let input = mutate(&mut rng, &corpus);
        let parsed = exposition::parse(&input, &limits);
        let sums = sum_many(&input, &[&sel_a, &sel_any], &limits);
        match (&parsed, &sums) {
            (Ok(samples), Ok(s)) => {
                // Every sample is counted by the match-all selector.
                let total: f64 = samples.iter().map(|x| x.value).sum();
                match s[1] {
                    Some(v) => assert!(
                        v == total
                            || (v.is_nan() && total.is_nan())
                            || (v - total).abs() <= 1e-9 * total.abs().max(1.0),
                        "sum {v} != {total} for {input:?}"
                    ),
                    None => assert!(samples.is_empty()),
                }
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.error_type(), b.error_type(), "{input:?}");
                assert!(!a.to_string().is_empty());
            }
            _ => panic!("parse and sum_many disagree on {input:?}: {parsed:?} vs {sums:?}"),
        }
    }
}

#[test]
fn fuzz_config() {
    let example = include_str!("../config/example.toml");
    let corpus = [
        example,
        "[[targets]]\nname = \"a\"\nknob = \"rate\"\nfloor = 1\nhigh = 0.05\n[targets.signal]\nkind = \"prometheus\"\nurl = \"http://127.0.0.1:1/m\"\nattempts = 'a'\nfailures = 'b'\noffer = 'c'\n[targets.control]\nkind = \"http\"\nurl = \"http://127.0.0.1:1/w\"\n",
        "[server]\nlisten = \"127.0.0.1:0\"\n",
    ];
    let mut rng = Rng(seed() ^ 0xC);
    // Config parsing is slower (TOML + validation): a tenth of the iterations.
    for _ in 0..iters().div_ceil(10) {
        let input = mutate(&mut rng, &corpus);
        match Config::parse(&input) {
            Ok(c) => assert!(!c.targets.is_empty()),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}
