//! `inspect`: the frames of the running program — `currentframe()`, a frame's `f_back`,
//! `f_locals` (parameters in CPython's order, then the other names sorted) and `f_code.co_name`, `getargvalues(frame)` (what d2l's `save_hyperparameters`
//! reads to store its caller's arguments) — and the type predicates.
//!
//! A frame is a function call's scope (`object::state::Scope`); `f_back` follows the scope's
//! `caller`. The top level of a program or module is a frame without a scope: its `f_back` is
//! None and its `f_locals` is empty (the module's globals are read by name, not through it).

use std::cell::RefCell;
use std::rc::Rc;

use super::{module, module_member, set_fns};
use crate::lang::ast::ParamKind;
use crate::object::state::Env;
use crate::object::value::{Dict, Module, NativeObject};
use crate::object::{hash_key, Args, Exc, Interpreter, Value};

pub fn build() -> Rc<Module> {
    let m = module(
        "inspect",
        "Get useful information from live Python objects.",
    );
    set_fns(
        &m,
        &[
            (
                "currentframe",
                "currentframe(): the frame of the caller of this function.",
                currentframe,
            ),
            (
                "getargvalues",
                "getargvalues(frame): ArgInfo(args, varargs, keywords, locals) of a frame.",
                getargvalues,
            ),
            (
                "isclass",
                "isclass(object): whether object is a class.",
                isclass,
            ),
            (
                "isfunction",
                "isfunction(object): whether object is a user-defined function.",
                isfunction,
            ),
            (
                "ismethod",
                "ismethod(object): whether object is a bound method.",
                ismethod,
            ),
            (
                "ismodule",
                "ismodule(object): whether object is a module.",
                ismodule,
            ),
            (
                "isbuiltin",
                "isbuiltin(object): whether object is a built-in function or method.",
                isbuiltin,
            ),
            (
                "cleandoc",
                "cleandoc(doc): doc with its indentation removed, as help() shows docstrings.",
                cleandoc_fn,
            ),
        ],
    );
    m
}

/// `inspect.cleandoc`: tabs expanded, the first line's leading blanks and the other lines'
/// common indentation removed, blank lines at both ends dropped (how help() and IPython's `?`
/// show a docstring written indented in its source).
pub fn cleandoc(doc: &str) -> String {
    let expanded: Vec<String> = doc.lines().map(expand_tabs).collect();
    let mut lines: Vec<&str> = expanded.iter().map(String::as_str).collect();
    let margin = lines
        .iter()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    if let Some(first) = lines.first() {
        out.push(first.trim_start().to_string());
    }
    for line in lines.drain(..).skip(1) {
        out.push(line.get(margin..).unwrap_or("").to_string());
    }
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    while out.first().is_some_and(|l| l.trim().is_empty()) {
        out.remove(0);
    }
    out.join("\n")
}

/// `str.expandtabs()`: each tab moves to the next multiple of 8 columns.
fn expand_tabs(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut column = 0;
    for c in line.chars() {
        if c == '\t' {
            let n = 8 - column % 8;
            out.extend(std::iter::repeat_n(' ', n));
            column += n;
        } else {
            out.push(c);
            column += 1;
        }
    }
    out
}

fn cleandoc_fn(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let doc = a.required(0, "doc")?;
    a.finish(1)?;
    match &doc {
        Value::Str(s) => Ok(Value::str(&cleandoc(s))),
        other => Err(Exc::type_error(format!(
            "cleandoc() argument must be str, not {}",
            other.type_name()
        ))),
    }
}

struct Frame {
    /// The call's scope; None for the top level of a program or module.
    scope: Option<Env>,
}

impl Frame {
    fn value(scope: Option<Env>) -> Value {
        Value::Object(Rc::new(Frame { scope }))
    }

    fn name(&self) -> String {
        match &self.scope {
            Some(s) => s
                .borrow()
                .function
                .as_ref()
                .map_or_else(|| "<listcomp>".to_string(), |f| f.name.to_string()),
            None => "<module>".to_string(),
        }
    }

