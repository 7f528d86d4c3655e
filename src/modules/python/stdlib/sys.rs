//! `sys`: the output streams, `argv`, version information, `exit`, `exc_info`.

use std::rc::Rc;

use super::{module, set_fns};
use crate::object::value::{BuiltinFn, Module};
use crate::object::{builtin, Args, Exc, ExcKind, Interpreter, Value};

pub fn build() -> Rc<Module> {
    let m = module("sys", "system streams and information");
    for (name, doc, f) in [
        ("sys.stdout", "standard output", write_stdout as BuiltinFn),
        ("sys.stderr", "standard error", write_stderr),
    ] {
        let s = module(name, doc);
        s.set(
            "write",
            builtin("write", "write(text): write text to the stream.", f),
        );
        s.set(
            "flush",
            builtin("flush", "flush(): no-op; output is streamed.", |_, _| {
                Ok(Value::None)
            }),
        );
        m.set(name.trim_start_matches("sys."), Value::Module(s));
    }
    m.set(
        "version",
        Value::str(concat!("devarray ", env!("CARGO_PKG_VERSION"))),
    );
    // The language level devarray follows, for programs that test it.
    m.set(
        "version_info",
        Value::tuple(vec![
            Value::Int(3),
            Value::Int(11),
            Value::Int(0),
            Value::str("final"),
            Value::Int(0),
        ]),
    );
    let stdin = crate::modules::python::stdin::stdin_object();
    m.set("stdin", stdin.clone());
    m.set("__stdin__", stdin);
    m.set("argv", Value::list(vec![Value::str("devarray")]));
    m.set("platform", Value::str(std::env::consts::OS));
    m.set("maxsize", Value::Int(i64::MAX));
    m.set(
        "get_int_max_str_digits",
        builtin(
            "get_int_max_str_digits",
            "get_int_max_str_digits(): the digit limit of int <-> decimal str conversion.",
            |_, a| {
                a.finish(0)?;
                Ok(Value::Int(crate::object::bigint::max_str_digits() as i64))
            },
        ),
    );
    m.set(
        "set_int_max_str_digits",
        builtin(
            "set_int_max_str_digits",
            "set_int_max_str_digits(maxdigits): set the digit limit (0: none, else >= 640).",
            |_, mut a| {
                let n = a.required(0, "maxdigits")?;
                a.finish(1)?;
                let n = super::int(&n)?;
                let min = crate::object::bigint::MIN_MAX_STR_DIGITS as i64;
                if n != 0 && n < min {
                    return Err(crate::object::Exc::value_error(format!(
                        "maxdigits must be 0 or larger than {min}"
                    )));
                }
                crate::object::bigint::set_max_str_digits(n as usize);
                Ok(Value::None)
            },
        ),
    );
    m.set(
        "byteorder",
        Value::str(if cfg!(target_endian = "little") {
            "little"
        } else {
            "big"
        }),
    );
    m.set("path", Value::list(vec![Value::str("")]));
    // Read when asked, so it lists the modules imported by then (`d2l = sys.modules[__name__]`).
    m.set(
        "__getattr__",
        builtin("__getattr__", "", |it, mut a| {
            let name = a.required(0, "name")?;
            a.finish(1)?;
            match &name {
                Value::Str(s) if &**s == "modules" => Ok(modules(it)),
                other => Err(Exc::new(
                    ExcKind::AttributeError,
                    format!(
                        "module 'sys' has no attribute '{}'",
                        crate::object::format::to_str(it, other)?
                    ),
                )),
            }
        }),
    );
    set_fns(
        &m,
        &[
            ("exit", "exit(status=None): raise SystemExit(status).", exit),
            (
                "exc_info",
                "exc_info(): (type, value, traceback) of the exception being handled, or three Nones.",
                |it, a| {
                    a.finish(0)?;
                    Ok(match it.handled() {
                        Some(e) => {
                            let t = match &e {
                                Value::Exception(x) => Value::ExcType(x.kind),
                                Value::Instance(i) => i.class().value(),
                                _ => Value::None,
                            };
                            let tb = it.get_attr(&e, "__traceback__").unwrap_or(Value::None);
                            Value::tuple(vec![t, e, tb])
                        }
                        None => Value::tuple(vec![Value::None, Value::None, Value::None]),
                    })
                },
            ),
            (
                "exception",
                "exception(): the exception being handled, or None.",
                |it, a| {
                    a.finish(0)?;
                    Ok(it.handled().unwrap_or(Value::None))
                },
            ),
            (
                "getrecursionlimit",
                "getrecursionlimit(): the nesting depth of calls before RecursionError.",
                |_, a| {
                    a.finish(0)?;
                    Ok(Value::Int(1000))
                },
            ),
            (
                "setrecursionlimit",
                "setrecursionlimit(n): accepted; devarray grows its stack as calls nest.",
                |_, mut a| {
                    let n = super::int(&a.required(0, "limit")?)?;
                    a.finish(1)?;
                    if n < 1 {
                        return Err(Exc::value_error(
                            "recursion limit must be greater or equal than 1",
                        ));
                    }
                    Ok(Value::None)
                },
            ),
        ],
    );
    m
}

