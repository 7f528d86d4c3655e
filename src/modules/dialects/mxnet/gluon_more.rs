//! The names of `gluon.nn` written in the language (`library/mxnet/gluon_nn_more.da`:
//! LeakyReLU, PReLU, ELU, SELU, Swish, Embedding, Lambda, HybridLambda, GroupNorm,
//! InstanceNorm, Conv2DTranspose), loaded on first use by the module's `__getattr__`.
use crate::object::error::{Exc, ExcKind};
use crate::object::value::{Module, Value};
use crate::object::{builtin, Interpreter};

/// `gluon.nn`'s classes that `mxnet.gluon.nn._more` defines.
pub const NN_NAMES: &[&str] = &[
    "LeakyReLU",
    "PReLU",
    "ELU",
    "SELU",
    "Swish",
    "Embedding",
    "Lambda",
    "HybridLambda",
    "GroupNorm",
    "InstanceNorm",
    "Conv2DTranspose",
];

fn nn_attr(it: &mut dyn Interpreter, name: &str) -> Result<Option<Value>, Exc> {
    if !NN_NAMES.contains(&name) {
        return Ok(None);
    }
    Ok(it.import("mxnet.gluon.nn._more")?.get(name))
}

/// Adds `gluon.nn`'s `__getattr__` for the names written in the language.
pub fn register(m: &Module) {
    m.set(
        "__getattr__",
        builtin("__getattr__", "", |it, mut a| {
            let name = a.required(0, "name")?;
            let text = crate::object::format::to_str(it, &name)?;
            nn_attr(it, &text)?.ok_or_else(|| {
                Exc::new(
                    ExcKind::AttributeError,
                    format!("module 'mxnet.gluon.nn' has no attribute '{text}'"),
                )
            })
        }),
    );
}
