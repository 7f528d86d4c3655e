//! `mxnet.numpy`'s `linspace`, `meshgrid`, `sinh`, `cosh` and `expand_dims` (the names d2l's
//! MXNet module binds): NumPy's computations (`array::numpy_fns`), with MXNet's results:
//! float32 by default, on the device `ctx=` or the input names. Also `npx.batch_dot` (d2l's
//! `batch_matmul`), which `nd` has too.

use crate::modules::array::arrays::{device_arg, dtype_arg};
use crate::modules::array::numpy_fns;
use crate::object::ops::{as_f64, wrap};
use crate::object::value::{Args, Flavor, Module, Value};
use crate::object::{builtin, Exc, ExcKind, Interpreter};
use crate::runtime::{DType, Device};

pub fn install(m: &Module) {
    let fns: [(&'static str, &'static str, crate::object::value::BuiltinFn); 5] = [
        ("linspace", "linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, ctx=None): num evenly spaced values (float32 unless dtype says otherwise).", linspace),
        ("meshgrid", "meshgrid(*xi, indexing='xy'): coordinate matrices from coordinate vectors.", meshgrid),
        ("sinh", "sinh(x, out=None): hyperbolic sine, elementwise.", |it, a| hyperbolic(it, a, f64::sinh, |v| (v as f32).sinh() as f64)),
        ("cosh", "cosh(x, out=None): hyperbolic cosine, elementwise.", |it, a| hyperbolic(it, a, f64::cosh, |v| (v as f32).cosh() as f64)),
        ("expand_dims", "expand_dims(a, axis): a with an axis of length 1 inserted at axis.", numpy_fns::expand_dims),
    ];
    for (name, doc, f) in fns {
        m.set(name, builtin(name, doc, f));
    }
}

/// `v` (an array) as an MXNet numpy array of `dtype` on `device`.
fn to_np(it: &mut dyn Interpreter, v: &Value, dtype: DType, device: Device) -> Result<Value, Exc> {
    to_mx(it, v, dtype, device, Flavor::Np)
}

/// `v` (an array) as an MXNet array of `flavor` and `dtype` on `device`.
fn to_mx(
    it: &mut dyn Interpreter,
    v: &Value,
    dtype: DType,
    device: Device,
    flavor: Flavor,
) -> Result<Value, Exc> {
    let Some(x) = v.as_array() else {
        return Ok(v.clone());
    };
    let st = it.state();
    let c = x.array.astype(dtype)?.copy_to(&st.rt, device)?;
    Ok(wrap(c, flavor))
}

fn linspace(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    linspace_as(it, a, Flavor::Np)
}

/// NumPy's linspace as an MXNet array of `flavor` (numpy-mode or legacy NDArray).
pub(super) fn linspace_as(
    it: &mut dyn Interpreter,
    mut a: Args,
    flavor: Flavor,
) -> Result<Value, Exc> {
    let ctx = a.take_kw("ctx");
    let dtype = match a.take(5, "dtype")? {
        None | Some(Value::None) => DType::Float32,
        Some(d) => dtype_arg(&d)?.unwrap_or(DType::Float32),
    };
    let device = match &ctx {
        None | Some(Value::None) => it.state().default_device,
        Some(c) => device_arg(c)?,
    };
    it.state().rt.check_device(device)?;
    let out = numpy_fns::linspace(it, a)?;
    match &out {
        Value::Tuple(t) if t.len() == 2 => {
            let arr = to_mx(it, &t[0], dtype, device, flavor)?;
            Ok(Value::tuple(vec![arr, t[1].clone()]))
        }
        other => to_mx(it, other, dtype, device, flavor),
    }
}

fn meshgrid(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let first = a.pos.first().and_then(|v| v.as_array().cloned());
    let out = numpy_fns::meshgrid(it, a)?;
    let Some(first) = first else {
        return Ok(out);
    };
    let items = match &out {
        Value::List(l) => l.borrow().clone(),
        _ => return Ok(out),
    };
    let mut grids = Vec::new();
    for g in items {
        let dtype = g.as_array().map_or(DType::Float32, |x| x.array.dtype());
        grids.push(to_np(it, &g, dtype, first.array.device())?);
    }
    Ok(Value::list(grids))
}

/// An elementwise hyperbolic function (a Python number for a number, as MXNet's numpy
/// returns). MXNet calls the C library's `coshf`/`sinhf` for float32 (`math::cosh` in
/// `src/operator/math.h`), which is not always correctly rounded; `f32::cosh` is that same call,
/// so `f32` gives MXNet's bits (0 differences in 45,000 inputs against mxnet 1.9.1). `f` is the
/// double-precision function (float64 arrays and numbers).
fn hyperbolic(
    it: &mut dyn Interpreter,
    mut a: Args,
    f: fn(f64) -> f64,
    f32: fn(f64) -> f64,
) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    a.take_kw("out");
    a.finish(1)?;
    if let Some(v) = as_f64(&x) {
        return Ok(Value::Float(f(v)));
    }
    let x = numpy_fns::as_array(it, &x)?;
    let f = if x.array.dtype() == DType::Float64 {
        f
    } else {
        f32
    };
    Ok(wrap(numpy_fns::map_f64(it, &x.array, f)?, Flavor::Np))
}

