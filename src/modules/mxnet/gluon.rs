//! Language bindings of `crate::nn`: `mxnet.autograd`, `mxnet.gluon` (`nn`, `loss`, `utils`,
//! `Trainer`) and `mxnet.init`. Layers, parameters and the trainer are native objects; the
//! work is done in `crate::nn` on the session's runtime and tape.
use std::cell::RefCell;
use std::rc::Rc;

use crate::nn::layers::{Activation, Block, BlockKind, Init, Parameter};
use crate::nn::params_io::{self, ParamsIoError};
use crate::nn::train::split_and_load;
use crate::runtime::Device;

use crate::modules::arrays::device_arg;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, Flavor, MethodFn, Module, NativeObject, Value};
use crate::object::{builtin, method, Interpreter};

pub(crate) fn object(o: impl NativeObject + 'static) -> Value {
    Value::Object(Rc::new(o))
}

pub(crate) fn downcast<'a, T: 'static>(v: &'a Value, what: &str) -> Result<&'a T, Exc> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<T>(),
        _ => None,
    }
    .ok_or_else(|| Exc::type_error(format!("expected {what}, got {}", v.type_name())))
}

pub(crate) fn bound(
    this: &Rc<dyn NativeObject>,
    name: &'static str,
    doc: &'static str,
    f: MethodFn,
) -> Value {
    method(&Value::Object(this.clone()), name, doc, f)
}

/// One device or a list of them (`ctx=gpu(0)` or `ctx=[gpu(0), gpu(1)]`); None is cpu(0).
fn devices_arg(it: &mut dyn Interpreter, v: Option<Value>) -> Result<Vec<Device>, Exc> {
    match v {
        None | Some(Value::None) => Ok(vec![Device::cpu(0)]),
        Some(v @ (Value::List(_) | Value::Tuple(_))) => {
            let items = it.iterate(&v)?;
            if items.is_empty() {
                return Err(Exc::value_error(
                    "the device list is empty; pass e.g. [gpu(0), gpu(1)]",
                ));
            }
            items.iter().map(device_arg).collect()
        }
        Some(v) => Ok(vec![device_arg(&v)?]),
    }
}

pub(crate) fn flavor(it: &dyn Interpreter) -> Flavor {
    if it.state().np_mode {
        Flavor::Np
    } else {
        Flavor::Nd
    }
}

pub(crate) fn usize_arg(v: &Value, what: &str) -> Result<usize, Exc> {
    as_i64(v)
        .and_then(|i| usize::try_from(i).ok())
        .ok_or_else(|| {
            Exc::type_error(format!(
                "{what} must be a non-negative integer, got {}",
                v.type_name()
            ))
        })
}

/// `kernel_size=5` or `(5, 5)`.
fn pair_arg(
    it: &mut dyn Interpreter,
    v: Option<Value>,
    default: (usize, usize),
    what: &str,
) -> Result<(usize, usize), Exc> {
    match v {
        None | Some(Value::None) => Ok(default),
        Some(v @ (Value::Tuple(_) | Value::List(_))) => {
            let items = it.iterate(&v)?;
            match items.as_slice() {
                [a, b] => Ok((usize_arg(a, what)?, usize_arg(b, what)?)),
                _ => Err(Exc::value_error(format!(
                    "{what} must be one integer or a pair of integers"
                ))),
            }
        }
        Some(v) => {
            let n = usize_arg(&v, what)?;
            Ok((n, n))
        }
    }
}

fn activation_arg(v: Option<Value>) -> Result<Option<Activation>, Exc> {
    match &v {
        None | Some(Value::None) => Ok(None),
        Some(Value::Str(s)) => Ok(Some(Activation::parse(s)?)),
        Some(other) => Err(Exc::type_error(format!(
            "activation must be a name such as 'relu', got {}",
            other.type_name()
        ))),
    }
}

fn init_arg(v: Option<Value>) -> Result<Option<Init>, Exc> {
    match v {
        None | Some(Value::None) => Ok(None),
        Some(v) => Ok(Some(
            downcast::<InitObj>(&v, "an initializer such as init.Xavier()")?.0,
        )),
    }
}

