//! NumPy 1.23's selection and reshaping functions beyond the shared core: `take`,
//! `take_along_axis`, `roll`, `tril`/`triu`, `fliplr`/`flipud`, `rot90`, `searchsorted`,
//! `digitize`, `argwhere`, `flatnonzero`, `column_stack`/`dstack`, `hsplit`/`vsplit`/`dsplit`,
//! `isin` and the set functions, `partition`/`argpartition`, `lexsort`, `insert`/`delete`,
//! `indices`, `diagonal`, `pad`, `rollaxis`, and the array methods `take`/`diagonal`/
//! `searchsorted`, over `array::selection` with NumPy's signatures, dtypes and messages.
use crate::modules::array::numpy_fns::as_array;
use crate::modules::array::selection as sel;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_i64, wrap};
use crate::object::value::{Args, BuiltinFn, Flavor, MethodFn, Module, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{Array, DType, HostData};

const N: Flavor = Flavor::Numpy;

fn out(a: Array) -> Value {
    wrap(a, N)
}

fn arr(it: &mut dyn Interpreter, v: &Value) -> Result<Array, Exc> {
    Ok(as_array(it, v)?.array)
}

fn int(v: &Value, what: &str) -> Result<i64, Exc> {
    match v {
        Value::Float(_) => None,
        other => as_i64(other),
    }
    .ok_or_else(|| {
        Exc::type_error(format!(
            "'{}' object cannot be interpreted as an integer ({what})",
            v.type_name()
        ))
    })
}

fn ints(v: &Value, what: &str) -> Result<Vec<i64>, Exc> {
    match v {
        Value::List(l) => l.borrow().iter().map(|d| int(d, what)).collect(),
        Value::Tuple(t) => t.iter().map(|d| int(d, what)).collect(),
        Value::Array(a) => Ok(a
            .array
            .try_to_host()?
            .to_f64_vec()
            .iter()
            .map(|&f| f as i64)
            .collect()),
        other => Ok(vec![int(other, what)?]),
    }
}

/// An axis counted from the end when negative, in NumPy's words.
fn axis(a: i64, ndim: usize) -> Result<usize, Exc> {
    let n = ndim as i64;
    let p = if a < 0 { a + n } else { a };
    if p < 0 || p >= n {
        return Err(Exc::new(
            ExcKind::AxisError,
            format!("axis {a} is out of bounds for array of dimension {ndim}"),
        ));
    }
    Ok(p as usize)
}

fn flag(v: Option<Value>, default: bool) -> Result<bool, Exc> {
    match v {
        None | Some(Value::None) => Ok(default),
        Some(v) => v.truthy(),
    }
}

fn tape_rt(it: &mut dyn Interpreter) -> (&mut crate::nn::autograd::Tape, &crate::runtime::Runtime) {
    let st = it.state_mut();
    (&mut st.nn.tape, &st.rt)
}

fn host_i64(it: &mut dyn Interpreter, data: Vec<i64>, shape: &[usize]) -> Result<Array, Exc> {
    Ok(it
        .state()
        .rt
        .from_host(HostData::I64(data), shape, crate::runtime::Device::cpu(0))?)
}

fn values(x: &Array) -> Result<Vec<f64>, Exc> {
    Ok(x.try_to_host()?.to_f64_vec())
}

/// Adds the functions to `numpy` and NumPy arrays' methods of this file to the array API.
pub fn install(m: &Module) {
    let fns: Vec<(&'static str, &'static str, BuiltinFn)> = vec![
        ("take", "take(a, indices, axis=None, mode='raise'): the elements of a (flattened when axis is None) or its slices along axis at indices.", take),
        ("take_along_axis", "take_along_axis(arr, indices, axis): the elements of arr at indices along axis (the two broadcast elsewhere).", take_along_axis),
        ("roll", "roll(a, shift, axis=None): a's elements shifted by shift along axis (the flattened a when None), wrapping around.", roll),
        ("tril", "tril(m, k=0): the lower triangle of the last two axes (a vector is repeated into a square first), zeros above.", |it, a| tri(it, a, true)),
        ("triu", "triu(m, k=0): the upper triangle of the last two axes, zeros below.", |it, a| tri(it, a, false)),
        ("fliplr", "fliplr(m): m reversed along axis 1.", |it, a| flip_axis(it, a, 1)),
        ("flipud", "flipud(m): m reversed along axis 0.", |it, a| flip_axis(it, a, 0)),
        ("rot90", "rot90(m, k=1, axes=(0, 1)): m rotated by 90 degrees k times from the first axis towards the second.", rot90),
        ("searchsorted", "searchsorted(a, v, side='left', sorter=None): where each of v goes in the sorted 1-D a.", searchsorted),
        ("digitize", "digitize(x, bins, right=False): the index of the bin of each of x among increasing bins.", digitize),
        ("argwhere", "argwhere(a): the indices of the nonzero elements, one row each.", argwhere),
        ("flatnonzero", "flatnonzero(a): the indices of the nonzero elements of the flattened a.", flatnonzero),
        ("column_stack", "column_stack(tup): 1-D arrays as columns, joined with 2-D ones along axis 1.", |it, a| stack_like(it, a, 2)),
        ("dstack", "dstack(tup): the arrays as 3-D, joined along axis 2.", |it, a| stack_like(it, a, 3)),
        ("hsplit", "hsplit(ary, indices_or_sections): split along axis 1 (axis 0 for 1-D).", |it, a| split_along(it, a, 1)),
        ("vsplit", "vsplit(ary, indices_or_sections): split along axis 0 (2-D or more).", |it, a| split_along(it, a, 0)),
        ("dsplit", "dsplit(ary, indices_or_sections): split along axis 2 (3-D or more).", |it, a| split_along(it, a, 2)),
        ("isin", "isin(element, test_elements, assume_unique=False, invert=False): whether each element is among test_elements.", isin),
        ("intersect1d", "intersect1d(ar1, ar2): the sorted values in both.", |it, a| set_op(it, a, SetOp::Both)),
        ("union1d", "union1d(ar1, ar2): the sorted values in either.", |it, a| set_op(it, a, SetOp::Either)),
        ("setdiff1d", "setdiff1d(ar1, ar2): the sorted values of ar1 not in ar2.", |it, a| set_op(it, a, SetOp::FirstOnly)),
        ("partition", "partition(a, kth, axis=-1): a with the kth element where sorting puts it, smaller ones before, larger after (here: sorted).", |it, a| partition(it, a, false)),
        ("argpartition", "argpartition(a, kth, axis=-1): the indices that partition a (here: that sort it).", |it, a| partition(it, a, true)),
        ("lexsort", "lexsort(keys, axis=-1): the indices that sort by the last key, then the one before, ... (stable).", lexsort),
        ("insert", "insert(arr, obj, values, axis=None): values inserted before position obj along axis (the flattened arr when None).", insert),
        ("delete", "delete(arr, obj, axis=None): arr without the positions obj along axis (the flattened arr when None).", delete),
        ("indices", "indices(dimensions, dtype=int): a grid of indices: out[i] varies along axis i.", indices),
        ("diagonal", "diagonal(a, offset=0, axis1=0, axis2=1): the diagonal of axes axis1 and axis2, as a last axis.", diagonal),
        ("pad", "pad(array, pad_width, mode='constant', constant_values=0): array padded on each axis ('constant', 'edge' or 'reflect').", pad),
        ("rollaxis", "rollaxis(a, axis, start=0): axis moved to before position start.", rollaxis),
        ("repeat", "repeat(a, repeats, axis=None): each element (or slice along axis) repeated repeats times (an int, or one count each).", repeat),
        ("count_nonzero", "count_nonzero(a, axis=None, *, keepdims=False): how many elements are nonzero (along axis).", count_nonzero),
        ("unique", "unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None): the sorted distinct values (or distinct slices along axis).", unique),
    ];
    for (name, doc, f) in fns {
        m.set(name, builtin(name, doc, f));
    }
    sel::register_methods(N, array_attr);
}

/// NumPy arrays' methods of this file.
fn array_attr(_it: &mut dyn Interpreter, v: &Value, name: &str) -> Result<Option<Value>, Exc> {
    if v.as_array().map(|x| x.flavor) != Some(N) {
        return Ok(None);
    }
    let (mname, doc, f): (&'static str, &'static str, MethodFn) = match name {
        "take" => (
            "take",
            "a.take(indices, axis=None, mode='raise'): np.take(a, ...).",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                take(it, a)
            },
        ),
        "diagonal" => (
            "diagonal",
            "a.diagonal(offset=0, axis1=0, axis2=1): np.diagonal(a, ...).",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                diagonal(it, a)
            },
        ),
        "searchsorted" => (
            "searchsorted",
            "a.searchsorted(v, side='left', sorter=None): np.searchsorted(a, ...).",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                searchsorted(it, a)
            },
        ),
        _ => return Ok(None),
    };
    Ok(Some(method(v, mname, doc, f)))
}

