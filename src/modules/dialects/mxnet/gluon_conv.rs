//! Gluon's convolutional-network layers: `Conv1D`/`Conv2D` (strides, padding, dilation, groups,
//! deferred `in_channels`), `MaxPool2D`/`AvgPool2D` (padding, `ceil_mode`),
//! `GlobalAvgPool2D`/`GlobalMaxPool2D`, `BatchNorm`, `Dropout`, `LayerNorm`. The layers are
//! `nn::cnn`; naming, prefixes and shared parameters are `gluon_blocks::setup`'s.
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::modules::array::blocks::{self, core_of};
use crate::modules::array::conv_args::{float, int_pair, self_arg, truth, IntWord};
use crate::nn::cnn::{
    constant_param, BatchNormLayer, ConvLayer, ConvPad, DropoutLayer, LayerNormLayer, PadMode,
    Pool1dLayer, PoolLayer, PoolSpan, Style,
};
use crate::nn::layers::{Block, BlockKind, Init, Parameter};
use crate::object::class::Class;
use crate::object::error::Exc;
use crate::object::value::{Args, BuiltinFn, Module, Value};
use crate::object::Interpreter;

use super::gluon::usize_arg;
use super::gluon_blocks::{activation_arg, setup};

thread_local! {
    static CLASSES: RefCell<Option<Vec<Rc<Class>>>> = const { RefCell::new(None) };
}

/// The layer classes (made once per thread), as subclasses of `base` (HybridBlock).
fn classes(base: Value) -> Vec<Rc<Class>> {
    CLASSES.with(|c| {
        if let Some(k) = c.borrow().as_ref() {
            return k.clone();
        }
        let layer = |name: &str, file: &str, doc: &str, init: BuiltinFn| {
            blocks::native_block_class(
                name,
                &format!("mxnet.gluon.nn.{file}"),
                base.clone(),
                doc,
                &[("__init__", init)],
            )
        };
        let list = vec![
            layer("Conv1D", "conv_layers", "Conv1D(channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout='NCW', activation=None, use_bias=True, weight_initializer=None, bias_initializer='zeros', in_channels=0): 1-d convolution.", |it, a| conv_init(it, a, 1)),
            layer("Conv2D", "conv_layers", "Conv2D(channels, kernel_size, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, layout='NCHW', activation=None, use_bias=True, weight_initializer=None, bias_initializer='zeros', in_channels=0): 2-d convolution.", |it, a| conv_init(it, a, 2)),
            layer("MaxPool1D", "conv_layers", "MaxPool1D(pool_size=2, strides=None, padding=0, layout='NCW', ceil_mode=False): the maximum of each window over (N, C, W).", |it, a| pool_init(it, a, true, 1)),
            layer("MaxPool2D", "conv_layers", "MaxPool2D(pool_size=(2, 2), strides=None, padding=0, layout='NCHW', ceil_mode=False): the maximum of each window (strides default to pool_size).", |it, a| pool_init(it, a, true, 2)),
            layer("AvgPool1D", "conv_layers", "AvgPool1D(pool_size=2, strides=None, padding=0, layout='NCW', ceil_mode=False, count_include_pad=True): the mean of each window over (N, C, W).", |it, a| pool_init(it, a, false, 1)),
            layer("AvgPool2D", "conv_layers", "AvgPool2D(pool_size=(2, 2), strides=None, padding=0, ceil_mode=False, layout='NCHW', count_include_pad=True): the mean of each window.", |it, a| pool_init(it, a, false, 2)),
            layer("GlobalAvgPool1D", "conv_layers", "GlobalAvgPool1D(layout='NCW'): the mean over each channel's whole row.", |it, a| global_init(it, a, false, 1)),
            layer("GlobalMaxPool1D", "conv_layers", "GlobalMaxPool1D(layout='NCW'): the maximum over each channel's whole row.", |it, a| global_init(it, a, true, 1)),
            layer("GlobalAvgPool2D", "conv_layers", "GlobalAvgPool2D(layout='NCHW'): the mean over each channel's whole plane.", |it, a| global_init(it, a, false, 2)),
            layer("GlobalMaxPool2D", "conv_layers", "GlobalMaxPool2D(layout='NCHW'): the maximum over each channel's whole plane.", |it, a| global_init(it, a, true, 2)),
            layer("BatchNorm", "basic_layers", "BatchNorm(axis=1, momentum=0.9, epsilon=1e-05, center=True, scale=True, use_global_stats=False, in_channels=0): batch normalization; batch statistics inside autograd.record() (training), running statistics outside.", batch_norm_init),
            layer("Dropout", "basic_layers", "Dropout(rate, axes=()): zeroes elements with probability rate while recording for training.", dropout_init),
            layer("LayerNorm", "basic_layers", "LayerNorm(axis=-1, epsilon=1e-05, center=True, scale=True, in_channels=0): normalization over the last axis.", layer_norm_init),
        ];
        *c.borrow_mut() = Some(list.clone());
        list
    })
}

