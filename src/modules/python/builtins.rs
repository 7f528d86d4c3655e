//! Python's built-in functions, attribute access, and the methods of str,
//! list and dict. Array functions live in `arrays.rs`, modules in `modules.rs`.

use crate::modules::python::hooks;
use std::rc::Rc;

use crate::runtime::DeviceKind;

use crate::object::alloc;
use crate::object::bigint;
use crate::object::class;
use crate::object::error::{Exc, ExcKind};
use crate::object::format;
use crate::object::ops::{self, as_f64, as_i64};
use crate::object::value::{Args, Dict, GenAction, GenStep, TypeKind, Value};
use crate::object::{builtin, hash_key, method, Interpreter};

/// Names and docs of the built-in functions, installed in every session.
pub fn install(b: &mut crate::object::NameMap<Value>) {
    let fns: &[(&'static str, &'static str, crate::object::value::BuiltinFn)] = &[
        (
            "print",
            "print(*values, sep=' ', end='\\n', file=sys.stdout): write values as text.",
            print,
        ),
        (
            "len",
            "len(obj): number of items (for an array, the length of its first axis).",
            len,
        ),
        (
            "slice",
            "slice(stop), slice(start, stop[, step]): what seq[start:stop:step] indexes with.",
            slice,
        ),
        (
            "abs",
            "abs(x): absolute value (elementwise for arrays).",
            abs,
        ),
        (
            "min",
            "min(iterable) / min(a, b, ...): the smallest item.",
            min,
        ),
        (
            "max",
            "max(iterable) / max(a, b, ...): the largest item.",
            max,
        ),
        ("sum", "sum(iterable, start=0): add the items.", sum),
        (
            "zip",
            "zip(*iterables): an iterator of tuples of corresponding items.",
            super::lazy::zip,
        ),
        (
            "enumerate",
            "enumerate(iterable, start=0): an iterator of (index, item) pairs.",
            super::lazy::enumerate,
        ),
        (
            "isinstance",
            "isinstance(obj, type_or_tuple): whether obj is of the type.",
            isinstance,
        ),
        ("type", "type(obj): the type of obj.", type_of),
        ("repr", "repr(obj): the printable representation.", repr),
        (
            "round",
            "round(x, ndigits=None): round half to even.",
            round,
        ),
        (
            "sorted",
            "sorted(iterable, key=None, reverse=False): a sorted list.",
            sorted,
        ),
        (
            "reversed",
            "reversed(seq): an iterator over the items in reverse order.",
            super::lazy::reversed,
        ),
        ("any", "any(iterable): True if any item is true.", any),
        ("all", "all(iterable): True if every item is true.", all),
        (
            "map",
            "map(func, *iterables): an iterator of func applied to each item.",
            super::lazy::map,
        ),
        (
            "filter",
            "filter(func, iterable): an iterator of the items for which func is true.",
            super::lazy::filter,
        ),
        (
            "getattr",
            "getattr(obj, name[, default]): an attribute by name.",
            getattr,
        ),
        (
            "setattr",
            "setattr(obj, name, value): set an attribute.",
            setattr,
        ),
        (
            "hasattr",
            "hasattr(obj, name): whether obj has the attribute.",
            hasattr,
        ),
        (
            "dir",
            "dir([obj]): names in scope, or attributes of obj.",
            dir,
        ),
        (
            "globals",
            "globals(): the module's global names and values, as a dict (a snapshot: assigning into it does not bind names).",
            globals_fn,
        ),
        (
            "locals",
            "locals(): the current function's local names and values, as a dict (the globals at top level).",
            locals_fn,
        ),
        ("id", "id(obj): the identity of obj.", id),
        ("hash", "hash(obj): the hash of a hashable value.", hash),
        (
            "open",
            "open(file, mode='r'): a text file (modes r, w, a, x, with +).",
            crate::modules::python::file_io::open,
        ),
        (
            "bin",
            "bin(x): the binary text of an integer ('0b101').",
            |it, mut a| {
                let x = a.required(0, "x")?;
                a.finish(1)?;
                radix_text(it, &x, "#b")
            },
        ),
        (
            "oct",
            "oct(x): the octal text of an integer ('0o10').",
            |it, mut a| {
                let x = a.required(0, "x")?;
                a.finish(1)?;
                radix_text(it, &x, "#o")
            },
        ),
        (
            "hex",
            "hex(x): the hexadecimal text of an integer ('0xff').",
            |it, mut a| {
                let x = a.required(0, "x")?;
                a.finish(1)?;
                radix_text(it, &x, "#x")
            },
        ),
        (
            "ascii",
            "ascii(obj): repr(obj) with non-ASCII characters escaped.",
            ascii,
        ),
        (
            "format",
            "format(value, spec=''): format with the format-spec mini-language.",
            format_fn,
        ),
        ("divmod", "divmod(a, b): (a // b, a % b).", divmod),
        ("pow", "pow(base, exp): base ** exp.", pow),
        ("chr", "chr(i): the character with code point i.", chr),
        (
            "ord",
            "ord(c): the code point of a one-character string.",
            ord,
        ),
        (
            "display",
            "display(*values): show values as a notebook shows a cell result.",
            display,
        ),
        (
            "clear_output",
            "clear_output(wait=False): clear the notebook cell's output (wait=True: when the next output arrives).",
            clear_output,
        ),
        ("help", "help(obj): documentation of obj.", help),
        (
            "callable",
            "callable(obj): whether obj can be called.",
            callable,
        ),
    ];
    for (name, doc, f) in fns {
        b.insert(Rc::from(*name), builtin(name, doc, *f));
    }
    for (name, t) in [
        ("int", TypeKind::Int),
        ("float", TypeKind::Float),
        ("str", TypeKind::Str),
        ("bool", TypeKind::Bool),
        ("list", TypeKind::List),
        ("tuple", TypeKind::Tuple),
        ("dict", TypeKind::Dict),
        ("set", TypeKind::Set),
        ("frozenset", TypeKind::FrozenSet),
        ("object", TypeKind::Object),
        ("range", TypeKind::Range),
    ] {
        b.insert(Rc::from(name), Value::Type(t));
    }
    for k in crate::object::error::ExcKind::ALL {
        // NumPy's exceptions are `numpy.AxisError` / `numpy.linalg.LinAlgError`, MXNet's
        // `mxnet.base.NotImplementedForSymbol`: not built-ins.
        if matches!(
            k,
            ExcKind::AxisError | ExcKind::LinAlgError | ExcKind::NotImplementedForSymbol
        ) {
            continue;
        }
        b.insert(Rc::from(k.name()), Value::ExcType(k));
    }
    b.insert(
        Rc::from("bytes"),
        Value::Class(crate::modules::python::bytes::class()),
    );
    b.insert(
        Rc::from("bytearray"),
        Value::Class(crate::modules::python::bytes::bytearray_class()),
    );
    for class in crate::modules::python::bytes::unicode_errors() {
        b.insert(class.name.clone(), Value::Class(class));
    }
    for class in crate::modules::python::stdlib::warnings::classes() {
        b.insert(class.name.clone(), Value::Class(class));
    }
    // Every program runs as the main module (`if __name__ == '__main__':`).
    b.insert(Rc::from("__name__"), Value::str("__main__"));
    crate::modules::python::classes::install(b);
    crate::modules::python::code::install(b);
    crate::modules::python::stdin::install(b);
}

thread_local! {
    static GRAD_SCALAR_WARNED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// PyTorch's UserWarning for `float(t)` of a tensor that requires grad, given once per process
/// as PyTorch's TORCH_WARN_ONCE gives it (its text names PyTorch's own source).
fn grad_scalar_warning(it: &mut dyn Interpreter, x: &Value) -> Result<(), Exc> {
    let Value::Array(a) = x else {
        return Ok(());
    };
    if a.flavor != crate::object::value::Flavor::Torch
        || GRAD_SCALAR_WARNED.with(|w| w.get())
        // A trace tracks its inputs without their requiring grad.
        || it.state().nn.tape.is_tracing()
        || !it.state().nn.tape.requires_grad(&a.array)
    {
        return Ok(());
    }
    GRAD_SCALAR_WARNED.with(|w| w.set(true));
    let text = "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\nConsider using tensor.detach() first. (Triggered internally at /__w/pytorch/pytorch/torch/csrc/autograd/generated/python_variable_methods.cpp:820.)";
    if let Some(warn) = it.import("warnings")?.get("warn") {
        it.call_value(&warn, Args::positional(vec![Value::str(text)]))?;
    }
    Ok(())
}

fn print(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let sep = match &a.take_kw("sep") {
        Some(Value::Str(s)) => s.to_string(),
        Some(Value::None) | None => " ".to_string(),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "sep must be None or a string, not {}",
                other.type_name()
            )))
        }
    };
    let end = match &a.take_kw("end") {
        Some(Value::Str(s)) => s.to_string(),
        Some(Value::None) | None => "\n".to_string(),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "end must be None or a string, not {}",
                other.type_name()
            )))
        }
    };
    let file = a.take_kw("file").unwrap_or(Value::None);
    let flush = match a.take_kw("flush") {
        Some(v) => crate::object::class::truthy(it, &v)?,
        None => false,
    };
    a.finish(usize::MAX)?;
    let mut pieces = Vec::with_capacity(2 * a.pos.len() + 1);
    for (i, v) in a.pos.iter().enumerate() {
        if i > 0 {
            pieces.push(sep.clone());
        }
        pieces.push(format::to_str(it, v)?);
    }
    pieces.push(end);
    // Without `file=`, print goes where `sys.stdout` points now (`contextlib.redirect_stdout`).
    let file = match file {
        Value::None => crate::modules::python::stdlib::sys::current_stream(it, "stdout"),
        other => Some(other),
    };
    match &file {
        None => it.out().stdout(&pieces.concat()),
        // The session's own streams take the line whole; a program's file object gets each
        // piece by a `write` call of its own, as CPython's print makes them.
        Some(f @ Value::Module(_)) => write_to_stream(it, f, &pieces.concat())?,
        Some(f) => {
            for piece in &pieces {
                write_to_stream(it, f, piece)?;
            }
            if flush {
                let flush = it.get_attr(f, "flush")?;
                it.call_value(&flush, Args::positional(vec![]))?;
            }
        }
    }
    Ok(Value::None)
}

/// `float.as_integer_ratio`: the exact fraction of a finite float, in lowest terms.
fn float_ratio(x: f64) -> Result<Value, Exc> {
    if x.is_nan() {
        return Err(Exc::value_error("cannot convert NaN to integer ratio"));
    }
    if x.is_infinite() {
        return Err(Exc::new(
            ExcKind::OverflowError,
            "cannot convert Infinity to integer ratio",
        ));
    }
    // x = mantissa * 2^exp with an integer mantissa; halve both while the mantissa is even.
    let (mut mantissa, mut exp) = {
        let bits = x.abs().to_bits();
        let e = ((bits >> 52) & 0x7ff) as i64;
        let m = bits & ((1 << 52) - 1);
        if e == 0 {
            (m as i128, -1074)
        } else {
            ((m | (1 << 52)) as i128, e - 1075)
        }
    };
    while mantissa != 0 && mantissa % 2 == 0 && exp < 0 {
        mantissa /= 2;
        exp += 1;
    }
    // Exact at any size: 1e300 and 5e-324 have ratios far past 64 bits.
    let magnitude = num_bigint::BigInt::from(mantissa);
    let (num, den) = if exp >= 0 {
        (magnitude << exp as u64, num_bigint::BigInt::from(1))
    } else {
        (magnitude, num_bigint::BigInt::from(1) << (-exp) as u64)
    };
    let num = if x < 0.0 { -num } else { num };
    Ok(Value::tuple(vec![
        bigint::int_value(num),
        bigint::int_value(den),
    ]))
}

