//! The NumPy functions data-preparation code uses beyond the shared array API: `linspace`,
//! `where`, `std`/`var`, `sort`/`argsort`/`unique`, `split`, `vstack`/`hstack`, `outer`,
//! `allclose`/`isclose`/`array_equal`, `round`, `linalg.inv`/`det`, the scalar types
//! (`np.float32(x)`), with NumPy 1.23's results, dtypes and errors. Arrays of any dialect are
//! accepted; the work is done on host copies (NumPy's arrays live on the host) except where a
//! runtime op exists (reductions, elementwise ops, indexing).
//!
//! `sort`/`argsort` are stable (NumPy's default quicksort is not for more than 16 elements:
//! equal keys may come out in another order there).

use crate::modules::array::array_more::shape_text;
use std::rc::Rc;

use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, ArrayValue, BuiltinFn, Flavor, MethodFn, Module, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{
    Array, BinaryOp, DType, Device, HostData, IndexItem, Operand, ReduceOp, Scalar, UnaryOp,
};

use crate::modules::array::arrays::{self, NUMPY};

// ------------------------------------------------------------------ helpers

fn np(a: Array) -> Value {
    wrap(a, Flavor::Numpy)
}

/// Any array-like as an array (lists and numbers as `np.array` makes them).
pub(crate) fn as_array(it: &mut dyn Interpreter, v: &Value) -> Result<ArrayValue, Exc> {
    if let Value::Array(a) = v {
        return Ok(a.clone());
    }
    match &arrays::array::<NUMPY>(it, Args::new("array", vec![v.clone()]))? {
        Value::Array(a) => Ok(a.clone()),
        other => Err(Exc::type_error(format!(
            "expected an array-like, got {}",
            other.type_name()
        ))),
    }
}

/// The input of a float computation: integers and bools become the smallest float that holds
/// them (uint8 float16, int16 float32, int32 and int64 float64), as NumPy computes them.
fn floated(a: &Array) -> Result<Array, Exc> {
    if a.dtype().is_float() {
        Ok(a.clone())
    } else {
        Ok(a.astype(numpy_float_for(a.dtype()))?)
    }
}

/// The float type NumPy computes float functions of `d` in (`np.sqrt` of a uint8 is float16).
pub fn numpy_float_for(d: DType) -> DType {
    d.numpy_promote(DType::Float16)
}

fn host_array(it: &mut dyn Interpreter, data: HostData, shape: &[usize]) -> Result<Array, Exc> {
    Ok(it.state_mut().rt.from_host(data, shape, Device::cpu(0))?)
}

fn f64s(h: &HostData) -> Vec<f64> {
    h.to_f64_vec()
}

fn axis_of(v: Option<Value>, ndim: usize) -> Result<Option<usize>, Exc> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(v) => {
            let i = as_i64(&v).ok_or_else(|| {
                Exc::type_error(format!(
                    "'{}' object cannot be interpreted as an integer",
                    v.type_name()
                ))
            })?;
            norm_axis(i, ndim).map(Some)
        }
    }
}

fn norm_axis(i: i64, ndim: usize) -> Result<usize, Exc> {
    let n = ndim as i64;
    if i < -n || i >= n {
        return Err(Exc::new(
            ExcKind::AxisError,
            format!("axis {i} is out of bounds for array of dimension {ndim}"),
        ));
    }
    Ok(if i < 0 { (i + n) as usize } else { i as usize })
}

/// The shape NumPy broadcasts several shapes to, or its error naming them all.
pub(crate) fn broadcast_all(shapes: &[&[usize]]) -> Result<Vec<usize>, Exc> {
    let ndim = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; ndim];
    for s in shapes {
        for (k, d) in s.iter().enumerate() {
            let slot = &mut out[ndim - s.len() + k];
            if *slot == 1 {
                *slot = *d;
            } else if *d != 1 && *d != *slot {
                let text: Vec<String> = shapes.iter().map(|s| shape_text(s)).collect();
                return Err(Exc::value_error(format!(
                    "operands could not be broadcast together with shapes {} ",
                    text.join(" ")
                )));
            }
        }
    }
    Ok(out)
}

