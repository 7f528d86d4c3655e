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
    /// The exception shown before this one (PEP 3134): its cause, or the one being handled.
    pub chained: Option<Box<Chained>>,
}

/// An exception chained to the one after it, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chained {
    pub traceback: Traceback,
    /// `raise ... from` it (else it was being handled when the next was raised).
    pub cause: bool,
}

/// CPython's line between two chained exceptions, the next one raised `from` the previous
/// (`cause`) or while handling it.
fn chain_message(cause: bool) -> &'static str {
    if cause {
        "The above exception was the direct cause of the following exception:"
    } else {
        "During handling of the above exception, another exception occurred:"
    }
}

/// The chain ending in `err`, oldest first, each with the line that leads to the next.
pub(super) fn chain(err: &Traceback) -> Vec<(&Traceback, Option<&'static str>)> {
    let mut links = vec![(err, None)];
    let mut cur = err;
    while let Some(c) = &cur.chained {
        links.push((&c.traceback, Some(chain_message(c.cause))));
        cur = &c.traceback;
    }
    links.reverse();
    links
}

/// One level of a traceback: the function (`<module>` at top level), the
/// source text that level was running and the byte span in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceFrame {
    pub function: String,
    pub source: String,
    pub span: Span,
    /// The file `source` was read from, when it was one (a script; a library module).
    pub file: Option<String>,
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
pub(super) fn is_syntax_error(ename: &str) -> bool {
    matches!(ename, "SyntaxError" | "IndentationError" | "TabError")
}

/// The report a user sees for `err`, after the exceptions chained to it; `color` adds ANSI
/// colours.
pub fn render_error(err: &Traceback, color: bool) -> String {
    let mut out = String::new();
    for (tb, next) in chain(err) {
        out.push_str(&render_one(tb, color));
        if let Some(line) = next {
            out.push_str(&format!("\n\n{line}\n\n"));
        }
    }
    out
}

