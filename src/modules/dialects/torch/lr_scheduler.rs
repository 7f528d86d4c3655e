//! `torch.optim.lr_scheduler`: StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR and
//! LambdaLR with PyTorch's (chainable) formulas. A scheduler reaches its optimizer only through
//! `param_groups`, the list of dicts a program may edit too, as PyTorch's do.
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::object::error::{Exc, ExcKind};
use crate::object::interpreter::hash_key;
use crate::object::ops::{as_f64, as_i64};
use crate::object::value::{Args, Dict, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};

use crate::modules::python::native::{bound, downcast, object};

enum Kind {
    Step {
        step_size: i64,
        gamma: f64,
    },
    MultiStep {
        milestones: Vec<i64>,
        gamma: f64,
    },
    Exponential {
        gamma: f64,
    },
    Cosine {
        t_max: i64,
        eta_min: f64,
    },
    /// One function for every group, or one per group.
    Lambda(Vec<Value>),
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Step { .. } => "StepLR",
            Kind::MultiStep { .. } => "MultiStepLR",
            Kind::Exponential { .. } => "ExponentialLR",
            Kind::Cosine { .. } => "CosineAnnealingLR",
            Kind::Lambda(_) => "LambdaLR",
        }
    }
}

struct Scheduler {
    kind: Kind,
    optimizer: Value,
    base_lrs: Vec<f64>,
    last_epoch: Cell<i64>,
    step_count: Cell<i64>,
    last_lr: RefCell<Vec<f64>>,
}

fn groups(it: &mut dyn Interpreter, optimizer: &Value) -> Result<Vec<Rc<RefCell<Dict>>>, Exc> {
    let v = it.get_attr(optimizer, "param_groups")?;
    it.iterate(&v)?
        .into_iter()
        .map(|g| match &g {
            Value::Dict(d) => Ok(d.clone()),
            other => Err(Exc::type_error(format!(
                "param_groups must hold dicts, got {}",
                other.type_name()
            ))),
        })
        .collect()
}

fn get_f64(d: &Dict, name: &str) -> Result<f64, Exc> {
    let v = d
        .get(&hash_key(&Value::str(name))?)
        .cloned()
        .ok_or_else(|| Exc::new(ExcKind::KeyError, format!("'{name}'")))?;
    as_f64(&v).ok_or_else(|| {
        Exc::type_error(format!(
            "param group '{name}' must be a number, got {}",
            v.type_name()
        ))
    })
}

fn set_f64(d: &mut Dict, name: &str, x: f64) -> Result<(), Exc> {
    let k = Value::str(name);
    d.insert(hash_key(&k)?, k, Value::Float(x));
    Ok(())
}

impl Scheduler {
    /// `get_lr()` for the current `last_epoch`, from each group's current lr.
    fn lrs(&self, it: &mut dyn Interpreter, gs: &[Rc<RefCell<Dict>>]) -> Result<Vec<f64>, Exc> {
        let epoch = self.last_epoch.get();
        let mut out = Vec::with_capacity(gs.len());
        for (i, g) in gs.iter().enumerate() {
            let lr = get_f64(&g.borrow(), "lr")?;
            let base = self.base_lrs.get(i).copied().unwrap_or(lr);
            out.push(match &self.kind {
                Kind::Step { step_size, gamma } => {
                    if epoch == 0 || epoch % step_size != 0 {
                        lr
                    } else {
                        lr * gamma
                    }
                }
                Kind::MultiStep { milestones, gamma } => {
                    let hits = milestones.iter().filter(|&&m| m == epoch).count();
                    if hits == 0 {
                        lr
                    } else {
                        lr * gamma.powf(hits as f64)
                    }
                }
                Kind::Exponential { gamma } => {
                    if epoch == 0 {
                        lr
                    } else {
                        lr * gamma
                    }
                }
                Kind::Cosine { t_max, eta_min } => {
                    let pi = std::f64::consts::PI;
                    let t = *t_max as f64;
                    if epoch == 0 {
                        lr
                    } else if self.step_count.get() == 1 && epoch > 0 {
                        eta_min + (base - eta_min) * (1.0 + (epoch as f64 * pi / t).cos()) / 2.0
                    } else if (epoch - 1 - t_max).rem_euclid(2 * t_max) == 0 {
                        lr + (base - eta_min) * (1.0 - (pi / t).cos()) / 2.0
                    } else {
                        (1.0 + (pi * epoch as f64 / t).cos())
                            / (1.0 + (pi * (epoch - 1) as f64 / t).cos())
                            * (lr - eta_min)
                            + eta_min
                    }
                }
                Kind::Lambda(fs) => {
                    let f = fs.get(i).or_else(|| fs.first()).cloned().ok_or_else(|| {
                        Exc::value_error("LambdaLR needs a function of the epoch")
                    })?;
                    let args = Args {
                        pos: vec![Value::Int(epoch)],
                        ..Args::default()
                    };
                    let factor = it.call_value(&f, args)?;
                    let factor = as_f64(&factor).ok_or_else(|| {
                        Exc::type_error(format!(
                            "lr_lambda must return a number, got {}",
                            factor.type_name()
                        ))
                    })?;
                    base * factor
                }
            });
        }
        Ok(out)
    }

