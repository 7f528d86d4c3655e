//! NumPy's scalars, as NumPy 1.23 has them: what indexing a NumPy array, its reductions and
//! `np.float32(x)` give. One type serves every dtype the runtime has (`NpScalar`: a dtype and a
//! value), and one type object per dtype (`numpy.float32`...) plus NumPy's abstract classes
//! (`np.generic`, `np.number`, `np.integer`, `np.signedinteger`, `np.inexact`, `np.floating`)
//! for `type()` and `isinstance`.
//!
//! Arithmetic between scalars (and Python numbers, which count as float64, int64 and bool)
//! promotes the two dtypes, as NumPy 1.x does when every operand is a scalar
//! (`np.float32(0.2) * 2` is a float64); with an array, the scalar stands for its Python number
//! (`NativeObject::number`), which gives NumPy 1.x's value-based casting. Comparisons give
//! `numpy.bool_`. Where a Python number is expected (`float(x)`, `range(x)`, an index, a format
//! spec) the scalar is its Python number; `str`/`repr` show the shortest digits of its own
//! precision (`0.1` for a float32), and `format(x, '')` the Python number's, as NumPy's do.
//! The complex types and longdouble are absent, as the runtime has no such dtype. NumPy's
//! RuntimeWarnings for division by zero and overflow are not printed.

use std::rc::Rc;

use crate::lang::ast::{BinOp, CmpOp, UnaryOp};
use crate::object::error::{Exc, ExcKind};
use crate::object::value::{Args, Flavor, NativeObject, Value};
use crate::object::{method, Interpreter};
use crate::runtime::{Array, DType, Scalar};

/// The runtime's dtypes, each with a NumPy scalar type.
pub const DTYPES: [DType; 13] = DType::ALL;

/// A NumPy scalar: a value of one dtype (a float32 is held as the f64 it equals exactly).
pub struct NpScalar {
    pub dtype: DType,
    pub value: Scalar,
}

/// `value` converted to `dtype` as NumPy casts (floats truncate to ints, ints wrap).
fn cast(dtype: DType, value: Scalar) -> Scalar {
    let f = value.as_f64();
    match dtype {
        DType::Float32 => Scalar::Float(f as f32 as f64),
        DType::Float64 => Scalar::Float(f),
        DType::Float16 => Scalar::Float(crate::runtime::f16::from_f64(f).to_f64()),
        DType::Bool => Scalar::Bool(match value {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }),
        int => {
            let i = match value {
                Scalar::Int(i) => i,
                Scalar::Bool(b) => b as i64,
                Scalar::Float(f) => f as i64,
            };
            // Wrapped to the type's width: the host's own conversion of the int64 bits.
            let wrapped = crate::runtime::HostData::from_le_bytes(&i.to_le_bytes(), DType::Int64);
            let narrowed = match int {
                DType::Int64 => wrapped,
                _ => crate::runtime::HostData::from_le_bytes(
                    &i.to_le_bytes()[..int.size_bytes()],
                    int,
                ),
            };
            narrowed.scalar_at(0).unwrap_or(Scalar::Int(0))
        }
    }
}

/// A NumPy scalar of `dtype` holding `value` (cast to it).
pub fn scalar(dtype: DType, value: Scalar) -> Value {
    Value::Object(Rc::new(NpScalar {
        dtype,
        value: cast(dtype, value),
    }))
}

/// NumPy's scalar of a one-element array (`object::ops::NUMPY_SCALAR`).
pub fn from_array(a: &Array) -> Result<Value, Exc> {
    Ok(scalar(a.dtype(), a.to_scalar("item")?))
}

/// The NumPy scalar `v` is, if it is one.
pub fn as_np_scalar(v: &Value) -> Option<&NpScalar> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<NpScalar>(),
        _ => None,
    }
}

