//! Loss functions of both dialects and the activations they share, composed from recorded
//! tape ops so that every one is differentiable on every device without rules of its own.
//! Numerically stable forms throughout: log-softmax subtracts the row max (a constant for the
//! gradient), softplus is `max(x, 0) + log(1 + exp(-|x|))`.
use super::autograd::Tape;
use crate::runtime::shape::{normalize_axis, shape_tuple};
use crate::runtime::{
    Array, BinaryOp, DType, Operand, ReduceOp, Result, Runtime, RuntimeError, Scalar, UnaryOp,
};

fn s(v: f64) -> Scalar {
    Scalar::Float(v)
}

fn bin(tape: &mut Tape, op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    tape.binary(op, Operand::Array(a), Operand::Array(b))
}

fn bin_s(tape: &mut Tape, op: BinaryOp, a: &Array, v: f64) -> Result<Array> {
    tape.binary(op, Operand::Array(a), Operand::Scalar(s(v)))
}

/// `v op a` with a scalar on the left.
fn s_bin(tape: &mut Tape, op: BinaryOp, v: f64, a: &Array) -> Result<Array> {
    tape.binary(op, Operand::Scalar(s(v)), Operand::Array(a))
}

/// The device error every other two-array op gives.
pub fn same_device(op: &str, pred: &Array, label: &Array) -> Result<()> {
    if pred.device() != label.device() {
        return Err(RuntimeError::DeviceMismatch {
            op: op.into(),
            first: pred.device(),
            second: label.device(),
        });
    }
    Ok(())
}

// ---- activations ---------------------------------------------------------------------------

/// `log(softmax(x))` along `axis`, without overflow.
pub fn log_softmax(tape: &mut Tape, x: &Array, axis: isize) -> Result<Array> {
    let ax = [normalize_axis(axis, x.ndim(), "log_softmax")? as isize];
    // The max only keeps exp in range; it is a constant for the gradient.
    let shift = x.reduce(ReduceOp::Max, Some(&ax), true)?;
    let z = bin(tape, BinaryOp::Sub, x, &shift)?;
    let e = tape.unary(&z, UnaryOp::Exp)?;
    let total = tape.reduce(&e, ReduceOp::Sum, Some(&ax), true)?;
    let lse = tape.unary(&total, UnaryOp::Log)?;
    bin(tape, BinaryOp::Sub, &z, &lse)
}

pub fn softmax(tape: &mut Tape, x: &Array, axis: isize) -> Result<Array> {
    let ax = [normalize_axis(axis, x.ndim(), "softmax")? as isize];
    let shift = x.reduce(ReduceOp::Max, Some(&ax), true)?;
    let z = bin(tape, BinaryOp::Sub, x, &shift)?;
    let e = tape.unary(&z, UnaryOp::Exp)?;
    let total = tape.reduce(&e, ReduceOp::Sum, Some(&ax), true)?;
    bin(tape, BinaryOp::Div, &e, &total)
}

/// `log(1 + exp(x))` as `max(x, 0) + log(1 + exp(-|x|))`.
pub fn softplus(tape: &mut Tape, x: &Array) -> Result<Array> {
    let pos = tape.unary(x, UnaryOp::Relu)?;
    let abs = tape.unary(x, UnaryOp::Abs)?;
    let neg = tape.unary(&abs, UnaryOp::Neg)?;
    let e = tape.unary(&neg, UnaryOp::Exp)?;
    let one_plus = bin_s(tape, BinaryOp::Add, &e, 1.0)?;
    let log = tape.unary(&one_plus, UnaryOp::Log)?;
    bin(tape, BinaryOp::Add, &pos, &log)
}

/// `max(x, 0) + slope * min(x, 0)`.
pub fn leaky_relu(tape: &mut Tape, x: &Array, slope: f64) -> Result<Array> {
    let pos = bin_s(tape, BinaryOp::Maximum, x, 0.0)?;
    let neg = bin_s(tape, BinaryOp::Minimum, x, 0.0)?;
    let neg = bin_s(tape, BinaryOp::Mul, &neg, slope)?;
    bin(tape, BinaryOp::Add, &pos, &neg)
}

