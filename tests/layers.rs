//! The layering of `src/` (ARCHITECTURE.md, "Layers"): every `crate::...` path in a file must name
//! its own top-level folder or one the table below allows. Dependencies run one way:
//!
//! frontends (main.rs, repl, kernel) -> eval -> modules -> object -> {nn, display, lang}
//! -> runtime -> backend -> vocab
//!
//! A failure names the file, the line and the path that runs against that direction.

use std::path::{Path, PathBuf};

/// Each layer and the layers its files may name. A layer may always name itself.
const ALLOWED: &[(&str, &[&str])] = &[
    ("main", &["eval", "repl"]),
    ("repl", &["eval", "lang", "display"]),
    (
        "eval",
        &["modules", "object", "nn", "display", "lang", "runtime"],
    ),
    ("modules", &["object", "nn", "display", "lang", "runtime"]),
    ("object", &["nn", "display", "lang", "runtime"]),
    ("nn", &["runtime"]),
    ("display", &["lang"]),
    ("lang", &[]),
    ("runtime", &["backend", "vocab"]),
    ("backend", &["vocab"]),
    ("vocab", &[]),
];

/// What the kernel (`kernel/src`, its own package) may name of the library: the frontend API.
const KERNEL_ALLOWED: &[&str] = &["eval", "lang", "display"];

/// The top-level items `lib.rs` re-exports (the `Session` API), which any frontend may name.
fn lib_reexports(root: &Path) -> Vec<String> {
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap_or_default();
    let mut names = Vec::new();
    if let Some(start) = lib.find("pub use eval::session::{") {
        let rest = &lib[start..];
        if let Some(end) = rest.find('}') {
            names.extend(
                rest["pub use eval::session::{".len()..end]
                    .split(',')
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty()),
            );
        }
    }
    names
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The layer a file under `src/` belongs to: its top-level folder, or `main` for `src/main.rs`.
/// `src/lib.rs` declares the layers and belongs to none.
fn layer_of(relative: &Path) -> Option<String> {
    let mut parts = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy());
    let first = parts.next()?;
    if parts.next().is_some() {
        return Some(first.to_string());
    }
    match first.as_ref() {
        "main.rs" => Some("main".to_string()),
        "lib.rs" => None,
        other => Some(other.trim_end_matches(".rs").to_string()),
    }
}

/// Every path `prefix::name` in `text` (comments removed), as (line number, name).
fn named_layers(text: &str, prefix: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push((n + 1, name));
            }
        }
    }
    found
}

/// The violations in one file's text, as messages naming the file and the path.
fn check_file(file: &str, layer: &str, text: &str) -> Vec<String> {
    let allowed = ALLOWED
        .iter()
        .find(|(l, _)| *l == layer)
        .map(|(_, a)| *a)
        .unwrap_or(&[]);
    let known: Vec<&str> = ALLOWED.iter().map(|(l, _)| *l).collect();
    named_layers(text, "crate::")
        .into_iter()
        .filter(|(_, target)| {
            target != layer && known.contains(&target.as_str()) && !allowed.contains(&target.as_str())
        })
        .map(|(line, target)| {
            format!(
                "{file}:{line}: `crate::{target}` — layer `{layer}` may not depend on `{target}` (allowed: {})",
                if allowed.is_empty() { "nothing".to_string() } else { allowed.join(", ") }
            )
        })
        .collect()
}

#[test]
fn every_import_runs_down_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    assert!(
        files.len() > 50,
        "found only {} files under src/",
        files.len()
    );
    let mut problems = Vec::new();
    let mut layers_seen = std::collections::BTreeSet::new();
    for path in &files {
        let relative = path.strip_prefix(root.join("src")).unwrap_or(path);
        let Some(layer) = layer_of(relative) else {
            continue;
        };
        assert!(
            ALLOWED.iter().any(|(l, _)| *l == layer),
            "src/{} is in a layer the table does not know: `{layer}`; add it to ALLOWED in tests/layers.rs",
            relative.display()
        );
        layers_seen.insert(layer.clone());
        let text = std::fs::read_to_string(path).unwrap_or_default();
        problems.extend(check_file(
            &format!("src/{}", relative.display()),
            &layer,
            &text,
        ));
    }
    assert!(layers_seen.len() >= 10, "layers seen: {layers_seen:?}");
    assert!(
        problems.is_empty(),
        "imports against the layering:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_kernel_uses_only_the_frontend_api() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let reexports = lib_reexports(root);
    assert!(reexports.iter().any(|n| n == "Session"), "{reexports:?}");
    let mut files = Vec::new();
    rust_files(&root.join("kernel/src"), &mut files);
    assert!(!files.is_empty());
    let mut problems = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        for (line, name) in named_layers(&text, "devarray::") {
            let is_layer = ALLOWED.iter().any(|(l, _)| *l == name);
            if is_layer && !KERNEL_ALLOWED.contains(&name.as_str()) {
                problems.push(format!(
                    "{}:{line}: `devarray::{name}` — the kernel may name only {KERNEL_ALLOWED:?} and the Session API",
                    path.strip_prefix(root).unwrap_or(path).display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checker itself: an upward import is caught, with the file, line and direction named.
#[test]
fn an_upward_import_is_reported() {
    let text = "use crate::vocab::DType;\n\
                // crate::runtime in a comment is fine\n\
                use crate::runtime::Array;\n";
    assert_eq!(
        check_file("src/backend/x.rs", "backend", text),
        vec!["src/backend/x.rs:3: `crate::runtime` — layer `backend` may not depend on `runtime` (allowed: vocab)".to_string()]
    );
    let text = "fn f() { crate::eval::session::Session::new(Default::default()); }\n";
    assert_eq!(check_file("src/modules/m.rs", "modules", text).len(), 1);
    assert!(check_file("src/eval/m.rs", "eval", text).is_empty());
    assert_eq!(
        layer_of(Path::new("modules/mxnet/gluon.rs")).as_deref(),
        Some("modules")
    );
    assert_eq!(layer_of(Path::new("main.rs")).as_deref(), Some("main"));
    assert_eq!(layer_of(Path::new("lib.rs")), None);
}
