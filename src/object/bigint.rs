//! Python's unbounded int past i64, as CPython and PyPy keep it: `Value::Int(i64)` is the fast
//! path, and an operation that overflows it gives `Value::BigInt`, which is normalised back to
//! `Int` whenever the value fits (`int_value`), so a `BigInt` never holds an i64's value and two
//! equal ints always have the same variant. Conversions keep CPython's results: float
//! conversion and true division correctly rounded, hashes modulo 2**61 - 1, comparisons with
//! floats exact, and the 4300-digit limit of decimal conversion (`sys.set_int_max_str_digits`).

use std::borrow::Cow;
use std::cell::Cell;
use std::cmp::Ordering;
use std::rc::Rc;

use num_bigint::{BigInt, Sign};
use num_integer::Integer;
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::error::{Exc, ExcKind};
use super::value::Value;
use crate::lang::ast::BinOp;

/// CPython 3.11's default `sys.get_int_max_str_digits()`.
pub const DEFAULT_MAX_STR_DIGITS: usize = 4300;

/// The smallest limit `sys.set_int_max_str_digits` accepts besides 0 (no limit).
pub const MIN_MAX_STR_DIGITS: usize = 640;

/// The largest result, in bits, an operation may make: past it is a MemoryError (CPython's
/// would be too, after a long wait or an exhausted machine).
const MAX_BITS: u64 = 1 << 36;

thread_local! {
    /// `sys.set_int_max_str_digits`'s limit (0: none). Per thread, as sessions are.
    static MAX_STR_DIGITS: Cell<usize> = const { Cell::new(DEFAULT_MAX_STR_DIGITS) };
}

pub fn max_str_digits() -> usize {
    MAX_STR_DIGITS.with(Cell::get)
}

pub fn set_max_str_digits(n: usize) {
    MAX_STR_DIGITS.with(|c| c.set(n));
}

/// The int `n` is: `Int` when it fits an i64, else `BigInt`.
pub fn int_value(n: BigInt) -> Value {
    match n.to_i64() {
        Some(i) => Value::Int(i),
        None => Value::BigInt(Rc::new(n)),
    }
}

/// The int a value holds (`bool`, `int`, a big int, NumPy's integer scalars), or None.
pub fn as_big(v: &Value) -> Option<Cow<'_, BigInt>> {
    match v {
        Value::Int(i) => Some(Cow::Owned(BigInt::from(*i))),
        Value::Bool(b) => Some(Cow::Owned(BigInt::from(*b as i64))),
        Value::BigInt(b) => Some(Cow::Borrowed(b)),
        Value::Object(o) => match o.number() {
            Some(Value::Int(i)) => Some(Cow::Owned(BigInt::from(i))),
            Some(Value::Bool(b)) => Some(Cow::Owned(BigInt::from(b as i64))),
            _ => None,
        },
        _ => None,
    }
}

fn overflow(message: &str) -> Exc {
    Exc::new(ExcKind::OverflowError, message)
}

fn zero_div(message: &str) -> Exc {
    Exc::new(ExcKind::ZeroDivisionError, message)
}

/// CPython's "cannot fit 'int' into an index-sized integer": a big int used as a list index
/// or a repeat count.
pub fn index_error() -> Exc {
    Exc::new(
        ExcKind::IndexError,
        "cannot fit 'int' into an index-sized integer",
    )
}

/// The same text as an OverflowError (`[1] * 2**64`, `'a' * 2**64`).
pub fn index_overflow() -> Exc {
    overflow("cannot fit 'int' into an index-sized integer")
}

/// `float(n)`, correctly rounded (half to even); CPython's OverflowError past the float range.
pub fn to_f64(n: &BigInt) -> Result<f64, Exc> {
    match n.to_f64() {
        Some(f) if f.is_finite() => Ok(f),
        _ => Err(overflow("int too large to convert to float")),
    }
}