/// `sys.exit(status)`; also the built-ins `exit` and `quit` that CPython's `site` adds.
pub fn exit(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let status = a.take(0, "status")?.unwrap_or(Value::None);
    a.finish(1)?;
    let msg = match &status {
        Value::None => String::new(),
        v => crate::object::format::to_str(it, v)?,
    };
    Err(Exc::new(ExcKind::SystemExit, msg))
}

/// What `sys.stdout` (or `sys.stderr`) is now, when a program has replaced it
/// (`sys.stdout = f`, `contextlib.redirect_stdout`); None for the session's own stream.
pub(crate) fn current_stream(it: &mut dyn Interpreter, name: &str) -> Option<Value> {
    let stream = it.state().modules.get("sys")?.get(name)?;
    match &stream {
        Value::Module(m) if m.name == format!("sys.{name}") => None,
        _ => Some(stream),
    }
}

fn stream_text(mut a: Args) -> Result<String, Exc> {
    let v = a.required(0, "text")?;
    a.finish(1)?;
    match v {
        Value::Str(ref s) => Ok(s.to_string()),
        other => Err(Exc::type_error(format!(
            "write() argument must be str, not {}",
            other.type_name()
        ))),
    }
}

fn write_stdout(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let s = stream_text(a)?;
    it.out().stdout(&s);
    Ok(Value::Int(s.chars().count() as i64))
}

fn write_stderr(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let s = stream_text(a)?;
    it.out().stderr(&s);
    Ok(Value::Int(s.chars().count() as i64))
}

/// `sys.modules`: the modules imported so far, by name, in name order. A snapshot: a program
/// that stores into it does not import anything.
fn modules(it: &mut dyn Interpreter) -> Value {
    let mut mods: Vec<(String, Rc<Module>)> = it
        .state()
        .modules
        .iter()
        .map(|(k, m)| (k.clone(), m.clone()))
        .collect();
    mods.sort_by(|a, b| a.0.cmp(&b.0));
    let mut d = crate::object::value::Dict::default();
    for (k, m) in mods {
        let key = Value::str(&k);
        if let Ok(h) = crate::object::hash_key(&key) {
            d.insert(h, key, Value::Module(m));
        }
    }
    // `__main__`: the session's own names, as they are now (a snapshot, not a live view).
    let main = Module::new("__main__", "");
    main.set("__name__", Value::str("__main__"));
    let names: Vec<(String, Value)> = {
        let g = &it.state().globals;
        g.keys()
            .filter_map(|k| Some((k.to_string(), g.get(k)?.clone())))
            .collect()
    };
    for (k, v) in names {
        main.set(&k, v);
    }
    let key = Value::str("__main__");
    if let Ok(h) = crate::object::hash_key(&key) {
        d.insert(h, key, Value::Module(Rc::new(main)));
    }
    Value::Dict(Rc::new(std::cell::RefCell::new(d)))
}
