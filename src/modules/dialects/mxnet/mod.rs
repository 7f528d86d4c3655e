//! The `mxnet` package: `mx`, `mxnet.nd` (legacy NDArray), `mxnet.np` / `mxnet.npx` (numpy mode),
//! `mxnet.context`, and through `gluon.rs` (and `array/data.rs`) `mxnet.gluon`, `mxnet.autograd`,
//! `mxnet.init`. The array functions themselves are `crate::modules::array::arrays`, shared with every dialect.

pub mod api_more;
pub mod conv_ops;
pub mod gluon;
pub mod gluon_blocks;
pub mod gluon_conv;
pub mod gluon_more;
pub mod gluon_train;
pub mod np_more;
pub mod selection;
pub mod symbol;

use std::rc::Rc;

use crate::object::value::Module;
use crate::object::{builtin, Args, Exc, ExcKind, Interpreter, Value};

use crate::modules::array::arrays::{self, ND, NP};
use crate::modules::array::{devices, files};

pub(crate) fn module(name: &str, doc: &'static str) -> Rc<Module> {
    Rc::new(Module::new(name, doc))
}

pub fn build(dotted: &str) -> Option<Rc<Module>> {
    Some(match dotted {
        "mxnet" => {
            let m = module("mxnet", "MXNet's API on the devarray runtime");
            devices::set_device_fns(&m);
            m.set("nd", Value::Module(build("mxnet.nd")?));
            m.set("ndarray", Value::Module(build("mxnet.nd")?));
            m.set("np", Value::Module(build("mxnet.np")?));
            m.set("numpy", Value::Module(build("mxnet.np")?));
            m.set("npx", Value::Module(build("mxnet.npx")?));
            m.set("context", Value::Module(build("mxnet.context")?));
            m.set(
                "random",
                Value::Module(arrays::random_module::<ND>("mxnet.random")),
            );
            m.set("base", Value::Module(build("mxnet.base")?));
            m.set("MXNetError", Value::ExcType(ExcKind::MXNetError));
            m.set("__version__", Value::str("1.9.1 (devarray)"));
            m.set("gluon", Value::Module(build("mxnet.gluon")?));
            m.set("lr_scheduler", Value::Module(build("mxnet.lr_scheduler")?));
            m.set("autograd", Value::Module(build("mxnet.autograd")?));
            m.set("init", Value::Module(build("mxnet.init")?));
            m.set("sym", Value::Module(build("mxnet.symbol")?));
            m.set("symbol", Value::Module(build("mxnet.symbol")?));
            m
        }
        "mxnet.base" => {
            let m = module("mxnet.base", "MXNet's base definitions");
            m.set("MXNetError", Value::ExcType(ExcKind::MXNetError));
            m.set(
                "NotImplementedForSymbol",
                Value::ExcType(ExcKind::NotImplementedForSymbol),
            );
            m
        }
        "mxnet.nd" | "mxnet.ndarray" => {
            let m = module("mxnet.ndarray", "MXNet's legacy NDArray API");
            arrays::fill_namespace::<ND>(&m);
            gluon_train::set_softmax(&m);
            conv_ops::register_nd(&m);
            m.set("batch_dot", builtin("batch_dot", "batch_dot(lhs, rhs, transpose_a=False, transpose_b=False, forward_stype=None, out=None): the matrix product of the last two axes, batch by batch (N-D arrays, N >= 3).", np_more::batch_dot));
            m.set(
                "NDArray",
                Value::Type(crate::object::value::TypeKind::NDArray),
            );
            m.set(
                "random",
                Value::Module(arrays::random_module::<ND>("mxnet.ndarray.random")),
            );
            set_legacy_aliases(&m);
            crate::modules::array::math_more::install::<ND>(&m);
            selection::install_nd(&m);
            api_more::install_nd(&m);
            m.set("save", builtin("save", "save(fname, data): write an NDArray, a list of NDArrays or a dict str -> NDArray to a file (devarray's safetensors format; atomically).", files::nd_save));
            m.set("load", builtin("load", "load(fname): the arrays of a file written by nd.save: a list of NDArrays or a dict str -> NDArray, each on the device it was saved from (cpu(0) when there is no GPU).", files::nd_load));
            m
        }
        "mxnet.np" | "mxnet.numpy" => {
            let m = module("mxnet.numpy", "MXNet's numpy-compatible API");
            arrays::fill_namespace::<NP>(&m);
            m.set(
                "ndarray",
                Value::Type(crate::object::value::TypeKind::MxNumpyArray),
            );
            m.set(
                "random",
                Value::Module(arrays::random_module::<NP>("mxnet.numpy.random")),
            );
            np_more::install(&m);
            crate::modules::array::math_more::install::<NP>(&m);
            crate::modules::array::linalg::install::<NP>(&m);
            crate::modules::array::reductions::install::<NP>(&m);
            selection::install_np(&m);
            api_more::install_np(&m);
            m.set("pi", Value::Float(std::f64::consts::PI));
            m.set("e", Value::Float(std::f64::consts::E));
            m
        }
        // The `F` a HybridBlock's `hybrid_forward` gets in numpy mode: MXNet passes
        // `mxnet.ndarray`, whose `F.np` / `F.npx` the book calls; here its functions take numpy
        // arrays too, so `F.relu(x)` keeps working.
        "mxnet.hybrid_np" => {
            let m = module("mxnet.ndarray", "MXNet's operators, as hybrid_forward's F");
            arrays::fill_namespace::<NP>(&m);
            m.set("np", Value::Module(build("mxnet.np")?));
            m.set("npx", Value::Module(build("mxnet.npx")?));
            m
        }
        "mxnet.npx" | "mxnet.numpy_extension" => {
            let m = module("mxnet.numpy_extension", "MXNet's numpy extensions");
            devices::set_device_fns(&m);
            devices::set_memory_info(&m);
            gluon_train::set_npx_activations(&m);
            conv_ops::register_npx(&m);
            gluon_more::register_npx(&m);
            m.set("batch_dot", builtin("batch_dot", "batch_dot(lhs, rhs, transpose_a=False, transpose_b=False, forward_stype=None, out=None): the matrix product of the last two axes, batch by batch (N-D arrays, N >= 3).", np_more::batch_dot));
            m.set(
                "set_np",
                builtin(
                    "set_np",
                    "set_np(): switch to MXNet's numpy mode (arrays print as array([...])).",
                    set_np,
                ),
            );
            m.set(
                "reset_np",
                builtin(
                    "reset_np",
                    "reset_np(): back to the legacy NDArray mode.",
                    reset_np,
                ),
            );
            for name in ["is_np_array", "is_np_shape"] {
                m.set(
                    name,
                    builtin(
                        name,
                        "is_np_array() / is_np_shape(): whether numpy mode (npx.set_np()) is on.",
                        |it, a| {
                            a.finish(0)?;
                            Ok(Value::Bool(it.state().np_mode))
                        },
                    ),
                );
            }
            m.set("save", builtin("save", "save(file, arr): write an ndarray, a list of ndarrays or a dict str -> ndarray to a file (devarray's safetensors format; atomically).", files::npx_save));
            m.set("load", builtin("load", "load(file): the arrays of a file written by npx.save: a list of ndarrays or a dict str -> ndarray, each on the device it was saved from (cpu(0) when there is no GPU).", files::npx_load));
            m.set(
                "waitall",
                builtin(
                    "waitall",
                    "waitall(): block until all pending computation is done.",
                    arrays::waitall,
                ),
            );
            m
        }
        "mxnet.lr_scheduler" => gluon_train::lr_scheduler_module(),
        "mxnet.context" => {
            let m = module("mxnet.context", "devices (contexts)");
            devices::set_device_fns(&m);
            devices::set_memory_info(&m);
            m
        }
        other => return symbol::build(other).or_else(|| gluon::build(other)),
    })
}

