//! Batch normalization, layer normalization and dropout on the tape, for both dialects.
//! Batch norm is one primitive op (`Array::batch_norm`, one tape node); the others, and batch
//! norm's plain form (what the conformance suite checks it against, `conv::plain_paths`), are
//! composed from recorded runtime ops.
use super::autograd::Tape;
use crate::runtime::{
    Array, BinaryOp, Operand, ReduceOp, Result, Runtime, RuntimeError, Scalar, UnaryOp,
};

/// `a * s`, not recorded.
fn mul_s(a: &Array, s: f64) -> Result<Array> {
    Array::binary(
        BinaryOp::Mul,
        Operand::Array(a),
        Operand::Scalar(Scalar::Float(s)),
    )
}

fn shape_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

fn bin(tape: &mut Tape, op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    tape.binary(op, Operand::Array(a), Operand::Array(b))
}

fn bin_s(tape: &mut Tape, op: BinaryOp, a: &Array, s: f64) -> Result<Array> {
    tape.binary(op, Operand::Array(a), Operand::Scalar(Scalar::Float(s)))
}

/// How the running statistics move after a training batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunningUpdate {
    /// The weight of the batch's statistic: PyTorch's `momentum` (0.1), MXNet's `1 - momentum`.
    pub batch_weight: f64,
    /// PyTorch keeps the unbiased (n - 1) variance; MXNet the biased one.
    pub unbiased: bool,
}

/// What a batch normalization returns: the output and, after a training batch with running
/// statistics, their new values (the caller stores them: nothing here mutates).
pub struct BatchNormOut {
    pub y: Array,
    pub running: Option<(Array, Array)>,
}

/// Batch normalization over every axis but 1 of `x` (N, C, ...). With `training` the batch's
/// statistics normalize (and update `running` when given); without, `running` does.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    tape: &mut Tape,
    x: &Array,
    gamma: Option<&Array>,
    beta: Option<&Array>,
    running: Option<(&Array, &Array)>,
    training: bool,
    update: RunningUpdate,
    eps: f64,
) -> Result<BatchNormOut> {
    let same = |a: Option<&Array>| a.is_none_or(|a| a.dtype() == x.dtype());
    let fused = x.dtype().has_float_kernels() && same(gamma) && same(beta) && !super::conv::plain();
    if !fused {
        return batch_norm_plain(tape, x, gamma, beta, running, training, update, eps);
    }
    check_shapes(x, gamma, beta, running)?;
    let c = x.shape()[1];
    let count = x.size() / c.max(1);
    let batch_stats = training || running.is_none();
    if count <= 1 && training {
        return Err(too_few_values(x));
    }
    // Running statistics of another dtype normalize as the input's dtype.
    let cast = |a: &Array| -> Result<Array> {
        if a.dtype() == x.dtype() {
            Ok(a.clone())
        } else {
            a.astype(x.dtype())
        }
    };
    let given = match running {
        Some((m, v)) if !batch_stats => Some((cast(m)?, cast(v)?)),
        _ => None,
    };
    let out = tape.batch_norm(x, gamma, beta, given.as_ref().map(|(m, v)| (m, v)), eps)?;
    let new_running = match running {
        Some((rm, rv)) if training => {
            Some(blend_running(rm, rv, &out.mean, &out.var, count, update)?)
        }
        _ => None,
    };
    Ok(BatchNormOut {
        y: out.y,
        running: new_running,
    })
}

/// The running statistics after a batch with mean `bm` and biased variance `bv` ((C,) arrays):
/// `old * (1 - w) + new * w`, the variance made unbiased first for PyTorch. Not recorded.
fn blend_running(
    rm: &Array,
    rv: &Array,
    bm: &Array,
    bv: &Array,
    count: usize,
    update: RunningUpdate,
) -> Result<(Array, Array)> {
    let w = update.batch_weight;
    let c = rm.size() as isize;
    let bm = bm.reshape(&[c])?;
    let mut bv = bv.reshape(&[c])?;
    if update.unbiased && count > 1 {
        bv = mul_s(&bv, count as f64 / (count - 1) as f64)?;
    }
    let blend = |old: &Array, new: &Array| -> Result<Array> {
        let a = mul_s(old, 1.0 - w)?;
        let b = mul_s(&new.astype(old.dtype())?, w)?;
        Array::binary(BinaryOp::Add, Operand::Array(&a), Operand::Array(&b))
    };
    Ok((blend(rm, &bm)?, blend(rv, &bv)?))
}

