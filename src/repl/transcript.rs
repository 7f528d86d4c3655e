//! Transcript mode (`devarray --transcript`): replays the input lines of a
//! doctest-style transcript through the REPL's statement gathering and prints
//! the transcript as it really comes out.
//!
//! Input lines are those starting with `>>> ` or `... ` (or a bare `>>>` /
//! `...`, since editors strip trailing spaces); every other line is expected
//! output and is ignored, except the comment lines (`#`) before the first
//! prompt, which are copied through so that a transcript file's expected
//! output is the file itself. Errors are rendered plain into the same stream
//! and evaluation goes on, which is how a transcript shows that the session
//! keeps its variables after an error.

use std::io::Write;

use super::gather::{Feed, StatementGatherer};
use super::output::MergedSink;
use super::{Evaluator, PRIMARY_PROMPT, SECONDARY_PROMPT};

/// One line of a transcript file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranscriptLine<'a> {
    /// `>>> code`: starts a statement.
    Primary(&'a str),
    /// `... code`: continues one.
    Continuation(&'a str),
    /// Anything else: expected output (or a preamble comment).
    Other(&'a str),
}

/// Classifies one line (without its line ending).
pub fn classify(line: &str) -> TranscriptLine<'_> {
    for (prompt, is_primary) in [(PRIMARY_PROMPT, true), (SECONDARY_PROMPT, false)] {
        let bare = prompt.trim_end();
        let code = line
            .strip_prefix(prompt)
            .or_else(|| (line.trim_end() == bare).then_some(""));
        if let Some(code) = code {
            return if is_primary {
                TranscriptLine::Primary(code)
            } else {
                TranscriptLine::Continuation(code)
            };
        }
    }
    TranscriptLine::Other(line)
}

/// Runs `input` as a transcript in `session`, writing the transcript with
/// real outputs to `out`. Returns the writer.
pub fn run_transcript<W: Write>(input: &str, session: &mut dyn Evaluator, out: W) -> W {
    let mut sink = MergedSink::new(out);
    let mut gatherer = StatementGatherer::new();
    let mut in_preamble = true;

    for line in input.lines() {
        let code = match classify(line) {
            TranscriptLine::Other(text) => {
                if in_preamble && text.starts_with('#') {
                    sink.write(text);
                    sink.write("\n");
                }
                continue;
            }
            TranscriptLine::Primary(code) => {
                // A new `>>> ` ends a block that had no closing blank line,
                // as in a doctest.
                if let Some(source) = gatherer.finish() {
                    run_statement(session, &source, &mut sink);
                }
                code
            }
            TranscriptLine::Continuation(code) => code,
        };
        in_preamble = false;

        // Echo with the prompt the REPL would show in this state, so a file
        // whose prompts disagree with the REPL's gathering shows up in a diff.
        sink.finish_line();
        let prompt = if gatherer.is_empty() {
            PRIMARY_PROMPT
        } else {
            SECONDARY_PROMPT
        };
        let echoed = format!("{prompt}{code}");
        sink.write(if code.is_empty() {
            echoed.trim_end()
        } else {
            &echoed
        });
        sink.write("\n");

        if let Feed::Ready(source) = gatherer.push_line(code, |src| session.is_complete(src)) {
            run_statement(session, &source, &mut sink);
        }
    }
    if let Some(source) = gatherer.finish() {
        run_statement(session, &source, &mut sink);
    }
    sink.finish_line();
    sink.into_inner()
}

fn run_statement<W: Write>(session: &mut dyn Evaluator, source: &str, sink: &mut MergedSink<W>) {
    // A stale interrupt (there is no Ctrl-C handler in this mode) must not
    // cancel the next statement.
    session.interrupt_handle().take();
    if let Err(error) = session.eval_with(source, sink) {
        sink.finish_line();
        sink.write(&error.render(false));
        sink.write("\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repl::test_support::FakeEvaluator;

    #[test]
    fn classifies_prompts_and_output() {
        assert_eq!(classify(">>> x = 1"), TranscriptLine::Primary("x = 1"));
        assert_eq!(classify("...     y"), TranscriptLine::Continuation("    y"));
        assert_eq!(classify(">>>"), TranscriptLine::Primary(""));
        assert_eq!(classify("... "), TranscriptLine::Continuation(""));
        assert_eq!(classify("..."), TranscriptLine::Continuation(""));
        assert_eq!(classify(">>>x"), TranscriptLine::Other(">>>x"));
        assert_eq!(classify("...x"), TranscriptLine::Other("...x"));
        assert_eq!(classify("[1. 2.]"), TranscriptLine::Other("[1. 2.]"));
    }

    fn transcript(input: &str) -> (String, Vec<String>) {
        let mut evaluator = FakeEvaluator::default();
        let out = run_transcript(input, &mut evaluator, Vec::new());
        (String::from_utf8(out).unwrap_or_default(), evaluator.ran)
    }

    #[test]
    fn keeps_preamble_comments_and_drops_expected_output() {
        let (out, ran) =
            transcript("# env: DEVARRAY_SIM_GPUS=2\n# about\n>>>\nstale output\n# later\n");
        assert_eq!(out, "# env: DEVARRAY_SIM_GPUS=2\n# about\n>>>\n");
        assert!(ran.is_empty());
    }

    #[test]
    fn errors_go_inline_and_evaluation_continues() {
        let (out, ran) = transcript(">>> 1\nold\n>>> boom\nold\n>>> 2\n");
        assert_eq!(
            out,
            ">>> 1\n1\n>>> boom\nValueError: boom was asked for\n>>> 2\n2\n"
        );
        assert_eq!(ran, ["1\n", "boom\n", "2\n"]);
    }

    #[test]
    fn block_ends_at_blank_continuation_line() {
        let (out, ran) = transcript(">>> def f():\n...     print(1)\n...\n>>> f()\n");
        assert_eq!(out, ">>> def f():\n...     print(1)\n...\n>>> f()\nf()\n");
        assert_eq!(ran, ["def f():\n    print(1)\n", "f()\n"]);
    }

    #[test]
    fn new_primary_prompt_ends_an_open_block() {
        let (out, ran) = transcript(">>> if x:\n...     y\n>>> z\n");
        assert_eq!(out, ">>> if x:\n...     y\n>>> z\nz\n");
        assert_eq!(ran, ["if x:\n    y\n", "z\n"]);
    }

    #[test]
    fn partial_output_line_is_ended_before_the_next_prompt() {
        let (out, _) = transcript(">>> print('a', end='')\n>>> 2\n");
        assert_eq!(out, ">>> print('a', end='')\na\n>>> 2\n2\n");
    }

    #[test]
    fn prompt_follows_repl_state_not_the_file() {
        // `... 2` after a complete statement is a new statement in the REPL.
        let (out, _) = transcript(">>> 1\n... 2\n");
        assert_eq!(out, ">>> 1\n1\n>>> 2\n2\n");
    }
}
