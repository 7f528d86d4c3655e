//! Reductions beyond the runtime's sum/mean/max/min/prod: NumPy's `nansum`, `nanmean`,
//! `nanmax`, `nanmin`, `nanstd`, `nanvar`, `ptp`, `average` (weights), `cov`, `corrcoef`,
//! `histogram2d`; PyTorch's `logsumexp`, `std`/`var` (`unbiased=`, `correction=`, composed on
//! the tape), `cumprod`, `nansum`, `nanmean`, `cov`, `corrcoef`, `histc`, as functions and
//! tensor methods. The NaN-aware ones run on host copies along one axis (or all), in double
//! precision, rounded once to the result dtype.

use crate::modules::array::arrays::TORCH;
use crate::modules::array::numpy_fns::as_array;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, ArrayValue, BuiltinFn, Flavor, Module, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{
    Array, BinaryOp, DType, Device, HostData, Operand, ReduceOp, Scalar, UnaryOp,
};

use crate::modules::array::fn_args::{array_arg, first_array, flavor_of, result};

/// An axis in range, in the dialect's words when not.
fn axis_in(i: i64, ndim: usize, flavor: Flavor) -> Result<usize, Exc> {
    let n = ndim.max(1) as i64;
    let pos = if i < 0 { i + n } else { i };
    if pos < 0 || pos >= n {
        return Err(match flavor {
            Flavor::Torch => Exc::new(
                ExcKind::IndexError,
                format!(
                    "Dimension out of range (expected to be in range of [{}, {}], but got {i})",
                    -n,
                    n - 1
                ),
            ),
            _ => Exc::new(
                ExcKind::AxisError,
                format!("axis {i} is out of bounds for array of dimension {ndim}"),
            ),
        });
    }
    Ok(pos as usize)
}

fn axis_value(v: Option<Value>, ndim: usize, flavor: Flavor) -> Result<Option<usize>, Exc> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(v) => {
            let i = as_i64(&v).ok_or_else(|| {
                Exc::type_error(format!(
                    "'{}' object cannot be interpreted as an integer",
                    v.type_name()
                ))
            })?;
            axis_in(i, ndim, flavor).map(Some)
        }
    }
}

/// `f` of each lane along `axis` (of everything when None): the values and the result shape.
fn reduce_lanes(
    values: &[f64],
    shape: &[usize],
    axis: Option<usize>,
    keepdims: bool,
    f: &dyn Fn(&[f64]) -> f64,
) -> (Vec<f64>, Vec<usize>) {
    let Some(ax) = axis else {
        let out_shape = if keepdims {
            vec![1; shape.len()]
        } else {
            vec![]
        };
        return (vec![f(values)], out_shape);
    };
    let len = shape.get(ax).copied().unwrap_or(1);
    let inner: usize = shape.get(ax + 1..).map_or(1, |s| s.iter().product());
    let outer: usize = shape.get(..ax).map_or(1, |s| s.iter().product());
    let mut out = Vec::with_capacity(outer * inner);
    let mut lane = Vec::with_capacity(len);
    for o in 0..outer {
        for i in 0..inner {
            lane.clear();
            lane.extend((0..len).map(|k| values[(o * len + k) * inner + i]));
            out.push(f(&lane));
        }
    }
    let mut out_shape = shape.to_vec();
    if keepdims {
        out_shape[ax] = 1;
    } else {
        out_shape.remove(ax);
    }
    (out, out_shape)
}

fn make(
    it: &mut dyn Interpreter,
    v: Vec<f64>,
    shape: &[usize],
    dtype: DType,
    device: Device,
) -> Result<Array, Exc> {
    let rt = &it.state().rt;
    let host = rt.from_host(HostData::F64(v), shape, Device::cpu(0))?;
    let cast = if dtype == DType::Float64 {
        host
    } else {
        host.astype(dtype)?
    };
    Ok(cast.copy_to(rt, device)?)
}

fn float_of(d: DType, flavor: Flavor) -> DType {
    match d {
        DType::Float32 | DType::Float64 => d,
        _ if flavor == Flavor::Numpy => DType::Float64,
        _ => DType::Float32,
    }
}

// ------------------------------------------------------------------ NaN-aware (NumPy)

#[derive(Clone, Copy)]
enum Nan {
    Sum,
    Mean,
    Max,
    Min,
    Std,
    Var,
    Ptp,
}

