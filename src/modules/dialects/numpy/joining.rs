//! `np.concatenate` and `np.stack` with NumPy 1.23's arguments and errors: a sequence of arrays
//! or anything array-like, `axis=None` joining the arrays flattened, and NumPy's messages
//! (`numpy_fns::joined`, which `vstack`/`hstack` share).
use crate::modules::array::numpy_fns::{as_array, joined};
use crate::object::error::Exc;
use crate::object::ops::{as_i64, wrap};
use crate::object::value::{Args, ArrayValue, Module, Value};
use crate::object::{builtin, Interpreter};

pub fn install(m: &Module) {
    m.set(
        "concatenate",
        builtin(
            "concatenate",
            "concatenate((a1, a2, ...), axis=0): the arrays joined along an existing axis (flattened first when axis is None).",
            concatenate,
        ),
    );
    m.set(
        "stack",
        builtin(
            "stack",
            "stack(arrays, axis=0): the arrays, all of one shape, joined along a new axis.",
            stack,
        ),
    );
}

fn parts(it: &mut dyn Interpreter, seq: &Value) -> Result<Vec<ArrayValue>, Exc> {
    let items = it.iterate(seq)?;
    items.iter().map(|v| as_array(it, v)).collect()
}

/// The `axis` argument: None is `None` (only `concatenate` takes it).
fn axis_arg(v: Option<Value>) -> Result<Option<i64>, Exc> {
    match v {
        None => Ok(Some(0)),
        Some(Value::None) => Ok(None),
        Some(v) => as_i64(&v).map(Some).ok_or_else(|| {
            Exc::type_error(format!(
                "'{}' object cannot be interpreted as an integer",
                v.type_name()
            ))
        }),
    }
}

fn concatenate(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let seq = a.required(0, "arrays")?;
    let axis = axis_arg(a.take(1, "axis")?)?;
    a.finish(2)?;
    let mut parts = parts(it, &seq)?;
    let axis = match axis {
        Some(axis) => axis,
        None => {
            for p in &mut parts {
                p.array = p.array.reshape(&[-1])?;
            }
            0
        }
    };
    joined(it, parts, axis as isize)
}

fn stack(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let seq = a.required(0, "arrays")?;
    let axis = axis_arg(a.take(1, "axis")?)?.unwrap_or(0);
    a.finish(2)?;
    let parts = parts(it, &seq)?;
    let Some(first) = parts.first() else {
        return Err(Exc::value_error("need at least one array to stack"));
    };
    if parts.iter().any(|p| p.array.shape() != first.array.shape()) {
        return Err(Exc::value_error(
            "all input arrays must have the same shape",
        ));
    }
    let flavor = first.flavor;
    let raw: Vec<_> = parts.into_iter().map(|p| p.array).collect();
    let out = it.state_mut().nn.tape.stack(&raw, axis as isize)?;
    Ok(wrap(out, flavor))
}
