//! Array files from the language: `npx.save`/`npx.load` (MXNet numpy mode), `nd.save`/`nd.load`
//! (legacy MXNet) and `torch.save`/`torch.load`, all in devarray's one array file format
//! (`nn::tensor_file`: safetensors).
//!
//! The arrays are the file's tensors; what holds them is the JSON tree under the metadata key
//! `devarray` (see README "Files"): lists, tuples, dicts (and `OrderedDict`s) nested as saved,
//! their keys, Python numbers, strings and None, and for each array its tensor name, its device
//! and its kind (MXNet, PyTorch, NumPy). Tensor names are the keys and indices on the way to the
//! array (`hidden.weight`, `0`, `opt.state.0.momentum`), so other safetensors readers see
//! sensible names. A file without the tree (another tool's safetensors, `save_parameters`)
//! loads as a dict of its tensors.
//!
//! Loading reads and checks the whole file, then builds the value: nothing outside the new value
//! changes, so a failure (a bad file, a device that does not exist, device memory) loses nothing.
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde_json::{json, Value as Json};

use crate::nn::tensor_file::{self, Hint, HostTensor, TensorFile, TensorFileError};
use crate::object::error::torch_error;
use crate::object::format::str_repr;
use crate::object::value::{ArrayValue, Dict, Flavor};
use crate::object::{hash_key, Args, Exc, ExcKind, Interpreter, Value};
use crate::runtime::{Array, Device, DeviceKind, RuntimeError};

use crate::modules::array::hooks::{self, DialectArrays};

/// Which API wrote or reads a file: it decides the accepted values, the error wording and the
/// kind of the arrays loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    Nd,
    Np,
    Torch,
}

impl Dialect {
    fn name(self) -> &'static str {
        match self {
            Dialect::Nd => "mxnet.nd",
            Dialect::Np => "mxnet.np",
            Dialect::Torch => "torch",
        }
    }
    fn hint(self) -> Hint {
        match self {
            Dialect::Nd => Hint {
                what: "devarray file",
                how: "nd.save(fname, data)",
            },
            Dialect::Np => Hint {
                what: "devarray file",
                how: "npx.save(file, arr)",
            },
            Dialect::Torch => Hint {
                what: "devarray file",
                how: "torch.save(obj, f)",
            },
        }
    }
    fn mxnet(self) -> bool {
        self != Dialect::Torch
    }
}

/// `format` metadata of the files this module writes.
const FORMAT: &str = "devarray";
/// The metadata key holding the JSON tree.
const TREE_KEY: &str = "devarray";
const VERSION: i64 = 1;
/// Containers nested deeper than this are refused (a list that contains itself would never end).
/// Each level is up to three levels of JSON, and the JSON reader stops at 128.
const MAX_DEPTH: usize = 32;

// ---- errors ---------------------------------------------------------------------------------

fn file_exc(d: Dialect, e: TensorFileError) -> Exc {
    match (d, e) {
        (Dialect::Torch, TensorFileError::NotFound(m)) => Exc::new(ExcKind::FileNotFoundError, m),
        (Dialect::Torch, TensorFileError::Os(m)) => Exc::new(ExcKind::OSError, m),
        (Dialect::Torch, TensorFileError::Invalid(m)) => Exc::new(ExcKind::RuntimeError, m),
        (Dialect::Torch, TensorFileError::Runtime(e)) => torch_error(e),
        (_, TensorFileError::Runtime(e)) => e.into(),
        (_, e) => Exc::new(ExcKind::MXNetError, e.to_string()),
    }
}

fn runtime_exc(d: Dialect, e: RuntimeError) -> Exc {
    match d {
        Dialect::Torch => torch_error(e),
        _ => e.into(),
    }
}

/// The path argument: a string, as every dialect's `save`/`load` takes it.
fn path_arg(d: Dialect, v: &Value, what: &str) -> Result<PathBuf, Exc> {
    match v {
        Value::Str(s) => Ok(PathBuf::from(&**s)),
        other => Err(Exc::type_error(match d {
            Dialect::Torch => format!(
                "torch.{what}: f must be a file name (a str such as 'x.pt'), not {}; devarray has no file objects",
                other.type_name()
            ),
            _ => format!("{what} required to be a string"),
        })),
    }
}

