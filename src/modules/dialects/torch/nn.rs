//! `torch.nn`: `Module` (which programs subclass), `Sequential`, `ModuleList`, the built-in
//! layers (`Linear`, `LazyLinear`, `ReLU`, `Sigmoid`, `Tanh`, `Flatten`), `Parameter` and
//! `torch.nn.init`. What modules share with Gluon's blocks is `crate::modules::array::blocks`; here are
//! PyTorch's constructors (parameters drawn at once on the CPU with its default
//! initialization), its method names and its state dicts.
use std::cell::RefCell;
use std::rc::Rc;

use crate::modules::array::blocks::{
    self, core_of, install_core, param_value, parameter_of, this_core, Core, CoreData, Dialect,
};
use crate::modules::array::conv_args::self_arg;
use crate::modules::dialects::torch::{parse_torch_device, torch_error};
use crate::modules::python::native::{object, usize_arg};
use crate::nn::layers::{draw, fans, Activation, Block, BlockKind, Fan, Init, Parameter};
use crate::object::class::Class;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_f64, wrap};
use crate::object::value::{Args, BuiltinFn, Flavor, Module, NativeObject, TypeKind, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::DType;
use crate::runtime::{Array, Device};

/// The classes of one thread's sessions (the same objects however `torch.nn` is imported).
pub struct TorchClasses {
    pub module: Rc<Class>,
    pub sequential: Rc<Class>,
    pub module_list: Rc<Class>,
    pub linear: Rc<Class>,
    pub relu: Rc<Class>,
    pub sigmoid: Rc<Class>,
    pub tanh: Rc<Class>,
    pub flatten: Rc<Class>,
    /// `nn.Parameter`: calling it makes a tensor the session knows as a parameter.
    pub parameter: Rc<Class>,
}

thread_local! {
    static CLASSES: RefCell<Option<Rc<TorchClasses>>> = const { RefCell::new(None) };
}

pub fn classes() -> Rc<TorchClasses> {
    CLASSES.with(|c| {
        if let Some(k) = c.borrow().as_ref() {
            return k.clone();
        }
        let k = Rc::new(make_classes());
        *c.borrow_mut() = Some(k.clone());
        k
    })
}

fn make_classes() -> TorchClasses {
    let mut base: Vec<(&'static str, BuiltinFn)> = blocks::common_methods();
    base.extend([
        ("__init__", module_init as BuiltinFn),
        ("parameters", parameters),
        ("named_parameters", named_parameters),
        ("children", children),
        ("named_children", named_children),
        ("modules", modules),
        ("named_modules", named_modules),
        ("state_dict", state_dict),
        ("load_state_dict", load_state_dict),
        ("to", to),
        ("cuda", cuda),
        ("cpu", cpu),
        ("float", float),
        ("double", double),
        ("half", half),
        ("bfloat16", bfloat16),
        ("train", train),
        ("eval", eval),
        ("add_module", add_module),
        ("register_module", add_module),
        ("register_parameter", register_parameter),
        ("register_buffer", register_buffer),
        ("zero_grad", zero_grad),
        ("extra_repr", extra_repr),
        ("named_buffers", super::conv::named_buffers),
        ("buffers", super::conv::buffers),
    ]);
    let module = blocks::native_block_class(
        "Module",
        "torch.nn.modules.module",
        Value::Type(TypeKind::Object),
        "Base class for all neural network modules. Subclass it, call super().__init__() first in __init__, assign the layers and nn.Parameter(...)s to attributes (they are registered) and define forward(self, x).",
        &base,
    );
    let mut seq = blocks::container_methods();
    seq.push(("__init__", sequential_init as BuiltinFn));
    let sequential = blocks::native_block_class(
        "Sequential",
        "torch.nn.modules.container",
        module.value(),
        "Sequential(*modules): modules applied in order.",
        &seq,
    );
    let mut list = blocks::container_methods();
    list.push(("__init__", module_list_init as BuiltinFn));
    list.push(("__repr__", module_list_repr as BuiltinFn));
    list.push(("forward", |_, _| {
        Err(Exc::new(
            ExcKind::NotImplementedError,
            "ModuleList has no forward(): iterate over it in your module's forward",
        ))
    }));
    let module_list = blocks::native_block_class(
        "ModuleList",
        "torch.nn.modules.container",
        module.value(),
        "ModuleList(modules=None): holds submodules in a list (registered, indexable, iterable).",
        &list,
    );
    let leaf = |name: &str, file: &str, doc: &str, init: BuiltinFn| {
        blocks::native_block_class(
            name,
            &format!("torch.nn.modules.{file}"),
            module.value(),
            doc,
            &[("__init__", init)],
        )
    };
    TorchClasses {
        linear: leaf("Linear", "linear", "Linear(in_features, out_features, bias=True): y = x W^T + b, W and b drawn from U(-1/sqrt(in), 1/sqrt(in)).", linear_init),
        relu: blocks::native_block_class(
            "ReLU",
            "torch.nn.modules.activation",
            module.value(),
            "ReLU(inplace=False): max(x, 0).",
            &[
                ("__init__", |it, a| activation_init(it, a, Activation::Relu)),
                ("extra_repr", relu_extra_repr),
            ],
        ),
        sigmoid: leaf("Sigmoid", "activation", "Sigmoid(): 1 / (1 + exp(-x)).", |it, a| activation_init(it, a, Activation::Sigmoid)),
        tanh: leaf("Tanh", "activation", "Tanh(): tanh(x).", |it, a| activation_init(it, a, Activation::Tanh)),
        flatten: leaf("Flatten", "flatten", "Flatten(start_dim=1, end_dim=-1): (batch, ...) to (batch, features).", flatten_init),
        parameter: crate::modules::python::stdlib::native_class(
            "Parameter",
            "torch.nn.parameter",
            Value::Type(TypeKind::Object),
            "Parameter(data, requires_grad=True): a tensor a Module registers as a parameter when assigned to an attribute.",
            &[("__new__", parameter)],
        ),
        module,
        sequential,
        module_list,
    }
}

// ---- construction ---------------------------------------------------------------------------

fn setup(
    it: &mut dyn Interpreter,
    this: &Value,
    hint: &str,
    layer: Option<Rc<Block>>,
    sequential: bool,
) -> Result<(), Exc> {
    let name = it.state_mut().nn.next_name(hint);
    let mut data = CoreData::new(Dialect::Torch, name, layer);
    data.sequential = sequential;
    install_core(this, data)
}

pub(super) fn module_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    if let Some((k, _)) = a.kw.first() {
        return Err(Exc::type_error(format!(
            "Module.__init__() got an unexpected keyword argument '{k}'"
        )));
    }
    if !a.pos.is_empty() {
        return Err(Exc::type_error(format!(
            "Module.__init__() takes 1 positional argument but {} were given",
            a.pos.len() + 1
        )));
    }
    if core_of(&this).is_none() {
        setup(it, &this, "module", None, false)?;
    }
    Ok(Value::None)
}

fn sequential_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    a.finish(usize::MAX)?;
    setup(it, &this, "sequential", None, true)?;
    let core = core_of(&this).ok_or_else(|| Exc::type_error("Sequential is not set up"))?;
    let items = std::mem::take(&mut a.pos);
    // Sequential(OrderedDict([('name', module), ...])) names its children.
    if let [single] = items.as_slice() {
        if core_of(single).is_none() && !matches!(single, Value::Array(_)) {
            if let Ok(items_fn) = it.get_attr(single, "items") {
                let pairs = it.call_value(&items_fn, Args::default())?;
                for pair in it.iterate(&pairs)? {
                    let kv = it.iterate(&pair)?;
                    if let [Value::Str(k), m] = kv.as_slice() {
                        add_child(&core, Some(k.to_string()), m.clone())?;
                    }
                }
                return Ok(Value::None);
            }
        }
    }
    for m in items {
        add_child(&core, None, m)?;
    }
    Ok(Value::None)
}