/// The dtype NumPy gives an array made of `data` when NumPy scalars are among its items: the
/// promotion of every item's dtype (a Python float counts as float64, an int as int64). None
/// without NumPy scalars, or for deeper nesting than a few levels (the usual rules then).
pub fn leaves_dtype(data: &Value) -> Option<DType> {
    fn walk(v: &Value, depth: usize, seen: &mut bool, d: &mut Option<DType>) -> bool {
        let here = match v {
            Value::List(l) => {
                let items = l.borrow().clone();
                return depth < 8 && items.iter().all(|x| walk(x, depth + 1, seen, d));
            }
            Value::Tuple(t) => return depth < 8 && t.iter().all(|x| walk(x, depth + 1, seen, d)),
            Value::Array(a) => a.array.dtype(),
            other => match operand(other) {
                Some((dt, _)) => {
                    *seen |= as_np_scalar(other).is_some();
                    dt
                }
                None => return false,
            },
        };
        *d = Some(d.map_or(here, |p| promote(p, here)));
        true
    }
    let (mut seen, mut d) = (false, None);
    (walk(data, 0, &mut seen, &mut d) && seen)
        .then_some(d)
        .flatten()
}

/// The dtype and value of an operand of scalar arithmetic: a NumPy scalar, or a Python number
/// as NumPy takes it (float64, int64, bool).
fn operand(v: &Value) -> Option<(DType, Scalar)> {
    match v {
        Value::Bool(b) => Some((DType::Bool, Scalar::Bool(*b))),
        Value::Int(i) => Some((DType::Int64, Scalar::Int(*i))),
        Value::Float(f) => Some((DType::Float64, Scalar::Float(*f))),
        other => as_np_scalar(other).map(|s| (s.dtype, s.value)),
    }
}

/// NumPy's promotion of two dtypes (`np.promote_types`) over the runtime's dtypes.
pub fn promote(a: DType, b: DType) -> DType {
    a.numpy_promote(b)
}

/// NumPy's module-qualified name of a dtype's scalar type (`bool_` for bool).
pub fn type_name(d: DType) -> &'static str {
    match d {
        DType::Float32 => "numpy.float32",
        DType::Float64 => "numpy.float64",
        DType::Int32 => "numpy.int32",
        DType::Int64 => "numpy.int64",
        DType::Bool => "numpy.bool_",
        DType::Float16 => "numpy.float16",
        DType::BFloat16 => "bfloat16",
        DType::Int8 => "numpy.int8",
        DType::Int16 => "numpy.int16",
        DType::UInt8 => "numpy.uint8",
        DType::UInt16 => "numpy.uint16",
        DType::UInt32 => "numpy.uint32",
        DType::UInt64 => "numpy.uint64",
    }
}

/// `float_repr` in the precision of `dtype` (float16, float32 or float64).
pub fn float_repr_of(x: f64, dtype: DType) -> String {
    if dtype != DType::Float16 || !x.is_finite() || x == 0.0 {
        return float_repr(x, dtype == DType::Float32);
    }
    // The shortest digits that give back the same half, laid out as NumPy lays out floats.
    let digits = (1..=5)
        .map(|sig| format!("{:.*e}", sig - 1, x))
        .find(|t| {
            t.parse::<f64>()
                .is_ok_and(|y| crate::runtime::f16::from_f64(y).to_f64() == x)
        })
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or(x);
    float_repr(digits, false)
}

/// The shortest digits that give back `x` in its own precision, laid out as NumPy 1.23's
/// scalar repr: positional from 1e-4 up to 1e16, else scientific with a two-digit exponent
/// (`1e-05`, `1e+20`). For float64 this is Python's float repr.
pub fn float_repr(x: f64, single: bool) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let ax = x.abs();
    let scientific = ax != 0.0 && !(1e-4..1e16).contains(&ax);
    let text = match (single, scientific) {
        (true, false) => format!("{}", x as f32),
        (true, true) => format!("{:e}", x as f32),
        (false, false) => format!("{x}"),
        (false, true) => format!("{x:e}"),
    };
    if !scientific {
        return if text.contains('.') {
            text
        } else {
            text + ".0"
        };
    }
    match text.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => text,
    }
}