/// For each element of `out` (row-major), the flat position in an array of shape `src`
/// broadcast to it.
pub(crate) fn broadcast_positions(src: &[usize], out: &[usize]) -> Vec<usize> {
    let n: usize = out.iter().product();
    let off = out.len() - src.len();
    let mut strides = vec![0usize; out.len()];
    let mut acc = 1;
    for k in (0..src.len()).rev() {
        strides[off + k] = if src[k] == 1 { 0 } else { acc };
        acc *= src[k];
    }
    let mut pos = Vec::with_capacity(n);
    let mut idx = vec![0usize; out.len()];
    for _ in 0..n {
        pos.push(idx.iter().zip(&strides).map(|(i, s)| i * s).sum());
        for k in (0..out.len()).rev() {
            idx[k] += 1;
            if idx[k] < out[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    pos
}

fn pick(h: &HostData, pos: &[usize]) -> HostData {
    fn take<T: crate::runtime::host::HostElement>(d: &[T], pos: &[usize]) -> HostData {
        T::into_host(pos.iter().filter_map(|p| d.get(*p).copied()).collect())
    }
    crate::host_any!(h, d => take(d, pos))
}

/// The dtype NumPy gives an operand: an array's own, a Python scalar's default (weak: it
/// follows an array of the same kind).
fn operand_dtype(v: &Value) -> Option<(DType, bool)> {
    match v {
        Value::Array(a) => Some((a.array.dtype(), false)),
        Value::Bool(_) => Some((DType::Bool, true)),
        Value::Int(_) => Some((DType::Int64, true)),
        Value::Float(_) => Some((DType::Float64, true)),
        _ => None,
    }
}

/// NumPy 1.23's result type of two operands (value-based for Python scalars).
fn result_type(a: (DType, bool), b: (DType, bool)) -> DType {
    match (a.1, b.1) {
        (true, false) => return result_type(b, a),
        (false, true) if b.0.category() <= a.0.category() => return a.0,
        _ => {}
    }
    a.0.numpy_promote(b.0)
}

// ------------------------------------------------------------------ creation

pub(crate) fn linspace(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let start = a.required(0, "start")?;
    let stop = a.required(1, "stop")?;
    let num = a.take(2, "num")?.map_or(Ok(50), |v| {
        as_i64(&v).ok_or_else(|| {
            Exc::type_error(format!(
                "'{}' object cannot be interpreted as an integer",
                v.type_name()
            ))
        })
    })?;
    let endpoint = a.flag(3, "endpoint", true)?;
    let retstep = a.flag(4, "retstep", false)?;
    let dtype = a.take(5, "dtype")?;
    a.take_kw("axis");
    a.finish(6)?;
    let num_f = |v: &Value, name: &str| {
        as_f64(v).ok_or_else(|| {
            Exc::type_error(format!(
                "linspace() {name} must be a number, not {}",
                v.type_name()
            ))
        })
    };
    let (start, stop) = (num_f(&start, "start")?, num_f(&stop, "stop")?);
    if num < 0 {
        return Err(Exc::value_error(format!(
            "Number of samples, {num}, must be non-negative."
        )));
    }
    let n = num as usize;
    let div = if endpoint { n.saturating_sub(1) } else { n };
    let delta = stop - start;
    let step = if div > 0 {
        delta / div as f64
    } else {
        f64::NAN
    };
    let mut y: Vec<f64> = crate::object::alloc::vec(n)?;
    y.extend((0..n).map(|i| {
        let i = i as f64;
        let v = if div == 0 {
            i * delta
        } else if step == 0.0 {
            i / div as f64 * delta
        } else {
            i * step
        };
        v + start
    }));
    if endpoint && n > 1 {
        y[n - 1] = stop;
    }
    let mut out = host_array(it, HostData::F64(y), &[n])?;
    if let Some(d) = dtype.as_ref().map(arrays::dtype_arg).transpose()?.flatten() {
        out = out.astype(d)?;
    }
    if retstep {
        return Ok(Value::tuple(vec![np(out), Value::Float(step)]));
    }
    Ok(np(out))
}

fn asarray(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "a")?;
    let dtype = a.take(1, "dtype")?;
    a.take_kw("order");
    a.finish(2)?;
    let dtype = dtype.as_ref().map(arrays::dtype_arg).transpose()?.flatten();
    match &x {
        Value::Array(v)
            if v.flavor == Flavor::Numpy && dtype.is_none_or(|d| d == v.array.dtype()) =>
        {
            Ok(x.clone())
        }
        Value::Array(v) => {
            let host = v.array.to_host_array(&it.state_mut().rt)?;
            let host = match dtype {
                Some(d) if d != host.dtype() => host.astype(d)?,
                _ => host,
            };
            Ok(np(host))
        }
        _ => {
            let mut args = vec![x.clone()];
            let mut call = Args::new("array", std::mem::take(&mut args));
            if let Some(d) = dtype {
                call.kw
                    .push((Rc::from("dtype"), Value::DType(d, Flavor::Numpy)));
            }
            arrays::array::<NUMPY>(it, call)
        }
    }
}

// ------------------------------------------------------------------ statistics

/// `std`/`var` as NumPy computes them: the mean, the squared deviations, their sum over
/// `n - ddof`, in the input's float type (float64 for integers).
fn moment(it: &mut dyn Interpreter, x: &ArrayValue, mut a: Args, root: bool) -> Result<Value, Exc> {
    let axis = a.take(0, "axis")?;
    let dtype = a.take(1, "dtype")?;
    a.take_kw("out");
    let ddof = a.take(3, "ddof")?.map_or(Ok(0.0), |v| {
        as_f64(&v).ok_or_else(|| Exc::type_error("ddof must be a number"))
    })?;
    let keepdims = a.flag(4, "keepdims", false)?;
    a.finish(5)?;
    let axes: Option<Vec<isize>> = match &axis {
        None | Some(Value::None) => None,
        Some(Value::Tuple(t)) => Some(
            t.iter()
                .map(|v| {
                    as_i64(v).map(|i| i as isize).ok_or_else(|| {
                        Exc::type_error("axis must be an integer or a tuple of integers")
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(v) => Some(vec![as_i64(v)
            .ok_or_else(|| Exc::type_error("axis must be an integer or a tuple of integers"))?
            as isize]),
    };
    let mut arr = floated(&x.array)?;
    if let Some(d) = dtype.as_ref().map(arrays::dtype_arg).transpose()?.flatten() {
        arr = arr.astype(d)?;
    }
    let shape = arr.shape().to_vec();
    let count: usize = match &axes {
        None => shape.iter().product(),
        Some(ax) => ax
            .iter()
            .map(|i| norm_axis(*i as i64, shape.len()).map(|k| shape[k]))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .product(),
    };
    let sum = arr.reduce(ReduceOp::Sum, axes.as_deref(), true)?;
    let mean = Array::binary(
        BinaryOp::Div,
        Operand::Array(&sum),
        Operand::Scalar(Scalar::Float(count as f64)),
    )?;
    let dev = Array::binary(BinaryOp::Sub, Operand::Array(&arr), Operand::Array(&mean))?;
    let sq = Array::binary(BinaryOp::Mul, Operand::Array(&dev), Operand::Array(&dev))?;
    let total = sq.reduce(ReduceOp::Sum, axes.as_deref(), keepdims)?;
    let rcount = (count as f64 - ddof).max(0.0);
    let mut out = Array::binary(
        BinaryOp::Div,
        Operand::Array(&total),
        Operand::Scalar(Scalar::Float(rcount)),
    )?;
    if root {
        out = out.unary(UnaryOp::Sqrt)?;
    }
    let _ = it;
    if out.ndim() == 0 && x.flavor == Flavor::Numpy {
        return crate::object::ops::numpy_scalar(&out);
    }
    Ok(wrap(out, x.flavor))
}

fn take_array(it: &mut dyn Interpreter, a: &mut Args) -> Result<ArrayValue, Exc> {
    let x = if a.pos.is_empty() {
        a.take_kw("a").or_else(|| a.take_kw("x")).ok_or_else(|| {
            Exc::type_error(format!(
                "{}() missing required argument 'a' (pos 1)",
                a.fname
            ))
        })?
    } else {
        a.pos.remove(0)
    };
    as_array(it, &x)
}

fn f_std(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    moment(it, &x, a, true)
}

fn f_var(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    moment(it, &x, a, false)
}

// ------------------------------------------------------------------ shape functions

fn ravel(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    a.take_kw("order");
    a.finish(0)?;
    Ok(wrap(x.array.reshape(&[-1])?, x.flavor))
}

/// `squeeze(a, axis=None)` / `expand_dims(a, axis)`: the array methods with `a` first.
fn squeeze(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let axis = a.take(0, "axis")?;
    a.finish(1)?;
    let shape = x.array.shape().to_vec();
    let keep: Vec<isize> = match axis {
        None | Some(Value::None) => shape
            .iter()
            .filter(|d| **d != 1)
            .map(|d| *d as isize)
            .collect(),
        Some(v) => {
            let axes: Vec<Value> = match &v {
                Value::Tuple(t) => t.as_ref().clone(),
                other => vec![other.clone()],
            };
            let mut drop = Vec::new();
            for ax in axes {
                let k = axis_of(Some(ax), shape.len())?.unwrap_or(0);
                if shape[k] != 1 {
                    return Err(Exc::value_error(
                        "cannot select an axis to squeeze out which has size not equal to one",
                    ));
                }
                drop.push(k);
            }
            shape
                .iter()
                .enumerate()
                .filter(|(k, _)| !drop.contains(k))
                .map(|(_, d)| *d as isize)
                .collect()
        }
    };
    Ok(wrap(x.array.reshape(&keep)?, x.flavor))
}

pub(crate) fn expand_dims(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let axis = a.required(0, "axis")?;
    a.finish(1)?;
    let axes: Vec<Value> = match &axis {
        Value::Tuple(t) => t.as_ref().clone(),
        other => vec![other.clone()],
    };
    let out_ndim = x.array.ndim() + axes.len();
    let mut at = Vec::new();
    for ax in axes {
        let k = axis_of(Some(ax), out_ndim)?.unwrap_or(0);
        if at.contains(&k) {
            return Err(Exc::value_error("repeated axis"));
        }
        at.push(k);
    }
    let mut dims = x.array.shape().iter();
    let shape: Vec<isize> = (0..out_ndim)
        .map(|k| {
            if at.contains(&k) {
                1
            } else {
                dims.next().map_or(1, |d| *d as isize)
            }
        })
        .collect();
    Ok(wrap(x.array.reshape(&shape)?, x.flavor))
}

fn swapaxes(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let a1 = a.required(0, "axis1")?;
    let a2 = a.required(1, "axis2")?;
    a.finish(2)?;
    let nd = x.array.ndim();
    let i = axis_of(Some(a1), nd)?.unwrap_or(0);
    let j = axis_of(Some(a2), nd)?.unwrap_or(0);
    let mut perm: Vec<isize> = (0..nd as isize).collect();
    perm.swap(i, j);
    Ok(wrap(x.array.transpose(Some(&perm))?, x.flavor))
}

fn moveaxis(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let src = a.required(0, "source")?;
    let dst = a.required(1, "destination")?;
    a.finish(2)?;
    let nd = x.array.ndim();
    let from = axis_of(Some(src), nd)?.unwrap_or(0);
    let to = axis_of(Some(dst), nd)?.unwrap_or(0);
    let mut perm: Vec<isize> = (0..nd as isize).filter(|k| *k != from as isize).collect();
    perm.insert(to, from as isize);
    Ok(wrap(x.array.transpose(Some(&perm))?, x.flavor))
}

fn flip(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let axis = a.take(0, "axis")?;
    a.finish(1)?;
    let nd = x.array.ndim();
    let axes: Vec<usize> = match &axis {
        None | Some(Value::None) => (0..nd).collect(),
        Some(Value::Tuple(t)) => t
            .iter()
            .map(|v| axis_of(Some(v.clone()), nd).map(|k| k.unwrap_or(0)))
            .collect::<Result<_, _>>()?,
        Some(v) => vec![axis_of(Some(v.clone()), nd)?.unwrap_or(0)],
    };
    let items: Vec<IndexItem> = (0..nd)
        .map(|k| IndexItem::Slice {
            start: None,
            stop: None,
            step: if axes.contains(&k) { Some(-1) } else { None },
        })
        .collect();
    Ok(wrap(x.array.index(&items)?, x.flavor))
}

fn atleast(it: &mut dyn Interpreter, mut a: Args, n: usize) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    a.finish(0)?;
    let shape: Vec<isize> = x.array.shape().iter().map(|d| *d as isize).collect();
    let shape = match (n, shape.len()) {
        (_, k) if k >= n => return Ok(Value::Array(x)),
        (1, _) => vec![1],
        (2, 0) => vec![1, 1],
        (2, _) => vec![1, shape[0]],
        _ => return Ok(Value::Array(x)),
    };
    Ok(wrap(x.array.reshape(&shape)?, x.flavor))
}

fn atleast_1d(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    atleast(it, a, 1)
}

fn atleast_2d(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    atleast(it, a, 2)
}

/// `histogram(a, bins=10, range=None)`: equal-width bins as NumPy computes them (edges by
/// `linspace`, each value's bin from its scaled offset, corrected against the edges; the last
/// bin includes its right edge).
fn histogram(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let bins = a.take(0, "bins")?;
    let range = a.take(1, "range")?;
    for k in ["density", "weights"] {
        if let Some(v) = a.take_kw(k) {
            if !matches!(v, Value::None | Value::Bool(false)) {
                return Err(Exc::type_error(format!(
                    "devarray's histogram() has no {k}="
                )));
            }
        }
    }
    a.finish(2)?;
    let n = match &bins {
        None => 10,
        Some(v) => match as_i64(v) {
            Some(n) if n >= 1 => n as usize,
            Some(_) => return Err(Exc::value_error("`bins` must be positive, when an integer")),
            None => {
                return Err(Exc::type_error(
                    "devarray's histogram() takes bins as an int",
                ))
            }
        },
    };
    let vals = f64s(&x.array.to_host());
    let (mut first, mut last) = match &range {
        None | Some(Value::None) => {
            if vals.is_empty() {
                (0.0, 1.0)
            } else {
                let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (lo, hi)
            }
        }
        Some(r) => {
            let items = it.iterate(r)?;
            let (Some(lo), Some(hi)) = (
                items.first().and_then(as_f64),
                items.get(1).and_then(as_f64),
            ) else {
                return Err(Exc::value_error("range must be a pair of numbers"));
            };
            if lo > hi {
                return Err(Exc::value_error(
                    "max must be larger than min in range parameter.",
                ));
            }
            (lo, hi)
        }
    };
    if !(first.is_finite() && last.is_finite()) {
        return Err(Exc::value_error(format!(
            "autodetected range of [{first}, {last}] is not finite"
        )));
    }
    if first == last {
        first -= 0.5;
        last += 0.5;
    }
    // `bins` is the user's size: a count the system refuses is a MemoryError, not an abort.
    let edges: Vec<f64> = {
        let step = (last - first) / n as f64;
        let mut e: Vec<f64> = crate::object::alloc::vec(n.saturating_add(1))?;
        e.extend((0..n).map(|i| i as f64 * step + first));
        e.push(last);
        e
    };
    let norm = n as f64 / (last - first);
    let mut counts: Vec<i64> = crate::object::alloc::vec(n)?;
    counts.resize(n, 0);
    for &v in &vals {
        if !(v >= first && v <= last) {
            continue;
        }
        let mut i = ((v - first) * norm) as usize;
        if i == n {
            i -= 1;
        }
        if v < edges[i] {
            i = i.saturating_sub(1);
        } else if i + 1 < n && v >= edges[i + 1] {
            i += 1;
        }
        counts[i] += 1;
    }
    let c = np(host_array(it, HostData::I64(counts), &[n])?);
    let e = np(host_array(it, HostData::F64(edges), &[n + 1])?);
    Ok(Value::tuple(vec![c, e]))
}

pub fn arrays_of(it: &mut dyn Interpreter, a: &mut Args) -> Result<Vec<ArrayValue>, Exc> {
    let seq = a.required(0, "tup")?;
    let items = it.iterate(&seq)?;
    items.iter().map(|v| as_array(it, v)).collect()
}

/// NumPy's `concatenate` of `parts` along `axis`, with its checks and messages (the
/// runtime's own are the dialect-neutral ones).
pub fn joined(it: &mut dyn Interpreter, parts: Vec<ArrayValue>, axis: isize) -> Result<Value, Exc> {
    let shapes: Vec<&[usize]> = parts.iter().map(|p| p.array.shape()).collect();
    let axis = concat_axis(&shapes, axis as i64)?;
    let flavor = parts[0].flavor;
    let raw: Vec<Array> = parts.into_iter().map(|p| p.array).collect();
    Ok(wrap(
        it.state_mut().nn.tape.concat(&raw, axis as isize)?,
        flavor,
    ))
}

/// NumPy 1.23's checks of a concatenation, in its order: some arrays, not 0-d, the axis, the
/// same number of dimensions, the same sizes off the axis. The axis, normalised.
fn concat_axis(shapes: &[&[usize]], axis: i64) -> Result<usize, Exc> {
    let Some(first) = shapes.first() else {
        return Err(Exc::value_error("need at least one array to concatenate"));
    };
    if first.is_empty() {
        return Err(Exc::value_error(
            "zero-dimensional arrays cannot be concatenated",
        ));
    }
    let axis = norm_axis(axis, first.len())?;
    for (i, shape) in shapes.iter().enumerate().skip(1) {
        if shape.len() != first.len() {
            return Err(Exc::value_error(format!(
                "all the input arrays must have same number of dimensions, but the array at index 0 has {} dimension(s) and the array at index {i} has {} dimension(s)",
                first.len(),
                shape.len()
            )));
        }
        let mismatch =
            (first.iter().zip(shape.iter()).enumerate()).find(|&(d, (a, b))| d != axis && a != b);
        if let Some((d, (a, b))) = mismatch {
            return Err(Exc::value_error(format!(
                "all the input array dimensions for the concatenation axis must match exactly, but along dimension {d}, the array at index 0 has size {a} and the array at index {i} has size {b}"
            )));
        }
    }
    Ok(axis)
}

fn vstack(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let parts = arrays_of(it, &mut a)?;
    a.finish(1)?;
    // atleast_2d: a 1-D array of n becomes one row (1, n); a scalar (1, 1).
    let parts = parts
        .into_iter()
        .map(|p| {
            let s: Vec<isize> = match p.array.shape() {
                [] => vec![1, 1],
                [n] => vec![1, *n as isize],
                _ => return Ok(p),
            };
            Ok(ArrayValue {
                array: p.array.reshape(&s)?,
                flavor: p.flavor,
            })
        })
        .collect::<Result<Vec<_>, Exc>>()?;
    joined(it, parts, 0)
}

fn hstack(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let parts = arrays_of(it, &mut a)?;
    a.finish(1)?;
    let parts = parts
        .into_iter()
        .map(|p| {
            if p.array.ndim() == 0 {
                Ok(ArrayValue {
                    array: p.array.reshape(&[1])?,
                    flavor: p.flavor,
                })
            } else {
                Ok(p)
            }
        })
        .collect::<Result<Vec<_>, Exc>>()?;
    let axis = if parts.first().is_some_and(|p| p.array.ndim() == 1) {
        0
    } else {
        1
    };
    joined(it, parts, axis)
}

fn split_impl(it: &mut dyn Interpreter, mut a: Args, strict: bool) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let ios = a.required(0, "indices_or_sections")?;
    let axis = a.take(1, "axis")?;
    a.finish(2)?;
    let ndim = x.array.ndim();
    let axis = axis_of(axis.or(Some(Value::Int(0))), ndim.max(1))?.unwrap_or(0);
    let n = *x
        .array
        .shape()
        .get(axis)
        .ok_or_else(|| Exc::value_error("array split does not work on 0-d arrays"))?;
    let bounds: Vec<(usize, usize)> = match &ios {
        Value::Int(sections) => {
            if *sections <= 0 {
                return Err(Exc::value_error("number sections must be larger than 0."));
            }
            let k = *sections as usize;
            if strict && n % k != 0 {
                return Err(Exc::value_error(
                    "array split does not result in an equal division",
                ));
            }
            // array_split: the first n % k parts get one more. `k` is the user's count: a
            // list the system refuses is a MemoryError (NumPy builds it too).
            let (each, extra) = (n / k, n % k);
            let mut start = 0;
            let mut bounds = crate::object::alloc::vec(k)?;
            bounds.extend((0..k).map(|i| {
                let len = each + usize::from(i < extra);
                let b = (start, start + len);
                start += len;
                b
            }));
            bounds
        }
        other => {
            let idx: Vec<i64> = it
                .iterate(other)?
                .iter()
                .map(|v| as_i64(v).ok_or_else(|| Exc::type_error("split indices must be integers")))
                .collect::<Result<_, _>>()?;
            let clamp = |i: i64| -> usize {
                let i = if i < 0 { i + n as i64 } else { i };
                i.clamp(0, n as i64) as usize
            };
            let mut out = Vec::new();
            let mut prev = 0usize;
            for i in idx {
                let c = clamp(i);
                out.push((prev, c.max(prev)));
                prev = c;
            }
            out.push((prev, n.max(prev)));
            out
        }
    };
    let mut parts = crate::object::alloc::vec(bounds.len())?;
    for (s, e) in bounds {
        let mut items = vec![
            IndexItem::Slice {
                start: None,
                stop: None,
                step: None
            };
            axis
        ];
        items.push(IndexItem::Slice {
            start: Some(s as i64),
            stop: Some(e.max(s) as i64),
            step: None,
        });
        parts.push(wrap(x.array.index(&items)?, x.flavor));
    }
    Ok(Value::list(parts))
}

fn split(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    split_impl(it, a, true)
}

fn array_split(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    split_impl(it, a, false)
}

fn outer(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let y = a.required(0, "b")?;
    a.finish(1)?;
    let y = as_array(it, &y)?;
    let col = x.array.reshape(&[-1, 1])?;
    let row = y.array.reshape(&[1, -1])?;
    Ok(wrap(
        Array::binary(BinaryOp::Mul, Operand::Array(&col), Operand::Array(&row))?,
        x.flavor,
    ))
}

// ------------------------------------------------------------------ where, nonzero

fn where_(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let cond = a.required(0, "condition")?;
    let x = a.take(1, "x")?;
    let y = a.take(2, "y")?;
    a.finish(3)?;
    let cond = as_array(it, &cond)?;
    let (x, y) = match (x, y) {
        (None, None) => return nonzero_of(it, &cond),
        (Some(x), Some(y)) => (x, y),
        _ => {
            return Err(Exc::value_error(
                "either both or neither of x and y should be given",
            ))
        }
    };
    let listy = |v: Value, it: &mut dyn Interpreter| -> Result<Value, Exc> {
        match v {
            Value::List(_) | Value::Tuple(_) => Ok(Value::Array(as_array(it, &v)?)),
            other => Ok(other),
        }
    };
    let (x, y) = (listy(x, it)?, listy(y, it)?);
    let (Some(dx), Some(dy)) = (operand_dtype(&x), operand_dtype(&y)) else {
        return Err(Exc::type_error(
            "where() takes arrays or numbers for x and y",
        ));
    };
    let dtype = result_type(dx, dy);
    let xa = as_array(it, &x)?.array.astype(dtype)?;
    let ya = as_array(it, &y)?.array.astype(dtype)?;
    let c = cond.array.astype(DType::Bool)?;
    let shape = broadcast_all(&[c.shape(), xa.shape(), ya.shape()])?;
    let HostData::Bool(cv) = pick(&c.to_host(), &broadcast_positions(c.shape(), &shape)) else {
        return Err(Exc::type_error("where(): the condition must be boolean"));
    };
    let xv = pick(&xa.to_host(), &broadcast_positions(xa.shape(), &shape));
    let yv = pick(&ya.to_host(), &broadcast_positions(ya.shape(), &shape));
    let out = match (xv, yv) {
        (HostData::F32(p), HostData::F32(q)) => HostData::F32(choose(&cv, p, q)),
        (HostData::F64(p), HostData::F64(q)) => HostData::F64(choose(&cv, p, q)),
        (HostData::I32(p), HostData::I32(q)) => HostData::I32(choose(&cv, p, q)),
        (HostData::I64(p), HostData::I64(q)) => HostData::I64(choose(&cv, p, q)),
        (HostData::Bool(p), HostData::Bool(q)) => HostData::Bool(choose(&cv, p, q)),
        _ => return Err(Exc::type_error("where(): x and y have different dtypes")),
    };
    Ok(np(host_array(it, out, &shape)?))
}

fn choose<T: Copy>(c: &[bool], x: Vec<T>, y: Vec<T>) -> Vec<T> {
    c.iter()
        .zip(x.into_iter().zip(y))
        .map(|(c, (x, y))| if *c { x } else { y })
        .collect()
}

/// The indices of the nonzero elements, one int64 array per axis.
pub(crate) fn nonzero_of(it: &mut dyn Interpreter, x: &ArrayValue) -> Result<Value, Exc> {
    let shape = x.array.shape().to_vec();
    let vals = x.array.astype(DType::Bool)?.to_host();
    let HostData::Bool(vals) = vals else {
        return Err(Exc::type_error(
            "nonzero(): cannot read the array as booleans",
        ));
    };
    if shape.is_empty() {
        return Err(Exc::value_error(
            "Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.",
        ));
    }
    let mut per_axis: Vec<Vec<i64>> = vec![Vec::new(); shape.len()];
    for (flat, v) in vals.iter().enumerate() {
        if *v {
            let mut rem = flat;
            for k in (0..shape.len()).rev() {
                per_axis[k].push((rem % shape[k]) as i64);
                rem /= shape[k];
            }
        }
    }
    let mut out = Vec::new();
    for v in per_axis {
        let n = v.len();
        out.push(np(host_array(it, HostData::I64(v), &[n])?));
    }
    Ok(Value::tuple(out))
}

fn nonzero(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    a.finish(0)?;
    nonzero_of(it, &x)
}

fn count_nonzero(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    a.finish(0)?;
    let HostData::Bool(v) = x.array.astype(DType::Bool)?.to_host() else {
        return Ok(Value::Int(0));
    };
    Ok(Value::Int(v.iter().filter(|b| **b).count() as i64))
}

// ------------------------------------------------------------------ sorting

/// NumPy's order: NaN after every number.
fn total_lt(a: f64, b: f64) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal),
    }
}

/// The permutation that sorts each lane along `axis` (stable), as flat positions. A sort of
/// millions of keys is one statement: an interrupt stops it (KeyboardInterrupt).
fn sort_positions(
    it: &dyn Interpreter,
    h: &HostData,
    shape: &[usize],
    axis: usize,
) -> Result<Vec<usize>, Exc> {
    /// Unwinds out of the sort when an interrupt is seen (a sort cannot return an error).
    struct Interrupted;
    let flag = it.state().interrupt.clone();
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let keys = f64s(h);
    let ints: Option<Vec<i64>> = match h {
        HostData::I64(d) => Some(d.clone()),
        _ => None,
    };
    let mut out = crate::object::alloc::vec(keys.len())?;
    out.resize(keys.len(), 0usize);
    let mut lane: Vec<usize> = crate::object::alloc::vec(n)?;
    let mut compared = 0u32;
    let mut poll = || {
        compared = compared.wrapping_add(1);
        if compared % 4096 == 0 && flag.is_set() {
            // Not a panic: `resume_unwind` runs no panic hook and prints nothing.
            std::panic::resume_unwind(Box::new(Interrupted));
        }
    };
    let sorting = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for o in 0..outer {
            for i in 0..inner {
                let base = o * n * inner + i;
                lane.clear();
                lane.extend((0..n).map(|k| base + k * inner));
                match &ints {
                    Some(v) => lane.sort_by(|p, q| {
                        poll();
                        v[*p].cmp(&v[*q])
                    }),
                    None => lane.sort_by(|p, q| {
                        poll();
                        total_lt(keys[*p], keys[*q])
                    }),
                }
                for (k, p) in lane.iter().enumerate() {
                    out[base + k * inner] = *p;
                }
            }
        }
    }));
    match sorting {
        Ok(()) => Ok(out),
        Err(payload) if payload.is::<Interrupted>() => {
            it.state().interrupt.take();
            Err(Exc::new(ExcKind::KeyboardInterrupt, ""))
        }
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

fn sort_args(
    it: &mut dyn Interpreter,
    x: &ArrayValue,
    a: &mut Args,
    i: usize,
) -> Result<Option<usize>, Exc> {
    let axis = a.take(i, "axis")?;
    a.take_kw("kind");
    a.take_kw("order");
    a.finish(i + 1)?;
    let _ = it;
    match axis {
        Some(Value::None) => Ok(None),
        None => Ok(Some(x.array.ndim().max(1) - 1)),
        Some(v) => axis_of(Some(v), x.array.ndim().max(1)),
    }
}

/// `sort` / `argsort` of `x` along `axis` (None: flattened).
fn sorted(
    it: &mut dyn Interpreter,
    x: &ArrayValue,
    axis: Option<usize>,
    arg: bool,
) -> Result<Array, Exc> {
    let (arr, axis) = match axis {
        None => (x.array.reshape(&[-1])?, 0),
        Some(k) if x.array.ndim() == 0 => (x.array.reshape(&[1])?, k),
        Some(k) => (x.array.clone(), k),
    };
    let shape = arr.shape().to_vec();
    let h = arr.to_host();
    let pos = sort_positions(it, &h, &shape, axis)?;
    if arg {
        let inner: usize = shape[axis + 1..].iter().product();
        let n = shape[axis];
        let idx: Vec<i64> = pos
            .iter()
            .map(|p| ((p / inner) % n.max(1)) as i64)
            .collect();
        return host_array(it, HostData::I64(idx), &shape);
    }
    host_array(it, pick(&h, &pos), &shape)
}

fn sort(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let axis = sort_args(it, &x, &mut a, 0)?;
    Ok(wrap(sorted(it, &x, axis, false)?, x.flavor))
}

fn argsort(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let axis = sort_args(it, &x, &mut a, 0)?;
    Ok(wrap(sorted(it, &x, axis, true)?, x.flavor))
}

pub(crate) fn unique(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let return_index = a.flag(0, "return_index", false)?;
    let return_inverse = a.flag(1, "return_inverse", false)?;
    let return_counts = a.flag(2, "return_counts", false)?;
    let axis = a.take(3, "axis")?;
    a.take_kw("equal_nan");
    a.finish(4)?;
    if !matches!(axis, None | Some(Value::None)) {
        return Err(Exc::type_error(
            "devarray's unique() works on the flattened array only (axis=None)",
        ));
    }
    let flat = x.array.reshape(&[-1])?;
    let n = flat.size();
    let h = flat.to_host();
    let order = sort_positions(it, &h, &[n], 0)?;
    let keys = f64s(&h);
    let ints = match &h {
        HostData::I64(d) => Some(d.clone()),
        _ => None,
    };
    let same = |p: usize, q: usize| match &ints {
        Some(v) => v[p] == v[q],
        None => keys[p] == keys[q],
    };
    let mut firsts: Vec<usize> = Vec::new();
    let mut counts: Vec<i64> = Vec::new();
    let mut inverse = vec![0i64; n];
    for (k, &p) in order.iter().enumerate() {
        if k == 0 || !same(order[k - 1], p) {
            firsts.push(p);
            counts.push(0);
        }
        if let Some(c) = counts.last_mut() {
            *c += 1;
        }
        inverse[p] = firsts.len() as i64 - 1;
    }
    let m = firsts.len();
    let values = np(host_array(it, pick(&h, &firsts), &[m])?);
    if !(return_index || return_inverse || return_counts) {
        return Ok(wrap(
            values
                .as_array()
                .map(|v| v.array.clone())
                .ok_or_else(|| Exc::type_error("unique"))?,
            x.flavor,
        ));
    }
    let mut out = vec![values];
    if return_index {
        out.push(np(host_array(
            it,
            HostData::I64(firsts.iter().map(|p| *p as i64).collect()),
            &[m],
        )?));
    }
    if return_inverse {
        out.push(np(host_array(it, HostData::I64(inverse), &[n])?));
    }
    if return_counts {
        out.push(np(host_array(it, HostData::I64(counts), &[m])?));
    }
    Ok(Value::tuple(out))
}

// ------------------------------------------------------------------ comparisons

fn tolerances(a: &mut Args) -> Result<(f64, f64, bool), Exc> {
    let num = |v: Option<Value>, d: f64, name: &str| -> Result<f64, Exc> {
        match v {
            None => Ok(d),
            Some(v) => {
                as_f64(&v).ok_or_else(|| Exc::type_error(format!("{name} must be a number")))
            }
        }
    };
    let rtol = num(a.take(2, "rtol")?, 1e-5, "rtol")?;
    let atol = num(a.take(3, "atol")?, 1e-8, "atol")?;
    let equal_nan = a.flag(4, "equal_nan", false)?;
    a.finish(5)?;
    Ok((rtol, atol, equal_nan))
}

pub(crate) fn close_values(
    it: &mut dyn Interpreter,
    mut a: Args,
) -> Result<(Vec<bool>, Vec<usize>), Exc> {
    let x = a.required(0, "a")?;
    let y = a.required(1, "b")?;
    let (rtol, atol, equal_nan) = tolerances(&mut a)?;
    let (x, y) = (as_array(it, &x)?, as_array(it, &y)?);
    let shape = broadcast_all(&[x.array.shape(), y.array.shape()])?;
    let xv = f64s(&pick(
        &x.array.to_host(),
        &broadcast_positions(x.array.shape(), &shape),
    ));
    let yv = f64s(&pick(
        &y.array.to_host(),
        &broadcast_positions(y.array.shape(), &shape),
    ));
    let out = xv
        .iter()
        .zip(&yv)
        .map(|(&p, &q)| {
            if p.is_nan() || q.is_nan() {
                equal_nan && p.is_nan() && q.is_nan()
            } else if p.is_infinite() || q.is_infinite() {
                p == q
            } else {
                (p - q).abs() <= atol + rtol * q.abs()
            }
        })
        .collect();
    Ok((out, shape))
}

fn isclose(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let (v, shape) = close_values(it, a)?;
    if shape.is_empty() {
        return Ok(Value::Bool(v[0]));
    }
    Ok(np(host_array(it, HostData::Bool(v), &shape)?))
}

fn allclose(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let (v, _) = close_values(it, a)?;
    Ok(Value::Bool(v.iter().all(|b| *b)))
}

pub(crate) fn array_equal(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "a1")?;
    let y = a.required(1, "a2")?;
    let equal_nan = a.flag(2, "equal_nan", false)?;
    a.finish(3)?;
    let (x, y) = (as_array(it, &x)?, as_array(it, &y)?);
    if x.array.shape() != y.array.shape() {
        return Ok(Value::Bool(false));
    }
    let (p, q) = (f64s(&x.array.to_host()), f64s(&y.array.to_host()));
    Ok(Value::Bool(p.iter().zip(&q).all(|(a, b)| {
        a == b || (equal_nan && a.is_nan() && b.is_nan())
    })))
}

