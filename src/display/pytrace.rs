//! Tracebacks as CPython 3.11 prints them: what a script's uncaught error shows and what the
//! `traceback` module formats.
//!
//! ```text
//! Traceback (most recent call last):
//!   File "/home/me/train.py", line 4, in <module>
//!     loss = model(x) / n
//!            ~~~~~~~~~^~~
//! ZeroDivisionError: division by zero
//! ```
//!
//! The layout follows CPython's `StackSummary.format_frame_summary`: the source line, then a
//! caret line when the failing expression is not the whole line (`~` under a binary
//! operation's operands and `^` under its operator, `^` under a subscript's brackets: 3.11's
//! anchors). A frame whose file has no readable lines (`<stdin>`, `<string>`) shows no source.
use unicode_width::UnicodeWidthChar;

use super::error::{chain, is_syntax_error, Traceback};
use crate::lang::ast::ExprKind;
use crate::lang::span::{locate, Span};

/// One frame as CPython's `traceback` module shows it (its `FrameSummary`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub file: String,
    pub line: usize,
    pub name: String,
    /// The whole source line (empty when the file has no readable lines).
    pub text: String,
    /// Character offsets of the failing expression in `text`; the end is None when it goes on
    /// past the line.
    cols: Option<(usize, Option<usize>)>,
    /// The expression's source, for the anchors of a binary operation or a subscript.
    segment: String,
}

impl Entry {
    /// The frame of `function` in `file` whose failing expression is `span` of `source`.
    pub fn at(file: &str, function: &str, source: &str, span: Span) -> Entry {
        let (line, col, text) = locate(source, span);
        // CPython reads lines through linecache: pseudo-files (`<stdin>`) have none.
        let readable = !file.starts_with('<');
        let start = span.start.min(source.len());
        let end = span.end.clamp(start, source.len());
        let segment = source.get(start..end).unwrap_or("");
        let one_line = !segment.contains('\n');
        Entry {
            file: file.to_string(),
            line,
            name: function.to_string(),
            text: if readable {
                text.to_string()
            } else {
                String::new()
            },
            cols: readable.then(|| {
                let from = col - 1;
                (from, one_line.then(|| from + segment.chars().count()))
            }),
            segment: if one_line {
                segment.to_string()
            } else {
                String::new()
            },
        }
    }

    /// A frame given as `(file, line, name, text)` (`traceback.format_list`): no carets.
    pub fn listed(file: String, line: usize, name: String, text: String) -> Entry {
        Entry {
            file,
            line,
            name,
            text,
            cols: None,
            segment: String::new(),
        }
    }
}

fn display_width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// CPython 3.11's anchors in a one-line expression: a binary operation's operator, or a
/// subscript's brackets, as character offsets in `segment` (`_extract_caret_anchors_from_line_segment`).
fn anchors(segment: &str) -> Option<(usize, usize)> {
    let expr = crate::lang::parse_expression(segment).ok()?;
    let chars: Vec<char> = segment.chars().collect();
    let char_at = |byte: usize| segment.get(..byte).map_or(0, |s| s.chars().count());
    match &expr.kind {
        ExprKind::Binary { left, right, .. } => {
            let op_start = char_at(left.span.end);
            let op_end = char_at(right.span.start);
            let op: String = chars.get(op_start..op_end).unwrap_or(&[]).iter().collect();
            let lead = op.chars().count() - op.trim_start().chars().count();
            let mut left_anchor = op_start + lead;
            let mut right_anchor = left_anchor + 1;
            if op.chars().nth(lead + 1).is_some_and(|c| !c.is_whitespace()) {
                right_anchor += 1;
            }
            while chars
                .get(left_anchor)
                .is_some_and(|c| c.is_whitespace() || *c == ')' || *c == '#')
            {
                left_anchor += 1;
                right_anchor += 1;
            }
            Some((left_anchor, right_anchor))
        }
        ExprKind::Subscript { value, index } => {
            let mut left_anchor = char_at(value.span.end);
            let mut right_anchor = char_at(index.span.end) + 1;
            while chars.get(left_anchor).is_some_and(|c| *c != '[') {
                left_anchor += 1;
            }
            while chars.get(right_anchor).is_some_and(|c| *c != ']') {
                right_anchor += 1;
            }
            if right_anchor < chars.len() {
                right_anchor += 1;
            }
            Some((left_anchor, right_anchor))
        }
        _ => None,
    }
}