/// Adds the classes to `mxnet.gluon.nn` (Conv2D and MaxPool2D replace the older ones).
pub fn register(m: &Module, base: Value) {
    for c in classes(base) {
        m.set(&c.name, c.value());
    }
}

// ---- arguments ------------------------------------------------------------------------------

/// An int or a tuple of `n` ints, as the pair the layers use (1-d in the second slot).
fn ints(
    it: &mut dyn Interpreter,
    v: Option<Value>,
    n: usize,
    default: usize,
    what: &str,
) -> Result<[usize; 2], Exc> {
    int_pair(it, v.as_ref(), n, default, what, IntWord::Integer)
}

fn layout(v: Option<Value>, want: &str) -> Result<(), Exc> {
    match &v {
        None | Some(Value::None) => Ok(()),
        Some(Value::Str(s)) if &**s == want => Ok(()),
        Some(Value::Str(s)) => Err(Exc::value_error(format!(
            "layout '{s}' is not supported; only layout='{want}' (channels first)"
        ))),
        Some(other) => Err(Exc::type_error(format!(
            "layout must be a string such as '{want}', got {}",
            other.type_name()
        ))),
    }
}

fn name_of(prefix: &str) -> String {
    prefix.trim_end_matches('_').to_string()
}

// ---- layers ---------------------------------------------------------------------------------

fn conv_init(it: &mut dyn Interpreter, mut a: Args, dims: usize) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let channels = usize_arg(&a.required(0, "channels")?, "channels")?;
    let ks = a.required(1, "kernel_size")?;
    let kernel = ints(it, Some(ks), dims, 1, "kernel_size")?;
    let stride = ints(it, a.take(2, "strides")?, dims, 1, "strides")?;
    let mut padding = ints(it, a.take(3, "padding")?, dims, 0, "padding")?;
    if dims == 1 {
        padding[0] = 0;
    }
    let dilation = ints(it, a.take(4, "dilation")?, dims, 1, "dilation")?;
    let groups = match a.take(5, "groups")? {
        Some(v) => usize_arg(&v, "groups")?,
        None => 1,
    };
    layout(a.take(6, "layout")?, if dims == 1 { "NCW" } else { "NCHW" })?;
    let act = activation_arg(a.take(7, "activation")?)?;
    let use_bias = truth(a.take(8, "use_bias")?, true)?;
    let weight_init = blocks::init_spec(a.take(9, "weight_initializer")?)?;
    let bias_init = blocks::init_spec(a.take(10, "bias_initializer")?)?;
    let in_channels = match a.take(11, "in_channels")? {
        Some(v) => usize_arg(&v, "in_channels")?,
        None => 0,
    };
    if channels == 0 || kernel.contains(&0) || stride.contains(&0) || dilation.contains(&0) {
        return Err(Exc::value_error(format!(
            "Conv{dims}D: channels, kernel_size, strides and dilation must be at least 1"
        )));
    }
    if groups == 0 || channels % groups != 0 || in_channels % groups != 0 {
        return Err(Exc::value_error(format!(
            "Conv{dims}D: channels ({channels}) and in_channels ({in_channels}) must be multiples of groups ({groups})"
        )));
    }
    setup(it, &this, &mut a, false, |prefix, find| {
        let mut wshape = vec![channels, in_channels / groups];
        wshape.extend(if dims == 1 {
            vec![kernel[1]]
        } else {
            kernel.to_vec()
        });
        let weight = find("weight").unwrap_or_else(|| {
            Parameter::new(format!("{prefix}weight"), wshape, Init::Uniform(0.07))
        });
        let bias = use_bias.then(|| {
            find("bias").unwrap_or_else(|| {
                let b = Parameter::new(format!("{prefix}bias"), vec![channels], Init::Zeros);
                b.own_init.set(true);
                b
            })
        });
        let in_channels = match weight.shape().get(1) {
            Some(&d) if d > 0 => d * groups,
            _ => in_channels,
        };
        Some(layer(
            prefix,
            Rc::new(ConvLayer {
                name: name_of(prefix),
                style: Style::Gluon,
                dims,
                channels,
                in_channels: Cell::new(in_channels),
                kernel,
                stride,
                padding: ConvPad::Fixed(padding),
                padding_mode: PadMode::Zeros,
                dilation,
                groups,
                activation: act,
                weight,
                bias,
                lazy: false,
            }),
        ))
    })?;
    a.finish(12)?;
    if let Some(core) = core_of(&this) {
        set_own_inits(&core, &[("weight", weight_init), ("bias", bias_init)]);
    }
    Ok(Value::None)
}