/// `isnan` / `isinf` / `isfinite`: a bool array (a bool for a scalar).
fn float_test(it: &mut dyn Interpreter, mut a: Args, test: fn(f64) -> bool) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    a.take_kw("out");
    a.finish(0)?;
    let v: Vec<bool> = f64s(&x.array.to_host()).into_iter().map(test).collect();
    if x.array.ndim() == 0 {
        return Ok(Value::Bool(v[0]));
    }
    let shape = x.array.shape().to_vec();
    Ok(wrap(host_array(it, HostData::Bool(v), &shape)?, x.flavor))
}

fn isnan(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    float_test(it, a, f64::is_nan)
}
fn isinf(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    float_test(it, a, f64::is_infinite)
}
fn isfinite(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    float_test(it, a, f64::is_finite)
}

// ------------------------------------------------------------------ elementwise

/// `round(a, decimals=0)`: half to even; other decimals scale by 10**decimals first, as NumPy.
fn round_array(x: &ArrayValue, decimals: i64) -> Result<Value, Exc> {
    let arr = &x.array;
    if !arr.dtype().is_float() {
        if decimals >= 0 {
            return Ok(wrap(arr.clone(), x.flavor));
        }
        let f = 10f64.powi(-decimals as i32);
        let scaled = Array::binary(
            BinaryOp::Div,
            Operand::Array(&arr.astype(DType::Float64)?),
            Operand::Scalar(Scalar::Float(f)),
        )?;
        let r = scaled.unary(UnaryOp::Round)?;
        let back = Array::binary(
            BinaryOp::Mul,
            Operand::Array(&r),
            Operand::Scalar(Scalar::Float(f)),
        )?;
        return Ok(wrap(back.astype(arr.dtype())?, x.flavor));
    }
    if decimals == 0 {
        return Ok(wrap(arr.unary(UnaryOp::Round)?, x.flavor));
    }
    let (op1, op2, f) = if decimals > 0 {
        (BinaryOp::Mul, BinaryOp::Div, 10f64.powi(decimals as i32))
    } else {
        (BinaryOp::Div, BinaryOp::Mul, 10f64.powi(-decimals as i32))
    };
    let scaled = Array::binary(op1, Operand::Array(arr), Operand::Scalar(Scalar::Float(f)))?;
    let r = scaled.unary(UnaryOp::Round)?;
    Ok(wrap(
        Array::binary(op2, Operand::Array(&r), Operand::Scalar(Scalar::Float(f)))?,
        x.flavor,
    ))
}

