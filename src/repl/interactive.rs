//! The interactive REPL on rustyline: prompts, auto-indent, history, tab
//! completion, syntax colouring and Ctrl-C handling.

use std::borrow::Cow;
use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rustyline::completion::{Completer, Pair};
use rustyline::config::{CompletionType, Config};
use rustyline::error::ReadlineError;
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};

use super::gather::{Feed, StatementGatherer};
use super::history::default_history_path;
use super::output::{stderr_color, use_color, StdioSink};
use super::{requested_exit_status, Evaluator, PRIMARY_PROMPT, SECONDARY_PROMPT};
use crate::eval::session::{Session, SessionConfig};
use crate::lang::lexer::{highlight, TokenClass};

/// What a Tab on a blank line inserts, like Python's REPL.
const INDENT_UNIT: &str = "    ";

/// Runs the REPL until Ctrl-D (or `exit`) and returns the process exit status.
pub fn run_repl(config: SessionConfig) -> i32 {
    let color = use_color(std::io::stdout().is_terminal());
    let error_color = stderr_color();
    let session = Rc::new(RefCell::new(Session::new(config)));
    say(&format!("{}\n", session.borrow().welcome_line()));
    let interrupt = session.borrow().interrupt_handle();
    let unanswered = Arc::new(AtomicUsize::new(0));
    let presses = Arc::clone(&unanswered);
    // The handler only sets the flag; the interpreter polls it (between statements, in loops,
    // in CPU kernels between blocks, in device waits and `!cmd`) and stops the running
    // statement with KeyboardInterrupt. At the prompt the terminal is in raw mode, so Ctrl-C
    // arrives as a key and never reaches this handler. Pressing again never ends the REPL:
    // the variables are at stake; it only says once that the statement is being stopped.
    let handler = move || {
        if interrupt.is_set() && presses.fetch_add(1, Ordering::SeqCst) == 0 {
            eprintln!(
                "\nKeyboardInterrupt: stopping the statement at its next check; the session and its variables are kept"
            );
        }
        interrupt.interrupt();
    };
    if let Err(e) = ctrlc::set_handler(handler) {
        eprintln!("devarray: warning: Ctrl-C cannot interrupt a running statement: {e}");
    }

    let pending = Rc::new(RefCell::new(String::new()));
    let helper = ReplHelper {
        session: Rc::clone(&session),
        pending: Rc::clone(&pending),
        color,
    };
    let editor_config = Config::builder()
        .auto_add_history(false)
        .history_ignore_space(false)
        .completion_type(CompletionType::List)
        .max_history_size(10_000)
        .and_then(|b| b.history_ignore_dups(true))
        .map(|b| b.build())
        .unwrap_or_default();
    let mut editor: Editor<ReplHelper, DefaultHistory> = match Editor::with_config(editor_config) {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("devarray: cannot start the line editor: {e}");
            return 1;
        }
    };
    editor.set_helper(Some(helper));
    let mut history = HistoryFile::open(default_history_path(), &mut editor);

    let mut gatherer = StatementGatherer::new();
    let mut indent = String::new();
    let mut sink = StdioSink::new();
    loop {
        *pending.borrow_mut() = gatherer.pending();
        let prompt = if gatherer.is_empty() {
            PRIMARY_PROMPT
        } else {
            SECONDARY_PROMPT
        };
        let input = match editor.readline_with_initial(prompt, (&indent, "")) {
            Ok(input) => input,
            Err(ReadlineError::Interrupted) => {
                say("KeyboardInterrupt\n");
                gatherer.clear();
                indent.clear();
                continue;
            }
            Err(ReadlineError::Eof) => {
                session.borrow_mut().shutdown(&mut sink);
                return 0;
            }
            Err(e) => {
                eprintln!("devarray: cannot read input: {e}");
                return 1;
            }
        };
        indent.clear();
        // A paste may bring several lines at once; each goes through the same rules.
        for line in input.split('\n') {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if !line.trim().is_empty() {
                history.add(&mut editor, line);
            }
            let feed = gatherer.push_line(line, |src| session.borrow().is_complete(src));
            match feed {
                Feed::Empty => {}
                Feed::More { indent: next } => indent = next,
                Feed::Ready(source) => {
                    if is_exit_request(&source) {
                        session.borrow_mut().shutdown(&mut sink);
                        return 0;
                    }
                    let mut session = session.borrow_mut();
                    // Drop a Ctrl-C that came after the previous statement had finished.
                    session.interrupt_handle().take();
                    unanswered.store(0, Ordering::SeqCst);
                    let result = Evaluator::eval_with(&mut *session, &source, &mut sink);
                    if let Err(error) = result {
                        if let Some(status) = requested_exit_status(&error) {
                            session.shutdown(&mut sink);
                            return status;
                        }
                        sink.report_error(&error, error_color);
                    }
                    sink.finish_line();
                }
            }
        }
    }
}

/// Writes a line of the REPL's own to stdout. Unlike `println!`, a closed
/// stdout is ignored rather than a panic.
fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// `exit` and `quit`, bare or called, leave the REPL as in Python 3.13.
fn is_exit_request(source: &str) -> bool {
    matches!(source.trim(), "exit" | "quit" | "exit()" | "quit()")
}

/// The persistent history file. A file that cannot be read or written costs
/// one warning and then history stays in memory: never a crash.
struct HistoryFile {
    path: Option<PathBuf>,
}