/// Writes `text` to a stream: the session's own stdout/stderr, or any object with a `write`
/// method (an open file, `io.StringIO`, a program's class), as `print(file=...)` does.
pub(crate) fn write_to_stream(
    it: &mut dyn Interpreter,
    file: &Value,
    text: &str,
) -> Result<(), Exc> {
    match file {
        Value::Module(m) if m.name == "sys.stdout" => it.out().stdout(text),
        Value::Module(m) if m.name == "sys.stderr" => it.out().stderr(text),
        Value::Object(o) if o.type_name() == "stderr" => it.out().stderr(text),
        other => {
            let write = it.get_attr(other, "write")?;
            it.call_value(&write, Args::positional(vec![Value::str(text)]))?;
        }
    }
    Ok(())
}

pub fn length(v: &Value) -> Result<usize, Exc> {
    Ok(match v {
        Value::Str(s) => s.chars().count(),
        Value::List(l) => l.borrow().len(),
        Value::Tuple(t) => t.len(),
        Value::Dict(d) => d.borrow().len(),
        Value::Set(s) => s.table.borrow().len(),
        Value::Range(..) => match crate::object::big_range::BigRange::of(v) {
            Some(r) => crate::object::big_range::length_of(&r)?,
            None => 0,
        },
        Value::Array(a) => match a.array.shape().first() {
            Some(n) => *n,
            None => return Err(Exc::type_error("len() of a 0-d array")),
        },
        other => {
            return Err(Exc::type_error(format!(
                "object of type '{}' has no len()",
                other.type_name()
            )))
        }
    })
}

/// `slice(stop)` / `slice(start, stop[, step])`, as CPython binds its arguments.
fn slice(_: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let mut pos = a.pos.clone();
    if !a.kw.is_empty() {
        return Err(Exc::type_error("slice() takes no keyword arguments"));
    }
    match pos.len() {
        0 => Err(Exc::type_error("slice expected at least 1 argument, got 0")),
        1 => Ok(class::new_slice(Value::None, pos.remove(0), Value::None)),
        2 | 3 => {
            let step = if pos.len() == 3 {
                pos.remove(2)
            } else {
                Value::None
            };
            let stop = pos.remove(1);
            Ok(class::new_slice(pos.remove(0), stop, step))
        }
        n => Err(Exc::type_error(format!(
            "slice expected at most 3 arguments, got {n}"
        ))),
    }
}

pub fn len(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "obj")?;
    a.finish(1)?;
    class::tracer_warning(it, &v, "len")?;
    if let Some(n) = class::call_special(it, &v, "__len__", Vec::new())? {
        return class_len(n);
    }
    if let Some(base) = class::base_value(&v) {
        return Ok(Value::Int(length(&base)? as i64));
    }
    // Native objects (data sets, loaders, Sequential) answer through `__len__`.
    if let Value::Object(o) = &v {
        if let Some(f) = o.get_attr(o, "__len__") {
            return it.call_value(&f, Args::default());
        }
    }
    Ok(Value::Int(length(&v)? as i64))
}

/// What a user's `__len__` returned, checked as CPython does.
pub fn class_len(n: Value) -> Result<Value, Exc> {
    match n {
        Value::Int(i) if i >= 0 => Ok(Value::Int(i)),
        Value::Int(_) => Err(Exc::value_error("__len__() should return >= 0")),
        Value::Bool(b) => Ok(Value::Int(b as i64)),
        other => Err(Exc::type_error(format!(
            "'{}' object cannot be interpreted as an integer",
            other.type_name()
        ))),
    }
}

fn int_arg(v: &Value, what: &str) -> Result<i64, Exc> {
    if let Value::BigInt(_) = v {
        return Err(Exc::new(
            ExcKind::OverflowError,
            "Python int too large to convert to C long",
        ));
    }
    as_i64(v)
        .ok_or_else(|| Exc::type_error(format!("{what} must be an integer, not {}", v.type_name())))
}

pub(crate) fn abs(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "x")?;
    a.finish(1)?;
    match v {
        Value::Int(i) => Ok(i
            .checked_abs()
            .map(Value::Int)
            .unwrap_or_else(|| bigint::abs(&i.into()))),
        Value::BigInt(ref n) => Ok(bigint::abs(n)),
        Value::Bool(b) => Ok(Value::Int(b as i64)),
        Value::Float(f) => Ok(Value::Float(f.abs())),
        Value::Array(_) => (hooks::arrays()?.abs)(it, &v),
        Value::Instance(_) => match class::call_special(it, &v, "__abs__", Vec::new())? {
            Some(r) => Ok(r),
            None => match class::base_value(&v) {
                Some(base) => abs(it, Args::new("abs", vec![base])),
                None => Err(Exc::type_error(format!(
                    "bad operand type for abs(): '{}'",
                    v.type_name()
                ))),
            },
        },
        Value::Object(ref o) if o.number().is_some() => match o.get_attr(o, "__abs__") {
            Some(f) => it.call_value(&f, Args::new("__abs__", Vec::new())),
            None => abs(
                it,
                Args::new("abs", vec![o.number().unwrap_or(Value::None)]),
            ),
        },
        other => Err(Exc::type_error(format!(
            "bad operand type for abs(): '{}'",
            other.type_name()
        ))),
    }
}

fn extremum(it: &mut dyn Interpreter, mut a: Args, want_max: bool) -> Result<Value, Exc> {
    let key = a.take_kw("key").filter(|k| !matches!(k, Value::None));
    let default = a.take_kw("default");
    a.finish(usize::MAX)?;
    let op = if want_max {
        crate::lang::ast::CmpOp::Gt
    } else {
        crate::lang::ast::CmpOp::Lt
    };
    let mut best: Option<(Value, Value)> = None;
    let mut consider = |it: &mut dyn Interpreter, x: Value| -> Result<bool, Exc> {
        let k = match &key {
            Some(f) => it.call_value(f, Args::new("key", vec![x.clone()]))?,
            None => x.clone(),
        };
        let better = match &best {
            None => true,
            Some((_, bk)) => ops::compare(it, op, &k, bk)?.truthy()?,
        };
        if better {
            best = Some((x, k));
        }
        Ok(true)
    };
    if a.pos.len() == 1 {
        // The largest item of a range is one of its ends: no need to visit 10**12 items.
        if let (Value::Range(start, stop, step), None) = (&a.pos[0], &key) {
            let n = crate::object::value::range_len(*start, *stop, *step);
            if n > 0 {
                let last = (*start as i128 + (n as i128 - 1) * *step as i128) as i64;
                let (lo, hi) = if *step > 0 {
                    (*start, last)
                } else {
                    (last, *start)
                };
                return Ok(Value::Int(if want_max { hi } else { lo }));
            }
        }
        it.for_each_item(&a.pos[0], &mut consider)?;
    } else {
        for x in a.pos.iter() {
            consider(it, x.clone())?;
        }
    }
    match (best, default) {
        (Some((x, _)), _) => Ok(x),
        (None, Some(d)) => Ok(d),
        (None, None) => Err(Exc::value_error(format!(
            "{}() arg is an empty sequence",
            if want_max { "max" } else { "min" }
        ))),
    }
}

fn min(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    extremum(it, a, false)
}

fn max(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    extremum(it, a, true)
}

fn sum(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let iterable = a.required(0, "iterable")?;
    let start = a.take(1, "start")?.unwrap_or(Value::Int(0));
    a.finish(2)?;
    if let Value::Str(_) = start {
        return Err(Exc::type_error(
            "sum() can't sum strings [use ''.join(seq) instead]",
        ));
    }
    if let (Value::Range(first, stop, step), Value::Int(s0)) = (&iterable, &start) {
        if let Some(total) = range_sum(*first, *stop, *step, *s0) {
            return Ok(Value::Int(total));
        }
    }
    let mut acc = start;
    it.for_each_item(&iterable, &mut |it, x| {
        acc = ops::binary(it, crate::lang::ast::BinOp::Add, &acc, &x)?;
        Ok(true)
    })?;
    Ok(acc)
}

/// `start + sum(range(first, stop, step))` in closed form, when it fits an int (otherwise the
/// items are added one by one, which raises OverflowError where the sum leaves the range).
fn range_sum(first: i64, stop: i64, step: i64, start: i64) -> Option<i64> {
    // A length past i64 reads negative: left to the loop.
    let n = u128::try_from(crate::object::value::range_len(first, stop, step)).ok()?;
    // n * (n - 1) / 2 needs up to 128 bits before the division.
    let pairs = i128::try_from(n * n.saturating_sub(1) / 2).ok()?;
    let total = (n as i128)
        .checked_mul(first as i128)?
        .checked_add(pairs.checked_mul(step as i128)?)?
        .checked_add(start as i128)?;
    i64::try_from(total).ok()
}

fn type_kind(v: &Value) -> TypeKind {
    match v {
        Value::None => TypeKind::NoneType,
        Value::Bool(_) => TypeKind::Bool,
        Value::Int(_) | Value::BigInt(_) => TypeKind::Int,
        Value::Float(_) => TypeKind::Float,
        Value::Str(_) => TypeKind::Str,
        Value::List(_) => TypeKind::List,
        Value::Tuple(_) => TypeKind::Tuple,
        Value::Dict(_) => TypeKind::Dict,
        Value::Set(s) if s.frozen => TypeKind::FrozenSet,
        Value::Set(_) => TypeKind::Set,
        Value::Range(..) => TypeKind::Range,
        Value::Array(a) => match a.flavor {
            crate::object::value::Flavor::Nd => TypeKind::NDArray,
            crate::object::value::Flavor::Np => TypeKind::MxNumpyArray,
            crate::object::value::Flavor::Torch => TypeKind::Tensor,
            crate::object::value::Flavor::Numpy => TypeKind::NumpyArray,
        },
        Value::Device(_) => TypeKind::Device,
        Value::DType(..) => TypeKind::DType,
        Value::Func(_) | Value::Builtin(_) => TypeKind::Function,
        Value::Module(_) => TypeKind::Module,
        Value::Generator(_) => TypeKind::Generator,
        _ => TypeKind::Object,
    }
}

pub fn instance_of(v: &Value, t: &Value) -> Result<bool, Exc> {
    if let Value::Instance(inst) = v {
        return Ok(match t {
            Value::Tuple(items) => {
                for x in items.iter() {
                    if instance_of(v, x)? {
                        return Ok(true);
                    }
                }
                false
            }
            Value::Class(_) | Value::ExcType(_) | Value::Type(_) => inst.class().is_subclass_of(t),
            other => {
                return Err(Exc::type_error(format!(
                    "isinstance() arg 2 must be a type, a tuple of types, or a union, not {}",
                    other.type_name()
                )))
            }
        });
    }
    if let Some(known) = hooks::ARRAYS.get().and_then(|h| (h.numpy_instance)(v, t)) {
        return Ok(known);
    }
    Ok(match t {
        Value::Type(TypeKind::Object) => true,
        Value::Class(c) => match v {
            Value::Object(o) => {
                matches!(&o.class_value(), Some(Value::Class(own)) if own.is_subclass_of(&c.value()))
            }
            _ => false,
        },
        Value::Type(TypeKind::Int) => {
            matches!(v, Value::Int(_) | Value::BigInt(_) | Value::Bool(_))
        }
        Value::Type(k) => {
            type_kind(v) == *k
                || matches!(v, Value::Object(o) if matches!(o.class_value(), Some(Value::Type(own)) if own == *k))
        }
        Value::ExcType(k) => matches!(v, Value::Exception(e) if e.kind.is_subclass_of(*k)),
        Value::Tuple(items) => {
            for x in items.iter() {
                if instance_of(v, x)? {
                    return Ok(true);
                }
            }
            false
        }
        other => {
            return Err(Exc::type_error(format!(
                "isinstance() arg 2 must be a type or tuple of types, not {}",
                other.type_name()
            )))
        }
    })
}