fn decimals_arg(a: &mut Args, i: usize) -> Result<i64, Exc> {
    let d = a.take(i, "decimals")?;
    a.take_kw("out");
    a.finish(i + 1)?;
    match d {
        None => Ok(0),
        Some(v) => as_i64(&v).ok_or_else(|| {
            Exc::type_error(format!(
                "'{}' object cannot be interpreted as an integer",
                v.type_name()
            ))
        }),
    }
}

fn round(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "a")?;
    a.pos.remove(0);
    let decimals = decimals_arg(&mut a, 0)?;
    if let Some(f) = as_f64(&x) {
        // A Python number: NumPy returns a float64 scalar.
        let arr = host_array(it, HostData::F64(vec![f]), &[])?;
        let r = round_array(
            &ArrayValue {
                array: arr,
                flavor: Flavor::Numpy,
            },
            decimals,
        )?;
        return match &r {
            Value::Array(v) => crate::object::ops::numpy_scalar(&v.array),
            other => Ok(other.clone()),
        };
    }
    let x = as_array(it, &x)?;
    round_array(&x, decimals)
}

/// A float ufunc of NumPy: integer input computes in float64.
fn float_unary(it: &mut dyn Interpreter, mut a: Args, op: UnaryOp) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    a.take_kw("out");
    a.finish(1)?;
    if let Some(f) = as_f64(&x) {
        let arr = host_array(it, HostData::F64(vec![f]), &[])?;
        return crate::object::ops::numpy_scalar(&arr.unary(op)?);
    }
    let x = as_array(it, &x)?;
    let arr = if matches!(
        op,
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Round | UnaryOp::Sign
    ) && x.array.dtype() != DType::Bool
    {
        x.array.clone()
    } else {
        floated(&x.array)?
    };
    let arr = if op == UnaryOp::Sign
        || arr.dtype().is_float()
        || !matches!(
            op,
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Round
        ) {
        arr.unary(op)?
    } else {
        // Rounding an integer array leaves it as it is (NumPy 1.23 returns a float copy for
        // floor/ceil/trunc of ints).
        arr.astype(DType::Float64)?
    };
    Ok(wrap(arr, x.flavor))
}

