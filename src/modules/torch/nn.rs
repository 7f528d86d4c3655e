//! `torch.nn`: the PyTorch spelling of the same layers (`nn.Sequential(nn.Linear(3, 1))`,
//! `nn.LazyLinear`, `nn.ReLU`, `nn.Flatten`). Modules are `crate::nn::layers::Block`s; only
//! construction (PyTorch's default initialisation, parameters created at once on the CPU),
//! `.to(device)` and the reprs differ from Gluon.
//!
//! Outputs print without `grad_fn=<...>`: devarray records gradients only inside
//! `autograd.record()`, so a plain forward pass builds no graph to name.
use std::rc::Rc;

use crate::nn::layers::{Activation, Block, BlockKind, Init, Parameter};
use crate::runtime::Device;

use crate::modules::mxnet::gluon::{bound, downcast, object, usize_arg};
use crate::modules::torch::{device_attr, parse_torch_device, torch_error};
use crate::object::error::{Exc, ExcKind};
use crate::object::format::{array_repr, torch_device_name};
use crate::object::ops::wrap;
use crate::object::value::{Args, ArrayValue, Flavor, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};

struct TorchModule(Rc<Block>);

pub(crate) struct TorchParam(pub(crate) Rc<Parameter>);

fn module_of(v: &Value) -> Result<Rc<Block>, Exc> {
    Ok(downcast::<TorchModule>(v, "a torch.nn module")?.0.clone())
}

/// PyTorch's module repr: `Linear(in_features=3, out_features=1, bias=True)`; a Linear whose
/// input size is not known yet is still a `LazyLinear` (PyTorch swaps the class at the first call).
fn module_repr(b: &Block) -> String {
    match &b.kind {
        BlockKind::Sequential(c) => {
            let children = c.borrow();
            if children.is_empty() {
                return "Sequential()".into();
            }
            let mut s = String::from("Sequential(\n");
            for (i, child) in children.iter().enumerate() {
                let inner = module_repr(child).replace('\n', "\n  ");
                s.push_str(&format!("  ({i}): {inner}\n"));
            }
            s.push(')');
            s
        }
        BlockKind::Dense {
            units,
            in_units,
            bias,
            ..
        } => {
            let class = if in_units.get() == 0 {
                "LazyLinear"
            } else {
                "Linear"
            };
            format!(
                "{class}(in_features={}, out_features={units}, bias={})",
                in_units.get(),
                if bias.is_some() { "True" } else { "False" }
            )
        }
        BlockKind::Activation(Activation::Relu) => "ReLU()".into(),
        BlockKind::Activation(Activation::Sigmoid) => "Sigmoid()".into(),
        BlockKind::Activation(Activation::Tanh) => "Tanh()".into(),
        BlockKind::Flatten => "Flatten(start_dim=1, end_dim=-1)".into(),
        _ => b.repr(),
    }
}

/// The devices holding a module's parameters (empty while they are all lazy).
fn param_devices(b: &Block) -> Vec<Device> {
    let mut out: Vec<Device> = Vec::new();
    for p in b.collect_params() {
        for d in p.list_ctx() {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

fn forward(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "input")?;
    a.finish(1)?;
    let block = module_of(r)?;
    let xv = x.as_array().ok_or_else(|| {
        Exc::type_error(format!("a module takes a tensor, got {}", x.type_name()))
    })?;
    let here = xv.array.device();
    if let Some(other) = param_devices(&block).into_iter().find(|d| *d != here) {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "Expected all tensors to be on the same device, but found at least two devices, {} and {}! The input is on {} and the parameters on {}: move the model with net.to('{}') or the input with X.to('{}')",
                torch_device_name(here),
                torch_device_name(other),
                torch_device_name(here),
                torch_device_name(other),
                torch_device_name(here),
                torch_device_name(other),
            ),
        ));
    }
    let st = it.state_mut();
    let out = block
        .forward(&st.rt, &mut st.nn.tape, &xv.array)
        .map_err(torch_error)?;
    Ok(wrap(out, Flavor::Torch))
}

fn to_device(it: &mut dyn Interpreter, r: &Value, device: Device) -> Result<Value, Exc> {
    let block = module_of(r)?;
    for p in block.collect_params() {
        let st = it.state_mut();
        p.reset_ctx(&st.rt, &mut st.nn.tape, &[device])
            .map_err(torch_error)?;
    }
    Ok(r.clone())
}

