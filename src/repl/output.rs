//! Output sinks that stream a session's output to the terminal or a writer.

use std::io::{self, IsTerminal, Write};

use crate::eval::session::{
    DisplayData, EvalError, InterruptHandle, OutputSink, StdinReply, StdinRequest,
};

/// Whether to colour text for a stream: only on a terminal, and never when
/// `NO_COLOR` is set to a non-empty value (<https://no-color.org>).
pub fn use_color(stream_is_terminal: bool) -> bool {
    stream_is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Colour decision for error reports written to stderr.
pub fn stderr_color() -> bool {
    use_color(io::stderr().is_terminal())
}

/// Streams to the process's stdout and stderr, flushing each piece so output
/// appears as it is produced and the two streams interleave in order.
#[derive(Debug)]
pub struct StdioSink {
    at_line_start: bool,
}

impl Default for StdioSink {
    fn default() -> Self {
        StdioSink {
            at_line_start: true,
        }
    }
}

impl StdioSink {
    pub fn new() -> StdioSink {
        StdioSink::default()
    }

    /// Ends a partial output line (a `print(..., end="")`) so what follows,
    /// a prompt or an error report, starts at the left margin.
    pub fn finish_line(&mut self) {
        if !self.at_line_start {
            self.stdout("\n");
        }
    }

    /// Writes a script's uncaught error to stderr as CPython prints it.
    pub fn report_error_python(&mut self, error: &EvalError) {
        self.finish_line();
        let mut report = error.render_python();
        report.push('\n');
        self.stderr(&report);
    }

    /// Writes an uncaught error's report to stderr.
    pub fn report_error(&mut self, error: &EvalError, color: bool) {
        self.finish_line();
        let mut report = error.render(color);
        report.push('\n');
        self.stderr(&report);
    }

    fn note_written(&mut self, text: &str) {
        if let Some(last) = text.chars().last() {
            self.at_line_start = last == '\n';
        }
    }
}

// Write errors (a closed pipe, a full disk) are ignored on purpose: output is
// best effort and must never abort evaluation or panic.
impl OutputSink for StdioSink {
    fn stdout(&mut self, text: &str) {
        let mut out = io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.note_written(text);
    }

    fn stderr(&mut self, text: &str) {
        let mut err = io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
        self.note_written(text);
    }

    fn display(&mut self, data: &DisplayData, _is_result: bool) {
        let mut text = String::with_capacity(data.plain.len() + 1);
        text.push_str(&data.plain);
        text.push('\n');
        self.stdout(&text);
    }

    fn read_stdin(&mut self, request: StdinRequest<'_>, interrupt: &InterruptHandle) -> StdinReply {
        let reply = super::stdin::read(self, request, interrupt);
        // A typed line's newline was echoed; a piped one leaves the prompt's line as CPython
        // leaves it (what follows is not moved to a new line).
        self.at_line_start = true;
        reply
    }
}

/// Sends everything, stdout, stderr and error reports, into one writer, as a
/// transcript shows it.
#[derive(Debug)]
pub struct MergedSink<W: Write> {
    writer: W,
    at_line_start: bool,
}

impl<W: Write> MergedSink<W> {
    pub fn new(writer: W) -> MergedSink<W> {
        MergedSink {
            writer,
            at_line_start: true,
        }
    }

    pub fn finish_line(&mut self) {
        if !self.at_line_start {
            self.write("\n");
        }
    }

    /// Writes text and flushes it (the same as the sink's stdout).
    pub fn write(&mut self, text: &str) {
        let _ = self.writer.write_all(text.as_bytes());
        let _ = self.writer.flush();
        if let Some(last) = text.chars().last() {
            self.at_line_start = last == '\n';
        }
    }

    pub fn into_inner(self) -> W {
        self.writer
    }
}

impl<W: Write> OutputSink for MergedSink<W> {
    fn stdout(&mut self, text: &str) {
        self.write(text);
    }

    fn stderr(&mut self, text: &str) {
        self.write(text);
    }

    fn display(&mut self, data: &DisplayData, _is_result: bool) {
        self.write(&data.plain);
        self.write("\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_sink_interleaves_streams_and_ends_lines() {
        let mut sink = MergedSink::new(Vec::new());
        sink.stdout("a");
        sink.stderr("b\n");
        sink.display(
            &DisplayData {
                plain: "3".into(),
                html: None,
                ..Default::default()
            },
            true,
        );
        sink.stdout("partial");
        sink.finish_line();
        sink.finish_line();
        assert_eq!(sink.into_inner(), b"ab\n3\npartial\n");
    }

    #[test]
    fn colour_needs_a_terminal() {
        assert!(!use_color(false));
    }
}
