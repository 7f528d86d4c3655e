//! `compile`, `exec` and `eval`: source text made into a code object and run, in the running
//! scope or in a dictionary of globals, as CPython's built-ins do.
//!
//! A code object keeps its source, checked once by the parser when it is made (a syntax error
//! is raised by `compile`, with CPython's `SyntaxError` arguments: message, file name, line,
//! column and text), and runs through the interpreter's snippet runner. A dictionary of globals
//! is the namespace of a module over it (`Module::over_dict`): the code and the functions it
//! defines read and write the dictionary itself.

use std::rc::Rc;

use crate::lang::span::{locate, Span};
use crate::object::error::{Exc, ExcKind, Frame};
use crate::object::value::{Args, Dict, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter, NameMap};

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Exec,
    Eval,
    Single,
}

/// A compiled program: what `compile` returns and `exec`/`eval` run.
pub struct Code {
    source: Rc<str>,
    filename: String,
    mode: Mode,
}

impl NativeObject for Code {
    fn type_name(&self) -> &str {
        "code"
    }
    fn repr(&self) -> String {
        format!(
            "<code object <module> at {:#x}, file \"{}\", line 1>",
            self as *const Code as usize, self.filename
        )
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "co_filename" => Value::str(&self.filename),
            "co_name" | "co_qualname" => Value::str("<module>"),
            "co_firstlineno" => Value::Int(1),
            _ => return None,
        })
    }
    fn class_value(&self) -> Option<Value> {
        thread_local! {
            static CLASS: Value = Value::Class(crate::modules::python::stdlib::native_class(
                "code",
                "builtins",
                Value::Type(crate::object::value::TypeKind::Object),
                "Create a code object.  Not for the faint of heart.",
                &[],
            ));
        }
        Some(CLASS.with(Value::clone))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["co_filename", "co_firstlineno", "co_name", "co_qualname"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub fn install(b: &mut NameMap<Value>) {
    let fns: &[(&'static str, &'static str, crate::object::value::BuiltinFn)] = &[
        (
            "compile",
            "compile(source, filename, mode): a code object for exec() ('exec', 'single') or eval() ('eval').",
            compile,
        ),
        (
            "exec",
            "exec(source, globals=None, locals=None): run statements (a string or a code object).",
            exec,
        ),
        (
            "eval",
            "eval(source, globals=None, locals=None): the value of an expression (a string or a code object).",
            eval,
        ),
    ];
    for (name, doc, f) in fns {
        b.insert((*name).into(), builtin(name, doc, *f));
    }
}

/// CPython's `SyntaxError(msg, (filename, lineno, offset, text, end_lineno, end_offset))`.
fn syntax_error(kind: ExcKind, message: &str, filename: &str, source: &str, span: Span) -> Exc {
    let (line, col, text) = locate(source, span);
    let (end_line, end_col, _) = locate(source, Span::new(span.end, span.end));
    // The line's text keeps its newline, as the tokenizer read it.
    let newline = source
        .get(span.start.min(source.len())..)
        .and_then(|rest| rest.find('\n'))
        .is_some();
    let text = if newline {
        format!("{text}\n")
    } else {
        text.to_string()
    };
    let mut e = Exc::new(kind, message);
    e.args = Some(Rc::new(vec![
        Value::str(message),
        Value::tuple(vec![
            Value::str(filename),
            Value::Int(line as i64),
            Value::Int(col as i64),
            Value::str(&text),
            Value::Int(end_line as i64),
            Value::Int(end_col as i64),
        ]),
    ]));
    // The location is a frame of its own, under the call that compiled it, and shows no
    // function (`display::error`): CPython's `File "f", line 1` block.
    e.frames.push(Frame {
        function: Rc::from(""),
        source: Rc::from(source),
        span,
    });
    e
}

/// Parses `source` once, so that a syntax error is `compile`'s (or `exec`'s) error, with its
/// location in the compiled text.
fn check(source: &str, filename: &str, mode: Mode) -> Result<(), Exc> {
    let program = crate::object::stack::maybe_grow(256 * 1024, 4 * 1024 * 1024, || {
        crate::lang::parse(source)
    })
    .map_err(|e| {
        if e.too_deep {
            Exc::new(
                ExcKind::RecursionError,
                "maximum recursion depth exceeded during compilation",
            )
        } else {
            syntax_error(ExcKind::SyntaxError, &e.message, filename, source, e.span)
        }
    })?;
    if mode == Mode::Eval {
        match program.body.as_slice() {
            [stmt] if matches!(stmt.kind, crate::lang::ast::StmtKind::Expr(_)) => {}
            [] => {
                let end = source.len();
                return Err(syntax_error(
                    ExcKind::SyntaxError,
                    "invalid syntax",
                    filename,
                    source,
                    Span::new(end, end),
                ));
            }
            [stmt, ..] => {
                return Err(syntax_error(
                    ExcKind::SyntaxError,
                    "invalid syntax",
                    filename,
                    source,
                    stmt.span,
                ))
            }
        }
    }
    Ok(())
}

fn text_arg(v: &Value, function: &str, what: &str) -> Result<Rc<str>, Exc> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        _ => Err(Exc::type_error(format!(
            "{function}() arg 1 must be {what}"
        ))),
    }
}

