//! Registration points: where a lower layer of the libraries must reach something an upper layer
//! owns, the lower layer declares a `Hook` here (or in its own `hooks.rs`) and the upper layer
//! registers into it at start-up (`crate::modules::install`). The lower layer never names the
//! upper one, so the imports inside `src/modules` all run down (`tests/layers.rs`).
//!
//! This file holds the mechanism and the hooks of the Python library: what it asks of arrays
//! (a layer above it) and of the notebook helpers (`help`).

use std::sync::OnceLock;

use crate::object::{Exc, Interpreter, Value};

/// A function, or a table of functions, that a lower layer calls and an upper layer provides.
/// Set once per process; until then `get` is None and the caller acts as if the upper layer were
/// absent (a unit test of the lower layer alone).
pub struct Hook<T: 'static>(OnceLock<T>);

impl<T> Hook<T> {
    pub const fn new() -> Self {
        Hook(OnceLock::new())
    }

    /// Registers the provider. Every session of a process registers the same functions, so a
    /// second registration is ignored.
    pub fn register(&self, provider: T) {
        let _ = self.0.set(provider);
    }

    pub fn get(&self) -> Option<&T> {
        self.0.get()
    }
}

impl<T> Default for Hook<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// `x.name` served by an upper layer: None when it has no such attribute.
pub type AttrGetter = fn(&mut dyn Interpreter, &Value, &str) -> Result<Option<Value>, Exc>;

/// What the Python library's built-ins need of arrays (`x.attr`, `dir(x)`, `abs(x)`, `type(x)`).
pub struct ArrayProtocol {
    /// `x.name`: None when the array has no such attribute.
    pub get_attr: AttrGetter,
    pub set_attr: fn(&mut dyn Interpreter, &Value, &str, Value) -> Result<(), Exc>,
    /// `dir(x)`: every attribute name of the array, its dialect's included.
    pub attr_names: fn(&Value) -> Vec<String>,
    pub abs: fn(&mut dyn Interpreter, &Value) -> Result<Value, Exc>,
    /// The class `type(x)` and `isinstance` see for an array that has a class of its own (a
    /// PyTorch parameter is a `torch.nn.Parameter`); None for a plain array.
    pub class_of: fn(&dyn Interpreter, &Value) -> Option<Value>,
    /// `copy.deepcopy` of a value the array layer owns (a model's core, a parameter): None
    /// when the value is not one, and the copy module copies it its own way.
    pub deep_copy: DeepCopyFn,
    /// `isinstance(v, t)` where NumPy's scalar types decide it (`t` is `np.floating`, or
    /// `float` for a `numpy.float64`); None: the usual rules.
    pub numpy_instance: fn(&Value, &Value) -> Option<bool>,
    /// `dtype.type`: the NumPy scalar type of a dtype.
    pub dtype_type: fn(crate::runtime::DType) -> Value,
}

/// See [`ArrayProtocol::deep_copy`].
pub type DeepCopyFn =
    fn(&mut dyn Interpreter, &Value, &mut dyn DeepCopier) -> Result<Option<Value>, Exc>;

/// One `copy.deepcopy` call as the array layer sees it: copies through the call's memo, so
/// what two places share stays shared inside the copy.
pub trait DeepCopier {
    /// The deep copy of `v` (the one already made when `v` was met before).
    fn copy(&mut self, it: &mut dyn Interpreter, v: &Value) -> Result<Value, Exc>;
    /// The copy recorded for the object at address `key`.
    fn memo_get(&self, key: usize) -> Option<Value>;
    fn memo_put(&mut self, key: usize, copy: Value);
}

pub static ARRAYS: Hook<ArrayProtocol> = Hook::new();

/// `help(obj)`: the report `obj?` shows (the notebook helpers' inspector).
pub static HELP: Hook<fn(&mut dyn Interpreter, &Value) -> String> = Hook::new();

/// The array hooks, or the error an array met without them would give (never in a session:
/// `install` registers them first).
pub fn arrays() -> Result<&'static ArrayProtocol, Exc> {
    ARRAYS.get().ok_or_else(|| {
        Exc::type_error("arrays are not available (the array library is not installed)")
    })
}