// ------------------------------------------------------------------ gathers

/// Positions of `index` checked against `len` (negative ones counted from the end).
fn checked_positions(
    rt: &crate::runtime::Runtime,
    index: &Array,
    len: usize,
    ax: usize,
) -> Result<Array, Exc> {
    let vals = values(index)?;
    let n = len as i64;
    let mut fixed = Vec::with_capacity(vals.len());
    for v in vals {
        let i = v as i64;
        if i < -n || i >= n {
            return Err(Exc::new(
                ExcKind::IndexError,
                format!("index {i} is out of bounds for axis {ax} with size {len}"),
            ));
        }
        fixed.push(if i < 0 { i + n } else { i });
    }
    Ok(rt.from_host(HostData::I64(fixed), index.shape(), index.device())?)
}

fn take(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "a")?)?;
    let index = arr(it, &a.required(1, "indices")?)?;
    let ax = a.take(2, "axis")?;
    a.take(3, "mode")?;
    a.finish(4)?;
    // An empty list is a float64 array that NumPy still accepts.
    if index.dtype().is_float() && index.size() > 0 {
        return Err(Exc::type_error(
            "Cannot cast array data from dtype('float64') to dtype('int64') according to the rule 'safe'",
        ));
    }
    let (source, ax) = match ax {
        None | Some(Value::None) => (x.reshape(&[-1])?, 0),
        Some(v) => (x.clone(), axis(int(&v, "axis")?, x.ndim())?),
    };
    let shape = source.shape().to_vec();
    let positions = checked_positions(&it.state().rt, &index, shape[ax], ax)?.reshape(&[-1])?;
    let (tape, rt) = tape_rt(it);
    let picked = sel::index_select(tape, rt, &source, ax, &positions)?;
    let mut out_shape: Vec<isize> = shape[..ax].iter().map(|&d| d as isize).collect();
    out_shape.extend(index.shape().iter().map(|&d| d as isize));
    out_shape.extend(shape[ax + 1..].iter().map(|&d| d as isize));
    let y = picked.reshape(&out_shape)?;
    if y.ndim() == 0 {
        return crate::object::ops::numpy_scalar(&y);
    }
    Ok(out(y))
}

