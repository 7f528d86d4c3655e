//! The array functions and methods real programs reach for beyond the core of `arrays.rs`:
//! PyTorch's shape queries (`size()`, `numel()`, `dim()`), `clone`/`view`/`new_*`, the
//! arithmetic methods and ufunc-style functions (`torch.add`, `np.add(..., out=)`), `matmul`/
//! `mm`/`mv`, `cumsum`, the `*_like` family with `dtype=`/`device=`, and `linalg.norm`.
//! Everything records on the autograd tape where the core ops do.

use std::rc::Rc;

use crate::lang::ast::BinOp;
use crate::runtime::{Array, DType, IndexItem, UnaryOp};

use crate::modules::array::arrays::{self, dtype_arg, NP, NUMPY, TORCH};
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{self, as_f64, as_i64, wrap};
use crate::object::value::{Args, ArrayValue, BuiltinFn, Flavor, MethodFn, Module, Value};
use crate::object::{builtin, method, Interpreter};

/// The method names this file adds (for completion and hints).
pub const ATTRS: &[&str] = &[
    "numel",
    "nelement",
    "dim",
    "ndimension",
    "clone",
    "contiguous",
    "view",
    "view_as",
    "reshape_as",
    "matmul",
    "mm",
    "mv",
    "cumsum",
    "all",
    "any",
    "new_ones",
    "new_zeros",
    "new_full",
    "new_empty",
    "new_tensor",
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "neg",
    "negative",
    "sin",
    "cos",
    "float",
    "double",
    "long",
    "int",
    "bool",
    "type",
    "element_size",
    "unsqueeze",
    "squeeze",
    "permute",
];

fn recv(r: &Value) -> Result<&ArrayValue, Exc> {
    r.as_array()
        .ok_or_else(|| Exc::type_error(format!("expected an array, got {}", r.type_name())))
}

/// An axis, counted from the end when negative, checked against `ndim` in the dialect's words.
pub(crate) fn norm_axis(axis: i64, ndim: usize, flavor: Flavor) -> Result<usize, Exc> {
    let n = ndim as i64;
    let pos = if axis < 0 { axis + n } else { axis };
    if pos < 0 || pos >= n.max(1) {
        return Err(match flavor {
            Flavor::Torch => Exc::new(
                ExcKind::IndexError,
                format!(
                    "Dimension out of range (expected to be in range of [{}, {}], but got {axis})",
                    -n.max(1),
                    n.max(1) - 1
                ),
            ),
            _ => Exc::new(
                ExcKind::IndexError,
                format!("axis {axis} is out of bounds for array of dimension {ndim}"),
            ),
        });
    }
    Ok(pos as usize)
}

/// `x.size()` -> `torch.Size`, `x.size(d)` -> the length of axis d.
fn size_method(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let d = a.take(0, "dim")?;
    a.finish(1)?;
    let x = recv(r)?;
    let shape = x.array.shape().to_vec();
    match d {
        None | Some(Value::None) => match crate::modules::array::hooks::dialect(x.flavor) {
            Some(d) => (d.shape)(it, &shape),
            None => Ok(Value::tuple(
                shape.iter().map(|d| Value::Int(*d as i64)).collect(),
            )),
        },
        Some(v) => {
            let i = as_i64(&v).ok_or_else(|| {
                Exc::type_error(format!(
                    "size(): argument 'dim' must be int, not {}",
                    v.type_name()
                ))
            })?;
            let ax = norm_axis(i, shape.len(), x.flavor)?;
            Ok(Value::Int(shape.get(ax).copied().unwrap_or(1) as i64))
        }
    }
}

