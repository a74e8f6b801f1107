//! The top-level modules of `src/` keep the layers of `ARCHITECTURE.md`.
//!
//! Reads the "Layers" table of `ARCHITECTURE.md` (a row number and the
//! modules in that row), then every `.rs` file under `src/`: each file
//! belongs to its top-level module (`src/engine/step.rs` is `engine`), and
//! each `crate::NAME` path it mentions outside comments (in `use` lines and
//! in expressions alike) is an edge. An edge to a module in the same row or
//! a lower one fails the test, naming the file and line; so does a module
//! missing from the table, a row naming a module that does not exist, and
//! an import cycle. Unit-test files count like any other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `crate::NAME` occurrences in one line of code (comments stripped).
fn crate_paths(line: &str) -> Vec<String> {
    let code = match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    };
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let before_ok = i == 0
            || !rest[..i]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        if before_ok {
            if let Some(group) = after.strip_prefix('{') {
                // `use crate::{a::X, b};`
                let end = group.find('}').unwrap_or(group.len());
                for part in group[..end].split(',') {
                    let name: String = part
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        out.push(name);
                    }
                }
            } else {
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        }
        rest = after;
    }
    out
}

/// Where a module first mentions another: `src/engine/mod.rs:12`.
type Site = String;

/// The module graph: top-level module -> the modules it mentions, each
/// with the first place it does.
fn graph(src: &Path) -> BTreeMap<String, BTreeMap<String, Site>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let top_of = |p: &Path| -> String {
        let rel = p.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        first.trim_end_matches(".rs").to_string()
    };
    let modules: BTreeSet<String> = files
        .iter()
        .map(|p| top_of(p))
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut edges: BTreeMap<String, BTreeMap<String, Site>> = BTreeMap::new();
    for p in &files {
        let top = top_of(p);
        if top == "lib" || top == "main" {
            continue;
        }
        let text = std::fs::read_to_string(p).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for name in crate_paths(line) {
                // Exported macros (`crate::counter_source!`) are not modules.
                if name != top && modules.contains(&name) {
                    let site = format!("src/{}:{}", p.strip_prefix(src).unwrap().display(), i + 1);
                    edges
                        .entry(top.clone())
                        .or_default()
                        .entry(name)
                        .or_insert(site);
                }
            }
        }
        edges.entry(top).or_default();
    }
    edges
}

/// The rows of the "Layers" table in `ARCHITECTURE.md`: module -> row.
/// A table row looks like ``| 3 | `signal`, `control` | ... |``.
fn layers(architecture: &str) -> BTreeMap<String, u32> {
    let section = architecture
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .expect("ARCHITECTURE.md has a \"## Layers\" section");
    let mut out = BTreeMap::new();
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(row), Some(mods)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Ok(row) = row.parse::<u32>() else {
            continue;
        };
        for m in mods.split(',') {
            let m = m.trim().trim_matches('`');
            assert!(!m.is_empty(), "an empty module name in row {row}: {line}");
            let before = out.insert(m.to_string(), row);
            assert!(
                before.is_none(),
                "`{m}` stands in two rows of the Layers table"
            );
        }
    }
    assert!(
        !out.is_empty(),
        "the Layers table of ARCHITECTURE.md has no rows"
    );
    out
}

/// Every way the graph breaks the layers: an edge that does not go to a
/// lower row, a module the table does not place, a row naming a module
/// that does not exist.
fn layer_violations(
    edges: &BTreeMap<String, BTreeMap<String, Site>>,
    rows: &BTreeMap<String, u32>,
) -> Vec<String> {
    let mut out = Vec::new();
    for m in edges.keys() {
        if !rows.contains_key(m) {
            out.push(format!(
                "module `{m}` is in no row of ARCHITECTURE.md's Layers table"
            ));
        }
    }
    for m in rows.keys() {
        if !edges.contains_key(m) {
            out.push(format!(
                "the Layers table names `{m}`, which is no module of src/"
            ));
        }
    }
    for (from, tos) in edges {
        let Some(&r_from) = rows.get(from) else {
            continue;
        };
        for (to, site) in tos {
            let Some(&r_to) = rows.get(to) else { continue };
            if r_to >= r_from {
                out.push(format!(
                    "{site}: `{from}` (row {r_from}) uses `{to}` (row {r_to}); a module may use only rows above its own"
                ));
            }
        }
    }
    out
}

/// One cycle, if there is any.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == m).unwrap();
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The graph without its sites.
fn plain(edges: &BTreeMap<String, BTreeMap<String, Site>>) -> BTreeMap<String, BTreeSet<String>> {
    edges
        .iter()
        .map(|(k, v)| (k.clone(), v.keys().cloned().collect()))
        .collect()
}

