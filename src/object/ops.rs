//! Operators on values: arithmetic, comparison, indexing. Python numbers,
//! strings and containers are handled here; arrays go to the runtime, which
//! checks devices and shapes before doing any work.

use std::cell::RefCell;
use std::rc::Rc;

use crate::lang::ast::{BinOp, CmpOp, UnaryOp};
use crate::runtime::{self, Array, BinaryOp, Operand, Scalar};

use super::alloc;
use super::bigint;
use super::class;
use super::error::{Exc, ExcKind};
use super::format;
use super::guard::{self, Walk};
use super::interpreter::Interpreter;
use super::value::{ArrayValue, Flavor, Value};

/// A subscript: one item, or several separated by commas (`x[1:3, 0]`).
#[derive(Clone)]
pub enum Index {
    Single(IndexItem),
    Multi(Vec<IndexItem>),
}

#[derive(Clone)]
pub enum IndexItem {
    Value(Value),
    Slice(Option<Value>, Option<Value>, Option<Value>),
    Ellipsis,
}

// ------------------------------------------------------------------------ helpers

/// A Python number as f64 (bools count as ints), or None.
pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(*b as i64 as f64),
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        // Past the float range a big int is no float (`float(n)` raises OverflowError).
        Value::BigInt(n) => bigint::to_f64(n).ok(),
        Value::Object(o) => o.number().as_ref().and_then(as_f64),
        _ => None,
    }
}

pub fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Bool(b) => Some(*b as i64),
        Value::Int(i) => Some(*i),
        Value::Object(o) => o.number().as_ref().and_then(as_i64),
        _ => None,
    }
}

/// The Python number an object stands for ([`NativeObject::number`]: NumPy's scalars), else
/// the value itself.
///
/// [`NativeObject::number`]: super::value::NativeObject::number
pub fn as_number(v: &Value) -> std::borrow::Cow<'_, Value> {
    match v {
        Value::Object(o) => match o.number() {
            Some(n) => std::borrow::Cow::Owned(n),
            None => std::borrow::Cow::Borrowed(v),
        },
        _ => std::borrow::Cow::Borrowed(v),
    }
}

/// The scalar operand of an array operation.
pub fn as_scalar(v: &Value) -> Option<Scalar> {
    match v {
        Value::Bool(b) => Some(Scalar::Bool(*b)),
        Value::Int(i) => Some(Scalar::Int(*i)),
        Value::Float(f) => Some(Scalar::Float(*f)),
        Value::Object(o) => o.number().as_ref().and_then(as_scalar),
        _ => None,
    }
}

pub fn wrap(array: Array, flavor: Flavor) -> Value {
    Value::Array(ArrayValue { array, flavor })
}

/// The f64 whose shortest digits are those of `x` printed as a float32 (4.1618223 rather than
/// 4.161822319030762). Whole numbers below 2^24 are exact in both types and print as themselves,
/// so they skip the formatting; the rest format into a stack buffer (no allocation).
pub fn shortest_f32_as_f64(x: f32) -> f64 {
    let wide = f64::from(x);
    if wide.fract() == 0.0 && wide.abs() < 16_777_216.0 {
        return wide;
    }
    let mut buf = [0u8; 64];
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    if std::io::Write::write_fmt(&mut cursor, format_args!("{x}")).is_err() {
        return wide;
    }
    let len = cursor.position() as usize;
    buf.get(..len)
        .and_then(|digits| std::str::from_utf8(digits).ok())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(wide)
}

/// Makes NumPy's scalar (`numpy.float32`...) of a one-element array; set once by the array
/// layer, which owns the scalar types.
pub static NUMPY_SCALAR: std::sync::OnceLock<ScalarMaker> = std::sync::OnceLock::new();

/// Reports the floating-point conditions (divide by zero, overflow, invalid value) of a NumPy
/// operation as NumPy's error modes say; set once by the NumPy dialect, which owns them.
pub static NUMPY_FP_CHECK: std::sync::OnceLock<FpCheck> = std::sync::OnceLock::new();

/// What [`NUMPY_FP_CHECK`] holds: called with the operation's name (the runtime's, e.g.
/// `divide`, `mod`, `power`), its operands and its result.
pub type FpCheck = fn(&mut dyn Interpreter, &str, &[&Value], &Value) -> Result<(), Exc>;

/// Runs [`NUMPY_FP_CHECK`] for a NumPy operation, when one is registered.
pub fn numpy_fp_check(
    it: &mut dyn Interpreter,
    name: &str,
    inputs: &[&Value],
    out: &Value,
) -> Result<(), Exc> {
    match NUMPY_FP_CHECK.get() {
        Some(check) => check(it, name, inputs, out),
        None => Ok(()),
    }
}

/// What [`NUMPY_SCALAR`] holds.
pub type ScalarMaker = fn(&Array) -> Result<Value, Exc>;

/// The value of a one-element NumPy result as NumPy gives it: a scalar of the array's dtype
/// ([`NUMPY_SCALAR`]); without one registered, the Python number it prints as (a float32 keeps
/// its shortest float32 digits).
pub fn numpy_scalar(a: &Array) -> Result<Value, Exc> {
    if let Some(make) = NUMPY_SCALAR.get() {
        return make(a);
    }
    Ok(match a.to_scalar("item")? {
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::Int(i),
        Scalar::Float(f) if a.dtype() == runtime::DType::Float32 => {
            Value::Float(shortest_f32_as_f64(f as f32))
        }
        Scalar::Float(f) => Value::Float(f),
    })
}

/// A runtime error in NumPy's words where they differ: a failed broadcast is a ValueError
/// (whose message ends with a space, as NumPy's does).
pub fn numpy_error(e: runtime::RuntimeError) -> Exc {
    match e {
        runtime::RuntimeError::Shape(m) if m.starts_with("operands could not be broadcast") => {
            Exc::value_error(format!("{m} "))
        }
        other => Exc::from(other),
    }
}

/// NumPy 1.23's result type of `l op r` (an array with an array or a Python number), or None
/// for operands it does not type. A Python number with arrays of its category or a higher one
/// counts as the smallest type that holds its value (value-based casting: `uint8 + 3` is uint8,
/// `uint8 + 300` uint16, `uint8 - 1` int16, `float16 * 2.5` float16); otherwise as int64,
/// float64 or bool. True division of integers is float64.
pub fn numpy_result_dtype(op: BinaryOp, l: &Value, r: &Value) -> Option<runtime::DType> {
    use runtime::DType;
    let array = |v: &Value| match v {
        Value::Array(a) => Some(a.array.dtype()),
        _ => None,
    };
    let scalar = |v: &Value, against: DType| -> Option<DType> {
        let (category, default, min) = match v {
            Value::Bool(_) => (0, DType::Bool, DType::Bool),
            Value::Int(i) => (1, DType::Int64, min_int_type(*i)),
            Value::Float(f) => (2, DType::Float64, min_float_type(*f)),
            _ => return None,
        };
        Some(if category <= against.category() {
            min
        } else {
            default
        })
    };
    let d = match (array(l), array(r)) {
        (Some(a), Some(b)) => a.numpy_promote(b),
        (Some(a), None) => a.numpy_promote(scalar(r, a)?),
        (None, Some(b)) => scalar(l, b)?.numpy_promote(b),
        (None, None) => return None,
    };
    Some(if op == BinaryOp::Div && !d.is_float() {
        DType::Float64
    } else {
        d
    })
}

/// NumPy's `min_scalar_type` of a Python int: the smallest unsigned type for a non-negative
/// value, the smallest signed one for a negative value.
fn min_int_type(i: i64) -> runtime::DType {
    use runtime::DType;
    match i {
        0..=255 => DType::UInt8,
        256..=65535 => DType::UInt16,
        65536..=4294967295 => DType::UInt32,
        -128..=-1 => DType::Int8,
        -32768..=-129 => DType::Int16,
        -2147483648..=-32769 => DType::Int32,
        i if i > 0 => DType::UInt64,
        _ => DType::Int64,
    }
}

/// NumPy's `min_scalar_type` of a Python float: the smallest float type whose range holds it.
fn min_float_type(f: f64) -> runtime::DType {
    use runtime::DType;
    let a = f.abs();
    if !a.is_finite() || a <= 65504.0 {
        DType::Float16
    } else if a <= f64::from(f32::MAX) {
        DType::Float32
    } else {
        DType::Float64
    }
}

/// The dtype the runtime computes `l op r` in, when both sides are arrays or numbers.
fn runtime_result_dtype(op: BinaryOp, l: &Value, r: &Value) -> Option<runtime::DType> {
    let probe = |v: &Value| match v {
        Value::Array(a) => Some(Ok(a.array.dtype())),
        Value::Bool(b) => Some(Err(runtime::Scalar::Bool(*b))),
        Value::Int(i) => Some(Err(runtime::Scalar::Int(*i))),
        Value::Float(f) => Some(Err(runtime::Scalar::Float(*f))),
        _ => None,
    };
    runtime::binary_result_dtype(op, probe(l)?, probe(r)?)
}

/// Both operands as NumPy scalars when one is a 0-d NumPy array and the other is one too or
/// a scalar (a Python number or a NumPy scalar); None otherwise.
fn numpy_0d_as_scalars(l: &Value, r: &Value) -> Result<Option<(Value, Value)>, Exc> {
    let zero_d = |v: &Value| matches!(v, Value::Array(a) if a.flavor == Flavor::Numpy && a.array.ndim() == 0);
    let scalar_like = |v: &Value| zero_d(v) || as_scalar(v).is_some();
    if NUMPY_SCALAR.get().is_none() || !(scalar_like(l) && scalar_like(r)) {
        return Ok(None);
    }
    let conv = |v: &Value| match v {
        Value::Array(a) => numpy_scalar(&a.array),
        other => Ok(other.clone()),
    };
    Ok(Some((conv(l)?, conv(r)?)))
}

pub fn runtime_binop(op: BinOp) -> Option<(BinaryOp, &'static str)> {
    Some(match op {
        BinOp::Add => (BinaryOp::Add, "add"),
        BinOp::Sub => (BinaryOp::Sub, "subtract"),
        BinOp::Mul => (BinaryOp::Mul, "multiply"),
        BinOp::Div => (BinaryOp::Div, "divide"),
        BinOp::FloorDiv => (BinaryOp::FloorDiv, "floor_divide"),
        BinOp::Mod => (BinaryOp::Mod, "mod"),
        BinOp::Pow => (BinaryOp::Pow, "power"),
        BinOp::BitAnd => (BinaryOp::And, "logical_and"),
        BinOp::BitOr => (BinaryOp::Or, "logical_or"),
        BinOp::BitXor => (BinaryOp::Xor, "logical_xor"),
        _ => return None,
    })
}

fn unsupported(op: &str, l: &Value, r: &Value) -> Exc {
    if let Some(e) = [l, r].into_iter().find_map(|v| match v {
        Value::Object(o) => o.operand_error(op),
        _ => None,
    }) {
        return e;
    }
    Exc::type_error(format!(
        "unsupported operand type(s) for {op}: '{}' and '{}'",
        l.type_name(),
        r.type_name()
    ))
}

fn overflow() -> Exc {
    Exc::new(
        ExcKind::OverflowError,
        "integer result does not fit in 64 bits; use floats (e.g. 2.0 ** 70) for larger numbers",
    )
}

fn zero_div(what: &str) -> Exc {
    Exc::new(ExcKind::ZeroDivisionError, what.to_string())
}

