//! `torch.nn.parallel.scatter` / `gather`: a batch cut into one piece per GPU, and the pieces
//! brought back together, as PyTorch's `scatter_gather` does it (nested tuples, lists and dicts
//! included). The pieces are cut and moved with the tensor operations a program would use
//! (indexing, `.to`, `torch.cat`), so gradients flow through them.
//!
//! `DataParallel`, `data_parallel`, `replicate` and `parallel_apply` are written in the language
//! (`library/torch/data_parallel.da`, loaded on first use). A replica is the module itself run
//! by `_replica_call` with a copy of each parameter and buffer on the replica's device.

use std::rc::Rc;

use crate::modules::array::blocks::{all_params, core_of, param_value, Dialect};
use crate::object::error::Exc;
use crate::object::ops::{get_item, wrap, Index, IndexItem};
use crate::object::value::{Args, Module, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::DeviceKind;

use super::{parse_torch_device, TorchDevice};

/// A `target_gpus` entry (an index, `'cuda:1'` or a `torch.device`) as a device value.
fn gpu_value(v: &Value) -> Result<Value, Exc> {
    let d = parse_torch_device(v, None)?;
    if d.kind == DeviceKind::Cpu {
        return Err(Exc::value_error(format!(
            "Expected a cuda device, but got: {}",
            d.type_str()
        )));
    }
    Ok(TorchDevice {
        kind: DeviceKind::Gpu,
        index: Some(d.index.unwrap_or(0)),
    }
    .value())
}

fn dim_arg(v: Option<Value>, ndim: usize, what: &str) -> Result<usize, Exc> {
    let d = match v {
        None | Some(Value::None) => 0,
        Some(Value::Int(d)) => d,
        Some(other) => {
            return Err(Exc::type_error(format!(
                "{what}: dim must be an int, not {}",
                other.type_name()
            )))
        }
    };
    let n = ndim as i64;
    let d = if d < 0 { d + n } else { d };
    if d < 0 || d >= n.max(1) {
        return Err(Exc::new(
            crate::object::error::ExcKind::IndexError,
            format!(
                "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
                -n.max(1),
                n.max(1) - 1
            ),
        ));
    }
    Ok(d as usize)
}

fn to_device(it: &mut dyn Interpreter, x: &Value, device: &Value) -> Result<Value, Exc> {
    let to = it.get_attr(x, "to")?;
    it.call_value(&to, Args::new("to", vec![device.clone()]))
}

/// One tensor cut along `dim` as `torch.chunk` cuts it (pieces of ceil(n / k), so possibly
/// fewer than k), piece i moved to device i.
fn scatter_tensor(
    it: &mut dyn Interpreter,
    x: &Value,
    devices: &[Value],
    dim: usize,
) -> Result<Value, Exc> {
    let Value::Array(a) = x else {
        return Ok(x.clone());
    };
    let shape = a.array.shape().to_vec();
    if shape.is_empty() {
        return Err(Exc::new(
            crate::object::error::ExcKind::RuntimeError,
            "chunk expects at least a 1-dimensional tensor",
        ));
    }
    let n = shape[dim];
    let k = devices.len();
    let size = n.div_ceil(k).max(1);
    let mut pieces = Vec::new();
    for (i, device) in devices.iter().enumerate() {
        let start = i * size;
        if start >= n && !(n == 0 && i == 0) {
            break;
        }
        let end = (start + size).min(n);
        let mut items: Vec<IndexItem> = (0..dim)
            .map(|_| IndexItem::Slice(None, None, None))
            .collect();
        items.push(IndexItem::Slice(
            Some(Value::Int(start as i64)),
            Some(Value::Int(end as i64)),
            None,
        ));
        let piece = get_item(it, x, Index::Multi(items))?;
        pieces.push(to_device(it, &piece, device)?);
    }
    Ok(Value::tuple(pieces))
}

/// PyTorch's `scatter_map`: a tensor gives a tuple of pieces; a tuple, list or dict gives a
/// list of one such container per device; anything else is repeated per device.
fn scatter_map(
    it: &mut dyn Interpreter,
    obj: &Value,
    devices: &[Value],
    dim: usize,
) -> Result<Vec<Value>, Exc> {
    match obj {
        Value::Array(_) => match &scatter_tensor(it, obj, devices, dim)? {
            Value::Tuple(items) => Ok(items.to_vec()),
            other => Ok(vec![other.clone()]),
        },
        Value::Tuple(_) | Value::List(_) => {
            let items = it.iterate(obj)?;
            if items.is_empty() {
                return Ok(devices.iter().map(|_| obj.clone()).collect());
            }
            let columns: Vec<Vec<Value>> = items
                .iter()
                .map(|item| scatter_map(it, item, devices, dim))
                .collect::<Result<_, _>>()?;
            // zip(*columns): as many as the shortest.
            let count = columns.iter().map(Vec::len).min().unwrap_or(0);
            Ok((0..count)
                .map(|i| {
                    let row: Vec<Value> = columns.iter().map(|c| c[i].clone()).collect();
                    if matches!(obj, Value::Tuple(_)) {
                        Value::tuple(row)
                    } else {
                        Value::list(row)
                    }
                })
                .collect())
        }
        _ => Ok(devices.iter().map(|_| obj.clone()).collect()),
    }
}

/// `scatter(inputs, target_gpus, dim=0)`.
fn scatter(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let inputs = a.required(0, "inputs")?;
    let targets = a.required(1, "target_gpus")?;
    let dim = a.take(2, "dim")?;
    a.finish(3)?;
    let devices: Vec<Value> = it
        .iterate(&targets)?
        .iter()
        .map(gpu_value)
        .collect::<Result<_, _>>()?;
    let ndim = match &inputs {
        Value::Array(x) => x.array.ndim(),
        _ => usize::MAX,
    };
    let dim_index = if ndim == usize::MAX {
        match dim {
            None | Some(Value::None) => 0,
            Some(Value::Int(d)) if d >= 0 => d as usize,
            Some(other) => {
                return Err(Exc::type_error(format!(
                    "scatter: dim must be a non-negative int here, not {}",
                    other.type_name()
                )))
            }
        }
    } else {
        dim_arg(dim, ndim, "scatter")?
    };
    let pieces = scatter_map(it, &inputs, &devices, dim_index)?;
    Ok(match inputs {
        // A tensor's pieces come back as a tuple, containers' as a list.
        Value::Array(_) => Value::tuple(pieces),
        _ => Value::list(pieces),
    })
}

/// `gather(outputs, target_device, dim=0)`: tensors concatenated along `dim` on the target
/// (an index, -1 or `'cpu'` for the host, or a device); tuples and lists of tensors are
/// gathered element by element.
fn gather(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let outputs = a.required(0, "outputs")?;
    let target = a.required(1, "target_device")?;
    let dim = a.take(2, "dim")?;
    a.finish(3)?;
    let target = match &target {
        Value::Int(-1) => TorchDevice {
            kind: DeviceKind::Cpu,
            index: None,
        }
        .value(),
        other => parse_torch_device(other, None)?.value(),
    };
    let items = it.iterate(&outputs)?;
    gather_map(it, &items, &target, dim)
}

fn gather_map(
    it: &mut dyn Interpreter,
    items: &[Value],
    target: &Value,
    dim: Option<Value>,
) -> Result<Value, Exc> {
    let Some(first) = items.first() else {
        return Err(Exc::value_error("gather: outputs is empty"));
    };
    match first {
        Value::Array(x) => {
            let scalars = items
                .iter()
                .all(|v| matches!(v, Value::Array(a) if a.array.ndim() == 0));
            let along_0 = matches!(dim, None | Some(Value::Int(0)));
            if scalars && along_0 {
                // PyTorch's Gather: 0-d outputs (a loss per replica) become a vector, with a
                // warning, instead of failing to concatenate.
                crate::modules::python::stdlib::warnings::warn(
                    it,
                    "UserWarning",
                    "Was asked to gather along dimension 0, but all input tensors were scalars; will instead unsqueeze and return a vector.",
                )?;
                let mut vectors = Vec::with_capacity(items.len());
                for v in items {
                    if let Value::Array(a) = v {
                        let r = it.state_mut().nn.tape.reshape(&a.array, &[1])?;
                        vectors.push(wrap(r, a.flavor));
                    }
                }
                return gather_map(it, &vectors, target, dim);
            }
            let d = dim_arg(dim, x.array.ndim(), "gather")?;
            let moved: Vec<Value> = items
                .iter()
                .map(|v| to_device(it, v, target))
                .collect::<Result<_, _>>()?;
            let torch = it.import("torch")?;
            let cat = torch
                .get("cat")
                .ok_or_else(|| Exc::value_error("gather: torch.cat is missing"))?;
            let mut args = Args::new("cat", vec![Value::list(moved)]);
            args.kw.push((Rc::from("dim"), Value::Int(d as i64)));
            it.call_value(&cat, args)
        }
        Value::Tuple(_) | Value::List(_) => {
            let rows: Vec<Vec<Value>> = items
                .iter()
                .map(|v| it.iterate(v))
                .collect::<Result<_, _>>()?;
            let count = rows.iter().map(Vec::len).min().unwrap_or(0);
            let mut out = Vec::with_capacity(count);
            for i in 0..count {
                let column: Vec<Value> = rows.iter().map(|r| r[i].clone()).collect();
                out.push(gather_map(it, &column, target, dim.clone())?);
            }
            Ok(if matches!(first, Value::Tuple(_)) {
                Value::tuple(out)
            } else {
                Value::list(out)
            })
        }
        Value::None => Ok(Value::None),
        other => Err(Exc::type_error(format!(
            "gather: outputs must be tensors (or tuples or lists of them), not {}",
            other.type_name()
        ))),
    }
}

/// `_replica_call(module, device, fn)`: `fn()` run as PyTorch's replica of `module` on
/// `device` runs. Each parameter and buffer not already there gets a copy made by `.to`
/// (recorded, so gradients flow back into the original, as `Broadcast` does in PyTorch); the
/// built-in layers take the copy on their input's device and `self.weight` reads it. The copies
/// are taken away after the call, so buffer updates made on them are lost, as a replica's are.
/// With `detach` (`replicate(..., detach=True)`) the copies are made from detached tensors, as
/// PyTorch's `comm.broadcast_coalesced` makes them: nothing flows back from them.
fn replica_call(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let module = a.required(0, "module")?;
    let device = a.required(1, "device")?;
    let f = a.required(2, "fn")?;
    let detach = match a.take(3, "detach")? {
        Some(v) => v.truthy()?,
        None => false,
    };
    a.finish(4)?;
    let Some(core) = core_of(&module) else {
        return Err(Exc::type_error(format!(
            "replicate: expected a torch.nn.Module, got {}",
            module.type_name()
        )));
    };
    let target = parse_torch_device(&device, None)?;
    let dev = target.device();
    let device = target.value();
    let mut added = Vec::new();
    let mut outcome = Ok(Value::None);
    for p in all_params(&core) {
        if p.list_ctx().contains(&dev) {
            continue;
        }
        let mut original = param_value(it, Dialect::Torch, &p);
        if detach {
            let f = it.get_attr(&original, "detach")?;
            original = it.call_value(&f, Args::default())?;
        }
        match &to_device(it, &original, &device) {
            Ok(Value::Array(copy)) => {
                p.push_replica(copy.array.clone());
                added.push(p);
            }
            Ok(_) => {}
            Err(e) => {
                outcome = Err(e.clone());
                break;
            }
        }
    }
    if outcome.is_ok() {
        let before = it.state_mut().nn.replica_device.replace(dev);
        outcome = it.call_value(&f, Args::new("fn", vec![]));
        it.state_mut().nn.replica_device = before;
    }
    for p in added {
        p.pop_replica();
    }
    outcome
}

/// The names of `torch.nn.parallel` written in the language, loaded on first use.
pub const LIBRARY_NAMES: &[&str] = &[
    "DataParallel",
    "data_parallel",
    "replicate",
    "parallel_apply",
];

/// `torch.nn.parallel.data_parallel`'s `name` (a module's `__getattr__` for `LIBRARY_NAMES`).
pub fn library_attr(it: &mut dyn Interpreter, name: &str) -> Result<Option<Value>, Exc> {
    if !LIBRARY_NAMES.contains(&name) {
        return Ok(None);
    }
    let m = it.import("torch.nn.parallel.data_parallel")?;
    // As PyTorch's `from .data_parallel import ...` in `torch/nn/parallel/__init__.py`: the
    // names become the package's own (`data_parallel` is the function, not the submodule), in
    // `torch.nn.parallel` as imported and as reached through `torch.nn`.
    let mut packages = vec![it.import("torch.nn.parallel")?];
    if let Some(Value::Module(p)) = &it.import("torch.nn")?.get("parallel") {
        packages.push(p.clone());
    }
    for package in packages {
        for n in LIBRARY_NAMES {
            if let Some(v) = m.get(n) {
                package.set(n, v);
            }
        }
    }
    Ok(m.get(name))
}

/// `torch.nn.parallel`.
pub fn build() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "torch.nn.parallel",
        "splitting a batch across GPUs and bringing the results back",
    ));
    m.set(
        "scatter",
        builtin(
            "scatter",
            "scatter(inputs, target_gpus, dim=0): inputs cut along dim into one piece per GPU (as torch.chunk cuts), piece i on target_gpus[i]; a tensor gives a tuple of tensors.",
            scatter,
        ),
    );
    m.set(
        "gather",
        builtin(
            "gather",
            "gather(outputs, target_device, dim=0): the tensors in outputs concatenated along dim on target_device (-1 or 'cpu' for the host).",
            gather,
        ),
    );
    m.set(
        "_replica_call",
        builtin(
            "_replica_call",
            "_replica_call(module, device, fn): fn() run as the replica of module on device runs (parameters and buffers copied there for the call, gradients flowing back).",
            replica_call,
        ),
    );
    m.set(
        "__getattr__",
        builtin("__getattr__", "", |it, mut a| {
            let name = a.required(0, "name")?;
            let text = crate::object::format::to_str(it, &name)?;
            library_attr(it, &text)?.ok_or_else(|| {
                Exc::new(
                    crate::object::error::ExcKind::AttributeError,
                    format!("module 'torch.nn.parallel' has no attribute '{text}'"),
                )
            })
        }),
    );
    m
}
