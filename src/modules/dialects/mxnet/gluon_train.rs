//! `gluon.Trainer` (MXNet's sgd, nag and adam), the `mxnet.gluon.loss` module and the
//! `npx` activations. The algorithms live in `crate::nn::optim` and `crate::nn::losses`.
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::nn::losses::{self, GluonCommon, GluonLoss};
use crate::nn::optim::Algorithm;
use crate::nn::train::Trainer;
use crate::object::error::Exc;
use crate::object::format::float_repr;
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, ArrayValue, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};

use super::gluon::{bound, downcast, object};
use super::gluon_blocks::params_of;

// ---- Trainer ---------------------------------------------------------------------------------

struct TrainerObj {
    trainer: Trainer,
    /// `'lr_scheduler'`: the user's scheduler object (MXNet shares it, state and all).
    scheduler: Option<Value>,
    /// Steps taken, MXNet's `num_update`, which the scheduler is called with.
    num_update: Cell<i64>,
}

impl TrainerObj {
    fn schedule(&self, num_update: i64) -> Option<f64> {
        let s = downcast::<SchedulerObj>(self.scheduler.as_ref()?, "").ok()?;
        let lr = s.0.borrow_mut().call(num_update);
        Some(lr)
    }

    /// `trainer.learning_rate`: the scheduler's value at the current update count, if any.
    fn learning_rate(&self) -> f64 {
        self.schedule(self.num_update.get())
            .unwrap_or_else(|| self.trainer.learning_rate.get())
    }
}

