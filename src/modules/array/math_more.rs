//! Elementwise math beyond the runtime's primitive ops, in every dialect's spelling: NumPy's
//! ufuncs (`np.arcsin`, `np.arctan2`, `np.hypot`, `np.fmod`, `np.logaddexp`, `np.deg2rad`...,
//! also `mxnet.np`/`mxnet.nd`), PyTorch's functions, tensor methods and in-place `_` methods
//! (`torch.asin`, `x.atan2(y)`, `x.asin_()`), the comparisons as functions (`np.greater`,
//! `torch.eq`, `x.ge(y)`: the operators' own semantics), `clamp` with tensor bounds, `lerp`,
//! `nan_to_num` and the NaN/infinity tests.
//!
//! One table (`SPECS`) names each function per library and says how it is computed: composed
//! from the tape's ops (recorded as those ops, on the input's device), or, where the runtime
//! has no kernel (`asin`, `erf`, `atan2`), in double precision on the host and rounded once to
//! the result dtype, recorded on the tape as one `Local` node whose derivative is taken at
//! forward. Result dtypes: float functions keep float32/float64 and compute integers in the
//! library's default float (NumPy float64, PyTorch and MXNet float32); a 0-d operand or a
//! Python number does not widen a dimensioned array's dtype (NumPy's value-based casting,
//! PyTorch's dimension priority).

use crate::lang::ast::CmpOp;
use crate::modules::array::fn_args::{array_arg, flavor_of};
use crate::modules::array::numpy_fns::{as_array, broadcast_all, broadcast_positions};
use crate::nn::autograd::Tape;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{self, as_f64, wrap};
use crate::object::value::{Args, ArrayValue, Flavor, Module, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{Array, BinaryOp, DType, Device, HostData, Operand, Runtime, Scalar, UnaryOp};

type RtResult<T> = crate::runtime::Result<T>;

/// How a function computes.
#[derive(Clone, Copy)]
enum Op {
    /// f(x) on the host; `df(x, y)` is dy/dx at x (y = f(x)).
    Host1(fn(f64) -> f64, fn(f64, f64) -> f64),
    /// f(a, b) on the host; `df(a, b, y)` is (dy/da, dy/db).
    Host2(fn(f64, f64) -> f64, fn(f64, f64, f64) -> (f64, f64)),
    /// Composed from the tape's ops on x cast to the result dtype.
    Composed(fn(&mut Tape, &Array) -> RtResult<Array>),
}

struct Spec {
    /// NumPy's names (also `mxnet.np` and `mxnet.nd`).
    numpy: &'static [&'static str],
    /// PyTorch's names: `torch.X`, `Tensor.X` and the in-place `Tensor.X_`.
    torch: &'static [&'static str],
    doc: &'static str,
    op: Op,
    /// Integer inputs keep an integer dtype (`fmod`, `fmax`), instead of computing in float.
    int_keeps: bool,
    /// PyTorch's `grad_fn` name.
    grad_fn: &'static str,
}

const LN2: f64 = std::f64::consts::LN_2;

fn d_asin(x: f64, _: f64) -> f64 {
    1.0 / (1.0 - x * x).sqrt()
}
fn d_acos(x: f64, _: f64) -> f64 {
    -1.0 / (1.0 - x * x).sqrt()
}
fn d_atan(x: f64, _: f64) -> f64 {
    1.0 / (1.0 + x * x)
}
fn d_asinh(x: f64, _: f64) -> f64 {
    1.0 / (x * x + 1.0).sqrt()
}
fn d_acosh(x: f64, _: f64) -> f64 {
    1.0 / (x * x - 1.0).sqrt()
}
fn d_atanh(x: f64, _: f64) -> f64 {
    1.0 / (1.0 - x * x)
}
fn d_erf(x: f64, _: f64) -> f64 {
    std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp()
}
fn d_erfc(x: f64, _: f64) -> f64 {
    -std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp()
}

/// The digamma function: the recurrence up to x >= 6, then the asymptotic series (and the
/// reflection formula below zero).
fn digamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x <= 0.0 && x == x.floor() {
        return if x == 0.0 {
            f64::NEG_INFINITY.copysign(-x)
        } else {
            f64::NAN
        };
    }
    if x < 0.0 {
        return digamma(1.0 - x) - std::f64::consts::PI / (std::f64::consts::PI * x).tan();
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 6.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    let series = f
        * (1.0 / 12.0
            - f * (1.0 / 120.0 - f * (1.0 / 252.0 - f * (1.0 / 240.0 - f * (1.0 / 132.0)))));
    acc + x.ln() - 0.5 / x - series
}

/// The trigamma function (digamma's derivative), for digamma's gradient.
fn trigamma(x: f64) -> f64 {
    if x <= 0.0 && x == x.floor() {
        return f64::INFINITY;
    }
    if x < 0.0 {
        let s = (std::f64::consts::PI * x).sin();
        return -trigamma(1.0 - x) + std::f64::consts::PI * std::f64::consts::PI / (s * s);
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 6.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    acc + 1.0 / x + f / 2.0 + f / x * (1.0 / 6.0 - f * (1.0 / 30.0 - f * (1.0 / 42.0 - f / 30.0)))
}

/// NumPy's `npy_remainder`: the sign of the divisor, as Python's `%`.
fn remainder(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        return a % b;
    }
    let m = a % b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        m + b
    } else if m == 0.0 {
        0.0f64.copysign(b)
    } else {
        m
    }
}

/// NumPy's `npy_logaddexp`.
fn logaddexp(x: f64, y: f64) -> f64 {
    if x == y {
        return x + LN2;
    }
    let d = x - y;
    if d > 0.0 {
        x + (-d).exp().ln_1p()
    } else if d <= 0.0 {
        y + d.exp().ln_1p()
    } else {
        d
    }
}

/// NumPy's `npy_logaddexp2`.
fn logaddexp2(x: f64, y: f64) -> f64 {
    if x == y {
        return x + 1.0;
    }
    let d = x - y;
    let log2_1p = |v: f64| std::f64::consts::LOG2_E * v.ln_1p();
    if d > 0.0 {
        x + log2_1p((-d).exp2())
    } else if d <= 0.0 {
        y + log2_1p(d.exp2())
    } else {
        d
    }
}

fn fmax(a: f64, b: f64) -> f64 {
    if a.is_nan() || (!b.is_nan() && b > a) {
        b
    } else {
        a
    }
}

fn fmin(a: f64, b: f64) -> f64 {
    if a.is_nan() || (!b.is_nan() && b < a) {
        b
    } else {
        a
    }
}

/// 1 where the chosen operand is `a`, else 0 (the gradient's route through fmax/fmin).
fn picks(a: f64, y: f64) -> (f64, f64) {
    if a == y || (a.is_nan() && y.is_nan()) {
        (1.0, 0.0)
    } else {
        (0.0, 1.0)
    }
}