fn nan_reduce(
    it: &mut dyn Interpreter,
    flavor: Flavor,
    mut a: Args,
    kind: Nan,
) -> Result<Value, Exc> {
    let x = first_array(it, flavor, &mut a, "a")?;
    let nd = x.array.ndim();
    let axis_name = if flavor == Flavor::Torch {
        "dim"
    } else {
        "axis"
    };
    let axis = axis_value(a.take(1, axis_name)?, nd, flavor)?;
    let mut ddof = 0.0;
    let keepdims;
    if flavor == Flavor::Torch {
        keepdims = a.flag(2, "keepdim", false)?;
        a.take_kw("dtype");
    } else {
        a.take(2, "dtype")?;
        a.take(3, "out")?;
        if matches!(kind, Nan::Std | Nan::Var) {
            ddof = a.take(4, "ddof")?.and_then(|v| as_f64(&v)).unwrap_or(0.0);
            keepdims = a.flag(5, "keepdims", false)?;
        } else {
            keepdims = a.flag(4, "keepdims", false)?;
        }
        a.take_kw("initial");
        a.take_kw("where");
    }
    a.finish(6)?;
    let dtype = x.array.dtype();
    let is_float = dtype.is_float();
    let values = x.array.to_host().to_f64_vec();
    let shape = x.array.shape().to_vec();
    if values.is_empty() && matches!(kind, Nan::Max | Nan::Min | Nan::Ptp) && axis.is_none() {
        return Err(Exc::value_error(format!(
            "zero-size array to reduction operation {} which has no identity",
            match kind {
                Nan::Min => "fmin",
                Nan::Ptp => "maximum",
                _ => "fmax",
            }
        )));
    }
    let f = move |lane: &[f64]| -> f64 {
        let kept: Vec<f64> = lane.iter().copied().filter(|v| !v.is_nan()).collect();
        let n = kept.len() as f64;
        match kind {
            Nan::Sum => kept.iter().sum(),
            Nan::Mean => kept.iter().sum::<f64>() / n,
            Nan::Max => {
                kept.iter()
                    .copied()
                    .fold(f64::NAN, |m, v| if m.is_nan() || v > m { v } else { m })
            }
            Nan::Min => {
                kept.iter()
                    .copied()
                    .fold(f64::NAN, |m, v| if m.is_nan() || v < m { v } else { m })
            }
            Nan::Ptp => {
                // ptp propagates NaN, as max - min does.
                if lane.iter().any(|v| v.is_nan()) {
                    return f64::NAN;
                }
                let hi = lane.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let lo = lane.iter().copied().fold(f64::INFINITY, f64::min);
                hi - lo
            }
            Nan::Std | Nan::Var => {
                let mean = kept.iter().sum::<f64>() / n;
                let ss: f64 = kept.iter().map(|v| (v - mean) * (v - mean)).sum();
                let var = ss / (n - ddof).max(0.0);
                if matches!(kind, Nan::Std) {
                    var.sqrt()
                } else {
                    var
                }
            }
        }
    };
    let (out, out_shape) = reduce_lanes(&values, &shape, axis, keepdims, &f);
    if matches!(kind, Nan::Max | Nan::Min)
        && is_float
        && out.iter().any(|v| v.is_nan())
        && flavor != Flavor::Torch
    {
        crate::modules::python::stdlib::warnings::warn(
            it,
            "RuntimeWarning",
            "All-NaN slice encountered",
        )?;
    }
    if matches!(kind, Nan::Mean)
        && is_float
        && out.iter().any(|v| v.is_nan())
        && flavor != Flavor::Torch
    {
        crate::modules::python::stdlib::warnings::warn(
            it,
            "RuntimeWarning",
            "Mean of empty slice",
        )?;
    }
    let out_dtype = match kind {
        Nan::Sum | Nan::Max | Nan::Min | Nan::Ptp if !is_float => {
            if dtype == DType::Bool {
                DType::Int64
            } else {
                dtype
            }
        }
        _ => float_of(dtype, flavor),
    };
    let arr = make(it, out, &out_shape, out_dtype, x.array.device())?;
    result(arr, x.flavor)
}

macro_rules! nan_fns {
    ($($name:ident => $kind:expr),* $(,)?) => {
        $(fn $name<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
            nan_reduce(it, flavor_of::<F>(), a, $kind)
        })*
    };
}

nan_fns! {
    nansum => Nan::Sum, nanmean => Nan::Mean, nanmax => Nan::Max, nanmin => Nan::Min,
    nanstd => Nan::Std, nanvar => Nan::Var, ptp => Nan::Ptp,
}