/// `max(x, 0) + alpha * (exp(min(x, 0)) - 1)`.
pub fn elu(tape: &mut Tape, x: &Array, alpha: f64) -> Result<Array> {
    let pos = bin_s(tape, BinaryOp::Maximum, x, 0.0)?;
    let neg = bin_s(tape, BinaryOp::Minimum, x, 0.0)?;
    let e = tape.unary(&neg, UnaryOp::Exp)?;
    let em1 = bin_s(tape, BinaryOp::Sub, &e, 1.0)?;
    let scaled = bin_s(tape, BinaryOp::Mul, &em1, alpha)?;
    bin(tape, BinaryOp::Add, &pos, &scaled)
}

/// `x * sigmoid(x)`.
pub fn silu(tape: &mut Tape, x: &Array) -> Result<Array> {
    let sig = tape.unary(x, UnaryOp::Sigmoid)?;
    bin(tape, BinaryOp::Mul, x, &sig)
}

/// erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, under float32's
/// resolution near 1), from recorded ops so that GELU stays differentiable.
fn erf(tape: &mut Tape, x: &Array) -> Result<Array> {
    const P: f64 = 0.327_591_1;
    const A: [f64; 5] = [
        0.254_829_592,
        -0.284_496_736,
        1.421_413_741,
        -1.453_152_027,
        1.061_405_429,
    ];
    let sign = x.unary(UnaryOp::Sign)?.astype(x.dtype())?;
    let ax = tape.unary(x, UnaryOp::Abs)?;
    let den = bin_s(tape, BinaryOp::Mul, &ax, P)?;
    let den = bin_s(tape, BinaryOp::Add, &den, 1.0)?;
    let t = s_bin(tape, BinaryOp::Div, 1.0, &den)?;
    // Horner: ((((a5 t + a4) t + a3) t + a2) t + a1) t
    let mut poly = bin_s(tape, BinaryOp::Mul, &t, A[4])?;
    for a in A[..4].iter().rev() {
        let shifted = bin_s(tape, BinaryOp::Add, &poly, *a)?;
        poly = bin(tape, BinaryOp::Mul, &shifted, &t)?;
    }
    let sq = tape.unary(&ax, UnaryOp::Square)?;
    let neg = tape.unary(&sq, UnaryOp::Neg)?;
    let e = tape.unary(&neg, UnaryOp::Exp)?;
    let tail = bin(tape, BinaryOp::Mul, &poly, &e)?;
    let y = s_bin(tape, BinaryOp::Sub, 1.0, &tail)?;
    bin(tape, BinaryOp::Mul, &y, &sign)
}

/// GELU: `x * Phi(x)` exactly (erf), or PyTorch's `approximate='tanh'` form.
pub fn gelu(tape: &mut Tape, x: &Array, tanh: bool) -> Result<Array> {
    let inner = if tanh {
        // 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
        let cube = bin_s(tape, BinaryOp::Pow, x, 3.0)?;
        let cube = bin_s(tape, BinaryOp::Mul, &cube, 0.044_715)?;
        let sum = bin(tape, BinaryOp::Add, x, &cube)?;
        let arg = bin_s(
            tape,
            BinaryOp::Mul,
            &sum,
            (2.0 / std::f64::consts::PI).sqrt(),
        )?;
        tape.unary(&arg, UnaryOp::Tanh)?
    } else {
        let arg = bin_s(tape, BinaryOp::Mul, x, std::f64::consts::FRAC_1_SQRT_2)?;
        erf(tape, &arg)?
    };
    let one_plus = bin_s(tape, BinaryOp::Add, &inner, 1.0)?;
    let half = bin_s(tape, BinaryOp::Mul, &one_plus, 0.5)?;
    bin(tape, BinaryOp::Mul, x, &half)
}

// ---- shared pieces ---------------------------------------------------------------------------