impl NpScalar {
    /// The Python number this scalar stands for (`item()`).
    pub fn number(&self) -> Value {
        match self.value {
            Scalar::Bool(b) => Value::Bool(b),
            Scalar::Int(i) => Value::Int(i),
            Scalar::Float(f) => Value::Float(f),
        }
    }
}

/// `l op r` on two scalar operands in the promoted dtype; None where NumPy has no such
/// operation for these types (the caller's TypeError).
fn arith(
    op: BinOp,
    (ld, lv): (DType, Scalar),
    (rd, rv): (DType, Scalar),
) -> Option<Result<Value, Exc>> {
    let d = promote(ld, rd);
    if d == DType::Bool {
        let (a, b) = (lv.as_f64() != 0.0, rv.as_f64() != 0.0);
        let r = match op {
            BinOp::Add | BinOp::BitOr => a | b,
            BinOp::Mul | BinOp::BitAnd => a & b,
            BinOp::BitXor => a ^ b,
            BinOp::Sub => {
                return Some(Err(Exc::type_error(
                    "numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` operator, or the logical_xor function instead.",
                )))
            }
            BinOp::Div => return Some(Ok(scalar(DType::Float64, Scalar::Float(a as i64 as f64 / b as i64 as f64)))),
            _ => return arith(op, (DType::Int64, lv), (DType::Int64, rv)),
        };
        return Some(Ok(scalar(DType::Bool, Scalar::Bool(r))));
    }
    if d.is_float() || op == BinOp::Div {
        let d = if d.is_float() { d } else { DType::Float64 };
        let (a, b) = (lv.as_f64(), rv.as_f64());
        let r = match op {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => a / b,
            BinOp::Pow => a.powf(b),
            BinOp::FloorDiv if b == 0.0 => a / b,
            BinOp::Mod if b == 0.0 => f64::NAN,
            BinOp::FloorDiv => crate::object::ops::float_divmod(a, b).0,
            BinOp::Mod => crate::object::ops::float_divmod(a, b).1,
            _ => return None,
        };
        return Some(Ok(scalar(d, Scalar::Float(r))));
    }
    let int = |v: Scalar| match v {
        Scalar::Int(i) => i,
        Scalar::Bool(b) => b as i64,
        Scalar::Float(f) => f as i64,
    };
    let (a, b) = (int(lv), int(rv));
    let r = match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        // NumPy gives 0 (with a RuntimeWarning) for an integer division by zero.
        BinOp::FloorDiv | BinOp::Mod if b == 0 => 0,
        BinOp::FloorDiv => {
            let q = a.wrapping_div(b);
            if (a % b != 0) && ((a < 0) != (b < 0)) {
                q - 1
            } else {
                q
            }
        }
        BinOp::Mod => {
            let m = a.wrapping_rem(b);
            if m != 0 && ((m < 0) != (b < 0)) {
                m + b
            } else {
                m
            }
        }
        BinOp::Pow if b < 0 => {
            return Some(Err(Exc::value_error(
                "Integers to negative integer powers are not allowed.",
            )))
        }
        BinOp::Pow => a.wrapping_pow(b.min(u32::MAX as i64) as u32),
        BinOp::BitAnd => a & b,
        BinOp::BitOr => a | b,
        BinOp::BitXor => a ^ b,
        BinOp::LShift => {
            if (0..64).contains(&b) {
                a.wrapping_shl(b as u32)
            } else {
                0
            }
        }
        BinOp::RShift => {
            if (0..64).contains(&b) {
                a >> b
            } else if a < 0 {
                -1
            } else {
                0
            }
        }
        _ => return None,
    };
    Some(Ok(scalar(d, Scalar::Int(r))))
}

/// `l op r` for two scalar operands, as `numpy.bool_`.
fn compare_values(op: CmpOp, l: Scalar, r: Scalar) -> Option<bool> {
    let ints = |v: Scalar| match v {
        Scalar::Int(i) => Some(i),
        Scalar::Bool(b) => Some(b as i64),
        Scalar::Float(_) => None,
    };
    let ord = match (ints(l), ints(r)) {
        (Some(a), Some(b)) => a.partial_cmp(&b),
        _ => l.as_f64().partial_cmp(&r.as_f64()),
    };
    use std::cmp::Ordering::*;
    Some(match op {
        CmpOp::Eq => ord == Some(Equal),
        CmpOp::NotEq => ord != Some(Equal),
        CmpOp::Lt => ord == Some(Less),
        CmpOp::LtE => matches!(ord, Some(Less | Equal)),
        CmpOp::Gt => ord == Some(Greater),
        CmpOp::GtE => matches!(ord, Some(Greater | Equal)),
        _ => return None,
    })
}