/// `a / b` for ints, correctly rounded as CPython's `long_true_divide`: the quotient is taken
/// to at least 55 significant bits with a sticky bit for a nonzero remainder, so the one
/// rounding to 53 bits is exact.
pub fn true_div(a: &BigInt, b: &BigInt) -> Result<f64, Exc> {
    if b.is_zero() {
        return Err(zero_div("division by zero"));
    }
    const EXACT: u64 = 53;
    if a.bits() <= EXACT && b.bits() <= EXACT {
        let (x, y) = (a.to_f64().unwrap_or(0.0), b.to_f64().unwrap_or(1.0));
        return Ok(x / y);
    }
    if a.is_zero() {
        return Ok(if a.sign() == b.sign() || b.is_positive() {
            0.0
        } else {
            -0.0
        });
    }
    let negative = (a.sign() == Sign::Minus) != (b.sign() == Sign::Minus);
    let (num, den) = (a.magnitude(), b.magnitude());
    // Scale so the integer quotient has 55 or 56 bits.
    let shift = num.bits() as i64 - den.bits() as i64 - 55;
    let (q, r) = if shift >= 0 {
        num.div_rem(&(den << shift as u64))
    } else {
        (num << (-shift) as u64).div_rem(den)
    };
    let mut q = q.to_u64().unwrap_or(u64::MAX);
    if !r.is_zero() {
        q |= 1;
    }
    // The result's binary exponent: a quotient past the float range overflows, one below it
    // underflows through ldexp's rounding (subnormals may round twice, as a rare CPython edge).
    let magnitude = libm::ldexp(q as f64, shift.clamp(-2200, 2200) as i32);
    if magnitude.is_infinite() {
        return Err(overflow("integer division result too large for a float"));
    }
    Ok(if negative { -magnitude } else { magnitude })
}

/// `a op b` for ints at least one of which overflowed i64 (or is big): exact, normalised.
pub fn binary(op: BinOp, a: &BigInt, b: &BigInt) -> Result<Value, Exc> {
    Ok(int_value(match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => {
            if a.bits() + b.bits() > MAX_BITS {
                return Err(super::alloc::memory_error());
            }
            a * b
        }
        BinOp::Div => return true_div(a, b).map(Value::Float),
        BinOp::FloorDiv => {
            if b.is_zero() {
                return Err(zero_div("integer division or modulo by zero"));
            }
            a.div_floor(b)
        }
        BinOp::Mod => {
            if b.is_zero() {
                return Err(zero_div("integer division or modulo by zero"));
            }
            a.mod_floor(b)
        }
        BinOp::Pow => return pow(a, b),
        BinOp::BitAnd => a & b,
        BinOp::BitOr => a | b,
        BinOp::BitXor => a ^ b,
        BinOp::LShift => {
            if b.is_negative() {
                return Err(Exc::value_error("negative shift count"));
            }
            if a.is_zero() {
                return Ok(Value::Int(0));
            }
            match b.to_u64() {
                Some(s) if a.bits() + s <= MAX_BITS => a << s,
                _ => return Err(super::alloc::memory_error()),
            }
        }
        BinOp::RShift => {
            if b.is_negative() {
                return Err(Exc::value_error("negative shift count"));
            }
            match b.to_u64() {
                // Floor shift, as Python's: -1 >> n is -1.
                Some(s) if s < a.bits() => a >> s,
                _ => BigInt::from(if a.is_negative() { -1 } else { 0 }),
            }
        }
        BinOp::MatMul => {
            return Err(Exc::type_error(
                "unsupported operand type(s) for @: 'int' and 'int'",
            ))
        }
    }))
}

/// `a ** b` for ints: a float for a negative exponent, as Python's.
fn pow(a: &BigInt, b: &BigInt) -> Result<Value, Exc> {
    if b.is_negative() {
        if a.is_zero() {
            return Err(zero_div("0.0 cannot be raised to a negative power"));
        }
        let base = to_f64(a)?;
        let e = b.to_f64().unwrap_or(f64::NEG_INFINITY);
        return Ok(Value::Float(base.powf(e)));
    }
    // 0, 1 and -1 to any power stay small; anything else to a huge power cannot be held.
    if a.is_zero() || a.is_one() || (-a).is_one() {
        let odd = b.is_odd();
        return Ok(Value::Int(match a.to_i64().unwrap_or(0) {
            0 if b.is_zero() => 1,
            0 => 0,
            1 => 1,
            _ if odd => -1,
            _ => 1,
        }));
    }
    let Some(e) = b.to_u32() else {
        return Err(super::alloc::memory_error());
    };
    if a.bits().saturating_mul(u64::from(e)) > MAX_BITS {
        return Err(super::alloc::memory_error());
    }
    Ok(int_value(num_traits::Pow::pow(a, e)))
}

/// `pow(a, b, m)`: modular power (a negative exponent takes the modular inverse).
pub fn pow_mod(a: &BigInt, b: &BigInt, m: &BigInt) -> Result<Value, Exc> {
    if m.is_zero() {
        return Err(Exc::value_error("pow() 3rd argument cannot be 0"));
    }
    let modulus = m.abs();
    let (base, exp) = if b.is_negative() {
        let inverse = mod_inverse(&a.mod_floor(&modulus), &modulus)
            .ok_or_else(|| Exc::value_error("base is not invertible for the given modulus"))?;
        (inverse, -b)
    } else {
        (a.mod_floor(&modulus), b.clone())
    };
    let r = base.modpow(&exp, &modulus);
    // The result has the sign of the modulus, as Python's %.
    Ok(int_value(if m.is_negative() && !r.is_zero() {
        r - modulus
    } else {
        r
    }))
}

