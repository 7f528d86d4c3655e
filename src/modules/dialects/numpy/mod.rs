//! `import numpy as np`: NumPy's spelling of the array API on host arrays (cpu(0)), with NumPy's
//! defaults (float64, int64) and display (`array([1., 2.])`). `x.asnumpy()` / `x.numpy()` give
//! such arrays, and `nd.array(a)`, `np.array(a)` (MXNet), `torch.tensor(a)`,
//! `torch.from_numpy(a)` take them. The shared array API is here, taking lists and numbers as
//! NumPy does, plus `numpy_fns.rs` (NumPy's other functions) and `numpy.random`, NumPy's legacy
//! `RandomState` number for number (`random.rs`); any other name is an AttributeError that
//! lists what there is.

pub mod fp_errors;
pub mod joining;
pub mod more;
pub mod options;
pub mod random;
pub mod rng;
pub mod selection;

use std::rc::Rc;

use crate::object::error::ExcKind;
use crate::object::value::{Module, TypeKind};
use crate::object::Value;

use crate::modules::array::arrays::{self, NUMPY};
use crate::object::value::{Args, BuiltinFn};
use crate::object::{builtin, Exc, Interpreter};

pub fn build(dotted: &str) -> Option<Rc<Module>> {
    match dotted {
        "numpy" => {
            let m = Rc::new(Module::new(
                "numpy",
                "NumPy's array API on host arrays (float64 and int64 by default)",
            ));
            arrays::fill_namespace::<NUMPY>(&m);
            m.set("ndarray", Value::Type(TypeKind::NumpyArray));
            m.set("pi", Value::Float(std::f64::consts::PI));
            m.set("e", Value::Float(std::f64::consts::E));
            m.set("inf", Value::Float(f64::INFINITY));
            m.set("nan", Value::Float(f64::NAN));
            m.set("newaxis", Value::None);
            m.set("__version__", Value::str("1.23.5 (devarray)"));
            let random = crate::modules::dialects::numpy::random::build();
            rng::install(&random);
            m.set("random", Value::Module(random));
            crate::modules::array::numpy_fns::install(&m);
            crate::modules::array::numpy_io::install(&m);
            for name in ARRAY_FIRST {
                if let Some((doc, _)) = original(name) {
                    m.set(name, builtin(name, doc, array_first));
                }
            }
            for (alias, name) in [("amax", "max"), ("amin", "min")] {
                if let Some(f) = m.get(name) {
                    m.set(alias, f);
                }
            }
            for (name, _) in DTYPE_AT {
                if let Some((doc, _)) = original(name) {
                    m.set(name, builtin(name, doc, dtype_positional));
                }
            }
            m.set(
                "unravel_index",
                builtin(
                    "unravel_index",
                    "unravel_index(indices, shape, order='C'): the coordinates of flat indices in an array of that shape.",
                    unravel_index,
                ),
            );
            m.set(
                "identity",
                builtin(
                    "identity",
                    "identity(n, dtype=None): the n x n identity array.",
                    identity,
                ),
            );
            joining::install(&m);
            crate::modules::array::math_more::install::<NUMPY>(&m);
            crate::modules::array::linalg::install::<NUMPY>(&m);
            crate::modules::array::reductions::install::<NUMPY>(&m);
            options::install(&m);
            more::install(&m);
            crate::modules::array::poly::install_numpy(&m);
            m.set("AxisError", Value::ExcType(ExcKind::AxisError));
            // Last: it replaces `repeat`, `unique` and `count_nonzero` with fuller forms.
            selection::install(&m);
            Some(m)
        }
        _ => None,
    }
}

/// The shared namespace functions that NumPy also calls with lists and numbers
/// (`np.sum([1, 2])`, `np.abs(-2.5)`): `array_first` makes an array of the first argument.
const ARRAY_FIRST: &[&str] = &[
    "exp",
    "log",
    "sqrt",
    "abs",
    "square",
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "argmax",
    "argmin",
    "clip",
    "dot",
    "cumsum",
    "all",
    "any",
    "negative",
    "transpose",
    "reshape",
];

/// The shared function a name of `ARRAY_FIRST` stands for.
fn original(name: &str) -> Option<(&'static str, BuiltinFn)> {
    type Table = Vec<(&'static str, &'static str, BuiltinFn)>;
    // Built once: these wrappers run on every call of np.sum and the like.
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    TABLE
        .get_or_init(|| {
            arrays::namespace_fns::<NUMPY>()
                .into_iter()
                .chain(crate::modules::array::array_more::namespace_fns::<NUMPY>())
                .chain(crate::modules::array::numpy_fns::functions())
                .collect()
        })
        .iter()
        // The last definition is the one the module binds (each table overrides the one before).
        .rfind(|(n, _, _)| *n == name)
        .map(|(_, doc, f)| (*doc, *f))
}

/// Calls the shared function with its first argument as a NumPy array; a 0-d result of an
/// elementwise function or reduction is a scalar, as NumPy's ufuncs return.
fn array_first(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let Some((_, f)) = original(a.fname) else {
        return Err(Exc::type_error(format!("{}() is not available", a.fname)));
    };
    if let Some(first) = a.pos.first_mut() {
        if !matches!(first, Value::Array(_)) {
            let arr = crate::modules::array::numpy_fns::as_array(it, first)?;
            *first = Value::Array(arr);
        }
    }
    let keep_0d = matches!(a.fname, "reshape" | "transpose");
    let operand = a.pos.first().cloned();
    let fname = a.fname;
    let out = f(it, a)?;
    // The elementwise functions that can divide by zero, overflow or be undefined report it.
    if let (Some(x), "exp" | "log" | "sqrt") = (&operand, fname) {
        fp_errors::check_values(it, fname, &[x], &out)?;
    }
    match &out {
        Value::Array(x)
            if x.array.ndim() == 0
                && !keep_0d
                && x.flavor == crate::object::value::Flavor::Numpy =>
        {
            crate::object::ops::numpy_scalar(&x.array)
        }
        _ => Ok(out),
    }
}

