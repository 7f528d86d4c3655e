//! MXNet's sorting and selection operators: `nd.sort`/`argsort`/`topk`/`pick`/`take`/`where`/
//! `flip`/`slice`/`slice_axis`/`shape_array`/`broadcast_axis` and the NDArray methods of those
//! names, and `mxnet.np`'s `sort`/`argsort`/`flip`/`where`/`tril`, with MXNet 1.9.1's signatures
//! and result dtypes (legacy indices are float32, numpy-mode ones int64), over the shared
//! compositions of `array::selection` (so they record under `autograd.record()`).
use crate::modules::array::selection as sel;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, ArrayValue, Flavor, MethodFn, Module, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{Array, BinaryOp, DType, HostData, IndexItem, Operand, Scalar};

fn mx_error(message: impl Into<String>) -> Exc {
    Exc::new(ExcKind::MXNetError, message.into())
}

fn array_of(v: &Value, what: &str) -> Result<ArrayValue, Exc> {
    v.as_array().cloned().ok_or_else(|| {
        Exc::type_error(format!(
            "{what}: expected an NDArray, got {}",
            v.type_name()
        ))
    })
}

fn int_of(v: &Value, what: &str) -> Result<i64, Exc> {
    as_i64(v)
        .ok_or_else(|| Exc::type_error(format!("{what} must be an integer, not {}", v.type_name())))
}

/// An axis counted from the end when negative, checked against `ndim`.
fn axis_of(v: Option<Value>, default: i64, ndim: usize, op: &str) -> Result<usize, Exc> {
    let a = match v {
        None | Some(Value::None) => default,
        Some(v) => int_of(&v, "axis")?,
    };
    let n = ndim as i64;
    let p = if a < 0 { a + n } else { a };
    if p < 0 || p >= n.max(1) {
        return Err(mx_error(format!(
            "{op}: axis {a} is out of range for an array of {ndim} dimensions"
        )));
    }
    Ok(p as usize)
}

fn flag(v: Option<Value>, default: bool) -> Result<bool, Exc> {
    match v {
        None | Some(Value::None) => Ok(default),
        Some(v) => v.truthy(),
    }
}

/// MXNet's `dtype=` for index outputs (float32 by default in the legacy API).
fn index_dtype(v: Option<Value>, default: DType) -> Result<DType, Exc> {
    match v {
        None | Some(Value::None) => Ok(default),
        Some(v) => Ok(crate::modules::array::arrays::dtype_arg(&v)?.unwrap_or(default)),
    }
}

fn tape(it: &mut dyn Interpreter) -> (&mut crate::nn::autograd::Tape, &crate::runtime::Runtime) {
    let st = it.state_mut();
    (&mut st.nn.tape, &st.rt)
}

/// `data` as the receiver of a method, or the first argument (`data=`) of a function. A
/// method's arguments are shifted by one so both read the same positions.
fn data_arg(r: Option<&Value>, a: &mut Args) -> Result<ArrayValue, Exc> {
    match r {
        Some(r) => {
            a.pos.insert(0, Value::None);
            array_of(r, a.fname)
        }
        None => {
            let name = if a.fname == "take" { "a" } else { "data" };
            let v = a.required(0, name)?;
            array_of(&v, a.fname)
        }
    }
}

/// Positions for `len` from MXNet's float indices: truncated, then clipped or wrapped.
fn positions(index: &Array, len: usize, mode: &str) -> Result<Array, Exc> {
    let whole = index.astype(DType::Int64)?;
    Ok(match mode {
        "wrap" => Array::binary(
            BinaryOp::Mod,
            Operand::Array(&whole),
            Operand::Scalar(Scalar::Int(len.max(1) as i64)),
        )?,
        _ => whole.clip(Some(0.0), Some(len.saturating_sub(1) as f64))?,
    })
}