// ---------------------------------------------------------------------- unary

pub fn unary(it: &mut dyn Interpreter, op: UnaryOp, v: &Value) -> Result<Value, Exc> {
    if let (Value::Instance(_), UnaryOp::Neg | UnaryOp::Pos | UnaryOp::Invert) = (v, op) {
        let name = match op {
            UnaryOp::Neg => "__neg__",
            UnaryOp::Pos => "__pos__",
            _ => "__invert__",
        };
        if let Some(r) = class::call_special(it, v, name, Vec::new())? {
            return Ok(r);
        }
        if let Some(base) = class::base_value(v) {
            return unary(it, op, &base);
        }
    }
    if let (Value::Object(o), UnaryOp::Neg | UnaryOp::Pos | UnaryOp::Invert) = (v, op) {
        if let Some(e) = o.operand_error(unary_symbol(op)) {
            return Err(e);
        }
        if let Some(r) = o.unary(op) {
            return r;
        }
    }
    match (op, v) {
        (UnaryOp::Pos, Value::Int(_) | Value::Float(_)) => Ok(v.clone()),
        (UnaryOp::Pos, Value::Bool(b)) => Ok(Value::Int(*b as i64)),
        (UnaryOp::Neg, Value::Int(i)) => Ok(i
            .checked_neg()
            .map(Value::Int)
            .unwrap_or_else(|| bigint::neg(&(*i).into()))),
        (UnaryOp::Pos, Value::BigInt(_)) => Ok(v.clone()),
        (UnaryOp::Neg, Value::BigInt(n)) => Ok(bigint::neg(n)),
        (UnaryOp::Invert, Value::BigInt(n)) => Ok(bigint::invert(n)),
        (UnaryOp::Neg, Value::Bool(b)) => Ok(Value::Int(-(*b as i64))),
        (UnaryOp::Neg, Value::Float(f)) => Ok(Value::Float(-f)),
        (UnaryOp::Invert, Value::Int(i)) => Ok(Value::Int(!i)),
        (UnaryOp::Invert, Value::Bool(b)) => Ok(Value::Int(!(*b as i64))),
        (UnaryOp::Neg, Value::Array(a)) => {
            let out = it
                .state_mut()
                .nn
                .tape
                .unary(&a.array, runtime::UnaryOp::Neg)?;
            if a.flavor == Flavor::Numpy && out.ndim() == 0 {
                return numpy_scalar(&out);
            }
            Ok(wrap(out, a.flavor))
        }
        (UnaryOp::Pos, Value::Array(_)) => Ok(v.clone()),
        (UnaryOp::Invert, Value::Array(a)) => {
            Ok(wrap(a.array.unary(runtime::UnaryOp::Not)?, a.flavor))
        }
        (UnaryOp::Not, _) => Ok(Value::Bool(!super::class::truthy(it, v)?)),
        _ => Err(Exc::type_error(format!(
            "bad operand type for unary {}: '{}'",
            match op {
                UnaryOp::Neg => "-",
                UnaryOp::Pos => "+",
                UnaryOp::Invert => "~",
                UnaryOp::Not => "not",
            },
            v.type_name()
        ))),
    }
}

/// How `operand_error` names a unary operator (`-x` is `"neg"`, told from binary `-`).
fn unary_symbol(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Neg => "neg",
        UnaryOp::Pos => "pos",
        UnaryOp::Invert | UnaryOp::Not => "invert",
    }
}

// --------------------------------------------------------------------- binary

pub fn binary(it: &mut dyn Interpreter, op: BinOp, l: &Value, r: &Value) -> Result<Value, Exc> {
    if matches!(l, Value::Instance(_)) || matches!(r, Value::Instance(_)) {
        return instance_binary(it, op, l, r);
    }
    // Arrays first: any array operand makes it an array operation, where a NumPy scalar
    // counts as the Python number it stands for (NumPy 1.x's value-based casting).
    if matches!(l, Value::Array(_)) || matches!(r, Value::Array(_)) {
        // NumPy 1.x: with every operand 0-d, the dtypes promote as scalars do
        // (`np.array(1.5, np.float32) + 0` is a float64).
        if let Some((l, r)) = numpy_0d_as_scalars(l, r)? {
            return binary(it, op, &l, &r);
        }
        // No object arrays: an int past 64 bits is no array operand (PyTorch's and NumPy's
        // words for converting it).
        if matches!(l, Value::BigInt(_)) || matches!(r, Value::BigInt(_)) {
            let torch = [l, r]
                .iter()
                .any(|v| matches!(v, Value::Array(a) if a.flavor == Flavor::Torch));
            return Err(Exc::new(
                ExcKind::OverflowError,
                if torch {
                    "int too big to convert"
                } else {
                    "Python int too large to convert to C long"
                },
            ));
        }
        return array_binary(it, op, &as_number(l), &as_number(r));
    }
    for (o, other, reflected) in [(l, r, false), (r, l, true)] {
        if let Value::Object(obj) = o {
            if let Some(v) = obj.binary(op, other, reflected) {
                // A NumPy scalar's operation reports its floating-point conditions.
                if let (Ok(out), Some((_, name))) = (&v, runtime_binop(op)) {
                    numpy_fp_check(it, name, &[l, r], out)?;
                }
                return v;
            }
        }
    }
    // `int | None` in an annotation: a `types.UnionType`.
    if op == BinOp::BitOr {
        if let Some(u) = super::generic_alias::union(l, r) {
            return Ok(u);
        }
    }
    match (l, r) {
        (Value::Int(_) | Value::Bool(_), Value::Int(_) | Value::Bool(_)) => {
            let (a, b) = (as_i64(l).unwrap_or(0), as_i64(r).unwrap_or(0));
            int_binary(op, a, b)
        }
        (Value::BigInt(_), _) | (_, Value::BigInt(_)) if big_operands(l, r) => {
            big_binary(op, l, r).unwrap_or_else(|| Err(unsupported(op.symbol(), l, r)))
        }
        (
            Value::Int(_) | Value::Bool(_) | Value::Float(_),
            Value::Int(_) | Value::Bool(_) | Value::Float(_),
        ) => {
            let (a, b) = (as_f64(l).unwrap_or(0.0), as_f64(r).unwrap_or(0.0));
            float_binary(op, a, b).ok_or_else(|| unsupported(op.symbol(), l, r))?
        }
        (Value::Str(a), Value::Str(b)) if op == BinOp::Add => {
            let mut s = String::with_capacity(a.len() + b.len());
            s.push_str(a);
            s.push_str(b);
            Ok(Value::str(&s))
        }
        (Value::Str(s), n) | (n, Value::Str(s)) if op == BinOp::Mul && as_i64(n).is_some() => {
            let k = as_i64(n).unwrap_or(0).max(0) as usize;
            let mut out = alloc::string(0)?;
            alloc::push_repeated(&mut out, s, k)?;
            alloc::str_value(&out)
        }
        (Value::Str(fmt), args) if op == BinOp::Mod => format::percent(it, fmt, args),
        (Value::Set(a), Value::Set(_))
            if matches!(
                op,
                BinOp::BitOr | BinOp::BitAnd | BinOp::Sub | BinOp::BitXor
            ) =>
        {
            super::set::binary(it, op, a, r)
        }
        // PEP 584: `a | b` is a copy of `a` updated with `b`.
        (Value::Dict(a), Value::Dict(b)) if op == BinOp::BitOr => {
            let merged = Rc::new(RefCell::new(a.borrow().clone()));
            let entries = b.borrow().entries.clone();
            merge_entries(it, &merged, entries)?;
            Ok(Value::Dict(merged))
        }
        (Value::List(a), Value::List(b)) if op == BinOp::Add => {
            let mut v = a.borrow().clone();
            v.extend(b.borrow().iter().cloned());
            Ok(Value::list(v))
        }
        (Value::Tuple(a), Value::Tuple(b)) if op == BinOp::Add => {
            let mut v = a.as_ref().clone();
            v.extend(b.iter().cloned());
            Ok(Value::tuple(v))
        }
        (Value::List(a), n) | (n, Value::List(a)) if op == BinOp::Mul && as_i64(n).is_some() => {
            let k = as_i64(n).unwrap_or(0).max(0) as usize;
            let items = a.borrow();
            Ok(Value::list(repeat_items(&items, k)?))
        }
        (Value::Tuple(a), n) | (n, Value::Tuple(a)) if op == BinOp::Mul && as_i64(n).is_some() => {
            let k = as_i64(n).unwrap_or(0).max(0) as usize;
            Ok(Value::tuple(repeat_items(a, k)?))
        }
        // A repeat count past i64, of either sign.
        (Value::List(_) | Value::Tuple(_) | Value::Str(_), Value::BigInt(_))
        | (Value::BigInt(_), Value::List(_) | Value::Tuple(_) | Value::Str(_))
            if op == BinOp::Mul =>
        {
            Err(bigint::index_overflow())
        }
        _ => Err(unsupported(op.symbol(), l, r)),
    }
}

/// `items * k` for a list or tuple: as long as memory allows (CPython's limit), a MemoryError
/// past it.
fn repeat_items(items: &[Value], k: usize) -> Result<Vec<Value>, Exc> {
    let n = items.len().checked_mul(k).ok_or_else(alloc::memory_error)?;
    let mut out = alloc::vec(n)?;
    for _ in 0..k {
        out.extend(items.iter().cloned());
    }
    Ok(out)
}

/// Whether `l op r` is arithmetic on a big int: both ints, or an int and a float.
fn big_operands(l: &Value, r: &Value) -> bool {
    let number = |v: &Value| {
        matches!(
            v,
            Value::Int(_) | Value::Bool(_) | Value::BigInt(_) | Value::Float(_)
        )
    };
    number(l) && number(r)
}

/// `l op r` where one operand is a big int and the other an int or a float: exact with ints;
/// with a float, the int converts (CPython's OverflowError past the float range). None when
/// the operator does not apply to floats.
fn big_binary(op: BinOp, l: &Value, r: &Value) -> Option<Result<Value, Exc>> {
    if let (Some(a), Some(b)) = (bigint::as_big(l), bigint::as_big(r)) {
        return Some(bigint::binary(op, &a, &b));
    }
    let float = |v: &Value| match v {
        Value::BigInt(n) => bigint::to_f64(n),
        other => Ok(as_f64(other).unwrap_or(0.0)),
    };
    if matches!(
        op,
        BinOp::BitAnd
            | BinOp::BitOr
            | BinOp::BitXor
            | BinOp::LShift
            | BinOp::RShift
            | BinOp::MatMul
    ) {
        return None;
    }
    match (float(l), float(r)) {
        (Ok(a), Ok(b)) => float_binary(op, a, b),
        (Err(e), _) | (_, Err(e)) => Some(Err(e)),
    }
}

