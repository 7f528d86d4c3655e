//! Gluon's model classes: `nn.Block`, `nn.HybridBlock`, `nn.Sequential`, `nn.HybridSequential`,
//! the built-in layers (`Dense`, `Flatten`, `Activation`; the convolutional ones are
//! `gluon_conv.rs`), `Parameter`,
//! `ParameterDict` and `mxnet.init`. What they share with PyTorch's modules is in
//! `crate::modules::array::blocks`; here are Gluon's names (`dense0`, prefixes, `name_scope`), its
//! parameter dictionaries and its spellings.
use std::cell::RefCell;
use std::rc::Rc;

use crate::modules::array::arrays::device_arg;
use crate::modules::array::blocks::{
    self, core_of, install_core, this_core, Core, CoreData, Dialect, InitObj, InitSpec, ParamDict,
    ParamObj, ParamSource,
};
use crate::nn::layers::{Activation, Block, BlockKind, Fan, Init, Parameter};
use crate::nn::params_io::{self, ParamsIoError};
use crate::object::class::Class;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, BuiltinFn, Module, NativeObject, TypeKind, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::{DType, Device};

use super::gluon::{bound, devices_arg, downcast, flavor, object, usize_arg};
use super::symbol;

/// The classes of one thread's sessions (a class is the same object however it is imported:
/// `gluon.nn.Block is gluon.Block`).
pub struct GluonClasses {
    pub block: Rc<Class>,
    pub hybrid_block: Rc<Class>,
    pub sequential: Rc<Class>,
    pub hybrid_sequential: Rc<Class>,
    pub dense: Rc<Class>,
    pub flatten: Rc<Class>,
    pub activation: Rc<Class>,
    /// `gluon.SymbolBlock`: what `SymbolBlock.imports` makes.
    pub symbol_block: Rc<Class>,
    pub initializer: Rc<Class>,
    /// `gluon.Parameter` and `gluon.ParameterDict`: calling them makes the native objects.
    pub parameter: Rc<Class>,
    pub parameter_dict: Rc<Class>,
}

thread_local! {
    static CLASSES: RefCell<Option<Rc<GluonClasses>>> = const { RefCell::new(None) };
}

pub fn classes() -> Rc<GluonClasses> {
    CLASSES.with(|c| {
        if let Some(k) = c.borrow().as_ref() {
            return k.clone();
        }
        let k = Rc::new(make_classes());
        *c.borrow_mut() = Some(k.clone());
        k
    })
}

fn make_classes() -> GluonClasses {
    let mut base: Vec<(&'static str, BuiltinFn)> = blocks::common_methods();
    base.extend([
        ("__init__", block_init as BuiltinFn),
        ("collect_params", collect_params),
        ("initialize", initialize),
        ("hybridize", hybridize),
        ("export", export),
        ("name_scope", name_scope),
        ("register_child", register_child),
        ("save_parameters", save_parameters),
        ("load_parameters", load_parameters),
        ("zero_grad", zero_grad),
    ]);
    let block = blocks::native_block_class(
        "Block",
        "mxnet.gluon.block",
        Value::Type(TypeKind::Object),
        "Base class for all neural network layers and models. Subclass it, create the layers in __init__ (assigned to attributes, they are registered as children) and define forward(self, x).",
        &base,
    );
    let hybrid_block = blocks::native_block_class(
        "HybridBlock",
        "mxnet.gluon.block",
        block.value(),
        "A Block that hybridize() compiles: the next call traces hybrid_forward(self, F, x, **params) once with F = mxnet.symbol and Symbols, and later calls run the compiled graph. Define hybrid_forward, or forward(self, x).",
        &[("__call__", hybrid_call as BuiltinFn)],
    );
    let symbol_block = blocks::native_block_class(
        "SymbolBlock",
        "mxnet.gluon.block",
        hybrid_block.value(),
        "A block that runs a symbolic graph: SymbolBlock.imports(symbol_file, input_names, param_file=None, ctx=None) reads what HybridBlock.export wrote.",
        &[("__repr__", symbol_block_repr as BuiltinFn)],
    );
    symbol_block.attrs.borrow_mut().set(
        Rc::from("imports"),
        builtin(
            "imports",
            "SymbolBlock.imports(symbol_file, input_names, param_file=None, ctx=None): the block a symbol file (and its parameters) describe.",
            symbol_block_imports,
        ),
    );
    let mut seq = blocks::container_methods();
    seq.push(("__init__", sequential_init as BuiltinFn));
    let sequential = blocks::native_block_class(
        "Sequential",
        "mxnet.gluon.nn.basic_layers",
        block.value(),
        "Stacks blocks sequentially: net.add(layer, ...); net(x) runs them in order.",
        &seq,
    );
    let hybrid_sequential = blocks::native_block_class(
        "HybridSequential",
        "mxnet.gluon.nn.basic_layers",
        hybrid_block.value(),
        "Stacks HybridBlocks sequentially; hybridize() compiles them into one graph.",
        &seq,
    );
    let layer = |name: &str, doc: &str, init: BuiltinFn| {
        blocks::native_block_class(
            name,
            "mxnet.gluon.nn.basic_layers",
            hybrid_block.value(),
            doc,
            &[("__init__", init)],
        )
    };
    GluonClasses {
        dense: layer("Dense", "Dense(units, activation=None, use_bias=True, flatten=True, dtype='float32', weight_initializer=None, bias_initializer='zeros', in_units=0): a fully connected layer.", dense_init),
        flatten: layer("Flatten", "Flatten(): (batch, ...) to (batch, features).", flatten_init),
        activation: layer("Activation", "Activation(name): 'relu', 'sigmoid' or 'tanh'.", activation_init),
        initializer: blocks::native_block_class(
            "Initializer",
            "mxnet.initializer",
            Value::Type(TypeKind::Object),
            "The base of initializers: subclass it and define _init_weight(self, name, data) to fill data in place.",
            &[("__init__", |_, _| Ok(Value::None))],
        ),
        parameter: crate::modules::python::stdlib::native_class(
            "Parameter",
            "mxnet.gluon.parameter",
            Value::Type(TypeKind::Object),
            "Parameter(name, shape=None, dtype=float32, init=None, grad_req='write'): a parameter to register on a block (self.weight = gluon.Parameter('weight', shape=(3, 4))).",
            &[("__new__", new_parameter_fn)],
        ),
        parameter_dict: crate::modules::python::stdlib::native_class(
            "ParameterDict",
            "mxnet.gluon.parameter",
            Value::Type(TypeKind::Object),
            "ParameterDict(prefix=''): an ordered dictionary of parameters; get(name, shape=...) makes them.",
            &[("__new__", new_parameter_dict)],
        ),
        block,
        hybrid_block,
        symbol_block,
        sequential,
        hybrid_sequential,
    }
}

// ---- construction and naming ----------------------------------------------------------------

/// The name hint MXNet gives a class's blocks (`Dense` -> `dense`, `MLP` -> `mlp`).
fn alias(this: &Value) -> String {
    let name = match this {
        Value::Instance(i) => i.class().name.to_lowercase(),
        _ => "block".into(),
    };
    match name.as_str() {
        "conv2d" | "conv1d" | "conv2dtranspose" => "conv".into(),
        "maxpool1d" | "avgpool1d" | "globalavgpool1d" | "globalmaxpool1d" | "maxpool2d"
        | "avgpool2d" | "globalavgpool2d" | "globalmaxpool2d" => "pool".into(),
        // gluon.rnn's cells name themselves after their layers (`_alias`).
        "rnncell" | "lstmcell" | "grucell" => name.trim_end_matches("cell").into(),
        _ => name,
    }
}

/// Sets `this` up as a Gluon block: its name from `prefix=` or the next counter, its
/// parameter prefix from `params=` (shared) or its own name, and the layer `make` builds.
pub(super) fn setup(
    it: &mut dyn Interpreter,
    this: &Value,
    a: &mut Args,
    sequential: bool,
    make: impl FnOnce(&str, &dyn Fn(&str) -> Option<Rc<Parameter>>) -> Option<Rc<Block>>,
) -> Result<(), Exc> {
    let prefix = a.take_kw("prefix");
    let params = a.take_kw("params");
    let name = match &prefix {
        Some(Value::Str(p)) => p.trim_end_matches('_').to_string(),
        None | Some(Value::None) => it.state_mut().nn.next_name(&alias(this)),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "prefix must be a string, got {}",
                other.type_name()
            )))
        }
    };
    let (param_prefix, shared) = match &params {
        None | Some(Value::None) => (format!("{name}_"), Vec::new()),
        Some(v) => {
            let d = downcast::<ParamDict>(v, "a ParameterDict (another block's .params)")?;
            (d.prefix.clone(), d.params())
        }
    };
    let find = |short: &str| {
        let full = format!("{param_prefix}{short}");
        shared.iter().find(|p| p.name == full).cloned()
    };
    let layer = make(&param_prefix, &find);
    let mut data = CoreData::new(Dialect::Gluon, name, layer);
    data.param_prefix = param_prefix.clone();
    data.shared = shared.clone();
    data.sequential = sequential;
    install_core(this, data)
}