/// `average(a, axis=None, weights=None, returned=False, keepdims=False)`.
fn average(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "a")?;
    let x = as_array(it, &x)?;
    let nd = x.array.ndim();
    let axis = axis_value(a.take(1, "axis")?, nd, Flavor::Numpy)?;
    let weights = a.take(2, "weights")?;
    let returned = a.flag(3, "returned", false)?;
    let keepdims = a.flag(4, "keepdims", false)?;
    a.finish(5)?;
    let values = x.array.to_host().to_f64_vec();
    let shape = x.array.shape().to_vec();
    let dtype = float_of(x.array.dtype(), Flavor::Numpy);
    let weights = match weights {
        None | Some(Value::None) => None,
        Some(w) => Some(as_array(it, &w)?),
    };
    let (out, wsum, out_shape) = match &weights {
        None => {
            let (m, s) = reduce_lanes(&values, &shape, axis, keepdims, &|l| {
                l.iter().sum::<f64>() / l.len() as f64
            });
            let count = axis.map_or(values.len(), |k| shape[k]) as f64;
            let n = m.len();
            (m, vec![count; n], s)
        }
        Some(w) => {
            let wv = w.array.to_host().to_f64_vec();
            let full: Vec<f64> = if w.array.shape() == shape.as_slice() {
                wv
            } else {
                let Some(k) = axis else {
                    return Err(Exc::type_error(
                        "Axis must be specified when shapes of a and weights differ.",
                    ));
                };
                if w.array.ndim() != 1 {
                    return Err(Exc::type_error(
                        "1D weights expected when shapes of a and weights differ.",
                    ));
                }
                if w.array.shape()[0] != shape[k] {
                    return Err(Exc::value_error(
                        "Length of weights not compatible with specified axis.",
                    ));
                }
                let inner: usize = shape[k + 1..].iter().product();
                (0..values.len())
                    .map(|p| wv[(p / inner) % shape[k]])
                    .collect()
            };
            let prod: Vec<f64> = values.iter().zip(&full).map(|(v, w)| v * w).collect();
            let (num, s) = reduce_lanes(&prod, &shape, axis, keepdims, &|l| l.iter().sum());
            let (den, _) = reduce_lanes(&full, &shape, axis, keepdims, &|l| l.iter().sum());
            if den.contains(&0.0) {
                return Err(Exc::new(
                    ExcKind::ZeroDivisionError,
                    "Weights sum to zero, can't be normalized",
                ));
            }
            (num.iter().zip(&den).map(|(n, d)| n / d).collect(), den, s)
        }
    };
    let arr = make(it, out, &out_shape, dtype, Device::cpu(0))?;
    let avg = result(arr, Flavor::Numpy)?;
    if returned {
        let warr = make(it, wsum, &out_shape, dtype, Device::cpu(0))?;
        return Ok(Value::tuple(vec![avg, result(warr, Flavor::Numpy)?]));
    }
    Ok(avg)
}

// ------------------------------------------------------------------ covariance

/// The covariance of the rows of `m` (each row a variable), with `ddof`.
fn covariance(rows: usize, cols: usize, d: &[f64], ddof: f64, weights: Option<&[f64]>) -> Vec<f64> {
    let ones = vec![1.0; cols];
    let w = weights.unwrap_or(&ones);
    let wsum: f64 = w.iter().sum();
    let means: Vec<f64> = (0..rows)
        .map(|r| (0..cols).map(|c| d[r * cols + c] * w[c]).sum::<f64>() / wsum)
        .collect();
    let fact = wsum - ddof;
    let mut out = vec![0.0; rows * rows];
    for i in 0..rows {
        for j in 0..rows {
            let s: f64 = (0..cols)
                .map(|c| (d[i * cols + c] - means[i]) * w[c] * (d[j * cols + c] - means[j]))
                .sum();
            out[i * rows + j] = s / fact;
        }
    }
    out
}

/// The variables of `cov`/`corrcoef` as rows: (rows, cols, values).
fn variables(
    x: &ArrayValue,
    rowvar: bool,
    flavor: Flavor,
    fname: &str,
) -> Result<(usize, usize, Vec<f64>), Exc> {
    let shape = x.array.shape().to_vec();
    let v = x.array.to_host().to_f64_vec();
    match shape.len() {
        0 => Ok((1, 1, v)),
        1 => Ok((1, shape[0], v)),
        2 if rowvar => Ok((shape[0], shape[1], v)),
        2 => {
            let (r, c) = (shape[0], shape[1]);
            let t = (0..r * c).map(|p| v[(p % r) * c + p / r]).collect();
            Ok((c, r, t))
        }
        n => Err(match flavor {
            Flavor::Torch => Exc::new(ExcKind::RuntimeError, format!("{fname}(): expected input to have two or fewer dimensions but got an input with {n} dimensions")),
            _ => Exc::value_error("m has more than 2 dimensions"),
        }),
    }
}

