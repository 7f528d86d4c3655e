//! Where a running program's output goes: the [`OutputSink`] a frontend supplies, and the
//! displayable values and progress lines sent to it.

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