fn block_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.pos.remove(0);
    if let Some(p) = a.take(0, "prefix")? {
        a.kw.push((Rc::from("prefix"), p));
    }
    if let Some(p) = a.take(1, "params")? {
        a.kw.push((Rc::from("params"), p));
    }
    let mut rest = Args {
        kw: std::mem::take(&mut a.kw),
        ..Args::default()
    };
    setup(it, &this, &mut rest, false, |_, _| None)?;
    rest.finish(0)?;
    Ok(Value::None)
}

fn sequential_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.pos.remove(0);
    setup(it, &this, &mut a, true, |_, _| None)?;
    a.finish(0)?;
    Ok(Value::None)
}

/// Takes an optional boolean argument.
fn flag(a: &mut Args, i: usize, name: &str, default: bool) -> Result<bool, Exc> {
    Ok(a.take(i, name)?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(default))
}

fn dense_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.pos.remove(0);
    let units = usize_arg(&a.required(0, "units")?, "units")?;
    if units == 0 {
        return Err(Exc::value_error("Dense: units must be at least 1"));
    }
    let act = activation_arg(a.take(1, "activation")?)?;
    let use_bias = flag(&mut a, 2, "use_bias", true)?;
    let flatten = flag(&mut a, 3, "flatten", true)?;
    a.take(4, "dtype")?;
    let weight_init = blocks::init_spec(a.take(5, "weight_initializer")?)?;
    let bias_init = blocks::init_spec(a.take(6, "bias_initializer")?)?;
    let in_units = a
        .take(7, "in_units")?
        .map(|v| usize_arg(&v, "in_units"))
        .transpose()?
        .unwrap_or(0);
    setup(it, &this, &mut a, false, |prefix, find| {
        let name = prefix.trim_end_matches('_').to_string();
        let weight = find("weight").unwrap_or_else(|| {
            Parameter::new(
                format!("{prefix}weight"),
                vec![units, in_units],
                Init::Uniform(0.07),
            )
        });
        let bias = use_bias.then(|| {
            find("bias").unwrap_or_else(|| {
                let b = Parameter::new(format!("{prefix}bias"), vec![units], Init::Zeros);
                b.own_init.set(true);
                b
            })
        });
        Some(Block::dense_with(
            name, units, act, in_units, weight, bias, flatten,
        ))
    })?;
    a.finish(8)?;
    if let Some(core) = core_of(&this) {
        super::gluon_conv::set_own_inits(&core, &[("weight", weight_init), ("bias", bias_init)]);
    }
    Ok(Value::None)
}

fn flatten_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.pos.remove(0);
    setup(it, &this, &mut a, false, |prefix, _| {
        Some(Rc::new(Block {
            name: prefix.trim_end_matches('_').to_string(),
            kind: BlockKind::Flatten,
        }))
    })?;
    a.finish(0)?;
    Ok(Value::None)
}

fn activation_init(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.pos.remove(0);
    let act = activation_arg(Some(a.required(0, "activation")?))?
        .ok_or_else(|| Exc::value_error("Activation needs a name such as 'relu'"))?;
    setup(it, &this, &mut a, false, |prefix, _| {
        Some(Rc::new(Block {
            name: prefix.trim_end_matches('_').to_string(),
            kind: BlockKind::Activation(act),
        }))
    })?;
    a.finish(1)?;
    Ok(Value::None)
}

pub(super) fn activation_arg(v: Option<Value>) -> Result<Option<Activation>, Exc> {
    match &v {
        None | Some(Value::None) => Ok(None),
        Some(Value::Str(s)) => Ok(Some(Activation::parse(s)?)),
        Some(other) => Err(Exc::type_error(format!(
            "activation must be a name such as 'relu', got {}",
            other.type_name()
        ))),
    }
}

