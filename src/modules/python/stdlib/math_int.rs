//! The math module's integer functions at any size (`factorial`, `comb`, `perm`, `gcd`,
//! `lcm`, `isqrt`) and its logarithms of ints past the float range, with CPython 3.11's
//! results and errors.

use std::borrow::Cow;

use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::num;
use crate::object::bigint::{self, int_value};
use crate::object::value::{BuiltinFn, Module};
use crate::object::{builtin, Args, Exc, ExcKind, Value};

/// An int argument of any size; floats are refused as CPython refuses them.
fn big_arg(v: &Value) -> Result<Cow<'_, BigInt>, Exc> {
    match v {
        Value::Float(_) | Value::Str(_) | Value::None => Err(Exc::type_error(format!(
            "'{}' object cannot be interpreted as an integer",
            v.type_name()
        ))),
        other => bigint::as_big(other).ok_or_else(|| {
            Exc::type_error(format!(
                "'{}' object cannot be interpreted as an integer",
                other.type_name()
            ))
        }),
    }
}

/// A count past what a loop could reach (`factorial(2**70)`): CPython's OverflowError.
fn count(n: &BigInt, what: &str) -> Result<u64, Exc> {
    n.to_u64().ok_or_else(|| {
        Exc::new(
            ExcKind::OverflowError,
            format!("{what} must not exceed {}", i64::MAX),
        )
    })
}

fn factorial(_: &mut dyn crate::object::Interpreter, mut a: Args) -> Result<Value, Exc> {
    let n = a.required(0, "n")?;
    a.finish(1)?;
    let n = big_arg(&n)?;
    if n.is_negative() {
        return Err(Exc::value_error(
            "factorial() not defined for negative values",
        ));
    }
    let n = count(&n, "factorial() argument")?;
    Ok(int_value(bigint::product_range(2, n.saturating_add(1))))
}

fn nonneg(n: &BigInt, k: &BigInt) -> Result<(), Exc> {
    if n.is_negative() {
        return Err(Exc::value_error("n must be a non-negative integer"));
    }
    if k.is_negative() {
        return Err(Exc::value_error("k must be a non-negative integer"));
    }
    Ok(())
}

fn comb(_: &mut dyn crate::object::Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (n, k) = (a.required(0, "n")?, a.required(1, "k")?);
    a.finish(2)?;
    let (n, k) = (big_arg(&n)?, big_arg(&k)?);
    nonneg(&n, &k)?;
    if *k > *n {
        return Ok(Value::Int(0));
    }
    let k = count(&(&*k).min(&(&*n - &*k)).clone(), "min(n - k, k)")?;
    // C(n, k) = n * (n-1) * ... * (n-k+1) / k!, each prefix product divisible by its factorial.
    let mut r = BigInt::one();
    for i in 0..k {
        r = r * (&*n - i) / (i + 1);
    }
    Ok(int_value(r))
}

fn perm(_: &mut dyn crate::object::Interpreter, mut a: Args) -> Result<Value, Exc> {
    let n = a.required(0, "n")?;
    let k = a.take(1, "k")?;
    a.finish(2)?;
    let n = big_arg(&n)?;
    let k = match &k {
        None | Some(Value::None) => n.clone(),
        Some(v) => big_arg(v)?,
    };
    nonneg(&n, &k)?;
    if *k > *n {
        return Ok(Value::Int(0));
    }
    let k = count(&k, "k")?;
    let mut r = BigInt::one();
    for i in 0..k {
        r *= &*n - i;
    }
    Ok(int_value(r))
}

fn gcd(_: &mut dyn crate::object::Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(usize::MAX)?;
    let mut g = BigInt::zero();
    for v in &a.pos {
        g = g.gcd(&*big_arg(v)?);
    }
    Ok(int_value(g))
}

fn lcm(_: &mut dyn crate::object::Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(usize::MAX)?;
    let mut l = BigInt::one();
    for v in &a.pos {
        l = l.lcm(&*big_arg(v)?);
    }
    Ok(int_value(l))
}

fn isqrt(_: &mut dyn crate::object::Interpreter, mut a: Args) -> Result<Value, Exc> {
    let n = a.required(0, "n")?;
    a.finish(1)?;
    let n = big_arg(&n)?;
    if n.is_negative() {
        return Err(Exc::value_error("isqrt() argument must be nonnegative"));
    }
    Ok(int_value(bigint::isqrt(&n)))
}

/// CPython's `loghelper`: an int past the float range is m * 2**e (m in [0.5, 1)), and its
/// logarithm is `f(m) + f(2) * e`; anything else goes to the float function.
fn log_of(v: &Value, f: fn(f64) -> f64) -> Result<f64, Exc> {
    if let Value::BigInt(n) = v {
        if !n.is_positive() {
            return Err(Exc::value_error("math domain error"));
        }
        if bigint::to_f64(n).is_err() {
            let (m, e) = bigint::frexp(n);
            return Ok(f(m) + f(2.0) * e as f64);
        }
    }
    let x = num(v)?;
    if x.is_nan() {
        return Ok(x);
    }
    if x <= 0.0 {
        return Err(Exc::value_error("math domain error"));
    }
    Ok(f(x))
}

fn log(_: &mut dyn crate::object::Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let base = a.take(1, "base")?;
    a.finish(2)?;
    let lx = log_of(&x, f64::ln)?;
    match base {
        None => Ok(Value::Float(lx)),
        Some(b) => {
            let lb = log_of(&b, f64::ln)?;
            if lb == 0.0 {
                return Err(Exc::new(
                    ExcKind::ZeroDivisionError,
                    "float division by zero",
                ));
            }
            Ok(Value::Float(lx / lb))
        }
    }
}

/// Puts the functions in the math module (called from `math::build`).
pub fn register(m: &Module) {
    let fns: Vec<(&'static str, BuiltinFn)> = vec![
        ("factorial", factorial),
        ("comb", comb),
        ("perm", perm),
        ("gcd", gcd),
        ("lcm", lcm),
        ("isqrt", isqrt),
        ("log", log),
        ("log2", |_, mut a| {
            let x = a.required(0, "x")?;
            a.finish(1)?;
            log_of(&x, f64::log2).map(Value::Float)
        }),
        ("log10", |_, mut a| {
            let x = a.required(0, "x")?;
            a.finish(1)?;
            log_of(&x, f64::log10).map(Value::Float)
        }),
    ];
    for (name, f) in fns {
        m.set(
            name,
            builtin(name, "a function of CPython's math module", f),
        );
    }
}