fn compile(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let source = a.required(0, "source")?;
    let filename = a.required(1, "filename")?;
    let mode = a.required(2, "mode")?;
    for kw in ["flags", "dont_inherit", "optimize"] {
        a.take_kw(kw);
    }
    a.finish(6)?;
    let source = match &source {
        Value::Str(s) => s.clone(),
        _ => {
            return Err(Exc::type_error(
                "compile() arg 1 must be a string, bytes or AST object",
            ))
        }
    };
    let filename = match &filename {
        Value::Str(s) => s.to_string(),
        other => {
            return Err(Exc::type_error(format!(
                "compile() argument 'filename' must be str, not {}",
                other.type_name()
            )))
        }
    };
    let mode = match &mode {
        Value::Str(s) if &**s == "exec" => Mode::Exec,
        Value::Str(s) if &**s == "eval" => Mode::Eval,
        Value::Str(s) if &**s == "single" => Mode::Single,
        Value::Str(_) => {
            return Err(Exc::new(
                ExcKind::ValueError,
                "compile() mode must be 'exec', 'eval' or 'single'",
            ))
        }
        other => {
            return Err(Exc::type_error(format!(
                "compile() argument 'mode' must be str, not {}",
                other.type_name()
            )))
        }
    };
    check(&source, &filename, mode)?;
    Ok(crate::modules::python::native::object(Code {
        source,
        filename,
        mode,
    }))
}

/// The code to run: a code object, or a string compiled here as `<string>`.
fn code_of(v: &Value, function: &str, mode: Mode) -> Result<(Rc<str>, Mode), Exc> {
    if let Value::Object(o) = v {
        if let Some(code) = o.as_any().downcast_ref::<Code>() {
            return Ok((code.source.clone(), code.mode));
        }
    }
    let source = text_arg(v, function, "a string, bytes or code object")?;
    check(&source, "<string>", mode)?;
    Ok((source, mode))
}

fn namespace(v: Option<Value>, function: &str, what: &str) -> Result<Option<Value>, Exc> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(d @ Value::Dict(_)) => Ok(Some(d)),
        Some(other) => Err(Exc::type_error(format!(
            "{function}() {what} must be a dict, not {}",
            other.type_name()
        ))),
    }
}

fn exec(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    run(it, a, "exec", Mode::Exec).map(|_| Value::None)
}

fn eval(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    run(it, a, "eval", Mode::Eval)
}

fn run(it: &mut dyn Interpreter, mut a: Args, function: &str, mode: Mode) -> Result<Value, Exc> {
    let source = a.required(0, "source")?;
    let globals = namespace(a.take(1, "globals")?, function, "globals")?;
    let locals = match a.take(2, "locals")? {
        None | Some(Value::None) => None,
        Some(d @ Value::Dict(_)) => Some(d),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "locals must be a mapping, not {}",
                other.type_name()
            )))
        }
    };
    a.finish(3)?;
    let (source, code_mode) = code_of(&source, function, mode)?;
    let result = match (globals, locals) {
        (None, None) => it.run_snippet(&source).map_err(frame_of_code),
        (globals, locals) => run_in(it, &source, globals, locals),
    }?;
    // `eval` of a code object compiled for `exec` runs it and gives None, as CPython.
    Ok(match (mode, code_mode) {
        (Mode::Eval, Mode::Eval) => result.unwrap_or(Value::None),
        _ => Value::None,
    })
}

/// The code's location becomes a frame of its own (`<module>` of the code), under the caller's.
fn frame_of_code(mut e: Exc) -> Exc {
    if let (Some(span), Some(source)) = (e.span.take(), e.source.take()) {
        e.frames.insert(
            0,
            Frame {
                function: Rc::from("<module>"),
                source,
                span,
            },
        );
    }
    e
}