// ---- Block methods --------------------------------------------------------------------------

/// Every `get_constant` value in the model, for `initialize`.
fn constants(this: &Value) -> Vec<(Rc<Parameter>, crate::runtime::Array)> {
    let mut mods = Vec::new();
    blocks::named_modules(this, "", &mut mods);
    mods.iter()
        .filter_map(|(_, m)| core_of(m))
        .flat_map(|c| c.constants.borrow().clone())
        .collect()
}

/// The parameters `collect_params()` gives: each once by name, own first.
pub fn collect(core: &Core) -> Vec<Rc<Parameter>> {
    let mut out: Vec<Rc<Parameter>> = Vec::new();
    for p in blocks::all_params(core) {
        if !out.iter().any(|q| q.name == p.name) {
            out.push(p);
        }
    }
    out
}

fn param_dict(it: &dyn Interpreter, prefix: String, params: Vec<Rc<Parameter>>) -> Value {
    object(ParamDict {
        prefix,
        source: ParamSource::Fixed(RefCell::new(params)),
        np: it.state().np_mode,
    })
}

fn collect_params(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    let select = a.take(0, "select")?;
    a.finish(1)?;
    let mut params = collect(&core);
    match &select {
        None | Some(Value::None) => {}
        Some(Value::Str(pattern)) => {
            // MXNet matches with `re.match`: anchored at the start.
            let re = regex::Regex::new(&format!("^(?:{pattern})")).map_err(|e| {
                Exc::value_error(format!("collect_params: bad select pattern: {e}"))
            })?;
            params.retain(|p| re.is_match(&p.name));
        }
        Some(other) => {
            return Err(Exc::type_error(format!(
                "select must be a regular expression string such as '.*weight', got {}",
                other.type_name()
            )))
        }
    }
    Ok(param_dict(it, format!("{}_", core.name), params))
}

/// `initialize(init=None, ctx=None, verbose=False, force_reinit=False)` on `params`.
fn initialize_with(
    it: &mut dyn Interpreter,
    params: &[Rc<Parameter>],
    constants: &[(Rc<Parameter>, crate::runtime::Array)],
    mut a: Args,
) -> Result<Value, Exc> {
    let init = blocks::init_spec(a.take(0, "init")?)?;
    let ctx = a.take(1, "ctx")?.or_else(|| a.take_kw("device"));
    a.take(2, "verbose")?;
    let force = flag(&mut a, 3, "force_reinit", false)?;
    a.finish(4)?;
    let devices = devices_arg(it, ctx)?;
    blocks::initialize_params(it, params, constants, init, &devices, force)?;
    Ok(Value::None)
}

fn initialize(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    let params = collect(&core);
    let consts = constants(&this);
    initialize_with(it, &params, &consts, a)
}

/// `hybridize(active=True)`: this block and its descendants compile at their next call
/// (a graph compiled before is dropped, as MXNet clears its cached graph).
fn hybridize(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    let active = a
        .take(0, "active")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true);
    a.kw.clear();
    a.finish(1)?;
    fn mark(core: &Core, active: bool) {
        if core
            .compiled
            .borrow()
            .as_ref()
            .is_some_and(|c| c.is::<ImportedPlan>())
        {
            // A SymbolBlock is its graph.
            return;
        }
        core.hybridized.set(active);
        *core.compiled.borrow_mut() = None;
        for c in blocks::children(core) {
            if let Some(cc) = blocks::core_of(&c.block) {
                mark(&cc, active);
            }
        }
    }
    mark(&core, active);
    Ok(Value::None)
}

/// A SymbolBlock's plan (never dropped by `hybridize`).
struct ImportedPlan(Rc<symbol::Plan>);

fn compiled_plan(core: &Core) -> Option<Rc<symbol::Plan>> {
    let c = core.compiled.borrow();
    let any = c.as_ref()?;
    if let Some(p) = any.downcast_ref::<ImportedPlan>() {
        return Some(p.0.clone());
    }
    any.clone().downcast::<symbol::Plan>().ok()
}

/// `block(*args)` for a HybridBlock: with Symbols, its symbolic forward (a trace in progress);
/// hybridized, the compiled graph (traced at the first call); else the imperative forward.
fn hybrid_call(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let Some(this) = a.pos.first().cloned() else {
        return blocks::call(it, a);
    };
    let Some(core) = blocks::core_of(&this) else {
        return blocks::call(it, a);
    };
    let inputs = &a.pos[1..];
    if inputs.iter().any(|v| symbol::as_symbol(v).is_some()) {
        let mut rest = a;
        rest.pos.remove(0);
        return symbol::block_symbolic(it, &this, &core, rest);
    }
    let arrays = !inputs.is_empty() && inputs.iter().all(|v| v.as_array().is_some());
    if !(core.hybridized.get() && arrays && a.kw.is_empty()) {
        return blocks::call(it, a);
    }
    let plan = match compiled_plan(&core) {
        Some(p) if p.n_inputs() == inputs.len() => p,
        _ => {
            let heads = symbol::trace_block(it, &this, inputs.len())?;
            let names: Vec<String> = if inputs.len() == 1 {
                vec!["data".into()]
            } else {
                (0..inputs.len()).map(|i| format!("data{i}")).collect()
            };
            let plan = Rc::new(symbol::Plan::compile(heads, &names, it.state().np_mode)?);
            *core.compiled.borrow_mut() = Some(plan.clone());
            plan
        }
    };
    symbol::run_plan(it, &plan, inputs, crate::modules::array::graph::Mode::Gluon)
}

/// `export(path, epoch=0)`: `path-symbol.json` and `path-EPOCH.params` of the compiled graph.
fn export(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    let path = match &a.required(0, "path")? {
        Value::Str(s) => s.to_string(),
        other => {
            return Err(Exc::type_error(format!(
                "export: path must be a string, got {}",
                other.type_name()
            )))
        }
    };
    let epoch = match a.take(1, "epoch")? {
        None => 0,
        Some(Value::Int(e)) if e >= 0 => e,
        Some(other) => {
            return Err(Exc::type_error(format!(
                "export: epoch must be a non-negative int, got {}",
                other.type_name()
            )))
        }
    };
    a.take_kw("remove_amp_cast");
    a.finish(2)?;
    let plan = compiled_plan(&core).ok_or_else(|| {
        Exc::new(
            ExcKind::RuntimeError,
            "Please first call block.hybridize() and then run forward with this block at least once before calling export.",
        )
    })?;
    symbol::export_files(it, &plan, &path, epoch)?;
    Ok(Value::None)
}