static SPECS: &[Spec] = &[
    Spec {
        numpy: &["arcsin"],
        torch: &["asin", "arcsin"],
        doc: "arcsin(x): inverse sine, elementwise.",
        op: Op::Host1(f64::asin, d_asin),
        int_keeps: false,
        grad_fn: "AsinBackward0",
    },
    Spec {
        numpy: &["arccos"],
        torch: &["acos", "arccos"],
        doc: "arccos(x): inverse cosine, elementwise.",
        op: Op::Host1(f64::acos, d_acos),
        int_keeps: false,
        grad_fn: "AcosBackward0",
    },
    Spec {
        numpy: &["arctan"],
        torch: &["atan", "arctan"],
        doc: "arctan(x): inverse tangent, elementwise.",
        op: Op::Host1(f64::atan, d_atan),
        int_keeps: false,
        grad_fn: "AtanBackward0",
    },
    Spec {
        numpy: &["arcsinh"],
        torch: &["asinh", "arcsinh"],
        doc: "arcsinh(x): inverse hyperbolic sine, elementwise.",
        op: Op::Host1(f64::asinh, d_asinh),
        int_keeps: false,
        grad_fn: "AsinhBackward0",
    },
    Spec {
        numpy: &["arccosh"],
        torch: &["acosh", "arccosh"],
        doc: "arccosh(x): inverse hyperbolic cosine, elementwise.",
        op: Op::Host1(f64::acosh, d_acosh),
        int_keeps: false,
        grad_fn: "AcoshBackward0",
    },
    Spec {
        numpy: &["arctanh"],
        torch: &["atanh", "arctanh"],
        doc: "arctanh(x): inverse hyperbolic tangent, elementwise.",
        op: Op::Host1(f64::atanh, d_atanh),
        int_keeps: false,
        grad_fn: "AtanhBackward0",
    },
    Spec {
        numpy: &["sinh"],
        torch: &[],
        doc: "sinh(x): hyperbolic sine, elementwise.",
        op: Op::Host1(f64::sinh, |x, _| x.cosh()),
        int_keeps: false,
        grad_fn: "SinhBackward0",
    },
    Spec {
        numpy: &["cosh"],
        torch: &[],
        doc: "cosh(x): hyperbolic cosine, elementwise.",
        op: Op::Host1(f64::cosh, |x, _| x.sinh()),
        int_keeps: false,
        grad_fn: "CoshBackward0",
    },
    Spec {
        numpy: &["exp2"],
        torch: &["exp2"],
        doc: "exp2(x): 2 to the x, elementwise.",
        op: Op::Host1(f64::exp2, |_, y| LN2 * y),
        int_keeps: false,
        grad_fn: "Exp2Backward0",
    },
    Spec {
        numpy: &["cbrt"],
        torch: &[],
        doc: "cbrt(x): cube root, elementwise.",
        op: Op::Host1(f64::cbrt, |_, y| 1.0 / (3.0 * y * y)),
        int_keeps: false,
        grad_fn: "CbrtBackward0",
    },
    Spec {
        numpy: &[],
        torch: &["erf"],
        doc: "erf(input): the error function, elementwise.",
        op: Op::Host1(libm::erf, d_erf),
        int_keeps: false,
        grad_fn: "ErfBackward0",
    },
    Spec {
        numpy: &[],
        torch: &["erfc"],
        doc: "erfc(input): 1 - erf(input), elementwise.",
        op: Op::Host1(libm::erfc, d_erfc),
        int_keeps: false,
        grad_fn: "ErfcBackward0",
    },
    Spec {
        numpy: &[],
        torch: &["log1p"],
        doc: "log1p(input): log(1 + input), accurate for small input.",
        op: Op::Host1(f64::ln_1p, |x, _| 1.0 / (1.0 + x)),
        int_keeps: false,
        grad_fn: "Log1PBackward0",
    },
    Spec {
        numpy: &[],
        torch: &["expm1"],
        doc: "expm1(input): exp(input) - 1, accurate for small input.",
        op: Op::Host1(f64::exp_m1, |_, y| y + 1.0),
        int_keeps: false,
        grad_fn: "Expm1Backward0",
    },
    Spec {
        numpy: &["deg2rad", "radians"],
        torch: &["deg2rad"],
        doc: "deg2rad(x): degrees to radians, x * (pi / 180).",
        op: Op::Composed(|t, x| {
            t.binary(
                BinaryOp::Mul,
                Operand::Array(x),
                Operand::Scalar(Scalar::Float(std::f64::consts::PI / 180.0)),
            )
        }),
        int_keeps: false,
        grad_fn: "",
    },
    Spec {
        numpy: &["rad2deg", "degrees"],
        torch: &["rad2deg"],
        doc: "rad2deg(x): radians to degrees, x * (180 / pi).",
        op: Op::Composed(|t, x| {
            t.binary(
                BinaryOp::Mul,
                Operand::Array(x),
                Operand::Scalar(Scalar::Float(180.0 / std::f64::consts::PI)),
            )
        }),
        int_keeps: false,
        grad_fn: "",
    },
    Spec {
        numpy: &["fabs"],
        torch: &[],
        doc: "fabs(x): absolute value as a float, elementwise.",
        op: Op::Composed(|t, x| t.unary(x, UnaryOp::Abs)),
        int_keeps: false,
        grad_fn: "",
    },
    Spec {
        numpy: &[],
        torch: &["rsqrt"],
        doc: "rsqrt(input): 1 / sqrt(input), elementwise.",
        op: Op::Composed(|t, x| {
            let s = t.unary(x, UnaryOp::Sqrt)?;
            t.unary(&s, UnaryOp::Reciprocal)
        }),
        int_keeps: false,
        grad_fn: "",
    },
    Spec {
        numpy: &[],
        torch: &["frac"],
        doc: "frac(input): the fractional part, input - trunc(input).",
        op: Op::Composed(|t, x| {
            let w = t.unary(x, UnaryOp::Trunc)?;
            t.binary(BinaryOp::Sub, Operand::Array(x), Operand::Array(&w))
        }),
        int_keeps: false,
        grad_fn: "",
    },
    Spec {
        numpy: &["reciprocal"],
        torch: &["reciprocal"],
        doc: "reciprocal(x): 1 / x, elementwise.",
        op: Op::Composed(|t, x| t.unary(x, UnaryOp::Reciprocal)),
        int_keeps: false,
        grad_fn: "",
    },
    Spec {
        numpy: &[],
        torch: &["trunc", "fix"],
        doc: "trunc(input): input rounded towards zero, elementwise.",
        op: Op::Composed(|t, x| t.unary(x, UnaryOp::Trunc)),
        int_keeps: true,
        grad_fn: "",
    },
    Spec {
        numpy: &["ceil"],
        torch: &["ceil"],
        doc: "ceil(x): the smallest integer >= x, elementwise.",
        op: Op::Composed(|t, x| t.unary(x, UnaryOp::Ceil)),
        int_keeps: true,
        grad_fn: "",
    },
    Spec {
        numpy: &["floor"],
        torch: &["floor"],
        doc: "floor(x): the largest integer <= x, elementwise.",
        op: Op::Composed(|t, x| t.unary(x, UnaryOp::Floor)),
        int_keeps: true,
        grad_fn: "",
    },
    Spec {
        numpy: &["round", "around"],
        torch: &["round"],
        doc: "round(x, decimals=0): rounded half to even, elementwise.",
        op: Op::Composed(|t, x| t.unary(x, UnaryOp::Round)),
        int_keeps: true,
        grad_fn: "",
    },
    Spec {
        numpy: &["sign"],
        torch: &["sign"],
        doc: "sign(x): -1, 0 or 1, elementwise.",
        op: Op::Composed(|t, x| t.unary(x, UnaryOp::Sign)),
        int_keeps: true,
        grad_fn: "",
    },
    Spec {
        numpy: &["tan"],
        torch: &["tan"],
        doc: "tan(x): tangent, elementwise.",
        op: Op::Composed(|t, x| t.unary(x, UnaryOp::Tan)),
        int_keeps: false,
        grad_fn: "",
    },
    Spec {
        numpy: &["log2"],
        torch: &["log2"],
        doc: "log2(x): base-2 logarithm, elementwise.",
        op: Op::Composed(|t, x| t.unary(x, UnaryOp::Log2)),
        int_keeps: false,
        grad_fn: "",
    },
    Spec {
        numpy: &["log10"],
        torch: &["log10"],
        doc: "log10(x): base-10 logarithm, elementwise.",
        op: Op::Composed(|t, x| t.unary(x, UnaryOp::Log10)),
        int_keeps: false,
        grad_fn: "",
    },
    Spec {
        numpy: &[],
        torch: &["lgamma"],
        doc: "lgamma(input): log |gamma(input)|, elementwise.",
        op: Op::Host1(libm::lgamma, |x, _| digamma(x)),
        int_keeps: false,
        grad_fn: "LgammaBackward0",
    },
    Spec {
        numpy: &[],
        torch: &["digamma"],
        doc: "digamma(input): the derivative of lgamma, elementwise.",
        op: Op::Host1(digamma, |x, _| trigamma(x)),
        int_keeps: false,
        grad_fn: "DigammaBackward0",
    },
    Spec {
        numpy: &["arctan2"],
        torch: &["atan2", "arctan2"],
        doc: "arctan2(x1, x2): the angle of the point (x2, x1), elementwise.",
        op: Op::Host2(f64::atan2, |a, b, _| {
            let r = a * a + b * b;
            (b / r, -a / r)
        }),
        int_keeps: false,
        grad_fn: "Atan2Backward0",
    },
    Spec {
        numpy: &["hypot"],
        torch: &["hypot"],
        doc: "hypot(x1, x2): sqrt(x1**2 + x2**2), elementwise, without overflow.",
        op: Op::Host2(f64::hypot, |a, b, y| (a / y, b / y)),
        int_keeps: false,
        grad_fn: "HypotBackward0",
    },
    Spec {
        numpy: &["fmod"],
        torch: &["fmod"],
        doc: "fmod(x1, x2): the remainder of the division, with the sign of x1 (C's fmod).",
        op: Op::Host2(|a, b| a % b, |a, b, _| (1.0, -(a / b).trunc())),
        int_keeps: true,
        grad_fn: "FmodBackward0",
    },
    Spec {
        numpy: &["remainder", "mod"],
        torch: &["remainder"],
        doc: "remainder(x1, x2): the remainder of the division, with the sign of x2 (Python's %).",
        op: Op::Host2(remainder, |a, b, _| (1.0, -(a / b).floor())),
        int_keeps: true,
        grad_fn: "RemainderBackward0",
    },
    Spec {
        numpy: &["fmax"],
        torch: &["fmax"],
        doc: "fmax(x1, x2): the larger value, elementwise, ignoring NaN.",
        op: Op::Host2(fmax, |a, _, y| picks(a, y)),
        int_keeps: true,
        grad_fn: "FmaxBackward0",
    },
    Spec {
        numpy: &["fmin"],
        torch: &["fmin"],
        doc: "fmin(x1, x2): the smaller value, elementwise, ignoring NaN.",
        op: Op::Host2(fmin, |a, _, y| picks(a, y)),
        int_keeps: true,
        grad_fn: "FminBackward0",
    },
    Spec {
        numpy: &["logaddexp"],
        torch: &["logaddexp"],
        doc: "logaddexp(x1, x2): log(exp(x1) + exp(x2)), without overflow.",
        op: Op::Host2(logaddexp, |a, b, y| ((a - y).exp(), (b - y).exp())),
        int_keeps: false,
        grad_fn: "LogaddexpBackward0",
    },
    Spec {
        numpy: &["logaddexp2"],
        torch: &["logaddexp2"],
        doc: "logaddexp2(x1, x2): log2(2**x1 + 2**x2), without overflow.",
        op: Op::Host2(logaddexp2, |a, b, y| ((a - y).exp2(), (b - y).exp2())),
        int_keeps: false,
        grad_fn: "Logaddexp2Backward0",
    },
    Spec {
        numpy: &["copysign"],
        torch: &["copysign"],
        doc: "copysign(x1, x2): the magnitude of x1 with the sign of x2.",
        op: Op::Host2(f64::copysign, |a, b, _| {
            (
                if (a.is_sign_negative()) == (b.is_sign_negative()) {
                    1.0
                } else {
                    -1.0
                },
                0.0,
            )
        }),
        int_keeps: false,
        grad_fn: "CopysignBackward0",
    },
];