pub fn isinstance(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "obj")?;
    let t = a.required(1, "class_or_tuple")?;
    a.finish(2)?;
    // `isinstance(x, int | str)` is `isinstance(x, (int, str))`.
    let t = crate::object::generic_alias::union_members(&t).map_or(t, Value::tuple);
    if let Some(class) = array_class(it, &v) {
        let classes = match &t {
            Value::Tuple(items) => items.to_vec(),
            other => vec![other.clone()],
        };
        if classes.iter().any(|c| c.is(&class)) {
            return Ok(Value::Bool(true));
        }
    }
    if instance_of(&v, &t)? {
        return Ok(Value::Bool(true));
    }
    Ok(Value::Bool(class::metaclass_check(
        it,
        &t,
        &v,
        "__instancecheck__",
    )?))
}

/// The class of an array that has one of its own (a PyTorch parameter's `torch.nn.Parameter`).
fn array_class(it: &dyn Interpreter, v: &Value) -> Option<Value> {
    match v {
        Value::Array(_) => hooks::ARRAYS.get().and_then(|h| (h.class_of)(it, v)),
        _ => None,
    }
}

fn type_of(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    if a.pos.len() == 3 && a.kw.is_empty() {
        let mut parts = std::mem::take(&mut a.pos).into_iter();
        let (Some(name), Some(bases), Some(ns)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Exc::type_error("type() takes 1 or 3 arguments"));
        };
        return crate::object::make_class::type_new(it, name, bases, ns);
    }
    if a.pos.len() != 1 || !a.kw.is_empty() {
        return Err(Exc::type_error("type() takes 1 or 3 arguments"));
    }
    let v = a.required(0, "obj")?;
    a.finish(1)?;
    if let Some(class) = array_class(it, &v) {
        return Ok(class);
    }
    if let Some(class) = match &v {
        Value::Object(o) => o.class_value(),
        _ => None,
    } {
        return Ok(class);
    }
    Ok(match &v {
        Value::Exception(e) => Value::ExcType(e.kind),
        Value::Instance(inst) => inst.class().value(),
        Value::Class(c) => match class::metaclass_of(c) {
            Some(meta) => meta.value(),
            None => Value::Type(type_kind(&v)),
        },
        other => Value::Type(type_kind(other)),
    })
}

fn repr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "obj")?;
    a.finish(1)?;
    Ok(Value::str(&format::repr(it, &v)?))
}

fn round(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "number")?;
    let nd = a.take(1, "ndigits")?;
    a.finish(2)?;
    if let Value::Object(o) = &v {
        if let Some(f) = o.get_attr(o, "__round__") {
            return it.call_value(&f, Args::new("__round__", nd.into_iter().collect()));
        }
    }
    round_number(it, &v, nd)
}

/// `round(v, nd)` for a Python number.
pub fn round_number(_it: &mut dyn Interpreter, v: &Value, nd: Option<Value>) -> Result<Value, Exc> {
    if let Value::BigInt(n) = v {
        return match nd {
            None | Some(Value::None) => Ok(v.clone()),
            Some(k) => match bigint::as_big(&k) {
                Some(k) if k.sign() == num_bigint::Sign::Minus => {
                    Ok(bigint::round_to_tens(n, &-k.into_owned()))
                }
                Some(_) => Ok(v.clone()),
                None => Err(Exc::type_error(format!(
                    "'{}' object cannot be interpreted as an integer",
                    k.type_name()
                ))),
            },
        };
    }
    let v = v.clone();
    let x = as_f64(&v).ok_or_else(|| {
        Exc::type_error(format!(
            "type {} doesn't define __round__ method",
            v.type_name()
        ))
    })?;
    match nd {
        None | Some(Value::None) => {
            if let Value::Int(i) = v {
                return Ok(Value::Int(i));
            }
            let r = round_half_even(x);
            if !r.is_finite() || r.abs() > 9.2e18 {
                return Err(Exc::new(
                    ExcKind::OverflowError,
                    "cannot convert float infinity or a huge float to integer",
                ));
            }
            Ok(Value::Int(r as i64))
        }
        Some(n) => {
            let n = int_arg(&n, "ndigits")?;
            if let Value::Int(i) = v {
                return Ok(Value::Int(round_int_to_tens(i, n)));
            }
            if n < 0 {
                return Ok(Value::Float(round_float_to_tens(x, n.unsigned_abs())));
            }
            // Format-and-parse rounds the exact binary value, as Python does.
            let s = format!("{:.*}", n.clamp(0, 330) as usize, x);
            Ok(Value::Float(s.parse().unwrap_or(x)))
        }
    }
}

/// `round(i, n)` for an int: unchanged for n >= 0, else to a multiple of 10**-n, ties to
/// the even multiple (CPython: `round(25, -1) == 20`).
fn round_int_to_tens(i: i64, n: i64) -> i64 {
    if n >= 0 {
        return i;
    }
    let Some(p) = 10i128.checked_pow(n.unsigned_abs().min(40) as u32) else {
        return 0;
    };
    let x = i128::from(i);
    let (q, r) = (x.div_euclid(p), x.rem_euclid(p));
    let q = match (2 * r).cmp(&p) {
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal if q % 2 != 0 => q + 1,
        _ => q,
    };
    // |result| <= |i| rounded up to one multiple of p, which fits unless p is beyond i64.
    i64::try_from(q * p).unwrap_or(0)
}

/// `round(x, -k)` for a float: the exact binary value rounded to a multiple of 10**k, ties to
/// even (as CPython's correctly rounded dtoa does), so `round(123.456, -400)` is 0.0.
fn round_float_to_tens(x: f64, k: u64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let whole = x.trunc();
    let has_fraction = whole != x;
    // An integral f64 prints exactly.
    let digits = format!("{:.0}", whole.abs());
    let k = usize::try_from(k).unwrap_or(usize::MAX);
    let zero = 0.0f64.copysign(x);
    if k > digits.len() {
        return zero;
    }
    let (high, low) = digits.split_at(digits.len() - k);
    // Compare the dropped digits (and any fraction) with half a unit.
    let half = low
        .bytes()
        .enumerate()
        .map(|(i, d)| (d, if i == 0 { b'5' } else { b'0' }));
    let mut cmp = std::cmp::Ordering::Equal;
    for (d, h) in half {
        if d != h {
            cmp = d.cmp(&h);
            break;
        }
    }
    if cmp == std::cmp::Ordering::Equal && has_fraction {
        cmp = std::cmp::Ordering::Greater;
    }
    let odd = high.bytes().last().is_some_and(|d| (d - b'0') % 2 == 1);
    let up = cmp == std::cmp::Ordering::Greater || (cmp == std::cmp::Ordering::Equal && odd);
    let mut high: Vec<u8> = high.bytes().collect();
    if up {
        let mut i = high.len();
        loop {
            if i == 0 {
                high.insert(0, b'1');
                break;
            }
            i -= 1;
            if high[i] == b'9' {
                high[i] = b'0';
            } else {
                high[i] += 1;
                break;
            }
        }
    }
    if high.is_empty() {
        return zero;
    }
    let text = format!("{}e{k}", String::from_utf8_lossy(&high));
    let r: f64 = text.parse().unwrap_or(0.0);
    if r == 0.0 {
        zero
    } else {
        r.copysign(x)
    }
}

fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

fn sorted(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterable")?;
    let key = a.take_kw("key");
    let reverse = a
        .take_kw("reverse")
        .map(|r| r.truthy())
        .transpose()?
        .unwrap_or(false);
    a.finish(1)?;
    let items = it.iterate(&v)?;
    Ok(Value::list(sort_items(it, items, key, reverse)?))
}

fn sort_items(
    it: &mut dyn Interpreter,
    items: Vec<Value>,
    key: Option<Value>,
    reverse: bool,
) -> Result<Vec<Value>, Exc> {
    let mut keyed: Vec<(Value, Value)> = Vec::with_capacity(items.len());
    for x in items {
        let k = match &key {
            Some(f) if !matches!(f, Value::None) => {
                it.call_value(f, Args::new("key", vec![x.clone()]))?
            }
            _ => x.clone(),
        };
        keyed.push((k, x));
    }
    // CPython sorts a reversed list reversed, so equal keys keep their order either way.
    if reverse {
        keyed.reverse();
    }
    let keys: Vec<Value> = keyed.iter().map(|(k, _)| k.clone()).collect();
    let order = if keys.iter().any(holds_instance) {
        // Keys of user classes are ordered by their `__lt__`, the one comparison sort asks.
        let mut lt = |a: usize, b: usize| -> Result<bool, Exc> {
            let r = ops::compare(it, crate::lang::ast::CmpOp::Lt, &keys[a], &keys[b])?;
            class::truthy(it, &r)
        };
        ops::sort_order_by(keys.len(), &mut lt)?
    } else {
        ops::sort_order_checked(&keys, &mut || it.check_interrupt())?
    };
    let mut out: Vec<Value> = order.into_iter().map(|i| keyed[i].1.clone()).collect();
    if reverse {
        out.reverse();
    }
    Ok(out)
}

/// Whether `v` is an instance or a tuple/list holding one (at any depth): keys ordered by
/// special methods.
/// Walked with a stack of its own, not by recursion: a list nested 200,000 deep must not
/// overflow the native stack (the comparison then raises RecursionError, as CPython's).
fn holds_instance(v: &Value) -> bool {
    let mut pending = vec![v.clone()];
    while let Some(v) = pending.pop() {
        match &v {
            Value::Instance(_) => return true,
            Value::Tuple(t) => pending.extend(t.iter().cloned()),
            Value::List(l) => pending.extend(l.borrow().iter().cloned()),
            _ => {}
        }
    }
    false
}

fn any(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterable")?;
    a.finish(1)?;
    let mut found = false;
    it.for_each_item(&v, &mut |it, x| {
        found = class::truthy(it, &x)?;
        Ok(!found)
    })?;
    Ok(Value::Bool(found))
}

fn all(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "iterable")?;
    a.finish(1)?;
    let mut every = true;
    it.for_each_item(&v, &mut |it, x| {
        every = class::truthy(it, &x)?;
        Ok(every)
    })?;
    Ok(Value::Bool(every))
}

fn str_arg(v: &Value, what: &str) -> Result<Rc<str>, Exc> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        other => Err(Exc::type_error(format!(
            "{what} must be a string, not {}",
            other.type_name()
        ))),
    }
}

fn getattr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let o = a.required(0, "object")?;
    let name = str_arg(&a.required(1, "name")?, "attribute name")?;
    let default = a.take(2, "default")?;
    a.finish(3)?;
    match get_attr(it, &o, &name) {
        Ok(v) => Ok(v),
        Err(e) if e.kind == ExcKind::AttributeError => default.ok_or(e),
        Err(e) => Err(e),
    }
}

fn setattr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let o = a.required(0, "object")?;
    let name = str_arg(&a.required(1, "name")?, "attribute name")?;
    let v = a.required(2, "value")?;
    a.finish(3)?;
    set_attr(it, &o, &name, v)?;
    Ok(Value::None)
}

fn hasattr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let o = a.required(0, "object")?;
    let name = str_arg(&a.required(1, "name")?, "attribute name")?;
    a.finish(2)?;
    Ok(Value::Bool(get_attr(it, &o, &name).is_ok()))
}

fn dir(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let o = a.take(0, "object")?;
    a.finish(1)?;
    let mut names: Vec<String> = match o {
        Some(v) => attr_names(&v),
        None => it
            .state_mut()
            .globals
            .keys()
            .map(|k| k.to_string())
            .collect(),
    };
    names.sort();
    names.dedup();
    Ok(Value::list(names.iter().map(|n| Value::str(n)).collect()))
}

/// A dict of `(name, value)` pairs, in their order.
fn names_dict(pairs: Vec<(crate::lang::ast::Ident, Value)>) -> Value {
    let mut d = crate::object::value::Dict::default();
    for (k, v) in pairs {
        d.insert(
            crate::object::value::HashKey::Str(k.clone()),
            Value::Str(k),
            v,
        );
    }
    Value::Dict(Rc::new(std::cell::RefCell::new(d)))
}

