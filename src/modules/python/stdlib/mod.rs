//! The standard modules deep-learning programs import, with CPython 3.11's behaviour for what
//! they offer: `__future__`, `os` / `os.path`, `subprocess`, `random`, `math`, `time`, `sys`, `collections`,
//! `itertools`, `functools`, `hashlib`, `copy`, `json`, `re`, `typing`, `dataclasses`, `operator`, `string`,
//! `warnings`, `inspect`, `traceback`, `zipfile`/`tarfile` (reading, `archive.rs`), `platform`, `zlib`, `_struct`
//! (what `library/struct.da` wraps). One file per module; `build` dispatches. The standard
//! modules that are Python in CPython (`pathlib`, `logging`, `enum`, ...) are written in the
//! language, in `crate::modules::library`.
//!
//! Classes these modules define (`deque`, `Counter`, namedtuples, `JSONDecodeError`) are real
//! classes (`Value::Class`) made here from Rust: their special methods are built-ins named
//! `__x__` (which bind to the instance like methods), their ordinary methods are answered by a
//! built-in `__getattr__`, and a built-in base's data lives in the instance's `base_state`.

pub mod archive;
pub(crate) mod collections;
mod copy;
mod dataclasses;
mod functools;
mod hashlib;
pub mod inspect;
mod itertools;
mod json;
pub(crate) mod math;
mod math_int;
mod operator;
pub(crate) mod os;
mod os_more;
mod platform;
pub(crate) mod random;
mod re;
mod string;
mod struct_codec;
pub mod subprocess;
pub(crate) mod sys;
mod time;
mod traceback;
mod typing;
pub mod warnings;
mod zlib;

use std::cell::RefCell;
use std::rc::Rc;

use crate::object::class::{Attrs, Class, Instance};
use crate::object::value::{BuiltinFn, Module, TypeKind};
use crate::object::{builtin, Args, Exc, ExcKind, Interpreter, Value};

/// The standard modules devarray has, for the hint of a failed import.
pub const NAMES: &[&str] = &[
    "collections",
    "copy",
    "dataclasses",
    "functools",
    "getpass",
    "hashlib",
    "inspect",
    "itertools",
    "json",
    "math",
    "operator",
    "os",
    "platform",
    "random",
    "re",
    "string",
    "subprocess",
    "sys",
    "tarfile",
    "time",
    "traceback",
    "typing",
    "warnings",
    "zipfile",
    "zlib",
];

pub fn build(dotted: &str) -> Option<Rc<Module>> {
    Some(match dotted {
        "__future__" => {
            // Every feature is already the behaviour here; the names exist so imports of them work.
            let m = module(
                "__future__",
                "Future statement definitions (all already in effect).",
            );
            for f in [
                "nested_scopes",
                "generators",
                "division",
                "absolute_import",
                "with_statement",
                "print_function",
                "unicode_literals",
                "generator_stop",
                "annotations",
            ] {
                m.set(f, Value::Bool(true));
            }
            m
        }
        "time" => time::build(),
        "inspect" => inspect::build(),
        "sys" => sys::build(),
        "getpass" => crate::modules::python::stdin::build_getpass(),
        "math" => math::build(),
        "os" => os::build(),
        "os.path" => os::build_path(),
        "random" => random::build(),
        "collections" => collections::build(),
        "itertools" => itertools::build(),
        "functools" => functools::build(),
        "hashlib" => hashlib::build(),
        "copy" => copy::build(),
        "json" => json::build(),
        "re" => re::build(),
        "typing" => typing::build(),
        "dataclasses" => dataclasses::build(),
        "operator" => operator::build(),
        "string" => string::build(),
        "subprocess" => subprocess::build(),
        "traceback" => traceback::build(),
        "warnings" => warnings::build(),
        "platform" => platform::build(),
        "_struct" => struct_codec::build(),
        "zlib" => zlib::build(),
        "zipfile" => archive::build_zipfile(),
        "tarfile" => archive::build_tarfile(),
        _ => return None,
    })
}

pub(crate) fn module(name: &str, doc: &'static str) -> Rc<Module> {
    Rc::new(Module::new(name, doc))
}

/// Registers `(name, doc, f)` built-ins as members of `m`.
pub(crate) fn set_fns(m: &Module, fns: &[(&'static str, &'static str, BuiltinFn)]) {
    for (name, doc, f) in fns {
        m.set(name, builtin(name, doc, *f));
    }
}

/// A float argument (ints and bools convert).
pub(crate) fn num(v: &Value) -> Result<f64, Exc> {
    if let Value::BigInt(n) = v {
        return crate::object::bigint::to_f64(n);
    }
    crate::object::ops::as_f64(v)
        .ok_or_else(|| Exc::type_error(format!("must be real number, not {}", v.type_name())))
}

