//! What the tensor-function files of the PyTorch dialect (`selection.rs`, `reshaping.rs`,
//! `api_more.rs`) share: PyTorch's argument checks and messages, the result wrapper, and
//! `function_form`, which serves `torch.X(input, ...)` as the method `input.X(...)`.
use crate::object::error::{torch_error, Exc, ExcKind};
use crate::object::ops::wrap;
use crate::object::value::{Args, BuiltinFn, Flavor, MethodFn, Module, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{Array, RuntimeError};

pub const T: Flavor = Flavor::Torch;

/// A tensor method's name as bound, its documentation and its code.
pub type TensorMethod = (&'static str, &'static str, MethodFn);

pub fn rt_err(e: RuntimeError) -> Exc {
    torch_error(e)
}

pub fn runtime_error(message: impl Into<String>) -> Exc {
    Exc::new(ExcKind::RuntimeError, message.into())
}

/// An argument that must be a tensor, in PyTorch's words.
pub fn tensor_arg<'a>(v: &'a Value, fname: &str, name: &str, pos: usize) -> Result<&'a Array, Exc> {
    v.as_array().map(|a| &a.array).ok_or_else(|| {
        Exc::type_error(format!(
            "{fname}(): argument '{name}' (position {pos}) must be Tensor, not {}",
            v.type_name()
        ))
    })
}

/// An argument that must be an int (not a bool or a float), in PyTorch's words.
pub fn int_arg(v: &Value, fname: &str, name: &str, pos: usize) -> Result<i64, Exc> {
    match v {
        Value::Bool(_) | Value::Float(_) => None,
        other => crate::object::ops::as_i64(other),
    }
    .ok_or_else(|| {
        Exc::type_error(format!(
            "{fname}(): argument '{name}' (position {pos}) must be int, not {}",
            v.type_name()
        ))
    })
}

/// An optional flag argument (None is the default).
pub fn flag(v: Option<Value>, default: bool) -> Result<bool, Exc> {
    match v {
        None | Some(Value::None) => Ok(default),
        Some(v) => v.truthy(),
    }
}

pub fn out(a: Array) -> Value {
    wrap(a, T)
}

pub fn tape_rt(
    it: &mut dyn Interpreter,
) -> (&mut crate::nn::autograd::Tape, &crate::runtime::Runtime) {
    let st = it.state_mut();
    (&mut st.nn.tape, &st.rt)
}

/// `[2, 3]`, as PyTorch's messages print a shape.
pub fn size_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// The method `name` of a file's table of tensor methods, bound to `v`; None when the table
/// lacks it.
pub fn bound_method(
    table: fn(&str) -> Option<TensorMethod>,
    v: &Value,
    name: &str,
) -> Option<Value> {
    let (mname, doc, f) = table(name)?;
    Some(method(v, mname, doc, f))
}

/// Sets `torch.name` for each of `names` the table has, as `form` (the file's
/// [`function_form`] over that table).
pub fn install_forms(
    m: &Module,
    names: &[&str],
    table: fn(&str) -> Option<TensorMethod>,
    form: BuiltinFn,
) {
    for &name in names {
        if let Some((fname, doc, _)) = table(name) {
            m.set(name, builtin(fname, doc, form));
        }
    }
}

/// `torch.name(input, ...)`: the method `lookup(name)` on `input`.
pub fn function_form(
    it: &mut dyn Interpreter,
    mut a: Args,
    lookup: fn(&str) -> Option<TensorMethod>,
) -> Result<Value, Exc> {
    let name = a.fname;
    let x = if a.pos.is_empty() {
        match a.kw.iter().position(|(k, _)| &**k == "input") {
            Some(i) => a.kw.remove(i).1,
            None => {
                return Err(Exc::type_error(format!(
                    "{name}() missing 1 required positional arguments: \"input\""
                )))
            }
        }
    } else {
        a.pos.remove(0)
    };
    tensor_arg(&x, name, "input", 1)?;
    let Some((_, _, f)) = lookup(name) else {
        return Err(Exc::type_error(format!("torch has no function {name}")));
    };
    f(it, &x, a)
}