fn module_list_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let modules = a.take(0, "modules")?;
    a.finish(1)?;
    setup(it, &this, "modulelist", None, false)?;
    let core = core_of(&this).ok_or_else(|| Exc::type_error("ModuleList is not set up"))?;
    if let Some(m) = modules.filter(|m| !matches!(m, Value::None)) {
        for item in it.iterate(&m)? {
            add_child(&core, None, item)?;
        }
    }
    Ok(Value::None)
}

/// ModuleList's repr: a run of equal reprs is one line, `(0-5): 6 x Linear(...)`, as PyTorch
/// prints it.
fn module_list_repr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = blocks::this_core(&mut a)?;
    let name = match &this {
        Value::Instance(i) => i.class().name.to_string(),
        other => other.type_name(),
    };
    let mut runs: Vec<(usize, usize, String)> = Vec::new();
    for (i, c) in blocks::children(&core).iter().enumerate() {
        let text = crate::object::format::repr(it, &c.block)?;
        match runs.last_mut() {
            Some((_, end, last)) if *last == text => *end = i,
            _ => runs.push((i, i, text)),
        }
    }
    if runs.is_empty() {
        return Ok(Value::str(&format!("{name}()")));
    }
    let lines: Vec<String> = runs
        .iter()
        .map(|(start, end, text)| {
            let line = if start == end {
                format!("({start}): {text}")
            } else {
                format!("({start}-{end}): {} x {text}", end - start + 1)
            };
            line.replace('\n', "\n  ")
        })
        .collect();
    Ok(Value::str(&format!("{name}(\n  {}\n)", lines.join("\n  "))))
}

fn add_child(core: &Core, key: Option<String>, m: Value) -> Result<(), Exc> {
    if core_of(&m).is_none() {
        return Err(Exc::type_error(format!(
            "{} is not a Module subclass",
            m.type_name()
        )));
    }
    let key = key.unwrap_or_else(|| core.children.borrow().len().to_string());
    blocks::register_child(core, &key, m, false)
}

fn bias_arg(a: &mut Args, index: usize) -> Result<bool, Exc> {
    Ok(a.take(index, "bias")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true))
}

/// A Linear layer with PyTorch's initialisation; `in_features == 0` makes it lazy.
fn make_linear(
    it: &mut dyn Interpreter,
    this: &Value,
    in_features: usize,
    out_features: usize,
    use_bias: bool,
) -> Result<(), Exc> {
    let name = it.state_mut().nn.next_name("linear");
    let weight = Parameter::new_accumulating(
        format!("{name}.weight"),
        vec![out_features, in_features],
        Init::FanInUniform,
    );
    let bias = use_bias.then(|| {
        let b = Parameter::new_accumulating(
            format!("{name}.bias"),
            vec![out_features],
            Init::FanInUniform,
        );
        b.fan_in.set(in_features);
        b
    });
    let layer = Block::dense_with(
        name.clone(),
        out_features,
        None,
        in_features,
        weight,
        bias,
        false,
    );
    // PyTorch creates parameters at construction, on the CPU; a lazy layer creates both at the
    // first call, the weight first (the bias's shape is known, but it is drawn then too, so
    // the generator's sequence is PyTorch's).
    for (_, p) in layer.own_params() {
        if in_features == 0 {
            p.defer(&[Device::cpu(0)]);
            continue;
        }
        let st = it.state_mut();
        p.initialize(&st.rt, &mut st.nn.tape, &[Device::cpu(0)], None, false)
            .map_err(torch_error)?;
    }
    install_core(this, CoreData::new(Dialect::Torch, name, Some(layer)))
}

