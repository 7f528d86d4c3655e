//! NumPy's calculus and polynomial helpers: `interp`, `gradient`, `trapz` (and PyTorch's
//! `trapezoid`), `convolve`, `polyfit`, `polyval`, `vander`, computed on host copies in double
//! precision with NumPy's formulas (`polyfit` scales the Vandermonde columns and solves by the
//! SVD, as NumPy's `lstsq`).

use crate::modules::array::numpy_fns::as_array;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{self, as_f64, as_i64, wrap};
use std::rc::Rc;

use crate::object::value::{Args, ArrayValue, BuiltinFn, Flavor, Module, NativeObject, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{Array, DType, Device, HostData};

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

fn numpy_value(out: Array) -> Result<Value, Exc> {
    if out.ndim() == 0 {
        return ops::numpy_scalar(&out);
    }
    Ok(wrap(out, Flavor::Numpy))
}

fn values(x: &ArrayValue) -> Vec<f64> {
    x.array.to_host().to_f64_vec()
}

/// `interp(x, xp, fp, left=None, right=None)`: piecewise-linear interpolation.
fn interp(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let xp = a.required(1, "xp")?;
    let fp = a.required(2, "fp")?;
    let left = a.take(3, "left")?.and_then(|v| as_f64(&v));
    let right = a.take(4, "right")?.and_then(|v| as_f64(&v));
    a.take_kw("period");
    a.finish(5)?;
    let scalar = as_f64(&x).is_some() && !matches!(x, Value::Array(_));
    let x = as_array(it, &x)?;
    let (xp, fp) = (values(&as_array(it, &xp)?), values(&as_array(it, &fp)?));
    if xp.len() != fp.len() {
        return Err(Exc::value_error("fp and xp are not of the same length."));
    }
    if xp.is_empty() {
        return Err(Exc::value_error("array of sample points is empty"));
    }
    let n = xp.len();
    let (left, right) = (left.unwrap_or(fp[0]), right.unwrap_or(fp[n - 1]));
    let out: Vec<f64> = values(&x)
        .iter()
        .map(|&v| {
            if v.is_nan() {
                return v;
            }
            if v < xp[0] {
                return left;
            }
            if v > xp[n - 1] {
                return right;
            }
            if v == xp[n - 1] {
                return fp[n - 1];
            }
            let j = xp
                .partition_point(|p| *p <= v)
                .saturating_sub(1)
                .min(n.saturating_sub(2));
            if n == 1 {
                return fp[0];
            }
            let slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
            let y = slope * (v - xp[j]) + fp[j];
            if y.is_nan() {
                let y2 = slope * (v - xp[j + 1]) + fp[j + 1];
                if y2.is_nan() && fp[j] == fp[j + 1] {
                    fp[j]
                } else {
                    y2
                }
            } else {
                y
            }
        })
        .collect();
    let shape = x.array.shape().to_vec();
    let arr = make(it, out, &shape, DType::Float64, Device::cpu(0))?;
    if scalar {
        return ops::numpy_scalar(&arr);
    }
    numpy_value(arr)
}

/// The lanes of an array along `axis`: (outer, len, inner) strides.
fn lanes(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    (outer, len, inner)
}

fn axis_arg(v: Option<Value>, ndim: usize, default: i64) -> Result<usize, Exc> {
    let i = match v {
        None => default,
        Some(Value::None) => default,
        Some(v) => as_i64(&v).ok_or_else(|| Exc::type_error("axis must be an integer"))?,
    };
    let n = ndim as i64;
    if i < -n || i >= n {
        return Err(Exc::new(
            ExcKind::AxisError,
            format!("axis {i} is out of bounds for array of dimension {ndim}"),
        ));
    }
    Ok(if i < 0 { (i + n) as usize } else { i as usize })
}

/// `gradient(f, *varargs, axis=None, edge_order=1)`: central differences inside, one-sided
/// at the edges; spacing a number or coordinates per axis.
fn gradient(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let f = a.required(0, "f")?;
    let f = as_array(it, &f)?;
    let spacing: Vec<Value> = a.pos.drain(..).skip(1).collect();
    let axis = a.take_kw("axis");
    let edge = a
        .take_kw("edge_order")
        .and_then(|v| as_i64(&v))
        .unwrap_or(1);
    a.finish(0)?;
    if edge != 1 {
        return Err(Exc::value_error(
            "gradient: only edge_order=1 is supported here",
        ));
    }
    let shape = f.array.shape().to_vec();
    let nd = shape.len();
    let axes: Vec<usize> = match axis {
        None => (0..nd).collect(),
        Some(Value::None) => (0..nd).collect(),
        Some(v) => match as_i64(&v) {
            Some(_) => vec![axis_arg(Some(v), nd, 0)?],
            None => it
                .iterate(&v)?
                .into_iter()
                .map(|x| axis_arg(Some(x), nd, 0))
                .collect::<Result<_, _>>()?,
        },
    };
    if !(spacing.is_empty() || spacing.len() == 1 || spacing.len() == axes.len()) {
        return Err(Exc::type_error("invalid number of arguments"));
    }
    let data = values(&f);
    let dtype = if f.array.dtype() == DType::Float32 {
        DType::Float32
    } else {
        DType::Float64
    };
    let mut outs = Vec::new();
    for (k, &ax) in axes.iter().enumerate() {
        let (outer, len, inner) = lanes(&shape, ax);
        if len < 2 {
            return Err(Exc::value_error("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) elements are required."));
        }
        let sp = spacing.get(if spacing.len() == 1 { 0 } else { k });
        let coords: Option<Vec<f64>> = match sp {
            Some(v) if as_f64(v).is_none() || matches!(v, Value::Array(_) | Value::List(_)) => {
                let c = values(&as_array(it, v)?);
                if c.len() == 1 {
                    None
                } else if c.len() != len {
                    return Err(Exc::value_error(
                        "when 1d, distances must match the length of the corresponding dimension",
                    ));
                } else {
                    Some(c)
                }
            }
            _ => None,
        };
        let dx = sp
            .and_then(|v| match v {
                Value::Array(x) if x.array.size() == 1 => {
                    x.array.to_host().to_f64_vec().first().copied()
                }
                other => as_f64(other),
            })
            .unwrap_or(1.0);
        let mut out = vec![0.0; data.len()];
        for o in 0..outer {
            for i in 0..inner {
                let at = |j: usize| (o * len + j) * inner + i;
                let y = |j: usize| data[at(j)];
                match &coords {
                    None => {
                        for j in 1..len - 1 {
                            out[at(j)] = (y(j + 1) - y(j - 1)) / (2.0 * dx);
                        }
                        out[at(0)] = (y(1) - y(0)) / dx;
                        out[at(len - 1)] = (y(len - 1) - y(len - 2)) / dx;
                    }
                    Some(c) => {
                        for j in 1..len - 1 {
                            let (d1, d2) = (c[j] - c[j - 1], c[j + 1] - c[j]);
                            let aa = -d2 / (d1 * (d1 + d2));
                            let bb = (d2 - d1) / (d1 * d2);
                            let cc = d1 / (d2 * (d1 + d2));
                            out[at(j)] = aa * y(j - 1) + bb * y(j) + cc * y(j + 1);
                        }
                        out[at(0)] = (y(1) - y(0)) / (c[1] - c[0]);
                        out[at(len - 1)] = (y(len - 1) - y(len - 2)) / (c[len - 1] - c[len - 2]);
                    }
                }
            }
        }
        outs.push(wrap(
            make(it, out, &shape, dtype, Device::cpu(0))?,
            Flavor::Numpy,
        ));
    }
    if outs.len() == 1 {
        return Ok(outs.remove(0));
    }
    Ok(Value::list(outs))
}

/// The trapezoidal rule along `axis`: `sum(d * (y[i] + y[i+1]) / 2)`.
fn trapezoid_lanes(
    y: &[f64],
    shape: &[usize],
    axis: usize,
    x: Option<&[f64]>,
    dx: f64,
) -> (Vec<f64>, Vec<usize>) {
    let (outer, len, inner) = lanes(shape, axis);
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * len + j) * inner + i;
            let mut s = 0.0;
            for j in 0..len.saturating_sub(1) {
                let d = x.map_or(dx, |x| x[j + 1] - x[j]);
                s += d * (y[at(j)] + y[at(j + 1)]) / 2.0;
            }
            out.push(s);
        }
    }
    let mut out_shape = shape.to_vec();
    out_shape.remove(axis);
    (out, out_shape)
}

