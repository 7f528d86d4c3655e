//! `torch.nn.functional` (`import torch.nn.functional as F`) and the loss modules of
//! `torch.nn` (`nn.MSELoss()`, `nn.CrossEntropyLoss()`, ...). The math is
//! `crate::nn::losses`, recorded on the shared tape.
use std::rc::Rc;

use crate::nn::autograd::Tape;
use crate::nn::losses::{self, Reduction, TorchLoss};
use crate::object::error::{torch_error, Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, Flavor, Module, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::{
    Array, BinaryOp, DType, Operand, ReduceOp, Result as RtResult, Runtime, Scalar, UnaryOp,
};

/// A tensor argument (a parameter is its tensor: `F.linear(x, net.weight)`).
fn tensor(v: &Value, what: &str) -> Result<Array, Exc> {
    if let Some(a) = v.as_array() {
        return Ok(a.array.clone());
    }
    Err(Exc::type_error(format!(
        "{what}(): argument 'input' must be Tensor, not {}",
        v.type_name()
    )))
}

fn float_arg(v: Option<Value>, name: &str, default: f64) -> Result<f64, Exc> {
    match v {
        None => Ok(default),
        Some(v) => as_f64(&v).ok_or_else(|| {
            Exc::type_error(format!("{name} must be a number, got {}", v.type_name()))
        }),
    }
}

fn out(r: RtResult<Array>) -> Result<Value, Exc> {
    r.map(|a| wrap(a, Flavor::Torch)).map_err(|e| {
        let mut exc = torch_error(e);
        // PyTorch reports a wrong target dtype as a RuntimeError.
        if exc.message.starts_with("expected scalar type") {
            exc.kind = ExcKind::RuntimeError;
        }
        exc
    })
}

/// A one-input function of the tape, with its extra arguments already taken.
fn unary_call(
    it: &mut dyn Interpreter,
    x: &Value,
    what: &str,
    f: impl FnOnce(&Runtime, &mut Tape, &Array) -> RtResult<Array>,
) -> Result<Value, Exc> {
    let x = tensor(x, what)?;
    let st = it.state_mut();
    let r = f(&st.rt, &mut st.nn.tape, &x);
    out(named(&mut st.nn.tape, r, grad_fn_name(what)))
}

/// The `grad_fn` PyTorch shows for the result of a function composed here from several ops.
fn grad_fn_name(what: &str) -> Option<&'static str> {
    Some(match what {
        "gelu" => "GeluBackward0",
        "leaky_relu" => "LeakyReluBackward0",
        "elu" => "EluBackward0",
        "silu" => "SiluBackward0",
        "softplus" => "SoftplusBackward0",
        "softmax" => "SoftmaxBackward0",
        "log_softmax" => "LogSoftmaxBackward0",
        _ => return None,
    })
}

/// Renames the recorded op that made the result (nothing when nothing was recorded).
fn named(tape: &mut Tape, r: RtResult<Array>, name: Option<&'static str>) -> RtResult<Array> {
    if let (Ok(a), Some(name)) = (&r, name) {
        tape.rename(a, name);
    }
    r
}

/// PyTorch's `grad_fn` for a loss (its `l1_loss` is a plain mean, so that one keeps its own).
fn loss_grad_fn(loss: &TorchLoss) -> Option<&'static str> {
    Some(match loss {
        TorchLoss::Mse => "MseLossBackward0",
        TorchLoss::CrossEntropy { .. } | TorchLoss::Nll => "NllLossBackward0",
        TorchLoss::Bce => "BinaryCrossEntropyBackward0",
        TorchLoss::BceWithLogits => "BinaryCrossEntropyWithLogitsBackward0",
        TorchLoss::SmoothL1 { .. } => "SmoothL1LossBackward0",
        TorchLoss::Huber { .. } => "HuberLossBackward0",
        TorchLoss::L1 => return None,
    })
}