fn take_along_axis(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "arr")?)?;
    let index = arr(it, &a.required(1, "indices")?)?;
    let ax = a.required(2, "axis")?;
    a.finish(3)?;
    if index.dtype().is_float() || index.dtype() == DType::Bool {
        return Err(Exc::new(
            ExcKind::IndexError,
            "`indices` must be an integer array",
        ));
    }
    let (source, ax) = match ax {
        Value::None => (x.reshape(&[-1])?, 0),
        v => (x.clone(), axis(int(&v, "axis")?, x.ndim())?),
    };
    if index.ndim() != source.ndim() {
        return Err(Exc::value_error(
            "`indices` and `arr` must have the same number of dimensions",
        ));
    }
    let positions = checked_positions(&it.state().rt, &index, source.shape()[ax], ax)?;
    // Broadcast the two apart from the axis.
    let (mut xs, mut is) = (source.shape().to_vec(), positions.shape().to_vec());
    xs[ax] = 1;
    is[ax] = 1;
    let common = crate::runtime::shape::broadcast_shapes(&xs, &is)?;
    let (mut xt, mut it_shape) = (common.clone(), common);
    xt[ax] = source.shape()[ax];
    it_shape[ax] = positions.shape()[ax];
    let (tape, rt) = tape_rt(it);
    let xb = sel::broadcast(tape, rt, &source, &xt)?;
    let ib = sel::broadcast(tape, rt, &positions, &it_shape)?;
    Ok(out(tape.take_along(&xb, &ib, ax as isize, true)?))
}

// ------------------------------------------------------------------ rearranging

fn roll(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "a")?)?;
    let shift = ints(&a.required(1, "shift")?, "shift")?;
    let ax = a.take(2, "axis")?;
    a.finish(3)?;
    let (tape, _) = tape_rt(it);
    let Some(ax) = ax.filter(|v| !matches!(v, Value::None)) else {
        let total: i64 = shift.iter().sum();
        let flat = x.reshape(&[-1])?;
        let rolled = sel::roll(tape, &flat, total, 0)?;
        let shape: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
        return Ok(out(rolled.reshape(&shape)?));
    };
    let axes = ints(&ax, "axis")?;
    let pairs: Vec<(i64, i64)> = match (shift.len(), axes.len()) {
        (1, n) => axes.iter().map(|&d| (shift[0], d)).take(n).collect(),
        (m, 1) => shift.iter().map(|&s| (s, axes[0])).take(m).collect(),
        (m, n) if m == n => shift.iter().copied().zip(axes.iter().copied()).collect(),
        _ => {
            return Err(Exc::value_error(
                "shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is between arg 0 and arg 1.",
            ))
        }
    };
    let mut y = x.clone();
    for (s, d) in pairs {
        let d = axis(d, x.ndim())?;
        y = sel::roll(tape, &y, s, d)?;
    }
    Ok(out(y))
}

fn tri(it: &mut dyn Interpreter, mut a: Args, lower: bool) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "m")?)?;
    let k = match a.take(1, "k")? {
        None => 0,
        Some(v) => int(&v, "k")?,
    };
    a.finish(2)?;
    let (tape, rt) = tape_rt(it);
    let x = match x.ndim() {
        0 => {
            return Err(Exc::value_error(
                "tril/triu: the input must be at least 1-d",
            ))
        }
        1 => {
            let n = x.size();
            sel::broadcast(tape, rt, &x, &[n, n])?
        }
        _ => x,
    };
    Ok(out(sel::tri(tape, rt, &x, k, lower)?))
}

fn flip_axis(it: &mut dyn Interpreter, mut a: Args, ax: usize) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "m")?)?;
    a.finish(1)?;
    if x.ndim() < ax + 1 {
        return Err(Exc::value_error(format!("Input must be >= {}-d.", ax + 1)));
    }
    let (tape, _) = tape_rt(it);
    Ok(out(sel::flip(tape, &x, &[ax])?))
}

