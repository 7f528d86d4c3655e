//! PyTorch's convolutional-network modules and functions: `nn.Conv1d`/`Conv2d` (and `Lazy`
//! forms), `MaxPool2d`, `AvgPool2d`, `AdaptiveAvgPool2d`/`AdaptiveMaxPool2d`,
//! `BatchNorm1d`/`2d` (and `Lazy` forms), `LayerNorm`, `Dropout`/`Dropout2d`, `Identity`, and
//! `F.conv2d`, `F.max_pool2d`, `F.avg_pool2d`, `F.batch_norm`, `F.dropout`, ... The layers are
//! `nn::cnn`; parameters are drawn at construction on the CPU from torch's generator, as
//! PyTorch's `reset_parameters` does (kaiming_uniform with a=sqrt(5): U(-1/sqrt(fan_in),
//! 1/sqrt(fan_in)) for the weight, the same bound for the bias).
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::modules::array::blocks::{self, install_core, CoreData, Dialect};
use crate::modules::array::conv_args::{
    float, int_pair, self_arg, torch_conv_devices, truth, IntWord,
};
use crate::modules::dialects::torch::torch_error;
use crate::modules::python::native::usize_arg;
use crate::nn::cnn::{
    batch_counter, constant_param, BatchNormLayer, ConvLayer, ConvPad, DropoutLayer, IdentityLayer,
    LayerNormLayer, LayerOp, PadMode, Pool1dLayer, PoolLayer, PoolSpan, Style,
};
use crate::nn::conv::{self, Window};
use crate::nn::layers::{Block, BlockKind, Init, Parameter};
use crate::nn::norm::{self, RunningUpdate};
use crate::object::class::Class;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::wrap;
use crate::object::value::{Args, BuiltinFn, Flavor, Module, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::{Array, Device};

struct ConvClasses {
    list: Vec<Rc<Class>>,
}

thread_local! {
    static CLASSES: RefCell<Option<Rc<ConvClasses>>> = const { RefCell::new(None) };
}

/// The module classes (made once per thread, so `nn.Conv2d` is one object).
pub fn modules(base: Value) -> Vec<Rc<Class>> {
    CLASSES.with(|c| {
        if let Some(k) = c.borrow().as_ref() {
            return k.list.clone();
        }
        // PyTorch's private bases, so `__mro__` and `isinstance(m, _ConvNd)` are its own.
        let abstract_base = |name: &str, file: &str, base: Value| {
            blocks::native_block_class(name, &format!("torch.nn.modules.{file}"), base, "", &[])
        };
        let conv_nd = abstract_base("_ConvNd", "conv", base.clone());
        let norm_base = abstract_base("_NormBase", "batchnorm", base.clone());
        let batch_norm = abstract_base("_BatchNorm", "batchnorm", norm_base.value());
        let max_pool = abstract_base("_MaxPoolNd", "pooling", base.clone());
        let avg_pool = abstract_base("_AvgPoolNd", "pooling", base.clone());
        let adaptive_avg = abstract_base("_AdaptiveAvgPoolNd", "pooling", base.clone());
        let adaptive_max = abstract_base("_AdaptiveMaxPoolNd", "pooling", base.clone());
        let dropout = abstract_base("_DropoutNd", "dropout", base.clone());
        let leaf = |name: &str, file: &str, doc: &str, init: BuiltinFn| {
            let parent = match name {
                "Conv1d" | "Conv2d" => &conv_nd,
                "BatchNorm1d" | "BatchNorm2d" => &batch_norm,
                "MaxPool1d" | "MaxPool2d" => &max_pool,
                "AvgPool1d" | "AvgPool2d" => &avg_pool,
                "AdaptiveAvgPool1d" | "AdaptiveAvgPool2d" => &adaptive_avg,
                "AdaptiveMaxPool1d" | "AdaptiveMaxPool2d" => &adaptive_max,
                "Dropout" | "Dropout2d" => &dropout,
                _ => return blocks::native_block_class(name, &format!("torch.nn.modules.{file}"), base.clone(), doc, &[("__init__", init)]),
            };
            blocks::native_block_class(
                name,
                &format!("torch.nn.modules.{file}"),
                parent.value(),
                doc,
                &[("__init__", init)],
            )
        };
        let list = vec![
            leaf("Conv1d", "conv", "Conv1d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True): 1-d convolution over (N, C, L).", |it, a| conv_init(it, a, 1)),
            leaf("Conv2d", "conv", "Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True): 2-d convolution over (N, C, H, W).", |it, a| conv_init(it, a, 2)),
            leaf("MaxPool1d", "pooling", "MaxPool1d(kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False): the maximum of each window over (N, C, L).", |it, a| max_pool_init(it, a, 1)),
            leaf("MaxPool2d", "pooling", "MaxPool2d(kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False): the maximum of each window.", |it, a| max_pool_init(it, a, 2)),
            leaf("AvgPool1d", "pooling", "AvgPool1d(kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True): the mean of each window over (N, C, L).", |it, a| avg_pool_init(it, a, 1)),
            leaf("AvgPool2d", "pooling", "AvgPool2d(kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None): the mean of each window.", |it, a| avg_pool_init(it, a, 2)),
            leaf("AdaptiveAvgPool1d", "pooling", "AdaptiveAvgPool1d(output_size): mean pooling of (N, C, L) to a fixed length.", |it, a| adaptive_init(it, a, false, 1)),
            leaf("AdaptiveMaxPool1d", "pooling", "AdaptiveMaxPool1d(output_size, return_indices=False): max pooling of (N, C, L) to a fixed length.", |it, a| adaptive_init(it, a, true, 1)),
            leaf("AdaptiveAvgPool2d", "pooling", "AdaptiveAvgPool2d(output_size): mean pooling to a fixed output size.", |it, a| adaptive_init(it, a, false, 2)),
            leaf("AdaptiveMaxPool2d", "pooling", "AdaptiveMaxPool2d(output_size, return_indices=False): max pooling to a fixed output size.", |it, a| adaptive_init(it, a, true, 2)),
            leaf("BatchNorm1d", "batchnorm", "BatchNorm1d(num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True): batch normalization over (N, C) or (N, C, L).", |it, a| batch_norm_init(it, a, 1, false)),
            leaf("BatchNorm2d", "batchnorm", "BatchNorm2d(num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True): batch normalization over (N, C, H, W).", |it, a| batch_norm_init(it, a, 2, false)),
            leaf("LayerNorm", "normalization", "LayerNorm(normalized_shape, eps=1e-05, elementwise_affine=True, bias=True): normalization over the trailing dimensions.", layer_norm_init),
            leaf("Dropout", "dropout", "Dropout(p=0.5, inplace=False): zeroes elements with probability p in training.", |it, a| dropout_init(it, a, false)),
            leaf("Dropout2d", "dropout", "Dropout2d(p=0.5, inplace=False): zeroes whole channels with probability p in training.", |it, a| dropout_init(it, a, true)),
            leaf("Identity", "linear", "Identity(*args, **kwargs): returns its input.", identity_init),
        ];
        *c.borrow_mut() = Some(Rc::new(ConvClasses { list: list.clone() }));
        list
    })
}

/// Adds the classes to `torch.nn` (their `Lazy` forms are `super::lazy`'s).
pub fn register(m: &Module, base: Value) {
    for c in modules(base) {
        m.set(&c.name, c.value());
    }
}

// ---- arguments ------------------------------------------------------------------------------

/// An int or a tuple of `n` ints (`kernel_size=3`, `(3, 5)`), as the pair the layers use (a
/// one-dimensional value in the second slot). PyTorch refuses None where it wants a size.
fn ints(it: &mut dyn Interpreter, v: &Value, n: usize, what: &str) -> Result<[usize; 2], Exc> {
    if matches!(v, Value::None) {
        let k = usize_arg(v, what)?;
        return Ok([k, k]);
    }
    int_pair(it, Some(v), n, 1, what, IntWord::Int)
}

/// Installs pooling layer `op`, as the 1-d form over (N, C, L) when `dims` is 1.
fn install_pool(
    it: &mut dyn Interpreter,
    this: &Value,
    hint: &str,
    op: PoolLayer,
    dims: usize,
) -> Result<(), Exc> {
    let op: Rc<dyn LayerOp> = if dims == 1 {
        Rc::new(Pool1dLayer { inner: op })
    } else {
        Rc::new(op)
    };
    install(it, this, hint, op)
}

fn install(
    it: &mut dyn Interpreter,
    this: &Value,
    hint: &str,
    op: Rc<dyn LayerOp>,
) -> Result<(), Exc> {
    let name = it.state_mut().nn.next_name(hint);
    let layer = Rc::new(Block {
        name: name.clone(),
        kind: BlockKind::Op(op),
    });
    install_core(this, CoreData::new(Dialect::Torch, name, Some(layer)))
}

/// Draws (or defers, for a lazy layer) every parameter of `op`, in order, on the CPU.
fn draw_params(it: &mut dyn Interpreter, op: &dyn LayerOp, lazy: bool) -> Result<(), Exc> {
    for (_, p) in op.params() {
        if p.is_initialized() {
            continue;
        }
        if lazy {
            p.defer(&[Device::cpu(0)]);
            continue;
        }
        let st = it.state_mut();
        p.initialize(&st.rt, &mut st.nn.tape, &[Device::cpu(0)], None, false)
            .map_err(torch_error)?;
    }
    Ok(())
}

// ---- convolution ----------------------------------------------------------------------------

struct ConvArgs {
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: ConvPad,
    padding_mode: PadMode,
    dilation: [usize; 2],
    groups: usize,
    bias: bool,
}

/// The arguments after `in_channels, out_channels` (or `out_channels` for a lazy layer),
/// starting at position `at`.
fn conv_args(
    it: &mut dyn Interpreter,
    a: &mut Args,
    at: usize,
    dims: usize,
) -> Result<ConvArgs, Exc> {
    let kernel = ints(it, &a.required(at, "kernel_size")?, dims, "kernel_size")?;
    let stride = match a.take(at + 1, "stride")? {
        Some(v) => ints(it, &v, dims, "stride")?,
        None => [1, 1],
    };
    let padding = match &a.take(at + 2, "padding")? {
        None => ConvPad::Fixed([0, 0]),
        Some(Value::Str(s)) => match &**s {
            "same" => ConvPad::Same,
            "valid" => ConvPad::Valid,
            other => {
                return Err(Exc::value_error(format!(
                    "Invalid padding string '{other}', should be one of {{'valid', 'same'}}"
                )))
            }
        },
        Some(v) => {
            let p = ints(it, v, dims, "padding")?;
            ConvPad::Fixed(if dims == 1 { [0, p[1]] } else { p })
        }
    };
    let dilation = match a.take(at + 3, "dilation")? {
        Some(v) => ints(it, &v, dims, "dilation")?,
        None => [1, 1],
    };
    let groups = match a.take(at + 4, "groups")? {
        Some(v) => usize_arg(&v, "groups")?,
        None => 1,
    };
    let bias = truth(a.take(at + 5, "bias")?, true)?;
    let padding_mode = match &a.take(at + 6, "padding_mode")? {
        None => PadMode::Zeros,
        Some(v) => {
            let text = match v {
                Value::Str(s) => s.to_string(),
                other => py_repr(it, other)?,
            };
            PadMode::parse(&text).ok_or_else(|| {
                Exc::value_error(format!(
                    "padding_mode must be one of {{'circular', 'replicate', 'reflect', 'zeros'}}, but got padding_mode={}",
                    match v {
                        Value::Str(s) => format!("'{s}'"),
                        _ => text.clone(),
                    }
                ))
            })?
        }
    };
    a.take(at + 7, "device")?;
    a.take(at + 8, "dtype")?;
    a.finish(at + 9)?;
    if kernel.contains(&0) || stride.contains(&0) || dilation.contains(&0) {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "non-positive kernel_size, stride or dilation is not supported",
        ));
    }
    if groups == 0 {
        return Err(Exc::value_error("groups must be a positive integer"));
    }
    if padding == ConvPad::Same && stride != [1, 1] {
        return Err(Exc::value_error(
            "padding='same' is not supported for strided convolutions",
        ));
    }
    Ok(ConvArgs {
        kernel,
        stride,
        padding,
        padding_mode,
        dilation,
        groups,
        bias,
    })
}

