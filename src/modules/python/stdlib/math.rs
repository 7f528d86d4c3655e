//! `math`: CPython's math module for floats and ints (`math_int.rs`: the integer functions), with its error rules: a NaN from
//! a non-NaN argument is `ValueError: math domain error`, an infinity from a finite argument is
//! `OverflowError: math range error` for the functions that can overflow (else a domain error).

use std::rc::Rc;

use super::{int, module, num};
use crate::lang::ast::BinOp;
use crate::object::value::{BuiltinFn, Module};
use crate::object::{builtin, Args, Exc, ExcKind, Interpreter, Value};

extern "C" {
    // From the C math library every Rust program on Linux links.
    fn erf(x: f64) -> f64;
    fn erfc(x: f64) -> f64;
    fn tgamma(x: f64) -> f64;
    fn lgamma(x: f64) -> f64;
    fn nextafter(x: f64, y: f64) -> f64;
}

fn domain() -> Exc {
    Exc::value_error("math domain error")
}

fn range() -> Exc {
    Exc::new(ExcKind::OverflowError, "math range error")
}

/// CPython's `math_1`: applies `f`, then its error rules.
fn check(x: f64, r: f64, can_overflow: bool) -> Result<Value, Exc> {
    if r.is_nan() && !x.is_nan() {
        return Err(domain());
    }
    if r.is_infinite() && x.is_finite() {
        return Err(if can_overflow { range() } else { domain() });
    }
    Ok(Value::Float(r))
}

fn one(a: &mut Args) -> Result<f64, Exc> {
    let x = num(&a.required(0, "x")?)?;
    a.finish(1)?;
    Ok(x)
}

fn two(a: &mut Args) -> Result<(f64, f64), Exc> {
    let x = num(&a.required(0, "x")?)?;
    let y = num(&a.required(1, "y")?)?;
    a.finish(2)?;
    Ok((x, y))
}

macro_rules! unary {
    ($f:expr, $over:expr) => {
        (|_, mut a| {
            let x = one(&mut a)?;
            #[allow(clippy::redundant_closure_call)]
            check(x, ($f)(x), $over)
        }) as BuiltinFn
    };
}

