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
const ND_OPS: &[(&str, &str, Op)] = &[
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
    ("broadcast_to", "broadcast_to(data, shape=()): data repeated along axes of size 1 to shape (0 keeps an axis).", broadcast_to),
    ("split", "split(data, num_outputs, axis=1, squeeze_axis=False): num_outputs equal pieces along axis (a list).", split),
    ("squeeze", "squeeze(data, axis=None): data without its axes of size 1 (or those of axis).", squeeze),
    ("swapaxes", "swapaxes(data, dim1=0, dim2=0): data with two axes exchanged.", swapaxes),
    ("tile", "tile(data, reps): data repeated reps[d] times along each axis (ones prepended to the shorter).", tile),
    ("repeat", "repeat(data, repeats, axis=None): each element (or slice along axis) repeated (of the flattened data when None).", repeat),
    ("expand_dims", "expand_dims(data, axis): data with a new axis of size 1 at axis.", expand_dims),
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
    // `expand_dims`, `squeeze` and `broadcast_to` are methods of the shared API already.
    let Some((mname, doc, _)) = ND_OPS.iter().find(|(n, _, _)| {
        *n == name && !matches!(*n, "where" | "expand_dims" | "squeeze" | "broadcast_to")
    }) else {
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
        lined.extend(std::iter::repeat_n(1, x.array.ndim().saturating_sub(1)));
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

fn shape_ints(v: Option<Value>, what: &str) -> Result<Vec<i64>, Exc> {
    match v {
        None | Some(Value::None) => Ok(Vec::new()),
        Some(v) => ints(&v, what),
    }
}

fn broadcast_to(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let shape = shape_ints(a.take(1, "shape")?, "shape")?;
    a.finish(2)?;
    let src = x.array.shape();
    if shape.len() != src.len() {
        return Err(mx_error(format!(
            "broadcast_to: the new shape {} must have the input's {} axes",
            crate::runtime::shape::shape_tuple(
                &shape.iter().map(|&d| d.max(0) as usize).collect::<Vec<_>>()
            ),
            src.len()
        )));
    }
    let mut target = Vec::with_capacity(shape.len());
    for (d, (&want, &have)) in shape.iter().zip(src).enumerate() {
        let size = if want == 0 {
            have
        } else {
            want.max(0) as usize
        };
        if have != 1 && size != have {
            return Err(mx_error(format!(
                "broadcast_to: axis {d} of size {have} cannot be broadcast to {size}"
            )));
        }
        target.push(size);
    }
    let (tape, rt) = tape(it);
    Ok(wrap(sel::broadcast(tape, rt, &x.array, &target)?, x.flavor))
}

fn split(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let n = int_of(&a.required(1, "num_outputs")?, "num_outputs")?;
    let axis = a.take(2, "axis")?;
    let squeeze_axis = flag(a.take(3, "squeeze_axis")?, false)?;
    a.finish(4)?;
    let shape = x.array.shape().to_vec();
    let ax = axis_of(axis, 1, shape.len(), "split")?;
    let len = shape[ax];
    if n <= 0 || len % n as usize != 0 {
        let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
        return Err(mx_error(format!(
            "Traceback (most recent call last):\n  File \"../src/operator/./slice_channel-inl.h\", line 202\nMXNetError: Check failed: dshape[real_axis] % param_.num_outputs == 0U ({} vs. 0) : You are trying to split the {ax}-th axis of input tensor with shape [{}] into num_outputs={n} evenly sized chunks, but this is not possible because {n} does not evenly divide {len}",
            len % n.max(1) as usize,
            dims.join(",")
        )));
    }
    let size = len / n as usize;
    let (tape, _) = tape(it);
    let parts = sel::split_sizes(tape, &x.array, ax, &vec![size; n as usize])?;
    let mut outs = Vec::with_capacity(parts.len());
    for p in parts {
        let p = if squeeze_axis && size == 1 {
            let mut s: Vec<isize> = p.shape().iter().map(|&d| d as isize).collect();
            s.remove(ax);
            tape.reshape(&p, &s)?
        } else {
            p
        };
        outs.push(wrap(p, x.flavor));
    }
    Ok(Value::list(outs))
}

fn squeeze(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let axes = shape_ints(a.take(1, "axis")?, "axis")?;
    a.finish(2)?;
    let shape = x.array.shape();
    let drop: Vec<usize> = if axes.is_empty() {
        (0..shape.len()).filter(|&d| shape[d] == 1).collect()
    } else {
        let mut v = Vec::new();
        for d in axes {
            let d = axis_of(Some(Value::Int(d)), 0, shape.len(), "squeeze")?;
            if shape[d] != 1 {
                return Err(mx_error(format!(
                    "squeeze: cannot select an axis to squeeze out which has size={} not equal to one",
                    shape[d]
                )));
            }
            v.push(d);
        }
        v
    };
    let kept: Vec<isize> = (0..shape.len())
        .filter(|d| !drop.contains(d))
        .map(|d| shape[d] as isize)
        .collect();
    // MXNet keeps one axis of a squeezed (1,)-shaped result.
    let kept = if kept.is_empty() && !shape.is_empty() {
        vec![1]
    } else {
        kept
    };
    let (tape, _) = tape(it);
    Ok(wrap(tape.reshape(&x.array, &kept)?, x.flavor))
}

fn swapaxes(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let d1 = a.take(1, "dim1")?;
    let d2 = a.take(2, "dim2")?;
    a.finish(3)?;
    let nd = x.array.ndim();
    let d1 = axis_of(d1, 0, nd, "swapaxes")?;
    let d2 = axis_of(d2, 0, nd, "swapaxes")?;
    let mut perm: Vec<isize> = (0..nd as isize).collect();
    perm.swap(d1, d2);
    let (tape, _) = tape(it);
    Ok(wrap(tape.transpose(&x.array, Some(&perm))?, x.flavor))
}

fn tile(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let reps = shape_ints(Some(a.required(1, "reps")?), "reps")?;
    a.finish(2)?;
    if reps.iter().any(|&r| r < 0) {
        return Err(mx_error("tile: reps must not be negative"));
    }
    let mut full = vec![1usize; x.array.ndim().saturating_sub(reps.len())];
    full.extend(reps.iter().map(|&r| r as usize));
    let (tape, _) = tape(it);
    Ok(wrap(sel::tile(tape, &x.array, &full)?, x.flavor))
}

fn repeat(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let n = int_of(&a.required(1, "repeats")?, "repeats")?;
    let axis = a.take(2, "axis")?;
    a.finish(3)?;
    let (source, ax) = match axis {
        None | Some(Value::None) => (x.array.reshape(&[-1])?, 0),
        some => {
            let ax = axis_of(some, 0, x.array.ndim(), "repeat")?;
            (x.array.clone(), ax)
        }
    };
    if n < 0 {
        return Err(mx_error("repeat: repeats must not be negative"));
    }
    let counts = vec![n as usize; source.shape()[ax]];
    let (tape, rt) = tape(it);
    Ok(wrap(
        sel::repeat_along(tape, rt, &source, ax, &counts)?,
        x.flavor,
    ))
}

fn expand_dims(it: &mut dyn Interpreter, r: Option<&Value>, mut a: Args) -> Result<Value, Exc> {
    let x = data_arg(r, &mut a)?;
    let ax = int_of(&a.required(1, "axis")?, "axis")?;
    a.finish(2)?;
    let nd = x.array.ndim() as i64;
    let at = if ax < 0 { ax + nd + 1 } else { ax };
    if at < 0 || at > nd {
        return Err(mx_error(format!(
            "expand_dims: axis {ax} is out of range for an array of {nd} dimensions"
        )));
    }
    let mut shape: Vec<isize> = x.array.shape().iter().map(|&d| d as isize).collect();
    shape.insert(at as usize, 1);
    let (tape, _) = tape(it);
    Ok(wrap(tape.reshape(&x.array, &shape)?, x.flavor))
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
    let fns: [(&'static str, &'static str, crate::object::value::BuiltinFn); 8] = [
        ("repeat", "repeat(a, repeats, axis=None): each element (or slice along axis) repeated (of the flattened a when None).", |it, a| via_nd(it, a, repeat)),
        ("tile", "tile(A, reps): A repeated reps[d] times along each axis.", |it, a| via_nd(it, a, tile)),
        ("swapaxes", "swapaxes(a, axis1, axis2): a with two axes exchanged.", |it, a| via_nd(it, a, swapaxes)),
        ("squeeze", "squeeze(a, axis=None): a without its axes of size 1 (or those of axis).", np_squeeze),
        ("broadcast_to", "broadcast_to(array, shape): array repeated along axes of size 1 (and new leading axes) to shape.", np_broadcast_to),
        ("moveaxis", "moveaxis(a, source, destination): the axes at source moved to destination.", np_moveaxis),
        ("split", "split(ary, indices_or_sections, axis=0): equal pieces, or pieces cut before the given indices, along axis (a list).", np_split),
        ("unique", "unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None): the sorted distinct values.", np_unique),
    ];
    for (name, doc, f) in fns {
        m.set(name, builtin(name, doc, f));
    }
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
    // The float of the two wins; otherwise the first's dtype.
    let dtype = if yv.dtype().is_float() && !xv.dtype().is_float() {
        yv.dtype()
    } else {
        xv.dtype()
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

/// A numpy-mode function served by the legacy operator of the same computation: NumPy's
/// keyword names become MXNet's.
fn via_nd(it: &mut dyn Interpreter, mut a: Args, op: Op) -> Result<Value, Exc> {
    for (k, _) in a.kw.iter_mut() {
        let renamed = match &**k {
            "a" | "A" => "data",
            "axis1" => "dim1",
            "axis2" => "dim2",
            _ => continue,
        };
        *k = std::rc::Rc::from(renamed);
    }
    op(it, None, a)
}

fn np_squeeze(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = np_array(&a.required(0, "a")?, "squeeze")?;
    let axes = shape_ints(a.take(1, "axis")?, "axis")?;
    a.finish(2)?;
    let shape = x.array.shape();
    let mut drop = Vec::new();
    if axes.is_empty() {
        drop.extend((0..shape.len()).filter(|&d| shape[d] == 1));
    }
    for d in axes {
        let d = axis_of(Some(Value::Int(d)), 0, shape.len(), "squeeze")?;
        if shape[d] != 1 {
            return Err(Exc::value_error(
                "cannot select an axis to squeeze out which has size not equal to one",
            ));
        }
        drop.push(d);
    }
    let kept: Vec<isize> = (0..shape.len())
        .filter(|d| !drop.contains(d))
        .map(|d| shape[d] as isize)
        .collect();
    let (tape, _) = tape(it);
    Ok(wrap(tape.reshape(&x.array, &kept)?, x.flavor))
}

fn np_broadcast_to(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = np_array(&a.required(0, "array")?, "broadcast_to")?;
    let shape: Vec<usize> = shape_ints(Some(a.required(1, "shape")?), "shape")?
        .into_iter()
        .map(|d| d.max(0) as usize)
        .collect();
    a.finish(2)?;
    let fits = crate::runtime::shape::broadcast_shapes(x.array.shape(), &shape)
        .map(|s| s == shape)
        .unwrap_or(false);
    if !fits {
        return Err(Exc::value_error(format!(
            "operands could not be broadcast together with remapped shapes [original->remapped]: {} and requested shape {}",
            crate::runtime::shape::shape_tuple(x.array.shape()),
            crate::runtime::shape::shape_tuple(&shape)
        )));
    }
    let (tape, rt) = tape(it);
    Ok(wrap(sel::broadcast(tape, rt, &x.array, &shape)?, x.flavor))
}

fn np_moveaxis(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = np_array(&a.required(0, "a")?, "moveaxis")?;
    let source = ints(&a.required(1, "source")?, "source")?;
    let destination = ints(&a.required(2, "destination")?, "destination")?;
    a.finish(3)?;
    if source.len() != destination.len() {
        return Err(Exc::value_error(
            "`source` and `destination` arguments must have the same number of elements",
        ));
    }
    let nd = x.array.ndim();
    let fix = |d: &i64| axis_of(Some(Value::Int(*d)), 0, nd, "moveaxis");
    let src: Vec<usize> = source.iter().map(fix).collect::<Result<_, _>>()?;
    let dst: Vec<usize> = destination.iter().map(fix).collect::<Result<_, _>>()?;
    let mut order: Vec<usize> = (0..nd).filter(|d| !src.contains(d)).collect();
    let mut pairs: Vec<(usize, usize)> = dst.iter().copied().zip(src.iter().copied()).collect();
    pairs.sort_unstable();
    for (d, s) in pairs {
        order.insert(d.min(order.len()), s);
    }
    let perm: Vec<isize> = order.iter().map(|&d| d as isize).collect();
    let (tape, _) = tape(it);
    Ok(wrap(tape.transpose(&x.array, Some(&perm))?, x.flavor))
}

fn np_split(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = np_array(&a.required(0, "ary")?, "split")?;
    let how = a.required(1, "indices_or_sections")?;
    let axis = a.take(2, "axis")?;
    a.finish(3)?;
    let ax = axis_of(axis, 0, x.array.ndim(), "split")?;
    let len = x.array.shape()[ax];
    let sizes: Vec<usize> = match &how {
        Value::Int(n) => {
            if *n <= 0 || len % *n as usize != 0 {
                return Err(Exc::value_error(
                    "array split does not result in an equal division",
                ));
            }
            vec![len / *n as usize; *n as usize]
        }
        other => {
            let mut sizes = Vec::new();
            let mut prev = 0usize;
            for c in ints(other, "indices")?
                .into_iter()
                .chain(std::iter::once(len as i64))
            {
                let c = (if c < 0 { c + len as i64 } else { c }).clamp(0, len as i64) as usize;
                let c = c.max(prev);
                sizes.push(c - prev);
                prev = c;
            }
            sizes
        }
    };
    let (tape, _) = tape(it);
    let parts = sel::split_sizes(tape, &x.array, ax, &sizes)?;
    Ok(Value::list(
        parts.into_iter().map(|p| wrap(p, x.flavor)).collect(),
    ))
}

fn np_unique(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = np_array(&a.required(0, "ar")?, "unique")?;
    let want_index = flag(a.take(1, "return_index")?, false)?;
    let want_inverse = flag(a.take(2, "return_inverse")?, false)?;
    let want_counts = flag(a.take(3, "return_counts")?, false)?;
    let axis = a.take(4, "axis")?;
    a.finish(5)?;
    if !matches!(axis, None | Some(Value::None)) {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            "unique(axis=...): devarray's mxnet.np finds the distinct elements of the flattened array only",
        ));
    }
    let host = x.array.try_to_host()?.to_f64_vec();
    let (values, inverse, counts) = sel::unique_values(&host);
    let rt = &it.state().rt;
    let device = x.array.device();
    let n = values.len();
    let vals = rt
        .from_host(HostData::F64(values), &[n], device)?
        .astype(x.array.dtype())?;
    let mut parts = vec![wrap(vals, x.flavor)];
    if want_index {
        let mut first = vec![-1i64; n];
        for (p, &u) in inverse.iter().enumerate() {
            if let Some(f) = first.get_mut(u as usize) {
                if *f < 0 {
                    *f = p as i64;
                }
            }
        }
        parts.push(wrap(
            rt.from_host(HostData::I64(first), &[n], device)?,
            x.flavor,
        ));
    }
    if want_inverse {
        let m = inverse.len();
        parts.push(wrap(
            rt.from_host(HostData::I64(inverse), &[m], device)?,
            x.flavor,
        ));
    }
    if want_counts {
        parts.push(wrap(
            rt.from_host(HostData::I64(counts), &[n], device)?,
            x.flavor,
        ));
    }
    Ok(if parts.len() == 1 {
        parts.remove(0)
    } else {
        Value::tuple(parts)
    })
}
