//! The array API of the language: creation functions (shared by the native,
//! MXNet `nd`/`np` and PyTorch spellings), array attributes and methods, and
//! the elementwise/reduction functions of the namespaces.
//!
//! One implementation serves every dialect; the dialect only decides the
//! flavor (how results print) and a few defaults, via the const parameter `F`.

use crate::modules::array::hooks;
use std::rc::Rc;

use crate::runtime::{Array, DType, Device, HostData, ReduceOp, Scalar, UnaryOp};

use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, ArrayValue, BuiltinFn, Flavor, MethodFn, Value};
use crate::object::{builtin, method, Interpreter};

/// Dialect codes for the const parameter of the creation functions.
pub const NATIVE: u8 = 0;
pub const ND: u8 = 1;
pub const NP: u8 = 2;
pub const TORCH: u8 = 3;
/// NumPy (`import numpy as np`): host arrays, float64 and int64 by default.
pub const NUMPY: u8 = 4;

/// The dtype a dialect gives floats when none is asked for: NumPy's float64, else float32.
fn float_default(f: u8) -> DType {
    if f == NUMPY {
        DType::Float64
    } else {
        DType::Float32
    }
}

pub fn flavor_for(it: &dyn Interpreter, f: u8) -> Flavor {
    match f {
        ND => Flavor::Nd,
        NP => Flavor::Np,
        TORCH => Flavor::Torch,
        NUMPY => Flavor::Numpy,
        _ if it.state().np_mode => Flavor::Np,
        _ => Flavor::Nd,
    }
}

/// Creation functions accept `@ device` placement (see the interpreter's
/// handling of `ones(2,3) @ gpu(0)`).
pub fn is_creator(name: &str) -> bool {
    matches!(
        name,
        "array"
            | "ones"
            | "zeros"
            | "full"
            | "arange"
            | "eye"
            | "uniform"
            | "normal"
            | "tensor"
            | "rand"
            | "randn"
            | "empty"
    )
}

// ------------------------------------------------------------------ arguments

/// A device from `ctx=`/`device=`: a device value, or PyTorch's strings
/// (`'cpu'`, `'cuda'`, `'cuda:1'`).
pub fn device_arg(v: &Value) -> Result<Device, Exc> {
    match v {
        Value::Device(d) => Ok(*d),
        Value::Str(s) => parse_device_str(s).ok_or_else(|| {
            Exc::value_error(format!(
                "unknown device '{s}': use 'cpu', 'cuda', 'cuda:1', or cpu()/gpu(i)"
            ))
        }),
        Value::Object(o) => o
            .get_attr(o, "__device__")
            .and_then(|d| match d {
                Value::Device(d) => Some(d),
                _ => None,
            })
            .ok_or_else(|| Exc::type_error(format!("expected a device, got {}", o.type_name()))),
        other => Err(Exc::type_error(format!(
            "expected a device such as cpu() or gpu(0), got {}",
            other.type_name()
        ))),
    }
}

pub fn parse_device_str(s: &str) -> Option<Device> {
    let s = s.trim();
    let (kind, idx) = match s.split_once(':') {
        Some((k, i)) => (k, Some(i.parse::<usize>().ok()?)),
        None => match s.strip_suffix(')').and_then(|x| x.split_once('(')) {
            Some((k, i)) => (k, Some(i.parse::<usize>().ok()?)),
            None => (s, None),
        },
    };
    match kind {
        "cpu" => Some(Device::cpu(idx.unwrap_or(0))),
        "cuda" | "gpu" => Some(Device::gpu(idx.unwrap_or(0))),
        _ => None,
    }
}

pub fn dtype_arg(v: &Value) -> Result<Option<DType>, Exc> {
    match v {
        Value::None => Ok(None),
        Value::DType(d, _) => Ok(Some(*d)),
        // NumPy's one-letter and sized codes.
        Value::Str(s) if DType::from_name(s).is_none() && dtype_code(s).is_some() => {
            Ok(dtype_code(s))
        }
        Value::Str(s) if super::scalars::MISSING.contains(&&**s) => {
            Err(super::scalars::missing_error(s))
        }
        Value::Str(s) => DType::from_name(s)
            .map(Some)
            .ok_or_else(|| Exc::type_error(format!("data type '{s}' not understood"))),
        Value::Type(crate::object::value::TypeKind::Float) => Ok(Some(DType::Float64)),
        Value::Type(crate::object::value::TypeKind::Int) => Ok(Some(DType::Int64)),
        Value::Type(crate::object::value::TypeKind::Bool) => Ok(Some(DType::Bool)),
        // NumPy's scalar types (`np.float32`) name their dtype.
        Value::Object(o) if matches!(o.get_attr(o, "__dtype__"), Some(Value::DType(..))) => {
            match o.get_attr(o, "__dtype__") {
                Some(Value::DType(d, _)) => Ok(Some(d)),
                _ => Ok(None),
            }
        }
        Value::Object(o) if matches!(o.get_attr(o, "__missing_dtype__"), Some(Value::Str(_))) => {
            let name = match &o.get_attr(o, "__missing_dtype__") {
                Some(Value::Str(s)) => s.to_string(),
                _ => String::new(),
            };
            Err(super::scalars::missing_error(&name))
        }
        other => Err(Exc::type_error(format!(
            "data type not understood: {}",
            other.type_name()
        ))),
    }
}

/// A NumPy type code (`'f'`, `'f4'`, `'d'`, `'i8'`, `'?'`...) of a dtype the runtime has.
fn dtype_code(s: &str) -> Option<DType> {
    Some(match s {
        "f" | "f4" | "<f4" | "single" => DType::Float32,
        "d" | "f8" | "<f8" | "double" | "float" | "float_" => DType::Float64,
        "i" | "i4" | "<i4" | "intc" => DType::Int32,
        "l" | "q" | "i8" | "<i8" | "int" | "int_" | "long" | "longlong" => DType::Int64,
        "?" | "b1" | "bool_" => DType::Bool,
        "e" | "<f2" | "float16" => DType::Float16,
        "b" | "|i1" | "byte" => DType::Int8,
        "h" | "<i2" => DType::Int16,
        "B" | "|u1" | "ubyte" => DType::UInt8,
        "H" | "<u2" | "ushort" => DType::UInt16,
        "I" | "<u4" | "uintc" => DType::UInt32,
        "L" | "Q" | "<u8" | "uint" | "ulonglong" => DType::UInt64,
        _ => return None,
    })
}

fn dim(v: &Value) -> Result<usize, Exc> {
    let i = as_i64(v).ok_or_else(|| {
        Exc::type_error(format!(
            "shape dimensions must be integers, not {}",
            v.type_name()
        ))
    })?;
    usize::try_from(i)
        .map_err(|_| Exc::value_error(format!("negative dimensions are not allowed (got {i})")))
}

/// A shape given as an int, a tuple or a list.
pub fn shape_arg(v: &Value) -> Result<Vec<usize>, Exc> {
    match &crate::modules::array::array_more::tuple_like(v) {
        Value::Tuple(t) => t.iter().map(dim).collect(),
        Value::List(l) => l.borrow().iter().map(dim).collect(),
        other => Ok(vec![dim(other)?]),
    }
}

/// Shape from `f((2, 3))`, `f(2, 3)` or `f(shape=(2, 3))`/`size=`: consumes
/// the positional arguments.
fn shape_from(a: &mut Args) -> Result<Vec<usize>, Exc> {
    if let Some(s) = a.take_kw("shape").or_else(|| a.take_kw("size")) {
        return shape_arg(&s);
    }
    let pos = std::mem::take(&mut a.pos);
    match pos.as_slice() {
        [] => Err(Exc::type_error(format!(
            "{}() missing required argument 'shape'",
            a.fname
        ))),
        [one] => shape_arg(one),
        many => many.iter().map(dim).collect(),
    }
}

/// The common keywords: device (`ctx=`/`device=`) and dtype.
fn place(it: &dyn Interpreter, a: &mut Args) -> Result<(Device, Option<DType>), Exc> {
    let ctx = a.take_kw("ctx");
    let dev = a.take_kw("device");
    let device = match (ctx, dev) {
        (Some(c), _) if !matches!(c, Value::None) => device_arg(&c)?,
        (_, Some(d)) if !matches!(d, Value::None) => device_arg(&d)?,
        _ => it.state().default_device,
    };
    let dtype = match a.take_kw("dtype") {
        Some(d) => dtype_arg(&d)?,
        None => None,
    };
    a.take_kw("requires_grad");
    Ok((device, dtype))
}

/// [`place`] for dialect `F`: NumPy's arrays live on the host whatever the default device.
fn place_for<const F: u8>(
    it: &dyn Interpreter,
    a: &mut Args,
) -> Result<(Device, Option<DType>), Exc> {
    let (device, dtype) = place(it, a)?;
    Ok((if F == NUMPY { Device::cpu(0) } else { device }, dtype))
}

// ------------------------------------------------------------------- creation

