//! The names of `gluon.nn` and `npx` written in the language (`library/mxnet/gluon_nn_more.da`:
//! LeakyReLU, PReLU, ELU, SELU, Swish, Embedding, Lambda, HybridLambda, GroupNorm,
//! InstanceNorm, Conv2DTranspose; `library/mxnet/npx_more.da`: sequence_mask), loaded on first
//! use by the modules' `__getattr__`.
use crate::object::error::{Exc, ExcKind};
use crate::object::value::{Args, Module, Value};
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

/// `npx`'s functions that `mxnet.numpy_extension._more` defines.
pub const NPX_NAMES: &[&str] = &["sequence_mask"];

/// `name` from library module `source` when `names` lists it, else module `shown`'s
/// AttributeError.
fn library_attr(
    it: &mut dyn Interpreter,
    mut a: Args,
    shown: &str,
    source: &str,
    names: &[&str],
) -> Result<Value, Exc> {
    let name = a.required(0, "name")?;
    let text = crate::object::format::to_str(it, &name)?;
    let found = if names.contains(&text.as_str()) {
        it.import(source)?.get(&text)
    } else {
        None
    };
    found.ok_or_else(|| {
        Exc::new(
            ExcKind::AttributeError,
            format!("module '{shown}' has no attribute '{text}'"),
        )
    })
}

/// Adds `gluon.nn`'s `__getattr__` for the names written in the language.
pub fn register(m: &Module) {
    m.set(
        "__getattr__",
        builtin("__getattr__", "", |it, a| {
            library_attr(it, a, "mxnet.gluon.nn", "mxnet.gluon.nn._more", NN_NAMES)
        }),
    );
}

/// Adds `npx`'s `__getattr__` for the functions written in the language.
pub fn register_npx(m: &Module) {
    m.set(
        "__getattr__",
        builtin("__getattr__", "", |it, a| {
            library_attr(
                it,
                a,
                "mxnet.numpy_extension",
                "mxnet.numpy_extension._more",
                NPX_NAMES,
            )
        }),
    );
}
