//! `open()`: text files as CPython's `io.TextIOWrapper` behaves for what programs do with them:
//! `read`, `readline`, `readlines`, iteration by line, `write`, `writelines`, `close`, `with`.
//! Modes `r`, `w`, `a`, `x` (and `+`), in text or binary (`b`): a binary file reads `bytes`
//! (`read(size)`, what `hashlib` checks a downloaded file with) and writes bytes-like objects
//! (`bytes`, `bytearray`), as CPython's `io.BufferedReader`/`BufferedWriter`/`BufferedRandom`.
//! A file opened for reading is read whole when opened: data files here are small.

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use crate::object::value::NativeObject;
use crate::object::{method, Args, Exc, ExcKind, Interpreter, Value};

use crate::modules::python::bytes::Bytes;
use crate::modules::python::stdlib::os::os_error;

struct TextFile {
    name: Rc<str>,
    mode: Rc<str>,
    state: RefCell<State>,
}

struct State {
    /// What is left to read (read mode).
    text: Vec<char>,
    pos: usize,
    writer: Option<std::fs::File>,
    closed: bool,
}

impl TextFile {
    fn readable(&self) -> bool {
        self.mode.contains('r') || self.mode.contains('+')
    }
    fn check_open(&self) -> Result<(), Exc> {
        if self.state.borrow().closed {
            return Err(Exc::value_error("I/O operation on closed file."));
        }
        Ok(())
    }
    fn read_line(&self) -> String {
        let mut st = self.state.borrow_mut();
        let start = st.pos;
        let mut end = start;
        while end < st.text.len() {
            end += 1;
            if st.text[end - 1] == '\n' {
                break;
            }
        }
        st.pos = end;
        st.text[start..end].iter().collect()
    }
}