/// A 0/1 array of `pred`'s shape that is 1 where the index along `axis` equals `label`
/// (which has `pred`'s shape without `axis`). Labels outside the classes select nothing.
fn one_hot_along(rt: &Runtime, pred: &Array, label: &Array, axis: usize) -> Result<Array> {
    let classes = pred.shape().get(axis).copied().unwrap_or(1);
    let mut label_shape: Vec<isize> = label.shape().iter().map(|&d| d as isize).collect();
    label_shape.insert(axis.min(label_shape.len()), 1);
    let labels = label.astype(pred.dtype())?.reshape(&label_shape)?;
    let mut row_shape = vec![1isize; pred.ndim()];
    if let Some(slot) = row_shape.get_mut(axis) {
        *slot = classes as isize;
    }
    let row = rt
        .arange(0.0, classes as f64, 1.0, pred.dtype(), pred.device())?
        .reshape(&row_shape)?;
    Array::binary(BinaryOp::Eq, Operand::Array(&labels), Operand::Array(&row))?.astype(pred.dtype())
}

/// `sum(x * onehot, axis)`: the entry each label selects.
fn pick(
    rt: &Runtime,
    tape: &mut Tape,
    x: &Array,
    label: &Array,
    axis: usize,
    keepdims: bool,
) -> Result<Array> {
    let onehot = one_hot_along(rt, x, label, axis)?;
    let picked = bin(tape, BinaryOp::Mul, x, &onehot)?;
    tape.reduce(&picked, ReduceOp::Sum, Some(&[axis as isize]), keepdims)
}

// ---- Gluon losses (one value per sample) ---------------------------------------------------------

/// Gluon's `mean(loss, axis=batch_axis, exclude=True)`.
pub fn mean_except_batch(tape: &mut Tape, loss: &Array, batch_axis: usize) -> Result<Array> {
    let axes: Vec<isize> = (0..loss.ndim())
        .filter(|&i| i != batch_axis)
        .map(|i| i as isize)
        .collect();
    if axes.is_empty() {
        return Ok(loss.clone());
    }
    tape.reduce(loss, ReduceOp::Mean, Some(&axes), false)
}

/// Gluon reshapes the label like the prediction (same number of elements).
fn label_like(op: &str, pred: &Array, label: &Array) -> Result<Array> {
    same_device(op, pred, label)?;
    if label.shape() == pred.shape() {
        return Ok(label.clone());
    }
    if label.size() != pred.size() {
        return Err(RuntimeError::Shape(format!(
            "{op}: the label has shape {} but the prediction has shape {}; the label is reshaped like the prediction, so it needs the same number of elements ({})",
            shape_tuple(label.shape()),
            shape_tuple(pred.shape()),
            pred.size()
        )));
    }
    label.reshape(&pred.shape().iter().map(|&d| d as isize).collect::<Vec<_>>())
}

/// What every Gluon loss has besides its own options.
#[derive(Clone, Copy, Debug)]
pub struct GluonCommon {
    pub weight: Option<f64>,
    pub batch_axis: isize,
}

/// Gluon's `_apply_weighting` then the per-sample mean.
fn gluon_finish(
    tape: &mut Tape,
    loss: Array,
    weight: Option<f64>,
    sample_weight: Option<&Array>,
    batch_axis: isize,
) -> Result<Array> {
    let mut loss = loss;
    if let Some(sw) = sample_weight {
        same_device("loss", &loss, sw)?;
        loss = bin(tape, BinaryOp::Mul, &loss, sw)?;
    }
    if let Some(w) = weight {
        loss = bin_s(tape, BinaryOp::Mul, &loss, w)?;
    }
    let axis = if loss.ndim() == 0 {
        0
    } else {
        normalize_axis(batch_axis, loss.ndim(), "loss")?
    };
    mean_except_batch(tape, &loss, axis)
}

/// The Gluon losses.
#[derive(Clone, Copy, Debug)]
pub enum GluonLoss {
    L2,
    L1,
    SoftmaxCe {
        axis: isize,
        sparse_label: bool,
        from_logits: bool,
    },
    SigmoidBce {
        from_sigmoid: bool,
    },
    Huber {
        rho: f64,
    },
}