fn this_scalar(r: &Value) -> Result<&NpScalar, Exc> {
    as_np_scalar(r).ok_or_else(|| Exc::type_error("not a NumPy scalar"))
}

fn item(_it: &mut dyn Interpreter, r: &Value, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(this_scalar(r)?.number())
}

fn astype(_it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let d = a.required(0, "dtype")?;
    a.finish(1)?;
    let s = this_scalar(r)?;
    let d = super::arrays::dtype_arg(&d)?.unwrap_or(DType::Float64);
    Ok(scalar(d, s.value))
}

fn abs_method(_it: &mut dyn Interpreter, r: &Value, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let s = this_scalar(r)?;
    Ok(match s.value {
        Scalar::Int(i) => scalar(s.dtype, Scalar::Int(i.wrapping_abs())),
        Scalar::Float(f) => scalar(s.dtype, Scalar::Float(f.abs())),
        Scalar::Bool(_) => r.clone(),
    })
}

/// `round(x)`: a Python int (ties to even); `round(x, n)`: a scalar of x's type, as NumPy's
/// `around` computes it (`x * 10**n` rounded to even, divided back, in x's precision:
/// `round(np.float64(2.675), 2)` is 2.68 where Python's float gives 2.67).
fn round_method(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let n = a.take(0, "ndigits")?;
    a.finish(1)?;
    let s = this_scalar(r)?;
    let number = s.number();
    let n = match n {
        None | Some(Value::None) => {
            return crate::modules::python::builtins::round_number(it, &number, None)
        }
        Some(n) => crate::object::ops::as_i64(&n).ok_or_else(|| {
            Exc::type_error(format!(
                "'{}' object cannot be interpreted as an integer",
                n.type_name()
            ))
        })?,
    };
    let Scalar::Float(x) = s.value else {
        if n >= 0 {
            return Ok(r.clone());
        }
        let p = 10i64
            .checked_pow(n.unsigned_abs().min(18) as u32)
            .unwrap_or(i64::MAX);
        let Scalar::Int(i) = s.value else {
            return Ok(r.clone());
        };
        let q = (i as f64 / p as f64).round_ties_even() as i64;
        return Ok(scalar(s.dtype, Scalar::Int(q.wrapping_mul(p))));
    };
    let y = if s.dtype == DType::Float32 {
        let p = 10f32.powi(n.unsigned_abs().min(64) as i32);
        let xf = x as f32;
        (if n >= 0 {
            (xf * p).round_ties_even() / p
        } else {
            (xf / p).round_ties_even() * p
        }) as f64
    } else {
        let p = 10f64.powi(n.unsigned_abs().min(400) as i32);
        if n >= 0 {
            (x * p).round_ties_even() / p
        } else {
            (x / p).round_ties_even() * p
        }
    };
    Ok(scalar(s.dtype, Scalar::Float(y)))
}

fn is_integer(_it: &mut dyn Interpreter, r: &Value, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let f = this_scalar(r)?.value.as_f64();
    Ok(Value::Bool(f.is_finite() && f.fract() == 0.0))
}

/// The ndarray methods NumPy's scalars have too (`np.mean(x).round(4)`, `s.sum()`): run on the
/// scalar as a 0-d array, a 0-d result given back as a scalar.
const ARRAY_METHODS: &[&str] = &[
    "round",
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "std",
    "var",
    "argmax",
    "argmin",
    "all",
    "any",
    "clip",
    "cumsum",
    "reshape",
    "flatten",
    "ravel",
    "squeeze",
    "copy",
    "transpose",
];