fn symbol_block_repr(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    let Some(plan) = compiled_plan(&core) else {
        return Ok(Value::str("SymbolBlock(\n)"));
    };
    let heads: Vec<String> = plan
        .head_nodes
        .iter()
        .map(|h| {
            format!(
                "<{} {}>",
                if plan.np { "_Symbol" } else { "Symbol" },
                h.name
            )
        })
        .collect();
    Ok(Value::str(&format!(
        "SymbolBlock(\n{} : {} -> {}\n)",
        heads.join(", "),
        plan.n_inputs(),
        plan.head_nodes.len()
    )))
}

/// `SymbolBlock.imports(symbol_file, input_names, param_file=None, ctx=None)`.
fn symbol_block_imports(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let sym_file = match &a.required(0, "symbol_file")? {
        Value::Str(s) => s.to_string(),
        other => {
            return Err(Exc::type_error(format!(
                "imports: symbol_file must be a string, got {}",
                other.type_name()
            )))
        }
    };
    let names: Vec<String> = match &a.required(1, "input_names")? {
        Value::Str(s) => vec![s.to_string()],
        v @ (Value::List(_) | Value::Tuple(_)) => it
            .iterate(v)?
            .into_iter()
            .map(|n| match &n {
                Value::Str(s) => Ok(s.to_string()),
                other => Err(Exc::type_error(format!(
                    "imports: input names must be strings, got {}",
                    other.type_name()
                ))),
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(Exc::type_error(format!(
                "imports: input_names must be a name or a list of names, got {}",
                other.type_name()
            )))
        }
    };
    let param_file = a.take(2, "param_file")?;
    let ctx = a.take(3, "ctx")?;
    a.take_kw("allow_missing");
    a.take_kw("ignore_extra");
    a.finish(4)?;
    let text = std::fs::read_to_string(&sym_file).map_err(|e| {
        Exc::new(
            if e.kind() == std::io::ErrorKind::NotFound {
                ExcKind::FileNotFoundError
            } else {
                ExcKind::OSError
            },
            format!("cannot read the symbol file '{sym_file}': {e}"),
        )
    })?;
    let devices = devices_arg(it, ctx)?;
    let mut params: std::collections::HashMap<String, Rc<Parameter>> = Default::default();
    let mut order = Vec::new();
    let mut named: Vec<(String, crate::runtime::Array)> = Vec::new();
    if let Some(Value::Str(pf)) = &param_file {
        // A file real MXNet wrote, or devarray's own (npx.save's format).
        let bytes = std::fs::read(&**pf).map_err(|e| {
            Exc::new(
                if e.kind() == std::io::ErrorKind::NotFound {
                    ExcKind::FileNotFoundError
                } else {
                    ExcKind::OSError
                },
                format!("cannot read the parameter file '{pf}': {e}"),
            )
        })?;
        if symbol::is_mxnet_params(&bytes) {
            for (name, shape, data) in symbol::read_mxnet_params(&bytes, pf)? {
                let st = it.state_mut();
                named.push((name, st.rt.from_host(data, &shape, devices[0])?));
            }
        }
    }
    if let Some(pf @ Value::Str(_)) = param_file.filter(|_| named.is_empty()) {
        let load = it
            .import("mxnet.npx")?
            .get("load")
            .ok_or_else(|| Exc::new(ExcKind::RuntimeError, "npx.load is missing".to_string()))?;
        let loaded = it.call_value(&load, Args::positional(vec![pf]))?;
        let Value::Dict(d) = &loaded else {
            return Err(Exc::new(
                ExcKind::ValueError,
                "imports: the parameter file holds a list of arrays, not the named arrays export writes (arg:NAME)",
            ));
        };
        let entries: Vec<(Value, Value)> = d.borrow().entries.clone();
        for (k, v) in entries {
            if let (Value::Str(key), Some(arr)) = (&k, v.as_array()) {
                named.push((key.to_string(), arr.array.clone()));
            }
        }
    }
    {
        for (key, array) in named {
            let (kind, name) = key.split_once(':').unwrap_or(("arg", &key));
            let p = Parameter::new(name.to_string(), array.shape().to_vec(), Init::Zeros);
            p.buffer.set(kind == "aux");
            let st = it.state_mut();
            let value = array.copy_to(&st.rt, devices[0])?;
            p.adopt(&st.rt, &mut st.nn.tape, value)?;
            if devices.len() > 1 {
                p.reset_ctx(&st.rt, &mut st.nn.tape, &devices)?;
            }
            params.insert(name.to_string(), p.clone());
            order.push((Rc::<str>::from(name), p));
        }
    }
    let (heads, np) = symbol::parse_graph(&text, &names, &params)?;
    let plan = symbol::Plan::compile(heads, &names, np)?;
    let class = classes().symbol_block.clone();
    let this = crate::object::class::allocate(it, &class, &Args::default())?;
    let name = it.state_mut().nn.next_name("symbolblock");
    let data = CoreData::new(Dialect::Gluon, name, None);
    // Only the parameters the graph reads, in its order.
    let used: Vec<(Rc<str>, Rc<Parameter>)> = plan
        .params()
        .into_iter()
        .filter_map(|p| order.iter().find(|(_, q)| Rc::ptr_eq(q, &p)).cloned())
        .collect();
    *data.params.borrow_mut() = used;
    data.hybridized.set(true);
    *data.compiled.borrow_mut() = Some(Rc::new(ImportedPlan(Rc::new(plan))));
    install_core(&this, data)?;
    Ok(this)
}

fn register_child(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    let block = a.required(0, "block")?;
    let name = match &a.take(1, "name")? {
        None | Some(Value::None) => None,
        Some(Value::Str(s)) => Some(s.to_string()),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "name must be a string, got {}",
                other.type_name()
            )))
        }
    };
    a.finish(2)?;
    if core_of(&block).is_none() {
        return Err(Exc::type_error(format!(
            "register_child takes a Block, got {}",
            block.type_name()
        )));
    }
    let key = name.unwrap_or_else(|| core.children.borrow().len().to_string());
    blocks::register_child(&core, &key, block, false)?;
    Ok(Value::None)
}

fn zero_grad(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    a.finish(0)?;
    zero_grads(it, &collect(&core))?;
    Ok(Value::None)
}