impl GluonLoss {
    pub fn name(&self) -> &'static str {
        match self {
            GluonLoss::L2 => "L2Loss",
            GluonLoss::L1 => "L1Loss",
            GluonLoss::SoftmaxCe { .. } => "SoftmaxCrossEntropyLoss",
            GluonLoss::SigmoidBce { .. } => "SigmoidBinaryCrossEntropyLoss",
            GluonLoss::Huber { .. } => "HuberLoss",
        }
    }

    /// `loss(pred, label, sample_weight=None)`: one value per sample.
    pub fn apply(
        &self,
        rt: &Runtime,
        tape: &mut Tape,
        common: GluonCommon,
        pred: &Array,
        label: &Array,
        sample_weight: Option<&Array>,
    ) -> Result<Array> {
        let name = self.name();
        let (loss, weight) = match *self {
            GluonLoss::L2 => {
                let label = label_like(name, pred, label)?;
                let d = bin(tape, BinaryOp::Sub, &label, pred)?;
                let sq = tape.unary(&d, UnaryOp::Square)?;
                (sq, Some(common.weight.unwrap_or(1.0) / 2.0))
            }
            GluonLoss::L1 => {
                let label = label_like(name, pred, label)?;
                let d = bin(tape, BinaryOp::Sub, &label, pred)?;
                (tape.unary(&d, UnaryOp::Abs)?, common.weight)
            }
            GluonLoss::Huber { rho } => {
                let label = label_like(name, pred, label)?;
                let d = bin(tape, BinaryOp::Sub, &label, pred)?;
                (huber(tape, &d, rho)?, common.weight)
            }
            GluonLoss::SigmoidBce { from_sigmoid } => {
                let label = label_like(name, pred, label)?;
                let loss = if from_sigmoid {
                    // -(log(p + 1e-12) * y + log(1 - p + 1e-12) * (1 - y))
                    let lp = bin_s(tape, BinaryOp::Add, pred, 1e-12)?;
                    let lp = tape.unary(&lp, UnaryOp::Log)?;
                    let one_minus = s_bin(tape, BinaryOp::Sub, 1.0 + 1e-12, pred)?;
                    let lq = tape.unary(&one_minus, UnaryOp::Log)?;
                    let ny = s_bin(tape, BinaryOp::Sub, 1.0, &label)?;
                    let a = bin(tape, BinaryOp::Mul, &lp, &label)?;
                    let b = bin(tape, BinaryOp::Mul, &lq, &ny)?;
                    let sum = bin(tape, BinaryOp::Add, &a, &b)?;
                    tape.unary(&sum, UnaryOp::Neg)?
                } else {
                    bce_logits(tape, pred, &label)?
                };
                (loss, common.weight)
            }
            GluonLoss::SoftmaxCe {
                axis,
                sparse_label,
                from_logits,
            } => {
                same_device(name, pred, label)?;
                let ax = normalize_axis(axis, pred.ndim(), name)?;
                let logp = if from_logits {
                    pred.clone()
                } else {
                    log_softmax(tape, pred, ax as isize)?
                };
                let loss = if sparse_label {
                    let mut want = pred.shape().to_vec();
                    want.remove(ax);
                    if label.size() != want.iter().product::<usize>() {
                        return Err(RuntimeError::Shape(format!(
                            "{name}: the label has shape {} but the prediction {} needs one class index per sample, shape {}",
                            shape_tuple(label.shape()),
                            shape_tuple(pred.shape()),
                            shape_tuple(&want)
                        )));
                    }
                    let label =
                        label.reshape(&want.iter().map(|&d| d as isize).collect::<Vec<_>>())?;
                    // MXNet's pick clips out-of-range indices to the last class.
                    let classes = pred.shape().get(ax).copied().unwrap_or(1);
                    let label = label.clip(Some(0.0), Some(classes as f64 - 1.0))?;
                    // Gluon keeps the class axis (pick(..., keepdims=True)) and then averages
                    // over every axis but the batch axis.
                    let picked = pick(rt, tape, &logp, &label, ax, true)?;
                    tape.unary(&picked, UnaryOp::Neg)?
                } else {
                    let label = label_like(name, pred, label)?;
                    let prod = bin(tape, BinaryOp::Mul, &logp, &label)?;
                    let sum = tape.reduce(&prod, ReduceOp::Sum, Some(&[ax as isize]), true)?;
                    tape.unary(&sum, UnaryOp::Neg)?
                };
                (loss, common.weight)
            }
        };
        gluon_finish(tape, loss, weight, sample_weight, common.batch_axis)
    }
}