/// A file that is not there, as each framework words it (MXNet's from its file system layer,
/// PyTorch's from Python's `open`).
fn check_readable(d: Dialect, path: &Path) -> Result<(), Exc> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(match d {
            Dialect::Torch => Exc::new(
                ExcKind::FileNotFoundError,
                format!(
                    "[Errno 2] No such file or directory: {}",
                    str_repr(&path.to_string_lossy())
                ),
            ),
            _ => Exc::new(
                ExcKind::MXNetError,
                format!("Open \"{}\": No such file or directory", path.display()),
            ),
        }),
        Ok(meta) if meta.is_dir() && d == Dialect::Torch => Err(Exc::new(
            ExcKind::OSError,
            format!(
                "[Errno 21] Is a directory: {}",
                str_repr(&path.to_string_lossy())
            ),
        )),
        _ => Ok(()),
    }
}

/// A target whose directory is missing or that is a directory, as each framework words it.
fn check_writable(d: Dialect, path: &Path) -> Result<(), Exc> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(match d {
            Dialect::Torch => Exc::new(
                ExcKind::RuntimeError,
                format!("Parent directory {} does not exist.", dir.display()),
            ),
            _ => Exc::new(
                ExcKind::MXNetError,
                format!("Open \"{}\": No such file or directory", path.display()),
            ),
        });
    }
    if path.is_dir() {
        return Err(match d {
            Dialect::Torch => Exc::new(
                ExcKind::OSError,
                format!(
                    "[Errno 21] Is a directory: {}",
                    str_repr(&path.to_string_lossy())
                ),
            ),
            _ => Exc::new(
                ExcKind::MXNetError,
                format!("Open \"{}\": Is a directory", path.display()),
            ),
        });
    }
    Ok(())
}

// ---- saving ---------------------------------------------------------------------------------

fn device_text(d: Device) -> String {
    d.to_string()
}

fn parse_device(text: &str) -> Option<Device> {
    let (kind, rest) = text.split_once('(')?;
    let id = rest.strip_suffix(')')?.parse().ok()?;
    match kind {
        "cpu" => Some(Device::cpu(id)),
        "gpu" => Some(Device::gpu(id)),
        _ => None,
    }
}

fn kind_text(f: Flavor) -> &'static str {
    match f {
        Flavor::Nd => "nd",
        Flavor::Np => "np",
        Flavor::Torch => "torch",
        Flavor::Numpy => "numpy",
    }
}

/// Turns a value into the JSON tree and the list of tensors it names.
struct Encoder {
    dialect: Dialect,
    tensors: Vec<(String, Array)>,
    names: HashSet<String>,
    /// PyTorch keeps one tensor saved twice as one (pickle's memo): the same array loads as
    /// the same object. MXNet writes every entry on its own.
    seen: Vec<(Array, String)>,
}

impl Encoder {
    fn new(dialect: Dialect) -> Encoder {
        Encoder {
            dialect,
            tensors: Vec::new(),
            names: HashSet::new(),
            seen: Vec::new(),
        }
    }

    fn unique_name(&mut self, path: &str) -> String {
        let base = if path.is_empty() { "tensor" } else { path };
        let mut name = base.to_string();
        let mut n = 1;
        while self.names.contains(&name) {
            name = format!("{base}#{n}");
            n += 1;
        }
        self.names.insert(name.clone());
        name
    }

    fn array(&mut self, a: &ArrayValue, path: &str) -> Result<Json, Exc> {
        let node = |name: &str| json!({"tensor": name, "device": device_text(a.array.device()), "kind": kind_text(a.flavor)});
        if self.dialect == Dialect::Torch {
            if let Some((_, name)) = self.seen.iter().find(|(s, _)| s.same(&a.array)) {
                return Ok(node(name));
            }
        }
        // Streamed to the file when written (no host copy here).
        let name = self.unique_name(path);
        self.tensors.push((name.clone(), a.array.clone()));
        if self.dialect == Dialect::Torch {
            self.seen.push((a.array.clone(), name.clone()));
        }
        Ok(node(&name))
    }

