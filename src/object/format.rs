//! `repr`, `str`, format specs and `%` formatting of values, and the
//! IPython-style pretty form used when a value is displayed.

use crate::display::{self, pyfmt::FmtValue, ArrayView, HostValues};
use crate::runtime::{DeviceKind, HostData, Scalar};

use super::alloc;
use super::error::{Exc, ExcKind};
use super::guard::{self, Walk};
use super::interpreter::Interpreter;
use super::output::DisplayData;
use super::value::{ArrayValue, Flavor, Value};

fn with_view<R>(a: &ArrayValue, f: impl FnOnce(&ArrayView) -> R) -> R {
    with_host(a, a.array.to_host(), f)
}

/// Like `with_view`, for a second rendering of a value just displayed (the HTML beside the
/// text): the transfer ledger has already counted the copy.
fn with_view_again<R>(a: &ArrayValue, f: impl FnOnce(&ArrayView) -> R) -> R {
    with_host(a, a.array.to_host_uncounted(), f)
}

fn with_host<R>(a: &ArrayValue, host: HostData, f: impl FnOnce(&ArrayView) -> R) -> R {
    let shape = a.array.shape().to_vec();
    // The display formats every integer width as int64 (a uint64 past 2^63 excepted).
    let wide: Vec<i64> = match &host {
        HostData::I8(v) => v.iter().map(|&x| i64::from(x)).collect(),
        HostData::I16(v) => v.iter().map(|&x| i64::from(x)).collect(),
        HostData::U8(v) => v.iter().map(|&x| i64::from(x)).collect(),
        HostData::U16(v) => v.iter().map(|&x| i64::from(x)).collect(),
        HostData::U32(v) => v.iter().map(|&x| i64::from(x)).collect(),
        HostData::U64(v) => v.iter().map(|&x| x as i64).collect(),
        _ => Vec::new(),
    };
    // bfloat16 prints through float32, which holds it exactly (PyTorch's `tensor_str` too).
    let wide_bf16: Vec<f32> = match &host {
        HostData::BF16(v) => v.iter().map(|x| x.to_f32()).collect(),
        _ => Vec::new(),
    };
    let values = match &host {
        HostData::F32(v) => HostValues::F32(v),
        HostData::F64(v) => HostValues::F64(v),
        HostData::I32(v) => HostValues::I32(v),
        HostData::I64(v) => HostValues::I64(v),
        HostData::Bool(v) => HostValues::Bool(v),
        HostData::F16(v) => HostValues::F16(v),
        HostData::BF16(_) => HostValues::F32(&wide_bf16),
        _ => HostValues::I64(&wide),
    };
    f(&ArrayView {
        values,
        shape: &shape,
    })
}

/// How a device prints in PyTorch: `cuda:0`, `cpu`.
pub fn torch_device_name(d: crate::runtime::Device) -> String {
    match d.kind {
        DeviceKind::Cpu => "cpu".to_string(),
        DeviceKind::Gpu => format!("cuda:{}", d.id),
    }
}

pub fn array_repr(a: &ArrayValue) -> String {
    array_repr_with(a, None)
}

/// Autograd's part of a tensor's repr: `grad_fn=<MulBackward0>` for a recorded result,
/// `requires_grad=True` for a leaf that requires grad (None for other arrays).
pub fn grad_suffix(it: &dyn Interpreter, a: &ArrayValue) -> Option<String> {
    if a.flavor != Flavor::Torch {
        return None;
    }
    let tape = &it.state().nn.tape;
    match tape.grad_fn(&a.array) {
        Some(name) => Some(format!("grad_fn=<{name}>")),
        None => tape
            .requires_grad(&a.array)
            .then(|| "requires_grad=True".to_string()),
    }
}

