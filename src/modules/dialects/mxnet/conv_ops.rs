//! MXNet's convolutional-network operators: `npx.convolution`, `npx.pooling`,
//! `npx.batch_norm`, `npx.dropout` (numpy mode) and the legacy `nd.Convolution`, `nd.Pooling`,
//! `nd.BatchNorm`, `nd.Dropout`, on `nn::conv` / `nn::norm` (recorded on the tape).
use crate::modules::array::conv_args::{float, truth};
use crate::nn::conv::{self, PoolKind, Window};
use crate::nn::norm::{self, RunningUpdate};
use crate::object::error::Exc;
use crate::object::ops::wrap;
use crate::object::value::{Args, Flavor, Module, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::{Array, Operand};

use super::gluon::usize_arg;

fn array(v: &Value, what: &str) -> Result<Array, Exc> {
    v.as_array()
        .map(|a| a.array.clone())
        .ok_or_else(|| Exc::type_error(format!("{what} must be an array, got {}", v.type_name())))
}

fn opt_array(v: Option<Value>, what: &str) -> Result<Option<Array>, Exc> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(v) => array(&v, what).map(Some),
    }
}

/// MXNet's check before an operator runs (`GetContext`, src/imperative/imperative_utils.h):
/// every input on the first one's kind of device (CPU or GPU), else its `MXNetError`, as
/// MXNet 1.9.1 prints it. Inputs on two GPUs pass here and meet devarray's own check.
pub(super) fn same_context(op: &str, inputs: &[&Array]) -> Result<(), Exc> {
    let Some(first) = inputs.first().map(|a| a.device()) else {
        return Ok(());
    };
    let gpu = |d: crate::runtime::Device| !d.is_cpu();
    for (i, a) in inputs.iter().enumerate().skip(1) {
        let d = a.device();
        if gpu(d) != gpu(first) {
            let mask = |d| if gpu(d) { 2 } else { 1 };
            return Err(Exc::new(
                crate::object::error::ExcKind::MXNetError,
                format!(
                    "Traceback (most recent call last):\n  File \"../src/imperative/./imperative_utils.h\", line 73\nMXNetError: Check failed: inputs[i]->ctx().dev_mask() == ctx.dev_mask() ({} vs. {}) : Operator {op} require all inputs live on the same context. But the first argument is on {first} while the {}-th argument is on {d}",
                    mask(d),
                    mask(first),
                    i + 1
                ),
            ));
        }
    }
    Ok(())
}

/// A shape argument (`kernel=(3, 3)`, `stride=2`) as the 2-d pair the ops use (1-d in the
/// second slot); `dims` is taken from `kernel`.
/// The values as given and the pair.
type Pair = (Vec<usize>, [usize; 2]);

fn pair(
    it: &mut dyn Interpreter,
    v: Option<Value>,
    default: usize,
    what: &str,
) -> Result<Pair, Exc> {
    let vals: Vec<usize> = match v {
        None | Some(Value::None) => Vec::new(),
        Some(v @ (Value::Tuple(_) | Value::List(_))) => it
            .iterate(&v)?
            .iter()
            .map(|x| usize_arg(x, what))
            .collect::<Result<_, _>>()?,
        Some(v) => vec![usize_arg(&v, what)?],
    };
    let p = match vals.as_slice() {
        [] => [default, default],
        [one] => [1, *one],
        [a, b] => [*a, *b],
        _ => {
            return Err(Exc::value_error(format!(
                "{what}: only 1-d and 2-d operators are supported, got {} values",
                vals.len()
            )))
        }
    };
    Ok((vals, p))
}

fn done(r: crate::runtime::Result<Array>, flavor: Flavor) -> Result<Value, Exc> {
    r.map(|a| wrap(a, flavor)).map_err(Exc::from)
}