macro_rules! unary_fns {
    ($($name:ident => $op:expr),* $(,)?) => {
        $(fn $name(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> { float_unary(it, a, $op) })*
    };
}

unary_fns! {
    f_floor => UnaryOp::Floor, f_ceil => UnaryOp::Ceil, f_trunc => UnaryOp::Trunc,
    f_rint => UnaryOp::Round, f_sign => UnaryOp::Sign, f_log2 => UnaryOp::Log2,
    f_log10 => UnaryOp::Log10, f_tan => UnaryOp::Tan, f_exp => UnaryOp::Exp,
    f_log => UnaryOp::Log, f_sqrt => UnaryOp::Sqrt, f_tanh => UnaryOp::Tanh,
    f_sin => UnaryOp::Sin, f_cos => UnaryOp::Cos,
}

// ------------------------------------------------------------------ linalg

/// LU factorisation with partial pivoting, as LAPACK's unblocked `getf2` (the multipliers are
/// scaled by the pivot's reciprocal): the factors in place, the row swaps' parity, or None
/// when a pivot is exactly zero.
fn lu(m: &mut [f64], n: usize) -> (Vec<usize>, bool, bool) {
    let mut perm: Vec<usize> = (0..n).collect();
    let mut odd = false;
    let mut singular = false;
    for j in 0..n {
        let mut p = j;
        for i in j + 1..n {
            if m[i * n + j].abs() > m[p * n + j].abs() {
                p = i;
            }
        }
        if m[p * n + j] == 0.0 {
            singular = true;
            continue;
        }
        if p != j {
            for k in 0..n {
                m.swap(j * n + k, p * n + k);
            }
            perm.swap(j, p);
            odd = !odd;
        }
        let r = 1.0 / m[j * n + j];
        for i in j + 1..n {
            m[i * n + j] *= r;
        }
        for i in j + 1..n {
            let l = m[i * n + j];
            for k in j + 1..n {
                m[i * n + k] -= l * m[j * n + k];
            }
        }
    }
    (perm, odd, singular)
}

fn square_matrix(it: &mut dyn Interpreter, a: &mut Args) -> Result<(Vec<f64>, usize, DType), Exc> {
    let x = take_array(it, a)?;
    a.finish(0)?;
    let shape = x.array.shape();
    if shape.len() < 2 {
        return Err(Exc::new(
            ExcKind::LinAlgError,
            format!(
                "{}-dimensional array given. Array must be at least two-dimensional",
                shape.len()
            ),
        ));
    }
    if shape.len() > 2 {
        return Err(Exc::type_error(
            "devarray's linalg takes one matrix (no stacks of them)",
        ));
    }
    if shape[0] != shape[1] {
        return Err(Exc::new(
            ExcKind::LinAlgError,
            "Last 2 dimensions of the array must be square",
        ));
    }
    let dtype = if x.array.dtype() == DType::Float32 {
        DType::Float32
    } else {
        DType::Float64
    };
    Ok((f64s(&x.array.to_host()), shape[0], dtype))
}

fn inv(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (mut m, n, dtype) = square_matrix(it, &mut a)?;
    let (perm, _, singular) = lu(&mut m, n);
    if singular {
        return Err(Exc::new(ExcKind::LinAlgError, "Singular matrix"));
    }
    // Solve L U X = P I column by column.
    let mut out = vec![0.0; n * n];
    for c in 0..n {
        let mut col: Vec<f64> = (0..n)
            .map(|i| if perm[i] == c { 1.0 } else { 0.0 })
            .collect();
        for i in 0..n {
            for k in 0..i {
                col[i] -= m[i * n + k] * col[k];
            }
        }
        for i in (0..n).rev() {
            for k in i + 1..n {
                col[i] -= m[i * n + k] * col[k];
            }
            col[i] /= m[i * n + i];
        }
        for i in 0..n {
            out[i * n + c] = col[i];
        }
    }
    let arr = host_array(it, HostData::F64(out), &[n, n])?;
    Ok(np(if dtype == DType::Float32 {
        arr.astype(dtype)?
    } else {
        arr
    }))
}

fn det(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (mut m, n, dtype) = square_matrix(it, &mut a)?;
    let (_, odd, singular) = lu(&mut m, n);
    if singular {
        return Ok(Value::Float(0.0));
    }
    // NumPy goes through the log-determinant: sign * exp(sum of log |u_ii|).
    let mut sign = if odd { -1.0 } else { 1.0 };
    let mut logdet = 0.0;
    for i in 0..n {
        let d = m[i * n + i];
        if d < 0.0 {
            sign = -sign;
        }
        logdet += d.abs().ln();
    }
    let v = sign * logdet.exp();
    if dtype == DType::Float32 {
        return Ok(Value::Float(crate::object::ops::shortest_f32_as_f64(
            v as f32,
        )));
    }
    Ok(Value::Float(v))
}

// ------------------------------------------------------------------ more array functions

/// The product of `dims`, or MemoryError when it cannot be allocated.
fn checked_size(dims: &[usize]) -> Result<usize, Exc> {
    dims.iter()
        .try_fold(1usize, |n, d| n.checked_mul(*d))
        .filter(|n| *n <= isize::MAX as usize / 8)
        .ok_or_else(crate::object::alloc::memory_error)
}

fn int_arg(v: &Value, what: &str) -> Result<i64, Exc> {
    as_i64(v).ok_or_else(|| {
        Exc::type_error(format!(
            "{what}: '{}' object cannot be interpreted as an integer",
            v.type_name()
        ))
    })
}

/// The flat positions of `shape`'s elements along the last axis, lane by lane.
fn repeat(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let n = int_arg(&a.required(0, "repeats")?, "repeat")?;
    let axis = a.take(1, "axis")?;
    a.finish(2)?;
    if n < 0 {
        return Err(Exc::value_error("negative dimensions are not allowed"));
    }
    let n = n as usize;
    let ndim = x.array.ndim();
    let (arr, axis) = match axis_of(axis, ndim.max(1))? {
        None => (x.array.reshape(&[-1])?, 0),
        Some(k) => (x.array.clone(), k),
    };
    let shape = arr.shape().to_vec();
    let inner: usize = shape[axis + 1..].iter().product();
    let len = shape[axis];
    let outer: usize = shape[..axis].iter().product();
    let mut pos = crate::object::alloc::vec(checked_size(&[arr.size(), n])?)?;
    for o in 0..outer {
        for k in 0..len {
            for _ in 0..n {
                pos.extend((0..inner).map(|i| (o * len + k) * inner + i));
            }
        }
    }
    let mut out_shape = shape.clone();
    out_shape[axis] = len * n;
    let h = pick(&arr.to_host(), &pos);
    Ok(wrap(host_array(it, h, &out_shape)?, x.flavor))
}

fn tile(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let reps = a.required(0, "reps")?;
    a.finish(1)?;
    let reps: Vec<usize> = match &reps {
        Value::Tuple(_) | Value::List(_) => it
            .iterate(&reps)?
            .iter()
            .map(|v| int_arg(v, "tile").map(|i| i.max(0) as usize))
            .collect::<Result<_, _>>()?,
        v => vec![int_arg(v, "tile")?.max(0) as usize],
    };
    // Both padded with leading ones to the same length, as NumPy does.
    let nd = reps.len().max(x.array.ndim());
    let mut shape = vec![1usize; nd - x.array.ndim()];
    shape.extend_from_slice(x.array.shape());
    let mut r = vec![1usize; nd - reps.len()];
    r.extend(reps);
    let out_shape: Vec<usize> = shape
        .iter()
        .zip(&r)
        .map(|(d, k)| {
            d.checked_mul(*k)
                .ok_or_else(crate::object::alloc::memory_error)
        })
        .collect::<Result<_, _>>()?;
    let total = checked_size(&out_shape)?;
    let mut pos = crate::object::alloc::vec(total)?;
    let mut idx = vec![0usize; nd];
    for _ in 0..total {
        let mut p = 0;
        for k in 0..nd {
            p = p * shape[k] + idx[k] % shape[k].max(1);
        }
        pos.push(p);
        for k in (0..nd).rev() {
            idx[k] += 1;
            if idx[k] < out_shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    let h = pick(&x.array.to_host(), &pos);
    Ok(wrap(host_array(it, h, &out_shape)?, x.flavor))
}

fn diag(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let k = a.take(0, "k")?.map_or(Ok(0), |v| int_arg(&v, "diag"))?;
    a.finish(1)?;
    let shape = x.array.shape().to_vec();
    match shape.as_slice() {
        [n] => {
            let m = usize::try_from(k.unsigned_abs())
                .ok()
                .and_then(|k| n.checked_add(k))
                .ok_or_else(crate::object::alloc::memory_error)?;
            let vals = f64s(&x.array.to_host());
            let mut out = crate::object::alloc::vec(checked_size(&[m, m])?)?;
            out.resize(m * m, 0.0);
            for (i, v) in vals.iter().enumerate() {
                let (r, c) = if k >= 0 {
                    (i, i + k as usize)
                } else {
                    (i + (-k) as usize, i)
                };
                out[r * m + c] = *v;
            }
            let arr = host_array(it, HostData::F64(out), &[m, m])?.astype(x.array.dtype())?;
            Ok(wrap(arr, x.flavor))
        }
        [rows, cols] => {
            let (r0, c0) = if k >= 0 {
                (0, k as usize)
            } else {
                ((-k) as usize, 0)
            };
            let len = rows.saturating_sub(r0).min(cols.saturating_sub(c0));
            let pos: Vec<usize> = (0..len).map(|i| (r0 + i) * cols + c0 + i).collect();
            let h = pick(&x.array.to_host(), &pos);
            Ok(wrap(host_array(it, h, &[len])?, x.flavor))
        }
        _ => Err(Exc::value_error("Input must be 1- or 2-d.")),
    }
}

fn trace(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    a.finish(0)?;
    if x.array.ndim() != 2 {
        return Err(Exc::value_error(
            "diag requires an array of at least two dimensions",
        ));
    }
    let d = diag(it, Args::new("diag", vec![Value::Array(x)]))?;
    let Value::Array(d) = &d else {
        return Ok(d);
    };
    let sum = d.array.reduce(ReduceOp::Sum, None, false)?;
    crate::object::ops::numpy_scalar(&sum)
}

fn diff(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let n = a.take(0, "n")?.map_or(Ok(1), |v| int_arg(&v, "diff"))?;
    let axis = a.take(1, "axis")?;
    a.finish(2)?;
    if n < 0 {
        return Err(Exc::value_error(format!(
            "order must be non-negative but got {n}"
        )));
    }
    let ndim = x.array.ndim();
    if ndim == 0 {
        return Err(Exc::value_error(
            "diff requires input that is at least one dimensional",
        ));
    }
    let axis = axis_of(axis.or(Some(Value::Int(-1))), ndim)?.unwrap_or(ndim - 1);
    let mut arr = x.array.clone();
    for _ in 0..n {
        let cut = |start: Option<i64>, stop: Option<i64>| {
            let mut items = vec![
                IndexItem::Slice {
                    start: None,
                    stop: None,
                    step: None
                };
                axis
            ];
            items.push(IndexItem::Slice {
                start,
                stop,
                step: None,
            });
            items
        };
        let hi = arr.index(&cut(Some(1), None))?;
        let lo = arr.index(&cut(None, Some(-1)))?;
        arr = if arr.dtype() == DType::Bool {
            Array::binary(BinaryOp::Ne, Operand::Array(&hi), Operand::Array(&lo))?
        } else {
            Array::binary(BinaryOp::Sub, Operand::Array(&hi), Operand::Array(&lo))?
        };
    }
    Ok(wrap(arr, x.flavor))
}

fn cumprod(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let axis = a.take(0, "axis")?;
    a.finish(1)?;
    let ndim = x.array.ndim();
    let (arr, axis) = match axis_of(axis, ndim.max(1))? {
        None => (x.array.reshape(&[-1])?, 0),
        Some(k) => (x.array.clone(), k),
    };
    let shape = arr.shape().to_vec();
    let inner: usize = shape[axis + 1..].iter().product();
    let len = shape[axis];
    let dtype = if arr.dtype() == DType::Bool || arr.dtype() == DType::Int32 {
        DType::Int64
    } else {
        arr.dtype()
    };
    let out = match arr.astype(dtype)?.to_host() {
        HostData::I64(mut v) => {
            for (i, _) in (0..v.len())
                .enumerate()
                .filter(|(i, _)| (i / inner) % len.max(1) != 0)
            {
                v[i] = v[i].wrapping_mul(v[i - inner]);
            }
            HostData::I64(v)
        }
        HostData::F32(mut v) => {
            for (i, _) in (0..v.len())
                .enumerate()
                .filter(|(i, _)| (i / inner) % len.max(1) != 0)
            {
                v[i] *= v[i - inner];
            }
            HostData::F32(v)
        }
        other => {
            let mut v = f64s(&other);
            for (i, _) in (0..v.len())
                .enumerate()
                .filter(|(i, _)| (i / inner) % len.max(1) != 0)
            {
                v[i] *= v[i - inner];
            }
            HostData::F64(v)
        }
    };
    Ok(wrap(host_array(it, out, &shape)?, x.flavor))
}

fn bincount(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let weights = a.take(0, "weights")?.filter(|v| !matches!(v, Value::None));
    let minlength = a
        .take(1, "minlength")?
        .map_or(Ok(0), |v| int_arg(&v, "bincount"))?;
    a.finish(2)?;
    if x.array.ndim() != 1 {
        return Err(Exc::value_error("object too deep for desired array"));
    }
    if x.array.dtype().is_float() {
        return Err(Exc::type_error("Cannot cast array data from dtype('float64') to dtype('int64') according to the rule 'safe'"));
    }
    let idx: Vec<i64> = f64s(&x.array.to_host())
        .into_iter()
        .map(|v| v as i64)
        .collect();
    if idx.iter().any(|i| *i < 0) {
        return Err(Exc::value_error(
            "'list' argument must have no negative elements",
        ));
    }
    let n = (idx.iter().max().map_or(0, |m| m + 1)).max(minlength.max(0)) as usize;
    checked_size(&[n])?;
    let out = match weights {
        None => {
            let mut c = crate::object::alloc::vec(n)?;
            c.resize(n, 0i64);
            for i in &idx {
                c[*i as usize] += 1;
            }
            HostData::I64(c)
        }
        Some(w) => {
            let w = f64s(&as_array(it, &w)?.array.to_host());
            if w.len() != idx.len() {
                return Err(Exc::value_error(
                    "The weights and list don't have the same length.",
                ));
            }
            let mut c = crate::object::alloc::vec(n)?;
            c.resize(n, 0f64);
            for (i, wt) in idx.iter().zip(&w) {
                c[*i as usize] += wt;
            }
            HostData::F64(c)
        }
    };
    Ok(np(host_array(it, out, &[n])?))
}

/// The lanes a statistic reduces: the whole array (axis None) or each line along `axis`, each
/// sorted (NaN last), with the shape of the result.
fn sorted_lanes(x: &ArrayValue, axis: Option<Value>) -> Result<(Vec<Vec<f64>>, Vec<usize>), Exc> {
    let ndim = x.array.ndim();
    let axis = match axis {
        None | Some(Value::None) => None,
        v => axis_of(v, ndim.max(1))?,
    };
    let shape = x.array.shape().to_vec();
    let vals = f64s(&x.array.to_host());
    let (mut lanes, out_shape) = match axis {
        None => (vec![vals], Vec::new()),
        Some(k) if ndim == 0 => {
            let _ = k;
            (vec![vals], Vec::new())
        }
        Some(k) => {
            let n = shape[k];
            let inner: usize = shape[k + 1..].iter().product();
            let outer: usize = shape[..k].iter().product();
            let mut lanes = Vec::with_capacity(outer * inner);
            for o in 0..outer {
                for i in 0..inner {
                    lanes.push(
                        (0..n)
                            .map(|j| vals[(o * n + j) * inner + i])
                            .collect::<Vec<f64>>(),
                    );
                }
            }
            let mut out_shape = shape.clone();
            out_shape.remove(k);
            (lanes, out_shape)
        }
    };
    for lane in &mut lanes {
        lane.sort_by(|a, b| total_lt(*a, *b));
    }
    Ok((lanes, out_shape))
}

fn median(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let axis = a.take(0, "axis")?;
    a.take_kw("out");
    a.take_kw("overwrite_input");
    a.finish(1)?;
    let (lanes, shape) = sorted_lanes(&x, axis)?;
    let out: Vec<f64> = lanes
        .iter()
        .map(|v| {
            let n = v.len();
            if n == 0 || v.last().is_some_and(|l| l.is_nan()) {
                f64::NAN
            } else if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            }
        })
        .collect();
    let mut arr = host_array(it, HostData::F64(out), &shape)?;
    if x.array.dtype() == DType::Float32 {
        arr = arr.astype(DType::Float32)?;
    }
    if shape.is_empty() {
        return crate::object::ops::numpy_scalar(&arr);
    }
    Ok(np(arr))
}

/// NumPy's linear interpolation between neighbours (`_lerp`, exact at both ends).
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let d = b - a;
    if t >= 0.5 {
        b - d * (1.0 - t)
    } else {
        a + d * t
    }
}

fn quantile_impl(it: &mut dyn Interpreter, mut a: Args, scale: f64) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let q = a.required(0, "q")?;
    let axis = a.take(1, "axis")?;
    a.finish(2)?;
    let qs = as_array(it, &q)?;
    let qv = f64s(&qs.array.to_host());
    if qv.iter().any(|q| !(0.0..=scale).contains(q)) {
        return Err(Exc::value_error(if scale == 100.0 {
            "Percentiles must be in the range [0, 100]"
        } else {
            "Quantiles must be in the range [0, 1]"
        }));
    }
    let (lanes, lane_shape) = sorted_lanes(&x, axis)?;
    // The q axes come first, then the reduced array's.
    let mut out = Vec::with_capacity(qv.len() * lanes.len());
    for q in &qv {
        for v in &lanes {
            let n = v.len();
            out.push(if n == 0 {
                f64::NAN
            } else {
                let pos = q / scale * (n - 1) as f64;
                let lo = pos.floor() as usize;
                let hi = (lo + 1).min(n - 1);
                lerp(v[lo], v[hi], pos - lo as f64)
            });
        }
    }
    let mut shape = qs.array.shape().to_vec();
    shape.extend_from_slice(&lane_shape);
    let arr = host_array(it, HostData::F64(out), &shape)?;
    if shape.is_empty() {
        return crate::object::ops::numpy_scalar(&arr);
    }
    Ok(np(arr))
}