/// The methods for `name`, or None when this file has none.
pub fn get_attr(it: &mut dyn Interpreter, v: &Value, name: &str) -> Result<Option<Value>, Exc> {
    let x = recv(v)?;
    if name == "size" && x.flavor == Flavor::Torch {
        return Ok(Some(method(
            v,
            "size",
            "x.size(dim=None): the shape as torch.Size, or the length of one axis.",
            size_method,
        )));
    }
    let (doc, f): (&'static str, MethodFn) = match name {
        "numel" | "nelement" => ("x.numel(): the number of elements.", |_, r, a| {
            a.finish(0)?;
            Ok(Value::Int(recv(r)?.array.size() as i64))
        }),
        "dim" | "ndimension" => ("x.dim(): the number of axes.", |_, r, a| {
            a.finish(0)?;
            Ok(Value::Int(recv(r)?.array.ndim() as i64))
        }),
        "element_size" => ("x.element_size(): bytes per element.", |_, r, a| {
            a.finish(0)?;
            Ok(Value::Int(recv(r)?.array.dtype().size_bytes() as i64))
        }),
        "clone" => (
            "x.clone(): a copy in new memory on the same device (gradients flow back to x).",
            |it, r, mut a| {
                a.take_kw("memory_format");
                a.finish(0)?;
                clone(it, recv(r)?)
            },
        ),
        "t" if x.flavor == Flavor::Torch => ("x.t(): a 2-D tensor transposed (0-D and 1-D tensors as they are).", |it, r, a| {
            a.finish(0)?;
            let x = recv(r)?;
            if x.array.ndim() > 2 {
                return Err(Exc::new(crate::object::error::ExcKind::RuntimeError, format!(
                    "t() expects a tensor with <= 2 dimensions, but self is {}D",
                    x.array.ndim()
                )));
            }
            let tape = &mut it.state_mut().nn.tape;
            let out = tape.transpose(&x.array, None)?;
            tape.rename(&out, "TBackward0");
            Ok(wrap(out, x.flavor))
        }),
        "contiguous" => ("x.contiguous(): x, or a contiguous copy of x when it is a transposed view.", |it, r, mut a| {
            a.take_kw("memory_format");
            a.finish(0)?;
            let Some(x) = r.as_array().filter(|x| x.array.strided()) else {
                return Ok(r.clone());
            };
            let shape: Vec<isize> = x.array.shape().iter().map(|&n| n as isize).collect();
            let tape = &mut it.state_mut().nn.tape;
            let out = tape.reshape(&x.array, &shape)?;
            tape.rename(&out, "CloneBackward0");
            Ok(wrap(out, x.flavor))
        }),
        "view" => (
            "x.view(*shape): the same memory seen with a new shape (one -1 is inferred).",
            |it, r, mut a| {
                let s = shape_list(&mut a)?;
                a.finish(0)?;
                let x = recv(r)?;
                Ok(wrap(it.state_mut().nn.tape.reshape(&x.array, &s)?, x.flavor))
            },
        ),
        "view_as" | "reshape_as" => (
            "x.view_as(other): x with other's shape.",
            |it, r, mut a| {
                let o = a.required(0, "other")?;
                a.finish(1)?;
                let x = recv(r)?;
                let s: Vec<isize> = recv(&o)?.array.shape().iter().map(|d| *d as isize).collect();
                Ok(wrap(it.state_mut().nn.tape.reshape(&x.array, &s)?, x.flavor))
            },
        ),
        "matmul" | "mm" | "mv" | "__matmul__" => (
            "x.matmul(other): the matrix product (x @ other).",
            |it, r, mut a| {
                let o = a.required(0, "other")?;
                a.finish(1)?;
                ops::binary(it, BinOp::MatMul, r, &o)
            },
        ),
        "cumsum" => (
            "x.cumsum(axis=None): running sums along an axis (of the flattened array when None).",
            |it, r, mut a| {
                let axis = a.take(0, "axis")?.or_else(|| a.take_kw("dim"));
                let dtype = a.take_kw("dtype");
                a.finish(1)?;
                cumsum(it, recv(r)?, axis, dtype)
            },
        ),
        "all" => ("x.all(axis=None, keepdims=False): whether every element is nonzero (along an axis), as a bool array.", |it, r, a| all_any(it, r, a, true)),
        "any" => ("x.any(axis=None, keepdims=False): whether some element is nonzero (along an axis), as a bool array.", |it, r, a| all_any(it, r, a, false)),
        "new_ones" => ("x.new_ones(size, dtype=None, device=None): ones, by default of x's dtype and device.", |it, r, a| new_filled(it, r, a, Some(1.0))),
        "new_zeros" => ("x.new_zeros(size, dtype=None, device=None): zeros, by default of x's dtype and device.", |it, r, a| new_filled(it, r, a, Some(0.0))),
        "new_empty" => ("x.new_empty(size, dtype=None, device=None): an array (zero-filled here), by default of x's dtype and device.", |it, r, a| new_filled(it, r, a, Some(0.0))),
        "new_full" => ("x.new_full(size, fill_value, dtype=None, device=None): filled with a value, by default of x's dtype and device.", |it, r, a| new_filled(it, r, a, None)),
        "new_tensor" => ("x.new_tensor(data, dtype=None, device=None): a tensor from data, by default of x's dtype and device.", |it, r, mut a| {
            let x = recv(r)?.clone();
            if a.kw.iter().all(|(k, _)| &**k != "dtype") {
                a.kw.push((Rc::from("dtype"), Value::DType(x.array.dtype(), x.flavor)));
            }
            if a.kw.iter().all(|(k, _)| &**k != "device") {
                a.kw.push((Rc::from("device"), Value::Device(x.array.device())));
            }
            a.fname = "new_tensor";
            arrays::array::<TORCH>(it, a).map(|v| reflavor(v, x.flavor))
        }),
        "add" => ("x.add(other, alpha=1): x + alpha * other.", |it, r, a| arith_method(it, r, a, BinOp::Add)),
        "sub" | "subtract" => ("x.sub(other, alpha=1): x - alpha * other.", |it, r, a| arith_method(it, r, a, BinOp::Sub)),
        "mul" | "multiply" => ("x.mul(other): x * other.", |it, r, a| arith_method(it, r, a, BinOp::Mul)),
        "div" | "divide" | "true_divide" => ("x.div(other): x / other.", |it, r, a| arith_method(it, r, a, BinOp::Div)),
        "pow" => ("x.pow(exponent): x ** exponent.", |it, r, a| arith_method(it, r, a, BinOp::Pow)),
        "neg" | "negative" => ("x.neg(): -x.", |it, r, a| { a.finish(0)?; arrays::unary_fn(it, r, UnaryOp::Neg) }),
        "sin" => ("x.sin()", |it, r, a| { a.finish(0)?; arrays::unary_fn(it, r, UnaryOp::Sin) }),
        "cos" => ("x.cos()", |it, r, a| { a.finish(0)?; arrays::unary_fn(it, r, UnaryOp::Cos) }),
        "float" => ("x.float(): x as float32.", |it, r, mut a| { a.take_kw("memory_format"); a.finish(0)?; cast(it, r, DType::Float32) }),
        "double" => ("x.double(): x as float64.", |it, r, mut a| { a.take_kw("memory_format"); a.finish(0)?; cast(it, r, DType::Float64) }),
        "long" => ("x.long(): x as int64.", |it, r, mut a| { a.take_kw("memory_format"); a.finish(0)?; cast(it, r, DType::Int64) }),
        "int" => ("x.int(): x as int32.", |it, r, mut a| { a.take_kw("memory_format"); a.finish(0)?; cast(it, r, DType::Int32) }),
        "bool" => ("x.bool(): x as bool.", |it, r, mut a| { a.take_kw("memory_format"); a.finish(0)?; cast(it, r, DType::Bool) }),
        "half" => ("x.half(): x as float16.", |it, r, mut a| { a.take_kw("memory_format"); a.finish(0)?; cast(it, r, DType::Float16) }),
        "bfloat16" => ("x.bfloat16(): x as bfloat16.", |it, r, mut a| { a.take_kw("memory_format"); a.finish(0)?; cast(it, r, DType::BFloat16) }),
        "byte" => ("x.byte(): x as uint8.", |it, r, mut a| { a.take_kw("memory_format"); a.finish(0)?; cast(it, r, DType::UInt8) }),
        "char" => ("x.char(): x as int8.", |it, r, mut a| { a.take_kw("memory_format"); a.finish(0)?; cast(it, r, DType::Int8) }),
        "short" => ("x.short(): x as int16.", |it, r, mut a| { a.take_kw("memory_format"); a.finish(0)?; cast(it, r, DType::Int16) }),
        "type" => ("x.type(dtype=None): the tensor type's name ('torch.FloatTensor'), or x converted to dtype.", |it, r, mut a| {
            let d = a.take(0, "dtype")?;
            a.finish(1)?;
            match d {
                None | Some(Value::None) => {
                    let x = recv(r)?;
                    Ok(Value::str(&super::conv_args::torch_type_name(&x.array)))
                }
                Some(d) => {
                    let dt = dtype_arg(&d)?.ok_or_else(|| Exc::type_error("type() needs a dtype"))?;
                    cast(it, r, dt)
                }
            }
        }),
        "unsqueeze" => ("x.unsqueeze(dim): x with an axis of length 1 inserted at dim.", |it, r, mut a| {
            let d = as_i64(&a.required(0, "dim")?).ok_or_else(|| Exc::type_error("unsqueeze(): argument 'dim' must be int"))?;
            a.finish(1)?;
            let x = recv(r)?;
            let ax = norm_axis(d, x.array.ndim() + 1, x.flavor)?;
            let mut s: Vec<isize> = x.array.shape().iter().map(|d| *d as isize).collect();
            s.insert(ax, 1);
            Ok(wrap(it.state_mut().nn.tape.reshape(&x.array, &s)?, x.flavor))
        }),
        "squeeze" => ("x.squeeze(dim=None): x without axes of length 1 (only dim when given).", |it, r, mut a| {
            let d = a.take(0, "dim")?.or_else(|| a.take_kw("axis"));
            a.finish(1)?;
            let x = recv(r)?;
            let shape = x.array.shape();
            let keep: Vec<isize> = match d {
                None | Some(Value::None) => shape.iter().filter(|d| **d != 1).map(|d| *d as isize).collect(),
                Some(v) => {
                    let i = as_i64(&v).ok_or_else(|| Exc::type_error("squeeze(): argument 'dim' must be int"))?;
                    let ax = norm_axis(i, shape.len(), x.flavor)?;
                    shape.iter().enumerate().filter(|(k, d)| *k != ax || **d != 1).map(|(_, d)| *d as isize).collect()
                }
            };
            Ok(wrap(it.state_mut().nn.tape.reshape(&x.array, &keep)?, x.flavor))
        }),
        "permute" => ("x.permute(*dims): the axes reordered.", |it, r, mut a| {
            let dims = shape_list(&mut a)?;
            a.finish(0)?;
            let x = recv(r)?;
            Ok(wrap(it.state_mut().nn.tape.transpose(&x.array, Some(&dims))?, x.flavor))
        }),
        _ => {
            if let Some(found) = super::selection::dialect_method(it, v, name)? {
                return Ok(Some(found));
            }
            if let Some(found) = crate::modules::array::numpy_fns::get_attr(it, v, name)? {
                return Ok(Some(found));
            }
            return crate::modules::array::math_more::get_attr(it, v, name);
        }
    };
    let name: &'static str = ATTRS
        .iter()
        .find(|n| **n == name)
        .copied()
        .unwrap_or("method");
    Ok(Some(method(v, name, doc, f)))
}