fn linear_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let in_f = usize_arg(&a.required(0, "in_features")?, "in_features")?;
    let out_f = usize_arg(&a.required(1, "out_features")?, "out_features")?;
    let use_bias = bias_arg(&mut a, 2)?;
    a.take(3, "device")?;
    a.take(4, "dtype")?;
    a.finish(5)?;
    if in_f == 0 || out_f == 0 {
        return Err(Exc::value_error("Linear: in_features and out_features must be at least 1 (use nn.LazyLinear(out_features) to infer the input size)"));
    }
    make_linear(it, &this, in_f, out_f, use_bias)?;
    Ok(Value::None)
}

/// `nn.LazyLinear(out_features)`'s `__init__`: a `Linear` whose input size comes from the first
/// input; its class becomes `Linear` then (`super::lazy`).
pub(super) fn lazy_linear_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    let out_f = usize_arg(&a.required(0, "out_features")?, "out_features")?;
    let use_bias = bias_arg(&mut a, 1)?;
    a.take(2, "device")?;
    a.take(3, "dtype")?;
    a.finish(4)?;
    if out_f == 0 {
        return Err(Exc::value_error(
            "LazyLinear: out_features must be at least 1",
        ));
    }
    make_linear(it, &this, 0, out_f, use_bias)?;
    Ok(Value::None)
}

fn activation_init(it: &mut dyn Interpreter, mut a: Args, act: Activation) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    // Only ReLU takes `inplace` (and shows it in its repr); Sigmoid and Tanh take nothing.
    if act == Activation::Relu {
        let inplace = match a.take(0, "inplace")? {
            Some(v) => v.truthy()?,
            None => false,
        };
        a.finish(1)?;
        if let Value::Instance(inst) = &this {
            inst.attrs
                .borrow_mut()
                .set(Rc::from("inplace"), Value::Bool(inplace));
        }
    } else {
        a.finish(0)?;
    }
    let name = it.state_mut().nn.next_name(act.name());
    let layer = Rc::new(Block {
        name: name.clone(),
        kind: BlockKind::Activation(act),
    });
    install_core(&this, CoreData::new(Dialect::Torch, name, Some(layer)))?;
    Ok(Value::None)
}

/// ReLU's `extra_repr`: `ReLU(inplace=True)` as PyTorch prints it.
fn relu_extra_repr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.finish(1)?;
    let inplace = it.get_attr(&this, "inplace")?.truthy()?;
    Ok(Value::str(if inplace { "inplace=True" } else { "" }))
}

fn flatten_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = self_arg(&mut a)?;
    for (i, (name, want)) in [("start_dim", 1), ("end_dim", -1)].into_iter().enumerate() {
        if let Some(v) = a.take(i, name)? {
            if crate::object::ops::as_i64(&v) != Some(want) {
                return Err(Exc::value_error(format!(
                    "Flatten: only {name}={want} is supported; reshape the tensor for other dims"
                )));
            }
        }
    }
    a.finish(2)?;
    let name = it.state_mut().nn.next_name("flatten");
    let layer = Rc::new(Block {
        name: name.clone(),
        kind: BlockKind::Flatten,
    });
    install_core(&this, CoreData::new(Dialect::Torch, name, Some(layer)))?;
    Ok(Value::None)
}

// ---- Module methods -------------------------------------------------------------------------

fn extra_repr(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    a.finish(0)?;
    let text = match core.layer.as_ref().map(|l| &l.kind) {
        Some(BlockKind::Dense {
            units,
            in_units,
            bias,
            ..
        }) => format!(
            "in_features={}, out_features={units}, bias={}",
            in_units.get(),
            if bias.is_some() { "True" } else { "False" }
        ),
        Some(BlockKind::Flatten) => "start_dim=1, end_dim=-1".into(),
        Some(BlockKind::Op(op)) => op.repr(false),
        _ => String::new(),
    };
    Ok(Value::str(&text))
}

fn recurse_flag(a: &mut Args, i: usize) -> Result<bool, Exc> {
    Ok(a.take(i, "recurse")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true))
}

/// `(name, parameter)` of the module, its own only unless `recurse`.
fn named(core: &Core, recurse: bool) -> Vec<(String, Rc<Parameter>)> {
    let all: Vec<(String, Rc<Parameter>)> = if recurse {
        blocks::structural_params(core, true)
    } else {
        core.params
            .borrow()
            .iter()
            .map(|(k, p)| (k.to_string(), p.clone()))
            .collect()
    };
    // Buffers (running statistics) are in state_dict, not parameters().
    all.into_iter().filter(|(_, p)| !p.buffer.get()).collect()
}

fn parameters(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    let recurse = recurse_flag(&mut a, 0)?;
    a.finish(1)?;
    let values: Vec<Value> = named(&core, recurse)
        .iter()
        .map(|(_, p)| param_value(it, Dialect::Torch, p))
        .collect();
    blocks::iterator(it, Value::list(values))
}