fn cov_or_corr(
    it: &mut dyn Interpreter,
    flavor: Flavor,
    mut a: Args,
    corr: bool,
) -> Result<Value, Exc> {
    let fname = a.fname;
    let x = first_array(it, flavor, &mut a, "m")?;
    let (ddof, rowvar) = if flavor == Flavor::Torch {
        let correction = if corr {
            1.0
        } else {
            a.take_kw("correction")
                .and_then(|v| as_f64(&v))
                .unwrap_or(1.0)
        };
        a.take_kw("fweights");
        a.take_kw("aweights");
        (correction, true)
    } else {
        let y = a.take(1, "y")?;
        if !matches!(y, None | Some(Value::None)) {
            return Err(Exc::type_error(format!(
                "{fname}(m, y): a second array is not supported here; stack the two first"
            )));
        }
        let rowvar = a.flag(2, "rowvar", true)?;
        let mut ddof = 1.0;
        if !corr {
            if a.flag(3, "bias", false)? {
                ddof = 0.0;
            }
            if let Some(d) = a.take(4, "ddof")?.and_then(|v| as_f64(&v)) {
                ddof = d;
            }
            a.take_kw("fweights");
            a.take_kw("aweights");
        } else {
            a.take(3, "bias")?;
            a.take(4, "ddof")?;
        }
        a.take_kw("dtype");
        (ddof, rowvar)
    };
    a.finish(5)?;
    let (rows, cols, v) = variables(&x, rowvar, flavor, fname)?;
    let mut c = covariance(rows, cols, &v, ddof, None);
    if corr {
        let d: Vec<f64> = (0..rows).map(|i| c[i * rows + i].sqrt()).collect();
        for i in 0..rows {
            for j in 0..rows {
                let r = c[i * rows + j] / d[i] / d[j];
                // NumPy clips to [-1, 1] against rounding.
                c[i * rows + j] = if r.is_nan() { r } else { r.clamp(-1.0, 1.0) };
            }
        }
    }
    let dtype = float_of(x.array.dtype(), flavor);
    let one_var = x.array.ndim() < 2;
    let shape: Vec<usize> = if one_var { vec![] } else { vec![rows, rows] };
    let arr = make(it, c, &shape, dtype, x.array.device())?;
    if one_var && flavor == Flavor::Numpy && !corr {
        // np.cov of one variable is a 0-d array, not a scalar.
        return Ok(wrap(arr, Flavor::Numpy));
    }
    result(arr, x.flavor)
}

fn cov<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    cov_or_corr(it, flavor_of::<F>(), a, false)
}

fn corrcoef<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    cov_or_corr(it, flavor_of::<F>(), a, true)
}

// ------------------------------------------------------------------ histograms

fn bin_of(v: f64, lo: f64, hi: f64, bins: usize) -> Option<usize> {
    if !(v >= lo && v <= hi) {
        return None;
    }
    if v == hi {
        return Some(bins - 1);
    }
    let k = ((v - lo) / (hi - lo) * bins as f64) as usize;
    Some(k.min(bins - 1))
}

fn edges(lo: f64, hi: f64, bins: usize) -> Vec<f64> {
    (0..=bins)
        .map(|k| lo + (hi - lo) * k as f64 / bins as f64)
        .collect()
}

/// Data bounds as NumPy picks them: the min and max, widened by 0.5 when equal.
fn span(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.is_empty() {
        return (0.0, 1.0);
    }
    if lo == hi {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    }
}