impl NativeObject for TrainerObj {
    fn type_name(&self) -> &str {
        "Trainer"
    }
    fn repr(&self) -> String {
        format!(
            "<Trainer {}, learning_rate={}, {} parameters>",
            self.trainer.optimizer,
            float_repr(self.learning_rate()),
            self.trainer.params.len()
        )
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["learning_rate", "set_learning_rate", "step"]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "learning_rate" => Some(Value::Float(self.learning_rate())),
            "set_learning_rate" => Some(bound(this, "set_learning_rate", "trainer.set_learning_rate(lr): the learning rate of the next steps.", |_, r, mut a| {
                let lr = a.required(0, "lr")?;
                a.finish(1)?;
                let lr = as_f64(&lr).ok_or_else(|| Exc::type_error(format!("set_learning_rate: lr must be a number, got {}", lr.type_name())))?;
                let t = downcast::<TrainerObj>(r, "a Trainer")?;
                if t.scheduler.is_some() {
                    return Err(Exc::value_error("LRScheduler of the optimizer has already been defined. Note that set_learning_rate can mutate the value of the learning rate of the optimizer only when the LRScheduler of the optimizer is undefined."));
                }
                t.trainer.learning_rate.set(lr);
                Ok(Value::None)
            })),
            "step" => Some(bound(this, "step", "trainer.step(batch_size): one optimizer update with the gradients divided by batch_size (summed across devices first).", |it, r, mut a| {
                let bs = a.required(0, "batch_size")?;
                a.take(1, "ignore_stale_grad")?;
                a.finish(2)?;
                let bs = as_f64(&bs).ok_or_else(|| Exc::type_error("batch_size must be a number"))?;
                let t = downcast::<TrainerObj>(r, "a Trainer")?;
                let n = t.num_update.get() + 1;
                if let Some(lr) = t.schedule(n) {
                    t.trainer.learning_rate.set(lr);
                }
                let st = it.state_mut();
                t.trainer.step(&st.rt, &st.nn.tape, bs)?;
                t.num_update.set(n);
                Ok(Value::None)
            })),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The options each optimizer takes (accepted-and-ignored ones included), for the error
/// that names them.
fn options_of(optimizer: &str) -> &'static [&'static str] {
    match optimizer {
        "adam" => &[
            "learning_rate",
            "lr_scheduler",
            "beta1",
            "beta2",
            "epsilon",
            "wd",
            "rescale_grad",
            "clip_gradient",
            "lazy_update",
            "multi_precision",
        ],
        "rmsprop" => &[
            "learning_rate",
            "lr_scheduler",
            "gamma1",
            "gamma2",
            "epsilon",
            "centered",
            "wd",
            "rescale_grad",
            "clip_gradient",
            "multi_precision",
        ],
        "adadelta" => &[
            "learning_rate",
            "lr_scheduler",
            "rho",
            "epsilon",
            "wd",
            "rescale_grad",
            "clip_gradient",
            "multi_precision",
        ],
        "adagrad" => &[
            "learning_rate",
            "lr_scheduler",
            "eps",
            "wd",
            "rescale_grad",
            "clip_gradient",
            "multi_precision",
        ],
        "nag" => &[
            "learning_rate",
            "lr_scheduler",
            "momentum",
            "wd",
            "rescale_grad",
            "clip_gradient",
            "multi_precision",
        ],
        _ => &[
            "learning_rate",
            "lr_scheduler",
            "momentum",
            "wd",
            "rescale_grad",
            "clip_gradient",
            "lazy_update",
            "multi_precision",
        ],
    }
}

pub(crate) fn trainer(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let params = params_of(&a.required(0, "params")?)?;
    let opt = a.required(1, "optimizer")?;
    let opts = a.take(2, "optimizer_params")?;
    a.take(3, "kvstore")?;
    a.take(4, "compression_params")?;
    a.take(5, "update_on_kvstore")?;
    a.finish(6)?;
    let name = match &opt {
        Value::Str(s) => s.to_ascii_lowercase(),
        other => {
            return Err(Exc::type_error(format!(
                "Trainer: optimizer must be a name such as 'sgd', got {}",
                crate::object::format::repr(it, other)?
            )))
        }
    };
    if !matches!(
        name.as_str(),
        "sgd" | "nag" | "adam" | "rmsprop" | "adagrad" | "adadelta"
    ) {
        return Err(Exc::value_error(format!(
            "Cannot find optimizer {name}: devarray's Trainer has 'sgd', 'nag', 'adam', 'rmsprop', 'adagrad' and 'adadelta'"
        )));
    }
    let allowed = options_of(&name);
    let mut get = std::collections::HashMap::new();
    let mut scheduler = None;
    match &opts {
        None | Some(Value::None) => {}
        Some(Value::Dict(d)) => {
            for (k, v) in d.borrow().entries.iter() {
                let Value::Str(k) = k else {
                    return Err(Exc::type_error(
                        "Trainer: optimizer_params keys must be strings such as 'learning_rate'",
                    ));
                };
                if !allowed.contains(&&**k) {
                    return Err(Exc::type_error(format!(
                        "Trainer: the '{name}' optimizer has no option '{k}'; it takes {}",
                        allowed.join(", ")
                    )));
                }
                if matches!(v, Value::None) {
                    continue;
                }
                if &**k == "lr_scheduler" {
                    downcast::<SchedulerObj>(v, "an mxnet.lr_scheduler scheduler")?;
                    scheduler = Some(v.clone());
                    continue;
                }
                let x = as_f64(v).ok_or_else(|| {
                    Exc::type_error(format!(
                        "Trainer: option '{k}' must be a number, got {}",
                        v.type_name()
                    ))
                })?;
                get.insert(k.to_string(), x);
            }
        }
        Some(other) => {
            return Err(Exc::type_error(format!(
                "Trainer: optimizer_params must be a dict such as {{'learning_rate': 0.1}}, got {}",
                other.type_name()
            )))
        }
    }
    let num = |k: &str, default: f64| get.get(k).copied().unwrap_or(default);
    let clip = get.get("clip_gradient").copied();
    let (algorithm, default_lr) = match name.as_str() {
        "adam" => (
            Algorithm::MxAdam {
                beta1: num("beta1", 0.9),
                beta2: num("beta2", 0.999),
                epsilon: num("epsilon", 1e-8),
                wd: num("wd", 0.0),
                clip_gradient: clip,
            },
            0.001,
        ),
        "rmsprop" => {
            if get.get("centered").copied().unwrap_or(0.0) != 0.0 {
                return Err(Exc::new(
                    crate::object::error::ExcKind::NotImplementedError,
                    "Trainer: rmsprop with centered=True is not supported yet; use centered=False",
                ));
            }
            (
                Algorithm::MxRmsprop {
                    gamma1: num("gamma1", 0.9),
                    epsilon: num("epsilon", 1e-8),
                    wd: num("wd", 0.0),
                    clip_gradient: clip,
                },
                0.001,
            )
        }
        "adadelta" => (
            Algorithm::MxAdadelta {
                rho: num("rho", 0.9),
                epsilon: num("epsilon", 1e-5),
                wd: num("wd", 0.0),
                clip_gradient: clip,
            },
            0.01,
        ),
        "adagrad" => (
            Algorithm::MxAdagrad {
                eps: num("eps", 1e-7),
                wd: num("wd", 0.0),
                clip_gradient: clip,
            },
            0.01,
        ),
        other => (
            Algorithm::MxSgd {
                momentum: num("momentum", 0.0),
                wd: num("wd", 0.0),
                clip_gradient: clip,
                nag: other == "nag",
            },
            0.01,
        ),
    };
    // MXNet's sgd, nag and adagrad have no learning_rate default of their own (a scheduler
    // keeps its base_lr); adam and rmsprop pass 0.001, which overwrites the scheduler's, with
    // MXNet's notice.
    let given = get
        .get("learning_rate")
        .copied()
        .or(matches!(name.as_str(), "adam" | "rmsprop").then_some(default_lr));
    if let (Some(s), Some(lr)) = (&scheduler, given) {
        let s = downcast::<SchedulerObj>(s, "a scheduler")?;
        let mut sched = s.0.borrow_mut();
        if sched.base_lr != lr {
            it.out().stdout("learning rate from ``lr_scheduler`` has been overwritten by ``learning_rate`` in optimizer.\n");
            sched.base_lr = lr;
        }
    }
    let lr = given.unwrap_or(default_lr);
    let rescale = num("rescale_grad", 1.0);
    Ok(object(TrainerObj {
        trainer: Trainer::new(params, &name, algorithm, lr, rescale),
        scheduler,
        num_update: Cell::new(0),
    }))
}

// ---- losses ----------------------------------------------------------------------------------

struct GluonLossObj {
    loss: GluonLoss,
    common: GluonCommon,
}

fn weight_text(w: Option<f64>) -> String {
    w.map_or("None".into(), float_repr)
}

impl NativeObject for GluonLossObj {
    fn type_name(&self) -> &str {
        self.loss.name()
    }
    fn repr(&self) -> String {
        format!(
            "{}(batch_axis={}, w={})",
            self.loss.name(),
            self.common.batch_axis,
            weight_text(self.common.weight)
        )
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["forward", "hybridize"]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "__call__" | "forward" => Some(bound(
                this,
                "forward",
                "loss(pred, label, sample_weight=None): one loss value per sample.",
                |it, r, mut a| {
                    let pred = a.required(0, "pred")?;
                    let label = a.required(1, "label")?;
                    let sw = a.take(2, "sample_weight")?;
                    a.finish(3)?;
                    let l = downcast::<GluonLossObj>(r, "a loss")?;
                    let name = l.loss.name();
                    let p = array_arg(&pred, name, "pred")?;
                    let y = array_arg(&label, name, "label")?;
                    let sw = match &sw {
                        None | Some(Value::None) => None,
                        Some(v) => Some(array_arg(v, name, "sample_weight")?.array.clone()),
                    };
                    let st = it.state_mut();
                    let out = l.loss.apply(
                        &st.rt,
                        &mut st.nn.tape,
                        l.common,
                        &p.array,
                        &y.array,
                        sw.as_ref(),
                    )?;
                    Ok(wrap(out, p.flavor))
                },
            )),
            "hybridize" => Some(bound(
                this,
                "hybridize",
                "loss.hybridize(): accepted; the loss runs imperatively.",
                |_, _, _| Ok(Value::None),
            )),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn array_arg<'a>(v: &'a Value, op: &str, what: &str) -> Result<&'a ArrayValue, Exc> {
    v.as_array().ok_or_else(|| {
        Exc::type_error(format!(
            "{op}: {what} must be an array, got {}",
            v.type_name()
        ))
    })
}

fn opt_f64(v: Option<Value>, what: &str) -> Result<Option<f64>, Exc> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(v) => as_f64(&v).map(Some).ok_or_else(|| {
            Exc::type_error(format!("{what} must be a number, got {}", v.type_name()))
        }),
    }
}