fn rot90(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "m")?)?;
    let k = match a.take(1, "k")? {
        None => 1,
        Some(v) => int(&v, "k")?,
    };
    let axes = match a.take(2, "axes")? {
        None => vec![0, 1],
        Some(v) => ints(&v, "axes")?,
    };
    a.finish(3)?;
    if axes.len() != 2 {
        return Err(Exc::value_error("len(axes) must be 2."));
    }
    if x.ndim() < 2 {
        return Err(Exc::value_error("Axes must be different."));
    }
    let (a0, a1) = (axis(axes[0], x.ndim())?, axis(axes[1], x.ndim())?);
    if a0 == a1 {
        return Err(Exc::value_error("Axes must be different."));
    }
    let (tape, _) = tape_rt(it);
    Ok(out(sel::rot90(tape, &x, k, a0, a1)?))
}

fn rollaxis(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "a")?)?;
    let ax = int(&a.required(1, "axis")?, "axis")?;
    let start = match a.take(2, "start")? {
        None => 0,
        Some(v) => int(&v, "start")?,
    };
    a.finish(3)?;
    let n = x.ndim() as i64;
    let ax = axis(ax, x.ndim())?;
    let start = if start < 0 { start + n } else { start };
    if start < 0 || start > n {
        return Err(Exc::new(
            ExcKind::AxisError,
            format!(
                "'start' arg requires {} <= start < {}, but {start} was passed in",
                -n,
                n + 1
            ),
        ));
    }
    let mut start = start as usize;
    if ax < start {
        start -= 1;
    }
    let mut perm: Vec<isize> = (0..x.ndim() as isize)
        .filter(|&d| d as usize != ax)
        .collect();
    perm.insert(start, ax as isize);
    let (tape, _) = tape_rt(it);
    Ok(out(tape.transpose(&x, Some(&perm))?))
}

fn diagonal(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "a")?)?;
    let offset = match a.take(1, "offset")? {
        None => 0,
        Some(v) => int(&v, "offset")?,
    };
    let a1 = a.take(2, "axis1")?.map_or(Ok(0), |v| int(&v, "axis1"))?;
    let a2 = a.take(3, "axis2")?.map_or(Ok(1), |v| int(&v, "axis2"))?;
    a.finish(4)?;
    if x.ndim() < 2 {
        return Err(Exc::value_error(
            "diag requires an array of at least two dimensions",
        ));
    }
    let (d1, d2) = (axis(a1, x.ndim())?, axis(a2, x.ndim())?);
    if d1 == d2 {
        return Err(Exc::value_error("axis1 and axis2 cannot be the same"));
    }
    let (tape, rt) = tape_rt(it);
    Ok(out(sel::diagonal(tape, rt, &x, offset, d1, d2)?))
}