fn mode_arg(v: Option<Value>) -> Result<String, Exc> {
    match &v {
        None | Some(Value::None) => Ok("clip".into()),
        Some(Value::Str(s)) if matches!(&**s, "clip" | "wrap" | "raise") => Ok(s.to_string()),
        Some(Value::Str(s)) => Err(mx_error(format!(
            "Invalid Input: '{s}', valid values are: {{'clip', 'raise', 'wrap'}}"
        ))),
        Some(other) => Err(Exc::type_error(format!(
            "mode must be a string, not {}",
            other.type_name()
        ))),
    }
}

// ------------------------------------------------------------------ the operators

type Op = fn(&mut dyn Interpreter, Option<&Value>, Args) -> Result<Value, Exc>;

/// The legacy operators of this file: (name, doc, code) for `nd.X` and `NDArray.X`.
const ND_OPS: [(&str, &str, Op); 11] = [
    ("sort", "sort(data, axis=-1, is_ascend=True): data sorted along axis.", sort),
    ("argsort", "argsort(data, axis=-1, is_ascend=True, dtype='float32'): the indices that sort data along axis.", argsort),
    ("topk", "topk(data, axis=-1, k=1, ret_typ='indices', is_ascend=False, dtype='float32'): the top k elements along axis: their indices, values, both, or a mask.", topk),
    ("pick", "pick(data, index, axis=-1, keepdims=False, mode='clip'): one element per lane of axis, at index.", pick),
    ("take", "take(a, indices, axis=0, mode='clip'): the slices of a at indices along axis.", take),
    ("where", "where(condition, x, y): x's elements where condition is nonzero, else y's.", nd_where),
    ("flip", "flip(data, axis): data reversed along axis (an int or a tuple).", flip),
    ("slice", "slice(data, begin, end, step=()): the slice begin:end:step per axis (None for a whole axis).", slice),
    ("slice_axis", "slice_axis(data, axis, begin, end): the slice begin:end along axis (end None for the rest).", slice_axis),
    ("shape_array", "shape_array(data): the shape as a 1-D int64 array.", shape_array),
    ("broadcast_axis", "broadcast_axis(data, axis=(), size=()): data repeated along axes of size 1 to the sizes given.", broadcast_axis),
];

fn nd_function(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let f = ND_OPS
        .iter()
        .find(|(n, _, _)| *n == a.fname)
        .map(|(_, _, f)| *f)
        .ok_or_else(|| mx_error("unknown operator"))?;
    f(it, None, a)
}

/// Adds the legacy operators to `mxnet.nd`.
pub fn install_nd(m: &Module) {
    for (name, doc, _) in ND_OPS {
        m.set(name, builtin(name, doc, nd_function));
    }
}

/// Serves the NDArray methods of this file through the shared array API.
pub fn register_hooks() {
    crate::modules::array::selection::register_methods(Flavor::Nd, array_attr);
}

/// An NDArray method of this file (legacy arrays only), or None.
pub fn array_attr(_it: &mut dyn Interpreter, v: &Value, name: &str) -> Result<Option<Value>, Exc> {
    let flavor = v.as_array().map(|x| x.flavor);
    if flavor == Some(Flavor::Np) && name == "argsort" {
        let f: MethodFn = |it, r, mut a| {
            a.pos.insert(0, r.clone());
            np_sort(it, a)
        };
        return Ok(Some(method(
            v,
            "argsort",
            "x.argsort(axis=-1): the int64 indices that sort x along axis (None: flattened).",
            f,
        )));
    }
    if flavor != Some(Flavor::Nd) {
        return Ok(None);
    }
    let Some((mname, doc, _)) = ND_OPS.iter().find(|(n, _, _)| *n == name && *n != "where") else {
        return Ok(None);
    };
    let f: MethodFn = |it, r, a| {
        let f = ND_OPS
            .iter()
            .find(|(n, _, _)| *n == a.fname)
            .map(|(_, _, f)| *f)
            .ok_or_else(|| mx_error("unknown operator"))?;
        f(it, Some(r), a)
    };
    Ok(Some(method(v, mname, doc, f)))
}