fn make_conv(
    it: &mut dyn Interpreter,
    this: &Value,
    dims: usize,
    in_channels: usize,
    out_channels: usize,
    c: ConvArgs,
) -> Result<(), Exc> {
    if in_channels % c.groups != 0 {
        return Err(Exc::value_error("in_channels must be divisible by groups"));
    }
    if out_channels % c.groups != 0 {
        return Err(Exc::value_error("out_channels must be divisible by groups"));
    }
    let name = it
        .state_mut()
        .nn
        .next_name(if dims == 1 { "conv1d" } else { "conv2d" });
    let mut wshape = vec![out_channels, in_channels / c.groups];
    wshape.extend(if dims == 1 {
        vec![c.kernel[1]]
    } else {
        c.kernel.to_vec()
    });
    let weight = Parameter::new_accumulating(format!("{name}.weight"), wshape, Init::FanInUniform);
    let bias = c.bias.then(|| {
        let b = Parameter::new_accumulating(
            format!("{name}.bias"),
            vec![out_channels],
            Init::FanInUniform,
        );
        b.fan_in
            .set(in_channels / c.groups * c.kernel[0] * c.kernel[1]);
        b
    });
    let lazy = in_channels == 0;
    let op = Rc::new(ConvLayer {
        name: name.clone(),
        style: Style::Torch,
        dims,
        channels: out_channels,
        in_channels: Cell::new(in_channels),
        kernel: c.kernel,
        stride: c.stride,
        padding: c.padding,
        padding_mode: c.padding_mode,
        dilation: c.dilation,
        groups: c.groups,
        activation: None,
        weight,
        bias,
        lazy,
    });
    draw_params(it, op.as_ref(), lazy)?;
    let layer = Rc::new(Block {
        name: name.clone(),
        kind: BlockKind::Op(op),
    });
    install_core(this, CoreData::new(Dialect::Torch, name, Some(layer)))
}

