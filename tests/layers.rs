//! The layering of `src/` (ARCHITECTURE.md, "Layers"): every `crate::...` path in a file must name
//! its own top-level folder or one the table below allows. Dependencies run one way:
//!
//! frontends (main.rs, repl, kernel) -> eval -> modules -> object -> {nn, display, lang}
//! -> runtime -> backend -> vocab
//!
//! Inside `src/modules` the libraries are layered again (`MODULE_LAYERS`): dialects and notebook
//! helpers -> the shared array API -> the Python library; one dialect never names another.
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

/// The layers inside `src/modules`, each a folder, and the layers its files may name. Files directly
/// in `src/modules` (`mod.rs`: `import` and `install`) sit above them all.
const MODULE_LAYERS: &[(&str, &[&str])] = &[
    // Libraries written in the language: they reach other modules by `import` statements only.
    ("library", &[]),
    // Libraries written in Rust that programs import beside the dialects (matplotlib).
    ("matplotlib", &["notebook", "array", "python"]),
    ("dialects", &["array", "python"]),
    ("notebook", &["array", "python"]),
    ("array", &["python"]),
    ("python", &[]),
];

/// Layers whose parts (sub-folders) are peers that may not name each other.
const PEER_PARTS: &[&str] = &["dialects"];

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

/// The Rust module path of a file under `src/` (`modules/dialects/torch/nn.rs` ->
/// `modules::dialects::torch::nn`; a `mod.rs` is its folder).
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    if let Some(last) = parts.last_mut() {
        *last = last.trim_end_matches(".rs").to_string();
    }
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts
}

/// `a::{b, c::{d, e}}` -> `a::b`, `a::c::d`, `a::c::e` (whitespace already removed).
fn expand_use_tree(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut items, mut depth, mut current) = (Vec::new(), 0, String::new());
    for ch in inner.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    items.push(current);
    items
        .iter()
        .filter(|i| !i.is_empty())
        .flat_map(|i| expand_use_tree(i))
        .map(|i| format!("{prefix}{i}"))
        .collect()
}

/// Every path a file names through `crate::`, `super::` or `self::` (in `use` trees and in
/// code), resolved to a path from the crate root, with its line. Comments are skipped. A path
/// inside an inline `mod tests { ... }` resolves as if written at the file's level, which can
/// only make it point at the file's own layer.
fn resolved_paths(text: &str, here: &[String]) -> Vec<(usize, Vec<String>)> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut raw: Vec<(usize, String)> = Vec::new();
    let mut use_spans: Vec<std::ops::Range<usize>> = Vec::new();
    // `use` trees, which may span lines.
    let mut rest = 0;
    while let Some(found) = code[rest..].find("use ") {
        let at = rest + found;
        rest = at + 4;
        let before = code[..at].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            break;
        };
        let tree: String = code[at + 4..at + end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        for path in expand_use_tree(&tree) {
            raw.push((line_of(at), path));
        }
        use_spans.push(at..at + end);
        rest = at + end;
    }
    // Paths in code: `crate::a::b(...)`, `super::x::f`.
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(start) {
            let at = from + found;
            from = at + start.len();
            let before = code[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                || use_spans.iter().any(|s| s.contains(&at))
            {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            raw.push((line_of(at), path));
        }
    }
    raw.into_iter()
        .filter_map(|(line, path)| {
            let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            let mut out: Vec<String>;
            let mut segs = segs.as_slice();
            match segs.first() {
                Some(&"crate") => {
                    out = Vec::new();
                    segs = &segs[1..];
                }
                Some(&"super") | Some(&"self") => {
                    out = here.to_vec();
                    while let Some(first) = segs.first() {
                        match *first {
                            "super" => {
                                out.pop();
                            }
                            "self" => {}
                            _ => break,
                        }
                        segs = &segs[1..];
                    }
                }
                _ => return None,
            }
            out.extend(segs.iter().map(|s| s.to_string()));
            Some((line, out))
        })
        .collect()
}

/// The layer (and, for `PEER_PARTS`, the part) of a path under `modules`: `modules::dialects::torch::nn`
/// -> ("dialects", Some("torch")); None outside the layered folders.
fn module_layer(path: &[String]) -> Option<(String, Option<String>)> {
    if path.first().map(String::as_str) != Some("modules") {
        return None;
    }
    let layer = path.get(1)?;
    if !MODULE_LAYERS.iter().any(|(l, _)| l == layer) {
        return None;
    }
    let part = PEER_PARTS
        .contains(&layer.as_str())
        .then(|| path.get(2).cloned())
        .flatten()
        .filter(|p| p != "*");
    Some((layer.clone(), part))
}