fn as_array_method(it: &mut dyn Interpreter, r: &Value, a: Args) -> Result<Value, Exc> {
    let s = this_scalar(r)?;
    let arr = it.state_mut().rt.from_host(
        match s.value {
            Scalar::Float(f) => crate::runtime::HostData::F64(vec![f]),
            Scalar::Int(i) => crate::runtime::HostData::I64(vec![i]),
            Scalar::Bool(b) => crate::runtime::HostData::Bool(vec![b]),
        },
        &[],
        crate::runtime::Device::cpu(0),
    )?;
    let arr = if arr.dtype() == s.dtype {
        arr
    } else {
        arr.astype(s.dtype)?
    };
    let receiver = crate::object::ops::wrap(arr, Flavor::Numpy);
    let m = super::arrays::get_attr(it, &receiver, a.fname)?.ok_or_else(|| {
        Exc::new(
            crate::object::error::ExcKind::AttributeError,
            format!(
                "'{}' object has no attribute '{}'",
                type_name(s.dtype),
                a.fname
            ),
        )
    })?;
    let out = it.call_value(&m, a)?;
    match &out {
        Value::Array(x) if x.array.ndim() == 0 => crate::object::ops::numpy_scalar(&x.array),
        _ => Ok(out),
    }
}

fn same(_it: &mut dyn Interpreter, r: &Value, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(r.clone())
}

const ATTRS: &[&str] = &[
    "T",
    "astype",
    "conjugate",
    "dtype",
    "imag",
    "item",
    "itemsize",
    "nbytes",
    "ndim",
    "real",
    "shape",
    "size",
    "tolist",
];