fn percentile(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    quantile_impl(it, a, 100.0)
}

fn quantile(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    quantile_impl(it, a, 1.0)
}

/// A float function computed on the host: float32 stays float32, anything else is float64.
fn host_unary(it: &mut dyn Interpreter, mut a: Args, f: fn(f64) -> f64) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    a.take_kw("out");
    a.finish(1)?;
    if let Some(v) = as_f64(&x) {
        return Ok(Value::Float(f(v)));
    }
    let x = as_array(it, &x)?;
    let v: Vec<f64> = f64s(&x.array.to_host()).into_iter().map(f).collect();
    let shape = x.array.shape().to_vec();
    let mut arr = host_array(it, HostData::F64(v), &shape)?;
    if x.array.dtype() == DType::Float32 {
        arr = arr.astype(DType::Float32)?;
    }
    if arr.ndim() == 0 {
        return crate::object::ops::numpy_scalar(&arr);
    }
    Ok(wrap(arr, x.flavor))
}

/// `f` of every element, computed in double precision and rounded once to the result dtype
/// (float64 stays, everything else becomes float32), on `x`'s device: the dialects'
/// functions that have no kernel of their own (`sinh`, `cosh`).
pub(crate) fn map_f64(it: &dyn Interpreter, x: &Array, f: fn(f64) -> f64) -> Result<Array, Exc> {
    let values: Vec<f64> = f64s(&x.to_host()).into_iter().map(f).collect();
    let dtype = match x.dtype() {
        DType::Float64 => DType::Float64,
        _ => DType::Float32,
    };
    let rt = &it.state().rt;
    let host = rt.from_host(HostData::F64(values), x.shape(), Device::cpu(0))?;
    Ok(host.astype(dtype)?.copy_to(rt, x.device())?)
}

