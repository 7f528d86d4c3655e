//! `torch.optim`: SGD, Adam and AdamW over parameters or leaf tensors. The update rules are
//! `crate::nn::optim`'s; this file keeps PyTorch's surface: `param_groups` as a list of
//! dicts the program may edit between steps (`g['lr'] *= 0.1` takes effect), `zero_grad`,
//! `step`, `state_dict` and PyTorch's repr.
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::nn::layers::Parameter;
use crate::nn::optim::{update, Algorithm, SlotState};
use crate::object::error::{torch_error, Exc};
use crate::object::format::float_repr;
use crate::object::interpreter::hash_key;
use crate::object::ops::{as_f64, wrap};
use crate::object::value::{Args, Dict, Flavor, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::{Array, BinaryOp, DType, Device, Operand, Scalar};

use crate::modules::python::native::{bound, downcast, object};

/// The parameter core behind a Value: a `torch.nn` parameter (its tensor) or a Gluon one.
pub(crate) fn parameter_core(it: &dyn Interpreter, v: &Value) -> Option<Rc<Parameter>> {
    crate::modules::array::blocks::parameter_of(it, v)
}

/// The arrays an optimizer updates for one entry of `params`: every device copy of a
/// parameter, or the tensor itself (a leaf such as `torch.randn(3, requires_grad=True)`).
fn targets(it: &dyn Interpreter, v: &Value) -> Result<Vec<Array>, Exc> {
    // A parameter's current copies: a model moved after the optimizer was made (`net.to(d)`)
    // is updated where it now is.
    if let Some(p) = parameter_core(it, v) {
        // A lazy module's parameter has nothing to update until its first forward pass.
        if !p.is_initialized() {
            return Ok(Vec::new());
        }
        return p.list_data().map_err(torch_error);
    }
    if let Some(a) = v.as_array() {
        return Ok(vec![a.array.clone()]);
    }
    Err(Exc::type_error(format!(
        "optimizer can only optimize Tensors, but one of the params is {}",
        v.type_name()
    )))
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Sgd,
    Adam,
    AdamW,
    Rmsprop,
    Adagrad,
    Adadelta,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sgd => "SGD",
            Kind::Adam => "Adam",
            Kind::AdamW => "AdamW",
            Kind::Rmsprop => "RMSprop",
            Kind::Adagrad => "Adagrad",
            Kind::Adadelta => "Adadelta",
        }
    }

    /// The options a constructor takes by position after `params` (the rest are keyword-only).
    fn positional(self) -> &'static [&'static str] {
        match self {
            Kind::Sgd => &["lr", "momentum", "dampening", "weight_decay", "nesterov"],
            Kind::Adam | Kind::AdamW => &["lr", "betas", "eps", "weight_decay", "amsgrad"],
            Kind::Rmsprop => &["lr", "alpha", "eps", "weight_decay", "momentum", "centered"],
            Kind::Adadelta => &["lr", "rho", "eps", "weight_decay"],
            Kind::Adagrad => &[
                "lr",
                "lr_decay",
                "weight_decay",
                "initial_accumulator_value",
                "eps",
            ],
        }
    }

    /// The defaults of a param group, in the order PyTorch's constructor builds them.
    fn defaults(self) -> Vec<(&'static str, Value)> {
        let common_tail = |v: &mut Vec<(&'static str, Value)>| {
            v.push(("maximize", Value::Bool(false)));
            v.push(("foreach", Value::None));
            v.push(("differentiable", Value::Bool(false)));
            v.push(("fused", Value::None));
        };
        match self {
            Kind::Sgd => {
                let mut v = vec![
                    ("lr", Value::Float(0.001)),
                    ("momentum", Value::Int(0)),
                    ("dampening", Value::Int(0)),
                    ("weight_decay", Value::Int(0)),
                    ("nesterov", Value::Bool(false)),
                ];
                common_tail(&mut v);
                v
            }
            Kind::Rmsprop => vec![
                ("lr", Value::Float(0.01)),
                ("momentum", Value::Int(0)),
                ("alpha", Value::Float(0.99)),
                ("eps", Value::Float(1e-8)),
                ("centered", Value::Bool(false)),
                ("weight_decay", Value::Int(0)),
                ("capturable", Value::Bool(false)),
                ("foreach", Value::None),
                ("maximize", Value::Bool(false)),
                ("differentiable", Value::Bool(false)),
            ],
            Kind::Adadelta => vec![
                ("lr", Value::Float(1.0)),
                ("rho", Value::Float(0.9)),
                ("eps", Value::Float(1e-6)),
                ("weight_decay", Value::Int(0)),
                ("maximize", Value::Bool(false)),
                ("capturable", Value::Bool(false)),
                ("foreach", Value::None),
                ("differentiable", Value::Bool(false)),
            ],
            Kind::Adagrad => {
                let mut v = vec![
                    ("lr", Value::Float(0.01)),
                    ("lr_decay", Value::Int(0)),
                    ("eps", Value::Float(1e-10)),
                    ("weight_decay", Value::Int(0)),
                    ("initial_accumulator_value", Value::Int(0)),
                ];
                common_tail(&mut v);
                v
            }
            Kind::Adam | Kind::AdamW => {
                let mut v = vec![
                    ("lr", Value::Float(0.001)),
                    (
                        "betas",
                        Value::tuple(vec![Value::Float(0.9), Value::Float(0.999)]),
                    ),
                    ("eps", Value::Float(1e-8)),
                    (
                        "weight_decay",
                        if self == Kind::AdamW {
                            Value::Float(0.01)
                        } else {
                            Value::Int(0)
                        },
                    ),
                    ("amsgrad", Value::Bool(false)),
                ];
                v.push(("maximize", Value::Bool(false)));
                v.push(("foreach", Value::None));
                v.push(("capturable", Value::Bool(false)));
                v.push(("differentiable", Value::Bool(false)));
                v.push(("fused", Value::None));
                v
            }
        }
    }
}