fn named_parameters(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    let prefix = match &a.take(0, "prefix")? {
        Some(Value::Str(s)) if !s.is_empty() => format!("{s}."),
        _ => String::new(),
    };
    let recurse = recurse_flag(&mut a, 1)?;
    a.take(2, "remove_duplicate")?;
    a.finish(3)?;
    let values: Vec<Value> = named(&core, recurse)
        .iter()
        .map(|(n, p)| {
            Value::tuple(vec![
                Value::str(&format!("{prefix}{n}")),
                param_value(it, Dialect::Torch, p),
            ])
        })
        .collect();
    blocks::iterator(it, Value::list(values))
}

fn children(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    a.finish(0)?;
    let list = blocks::children(&core)
        .into_iter()
        .map(|c| c.block)
        .collect();
    blocks::iterator(it, Value::list(list))
}

fn named_children(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    a.finish(0)?;
    let list = blocks::children(&core)
        .into_iter()
        .map(|c| Value::tuple(vec![Value::Str(c.key), c.block]))
        .collect();
    blocks::iterator(it, Value::list(list))
}

fn modules(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, _) = this_core(&mut a)?;
    a.finish(0)?;
    let mut out = Vec::new();
    blocks::named_modules(&this, "", &mut out);
    blocks::iterator(it, Value::list(out.into_iter().map(|(_, m)| m).collect()))
}

fn named_modules(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, _) = this_core(&mut a)?;
    a.take(0, "memo")?;
    let prefix = match &a.take(1, "prefix")? {
        Some(Value::Str(s)) => s.to_string(),
        _ => String::new(),
    };
    a.finish(2)?;
    let mut out = Vec::new();
    blocks::named_modules(&this, &prefix, &mut out);
    blocks::iterator(
        it,
        Value::list(
            out.into_iter()
                .map(|(n, m)| Value::tuple(vec![Value::str(&n), m]))
                .collect(),
        ),
    )
}

/// A tensor sharing `data`'s storage that is not the parameter itself (what `state_dict`
/// and `.data` give: `sd['w'][0] = 1` changes the parameter, `sd['w']` records no graph).
pub fn alias(data: &Array) -> Result<Array, Exc> {
    let shape: Vec<isize> = data.shape().iter().map(|&d| d as isize).collect();
    Ok(data.reshape(&shape)?)
}

/// `collections.OrderedDict(pairs)`.
fn ordered_dict(it: &mut dyn Interpreter, pairs: Vec<Value>) -> Result<Value, Exc> {
    let m = it.import("collections")?;
    let class = m
        .get("OrderedDict")
        .ok_or_else(|| Exc::type_error("collections.OrderedDict is missing"))?;
    it.call_value(&class, Args::positional(vec![Value::list(pairs)]))
}

/// What a module's state dict holds: its parameters and buffers by structural name, less the
/// buffers registered with `persistent=False`.
fn state_params(core: &Core) -> Vec<(String, Rc<Parameter>)> {
    blocks::structural_params(core, false)
        .into_iter()
        .filter(|(_, p)| p.persistent.get())
        .collect()
}

fn state_dict(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    a.take_kw("destination");
    let prefix = match &a.take_kw("prefix") {
        Some(Value::Str(s)) => s.to_string(),
        _ => String::new(),
    };
    a.take_kw("keep_vars");
    a.finish(0)?;
    let mut pairs = Vec::new();
    for (name, p) in state_params(&core) {
        // A lazy module's parameter before the first input is its `UninitializedParameter`
        // (`UninitializedBuffer`), as PyTorch's state_dict holds it.
        let value = match p.data(None) {
            Ok(data) if p.is_initialized() => wrap(alias(&data)?, Flavor::Torch),
            _ => param_value(it, Dialect::Torch, &p),
        };
        pairs.push(Value::tuple(vec![
            Value::str(&format!("{prefix}{name}")),
            value,
        ]));
    }
    ordered_dict(it, pairs)
}

/// What `load_state_dict` returns: `<All keys matched successfully>` when nothing is off.
struct IncompatibleKeys {
    missing: Vec<String>,
    unexpected: Vec<String>,
}

fn str_list(v: &[String]) -> Value {
    Value::list(v.iter().map(|s| Value::str(s)).collect())
}

