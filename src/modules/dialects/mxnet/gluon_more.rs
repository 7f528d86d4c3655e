//! The names of `gluon.nn` and `npx` written in the language (`library/mxnet/gluon_nn_more.da`:
//! LeakyReLU, PReLU, ELU, SELU, Swish, Embedding, Lambda, HybridLambda, GroupNorm,
//! InstanceNorm, Conv2DTranspose; `library/mxnet/npx_more.da`: sequence_mask), loaded on first
//! use by the modules' `__getattr__`.
use crate::modules::python::library_names::library_attr;
use crate::object::builtin;
use crate::object::value::Module;

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