/// PyTorch's error for a training batch with one value per channel.
fn too_few_values(x: &Array) -> RuntimeError {
    let dims: Vec<String> = x.shape().iter().map(|d| d.to_string()).collect();
    RuntimeError::Value(format!(
        "Expected more than 1 value per channel when training, got input size torch.Size([{}])",
        dims.join(", ")
    ))
}

/// What every batch norm checks first: an (N, C, ...) input and (C,) statistics.
fn check_shapes(
    x: &Array,
    gamma: Option<&Array>,
    beta: Option<&Array>,
    running: Option<(&Array, &Array)>,
) -> Result<()> {
    if x.ndim() < 2 {
        return Err(RuntimeError::Shape(format!(
            "batch_norm: expected an input with a batch and a channel axis (at least 2-d), got shape {}",
            shape_text(x.shape())
        )));
    }
    let c = x.shape()[1];
    for (what, a) in [
        ("weight", gamma),
        ("bias", beta),
        ("running_mean", running.map(|r| r.0)),
        ("running_var", running.map(|r| r.1)),
    ] {
        if let Some(a) = a {
            if a.size() != c {
                return Err(RuntimeError::Shape(format!(
                    "batch_norm: {what} has {} elements but the input has {c} channels (shape {})",
                    a.size(),
                    shape_text(x.shape())
                )));
            }
        }
    }
    Ok(())
}

/// `batch_norm` composed from recorded runtime ops (about eight activation-sized nodes).
#[allow(clippy::too_many_arguments)]
fn batch_norm_plain(
    tape: &mut Tape,
    x: &Array,
    gamma: Option<&Array>,
    beta: Option<&Array>,
    running: Option<(&Array, &Array)>,
    training: bool,
    update: RunningUpdate,
    eps: f64,
) -> Result<BatchNormOut> {
    check_shapes(x, gamma, beta, running)?;
    let c = x.shape()[1];
    let mut bshape = vec![1isize; x.ndim()];
    bshape[1] = c as isize;
    let axes: Vec<isize> = (0..x.ndim() as isize).filter(|&a| a != 1).collect();
    let count = x.size() / c.max(1);
    let (mean, var, new_running) = if training || running.is_none() {
        if count <= 1 && training {
            return Err(too_few_values(x));
        }
        let mean = tape.reduce(x, ReduceOp::Mean, Some(&axes), true)?;
        let centered = bin(tape, BinaryOp::Sub, x, &mean)?;
        let sq = bin(tape, BinaryOp::Mul, &centered, &centered)?;
        let var = tape.reduce(&sq, ReduceOp::Mean, Some(&axes), true)?;
        // The running statistics are not part of the graph.
        let new_running = match running {
            Some((rm, rv)) if training => Some(blend_running(rm, rv, &mean, &var, count, update)?),
            _ => None,
        };
        (mean, var, new_running)
    } else {
        let (rm, rv) = running.ok_or_else(|| {
            RuntimeError::Value("batch_norm: running statistics are needed in eval mode".into())
        })?;
        (tape.reshape(rm, &bshape)?, tape.reshape(rv, &bshape)?, None)
    };
    // (x - mean) * (1 / sqrt(var + eps)), as both frameworks' kernels compute it.
    let centered = bin(tape, BinaryOp::Sub, x, &mean)?;
    let denom = bin_s(tape, BinaryOp::Add, &var, eps)?;
    let std = tape.unary(&denom, UnaryOp::Sqrt)?;
    let invstd = tape.unary(&std, UnaryOp::Reciprocal)?;
    let mut y = bin(tape, BinaryOp::Mul, &centered, &invstd)?;
    if let Some(g) = gamma {
        let g = tape.reshape(g, &bshape)?;
        y = bin(tape, BinaryOp::Mul, &y, &g)?;
    }
    if let Some(b) = beta {
        let b = tape.reshape(b, &bshape)?;
        y = bin(tape, BinaryOp::Add, &y, &b)?;
    }
    Ok(BatchNormOut {
        y,
        running: new_running,
    })
}