/// An integer argument; floats are refused as CPython refuses them.
pub(crate) fn int(v: &Value) -> Result<i64, Exc> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(*b as i64),
        Value::BigInt(_) => Err(Exc::new(
            ExcKind::OverflowError,
            "Python int too large to convert to C long",
        )),
        other => Err(Exc::type_error(format!(
            "'{}' object cannot be interpreted as an integer",
            other.type_name()
        ))),
    }
}

/// A string argument.
pub(crate) fn string(v: &Value, what: &str) -> Result<Rc<str>, Exc> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        other => Err(Exc::type_error(format!(
            "{what} must be str, not {}",
            other.type_name()
        ))),
    }
}

/// A class made in Rust: `methods` are its attributes (special methods named `__x__`).
pub(crate) fn native_class(
    name: &str,
    module: &str,
    base: Value,
    doc: &str,
    methods: &[(&'static str, BuiltinFn)],
) -> Rc<Class> {
    native_class_bases(name, module, vec![base], doc, methods)
}

/// [`native_class`] with several bases (`class LazyLinear(LazyModuleMixin, Linear)`).
pub(crate) fn native_class_bases(
    name: &str,
    module: &str,
    bases: Vec<Value>,
    doc: &str,
    methods: &[(&'static str, BuiltinFn)],
) -> Rc<Class> {
    let mut attrs = Attrs::default();
    for (n, f) in methods {
        attrs.set(Rc::from(*n), builtin(n, "", *f));
    }
    let mro = match bases.as_slice() {
        [Value::Type(TypeKind::Object)] => bases.clone(),
        _ => crate::object::class::compute_mro(&bases)
            .unwrap_or_else(|_| vec![Value::Type(TypeKind::Object)]),
    };
    Rc::new(Class {
        name: Rc::from(name),
        qualname: Rc::from(name),
        module: Rc::from(module),
        bases,
        mro,
        has_properties: std::cell::Cell::new(crate::object::class::any_properties(&attrs, &[])),
        native: true,
        attrs: RefCell::new(attrs),
        doc: Some(Rc::from(doc)),
        source: None,
        subclasses: Default::default(),
    })
}

/// A new instance of a native class holding `state` as its built-in base's data.
pub(crate) fn new_instance(class: &Rc<Class>, state: Value) -> Value {
    Value::Instance(Rc::new(Instance::new(class.clone(), state)))
}

/// The first argument of a native method (the instance) and its built-in data.
pub(crate) fn this_state(a: &mut Args) -> Result<(Value, Value), Exc> {
    let this = a.required(0, "self")?;
    let state = match &this {
        Value::Instance(i) => i.base_state.borrow().clone(),
        other => {
            return Err(Exc::type_error(format!(
                "descriptor requires an instance, not '{}'",
                other.type_name()
            )))
        }
    };
    Ok((this, state))
}

/// An exception class of a module (`json.JSONDecodeError`, `re.error`), deriving from a
/// built-in one so `except ValueError` catches it.
pub(crate) fn exc_class(name: &str, module: &str, base: ExcKind) -> Rc<Class> {
    native_class(name, module, Value::ExcType(base), "", &[])
}

/// An exception of class `class` with message `msg`, ready to raise.
pub(crate) fn raise(class: &Rc<Class>, msg: String) -> Exc {
    let inst = Rc::new(Instance::new(
        class.clone(),
        Value::tuple(vec![Value::str(&msg)]),
    ));
    let mut e = Exc::new(class.exception_base().unwrap_or(ExcKind::Exception), msg);
    e.instance = Some(inst);
    e
}

/// The member `name` of the imported module `module`, if it has been built.
pub(crate) fn module_member(it: &mut dyn Interpreter, module: &str, name: &str) -> Option<Value> {
    it.state().modules.get(module).and_then(|m| m.get(name))
}

/// An iterator over `v` (what `iter(v)` gives), drawn with [`draw`].
pub(crate) fn iter_of(it: &mut dyn Interpreter, v: &Value) -> Result<Value, Exc> {
    crate::modules::python::classes::iter(it, Args::new("iter", vec![v.clone()]))
}

/// The next item of an iterator; None when it is exhausted.
pub(crate) fn draw(it: &mut dyn Interpreter, iter: &Value) -> Result<Option<Value>, Exc> {
    match crate::modules::python::classes::next(it, Args::new("next", vec![iter.clone()])) {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind == ExcKind::StopIteration && e.instance.is_none() => Ok(None),
        Err(e) => Err(e),
    }
}

/// `StopIteration`, the end of an iterator.
pub(crate) fn stop() -> Exc {
    Exc::new(ExcKind::StopIteration, "")
}