    fn value(
        &mut self,
        it: &mut dyn Interpreter,
        v: &Value,
        path: &str,
        depth: usize,
    ) -> Result<Json, Exc> {
        if depth > MAX_DEPTH {
            return Err(Exc::new(
                ExcKind::RecursionError,
                format!("torch.save: containers nested more than {MAX_DEPTH} deep (does a list contain itself?); devarray files hold trees of lists, tuples and dicts"),
            ));
        }
        Ok(match v {
            Value::Array(a) => self.array(a, path)?,
            Value::None => json!({"none": null}),
            Value::Bool(b) => json!({"bool": b}),
            Value::Int(i) => json!({"int": i}),
            Value::Float(f) => json!({"float": format!("{f:?}")}),
            Value::Str(s) => json!({"str": &**s}),
            Value::List(items) => {
                let items = items.borrow().clone();
                json!({"list": self.items(it, &items, path, depth)?})
            }
            Value::Tuple(items) => json!({"tuple": self.items(it, items, path, depth)?}),
            Value::Dict(d) => {
                let entries = d.borrow().entries.clone();
                json!({"dict": self.entries(it, &entries, path, depth)?})
            }
            Value::Instance(inst) => {
                let state = inst.base_state.borrow().clone();
                match &state {
                    Value::Dict(d) => {
                        let entries = d.borrow().entries.clone();
                        let tag = if is_ordered_dict(v) { "odict" } else { "dict" };
                        json!({ tag: self.entries(it, &entries, path, depth)? })
                    }
                    Value::List(_) | Value::Tuple(_) => self.value(it, &state, path, depth)?,
                    _ => self.parameter(it, v, path)?,
                }
            }
            Value::Object(_) => self.parameter(it, v, path)?,
            other => return Err(unsupported(other)),
        })
    }

    /// A parameter (`nn.Parameter`, what `net.hidden.weight` is) is saved as its tensor.
    fn parameter(&mut self, it: &mut dyn Interpreter, v: &Value, path: &str) -> Result<Json, Exc> {
        let is_parameter = match v {
            Value::Object(o) => o.type_name() == "Parameter",
            Value::Instance(i) => {
                i.class().name.as_ref() == "Parameter"
                    || i.class()
                        .mro
                        .iter()
                        .any(|b| matches!(b, Value::Class(c) if c.name.as_ref() == "Parameter"))
            }
            _ => false,
        };
        if is_parameter && self.dialect == Dialect::Torch {
            if let Ok(Value::Array(a)) = it.get_attr(v, "data").as_ref() {
                return self.array(a, path);
            }
        }
        Err(unsupported(v))
    }

    fn items(
        &mut self,
        it: &mut dyn Interpreter,
        items: &[Value],
        path: &str,
        depth: usize,
    ) -> Result<Vec<Json>, Exc> {
        items
            .iter()
            .enumerate()
            .map(|(i, x)| self.value(it, x, &join(path, &i.to_string()), depth + 1))
            .collect()
    }

    fn entries(
        &mut self,
        it: &mut dyn Interpreter,
        entries: &[(Value, Value)],
        path: &str,
        depth: usize,
    ) -> Result<Vec<Json>, Exc> {
        let mut out = Vec::with_capacity(entries.len());
        for (k, x) in entries {
            let key = key_json(k)?;
            let label = key_label(k);
            out.push(json!([
                key,
                self.value(it, x, &join(path, &label), depth + 1)?
            ]));
        }
        Ok(out)
    }
}