fn spec_of(flavor: Flavor, name: &str) -> Option<&'static Spec> {
    let name = name
        .strip_suffix('_')
        .filter(|_| flavor == Flavor::Torch)
        .unwrap_or(name);
    SPECS.iter().find(|s| match flavor {
        Flavor::Torch => s.torch.contains(&name),
        _ => s.numpy.contains(&name),
    })
}

// ------------------------------------------------------------------ operands

/// One operand: an array, or a Python number (which never decides the dtype).
enum Arg {
    Array(ArrayValue),
    Number(f64),
}

impl Arg {
    fn shape(&self) -> &[usize] {
        match self {
            Arg::Array(a) => a.array.shape(),
            Arg::Number(_) => &[],
        }
    }
}

/// The operand `v` (argument `name` at `position`) of function `fname` in `flavor`'s rules.
fn operand(
    it: &mut dyn Interpreter,
    flavor: Flavor,
    fname: &str,
    name: &str,
    position: usize,
    v: &Value,
) -> Result<Arg, Exc> {
    if let Value::Array(a) = v {
        return Ok(Arg::Array(a.clone()));
    }
    if flavor == Flavor::Torch {
        // PyTorch takes a number as the second operand of some functions only (bools are
        // numbers there).
        let takes_number = matches!(
            fname.trim_end_matches('_'),
            "fmod" | "remainder" | "copysign"
        );
        return match as_f64(v) {
            Some(f) if position > 1 && takes_number => Ok(Arg::Number(f)),
            _ => array_arg(it, flavor, fname, name, position, v).map(Arg::Array),
        };
    }
    if !matches!(v, Value::Bool(_)) {
        if let Some(f) = as_f64(v) {
            return Ok(Arg::Number(f));
        }
    }
    if matches!(v, Value::List(_) | Value::Tuple(_) | Value::Bool(_)) {
        return Ok(Arg::Array(as_array(it, v)?));
    }
    Err(Exc::type_error(format!(
        "ufunc '{fname}' not supported for the input types, and the inputs could not be safely coerced to any supported types according to the casting rule ''safe''"
    )))
}