fn sort(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let axis = a.take(1, "axis")?;
    let ascend = flag(a.take(2, "is_ascend")?, true)?;
    a.finish(3)?;
    let axis = axis_of(axis, -1, x.array.ndim(), "sort")?;
    let (tape, _) = tape(it);
    let (values, _) = sel::sort(tape, &x.array, axis as isize, !ascend)?;
    Ok(wrap(values, x.flavor))
}

fn argsort(_it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let axis = a.take(1, "axis")?;
    let ascend = flag(a.take(2, "is_ascend")?, true)?;
    let dtype = index_dtype(a.take(3, "dtype")?, DType::Float32)?;
    a.finish(4)?;
    let axis = axis_of(axis, -1, x.array.ndim(), "argsort")?;
    let p = x.array.sort_positions(axis as isize, !ascend)?;
    Ok(wrap(p.astype(dtype)?, x.flavor))
}

fn topk(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let axis = a.take(1, "axis")?;
    let k = match a.take(2, "k")? {
        None => 1,
        Some(v) => int_of(&v, "k")?,
    };
    let ret = match &a.take(3, "ret_typ")? {
        None => "indices".to_string(),
        Some(Value::Str(s)) => s.to_string(),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "ret_typ must be a string, not {}",
                other.type_name()
            )))
        }
    };
    let ascend = flag(a.take(4, "is_ascend")?, false)?;
    let dtype = index_dtype(a.take(5, "dtype")?, DType::Float32)?;
    a.finish(6)?;
    if !matches!(ret.as_str(), "value" | "indices" | "both" | "mask") {
        return Err(mx_error(format!(
            "MXNetError: Invalid Input: '{ret}', valid values are: {{'both', 'indices', 'mask', 'value'}}, in operator topk(name=\"\", ret_typ=\"{ret}\")"
        )));
    }
    let axis = axis_of(axis, -1, x.array.ndim(), "topk")?;
    let len = x.array.shape().get(axis).copied().unwrap_or(1);
    // MXNet: k < 1 sorts the whole axis.
    let k = if k < 1 { len } else { k as usize };
    if k > len {
        return Err(mx_error(format!(
            "Traceback (most recent call last):\n  File \"../src/operator/numpy/../tensor/ordering_op-inl.h\", line 184\nMXNetError: Check failed: *k >= 0 && *k <= *element_num: k must be smaller than {len}, get k = {k}"
        )));
    }
    let (tape_, rt) = tape(it);
    let (values, indices) = sel::topk(tape_, &x.array, k, axis, !ascend)?;
    let fl = x.flavor;
    Ok(match ret.as_str() {
        "value" => wrap(values, fl),
        "indices" => wrap(indices.astype(dtype)?, fl),
        "both" => Value::list(vec![wrap(values, fl), wrap(indices.astype(dtype)?, fl)]),
        _ => {
            let mask = rt.zeros(x.array.shape(), x.array.dtype(), x.array.device())?;
            let ones = rt.full(indices.shape(), 1.0, x.array.dtype(), x.array.device())?;
            mask.scatter_along_axis(&indices, &ones, axis as isize, false)?;
            wrap(mask, fl)
        }
    })
}