fn log1p(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    host_unary(it, a, f64::ln_1p)
}

fn expm1(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    host_unary(it, a, f64::exp_m1)
}

fn logical(it: &mut dyn Interpreter, mut a: Args, op: BinaryOp) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    let y = a.required(0, "x2")?;
    a.take_kw("out");
    a.finish(1)?;
    let y = as_array(it, &y)?;
    let (p, q) = (x.array.astype(DType::Bool)?, y.array.astype(DType::Bool)?);
    let out = Array::binary(op, Operand::Array(&p), Operand::Array(&q))
        .map_err(crate::object::ops::numpy_error)?;
    Ok(wrap(out, x.flavor))
}

fn logical_and(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    logical(it, a, BinaryOp::And)
}
fn logical_or(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    logical(it, a, BinaryOp::Or)
}
fn logical_xor(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    logical(it, a, BinaryOp::Xor)
}

fn logical_not(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_array(it, &mut a)?;
    a.take_kw("out");
    a.finish(0)?;
    Ok(wrap(
        x.array.astype(DType::Bool)?.unary(UnaryOp::Not)?,
        x.flavor,
    ))
}

pub(crate) fn meshgrid(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let indexing = match &a.take_kw("indexing") {
        None => "xy".to_string(),
        Some(Value::Str(s)) if matches!(&**s, "xy" | "ij") => s.to_string(),
        Some(_) => {
            return Err(Exc::value_error(
                "Valid values for `indexing` are 'xy' and 'ij'.",
            ))
        }
    };
    a.take_kw("sparse");
    a.take_kw("copy");
    let xs: Vec<ArrayValue> = std::mem::take(&mut a.pos)
        .iter()
        .map(|v| {
            as_array(it, v).and_then(|x| {
                Ok(ArrayValue {
                    array: x.array.reshape(&[-1])?,
                    flavor: x.flavor,
                })
            })
        })
        .collect::<Result<_, _>>()?;
    a.finish(0)?;
    let mut shape: Vec<usize> = xs.iter().map(|x| x.array.size()).collect();
    if indexing == "xy" && shape.len() > 1 {
        shape.swap(0, 1);
    }
    let total = checked_size(&shape)?;
    let mut out = Vec::new();
    for (i, x) in xs.iter().enumerate() {
        // The axis this input varies along in the output.
        let axis = if indexing == "xy" && xs.len() > 1 && i < 2 {
            1 - i
        } else {
            i
        };
        let inner: usize = shape[axis + 1..].iter().product();
        let len = shape[axis];
        let mut pos = crate::object::alloc::vec(total)?;
        pos.extend((0..total).map(|p| (p / inner.max(1)) % len.max(1)));
        let h = pick(&x.array.to_host(), &pos);
        out.push(wrap(host_array(it, h, &shape)?, x.flavor));
    }
    Ok(Value::list(out))
}

fn dtype_fn(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let d = a.required(0, "dtype")?;
    a.take_kw("align");
    a.take_kw("copy");
    a.finish(1)?;
    let d = arrays::dtype_arg(&d)?.unwrap_or(DType::Float64);
    Ok(Value::DType(d, Flavor::Numpy))
}

// ------------------------------------------------------------------ installation

/// Methods NumPy arrays have beyond the shared ones.
/// `x.name(...)` as the array's own module's `name(x, ...)` (`numpy` or `mxnet.np`): one
/// implementation per dialect serves the function and the method.
fn module_function(
    it: &mut dyn Interpreter,
    x: &Value,
    name: &str,
    mut a: Args,
) -> Result<Value, Exc> {
    let module = match x.as_array().map(|x| x.flavor) {
        Some(Flavor::Np) => "mxnet.np",
        _ => "numpy",
    };
    let f = it
        .import(module)?
        .get(name)
        .ok_or_else(|| Exc::type_error(format!("{name}() is not available")))?;
    a.pos.insert(0, x.clone());
    it.call_value(&f, a)
}