/// Layer normalization over the last `dims` axes (biased variance, as both frameworks).
pub fn layer_norm(
    tape: &mut Tape,
    x: &Array,
    dims: usize,
    gamma: Option<&Array>,
    beta: Option<&Array>,
    eps: f64,
) -> Result<Array> {
    if dims == 0 || dims > x.ndim() {
        return Err(RuntimeError::Shape(format!(
            "layer_norm: cannot normalize the last {dims} axes of an input of shape {}",
            shape_text(x.shape())
        )));
    }
    let nd = x.ndim() as isize;
    let axes: Vec<isize> = (nd - dims as isize..nd).collect();
    let mean = tape.reduce(x, ReduceOp::Mean, Some(&axes), true)?;
    let centered = bin(tape, BinaryOp::Sub, x, &mean)?;
    let sq = bin(tape, BinaryOp::Mul, &centered, &centered)?;
    let var = tape.reduce(&sq, ReduceOp::Mean, Some(&axes), true)?;
    let denom = bin_s(tape, BinaryOp::Add, &var, eps)?;
    let denom = tape.unary(&denom, UnaryOp::Sqrt)?;
    let mut y = bin(tape, BinaryOp::Div, &centered, &denom)?;
    if let Some(g) = gamma {
        y = bin(tape, BinaryOp::Mul, &y, g)?;
    }
    if let Some(b) = beta {
        y = bin(tape, BinaryOp::Add, &y, b)?;
    }
    Ok(y)
}

/// Dropout: in training each element is zeroed with probability `p` and the rest scaled by
/// 1/(1-p) (the mask drawn from the dialect's generator on `x`'s device); otherwise `x`.
/// `channel_shape` (Dropout2d) drops whole channels: the mask has that shape and broadcasts.
pub fn dropout(
    rt: &Runtime,
    tape: &mut Tape,
    x: &Array,
    p: f64,
    training: bool,
    channel_shape: Option<&[usize]>,
) -> Result<Array> {
    if !(0.0..=1.0).contains(&p) {
        return Err(RuntimeError::Value(format!(
            "dropout probability has to be between 0 and 1, but got {p}"
        )));
    }
    if !training || p == 0.0 {
        return Ok(x.clone());
    }
    let shape = channel_shape.unwrap_or(x.shape());
    let mask = if p >= 1.0 {
        rt.zeros(shape, x.dtype(), x.device())?
    } else if rt.sampler() == crate::runtime::Sampler::Torch {
        // PyTorch's `bernoulli_(1 - p)`: one double per element from its CPU generator's
        // 64-bit draws (what `torch.rand(dtype=float64)` gives), kept when below 1 - p, so a
        // seeded program drops the same units as PyTorch.
        let u = rt.uniform(0.0, 1.0, shape, crate::runtime::DType::Float64, x.device())?;
        let keep = Array::binary(
            BinaryOp::Lt,
            Operand::Array(&u),
            Operand::Scalar(Scalar::Float(1.0 - p)),
        )?;
        mul_s(&keep.astype(x.dtype())?, 1.0 / (1.0 - p))?
    } else {
        let u = rt.uniform(0.0, 1.0, shape, x.dtype(), x.device())?;
        let keep = Array::binary(
            BinaryOp::Ge,
            Operand::Array(&u),
            Operand::Scalar(Scalar::Float(p)),
        )?;
        mul_s(&keep.astype(x.dtype())?, 1.0 / (1.0 - p))?
    };
    bin(tape, BinaryOp::Mul, x, &mask)
}