/// `npx.batch_dot(lhs, rhs, transpose_a=False, transpose_b=False)` (also `nd.batch_dot`):
/// the product of the last two axes, batch by batch, after MXNet 1.9.1's checks and with its
/// `MXNetError`s (`src/operator/tensor/dot-inl.h`); on the tape, so autograd goes through it.
pub fn batch_dot(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let lhs = a.take(0, "lhs")?;
    let rhs = a.take(1, "rhs")?;
    let flag = |v: Option<Value>| v.map_or(Ok(false), |v| v.truthy());
    let ta = flag(a.take(2, "transpose_a")?)?;
    let tb = flag(a.take(3, "transpose_b")?)?;
    a.take(4, "forward_stype")?;
    a.take_kw("out");
    a.finish(5)?;
    let given = [&lhs, &rhs].iter().filter(|v| v.is_some()).count();
    let (Some(lhs), Some(rhs)) = (lhs, rhs) else {
        return Err(mx_error(
            "../src/api/operator/numpy/../../../imperative/imperative_utils.h",
            371,
            format!("Check failed: num_inputs == infered_num_inputs ({given} vs. 2) : Operator batch_dot expects 2 inputs, but got {given} instead."),
        ));
    };
    for (v, name) in [(&lhs, "lhs"), (&rhs, "rhs")] {
        if v.as_array().is_none() {
            return Err(Exc::new(
                ExcKind::AssertionError,
                format!(
                    "Argument {name} must have NDArray type, but got {}",
                    crate::object::format::repr(it, v)?
                ),
            ));
        }
    }
    let (Some(x), Some(y)) = (lhs.as_array(), rhs.as_array()) else {
        return Ok(Value::None);
    };
    super::conv_ops::same_context("batch_dot", &[&x.array, &y.array])?;
    let (ls, rs) = (x.array.shape(), y.array.shape());
    let dims = |s: &[usize]| {
        let v: Vec<String> = s.iter().map(|d| d.to_string()).collect();
        format!("[{}]", v.join(","))
    };
    let n = ls.len();
    if n < 3 || rs.len() != n {
        return Err(mx_error(
            "../src/operator/tensor/./dot-inl.h",
            1448,
            format!(
                "batch_dot currently only support N-D*N-D array (N >= 3){} v.s. {}",
                dims(ls),
                dims(rs)
            ),
        ));
    }
    let trans = format!("trans_a={} trans_b={}", ta as u8, tb as u8);
    if let Some(i) = (0..n - 2).find(|&i| ls[i] != rs[i]) {
        return Err(mx_error(
            "../src/operator/tensor/./dot-inl.h",
            1428,
            format!(
                "Check failed: lshape[i] == rshape[i] ({} vs. {}) : batch_dot shape error (the leading batch dimensions must be equal): {} X {} {trans}",
                ls[i],
                rs[i],
                dims(ls),
                dims(rs)
            ),
        ));
    }
    let lk = if ta { ls[n - 2] } else { ls[n - 1] };
    let rk = if tb { rs[n - 1] } else { rs[n - 2] };
    if lk != rk {
        return Err(mx_error(
            "../src/operator/tensor/./dot-inl.h",
            1437,
            format!(
                "Check failed: lshape_k == rshape_k ({lk} vs. {rk}) : batch_dot shape error (shape mismatch): {} X {} {trans}",
                dims(ls),
                dims(rs)
            ),
        ));
    }
    let (ld, rd) = (x.array.dtype(), y.array.dtype());
    if ld != rd {
        return Err(mx_error(
            "../src/io/../operator/elemwise_op_common.h",
            134,
            format!(
                "Check failed: assign(&dattr, vec.at(i)): Incompatible attr in node  at 1-th input: expected {}, got {}",
                ld.name(),
                rd.name()
            ),
        ));
    }
    if !matches!(ld, DType::Float32 | DType::Float64) {
        return Err(mx_error(
            "../src/operator/tensor/./dot-inl.h",
            1364,
            "Check failed: outputs[0].type_flag_ == kFloat32 || outputs[0].type_flag_ == kFloat64 || (outputs[0].type_flag_ == kFloat16 && ctx.run_ctx.ctx.dev_mask() == mshadow: :gpu::kDevMask): dot only supports float32/float64 for CPU, and float16/float32/float64 for GPU".to_string(),
        ));
    }
    // The last two axes swapped, on the tape.
    let swap: Vec<isize> = (0..n as isize - 2)
        .chain([n as isize - 1, n as isize - 2])
        .collect();
    let (fx, fy) = (x.flavor, y.flavor);
    let tape = &mut it.state_mut().nn.tape;
    let xa = if ta {
        tape.transpose(&x.array, Some(&swap))?
    } else {
        x.array.clone()
    };
    let ya = if tb {
        tape.transpose(&y.array, Some(&swap))?
    } else {
        y.array.clone()
    };
    crate::object::ops::binary(
        it,
        crate::lang::ast::BinOp::MatMul,
        &wrap(xa, fx),
        &wrap(ya, fy),
    )
}

/// An `MXNetError` as MXNet 1.9.1 prints a failed check: the C++ file and line, then the
/// message.
pub(super) fn mx_error(file: &str, line: u32, msg: String) -> Exc {
    Exc::new(
        ExcKind::MXNetError,
        format!(
            "Traceback (most recent call last):\n  File \"{file}\", line {line}\nMXNetError: {msg}"
        ),
    )
}
