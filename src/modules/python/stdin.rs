//! Reading input: `input()`, `sys.stdin` (and `sys.__stdin__`, `sys.stdin.buffer`) and
//! `getpass`. Every read goes to the frontend (`OutputSink::read_stdin`: the process's stdin
//! in script mode, the line editor in the REPL, the stdin channel in a notebook) one line at a
//! time; what a partial read (`read(3)`, `readline(2)`) leaves over waits in one buffer that
//! `input()` and `sys.stdin` share, so mixing them loses nothing.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::rc::Rc;

use crate::object::class::Class;
use crate::object::format::to_str;
use crate::object::output::{StdinReply, StdinRequest};
use crate::object::value::{Module, NativeObject, TypeKind};
use crate::object::{builtin, method, Args, Exc, ExcKind, Interpreter, NameMap, Value};

use super::bytes::Bytes;
use super::stdlib::{exc_class, module, native_class, raise};

thread_local! {
    /// Bytes the frontend gave that no read has taken yet.
    static PENDING: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// IPython's `StdinNotImplementedError`, made once so every raise is the same class.
    static NOT_IMPLEMENTED: Rc<Class> = exc_class(
        "StdinNotImplementedError",
        "IPython.core.error",
        ExcKind::NotImplementedError,
    );
    /// `type(sys.stdin)` and `type(sys.stdin.buffer)`.
    static TEXT_CLASS: Rc<Class> = io_class("TextIOWrapper");
    static BYTES_CLASS: Rc<Class> = io_class("BufferedReader");
}

fn io_class(name: &str) -> Rc<Class> {
    native_class(name, "_io", Value::Type(TypeKind::Object), "", &[])
}

/// Adds `input` to the built-ins.
pub fn install(b: &mut NameMap<Value>) {
    b.insert(
        Rc::from("input"),
        builtin(
            "input",
            "input(prompt='', /): write the prompt, read a line from standard input and return it without its newline; EOFError at end of input.",
            input,
        ),
    );
}

/// Who asks for a line, which decides what an unanswerable request and its end say.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Asker {
    /// `input()`: ipykernel's `raw_input`.
    Input,
    /// `getpass.getpass()`.
    Getpass,
    /// A read of `sys.stdin`.
    File,
}

/// One line (with its newline when it had one) from the pending bytes or the frontend; at the
/// end of input, `Err` with the message `input()` raises EOFError with.
fn next_line(
    it: &mut dyn Interpreter,
    prompt: Option<&str>,
    asker: Asker,
) -> Result<Result<Vec<u8>, &'static str>, Exc> {
    let waiting = PENDING.with(|p| {
        let mut p = p.borrow_mut();
        match p.iter().position(|&b| b == b'\n') {
            Some(end) => {
                let rest = p.split_off(end + 1);
                Some(std::mem::replace(&mut *p, rest))
            }
            None => None,
        }
    });
    if let Some(line) = waiting {
        if let Some(prompt) = prompt {
            it.out().stdout(prompt);
        }
        return Ok(Ok(line));
    }
    let head = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    let interrupt = it.state().interrupt.clone();
    let request = StdinRequest {
        prompt: if head.is_empty() { prompt } else { None },
        password: asker == Asker::Getpass,
    };
    if !head.is_empty() {
        if let Some(prompt) = prompt {
            it.out().stdout(prompt);
        }
    }
    let reply = it.out().read_stdin(request, &interrupt);
    let mut line = head;
    match reply {
        StdinReply::Line(more) => line.extend(more),
        StdinReply::Eof(message) if line.is_empty() => return Ok(Err(message)),
        StdinReply::Eof(_) => {}
        StdinReply::Interrupted(message) => {
            unread(line);
            return Err(Exc::new(ExcKind::KeyboardInterrupt, message));
        }
        // A notebook client without an input box: ipykernel refuses `input()` and
        // `getpass()`, and its `sys.stdin` is the kernel process's own, which nobody writes
        // (a read hangs the cell until interrupted); here such a read finds the end at once.
        StdinReply::Unsupported if asker == Asker::File => {
            if line.is_empty() {
                return Ok(Err(""));
            }
        }
        StdinReply::Unsupported => {
            let caller = if asker == Asker::Getpass {
                "getpass"
            } else {
                "raw_input"
            };
            let class = NOT_IMPLEMENTED.with(Rc::clone);
            return Err(raise(
                &class,
                format!("{caller} was called, but this frontend does not support input requests."),
            ));
        }
    }
    Ok(Ok(line))
}

/// Bytes as text: UTF-8, undecodable bytes replaced. Line ends stay as they came: CPython's
/// `sys.stdin` translates none on POSIX (`'a\r\n'` reads as `'a\r\n'`).
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `input(prompt='', /)`.
fn input(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    if !a.kw.is_empty() {
        return Err(Exc::type_error("input() takes no keyword arguments"));
    }
    if a.pos.len() > 1 {
        return Err(Exc::type_error(format!(
            "input expected at most 1 argument, got {}",
            a.pos.len()
        )));
    }
    let prompt = match a.pos.first() {
        Some(p) => to_str(it, p)?,
        None => String::new(),
    };
    read_input_line(it, &prompt, Asker::Input)
}

