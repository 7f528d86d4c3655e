//! `traceback`: the text CPython 3.11's `traceback` module gives for caught exceptions
//! (`print_exc`, `format_exc`, `print_exception`, `format_exception`, `format_exception_only`,
//! `extract_tb`, `format_tb`, `print_tb`, `format_list`, `print_list`) and its `FrameSummary`.
//!
//! The frames are laid out by `display::pytrace`, which also prints a script's uncaught errors.

use std::rc::Rc;

use super::{module, native_class, new_instance, set_fns, this_state};
use crate::display::pytrace::{format_entries, Entry, HEADER};
use crate::object::class::Class;
use crate::object::error::Frame;
use crate::object::value::{Module, TypeKind};
use crate::object::{format, Args, Exc, Interpreter, Value};

pub fn build() -> Rc<Module> {
    let m = module(
        "traceback",
        "Extract, format and print information about Python stack traces.",
    );
    set_fns(
        &m,
        &[
            ("print_exc", "print_exc(limit=None, file=None, chain=True): print the exception being handled.", print_exc),
            ("format_exc", "format_exc(limit=None, chain=True): the exception being handled, as print_exc prints it.", format_exc),
            ("print_exception", "print_exception(exc, /, value, tb, limit=None, file=None, chain=True)", print_exception),
            ("format_exception", "format_exception(exc, /, value, tb, limit=None, chain=True): a list of lines.", format_exception),
            ("format_exception_only", "format_exception_only(exc, /, value): the 'Type: message' lines.", format_exception_only),
            ("extract_tb", "extract_tb(tb, limit=None): the frames of a traceback, as FrameSummary objects.", extract_tb),
            ("format_tb", "format_tb(tb, limit=None): one string per frame of a traceback.", format_tb),
            ("print_tb", "print_tb(tb, limit=None, file=None): print the frames of a traceback.", print_tb),
            ("format_list", "format_list(extracted_list): one string per FrameSummary.", format_list),
            ("print_list", "print_list(extracted_list, file=None): print what format_list gives.", print_list),
        ],
    );
    m.set("FrameSummary", Value::Class(frame_summary_class()));
    m
}

/// `limit` as CPython reads it: the first N frames, or the last N when negative.
fn limited(mut frames: Vec<Frame>, limit: &Option<Value>) -> Result<Vec<Frame>, Exc> {
    match limit {
        None | Some(Value::None) => {}
        Some(v) => {
            let n = super::int(v)?;
            if n >= 0 {
                frames.truncate(n as usize);
            } else {
                let keep = n.unsigned_abs() as usize;
                frames.drain(..frames.len().saturating_sub(keep));
            }
        }
    }
    Ok(frames)
}

fn entry(f: &Frame) -> Entry {
    let file = crate::object::traceback::file_of(f);
    Entry::at(&file, &f.function, &f.source, f.span)
}

fn traceback_frames(tb: &Value) -> Result<Vec<Frame>, Exc> {
    match tb {
        Value::None => Ok(Vec::new()),
        v => crate::object::traceback::frames_of(v).ok_or_else(|| {
            Exc::new(
                crate::object::ExcKind::AttributeError,
                format!("'{}' object has no attribute 'tb_frame'", v.type_name()),
            )
        }),
    }
}

/// `type(exc).__qualname__`, with its module unless that is `builtins` or `__main__`.
fn type_label(it: &mut dyn Interpreter, exc: &Value) -> Result<String, Exc> {
    Ok(match exc {
        Value::Exception(x) => x.kind.name().to_string(),
        Value::Instance(i) => {
            let class = i.class();
            match &*class.module {
                "" | "builtins" | "__main__" => class.qualname.to_string(),
                m => format!("{m}.{}", class.qualname),
            }
        }
        other => {
            let class = it.get_attr(other, "__class__")?;
            let name = it.get_attr(&class, "__name__")?;
            format::to_str(it, &name)?
        }
    })
}

