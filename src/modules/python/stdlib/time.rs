//! `time`: clocks, `sleep` (interruptible), `localtime`/`gmtime` as `time.struct_time`
//! (a named tuple), `mktime`, and C's `strftime`.

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
                "localtime",
                "localtime(seconds=None): the local time as a struct_time.",
                |it, a| convert(it, a, true),
            ),
            (
                "gmtime",
                "gmtime(seconds=None): the UTC time as a struct_time.",
                |it, a| convert(it, a, false),
            ),
            (
                "mktime",
                "mktime(t): seconds since the epoch of a local struct_time.",
                |it, mut a| {
                    let t = a.required(0, "t")?;
                    a.finish(1)?;
                    let mut tm = tm_of(it, &t, "mktime")?;
                    // SAFETY: mktime normalises the tm we own and returns -1 on failure.
                    let r = unsafe { libc::mktime(&mut tm) };
                    if r == -1 {
                        return Err(Exc::new(
                            crate::object::ExcKind::OverflowError,
                            "mktime argument out of range",
                        ));
                    }
                    Ok(Value::Float(r as f64))
                },
            ),
            (
                "strftime",
                "strftime(format[, t]): the local time (or the struct_time t) formatted as C's strftime does.",
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

/// A broken-down time (C's `tm`) of `secs` since the epoch, local or UTC.
fn broken_down(secs: i64, local: bool) -> Result<libc::tm, Exc> {
    let tt: libc::time_t = secs as libc::time_t;
    // SAFETY: the conversion writes into the zeroed tm we own and reads only `tt`.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        let ok = if local {
            !libc::localtime_r(&tt, &mut tm).is_null()
        } else {
            !libc::gmtime_r(&tt, &mut tm).is_null()
        };
        if !ok {
            return Err(Exc::new(
                crate::object::ExcKind::OverflowError,
                "timestamp out of range for platform time_t",
            ));
        }
        Ok(tm)
    }
}

const FIELDS: &str = "tm_year tm_mon tm_mday tm_hour tm_min tm_sec tm_wday tm_yday tm_isdst";

/// `time.struct_time(...)`: a named tuple of the nine fields CPython gives.
fn struct_time(it: &mut dyn Interpreter, tm: &libc::tm) -> Result<Value, Exc> {
    let class = match super::module_member(it, "time", "struct_time") {
        Some(c @ Value::Class(_)) => c,
        _ => {
            let mut args = Args::new(
                "namedtuple",
                vec![Value::str("struct_time"), Value::str(FIELDS)],
            );
            args.kw.push((Rc::from("module"), Value::str("time")));
            let c = super::collections::namedtuple(it, args)?;
            if let Value::Class(cls) = &c {
                // CPython prints it qualified: `time.struct_time(tm_year=...)`.
                cls.attrs.borrow_mut().set(
                    Rc::from("__repr__"),
                    crate::object::builtin("__repr__", "", |it, a| {
                        match super::collections::nt_repr(it, a)? {
                            Value::Str(ref s) => Ok(Value::str(&format!("time.{s}"))),
                            other => Ok(other),
                        }
                    }),
                );
            }
            if let Some(m) = it.state().modules.get("time") {
                m.set("struct_time", c.clone());
            }
            c
        }
    };
    let fields = vec![
        Value::Int(tm.tm_year as i64 + 1900),
        Value::Int(tm.tm_mon as i64 + 1),
        Value::Int(tm.tm_mday as i64),
        Value::Int(tm.tm_hour as i64),
        Value::Int(tm.tm_min as i64),
        Value::Int(tm.tm_sec as i64),
        Value::Int((tm.tm_wday as i64 + 6) % 7),
        Value::Int(tm.tm_yday as i64 + 1),
        Value::Int(tm.tm_isdst as i64),
    ];
    it.call_value(&class, Args::positional(fields))
}

fn convert(it: &mut dyn Interpreter, mut a: Args, local: bool) -> Result<Value, Exc> {
    let secs = match a.take(0, "seconds")? {
        None | Some(Value::None) => epoch().as_secs() as i64,
        Some(v) => {
            let f = num(&v)?;
            if !f.is_finite() || f.abs() > 1e15 {
                return Err(Exc::new(
                    crate::object::ExcKind::OverflowError,
                    "timestamp out of range for platform time_t",
                ));
            }
            f.floor() as i64
        }
    };
    a.finish(1)?;
    let tm = broken_down(secs, local)?;
    struct_time(it, &tm)
}

/// A C `tm` from a struct_time or a 9-tuple, as CPython's strftime/mktime read it.
fn tm_of(it: &mut dyn Interpreter, v: &Value, fname: &str) -> Result<libc::tm, Exc> {
    let items = match v {
        Value::Tuple(_) | Value::Instance(_) => it.iterate(v)?,
        _ => return Err(Exc::type_error("Tuple or struct_time argument required")),
    };
    if items.len() != 9 {
        return Err(Exc::type_error(format!(
            "{fname}(): illegal time tuple argument"
        )));
    }
    let n = items
        .iter()
        .map(super::int)
        .collect::<Result<Vec<i64>, Exc>>()?;
    // SAFETY: a plain C struct of integers (and, on glibc, a zone pointer left null).
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let c = |x: i64| x.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
    tm.tm_year = c(n[0] - 1900);
    tm.tm_mon = c(n[1] - 1);
    tm.tm_mday = c(n[2]);
    tm.tm_hour = c(n[3]);
    tm.tm_min = c(n[4]);
    tm.tm_sec = c(n[5]);
    tm.tm_wday = c((n[6] + 1).rem_euclid(7));
    tm.tm_yday = c(n[7] - 1);
    tm.tm_isdst = c(n[8]);
    if !(0..=11).contains(&tm.tm_mon) && n[1] != 0 {
        return Err(Exc::value_error("month out of range"));
    }
    if !(0..=61).contains(&tm.tm_sec) {
        return Err(Exc::value_error("seconds out of range"));
    }
    Ok(tm)
}

fn strftime(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let fmt = string(&a.required(0, "format")?, "strftime() argument 1")?;
    let tm = match a.take(1, "t")? {
        Some(v) => tm_of(it, &v, "strftime")?,
        None => broken_down(epoch().as_secs() as i64, true)?,
    };
    a.finish(2)?;
    if fmt.contains('\0') {
        return Err(Exc::value_error("embedded null character"));
    }
    let Ok(cfmt) = std::ffi::CString::new(fmt.as_bytes()) else {
        return Err(Exc::value_error("embedded null character"));
    };
    // SAFETY: strftime writes at most `cap` bytes into buf and returns how many it wrote (0
    // when they do not fit); tm is a valid struct we own.
    let text = unsafe {
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
