//! `run` without a file: the flags that describe one target
//! (`--locust URL`, `--k6 URL`, `--goose URL`, `--pull NAME`, and the few
//! keys people change) and the TOML text they stand for.
//!
//! Why it exists: a first run should be one command, yet the flags must
//! never mean something a file could not say. So the flags are not a
//! second config path: [`TargetFlags::to_toml`] writes the config text they
//! stand for, and `run` and `check` read that text through the same
//! [`crate::config::Config::parse`] as a file. `run --print-config` prints
//! it, so the printed file and the flags can never disagree.
//!
//! What it may touch: clap and string formatting; the checks are the
//! config's.

use thiserror::Error;

use crate::governor::Control;

/// The defaults the flags fill in. They are the tools' own (Locust's web UI
/// on 8089, k6's REST API on 6565, Goose's controller on 5117 are what the
/// user passes as the URL) and the config's documented defaults.
const DEFAULT_FLOOR: f64 = 1.0;
const DEFAULT_HIGH: f64 = 0.05;
/// Locust's stats are cached for 2 s: a window must be longer.
const LOCUST_WINDOW: &str = "3s";
/// Pull clients ask about once a second: three asks per window.
const PULL_WINDOW: &str = "3s";
const TOOL_WINDOW: &str = "2s";
/// The shipped gates' counters (Artillery's processor, JMeter's jar).
const GATE_ATTEMPTS: &str = "throttle_gate_attempts_total";
const GATE_FAILURES: &str = "throttle_gate_failures_total";

/// Why the flags do not describe a target.
#[derive(Debug, Error, PartialEq)]
pub enum FlagsError {
    /// No tool flag and no `--config`.
    #[error(
        "nothing to govern: give a config file (--config PATH) or one tool: \
         --locust URL, --k6 URL, --goose URL, or --pull NAME --scrape URL"
    )]
    NoTarget,
    /// A flag the tool needs is missing, or one it cannot use is given.
    #[error("{flag}: {reason}")]
    Flag {
        /// The flag, spelled as typed (`--ceiling`).
        flag: &'static str,
        /// What to do.
        reason: String,
    },
}

/// `run`'s flags for one target without a file (each conflicts with
/// `--config`).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
#[group(id = "target_flags", multiple = true)]
pub struct TargetFlags {
    /// Govern a Locust 2.x test through its web UI (not --headless), e.g.
    /// http://127.0.0.1:8089: its users are the knob.
    #[arg(long, value_name = "URL", conflicts_with_all = ["k6", "goose", "pull"])]
    pub locust: Option<String>,
    /// Govern a k6 1.x test through its REST API (`k6 run --address`), e.g.
    /// http://127.0.0.1:6565: its VUs are the knob.
    #[arg(long, value_name = "URL", conflicts_with_all = ["goose", "pull"])]
    pub k6: Option<String>,
    /// Govern a Goose test through its WebSocket controller, e.g.
    /// ws://127.0.0.1:5117: its users are the knob.
    #[arg(long, value_name = "URL", conflicts_with = "pull")]
    pub goose: Option<String>,
    /// Serve the offer of the target NAME for the tool to pull
    /// (GET /api/v1/targets/NAME/offer); its counters come from --scrape.
    #[arg(long, value_name = "NAME", requires = "scrape")]
    pub pull: Option<String>,
    /// With --pull: the Prometheus text endpoint of the tool's counters
    /// (the shipped gates serve it, e.g. http://127.0.0.1:9465/metrics).
    #[arg(long, value_name = "URL", requires = "pull")]
    pub scrape: Option<String>,
    /// With --pull: the selector of every resolved attempt (default: the
    /// shipped gates' throttle_gate_attempts_total).
    #[arg(long, value_name = "SELECTOR", requires = "pull")]
    pub attempts: Option<String>,
    /// With --pull: the selector of failed attempts (default: the shipped
    /// gates' throttle_gate_failures_total).
    #[arg(long, value_name = "SELECTOR", requires = "pull")]
    pub failures: Option<String>,
    /// With --pull: what the offer counts (Locust, k6 and Goose are
    /// governed by their user or VU count, a concurrency).
    #[arg(long, value_enum, value_name = "KNOB", requires = "pull")]
    pub knob: Option<Control>,
    /// The target's name (default: the tool's: locust, k6, goose).
    #[arg(long, value_name = "NAME", conflicts_with = "pull")]
    pub name: Option<String>,
    /// The most the governor offers: users, VUs, or requests per second.
    /// Required for a concurrency: no tool reports its own.
    #[arg(long, value_name = "N")]
    pub ceiling: Option<f64>,
    /// The least the governor offers (default 1).
    #[arg(long, value_name = "N")]
    pub floor: Option<f64>,
    /// Back off when a window's attempt-failure fraction exceeds this
    /// (default 0.05).
    #[arg(long, value_name = "FRACTION")]
    pub high: Option<f64>,
    /// The window, with a unit (default 3s for Locust and pull, 2s for k6
    /// and Goose).
    #[arg(long, value_name = "DURATION")]
    pub window: Option<String>,
    /// A latency bound beside the failure bound, QUANTILE:BOUND, e.g.
    /// 0.99:250ms ([targets.latency] quantile and bound), read from
    /// Locust's or Goose's own percentiles.
    #[arg(long, value_name = "QUANTILE:BOUND", value_parser = parse_latency)]
    pub latency: Option<LatencyFlag>,
    /// The controller's listen address (`[server] listen`; default
    /// 127.0.0.1:9464). A pull target's tool asks here.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Print the config these flags stand for (TOML, for --config) and exit.
    #[arg(long)]
    pub print_config: bool,
}