pub fn build() -> Rc<Module> {
    let m = module("math", "mathematical functions (CPython's math module)");
    m.set("pi", Value::Float(std::f64::consts::PI));
    m.set("e", Value::Float(std::f64::consts::E));
    m.set("tau", Value::Float(std::f64::consts::TAU));
    m.set("inf", Value::Float(f64::INFINITY));
    m.set("nan", Value::Float(f64::NAN));
    let fns: Vec<(&'static str, BuiltinFn)> = vec![
        ("sqrt", unary!(f64::sqrt, false)),
        ("cbrt", unary!(f64::cbrt, false)),
        ("exp", unary!(f64::exp, true)),
        ("exp2", unary!(f64::exp2, true)),
        ("expm1", unary!(f64::exp_m1, true)),
        ("log1p", unary!(f64::ln_1p, false)),
        ("sin", unary!(f64::sin, false)),
        ("cos", unary!(f64::cos, false)),
        ("tan", unary!(f64::tan, false)),
        ("asin", unary!(f64::asin, false)),
        ("acos", unary!(f64::acos, false)),
        ("atan", unary!(f64::atan, false)),
        ("sinh", unary!(f64::sinh, true)),
        ("cosh", unary!(f64::cosh, true)),
        ("tanh", unary!(f64::tanh, false)),
        ("asinh", unary!(f64::asinh, false)),
        ("acosh", unary!(f64::acosh, false)),
        (
            "atanh",
            unary!(
                |x: f64| if x.abs() >= 1.0 { f64::NAN } else { x.atanh() },
                false
            ),
        ),
        ("fabs", unary!(f64::abs, false)),
        ("degrees", unary!(f64::to_degrees, true)),
        ("radians", unary!(f64::to_radians, false)),
        // SAFETY (these four): plain C math functions of one double, no pointers.
        ("erf", unary!(|x| unsafe { erf(x) }, false)),
        ("erfc", unary!(|x| unsafe { erfc(x) }, false)),
        ("gamma", unary!(gamma_fn, true)),
        ("lgamma", unary!(lgamma_fn, true)),
        ("pow", pow),
        ("atan2", |_, mut a| {
            let (y, x) = two(&mut a)?;
            Ok(Value::Float(y.atan2(x)))
        }),
        ("copysign", |_, mut a| {
            let (x, y) = two(&mut a)?;
            Ok(Value::Float(x.copysign(y)))
        }),
        ("fmod", |_, mut a| {
            let (x, y) = two(&mut a)?;
            if x.is_infinite() || y == 0.0 {
                if x.is_nan() || y.is_nan() {
                    return Ok(Value::Float(f64::NAN));
                }
                return Err(domain());
            }
            Ok(Value::Float(x % y))
        }),
        ("remainder", |_, mut a| {
            let (x, y) = two(&mut a)?;
            if x.is_nan() || y.is_nan() {
                return Ok(Value::Float(f64::NAN));
            }
            if x.is_infinite() || y == 0.0 {
                return Err(domain());
            }
            // IEEE remainder: x - n*y with n the nearest integer to x/y, ties to even.
            let n = (x / y).round();
            let n = if ((x / y) - (x / y).trunc()).abs() == 0.5 && n % 2.0 != 0.0 {
                n - (x / y).signum()
            } else {
                n
            };
            Ok(Value::Float(x - n * y))
        }),
        ("nextafter", |_, mut a| {
            let (x, y) = two(&mut a)?;
            // SAFETY: a plain C math function of two doubles.
            Ok(Value::Float(unsafe { nextafter(x, y) }))
        }),
        ("ulp", |_, mut a| {
            let x = one(&mut a)?.abs();
            if !x.is_finite() {
                return Ok(Value::Float(x));
            }
            // SAFETY: as above.
            let next = unsafe { nextafter(x, f64::INFINITY) };
            Ok(Value::Float(if next.is_infinite() {
                x - unsafe { nextafter(x, 0.0) }
            } else {
                next - x
            }))
        }),
        ("ldexp", |_, mut a| {
            let x = num(&a.required(0, "x")?)?;
            let i = int(&a.required(1, "i")?)?;
            a.finish(2)?;
            let r = x * 2f64.powi(i.clamp(-2200, 2200) as i32);
            // powi underflows to 0 for very negative i; two steps keep subnormals.
            let r = if r == 0.0 && x != 0.0 && i > -2200 {
                x * 2f64.powi((i / 2) as i32) * 2f64.powi((i - i / 2) as i32)
            } else {
                r
            };
            if r.is_infinite() && x.is_finite() {
                return Err(range());
            }
            Ok(Value::Float(r))
        }),
        ("frexp", |_, mut a| {
            let (m, e) = frexp(one(&mut a)?);
            Ok(Value::tuple(vec![Value::Float(m), Value::Int(e)]))
        }),
        ("modf", |_, mut a| {
            let x = one(&mut a)?;
            if x.is_infinite() {
                return Ok(Value::tuple(vec![
                    Value::Float(0f64.copysign(x)),
                    Value::Float(x),
                ]));
            }
            let t = x.trunc();
            Ok(Value::tuple(vec![
                Value::Float((x - t).copysign(x)),
                Value::Float(t),
            ]))
        }),
        ("floor", |_, a| to_int(a, f64::floor)),
        ("ceil", |_, a| to_int(a, f64::ceil)),
        ("trunc", |_, mut a| {
            let v = a.required(0, "x")?;
            a.finish(1)?;
            if crate::object::ops::as_f64(&v).is_none() {
                return Err(Exc::type_error(format!(
                    "type {} doesn't define __trunc__ method",
                    v.type_name()
                )));
            }
            to_int(Args::new("trunc", vec![v]), f64::trunc)
        }),
        ("isnan", |_, mut a| Ok(Value::Bool(one(&mut a)?.is_nan()))),
        ("isinf", |_, mut a| {
            Ok(Value::Bool(one(&mut a)?.is_infinite()))
        }),
        ("isfinite", |_, mut a| {
            Ok(Value::Bool(one(&mut a)?.is_finite()))
        }),
        ("isclose", isclose),
        ("hypot", |_, a| {
            if !a.kw.is_empty() {
                a.finish(0)?;
            }
            let xs = a.pos.iter().map(num).collect::<Result<Vec<_>, _>>()?;
            Ok(Value::Float(hypot(&xs)))
        }),
        ("dist", dist),
        ("prod", prod),
        ("fsum", fsum),
    ];
    for (name, f) in fns {
        m.set(
            name,
            builtin(name, "a function of CPython's math module", f),
        );
    }
    super::math_int::register(&m);
    m
}

/// `x = m * 2**e` with 0.5 <= |m| < 1 (the one `hash()` uses too).
pub(crate) use crate::object::hash::frexp;

fn gamma_fn(x: f64) -> f64 {
    if x == 0.0 || (x < 0.0 && x.fract() == 0.0) || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    // SAFETY: a plain C math function of one double.
    unsafe { tgamma(x) }
}

fn lgamma_fn(x: f64) -> f64 {
    if x == 0.0 || (x < 0.0 && x.fract() == 0.0) {
        return f64::NAN;
    }
    // SAFETY: a plain C math function of one double.
    unsafe { lgamma(x) }
}

/// floor/ceil/trunc: ints pass through, floats convert with CPython's errors.
fn to_int(mut a: Args, f: fn(f64) -> f64) -> Result<Value, Exc> {
    let v = a.required(0, "x")?;
    a.finish(1)?;
    if let Value::Int(_) | Value::Bool(_) = v {
        return Ok(Value::Int(int(&v)?));
    }
    if let Value::BigInt(_) = v {
        return Ok(v);
    }
    let r = f(num(&v)?);
    if r.is_nan() {
        return Err(Exc::value_error("cannot convert float NaN to integer"));
    }
    if r.is_infinite() {
        return Err(Exc::new(
            ExcKind::OverflowError,
            "cannot convert float infinity to integer",
        ));
    }
    crate::object::bigint::from_float(r)
}

