//! Batch normalization, layer normalization and dropout on the tape, for both dialects,
//! composed from recorded runtime ops (so every device runs them and autograd differentiates
//! them without op-specific rules).
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
    if x.ndim() < 2 {
        return Err(RuntimeError::Shape(format!(
            "batch_norm: expected an input with a batch and a channel axis (at least 2-d), got shape {}",
            shape_text(x.shape())
        )));
    }
    let c = x.shape()[1];
    let mut bshape = vec![1isize; x.ndim()];
    bshape[1] = c as isize;
    let axes: Vec<isize> = (0..x.ndim() as isize).filter(|&a| a != 1).collect();
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
    let count = x.size() / c.max(1);
    let (mean, var, new_running) = if training || running.is_none() {
        if count <= 1 && training {
            let dims: Vec<String> = x.shape().iter().map(|d| d.to_string()).collect();
            return Err(RuntimeError::Value(format!(
                "Expected more than 1 value per channel when training, got input size torch.Size([{}])",
                dims.join(", ")
            )));
        }
        let mean = tape.reduce(x, ReduceOp::Mean, Some(&axes), true)?;
        let centered = bin(tape, BinaryOp::Sub, x, &mean)?;
        let sq = bin(tape, BinaryOp::Mul, &centered, &centered)?;
        let var = tape.reduce(&sq, ReduceOp::Mean, Some(&axes), true)?;
        let new_running = match running {
            Some((rm, rv)) if training => {
                // The running statistics are not part of the graph.
                let w = update.batch_weight;
                let bm = mean.reshape(&[c as isize])?;
                let mut bv = var.reshape(&[c as isize])?;
                if update.unbiased && count > 1 {
                    bv = mul_s(&bv, count as f64 / (count - 1) as f64)?;
                }
                let blend = |old: &Array, new: &Array| -> Result<Array> {
                    let a = mul_s(old, 1.0 - w)?;
                    let b = mul_s(&new.astype(old.dtype())?, w)?;
                    Array::binary(BinaryOp::Add, Operand::Array(&a), Operand::Array(&b))
                };
                Some((blend(rm, &bm)?, blend(rv, &bv)?))
            }
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
