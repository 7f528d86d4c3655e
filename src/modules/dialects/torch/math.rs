//! PyTorch's `linspace`, `meshgrid`, `sinh`/`cosh`, `allclose` and `equal`, as functions of
//! `torch` and (the last four) tensor methods, with PyTorch's signatures, defaults and errors.
//! The comparisons and the grid reuse the NumPy library's (`array::numpy_fns`).

use crate::modules::array::numpy_fns;
use crate::nn::autograd::torch_scalar_type;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, ArrayValue, Flavor, MethodFn, Module, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{BinaryOp, DType, Device, HostData, Operand, Scalar, UnaryOp};

/// Adds the functions to `torch`.
pub fn install(m: &Module) {
    let fns: [(&'static str, &'static str, crate::object::value::BuiltinFn); 8] = [
        ("linspace", "linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False): steps evenly spaced values from start to end, both included.", linspace),
        ("logspace", "logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False): base to the powers of linspace(start, end, steps).", logspace),
        ("meshgrid", "meshgrid(*tensors, indexing=None): coordinate grids from 1-D tensors; indexing='ij' (the default, with a warning) or 'xy'.", meshgrid),
        ("sinh", "sinh(input): hyperbolic sine, elementwise.", |it, a| as_function(it, a, "sinh")),
        ("cosh", "cosh(input): hyperbolic cosine, elementwise.", |it, a| as_function(it, a, "cosh")),
        ("allclose", "allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False): whether |input - other| <= atol + rtol * |other| everywhere.", |it, a| as_function(it, a, "allclose")),
        ("equal", "equal(input, other): whether both have the same size and elements.", |it, a| as_function(it, a, "equal")),
        ("bmm", "bmm(input, mat2): the matrix products of two batches of matrices, (b, n, m) @ (b, m, p) -> (b, n, p).", |it, a| as_function(it, a, "bmm")),
    ];
    for (name, doc, f) in fns {
        m.set(name, builtin(name, doc, f));
    }
    m.set("result_type", builtin("result_type", "result_type(tensor, other): the dtype an arithmetic operation on the two (tensors or numbers) gives.", result_type));
}

/// `torch.name(input, ...)`: the tensor method on `input`.
fn as_function(it: &mut dyn Interpreter, mut a: Args, name: &'static str) -> Result<Value, Exc> {
    let x = match a.pos.is_empty() {
        false => a.pos.remove(0),
        true => match a.kw.iter().position(|(k, _)| &**k == "input") {
            Some(i) => a.kw.remove(i).1,
            None => {
                return Err(Exc::type_error(format!(
                    "{name}() missing 1 required positional arguments: \"input\""
                )))
            }
        },
    };
    let Some((_, _, f)) = tensor_method(name) else {
        return Err(Exc::type_error(format!("torch has no function {name}")));
    };
    if x.as_array().is_none() {
        return Err(Exc::type_error(format!(
            "{name}(): argument 'input' (position 1) must be Tensor, not {}",
            x.type_name()
        )));
    }
    f(it, &x, a)
}

/// `x.name`'s documentation and code, for the names in [`METHODS`].
pub fn tensor_method(name: &str) -> Option<(&'static str, &'static str, MethodFn)> {
    let (mname, doc, f): (&'static str, &'static str, MethodFn) = match name {
        "sinh" => ("sinh", "x.sinh(): hyperbolic sine, elementwise.", |it, r, a| {
            a.finish(0)?;
            hyperbolic(it, r, false)
        }),
        "cosh" => ("cosh", "x.cosh(): hyperbolic cosine, elementwise.", |it, r, a| {
            a.finish(0)?;
            hyperbolic(it, r, true)
        }),
        "allclose" => ("allclose", "x.allclose(other, rtol=1e-05, atol=1e-08, equal_nan=False): whether x and other are close everywhere.", allclose),
        "equal" => ("equal", "x.equal(other): whether both have the same size and elements.", equal),
        "bmm" => ("bmm", "x.bmm(mat2): the matrix products of two batches of matrices.", bmm),
        _ => return None,
    };
    Some((mname, doc, f))
}

