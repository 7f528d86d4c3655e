//! Rendering of uncaught errors in the shape of CPython 3.11's traceback:
//!
//! ```text
//!   line 3, in <module>
//!     f(1)
//!     ^^^^
//!   line 2, in f
//!     return x + q
//!                ^
//! NameError: name 'q' is not defined
//! ```
//!
//! With `color`, the exception name is bold red, carets red and locations dim.
use colored::Colorize;
use unicode_width::UnicodeWidthChar;

use crate::lang::span::{locate, Span};

/// An uncaught error as plain data: the exception's class name, its message
/// and the frames it unwound through. The evaluator converts its own error
/// type into this, so rendering knows nothing of the interpreter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traceback {
    pub ename: String,
    pub evalue: String,
    /// Outermost first; the last frame is where the error was raised.
    pub frames: Vec<TraceFrame>,
}

/// One level of a traceback: the function (`<module>` at top level), the
/// source text that level was running and the byte span in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceFrame {
    pub function: String,
    pub source: String,
    pub span: Span,
}

/// The source line of `span` and the caret line under it. Columns are measured
/// in terminal cells (wide CJK characters take two), and tabs before the span
/// are repeated so the carets line up whatever the tab width.
fn caret_line(source: &str, span: Span) -> (usize, String, String) {
    let (line_no, col, line) = locate(source, span);
    let before: String = line.chars().take(col - 1).collect();
    let mut carets: String = before
        .chars()
        .map(|c| match c {
            '\t' => "\t".to_string(),
            c => " ".repeat(c.width().unwrap_or(0)),
        })
        .collect();
    // the span's text on its first line (at least one cell, so an error at the
    // end of the input still gets a caret)
    let start = span.start.min(source.len());
    let end = span.end.clamp(start, source.len());
    let spanned = source
        .get(start..end)
        .map_or("", |s| s.split('\n').next().unwrap_or(""));
    let rest_of_line: String = line.chars().skip(col - 1).collect();
    let spanned = if rest_of_line.starts_with(spanned) {
        spanned
    } else {
        ""
    };
    let width: usize = spanned.chars().map(|c| c.width().unwrap_or(0)).sum();
    carets.push_str(&"^".repeat(width.max(1)));
    // Like CPython, show the line without its indentation (a frame inside a
    // function would otherwise drift right), and shift the carets with it.
    let indent = line.len() - line.trim_start().len();
    let indent_chars = line[..indent].chars().count();
    let carets: String = carets.chars().skip(indent_chars).collect();
    (line_no, line.trim_start().to_string(), carets)
}

/// Syntax errors point at source, not at a running frame: CPython prints no
/// `in <name>` for them.
fn is_syntax_error(ename: &str) -> bool {
    matches!(ename, "SyntaxError" | "IndentationError" | "TabError")
}