/// `0.5 d^2 / rho` where `|d| < rho`, else `|d| - 0.5 rho`: with `a = min(|d|, rho)` both
/// branches are `a * (|d| - a / 2) / rho`.
fn huber(tape: &mut Tape, d: &Array, rho: f64) -> Result<Array> {
    let ad = tape.unary(d, UnaryOp::Abs)?;
    let a = bin_s(tape, BinaryOp::Minimum, &ad, rho)?;
    let half = bin_s(tape, BinaryOp::Mul, &a, 0.5)?;
    let rest = bin(tape, BinaryOp::Sub, &ad, &half)?;
    let prod = bin(tape, BinaryOp::Mul, &a, &rest)?;
    bin_s(tape, BinaryOp::Div, &prod, rho)
}

/// `max(x, 0) - x * y + log(1 + exp(-|x|))`.
fn bce_logits(tape: &mut Tape, x: &Array, y: &Array) -> Result<Array> {
    let pos = tape.unary(x, UnaryOp::Relu)?;
    let xy = bin(tape, BinaryOp::Mul, x, y)?;
    let ax = tape.unary(x, UnaryOp::Abs)?;
    let neg = tape.unary(&ax, UnaryOp::Neg)?;
    let e = tape.unary(&neg, UnaryOp::Exp)?;
    let one_plus = bin_s(tape, BinaryOp::Add, &e, 1.0)?;
    let log = tape.unary(&one_plus, UnaryOp::Log)?;
    let a = bin(tape, BinaryOp::Sub, &pos, &xy)?;
    bin(tape, BinaryOp::Add, &a, &log)
}

// ---- PyTorch losses ------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reduction {
    Mean,
    Sum,
    None,
}

impl Reduction {
    /// PyTorch's words for an unknown reduction.
    pub fn parse(text: &str) -> std::result::Result<Reduction, String> {
        match text {
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            "none" => Ok(Reduction::None),
            other => Err(format!("{other} is not a valid value for reduction")),
        }
    }

    fn apply(self, tape: &mut Tape, loss: &Array) -> Result<Array> {
        match self {
            Reduction::Mean => tape.reduce(loss, ReduceOp::Mean, None, false),
            Reduction::Sum => tape.reduce(loss, ReduceOp::Sum, None, false),
            Reduction::None => Ok(loss.clone()),
        }
    }
}

/// `torch.Size([3, 1])`.
fn torch_size(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("torch.Size([{}])", dims.join(", "))
}

/// The PyTorch losses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TorchLoss {
    Mse,
    L1,
    CrossEntropy { label_smoothing: f64 },
    Nll,
    Bce,
    BceWithLogits,
    SmoothL1 { beta: f64 },
    Huber { delta: f64 },
}