fn creator<const F: u8>(it: &mut dyn Interpreter, mut a: Args, value: f64) -> Result<Value, Exc> {
    let (device, dtype) = place_for::<F>(it, &mut a)?;
    let shape = shape_from(&mut a)?;
    a.finish(0)?;
    let arr = it
        .state_mut()
        .rt
        .full(&shape, value, dtype.unwrap_or(float_default(F)), device)?;
    Ok(wrap(arr, flavor_for(it, F)))
}

pub fn ones<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    creator::<F>(it, a, 1.0)
}

pub fn zeros<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    creator::<F>(it, a, 0.0)
}

pub fn full<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (device, dtype) = place_for::<F>(it, &mut a)?;
    let shape = shape_arg(&a.required(0, "shape")?)?;
    let fill = a.required(1, "fill_value")?;
    a.finish(2)?;
    let v = as_f64(&fill).ok_or_else(|| {
        Exc::type_error(format!(
            "fill_value must be a number, not {}",
            fill.type_name()
        ))
    })?;
    // PyTorch infers the dtype from the fill value; MXNet always uses float32.
    let default = match (&fill, F) {
        (Value::Bool(_), TORCH | NUMPY) => DType::Bool,
        (Value::Int(_), TORCH | NUMPY) => DType::Int64,
        _ => float_default(F),
    };
    crate::object::ops::int_fits(&fill, dtype.unwrap_or(default))?;
    let arr = it
        .state_mut()
        .rt
        .full(&shape, v, dtype.unwrap_or(default), device)?;
    Ok(wrap(arr, flavor_for(it, F)))
}

fn like<const F: u8>(it: &mut dyn Interpreter, mut a: Args, value: f64) -> Result<Value, Exc> {
    let x = a.required(0, "data")?;
    a.finish(1)?;
    let Value::Array(x) = &x else {
        return Err(Exc::type_error(format!("{}() expects an array", a.fname)));
    };
    let arr = it
        .state_mut()
        .rt
        .full(x.array.shape(), value, x.array.dtype(), x.array.device())?;
    Ok(wrap(arr, x.flavor))
}

pub fn ones_like<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    like::<F>(it, a, 1.0)
}

pub fn zeros_like<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    like::<F>(it, a, 0.0)
}

/// What the leaves of nested data are, found by `scan_nested` before anything is copied.
#[derive(Default)]
struct Leaves {
    float: bool,
    int: bool,
    /// Every leaf is an int, a bool or an int64 array: the values can be kept exactly as
    /// int64 (an int past 2**53 is not an f64).
    all_exact: bool,
    /// The depth of the numbers seen so far (an array's numbers lie below it).
    depth: Option<usize>,
}

impl Leaves {
    /// Numbers at `depth`: every number must lie at one depth (`(1, (2, 3))` is ragged).
    fn at_depth(&mut self, depth: usize) -> Result<(), Exc> {
        match self.depth {
            Some(d) if d != depth => Err(ragged_depths()),
            _ => {
                self.depth = Some(depth);
                Ok(())
            }
        }
    }
}

fn ragged_depths() -> Exc {
    Exc::value_error(
        "setting an array element with a sequence: the nested lists have different depths",
    )
}

/// The items of a list or tuple (a tuple subclass such as `torch.Size` holds a tuple), read
/// in place.
fn with_items<R>(v: &Value, f: impl FnOnce(Option<&[Value]>) -> R) -> R {
    if let Some(t @ Value::Tuple(_)) = crate::object::class::base_value(v) {
        return with_items(&t, f);
    }
    match v {
        Value::List(l) => f(Some(&l.borrow())),
        Value::Tuple(t) => f(Some(t)),
        _ => f(None),
    }
}

/// The shape pass over nested lists/tuples of numbers and arrays: checks that they are
/// rectangular and numeric, and notes what the leaves are, without copying a value, so the
/// fill (`fill_nested`) sizes its output once.
fn scan_nested(
    v: &Value,
    shape: &mut Vec<usize>,
    depth: usize,
    leaves: &mut Leaves,
) -> Result<(), Exc> {
    let scanned = with_items(v, |items| -> Option<Result<(), Exc>> {
        let items = items?;
        Some((|| {
            if depth > 32 {
                return Err(Exc::value_error("array nesting deeper than 32 levels"));
            }
            if leaves.depth.is_some_and(|d| d <= depth) {
                return Err(ragged_depths());
            }
            if shape.len() == depth {
                shape.push(items.len());
            } else if shape.get(depth) != Some(&items.len()) {
                return Err(Exc::value_error(
                    "setting an array element with a sequence: the nested lists have different lengths (the shape is inhomogeneous)",
                ));
            }
            for x in items {
                scan_nested(x, shape, depth + 1, leaves)?;
            }
            Ok(())
        })())
    });
    if let Some(r) = scanned {
        return r;
    }
    match v {
        Value::Array(a) => {
            let sub = a.array.shape();
            if shape.len() == depth {
                shape.extend_from_slice(sub);
            } else if shape.get(depth..) != Some(sub) {
                return Err(Exc::value_error(
                    "setting an array element with a sequence: inhomogeneous shapes",
                ));
            }
            leaves.at_depth(depth + sub.len())?;
            leaves.float |= a.array.dtype().is_float();
            leaves.int |= a.array.dtype().is_int();
            leaves.all_exact &= a.array.dtype() == DType::Int64;
            Ok(())
        }
        other => {
            if shape.len() != depth {
                return Err(ragged_depths());
            }
            leaves.at_depth(depth)?;
            match &*crate::object::ops::as_number(other) {
                // No object arrays: an int past 64 bits has no dtype here (NumPy's words
                // for it as int64; PyTorch's are put in `array_from`).
                Value::BigInt(_) => {
                    return Err(Exc::new(
                        ExcKind::OverflowError,
                        "Python int too large to convert to C long",
                    ))
                }
                Value::Float(_) => {
                    leaves.float = true;
                    leaves.all_exact = false;
                }
                Value::Bool(_) => {}
                Value::Int(_) => leaves.int = true,
                _ => leaves.all_exact = false,
            }
            if as_f64(other).is_none() {
                return Err(Exc::type_error(format!(
                    "array() expects numbers or nested lists of numbers, got {}",
                    other.type_name()
                )));
            }
            Ok(())
        }
    }
}

/// The fill pass: the leaves of data `scan_nested` accepted, appended in order to `out`
/// (sized once by the caller), each number through `number` and each array's host copy
/// through `array`.
fn fill_nested<T>(
    v: &Value,
    out: &mut Vec<T>,
    number: &dyn Fn(&Value) -> T,
    array: &dyn Fn(HostData, &mut Vec<T>),
) -> Result<(), Exc> {
    let filled = with_items(v, |items| -> Option<Result<(), Exc>> {
        let items = items?;
        Some(
            items
                .iter()
                .try_for_each(|x| fill_nested(x, out, number, array)),
        )
    });
    if let Some(r) = filled {
        return r;
    }
    match v {
        Value::Array(a) => array(a.array.try_to_host()?, out),
        other => out.push(number(other)),
    }
    Ok(())
}

pub fn array<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (device, mut dtype) = place_for::<F>(it, &mut a)?;
    let data = a.required(0, "data")?;
    if F == NUMPY {
        // np.array(object, dtype=None, *, copy=True, order='K', subok=False, ndmin=0): the
        // result is always a fresh array here, so copy and order change nothing.
        for kw in ["copy", "order", "subok"] {
            a.take_kw(kw);
        }
        let ndmin = match a.take_kw("ndmin") {
            Some(v) => as_i64(&v).ok_or_else(|| {
                Exc::type_error(format!(
                    "'{}' object cannot be interpreted as an integer",
                    v.type_name()
                ))
            })?,
            None => 0,
        };
        if let Some(d) = a.take(1, "dtype")? {
            dtype = dtype_arg(&d)?;
        }
        a.finish(2)?;
        let out = array_from(it, &data, device, dtype, F)?;
        return match &out {
            Value::Array(x) if (x.array.ndim() as i64) < ndmin => {
                let mut shape: Vec<isize> = vec![1; ndmin as usize - x.array.ndim()];
                shape.extend(x.array.shape().iter().map(|&n| n as isize));
                Ok(wrap(x.array.reshape(&shape)?, x.flavor))
            }
            _ => Ok(out),
        };
    }
    if a.pos.len() > 1 {
        // nd.array(data, ctx) positional form.
        if let Some(c) = a.pos.get(1).cloned() {
            let _ = a.take(1, "ctx")?;
            let device = device_arg(&c)?;
            a.finish(2)?;
            return array_from(it, &data, device, dtype, F);
        }
    }
    a.finish(1)?;
    array_from(it, &data, device, dtype, F)
}