fn layer(prefix: &str, op: Rc<dyn crate::nn::cnn::LayerOp>) -> Rc<Block> {
    Rc::new(Block {
        name: name_of(prefix),
        kind: BlockKind::Op(op),
    })
}

/// `weight_initializer=` and the like: a built-in initializer the network-wide one does not
/// override. (A program's own Initializer here is not supported: it needs the interpreter at
/// the first forward pass through the layer's own init.)
pub(super) fn set_own_inits(core: &blocks::Core, specs: &[(&str, Option<blocks::InitSpec>)]) {
    let params = core.params.borrow();
    for (key, spec) in specs {
        if let (Some(blocks::InitSpec::Builtin(init)), Some((_, p))) =
            (spec, params.iter().find(|(k, _)| &**k == *key))
        {
            p.override_init(*init);
        }
    }
}

/// A pooling layer over `dims` (1 or 2) spatial axes: the 1-d form pools (N, C, 1, W).
fn pool_op(op: PoolLayer, dims: usize) -> Rc<dyn crate::nn::cnn::LayerOp> {
    if dims == 1 {
        Rc::new(Pool1dLayer { inner: op })
    } else {
        Rc::new(op)
    }
}

fn pool_init(it: &mut dyn Interpreter, mut a: Args, max: bool, dims: usize) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let kernel = ints(it, a.take(0, "pool_size")?, dims, 2, "pool_size")?;
    let st = a.take(1, "strides")?;
    let stride = match st {
        None | Some(Value::None) => kernel,
        v => ints(it, v, dims, 1, "strides")?,
    };
    let mut pad = ints(it, a.take(2, "padding")?, dims, 0, "padding")?;
    if dims == 1 {
        pad[0] = 0;
    }
    let want = if dims == 1 { "NCW" } else { "NCHW" };
    // MaxPool2D's and the 1-d layers' fourth argument is layout, AvgPool2D's ceil_mode.
    let (ceil_mode, include) = if max {
        layout(a.take(3, "layout")?, want)?;
        (truth(a.take(4, "ceil_mode")?, false)?, true)
    } else if dims == 1 {
        layout(a.take(3, "layout")?, want)?;
        let ceil = truth(a.take(4, "ceil_mode")?, false)?;
        (ceil, truth(a.take(5, "count_include_pad")?, true)?)
    } else {
        let ceil = truth(a.take(3, "ceil_mode")?, false)?;
        layout(a.take(4, "layout")?, want)?;
        (ceil, truth(a.take(5, "count_include_pad")?, true)?)
    };
    if kernel.contains(&0) || stride.contains(&0) {
        return Err(Exc::value_error("pool_size and strides must be at least 1"));
    }
    setup(it, &this, &mut a, false, |prefix, _| {
        Some(layer(
            prefix,
            pool_op(
                PoolLayer {
                    name: name_of(prefix),
                    style: Style::Gluon,
                    max,
                    span: PoolSpan::Window {
                        kernel,
                        stride,
                        pad,
                        ceil_mode,
                    },
                    count_include_pad: include,
                    torch_repr: String::new(),
                },
                dims,
            ),
        ))
    })?;
    a.finish(6)?;
    Ok(Value::None)
}

fn global_init(
    it: &mut dyn Interpreter,
    mut a: Args,
    max: bool,
    dims: usize,
) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    layout(a.take(0, "layout")?, if dims == 1 { "NCW" } else { "NCHW" })?;
    setup(it, &this, &mut a, false, |prefix, _| {
        Some(layer(
            prefix,
            pool_op(
                PoolLayer {
                    name: name_of(prefix),
                    style: Style::Gluon,
                    max,
                    span: PoolSpan::Global,
                    count_include_pad: true,
                    torch_repr: String::new(),
                },
                dims,
            ),
        ))
    })?;
    a.finish(1)?;
    Ok(Value::None)
}

