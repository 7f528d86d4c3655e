//! `Tensor.register_hook(fn)` and the backward that runs the hooks (PyTorch 2.x semantics): a
//! hook is called with a tensor's gradient once it is complete (a leaf's before it is
//! accumulated into `.grad`), several in registration order, each given what the one before
//! returned; a returned tensor replaces the gradient flowing on. `RemovableHandle.remove()`
//! takes a hook off. The tape (`nn::autograd::walk`) keeps the hooks as opaque payloads and
//! stops its walk where one is due, so the user's code runs with no borrow of the tape held.
use std::rc::Rc;

use crate::modules::array::block_hooks::{HookHandle, HookTarget};
use crate::modules::array::blocks::Dialect;
use crate::modules::python::builtins::get_attr;
use crate::object::error::{torch_error, Exc, ExcKind};
use crate::object::ops::wrap;
use crate::object::value::{Args, Flavor, Value};
use crate::object::{method, Interpreter};
use crate::runtime::Array;

fn runtime_error(message: impl Into<String>) -> Exc {
    Exc::new(ExcKind::RuntimeError, message)
}

/// The tensor methods of this file, or None.
pub fn tensor_attr(v: &Value, name: &str) -> Option<Value> {
    match name {
        "register_hook" => Some(method(
            v,
            "register_hook",
            "x.register_hook(hook): call hook(grad) with x's gradient during backward; a tensor it returns replaces the gradient. Returns a handle whose remove() takes the hook off.",
            register_hook,
        )),
        _ => None,
    }
}

fn register_hook(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let hook = a.required(0, "hook")?;
    a.finish(1)?;
    let Some(x) = r.as_array() else {
        return Err(Exc::type_error("register_hook: expected a tensor"));
    };
    let tape = &mut it.state_mut().nn.tape;
    if !tape.requires_grad(&x.array) {
        return Err(runtime_error(
            "cannot register a hook on a tensor that doesn't require gradient",
        ));
    }
    let handle = tape.add_hook(&x.array, Rc::new(hook));
    Ok(HookHandle::value(
        Dialect::Torch,
        HookTarget::Tensor(handle),
    ))
}

/// `y.backward(...)` with hooks: the tape's walk, stopping where a hooked tensor's gradient is
/// complete to run its hooks. An error (a hook's, or the walk's) leaves every `.grad` as it was.
pub(super) fn backward_with_hooks(
    it: &mut dyn Interpreter,
    head: &Array,
    gradient: Option<&Array>,
    retain: bool,
) -> Result<(), Exc> {
    let st = it.state_mut();
    let mut walk = st
        .nn
        .tape
        .begin_torch_backward(&st.rt, head, gradient)
        .map_err(super::autograd::torch_backward_exc)?;
    let walked = loop {
        let st = it.state_mut();
        match st.nn.tape.walk_step(&st.rt, &mut walk) {
            Ok(Some((id, grad))) => match run_hooks(it, id, grad) {
                Ok(Some(grad)) => walk.set_grad(id, grad),
                Ok(None) => {}
                Err(e) => break Err(e),
            },
            Ok(None) => break Ok(()),
            Err(e) => break Err(torch_error(e)),
        }
    };
    let st = it.state_mut();
    let ended = st
        .nn
        .tape
        .end_torch_backward(&st.rt, walk, walked.is_ok(), retain);
    walked?;
    ended.map_err(torch_error)
}

/// Runs array `id`'s hooks on `grad` in order; the gradient to pass on when one changed it.
fn run_hooks(it: &mut dyn Interpreter, id: usize, grad: Array) -> Result<Option<Array>, Exc> {
    let hooks = it.state().nn.tape.hooks_of(id);
    let mut current = grad;
    let mut changed = false;
    for payload in hooks {
        let Some(hook) = payload.downcast_ref::<Value>() else {
            continue;
        };
        let given = wrap(current.clone(), Flavor::Torch);
        let result = it.call_value(hook, Args::positional(vec![given]))?;
        match &result {
            Value::None => {}
            Value::Array(new) => {
                if new.array.shape() != current.shape() {
                    let name = match get_attr(it, hook, "__name__") {
                        Ok(Value::Str(ref n)) => n.to_string(),
                        _ => String::new(),
                    };
                    return Err(runtime_error(format!(
                        "hook '{name}' has changed the size of value"
                    )));
                }
                current = new.array.clone();
                changed = true;
            }
            other => {
                return Err(Exc::type_error(format!(
                    "expected Variable, but hook returned '{}'",
                    other.type_name()
                )))
            }
        }
    }
    Ok(changed.then_some(current))
}