/// The report a user sees for `err`; `color` adds ANSI colours.
pub fn render_error(err: &Traceback, color: bool) -> String {
    let mut out = String::new();
    let mut repeats = 0usize;
    for (i, frame) in err.frames.iter().enumerate() {
        // Like CPython, show a frame repeated by recursion three times, then count the rest.
        let same_as_previous = i > 0 && err.frames.get(i - 1) == Some(frame);
        repeats = if same_as_previous { repeats + 1 } else { 0 };
        let next_differs = err.frames.get(i + 1) != Some(frame);
        if repeats >= 3 {
            if next_differs {
                out.push_str(&format!(
                    "  [Previous line repeated {} more time{}]\n",
                    repeats - 2,
                    if repeats - 2 == 1 { "" } else { "s" }
                ));
            }
            continue;
        }
        let (line_no, text, carets) = caret_line(&frame.source, frame.span);
        let location = if is_syntax_error(&err.ename) && err.frames.len() == 1 {
            format!("line {line_no}")
        } else {
            format!("line {line_no}, in {}", frame.function)
        };
        let (location, carets) = if color {
            (location.dimmed().to_string(), carets.red().to_string())
        } else {
            (location, carets)
        };
        out.push_str(&format!("  {location}\n    {text}\n    {carets}\n"));
    }
    let ename = if color {
        err.ename.red().bold().to_string()
    } else {
        err.ename.clone()
    };
    if err.evalue.is_empty() {
        out.push_str(&ename);
    } else {
        out.push_str(&format!("{ename}: {}", err.evalue));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A NameError raised at `span` in `source`, inside the calls `frames`
    /// (function name, call site), outermost first.
    fn error(source: &str, span: Option<Span>, frames: Vec<(String, Span)>) -> Traceback {
        let mut names = vec!["<module>".to_string()];
        names.extend(frames.iter().map(|(n, _)| n.clone()));
        let mut spans: Vec<Span> = frames.iter().map(|(_, s)| *s).collect();
        spans.extend(span);
        Traceback {
            ename: "NameError".into(),
            evalue: "name 'q' is not defined".into(),
            frames: names
                .into_iter()
                .zip(spans)
                .map(|(function, span)| TraceFrame {
                    function,
                    source: source.into(),
                    span,
                })
                .collect(),
        }
    }

    fn strip_ansi(text: &str) -> String {
        let mut out = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn span_on_the_first_line() {
        let err = error("y = x + q", Some(Span::new(8, 9)), vec![]);
        assert_eq!(
            render_error(&err, false),
            "  line 1, in <module>\n    y = x + q\n            ^\nNameError: name 'q' is not defined"
        );
    }

    #[test]
    fn span_on_the_third_line_of_a_cell() {
        let src = "a = 1\nb = 2\nc = total(a, b)\n";
        let err = error(src, Some(Span::new(16, 27)), vec![]);
        assert_eq!(
            render_error(&err, false),
            "  line 3, in <module>\n    c = total(a, b)\n        ^^^^^^^^^^^\nNameError: name 'q' is not defined"
        );
    }

    #[test]
    fn span_at_the_end_of_input() {
        let err = Traceback {
            ename: "SyntaxError".into(),
            evalue: "unexpected end of input".into(),
            frames: vec![TraceFrame {
                function: "<module>".into(),
                source: "x = (1 +".into(),
                span: Span::new(8, 8),
            }],
        };
        assert_eq!(
            render_error(&err, false),
            "  line 1\n    x = (1 +\n            ^\nSyntaxError: unexpected end of input"
        );
    }

    #[test]
    fn multibyte_and_wide_characters_before_the_span() {
        // 'é' is two bytes, one cell; '张量' are three bytes and two cells each
        let src = "s = 'é张量' + q";
        let start = src.find('q').unwrap_or(0);
        let err = error(src, Some(Span::new(start, start + 1)), vec![]);
        assert_eq!(
            render_error(&err, false),
            "  line 1, in <module>\n    s = 'é张量' + q\n                  ^\nNameError: name 'q' is not defined"
        );
    }

    #[test]
    fn no_span_gives_only_the_message() {
        let err = error("x", None, vec![]);
        assert_eq!(
            render_error(&err, false),
            "NameError: name 'q' is not defined"
        );
        let bare = Traceback {
            ename: "KeyboardInterrupt".into(),
            evalue: String::new(),
            frames: vec![],
        };
        assert_eq!(render_error(&bare, false), "KeyboardInterrupt");
    }

    #[test]
    fn enclosing_calls_are_listed_outermost_first() {
        let src = "def f(x):\n    return x + q\nf(1)";
        let q = src.find('q').unwrap_or(0);
        let call = src.rfind("f(1)").unwrap_or(0);
        let err = error(
            src,
            Some(Span::new(q, q + 1)),
            vec![("f".into(), Span::new(call, call + 4))],
        );
        assert_eq!(
            render_error(&err, false),
            "  line 3, in <module>\n    f(1)\n    ^^^^\n  line 2, in f\n    return x + q\n               ^\nNameError: name 'q' is not defined"
        );
    }

    #[test]
    fn colour_only_adds_escape_codes() {
        let err = error("y = x + q", Some(Span::new(8, 9)), vec![]);
        assert_eq!(
            strip_ansi(&render_error(&err, true)),
            render_error(&err, false)
        );
    }

    #[test]
    fn span_past_the_end_is_clamped() {
        let err = error("x +", Some(Span::new(3, 10)), vec![]);
        assert_eq!(
            render_error(&err, false),
            "  line 1, in <module>\n    x +\n       ^\nNameError: name 'q' is not defined"
        );
    }
}
