//! The terminal's standard input for a running program (`input()`, `sys.stdin`, `getpass`), as
//! CPython reads it: the line editor when stdin and stdout are terminals (Ctrl-C is
//! KeyboardInterrupt, Ctrl-D EOFError); otherwise the prompt on stdout and a line of the
//! process's stdin. A program read from stdin has read all of it, so its `input()` finds the
//! end, as CPython's (which parses the whole file first).

use std::io::{BufRead, IsTerminal};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::eval::session::{
    InterruptHandle, OutputSink, StdinReply, StdinRequest, EOF_WHEN_READING,
};

/// Answers a program's request for a line; `sink` shows the prompt where no line editor does.
pub fn read(
    sink: &mut dyn OutputSink,
    request: StdinRequest<'_>,
    interrupt: &InterruptHandle,
) -> StdinReply {
    let terminal = std::io::stdin().is_terminal();
    if request.password {
        return read_password(sink, request.prompt.unwrap_or(""), terminal, interrupt);
    }
    if let Some(prompt) = request.prompt {
        if terminal && std::io::stdout().is_terminal() {
            return edit_line(prompt);
        }
        sink.stdout(prompt);
    }
    read_line(interrupt)
}

/// `input()` on a terminal: one line through rustyline, as CPython's goes through GNU readline.
fn edit_line(prompt: &str) -> StdinReply {
    let mut editor = match rustyline::DefaultEditor::new() {
        Ok(editor) => editor,
        Err(_) => return read_line(&InterruptHandle::default()),
    };
    match editor.readline(prompt) {
        Ok(mut line) => {
            line.push('\n');
            StdinReply::Line(line.into_bytes())
        }
        Err(rustyline::error::ReadlineError::Interrupted) => StdinReply::Interrupted(""),
        Err(_) => StdinReply::Eof(EOF_WHEN_READING),
    }
}

/// `getpass()`: on a terminal the prompt, then a line read with echo off; elsewhere CPython's
/// fallback: a warning and the prompt on stderr, and a line of stdin.
fn read_password(
    sink: &mut dyn OutputSink,
    prompt: &str,
    terminal: bool,
    interrupt: &InterruptHandle,
) -> StdinReply {
    let reply = if terminal {
        // Echo goes off before the prompt, so nothing typed after it shows.
        let echo = EchoOff::new();
        sink.stdout(prompt);
        let reply = read_line(interrupt);
        drop(echo);
        reply
    } else {
        sink.stderr(&format!("Warning: Password input may be echoed.\n{prompt}"));
        read_line(interrupt)
    };
    // The newline typed was not echoed; getpass ends the line (not when input ended).
    if matches!(reply, StdinReply::Line(_)) {
        if terminal {
            sink.stdout("\n");
        } else {
            sink.stderr("\n");
        }
    }
    reply
}

/// The terminal's echo turned off until dropped.
struct EchoOff(Option<libc::termios>);

impl EchoOff {
    fn new() -> EchoOff {
        // SAFETY: tcgetattr/tcsetattr only read and write the termios struct given, on fd 0.
        unsafe {
            let mut saved: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut saved) != 0 {
                return EchoOff(None);
            }
            let mut quiet = saved;
            quiet.c_lflag &= !libc::ECHO;
            if libc::tcsetattr(0, libc::TCSAFLUSH, &quiet) != 0 {
                return EchoOff(None);
            }
            EchoOff(Some(saved))
        }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(saved) = &self.0 {
            // SAFETY: restores the settings tcgetattr gave, on fd 0.
            unsafe {
                libc::tcsetattr(0, libc::TCSAFLUSH, saved);
            }
        }
    }
}

/// One line of the process's stdin (with its newline), or the end. The read happens on a
/// thread of its own, so an interrupt (Ctrl-C, which restarts a blocked read) ends the wait;
/// the line it was waiting for is then the next read's.
fn read_line(interrupt: &InterruptHandle) -> StdinReply {
    static READER: OnceLock<Mutex<LineReader>> = OnceLock::new();
    let reader = READER.get_or_init(|| Mutex::new(LineReader::start()));
    let mut reader = reader.lock().unwrap_or_else(|e| e.into_inner());
    reader.next(interrupt)
}

/// The thread that reads stdin a line at a time, when asked (so nothing is read ahead of the
/// program: a child process it starts sees the rest).
struct LineReader {
    ask: mpsc::Sender<()>,
    lines: mpsc::Receiver<Vec<u8>>,
    /// A line was asked for and has not been taken.
    asked: bool,
    ended: bool,
}

impl LineReader {
    fn start() -> LineReader {
        let (ask, asks) = mpsc::channel::<()>();
        let (send, lines) = mpsc::channel();
        let started = std::thread::Builder::new()
            .name("devarray-stdin".to_string())
            .spawn(move || {
                while asks.recv().is_ok() {
                    let mut line = Vec::new();
                    // A read error ends input, as CPython's EOF would.
                    let _ = std::io::stdin().lock().read_until(b'\n', &mut line);
                    if send.send(line).is_err() {
                        return;
                    }
                }
            });
        LineReader {
            ask,
            lines,
            asked: false,
            ended: started.is_err(),
        }
    }

    fn next(&mut self, interrupt: &InterruptHandle) -> StdinReply {
        if self.ended {
            return StdinReply::Eof(EOF_WHEN_READING);
        }
        if !self.asked {
            if self.ask.send(()).is_err() {
                self.ended = true;
                return StdinReply::Eof(EOF_WHEN_READING);
            }
            self.asked = true;
        }
        loop {
            match self.lines.recv_timeout(Duration::from_millis(20)) {
                Ok(line) => {
                    self.asked = false;
                    if line.is_empty() {
                        return StdinReply::Eof(EOF_WHEN_READING);
                    }
                    return StdinReply::Line(line);
                }
                Err(RecvTimeoutError::Timeout) => {
                    if interrupt.take() {
                        return StdinReply::Interrupted("");
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    return StdinReply::Eof(EOF_WHEN_READING);
                }
            }
        }
    }
}