fn array_from(
    it: &mut dyn Interpreter,
    data: &Value,
    device: Device,
    dtype: Option<DType>,
    f: u8,
) -> Result<Value, Exc> {
    let mut shape = Vec::new();
    let mut leaves = Leaves {
        all_exact: true,
        ..Leaves::default()
    };
    scan_nested(data, &mut shape, 0, &mut leaves).map_err(|e| {
        if f == TORCH && e.kind == ExcKind::OverflowError {
            Exc::value_error("Overflow when unpacking long long")
        } else {
            e
        }
    })?;
    let kinds = (leaves.float, leaves.int);
    let count = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(crate::object::alloc::memory_error)?;
    let default = if let (Value::Array(src), true) = (data, f != ND) {
        // torch.tensor(a), np.array(a), mx.np.array(a) keep the source's dtype.
        src.array.dtype()
    } else if let (Value::Array(src), ND) = (data, f) {
        // MXNet's nd.array makes float32 from a NumPy array, and keeps an NDArray's dtype.
        if src.flavor == Flavor::Numpy {
            DType::Float32
        } else {
            src.array.dtype()
        }
    } else if let Some(d) = super::scalars::leaves_dtype(data).filter(|_| f != ND) {
        // NumPy's scalars keep their dtypes (`np.array([np.float32(1)])` is float32).
        d
    } else if f == TORCH || f == NUMPY {
        if kinds.0 {
            float_default(f)
        } else if kinds.1 {
            DType::Int64
        } else if matches!(data, Value::Bool(_)) || (count > 0 && !kinds.0 && !kinds.1) {
            DType::Bool
        } else {
            float_default(f)
        }
    } else {
        DType::Float32
    };
    let dtype = dtype.unwrap_or(default);
    // One fill into an output sized once: int64 kept exactly, anything else through f64.
    let rt = &it.state_mut().rt;
    let arr = if dtype == DType::Int64 && leaves.all_exact {
        let mut ints = crate::object::alloc::vec(count)?;
        fill_nested(
            data,
            &mut ints,
            &|x| as_i64(x).unwrap_or_default(),
            &|host, out| match host {
                HostData::I64(d) => out.extend(d),
                other => out.extend(other.to_f64_vec().into_iter().map(|x| x as i64)),
            },
        )?;
        rt.from_host(HostData::I64(ints), &shape, device)?
    } else {
        let mut flat = crate::object::alloc::vec(count)?;
        fill_nested(
            data,
            &mut flat,
            &|x| as_f64(x).unwrap_or(f64::NAN),
            &|host, out| match host {
                HostData::F64(d) => out.extend(d),
                other => out.extend(other.to_f64_vec()),
            },
        )?;
        rt.from_f64(flat, &shape, dtype, device)?
    };
    Ok(wrap(arr, flavor_for(it, f)))
}

pub fn arange<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (device, dtype) = place_for::<F>(it, &mut a)?;
    let start = a.required(0, "start")?;
    let stop = a.take(1, "stop")?;
    let step = a.take(2, "step")?;
    a.finish(3)?;
    let num = |v: &Value, what: &str| {
        as_f64(v).ok_or_else(|| {
            Exc::type_error(format!(
                "arange() {what} must be a number, not {}",
                v.type_name()
            ))
        })
    };
    let all_int = [Some(&start), stop.as_ref(), step.as_ref()]
        .iter()
        .flatten()
        .all(|v| matches!(v, Value::Int(_) | Value::None));
    let (lo, hi) = match &stop {
        Some(s) if !matches!(s, Value::None) => (num(&start, "start")?, num(s, "stop")?),
        _ => (0.0, num(&start, "stop")?),
    };
    let st = match &step {
        Some(s) if !matches!(s, Value::None) => num(s, "step")?,
        _ => 1.0,
    };
    if st == 0.0 {
        return Err(Exc::value_error("arange() step must not be zero"));
    }
    let default = if (F == TORCH || F == NUMPY) && all_int {
        DType::Int64
    } else {
        float_default(F)
    };
    let arr = it
        .state_mut()
        .rt
        .arange(lo, hi, st, dtype.unwrap_or(default), device)?;
    Ok(wrap(arr, flavor_for(it, F)))
}

pub fn eye<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (device, dtype) = place_for::<F>(it, &mut a)?;
    let n = dim(&a.required(0, "N")?)?;
    let m = match a.take(1, "M")? {
        Some(Value::None) | None => n,
        Some(v) => dim(&v)?,
    };
    let k = match a.take(2, "k")? {
        Some(v) => as_i64(&v).ok_or_else(|| Exc::type_error("eye() k must be an integer"))?,
        None => 0,
    };
    a.finish(3)?;
    let arr = it
        .state_mut()
        .rt
        .eye(n, m, k, dtype.unwrap_or(float_default(F)), device)?;
    Ok(wrap(arr, flavor_for(it, F)))
}

fn num_kw(a: &mut Args, i: usize, name: &str, default: f64) -> Result<f64, Exc> {
    match a.take(i, name)? {
        None | Some(Value::None) => Ok(default),
        Some(v) => as_f64(&v).ok_or_else(|| {
            Exc::type_error(format!("{name} must be a number, not {}", v.type_name()))
        }),
    }
}

fn sample_shape(a: &mut Args, i: usize) -> Result<Vec<usize>, Exc> {
    match a.take_kw("shape").or_else(|| a.take_kw("size")) {
        Some(s) => shape_arg(&s),
        None => match a.pos.get(i).cloned() {
            Some(s) => {
                a.pos.truncate(i);
                shape_arg(&s)
            }
            None => Ok(Vec::new()),
        },
    }
}

/// The two sampling distributions; both take two parameters and a shape.
#[derive(Clone, Copy)]
enum Distribution {
    Uniform,
    Normal,
}

/// `uniform(low, high, shape)` / `normal(loc, scale, shape)` in every dialect.
fn sample<const F: u8>(
    it: &mut dyn Interpreter,
    mut a: Args,
    dist: Distribution,
) -> Result<Value, Exc> {
    let (device, dtype) = place(it, &mut a)?;
    let shape = sample_shape(&mut a, 2)?;
    let (names, defaults) = match dist {
        Distribution::Uniform => (["low", "high"], [0.0, 1.0]),
        Distribution::Normal => (["loc", "scale"], [0.0, 1.0]),
    };
    let p0 = num_kw(&mut a, 0, names[0], defaults[0])?;
    let p1 = num_kw(&mut a, 1, names[1], defaults[1])?;
    a.finish(2)?;
    // MXNet's legacy API returns shape (1,) when no shape is given.
    let shape = if shape.is_empty() && F == ND {
        vec![1]
    } else {
        shape
    };
    let dtype = dtype.unwrap_or(DType::Float32);
    let flavor = flavor_for(it, F);
    let rt = &it.state_mut().rt;
    let arr = match (dist, flavor) {
        (Distribution::Uniform, Flavor::Torch) => {
            rt.torch_uniform(p0, p1, &shape, dtype, device)?
        }
        (Distribution::Uniform, Flavor::Np) => rt.np_uniform(p0, p1, &shape, dtype, device)?,
        (Distribution::Uniform, _) => rt.mx_uniform(p0, p1, &shape, dtype, device)?,
        (Distribution::Normal, Flavor::Torch) => rt.torch_normal(p0, p1, &shape, dtype, device)?,
        (Distribution::Normal, Flavor::Np) => rt.np_normal(p0, p1, &shape, dtype, device)?,
        (Distribution::Normal, _) => rt.mx_normal(p0, p1, &shape, dtype, device)?,
    };
    Ok(wrap(arr, flavor_for(it, F)))
}

pub fn uniform<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    sample::<F>(it, a, Distribution::Uniform)
}

pub fn normal<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    sample::<F>(it, a, Distribution::Normal)
}

/// PyTorch's `rand(*size)` / `randn(*size)`: standard distributions, shape as dimensions.
fn standard_sample<const F: u8>(
    it: &mut dyn Interpreter,
    mut a: Args,
    dist: Distribution,
) -> Result<Value, Exc> {
    let (device, dtype) = place(it, &mut a)?;
    let shape = shape_from(&mut a)?;
    a.finish(0)?;
    let dtype = dtype.unwrap_or(DType::Float32);
    let flavor = flavor_for(it, F);
    let rt = &it.state_mut().rt;
    let arr = match (dist, flavor) {
        (Distribution::Uniform, Flavor::Torch) => {
            rt.torch_uniform(0.0, 1.0, &shape, dtype, device)?
        }
        (Distribution::Uniform, Flavor::Np) => rt.np_uniform(0.0, 1.0, &shape, dtype, device)?,
        (Distribution::Uniform, _) => rt.mx_uniform(0.0, 1.0, &shape, dtype, device)?,
        (Distribution::Normal, Flavor::Torch) => {
            rt.torch_normal(0.0, 1.0, &shape, dtype, device)?
        }
        (Distribution::Normal, Flavor::Np) => rt.np_normal(0.0, 1.0, &shape, dtype, device)?,
        (Distribution::Normal, _) => rt.mx_normal(0.0, 1.0, &shape, dtype, device)?,
    };
    Ok(wrap(arr, flavor_for(it, F)))
}

pub fn rand<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    standard_sample::<F>(it, a, Distribution::Uniform)
}

pub fn randn<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    standard_sample::<F>(it, a, Distribution::Normal)
}

pub fn seed(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let s = a.required(0, "seed")?;
    a.take_kw("ctx");
    a.finish(1)?;
    let s = as_i64(&s).ok_or_else(|| Exc::type_error("seed must be an integer"))?;
    it.state_mut().rt.seed(s as u64);
    Ok(Value::None)
}

// ------------------------------------------------------------ array methods