fn conv_init(it: &mut dyn Interpreter, mut a: Args, dims: usize) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let in_c = usize_arg(&a.required(0, "in_channels")?, "in_channels")?;
    let out_c = usize_arg(&a.required(1, "out_channels")?, "out_channels")?;
    let c = conv_args(it, &mut a, 2, dims)?;
    if in_c == 0 || out_c == 0 {
        return Err(Exc::value_error(format!(
            "Conv{dims}d: in_channels and out_channels must be at least 1 (use nn.LazyConv{dims}d(out_channels, kernel_size) to infer the input channels)"
        )));
    }
    make_conv(it, &this, dims, in_c, out_c, c)?;
    Ok(Value::None)
}

/// `nn.LazyConv2d(out_channels, kernel_size, ...)`'s `__init__`: a `Conv2d` whose input
/// channels come from the first input; its class becomes `Conv2d` then (`super::lazy`).
pub(super) fn lazy_conv_init(
    it: &mut dyn Interpreter,
    mut a: Args,
    dims: usize,
) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let out_c = usize_arg(&a.required(0, "out_channels")?, "out_channels")?;
    let c = conv_args(it, &mut a, 1, dims)?;
    if out_c == 0 {
        return Err(Exc::value_error(format!(
            "LazyConv{dims}d: out_channels must be at least 1"
        )));
    }
    make_conv(it, &this, dims, 0, out_c, c)?;
    Ok(Value::None)
}