fn trapz(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let y = a.required(0, "y")?;
    let x = a.take(1, "x")?;
    let dx = a.take(2, "dx")?.and_then(|v| as_f64(&v)).unwrap_or(1.0);
    let axis = a.take(3, "axis")?;
    a.finish(4)?;
    let y = as_array(it, &y)?;
    let shape = y.array.shape().to_vec();
    let ax = axis_arg(axis, shape.len(), -1)?;
    let xs = match &x {
        None | Some(Value::None) => None,
        Some(v) => Some(values(&as_array(it, v)?)),
    };
    if let Some(xv) = &xs {
        if xv.len() != shape[ax] {
            return Err(Exc::value_error(format!(
                "operands could not be broadcast together with shapes ({},) ({},) ",
                xv.len().saturating_sub(1),
                shape[ax].saturating_sub(1)
            )));
        }
    }
    let (out, out_shape) = trapezoid_lanes(&values(&y), &shape, ax, xs.as_deref(), dx);
    let dtype = if y.array.dtype() == DType::Float32 && xs.is_none() {
        DType::Float32
    } else {
        DType::Float64
    };
    numpy_value(make(it, out, &out_shape, dtype, Device::cpu(0))?)
}

/// `torch.trapezoid(y, x=None, *, dx=None, dim=-1)`.
fn trapezoid(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let y = a.required(0, "y")?;
    let x = a.take(1, "x")?;
    let dx = a.take_kw("dx").and_then(|v| as_f64(&v)).unwrap_or(1.0);
    let dim = a.take_kw("dim");
    a.finish(2)?;
    let Value::Array(y) = &y else {
        return Err(Exc::type_error(format!(
            "trapezoid(): argument 'y' (position 1) must be Tensor, not {}",
            y.type_name()
        )));
    };
    let shape = y.array.shape().to_vec();
    if shape.is_empty() {
        return Err(Exc::new(
            ExcKind::IndexError,
            format!(
                "Dimension specified as {} but tensor has no dimensions",
                dim.as_ref().and_then(as_i64).unwrap_or(-1)
            ),
        ));
    }
    let ax = crate::modules::array::array_more::norm_axis(
        dim.as_ref().and_then(as_i64).unwrap_or(-1),
        shape.len(),
        Flavor::Torch,
    )?;
    let xs = match &x {
        None | Some(Value::None) => None,
        Some(Value::Array(v)) => Some(values(v)),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "trapezoid(): argument 'x' (position 2) must be Tensor, not {}",
                other.type_name()
            )))
        }
    };
    let (out, out_shape) = trapezoid_lanes(&values(y), &shape, ax, xs.as_deref(), dx);
    let dtype = if y.array.dtype().is_float() {
        y.array.dtype()
    } else {
        DType::Float32
    };
    Ok(wrap(
        make(it, out, &out_shape, dtype, y.array.device())?,
        y.flavor,
    ))
}