fn mod_inverse(a: &BigInt, m: &BigInt) -> Option<BigInt> {
    let e = a.extended_gcd(m);
    if !e.gcd.is_one() {
        return None;
    }
    Some(e.x.mod_floor(m))
}

/// `-n`, `abs(n)`, `~n` of a big int (or of an i64 whose result overflows).
pub fn neg(n: &BigInt) -> Value {
    int_value(-n)
}

/// `-v` of an int value of either size.
pub fn negate(v: &Value) -> Value {
    match v {
        Value::Int(i) => i
            .checked_neg()
            .map_or_else(|| neg(&BigInt::from(*i)), Value::Int),
        Value::BigInt(n) => neg(n),
        other => other.clone(),
    }
}

pub fn abs(n: &BigInt) -> Value {
    int_value(n.abs())
}

pub fn invert(n: &BigInt) -> Value {
    int_value(!n)
}

/// The order of an int and a float, exactly (CPython's `float_richcompare`); None with NaN.
pub fn compare_with_float(n: &BigInt, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f.is_infinite() {
        return Some(if f > 0.0 {
            Ordering::Less
        } else {
            Ordering::Greater
        });
    }
    let whole = f.trunc();
    let whole_big = num_bigint::BigInt::from_f64_exact(whole);
    Some(match n.cmp(&whole_big) {
        Ordering::Equal => 0.0f64.partial_cmp(&(f - whole)).unwrap_or(Ordering::Equal),
        other => other,
    })
}

/// A whole float's exact int (`int(1e300)`).
trait FromF64Exact {
    fn from_f64_exact(f: f64) -> BigInt;
}

impl FromF64Exact for BigInt {
    fn from_f64_exact(f: f64) -> BigInt {
        num_traits::FromPrimitive::from_f64(f).unwrap_or_default()
    }
}

/// `int(f)` for a finite float: truncated toward zero, exact at any size.
pub fn from_float(f: f64) -> Result<Value, Exc> {
    if f.is_nan() {
        return Err(Exc::value_error("cannot convert float NaN to integer"));
    }
    if f.is_infinite() {
        return Err(overflow("cannot convert float infinity to integer"));
    }
    let t = f.trunc();
    if t.abs() < 9.2e18 {
        return Ok(Value::Int(t as i64));
    }
    Ok(int_value(BigInt::from_f64_exact(t)))
}

/// The order of two numbers when one is a big int; None when they are not both numbers (or
/// with NaN: `Some(None)`).
pub fn compare_numbers(l: &Value, r: &Value) -> Option<Option<Ordering>> {
    let float_of = |v: &Value| match v {
        Value::Float(f) => Some(*f),
        Value::Object(o) => match o.number() {
            Some(Value::Float(f)) => Some(f),
            _ => None,
        },
        _ => None,
    };
    match (as_big(l), as_big(r)) {
        (Some(a), Some(b)) => Some(Some(a.cmp(&b))),
        (Some(a), None) => float_of(r).map(|f| compare_with_float(&a, f)),
        (None, Some(b)) => float_of(l).map(|f| compare_with_float(&b, f).map(Ordering::reverse)),
        (None, None) => None,
    }
}

/// CPython's hash of an int: the value modulo 2**61 - 1 with its sign, -1 read as -2.
pub fn hash(n: &BigInt) -> i64 {
    const MODULUS: u64 = (1 << 61) - 1;
    let r = (n.magnitude() % MODULUS).to_i64().unwrap_or(0);
    let h = if n.is_negative() { -r } else { r };
    if h == -1 {
        -2
    } else {
        h
    }
}

/// The error of a decimal conversion longer than the limit. `digits` is the length of the
/// text for str -> int (CPython names it there), None for int -> str.
pub fn digits_limit_error(digits: Option<usize>) -> Exc {
    let limit = max_str_digits();
    Exc::value_error(match digits {
        Some(n) => format!(
            "Exceeds the limit ({limit} digits) for integer string conversion: value has {n} digits; use sys.set_int_max_str_digits() to increase the limit"
        ),
        None => format!(
            "Exceeds the limit ({limit} digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit"
        ),
    })
}

