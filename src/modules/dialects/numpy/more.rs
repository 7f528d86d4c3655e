//! The names of `numpy` written in the language (`library/numpy/more.da`: `append`,
//! `select`, `piecewise`, `resize`, ...), loaded on first use by the module's `__getattr__`
//! (a later lookup finds the loaded module in the session's table).
use crate::object::error::{Exc, ExcKind};
use crate::object::value::{Module, Value};
use crate::object::{builtin, Interpreter};

/// `numpy`'s functions that `numpy._more` defines.
pub const NAMES: &[&str] = &[
    "ndim",
    "shape",
    "size",
    "copy",
    "append",
    "logspace",
    "broadcast_to",
    "broadcast_arrays",
    "resize",
    "select",
    "piecewise",
    "fromfunction",
    "array_repr",
    "array2string",
    "genfromtxt",
];

/// `numpy.name` from the language's module, or None when it is not one of [`NAMES`].
pub fn attr(it: &mut dyn Interpreter, name: &str) -> Result<Option<Value>, Exc> {
    if !NAMES.contains(&name) {
        return Ok(None);
    }
    Ok(it.import("numpy._more")?.get(name))
}

/// Gives `numpy` its `__getattr__`: this file's names, else NumPy's AttributeError.
pub fn install(m: &Module) {
    m.set(
        "__getattr__",
        builtin("__getattr__", "", |it, mut a| {
            let name = a.required(0, "name")?;
            let text = crate::object::format::to_str(it, &name)?;
            match attr(it, &text)? {
                Some(v) => Ok(v),
                None => Err(Exc::new(
                    ExcKind::AttributeError,
                    format!("module 'numpy' has no attribute '{text}'"),
                )),
            }
        }),
    );
}