fn globals_fn(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let g = &it.state().globals;
    let pairs = g
        .keys()
        .filter_map(|k| g.get(k).map(|v| (k.clone(), v.clone())))
        .collect();
    Ok(names_dict(pairs))
}

fn locals_fn(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let Some(env) = it.current_scope() else {
        return globals_fn(it, a);
    };
    let scope = env.borrow();
    let pairs = scope
        .vars
        .keys()
        .filter_map(|k| scope.vars.get(k).map(|v| (k.clone(), v.clone())))
        .collect();
    Ok(names_dict(pairs))
}

fn id(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "obj")?;
    a.finish(1)?;
    Ok(Value::Int(v.identity() as i64))
}

fn hash(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "obj")?;
    a.finish(1)?;
    Ok(Value::Int(crate::object::keys::hash(it, &v)?))
}

/// `hash(v)`: CPython's values for numbers and tuples of them (hash(n) is n modulo 2**61 - 1,
/// equal numbers hash equal); other values hash by their key (str hashes are salted per run
/// in CPython too).
pub fn py_hash(v: &Value) -> Result<i64, Exc> {
    Ok(key_hash(&hash_key(v)?))
}

pub use crate::object::hash::{float_hash, key_hash};

fn format_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "value")?;
    let spec = match a.take(1, "format_spec")? {
        Some(s) => str_arg(&s, "format_spec")?,
        None => Rc::from(""),
    };
    a.finish(2)?;
    Ok(Value::str(&format::format_value(it, &v, &spec)?))
}

fn divmod(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "a")?;
    let y = a.required(1, "b")?;
    a.finish(2)?;
    let q = ops::binary(it, crate::lang::ast::BinOp::FloorDiv, &x, &y)?;
    let r = ops::binary(it, crate::lang::ast::BinOp::Mod, &x, &y)?;
    Ok(Value::tuple(vec![q, r]))
}

fn pow(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "base")?;
    let y = a.required(1, "exp")?;
    let m = a.take(2, "mod")?;
    a.finish(3)?;
    let m = match m {
        None | Some(Value::None) => return ops::binary(it, crate::lang::ast::BinOp::Pow, &x, &y),
        Some(m) => m,
    };
    // Three-argument pow: modular exponentiation on integers of any size.
    let (Some(base), Some(exp), Some(modulus)) =
        (bigint::as_big(&x), bigint::as_big(&y), bigint::as_big(&m))
    else {
        return Err(Exc::type_error(
            "pow() 3rd argument not allowed unless all arguments are integers",
        ));
    };
    bigint::pow_mod(&base, &exp, &modulus)
}

fn radix_text(it: &mut dyn Interpreter, x: &Value, spec: &str) -> Result<Value, Exc> {
    if !matches!(x, Value::Int(_) | Value::BigInt(_) | Value::Bool(_)) {
        return Err(Exc::type_error(format!(
            "'{}' object cannot be interpreted as an integer",
            x.type_name()
        )));
    }
    Ok(Value::str(&format::format_value(it, x, spec)?))
}

/// `ascii(obj)`: the repr with non-ASCII characters escaped.
fn ascii(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "obj")?;
    a.finish(1)?;
    let r = format::repr(it, &v)?;
    let mut out = String::with_capacity(r.len());
    for c in r.chars() {
        match c as u32 {
            0..=0x7f => out.push(c),
            n @ 0x80..=0xff => out.push_str(&format!("\\x{n:02x}")),
            n @ 0x100..=0xffff => out.push_str(&format!("\\u{n:04x}")),
            n => out.push_str(&format!("\\U{n:08x}")),
        }
    }
    Ok(Value::str(&out))
}

fn chr(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let arg = a.required(0, "i")?;
    if let Value::BigInt(_) = arg {
        return Err(Exc::new(
            ExcKind::OverflowError,
            "Python int too large to convert to C int",
        ));
    }
    let i = int_arg(&arg, "chr() argument")?;
    a.finish(1)?;
    let c = u32::try_from(i)
        .ok()
        .and_then(char::from_u32)
        .ok_or_else(|| Exc::value_error("chr() arg not in range(0x110000)"))?;
    Ok(Value::str(c.encode_utf8(&mut [0; 4])))
}

fn ord(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let s = str_arg(&a.required(0, "c")?, "ord() argument")?;
    a.finish(1)?;
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Ok(Value::Int(c as i64)),
        _ => Err(Exc::type_error(format!(
            "ord() expected a character, but string of length {} found",
            s.chars().count()
        ))),
    }
}

pub(crate) fn display(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(usize::MAX)?;
    for v in &a.pos {
        let d = format::display_data(it, v)?;
        it.out().display(&d, false);
    }
    Ok(Value::None)
}

pub(crate) fn clear_output(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let wait = match a.take(0, "wait")? {
        Some(v) => v.truthy()?,
        None => false,
    };
    a.finish(1)?;
    it.out().clear_output(wait);
    Ok(Value::None)
}

fn help(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.take(0, "obj")?;
    a.finish(1)?;
    let text = match v {
        None => {
            "Type an expression to evaluate it. Arrays: ones(2, 3) @ gpu(0), x.copyto(gpu(1)).\n\
                 Use help(obj) for documentation, %devices for the device table.\n"
                .to_string()
        }
        // The same report as `obj?` and a notebook's Shift+Tab.
        Some(v) => match hooks::HELP.get() {
            Some(describe) => format!("{}\n", describe(it, &v)),
            None => format!("{}\n", v.type_name()),
        },
    };
    it.out().stdout(&text);
    Ok(Value::None)
}

/// The documentation string of a value, if it has one.
pub fn doc_of(v: &Value) -> Option<String> {
    match v {
        Value::Builtin(b) => Some(b.doc.to_string()),
        Value::Func(f) => {
            let params: Vec<String> = f.params.iter().map(|p| p.name.to_string()).collect();
            Some(format!(
                "{}({}){}",
                f.name,
                params.join(", "),
                f.doc.as_ref().map(|d| format!("\n{d}")).unwrap_or_default()
            ))
        }
        Value::Module(m) => Some(format!("module {}: {}", m.name, m.doc)),
        _ => None,
    }
}

pub fn callable(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "obj")?;
    a.finish(1)?;
    let is_callable = match &v {
        Value::Func(_)
        | Value::Builtin(_)
        | Value::Type(_)
        | Value::ExcType(_)
        | Value::Class(_)
        | Value::Method(_) => true,
        Value::Instance(inst) => inst.class().defines("__call__"),
        Value::Object(o) => o.get_attr(o, "__call__").is_some(),
        _ => false,
    };
    Ok(Value::Bool(is_callable))
}

/// `int(x)`, `str(x)`, `list(x)`, ...
pub fn call_type(it: &mut dyn Interpreter, t: TypeKind, mut a: Args) -> Result<Value, Exc> {
    a.fname = t.name();
    if t == TypeKind::Range {
        return crate::object::big_range::construct(a);
    }
    // `int(x)` / `float(x)` of an instance: its `__int__` / `__float__`, or the built-in value
    // a class extending `int` or `float` holds.
    if let (TypeKind::Int | TypeKind::Float, Some(first @ Value::Instance(_))) = (t, a.pos.first())
    {
        let first = first.clone();
        let special = if t == TypeKind::Int {
            "__int__"
        } else {
            "__float__"
        };
        if let Some(v) = class::call_special(it, &first, special, Vec::new())? {
            a.pos[0] = v;
        } else if let Some(base) = class::base_value(&first) {
            a.pos[0] = base;
        }
    }
    // `dict(x=1)`: keywords are entries, added after the positional mapping or pairs.
    if t == TypeKind::Dict && !a.kw.is_empty() {
        let kw = std::mem::take(&mut a.kw);
        let d = call_type(it, t, a)?;
        if let Value::Dict(entries) = &d {
            let mut entries = entries.borrow_mut();
            for (k, v) in kw {
                entries.insert(
                    crate::object::value::HashKey::Str(k.clone()),
                    Value::Str(k),
                    v,
                );
            }
        }
        return Ok(d);
    }
    if matches!(t, TypeKind::Set | TypeKind::FrozenSet) {
        return crate::object::set::construct(it, t == TypeKind::FrozenSet, a);
    }
    let v = a.take(0, "x")?;
    if let (Some(x @ Value::Array(_)), TypeKind::Int | TypeKind::Float) = (&v, t) {
        let what = if t == TypeKind::Int {
            "integer"
        } else {
            "float"
        };
        class::tracer_warning(it, x, what)?;
        if t == TypeKind::Float {
            grad_scalar_warning(it, x)?;
        }
    }
    if t == TypeKind::Int {
        let base = a.take(1, "base")?;
        a.finish(2)?;
        return to_int(v, base);
    }
    a.finish(1)?;
    Ok(match (t, v) {
        (TypeKind::Float, None) => Value::Float(0.0),
        (TypeKind::Float, Some(v)) => Value::Float(to_float(&v)?),
        (TypeKind::Str, None) => Value::str(""),
        (TypeKind::Str, Some(v)) => Value::str(&format::to_str(it, &v)?),
        (TypeKind::Bool, None) => Value::Bool(false),
        (TypeKind::Bool, Some(v)) => Value::Bool(class::truthy(it, &v)?),
        (TypeKind::List, None) => Value::list(Vec::new()),
        (TypeKind::List, Some(v)) => Value::list(it.iterate(&v)?),
        (TypeKind::Tuple, None) => Value::tuple(Vec::new()),
        (TypeKind::Tuple, Some(v)) => Value::tuple(it.iterate(&v)?),
        (TypeKind::Dict, None) => ops::new_dict(),
        (TypeKind::Dict, Some(v)) => {
            let d = ops::new_dict();
            if let Value::Dict(src) = &v {
                if let Value::Dict(dst) = &d {
                    *dst.borrow_mut() = src.borrow().clone();
                }
                return Ok(d);
            }
            let Value::Dict(dst) = &d else { return Ok(d) };
            // A mapping (anything with keys(): defaultdict, Counter, a program's class) is
            // copied key by key, as CPython's dict() does.
            if let Ok(keys) = get_attr(it, &v, "keys") {
                let keys = it.call_value(&keys, Args::default())?;
                for k in it.iterate(&keys)? {
                    let val = ops::get_item(
                        it,
                        &v,
                        ops::Index::Single(ops::IndexItem::Value(k.clone())),
                    )?;
                    let hk = crate::object::keys::dict_key(it, dst, &k)?;
                    dst.borrow_mut().insert(hk, k, val);
                }
                return Ok(d);
            }
            for pair in it.iterate(&v)? {
                let kv = it.iterate(&pair)?;
                let [k, val] = <[Value; 2]>::try_from(kv).map_err(|_| {
                    Exc::value_error(
                        "dictionary update sequence element has the wrong length; 2 is required",
                    )
                })?;
                let hk = crate::object::keys::dict_key(it, dst, &k)?;
                dst.borrow_mut().insert(hk, k, val);
            }
            d
        }
        (t, _) => {
            return Err(Exc::type_error(format!(
                "cannot create '{}' instances",
                t.name()
            )))
        }
    })
}