/// `a op b` on i64s; a result past i64 is computed again exactly as a big int.
fn int_binary(op: BinOp, a: i64, b: i64) -> Result<Value, Exc> {
    let big = || bigint::binary(op, &a.into(), &b.into());
    Ok(Value::Int(match op {
        BinOp::Add => match a.checked_add(b) {
            Some(v) => v,
            None => return big(),
        },
        BinOp::Sub => match a.checked_sub(b) {
            Some(v) => v,
            None => return big(),
        },
        BinOp::Mul => match a.checked_mul(b) {
            Some(v) => v,
            None => return big(),
        },
        BinOp::Div => {
            if b == 0 {
                return Err(zero_div("division by zero"));
            }
            // Past 2**53 an i64 is no exact float: divide exactly, round once.
            const EXACT: u64 = 1 << 53;
            if a.unsigned_abs() > EXACT || b.unsigned_abs() > EXACT {
                return big();
            }
            return Ok(Value::Float(a as f64 / b as f64));
        }
        BinOp::FloorDiv => {
            if b == 0 {
                return Err(zero_div("integer division or modulo by zero"));
            }
            let Some(q) = a.checked_div(b) else {
                return big();
            };
            if (a % b != 0) && ((a < 0) != (b < 0)) {
                q - 1
            } else {
                q
            }
        }
        BinOp::Mod => {
            if b == 0 {
                return Err(zero_div("integer division or modulo by zero"));
            }
            let m = a.checked_rem(b).unwrap_or(0);
            if m != 0 && ((m < 0) != (b < 0)) {
                m + b
            } else {
                m
            }
        }
        BinOp::Pow => {
            if b < 0 {
                if a == 0 {
                    return Err(zero_div("0.0 cannot be raised to a negative power"));
                }
                return Ok(Value::Float((a as f64).powf(b as f64)));
            }
            match u32::try_from(b).ok().and_then(|e| a.checked_pow(e)) {
                Some(v) => v,
                None => return big(),
            }
        }
        BinOp::BitAnd => a & b,
        BinOp::BitOr => a | b,
        BinOp::BitXor => a ^ b,
        BinOp::LShift => {
            let s = u32::try_from(b).map_err(|_| Exc::value_error("negative shift count"))?;
            match a.checked_shl(s).filter(|r| r >> s == a) {
                Some(v) => v,
                None => return big(),
            }
        }
        BinOp::RShift => {
            let s = u32::try_from(b).map_err(|_| Exc::value_error("negative shift count"))?;
            a >> s.min(63)
        }
        BinOp::MatMul => {
            return Err(Exc::type_error(
                "unsupported operand type(s) for @: 'int' and 'int'",
            ))
        }
    }))
}

/// CPython's `float_divmod` (b != 0): the floor quotient and the remainder with the sign of
/// `b`, right for infinities and signed zeros (`7.0 // -inf == -1.0`, `-0.0 % 5 == 0.0`).
pub fn float_divmod(a: f64, b: f64) -> (f64, f64) {
    let mut m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = 0.0f64.copysign(b);
    }
    let floordiv = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f64.copysign(a / b)
    };
    (floordiv, m)
}

fn float_binary(op: BinOp, a: f64, b: f64) -> Option<Result<Value, Exc>> {
    Some(Ok(Value::Float(match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div => {
            if b == 0.0 {
                return Some(Err(zero_div("float division by zero")));
            }
            a / b
        }
        BinOp::FloorDiv => {
            if b == 0.0 {
                return Some(Err(zero_div("float floor division by zero")));
            }
            float_divmod(a, b).0
        }
        BinOp::Mod => {
            if b == 0.0 {
                return Some(Err(zero_div("float modulo")));
            }
            float_divmod(a, b).1
        }
        BinOp::Pow => {
            if a == 0.0 && b < 0.0 {
                return Some(Err(zero_div("0.0 cannot be raised to a negative power")));
            }
            let r = a.powf(b);
            if r.is_nan() && a < 0.0 && b.fract() != 0.0 {
                return Some(Err(Exc::value_error(
                    "a negative number raised to a fractional power has no real result",
                )));
            }
            r
        }
        _ => return None,
    })))
}

fn array_binary(it: &mut dyn Interpreter, op: BinOp, l: &Value, r: &Value) -> Result<Value, Exc> {
    if op == BinOp::MatMul {
        return matmul_or_place(it, l, r);
    }
    let flavor = flavor_of(l, r);
    let (rop, name) = runtime_binop(op).ok_or_else(|| unsupported(op.symbol(), l, r))?;
    let lo = operand(l).ok_or_else(|| unsupported(op.symbol(), l, r))?;
    let ro = operand(r).ok_or_else(|| unsupported(op.symbol(), l, r))?;
    for (scalar, other) in [(l, r), (r, l)] {
        if let Value::Array(a) = other {
            int_fits(scalar, a.array.dtype())?;
        }
    }
    // A comparison computes in its operands' common type, as addition would.
    let typed_op = if rop.is_comparison() {
        BinaryOp::Add
    } else {
        rop
    };
    // PyTorch: a 0-d tensor of a category no higher than a dimensioned operand's takes that
    // operand's dtype (`bf16_vector + torch.tensor(1.0, dtype=torch.float64)` is bfloat16);
    // the 0-d one is cast on the tape, so gradients flow through the cast.
    if let Some((zero_d, target)) = (flavor == Flavor::Torch)
        .then(|| torch_zero_dim_cast(l, r))
        .flatten()
    {
        let tape = &mut it.state_mut().nn.tape;
        let cast = wrap(
            tape.astype(&zero_d.array, target)
                .map_err(super::error::torch_error)?,
            Flavor::Torch,
        );
        let (l, r) = if matches!(l, Value::Array(a) if a.array.ndim() == 0) {
            (&cast, r)
        } else {
            (l, &cast)
        };
        return array_binary(it, op, l, r);
    }
    let numpy_dtype = (flavor == Flavor::Numpy)
        .then(|| numpy_result_dtype(typed_op, l, r))
        .flatten()
        .filter(|&d| Some(d) != runtime_result_dtype(typed_op, l, r));
    if let Some(target) = numpy_dtype {
        // NumPy's result type differs from the runtime's: compute in NumPy's.
        let widen = |v: &Value| -> Result<Value, Exc> {
            match v {
                Value::Array(a) if a.array.dtype() != target => {
                    Ok(wrap(a.array.astype(target)?, a.flavor))
                }
                other => Ok(other.clone()),
            }
        };
        let (wl, wr) = (widen(l)?, widen(r)?);
        let (lo, ro) = (
            operand(&wl).ok_or_else(|| unsupported(op.symbol(), l, r))?,
            operand(&wr).ok_or_else(|| unsupported(op.symbol(), l, r))?,
        );
        let out = it
            .state_mut()
            .nn
            .tape
            .binary(rop, lo, ro)
            .map_err(numpy_error)?;
        let out = wrap(out, flavor);
        numpy_fp_check(it, name, &[l, r], &out)?;
        if let Value::Array(a) = &out {
            if a.array.ndim() == 0 {
                return numpy_scalar(&a.array);
            }
        }
        return Ok(out);
    }
    let result = it
        .state_mut()
        .nn
        .tape
        .binary(rop, lo, ro)
        .map_err(|e| match flavor {
            Flavor::Torch => super::error::torch_error(e),
            Flavor::Numpy => numpy_error(e),
            _ => Exc::from(e),
        })?;
    let result = wrap(result, flavor);
    if flavor == Flavor::Numpy {
        numpy_fp_check(it, name, &[l, r], &result)?;
        // A NumPy operation on 0-d operands gives a scalar, as NumPy's ufuncs do.
        if let Value::Array(a) = &result {
            if a.array.ndim() == 0 {
                return numpy_scalar(&a.array);
            }
        }
    }
    Ok(result)
}

/// The 0-d tensor operand of `l op r` and the dtype PyTorch computes it in, when that differs
/// from its own: the other operand has dimensions and a category at least as high.
fn torch_zero_dim_cast<'a>(
    l: &'a Value,
    r: &'a Value,
) -> Option<(&'a super::value::ArrayValue, runtime::DType)> {
    let (Value::Array(a), Value::Array(b)) = (l, r) else {
        return None;
    };
    let (zero_d, other) = match (a.array.ndim(), b.array.ndim()) {
        (0, n) if n > 0 => (a, b),
        (n, 0) if n > 0 => (b, a),
        _ => return None,
    };
    let (from, to) = (zero_d.array.dtype(), other.array.dtype());
    (from != to && from.category() <= to.category()).then_some((zero_d, to))
}

/// A Python int combined with or stored into an integer array must fit its dtype: NumPy
/// raises OverflowError (NEP 50) where a cast would silently wrap or saturate.
pub fn int_fits(v: &Value, dtype: runtime::DType) -> Result<(), Exc> {
    let Value::Int(i) = v else {
        return Ok(());
    };
    let fits = match dtype {
        runtime::DType::Int32 => i32::try_from(*i).is_ok(),
        _ => true,
    };
    if fits {
        return Ok(());
    }
    Err(Exc::new(
        ExcKind::OverflowError,
        format!("Python integer {i} out of bounds for {}", dtype.name()),
    ))
}

/// `a @ b`: matrix product of two arrays; `x @ device` moves `x` there
/// (returning `x` itself when it is already there).
fn matmul_or_place(it: &mut dyn Interpreter, l: &Value, r: &Value) -> Result<Value, Exc> {
    match (l, r) {
        (Value::Array(a), Value::Device(d)) => {
            let st = it.state_mut();
            let moved = st.nn.tape.as_in_device(&st.rt, &a.array, *d)?;
            Ok(wrap(moved, a.flavor))
        }
        (Value::Array(a), Value::Array(b)) => {
            let out = it.state_mut().nn.tape.matmul(&a.array, &b.array)?;
            if a.flavor == Flavor::Numpy && out.ndim() == 0 {
                return numpy_scalar(&out);
            }
            Ok(wrap(out, a.flavor))
        }
        _ => Err(Exc::type_error(format!(
            "unsupported operand type(s) for @: '{}' and '{}' (use array @ array for a matrix product, or array @ gpu(0) to place it)",
            l.type_name(),
            r.type_name()
        ))),
    }
}

fn flavor_of(l: &Value, r: &Value) -> Flavor {
    match (l, r) {
        (Value::Array(a), _) => a.flavor,
        (_, Value::Array(b)) => b.flavor,
        _ => Flavor::Nd,
    }
}

pub fn operand(v: &Value) -> Option<Operand<'_>> {
    match v {
        Value::Array(a) => Some(Operand::Array(&a.array)),
        other => as_scalar(other).map(Operand::Scalar),
    }
}

/// `target op= value`: arrays and lists change in place (identity kept, as
/// in MXNet and Python); everything else rebinds.
/// The special methods of a binary operator: `a + b` tries `a.__add__(b)`, then
/// `b.__radd__(a)`; `a += b` tries `a.__iadd__(b)` first.
fn binop_methods(op: BinOp) -> (&'static str, &'static str, &'static str) {
    match op {
        BinOp::Add => ("__add__", "__radd__", "__iadd__"),
        BinOp::Sub => ("__sub__", "__rsub__", "__isub__"),
        BinOp::Mul => ("__mul__", "__rmul__", "__imul__"),
        BinOp::Div => ("__truediv__", "__rtruediv__", "__itruediv__"),
        BinOp::FloorDiv => ("__floordiv__", "__rfloordiv__", "__ifloordiv__"),
        BinOp::Mod => ("__mod__", "__rmod__", "__imod__"),
        BinOp::Pow => ("__pow__", "__rpow__", "__ipow__"),
        BinOp::MatMul => ("__matmul__", "__rmatmul__", "__imatmul__"),
        BinOp::BitAnd => ("__and__", "__rand__", "__iand__"),
        BinOp::BitOr => ("__or__", "__ror__", "__ior__"),
        BinOp::BitXor => ("__xor__", "__rxor__", "__ixor__"),
        BinOp::LShift => ("__lshift__", "__rlshift__", "__ilshift__"),
        BinOp::RShift => ("__rshift__", "__rrshift__", "__irshift__"),
    }
}