/// `convolve(a, v, mode='full')`: the discrete linear convolution of two 1-D sequences.
fn convolve(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let p = a.required(0, "a")?;
    let q = a.required(1, "v")?;
    let mode = a.take(2, "mode")?;
    a.finish(3)?;
    let mode = match &mode {
        None => "full".to_string(),
        Some(Value::Str(s)) => s.to_string(),
        Some(_) => "full".to_string(),
    };
    let (p, q) = (as_array(it, &p)?, as_array(it, &q)?);
    let (mut x, mut v) = (values(&p), values(&q));
    if x.is_empty() {
        return Err(Exc::value_error("a cannot be empty"));
    }
    if v.is_empty() {
        return Err(Exc::value_error("v cannot be empty"));
    }
    if v.len() > x.len() {
        std::mem::swap(&mut x, &mut v);
    }
    let (n, m) = (x.len(), v.len());
    let full: Vec<f64> = (0..n + m - 1)
        .map(|k| {
            let lo = k.saturating_sub(m - 1);
            let hi = k.min(n - 1);
            (lo..=hi).map(|i| x[i] * v[k - i]).sum()
        })
        .collect();
    let out: Vec<f64> = match mode.as_str() {
        "full" => full,
        "same" => {
            let start = (m - 1) / 2;
            full[start..start + n].to_vec()
        }
        "valid" => full[m - 1..n].to_vec(),
        other => {
            return Err(Exc::value_error(format!(
                "mode must be one of 'valid', 'same', or 'full' (got {other:?})"
            )))
        }
    };
    let float = p.array.dtype().is_float() || q.array.dtype().is_float();
    let dtype = if float { DType::Float64 } else { DType::Int64 };
    let len = out.len();
    numpy_value(make(it, out, &[len], dtype, Device::cpu(0))?)
}