fn to_int(v: Option<Value>, base: Option<Value>) -> Result<Value, Exc> {
    let Some(v) = v else { return Ok(Value::Int(0)) };
    if let Some(b) = base {
        let b = int_arg(&b, "base")?;
        let Value::Str(s) = &v else {
            return Err(Exc::type_error(
                "int() can't convert non-string with explicit base",
            ));
        };
        if b != 0 && !(2..=36).contains(&b) {
            return Err(Exc::value_error("int() base must be >= 2 and <= 36, or 0"));
        }
        let digits = s.trim().replace('_', "");
        let (negative, body) = match digits.strip_prefix('-') {
            Some(rest) => (true, rest.to_string()),
            None => (false, digits.trim_start_matches('+').to_string()),
        };
        // A base's own prefix is allowed (`int('0x1f', 16)`); base 0 reads it from the prefix.
        let lower = body.to_ascii_lowercase();
        let (base, body) = match (b, lower.get(..2)) {
            (0 | 16, Some("0x")) => (16, &body[2..]),
            (0 | 8, Some("0o")) => (8, &body[2..]),
            (0 | 2, Some("0b")) => (2, &body[2..]),
            (0, _) if body.len() > 1 && body.starts_with('0') && body.chars().any(|c| c != '0') => {
                (99, &body[..])
            }
            (0, _) => (10, &body[..]),
            (b, _) => (b as u32, &body[..]),
        };
        let parsed = if base == 99 || body.is_empty() || body.starts_with(['+', '-']) {
            None
        } else {
            match i64::from_str_radix(body, base) {
                Ok(n) => Some(Value::Int(n)),
                Err(_) => bigint::parse_digits(body, base)?,
            }
        };
        let negate = |v: Value| if negative { bigint::negate(&v) } else { v };
        return parsed.map(negate).ok_or_else(|| {
            Exc::value_error(format!(
                "invalid literal for int() with base {b}: {}",
                format::str_repr(s)
            ))
        });
    }
    match &v {
        Value::Int(i) => Ok(Value::Int(*i)),
        Value::BigInt(_) => Ok(v.clone()),
        Value::Bool(b) => Ok(Value::Int(*b as i64)),
        Value::Float(f) => bigint::from_float(*f),
        Value::Str(s) => {
            let text = s.trim().replace('_', "");
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Value::Int(i));
            }
            let (negative, digits) = match text.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, text.strip_prefix('+').unwrap_or(&text)),
            };
            let parsed = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                bigint::parse_digits(digits, 10)?
            } else {
                None
            };
            match parsed {
                Some(v) if negative => Ok(bigint::negate(&v)),
                Some(v) => Ok(v),
                None => Err(Exc::value_error(format!(
                    "invalid literal for int() with base 10: {}",
                    format::str_repr(s)
                ))),
            }
        }
        Value::Object(o) if o.number().is_some() => to_int(o.number(), None),
        Value::Array(a) => match a.array.to_scalar("int")? {
            crate::runtime::Scalar::Int(i) => Ok(Value::Int(i)),
            crate::runtime::Scalar::Bool(b) => Ok(Value::Int(b as i64)),
            crate::runtime::Scalar::Float(f) => to_int(Some(Value::Float(f)), None),
        },
        other => Err(Exc::type_error(format!(
            "int() argument must be a string or a number, not '{}'",
            other.type_name()
        ))),
    }
}

pub fn to_float(v: &Value) -> Result<f64, Exc> {
    match v {
        Value::BigInt(n) => bigint::to_f64(n),
        Value::Str(s) => {
            let t = s.trim().to_ascii_lowercase();
            match t.as_str() {
                "inf" | "+inf" | "infinity" => Ok(f64::INFINITY),
                "-inf" | "-infinity" => Ok(f64::NEG_INFINITY),
                "nan" | "+nan" | "-nan" => Ok(f64::NAN),
                _ => t.replace('_', "").parse::<f64>().map_err(|_| {
                    Exc::value_error(format!(
                        "could not convert string to float: {}",
                        format::str_repr(s)
                    ))
                }),
            }
        }
        Value::Array(a) => match a.array.to_scalar("float")? {
            crate::runtime::Scalar::Int(i) => Ok(i as f64),
            crate::runtime::Scalar::Bool(b) => Ok(b as i64 as f64),
            crate::runtime::Scalar::Float(f) => Ok(f),
        },
        other => as_f64(other).ok_or_else(|| {
            Exc::type_error(format!(
                "float() argument must be a string or a number, not '{}'",
                other.type_name()
            ))
        }),
    }
}

// ------------------------------------------------------------------ attributes

/// `gen.__next__`, `gen.send(v)`, `gen.throw(e)`, `gen.close()`, `iter(gen)`.
fn generator_method(v: &Value, name: &str) -> Option<Value> {
    let f: crate::object::value::MethodFn = match name {
        "__next__" => |it, r, a| {
            a.finish(0)?;
            let g = as_generator(r)?;
            let step = it.gen_resume(&g, GenAction::Send(Value::None))?;
            step_value(it, step)
        },
        "send" => |it, r, mut a| {
            let sent = a.required(0, "value")?;
            a.finish(1)?;
            let g = as_generator(r)?;
            let step = it.gen_resume(&g, GenAction::Send(sent))?;
            step_value(it, step)
        },
        "throw" => |it, r, mut a| {
            let typ = a.required(0, "typ")?;
            let val = a.take(1, "val")?;
            let _tb = a.take(2, "tb")?;
            a.finish(3)?;
            let g = as_generator(r)?;
            let exc = thrown(it, typ, val)?;
            let step = it.gen_resume(&g, GenAction::Throw(Box::new(exc)))?;
            step_value(it, step)
        },
        "close" => |it, r, a| {
            a.finish(0)?;
            let g = as_generator(r)?;
            it.gen_resume(&g, GenAction::Close)?;
            Ok(Value::None)
        },
        "__iter__" => |_, r, _| Ok(r.clone()),
        "__name__" | "__qualname__" => {
            return match v {
                Value::Generator(g) => Some(Value::Str(g.name.clone())),
                _ => None,
            }
        }
        "gi_running" => {
            return match v {
                Value::Generator(g) => Some(Value::Bool(
                    !g.finished.get() && g.state.try_borrow().is_ok_and(|s| s.is_none()),
                )),
                _ => None,
            }
        }
        _ => return None,
    };
    let name: &'static str = match name {
        "__next__" => "__next__",
        "send" => "send",
        "throw" => "throw",
        "close" => "close",
        _ => "__iter__",
    };
    Some(method(v, name, "a generator method", f))
}

fn as_generator(v: &Value) -> Result<Rc<crate::object::value::Generator>, Exc> {
    match v {
        Value::Generator(g) => Ok(g.clone()),
        _ => Err(Exc::type_error("expected a generator")),
    }
}

/// What `next`/`send`/`throw` return: the yielded value, or StopIteration with the returned one.
pub fn step_value(it: &mut dyn Interpreter, step: GenStep) -> Result<Value, Exc> {
    match step {
        GenStep::Yield(v) => Ok(v),
        GenStep::Return(v) => Err(stop_with(it, v)?),
    }
}

/// `StopIteration(v)`, shown as `StopIteration: v` (nothing after the colon for None).
pub fn stop_with(it: &mut dyn Interpreter, v: Value) -> Result<Exc, Exc> {
    let message = match &v {
        Value::None => String::new(),
        other => format::to_str(it, other)?,
    };
    Ok(Exc::stop_iteration(v, message))
}

/// The exception `gen.throw(typ[, val])` raises at the generator's `yield`.
fn thrown(it: &mut dyn Interpreter, typ: Value, val: Option<Value>) -> Result<Exc, Exc> {
    let val = val.filter(|v| !matches!(v, Value::None));
    let not_exception = |v: &Value| {
        Exc::type_error(format!(
            "exceptions must be classes or instances deriving from BaseException, not {}",
            v.type_name()
        ))
    };
    let instance_with_value =
        || Exc::type_error("instance exception may not have a separate value");
    match &typ {
        Value::ExcType(k) => Ok(match &val {
            None => Exc::new(*k, ""),
            Some(Value::Exception(x)) if x.kind.is_subclass_of(*k) => exc_of(x),
            Some(v) => {
                let e = it.call_value(&typ, Args::positional(vec![v.clone()]))?;
                match &e {
                    Value::Exception(x) => exc_of(x),
                    _ => Exc::new(*k, ""),
                }
            }
        }),
        Value::Exception(x) => match val {
            Some(_) => Err(instance_with_value()),
            None => Ok(exc_of(x)),
        },
        Value::Class(c) if c.exception_base().is_some() => {
            let args = match val {
                Some(v) => vec![v],
                None => Vec::new(),
            };
            let inst = class::instantiate(it, c, Args::positional(args))?;
            instance_exc(it, &inst)
        }
        Value::Instance(i) if i.class().exception_base().is_some() => match val {
            Some(_) => Err(instance_with_value()),
            None => instance_exc(it, &typ),
        },
        other => Err(not_exception(other)),
    }
}

fn exc_of(x: &crate::object::value::ExcValue) -> Exc {
    let mut e = Exc::new(x.kind, x.message.clone());
    e.args = x.args.clone();
    e
}

fn instance_exc(it: &mut dyn Interpreter, v: &Value) -> Result<Exc, Exc> {
    let Value::Instance(i) = v else {
        return Err(Exc::type_error("expected an exception instance"));
    };
    let kind = i.class().exception_base().unwrap_or(ExcKind::Exception);
    let message = class::exception_message(it, v)?;
    let mut e = Exc::new(kind, message);
    e.instance = Some(i.clone());
    Ok(e)
}