/// A binary operator with an instance operand: the left's method, then the right's reflected
/// one (first, when the right's class derives from the left's, as CPython).
fn instance_binary(
    it: &mut dyn Interpreter,
    op: BinOp,
    l: &Value,
    r: &Value,
) -> Result<Value, Exc> {
    let (forward, reflected, _) = binop_methods(op);
    let right_first = match (l, r) {
        (Value::Instance(a), Value::Instance(b)) => {
            !Rc::ptr_eq(&a.class(), &b.class())
                && b.class().is_subclass_of(&Value::Class(a.class()))
                && b.class().defines(reflected)
        }
        _ => false,
    };
    if right_first {
        if let Some(v) = class::call_special(it, r, reflected, vec![l.clone()])? {
            if !class::is_not_implemented(&v) {
                return Ok(v);
            }
        }
    }
    if let Some(v) = class::call_special(it, l, forward, vec![r.clone()])? {
        if !class::is_not_implemented(&v) {
            return Ok(v);
        }
    }
    if !right_first {
        if let Some(v) = class::call_special(it, r, reflected, vec![l.clone()])? {
            if !class::is_not_implemented(&v) {
                return Ok(v);
            }
        }
    }
    // `'%r' % obj`: an instance is the one value formatted (its `__rmod__` came first).
    if let (BinOp::Mod, Value::Str(fmt)) = (op, l) {
        return format::percent(it, fmt, r);
    }
    // A class extending a built-in type computes with the value it holds.
    let (lb, rb) = (class::base_value(l), class::base_value(r));
    if lb.is_some() || rb.is_some() {
        let l = lb.unwrap_or_else(|| l.clone());
        let r = rb.unwrap_or_else(|| r.clone());
        return binary(it, op, &l, &r);
    }
    Err(unsupported(op.symbol(), l, r))
}

pub fn binary_inplace(
    it: &mut dyn Interpreter,
    op: BinOp,
    cur: &Value,
    rhs: &Value,
) -> Result<Value, Exc> {
    if let Value::Instance(_) = cur {
        let (_, _, inplace) = binop_methods(op);
        if let Some(v) = class::call_special(it, cur, inplace, vec![rhs.clone()])? {
            if !class::is_not_implemented(&v) {
                return Ok(v);
            }
        }
    }
    // A native object that changes in place (`bytearray += b'...'`).
    if let Value::Object(o) = cur {
        let (_, _, inplace) = binop_methods(op);
        if let Some(f) = o.get_attr(o, inplace) {
            return it.call_value(&f, super::value::Args::positional(vec![rhs.clone()]));
        }
    }
    match (cur, op) {
        (Value::Array(a), _) if op != BinOp::MatMul && a.flavor == Flavor::Torch => {
            // PyTorch's rules: refused on a leaf that requires grad, recorded when it needs to be.
            let (rop, _) = runtime_binop(op).ok_or_else(|| unsupported(op.symbol(), cur, rhs))?;
            let ro = operand(rhs).ok_or_else(|| unsupported(op.symbol(), cur, rhs))?;
            let others: Vec<&runtime::Array> = match ro {
                Operand::Array(b) => vec![b],
                Operand::Scalar(_) => Vec::new(),
            };
            let st = it.state_mut();
            st.nn
                .tape
                .inplace(&st.rt, &a.array, &others, |tape, src| {
                    tape.binary(rop, Operand::Array(src), ro)
                })
                .map_err(super::error::inplace_exc)?;
            Ok(cur.clone())
        }
        (Value::Array(a), _) if op != BinOp::MatMul => {
            let (rop, _) = runtime_binop(op).ok_or_else(|| unsupported(op.symbol(), cur, rhs))?;
            let ro = operand(rhs).ok_or_else(|| unsupported(op.symbol(), cur, rhs))?;
            a.array.binary_inplace(rop, ro)?;
            Ok(cur.clone())
        }
        // `d |= other` updates `d` in place (PEP 584), as `d.update(other)`: another dict,
        // a mapping, or an iterable of pairs.
        (Value::Dict(d), BinOp::BitOr) => {
            if let Value::Dict(other) = rhs {
                let entries = other.borrow().entries.clone();
                merge_entries(it, d, entries)?;
            } else {
                let update = it.get_attr(cur, "update")?;
                it.call_value(&update, super::value::Args::positional(vec![rhs.clone()]))?;
            }
            Ok(cur.clone())
        }
        (Value::List(l), BinOp::Add) => {
            let extra = it.iterate(rhs)?;
            l.borrow_mut().extend(extra);
            Ok(cur.clone())
        }
        (Value::Set(s), BinOp::BitOr | BinOp::BitAnd | BinOp::Sub | BinOp::BitXor) => {
            if !matches!(rhs, Value::Set(_)) {
                return Err(unsupported(&format!("{}=", op.symbol()), cur, rhs));
            }
            if s.frozen {
                return binary(it, op, cur, rhs);
            }
            super::set::inplace(it, op, s, rhs)?;
            Ok(cur.clone())
        }
        _ => binary(it, op, cur, rhs),
    }
}

// ------------------------------------------------------------------ comparison

pub fn compare(it: &mut dyn Interpreter, op: CmpOp, l: &Value, r: &Value) -> Result<Value, Exc> {
    match op {
        CmpOp::Is => return Ok(Value::Bool(l.is(r))),
        CmpOp::IsNot => return Ok(Value::Bool(!l.is(r))),
        CmpOp::In => return contains(it, r, l).map(Value::Bool),
        CmpOp::NotIn => return contains(it, r, l).map(|b| Value::Bool(!b)),
        _ => {}
    }
    if matches!(l, Value::Instance(_)) || matches!(r, Value::Instance(_)) {
        return instance_compare(it, op, l, r);
    }
    if matches!(l, Value::Array(_)) || matches!(r, Value::Array(_)) {
        let (l, r) = (&*as_number(l), &*as_number(r));
        let rop = match op {
            CmpOp::Eq => BinaryOp::Eq,
            CmpOp::NotEq => BinaryOp::Ne,
            CmpOp::Lt => BinaryOp::Lt,
            CmpOp::LtE => BinaryOp::Le,
            CmpOp::Gt => BinaryOp::Gt,
            CmpOp::GtE => BinaryOp::Ge,
            _ => unreachable_cmp()?,
        };
        let (Some(lo), Some(ro)) = (operand(l), operand(r)) else {
            if matches!(op, CmpOp::Eq | CmpOp::NotEq) {
                return Ok(Value::Bool(op == CmpOp::NotEq));
            }
            return Err(cmp_error(op, l, r));
        };
        let flavor = flavor_of(l, r);
        let mut result = Array::binary(rop, lo, ro)?;
        // MXNet's legacy NDArray returns comparisons as 0/1 in the input dtype.
        if flavor == Flavor::Nd {
            let dtype = match (l, r) {
                (Value::Array(a), _) | (_, Value::Array(a)) => a.array.dtype(),
                _ => result.dtype(),
            };
            result = result.astype(dtype)?;
        }
        if flavor == Flavor::Numpy && result.ndim() == 0 {
            return numpy_scalar(&result);
        }
        return Ok(wrap(result, flavor));
    }
    if let Value::Object(o) = l {
        if let Some(v) = o.compare(op, r, false) {
            return v;
        }
    }
    if let Value::Object(o) = r {
        if let Some(v) = o.compare(op, l, true) {
            return v;
        }
    }
    // Dicts whose keys or values may run the program's `__eq__`.
    if let (Value::Dict(a), Value::Dict(b), CmpOp::Eq | CmpOp::NotEq) = (l, r, op) {
        let runs_code = |d: &RefCell<super::value::Dict>| {
            let d = d.borrow();
            d.has_object_keys()
                || d.entries
                    .iter()
                    .any(|(_, v)| matches!(v, Value::Instance(_)))
        };
        if runs_code(a) || runs_code(b) {
            let equal = super::keys::dicts_equal(it, a, b)?;
            return Ok(Value::Bool(equal == (op == CmpOp::Eq)));
        }
    }
    if let (Value::Set(a), Value::Set(b), CmpOp::Eq | CmpOp::NotEq) = (l, r, op) {
        if a.has_object_members() || b.has_object_members() {
            let equal = super::keys::sets_equal(it, a, b)?;
            return Ok(Value::Bool(equal == (op == CmpOp::Eq)));
        }
    }
    // Tuples or lists holding instances compare item by item through their special methods.
    let items = match (l, r) {
        (Value::Tuple(a), Value::Tuple(b)) => Some((a.to_vec(), b.to_vec())),
        (Value::List(a), Value::List(b)) => Some((a.borrow().clone(), b.borrow().clone())),
        _ => None,
    };
    if let Some((a, b)) = items {
        if a.iter()
            .chain(b.iter())
            .any(|v| matches!(v, Value::Instance(_)))
        {
            return sequence_compare(it, op, &a, &b);
        }
    }
    Ok(Value::Bool(match op {
        CmpOp::Eq => equals(l, r)?,
        CmpOp::NotEq => !equals(l, r)?,
        _ => ordered(op, l, r)?,
    }))
}

/// CPython's sequence comparison: the first pair of items that differ decides, else the lengths.
fn sequence_compare(
    it: &mut dyn Interpreter,
    op: CmpOp,
    a: &[Value],
    b: &[Value],
) -> Result<Value, Exc> {
    for (x, y) in a.iter().zip(b.iter()) {
        let same = compare(it, CmpOp::Eq, x, y)?;
        if !class::truthy(it, &same)? {
            return match op {
                CmpOp::Eq => Ok(Value::Bool(false)),
                CmpOp::NotEq => Ok(Value::Bool(true)),
                _ => compare(it, op, x, y),
            };
        }
    }
    let (m, n) = (a.len(), b.len());
    Ok(Value::Bool(match op {
        CmpOp::Eq => m == n,
        CmpOp::NotEq => m != n,
        CmpOp::Lt => m < n,
        CmpOp::LtE => m <= n,
        CmpOp::Gt => m > n,
        _ => m >= n,
    }))
}

/// A comparison with an instance operand: `a < b` tries `a.__lt__(b)`, then `b.__gt__(a)`;
/// `==` and `!=` fall back to identity, as `object` does.
fn instance_compare(
    it: &mut dyn Interpreter,
    op: CmpOp,
    l: &Value,
    r: &Value,
) -> Result<Value, Exc> {
    let (forward, reflected) = match op {
        CmpOp::Eq => ("__eq__", "__eq__"),
        CmpOp::NotEq => ("__ne__", "__ne__"),
        CmpOp::Lt => ("__lt__", "__gt__"),
        CmpOp::LtE => ("__le__", "__ge__"),
        CmpOp::Gt => ("__gt__", "__lt__"),
        _ => ("__ge__", "__le__"),
    };
    if let Some(v) = class::call_special(it, l, forward, vec![r.clone()])? {
        if !class::is_not_implemented(&v) {
            return Ok(v);
        }
    }
    if let Some(v) = class::call_special(it, r, reflected, vec![l.clone()])? {
        if !class::is_not_implemented(&v) {
            return Ok(v);
        }
    }
    let (lb, rb) = (class::base_value(l), class::base_value(r));
    if lb.is_some() || rb.is_some() {
        let l = lb.unwrap_or_else(|| l.clone());
        let r = rb.unwrap_or_else(|| r.clone());
        return compare(it, op, &l, &r);
    }
    match op {
        // `!=` is the negation of a defined `__eq__`.
        CmpOp::NotEq => {
            if let Some(v) = class::call_special(it, l, "__eq__", vec![r.clone()])? {
                if !class::is_not_implemented(&v) {
                    return Ok(Value::Bool(!class::truthy(it, &v)?));
                }
            }
            Ok(Value::Bool(!l.is(r)))
        }
        CmpOp::Eq => Ok(Value::Bool(l.is(r))),
        _ => Err(cmp_error(op, l, r)),
    }
}

