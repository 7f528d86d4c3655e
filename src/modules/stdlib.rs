//! The small standard modules: `time`, `sys`, `math`, with CPython's behaviour for what they offer.

use std::rc::Rc;

use crate::object::value::{BuiltinFn, Module};
use crate::object::{builtin, Args, Exc, ExcKind, Interpreter, Value};

fn module(name: &str, doc: &'static str) -> Rc<Module> {
    Rc::new(Module::new(name, doc))
}

pub fn build(dotted: &str) -> Option<Rc<Module>> {
    Some(match dotted {
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
                ("sys.stdout", "standard output", write_stdout as BuiltinFn),
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
            let fns: [(&'static str, BuiltinFn); 12] = [
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
        _ => return None,
    })
}

fn num(v: &Value) -> Result<f64, Exc> {
    crate::object::ops::as_f64(v)
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

fn time_time(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    Ok(Value::Float(t))
}

fn perf_counter(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Float(it.state_mut().started.elapsed().as_secs_f64()))
}

fn sleep(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
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

fn write_stdout(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let s = stream_text(a)?;
    it.out().stdout(&s);
    Ok(Value::Int(s.chars().count() as i64))
}

fn write_stderr(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let s = stream_text(a)?;
    it.out().stderr(&s);
    Ok(Value::Int(s.chars().count() as i64))
}
