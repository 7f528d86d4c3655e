//! `torch._jit`: the compiled side of `torch.jit` (whose classes and functions are written in
//! the language, `library/torch/jit/`). `_attach(script_module,
//! module)` builds the module's graph once (`array::graph::module_graph`) into a plan kept in the
//! script module's core; `_call` is the script module's `__call__` and `forward`: a call with
//! arrays runs that plan with the runtime ops of the module (the same bits, recorded for
//! autograd), with neither a language-level `forward` nor the interpreter between the layers.
//! A module the graph cannot describe (its own `forward`) is called as written by a scripted
//! module; a traced one records the ops its forward ran on the example (`Tape::start_trace`)
//! and replays them (`nn::autograd::Trace`), frozen as PyTorch's trace freezes them.
use std::rc::Rc;

use crate::modules::array::blocks::{all_params, core_of};
use crate::modules::array::graph::{module_graph, run_plan, Mode, Plan};
use crate::nn::autograd::Trace;
use crate::nn::layers::Parameter;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::wrap;
use crate::object::value::{Args, Flavor, Module, Value};
use crate::object::{builtin, unbound_method, Interpreter};
use crate::runtime::Array;

/// What a script module holds in its core: the module it was made from and, when the module
/// is built of built-in layers, that module's plan; for a traced module with a forward of its
/// own, the ops its forward ran on the example.
struct Compiled {
    original: Value,
    plan: Option<Plan>,
    trace: Option<Traced>,
}

/// A forward's trace, with what its outside arrays are now: a parameter's data (read at each
/// call, so training and device moves are followed) or a constant the forward made.
struct Traced {
    trace: Trace,
    consts: Vec<TraceConst>,
    inputs: usize,
}

enum TraceConst {
    Param(Rc<Parameter>),
    Array(Array),
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
        trace: None,
    }));
    Ok(Value::Bool(made))
}

/// `_trace(traced_module, *examples)`: for a module with a forward of its own, runs that
/// forward on the examples twice, recording its ops; when both runs did the same (no random
/// draws) and every op can be replayed, later calls replay them (True). Otherwise the module
/// keeps running as written (False).
fn trace(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "traced_module")?;
    let examples: Vec<Value> = a.pos.drain(..).skip(1).collect();
    a.finish(0)?;
    let c = compiled(&this)?;
    let Some(arrays) = examples
        .iter()
        .map(|v| v.as_array().map(|av| av.array.clone()))
        .collect::<Option<Vec<Array>>>()
    else {
        return Ok(Value::Bool(false));
    };
    let mut traces = Vec::new();
    for _ in 0..2 {
        let start = it.state_mut().nn.tape.start_trace(&arrays);
        let out = it.call_value(&c.original, Args::positional(examples.clone()));
        let y = out
            .as_ref()
            .ok()
            .and_then(|v| v.as_array().map(|av| av.array.clone()));
        let traced = it
            .state_mut()
            .nn
            .tape
            .finish_trace(start, &arrays, y.as_ref());
        out?;
        traces.push(traced);
    }
    // A module of built-in layers runs its plan; its forward ran as often as PyTorch's trace
    // runs it (batch norm's running statistics move as there).
    if c.plan.is_some() {
        return Ok(Value::Bool(true));
    }
    let (Some(Some(check)), Some(Some(first))) = (traces.pop(), traces.pop()) else {
        return Ok(Value::Bool(false));
    };
    if !first.same_as(&check) {
        return Ok(Value::Bool(false));
    }
    let params = core_of(&c.original)
        .map(|core| all_params(&core))
        .unwrap_or_default();
    let consts = first
        .consts
        .iter()
        .map(|a| {
            params
                .iter()
                .find(|p| {
                    p.list_data()
                        .is_ok_and(|d| d.iter().any(|x| x.id() == a.id()))
                })
                .map_or_else(
                    || TraceConst::Array(a.clone()),
                    |p| TraceConst::Param(p.clone()),
                )
        })
        .collect();
    let core = core_of(&this).ok_or_else(|| Exc::type_error("_trace needs a set-up Module"))?;
    *core.compiled.borrow_mut() = Some(Rc::new(Compiled {
        original: c.original.clone(),
        plan: None,
        trace: Some(Traced {
            trace: first,
            consts,
            inputs: arrays.len(),
        }),
    }));
    Ok(Value::Bool(true))
}

/// PyTorch's words for a call with the wrong number of inputs (without its declaration).
fn arity_error(expected: usize, got: usize) -> Exc {
    Exc::new(
        ExcKind::RuntimeError,
        format!(
            "forward() expected at most {} argument(s) but received {} argument(s)",
            expected + 1,
            got + 1
        ),
    )
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
    let arrays = !a.pos.is_empty() && a.pos.iter().all(|v| v.as_array().is_some());
    if arrays && a.kw.is_empty() {
        if let Some(plan) = &c.plan {
            if a.pos.len() != plan.n_inputs() {
                return Err(arity_error(plan.n_inputs(), a.pos.len()));
            }
            let training = core_of(&this).is_some_and(|core| core.training.get());
            return run_plan(it, plan, &a.pos, Mode::Torch { training });
        }
        if let Some(t) = &c.trace {
            if a.pos.len() != t.inputs {
                return Err(arity_error(t.inputs, a.pos.len()));
            }
            let mut inputs = Vec::with_capacity(a.pos.len());
            let mut flavor = Flavor::Torch;
            for (k, v) in a.pos.iter().enumerate() {
                if let Some(av) = v.as_array() {
                    if k == 0 {
                        flavor = av.flavor;
                    }
                    inputs.push(av.array.clone());
                }
            }
            let device = inputs[0].device();
            let consts = t
                .consts
                .iter()
                .map(|k| match k {
                    TraceConst::Param(p) => p.data(Some(device)),
                    TraceConst::Array(a) => Ok(a.clone()),
                })
                .collect::<Result<Vec<Array>, _>>()?;
            let st = it.state_mut();
            let y = t.trace.replay(&st.rt, &mut st.nn.tape, &inputs, &consts)?;
            return Ok(wrap(y, flavor));
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
        "_trace",
        builtin(
            "_trace",
            "_trace(traced_module, *examples): records the ops of a forward of its own.",
            trace,
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