/// `polyval(p, x)`: Horner's rule, highest power first.
fn polyval(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let p = a.required(0, "p")?;
    let x = a.required(1, "x")?;
    a.finish(2)?;
    let scalar = !matches!(x, Value::Array(_) | Value::List(_) | Value::Tuple(_));
    let (p, x) = (as_array(it, &p)?, as_array(it, &x)?);
    let coeffs = values(&p);
    let out: Vec<f64> = values(&x)
        .iter()
        .map(|v| coeffs.iter().fold(0.0, |y, c| y * v + c))
        .collect();
    let float = p.array.dtype().is_float() || x.array.dtype().is_float();
    let dtype = if float { DType::Float64 } else { DType::Int64 };
    let shape = x.array.shape().to_vec();
    let arr = make(it, out, &shape, dtype, Device::cpu(0))?;
    if scalar {
        return ops::numpy_scalar(&arr);
    }
    numpy_value(arr)
}

/// The Vandermonde matrix of `x` with `n` columns (powers decreasing unless `increasing`).
fn vander_values(x: &[f64], n: usize, increasing: bool) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len() * n);
    for v in x {
        for j in 0..n {
            let pow = if increasing { j } else { n - 1 - j };
            out.push((0..pow).fold(1.0, |acc, _| acc * v));
        }
    }
    out
}

fn vander(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let n = a.take(1, "N")?;
    let increasing = a.flag(2, "increasing", false)?;
    a.finish(3)?;
    let x = as_array(it, &x)?;
    if x.array.ndim() != 1 {
        return Err(Exc::value_error(
            "x must be a one-dimensional array or sequence.",
        ));
    }
    let xv = values(&x);
    let n = match &n {
        None | Some(Value::None) => xv.len(),
        Some(v) => as_i64(v)
            .ok_or_else(|| Exc::type_error("N must be an integer"))?
            .max(0) as usize,
    };
    let cells = xv
        .len()
        .checked_mul(n)
        .ok_or_else(crate::object::alloc::memory_error)?;
    crate::object::alloc::vec::<f64>(cells)?;
    let out = vander_values(&xv, n, increasing);
    let dtype = if x.array.dtype().is_float() {
        DType::Float64
    } else {
        DType::Int64
    };
    numpy_value(make(it, out, &[xv.len(), n], dtype, Device::cpu(0))?)
}

/// `polyfit(x, y, deg)`: the least-squares polynomial coefficients, highest power first.
fn polyfit(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let y = a.required(1, "y")?;
    let deg = a.required(2, "deg")?;
    let rcond = a.take(3, "rcond")?.and_then(|v| as_f64(&v));
    let full = a.flag(4, "full", false)?;
    a.take_kw("w");
    a.take_kw("cov");
    a.finish(5)?;
    if full {
        return Err(Exc::value_error("polyfit: full=True is not supported here"));
    }
    let deg = as_i64(&deg).ok_or_else(|| Exc::type_error("deg must be an int"))?;
    if deg < 0 {
        return Err(Exc::value_error("expected deg >= 0"));
    }
    let (x, y) = (as_array(it, &x)?, as_array(it, &y)?);
    if x.array.ndim() != 1 {
        return Err(Exc::type_error("expected 1D vector for x"));
    }
    if x.array.size() == 0 {
        return Err(Exc::type_error("expected non-empty vector for x"));
    }
    if y.array.ndim() < 1 || y.array.ndim() > 2 {
        return Err(Exc::type_error("expected 1D or 2D array for y"));
    }
    if x.array.shape()[0] != y.array.shape()[0] {
        return Err(Exc::type_error("expected x and y to have same length"));
    }
    let (xv, yv) = (values(&x), values(&y));
    let order = deg as usize + 1;
    let rows = xv.len();
    let rcond = rcond.unwrap_or(rows as f64 * f64::EPSILON);
    let mut lhs = vander_values(&xv, order, false);
    let scale: Vec<f64> = (0..order)
        .map(|j| {
            (0..rows)
                .map(|i| lhs[i * order + j].powi(2))
                .sum::<f64>()
                .sqrt()
        })
        .collect();
    for i in 0..rows {
        for j in 0..order {
            lhs[i * order + j] /= scale[j];
        }
    }
    let k = if y.array.ndim() == 2 {
        y.array.shape()[1]
    } else {
        1
    };
    let mut c = super::linalg::least_squares(rows, order, &lhs, &yv, k, rcond);
    for j in 0..order {
        for col in 0..k {
            c[j * k + col] /= scale[j];
        }
    }
    if order > rows {
        crate::modules::python::stdlib::warnings::warn(
            it,
            "RankWarning",
            "Polyfit may be poorly conditioned",
        )?;
    }
    let shape: Vec<usize> = if y.array.ndim() == 2 {
        vec![order, k]
    } else {
        vec![order]
    };
    numpy_value(make(it, c, &shape, DType::Float64, Device::cpu(0))?)
}