impl NativeObject for NpScalar {
    fn type_name(&self) -> &str {
        type_name(self.dtype)
    }
    fn repr(&self) -> String {
        match self.value {
            Scalar::Bool(b) => if b { "True" } else { "False" }.into(),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => float_repr_of(f, self.dtype),
        }
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let me = Value::Object(this.clone());
        Some(match name {
            "dtype" => Value::DType(self.dtype, Flavor::Numpy),
            "shape" => Value::tuple(Vec::new()),
            "ndim" => Value::Int(0),
            "size" => Value::Int(1),
            "itemsize" | "nbytes" => Value::Int(self.dtype.size_bytes() as i64),
            "real" | "T" => me,
            "imag" => scalar(self.dtype, Scalar::Int(0)),
            "item" | "tolist" => method(&me, "item", "the value as a Python number", item),
            "astype" => method(&me, "astype", "the value as another NumPy type", astype),
            "conjugate" => method(&me, "conjugate", "the value itself", same),
            "__abs__" => method(&me, "__abs__", "abs(self)", abs_method),
            "__round__" => method(&me, "__round__", "round(self, ndigits=None)", round_method),
            "is_integer" if self.dtype.is_float() => method(
                &me,
                "is_integer",
                "whether the value is a whole number",
                is_integer,
            ),
            "__class__" => type_value(Kind::Dtype(self.dtype)),
            _ => {
                let name = ARRAY_METHODS.iter().find(|n| **n == name)?;
                method(
                    &me,
                    name,
                    "the ndarray method, on the scalar as a 0-d array",
                    as_array_method,
                )
            }
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        ATTRS.to_vec()
    }
    fn equals(&self, other: &Value) -> Option<bool> {
        let (_, v) = operand(other)?;
        compare_values(CmpOp::Eq, self.value, v)
    }
    fn less(&self, other: &Value) -> Option<bool> {
        let (_, v) = operand(other)?;
        compare_values(CmpOp::Lt, self.value, v)
    }
    fn truth(&self) -> Option<bool> {
        Some(self.value.as_f64() != 0.0)
    }
    fn class_value(&self) -> Option<Value> {
        Some(type_value(Kind::Dtype(self.dtype)))
    }
    fn hash_key(&self) -> Option<crate::object::value::HashKey> {
        self.number().hash_key().ok().flatten()
    }
    fn number(&self) -> Option<Value> {
        Some(NpScalar::number(self))
    }
    fn binary(&self, op: BinOp, other: &Value, reflected: bool) -> Option<Result<Value, Exc>> {
        let o = operand(other)?;
        let me = (self.dtype, self.value);
        if reflected {
            arith(op, o, me)
        } else {
            arith(op, me, o)
        }
    }
    fn compare(&self, op: CmpOp, other: &Value, reflected: bool) -> Option<Result<Value, Exc>> {
        let (_, o) = operand(other)?;
        let (l, r) = if reflected {
            (o, self.value)
        } else {
            (self.value, o)
        };
        compare_values(op, l, r).map(|b| Ok(scalar(DType::Bool, Scalar::Bool(b))))
    }
    fn unary(&self, op: UnaryOp) -> Option<Result<Value, Exc>> {
        let v = match (op, self.value) {
            (UnaryOp::Pos, v) => v,
            (UnaryOp::Neg, Scalar::Int(i)) => Scalar::Int(i.wrapping_neg()),
            (UnaryOp::Neg, Scalar::Float(f)) => Scalar::Float(-f),
            (UnaryOp::Neg, Scalar::Bool(_)) => {
                return Some(Err(Exc::type_error(
                    "The numpy boolean negative, the `-` operator, is not supported, use the `~` operator or the logical_not function instead.",
                )))
            }
            (UnaryOp::Invert, Scalar::Int(i)) => Scalar::Int(!i),
            (UnaryOp::Invert, Scalar::Bool(b)) => Scalar::Bool(!b),
            (UnaryOp::Invert, Scalar::Float(_)) => {
                return Some(Err(Exc::type_error(
                    "ufunc 'invert' not supported for the input types, and the inputs could not be safely coerced to any supported types according to the casting rule ''safe''",
                )))
            }
            _ => return None,
        };
        Some(Ok(scalar(self.dtype, v)))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

// ------------------------------------------------------------------ the types

/// A NumPy scalar type: one per dtype, or one of NumPy's abstract classes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Dtype(DType),
    Generic,
    Number,
    Integer,
    SignedInteger,
    UnsignedInteger,
    Inexact,
    Floating,
    /// A NumPy type whose dtype the runtime lacks (`np.uint8`): it prints, and says so when
    /// used.
    Missing(&'static str),
}

/// NumPy's types of dtypes the runtime has no arrays of.
pub const MISSING: [&str; 3] = ["complex64", "complex128", "longdouble"];

/// The error for using a type of [`MISSING`] (as a dtype or by calling it).
pub fn missing_error(name: &str) -> Exc {
    Exc::type_error(format!(
        "devarray has no {name} arrays or scalars: its dtypes are bool, int8/16/32/64, uint8/16/32/64 and float16/32/64 (use one of those, e.g. np.float32 or np.int64)"
    ))
}

pub const ABSTRACT: [(&str, Kind); 7] = [
    ("generic", Kind::Generic),
    ("number", Kind::Number),
    ("integer", Kind::Integer),
    ("signedinteger", Kind::SignedInteger),
    ("unsignedinteger", Kind::UnsignedInteger),
    ("inexact", Kind::Inexact),
    ("floating", Kind::Floating),
];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Dtype(d) => &type_name(d)["numpy.".len()..],
            Kind::Missing(name) => name,
            other => ABSTRACT
                .iter()
                .find(|(_, k)| *k == other)
                .map_or("generic", |(n, _)| n),
        }
    }
    /// The type and its NumPy bases, nearest first (`float64` is also Python's `float`).
    fn mro(self) -> Vec<Kind> {
        use Kind::*;
        let above = |k: Kind| -> Vec<Kind> {
            match k {
                Floating => vec![Floating, Inexact, Number, Generic],
                SignedInteger => vec![SignedInteger, Integer, Number, Generic],
                UnsignedInteger => vec![UnsignedInteger, Integer, Number, Generic],
                Integer => vec![Integer, Number, Generic],
                Inexact => vec![Inexact, Number, Generic],
                Number => vec![Number, Generic],
                _ => vec![Generic],
            }
        };
        match self {
            Dtype(d) if d.is_float() => [vec![self], above(Floating)].concat(),
            Dtype(DType::Bool) => vec![self, Generic],
            Dtype(d) if d.is_unsigned() => [vec![self], above(UnsignedInteger)].concat(),
            Dtype(_) => [vec![self], above(SignedInteger)].concat(),
            Missing(_) => vec![self, Generic],
            other => above(other),
        }
    }
}

/// `np.float32`, `np.floating`...: NumPy's scalar types. A concrete one prints as a class,
/// compares equal to its dtype, converts when called (`np.float32(0.1)`), and serves as a
/// `dtype=` argument.
pub struct ScalarType {
    pub kind: Kind,
}

thread_local! {
    /// One object per type, so `type(x) is np.float32` holds.
    static TYPES: std::cell::RefCell<Vec<(Kind, Value)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The type object of `kind` (one per thread).
pub fn type_value(kind: Kind) -> Value {
    TYPES.with(|t| {
        let mut t = t.borrow_mut();
        if let Some((_, v)) = t.iter().find(|(k, _)| *k == kind) {
            return v.clone();
        }
        let v = Value::Object(Rc::new(ScalarType { kind }));
        t.push((kind, v.clone()));
        v
    })
}

/// `np.dtype(...).type`: the scalar type of a dtype.
pub fn dtype_type(d: DType) -> Value {
    type_value(Kind::Dtype(d))
}

/// Whether `v` is an instance of the NumPy type `t` (`isinstance(x, np.floating)`); None
/// when `t` is not one.
pub fn instance_of(v: &Value, t: &Value) -> Option<bool> {
    let Value::Object(o) = t else { return None };
    let ty = o.as_any().downcast_ref::<ScalarType>()?;
    Some(as_np_scalar(v).is_some_and(|s| Kind::Dtype(s.dtype).mro().contains(&ty.kind)))
}

/// Whether NumPy's `float64` counts as Python's `float` here (`isinstance(np.float64(1),
/// float)` is True: NumPy's float64 subclasses it).
pub fn is_python_float(v: &Value) -> bool {
    as_np_scalar(v).is_some_and(|s| s.dtype == DType::Float64)
}

impl NativeObject for ScalarType {
    fn type_name(&self) -> &str {
        "type"
    }
    fn repr(&self) -> String {
        format!("<class 'numpy.{}'>", self.kind.name())
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let me = Value::Object(this.clone());
        match (name, self.kind) {
            ("__name__", k) => Some(Value::str(k.name())),
            ("__module__", _) => Some(Value::str("numpy")),
            ("__mro__", k) => {
                let mut items: Vec<Value> = k.mro().into_iter().map(type_value).collect();
                if k == Kind::Dtype(DType::Float64) {
                    items.push(Value::Type(crate::object::value::TypeKind::Float));
                }
                items.push(Value::Type(crate::object::value::TypeKind::Object));
                Some(Value::tuple(items))
            }
            ("__dtype__", Kind::Dtype(d)) => Some(Value::DType(d, Flavor::Numpy)),
            ("__missing_dtype__", Kind::Missing(name)) => Some(Value::str(name)),
            ("__call__", _) => Some(method(
                &me,
                "__call__",
                "convert a value to this NumPy type",
                scalar_call,
            )),
            _ => None,
        }
    }
    fn equals(&self, other: &Value) -> Option<bool> {
        let Kind::Dtype(d) = self.kind else {
            return Some(
                matches!(other, Value::Object(o) if o.as_any().downcast_ref::<ScalarType>().is_some_and(|s| s.kind == self.kind)),
            );
        };
        Some(match other {
            Value::DType(x, _) => *x == d,
            Value::Object(o) => o
                .as_any()
                .downcast_ref::<ScalarType>()
                .is_some_and(|s| s.kind == self.kind),
            Value::Str(s) => DType::from_name(s) == Some(d),
            _ => false,
        })
    }
    fn hash_key(&self) -> Option<crate::object::value::HashKey> {
        None
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `np.float32(x)`: `x` (a number, a numeric string, a scalar, a 0-d array) as a scalar of the
/// type; an array of more dimensions becomes an array of that dtype, as NumPy's types do.
fn scalar_call(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let Value::Object(o) = r else {
        return Err(Exc::type_error("not a NumPy type"));
    };
    let Some(ty) = o.as_any().downcast_ref::<ScalarType>() else {
        return Err(Exc::type_error("not a NumPy type"));
    };
    if let Kind::Missing(name) = ty.kind {
        return Err(missing_error(name));
    }
    let Kind::Dtype(d) = ty.kind else {
        return Err(Exc::type_error(format!(
            "cannot create '{}' instances",
            &ty.repr()["<class '".len()..ty.repr().len() - 2]
        )));
    };
    let x = a.take(0, "x")?.unwrap_or(Value::Int(0));
    a.finish(1)?;
    let value = match &x {
        Value::Array(v) if v.array.ndim() > 0 => {
            return Ok(crate::object::ops::wrap(v.array.astype(d)?, Flavor::Numpy))
        }
        Value::Array(v) => v.array.to_scalar("item")?,
        Value::Str(s) => {
            let t = s.trim().to_ascii_lowercase();
            if d.is_int() {
                Scalar::Int(t.parse().map_err(|_| {
                    Exc::value_error(format!(
                        "invalid literal for int() with base 10: {}",
                        crate::object::format::repr(it, &x).unwrap_or_default()
                    ))
                })?)
            } else if d == DType::Bool {
                Scalar::Bool(!s.is_empty())
            } else {
                Scalar::Float(crate::modules::python::builtins::to_float(&x)?)
            }
        }
        other => match operand(other) {
            Some((_, v)) => v,
            None => {
                return Err(Exc::type_error(format!(
                    "{}() argument must be a string or a number, not '{}'",
                    &type_name(d)["numpy.".len()..],
                    other.type_name()
                )))
            }
        },
    };
    if d.is_int() {
        if let Scalar::Float(f) = value {
            if !f.is_finite() {
                return Err(Exc::new(
                    if f.is_nan() {
                        ExcKind::ValueError
                    } else {
                        ExcKind::OverflowError
                    },
                    format!(
                        "cannot convert float {} to integer",
                        crate::object::format::float_repr(f)
                    ),
                ));
            }
        }
    }
    Ok(scalar(d, value))
}

/// `np.isscalar(x)`: NumPy's scalars and Python's numbers, strings and bytes.
pub fn isscalar(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "element")?;
    a.finish(1)?;
    Ok(Value::Bool(
        matches!(
            x,
            Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_)
        ) || as_np_scalar(&x).is_some()
            || matches!(&x, Value::Object(o) if o.type_name() == "bytes"),
    ))
}

/// The scalar types and abstract classes, bound in `numpy`.
pub fn install(m: &crate::object::value::Module) {
    for d in DTYPES {
        m.set(&type_name(d)["numpy.".len()..], dtype_type(d));
    }
    for (alias, d) in [
        ("float_", DType::Float64),
        ("double", DType::Float64),
        ("single", DType::Float32),
        ("int_", DType::Int64),
        ("intc", DType::Int32),
        ("longlong", DType::Int64),
        ("bool8", DType::Bool),
        ("half", DType::Float16),
        ("byte", DType::Int8),
        ("short", DType::Int16),
        ("ubyte", DType::UInt8),
        ("ushort", DType::UInt16),
        ("uintc", DType::UInt32),
        ("uint", DType::UInt64),
        ("ulonglong", DType::UInt64),
    ] {
        m.set(alias, dtype_type(d));
    }
    for (name, kind) in ABSTRACT {
        m.set(name, type_value(kind));
    }
    for name in MISSING {
        m.set(name, type_value(Kind::Missing(name)));
    }
    m.set("True_", scalar(DType::Bool, Scalar::Bool(true)));
    m.set("False_", scalar(DType::Bool, Scalar::Bool(false)));
    m.set(
        "isscalar",
        crate::object::builtin(
            "isscalar",
            "isscalar(element): whether element is a scalar (a NumPy scalar, a number, a str).",
            isscalar,
        ),
    );
}