fn zero_grads(it: &mut dyn Interpreter, params: &[Rc<Parameter>]) -> Result<(), Exc> {
    let st = it.state_mut();
    for p in params {
        for d in p.list_ctx() {
            if let Ok(g) = p.grad(&st.nn.tape, Some(d)) {
                let z = st.rt.zeros(g.shape(), g.dtype(), g.device())?;
                z.copy_into(&g)?;
            }
        }
    }
    Ok(())
}

/// `with net.name_scope():` — blocks made inside are named under this block's prefix.
struct NameScope(String);

impl NativeObject for NameScope {
    fn type_name(&self) -> &str {
        "_BlockScope"
    }
    fn repr(&self) -> String {
        format!("<name scope {}>", self.0)
    }
    fn enter(&self, it: &mut dyn Interpreter) -> Result<Value, Exc> {
        it.state_mut().nn.name_scopes.push(self.0.clone());
        Ok(Value::None)
    }
    fn exit(&self, it: &mut dyn Interpreter) -> Result<(), Exc> {
        it.state_mut().nn.name_scopes.pop();
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn name_scope(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    a.finish(0)?;
    Ok(object(NameScope(format!("{}_", core.name))))
}

fn path_arg(v: &Value) -> Result<std::path::PathBuf, Exc> {
    match v {
        Value::Str(s) => Ok(std::path::PathBuf::from(&**s)),
        other => Err(Exc::type_error(format!(
            "the file name must be a string such as 'net.params', got {}",
            other.type_name()
        ))),
    }
}

pub fn io_exc(e: ParamsIoError) -> Exc {
    match e {
        ParamsIoError::NotFound(m) => Exc::new(ExcKind::FileNotFoundError, m),
        ParamsIoError::Os(m) => Exc::new(ExcKind::OSError, m),
        ParamsIoError::Invalid(m) => Exc::value_error(m),
        ParamsIoError::Runtime(e) => e.into(),
    }
}

fn save_parameters(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, core) = this_core(&mut a)?;
    let path = path_arg(&crate::modules::python::stdlib::os::fspath_arg(
        it,
        &a.required(0, "filename")?,
    )?)?;
    let dedupe = flag(&mut a, 1, "deduplicate", false)?;
    a.finish(2)?;
    // Every structural name, a shared parameter under each of its places (MXNet's default).
    params_io::save(&blocks::structural_params(&core, dedupe), &path).map_err(io_exc)?;
    Ok(Value::None)
}

fn load_parameters(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, core) = this_core(&mut a)?;
    let path = path_arg(&crate::modules::python::stdlib::os::fspath_arg(
        it,
        &a.required(0, "filename")?,
    )?)?;
    let ctx = a.take(1, "ctx")?.or_else(|| a.take_kw("device"));
    let allow_missing = flag(&mut a, 2, "allow_missing", false)?;
    let ignore_extra = flag(&mut a, 3, "ignore_extra", false)?;
    a.take_kw("cast_dtype");
    a.take_kw("dtype_source");
    a.finish(4)?;
    let devices = devices_arg(it, ctx)?;
    let named = blocks::structural_params(&core, false);
    let st = it.state_mut();
    params_io::load(
        &st.rt,
        &mut st.nn.tape,
        &named,
        &path,
        &devices,
        allow_missing,
        ignore_extra,
    )
    .map_err(io_exc)?;
    let mut mods = Vec::new();
    blocks::named_modules(&this, "", &mut mods);
    for (_, m) in mods {
        if let Some(layer) = core_of(&m).and_then(|c| c.layer.clone()) {
            layer.sync_input_sizes();
        }
    }
    Ok(Value::None)
}

// ---- parameters -----------------------------------------------------------------------------

fn param_of(v: &Value) -> Result<Rc<Parameter>, Exc> {
    Ok(downcast::<ParamObj>(v, "a Parameter")?.param.clone())
}

/// The parameters a Trainer or an initializer call is given: `net.collect_params()`, a block,
/// or a list of parameters.
pub fn params_of(v: &Value) -> Result<Vec<Rc<Parameter>>, Exc> {
    if let Ok(d) = downcast::<ParamDict>(v, "") {
        return Ok(d.params());
    }
    if let Some(core) = core_of(v) {
        return Ok(collect(&core));
    }
    match v {
        Value::List(l) => l.borrow().iter().map(param_of).collect(),
        _ => Err(Exc::type_error(format!(
            "expected parameters (net.collect_params()), got {}",
            v.type_name()
        ))),
    }
}

fn ctx_of(a: &mut Args) -> Result<Option<Device>, Exc> {
    match a.take(0, "ctx")?.or_else(|| a.take_kw("device")) {
        None | Some(Value::None) => Ok(None),
        Some(v) => Ok(Some(device_arg(&v)?)),
    }
}

fn shape_tuple(p: &Parameter, np: bool) -> Value {
    Value::tuple(
        p.shape()
            .iter()
            .map(|&d| Value::Int(if d == 0 && np { -1 } else { d as i64 }))
            .collect(),
    )
}