/// The repr of an array, with autograd's suffix for a tensor that has one.
pub fn array_repr_with(a: &ArrayValue, grad: Option<&str>) -> String {
    let device = a.array.device();
    let dtype = a.array.dtype().name();
    with_view(a, |v| match a.flavor {
        Flavor::Nd => display::mxnet_legacy_repr(v, &device.to_string()),
        Flavor::Np => {
            let ctx = (device.kind != DeviceKind::Cpu).then(|| device.to_string());
            display::mxnet_np_repr(v, dtype, ctx.as_deref())
        }
        Flavor::Torch => {
            let dev = (device.kind != DeviceKind::Cpu).then(|| torch_device_name(device));
            display::torch_repr_with(v, dev.as_deref(), dtype, grad)
        }
        Flavor::Numpy => display::numpy_repr(v, dtype),
    })
}

pub fn array_str(a: &ArrayValue) -> String {
    match a.flavor {
        // MXNet's numpy arrays name a device other than the CPU after the values (`[1. 1.]
        // @gpu(0)`), except 0-d ones (`ndarray.__str__`).
        Flavor::Np if a.array.device().kind != DeviceKind::Cpu && a.array.ndim() > 0 => {
            format!("{} @{}", with_view(a, display::numpy_str), a.array.device())
        }
        Flavor::Np | Flavor::Numpy => with_view(a, display::numpy_str),
        _ => array_repr(a),
    }
}

/// The HTML table with a header in the array's own framework's words: MXNet's
/// `gpu(0)` badge, numpy mode's `ctx=gpu(0)`, PyTorch's `device='cuda:0'` and
/// `torch.float32`, and no device at all for a numpy array (it has none).
pub fn array_html(a: &ArrayValue) -> String {
    let device = a.array.device();
    let on_gpu = device.kind != DeviceKind::Cpu;
    let dtype = a.array.dtype().name();
    match a.flavor {
        Flavor::Nd => {
            let device = device.to_string();
            with_view_again(a, |v| display::array_html(v, dtype, &device))
        }
        Flavor::Np => {
            let ctx = format!("ctx={device}");
            let dtype = format!("dtype={dtype}");
            with_view_again(a, |v| {
                display::html::array_html_captioned(
                    v,
                    &display::html::ArrayCaption {
                        kind: "mxnet.numpy.ndarray",
                        device: Some(&ctx),
                        on_gpu,
                        dtype: &dtype,
                    },
                )
            })
        }
        Flavor::Torch => {
            let dev = format!("device='{}'", torch_device_name(device));
            let dtype = format!("torch.{dtype}");
            with_view_again(a, |v| {
                display::html::array_html_captioned(
                    v,
                    &display::html::ArrayCaption {
                        kind: "torch.Tensor",
                        device: Some(&dev),
                        on_gpu,
                        dtype: &dtype,
                    },
                )
            })
        }
        Flavor::Numpy => {
            let dtype = format!("dtype('{dtype}')");
            with_view_again(a, |v| {
                display::html::array_html_captioned(
                    v,
                    &display::html::ArrayCaption {
                        kind: "numpy.ndarray",
                        device: None,
                        on_gpu: false,
                        dtype: &dtype,
                    },
                )
            })
        }
    }
}

pub fn float_repr(f: f64) -> String {
    display::py_float_repr(f)
}

/// `repr(v)`. A container whose repr is already being built further up (a list that holds
/// itself) prints as `[...]`, as in CPython; nesting past the recursion guard's limit is a
/// `RecursionError`.
pub fn repr(it: &mut dyn Interpreter, v: &Value) -> Result<String, Exc> {
    let cycle = match v {
        Value::List(_) => "[...]",
        Value::Tuple(_) => "(...)",
        Value::Dict(_) => "{...}",
        Value::Set(s) if s.frozen => "frozenset(...)",
        Value::Set(_) => "set(...)",
        _ => return repr_inner(it, v),
    };
    let Some(_entry) = guard::repr_enter(v.identity()) else {
        return Ok(cycle.into());
    };
    guard::nest(Walk::Repr, || repr_inner(it, v))
}

