//! Built-in modules. They hold no Python: `import mxnet as mx`, `from mxnet
//! import nd, np, npx`, `import time`, `import sys` bind devarray's own
//! namespaces so that the chapter's cells run as written. The native globals
//! (`ones(2, 3) @ gpu(0)`) are installed here too.

use std::rc::Rc;

use crate::runtime::Device;

use super::arrays::{self, NATIVE, ND, NP};
use super::error::{Exc, ExcKind};
use super::interp::{builtin, Interp};
use super::ops::as_i64;
use super::value::{Args, Module, Value};

/// Import a module by dotted name, building it on first use.
pub fn import(it: &mut Interp, dotted: &str) -> Result<Rc<Module>, Exc> {
    if let Some(m) = it.st.modules.get(dotted) {
        return Ok(m.clone());
    }
    let m = build(dotted).ok_or_else(|| {
        let top = dotted.split('.').next().unwrap_or(dotted);
        let hint = match top {
            "numpy" => ". devarray has no Python packages; use `from mxnet import np` (MXNet's numpy) or the native functions (ones, zeros, array, ...)",
            "d2l" => ". The d2l helpers are built in: try_gpu, try_all_gpus, num_gpus, cpu, gpu",
            _ => ". Built-in modules: mxnet (nd, np, npx), torch, time, sys, math",
        };
        Exc::new(
            ExcKind::ModuleNotFoundError,
            format!("No module named '{dotted}'{hint}"),
        )
    })?;
    it.st.modules.insert(dotted.to_string(), m.clone());
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

fn module(name: &str, doc: &'static str) -> Rc<Module> {
    Rc::new(Module::new(name, doc))
}

fn build(dotted: &str) -> Option<Rc<Module>> {
    if let Some(m) = super::torch::build(dotted) {
        return Some(m);
    }
    Some(match dotted {
        "mxnet" => {
            let m = module("mxnet", "MXNet's API on the devarray runtime");
            set_device_fns(&m);
            m.set("nd", Value::Module(build("mxnet.nd")?));
            m.set("ndarray", Value::Module(build("mxnet.nd")?));
            m.set("np", Value::Module(build("mxnet.np")?));
            m.set("numpy", Value::Module(build("mxnet.np")?));
            m.set("npx", Value::Module(build("mxnet.npx")?));
            m.set("context", Value::Module(build("mxnet.context")?));
            m.set(
                "random",
                Value::Module(arrays::random_module::<ND>("mxnet.random")),
            );
            m.set("base", Value::Module(build("mxnet.base")?));
            m.set("MXNetError", Value::ExcType(ExcKind::MXNetError));
            m.set("__version__", Value::str("1.9.1 (devarray)"));
            m.set("gluon", Value::Module(build("mxnet.gluon")?));
            m.set("autograd", Value::Module(build("mxnet.autograd")?));
            m.set("init", Value::Module(build("mxnet.init")?));
            m
        }
        "mxnet.base" => {
            let m = module("mxnet.base", "MXNet's base definitions");
            m.set("MXNetError", Value::ExcType(ExcKind::MXNetError));
            m
        }
        "mxnet.nd" | "mxnet.ndarray" => {
            let m = module("mxnet.ndarray", "MXNet's legacy NDArray API");
            arrays::fill_namespace::<ND>(&m);
            m.set(
                "random",
                Value::Module(arrays::random_module::<ND>("mxnet.ndarray.random")),
            );
            m
        }
        "mxnet.np" | "mxnet.numpy" => {
            let m = module("mxnet.numpy", "MXNet's numpy-compatible API");
            arrays::fill_namespace::<NP>(&m);
            m.set(
                "random",
                Value::Module(arrays::random_module::<NP>("mxnet.numpy.random")),
            );
            m.set("pi", Value::Float(std::f64::consts::PI));
            m.set("e", Value::Float(std::f64::consts::E));
            m
        }
        "mxnet.npx" | "mxnet.numpy_extension" => {
            let m = module("mxnet.numpy_extension", "MXNet's numpy extensions");
            set_device_fns(&m);
            m.set(
                "set_np",
                builtin(
                    "set_np",
                    "set_np(): switch to MXNet's numpy mode (arrays print as array([...])).",
                    set_np,
                ),
            );
            m.set(
                "reset_np",
                builtin(
                    "reset_np",
                    "reset_np(): back to the legacy NDArray mode.",
                    reset_np,
                ),
            );
            m.set(
                "waitall",
                builtin(
                    "waitall",
                    "waitall(): block until all pending computation is done.",
                    arrays::waitall,
                ),
            );
            m
        }
        "mxnet.context" => {
            let m = module("mxnet.context", "devices (contexts)");
            set_device_fns(&m);
            m
        }
        "time" => {
            let m = module("time", "time access");
            m.set(
                "time",
                builtin(
                    "time",
                    "time(): seconds since the epoch, as a float.",
                    time_time,
                ),
            );
            m.set(
                "perf_counter",
                builtin(
                    "perf_counter",
                    "perf_counter(): a monotonic clock in seconds.",
                    perf_counter,
                ),
            );
            m.set(
                "sleep",
                builtin("sleep", "sleep(seconds): pause (interruptible).", sleep),
            );
            m
        }
        "sys" => {
            let m = module("sys", "system streams and information");
            for (name, doc, f) in [
                (
                    "sys.stdout",
                    "standard output",
                    write_stdout as super::value::BuiltinFn,
                ),
                ("sys.stderr", "standard error", write_stderr),
            ] {
                let s = module(name, doc);
                s.set(
                    "write",
                    builtin("write", "write(text): write text to the stream.", f),
                );
                s.set(
                    "flush",
                    builtin("flush", "flush(): no-op; output is streamed.", |_, _| {
                        Ok(Value::None)
                    }),
                );
                m.set(name.trim_start_matches("sys."), Value::Module(s));
            }
            m.set(
                "version",
                Value::str(concat!("devarray ", env!("CARGO_PKG_VERSION"))),
            );
            m.set("argv", Value::list(vec![Value::str("devarray")]));
            m
        }
        "math" => {
            let m = module("math", "mathematical functions");
            m.set("pi", Value::Float(std::f64::consts::PI));
            m.set("e", Value::Float(std::f64::consts::E));
            m.set("inf", Value::Float(f64::INFINITY));
            m.set("nan", Value::Float(f64::NAN));
            let fns: [(&'static str, super::value::BuiltinFn); 12] = [
                ("sqrt", |_, a| math1(a, f64::sqrt)),
                ("exp", |_, a| math1(a, f64::exp)),
                ("log", |_, a| math1(a, f64::ln)),
                ("log2", |_, a| math1(a, f64::log2)),
                ("log10", |_, a| math1(a, f64::log10)),
                ("tanh", |_, a| math1(a, f64::tanh)),
                ("sin", |_, a| math1(a, f64::sin)),
                ("cos", |_, a| math1(a, f64::cos)),
                ("fabs", |_, a| math1(a, f64::abs)),
                ("floor", |_, a| math_int(a, f64::floor)),
                ("ceil", |_, a| math_int(a, f64::ceil)),
                ("isnan", |_, mut a| {
                    let x = num(&a.required(0, "x")?)?;
                    Ok(Value::Bool(x.is_nan()))
                }),
            ];
            for (name, f) in fns {
                m.set(name, builtin(name, "math function", f));
            }
            m
        }
        other => return super::gluon::build(other),
    })
}

fn num(v: &Value) -> Result<f64, Exc> {
    super::ops::as_f64(v)
        .ok_or_else(|| Exc::type_error(format!("must be a real number, not {}", v.type_name())))
}

fn math1(mut a: Args, f: fn(f64) -> f64) -> Result<Value, Exc> {
    let x = num(&a.required(0, "x")?)?;
    a.finish(1)?;
    let r = f(x);
    if r.is_nan() && !x.is_nan() {
        return Err(Exc::value_error("math domain error"));
    }
    Ok(Value::Float(r))
}

fn math_int(mut a: Args, f: fn(f64) -> f64) -> Result<Value, Exc> {
    let x = num(&a.required(0, "x")?)?;
    a.finish(1)?;
    let r = f(x);
    if !r.is_finite() || r.abs() > 9.2e18 {
        return Err(Exc::new(
            ExcKind::OverflowError,
            "cannot convert to an integer",
        ));
    }
    Ok(Value::Int(r as i64))
}

/// cpu/gpu/num_gpus in a module (mx, npx, mx.context).
fn set_device_fns(m: &Module) {
    m.set(
        "cpu",
        builtin(
            "cpu",
            "cpu(device_id=0): the host (all cores and host memory).",
            cpu,
        ),
    );
    m.set(
        "gpu",
        builtin("gpu", "gpu(device_id=0): one GPU and its memory.", gpu),
    );
    m.set(
        "num_gpus",
        builtin(
            "num_gpus",
            "num_gpus(): how many GPUs this machine has (simulated ones included).",
            num_gpus,
        ),
    );
    m.set(
        "current_context",
        builtin(
            "current_context",
            "current_context(): the default device.",
            current_device,
        ),
    );
}

/// The native globals: devices, the d2l helpers and the array functions.
pub fn install_native(b: &mut super::interp::NameMap<Value>) {
    let fns: &[(&'static str, &'static str, super::value::BuiltinFn)] = &[
        (
            "cpu",
            "cpu(device_id=0): the host (all cores and host memory).",
            cpu,
        ),
        ("gpu", "gpu(device_id=0): one GPU and its memory.", gpu),
        (
            "num_gpus",
            "num_gpus(): how many GPUs this machine has (simulated ones included).",
            num_gpus,
        ),
        (
            "try_gpu",
            "try_gpu(i=0): gpu(i) if it exists, else cpu().",
            try_gpu,
        ),
        (
            "try_all_gpus",
            "try_all_gpus(): all GPUs, or [cpu()] when there is none.",
            try_all_gpus,
        ),
        (
            "devices",
            "devices(): the device table (like nvidia-smi): memory, live arrays, copies.",
            super::magic::devices_fn,
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
        b.insert(
            Rc::from(d.name()),
            Value::DType(d, super::value::Flavor::Nd),
        );
    }
    b.insert(
        Rc::from("random"),
        Value::Module(arrays::random_module::<NATIVE>("random")),
    );
}

fn device_index(a: &mut Args) -> Result<usize, Exc> {
    match a.take(0, "device_id")? {
        None | Some(Value::None) => Ok(0),
        Some(v) => {
            let i = as_i64(&v).ok_or_else(|| {
                Exc::type_error(format!(
                    "device_id must be an integer, not {}",
                    v.type_name()
                ))
            })?;
            usize::try_from(i)
                .map_err(|_| Exc::value_error(format!("device_id must be >= 0, got {i}")))
        }
    }
}

fn cpu(_it: &mut Interp, mut a: Args) -> Result<Value, Exc> {
    let i = device_index(&mut a)?;
    a.finish(1)?;
    Ok(Value::Device(Device::cpu(i)))
}

fn gpu(_it: &mut Interp, mut a: Args) -> Result<Value, Exc> {
    let i = device_index(&mut a)?;
    a.finish(1)?;
    Ok(Value::Device(Device::gpu(i)))
}

fn num_gpus(it: &mut Interp, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Int(it.st.rt.num_gpus() as i64))
}

fn current_device(it: &mut Interp, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Device(it.st.default_device))
}

fn try_gpu(it: &mut Interp, mut a: Args) -> Result<Value, Exc> {
    let i = device_index(&mut a)?;
    a.finish(1)?;
    Ok(Value::Device(if i < it.st.rt.num_gpus() {
        Device::gpu(i)
    } else {
        Device::cpu(0)
    }))
}

fn try_all_gpus(it: &mut Interp, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let n = it.st.rt.num_gpus();
    Ok(Value::list(if n == 0 {
        vec![Value::Device(Device::cpu(0))]
    } else {
        (0..n).map(|i| Value::Device(Device::gpu(i))).collect()
    }))
}

fn set_np(it: &mut Interp, mut a: Args) -> Result<Value, Exc> {
    a.take_kw("shape");
    a.take_kw("array");
    a.take_kw("dtype");
    a.finish(0)?;
    it.st.np_mode = true;
    Ok(Value::None)
}

fn reset_np(it: &mut Interp, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    it.st.np_mode = false;
    Ok(Value::None)
}

fn time_time(_it: &mut Interp, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    Ok(Value::Float(t))
}

fn perf_counter(it: &mut Interp, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Float(it.st.started.elapsed().as_secs_f64()))
}