impl NativeObject for IncompatibleKeys {
    fn type_name(&self) -> &str {
        "_IncompatibleKeys"
    }
    fn repr(&self) -> String {
        if self.missing.is_empty() && self.unexpected.is_empty() {
            return "<All keys matched successfully>".into();
        }
        let list = |v: &[String]| {
            let parts: Vec<String> = v.iter().map(|s| format!("'{s}'")).collect();
            format!("[{}]", parts.join(", "))
        };
        format!(
            "_IncompatibleKeys(missing_keys={}, unexpected_keys={})",
            list(&self.missing),
            list(&self.unexpected)
        )
    }
    fn get_attr(&self, _: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "missing_keys" => Some(str_list(&self.missing)),
            "unexpected_keys" => Some(str_list(&self.unexpected)),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn size_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("torch.Size([{}])", parts.join(", "))
}

fn load_state_dict(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    let sd = a.required(0, "state_dict")?;
    let strict = a.flag(1, "strict", true)?;
    a.take(2, "assign")?;
    a.finish(3)?;
    let items_fn = it.get_attr(&sd, "items").map_err(|_| {
        Exc::type_error(format!(
            "Expected state_dict to be dict-like, got <class '{}'>.",
            sd.type_name()
        ))
    })?;
    let pairs = it.call_value(&items_fn, Args::default())?;
    let mut given: Vec<(String, Array)> = Vec::new();
    for pair in it.iterate(&pairs)? {
        let kv = it.iterate(&pair)?;
        match kv.as_slice() {
            [Value::Str(k), v] => {
                let arr = match v.as_array() {
                    Some(x) => x.array.clone(),
                    None => match parameter_of(it, v) {
                        Some(p) => p.data(None)?,
                        None => {
                            return Err(Exc::type_error(format!(
                                "state_dict['{k}'] must be a tensor, got {}",
                                v.type_name()
                            )))
                        }
                    },
                };
                given.push((k.to_string(), arr));
            }
            _ => return Err(Exc::type_error("state_dict keys must be strings")),
        }
    }
    let expected = state_params(&core);
    let missing: Vec<String> = expected
        .iter()
        .filter(|(n, _)| !given.iter().any(|(k, _)| k == n))
        .map(|(n, _)| n.clone())
        .collect();
    let unexpected: Vec<String> = given
        .iter()
        .filter(|(k, _)| !expected.iter().any(|(n, _)| n == k))
        .map(|(k, _)| k.clone())
        .collect();
    let mut errors: Vec<String> = Vec::new();
    for (name, p) in &expected {
        if let Some((_, arr)) = given.iter().find(|(k, _)| k == name) {
            if p.is_initialized() && p.shape() != arr.shape() {
                errors.push(format!(
                    "size mismatch for {name}: copying a param with shape {} from checkpoint, the shape in current model is {}.",
                    size_text(arr.shape()),
                    size_text(&p.shape())
                ));
            }
        }
    }
    if strict {
        let quoted = |v: &[String]| {
            v.iter()
                .map(|k| format!("\"{k}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !unexpected.is_empty() {
            errors.insert(
                0,
                format!("Unexpected key(s) in state_dict: {}. ", quoted(&unexpected)),
            );
        }
        if !missing.is_empty() {
            errors.insert(
                0,
                format!("Missing key(s) in state_dict: {}. ", quoted(&missing)),
            );
        }
    }
    if !errors.is_empty() {
        let class = match &this {
            Value::Instance(i) => i.class().name.to_string(),
            _ => "Module".into(),
        };
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "Error(s) in loading state_dict for {class}:\n\t{}",
                errors.join("\n\t")
            ),
        ));
    }
    // Every check passed: copy (nothing above changed the model).
    for (name, p) in &expected {
        let Some((_, arr)) = given.iter().find(|(k, _)| k == name) else {
            continue;
        };
        let arr = arr.astype(p.dtype.get())?;
        let st = it.state_mut();
        if p.is_initialized() {
            for copy in p.list_data()? {
                let moved = arr.copy_to(&st.rt, copy.device())?;
                moved.copy_into(&copy)?;
            }
        } else {
            let devices = p.deferred_devices().unwrap_or_else(|| vec![Device::cpu(0)]);
            p.place_values(&st.rt, &mut st.nn.tape, &arr, &devices)?;
        }
    }
    Ok(object(IncompatibleKeys {
        missing,
        unexpected,
    }))
}

fn move_to(
    it: &mut dyn Interpreter,
    this: Value,
    core: &Core,
    device: Device,
) -> Result<Value, Exc> {
    blocks::move_params(it, core, &[device]).map_err(|e| match e.kind {
        ExcKind::MXNetError => Exc::new(ExcKind::RuntimeError, e.message.clone()),
        _ => e,
    })?;
    Ok(this)
}

/// `to(device)`, `to(dtype)`, `to(device, dtype)`, `to(dtype=...)`: a floating-point dtype
/// converts the parameters as `float()`/`double()` do.
fn to(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (mut this, core) = this_core(&mut a)?;
    let spec = a.take(0, "device")?;
    let second = a.take(1, "dtype")?;
    a.take_kw("non_blocking");
    a.finish(2)?;
    let (device, dtype) = match spec {
        Some(Value::DType(dt, _)) => (None, Some(dt)),
        other => (
            other,
            second.and_then(|d| match d {
                Value::DType(dt, _) => Some(dt),
                _ => None,
            }),
        ),
    };
    if let Some(spec) = device.filter(|d| !matches!(d, Value::None)) {
        let d = parse_torch_device(&spec, None)?.device();
        this = move_to(it, this, &core, d)?;
    }
    match dtype {
        Some(dt @ (DType::Float32 | DType::Float64)) => cast_module(it, this, &core, dt),
        Some(dt) => Err(Exc::type_error(format!(
            "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=torch.{}",
            dt.name()
        ))),
        None => Ok(this),
    }
}

fn cuda(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    let index = a.take(0, "device")?;
    a.finish(1)?;
    let d = match &index {
        None | Some(Value::None) => Device::gpu(0),
        Some(Value::Int(i)) => Device::gpu(usize_arg(&Value::Int(*i), "device")?),
        Some(v) => parse_torch_device(v, None)?.device(),
    };
    move_to(it, this, &core, d)
}

fn cpu(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    a.finish(0)?;
    move_to(it, this, &core, Device::cpu(0))
}

/// `float()` / `double()`: the module itself, its floating-point parameters and buffers (and
/// their gradients' dtype) now float32 / float64, as PyTorch's `Module._apply`; integer buffers
/// (`num_batches_tracked`) stay.
fn cast_module(
    it: &mut dyn Interpreter,
    this: Value,
    core: &Core,
    dtype: DType,
) -> Result<Value, Exc> {
    for p in blocks::all_params(core) {
        // A made buffer's values tell its dtype (`num_batches_tracked` is int64).
        let current = p.data(None).map_or(p.dtype.get(), |d| d.dtype());
        if !matches!(current, DType::Float32 | DType::Float64) {
            continue;
        }
        let st = it.state_mut();
        p.cast(&st.rt, &mut st.nn.tape, dtype)?;
    }
    Ok(this)
}