/// `column_stack` (rank 2) and `dstack` (rank 3).
fn stack_like(it: &mut dyn Interpreter, mut a: Args, rank: usize) -> Result<Value, Exc> {
    let list = a.required(0, "tup")?;
    a.finish(1)?;
    let items = it.iterate(&list)?;
    if items.is_empty() {
        return Err(Exc::value_error("need at least one array to concatenate"));
    }
    let mut parts = Vec::with_capacity(items.len());
    for v in &items {
        let t = arr(it, v)?;
        let shape: Vec<isize> = match (rank, t.shape()) {
            (2, []) => vec![1, 1],
            (2, [n]) => vec![*n as isize, 1],
            (3, []) => vec![1, 1, 1],
            (3, [n]) => vec![1, *n as isize, 1],
            (3, [m, n]) => vec![*m as isize, *n as isize, 1],
            (_, s) => s.iter().map(|&d| d as isize).collect(),
        };
        parts.push(t.reshape(&shape)?);
    }
    let dtype = parts
        .iter()
        .map(Array::dtype)
        .reduce(crate::runtime::DType::promote)
        .unwrap_or(DType::Float64);
    let parts = parts
        .iter()
        .map(|p| {
            if p.dtype() == dtype {
                Ok(p.clone())
            } else {
                p.astype(dtype)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(out(Array::concat(&parts, rank as isize - 1)?))
}

fn split_along(it: &mut dyn Interpreter, mut a: Args, ax: usize) -> Result<Value, Exc> {
    let fname = a.fname;
    let x = arr(it, &a.required(0, "ary")?)?;
    let how = a.required(1, "indices_or_sections")?;
    a.finish(2)?;
    let ax = match (fname, x.ndim()) {
        ("hsplit", 0) => {
            return Err(Exc::value_error(
                "hsplit only works on arrays of 1 or more dimensions",
            ))
        }
        ("hsplit", 1) => 0,
        ("vsplit", n) if n < 2 => {
            return Err(Exc::value_error(
                "vsplit only works on arrays of 2 or more dimensions",
            ))
        }
        ("dsplit", n) if n < 3 => {
            return Err(Exc::value_error(
                "dsplit only works on arrays of 3 or more dimensions",
            ))
        }
        _ => ax,
    };
    let len = x.shape()[ax];
    let sizes: Vec<usize> = match &how {
        Value::Int(n) => {
            let n = *n;
            if n <= 0 {
                return Err(Exc::value_error("number sections must be larger than 0."));
            }
            if len % n as usize != 0 {
                return Err(Exc::value_error(
                    "array split does not result in an equal division",
                ));
            }
            vec![len / n as usize; n as usize]
        }
        other => {
            let cuts = ints(other, "indices")?;
            let mut sizes = Vec::with_capacity(cuts.len() + 1);
            let mut prev = 0usize;
            for c in cuts.iter().chain(std::iter::once(&(len as i64))) {
                let c = if *c < 0 { (*c + len as i64).max(0) } else { *c } as usize;
                let c = c.min(len).max(prev);
                sizes.push(c - prev);
                prev = c;
            }
            sizes
        }
    };
    let (tape, _) = tape_rt(it);
    let parts = sel::split_sizes(tape, &x, ax, &sizes)?;
    Ok(Value::list(parts.into_iter().map(out).collect()))
}

// ------------------------------------------------------------------ searching and sets

fn searchsorted(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let seq = arr(it, &a.required(0, "a")?)?;
    let v = a.required(1, "v")?;
    let side = a.take(2, "side")?;
    if let Some(s) = a.take(3, "sorter")? {
        if !matches!(s, Value::None) {
            return Err(Exc::new(
                ExcKind::NotImplementedError,
                "searchsorted(sorter=...): sort the array first",
            ));
        }
    }
    a.finish(4)?;
    let right = match &side {
        None | Some(Value::None) => false,
        Some(Value::Str(s)) if s.starts_with(['r', 'R']) => true,
        Some(Value::Str(s)) if s.starts_with(['l', 'L']) => false,
        Some(other) => {
            return Err(Exc::value_error(format!(
                "side must be 'left' or 'right' (got {})",
                crate::object::format::repr(it, other)?
            )))
        }
    };
    if seq.ndim() != 1 {
        return Err(Exc::value_error("object too deep for desired array"));
    }
    let scalar = !matches!(v, Value::Array(_) | Value::List(_) | Value::Tuple(_));
    let vals = arr(it, &v)?;
    let found = sel::search_sorted(&values(&seq)?, &values(&vals)?, right);
    if scalar {
        let y = host_i64(it, found, &[])?;
        return crate::object::ops::numpy_scalar(&y);
    }
    Ok(out(host_i64(it, found, vals.shape())?))
}

fn digitize(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let bins = arr(it, &a.required(1, "bins")?)?;
    let right = flag(a.take(2, "right")?, false)?;
    a.finish(3)?;
    let scalar = !matches!(x, Value::Array(_) | Value::List(_) | Value::Tuple(_));
    let xs = arr(it, &x)?;
    let b = values(&bins)?;
    let decreasing = b.len() > 1 && b[0] > b[b.len() - 1];
    let found: Vec<i64> = if decreasing {
        let rev: Vec<f64> = b.iter().rev().copied().collect();
        sel::search_sorted(&rev, &values(&xs)?, !right)
            .into_iter()
            .map(|p| b.len() as i64 - p)
            .collect()
    } else {
        sel::search_sorted(&b, &values(&xs)?, !right)
    };
    if scalar {
        let y = host_i64(it, found, &[])?;
        return crate::object::ops::numpy_scalar(&y);
    }
    Ok(out(host_i64(it, found, xs.shape())?))
}

fn argwhere(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "a")?)?;
    a.finish(1)?;
    Ok(out(sel::nonzero_coords(&it.state().rt, &x)?))
}

fn flatnonzero(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "a")?)?;
    a.finish(1)?;
    let flat = x.reshape(&[-1])?;
    let coords = sel::nonzero_coords(&it.state().rt, &flat)?;
    Ok(out(coords.reshape(&[-1])?))
}

fn isin(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "element")?)?;
    let test = arr(it, &a.required(1, "test_elements")?)?;
    a.take(2, "assume_unique")?;
    let invert = flag(a.take(3, "invert")?, false)?;
    a.finish(4)?;
    let mut pool = values(&test)?;
    pool.sort_by(|p, q| p.partial_cmp(q).unwrap_or(std::cmp::Ordering::Equal));
    let hits: Vec<bool> = values(&x)?
        .iter()
        .map(|v| {
            pool.binary_search_by(|p| p.partial_cmp(v).unwrap_or(std::cmp::Ordering::Less))
                .is_ok()
                != invert
        })
        .collect();
    Ok(out(it.state().rt.from_host(
        HostData::Bool(hits),
        x.shape(),
        x.device(),
    )?))
}

enum SetOp {
    Both,
    Either,
    FirstOnly,
}