/// An index as the value `__getitem__` receives: the key, a `slice`, or a tuple of them.
fn index_value(idx: &Index) -> Value {
    fn item(i: &IndexItem) -> Value {
        match i {
            IndexItem::Value(v) => v.clone(),
            IndexItem::Slice(a, b, c) => class::new_slice(
                a.clone().unwrap_or(Value::None),
                b.clone().unwrap_or(Value::None),
                c.clone().unwrap_or(Value::None),
            ),
            IndexItem::Ellipsis => class::ellipsis(),
        }
    }
    match idx {
        Index::Single(i) => item(i),
        Index::Multi(items) => Value::tuple(items.iter().map(item).collect()),
    }
}

fn unreachable_cmp() -> Result<BinaryOp, Exc> {
    Err(Exc::type_error("unsupported comparison"))
}

fn cmp_error(op: CmpOp, l: &Value, r: &Value) -> Exc {
    Exc::type_error(format!(
        "'{}' not supported between instances of '{}' and '{}'",
        op.symbol(),
        l.type_name(),
        r.type_name()
    ))
}

/// Python `==` for non-array values. Containers compare item by item under the recursion
/// guard: a list that holds itself is equal to itself (items are compared by identity first,
/// as CPython does), and one nested past the limit is a `RecursionError`, never a wrong answer.
/// `a == b` as containment and `list.index` test it: identity first, then a program's `__eq__`
/// when either side is an instance, else value equality.
pub fn item_equals(it: &mut dyn Interpreter, a: &Value, b: &Value) -> Result<bool, Exc> {
    if a.is(b) {
        return Ok(true);
    }
    if matches!(a, Value::Instance(_)) || matches!(b, Value::Instance(_)) {
        let r = compare(it, CmpOp::Eq, a, b)?;
        return class::truthy(it, &r);
    }
    equals(a, b)
}