/// The violations of the libraries' layering in one file under `src/modules`.
fn check_module_file(file: &str, here: &[String], text: &str) -> Vec<String> {
    let Some((layer, part)) = module_layer(here) else {
        return Vec::new();
    };
    let allowed = MODULE_LAYERS
        .iter()
        .find(|(l, _)| *l == layer)
        .map(|(_, a)| *a)
        .unwrap_or(&[]);
    let mut problems = Vec::new();
    for (line, target) in resolved_paths(text, here) {
        let shown = target.join("::");
        if target.first().map(String::as_str) == Some("modules") && target.len() >= 2 {
            let Some((to_layer, to_part)) = module_layer(&target) else {
                // The top of `modules` (`import`, `install`) is above every layer.
                if !MODULE_LAYERS.iter().any(|(l, _)| *l == target[1]) {
                    problems.push(format!(
                        "{file}:{line}: `crate::{shown}` — the libraries' layer `{layer}` may not name the top of `modules` (it is above every layer; ask the interpreter, e.g. `it.import(name)`, or register a hook)"
                    ));
                }
                continue;
            };
            if to_layer == layer {
                if let (Some(p), Some(q)) = (&part, &to_part) {
                    if p != q {
                        problems.push(format!(
                            "{file}:{line}: `crate::{shown}` — `{layer}/{p}` may not depend on its peer `{layer}/{q}` (move what they share down into a lower layer)"
                        ));
                    }
                }
            } else if !allowed.contains(&to_layer.as_str()) {
                problems.push(format!(
                    "{file}:{line}: `crate::{shown}` — the libraries' layer `{layer}` may not depend on `{to_layer}` (allowed: {}); let `{to_layer}` register into a hook of `{layer}` instead",
                    if allowed.is_empty() { "nothing of modules".to_string() } else { allowed.join(", ") }
                ));
            }
        }
    }
    problems
}

#[test]
fn the_libraries_import_down_their_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src/modules"), &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut layers_seen = std::collections::BTreeSet::new();
    for path in &files {
        let relative = path.strip_prefix(root.join("src")).unwrap_or(path);
        let here = module_path(relative);
        if here.len() > 2 {
            assert!(
                module_layer(&here).is_some(),
                "src/{} is in a folder of src/modules that MODULE_LAYERS does not know: `{}`; add it to MODULE_LAYERS in tests/layers.rs",
                relative.display(),
                here[1]
            );
        }
        if let Some((layer, _)) = module_layer(&here) {
            layers_seen.insert(layer);
        }
        let text = std::fs::read_to_string(path).unwrap_or_default();
        problems.extend(check_module_file(
            &format!("src/{}", relative.display()),
            &here,
            &text,
        ));
    }
    assert_eq!(
        layers_seen.len(),
        MODULE_LAYERS.len(),
        "layers seen: {layers_seen:?}"
    );
    assert!(
        problems.is_empty(),
        "imports against the libraries' layering:\n{}",
        problems.join("\n")
    );
}

/// The libraries' checker: upward imports, peer imports and the top of `modules` are caught
/// in every spelling (`use` trees, `super::`, paths in code).
#[test]
fn an_upward_import_inside_modules_is_reported() {
    let here = module_path(Path::new("modules/python/builtins.rs"));
    let text = "use crate::modules::python::hooks;\n\
                use crate::modules::{array::arrays, python::classes};\n\
                fn f() { super::str_more::g(); crate::modules::dialects::torch::h(); }\n\
                // crate::modules::notebook in a comment is fine\n";
    assert_eq!(
        check_module_file("src/modules/python/builtins.rs", &here, text),
        vec![
            "src/modules/python/builtins.rs:2: `crate::modules::array::arrays` — the libraries' layer `python` may not depend on `array` (allowed: nothing of modules); let `array` register into a hook of `python` instead".to_string(),
            "src/modules/python/builtins.rs:3: `crate::modules::dialects::torch::h` — the libraries' layer `python` may not depend on `dialects` (allowed: nothing of modules); let `dialects` register into a hook of `python` instead".to_string(),
        ]
    );
    let here = module_path(Path::new("modules/dialects/torch/mod.rs"));
    let text = "use super::mxnet::gluon::bound;\nuse self::nn;\nfn f() { crate::modules::import(it, \"x\"); }\n";
    let found = check_module_file("src/modules/dialects/torch/mod.rs", &here, text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("`dialects/torch` may not depend on its peer `dialects/mxnet`"));
    assert!(found[1].contains("may not name the top of `modules`"));
    let here = module_path(Path::new("modules/array/files.rs"));
    assert!(check_module_file(
        "src/modules/array/files.rs",
        &here,
        "use crate::modules::python::stdlib;\nuse super::arrays;\n"
    )
    .is_empty());
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