fn pick(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let index = a.required(1, "index")?;
    let axis = a.take(2, "axis")?;
    let keepdims = flag(a.take(3, "keepdims")?, false)?;
    let mode = mode_arg(a.take(4, "mode")?)?;
    a.finish(5)?;
    let index = array_of(&index, "pick")?.array;
    let shape = x.array.shape().to_vec();
    let axis = axis_of(axis, -1, shape.len(), "pick")?;
    let mut lined = shape.clone();
    lined[axis] = 1;
    let mut dropped = shape.clone();
    dropped.remove(axis);
    if index.shape() != lined.as_slice() && index.shape() != dropped.as_slice() {
        return Err(mx_error(format!(
            "pick: the index has shape {} but must have the data's shape {} without axis {axis}",
            crate::runtime::shape::shape_tuple(index.shape()),
            crate::runtime::shape::shape_tuple(&shape)
        )));
    }
    let p = positions(&index, shape[axis], &mode)?;
    let p = p.reshape(&lined.iter().map(|&d| d as isize).collect::<Vec<_>>())?;
    let (tape, _) = tape(it);
    let y = tape.take_along(&x.array, &p, axis as isize, false)?;
    let y = if keepdims {
        y
    } else {
        tape.reshape(&y, &dropped.iter().map(|&d| d as isize).collect::<Vec<_>>())?
    };
    Ok(wrap(y, x.flavor))
}

fn take(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let index = a.required(1, "indices")?;
    let axis = a.take(2, "axis")?;
    let mode = mode_arg(a.take(3, "mode")?)?;
    a.finish(4)?;
    let index = array_of(&index, "take")?.array;
    let shape = x.array.shape().to_vec();
    let axis = axis_of(axis, 0, shape.len(), "take")?;
    let p = positions(&index, shape[axis], &mode)?.reshape(&[-1])?;
    let (tape, rt) = tape(it);
    let y = sel::index_select(tape, rt, &x.array, axis, &p)?;
    let mut out_shape: Vec<isize> = shape[..axis].iter().map(|&d| d as isize).collect();
    out_shape.extend(index.shape().iter().map(|&d| d as isize));
    out_shape.extend(shape[axis + 1..].iter().map(|&d| d as isize));
    Ok(wrap(tape.reshape(&y, &out_shape)?, x.flavor))
}

fn nd_where(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let _ = r;
    let cond = array_of(&a.required(0, "condition")?, "where")?;
    let x = array_of(&a.required(1, "x")?, "where")?;
    let y = array_of(&a.required(2, "y")?, "where")?;
    a.finish(3)?;
    if x.array.shape() != y.array.shape() {
        return Err(mx_error(format!(
            "where: x and y must have the same shape, got {} and {}",
            crate::runtime::shape::shape_tuple(x.array.shape()),
            crate::runtime::shape::shape_tuple(y.array.shape())
        )));
    }
    let c = &cond.array;
    let c = if c.shape() == x.array.shape() {
        c.clone()
    } else if c.ndim() == 1 && c.shape().first() == x.array.shape().first() {
        // A 1-D condition picks whole rows.
        let mut lined = vec![-1isize];
        lined.extend(std::iter::repeat(1).take(x.array.ndim().saturating_sub(1)));
        c.reshape(&lined)?
    } else {
        return Err(mx_error(
            "where: the condition must have the shape of x, or be 1-D with x's first dimension",
        ));
    };
    let mask = Array::binary(
        BinaryOp::Ne,
        Operand::Array(&c),
        Operand::Scalar(Scalar::Int(0)),
    )?;
    let (tape, rt) = tape(it);
    Ok(wrap(
        sel::select_where(tape, rt, &mask, &x.array, &y.array)?,
        x.flavor,
    ))
}

/// An int or a tuple of ints.
fn ints(v: &Value, what: &str) -> Result<Vec<i64>, Exc> {
    match v {
        Value::Tuple(t) => t.iter().map(|d| int_of(d, what)).collect(),
        Value::List(l) => l.borrow().iter().map(|d| int_of(d, what)).collect(),
        other => Ok(vec![int_of(other, what)?]),
    }
}

fn flip(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let axis = a.required(1, "axis")?;
    a.finish(2)?;
    let mut axes = Vec::new();
    for d in ints(&axis, "axis")? {
        axes.push(axis_of(Some(Value::Int(d)), 0, x.array.ndim(), "flip")?);
    }
    let (tape, _) = tape(it);
    Ok(wrap(sel::flip(tape, &x.array, &axes)?, x.flavor))
}

