//! Optimizer update rules on runtime ops, so they run on every device and every copy of a
//! parameter: PyTorch's SGD / Adam / AdamW and MXNet's sgd / nag / adam, each with its own
//! framework's formulas (they differ: MXNet rescales and clips the gradient and folds `wd`
//! into it; PyTorch's Adam corrects the bias on the step size, AdamW decays the weight itself).
//!
//! [`update`] is pure: it returns the new weight and the new state without writing anything,
//! so a caller can compute every copy's update first and commit only when all succeeded.
use crate::runtime::{Array, BinaryOp, FusedExpr, Operand, Result, Scalar, UnaryOp};

/// One update rule with its hyper-parameters (the learning rate is passed per step, because
/// both frameworks let a program change it between steps).
#[derive(Clone, Debug, PartialEq)]
pub enum Algorithm {
    /// `torch.optim.SGD`.
    TorchSgd {
        momentum: f64,
        dampening: f64,
        weight_decay: f64,
        nesterov: bool,
        maximize: bool,
    },
    /// `torch.optim.Adam` (`decoupled: false`) and `torch.optim.AdamW` (`decoupled: true`).
    TorchAdam {
        beta1: f64,
        beta2: f64,
        eps: f64,
        weight_decay: f64,
        amsgrad: bool,
        maximize: bool,
        decoupled: bool,
    },
    /// MXNet's `sgd` (`nag: false`) and `nag` (`nag: true`).
    MxSgd {
        momentum: f64,
        wd: f64,
        clip_gradient: Option<f64>,
        nag: bool,
    },
    /// MXNet's `adam`.
    MxAdam {
        beta1: f64,
        beta2: f64,
        epsilon: f64,
        wd: f64,
        clip_gradient: Option<f64>,
    },
    /// `torch.optim.RMSprop`.
    TorchRmsprop {
        alpha: f64,
        eps: f64,
        weight_decay: f64,
        momentum: f64,
        centered: bool,
        maximize: bool,
    },
    /// `torch.optim.Adagrad` (`initial_accumulator_value` fills the sum at the first step).
    TorchAdagrad {
        lr_decay: f64,
        eps: f64,
        weight_decay: f64,
        initial_accumulator_value: f64,
        maximize: bool,
    },
    /// `torch.optim.Adadelta`.
    TorchAdadelta {
        rho: f64,
        eps: f64,
        weight_decay: f64,
        maximize: bool,
    },
    /// MXNet's `adadelta` (no learning rate: the step is the delta itself).
    MxAdadelta {
        rho: f64,
        epsilon: f64,
        wd: f64,
        clip_gradient: Option<f64>,
    },
    /// MXNet's `rmsprop` (Tieleman and Hinton's, not centered).
    MxRmsprop {
        gamma1: f64,
        epsilon: f64,
        wd: f64,
        clip_gradient: Option<f64>,
    },
    /// MXNet's `adagrad`.
    MxAdagrad {
        eps: f64,
        wd: f64,
        clip_gradient: Option<f64>,
    },
}

impl Algorithm {
    /// The names PyTorch's `state_dict` gives the buffers of [`SlotState::buffers`], in order.
    pub fn buffer_names(&self) -> Vec<&'static str> {
        match self {
            Algorithm::TorchSgd { .. } | Algorithm::MxSgd { .. } => vec!["momentum_buffer"],
            Algorithm::TorchAdam { .. } | Algorithm::MxAdam { .. } => {
                vec!["exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
            }
            Algorithm::TorchRmsprop {
                momentum, centered, ..
            } => {
                let mut v = vec!["square_avg"];
                if *momentum > 0.0 {
                    v.push("momentum_buffer");
                }
                if *centered {
                    v.push("grad_avg");
                }
                v
            }
            Algorithm::TorchAdagrad { .. } | Algorithm::MxAdagrad { .. } => vec!["sum"],
            Algorithm::MxRmsprop { .. } => vec!["n"],
            Algorithm::TorchAdadelta { .. } => vec!["square_avg", "acc_delta"],
            Algorithm::MxAdadelta { .. } => vec!["acc_g", "acc_delta"],
        }
    }
}

