//! Rendering of uncaught errors: the source line, a caret under the span, the message.
use crate::eval::session::EvalError;
use crate::lang::span::caret_lines;

pub fn render_error(err: &EvalError, color: bool) -> String {
    let _ = color;
    let mut out = String::new();
    if let Some(span) = err.span {
        let (line, text, carets) = caret_lines(&err.source, span);
        out.push_str(&format!("  line {line}\n    {text}\n    {carets}\n"));
    }
    out.push_str(&format!("{}: {}", err.ename, err.evalue));
    out
}
