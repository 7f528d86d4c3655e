//! NumPy's floating-point error reports: after a NumPy operation (`a / 0`, `np.log(a)`,
//! `np.float64(1) / 0`), the IEEE conditions it raised (divide by zero, overflow, invalid
//! value) reported as `np.seterr`/`np.errstate` say (`options.rs` keeps the modes): a
//! `RuntimeWarning: divide by zero encountered in divide` at the program's line (`warn`,
//! `raise` as FloatingPointError, `print` on stderr (the first condition only), `ignore`). The conditions are found from
//! the operands and the result, element by element with broadcasting, as the hardware flags
//! would have been raised. Registered into `object::ops::NUMPY_FP_CHECK` at start-up.
use crate::object::error::{Exc, ExcKind};
use crate::object::Interpreter;
use crate::runtime::{Array, DType};

/// One operand of a checked operation: an array's host values and shape, or a number.
pub enum Input {
    Values(Vec<f64>, Vec<usize>),
    Number(f64),
}

impl Input {
    /// The operand's value at the flat position `at` of a result of `shape`.
    fn at(&self, shape: &[usize], at: usize) -> f64 {
        match self {
            Input::Number(v) => *v,
            Input::Values(values, own) => {
                // Broadcast: each result coordinate, from the last axis, read modulo this shape.
                let mut rest = at;
                let mut offset = 0;
                let mut stride = 1;
                for (k, &n) in shape.iter().enumerate().rev() {
                    let coord = rest % n.max(1);
                    rest /= n.max(1);
                    let lead = shape.len() - own.len();
                    if k >= lead {
                        let d = own[k - lead];
                        if d > 1 {
                            offset += coord * stride;
                        }
                        stride *= d;
                    }
                }
                values.get(offset).copied().unwrap_or(0.0)
            }
        }
    }

    fn of(a: &Array) -> Input {
        Input::Values(a.to_host().to_f64_vec(), a.shape().to_vec())
    }
}

/// A result's values, shape and dtype.
pub struct Output {
    pub values: Vec<f64>,
    pub shape: Vec<usize>,
    pub dtype: DType,
}

impl Output {
    pub fn of(a: &Array) -> Output {
        Output {
            values: a.to_host().to_f64_vec(),
            shape: a.shape().to_vec(),
            dtype: a.dtype(),
        }
    }
}

/// What a NumPy operation raised: [divide, over, invalid] (under is ignored by default and
/// not tracked).
fn conditions(ufunc: &str, inputs: &[Input], out: &Output, integer: bool) -> [bool; 3] {
    let (values, shape) = (&out.values, &out.shape);
    let mut flags = [false; 3];
    for (at, r) in values.iter().enumerate() {
        let args: Vec<f64> = inputs.iter().map(|i| i.at(shape, at)).collect();
        let finite_in = args.iter().all(|v| v.is_finite());
        let nan_in = args.iter().any(|v| v.is_nan());
        let divisor_zero = matches!(ufunc, "divide" | "floor_divide" | "remainder")
            && args.get(1).is_some_and(|d| *d == 0.0);
        if integer {
            flags[0] |= divisor_zero;
            continue;
        }
        if r.is_nan() && !nan_in {
            flags[2] = true;
        } else if r.is_infinite() && finite_in {
            let pole = divisor_zero
                || (matches!(ufunc, "log" | "log2" | "log10" | "reciprocal")
                    && args.first() == Some(&0.0))
                || (ufunc == "power" && args.first() == Some(&0.0));
            flags[if pole { 0 } else { 1 }] = true;
        }
    }
    flags
}

/// Reports what the NumPy operation `ufunc` (NumPy's name: `divide`, `log`...) on `inputs`
/// giving `out` raised, under the current error modes, naming it `shown` (the ufunc, or
/// `double_scalars` for an operation of two scalars).
pub fn check(
    it: &mut dyn Interpreter,
    ufunc: &str,
    shown: &str,
    inputs: &[Input],
    out: &Output,
) -> Result<(), Exc> {
    let integer = !out.dtype.is_float();
    let integer_division = integer && matches!(ufunc, "floor_divide" | "remainder");
    if integer && !integer_division {
        return Ok(());
    }
    if out.dtype == DType::Bool {
        return Ok(());
    }
    let flags = conditions(ufunc, inputs, out, integer);
    // NumPy's `print` mode reports only the first condition of an operation.
    let mut printed = false;
    for (k, (kind, text)) in [(0, "divide by zero"), (1, "overflow"), (3, "invalid value")]
        .into_iter()
        .enumerate()
    {
        if !flags[k] {
            continue;
        }
        let message = format!("{text} encountered in {shown}");
        match super::options::err_mode(kind) {
            "ignore" => {}
            "raise" => return Err(Exc::new(ExcKind::FloatingPointError, message)),
            "print" if !printed => {
                printed = true;
                it.out().stderr(&format!("Warning: {message}\n"));
            }
            "print" => {}
            _ => crate::modules::python::stdlib::warnings::warn_at_line(
                it,
                "RuntimeWarning",
                &message,
            )?,
        }
    }
    Ok(())
}

/// [`check`] for an operation the object layer ran (`object::ops::NUMPY_FP_CHECK`): the
/// runtime's operation name as NumPy's ufunc names it (`a ** 0.5` runs NumPy's `sqrt`, as
/// its `power` does for that exponent; an operation of two scalars is `double_scalars`,
/// `float_scalars`...).
pub fn check_values(
    it: &mut dyn Interpreter,
    name: &str,
    operands: &[&crate::object::Value],
    out: &crate::object::Value,
) -> Result<(), Exc> {
    use crate::modules::array::scalars::NpScalar;
    use crate::object::ops::as_f64;
    use crate::object::value::Flavor;
    use crate::object::Value;
    let out = match out {
        Value::Array(a) if a.flavor == Flavor::Numpy => Output::of(&a.array),
        Value::Object(o) => match o.as_any().downcast_ref::<NpScalar>() {
            Some(s) => Output {
                values: vec![s.value.as_f64()],
                shape: Vec::new(),
                dtype: s.dtype,
            },
            None => return Ok(()),
        },
        _ => return Ok(()),
    };
    let inputs: Vec<Input> = operands
        .iter()
        .map(|v| match v {
            Value::Array(a) => Input::of(&a.array),
            other => Input::Number(as_f64(other).unwrap_or(0.0)),
        })
        .collect();
    let arrays = operands.iter().any(|v| matches!(v, Value::Array(_)));
    let exponent = match operands.get(1) {
        Some(Value::Array(_)) | None => None,
        Some(v) => as_f64(v),
    };
    let ufunc = match name {
        "mod" => "remainder",
        "power" if arrays && exponent == Some(0.5) => "sqrt",
        "power" if arrays && exponent == Some(2.0) => "square",
        "power" if arrays && exponent == Some(-1.0) => "reciprocal",
        other => other,
    };
    let shown = match out.dtype {
        _ if arrays => ufunc,
        DType::Float32 => "float_scalars",
        DType::Float16 => "half_scalars",
        DType::Float64 => "double_scalars",
        DType::Int8 => "byte_scalars",
        DType::Int16 => "short_scalars",
        DType::Int32 => "int_scalars",
        DType::UInt8 => "ubyte_scalars",
        DType::UInt16 => "ushort_scalars",
        DType::UInt32 => "uint_scalars",
        DType::UInt64 => "ulong_scalars",
        _ => "long_scalars",
    };
    check(it, ufunc, shown, &inputs, &out)
}
