//! Forward hooks of blocks, both dialects: `register_forward_pre_hook(hook)` runs
//! `hook(block, args)` before `forward`, `register_forward_hook(hook)` runs
//! `hook(block, args, output)` after it, in registration order. In PyTorch a hook's non-None
//! result replaces the input (a tuple, or one value) or the output; Gluon ignores it. The
//! handle they return (PyTorch's `RemovableHandle.remove()`, Gluon's `HookHandle.detach()`)
//! is also what a tensor's `register_hook` returns.
use std::cell::RefCell;
use std::rc::{Rc, Weak};

use super::blocks::{core_of, CoreData, Dialect};
use crate::modules::python::native::bound;
use crate::object::error::Exc;
use crate::object::value::{Args, BuiltinFn, NativeObject, Value};
use crate::object::Interpreter;

/// A hook registered on a block.
#[derive(Clone)]
pub struct BlockHook {
    handle: u64,
    /// Runs before `forward` (a pre-hook) or after it.
    pre: bool,
    hook: Value,
}

/// The hooks of a block, in registration order.
#[derive(Default)]
pub struct BlockHooks(RefCell<Vec<BlockHook>>);

impl BlockHooks {
    fn add(&self, pre: bool, hook: Value) -> u64 {
        let handle = next_handle();
        self.0.borrow_mut().push(BlockHook { handle, pre, hook });
        handle
    }
    fn remove(&self, handle: u64) {
        self.0.borrow_mut().retain(|h| h.handle != handle);
    }
    pub fn is_empty(&self) -> bool {
        self.0.borrow().is_empty()
    }
    fn of_kind(&self, pre: bool) -> Vec<Value> {
        (self.0.borrow().iter())
            .filter(|h| h.pre == pre)
            .map(|h| h.hook.clone())
            .collect()
    }
}

/// Handles are numbered per thread, as PyTorch numbers them per process.
fn next_handle() -> u64 {
    thread_local! {
        static NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    NEXT.with(|n| {
        n.set(n.get() + 1);
        n.get()
    })
}

/// `block(*args)` around `forward`: the pre-hooks, `forward`, the forward hooks.
pub fn call_with_hooks(
    it: &mut dyn Interpreter,
    this: &Value,
    core: &CoreData,
    mut a: Args,
    forward: &Value,
) -> Result<Value, Exc> {
    let replaces = core.dialect == Dialect::Torch;
    for hook in core.hooks.of_kind(true) {
        let args = Value::tuple(a.pos.clone());
        let result = it.call_value(&hook, Args::positional(vec![this.clone(), args]))?;
        match result {
            Value::None => {}
            _ if !replaces => {}
            Value::Tuple(ref items) => a.pos = items.to_vec(),
            other => a.pos = vec![other],
        }
    }
    let post = core.hooks.of_kind(false);
    let args = (!post.is_empty()).then(|| Value::tuple(a.pos.clone()));
    let mut out = it.call_value(forward, a)?;
    for hook in post {
        let args = args.clone().unwrap_or(Value::None);
        let result = it.call_value(
            &hook,
            Args::positional(vec![this.clone(), args, out.clone()]),
        )?;
        if replaces && !matches!(result, Value::None) {
            out = result;
        }
    }
    Ok(out)
}

/// `register_forward_pre_hook` and `register_forward_hook`, for every block.
pub fn methods() -> Vec<(&'static str, BuiltinFn)> {
    vec![
        ("register_forward_pre_hook", |it, a| register(it, a, true)),
        ("register_forward_hook", |it, a| register(it, a, false)),
    ]
}

fn register(_: &mut dyn Interpreter, mut a: Args, pre: bool) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    let hook = a.required(1, "hook")?;
    a.finish(2)?;
    let core = core_of(&this).ok_or_else(|| Exc::type_error("expected a block"))?;
    let handle = core.hooks.add(pre, hook);
    let target = HookTarget::Block(Rc::downgrade(&core.0), handle);
    Ok(HookHandle::value(core.dialect, target))
}

/// What a handle takes off.
pub enum HookTarget {
    /// A tensor's gradient hook, by the tape's handle.
    Tensor(u64),
    /// A block's hook (the block may be gone).
    Block(Weak<CoreData>, u64),
}

/// PyTorch's `torch.utils.hooks.RemovableHandle` and Gluon's `HookHandle`.
pub struct HookHandle {
    dialect: Dialect,
    target: HookTarget,
}

impl HookHandle {
    pub fn value(dialect: Dialect, target: HookTarget) -> Value {
        Value::Object(Rc::new(HookHandle { dialect, target }))
    }

    fn names(&self) -> (&'static str, &'static str, &'static str) {
        match self.dialect {
            Dialect::Torch => ("RemovableHandle", "torch.utils.hooks", "remove"),
            Dialect::Gluon => ("HookHandle", "mxnet.gluon.utils", "detach"),
        }
    }

    fn detach(it: &mut dyn Interpreter, r: &Value, a: Args) -> Result<Value, Exc> {
        a.finish(0)?;
        let h = crate::modules::python::native::downcast::<HookHandle>(r, "a hook handle")?;
        match &h.target {
            HookTarget::Tensor(handle) => it.state_mut().nn.tape.remove_hook(*handle),
            HookTarget::Block(core, handle) => {
                if let Some(core) = core.upgrade() {
                    core.hooks.remove(*handle);
                }
            }
        }
        Ok(Value::None)
    }
}

impl NativeObject for HookHandle {
    fn type_name(&self) -> &str {
        self.names().0
    }
    fn repr(&self) -> String {
        let (name, module, _) = self.names();
        format!(
            "<{module}.{name} object at {:#x}>",
            self as *const _ as usize
        )
    }
    fn class_value(&self) -> Option<Value> {
        thread_local! {
            static CLASSES: [Value; 2] = [Dialect::Torch, Dialect::Gluon].map(|d| {
                let (name, module, _) = HookHandle { dialect: d, target: HookTarget::Tensor(0) }.names();
                Value::Class(crate::modules::python::stdlib::native_class(
                    name,
                    module,
                    Value::Type(crate::object::value::TypeKind::Object),
                    "A handle which provides the capability to remove a hook.",
                    &[],
                ))
            });
        }
        let k = usize::from(self.dialect == Dialect::Gluon);
        CLASSES.with(|c| c.get(k).cloned())
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let (_, _, detach) = self.names();
        (name == detach).then(|| {
            bound(
                this,
                detach,
                "handle.remove() / handle.detach(): take the hook off (nothing if it is already off).",
                HookHandle::detach,
            )
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![self.names().2]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