/// A bound tensor method of this file, or None.
pub fn tensor_attr(v: &Value, name: &str) -> Option<Value> {
    let (mname, doc, f) = tensor_method(name)?;
    Some(method(v, mname, doc, f))
}

/// The items of a list or tuple.
fn items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::List(l) => Some(l.borrow().clone()),
        Value::Tuple(t) => Some(t.to_vec()),
        _ => None,
    }
}

fn tensor(v: &Value) -> Result<&ArrayValue, Exc> {
    v.as_array()
        .ok_or_else(|| Exc::type_error(format!("expected a Tensor, got {}", v.type_name())))
}

/// `sinh`/`cosh`. While autograd records the input, the value is built on the tape from
/// `exp` (so gradients flow, named `SinhBackward0`/`CoshBackward0`); otherwise it is computed
/// in double precision and rounded once, which keeps small arguments of `sinh` exact (the
/// difference of exponentials would cancel).
fn hyperbolic(it: &mut dyn Interpreter, r: &Value, cosh: bool) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let st = it.state_mut();
    if st.nn.tape.would_record(std::slice::from_ref(&x)) {
        let tape = &mut st.nn.tape;
        let e = tape.unary(&x, UnaryOp::Exp)?;
        let neg = tape.unary(&x, UnaryOp::Neg)?;
        let en = tape.unary(&neg, UnaryOp::Exp)?;
        let op = if cosh { BinaryOp::Add } else { BinaryOp::Sub };
        let s = tape.binary(op, Operand::Array(&e), Operand::Array(&en))?;
        let out = tape.binary(
            BinaryOp::Mul,
            Operand::Array(&s),
            Operand::Scalar(Scalar::Float(0.5)),
        )?;
        tape.rename(
            &out,
            if cosh {
                "CoshBackward0"
            } else {
                "SinhBackward0"
            },
        );
        return Ok(wrap(out, Flavor::Torch));
    }
    let f = if cosh { f64::cosh } else { f64::sinh };
    Ok(wrap(numpy_fns::map_f64(it, &x, f)?, Flavor::Torch))
}

/// `x.allclose(other, rtol=1e-05, atol=1e-08, equal_nan=False)`: PyTorch refuses mixed dtypes
/// and shapes that do not broadcast, then compares as NumPy's `allclose`.
fn allclose(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.clone();
    let other = a.required(0, "other")?;
    let rtol = a.take(1, "rtol")?;
    let atol = a.take(2, "atol")?;
    let equal_nan = a.take(3, "equal_nan")?;
    a.finish(4)?;
    let Some(y) = other.as_array().cloned() else {
        return Err(Exc::type_error(format!(
            "allclose(): argument 'other' (position 2) must be Tensor, not {}",
            other.type_name()
        )));
    };
    if x.array.dtype() != y.array.dtype() {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "{} did not match {}",
                torch_scalar_type(x.array.dtype()),
                torch_scalar_type(y.array.dtype())
            ),
        ));
    }
    check_broadcast(x.array.shape(), y.array.shape())?;
    let mut args = vec![r.clone(), other];
    for (v, default) in [(rtol, 1e-5), (atol, 1e-8)] {
        let f = match v {
            None => default,
            Some(v) => as_f64(&v).ok_or_else(|| {
                Exc::type_error(format!(
                    "allclose(): argument must be float, not {}",
                    v.type_name()
                ))
            })?,
        };
        args.push(Value::Float(f));
    }
    args.push(equal_nan.unwrap_or(Value::Bool(false)));
    let (close, _) = numpy_fns::close_values(it, Args::positional(args))?;
    Ok(Value::Bool(close.iter().all(|b| *b)))
}