/// `convolution(data, weight, bias=None, kernel, stride, dilate, pad, num_filter, num_group,
/// no_bias)`.
fn convolution(it: &mut dyn Interpreter, mut a: Args, flavor: Flavor) -> Result<Value, Exc> {
    let x = array(&a.required(0, "data")?, "data")?;
    let w = array(&a.required(1, "weight")?, "weight")?;
    let b = opt_array(a.take(2, "bias")?, "bias")?;
    let (kdims, _) = pair(it, a.take(3, "kernel")?, 1, "kernel")?;
    let (_, stride) = pair(it, a.take(4, "stride")?, 1, "stride")?;
    let (_, dilate) = pair(it, a.take(5, "dilate")?, 1, "dilate")?;
    let (_, pad) = pair(it, a.take(6, "pad")?, 0, "pad")?;
    a.take(7, "num_filter")?;
    let groups = match a.take(8, "num_group")? {
        Some(v) => usize_arg(&v, "num_group")?,
        None => 1,
    };
    let no_bias = truth(a.take(9, "no_bias")?, false)?;
    a.take(10, "workspace")?;
    a.take(11, "cudnn_tune")?;
    a.take(12, "cudnn_off")?;
    a.take(13, "layout")?;
    a.finish(14)?;
    let mut inputs = vec![&x, &w];
    inputs.extend(b.as_ref());
    same_context("Convolution", &inputs)?;
    let bias = if no_bias { None } else { b };
    let st = it.state_mut();
    let r = if kdims.len() == 1 || x.ndim() == 3 {
        conv::conv1d(
            &st.rt,
            &mut st.nn.tape,
            &x,
            &w,
            bias.as_ref(),
            stride[1],
            (pad[1], pad[1]),
            dilate[1],
            groups,
        )
    } else {
        let win = Window {
            kernel: [1, 1],
            stride,
            pad: [(pad[0], pad[0]), (pad[1], pad[1])],
            dilation: dilate,
        };
        conv::conv2d(&st.rt, &mut st.nn.tape, &x, &w, bias.as_ref(), &win, groups)
    };
    done(r, flavor)
}

/// `pooling(data, kernel, pool_type='max', global_pool=False, stride, pad,
/// pooling_convention='valid', count_include_pad=True)`.
fn pooling(it: &mut dyn Interpreter, mut a: Args, flavor: Flavor) -> Result<Value, Exc> {
    let x = array(&a.required(0, "data")?, "data")?;
    let (_, kernel) = pair(it, a.take(1, "kernel")?, 1, "kernel")?;
    let max = match &a.take(2, "pool_type")? {
        None => true,
        Some(Value::Str(s)) if &**s == "max" => true,
        Some(Value::Str(s)) if &**s == "avg" => false,
        Some(other) => {
            return Err(Exc::value_error(format!(
                "pool_type must be 'max' or 'avg', got {}",
                crate::object::format::repr(it, other)?
            )))
        }
    };
    let global = truth(a.take(3, "global_pool")?, false)?;
    a.take(4, "cudnn_off")?;
    let full = match &a.take(5, "pooling_convention")? {
        None => false,
        Some(Value::Str(s)) if &**s == "valid" => false,
        Some(Value::Str(s)) if &**s == "full" => true,
        Some(_) => {
            return Err(Exc::value_error(
                "pooling_convention must be 'valid' or 'full'",
            ))
        }
    };
    let (_, stride) = pair(it, a.take(6, "stride")?, 1, "stride")?;
    let (_, pad) = pair(it, a.take(7, "pad")?, 0, "pad")?;
    a.take(8, "p_value")?;
    let include = truth(a.take(9, "count_include_pad")?, true)?;
    a.take(10, "layout")?;
    a.finish(11)?;
    let st = it.state_mut();
    let (rt, tape) = (&st.rt, &mut st.nn.tape);
    let r = if global {
        conv::global_pool2d(rt, tape, &x, max)
    } else {
        let kind = if max {
            PoolKind::Max
        } else {
            PoolKind::Avg {
                count_include_pad: include,
            }
        };
        conv::pool2d(
            rt,
            tape,
            &x,
            &Window::new(kernel, stride, pad),
            kind,
            full,
            false,
        )
    };
    done(r, flavor)
}

