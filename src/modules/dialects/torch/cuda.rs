//! `torch.cuda`: device counts, `synchronize`, and the stream and event objects the
//! computational-performance chapters use.
//!
//! A devarray GPU runs its work on one ordered queue, so every `torch.cuda.Stream` of a device
//! is that queue: work queued "on" any stream of the device runs in program order, which is one
//! valid schedule of what PyTorch allows, and copies between devices already wait for what they
//! read. So `with torch.cuda.stream(s):` only changes what `current_stream()` returns,
//! `wait_stream`/`wait_event` have nothing left to order, and an `Event` is a marker in its
//! device's queue: `record` queues it, `synchronize` waits for it, and `elapsed_time` is the time
//! between two markers having run.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::modules::python::native::{bound, downcast, object};
use crate::object::error::{Exc, ExcKind};
use crate::object::value::{Args, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::engine::Marker;
use crate::runtime::{Device, DeviceKind};

use super::{parse_torch_device, TorchDevice};

const NO_GPU: &str = "no CUDA device: this machine has no GPU. To simulate GPUs, start devarray with --sim-gpus 2 or set DEVARRAY_SIM_GPUS=2";

thread_local! {
    /// The stream `with torch.cuda.stream(s):` made current, per GPU.
    static CURRENT: RefCell<Vec<(usize, Rc<StreamObj>)>> = const { RefCell::new(Vec::new()) };
    /// Handles for new streams (the default stream's is 0, as in PyTorch).
    static NEXT_HANDLE: Cell<u64> = const { Cell::new(0x5600_0000) };
}

/// The GPU a `device=` argument names (None: GPU 0, the current device). A CPU device is
/// refused as PyTorch refuses it.
fn gpu_arg(it: &mut dyn Interpreter, v: Option<&Value>) -> Result<Device, Exc> {
    let device = match v {
        None | Some(Value::None) => Device::gpu(0),
        Some(Value::Object(o)) if o.as_any().is::<StreamObj>() => o
            .as_any()
            .downcast_ref::<StreamObj>()
            .map_or(Device::gpu(0), |s| s.device),
        Some(v) => {
            let d = parse_torch_device(v, None)?;
            if d.kind == DeviceKind::Cpu {
                return Err(Exc::value_error(format!(
                    "Expected a cuda device, but got: {}",
                    d.type_str()
                )));
            }
            d.device()
        }
    };
    let rt = &it.state_mut().rt;
    if rt.num_gpus() == 0 {
        return Err(Exc::new(ExcKind::RuntimeError, NO_GPU));
    }
    rt.check_device(device)?;
    Ok(device)
}

/// `torch.cuda.synchronize(device=None)`: waits for the queued work of one GPU (the current
/// one, GPU 0, by default), as PyTorch does; `npx.waitall()` waits for every device.
pub fn synchronize(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let d = a.take(0, "device")?;
    a.finish(1)?;
    let device = gpu_arg(it, d.as_ref())?;
    it.state_mut().rt.synchronize_device(device)?;
    Ok(Value::None)
}

/// `torch.cuda.memory_allocated(device=None)`: bytes the device's live tensors hold. devarray has
/// no caching allocator, so `memory_reserved` is the same number.
fn memory_allocated(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let device = one_device_arg(it, &mut a)?;
    Ok(Value::Int(it.state_mut().rt.memory_used(device) as i64))
}

/// `torch.cuda.max_memory_allocated(device=None)`: the most bytes held at once since the
/// program started or `reset_peak_memory_stats`.
fn max_memory_allocated(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let device = one_device_arg(it, &mut a)?;
    Ok(Value::Int(it.state_mut().rt.memory_peak(device) as i64))
}

fn reset_peak_memory_stats(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let device = one_device_arg(it, &mut a)?;
    it.state_mut().rt.reset_peak_memory(device);
    Ok(Value::None)
}

/// `torch.cuda.mem_get_info(device=None)`: `(free, total)` bytes, as cudaMemGetInfo reports.
fn mem_get_info(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let device = one_device_arg(it, &mut a)?;
    let rt = &it.state_mut().rt;
    let total = rt.memory_total(device).unwrap_or(0);
    let free = total.saturating_sub(rt.memory_used(device));
    Ok(Value::tuple(vec![
        Value::Int(free as i64),
        Value::Int(total as i64),
    ]))
}

/// `torch.cuda.empty_cache()`: nothing to release, as freed memory goes back at once.
fn empty_cache(_: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::None)
}

