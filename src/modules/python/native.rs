//! Helpers for library objects written in Rust (`NativeObject`s): making one a `Value`, reading
//! one back, binding its methods, reading its arguments.

use std::rc::Rc;

use crate::object::error::Exc;
use crate::object::method;
use crate::object::ops::as_i64;
use crate::object::value::{MethodFn, NativeObject, Value};

pub fn object(o: impl NativeObject + 'static) -> Value {
    Value::Object(Rc::new(o))
}

pub fn downcast<'a, T: 'static>(v: &'a Value, what: &str) -> Result<&'a T, Exc> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<T>(),
        _ => None,
    }
    .ok_or_else(|| Exc::type_error(format!("expected {what}, got {}", v.type_name())))
}

pub fn bound(
    this: &Rc<dyn NativeObject>,
    name: &'static str,
    doc: &'static str,
    f: MethodFn,
) -> Value {
    method(&Value::Object(this.clone()), name, doc, f)
}

pub fn usize_arg(v: &Value, what: &str) -> Result<usize, Exc> {
    as_i64(v)
        .and_then(|i| usize::try_from(i).ok())
        .ok_or_else(|| {
            Exc::type_error(format!(
                "{what} must be a non-negative integer, got {}",
                v.type_name()
            ))
        })
}