/// `x.equal(other)`: same size and the same elements (dtypes may differ).
fn equal(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let other = a.required(0, "other")?;
    a.finish(1)?;
    if other.as_array().is_none() {
        return Err(Exc::type_error(format!(
            "equal(): argument 'other' (position 2) must be Tensor, not {}",
            other.type_name()
        )));
    }
    numpy_fns::array_equal(it, Args::positional(vec![r.clone(), other]))
}

/// `x.bmm(mat2)`: PyTorch's checks (both 3-D, the batch and inner sizes agree), then the
/// batched product of `@`.
fn bmm(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let other = a.required(0, "mat2")?;
    a.finish(1)?;
    let x = tensor(r)?;
    let Some(y) = other.as_array() else {
        return Err(Exc::type_error(format!(
            "bmm(): argument 'mat2' (position 2) must be Tensor, not {}",
            other.type_name()
        )));
    };
    for (t, name) in [(x, "batch1"), (y, "batch2")] {
        if t.array.ndim() != 3 {
            return Err(Exc::new(
                ExcKind::RuntimeError,
                format!("{name} must be a 3D tensor"),
            ));
        }
    }
    let (xs, ys) = (x.array.shape(), y.array.shape());
    if ys[0] != xs[0] || ys[1] != xs[2] {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
                xs[0], xs[2], ys[0], ys[1]
            ),
        ));
    }
    crate::object::ops::binary(it, crate::lang::ast::BinOp::MatMul, r, &other)
}

/// PyTorch's error for shapes that do not broadcast, naming the first dimension (from the
/// right) where they differ.
fn check_broadcast(a: &[usize], b: &[usize]) -> Result<(), Exc> {
    let n = a.len().max(b.len());
    for i in 0..n {
        let da = a.len().checked_sub(n - i).map(|j| a[j]);
        let db = b.len().checked_sub(n - i).map(|j| b[j]);
        if let (Some(p), Some(q)) = (da, db) {
            if p != q && p != 1 && q != 1 {
                return Err(Exc::new(
                    ExcKind::RuntimeError,
                    format!("The size of tensor a ({p}) must match the size of tensor b ({q}) at non-singleton dimension {i}"),
                ));
            }
        }
    }
    Ok(())
}

/// `torch.linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False)`:
/// PyTorch's symmetric formula (the first half counted from `start`, the second from `end`),
/// float32 unless `dtype` says otherwise.
fn linspace(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    spaced(it, a, false)
}

/// `torch.logspace(start, end, steps, base=10.0, *, dtype=None, device=None,
/// requires_grad=False)`: base to the powers linspace gives, as PyTorch's kernel computes them
/// (in double precision from the dtype's start and end, then rounded to the dtype).
pub fn logspace(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    spaced(it, a, true)
}

