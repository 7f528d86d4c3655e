//! The PyTorch dialect: `import torch` binds a namespace on the same runtime
//! as the MXNet spellings. Creation goes through the shared array API in
//! `arrays.rs` with the `TORCH` dialect code (tensors print as PyTorch's and
//! default to PyTorch's dtypes); this file adds what only PyTorch has:
//! `torch.device` objects, `torch.cuda`, and the dtype aliases.
//!
//! `torch.nn` lives in `torch_nn.rs`; `build` hands it out so that both
//! `torch.nn.Linear` and `from torch import nn` find it.

pub mod api_more;
pub mod autograd;
pub mod conv;
pub mod cuda;
pub mod dtype_info;
pub mod functional;
pub mod hooks;
pub mod jit;
pub mod jit_script;
pub mod lazy;
pub mod lr_scheduler;
pub mod math;
pub mod nn;
pub mod nn_more;
pub mod optim;
pub mod parallel;
pub mod print_options;
pub mod random_more;
pub mod reshaping;
pub mod selection;
pub mod size;
pub mod tensor_args;

use std::rc::Rc;

use crate::runtime::{Device, DeviceKind};

use crate::modules::array::arrays::{self, TORCH};
use crate::object::error::{Exc, ExcKind};
use crate::object::format::str_repr;
use crate::object::ops::as_i64;
use crate::object::value::{Args, Flavor, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};

/// A `torch.device`: a kind and an optional index. The index is kept as
/// written, because PyTorch prints and compares `torch.device('cuda')` and
/// `torch.device('cuda:0')` differently even though both mean gpu(0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TorchDevice {
    pub kind: DeviceKind,
    pub index: Option<usize>,
}

impl TorchDevice {
    /// The runtime device it names (no index means the first one).
    pub fn device(self) -> Device {
        let id = self.index.unwrap_or(0);
        match self.kind {
            DeviceKind::Cpu => Device::cpu(id),
            DeviceKind::Gpu => Device::gpu(id),
        }
    }

    /// How PyTorch reports a tensor's device: CUDA devices with their index,
    /// the CPU without one (`device(type='cpu')`).
    pub fn of_tensor(d: Device) -> TorchDevice {
        match d.kind {
            DeviceKind::Cpu => TorchDevice {
                kind: DeviceKind::Cpu,
                index: None,
            },
            DeviceKind::Gpu => TorchDevice {
                kind: DeviceKind::Gpu,
                index: Some(d.id),
            },
        }
    }

    fn type_str(self) -> &'static str {
        match self.kind {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Gpu => "cuda",
        }
    }

    /// `str(d)`: `cuda:1`, `cpu`.
    pub fn text(self) -> String {
        match self.index {
            Some(i) => format!("{}:{i}", self.type_str()),
            None => self.type_str().to_string(),
        }
    }

    pub fn value(self) -> Value {
        Value::Object(Rc::new(self))
    }
}

impl NativeObject for TorchDevice {
    fn type_name(&self) -> &str {
        "device"
    }
    fn repr(&self) -> String {
        match self.index {
            Some(i) => format!("device(type='{}', index={i})", self.type_str()),
            None => format!("device(type='{}')", self.type_str()),
        }
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            // How `device=`/`.to()` arguments find the runtime device.
            "__device__" => Some(Value::Device(self.device())),
            "__str__" => Some(Value::str(&self.text())),
            "type" => Some(Value::str(self.type_str())),
            "index" => Some(self.index.map_or(Value::None, |i| Value::Int(i as i64))),
            _ => None,
        }
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["type", "index"]
    }
    fn equals(&self, other: &Value) -> Option<bool> {
        match other {
            Value::Object(o) => Some(
                o.as_any()
                    .downcast_ref::<TorchDevice>()
                    .is_some_and(|d| d == self),
            ),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

// Runtime errors in PyTorch's words live in the object layer, where operators raise them.
pub use crate::object::error::torch_error;

/// `x.device` of an array: PyTorch's device object for tensors, the MXNet
/// context (`gpu(0)`) for the other dialects.
/// What PyTorch adds to its tensors, registered into the shared array API at start-up
/// (`crate::modules::install`): autograd's attributes, `torch.Size` shapes, `torch.device`s, and
/// `torch.nn.Parameter` as the class of a parameter.
pub fn register_hooks() {
    crate::modules::array::hooks::register(
        Flavor::Torch,
        crate::modules::array::hooks::DialectArrays {
            get_attr: autograd::tensor_attr,
            set_attr: autograd::set_tensor_attr,
            attr_names: autograd::TENSOR_ATTRS,
            shape: size::value,
            device: |d| TorchDevice::of_tensor(d).value(),
            class_of: |it, v| match v {
                Value::Array(a) => it
                    .state()
                    .nn
                    .param_of_array(&a.array)
                    .map(|_| nn::classes().parameter.value()),
                _ => None,
            },
            device_text: |d| TorchDevice::of_tensor(d).text(),
            parse_device: |v| Ok(parse_torch_device(v, None)?.device()),
        },
    );
}

fn parse_kind(text: &str) -> Result<DeviceKind, Exc> {
    match text {
        "cpu" => Ok(DeviceKind::Cpu),
        "cuda" | "gpu" => Ok(DeviceKind::Gpu),
        other => Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "unknown device type {}: devarray's torch.device knows 'cpu' and 'cuda' (e.g. 'cuda:1')",
                str_repr(other)
            ),
        )),
    }
}