/// Every attribute and method name of an array (for completion and hints).
pub const ATTRS: &[&str] = &[
    "attach_grad",
    "backward",
    "detach",
    "grad",
    "shape",
    "dtype",
    "context",
    "ctx",
    "device",
    "size",
    "ndim",
    "T",
    "asnumpy",
    "asscalar",
    "item",
    "tolist",
    "copyto",
    "as_in_context",
    "as_in_ctx",
    "to",
    "copy",
    "reshape",
    "transpose",
    "flatten",
    "expand_dims",
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "argmax",
    "argmin",
    "exp",
    "log",
    "sqrt",
    "abs",
    "tanh",
    "sigmoid",
    "relu",
    "square",
    "norm",
    "astype",
    "clip",
    "wait_to_read",
    "dot",
    "cuda",
    "cpu",
    "numpy",
    "zeros_like",
    "ones_like",
];

fn recv(r: &Value) -> Result<&ArrayValue, Exc> {
    r.as_array()
        .ok_or_else(|| Exc::type_error(format!("expected an array, got {}", r.type_name())))
}

fn scalar_value(s: Scalar) -> Value {
    match s {
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::Int(i),
        Scalar::Float(f) => Value::Float(f),
    }
}

/// Axis argument: None, an int, or a tuple of ints.
fn axes_arg(v: Option<Value>) -> Result<Option<Vec<isize>>, Exc> {
    let v = v.map(|v| match &v {
        Value::List(l) => Value::tuple(l.borrow().clone()),
        other => crate::modules::array::array_more::tuple_like(other),
    });
    match &v {
        None | Some(Value::None) => Ok(None),
        Some(Value::Tuple(t)) => t
            .iter()
            .map(|x| {
                as_i64(x).map(|i| i as isize).ok_or_else(|| {
                    Exc::type_error("axis must be an integer or a tuple of integers")
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(x) => as_i64(x)
            .map(|i| Some(vec![i as isize]))
            .ok_or_else(|| Exc::type_error("axis must be an integer or a tuple of integers")),
    }
}

pub(crate) fn reduce(
    it: &mut dyn Interpreter,
    r: &Value,
    mut a: Args,
    op: ReduceOp,
) -> Result<Value, Exc> {
    let x = recv(r)?;
    let axis = a.take(0, "axis")?.or_else(|| a.take_kw("dim"));
    let keepdims = a
        .take(1, "keepdims")?
        .or_else(|| a.take_kw("keepdim"))
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(false);
    a.finish(2)?;
    let axes = axes_arg(axis)?;
    if x.flavor == Flavor::Numpy {
        let nd = x.array.ndim() as isize;
        if let Some(bad) = axes
            .iter()
            .flatten()
            .find(|i| **i < -nd || **i >= nd.max(1))
        {
            return Err(Exc::new(
                ExcKind::AxisError,
                format!("axis {bad} is out of bounds for array of dimension {nd}"),
            ));
        }
    }
    let whole = axes.is_none() && !keepdims;
    let tape = &mut it.state_mut().nn.tape;
    let dtype = x.array.dtype();
    if x.flavor == Flavor::Torch && op == ReduceOp::Mean && !dtype.is_float() {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            format!(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                torch_scalar_type_name(dtype)
            ),
        ));
    }
    let input = if x.flavor == Flavor::Numpy && op == ReduceOp::Mean && !dtype.is_float() {
        // NumPy averages integers in float64.
        x.array.astype(DType::Float64)?
    } else if let Some(wide) = accumulate_dtype(x.flavor, op, dtype) {
        tape.astype(&x.array, wide)?
    } else {
        x.array.clone()
    };
    let mut out = tape.reduce(&input, op, axes.as_deref(), keepdims)?;
    if x.flavor == Flavor::Numpy && out.ndim() == 0 {
        // NumPy's full reductions return scalars (`3.0`, not `array(3.)`).
        return crate::object::ops::numpy_scalar(&out);
    }
    if x.flavor == Flavor::Nd {
        // MXNet's legacy API returns (1,)-shaped results for full reductions,
        // and argmax/argmin as float indices.
        if whole {
            out = tape.reshape(&out, &[1])?;
        }
        if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) {
            out = out.astype(DType::Float32)?;
        }
    }
    Ok(wrap(out, x.flavor))
}

/// The dtype a sum or product of `dtype` accumulates in, where it is not the array's own:
/// NumPy sums the integers narrower than 64 bits in int64 (signed) or uint64 (unsigned),
/// PyTorch sums every integer in int64; MXNet keeps the array's dtype.
pub fn accumulate_dtype(flavor: Flavor, op: ReduceOp, dtype: DType) -> Option<DType> {
    if !matches!(op, ReduceOp::Sum | ReduceOp::Prod) || !dtype.is_int() {
        return None;
    }
    let wide = match flavor {
        Flavor::Numpy if dtype.is_unsigned() => DType::UInt64,
        Flavor::Numpy | Flavor::Torch => DType::Int64,
        _ => return None,
    };
    (wide != dtype).then_some(wide)
}

/// PyTorch's C++ name of a dtype in its messages (`Byte` for uint8, `Long` for int64).
pub fn torch_scalar_type_name(dtype: DType) -> &'static str {
    crate::nn::autograd::torch_scalar_type(dtype)
}

pub fn unary_fn(it: &mut dyn Interpreter, v: &Value, op: UnaryOp) -> Result<Value, Exc> {
    let x = recv(v)?;
    let float_op = !matches!(
        op,
        UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Square
            | UnaryOp::Relu
            | UnaryOp::Sign
            | UnaryOp::Not
            | UnaryOp::Floor
            | UnaryOp::Ceil
            | UnaryOp::Round
            | UnaryOp::Trunc
    );
    if x.flavor == Flavor::Numpy && float_op && !x.array.dtype().is_float() {
        // NumPy computes float functions of integers in the smallest float holding them.
        let wide = x
            .array
            .astype(super::numpy_fns::numpy_float_for(x.array.dtype()))?;
        return Ok(wrap(it.state_mut().nn.tape.unary(&wide, op)?, x.flavor));
    }
    Ok(wrap(it.state_mut().nn.tape.unary(&x.array, op)?, x.flavor))
}

fn to_device(
    it: &mut dyn Interpreter,
    r: &Value,
    target: &Value,
    always_copy: bool,
) -> Result<Value, Exc> {
    let x = recv(r)?;
    if let Value::Array(dst) = target {
        if always_copy {
            // copyto(other_array): copy into it.
            x.array.copy_into(&dst.array)?;
            return Ok(target.clone());
        }
    }
    if let Some(dt) = match target {
        Value::DType(..) => dtype_arg(target)?,
        _ => None,
    } {
        return Ok(wrap(x.array.astype(dt)?, x.flavor));
    }
    let d = device_arg(target)?;
    let out = if always_copy {
        let st = it.state_mut();
        st.nn.tape.copy_to(&st.rt, &x.array, d)?
    } else {
        let st = it.state_mut();
        st.nn.tape.as_in_device(&st.rt, &x.array, d)?
    };
    Ok(wrap(out, x.flavor))
}

fn shape_args(a: &mut Args) -> Result<Vec<isize>, Exc> {
    let pos = match a.take_kw("shape").or_else(|| a.take_kw("newshape")) {
        Some(s) => vec![s],
        None => std::mem::take(&mut a.pos),
    };
    let pos: Vec<Value> = pos
        .iter()
        .map(crate::modules::array::array_more::tuple_like)
        .collect();
    let items: Vec<Value> = match pos.as_slice() {
        [Value::Tuple(t)] => t.as_ref().clone(),
        [Value::List(l)] => l.borrow().clone(),
        other => other.to_vec(),
    };
    items
        .iter()
        .map(|v| {
            as_i64(v).map(|i| i as isize).ok_or_else(|| {
                Exc::type_error(format!(
                    "shape entries must be integers, not {}",
                    v.type_name()
                ))
            })
        })
        .collect()
}

/// Nested lists of the values; sizes go through the fallible path (a MemoryError for a list
/// the system cannot hold, as CPython's).
fn tolist(a: &ArrayValue) -> Result<Value, Exc> {
    fn build(data: &[Value], shape: &[usize]) -> Result<Value, Exc> {
        match shape.split_first() {
            None => Ok(data.first().cloned().unwrap_or(Value::None)),
            Some((n, rest)) => {
                let stride: usize = rest.iter().product();
                let mut items = crate::object::alloc::vec(*n)?;
                for i in 0..*n {
                    let part = data.get(i * stride..(i + 1) * stride).unwrap_or(&[]);
                    items.push(build(part, rest)?);
                }
                Ok(Value::list(items))
            }
        }
    }
    let mut flat: Vec<Value> = crate::object::alloc::vec(a.array.size())?;
    match a.array.try_to_host()? {
        HostData::F32(d) => flat.extend(d.iter().map(|x| Value::Float(*x as f64))),
        HostData::F64(d) => flat.extend(d.into_iter().map(Value::Float)),
        HostData::I32(d) => flat.extend(d.iter().map(|x| Value::Int(*x as i64))),
        HostData::I64(d) => flat.extend(d.into_iter().map(Value::Int)),
        HostData::Bool(d) => flat.extend(d.into_iter().map(Value::Bool)),
        other => flat.extend((0..other.len()).map(|i| match other.scalar_at(i) {
            Some(Scalar::Float(f)) => Value::Float(f),
            Some(Scalar::Int(n)) => Value::Int(n),
            Some(Scalar::Bool(b)) => Value::Bool(b),
            None => Value::None,
        })),
    };
    build(&flat, a.array.shape())
}