/// The dtype of a result: the dimensioned arrays' dtypes decide (all operands' when none
/// has a dimension); float functions compute integers and bools in the default float.
fn result_dtype(flavor: Flavor, args: &[Arg], int_keeps: bool) -> DType {
    let arrays: Vec<&Array> = args
        .iter()
        .filter_map(|a| match a {
            Arg::Array(a) => Some(&a.array),
            Arg::Number(_) => None,
        })
        .collect();
    let dimensioned: Vec<DType> = arrays
        .iter()
        .filter(|a| a.ndim() > 0)
        .map(|a| a.dtype())
        .collect();
    let mut dtypes = if dimensioned.is_empty() {
        arrays.iter().map(|a| a.dtype()).collect()
    } else {
        dimensioned
    };
    let number_is_float = args
        .iter()
        .any(|a| matches!(a, Arg::Number(f) if f.fract() != 0.0 || !f.is_finite()));
    if dtypes.is_empty() {
        dtypes.push(if number_is_float {
            DType::Float64
        } else {
            DType::Int64
        });
    }
    let default_float = if flavor == Flavor::Numpy {
        DType::Float64
    } else {
        DType::Float32
    };
    if dtypes.contains(&DType::Float64) {
        DType::Float64
    } else if dtypes.contains(&DType::Float32) {
        DType::Float32
    } else if int_keeps && !number_is_float && !dtypes.contains(&DType::Bool) {
        if dtypes.contains(&DType::Int64) {
            DType::Int64
        } else {
            DType::Int32
        }
    } else {
        default_float
    }
}

/// The values of an operand, as f64.
fn values(a: &Arg) -> Vec<f64> {
    match a {
        Arg::Array(a) => a.array.to_host().to_f64_vec(),
        Arg::Number(f) => vec![*f],
    }
}

/// An array of `dtype` on `device` from f64 values (rounded once).
fn from_f64(
    rt: &Runtime,
    v: Vec<f64>,
    shape: &[usize],
    dtype: DType,
    device: Device,
) -> RtResult<Array> {
    let host = rt.from_host(HostData::F64(v), shape, Device::cpu(0))?;
    let cast = if dtype == DType::Float64 {
        host
    } else {
        host.astype(dtype)?
    };
    cast.copy_to(rt, device)
}

/// The result value: NumPy's 0-d results are its scalars.
fn finish(out: Array, flavor: Flavor) -> Result<Value, Exc> {
    if flavor == Flavor::Numpy && out.ndim() == 0 {
        return ops::numpy_scalar(&out);
    }
    Ok(wrap(out, flavor))
}

/// `spec` of `args` (one or two operands): the result array, recorded on the tape.
fn compute(
    it: &mut dyn Interpreter,
    spec: &Spec,
    flavor: Flavor,
    args: &[Arg],
) -> Result<Array, Exc> {
    let dtype = result_dtype(flavor, args, spec.int_keeps);
    let device = args
        .iter()
        .find_map(|a| match a {
            Arg::Array(a) => Some(a.array.device()),
            Arg::Number(_) => None,
        })
        .unwrap_or(Device::cpu(0));
    let st = it.state_mut();
    let (rt, tape) = (&st.rt, &mut st.nn.tape);
    match (spec.op, args) {
        (Op::Composed(f), [Arg::Array(x)]) => {
            let x = if x.array.dtype() == dtype {
                x.array.clone()
            } else {
                tape.astype(&x.array, dtype)?
            };
            Ok(f(tape, &x)?)
        }
        (Op::Composed(f), [Arg::Number(v)]) => {
            let x = from_f64(rt, vec![*v], &[], dtype, device)?;
            Ok(f(tape, &x)?)
        }
        (Op::Host1(f, df), [x]) => {
            let xs = values(x);
            let int = !dtype.is_float();
            let ys: Vec<f64> = xs
                .iter()
                .map(|v| if int { f(*v).trunc() } else { f(*v) })
                .collect();
            let out = from_f64(rt, ys.clone(), x.shape(), dtype, device)?;
            if let Arg::Array(xa) = x {
                tape.local(
                    &[&xa.array],
                    &out,
                    || {
                        let d = xs.iter().zip(&ys).map(|(x, y)| df(*x, *y)).collect();
                        Ok(vec![from_f64(rt, d, out.shape(), dtype, device)?])
                    },
                    spec.grad_fn,
                )?;
            }
            Ok(out)
        }
        (Op::Host2(f, df), [a, b]) => {
            let shape = broadcast_all(&[a.shape(), b.shape()]).map_err(|e| match flavor {
                Flavor::Torch => Exc::new(
                    ExcKind::RuntimeError,
                    format!(
                        "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension {}",
                        a.shape().last().copied().unwrap_or(1),
                        b.shape().last().copied().unwrap_or(1),
                        0
                    ),
                ),
                _ => e,
            })?;
            let (av, bv) = (values(a), values(b));
            let (pa, pb) = (
                broadcast_positions(a.shape(), &shape),
                broadcast_positions(b.shape(), &shape),
            );
            let int = !dtype.is_float();
            let mut xs = Vec::with_capacity(pa.len());
            let mut ys = Vec::with_capacity(pa.len());
            for (i, j) in pa.iter().zip(&pb) {
                let (x, y) = (av[*i], bv[*j]);
                xs.push((x, y));
                let v = f(x, y);
                // Integer division by zero gives 0, as NumPy's (with its warning).
                ys.push(match (int, v.is_nan()) {
                    (true, true) => 0.0,
                    (true, false) => v.trunc(),
                    _ => v,
                });
            }
            let out = from_f64(rt, ys.clone(), &shape, dtype, device)?;
            let inputs: Vec<&Array> = [a, b]
                .iter()
                .filter_map(|a| match a {
                    Arg::Array(a) => Some(&a.array),
                    Arg::Number(_) => None,
                })
                .collect();
            let which: Vec<usize> = [a, b]
                .iter()
                .enumerate()
                .filter(|(_, a)| matches!(a, Arg::Array(_)))
                .map(|(k, _)| k)
                .collect();
            tape.local(
                &inputs,
                &out,
                || {
                    let mut ds = Vec::new();
                    for k in which {
                        let d: Vec<f64> = xs
                            .iter()
                            .zip(&ys)
                            .map(|((x, y), o)| {
                                let (da, db) = df(*x, *y, *o);
                                if k == 0 {
                                    da
                                } else {
                                    db
                                }
                            })
                            .collect();
                        ds.push(from_f64(rt, d, &shape, dtype, device)?);
                    }
                    Ok(ds)
                },
                spec.grad_fn,
            )?;
            Ok(out)
        }
        _ => Err(Exc::type_error("wrong number of operands")),
    }
}

/// The operands of a call of `spec`: `x`/`input` (and `x2`/`other`) by position or keyword.
fn call_args(
    it: &mut dyn Interpreter,
    spec: &Spec,
    flavor: Flavor,
    receiver: Option<&Value>,
    mut a: Args,
) -> Result<Vec<Arg>, Exc> {
    let binary = matches!(spec.op, Op::Host2(..));
    let names: &[&str] = match (flavor, binary) {
        (Flavor::Torch, false) => &["input"],
        (Flavor::Torch, true) => &["input", "other"],
        (_, false) => &["x"],
        (_, true) => &["x1", "x2"],
    };
    let fname = a.fname;
    let mut vals = Vec::new();
    let start = usize::from(receiver.is_some());
    if let Some(r) = receiver {
        vals.push(r.clone());
    }
    for (k, name) in names.iter().enumerate().skip(start) {
        vals.push(a.required(k - start, name)?);
    }
    a.take_kw("out");
    if flavor != Flavor::Torch {
        for kw in ["where", "casting", "order", "dtype", "subok"] {
            a.take_kw(kw);
        }
    }
    a.finish(names.len() - start)?;
    vals.iter()
        .zip(names)
        .enumerate()
        .map(|(k, (v, name))| operand(it, flavor, fname, name, k + 1, v))
        .collect()
}