/// A key's part of a tensor name: `0` for the int key 0, the text itself for a string.
fn key_label(k: &Value) -> String {
    match k {
        Value::Str(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Value::Tuple(items) => items.iter().map(key_label).collect::<Vec<_>>().join(","),
        _ => "None".to_string(),
    }
}

fn join(path: &str, part: &str) -> String {
    if path.is_empty() {
        part.to_string()
    } else {
        format!("{path}.{part}")
    }
}

/// A dict key: a number, a string, None, or a tuple of them.
fn key_json(k: &Value) -> Result<Json, Exc> {
    Ok(match k {
        Value::None => json!({"none": null}),
        Value::Bool(b) => json!({"bool": b}),
        Value::Int(i) => json!({"int": i}),
        Value::Float(f) => json!({"float": format!("{f:?}")}),
        Value::Str(s) => json!({"str": &**s}),
        Value::Tuple(items) => {
            json!({"tuple": items.iter().map(key_json).collect::<Result<Vec<_>, _>>()?})
        }
        other => {
            return Err(Exc::type_error(format!(
                "torch.save: devarray files keep dict keys that are str, int, float, bool, None or tuples of them, not {}",
                other.type_name()
            )))
        }
    })
}

fn unsupported(v: &Value) -> Exc {
    Exc::type_error(format!(
        "torch.save: devarray files hold tensors, numbers, strings, None and lists, tuples and dicts of them; cannot save a {} object",
        v.type_name()
    ))
}

fn is_ordered_dict(v: &Value) -> bool {
    let Value::Instance(inst) = v else {
        return false;
    };
    let named = |c: &crate::object::class::Class| {
        c.name.as_ref() == "OrderedDict" && c.module.as_ref() == "collections"
    };
    named(&inst.class())
        || inst
            .class()
            .mro
            .iter()
            .any(|b| matches!(b, Value::Class(c) if named(c)))
}

fn write_tree(d: Dialect, path: &Path, enc: Encoder, root: Json) -> Result<(), Exc> {
    let tree = json!({"version": VERSION, "dialect": d.name(), "root": root});
    let metadata = HashMap::from([
        (tensor_file::FORMAT_KEY.to_string(), FORMAT.to_string()),
        (TREE_KEY.to_string(), tree.to_string()),
    ]);
    tensor_file::save_named(path, &enc.tensors, metadata).map_err(|e| file_exc(d, e))
}

/// What MXNet's `save` accepts: an array, a list of arrays or a dict str -> array, with
/// MXNet 1.9.1's errors for anything else.
fn mx_save(it: &mut dyn Interpreter, mut a: Args, d: Dialect) -> Result<Value, Exc> {
    let (fname, data) = match d {
        Dialect::Nd => ("fname", "data"),
        _ => ("file", "arr"),
    };
    let file = a.required(0, fname)?;
    let value = a.required(1, data)?;
    a.finish(2)?;
    let path = path_arg(
        d,
        &crate::modules::python::stdlib::os::fspath_arg(it, &file)?,
        fname,
    )?;
    let is_array = |v: &Value| match v {
        Value::Array(x) => match d {
            Dialect::Np => x.flavor == Flavor::Np,
            _ => matches!(x.flavor, Flavor::Nd | Flavor::Np),
        },
        _ => false,
    };
    let (wrong_type, wrong_value) = match d {
        Dialect::Np => (
            "Only accepts dict str->ndarray or list of ndarrays",
            "data needs to either be a ndarray, dict of (str, ndarray) pairs or a list of ndarrays.",
        ),
        _ => (
            "save only accept dict str->NDArray or list of NDArray",
            "data needs to either be a NDArray, dict of str, NDArray pairs or a list of NDarrays.",
        ),
    };
    // A dict subclass (an OrderedDict) is a dict to MXNet too.
    let dict = match &value {
        Value::Instance(i) => match &*i.base_state.borrow() {
            Value::Dict(d) => Some(Value::Dict(d.clone())),
            _ => None,
        },
        _ => None,
    };
    let checked = dict.as_ref().unwrap_or(&value);
    // MXNet checks the values before it opens the file.
    let fits = match checked {
        v if is_array(v) => true,
        Value::List(items) => {
            if !items.borrow().iter().all(is_array) {
                return Err(Exc::type_error(wrong_type));
            }
            true
        }
        Value::Dict(entries) => {
            if !entries
                .borrow()
                .entries
                .iter()
                .all(|(k, v)| matches!(k, Value::Str(_)) && is_array(v))
            {
                return Err(Exc::type_error(wrong_type));
            }
            true
        }
        _ => false,
    };
    if !fits {
        return Err(Exc::value_error(wrong_value));
    }
    check_writable(d, &path)?;
    let mut enc = Encoder::new(d);
    let root = enc.value(it, checked, "", 0)?;
    write_tree(d, &path, enc, root)?;
    Ok(Value::None)
}

pub fn nd_save(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    mx_save(it, a, Dialect::Nd)
}

pub fn npx_save(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    mx_save(it, a, Dialect::Np)
}

/// `torch.save(obj, f)`: tensors, numbers, strings, None and containers of them.
pub fn torch_save(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let obj = a.required(0, "obj")?;
    let f = a.required(1, "f")?;
    // Pickle's knobs: nothing to choose in this format.
    a.take(2, "pickle_module")?;
    a.take(3, "pickle_protocol")?;
    a.take(4, "_use_new_zipfile_serialization")?;
    a.take(5, "_disable_byteorder_record")?;
    a.finish(6)?;
    let path = path_arg(
        Dialect::Torch,
        &crate::modules::python::stdlib::os::fspath_arg(it, &f)?,
        "save",
    )?;
    // PyTorch opens the file before it writes the object.
    check_writable(Dialect::Torch, &path)?;
    let mut enc = Encoder::new(Dialect::Torch);
    let root = enc.value(it, &obj, "", 0)?;
    write_tree(Dialect::Torch, &path, enc, root)?;
    Ok(Value::None)
}

// ---- loading --------------------------------------------------------------------------------

/// Where `torch.load` puts a tensor saved on a device.
enum MapLocation {
    /// Where it was saved.
    Saved,
    To(Device),
    /// Saved location ('cpu', 'cuda:1') -> new location; others stay.
    Table(Vec<(String, Device)>),
    /// `fn(tensor_on_cpu, location)`: a tensor, or None for the saved place.
    Call(Value),
}

/// PyTorch's spelling of devices (`'cuda:1'`), which the torch dialect registers.
fn torch_devices() -> Result<&'static DialectArrays, Exc> {
    hooks::dialect(Flavor::Torch)
        .ok_or_else(|| Exc::new(ExcKind::RuntimeError, "torch devices are not available"))
}