/// A tuple of ints or None per axis.
fn optional_ints(v: Option<Value>) -> Result<Vec<Option<i64>>, Exc> {
    let items = match &v {
        None | Some(Value::None) => return Ok(Vec::new()),
        Some(Value::Tuple(t)) => t.to_vec(),
        Some(Value::List(l)) => l.borrow().clone(),
        Some(other) => vec![other.clone()],
    };
    items
        .iter()
        .map(|d| match d {
            Value::None => Ok(None),
            other => int_of(other, "slice bounds").map(Some),
        })
        .collect()
}

fn slice(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let begin = optional_ints(Some(a.required(1, "begin")?))?;
    let end = optional_ints(Some(a.required(2, "end")?))?;
    let step = optional_ints(a.take(3, "step")?)?;
    a.finish(4)?;
    if begin.len() != end.len() || begin.len() > x.array.ndim() {
        return Err(mx_error(format!(
            "slice: begin and end must have one entry per sliced axis (at most {}), got {} and {}",
            x.array.ndim(),
            begin.len(),
            end.len()
        )));
    }
    let items: Vec<IndexItem> = (0..begin.len())
        .map(|d| IndexItem::Slice {
            start: begin[d],
            stop: end[d],
            step: step.get(d).copied().flatten(),
        })
        .collect();
    let (tape, _) = tape(it);
    Ok(wrap(tape.index(&x.array, &items)?, x.flavor))
}

fn slice_axis(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let axis = a.required(1, "axis")?;
    let begin = int_of(&a.required(2, "begin")?, "begin")?;
    let end = match a.required(3, "end")? {
        Value::None => None,
        v => Some(int_of(&v, "end")?),
    };
    a.finish(4)?;
    let axis = axis_of(Some(axis), 0, x.array.ndim(), "slice_axis")?;
    let mut items = sel::axis_slice(axis, begin, 0);
    if let Some(IndexItem::Slice { stop, .. }) = items.last_mut() {
        *stop = end;
    }
    let (tape, _) = tape(it);
    Ok(wrap(tape.index(&x.array, &items)?, x.flavor))
}

fn shape_array(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    a.finish(1)?;
    let dims: Vec<i64> = x.array.shape().iter().map(|&d| d as i64).collect();
    let n = dims.len();
    let y = it
        .state()
        .rt
        .from_host(HostData::I64(dims), &[n], x.array.device())?;
    Ok(wrap(y, x.flavor))
}

fn broadcast_axis(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let axes = a
        .take(1, "axis")?
        .map_or(Ok(Vec::new()), |v| ints(&v, "axis"))?;
    let sizes = a
        .take(2, "size")?
        .map_or(Ok(Vec::new()), |v| ints(&v, "size"))?;
    a.finish(3)?;
    if axes.len() != sizes.len() {
        return Err(mx_error(format!(
            "broadcast_axis: axis and size must have the same length, got {} and {}",
            axes.len(),
            sizes.len()
        )));
    }
    let mut shape = x.array.shape().to_vec();
    for (ax, size) in axes.iter().zip(&sizes) {
        let d = axis_of(Some(Value::Int(*ax)), 0, shape.len(), "broadcast_axis")?;
        if shape[d] != 1 {
            return Err(mx_error(format!(
                "broadcast_axis: axis {ax} has size {}, not 1",
                shape[d]
            )));
        }
        shape[d] = usize::try_from(*size)
            .map_err(|_| mx_error("broadcast_axis: size must not be negative"))?;
    }
    let (tape, rt) = tape(it);
    Ok(wrap(sel::broadcast(tape, rt, &x.array, &shape)?, x.flavor))
}

// ------------------------------------------------------------------ mxnet.np