impl TorchLoss {
    pub fn class_name(&self) -> &'static str {
        match self {
            TorchLoss::Mse => "MSELoss",
            TorchLoss::L1 => "L1Loss",
            TorchLoss::CrossEntropy { .. } => "CrossEntropyLoss",
            TorchLoss::Nll => "NLLLoss",
            TorchLoss::Bce => "BCELoss",
            TorchLoss::BceWithLogits => "BCEWithLogitsLoss",
            TorchLoss::SmoothL1 { .. } => "SmoothL1Loss",
            TorchLoss::Huber { .. } => "HuberLoss",
        }
    }

    pub fn apply(
        &self,
        rt: &Runtime,
        tape: &mut Tape,
        input: &Array,
        target: &Array,
        reduction: Reduction,
    ) -> Result<Array> {
        let name = self.class_name();
        same_device(name, input, target)?;
        let loss = match *self {
            TorchLoss::Mse => {
                let d = bin(tape, BinaryOp::Sub, input, target)?;
                tape.unary(&d, UnaryOp::Square)?
            }
            TorchLoss::L1 => {
                let d = bin(tape, BinaryOp::Sub, input, target)?;
                tape.unary(&d, UnaryOp::Abs)?
            }
            TorchLoss::SmoothL1 { beta } => {
                let d = bin(tape, BinaryOp::Sub, input, target)?;
                if beta == 0.0 {
                    tape.unary(&d, UnaryOp::Abs)?
                } else {
                    huber(tape, &d, beta)?
                }
            }
            TorchLoss::Huber { delta } => {
                let d = bin(tape, BinaryOp::Sub, input, target)?;
                let h = huber(tape, &d, delta)?;
                bin_s(tape, BinaryOp::Mul, &h, delta)?
            }
            TorchLoss::Bce => {
                if input.shape() != target.shape() {
                    return Err(RuntimeError::Value(format!(
                        "Using a target size ({}) that is different to the input size ({}) is deprecated. Please ensure they have the same size.",
                        torch_size(target.shape()),
                        torch_size(input.shape())
                    )));
                }
                // PyTorch clamps each log at -100 so that p = 0 or 1 stays finite.
                let lp = tape.unary(input, UnaryOp::Log)?;
                let lp = tape.clip(&lp, Some(-100.0), None)?;
                let q = s_bin(tape, BinaryOp::Sub, 1.0, input)?;
                let lq = tape.unary(&q, UnaryOp::Log)?;
                let lq = tape.clip(&lq, Some(-100.0), None)?;
                let ny = s_bin(tape, BinaryOp::Sub, 1.0, target)?;
                let a = bin(tape, BinaryOp::Mul, target, &lp)?;
                let b = bin(tape, BinaryOp::Mul, &ny, &lq)?;
                let sum = bin(tape, BinaryOp::Add, &a, &b)?;
                tape.unary(&sum, UnaryOp::Neg)?
            }
            TorchLoss::BceWithLogits => {
                if input.shape() != target.shape() {
                    return Err(RuntimeError::Value(format!(
                        "Target size ({}) must be the same as input size ({})",
                        torch_size(target.shape()),
                        torch_size(input.shape())
                    )));
                }
                bce_logits(tape, input, target)?
            }
            TorchLoss::CrossEntropy { label_smoothing } => {
                let class_axis = class_axis(input)?;
                let logp = log_softmax(tape, input, class_axis as isize)?;
                if target.dtype().is_float() {
                    if target.shape() != input.shape() {
                        return Err(RuntimeError::DType(
                            "expected scalar type Long but found Float".into(),
                        ));
                    }
                    // Class probabilities as targets (smoothed toward uniform when asked).
                    let mut t = target.clone();
                    if label_smoothing > 0.0 {
                        let classes = input.shape().get(class_axis).copied().unwrap_or(1) as f64;
                        t = bin_s(tape, BinaryOp::Mul, &t, 1.0 - label_smoothing)?;
                        t = bin_s(tape, BinaryOp::Add, &t, label_smoothing / classes)?;
                    }
                    let prod = bin(tape, BinaryOp::Mul, &logp, &t)?;
                    let sum =
                        tape.reduce(&prod, ReduceOp::Sum, Some(&[class_axis as isize]), false)?;
                    tape.unary(&sum, UnaryOp::Neg)?
                } else {
                    let nll = nll(rt, tape, &logp, target, class_axis)?;
                    if label_smoothing > 0.0 {
                        let classes = input.shape().get(class_axis).copied().unwrap_or(1) as f64;
                        let all =
                            tape.reduce(&logp, ReduceOp::Sum, Some(&[class_axis as isize]), false)?;
                        let smooth = bin_s(tape, BinaryOp::Mul, &all, -label_smoothing / classes)?;
                        let main = bin_s(tape, BinaryOp::Mul, &nll, 1.0 - label_smoothing)?;
                        bin(tape, BinaryOp::Add, &main, &smooth)?
                    } else {
                        nll
                    }
                }
            }
            TorchLoss::Nll => {
                let class_axis = class_axis(input)?;
                nll(rt, tape, input, target, class_axis)?
            }
        };
        reduction.apply(tape, &loss)
    }
}

/// The class axis of a (C,) or (N, C, ...) input.
fn class_axis(input: &Array) -> Result<usize> {
    match input.ndim() {
        0 => Err(RuntimeError::Value(
            "Expected 1 or more dimensions (got 0)".into(),
        )),
        1 => Ok(0),
        _ => Ok(1),
    }
}

