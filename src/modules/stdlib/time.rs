//! `time`: clocks, `sleep` (interruptible) and `strftime` of the local time.

use std::rc::Rc;

use super::{module, num, set_fns, string};
use crate::object::value::Module;
use crate::object::{Args, Exc, Interpreter, Value};

pub fn build() -> Rc<Module> {
    let m = module("time", "time access and conversions");
    set_fns(
        &m,
        &[
            (
                "time",
                "time(): seconds since the epoch, as a float.",
                time_time,
            ),
            (
                "time_ns",
                "time_ns(): nanoseconds since the epoch, as an int.",
                time_ns,
            ),
            (
                "perf_counter",
                "perf_counter(): a monotonic clock in seconds.",
                perf_counter,
            ),
            (
                "perf_counter_ns",
                "perf_counter_ns(): perf_counter() in nanoseconds.",
                perf_counter_ns,
            ),
            (
                "monotonic",
                "monotonic(): a clock that never goes back, in seconds.",
                perf_counter,
            ),
            (
                "process_time",
                "process_time(): a clock in seconds (the session's, here).",
                perf_counter,
            ),
            ("sleep", "sleep(seconds): pause (interruptible).", sleep),
            (
                "strftime",
                "strftime(format): the current local time formatted as C's strftime does.",
                strftime,
            ),
        ],
    );
    m
}

fn epoch() -> std::time::Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

fn time_time(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Float(epoch().as_secs_f64()))
}

fn time_ns(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Int(epoch().as_nanos() as i64))
}

fn perf_counter(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Float(it.state_mut().started.elapsed().as_secs_f64()))
}

fn perf_counter_ns(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Int(
        it.state_mut().started.elapsed().as_nanos() as i64
    ))
}

fn sleep(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let s = num(&a.required(0, "seconds")?)?;
    a.finish(1)?;
    if s < 0.0 {
        return Err(Exc::value_error("sleep length must be non-negative"));
    }
    if s.is_nan() {
        return Err(Exc::value_error("Invalid value NaN (not a number)"));
    }
    if s > 1e9 {
        return Err(Exc::new(
            crate::object::ExcKind::OverflowError,
            "sleep length is too large",
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

fn strftime(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let fmt = string(&a.required(0, "format")?, "strftime() argument 1")?;
    if a.take(1, "t")?.is_some() {
        // CPython takes a struct_time here, which devarray does not have.
        return Err(Exc::type_error(
            "Tuple or struct_time argument required (devarray's strftime formats the current local time only)",
        ));
    }
    let t = epoch().as_secs() as i64;
    a.finish(2)?;
    if fmt.contains('\0') {
        return Err(Exc::value_error("embedded null character"));
    }
    let Ok(cfmt) = std::ffi::CString::new(fmt.as_bytes()) else {
        return Err(Exc::value_error("embedded null character"));
    };
    // SAFETY: localtime_r writes into the zeroed tm we own; strftime writes at most buf.len()
    // bytes into buf and returns how many it wrote (0 when they do not fit).
    let text = unsafe {
        let tt: libc::time_t = t as libc::time_t;
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&tt, &mut tm).is_null() {
            return Err(Exc::new(
                crate::object::ExcKind::OverflowError,
                "timestamp out of range for platform time_t",
            ));
        }
        let mut cap = 256usize;
        loop {
            let mut buf = vec![0u8; cap];
            let n = libc::strftime(buf.as_mut_ptr().cast(), cap, cfmt.as_ptr(), &tm);
            if n > 0 || fmt.is_empty() || cap > 1 << 16 {
                buf.truncate(n);
                break String::from_utf8_lossy(&buf).into_owned();
            }
            cap *= 4;
        }
    };
    Ok(Value::str(&text))
}