pub fn get_attr(_it: &mut dyn Interpreter, v: &Value, name: &str) -> Result<Option<Value>, Exc> {
    // PyTorch's methods of these names differ (`std` is unbiased, `sort` returns values and
    // indices, `nonzero` one index matrix) and MXNet's legacy NDArray lacks them; MXNet's numpy
    // mode shares NumPy's `std`/`var`/`ravel` (and `repeat` and `nonzero`, which call the
    // array's module's functions).
    let flavor = v.as_array().map(|x| x.flavor);
    let shared = matches!(name, "std" | "var" | "ravel" | "repeat" | "nonzero");
    if !(flavor == Some(Flavor::Numpy) || (flavor == Some(Flavor::Np) && shared)) {
        return Ok(None);
    }
    if let Some(x) = v.as_array() {
        match name {
            "nbytes" => {
                return Ok(Some(Value::Int(
                    (x.array.size() * x.array.dtype().size_bytes()) as i64,
                )))
            }
            "itemsize" => return Ok(Some(Value::Int(x.array.dtype().size_bytes() as i64))),
            _ => {}
        }
    }
    let (name, doc, f): (&'static str, &'static str, MethodFn) = match name {
        "swapaxes" => ("swapaxes", "x.swapaxes(axis1, axis2): x with two axes exchanged.", |it, r, mut a| {
            a.pos.insert(0, r.clone());
            swapaxes(it, a)
        }),
        "fill" => ("fill", "x.fill(value): set every element to value, in place.", |_, r, mut a| {
            let value = a.required(0, "value")?;
            a.finish(1)?;
            let x = r.as_array().cloned().ok_or_else(|| Exc::type_error("fill() needs an array"))?;
            let s = crate::object::ops::as_scalar(&value)
                .ok_or_else(|| Exc::type_error(format!("fill() takes a number, not {}", value.type_name())))?;
            let all = IndexItem::Slice { start: None, stop: None, step: None };
            let items = if x.array.ndim() == 0 { vec![IndexItem::Ellipsis] } else { vec![all] };
            x.array.set_index(&items, Operand::Scalar(s))?;
            Ok(Value::None)
        }),
        "std" => ("std", "x.std(axis=None, dtype=None, out=None, ddof=0, keepdims=False): the standard deviation.", |it, r, a| {
            let x = r.as_array().cloned().ok_or_else(|| Exc::type_error("std() needs an array"))?;
            moment(it, &x, a, true)
        }),
        "var" => ("var", "x.var(axis=None, dtype=None, out=None, ddof=0, keepdims=False): the variance.", |it, r, a| {
            let x = r.as_array().cloned().ok_or_else(|| Exc::type_error("var() needs an array"))?;
            moment(it, &x, a, false)
        }),
        "ravel" => ("ravel", "x.ravel(): the elements as a 1-D array.", |it, r, mut a| {
            a.pos.insert(0, r.clone());
            ravel(it, a)
        }),
        "repeat" => ("repeat", "x.repeat(repeats, axis=None): the array's module's repeat(x, repeats, axis).", |it, r, a| {
            module_function(it, r, "repeat", a)
        }),
        "argsort" => ("argsort", "x.argsort(axis=-1): the indices that sort x along an axis.", |it, r, mut a| {
            a.pos.insert(0, r.clone());
            argsort(it, a)
        }),
        "sort" => ("sort", "x.sort(axis=-1): sort x in place along an axis.", |it, r, mut a| {
            let x = r.as_array().cloned().ok_or_else(|| Exc::type_error("sort() needs an array"))?;
            let axis = sort_args(it, &x, &mut a, 0)?.unwrap_or(0);
            let s = sorted(it, &x, Some(axis), false)?;
            s.copy_into(&x.array)?;
            Ok(Value::None)
        }),
        "round" => ("round", "x.round(decimals=0): rounded half to even.", |_, r, mut a| {
            let x = r.as_array().cloned().ok_or_else(|| Exc::type_error("round() needs an array"))?;
            let decimals = decimals_arg(&mut a, 0)?;
            round_array(&x, decimals)
        }),
        "nonzero" => ("nonzero", "x.nonzero(): the indices of the nonzero elements, per axis.", |it, r, a| {
            module_function(it, r, "nonzero", a)
        }),
        _ => return Ok(None),
    };
    Ok(Some(method(v, name, doc, f)))
}

/// The functions of this file, for `import numpy`.
pub(crate) fn functions() -> Vec<(&'static str, &'static str, BuiltinFn)> {
    vec![
        ("linspace", "linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None): num evenly spaced values.", linspace),
        ("asarray", "asarray(a, dtype=None): a as an array (a itself when it is one of that dtype).", asarray),
        ("asanyarray", "asanyarray(a, dtype=None): a as an array (a itself when it is one of that dtype).", asarray),
        ("std", "std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False): the standard deviation.", f_std),
        ("var", "var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False): the variance.", f_var),
        ("ravel", "ravel(a): the elements as a 1-D array.", ravel),
        ("squeeze", "squeeze(a, axis=None): a without its axes of length 1 (only those of axis when given).", squeeze),
        ("expand_dims", "expand_dims(a, axis): a with axes of length 1 inserted at axis (an int or a tuple).", expand_dims),
        ("histogram", "histogram(a, bins=10, range=None): counts in equal-width bins, and the bin edges.", histogram),
        ("swapaxes", "swapaxes(a, axis1, axis2): a with two axes exchanged.", swapaxes),
        ("moveaxis", "moveaxis(a, source, destination): a with one axis moved to a new position.", moveaxis),
        ("flip", "flip(m, axis=None): the elements in reverse order along the axes (all by default).", flip),
        ("atleast_1d", "atleast_1d(a): a with at least one axis.", atleast_1d),
        ("atleast_2d", "atleast_2d(a): a with at least two axes (a 1-D array becomes one row).", atleast_2d),
        ("vstack", "vstack(tup): arrays stacked as rows (1-D arrays become rows).", vstack),
        ("hstack", "hstack(tup): arrays joined along the second axis (the first for 1-D arrays).", hstack),
        ("split", "split(ary, indices_or_sections, axis=0): equal parts, or parts cut at the indices.", split),
        ("array_split", "array_split(ary, indices_or_sections, axis=0): as split, parts may differ by one.", array_split),
        ("outer", "outer(a, b): the outer product of two vectors (flattened first).", outer),
        ("where", "where(condition, x, y): x where condition holds, else y; where(condition): nonzero(condition).", where_),
        ("nonzero", "nonzero(a): the indices of the nonzero elements, one array per axis.", nonzero),
        ("count_nonzero", "count_nonzero(a): how many elements are nonzero.", count_nonzero),
        ("sort", "sort(a, axis=-1): a sorted copy (axis=None: flattened).", sort),
        ("argsort", "argsort(a, axis=-1): the indices that sort a along an axis.", argsort),
        ("unique", "unique(ar, return_index=False, return_inverse=False, return_counts=False): the sorted distinct values.", unique),
        ("isclose", "isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False): |a - b| <= atol + rtol * |b|, elementwise.", isclose),
        ("allclose", "allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False): whether isclose holds everywhere.", allclose),
        ("array_equal", "array_equal(a1, a2, equal_nan=False): same shape and elements.", array_equal),
        ("isnan", "isnan(x): where x is NaN.", isnan),
        ("isinf", "isinf(x): where x is infinite.", isinf),
        ("isfinite", "isfinite(x): where x is neither infinite nor NaN.", isfinite),
        ("round", "round(a, decimals=0): rounded half to even.", round),
        ("around", "around(a, decimals=0): rounded half to even.", round),
        ("floor", "floor(x): the largest integer <= x, elementwise.", f_floor),
        ("ceil", "ceil(x): the smallest integer >= x, elementwise.", f_ceil),
        ("trunc", "trunc(x): x rounded towards zero, elementwise.", f_trunc),
        ("rint", "rint(x): x rounded to the nearest integer (half to even), elementwise.", f_rint),
        ("sign", "sign(x): -1, 0 or 1, elementwise.", f_sign),
        ("log2", "log2(x): base-2 logarithm, elementwise.", f_log2),
        ("log10", "log10(x): base-10 logarithm, elementwise.", f_log10),
        ("tan", "tan(x): tangent, elementwise.", f_tan),
        ("exp", "exp(x): e to the x, elementwise.", f_exp),
        ("log", "log(x): natural logarithm, elementwise.", f_log),
        ("sqrt", "sqrt(x): square root, elementwise.", f_sqrt),
        ("tanh", "tanh(x): hyperbolic tangent, elementwise.", f_tanh),
        ("sin", "sin(x): sine, elementwise.", f_sin),
        ("cos", "cos(x): cosine, elementwise.", f_cos),
        ("dtype", "dtype(obj): the data type object named by obj ('float32', np.int64...).", dtype_fn),
        ("repeat", "repeat(a, repeats, axis=None): each element repeated (a flattened when no axis).", repeat),
        ("tile", "tile(A, reps): A repeated reps times along each axis.", tile),
        ("diag", "diag(v, k=0): a diagonal matrix from a vector, or the k-th diagonal of a matrix.", diag),
        ("trace", "trace(a): the sum of the main diagonal.", trace),
        ("diff", "diff(a, n=1, axis=-1): the n-th differences along an axis.", diff),
        ("cumprod", "cumprod(a, axis=None): running products (flattened when no axis).", cumprod),
        ("bincount", "bincount(x, weights=None, minlength=0): how often each non-negative int occurs (or its summed weights).", bincount),
        ("median", "median(a, axis=None): the median (of the flattened array when no axis).", median),
        ("percentile", "percentile(a, q, axis=None): the q-th percentiles (linear interpolation).", percentile),
        ("quantile", "quantile(a, q, axis=None): the q-th quantiles (linear interpolation).", quantile),
        ("log1p", "log1p(x): log(1 + x), accurate for small x.", log1p),
        ("expm1", "expm1(x): exp(x) - 1, accurate for small x.", expm1),
        ("logical_and", "logical_and(x1, x2): x1 and x2, elementwise.", logical_and),
        ("logical_or", "logical_or(x1, x2): x1 or x2, elementwise.", logical_or),
        ("logical_xor", "logical_xor(x1, x2): x1 xor x2, elementwise.", logical_xor),
        ("logical_not", "logical_not(x): not x, elementwise.", logical_not),
        ("meshgrid", "meshgrid(*xi, indexing='xy'): coordinate matrices from coordinate vectors.", meshgrid),
    ]
}

/// Adds this file's functions, the scalar types and `linalg.inv`/`det` to the module `numpy`.
pub fn install(m: &Module) {
    for (name, doc, f) in functions() {
        m.set(name, builtin(name, doc, f));
    }
    super::scalars::install(m);
    if let Some(Value::Module(linalg)) = &m.get("linalg") {
        linalg.set(
            "inv",
            builtin(
                "inv",
                "inv(a): the inverse of a square matrix (LinAlgError when singular).",
                inv,
            ),
        );
        linalg.set(
            "det",
            builtin("det", "det(a): the determinant of a square matrix.", det),
        );
        linalg.set("LinAlgError", Value::ExcType(ExcKind::LinAlgError));
    }
}