fn set_op(it: &mut dyn Interpreter, mut a: Args, op: SetOp) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "ar1")?)?;
    let y = arr(it, &a.required(1, "ar2")?)?;
    a.take(2, "assume_unique")?;
    a.take_kw("return_indices");
    a.finish(3)?;
    let (ux, _, _) = sel::unique_values(&values(&x)?);
    let (uy, _, _) = sel::unique_values(&values(&y)?);
    let contains = |set: &[f64], v: f64| {
        set.binary_search_by(|p| p.partial_cmp(&v).unwrap_or(std::cmp::Ordering::Less))
            .is_ok()
    };
    let (result, dtype) = match op {
        SetOp::Both => (
            ux.iter()
                .copied()
                .filter(|&v| contains(&uy, v))
                .collect::<Vec<_>>(),
            x.dtype().promote(y.dtype()),
        ),
        SetOp::Either => {
            let mut all = ux.clone();
            all.extend(uy.iter().copied());
            (sel::unique_values(&all).0, x.dtype().promote(y.dtype()))
        }
        SetOp::FirstOnly => (
            ux.iter()
                .copied()
                .filter(|&v| !contains(&uy, v))
                .collect::<Vec<_>>(),
            x.dtype(),
        ),
    };
    let n = result.len();
    let y = it
        .state()
        .rt
        .from_host(HostData::F64(result), &[n], x.device())?
        .astype(dtype)?;
    Ok(out(y))
}

fn partition(it: &mut dyn Interpreter, mut a: Args, positions: bool) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "a")?)?;
    let kth = ints(&a.required(1, "kth")?, "kth")?;
    let ax = a.take(2, "axis")?;
    a.take_kw("kind");
    a.take_kw("order");
    a.finish(3)?;
    let (source, ax) = match ax {
        Some(Value::None) => (x.reshape(&[-1])?, 0),
        None => (x.clone(), axis(-1, x.ndim())?),
        Some(v) => (x.clone(), axis(int(&v, "axis")?, x.ndim())?),
    };
    let len = source.shape().get(ax).copied().unwrap_or(0) as i64;
    if len == 0 {
        return Ok(out(source));
    }
    for k in kth {
        if k < -len || k >= len {
            return Err(Exc::value_error(format!("kth(={k}) out of bounds ({len})")));
        }
    }
    // A full sort is one valid partition for every kth.
    let (tape, _) = tape_rt(it);
    let (values, order) = sel::sort(tape, &source, ax as isize, false)?;
    Ok(out(if positions { order } else { values }))
}

fn lexsort(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let keys = a.required(0, "keys")?;
    let ax = a.take(1, "axis")?;
    a.finish(2)?;
    if !matches!(ax, None | Some(Value::None)) && ax.as_ref().and_then(as_i64) != Some(-1) {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            "lexsort(axis=...): devarray sorts 1-D keys along their only axis",
        ));
    }
    let keys = arr(it, &keys)?;
    if keys.ndim() != 2 {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            "lexsort: devarray takes a sequence of 1-D keys of one length",
        ));
    }
    let (k, n) = (keys.shape()[0], keys.shape()[1]);
    let vals = values(&keys)?;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| {
        for key in (0..k).rev() {
            let (p, q) = (vals[key * n + i], vals[key * n + j]);
            match p.partial_cmp(&q) {
                Some(std::cmp::Ordering::Equal) | None => continue,
                Some(o) => return o,
            }
        }
        std::cmp::Ordering::Equal
    });
    Ok(out(host_i64(
        it,
        order.iter().map(|&i| i as i64).collect(),
        &[n],
    )?))
}

// ------------------------------------------------------------------ insert, delete, indices, pad

fn insert(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "arr")?)?;
    let obj = a.required(1, "obj")?;
    let vals = arr(it, &a.required(2, "values")?)?;
    let ax = a.take(3, "axis")?;
    a.finish(4)?;
    let (source, ax) = match ax {
        None | Some(Value::None) => (x.reshape(&[-1])?, 0),
        Some(v) => (x.clone(), axis(int(&v, "axis")?, x.ndim())?),
    };
    let len = source.shape()[ax] as i64;
    let at = int(&obj, "obj")?;
    if at < -len || at > len {
        return Err(Exc::new(
            ExcKind::IndexError,
            format!("index {at} is out of bounds for axis {ax} with size {len}"),
        ));
    }
    let at = if at < 0 { at + len } else { at };
    // The values fill one slice of the axis (broadcast to it).
    let mut slab = source.shape().to_vec();
    slab[ax] = 1;
    let vals = vals.astype(source.dtype())?;
    let (tape, rt) = tape_rt(it);
    let vals =
        if vals.ndim() == 1 && source.ndim() > 1 && vals.size() == slab.iter().product::<usize>() {
            vals.reshape(&slab.iter().map(|&d| d as isize).collect::<Vec<_>>())?
        } else {
            vals
        };
    let filler = sel::broadcast(tape, rt, &vals, &slab)?;
    let head = source.index(&sel::axis_slice(ax, 0, at))?;
    let tail = source.index(&sel::axis_slice(ax, at, len))?;
    Ok(out(Array::concat(&[head, filler, tail], ax as isize)?))
}

