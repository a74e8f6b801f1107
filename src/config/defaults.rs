//! The defaults that depend on other keys of the same target: what a
//! target with a load tool's `kind` need not say.
//!
//! Why it exists: the plain defaults are serde's (`floor = 1`,
//! `high = 0.05`, `window = "2s"`, ...). A few follow from the tool: a
//! Locust, k6 or Goose target reads and writes the same API (so one of
//! `signal` and `control` gives the other), is governed by its user or VU
//! count (`knob = "concurrency"`), is named after the tool when it has no
//! name, and a Locust window must outlast Locust's 2 s stats cache
//! (`window = "3s"`). They are filled into the TOML table before it is
//! read, so a target that sets a key keeps it, and `check` and `run` see
//! the same target. Each is documented in config/example.toml.

/// The kinds that are one tool's API on both sides.
const TOOLS: [&str; 3] = ["locust", "k6", "goose"];

/// The window of a Locust target that gives none: longer than its stats
/// cache ([`super::limits::LOCUST_STATS_CACHE`]).
pub(crate) const LOCUST_WINDOW: &str = "3s";

/// The `kind` of `item`'s table `table`, when it is a tool's.
fn tool_kind(item: &toml::Table, table: &str) -> Option<String> {
    let kind = item.get(table)?.get("kind")?.as_str()?;
    TOOLS.contains(&kind).then(|| kind.to_string())
}

/// Fills the tool-dependent defaults into one `[[targets]]` table.
pub(crate) fn fill(item: &mut toml::Value) {
    let Some(item) = item.as_table_mut() else {
        return;
    };
    // One side of a tool gives the other: the same kind at the same URL.
    for (given, missing) in [("signal", "control"), ("control", "signal")] {
        if item.contains_key(missing) || tool_kind(item, given).is_none() {
            continue;
        }
        let mut other = toml::Table::new();
        for key in ["kind", "url"] {
            if let Some(v) = item[given].get(key) {
                other.insert(key.to_string(), v.clone());
            }
        }
        item.insert(missing.to_string(), toml::Value::Table(other));
    }
    let tool = tool_kind(item, "control").or_else(|| tool_kind(item, "signal"));
    if let Some(tool) = tool {
        item.entry("knob")
            .or_insert_with(|| toml::Value::String("concurrency".into()));
        item.entry("name")
            .or_insert_with(|| toml::Value::String(tool.clone()));
    }
    if tool_kind(item, "signal").as_deref() == Some("locust") {
        item.entry("window")
            .or_insert_with(|| toml::Value::String(LOCUST_WINDOW.into()));
    }
}
