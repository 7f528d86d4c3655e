//! Traceback objects (`e.__traceback__`, `sys.exc_info()[2]`): where a caught exception has
//! been, outermost frame first, as a chain of `tb_next` entries with `tb_lineno` and
//! `tb_frame.f_code.co_name`, read from the frames kept in its links once it was caught.

use std::rc::Rc;

use super::error::{ExcLinks, Frame};
use super::value::{NativeObject, Value};

/// `e.__traceback__`: None until an `except` clause caught it (CPython: until raised).
pub fn traceback_value(links: Option<&ExcLinks>) -> Value {
    match links.and_then(|l| l.trace.clone()) {
        Some(trace) if !trace.is_empty() => entry(trace, 0),
        _ => Value::None,
    }
}

fn entry(trace: Rc<[Frame]>, at: usize) -> Value {
    Value::Object(Rc::new(Traceback { trace, at }))
}

/// `type(obj)` of these objects: `traceback`, `frame`, `code`, as CPython names them (one class
/// per name and thread).
fn class_named(name: &'static str) -> Value {
    thread_local! {
        static CLASSES: std::cell::RefCell<Vec<(&'static str, Value)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    CLASSES.with(|c| {
        let mut c = c.borrow_mut();
        if let Some((_, v)) = c.iter().find(|(n, _)| *n == name) {
            return v.clone();
        }
        let class = Value::Class(super::class::builtin_type(name, ""));
        c.push((name, class.clone()));
        class
    })
}

/// The frames of traceback `v` from its entry on (what `traceback.extract_tb` walks); None
/// when `v` is not a traceback.
pub fn frames_of(v: &Value) -> Option<Vec<Frame>> {
    match v {
        Value::Object(o) => {
            let tb = o.as_any().downcast_ref::<Traceback>()?;
            Some(tb.trace.get(tb.at..).unwrap_or_default().to_vec())
        }
        _ => None,
    }
}

thread_local! {
    /// Which file each running source text came from (a script's path, a library module's
    /// `__file__`), keyed by the text's address: frames keep only the text.
    static FILES: std::cell::RefCell<Vec<(std::rc::Weak<str>, Rc<str>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Records that `source` is the text of `file`, for tracebacks' `File "..."` lines.
pub fn name_source(source: &Rc<str>, file: Rc<str>) {
    FILES.with(|f| {
        let mut f = f.borrow_mut();
        f.retain(|(s, _)| s.strong_count() > 0);
        f.push((Rc::downgrade(source), file));
    })
}

/// The file `source` was read from, as [`name_source`] recorded it.
pub fn source_file(source: &Rc<str>) -> Option<Rc<str>> {
    FILES.with(|f| {
        f.borrow()
            .iter()
            .find(|(s, _)| {
                s.strong_count() > 0 && std::ptr::addr_eq(s.as_ptr(), Rc::as_ptr(source))
            })
            .map(|(_, file)| file.clone())
    })
}

/// The file a frame's code came from; `<stdin>` for what was typed (CPython's REPL name).
pub fn file_of(f: &Frame) -> Rc<str> {
    source_file(&f.source).unwrap_or_else(|| Rc::from("<stdin>"))
}

fn line(f: &Frame) -> i64 {
    crate::lang::span::locate(&f.source, f.span).0 as i64
}

struct Traceback {
    trace: Rc<[Frame]>,
    at: usize,
}

impl NativeObject for Traceback {
    fn type_name(&self) -> &str {
        "traceback"
    }
    fn class_value(&self) -> Option<Value> {
        Some(class_named("traceback"))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn repr(&self) -> String {
        format!("<traceback object at {:#x}>", self as *const Self as usize)
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let f = self.trace.get(self.at)?;
        Some(match name {
            "tb_lineno" => Value::Int(line(f)),
            "tb_next" if self.at + 1 < self.trace.len() => entry(self.trace.clone(), self.at + 1),
            "tb_next" => Value::None,
            "tb_frame" => Value::Object(Rc::new(FrameObject {
                name: f.function.clone(),
                file: file_of(f),
                line: line(f),
            })),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["tb_frame", "tb_lineno", "tb_next"]
    }
}

/// `tb.tb_frame`: the function the entry is in, at the entry's line.
struct FrameObject {
    name: Rc<str>,
    file: Rc<str>,
    line: i64,
}

impl NativeObject for FrameObject {
    fn type_name(&self) -> &str {
        "frame"
    }
    fn class_value(&self) -> Option<Value> {
        Some(class_named("frame"))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn repr(&self) -> String {
        format!(
            "<frame at {:#x}, line {}, code {}>",
            self as *const Self as usize, self.line, self.name
        )
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "f_lineno" => Value::Int(self.line),
            "f_code" => Value::Object(Rc::new(CodeObject {
                name: self.name.clone(),
                file: self.file.clone(),
            })),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["f_code", "f_lineno"]
    }
}

/// `frame.f_code`: its function's name and file.
struct CodeObject {
    name: Rc<str>,
    file: Rc<str>,
}

impl NativeObject for CodeObject {
    fn type_name(&self) -> &str {
        "code"
    }
    fn class_value(&self) -> Option<Value> {
        Some(class_named("code"))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn repr(&self) -> String {
        format!(
            "<code object {} at {:#x}>",
            self.name, self as *const Self as usize
        )
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "co_name" => Some(Value::Str(self.name.clone())),
            "co_filename" => Some(Value::Str(self.file.clone())),
            _ => None,
        }
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["co_filename", "co_name"]
    }
}
