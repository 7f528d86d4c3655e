//! `open()`: text files as CPython's `io.TextIOWrapper` behaves for what programs do with them:
//! `read`, `readline`, `readlines`, iteration by line, `write`, `writelines`, `close`, `with`.
//! Modes `r`, `w`, `a`, `x` (and `+`), and `rb`: a binary file for reading (`read(size)` gives
//! `bytes`, what `hashlib` checks a downloaded file with); the other binary modes are refused. A
//! file opened for reading is read whole when opened: data files here are small.

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
pub fn open(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let path = a.required(0, "file")?;
    let mode = a.take(1, "mode")?.unwrap_or(Value::str("r"));
    for k in ["buffering", "encoding", "errors", "newline"] {
        a.take_kw(k);
    }
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
    if mode.contains('b') {
        if matches!(&**mode, "rb" | "br") {
            let data = std::fs::read(&**path).map_err(|e| os_error(&e, path))?;
            return Ok(Value::Object(Rc::new(BinaryFile {
                name: path.clone(),
                state: RefCell::new((data, 0, false)),
            })));
        }
        return Err(Exc::value_error(format!(
            "binary mode '{mode}' is not supported: devarray reads binary files ('rb') but does not write them; open the file in text mode ('w', 'a'), and save arrays with npx.save, nd.save or torch.save"
        )));
    }
    let kinds = mode.chars().filter(|c| "rwax".contains(*c)).count();
    if kinds != 1 || mode.chars().any(|c| !"rwax+t".contains(c)) {
        return Err(Exc::value_error(format!("invalid mode: '{mode}'")));
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

/// A file opened with `'rb'`: CPython's `io.BufferedReader` for reading it in pieces.
struct BinaryFile {
    name: Rc<str>,
    /// The file's bytes, the read position, and whether it is closed.
    state: RefCell<(Vec<u8>, usize, bool)>,
}

impl NativeObject for BinaryFile {
    fn type_name(&self) -> &str {
        "_io.BufferedReader"
    }
    fn repr(&self) -> String {
        format!("<_io.BufferedReader name='{}'>", self.name)
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this.clone());
        let (name, f): (&'static str, crate::object::value::MethodFn) = match name {
            "name" => return Some(Value::Str(self.name.clone())),
            "mode" => return Some(Value::str("rb")),
            "closed" => return Some(Value::Bool(self.state.borrow().2)),
            "read" => ("read", |_, r, mut a| {
                let n = a.take(0, "size")?;
                a.finish(1)?;
                let f = binary(r)?;
                let mut st = f.state.borrow_mut();
                if st.2 {
                    return Err(Exc::value_error("read of closed file"));
                }
                let rest = st.0.len() - st.1;
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
                let out = st.0[st.1..st.1 + take].to_vec();
                st.1 += take;
                Ok(Bytes::value(out))
            }),
            "close" => ("close", |_, r, _| {
                binary(r)?.state.borrow_mut().2 = true;
                Ok(Value::None)
            }),
            "readable" => ("readable", |_, _, _| Ok(Value::Bool(true))),
            "writable" => ("writable", |_, _, _| Ok(Value::Bool(false))),
            _ => return None,
        };
        Some(method(
            &r,
            name,
            "a method of a file open for reading bytes",
            f,
        ))
    }
    fn enter_value(
        &self,
        this: &Rc<dyn NativeObject>,
        _it: &mut dyn Interpreter,
    ) -> Result<Value, Exc> {
        if self.state.borrow().2 {
            return Err(Exc::value_error("I/O operation on closed file."));
        }
        Ok(Value::Object(this.clone()))
    }
    fn exit(&self, _it: &mut dyn Interpreter) -> Result<(), Exc> {
        self.state.borrow_mut().2 = true;
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn binary(r: &Value) -> Result<&BinaryFile, Exc> {
    crate::modules::python::native::downcast::<BinaryFile>(r, "a binary file")
}
