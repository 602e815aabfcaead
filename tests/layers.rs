//! The layer rule of `src/` (ARCHITECTURE.md, "Layers"): a top-level
//! module imports only modules below it in [`LAYERS`]. Reads the sources;
//! needs no server.

use std::collections::BTreeMap;
use std::path::Path;

/// Bottom to top.
const LAYERS: &[&str] = &[
    "features",
    "pki",
    "serving",
    "render",
    "proxy",
    "request",
    "storage",
    "informer",
    "security",
    "aggregated",
    "admission",
    "config",
    "context",
    "webhook",
    "registry",
    "flowcontrol",
    "filters",
    "controllers",
    "aggregator",
    "apiextensions",
    "openapi_pb",
    "openapi",
    "discovery",
    "metrics",
    "handlers",
    "host",
    "server",
    "main",
];

fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// (importer, imported) → one file that does it.
fn edges() -> BTreeMap<(String, String), String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let from = module_of(rel);
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.match_indices("crate::") {
                let to: String = text[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(
                    !text[i + 7..].starts_with('{'),
                    "{}: a grouped `crate::{{..}}` import hides its modules from this test; split it",
                    rel.display()
                );
                if !to.is_empty() && to != from {
                    out.entry((from.clone(), to))
                        .or_insert_with(|| rel.display().to_string());
                }
            }
        }
    }
    out
}

#[test]
fn src_imports_point_down_the_layers() {
    let rank = |m: &str| {
        LAYERS
            .iter()
            .position(|l| *l == m)
            .unwrap_or_else(|| panic!("module {m} is in no layer: add it to LAYERS"))
    };
    let mut upward = Vec::new();
    for ((from, to), file) in edges() {
        if rank(&to) > rank(&from) {
            upward.push(format!("{file}: {from} imports {to}, which is above it"));
        }
    }
    assert!(
        upward.is_empty(),
        "imports against LAYERS (tests/layers.rs):\n{}",
        upward.join("\n")
    );
}