/// What one copy of one parameter carries between steps.
#[derive(Clone, Default)]
pub struct SlotState {
    /// Updates applied so far (Adam's bias correction counts them).
    pub step: u64,
    /// SGD: `[momentum_buffer]`; Adam: `[exp_avg, exp_avg_sq]` (+ `max_exp_avg_sq` with
    /// amsgrad). Empty until the first step (PyTorch creates them lazily, too).
    pub buffers: Vec<Array>,
}

fn bin(op: BinaryOp, a: &Array, b: &Array) -> Result<Array> {
    Array::binary(op, Operand::Array(a), Operand::Array(b))
}

fn scale(a: &Array, s: f64) -> Result<Array> {
    Array::binary(
        BinaryOp::Mul,
        Operand::Array(a),
        Operand::Scalar(Scalar::Float(s)),
    )
}

fn add_scalar(a: &Array, s: f64) -> Result<Array> {
    Array::binary(
        BinaryOp::Add,
        Operand::Array(a),
        Operand::Scalar(Scalar::Float(s)),
    )
}

/// `a + s * b`: one pass where the fused kernel runs it (a + b * s, the two ops' order, so the
/// same bits), else the two ops. ResNet-18's SGD step reads and writes 11M weights this way.
fn axpy(a: &Array, s: f64, b: &Array) -> Result<Array> {
    let expr = FusedExpr::Binary(
        BinaryOp::Add,
        Box::new(FusedExpr::Input(0)),
        Box::new(times(FusedExpr::Input(1), s)),
    );
    if let Some(r) = Array::fused(&expr, &[a.clone(), b.clone()])? {
        return Ok(r);
    }
    bin(BinaryOp::Add, a, &scale(b, s)?)
}

/// `e * s` as a fused expression (`scale`'s operand order).
fn times(e: FusedExpr, s: f64) -> FusedExpr {
    FusedExpr::Binary(BinaryOp::Mul, Box::new(e), Box::new(FusedExpr::Scalar(s)))
}

/// A fresh copy (the momentum buffer must not alias the gradient buffer it starts from).
fn fresh(a: &Array) -> Result<Array> {
    scale(a, 1.0)
}

/// PyTorch's gradient as each of its rules first forms it: negated to maximize, then
/// `+ weight_decay * weight` (one pass).
fn torch_grad(grad: &Array, weight: &Array, maximize: bool, weight_decay: f64) -> Result<Array> {
    let g = if maximize {
        grad.unary(UnaryOp::Neg)?
    } else {
        grad.clone()
    };
    if weight_decay != 0.0 {
        axpy(&g, weight_decay, weight)
    } else {
        Ok(g)
    }
}

/// State buffer `index`, or zeros shaped as `like` before the first step (both frameworks
/// create the state lazily).
fn buffer_or_zeros(state: &SlotState, index: usize, like: &Array) -> Result<Array> {
    match state.buffers.get(index) {
        Some(kept) => Ok(kept.clone()),
        None => scale(like, 0.0),
    }
}

/// `rho * acc + ((1 - rho) * t) * t`: PyTorch's `mul_(rho).addcmul_(t, t, value=1 - rho)` and
/// MXNet's Python AdaDelta alike, op for op.
fn decayed_square_sum(acc: &Array, rho: f64, t: &Array) -> Result<Array> {
    bin(
        BinaryOp::Add,
        &scale(acc, rho)?,
        &bin(BinaryOp::Mul, &scale(t, 1.0 - rho)?, t)?,
    )
}

/// One Adadelta step, the same in both frameworks (they differ only in how the weight decay
/// and the learning rate enter): returns the new squared-gradient average, the delta and the
/// new squared-delta average.
fn adadelta_step(
    g: &Array,
    square_avg: &Array,
    acc_delta: &Array,
    rho: f64,
    eps: f64,
) -> Result<(Array, Array, Array)> {
    let square_avg = decayed_square_sum(square_avg, rho, g)?;
    let ratio = bin(
        BinaryOp::Div,
        &add_scalar(acc_delta, eps)?.unary(UnaryOp::Sqrt)?,
        &add_scalar(&square_avg, eps)?.unary(UnaryOp::Sqrt)?,
    )?;
    let delta = bin(BinaryOp::Mul, &ratio, g)?;
    let acc_delta = decayed_square_sum(acc_delta, rho, &delta)?;
    Ok((square_avg, delta, acc_delta))
}