fn reflavor(v: Value, flavor: Flavor) -> Value {
    match &v {
        Value::Array(a) => wrap(a.array.clone(), flavor),
        _ => v,
    }
}

fn cast(it: &mut dyn Interpreter, r: &Value, dt: DType) -> Result<Value, Exc> {
    let x = recv(r)?;
    if x.array.dtype() == dt {
        return Ok(r.clone());
    }
    Ok(wrap(it.state_mut().nn.tape.astype(&x.array, dt)?, x.flavor))
}

fn clone(it: &mut dyn Interpreter, x: &ArrayValue) -> Result<Value, Exc> {
    let st = it.state_mut();
    let out = st.nn.tape.copy_to(&st.rt, &x.array, x.array.device())?;
    Ok(wrap(out, x.flavor))
}

/// `f(2, 3)`, `f((2, 3))`, `f([2, 3])` or `f(torch.Size([2, 3]))` as a list of ints.
pub(crate) fn shape_list(a: &mut Args) -> Result<Vec<isize>, Exc> {
    let pos = std::mem::take(&mut a.pos);
    let items: Vec<Value> = match pos.as_slice() {
        [one] => match &tuple_like(one) {
            Value::Tuple(t) => t.as_ref().clone(),
            Value::List(l) => l.borrow().clone(),
            other => vec![other.clone()],
        },
        many => many.to_vec(),
    };
    items
        .iter()
        .map(|v| {
            as_i64(v).map(|i| i as isize).ok_or_else(|| {
                Exc::type_error(format!(
                    "shape entries must be integers, not {}",
                    v.type_name()
                ))
            })
        })
        .collect()
}