/// A failed device job left this array without values: its error, never zeros.
fn check_failed(v: &Value) -> Result<(), Exc> {
    match v {
        Value::Array(a) => a.array.failure().map_or(Ok(()), |e| Err(e.into())),
        _ => Ok(()),
    }
}

fn repr_inner(it: &mut dyn Interpreter, v: &Value) -> Result<String, Exc> {
    check_failed(v)?;
    Ok(match v {
        Value::None => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(i) => i.to_string(),
        Value::BigInt(n) => super::bigint::to_decimal(n)?,
        Value::Float(f) => float_repr(*f),
        Value::Str(s) => str_repr(s),
        Value::List(l) => {
            let items = l.borrow().clone();
            enclose("[", join_reprs(it, &items)?, "", "]")?
        }
        Value::Tuple(t) => {
            if t.len() == 1 {
                format!("({},)", repr(it, &t[0])?)
            } else {
                enclose("(", join_reprs(it, t)?, "", ")")?
            }
        }
        Value::Dict(d) => {
            let entries = d.borrow().entries.clone();
            let mut parts = alloc::vec(entries.len())?;
            for (k, val) in &entries {
                parts.push(format!("{}: {}", repr(it, k)?, repr(it, val)?));
            }
            enclose("{", alloc::join(&parts, ", ")?, "", "}")?
        }
        Value::Set(s) => {
            let items = s.table.borrow().values();
            let mut parts = alloc::vec(items.len())?;
            for x in &items {
                parts.push(repr(it, x)?);
            }
            super::set::repr_text(s, parts)
        }
        Value::Range(a, b, c) => {
            if *c == 1 {
                format!("range({a}, {b})")
            } else {
                format!("range({a}, {b}, {c})")
            }
        }
        Value::Array(a) => torch_parameter_repr(it, a)
            .unwrap_or_else(|| array_repr_with(a, grad_suffix(it, a).as_deref())),
        Value::Device(d) => d.to_string(),
        Value::DType(d, flavor) => match flavor {
            Flavor::Nd => format!("<class 'numpy.{}'>", d.name()),
            Flavor::Np | Flavor::Numpy => format!("dtype('{}')", d.name()),
            Flavor::Torch => format!("torch.{}", d.name()),
        },
        Value::Func(f) => format!("<function {} at {:#x}>", f.qualname(), v.identity()),
        Value::Builtin(b) => match &b.kind {
            super::value::BuiltinKind::Free(_) => format!("<built-in function {}>", b.name),
            super::value::BuiltinKind::Unbound(_) => format!("<function {}>", b.name),
            super::value::BuiltinKind::Method { receiver, .. } => {
                format!(
                    "<built-in method {} of {} object>",
                    b.name,
                    receiver.type_name()
                )
            }
        },
        Value::Module(m) => format!("<module '{}' (built-in)>", m.name),
        Value::Type(t) => format!("<class '{}'>", t.qualified_name()),
        Value::ExcType(k) => format!("<class '{}'>", k.name()),
        Value::Exception(e) => {
            let args = e.args();
            match args.as_slice() {
                [one] => format!("{}({})", e.kind.name(), repr(it, one)?),
                _ => format!("{}{}", e.kind.name(), repr(it, &Value::tuple(args))?),
            }
        }
        Value::Object(o) => o.repr(),
        Value::Class(c) => match super::class::call_special(it, v, "__repr__", Vec::new())? {
            Some(r) => return special_text(r, "__repr__"),
            None => c.repr(),
        },
        Value::Generator(g) => format!("<generator object {} at {:#x}>", g.name, v.identity()),
        Value::Instance(inst) => {
            if let Some(r) = super::class::call_special(it, v, "__repr__", Vec::new())? {
                return special_text(r, "__repr__");
            }
            if let Some(base) = super::class::base_value(v) {
                return repr(it, &base);
            }
            if inst.class().exception_base().is_some() {
                let args = super::class::exception_args(v);
                let inner = if args.len() == 1 {
                    repr(it, &args[0])?
                } else {
                    join_reprs(it, &args)?
                };
                format!("{}({inner})", inst.class().name)
            } else {
                super::class::default_repr(v)
            }
        }
        Value::Method(m) => {
            let func = match &m.func {
                Value::Func(f) => match super::class::owner_of(f) {
                    Some(c) => format!("{}.{}", c.qualname, f.name),
                    None => f.name.to_string(),
                },
                Value::Builtin(b) => b.name.to_string(),
                other => other.type_name(),
            };
            format!("<bound method {func} of {}>", repr(it, &m.receiver)?)
        }
    })
}