fn index_arg(v: &Value) -> Result<Option<usize>, Exc> {
    if matches!(v, Value::None) {
        return Ok(None);
    }
    let i = as_i64(v).ok_or_else(|| {
        Exc::type_error(format!(
            "device index must be an integer, not {}",
            v.type_name()
        ))
    })?;
    usize::try_from(i).map(Some).map_err(|_| {
        Exc::new(
            ExcKind::RuntimeError,
            format!("Device index must not be negative (got {i})"),
        )
    })
}

/// `torch.device('cuda:1')`, `torch.device('cuda', 1)`,
/// `torch.device(type='cuda', index=1)`, `torch.device(1)` (= cuda:1), or a
/// device object or MXNet context.
pub fn parse_torch_device(spec: &Value, index: Option<&Value>) -> Result<TorchDevice, Exc> {
    let explicit = index.map(index_arg).transpose()?.flatten();
    let parsed = match spec {
        Value::Str(s) => {
            let (kind, idx) = match s.split_once(':') {
                Some((k, i)) => {
                    let n = i.parse::<usize>().map_err(|_| {
                        Exc::new(
                            ExcKind::RuntimeError,
                            format!(
                                "invalid device string {}: the index after ':' must be a number, as in 'cuda:1'",
                                str_repr(s)
                            ),
                        )
                    })?;
                    (parse_kind(k)?, Some(n))
                }
                None => (parse_kind(s)?, None),
            };
            if idx.is_some() && explicit.is_some() {
                return Err(Exc::new(
                    ExcKind::RuntimeError,
                    format!(
                        "type (string) must not include an index because index was passed explicitly: {}",
                        s
                    ),
                ));
            }
            TorchDevice {
                kind,
                index: idx.or(explicit),
            }
        }
        Value::Int(_) => TorchDevice {
            kind: DeviceKind::Gpu,
            index: index_arg(spec)?,
        },
        Value::Device(d) => TorchDevice::of_tensor(*d),
        Value::Object(o) => match o.as_any().downcast_ref::<TorchDevice>() {
            Some(d) => *d,
            None => return Err(not_a_device(spec)),
        },
        other => return Err(not_a_device(other)),
    };
    Ok(parsed)
}

fn not_a_device(v: &Value) -> Exc {
    Exc::type_error(format!(
        "torch.device() expects a string such as 'cpu', 'cuda' or 'cuda:1', not {}",
        v.type_name()
    ))
}

fn device(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let spec = a.required(0, "type")?;
    let index = a.take(1, "index")?;
    a.finish(2)?;
    Ok(parse_torch_device(&spec, index.as_ref())?.value())
}

fn device_count(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Int(it.state_mut().rt.num_gpus() as i64))
}

fn is_available(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Bool(it.state_mut().rt.num_gpus() > 0))
}

fn current_device(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    if it.state_mut().rt.num_gpus() == 0 {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "no CUDA device: this machine has no GPU. To simulate GPUs, start devarray with --sim-gpus 2 or set DEVARRAY_SIM_GPUS=2",
        ));
    }
    Ok(Value::Int(0))
}

/// `torch.accelerator.current_accelerator(check_available=False)`.
fn current_accelerator(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let check = a.flag(0, "check_available", false)?;
    a.finish(1)?;
    // Like a CUDA build of PyTorch: the accelerator is CUDA even on a machine without a GPU,
    // unless check_available=True asks whether one is there.
    if check && it.state_mut().rt.num_gpus() == 0 {
        return Ok(Value::None);
    }
    Ok(TorchDevice {
        kind: DeviceKind::Gpu,
        index: None,
    }
    .value())
}