impl NativeObject for ParamObj {
    fn type_name(&self) -> &str {
        "Parameter"
    }
    fn class_value(&self) -> Option<Value> {
        Some(classes().parameter.value())
    }
    fn repr(&self) -> String {
        self.param.repr(if self.np { -1 } else { 0 })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "name",
            "shape",
            "dtype",
            "data",
            "grad",
            "list_ctx",
            "list_data",
            "list_grad",
            "reset_ctx",
            "initialize",
            "set_data",
            "zero_grad",
            "grad_req",
        ]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "name" => Value::str(&self.param.name),
            "shape" => shape_tuple(&self.param, self.np),
            "dtype" => Value::DType(self.param.dtype.get(), crate::object::value::Flavor::Nd),
            "grad_req" => Value::str("write"),
            // What a layer written in the language calls once its input gives the shape a
            // deferred parameter waits for (MXNet infers it from the graph).
            "_finish_deferred_init" => bound(
                this,
                "_finish_deferred_init",
                "p._finish_deferred_init(shape): the deferred initialization, now that shape is known.",
                |it, r, mut a| {
                    let shape = a.required(0, "shape")?;
                    a.finish(1)?;
                    let mut dims = Vec::new();
                    for d in it.iterate(&shape)? {
                        let d = crate::object::ops::as_i64(&d)
                            .filter(|d| *d > 0)
                            .ok_or_else(|| Exc::value_error("shape: positive ints expected"))?;
                        dims.push(d as usize);
                    }
                    let p = downcast::<ParamObj>(r, "a Parameter")?;
                    let st = it.state_mut();
                    p.param
                        .infer(&st.rt, &mut st.nn.tape, dims)
                        .map_err(Exc::from)?;
                    Ok(Value::None)
                },
            ),
            "data" => bound(
                this,
                "data",
                "p.data(ctx=None): the values on ctx.",
                |it, r, mut a| {
                    let ctx = ctx_of(&mut a)?;
                    a.finish(1)?;
                    let data = param_of(r)?.data(ctx)?;
                    Ok(wrap(data, flavor(it)))
                },
            ),
            "grad" => bound(
                this,
                "grad",
                "p.grad(ctx=None): the gradient on ctx.",
                |it, r, mut a| {
                    let ctx = ctx_of(&mut a)?;
                    a.finish(1)?;
                    let g = param_of(r)?.grad(&it.state_mut().nn.tape, ctx)?;
                    Ok(wrap(g, flavor(it)))
                },
            ),
            "list_ctx" => bound(
                this,
                "list_ctx",
                "p.list_ctx(): the devices holding a copy.",
                |_, r, a| {
                    a.finish(0)?;
                    Ok(Value::list(
                        param_of(r)?
                            .list_ctx()
                            .into_iter()
                            .map(Value::Device)
                            .collect(),
                    ))
                },
            ),
            "list_data" => bound(
                this,
                "list_data",
                "p.list_data(): every copy.",
                |it, r, a| {
                    a.finish(0)?;
                    let fl = flavor(it);
                    Ok(Value::list(
                        param_of(r)?
                            .list_data()?
                            .into_iter()
                            .map(|d| wrap(d, fl))
                            .collect(),
                    ))
                },
            ),
            "list_grad" => bound(
                this,
                "list_grad",
                "p.list_grad(): every copy's gradient.",
                |it, r, a| {
                    a.finish(0)?;
                    let p = param_of(r)?;
                    let fl = flavor(it);
                    let mut out = Vec::new();
                    for d in p.list_ctx() {
                        out.push(wrap(p.grad(&it.state_mut().nn.tape, Some(d))?, fl));
                    }
                    Ok(Value::list(out))
                },
            ),
            "reset_ctx" => bound(
                this,
                "reset_ctx",
                "p.reset_ctx(ctx): move the copies to ctx.",
                |it, r, mut a| {
                    let ctx = a.required(0, "ctx")?;
                    a.finish(1)?;
                    let devices = devices_arg(it, Some(ctx))?;
                    let st = it.state_mut();
                    param_of(r)?.reset_ctx(&st.rt, &mut st.nn.tape, &devices)?;
                    Ok(Value::None)
                },
            ),
            "initialize" => bound(
                this,
                "initialize",
                "p.initialize(init=None, ctx=None, default_init=Uniform(), force_reinit=False)",
                |it, r, mut a| {
                    let p = param_of(r)?;
                    let init = blocks::init_spec(a.take(0, "init")?)?;
                    let ctx = a.take(1, "ctx")?.or_else(|| a.take_kw("device"));
                    let default = blocks::init_spec(a.take(2, "default_init")?)?;
                    let force = flag(&mut a, 3, "force_reinit", false)?;
                    a.finish(4)?;
                    let devices = devices_arg(it, ctx)?;
                    blocks::initialize_params(it, &[p], &[], init.or(default), &devices, force)?;
                    Ok(Value::None)
                },
            ),
            "set_data" => bound(
                this,
                "set_data",
                "p.set_data(data): replace the values on every device (same shape).",
                |it, r, mut a| {
                    let v = a.required(0, "data")?;
                    a.finish(1)?;
                    let p = param_of(r)?;
                    let x = v.as_array().ok_or_else(|| {
                        Exc::type_error(format!("set_data takes an array, got {}", v.type_name()))
                    })?;
                    if !p.accepts_shape(x.array.shape()) {
                        return Err(Exc::value_error(format!(
                            "set_data: the data has shape {} but {} has shape {}; give values of the parameter's shape",
                            crate::runtime::shape::shape_tuple(x.array.shape()),
                            p.name,
                            crate::runtime::shape::shape_tuple(&p.shape())
                        )));
                    }
                    let devices = match p.list_ctx() {
                        d if d.is_empty() => vec![Device::cpu(0)],
                        d => d,
                    };
                    let st = it.state_mut();
                    p.place_values(&st.rt, &mut st.nn.tape, &x.array, &devices)?;
                    Ok(Value::None)
                },
            ),
            "zero_grad" => bound(
                this,
                "zero_grad",
                "p.zero_grad(): set the gradient to 0.",
                |it, r, a| {
                    a.finish(0)?;
                    zero_grads(it, &[param_of(r)?])?;
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

/// `gluon.Parameter(name, shape=None, dtype='float32', init=None, grad_req='write')`.
fn new_parameter(
    it: &dyn Interpreter,
    name: String,
    a: &mut Args,
    first: usize,
) -> Result<Rc<Parameter>, Exc> {
    let shape = match &a.take(first, "shape")? {
        None | Some(Value::None) => Vec::new(),
        Some(Value::Tuple(t)) => t
            .iter()
            .map(|d| match as_i64(d) {
                Some(n) if n > 0 => Ok(n as usize),
                Some(_) => Ok(0),
                None if matches!(d, Value::None) => Ok(0),
                None => Err(Exc::type_error("shape entries must be integers")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(v) => vec![usize_arg(v, "shape")?],
    };
    let dtype = a.take_kw("dtype");
    let init = blocks::init_spec(a.take_kw("init"))?;
    a.take_kw("grad_req");
    a.take_kw("allow_deferred_init");
    a.take_kw("lr_mult");
    a.take_kw("wd_mult");
    a.take_kw("differentiable");
    let p = match &init {
        Some(InitSpec::Builtin(i)) => {
            let p = Parameter::new(name, shape, *i);
            p.own_init.set(true);
            p
        }
        _ => Parameter::new(name, shape, Init::Uniform(0.07)),
    };
    match &dtype {
        None => {
            // MXNet's default dtype is the class numpy.float32, and prints as one.
            *p.dtype_text.borrow_mut() = Some("<class 'numpy.float32'>".into());
        }
        Some(Value::Str(s)) if &**s == "float32" => {}
        Some(Value::DType(DType::Float32, _)) => {}
        Some(other) => {
            return Err(Exc::type_error(format!(
                "Parameter: only float32 parameters are supported, got {}",
                crate::object::format::float_repr(0.0).replace("0.0", &other.type_name())
            )))
        }
    }
    let _ = it;
    Ok(p)
}

fn param_dict_of(v: &Value) -> Result<&ParamDict, Exc> {
    downcast::<ParamDict>(v, "a ParameterDict")
}

impl NativeObject for ParamDict {
    fn type_name(&self) -> &str {
        "ParameterDict"
    }
    fn class_value(&self) -> Option<Value> {
        Some(classes().parameter_dict.value())
    }
    fn repr(&self) -> String {
        ParamDict::repr(self, self.np)
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "initialize",
            "reset_ctx",
            "keys",
            "values",
            "items",
            "get",
            "get_constant",
            "zero_grad",
            "prefix",
        ]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "prefix" => Value::str(&self.prefix),
            "initialize" => bound(
                this,
                "initialize",
                "params.initialize(init=None, ctx=None, verbose=False, force_reinit=False)",
                |it, r, a| {
                    let ps = param_dict_of(r)?.params();
                    let consts = match &param_dict_of(r)?.source {
                        ParamSource::Owner(core) => core.constants.borrow().clone(),
                        ParamSource::Fixed(_) => Vec::new(),
                    };
                    initialize_with(it, &ps, &consts, a)
                },
            ),
            "reset_ctx" => bound(
                this,
                "reset_ctx",
                "params.reset_ctx(ctx): move every parameter to ctx (a device or a list).",
                |it, r, mut a| {
                    let ctx = a.required(0, "ctx")?;
                    a.finish(1)?;
                    let devices = devices_arg(it, Some(ctx))?;
                    for p in param_dict_of(r)?.params() {
                        let st = it.state_mut();
                        p.reset_ctx(&st.rt, &mut st.nn.tape, &devices)?;
                    }
                    Ok(Value::None)
                },
            ),
            "zero_grad" => bound(this, "zero_grad", "params.zero_grad(): every gradient to 0.", |it, r, a| {
                a.finish(0)?;
                let ps = param_dict_of(r)?.params();
                zero_grads(it, &ps)?;
                Ok(Value::None)
            }),
            "keys" | "__iter__" => bound(this, "keys", "params.keys(): the names.", |_, r, a| {
                a.finish(0)?;
                Ok(Value::list(
                    param_dict_of(r)?
                        .params()
                        .iter()
                        .map(|p| Value::str(&p.name))
                        .collect(),
                ))
            }),
            "__len__" => bound(this, "__len__", "len(params)", |_, r, a| {
                a.finish(0)?;
                Ok(Value::Int(param_dict_of(r)?.params().len() as i64))
            }),
            "values" => bound(
                this,
                "values",
                "params.values(): the parameters.",
                |it, r, a| {
                    a.finish(0)?;
                    Ok(Value::list(
                        param_dict_of(r)?
                            .params()
                            .into_iter()
                            .map(|p| blocks::gluon_param_value(it, &p))
                            .collect(),
                    ))
                },
            ),
            "items" => bound(
                this,
                "items",
                "params.items(): (name, parameter) pairs.",
                |it, r, a| {
                    a.finish(0)?;
                    Ok(Value::list(
                        param_dict_of(r)?
                            .params()
                            .into_iter()
                            .map(|p| {
                                Value::tuple(vec![
                                    Value::str(&p.name),
                                    blocks::gluon_param_value(it, &p),
                                ])
                            })
                            .collect(),
                    ))
                },
            ),
            "__getitem__" => bound(this, "__getitem__", "params[name]", |it, r, mut a| {
                let key = a.required(0, "key")?;
                let Value::Str(k) = &key else {
                    return Err(Exc::type_error("parameter names are strings"));
                };
                param_dict_of(r)?
                    .params()
                    .into_iter()
                    .find(|p| p.name == **k)
                    .map(|p| blocks::gluon_param_value(it, &p))
                    .ok_or_else(|| Exc::new(ExcKind::KeyError, format!("'{k}'")))
            }),
            "get" => bound(
                this,
                "get",
                "params.get(name, shape=None, init=None, dtype=float32): the parameter prefix+name, made if it does not exist yet.",
                |it, r, mut a| {
                    let d = param_dict_of(r)?;
                    let short = match &a.required(0, "name")? {
                        Value::Str(s) => s.to_string(),
                        other => {
                            return Err(Exc::type_error(format!(
                                "parameter names are strings, got {}",
                                other.type_name()
                            )))
                        }
                    };
                    let full = format!("{}{short}", d.prefix);
                    let existing = d.params().into_iter().find(|p| p.name == full).or_else(|| {
                        match &d.source {
                            ParamSource::Owner(core) => {
                                core.shared.iter().find(|p| p.name == full).cloned()
                            }
                            ParamSource::Fixed(_) => None,
                        }
                    });
                    let p = match existing {
                        Some(p) => {
                            a.kw.clear();
                            p
                        }
                        None => new_parameter(it, full, &mut a, 1)?,
                    };
                    a.finish(1)?;
                    match &d.source {
                        ParamSource::Owner(core) => blocks::register_param(core, &short, p.clone()),
                        ParamSource::Fixed(v) => {
                            if !v.borrow().iter().any(|q| Rc::ptr_eq(q, &p)) {
                                v.borrow_mut().push(p.clone());
                            }
                        }
                    }
                    Ok(blocks::gluon_param_value(it, &p))
                },
            ),
            "get_constant" => bound(
                this,
                "get_constant",
                "params.get_constant(name, value): a parameter holding value that training does not change.",
                |it, r, mut a| {
                    let d = param_dict_of(r)?;
                    let short = match &a.required(0, "name")? {
                        Value::Str(s) => s.to_string(),
                        _ => return Err(Exc::type_error("parameter names are strings")),
                    };
                    let value = a.required(1, "value")?;
                    a.finish(2)?;
                    let x = value.as_array().ok_or_else(|| {
                        Exc::type_error(format!(
                            "get_constant takes an array value, got {}",
                            value.type_name()
                        ))
                    })?;
                    let array = x.array.astype(DType::Float32)?;
                    let p = Parameter::new(
                        format!("{}{short}", d.prefix),
                        array.shape().to_vec(),
                        Init::Zeros,
                    );
                    p.own_init.set(true);
                    p.constant.set(true);
                    match &d.source {
                        ParamSource::Owner(core) => {
                            core.constants.borrow_mut().push((p.clone(), array));
                            blocks::register_param(core, &short, p.clone());
                        }
                        ParamSource::Fixed(v) => v.borrow_mut().push(p.clone()),
                    }
                    Ok(object(ParamObj {
                        param: p,
                        np: it.state().np_mode,
                    }))
                },
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

// ---- mxnet.init ---------------------------------------------------------------------------

fn number(a: &mut Args, i: usize, name: &str, default: f64) -> Result<f64, Exc> {
    match a.take(i, name)? {
        None => Ok(default),
        Some(v) => as_f64(&v).ok_or_else(|| {
            Exc::type_error(format!("{name} must be a number, got {}", v.type_name()))
        }),
    }
}

fn fan_arg(v: Option<Value>, default: Fan) -> Result<Fan, Exc> {
    match &v {
        None => Ok(default),
        Some(Value::Str(s)) => match &**s {
            "avg" => Ok(Fan::Avg),
            "in" => Ok(Fan::In),
            "out" => Ok(Fan::Out),
            other => Err(Exc::value_error(format!(
                "Incorrect factor type '{other}': use 'avg', 'in' or 'out'"
            ))),
        },
        Some(other) => Err(Exc::type_error(format!(
            "factor_type must be 'avg', 'in' or 'out', got {}",
            other.type_name()
        ))),
    }
}

pub fn init_module() -> Rc<Module> {
    let m = Rc::new(Module::new("mxnet.init", "parameter initializers"));
    m.set("Initializer", classes().initializer.value());
    m.set(
        "Xavier",
        builtin(
            "Xavier",
            "Xavier(rnd_type='uniform', factor_type='avg', magnitude=3): U(-s, s) (or N(0, s) for 'gaussian') with s = sqrt(magnitude / fan).",
            |_, mut a| {
                let gaussian = match &a.take(0, "rnd_type")? {
                    None => false,
                    Some(Value::Str(s)) if &**s == "uniform" => false,
                    Some(Value::Str(s)) if &**s == "gaussian" => true,
                    Some(other) => {
                        return Err(Exc::value_error(format!(
                            "Unknown random type {}: use 'uniform' or 'gaussian'",
                            other.type_name()
                        )))
                    }
                };
                let fan = fan_arg(a.take(1, "factor_type")?, Fan::Avg)?;
                let magnitude = number(&mut a, 2, "magnitude", 3.0)?;
                a.finish(3)?;
                Ok(object(InitObj(Init::Xavier {
                    gaussian,
                    fan,
                    magnitude,
                })))
            },
        ),
    );
    m.set(
        "MSRAPrelu",
        builtin(
            "MSRAPrelu",
            "MSRAPrelu(factor_type='avg', slope=0.25): He initialization, N(0, sqrt(2 / ((1 + slope^2) fan))).",
            |_, mut a| {
                let fan = fan_arg(a.take(0, "factor_type")?, Fan::Avg)?;
                let slope = number(&mut a, 1, "slope", 0.25)?;
                a.finish(2)?;
                Ok(object(InitObj(Init::Xavier {
                    gaussian: true,
                    fan,
                    magnitude: 2.0 / (1.0 + slope * slope),
                })))
            },
        ),
    );
    m.set(
        "Uniform",
        builtin(
            "Uniform",
            "Uniform(scale=0.07): U(-scale, scale).",
            |_, mut a| {
                let s = number(&mut a, 0, "scale", 0.07)?;
                a.finish(1)?;
                Ok(object(InitObj(Init::Uniform(s))))
            },
        ),
    );
    m.set(
        "Normal",
        builtin(
            "Normal",
            "Normal(sigma=0.01): N(0, sigma^2).",
            |_, mut a| {
                let s = number(&mut a, 0, "sigma", 0.01)?;
                a.finish(1)?;
                Ok(object(InitObj(Init::Normal(s))))
            },
        ),
    );
    m.set(
        "Constant",
        builtin(
            "Constant",
            "Constant(value): every element set to value.",
            |_, mut a| {
                let v = a.required(0, "value")?;
                a.finish(1)?;
                let v = as_f64(&v).ok_or_else(|| {
                    Exc::type_error(format!(
                        "Constant: value must be a number, got {}",
                        v.type_name()
                    ))
                })?;
                Ok(object(InitObj(Init::Constant(v))))
            },
        ),
    );
    let zero: BuiltinFn = |_, a| {
        a.finish(0)?;
        Ok(object(InitObj(Init::Zeros)))
    };
    let one: BuiltinFn = |_, a| {
        a.finish(0)?;
        Ok(object(InitObj(Init::Constant(1.0))))
    };
    m.set("Zero", builtin("Zero", "Zero(): every element 0.", zero));
    m.set("One", builtin("One", "One(): every element 1.", one));
    m
}

/// `mxnet.gluon.nn`'s classes into `m`.
pub fn set_nn_classes(m: &Module) {
    let k = classes();
    for c in [
        &k.block,
        &k.hybrid_block,
        &k.sequential,
        &k.hybrid_sequential,
        &k.dense,
        &k.flatten,
        &k.activation,
    ] {
        m.set(&c.name, c.value());
    }
    // Conv2D, MaxPool2D and the other convolutional-network layers.
    super::gluon_conv::register(m, k.hybrid_block.value());
}

/// `gluon.Parameter`, `gluon.ParameterDict`, `gluon.Block`, `gluon.HybridBlock` into `m`.
pub fn set_gluon_names(m: &Module) {
    let k = classes();
    m.set("Block", k.block.value());
    m.set("HybridBlock", k.hybrid_block.value());
    m.set("SymbolBlock", k.symbol_block.value());
    m.set("Parameter", k.parameter.value());
    m.set("ParameterDict", k.parameter_dict.value());
}

fn new_parameter_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let name = match &a.required(0, "name")? {
        Value::Str(s) => s.to_string(),
        other => {
            return Err(Exc::type_error(format!(
                "Parameter: name must be a string, got {}",
                other.type_name()
            )))
        }
    };
    let p = new_parameter(it, name, &mut a, 2)?;
    a.take(1, "grad_req")?;
    a.finish(3)?;
    Ok(blocks::gluon_param_value(it, &p))
}

fn new_parameter_dict(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let prefix = match &a.take(0, "prefix")? {
        None | Some(Value::None) => String::new(),
        Some(Value::Str(s)) => s.to_string(),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "prefix must be a string, got {}",
                other.type_name()
            )))
        }
    };
    a.take(1, "shared")?;
    a.finish(2)?;
    Ok(param_dict(it, prefix, Vec::new()))
}
