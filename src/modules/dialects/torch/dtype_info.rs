//! What PyTorch tells about its dtypes: `torch.finfo`/`torch.iinfo` (PyTorch 2.x's reprs, C++
//! stream digits: six significant), `torch.promote_types`, `torch.get_default_dtype`, and the
//! tensor methods
//! `is_floating_point`, `element_size`, `is_signed`.
use std::rc::Rc;

use super::tensor_args::{install_forms, TensorMethod};
use crate::object::error::Exc;
use crate::object::value::{Args, Flavor, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::DType;

/// `x.name`'s documentation and code, or None when this file has no such method.
pub fn tensor_method(name: &str) -> Option<TensorMethod> {
    let (mname, doc, f): TensorMethod = match name {
        "is_floating_point" => (
            "is_floating_point",
            "x.is_floating_point(): whether x's dtype is a float type.",
            |_, r, a| {
                a.finish(0)?;
                Ok(Value::Bool(dtype_of_tensor(r)?.is_float()))
            },
        ),
        "element_size" => (
            "element_size",
            "x.element_size(): the bytes of one element.",
            |_, r, a| {
                a.finish(0)?;
                Ok(Value::Int(dtype_of_tensor(r)?.size_bytes() as i64))
            },
        ),
        "is_signed" => (
            "is_signed",
            "x.is_signed(): whether x's dtype holds negative numbers.",
            |_, r, a| {
                a.finish(0)?;
                let d = dtype_of_tensor(r)?;
                Ok(Value::Bool(d != DType::Bool && !d.is_unsigned()))
            },
        ),
        _ => return None,
    };
    Some((mname, doc, f))
}

fn dtype_of_tensor(r: &Value) -> Result<DType, Exc> {
    r.as_array()
        .map(|x| x.array.dtype())
        .ok_or_else(|| Exc::type_error("expected a Tensor"))
}

/// A bound tensor method of this file, or None.
pub fn tensor_attr(v: &Value, name: &str) -> Option<Value> {
    super::tensor_args::bound_method(tensor_method, v, name)
}

/// Adds `torch.finfo`, `torch.iinfo`, `torch.get_default_dtype`, `torch.promote_types` and
/// `torch.is_floating_point`.
pub fn install(m: &Module) {
    install_forms(m, &["is_floating_point"], tensor_method, |it, a| {
        super::tensor_args::function_form(it, a, tensor_method)
    });
    m.set("finfo", builtin("finfo", "finfo(type=torch.float32): the limits of a float dtype (bits, eps, max, min, tiny, resolution).", finfo));
    m.set(
        "iinfo",
        builtin(
            "iinfo",
            "iinfo(type): the limits of an integer dtype (bits, max, min).",
            iinfo,
        ),
    );
    // Factories here always default to float32 (there is no `set_default_dtype`).
    m.set(
        "get_default_dtype",
        builtin(
            "get_default_dtype",
            "get_default_dtype(): the dtype float tensors are made in (torch.float32).",
            |_, a| {
                let given = a.pos.len() + a.kw.len();
                if given > 0 {
                    return Err(Exc::type_error(format!(
                        "torch.get_default_dtype() takes no arguments ({given} given)"
                    )));
                }
                Ok(Value::DType(DType::Float32, Flavor::Torch))
            },
        ),
    );
    m.set(
        "promote_types",
        builtin(
            "promote_types",
            "promote_types(type1, type2): the dtype both promote to.",
            promote_types,
        ),
    );
}

/// The dtype argument `fname` takes at position 0 (`type1`...), with PyTorch's error.
fn dtype_arg(fname: &str, param: &str, pos: usize, v: &Value) -> Result<DType, Exc> {
    match v {
        Value::DType(d, _) => Ok(*d),
        other => Err(Exc::type_error(format!(
            "{fname}(): argument '{param}' (position {}) must be torch.dtype, not {}",
            pos + 1,
            other.type_name()
        ))),
    }
}

/// A number as C++'s default stream writes it (`%g`: six significant digits).
fn stream_digits(x: f64) -> String {
    crate::display::pyfmt::percent_format("%g", &[crate::display::pyfmt::FmtValue::Float(x)])
        .unwrap_or_else(|_| x.to_string())
}

/// A float dtype's limits: (bits, eps, max, tiny, resolution).
fn float_limits(d: DType) -> Option<(i64, f64, f64, f64, f64)> {
    Some(match d {
        DType::Float16 => (16, 2f64.powi(-10), 65504.0, 2f64.powi(-14), 1e-3),
        DType::BFloat16 => (
            16,
            2f64.powi(-7),
            crate::runtime::bf16::MAX.to_f64(),
            2f64.powi(-126),
            1e-2,
        ),
        DType::Float32 => (
            32,
            f64::from(f32::EPSILON),
            f64::from(f32::MAX),
            f64::from(f32::MIN_POSITIVE),
            1e-6,
        ),
        DType::Float64 => (64, f64::EPSILON, f64::MAX, f64::MIN_POSITIVE, 1e-15),
        _ => return None,
    })
}

/// An integer dtype's limits: (bits, min, max), as Python ints.
fn int_limits(d: DType) -> Option<(i64, Value, Value)> {
    let int = Value::Int;
    Some(match d {
        DType::Int8 => (8, int(i8::MIN.into()), int(i8::MAX.into())),
        DType::Int16 => (16, int(i16::MIN.into()), int(i16::MAX.into())),
        DType::Int32 => (32, int(i32::MIN.into()), int(i32::MAX.into())),
        DType::Int64 => (64, int(i64::MIN), int(i64::MAX)),
        DType::UInt8 => (8, int(0), int(u8::MAX.into())),
        DType::UInt16 => (16, int(0), int(u16::MAX.into())),
        DType::UInt32 => (32, int(0), int(u32::MAX.into())),
        DType::UInt64 => (
            64,
            int(0),
            crate::object::bigint::int_value(num_bigint::BigInt::from(u64::MAX)),
        ),
        _ => return None,
    })
}

fn finfo(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let dtype = match a.take(0, "type")? {
        Some(v) => dtype_arg("finfo", "type", 0, &v)?,
        // The default dtype is always float32 here (there is no `set_default_dtype`).
        None => DType::Float32,
    };
    a.finish(1)?;
    if float_limits(dtype).is_none() {
        return Err(Exc::type_error(
            "torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.finfo'",
        ));
    }
    Ok(Value::Object(Rc::new(TypeInfo { dtype })))
}

fn iinfo(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "type")?;
    a.finish(1)?;
    let dtype = dtype_arg("iinfo", "type", 0, &v)?;
    if int_limits(dtype).is_none() {
        return Err(Exc::type_error(
            "torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'",
        ));
    }
    Ok(Value::Object(Rc::new(TypeInfo { dtype })))
}