pub fn equals(l: &Value, r: &Value) -> Result<bool, Exc> {
    if let Some(order) = big_less(l, r) {
        return Ok(order == Some(std::cmp::Ordering::Equal));
    }
    if let (Some(a), Some(b)) = (as_f64(l), as_f64(r)) {
        if let (Some(x), Some(y)) = (as_i64(l), as_i64(r)) {
            return Ok(x == y);
        }
        return Ok(a == b);
    }
    let items_equal = |a: &[Value], b: &[Value]| -> Result<bool, Exc> {
        if a.len() != b.len() {
            return Ok(false);
        }
        guard::nest(Walk::Compare, || {
            for (x, y) in a.iter().zip(b.iter()) {
                if !(x.is(y) || equals(x, y)?) {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    };
    Ok(match (l, r) {
        (Value::None, Value::None) => true,
        (Value::Str(a), Value::Str(b)) => a == b,
        // No user code runs while values compare, so the borrows cannot meet a mutation
        // (and shared borrows of a list that holds itself nest).
        (Value::List(a), Value::List(b)) => items_equal(&a.borrow(), &b.borrow())?,
        (Value::Tuple(a), Value::Tuple(b)) => items_equal(a, b)?,
        (Value::Dict(a), Value::Dict(b)) => {
            let (a, b) = (a.borrow(), b.borrow());
            if a.len() != b.len() {
                return Ok(false);
            }
            guard::nest(Walk::Compare, || {
                for (k, v) in &a.entries {
                    let Some(hk) = k.hash_key()? else {
                        return Ok(false);
                    };
                    match b.get(&hk) {
                        Some(bv) if v.is(bv) || equals(v, bv)? => {}
                        _ => return Ok(false),
                    }
                }
                Ok(true)
            })?
        }
        // Equal when they give the same items (CPython's `range_equals`).
        (Value::Range(a, b, c), Value::Range(x, y, z)) => {
            let (n, m) = (
                super::value::range_len(*a, *b, *c),
                super::value::range_len(*x, *y, *z),
            );
            n == m && (n == 0 || (a == x && (n == 1 || c == z)))
        }
        (Value::Set(a), Value::Set(b)) => super::set::equal(a, b)?,
        (Value::Device(a), Value::Device(b)) => a == b,
        (Value::Object(o), other) | (other, Value::Object(o)) if o.equals(other).is_some() => {
            o.equals(other).unwrap_or(false)
        }
        (Value::DType(a, _), Value::DType(b, _)) => a == b,
        (Value::DType(a, _), Value::Str(s)) | (Value::Str(s), Value::DType(a, _)) => {
            crate::runtime::DType::from_name(s) == Some(*a)
        }
        _ => l.is(r),
    })
}

/// `l < r` as Python answers it: None when the types cannot be ordered (a TypeError for the
/// caller). NaN is never less than anything, as in Python.
pub fn less(l: &Value, r: &Value) -> Result<Option<bool>, Exc> {
    if let (Some(x), Some(y)) = (as_i64(l), as_i64(r)) {
        return Ok(Some(x < y));
    }
    if let Some(order) = big_less(l, r) {
        return Ok(Some(order == Some(std::cmp::Ordering::Less)));
    }
    if let (Some(a), Some(b)) = (as_f64(l), as_f64(r)) {
        return Ok(Some(a < b));
    }
    Ok(match (l, r) {
        (Value::Str(a), Value::Str(b)) => Some(a < b),
        (Value::List(a), Value::List(b)) => seq_less(&a.borrow(), &b.borrow())?,
        (Value::Tuple(a), Value::Tuple(b)) => seq_less(a, b)?,
        // Sets order by inclusion: `<` is a proper subset.
        (Value::Set(a), Value::Set(b)) => Some(super::set::proper_subset(a, b)),
        (Value::Object(a), b) => a.less(b),
        _ => None,
    })
}

/// The exact order of two numbers where a float comparison could be wrong: one is a big int,
/// or an int past 2**53 meets a float (CPython compares them exactly: `2**53 + 1 > 2.0**53`).
/// None otherwise, or when they are not both numbers.
fn big_less(l: &Value, r: &Value) -> Option<Option<std::cmp::Ordering>> {
    const EXACT: u64 = 1 << 53;
    let inexact = |a: &Value, b: &Value| matches!((a, b), (Value::Int(i), Value::Float(_)) if i.unsigned_abs() > EXACT);
    if matches!(l, Value::BigInt(_))
        || matches!(r, Value::BigInt(_))
        || inexact(l, r)
        || inexact(r, l)
    {
        bigint::compare_numbers(l, r)
    } else {
        None
    }
}

/// Sequences order by their first unequal items, then by length (CPython's rule).
fn seq_less(a: &[Value], b: &[Value]) -> Result<Option<bool>, Exc> {
    guard::nest(Walk::Compare, || {
        for (x, y) in a.iter().zip(b.iter()) {
            if !(x.is(y) || equals(x, y)?) {
                return less(x, y);
            }
        }
        Ok(Some(a.len() < b.len()))
    })
}

/// `l op r` for the ordering operators, with Python's results for NaN (every one False).
fn ordered(op: CmpOp, l: &Value, r: &Value) -> Result<bool, Exc> {
    let (x, y) = match op {
        CmpOp::Lt | CmpOp::LtE => (l, r),
        _ => (r, l),
    };
    if let Some(strict) = big_less(x, y) {
        // NaN: every ordering is False.
        return Ok(match strict {
            Some(std::cmp::Ordering::Less) => true,
            Some(std::cmp::Ordering::Equal) => matches!(op, CmpOp::LtE | CmpOp::GtE),
            _ => false,
        });
    }
    if let (Some(a), Some(b)) = (as_f64(x), as_f64(y)) {
        if as_i64(x).is_none() || as_i64(y).is_none() {
            return Ok(if matches!(op, CmpOp::Lt | CmpOp::Gt) {
                a < b
            } else {
                a <= b
            });
        }
    }
    let strict = less(x, y)?.ok_or_else(|| cmp_error(op, l, r))?;
    if matches!(op, CmpOp::Lt | CmpOp::Gt) || strict {
        return Ok(strict);
    }
    // `<=` on sequences: less, or equal.
    equals(x, y)
}

/// The permutation that sorts `keys` stably using `<` only: CPython's algorithm for short
/// lists (a leading run, then binary insertion), merges of such runs for long ones. For a
/// total order every stable sort agrees; with NaN among the keys short lists also give
/// exactly CPython's order.
/// The order of two values by `<` (for sorting by a key), None when they do not compare.
pub fn order(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    if less(a, b).ok()?? {
        Some(std::cmp::Ordering::Less)
    } else if less(b, a).ok()?? {
        Some(std::cmp::Ordering::Greater)
    } else {
        Some(std::cmp::Ordering::Equal)
    }
}

pub fn sort_order(keys: &[Value]) -> Result<Vec<usize>, Exc> {
    let mut lt = |a: usize, b: usize| -> Result<bool, Exc> {
        less(&keys[a], &keys[b])?.ok_or_else(|| cmp_error(CmpOp::Lt, &keys[a], &keys[b]))
    };
    sort_order_by(keys.len(), &mut lt)
}

/// `sort_order`, calling `check` every 4096 comparisons: a sort of millions of keys is one
/// statement, and an interrupt must reach it (`check` is the interpreter's interrupt check).
pub fn sort_order_checked(
    keys: &[Value],
    check: &mut dyn FnMut() -> Result<(), Exc>,
) -> Result<Vec<usize>, Exc> {
    let mut count = 0u32;
    let mut lt = |a: usize, b: usize| -> Result<bool, Exc> {
        count = count.wrapping_add(1);
        if count % 4096 == 0 {
            check()?;
        }
        less(&keys[a], &keys[b])?.ok_or_else(|| cmp_error(CmpOp::Lt, &keys[a], &keys[b]))
    };
    sort_order_by(keys.len(), &mut lt)
}

/// The stable sort of `0..n` by `lt` (the one comparison Python's sort asks), as indices.
pub fn sort_order_by(
    n: usize,
    lt: &mut dyn FnMut(usize, usize) -> Result<bool, Exc>,
) -> Result<Vec<usize>, Exc> {
    let mut idx: Vec<usize> = (0..n).collect();
    const RUN: usize = 64;
    let mut start = 0;
    while start < n {
        let end = (start + RUN).min(n);
        binary_insertion(&mut idx[start..end], lt)?;
        start = end;
    }
    let mut width = RUN;
    let mut buf = Vec::with_capacity(n);
    while width < n {
        let mut lo = 0;
        while lo < n {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            buf.clear();
            let (mut i, mut j) = (lo, mid);
            while i < mid && j < hi {
                // Take from the right only when strictly less: stability.
                if lt(idx[j], idx[i])? {
                    buf.push(idx[j]);
                    j += 1;
                } else {
                    buf.push(idx[i]);
                    i += 1;
                }
            }
            buf.extend_from_slice(&idx[i..mid]);
            buf.extend_from_slice(&idx[j..hi]);
            idx[lo..hi].copy_from_slice(&buf);
            lo = hi;
        }
        width *= 2;
    }
    Ok(idx)
}

/// CPython's `count_run` + `binarysort` on one slice of the permutation.
fn binary_insertion(
    idx: &mut [usize],
    lt: &mut dyn FnMut(usize, usize) -> Result<bool, Exc>,
) -> Result<(), Exc> {
    let n = idx.len();
    if n < 2 {
        return Ok(());
    }
    // The leading run: strictly descending runs are reversed, ascending ones kept.
    let mut run = 2;
    if lt(idx[1], idx[0])? {
        while run < n && lt(idx[run], idx[run - 1])? {
            run += 1;
        }
        idx[..run].reverse();
    } else {
        while run < n && !lt(idx[run], idx[run - 1])? {
            run += 1;
        }
    }
    for start in run..n {
        let pivot = idx[start];
        let (mut l, mut r) = (0, start);
        while l < r {
            let p = l + (r - l) / 2;
            if lt(pivot, idx[p])? {
                r = p;
            } else {
                l = p + 1;
            }
        }
        idx.copy_within(l..start, l + 1);
        idx[l] = pivot;
    }
    Ok(())
}

fn contains(it: &mut dyn Interpreter, container: &Value, item: &Value) -> Result<bool, Exc> {
    if let Value::Object(o) = container {
        if let Some(found) = o.contains(item) {
            return found;
        }
    }
    if class::has_special_methods(container) {
        if let Some(v) = class::call_special(it, container, "__contains__", vec![item.clone()])? {
            return class::truthy(it, &v);
        }
        if let Some(base) = class::base_value(container) {
            return contains(it, &base, item);
        }
        for x in it.iterate(container)? {
            if item_equals(it, &x, item)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    match container {
        Value::Str(s) => match item {
            Value::Str(sub) => Ok(s.contains(&**sub)),
            other => Err(Exc::type_error(format!(
                "'in <string>' requires string as left operand, not {}",
                other.type_name()
            ))),
        },
        Value::Set(s) => super::set::contains(it, s, item),
        Value::Dict(d) => {
            let k = super::keys::dict_key(it, d, item)?;
            Ok(d.borrow().get(&k).is_some())
        }
        Value::Range(start, stop, step) => Ok(match as_i64(item) {
            Some(i) => {
                let in_bounds = if *step > 0 {
                    i >= *start && i < *stop
                } else {
                    i <= *start && i > *stop
                };
                in_bounds && (i as i128 - *start as i128) % *step as i128 == 0
            }
            // Whole floats (`2.0 in range(3)`) and big ints.
            None => super::big_range::BigRange::of(container).is_some_and(|r| r.contains(item)),
        }),
        Value::List(_) | Value::Tuple(_) => {
            let items = it.iterate(container)?;
            for x in &items {
                if item_equals(it, x, item)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        other => Err(Exc::type_error(format!(
            "argument of type '{}' is not iterable",
            other.type_name()
        ))),
    }
}

// -------------------------------------------------------------------- indexing

/// Python slice bounds resolved against a length: (start, stop, step).
pub fn slice_indices(
    len: i64,
    start: &Option<Value>,
    stop: &Option<Value>,
    step: &Option<Value>,
) -> Result<(i64, i64, i64), Exc> {
    let get = |v: &Option<Value>| -> Result<Option<i64>, Exc> {
        match v {
            None | Some(Value::None) => Ok(None),
            // Past i64 a bound clamps to the sequence's ends, as CPython's.
            Some(Value::BigInt(n)) => Ok(Some(if n.sign() == num_bigint::Sign::Minus {
                i64::MIN / 2
            } else {
                i64::MAX / 2
            })),
            Some(x) => as_i64(x).map(Some).ok_or_else(|| {
                Exc::type_error(format!(
                    "slice indices must be integers or None, not {}",
                    x.type_name()
                ))
            }),
        }
    };
    let step = get(step)?.unwrap_or(1);
    if step == 0 {
        return Err(Exc::value_error("slice step cannot be zero"));
    }
    let clamp = |i: i64, lo: i64, hi: i64| i.max(lo).min(hi);
    let norm = |i: i64| if i < 0 { i + len } else { i };
    let (start, stop) = if step > 0 {
        (
            get(start)?.map_or(0, |i| clamp(norm(i), 0, len)),
            get(stop)?.map_or(len, |i| clamp(norm(i), 0, len)),
        )
    } else {
        (
            get(start)?.map_or(len - 1, |i| clamp(norm(i), -1, len - 1)),
            get(stop)?.map_or(-1, |i| clamp(norm(i), -1, len - 1)),
        )
    };
    Ok((start, stop, step))
}

fn slice_positions(
    len: usize,
    s: &(Option<Value>, Option<Value>, Option<Value>),
) -> Result<Vec<usize>, Exc> {
    let bounds = slice_indices(len as i64, &s.0, &s.1, &s.2)?;
    let mut out = Vec::new();
    for_slice_positions(bounds, |i| alloc::push(&mut out, i))?;
    Ok(out)
}

/// `__index__` of an array: a one-element integer tensor, or a 0-d integer NumPy array, is an
/// index (`classes[pred.argmax()]`); None for a value that is not an array of those dialects.
fn array_as_index(v: &Value) -> Result<Option<i64>, Exc> {
    let Value::Array(a) = v else {
        return Ok(None);
    };
    let ok = a.array.dtype().is_int();
    match a.flavor {
        Flavor::Torch if ok && a.array.size() == 1 => {}
        Flavor::Torch => {
            return Err(Exc::type_error(
                "only integer tensors of a single element can be converted to an index",
            ))
        }
        Flavor::Numpy if ok && a.array.ndim() == 0 => {}
        Flavor::Numpy => {
            return Err(Exc::type_error(
                "only integer scalar arrays can be converted to a scalar index",
            ))
        }
        _ => return Ok(None),
    }
    Ok(a.array.to_host().to_f64_vec().first().map(|&x| x as i64))
}

fn seq_index(len: usize, v: &Value, what: &str) -> Result<usize, Exc> {
    if let Value::BigInt(_) = v {
        return Err(bigint::index_error());
    }
    let i = match as_i64(v) {
        Some(i) => Some(i),
        None => array_as_index(v)?,
    };
    let i = i.ok_or_else(|| {
        Exc::type_error(format!(
            "{what} indices must be integers or slices, not {}",
            v.type_name()
        ))
    })?;
    let j = if i < 0 { i + len as i64 } else { i };
    if j < 0 || j >= len as i64 {
        return Err(Exc::new(
            ExcKind::IndexError,
            format!("{what} index out of range"),
        ));
    }
    Ok(j as usize)
}

/// A `slice` object used as an index (`seq[slice(1, 3)]`, or a key a class forwards) is the
/// slice itself.
fn unwrap_slices(idx: Index) -> Index {
    let item = |i: IndexItem| match &i {
        IndexItem::Value(v @ Value::Object(_)) => match class::as_slice(v) {
            Some(s) => {
                let part = |v: &Value| (!matches!(v, Value::None)).then(|| v.clone());
                IndexItem::Slice(part(&s.start), part(&s.stop), part(&s.step))
            }
            None => i,
        },
        _ => i,
    };
    match idx {
        Index::Single(i) => Index::Single(item(i)),
        Index::Multi(items) => Index::Multi(items.into_iter().map(item).collect()),
    }
}

/// `seq[i]` or `seq[a:b:c]` of a list, tuple, str or range, reading the sequence in place: a
/// slice costs its result only (the tail of a 100 MB string is not 100 million strings), and a
/// range is never materialised.
fn seq_get_item(obj: &Value, idx: Index) -> Result<Value, Exc> {
    let what = match obj {
        Value::List(_) => "list",
        Value::Tuple(_) => "tuple",
        Value::Str(_) => "string",
        _ => "range object",
    };
    // CPython's wording for an index of the wrong type.
    let wrong_type = |type_name: &str| {
        Exc::type_error(match obj {
            Value::Str(_) => format!("string indices must be integers, not '{type_name}'"),
            _ => format!(
                "{} indices must be integers or slices, not {type_name}",
                what.trim_end_matches(" object")
            ),
        })
    };
    let item = match idx {
        Index::Single(IndexItem::Value(Value::BigInt(_))) => return Err(bigint::index_error()),
        Index::Single(IndexItem::Value(v))
            if as_i64(&v).is_none() && array_as_index(&v)?.is_none() =>
        {
            return Err(wrong_type(&v.type_name()))
        }
        Index::Single(item @ (IndexItem::Value(_) | IndexItem::Slice(..))) => item,
        Index::Single(IndexItem::Ellipsis) => return Err(wrong_type("ellipsis")),
        Index::Multi(_) => return Err(wrong_type("tuple")),
    };
    match obj {
        Value::List(l) => seq_pick(&l.borrow(), item, what, Value::list),
        Value::Tuple(t) => seq_pick(t, item, what, Value::tuple),
        Value::Str(s) => str_item(s, item),
        Value::Range(start, stop, step) => range_item(*start, *stop, *step, item),
        other => Err(not_subscriptable(other)),
    }
}

/// The positions `slice_indices` describes, in order, handed to `f`.
fn for_slice_positions(
    (start, stop, step): (i64, i64, i64),
    mut f: impl FnMut(usize) -> Result<(), Exc>,
) -> Result<(), Exc> {
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        f(i as usize)?;
        // A step as large as an int must not overflow past the end.
        let Some(next) = i.checked_add(step) else {
            break;
        };
        i = next;
    }
    Ok(())
}

fn seq_pick(
    items: &[Value],
    item: IndexItem,
    what: &str,
    make: fn(Vec<Value>) -> Value,
) -> Result<Value, Exc> {
    match item {
        IndexItem::Slice(a, b, c) => {
            let bounds = slice_indices(items.len() as i64, &a, &b, &c)?;
            let mut out = Vec::new();
            for_slice_positions(bounds, |i| alloc::push(&mut out, items[i].clone()))?;
            Ok(make(out))
        }
        IndexItem::Value(v) => Ok(items[seq_index(items.len(), &v, what)?].clone()),
        IndexItem::Ellipsis => Err(Exc::type_error(format!(
            "{what} indices must be integers or slices, not ellipsis"
        ))),
    }
}

fn str_item(s: &str, item: IndexItem) -> Result<Value, Exc> {
    let ascii = s.is_ascii();
    let n = if ascii { s.len() } else { s.chars().count() };
    // The byte offset of character `k` (the end for k == n).
    let byte_at = |k: usize| {
        if ascii {
            k
        } else {
            s.char_indices().nth(k).map_or(s.len(), |(b, _)| b)
        }
    };
    match item {
        IndexItem::Value(v) => {
            let k = seq_index(n, &v, "string")?;
            let b = byte_at(k);
            let end = s[b..].chars().next().map_or(b, |c| b + c.len_utf8());
            Ok(Value::str(&s[b..end]))
        }
        IndexItem::Slice(a, b, c) => {
            let (start, stop, step) = slice_indices(n as i64, &a, &b, &c)?;
            if step == 1 {
                if start >= stop {
                    return Ok(Value::str(""));
                }
                let from = byte_at(start as usize);
                let to = if ascii {
                    stop as usize
                } else {
                    from + s[from..]
                        .char_indices()
                        .nth((stop - start) as usize)
                        .map_or(s.len() - from, |(b, _)| b)
                };
                return alloc::str_value(&s[from..to]);
            }
            let mut out = String::new();
            if ascii {
                for_slice_positions((start, stop, step), |i| {
                    alloc::push_str(&mut out, &s[i..i + 1])
                })?;
            } else {
                let chars: Vec<char> = {
                    let mut v = alloc::vec(n)?;
                    v.extend(s.chars());
                    v
                };
                for_slice_positions((start, stop, step), |i| {
                    let mut buf = [0u8; 4];
                    alloc::push_str(&mut out, chars[i].encode_utf8(&mut buf))
                })?;
            }
            alloc::str_value(&out)
        }
        IndexItem::Ellipsis => Err(Exc::type_error(
            "string indices must be integers or slices, not ellipsis",
        )),
    }
}

fn range_item(start: i64, stop: i64, step: i64, item: IndexItem) -> Result<Value, Exc> {
    let n = super::value::range_len(start, stop, step);
    let at = |k: i64| -> Result<i64, Exc> {
        i64::try_from(start as i128 + k as i128 * step as i128).map_err(|_| overflow())
    };
    match item {
        IndexItem::Value(v) => {
            let k = seq_index(n.max(0) as usize, &v, "range object")?;
            Ok(Value::Int(at(k as i64)?))
        }
        IndexItem::Slice(a, b, c) => {
            // CPython: range(r[i], r[j], r.step * k) for the slice's (i, j, k) over len(r).
            let (i, j, k) = slice_indices(n.max(0), &a, &b, &c)?;
            match (at(i), at(j), step.checked_mul(k)) {
                (Ok(i), Ok(j), Some(new_step)) => Ok(Value::Range(i, j, new_step)),
                // A bound past i64: the range at any size.
                _ => {
                    let part = |v: Option<Value>| v.unwrap_or(Value::None);
                    let key = super::class::new_slice(part(a), part(b), part(c));
                    super::big_range::slice_of(start, stop, step, &key)
                }
            }
        }
        IndexItem::Ellipsis => Err(Exc::type_error(
            "range indices must be integers or slices, not ellipsis",
        )),
    }
}

pub fn get_item(it: &mut dyn Interpreter, obj: &Value, idx: Index) -> Result<Value, Exc> {
    let idx = unwrap_slices(idx);
    if class::has_special_methods(obj) {
        if let Some(v) = class::call_special(it, obj, "__getitem__", vec![index_value(&idx)])? {
            return Ok(v);
        }
        return match class::base_value(obj) {
            Some(base) => get_item(it, &base, idx),
            None => Err(not_subscriptable(obj)),
        };
    }
    match obj {
        Value::Array(a) => {
            let items = array_index(it, &idx, a.array.device())?;
            let items = match paired_index(it, &a.array, &items)? {
                Some((flat_shape, flat)) => {
                    let tape = &mut it.state_mut().nn.tape;
                    let flat_x = tape.reshape(&a.array, &flat_shape)?;
                    return Ok(wrap(
                        tape.index(&flat_x, &[runtime::IndexItem::Array(flat)])?,
                        a.flavor,
                    ));
                }
                None => items,
            };
            if let Some(out) = one_array_among_basic(it, &a.array, &items)? {
                return Ok(wrap(out, a.flavor));
            }
            let tape = &mut it.state_mut().nn.tape;
            let mut out = tape.index(&a.array, &items)?;
            if a.flavor == Flavor::Nd && out.ndim() == 0 {
                // MXNet's legacy NDArray has no 0-d results: `y[1, 2]` has shape (1,).
                out = tape.reshape(&out, &[1])?;
            }
            if a.flavor == Flavor::Numpy && out.ndim() == 0 {
                // NumPy's `x[1, 2]` is a scalar (`11`, not `array(11)`).
                return numpy_scalar(&out);
            }
            Ok(wrap(out, a.flavor))
        }
        Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Range(..) => {
            seq_get_item(obj, idx)
        }
        Value::Dict(d) => {
            let Index::Single(IndexItem::Value(k)) = idx else {
                return Err(Exc::type_error("unhashable type: 'slice'"));
            };
            let hk = super::keys::dict_key(it, d, &k)?;
            let found = d.borrow().get(&hk).cloned();
            match found {
                Some(v) => Ok(v),
                None => Err(Exc::key_error(it, &k)),
            }
        }
        // `list[int]`: a generic alias (PEP 585).
        Value::Builtin(b) if b.name == "type" => Ok(super::generic_alias::subscript(
            obj.clone(),
            index_value(&idx),
        )),
        Value::Type(t) if super::generic_alias::is_generic(*t) => Ok(
            super::generic_alias::subscript(obj.clone(), index_value(&idx)),
        ),
        Value::Object(o) => match o.get_attr(o, "__getitem__") {
            Some(f) => {
                // `obj[a, b]` passes the tuple (a, b), slices included, as Python does.
                let key = match idx {
                    Index::Single(IndexItem::Value(v)) => v,
                    other => index_value(&other),
                };
                it.call_value(&f, super::value::Args::new("__getitem__", vec![key]))
            }
            None => Err(not_subscriptable(obj)),
        },
        _ => Err(not_subscriptable(obj)),
    }
}

fn not_subscriptable(obj: &Value) -> Exc {
    Exc::type_error(format!("'{}' object is not subscriptable", obj.type_name()))
}

/// Translate a subscript into the runtime's index items.
/// A nested list or tuple of numbers as a host array (NumPy's `x[[0, 2]]` and `x[:, 0] = [1, 2]`):
/// bools stay bool, ints are int64, any float makes float64. None when `v` is not such a list.
fn list_array(
    it: &mut dyn Interpreter,
    v: &Value,
    device: runtime::Device,
) -> Result<Option<Array>, Exc> {
    fn walk(v: &Value, depth: usize, shape: &mut Vec<usize>, out: &mut Vec<Value>) -> Option<()> {
        // As deep as `np.array` accepts; deeper nesting is left to the usual error.
        if depth > 32 {
            return None;
        }
        let items: Vec<Value> = match v {
            Value::List(l) => l.borrow().clone(),
            Value::Tuple(t) => t.as_ref().clone(),
            Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                if depth != shape.len() {
                    return None;
                }
                out.push(v.clone());
                return Some(());
            }
            _ => return None,
        };
        if depth == shape.len() {
            if !out.is_empty() {
                return None;
            }
            shape.push(items.len());
        } else if shape.get(depth) != Some(&items.len()) {
            return None;
        }
        for item in &items {
            walk(item, depth + 1, shape, out)?;
        }
        Some(())
    }
    if !matches!(v, Value::List(_) | Value::Tuple(_)) {
        return Ok(None);
    }
    let (mut shape, mut flat) = (Vec::new(), Vec::new());
    if walk(v, 0, &mut shape, &mut flat).is_none() {
        return Ok(None);
    }
    let data = if flat.iter().all(|x| matches!(x, Value::Bool(_))) && !flat.is_empty() {
        runtime::HostData::Bool(
            flat.iter()
                .map(|x| matches!(x, Value::Bool(true)))
                .collect(),
        )
    } else if flat.iter().all(|x| as_i64(x).is_some()) {
        runtime::HostData::I64(flat.iter().filter_map(as_i64).collect())
    } else {
        runtime::HostData::F64(flat.iter().filter_map(as_f64).collect())
    };
    Ok(Some(it.state().rt.from_host(data, &shape, device)?))
}

/// `x[i0, i1, ...]` with one-dimensional integer index arrays of one length for the leading
/// axes (`y_hat[range(n), y]`): NumPy's paired (advanced) indexing, computed as one index into
/// x with those axes merged, so autograd sees a reshape and a gather. Returns the merged shape
/// and the flat index, or None when the index is not of that form.
#[allow(clippy::type_complexity)]
fn paired_index(
    it: &mut dyn Interpreter,
    x: &runtime::Array,
    items: &[runtime::IndexItem],
) -> Result<Option<(Vec<isize>, runtime::Array)>, Exc> {
    if items.len() < 2 || items.len() > x.ndim() {
        return Ok(None);
    }
    let mut arrays = Vec::with_capacity(items.len());
    for item in items {
        match item {
            runtime::IndexItem::Array(i) if i.dtype().is_int() && i.ndim() == 1 => arrays.push(i),
            _ => return Ok(None),
        }
    }
    let n = arrays[0].size();
    if arrays.iter().any(|i| i.size() != n) {
        let shapes: Vec<String> = arrays.iter().map(|i| format!("({},)", i.size())).collect();
        return Err(Exc::new(
            ExcKind::IndexError,
            format!(
                "shape mismatch: indexing arrays could not be broadcast together with shapes {}",
                shapes.join(" ")
            ),
        ));
    }
    let dims = &x.shape()[..arrays.len()];
    let mut flat = vec![0f64; n];
    for (axis, (idx, &dim)) in arrays.iter().zip(dims).enumerate() {
        let stride: usize = dims[axis + 1..].iter().product();
        for (slot, v) in flat.iter_mut().zip(idx.try_to_host()?.to_f64_vec()) {
            let i = v as i64;
            let j = if i < 0 { i + dim as i64 } else { i };
            if j < 0 || j >= dim as i64 {
                return Err(Exc::new(
                    ExcKind::IndexError,
                    format!("index {i} is out of bounds for axis {axis} with size {dim}"),
                ));
            }
            *slot += (j as usize * stride) as f64;
        }
    }
    let mut shape = vec![dims.iter().product::<usize>() as isize];
    shape.extend(x.shape()[arrays.len()..].iter().map(|&d| d as isize));
    let flat = it
        .state()
        .rt
        .from_f64(flat, &[n], runtime::DType::Int64, x.device())?;
    Ok(Some((shape, flat)))
}

/// `x[idx, :]`, `x[..., idx]`, `x[0, idx, 1:]`: one integer index array among basic items.
/// NumPy selects with the basic items (the array's axis kept whole), then gathers along that
/// axis and puts the index's dimensions where the axis was; composed here of a view, two
/// transposes and a gather, so autograd sees the same steps. None for any other index.
fn one_array_among_basic(
    it: &mut dyn Interpreter,
    x: &runtime::Array,
    items: &[runtime::IndexItem],
) -> Result<Option<runtime::Array>, Exc> {
    use runtime::IndexItem as I;
    let mut arrays = items
        .iter()
        .enumerate()
        .filter(|(_, i)| matches!(i, I::Array(_)));
    let (Some((at, I::Array(index))), None, true) = (arrays.next(), arrays.next(), items.len() > 1)
    else {
        return Ok(None);
    };
    if !index.dtype().is_int() {
        return Ok(None);
    }
    let consumed = items
        .iter()
        .filter(|i| matches!(i, I::Int(_) | I::Slice { .. } | I::Array(_)))
        .count();
    // The axis of the selected view that the index array gathers along.
    let axis: usize = items[..at]
        .iter()
        .map(|i| match i {
            I::Slice { .. } | I::NewAxis => 1,
            I::Ellipsis => x.ndim().saturating_sub(consumed),
            _ => 0,
        })
        .sum();
    let mut basic = items.to_vec();
    basic[at] = I::Slice {
        start: None,
        stop: None,
        step: None,
    };
    let index = index.clone();
    let tape = &mut it.state_mut().nn.tape;
    let view = tape.index(x, &basic)?;
    let n = view.ndim() as isize;
    let to_front: Vec<isize> = std::iter::once(axis as isize)
        .chain((0..n).filter(|&k| k != axis as isize))
        .collect();
    let front = tape.transpose(&view, Some(&to_front))?;
    let gathered = tape.index(&front, &[I::Array(index.clone())])?;
    if axis == 0 {
        return Ok(Some(gathered));
    }
    let k = index.ndim() as isize;
    let m = gathered.ndim() as isize;
    let back: Vec<isize> = (k..k + axis as isize)
        .chain(0..k)
        .chain(k + axis as isize..m)
        .collect();
    let out = tape.transpose(&gathered, Some(&back))?;
    // PyTorch records the whole selection as one op.
    tape.rename(&out, "IndexBackward0");
    Ok(Some(out))
}

/// A list of ints or a range used as an array index (`y_hat[range(n), y]`, `x[[0, 2]]`): the
/// int64 index array NumPy and PyTorch make of it; None for anything else.
fn int_sequence_index(
    it: &mut dyn Interpreter,
    v: &Value,
    device: runtime::Device,
) -> Result<Option<runtime::Array>, Exc> {
    let values: Vec<f64> = match v {
        Value::Range(start, stop, step) => {
            let n = super::value::range_len(*start, *stop, *step);
            (0..n).map(|k| (start + k * step) as f64).collect()
        }
        Value::List(l) => {
            let l = l.borrow();
            if l.is_empty() || !l.iter().all(|x| matches!(x, Value::Int(_))) {
                return Ok(None);
            }
            l.iter().filter_map(as_i64).map(|i| i as f64).collect()
        }
        _ => return Ok(None),
    };
    let n = values.len();
    Ok(Some(it.state().rt.from_f64(
        values,
        &[n],
        runtime::DType::Int64,
        device,
    )?))
}

fn array_index(
    it: &mut dyn Interpreter,
    idx: &Index,
    device: runtime::Device,
) -> Result<Vec<runtime::IndexItem>, Exc> {
    // NumPy indexes with (nested) lists as with arrays (`x[[0, 2]]`, `x[[True, False]]`).
    if let Index::Single(IndexItem::Value(v @ Value::List(_))) = idx {
        if let Some(arr) = list_array(it, v, device)? {
            return Ok(vec![runtime::IndexItem::Array(arr)]);
        }
    }
    let items: Vec<IndexItem> = match idx {
        Index::Single(IndexItem::Value(Value::Tuple(t))) => {
            t.iter().cloned().map(IndexItem::Value).collect()
        }
        Index::Single(i) => vec![i.clone()],
        Index::Multi(v) => v.clone(),
    };
    let several = items.len() > 1;
    items
        .into_iter()
        .map(|i| {
            // Beside other items a 0-d integer array is an integer, as in NumPy and PyTorch
            // (`boxes[i, :]` with `i = order[0]`); alone it stays an array index.
            if let IndexItem::Value(Value::Array(a)) = &i {
                if several && a.array.ndim() == 0 && a.array.dtype().is_int() {
                    if let runtime::Scalar::Int(k) = a.array.to_scalar("index")? {
                        return Ok(runtime::IndexItem::Int(k));
                    }
                }
            }
            if let IndexItem::Value(v @ (Value::List(_) | Value::Range(..))) = &i {
                if let Some(arr) = int_sequence_index(it, v, device)? {
                    return Ok(runtime::IndexItem::Array(arr));
                }
            }
            Ok(match i {
                IndexItem::Ellipsis => runtime::IndexItem::Ellipsis,
                IndexItem::Slice(a, b, c) => {
                    let get = |v: Option<Value>| -> Result<Option<i64>, Exc> {
                        match &v {
                            None | Some(Value::None) => Ok(None),
                            Some(x) => as_i64(x).map(Some).ok_or_else(|| {
                                Exc::type_error(format!(
                                    "slice indices must be integers or None, not {}",
                                    x.type_name()
                                ))
                            }),
                        }
                    };
                    runtime::IndexItem::Slice {
                        start: get(a)?,
                        stop: get(b)?,
                        step: get(c)?,
                    }
                }
                IndexItem::Value(Value::None) => runtime::IndexItem::NewAxis,
                IndexItem::Value(Value::Str(ref s)) if &**s == "..." => runtime::IndexItem::Ellipsis,
                // MXNet takes float index arrays (np.array(list_of_ints) is float32 there) and
                // truncates them to integers; PyTorch and NumPy refuse them.
                IndexItem::Value(Value::Array(ref a))
                    if matches!(a.flavor, Flavor::Np | Flavor::Nd) && a.array.dtype().is_float() =>
                {
                    runtime::IndexItem::Array(a.array.astype(runtime::DType::Int64)?)
                }
                IndexItem::Value(Value::Array(ref a)) => runtime::IndexItem::Array(a.array.clone()),
                IndexItem::Value(v) => match v {
                    Value::Int(i) => runtime::IndexItem::Int(i),
                    Value::Bool(b) => runtime::IndexItem::Int(b as i64),
                    other => {
                        return Err(Exc::new(
                            ExcKind::IndexError,
                            format!(
                                "only integers, slices (`:`), ellipsis (`...`), None and arrays are valid array indices, not {}",
                                other.type_name()
                            ),
                        ))
                    }
                },
            })
        })
        .collect()
}

pub fn set_item(
    it: &mut dyn Interpreter,
    obj: &Value,
    idx: Index,
    value: Value,
) -> Result<(), Exc> {
    let idx = unwrap_slices(idx);
    if let Value::Instance(_) = obj {
        if !matches!(obj, Value::Instance(i) if i.class().defines("__setitem__")) {
            if let Some(base) = class::base_value(obj) {
                return set_item(it, &base, idx, value);
            }
        }
        let key = index_value(&idx);
        return match class::call_special(it, obj, "__setitem__", vec![key, value])? {
            Some(_) => Ok(()),
            None => Err(Exc::type_error(format!(
                "'{}' object does not support item assignment",
                obj.type_name()
            ))),
        };
    }
    if let Value::Object(o) = obj {
        if let Some(f) = o.get_attr(o, "__setitem__") {
            it.call_value(
                &f,
                super::value::Args::positional(vec![index_value(&idx), value]),
            )?;
            return Ok(());
        }
    }
    match obj {
        Value::Array(a) => {
            if a.flavor == Flavor::Torch && it.state().nn.tape.guards_leaf(&a.array) {
                return Err(super::error::inplace_exc(
                    crate::nn::autograd::InplaceError::Leaf,
                ));
            }
            let items = array_index(it, &idx, a.array.device())?;
            int_fits(&value, a.array.dtype())?;
            if a.flavor == Flavor::Numpy {
                // NumPy assigns lists as arrays: `x[:, 2] = [1, 2]`.
                if let Some(arr) = list_array(it, &value, a.array.device())? {
                    a.array.set_index(&items, Operand::Array(&arr))?;
                    return Ok(());
                }
            }
            let op = operand(&value).ok_or_else(|| {
                Exc::type_error(format!(
                    "cannot assign a {} into an array; use a number or an array",
                    value.type_name()
                ))
            })?;
            a.array.set_index(&items, op)?;
            Ok(())
        }
        Value::List(l) => match idx {
            Index::Single(IndexItem::Value(v)) => {
                let len = l.borrow().len();
                let i = seq_index(len, &v, "list assignment")?;
                l.borrow_mut()[i] = value;
                Ok(())
            }
            Index::Single(IndexItem::Slice(a, b, c)) => {
                let new = it.iterate(&value)?;
                let len = l.borrow().len();
                let (start, stop, step) = slice_indices(len as i64, &a, &b, &c)?;
                if step != 1 {
                    let pos = slice_positions(len, &(a, b, c))?;
                    if pos.len() != new.len() {
                        return Err(Exc::value_error(format!(
                            "attempt to assign sequence of size {} to extended slice of size {}",
                            new.len(),
                            pos.len()
                        )));
                    }
                    let mut list = l.borrow_mut();
                    for (p, v) in pos.into_iter().zip(new) {
                        list[p] = v;
                    }
                } else {
                    let stop = stop.max(start) as usize;
                    l.borrow_mut().splice(start as usize..stop, new);
                }
                Ok(())
            }
            _ => Err(Exc::type_error(
                "list indices must be integers or slices, not tuple",
            )),
        },
        Value::Dict(d) => {
            let Index::Single(IndexItem::Value(k)) = idx else {
                return Err(Exc::type_error("unhashable type: 'slice'"));
            };
            let hk = super::keys::dict_key(it, d, &k)?;
            d.borrow_mut().insert(hk, k, value);
            Ok(())
        }
        _ => Err(Exc::type_error(format!(
            "'{}' object does not support item assignment",
            obj.type_name()
        ))),
    }
}

pub fn del_item(it: &mut dyn Interpreter, obj: &Value, idx: Index) -> Result<(), Exc> {
    let idx = unwrap_slices(idx);
    if let Value::Instance(_) = obj {
        if !matches!(obj, Value::Instance(i) if i.class().defines("__delitem__")) {
            if let Some(base) = class::base_value(obj) {
                return del_item(it, &base, idx);
            }
        }
        let key = index_value(&idx);
        return match class::call_special(it, obj, "__delitem__", vec![key])? {
            Some(_) => Ok(()),
            None => Err(Exc::type_error(format!(
                "'{}' object does not support item deletion",
                obj.type_name()
            ))),
        };
    }
    if let Value::Object(o) = obj {
        if let Some(f) = o.get_attr(o, "__delitem__") {
            let key = index_value(&idx);
            it.call_value(&f, super::value::Args::positional(vec![key]))?;
            return Ok(());
        }
    }
    match (obj, idx) {
        (Value::List(l), Index::Single(IndexItem::Value(v))) => {
            let len = l.borrow().len();
            let i = seq_index(len, &v, "list assignment")?;
            l.borrow_mut().remove(i);
            Ok(())
        }
        // `del a[i:j]`, `del a[::2]`: the positions the slice names go.
        (Value::List(l), Index::Single(IndexItem::Slice(a, b, c))) => {
            let len = l.borrow().len();
            let mut gone = slice_positions(len, &(a, b, c))?;
            gone.sort_unstable();
            let mut list = l.borrow_mut();
            let mut k = 0;
            let mut position = 0;
            list.retain(|_| {
                let keep = gone.get(k) != Some(&position);
                if !keep {
                    k += 1;
                }
                position += 1;
                keep
            });
            Ok(())
        }
        (Value::Dict(d), Index::Single(IndexItem::Value(k))) => {
            let hk = super::keys::dict_key(it, d, &k)?;
            let removed = d.borrow_mut().remove(&hk);
            match removed {
                Some(_) => Ok(()),
                None => Err(Exc::key_error(it, &k)),
            }
        }
        _ => Err(Exc::type_error(format!(
            "'{}' object does not support item deletion",
            obj.type_name()
        ))),
    }
}

/// A fresh dict value.
/// `into.update(entries)`: each key finds an equal one already there (`object::keys`).
fn merge_entries(
    it: &mut dyn Interpreter,
    into: &RefCell<super::value::Dict>,
    entries: Vec<(Value, Value)>,
) -> Result<(), Exc> {
    for (k, v) in entries {
        let hk = super::keys::dict_key(it, into, &k)?;
        into.borrow_mut().insert(hk, k, v);
    }
    Ok(())
}

pub fn new_dict() -> Value {
    Value::Dict(Rc::new(RefCell::new(super::value::Dict::default())))
}