fn opt_bool(v: Option<Value>, default: bool) -> Result<bool, Exc> {
    v.map(|v| v.truthy())
        .transpose()
        .map(|b| b.unwrap_or(default))
}

fn opt_axis(v: Option<Value>, what: &str, default: isize) -> Result<isize, Exc> {
    match v {
        None | Some(Value::None) => Ok(default),
        Some(v) => as_i64(&v).map(|i| i as isize).ok_or_else(|| {
            Exc::type_error(format!("{what} must be an integer, got {}", v.type_name()))
        }),
    }
}

/// `weight` and `batch_axis` at positions `at` and `at + 1`, as each Gluon loss orders them.
fn common_args(a: &mut Args, at: usize, default_weight: Option<f64>) -> Result<GluonCommon, Exc> {
    let weight = match a.take(at, "weight")? {
        None => default_weight,
        Some(v) => opt_f64(Some(v), "weight")?,
    };
    let batch_axis = opt_axis(a.take(at + 1, "batch_axis")?, "batch_axis", 0)?;
    a.take_kw("prefix");
    a.take_kw("params");
    Ok(GluonCommon { weight, batch_axis })
}

fn loss_obj(loss: GluonLoss, common: GluonCommon) -> Value {
    object(GluonLossObj { loss, common })
}