/// The NumPy creation functions whose dtype may be given by position, and that position
/// (`np.zeros(2, np.int32)`, `np.full(2, 3, np.float32)`, `np.arange(0, 4, 1, np.float32)`).
const DTYPE_AT: &[(&str, usize)] = &[
    ("zeros", 1),
    ("ones", 1),
    ("empty", 1),
    ("full", 2),
    ("arange", 3),
    ("eye", 3),
    ("zeros_like", 1),
    ("ones_like", 1),
    ("full_like", 2),
    ("asarray", 1),
];

/// Calls the shared function with a positional dtype passed as `dtype=`, as NumPy's
/// signatures take it.
fn dtype_positional(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let Some((_, f)) = original(a.fname) else {
        return Err(Exc::type_error(format!("{}() is not available", a.fname)));
    };
    let at = DTYPE_AT
        .iter()
        .find(|(n, _)| *n == a.fname)
        .map_or(usize::MAX, |(_, i)| *i);
    if a.pos.len() > at {
        if a.kw.iter().any(|(k, _)| &**k == "dtype") {
            return Err(Exc::type_error(format!(
                "argument for {}() given by name ('dtype') and position ({})",
                a.fname,
                at + 1
            )));
        }
        let d = a.pos.remove(at);
        a.kw.push((Rc::from("dtype"), d));
    }
    f(it, a)
}

/// `np.unravel_index(indices, shape, order='C')`: a tuple of int64 scalars for one index, of
/// int64 arrays for an array of indices, as NumPy's.
fn unravel_index(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    use crate::runtime::{DType, Device, HostData};
    let indices = a.required(0, "indices")?;
    let shape = a.required(1, "shape")?;
    let order = a.take(2, "order")?;
    a.finish(3)?;
    let dims: Vec<i64> = it
        .iterate(&shape)?
        .iter()
        .map(|d| {
            crate::object::ops::as_i64(d)
                .ok_or_else(|| Exc::type_error("'shape' must be a sequence of integers"))
        })
        .collect::<Result<_, _>>()?;
    let fortran = matches!(&order, Some(Value::Str(s)) if &**s == "F");
    let size: i64 = dims.iter().product();
    let coords = |flat: i64| -> Result<Vec<i64>, Exc> {
        if flat < 0 || flat >= size {
            return Err(Exc::value_error(format!(
                "index {flat} is out of bounds for array with size {size}"
            )));
        }
        let mut out = vec![0; dims.len()];
        let mut rest = flat;
        let order: Vec<usize> = if fortran {
            (0..dims.len()).collect()
        } else {
            (0..dims.len()).rev().collect()
        };
        for k in order {
            let d = dims[k].max(1);
            out[k] = rest % d;
            rest /= d;
        }
        Ok(out)
    };
    let as_int = |v: &Value| {
        crate::object::ops::as_i64(v).ok_or_else(|| {
            Exc::type_error(format!("only int indices permitted, not {}", v.type_name()))
        })
    };
    match &indices {
        Value::Array(x) if x.array.ndim() > 0 => {
            let flat: Vec<i64> = x
                .array
                .to_host()
                .to_f64_vec()
                .iter()
                .map(|&f| f as i64)
                .collect();
            let mut columns = vec![Vec::with_capacity(flat.len()); dims.len()];
            for f in flat {
                for (k, c) in coords(f)?.into_iter().enumerate() {
                    columns[k].push(c);
                }
            }
            let shape = x.array.shape().to_vec();
            let mut out = Vec::new();
            for col in columns {
                let arr =
                    it.state_mut()
                        .rt
                        .from_host(HostData::I64(col), &shape, Device::cpu(0))?;
                out.push(crate::object::ops::wrap(
                    arr,
                    crate::object::value::Flavor::Numpy,
                ));
            }
            Ok(Value::tuple(out))
        }
        other => {
            let flat = as_int(&crate::object::ops::as_number(other)).or_else(|_| match other {
                Value::Array(x) => Ok(x
                    .array
                    .to_host()
                    .to_f64_vec()
                    .first()
                    .copied()
                    .unwrap_or(0.0) as i64),
                _ => as_int(other),
            })?;
            Ok(Value::tuple(
                coords(flat)?
                    .into_iter()
                    .map(|c| {
                        crate::modules::array::scalars::scalar(
                            DType::Int64,
                            crate::runtime::Scalar::Int(c),
                        )
                    })
                    .collect(),
            ))
        }
    }
}

/// `np.identity(n, dtype=None)`.
fn identity(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let n = a.required(0, "n")?;
    let dtype = a.take(1, "dtype")?;
    a.finish(2)?;
    let Some((_, eye)) = original("eye") else {
        return Err(Exc::type_error("identity() is not available"));
    };
    let mut args = Args::new("identity", vec![n]);
    if let Some(d) = dtype.filter(|d| !matches!(d, Value::None)) {
        args.kw.push((Rc::from("dtype"), d));
    }
    eye(it, args)
}
