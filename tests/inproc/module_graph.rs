//! The top-level modules of `src/` must not import each other in a cycle.
//!
//! Reads every `.rs` file under `src/`, maps it to its top-level module
//! (`src/engine/step.rs` is `engine`), and collects each `crate::NAME` path
//! it mentions outside comments (in `use` lines and in expressions alike).
//! A cycle in that graph fails the test, naming the modules on it.

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

/// The module graph: top-level module -> modules it mentions.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(src).ok()?;
            let first = rel.components().next()?.as_os_str().to_str()?;
            Some(first.trim_end_matches(".rs").to_string())
        })
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in &files {
        let rel = p.strip_prefix(src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        // Unit-test files may use the lab's fixtures (its seeded PRNG, its
        // models); the layers are about the code that ships.
        if top == "lib" || top == "main" || p.file_name().is_some_and(|f| f == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(p).unwrap();
        for line in text.lines() {
            let t = line.trim_start();
            if t.starts_with("//") {
                continue;
            }
            for name in crate_paths(line) {
                // Exported macros (`crate::counter_source!`) are not modules.
                if name != top && modules.contains(&name) {
                    edges.entry(top.clone()).or_default().insert(name);
                }
            }
        }
        edges.entry(top).or_default();
    }
    edges
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

#[test]
fn top_level_modules_form_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = graph(&src);
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
