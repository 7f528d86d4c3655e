//! MXNet names beyond the shared API: `mxnet.np.diag` (a vector as a diagonal matrix, a
//! matrix's diagonal; on the tape through `array::selection`), `mxnet.np.nonzero` (NumPy's
//! indices, as int64 arrays on the input's device), `nd.linspace` (`np.linspace`'s
//! values as an NDArray) and `nd.one_hot` (MXNet's `one_hot` operator: indices outside
//! [0, depth) give a row of `off_value`).
use crate::modules::array::arrays::dtype_arg;
use crate::modules::array::selection as sel;
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, Flavor, Module, Value};
use crate::object::{builtin, Exc, Interpreter};
use crate::runtime::{DType, Device, HostData};

/// Adds `diag` and `nonzero` to `mxnet.np`.
pub fn install_np(m: &Module) {
    m.set(
        "nonzero",
        builtin(
            "nonzero",
            "nonzero(a): the indices of the nonzero elements, one int64 array per axis.",
            nonzero,
        ),
    );
    m.set(
        "diag",
        builtin(
            "diag",
            "diag(v, k=0): a 1-D v as a square matrix with v on diagonal k, or a 2-D v's diagonal k.",
            diag,
        ),
    );
}

/// Adds `linspace` and `one_hot` to `mxnet.nd`.
pub fn install_nd(m: &Module) {
    m.set(
        "linspace",
        builtin(
            "linspace",
            "linspace(start, stop, num, endpoint=True, ctx=None, dtype='float32'): num evenly spaced values from start to stop.",
            |it, a| super::np_more::linspace_as(it, a, Flavor::Nd),
        ),
    );
    m.set(
        "one_hot",
        builtin(
            "one_hot",
            "one_hot(indices, depth, on_value=1, off_value=0, dtype='float32'): a new last axis of length depth, on_value at each index and off_value elsewhere.",
            one_hot,
        ),
    );
}

/// NumPy's `nonzero` (the host computes the indices), as MXNet's arrays where the input is.
pub(crate) fn nonzero(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "a")?;
    a.finish(1)?;
    let Some(x) = v.as_array() else {
        return Err(Exc::type_error(format!(
            "nonzero(): a must be an ndarray, not {}",
            v.type_name()
        )));
    };
    let device = x.array.device();
    let found = crate::modules::array::numpy_fns::nonzero_of(it, x)?;
    let Value::Tuple(per_axis) = &found else {
        return Err(Exc::type_error("nonzero(): no indices"));
    };
    let mut out = Vec::with_capacity(per_axis.len());
    for index in per_axis.iter() {
        if let Some(i) = index.as_array() {
            out.push(wrap(i.array.copy_to(&it.state().rt, device)?, Flavor::Np));
        }
    }
    Ok(Value::tuple(out))
}

fn diag(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let v = a.required(0, "v")?;
    let k = a.take(1, "k")?;
    a.finish(2)?;
    let Some(x) = v.as_array() else {
        return Err(Exc::type_error(format!(
            "diag(): v must be an ndarray, not {}",
            v.type_name()
        )));
    };
    let k = match &k {
        None => 0,
        Some(k) => {
            as_i64(k).ok_or_else(|| Exc::type_error("diag(): k must be an integer".to_string()))?
        }
    };
    let (x, flavor) = (x.array.clone(), x.flavor);
    let st = it.state_mut();
    let (tape, rt) = (&mut st.nn.tape, &st.rt);
    let out = match x.ndim() {
        0 | 1 => {
            let v = if x.ndim() == 0 {
                tape.reshape(&x, &[1])?
            } else {
                x
            };
            sel::diag_embed(tape, rt, &v, k)?
        }
        2 => sel::diagonal(tape, rt, &x, k, 0, 1)?,
        n => {
            return Err(super::np_more::mx_error(
                "../src/operator/numpy/./np_matrix_op-inl.h",
                971,
                format!("Check failed: ishape.ndim() <= 2 ({n} vs. 2) : Input must be 1- or 2-d"),
            ))
        }
    };
    Ok(wrap(out, flavor))
}

fn one_hot(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let indices = a.required(0, "indices")?;
    let depth = a.required(1, "depth")?;
    let on = a.take(2, "on_value")?;
    let off = a.take(3, "off_value")?;
    let dtype = a.take(4, "dtype")?;
    a.take_kw("out");
    a.finish(5)?;
    let Some(x) = indices.as_array() else {
        return Err(Exc::type_error(format!(
            "one_hot(): indices must be an NDArray, not {}",
            indices.type_name()
        )));
    };
    let depth = as_i64(&depth)
        .filter(|d| *d >= 0)
        .ok_or_else(|| Exc::value_error("one_hot(): depth must be a non-negative integer"))?
        as usize;
    let number = |v: &Option<Value>, default: f64| match v {
        None | Some(Value::None) => Ok(default),
        Some(v) => as_f64(v).ok_or_else(|| {
            Exc::type_error(format!(
                "one_hot(): expected a number, not {}",
                v.type_name()
            ))
        }),
    };
    let (on, off) = (number(&on, 1.0)?, number(&off, 0.0)?);
    let dtype = match &dtype {
        None | Some(Value::None) => DType::Float32,
        Some(d) => dtype_arg(d)?.unwrap_or(DType::Float32),
    };
    let positions = x.array.to_host().to_f64_vec();
    let mut values = vec![off; positions.len() * depth];
    for (row, p) in positions.iter().enumerate() {
        // MXNet casts the index to an integer; one outside [0, depth) sets nothing.
        let p = p.trunc();
        if p >= 0.0 && (p as usize) < depth {
            values[row * depth + p as usize] = on;
        }
    }
    let mut shape = x.array.shape().to_vec();
    shape.push(depth);
    let device = x.array.device();
    let st = it.state();
    let host = st
        .rt
        .from_host(HostData::F64(values), &shape, Device::cpu(0))?
        .astype(dtype)?;
    Ok(wrap(host.copy_to(&st.rt, device)?, x.flavor))
}