    /// The call's variables: its parameters in order, then its other names (sorted), as
    /// `f_locals` lists them.
    fn locals(&self) -> Value {
        let mut dict = Dict::default();
        if let Some(scope) = &self.scope {
            let scope = scope.borrow();
            let mut names: Vec<Rc<str>> = Vec::new();
            if let Some(f) = &scope.function {
                // CPython's `co_varnames` order: named parameters, then `*args`, then `**kw`.
                for kind in [ParamKind::Normal, ParamKind::VarArgs, ParamKind::KwArgs] {
                    names.extend(
                        f.params
                            .iter()
                            .filter(|p| p.kind == kind)
                            .map(|p| p.name.clone()),
                    );
                }
            }
            let mut rest: Vec<Rc<str>> = scope
                .vars
                .keys()
                .filter(|k| !names.contains(k))
                .cloned()
                .collect();
            rest.sort();
            names.extend(rest);
            for name in names {
                if let Some(v) = scope.vars.get(&name) {
                    let key = Value::Str(name.clone());
                    if let Ok(hk) = hash_key(&key) {
                        dict.insert(hk, key, v.clone());
                    }
                }
            }
        }
        Value::Dict(Rc::new(RefCell::new(dict)))
    }
}

impl NativeObject for Frame {
    fn type_name(&self) -> &str {
        "frame"
    }
    fn repr(&self) -> String {
        format!(
            "<frame at {:#x}, code {}>",
            self as *const Frame as usize,
            self.name()
        )
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "f_back" => Some(match &self.scope {
                None => Value::None,
                Some(scope) => {
                    let caller = scope.borrow().caller.as_ref().and_then(|w| w.upgrade());
                    Frame::value(caller)
                }
            }),
            "f_locals" => Some(self.locals()),
            "f_code" => Some(Value::Object(Rc::new(Code { name: self.name() }))),
            _ => None,
        }
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["f_back", "f_code", "f_locals"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

struct Code {
    name: String,
}

impl NativeObject for Code {
    fn type_name(&self) -> &str {
        "code"
    }
    fn repr(&self) -> String {
        format!(
            "<code object {} at {:#x}>",
            self.name, self as *const Code as usize
        )
    }
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        (name == "co_name").then(|| Value::str(&self.name))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["co_name"]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn currentframe(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Frame::value(it.current_scope()))
}

fn getargvalues(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let frame = a.required(0, "frame")?;
    a.finish(1)?;
    let Some(f) = (match &frame {
        Value::Object(o) => o.as_any().downcast_ref::<Frame>(),
        _ => None,
    }) else {
        // CPython reads `frame.f_code` first.
        return Err(Exc::new(
            crate::object::ExcKind::AttributeError,
            format!("'{}' object has no attribute 'f_code'", frame.type_name()),
        ));
    };
    let (mut args, mut varargs, mut keywords) = (Vec::new(), Value::None, Value::None);
    if let Some(function) = f.scope.as_ref().and_then(|s| s.borrow().function.clone()) {
        for p in function.params.iter() {
            match p.kind {
                ParamKind::Normal => args.push(Value::Str(p.name.clone())),
                ParamKind::VarArgs => varargs = Value::Str(p.name.clone()),
                ParamKind::KwArgs => keywords = Value::Str(p.name.clone()),
            }
        }
    }
    let class = match module_member(it, "inspect", "ArgInfo") {
        Some(c) => c,
        None => {
            let c = super::collections::namedtuple(
                it,
                Args::new(
                    "namedtuple",
                    vec![
                        Value::str("ArgInfo"),
                        Value::str("args varargs keywords locals"),
                    ],
                ),
            )?;
            if let Some(m) = it.state().modules.get("inspect") {
                m.set("ArgInfo", c.clone());
            }
            c
        }
    };
    it.call_value(
        &class,
        Args::new(
            "ArgInfo",
            vec![Value::list(args), varargs, keywords, f.locals()],
        ),
    )
}

fn predicate(mut a: Args, test: fn(&Value) -> bool) -> Result<Value, Exc> {
    let v = a.required(0, "object")?;
    a.finish(1)?;
    Ok(Value::Bool(test(&v)))
}

fn isclass(_: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    predicate(a, |v| {
        matches!(v, Value::Class(_) | Value::Type(_) | Value::ExcType(_))
    })
}

fn isfunction(_: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    predicate(a, |v| matches!(v, Value::Func(_)))
}

fn ismethod(_: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    predicate(
        a,
        |v| matches!(v, Value::Method(m) if matches!(m.func, Value::Func(_))),
    )
}

fn ismodule(_: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    predicate(a, |v| matches!(v, Value::Module(_)))
}

fn isbuiltin(_: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    predicate(a, |v| matches!(v, Value::Builtin(_)))
}
