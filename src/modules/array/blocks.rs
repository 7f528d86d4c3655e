//! The model layer both dialects share: Gluon's `Block` and PyTorch's `Module` as classes written
//! in Rust that programs subclass (`class MLP(nn.Block)`, `class MLP(nn.Module)`).
//!
//! Every block instance holds a [`Core`] in its `base_state`: the children and parameters it
//! registered, in the order they were assigned (both frameworks keep that order), and for a
//! built-in layer (`Dense`, `Linear`, `Conv2D`, ...) the `crate::nn::layers::Block` that
//! computes it. Assigning a block or a parameter to an attribute registers it
//! (`self.hidden = nn.Dense(256)`); reading the attribute finds it through `__getattr__`, as
//! PyTorch keeps `_modules` and `_parameters`. Calling a block runs its `forward`: the
//! program's, or for the built-in layers the one in `crate::nn`. Everything that walks a model
//! (parameters, initialization, device moves, state dicts, reprs) is here once for both
//! dialects; `mxnet::gluon` and `torch::nn` add the classes and the spellings of each.
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::modules::python::hooks::DeepCopier;
use crate::nn::layers::{Block, Init, Parameter};
use crate::object::class::{Class, Instance};
use crate::object::error::{Exc, ExcKind};
use crate::object::format::repr;
use crate::object::ops::wrap;
use crate::object::value::{Args, BuiltinFn, Flavor, NativeObject, Value};
use crate::object::{unbound_method, Interpreter};
use crate::runtime::{Array, Device, RuntimeError};

/// Which framework a block belongs to: names, reprs and error wording follow it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Dialect {
    Gluon,
    Torch,
}

/// A registered child block.
#[derive(Clone)]
pub struct Child {
    pub key: Rc<str>,
    pub block: Value,
    /// Registered by attribute assignment (Gluon's repr lists only these for a plain Block).
    pub by_attr: bool,
}

/// What a block instance keeps beside its ordinary attributes.
pub struct CoreData {
    pub dialect: Dialect,
    /// Gluon's block name (`dense0`, `mlp0`); for PyTorch the name in messages.
    pub name: String,
    /// Gluon's prefix for the names of parameters made by `self.params.get` (`mlp0_`; the
    /// prefix of the dictionary given as `params=` when the parameters are shared).
    pub param_prefix: String,
    /// Parameters `params=` shares, looked up by full name before new ones are made.
    pub shared: Vec<Rc<Parameter>>,
    pub children: RefCell<Vec<Child>>,
    /// Own parameters by attribute name, in registration order.
    pub params: RefCell<Vec<(Rc<str>, Rc<Parameter>)>>,
    /// Values of `self.params.get_constant(name, value)`, placed by `initialize`.
    pub constants: RefCell<Vec<(Rc<Parameter>, Array)>>,
    /// The built-in layer this block computes with, if it is one.
    pub layer: Option<Rc<Block>>,
    /// Whether it runs in training mode (PyTorch's `train()` / `eval()`).
    pub training: Cell<bool>,
    /// Runs its children in order when no `forward` is defined (`Sequential`).
    pub sequential: bool,
    /// Gluon's `hybridize()` is on: calls run a compiled graph (`mxnet/symbol.rs`).
    pub hybridized: Cell<bool>,
    /// That graph once the first call traced it; opaque here. Cleared by `hybridize()`.
    pub compiled: RefCell<Option<Rc<dyn std::any::Any>>>,
    /// Forward hooks (`register_forward_hook`...; `block_hooks.rs`).
    pub hooks: super::block_hooks::BlockHooks,
}

/// A shared handle on a block's [`CoreData`], kept in the instance's `base_state`.
#[derive(Clone)]
pub struct Core(pub Rc<CoreData>);

impl std::ops::Deref for Core {
    type Target = CoreData;
    fn deref(&self) -> &CoreData {
        &self.0
    }
}