fn apply(
    it: &mut dyn Interpreter,
    flavor: Flavor,
    receiver: Option<&Value>,
    mut a: Args,
) -> Result<Value, Exc> {
    let fname = a.fname;
    let spec = spec_of(flavor, fname)
        .ok_or_else(|| Exc::type_error(format!("{fname}() is not available")))?;
    let decimals = if fname == "round" {
        a.take_kw("decimals")
            .and_then(|v| crate::object::ops::as_i64(&v))
            .unwrap_or(0)
    } else {
        0
    };
    let args = call_args(it, spec, flavor, receiver, a)?;
    if decimals != 0 {
        if let [Arg::Array(x)] = args.as_slice() {
            let scale = 10f64.powi(decimals as i32);
            let tape = &mut it.state_mut().nn.tape;
            let k = |v: f64| Operand::Scalar(Scalar::Float(v));
            let up = tape.binary(BinaryOp::Mul, Operand::Array(&x.array), k(scale))?;
            let r = tape.unary(&up, UnaryOp::Round)?;
            let out = tape.binary(BinaryOp::Div, Operand::Array(&r), k(scale))?;
            return finish(out, x.flavor);
        }
    }
    let out_flavor = args
        .iter()
        .find_map(|a| match a {
            Arg::Array(a) => Some(a.flavor),
            Arg::Number(_) => None,
        })
        .unwrap_or(flavor);
    let out = compute(it, spec, flavor, &args)?;
    finish(out, out_flavor)
}

fn ufunc<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    apply(it, flavor_of::<F>(), None, a)
}

// ------------------------------------------------------------------ comparisons and tests

/// The comparison functions: NumPy's and PyTorch's names for each operator.
const COMPARISONS: &[(&str, CmpOp)] = &[
    ("equal", CmpOp::Eq),
    ("not_equal", CmpOp::NotEq),
    ("greater", CmpOp::Gt),
    ("greater_equal", CmpOp::GtE),
    ("less", CmpOp::Lt),
    ("less_equal", CmpOp::LtE),
    ("eq", CmpOp::Eq),
    ("ne", CmpOp::NotEq),
    ("gt", CmpOp::Gt),
    ("ge", CmpOp::GtE),
    ("lt", CmpOp::Lt),
    ("le", CmpOp::LtE),
];

fn comparison_of(flavor: Flavor, name: &str) -> Option<CmpOp> {
    let torch_only = ["eq", "ne", "gt", "ge", "lt", "le"];
    // PyTorch's `equal` is whether two tensors are the same (torch/math.rs).
    if flavor == Flavor::Torch && name == "equal" {
        return None;
    }
    if flavor != Flavor::Torch && torch_only.contains(&name) {
        return None;
    }
    COMPARISONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, op)| *op)
}

fn compare(
    it: &mut dyn Interpreter,
    flavor: Flavor,
    receiver: Option<&Value>,
    mut a: Args,
) -> Result<Value, Exc> {
    let fname = a.fname;
    let op = comparison_of(flavor, fname)
        .ok_or_else(|| Exc::type_error(format!("{fname}() is not available")))?;
    let (n1, n2) = if flavor == Flavor::Torch {
        ("input", "other")
    } else {
        ("x1", "x2")
    };
    let (l, start) = match receiver {
        Some(r) => (r.clone(), 0),
        None => (a.required(0, n1)?, 1),
    };
    let r = a.required(start, n2)?;
    a.take_kw("out");
    a.finish(start + 1)?;
    let l = match (&l, flavor) {
        (Value::Array(_), _) => l,
        (_, Flavor::Torch) => {
            return Err(Exc::type_error(format!(
                "{fname}(): argument '{n1}' (position 1) must be Tensor, not {}",
                l.type_name()
            )))
        }
        _ => Value::Array(as_array(it, &l)?),
    };
    let r = match (&r, flavor) {
        (Value::List(_) | Value::Tuple(_), f) if f != Flavor::Torch => {
            Value::Array(as_array(it, &r)?)
        }
        _ => r,
    };
    let out = ops::compare(it, op, &l, &r)?;
    match &out {
        Value::Array(x) if x.flavor == Flavor::Numpy && x.array.ndim() == 0 => {
            ops::numpy_scalar(&x.array)
        }
        _ => Ok(out),
    }
}

fn compare_fn<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    compare(it, flavor_of::<F>(), None, a)
}

/// `isnan`/`isinf`/`isfinite`/`isposinf`/`isneginf` of a tensor, composed from comparisons.
fn float_test(it: &mut dyn Interpreter, x: &ArrayValue, name: &str) -> Result<Value, Exc> {
    let arr = &x.array;
    let cmp = |op: BinaryOp, l: &Array, v: f64| {
        Array::binary(op, Operand::Array(l), Operand::Scalar(Scalar::Float(v)))
    };
    let out = match name {
        "isnan" => Array::binary(BinaryOp::Ne, Operand::Array(arr), Operand::Array(arr))?,
        "isposinf" => cmp(BinaryOp::Eq, arr, f64::INFINITY)?,
        "isneginf" => cmp(BinaryOp::Eq, arr, f64::NEG_INFINITY)?,
        "isinf" => cmp(BinaryOp::Eq, &arr.unary(UnaryOp::Abs)?, f64::INFINITY)?,
        _ => cmp(BinaryOp::Lt, &arr.unary(UnaryOp::Abs)?, f64::INFINITY)?,
    };
    let _ = it;
    finish(out, x.flavor)
}

fn tensor_arg(v: &Value, fname: &str, name: &str, position: usize) -> Result<ArrayValue, Exc> {
    match v {
        Value::Array(a) => Ok(a.clone()),
        other => Err(Exc::type_error(format!(
            "{fname}(): argument '{name}' (position {position}) must be Tensor, not {}",
            other.type_name()
        ))),
    }
}

fn float_test_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "input")?;
    a.finish(1)?;
    let x = tensor_arg(&x, a.fname, "input", 1)?;
    float_test(it, &x, a.fname)
}

// ------------------------------------------------------------------ clamp, lerp, nan_to_num

/// A bound of `clamp`: none, a number, or a tensor.
fn bound(v: Option<Value>) -> Result<Option<Arg>, Exc> {
    Ok(match &v {
        None | Some(Value::None) => None,
        Some(Value::Array(a)) => Some(Arg::Array(a.clone())),
        Some(v) => Some(Arg::Number(as_f64(v).ok_or_else(|| {
            Exc::type_error(format!(
                "clamp(): argument 'min' must be Number, not {}",
                v.type_name()
            ))
        })?)),
    })
}

/// `x` limited to [lo, hi]: numbers through the tape's clip, tensors as maximum then minimum
/// (so a minimum above the maximum gives the maximum, as PyTorch's).
fn clamp_array(tape: &mut Tape, x: &Array, lo: &Option<Arg>, hi: &Option<Arg>) -> RtResult<Array> {
    let num = |b: &Option<Arg>| match b {
        Some(Arg::Number(f)) => Some(*f),
        _ => None,
    };
    if !matches!(lo, Some(Arg::Array(_))) && !matches!(hi, Some(Arg::Array(_))) {
        return tape.clip(x, num(lo), num(hi));
    }
    let mut out = x.clone();
    for (b, op) in [(lo, BinaryOp::Maximum), (hi, BinaryOp::Minimum)] {
        out = match b {
            Some(Arg::Array(t)) => {
                tape.binary(op, Operand::Array(&out), Operand::Array(&t.array))?
            }
            Some(Arg::Number(f)) => {
                tape.binary(op, Operand::Array(&out), Operand::Scalar(Scalar::Float(*f)))?
            }
            None => out,
        };
    }
    Ok(out)
}