fn set_device_index(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let d = a.required(0, "device")?;
    a.finish(1)?;
    let n = it.state_mut().rt.num_gpus();
    let index = match &d {
        Value::Int(i) => *i,
        other => arrays::device_arg(other)?.id as i64,
    };
    if n == 0 {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "no CUDA device: this machine has no GPU. To simulate GPUs, start devarray with --sim-gpus 2 or set DEVARRAY_SIM_GPUS=2",
        ));
    }
    if index != 0 {
        return Err(Exc::value_error(format!(
            "set_device_index({index}): devarray's default GPU is always 0; place tensors on another GPU with .to('cuda:{index}') or device='cuda:{index}'"
        )));
    }
    Ok(Value::None)
}

fn manual_seed(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    arrays::seed(it, a)?;
    // PyTorch returns the generator; nothing in the chapters uses it.
    Ok(Value::None)
}

/// `torch.is_tensor(x)`.
fn is_tensor(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "obj")?;
    a.finish(1)?;
    Ok(Value::Bool(matches!(x, Value::Array(_))))
}

/// Build `torch` or one of its submodules; None for names it does not have.
pub fn build(dotted: &str) -> Option<Rc<Module>> {
    Some(match dotted {
        "torch" => {
            let m = Rc::new(Module::new(
                "torch",
                "PyTorch's tensor API on the devarray runtime",
            ));
            arrays::fill_namespace::<TORCH>(&m);
            m.set(
                "Tensor",
                Value::Type(crate::object::value::TypeKind::Tensor),
            );
            m.set(
                "from_numpy",
                crate::object::builtin(
                    "from_numpy",
                    "from_numpy(ndarray): a tensor sharing the NumPy array's memory (on the CPU).",
                    from_numpy,
                ),
            );
            m.set(
                "as_tensor",
                crate::object::builtin(
                    "as_tensor",
                    "as_tensor(data, dtype=None, device=None): data as a tensor, sharing memory with a NumPy array or tensor when dtype and device already match.",
                    as_tensor,
                ),
            );
            let fns: [(&'static str, &'static str, crate::object::value::BuiltinFn); 8] = [
                (
                    "tensor",
                    "tensor(data, dtype=None, device=None): a tensor from nested lists (ints give int64, floats float32).",
                    arrays::array::<TORCH>,
                ),
                (
                    "rand",
                    "rand(*size, dtype=None, device=None): uniform samples in [0, 1).",
                    arrays::rand::<TORCH>,
                ),
                (
                    "randn",
                    "randn(*size, dtype=None, device=None): standard normal samples.",
                    arrays::randn::<TORCH>,
                ),
                (
                    "device",
                    "device('cpu' | 'cuda' | 'cuda:1') or device('cuda', 1): a device to pass as device= or to .to().",
                    device,
                ),
                (
                    "manual_seed",
                    "manual_seed(n): reseed the generators of every device.",
                    manual_seed,
                ),
                (
                    "is_tensor",
                    "is_tensor(obj): whether obj is a tensor.",
                    is_tensor,
                ),
                (
                    "mm",
                    "mm(a, b): the matrix product of two 2-D tensors.",
                    arrays::ns_matmul,
                ),
                (
                    "synchronize",
                    "synchronize(): block until all pending computation is done.",
                    arrays::waitall,
                ),
            ];
            for (name, doc, f) in fns {
                m.set(name, builtin(name, doc, f));
            }
            autograd::install(&m);
            math::install(&m);
            crate::modules::array::math_more::install::<{ arrays::TORCH }>(&m);
            crate::modules::array::linalg::install::<{ arrays::TORCH }>(&m);
            crate::modules::array::reductions::install::<{ arrays::TORCH }>(&m);
            crate::modules::array::poly::install_torch(&m);
            print_options::install(&m);
            random_more::install(&m);
            selection::install(&m);
            reshaping::install(&m);
            api_more::install(&m);
            dtype_info::install(&m);
            // PyTorch's dtype aliases.
            for (alias, name) in [
                ("float", "float32"),
                ("double", "float64"),
                ("long", "int64"),
                ("int", "int32"),
                ("half", "float16"),
                ("short", "int16"),
            ] {
                if let Some(d) = m.get(name) {
                    m.set(alias, d);
                }
            }
            m.set("Size", Value::Class(size::class()));
            m.set("save", builtin("save", "save(obj, f): write tensors, numbers, strings and lists, tuples and dicts of them (a state_dict) to the file f (devarray's safetensors format; atomically).", crate::modules::array::files::torch_save));
            m.set("load", builtin("load", "load(f, map_location=None, weights_only=True): what torch.save wrote; tensors go back on their saved device, or where map_location says (a device, 'cpu', 'cuda:1', a dict {'cuda:1': 'cuda:0'} or a function).", crate::modules::array::files::torch_load));
            m.set("cuda", Value::Module(build("torch.cuda")?));
            m.set("accelerator", Value::Module(build("torch.accelerator")?));
            m.set("nn", Value::Module(build("torch.nn")?));
            m.set("utils", Value::Module(build("torch.utils")?));
            m.set("optim", Value::Module(build("torch.optim")?));
            // `torch.jit` is written in the language (`library/torch/jit/`): imported on its
            // first use as `torch.jit`, as `import torch.jit` would.
            m.set(
                "__getattr__",
                builtin("__getattr__", "", |it, mut a| {
                    let name = a.required(0, "name")?;
                    match &name {
                        Value::Str(n) if &**n == "jit" => it.import("torch.jit").map(Value::Module),
                        other => Err(Exc::new(
                            ExcKind::AttributeError,
                            format!(
                                "module 'torch' has no attribute '{}'",
                                crate::object::format::to_str(it, other)?
                            ),
                        )),
                    }
                }),
            );
            functional::register_top_level(&m);
            m.set("__version__", Value::str("2.0 (devarray)"));
            m
        }
        "torch.nn" => nn::build(),
        "torch._jit" => jit::build(),
        "torch.autograd" => autograd::autograd_module(),
        "torch.nn.functional" => functional::build(),
        "torch.nn.parallel" => parallel::build(),
        "torch.optim" => optim::build(),
        "torch.optim.lr_scheduler" => lr_scheduler::build(),
        "torch.nn.utils" => optim::nn_utils(),
        "torch.cuda" => {
            let m = Rc::new(Module::new(
                "torch.cuda",
                "CUDA devices (real or simulated GPUs)",
            ));
            let fns: [(&'static str, &'static str, crate::object::value::BuiltinFn); 4] = [
                (
                    "device_count",
                    "device_count(): how many GPUs this machine has (simulated ones included).",
                    device_count,
                ),
                (
                    "is_available",
                    "is_available(): whether there is at least one GPU.",
                    is_available,
                ),
                (
                    "current_device",
                    "current_device(): the index of the default GPU.",
                    current_device,
                ),
                (
                    "synchronize",
                    "synchronize(device=None): block until the GPU's queued work is done (the current GPU, 0, by default).",
                    cuda::synchronize,
                ),
            ];
            for (name, doc, f) in fns {
                m.set(name, builtin(name, doc, f));
            }
            cuda::install(&m);
            m
        }
        "torch.accelerator" => {
            // PyTorch 2.6's device-neutral spelling of torch.cuda; here the accelerator is CUDA.
            let m = Rc::new(Module::new(
                "torch.accelerator",
                "the machine's accelerator (CUDA GPUs, real or simulated)",
            ));
            let fns: [(&'static str, &'static str, crate::object::value::BuiltinFn); 6] = [
                (
                    "is_available",
                    "is_available(): whether there is at least one GPU.",
                    is_available,
                ),
                (
                    "current_accelerator",
                    "current_accelerator(check_available=False): device(type='cuda'); None when check_available=True and there is no GPU.",
                    current_accelerator,
                ),
                (
                    "device_count",
                    "device_count(): how many GPUs this machine has (simulated ones included).",
                    device_count,
                ),
                (
                    "current_device_index",
                    "current_device_index(): the index of the default GPU.",
                    current_device,
                ),
                (
                    "set_device_index",
                    "set_device_index(device): make a GPU the default; devarray's default stays GPU 0, so only 0 is accepted.",
                    set_device_index,
                ),
                (
                    "synchronize",
                    "synchronize(device=None): block until the GPU's queued work is done (the current GPU, 0, by default).",
                    cuda::synchronize,
                ),
            ];
            for (name, doc, f) in fns {
                m.set(name, builtin(name, doc, f));
            }
            m
        }
        other => return crate::modules::array::data::build_torch(other),
    })
}