fn torch_location(d: Device) -> Result<String, Exc> {
    Ok((torch_devices()?.device_text)(d))
}

fn map_location_arg(v: Option<Value>) -> Result<MapLocation, Exc> {
    Ok(match &v {
        None | Some(Value::None) => MapLocation::Saved,
        Some(Value::Dict(d)) => {
            let mut table = Vec::new();
            for (k, x) in d.borrow().entries.iter() {
                let Value::Str(k) = k else {
                    return Err(Exc::type_error(format!(
                        "torch.load: the keys of a map_location dict are locations such as 'cuda:1' or 'cpu', not {}",
                        k.type_name()
                    )));
                };
                table.push((k.to_string(), (torch_devices()?.parse_device)(x)?));
            }
            MapLocation::Table(table)
        }
        Some(f @ (Value::Func(_) | Value::Builtin(_) | Value::Method(_))) => {
            MapLocation::Call(f.clone())
        }
        Some(spec) => MapLocation::To((torch_devices()?.parse_device)(spec)?),
    })
}

/// PyTorch's check of a CUDA location (`validate_cuda_device`), in its words.
fn torch_check_device(gpus: usize, d: Device) -> Result<Device, Exc> {
    if d.kind == DeviceKind::Gpu {
        if gpus == 0 {
            return Err(Exc::new(
                ExcKind::RuntimeError,
                "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your storages to the CPU.",
            ));
        }
        if d.id >= gpus {
            return Err(Exc::new(
                ExcKind::RuntimeError,
                format!(
                    "Attempting to deserialize object on CUDA device {} but torch.cuda.device_count() is {gpus}. Please use torch.load with map_location to map your storages to an existing device.",
                    d.id
                ),
            ));
        }
    }
    Ok(d)
}

/// Builds the value of a checked file.
struct Decoder<'a> {
    dialect: Dialect,
    path: &'a Path,
    file: &'a TensorFile,
    map: MapLocation,
    built: HashMap<String, Value>,
}