/// The GPU a memory query names, once its queued work has run: a queued op holds its inputs
/// until it runs, and the counts should say what the program's live tensors hold.
fn one_device_arg(it: &mut dyn Interpreter, a: &mut Args) -> Result<Device, Exc> {
    let d = a.take(0, "device")?;
    a.finish(1)?;
    let device = gpu_arg(it, d.as_ref())?;
    it.state_mut().rt.synchronize_device(device)?;
    Ok(device)
}

pub struct StreamObj {
    device: Device,
    handle: u64,
    priority: i64,
}

impl StreamObj {
    fn default_for(device: Device) -> Rc<StreamObj> {
        Rc::new(StreamObj {
            device,
            handle: 0,
            priority: 0,
        })
    }
}

fn current(device: Device) -> Rc<StreamObj> {
    CURRENT
        .with(|c| {
            c.borrow()
                .iter()
                .rev()
                .find(|(d, _)| *d == device.id)
                .map(|(_, s)| Rc::clone(s))
        })
        .unwrap_or_else(|| StreamObj::default_for(device))
}

impl NativeObject for StreamObj {
    fn type_name(&self) -> &str {
        "Stream"
    }
    fn repr(&self) -> String {
        format!(
            "<torch.cuda.Stream device=cuda:{} cuda_stream={:#x}>",
            self.device.id, self.handle
        )
    }
    fn equals(&self, other: &Value) -> Option<bool> {
        Some(match other {
            Value::Object(o) => o
                .as_any()
                .downcast_ref::<StreamObj>()
                .is_some_and(|s| s.device == self.device && s.handle == self.handle),
            _ => false,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "device",
            "cuda_stream",
            "priority",
            "synchronize",
            "query",
            "wait_stream",
            "wait_event",
            "record_event",
        ]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "device" => TorchDevice::of_tensor(self.device).value(),
            "cuda_stream" => Value::Int(self.handle as i64),
            "priority" => Value::Int(self.priority),
            "synchronize" => bound(
                this,
                "synchronize",
                "synchronize(): wait for the work queued on this stream.",
                |it, r, a| {
                    a.finish(0)?;
                    let s = downcast::<StreamObj>(r, "a Stream")?;
                    it.state_mut().rt.synchronize_device(s.device)?;
                    Ok(Value::None)
                },
            ),
            "query" => bound(
                this,
                "query",
                "query(): whether the work queued on this stream has finished.",
                |it, r, a| {
                    a.finish(0)?;
                    let s = downcast::<StreamObj>(r, "a Stream")?;
                    Ok(Value::Bool(it.state_mut().rt.is_idle(s.device)?))
                },
            ),
            "wait_stream" => bound(
                this,
                "wait_stream",
                "wait_stream(stream): later work on this stream waits for the work queued on `stream` (a devarray GPU runs one queue in order, and copies wait for what they read, so nothing more is needed).",
                |_, _, mut a| {
                    let other = a.required(0, "stream")?;
                    a.finish(1)?;
                    downcast::<StreamObj>(&other, "a torch.cuda.Stream")?;
                    Ok(Value::None)
                },
            ),
            "wait_event" => bound(
                this,
                "wait_event",
                "wait_event(event): later work on this stream waits for `event` (already so: see wait_stream).",
                |_, _, mut a| {
                    let e = a.required(0, "event")?;
                    a.finish(1)?;
                    downcast::<EventObj>(&e, "a torch.cuda.Event")?;
                    Ok(Value::None)
                },
            ),
            "record_event" => bound(
                this,
                "record_event",
                "record_event(event=None): record `event` (a new one when None) on this stream and return it.",
                |it, r, mut a| {
                    let e = a.take(0, "event")?;
                    a.finish(1)?;
                    let device = downcast::<StreamObj>(r, "a Stream")?.device;
                    let event = match e {
                        Some(v @ Value::Object(_)) => v,
                        _ => object(EventObj::new(false)),
                    };
                    let marker = it.state_mut().rt.record_marker(device)?;
                    downcast::<EventObj>(&event, "a torch.cuda.Event")?
                        .marker
                        .replace(Some(marker));
                    Ok(event)
                },
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `torch.cuda.Stream(device=None, priority=0)`.
fn new_stream(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let d = a.take(0, "device")?;
    let priority = a.take(1, "priority")?;
    a.finish(2)?;
    let device = gpu_arg(it, d.as_ref())?;
    let priority = match priority {
        None | Some(Value::None) => 0,
        Some(Value::Int(p)) => p,
        Some(other) => {
            return Err(Exc::type_error(format!(
                "Stream(): priority must be an int, not {}",
                other.type_name()
            )))
        }
    };
    let handle = NEXT_HANDLE.with(|h| {
        let v = h.get();
        h.set(v + 0x10);
        v
    });
    Ok(object(StreamObj {
        device,
        handle,
        priority,
    }))
}

/// `torch.cuda.current_stream(device=None)`: the stream `with torch.cuda.stream(s):` made
/// current, else the default stream.
fn current_stream(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let d = a.take(0, "device")?;
    a.finish(1)?;
    let device = gpu_arg(it, d.as_ref())?;
    Ok(Value::Object(current(device)))
}

fn default_stream(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let d = a.take(0, "device")?;
    a.finish(1)?;
    let device = gpu_arg(it, d.as_ref())?;
    Ok(Value::Object(StreamObj::default_for(device)))
}

/// What `torch.cuda.stream(s)` returns: `with` makes `s` the current stream of its device.
struct StreamContext {
    stream: Option<Rc<dyn NativeObject>>,
}

impl NativeObject for StreamContext {
    fn type_name(&self) -> &str {
        "StreamContext"
    }
    fn repr(&self) -> String {
        "<torch.cuda.StreamContext object>".to_string()
    }
    fn enter(&self, _it: &mut dyn Interpreter) -> Result<Value, Exc> {
        let Some(stream) = &self.stream else {
            return Ok(Value::None);
        };
        if let Some(s) = stream.as_any().downcast_ref::<StreamObj>() {
            let s = Rc::new(StreamObj {
                device: s.device,
                handle: s.handle,
                priority: s.priority,
            });
            CURRENT.with(|c| c.borrow_mut().push((s.device.id, s)));
        }
        Ok(Value::Object(Rc::clone(stream)))
    }
    fn exit(&self, _it: &mut dyn Interpreter) -> Result<(), Exc> {
        if self.stream.is_some() {
            CURRENT.with(|c| c.borrow_mut().pop());
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn stream_context(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let s = a.required(0, "stream")?;
    a.finish(1)?;
    let stream = match &s {
        Value::None => None,
        Value::Object(o) if o.as_any().is::<StreamObj>() => Some(Rc::clone(o)),
        other => {
            return Err(Exc::type_error(format!(
                "torch.cuda.stream() expects a torch.cuda.Stream or None, not {}",
                other.type_name()
            )))
        }
    };
    Ok(object(StreamContext { stream }))
}

pub struct EventObj {
    enable_timing: bool,
    marker: RefCell<Option<Marker>>,
}

impl EventObj {
    fn new(enable_timing: bool) -> EventObj {
        EventObj {
            enable_timing,
            marker: RefCell::new(None),
        }
    }
}

impl NativeObject for EventObj {
    fn type_name(&self) -> &str {
        "Event"
    }
    fn repr(&self) -> String {
        match &*self.marker.borrow() {
            Some(m) => format!("<torch.cuda.Event device=cuda:{}>", m.device.id),
            None => "<torch.cuda.Event uninitialized>".to_string(),
        }
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["record", "synchronize", "query", "wait", "elapsed_time"]
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "record" => bound(
                this,
                "record",
                "record(stream=None): mark this point of the stream's queue (the current stream by default).",
                |it, r, mut a| {
                    let s = a.take(0, "stream")?;
                    a.finish(1)?;
                    let device = gpu_arg(it, s.as_ref())?;
                    let marker = it.state_mut().rt.record_marker(device)?;
                    downcast::<EventObj>(r, "an Event")?
                        .marker
                        .replace(Some(marker));
                    Ok(Value::None)
                },
            ),
            "synchronize" => bound(
                this,
                "synchronize",
                "synchronize(): wait for the work queued before this event was recorded.",
                |it, r, a| {
                    a.finish(0)?;
                    let marker = downcast::<EventObj>(r, "an Event")?.marker.borrow().clone();
                    if let Some(m) = marker {
                        it.state_mut().rt.wait_marker(&m)?;
                    }
                    Ok(Value::None)
                },
            ),
            "query" => bound(
                this,
                "query",
                "query(): whether the work queued before this event has finished.",
                |_, r, a| {
                    a.finish(0)?;
                    let e = downcast::<EventObj>(r, "an Event")?;
                    let done = e.marker.borrow().as_ref().is_none_or(|m| m.time().is_some());
                    Ok(Value::Bool(done))
                },
            ),
            "wait" => bound(
                this,
                "wait",
                "wait(stream=None): later work on the stream waits for this event (a devarray GPU runs one queue in order, and copies wait for what they read, so nothing more is needed).",
                |_, _, mut a| {
                    a.take(0, "stream")?;
                    a.finish(1)?;
                    Ok(Value::None)
                },
            ),
            "elapsed_time" => bound(
                this,
                "elapsed_time",
                "elapsed_time(end_event): milliseconds between this event and end_event (both recorded with enable_timing=True); waits for both.",
                |it, r, mut a| {
                    let end = a.required(0, "end_event")?;
                    a.finish(1)?;
                    let start = downcast::<EventObj>(r, "an Event")?;
                    let stop = downcast::<EventObj>(&end, "a torch.cuda.Event")?;
                    if !start.enable_timing || !stop.enable_timing {
                        return Err(Exc::new(
                            ExcKind::RuntimeError,
                            "Both events must be created with argument 'enable_timing=True'.",
                        ));
                    }
                    let (Some(m0), Some(m1)) =
                        (start.marker.borrow().clone(), stop.marker.borrow().clone())
                    else {
                        return Err(Exc::new(
                            ExcKind::RuntimeError,
                            "Both events must be recorded before calculating elapsed time.",
                        ));
                    };
                    let rt = &it.state_mut().rt;
                    rt.wait_marker(&m0)?;
                    rt.wait_marker(&m1)?;
                    let (Some(t0), Some(t1)) = (m0.time(), m1.time()) else {
                        return Err(Exc::new(
                            ExcKind::RuntimeError,
                            "Both events must be recorded before calculating elapsed time.",
                        ));
                    };
                    let ms = if t1 >= t0 {
                        t1.duration_since(t0).as_secs_f64() * 1e3
                    } else {
                        -(t0.duration_since(t1).as_secs_f64() * 1e3)
                    };
                    Ok(Value::Float(ms))
                },
            ),
            _ => return None,
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `torch.cuda.Event(enable_timing=False, blocking=False, interprocess=False)`.
fn new_event(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let timing = a.flag(0, "enable_timing", false)?;
    a.flag(1, "blocking", false)?;
    a.flag(2, "interprocess", false)?;
    a.finish(3)?;
    Ok(object(EventObj::new(timing)))
}

/// Adds the stream and event names to `torch.cuda`.
pub fn install(m: &Rc<Module>) {
    let fns: [(&'static str, &'static str, crate::object::value::BuiltinFn); 12] = [
        (
            "memory_allocated",
            "memory_allocated(device=None): bytes held by the GPU's live tensors.",
            memory_allocated,
        ),
        (
            "memory_reserved",
            "memory_reserved(device=None): bytes reserved on the GPU; devarray keeps no cache, so this is memory_allocated().",
            memory_allocated,
        ),
        (
            "max_memory_allocated",
            "max_memory_allocated(device=None): the most bytes the GPU's tensors held at once since the start or reset_peak_memory_stats().",
            max_memory_allocated,
        ),
        (
            "max_memory_reserved",
            "max_memory_reserved(device=None): the same as max_memory_allocated() (devarray keeps no cache).",
            max_memory_allocated,
        ),
        (
            "reset_peak_memory_stats",
            "reset_peak_memory_stats(device=None): start max_memory_allocated() again from what is held now.",
            reset_peak_memory_stats,
        ),
        (
            "mem_get_info",
            "mem_get_info(device=None): (free, total) bytes of the GPU's memory.",
            mem_get_info,
        ),
        (
            "empty_cache",
            "empty_cache(): release cached memory; devarray frees memory when the last tensor using it goes, so there is none.",
            empty_cache,
        ),
        (
            "Stream",
            "Stream(device=None, priority=0): a CUDA stream. On a devarray GPU every stream is the device's one ordered queue.",
            new_stream,
        ),
        (
            "Event",
            "Event(enable_timing=False, blocking=False, interprocess=False): a marker in a stream's queue; record(), synchronize(), query(), elapsed_time(end).",
            new_event,
        ),
        (
            "current_stream",
            "current_stream(device=None): the current stream of the GPU (the default stream unless `with torch.cuda.stream(s):` chose another).",
            current_stream,
        ),
        (
            "default_stream",
            "default_stream(device=None): the GPU's default stream.",
            default_stream,
        ),
        (
            "stream",
            "stream(s): a context manager making s the current stream of its GPU.",
            stream_context,
        ),
    ];
    for (name, doc, f) in fns {
        m.set(name, builtin(name, doc, f));
    }
}
