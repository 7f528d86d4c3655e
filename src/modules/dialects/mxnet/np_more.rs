//! `mxnet.numpy`'s `linspace`, `meshgrid`, `sinh`, `cosh` and `expand_dims` (the names d2l's
//! MXNet module binds): NumPy's computations (`array::numpy_fns`), with MXNet's results:
//! float32 by default, on the device `ctx=` or the input names.

use crate::modules::array::arrays::{device_arg, dtype_arg};
use crate::modules::array::numpy_fns;
use crate::object::ops::{as_f64, wrap};
use crate::object::value::{Args, Flavor, Module, Value};
use crate::object::{builtin, Exc, Interpreter};
use crate::runtime::{DType, Device};

pub fn install(m: &Module) {
    let fns: [(&'static str, &'static str, crate::object::value::BuiltinFn); 5] = [
        ("linspace", "linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, ctx=None): num evenly spaced values (float32 unless dtype says otherwise).", linspace),
        ("meshgrid", "meshgrid(*xi, indexing='xy'): coordinate matrices from coordinate vectors.", meshgrid),
        ("sinh", "sinh(x, out=None): hyperbolic sine, elementwise.", |it, a| hyperbolic(it, a, f64::sinh)),
        ("cosh", "cosh(x, out=None): hyperbolic cosine, elementwise.", |it, a| hyperbolic(it, a, f64::cosh)),
        ("expand_dims", "expand_dims(a, axis): a with an axis of length 1 inserted at axis.", numpy_fns::expand_dims),
    ];
    for (name, doc, f) in fns {
        m.set(name, builtin(name, doc, f));
    }
}

/// `v` (an array) as an MXNet numpy array of `dtype` on `device`.
fn to_np(it: &mut dyn Interpreter, v: &Value, dtype: DType, device: Device) -> Result<Value, Exc> {
    let Some(x) = v.as_array() else {
        return Ok(v.clone());
    };
    let st = it.state();
    let c = x.array.astype(dtype)?.copy_to(&st.rt, device)?;
    Ok(wrap(c, Flavor::Np))
}

fn linspace(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
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
            let arr = to_np(it, &t[0], dtype, device)?;
            Ok(Value::tuple(vec![arr, t[1].clone()]))
        }
        other => to_np(it, other, dtype, device),
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

/// An elementwise hyperbolic function, computed in double precision and rounded once (a
/// Python number for a number, as MXNet's numpy returns).
fn hyperbolic(it: &mut dyn Interpreter, mut a: Args, f: fn(f64) -> f64) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    a.take_kw("out");
    a.finish(1)?;
    if let Some(v) = as_f64(&x) {
        return Ok(Value::Float(f(v)));
    }
    let x = numpy_fns::as_array(it, &x)?;
    Ok(wrap(numpy_fns::map_f64(it, &x.array, f)?, Flavor::Np))
}