impl Decoder<'_> {
    fn bad(&self, why: impl std::fmt::Display) -> Exc {
        file_exc(
            self.dialect,
            TensorFileError::Invalid(format!(
                "'{}' has a devarray structure that cannot be read: {why}. It may have been written by something else; save it again with {}",
                self.path.display(),
                self.dialect.hint().how
            )),
        )
    }

    fn flavor(&self, kind: Option<&str>) -> Flavor {
        match self.dialect {
            Dialect::Nd => Flavor::Nd,
            Dialect::Np => Flavor::Np,
            Dialect::Torch if kind == Some("numpy") => Flavor::Numpy,
            Dialect::Torch => Flavor::Torch,
        }
    }

    fn tensor(&mut self, it: &mut dyn Interpreter, node: &Json) -> Result<Value, Exc> {
        let name = node
            .get("tensor")
            .and_then(Json::as_str)
            .ok_or_else(|| self.bad("a tensor without a name"))?;
        if let Some(v) = self.built.get(name) {
            return Ok(v.clone());
        }
        let t = self
            .file
            .get(name)
            .ok_or_else(|| self.bad(format!("it names tensor '{name}', which the file lacks")))?;
        let saved = match node.get("device").and_then(Json::as_str) {
            None => Device::cpu(0),
            Some(text) => {
                parse_device(text).ok_or_else(|| self.bad(format!("unknown device '{text}'")))?
            }
        };
        let flavor = self.flavor(node.get("kind").and_then(Json::as_str));
        let gpus = it.state().rt.num_gpus();
        let value = match (self.dialect, &self.map) {
            // NumPy arrays live on the host.
            (_, _) if flavor == Flavor::Numpy => self.make(it, t, Device::cpu(0), flavor)?,
            // MXNet puts an array back on its saved context, or on the CPU when there is no GPU.
            (d, _) if d.mxnet() => {
                let target = if saved.kind == DeviceKind::Gpu && gpus == 0 {
                    Device::cpu(0)
                } else {
                    saved
                };
                self.make(it, t, target, flavor)?
            }
            (_, MapLocation::Saved) => {
                let target = torch_check_device(gpus, saved)?;
                self.make(it, t, target, flavor)?
            }
            (_, MapLocation::To(d)) => {
                let target = torch_check_device(gpus, *d)?;
                self.make(it, t, target, flavor)?
            }
            (_, MapLocation::Table(table)) => {
                let loc = torch_location(saved)?;
                let target = table
                    .iter()
                    .find(|(k, _)| *k == loc)
                    .map_or(saved, |(_, d)| *d);
                let target = torch_check_device(gpus, target)?;
                self.make(it, t, target, flavor)?
            }
            (_, MapLocation::Call(f)) => {
                let f = f.clone();
                let on_cpu = self.make(it, t, Device::cpu(0), flavor)?;
                let args = Args::new(
                    "map_location",
                    vec![on_cpu, Value::str(&torch_location(saved)?)],
                );
                match &it.call_value(&f, args)? {
                    Value::None => {
                        let target = torch_check_device(gpus, saved)?;
                        self.make(it, t, target, flavor)?
                    }
                    Value::Array(a) => Value::Array(ArrayValue {
                        array: a.array.clone(),
                        flavor,
                    }),
                    other => {
                        return Err(Exc::type_error(format!(
                            "torch.load: map_location returned {}; it must return a tensor (or None to keep the saved location)",
                            other.type_name()
                        )))
                    }
                }
            }
        };
        self.built.insert(name.to_string(), value.clone());
        Ok(value)
    }

    fn make(
        &self,
        it: &mut dyn Interpreter,
        t: &HostTensor,
        device: Device,
        flavor: Flavor,
    ) -> Result<Value, Exc> {
        let rt = &it.state().rt;
        let array = rt
            .from_host(t.data.clone(), &t.shape, device)
            .map_err(|e| runtime_exc(self.dialect, e))?;
        Ok(Value::Array(ArrayValue { array, flavor }))
    }

    fn value(&mut self, it: &mut dyn Interpreter, node: &Json, depth: usize) -> Result<Value, Exc> {
        if depth > MAX_DEPTH + 1 {
            return Err(self.bad("containers nested too deep"));
        }
        let obj = node
            .as_object()
            .filter(|o| !o.is_empty())
            .ok_or_else(|| self.bad("a node that is not an object"))?;
        if obj.contains_key("tensor") {
            return self.tensor(it, node);
        }
        let (tag, body) = obj.iter().next().ok_or_else(|| self.bad("an empty node"))?;
        Ok(match tag.as_str() {
            "list" | "tuple" => {
                let items = body
                    .as_array()
                    .ok_or_else(|| self.bad(format!("a {tag} that is not an array")))?;
                let mut out = Vec::with_capacity(items.len());
                for x in items {
                    out.push(self.value(it, x, depth + 1)?);
                }
                if tag == "list" {
                    Value::list(out)
                } else {
                    Value::tuple(out)
                }
            }
            "dict" | "odict" => {
                let entries = body
                    .as_array()
                    .ok_or_else(|| self.bad(format!("a {tag} that is not an array")))?;
                let mut d = Dict::default();
                for e in entries {
                    let pair = e
                        .as_array()
                        .filter(|p| p.len() == 2)
                        .ok_or_else(|| self.bad("a dict entry that is not a [key, value] pair"))?;
                    let k = self.value(it, &pair[0], depth + 1)?;
                    let v = self.value(it, &pair[1], depth + 1)?;
                    d.insert(hash_key(&k)?, k, v);
                }
                let d = Value::Dict(Rc::new(std::cell::RefCell::new(d)));
                if tag == "odict" {
                    ordered_dict(it, d)?
                } else {
                    d
                }
            }
            "none" => Value::None,
            "bool" => Value::Bool(body.as_bool().ok_or_else(|| self.bad("a bad bool"))?),
            "int" => Value::Int(body.as_i64().ok_or_else(|| self.bad("a bad int"))?),
            "float" => Value::Float(
                body.as_str()
                    .and_then(|s| s.parse::<f64>().ok())
                    .ok_or_else(|| self.bad("a bad float"))?,
            ),
            "str" => Value::str(body.as_str().ok_or_else(|| self.bad("a bad str"))?),
            other => return Err(self.bad(format!("an unknown node '{other}'"))),
        })
    }
}