/// A tuple subclass instance (`torch.Size`) as its tuple; anything else as it is.
pub fn tuple_like(v: &Value) -> Value {
    match crate::object::class::base_value(v) {
        Some(b @ Value::Tuple(_)) => b,
        _ => v.clone(),
    }
}

fn arith_method(it: &mut dyn Interpreter, r: &Value, mut a: Args, op: BinOp) -> Result<Value, Exc> {
    let other = a.required(0, "other")?;
    let alpha = a.take(1, "alpha")?;
    a.finish(2)?;
    let other = match alpha {
        Some(al) if matches!(op, BinOp::Add | BinOp::Sub) && !matches!(al, Value::None) => {
            ops::binary(it, BinOp::Mul, &other, &al)?
        }
        Some(_) => {
            return Err(Exc::type_error(format!(
                "{}() got an unexpected keyword argument 'alpha'",
                a.fname
            )))
        }
        None => other,
    };
    ops::binary(it, op, r, &other)
}

/// New arrays of x's dtype and device unless `dtype=`/`device=` say otherwise; `fill` None
/// reads the fill value after the size (`new_full`).
fn new_filled(
    it: &mut dyn Interpreter,
    r: &Value,
    mut a: Args,
    fill: Option<f64>,
) -> Result<Value, Exc> {
    let x = recv(r)?.clone();
    let size = a.required(0, "size")?;
    let value = match fill {
        Some(v) => v,
        None => {
            let v = a.required(1, "fill_value")?;
            as_f64(&v).ok_or_else(|| {
                Exc::type_error(format!(
                    "fill_value must be a number, not {}",
                    v.type_name()
                ))
            })?
        }
    };
    let dtype = match a.take_kw("dtype") {
        Some(d) => dtype_arg(&d)?,
        None => None,
    }
    .unwrap_or(x.array.dtype());
    let device = match a.take_kw("device") {
        Some(Value::None) | None => x.array.device(),
        Some(d) => arrays::device_arg(&d)?,
    };
    a.take_kw("requires_grad");
    a.finish(if fill.is_some() { 1 } else { 2 })?;
    let shape = arrays::shape_arg(&tuple_like(&size))?;
    let arr = it.state_mut().rt.full(&shape, value, dtype, device)?;
    Ok(wrap(arr, x.flavor))
}

/// Running sums along `axis` (over the flattened array when None), added in order as NumPy
/// and PyTorch add them; built from the tape's slices, adds and a stack, so gradients flow.
/// `x.all()` / `x.any()`: the minimum (maximum) of `x != 0`, a bool array.
fn all_any(it: &mut dyn Interpreter, r: &Value, a: Args, all: bool) -> Result<Value, Exc> {
    let x = recv(r)?.clone();
    let nonzero = crate::runtime::Array::binary(
        crate::runtime::BinaryOp::Ne,
        crate::runtime::Operand::Array(&x.array),
        crate::runtime::Operand::Scalar(crate::runtime::Scalar::Int(0)),
    )?
    .astype(crate::runtime::DType::Float32)?;
    let op = if all {
        crate::runtime::ReduceOp::Min
    } else {
        crate::runtime::ReduceOp::Max
    };
    let reduced = arrays::reduce(it, &crate::object::ops::wrap(nonzero, x.flavor), a, op)?;
    match reduced.as_array() {
        // NumPy gives a scalar for a 0-d result.
        Some(y) if x.flavor == crate::object::value::Flavor::Numpy && y.array.ndim() == 0 => {
            Ok(Value::Bool(y.array.to_scalar("all")?.as_f64() != 0.0))
        }
        Some(y) => Ok(crate::object::ops::wrap(
            y.array.astype(crate::runtime::DType::Bool)?,
            x.flavor,
        )),
        // NumPy's full reductions are scalars.
        None => Ok(Value::Bool(
            crate::object::ops::as_f64(&reduced).is_some_and(|v| v != 0.0),
        )),
    }
}

