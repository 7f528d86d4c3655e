//! Introspection for frontends: what `x?`, Shift+Tab and Tab show. Which
//! expression the cursor is on (the callee inside a call's parentheses, as
//! ipykernel does), resolving it without running user code, and the
//! IPython-style report (`Signature:`, `Docstring:`, `Type:`, and for arrays
//! shape, dtype and device).

use std::rc::Rc;

use super::interp::Interp;
use super::session::Output;
use crate::object::value::Value;
use crate::object::State;

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
        v = crate::modules::python::builtins::get_attr(&mut it, &v, p).ok()?;
    }
    Some(v)
}

/// A module by its dotted name, loading it as `import` would (without binding a name).
pub(crate) fn module(state: &mut State, dotted: &str) -> Option<Value> {
    let mut sink: Vec<Output> = Vec::new();
    let mut it = Interp::new(state, &mut sink, Rc::from(""));
    crate::modules::import(&mut it, dotted)
        .ok()
        .map(Value::Module)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::notebook::pydoc::{keyword_params, render_fields, split_doc};

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
