//! The argument handling `linalg.rs`, `reductions.rs` and `math_more.rs` share: which dialect a function's
//! const parameter names, an array argument (lists and numbers become NumPy arrays; PyTorch
//! refuses them in its words), and a result as the dialect returns it (NumPy's 0-d results
//! are NumPy scalars).
use crate::modules::array::arrays::{NP, NUMPY, TORCH};
use crate::modules::array::numpy_fns::as_array;
use crate::object::error::Exc;
use crate::object::ops::{self, wrap};
use crate::object::value::{ArrayValue, Flavor, Value};
use crate::object::Interpreter;
use crate::runtime::Array;

/// The flavor of a function's const dialect code.
pub fn flavor_of<const F: u8>() -> Flavor {
    match F {
        TORCH => Flavor::Torch,
        NP => Flavor::Np,
        NUMPY => Flavor::Numpy,
        _ => Flavor::Nd,
    }
}

/// An array argument: arrays as they are, lists and numbers as NumPy arrays (PyTorch refuses
/// them: "`fname`(): argument '`name`' (position `position`) must be Tensor, not ...").
pub fn array_arg(
    it: &mut dyn Interpreter,
    flavor: Flavor,
    fname: &str,
    name: &str,
    position: usize,
    v: &Value,
) -> Result<ArrayValue, Exc> {
    match v {
        Value::Array(a) => Ok(a.clone()),
        other if flavor == Flavor::Torch => Err(Exc::type_error(format!(
            "{fname}(): argument '{name}' (position {position}) must be Tensor, not {}",
            other.type_name()
        ))),
        other => as_array(it, other),
    }
}

/// A computed array as the dialect returns it: a NumPy 0-d result is a NumPy scalar.
pub fn result(out: Array, flavor: Flavor) -> Result<Value, Exc> {
    if flavor == Flavor::Numpy && out.ndim() == 0 {
        return ops::numpy_scalar(&out);
    }
    Ok(wrap(out, flavor))
}

/// The first argument as an array: named `input` in PyTorch and `numpy_name` elsewhere.
pub fn first_array(
    it: &mut dyn Interpreter,
    flavor: Flavor,
    a: &mut crate::object::value::Args,
    numpy_name: &str,
) -> Result<ArrayValue, Exc> {
    let name = if flavor == Flavor::Torch {
        "input"
    } else {
        numpy_name
    };
    let x = a.required(0, name)?;
    array_arg(it, flavor, a.fname, "input", 1, &x)
}
