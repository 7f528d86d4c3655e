//! `torch._jit`: the compiled side of `torch.jit` (whose classes and functions are written in
//! the language, `library/torch/jit/`). `_attach(script_module,
//! module)` builds the module's graph once (`array::graph::module_graph`) into a plan kept in the
//! script module's core; `_call` is the script module's `__call__` and `forward`: a call with
//! arrays runs that plan with the runtime ops of the module (the same bits, recorded for
//! autograd), with neither a language-level `forward` nor the interpreter between the layers.
//! A module the graph cannot describe (its own `forward`) is called as written.
use std::rc::Rc;

use crate::modules::array::blocks::core_of;
use crate::modules::array::graph::{module_graph, run_plan, Mode, Plan};
use crate::object::error::Exc;
use crate::object::value::{Args, Module, Value};
use crate::object::{builtin, unbound_method, Interpreter};

/// What a script module holds in its core: the module it was made from and, when the module
/// is built of built-in layers, that module's plan.
struct Compiled {
    original: Value,
    plan: Option<Plan>,
}

fn compiled(this: &Value) -> Result<Rc<Compiled>, Exc> {
    core_of(this)
        .and_then(|core| core.compiled.borrow().clone())
        .and_then(|any| any.downcast::<Compiled>().ok())
        .ok_or_else(|| {
            Exc::type_error(format!(
                "expected a module made by torch.jit.script or torch.jit.trace, got {}",
                this.type_name()
            ))
        })
}

/// `_attach(script_module, module)`: compiles `module` for `script_module` (already set up as a
/// Module); True when a plan was made, False when calls run the module as written.
fn attach(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "script_module")?;
    let module = a.required(1, "module")?;
    a.finish(2)?;
    let core = core_of(&this).ok_or_else(|| Exc::type_error("_attach needs a set-up Module"))?;
    let plan = match module_graph(&module) {
        Some(head) => Some(Plan::compile(vec![head], &["data".to_string()], false)?),
        None => None,
    };
    let made = plan.is_some();
    *core.compiled.borrow_mut() = Some(Rc::new(Compiled {
        original: module,
        plan,
    }));
    Ok(Value::Bool(made))
}

/// `_original(script_module)`: the module it was made from.
fn original(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "script_module")?;
    a.finish(1)?;
    Ok(compiled(&this)?.original.clone())
}

/// A script module's `__call__` and `forward`: its plan on arrays, in its own training mode;
/// anything else (keywords, other values, a module without a plan) goes to the module.
fn call(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    a.pos.remove(0);
    let c = compiled(&this)?;
    if let Some(plan) = &c.plan {
        let arrays = !a.pos.is_empty() && a.pos.iter().all(|v| v.as_array().is_some());
        if arrays && a.kw.is_empty() {
            if a.pos.len() != plan.n_inputs() {
                return Err(Exc::type_error(format!(
                    "forward() expected at most {} argument(s) but received {} argument(s)",
                    plan.n_inputs() + 1,
                    a.pos.len() + 1
                )));
            }
            let training = core_of(&this).is_some_and(|core| core.training.get());
            return run_plan(it, plan, &a.pos, Mode::Torch { training });
        }
    }
    it.call_value(&c.original, a)
}

pub fn build() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "torch._jit",
        "devarray's compiler behind torch.jit: a module's graph, run without the interpreter",
    ));
    m.set(
        "_attach",
        builtin(
            "_attach",
            "_attach(script_module, module): compiles module's plan into script_module.",
            attach,
        ),
    );
    m.set(
        "_original",
        builtin(
            "_original",
            "_original(script_module): the module it was made from.",
            original,
        ),
    );
    m.set(
        "_call",
        unbound_method(
            "RecursiveScriptModule.forward",
            "forward(*inputs): runs the compiled module.",
            call,
        ),
    );
    m
}