/// The string a user's `__repr__` / `__str__` returned; anything else is CPython's TypeError.
fn special_text(r: Value, method: &str) -> Result<String, Exc> {
    match &r {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(Exc::type_error(format!(
            "{method} returned non-string (type {})",
            other.type_name()
        ))),
    }
}

fn join_reprs(it: &mut dyn Interpreter, items: &[Value]) -> Result<String, Exc> {
    let mut parts = alloc::vec(items.len())?;
    for x in items {
        // The repr of a big list is one statement: an interrupt must reach it.
        it.check_interrupt()?;
        parts.push(repr(it, x)?);
    }
    alloc::join(&parts, ", ")
}

/// PyTorch's repr (and str) of a parameter tensor: `Parameter containing:` over the tensor,
/// which says `requires_grad=True`. None for any other array.
fn torch_parameter_repr(it: &dyn Interpreter, a: &ArrayValue) -> Option<String> {
    if a.flavor != Flavor::Torch || it.state().nn.param_of_array(&a.array).is_none() {
        return None;
    }
    let text = array_repr_with(a, Some("requires_grad=True"));
    Some(format!("Parameter containing:\n{text}"))
}

/// `str(v)`.
pub fn to_str(it: &mut dyn Interpreter, v: &Value) -> Result<String, Exc> {
    check_failed(v)?;
    Ok(match v {
        Value::Str(s) => s.to_string(),
        Value::Array(a) if a.flavor == Flavor::Torch => torch_parameter_repr(it, a)
            .unwrap_or_else(|| array_repr_with(a, grad_suffix(it, a).as_deref())),
        Value::Array(a) => array_str(a),
        Value::Exception(e) => exception_str(e),
        // `print(x.dtype)` of a NumPy-style dtype is its name.
        Value::DType(d, Flavor::Np | Flavor::Numpy) => d.name().to_string(),
        Value::Object(o) => match &o.get_attr(o, "__str__") {
            Some(Value::Str(s)) => s.to_string(),
            _ => o.repr(),
        },
        Value::Instance(inst) => {
            if let Some(r) = super::class::call_special(it, v, "__str__", Vec::new())? {
                return special_text(r, "__str__");
            }
            if !inst.class().defines("__repr__") {
                if let Some(base) = super::class::base_value(v) {
                    return to_str(it, &base);
                }
            }
            if inst.class().exception_base().is_some() && !inst.class().defines("__repr__") {
                return super::class::exception_str(it, v);
            }
            repr(it, v)?
        }
        other => repr(it, other)?,
    })
}

/// Python's repr of a string.
pub fn str_repr(s: &str) -> String {
    display::pyfmt::py_str_repr(s)
}

/// The text/plain and text/html of a displayed value.
pub fn display_data(it: &mut dyn Interpreter, v: &Value) -> Result<DisplayData, Exc> {
    let plain = pretty(it, v)?;
    let html = match v {
        Value::Array(a) => Some(array_html(a)),
        Value::Object(o) => o.get_attr(o, "_repr_html_").and_then(|f| match &f {
            Value::Str(s) => Some(s.to_string()),
            _ => None,
        }),
        _ => None,
    };
    // A figure carries its picture, as matplotlib-inline's formatter adds one.
    let image = match v {
        Value::Object(o) => o.get_attr(o, "_repr_image_").and_then(|f| match &f {
            Value::Tuple(t) => match t.as_slice() {
                [Value::Str(m), Value::Str(d)] => Some((m.to_string(), d.to_string())),
                _ => None,
            },
            _ => None,
        }),
        _ => None,
    };
    Ok(DisplayData { plain, html, image })
}