fn float(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    a.finish(0)?;
    cast_module(it, this, &core, DType::Float32)
}

fn double(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    a.finish(0)?;
    cast_module(it, this, &core, DType::Float64)
}

fn half(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    a.finish(0)?;
    cast_module(it, this, &core, DType::Float16)
}

fn bfloat16(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    a.finish(0)?;
    cast_module(it, this, &core, DType::BFloat16)
}

fn set_training(this: &Value, mode: bool) {
    let mut mods = Vec::new();
    blocks::named_modules(this, "", &mut mods);
    for (_, m) in mods {
        if let Some(c) = core_of(&m) {
            c.training.set(mode);
        }
    }
}

fn train(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, _) = this_core(&mut a)?;
    let mode = a.flag(0, "mode", true)?;
    a.finish(1)?;
    set_training(&this, mode);
    Ok(this)
}

fn eval(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, _) = this_core(&mut a)?;
    a.finish(0)?;
    set_training(&this, false);
    Ok(this)
}

fn add_module(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    let name = match &a.required(0, "name")? {
        Value::Str(s) => s.to_string(),
        other => {
            return Err(Exc::type_error(format!(
                "module name should be a string. Got {}",
                other.type_name()
            )))
        }
    };
    let m = a.required(1, "module")?;
    a.finish(2)?;
    if name.contains('.') {
        return Err(Exc::new(
            ExcKind::KeyError,
            format!("'module name can\\'t contain \".\", got: {name}'"),
        ));
    }
    add_child(&core, Some(name), m)?;
    Ok(Value::None)
}

fn register_parameter(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    let name = match &a.required(0, "name")? {
        Value::Str(s) => s.to_string(),
        other => {
            return Err(Exc::type_error(format!(
                "parameter name should be a string. Got {}",
                other.type_name()
            )))
        }
    };
    let v = a.required(1, "param")?;
    a.finish(2)?;
    let p = parameter_of(it, &v).ok_or_else(|| {
        Exc::type_error(format!(
            "cannot assign '{}' object to parameter '{name}' (torch.nn.Parameter or None required)",
            v.type_name()
        ))
    })?;
    blocks::register_param(&core, &name, p);
    Ok(Value::None)
}

/// `register_buffer(name, tensor, persistent=True)`: a tensor the module keeps and moves
/// with it, never trained (as batch norm's running statistics), in its state dict unless
/// `persistent` is false.
fn register_buffer(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    let name = match &a.required(0, "name")? {
        Value::Str(s) => s.to_string(),
        other => {
            return Err(Exc::type_error(format!(
                "buffer name should be a string. Got {}",
                other.type_name()
            )))
        }
    };
    let v = a.required(1, "tensor")?;
    let persistent = a.take(2, "persistent")?;
    a.finish(3)?;
    let persistent = match persistent {
        Some(p) => crate::object::class::truthy(it, &p)?,
        None => true,
    };
    if name.contains('.') {
        return Err(Exc::new(
            ExcKind::KeyError,
            "'buffer name can\\'t contain \".\"'",
        ));
    }
    if name.is_empty() {
        return Err(Exc::new(
            ExcKind::KeyError,
            "'buffer name can\\'t be empty string \"\"'",
        ));
    }
    let taken = match &this {
        Value::Instance(i) => i.attrs.borrow().get(&name).is_some(),
        _ => false,
    } || core.children.borrow().iter().any(|c| *c.key == *name)
        || core
            .params
            .borrow()
            .iter()
            .any(|(k, p)| **k == *name && !p.buffer.get());
    if taken {
        return Err(Exc::new(
            ExcKind::KeyError,
            format!("\"attribute '{name}' already exists\""),
        ));
    }
    let data = match v.as_array() {
        Some(x) if x.flavor == Flavor::Torch => x.array.clone(),
        _ => {
            return Err(Exc::type_error(format!(
                "cannot assign '{}' object to buffer '{name}' (torch Tensor or None required)",
                v.type_name()
            )))
        }
    };
    let p = Parameter::new_accumulating(name.clone(), data.shape().to_vec(), Init::Zeros);
    p.buffer.set(true);
    p.persistent.set(persistent);
    let st = it.state_mut();
    p.adopt(&st.rt, &mut st.nn.tape, data)?;
    blocks::register_param(&core, &name, p);
    Ok(Value::None)
}

fn zero_grad(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    a.take(0, "set_to_none")?;
    a.finish(1)?;
    let st = it.state_mut();
    for p in blocks::all_params(&core) {
        for d in p.list_ctx() {
            if let Ok(g) = p.grad(&st.nn.tape, Some(d)) {
                let z = st.rt.zeros(g.shape(), g.dtype(), g.device())?;
                z.copy_into(&g)?;
            }
        }
    }
    Ok(Value::None)
}

// ---- nn.Parameter and nn.init ---------------------------------------------------------------

