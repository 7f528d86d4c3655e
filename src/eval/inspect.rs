//! Introspection for frontends: what `x?`, Shift+Tab and Tab show. Which
//! expression the cursor is on (the callee inside a call's parentheses, as
//! ipykernel does), resolving it without running user code, and the
//! IPython-style report (`Signature:`, `Docstring:`, `Type:`, and for arrays
//! shape, dtype and device).

use std::rc::Rc;

use super::interp::{Interp, State};
use super::session::Output;
use super::value::{FunctionBody, Value};

/// Modules `import` can load (their submodules are found as attributes).
pub const TOP_LEVEL_MODULES: &[&str] = &["math", "mxnet", "sys", "time", "torch"];

/// `x?`, `??x`, `nd.ones?`: the expression asked about and the detail level
/// (1 for `??`, which adds a function's source).
pub fn help_request(code: &str) -> Option<(String, u8)> {
    let t = code.trim();
    let (expr, marks) = if let Some(rest) = t.strip_suffix("??") {
        (rest, 2)
    } else if let Some(rest) = t.strip_suffix('?') {
        (rest, 1)
    } else if let Some(rest) = t.strip_prefix("??") {
        (rest, 2)
    } else if let Some(rest) = t.strip_prefix('?') {
        (rest, 1)
    } else {
        return None;
    };
    let expr = expr.trim();
    let is_path = !expr.is_empty()
        && !expr.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && expr
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
    is_path.then(|| (expr.to_string(), marks - 1))
}

/// `exit`, `exit()`, `quit`, `quit()`: what IPython users type to leave.
pub fn is_exit_command(code: &str) -> bool {
    matches!(code.trim(), "exit" | "exit()" | "quit" | "quit()")
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The dotted name ending at byte `end` of `code` (`mx.nd.ones` before `(`).
fn dotted_before(code: &str, end: usize) -> Option<String> {
    let before = code[..end].trim_end();
    let start = before
        .char_indices()
        .rev()
        .find(|(_, c)| !(is_name_char(*c) || *c == '.'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let path = before[start..].trim_matches('.');
    (!path.is_empty() && !path.starts_with(|c: char| c.is_ascii_digit())).then(|| path.to_string())
}

/// The expression to inspect at byte offset `cursor`: the dotted name under
/// the cursor, else the callee of the innermost call whose parentheses hold
/// the cursor (`ones(2, |3)` is `ones`), else the last name before it.
pub fn target_at(code: &str, cursor: usize) -> Option<String> {
    let cursor = floor_boundary(code, cursor.min(code.len()));
    let word_start = code[..cursor]
        .char_indices()
        .rev()
        .find(|(_, c)| !(is_name_char(*c) || *c == '.'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word_end = code[cursor..]
        .char_indices()
        .find(|(_, c)| !is_name_char(*c))
        .map_or(code.len(), |(i, _)| cursor + i);
    let word = code[word_start..word_end].trim_matches('.');
    if !word.is_empty() && !word.starts_with(|c: char| c.is_ascii_digit()) {
        return Some(word.to_string());
    }
    // The innermost open call: brackets outside string literals.
    let mut open: Vec<(char, usize)> = Vec::new();
    let mut quote: Option<char> = None;
    let mut chars = code[..cursor].char_indices();
    while let Some((i, c)) = chars.next() {
        match quote {
            Some(_) if c == '\\' => {
                chars.next();
            }
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '#' => {
                    // A comment runs to the end of its line.
                    for (_, c) in chars.by_ref() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                '(' | '[' | '{' => open.push((c, i)),
                ')' | ']' | '}' => {
                    open.pop();
                }
                _ => {}
            },
        }
    }
    if let Some(&(_, at)) = open.iter().rev().find(|(c, _)| *c == '(') {
        if let Some(callee) = dotted_before(code, at) {
            return Some(callee);
        }
    }
    dotted_before(code, cursor)
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The value `path` names, looking attributes up as the interpreter does but
/// never calling user code: names, then attributes (`x.copyto`, `mx.nd.ones`).
pub(crate) fn resolve(state: &mut State, path: &str) -> Option<Value> {
    let mut parts = path.split('.');
    let head = parts.next()?;
    let mut v = state
        .globals
        .get(head)
        .or_else(|| state.builtins.get(head))
        .cloned()?;
    let mut sink: Vec<Output> = Vec::new();
    let mut it = Interp::new(state, &mut sink, Rc::from(""));
    for p in parts {
        if p.is_empty() {
            return None;
        }
        v = super::builtins::get_attr(&mut it, &v, p).ok()?;
    }
    Some(v)
}

/// A module by its dotted name, loading it as `import` would (without binding a name).
pub(crate) fn module(state: &mut State, dotted: &str) -> Option<Value> {
    let mut sink: Vec<Output> = Vec::new();
    let mut it = Interp::new(state, &mut sink, Rc::from(""));
    super::modules::import(&mut it, dotted)
        .ok()
        .map(Value::Module)
}

/// A doc written `name(params): what it does...` split into the signature
/// and the rest, as IPython shows them apart.
pub fn split_doc(doc: &str) -> (Option<&str>, &str) {
    let head = doc.find('(').filter(|&i| {
        i > 0
            && doc[..i]
                .chars()
                .all(|c| is_name_char(c) || c == '.' || c == ' ' || c == '/')
    });
    let Some(open) = head else {
        return (None, doc);
    };
    let mut depth = 0usize;
    let mut close = None;
    for (i, c) in doc[open..].char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let end = open + i + 1;
                    // `range(stop) / range(start, stop[, step])`: alternatives continue.
                    if doc[end..].starts_with(" / ") {
                        continue;
                    }
                    close = Some(end);
                    break;
                }
            }
            '\n' if depth == 0 => break,
            _ => {}
        }
    }
    match close {
        Some(end) => {
            let rest = doc[end..].trim_start_matches(':').trim();
            (Some(&doc[..end]), rest)
        }
        None => (None, doc),
    }
}

/// Parameter names a signature accepts by keyword (`ctx`, `dtype` in
/// `ones(*shape, ctx=None, dtype='float32')`).
pub fn keyword_params(signature: &str) -> Vec<String> {
    let Some(open) = signature.find('(') else {
        return Vec::new();
    };
    let inner = &signature[open + 1..signature.rfind(')').unwrap_or(signature.len())];
    let mut names = Vec::new();
    let mut depth = 0i32;
    let mut piece = String::new();
    for c in inner.chars().chain(std::iter::once(',')) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        if c == ',' && depth == 0 {
            let p = piece.trim().trim_start_matches('[').trim();
            let name: String = p.chars().take_while(|c| is_name_char(*c)).collect();
            if !name.is_empty() && !p.starts_with('*') && !names.contains(&name) {
                names.push(name);
            }
            piece.clear();
        } else {
            piece.push(c);
        }
    }
    names
}

/// The signature of a value that can be called, if it has one.
pub(crate) fn signature_of(v: &Value) -> Option<String> {
    match v {
        Value::Builtin(b) => split_doc(b.doc).0.map(str::to_string),
        Value::Func(f) => {
            let params: Vec<String> = f
                .params
                .iter()
                .map(|p| {
                    let text = f.source.get(p.span.start..p.span.end).unwrap_or(&p.name);
                    text.to_string()
                })
                .collect();
            Some(format!("{}({})", f.name, params.join(", ")))
        }
        _ => None,
    }
}

/// What an array type is, for the `Docstring:` of an array.
fn array_class_doc(type_name: &str) -> &'static str {
    match type_name {
        "NDArray" => "An n-dimensional array on one device (MXNet's legacy NDArray).\nMove it with x.copyto(ctx) or x.as_in_context(ctx); read it with x.asnumpy().",
        "Tensor" => "A multi-dimensional tensor on one device (PyTorch's torch.Tensor).\nMove it with x.to(device) or x.cuda(); read it with x.cpu().numpy().",
        _ => "An n-dimensional array (numpy's ndarray; MXNet's numpy-mode array when on a device).\nMove it with x.copyto(ctx) or x.as_in_context(ctx); read it with x.asnumpy().",
    }
}