/// One frame's lines, as `StackSummary.format_frame_summary`.
pub fn format_entry(e: &Entry) -> String {
    let mut row = format!("  File \"{}\", line {}, in {}\n", e.file, e.line, e.name);
    let stripped = e.text.trim();
    if stripped.is_empty() {
        return row;
    }
    row.push_str(&format!("    {stripped}\n"));
    let Some((start, end)) = e.cols else {
        return row;
    };
    let line: Vec<char> = e.text.chars().collect();
    let leading = line.len() - e.text.trim_start().chars().count();
    let (end, anchors) = match end {
        Some(end) => (end, anchors(&e.segment)),
        None => (e.text.trim_end().chars().count(), None),
    };
    let stripped_len = stripped.chars().count();
    let spans_operator = anchors.is_some_and(|(l, r)| r > l);
    if end.saturating_sub(start) >= stripped_len && !spans_operator {
        return row;
    }
    let width_to = |n: usize| display_width(&line.iter().take(n).collect::<String>());
    let (dp_start, dp_end) = (width_to(start), width_to(end));
    row.push_str("    ");
    row.push_str(&" ".repeat(dp_start.saturating_sub(leading)));
    match anchors {
        Some((left, right)) => {
            let seg: Vec<char> = e.segment.chars().collect();
            let seg_width = |n: usize| display_width(&seg.iter().take(n).collect::<String>());
            let (dl, dr) = (seg_width(left), seg_width(right));
            row.push_str(&"~".repeat(dl));
            row.push_str(&"^".repeat(dr.saturating_sub(dl)));
            row.push_str(&"~".repeat((dp_end - dp_start).saturating_sub(dr)));
        }
        None => row.push_str(&"^".repeat(dp_end.saturating_sub(dp_start))),
    }
    row.push('\n');
    row
}

/// CPython shows a line repeated by recursion three times, then counts the rest.
const RECURSIVE_CUTOFF: usize = 3;

/// `StackSummary.format`: one string per frame, recursion folded.
pub fn format_entries(entries: &[Entry]) -> Vec<String> {
    let mut out = Vec::new();
    let mut last: Option<(&str, usize, &str)> = None;
    let mut count = 0;
    let repeated = |count: usize| {
        let more = count - RECURSIVE_CUTOFF;
        format!(
            "  [Previous line repeated {more} more time{}]\n",
            if more > 1 { "s" } else { "" }
        )
    };
    for e in entries {
        let key = (e.file.as_str(), e.line, e.name.as_str());
        if last != Some(key) {
            if count > RECURSIVE_CUTOFF {
                out.push(repeated(count));
            }
            last = Some(key);
            count = 0;
        }
        count += 1;
        if count > RECURSIVE_CUTOFF {
            continue;
        }
        out.push(format_entry(e));
    }
    if count > RECURSIVE_CUTOFF {
        out.push(repeated(count));
    }
    out
}

/// CPython's header of a traceback's frames.
pub const HEADER: &str = "Traceback (most recent call last):\n";

/// `err` and the exceptions chained to it as CPython prints an uncaught error: frames in
/// `file` (None: `<stdin>`) as [`format_entries`] lays them out, then `Type: message`.
pub fn render_python(err: &Traceback) -> String {
    let mut out = String::new();
    for (tb, next) in chain(err) {
        let file_of =
            |f: &super::error::TraceFrame| f.file.clone().unwrap_or_else(|| "<stdin>".into());
        if is_syntax_error(&tb.ename) {
            // A syntax error points at source, not at a running frame: no header, no `in`.
            if let Some(f) = tb.frames.last() {
                let e = Entry::at(&file_of(f), "", &f.source, f.span);
                out.push_str(&format!("  File \"{}\", line {}\n", e.file, e.line));
                // CPython shows no caret under an unexpected indent.
                let caret = tb.evalue != "unexpected indent";
                if !e.text.trim().is_empty() && !caret {
                    out.push_str(&format!("    {}\n", e.text.trim()));
                } else if !e.text.trim().is_empty() {
                    let (start, end) = e.cols.unwrap_or((0, None));
                    let width = match end {
                        // CPython marks where the indentation went wrong with one caret.
                        Some(end) if tb.ename != "IndentationError" => {
                            end.saturating_sub(start).max(1)
                        }
                        _ => 1,
                    };
                    let leading = e.text.chars().count() - e.text.trim_start().chars().count();
                    out.push_str(&format!(
                        "    {}\n    {}{}\n",
                        e.text.trim(),
                        " ".repeat(start.saturating_sub(leading)),
                        "^".repeat(width)
                    ));
                }
            }
        } else if !tb.frames.is_empty() {
            out.push_str(HEADER);
            let entries: Vec<Entry> = tb
                .frames
                .iter()
                .map(|f| Entry::at(&file_of(f), &f.function, &f.source, f.span))
                .collect();
            out.push_str(&format_entries(&entries).concat());
        }
        if tb.evalue.is_empty() {
            out.push_str(&tb.ename);
        } else {
            out.push_str(&format!("{}: {}", tb.ename, tb.evalue));
        }
        if let Some(line) = next {
            out.push_str(&format!("\n\n{line}\n\n"));
        }
    }
    out
}