/// `-logp[target]` along the class axis, with PyTorch's checks on the target.
fn nll(
    rt: &Runtime,
    tape: &mut Tape,
    logp: &Array,
    target: &Array,
    class_axis: usize,
) -> Result<Array> {
    if target.dtype().is_float() {
        return Err(RuntimeError::DType(
            "expected scalar type Long but found Float".into(),
        ));
    }
    let mut want = logp.shape().to_vec();
    want.remove(class_axis);
    if target.shape() != want.as_slice() {
        let (n_in, n_t) = (want.first().copied(), target.shape().first().copied());
        if logp.ndim() >= 2 && n_in != n_t {
            return Err(RuntimeError::Value(format!(
                "Expected input batch_size ({}) to match target batch_size ({}).",
                n_in.unwrap_or(0),
                n_t.unwrap_or(0)
            )));
        }
        return Err(RuntimeError::Shape(format!(
            "Expected target size {}, got {}",
            torch_list(&want),
            torch_list(target.shape())
        )));
    }
    let classes = logp.shape().get(class_axis).copied().unwrap_or(1) as i64;
    if target.size() > 0 {
        // PyTorch checks the indices (on the CPU it raises; CUDA asserts); one small read.
        let lo = target
            .reduce(ReduceOp::Min, None, false)?
            .astype(DType::Int64)?;
        let hi = target
            .reduce(ReduceOp::Max, None, false)?
            .astype(DType::Int64)?;
        let read = |a: &Array| -> i64 {
            a.to_host_uncounted()
                .to_f64_vec()
                .first()
                .copied()
                .unwrap_or(0.0) as i64
        };
        let (lo, hi) = (read(&lo), read(&hi));
        let bad = if hi >= classes {
            Some(hi)
        } else {
            (lo < 0).then_some(lo)
        };
        if let Some(bad) = bad {
            return Err(RuntimeError::Index(format!(
                "Target {bad} is out of bounds."
            )));
        }
    }
    let target = if class_axis == 0 {
        target.reshape(&[])?
    } else {
        target.clone()
    };
    let picked = pick(rt, tape, logp, &target, class_axis, false)?;
    tape.unary(&picked, UnaryOp::Neg)
}

/// `[3, 1]`, as PyTorch writes sizes in messages.
fn torch_list(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{Device, RuntimeConfig};

    fn arr(rt: &Runtime, v: &[f64], shape: &[usize], dtype: DType) -> Array {
        rt.from_f64(v.to_vec(), shape, dtype, Device::cpu(0))
            .expect("test array")
    }

    fn host(a: &Array) -> Vec<f64> {
        a.to_host().to_f64_vec()
    }

    #[test]
    fn cross_entropy_and_smoothing() {
        let rt = Runtime::new(RuntimeConfig::default());
        let mut tape = Tape::default();
        let x = arr(
            &rt,
            &[1.0, 2.0, 3.0, 1.0, 1.0, 1.0],
            &[2, 3],
            DType::Float64,
        );
        let y = arr(&rt, &[2.0, 0.0], &[2], DType::Int64);
        let ce = TorchLoss::CrossEntropy {
            label_smoothing: 0.0,
        };
        let l = ce.apply(&rt, &mut tape, &x, &y, Reduction::None).unwrap();
        let lse1 = (1f64.exp() + 2f64.exp() + 3f64.exp()).ln();
        let v = host(&l);
        assert!((v[0] - (lse1 - 3.0)).abs() < 1e-9);
        assert!((v[1] - 3f64.ln()).abs() < 1e-9);
        let bad = arr(&rt, &[3.0, 0.0], &[2], DType::Int64);
        let e = ce
            .apply(&rt, &mut tape, &x, &bad, Reduction::Mean)
            .unwrap_err();
        assert_eq!(e.to_string(), "Target 3 is out of bounds.");
    }

    #[test]
    fn huber_branches() {
        let rt = Runtime::new(RuntimeConfig::default());
        let mut tape = Tape::default();
        let d = arr(&rt, &[0.5, -2.0], &[2], DType::Float64);
        let h = huber(&mut tape, &d, 1.0).unwrap();
        assert_eq!(host(&h), vec![0.125, 1.5]);
    }
}