impl NativeObject for TextFile {
    fn type_name(&self) -> &str {
        "_io.TextIOWrapper"
    }
    fn repr(&self) -> String {
        format!(
            "<_io.TextIOWrapper name='{}' mode='{}' encoding='UTF-8'>",
            self.name, self.mode
        )
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        let (name, f): (&'static str, crate::object::value::MethodFn) = match name {
            "name" => return Some(Value::Str(self.name.clone())),
            "mode" => return Some(Value::Str(self.mode.clone())),
            "closed" => return Some(Value::Bool(self.state.borrow().closed)),
            "encoding" => return Some(Value::str("UTF-8")),
            "__lazy_iter__" => return Some(Value::Bool(true)),
            "__iter__" => ("__iter__", |_, r, _| Ok(r.clone())),
            "__next__" => ("__next__", |_, r, _| {
                let f = file(r)?;
                f.check_open()?;
                let line = f.read_line();
                if line.is_empty() {
                    return Err(Exc::new(ExcKind::StopIteration, ""));
                }
                Ok(Value::str(&line))
            }),
            "read" => ("read", |_, r, mut a| {
                let n = a.take(0, "size")?;
                a.finish(1)?;
                let f = file(r)?;
                f.check_open()?;
                if !f.readable() {
                    return Err(unsupported("not readable"));
                }
                let mut st = f.state.borrow_mut();
                let rest = st.text.len() - st.pos;
                let take = match n {
                    Some(Value::Int(n)) if n >= 0 => (n as usize).min(rest),
                    _ => rest,
                };
                let s: String = st.text[st.pos..st.pos + take].iter().collect();
                st.pos += take;
                Ok(Value::str(&s))
            }),
            "readline" => ("readline", |_, r, a| {
                a.finish(0)?;
                let f = file(r)?;
                f.check_open()?;
                if !f.readable() {
                    return Err(unsupported("not readable"));
                }
                Ok(Value::str(&f.read_line()))
            }),
            "readlines" => ("readlines", |_, r, a| {
                a.finish(0)?;
                let f = file(r)?;
                f.check_open()?;
                if !f.readable() {
                    return Err(unsupported("not readable"));
                }
                let mut lines = Vec::new();
                loop {
                    let line = f.read_line();
                    if line.is_empty() {
                        break;
                    }
                    lines.push(Value::str(&line));
                }
                Ok(Value::list(lines))
            }),
            "write" => ("write", |_, r, mut a| {
                let s = a.required(0, "s")?;
                a.finish(1)?;
                let Value::Str(s) = &s else {
                    return Err(Exc::type_error(format!(
                        "write() argument must be str, not {}",
                        s.type_name()
                    )));
                };
                write_str(r, s)?;
                Ok(Value::Int(s.chars().count() as i64))
            }),
            "writelines" => ("writelines", |it, r, mut a| {
                let lines = a.required(0, "lines")?;
                a.finish(1)?;
                for line in it.iterate(&lines)? {
                    let Value::Str(s) = &line else {
                        return Err(Exc::type_error(format!(
                            "write() argument must be str, not {}",
                            line.type_name()
                        )));
                    };
                    write_str(r, s)?;
                }
                Ok(Value::None)
            }),
            "flush" => ("flush", |_, r, _| {
                let f = file(r)?;
                if let Some(w) = f.state.borrow_mut().writer.as_mut() {
                    w.flush().map_err(|e| os_error(&e, &f.name))?;
                }
                Ok(Value::None)
            }),
            "close" => ("close", |_, r, _| {
                close(file(r)?);
                Ok(Value::None)
            }),
            "readable" => ("readable", |_, r, _| Ok(Value::Bool(file(r)?.readable()))),
            "writable" => ("writable", |_, r, _| {
                Ok(Value::Bool(file(r)?.state.borrow().writer.is_some()))
            }),
            _ => return None,
        };
        Some(method(&r, name, "a method of an open text file", f))
    }
    fn enter_value(
        &self,
        this: &Rc<dyn NativeObject>,
        _it: &mut dyn Interpreter,
    ) -> Result<Value, Exc> {
        self.check_open()?;
        Ok(Value::Object(this.clone()))
    }
    fn exit(&self, _it: &mut dyn Interpreter) -> Result<(), Exc> {
        close(self);
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `io.UnsupportedOperation: not readable`.
fn unsupported(what: &str) -> Exc {
    use crate::modules::python::stdlib::{exc_class, raise};
    raise(
        &exc_class("UnsupportedOperation", "io", ExcKind::OSError),
        what.to_string(),
    )
}

fn file(r: &Value) -> Result<&TextFile, Exc> {
    match r {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<TextFile>()
            .ok_or_else(|| Exc::type_error("expected a file")),
        _ => Err(Exc::type_error("expected a file")),
    }
}

fn write_str(r: &Value, s: &str) -> Result<(), Exc> {
    let f = file(r)?;
    f.check_open()?;
    let mut st = f.state.borrow_mut();
    let Some(w) = st.writer.as_mut() else {
        return Err(unsupported("not writable"));
    };
    w.write_all(s.as_bytes()).map_err(|e| os_error(&e, &f.name))
}

fn close(f: &TextFile) {
    let mut st = f.state.borrow_mut();
    if let Some(mut w) = st.writer.take() {
        let _ = w.flush();
    }
    st.closed = true;
}

/// `open(file, mode='r', encoding=None, ...)`.
pub fn open(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let path = a.required(0, "file")?;
    let path = super::stdlib::os::fspath_arg(it, &path)?;
    let mode = a.take(1, "mode")?.unwrap_or(Value::str("r"));
    a.take_kw("buffering");
    let text_options: Vec<&str> = ["encoding", "errors", "newline"]
        .into_iter()
        .filter(|k| a.take_kw(k).is_some_and(|v| !matches!(v, Value::None)))
        .collect();
    a.finish(2)?;
    let Value::Str(path) = &path else {
        return Err(Exc::type_error(format!(
            "expected str, bytes or os.PathLike object, not {}",
            path.type_name()
        )));
    };
    let Value::Str(mode) = &mode else {
        return Err(Exc::type_error(format!(
            "open() argument 'mode' must be str, not {}",
            mode.type_name()
        )));
    };
    let kinds = mode.chars().filter(|c| "rwax".contains(*c)).count();
    let repeated = "rwax+tb"
        .chars()
        .any(|c| mode.chars().filter(|&m| m == c).count() > 1);
    if kinds != 1 || repeated || mode.chars().any(|c| !"rwax+tb".contains(c)) {
        return Err(Exc::value_error(format!("invalid mode: '{mode}'")));
    }
    if mode.contains('b') {
        if mode.contains('t') {
            return Err(Exc::value_error("can't have text and binary mode at once"));
        }
        if let Some(k) = text_options.first() {
            return Err(Exc::value_error(format!(
                "binary mode doesn't take an {k} argument"
            )));
        }
        return open_binary(path, mode);
    }
    let mut opts = std::fs::OpenOptions::new();
    let plus = mode.contains('+');
    let (read, writer) = match mode.chars().find(|c| "rwax".contains(*c)) {
        Some('r') => (true, plus.then(|| opts.read(true).write(true).clone())),
        Some('w') => (
            plus,
            Some(opts.write(true).create(true).truncate(true).clone()),
        ),
        Some('a') => (plus, Some(opts.append(true).create(true).clone())),
        _ => (plus, Some(opts.write(true).create_new(true).clone())),
    };
    let text = if read && !mode.contains('w') {
        match std::fs::read_to_string(&**path) {
            Ok(t) => t.chars().collect(),
            Err(e) => return Err(os_error(&e, path)),
        }
    } else {
        Vec::new()
    };
    let writer = match writer {
        Some(o) => Some(o.open(&**path).map_err(|e| os_error(&e, path))?),
        None => None,
    };
    Ok(Value::Object(Rc::new(TextFile {
        name: path.clone(),
        mode: mode.clone(),
        state: RefCell::new(State {
            text,
            pos: 0,
            writer,
            closed: false,
        }),
    })))
}

/// A file opened in binary mode: CPython's `io.BufferedReader` (`rb`), `BufferedWriter`
/// (`wb`, `ab`, `xb`) or `BufferedRandom` (with `+`). Its bytes are read whole when opened
/// (unless truncated); writes go to the file at the position, or its end in append mode.
struct BinaryFile {
    name: Rc<str>,
    /// CPython's normalised mode (`rb`, `wb`, `ab`, `xb`, `rb+`, `ab+`, `xb+`).
    mode: &'static str,
    readable: bool,
    writable: bool,
    append: bool,
    state: RefCell<BinState>,
}

struct BinState {
    /// The file's bytes as this object knows them (what was read, with its own writes).
    data: Vec<u8>,
    pos: usize,
    writer: Option<std::fs::File>,
    closed: bool,
}

/// `open(path, 'rb' / 'wb' / 'ab' / 'xb' / ... '+')`.
fn open_binary(path: &Rc<str>, mode: &str) -> Result<Value, Exc> {
    let plus = mode.contains('+');
    let kind = mode.chars().find(|c| "rwax".contains(*c)).unwrap_or('r');
    let mut opts = std::fs::OpenOptions::new();
    let (normal, readable, writer) = match kind {
        'r' => (
            if plus { "rb+" } else { "rb" },
            true,
            plus.then(|| opts.read(true).write(true).clone()),
        ),
        'w' => (
            if plus { "rb+" } else { "wb" },
            plus,
            Some(opts.write(true).create(true).truncate(true).clone()),
        ),
        'a' => (
            if plus { "ab+" } else { "ab" },
            plus,
            Some(opts.append(true).create(true).clone()),
        ),
        _ => (
            if plus { "xb+" } else { "xb" },
            plus,
            Some(opts.write(true).create_new(true).clone()),
        ),
    };
    let writer = match writer {
        Some(o) => Some(o.open(&**path).map_err(|e| os_error(&e, path))?),
        None => None,
    };
    let data = match kind {
        'r' | 'a' => match std::fs::read(&**path) {
            Ok(d) => d,
            Err(e) if kind == 'a' && e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(os_error(&e, path)),
        },
        _ => Vec::new(),
    };
    let pos = if kind == 'a' { data.len() } else { 0 };
    Ok(Value::Object(Rc::new(BinaryFile {
        name: path.clone(),
        mode: normal,
        readable,
        writable: writer.is_some(),
        append: kind == 'a',
        state: RefCell::new(BinState {
            data,
            pos,
            writer,
            closed: false,
        }),
    })))
}

impl BinaryFile {
    fn write(&self, b: &[u8]) -> Result<usize, Exc> {
        let mut st = self.state.borrow_mut();
        if st.closed {
            return Err(Exc::value_error("write to closed file"));
        }
        let pos = if self.append { st.data.len() } else { st.pos };
        let Some(w) = st.writer.as_mut() else {
            return Err(unsupported("write"));
        };
        if !self.append {
            std::io::Seek::seek(w, std::io::SeekFrom::Start(pos as u64))
                .map_err(|e| os_error(&e, &self.name))?;
        }
        w.write_all(b).map_err(|e| os_error(&e, &self.name))?;
        let end = pos + b.len();
        if st.data.len() < end {
            st.data.resize(end, 0);
        }
        st.data[pos..end].copy_from_slice(b);
        st.pos = end;
        Ok(b.len())
    }
}

/// The bytes a binary file's `write` takes, with CPython's error for anything else.
fn bytes_like(v: &Value) -> Result<Vec<u8>, Exc> {
    crate::modules::python::bytes::of(v)
        .map(|b| b.to_vec())
        .ok_or_else(|| {
            Exc::type_error(format!(
                "a bytes-like object is required, not '{}'",
                v.type_name()
            ))
        })
}

impl NativeObject for BinaryFile {
    fn type_name(&self) -> &str {
        match (self.readable, self.writable) {
            (true, true) => "_io.BufferedRandom",
            (false, _) => "_io.BufferedWriter",
            _ => "_io.BufferedReader",
        }
    }
    fn repr(&self) -> String {
        format!("<{} name='{}'>", self.type_name(), self.name)
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        let (name, f): (&'static str, crate::object::value::MethodFn) = match name {
            "name" => return Some(Value::Str(self.name.clone())),
            "mode" => return Some(Value::str(self.mode)),
            "closed" => return Some(Value::Bool(self.state.borrow().closed)),
            "read" => ("read", |_, r, mut a| {
                let n = a.take(0, "size")?;
                a.finish(1)?;
                let f = binary(r)?;
                let mut st = f.state.borrow_mut();
                if st.closed {
                    return Err(Exc::value_error("read of closed file"));
                }
                if !f.readable {
                    return Err(unsupported("read"));
                }
                let rest = st.data.len().saturating_sub(st.pos);
                let take = match n {
                    Some(Value::Int(n)) if n >= 0 => (n as usize).min(rest),
                    None | Some(Value::None) | Some(Value::Int(_)) => rest,
                    Some(other) => {
                        return Err(Exc::type_error(format!(
                            "argument should be integer or None, not '{}'",
                            other.type_name()
                        )))
                    }
                };
                let out = st.data[st.pos..st.pos + take].to_vec();
                st.pos += take;
                Ok(Bytes::value(out))
            }),
            "readline" => ("readline", |_, r, a| {
                a.finish(0)?;
                let f = binary(r)?;
                let mut st = f.state.borrow_mut();
                if st.closed {
                    return Err(Exc::value_error("readline of closed file"));
                }
                if !f.readable {
                    return Err(unsupported("read"));
                }
                let start = st.pos.min(st.data.len());
                let end = st.data[start..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(st.data.len(), |i| start + i + 1);
                st.pos = end;
                Ok(Bytes::value(st.data[start..end].to_vec()))
            }),
            "write" => ("write", |_, r, mut a| {
                let b = a.required(0, "buffer")?;
                a.finish(1)?;
                let n = binary(r)?.write(&bytes_like(&b)?)?;
                Ok(Value::Int(n as i64))
            }),
            "writelines" => ("writelines", |it, r, mut a| {
                let lines = a.required(0, "lines")?;
                a.finish(1)?;
                for line in it.iterate(&lines)? {
                    binary(r)?.write(&bytes_like(&line)?)?;
                }
                Ok(Value::None)
            }),
            "tell" => ("tell", |_, r, a| {
                a.finish(0)?;
                let st = binary(r)?.state.borrow();
                if st.closed {
                    return Err(Exc::value_error("I/O operation on closed file."));
                }
                Ok(Value::Int(st.pos as i64))
            }),
            "seek" => ("seek", |_, r, mut a| {
                let off = a.required(0, "offset")?;
                let whence = a.take(1, "whence")?;
                a.finish(2)?;
                let f = binary(r)?;
                let mut st = f.state.borrow_mut();
                if st.closed {
                    return Err(Exc::value_error("I/O operation on closed file."));
                }
                let off = crate::object::ops::as_i64(&off).ok_or_else(|| {
                    Exc::type_error(format!(
                        "'{}' object cannot be interpreted as an integer",
                        off.type_name()
                    ))
                })?;
                let base = match whence.as_ref().and_then(crate::object::ops::as_i64) {
                    None | Some(0) => 0,
                    Some(1) => st.pos as i64,
                    Some(2) => st.data.len() as i64,
                    Some(w) => {
                        return Err(Exc::value_error(format!("whence value {w} unsupported")))
                    }
                };
                let at = base + off;
                if at < 0 {
                    return Err(Exc::value_error(format!("negative seek position {at}")));
                }
                st.pos = at as usize;
                Ok(Value::Int(at))
            }),
            "flush" => ("flush", |_, r, _| {
                let f = binary(r)?;
                if let Some(w) = f.state.borrow_mut().writer.as_mut() {
                    w.flush().map_err(|e| os_error(&e, &f.name))?;
                }
                Ok(Value::None)
            }),
            "close" => ("close", |_, r, _| {
                binary(r)?.close();
                Ok(Value::None)
            }),
            "readable" => ("readable", |_, r, _| Ok(Value::Bool(binary(r)?.readable))),
            "writable" => ("writable", |_, r, _| Ok(Value::Bool(binary(r)?.writable))),
            "seekable" => ("seekable", |_, _, _| Ok(Value::Bool(true))),
            _ => return None,
        };
        Some(method(
            &r,
            name,
            "a method of a file open in binary mode",
            f,
        ))
    }
    fn enter_value(
        &self,
        this: &Rc<dyn NativeObject>,
        _it: &mut dyn Interpreter,
    ) -> Result<Value, Exc> {
        if self.state.borrow().closed {
            return Err(Exc::value_error("I/O operation on closed file."));
        }
        Ok(Value::Object(this.clone()))
    }
    fn exit(&self, _it: &mut dyn Interpreter) -> Result<(), Exc> {
        self.close();
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl BinaryFile {
    fn close(&self) {
        let mut st = self.state.borrow_mut();
        if let Some(mut w) = st.writer.take() {
            let _ = w.flush();
        }
        st.closed = true;
    }
}

fn binary(r: &Value) -> Result<&BinaryFile, Exc> {
    crate::modules::python::native::downcast::<BinaryFile>(r, "a binary file")
}