/// Adds `sort`, `argsort`, `flip`, `where` and `tril` to `mxnet.np`.
pub fn install_np(m: &Module) {
    m.set(
        "sort",
        builtin(
            "sort",
            "sort(a, axis=-1): a sorted along axis (None: flattened).",
            np_sort,
        ),
    );
    m.set(
        "argsort",
        builtin(
            "argsort",
            "argsort(a, axis=-1): the int64 indices that sort a along axis (None: flattened).",
            np_sort,
        ),
    );
    m.set(
        "flip",
        builtin(
            "flip",
            "flip(m, axis=None): m reversed along axis (every axis when None).",
            np_flip,
        ),
    );
    m.set(
        "where",
        builtin(
            "where",
            "where(condition, x, y): x where condition is nonzero, else y (broadcast together).",
            np_where,
        ),
    );
    m.set(
        "tril",
        builtin(
            "tril",
            "tril(m, k=0): the lower triangle of the last two axes, zeros above.",
            np_tril,
        ),
    );
    m.set("take", builtin("take", "take(a, indices, axis=None, mode='raise'): the elements (or slices along axis) of a at indices.", np_take));
}

fn np_array(v: &Value, what: &str) -> Result<ArrayValue, Exc> {
    array_of(v, what)
}

fn np_sort(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = np_array(&a.required(0, "a")?, a.fname)?;
    let axis = a.take(1, "axis")?;
    a.take_kw("kind");
    a.take_kw("order");
    a.finish(2)?;
    let (array, axis) = match axis {
        Some(Value::None) => (x.array.reshape(&[-1])?, 0),
        other => {
            let ax = axis_of(other, -1, x.array.ndim(), a.fname)?;
            (x.array.clone(), ax)
        }
    };
    if a.fname == "argsort" {
        return Ok(wrap(array.sort_positions(axis as isize, false)?, x.flavor));
    }
    let (tape, _) = tape(it);
    let (values, _) = sel::sort(tape, &array, axis as isize, false)?;
    Ok(wrap(values, x.flavor))
}

fn np_flip(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = np_array(&a.required(0, "m")?, "flip")?;
    let axis = a.take(1, "axis")?;
    a.finish(2)?;
    let axes: Vec<usize> = match axis {
        None | Some(Value::None) => (0..x.array.ndim()).collect(),
        Some(v) => ints(&v, "axis")?
            .into_iter()
            .map(|d| axis_of(Some(Value::Int(d)), 0, x.array.ndim(), "flip"))
            .collect::<Result<_, _>>()?,
    };
    let (tape, _) = tape(it);
    Ok(wrap(sel::flip(tape, &x.array, &axes)?, x.flavor))
}

/// A `where` operand: an array, or a number as a 0-d array of `like`'s dtype (float32 alone).
fn np_operand(
    it: &mut dyn Interpreter,
    v: &Value,
    like: Option<&Array>,
    device: crate::runtime::Device,
) -> Result<Array, Exc> {
    if let Some(x) = v.as_array() {
        return Ok(x.array.clone());
    }
    let f = as_f64(v).ok_or_else(|| {
        Exc::type_error(format!(
            "where: expected an array or a number, got {}",
            v.type_name()
        ))
    })?;
    let dtype = like.map_or(DType::Float32, Array::dtype);
    Ok(it.state().rt.full(&[], f, dtype, device)?)
}

