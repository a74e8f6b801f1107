//! A seeded mutation fuzzer of the config loader, kept beside the
//! coverage-guided targets in `fuzz/` (cargo-fuzz, `scripts/fuzz`).
//!
//! Why it is kept, and only for the config: the libFuzzer targets cover the
//! exposition parser and the selectors with stronger properties (a Display
//! round trip, the canonical form) at ~19k executions a second, so a
//! 20,000-execution mutation smoke adds nothing there. The config loader is
//! different: it changes with every new field and check, libFuzzer runs it
//! slowest (TOML, then validation), and this fuzzer splices whole config
//! files with tokens that make structurally plausible TOML (`[[targets]]`,
//! `kind = "prometheus"`, `window = "`), on every plain `cargo test`, on any
//! toolchain, without cargo-fuzz or a C++ compiler. Each input must give a
//! config or a list of problems, never a panic. `FUZZ_ITERS` sets the
//! executions (default 20,000; a tenth of them here), `FUZZ_SEED` the seed
//! (default 1) so any failure reproduces.

use throttle_governor::config::Config;

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
fn fuzz_config() {
    let example = include_str!("../../config/example.toml");
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
