//! The methods of `int` that work at any size, a big int's included (`bit_length`,
//! `bit_count`, `to_bytes`, `int.from_bytes`, the number protocol's attributes), with
//! CPython 3.11's defaults and errors.

use std::borrow::Cow;

use num_bigint::BigInt;

use crate::modules::python::bytes;
use crate::object::bigint;
use crate::object::error::{Exc, ExcKind};
use crate::object::value::{Args, Value};
use crate::object::{method, Interpreter};

/// The int a receiver holds (an `int`, a `bool`, a big int).
fn receiver(r: &Value) -> Result<Cow<'_, BigInt>, Exc> {
    bigint::as_big(r).ok_or_else(|| {
        Exc::type_error(format!(
            "descriptor requires an 'int' object but received a '{}'",
            r.type_name()
        ))
    })
}

/// An attribute of an int (any size); None for names ints do not have.
pub fn attr(v: &Value, name: &str) -> Option<Value> {
    Some(match name {
        "real" | "numerator" => match v {
            Value::Bool(b) => Value::Int(*b as i64),
            other => other.clone(),
        },
        "imag" => Value::Int(0),
        "denominator" => Value::Int(1),
        "bit_length" => method(
            v,
            "bit_length",
            "x.bit_length(): the number of bits needed to write abs(x) in binary.",
            |_, r, a| {
                a.finish(0)?;
                Ok(Value::Int(bigint::bit_length(&*receiver(r)?) as i64))
            },
        ),
        "bit_count" => method(
            v,
            "bit_count",
            "x.bit_count(): the number of ones in the binary form of abs(x).",
            |_, r, a| {
                a.finish(0)?;
                Ok(Value::Int(bigint::bit_count(&*receiver(r)?) as i64))
            },
        ),
        "to_bytes" => method(
            v,
            "to_bytes",
            "x.to_bytes(length=1, byteorder='big', *, signed=False): x as bytes.",
            to_bytes,
        ),
        "conjugate" | "__index__" | "__int__" => {
            method(v, "conjugate", "x.conjugate(): x.", |_, r, a| {
                a.finish(0)?;
                Ok(match r {
                    Value::Bool(b) => Value::Int(*b as i64),
                    other => other.clone(),
                })
            })
        }
        "as_integer_ratio" => method(
            v,
            "as_integer_ratio",
            "x.as_integer_ratio(): (x, 1).",
            |_, r, a| {
                a.finish(0)?;
                Ok(Value::tuple(vec![r.clone(), Value::Int(1)]))
            },
        ),
        _ => return None,
    })
}

/// `byteorder` as "little" (true) or "big" (false), with CPython's errors.
fn byte_order(v: Option<Value>) -> Result<bool, Exc> {
    match &v {
        None => Ok(false),
        Some(Value::Str(s)) => match &**s {
            "little" => Ok(true),
            "big" => Ok(false),
            _ => Err(Exc::value_error(
                "byteorder must be either 'little' or 'big'",
            )),
        },
        Some(other) => Err(Exc::type_error(format!(
            "to_bytes() argument 'byteorder' must be str, not {}",
            other.type_name()
        ))),
    }
}

fn to_bytes(_: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    a.fname = "to_bytes";
    let length = a.take(0, "length")?;
    let order = a.take(1, "byteorder")?;
    let signed = match a.take_kw("signed") {
        Some(v) => v.truthy()?,
        None => false,
    };
    a.finish(2)?;
    let length = match length {
        None => 1,
        Some(v) => crate::object::ops::as_i64(&v).ok_or_else(|| {
            Exc::type_error(format!(
                "'{}' object cannot be interpreted as an integer",
                v.type_name()
            ))
        })?,
    };
    let length = usize::try_from(length)
        .map_err(|_| Exc::value_error("length argument must be non-negative"))?;
    let little = byte_order(order)?;
    if length > 1 << 32 {
        return Err(crate::object::alloc::memory_error());
    }
    let out = bigint::to_bytes(&*receiver(r)?, length, little, signed)?;
    Ok(bytes::Bytes::value(out))
}

/// `int.from_bytes(bytes, byteorder='big', *, signed=False)`.
pub fn from_bytes_fn() -> Value {
    method(
        &Value::Type(crate::object::value::TypeKind::Int),
        "from_bytes",
        "int.from_bytes(bytes, byteorder='big', *, signed=False): the int the bytes encode.",
        |it, _, mut a| {
            a.fname = "from_bytes";
            let data = a.required(0, "bytes")?;
            let order = a.take(1, "byteorder")?;
            let signed = match a.take_kw("signed") {
                Some(v) => v.truthy()?,
                None => false,
            };
            a.finish(2)?;
            let little = byte_order(order)?;
            let raw: Vec<u8> = match bytes::of(&data) {
                Some(b) => b.to_vec(),
                None => match &data {
                    Value::Str(_) => {
                        return Err(Exc::type_error("cannot convert 'str' object to bytes"))
                    }
                    // An iterable of small ints, as `bytes(...)` reads it.
                    other => {
                        let mut out = Vec::new();
                        let mut bad = None;
                        it.for_each_item(other, &mut |_, x| {
                            match crate::object::ops::as_i64(&x).and_then(|i| u8::try_from(i).ok())
                            {
                                Some(b) => out.push(b),
                                None => {
                                    bad = Some(x);
                                    return Ok(false);
                                }
                            }
                            Ok(true)
                        })?;
                        if bad.is_some() {
                            return Err(Exc::new(
                                ExcKind::ValueError,
                                "bytes must be in range(0, 256)",
                            ));
                        }
                        out
                    }
                },
            };
            Ok(bigint::from_bytes(&raw, little, signed))
        },
    )
}
