//! The built-in libraries, apart from the interpreter core (`crate::eval`) as CPython keeps its
//! modules apart from its interpreter. They hold no Python: `import mxnet as mx`, `import torch`,
//! `import time` bind devarray's own namespaces. Each registers its functions, classes and
//! constants through the object layer's small API (`crate::object::{builtin, method}`,
//! `Module::set`) and calls back into the running program only through
//! `crate::object::Interpreter`.
//!
//!
//! The libraries are layered, each a folder, and a folder names only those below it
//! (`tests/layers.rs` keeps it so):
//!
//! ```text
//! dialects (mxnet, torch, numpy)   notebook (magics, help, IPython)
//!              \                     /
//!               array   (the array API every dialect shares)
//!                 |
//!               python  (built-ins, classes, str, files, the standard modules)
//! ```
//!
//! This file sits above them all: `import` finds a module in whichever layer builds it, and
//! `install` fills a new session's built-ins and connects the layers' hooks (where a lower layer
//! must reach a value of an upper one, the upper layer registers a function into it here).

pub mod array;
pub mod dialects;
pub mod library;
pub mod matplotlib;
pub mod notebook;
pub mod python;

use std::rc::Rc;

use crate::object::value::{BuiltinFn, Flavor, Module};
use crate::object::{builtin, Exc, ExcKind, Interpreter, NameMap, Value};

use array::arrays::{self, NATIVE};
use array::devices;
use dialects::{mxnet, numpy, torch};
use notebook::{ipython, magic};
use python::{builtins, stdlib};

/// Import a module by dotted name, building it on first use.
pub fn import(it: &mut dyn Interpreter, dotted: &str) -> Result<Rc<Module>, Exc> {
    if let Some(m) = it.state_mut().modules.get(dotted) {
        return Ok(m.clone());
    }
    // NumPy's submodules are attributes of `numpy` built with it: importing one by name gives
    // that object (one `numpy.random` generator, whichever way a program reaches it).
    if let Some(("numpy", child)) = dotted.split_once('.') {
        let parent = import(it, "numpy")?;
        if let Some(Value::Module(sub)) = &parent.get(child) {
            it.state_mut()
                .modules
                .insert(dotted.to_string(), sub.clone());
            return Ok(sub.clone());
        }
    }
    if let Some(source) = library::find(dotted) {
        return import_source(it, source);
    }
    let m = build(dotted).ok_or_else(|| {
        let top = dotted.split('.').next().unwrap_or(dotted);
        let hint = match top {
            "torch" if dotted.starts_with("torch.distributions") => ". devarray has no torch.distributions (Multinomial, Normal, ...): sample with torch.rand, torch.randn, torch.normal or torch.randint, and count outcomes yourself",
            "d2l" => ". devarray's d2l has the PyTorch and MXNet versions: from d2l import torch as d2l, or from d2l import mxnet as d2l",
            "pandas" => ". devarray has no pandas: read a CSV file with open() and line.split(','), then make an array of the numbers (np.array, torch.tensor)",
            "torchvision" => ". devarray's torchvision has datasets (FashionMNIST, read from local files) and transforms (ToTensor, Normalize, Compose, Lambda); there are no pretrained models, since nothing is downloaded",
            _ => "",
        };
        let hint = if hint.is_empty() {
            // The standard modules, in Rust or in the language (`argparse`).
            let mut names: Vec<&str> = stdlib::NAMES.to_vec();
            names.extend(
                library::SOURCES
                    .iter()
                    .map(|s| s.name)
                    .filter(|n| !n.contains('.') && *n != "d2l"),
            );
            names.sort_unstable();
            format!(
                ". Built-in modules: mxnet (nd, np, npx, gluon, autograd), torch (nn, cuda), numpy, {}",
                names.join(", ")
            )
        } else {
            hint.to_string()
        };
        Exc::new(
            ExcKind::ModuleNotFoundError,
            format!("No module named '{dotted}'{hint}"),
        )
    })?;
    it.state_mut().modules.insert(dotted.to_string(), m.clone());
    if dotted == "matplotlib.pyplot" {
        matplotlib::init_pyplot(it, &m)?;
    }
    if dotted == "torch" {
        // PyTorch's layers initialize from its own generator (torch.manual_seed's).
        it.state_mut()
            .rt
            .set_sampler(crate::runtime::Sampler::Torch);
    }
    // A standard module's submodules built with it (`os.path`) are the same objects when
    // imported by name, as in CPython.
    if stdlib::NAMES.contains(&dotted) {
        let prefix = format!("{dotted}.");
        let subs: Vec<Rc<Module>> = m
            .attrs
            .borrow()
            .values()
            .filter_map(|v| match v {
                Value::Module(s) if s.name.starts_with(&prefix) => Some(s.clone()),
                _ => None,
            })
            .collect();
        for s in subs {
            it.state_mut().modules.entry(s.name.clone()).or_insert(s);
        }
    }
    // Submodules are reachable as attributes of their parent once imported.
    if let Some((parent, child)) = dotted.rsplit_once('.') {
        if let Ok(p) = import(it, parent) {
            if p.get(child).is_none() {
                p.set(child, Value::Module(m.clone()));
            }
        }
    }
    Ok(m)
}