/// `histogram2d(x, y, bins=10, range=None)`: (H, xedges, yedges) with equal-width bins.
fn histogram2d(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let y = a.required(1, "y")?;
    let bins = a.take(2, "bins")?;
    let range = a.take(3, "range")?;
    a.take_kw("density");
    a.take_kw("weights");
    a.finish(4)?;
    let (x, y) = (as_array(it, &x)?, as_array(it, &y)?);
    let (xv, yv) = (
        x.array.to_host().to_f64_vec(),
        y.array.to_host().to_f64_vec(),
    );
    if xv.len() != yv.len() {
        return Err(Exc::value_error("x and y must have the same length."));
    }
    let (bx, by) = match &bins {
        None | Some(Value::None) => (10, 10),
        Some(v) => match as_i64(v) {
            Some(n) => (n.max(1) as usize, n.max(1) as usize),
            None => {
                let pair = it.iterate(v)?;
                match pair.as_slice() {
                    [p, q] => (
                        as_i64(p)
                            .ok_or_else(|| Exc::type_error("bins must be integers"))?
                            .max(1) as usize,
                        as_i64(q)
                            .ok_or_else(|| Exc::type_error("bins must be integers"))?
                            .max(1) as usize,
                    ),
                    _ => {
                        return Err(Exc::value_error(
                            "bins must be an int or a pair of ints here",
                        ))
                    }
                }
            }
        },
    };
    let ((xl, xh), (yl, yh)) = match &range {
        None | Some(Value::None) => (span(&xv), span(&yv)),
        Some(r) => {
            let pair = it.iterate(r)?;
            let mut out = Vec::new();
            for p in &pair {
                let lims = it.iterate(p)?;
                let f: Vec<f64> = lims.iter().filter_map(as_f64).collect();
                if f.len() != 2 {
                    return Err(Exc::value_error(
                        "range must be ((xmin, xmax), (ymin, ymax))",
                    ));
                }
                out.push((f[0], f[1]));
            }
            match out.as_slice() {
                [p, q] => (*p, *q),
                _ => {
                    return Err(Exc::value_error(
                        "range must be ((xmin, xmax), (ymin, ymax))",
                    ))
                }
            }
        }
    };
    let cells = bx
        .checked_mul(by)
        .ok_or_else(crate::object::alloc::memory_error)?;
    crate::object::alloc::vec::<f64>(cells)?;
    let mut h = vec![0.0; cells];
    for (p, q) in xv.iter().zip(&yv) {
        if let (Some(i), Some(j)) = (bin_of(*p, xl, xh, bx), bin_of(*q, yl, yh, by)) {
            h[i * by + j] += 1.0;
        }
    }
    let ha = make(it, h, &[bx, by], DType::Float64, Device::cpu(0))?;
    let xe = make(
        it,
        edges(xl, xh, bx),
        &[bx + 1],
        DType::Float64,
        Device::cpu(0),
    )?;
    let ye = make(
        it,
        edges(yl, yh, by),
        &[by + 1],
        DType::Float64,
        Device::cpu(0),
    )?;
    Ok(Value::tuple(vec![
        wrap(ha, Flavor::Numpy),
        wrap(xe, Flavor::Numpy),
        wrap(ye, Flavor::Numpy),
    ]))
}

/// `torch.histc(input, bins=100, min=0, max=0)`: counts in equal bins over [min, max] (the
/// data's range when both are 0), as a tensor of input's dtype.
fn histc_impl(
    it: &mut dyn Interpreter,
    x: &ArrayValue,
    mut a: Args,
    first: usize,
) -> Result<Value, Exc> {
    let bins = a
        .take(first, "bins")?
        .and_then(|v| as_i64(&v))
        .unwrap_or(100);
    let lo = a
        .take(first + 1, "min")?
        .and_then(|v| as_f64(&v))
        .unwrap_or(0.0);
    let hi = a
        .take(first + 2, "max")?
        .and_then(|v| as_f64(&v))
        .unwrap_or(0.0);
    a.finish(first + 3)?;
    if bins <= 0 {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "torch.histc: bins must be > 0, but got ".to_string()
                + &bins.to_string()
                + " for dimension 0",
        ));
    }
    if !x.array.dtype().is_float() {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "\"histogram_cpu\" not implemented for '{}'",
                super::math_more::torch_type_name(x.array.dtype())
            ),
        ));
    }
    let v = x.array.to_host().to_f64_vec();
    let (mut lo, mut hi) = (lo, hi);
    if lo == hi && !v.is_empty() {
        lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    }
    if lo == hi {
        lo -= 1.0;
        hi += 1.0;
    }
    if lo > hi {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "torch.histc: max must be larger than min",
        ));
    }
    let bins = bins as usize;
    crate::object::alloc::vec::<f64>(bins)?;
    let mut h = vec![0.0; bins];
    for p in &v {
        if let Some(k) = bin_of(*p, lo, hi, bins) {
            h[k] += 1.0;
        }
    }
    let arr = make(it, h, &[bins], x.array.dtype(), x.array.device())?;
    Ok(wrap(arr, x.flavor))
}

// ------------------------------------------------------------------ PyTorch's reductions

fn dims_arg(v: Option<Value>, ndim: usize) -> Result<Option<Vec<isize>>, Exc> {
    match &v {
        None | Some(Value::None) => Ok(None),
        Some(Value::Tuple(t)) => Ok(Some(
            t.iter()
                .map(|d| {
                    as_i64(d)
                        .ok_or_else(|| Exc::type_error("dim must be int or tuple of ints"))
                        .and_then(|i| axis_in(i, ndim, Flavor::Torch).map(|k| k as isize))
                })
                .collect::<Result<_, _>>()?,
        )),
        Some(Value::List(l)) => dims_arg(Some(Value::tuple(l.borrow().clone())), ndim),
        Some(d) => {
            let i = as_i64(d).ok_or_else(|| {
                Exc::type_error(format!(
                    "argument 'dim' must be tuple of ints, not {}",
                    d.type_name()
                ))
            })?;
            Ok(Some(vec![axis_in(i, ndim, Flavor::Torch)? as isize]))
        }
    }
}