/// MXNet 1.x's operator names that older tutorials call (`nd.broadcast_add`,
/// `nd.random_normal`, ...), as the functions devarray has under the current names.
fn set_legacy_aliases(m: &Module) {
    const SAME: [(&str, &str); 14] = [
        ("broadcast_add", "add"),
        ("broadcast_plus", "add"),
        ("broadcast_sub", "subtract"),
        ("broadcast_minus", "subtract"),
        ("broadcast_mul", "multiply"),
        ("broadcast_div", "divide"),
        ("broadcast_power", "power"),
        ("broadcast_maximum", "maximum"),
        ("broadcast_minimum", "minimum"),
        ("broadcast_mod", "mod"),
        ("elemwise_add", "add"),
        ("elemwise_sub", "subtract"),
        ("elemwise_mul", "multiply"),
        ("elemwise_div", "divide"),
    ];
    for (alias, name) in SAME {
        if let Some(f) = m.get(name) {
            m.set(alias, f);
        }
    }
    if let Some(Value::Module(r)) = m.get("random").as_ref() {
        for (alias, name) in [("random_uniform", "uniform"), ("random_normal", "normal")] {
            if let Some(f) = r.get(name) {
                m.set(alias, f);
            }
        }
    }
}

fn set_np(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    a.take_kw("shape");
    a.take_kw("array");
    a.take_kw("dtype");
    a.finish(0)?;
    it.state_mut().np_mode = true;
    // MXNet's initializers draw from mx.np.random in numpy mode.
    it.state_mut()
        .rt
        .set_sampler(crate::runtime::Sampler::MxNumpy);
    Ok(Value::None)
}

fn reset_np(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    it.state_mut().np_mode = false;
    it.state_mut()
        .rt
        .set_sampler(crate::runtime::Sampler::MxNet);
    Ok(Value::None)
}