/// The names a class and its bases define, with what every object has.
fn class_attr_names(c: &Rc<class::Class>) -> Vec<String> {
    let mut names: Vec<String> = c
        .attrs
        .borrow()
        .iter()
        .map(|(k, _)| k.to_string())
        .collect();
    for base in &c.mro {
        if let Value::Class(b) = base {
            names.extend(b.attrs.borrow().iter().map(|(k, _)| k.to_string()));
        }
    }
    names.extend(
        [
            "__class__",
            "__delattr__",
            "__dict__",
            "__doc__",
            "__eq__",
            "__getattribute__",
            "__hash__",
            "__init__",
            "__module__",
            "__repr__",
            "__setattr__",
            "__str__",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    names
}

fn no_attr(v: &Value, name: &str) -> Exc {
    let msg = match v {
        Value::Module(m) => format!("module '{}' has no attribute '{}'", m.name, name),
        other => format!("'{}' object has no attribute '{}'", other.type_name(), name),
    };
    Exc::new(ExcKind::AttributeError, msg).suggesting(crate::object::error::Suggestion::Attribute {
        obj: v.clone(),
        name: Rc::from(name),
    })
}

/// Attribute names a value offers (for completion, `dir` and hints).
pub fn attr_names(v: &Value) -> Vec<String> {
    let statics: &[&str] = match v {
        Value::Instance(inst) => {
            let mut names: Vec<String> = inst
                .attrs
                .borrow()
                .iter()
                .map(|(k, _)| k.to_string())
                .collect();
            names.extend(class_attr_names(&inst.class()));
            return names;
        }
        Value::Class(c) => return class_attr_names(c),
        Value::Generator(_) => &[
            "__iter__",
            "__name__",
            "__next__",
            "__qualname__",
            "close",
            "gi_running",
            "send",
            "throw",
        ],
        Value::Str(_) => STR_METHODS,
        Value::List(_) => LIST_METHODS,
        Value::Tuple(_) => &["count", "index"],
        Value::Dict(_) => DICT_METHODS,
        Value::Set(s) if s.frozen => crate::object::set::FROZENSET_METHODS,
        Value::Set(_) => crate::object::set::SET_METHODS,
        Value::Device(_) => &["device_type", "device_id"],
        Value::Exception(_) => &["args"],
        Value::Float(_) => &[
            "as_integer_ratio",
            "conjugate",
            "imag",
            "is_integer",
            "real",
        ],
        Value::Int(_) => &[
            "as_integer_ratio",
            "bit_count",
            "bit_length",
            "conjugate",
            "denominator",
            "imag",
            "numerator",
            "real",
        ],
        Value::Array(_) => {
            return hooks::ARRAYS
                .get()
                .map_or(Vec::new(), |h| (h.attr_names)(v))
        }
        Value::Module(m) => return m.attrs.borrow().keys().map(|k| k.to_string()).collect(),
        Value::Object(o) => return o.attr_names().iter().map(|s| s.to_string()).collect(),
        Value::Func(_) => &["__name__", "__doc__"],
        Value::DType(..) => &["name", "itemsize", "type"],
        _ => &[],
    };
    statics.iter().map(|s| s.to_string()).collect()
}

const STR_METHODS: &[&str] = &[
    "join",
    "split",
    "strip",
    "lstrip",
    "rstrip",
    "upper",
    "lower",
    "replace",
    "startswith",
    "endswith",
    "format",
    "find",
    "count",
    "splitlines",
    "isdigit",
    "title",
    "center",
    "ljust",
    "rjust",
    "zfill",
];
const LIST_METHODS: &[&str] = &[
    "append", "extend", "pop", "insert", "index", "count", "sort", "reverse", "copy", "clear",
    "remove",
];
const DICT_METHODS: &[&str] = &[
    "keys",
    "values",
    "items",
    "get",
    "pop",
    "update",
    "setdefault",
    "copy",
    "clear",
    "popitem",
];

pub fn get_attr(it: &mut dyn Interpreter, v: &Value, name: &str) -> Result<Value, Exc> {
    let found = match v {
        Value::Instance(inst) => return class::instance_get_attr(it, v, inst, name),
        Value::Class(c) => return class::class_get_attr(it, c, name),
        Value::Generator(_) => generator_method(v, name),
        Value::Method(m) => match name {
            "__self__" => Some(m.receiver.clone()),
            "__func__" => Some(m.func.clone()),
            _ => return get_attr(it, &m.func, name),
        },
        Value::Object(_) if class::as_super(v).is_some() => {
            return match class::as_super(v) {
                Some(sup) => sup.get_attr(it, name),
                None => Err(no_attr(v, name)),
            };
        }
        Value::Array(_) => (hooks::arrays()?.get_attr)(it, v, name)?,
        Value::Module(m) => match m.get(name) {
            Some(v) => Some(v),
            // A module's own `__getattr__` answers the names it lacks (PEP 562).
            None if !name.starts_with("__") => match m.get("__getattr__") {
                Some(hook) => {
                    return it.call_value(&hook, Args::new("__getattr__", vec![Value::str(name)]))
                }
                None => None,
            },
            None => None,
        },
        Value::Str(_) => str_method(v, name),
        Value::List(_) => list_method(v, name),
        Value::Tuple(_) => tuple_method(v, name),
        Value::Dict(_) => dict_method(v, name),
        Value::Set(s) => crate::object::set::get_method(v, s, name),
        Value::Range(..) => crate::object::big_range::attr(v, name),
        Value::Device(d) => match name {
            "device_type" => Some(Value::str(match d.kind {
                DeviceKind::Cpu => "cpu",
                DeviceKind::Gpu => "gpu",
            })),
            "device_id" => Some(Value::Int(d.id as i64)),
            _ => None,
        },
        Value::Exception(e) => match name {
            "args" => Some(Value::tuple(e.args())),
            "msg" | "filename" | "lineno" | "offset" | "text" | "end_lineno" | "end_offset"
                if e.kind.is_subclass_of(ExcKind::SyntaxError) =>
            {
                Some(syntax_error_field(e, name))
            }
            "__cause__" | "__context__" | "__suppress_context__" | "__traceback__" => {
                Some(crate::object::error::link_attr(e.links.as_deref(), name))
            }
            // `StopIteration.value`: what the generator returned.
            "value" if e.kind.is_subclass_of(ExcKind::StopIteration) => {
                Some(e.args().first().cloned().unwrap_or(Value::None))
            }
            // `raise E(...).with_traceback(tb)`: the exception itself (its traceback is
            // where it is raised from).
            "with_traceback" => Some(method(
                v,
                "with_traceback",
                "e.with_traceback(tb): e, to raise.",
                |_, r, _| Ok(r.clone()),
            )),
            _ => e.field(name),
        },
        Value::Int(i) => match name {
            "real" | "numerator" => Some(Value::Int(*i)),
            "imag" => Some(Value::Int(0)),
            "denominator" => Some(Value::Int(1)),
            "bit_length" => Some(method(
                v,
                "bit_length",
                "x.bit_length(): the number of bits needed to write abs(x) in binary.",
                |_, r, a| {
                    a.finish(0)?;
                    let n = match r {
                        Value::Int(n) => n.unsigned_abs(),
                        _ => 0,
                    };
                    Ok(Value::Int(i64::from(64 - n.leading_zeros())))
                },
            )),
            "bit_count" => Some(method(
                v,
                "bit_count",
                "x.bit_count(): the number of ones in the binary form of abs(x).",
                |_, r, a| {
                    a.finish(0)?;
                    let n = match r {
                        Value::Int(n) => n.unsigned_abs(),
                        _ => 0,
                    };
                    Ok(Value::Int(i64::from(n.count_ones())))
                },
            )),
            "conjugate" => Some(method(v, "conjugate", "x.conjugate(): x.", |_, r, a| {
                a.finish(0)?;
                Ok(r.clone())
            })),
            "as_integer_ratio" => Some(method(
                v,
                "as_integer_ratio",
                "x.as_integer_ratio(): (x, 1).",
                |_, r, a| {
                    a.finish(0)?;
                    Ok(Value::tuple(vec![r.clone(), Value::Int(1)]))
                },
            )),
            _ => super::int_more::attr(v, name),
        },
        Value::BigInt(_) => super::int_more::attr(v, name),
        Value::Float(f) => match name {
            "conjugate" => Some(method(v, "conjugate", "x.conjugate(): x.", |_, r, a| {
                a.finish(0)?;
                Ok(r.clone())
            })),
            "as_integer_ratio" => Some(method(
                v,
                "as_integer_ratio",
                "x.as_integer_ratio(): the fraction (numerator, denominator) equal to x exactly.",
                |_, r, a| {
                    a.finish(0)?;
                    let Value::Float(x) = r else {
                        return Ok(Value::None);
                    };
                    float_ratio(*x)
                },
            )),
            "is_integer" => Some(method(
                v,
                "is_integer",
                "x.is_integer(): whether x is whole.",
                |_, r, _| {
                    Ok(Value::Bool(
                        matches!(r, Value::Float(f) if f.fract() == 0.0),
                    ))
                },
            )),
            "real" => Some(Value::Float(*f)),
            "imag" => Some(Value::Float(0.0)),
            _ => None,
        },
        Value::Func(f) if f.dict.borrow().get(name).is_some() => f.dict.borrow().get(name).cloned(),
        Value::Func(f) => match name {
            "__dict__" => Some(class::attrs_dict(&f.dict.borrow())),
            "__name__" => Some(Value::Str(f.name.clone())),
            "__qualname__" => Some(Value::str(&f.qualname())),
            "__module__" => Some(
                f.module
                    .as_ref()
                    .and_then(|m| m.upgrade())
                    .map_or_else(|| Value::str("__main__"), |m| Value::str(&m.name)),
            ),
            "__doc__" => Some(f.doc.clone().map_or(Value::None, Value::Str)),
            _ => None,
        },
        Value::DType(d, _) => match name {
            "name" => Some(Value::str(d.name())),
            "itemsize" => Some(Value::Int(d.size_bytes() as i64)),
            "is_floating_point" => Some(Value::Bool(d.is_float())),
            "is_signed" => Some(Value::Bool(
                *d != crate::runtime::DType::Bool && !d.is_unsigned(),
            )),
            "type" => hooks::ARRAYS.get().map(|h| (h.dtype_type)(*d)),
            _ => None,
        },
        Value::Builtin(b) if matches!(b.kind, crate::object::value::BuiltinKind::Free(_)) => {
            match name {
                "__name__" | "__qualname__" => Some(Value::str(b.name)),
                _ => None,
            }
        }
        Value::Type(t) if name == "__name__" => Some(Value::str(t.name())),
        Value::Type(t @ (TypeKind::Set | TypeKind::FrozenSet)) if !name.starts_with("__") => {
            crate::object::set::unbound_method(*t == TypeKind::FrozenSet, name)
        }
        Value::ExcType(k) if name == "__name__" => Some(Value::str(k.name())),
        // `object.__init__(self)`, `int.__new__(cls, 5)`: what every subclass inherits.
        Value::Type(_) | Value::ExcType(_) if name.starts_with("__") => {
            class::builtin_base_attr(v, name)
        }
        Value::Type(TypeKind::Dict) if name == "fromkeys" => Some(builtin(
            "fromkeys",
            "dict.fromkeys(iterable, value=None): a dict with these keys, each mapped to value.",
            |it, mut a| {
                let keys = a.required(0, "iterable")?;
                let value = a.take(1, "value")?.unwrap_or(Value::None);
                a.finish(2)?;
                let mut d = Dict::default();
                for k in it.iterate(&keys)? {
                    let hk = crate::object::keys::key_among(it, &k, &|h| d.same_hash(h))?;
                    d.insert(hk, k, value.clone());
                }
                Ok(Value::Dict(Rc::new(std::cell::RefCell::new(d))))
            },
        )),
        // `str.lower`, `list.append`: the method as a function taking the object first.
        Value::Type(TypeKind::Int) if name == "from_bytes" => {
            Some(super::int_more::from_bytes_fn())
        }
        Value::Type(t) => unbound_type_method(*t, name),
        Value::Object(o) => o.get_attr(o, name),
        _ => None,
    };
    found
        .or_else(|| container_protocol(v, name))
        .ok_or_else(|| match v {
            Value::Object(o) => o.missing_attr(name).unwrap_or_else(|| no_attr(v, name)),
            _ => no_attr(v, name),
        })
}

/// `x.__len__`, `x.__getitem__`, `x.__iter__`, `x.__contains__` of the built-in containers, as
/// duck-typing code asks for them (`hasattr(y, '__len__')`, d2l's `Animator.add`); each runs
/// the operation it names.
fn container_protocol(v: &Value, name: &str) -> Option<Value> {
    let container = matches!(
        v,
        Value::Str(_)
            | Value::List(_)
            | Value::Tuple(_)
            | Value::Dict(_)
            | Value::Set(_)
            | Value::Range(..)
    );
    if !container {
        return None;
    }
    Some(match name {
        "__len__" => method(v, "__len__", "Return len(self).", |_, r, a| {
            a.finish(0)?;
            Ok(Value::Int(length(r)? as i64))
        }),
        "__getitem__" => method(v, "__getitem__", "Return self[key].", |it, r, mut a| {
            let key = a.required(0, "key")?;
            a.finish(1)?;
            crate::object::ops::get_item(
                it,
                r,
                crate::object::ops::Index::Single(crate::object::ops::IndexItem::Value(key)),
            )
        }),
        "__iter__" => method(v, "__iter__", "Implement iter(self).", |it, r, a| {
            a.finish(0)?;
            crate::modules::python::classes::iter(it, Args::new("iter", vec![r.clone()]))
        }),
        "__contains__" => method(v, "__contains__", "Return key in self.", |it, r, mut a| {
            let key = a.required(0, "key")?;
            a.finish(1)?;
            crate::object::ops::compare(it, crate::lang::ast::CmpOp::In, &key, r)
        }),
        _ => return None,
    })
}

/// `str.upper` and the like: a function whose first argument is the object to call the method
/// of (`map(str.strip, lines)`, `sorted(words, key=str.lower)`).
fn unbound_type_method(t: TypeKind, name: &str) -> Option<Value> {
    let sample = match t {
        TypeKind::Str => Value::str(""),
        TypeKind::List => Value::list(Vec::new()),
        TypeKind::Tuple => Value::tuple(Vec::new()),
        TypeKind::Dict => Value::Dict(Default::default()),
        TypeKind::Float => Value::Float(0.0),
        TypeKind::Int => Value::Int(0),
        _ => return None,
    };
    let found = match &sample {
        Value::Str(_) => str_method(&sample, name),
        Value::List(_) => list_method(&sample, name),
        Value::Tuple(_) => tuple_method(&sample, name),
        Value::Dict(_) => dict_method(&sample, name),
        _ => None,
    };
    let method_name = match &found {
        Some(Value::Builtin(b)) => b.name,
        _ => return None,
    };
    Some(method(
        &Value::tuple(vec![Value::Type(t), Value::str(method_name)]),
        method_name,
        "an unbound method of a built-in type: pass the object first",
        |it, r, mut a| {
            let (t, name) = match r {
                Value::Tuple(p) => match (p.first(), p.get(1)) {
                    (Some(Value::Type(t)), Some(Value::Str(n))) => (*t, n.clone()),
                    _ => return Err(Exc::type_error("bad unbound method")),
                },
                _ => return Err(Exc::type_error("bad unbound method")),
            };
            if a.pos.is_empty() {
                return Err(Exc::type_error(format!(
                    "unbound method {}.{name}() needs an argument",
                    t.name()
                )));
            }
            let this = a.pos.remove(0);
            if this.type_name() != t.name() && !matches!(this, Value::Instance(_)) {
                return Err(Exc::type_error(format!(
                    "descriptor '{name}' for '{}' objects doesn't apply to a '{}' object",
                    t.name(),
                    this.type_name()
                )));
            }
            let m = get_attr(it, &this, &name)?;
            it.call_value(&m, a)
        },
    ))
}

pub fn set_attr(
    it: &mut dyn Interpreter,
    obj: &Value,
    name: &str,
    value: Value,
) -> Result<(), Exc> {
    match obj {
        Value::Instance(inst) => class::instance_set_attr(it, obj, inst, name, value),
        _ if name == "__class__" => class::assign_class(obj, &value),
        Value::Class(c) => {
            if class::is_property(&value) {
                c.has_properties.set(true);
            }
            c.attrs.borrow_mut().set(Rc::from(name), value);
            Ok(())
        }
        Value::Array(_) => (hooks::arrays()?.set_attr)(it, obj, name, value),
        Value::Func(f) => {
            if matches!(name, "__name__" | "__qualname__") && !matches!(value, Value::Str(_)) {
                return Err(Exc::type_error(format!(
                    "{name} must be set to a string object"
                )));
            }
            f.dict.borrow_mut().set(Rc::from(name), value);
            Ok(())
        }
        Value::Module(m) => {
            m.set(name, value);
            Ok(())
        }
        // CPython: an attribute the type has is read-only, any other does not exist.
        other => Err(Exc::new(
            ExcKind::AttributeError,
            if get_attr(it, other, name).is_ok() {
                format!(
                    "'{}' object attribute '{}' is read-only",
                    other.type_name(),
                    name
                )
            } else {
                format!("'{}' object has no attribute '{name}'", other.type_name())
            },
        )),
    }
}

// ---------------------------------------------------------------- str methods

fn recv_str(r: &Value) -> Rc<str> {
    match r {
        Value::Str(s) => s.clone(),
        _ => Rc::from(""),
    }
}

fn opt_str(a: &mut Args, i: usize, name: &str) -> Result<Option<Rc<str>>, Exc> {
    match a.take(i, name)? {
        None | Some(Value::None) => Ok(None),
        Some(v) => str_arg(&v, name).map(Some),
    }
}

fn str_method(v: &Value, name: &str) -> Option<Value> {
    let f: crate::object::value::MethodFn = match name {
        "join" => |it, r, mut a| {
            let items = a.required(0, "iterable")?;
            a.finish(1)?;
            let sep = recv_str(r);
            let mut parts = Vec::new();
            for x in it.iterate(&items)? {
                match &x {
                    // Shared, not copied: the length is checked before anything is copied.
                    Value::Str(s) => parts.push(s.clone()),
                    other => {
                        return Err(Exc::type_error(format!(
                            "sequence item: expected str instance, {} found",
                            other.type_name()
                        )))
                    }
                }
            }
            Ok(Value::str(&alloc::join(&parts, &sep)?))
        },
        "split" => |_, r, mut a| {
            let sep = opt_str(&mut a, 0, "sep")?;
            let maxsplit = a
                .take(1, "maxsplit")?
                .and_then(|m| as_i64(&m))
                .unwrap_or(-1);
            a.finish(2)?;
            let s = recv_str(r);
            let parts: Vec<Value> = match sep {
                Some(sep) if sep.is_empty() => return Err(Exc::value_error("empty separator")),
                Some(sep) if maxsplit >= 0 => s
                    .splitn(maxsplit as usize + 1, &*sep)
                    .map(Value::str)
                    .collect(),
                Some(sep) => s.split(&*sep).map(Value::str).collect(),
                None => s.split_whitespace().map(Value::str).collect(),
            };
            Ok(Value::list(parts))
        },
        "splitlines" => |it, r, mut a| {
            let keepends = match a.take(0, "keepends")? {
                Some(v) => class::truthy(it, &v)?,
                None => false,
            };
            a.finish(1)?;
            Ok(Value::list(
                super::str_more::splitlines(&recv_str(r), keepends)
                    .into_iter()
                    .map(Value::str)
                    .collect(),
            ))
        },
        "strip" | "lstrip" | "rstrip" => match name {
            "strip" => |_, r, mut a| {
                let chars = opt_str(&mut a, 0, "chars")?;
                a.finish(1)?;
                let s = recv_str(r);
                Ok(Value::str(match &chars {
                    Some(c) => s.trim_matches(|x| c.contains(x)),
                    None => s.trim(),
                }))
            },
            "lstrip" => |_, r, mut a| {
                let chars = opt_str(&mut a, 0, "chars")?;
                a.finish(1)?;
                let s = recv_str(r);
                Ok(Value::str(match &chars {
                    Some(c) => s.trim_start_matches(|x| c.contains(x)),
                    None => s.trim_start(),
                }))
            },
            _ => |_, r, mut a| {
                let chars = opt_str(&mut a, 0, "chars")?;
                a.finish(1)?;
                let s = recv_str(r);
                Ok(Value::str(match &chars {
                    Some(c) => s.trim_end_matches(|x| c.contains(x)),
                    None => s.trim_end(),
                }))
            },
        },
        "upper" => |_, r, a| {
            a.finish(0)?;
            Ok(Value::str(&recv_str(r).to_uppercase()))
        },
        "lower" => |_, r, a| {
            a.finish(0)?;
            Ok(Value::str(&recv_str(r).to_lowercase()))
        },
        "title" => |_, r, a| {
            a.finish(0)?;
            let mut out = String::new();
            let mut prev_alpha = false;
            for c in recv_str(r).chars() {
                if prev_alpha {
                    out.extend(c.to_lowercase());
                } else {
                    out.extend(c.to_uppercase());
                }
                prev_alpha = c.is_alphabetic();
            }
            Ok(Value::str(&out))
        },
        "isdigit" => |_, r, a| {
            a.finish(0)?;
            let s = recv_str(r);
            Ok(Value::Bool(
                !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()),
            ))
        },
        "replace" => |_, r, mut a| {
            let old = str_arg(&a.required(0, "old")?, "old")?;
            let new = str_arg(&a.required(1, "new")?, "new")?;
            a.finish(2)?;
            Ok(Value::str(&alloc::replace(&recv_str(r), &old, &new)?))
        },
        "startswith" => |_, r, mut a| {
            let p = a.required(0, "prefix")?;
            a.finish(1)?;
            let s = recv_str(r);
            Ok(Value::Bool(match &p {
                Value::Tuple(t) => t
                    .iter()
                    .any(|x| matches!(x, Value::Str(q) if s.starts_with(&**q))),
                other => s.starts_with(&*str_arg(other, "prefix")?),
            }))
        },
        "endswith" => |_, r, mut a| {
            let p = a.required(0, "suffix")?;
            a.finish(1)?;
            let s = recv_str(r);
            Ok(Value::Bool(match &p {
                Value::Tuple(t) => t
                    .iter()
                    .any(|x| matches!(x, Value::Str(q) if s.ends_with(&**q))),
                other => s.ends_with(&*str_arg(other, "suffix")?),
            }))
        },
        "find" => |_, r, mut a| {
            let s = recv_str(r);
            Ok(Value::Int(super::str_more::find(&s, &mut a)?))
        },
        "count" => |_, r, mut a| {
            let sub = str_arg(&a.required(0, "sub")?, "sub")?;
            a.finish(1)?;
            let s = recv_str(r);
            Ok(Value::Int(if sub.is_empty() {
                s.chars().count() as i64 + 1
            } else {
                s.matches(&*sub).count() as i64
            }))
        },
        "center" | "ljust" | "rjust" | "zfill" => match name {
            "center" => |_, r, mut a| pad(r, &mut a, '^'),
            "ljust" => |_, r, mut a| pad(r, &mut a, '<'),
            "rjust" => |_, r, mut a| pad(r, &mut a, '>'),
            _ => |_, r, mut a| {
                let w = int_arg(&a.required(0, "width")?, "width")?;
                a.finish(1)?;
                Ok(Value::str(&display_zfill(&recv_str(r), w.max(0) as usize)?))
            },
        },
        "format" => |it, r, a| str_format(it, &recv_str(r), a),
        _ => return crate::modules::python::str_more::method_of(v, name),
    };
    let name: &'static str = STR_METHODS
        .iter()
        .find(|m| **m == name)
        .copied()
        .unwrap_or("method");
    Some(method(v, name, "str method", f))
}

fn display_zfill(s: &str, width: usize) -> Result<String, Exc> {
    let n = s.chars().count();
    if n >= width {
        return Ok(s.to_string());
    }
    let (sign, rest) = match s.strip_prefix(['-', '+']) {
        Some(rest) => (&s[..1], rest),
        None => ("", s),
    };
    let mut out = alloc::string(s.len())?;
    out.push_str(sign);
    alloc::push_repeated(&mut out, "0", width - n)?;
    out.push_str(rest);
    Ok(out)
}

fn pad(r: &Value, a: &mut Args, align: char) -> Result<Value, Exc> {
    let w = int_arg(&a.required(0, "width")?, "width")?.max(0) as usize;
    let fill = match opt_str(a, 1, "fillchar")? {
        Some(f) => f.chars().next().unwrap_or(' '),
        None => ' ',
    };
    a.finish(2)?;
    let s = recv_str(r);
    let n = s.chars().count();
    if n >= w {
        return Ok(Value::Str(s));
    }
    let extra = w - n;
    // CPython's split: the odd space goes left when the width is odd and the string even.
    let (left, right) = match align {
        '<' => (0, extra),
        '>' => (extra, 0),
        _ => {
            let left = extra / 2 + (extra & w & 1);
            (left, extra - left)
        }
    };
    let f = fill.to_string();
    let mut out = alloc::string(s.len())?;
    alloc::push_repeated(&mut out, &f, left)?;
    out.push_str(&s);
    alloc::push_repeated(&mut out, &f, right)?;
    Ok(Value::str(&out))
}

/// `"{} {name:.2f}".format(a, name=b)`.
fn str_format(it: &mut dyn Interpreter, fmt: &str, a: Args) -> Result<Value, Exc> {
    let mut out = String::new();
    let mut auto = 0usize;
    let mut chars = fmt.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' if matches!(chars.peek(), Some((_, '{'))) => {
                chars.next();
                out.push('{');
            }
            '}' if matches!(chars.peek(), Some((_, '}'))) => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let rest = &fmt[i + 1..];
                let close = rest
                    .find('}')
                    .ok_or_else(|| Exc::value_error("Single '{' encountered in format string"))?;
                let field = &rest[..close];
                for _ in 0..field.chars().count() + 1 {
                    chars.next();
                }
                let (name, spec) = field.split_once(':').unwrap_or((field, ""));
                let (name, conv) = match name.split_once('!') {
                    Some((n, c)) => (n, Some(c)),
                    None => (name, None),
                };
                let v = if name.is_empty() {
                    let v = a.pos.get(auto).cloned();
                    auto += 1;
                    v.ok_or_else(|| {
                        Exc::new(
                            ExcKind::IndexError,
                            format!(
                                "Replacement index {} out of range for positional args tuple",
                                auto - 1
                            ),
                        )
                    })?
                } else if let Ok(n) = name.parse::<usize>() {
                    a.pos.get(n).cloned().ok_or_else(|| {
                        Exc::new(
                            ExcKind::IndexError,
                            format!("Replacement index {n} out of range for positional args tuple"),
                        )
                    })?
                } else {
                    let (base, attr) = match name.split_once('.') {
                        Some((b, at)) => (b, Some(at)),
                        None => (name, None),
                    };
                    let mut v =
                        a.kw.iter()
                            .find(|(k, _)| &**k == base)
                            .map(|(_, v)| v.clone())
                            .ok_or_else(|| Exc::new(ExcKind::KeyError, format!("'{base}'")))?;
                    if let Some(attr) = attr {
                        v = get_attr(it, &v, attr)?;
                    }
                    v
                };
                let v = match conv {
                    Some("r") => Value::str(&format::repr(it, &v)?),
                    Some("s") => Value::str(&format::to_str(it, &v)?),
                    _ => v,
                };
                out.push_str(&format::format_value(it, &v, spec)?);
            }
            '}' => return Err(Exc::value_error("Single '}' encountered in format string")),
            c => out.push(c),
        }
    }
    Ok(Value::str(&out))
}