/// `format_exception_only(exc)`: `Type: message`, and the exception's notes.
fn exception_only(it: &mut dyn Interpreter, exc: &Value) -> Result<Vec<String>, Exc> {
    if matches!(exc, Value::None) {
        return Ok(vec!["NoneType: None\n".to_string()]);
    }
    let label = type_label(it, exc)?;
    let text = format::to_str(it, exc).unwrap_or_else(|_| "<exception str() failed>".into());
    let mut out = vec![if text.is_empty() {
        format!("{label}\n")
    } else {
        format!("{label}: {text}\n")
    }];
    if let Ok(notes) = it.get_attr(exc, "__notes__") {
        for note in it.iterate(&notes)? {
            out.push(format!("{}\n", format::to_str(it, &note)?));
        }
    }
    Ok(out)
}

const CAUSE: &str = "\nThe above exception was the direct cause of the following exception:\n\n";
const CONTEXT: &str = "\nDuring handling of the above exception, another exception occurred:\n\n";

fn is_same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Instance(x), Value::Instance(y)) => Rc::ptr_eq(x, y),
        (Value::Exception(x), Value::Exception(y)) => {
            Rc::ptr_eq(x, y)
                || (x.links.as_ref().map(|l| l.serial).unwrap_or(0) != 0
                    && x.links.as_ref().map(|l| l.serial) == y.links.as_ref().map(|l| l.serial))
        }
        _ => false,
    }
}