// ---- pooling --------------------------------------------------------------------------------

fn py_repr(it: &mut dyn Interpreter, v: &Value) -> Result<String, Exc> {
    crate::object::format::repr(it, v)
}

/// Kernel, stride and padding, and their reprs as given.
type PoolArgs = ([usize; 2], [usize; 2], [usize; 2], String, String, String);

/// The pooling arguments for `dims` (1 or 2) spatial axes; a 1-d window is (1, k).
fn pool_common(it: &mut dyn Interpreter, a: &mut Args, dims: usize) -> Result<PoolArgs, Exc> {
    let k = a.required(0, "kernel_size")?;
    let kernel = ints(it, &k, dims, "kernel_size")?;
    let s = a.take(1, "stride")?.filter(|v| !matches!(v, Value::None));
    let stride = match &s {
        Some(v) => ints(it, v, dims, "stride")?,
        None => kernel,
    };
    let p = a.take(2, "padding")?.unwrap_or(Value::Int(0));
    let mut pad = ints(it, &p, dims, "padding")?;
    if dims == 1 {
        pad[0] = 0;
    }
    if kernel.contains(&0) || stride.contains(&0) {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "non-positive kernel_size or stride is not supported",
        ));
    }
    let kt = py_repr(it, &k)?;
    let st = match &s {
        Some(v) => py_repr(it, v)?,
        None => kt.clone(),
    };
    let pt = py_repr(it, &p)?;
    Ok((kernel, stride, pad, kt, st, pt))
}

fn max_pool_init(it: &mut dyn Interpreter, mut a: Args, dims: usize) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let (kernel, stride, pad, kt, st, pt) = pool_common(it, &mut a, dims)?;
    let d = a.take(3, "dilation")?.unwrap_or(Value::Int(1));
    if ints(it, &d, dims, "dilation")? != [1, 1] {
        return Err(Exc::value_error(format!(
            "MaxPool{dims}d: dilation other than 1 is not supported"
        )));
    }
    if truth(a.take(4, "return_indices")?, false)? {
        return Err(Exc::value_error(format!(
            "MaxPool{dims}d: return_indices=True is not supported"
        )));
    }
    let ceil_mode = truth(a.take(5, "ceil_mode")?, false)?;
    a.finish(6)?;
    let dt = py_repr(it, &d)?;
    let py = if ceil_mode { "True" } else { "False" };
    let op = PoolLayer {
        name: format!("MaxPool{dims}d"),
        style: Style::Torch,
        max: true,
        span: PoolSpan::Window {
            kernel,
            stride,
            pad,
            ceil_mode,
        },
        count_include_pad: true,
        torch_repr: format!(
            "kernel_size={kt}, stride={st}, padding={pt}, dilation={dt}, ceil_mode={py}"
        ),
    };
    install_pool(it, &this, &format!("maxpool{dims}d"), op, dims)?;
    Ok(Value::None)
}

fn avg_pool_init(it: &mut dyn Interpreter, mut a: Args, dims: usize) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let (kernel, stride, pad, kt, st, pt) = pool_common(it, &mut a, dims)?;
    let ceil_mode = truth(a.take(3, "ceil_mode")?, false)?;
    let include = truth(a.take(4, "count_include_pad")?, true)?;
    if dims == 2 && !matches!(a.take(5, "divisor_override")?, None | Some(Value::None)) {
        return Err(Exc::value_error(
            "AvgPool2d: divisor_override is not supported",
        ));
    }
    a.finish(if dims == 1 { 5 } else { 6 })?;
    // AvgPool1d keeps its sizes as 1-tuples and prints them so.
    let (kt, st, pt) = if dims == 1 {
        let one = |v: usize| format!("({v},)");
        (one(kernel[1]), one(stride[1]), one(pad[1]))
    } else {
        (kt, st, pt)
    };
    let op = PoolLayer {
        name: format!("AvgPool{dims}d"),
        style: Style::Torch,
        max: false,
        span: PoolSpan::Window {
            kernel,
            stride,
            pad,
            ceil_mode,
        },
        count_include_pad: include,
        torch_repr: format!("kernel_size={kt}, stride={st}, padding={pt}"),
    };
    install_pool(it, &this, &format!("avgpool{dims}d"), op, dims)?;
    Ok(Value::None)
}