fn promote_types(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "type1")?;
    let y = a.required(1, "type2")?;
    a.finish(2)?;
    let (x, y) = (
        dtype_arg("promote_types", "type1", 0, &x)?,
        dtype_arg("promote_types", "type2", 1, &y)?,
    );
    Ok(Value::DType(x.promote(y), Flavor::Torch))
}

/// `torch.finfo(d)` or `torch.iinfo(d)`, by whether `dtype` is a float type.
struct TypeInfo {
    dtype: DType,
}

impl NativeObject for TypeInfo {
    fn type_name(&self) -> &str {
        if self.dtype.is_float() {
            "finfo"
        } else {
            "iinfo"
        }
    }
    fn repr(&self) -> String {
        let name = self.dtype.name();
        if let Some((_, eps, max, tiny, resolution)) = float_limits(self.dtype) {
            let g = stream_digits;
            return format!(
                "finfo(resolution={}, min={}, max={}, eps={}, smallest_normal={}, tiny={}, dtype={name})",
                g(resolution),
                g(-max),
                g(max),
                g(eps),
                g(tiny),
                g(tiny)
            );
        }
        let number = |v: &Value| match v {
            Value::Int(i) => stream_digits(*i as f64),
            _ => stream_digits(u64::MAX as f64),
        };
        match int_limits(self.dtype) {
            Some((_, min, max)) => format!(
                "iinfo(min={}, max={}, dtype={name})",
                number(&min),
                number(&max)
            ),
            None => format!("iinfo(dtype={name})"),
        }
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        if name == "dtype" {
            return Some(Value::str(self.dtype.name()));
        }
        if let Some((bits, eps, max, tiny, resolution)) = float_limits(self.dtype) {
            return Some(match name {
                "bits" => Value::Int(bits),
                "eps" => Value::Float(eps),
                "max" => Value::Float(max),
                "min" => Value::Float(-max),
                "tiny" | "smallest_normal" => Value::Float(tiny),
                "resolution" => Value::Float(resolution),
                _ => return None,
            });
        }
        let (bits, min, max) = int_limits(self.dtype)?;
        Some(match name {
            "bits" => Value::Int(bits),
            "min" => min,
            "max" => max,
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        if self.dtype.is_float() {
            vec![
                "bits",
                "dtype",
                "eps",
                "max",
                "min",
                "resolution",
                "smallest_normal",
                "tiny",
            ]
        } else {
            vec!["bits", "dtype", "max", "min"]
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