#[test]
fn top_level_modules_keep_the_layers_of_architecture_md() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let edges = graph(&root.join("src"));
    assert!(edges.len() > 10, "too few modules found: {edges:?}");
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let problems = layer_violations(&edges, &layers(&text));
    assert!(
        problems.is_empty(),
        "the module graph breaks ARCHITECTURE.md's layers:\n{}",
        problems.join("\n")
    );
}

#[test]
fn top_level_modules_form_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = plain(&graph(&src));
    assert!(edges.len() > 10, "too few modules found: {edges:?}");
    if let Some(cycle) = find_cycle(&edges) {
        let listing: Vec<String> = edges
            .iter()
            .map(|(k, v)| format!("{k} -> {}", v.iter().cloned().collect::<Vec<_>>().join(" ")))
            .collect();
        panic!(
            "import cycle among top-level modules: {}\n{}",
            cycle.join(" -> "),
            listing.join("\n")
        );
    }
}

#[test]
fn the_cycle_finder_finds_cycles_and_the_scanner_reads_paths() {
    let e = |pairs: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert!(find_cycle(&e(&[("a", "b"), ("b", "c")])).is_none());
    let c = find_cycle(&e(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap();
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4);
    assert_eq!(
        crate_paths("use crate::{config::X, signal};"),
        ["config", "signal"]
    );
    assert_eq!(
        crate_paths("let x = crate::window::Reading::new(); // crate::no"),
        ["window"]
    );
    assert!(crate_paths("$crate::signal::X").is_empty());
}

#[test]
fn the_layer_check_names_each_violation() {
    let g = |pairs: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeMap<String, Site>> = BTreeMap::new();
        for (a, b) in pairs {
            g.entry(a.to_string())
                .or_default()
                .insert(b.to_string(), format!("src/{a}.rs:1"));
            g.entry(b.to_string()).or_default();
        }
        g
    };
    let rows = layers(
        "# A\n\n## Layers\n| row | modules | what |\n|---|---|---|\n| 0 | `window`, `auth` | leaves |\n| 1 | `governor` | rules |\n| 2 | `engine` | loop |\n\n## Next\n| 9 | `not_a_row` | x |\n",
    );
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(rows["auth"], 0);
    assert_eq!(rows["engine"], 2);
    // Downward edges are fine.
    assert!(layer_violations(
        &g(&[
            ("engine", "governor"),
            ("governor", "window"),
            ("engine", "auth")
        ]),
        &rows
    )
    .is_empty());
    // Upward, sideways, unplaced and unknown: each named.
    let bad = layer_violations(
        &g(&[
            ("governor", "engine"),
            ("window", "auth"),
            ("lab", "engine"),
        ]),
        &rows,
    );
    assert!(
        bad.iter()
            .any(|p| p.starts_with("src/governor.rs:1: `governor` (row 1) uses `engine` (row 2)")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|p| p.contains("`window` (row 0) uses `auth` (row 0)")),
        "{bad:?}"
    );
    assert!(
        bad.iter().any(|p| p.contains("module `lab` is in no row")),
        "{bad:?}"
    );
    assert_eq!(bad.len(), 3, "{bad:?}");
}

/// What the pure core must not mention: a clock, a runtime, files, sockets.
const IMPURE: &[&str] = &[
    "Instant::now",
    "SystemTime",
    "tokio",
    "std::fs",
    "std::net",
    "reqwest",
    "hyper",
];

/// Lines of `files` (code, not comments) that mention an [`IMPURE`] name.
fn impure_lines(files: &[PathBuf], src: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for p in files {
        let text = std::fs::read_to_string(p).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = match line.find("//") {
                Some(at) => &line[..at],
                None => line,
            };
            for word in IMPURE {
                if code.contains(word) {
                    out.push(format!(
                        "src/{}:{}: `{word}` in the pure core",
                        p.strip_prefix(src).unwrap().display(),
                        i + 1
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn the_pure_core_reads_no_clock_and_does_no_io() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for dir in ["window", "governor", "engine/step"] {
        rust_files(&src.join(dir), &mut files);
    }
    for file in ["window.rs", "governor.rs", "engine/step.rs"] {
        if src.join(file).exists() {
            files.push(src.join(file));
        }
    }
    files.retain(|p| p.file_name().is_some_and(|f| f != "tests.rs"));
    assert!(files.len() >= 10, "too few core files found: {files:?}");
    let found = impure_lines(&files, &src);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_purity_check_sees_a_clock() {
    let dir = std::env::temp_dir().join(format!("module-graph-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("core.rs");
    std::fs::write(
        &file,
        "// Instant::now in a comment is fine\nlet t = std::time::Instant::now();\n",
    )
    .unwrap();
    let found = impure_lines(std::slice::from_ref(&file), &dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found, ["src/core.rs:2: `Instant::now` in the pure core"]);
}