    fn step(&self, it: &mut dyn Interpreter) -> Result<(), Exc> {
        let gs = groups(it, &self.optimizer)?;
        self.step_count.set(self.step_count.get() + 1);
        self.last_epoch.set(self.last_epoch.get() + 1);
        let lrs = self.lrs(it, &gs)?;
        for (g, lr) in gs.iter().zip(&lrs) {
            set_f64(&mut g.borrow_mut(), "lr", *lr)?;
        }
        *self.last_lr.borrow_mut() = lrs;
        Ok(())
    }
}

impl NativeObject for Scheduler {
    fn type_name(&self) -> &str {
        self.kind.name()
    }
    fn repr(&self) -> String {
        format!("<torch.optim.lr_scheduler.{} object>", self.kind.name())
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["step", "get_last_lr", "last_epoch", "base_lrs", "optimizer"]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "last_epoch" => Value::Int(self.last_epoch.get()),
            "base_lrs" => Value::list(self.base_lrs.iter().map(|&x| Value::Float(x)).collect()),
            "optimizer" => self.optimizer.clone(),
            "get_last_lr" => bound(
                this,
                "get_last_lr",
                "scheduler.get_last_lr(): the learning rate of each group after the last step.",
                |_, r, a| {
                    a.finish(0)?;
                    let s = downcast::<Scheduler>(r, "a scheduler")?;
                    let lrs = s
                        .last_lr
                        .borrow()
                        .iter()
                        .map(|&x| Value::Float(x))
                        .collect();
                    Ok(Value::list(lrs))
                },
            ),
            "step" => bound(
                this,
                "step",
                "scheduler.step(): advance one epoch and set each group's lr.",
                |it, r, a| {
                    a.finish(0)?;
                    downcast::<Scheduler>(r, "a scheduler")?.step(it)?;
                    Ok(Value::None)
                },
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Records `initial_lr` in each group (as PyTorch does, so it shows in the optimizer's repr)
/// and takes PyTorch's initial step.
fn make(
    it: &mut dyn Interpreter,
    optimizer: Value,
    kind: Kind,
    last_epoch: Option<Value>,
) -> Result<Value, Exc> {
    let start = last_epoch.as_ref().and_then(as_i64).unwrap_or(-1);
    if start != -1 {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            "resuming a scheduler with last_epoch= is not supported yet; leave it at -1",
        ));
    }
    let gs = groups(it, &optimizer)?;
    let mut base_lrs = Vec::with_capacity(gs.len());
    for g in &gs {
        let mut d = g.borrow_mut();
        // setdefault: a second scheduler on the same optimizer keeps the first's initial_lr.
        let initial = match get_f64(&d, "initial_lr") {
            Ok(x) => x,
            Err(_) => {
                let lr = get_f64(&d, "lr")?;
                set_f64(&mut d, "initial_lr", lr)?;
                lr
            }
        };
        base_lrs.push(initial);
    }
    if let Kind::Lambda(fs) = &kind {
        if fs.len() != 1 && fs.len() != gs.len() {
            return Err(Exc::value_error(format!(
                "Expected {} lr_lambdas, but got {}",
                gs.len(),
                fs.len()
            )));
        }
    }
    let s = Scheduler {
        kind,
        optimizer,
        base_lrs,
        last_epoch: Cell::new(start),
        step_count: Cell::new(0),
        last_lr: RefCell::new(Vec::new()),
    };
    s.step(it)?;
    Ok(object(s))
}

fn gamma_arg(v: Option<Value>, default: Option<f64>) -> Result<f64, Exc> {
    match v {
        None => default.ok_or_else(|| Exc::type_error("missing required argument 'gamma'")),
        Some(v) => as_f64(&v).ok_or_else(|| {
            Exc::type_error(format!("gamma must be a number, got {}", v.type_name()))
        }),
    }
}

fn int_arg(v: Value, name: &str) -> Result<i64, Exc> {
    as_i64(&v)
        .ok_or_else(|| Exc::type_error(format!("{name} must be an integer, got {}", v.type_name())))
}

pub fn build() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "torch.optim.lr_scheduler",
        "learning-rate schedules over an optimizer's param_groups",
    ));
    m.set(
        "StepLR",
        builtin(
            "StepLR",
            "StepLR(optimizer, step_size, gamma=0.1): lr *= gamma every step_size epochs.",
            |it, mut a| {
                let opt = a.required(0, "optimizer")?;
                let step_size = int_arg(a.required(1, "step_size")?, "step_size")?;
                let gamma = gamma_arg(a.take(2, "gamma")?, Some(0.1))?;
                let last = a.take(3, "last_epoch")?;
                a.take_kw("verbose");
                a.finish(4)?;
                if step_size <= 0 {
                    return Err(Exc::value_error(format!(
                        "StepLR: step_size must be a positive integer, got {step_size}"
                    )));
                }
                make(it, opt, Kind::Step { step_size, gamma }, last)
            },
        ),
    );
    m.set(
        "MultiStepLR",
        builtin(
            "MultiStepLR",
            "MultiStepLR(optimizer, milestones, gamma=0.1): lr *= gamma at each milestone epoch.",
            |it, mut a| {
                let opt = a.required(0, "optimizer")?;
                let ms = a.required(1, "milestones")?;
                let gamma = gamma_arg(a.take(2, "gamma")?, Some(0.1))?;
                let last = a.take(3, "last_epoch")?;
                a.take_kw("verbose");
                a.finish(4)?;
                let milestones = it
                    .iterate(&ms)?
                    .into_iter()
                    .map(|v| int_arg(v, "milestones"))
                    .collect::<Result<_, _>>()?;
                make(it, opt, Kind::MultiStep { milestones, gamma }, last)
            },
        ),
    );
    m.set(
        "ExponentialLR",
        builtin(
            "ExponentialLR",
            "ExponentialLR(optimizer, gamma): lr *= gamma every epoch.",
            |it, mut a| {
                let opt = a.required(0, "optimizer")?;
                let gamma = gamma_arg(a.take(1, "gamma")?, None)?;
                let last = a.take(2, "last_epoch")?;
                a.take_kw("verbose");
                a.finish(3)?;
                make(it, opt, Kind::Exponential { gamma }, last)
            },
        ),
    );
    m.set("CosineAnnealingLR", builtin("CosineAnnealingLR", "CosineAnnealingLR(optimizer, T_max, eta_min=0.0): cosine from the initial lr down to eta_min over T_max epochs.", |it, mut a| {
        let opt = a.required(0, "optimizer")?;
        let t_max = int_arg(a.required(1, "T_max")?, "T_max")?;
        let eta_min = match a.take(2, "eta_min")? {
            None => 0.0,
            Some(v) => as_f64(&v).ok_or_else(|| Exc::type_error("eta_min must be a number"))?,
        };
        let last = a.take(3, "last_epoch")?;
        a.take_kw("verbose");
        a.finish(4)?;
        if t_max <= 0 {
            return Err(Exc::value_error(format!("CosineAnnealingLR: T_max must be a positive integer, got {t_max}")));
        }
        make(it, opt, Kind::Cosine { t_max, eta_min }, last)
    }));
    m.set("LambdaLR", builtin("LambdaLR", "LambdaLR(optimizer, lr_lambda): lr = initial_lr * lr_lambda(epoch) (one function, or one per group).", |it, mut a| {
        let opt = a.required(0, "optimizer")?;
        let f = a.required(1, "lr_lambda")?;
        let last = a.take(2, "last_epoch")?;
        a.take_kw("verbose");
        a.finish(3)?;
        let fs = match &f {
            Value::List(_) | Value::Tuple(_) => it.iterate(&f)?,
            _ => vec![f],
        };
        make(it, opt, Kind::Lambda(fs), last)
    }));
    m
}
