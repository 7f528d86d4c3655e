//! `torch._jit`: what `torch.jit` (written in the language, `library/torch/jit.da`) compiles a
//! module with. `_compile(module)` builds the module's graph once (`array::graph::module_graph`)
//! into a plan; `_run(plan, training, *inputs)` runs it with the same runtime ops as the module
//! (the same bits, recorded for autograd), with no interpreter between the layers.
use std::rc::Rc;

use crate::modules::array::graph::{module_graph, run_plan, Mode, Plan};
use crate::object::error::Exc;
use crate::object::value::{Args, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};

/// A compiled module's plan, held by its `RecursiveScriptModule`.
struct Compiled(Plan);

impl NativeObject for Compiled {
    fn type_name(&self) -> &str {
        "torch._C.Graph"
    }
    fn repr(&self) -> String {
        "<torch._C.Graph>".into()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `_compile(module)`: the plan of a module of built-in layers, or None (it then runs as
/// written).
fn compile(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let module = a.required(0, "module")?;
    a.finish(1)?;
    let Some(head) = module_graph(&module) else {
        return Ok(Value::None);
    };
    let plan = Plan::compile(vec![head], &["data".to_string()], false)?;
    Ok(Value::Object(Rc::new(Compiled(plan))))
}

/// `_run(plan, training, *inputs)`.
fn run(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let plan = a.required(0, "plan")?;
    let training = a.required(1, "training")?.truthy()?;
    let inputs: Vec<Value> = a.pos.drain(..).skip(2).collect();
    a.finish(0)?;
    let Value::Object(o) = &plan else {
        return Err(Exc::type_error("_run needs a plan from _compile"));
    };
    let Some(Compiled(plan)) = o.as_any().downcast_ref::<Compiled>() else {
        return Err(Exc::type_error("_run needs a plan from _compile"));
    };
    if inputs.len() != plan.n_inputs() {
        return Err(Exc::type_error(format!(
            "forward() takes {} positional argument(s) but {} were given",
            plan.n_inputs(),
            inputs.len()
        )));
    }
    run_plan(it, plan, &inputs, Mode::Torch { training })
}

pub fn build() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "torch._jit",
        "devarray's compiler behind torch.jit: a module's graph, run without the interpreter",
    ));
    m.set(
        "_compile",
        builtin(
            "_compile",
            "_compile(module): the compiled plan of a module of built-in layers, or None.",
            compile,
        ),
    );
    m.set(
        "_run",
        builtin(
            "_run",
            "_run(plan, training, *inputs): runs a compiled plan.",
            run,
        ),
    );
    m
}