/// linspace's values, or base to their powers when `log`.
fn spaced(it: &mut dyn Interpreter, mut a: Args, log: bool) -> Result<Value, Exc> {
    let fname = a.fname;
    let start = a.take(0, "start")?;
    let end = a.take(1, "end")?;
    let steps = a.take(2, "steps")?;
    let base = if log { a.take(3, "base")? } else { None };
    let dtype = a.take_kw("dtype");
    let device = a.take_kw("device");
    let requires_grad = a.take_kw("requires_grad");
    a.take_kw("out");
    a.take_kw("layout");
    a.take_kw("pin_memory");
    a.finish(if log { 4 } else { 3 })?;
    let (Some(start), Some(end), Some(steps)) = (start.clone(), end.clone(), steps) else {
        // PyTorch's overload report (its steps has no default).
        let got: Vec<String> = [start, end]
            .into_iter()
            .flatten()
            .map(|v| match v {
                Value::Array(_) => "Tensor".to_string(),
                other => other.type_name(),
            })
            .collect();
        let base = if log { "float base = 10.0, " } else { "" };
        let rest = format!("int steps, {base}*, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, bool pin_memory = False, bool requires_grad = False)");
        return Err(Exc::type_error(format!(
            "{fname}() received an invalid combination of arguments - got ({}), but expected one of:\n * (Tensor start, Tensor end, {rest}\n * (Number start, Tensor end, {rest}\n * (Tensor start, Number end, {rest}\n * (Number start, Number end, {rest}\n",
            got.join(", ")
        )));
    };
    let number = |v: &Value, what: &str| -> Result<f64, Exc> {
        if let Some(x) = v.as_array() {
            if x.array.size() == 1 {
                if let Some(f) = as_f64(&crate::object::ops::numpy_scalar(&x.array)?) {
                    return Ok(f);
                }
            }
        }
        as_f64(v).ok_or_else(|| {
            Exc::type_error(format!(
                "{fname}(): argument '{what}' must be Number, not {}",
                v.type_name()
            ))
        })
    };
    let (s, e) = (number(&start, "start")?, number(&end, "end")?);
    let n = match as_i64(&steps) {
        Some(n) if n >= 0 => n as usize,
        Some(_) => {
            return Err(Exc::new(
                ExcKind::RuntimeError,
                "number of steps must be non-negative",
            ))
        }
        None => {
            return Err(Exc::type_error(format!(
                "{fname}(): argument 'steps' (position 3) must be int, not {}",
                steps.type_name()
            )))
        }
    };
    let dtype = match &dtype {
        None | Some(Value::None) => DType::Float32,
        Some(Value::DType(d, _)) => *d,
        Some(v) => {
            return Err(Exc::type_error(format!(
                "{fname}(): argument 'dtype' must be torch.dtype, not {}",
                v.type_name()
            )))
        }
    };
    let values: Vec<f64> = if log {
        let base = match &base {
            None => 10.0,
            Some(v) => number(v, "base")?,
        };
        // PyTorch: the dtype's start, end and base, the exponent in double precision.
        let (s, e, base) = match dtype {
            DType::Float32 | DType::Float16 => (
                f64::from(s as f32),
                f64::from(e as f32),
                f64::from(base as f32),
            ),
            d if d.is_float() => (s, e, base),
            _ => (s.trunc(), e.trunc(), base.trunc()),
        };
        let step = if n > 1 { (e - s) / (n - 1) as f64 } else { 0.0 };
        // One step is `start`; otherwise the first half counts from start, the rest from end.
        let half = if n == 1 { 1 } else { n / 2 };
        (0..n)
            .map(|i| {
                base.powf(if i < half {
                    s + step * i as f64
                } else {
                    e - step * (n - 1 - i) as f64
                })
            })
            .collect()
    } else if dtype == DType::Float32 {
        // Computed in float32, as PyTorch's kernel does for a float32 result.
        let (s32, e32) = (s as f32, e as f32);
        let step = if n > 1 {
            (e32 - s32) / (n - 1) as f32
        } else {
            0.0
        };
        // One step is `start`; otherwise the first half counts from start, the rest from end.
        let half = if n == 1 { 1 } else { n / 2 };
        (0..n)
            .map(|i| {
                f64::from(if i < half {
                    s32 + step * i as f32
                } else {
                    e32 - step * (n - 1 - i) as f32
                })
            })
            .collect()
    } else {
        let step = if n > 1 { (e - s) / (n - 1) as f64 } else { 0.0 };
        let half = if n == 1 { 1 } else { n / 2 };
        (0..n)
            .map(|i| {
                if i < half {
                    s + step * i as f64
                } else {
                    e - step * (n - 1 - i) as f64
                }
            })
            .collect()
    };
    let device = match &device {
        None | Some(Value::None) => Device::cpu(0),
        Some(v) => super::parse_torch_device(v, None)?.device(),
    };
    let st = it.state_mut();
    st.rt.check_device(device)?;
    let host = st
        .rt
        .from_host(HostData::F64(values), &[n], Device::cpu(0))?
        .astype(dtype)?;
    let out = host.copy_to(&st.rt, device)?;
    if let Some(v) = requires_grad {
        if crate::object::class::truthy(it, &v)? {
            it.state_mut().nn.tape.set_requires_grad(&out, true);
        }
    }
    Ok(wrap(out, Flavor::Torch))
}