pub fn get_attr(it: &mut dyn Interpreter, v: &Value, name: &str) -> Result<Option<Value>, Exc> {
    let x = recv(v)?;
    let dialect = hooks::dialect(x.flavor);
    if let Some(d) = dialect {
        if let Some(found) = (d.get_attr)(it, v, name)? {
            return Ok(Some(found));
        }
    }
    let arr = &x.array;
    Ok(Some(match name {
        "shape" => match dialect {
            Some(d) => (d.shape)(it, arr.shape())?,
            None => Value::tuple(arr.shape().iter().map(|d| Value::Int(*d as i64)).collect()),
        },
        "dtype" => Value::DType(arr.dtype(), x.flavor),
        "context" | "ctx" => Value::Device(arr.device()),
        "device" => dialect.map_or(Value::Device(arr.device()), |d| (d.device)(arr.device())),
        // PyTorch's `size` is a method (`array_more`).
        "size" if x.flavor != Flavor::Torch => Value::Int(arr.size() as i64),
        "ndim" => Value::Int(arr.ndim() as i64),
        "T" => wrap(it.state_mut().nn.tape.transpose(arr, None)?, x.flavor),
        "grad" => {
            return Ok(Some(
                it.state_mut()
                    .nn
                    .tape
                    .grad(arr)
                    .map_or(Value::None, |g| wrap(g, x.flavor)),
            ))
        }
        _ => {
            let (doc, f): (&'static str, MethodFn) = match name {
                "asnumpy" | "numpy" => ("x.asnumpy(): a host copy as a numpy-style array.", |it, r, a| {
                    a.finish(0)?;
                    let x = recv(r)?;
                    if x.flavor == Flavor::Torch && x.array.device().kind != crate::runtime::DeviceKind::Cpu {
                        // PyTorch never copies to the host implicitly here.
                        return Err(Exc::type_error(format!(
                            "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
                            crate::object::format::torch_device_name(x.array.device())
                        )));
                    }
                    if x.flavor == Flavor::Torch && a.fname == "numpy" {
                        // PyTorch's numpy() of a CPU tensor shares its memory.
                        return Ok(wrap(x.array.clone(), Flavor::Numpy));
                    }
                    // Reading a value on the host: an implicit transfer when x lives elsewhere.
                    let host = x.array.to_host_array(&it.state_mut().rt)?;
                    Ok(wrap(host, Flavor::Numpy))
                }),
                "asscalar" | "item" => ("x.asscalar() / x.item(): the value of a 1-element array as a number.", |it, r, a| {
                    a.finish(0)?;
                    crate::object::class::tracer_warning(it, r, "number")?;
                    let x = recv(r)?;
                    if x.flavor == Flavor::Numpy && x.array.size() != 1 {
                        return Err(Exc::value_error("can only convert an array of size 1 to a Python scalar"));
                    }
                    let v = x.array.to_scalar(a.fname)?;
                    // MXNet's asscalar() is `self.asnumpy()[0]`, a NumPy scalar (a numpy.float32
                    // prints 4.1618223, not 4.161822319030762); item() is a Python number.
                    if a.fname == "asscalar" {
                        return Ok(crate::modules::array::scalars::scalar(x.array.dtype(), v));
                    }
                    Ok(scalar_value(v))
                }),
                "tolist" => ("x.tolist(): nested lists of numbers.", |_, r, a| {
                    a.finish(0)?;
                    tolist(recv(r)?)
                }),
                "copyto" => ("x.copyto(device or array): a copy on the device (always new memory), or a copy into the array.", |it, r, mut a| {
                    let t = a.required(0, "other")?;
                    a.finish(1)?;
                    to_device(it, r, &t, true)
                }),
                "as_in_context" | "as_in_ctx" | "to" => ("x.as_in_context(device): x itself when already there, else a copy.", |it, r, mut a| {
                    // PyTorch's forms: to(device), to(dtype), to(device, dtype), keywords.
                    let first = a.take(0, "device")?.or_else(|| a.take_kw("ctx"));
                    let second = a.take(1, "dtype")?;
                    a.take_kw("non_blocking");
                    a.take_kw("copy");
                    a.finish(2)?;
                    let (device, dtype) = match first {
                        Some(d @ Value::DType(..)) => (None, Some(d)),
                        other => (other, second.filter(|d| !matches!(d, Value::None))),
                    };
                    if device.is_none() && dtype.is_none() {
                        return Err(Exc::type_error("missing the target device"));
                    }
                    let moved = match &device {
                        Some(d) => to_device(it, r, d, false)?,
                        None => r.clone(),
                    };
                    match dtype.as_ref().map(dtype_arg).transpose()?.flatten() {
                        Some(dt) => {
                            let x = recv(&moved)?;
                            if x.array.dtype() == dt {
                                return Ok(moved.clone());
                            }
                            Ok(wrap(it.state_mut().nn.tape.astype(&x.array, dt)?, x.flavor))
                        }
                        None => Ok(moved),
                    }
                }),
                "cuda" => ("x.cuda(i=0): x on cuda:i (itself when already there).", |it, r, mut a| {
                    let i = a.take(0, "device")?;
                    a.finish(1)?;
                    let d = match i {
                        None | Some(Value::None) => Device::gpu(0),
                        Some(Value::Int(i)) => Device::gpu(usize::try_from(i).map_err(|_| Exc::value_error("device index must be >= 0"))?),
                        Some(other) => device_arg(&other)?,
                    };
                    to_device(it, r, &Value::Device(d), false)
                }),
                "cpu" => ("x.cpu(): x on the CPU (itself when already there).", |it, r, a| {
                    a.finish(0)?;
                    to_device(it, r, &Value::Device(Device::cpu(0)), false)
                }),
                "copy" => ("x.copy(): a copy on the same device.", |it, r, a| {
                    a.finish(0)?;
                    let x = recv(r)?;
                    Ok(wrap(x.array.copy_to(&it.state_mut().rt, x.array.device())?, x.flavor))
                }),
                "reshape" => ("x.reshape(shape): the same data with a new shape (one -1 is inferred).", |it, r, mut a| {
                    let s = shape_args(&mut a)?;
                    a.finish(0)?;
                    let x = recv(r)?;
                    let st = it.state_mut();
                    let out = match st.nn.tape.reshape(&x.array, &s) {
                        Err(_) if x.flavor == Flavor::Numpy => {
                            let dims: Vec<String> = s.iter().map(|d| if *d < 0 { "newaxis".to_string() } else { d.to_string() }).collect();
                            let shape = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(",")) };
                            return Err(Exc::value_error(format!("cannot reshape array of size {} into shape {shape}", x.array.size())));
                        }
                        other => other?,
                    };
                    if x.flavor == Flavor::Np {
                        // MXNet's numpy mode returns a copy (legacy nd, PyTorch and NumPy share).
                        return Ok(wrap(st.nn.tape.copy_to(&st.rt, &out, out.device())?, x.flavor));
                    }
                    Ok(wrap(out, x.flavor))
                }),
                "transpose" => ("x.transpose(*axes): axes permuted (reversed by default); a PyTorch tensor's transpose(dim0, dim1) exchanges two dims.", |it, r, mut a| {
                    if recv(r)?.flavor == Flavor::Torch {
                        return torch_transpose(it, r, a);
                    }
                    let axes = if a.pos.is_empty() && a.kw.is_empty() { None } else { Some(shape_args(&mut a)?) };
                    a.finish(0)?;
                    let x = recv(r)?;
                    Ok(wrap(it.state_mut().nn.tape.transpose(&x.array, axes.as_deref())?, x.flavor))
                }),
                "attach_grad" => ("x.attach_grad(grad_req='write'): give x a gradient buffer (x.grad) that backward() fills.", |it, r, mut a| {
                    let req = a.take(0, "grad_req")?;
                    a.take_kw("stype");
                    a.finish(1)?;
                    let accumulate = match &req {
                        None => false,
                        Some(Value::Str(s)) if &**s == "write" => false,
                        Some(Value::Str(s)) if &**s == "add" => true,
                        Some(other) => return Err(Exc::value_error(format!("attach_grad: grad_req must be 'write' or 'add', not {}", crate::object::format::repr(it, other)?))),
                    };
                    let x = recv(r)?;
                    let st = it.state_mut();
                    st.nn.tape.attach_grad(&st.rt, &x.array, accumulate)?;
                    Ok(Value::None)
                }),
                "backward" => ("y.backward(out_grad=None, retain_graph=False): gradients of y (summed when y has several elements) into every x.grad it depends on.", |it, r, mut a| {
                    let head_grad = a.take(0, "out_grad")?.or_else(|| a.take_kw("gradient"));
                    let retain = a.flag(1, "retain_graph", false)?;
                    a.take_kw("train_mode");
                    a.finish(2)?;
                    let x = recv(r)?;
                    let head_grad = match &head_grad {
                        None | Some(Value::None) => None,
                        Some(v) => Some(recv(v)?.array.clone()),
                    };
                    let st = it.state_mut();
                    st.nn.tape.backward(&st.rt, &x.array, head_grad.as_ref(), retain)?;
                    crate::nn::cnn::apply_pending_running_stats()?;
                    Ok(Value::None)
                }),
                "detach" => ("x.detach(): the same values, cut off from the recorded graph.", |_, r, a| {
                    a.finish(0)?;
                    let x = recv(r)?;
                    Ok(wrap(x.array.reshape(&x.array.shape().iter().map(|d| *d as isize).collect::<Vec<_>>())?, x.flavor))
                }),
                "flatten" => ("x.flatten(): (MXNet) keep the first axis and flatten the rest; (PyTorch) x.flatten(start_dim=0, end_dim=-1): axes start_dim..end_dim as one.", |it, r, mut a| {
                    let x = recv(r)?;
                    let shape: Vec<isize> = match x.flavor {
                        Flavor::Nd => {
                            a.finish(0)?;
                            vec![*x.array.shape().first().unwrap_or(&1) as isize, -1]
                        }
                        Flavor::Torch => {
                            // PyTorch's positions are the method's (the function's are one more).
                            let dim = |v: Option<Value>, default: i64, name: &str, pos: usize| match v {
                                None => Ok(default),
                                Some(v) => as_i64(&v).ok_or_else(|| Exc::type_error(format!("flatten(): argument '{name}' (position {pos}) must be int, not {}", v.type_name()))),
                            };
                            let start = dim(a.take(0, "start_dim")?, 0, "start_dim", 1)?;
                            let end = dim(a.take(1, "end_dim")?, -1, "end_dim", 2)?;
                            a.finish(2)?;
                            let shape = x.array.shape();
                            let nd = shape.len().max(1);
                            let (s, e) = (super::array_more::norm_axis(start, nd, x.flavor)?, super::array_more::norm_axis(end, nd, x.flavor)?);
                            if s > e {
                                return Err(Exc::new(ExcKind::RuntimeError, "flatten() has invalid args: start_dim cannot come after end_dim"));
                            }
                            let dims: Vec<isize> = shape.iter().map(|d| *d as isize).collect();
                            if dims.is_empty() {
                                vec![1]
                            } else {
                                let mut out: Vec<isize> = dims[..s].to_vec();
                                out.push(dims[s..=e].iter().product());
                                out.extend_from_slice(&dims[e + 1..]);
                                out
                            }
                        }
                        _ => {
                            a.finish(0)?;
                            vec![-1]
                        }
                    };
                    Ok(wrap(it.state_mut().nn.tape.reshape(&x.array, &shape)?, x.flavor))
                }),
                "expand_dims" => ("x.expand_dims(axis): insert an axis of length 1.", |it, r, mut a| {
                    let ax = as_i64(&a.required(0, "axis")?).ok_or_else(|| Exc::type_error("axis must be an integer"))?;
                    a.finish(1)?;
                    let x = recv(r)?;
                    let nd = x.array.ndim() as i64;
                    let pos = if ax < 0 { ax + nd + 1 } else { ax };
                    if pos < 0 || pos > nd {
                        return Err(Exc::new(ExcKind::IndexError, format!("axis {ax} is out of bounds for an array of dimension {}", nd + 1)));
                    }
                    let mut shape: Vec<isize> = x.array.shape().iter().map(|d| *d as isize).collect();
                    shape.insert(pos as usize, 1);
                    Ok(wrap(it.state_mut().nn.tape.reshape(&x.array, &shape)?, x.flavor))
                }),
                "sum" => ("x.sum(axis=None, keepdims=False)", |it, r, a| reduce(it, r, a, ReduceOp::Sum)),
                "mean" => ("x.mean(axis=None, keepdims=False)", |it, r, a| reduce(it, r, a, ReduceOp::Mean)),
                "max" => ("x.max(axis=None, keepdims=False)", |it, r, a| reduce(it, r, a, ReduceOp::Max)),
                "min" => ("x.min(axis=None, keepdims=False)", |it, r, a| reduce(it, r, a, ReduceOp::Min)),
                "prod" => ("x.prod(axis=None, keepdims=False)", |it, r, a| reduce(it, r, a, ReduceOp::Prod)),
                "argmax" => ("x.argmax(axis=None)", |it, r, a| reduce(it, r, a, ReduceOp::ArgMax)),
                "argmin" => ("x.argmin(axis=None)", |it, r, a| reduce(it, r, a, ReduceOp::ArgMin)),
                "exp" => ("x.exp()", |it, r, a| { a.finish(0)?; unary_fn(it, r, UnaryOp::Exp) }),
                "log" => ("x.log()", |it, r, a| { a.finish(0)?; unary_fn(it, r, UnaryOp::Log) }),
                "sqrt" => ("x.sqrt()", |it, r, a| { a.finish(0)?; unary_fn(it, r, UnaryOp::Sqrt) }),
                "abs" => ("x.abs()", |it, r, a| { a.finish(0)?; unary_fn(it, r, UnaryOp::Abs) }),
                "tanh" => ("x.tanh()", |it, r, a| { a.finish(0)?; unary_fn(it, r, UnaryOp::Tanh) }),
                "sigmoid" => ("x.sigmoid()", |it, r, a| { a.finish(0)?; unary_fn(it, r, UnaryOp::Sigmoid) }),
                "relu" => ("x.relu()", |it, r, a| { a.finish(0)?; unary_fn(it, r, UnaryOp::Relu) }),
                "square" => ("x.square()", |it, r, a| { a.finish(0)?; unary_fn(it, r, UnaryOp::Square) }),
                "norm" => ("x.norm(ord=2, axis=None, keepdims=False): the L2 (Frobenius) norm.", |it, r, mut a| {
                    let ord = a.take(0, "ord")?;
                    let axis = a.take(1, "axis")?;
                    let keepdims = a.flag(2, "keepdims", false)?;
                    a.finish(3)?;
                    let ord = match ord { None | Some(Value::None) => None, Some(v) => Some(as_f64(&v).ok_or_else(|| Exc::type_error("ord must be a number"))?) };
                    let axes = axes_arg(axis)?;
                    let x = recv(r)?;
                    let whole = axes.is_none() && !keepdims;
                    let input = if x.flavor == Flavor::Numpy && !x.array.dtype().is_float() {
                        // NumPy's norm of integers is computed in float64.
                        x.array.astype(DType::Float64)?
                    } else {
                        x.array.clone()
                    };
                    let mut out = it.state_mut().nn.tape.norm(&input, ord, axes.as_deref(), keepdims)?;
                    if whole && x.flavor == Flavor::Nd {
                        out = out.reshape(&[1])?;
                    }
                    if whole && x.flavor == Flavor::Numpy {
                        return crate::object::ops::numpy_scalar(&out);
                    }
                    Ok(wrap(out, x.flavor))
                }),
                "astype" => ("x.astype(dtype): a copy converted to dtype.", |it, r, mut a| {
                    let d = a.required(0, "dtype")?;
                    a.take_kw("copy");
                    a.finish(1)?;
                    let d = dtype_arg(&d)?.ok_or_else(|| Exc::type_error("astype() needs a dtype"))?;
                    let x = recv(r)?;
                    Ok(wrap(it.state_mut().nn.tape.astype(&x.array, d)?, x.flavor))
                }),
                "clip" => ("x.clip(a_min, a_max): values limited to [a_min, a_max].", |it, r, mut a| {
                    let lo = a.take(0, "a_min")?.or_else(|| a.take_kw("min"));
                    let hi = a.take(1, "a_max")?.or_else(|| a.take_kw("max"));
                    a.finish(2)?;
                    let n = |v: Option<Value>| -> Result<Option<f64>, Exc> { match v { None | Some(Value::None) => Ok(None), Some(v) => as_f64(&v).map(Some).ok_or_else(|| Exc::type_error("clip bounds must be numbers")) } };
                    let x = recv(r)?;
                    Ok(wrap(it.state_mut().nn.tape.clip(&x.array, n(lo)?, n(hi)?)?, x.flavor))
                }),
                "wait_to_read" => ("x.wait_to_read(): block until x's pending computation is done.", |_, r, a| {
                    a.finish(0)?;
                    recv(r)?.array.wait_to_read()?;
                    Ok(Value::None)
                }),
                "dot" => ("x.dot(y): the dot product.", |it, r, mut a| {
                    let y = a.required(0, "other")?;
                    a.finish(1)?;
                    let x = recv(r)?;
                    let y = recv(&y)?;
                    let out = it.state_mut().nn.tape.dot(&x.array, &y.array)?;
                    if x.flavor == Flavor::Numpy && out.ndim() == 0 {
                        return crate::object::ops::numpy_scalar(&out);
                    }
                    Ok(wrap(out, x.flavor))
                }),
                "zeros_like" => ("x.zeros_like()", |it, r, a| { a.finish(0)?; zeros_like::<ND>(it, Args::new("zeros_like", vec![r.clone()])) }),
                "ones_like" => ("x.ones_like()", |it, r, a| { a.finish(0)?; ones_like::<ND>(it, Args::new("ones_like", vec![r.clone()])) }),
                _ => return crate::modules::array::array_more::get_attr(it, v, name),
            };
            let name: &'static str = ATTRS
                .iter()
                .find(|n| **n == name)
                .copied()
                .unwrap_or("method");
            let _ = it;
            method(v, name, doc, f)
        }
    }))
}