/// A `collections.OrderedDict` holding the dict `d` (what `torch.load` gives for a saved
/// OrderedDict, and what a `state_dict()` returns).
pub fn ordered_dict(it: &mut dyn Interpreter, d: Value) -> Result<Value, Exc> {
    let m = it.import("collections")?;
    match &m.get("OrderedDict") {
        Some(Value::Class(c)) => Ok(crate::modules::python::stdlib::new_instance(c, d)),
        _ => Ok(d),
    }
}

/// The tree of a file: its own, or for a file without one (another writer's safetensors,
/// `save_parameters`) a dict of its tensors on the CPU in file order.
fn tree_of(d: Dialect, path: &Path, file: &TensorFile) -> Result<Json, Exc> {
    match file.metadata.get(TREE_KEY) {
        Some(text) => {
            let tree: Json = serde_json::from_str(text).map_err(|e| {
                file_exc(
                    d,
                    TensorFileError::Invalid(format!(
                        "'{}' has devarray metadata that is not valid JSON ({e}). It may have been written by something else; save it again with {}",
                        path.display(),
                        d.hint().how
                    )),
                )
            })?;
            let version = tree.get("version").and_then(Json::as_i64).unwrap_or(0);
            if version > VERSION {
                return Err(file_exc(
                    d,
                    TensorFileError::Invalid(format!(
                        "'{}' was written by a newer devarray (format version {version}; this one reads {VERSION}); load it with that version",
                        path.display()
                    )),
                ));
            }
            Ok(tree.get("root").cloned().unwrap_or(Json::Null))
        }
        None => Ok(
            json!({"dict": file.tensors.iter().map(|t| json!([{"str": t.name}, {"tensor": t.name}])).collect::<Vec<_>>()}),
        ),
    }
}

fn read_file(d: Dialect, path: &Path) -> Result<(TensorFile, Json), Exc> {
    check_readable(d, path)?;
    let file = tensor_file::read(path, d.hint()).map_err(|e| file_exc(d, e))?;
    let root = tree_of(d, path, &file)?;
    Ok((file, root))
}

fn is_tensor(node: &Json) -> bool {
    node.get("tensor").is_some()
}

fn is_str_key(pair: &Json) -> bool {
    pair.get(0).and_then(|k| k.get("str")).is_some()
}