fn adaptive_init(
    it: &mut dyn Interpreter,
    mut a: Args,
    max: bool,
    dims: usize,
) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let o = a.required(0, "output_size")?;
    let out = ints(it, &o, dims, "output_size")?;
    let name = format!("Adaptive{}Pool{dims}d", if max { "Max" } else { "Avg" });
    if max && truth(a.take(1, "return_indices")?, false)? {
        return Err(Exc::value_error(format!(
            "{name}: return_indices=True is not supported"
        )));
    }
    a.finish(if max { 2 } else { 1 })?;
    let ot = py_repr(it, &o)?;
    let op = PoolLayer {
        name: name.clone(),
        style: Style::Torch,
        max,
        span: PoolSpan::Adaptive(out),
        count_include_pad: true,
        torch_repr: format!("output_size={ot}"),
    };
    install_pool(it, &this, &format!("adaptivepool{dims}d"), op, dims)?;
    Ok(Value::None)
}

// ---- normalization, dropout, identity -------------------------------------------------------

fn make_batch_norm(
    it: &mut dyn Interpreter,
    this: &Value,
    dims: usize,
    features: usize,
    a: &mut Args,
    at: usize,
) -> Result<(), Exc> {
    let eps = float(a.take(at, "eps")?, "eps", 1e-5)?;
    let momentum = match a.take(at + 1, "momentum")? {
        Some(Value::None) => {
            return Err(Exc::value_error(
                "momentum=None (a cumulative moving average) is not supported; give a momentum such as 0.1",
            ))
        }
        v => float(v, "momentum", 0.1)?,
    };
    let affine = truth(a.take(at + 2, "affine")?, true)?;
    let track = truth(a.take(at + 3, "track_running_stats")?, true)?;
    let bias = truth(a.take_kw("bias"), true)?;
    a.take(at + 4, "device")?;
    a.take(at + 5, "dtype")?;
    a.finish(at + 6)?;
    let name = it.state_mut().nn.next_name("batchnorm");
    let c = |n: &str, v: f64, buffer: bool| {
        constant_param(format!("{name}.{n}"), vec![features], v, buffer, true)
    };
    let counter = if track {
        let st = it.state_mut();
        Some(
            batch_counter(
                &st.rt,
                &mut st.nn.tape,
                format!("{name}.num_batches_tracked"),
            )
            .map_err(torch_error)?,
        )
    } else {
        None
    };
    let lazy = features == 0;
    let op = Rc::new(BatchNormLayer {
        name: name.clone(),
        style: Style::Torch,
        dims,
        features: Cell::new(features),
        eps,
        momentum,
        weight: affine.then(|| c("weight", 1.0, false)),
        bias: (affine && bias).then(|| c("bias", 0.0, false)),
        running_mean: track.then(|| c("running_mean", 0.0, true)),
        running_var: track.then(|| c("running_var", 1.0, true)),
        num_batches: counter,
        use_global_stats: false,
        training: Cell::new(true),
        lazy,
        affine_names: ("weight", "bias"),
    });
    draw_params(it, op.as_ref(), lazy)?;
    let layer = Rc::new(Block {
        name: name.clone(),
        kind: BlockKind::Op(op),
    });
    install_core(this, CoreData::new(Dialect::Torch, name, Some(layer)))
}

fn batch_norm_init(
    it: &mut dyn Interpreter,
    mut a: Args,
    dims: usize,
    _lazy: bool,
) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let features = usize_arg(&a.required(0, "num_features")?, "num_features")?;
    if features == 0 {
        return Err(Exc::value_error(format!(
            "BatchNorm{dims}d: num_features must be at least 1 (use nn.LazyBatchNorm{dims}d() to infer it)"
        )));
    }
    make_batch_norm(it, &this, dims, features, &mut a, 1)?;
    Ok(Value::None)
}

/// `nn.LazyBatchNorm2d(...)`'s `__init__`: `num_features` comes from the first input.
pub(super) fn lazy_batch_norm_init(
    it: &mut dyn Interpreter,
    mut a: Args,
    dims: usize,
) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    make_batch_norm(it, &this, dims, 0, &mut a, 0)?;
    Ok(Value::None)
}