fn cumsum(
    it: &mut dyn Interpreter,
    x: &ArrayValue,
    axis: Option<Value>,
    dtype: Option<Value>,
) -> Result<Value, Exc> {
    let tape = &mut it.state_mut().nn.tape;
    let (src, ax) = match axis {
        None | Some(Value::None) => (tape.reshape(&x.array, &[-1])?, 0usize),
        Some(v) => {
            let i = as_i64(&v).ok_or_else(|| Exc::type_error("axis must be an integer"))?;
            (x.array.clone(), norm_axis(i, x.array.ndim(), x.flavor)?)
        }
    };
    let mut src = src;
    if let Some(d) = dtype.as_ref().map(dtype_arg).transpose()?.flatten() {
        src = tape.astype(&src, d)?;
    } else if src.dtype() == DType::Bool {
        // Sums of bools are int64.
        src = tape.astype(&src, DType::Int64)?;
    } else if let Some(wide) =
        super::arrays::accumulate_dtype(x.flavor, crate::runtime::ReduceOp::Sum, src.dtype())
    {
        // Running sums accumulate as sums do (NumPy's uint8 in uint64, PyTorch's in int64).
        src = tape.astype(&src, wide)?;
    }
    if src.ndim() == 0 {
        return Ok(wrap(tape.reshape(&src, &[1])?, x.flavor));
    }
    let n = src.shape()[ax];
    if n == 0 {
        return Ok(wrap(src, x.flavor));
    }
    let at = |k: usize| -> Vec<IndexItem> {
        let mut items: Vec<IndexItem> = (0..ax)
            .map(|_| IndexItem::Slice {
                start: None,
                stop: None,
                step: None,
            })
            .collect();
        items.push(IndexItem::Int(k as i64));
        items
    };
    let mut parts: Vec<Array> = Vec::with_capacity(n);
    let mut acc = tape.index(&src, &at(0))?;
    parts.push(acc.clone());
    for k in 1..n {
        let next = tape.index(&src, &at(k))?;
        acc = tape.binary(
            crate::runtime::BinaryOp::Add,
            crate::runtime::Operand::Array(&acc),
            crate::runtime::Operand::Array(&next),
        )?;
        parts.push(acc.clone());
    }
    Ok(wrap(tape.stack(&parts, ax as isize)?, x.flavor))
}

// ------------------------------------------------------- namespace functions

/// `f(x, y, out=None)` for an operator `op`, in every dialect (`torch.add`, `np.multiply`).
fn binary_fn(it: &mut dyn Interpreter, mut a: Args, op: BinOp) -> Result<Value, Exc> {
    let x = a.required(0, "x1")?;
    let y = a.required(1, "x2")?;
    let alpha = a.take_kw("alpha");
    let out = a.take_kw("out");
    a.finish(2)?;
    let y = match alpha {
        Some(al) if !matches!(al, Value::None) => ops::binary(it, BinOp::Mul, &y, &al)?,
        _ => y,
    };
    let result = ops::binary(it, op, &x, &y).map_err(|mut e| {
        // NumPy names the `out=` operand's shape too when broadcasting fails.
        if let Some(Value::Array(o)) = &out {
            if e.kind == ExcKind::ValueError
                && e.message.starts_with("operands could not be broadcast")
            {
                let dims: Vec<String> = o.array.shape().iter().map(|d| d.to_string()).collect();
                let text = if dims.len() == 1 {
                    format!("({},)", dims[0])
                } else {
                    format!("({})", dims.join(","))
                };
                e.message.push_str(&text);
                e.message.push(' ');
            }
        }
        e
    })?;
    write_out(it, result, out)
}

/// `out=`: the result copied into the given array, which is returned (NumPy and PyTorch).
fn write_out(it: &mut dyn Interpreter, result: Value, out: Option<Value>) -> Result<Value, Exc> {
    match out {
        None | Some(Value::None) => Ok(result),
        Some(dst @ Value::Array(_)) => {
            let d = recv(&dst)?;
            let r = recv(&result)?;
            if r.array.shape() != d.array.shape() {
                return Err(Exc::value_error(format!(
                    "non-broadcastable output operand with shape {} doesn't match the broadcast shape {}",
                    shape_text(d.array.shape()),
                    shape_text(r.array.shape())
                )));
            }
            let _ = it;
            let converted = if r.array.dtype() == d.array.dtype() {
                r.array.clone()
            } else {
                r.array.astype(d.array.dtype())?
            };
            converted.copy_into(&d.array)?;
            Ok(dst)
        }
        Some(other) => Err(Exc::type_error(format!(
            "out must be an array, not {}",
            other.type_name()
        ))),
    }
}

