//! `open()`: text files as CPython's `io.TextIOWrapper` serves them to programs that write a
//! small CSV and read it back (`with open(path, 'w') as f: f.write(...)`, `for line in f`).
//! A file opened for reading is read whole at `open`; writes go straight to the file.
use std::cell::RefCell;
use std::io::Write;
use std::rc::{Rc, Weak};

use crate::object::error::{Exc, ExcKind};
use crate::object::format::str_repr;
use crate::object::value::{Args, NativeObject, Value};
use crate::object::{method, Interpreter};

enum State {
    Reading { text: String, pos: usize },
    Writing(std::fs::File),
    Closed,
}

struct TextFile {
    name: String,
    mode: String,
    state: RefCell<State>,
    /// The object itself, so `with open(...) as f` binds the file (enter gets only `&self`).
    me: Weak<TextFile>,
}

fn os_error(e: &std::io::Error, path: &str) -> Exc {
    let shown = str_repr(path);
    match e.kind() {
        std::io::ErrorKind::NotFound => Exc::new(
            ExcKind::FileNotFoundError,
            format!("[Errno 2] No such file or directory: {shown}"),
        ),
        _ => match e.raw_os_error() {
            Some(code) => {
                let text = e.to_string();
                let text = text.split(" (os error").next().unwrap_or(&text).to_string();
                Exc::new(ExcKind::OSError, format!("[Errno {code}] {text}: {shown}"))
            }
            None => Exc::new(ExcKind::OSError, format!("{e}: {shown}")),
        },
    }
}

fn closed() -> Exc {
    Exc::value_error("I/O operation on closed file.")
}

fn unsupported(what: &str) -> Exc {
    Exc::new(ExcKind::OSError, format!("not {what}"))
}

/// `open(file, mode='r', encoding=None, newline=None)`.
pub fn open(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let file = a.required(0, "file")?;
    let mode = a.take(1, "mode")?;
    a.take(2, "buffering")?;
    a.take(3, "encoding")?;
    a.take(4, "errors")?;
    a.take(5, "newline")?;
    a.finish(6)?;
    let Value::Str(path) = &file else {
        return Err(Exc::type_error(format!(
            "expected str, bytes or os.PathLike object, not {}",
            file.type_name()
        )));
    };
    let mode = match &mode {
        None => "r".to_string(),
        Some(Value::Str(m)) => m.to_string(),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "open() argument 'mode' must be str, not {}",
                other.type_name()
            )))
        }
    };
    if mode.contains('b') {
        return Err(Exc::value_error(format!(
            "open(): devarray's files are text; binary mode {} is not supported (save arrays with npx.save, nd.save or torch.save)",
            str_repr(&mode)
        )));
    }
    let kind = mode.replace(['t', '+'], "");
    let path = path.to_string();
    let state = match kind.as_str() {
        "r" => State::Reading {
            text: std::fs::read_to_string(&path).map_err(|e| os_error(&e, &path))?,
            pos: 0,
        },
        "w" | "a" | "x" => {
            let mut opts = std::fs::OpenOptions::new();
            match kind.as_str() {
                "w" => opts.write(true).create(true).truncate(true),
                "a" => opts.append(true).create(true),
                _ => opts.write(true).create_new(true),
            };
            State::Writing(opts.open(&path).map_err(|e| os_error(&e, &path))?)
        }
        _ => {
            return Err(Exc::value_error(format!(
                "invalid mode: {}",
                str_repr(&mode)
            )))
        }
    };
    let f = Rc::new_cyclic(|me| TextFile {
        name: path,
        mode,
        state: RefCell::new(state),
        me: me.clone(),
    });
    Ok(Value::Object(f))
}

fn this(r: &Value) -> Result<&TextFile, Exc> {
    match r {
        Value::Object(o) => o.as_any().downcast_ref::<TextFile>(),
        _ => None,
    }
    .ok_or_else(|| Exc::type_error("expected a file"))
}

/// The next line (with its '\n'), or "" at the end.
fn next_line(f: &TextFile) -> Result<String, Exc> {
    match &mut *f.state.borrow_mut() {
        State::Reading { text, pos } => {
            let rest = text.get(*pos..).unwrap_or_default();
            let n = rest.find('\n').map_or(rest.len(), |i| i + 1);
            let line = rest[..n].to_string();
            *pos += n;
            Ok(line)
        }
        State::Writing(_) => Err(unsupported("readable")),
        State::Closed => Err(closed()),
    }
}