/// `x.logsumexp(dim, keepdim=False)`: max + log(sum(exp(x - max))), composed on the tape
/// (the max itself is a constant, as PyTorch's).
fn logsumexp(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = array_arg(it, Flavor::Torch, "logsumexp", "input", 1, r)?;
    let dim = a.required(0, "dim")?;
    let keepdim = a.flag(1, "keepdim", false)?;
    a.finish(2)?;
    let dims = dims_arg(Some(dim), x.array.ndim())?;
    let arr = if x.array.dtype().is_float() {
        x.array.clone()
    } else {
        x.array.astype(DType::Float32)?
    };
    let m = arr.reduce(ReduceOp::Max, dims.as_deref(), true)?;
    // An infinite max would give inf - inf: use 0 there, as PyTorch does.
    let finite = Array::binary(
        BinaryOp::Lt,
        Operand::Array(&m.unary(UnaryOp::Abs)?),
        Operand::Scalar(Scalar::Float(f64::INFINITY)),
    )?;
    let m = Array::binary(
        BinaryOp::Mul,
        Operand::Array(&m),
        Operand::Array(&finite.astype(m.dtype())?),
    )?;
    let m = Array::binary(
        BinaryOp::Add,
        Operand::Array(&m),
        Operand::Scalar(Scalar::Float(0.0)),
    )?;
    let tape = &mut it.state_mut().nn.tape;
    let shifted = tape.binary(BinaryOp::Sub, Operand::Array(&arr), Operand::Array(&m))?;
    let e = tape.unary(&shifted, UnaryOp::Exp)?;
    let s = tape.reduce(&e, ReduceOp::Sum, dims.as_deref(), true)?;
    let l = tape.unary(&s, UnaryOp::Log)?;
    let mut out = tape.binary(BinaryOp::Add, Operand::Array(&l), Operand::Array(&m))?;
    if !keepdim {
        let shape: Vec<isize> = out
            .shape()
            .iter()
            .enumerate()
            .filter(|(k, _)| dims.as_ref().is_some_and(|d| !d.contains(&(*k as isize))))
            .map(|(_, d)| *d as isize)
            .collect();
        out = tape.reshape(&out, &shape)?;
    }
    tape.rename(&out, "LogsumexpBackward0");
    Ok(wrap(out, x.flavor))
}

/// `x.std(dim=None, unbiased=True, keepdim=False, *, correction=None)` and `var`, composed on
/// the tape.
fn moment(it: &mut dyn Interpreter, r: &Value, mut a: Args, root: bool) -> Result<Value, Exc> {
    let fname = a.fname;
    let x = array_arg(it, Flavor::Torch, fname, "input", 1, r)?;
    if !x.array.dtype().is_float() {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "std and var only support floating point and complex dtypes",
        ));
    }
    // `x.std(False)`: the first positional is `unbiased` when it is a bool.
    let first = a.pos.first().cloned();
    let (dim, mut unbiased) = match first {
        Some(Value::Bool(b)) => {
            a.pos.remove(0);
            (None, Some(b))
        }
        _ => (a.take(0, "dim")?, None),
    };
    if unbiased.is_none() {
        unbiased = match a.take(1, "unbiased")? {
            Some(v) => Some(v.truthy()?),
            None => None,
        };
    }
    let keepdim = a.flag(2, "keepdim", false)?;
    let correction = a.take_kw("correction").and_then(|v| as_f64(&v));
    a.finish(3)?;
    let ddof = correction.unwrap_or(if unbiased.unwrap_or(true) { 1.0 } else { 0.0 });
    let nd = x.array.ndim();
    let dims = dims_arg(dim, nd)?;
    let shape = x.array.shape().to_vec();
    let count: usize = match &dims {
        None => shape.iter().product(),
        Some(d) => d
            .iter()
            .map(|k| shape.get(*k as usize).copied().unwrap_or(1))
            .product(),
    };
    let tape = &mut it.state_mut().nn.tape;
    let s = tape.reduce(&x.array, ReduceOp::Sum, dims.as_deref(), true)?;
    let mean = tape.binary(
        BinaryOp::Div,
        Operand::Array(&s),
        Operand::Scalar(Scalar::Float(count as f64)),
    )?;
    let dev = tape.binary(
        BinaryOp::Sub,
        Operand::Array(&x.array),
        Operand::Array(&mean),
    )?;
    let sq = tape.binary(BinaryOp::Mul, Operand::Array(&dev), Operand::Array(&dev))?;
    let total = tape.reduce(&sq, ReduceOp::Sum, dims.as_deref(), keepdim)?;
    let n = (count as f64 - ddof).max(0.0);
    let mut out = tape.binary(
        BinaryOp::Div,
        Operand::Array(&total),
        Operand::Scalar(Scalar::Float(n)),
    )?;
    if root {
        out = tape.unary(&out, UnaryOp::Sqrt)?;
    }
    tape.rename(&out, if root { "StdBackward0" } else { "VarBackward0" });
    if n == 0.0 {
        crate::modules::python::stdlib::warnings::warn(it, "UserWarning", &format!(
            "{fname}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor (input numel divided by output numel)."
        ))?;
    }
    Ok(wrap(out, x.flavor))
}