/// The report for `path`, whose value is `v`, as IPython's inspector lays it
/// out: aligned `Title:` fields, a multi-line value starting on the next line.
/// `detail` 1 adds a function's source (`??`); `color` paints titles red.
pub(crate) fn describe(it: &mut Interp, path: &str, v: &Value, detail: u8, color: bool) -> String {
    let mut fields: Vec<(&str, String)> = Vec::new();
    let type_name = v.type_name();
    match v {
        Value::Array(a) => {
            let arr = &a.array;
            let dims: Vec<String> = arr.shape().iter().map(|d| d.to_string()).collect();
            let shape = format!(
                "({}{})",
                dims.join(", "),
                if dims.len() == 1 { "," } else { "" }
            );
            // Named as the array's framework names devices (`cuda:0` for PyTorch).
            let device = match a.flavor {
                super::value::Flavor::Torch => super::format::torch_device_name(arr.device()),
                _ => arr.device().to_string(),
            };
            fields.push(("Type", type_name.clone()));
            fields.push((
                "String form",
                super::format::array_repr(a)
                    .trim_start_matches('\n')
                    .to_string(),
            ));
            fields.push(("Shape", shape));
            fields.push(("Dtype", arr.dtype().name().to_string()));
            fields.push(("Device", device));
            fields.push(("Docstring", array_class_doc(&type_name).to_string()));
        }
        Value::Builtin(b) => {
            let (sig, rest) = split_doc(b.doc);
            if let Some(sig) = sig {
                fields.push(("Signature", sig.to_string()));
            }
            let is_method = matches!(b.kind, super::value::BuiltinKind::Method { .. });
            let mut doc = if rest.is_empty() {
                "<no docstring>".to_string()
            } else {
                capitalised(rest)
            };
            if let Some(more) = super::docs::extended(b.name, is_method) {
                doc = format!("{doc}\n\n{more}");
            }
            fields.push(("Docstring", doc));
            fields.push((
                "Type",
                match b.kind {
                    super::value::BuiltinKind::Free(_) => "builtin_function_or_method".to_string(),
                    super::value::BuiltinKind::Method { .. } => "method".to_string(),
                },
            ));
        }
        Value::Func(f) => {
            if let Some(sig) = signature_of(v) {
                fields.push(("Signature", sig));
            }
            if detail > 0 {
                if let FunctionBody::Def(_) = &f.body {
                    if let Some(src) = f.source.get(f.span.start..f.span.end) {
                        fields.push(("Source", src.trim_end().to_string()));
                    }
                }
            } else {
                fields.push((
                    "Docstring",
                    f.doc
                        .as_deref()
                        .map_or("<no docstring>".to_string(), str::to_string),
                ));
            }
            fields.push(("Type", "function".to_string()));
        }
        Value::Module(m) => {
            fields.push(("Type", "module".to_string()));
            fields.push(("Docstring", m.doc.to_string()));
        }
        other => {
            fields.push(("Type", type_name.clone()));
            let repr = super::format::repr(it, other).unwrap_or_default();
            fields.push(("String form", repr));
            if let Some(doc) = super::builtins::doc_of(other) {
                fields.push(("Docstring", doc));
            }
        }
    }
    let _ = path;
    render_fields(&fields, color)
}

