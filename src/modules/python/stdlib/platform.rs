//! `platform`: what the program runs on (`system`, `machine`, `release`, `platform()`...), read
//! from `uname(2)` and the C library, as CPython 3.11's. The Python it reports is the language
//! level devarray follows (`sys.version_info`): `python_version()` is '3.11.0' and
//! `python_implementation()` 'CPython'.

use std::rc::Rc;

use super::{module, set_fns};
use crate::object::value::Module;
use crate::object::{Args, Exc, Interpreter, Value};

pub fn build() -> Rc<Module> {
    let m = module("platform", "information about the platform");
    set_fns(
        &m,
        &[
            (
                "system",
                "system(): the operating system's name ('Linux').",
                |_, a| text(a, uname().0),
            ),
            ("node", "node(): the computer's network name.", |_, a| {
                text(a, uname().1)
            }),
            (
                "release",
                "release(): the operating system's release.",
                |_, a| text(a, uname().2),
            ),
            (
                "version",
                "version(): the operating system's version.",
                |_, a| text(a, uname().3),
            ),
            (
                "machine",
                "machine(): the machine type ('x86_64').",
                |_, a| text(a, uname().4),
            ),
            (
                "processor",
                "processor(): the processor name ('' where Linux does not tell).",
                |_, a| text(a, String::new()),
            ),
            ("python_version", "python_version(): '3.11.0'.", |_, a| {
                text(a, "3.11.0".into())
            }),
            (
                "python_version_tuple",
                "python_version_tuple(): ('3', '11', '0').",
                |_, a| {
                    a.finish(0)?;
                    Ok(Value::tuple(vec![
                        Value::str("3"),
                        Value::str("11"),
                        Value::str("0"),
                    ]))
                },
            ),
            (
                "python_implementation",
                "python_implementation(): 'CPython'.",
                |_, a| text(a, "CPython".into()),
            ),
            (
                "platform",
                "platform(aliased=False, terse=False): 'Linux-6.1.0-x86_64-with-glibc2.36'.",
                |_, mut a| {
                    a.take(0, "aliased")?;
                    a.take(1, "terse")?;
                    a.finish(2)?;
                    let (system, _, release, _, machine) = uname();
                    let mut s = format!("{system}-{release}-{machine}");
                    if let Some(v) = glibc_version() {
                        s.push_str(&format!("-with-glibc{v}"));
                    }
                    Ok(Value::str(&s))
                },
            ),
            (
                "architecture",
                "architecture(): (bits, linkage) of the interpreter: ('64bit', 'ELF').",
                |_, mut a| {
                    a.take(0, "executable")?;
                    a.finish(1)?;
                    let bits = format!("{}bit", usize::BITS);
                    Ok(Value::tuple(vec![Value::str(&bits), Value::str("ELF")]))
                },
            ),
            ("libc_ver", "libc_ver(): ('glibc', version).", |_, mut a| {
                a.take(0, "executable")?;
                a.finish(1)?;
                Ok(match glibc_version() {
                    Some(v) => Value::tuple(vec![Value::str("glibc"), Value::str(&v)]),
                    None => Value::tuple(vec![Value::str(""), Value::str("")]),
                })
            }),
            (
                "uname",
                "uname(): uname_result(system, node, release, version, machine).",
                uname_result,
            ),
        ],
    );
    m
}

fn text(a: Args, s: String) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::str(&s))
}

fn field(chars: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// (system, node, release, version, machine) from uname(2).
fn uname() -> (String, String, String, String, String) {
    // SAFETY: `u` is a zeroed utsname that uname fills.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return (
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            std::env::consts::ARCH.to_string(),
        );
    }
    (
        field(&u.sysname),
        field(&u.nodename),
        field(&u.release),
        field(&u.version),
        field(&u.machine),
    )
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_version() -> Option<String> {
    // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
    let p = unsafe { libc::gnu_get_libc_version() };
    if p.is_null() {
        return None;
    }
    Some(
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned(),
    )
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_version() -> Option<String> {
    None
}

fn uname_result(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let (system, node, release, version, machine) = uname();
    let class = match super::module_member(it, "platform", "uname_result") {
        Some(c @ Value::Class(_)) => c,
        _ => {
            let mut args = Args::new(
                "namedtuple",
                vec![
                    Value::str("uname_result"),
                    Value::str("system node release version machine"),
                ],
            );
            args.kw.push((Rc::from("module"), Value::str("platform")));
            let c = super::collections::namedtuple(it, args)?;
            if let Some(m) = it.state().modules.get("platform") {
                m.set("uname_result", c.clone());
            }
            c
        }
    };
    let values = [system, node, release, version, machine]
        .iter()
        .map(|s| Value::str(s))
        .collect();
    it.call_value(&class, Args::positional(values))
}
