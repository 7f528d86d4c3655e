//! What a dialect adds to the arrays of its flavor (a PyTorch tensor's `grad` and
//! `requires_grad`, `torch.Size` for its shape, `torch.device` for its device), registered by the
//! dialect at start-up through the one mechanism of `python::hooks`, so the array API names no
//! dialect. A flavor without a registration behaves as a plain array.

use crate::modules::python::hooks::{AttrGetter, Hook};
use crate::object::value::Flavor;
use crate::object::{Exc, Interpreter, Value};
use crate::runtime::Device;

pub struct DialectArrays {
    /// The attributes the dialect serves before the shared ones; None when `name` is not its own.
    pub get_attr: AttrGetter,
    /// Sets one of the dialect's attributes; false when `name` is not its own.
    pub set_attr: fn(&mut dyn Interpreter, &Value, &str, &Value) -> Result<bool, Exc>,
    /// The names `get_attr` serves (for `dir(x)`).
    pub attr_names: &'static [&'static str],
    /// What `x.shape` (and `x.size()`) return.
    pub shape: fn(&mut dyn Interpreter, &[usize]) -> Result<Value, Exc>,
    /// What `x.device` returns.
    pub device: fn(Device) -> Value,
    /// The class of an array that has one of its own (a parameter), for `type(x)`.
    pub class_of: fn(&dyn Interpreter, &Value) -> Option<Value>,
    /// A device as the dialect spells it in files' metadata and `map_location` (`'cuda:1'`).
    pub device_text: fn(Device) -> String,
    /// A device the program names in the dialect's spelling (`'cuda:1'`, `torch.device('cpu')`).
    pub parse_device: fn(&Value) -> Result<Device, Exc>,
}

static ND: Hook<DialectArrays> = Hook::new();
static NP: Hook<DialectArrays> = Hook::new();
static TORCH: Hook<DialectArrays> = Hook::new();
static NUMPY: Hook<DialectArrays> = Hook::new();

fn slot(flavor: Flavor) -> &'static Hook<DialectArrays> {
    match flavor {
        Flavor::Nd => &ND,
        Flavor::Np => &NP,
        Flavor::Torch => &TORCH,
        Flavor::Numpy => &NUMPY,
    }
}

/// Called by a dialect at start-up for the flavor its arrays print as.
pub fn register(flavor: Flavor, dialect: DialectArrays) {
    slot(flavor).register(dialect);
}

/// What the dialect of `flavor` adds to its arrays, if it registered anything.
pub fn dialect(flavor: Flavor) -> Option<&'static DialectArrays> {
    slot(flavor).get()
}