pub fn set_attr(
    it: &mut dyn Interpreter,
    obj: &Value,
    name: &str,
    value: Value,
) -> Result<(), Exc> {
    if let Value::Array(a) = obj {
        if let Some(d) = hooks::dialect(a.flavor) {
            if (d.set_attr)(it, obj, name, &value)? {
                return Ok(());
            }
        }
    }
    Err(Exc::new(
        ExcKind::AttributeError,
        format!(
            "'{}' object attribute '{}' is read-only",
            obj.type_name(),
            name
        ),
    ))
}

/// `for row in x`: the sub-arrays along the first axis.
pub fn iter_rows(a: &ArrayValue) -> Result<Vec<Value>, Exc> {
    let Some(&n) = a.array.shape().first() else {
        return Err(Exc::type_error("iteration over a 0-d array"));
    };
    (0..n)
        .map(|i| {
            let row = a.array.index(&[crate::runtime::IndexItem::Int(i as i64)])?;
            if a.flavor == Flavor::Numpy && row.ndim() == 0 {
                // NumPy yields scalars from a 1-D array.
                return crate::object::ops::numpy_scalar(&row);
            }
            Ok(wrap(row, a.flavor))
        })
        .collect()
}

// ------------------------------------------------------- namespace functions

/// Remove and return the array argument of a namespace function
/// (`nd.exp(x)`), which is positional or `data=`/`x=`/`a=`/`input=`.
fn take_receiver(a: &mut Args) -> Result<Value, Exc> {
    if !a.pos.is_empty() {
        return Ok(a.pos.remove(0));
    }
    for k in ["data", "x", "a", "input", "lhs"] {
        if let Some(v) = a.take_kw(k) {
            return Ok(v);
        }
    }
    Err(Exc::type_error(format!(
        "{}() missing the array argument",
        a.fname
    )))
}