/// A shape as NumPy writes it in messages: `(3,)`, `(2,3)`.
pub(crate) fn shape_text(s: &[usize]) -> String {
    match s {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            s.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

fn unary_ns(it: &mut dyn Interpreter, mut a: Args, op: UnaryOp) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let out = a.take_kw("out");
    a.finish(1)?;
    let r = if op == UnaryOp::Neg {
        ops::unary(it, crate::lang::ast::UnaryOp::Neg, &x)?
    } else {
        arrays::unary_fn(it, &x, op)?
    };
    write_out(it, r, out)
}

/// `torch.numel(x)`, `torch.clone(x)`, `torch.cumsum(x, dim)`: the method with x first.
fn via(it: &mut dyn Interpreter, mut a: Args, name: &str) -> Result<Value, Exc> {
    if a.pos.is_empty() {
        if let Some(i) = a.take_kw("input").or_else(|| a.take_kw("a")) {
            a.pos.push(i);
        }
    }
    if a.pos.is_empty() {
        return Err(Exc::type_error(format!(
            "{}() missing the array argument",
            a.fname
        )));
    }
    let x = a.pos.remove(0);
    if !matches!(x, Value::Array(_)) {
        return Err(Exc::type_error(format!(
            "{}(): argument 'input' must be an array, not {}",
            a.fname,
            x.type_name()
        )));
    }
    let m = get_attr(it, &x, name)?
        .or(arrays::get_attr(it, &x, name)?)
        .ok_or_else(|| Exc::new(ExcKind::AttributeError, format!("no array method {name}")))?;
    it.call_value(&m, a)
}

/// `ones_like(x, dtype=None, device=None)` and its family; `F` decides the flavor.
fn like<const F: u8>(it: &mut dyn Interpreter, mut a: Args, what: Like) -> Result<Value, Exc> {
    let x = a.required(0, "input")?;
    let Value::Array(x) = &x else {
        return Err(Exc::type_error(format!(
            "{}(): argument 'input' must be an array, not {}",
            a.fname,
            x.type_name()
        )));
    };
    let fill = match what {
        Like::Full => {
            let v = a.required(1, "fill_value")?;
            Some(as_f64(&v).ok_or_else(|| {
                Exc::type_error(format!(
                    "fill_value must be a number, not {}",
                    v.type_name()
                ))
            })?)
        }
        _ => None,
    };
    let dtype = match a.take_kw("dtype") {
        Some(d) => dtype_arg(&d)?,
        None => None,
    }
    .unwrap_or(x.array.dtype());
    let device = match a.take_kw("device").or_else(|| a.take_kw("ctx")) {
        Some(Value::None) | None => x.array.device(),
        Some(d) => arrays::device_arg(&d)?,
    };
    a.take_kw("requires_grad");
    a.take_kw("memory_format");
    a.take_kw("layout");
    a.finish(if fill.is_some() { 2 } else { 1 })?;
    let shape = x.array.shape().to_vec();
    let rt = &it.state_mut().rt;
    let arr = match what {
        Like::Value(v) => rt.full(&shape, v, dtype, device)?,
        Like::Full => rt.full(&shape, fill.unwrap_or(0.0), dtype, device)?,
        Like::Rand | Like::Randn => {
            if !dtype.is_float() {
                return Err(Exc::new(
                    ExcKind::RuntimeError,
                    format!(
                        "\"{}\" not implemented for '{}'",
                        if matches!(what, Like::Rand) {
                            "check_uniform_bounds"
                        } else {
                            "normal_kernel_cpu"
                        },
                        crate::nn::autograd::torch_scalar_type(dtype)
                    ),
                ));
            }
            if matches!(what, Like::Rand) {
                rt.torch_uniform(0.0, 1.0, &shape, dtype, device)?
            } else {
                rt.torch_normal(0.0, 1.0, &shape, dtype, device)?
            }
        }
    };
    let flavor = if F == TORCH { Flavor::Torch } else { x.flavor };
    Ok(wrap(arr, flavor))
}

#[derive(Clone, Copy)]
enum Like {
    Value(f64),
    Full,
    Rand,
    Randn,
}

macro_rules! fns {
    ($($fname:ident => $body:expr),* $(,)?) => {
        $(fn $fname(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> { ($body)(it, a) })*
    };
}

fns! {
    f_add => |it, a| binary_fn(it, a, BinOp::Add),
    f_sub => |it, a| binary_fn(it, a, BinOp::Sub),
    f_mul => |it, a| binary_fn(it, a, BinOp::Mul),
    f_div => |it, a| binary_fn(it, a, BinOp::Div),
    f_pow => |it, a| binary_fn(it, a, BinOp::Pow),
    f_mod => |it, a| binary_fn(it, a, BinOp::Mod),
    f_floordiv => |it, a| binary_fn(it, a, BinOp::FloorDiv),
    f_matmul => |it, a| binary_fn(it, a, BinOp::MatMul),
    f_neg => |it, a| unary_ns(it, a, UnaryOp::Neg),
    f_sin => |it, a| unary_ns(it, a, UnaryOp::Sin),
    f_cos => |it, a| unary_ns(it, a, UnaryOp::Cos),
    f_numel => |it, a| via(it, a, "numel"),
    f_clone => |it, a| via(it, a, "clone"),
    f_cumsum => |it, a| via(it, a, "cumsum"),
    f_all => |it, a| via(it, a, "all"),
    f_any => |it, a| via(it, a, "any"),
    f_squeeze => |it, a| via(it, a, "squeeze"),
    f_flatten => |it, a| via(it, a, "flatten"),
    f_unsqueeze => |it, a| via(it, a, "unsqueeze"),
    f_permute => |it, a| via(it, a, "permute"),
}

pub fn full_like<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    like::<F>(it, a, Like::Full)
}
pub fn rand_like<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    like::<F>(it, a, Like::Rand)
}
pub fn randn_like<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    like::<F>(it, a, Like::Randn)
}
pub fn ones_like<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    like::<F>(it, a, Like::Value(1.0))
}
pub fn zeros_like<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    like::<F>(it, a, Like::Value(0.0))
}