// --------------------------------------------------------------- list methods

fn recv_list(r: &Value) -> Result<&Rc<std::cell::RefCell<Vec<Value>>>, Exc> {
    match r {
        Value::List(l) => Ok(l),
        _ => Err(Exc::type_error("expected a list")),
    }
}

/// `tuple.index` / `tuple.count`, CPython's messages.
fn tuple_method(v: &Value, name: &str) -> Option<Value> {
    fn items(r: &Value) -> Vec<Value> {
        match r {
            Value::Tuple(t) => t.as_ref().clone(),
            _ => Vec::new(),
        }
    }
    let f: crate::object::value::MethodFn = match name {
        "index" => |it, r, mut a| {
            let x = a.required(0, "value")?;
            a.finish(1)?;
            for (i, y) in items(r).iter().enumerate() {
                if ops::item_equals(it, y, &x)? {
                    return Ok(Value::Int(i as i64));
                }
            }
            Err(Exc::value_error("tuple.index(x): x not in tuple"))
        },
        "count" => |it, r, mut a| {
            let x = a.required(0, "value")?;
            a.finish(1)?;
            let mut n = 0;
            for y in &items(r) {
                if ops::item_equals(it, y, &x)? {
                    n += 1;
                }
            }
            Ok(Value::Int(n))
        },
        _ => return None,
    };
    let name: &'static str = if name == "index" { "index" } else { "count" };
    Some(method(v, name, "", f))
}