/// Call array method `name` with the first argument as the receiver.
fn via_method(it: &mut dyn Interpreter, mut a: Args, name: &str) -> Result<Value, Exc> {
    let x = take_receiver(&mut a)?;
    if !matches!(x, Value::Array(_)) {
        return Err(Exc::type_error(format!(
            "{}() expects an array, got {}",
            a.fname,
            x.type_name()
        )));
    }
    let m = get_attr(it, &x, name)?
        .ok_or_else(|| Exc::new(ExcKind::AttributeError, format!("no array method {name}")))?;
    it.call_value(&m, a)
}

macro_rules! via {
    ($($fname:ident => $method:literal),* $(,)?) => {
        $(pub fn $fname(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> { via_method(it, a, $method) })*
    };
}

via! {
    ns_exp => "exp", ns_log => "log", ns_sqrt => "sqrt", ns_abs => "abs", ns_tanh => "tanh",
    ns_sigmoid => "sigmoid", ns_relu => "relu", ns_square => "square", ns_sum => "sum",
    ns_mean => "mean", ns_prod => "prod",
    ns_argmax => "argmax", ns_argmin => "argmin", ns_norm => "norm", ns_reshape => "reshape",
    ns_transpose => "transpose", ns_clip => "clip", ns_dot => "dot",
}

/// `max(x, axis)`, or with an array second argument (`torch.max(X, a)`) the elementwise
/// maximum, as PyTorch overloads it.
pub fn ns_max(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    if matches!(a.pos.get(1), Some(Value::Array(_))) {
        return ns_maximum(it, a);
    }
    via_method(it, a, "max")
}

/// `min(x, axis)`, or the elementwise minimum with an array second argument.
pub fn ns_min(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    if matches!(a.pos.get(1), Some(Value::Array(_))) {
        return ns_minimum(it, a);
    }
    via_method(it, a, "min")
}

pub fn ns_matmul(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "a")?;
    let y = a.required(1, "b")?;
    a.finish(2)?;
    let (x, y) = (recv(&x)?, recv(&y)?);
    let out = it.state_mut().nn.tape.matmul(&x.array, &y.array)?;
    if x.flavor == Flavor::Numpy && out.ndim() == 0 {
        return crate::object::ops::numpy_scalar(&out);
    }
    Ok(wrap(out, x.flavor))
}

fn elementwise2(a: &mut Args, op: crate::runtime::BinaryOp) -> Result<Value, Exc> {
    let x = a.required(0, "x1")?;
    let y = a.required(1, "x2")?;
    a.finish(2)?;
    let flavor = x
        .as_array()
        .or(y.as_array())
        .map_or(Flavor::Nd, |v| v.flavor);
    let (Some(lo), Some(ro)) = (
        crate::object::ops::operand(&x),
        crate::object::ops::operand(&y),
    ) else {
        return Err(Exc::type_error(format!(
            "{}() expects arrays or numbers",
            a.fname
        )));
    };
    Ok(wrap(Array::binary(op, lo, ro)?, flavor))
}

pub fn ns_maximum(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    elementwise2(&mut a, crate::runtime::BinaryOp::Maximum)
}

pub fn ns_minimum(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    elementwise2(&mut a, crate::runtime::BinaryOp::Minimum)
}

fn array_list(it: &mut dyn Interpreter, a: &mut Args) -> Result<Vec<ArrayValue>, Exc> {
    // nd.concat(a, b, dim=1) passes arrays positionally; np.concatenate([a, b]) as a list.
    let items: Vec<Value> = match a.pos.as_slice() {
        [Value::List(_) | Value::Tuple(_)] => {
            let seq = a.pos.remove(0);
            it.iterate(&seq)?
        }
        _ => std::mem::take(&mut a.pos),
    };
    items
        .iter()
        .map(|v| recv(v).cloned())
        .collect::<Result<Vec<_>, _>>()
}

fn axis_kw(a: &mut Args, default: isize) -> Result<isize, Exc> {
    // `torch.stack((a, b), 0)`, `np.concatenate([a, b], 1)`: a sequence, then the axis.
    let positional = match a.pos.as_slice() {
        [Value::List(_) | Value::Tuple(_), _] => a.pos.pop(),
        _ => None,
    };
    match positional
        .or_else(|| a.take_kw("axis"))
        .or_else(|| a.take_kw("dim"))
    {
        None | Some(Value::None) => Ok(default),
        Some(v) => as_i64(&v)
            .map(|i| i as isize)
            .ok_or_else(|| Exc::type_error("axis must be an integer")),
    }
}

pub fn ns_concat(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    // MXNet's legacy nd.concat joins along dim=1 by default; numpy along axis 0.
    let default = if a.fname == "concat" { 1 } else { 0 };
    let axis = axis_kw(&mut a, default)?;
    let arrays = array_list(it, &mut a)?;
    a.finish(0)?;
    let flavor = arrays.first().map_or(Flavor::Nd, |x| x.flavor);
    let raw: Vec<Array> = arrays.into_iter().map(|x| x.array).collect();
    Ok(wrap(it.state_mut().nn.tape.concat(&raw, axis)?, flavor))
}

pub fn ns_stack(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let axis = axis_kw(&mut a, 0)?;
    let arrays = array_list(it, &mut a)?;
    a.finish(0)?;
    let flavor = arrays.first().map_or(Flavor::Nd, |x| x.flavor);
    let raw: Vec<Array> = arrays.into_iter().map(|x| x.array).collect();
    Ok(wrap(it.state_mut().nn.tape.stack(&raw, axis)?, flavor))
}

pub fn waitall(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    it.state_mut().rt.synchronize()?;
    Ok(Value::None)
}