/// The line `input()` or `getpass()` returns, without its newline.
fn read_input_line(it: &mut dyn Interpreter, prompt: &str, asker: Asker) -> Result<Value, Exc> {
    match next_line(it, Some(prompt), asker)? {
        Ok(line) => {
            let mut line = text(&line);
            if line.ends_with('\n') {
                line.pop();
            }
            Ok(Value::str(&line))
        }
        Err(message) => Err(Exc::new(ExcKind::EOFError, message)),
    }
}

/// At most `limit` characters (all, when None) of the next line, with its newline.
fn read_text_line(it: &mut dyn Interpreter, limit: Option<usize>) -> Result<String, Exc> {
    let line = match next_line(it, None, Asker::File)? {
        Ok(line) => text(&line),
        Err(_) => return Ok(String::new()),
    };
    Ok(keep_rest(line, limit))
}

/// The first `limit` characters of `text` (all when None); the rest is [`unread`].
fn keep_rest(text: String, limit: Option<usize>) -> String {
    let Some((cut, _)) = limit.and_then(|n| text.char_indices().nth(n)) else {
        return text;
    };
    unread(text.as_bytes()[cut..].to_vec());
    text[..cut].to_string()
}

/// Puts `rest` back ahead of the pending bytes: the next read starts with it.
fn unread(mut rest: Vec<u8>) {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        rest.append(&mut p);
        *p = rest;
    });
}

/// What is left of standard input, up to `limit` characters when given.
fn read_text(it: &mut dyn Interpreter, limit: Option<usize>) -> Result<String, Exc> {
    let mut out = String::new();
    while limit.is_none_or(|n| out.chars().count() < n) {
        match next_line(it, None, Asker::File)? {
            Ok(line) => out.push_str(&text(&line)),
            Err(_) => break,
        }
    }
    Ok(keep_rest(out, limit))
}

/// The same for bytes (`sys.stdin.buffer`): up to `limit` bytes of the next line, or of all
/// that is left.
fn read_bytes(
    it: &mut dyn Interpreter,
    limit: Option<usize>,
    one_line: bool,
) -> Result<Vec<u8>, Exc> {
    let mut out = Vec::new();
    while limit.is_none_or(|n| out.len() < n) {
        match next_line(it, None, Asker::File)? {
            Ok(line) => out.extend(line),
            Err(_) => break,
        }
        if one_line {
            break;
        }
    }
    if let Some(n) = limit.filter(|&n| n < out.len()) {
        unread(out.split_off(n));
    }
    Ok(out)
}

/// A `size` argument: None or a negative int read everything; anything else is CPython's
/// TypeError (`read` also takes None, `readline` only an int).
fn size_arg(a: &mut Args, takes_none: bool) -> Result<Option<usize>, Exc> {
    let size = a.take(0, "size")?;
    a.finish(1)?;
    match size {
        None => Ok(None),
        Some(Value::None) if takes_none => Ok(None),
        Some(Value::Int(n)) => Ok(usize::try_from(n).ok()),
        Some(Value::Bool(b)) => Ok(Some(b as usize)),
        Some(v) if takes_none => Err(Exc::type_error(format!(
            "argument should be integer or None, not '{}'",
            v.type_name()
        ))),
        Some(v) => Err(Exc::type_error(format!(
            "'{}' object cannot be interpreted as an integer",
            v.type_name()
        ))),
    }
}

/// `sys.stdin` (also `sys.__stdin__`): one object per session, as CPython has one.
pub fn stdin_object() -> Value {
    Value::Object(Rc::new(StdinText))
}

struct StdinText;

/// `io.UnsupportedOperation: not writable`.
fn not_writable() -> Exc {
    raise(
        &exc_class("UnsupportedOperation", "io", ExcKind::OSError),
        "not writable".to_string(),
    )
}

/// The attributes `sys.stdin` and `sys.stdin.buffer` share.
fn common_attr(name: &str) -> Option<Value> {
    Some(match name {
        "name" => Value::str("<stdin>"),
        "mode" => Value::str("r"),
        "closed" => Value::Bool(false),
        "__lazy_iter__" => Value::Bool(true),
        _ => return None,
    })
}

/// A method of `sys.stdin`/`sys.stdin.buffer` that both have.
fn common_method(name: &str) -> Option<(&'static str, crate::object::value::MethodFn)> {
    Some(match name {
        "fileno" => ("fileno", |_, _, a| {
            a.finish(0)?;
            Ok(Value::Int(0))
        }),
        "isatty" => ("isatty", |_, _, a| {
            a.finish(0)?;
            Ok(Value::Bool(std::io::stdin().is_terminal()))
        }),
        "readable" => ("readable", |_, _, a| {
            a.finish(0)?;
            Ok(Value::Bool(true))
        }),
        "writable" | "seekable" => ("writable", |_, _, a| {
            a.finish(0)?;
            Ok(Value::Bool(false))
        }),
        "flush" | "close" => ("flush", |_, _, _| Ok(Value::None)),
        "write" => ("write", |_, _, _| Err(not_writable())),
        "__iter__" | "__enter__" => ("__iter__", |_, r, _| Ok(r.clone())),
        _ => return None,
    })
}

