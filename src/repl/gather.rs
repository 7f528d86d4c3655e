//! Statement gathering: which typed lines make up one statement.
//!
//! Shared by the interactive REPL and transcript mode so that a transcript
//! replays exactly what a person typing the same lines would see. It knows
//! nothing of terminals; it asks a completeness oracle (normally
//! `Session::is_complete`) whether the text so far is a whole statement.

use crate::eval::session::Completeness;

/// What the frontend should do after one more line was fed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Feed {
    /// A blank line with nothing pending: show the primary prompt again.
    Empty,
    /// The statement goes on: show the continuation prompt, pre-filled with `indent`.
    More { indent: String },
    /// A whole statement, ready to evaluate (lines joined by `\n`, with a final `\n`).
    Ready(String),
}

/// Collects the lines of one statement.
#[derive(Debug, Clone, Default)]
pub struct StatementGatherer {
    lines: Vec<String>,
}

impl StatementGatherer {
    pub fn new() -> StatementGatherer {
        StatementGatherer::default()
    }

    /// True when no statement is in progress (the next prompt is `>>> `).
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The text of the statement so far (what completion sees before the current line).
    pub fn pending(&self) -> String {
        join_lines(&self.lines)
    }

    /// Drop the statement in progress (Ctrl-C at the prompt).
    pub fn clear(&mut self) {
        self.lines.clear();
    }

    /// Feed one line (without its newline). `is_complete` answers whether a
    /// piece of source is a whole statement.
    ///
    /// The rules, like IPython's:
    /// - a blank line with nothing pending does nothing;
    /// - a blank line ends a pending statement, except inside an open bracket
    ///   or after a backslash (the oracle then says Incomplete with no indent);
    /// - a source that can never become valid is handed over at once, so the
    ///   error shows now rather than after more typing;
    /// - a compound statement (more than one line, last one indented) waits for
    ///   a blank line even when it already parses, so another body line can follow.
    pub fn push_line(&mut self, line: &str, is_complete: impl Fn(&str) -> Completeness) -> Feed {
        if line.trim().is_empty() {
            if self.lines.is_empty() {
                return Feed::Empty;
            }
            let source = self.pending();
            if let Completeness::Incomplete { indent } = is_complete(&source) {
                if indent.is_empty() && !self.last_line_is_indented() {
                    self.lines.push(String::new());
                    return Feed::More { indent };
                }
            }
            return self.take_ready();
        }

        self.lines.push(line.to_string());
        let source = self.pending();
        match is_complete(&source) {
            Completeness::Invalid => self.take_ready(),
            Completeness::Incomplete { indent } => Feed::More { indent },
            Completeness::Complete => {
                if self.lines.len() > 1 && self.last_line_is_indented() {
                    Feed::More {
                        indent: leading_whitespace(line).to_string(),
                    }
                } else {
                    self.take_ready()
                }
            }
        }
    }

    /// End of input: whatever is pending, as one statement.
    pub fn finish(&mut self) -> Option<String> {
        if self.lines.is_empty() {
            None
        } else {
            match self.take_ready() {
                Feed::Ready(source) => Some(source),
                Feed::Empty | Feed::More { .. } => None,
            }
        }
    }

    fn last_line_is_indented(&self) -> bool {
        self.lines
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| !leading_whitespace(l).is_empty())
    }

    fn take_ready(&mut self) -> Feed {
        // Blank lines kept inside brackets are dropped from the end only.
        while self.lines.last().is_some_and(|l| l.trim().is_empty()) {
            self.lines.pop();
        }
        let source = self.pending();
        self.lines.clear();
        if source.is_empty() {
            Feed::Empty
        } else {
            Feed::Ready(source)
        }
    }
}

fn join_lines(lines: &[String]) -> String {
    let mut source = String::new();
    for line in lines {
        source.push_str(line);
        source.push('\n');
    }
    source
}