/// Runs with a dictionary of globals (and one of locals). With globals alone (or the same
/// dictionary twice) the dictionary itself is the module's namespace, read and written live:
/// what the code binds is in it at once, and functions it defines see later changes to it.
/// With a separate locals dictionary the code binds into the locals, and the functions it
/// defines see the globals. (A locals mapping that is not a dict: the names are copied into a
/// module for the run and what the code bound is written back.)
fn run_in(
    it: &mut dyn Interpreter,
    source: &str,
    globals: Option<Value>,
    locals: Option<Value>,
) -> Result<Option<Value>, Exc> {
    // CPython puts the built-ins into a globals dictionary that lacks them.
    if let Some(Value::Dict(g)) = &globals {
        let key = Value::str("__builtins__");
        let hk = crate::object::hash_key(&key)?;
        if g.borrow().get(&hk).is_none() {
            let builtins = builtins_module(it);
            g.borrow_mut().insert(hk, key, builtins);
        }
    }
    let shared = match (&globals, &locals) {
        (Some(Value::Dict(g)), None) => Some(g),
        (Some(Value::Dict(g)), Some(Value::Dict(l))) if Rc::ptr_eq(g, l) => Some(g),
        _ => None,
    };
    if let Some(g) = shared {
        let module = namespace_module(g);
        return it.run_module(&module, source);
    }
    if let (Some(Value::Dict(g)), Some(Value::Dict(l))) = (&globals, &locals) {
        // The code binds into the locals and reads them first; the functions it defines
        // see the globals, live.
        let module = Rc::new(Module {
            outer: Some(namespace_module(g)),
            ..Module::over_dict("__main__", l)
        });
        return it.run_module(&module, source);
    }
    let module = Rc::new(Module::new("__main__", ""));
    let dicts: Vec<&Value> = globals.iter().chain(locals.iter()).collect();
    for d in &dicts {
        if let Value::Dict(d) = d {
            for (k, v) in d.borrow().entries.iter() {
                if let Value::Str(name) = k {
                    module.set(name, v.clone());
                }
            }
        }
    }
    let before: Vec<(Rc<str>, Value)> = module
        .attrs
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let result = it.run_module(&module, source);
    // Written back even after an error: what ran before it stays done, as in CPython. Only
    // what the code bound: the globals copied in stay out of the locals.
    if let Some(Value::Dict(d)) = locals.as_ref().or(globals.as_ref()) {
        let unchanged: Vec<Rc<str>> = before
            .iter()
            .filter(|(k, v)| module.get(k).is_some_and(|now| now.is(v)))
            .map(|(k, _)| k.clone())
            .collect();
        let in_target = |name: &Rc<str>| {
            let hk = crate::object::value::HashKey::Str(name.clone());
            d.borrow().get(&hk).is_some()
        };
        let keep: Vec<Rc<str>> = unchanged.into_iter().filter(|n| !in_target(n)).collect();
        for name in &keep {
            module.attrs.borrow_mut().remove(name);
        }
        write_back(&module, d)?;
    }
    result
}

/// A dictionary `exec` ran code in, and the module over it.
type Namespace = (std::rc::Weak<std::cell::RefCell<Dict>>, Rc<Module>);

thread_local! {
    /// The module over each dictionary `exec` has run code in: the same one every time, so
    /// functions defined by one `exec` and another share their globals. Dropped with the
    /// dictionary (its functions then find no globals, as they find no more of the module).
    static NAMESPACES: std::cell::RefCell<Vec<Namespace>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn namespace_module(dict: &Rc<std::cell::RefCell<Dict>>) -> Rc<Module> {
    NAMESPACES.with(|n| {
        let mut n = n.borrow_mut();
        n.retain(|(d, _)| d.strong_count() > 0);
        if let Some((_, m)) = n
            .iter()
            .find(|(d, _)| std::ptr::eq(d.as_ptr(), Rc::as_ptr(dict)))
        {
            return m.clone();
        }
        let module = Rc::new(Module::over_dict("__main__", dict));
        n.push((Rc::downgrade(dict), module.clone()));
        module
    })
}

/// The `builtins` module a globals dictionary receives as `__builtins__`.
fn builtins_module(it: &mut dyn Interpreter) -> Value {
    if let Ok(m) = it.import("builtins") {
        return Value::Module(m);
    }
    let module = Module::new("builtins", "");
    for (name, value) in it.state().builtins.iter() {
        module.set(name, value.clone());
    }
    Value::Module(Rc::new(module))
}

/// The names the code bound or rebound, into the dictionary. (A module keeps no order of its
/// names: new ones are added sorted.)
fn write_back(module: &Module, target: &Rc<std::cell::RefCell<Dict>>) -> Result<(), Exc> {
    let attrs = module.attrs.borrow();
    let mut names: Vec<&Rc<str>> = attrs.keys().collect();
    names.sort();
    for name in names {
        let key = Value::Str(name.clone());
        let hk = crate::object::hash_key(&key)?;
        let value = attrs[name].clone();
        let same = matches!(target.borrow().get(&hk), Some(old) if old.is(&value));
        if !same {
            target.borrow_mut().insert(hk, key, value);
        }
    }
    Ok(())
}