/// `torch.meshgrid(*tensors, indexing=None)`: the tensors may also come as one list or tuple;
/// without `indexing`, 'ij' with PyTorch's warning. A tuple of tensors on the inputs' device.
fn meshgrid(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let indexing = a.take_kw("indexing");
    let mut tensors = std::mem::take(&mut a.pos);
    a.finish(0)?;
    if let [one] = tensors.as_slice() {
        if let Some(inner) = items(one) {
            tensors = inner;
        }
    }
    let indexing = match &indexing {
        None | Some(Value::None) => {
            crate::modules::python::stdlib::warnings::warn(
                it,
                "UserWarning",
                "torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
            )?;
            "ij".to_string()
        }
        Some(Value::Str(s)) if matches!(&**s, "ij" | "xy") => s.to_string(),
        Some(v) => {
            let text = match v {
                Value::Str(s) => s.to_string(),
                other => crate::object::format::repr(it, other)?,
            };
            return Err(Exc::new(
                ExcKind::RuntimeError,
                format!("torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {text}"),
            ));
        }
    };
    if tensors.is_empty() {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "torch.meshgrid: Expected at least one tensor",
        ));
    }
    let mut device = None;
    for t in &tensors {
        let x = t.as_array().ok_or_else(|| {
            Exc::type_error(format!(
                "meshgrid(): expected Tensor as element 0 in argument 0, but got {}",
                t.type_name()
            ))
        })?;
        if x.array.ndim() > 1 {
            return Err(Exc::new(
                ExcKind::RuntimeError,
                format!(
                    "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {}",
                    crate::object::format::repr(it, t)?
                ),
            ));
        }
        device.get_or_insert(x.array.device());
    }
    let mut args = Args::positional(tensors);
    args.kw.push(("indexing".into(), Value::str(&indexing)));
    let grids = numpy_fns::meshgrid(it, args)?;
    let device = device.unwrap_or(Device::cpu(0));
    let mut out = Vec::new();
    for g in items(&grids).unwrap_or_default() {
        let x = tensor(&g)?;
        let moved = x.array.copy_to(&it.state().rt, device)?;
        out.push(wrap(moved, Flavor::Torch));
    }
    Ok(Value::tuple(out))
}

/// `torch.result_type(tensor, other)`: PyTorch's promotion, the runtime's own (a number keeps a
/// tensor's category: `uint8` with 300 is uint8, with 2.5 the default float).
fn result_type(_it: &mut dyn crate::object::Interpreter, mut a: Args) -> Result<Value, Exc> {
    use crate::runtime::{BinaryOp, Scalar};
    let x = a.required(0, "tensor")?;
    let y = a.required(1, "other")?;
    a.finish(2)?;
    let side = |v: &Value| match v {
        Value::Array(t) => Ok(Ok(t.array.dtype())),
        Value::Bool(b) => Ok(Err(Scalar::Bool(*b))),
        Value::Int(i) => Ok(Err(Scalar::Int(*i))),
        Value::Float(f) => Ok(Err(Scalar::Float(*f))),
        other => Err(Exc::type_error(format!(
            "result_type(): argument 'other' must be Tensor or Number, not {}",
            other.type_name()
        ))),
    };
    let d = match (side(&x)?, side(&y)?) {
        (Err(l), Err(r)) => {
            let kind = |s: Scalar| match s {
                Scalar::Bool(_) => crate::runtime::DType::Bool,
                Scalar::Int(_) => crate::runtime::DType::Int64,
                Scalar::Float(_) => crate::runtime::DType::Float32,
            };
            kind(l).promote(kind(r))
        }
        (l, r) => crate::runtime::binary_result_dtype(BinaryOp::Add, l, r)
            .ok_or_else(|| Exc::type_error("result_type(): no common dtype"))?,
    };
    Ok(Value::DType(d, crate::object::value::Flavor::Torch))
}