fn sleep(it: &mut Interp, mut a: Args) -> Result<Value, Exc> {
    let s = num(&a.required(0, "seconds")?)?;
    a.finish(1)?;
    if !(0.0..=1e9).contains(&s) {
        return Err(Exc::value_error(
            "sleep length must be a non-negative number of seconds",
        ));
    }
    // Sleep in slices so an interrupt is noticed promptly.
    let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(s);
    while std::time::Instant::now() < end {
        it.check_interrupt()?;
        let left = end.saturating_duration_since(std::time::Instant::now());
        std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
    }
    Ok(Value::None)
}

fn stream_text(mut a: Args) -> Result<String, Exc> {
    let v = a.required(0, "text")?;
    a.finish(1)?;
    match &v {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(Exc::type_error(format!(
            "write() argument must be str, not {}",
            other.type_name()
        ))),
    }
}

fn write_stdout(it: &mut Interp, a: Args) -> Result<Value, Exc> {
    let s = stream_text(a)?;
    it.out.stdout(&s);
    Ok(Value::Int(s.chars().count() as i64))
}

fn write_stderr(it: &mut Interp, a: Args) -> Result<Value, Exc> {
    let s = stream_text(a)?;
    it.out.stderr(&s);
    Ok(Value::Int(s.chars().count() as i64))
}
