//! What `help(obj)`, `obj?` and a notebook's Shift+Tab show about a value, laid out as IPython's
//! inspector does: signature, docstring (with the long form from `docs.rs`), type, and for
//! arrays shape, dtype and device.

use crate::modules::python::stdlib::inspect::cleandoc;
use crate::object::value::{FunctionBody, Value};
use crate::object::Interpreter;

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
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
pub fn signature_of(v: &Value) -> Option<String> {
    match v {
        Value::Builtin(b) => split_doc(b.doc).0.map(str::to_string),
        Value::Func(f) => Some(format!("{}({})", f.name, param_texts(f).join(", "))),
        _ => None,
    }
}

/// A function's parameters as written (`y=2`, `*args`).
fn param_texts(f: &crate::object::value::Function) -> Vec<String> {
    f.params
        .iter()
        .map(|p| {
            f.source
                .get(p.span.start..p.span.end)
                .unwrap_or(&p.name)
                .to_string()
        })
        .collect()
}

/// `Name(params)` of the `__init__` a class's instances run, without `self`; `Name()` when only
/// `object`'s would run.
fn init_signature(class: &crate::object::class::Class) -> String {
    let init = std::iter::once(class.attrs.borrow().get("__init__").cloned())
        .chain(class.mro.iter().map(|base| match base {
            Value::Class(c) => c.attrs.borrow().get("__init__").cloned(),
            _ => None,
        }))
        .flatten()
        .next();
    let params = match &init {
        Some(Value::Func(f)) => param_texts(f).into_iter().skip(1).collect(),
        _ => Vec::new(),
    };
    format!("{}({})", class.name, params.join(", "))
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
pub fn describe(
    it: &mut dyn Interpreter,
    path: &str,
    v: &Value,
    detail: u8,
    color: bool,
) -> String {
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
                crate::object::value::Flavor::Torch => {
                    crate::object::format::torch_device_name(arr.device())
                }
                _ => arr.device().to_string(),
            };
            fields.push(("Type", type_name.clone()));
            fields.push((
                "String form",
                crate::object::format::array_repr(a)
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
            let is_method = matches!(b.kind, crate::object::value::BuiltinKind::Method { .. });
            let mut doc = if rest.is_empty() {
                "<no docstring>".to_string()
            } else {
                capitalised(rest)
            };
            if let Some(more) = crate::modules::notebook::docs::extended(b.name, is_method) {
                doc = format!("{doc}\n\n{more}");
            }
            fields.push(("Docstring", doc));
            fields.push((
                "Type",
                match b.kind {
                    crate::object::value::BuiltinKind::Free(_)
                    | crate::object::value::BuiltinKind::Unbound(_) => {
                        "builtin_function_or_method".to_string()
                    }
                    crate::object::value::BuiltinKind::Method { .. } => "method".to_string(),
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
                        .map_or("<no docstring>".to_string(), cleandoc),
                ));
            }
            let module = f.module.as_ref().and_then(std::rc::Weak::upgrade);
            if let Some(file) = module.as_deref().and_then(module_file) {
                fields.push(("File", file));
            }
            fields.push(("Type", "function".to_string()));
        }
        Value::Class(class) if !class.native => {
            // IPython's class report: the constructor's signature, then the docstring or (for
            // `??`) the source, which holds the docstring; the type and the direct subclasses.
            fields.push(("Init signature", init_signature(class)));
            // inspect.getdoc: a class without its own docstring shows its nearest base's.
            let doc = || {
                let inherited = class.mro.iter().find_map(|base| match base {
                    Value::Class(c) => c.doc.clone(),
                    _ => None,
                });
                class
                    .doc
                    .clone()
                    .or(inherited)
                    .as_deref()
                    .map_or("<no docstring>".to_string(), cleandoc)
            };
            let source = class
                .source
                .as_ref()
                .and_then(|(text, span)| text.get(span.start..span.end));
            match source {
                Some(src) if detail > 0 => {
                    if class.doc.is_none() {
                        fields.push(("Docstring", doc()));
                    }
                    fields.push(("Source", src.trim_end().to_string()));
                }
                _ => fields.push(("Docstring", doc())),
            }
            let module = it.state().modules.get(&*class.module).cloned();
            if let Some(file) = module.as_deref().and_then(module_file) {
                fields.push(("File", file));
            }
            fields.push(("Type", "type".to_string()));
            let subclasses: Vec<String> = class
                .live_subclasses()
                .iter()
                .map(|c| c.name.to_string())
                .collect();
            fields.push(("Subclasses", subclasses.join(", ")));
        }
        Value::Module(m) => {
            fields.push(("Type", "module".to_string()));
            fields.push(("Docstring", m.doc.to_string()));
        }
        other => {
            fields.push(("Type", type_name.clone()));
            let repr = crate::object::format::repr(it, other).unwrap_or_default();
            fields.push(("String form", repr));
            if let Some(doc) = crate::modules::python::builtins::doc_of(other) {
                fields.push(("Docstring", doc));
            }
        }
    }
    let _ = path;
    render_fields(&fields, color)
}

/// IPython's `File:` for what a module defines: the module's `__file__` (for the library
/// compiled into devarray, `<devarray>/` and its path under `src/modules/library/`).
fn module_file(m: &crate::object::value::Module) -> Option<String> {
    match &m.get("__file__") {
        Some(Value::Str(f)) => Some(f.to_string()),
        _ => None,
    }
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
            // IPython pads the title before a value that starts on the next line too.
            let pad = " ".repeat(width.saturating_sub(label.len() + 1));
            lines.push(format!("{painted}{pad}\n{value}"));
        } else {
            let pad = " ".repeat(width.saturating_sub(label.len()));
            lines.push(format!("{painted}{pad}{value}"));
        }
    }
    lines.join("\n")
}