fn simple(it: &mut dyn Interpreter, mut a: Args, op: UnaryOp) -> Result<Value, Exc> {
    let x = a.required(0, "input")?;
    a.take_kw("inplace");
    a.finish(1)?;
    unary_call(it, &x, a.fname, |_, t, x| t.unary(x, op))
}

/// PyTorch's implicit softmax dim (it also warns): 0 for 0-, 1- and 3-d input, else 1.
fn dim_arg(v: Option<Value>, x: &Array) -> Result<isize, Exc> {
    match v {
        None | Some(Value::None) => Ok(if matches!(x.ndim(), 0 | 1 | 3) { 0 } else { 1 }),
        Some(v) => as_i64(&v).map(|d| d as isize).ok_or_else(|| {
            Exc::type_error(format!("dim must be an integer, got {}", v.type_name()))
        }),
    }
}

fn softmax_like(
    it: &mut dyn Interpreter,
    mut a: Args,
    f: fn(&mut Tape, &Array, isize) -> RtResult<Array>,
) -> Result<Value, Exc> {
    let x = tensor(&a.required(0, "input")?, a.fname)?;
    let dim = dim_arg(a.take(1, "dim")?, &x)?;
    a.take(2, "_stacklevel")?;
    let dtype = a.take(3, "dtype")?;
    a.finish(4)?;
    let x = match dtype {
        Some(Value::DType(d, _)) => x.astype(d).map_err(torch_error)?,
        _ => x,
    };
    let name = grad_fn_name(a.fname);
    let tape = &mut it.state_mut().nn.tape;
    let r = f(tape, &x, dim);
    out(named(tape, r, name))
}

/// `x.softmax(dim, dtype=None)`: `torch.softmax(x, dim)`.
pub fn softmax_method(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    a.pos.insert(0, r.clone());
    // Its dtype is keyword-only here, where the function takes `_stacklevel` second.
    if let Some(d) = a.take_kw("dtype") {
        while a.pos.len() < 3 {
            a.pos.push(Value::None);
        }
        a.pos.insert(3, d);
    }
    softmax_like(it, a, losses::softmax)
}

/// `nn.Softmax(dim=None)` and `nn.LogSoftmax(dim=None)`: modules over the functions, keeping
/// PyTorch's `dim` attribute (read at each call) and its repr (`Softmax(dim=1)`).
pub fn softmax_modules(base: Value) -> Vec<Rc<crate::object::class::Class>> {
    let make = |name: &str, doc: &str, forward: crate::object::value::BuiltinFn| {
        crate::modules::array::blocks::native_block_class(
            name,
            "torch.nn.modules.activation",
            base.clone(),
            doc,
            &[
                ("__init__", dim_module_init),
                ("forward", forward),
                ("extra_repr", dim_extra_repr),
            ],
        )
    };
    vec![
        make(
            "Softmax",
            "Softmax(dim=None): exp(x) normalised along dim.",
            |it, a| dim_module_forward(it, a, "softmax", losses::softmax),
        ),
        make(
            "LogSoftmax",
            "LogSoftmax(dim=None): log of Softmax(dim), computed stably.",
            |it, a| dim_module_forward(it, a, "log_softmax", losses::log_softmax),
        ),
    ]
}

fn dim_module_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    let dim = a.take(1, "dim")?.unwrap_or(Value::None);
    a.finish(2)?;
    if !matches!(dim, Value::None) && as_i64(&dim).is_none() {
        return Err(Exc::type_error(format!(
            "dim must be an integer or None, got {}",
            dim.type_name()
        )));
    }
    super::nn::module_init(
        it,
        Args {
            pos: vec![this.clone()],
            ..Args::default()
        },
    )?;
    crate::modules::python::builtins::set_attr(it, &this, "dim", dim)?;
    Ok(Value::None)
}

