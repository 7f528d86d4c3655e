//! The sorting and selection family every dialect shares, composed from the runtime's two
//! selection primitives (`Array::take_along_axis`/`scatter_along_axis` and `sort_positions`)
//! and recorded ops, so gradients flow through the values of a sort, a top-k, a gather, a
//! `where` or a flip without rules of their own (a gather's is a scatter-add). Dialects bind
//! these under their own names, signatures and messages (`dialects/*/selection.rs`).
use crate::modules::python::hooks::{AttrGetter, Hook};
use crate::nn::autograd::Tape;
use crate::object::value::Flavor;
use crate::runtime::{Array, BinaryOp, DType, IndexItem, Operand, Result, Runtime, RuntimeError};

/// Array methods of this family a dialect serves for its own arrays (MXNet's `NDArray.sort`,
/// `pick`, NumPy's `take`, ...), asked after the shared methods; each set once at start-up by
/// the dialect that owns the flavor (MXNet for its legacy and numpy-mode arrays).
static METHODS: [Hook<AttrGetter>; 2] = [Hook::new(), Hook::new()];

fn methods_slot(flavor: Flavor) -> &'static Hook<AttrGetter> {
    match flavor {
        Flavor::Numpy => &METHODS[1],
        _ => &METHODS[0],
    }
}

/// Registers a dialect's methods for its arrays: NumPy's for `Flavor::Numpy`, MXNet's for
/// the others (the getter answers None for arrays not its own).
pub fn register_methods(flavor: Flavor, getter: AttrGetter) {
    methods_slot(flavor).register(getter);
}

/// The method `name` a dialect serves for `v` (see [`register_methods`]), if any.
pub fn dialect_method(
    it: &mut dyn crate::object::Interpreter,
    v: &crate::object::Value,
    name: &str,
) -> std::result::Result<Option<crate::object::Value>, crate::object::Exc> {
    let Some(flavor) = v.as_array().map(|x| x.flavor) else {
        return Ok(None);
    };
    match methods_slot(flavor).get() {
        Some(getter) => getter(it, v, name),
        None => Ok(None),
    }
}

/// `shape` with `axis` sized `len`.
fn with_axis(shape: &[usize], axis: usize, len: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    if let Some(d) = s.get_mut(axis) {
        *d = len;
    }
    s
}