// ---- autograd ----------------------------------------------------------------------------

/// `autograd.record()` / `autograd.pause()`: a context manager that sets the tape's state.
struct RecordScope {
    recording: bool,
    training: bool,
    saved: RefCell<Vec<(bool, bool)>>,
}

impl NativeObject for RecordScope {
    fn type_name(&self) -> &str {
        if self.recording {
            "_RecordingStateScope"
        } else {
            "_PauseScope"
        }
    }
    fn repr(&self) -> String {
        format!(
            "<autograd {} scope>",
            if self.recording { "record" } else { "pause" }
        )
    }
    fn enter(&self, interp: &mut dyn Interpreter) -> Result<Value, Exc> {
        let prev = interp
            .state_mut()
            .nn
            .tape
            .set_recording(self.recording, self.training);
        self.saved.borrow_mut().push(prev);
        Ok(Value::None)
    }
    fn exit(&self, interp: &mut dyn Interpreter) -> Result<(), Exc> {
        if let Some(prev) = self.saved.borrow_mut().pop() {
            interp.state_mut().nn.tape.restore(prev);
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn record(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let train = a
        .take(0, "train_mode")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true);
    a.finish(1)?;
    Ok(object(RecordScope {
        recording: true,
        training: train,
        saved: RefCell::new(Vec::new()),
    }))
}

fn pause(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let train = a
        .take(0, "train_mode")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(false);
    a.finish(1)?;
    Ok(object(RecordScope {
        recording: false,
        training: train,
        saved: RefCell::new(Vec::new()),
    }))
}

fn autograd_module() -> Rc<Module> {
    let m = Rc::new(Module::new("mxnet.autograd", "automatic differentiation"));
    m.set(
        "record",
        builtin(
            "record",
            "with autograd.record(): record array ops so that y.backward() can compute gradients.",
            record,
        ),
    );
    m.set(
        "pause",
        builtin(
            "pause",
            "with autograd.pause(): stop recording inside a record() block.",
            pause,
        ),
    );
    m.set(
        "is_recording",
        builtin(
            "is_recording",
            "is_recording(): whether ops are being recorded.",
            |it, a| {
                a.finish(0)?;
                Ok(Value::Bool(it.state_mut().nn.tape.is_recording()))
            },
        ),
    );
    m.set(
        "is_training",
        builtin(
            "is_training",
            "is_training(): whether record() was entered in training mode.",
            |it, a| {
                a.finish(0)?;
                Ok(Value::Bool(it.state_mut().nn.tape.is_training()))
            },
        ),
    );
    m.set(
        "backward",
        builtin(
            "backward",
            "backward(heads): heads[i].backward() for each head.",
            |it, mut a| {
                let heads = a.required(0, "heads")?;
                a.take_kw("retain_graph");
                a.finish(1)?;
                let items = match &heads {
                    Value::Array(_) => vec![heads.clone()],
                    other => it.iterate(other)?,
                };
                for h in items {
                    let x = h
                        .as_array()
                        .ok_or_else(|| Exc::type_error("backward: heads must be arrays"))?;
                    let st = it.state_mut();
                    st.nn.tape.backward(&st.rt, &x.array, None, false)?;
                }
                Ok(Value::None)
            },
        ),
    );
    m
}

// ---- init ----------------------------------------------------------------------------------

struct InitObj(Init);

impl NativeObject for InitObj {
    fn type_name(&self) -> &str {
        "Initializer"
    }
    fn repr(&self) -> String {
        match self.0 {
            Init::Uniform(s) => format!("Uniform(scale={s})"),
            Init::Normal(s) => format!("Normal(sigma={s})"),
            Init::Zeros => "Zero()".into(),
            Init::Xavier => "Xavier()".into(),
            Init::FanInUniform => "FanInUniform()".into(),
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn init_module() -> Rc<Module> {
    let m = Rc::new(Module::new("mxnet.init", "parameter initializers"));
    m.set(
        "Xavier",
        builtin(
            "Xavier",
            "Xavier(): uniform in +-sqrt(3 / avg fan).",
            |_, mut a| {
                a.take_kw("rnd_type");
                a.take_kw("factor_type");
                a.take_kw("magnitude");
                a.finish(0)?;
                Ok(object(InitObj(Init::Xavier)))
            },
        ),
    );
    m.set(
        "Uniform",
        builtin(
            "Uniform",
            "Uniform(scale=0.07): U(-scale, scale).",
            |_, mut a| {
                let s = a
                    .take(0, "scale")?
                    .map(|v| as_f64(&v).ok_or_else(|| Exc::type_error("scale must be a number")))
                    .transpose()?;
                a.finish(1)?;
                Ok(object(InitObj(Init::Uniform(s.unwrap_or(0.07)))))
            },
        ),
    );
    m.set(
        "Normal",
        builtin(
            "Normal",
            "Normal(sigma=0.01): N(0, sigma^2).",
            |_, mut a| {
                let s = a
                    .take(0, "sigma")?
                    .map(|v| as_f64(&v).ok_or_else(|| Exc::type_error("sigma must be a number")))
                    .transpose()?;
                a.finish(1)?;
                Ok(object(InitObj(Init::Normal(s.unwrap_or(0.01)))))
            },
        ),
    );
    m.set(
        "Zero",
        builtin("Zero", "Zero(): all zeros.", |_, a| {
            a.finish(0)?;
            Ok(object(InitObj(Init::Zeros)))
        }),
    );
    m
}

// ---- parameters ------------------------------------------------------------------------------

pub(crate) struct ParamObj(pub(crate) Rc<Parameter>);

fn param_of(v: &Value) -> Result<Rc<Parameter>, Exc> {
    Ok(downcast::<ParamObj>(v, "a Parameter")?.0.clone())
}

fn ctx_of(a: &mut Args) -> Result<Option<Device>, Exc> {
    match a.take(0, "ctx")?.or_else(|| a.take_kw("device")) {
        None | Some(Value::None) => Ok(None),
        Some(v) => Ok(Some(device_arg(&v)?)),
    }
}

impl NativeObject for ParamObj {
    fn type_name(&self) -> &str {
        "Parameter"
    }
    fn repr(&self) -> String {
        self.0.repr()
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
        ]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "name" => Value::str(&self.0.name),
            "shape" => Value::tuple(
                self.0
                    .shape()
                    .iter()
                    .map(|&d| Value::Int(d as i64))
                    .collect(),
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
                "p.initialize(init=None, ctx=None, force_reinit=False)",
                |it, r, a| {
                    let p = param_of(r)?;
                    initialize_params(it, &[p], a)
                },
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn initialize_params(
    it: &mut dyn Interpreter,
    params: &[Rc<Parameter>],
    mut a: Args,
) -> Result<Value, Exc> {
    let init = init_arg(a.take(0, "init")?)?;
    let ctx = a.take(1, "ctx")?.or_else(|| a.take_kw("device"));
    a.take(2, "verbose")?;
    let force = a
        .take(3, "force_reinit")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(false);
    a.finish(4)?;
    let devices = devices_arg(it, ctx)?;
    for p in params {
        let st = it.state_mut();
        p.initialize(&st.rt, &mut st.nn.tape, &devices, init, force)?;
    }
    Ok(Value::None)
}

/// `net.collect_params()`: the parameters in order, by name.
struct ParamDict {
    prefix: String,
    params: Vec<Rc<Parameter>>,
}

pub(crate) fn params_of(v: &Value) -> Result<Vec<Rc<Parameter>>, Exc> {
    if let Ok(d) = downcast::<ParamDict>(v, "") {
        return Ok(d.params.clone());
    }
    if let Ok(b) = downcast::<BlockObj>(v, "") {
        return Ok(b.0.collect_params());
    }
    match v {
        Value::List(l) => l.borrow().iter().map(param_of).collect(),
        _ => Err(Exc::type_error(format!(
            "expected parameters (net.collect_params()), got {}",
            v.type_name()
        ))),
    }
}

impl NativeObject for ParamDict {
    fn type_name(&self) -> &str {
        "ParameterDict"
    }
    fn repr(&self) -> String {
        let mut s = format!("{} (\n", self.prefix);
        for p in &self.params {
            s.push_str(&format!("  {}\n", p.repr()));
        }
        s.push(')');
        s
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["initialize", "reset_ctx", "keys", "values", "items"]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "initialize" => bound(
                this,
                "initialize",
                "params.initialize(init=None, ctx=None, force_reinit=False)",
                |it, r, a| {
                    let ps = params_of(r)?;
                    initialize_params(it, &ps, a)
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
                    for p in params_of(r)? {
                        let st = it.state_mut();
                        p.reset_ctx(&st.rt, &mut st.nn.tape, &devices)?;
                    }
                    Ok(Value::None)
                },
            ),
            "keys" | "__iter__" => bound(this, "keys", "params.keys(): the names.", |_, r, a| {
                a.finish(0)?;
                Ok(Value::list(
                    params_of(r)?.iter().map(|p| Value::str(&p.name)).collect(),
                ))
            }),
            "values" => bound(
                this,
                "values",
                "params.values(): the parameters.",
                |_, r, a| {
                    a.finish(0)?;
                    Ok(Value::list(
                        params_of(r)?
                            .into_iter()
                            .map(|p| object(ParamObj(p)))
                            .collect(),
                    ))
                },
            ),
            "items" => bound(
                this,
                "items",
                "params.items(): (name, parameter) pairs.",
                |_, r, a| {
                    a.finish(0)?;
                    Ok(Value::list(
                        params_of(r)?
                            .into_iter()
                            .map(|p| Value::tuple(vec![Value::str(&p.name), object(ParamObj(p))]))
                            .collect(),
                    ))
                },
            ),
            "__getitem__" => bound(this, "__getitem__", "params[name]", |_, r, mut a| {
                let key = a.required(0, "key")?;
                let Value::Str(k) = &key else {
                    return Err(Exc::type_error("parameter names are strings"));
                };
                params_of(r)?
                    .into_iter()
                    .find(|p| p.name == **k)
                    .map(|p| object(ParamObj(p)))
                    .ok_or_else(|| Exc::new(ExcKind::KeyError, format!("'{k}'")))
            }),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
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

fn io_exc(e: ParamsIoError) -> Exc {
    match e {
        ParamsIoError::NotFound(m) => Exc::new(ExcKind::FileNotFoundError, m),
        ParamsIoError::Os(m) => Exc::new(ExcKind::OSError, m),
        ParamsIoError::Invalid(m) => Exc::value_error(m),
        ParamsIoError::Runtime(e) => e.into(),
    }
}

// ---- blocks --------------------------------------------------------------------------------

struct BlockObj(Rc<Block>);

fn block_of(v: &Value) -> Result<Rc<Block>, Exc> {
    Ok(downcast::<BlockObj>(v, "a Gluon block")?.0.clone())
}

impl NativeObject for BlockObj {
    fn type_name(&self) -> &str {
        match &self.0.kind {
            BlockKind::Sequential(_) => "Sequential",
            BlockKind::Dense { .. } => "Dense",
            BlockKind::Conv2D { .. } => "Conv2D",
            BlockKind::MaxPool2D { .. } => "MaxPool2D",
            BlockKind::Flatten => "Flatten",
            BlockKind::Activation(_) => "Activation",
        }
    }
    fn repr(&self) -> String {
        self.0.repr()
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "add",
            "initialize",
            "collect_params",
            "weight",
            "bias",
            "name",
            "hybridize",
            "forward",
            "save_parameters",
            "load_parameters",
        ]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "name" => Value::str(&self.0.name),
            "weight" | "bias" => match &self.0.kind {
                BlockKind::Dense { weight, bias, .. } | BlockKind::Conv2D { weight, bias, .. } => {
                    if name == "weight" {
                        object(ParamObj(weight.clone()))
                    } else {
                        bias.clone().map_or(Value::None, |b| object(ParamObj(b)))
                    }
                }
                _ => return None,
            },
            "__call__" | "forward" => bound(this, "forward", "net(x): the forward pass on x's device.", |it, r, mut a| {
                let x = a.required(0, "x")?;
                a.finish(1)?;
                let block = block_of(r)?;
                let xv = x.as_array().ok_or_else(|| Exc::type_error(format!("a block takes an array, got {}", x.type_name())))?;
                let st = it.state_mut();
                let out = block.forward(&st.rt, &mut st.nn.tape, &xv.array)?;
                Ok(wrap(out, xv.flavor))
            }),
            "add" => bound(this, "add", "net.add(*blocks): append layers.", |_, r, a| {
                let block = block_of(r)?;
                for child in &a.pos {
                    block.add(block_of(child)?)?;
                }
                a.finish(a.pos.len())?;
                Ok(Value::None)
            }),
            "__getitem__" => bound(this, "__getitem__", "net[i]: the i-th layer.", |_, r, mut a| {
                let key = a.required(0, "index")?;
                a.finish(1)?;
                child_at(&block_of(r)?.children(), &key, "layer").map(|b| object(BlockObj(b)))
            }),
            "__len__" => bound(this, "__len__", "len(net)", |_, r, a| {
                a.finish(0)?;
                Ok(Value::Int(block_of(r)?.children().len() as i64))
            }),
            "initialize" => bound(this, "initialize", "net.initialize(init=None, ctx=None, force_reinit=False): create the parameters on ctx (a device or a list); shapes not yet known are created at the first forward pass.", |it, r, a| {
                let ps = block_of(r)?.collect_params();
                initialize_params(it, &ps, a)
            }),
            "collect_params" => bound(this, "collect_params", "net.collect_params(): every parameter, by name.", |_, r, a| {
                a.finish(0)?;
                let b = block_of(r)?;
                Ok(object(ParamDict { prefix: format!("{}_", b.name), params: b.collect_params() }))
            }),
            "hybridize" => bound(this, "hybridize", "net.hybridize(): accepted for compatibility (no effect).", |_, _, _| Ok(Value::None)),
            "save_parameters" => bound(this, "save_parameters", "net.save_parameters(filename): write the parameters to a safetensors file (atomically: a temp file, then a rename).", |_, r, mut a| {
                let path = path_arg(&a.required(0, "filename")?)?;
                a.take_kw("deduplicate");
                a.finish(1)?;
                let block = block_of(r)?;
                params_io::save(&block.structural_params(), &path).map_err(io_exc)?;
                Ok(Value::None)
            }),
            "load_parameters" => bound(this, "load_parameters", "net.load_parameters(filename, ctx=None, allow_missing=False, ignore_extra=False): read a file written by save_parameters onto ctx (a device or a list); a bad file changes nothing.", |it, r, mut a| {
                let path = path_arg(&a.required(0, "filename")?)?;
                let ctx = a.take(1, "ctx")?.or_else(|| a.take_kw("device"));
                let allow_missing = a.take(2, "allow_missing")?.map(|v| v.truthy()).transpose()?.unwrap_or(false);
                let ignore_extra = a.take(3, "ignore_extra")?.map(|v| v.truthy()).transpose()?.unwrap_or(false);
                a.take_kw("cast_dtype");
                a.take_kw("dtype_source");
                a.finish(4)?;
                let devices = devices_arg(it, ctx)?;
                let block = block_of(r)?;
                let st = it.state_mut();
                params_io::load(&st.rt, &mut st.nn.tape, &block.structural_params(), &path, &devices, allow_missing, ignore_extra).map_err(io_exc)?;
                block.sync_input_sizes();
                Ok(Value::None)
            }),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn new_block(
    it: &mut dyn Interpreter,
    prefix: &str,
    make: impl FnOnce(String) -> Rc<Block>,
) -> Value {
    let name = it.state_mut().nn.next_name(prefix);
    object(BlockObj(make(name)))
}

fn nn_module() -> Rc<Module> {
    let m = Rc::new(Module::new("mxnet.gluon.nn", "neural network layers"));
    m.set(
        "Sequential",
        builtin(
            "Sequential",
            "Sequential(): layers applied in order; add them with net.add(...).",
            |it, mut a| {
                a.take_kw("prefix");
                a.finish(0)?;
                Ok(new_block(it, "sequential", Block::sequential))
            },
        ),
    );
    m.set(
        "Dense",
        builtin(
            "Dense",
            "Dense(units, activation=None, use_bias=True, in_units=0): a fully connected layer.",
            |it, mut a| {
                let units = usize_arg(&a.required(0, "units")?, "units")?;
                let act = activation_arg(a.take(1, "activation")?)?;
                let use_bias = a
                    .take(2, "use_bias")?
                    .map(|v| v.truthy())
                    .transpose()?
                    .unwrap_or(true);
                a.take(3, "flatten")?;
                a.take(4, "dtype")?;
                a.take(5, "weight_initializer")?;
                a.take(6, "bias_initializer")?;
                let in_units = a
                    .take(7, "in_units")?
                    .map(|v| usize_arg(&v, "in_units"))
                    .transpose()?
                    .unwrap_or(0);
                a.finish(8)?;
                Ok(new_block(it, "dense", |n| {
                    Block::dense(n, units, act, in_units, use_bias)
                }))
            },
        ),
    );
    m.set("Conv2D", builtin("Conv2D", "Conv2D(channels, kernel_size, strides=(1, 1), padding=(0, 0), activation=None, use_bias=True, in_channels=0)", |it, mut a| {
        let channels = usize_arg(&a.required(0, "channels")?, "channels")?;
        let ks = a.required(1, "kernel_size")?;
        let kernel = pair_arg(it, Some(ks), (1, 1), "kernel_size")?;
        let st = a.take(2, "strides")?;
        let strides = pair_arg(it, st, (1, 1), "strides")?;
        let pd = a.take(3, "padding")?;
        let padding = pair_arg(it, pd, (0, 0), "padding")?;
        a.take(4, "dilation")?;
        a.take(5, "groups")?;
        a.take(6, "layout")?;
        let act = activation_arg(a.take(7, "activation")?)?;
        let use_bias = a.take(8, "use_bias")?.map(|v| v.truthy()).transpose()?.unwrap_or(true);
        a.take(9, "weight_initializer")?;
        a.take(10, "bias_initializer")?;
        let in_channels = a.take(11, "in_channels")?.map(|v| usize_arg(&v, "in_channels")).transpose()?.unwrap_or(0);
        a.finish(12)?;
        Ok(new_block(it, "conv", |n| Block::conv2d(n, channels, kernel, strides, padding, act, in_channels, use_bias)))
    }));
    m.set("MaxPool2D", builtin("MaxPool2D", "MaxPool2D(pool_size=(2, 2), strides=None): the maximum of each window (strides default to pool_size).", |it, mut a| {
        let ps = a.take(0, "pool_size")?;
        let pool = pair_arg(it, ps, (2, 2), "pool_size")?;
        let st = a.take(1, "strides")?;
        let strides = pair_arg(it, st, pool, "strides")?;
        let pd = a.take(2, "padding")?;
        if pair_arg(it, pd, (0, 0), "padding")? != (0, 0) {
            return Err(Exc::value_error("MaxPool2D: padding is not supported; pad the input or use padding=0"));
        }
        a.finish(3)?;
        Ok(new_block(it, "pool", |name| Rc::new(Block { name, kind: BlockKind::MaxPool2D { pool, strides } })))
    }));
    m.set(
        "Flatten",
        builtin(
            "Flatten",
            "Flatten(): (batch, ...) to (batch, features).",
            |it, a| {
                a.finish(0)?;
                Ok(new_block(it, "flatten", |name| {
                    Rc::new(Block {
                        name,
                        kind: BlockKind::Flatten,
                    })
                }))
            },
        ),
    );
    m.set(
        "Activation",
        builtin(
            "Activation",
            "Activation(name): 'relu', 'sigmoid' or 'tanh'.",
            |it, mut a| {
                let act = activation_arg(Some(a.required(0, "activation")?))?
                    .ok_or_else(|| Exc::value_error("Activation needs a name such as 'relu'"))?;
                a.finish(1)?;
                Ok(new_block(it, "activation", |name| {
                    Rc::new(Block {
                        name,
                        kind: BlockKind::Activation(act),
                    })
                }))
            },
        ),
    );
    m
}

// ---- loss, trainer, utils --------------------------------------------------------------------

fn split_and_load_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let data = a.required(0, "data")?;
    let ctx = a.required(1, "ctx_list")?;
    let axis = a.take(2, "batch_axis")?;
    let even = a
        .take(3, "even_split")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true);
    a.finish(4)?;
    if axis.as_ref().and_then(as_i64).unwrap_or(0) != 0 {
        return Err(Exc::value_error(
            "split_and_load: only batch_axis=0 is supported",
        ));
    }
    let x = data
        .as_array()
        .ok_or_else(|| Exc::type_error("split_and_load: data must be an array"))?;
    let devices = devices_arg(it, Some(ctx))?;
    let parts = split_and_load(&it.state_mut().rt, &x.array, &devices, even)?;
    Ok(Value::list(
        parts.into_iter().map(|p| wrap(p, x.flavor)).collect(),
    ))
}

/// The modules this file provides, by dotted name.
pub fn build(dotted: &str) -> Option<Rc<Module>> {
    Some(match dotted {
        "mxnet.autograd" => autograd_module(),
        "mxnet.init" | "mxnet.initializer" => init_module(),
        "mxnet.gluon.nn" => nn_module(),
        "mxnet.gluon.loss" => super::gluon_train::loss_module(),
        "mxnet.gluon.utils" => {
            let m = Rc::new(Module::new("mxnet.gluon.utils", "Gluon utilities"));
            m.set("Progress", builtin("Progress", "Progress(total_or_iterable, desc=''): a text progress bar; p.update(n=1), p.close(), or iterate it to wrap a DataLoader.", super::gluon_data::progress));
            m.set("split_and_load", builtin("split_and_load", "split_and_load(data, ctx_list, batch_axis=0, even_split=True): one slice of the batch per device.", split_and_load_fn));
            m
        }
        "mxnet.gluon" => {
            let m = Rc::new(Module::new("mxnet.gluon", "MXNet's Gluon API"));
            m.set("nn", Value::Module(build("mxnet.gluon.nn")?));
            m.set("loss", Value::Module(build("mxnet.gluon.loss")?));
            m.set("utils", Value::Module(build("mxnet.gluon.utils")?));
            m.set("data", Value::Module(build("mxnet.gluon.data")?));
            m.set(
                "Trainer",
                builtin(
                    "Trainer",
                    "Trainer(params, optimizer, optimizer_params=None): 'sgd' (momentum, wd), 'nag', 'adam' (beta1, beta2, epsilon, wd), 'rmsprop' (gamma1), 'adagrad' (eps); trainer.step(batch_size).",
                    super::gluon_train::trainer,
                ),
            );
            m
        }
        other => return super::gluon_data::build(other),
    })
}

/// `net[i]` for a Gluon or PyTorch Sequential: the i-th child, negative
/// indices counting from the end.
pub(crate) fn child_at(
    children: &[Rc<crate::nn::layers::Block>],
    key: &Value,
    what: &str,
) -> Result<Rc<crate::nn::layers::Block>, Exc> {
    let i =
        as_i64(key).ok_or_else(|| Exc::type_error(format!("{what} indices must be integers")))?;
    let n = children.len() as i64;
    let j = if i < 0 { i + n } else { i };
    usize::try_from(j)
        .ok()
        .and_then(|j| children.get(j).cloned())
        .ok_or_else(|| {
            Exc::new(
                ExcKind::IndexError,
                format!("{what} index {i} is out of range for {n} {what}s"),
            )
        })
}