/// MXNet's `clip_gradient`: `clip(g, -c, c)` where it is set (non-negative).
fn mx_clip(g: Array, clip: Option<f64>) -> Result<Array> {
    match clip {
        Some(c) if c >= 0.0 => g.clip(Some(-c), Some(c)),
        _ => Ok(g),
    }
}

/// MXNet's gradient preprocessing: `clip(rescale_grad * grad, -c, c)`.
fn mx_grad(grad: &Array, rescale: f64, clip: Option<f64>) -> Result<Array> {
    mx_clip(scale(grad, rescale)?, clip)
}

/// The preprocessing of MXNet's fused `adam_update` and `rmsprop_update`, which fold the
/// weight decay in before clipping: `clip(rescale_grad * grad + wd * weight, -c, c)`.
fn mx_decayed_grad(
    grad: &Array,
    weight: &Array,
    rescale: f64,
    wd: f64,
    clip: Option<f64>,
) -> Result<Array> {
    mx_clip(axpy(&scale(grad, rescale)?, wd, weight)?, clip)
}

/// One update of `weight` by `grad` at learning rate `lr`. `rescale` is MXNet's `rescale_grad`
/// (the Trainer passes `1 / batch_size`); PyTorch's rules ignore it.
pub fn update(
    algorithm: &Algorithm,
    lr: f64,
    rescale: f64,
    weight: &Array,
    grad: &Array,
    state: &SlotState,
) -> Result<(Array, SlotState)> {
    let step = state.step + 1;
    match *algorithm {
        Algorithm::TorchSgd {
            momentum,
            dampening,
            weight_decay,
            nesterov,
            maximize,
        } => {
            let mut g = torch_grad(grad, weight, maximize, weight_decay)?;
            let mut buffers = Vec::new();
            if momentum != 0.0 {
                // The first step's buffer is the gradient itself, undamped (PyTorch).
                let buf = match state.buffers.first() {
                    None => fresh(&g)?,
                    Some(b) => axpy(&scale(b, momentum)?, 1.0 - dampening, &g)?,
                };
                g = if nesterov {
                    axpy(&g, momentum, &buf)?
                } else {
                    buf.clone()
                };
                buffers.push(buf);
            }
            let new = axpy(weight, -lr, &g)?;
            Ok((new, SlotState { step, buffers }))
        }
        Algorithm::TorchAdam {
            beta1,
            beta2,
            eps,
            weight_decay,
            amsgrad,
            maximize,
            decoupled,
        } => {
            // AdamW decays the weight itself instead of adding to the gradient.
            let coupled_decay = if decoupled { 0.0 } else { weight_decay };
            let g = torch_grad(grad, weight, maximize, coupled_decay)?;
            let w = if decoupled && weight_decay != 0.0 {
                scale(weight, 1.0 - lr * weight_decay)?
            } else {
                weight.clone()
            };
            let m = buffer_or_zeros(state, 0, &g)?;
            let v = buffer_or_zeros(state, 1, &g)?;
            // exp_avg.lerp_(grad, 1 - beta1): m + (1 - beta1) * (g - m).
            let m = axpy(&m, 1.0 - beta1, &bin(BinaryOp::Sub, &g, &m)?)?;
            let v = axpy(
                &scale(&v, beta2)?,
                1.0 - beta2,
                &bin(BinaryOp::Mul, &g, &g)?,
            )?;
            let bc1 = 1.0 - beta1.powi(step as i32);
            let bc2_sqrt = (1.0 - beta2.powi(step as i32)).sqrt();
            let mut buffers = vec![m.clone(), v.clone()];
            let second = if amsgrad {
                let max = match state.buffers.get(2) {
                    Some(prev) => bin(BinaryOp::Maximum, prev, &v)?,
                    None => fresh(&v)?,
                };
                buffers.push(max.clone());
                max
            } else {
                v
            };
            let denom = add_scalar(&scale(&second.unary(UnaryOp::Sqrt)?, 1.0 / bc2_sqrt)?, eps)?;
            let new = axpy(&w, -lr / bc1, &bin(BinaryOp::Div, &m, &denom)?)?;
            Ok((new, SlotState { step, buffers }))
        }
        Algorithm::MxSgd {
            momentum,
            wd,
            clip_gradient,
            nag,
        } => {
            if momentum == 0.0 && !matches!(clip_gradient, Some(c) if c >= 0.0) {
                // sgd_update without clipping in one pass where the fused kernel runs it:
                // (weight * (1 - lr * wd)) + ((grad * rescale) * -lr), the ops' order below.
                let expr = FusedExpr::Binary(
                    BinaryOp::Add,
                    Box::new(times(FusedExpr::Input(0), 1.0 - lr * wd)),
                    Box::new(times(times(FusedExpr::Input(1), rescale), -lr)),
                );
                if let Some(new) = Array::fused(&expr, &[weight.clone(), grad.clone()])? {
                    let buffers = Vec::new();
                    return Ok((new, SlotState { step, buffers }));
                }
            }
            let g = mx_grad(grad, rescale, clip_gradient)?;
            if momentum == 0.0 {
                // sgd_update: weight = (1 - lr * wd) * weight - lr * g.
                let new = axpy(&scale(weight, 1.0 - lr * wd)?, -lr, &g)?;
                return Ok((
                    new,
                    SlotState {
                        step,
                        buffers: Vec::new(),
                    },
                ));
            }
            let mom = buffer_or_zeros(state, 0, weight)?;
            if nag {
                // MXNet 1.9.1's nag_mom_update writes the weight first and then reads the
                // new weight for the momentum's wd term (the op runs with out=weight):
                // gw = g + wd * w; w' = w + momentum * (momentum * mom - lr * gw) - lr * gw;
                // mom' = momentum * mom - lr * (g + wd * w'). Reproduced as it behaves.
                let gw = axpy(&g, wd, weight)?;
                let ahead = axpy(&scale(&mom, momentum)?, -lr, &gw)?;
                let new = axpy(&axpy(weight, momentum, &ahead)?, -lr, &gw)?;
                let mom = axpy(&scale(&mom, momentum)?, -lr, &axpy(&g, wd, &new)?)?;
                Ok((
                    new,
                    SlotState {
                        step,
                        buffers: vec![mom],
                    },
                ))
            } else {
                // sgd_mom_update: mom = momentum * mom - lr * wd * weight - lr * g; weight += mom.
                let mom = axpy(&axpy(&scale(&mom, momentum)?, -lr * wd, weight)?, -lr, &g)?;
                let new = bin(BinaryOp::Add, weight, &mom)?;
                Ok((
                    new,
                    SlotState {
                        step,
                        buffers: vec![mom],
                    },
                ))
            }
        }
        Algorithm::MxAdam {
            beta1,
            beta2,
            epsilon,
            wd,
            clip_gradient,
        } => {
            // adam_update; the bias correction is folded into the learning rate by the Python
            // side of MXNet's Adam.
            let g = mx_decayed_grad(grad, weight, rescale, wd, clip_gradient)?;
            let m = buffer_or_zeros(state, 0, weight)?;
            let v = buffer_or_zeros(state, 1, weight)?;
            // The kernel takes beta1/beta2 as float32 and forms 1 - beta there.
            let (b1, b2) = (beta1 as f32, beta2 as f32);
            let m = axpy(&scale(&m, b1.into())?, (1.0 - b1).into(), &g)?;
            let v = axpy(
                &scale(&v, b2.into())?,
                (1.0 - b2).into(),
                &g.unary(UnaryOp::Square)?,
            )?;
            let t = step as i32;
            let lr_t = lr * (1.0 - beta2.powi(t)).sqrt() / (1.0 - beta1.powi(t));
            let denom = add_scalar(&v.unary(UnaryOp::Sqrt)?, epsilon)?;
            let new = axpy(weight, -lr_t, &bin(BinaryOp::Div, &m, &denom)?)?;
            Ok((
                new,
                SlotState {
                    step,
                    buffers: vec![m, v],
                },
            ))
        }
        Algorithm::TorchRmsprop {
            alpha,
            eps,
            weight_decay,
            momentum,
            centered,
            maximize,
        } => {
            let g = torch_grad(grad, weight, maximize, weight_decay)?;
            let mut old = state.buffers.iter();
            let zeros = || scale(weight, 0.0);
            let sq = match old.next() {
                Some(b) => b.clone(),
                None => zeros()?,
            };
            let old_buf = if momentum > 0.0 {
                old.next().cloned()
            } else {
                None
            };
            let old_gavg = if centered { old.next().cloned() } else { None };
            let sq = axpy(
                &scale(&sq, alpha)?,
                1.0 - alpha,
                &bin(BinaryOp::Mul, &g, &g)?,
            )?;
            let mut buffers = vec![sq.clone()];
            let mut gavg_new = None;
            let avg = if centered {
                let ga = match old_gavg {
                    Some(b) => b,
                    None => zeros()?,
                };
                // grad_avg.lerp_(grad, 1 - alpha)
                let ga = axpy(&ga, 1.0 - alpha, &bin(BinaryOp::Sub, &g, &ga)?)?;
                let var = bin(BinaryOp::Sub, &sq, &bin(BinaryOp::Mul, &ga, &ga)?)?;
                gavg_new = Some(ga);
                var.unary(UnaryOp::Sqrt)?
            } else {
                sq.unary(UnaryOp::Sqrt)?
            };
            let avg = add_scalar(&avg, eps)?;
            let new = if momentum > 0.0 {
                let buf = match old_buf {
                    Some(b) => b,
                    None => zeros()?,
                };
                let buf = bin(
                    BinaryOp::Add,
                    &scale(&buf, momentum)?,
                    &bin(BinaryOp::Div, &g, &avg)?,
                )?;
                buffers.push(buf.clone());
                axpy(weight, -lr, &buf)?
            } else {
                axpy(weight, -lr, &bin(BinaryOp::Div, &g, &avg)?)?
            };
            buffers.extend(gavg_new);
            Ok((new, SlotState { step, buffers }))
        }
        Algorithm::TorchAdagrad {
            lr_decay,
            eps,
            weight_decay,
            initial_accumulator_value,
            maximize,
        } => {
            let g = torch_grad(grad, weight, maximize, weight_decay)?;
            let clr = lr / (1.0 + (step - 1) as f64 * lr_decay);
            let sum = match state.buffers.first() {
                Some(b) => b.clone(),
                None => add_scalar(&scale(weight, 0.0)?, initial_accumulator_value)?,
            };
            let sum = bin(BinaryOp::Add, &sum, &bin(BinaryOp::Mul, &g, &g)?)?;
            let std = add_scalar(&sum.unary(UnaryOp::Sqrt)?, eps)?;
            let new = axpy(weight, -clr, &bin(BinaryOp::Div, &g, &std)?)?;
            Ok((
                new,
                SlotState {
                    step,
                    buffers: vec![sum],
                },
            ))
        }
        Algorithm::TorchAdadelta {
            rho,
            eps,
            weight_decay,
            maximize,
        } => {
            let g = torch_grad(grad, weight, maximize, weight_decay)?;
            let square_avg = buffer_or_zeros(state, 0, weight)?;
            let acc_delta = buffer_or_zeros(state, 1, weight)?;
            let (square_avg, delta, acc_delta) =
                adadelta_step(&g, &square_avg, &acc_delta, rho, eps)?;
            let new = axpy(weight, -lr, &delta)?;
            Ok((
                new,
                SlotState {
                    step,
                    buffers: vec![square_avg, acc_delta],
                },
            ))
        }
        Algorithm::MxAdadelta {
            rho,
            epsilon,
            wd,
            clip_gradient,
        } => {
            // MXNet 1.9.1's AdaDelta.update: the common step on the rescaled, clipped gradient,
            // then w -= delta + wd w (no learning rate).
            let g = mx_grad(grad, rescale, clip_gradient)?;
            let acc_g = buffer_or_zeros(state, 0, weight)?;
            let acc_delta = buffer_or_zeros(state, 1, weight)?;
            let (acc_g, delta, acc_delta) = adadelta_step(&g, &acc_g, &acc_delta, rho, epsilon)?;
            let shift = bin(BinaryOp::Add, &delta, &scale(weight, wd)?)?;
            let new = bin(BinaryOp::Sub, weight, &shift)?;
            Ok((
                new,
                SlotState {
                    step,
                    buffers: vec![acc_g, acc_delta],
                },
            ))
        }
        Algorithm::MxRmsprop {
            gamma1,
            epsilon,
            wd,
            clip_gradient,
        } => {
            // rmsprop_update: g = clip(rescale * grad + wd * weight);
            // n = (1 - gamma1) g^2 + gamma1 n; weight -= lr * g / sqrt(n + epsilon).
            let g = mx_decayed_grad(grad, weight, rescale, wd, clip_gradient)?;
            let n = buffer_or_zeros(state, 0, weight)?;
            let g1 = gamma1 as f32;
            let n = axpy(
                &scale(&n, g1.into())?,
                (1.0 - g1).into(),
                &g.unary(UnaryOp::Square)?,
            )?;
            let den = add_scalar(&n, epsilon)?.unary(UnaryOp::Sqrt)?;
            let new = axpy(weight, -lr, &bin(BinaryOp::Div, &g, &den)?)?;
            Ok((
                new,
                SlotState {
                    step,
                    buffers: vec![n],
                },
            ))
        }
        Algorithm::MxAdagrad {
            eps,
            wd,
            clip_gradient,
        } => {
            // history += g^2; weight += (g / sqrt(history + eps) + weight * wd) * -lr.
            let g = mx_grad(grad, rescale, clip_gradient)?;
            let history = buffer_or_zeros(state, 0, weight)?;
            let history = bin(BinaryOp::Add, &history, &g.unary(UnaryOp::Square)?)?;
            let div = bin(
                BinaryOp::Div,
                &g,
                &add_scalar(&history, eps)?.unary(UnaryOp::Sqrt)?,
            )?;
            let new = axpy(weight, -lr, &axpy(&div, wd, weight)?)?;
            Ok((
                new,
                SlotState {
                    step,
                    buffers: vec![history],
                },
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{DType, Device, Runtime, RuntimeConfig};

    fn runtime() -> Runtime {
        Runtime::new(RuntimeConfig::default())
    }

    fn arr(rt: &Runtime, v: &[f64]) -> Array {
        rt.from_f64(v.to_vec(), &[v.len()], DType::Float64, Device::cpu(0))
            .expect("test array")
    }

    fn host(a: &Array) -> Vec<f64> {
        a.to_host().to_f64_vec()
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-5, "{a:?} vs {b:?}");
        }
    }

    /// The one-pass updates (`axpy`, MXNet's plain SGD) give the bits of the ops they stand
    /// for, in both float dtypes.
    #[test]
    fn fused_updates_equal_the_composed_ops() {
        let rt = runtime();
        for dtype in [DType::Float32, DType::Float64] {
            let n = 100_003;
            let w: Vec<f64> = (0..n)
                .map(|i| ((i * 7919) % 2001) as f64 / 997.0 - 1.0)
                .collect();
            let g: Vec<f64> = (0..n)
                .map(|i| ((i * 104729) % 1999) as f64 / 313.0 - 3.0)
                .collect();
            let w = rt.from_f64(w, &[n], dtype, Device::cpu(0)).unwrap();
            let g = rt.from_f64(g, &[n], dtype, Device::cpu(0)).unwrap();
            let bits = |a: &Array| -> Vec<u64> {
                a.to_host()
                    .to_f64_vec()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect()
            };
            let composed = bin(BinaryOp::Add, &w, &scale(&g, -0.05).unwrap()).unwrap();
            assert!(
                bits(&axpy(&w, -0.05, &g).unwrap()) == bits(&composed),
                "{dtype} axpy"
            );
            let (lr, wd, rescale) = (0.1, 3e-4, 1.0 / 3.0);
            let algorithm = Algorithm::MxSgd {
                momentum: 0.0,
                wd,
                clip_gradient: None,
                nag: false,
            };
            let state = SlotState::default();
            let (new, _) = update(&algorithm, lr, rescale, &w, &g, &state).unwrap();
            let plain = bin(
                BinaryOp::Add,
                &scale(&w, 1.0 - lr * wd).unwrap(),
                &scale(&scale(&g, rescale).unwrap(), -lr).unwrap(),
            )
            .unwrap();
            assert!(bits(&new) == bits(&plain), "{dtype} MXNet sgd_update");
        }
    }

    #[test]
    fn torch_sgd_momentum_nesterov_and_weight_decay() {
        let rt = runtime();
        let alg = Algorithm::TorchSgd {
            momentum: 0.9,
            dampening: 0.0,
            weight_decay: 0.1,
            nesterov: true,
            maximize: false,
        };
        let (w, g) = (arr(&rt, &[1.0, -2.0]), arr(&rt, &[0.5, 0.5]));
        let (w1, s1) = update(&alg, 0.1, 1.0, &w, &g, &SlotState::default()).unwrap();
        // g' = g + 0.1 w = [0.6, 0.3]; buf = g'; nesterov: g' + 0.9 buf = [1.14, 0.57].
        close(&host(&w1), &[1.0 - 0.114, -2.0 - 0.057]);
        close(&host(&s1.buffers[0]), &[0.6, 0.3]);
        let (_, s2) = update(&alg, 0.1, 1.0, &w1, &g, &s1).unwrap();
        let gp = [0.5 + 0.1 * 0.886, 0.5 + 0.1 * -2.057];
        close(
            &host(&s2.buffers[0]),
            &[0.9 * 0.6 + gp[0], 0.9 * 0.3 + gp[1]],
        );
        assert_eq!(s2.step, 2);
    }

    #[test]
    fn torch_adam_first_step_moves_by_lr() {
        let rt = runtime();
        let alg = Algorithm::TorchAdam {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
            decoupled: false,
        };
        let (w, g) = (arr(&rt, &[1.0, 2.0]), arr(&rt, &[0.3, -4.0]));
        let (w1, _) = update(&alg, 0.01, 1.0, &w, &g, &SlotState::default()).unwrap();
        close(&host(&w1), &[0.99, 2.01]);
    }

    #[test]
    fn mxnet_sgd_rescales_and_clips() {
        let rt = runtime();
        let alg = Algorithm::MxSgd {
            momentum: 0.0,
            wd: 0.0,
            clip_gradient: Some(1.0),
            nag: false,
        };
        let (w, g) = (arr(&rt, &[1.0, 1.0]), arr(&rt, &[4.0, 1.0]));
        let (w1, _) = update(&alg, 0.5, 0.5, &w, &g, &SlotState::default()).unwrap();
        close(&host(&w1), &[0.5, 0.75]);
    }

    /// Adadelta by PyTorch's formulas, two steps from zero state (square_avg and acc_delta),
    /// checked against the same arithmetic written out in f64.
    #[test]
    fn adadelta_follows_pytorch() {
        let rt = runtime();
        let (rho, eps, lr, wd) = (0.9, 1e-6, 1.0, 0.1);
        let alg = Algorithm::TorchAdadelta {
            rho,
            eps,
            weight_decay: wd,
            maximize: false,
        };
        let w0 = [1.0, -2.0, 0.5];
        let grads = [[0.3, -1.0, 2.0], [0.1, 0.2, -0.4]];
        let mut w = arr(&rt, &w0);
        let mut state = SlotState::default();
        let (mut ew, mut sq, mut acc) = (w0.to_vec(), vec![0.0; 3], vec![0.0; 3]);
        for g in grads {
            let (new, s) = update(&alg, lr, 1.0, &w, &arr(&rt, &g), &state).expect("step");
            w = new;
            state = s;
            for i in 0..3 {
                let gi = g[i] + wd * ew[i];
                sq[i] = sq[i] * rho + (1.0 - rho) * gi * gi;
                let delta = (acc[i] + eps).sqrt() / (sq[i] + eps).sqrt() * gi;
                acc[i] = acc[i] * rho + (1.0 - rho) * delta * delta;
                ew[i] -= lr * delta;
            }
        }
        close(&host(&w), &ew);
        close(&host(&state.buffers[0]), &sq);
        close(&host(&state.buffers[1]), &acc);
        assert_eq!(alg.buffer_names(), vec!["square_avg", "acc_delta"]);
    }
}