/// PyTorch's error for bounds of both kinds (a tensor and a number): the call's argument
/// types, then the two signatures.
fn clamp_mixed(fname: &str, a: &Args) -> Exc {
    let kind = |v: &Value| match v {
        Value::Array(_) => "Tensor".to_string(),
        other => other.type_name().to_string(),
    };
    let mut got = vec!["Tensor".to_string()];
    got.extend(a.pos.iter().map(kind));
    let mut kws: Vec<String> =
        a.kw.iter()
            .map(|(k, v)| format!("{k}={}", kind(v)))
            .collect();
    kws.sort();
    got.extend(kws);
    Exc::type_error(format!(
        "{}() received an invalid combination of arguments - got ({}), but expected one of:\n * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n",
        fname.trim_end_matches('_'),
        got.join(", ")
    ))
}

fn clamp_bounds(a: &mut Args, fname: &str) -> Result<(Option<Arg>, Option<Arg>), Exc> {
    let seen = Args {
        pos: a.pos.clone(),
        kw: a.kw.clone(),
        fname: a.fname,
    };
    let (lo, hi) = match fname.trim_end_matches('_') {
        "clamp_min" => (bound(a.take(0, "min")?)?, None),
        "clamp_max" => (None, bound(a.take(0, "max")?)?),
        _ => (bound(a.take(0, "min")?)?, bound(a.take(1, "max")?)?),
    };
    a.finish(if fname.starts_with("clamp_m") { 1 } else { 2 })?;
    let is_tensor = |b: &Option<Arg>| matches!(b, Some(Arg::Array(_)));
    let is_number = |b: &Option<Arg>| matches!(b, Some(Arg::Number(_)));
    if (is_tensor(&lo) && is_number(&hi)) || (is_number(&lo) && is_tensor(&hi)) {
        return Err(clamp_mixed(fname, &seen));
    }
    if lo.is_none() && hi.is_none() {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    Ok((lo, hi))
}

fn clamp_method(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let fname = a.fname;
    let x = tensor_arg(r, fname, "input", 1)?;
    let (lo, hi) = clamp_bounds(&mut a, fname)?;
    if fname.ends_with('_') {
        let others: Vec<Array> = [&lo, &hi]
            .iter()
            .filter_map(|b| match b {
                Some(Arg::Array(t)) => Some(t.array.clone()),
                _ => None,
            })
            .collect();
        let refs: Vec<&Array> = others.iter().collect();
        let st = it.state_mut();
        st.nn
            .tape
            .inplace(&st.rt, &x.array, &refs, |tape, src| {
                clamp_array(tape, src, &lo, &hi)
            })
            .map_err(crate::object::error::inplace_exc)?;
        return Ok(r.clone());
    }
    let out = clamp_array(&mut it.state_mut().nn.tape, &x.array, &lo, &hi)?;
    Ok(wrap(out, x.flavor))
}

/// The first argument of a function that is a method's receiver (`torch.clamp(x, ...)` is
/// `x.clamp(...)`), by position or as `input=`; the rest stay for the method.
fn take_receiver(a: &mut Args) -> Result<Value, Exc> {
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

fn clamp_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_receiver(&mut a)?;
    clamp_method(it, &x, a)
}

/// `torch.lerp(start, end, weight)`: start + weight * (end - start), as PyTorch computes it
/// (from `end` when the weight is at least a half, for accuracy near 1).
fn lerp_method(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let fname = a.fname;
    let start = tensor_arg(r, fname, "input", 1)?;
    let end = a.required(0, "end")?;
    let end = tensor_arg(&end, fname, "end", 2)?;
    let weight = a.required(1, "weight")?;
    a.finish(2)?;
    let weight = match &weight {
        Value::Array(w) => Arg::Array(w.clone()),
        v => Arg::Number(as_f64(v).ok_or_else(|| {
            Exc::type_error(format!(
                "{fname}(): argument 'weight' (position 3) must be Tensor, not {}",
                v.type_name()
            ))
        })?),
    };
    let compute = |tape: &mut Tape, s: &Array| -> RtResult<Array> {
        let diff = tape.binary(BinaryOp::Sub, Operand::Array(&end.array), Operand::Array(s))?;
        match &weight {
            Arg::Number(w) if w.abs() >= 0.5 => {
                let scaled = tape.binary(
                    BinaryOp::Mul,
                    Operand::Array(&diff),
                    Operand::Scalar(Scalar::Float(1.0 - w)),
                )?;
                tape.binary(
                    BinaryOp::Sub,
                    Operand::Array(&end.array),
                    Operand::Array(&scaled),
                )
            }
            Arg::Number(w) => {
                let scaled = tape.binary(
                    BinaryOp::Mul,
                    Operand::Array(&diff),
                    Operand::Scalar(Scalar::Float(*w)),
                )?;
                tape.binary(BinaryOp::Add, Operand::Array(s), Operand::Array(&scaled))
            }
            Arg::Array(w) => {
                let scaled = tape.binary(
                    BinaryOp::Mul,
                    Operand::Array(&diff),
                    Operand::Array(&w.array),
                )?;
                tape.binary(BinaryOp::Add, Operand::Array(s), Operand::Array(&scaled))
            }
        }
    };
    if fname.ends_with('_') {
        let mut others = vec![end.array.clone()];
        if let Arg::Array(w) = &weight {
            others.push(w.array.clone());
        }
        let refs: Vec<&Array> = others.iter().collect();
        let st = it.state_mut();
        st.nn
            .tape
            .inplace(&st.rt, &start.array, &refs, compute)
            .map_err(crate::object::error::inplace_exc)?;
        return Ok(r.clone());
    }
    let out = compute(&mut it.state_mut().nn.tape, &start.array)?;
    Ok(wrap(out, start.flavor))
}

fn lerp_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_receiver(&mut a)?;
    lerp_method(it, &x, a)
}

/// The largest finite value of a float dtype.
fn finite_max(dtype: DType) -> f64 {
    if dtype == DType::Float32 {
        f64::from(f32::MAX)
    } else {
        f64::MAX
    }
}

/// `nan_to_num(x, nan=0.0, posinf=None, neginf=None)`: NaN and infinities replaced (by the
/// dtype's largest finite values when not given); integers unchanged.
fn nan_to_num(
    it: &mut dyn Interpreter,
    x: &ArrayValue,
    mut a: Args,
    first: usize,
) -> Result<Value, Exc> {
    let mut take = |k: usize, name: &str| -> Result<Option<f64>, Exc> {
        match a.take(k, name)? {
            None | Some(Value::None) => Ok(None),
            Some(v) => as_f64(&v).map(Some).ok_or_else(|| {
                Exc::type_error(format!("{name} must be a number, not {}", v.type_name()))
            }),
        }
    };
    if x.flavor != Flavor::Torch {
        take(first, "copy")?;
    }
    let off = usize::from(x.flavor != Flavor::Torch);
    let nan = take(first + off, "nan")?.unwrap_or(0.0);
    let posinf = take(first + off + 1, "posinf")?;
    let neginf = take(first + off + 2, "neginf")?;
    a.take_kw("out");
    a.finish(first + off + 3)?;
    let arr = &x.array;
    let dtype = arr.dtype();
    if !dtype.is_float() {
        return finish(arr.clone(), x.flavor);
    }
    let big = finite_max(dtype);
    let (posinf, neginf) = (posinf.unwrap_or(big), neginf.unwrap_or(-big));
    let xs = arr.to_host().to_f64_vec();
    let ys: Vec<f64> = xs
        .iter()
        .map(|v| {
            if v.is_nan() {
                nan
            } else if *v == f64::INFINITY {
                posinf
            } else if *v == f64::NEG_INFINITY {
                neginf
            } else {
                *v
            }
        })
        .collect();
    let st = it.state_mut();
    let out = from_f64(&st.rt, ys, arr.shape(), dtype, arr.device())?;
    let rt = &st.rt;
    st.nn.tape.local(
        &[arr],
        &out,
        || {
            let d = xs
                .iter()
                .map(|v| if v.is_finite() { 1.0 } else { 0.0 })
                .collect();
            Ok(vec![from_f64(rt, d, arr.shape(), dtype, arr.device())?])
        },
        "NanToNumBackward0",
    )?;
    finish(out, x.flavor)
}