fn l2(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let common = common_args(&mut a, 0, Some(1.0))?;
    a.finish(2)?;
    Ok(loss_obj(GluonLoss::L2, common))
}

fn l1(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let common = common_args(&mut a, 0, None)?;
    a.finish(2)?;
    Ok(loss_obj(GluonLoss::L1, common))
}

fn softmax_ce(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let axis = opt_axis(a.take(0, "axis")?, "axis", -1)?;
    let sparse_label = opt_bool(a.take(1, "sparse_label")?, true)?;
    let from_logits = opt_bool(a.take(2, "from_logits")?, false)?;
    let common = common_args(&mut a, 3, None)?;
    a.finish(5)?;
    Ok(loss_obj(
        GluonLoss::SoftmaxCe {
            axis,
            sparse_label,
            from_logits,
        },
        common,
    ))
}

fn sigmoid_bce(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let from_sigmoid = opt_bool(a.take(0, "from_sigmoid")?, false)?;
    let common = common_args(&mut a, 1, None)?;
    a.finish(3)?;
    Ok(loss_obj(GluonLoss::SigmoidBce { from_sigmoid }, common))
}

fn huber(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let rho = opt_f64(a.take(0, "rho")?, "rho")?.unwrap_or(1.0);
    if rho <= 0.0 {
        return Err(Exc::value_error(format!(
            "HuberLoss: rho must be positive, got {}",
            float_repr(rho)
        )));
    }
    let common = common_args(&mut a, 1, None)?;
    a.finish(3)?;
    Ok(loss_obj(GluonLoss::Huber { rho }, common))
}

/// The public loss classes, written in the language over the kernels below
/// (`library/mxnet/gluon_loss.da`, `mxnet.gluon.loss._more`): subclassable Blocks, as
/// MXNet's.
const LOSS_NAMES: &[&str] = &[
    "Loss",
    "L2Loss",
    "L1Loss",
    "SoftmaxCrossEntropyLoss",
    "SoftmaxCELoss",
    "SigmoidBinaryCrossEntropyLoss",
    "SigmoidBCELoss",
    "HuberLoss",
];