fn to_isize(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

/// The index items that select `start..stop` along `axis` and everything elsewhere.
pub fn axis_slice(axis: usize, start: i64, stop: i64) -> Vec<IndexItem> {
    let mut items: Vec<IndexItem> = (0..axis)
        .map(|_| IndexItem::Slice {
            start: None,
            stop: None,
            step: None,
        })
        .collect();
    items.push(IndexItem::Slice {
        start: Some(start),
        stop: Some(stop),
        step: None,
    });
    items
}

/// `x` broadcast to `shape` as an array of its own (a recorded product with ones, exact for
/// every value, -0.0 and NaN included; `and` for bools), or `x` itself when it has that shape.
pub fn broadcast(tape: &mut Tape, rt: &Runtime, x: &Array, shape: &[usize]) -> Result<Array> {
    if x.shape() == shape {
        return Ok(x.clone());
    }
    let ones = rt.full(shape, 1.0, x.dtype(), x.device())?;
    let op = if x.dtype() == DType::Bool {
        BinaryOp::And
    } else {
        BinaryOp::Mul
    };
    tape.binary(op, Operand::Array(x), Operand::Array(&ones))
}

/// Positions `index` (1-D) laid along `axis` of an array of `shape`, repeated elsewhere: the
/// index `take_along_axis` needs for `index_select`.
fn spread_index(rt: &Runtime, index: &Array, shape: &[usize], axis: usize) -> Result<Array> {
    let mut lined = vec![1isize; shape.len()];
    if let Some(d) = lined.get_mut(axis) {
        *d = index.size() as isize;
    }
    let index = index.astype(DType::Int64)?.reshape(&lined)?;
    let target = with_axis(shape, axis, index.size());
    let zeros = rt.zeros(&target, DType::Int64, index.device())?;
    Array::binary(
        BinaryOp::Add,
        Operand::Array(&index),
        Operand::Array(&zeros),
    )
}

/// `(values, indices)` of `x` sorted along `axis` (stable; NaN last, first when descending).
pub fn sort(tape: &mut Tape, x: &Array, axis: isize, descending: bool) -> Result<(Array, Array)> {
    let positions = x.sort_positions(axis, descending)?;
    let values = tape.take_along(x, &positions, axis, true)?;
    Ok((values, positions))
}

/// The `k` largest (or smallest) along `axis`, in order, with their positions.
pub fn topk(
    tape: &mut Tape,
    x: &Array,
    k: usize,
    axis: usize,
    largest: bool,
) -> Result<(Array, Array)> {
    let positions = x.sort_positions(axis as isize, largest)?;
    let first = positions.index(&axis_slice(axis, 0, k as i64))?;
    let values = tape.take_along(x, &first, axis as isize, true)?;
    Ok((values, first))
}

/// The `rank`-th smallest along `axis` (0-based) and its position; `keepdim` keeps the axis.
pub fn kth(
    tape: &mut Tape,
    x: &Array,
    rank: usize,
    axis: usize,
    keepdim: bool,
) -> Result<(Array, Array)> {
    let positions = x.sort_positions(axis as isize, false)?;
    let r = rank as i64;
    let picked = positions.index(&axis_slice(axis, r, r + 1))?;
    let mut values = tape.take_along(x, &picked, axis as isize, true)?;
    let mut indices = picked;
    if !keepdim {
        let mut shape = x.shape().to_vec();
        if axis < shape.len() {
            shape.remove(axis);
        }
        values = tape.reshape(&values, &to_isize(&shape))?;
        indices = indices.reshape(&to_isize(&shape))?;
    }
    Ok((values, indices))
}

/// Elements of `x` at `index` along `axis`, where `index` has `x`'s rank and no larger a size
/// on any other axis (PyTorch's `gather`; NumPy's `take_along_axis` after broadcasting).
pub fn gather(tape: &mut Tape, x: &Array, axis: usize, index: &Array) -> Result<Array> {
    let mut source = x.clone();
    if index.ndim() == x.ndim() {
        let items: Vec<IndexItem> = (0..x.ndim())
            .map(|d| IndexItem::Slice {
                start: None,
                stop: (d != axis && index.shape()[d] < x.shape()[d])
                    .then_some(index.shape()[d] as i64),
                step: None,
            })
            .collect();
        if items
            .iter()
            .any(|i| matches!(i, IndexItem::Slice { stop: Some(_), .. }))
        {
            source = tape.index(x, &items)?;
        }
    }
    tape.take_along(&source, index, axis as isize, false)
}

/// The slices of `x` at the positions of the 1-D `index` along `axis`.
pub fn index_select(
    tape: &mut Tape,
    rt: &Runtime,
    x: &Array,
    axis: usize,
    index: &Array,
) -> Result<Array> {
    let spread = spread_index(rt, index, x.shape(), axis)?;
    tape.take_along(x, &spread, axis as isize, false)
}

/// `where(cond, x, y)`: x's element where cond holds, else y's, broadcast together. `x` and
/// `y` have one dtype (the caller promotes).
pub fn select_where(
    tape: &mut Tape,
    rt: &Runtime,
    cond: &Array,
    x: &Array,
    y: &Array,
) -> Result<Array> {
    if x.dtype() != y.dtype() {
        return Err(RuntimeError::DType(format!(
            "where: the two choices differ in dtype ({} and {})",
            x.dtype(),
            y.dtype()
        )));
    }
    let shape = crate::runtime::shape::broadcast_shapes(
        &crate::runtime::shape::broadcast_shapes(cond.shape(), x.shape())?,
        y.shape(),
    )?;
    let (xb, yb) = (
        broadcast(tape, rt, x, &shape)?,
        broadcast(tape, rt, y, &shape)?,
    );
    let stacked = tape.stack(&[yb, xb], 0)?;
    let mask = cond.astype(DType::Bool)?;
    let ones = rt.full(&shape, 1.0, DType::Bool, cond.device())?;
    let mask = Array::binary(BinaryOp::And, Operand::Array(&mask), Operand::Array(&ones))?;
    let mut lined = vec![1isize];
    lined.extend(to_isize(&shape));
    let pick = mask.astype(DType::Int64)?.reshape(&lined)?;
    let out = tape.take_along(&stacked, &pick, 0, true)?;
    tape.reshape(&out, &to_isize(&shape))
}

/// `x` reversed along each of `axes`.
pub fn flip(tape: &mut Tape, x: &Array, axes: &[usize]) -> Result<Array> {
    let items: Vec<IndexItem> = (0..x.ndim())
        .map(|d| IndexItem::Slice {
            start: None,
            stop: None,
            step: axes.contains(&d).then_some(-1),
        })
        .collect();
    tape.index(x, &items)
}

/// `x` rolled by `shift` along `axis`: element i moves to i + shift (mod the length).
pub fn roll(tape: &mut Tape, x: &Array, shift: i64, axis: usize) -> Result<Array> {
    let n = x.shape().get(axis).copied().unwrap_or(0) as i64;
    if n == 0 {
        return Ok(x.clone());
    }
    let s = shift.rem_euclid(n);
    if s == 0 {
        return Ok(x.clone());
    }
    let tail = tape.index(x, &axis_slice(axis, n - s, n))?;
    let head = tape.index(x, &axis_slice(axis, 0, n - s))?;
    tape.concat(&[tail, head], axis as isize)
}

/// Whether element (i, j) of the last two axes is kept by `tril` (j - i <= k) or `triu`
/// (j - i >= k), as a bool array of shape (rows, cols).
pub fn tri_mask(
    rt: &Runtime,
    rows: usize,
    cols: usize,
    k: i64,
    lower: bool,
    device: crate::runtime::Device,
) -> Result<Array> {
    let keep: Vec<bool> = (0..rows)
        .flat_map(|i| (0..cols).map(move |j| (j as i64 - i as i64, i)))
        .map(|(d, _)| if lower { d <= k } else { d >= k })
        .collect();
    rt.from_host(crate::runtime::HostData::Bool(keep), &[rows, cols], device)
}

/// `tril`/`triu` of the last two axes of `x` (zeros elsewhere).
pub fn tri(tape: &mut Tape, rt: &Runtime, x: &Array, k: i64, lower: bool) -> Result<Array> {
    let nd = x.ndim();
    if nd < 2 {
        return Err(RuntimeError::Shape(
            "tril/triu: the input must have at least 2 dimensions".into(),
        ));
    }
    let mask = tri_mask(
        rt,
        x.shape()[nd - 2],
        x.shape()[nd - 1],
        k,
        lower,
        x.device(),
    )?;
    let zero = rt.zeros(&[], x.dtype(), x.device())?;
    select_where(tape, rt, &mask, x, &zero)
}

/// The coordinates of the nonzero elements of `x` in row-major order, as an int64 array of
/// shape (count, ndim) on `x`'s device (read on the host: the count decides the shape).
pub fn nonzero_coords(rt: &Runtime, x: &Array) -> Result<Array> {
    let host = x.try_to_host()?.to_f64_vec();
    let shape = x.shape();
    let strides = crate::runtime::shape::contiguous_strides(shape);
    let mut coords: Vec<i64> = Vec::new();
    let mut count = 0usize;
    for (flat, v) in host.iter().enumerate() {
        if *v != 0.0 {
            count += 1;
            for d in 0..shape.len() {
                coords.push(((flat / strides[d]) % shape[d]) as i64);
            }
        }
    }
    rt.from_host(
        crate::runtime::HostData::I64(coords),
        &[count, shape.len()],
        x.device(),
    )
}

/// [`nonzero_coords`] as one 1-D array per axis (NumPy's `nonzero`, `as_tuple=True`).
pub fn nonzero_per_axis(rt: &Runtime, x: &Array) -> Result<Vec<Array>> {
    let coords = nonzero_coords(rt, x)?;
    let mut parts = Vec::with_capacity(x.ndim());
    for d in 0..x.ndim() {
        let column = coords.index(&[
            IndexItem::Slice {
                start: None,
                stop: None,
                step: None,
            },
            IndexItem::Int(d as i64),
        ])?;
        parts.push(column);
    }
    Ok(parts)
}

/// `x` repeated `reps[d]` times along each axis (NumPy's `tile`, PyTorch's `repeat`): `reps`
/// has at least `x`'s rank, and leading axes of one are added to `x` first.
pub fn tile(tape: &mut Tape, x: &Array, reps: &[usize]) -> Result<Array> {
    let mut padded = vec![1isize; reps.len().saturating_sub(x.ndim())];
    padded.extend(to_isize(x.shape()));
    let mut y = tape.reshape(x, &padded)?;
    for (d, &r) in reps.iter().enumerate() {
        if r == 1 {
            continue;
        }
        y = if r == 0 {
            tape.index(&y, &axis_slice(d, 0, 0))?
        } else {
            tape.concat(&vec![y; r], d as isize)?
        };
    }
    Ok(y)
}

/// The elements (i, i + offset) of axes `d1` and `d2` of `x`, as a last axis after the others.
pub fn diagonal(
    tape: &mut Tape,
    rt: &Runtime,
    x: &Array,
    offset: i64,
    d1: usize,
    d2: usize,
) -> Result<Array> {
    let nd = x.ndim();
    let mut perm: Vec<isize> = (0..nd)
        .filter(|&d| d != d1 && d != d2)
        .map(|d| d as isize)
        .collect();
    perm.extend([d1 as isize, d2 as isize]);
    let moved = tape.transpose(x, Some(&perm))?;
    let (rows, cols) = (x.shape()[d1] as i64, x.shape()[d2] as i64);
    let positions: Vec<i64> = (0..rows)
        .filter_map(|i| {
            let j = i + offset;
            (j >= 0 && j < cols).then_some(i * cols + j)
        })
        .collect();
    let mut flat_shape: Vec<isize> = to_isize(&moved.shape()[..nd - 2]);
    flat_shape.push((rows * cols) as isize);
    let flat = tape.reshape(&moved, &flat_shape)?;
    let n = positions.len();
    let index = rt.from_host(crate::runtime::HostData::I64(positions), &[n], x.device())?;
    index_select(tape, rt, &flat, nd - 2, &index)
}

/// Square matrices of the last axis of `x` on diagonal `offset` (zeros elsewhere), as new
/// last two axes: PyTorch's `diag_embed` and, for a vector, `diag`.
pub fn diag_embed(tape: &mut Tape, rt: &Runtime, x: &Array, offset: i64) -> Result<Array> {
    let nd = x.ndim();
    let n = x.shape().last().copied().unwrap_or(1);
    let size = n + offset.unsigned_abs() as usize;
    // Every output element reads the input's element on its diagonal, or a zero after the last.
    let mut zero_shape = x.shape().to_vec();
    if let Some(last) = zero_shape.last_mut() {
        *last = 1;
    }
    let zeros = rt.zeros(&zero_shape, x.dtype(), x.device())?;
    let padded = tape.concat(&[x.clone(), zeros], nd as isize - 1)?;
    let mut positions = Vec::with_capacity(size * size);
    for i in 0..size as i64 {
        for j in 0..size as i64 {
            let k = if offset >= 0 { i } else { j };
            positions.push(if j - i == offset { k } else { n as i64 });
        }
    }
    let index = rt.from_host(
        crate::runtime::HostData::I64(positions),
        &[size * size],
        x.device(),
    )?;
    let picked = index_select(tape, rt, &padded, nd - 1, &index)?;
    let mut shape = to_isize(&x.shape()[..nd - 1]);
    shape.extend([size as isize, size as isize]);
    tape.reshape(&picked, &shape)
}

/// The row and column indices of the lower (`lower`) or upper triangle of a rows x cols
/// matrix with diagonal offset `k`, row by row: (2, n) int64.
pub fn tri_indices(rows: usize, cols: usize, k: i64, lower: bool) -> (Vec<i64>, usize) {
    let mut r = Vec::new();
    let mut c = Vec::new();
    for i in 0..rows as i64 {
        for j in 0..cols as i64 {
            if (lower && j - i <= k) || (!lower && j - i >= k) {
                r.push(i);
                c.push(j);
            }
        }
    }
    let n = r.len();
    r.extend(c);
    (r, n)
}

/// `x` rotated by 90 degrees `k` times in the plane of axes (`a`, `b`), from `a` towards `b`.
pub fn rot90(tape: &mut Tape, x: &Array, k: i64, a: usize, b: usize) -> Result<Array> {
    let swap = |tape: &mut Tape, y: &Array| -> Result<Array> {
        let mut perm: Vec<isize> = (0..y.ndim() as isize).collect();
        perm.swap(a, b);
        tape.transpose(y, Some(&perm))
    };
    match k.rem_euclid(4) {
        1 => {
            let f = flip(tape, x, &[b])?;
            swap(tape, &f)
        }
        2 => flip(tape, x, &[a, b]),
        3 => {
            let f = flip(tape, x, &[a])?;
            swap(tape, &f)
        }
        _ => Ok(x.clone()),
    }
}

/// Pieces of `x` along `axis` with the given sizes (they sum to the axis's length).
pub fn split_sizes(tape: &mut Tape, x: &Array, axis: usize, sizes: &[usize]) -> Result<Vec<Array>> {
    let mut start = 0i64;
    let mut parts = Vec::with_capacity(sizes.len());
    for &s in sizes {
        let stop = start + s as i64;
        parts.push(tape.index(x, &axis_slice(axis, start, stop))?);
        start = stop;
    }
    Ok(parts)
}

/// Positions of each of `values` in the sorted `sequence`: the first where it could be
/// inserted keeping the order (`right`: the last).
pub fn search_sorted(sequence: &[f64], values: &[f64], right: bool) -> Vec<i64> {
    values
        .iter()
        .map(|&v| {
            let p = if right {
                sequence.partition_point(|&s| s <= v)
            } else {
                sequence.partition_point(|&s| s < v)
            };
            p as i64
        })
        .collect()
}

/// The distinct values of `values` in ascending order, with each element's position among
/// them (inverse) and each value's count.
pub fn unique_values(values: &[f64]) -> (Vec<f64>, Vec<i64>, Vec<i64>) {
    let mut sorted: Vec<f64> = values.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Greater));
    sorted.dedup_by(|a, b| a == b || (a.is_nan() && b.is_nan()));
    let inverse: Vec<i64> = values
        .iter()
        .map(|v| sorted.partition_point(|s| s < v) as i64)
        .collect();
    let mut counts = vec![0i64; sorted.len()];
    for &i in &inverse {
        if let Some(c) = counts.get_mut(i as usize) {
            *c += 1;
        }
    }
    (sorted, inverse, counts)
}