/// `nn.Parameter(data, requires_grad=True)`: a tensor sharing `data`'s storage that a module
/// registers when it is assigned to an attribute.
fn parameter(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let data = a.take(0, "data")?;
    let requires_grad = match a.take(1, "requires_grad")? {
        Some(v) => v.truthy()?,
        None => true,
    };
    a.finish(2)?;
    let data = match &data {
        None | Some(Value::None) => {
            let st = it.state();
            st.rt
                .zeros(&[0], crate::runtime::DType::Float32, Device::cpu(0))?
        }
        Some(v) => match v.as_array() {
            Some(x) => x.array.clone(),
            None => {
                return Err(Exc::type_error(format!(
                    "Parameter(data): data must be a tensor, got {}",
                    v.type_name()
                )))
            }
        },
    };
    let view = alias(&data)?;
    let p = Parameter::new_accumulating(String::new(), view.shape().to_vec(), Init::Zeros);
    let st = it.state_mut();
    p.adopt(&st.rt, &mut st.nn.tape, view.clone())?;
    st.nn.note_param_array(&view, &p);
    if !requires_grad {
        super::autograd::set_requires(it, &view, false)?;
    }
    Ok(wrap(view, Flavor::Torch))
}

/// The tensor an `nn.init` function fills.
fn target(a: &mut Args) -> Result<Array, Exc> {
    let t = a.required(0, "tensor")?;
    if let Some(x) = t.as_array() {
        return Ok(x.array.clone());
    }
    if blocks::is_uninitialized(&t) {
        // Where PyTorch's function first touches the tensor: itself, or the tensor method it
        // calls first (`xavier_uniform_` asks `dim()`, `kaiming_normal_` the shape).
        let place = match a.fname {
            "xavier_uniform_" | "xavier_normal_" => {
                "<method 'dim' of 'torch._C.TensorBase' objects>".to_string()
            }
            "zeros_" => "<method 'zero_' of 'torch._C.TensorBase' objects>".to_string(),
            "ones_" => "<method 'fill_' of 'torch._C.TensorBase' objects>".to_string(),
            "kaiming_normal_" => return Err(blocks::uninitialized_shape_error()),
            name => format!("<function {name} at {:#x}>", blocks::address(&t)),
        };
        return Err(blocks::uninitialized_use_error(&place));
    }
    Err(Exc::type_error(format!(
        "nn.init functions fill a tensor in place, got {}",
        t.type_name()
    )))
}

/// Draws `init` for `t`'s shape and copies it into `t` (on its device); returns `t`.
fn fill(it: &mut dyn Interpreter, t: Array, init: Init) -> Result<Value, Exc> {
    let st = it.state();
    let values = draw(&st.rt, t.shape(), t.dtype(), init, 0)?;
    let moved = values.copy_to(&st.rt, t.device())?;
    moved.copy_into(&t)?;
    Ok(wrap(t, Flavor::Torch))
}

fn num(a: &mut Args, i: usize, name: &str, default: f64) -> Result<f64, Exc> {
    match a.take(i, name)? {
        None => Ok(default),
        Some(v) => as_f64(&v).ok_or_else(|| {
            Exc::type_error(format!("{name} must be a number, got {}", v.type_name()))
        }),
    }
}

fn fan_mode(a: &mut Args, i: usize) -> Result<Fan, Exc> {
    match &a.take(i, "mode")? {
        None => Ok(Fan::In),
        Some(Value::Str(s)) if &**s == "fan_in" => Ok(Fan::In),
        Some(Value::Str(s)) if &**s == "fan_out" => Ok(Fan::Out),
        Some(other) => Err(Exc::value_error(format!(
            "Mode {} not supported, please use one of ['fan_in', 'fan_out']",
            match other {
                Value::Str(s) => s.to_string(),
                v => v.type_name(),
            }
        ))),
    }
}

/// PyTorch's `calculate_gain(nonlinearity, param)`.
fn gain(nonlinearity: &str, param: Option<f64>) -> Result<f64, Exc> {
    Ok(match nonlinearity {
        "linear" | "conv1d" | "conv2d" | "conv3d" | "sigmoid" => 1.0,
        "tanh" => 5.0 / 3.0,
        "relu" => 2f64.sqrt(),
        "leaky_relu" => {
            let slope = param.unwrap_or(0.01);
            (2.0 / (1.0 + slope * slope)).sqrt()
        }
        "selu" => 0.75,
        other => {
            return Err(Exc::value_error(format!(
                "Unsupported nonlinearity {other}"
            )))
        }
    })
}

fn check_fans(t: &Array) -> Result<(), Exc> {
    if t.ndim() < 2 {
        return Err(Exc::value_error(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions",
        ));
    }
    Ok(())
}