/// The functions every array namespace offers, for a dialect `F`.
pub fn namespace_fns<const F: u8>() -> Vec<(&'static str, &'static str, BuiltinFn)> {
    vec![
        (
            "array",
            "array(data, ctx=None, dtype=None): an array from nested lists.",
            array::<F>,
        ),
        (
            "ones",
            "ones(shape, ctx=None, dtype=None): an array of ones.",
            ones::<F>,
        ),
        (
            "zeros",
            "zeros(shape, ctx=None, dtype=None): an array of zeros.",
            zeros::<F>,
        ),
        (
            "empty",
            "empty(shape, ctx=None, dtype=None): an array (zero-filled here).",
            zeros::<F>,
        ),
        (
            "full",
            "full(shape, fill_value, ctx=None, dtype=None): an array filled with a value.",
            full::<F>,
        ),
        (
            "ones_like",
            "ones_like(x): ones with x's shape, dtype and device.",
            ones_like::<F>,
        ),
        (
            "zeros_like",
            "zeros_like(x): zeros with x's shape, dtype and device.",
            zeros_like::<F>,
        ),
        (
            "arange",
            "arange(start, stop=None, step=1, ctx=None, dtype=None): evenly spaced values.",
            arange::<F>,
        ),
        (
            "eye",
            "eye(N, M=None, k=0, ctx=None, dtype=None): ones on a diagonal.",
            eye::<F>,
        ),
        ("exp", "exp(x): e to the x, elementwise.", ns_exp),
        ("log", "log(x): natural logarithm, elementwise.", ns_log),
        ("sqrt", "sqrt(x): square root, elementwise.", ns_sqrt),
        ("abs", "abs(x): absolute value, elementwise.", ns_abs),
        ("tanh", "tanh(x): hyperbolic tangent, elementwise.", ns_tanh),
        (
            "sigmoid",
            "sigmoid(x): 1 / (1 + exp(-x)), elementwise.",
            ns_sigmoid,
        ),
        ("relu", "relu(x): max(x, 0), elementwise.", ns_relu),
        ("square", "square(x): x * x, elementwise.", ns_square),
        ("sum", "sum(x, axis=None, keepdims=False)", ns_sum),
        ("mean", "mean(x, axis=None, keepdims=False)", ns_mean),
        ("max", "max(x, axis=None, keepdims=False)", ns_max),
        ("min", "min(x, axis=None, keepdims=False)", ns_min),
        ("prod", "prod(x, axis=None, keepdims=False)", ns_prod),
        ("argmax", "argmax(x, axis=None)", ns_argmax),
        ("argmin", "argmin(x, axis=None)", ns_argmin),
        ("norm", "norm(x, ord=2, axis=None, keepdims=False)", ns_norm),
        ("reshape", "reshape(x, shape)", ns_reshape),
        ("transpose", "transpose(x, axes=None)", ns_transpose),
        ("clip", "clip(x, a_min, a_max)", ns_clip),
        (
            "dot",
            "dot(a, b): the dot product (matrix product for 2-D).",
            ns_dot,
        ),
        (
            "matmul",
            "matmul(a, b): the matrix product, batched over leading axes.",
            ns_matmul,
        ),
        (
            "maximum",
            "maximum(a, b): the larger of a and b, elementwise.",
            ns_maximum,
        ),
        (
            "minimum",
            "minimum(a, b): the smaller of a and b, elementwise.",
            ns_minimum,
        ),
        (
            "concat",
            "concat(*arrays, dim=1): join arrays along an axis.",
            ns_concat,
        ),
        (
            "concatenate",
            "concatenate(arrays, axis=0): join arrays along an axis.",
            ns_concat,
        ),
        (
            "cat",
            "cat(tensors, dim=0): join tensors along an axis.",
            ns_concat,
        ),
        (
            "stack",
            "stack(arrays, axis=0): join arrays along a new axis.",
            ns_stack,
        ),
        (
            "waitall",
            "waitall(): block until all pending computation is done.",
            waitall,
        ),
    ]
}

/// Install the namespace functions into a module.
pub fn fill_namespace<const F: u8>(m: &crate::object::value::Module) {
    for (name, doc, f) in namespace_fns::<F>() {
        m.set(name, builtin(name, doc, f));
    }
    crate::modules::array::array_more::fill_namespace::<F>(m);
    for d in DType::ALL {
        // bfloat16 is PyTorch's alone (NumPy and MXNet have none).
        if d == DType::BFloat16 && F != TORCH {
            continue;
        }
        let flavor = match F {
            TORCH => Flavor::Torch,
            NP => Flavor::Np,
            NUMPY => Flavor::Numpy,
            _ => Flavor::Nd,
        };
        let name = if d == DType::Bool && F != TORCH {
            "bool_"
        } else {
            d.name()
        };
        m.set(name, Value::DType(d, flavor));
    }
}

/// A random namespace (`nd.random`, `np.random`, native `random`).
pub fn random_module<const F: u8>(name: &str) -> Rc<crate::object::value::Module> {
    let m = Rc::new(crate::object::value::Module::new(
        name,
        "random number generation",
    ));
    m.set("uniform", builtin("uniform", "uniform(low=0, high=1, shape=None, ctx=None, dtype=None): uniform samples in [low, high).", uniform::<F>));
    m.set(
        "normal",
        builtin(
            "normal",
            "normal(loc=0, scale=1, shape=None, ctx=None, dtype=None): Gaussian samples.",
            normal::<F>,
        ),
    );
    m.set(
        "seed",
        builtin(
            "seed",
            "seed(n): reseed the generators of every device.",
            seed,
        ),
    );
    m.set(
        "rand",
        builtin(
            "rand",
            "rand(*shape): uniform samples in [0, 1).",
            rand::<F>,
        ),
    );
    m.set(
        "randn",
        builtin(
            "randn",
            "randn(*shape): standard normal samples.",
            randn::<F>,
        ),
    );
    m
}

/// The array side of the Python library's built-ins (`python::hooks::ARRAYS`), registered at
/// start-up by `crate::modules::install`.
pub fn protocol() -> crate::modules::python::hooks::ArrayProtocol {
    crate::modules::python::hooks::ArrayProtocol {
        get_attr,
        set_attr,
        attr_names: |v| {
            let own = match v {
                Value::Array(a) => hooks::dialect(a.flavor).map_or(&[][..], |d| d.attr_names),
                _ => &[],
            };
            ATTRS
                .iter()
                .chain(crate::modules::array::array_more::ATTRS)
                .chain(own)
                .map(|s| s.to_string())
                .collect()
        },
        abs: |it, v| unary_fn(it, v, crate::runtime::UnaryOp::Abs),
        class_of: |it, v| match v {
            Value::Array(a) => hooks::dialect(a.flavor).and_then(|d| (d.class_of)(it, v)),
            _ => None,
        },
        deep_copy: crate::modules::array::blocks::deep_copy,
        numpy_instance: |v, t| match t {
            Value::Type(crate::object::value::TypeKind::Float)
                if crate::modules::array::scalars::is_python_float(v) =>
            {
                Some(true)
            }
            _ => crate::modules::array::scalars::instance_of(v, t),
        },
        dtype_type: crate::modules::array::scalars::dtype_type,
    }
}

/// The flavor MXNet's arrays are made with now: numpy mode (`npx.set_np()`) or legacy NDArray.
pub fn mxnet_flavor(it: &dyn Interpreter) -> Flavor {
    if it.state().np_mode {
        Flavor::Np
    } else {
        Flavor::Nd
    }
}

/// PyTorch's `x.transpose(dim0, dim1)` / `torch.transpose(x, dim0, dim1)`: the two dims
/// exchanged (NumPy's `transpose` permutes all of them instead).
fn torch_transpose(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = recv(r)?;
    let dims = [a.take(0, "dim0")?, a.take(1, "dim1")?];
    a.finish(2)?;
    // PyTorch's own wording for missing dims (its grammar included).
    let (d0, d1) = match dims {
        [Some(d0), Some(d1)] => (d0, d1),
        [Some(_), None] => {
            return Err(Exc::type_error(
                "transpose() missing 1 required positional arguments: \"dim1\"",
            ))
        }
        _ => {
            return Err(Exc::type_error(
                "transpose() missing 2 required positional argument: \"dim0\", \"dim1\"",
            ))
        }
    };
    let nd = x.array.ndim();
    let span = nd.max(1) as i64;
    let dim = |v: &Value| -> Result<usize, Exc> {
        let d = match v {
            Value::Int(i) => *i,
            other => {
                return Err(Exc::type_error(format!(
                    "transpose(): argument 'dim0' must be int, not {}",
                    other.type_name()
                )))
            }
        };
        let n = if d < 0 { d + span } else { d };
        if n < 0 || n >= span {
            return Err(Exc::new(
                ExcKind::IndexError,
                format!(
                    "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
                    -span,
                    span - 1
                ),
            ));
        }
        Ok(n as usize)
    };
    let (d0, d1) = (dim(&d0)?, dim(&d1)?);
    let mut perm: Vec<isize> = (0..nd as isize).collect();
    if nd > 1 {
        perm.swap(d0, d1);
    }
    Ok(wrap(
        it.state_mut().nn.tape.transpose(&x.array, Some(&perm))?,
        x.flavor,
    ))
}

#[cfg(test)]
mod shortest_tests {
    use crate::object::ops::shortest_f32_as_f64;

    #[test]
    fn float32_values_keep_their_shortest_digits() {
        assert_eq!(shortest_f32_as_f64(3.0), 3.0);
        assert_eq!(shortest_f32_as_f64(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(shortest_f32_as_f64(4.161_822_3), 4.1618223);
        assert_eq!(shortest_f32_as_f64(0.1), 0.1);
        assert_eq!(shortest_f32_as_f64(1e30), 1e30);
        assert_eq!(shortest_f32_as_f64(16_777_216.0), 16777216.0);
        assert!(shortest_f32_as_f64(f32::NAN).is_nan());
        assert_eq!(shortest_f32_as_f64(f32::INFINITY), f64::INFINITY);
        // Largest finite float32: 39 digits when printed plainly, still within the buffer.
        assert_eq!(shortest_f32_as_f64(f32::MAX), 3.402_823_5e38);
        // Smallest subnormal: printed as 0.000...1 (47 characters), still within the buffer.
        assert_eq!(shortest_f32_as_f64(-f32::from_bits(1)), -1e-45);
    }
}