/// `linalg.norm(x, ord=None, axis=None, keepdims=False)` (`dim=`/`keepdim=` for PyTorch).
pub(crate) fn linalg_norm(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let ord = a.take(1, "ord")?;
    let axis = a.take(2, "axis")?.or_else(|| a.take_kw("dim"));
    let keep = a.take(3, "keepdims")?.or_else(|| a.take_kw("keepdim"));
    a.take_kw("dtype");
    a.finish(4)?;
    let m = arrays::get_attr(it, &x, "norm")?
        .ok_or_else(|| Exc::type_error("norm() expects an array"))?;
    let mut args = Args::new("norm", Vec::new());
    for (k, v) in [("ord", ord), ("axis", axis), ("keepdims", keep)] {
        if let Some(v) = v {
            args.kw.push((Rc::from(k), v));
        }
    }
    it.call_value(&m, args)
}

/// `torch.randint(low=0, high, size, dtype=torch.int64, device=None)`.
fn randint(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let dtype = match a.take_kw("dtype") {
        Some(d) => dtype_arg(&d)?,
        None => None,
    }
    .unwrap_or(DType::Int64);
    let device = match a.take_kw("device") {
        Some(Value::None) | None => it.state().default_device,
        Some(d) => arrays::device_arg(&d)?,
    };
    a.take_kw("requires_grad");
    a.take_kw("generator");
    let size =
        match a.take_kw("size") {
            Some(s) => s,
            None if a.pos.len() >= 2 => a.pos.remove(a.pos.len() - 1),
            None => return Err(Exc::type_error(
                "randint() missing the size: randint(low=0, high, size), e.g. randint(10, (3,))",
            )),
        };
    let int = |v: &Value, what: &str| {
        as_i64(v).ok_or_else(|| {
            Exc::type_error(format!(
                "randint(): argument '{what}' must be int, not {}",
                v.type_name()
            ))
        })
    };
    let (low, high) = match a.pos.len() {
        1 => (0, int(&a.pos[0], "high")?),
        2 => (int(&a.pos[0], "low")?, int(&a.pos[1], "high")?),
        _ => match (a.take_kw("low"), a.take_kw("high")) {
            (l, Some(h)) => (
                l.map(|l| int(&l, "low")).transpose()?.unwrap_or(0),
                int(&h, "high")?,
            ),
            _ => return Err(Exc::type_error("randint() missing the upper bound 'high'")),
        },
    };
    a.pos.clear();
    a.finish(0)?;
    if low >= high {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!("random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"),
        ));
    }
    let shape = arrays::shape_arg(&tuple_like(&size))?;
    let arr = it
        .state_mut()
        .rt
        .torch_randint(low, high, &shape, dtype, device)
        .map_err(crate::object::error::torch_error)?;
    Ok(wrap(arr, Flavor::Torch))
}

/// `torch.normal(mean, std, size)` with number parameters.
pub(crate) fn torch_normal(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let mean = a.take(0, "mean")?.unwrap_or(Value::Float(0.0));
    let std = a.take(1, "std")?.unwrap_or(Value::Float(1.0));
    let size = a.take(2, "size")?;
    let dtype = match a.take_kw("dtype") {
        Some(d) => dtype_arg(&d)?,
        None => None,
    }
    .unwrap_or(DType::Float32);
    let device = match a.take_kw("device") {
        Some(Value::None) | None => it.state().default_device,
        Some(d) => arrays::device_arg(&d)?,
    };
    a.take_kw("requires_grad");
    a.take_kw("generator");
    a.finish(3)?;
    let (Some(m), Some(s)) = (as_f64(&mean), as_f64(&std)) else {
        return Err(Exc::type_error(
            "normal(): devarray takes numbers for mean and std (tensor-valued ones are not supported); draw torch.randn(size) * std + mean instead",
        ));
    };
    let Some(size) = size else {
        return Err(Exc::type_error(
            "normal() received an invalid combination of arguments: with number mean and std, give size=(...)",
        ));
    };
    let shape = arrays::shape_arg(&tuple_like(&size))?;
    let arr = it
        .state_mut()
        .rt
        .torch_normal(m, s, &shape, dtype, device)
        .map_err(crate::object::error::torch_error)?;
    Ok(wrap(arr, Flavor::Torch))
}