fn init_module() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "torch.nn.init",
        "parameter initialization in place",
    ));
    m.set(
        "normal_",
        builtin(
            "normal_",
            "normal_(tensor, mean=0.0, std=1.0): fill with N(mean, std^2) in place.",
            |it, mut a| {
                let t = target(&mut a)?;
                let mean = num(&mut a, 1, "mean", 0.0)?;
                let std = num(&mut a, 2, "std", 1.0)?;
                a.take_kw("generator");
                a.finish(3)?;
                let st = it.state();
                let values = st
                    .rt
                    .normal(mean, std, t.shape(), t.dtype(), Device::cpu(0))?;
                values.copy_to(&st.rt, t.device())?.copy_into(&t)?;
                Ok(wrap(t, Flavor::Torch))
            },
        ),
    );
    m.set(
        "uniform_",
        builtin(
            "uniform_",
            "uniform_(tensor, a=0.0, b=1.0): fill with U(a, b) in place.",
            |it, mut a| {
                let t = target(&mut a)?;
                let lo = num(&mut a, 1, "a", 0.0)?;
                let hi = num(&mut a, 2, "b", 1.0)?;
                a.take_kw("generator");
                a.finish(3)?;
                let st = it.state();
                let values = st
                    .rt
                    .uniform(lo, hi, t.shape(), t.dtype(), Device::cpu(0))?;
                values.copy_to(&st.rt, t.device())?.copy_into(&t)?;
                Ok(wrap(t, Flavor::Torch))
            },
        ),
    );
    m.set(
        "constant_",
        builtin(
            "constant_",
            "constant_(tensor, val): fill with val in place.",
            |it, mut a| {
                let t = target(&mut a)?;
                let v = a.required(1, "val")?;
                a.finish(2)?;
                let v =
                    as_f64(&v).ok_or_else(|| Exc::type_error("constant_: val must be a number"))?;
                fill(it, t, Init::Constant(v))
            },
        ),
    );
    m.set(
        "zeros_",
        builtin(
            "zeros_",
            "zeros_(tensor): fill with 0 in place.",
            |it, mut a| {
                let t = target(&mut a)?;
                a.finish(1)?;
                fill(it, t, Init::Zeros)
            },
        ),
    );
    m.set(
        "ones_",
        builtin(
            "ones_",
            "ones_(tensor): fill with 1 in place.",
            |it, mut a| {
                let t = target(&mut a)?;
                a.finish(1)?;
                fill(it, t, Init::Constant(1.0))
            },
        ),
    );
    m.set("xavier_uniform_", builtin("xavier_uniform_", "xavier_uniform_(tensor, gain=1.0): U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)), in place.", |it, mut a| {
        let t = target(&mut a)?;
        let g = num(&mut a, 1, "gain", 1.0)?;
        a.take_kw("generator");
        a.finish(2)?;
        check_fans(&t)?;
        fill(it, t, Init::Xavier { gaussian: false, fan: Fan::Avg, magnitude: 3.0 * g * g })
    }));
    m.set("xavier_normal_", builtin("xavier_normal_", "xavier_normal_(tensor, gain=1.0): N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)), in place.", |it, mut a| {
        let t = target(&mut a)?;
        let g = num(&mut a, 1, "gain", 1.0)?;
        a.take_kw("generator");
        a.finish(2)?;
        check_fans(&t)?;
        fill(it, t, Init::Xavier { gaussian: true, fan: Fan::Avg, magnitude: g * g })
    }));
    fn kaiming(it: &mut dyn Interpreter, mut a: Args, gaussian: bool) -> Result<Value, Exc> {
        let t = target(&mut a)?;
        let slope = num(&mut a, 1, "a", 0.0)?;
        let fan = fan_mode(&mut a, 2)?;
        let nl = match &a.take(3, "nonlinearity")? {
            None => "leaky_relu".to_string(),
            Some(Value::Str(s)) => s.to_string(),
            Some(other) => other.type_name(),
        };
        a.take_kw("generator");
        a.finish(4)?;
        check_fans(&t)?;
        let g = gain(&nl, Some(slope))?;
        let magnitude = if gaussian { g * g } else { 3.0 * g * g };
        fill(
            it,
            t,
            Init::Xavier {
                gaussian,
                fan,
                magnitude,
            },
        )
    }
    m.set("kaiming_uniform_", builtin("kaiming_uniform_", "kaiming_uniform_(tensor, a=0, mode='fan_in', nonlinearity='leaky_relu'): U(-b, b), b = gain * sqrt(3 / fan), in place.", |it, a| kaiming(it, a, false)));
    m.set("kaiming_normal_", builtin("kaiming_normal_", "kaiming_normal_(tensor, a=0, mode='fan_in', nonlinearity='leaky_relu'): N(0, std^2), std = gain / sqrt(fan), in place.", |it, a| kaiming(it, a, true)));
    m.set(
        "calculate_gain",
        builtin(
            "calculate_gain",
            "calculate_gain(nonlinearity, param=None): the recommended gain for a nonlinearity.",
            |_, mut a| {
                let nl = match &a.required(0, "nonlinearity")? {
                    Value::Str(s) => s.to_string(),
                    other => other.type_name(),
                };
                let p = a.take(1, "param")?.and_then(|v| as_f64(&v));
                a.finish(2)?;
                Ok(Value::Float(gain(&nl, p)?))
            },
        ),
    );
    let _ = fans;
    m
}

pub fn build() -> Rc<Module> {
    let m = Rc::new(Module::new("torch.nn", "PyTorch's neural network modules"));
    m.set("functional", Value::Module(super::functional::build()));
    m.set("parallel", Value::Module(super::parallel::build()));
    m.set("utils", Value::Module(super::optim::nn_utils()));
    let k = classes();
    for c in [
        &k.module,
        &k.sequential,
        &k.module_list,
        &k.linear,
        &k.relu,
        &k.sigmoid,
        &k.tanh,
        &k.flatten,
    ] {
        m.set(&c.name, c.value());
    }
    for c in super::functional::softmax_modules(k.module.value()) {
        m.set(&c.name, c.value());
    }
    super::conv::register(&m, k.module.value());
    super::lazy::register(&m, &k);
    m.set("Parameter", k.parameter.value());
    m.set("init", Value::Module(init_module()));
    // `nn.DataParallel` is written in the language (`torch.nn.parallel.data_parallel`).
    m.set(
        "__getattr__",
        crate::object::builtin("__getattr__", "", |it, mut a| {
            let name = a.required(0, "name")?;
            let text = crate::object::format::to_str(it, &name)?;
            let found = match text.as_str() {
                "DataParallel" => super::parallel::library_attr(it, &text)?,
                _ => super::nn_more::nn_attr(it, &text)?,
            };
            found.ok_or_else(|| {
                Exc::new(
                    ExcKind::AttributeError,
                    format!("module 'torch.nn' has no attribute '{text}'"),
                )
            })
        }),
    );
    m
}