fn list_method(v: &Value, name: &str) -> Option<Value> {
    let f: crate::object::value::MethodFn = match name {
        "append" => |_, r, mut a| {
            let x = a.required(0, "object")?;
            a.finish(1)?;
            recv_list(r)?.borrow_mut().push(x);
            Ok(Value::None)
        },
        "extend" => |it, r, mut a| {
            let x = a.required(0, "iterable")?;
            a.finish(1)?;
            let items = it.iterate(&x)?;
            recv_list(r)?.borrow_mut().extend(items);
            Ok(Value::None)
        },
        "pop" => |_, r, mut a| {
            let i = a.take(0, "index")?;
            a.finish(1)?;
            let l = recv_list(r)?;
            let len = l.borrow().len();
            if len == 0 {
                return Err(Exc::new(ExcKind::IndexError, "pop from empty list"));
            }
            let idx = match i {
                Some(i) => {
                    let i = int_arg(&i, "index")?;
                    let j = if i < 0 { i + len as i64 } else { i };
                    if j < 0 || j >= len as i64 {
                        return Err(Exc::new(ExcKind::IndexError, "pop index out of range"));
                    }
                    j as usize
                }
                None => len - 1,
            };
            Ok(l.borrow_mut().remove(idx))
        },
        "insert" => |_, r, mut a| {
            let i = int_arg(&a.required(0, "index")?, "index")?;
            let x = a.required(1, "object")?;
            a.finish(2)?;
            let l = recv_list(r)?;
            let len = l.borrow().len() as i64;
            let j = if i < 0 { (i + len).max(0) } else { i.min(len) };
            l.borrow_mut().insert(j as usize, x);
            Ok(Value::None)
        },
        "remove" => |it, r, mut a| {
            let x = a.required(0, "value")?;
            a.finish(1)?;
            let l = recv_list(r)?;
            let items = l.borrow().clone();
            let mut pos = None;
            for (i, y) in items.iter().enumerate() {
                if ops::item_equals(it, y, &x)? {
                    pos = Some(i);
                    break;
                }
            }
            match pos {
                Some(p) => {
                    l.borrow_mut().remove(p);
                    Ok(Value::None)
                }
                None => Err(Exc::value_error("list.remove(x): x not in list")),
            }
        },
        "index" => |it, r, mut a| {
            let x = a.required(0, "value")?;
            a.finish(1)?;
            let l = recv_list(r)?.borrow().clone();
            let mut pos = None;
            for (i, y) in l.iter().enumerate() {
                if ops::item_equals(it, y, &x)? {
                    pos = Some(i);
                    break;
                }
            }
            match pos {
                Some(p) => Ok(Value::Int(p as i64)),
                None => Err(Exc::value_error(format!(
                    "{} is not in list",
                    format::repr(it, &x)?
                ))),
            }
        },
        "count" => |it, r, mut a| {
            let x = a.required(0, "value")?;
            a.finish(1)?;
            let items = recv_list(r)?.borrow().clone();
            let mut n = 0;
            for y in &items {
                if ops::item_equals(it, y, &x)? {
                    n += 1;
                }
            }
            Ok(Value::Int(n))
        },
        "sort" => |it, r, mut a| {
            let key = a.take_kw("key");
            let reverse = a
                .take_kw("reverse")
                .map(|v| v.truthy())
                .transpose()?
                .unwrap_or(false);
            a.finish(0)?;
            let l = recv_list(r)?;
            let items = l.borrow().clone();
            let sorted = sort_items(it, items, key, reverse)?;
            *l.borrow_mut() = sorted;
            Ok(Value::None)
        },
        "reverse" => |_, r, a| {
            a.finish(0)?;
            recv_list(r)?.borrow_mut().reverse();
            Ok(Value::None)
        },
        "copy" => |_, r, a| {
            a.finish(0)?;
            Ok(Value::list(recv_list(r)?.borrow().clone()))
        },
        "clear" => |_, r, a| {
            a.finish(0)?;
            recv_list(r)?.borrow_mut().clear();
            Ok(Value::None)
        },
        _ => return None,
    };
    let name: &'static str = LIST_METHODS
        .iter()
        .find(|m| **m == name)
        .copied()
        .unwrap_or("method");
    Some(method(v, name, "list method", f))
}

// --------------------------------------------------------------- dict methods

fn recv_dict(r: &Value) -> Result<&Rc<std::cell::RefCell<Dict>>, Exc> {
    match r {
        Value::Dict(d) => Ok(d),
        _ => Err(Exc::type_error("expected a dict")),
    }
}

fn dict_method(v: &Value, name: &str) -> Option<Value> {
    let f: crate::object::value::MethodFn = match name {
        "keys" => |_, r, a| {
            a.finish(0)?;
            Ok(Value::list(
                recv_dict(r)?
                    .borrow()
                    .entries
                    .iter()
                    .map(|(k, _)| k.clone())
                    .collect(),
            ))
        },
        "values" => |_, r, a| {
            a.finish(0)?;
            Ok(Value::list(
                recv_dict(r)?
                    .borrow()
                    .entries
                    .iter()
                    .map(|(_, v)| v.clone())
                    .collect(),
            ))
        },
        "items" => |_, r, a| {
            a.finish(0)?;
            Ok(Value::list(
                recv_dict(r)?
                    .borrow()
                    .entries
                    .iter()
                    .map(|(k, v)| Value::tuple(vec![k.clone(), v.clone()]))
                    .collect(),
            ))
        },
        "get" => |it, r, mut a| {
            let k = a.required(0, "key")?;
            let d = a.take(1, "default")?.unwrap_or(Value::None);
            a.finish(2)?;
            let dict = recv_dict(r)?;
            let hk = crate::object::keys::dict_key(it, dict, &k)?;
            Ok(dict.borrow().get(&hk).cloned().unwrap_or(d))
        },
        "pop" => |it, r, mut a| {
            let k = a.required(0, "key")?;
            let d = a.take(1, "default")?;
            a.finish(2)?;
            let dict = recv_dict(r)?;
            let hk = crate::object::keys::dict_key(it, dict, &k)?;
            let removed = dict.borrow_mut().remove(&hk);
            match (removed, d) {
                (Some(v), _) | (None, Some(v)) => Ok(v),
                (None, None) => Err(Exc::key_error(it, &k)),
            }
        },
        "popitem" => |_, r, a| {
            a.finish(0)?;
            let dict = recv_dict(r)?;
            let last = dict.borrow().entries.last().cloned();
            let Some((k, v)) = last else {
                return Err(Exc::new(
                    ExcKind::KeyError,
                    "'popitem(): dictionary is empty'",
                ));
            };
            dict.borrow_mut().remove(&hash_key(&k)?);
            Ok(Value::tuple(vec![k, v]))
        },
        "setdefault" => |it, r, mut a| {
            let k = a.required(0, "key")?;
            let d = a.take(1, "default")?.unwrap_or(Value::None);
            a.finish(2)?;
            let dict = recv_dict(r)?;
            let hk = crate::object::keys::dict_key(it, dict, &k)?;
            let existing = dict.borrow().get(&hk).cloned();
            match existing {
                Some(v) => Ok(v),
                None => {
                    dict.borrow_mut().insert(hk, k, d.clone());
                    Ok(d)
                }
            }
        },
        "update" => |it, r, mut a| {
            let other = a.take(0, "other")?;
            let dict = recv_dict(r)?;
            if let Some(o) = other {
                let src = call_type(it, TypeKind::Dict, Args::new("dict", vec![o]))?;
                if let Value::Dict(s) = &src {
                    let entries = s.borrow().entries.clone();
                    for (k, v) in entries {
                        let hk = crate::object::keys::dict_key(it, dict, &k)?;
                        dict.borrow_mut().insert(hk, k, v);
                    }
                }
            }
            for (k, v) in std::mem::take(&mut a.kw) {
                dict.borrow_mut().insert(
                    crate::object::value::HashKey::Str(k.clone()),
                    Value::Str(k),
                    v,
                );
            }
            a.finish(1)?;
            Ok(Value::None)
        },
        "copy" => |_, r, a| {
            a.finish(0)?;
            let d = recv_dict(r)?.borrow().clone();
            Ok(Value::Dict(Rc::new(std::cell::RefCell::new(d))))
        },
        "clear" => |_, r, a| {
            a.finish(0)?;
            *recv_dict(r)?.borrow_mut() = Dict::default();
            Ok(Value::None)
        },
        _ => return None,
    };
    let name: &'static str = DICT_METHODS
        .iter()
        .find(|m| **m == name)
        .copied()
        .unwrap_or("method");
    Some(method(v, name, "dict method", f))
}

/// `SyntaxError.msg`, `.filename`, `.lineno`...: read from its arguments, as CPython's
/// `SyntaxError(msg, (filename, lineno, offset, text, end_lineno, end_offset))`.
fn syntax_error_field(e: &crate::object::value::ExcValue, name: &str) -> Value {
    let args = e.args();
    if name == "msg" {
        return args.first().cloned().unwrap_or(Value::None);
    }
    let index = match name {
        "filename" => 0,
        "lineno" => 1,
        "offset" => 2,
        "text" => 3,
        "end_lineno" => 4,
        _ => 5,
    };
    match args.get(1) {
        Some(Value::Tuple(t)) => t.get(index).cloned().unwrap_or(Value::None),
        _ => Value::None,
    }
}
