//! Devices as the language names them: `cpu(i)`, `gpu(i)`, `num_gpus()`, `current_context()` and the
//! d2l helpers `try_gpu`, `try_all_gpus`, shared by the native globals and MXNet's modules.

use crate::object::ops::as_i64;
use crate::object::value::Module;
use crate::object::{builtin, Args, Exc, Interpreter, Value};
use crate::runtime::Device;

/// cpu/gpu/num_gpus in a module (mx, npx, mx.context).
pub fn set_device_fns(m: &Module) {
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

/// MXNet's `gpu_memory_info` (in `mx.context` and `npx`).
pub fn set_memory_info(m: &Module) {
    m.set(
        "gpu_memory_info",
        builtin(
            "gpu_memory_info",
            "gpu_memory_info(device_id=0): (free, total) bytes of one GPU's memory.",
            gpu_memory_info,
        ),
    );
}

fn gpu_memory_info(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let i = device_index(&mut a)?;
    a.finish(1)?;
    let device = Device::gpu(i);
    let rt = &it.state_mut().rt;
    rt.check_device(device)?;
    // Queued ops hold their inputs until they run; count what the program's arrays hold.
    rt.synchronize_device(device)?;
    let total = rt.memory_total(device).unwrap_or(0);
    let free = total.saturating_sub(rt.memory_used(device));
    Ok(Value::tuple(vec![
        Value::Int(free as i64),
        Value::Int(total as i64),
    ]))
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

pub fn cpu(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let i = device_index(&mut a)?;
    a.finish(1)?;
    Ok(Value::Device(Device::cpu(i)))
}

pub fn gpu(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let i = device_index(&mut a)?;
    a.finish(1)?;
    Ok(Value::Device(Device::gpu(i)))
}

pub fn num_gpus(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Int(it.state_mut().rt.num_gpus() as i64))
}

pub fn current_device(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Device(it.state_mut().default_device))
}

pub fn try_gpu(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let i = device_index(&mut a)?;
    a.finish(1)?;
    Ok(Value::Device(if i < it.state_mut().rt.num_gpus() {
        Device::gpu(i)
    } else {
        Device::cpu(0)
    }))
}

pub fn try_all_gpus(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let n = it.state_mut().rt.num_gpus();
    Ok(Value::list(if n == 0 {
        vec![Value::Device(Device::cpu(0))]
    } else {
        (0..n).map(|i| Value::Device(Device::gpu(i))).collect()
    }))
}