/// `str(n)`: decimal digits, under the conversion limit. The size is checked from the bit
/// length before any digit is made (a number of 10**6 digits fails at once).
pub fn to_decimal(n: &BigInt) -> Result<String, Exc> {
    let limit = max_str_digits();
    if limit > 0 {
        // n >= 2**(bits - 1): it has at least floor((bits - 1) * log10(2)) + 1 digits.
        let at_least =
            ((n.bits().saturating_sub(1)) as f64 * std::f64::consts::LOG10_2) as usize + 1;
        if at_least > limit {
            return Err(digits_limit_error(None));
        }
    }
    let text = n.to_string();
    let digits = text.len() - usize::from(n.is_negative());
    if limit > 0 && digits > limit {
        return Err(digits_limit_error(None));
    }
    Ok(text)
}

/// Parses digits (no sign, no prefix, no underscores) in `radix`; the decimal-digit limit
/// applies to radixes that are not powers of two, as CPython's.
pub fn parse_digits(digits: &str, radix: u32) -> Result<Option<Value>, Exc> {
    let limit = max_str_digits();
    if limit > 0 && !radix.is_power_of_two() && digits.len() > limit {
        return Err(digits_limit_error(Some(digits.len())));
    }
    Ok(BigInt::parse_bytes(digits.as_bytes(), radix).map(int_value))
}

/// The magnitude's digits in base 2, 8 or 16 (`bin`, `oct`, `hex`, format specs).
pub fn magnitude_digits(n: &BigInt, radix: u32) -> String {
    n.magnitude().to_str_radix(radix)
}

/// `n.bit_length()` and `n.bit_count()`.
pub fn bit_length(n: &BigInt) -> u64 {
    n.bits()
}

pub fn bit_count(n: &BigInt) -> u64 {
    n.magnitude().count_ones()
}

/// `n.to_bytes(length, byteorder, signed=...)`: CPython's OverflowErrors.
pub fn to_bytes(n: &BigInt, length: usize, little: bool, signed: bool) -> Result<Vec<u8>, Exc> {
    if !signed && n.is_negative() {
        return Err(overflow("can't convert negative int to unsigned"));
    }
    let mut bytes = if signed {
        n.to_signed_bytes_le()
    } else {
        n.magnitude().to_bytes_le()
    };
    if n.is_zero() {
        bytes.clear();
    }
    // The shortest two's complement form may need one byte fewer than the requested width's
    // sign extension; pad with the sign byte.
    if bytes.len() > length {
        return Err(overflow("int too big to convert"));
    }
    let fill = if signed && n.is_negative() { 0xff } else { 0 };
    bytes.resize(length, fill);
    if !little {
        bytes.reverse();
    }
    Ok(bytes)
}

/// `int.from_bytes(bytes, byteorder, signed=...)`.
pub fn from_bytes(bytes: &[u8], little: bool, signed: bool) -> Value {
    let n = match (little, signed) {
        (true, true) => BigInt::from_signed_bytes_le(bytes),
        (false, true) => BigInt::from_signed_bytes_be(bytes),
        (true, false) => BigInt::from_bytes_le(Sign::Plus, bytes),
        (false, false) => BigInt::from_bytes_be(Sign::Plus, bytes),
    };
    int_value(n)
}

/// `math.isqrt(n)` for n >= 0: Newton's iteration from above.
pub fn isqrt(n: &BigInt) -> BigInt {
    n.sqrt()
}

/// `math.factorial`, `math.comb`, `math.perm` as products of big ints.
pub fn product_range(from: u64, to: u64) -> BigInt {
    // Split products keep the multiplicands balanced (much faster than a running product).
    fn go(lo: u64, hi: u64) -> BigInt {
        if hi <= lo {
            return BigInt::one();
        }
        if hi - lo <= 8 {
            return (lo..hi).fold(BigInt::one(), |acc, k| acc * k);
        }
        let mid = lo + (hi - lo) / 2;
        go(lo, mid) * go(mid, hi)
    }
    go(from, to)
}

/// `round(n, -k)`: to a multiple of 10**k, ties to the even multiple.
pub fn round_to_tens(n: &BigInt, k: &BigInt) -> Value {
    let Some(k) = k.to_u32().filter(|k| u64::from(*k) * 3 <= n.bits() + 3) else {
        // 10**k past |n|: every multiple but 0 is farther away.
        return Value::Int(0);
    };
    let p = num_traits::Pow::pow(BigInt::from(10), k);
    let (mut q, r) = n.div_mod_floor(&p);
    let twice: BigInt = &r * 2;
    if twice > p || (twice == p && q.is_odd()) {
        q += 1;
    }
    int_value(q * p)
}