/// `x.amax(dim=(), keepdim=False)` / `amin`: the extreme over several dims, on the tape.
fn extreme(it: &mut dyn Interpreter, r: &Value, mut a: Args, op: ReduceOp) -> Result<Value, Exc> {
    let fname = a.fname;
    let x = array_arg(it, Flavor::Torch, fname, "input", 1, r)?;
    let dim = a.take(0, "dim")?;
    let keepdim = a.flag(1, "keepdim", false)?;
    a.finish(2)?;
    let dims = match &dim {
        Some(Value::Tuple(t)) if t.is_empty() => None,
        Some(Value::List(l)) if l.borrow().is_empty() => None,
        _ => dims_arg(dim, x.array.ndim())?,
    };
    if x.array.size() == 0 {
        return Err(Exc::new(ExcKind::IndexError, format!(
            "{fname}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        )));
    }
    let out = it
        .state_mut()
        .nn
        .tape
        .reduce(&x.array, op, dims.as_deref(), keepdim)?;
    Ok(wrap(out, x.flavor))
}

/// `x.cumprod(dim)`: running products along an axis (computed on the host, not recorded).
fn cumprod(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = array_arg(it, Flavor::Torch, "cumprod", "input", 1, r)?;
    let dim = a.required(0, "dim")?;
    a.take_kw("dtype");
    a.finish(1)?;
    let nd = x.array.ndim();
    let ax = axis_in(
        as_i64(&dim).ok_or_else(|| Exc::type_error("cumprod(): argument 'dim' must be int"))?,
        nd,
        Flavor::Torch,
    )?;
    let shape = x.array.shape().to_vec();
    let mut v = x.array.to_host().to_f64_vec();
    if !shape.is_empty() {
        let len = shape[ax];
        let inner: usize = shape[ax + 1..].iter().product();
        let outer: usize = shape[..ax].iter().product();
        for o in 0..outer {
            for i in 0..inner {
                for k in 1..len {
                    let p = (o * len + k) * inner + i;
                    v[p] *= v[p - inner];
                }
            }
        }
    }
    let dtype = match x.array.dtype() {
        DType::Bool | DType::Int32 => DType::Int64,
        d => d,
    };
    let arr = make(it, v, &shape, dtype, x.array.device())?;
    Ok(wrap(arr, x.flavor))
}

fn with_receiver(a: &mut Args) -> Result<Value, Exc> {
    if !a.pos.is_empty() {
        return Ok(a.pos.remove(0));
    }
    a.take_kw("input").ok_or_else(|| {
        Exc::type_error(format!(
            "{}() missing 1 required positional arguments: \"input\"",
            a.fname
        ))
    })
}

fn torch_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = with_receiver(&mut a)?;
    let f = tensor_method(a.fname)
        .map(|(_, _, f)| f)
        .ok_or_else(|| Exc::type_error(format!("{}() is not available", a.fname)))?;
    f(it, &x, a)
}

fn tensor_method(
    name: &str,
) -> Option<(&'static str, &'static str, crate::object::value::MethodFn)> {
    type M = crate::object::value::MethodFn;
    let (n, doc, f): (&'static str, &'static str, M) = match name {
        "logsumexp" => ("logsumexp", "logsumexp(input, dim, keepdim=False): log(sum(exp(input))) along dim, without overflow.", logsumexp),
        "std" => ("std", "std(input, dim=None, unbiased=True, keepdim=False, *, correction=None): the standard deviation.", |it, r, a| moment(it, r, a, true)),
        "var" => ("var", "var(input, dim=None, unbiased=True, keepdim=False, *, correction=None): the variance.", |it, r, a| moment(it, r, a, false)),
        "cumprod" => ("cumprod", "cumprod(input, dim): running products along dim.", cumprod),
        "amax" => ("amax", "amax(input, dim=(), keepdim=False): the maximum over the dims (all when empty).", |it, r, a| extreme(it, r, a, ReduceOp::Max)),
        "amin" => ("amin", "amin(input, dim=(), keepdim=False): the minimum over the dims (all when empty).", |it, r, a| extreme(it, r, a, ReduceOp::Min)),
        "histc" => ("histc", "histc(input, bins=100, min=0, max=0): counts in equal-width bins.", |it, r, a| {
            let x = array_arg(it, Flavor::Torch, "histc", "input", 1, r)?;
            histc_impl(it, &x, a, 0)
        }),
        "nansum" => ("nansum", "nansum(input, dim=None, keepdim=False): the sum, NaN counted as zero.", |it, r, mut a| {
            a.pos.insert(0, r.clone());
            nansum::<TORCH>(it, a)
        }),
        "nanmean" => ("nanmean", "nanmean(input, dim=None, keepdim=False): the mean of the non-NaN elements.", |it, r, mut a| {
            a.pos.insert(0, r.clone());
            nanmean::<TORCH>(it, a)
        }),
        "cov" => ("cov", "cov(input, *, correction=1): the covariance of the rows (variables).", |it, r, mut a| {
            a.pos.insert(0, r.clone());
            cov::<TORCH>(it, a)
        }),
        "corrcoef" => ("corrcoef", "corrcoef(input): the correlation coefficients of the rows (variables).", |it, r, mut a| {
            a.pos.insert(0, r.clone());
            corrcoef::<TORCH>(it, a)
        }),
        _ => return None,
    };
    Some((n, doc, f))
}

/// The tensor methods of this file, or None.
pub fn get_attr(v: &Value, name: &str) -> Option<Value> {
    let x = v.as_array()?;
    if x.flavor != Flavor::Torch {
        return None;
    }
    let (n, doc, f) = tensor_method(name)?;
    Some(method(v, n, doc, f))
}

/// `mxnet.np.std(a, ...)` / `var`: the array's own method (MXNet's numpy mode shares NumPy's).
fn np_moment_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let fname = a.fname;
    let x = match a.pos.is_empty() {
        false => a.pos.remove(0),
        true => a
            .take_kw("a")
            .ok_or_else(|| Exc::type_error(format!("{fname}() missing required argument 'a'")))?,
    };
    let x = array_arg(it, Flavor::Np, fname, "input", 1, &x)?;
    let receiver = Value::Array(x);
    let m = super::arrays::get_attr(it, &receiver, fname)?
        .ok_or_else(|| Exc::new(ExcKind::AttributeError, format!("no array method {fname}")))?;
    it.call_value(&m, a)
}

/// Adds the functions to dialect `F`'s module (names it already has are kept).
pub fn install<const F: u8>(m: &Module) {
    let flavor = flavor_of::<F>();
    let set = |name: &'static str, doc: &'static str, f: BuiltinFn| {
        if m.get(name).is_none() && !super::math_more::mxnet_lacks(flavor, name) {
            m.set(name, builtin(name, doc, f));
        }
    };
    if flavor == Flavor::Torch {
        for name in [
            "amax",
            "amin",
            "logsumexp",
            "std",
            "var",
            "cumprod",
            "histc",
            "nansum",
            "nanmean",
            "cov",
            "corrcoef",
        ] {
            if let Some((n, doc, _)) = tensor_method(name) {
                set(n, doc, torch_fn);
            }
        }
        return;
    }
    set(
        "nansum",
        "nansum(a, axis=None, keepdims=False): the sum, NaN counted as zero.",
        nansum::<F>,
    );
    set(
        "nanmean",
        "nanmean(a, axis=None, keepdims=False): the mean of the non-NaN elements.",
        nanmean::<F>,
    );
    set(
        "nanmax",
        "nanmax(a, axis=None, keepdims=False): the maximum, ignoring NaN.",
        nanmax::<F>,
    );
    set(
        "nanmin",
        "nanmin(a, axis=None, keepdims=False): the minimum, ignoring NaN.",
        nanmin::<F>,
    );
    set("nanstd", "nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False): the standard deviation, ignoring NaN.", nanstd::<F>);
    set("nanvar", "nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False): the variance, ignoring NaN.", nanvar::<F>);
    set(
        "ptp",
        "ptp(a, axis=None, keepdims=False): max - min (peak to peak).",
        ptp::<F>,
    );
    set("cov", "cov(m, y=None, rowvar=True, bias=False, ddof=None): the covariance matrix of the variables (rows).", cov::<F>);
    set("corrcoef", "corrcoef(x, y=None, rowvar=True): the Pearson correlation coefficients of the variables (rows).", corrcoef::<F>);
    if flavor == Flavor::Np {
        set("std", "std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False): the standard deviation.", np_moment_fn);
        set(
            "var",
            "var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False): the variance.",
            np_moment_fn,
        );
    }
    if flavor == Flavor::Numpy {
        set("average", "average(a, axis=None, weights=None, returned=False, keepdims=False): the (weighted) mean.", average);
        set("histogram2d", "histogram2d(x, y, bins=10, range=None): (H, xedges, yedges), counts in equal-width 2-D bins.", histogram2d);
    }
}