fn layer_norm_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let s = a.required(0, "normalized_shape")?;
    let shape: Vec<usize> = match &s {
        Value::Tuple(_) | Value::List(_) => it
            .iterate(&s)?
            .iter()
            .map(|v| usize_arg(v, "normalized_shape"))
            .collect::<Result<_, _>>()?,
        v => vec![usize_arg(v, "normalized_shape")?],
    };
    let eps = float(a.take(1, "eps")?, "eps", 1e-5)?;
    let affine = truth(a.take(2, "elementwise_affine")?, true)?;
    let bias = truth(a.take(3, "bias")?, true)?;
    a.take(4, "device")?;
    a.take(5, "dtype")?;
    a.finish(6)?;
    let name = it.state_mut().nn.next_name("layernorm");
    let c = |n: &str, v: f64| constant_param(format!("{name}.{n}"), shape.clone(), v, false, true);
    let op = Rc::new(LayerNormLayer {
        name: name.clone(),
        style: Style::Torch,
        shape: shape.clone(),
        eps,
        weight: affine.then(|| c("weight", 1.0)),
        bias: (affine && bias).then(|| c("bias", 0.0)),
    });
    draw_params(it, op.as_ref(), false)?;
    let layer = Rc::new(Block {
        name: name.clone(),
        kind: BlockKind::Op(op),
    });
    install_core(&this, CoreData::new(Dialect::Torch, name, Some(layer)))?;
    Ok(Value::None)
}

fn dropout_init(it: &mut dyn Interpreter, mut a: Args, channels: bool) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let p = float(a.take(0, "p")?, "p", 0.5)?;
    let inplace = truth(a.take(1, "inplace")?, false)?;
    a.finish(2)?;
    if !(0.0..=1.0).contains(&p) {
        return Err(Exc::value_error(format!(
            "dropout probability has to be between 0 and 1, but got {}",
            crate::nn::cnn::float_text(p)
        )));
    }
    let op = Rc::new(DropoutLayer {
        style: Style::Torch,
        p,
        channels,
        inplace,
        training: Cell::new(true),
    });
    install(it, &this, "dropout", op)?;
    Ok(Value::None)
}

fn identity_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    install(it, &this, "identity", Rc::new(IdentityLayer))?;
    Ok(Value::None)
}

// ---- torch.nn.functional --------------------------------------------------------------------

fn tensor(v: &Value, what: &str, arg: &str) -> Result<Array, Exc> {
    v.as_array().map(|a| a.array.clone()).ok_or_else(|| {
        Exc::type_error(format!(
            "{what}(): argument '{arg}' (position 1) must be Tensor, not {}",
            v.type_name()
        ))
    })
}

fn opt_tensor(v: Option<Value>, what: &str, arg: &str) -> Result<Option<Array>, Exc> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(v) => tensor(&v, what, arg).map(Some),
    }
}

fn result(r: crate::runtime::Result<Array>) -> Result<Value, Exc> {
    r.map(|a| wrap(a, Flavor::Torch)).map_err(|e| match e {
        // PyTorch reports a wrong input shape as RuntimeError.
        crate::runtime::RuntimeError::Shape(m) => Exc::new(ExcKind::RuntimeError, m),
        e => torch_error(e),
    })
}

fn f_conv(it: &mut dyn Interpreter, mut a: Args, dims: usize) -> Result<Value, Exc> {
    let what = if dims == 1 { "conv1d" } else { "conv2d" };
    let x = tensor(&a.required(0, "input")?, what, "input")?;
    let w = tensor(&a.required(1, "weight")?, what, "weight")?;
    let b = opt_tensor(a.take(2, "bias")?, what, "bias")?;
    let stride = match a.take(3, "stride")? {
        Some(v) => ints(it, &v, dims, "stride")?,
        None => [1, 1],
    };
    let kernel: Vec<usize> = w.shape().iter().skip(2).copied().collect();
    let k2 = if dims == 1 {
        [1, kernel.first().copied().unwrap_or(1)]
    } else {
        [
            kernel.first().copied().unwrap_or(1),
            kernel.get(1).copied().unwrap_or(1),
        ]
    };
    let dilation_v = a.take(5, "dilation")?;
    let dilation = match &dilation_v {
        Some(v) => ints(it, v, dims, "dilation")?,
        None => [1, 1],
    };
    let pad = match &a.take(4, "padding")? {
        None => [(0, 0); 2],
        Some(Value::Str(s)) if &**s == "valid" => [(0, 0); 2],
        Some(Value::Str(s)) if &**s == "same" => conv::same_padding(k2, dilation),
        Some(v) => {
            let p = ints(it, v, dims, "padding")?;
            [(p[0], p[0]), (p[1], p[1])]
        }
    };
    let groups = match a.take(6, "groups")? {
        Some(v) => usize_arg(&v, "groups")?,
        None => 1,
    };
    a.finish(7)?;
    let mut params = vec![("weight", w.dtype(), w.device())];
    params.extend(b.as_ref().map(|b| ("bias", b.dtype(), b.device())));
    torch_conv_devices(&x, &params)?;
    let st = it.state_mut();
    let r = if dims == 1 {
        conv::conv1d(
            &st.rt,
            &mut st.nn.tape,
            &x,
            &w,
            b.as_ref(),
            stride[1],
            pad[1],
            dilation[1],
            groups,
        )
    } else {
        let win = Window {
            kernel: k2,
            stride,
            pad,
            dilation,
        };
        conv::conv2d(&st.rt, &mut st.nn.tape, &x, &w, b.as_ref(), &win, groups)
    };
    if let Ok(y) = &r {
        st.nn.tape.rename(y, "ConvolutionBackward0");
    }
    result(r)
}

