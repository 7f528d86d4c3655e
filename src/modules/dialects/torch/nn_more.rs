//! The names of `torch.nn` and `torch.nn.functional` written in the language
//! (`library/torch/nn_more.da`, `library/torch/functional_more.da`): compositions of tensor
//! operations and `nn.Module`, loaded on first use by the modules' `__getattr__` (a later
//! lookup finds the loaded module in the session's table).
use crate::object::error::Exc;
use crate::object::value::{Args, Module, Value};
use crate::object::{builtin, Interpreter};

/// `torch.nn`'s classes that `torch.nn._more` defines.
pub const NN_NAMES: &[&str] = &[
    "LeakyReLU",
    "GELU",
    "SiLU",
    "Mish",
    "ELU",
    "Softplus",
    "Hardtanh",
    "PReLU",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
    "Unflatten",
    "Upsample",
    "Embedding",
    "GroupNorm",
    "RNNBase",
    "RNN",
    "LSTM",
    "GRU",
    "RNNCellBase",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
    "TransformerDecoder",
    "Transformer",
    "KLDivLoss",
    "MSELoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "NLLLoss",
    "CrossEntropyLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "ConvTranspose2d",
];

/// `torch.nn.functional`'s functions that `torch.nn._functional_more` defines.
pub const FUNCTIONAL_NAMES: &[&str] = &[
    "hardtanh",
    "relu6",
    "mish",
    "prelu",
    "softsign",
    "embedding",
    "pad",
    "interpolate",
    "upsample",
    "unfold",
    "fold",
    "group_norm",
    "cosine_similarity",
    "pairwise_distance",
    "kl_div",
    "conv_transpose2d",
    "grid_sample",
];

/// `name` from library module `source` when `names` lists it.
fn library_attr(
    it: &mut dyn Interpreter,
    source: &str,
    names: &[&str],
    name: &str,
) -> Result<Option<Value>, Exc> {
    if !names.contains(&name) {
        return Ok(None);
    }
    Ok(it.import(source)?.get(name))
}

/// `torch.nn`'s names written in the language.
pub fn nn_attr(it: &mut dyn Interpreter, name: &str) -> Result<Option<Value>, Exc> {
    library_attr(it, "torch.nn._more", NN_NAMES, name)
}

/// `torch.nn.functional`'s names written in the language.
pub fn functional_attr(it: &mut dyn Interpreter, name: &str) -> Result<Option<Value>, Exc> {
    library_attr(it, "torch.nn._functional_more", FUNCTIONAL_NAMES, name)
}

/// The `grad_fn` names the library's compositions give their results, PyTorch's names for
/// the one kernel it runs there (`F.pad` is `ConstantPadNdBackward0`, not `CatBackward0`).
const GRAD_FN_NAMES: &[&str] = &[
    "EmbeddingBackward0",
    "PreluKernelBackward0",
    "HardtanhBackward0",
    "MishBackward0",
    "ConstantPadNdBackward0",
    "ReflectionPad1DBackward0",
    "ReflectionPad2DBackward0",
    "ReflectionPad3DBackward0",
    "ReplicationPad1DBackward0",
    "ReplicationPad2DBackward0",
    "ReplicationPad3DBackward0",
    "UpsampleNearest1DBackward0",
    "UpsampleNearest2DBackward0",
    "UpsampleNearest3DBackward0",
    "UpsampleLinear1DBackward0",
    "UpsampleBilinear2DBackward0",
    "Im2ColBackward0",
    "Col2ImBackward0",
    "NativeGroupNormBackward0",
    "SumBackward1",
    "NormBackward1",
    "GridSampler2DBackward0",
];

/// `torch.nn.functional._grad_fn_as(tensor, name)`: the library's way to name the op that
/// made `tensor` (one of `GRAD_FN_NAMES`); returns the tensor.
fn grad_fn_as(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let t = a.required(0, "tensor")?;
    let name = a.required(1, "name")?;
    a.finish(2)?;
    let name = match &name {
        Value::Str(s) => GRAD_FN_NAMES.iter().find(|n| ***n == **s),
        _ => None,
    }
    .ok_or_else(|| Exc::value_error("_grad_fn_as: not a name the library gives"))?;
    if let Some(x) = t.as_array() {
        it.state_mut().nn.tape.rename(&x.array, name);
    }
    Ok(t)
}

/// Adds the library's native helper to `torch.nn.functional`.
pub fn register_functional(m: &Module) {
    m.set(
        "_grad_fn_as",
        builtin("_grad_fn_as", "_grad_fn_as(tensor, name): names the op that made tensor as PyTorch names its backward.", grad_fn_as),
    );
}