impl NativeObject for TorchModule {
    fn type_name(&self) -> &str {
        match &self.0.kind {
            BlockKind::Sequential(_) => "Sequential",
            BlockKind::Dense { in_units, .. } if in_units.get() == 0 => "LazyLinear",
            BlockKind::Dense { .. } => "Linear",
            BlockKind::Activation(Activation::Relu) => "ReLU",
            BlockKind::Activation(Activation::Sigmoid) => "Sigmoid",
            BlockKind::Activation(Activation::Tanh) => "Tanh",
            BlockKind::Flatten => "Flatten",
            _ => "Module",
        }
    }
    fn repr(&self) -> String {
        module_repr(&self.0)
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "to",
            "cuda",
            "cpu",
            "forward",
            "parameters",
            "weight",
            "bias",
            "in_features",
            "out_features",
        ]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "__call__" | "forward" => bound(this, "forward", "net(X): the forward pass on X's device (the parameters must be there: net.to(X.device)).", forward),
            "to" => bound(this, "to", "net.to(device): move every parameter to device; returns net.", |it, r, mut a| {
                let spec = a.take(0, "device")?.ok_or_else(|| Exc::type_error("to() needs a device, e.g. net.to('cuda:0') or net.to(device=torch.device('cuda'))"))?;
                a.take_kw("dtype");
                a.take_kw("non_blocking");
                a.finish(1)?;
                let d = parse_torch_device(&spec, None)?.device();
                to_device(it, r, d)
            }),
            "cuda" => bound(this, "cuda", "net.cuda(device=None): move every parameter to a GPU; returns net.", |it, r, mut a| {
                let index = a.take(0, "device")?;
                a.finish(1)?;
                let id = match index {
                    None | Some(Value::None) => 0,
                    Some(v) => usize_arg(&v, "device")?,
                };
                to_device(it, r, Device::gpu(id))
            }),
            "cpu" => bound(this, "cpu", "net.cpu(): move every parameter to the CPU; returns net.", |it, r, a| {
                a.finish(0)?;
                to_device(it, r, Device::cpu(0))
            }),
            "parameters" => bound(this, "parameters", "net.parameters(): every parameter, in order.", |_, r, a| {
                a.finish(0)?;
                Ok(Value::list(module_of(r)?.collect_params().into_iter().map(|p| object(TorchParam(p))).collect()))
            }),
            "__getitem__" => bound(this, "__getitem__", "net[i]: the i-th module.", |_, r, mut a| {
                let key = a.required(0, "index")?;
                a.finish(1)?;
                crate::modules::mxnet::gluon::child_at(&module_of(r)?.children(), &key, "module").map(|b| object(TorchModule(b)))
            }),
            "__len__" => bound(this, "__len__", "len(net)", |_, r, a| {
                a.finish(0)?;
                Ok(Value::Int(module_of(r)?.children().len() as i64))
            }),
            "weight" | "bias" => match &self.0.kind {
                BlockKind::Dense { weight, bias, .. } => {
                    if name == "weight" {
                        object(TorchParam(weight.clone()))
                    } else {
                        bias.clone().map_or(Value::None, |b| object(TorchParam(b)))
                    }
                }
                _ => return None,
            },
            "in_features" | "out_features" => match &self.0.kind {
                BlockKind::Dense { units, in_units, .. } => {
                    Value::Int(if name == "in_features" { in_units.get() } else { *units } as i64)
                }
                _ => return None,
            },
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl NativeObject for TorchParam {
    fn type_name(&self) -> &str {
        "Parameter"
    }
    fn repr(&self) -> String {
        match self.0.data(None) {
            Ok(a) => {
                let t = array_repr(&ArrayValue {
                    array: a,
                    flavor: Flavor::Torch,
                });
                // `tensor([...])` -> `tensor([...], requires_grad=True)`.
                let body = t.strip_suffix(')').unwrap_or(&t);
                format!("Parameter containing:\n{body}, requires_grad=True)")
            }
            Err(_) => "<UninitializedParameter>".into(),
        }
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["data", "device", "shape", "requires_grad", "grad"]
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let data = self.0.data(None).ok();
        Some(match name {
            "data" => wrap(data?, Flavor::Torch),
            "device" => device_attr(data?.device(), Flavor::Torch),
            "shape" => Value::tuple(
                data?
                    .shape()
                    .iter()
                    .map(|&d| Value::Int(d as i64))
                    .collect(),
            ),
            "requires_grad" => Value::Bool(true),
            "grad" => Value::None,
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A Linear layer with PyTorch's initialisation; `in_features == 0` makes it lazy.
fn linear(
    it: &mut dyn Interpreter,
    in_features: usize,
    out_features: usize,
    use_bias: bool,
) -> Result<Value, Exc> {
    let name = it.state_mut().nn.next_name("linear");
    let weight = Parameter::new(
        format!("{name}.weight"),
        vec![out_features, in_features],
        Init::FanInUniform,
    );
    let bias = use_bias.then(|| {
        let b = Parameter::new(
            format!("{name}.bias"),
            vec![out_features],
            Init::FanInUniform,
        );
        b.fan_in.set(in_features);
        b
    });
    let block = Rc::new(Block {
        name,
        kind: BlockKind::Dense {
            units: out_features,
            in_units: std::cell::Cell::new(in_features),
            activation: None,
            weight,
            bias,
        },
    });
    // PyTorch creates parameters at construction, on the CPU (lazy ones at the first call).
    for p in block.collect_params() {
        let st = it.state_mut();
        p.initialize(&st.rt, &mut st.nn.tape, &[Device::cpu(0)], None, false)
            .map_err(torch_error)?;
    }
    Ok(object(TorchModule(block)))
}

fn bias_arg(a: &mut Args, index: usize) -> Result<bool, Exc> {
    Ok(a.take(index, "bias")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true))
}

fn simple(it: &mut dyn Interpreter, prefix: &str, kind: BlockKind) -> Value {
    let name = it.state_mut().nn.next_name(prefix);
    object(TorchModule(Rc::new(Block { name, kind })))
}

pub fn build() -> Rc<Module> {
    let m = Rc::new(Module::new("torch.nn", "PyTorch's neural network modules"));
    m.set("functional", Value::Module(super::functional::build()));
    super::functional::register_losses(&m);
    m.set(
        "Sequential",
        builtin(
            "Sequential",
            "Sequential(*modules): modules applied in order.",
            |it, a| {
                let name = it.state_mut().nn.next_name("sequential");
                let seq = Block::sequential(name);
                for v in &a.pos {
                    seq.add(module_of(v)?)?;
                }
                a.finish(a.pos.len())?;
                Ok(object(TorchModule(seq)))
            },
        ),
    );
    m.set("Linear", builtin("Linear", "Linear(in_features, out_features, bias=True): y = x W^T + b, W and b drawn from U(-1/sqrt(in), 1/sqrt(in)).", |it, mut a| {
        let in_f = usize_arg(&a.required(0, "in_features")?, "in_features")?;
        let out_f = usize_arg(&a.required(1, "out_features")?, "out_features")?;
        let use_bias = bias_arg(&mut a, 2)?;
        a.take_kw("device");
        a.take_kw("dtype");
        a.finish(3)?;
        if in_f == 0 || out_f == 0 {
            return Err(Exc::value_error("Linear: in_features and out_features must be at least 1 (use nn.LazyLinear(out_features) to infer the input size)"));
        }
        linear(it, in_f, out_f, use_bias)
    }));
    m.set("LazyLinear", builtin("LazyLinear", "LazyLinear(out_features, bias=True): a Linear whose in_features comes from the first input.", |it, mut a| {
        let out_f = usize_arg(&a.required(0, "out_features")?, "out_features")?;
        let use_bias = bias_arg(&mut a, 1)?;
        a.take_kw("device");
        a.take_kw("dtype");
        a.finish(2)?;
        if out_f == 0 {
            return Err(Exc::value_error("LazyLinear: out_features must be at least 1"));
        }
        linear(it, 0, out_f, use_bias)
    }));
    m.set(
        "ReLU",
        builtin("ReLU", "ReLU(): max(x, 0).", |it, mut a| {
            a.take_kw("inplace");
            a.finish(0)?;
            Ok(simple(it, "relu", BlockKind::Activation(Activation::Relu)))
        }),
    );
    m.set(
        "Sigmoid",
        builtin("Sigmoid", "Sigmoid(): 1 / (1 + exp(-x)).", |it, a| {
            a.finish(0)?;
            Ok(simple(
                it,
                "sigmoid",
                BlockKind::Activation(Activation::Sigmoid),
            ))
        }),
    );
    m.set(
        "Tanh",
        builtin("Tanh", "Tanh(): tanh(x).", |it, a| {
            a.finish(0)?;
            Ok(simple(it, "tanh", BlockKind::Activation(Activation::Tanh)))
        }),
    );
    m.set(
        "Flatten",
        builtin(
            "Flatten",
            "Flatten(): (batch, ...) to (batch, features).",
            |it, a| {
                a.finish(0)?;
                Ok(simple(it, "flatten", BlockKind::Flatten))
            },
        ),
    );
    m
}