fn dim_module_forward(
    it: &mut dyn Interpreter,
    mut a: Args,
    fname: &'static str,
    f: fn(&mut Tape, &Array, isize) -> RtResult<Array>,
) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    let x = a.required(1, "input")?;
    a.finish(2)?;
    let dim = it.get_attr(&this, "dim")?;
    softmax_like(
        it,
        Args {
            pos: vec![x, dim],
            kw: Vec::new(),
            fname,
        },
        f,
    )
}

fn dim_extra_repr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.finish(1)?;
    let dim = it.get_attr(&this, "dim")?;
    let text = crate::object::format::repr(it, &dim)?;
    Ok(Value::str(&format!("dim={text}")))
}

fn reduction_arg(v: Option<Value>) -> Result<Reduction, Exc> {
    match &v {
        None => Ok(Reduction::Mean),
        Some(Value::Str(s)) => Reduction::parse(s).map_err(Exc::value_error),
        Some(other) => Err(Exc::type_error(format!(
            "reduction must be 'mean', 'sum' or 'none', got {}",
            other.type_name()
        ))),
    }
}

/// `F.mse_loss(input, target, ..., reduction='mean')` and friends; `extra` reads the
/// loss's own option (beta, delta, label_smoothing) from the keywords.
fn functional_loss(
    it: &mut dyn Interpreter,
    mut a: Args,
    make: fn(&mut Args) -> Result<TorchLoss, Exc>,
) -> Result<Value, Exc> {
    let input = tensor(&a.required(0, "input")?, a.fname)?;
    let target = tensor(&a.required(1, "target")?, a.fname)?;
    a.take_kw("size_average");
    a.take_kw("reduce");
    let reduction = reduction_arg(a.take_kw("reduction"))?;
    unsupported(&mut a, "weight")?;
    unsupported(&mut a, "pos_weight")?;
    ignore_index(&mut a)?;
    let loss = make(&mut a)?;
    a.finish(2)?;
    let st = it.state_mut();
    let r = loss.apply(&st.rt, &mut st.nn.tape, &input, &target, reduction);
    out(named(&mut st.nn.tape, r, loss_grad_fn(&loss)))
}

/// Options devarray does not implement are refused rather than ignored (they change values).
fn unsupported(a: &mut Args, name: &str) -> Result<(), Exc> {
    match a.take_kw(name) {
        None | Some(Value::None) => Ok(()),
        Some(_) => Err(Exc::new(
            ExcKind::NotImplementedError,
            format!("{}: {name}= is not supported yet; leave it None", a.fname),
        )),
    }
}

fn ignore_index(a: &mut Args) -> Result<(), Exc> {
    match a.take_kw("ignore_index").as_ref().and_then(as_i64) {
        None | Some(-100) => Ok(()),
        Some(_) => Err(Exc::new(
            ExcKind::NotImplementedError,
            format!(
                "{}: ignore_index= is not supported yet; leave it at -100",
                a.fname
            ),
        )),
    }
}

fn linear(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(&a.required(0, "input")?, "linear")?;
    let w = tensor(&a.required(1, "weight")?, "linear")?;
    let b = match a.take(2, "bias")? {
        None | Some(Value::None) => None,
        Some(v) => Some(tensor(&v, "linear")?),
    };
    a.finish(3)?;
    let st = it.state_mut();
    let t = &mut st.nn.tape;
    let r = crate::nn::layers::linear(t, &x, &w, b.as_ref());
    let name = if w.ndim() == 2 {
        crate::nn::layers::linear_grad_name(x.ndim(), b.is_some())
    } else {
        None
    };
    out(named(t, r, name))
}