fn leading_whitespace(line: &str) -> &str {
    let trimmed = line.trim_start_matches([' ', '\t']);
    &line[..line.len() - trimmed.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for `Session::is_complete` good enough for these rules:
    /// a trailing `:` opens a block, unbalanced brackets or a trailing `\`
    /// continue, and `)` without `(` is invalid.
    fn oracle(source: &str) -> Completeness {
        let depth: i32 = source
            .chars()
            .map(|c| match c {
                '(' | '[' | '{' => 1,
                ')' | ']' | '}' => -1,
                _ => 0,
            })
            .sum();
        let last = source.lines().last().unwrap_or("");
        if depth < 0 {
            Completeness::Invalid
        } else if depth > 0 || last.ends_with('\\') {
            Completeness::Incomplete {
                indent: String::new(),
            }
        } else if last.trim_end().ends_with(':') {
            Completeness::Incomplete {
                indent: format!("{}    ", leading_whitespace(last)),
            }
        } else {
            Completeness::Complete
        }
    }

    fn feed_all(lines: &[&str]) -> Vec<Feed> {
        let mut gatherer = StatementGatherer::new();
        lines
            .iter()
            .map(|line| gatherer.push_line(line, oracle))
            .collect()
    }

    fn more(indent: &str) -> Feed {
        Feed::More {
            indent: indent.to_string(),
        }
    }

    #[test]
    fn simple_statement_is_ready_at_once() {
        assert_eq!(feed_all(&["x = 1"]), vec![Feed::Ready("x = 1\n".into())]);
    }

    #[test]
    fn blank_line_with_nothing_pending_is_empty() {
        assert_eq!(feed_all(&["", "   "]), vec![Feed::Empty, Feed::Empty]);
    }

    #[test]
    fn def_waits_for_blank_line_and_suggests_indent() {
        assert_eq!(
            feed_all(&["def f(x):", "    y = x + 1", "    return y", ""]),
            vec![
                more("    "),
                more("    "),
                more("    "),
                Feed::Ready("def f(x):\n    y = x + 1\n    return y\n".into()),
            ]
        );
    }

    #[test]
    fn nested_block_suggests_deeper_indent() {
        assert_eq!(
            feed_all(&["for i in range(3):", "    if i:", "        print(i)", ""]),
            vec![
                more("    "),
                more("        "),
                more("        "),
                Feed::Ready("for i in range(3):\n    if i:\n        print(i)\n".into()),
            ]
        );
    }

    #[test]
    fn blank_line_inside_brackets_continues() {
        assert_eq!(
            feed_all(&["x = [1,", "", "2]"]),
            vec![more(""), more(""), Feed::Ready("x = [1,\n\n2]\n".into())]
        );
    }

    #[test]
    fn bracket_continuation_ends_without_blank_line() {
        assert_eq!(
            feed_all(&["print(1,", "2)"]),
            vec![more(""), Feed::Ready("print(1,\n2)\n".into())]
        );
    }

    #[test]
    fn blank_line_after_block_header_hands_over_for_the_error() {
        assert_eq!(
            feed_all(&["def f():", ""]),
            vec![more("    "), Feed::Ready("def f():\n".into())]
        );
    }

    #[test]
    fn invalid_source_is_handed_over_at_once() {
        assert_eq!(feed_all(&["x = )"]), vec![Feed::Ready("x = )\n".into())]);
    }

    #[test]
    fn gatherer_is_reusable_after_ready() {
        assert_eq!(
            feed_all(&["a = 1", "b = 2"]),
            vec![Feed::Ready("a = 1\n".into()), Feed::Ready("b = 2\n".into())]
        );
    }

    #[test]
    fn finish_flushes_pending_block() {
        let mut gatherer = StatementGatherer::new();
        gatherer.push_line("def f():", oracle);
        gatherer.push_line("    return 1", oracle);
        assert_eq!(gatherer.finish(), Some("def f():\n    return 1\n".into()));
        assert!(gatherer.is_empty());
        assert_eq!(gatherer.finish(), None);
    }

    #[test]
    fn clear_drops_pending_lines() {
        let mut gatherer = StatementGatherer::new();
        gatherer.push_line("if True:", oracle);
        assert_eq!(gatherer.pending(), "if True:\n");
        gatherer.clear();
        assert!(gatherer.is_empty());
        assert_eq!(gatherer.push_line("1", oracle), Feed::Ready("1\n".into()));
    }

    #[test]
    fn tabs_count_as_indentation() {
        assert_eq!(
            feed_all(&["if x:", "\ty", ""]),
            vec![more("    "), more("\t"), Feed::Ready("if x:\n\ty\n".into())]
        );
    }
}