/// `batch_norm(x, gamma, beta, running_mean, running_var, eps=1e-3, momentum=0.9,
/// fix_gamma=True, use_global_stats=False)`: batch statistics while recording for training.
fn batch_norm(it: &mut dyn Interpreter, mut a: Args, flavor: Flavor) -> Result<Value, Exc> {
    let x = array(&a.required(0, "data")?, "data")?;
    let gamma = array(&a.required(1, "gamma")?, "gamma")?;
    let beta = array(&a.required(2, "beta")?, "beta")?;
    let rm = array(&a.required(3, "moving_mean")?, "moving_mean")?;
    let rv = array(&a.required(4, "moving_var")?, "moving_var")?;
    let eps = float(a.take(5, "eps")?, "eps", 1e-3)?;
    let momentum = float(a.take(6, "momentum")?, "momentum", 0.9)?;
    let fix_gamma = truth(a.take(7, "fix_gamma")?, true)?;
    let global = truth(a.take(8, "use_global_stats")?, false)?;
    a.take(9, "output_mean_var")?;
    a.take(10, "axis")?;
    a.take(11, "cudnn_off")?;
    a.finish(12)?;
    same_context("BatchNorm", &[&x, &gamma, &beta, &rm, &rv])?;
    let st = it.state_mut();
    let training = st.nn.tape.is_recording() && st.nn.tape.is_training() && !global;
    let out = norm::batch_norm(
        &mut st.nn.tape,
        &x,
        (!fix_gamma).then_some(&gamma),
        Some(&beta),
        Some((&rm, &rv)),
        training,
        RunningUpdate {
            batch_weight: 1.0 - momentum,
            unbiased: false,
        },
        eps,
    )?;
    if let Some((m, v)) = &out.running {
        rm.set_index(&[], Operand::Array(m))?;
        rv.set_index(&[], Operand::Array(v))?;
    }
    Ok(wrap(out.y, flavor))
}

/// `dropout(data, p=0.5, mode='training')`: active while recording for training (or always
/// with `mode='always'`).
fn dropout(it: &mut dyn Interpreter, mut a: Args, flavor: Flavor) -> Result<Value, Exc> {
    let x = array(&a.required(0, "data")?, "data")?;
    let p = float(a.take(1, "p")?, "p", 0.5)?;
    let always = matches!(&a.take(2, "mode")?, Some(Value::Str(s)) if &**s == "always");
    a.take(3, "axes")?;
    a.take(4, "cudnn_off")?;
    a.finish(5)?;
    let st = it.state_mut();
    let training = always || (st.nn.tape.is_recording() && st.nn.tape.is_training());
    done(
        norm::dropout(&st.rt, &mut st.nn.tape, &x, p, training, None),
        flavor,
    )
}

/// `npx.convolution`, `npx.pooling`, `npx.batch_norm`, `npx.dropout`.
pub fn register_npx(m: &Module) {
    m.set("convolution", builtin("convolution", "convolution(data, weight, bias=None, kernel=(), stride=(), dilate=(), pad=(), num_filter=1, num_group=1, no_bias=False): 1-d or 2-d convolution.", |it, a| convolution(it, a, Flavor::Np)));
    m.set("pooling", builtin("pooling", "pooling(data, kernel=(), pool_type='max', global_pool=False, pooling_convention='valid', stride=(), pad=(), count_include_pad=True): max or average pooling.", |it, a| pooling(it, a, Flavor::Np)));
    m.set("batch_norm", builtin("batch_norm", "batch_norm(x, gamma, beta, running_mean, running_var, eps=0.001, momentum=0.9, fix_gamma=True, use_global_stats=False): batch normalization over axis 1.", |it, a| batch_norm(it, a, Flavor::Np)));
    m.set("dropout", builtin("dropout", "dropout(data, p=0.5, mode='training'): zeroes elements with probability p while recording for training.", |it, a| dropout(it, a, Flavor::Np)));
}

/// The legacy `nd.Convolution`, `nd.Pooling`, `nd.BatchNorm`, `nd.Dropout`.
pub fn register_nd(m: &Module) {
    m.set("Convolution", builtin("Convolution", "Convolution(data, weight, bias=None, kernel=(), stride=(), dilate=(), pad=(), num_filter=1, num_group=1, no_bias=False): 1-d or 2-d convolution.", |it, a| convolution(it, a, Flavor::Nd)));
    m.set("Pooling", builtin("Pooling", "Pooling(data, kernel=(), pool_type='max', global_pool=False, pooling_convention='valid', stride=(), pad=(), count_include_pad=True): max or average pooling.", |it, a| pooling(it, a, Flavor::Nd)));
    m.set("BatchNorm", builtin("BatchNorm", "BatchNorm(data, gamma, beta, moving_mean, moving_var, eps=0.001, momentum=0.9, fix_gamma=True, use_global_stats=False): batch normalization over axis 1.", |it, a| batch_norm(it, a, Flavor::Nd)));
    m.set("Dropout", builtin("Dropout", "Dropout(data, p=0.5, mode='training'): zeroes elements with probability p while recording for training.", |it, a| dropout(it, a, Flavor::Nd)));
}