fn batch_norm_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    if let Some(v) = a.take(0, "axis")? {
        if crate::object::ops::as_i64(&v) != Some(1) {
            return Err(Exc::value_error(
                "BatchNorm: only axis=1 (channels first) is supported",
            ));
        }
    }
    let momentum = float(a.take(1, "momentum")?, "momentum", 0.9)?;
    let eps = float(a.take(2, "epsilon")?, "epsilon", 1e-5)?;
    let center = truth(a.take(3, "center")?, true)?;
    let scale = truth(a.take(4, "scale")?, true)?;
    let global = truth(a.take(5, "use_global_stats")?, false)?;
    let inits: Vec<Option<blocks::InitSpec>> = [
        "beta_initializer",
        "gamma_initializer",
        "running_mean_initializer",
        "running_variance_initializer",
    ]
    .iter()
    .enumerate()
    .map(|(i, n)| a.take(6 + i, n).and_then(blocks::init_spec))
    .collect::<Result<_, _>>()?;
    let features = match a.take(10, "in_channels")? {
        Some(v) => usize_arg(&v, "in_channels")?,
        None => 0,
    };
    setup(it, &this, &mut a, false, |prefix, find| {
        let p = |n: &str, v: f64, buffer: bool| {
            find(n).unwrap_or_else(|| {
                constant_param(format!("{prefix}{n}"), vec![features], v, buffer, false)
            })
        };
        Some(layer(
            prefix,
            Rc::new(BatchNormLayer {
                name: name_of(prefix),
                style: Style::Gluon,
                dims: 0,
                features: Cell::new(features),
                eps,
                momentum,
                weight: Some(p("gamma", 1.0, !scale)),
                bias: Some(p("beta", 0.0, !center)),
                running_mean: Some(p("running_mean", 0.0, true)),
                running_var: Some(p("running_var", 1.0, true)),
                num_batches: None,
                use_global_stats: global,
                training: Cell::new(false),
                lazy: false,
                affine_names: ("gamma", "beta"),
            }),
        ))
    })?;
    a.finish(11)?;
    if let Some(core) = core_of(&this) {
        let mut specs = Vec::new();
        for (k, s) in ["beta", "gamma", "running_mean", "running_var"]
            .into_iter()
            .zip(inits)
        {
            specs.push((k, s));
        }
        set_own_inits(&core, &specs);
    }
    Ok(Value::None)
}

fn dropout_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let p = float(Some(a.required(0, "rate")?), "rate", 0.5)?;
    if let Some(axes) = a.take(1, "axes")? {
        if !it.iterate(&axes)?.is_empty() {
            return Err(Exc::value_error(
                "Dropout: axes is not supported; leave it empty (one mask per element)",
            ));
        }
    }
    if !(0.0..=1.0).contains(&p) {
        return Err(Exc::value_error(format!(
            "Dropout: rate must be between 0 and 1, got {}",
            crate::nn::cnn::float_text(p)
        )));
    }
    setup(it, &this, &mut a, false, |prefix, _| {
        Some(layer(
            prefix,
            Rc::new(DropoutLayer {
                style: Style::Gluon,
                p,
                channels: false,
                inplace: false,
                training: Cell::new(false),
            }),
        ))
    })?;
    a.finish(2)?;
    Ok(Value::None)
}

fn layer_norm_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    if let Some(v) = a.take(0, "axis")? {
        if crate::object::ops::as_i64(&v) != Some(-1) {
            return Err(Exc::value_error(
                "LayerNorm: only axis=-1 (the last axis) is supported",
            ));
        }
    }
    let eps = float(a.take(1, "epsilon")?, "epsilon", 1e-5)?;
    let center = truth(a.take(2, "center")?, true)?;
    let scale = truth(a.take(3, "scale")?, true)?;
    a.take(4, "beta_initializer")?;
    a.take(5, "gamma_initializer")?;
    let features = match a.take(6, "in_channels")? {
        Some(v) => usize_arg(&v, "in_channels")?,
        None => 0,
    };
    setup(it, &this, &mut a, false, |prefix, find| {
        let p = |n: &str, v: f64| {
            find(n).unwrap_or_else(|| {
                constant_param(format!("{prefix}{n}"), vec![features], v, false, false)
            })
        };
        Some(layer(
            prefix,
            Rc::new(LayerNormLayer {
                name: name_of(prefix),
                style: Style::Gluon,
                shape: vec![features],
                eps,
                weight: scale.then(|| p("gamma", 1.0)),
                bias: center.then(|| p("beta", 0.0)),
            }),
        ))
    })?;
    a.finish(7)?;
    Ok(Value::None)
}