fn np_where(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let cond = np_array(&a.required(0, "condition")?, "where")?;
    let x = a.take(1, "x")?;
    let y = a.take(2, "y")?;
    a.finish(3)?;
    let (x, y) = match (x, y) {
        (Some(x), Some(y)) => (x, y),
        (None, None) => return nonzero(it, &cond),
        _ => {
            return Err(Exc::value_error(
                "either both or neither of x and y should be given",
            ))
        }
    };
    let device = cond.array.device();
    let (xa, ya) = (
        x.as_array().map(|v| v.array.clone()),
        y.as_array().map(|v| v.array.clone()),
    );
    let xv = np_operand(it, &x, ya.as_ref(), device)?;
    let yv = np_operand(it, &y, xa.as_ref(), device)?;
    let dtype = if xv.dtype() == yv.dtype() {
        xv.dtype()
    } else if xv.dtype().is_float() || !yv.dtype().is_float() {
        xv.dtype()
    } else {
        yv.dtype()
    };
    let (tape, rt) = tape(it);
    let xv = if xv.dtype() == dtype {
        xv
    } else {
        tape.astype(&xv, dtype)?
    };
    let yv = if yv.dtype() == dtype {
        yv
    } else {
        tape.astype(&yv, dtype)?
    };
    let mask = Array::binary(
        BinaryOp::Ne,
        Operand::Array(&cond.array),
        Operand::Scalar(Scalar::Int(0)),
    )?;
    Ok(wrap(
        sel::select_where(tape, rt, &mask, &xv, &yv)?,
        cond.flavor,
    ))
}

/// The positions of the nonzero elements, one int64 array per axis (row-major order).
fn nonzero(it: &mut dyn Interpreter, x: &ArrayValue) -> Result<Value, Exc> {
    let per_axis = sel::nonzero_per_axis(&it.state().rt, &x.array)?;
    Ok(Value::tuple(
        per_axis.into_iter().map(|a| wrap(a, x.flavor)).collect(),
    ))
}

fn np_take(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = np_array(&a.required(0, "a")?, "take")?;
    let index = np_array(&a.required(1, "indices")?, "take")?.array;
    let axis = a.take(2, "axis")?;
    let mode = match a.take(3, "mode")? {
        None => Some(Value::str("raise")),
        m => m,
    };
    let mode = mode_arg(mode)?;
    a.finish(4)?;
    let (array, axis) = match axis {
        None | Some(Value::None) => (x.array.reshape(&[-1])?, 0),
        some => {
            let ax = axis_of(some, 0, x.array.ndim(), "take")?;
            (x.array.clone(), ax)
        }
    };
    let shape = array.shape().to_vec();
    let len = shape[axis];
    if mode == "raise" {
        crate::runtime::check_positions(&index, len).map_err(|_| {
            Exc::new(
                ExcKind::IndexError,
                format!("index out of bounds for axis {axis} with size {len}"),
            )
        })?;
    }
    let p = if mode == "raise" {
        let whole = index.astype(DType::Int64)?;
        let neg = Array::binary(
            BinaryOp::Lt,
            Operand::Array(&whole),
            Operand::Scalar(Scalar::Int(0)),
        )?
        .astype(DType::Int64)?;
        let shift = Array::binary(
            BinaryOp::Mul,
            Operand::Array(&neg),
            Operand::Scalar(Scalar::Int(len as i64)),
        )?;
        Array::binary(
            BinaryOp::Add,
            Operand::Array(&whole),
            Operand::Array(&shift),
        )?
    } else {
        positions(&index, len, &mode)?
    }
    .reshape(&[-1])?;
    let (tape, rt) = tape(it);
    let y = sel::index_select(tape, rt, &array, axis, &p)?;
    let mut out_shape: Vec<isize> = shape[..axis].iter().map(|&d| d as isize).collect();
    out_shape.extend(index.shape().iter().map(|&d| d as isize));
    out_shape.extend(shape[axis + 1..].iter().map(|&d| d as isize));
    Ok(wrap(tape.reshape(&y, &out_shape)?, x.flavor))
}

fn np_tril(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = np_array(&a.required(0, "m")?, "tril")?;
    let k = match a.take(1, "k")? {
        None => 0,
        Some(v) => int_of(&v, "k")?,
    };
    a.finish(2)?;
    let (tape, rt) = tape(it);
    let array = if x.array.ndim() == 1 {
        // NumPy's tril of a vector: the vector repeated into a square, then cut.
        let n = x.array.size();
        sel::broadcast(tape, rt, &x.array, &[n, n])?
    } else {
        x.array.clone()
    };
    Ok(wrap(sel::tri(tape, rt, &array, k, true)?, x.flavor))
}
