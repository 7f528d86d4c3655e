//! Where a running program's output goes: the [`OutputSink`] a frontend supplies, and the
//! displayable values and progress lines sent to it, and the program's standard input, which the
//! same frontend supplies.

use super::state::InterruptHandle;

/// A displayable value: always text/plain, and text/html for arrays and tables.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DisplayData {
    pub plain: String,
    pub html: Option<String>,
    /// A figure's picture: (mime type, data), `image/png` as base64 or `image/svg+xml`.
    pub image: Option<(String, String)>,
}

/// Receives output while a statement runs, so a frontend can stream it.
pub trait OutputSink {
    fn stdout(&mut self, text: &str);
    fn stderr(&mut self, text: &str);
    /// `is_result` is true for the value of a top-level expression statement
    /// (a notebook's execute_result), false for explicit `display(...)` calls.
    fn display(&mut self, data: &DisplayData, is_result: bool);
    /// Clear the cell's output so far (`clear_output()`); `wait` defers it to
    /// the next output. Only notebooks have a cell output to clear; a terminal gets what
    /// IPython's `DisplayPublisher.clear_output` prints there: "erase the line, return"
    /// twice (once meant for stderr, but both go to stdout).
    fn clear_output(&mut self, _wait: bool) {
        self.stdout("\x1b[2K\r\x1b[2K\r");
    }
    /// Whether this frontend shows images (a notebook): figures are then displayed as
    /// pictures, otherwise drawn as text.
    fn rich_display(&self) -> bool {
        false
    }
    /// A line that redraws itself as work advances (a progress bar). A
    /// terminal redraws `data.plain` with `\r`; a notebook shows the bar once
    /// (as HTML) and then updates that output in place (`display_id` names it).
    fn progress(&mut self, display_id: &str, data: &DisplayData, state: ProgressState) {
        let _ = display_id;
        match state {
            ProgressState::Start | ProgressState::Update => {
                self.stdout(&format!("\r{}", data.plain))
            }
            ProgressState::End => self.stdout("\n"),
        }
    }
    /// One line of the program's standard input, for `input()`, `getpass` and `sys.stdin`: the
    /// frontend shows the prompt (through its line editor, or as a notebook's input box) and
    /// waits, answering `Interrupted` if `interrupt` is set meanwhile. A frontend with no input
    /// (a transcript, a collected evaluation) is at end of input.
    fn read_stdin(&mut self, request: StdinRequest<'_>, interrupt: &InterruptHandle) -> StdinReply {
        let _ = (request, interrupt);
        StdinReply::Eof(EOF_WHEN_READING)
    }
}

/// CPython's `input()` at end of input: `EOFError: EOF when reading a line`.
pub const EOF_WHEN_READING: &str = "EOF when reading a line";

/// What a program asks of its standard input (see [`OutputSink::read_stdin`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StdinRequest<'a> {
    /// `input(prompt)`'s prompt; None for a read of `sys.stdin`, which shows none.
    pub prompt: Option<&'a str>,
    /// `getpass.getpass()`: the line is not echoed.
    pub password: bool,
}

/// A frontend's answer to a [`StdinRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdinReply {
    /// One line, with its newline when it had one.
    Line(Vec<u8>),
    /// End of input; `input()` raises EOFError with this message (CPython's
    /// [`EOF_WHEN_READING`]; none when a notebook's user ends input, as ipykernel).
    Eof(&'static str),
    /// An interrupt came while waiting: KeyboardInterrupt with this message.
    Interrupted(&'static str),
    /// This frontend cannot answer input requests now (a notebook client that said
    /// `allow_stdin: false`): ipykernel's StdinNotImplementedError.
    Unsupported,
}

/// Where a progress line is in its life (see [`OutputSink::progress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressState {
    /// First drawn.
    Start,
    /// Redrawn with new text.
    Update,
    /// Finished: a terminal moves to the next line.
    End,
}