fn pow(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (x, y) = two(&mut a)?;
    let r = x.powf(y);
    if x.is_finite() && y.is_finite() {
        if r.is_nan() {
            return Err(domain());
        }
        if r.is_infinite() {
            return Err(if x == 0.0 { domain() } else { range() });
        }
    }
    Ok(Value::Float(r))
}

fn isclose(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = num(&a.required(0, "a")?)?;
    let y = num(&a.required(1, "b")?)?;
    let rel = a
        .take_kw("rel_tol")
        .map(|v| num(&v))
        .transpose()?
        .unwrap_or(1e-9);
    let abs = a
        .take_kw("abs_tol")
        .map(|v| num(&v))
        .transpose()?
        .unwrap_or(0.0);
    a.finish(2)?;
    if rel < 0.0 || abs < 0.0 {
        return Err(Exc::value_error("tolerances must be non-negative"));
    }
    if x == y {
        return Ok(Value::Bool(true));
    }
    if x.is_infinite() || y.is_infinite() {
        return Ok(Value::Bool(false));
    }
    let d = (y - x).abs();
    Ok(Value::Bool(
        d <= (rel * y).abs() || d <= (rel * x).abs() || d <= abs,
    ))
}

fn hypot(xs: &[f64]) -> f64 {
    if xs.iter().any(|x| x.is_infinite()) {
        return f64::INFINITY;
    }
    if xs.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    // Scaled by the largest magnitude so squares neither overflow nor underflow.
    let max = xs.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return 0.0;
    }
    if xs.len() == 2 {
        return xs[0].hypot(xs[1]);
    }
    max * xs.iter().map(|x| (x / max) * (x / max)).sum::<f64>().sqrt()
}

fn dist(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let p = a.required(0, "p")?;
    let q = a.required(1, "q")?;
    a.finish(2)?;
    let p = it.iterate(&p)?;
    let q = it.iterate(&q)?;
    if p.len() != q.len() {
        return Err(Exc::value_error(
            "both points must have the same number of dimensions",
        ));
    }
    let d = p
        .iter()
        .zip(&q)
        .map(|(x, y)| Ok(num(x)? - num(y)?))
        .collect::<Result<Vec<f64>, Exc>>()?;
    Ok(Value::Float(hypot(&d)))
}

fn prod(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let items = a.required(0, "iterable")?;
    let start = a.take_kw("start").unwrap_or(Value::Int(1));
    a.finish(1)?;
    let mut acc = start;
    for x in it.iterate(&items)? {
        if let (Value::Int(p), Value::Int(q)) = (&acc, &x) {
            if let Some(r) = p.checked_mul(*q) {
                acc = Value::Int(r);
                continue;
            }
        }
        acc = crate::object::ops::binary(it, BinOp::Mul, &acc, &x)?;
    }
    Ok(acc)
}

/// Shewchuk's exact partial sums, rounded once at the end (CPython's `math.fsum`).
fn fsum(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let items = a.required(0, "seq")?;
    a.finish(1)?;
    let mut partials: Vec<f64> = Vec::new();
    let (mut special, mut inf_sum) = (0.0f64, 0.0f64);
    for v in it.iterate(&items)? {
        let mut x = num(&v)?;
        if !x.is_finite() {
            if x.is_infinite() {
                inf_sum += x;
            }
            special += x;
            continue;
        }
        let mut i = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        if x.is_infinite() {
            return Err(Exc::new(
                ExcKind::OverflowError,
                "intermediate overflow in fsum",
            ));
        }
        partials.truncate(i);
        partials.push(x);
    }
    if special != 0.0 || special.is_nan() {
        if inf_sum.is_nan() {
            return Err(Exc::value_error("-inf + inf in fsum"));
        }
        return Ok(Value::Float(special));
    }
    let mut hi = 0.0;
    if let Some(mut n) = partials.len().checked_sub(1) {
        hi = partials[n];
        let mut lo = 0.0;
        while n > 0 {
            n -= 1;
            let x = hi;
            let y = partials[n];
            hi = x + y;
            let yr = hi - x;
            lo = y - yr;
            if lo != 0.0 {
                break;
            }
        }
        // Round half-even correctly when the rest of the partials push past the midpoint.
        if n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            let yr = x - hi;
            if y == yr {
                hi = x;
            }
        }
    }
    Ok(Value::Float(hi))
}

#[cfg(test)]
mod tests {
    use super::frexp;

    #[test]
    fn frexp_matches_c() {
        assert_eq!(frexp(8.0), (0.5, 4));
        assert_eq!(frexp(-3.0), (-0.75, 2));
        assert_eq!(frexp(5e-324), (0.5, -1073));
        assert_eq!(frexp(f64::MAX), (0.9999999999999999, 1024));
    }
}