// ------------------------------------------------------------------ poly1d

/// `np.poly1d(c)`: a polynomial (coefficients highest power first, leading zeros dropped) that
/// calls as `polyval`, prints as NumPy's two-line form and reprs as `poly1d([...])`.
struct Poly1d {
    coeffs: Value,
    order: i64,
    repr: String,
    text: String,
}

impl NativeObject for Poly1d {
    fn type_name(&self) -> &str {
        "poly1d"
    }
    fn repr(&self) -> String {
        self.repr.clone()
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let me = Value::Object(this.clone());
        Some(match name {
            "coeffs" | "c" | "coef" | "coefficients" => self.coeffs.clone(),
            "order" | "o" => Value::Int(self.order),
            "variable" => Value::str("x"),
            "__str__" => Value::str(&self.text),
            "__call__" => method(
                &me,
                "__call__",
                "p(x): the polynomial at x.",
                |it, r, mut a| {
                    let x = a.required(0, "val")?;
                    a.finish(1)?;
                    let c = poly_of(r)?.coeffs.clone();
                    polyval(it, Args::new("polyval", vec![c, x]))
                },
            ),
            "deriv" => method(
                &me,
                "deriv",
                "p.deriv(m=1): the m-th derivative.",
                |it, r, mut a| {
                    let m = a.take(0, "m")?.and_then(|v| as_i64(&v)).unwrap_or(1);
                    a.finish(1)?;
                    let coeffs = poly_of(r)?.coeffs.clone();
                    let mut c = values(&as_array(it, &coeffs)?);
                    for _ in 0..m.max(0) {
                        let n = c.len();
                        c = c
                            .iter()
                            .take(n.saturating_sub(1))
                            .enumerate()
                            .map(|(k, v)| v * (n - 1 - k) as f64)
                            .collect();
                    }
                    let is_int = matches!(&coeffs, Value::Array(x) if !x.array.dtype().is_float());
                    make_poly(it, c, is_int)
                },
            ),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "c",
            "coef",
            "coefficients",
            "coeffs",
            "deriv",
            "o",
            "order",
            "variable",
        ]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn poly_of(v: &Value) -> Result<&Poly1d, Exc> {
    match v {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<Poly1d>()
            .ok_or_else(|| Exc::type_error("expected a poly1d")),
        _ => Err(Exc::type_error("expected a poly1d")),
    }
}

/// NumPy's `poly1d.__str__`: the terms with '%.4g' coefficients, powers raised to a line above.
fn poly_text(c: &[f64]) -> String {
    let first = c.iter().position(|v| *v != 0.0).unwrap_or(c.len());
    let c = &c[first..];
    let n = c.len().saturating_sub(1);
    let fmt = |q: f64| {
        let s = crate::display::format_spec(crate::display::FmtValue::Float(q), ".4g")
            .unwrap_or_default();
        s.strip_suffix(".0000").map(str::to_string).unwrap_or(s)
    };
    let mut text = "0".to_string();
    for (k, q) in c.iter().enumerate() {
        let coef = fmt(*q);
        let power = n - k;
        let term = match (power, coef.as_str()) {
            (0, "0") => {
                if k == 0 {
                    "0".to_string()
                } else {
                    String::new()
                }
            }
            (0, _) => coef.clone(),
            (_, "0") => String::new(),
            (1, _) => format!("{coef} x"),
            _ => format!("{coef} x**{power}"),
        };
        if k == 0 {
            text = term;
        } else if !term.is_empty() {
            text = match term.strip_prefix('-') {
                Some(rest) => format!("{text} - {rest}"),
                None => format!("{text} + {term}"),
            };
        }
    }
    raise_power(&text)
}

/// NumPy's `_raise_power`: every `**n` moved to the line above its term, wrapped at 70.
fn raise_power(s: &str) -> String {
    let (mut line1, mut line2, mut output) = (String::new(), String::new(), " ".to_string());
    let mut rest = s;
    while let Some(at) = rest.find("**") {
        let part = &rest[..at];
        let digits: String = rest[at + 2..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        rest = &rest[at + 2 + digits.len()..];
        let to_add2 = format!("{part}{}", " ".repeat(digits.len().saturating_sub(1)));
        let to_add1 = format!("{}{digits}", " ".repeat(part.len().saturating_sub(1)));
        if line2.len() + to_add2.len() > 70 || line1.len() + to_add1.len() > 70 {
            output.push_str(&format!("{line1}\n{line2}\n "));
            line1 = to_add1;
            line2 = to_add2;
        } else {
            line2.push_str(&to_add2);
            line1.push_str(&to_add1);
        }
    }
    format!("{output}{line1}\n{line2}{rest}")
}

fn make_poly(it: &mut dyn Interpreter, c: Vec<f64>, is_int: bool) -> Result<Value, Exc> {
    let first = c
        .iter()
        .position(|v| *v != 0.0)
        .unwrap_or(c.len().saturating_sub(1));
    let c: Vec<f64> = if c.is_empty() {
        vec![0.0]
    } else {
        c[first..].to_vec()
    };
    let text = poly_text(&c);
    let n = c.len();
    let dtype = if is_int { DType::Int64 } else { DType::Float64 };
    let arr = wrap(make(it, c, &[n], dtype, Device::cpu(0))?, Flavor::Numpy);
    let body = crate::object::format::repr(it, &arr)?;
    let repr = format!("poly1d{}", body.strip_prefix("array").unwrap_or(&body));
    Ok(Value::Object(Rc::new(Poly1d {
        coeffs: arr,
        order: n as i64 - 1,
        repr,
        text,
    })))
}

fn poly1d(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let c = a.required(0, "c_or_r")?;
    let r = a.flag(1, "r", false)?;
    a.take(2, "variable")?;
    a.finish(3)?;
    if let Ok(p) = poly_of(&c) {
        return Ok(Value::Object(Rc::new(Poly1d {
            coeffs: p.coeffs.clone(),
            order: p.order,
            repr: p.repr.clone(),
            text: p.text.clone(),
        })));
    }
    if r {
        return Err(Exc::value_error(
            "poly1d(r=True) (from roots) is not supported here",
        ));
    }
    let x = as_array(it, &c)?;
    if x.array.ndim() > 1 {
        return Err(Exc::value_error("Polynomial must be 1d only."));
    }
    let is_int = !x.array.dtype().is_float();
    make_poly(it, values(&x), is_int)
}

/// Adds the functions to `numpy` (and `trapezoid` to `torch`).
pub fn install_numpy(m: &Module) {
    let fns: [(&'static str, &'static str, BuiltinFn); 8] = [
        ("poly1d", "poly1d(c): the polynomial with coefficients c (highest power first); p(x) evaluates it.", poly1d),
        ("interp", "interp(x, xp, fp, left=None, right=None): piecewise-linear interpolation of the points (xp, fp) at x.", interp),
        ("gradient", "gradient(f, *varargs, axis=None): the derivative by central differences (one-sided at the edges).", gradient),
        ("trapz", "trapz(y, x=None, dx=1.0, axis=-1): the integral by the trapezoidal rule.", trapz),
        ("convolve", "convolve(a, v, mode='full'): the discrete linear convolution of two 1-D sequences.", convolve),
        ("polyval", "polyval(p, x): the polynomial with coefficients p (highest power first) at x.", polyval),
        ("polyfit", "polyfit(x, y, deg, rcond=None): least-squares polynomial coefficients, highest power first.", polyfit),
        ("vander", "vander(x, N=None, increasing=False): the Vandermonde matrix of x.", vander),
    ];
    for (name, doc, f) in fns {
        if m.get(name).is_none() {
            m.set(name, builtin(name, doc, f));
        }
    }
}

pub fn install_torch(m: &Module) {
    if m.get("trapezoid").is_none() {
        m.set(
            "trapezoid",
            builtin(
                "trapezoid",
                "trapezoid(y, x=None, *, dx=None, dim=-1): the integral by the trapezoidal rule.",
                trapezoid,
            ),
        );
        m.set(
            "trapz",
            builtin(
                "trapezoid",
                "trapz(y, x=None, *, dx=None, dim=-1): the integral by the trapezoidal rule.",
                trapezoid,
            ),
        );
    }
}