fn render_one(err: &Traceback, color: bool) -> String {
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
        // A frame without a function is a compiled text's syntax error (`compile`, `exec`).
        let location = if is_syntax_error(&err.ename)
            && (err.frames.len() == 1 || frame.function.is_empty())
        {
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

/// IPython's 16-colour ANSI foreground codes, reset with 39 as IPython does
/// (so a colour never leaks past its token).
fn paint(code: u8, text: &str, color: bool) -> String {
    if color && !text.is_empty() {
        format!("\x1b[{code}m{text}\x1b[39m")
    } else {
        text.to_string()
    }
}

const RED: u8 = 31;
const GREEN: u8 = 32;
const CYAN: u8 = 36;

/// Lines of context IPython shows around the failing line.
const LINES_BEFORE: usize = 4;
const LINES_AFTER: usize = 3;

/// The traceback as ipykernel sends it (one list entry per part): a rule, the
/// `ename ... Traceback (most recent call last)` header, one entry per frame
/// (`Cell In[n], line k[, in f]` and the numbered lines around it, the failing
/// one marked `---->`), then `ename: evalue`. `cell_label` names the cell a
/// frame's source came from (`In[3]`); syntax errors take IPython's short form.
pub fn render_ipython(
    tb: &Traceback,
    cell_label: &dyn Fn(&str) -> String,
    color: bool,
) -> Vec<String> {
    // IPython draws the rule once, above the first exception of a chain.
    let mut out = Vec::new();
    for (i, (tb, next)) in chain(tb).into_iter().enumerate() {
        let part = ipython_one(tb, cell_label, color);
        let skip = usize::from(i > 0 && part.len() > 1 && !tb.frames.is_empty());
        out.extend(part.into_iter().skip(skip));
        if let Some(line) = next {
            out.push(format!("\n{line}\n"));
        }
    }
    out
}

fn ipython_one(tb: &Traceback, cell_label: &dyn Fn(&str) -> String, color: bool) -> Vec<String> {
    let last = if tb.evalue.is_empty() {
        format!("{}: ", paint(RED, &tb.ename, color))
    } else {
        format!("{}: {}", paint(RED, &tb.ename, color), tb.evalue)
    };
    if is_syntax_error(&tb.ename) {
        if let [frame] = tb.frames.as_slice() {
            let (line_no, text, carets) = caret_line(&frame.source, frame.span);
            return vec![format!(
                "  {}{}{}\n{}\n    {carets}\n{last}\n",
                paint(CYAN, "Cell ", color),
                paint(GREEN, &cell_label(&frame.source), color),
                paint(GREEN, &format!(", line {line_no}"), color),
                paint(RED, &format!("    {text}"), color),
            )];
        }
    }
    if tb.frames.is_empty() {
        return vec![last];
    }
    const TITLE: &str = "Traceback (most recent call last)";
    let mut out = vec![
        paint(RED, &"-".repeat(75), color),
        format!(
            "{}{}{TITLE}",
            paint(RED, &tb.ename, color),
            " ".repeat((75 - TITLE.len()).saturating_sub(tb.ename.chars().count()))
        ),
    ];
    let mut i = 0;
    while i < tb.frames.len() {
        let frame = &tb.frames[i];
        let run = tb.frames[i..].iter().take_while(|f| *f == frame).count();
        out.push(ipython_frame(frame, cell_label, color));
        if run > 3 {
            // A recursion: show it three times, then count the rest as IPython does.
            out.push(ipython_frame(frame, cell_label, color));
            let (line_no, _, _) = locate(&frame.source, frame.span);
            out.push(format!(
                "    {}\n",
                paint(
                    RED,
                    &format!(
                        "[... skipping similar frames: {} at line {line_no} ({} times)]",
                        frame.function,
                        run - 3
                    ),
                    color
                )
            ));
            out.push(ipython_frame(frame, cell_label, color));
        } else {
            for _ in 1..run {
                out.push(ipython_frame(frame, cell_label, color));
            }
        }
        i += run;
    }
    out.push(last);
    out
}

/// One frame in IPython's context form.
fn ipython_frame(frame: &TraceFrame, cell_label: &dyn Fn(&str) -> String, color: bool) -> String {
    let (line_no, _, _) = locate(&frame.source, frame.span);
    let mut text = format!(
        "{}{}",
        paint(CYAN, "Cell ", color),
        paint(
            GREEN,
            &format!("{}, line {line_no}", cell_label(&frame.source)),
            color
        )
    );
    if frame.function != "<module>" && !frame.function.is_empty() {
        text.push_str(&format!(", in {}", paint(CYAN, &frame.function, color)));
    }
    text.push('\n');
    let lines: Vec<&str> = frame.source.lines().collect();
    let first = line_no.saturating_sub(LINES_BEFORE).max(1);
    let end = (line_no + LINES_AFTER).min(lines.len());
    for n in first..=end {
        let code = lines.get(n - 1).copied().unwrap_or("");
        if n == line_no {
            let arrow = format!(
                "{}> ",
                "-".repeat(7usize.saturating_sub(n.to_string().len() + 2))
            );
            text.push_str(&format!(
                "{}{} {code}\n",
                paint(GREEN, &arrow, color),
                paint(GREEN, &n.to_string(), color)
            ));
        } else {
            text.push_str(&format!(
                "{} {code}\n",
                paint(GREEN, &format!("{n:>7}"), color)
            ));
        }
    }
    text
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
            chained: None,
            ename: "NameError".into(),
            evalue: "name 'q' is not defined".into(),
            frames: names
                .into_iter()
                .zip(spans)
                .map(|(function, span)| TraceFrame {
                    function,
                    source: source.into(),
                    span,
                    file: None,
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

    /// IPython 8's list for `try: 1/0` / `except Exception as e: raise ValueError('bad')`:
    /// one rule, then each exception's header, frames and last line, the separator between.
    #[test]
    fn a_chain_in_ipythons_form_has_one_rule_and_the_separator_between() {
        let src = "try:\n    1/0\nexcept Exception as e:\n    raise ValueError('bad')";
        let at = |text: &str| {
            let start = src.find(text).unwrap_or(0);
            TraceFrame {
                function: "<module>".into(),
                source: src.into(),
                span: Span::new(start, start + text.len()),
                file: None,
            }
        };
        let context = Traceback {
            ename: "ZeroDivisionError".into(),
            evalue: "division by zero".into(),
            frames: vec![at("1/0")],
            chained: None,
        };
        let err = Traceback {
            ename: "ValueError".into(),
            evalue: "bad".into(),
            frames: vec![at("raise ValueError('bad')")],
            chained: Some(Box::new(Chained {
                traceback: context,
                cause: false,
            })),
        };
        let label = |_: &str| "In[1]".to_string();
        assert_eq!(
            render_ipython(&err, &label, false),
            vec![
                "-".repeat(75),
                "ZeroDivisionError                         Traceback (most recent call last)"
                    .to_string(),
                "Cell In[1], line 2\n      1 try:\n----> 2     1/0\n      3 except Exception as e:\n      4     raise ValueError('bad')\n".to_string(),
                "ZeroDivisionError: division by zero".to_string(),
                "\nDuring handling of the above exception, another exception occurred:\n"
                    .to_string(),
                "ValueError                                Traceback (most recent call last)"
                    .to_string(),
                "Cell In[1], line 4\n      1 try:\n      2     1/0\n      3 except Exception as e:\n----> 4     raise ValueError('bad')\n".to_string(),
                "ValueError: bad".to_string(),
            ]
        );
        assert_eq!(
            render_error(&err, false),
            "  line 2, in <module>\n    1/0\n    ^^^\nZeroDivisionError: division by zero\n\n\
             During handling of the above exception, another exception occurred:\n\n  \
             line 4, in <module>\n    raise ValueError('bad')\n    ^^^^^^^^^^^^^^^^^^^^^^^\n\
             ValueError: bad"
        );
    }

    #[test]
    fn span_at_the_end_of_input() {
        let err = Traceback {
            chained: None,
            ename: "SyntaxError".into(),
            evalue: "unexpected end of input".into(),
            frames: vec![TraceFrame {
                function: "<module>".into(),
                source: "x = (1 +".into(),
                span: Span::new(8, 8),
                file: None,
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
            chained: None,
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

    fn label(_: &str) -> String {
        "In[4]".to_string()
    }

    #[test]
    fn ipython_form_has_header_cell_frames_and_context() {
        let src = "def f(x):\n    return x + q\nf(1)";
        let q = src.find('q').unwrap_or(0);
        let call = src.rfind("f(1)").unwrap_or(0);
        let err = error(
            src,
            Some(Span::new(q, q + 1)),
            vec![("f".into(), Span::new(call, call + 4))],
        );
        let tb = render_ipython(&err, &label, false);
        assert_eq!(
            tb,
            vec![
                "-".repeat(75),
                "NameError                                 Traceback (most recent call last)".to_string(),
                "Cell In[4], line 3\n      1 def f(x):\n      2     return x + q\n----> 3 f(1)\n".to_string(),
                "Cell In[4], line 2, in f\n      1 def f(x):\n----> 2     return x + q\n      3 f(1)\n".to_string(),
                "NameError: name 'q' is not defined".to_string(),
            ]
        );
        let coloured = render_ipython(&err, &label, true);
        assert!(coloured[1].starts_with("\x1b[31mNameError\x1b[39m"));
        let plain: Vec<String> = coloured.iter().map(|l| strip_ansi(l)).collect();
        assert_eq!(plain, tb);
    }

    #[test]
    fn ipython_form_of_a_syntax_error_and_of_recursion() {
        let err = Traceback {
            chained: None,
            ename: "SyntaxError".into(),
            evalue: "unexpected end of input".into(),
            frames: vec![TraceFrame {
                function: "<module>".into(),
                source: "x = (1 +".into(),
                span: Span::new(8, 8),
                file: None,
            }],
        };
        assert_eq!(
            render_ipython(&err, &label, false),
            vec!["  Cell In[4], line 1\n    x = (1 +\n            ^\nSyntaxError: unexpected end of input\n"]
        );
        let src = "def g(n):\n    return g(n)\ng(1)";
        let inner = src.find("g(n)\ng").unwrap_or(0);
        let mut frames = vec![("g".to_string(), Span::new(30, 34))];
        frames.extend((0..9).map(|_| ("g".to_string(), Span::new(inner, inner + 4))));
        let mut err = error(src, None, frames);
        err.ename = "RecursionError".into();
        let tb = render_ipython(&err, &label, false);
        assert_eq!(tb.len(), 2 + 1 + 4 + 1, "{tb:#?}");
        assert_eq!(
            tb[5],
            "    [... skipping similar frames: g at line 2 (6 times)]\n"
        );
    }
}