struct Optimizer {
    kind: Kind,
    /// `param_groups`: a list of dicts, shared with the program.
    groups: Value,
    /// Per updated array (by identity; the array is kept so the identity stays unique).
    state: RefCell<HashMap<usize, (Array, SlotState)>>,
}

fn key(name: &str) -> Value {
    Value::str(name)
}

fn dict_get(d: &Dict, name: &str) -> Option<Value> {
    let k = hash_key(&key(name)).ok()?;
    d.get(&k).cloned()
}

fn dict_set(d: &mut Dict, name: &str, v: Value) -> Result<(), Exc> {
    let k = key(name);
    d.insert(hash_key(&k)?, k, v);
    Ok(())
}

fn number(d: &Dict, name: &str) -> Result<f64, Exc> {
    let v = dict_get(d, name)
        .ok_or_else(|| Exc::new(crate::object::error::ExcKind::KeyError, format!("'{name}'")))?;
    as_f64(&v).ok_or_else(|| {
        Exc::type_error(format!(
            "param group option '{name}' must be a number, got {}",
            v.type_name()
        ))
    })
}

fn flag(d: &Dict, name: &str) -> Result<bool, Exc> {
    dict_get(d, name).map_or(Ok(false), |v| v.truthy())
}

fn groups_of(v: &Value) -> Vec<Rc<RefCell<Dict>>> {
    match v {
        Value::List(l) => l
            .borrow()
            .iter()
            .filter_map(|g| match g {
                Value::Dict(d) => Some(d.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn betas(d: &Dict) -> Result<(f64, f64), Exc> {
    let v = dict_get(d, "betas").unwrap_or(Value::None);
    let pair = match &v {
        Value::Tuple(t) => t.to_vec(),
        Value::List(l) => l.borrow().clone(),
        _ => Vec::new(),
    };
    match pair.as_slice() {
        [a, b] => match (as_f64(a), as_f64(b)) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => Err(Exc::type_error("betas must be a pair of numbers")),
        },
        _ => Err(Exc::type_error(
            "betas must be a pair of numbers such as (0.9, 0.999)",
        )),
    }
}

impl Optimizer {
    /// The update rule and learning rate a group asks for now.
    fn rule(&self, d: &Dict) -> Result<(Algorithm, f64), Exc> {
        let lr = number(d, "lr")?;
        let alg = match self.kind {
            Kind::Sgd => Algorithm::TorchSgd {
                momentum: number(d, "momentum")?,
                dampening: number(d, "dampening")?,
                weight_decay: number(d, "weight_decay")?,
                nesterov: flag(d, "nesterov")?,
                maximize: flag(d, "maximize")?,
            },
            Kind::Rmsprop => Algorithm::TorchRmsprop {
                alpha: number(d, "alpha")?,
                eps: number(d, "eps")?,
                weight_decay: number(d, "weight_decay")?,
                momentum: number(d, "momentum")?,
                centered: flag(d, "centered")?,
                maximize: flag(d, "maximize")?,
            },
            Kind::Adagrad => Algorithm::TorchAdagrad {
                lr_decay: number(d, "lr_decay")?,
                eps: number(d, "eps")?,
                weight_decay: number(d, "weight_decay")?,
                initial_accumulator_value: number(d, "initial_accumulator_value")?,
                maximize: flag(d, "maximize")?,
            },
            Kind::Adadelta => Algorithm::TorchAdadelta {
                rho: number(d, "rho")?,
                eps: number(d, "eps")?,
                weight_decay: number(d, "weight_decay")?,
                maximize: flag(d, "maximize")?,
            },
            Kind::Adam | Kind::AdamW => {
                let (beta1, beta2) = betas(d)?;
                Algorithm::TorchAdam {
                    beta1,
                    beta2,
                    eps: number(d, "eps")?,
                    weight_decay: number(d, "weight_decay")?,
                    amsgrad: flag(d, "amsgrad")?,
                    maximize: flag(d, "maximize")?,
                    decoupled: self.kind == Kind::AdamW,
                }
            }
        };
        Ok((alg, lr))
    }

    fn params_in(d: &Dict) -> Vec<Value> {
        match &dict_get(d, "params") {
            Some(Value::List(l)) => l.borrow().clone(),
            _ => Vec::new(),
        }
    }

    /// `step()`: every array with a gradient moves; one without (`.grad` is None) is skipped,
    /// as PyTorch skips it. Everything is computed before anything is written.
    fn step(&self, it: &mut dyn Interpreter) -> Result<(), Exc> {
        let mut writes: Vec<(Array, Array, SlotState)> = Vec::new();
        {
            let state = self.state.borrow();
            for g in groups_of(&self.groups) {
                let d = g.borrow();
                let (alg, lr) = self.rule(&d)?;
                for p in Self::params_in(&d) {
                    for a in targets(it, &p)? {
                        let st = it.state_mut();
                        let Some(grad) = st.nn.tape.grad(&a) else {
                            continue;
                        };
                        let prev = state
                            .get(&a.id())
                            .map(|(_, s)| s.clone())
                            .unwrap_or_default();
                        let (new, s) =
                            update(&alg, lr, 1.0, &a, &grad, &prev).map_err(torch_error)?;
                        writes.push((new, a, s));
                    }
                }
            }
        }
        let mut state = self.state.borrow_mut();
        for (new, a, s) in writes {
            new.copy_into(&a).map_err(torch_error)?;
            state.insert(a.id(), (a, s));
        }
        Ok(())
    }

    /// `zero_grad(set_to_none=True)`: `.grad` becomes None (PyTorch's default), or with
    /// `set_to_none=False` the existing gradients are zeroed in place.
    fn zero_grad(&self, it: &mut dyn Interpreter, set_to_none: bool) -> Result<(), Exc> {
        for g in groups_of(&self.groups) {
            let params = Self::params_in(&g.borrow());
            for p in params {
                for a in targets(it, &p)? {
                    let tape = &mut it.state_mut().nn.tape;
                    if set_to_none {
                        tape.set_grad(&a, None);
                    } else if let Some(grad) = tape.grad(&a) {
                        grad.binary_inplace(BinaryOp::Mul, Operand::Scalar(Scalar::Float(0.0)))
                            .map_err(torch_error)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// PyTorch's repr: each group's options sorted by name, `params` left out.
    fn text(&self) -> String {
        let mut s = format!("{} (", self.kind.name());
        for (i, g) in groups_of(&self.groups).iter().enumerate() {
            s.push_str(&format!("\nParameter Group {i}"));
            let d = g.borrow();
            let mut entries: Vec<(String, String)> = d
                .entries
                .iter()
                .filter_map(|(k, v)| match k {
                    Value::Str(k) if &**k != "params" => Some((k.to_string(), simple_repr(v))),
                    _ => None,
                })
                .collect();
            entries.sort();
            for (k, v) in entries {
                s.push_str(&format!("\n    {k}: {v}"));
            }
        }
        s.push_str("\n)");
        s
    }
}

/// The repr of the plain values a param group holds (numbers, flags, None, tuples).
fn simple_repr(v: &Value) -> String {
    match v {
        Value::None => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => float_repr(*f),
        Value::Str(s) => format!("'{s}'"),
        Value::Tuple(t) => {
            let parts: Vec<String> = t.iter().map(simple_repr).collect();
            if parts.len() == 1 {
                format!("({},)", parts[0])
            } else {
                format!("({})", parts.join(", "))
            }
        }
        Value::List(l) => {
            let parts: Vec<String> = l.borrow().iter().map(simple_repr).collect();
            format!("[{}]", parts.join(", "))
        }
        other => format!("<{}>", other.type_name()),
    }
}

impl NativeObject for Optimizer {
    fn type_name(&self) -> &str {
        self.kind.name()
    }
    fn repr(&self) -> String {
        self.text()
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "param_groups",
            "step",
            "zero_grad",
            "state_dict",
            "add_param_group",
        ]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "param_groups" => self.groups.clone(),
            "defaults" => {
                let mut d = Dict::default();
                for (k, v) in self.kind.defaults() {
                    dict_set(&mut d, k, v).ok()?;
                }
                Value::Dict(Rc::new(RefCell::new(d)))
            }
            "step" => bound(this, "step", "opt.step(): one update of every parameter that has a gradient.", |it, r, mut a| {
                a.take(0, "closure")?;
                a.finish(1)?;
                downcast::<Optimizer>(r, "an optimizer")?.step(it)?;
                Ok(Value::None)
            }),
            "zero_grad" => bound(this, "zero_grad", "opt.zero_grad(set_to_none=True): reset the gradients of every parameter.", |it, r, mut a| {
                let to_none = a.flag(0, "set_to_none", true)?;
                a.finish(1)?;
                downcast::<Optimizer>(r, "an optimizer")?.zero_grad(it, to_none)?;
                Ok(Value::None)
            }),
            "add_param_group" => bound(this, "add_param_group", "opt.add_param_group({'params': [...], 'lr': ...}): one more group.", |it, r, mut a| {
                let g = a.required(0, "param_group")?;
                a.finish(1)?;
                let o = downcast::<Optimizer>(r, "an optimizer")?;
                let group = make_group(it, o.kind, &g)?;
                if let Value::List(l) = &o.groups {
                    l.borrow_mut().push(group);
                }
                Ok(Value::None)
            }),
            "state_dict" => bound(this, "state_dict", "opt.state_dict(): {'state': ..., 'param_groups': ...} with parameters numbered in order.", |it, r, a| {
                a.finish(0)?;
                downcast::<Optimizer>(r, "an optimizer")?.state_dict(it)
            }),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Optimizer {
    /// PyTorch's layout: parameters numbered across groups in order; per parameter its
    /// `momentum_buffer` (SGD) or `step`, `exp_avg`, `exp_avg_sq` (Adam).
    fn state_dict(&self, it: &mut dyn Interpreter) -> Result<Value, Exc> {
        let mut state = Dict::default();
        let mut groups = Vec::new();
        let mut index = 0i64;
        let kept = self.state.borrow();
        for g in groups_of(&self.groups) {
            let d = g.borrow();
            let mut out = Dict::default();
            let mut ids = Vec::new();
            for (k, v) in d.entries.iter() {
                if matches!(k, Value::Str(s) if &**s == "params") {
                    continue;
                }
                out.insert(hash_key(k)?, k.clone(), v.clone());
            }
            let names = self.rule(&d)?.0.buffer_names();
            for p in Self::params_in(&d) {
                // The first copy stands for the parameter (all copies hold the same state).
                if let Some(a) = targets(it, &p)?.first() {
                    if let Some((_, s)) = kept.get(&a.id()) {
                        let mut entry = Dict::default();
                        let t = |x: &Array| wrap(x.clone(), Flavor::Torch);
                        if self.kind == Kind::Sgd {
                            let buf = s.buffers.first().map_or(Value::None, t);
                            dict_set(&mut entry, "momentum_buffer", buf)?;
                        } else {
                            // PyTorch keeps the step count as a float32 0-d tensor.
                            let step = it
                                .state_mut()
                                .rt
                                .full(&[], s.step as f64, DType::Float32, Device::cpu(0))
                                .map_err(torch_error)?;
                            dict_set(&mut entry, "step", wrap(step, Flavor::Torch))?;
                            for (name, b) in names.iter().zip(&s.buffers) {
                                dict_set(&mut entry, name, t(b))?;
                            }
                        }
                        let k = Value::Int(index);
                        state.insert(hash_key(&k)?, k, Value::Dict(Rc::new(RefCell::new(entry))));
                    }
                }
                ids.push(Value::Int(index));
                index += 1;
            }
            dict_set(&mut out, "params", Value::list(ids))?;
            groups.push(Value::Dict(Rc::new(RefCell::new(out))));
        }
        let mut top = Dict::default();
        dict_set(&mut top, "state", Value::Dict(Rc::new(RefCell::new(state))))?;
        dict_set(&mut top, "param_groups", Value::list(groups))?;
        Ok(Value::Dict(Rc::new(RefCell::new(top))))
    }
}

/// One param group: `params` (a parameter, or an iterable of them) and the group's options
/// over the optimizer's defaults.
fn make_group(it: &mut dyn Interpreter, kind: Kind, spec: &Value) -> Result<Value, Exc> {
    let Value::Dict(d) = spec else {
        return Err(Exc::type_error("param group must be a dict"));
    };
    let src = d.borrow().clone();
    let params_v = dict_get(&src, "params").ok_or_else(|| {
        Exc::new(
            crate::object::error::ExcKind::KeyError,
            "'params'".to_string(),
        )
    })?;
    let params = if params_v.as_array().is_some() || parameter_core(it, &params_v).is_some() {
        vec![params_v]
    } else {
        it.iterate(&params_v)?
    };
    for p in &params {
        targets(it, p)?;
    }
    let mut g = Dict::default();
    dict_set(&mut g, "params", Value::list(params))?;
    for (k, v) in kind.defaults() {
        let v = dict_get(&src, k).unwrap_or(v);
        dict_set(&mut g, k, v)?;
    }
    for (k, v) in src.entries.iter() {
        let hk = hash_key(k)?;
        if g.get(&hk).is_none() {
            g.insert(hk, k.clone(), v.clone());
        }
    }
    Ok(Value::Dict(Rc::new(RefCell::new(g))))
}

/// The checks PyTorch's constructors make, in its words.
fn validate(kind: Kind, d: &Dict) -> Result<(), Exc> {
    let lr = number(d, "lr")?;
    if lr < 0.0 {
        return Err(Exc::value_error(format!(
            "Invalid learning rate: {}",
            float_repr(lr)
        )));
    }
    let wd = number(d, "weight_decay")?;
    if wd < 0.0 {
        return Err(Exc::value_error(format!(
            "Invalid weight_decay value: {}",
            simple_repr(&dict_get(d, "weight_decay").unwrap_or(Value::None))
        )));
    }
    match kind {
        Kind::Sgd => {
            let momentum = number(d, "momentum")?;
            if momentum < 0.0 {
                return Err(Exc::value_error(format!(
                    "Invalid momentum value: {}",
                    simple_repr(&dict_get(d, "momentum").unwrap_or(Value::None))
                )));
            }
            if flag(d, "nesterov")? && (momentum <= 0.0 || number(d, "dampening")? != 0.0) {
                return Err(Exc::value_error(
                    "Nesterov momentum requires a momentum and zero dampening",
                ));
            }
        }
        Kind::Rmsprop => {
            let alpha = number(d, "alpha")?;
            if alpha < 0.0 {
                return Err(Exc::value_error(format!(
                    "Invalid alpha value: {}",
                    float_repr(alpha)
                )));
            }
            let momentum = number(d, "momentum")?;
            if momentum < 0.0 {
                return Err(Exc::value_error(format!(
                    "Invalid momentum value: {}",
                    simple_repr(&dict_get(d, "momentum").unwrap_or(Value::None))
                )));
            }
        }
        Kind::Adagrad => {
            let decay = number(d, "lr_decay")?;
            if decay < 0.0 {
                return Err(Exc::value_error(format!(
                    "Invalid lr_decay value: {}",
                    simple_repr(&dict_get(d, "lr_decay").unwrap_or(Value::None))
                )));
            }
            let init = number(d, "initial_accumulator_value")?;
            if init < 0.0 {
                return Err(Exc::value_error(format!(
                    "Invalid initial_accumulator_value value: {}",
                    simple_repr(&dict_get(d, "initial_accumulator_value").unwrap_or(Value::None))
                )));
            }
        }
        Kind::Adadelta => {
            let rho = number(d, "rho")?;
            if !(0.0..=1.0).contains(&rho) {
                return Err(Exc::value_error(format!(
                    "Invalid rho value: {}",
                    simple_repr(&dict_get(d, "rho").unwrap_or(Value::None))
                )));
            }
            let eps = number(d, "eps")?;
            if eps < 0.0 {
                return Err(Exc::value_error(format!(
                    "Invalid epsilon value: {}",
                    simple_repr(&dict_get(d, "eps").unwrap_or(Value::None))
                )));
            }
        }
        Kind::Adam | Kind::AdamW => {
            let eps = number(d, "eps")?;
            if eps < 0.0 {
                return Err(Exc::value_error(format!(
                    "Invalid epsilon value: {}",
                    float_repr(eps)
                )));
            }
            let (b1, b2) = betas(d)?;
            for (i, b) in [b1, b2].into_iter().enumerate() {
                if !(0.0..1.0).contains(&b) {
                    return Err(Exc::value_error(format!(
                        "Invalid beta parameter at index {i}: {}",
                        float_repr(b)
                    )));
                }
            }
        }
    }
    Ok(())
}

fn tensor_dtype(it: &dyn Interpreter, v: &Value) -> Option<DType> {
    match v.as_array() {
        Some(a) => Some(a.array.dtype()),
        None => parameter_core(it, v).map(|p| p.dtype.get()),
    }
}

fn construct(it: &mut dyn Interpreter, mut a: Args, kind: Kind) -> Result<Value, Exc> {
    let params = a.required(0, "params")?;
    let mut overrides: Vec<(&'static str, Value)> = Vec::new();
    let positional = kind.positional();
    for (i, name) in positional.iter().enumerate() {
        if let Some(v) = a.take(i + 1, name)? {
            overrides.push((name, v));
        }
    }
    for (name, _) in kind.defaults() {
        if let Some(v) = a.take_kw(name) {
            overrides.push((name, v));
        }
    }
    a.finish(positional.len() + 1)?;
    if params.as_array().is_some() || parameter_core(it, &params).is_some() {
        let is_float32 = tensor_dtype(it, &params) == Some(DType::Float32);
        return Err(Exc::type_error(format!(
            "params argument given to the optimizer should be an iterable of Tensors or dicts, but got {}",
            if is_float32 { "torch.FloatTensor".to_string() } else { params.type_name() }
        )));
    }
    let items = it.iterate(&params)?;
    if items.is_empty() {
        return Err(Exc::value_error("optimizer got an empty parameter list"));
    }
    // Plain parameters form one group; dicts are groups of their own.
    let specs: Vec<Value> = if items.iter().all(|v| matches!(v, Value::Dict(_))) {
        items
    } else {
        let mut d = Dict::default();
        dict_set(&mut d, "params", Value::list(items))?;
        vec![Value::Dict(Rc::new(RefCell::new(d)))]
    };
    let mut groups = Vec::new();
    for spec in &specs {
        // Constructor arguments are the defaults a group's own keys override.
        let merged = {
            let Value::Dict(d) = spec else {
                return Err(Exc::type_error("param group must be a dict"));
            };
            let mut m = d.borrow().clone();
            for (k, v) in &overrides {
                if dict_get(&m, k).is_none() {
                    dict_set(&mut m, k, v.clone())?;
                }
            }
            Value::Dict(Rc::new(RefCell::new(m)))
        };
        let g = make_group(it, kind, &merged)?;
        if let Value::Dict(d) = &g {
            validate(kind, &d.borrow())?;
        }
        groups.push(g);
    }
    Ok(object(Optimizer {
        kind,
        groups: Value::list(groups),
        state: RefCell::new(HashMap::new()),
    }))
}

pub fn build() -> Rc<Module> {
    let m = Rc::new(Module::new("torch.optim", "PyTorch's optimizers"));
    m.set("lr_scheduler", Value::Module(super::lr_scheduler::build()));
    m.set("SGD", builtin("SGD", "SGD(params, lr=0.001, momentum=0, dampening=0, weight_decay=0, nesterov=False): stochastic gradient descent, PyTorch's update.", |it, a| construct(it, a, Kind::Sgd)));
    m.set(
        "Adam",
        builtin(
            "Adam",
            "Adam(params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0, amsgrad=False)",
            |it, a| construct(it, a, Kind::Adam),
        ),
    );
    m.set("RMSprop", builtin("RMSprop", "RMSprop(params, lr=0.01, alpha=0.99, eps=1e-08, weight_decay=0, momentum=0, centered=False)", |it, a| construct(it, a, Kind::Rmsprop)));
    m.set("Adagrad", builtin("Adagrad", "Adagrad(params, lr=0.01, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10)", |it, a| construct(it, a, Kind::Adagrad)));
    m.set("Adadelta", builtin("Adadelta", "Adadelta(params, lr=1.0, rho=0.9, eps=1e-06, weight_decay=0): the per-element step size from running averages of squared gradients and updates.", |it, a| construct(it, a, Kind::Adadelta)));
    m.set("AdamW", builtin("AdamW", "AdamW(params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01, amsgrad=False): Adam with decoupled weight decay.", |it, a| construct(it, a, Kind::AdamW)));
    m
}

// ---- torch.nn.utils: gradient clipping ---------------------------------------------------------

/// The gradients of `parameters` (a tensor or an iterable of them) that exist, PyTorch's
/// `[p.grad for p in parameters if p.grad is not None]`.
fn grads_of(it: &mut dyn Interpreter, parameters: &Value) -> Result<Vec<Array>, Exc> {
    let items = if parameters.as_array().is_some() || parameter_core(it, parameters).is_some() {
        vec![parameters.clone()]
    } else {
        it.iterate(parameters)?
    };
    let mut out = Vec::new();
    for p in &items {
        for a in targets(it, p)? {
            if let Some(g) = it.state().nn.tape.grad(&a) {
                out.push(g);
            }
        }
    }
    Ok(out)
}

fn vector_norm(g: &Array, p: f64) -> crate::runtime::Result<Array> {
    let flat = g.reshape(&[-1])?;
    if p == 2.0 {
        flat.norm(None, None, false)
    } else {
        flat.norm(Some(p), None, false)
    }
}

/// `clip_grad_norm_(parameters, max_norm, norm_type=2.0)`: scales every gradient in place by
/// `min(1, max_norm / (total_norm + 1e-6))` and returns the total norm (PyTorch's foreach path).
fn clip_grad_norm(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let params = a.required(0, "parameters")?;
    let max_norm = a.required(1, "max_norm")?;
    let norm_type = a.take(2, "norm_type")?;
    a.take(3, "error_if_nonfinite")?;
    a.take(4, "foreach")?;
    a.finish(5)?;
    let max_norm = as_f64(&max_norm).ok_or_else(|| {
        Exc::type_error(format!(
            "max_norm must be a number, got {}",
            max_norm.type_name()
        ))
    })?;
    let p = match &norm_type {
        None => 2.0,
        Some(Value::Str(s)) if &**s == "inf" => f64::INFINITY,
        Some(v) => as_f64(v).ok_or_else(|| {
            Exc::type_error(format!("norm_type must be a number, got {}", v.type_name()))
        })?,
    };
    let grads = grads_of(it, &params)?;
    let rt = &it.state().rt;
    let Some(first) = grads.first() else {
        let zero = rt
            .full(&[], 0.0, DType::Float32, Device::cpu(0))
            .map_err(torch_error)?;
        return Ok(wrap(zero, Flavor::Torch));
    };
    let device = first.device();
    let r = (|| {
        let mut norms = Vec::with_capacity(grads.len());
        for g in &grads {
            norms.push(vector_norm(g, p)?.as_in_device(rt, device)?);
        }
        let total = vector_norm(&Array::stack(&norms, 0)?, p)?;
        let coef = Array::binary(
            BinaryOp::Div,
            Operand::Scalar(Scalar::Float(max_norm)),
            Operand::Array(&Array::binary(
                BinaryOp::Add,
                Operand::Array(&total),
                Operand::Scalar(Scalar::Float(1e-6)),
            )?),
        )?
        .clip(None, Some(1.0))?;
        // Every scaled gradient first, then the writes: a failure changes no gradient.
        let mut scaled = Vec::with_capacity(grads.len());
        for g in &grads {
            let c = coef.as_in_device(rt, g.device())?;
            scaled.push(Array::binary(
                BinaryOp::Mul,
                Operand::Array(g),
                Operand::Array(&c),
            )?);
        }
        for (s, g) in scaled.iter().zip(&grads) {
            s.copy_into(g)?;
        }
        Ok(total)
    })();
    r.map(|t| wrap(t, Flavor::Torch)).map_err(torch_error)
}

/// `clip_grad_value_(parameters, clip_value)`: every gradient clamped to [-v, v] in place.
fn clip_grad_value(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let params = a.required(0, "parameters")?;
    let v = a.required(1, "clip_value")?;
    a.take(2, "foreach")?;
    a.finish(3)?;
    let v = as_f64(&v).ok_or_else(|| {
        Exc::type_error(format!(
            "clip_value must be a number, got {}",
            v.type_name()
        ))
    })?;
    let grads = grads_of(it, &params)?;
    let mut clipped = Vec::with_capacity(grads.len());
    for g in &grads {
        clipped.push(g.clip(Some(-v), Some(v)).map_err(torch_error)?);
    }
    for (c, g) in clipped.iter().zip(&grads) {
        c.copy_into(g).map_err(torch_error)?;
    }
    Ok(Value::None)
}

/// `torch.nn.utils`.
pub fn nn_utils() -> Rc<Module> {
    let m = Rc::new(Module::new("torch.nn.utils", "gradient clipping"));
    m.set("clip_grad_norm_", builtin("clip_grad_norm_", "clip_grad_norm_(parameters, max_norm, norm_type=2.0): scale the gradients so their total norm is at most max_norm; returns the total norm.", clip_grad_norm));
    m.set("clip_grad_value_", builtin("clip_grad_value_", "clip_grad_value_(parameters, clip_value): clamp every gradient to [-clip_value, clip_value].", clip_grad_value));
    m
}