/// Docstrings start with a capital, as Python's do ("an array of ones." reads
/// as a sentence after `Docstring:`).
fn capitalised(text: &str) -> String {
    // A doc that starts with code (`gpu(i) if it exists...`) keeps its spelling.
    let first_word = text.split_whitespace().next().unwrap_or("");
    if !first_word.chars().all(|c| c.is_alphabetic() || c == ',') {
        return text.to_string();
    }
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// IPython's field layout: titles padded to one column, values that span
/// lines start below their title.
pub fn render_fields(fields: &[(&str, String)], color: bool) -> String {
    let width = fields.iter().map(|(t, _)| t.len() + 2).max().unwrap_or(0);
    let mut lines = Vec::new();
    for (title, value) in fields {
        let label = format!("{title}:");
        let painted = if color {
            format!("\x1b[31m{label}\x1b[39m")
        } else {
            label.clone()
        };
        if value.contains('\n') {
            lines.push(format!("{painted}\n{value}"));
        } else {
            let pad = " ".repeat(width.saturating_sub(label.len()));
            lines.push(format!("{painted}{pad}{value}"));
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_requests_and_exit_commands() {
        assert_eq!(help_request("x?"), Some(("x".into(), 0)));
        assert_eq!(help_request("mx.nd.ones??"), Some(("mx.nd.ones".into(), 1)));
        assert_eq!(help_request("?ones"), Some(("ones".into(), 0)));
        assert_eq!(help_request("x = 1"), None);
        assert_eq!(help_request("?"), None);
        assert_eq!(help_request("'a?'"), None);
        assert!(is_exit_command(" exit() ") && is_exit_command("quit"));
        assert!(!is_exit_command("exit(1)"));
    }

    #[test]
    fn the_target_is_the_name_under_the_cursor_or_the_callee() {
        assert_eq!(target_at("x.copyto", 8).as_deref(), Some("x.copyto"));
        assert_eq!(target_at("x.copyto", 3).as_deref(), Some("x.copyto"));
        assert_eq!(target_at("ones(", 5).as_deref(), Some("ones"));
        assert_eq!(target_at("nd.ones(", 8).as_deref(), Some("nd.ones"));
        assert_eq!(target_at("ones(2, 3)", 8).as_deref(), Some("ones"));
        assert_eq!(target_at("f(g(1), ", 8).as_deref(), Some("f"));
        assert_eq!(target_at("f('(', ", 7).as_deref(), Some("f"));
        assert_eq!(target_at("y = 1 + ", 8).as_deref(), None);
    }

    #[test]
    fn docs_split_into_signature_and_text() {
        assert_eq!(
            split_doc("len(obj): number of items."),
            (Some("len(obj)"), "number of items.")
        );
        assert_eq!(
            split_doc("range(stop) / range(start, stop[, step]): integers."),
            (
                Some("range(stop) / range(start, stop[, step])"),
                "integers."
            )
        );
        assert_eq!(split_doc("plain words"), (None, "plain words"));
        assert_eq!(
            keyword_params("ones(*shape, ctx=None, dtype='float32')"),
            vec!["ctx", "dtype"]
        );
        assert_eq!(
            keyword_params("print(*values, sep=' ', end='\\n')"),
            vec!["sep", "end"]
        );
    }

    #[test]
    fn fields_align_like_ipython() {
        let text = render_fields(
            &[
                ("Signature", "len(obj)".into()),
                ("Docstring", "two\nlines".into()),
                ("Type", "builtin_function_or_method".into()),
            ],
            false,
        );
        assert_eq!(
            text,
            "Signature: len(obj)\nDocstring:\ntwo\nlines\nType:      builtin_function_or_method"
        );
    }
}