fn dropout(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let xv = a.required(0, "input")?;
    let x = tensor(&xv, "dropout")?;
    let p = float_arg(a.take(1, "p")?, "p", 0.5)?;
    let training = a.flag(2, "training", true)?;
    a.take(3, "inplace")?;
    a.finish(4)?;
    if !(0.0..=1.0).contains(&p) {
        return Err(Exc::value_error(format!(
            "dropout probability has to be between 0 and 1, but got {}",
            crate::object::format::float_repr(p)
        )));
    }
    if !training || p == 0.0 {
        return Ok(wrap(x, Flavor::Torch));
    }
    // The one dropout (`nn.Dropout` runs it too): PyTorch's mask from its generator.
    let st = it.state_mut();
    let r = crate::nn::norm::dropout(&st.rt, &mut st.nn.tape, &x, p, true, None);
    out(r)
}

fn one_hot(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(&a.required(0, "tensor")?, "one_hot")?;
    let n = a
        .take(1, "num_classes")?
        .as_ref()
        .and_then(as_i64)
        .unwrap_or(-1);
    a.finish(2)?;
    if x.dtype().is_float() || x.dtype() == DType::Bool {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "one_hot is only applicable to index tensor of type LongTensor.",
        ));
    }
    let read = |op: ReduceOp| -> Result<i64, Exc> {
        let v = x.reduce(op, None, false).map_err(torch_error)?;
        Ok(v.to_host_uncounted()
            .to_f64_vec()
            .first()
            .copied()
            .unwrap_or(0.0) as i64)
    };
    let (lo, hi) = if x.size() == 0 {
        (0, -1)
    } else {
        (read(ReduceOp::Min)?, read(ReduceOp::Max)?)
    };
    if lo < 0 {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "Class values must be non-negative.",
        ));
    }
    let classes = if n < 0 { hi + 1 } else { n };
    if hi >= classes {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "Class values must be smaller than num_classes.",
        ));
    }
    let rt = &it.state_mut().rt;
    let r = (|| {
        let mut shape: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
        shape.push(1);
        let col = x.reshape(&shape)?;
        let row = rt.arange(0.0, classes as f64, 1.0, DType::Int64, x.device())?;
        Array::binary(BinaryOp::Eq, Operand::Array(&col), Operand::Array(&row))?
            .astype(DType::Int64)
    })();
    out(r)
}

fn normalize(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(&a.required(0, "input")?, "normalize")?;
    let p = float_arg(a.take(1, "p")?, "p", 2.0)?;
    let dim = a.take(2, "dim")?.as_ref().and_then(as_i64).unwrap_or(1) as isize;
    let eps = float_arg(a.take(3, "eps")?, "eps", 1e-12)?;
    a.finish(4)?;
    let t = &mut it.state_mut().nn.tape;
    let r = (|| {
        let ax = [dim];
        let abs = t.unary(&x, UnaryOp::Abs)?;
        let powed = t.binary(
            BinaryOp::Pow,
            Operand::Array(&abs),
            Operand::Scalar(Scalar::Float(p)),
        )?;
        let sum = t.reduce(&powed, ReduceOp::Sum, Some(&ax), true)?;
        let norm = t.binary(
            BinaryOp::Pow,
            Operand::Array(&sum),
            Operand::Scalar(Scalar::Float(1.0 / p)),
        )?;
        let den = t.binary(
            BinaryOp::Maximum,
            Operand::Array(&norm),
            Operand::Scalar(Scalar::Float(eps)),
        )?;
        t.binary(BinaryOp::Div, Operand::Array(&x), Operand::Array(&den))
    })();
    out(r)
}

fn no_option(_: &mut Args) -> Result<TorchLoss, Exc> {
    Ok(TorchLoss::Mse)
}

/// `torch.softmax` and `torch.log_softmax`, the same functions at the top level.
pub fn register_top_level(m: &Module) {
    m.set(
        "softmax",
        builtin(
            "softmax",
            "softmax(input, dim): exp(input) normalised along dim.",
            |it, a| softmax_like(it, a, losses::softmax),
        ),
    );
    m.set(
        "log_softmax",
        builtin(
            "log_softmax",
            "log_softmax(input, dim): log of softmax, computed stably.",
            |it, a| softmax_like(it, a, losses::log_softmax),
        ),
    );
}

