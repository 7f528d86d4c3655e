//! `gluon.Trainer` (MXNet's sgd, nag and adam), the `mxnet.gluon.loss` module and the
//! `npx` activations. The algorithms live in `crate::nn::optim` and `crate::nn::losses`.
use std::rc::Rc;

use crate::nn::losses::{self, GluonCommon, GluonLoss};
use crate::nn::optim::Algorithm;
use crate::nn::train::Trainer;
use crate::object::error::Exc;
use crate::object::format::float_repr;
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, ArrayValue, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};

use super::gluon::{bound, downcast, object, params_of};

// ---- Trainer ---------------------------------------------------------------------------------

struct TrainerObj(Trainer);

impl NativeObject for TrainerObj {
    fn type_name(&self) -> &str {
        "Trainer"
    }
    fn repr(&self) -> String {
        format!(
            "<Trainer {}, learning_rate={}, {} parameters>",
            self.0.optimizer,
            float_repr(self.0.learning_rate.get()),
            self.0.params.len()
        )
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["learning_rate", "set_learning_rate", "step"]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "learning_rate" => Some(Value::Float(self.0.learning_rate.get())),
            "set_learning_rate" => Some(bound(this, "set_learning_rate", "trainer.set_learning_rate(lr): the learning rate of the next steps.", |_, r, mut a| {
                let lr = a.required(0, "lr")?;
                a.finish(1)?;
                let lr = as_f64(&lr).ok_or_else(|| Exc::type_error(format!("set_learning_rate: lr must be a number, got {}", lr.type_name())))?;
                downcast::<TrainerObj>(r, "a Trainer")?.0.learning_rate.set(lr);
                Ok(Value::None)
            })),
            "step" => Some(bound(this, "step", "trainer.step(batch_size): one optimizer update with the gradients divided by batch_size (summed across devices first).", |it, r, mut a| {
                let bs = a.required(0, "batch_size")?;
                a.take(1, "ignore_stale_grad")?;
                a.finish(2)?;
                let bs = as_f64(&bs).ok_or_else(|| Exc::type_error("batch_size must be a number"))?;
                let t = downcast::<TrainerObj>(r, "a Trainer")?;
                let st = it.state_mut();
                t.0.step(&st.rt, &st.nn.tape, bs)?;
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
            "beta1",
            "beta2",
            "epsilon",
            "wd",
            "rescale_grad",
            "clip_gradient",
            "lazy_update",
            "multi_precision",
        ],
        "nag" => &[
            "learning_rate",
            "momentum",
            "wd",
            "rescale_grad",
            "clip_gradient",
            "multi_precision",
        ],
        _ => &[
            "learning_rate",
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
    if !matches!(name.as_str(), "sgd" | "nag" | "adam") {
        return Err(Exc::value_error(format!(
            "Cannot find optimizer {name}: devarray's Trainer has 'sgd', 'nag' and 'adam'"
        )));
    }
    let allowed = options_of(&name);
    let mut get = std::collections::HashMap::new();
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
    let lr = num("learning_rate", default_lr);
    let rescale = num("rescale_grad", 1.0);
    Ok(object(TrainerObj(Trainer::new(
        params, &name, algorithm, lr, rescale,
    ))))
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

pub(crate) fn loss_module() -> Rc<Module> {
    let m = Rc::new(Module::new("mxnet.gluon.loss", "loss functions"));
    m.set(
        "L2Loss",
        builtin(
            "L2Loss",
            "L2Loss(weight=1.0, batch_axis=0): 0.5 * (pred - label)^2, averaged per sample.",
            l2,
        ),
    );
    m.set(
        "L1Loss",
        builtin(
            "L1Loss",
            "L1Loss(weight=None, batch_axis=0): |pred - label|, averaged per sample.",
            l1,
        ),
    );
    let ce: &[&'static str] = &["SoftmaxCrossEntropyLoss", "SoftmaxCELoss"];
    for name in ce {
        m.set(name, builtin(name, "SoftmaxCrossEntropyLoss(axis=-1, sparse_label=True, from_logits=False, weight=None, batch_axis=0): -log softmax(pred)[label] per sample.", softmax_ce));
    }
    for name in ["SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss"] {
        m.set(name, builtin(name, "SigmoidBinaryCrossEntropyLoss(from_sigmoid=False, weight=None, batch_axis=0): binary cross-entropy of sigmoid(pred) (or of pred with from_sigmoid=True).", sigmoid_bce));
    }
    m.set("HuberLoss", builtin("HuberLoss", "HuberLoss(rho=1, weight=None, batch_axis=0): 0.5/rho * d^2 where |d| <= rho, else |d| - rho/2.", huber));
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