/// `mxnet.gluon.loss`: the loss kernels as private constructors (`_L2Loss(weight,
/// batch_axis)`, ...) that the language's loss classes call, and those classes by name.
pub(crate) fn loss_module() -> Rc<Module> {
    let m = Rc::new(Module::new("mxnet.gluon.loss", "loss functions"));
    m.set(
        "_L2Loss",
        builtin(
            "_L2Loss",
            "_L2Loss(weight=1.0, batch_axis=0): 0.5 * (pred - label)^2, averaged per sample.",
            l2,
        ),
    );
    m.set(
        "_L1Loss",
        builtin(
            "_L1Loss",
            "_L1Loss(weight=None, batch_axis=0): |pred - label|, averaged per sample.",
            l1,
        ),
    );
    m.set("_SoftmaxCrossEntropyLoss", builtin("_SoftmaxCrossEntropyLoss", "_SoftmaxCrossEntropyLoss(axis=-1, sparse_label=True, from_logits=False, weight=None, batch_axis=0): -log softmax(pred)[label] per sample.", softmax_ce));
    m.set("_SigmoidBinaryCrossEntropyLoss", builtin("_SigmoidBinaryCrossEntropyLoss", "_SigmoidBinaryCrossEntropyLoss(from_sigmoid=False, weight=None, batch_axis=0): binary cross-entropy of sigmoid(pred) (or of pred with from_sigmoid=True).", sigmoid_bce));
    m.set("_HuberLoss", builtin("_HuberLoss", "_HuberLoss(rho=1, weight=None, batch_axis=0): 0.5/rho * d^2 where |d| <= rho, else |d| - rho/2.", huber));
    m.set(
        "__getattr__",
        builtin("__getattr__", "", |it, a| {
            crate::modules::python::library_names::library_attr(
                it,
                a,
                "mxnet.gluon.loss",
                "mxnet.gluon.loss._more",
                LOSS_NAMES,
            )
        }),
    );
    m
}

// ---- npx activations ---------------------------------------------------------------------------

fn activation(
    it: &mut dyn Interpreter,
    mut a: Args,
    f: fn(
        &mut crate::nn::autograd::Tape,
        &crate::runtime::Array,
        isize,
    ) -> crate::runtime::Result<crate::runtime::Array>,
) -> Result<Value, Exc> {
    let x = a.required(0, "data")?;
    let axis = opt_axis(a.take(1, "axis")?, "axis", -1)?;
    a.take_kw("length");
    a.take_kw("temperature");
    a.take_kw("use_length");
    a.take_kw("dtype");
    a.finish(2)?;
    let fname = a.fname;
    let xv = array_arg(&x, fname, "data")?;
    let out = f(&mut it.state_mut().nn.tape, &xv.array, axis)?;
    Ok(wrap(out, xv.flavor))
}

/// `softmax` and `log_softmax` into a module (`nd` has relu and sigmoid already).
pub(crate) fn set_softmax(m: &Module) {
    m.set(
        "softmax",
        builtin(
            "softmax",
            "softmax(data, axis=-1): exp(data) normalised along axis.",
            |it, a| activation(it, a, losses::softmax),
        ),
    );
    m.set(
        "log_softmax",
        builtin(
            "log_softmax",
            "log_softmax(data, axis=-1): log of softmax, computed stably.",
            |it, a| activation(it, a, losses::log_softmax),
        ),
    );
}

/// `npx.relu`, `npx.sigmoid`, `npx.softmax`, `npx.log_softmax` into a module.
pub(crate) fn set_npx_activations(m: &Module) {
    m.set(
        "relu",
        builtin("relu", "relu(data): max(data, 0), elementwise.", |it, a| {
            activation(it, a, |t, x, _| t.unary(x, crate::runtime::UnaryOp::Relu))
        }),
    );
    m.set(
        "sigmoid",
        builtin(
            "sigmoid",
            "sigmoid(data): 1 / (1 + exp(-data)), elementwise.",
            |it, a| {
                activation(it, a, |t, x, _| {
                    t.unary(x, crate::runtime::UnaryOp::Sigmoid)
                })
            },
        ),
    );
    set_softmax(m);
}

// ---- mxnet.lr_scheduler ------------------------------------------------------------------------

/// MXNet's schedulers keep state between calls (FactorScheduler lowers `base_lr` in place as the
/// update count passes each step), so they are reproduced with that state.
#[derive(Clone, Debug)]
enum ScheduleKind {
    Factor {
        step: i64,
        factor: f64,
        stop_factor_lr: f64,
        count: i64,
    },
    MultiFactor {
        steps: Vec<i64>,
        factor: f64,
        cur: usize,
    },
    Cosine {
        max_update: i64,
        base_lr_orig: f64,
        final_lr: f64,
    },
}