fn nan_to_num_fn<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let v = a.required(
        0,
        if flavor == Flavor::Torch {
            "input"
        } else {
            "x"
        },
    )?;
    let x = match (&v, flavor) {
        (Value::Array(x), _) => x.clone(),
        (_, Flavor::Torch) => tensor_arg(&v, a.fname, "input", 1)?,
        _ => as_array(it, &v)?,
    };
    nan_to_num(it, &x, a, 1)
}

/// `torch.logical_and(input, other)` and the others: bool tensors.
fn logical(
    it: &mut dyn Interpreter,
    x: &ArrayValue,
    mut a: Args,
    first: usize,
) -> Result<Value, Exc> {
    let fname = a.fname.trim_end_matches('_');
    let as_bool = |a: &Array| a.astype(DType::Bool);
    let p = as_bool(&x.array)?;
    let out = if fname == "logical_not" {
        a.take_kw("out");
        a.finish(first)?;
        p.unary(UnaryOp::Not)?
    } else {
        let other = a.required(first, "other")?;
        a.take_kw("out");
        a.finish(first + 1)?;
        let other = tensor_arg(&other, fname, "other", 2)?;
        let q = as_bool(&other.array)?;
        let op = match fname {
            "logical_and" => BinaryOp::And,
            "logical_or" => BinaryOp::Or,
            _ => BinaryOp::Xor,
        };
        Array::binary(op, Operand::Array(&p), Operand::Array(&q))?
    };
    let _ = it;
    Ok(wrap(out, x.flavor))
}

fn logical_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_receiver(&mut a)?;
    let x = tensor_arg(&x, a.fname, "input", 1)?;
    logical(it, &x, a, 0)
}

/// `torch.isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False)`.
fn isclose_method(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor_arg(r, "isclose", "input", 1)?;
    let other = a.required(0, "other")?;
    let other = tensor_arg(&other, "isclose", "other", 2)?;
    let num = |v: Option<Value>, d: f64| v.and_then(|v| as_f64(&v)).unwrap_or(d);
    let rtol = num(a.take(1, "rtol")?, 1e-5);
    let atol = num(a.take(2, "atol")?, 1e-8);
    let equal_nan = a.flag(3, "equal_nan", false)?;
    a.finish(4)?;
    if x.array.dtype() != other.array.dtype() {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "{} did not match {}",
                torch_type_name(x.array.dtype()),
                torch_type_name(other.array.dtype())
            ),
        ));
    }
    let shape = broadcast_all(&[x.array.shape(), other.array.shape()])?;
    let (xv, yv) = (
        x.array.to_host().to_f64_vec(),
        other.array.to_host().to_f64_vec(),
    );
    let (px, py) = (
        broadcast_positions(x.array.shape(), &shape),
        broadcast_positions(other.array.shape(), &shape),
    );
    let close: Vec<bool> = px
        .iter()
        .zip(&py)
        .map(|(i, j)| {
            let (p, q) = (xv[*i], yv[*j]);
            if p == q {
                true
            } else if p.is_nan() || q.is_nan() {
                equal_nan && p.is_nan() && q.is_nan()
            } else {
                (p - q).abs() <= atol + rtol * q.abs()
            }
        })
        .collect();
    let rt = &it.state().rt;
    let out = rt
        .from_host(HostData::Bool(close), &shape, Device::cpu(0))?
        .copy_to(rt, x.array.device())?;
    Ok(wrap(out, x.flavor))
}

pub(crate) fn torch_type_name(d: DType) -> &'static str {
    match d {
        DType::Float32 => "Float",
        DType::Float64 => "Double",
        DType::Int32 => "Int",
        DType::Int64 => "Long",
        _ => "Bool",
    }
}

fn isclose_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = take_receiver(&mut a)?;
    isclose_method(it, &x, a)
}

// ------------------------------------------------------------------ installation

/// Names of this family that MXNet 1.9.1's `mxnet.np` (Np) or `mxnet.nd` (Nd) lacks, so its
/// modules do not grow them.
pub(crate) fn mxnet_lacks(flavor: Flavor, name: &str) -> bool {
    const NP_LACKS: &[&str] = &[
        "exp2",
        "fmod",
        "fmax",
        "fmin",
        "logaddexp",
        "logaddexp2",
        "kron",
        "cross",
        "nansum",
        "nanmean",
        "nanstd",
        "nanvar",
    ];
    const ND_LACKS: &[&str] = &[
        "exp2",
        "deg2rad",
        "rad2deg",
        "fabs",
        "around",
        "arctan2",
        "hypot",
        "fmod",
        "remainder",
        "mod",
        "fmax",
        "fmin",
        "logaddexp",
        "logaddexp2",
        "copysign",
        "less",
        "less_equal",
        "nan_to_num",
    ];
    match flavor {
        Flavor::Np => NP_LACKS.contains(&name),
        Flavor::Nd => ND_LACKS.contains(&name),
        _ => false,
    }
}

/// Adds this file's functions to dialect `F`'s module (`numpy`, `torch`, `mxnet.np`,
/// `mxnet.nd`); names the module already has from a more specific file are kept.
pub fn install<const F: u8>(m: &Module) {
    let flavor = flavor_of::<F>();
    let set = |name: &'static str, doc: &'static str, f: crate::object::value::BuiltinFn| {
        if m.get(name).is_none() && !mxnet_lacks(flavor, name) {
            m.set(name, builtin(name, doc, f));
        }
    };
    for spec in SPECS {
        let names = if flavor == Flavor::Torch {
            spec.torch
        } else {
            spec.numpy
        };
        for name in names {
            // NumPy's `mod`/`remainder` take lists too (the shared ones are the `%` operator).
            if flavor == Flavor::Numpy && matches!(*name, "mod" | "remainder") {
                m.set(name, builtin(name, spec.doc, ufunc::<F>));
            }
            set(name, spec.doc, ufunc::<F>);
        }
    }
    for (name, _) in COMPARISONS {
        if comparison_of(flavor, name).is_some() {
            set(
                name,
                "comparison(x1, x2): the operator's result, elementwise.",
                compare_fn::<F>,
            );
        }
    }
    if flavor == Flavor::Torch {
        for name in ["isnan", "isinf", "isfinite", "isposinf", "isneginf"] {
            set(
                name,
                "isnan(input) / isinf / isfinite / isposinf / isneginf: a bool tensor.",
                float_test_fn,
            );
        }
        for name in ["logical_and", "logical_or", "logical_xor", "logical_not"] {
            set(name, "logical_and(input, other) / logical_or / logical_xor / logical_not(input): a bool tensor.", logical_fn);
        }
        for name in ["clamp", "clip", "clamp_min", "clamp_max"] {
            set(name, "clamp(input, min=None, max=None): input limited to [min, max] (numbers or tensors).", clamp_fn);
        }
        set(
            "lerp",
            "lerp(input, end, weight): input + weight * (end - input).",
            lerp_fn,
        );
        set("isclose", "isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False): |input - other| <= atol + rtol * |other|, elementwise.", isclose_fn);
    }
    if flavor != Flavor::Nd {
        set("nan_to_num", "nan_to_num(x, nan=0.0, posinf=None, neginf=None): NaN and infinities replaced by finite numbers.", nan_to_num_fn::<F>);
    }
}