/// MXNet's `load`: a list of arrays, or a dict str -> array (an empty dict comes back as an
/// empty list, as MXNet gives it).
fn mx_load(it: &mut dyn Interpreter, mut a: Args, d: Dialect) -> Result<Value, Exc> {
    let fname = if d == Dialect::Nd { "fname" } else { "file" };
    let file = a.required(0, fname)?;
    a.finish(1)?;
    let path = path_arg(
        d,
        &crate::modules::python::stdlib::os::fspath_arg(it, &file)?,
        fname,
    )?;
    if let Some(loaded) = mxnet_file(it, &path, d)? {
        return Ok(loaded);
    }
    let (tf, root) = read_file(d, &path)?;
    let obj = root.as_object().and_then(|o| o.iter().next());
    let root = match obj {
        _ if is_tensor(&root) => json!({"list": [root]}),
        Some((tag, body)) if tag == "list" || tag == "tuple" => {
            let items = body.as_array().cloned().unwrap_or_default();
            if !items.iter().all(is_tensor) {
                return Err(not_mxnet(&path));
            }
            json!({ "list": items })
        }
        Some((tag, body)) if tag == "dict" || tag == "odict" => {
            let entries = body.as_array().cloned().unwrap_or_default();
            if entries.is_empty() {
                json!({"list": []})
            } else if entries
                .iter()
                .all(|e| is_str_key(e) && e.get(1).is_some_and(is_tensor))
            {
                json!({ "dict": entries })
            } else {
                return Err(not_mxnet(&path));
            }
        }
        _ => return Err(not_mxnet(&path)),
    };
    let mut dec = Decoder {
        dialect: d,
        path: &path,
        file: &tf,
        map: MapLocation::Saved,
        built: HashMap::new(),
    };
    dec.value(it, &root, 0)
}

/// A file real MXNet wrote (`nd.save` of a list or a dict of arrays), as MXNet's `load` gives
/// it; None for any other file (devarray's own format is read by the caller).
fn mxnet_file(it: &mut dyn Interpreter, path: &Path, d: Dialect) -> Result<Option<Value>, Exc> {
    use super::mxnet_params::{is_mxnet_params, read_mxnet_params};
    let mut head = [0u8; 8];
    let is_mx = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && is_mxnet_params(&head);
    if !is_mx {
        return Ok(None);
    }
    let bytes = std::fs::read(path)
        .map_err(|e| Exc::new(ExcKind::OSError, format!("{}: {e}", path.display())))?;
    let flavor = if d == Dialect::Np {
        Flavor::Np
    } else {
        Flavor::Nd
    };
    let arrays = read_mxnet_params(&bytes, &path.display().to_string())?;
    let named = arrays.first().is_some_and(|(name, _, _)| !name.is_empty());
    let mut items = Vec::with_capacity(arrays.len());
    for (name, shape, data) in arrays {
        let a = it.state().rt.from_host(data, &shape, Device::cpu(0))?;
        items.push((name, crate::object::ops::wrap(a, flavor)));
    }
    if !named {
        return Ok(Some(Value::list(
            items.into_iter().map(|(_, v)| v).collect(),
        )));
    }
    let mut dict = Dict::default();
    for (name, v) in items {
        let key = Value::str(&name);
        dict.insert(hash_key(&key)?, key, v);
    }
    Ok(Some(Value::Dict(Rc::new(std::cell::RefCell::new(dict)))))
}

fn not_mxnet(path: &Path) -> Exc {
    Exc::new(
        ExcKind::MXNetError,
        format!(
            "'{}' holds more than MXNet's load returns (one array, a list of arrays or a dict str -> array): it was saved with torch.save; load it with torch.load",
            path.display()
        ),
    )
}

pub fn nd_load(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    mx_load(it, a, Dialect::Nd)
}

pub fn npx_load(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    mx_load(it, a, Dialect::Np)
}

/// `torch.load(f, map_location=None, weights_only=...)`.
pub fn torch_load(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let f = a.required(0, "f")?;
    let map = a.take(1, "map_location")?;
    // The file holds no code: every object is safe to load, so weights_only changes nothing.
    a.take(2, "pickle_module")?;
    a.take_kw("weights_only");
    a.take_kw("mmap");
    a.take_kw("encoding");
    a.finish(3)?;
    let path = path_arg(
        Dialect::Torch,
        &crate::modules::python::stdlib::os::fspath_arg(it, &f)?,
        "load",
    )?;
    let map = map_location_arg(map)?;
    let (tf, root) = read_file(Dialect::Torch, &path)?;
    let mut dec = Decoder {
        dialect: Dialect::Torch,
        path: &path,
        file: &tf,
        map,
        built: HashMap::new(),
    };
    dec.value(it, &root, 0)
}