#[derive(Clone, Debug)]
struct Schedule {
    kind: ScheduleKind,
    base_lr: f64,
    warmup_steps: i64,
    warmup_begin_lr: f64,
    warmup_final_lr: f64,
    warmup_linear: bool,
}

impl Schedule {
    /// `scheduler(num_update)`, MXNet 1.9.1's arithmetic.
    fn call(&mut self, num_update: i64) -> f64 {
        if num_update < self.warmup_steps {
            if !self.warmup_linear {
                return self.warmup_begin_lr;
            }
            let increase = (self.warmup_final_lr - self.warmup_begin_lr) * num_update as f64
                / self.warmup_steps as f64;
            return self.warmup_begin_lr + increase;
        }
        match &mut self.kind {
            ScheduleKind::Factor {
                step,
                factor,
                stop_factor_lr,
                count,
            } => {
                while num_update > *count + *step {
                    *count += *step;
                    self.base_lr *= *factor;
                    if self.base_lr < *stop_factor_lr {
                        self.base_lr = *stop_factor_lr;
                    }
                    // Once the rate can no longer change, jump to the last step MXNet's loop
                    // would reach instead of walking a huge update count one step at a time.
                    if *factor == 1.0 || self.base_lr <= *stop_factor_lr {
                        if num_update > *count + *step {
                            *count += (num_update - *count - 1) / *step * *step;
                        }
                        break;
                    }
                }
            }
            ScheduleKind::MultiFactor { steps, factor, cur } => {
                while let Some(&s) = steps.get(*cur) {
                    if num_update > s {
                        *cur += 1;
                        self.base_lr *= *factor;
                    } else {
                        break;
                    }
                }
            }
            ScheduleKind::Cosine {
                max_update,
                base_lr_orig,
                final_lr,
            } => {
                if num_update <= *max_update {
                    let max_steps = (*max_update - self.warmup_steps) as f64;
                    self.base_lr = *final_lr
                        + (*base_lr_orig - *final_lr)
                            * (1.0
                                + (std::f64::consts::PI * (num_update - self.warmup_steps) as f64
                                    / max_steps)
                                    .cos())
                            / 2.0;
                }
            }
        }
        self.base_lr
    }

    fn name(&self) -> &'static str {
        match self.kind {
            ScheduleKind::Factor { .. } => "FactorScheduler",
            ScheduleKind::MultiFactor { .. } => "MultiFactorScheduler",
            ScheduleKind::Cosine { .. } => "CosineScheduler",
        }
    }
}

struct SchedulerObj(RefCell<Schedule>);