impl NativeObject for TextFile {
    fn type_name(&self) -> &str {
        "TextIOWrapper"
    }
    fn repr(&self) -> String {
        format!(
            "<_io.TextIOWrapper name={} mode={} encoding='UTF-8'>",
            str_repr(&self.name),
            str_repr(&self.mode)
        )
    }
    fn enter(&self, _interp: &mut dyn Interpreter) -> Result<Value, Exc> {
        if matches!(*self.state.borrow(), State::Closed) {
            return Err(closed());
        }
        let me: Rc<dyn NativeObject> = self.me.upgrade().ok_or_else(closed)?;
        Ok(Value::Object(me))
    }
    fn exit(&self, _interp: &mut dyn Interpreter) -> Result<(), Exc> {
        *self.state.borrow_mut() = State::Closed;
        Ok(())
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "close",
            "closed",
            "mode",
            "name",
            "read",
            "readline",
            "readlines",
            "write",
            "writelines",
        ]
    }
    fn get_attr(&self, this_rc: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this_rc.clone());
        Some(match name {
            "name" => Value::str(&self.name),
            "mode" => Value::str(&self.mode),
            "closed" => Value::Bool(matches!(*self.state.borrow(), State::Closed)),
            "__lazy_iter__" => Value::Bool(true),
            "__iter__" => method(&r, "__iter__", "the file itself (its lines)", |_, r, a| {
                a.finish(0)?;
                if matches!(*this(r)?.state.borrow(), State::Closed) {
                    return Err(closed());
                }
                Ok(r.clone())
            }),
            "__next__" => method(
                &r,
                "__next__",
                "the next line; StopIteration at the end",
                |_, r, a| {
                    a.finish(0)?;
                    let line = next_line(this(r)?)?;
                    if line.is_empty() {
                        return Err(Exc::new(ExcKind::StopIteration, ""));
                    }
                    Ok(Value::str(&line))
                },
            ),
            "readline" => method(
                &r,
                "readline",
                "f.readline(): the next line with its '\\n' ('' at the end).",
                |_, r, mut a| {
                    a.take(0, "size")?;
                    a.finish(1)?;
                    Ok(Value::str(&next_line(this(r)?)?))
                },
            ),
            "readlines" => method(
                &r,
                "readlines",
                "f.readlines(): the remaining lines, each with its '\\n'.",
                |_, r, mut a| {
                    a.take(0, "hint")?;
                    a.finish(1)?;
                    let f = this(r)?;
                    let mut lines = Vec::new();
                    loop {
                        let line = next_line(f)?;
                        if line.is_empty() {
                            break;
                        }
                        lines.push(Value::str(&line));
                    }
                    Ok(Value::list(lines))
                },
            ),
            "read" => method(
                &r,
                "read",
                "f.read(size=-1): the rest of the file (or size characters).",
                |_, r, mut a| {
                    let size = a.take(0, "size")?;
                    a.finish(1)?;
                    let size = match size {
                        None | Some(Value::None) => None,
                        Some(Value::Int(n)) if n < 0 => None,
                        Some(Value::Int(n)) => Some(n as usize),
                        Some(other) => {
                            return Err(Exc::type_error(format!(
                                "argument should be integer or None, not '{}'",
                                other.type_name()
                            )))
                        }
                    };
                    match &mut *this(r)?.state.borrow_mut() {
                        State::Reading { text, pos } => {
                            let rest = text.get(*pos..).unwrap_or_default();
                            let n = match size {
                                None => rest.len(),
                                Some(k) => {
                                    rest.char_indices().nth(k).map_or(rest.len(), |(i, _)| i)
                                }
                            };
                            let out = rest[..n].to_string();
                            *pos += n;
                            Ok(Value::str(&out))
                        }
                        State::Writing(_) => Err(unsupported("readable")),
                        State::Closed => Err(closed()),
                    }
                },
            ),
            "write" => method(
                &r,
                "write",
                "f.write(s): write the string s; returns its length.",
                |_, r, mut a| {
                    let s = a.required(0, "s")?;
                    a.finish(1)?;
                    let Value::Str(s) = &s else {
                        return Err(Exc::type_error(format!(
                            "write() argument must be str, not {}",
                            s.type_name()
                        )));
                    };
                    let f = this(r)?;
                    match &mut *f.state.borrow_mut() {
                        State::Writing(file) => {
                            file.write_all(s.as_bytes())
                                .map_err(|e| os_error(&e, &f.name))?;
                            Ok(Value::Int(s.chars().count() as i64))
                        }
                        State::Reading { .. } => Err(unsupported("writable")),
                        State::Closed => Err(closed()),
                    }
                },
            ),
            "writelines" => method(
                &r,
                "writelines",
                "f.writelines(lines): write each string (no newlines added).",
                |it, r, mut a| {
                    let lines = a.required(0, "lines")?;
                    a.finish(1)?;
                    let f = this(r)?;
                    for line in it.iterate(&lines)? {
                        let Value::Str(s) = &line else {
                            return Err(Exc::type_error(format!(
                                "write() argument must be str, not {}",
                                line.type_name()
                            )));
                        };
                        match &mut *f.state.borrow_mut() {
                            State::Writing(file) => file
                                .write_all(s.as_bytes())
                                .map_err(|e| os_error(&e, &f.name))?,
                            State::Reading { .. } => return Err(unsupported("writable")),
                            State::Closed => return Err(closed()),
                        }
                    }
                    Ok(Value::None)
                },
            ),
            "close" => method(
                &r,
                "close",
                "f.close(): close the file (again is harmless).",
                |_, r, a| {
                    a.finish(0)?;
                    *this(r)?.state.borrow_mut() = State::Closed;
                    Ok(Value::None)
                },
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