/// IPython's pretty form (`super::pretty`).
pub fn pretty(it: &mut dyn Interpreter, v: &Value) -> Result<String, Exc> {
    super::pretty::pretty(it, v)
}

/// `open + body + trailing + close`, growing `body` in place (the only copy of a large repr).
fn enclose(open: &str, mut body: String, trailing: &str, close: &str) -> Result<String, Exc> {
    body.try_reserve(open.len() + trailing.len() + close.len())
        .map_err(|_| alloc::memory_error())?;
    body.insert_str(0, open);
    body.push_str(trailing);
    body.push_str(close);
    Ok(body)
}

/// An owned argument of the format mini-language or `%`; `as_fmt` lends it
/// to the display formatter.
enum FmtArg {
    Int(i64),
    BigInt(std::rc::Rc<num_bigint::BigInt>),
    Float(f64),
    Bool(bool),
    Str(String),
    Obj {
        type_name: String,
        str: String,
        repr: String,
    },
}

impl FmtArg {
    fn as_fmt(&self) -> FmtValue<'_> {
        match self {
            FmtArg::Int(i) => FmtValue::Int(*i),
            FmtArg::BigInt(n) => FmtValue::BigInt(n),
            FmtArg::Float(f) => FmtValue::Float(*f),
            FmtArg::Bool(b) => FmtValue::Bool(*b),
            FmtArg::Str(s) => FmtValue::Str(s),
            FmtArg::Obj {
                type_name,
                str,
                repr,
            } => FmtValue::Obj {
                type_name: type_name.clone(),
                str: str.clone(),
                repr: repr.clone(),
            },
        }
    }
}

fn fmt_arg(it: &mut dyn Interpreter, v: &Value) -> Result<FmtArg, Exc> {
    Ok(match v {
        Value::Bool(b) => FmtArg::Bool(*b),
        Value::Int(i) => FmtArg::Int(*i),
        Value::BigInt(n) => FmtArg::BigInt(n.clone()),
        Value::Float(f) => FmtArg::Float(*f),
        Value::Str(s) => FmtArg::Str(s.to_string()),
        Value::Object(o) if o.number().is_some() => return fmt_arg(it, &super::ops::as_number(v)),
        Value::Array(a) if a.array.size() == 1 => match a.array.to_scalar("format")? {
            Scalar::Bool(b) => FmtArg::Bool(b),
            Scalar::Int(i) => FmtArg::Int(i),
            Scalar::Float(f) => FmtArg::Float(f),
        },
        other => FmtArg::Obj {
            type_name: other.type_name(),
            str: to_str(it, other)?,
            repr: repr(it, other)?,
        },
    })
}

fn format_error(e: display::pyfmt::FormatError) -> Exc {
    let kind = ExcKind::from_name(e.ename).unwrap_or(ExcKind::ValueError);
    Exc::new(kind, e.message)
}