/// Runs pooling `op` over `dims` (1 or 2) spatial axes.
fn run_pool(it: &mut dyn Interpreter, op: PoolLayer, dims: usize, x: &Array) -> Result<Value, Exc> {
    let st = it.state_mut();
    if dims == 1 {
        result(Pool1dLayer { inner: op }.forward(&st.rt, &mut st.nn.tape, x))
    } else {
        result(op.forward(&st.rt, &mut st.nn.tape, x))
    }
}

fn f_pool(it: &mut dyn Interpreter, mut a: Args, max: bool, dims: usize) -> Result<Value, Exc> {
    let what = if max { "max_pool" } else { "avg_pool" };
    let what = format!("{what}{dims}d");
    // The input may come by keyword (`F.avg_pool2d(input=x, kernel_size=2)`, as d2l writes
    // it); the rest are numbered from the first positional after it.
    let positional = !a.pos.is_empty();
    let x = tensor(&a.required(0, "input")?, &what, "input")?;
    if positional {
        a.pos.remove(0);
    }
    let (kernel, stride, pad, ..) = pool_common(it, &mut a, dims)?;
    let (ceil_mode, include) = if max {
        let d = a.take(3, "dilation")?.unwrap_or(Value::Int(1));
        if ints(it, &d, dims, "dilation")? != [1, 1] {
            return Err(Exc::value_error(format!(
                "{what}: dilation other than 1 is not supported"
            )));
        }
        let ceil = truth(a.take(4, "ceil_mode")?, false)?;
        if truth(a.take(5, "return_indices")?, false)? {
            return Err(Exc::value_error(format!(
                "{what}: return_indices=True is not supported"
            )));
        }
        (ceil, true)
    } else {
        let ceil = truth(a.take(3, "ceil_mode")?, false)?;
        let include = truth(a.take(4, "count_include_pad")?, true)?;
        a.take(5, "divisor_override")?;
        (ceil, include)
    };
    a.finish(6)?;
    let op = PoolLayer {
        name: what,
        style: Style::Torch,
        max,
        span: PoolSpan::Window {
            kernel,
            stride,
            pad,
            ceil_mode,
        },
        count_include_pad: include,
        torch_repr: String::new(),
    };
    run_pool(it, op, dims, &x)
}

fn f_adaptive(it: &mut dyn Interpreter, mut a: Args, max: bool, dims: usize) -> Result<Value, Exc> {
    let what = format!("adaptive_{}_pool{dims}d", if max { "max" } else { "avg" });
    let x = tensor(&a.required(0, "input")?, &what, "input")?;
    let out = ints(it, &a.required(1, "output_size")?, dims, "output_size")?;
    a.take(2, "return_indices")?;
    a.finish(3)?;
    let op = PoolLayer {
        name: what,
        style: Style::Torch,
        max,
        span: PoolSpan::Adaptive(out),
        count_include_pad: true,
        torch_repr: String::new(),
    };
    run_pool(it, op, dims, &x)
}

fn f_batch_norm(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(&a.required(0, "input")?, "batch_norm", "input")?;
    let rm = opt_tensor(a.take(1, "running_mean")?, "batch_norm", "running_mean")?;
    let rv = opt_tensor(a.take(2, "running_var")?, "batch_norm", "running_var")?;
    let w = opt_tensor(a.take(3, "weight")?, "batch_norm", "weight")?;
    let b = opt_tensor(a.take(4, "bias")?, "batch_norm", "bias")?;
    let training = truth(a.take(5, "training")?, false)?;
    let momentum = float(a.take(6, "momentum")?, "momentum", 0.1)?;
    let eps = float(a.take(7, "eps")?, "eps", 1e-5)?;
    a.finish(8)?;
    let running = match (&rm, &rv) {
        (Some(m), Some(v)) => Some((m, v)),
        _ => None,
    };
    let st = it.state_mut();
    let out = norm::batch_norm(
        &mut st.nn.tape,
        &x,
        w.as_ref(),
        b.as_ref(),
        running,
        training,
        RunningUpdate {
            batch_weight: momentum,
            unbiased: true,
        },
        eps,
    )
    .map_err(torch_error)?;
    st.nn.tape.rename(&out.y, "NativeBatchNormBackward0");
    if let (Some((m, v)), Some(old_m), Some(old_v)) = (&out.running, &rm, &rv) {
        old_m
            .set_index(&[], crate::runtime::Operand::Array(m))
            .map_err(torch_error)?;
        old_v
            .set_index(&[], crate::runtime::Operand::Array(v))
            .map_err(torch_error)?;
    }
    Ok(wrap(out.y, Flavor::Torch))
}