fn delete(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "arr")?)?;
    let obj = a.required(1, "obj")?;
    let ax = a.take(2, "axis")?;
    a.finish(3)?;
    let (source, ax) = match ax {
        None | Some(Value::None) => (x.reshape(&[-1])?, 0),
        Some(v) => (x.clone(), axis(int(&v, "axis")?, x.ndim())?),
    };
    let len = source.shape()[ax] as i64;
    let mut keep = vec![true; len as usize];
    for i in ints(&obj, "obj")? {
        if i < -len || i >= len {
            return Err(Exc::new(
                ExcKind::IndexError,
                format!("index {i} is out of bounds for axis {ax} with size {len}"),
            ));
        }
        keep[(if i < 0 { i + len } else { i }) as usize] = false;
    }
    let kept: Vec<i64> = (0..len).filter(|&i| keep[i as usize]).collect();
    let n = kept.len();
    let index = host_i64(it, kept, &[n])?;
    let (tape, rt) = tape_rt(it);
    Ok(out(sel::index_select(tape, rt, &source, ax, &index)?))
}

fn indices(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let dims: Vec<usize> = ints(&a.required(0, "dimensions")?, "dimensions")?
        .into_iter()
        .map(|d| d.max(0) as usize)
        .collect();
    let dtype = a.take(1, "dtype")?;
    a.take_kw("sparse");
    a.finish(2)?;
    let total: usize = dims.iter().product();
    let strides = crate::runtime::shape::contiguous_strides(&dims);
    let mut data = Vec::with_capacity(total * dims.len());
    for (d, &n) in dims.iter().enumerate() {
        data.extend((0..total).map(|f| ((f / strides[d]) % n.max(1)) as i64));
    }
    let mut shape = vec![dims.len()];
    shape.extend(&dims);
    let y = host_i64(it, data, &shape)?;
    let y = match dtype
        .map(|d| crate::modules::array::arrays::dtype_arg(&d))
        .transpose()?
        .flatten()
    {
        Some(d) => y.astype(d)?,
        None => y,
    };
    Ok(out(y))
}

/// (before, after) per axis from NumPy's pad_width forms: n, (n,), (b, a), ((b, a),), ((b, a), ...).
fn pad_widths(v: &Value, ndim: usize) -> Result<Vec<(usize, usize)>, Exc> {
    let rows: Vec<Vec<i64>> = match v {
        Value::List(_) | Value::Tuple(_) => {
            let items: Vec<Value> = match v {
                Value::List(l) => l.borrow().clone(),
                Value::Tuple(t) => t.to_vec(),
                _ => Vec::new(),
            };
            if items
                .iter()
                .all(|i| matches!(i, Value::List(_) | Value::Tuple(_)))
            {
                items
                    .iter()
                    .map(|i| ints(i, "pad_width"))
                    .collect::<Result<_, _>>()?
            } else {
                vec![ints(v, "pad_width")?]
            }
        }
        other => vec![vec![int(other, "pad_width")?]],
    };
    let pair = |r: &Vec<i64>| -> Result<(i64, i64), Exc> {
        match r.as_slice() {
            [n] => Ok((*n, *n)),
            [b, a] => Ok((*b, *a)),
            _ => Err(Exc::value_error(format!(
                "operands could not be broadcast together with remapped shapes [original->remapped]: ({},)  and requested shape ({ndim},2)",
                r.len()
            ))),
        }
    };
    let pairs: Vec<(i64, i64)> = match rows.len() {
        1 => vec![pair(&rows[0])?; ndim],
        n if n == ndim => rows.iter().map(pair).collect::<Result<_, _>>()?,
        n => {
            return Err(Exc::value_error(format!(
                "operands could not be broadcast together with remapped shapes [original->remapped]: ({n},2)  and requested shape ({ndim},2)"
            )))
        }
    };
    pairs
        .into_iter()
        .map(|(b, a)| {
            if b < 0 || a < 0 {
                Err(Exc::value_error("index can't contain negative values"))
            } else {
                Ok((b as usize, a as usize))
            }
        })
        .collect()
}

fn pad(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "array")?)?;
    let widths = pad_widths(&a.required(1, "pad_width")?, x.ndim())?;
    let mode = match &a.take(2, "mode")? {
        None => "constant".to_string(),
        Some(Value::Str(s)) => s.to_string(),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "mode must be a string, not {}",
                other.type_name()
            )))
        }
    };
    let value = match a.take_kw("constant_values") {
        None | Some(Value::None) => 0.0,
        Some(v) => crate::object::ops::as_f64(&v).ok_or_else(|| {
            Exc::new(
                ExcKind::NotImplementedError,
                "pad: devarray takes one number as constant_values",
            )
        })?,
    };
    a.finish(3)?;
    let mode = match mode.as_str() {
        "constant" => sel::PadMode::Constant(value),
        "edge" => sel::PadMode::Edge,
        "reflect" => sel::PadMode::Reflect,
        other => {
            return Err(Exc::new(
                ExcKind::NotImplementedError,
                format!("pad(mode={other:?}): devarray pads with 'constant', 'edge' or 'reflect'"),
            ))
        }
    };
    let (tape, rt) = tape_rt(it);
    Ok(out(sel::pad(tape, rt, &x, &widths, mode)?))
}