impl NativeObject for Core {
    fn type_name(&self) -> &str {
        "BlockCore"
    }
    fn repr(&self) -> String {
        format!("<block core {}>", self.name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The core of a block instance; None for anything else (or before `__init__` ran).
pub fn core_of(v: &Value) -> Option<Core> {
    let Value::Instance(inst) = v else {
        return None;
    };
    let state = inst.base_state.borrow();
    match &*state {
        Value::Object(o) => o.as_any().downcast_ref::<Core>().cloned(),
        _ => None,
    }
}

/// The class name of an instance (`MLP`).
fn class_name(v: &Value) -> String {
    match v {
        Value::Instance(i) => i.class().name.to_string(),
        other => other.type_name(),
    }
}

fn instance(v: &Value) -> Result<&Rc<Instance>, Exc> {
    match v {
        Value::Instance(i) => Ok(i),
        other => Err(Exc::type_error(format!(
            "descriptor requires a block, not '{}'",
            other.type_name()
        ))),
    }
}

/// `self` and its core, taken off the front of a method's arguments.
pub fn this_core(a: &mut Args) -> Result<(Value, Core), Exc> {
    if a.pos.is_empty() {
        return Err(Exc::type_error(
            "the method needs the block it is called on",
        ));
    }
    let this = a.pos.remove(0);
    let core = core_of(&this).ok_or_else(|| not_set_up(&this))?;
    Ok((this, core))
}

/// The error for a block whose `__init__` did not run the base class's.
fn not_set_up(this: &Value) -> Exc {
    let name = class_name(this);
    Exc::new(
        ExcKind::AttributeError,
        format!(
            "'{name}' object is not set up as a block: call super().__init__() at the start of {name}.__init__"
        ),
    )
}

/// Sets up `this` as a block (the base classes' `__init__`).
pub fn install_core(this: &Value, data: CoreData) -> Result<(), Exc> {
    let inst = instance(this)?;
    *inst.base_state.borrow_mut() = Value::Object(Rc::new(Core(Rc::new(data))));
    Ok(())
}

impl CoreData {
    pub fn new(dialect: Dialect, name: String, layer: Option<Rc<Block>>) -> CoreData {
        let param_prefix = format!("{name}_");
        let params = layer
            .as_ref()
            .map(|l| {
                l.own_params()
                    .into_iter()
                    .map(|(k, p)| (Rc::from(k), p))
                    .collect()
            })
            .unwrap_or_default();
        CoreData {
            dialect,
            name,
            param_prefix,
            shared: Vec::new(),
            children: RefCell::new(Vec::new()),
            params: RefCell::new(params),
            constants: RefCell::new(Vec::new()),
            layer,
            training: Cell::new(true),
            sequential: false,
            hybridized: Cell::new(false),
            compiled: RefCell::new(None),
            hooks: Default::default(),
        }
    }
}

// ---- registration ---------------------------------------------------------------------------

/// What a value assigned to a block's attribute is.
enum Assigned {
    Block,
    Param(Rc<Parameter>),
    Other,
}

fn classify(it: &dyn Interpreter, v: &Value) -> Assigned {
    if core_of(v).is_some() {
        return Assigned::Block;
    }
    match parameter_of(it, v) {
        Some(p) => Assigned::Param(p),
        None => Assigned::Other,
    }
}

/// The parameter a value stands for: a Gluon `Parameter`, or a PyTorch parameter tensor.
pub fn parameter_of(it: &dyn Interpreter, v: &Value) -> Option<Rc<Parameter>> {
    match v {
        Value::Object(o) => {
            let any = o.as_any();
            match any.downcast_ref::<ParamObj>() {
                Some(p) => Some(p.param.clone()),
                None => any
                    .downcast_ref::<UninitializedParam>()
                    .map(|p| p.0.clone()),
            }
        }
        Value::Array(a) if a.flavor == Flavor::Torch => it.state().nn.param_of_array(&a.array),
        _ => None,
    }
}

/// Adds or replaces child `key` (a replaced child keeps its place, as in both frameworks).
pub fn register_child(core: &Core, key: &str, block: Value, by_attr: bool) -> Result<(), Exc> {
    if let Some(c) = core_of(&block) {
        if Rc::ptr_eq(&c.0, &core.0) || contains(&c, core) {
            return Err(Exc::value_error(format!(
                "{}: a block cannot be added inside itself",
                core.name
            )));
        }
    }
    let mut children = core.children.borrow_mut();
    match children.iter_mut().find(|c| &*c.key == key) {
        Some(c) => {
            c.block = block;
            c.by_attr = by_attr;
        }
        None => children.push(Child {
            key: Rc::from(key),
            block,
            by_attr,
        }),
    }
    Ok(())
}

/// Whether `inner` is `outer`'s core or one of its descendants' (a cycle guard).
fn contains(outer: &Core, inner: &Core) -> bool {
    if Rc::ptr_eq(&outer.0, &inner.0) {
        return true;
    }
    let children: Vec<Value> = outer
        .children
        .borrow()
        .iter()
        .map(|c| c.block.clone())
        .collect();
    children
        .iter()
        .filter_map(core_of)
        .any(|c| contains(&c, inner))
}

pub fn register_param(core: &Core, key: &str, p: Rc<Parameter>) {
    let mut params = core.params.borrow_mut();
    match params.iter_mut().find(|(k, _)| &**k == key) {
        Some(slot) => slot.1 = p,
        None => params.push((Rc::from(key), p)),
    }
}

/// `Block.__setattr__` / `Module.__setattr__`: blocks and parameters are registered, anything
/// else is an ordinary attribute (and unregisters what had that name).
fn set_attr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    let name = match &a.required(1, "name")? {
        Value::Str(s) => s.clone(),
        other => {
            return Err(Exc::type_error(format!(
                "attribute name must be string, not '{}'",
                other.type_name()
            )))
        }
    };
    let value = a.required(2, "value")?;
    let inst = instance(&this)?;
    let kind = classify(it, &value);
    let Some(core) = core_of(&this) else {
        return match kind {
            Assigned::Other => {
                inst.attrs.borrow_mut().set(name, value);
                Ok(Value::None)
            }
            _ => Err(before_init(&this, matches!(kind, Assigned::Block))),
        };
    };
    match kind {
        Assigned::Block => {
            inst.attrs.borrow_mut().remove(&name);
            core.params.borrow_mut().retain(|(k, _)| *k != name);
            register_child(&core, &name, value, true)?;
        }
        Assigned::Param(p) => {
            inst.attrs.borrow_mut().remove(&name);
            core.children.borrow_mut().retain(|c| c.key != name);
            register_param(&core, &name, p);
        }
        Assigned::Other
            if core.dialect == Dialect::Torch && buffer_named(&core, &name).is_some() =>
        {
            // A tensor assigned to a buffer's name replaces the buffer's value, as PyTorch's
            // `__setattr__` stores it in `_buffers` (`self.count = self.count + 1`).
            let Some(p) = buffer_named(&core, &name) else {
                return Ok(Value::None);
            };
            match value.as_array() {
                Some(x) if x.flavor == Flavor::Torch => {
                    let same = p.data(None).map(|d| d.same(&x.array)).unwrap_or(false);
                    if !same {
                        let st = it.state_mut();
                        p.adopt(&st.rt, &mut st.nn.tape, x.array.clone())?;
                    }
                }
                _ => {
                    return Err(Exc::type_error(format!(
                        "cannot assign '{}' as buffer '{name}' (torch.nn.Buffer, torch.Tensor or None expected)",
                        value.type_name()
                    )))
                }
            }
        }
        Assigned::Other => {
            core.children.borrow_mut().retain(|c| c.key != name);
            core.params.borrow_mut().retain(|(k, _)| *k != name);
            inst.attrs.borrow_mut().set(name, value);
        }
    }
    Ok(Value::None)
}

/// The buffer registered as `name` (a PyTorch module's running statistics, `register_buffer`).
fn buffer_named(core: &Core, name: &str) -> Option<Rc<Parameter>> {
    core.params
        .borrow()
        .iter()
        .find(|(k, p)| **k == *name && p.buffer.get())
        .map(|(_, p)| p.clone())
}

fn before_init(this: &Value, block: bool) -> Exc {
    let core = core_dialect_guess(this);
    let what = if block { "module" } else { "parameter" };
    match core {
        Dialect::Torch => Exc::new(
            ExcKind::AttributeError,
            format!("cannot assign {what} before Module.__init__() call"),
        ),
        Dialect::Gluon => Exc::new(
            ExcKind::AttributeError,
            format!(
                "cannot assign a {} to '{}' before Block.__init__() ran: call super().__init__() first in {}.__init__",
                if block { "block" } else { "parameter" },
                class_name(this),
                class_name(this)
            ),
        ),
    }
}

/// The dialect of a block whose core is not made yet, from its classes' module names.
fn core_dialect_guess(this: &Value) -> Dialect {
    match this {
        Value::Instance(i)
            if i.class()
                .mro
                .iter()
                .any(|c| matches!(c, Value::Class(c) if c.module.starts_with("torch"))) =>
        {
            Dialect::Torch
        }
        _ => Dialect::Gluon,
    }
}

/// `Block.__getattr__`: registered children and parameters (and a few computed attributes).
fn get_attr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    let name = match &a.required(1, "name")? {
        Value::Str(s) => s.clone(),
        _ => return Err(Exc::type_error("attribute name must be string")),
    };
    let missing = || {
        Exc::new(
            ExcKind::AttributeError,
            format!("'{}' object has no attribute '{name}'", class_name(&this)),
        )
    };
    let Some(core) = core_of(&this) else {
        return Err(missing());
    };
    let child = core
        .children
        .borrow()
        .iter()
        .find(|c| *c.key == *name)
        .map(|c| c.block.clone());
    if let Some(c) = child {
        return Ok(c);
    }
    let param = core
        .params
        .borrow()
        .iter()
        .find(|(k, _)| **k == *name)
        .map(|(_, p)| p.clone());
    if let Some(p) = param {
        return Ok(param_value(it, core.dialect, &p));
    }
    match (&*name, core.dialect) {
        ("training", _) => Ok(Value::Bool(core.training.get())),
        ("name", Dialect::Gluon) => Ok(Value::str(&core.name)),
        ("prefix", Dialect::Gluon) => Ok(Value::str(&format!("{}_", core.name))),
        ("params", Dialect::Gluon) => Ok(own_param_dict(it, &core)),
        ("_children", Dialect::Gluon) | ("_modules", Dialect::Torch) => {
            Ok(Value::Object(Rc::new(ChildrenView(core.clone()))))
        }
        // PyTorch's dict of the module's own parameters, by name (a snapshot: initialisers
        // such as d2l's `init_seq2seq` read it; assigning an attribute replaces a parameter).
        ("_parameters", Dialect::Torch) => {
            let params: Vec<_> = core.params.borrow().iter().cloned().collect();
            let mut dict = crate::object::value::Dict::default();
            for (key, p) in params {
                let value = param_value(it, core.dialect, &p);
                dict.insert(
                    crate::object::value::HashKey::Str(key.clone()),
                    Value::Str(key),
                    value,
                );
            }
            Ok(Value::Dict(Rc::new(std::cell::RefCell::new(dict))))
        }
        (_, Dialect::Torch) => core
            .layer
            .as_ref()
            .and_then(|l| torch_layer_attr(l, &name))
            .ok_or_else(missing),
        _ => Err(missing()),
    }
}

/// The hyperparameters PyTorch's built-in layers keep as attributes (`in_features`,
/// `out_channels`, `num_features`, ...), read from the layer; a lazy layer's input size is 0
/// until its first input, as in PyTorch.
fn torch_layer_attr(layer: &Block, name: &str) -> Option<Value> {
    use crate::nn::cnn::{BatchNormLayer, ConvLayer, LayerNormLayer};
    let ints = |v: Vec<usize>| Value::tuple(v.into_iter().map(|d| Value::Int(d as i64)).collect());
    match &layer.kind {
        crate::nn::layers::BlockKind::Dense {
            units, in_units, ..
        } => match name {
            "in_features" => Some(Value::Int(in_units.get() as i64)),
            "out_features" => Some(Value::Int(*units as i64)),
            _ => None,
        },
        crate::nn::layers::BlockKind::Op(op) => {
            if let Some(c) = op.as_any().downcast_ref::<ConvLayer>() {
                let used = |v: [usize; 2]| {
                    if c.dims == 1 {
                        vec![v[1]]
                    } else {
                        v.to_vec()
                    }
                };
                return match name {
                    "in_channels" => Some(Value::Int(c.in_channels.get() as i64)),
                    "out_channels" => Some(Value::Int(c.channels as i64)),
                    "kernel_size" => Some(ints(used(c.kernel))),
                    "stride" => Some(ints(used(c.stride))),
                    "dilation" => Some(ints(used(c.dilation))),
                    "groups" => Some(Value::Int(c.groups as i64)),
                    _ => None,
                };
            }
            if let Some(l) = op.as_any().downcast_ref::<LayerNormLayer>() {
                return match name {
                    "normalized_shape" => Some(ints(l.shape.clone())),
                    "eps" => Some(Value::Float(l.eps)),
                    "elementwise_affine" => Some(Value::Bool(l.weight.is_some())),
                    _ => None,
                };
            }
            let b = op.as_any().downcast_ref::<BatchNormLayer>()?;
            match name {
                "num_features" => Some(Value::Int(b.features.get() as i64)),
                "eps" => Some(Value::Float(b.eps)),
                "momentum" => Some(Value::Float(b.momentum)),
                "affine" => Some(Value::Bool(b.weight.is_some())),
                "track_running_stats" => Some(Value::Bool(b.running_mean.is_some())),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `self.params` of a Gluon block: its own parameters, `params.get` making new ones.
fn own_param_dict(it: &dyn Interpreter, core: &Core) -> Value {
    Value::Object(Rc::new(ParamDict {
        prefix: core.param_prefix.clone(),
        source: ParamSource::Owner(core.clone()),
        np: it.state().np_mode,
    }))
}

// ---- parameters as values -------------------------------------------------------------------

/// A Gluon `Parameter` (`np`: made in numpy mode, where unknown sizes print as -1).
pub struct ParamObj {
    pub param: Rc<Parameter>,
    pub np: bool,
}

/// A PyTorch parameter whose shape waits for the first forward pass, with the empty tensor
/// PyTorch keeps as its `.data` until then (None where it could not be made).
pub struct UninitializedParam(pub Rc<Parameter>, pub Option<Array>);

impl UninitializedParam {
    pub fn value(it: &dyn Interpreter, p: &Rc<Parameter>) -> Value {
        let device = p
            .deferred_devices()
            .and_then(|d| d.first().copied())
            .unwrap_or(Device::cpu(0));
        let empty = it.state().rt.zeros(&[0], p.dtype.get(), device).ok();
        Value::Object(Rc::new(UninitializedParam(p.clone(), empty)))
    }

    fn class_name(&self) -> &'static str {
        // Batch norm's running statistics are buffers, PyTorch's `UninitializedBuffer`.
        if self.0.buffer.get() {
            "UninitializedBuffer"
        } else {
            "UninitializedParameter"
        }
    }
}

/// The PyTorch method behind an operator (`+` is `add`), as its error for an uninitialized
/// operand names it.
fn torch_operator_method(op: &str) -> Option<&'static str> {
    Some(match op {
        "+" => "add",
        "-" => "sub",
        "*" => "mul",
        "/" => "div",
        "//" => "floor_divide",
        "%" => "remainder",
        "**" => "pow",
        "@" => "matmul",
        "neg" => "neg",
        "pos" => "positive",
        "invert" => "bitwise_not",
        _ => return None,
    })
}

/// `p.to(...)`, `p.cpu()`, `p.cuda()`, `p.float()`, `p.double()`, `p.int()`, `p.long()`,
/// `p.half()` of an uninitialized parameter, as PyTorch's lazy placeholder answers them: the
/// parameter itself while its dtype stays float32 (the device is fixed at the first forward
/// pass); for another dtype, that conversion of the placeholder (an empty tensor that requires
/// grad), so `p.double()` is `tensor([], dtype=torch.float64, grad_fn=<ToCopyBackward0>)`.
fn uninitialized_move(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    use crate::runtime::DType;
    let this = a.pos.first().cloned().unwrap_or(Value::None);
    let target = match a.fname {
        "double" => Some(DType::Float64),
        "int" => Some(DType::Int32),
        "long" => Some(DType::Int64),
        "half" => Some(DType::Float16),
        "bfloat16" => Some(DType::BFloat16),
        "to" => a
            .pos
            .iter()
            .skip(1)
            .chain(a.kw.iter().filter(|(k, _)| &**k == "dtype").map(|(_, v)| v))
            .find_map(|v| match v {
                Value::DType(d, _) => Some(*d),
                _ => None,
            }),
        _ => None,
    };
    if target.is_none_or(|d| d == DType::Float32) {
        return Ok(this);
    }
    let Value::Object(o) = &this else {
        return Ok(this);
    };
    let Some(Some(empty)) = o
        .as_any()
        .downcast_ref::<UninitializedParam>()
        .map(|p| p.1.clone())
    else {
        return Err(uninitialized_use_error_for(
            &format!("<method '{}' of 'torch._C.TensorBase' objects>", a.fname),
            &this,
        ));
    };
    let placeholder = wrap(empty, Flavor::Torch);
    let requires_grad = it.get_attr(&placeholder, "requires_grad_")?;
    it.call_value(&requires_grad, Args::default())?;
    let method = it.get_attr(&placeholder, a.fname)?;
    let mut rest = Args::new(a.fname, a.pos[1..].to_vec());
    rest.kw = a.kw;
    it.call_value(&method, rest)
}

/// The dialect's answer for an attribute of an uninitialized parameter.
pub type UninitializedAttr = fn(&Rc<Parameter>, &str) -> Option<Value>;

thread_local! {
    /// `(torch.nn.UninitializedParameter, torch.nn.UninitializedBuffer)`, once the torch
    /// dialect has made them (`type(p)`).
    pub static UNINITIALIZED_CLASS: RefCell<Option<Value>> = const { RefCell::new(None) };
    /// The attributes of an uninitialized parameter that are the dialect's values (`device`,
    /// `dtype`, `size()`): answered by `dialects/torch/lazy.rs`, which sets this.
    pub static UNINITIALIZED_ATTR: Cell<Option<UninitializedAttr>> = const { Cell::new(None) };
}

impl NativeObject for UninitializedParam {
    fn type_name(&self) -> &str {
        self.class_name()
    }
    fn repr(&self) -> String {
        format!("<{}>", self.type_name())
    }
    /// What PyTorch answers without data; the tensor methods a program is likely to try raise
    /// PyTorch's ValueError when called (`p.sum()`), and `shape` its RuntimeError.
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        const METHODS: &[&str] = &[
            "abs", "add", "add_", "bool", "clone", "copy_", "detach", "dim", "div", "fill_",
            "item", "matmul", "max", "mean", "min", "mul", "mul_", "norm", "normal_", "numel",
            "numpy", "reshape", "std", "sub", "sum", "t", "tolist", "type", "uniform_", "var",
            "view", "zero_",
        ];
        match name {
            // PyTorch's placeholder data: an empty tensor (a buffer's is the buffer itself).
            "data" if !self.0.buffer.get() => {
                return self.1.clone().map(|a| wrap(a, Flavor::Torch));
            }
            "data" => return Some(Value::Object(this.clone())),
            "to" | "cpu" | "cuda" | "float" | "double" | "int" | "long" | "half" => {
                let name = [
                    "to", "cpu", "cuda", "float", "double", "int", "long", "half",
                ]
                .into_iter()
                .find(|m| *m == name)
                .unwrap_or("to");
                return Some(crate::object::class::bind(
                    crate::object::builtin(name, "", uninitialized_move),
                    Value::Object(this.clone()),
                ));
            }
            _ => {}
        }
        if let Some(v) = UNINITIALIZED_ATTR
            .with(Cell::get)
            .and_then(|f| f(&self.0, name))
        {
            return Some(v);
        }
        match name {
            "requires_grad" => Some(Value::Bool(true)),
            "grad" => Some(Value::None),
            "__class__" => self.class_value(),
            _ => METHODS.iter().find(|m| **m == name).map(|m| {
                crate::object::class::bind(
                    crate::object::builtin(m, "", |_, a| {
                        let this = a.pos.first().cloned().unwrap_or(Value::None);
                        Err(uninitialized_use_error_for(
                            &format!("<method '{}' of 'torch._C.TensorBase' objects>", a.fname),
                            &this,
                        ))
                    }),
                    Value::Object(this.clone()),
                )
            }),
        }
    }
    fn missing_attr(&self, name: &str) -> Option<Exc> {
        (name == "shape").then(uninitialized_shape_error)
    }
    fn operand_error(&self, op: &str) -> Option<Exc> {
        let method = torch_operator_method(op)?;
        // `**` goes through a Python function of TensorBase, so PyTorch names it with an address.
        let place = if method == "pow" {
            format!(
                "<function TensorBase.pow at {:#x}>",
                self as *const Self as usize
            )
        } else {
            format!("<method '{method}' of 'torch._C.TensorBase' objects>")
        };
        Some(uninitialized_error_text(&place, self.class_name()))
    }
    fn class_value(&self) -> Option<Value> {
        let classes = UNINITIALIZED_CLASS.with(|c| c.borrow().clone())?;
        match &classes {
            Value::Tuple(pair) => pair.get(usize::from(self.0.buffer.get())).cloned(),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Whether `v` is a lazy module's parameter that has no data yet.
pub fn is_uninitialized(v: &Value) -> bool {
    matches!(v, Value::Object(o) if o.as_any().is::<UninitializedParam>())
}

/// An object's address, as CPython's reprs show one.
pub fn address(v: &Value) -> usize {
    match v {
        Value::Object(o) => Rc::as_ptr(o) as *const u8 as usize,
        _ => 0,
    }
}

/// PyTorch's error for an uninitialized parameter given to `place` (a function or method).
pub fn uninitialized_use_error(place: &str) -> Exc {
    uninitialized_error_text(place, "UninitializedParameter")
}

/// The same for `v`, which may be an uninitialized buffer (named so in the text).
fn uninitialized_use_error_for(place: &str, v: &Value) -> Exc {
    let class = match v {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<UninitializedParam>()
            .map_or("UninitializedParameter", |p| p.class_name()),
        _ => "UninitializedParameter",
    };
    uninitialized_error_text(place, class)
}

fn uninitialized_error_text(place: &str, class: &str) -> Exc {
    // The verb is an argument so that tests/layers.rs does not read the text as a `use` tree.
    let verb = "use";
    Exc::value_error(format!("Attempted to {verb} an uninitialized parameter in {place}. This error happens when you are using a `LazyModule` or explicitly manipulating `torch.nn.parameter.{class}` objects. When using LazyModules Call `forward` with a dummy batch to initialize the parameters before calling torch functions"))
}

/// PyTorch's error for the shape of an uninitialized parameter.
pub fn uninitialized_shape_error() -> Exc {
    Exc::new(ExcKind::RuntimeError, "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in `load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call `forward` to initialize the parameters before accessing their attributes.")
}

/// A parameter as the program sees it: Gluon's `Parameter` object, or PyTorch's tensor (its
/// data on its device, known to the session as a parameter).
pub fn param_value(it: &mut dyn Interpreter, dialect: Dialect, p: &Rc<Parameter>) -> Value {
    match dialect {
        Dialect::Gluon => gluon_param_value(it, p),
        Dialect::Torch => {
            // Inside a DataParallel replica, a parameter with a copy on the replica's device
            // reads as that copy: a non-leaf tensor, not noted as the parameter.
            if let Some(d) = it.state().nn.replica_device {
                if p.list_ctx().len() > 1 {
                    if let Ok(data) = p.data(Some(d)) {
                        return wrap(data, Flavor::Torch);
                    }
                }
            }
            torch_param_value(it, p)
        }
    }
}

fn torch_param_value(it: &mut dyn Interpreter, p: &Rc<Parameter>) -> Value {
    match p.data(None) {
        // A buffer (running statistics) is a plain tensor.
        Ok(data) if p.buffer.get() => wrap(data, Flavor::Torch),
        Ok(data) if p.is_initialized() => {
            it.state_mut().nn.note_param_array(&data, p);
            wrap(data, Flavor::Torch)
        }
        _ => UninitializedParam::value(it, p),
    }
}

/// Gluon's `Parameter` object for `p`: the same object while the program holds one.
pub fn gluon_param_value(it: &dyn Interpreter, p: &Rc<Parameter>) -> Value {
    type Handle = std::rc::Weak<dyn NativeObject>;
    let held = p
        .handle
        .borrow()
        .as_ref()
        .and_then(|h| h.downcast_ref::<Handle>())
        .and_then(|w| w.upgrade());
    if let Some(o) = held {
        return Value::Object(o);
    }
    let o: Rc<dyn NativeObject> = Rc::new(ParamObj {
        param: p.clone(),
        np: it.state().np_mode,
    });
    let weak: Handle = Rc::downgrade(&o);
    *p.handle.borrow_mut() = Some(Box::new(weak));
    Value::Object(o)
}

// ---- copy.deepcopy --------------------------------------------------------------------------

/// A parameter's copy as the deep-copy memo keeps it (keyed by the original's address).
struct ParamCopy(Rc<Parameter>);

impl NativeObject for ParamCopy {
    fn type_name(&self) -> &str {
        "ParamCopy"
    }
    fn repr(&self) -> String {
        format!("<copy of {}>", self.0.name)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The copy of `p` inside one `copy.deepcopy` call: made once, then found in the memo (tied
/// weights stay tied inside the copy).
fn copy_param(
    it: &mut dyn Interpreter,
    p: &Rc<Parameter>,
    c: &mut dyn DeepCopier,
) -> Result<Rc<Parameter>, Exc> {
    let key = Rc::as_ptr(p) as *const u8 as usize;
    if let Some(Value::Object(ref o)) = c.memo_get(key) {
        if let Some(done) = o.as_any().downcast_ref::<ParamCopy>() {
            return Ok(done.0.clone());
        }
    }
    let st = it.state_mut();
    let copy = p.deep_copy(&st.rt, &mut st.nn.tape)?;
    c.memo_put(key, Value::Object(Rc::new(ParamCopy(copy.clone()))));
    Ok(copy)
}

/// `copy.deepcopy` of what this layer owns (`python::hooks::ArrayProtocol::deep_copy`): a
/// model's core (children through the memo, parameters, the built-in layer on the copied
/// parameters) and parameters; None for anything else.
pub fn deep_copy(
    it: &mut dyn Interpreter,
    v: &Value,
    c: &mut dyn DeepCopier,
) -> Result<Option<Value>, Exc> {
    let obj = match v {
        Value::Object(o) => o.clone(),
        Value::Array(a) if a.flavor == Flavor::Torch => {
            let Some(p) = it.state().nn.param_of_array(&a.array) else {
                // A plain tensor: a leaf keeps requires_grad; PyTorch refuses a non-leaf.
                let st = it.state_mut();
                if !st.nn.tape.requires_grad(&a.array) {
                    return Ok(None);
                }
                if !st.nn.tape.is_leaf(&a.array) {
                    return Err(Exc::new(ExcKind::RuntimeError, "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.  If you were attempting to deepcopy a module, this may be because of a torch.nn.utils.weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001"));
                }
                let c = a.array.copy_to(&st.rt, a.array.device())?;
                st.nn.tape.set_requires_grad(&c, true);
                return Ok(Some(wrap(c, Flavor::Torch)));
            };
            let copy = copy_param(it, &p, c)?;
            return Ok(Some(param_value(it, Dialect::Torch, &copy)));
        }
        _ => return Ok(None),
    };
    let any = obj.as_any();
    if let Some(p) = any.downcast_ref::<ParamObj>() {
        let copy = copy_param(it, &p.param, c)?;
        return Ok(Some(gluon_param_value(it, &copy)));
    }
    if let Some(p) = any.downcast_ref::<UninitializedParam>() {
        let copy = copy_param(it, &p.0, c)?;
        return Ok(Some(UninitializedParam::value(it, &copy)));
    }
    let Some(core) = any.downcast_ref::<Core>() else {
        return Ok(None);
    };
    let mut children = Vec::new();
    for child in core.children.borrow().clone() {
        children.push(Child {
            key: child.key.clone(),
            block: c.copy(it, &child.block)?,
            by_attr: child.by_attr,
        });
    }
    let mut params = Vec::new();
    for (k, p) in core.params.borrow().clone() {
        params.push((k, copy_param(it, &p, c)?));
    }
    let shared = core
        .shared
        .iter()
        .map(|p| copy_param(it, p, c))
        .collect::<Result<Vec<_>, _>>()?;
    let mut constants = Vec::new();
    for (p, a) in core.constants.borrow().clone() {
        let copy = copy_param(it, &p, c)?;
        constants.push((copy, a.copy_to(&it.state().rt, a.device())?));
    }
    let layer = match &core.layer {
        Some(l) => {
            let mut err = None;
            let copied = l.deep_copy(&mut |p| match copy_param(it, p, c) {
                Ok(q) => Ok(q),
                Err(e) => {
                    // The interpreter's error travels beside the layer's, which only stops it.
                    err = Some(e);
                    Err(RuntimeError::Value("copy failed".into()))
                }
            });
            match (copied, err) {
                (Ok(l), _) => Some(l),
                (Err(_), Some(e)) => return Err(e),
                (Err(e), None) => return Err(e.into()),
            }
        }
        None => None,
    };
    let data = CoreData {
        dialect: core.dialect,
        name: core.name.clone(),
        param_prefix: core.param_prefix.clone(),
        shared,
        children: RefCell::new(children),
        params: RefCell::new(params),
        constants: RefCell::new(constants),
        layer,
        training: Cell::new(core.training.get()),
        sequential: core.sequential,
        hybridized: Cell::new(core.hybridized.get()),
        // The copy traces its own graph on its first call.
        compiled: RefCell::new(None),
        hooks: Default::default(),
    };
    Ok(Some(Value::Object(Rc::new(Core(Rc::new(data))))))
}

// ---- walking a model ------------------------------------------------------------------------

pub fn children(core: &Core) -> Vec<Child> {
    core.children.borrow().clone()
}

/// Parameters by their place in the model (`hidden.weight`, `0.bias`), own ones first, as
/// PyTorch's `named_parameters`/`state_dict` and Gluon's `save_parameters` name them.
/// `dedupe` drops a parameter seen before (shared layers), as `named_parameters` does.
pub fn structural_params(core: &Core, dedupe: bool) -> Vec<(String, Rc<Parameter>)> {
    let mut out: Vec<(String, Rc<Parameter>)> = Vec::new();
    walk_params(core, "", dedupe, &mut out, &mut Vec::new());
    out
}

fn walk_params(
    core: &Core,
    prefix: &str,
    dedupe: bool,
    out: &mut Vec<(String, Rc<Parameter>)>,
    seen_blocks: &mut Vec<*const CoreData>,
) {
    let ptr = Rc::as_ptr(&core.0);
    if dedupe && seen_blocks.contains(&ptr) {
        return;
    }
    seen_blocks.push(ptr);
    for (k, p) in core.params.borrow().iter() {
        if dedupe && out.iter().any(|(_, q)| Rc::ptr_eq(p, q)) {
            continue;
        }
        out.push((format!("{prefix}{k}"), p.clone()));
    }
    for child in children(core) {
        if let Some(c) = core_of(&child.block) {
            walk_params(
                &c,
                &format!("{prefix}{}.", child.key),
                dedupe,
                out,
                seen_blocks,
            );
        }
    }
}

/// Every parameter once, in order.
pub fn all_params(core: &Core) -> Vec<Rc<Parameter>> {
    structural_params(core, true)
        .into_iter()
        .map(|(_, p)| p)
        .collect()
}

/// `(name, block)` for the block and every descendant, pre-order, each once.
pub fn named_modules(this: &Value, prefix: &str, out: &mut Vec<(String, Value)>) {
    if out.iter().any(|(_, v)| v.is(this)) {
        return;
    }
    out.push((prefix.to_string(), this.clone()));
    if let Some(core) = core_of(this) {
        for c in children(&core) {
            let name = if prefix.is_empty() {
                c.key.to_string()
            } else {
                format!("{prefix}.{}", c.key)
            };
            named_modules(&c.block, &name, out);
        }
    }
}

// ---- initialization -------------------------------------------------------------------------

/// An initializer from the program: a built-in one or an instance of a program's
/// `Initializer` subclass (its `_init_weight(name, data)` fills the values).
#[derive(Clone)]
pub enum InitSpec {
    Builtin(Init),
    Custom(Value),
}

/// A built-in initializer object (`init.Normal(0.01)`, `init.Constant(1)`).
pub struct InitObj(pub Init);

impl NativeObject for InitObj {
    fn type_name(&self) -> &str {
        "Initializer"
    }
    fn repr(&self) -> String {
        init_repr(self.0)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn init_repr(init: Init) -> String {
    match init {
        Init::Uniform(s) => format!("Uniform(scale={s})"),
        Init::Normal(s) => format!("Normal(sigma={s})"),
        Init::Zeros => "Zero()".into(),
        Init::Constant(v) => format!("Constant(value={v})"),
        Init::Xavier {
            gaussian,
            fan,
            magnitude,
        } => format!(
            "Xavier(rnd_type={}, factor_type={}, magnitude={magnitude})",
            if gaussian { "gaussian" } else { "uniform" },
            match fan {
                crate::nn::layers::Fan::In => "in",
                crate::nn::layers::Fan::Out => "out",
                crate::nn::layers::Fan::Avg => "avg",
            }
        ),
        Init::FanInUniform => "FanInUniform()".into(),
    }
}

/// `init=` as the frameworks accept it: an initializer object, a program's `Initializer`
/// subclass instance, or a name (`'zeros'`, `'ones'`, `'normal'`, `'xavier'`).
pub fn init_spec(v: Option<Value>) -> Result<Option<InitSpec>, Exc> {
    let v = match v {
        None | Some(Value::None) => return Ok(None),
        Some(v) => v,
    };
    if let Value::Object(o) = &v {
        if let Some(i) = o.as_any().downcast_ref::<InitObj>() {
            return Ok(Some(InitSpec::Builtin(i.0)));
        }
    }
    if let Value::Str(s) = &v {
        return Ok(Some(InitSpec::Builtin(match s.to_ascii_lowercase().as_str() {
            "zeros" | "zero" => Init::Zeros,
            "ones" | "one" => Init::Constant(1.0),
            "normal" => Init::Normal(0.01),
            "uniform" => Init::Uniform(0.07),
            "xavier" => Init::XAVIER,
            other => {
                return Err(Exc::value_error(format!(
                    "unknown initializer '{other}'; use one of 'zeros', 'ones', 'normal', 'uniform', 'xavier' or an init.* object"
                )))
            }
        })));
    }
    if let Value::Instance(i) = &v {
        if i.class().lookup("_init_weight").is_some() {
            return Ok(Some(InitSpec::Custom(v.clone())));
        }
    }
    Err(Exc::type_error(format!(
        "expected an initializer such as init.Normal(0.01), got {}",
        v.type_name()
    )))
}

/// Initializes `params` (Gluon's `initialize`): each takes its own initializer if it was made
/// with one, else `init` (MXNet's default `Uniform(0.07)` when None).
pub fn initialize_params(
    it: &mut dyn Interpreter,
    params: &[Rc<Parameter>],
    constants: &[(Rc<Parameter>, Array)],
    init: Option<InitSpec>,
    devices: &[Device],
    force: bool,
) -> Result<(), Exc> {
    for d in devices {
        it.state().rt.check_device(*d)?;
    }
    for p in params {
        if p.is_initialized() && !force {
            continue;
        }
        if let Some((_, value)) = constants.iter().find(|(q, _)| Rc::ptr_eq(p, q)) {
            let st = it.state_mut();
            p.place_values(&st.rt, &mut st.nn.tape, value, devices)?;
            continue;
        }
        match (&init, p.own_init.get()) {
            (Some(InitSpec::Custom(obj)), false) => {
                if p.has_shape() {
                    run_custom_init(it, obj, p, devices)?;
                } else {
                    p.defer(devices);
                    p.set_pending_custom(Some(Rc::new(obj.clone())));
                }
            }
            (Some(InitSpec::Builtin(i)), _) => {
                p.set_pending_custom(None);
                let st = it.state_mut();
                p.initialize(&st.rt, &mut st.nn.tape, devices, Some(*i), true)?;
            }
            _ => {
                p.set_pending_custom(None);
                let st = it.state_mut();
                p.initialize(&st.rt, &mut st.nn.tape, devices, None, true)?;
            }
        }
    }
    Ok(())
}

/// Calls a program initializer's `_init_weight(name, data)` on zeros of the parameter's shape
/// on the CPU (as MXNet does), then places the result on `devices`.
fn run_custom_init(
    it: &mut dyn Interpreter,
    obj: &Value,
    p: &Rc<Parameter>,
    devices: &[Device],
) -> Result<(), Exc> {
    let shape = p.shape();
    let data = it.state().rt.zeros(&shape, p.dtype.get(), Device::cpu(0))?;
    let flavor = if it.state().np_mode {
        Flavor::Np
    } else {
        Flavor::Nd
    };
    let f = it.get_attr(obj, "_init_weight")?;
    it.call_value(
        &f,
        Args::positional(vec![Value::str(&p.name), wrap(data.clone(), flavor)]),
    )?;
    p.set_pending_custom(None);
    let st = it.state_mut();
    p.place_values(&st.rt, &mut st.nn.tape, &data, devices)?;
    Ok(())
}

/// Before a built-in layer's first forward pass: parameters waiting for their shape under a
/// program's initializer are filled now that the input tells the shape.
fn finish_custom_init(it: &mut dyn Interpreter, layer: &Block, x: &Array) -> Result<(), Exc> {
    let pending: Vec<(Rc<Parameter>, Value, Vec<Device>)> = layer
        .own_params()
        .into_iter()
        .filter(|(_, p)| !p.is_initialized())
        .filter_map(|(_, p)| {
            let custom = p.pending_custom()?;
            let obj = custom.downcast_ref::<Value>()?.clone();
            let devices = p.deferred_devices()?;
            Some((p, obj, devices))
        })
        .collect();
    if pending.is_empty() {
        return Ok(());
    }
    layer.infer_shapes(x.shape());
    for (p, obj, devices) in pending {
        run_custom_init(it, &obj, &p, &devices)?;
    }
    Ok(())
}

// ---- forward --------------------------------------------------------------------------------

/// `block(*args)`: runs `forward` (the program's, or the built-in one).
pub fn call(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.pos.remove(0);
    let Some(core) = core_of(&this) else {
        return Err(not_set_up(&this));
    };
    let forward = it.get_attr(&this, "forward")?;
    if core.hooks.is_empty() {
        return it.call_value(&forward, a);
    }
    super::block_hooks::call_with_hooks(it, &this, &core, a, &forward)
}

/// The built-in `forward`: a layer's computation, a container's children in order, or (for a
/// Gluon HybridBlock that defines `hybrid_forward`) that with the array module and parameters.
fn forward(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    if let Some(layer) = core.layer.clone() {
        let x = a.required(0, "x")?;
        a.finish(1)?;
        let lazy = core.dialect == Dialect::Torch && still_lazy(&layer);
        let out = layer_forward(it, &core, &layer, &x);
        if lazy && !still_lazy(&layer) {
            become_materialised(&this);
        }
        return out;
    }
    if core.sequential {
        let mut x = a.required(0, "x")?;
        a.finish(1)?;
        for c in children(&core) {
            x = it.call_value(&c.block, Args::positional(vec![x]))?;
        }
        return Ok(x);
    }
    if let Value::Instance(inst) = &this {
        if inst.class().lookup("hybrid_forward").is_some() {
            let module = if it.state().np_mode {
                "mxnet.hybrid_np"
            } else {
                "mxnet.ndarray"
            };
            let f = it.import(module)?;
            let hf = it.get_attr(&this, "hybrid_forward")?;
            let mut args = vec![Value::Module(f)];
            args.append(&mut a.pos);
            let mut call_args = Args::positional(args);
            call_args.kw = std::mem::take(&mut a.kw);
            let flavor = if it.state().np_mode {
                Flavor::Np
            } else {
                Flavor::Nd
            };
            for (k, p) in core.params.borrow().iter() {
                let data = p.data(None)?;
                call_args.kw.push((k.clone(), wrap(data, flavor)));
            }
            return it.call_value(&hf, call_args);
        }
    }
    Err(Exc::new(
        ExcKind::NotImplementedError,
        match core.dialect {
            Dialect::Torch => format!(
                "Module [{}] is missing the required \"forward\" function",
                class_name(&this)
            ),
            Dialect::Gluon => format!(
                "{} has no forward(): define `def forward(self, x):` in the class",
                class_name(&this)
            ),
        },
    ))
}

/// Whether a layer still waits for its first input to size its parameters.
fn still_lazy(layer: &Block) -> bool {
    match &layer.kind {
        crate::nn::layers::BlockKind::Dense { in_units, .. } => in_units.get() == 0,
        crate::nn::layers::BlockKind::Op(op) => op.is_lazy(),
        _ => false,
    }
}

/// A lazy PyTorch module whose parameters are now sized becomes its class's `cls_to_become`
/// (`LazyConv2d` -> `Conv2d`), as PyTorch assigns `__class__` after inferring them.
fn become_materialised(this: &Value) {
    if let Value::Instance(inst) = this {
        if let Some(Value::Class(target)) = &inst.class().lookup("cls_to_become") {
            inst.set_class(target.clone());
        }
    }
}

fn layer_forward(
    it: &mut dyn Interpreter,
    core: &Core,
    layer: &Rc<Block>,
    x: &Value,
) -> Result<Value, Exc> {
    let xv = x.as_array().ok_or_else(|| {
        Exc::type_error(format!(
            "{} takes an array, got {}",
            layer.name,
            x.type_name()
        ))
    })?;
    let (array, flavor) = (xv.array.clone(), xv.flavor);
    finish_custom_init(it, layer, &array)?;
    if core.dialect == Dialect::Torch {
        check_torch_devices(core, layer, &array)?;
        check_torch_dtypes(core, layer, &array)?;
    }
    let st = it.state_mut();
    let mut training = false;
    if let crate::nn::layers::BlockKind::Op(op) = &layer.kind {
        // PyTorch's train()/eval(); Gluon's training is `autograd.record(train_mode=True)`.
        training = match core.dialect {
            Dialect::Torch => core.training.get(),
            Dialect::Gluon => st.nn.tape.is_recording() && st.nn.tape.is_training(),
        };
        op.set_training(training);
    }
    let out =
        if st.nn.tape.is_tracing() && matches!(layer.kind, crate::nn::layers::BlockKind::Op(_)) {
            // Under `torch.jit.trace`, one call the trace replays whole, its training mode
            // frozen as PyTorch's trace freezes it.
            let l = layer.clone();
            let run: crate::nn::autograd::TraceFn = Rc::new(move |rt, tape, xs| {
                if let crate::nn::layers::BlockKind::Op(op) = &l.kind {
                    op.set_training(training);
                }
                let x = xs.first().ok_or_else(|| {
                    crate::runtime::RuntimeError::Value("a traced layer lost its input".into())
                })?;
                l.forward(rt, tape, x)
            });
            let key = || format!("{} {:p} {training}", layer.name, Rc::as_ptr(layer));
            st.nn
                .tape
                .traced_call(&st.rt, key, std::slice::from_ref(&array), run)
        } else {
            layer.forward(&st.rt, &mut st.nn.tape, &array)
        };
    if let (Ok(y), Dialect::Torch, crate::nn::layers::BlockKind::Dense { bias, .. }) =
        (&out, core.dialect, &layer.kind)
    {
        crate::nn::layers::torch_linear_name(&mut st.nn.tape, y, array.ndim(), bias.is_some());
    }
    match (out, core.dialect) {
        (Ok(y), _) => Ok(wrap(y, flavor)),
        (Err(e), Dialect::Torch) => Err(match (&e, &layer.kind) {
            // PyTorch's layers report a wrong input shape as RuntimeError.
            (RuntimeError::Shape(m), crate::nn::layers::BlockKind::Op(_)) => {
                Exc::new(ExcKind::RuntimeError, m.clone())
            }
            _ => crate::object::error::torch_error(e),
        }),
        (Err(e), Dialect::Gluon) => Err(e.into()),
    }
}

/// PyTorch's error for an input on another device than the parameters (a convolution's own
/// words where the two are a CPU and a GPU). Nothing is copied.
/// PyTorch's errors for an input whose dtype is not its layer's (a float64 batch into a float32
/// Linear, or the other way round after `double()`); the layers do not convert.
fn check_torch_dtypes(core: &Core, layer: &Block, x: &Array) -> Result<(), Exc> {
    use crate::nn::cnn::{BatchNormLayer, ConvLayer};
    use crate::nn::layers::BlockKind;
    let dtype_of = |name: &str| {
        let params = core.params.borrow();
        let p = params
            .iter()
            .find(|(k, p)| **k == *name && !p.buffer.get())?;
        p.1.data(None).ok().map(|a| a.dtype())
    };
    let (Some(w), x_dt) = (dtype_of("weight"), x.dtype()) else {
        return Ok(());
    };
    // PyTorch's scalar type names: `Float`, `Double`, `Long`, ...
    let torch_name = crate::nn::autograd::torch_scalar_type;
    let error = |m: String| Err(Exc::new(ExcKind::RuntimeError, m));
    match &layer.kind {
        BlockKind::Dense { .. } if x_dt != w => error(format!(
            "mat1 and mat2 must have the same dtype, but got {} and {}",
            torch_name(x_dt),
            torch_name(w)
        )),
        BlockKind::Op(op) if op.as_any().is::<ConvLayer>() => match dtype_of("bias") {
            Some(b) if b != x_dt => error(format!(
                "Input type ({}) and bias type ({}) should be the same",
                torch_name(x_dt).to_lowercase(),
                torch_name(b).to_lowercase()
            )),
            _ if w != x_dt => error(format!(
                "expected scalar type {} but found {}",
                torch_name(x_dt),
                torch_name(w)
            )),
            _ => Ok(()),
        },
        BlockKind::Op(op) if op.as_any().is::<BatchNormLayer>() && x_dt != w => {
            error("mixed dtype (CPU): all inputs must share same datatype.".to_string())
        }
        _ => Ok(()),
    }
}

fn check_torch_devices(core: &Core, layer: &Block, x: &Array) -> Result<(), Exc> {
    let here = x.device();
    // A parameter with a copy here (a DataParallel replica's) is fine.
    let other = core.params.borrow().iter().find_map(|(name, p)| {
        let devices = p.list_ctx();
        if devices.contains(&here) {
            return None;
        }
        Some((name.clone(), *devices.first()?, p.clone()))
    });
    if let Some((name, other, param)) = other {
        let is_conv = matches!(&layer.kind, crate::nn::layers::BlockKind::Op(op)
            if op.as_any().is::<crate::nn::cnn::ConvLayer>());
        if is_conv {
            let dtype = param.data(Some(other)).map_or(x.dtype(), |a| a.dtype());
            super::conv_args::torch_conv_devices(x, &[(&name, dtype, other)])?;
        }
        let name = |d: Device| crate::object::format::torch_device_name(d);
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "Expected all tensors to be on the same device, but found at least two devices, {} and {}! The input is on {} and the parameters on {}: move the model with net.to('{}') or the input with X.to('{}')",
                name(here),
                name(other),
                name(here),
                name(other),
                name(here),
                name(other),
            ),
        ));
    }
    Ok(())
}

// ---- reprs ----------------------------------------------------------------------------------

fn indent(s: &str) -> String {
    s.replace('\n', "\n  ")
}

/// Gluon's and PyTorch's block reprs.
fn block_repr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    let name = class_name(&this);
    let kids = children(&core);
    let text = match core.dialect {
        Dialect::Gluon => {
            if let Some(layer) = &core.layer {
                layer.repr_mode(it.state().np_mode)
            } else {
                let mut lines = Vec::new();
                for c in kids.iter().filter(|c| core.sequential || c.by_attr) {
                    lines.push(format!("  ({}): {}", c.key, indent(&repr(it, &c.block)?)));
                }
                format!("{name}(\n{}\n)", lines.join("\n"))
            }
        }
        Dialect::Torch => {
            let extra = it.get_attr(&this, "extra_repr")?;
            let extra = match &it.call_value(&extra, Args::default())? {
                Value::Str(s) => s.to_string(),
                other => crate::object::format::to_str(it, other)?,
            };
            let mut lines: Vec<String> = if extra.is_empty() {
                Vec::new()
            } else {
                extra.split('\n').map(str::to_string).collect()
            };
            let extra_lines = lines.len();
            for c in &kids {
                lines.push(format!("({}): {}", c.key, indent(&repr(it, &c.block)?)));
            }
            if lines.is_empty() {
                format!("{name}()")
            } else if let (1, true, Some(only)) = (extra_lines, kids.is_empty(), lines.first()) {
                format!("{name}({only})")
            } else {
                format!("{name}(\n  {}\n)", lines.join("\n  "))
            }
        }
    };
    Ok(Value::str(&text))
}

// ---- the methods both dialects share --------------------------------------------------------

/// `net[i]` / `net[a:b]` of a container; `net[-1]` counts from the end.
fn get_item(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    let key = a.required(0, "index")?;
    a.finish(1)?;
    let kids = children(&core);
    let what = match core.dialect {
        Dialect::Gluon => "layer",
        Dialect::Torch => "module",
    };
    match &key {
        Value::Str(s) => kids
            .iter()
            .find(|c| *c.key == **s)
            .map(|c| c.block.clone())
            .ok_or_else(|| Exc::new(ExcKind::KeyError, format!("'{s}'"))),
        Value::Object(_) => {
            // A slice: a new container of the same class holding those children.
            let all = Value::list(kids.iter().map(|c| c.block.clone()).collect());
            let picked = crate::object::ops::get_item(
                it,
                &all,
                crate::object::ops::Index::Single(crate::object::ops::IndexItem::Value(
                    key.clone(),
                )),
            )?;
            let class = match &this {
                Value::Instance(i) => i.class().value(),
                _ => return Err(Exc::type_error("slicing needs a container")),
            };
            let picked = it.iterate(&picked)?;
            let new = it.call_value(&class, Args::default())?;
            if let Some(c) = core_of(&new) {
                for (i, b) in picked.into_iter().enumerate() {
                    register_child(&c, &i.to_string(), b, false)?;
                }
            }
            Ok(new)
        }
        _ => {
            let i = crate::object::ops::as_i64(&key).ok_or_else(|| {
                Exc::type_error(format!(
                    "{what} indices must be integers or slices, not {}",
                    key.type_name()
                ))
            })?;
            let n = kids.len() as i64;
            let j = if i < 0 { i + n } else { i };
            if j < 0 || j >= n {
                // Each framework's own words (Gluon indexes a Python list).
                return Err(Exc::new(
                    ExcKind::IndexError,
                    match core.dialect {
                        Dialect::Torch => format!("index {i} is out of range"),
                        Dialect::Gluon => "list index out of range".to_string(),
                    },
                ));
            }
            Ok(kids[j as usize].block.clone())
        }
    }
}

fn len(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    a.finish(0)?;
    let n = core.children.borrow().len();
    Ok(Value::Int(n as i64))
}

fn iter(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    a.finish(0)?;
    let list = Value::list(children(&core).into_iter().map(|c| c.block).collect());
    iterator(it, list)
}

/// `iter(list)`: what a generator-returning method returns (`next(net.parameters())` works).
pub fn iterator(it: &mut dyn Interpreter, list: Value) -> Result<Value, Exc> {
    let f = it
        .state()
        .builtins
        .get("iter")
        .cloned()
        .ok_or_else(|| Exc::type_error("iter is not available"))?;
    it.call_value(&f, Args::positional(vec![list]))
}

/// `net.apply(fn)`: fn on every descendant, children first, then on net; returns net.
fn apply(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    let f = a.required(0, "fn")?;
    a.finish(1)?;
    for c in children(&core) {
        let m = it.get_attr(&c.block, "apply")?;
        it.call_value(&m, Args::positional(vec![f.clone()]))?;
    }
    it.call_value(&f, Args::positional(vec![this.clone()]))?;
    Ok(this)
}

/// `register_child(block, name=None)` / `add_module(name, module)`.
fn add_child(core: &Core, name: Option<String>, block: Value) -> Result<(), Exc> {
    if core_of(&block).is_none() {
        return Err(Exc::type_error(format!(
            "{} is not a {}",
            block.type_name(),
            match core.dialect {
                Dialect::Gluon => "Block",
                Dialect::Torch => "Module subclass",
            }
        )));
    }
    let key = name.unwrap_or_else(|| core.children.borrow().len().to_string());
    register_child(core, &key, block, false)
}

/// `Sequential.add(*blocks)` / `append(module)`.
fn add(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    for b in std::mem::take(&mut a.pos) {
        add_child(&core, None, b)?;
    }
    a.finish(0)?;
    Ok(match core.dialect {
        Dialect::Torch => this,
        Dialect::Gluon => Value::None,
    })
}

/// Where each parameter goes when a model moves: every copy to `devices`.
pub fn move_params(it: &mut dyn Interpreter, core: &Core, devices: &[Device]) -> Result<(), Exc> {
    for d in devices {
        it.state().rt.check_device(*d)?;
    }
    for p in all_params(core) {
        if !p.is_initialized() && p.deferred_devices().is_none() {
            // A lazy PyTorch parameter: it is created where the first input is.
            continue;
        }
        let st = it.state_mut();
        p.reset_ctx(&st.rt, &mut st.nn.tape, devices)?;
    }
    Ok(())
}

/// The methods every block has, whatever its dialect.
pub fn common_methods() -> Vec<(&'static str, BuiltinFn)> {
    let own: [(&'static str, BuiltinFn); 6] = [
        ("__setattr__", set_attr),
        ("__getattr__", get_attr),
        ("__call__", call),
        ("__repr__", block_repr),
        ("forward", forward),
        ("apply", apply),
    ];
    own.into_iter()
        .chain(super::block_hooks::methods())
        .collect()
}

/// The methods of containers (`Sequential`, `ModuleList`).
pub fn container_methods() -> Vec<(&'static str, BuiltinFn)> {
    vec![
        ("__getitem__", get_item),
        ("__len__", len),
        ("__iter__", iter),
        ("add", add),
        ("append", add),
    ]
}

/// Registers `methods` as methods of a class written in Rust (binding like `def`s).
pub fn native_block_class(
    name: &str,
    module: &str,
    base: Value,
    doc: &str,
    methods: &[(&'static str, BuiltinFn)],
) -> Rc<Class> {
    native_block_class_bases(name, module, vec![base], doc, methods)
}

/// [`native_block_class`] with several bases (PyTorch's lazy modules and their mixins).
pub fn native_block_class_bases(
    name: &str,
    module: &str,
    bases: Vec<Value>,
    doc: &str,
    methods: &[(&'static str, BuiltinFn)],
) -> Rc<Class> {
    let class = crate::modules::python::stdlib::native_class_bases(name, module, bases, doc, &[]);
    {
        let mut attrs = class.attrs.borrow_mut();
        for (n, f) in methods {
            // Named `Block.collect_params` as CPython names a method by its class (reprs of
            // bound methods and argument errors show it); made once per class per thread.
            let qualified: &'static str = Box::leak(format!("{name}.{n}").into_boxed_str());
            attrs.set(Rc::from(*n), unbound_method(qualified, "", *f));
        }
    }
    class
}

// ---- Gluon's parameter dictionaries ---------------------------------------------------------

/// Where a `ParameterDict`'s parameters come from.
pub enum ParamSource {
    /// A selection (`collect_params()`, or a `ParameterDict()` a program fills with `get`).
    Fixed(RefCell<Vec<Rc<Parameter>>>),
    /// A block's own parameters (`self.params`): `get` adds to them.
    Owner(Core),
}

/// Gluon's `ParameterDict`.
pub struct ParamDict {
    pub prefix: String,
    pub source: ParamSource,
    /// Made in numpy mode: unknown sizes print as -1.
    pub np: bool,
}

impl ParamDict {
    pub fn params(&self) -> Vec<Rc<Parameter>> {
        match &self.source {
            ParamSource::Fixed(v) => v.borrow().clone(),
            ParamSource::Owner(core) => {
                let mut out: Vec<Rc<Parameter>> = Vec::new();
                for (_, p) in core.params.borrow().iter() {
                    if !out.iter().any(|q| Rc::ptr_eq(p, q)) {
                        out.push(p.clone());
                    }
                }
                out
            }
        }
    }

    /// `Parameter dense0_weight (...)` lines under the prefix, as MXNet prints the dictionary.
    pub fn repr(&self, np_mode: bool) -> String {
        let unknown = if np_mode { -1 } else { 0 };
        let lines: Vec<String> = self
            .params()
            .iter()
            .map(|p| format!("  {}", p.repr(unknown)))
            .collect();
        let name = if self.prefix.is_empty() {
            String::new()
        } else {
            format!("{} ", self.prefix)
        };
        format!("{name}(\n{}\n)", lines.join("\n"))
    }
}

/// A Gluon block's children as the `_children` dictionary (`self._children[name] = block`
/// registers one).
pub struct ChildrenView(pub Core);

impl NativeObject for ChildrenView {
    fn type_name(&self) -> &str {
        "OrderedDict"
    }
    fn repr(&self) -> String {
        let keys: Vec<String> = self
            .0
            .children
            .borrow()
            .iter()
            .map(|c| format!("'{}'", c.key))
            .collect();
        format!("<children {}>", keys.join(", "))
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let recv = Value::Object(this.clone());
        Some(match name {
            "__setitem__" => crate::object::method(&recv, "__setitem__", "", |_, r, mut a| {
                let core = children_core(r)?;
                let key = a.required(0, "key")?;
                let block = a.required(1, "value")?;
                let key = match &key {
                    Value::Str(s) => s.to_string(),
                    other => other.type_name(),
                };
                add_child(&core, Some(key), block)?;
                Ok(Value::None)
            }),
            "__getitem__" => crate::object::method(&recv, "__getitem__", "", |_, r, mut a| {
                let core = children_core(r)?;
                let key = a.required(0, "key")?;
                let Value::Str(k) = &key else {
                    return Err(Exc::new(ExcKind::KeyError, key.type_name()));
                };
                let found = core
                    .children
                    .borrow()
                    .iter()
                    .find(|c| *c.key == **k)
                    .map(|c| c.block.clone());
                found.ok_or_else(|| Exc::new(ExcKind::KeyError, format!("'{k}'")))
            }),
            "__len__" => crate::object::method(&recv, "__len__", "", |_, r, _| {
                Ok(Value::Int(children_core(r)?.children.borrow().len() as i64))
            }),
            "values" => crate::object::method(&recv, "values", "", |_, r, _| {
                Ok(Value::list(
                    children(&children_core(r)?)
                        .into_iter()
                        .map(|c| c.block)
                        .collect(),
                ))
            }),
            "keys" | "__iter__" => crate::object::method(&recv, "keys", "", |_, r, _| {
                Ok(Value::list(
                    children(&children_core(r)?)
                        .into_iter()
                        .map(|c| Value::Str(c.key))
                        .collect(),
                ))
            }),
            "items" => crate::object::method(&recv, "items", "", |_, r, _| {
                Ok(Value::list(
                    children(&children_core(r)?)
                        .into_iter()
                        .map(|c| Value::tuple(vec![Value::Str(c.key), c.block]))
                        .collect(),
                ))
            }),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["keys", "values", "items"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn children_core(r: &Value) -> Result<Core, Exc> {
    match r {
        Value::Object(o) => o
            .as_any()
            .downcast_ref::<ChildrenView>()
            .map(|v| v.0.clone())
            .ok_or_else(|| Exc::type_error("expected the children of a block")),
        _ => Err(Exc::type_error("expected the children of a block")),
    }
}