/// A library written in the language: registered before its body runs (so an import cycle
/// finds it, as in CPython), dropped again if the body fails, so the next import retries.
fn import_source(
    it: &mut dyn Interpreter,
    source: &'static library::SourceModule,
) -> Result<Rc<Module>, Exc> {
    let dotted = source.name;
    let m = Rc::new(Module::new(dotted, ""));
    m.set("__name__", Value::str(dotted));
    m.set(
        "__file__",
        Value::str(&format!("<devarray>/{}", source.file)),
    );
    it.state_mut().modules.insert(dotted.to_string(), m.clone());
    if let Some((parent, child)) = dotted.rsplit_once('.') {
        match import(it, parent) {
            Ok(p) => p.set(child, Value::Module(m.clone())),
            Err(e) => {
                it.state_mut().modules.remove(dotted);
                return Err(e);
            }
        }
    }
    if let Err(e) = it.run_module(&m, source.text) {
        it.state_mut().modules.remove(dotted);
        return Err(e);
    }
    Ok(m)
}

/// The module named `dotted`, built fresh; None when devarray has no such module.
fn build(dotted: &str) -> Option<Rc<Module>> {
    torch::build(dotted)
        .or_else(|| mxnet::build(dotted))
        .or_else(|| numpy::build(dotted))
        .or_else(|| stdlib::build(dotted))
        .or_else(|| ipython::build(dotted))
        .or_else(|| matplotlib::build(dotted))
}

/// Python's built-ins and the native globals, into a session's builtins table.
pub fn install(b: &mut NameMap<Value>) {
    connect_layers();
    builtins::install(b);
    install_native(b);
}

/// Registers each upper layer's providers into the hooks of the layers below it
/// (`python::hooks`, `array::hooks`). The same functions every time: a process's later
/// sessions find them set.
fn connect_layers() {
    python::hooks::ARRAYS.register(arrays::protocol());
    let _ = crate::object::ops::NUMPY_SCALAR.set(crate::modules::array::scalars::from_array);
    let _ = crate::object::ops::NUMPY_FP_CHECK
        .set(crate::modules::dialects::numpy::fp_errors::check_values);
    python::hooks::HELP.register(|it, v| notebook::pydoc::describe(it, "", v, 0, false));
    torch::register_hooks();
    mxnet::selection::register_hooks();
}

/// The native globals: devices, the d2l helpers and the array functions.
fn install_native(b: &mut NameMap<Value>) {
    let fns: &[(&'static str, &'static str, BuiltinFn)] = &[
        (
            "cpu",
            "cpu(device_id=0): the host (all cores and host memory).",
            devices::cpu,
        ),
        (
            "gpu",
            "gpu(device_id=0): one GPU and its memory.",
            devices::gpu,
        ),
        (
            "num_gpus",
            "num_gpus(): how many GPUs this machine has (simulated ones included).",
            devices::num_gpus,
        ),
        (
            "try_gpu",
            "try_gpu(i=0): gpu(i) if it exists, else cpu().",
            devices::try_gpu,
        ),
        (
            "try_all_gpus",
            "try_all_gpus(): all GPUs, or [cpu()] when there is none.",
            devices::try_all_gpus,
        ),
        (
            "devices",
            "devices(): the device table (like nvidia-smi): memory, live arrays, copies.",
            magic::devices_fn,
        ),
    ];
    for (name, doc, f) in fns {
        b.insert(Rc::from(*name), builtin(name, doc, *f));
    }
    for (name, doc, f) in arrays::namespace_fns::<NATIVE>() {
        if !b.contains_key(name) {
            b.insert(Rc::from(name), builtin(name, doc, f));
        }
    }
    for d in [
        crate::runtime::DType::Float32,
        crate::runtime::DType::Float64,
        crate::runtime::DType::Int32,
        crate::runtime::DType::Int64,
    ] {
        b.insert(Rc::from(d.name()), Value::DType(d, Flavor::Nd));
    }
    b.insert(
        Rc::from("random"),
        Value::Module(arrays::random_module::<NATIVE>("random")),
    );
}