// ------------------------------------------------------------------ repeat, count_nonzero, unique

fn repeat(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "a")?)?;
    let repeats = a.required(1, "repeats")?;
    let ax = a.take(2, "axis")?;
    a.finish(3)?;
    let (source, ax) = match ax {
        None | Some(Value::None) => (x.reshape(&[-1])?, 0),
        Some(v) => (x.clone(), axis(int(&v, "axis")?, x.ndim().max(1))?),
    };
    let source = if source.ndim() == 0 {
        source.reshape(&[1])?
    } else {
        source
    };
    let len = source.shape()[ax];
    let counts = ints(&repeats, "repeats")?;
    let one_count = !matches!(repeats, Value::List(_) | Value::Tuple(_) | Value::Array(_));
    let counts = match counts.len() {
        1 => vec![counts[0]; len],
        n if n == len => counts,
        n => {
            return Err(Exc::value_error(format!(
                "operands could not be broadcast together with shape ({len},) ({n},)"
            )))
        }
    };
    if counts.iter().any(|&c| c < 0) {
        // NumPy's words differ for one count and for a count per element.
        return Err(Exc::value_error(if one_count {
            "negative dimensions are not allowed"
        } else {
            "repeats may not contain negative values."
        }));
    }
    let counts: Vec<usize> = counts.iter().map(|&c| c as usize).collect();
    let (tape, rt) = tape_rt(it);
    Ok(out(sel::repeat_along(tape, rt, &source, ax, &counts)?))
}

fn count_nonzero(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = arr(it, &a.required(0, "a")?)?;
    let ax = a.take(1, "axis")?;
    let keepdims = flag(a.take_kw("keepdims"), false)?;
    a.finish(2)?;
    let nonzero = Array::binary(
        crate::runtime::BinaryOp::Ne,
        crate::runtime::Operand::Array(&x),
        crate::runtime::Operand::Scalar(crate::runtime::Scalar::Int(0)),
    )?
    .astype(DType::Int64)?;
    let axes = match &ax {
        None | Some(Value::None) => None,
        Some(v) => Some(
            ints(v, "axis")?
                .into_iter()
                .map(|d| axis(d, x.ndim()).map(|d| d as isize))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let counted = nonzero.reduce(crate::runtime::ReduceOp::Sum, axes.as_deref(), keepdims)?;
    if axes.is_none() && !keepdims {
        // NumPy answers a plain int for the whole array.
        return Ok(Value::Int(
            counted.to_scalar("count_nonzero")?.as_f64() as i64
        ));
    }
    Ok(out(counted))
}

fn unique(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let ax = a
        .take_kw("axis")
        .or_else(|| (a.pos.len() > 4).then(|| std::mem::replace(&mut a.pos[4], Value::None)));
    let Some(ax) = ax.filter(|v| !matches!(v, Value::None)) else {
        return crate::modules::array::numpy_fns::unique(it, a);
    };
    let x = arr(it, &a.required(0, "ar")?)?;
    let flags = [
        flag(a.take(1, "return_index")?, false)?,
        flag(a.take(2, "return_inverse")?, false)?,
        flag(a.take(3, "return_counts")?, false)?,
    ];
    a.take_kw("equal_nan");
    a.finish(5)?;
    if flags.iter().any(|f| *f) {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            "unique(axis=...): devarray returns the distinct slices only (no return_index, return_inverse or return_counts)",
        ));
    }
    let ax = axis(int(&ax, "axis")?, x.ndim())?;
    // Slices along the axis as rows, ordered lexicographically, duplicates dropped.
    let mut perm: Vec<isize> = vec![ax as isize];
    perm.extend((0..x.ndim() as isize).filter(|&d| d as usize != ax));
    let moved = x.transpose(Some(&perm))?;
    let len = x.shape()[ax];
    let width = x.size().checked_div(len).unwrap_or(0);
    let vals = values(&moved)?;
    let row = |i: usize| &vals[i * width..(i + 1) * width];
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&i, &j| {
        row(i)
            .iter()
            .zip(row(j))
            .map(|(p, q)| p.partial_cmp(q).unwrap_or(std::cmp::Ordering::Equal))
            .find(|o| *o != std::cmp::Ordering::Equal)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    order.dedup_by(|i, j| row(*i) == row(*j));
    let kept: Vec<i64> = order.iter().map(|&i| i as i64).collect();
    let n = kept.len();
    let index = host_i64(it, kept, &[n])?;
    let (tape, rt) = tape_rt(it);
    Ok(out(sel::index_select(tape, rt, &x, ax, &index)?))
}