/// How `pad` fills: one value, the edge element repeated, or the elements mirrored about the
/// edge (NumPy's `reflect`, PyTorch's `reflect`: the edge itself not repeated).
#[derive(Clone, Copy, Debug)]
pub enum PadMode {
    Constant(f64),
    Edge,
    Reflect,
}

/// `x` padded by (before, after) elements on each axis in order (NumPy's `pad`; PyTorch's
/// `F.pad` names its widths from the last axis, its caller reorders them): each axis one
/// recorded gather, from `x` itself or, for a constant, from `x` with one slice of it after.
pub fn pad(
    tape: &mut Tape,
    rt: &Runtime,
    x: &Array,
    widths: &[(usize, usize)],
    mode: PadMode,
) -> Result<Array> {
    let mut y = x.clone();
    for (ax, &(before, after)) in widths.iter().enumerate() {
        if (before, after) == (0, 0) || ax >= y.ndim() {
            continue;
        }
        let n = y.shape()[ax];
        let total = before + n + after;
        let source = match mode {
            PadMode::Constant(v) => {
                let slab = rt.full(&with_axis(y.shape(), ax, 1), v, y.dtype(), y.device())?;
                tape.concat(&[y.clone(), slab], ax as isize)?
            }
            _ if n == 0 => {
                return Err(RuntimeError::Value(format!(
                    "can't extend empty axis {ax} using modes other than 'constant' or 'empty'"
                )))
            }
            _ => y.clone(),
        };
        let positions: Vec<i64> = (0..total as i64)
            .map(|i| {
                let j = i - before as i64;
                let last = n as i64 - 1;
                match mode {
                    PadMode::Constant(_) if j < 0 || j > last => n as i64,
                    PadMode::Constant(_) => j,
                    PadMode::Edge => j.clamp(0, last),
                    PadMode::Reflect if last == 0 => 0,
                    PadMode::Reflect => {
                        let period = 2 * last;
                        let k = j.rem_euclid(period);
                        if k > last {
                            period - k
                        } else {
                            k
                        }
                    }
                }
            })
            .collect();
        let index = rt.from_host(
            crate::runtime::HostData::I64(positions),
            &[total],
            y.device(),
        )?;
        y = index_select(tape, rt, &source, ax, &index)?;
    }
    Ok(y)
}

/// Slice i of `x` along `axis` repeated `counts[i]` times, in order (NumPy's and MXNet's
/// `repeat`, PyTorch's `repeat_interleave`): one recorded gather.
pub fn repeat_along(
    tape: &mut Tape,
    rt: &Runtime,
    x: &Array,
    axis: usize,
    counts: &[usize],
) -> Result<Array> {
    let positions: Vec<i64> = counts
        .iter()
        .enumerate()
        .flat_map(|(i, &c)| std::iter::repeat_n(i as i64, c))
        .collect();
    let n = positions.len();
    let index = rt.from_host(crate::runtime::HostData::I64(positions), &[n], x.device())?;
    index_select(tape, rt, x, axis, &index)
}