/// The functions this file adds to every array namespace of dialect `F`.
pub fn namespace_fns<const F: u8>() -> Vec<(&'static str, &'static str, BuiltinFn)> {
    let mut v: Vec<(&'static str, &'static str, BuiltinFn)> = vec![
        ("add", "add(x1, x2, out=None): x1 + x2, elementwise.", f_add),
        ("subtract", "subtract(x1, x2, out=None): x1 - x2, elementwise.", f_sub),
        ("multiply", "multiply(x1, x2, out=None): x1 * x2, elementwise.", f_mul),
        ("divide", "divide(x1, x2, out=None): x1 / x2, elementwise.", f_div),
        ("true_divide", "true_divide(x1, x2, out=None): x1 / x2, elementwise.", f_div),
        ("power", "power(x1, x2, out=None): x1 ** x2, elementwise.", f_pow),
        ("pow", "pow(x1, x2, out=None): x1 ** x2, elementwise.", f_pow),
        ("mod", "mod(x1, x2, out=None): the remainder, elementwise.", f_mod),
        ("remainder", "remainder(x1, x2, out=None): the remainder, elementwise.", f_mod),
        ("floor_divide", "floor_divide(x1, x2, out=None): x1 // x2, elementwise.", f_floordiv),
        ("negative", "negative(x, out=None): -x, elementwise.", f_neg),
        ("sin", "sin(x, out=None): sine, elementwise.", f_sin),
        ("cos", "cos(x, out=None): cosine, elementwise.", f_cos),
        ("cumsum", "cumsum(x, axis=None): running sums along an axis.", f_cumsum),
        ("all", "all(x, axis=None, keepdims=False): whether every element is nonzero (along an axis).", f_all),
        ("any", "any(x, axis=None, keepdims=False): whether some element is nonzero (along an axis).", f_any),
        ("ones_like", "ones_like(x, dtype=None, device=None): ones of x's shape (and dtype and device unless given).", ones_like::<F>),
        ("zeros_like", "zeros_like(x, dtype=None, device=None): zeros of x's shape (and dtype and device unless given).", zeros_like::<F>),
        ("empty_like", "empty_like(x, dtype=None, device=None): an array of x's shape (zero-filled here).", zeros_like::<F>),
        ("full_like", "full_like(x, fill_value, dtype=None, device=None): x's shape filled with a value.", full_like::<F>),
    ];
    if F == TORCH {
        v.extend_from_slice(&[
            ("sub", "sub(input, other, alpha=1, out=None): input - alpha * other.", f_sub as BuiltinFn),
            ("mul", "mul(input, other, out=None): input * other.", f_mul),
            ("div", "div(input, other, out=None): input / other.", f_div),
            ("neg", "neg(input): -input.", f_neg),
            ("mv", "mv(input, vec): the matrix-vector product.", f_matmul),
            ("mm", "mm(input, mat2): the matrix product of two 2-D tensors.", f_matmul),
            ("matmul", "matmul(input, other): the matrix product, batched over leading axes.", f_matmul),
            ("numel", "numel(input): the number of elements.", f_numel),
            ("clone", "clone(input): a copy in new memory.", f_clone),
            ("squeeze", "squeeze(input, dim=None): without axes of length 1.", f_squeeze),
            ("flatten", "flatten(input, start_dim=0, end_dim=-1): axes start_dim..end_dim as one.", f_flatten),
            ("unsqueeze", "unsqueeze(input, dim): with an axis of length 1 inserted.", f_unsqueeze),
            ("permute", "permute(input, dims): the axes reordered.", f_permute),
            ("rand_like", "rand_like(input, dtype=None, device=None): uniform samples in [0, 1) of input's shape.", rand_like::<F>),
            ("randn_like", "randn_like(input, dtype=None, device=None): standard normal samples of input's shape.", randn_like::<F>),
            ("concat", "concat(tensors, dim=0): join tensors along an axis.", arrays::ns_concat),
            ("randint", "randint(low=0, high, size, dtype=torch.int64, device=None): random integers in [low, high), from PyTorch's generator.", randint),
            ("normal", "normal(mean, std, size, dtype=None, device=None): normal samples, from PyTorch's generator.", torch_normal),
            ("concatenate", "concatenate(tensors, dim=0): join tensors along an axis.", arrays::ns_concat),
        ]);
    }
    v
}

/// `np.linalg` / `torch.linalg`, for the dialects that have one.
pub fn linalg_module(parent: &str) -> Rc<Module> {
    let m = Rc::new(Module::new(&format!("{parent}.linalg"), "linear algebra"));
    m.set(
        "norm",
        builtin(
            "norm",
            "norm(x, ord=None, axis=None, keepdims=False): the vector 2-norm, or the Frobenius norm of a matrix.",
            linalg_norm,
        ),
    );
    m
}

/// Installs the functions above (and `linalg`) into the namespace of dialect `F`.
pub fn fill_namespace<const F: u8>(m: &Module) {
    for (name, doc, f) in namespace_fns::<F>() {
        m.set(name, builtin(name, doc, f));
    }
    if matches!(F, NP | NUMPY | TORCH) {
        m.set("linalg", Value::Module(linalg_module(&m.name)));
    }
}