/// The `torch.nn.functional` module.
pub fn build() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "torch.nn.functional",
        "PyTorch's functional interface: activations and losses as functions",
    ));
    super::conv::register_functional(&m);
    m.set(
        "relu",
        builtin("relu", "relu(input): max(input, 0).", |it, a| {
            simple(it, a, UnaryOp::Relu)
        }),
    );
    m.set(
        "sigmoid",
        builtin(
            "sigmoid",
            "sigmoid(input): 1 / (1 + exp(-input)).",
            |it, a| simple(it, a, UnaryOp::Sigmoid),
        ),
    );
    m.set(
        "tanh",
        builtin("tanh", "tanh(input)", |it, a| simple(it, a, UnaryOp::Tanh)),
    );
    m.set(
        "softmax",
        builtin(
            "softmax",
            "softmax(input, dim=None): exp(input) normalised along dim.",
            |it, a| softmax_like(it, a, losses::softmax),
        ),
    );
    m.set(
        "log_softmax",
        builtin(
            "log_softmax",
            "log_softmax(input, dim=None): log of softmax, computed stably.",
            |it, a| softmax_like(it, a, losses::log_softmax),
        ),
    );
    m.set("gelu", builtin("gelu", "gelu(input, approximate='none'): input * Phi(input) ('tanh' for the tanh approximation).", |it, mut a| {
        let x = a.required(0, "input")?;
        let tanh = match &a.take(1, "approximate")? {
            None => false,
            Some(Value::Str(s)) if &**s == "none" => false,
            Some(Value::Str(s)) if &**s == "tanh" => true,
            Some(_) => return Err(Exc::new(ExcKind::RuntimeError, "approximate argument must be either none or tanh.")),
        };
        a.finish(2)?;
        unary_call(it, &x, "gelu", |_, t, x| losses::gelu(t, x, tanh))
    }));
    m.set(
        "leaky_relu",
        builtin(
            "leaky_relu",
            "leaky_relu(input, negative_slope=0.01)",
            |it, mut a| {
                let x = a.required(0, "input")?;
                let slope = float_arg(a.take(1, "negative_slope")?, "negative_slope", 0.01)?;
                a.take(2, "inplace")?;
                a.finish(3)?;
                unary_call(it, &x, "leaky_relu", |_, t, x| {
                    losses::leaky_relu(t, x, slope)
                })
            },
        ),
    );
    m.set(
        "elu",
        builtin("elu", "elu(input, alpha=1.0)", |it, mut a| {
            let x = a.required(0, "input")?;
            let alpha = float_arg(a.take(1, "alpha")?, "alpha", 1.0)?;
            a.take(2, "inplace")?;
            a.finish(3)?;
            unary_call(it, &x, "elu", |_, t, x| losses::elu(t, x, alpha))
        }),
    );
    m.set(
        "silu",
        builtin(
            "silu",
            "silu(input): input * sigmoid(input).",
            |it, mut a| {
                let x = a.required(0, "input")?;
                a.take(1, "inplace")?;
                a.finish(2)?;
                unary_call(it, &x, "silu", |_, t, x| losses::silu(t, x))
            },
        ),
    );
    m.set(
        "softplus",
        builtin(
            "softplus",
            "softplus(input, beta=1.0, threshold=20.0): log(1 + exp(beta * input)) / beta.",
            |it, mut a| {
                let x = a.required(0, "input")?;
                let beta = float_arg(a.take(1, "beta")?, "beta", 1.0)?;
                a.take(2, "threshold")?;
                a.finish(3)?;
                unary_call(it, &x, "softplus", |_, t, x| {
                    let bx = t.binary(
                        BinaryOp::Mul,
                        Operand::Array(x),
                        Operand::Scalar(Scalar::Float(beta)),
                    )?;
                    let sp = losses::softplus(t, &bx)?;
                    t.binary(
                        BinaryOp::Div,
                        Operand::Array(&sp),
                        Operand::Scalar(Scalar::Float(beta)),
                    )
                })
            },
        ),
    );
    m.set(
        "linear",
        builtin(
            "linear",
            "linear(input, weight, bias=None): input @ weight.T + bias.",
            linear,
        ),
    );
    m.set("dropout", builtin("dropout", "dropout(input, p=0.5, training=True): zero each element with probability p, scale the rest by 1/(1-p).", dropout));
    m.set(
        "one_hot",
        builtin(
            "one_hot",
            "one_hot(tensor, num_classes=-1): int64 one-hot rows (num_classes=-1: max + 1).",
            one_hot,
        ),
    );
    m.set(
        "normalize",
        builtin(
            "normalize",
            "normalize(input, p=2.0, dim=1, eps=1e-12): input / max(norm_p(input, dim), eps).",
            normalize,
        ),
    );
    m.set(
        "mse_loss",
        builtin(
            "mse_loss",
            "mse_loss(input, target, reduction='mean')",
            |it, a| functional_loss(it, a, no_option),
        ),
    );
    m.set(
        "l1_loss",
        builtin(
            "l1_loss",
            "l1_loss(input, target, reduction='mean')",
            |it, a| functional_loss(it, a, |_| Ok(TorchLoss::L1)),
        ),
    );
    m.set(
        "smooth_l1_loss",
        builtin(
            "smooth_l1_loss",
            "smooth_l1_loss(input, target, reduction='mean', beta=1.0)",
            |it, a| {
                functional_loss(it, a, |a| {
                    Ok(TorchLoss::SmoothL1 {
                        beta: float_arg(a.take_kw("beta"), "beta", 1.0)?,
                    })
                })
            },
        ),
    );
    m.set(
        "huber_loss",
        builtin(
            "huber_loss",
            "huber_loss(input, target, reduction='mean', delta=1.0)",
            |it, a| {
                functional_loss(it, a, |a| {
                    Ok(TorchLoss::Huber {
                        delta: float_arg(a.take_kw("delta"), "delta", 1.0)?,
                    })
                })
            },
        ),
    );
    m.set("cross_entropy", builtin("cross_entropy", "cross_entropy(input, target, reduction='mean', label_smoothing=0.0): class indices or class probabilities as target.", |it, a| functional_loss(it, a, |a| Ok(TorchLoss::CrossEntropy { label_smoothing: float_arg(a.take_kw("label_smoothing"), "label_smoothing", 0.0)? }))));
    m.set(
        "nll_loss",
        builtin(
            "nll_loss",
            "nll_loss(input, target, reduction='mean'): -input[target] for log-probabilities.",
            |it, a| functional_loss(it, a, |_| Ok(TorchLoss::Nll)),
        ),
    );
    m.set(
        "binary_cross_entropy",
        builtin(
            "binary_cross_entropy",
            "binary_cross_entropy(input, target, reduction='mean'): for probabilities in [0, 1].",
            |it, a| functional_loss(it, a, |_| Ok(TorchLoss::Bce)),
        ),
    );
    m.set("binary_cross_entropy_with_logits", builtin("binary_cross_entropy_with_logits", "binary_cross_entropy_with_logits(input, target, reduction='mean'): sigmoid and BCE in one stable step.", |it, a| functional_loss(it, a, |_| Ok(TorchLoss::BceWithLogits))));
    // `F.pad`, `F.interpolate`, ... are written in the language.
    super::nn_more::register_functional(&m);
    m.set(
        "__getattr__",
        builtin("__getattr__", "", |it, mut a| {
            let name = a.required(0, "name")?;
            let text = crate::object::format::to_str(it, &name)?;
            super::nn_more::functional_attr(it, &text)?.ok_or_else(|| {
                Exc::new(
                    ExcKind::AttributeError,
                    format!("module 'torch.nn.functional' has no attribute '{text}'"),
                )
            })
        }),
    );
    m
}