/// `--latency QUANTILE:BOUND`: `[targets.latency]` `quantile` and `bound`.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyFlag {
    /// In (0, 1): 0.99 for p99.
    pub quantile: f64,
    /// A duration with a unit, as typed (the config reads it).
    pub bound: String,
}

fn parse_latency(s: &str) -> Result<LatencyFlag, String> {
    let bad =
        || format!("--latency is QUANTILE:BOUND, e.g. 0.99:250ms for p99 under 250 ms (got `{s}`)");
    let (q, bound) = s.split_once(':').ok_or_else(bad)?;
    let quantile = q.trim().parse::<f64>().map_err(|_| bad())?;
    if bound.trim().is_empty() {
        return Err(bad());
    }
    Ok(LatencyFlag {
        quantile,
        bound: bound.trim().to_string(),
    })
}

/// Which tool the flags name.
enum Tool<'a> {
    Locust(&'a str),
    K6(&'a str),
    Goose(&'a str),
    Pull { name: &'a str, scrape: &'a str },
}

/// A TOML string literal (quoted and escaped).
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

impl TargetFlags {
    /// Whether any flag names a tool (else `run` needs `--config`).
    pub fn names_a_tool(&self) -> bool {
        self.locust.is_some() || self.k6.is_some() || self.goose.is_some() || self.pull.is_some()
    }

    fn tool(&self) -> Result<Tool<'_>, FlagsError> {
        if let Some(url) = &self.locust {
            return Ok(Tool::Locust(url));
        }
        if let Some(url) = &self.k6 {
            return Ok(Tool::K6(url));
        }
        if let Some(url) = &self.goose {
            return Ok(Tool::Goose(url));
        }
        match (&self.pull, &self.scrape) {
            (Some(name), Some(scrape)) => Ok(Tool::Pull { name, scrape }),
            (Some(_), None) => Err(FlagsError::Flag {
                flag: "--scrape",
                reason: "a pull target needs its counters: --scrape URL of the tool's Prometheus \
                         text endpoint"
                    .into(),
            }),
            _ => Err(FlagsError::NoTarget),
        }
    }

    /// The config text the flags stand for: one `[[targets]]` with every
    /// key written out (the defaults the flags fill in included), ready for
    /// `--config`. Only what the flags cannot know is refused here (no
    /// tool, no ceiling for a concurrency); every other check is the
    /// config's, on this text.
    pub fn to_toml(&self) -> Result<String, FlagsError> {
        let tool = self.tool()?;
        let knob = match tool {
            Tool::Pull { .. } => self.knob.unwrap_or(Control::Concurrency),
            _ => Control::Concurrency,
        };
        let (kind, default_window) = match tool {
            Tool::Locust(_) => ("locust", LOCUST_WINDOW),
            Tool::K6(_) => ("k6", TOOL_WINDOW),
            Tool::Goose(_) => ("goose", TOOL_WINDOW),
            Tool::Pull { .. } => ("pull", PULL_WINDOW),
        };
        let name = match tool {
            Tool::Pull { name, .. } => name.to_string(),
            _ => self.name.clone().unwrap_or_else(|| kind.to_string()),
        };
        if knob == Control::Concurrency && self.ceiling.is_none() {
            let what = match tool {
                Tool::Locust(_) | Tool::Goose(_) => "users",
                Tool::K6(_) => "VUs (at most the scenario's maxVUs)",
                Tool::Pull { .. } => "concurrent requests",
            };
            return Err(FlagsError::Flag {
                flag: "--ceiling",
                reason: format!(
                    "required for a concurrency: the most {what} the governor may offer, e.g. \
                     --ceiling 200"
                ),
            });
        }
        let mut out = String::from(
            "# The config of `throttle-governor run` without a file: the same target as\n\
             # its flags. Run it with `throttle-governor run --config FILE`.\n",
        );
        if let Some(listen) = &self.listen {
            out.push_str(&format!("\n[server]\nlisten = {}\n", quoted(listen)));
        }
        out.push_str(&format!(
            "\n[[targets]]\nname = {}\nknob = {}\n",
            quoted(&name),
            quoted(knob.as_str())
        ));
        if let Some(c) = self.ceiling {
            out.push_str(&format!("ceiling = {c}\n"));
        }
        out.push_str(&format!(
            "floor = {}\nhigh = {}\nwindow = {}\n",
            self.floor.unwrap_or(DEFAULT_FLOOR),
            self.high.unwrap_or(DEFAULT_HIGH),
            quoted(self.window.as_deref().unwrap_or(default_window))
        ));
        match tool {
            Tool::Locust(url) | Tool::K6(url) | Tool::Goose(url) => {
                for table in ["signal", "control"] {
                    out.push_str(&format!(
                        "\n[targets.{table}]\nkind = {}\nurl = {}\n",
                        quoted(kind),
                        quoted(url)
                    ));
                }
            }
            Tool::Pull { scrape, .. } => {
                out.push_str(&format!(
                    "\n[targets.signal]\nkind = \"prometheus\"\nurl = {}\nattempts = {}\nfailures = {}\n",
                    quoted(scrape),
                    quoted(self.attempts.as_deref().unwrap_or(GATE_ATTEMPTS)),
                    quoted(self.failures.as_deref().unwrap_or(GATE_FAILURES)),
                ));
                out.push_str("\n[targets.control]\nkind = \"pull\"\n");
            }
        }
        if let Some(l) = &self.latency {
            let source = match tool {
                Tool::Locust(_) => "locust = true",
                Tool::Goose(_) => "goose = true",
                Tool::K6(_) | Tool::Pull { .. } => {
                    return Err(FlagsError::Flag {
                        flag: "--latency",
                        reason: "without a file, a latency bound reads Locust's or Goose's own \
                                 percentiles; for k6 or a pull target give its source \
                                 (a histogram or a PromQL query) in [targets.latency] of a \
                                 config file (see config/latency.toml)"
                            .into(),
                    })
                }
            };
            out.push_str(&format!(
                "\n[targets.latency]\nquantile = {}\nbound = {}\n{source}\n",
                l.quantile,
                quoted(&l.bound)
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn locust() -> TargetFlags {
        TargetFlags {
            locust: Some("http://127.0.0.1:8089".into()),
            ceiling: Some(40.0),
            ..Default::default()
        }
    }

    #[test]
    fn locust_flags_are_the_shortest_locust_config() {
        let text = locust().to_toml().unwrap();
        let from_flags = Config::parse(&text).unwrap();
        let by_hand = Config::parse(
            r#"
[[targets]]
name = "locust"
knob = "concurrency"
ceiling = 40
floor = 1
high = 0.05
window = "3s"
[targets.signal]
kind = "locust"
url = "http://127.0.0.1:8089"
[targets.control]
kind = "locust"
url = "http://127.0.0.1:8089"
"#,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&from_flags).unwrap(),
            serde_json::to_value(&by_hand).unwrap(),
            "{text}"
        );
    }

    #[test]
    fn every_flag_lands_on_its_key() {
        let flags = TargetFlags {
            k6: Some("http://127.0.0.1:6565".into()),
            name: Some("checkout".into()),
            ceiling: Some(100.0),
            floor: Some(2.0),
            high: Some(0.02),
            window: Some("4s".into()),
            listen: Some("127.0.0.1:9500".into()),
            ..Default::default()
        };
        let config = Config::parse(&flags.to_toml().unwrap()).unwrap();
        let t = &config.targets[0];
        assert_eq!(config.server.listen.to_string(), "127.0.0.1:9500");
        assert_eq!(
            (t.name.as_str(), t.knob, t.ceiling, t.floor, t.high),
            ("checkout", Control::Concurrency, Some(100.0), 2.0, 0.02)
        );
        assert_eq!(t.window, std::time::Duration::from_secs(4));
        assert_eq!((t.signal.kind(), t.control.kind()), ("k6", "k6"));
    }

    #[test]
    fn each_tool_gets_its_kinds_and_window() {
        for (flags, kinds, window) in [
            (locust(), ("locust", "locust"), 3),
            (
                TargetFlags {
                    goose: Some("ws://127.0.0.1:5117".into()),
                    ceiling: Some(10.0),
                    ..Default::default()
                },
                ("goose", "goose"),
                2,
            ),
            (
                TargetFlags {
                    pull: Some("gate".into()),
                    scrape: Some("http://127.0.0.1:9465/metrics".into()),
                    knob: Some(Control::Rate),
                    ..Default::default()
                },
                ("prometheus", "pull"),
                3,
            ),
        ] {
            let config = Config::parse(&flags.to_toml().unwrap()).unwrap();
            let t = &config.targets[0];
            assert_eq!((t.signal.kind(), t.control.kind()), kinds);
            assert_eq!(t.window.as_secs(), window);
        }
    }

    #[test]
    fn a_latency_bound_reads_the_tools_own_percentiles() {
        let flags = TargetFlags {
            latency: Some(parse_latency("0.99:250ms").unwrap()),
            ..locust()
        };
        let config = Config::parse(&flags.to_toml().unwrap()).unwrap();
        let l = config.targets[0].latency.as_ref().unwrap();
        assert_eq!(
            (l.quantile, l.bound.as_millis(), l.locust),
            (0.99, 250, true)
        );
        let k6 = TargetFlags {
            k6: Some("http://127.0.0.1:6565".into()),
            ..flags
        };
        // clap keeps --k6 and --locust apart; here both are set: k6 wins
        // only if locust is unset, so unset it.
        let k6 = TargetFlags { locust: None, ..k6 };
        assert!(matches!(
            k6.to_toml(),
            Err(FlagsError::Flag {
                flag: "--latency",
                ..
            })
        ));
        for bad in ["0.99", "p99:250ms", "0.99:"] {
            assert!(parse_latency(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn what_the_flags_cannot_know_names_the_flag() {
        let no_ceiling = TargetFlags {
            ceiling: None,
            ..locust()
        };
        let err = no_ceiling.to_toml().unwrap_err();
        assert!(err.to_string().starts_with("--ceiling: required"), "{err}");
        assert_eq!(
            TargetFlags::default().to_toml().unwrap_err(),
            FlagsError::NoTarget
        );
        // A rate needs no ceiling.
        let rate = TargetFlags {
            pull: Some("gate".into()),
            scrape: Some("http://127.0.0.1:9465/metrics".into()),
            knob: Some(Control::Rate),
            ..Default::default()
        };
        assert!(Config::parse(&rate.to_toml().unwrap()).is_ok());
    }

    #[test]
    fn a_bad_value_is_the_configs_problem_named_by_field() {
        let flags = TargetFlags {
            window: Some("3".into()),
            high: Some(1.5),
            ..locust()
        };
        let err = Config::parse(&flags.to_toml().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("targets[locust].window"), "{err}");
        let flags = TargetFlags {
            high: Some(1.5),
            ..locust()
        };
        let err = Config::parse(&flags.to_toml().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("targets[locust].high"), "{err}");
    }

    #[test]
    fn strings_are_escaped() {
        let flags = TargetFlags {
            name: Some("a \"b\"".into()),
            ..locust()
        };
        let config = Config::parse(&flags.to_toml().unwrap()).unwrap();
        assert_eq!(config.targets[0].name, "a \"b\"");
    }
}