impl HistoryFile {
    fn open(path: Option<PathBuf>, editor: &mut Editor<ReplHelper, DefaultHistory>) -> HistoryFile {
        let mut file = HistoryFile { path };
        let Some(path) = file.path.clone() else {
            return file;
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Err(e) = std::fs::create_dir_all(dir) {
                file.give_up(&format!("cannot create {}: {e}", dir.display()));
                return file;
            }
        }
        match editor.load_history(&path) {
            Ok(()) => {}
            Err(ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => file.give_up(&format!("cannot read {}: {e}", path.display())),
        }
        file
    }

    fn add(&mut self, editor: &mut Editor<ReplHelper, DefaultHistory>, line: &str) {
        let _ = editor.add_history_entry(line);
        if let Some(path) = self.path.clone() {
            // Appending after every line keeps history even if the process is killed.
            if let Err(e) = editor.append_history(&path) {
                self.give_up(&format!("cannot write {}: {e}", path.display()));
            }
        }
    }

    fn give_up(&mut self, why: &str) {
        self.path = None;
        let _ = std::io::stdout().flush();
        eprintln!(
            "devarray: warning: history will not be saved ({why}); \
             set DEVARRAY_HISTORY to a writable file to keep it"
        );
    }
}

/// rustyline's hooks: completion from the session, colouring from the lexer.
struct ReplHelper {
    session: Rc<RefCell<Session>>,
    /// The earlier lines of the statement being typed, so completion sees
    /// names defined there.
    pending: Rc<RefCell<String>>,
    color: bool,
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let Some(before_cursor) = line.get(..pos) else {
            return Ok((pos, Vec::new()));
        };
        if before_cursor.trim().is_empty() {
            let indent = Pair {
                display: INDENT_UNIT.to_string(),
                replacement: INDENT_UNIT.to_string(),
            };
            return Ok((pos, vec![indent]));
        }
        let (Ok(mut session), Ok(pending)) =
            (self.session.try_borrow_mut(), self.pending.try_borrow())
        else {
            return Ok((pos, Vec::new()));
        };
        let code = format!("{pending}{line}");
        let completion = session.complete(&code, pending.len() + pos);
        let Some(start) = completion
            .start
            .checked_sub(pending.len())
            .filter(|&start| start <= pos && line.is_char_boundary(start))
        else {
            return Ok((pos, Vec::new()));
        };
        let candidates = completion
            .matches
            .into_iter()
            .map(|m| Pair {
                display: m.clone(),
                replacement: m,
            })
            .collect();
        Ok((start, candidates))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Validator for ReplHelper {}

impl Highlighter for ReplHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        if !self.color {
            return Cow::Borrowed(line);
        }
        colorize(line)
    }

    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        if self.color {
            Cow::Owned(format!("\x1b[1;32m{prompt}\x1b[0m"))
        } else {
            Cow::Borrowed(prompt)
        }
    }

    fn highlight_char(&self, _line: &str, _pos: usize, kind: CmdKind) -> bool {
        // Re-colour after every edit: a keystroke can change a token's class.
        self.color && kind != CmdKind::MoveCursor
    }
}

impl Helper for ReplHelper {}

/// The ANSI colour for a token class; `None` leaves it plain.
fn token_style(class: TokenClass) -> Option<&'static str> {
    #[allow(unreachable_patterns)] // the real lexer may add classes
    match class {
        TokenClass::Keyword => Some("\x1b[1;35m"),
        TokenClass::Number => Some("\x1b[36m"),
        TokenClass::String => Some("\x1b[32m"),
        TokenClass::Comment => Some("\x1b[90m"),
        TokenClass::Magic => Some("\x1b[34m"),
        TokenClass::Error => Some("\x1b[4;31m"),
        TokenClass::Name | TokenClass::Operator => None,
        _ => None,
    }
}

/// `line` with ANSI colours around its tokens. Spans that are out of order,
/// overlapping or not on character boundaries are skipped, never a panic.
pub fn colorize(line: &str) -> Cow<'_, str> {
    let tokens = highlight(line);
    if tokens.is_empty() {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() * 2);
    let mut copied = 0;
    for (span, class) in tokens {
        let Some(style) = token_style(class) else {
            continue;
        };
        if span.start < copied || span.end <= span.start {
            continue;
        }
        let (Some(gap), Some(text)) =
            (line.get(copied..span.start), line.get(span.start..span.end))
        else {
            continue;
        };
        out.push_str(gap);
        out.push_str(style);
        out.push_str(text);
        out.push_str("\x1b[0m");
        copied = span.end;
    }
    out.push_str(line.get(copied..).unwrap_or(""));
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_words_end_the_repl() {
        assert!(is_exit_request("exit\n"));
        assert!(is_exit_request("quit()\n"));
        assert!(!is_exit_request("exit_code = 1\n"));
    }

    #[test]
    fn colorize_without_tokens_is_unchanged() {
        // The placeholder lexer returns no tokens; the real one colours.
        let line = "x = 1";
        if highlight(line).is_empty() {
            assert_eq!(colorize(line), "x = 1");
        } else {
            let colored = colorize(line);
            assert!(colored.contains("\x1b["));
            assert_eq!(strip_ansi(&colored), line);
        }
    }

    fn strip_ansi(text: &str) -> String {
        let mut out = String::new();
        let mut in_escape = false;
        for c in text.chars() {
            match (in_escape, c) {
                (false, '\x1b') => in_escape = true,
                (true, 'm') => in_escape = false,
                (true, _) => {}
                (false, c) => out.push(c),
            }
        }
        out
    }

    #[test]
    fn colorize_keeps_text_for_any_line() {
        for line in ["def f(x):", "s = 'é' # ü", "%time x @ gpu(0)", ""] {
            assert_eq!(strip_ansi(&colorize(line)), line);
        }
    }
}