/// CPython's `_PyLong_Frexp`: |n| = m * 2**e with m in [0.5, 1), m correctly rounded (the
/// logarithms of ints past the float range).
pub fn frexp(n: &BigInt) -> (f64, u64) {
    let bits = n.bits();
    let shift = bits.saturating_sub(64);
    let magnitude = n.magnitude();
    let mut top = (magnitude >> shift).to_u64().unwrap_or(u64::MAX);
    // A sticky bit for what the shift dropped keeps the one rounding exact.
    if magnitude.trailing_zeros().is_some_and(|z| z < shift) {
        top |= 1;
    }
    let m = libm::ldexp(top as f64, -((bits - shift) as i32));
    if m >= 1.0 {
        (0.5, bits + 1)
    } else {
        (m, bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(s: &str) -> BigInt {
        s.parse().unwrap_or_default()
    }

    #[test]
    fn normalises_to_i64() {
        assert!(matches!(int_value(BigInt::from(5)), Value::Int(5)));
        assert!(matches!(
            int_value(big("9223372036854775808")),
            Value::BigInt(_)
        ));
        assert!(matches!(
            int_value(big("-9223372036854775808")),
            Value::Int(i64::MIN)
        ));
    }

    #[test]
    fn hashes_as_cpython() {
        // hash(2**100), hash(-2**100), hash(2**61 - 1), hash(-(2**61 - 1) - 1)
        assert_eq!(hash(&(BigInt::one() << 100u32)), 549755813888);
        assert_eq!(hash(&-(BigInt::one() << 100u32)), -549755813888);
        assert_eq!(hash(&((BigInt::one() << 61u32) - 1)), 0);
        assert_eq!(hash(&-(BigInt::one() << 61u32)), -2);
    }

    #[test]
    fn float_conversion_rounds_half_even_and_overflows() {
        let two = |e: u32| BigInt::one() << e;
        assert_eq!(to_f64(&(two(1024) - two(970) - 1)).ok(), Some(f64::MAX));
        assert!(to_f64(&(two(1024) - two(970))).is_err());
        // 2**64 + 2**11 is halfway between two floats: ties to even (down); one more rounds up.
        assert_eq!(
            to_f64(&(two(64) + two(11))).ok(),
            Some(18446744073709551616.0)
        );
        assert_eq!(
            to_f64(&(two(64) + two(11) + 1)).ok(),
            Some(18446744073709555712.0)
        );
    }

    #[test]
    fn true_division_is_correctly_rounded() {
        let ten = |e: u32| num_traits::Pow::pow(BigInt::from(10), e);
        assert_eq!(true_div(&ten(400), &ten(399)).ok(), Some(10.0));
        assert_eq!(
            true_div(&(BigInt::one() << 100u32), &(BigInt::one() << 99u32)).ok(),
            Some(2.0)
        );
        assert_eq!(
            true_div(&BigInt::one(), &(BigInt::one() << 2000u32)).ok(),
            Some(0.0)
        );
        // (10**30 + 1) / 3, as CPython prints it.
        assert_eq!(
            true_div(&(ten(30) + 1), &BigInt::from(3)).ok(),
            Some(3.333333333333333e+29)
        );
        assert_eq!(
            true_div(&-(ten(30)), &BigInt::from(7)).ok(),
            Some(-1.4285714285714285e+29)
        );
        assert!(true_div(&ten(400), &BigInt::from(3)).is_err());
    }

    #[test]
    fn compares_exactly_with_floats() {
        let n = (BigInt::one() << 53u32) + 1;
        assert_eq!(
            compare_with_float(&n, 2f64.powi(53)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare_with_float(&(BigInt::one() << 70u32), 2f64.powi(70)),
            Some(Ordering::Equal)
        );
        assert_eq!(compare_with_float(&n, f64::INFINITY), Some(Ordering::Less));
        assert_eq!(compare_with_float(&n, f64::NAN), None);
        assert_eq!(
            compare_with_float(&(BigInt::one() << 70u32), 2f64.powi(70) + 0.5e6),
            Some(Ordering::Less)
        );
    }

    #[test]
    fn bytes_round_trip() {
        let n = -(BigInt::one() << 100u32);
        let b = to_bytes(&n, 16, false, true).unwrap_or_default();
        assert!(matches!(&from_bytes(&b, false, true), Value::BigInt(m) if **m == n));
        assert!(to_bytes(&(BigInt::one() << 100u32), 8, false, false).is_err());
    }
}