/// `format(v, spec)` / f-string `{v:spec}`.
pub fn format_value(it: &mut dyn Interpreter, v: &Value, spec: &str) -> Result<String, Exc> {
    // A class's own `__format__` gets every spec, the empty one included.
    if let Value::Instance(_) = v {
        if let Some(r) = super::class::call_special(it, v, "__format__", vec![Value::str(spec)])? {
            return match &r {
                Value::Str(s) => Ok(s.to_string()),
                other => Err(Exc::type_error(format!(
                    "__format__ must return a str, not {}",
                    other.type_name()
                ))),
            };
        }
    }
    if spec.is_empty() {
        // PyTorch's Tensor.__format__: a 0-d tensor formats as its item (f"{loss}" is "2.3...").
        if let Value::Array(a) = v {
            if a.flavor == super::value::Flavor::Torch && a.array.ndim() == 0 {
                let item = match a.array.to_scalar("format")? {
                    Scalar::Bool(b) => Value::Bool(b),
                    Scalar::Int(i) => Value::Int(i),
                    Scalar::Float(f) => Value::Float(f),
                };
                return to_str(it, &item);
            }
        }
        // NumPy's scalars format as the Python number (`f"{np.float32(0.1)}"` shows the
        // float64 digits, where `str()` shows the float32 ones).
        return to_str(it, &super::ops::as_number(v));
    }
    let arg = fmt_arg(it, v)?;
    display::pyfmt::format_spec(arg.as_fmt(), spec).map_err(format_error)
}

/// `fmt % args`.
pub fn percent(it: &mut dyn Interpreter, fmt: &str, args: &Value) -> Result<Value, Exc> {
    let (fmt, items): (std::borrow::Cow<str>, Vec<Value>) = match args {
        Value::Dict(d) if fmt.contains("%(") => {
            let (plain, values) = take_mapping_keys(it, fmt, &d.borrow())?;
            (plain.into(), values)
        }
        // A mapping is one argument to `%s`, and a format without specs ignores it.
        Value::Dict(_) if !fmt.contains('%') => return Ok(Value::str(fmt)),
        Value::Tuple(t) => (fmt.into(), t.as_ref().clone()),
        other => (fmt.into(), vec![other.clone()]),
    };
    let fmt = fmt.as_ref();
    let mut owned = Vec::with_capacity(items.len());
    for x in &items {
        owned.push(fmt_arg(it, x)?);
    }
    let fargs: Vec<FmtValue> = owned.iter().map(FmtArg::as_fmt).collect();
    display::pyfmt::percent_format(fmt, &fargs)
        .map(|s| Value::str(&s))
        .map_err(format_error)
}

/// `fmt % mapping`: each `%(key)...` spec becomes a plain spec, and the mapping's value for
/// `key` its argument, in order (CPython's `'%(epoch)d: %(loss).3f' % d`).
fn take_mapping_keys(
    it: &mut dyn Interpreter,
    fmt: &str,
    map: &super::value::Dict,
) -> Result<(String, Vec<Value>), Exc> {
    let mut plain = String::with_capacity(fmt.len());
    let mut values = Vec::new();
    let mut rest = fmt;
    while let Some(i) = rest.find('%') {
        plain.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        if let Some(after) = rest.strip_prefix('%') {
            plain.push('%');
            rest = after;
            continue;
        }
        // A spec without a key has no argument left: the plain format says so.
        let Some(after) = rest.strip_prefix('(') else {
            continue;
        };
        // The key runs to the matching parenthesis (CPython allows nested ones).
        let mut depth = 1;
        let end = after.char_indices().find_map(|(j, c)| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(j)
        });
        let Some(j) = end else {
            return Err(Exc::new(ExcKind::ValueError, "incomplete format key"));
        };
        let key = Value::str(&after[..j]);
        let found = key
            .hash_key()?
            .and_then(|hk| map.get(&hk).cloned())
            .ok_or_else(|| Exc::key_error(it, &key))?;
        values.push(found);
        rest = &after[j + 1..];
    }
    plain.push_str(rest);
    Ok((plain, values))
}

/// `str(e)`: the message; a SyntaxError with its location adds `(file, line n)`, as CPython.
fn exception_str(e: &super::value::ExcValue) -> String {
    if e.kind.is_subclass_of(super::error::ExcKind::SyntaxError) {
        if let Some(args) = &e.args {
            if let [Value::Str(msg), Value::Tuple(place)] = args.as_slice() {
                if let [Value::Str(file), Value::Int(line), ..] = place.as_slice() {
                    return format!("{msg} ({file}, line {line})");
                }
            }
        }
    }
    e.message.clone()
}