impl NativeObject for SchedulerObj {
    fn type_name(&self) -> &str {
        self.0.borrow().name()
    }
    fn repr(&self) -> String {
        format!("<mxnet.lr_scheduler.{} object>", self.0.borrow().name())
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["base_lr"]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "base_lr" => Some(Value::Float(self.0.borrow().base_lr)),
            "__call__" => Some(bound(
                this,
                "__call__",
                "scheduler(num_update): the learning rate after num_update updates.",
                |_, r, mut a| {
                    let n = a.required(0, "num_update")?;
                    a.finish(1)?;
                    let n = as_i64(&n).ok_or_else(|| {
                        Exc::type_error(format!(
                            "num_update must be an integer, got {}",
                            n.type_name()
                        ))
                    })?;
                    let s = downcast::<SchedulerObj>(r, "a scheduler")?;
                    let lr = s.0.borrow_mut().call(n);
                    Ok(Value::Float(lr))
                },
            )),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn base_lr_arg(a: &mut Args, at: usize) -> Result<f64, Exc> {
    Ok(opt_f64(a.take(at, "base_lr")?, "base_lr")?.unwrap_or(0.01))
}

/// The warmup options every scheduler takes, keyword or positional from `at`.
fn schedule(a: &mut Args, base_lr: f64, at: usize, kind: ScheduleKind) -> Result<Value, Exc> {
    let warmup_steps = opt_axis(a.take(at, "warmup_steps")?, "warmup_steps", 0)? as i64;
    let warmup_begin_lr =
        opt_f64(a.take(at + 1, "warmup_begin_lr")?, "warmup_begin_lr")?.unwrap_or(0.0);
    let mode = a.take(at + 2, "warmup_mode")?;
    a.finish(at + 3)?;
    let warmup_linear = match &mode {
        None => true,
        Some(Value::Str(s)) if &**s == "linear" => true,
        Some(Value::Str(s)) if &**s == "constant" => false,
        Some(_) => {
            return Err(Exc::value_error(
                "Supports only linear and constant modes of warmup",
            ))
        }
    };
    if warmup_begin_lr > base_lr {
        return Err(Exc::value_error(
            "Base lr has to be higher than warmup_begin_lr",
        ));
    }
    if warmup_steps < 0 {
        return Err(Exc::value_error("Warmup steps has to be positive or 0"));
    }
    Ok(object(SchedulerObj(RefCell::new(Schedule {
        kind,
        base_lr,
        warmup_steps,
        warmup_begin_lr,
        warmup_final_lr: base_lr,
        warmup_linear,
    }))))
}

fn factor_arg(v: Option<Value>) -> Result<f64, Exc> {
    let f = opt_f64(v, "factor")?.unwrap_or(1.0);
    if f > 1.0 {
        return Err(Exc::value_error(
            "Factor must be no more than 1 to make lr reduce",
        ));
    }
    Ok(f)
}

pub(crate) fn lr_scheduler_module() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "mxnet.lr_scheduler",
        "learning-rate schedules for gluon.Trainer",
    ));
    m.set("FactorScheduler", builtin("FactorScheduler", "FactorScheduler(step, factor=1, stop_factor_lr=1e-08, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'): base_lr * factor every step updates.", |_, mut a| {
        let step = opt_axis(Some(a.required(0, "step")?), "step", 1)? as i64;
        let factor = factor_arg(a.take(1, "factor")?)?;
        let stop_factor_lr = opt_f64(a.take(2, "stop_factor_lr")?, "stop_factor_lr")?.unwrap_or(1e-8);
        if step < 1 {
            return Err(Exc::value_error("Schedule step must be greater or equal than 1 round"));
        }
        let base_lr = base_lr_arg(&mut a, 3)?;
        schedule(&mut a, base_lr, 4, ScheduleKind::Factor { step, factor, stop_factor_lr, count: 0 })
    }));
    m.set("MultiFactorScheduler", builtin("MultiFactorScheduler", "MultiFactorScheduler(step, factor=1, base_lr=0.01, ...): base_lr * factor after each update count in the list step.", |it, mut a| {
        let steps_v = a.required(0, "step")?;
        let factor = factor_arg(a.take(1, "factor")?)?;
        let steps: Vec<i64> = it.iterate(&steps_v)?.iter().map(|v| opt_axis(Some(v.clone()), "step", 1).map(|s| s as i64)).collect::<Result<_, _>>()?;
        if steps.is_empty() {
            return Err(Exc::value_error("MultiFactorScheduler: step must be a non-empty list of update counts"));
        }
        for (i, s) in steps.iter().enumerate() {
            if i > 0 && *s <= steps[i - 1] {
                return Err(Exc::value_error("Schedule step must be an increasing integer list"));
            }
            if *s < 1 {
                return Err(Exc::value_error("Schedule step must be greater or equal than 1 round"));
            }
        }
        let base_lr = base_lr_arg(&mut a, 2)?;
        schedule(&mut a, base_lr, 3, ScheduleKind::MultiFactor { steps, factor, cur: 0 })
    }));
    m.set("CosineScheduler", builtin("CosineScheduler", "CosineScheduler(max_update, base_lr=0.01, final_lr=0, warmup_steps=0, ...): cosine from base_lr to final_lr over max_update updates.", |_, mut a| {
        let max_update = opt_axis(Some(a.required(0, "max_update")?), "max_update", 1)? as i64;
        if max_update < 1 {
            return Err(Exc::value_error("maximum number of updates must be strictly positive"));
        }
        let base_lr = base_lr_arg(&mut a, 1)?;
        let final_lr = opt_f64(a.take(2, "final_lr")?, "final_lr")?.unwrap_or(0.0);
        schedule(&mut a, base_lr, 3, ScheduleKind::Cosine { max_update, base_lr_orig: base_lr, final_lr })
    }));
    m
}