/// `TracebackException(...).format(chain=chain)`: the chain oldest first, each with its
/// traceback and its `Type: message` line.
fn exception_lines(
    it: &mut dyn Interpreter,
    exc: &Value,
    tb: Option<Value>,
    limit: &Option<Value>,
    chain: bool,
) -> Result<Vec<String>, Exc> {
    let mut links: Vec<(Option<&'static str>, Value, Value)> = Vec::new();
    let first_tb = match tb {
        Some(tb) => tb,
        None if matches!(exc, Value::None) => Value::None,
        None => it.get_attr(exc, "__traceback__")?,
    };
    let mut current = Some((exc.clone(), first_tb));
    while let Some((e, tb)) = current.take() {
        let mut next = None;
        let mut message = None;
        if chain && !matches!(e, Value::None) {
            let cause = it.get_attr(&e, "__cause__")?;
            let context = it.get_attr(&e, "__context__")?;
            let suppress = it.get_attr(&e, "__suppress_context__")?;
            if !matches!(cause, Value::None) {
                message = Some(CAUSE);
                next = Some(cause);
            } else if !matches!(context, Value::None) && !suppress.truthy()? {
                message = Some(CONTEXT);
                next = Some(context);
            }
        }
        links.push((message, e, tb));
        if let Some(n) = next {
            // A cycle ends the chain, as CPython's `_seen` set does.
            if !links.iter().any(|(_, seen, _)| is_same(seen, &n)) {
                let tb = it.get_attr(&n, "__traceback__")?;
                current = Some((n, tb));
            }
        }
    }
    let mut out = Vec::new();
    for (message, e, tb) in links.into_iter().rev() {
        if let Some(m) = message {
            out.push(m.to_string());
        }
        let frames = limited(traceback_frames(&tb)?, limit)?;
        if !frames.is_empty() {
            out.push(HEADER.to_string());
            let entries: Vec<Entry> = frames.iter().map(entry).collect();
            out.extend(format_entries(&entries));
        }
        out.extend(exception_only(it, &e)?);
    }
    Ok(out)
}

/// The `(exc, value, tb)` of `print_exception`/`format_exception`: the exception alone (3.10+),
/// or CPython's older three arguments.
fn exception_args(a: &mut Args, it: &mut dyn Interpreter) -> Result<(Value, Option<Value>), Exc> {
    let first = a.required(0, "exc")?;
    let value = a.take(1, "value")?;
    let tb = a.take(2, "tb")?;
    match (value, tb) {
        (Some(v), tb) if !matches!(first, Value::None) || !matches!(v, Value::None) => {
            let tb = match tb {
                Some(tb) => tb,
                None => it.get_attr(&v, "__traceback__")?,
            };
            Ok((v, Some(tb)))
        }
        (Some(v), tb) => Ok((v, tb)),
        (None, _) => Ok((first, None)),
    }
}

/// Writes to `file`, or to where `sys.stderr` points now (CPython's default).
fn write(it: &mut dyn Interpreter, file: Option<Value>, text: &str) -> Result<(), Exc> {
    let file = match file {
        None | Some(Value::None) => super::sys::current_stream(it, "stderr"),
        Some(f) => Some(f),
    };
    match file {
        Some(f) => crate::modules::python::builtins::write_to_stream(it, &f, text),
        None => {
            it.out().stderr(text);
            Ok(())
        }
    }
}

fn lines_value(lines: Vec<String>) -> Value {
    Value::list(lines.iter().map(|l| Value::str(l)).collect())
}

fn chain_flag(a: &mut Args) -> Result<bool, Exc> {
    a.take_kw("chain").map_or(Ok(true), |v| v.truthy())
}

fn format_exception(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (exc, tb) = exception_args(&mut a, it)?;
    let limit = a.take(3, "limit")?;
    let chain = chain_flag(&mut a)?;
    a.finish(4)?;
    Ok(lines_value(exception_lines(it, &exc, tb, &limit, chain)?))
}

fn print_exception(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (exc, tb) = exception_args(&mut a, it)?;
    let limit = a.take(3, "limit")?;
    let file = a.take(4, "file")?;
    let chain = chain_flag(&mut a)?;
    a.finish(5)?;
    let text = exception_lines(it, &exc, tb, &limit, chain)?.concat();
    write(it, file, &text)?;
    Ok(Value::None)
}

fn handled_lines(
    it: &mut dyn Interpreter,
    limit: &Option<Value>,
    chain: bool,
) -> Result<Vec<String>, Exc> {
    let exc = it.handled().unwrap_or(Value::None);
    exception_lines(it, &exc, None, limit, chain)
}

fn print_exc(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let limit = a.take(0, "limit")?;
    let file = a.take(1, "file")?;
    let chain = chain_flag(&mut a)?;
    a.finish(2)?;
    let text = handled_lines(it, &limit, chain)?.concat();
    write(it, file, &text)?;
    Ok(Value::None)
}

fn format_exc(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let limit = a.take(0, "limit")?;
    let chain = chain_flag(&mut a)?;
    a.finish(1)?;
    Ok(Value::str(&handled_lines(it, &limit, chain)?.concat()))
}

fn format_exception_only(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let first = a.required(0, "exc")?;
    let value = a.take(1, "value")?;
    a.finish(2)?;
    let exc = value.unwrap_or(first);
    Ok(lines_value(exception_only(it, &exc)?))
}

fn tb_entries(a: &mut Args) -> Result<Vec<Entry>, Exc> {
    let tb = a.required(0, "tb")?;
    let limit = a.take(1, "limit")?;
    let frames = limited(traceback_frames(&tb)?, &limit)?;
    Ok(frames.iter().map(entry).collect())
}

fn extract_tb(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let entries = tb_entries(&mut a)?;
    a.finish(2)?;
    Ok(Value::list(
        entries.into_iter().map(summary_value).collect(),
    ))
}

fn format_tb(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let entries = tb_entries(&mut a)?;
    a.finish(2)?;
    Ok(lines_value(format_entries(&entries)))
}

fn print_tb(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let entries = tb_entries(&mut a)?;
    let file = a.take(2, "file")?;
    a.finish(3)?;
    write(it, file, &format_entries(&entries).concat())?;
    Ok(Value::None)
}

/// The entries of `format_list`'s argument: FrameSummary objects or `(file, line, name, text)`
/// tuples.
fn listed_entries(it: &mut dyn Interpreter, list: &Value) -> Result<Vec<Entry>, Exc> {
    let mut out = Vec::new();
    for item in it.iterate(list)? {
        let fields = match &item {
            Value::Instance(i) if is_summary(&i.class()) => it.iterate(&i.base_state.borrow())?,
            other => it.iterate(other)?,
        };
        let [file, line, name, text] = fields.as_slice() else {
            return Err(Exc::value_error("too many values to unpack (expected 4)"));
        };
        let text = match text {
            Value::None => String::new(),
            t => format::to_str(it, t)?,
        };
        out.push(Entry::listed(
            format::to_str(it, file)?,
            super::int(line)?.max(0) as usize,
            format::to_str(it, name)?,
            text,
        ));
    }
    Ok(out)
}

fn format_list(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let list = a.required(0, "extracted_list")?;
    a.finish(1)?;
    let entries = listed_entries(it, &list)?;
    Ok(lines_value(format_entries(&entries)))
}

fn print_list(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let list = a.required(0, "extracted_list")?;
    let file = a.take(1, "file")?;
    a.finish(2)?;
    let entries = listed_entries(it, &list)?;
    write(it, file, &format_entries(&entries).concat())?;
    Ok(Value::None)
}

thread_local! {
    static FRAME_SUMMARY: Rc<Class> = native_class(
        "FrameSummary",
        "traceback",
        Value::Type(TypeKind::Object),
        "Information about a single frame from a traceback: filename, lineno, name, line.",
        &[
            ("__repr__", summary_repr),
            ("__iter__", summary_iter),
            ("__getitem__", summary_getitem),
            ("__len__", |_, _| Ok(Value::Int(4))),
        ],
    );
}

fn frame_summary_class() -> Rc<Class> {
    FRAME_SUMMARY.with(Rc::clone)
}

fn is_summary(class: &Rc<Class>) -> bool {
    FRAME_SUMMARY.with(|c| Rc::ptr_eq(c, class))
}

/// A FrameSummary: its four fields as the instance's data and as attributes.
fn summary_value(e: Entry) -> Value {
    let line = Value::str(e.text.trim());
    let fields = [
        ("filename", Value::str(&e.file)),
        ("lineno", Value::Int(e.line as i64)),
        ("name", Value::str(&e.name)),
        ("line", line),
    ];
    let v = new_instance(
        &frame_summary_class(),
        Value::tuple(fields.iter().map(|(_, v)| v.clone()).collect()),
    );
    if let Value::Instance(i) = &v {
        let mut attrs = i.attrs.borrow_mut();
        for (name, value) in fields {
            attrs.set(Rc::from(name), value);
        }
    }
    v
}

fn summary_fields(a: &mut Args) -> Result<Vec<Value>, Exc> {
    let (_, state) = this_state(a)?;
    match &state {
        Value::Tuple(t) => Ok(t.to_vec()),
        _ => Ok(Vec::new()),
    }
}

fn summary_repr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let f = summary_fields(&mut a)?;
    let [file, line, name, _] = f.as_slice() else {
        return Ok(Value::str("<FrameSummary>"));
    };
    Ok(Value::str(&format!(
        "<FrameSummary file {}, line {} in {}>",
        format::to_str(it, file)?,
        format::to_str(it, line)?,
        format::to_str(it, name)?
    )))
}

fn summary_iter(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let f = summary_fields(&mut a)?;
    super::iter_of(it, &Value::tuple(f))
}

fn summary_getitem(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let f = summary_fields(&mut a)?;
    let index = a.required(1, "index")?;
    let tuple = Value::tuple(f);
    let getitem = it.get_attr(&tuple, "__getitem__")?;
    it.call_value(&getitem, Args::positional(vec![index]))
}