/// `torch.from_numpy(a)`: the same host array, seen as a tensor (writes show through both).
fn from_numpy(_it: &mut dyn crate::object::Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "ndarray")?;
    a.finish(1)?;
    match &v {
        Value::Array(x) if x.flavor == Flavor::Numpy => {
            Ok(Value::Array(crate::object::value::ArrayValue {
                array: x.array.clone(),
                flavor: Flavor::Torch,
            }))
        }
        other => Err(Exc::type_error(format!(
            "expected np.ndarray (got {})",
            other.type_name()
        ))),
    }
}

/// `torch.as_tensor(data, dtype=None, device=None)`: a NumPy array or tensor that already has
/// the dtype and device is shared (no copy), as PyTorch does; anything else is `torch.tensor`.
fn as_tensor(it: &mut dyn crate::object::Interpreter, mut a: Args) -> Result<Value, Exc> {
    let data = a.required(0, "data")?;
    let dtype = a.take(1, "dtype")?.filter(|v| !matches!(v, Value::None));
    let device = a.take(2, "device")?.filter(|v| !matches!(v, Value::None));
    a.finish(3)?;
    if let Value::Array(x) = &data {
        let want_dtype = dtype.as_ref().map(arrays::dtype_arg).transpose()?.flatten();
        let want_device = device.as_ref().map(arrays::device_arg).transpose()?;
        if want_dtype.is_none_or(|d| d == x.array.dtype())
            && want_device.is_none_or(|d| d == x.array.device())
            && matches!(x.flavor, Flavor::Numpy | Flavor::Torch)
        {
            return Ok(Value::Array(crate::object::value::ArrayValue {
                array: x.array.clone(),
                flavor: Flavor::Torch,
            }));
        }
    }
    let mut args = Args::new("tensor", vec![data]);
    if let Some(d) = dtype {
        args.kw.push((std::rc::Rc::from("dtype"), d));
    }
    if let Some(d) = device {
        args.kw.push((std::rc::Rc::from("device"), d));
    }
    arrays::array::<TORCH>(it, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(spec: &str) -> TorchDevice {
        match parse_torch_device(&Value::str(spec), None) {
            Ok(d) => d,
            Err(e) => panic!("{spec}: {}", e.message),
        }
    }

    #[test]
    fn device_strings_keep_the_index_as_written() {
        assert_eq!(dev("cpu").repr(), "device(type='cpu')");
        assert_eq!(dev("cuda").repr(), "device(type='cuda')");
        assert_eq!(dev("cuda:1").repr(), "device(type='cuda', index=1)");
        assert_eq!(dev("cuda:0").text(), "cuda:0");
        assert_eq!(dev("cuda").device(), Device::gpu(0));
        assert_eq!(dev("cuda:1").device(), Device::gpu(1));
        assert_eq!(dev("cpu").device(), Device::cpu(0));
    }

    #[test]
    fn equality_follows_pytorch() {
        assert_eq!(dev("cuda:1"), dev("cuda:1"));
        assert_ne!(dev("cuda"), dev("cuda:0"));
        let a = dev("cuda:1");
        assert_eq!(a.equals(&dev("cuda:1").value()), Some(true));
        assert_eq!(a.equals(&dev("cuda").value()), Some(false));
        assert_eq!(a.equals(&Value::Int(1)), None);
    }

    #[test]
    fn tensor_devices_print_like_pytorch() {
        assert_eq!(
            TorchDevice::of_tensor(Device::gpu(0)).repr(),
            "device(type='cuda', index=0)"
        );
        assert_eq!(
            TorchDevice::of_tensor(Device::cpu(0)).repr(),
            "device(type='cpu')"
        );
    }

    #[test]
    fn device_mismatch_in_pytorch_words() {
        let e = torch_error(crate::runtime::RuntimeError::DeviceMismatch {
            op: "add".into(),
            first: Device::gpu(0),
            second: Device::cpu(0),
        });
        assert_eq!(e.kind, ExcKind::DeviceError);
        assert_eq!(
            e.message,
            "add: tensors are on different devices: the first is on cuda:0, the second on cpu. Move one explicitly, e.g. x.to('cpu') or y.to('cuda:0')"
        );
    }

    #[test]
    fn explicit_index_and_bad_specs() {
        let d = parse_torch_device(&Value::str("cuda"), Some(&Value::Int(1)));
        assert!(matches!(d, Ok(TorchDevice { index: Some(1), .. })));
        let err = |spec: Value, idx: Option<Value>| match parse_torch_device(&spec, idx.as_ref()) {
            Ok(d) => panic!("expected an error, got {d:?}"),
            Err(e) => e.message,
        };
        assert_eq!(
            err(Value::str("tpu"), None),
            "unknown device type 'tpu': devarray's torch.device knows 'cpu' and 'cuda' (e.g. 'cuda:1')"
        );
        assert_eq!(
            err(Value::str("cuda:x"), None),
            "invalid device string 'cuda:x': the index after ':' must be a number, as in 'cuda:1'"
        );
        assert_eq!(
            err(Value::str("cuda:1"), Some(Value::Int(1))),
            "type (string) must not include an index because index was passed explicitly: cuda:1"
        );
        assert_eq!(
            err(Value::Float(1.5), None),
            "torch.device() expects a string such as 'cpu', 'cuda' or 'cuda:1', not float"
        );
    }
}