impl NativeObject for StdinText {
    fn type_name(&self) -> &str {
        "_io.TextIOWrapper"
    }
    fn repr(&self) -> String {
        "<_io.TextIOWrapper name='<stdin>' mode='r' encoding='utf-8'>".to_string()
    }
    fn class_value(&self) -> Option<Value> {
        Some(Value::Class(TEXT_CLASS.with(Rc::clone)))
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        if let Some(v) = common_attr(name) {
            return Some(v);
        }
        let r = Value::Object(this.clone());
        let (name, f): (&'static str, crate::object::value::MethodFn) = match name {
            "encoding" => return Some(Value::str("utf-8")),
            "errors" => return Some(Value::str("strict")),
            "newlines" => return Some(Value::None),
            "line_buffering" => return Some(Value::Bool(false)),
            "buffer" => return Some(Value::Object(Rc::new(StdinBytes))),
            "__next__" => ("__next__", |it, _, _| {
                let line = read_text_line(it, None)?;
                if line.is_empty() {
                    return Err(Exc::new(ExcKind::StopIteration, ""));
                }
                Ok(Value::str(&line))
            }),
            "read" => ("read", |it, _, mut a| {
                let limit = size_arg(&mut a, true)?;
                Ok(Value::str(&read_text(it, limit)?))
            }),
            "readline" => ("readline", |it, _, mut a| {
                let limit = size_arg(&mut a, false)?;
                Ok(Value::str(&read_text_line(it, limit)?))
            }),
            "readlines" => ("readlines", |it, _, a| {
                a.finish(0)?;
                let mut lines = Vec::new();
                loop {
                    let line = read_text_line(it, None)?;
                    if line.is_empty() {
                        return Ok(Value::list(lines));
                    }
                    lines.push(Value::str(&line));
                }
            }),
            other => common_method(other)?,
        };
        Some(method(&r, name, "a method of standard input", f))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `sys.stdin.buffer`: the same input as bytes.
struct StdinBytes;

impl NativeObject for StdinBytes {
    fn type_name(&self) -> &str {
        "_io.BufferedReader"
    }
    fn repr(&self) -> String {
        "<_io.BufferedReader name='<stdin>'>".to_string()
    }
    fn class_value(&self) -> Option<Value> {
        Some(Value::Class(BYTES_CLASS.with(Rc::clone)))
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        if name == "mode" {
            return Some(Value::str("rb"));
        }
        if let Some(v) = common_attr(name) {
            return Some(v);
        }
        let r = Value::Object(this.clone());
        let (name, f): (&'static str, crate::object::value::MethodFn) = match name {
            "__next__" => ("__next__", |it, _, _| {
                let line = read_bytes(it, None, true)?;
                if line.is_empty() {
                    return Err(Exc::new(ExcKind::StopIteration, ""));
                }
                Ok(Bytes::value(line))
            }),
            "read" => ("read", |it, _, mut a| {
                let limit = size_arg(&mut a, true)?;
                Ok(Bytes::value(read_bytes(it, limit, false)?))
            }),
            "readline" => ("readline", |it, _, mut a| {
                let limit = size_arg(&mut a, true)?;
                Ok(Bytes::value(read_bytes(it, limit, true)?))
            }),
            other => common_method(other)?,
        };
        Some(method(&r, name, "a method of standard input's bytes", f))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The `getpass` module: `getpass` (the frontend reads without echo; a notebook's input box
/// hides what is typed) and `getuser`.
pub fn build_getpass() -> Rc<Module> {
    let m = module("getpass", "portable password input");
    m.set(
        "getpass",
        builtin(
            "getpass",
            "getpass(prompt='Password: ', stream=None): read a line without echoing it.",
            |it, mut a| {
                let prompt = a.take(0, "prompt")?;
                let _stream = a.take(1, "stream")?;
                a.finish(2)?;
                let prompt = match prompt {
                    Some(p) => to_str(it, &p)?,
                    None => "Password: ".to_string(),
                };
                match read_input_line(it, &prompt, Asker::Getpass) {
                    // getpass's own EOFError has no message.
                    Err(e) if e.kind == ExcKind::EOFError => Err(Exc::new(ExcKind::EOFError, "")),
                    other => other,
                }
            },
        ),
    );
    m.set(
        "getuser",
        builtin(
            "getuser",
            "getuser(): the user's login name, from LOGNAME, USER, LNAME or USERNAME.",
            |_, a| {
                a.finish(0)?;
                ["LOGNAME", "USER", "LNAME", "USERNAME"]
                    .iter()
                    .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
                    .map(|name| Value::str(&name))
                    .ok_or_else(|| Exc::new(ExcKind::OSError, "No username set in the environment"))
            },
        ),
    );
    m
}