fn f_layer_norm(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(&a.required(0, "input")?, "layer_norm", "input")?;
    let s = a.required(1, "normalized_shape")?;
    let dims = match &s {
        Value::Tuple(_) | Value::List(_) => it.iterate(&s)?.len(),
        _ => 1,
    };
    let w = opt_tensor(a.take(2, "weight")?, "layer_norm", "weight")?;
    let b = opt_tensor(a.take(3, "bias")?, "layer_norm", "bias")?;
    let eps = float(a.take(4, "eps")?, "eps", 1e-5)?;
    a.finish(5)?;
    let st = it.state_mut();
    let r = norm::layer_norm(&mut st.nn.tape, &x, dims, w.as_ref(), b.as_ref(), eps);
    if let Ok(y) = &r {
        st.nn.tape.rename(y, "NativeLayerNormBackward0");
    }
    result(r)
}

fn f_dropout(it: &mut dyn Interpreter, mut a: Args, channels: bool) -> Result<Value, Exc> {
    let x = tensor(&a.required(0, "input")?, "dropout", "input")?;
    let p = float(a.take(1, "p")?, "p", 0.5)?;
    let training = truth(a.take(2, "training")?, true)?;
    a.take(3, "inplace")?;
    a.finish(4)?;
    let mask: Option<Vec<usize>> = (channels && x.ndim() >= 2).then(|| {
        x.shape()
            .iter()
            .enumerate()
            .map(|(i, &d)| if i < 2 { d } else { 1 })
            .collect()
    });
    let st = it.state_mut();
    result(norm::dropout(
        &st.rt,
        &mut st.nn.tape,
        &x,
        p,
        training,
        mask.as_deref(),
    ))
}

/// Adds the functions to `torch.nn.functional`.
pub fn register_functional(m: &Module) {
    let f: [(&str, &str, BuiltinFn); 15] = [
        ("conv1d", "conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)", |it, a| f_conv(it, a, 1)),
        ("conv2d", "conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)", |it, a| f_conv(it, a, 2)),
        ("max_pool1d", "max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)", |it, a| f_pool(it, a, true, 1)),
        ("max_pool2d", "max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)", |it, a| f_pool(it, a, true, 2)),
        ("avg_pool1d", "avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True)", |it, a| f_pool(it, a, false, 1)),
        ("avg_pool2d", "avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None)", |it, a| f_pool(it, a, false, 2)),
        ("adaptive_avg_pool1d", "adaptive_avg_pool1d(input, output_size)", |it, a| f_adaptive(it, a, false, 1)),
        ("adaptive_max_pool1d", "adaptive_max_pool1d(input, output_size, return_indices=False)", |it, a| f_adaptive(it, a, true, 1)),
        ("adaptive_avg_pool2d", "adaptive_avg_pool2d(input, output_size)", |it, a| f_adaptive(it, a, false, 2)),
        ("adaptive_max_pool2d", "adaptive_max_pool2d(input, output_size, return_indices=False)", |it, a| f_adaptive(it, a, true, 2)),
        ("batch_norm", "batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05)", f_batch_norm),
        ("layer_norm", "layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05)", f_layer_norm),
        ("dropout", "dropout(input, p=0.5, training=True, inplace=False)", |it, a| f_dropout(it, a, false)),
        ("dropout2d", "dropout2d(input, p=0.5, training=True, inplace=False)", |it, a| f_dropout(it, a, true)),
        ("identity", "identity(input)", |_, mut a| a.required(0, "input")),
    ];
    for (name, doc, func) in f {
        m.set(name, builtin(name, doc, func));
    }
}

// ---- buffers --------------------------------------------------------------------------------

/// `named_buffers(prefix='', recurse=True, remove_duplicate=True)`: the running statistics.
pub fn named_buffers(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = blocks::this_core(&mut a)?;
    let prefix = match &a.take(0, "prefix")? {
        Some(Value::Str(s)) if !s.is_empty() => format!("{s}."),
        _ => String::new(),
    };
    let recurse = truth(a.take(1, "recurse")?, true)?;
    a.take(2, "remove_duplicate")?;
    a.finish(3)?;
    let values: Vec<Value> = buffer_list(&core, recurse)
        .into_iter()
        .map(|(n, p)| {
            Value::tuple(vec![
                Value::str(&format!("{prefix}{n}")),
                blocks::param_value(it, Dialect::Torch, &p),
            ])
        })
        .collect();
    blocks::iterator(it, Value::list(values))
}

/// `buffers(recurse=True)`.
pub fn buffers(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = blocks::this_core(&mut a)?;
    let recurse = truth(a.take(0, "recurse")?, true)?;
    a.finish(1)?;
    let values: Vec<Value> = buffer_list(&core, recurse)
        .into_iter()
        .map(|(_, p)| blocks::param_value(it, Dialect::Torch, &p))
        .collect();
    blocks::iterator(it, Value::list(values))
}

fn buffer_list(core: &blocks::Core, recurse: bool) -> Vec<(String, Rc<Parameter>)> {
    let all: Vec<(String, Rc<Parameter>)> = if recurse {
        blocks::structural_params(core, true)
    } else {
        core.params
            .borrow()
            .iter()
            .map(|(k, p)| (k.to_string(), p.clone()))
            .collect()
    };
    all.into_iter().filter(|(_, p)| p.buffer.get()).collect()
}