/// The tensor methods of this file (PyTorch's), or None.
pub fn get_attr(it: &mut dyn Interpreter, v: &Value, name: &str) -> Result<Option<Value>, Exc> {
    let _ = it;
    let Some(x) = v.as_array() else {
        return Ok(None);
    };
    if x.flavor != Flavor::Torch {
        return Ok(None);
    }
    if let Some(found) = super::linalg::get_attr(v, name) {
        return Ok(Some(found));
    }
    if let Some(found) = super::reductions::get_attr(v, name) {
        return Ok(Some(found));
    }
    type M = crate::object::value::MethodFn;
    let found: Option<(&'static str, &'static str, M)> =
        if let Some(spec) = spec_of(Flavor::Torch, name) {
            let mname = static_name(name, spec);
            Some((
                mname,
                spec.doc,
                (|it, r, a| {
                    if a.fname.ends_with('_') {
                        inplace_form(it, r, a)
                    } else {
                        apply(it, Flavor::Torch, Some(r), a)
                    }
                }) as M,
            ))
        } else if let Some((mname, _)) = COMPARISONS.iter().find(|(n, _)| *n == name) {
            comparison_of(Flavor::Torch, mname).map(|_| {
                (
                    *mname,
                    "x.op(other): the comparison, elementwise.",
                    (|it, r, a| compare(it, Flavor::Torch, Some(r), a)) as M,
                )
            })
        } else {
            let (mname, doc, f): (&'static str, &'static str, M) = match name {
            "isnan" | "isinf" | "isfinite" | "isposinf" | "isneginf" => (
                ["isnan", "isinf", "isfinite", "isposinf", "isneginf"]
                    .into_iter()
                    .find(|n| *n == name)
                    .unwrap_or("isnan"),
                "x.isnan(): a bool tensor.",
                |it, r, a| {
                    a.finish(0)?;
                    let x = tensor_arg(r, a.fname, "input", 1)?;
                    float_test(it, &x, a.fname)
                },
            ),
            "logical_and" | "logical_or" | "logical_xor" | "logical_not" => (
                ["logical_and", "logical_or", "logical_xor", "logical_not"]
                    .into_iter()
                    .find(|n| *n == name)
                    .unwrap_or("logical_and"),
                "x.logical_and(other): a bool tensor.",
                |it, r, a| {
                    let x = tensor_arg(r, a.fname, "input", 1)?;
                    logical(it, &x, a, 0)
                },
            ),
            "clamp" | "clamp_" | "clip" | "clip_" | "clamp_min" | "clamp_max" | "clamp_min_"
            | "clamp_max_" => (
                [
                    "clamp",
                    "clamp_",
                    "clip",
                    "clip_",
                    "clamp_min",
                    "clamp_max",
                    "clamp_min_",
                    "clamp_max_",
                ]
                .into_iter()
                .find(|n| *n == name)
                .unwrap_or("clamp"),
                "x.clamp(min=None, max=None): x limited to [min, max] (numbers or tensors).",
                clamp_method,
            ),
            "lerp" | "lerp_" => (
                if name == "lerp" { "lerp" } else { "lerp_" },
                "x.lerp(end, weight): x + weight * (end - x).",
                lerp_method,
            ),
            "isclose" => (
                "isclose",
                "x.isclose(other, rtol=1e-05, atol=1e-08, equal_nan=False): elementwise closeness.",
                isclose_method,
            ),
            "nan_to_num" => (
                "nan_to_num",
                "x.nan_to_num(nan=0.0, posinf=None, neginf=None): NaN and infinities replaced.",
                |it, r, a| {
                    let x = tensor_arg(r, a.fname, "input", 1)?;
                    nan_to_num(it, &x, a, 0)
                },
            ),
            _ => return Ok(None),
        };
            Some((mname, doc, f))
        };
    Ok(found.map(|(mname, doc, f)| method(v, mname, doc, f)))
}

/// `name` as the static string of the table (method objects keep their name).
fn static_name(name: &str, spec: &'static Spec) -> &'static str {
    const INPLACE: &[&str] = &[
        "asin_",
        "arcsin_",
        "acos_",
        "arccos_",
        "atan_",
        "arctan_",
        "asinh_",
        "arcsinh_",
        "acosh_",
        "arccosh_",
        "atanh_",
        "arctanh_",
        "exp2_",
        "erf_",
        "erfc_",
        "log1p_",
        "expm1_",
        "deg2rad_",
        "rad2deg_",
        "rsqrt_",
        "frac_",
        "reciprocal_",
        "trunc_",
        "fix_",
        "atan2_",
        "arctan2_",
        "hypot_",
        "fmod_",
        "remainder_",
        "copysign_",
        "ceil_",
        "floor_",
        "round_",
        "sign_",
        "tan_",
        "log2_",
        "log10_",
        "lgamma_",
        "digamma_",
    ];
    spec.torch
        .iter()
        .find(|n| **n == name)
        .copied()
        .or_else(|| INPLACE.iter().find(|n| **n == name).copied())
        .unwrap_or("method")
}

/// `x.asin_()` and the other in-place forms: the function's values written into x.
fn inplace_form(it: &mut dyn Interpreter, r: &Value, a: Args) -> Result<Value, Exc> {
    let fname = a.fname;
    let x = tensor_arg(r, fname, "input", 1)?;
    let base: &'static str = spec_of(Flavor::Torch, fname)
        .and_then(|s| {
            s.torch
                .iter()
                .find(|n| fname.strip_suffix('_') == Some(**n))
                .copied()
        })
        .unwrap_or("method");
    let mut call = Args::new(base, a.pos);
    call.kw = a.kw;
    let out = apply(it, Flavor::Torch, Some(r), call)?;
    let Value::Array(y) = &out else {
        return Err(Exc::type_error(format!("{fname}() gave no tensor")));
    };
    if y.array.dtype() != x.array.dtype() {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "result type {} can't be cast to the desired output type {}",
                torch_type_name(y.array.dtype()),
                torch_type_name(x.array.dtype())
            ),
        ));
    }
    let st = it.state_mut();
    if st.nn.tape.inplace_records(&x.array, &[]) {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!("{fname}() on a tensor that requires grad is not supported here; use the out-of-place {base}()"),
        ));
    }
    let values = y.array.clone();
    st.nn
        .tape
        .inplace(&st.rt, &x.array, &[], move |_, _| Ok(values))
        .map_err(crate::object::error::inplace_exc)?;
    Ok(r.clone())
}
