//! PyTorch's shape manipulation of the selection family: `expand`/`expand_as`, `repeat`,
//! `tile`, `repeat_interleave`, `movedim`, `swapaxes`, `diag`/`diagonal`/`diag_embed`,
//! `split`, `select`, `rot90`, `column_stack`/`dstack`, `tril_indices`/`triu_indices`, and the
//! host-computed `searchsorted`/`bucketize`/`unique`/`cummax`/`mode`, as `torch.X` and
//! `Tensor.X` with PyTorch's signatures and messages (`array::selection` computes).
use crate::modules::array::array_more::{norm_axis, shape_list};
use crate::modules::array::selection as sel;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::as_i64;
use crate::object::value::{Args, MethodFn, Module, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::{Array, DType, HostData, IndexItem};

use super::tensor_args::{flag, out, rt_err, runtime_error, size_text, tape_rt, TensorMethod, T};

fn tensor(v: &Value) -> Result<Array, Exc> {
    v.as_array()
        .map(|a| a.array.clone())
        .ok_or_else(|| Exc::type_error(format!("expected a Tensor, got {}", v.type_name())))
}

fn int(v: &Value, fname: &str, name: &str) -> Result<i64, Exc> {
    match v {
        Value::Bool(_) | Value::Float(_) => None,
        other => as_i64(other),
    }
    .ok_or_else(|| {
        Exc::type_error(format!(
            "{fname}(): argument '{name}' must be int, not {}",
            v.type_name()
        ))
    })
}

fn ints(v: &Value, fname: &str, name: &str) -> Result<Vec<i64>, Exc> {
    match &crate::modules::array::array_more::tuple_like(v) {
        Value::List(l) => l.borrow().iter().map(|d| int(d, fname, name)).collect(),
        Value::Tuple(t) => t.iter().map(|d| int(d, fname, name)).collect(),
        other => Ok(vec![int(other, fname, name)?]),
    }
}

fn to_isize(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&d| d as isize).collect()
}

/// `x.name`'s documentation and code, or None when this file has no such method.
pub fn tensor_method(name: &str) -> Option<TensorMethod> {
    let (mname, doc, f): (&'static str, &'static str, MethodFn) = match name {
        "expand" => ("expand", "x.expand(*sizes): x broadcast to sizes (-1 keeps a dim; new dims lead).", expand),
        "expand_as" => ("expand_as", "x.expand_as(other): x.expand(other.size()).", expand_as),
        "repeat" => ("repeat", "x.repeat(*sizes): x tiled sizes[d] times along each dim.", repeat),
        "tile" => ("tile", "x.tile(dims): x tiled dims[d] times along each dim (ones prepended to dims).", tile),
        "repeat_interleave" => ("repeat_interleave", "x.repeat_interleave(repeats, dim=None): each element (or slice along dim) repeated (of the flattened x without dim).", repeat_interleave),
        "movedim" | "moveaxis" => ("movedim", "x.movedim(source, destination): the dims at source moved to destination.", movedim),
        "swapaxes" | "swapdims" => ("swapaxes", "x.swapaxes(axis0, axis1): x with two dims exchanged.", swapaxes),
        "diag" => ("diag", "x.diag(diagonal=0): a 1-D x as a square matrix's diagonal, or a 2-D x's diagonal.", diag),
        "diagonal" => ("diagonal", "x.diagonal(offset=0, dim1=0, dim2=1): the diagonal of dims dim1 and dim2, as a last dim.", diagonal),
        "diag_embed" => ("diag_embed", "x.diag_embed(offset=0, dim1=-2, dim2=-1): square matrices with x's last dim on their diagonal.", diag_embed),
        "split" => ("split", "x.split(split_size, dim=0): pieces of split_size along dim (the last smaller), or of the sizes of a list.", split),
        "select" => ("select", "x.select(dim, index): the slice at index along dim (dim removed).", select),
        "rot90" => ("rot90", "x.rot90(k=1, dims=[0, 1]): x rotated by 90 degrees k times from dims[0] towards dims[1].", rot90),
        "cummax" => ("cummax", "x.cummax(dim): the running maximum along dim, with the index of each.", |it, r, a| cumulative(it, r, a, true)),
        "cummin" => ("cummin", "x.cummin(dim): the running minimum along dim, with the index of each.", |it, r, a| cumulative(it, r, a, false)),
        "mode" => ("mode", "x.mode(dim=-1, keepdim=False): the most frequent value along dim (the smallest of ties), with an index of it.", mode),
        "unique" => ("unique", "x.unique(sorted=True, return_inverse=False, return_counts=False, dim=None): the distinct values, sorted.", unique),
        "hsplit" => ("hsplit", "x.hsplit(sections): split along dim 1 (dim 0 for 1-D), into equal sections or before the given indices.", |it, r, a| split_at(it, r, a, 1)),
        "vsplit" => ("vsplit", "x.vsplit(sections): split along dim 0 (2-D or more).", |it, r, a| split_at(it, r, a, 0)),
        "dsplit" => ("dsplit", "x.dsplit(sections): split along dim 2 (3-D or more).", |it, r, a| split_at(it, r, a, 2)),
        "broadcast_to" => ("broadcast_to", "x.broadcast_to(size): x.expand(size).", |it, r, mut a| {
            let x = tensor(r)?;
            let sizes = shape_list(&mut a)?;
            a.finish(0)?;
            expand_to(it, &x, &sizes)
        }),
        "ravel" => ("ravel", "x.ravel(): the elements as a 1-D tensor.", |it, r, a| {
            a.finish(0)?;
            let x = tensor(r)?;
            let (tape, _) = tape_rt(it);
            Ok(out(tape.reshape(&x, &[-1]).map_err(rt_err)?))
        }),
        "quantile" => ("quantile", "x.quantile(q, dim=None, keepdim=False, interpolation='linear'): the q-th quantiles (linear interpolation between sorted values).", quantile),
        _ => return None,
    };
    Some((mname, doc, f))
}

/// A bound tensor method of this file, or None.
pub fn tensor_attr(v: &Value, name: &str) -> Option<Value> {
    super::tensor_args::bound_method(tensor_method, v, name)
}

/// Adds this file's functions to `torch`.
pub fn install(m: &Module) {
    const FORMS: &[&str] = &[
        "hsplit",
        "vsplit",
        "dsplit",
        "broadcast_to",
        "ravel",
        "quantile",
        "repeat_interleave",
        "movedim",
        "moveaxis",
        "swapaxes",
        "swapdims",
        "diag",
        "diagonal",
        "diag_embed",
        "split",
        "select",
        "rot90",
        "cummax",
        "cummin",
        "mode",
        "unique",
        "tile",
    ];
    super::tensor_args::install_forms(m, FORMS, tensor_method, function_form);
    let fns: [(&'static str, &'static str, crate::object::value::BuiltinFn); 8] = [
        ("hstack", "hstack(tensors): joined along dim 1 (dim 0 for 1-D tensors).", |it, a| stack_like(it, a, 1)),
        ("vstack", "vstack(tensors): 1-D tensors as rows, joined with 2-D ones along dim 0.", |it, a| stack_like(it, a, 0)),
        ("tril_indices", "tril_indices(row, col, offset=0, *, dtype=torch.long, device='cpu'): the (2, n) indices of the lower triangle of a row x col matrix.", |it, a| tri_indices(it, a, true)),
        ("triu_indices", "triu_indices(row, col, offset=0, *, dtype=torch.long, device='cpu'): the (2, n) indices of the upper triangle of a row x col matrix.", |it, a| tri_indices(it, a, false)),
        ("column_stack", "column_stack(tensors): 1-D tensors as columns, joined with 2-D ones along dim 1.", |it, a| stack_like(it, a, 2)),
        ("dstack", "dstack(tensors): the tensors as 3-D, joined along dim 2.", |it, a| stack_like(it, a, 3)),
        ("searchsorted", "searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None): where each value of input goes in the sorted last dim of sorted_sequence.", searchsorted),
        ("bucketize", "bucketize(input, boundaries, *, out_int32=False, right=False): the bucket of each value of input among the sorted 1-D boundaries.", bucketize),
    ];
    for (name, doc, f) in fns {
        m.set(name, builtin(name, doc, f));
    }
}

/// `torch.name(input, ...)`: the method on `input`.
fn function_form(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    super::tensor_args::function_form(it, a, tensor_method)
}

// ------------------------------------------------------------------ expand, repeat

fn expand_to(it: &mut dyn Interpreter, x: &Array, sizes: &[isize]) -> Result<Value, Exc> {
    if sizes.len() < x.ndim() {
        return Err(runtime_error(format!(
            "expand(torch.FloatTensor{{{}}}, size=[{}]): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
            size_text(x.shape()).trim_matches(|c| c == '[' || c == ']'),
            sizes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
            sizes.len(),
            x.ndim()
        )));
    }
    let lead = sizes.len() - x.ndim();
    let mut target = Vec::with_capacity(sizes.len());
    for (d, &s) in sizes.iter().enumerate() {
        let existing = d.checked_sub(lead).map(|k| x.shape()[k]);
        let size = match (s, existing) {
            (-1, Some(e)) => e,
            (s, _) if s < 0 => {
                return Err(runtime_error(format!(
                    "The expanded size of the tensor ({s}) isn't allowed in a leading, non-existing dimension {d}"
                )))
            }
            (s, Some(e)) if e != 1 && s as usize != e => {
                return Err(runtime_error(format!(
                    "The expanded size of the tensor ({s}) must match the existing size ({e}) at non-singleton dimension {d}.  Target sizes: {}.  Tensor sizes: {}",
                    size_text(&sizes.iter().map(|&v| v as usize).collect::<Vec<_>>()).replace("18446744073709551615", "-1"),
                    size_text(x.shape())
                )))
            }
            (s, _) => s as usize,
        };
        target.push(size);
    }
    let (tape, rt) = tape_rt(it);
    let shaped = if lead > 0 {
        let mut padded = vec![1isize; lead];
        padded.extend(to_isize(x.shape()));
        tape.reshape(x, &padded).map_err(rt_err)?
    } else {
        x.clone()
    };
    let y = sel::broadcast(tape, rt, &shaped, &target).map_err(rt_err)?;
    tape.rename(&y, "ExpandBackward0");
    Ok(out(y))
}

fn expand(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let sizes = shape_list(&mut a)?;
    a.finish(0)?;
    expand_to(it, &x, &sizes)
}

fn expand_as(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let other = tensor(&a.required(0, "other")?)?;
    a.finish(1)?;
    expand_to(it, &x, &to_isize(other.shape()))
}

/// The repeat counts, or PyTorch's error naming the result's sizes when one is negative.
fn repeat_counts(reps: &[isize], x: &Array) -> Result<Vec<usize>, Exc> {
    if reps.iter().all(|&r| r >= 0) {
        return Ok(reps.iter().map(|&r| r as usize).collect());
    }
    let mut padded = vec![1isize; reps.len().saturating_sub(x.ndim())];
    padded.extend(to_isize(x.shape()));
    let sizes: Vec<isize> = reps.iter().zip(&padded).map(|(r, d)| r * d).collect();
    let bad = sizes.iter().find(|&&s| s < 0).copied().unwrap_or(-1);
    Err(runtime_error(format!(
        "Trying to create tensor with negative dimension {bad}: [{}]",
        sizes
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

fn repeat(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let reps = shape_list(&mut a)?;
    a.finish(0)?;
    if reps.len() < x.ndim() {
        return Err(runtime_error(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
        ));
    }
    let reps = repeat_counts(&reps, &x)?;
    let (tape, _) = tape_rt(it);
    let y = sel::tile(tape, &x, &reps).map_err(rt_err)?;
    tape.rename(&y, "RepeatBackward0");
    Ok(out(y))
}

fn tile(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let reps = shape_list(&mut a)?;
    a.finish(0)?;
    let mut full = vec![1isize; x.ndim().saturating_sub(reps.len())];
    full.extend(reps);
    let reps = repeat_counts(&full, &x)?;
    let (tape, _) = tape_rt(it);
    let y = sel::tile(tape, &x, &reps).map_err(rt_err)?;
    tape.rename(&y, "RepeatBackward0");
    Ok(out(y))
}

fn repeat_interleave(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let repeats = a.required(0, "repeats")?;
    let dim = a.take(1, "dim")?.filter(|v| !matches!(v, Value::None));
    a.take_kw("output_size");
    a.finish(2)?;
    let (source, dim) = match dim {
        None => (x.reshape(&[-1]).map_err(rt_err)?, 0),
        Some(d) => {
            let d = norm_axis(int(&d, "repeat_interleave", "dim")?, x.ndim(), T)?;
            (x.clone(), d)
        }
    };
    let len = source.shape().get(dim).copied().unwrap_or(1);
    let counts: Vec<i64> = match &repeats {
        Value::Array(t) => {
            let host = t.array.try_to_host().map_err(rt_err)?.to_f64_vec();
            let c: Vec<i64> = host.iter().map(|&v| v as i64).collect();
            if c.len() == 1 {
                vec![c[0]; len]
            } else if c.len() != len {
                return Err(runtime_error(
                    "repeats must have the same size as input along dim, but got repeats.size(0) = "
                        .to_string()
                        + &c.len().to_string()
                        + " and input.size("
                        + &dim.to_string()
                        + ") = " + &len.to_string(),
                ));
            } else {
                c
            }
        }
        other => vec![int(other, "repeat_interleave", "repeats")?; len],
    };
    if counts.iter().any(|&c| c < 0) {
        return Err(runtime_error("repeats can not be negative"));
    }
    let counts: Vec<usize> = counts.iter().map(|&c| c as usize).collect();
    let (tape, rt) = tape_rt(it);
    let source = if dim == 0 && source.ndim() == 1 && x.ndim() != 1 {
        tape.reshape(&x, &[-1]).map_err(rt_err)?
    } else {
        source
    };
    let y = sel::repeat_along(tape, rt, &source, dim, &counts).map_err(rt_err)?;
    tape.rename(&y, "IndexSelectBackward0");
    Ok(out(y))
}

// ------------------------------------------------------------------ axes

fn movedim(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let source = ints(&a.required(0, "source")?, "movedim", "source")?;
    let destination = ints(&a.required(1, "destination")?, "movedim", "destination")?;
    a.finish(2)?;
    if source.len() != destination.len() {
        return Err(runtime_error(format!(
            "movedim: Invalid source or destination dims: source ({:?} dims) should contain the same number of dims as destination ({:?} dims)",
            source, destination
        )));
    }
    let nd = x.ndim();
    let src: Vec<usize> = source
        .iter()
        .map(|&d| norm_axis(d, nd, T))
        .collect::<Result<_, _>>()?;
    let dst: Vec<usize> = destination
        .iter()
        .map(|&d| norm_axis(d, nd, T))
        .collect::<Result<_, _>>()?;
    for (list, what) in [(&src, "source"), (&dst, "destination")] {
        for (i, d) in list.iter().enumerate() {
            if list[..i].contains(d) {
                return Err(runtime_error(format!(
                    "movedim: repeated dim in `{what}` ({:?})",
                    if what == "source" {
                        &source
                    } else {
                        &destination
                    }
                )));
            }
        }
    }
    let mut perm = vec![usize::MAX; nd];
    for (s, d) in src.iter().zip(&dst) {
        perm[*d] = *s;
    }
    let mut rest = (0..nd).filter(|d| !src.contains(d));
    for p in perm.iter_mut() {
        if *p == usize::MAX {
            *p = rest.next().unwrap_or(0);
        }
    }
    let perm: Vec<isize> = perm.iter().map(|&d| d as isize).collect();
    let (tape, _) = tape_rt(it);
    Ok(out(tape.transpose(&x, Some(&perm)).map_err(rt_err)?))
}

fn swapaxes(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let a0 = a.required(0, "axis0")?;
    let a1 = a.required(1, "axis1")?;
    a.finish(2)?;
    let nd = x.ndim();
    let d0 = norm_axis(int(&a0, "swapaxes", "axis0")?, nd, T)?;
    let d1 = norm_axis(int(&a1, "swapaxes", "axis1")?, nd, T)?;
    let mut perm: Vec<isize> = (0..nd as isize).collect();
    if nd > 0 {
        perm.swap(d0, d1);
    }
    let (tape, _) = tape_rt(it);
    Ok(out(tape.transpose(&x, Some(&perm)).map_err(rt_err)?))
}

// ------------------------------------------------------------------ diagonals

fn diag(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let k = match a.take(0, "diagonal")? {
        None => 0,
        Some(v) => int(&v, "diag", "diagonal")?,
    };
    a.finish(1)?;
    let (tape, rt) = tape_rt(it);
    let y = match x.ndim() {
        1 => sel::diag_embed(tape, rt, &x, k).map_err(rt_err)?,
        2 => sel::diagonal(tape, rt, &x, k, 0, 1).map_err(rt_err)?,
        _ => {
            return Err(runtime_error(
                "diag(): Supports 1D or 2D tensors. Got ".to_string() + &x.ndim().to_string() + "D",
            ))
        }
    };
    Ok(out(y))
}

fn diagonal(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let offset = match a.take(0, "offset")? {
        None => 0,
        Some(v) => int(&v, "diagonal", "offset")?,
    };
    let d1 = a.take(1, "dim1")?;
    let d2 = a.take(2, "dim2")?;
    a.finish(3)?;
    let nd = x.ndim();
    let d1 = norm_axis(d1.map_or(Ok(0), |v| int(&v, "diagonal", "dim1"))?, nd, T)?;
    let d2 = norm_axis(d2.map_or(Ok(1), |v| int(&v, "diagonal", "dim2"))?, nd, T)?;
    if d1 == d2 {
        return Err(runtime_error(format!(
            "diagonal dimensions cannot be identical {d1}, {d2}"
        )));
    }
    let (tape, rt) = tape_rt(it);
    Ok(out(
        sel::diagonal(tape, rt, &x, offset, d1, d2).map_err(rt_err)?
    ))
}

fn diag_embed(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let offset = match a.take(0, "offset")? {
        None => 0,
        Some(v) => int(&v, "diag_embed", "offset")?,
    };
    let d1 = a.take(1, "dim1")?;
    let d2 = a.take(2, "dim2")?;
    a.finish(3)?;
    let nd = x.ndim() + 1;
    let d1 = norm_axis(d1.map_or(Ok(-2), |v| int(&v, "diag_embed", "dim1"))?, nd, T)?;
    let d2 = norm_axis(d2.map_or(Ok(-1), |v| int(&v, "diag_embed", "dim2"))?, nd, T)?;
    if (d1, d2) != (nd - 2, nd - 1) {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            "diag_embed: devarray places the matrices in the last two dims only (dim1=-2, dim2=-1)",
        ));
    }
    let (tape, rt) = tape_rt(it);
    Ok(out(sel::diag_embed(tape, rt, &x, offset).map_err(rt_err)?))
}

fn tri_indices(it: &mut dyn Interpreter, mut a: Args, lower: bool) -> Result<Value, Exc> {
    let fname = a.fname;
    let row = int(&a.required(0, "row")?, fname, "row")?;
    let col = int(&a.required(1, "col")?, fname, "col")?;
    let offset = match a.take(2, "offset")? {
        None => 0,
        Some(v) => int(&v, fname, "offset")?,
    };
    let dtype = a.take_kw("dtype");
    let device = a.take_kw("device");
    a.take_kw("layout");
    a.finish(3)?;
    if row < 0 || col < 0 {
        return Err(runtime_error(format!(
            "row must be non-negative, got{}",
            row.min(col)
        )));
    }
    let (data, n) = sel::tri_indices(row as usize, col as usize, offset, lower);
    let dev = match device {
        None | Some(Value::None) => crate::runtime::Device::cpu(0),
        Some(d) => (crate::modules::array::hooks::dialect(T)
            .ok_or_else(|| Exc::type_error("torch is not set up"))?
            .parse_device)(&d)?,
    };
    let y = it
        .state()
        .rt
        .from_host(HostData::I64(data), &[2, n], dev)
        .map_err(rt_err)?;
    let y = match dtype {
        None | Some(Value::None) => y,
        Some(d) => match crate::modules::array::arrays::dtype_arg(&d)? {
            Some(dt) => y.astype(dt).map_err(rt_err)?,
            None => y,
        },
    };
    Ok(out(y))
}

// ------------------------------------------------------------------ pieces

fn split(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let sizes = a.required(0, "split_size_or_sections")?;
    let dim = a.take(1, "dim")?;
    a.finish(2)?;
    if x.ndim() == 0 {
        return Err(runtime_error(
            "split expects at least a 1-dimensional tensor",
        ));
    }
    let dim = norm_axis(dim.map_or(Ok(0), |v| int(&v, "split", "dim"))?, x.ndim(), T)?;
    let len = x.shape()[dim];
    let pieces: Vec<usize> = match crate::modules::array::array_more::tuple_like(&sizes) {
        v @ (Value::List(_) | Value::Tuple(_)) => {
            let s = ints(&v, "split", "split_size")?;
            let total: i64 = s.iter().sum();
            if total != len as i64 || s.iter().any(|&p| p < 0) {
                return Err(runtime_error(format!(
                    "split_with_sizes expects split_sizes to sum exactly to {len} (input tensor's size at dimension {dim}), but got split_sizes=[{}]",
                    s.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                )));
            }
            s.iter().map(|&p| p as usize).collect()
        }
        other => {
            let size = int(&other, "split", "split_size")?;
            if size < 0 || (size == 0 && len > 0) {
                return Err(runtime_error(format!(
                    "split_size can only be 0 if dimension size is 0, but got dimension size of {len}"
                )));
            }
            let size = size as usize;
            if size == 0 {
                vec![0]
            } else {
                let mut v = vec![size; len / size];
                if len % size > 0 || v.is_empty() {
                    v.push(len % size);
                }
                v
            }
        }
    };
    let (tape, _) = tape_rt(it);
    let parts = sel::split_sizes(tape, &x, dim, &pieces).map_err(rt_err)?;
    for p in &parts {
        tape.rename(
            p,
            if matches!(sizes, Value::Int(_)) {
                "SplitBackward0"
            } else {
                "SplitWithSizesBackward0"
            },
        );
    }
    Ok(Value::tuple(parts.into_iter().map(out).collect()))
}

fn select(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let dim = a.required(0, "dim")?;
    let index = a.required(1, "index")?;
    a.finish(2)?;
    if x.ndim() == 0 {
        return Err(Exc::new(
            ExcKind::IndexError,
            "select() cannot be applied to a 0-dim tensor.",
        ));
    }
    let dim = norm_axis(int(&dim, "select", "dim")?, x.ndim(), T)?;
    let len = x.shape()[dim] as i64;
    let i = int(&index, "select", "index")?;
    if i < -len || i >= len {
        return Err(Exc::new(
            ExcKind::IndexError,
            format!(
                "select(): index {i} out of range for tensor of size {} at dimension {dim}",
                size_text(x.shape())
            ),
        ));
    }
    let mut items: Vec<IndexItem> = (0..dim)
        .map(|_| IndexItem::Slice {
            start: None,
            stop: None,
            step: None,
        })
        .collect();
    items.push(IndexItem::Int(i));
    let (tape, _) = tape_rt(it);
    Ok(out(tape.index(&x, &items).map_err(rt_err)?))
}

fn rot90(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let k = match a.take(0, "k")? {
        None => 1,
        Some(v) => int(&v, "rot90", "k")?,
    };
    let dims = match a.take(1, "dims")? {
        None => vec![0, 1],
        Some(v) => ints(&v, "rot90", "dims")?,
    };
    a.finish(2)?;
    if dims.len() != 2 {
        return Err(runtime_error(format!(
            "expected total rotation dims == 2, but got dims = {}",
            dims.len()
        )));
    }
    if x.ndim() < 2 {
        return Err(runtime_error(format!(
            "expected total dims >= 2, but got total dims = {}",
            x.ndim()
        )));
    }
    let d0 = norm_axis(dims[0], x.ndim(), T)?;
    let d1 = norm_axis(dims[1], x.ndim(), T)?;
    if d0 == d1 {
        return Err(runtime_error(format!(
            "expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )));
    }
    let (tape, _) = tape_rt(it);
    Ok(out(sel::rot90(tape, &x, k, d0, d1).map_err(rt_err)?))
}

/// `column_stack` (rank 2) and `dstack` (rank 3): each tensor made that rank as NumPy's
/// `atleast_2d`/`atleast_3d` would for the purpose, joined along dim rank - 1.
fn stack_like(it: &mut dyn Interpreter, mut a: Args, rank: usize) -> Result<Value, Exc> {
    let fname = a.fname;
    let list = a.required(0, "tensors")?;
    a.finish(1)?;
    let items = match &crate::modules::array::array_more::tuple_like(&list) {
        Value::List(l) => l.borrow().clone(),
        Value::Tuple(t) => t.to_vec(),
        other => {
            return Err(Exc::type_error(format!(
                "{fname}(): argument 'tensors' (position 1) must be tuple of Tensors, not {}",
                other.type_name()
            )))
        }
    };
    if items.is_empty() {
        return Err(runtime_error(format!(
            "{fname} expects a non-empty TensorList"
        )));
    }
    let (tape, _) = tape_rt(it);
    let mut parts = Vec::with_capacity(items.len());
    for v in &items {
        let t = tensor(v)?;
        let shape: Vec<isize> = match (rank, t.shape()) {
            (0, []) => vec![1, 1],
            (0, [n]) => vec![1, *n as isize],
            (1, []) => vec![1],
            (2, []) => vec![1, 1],
            (2, [n]) => vec![*n as isize, 1],
            (3, []) => vec![1, 1, 1],
            (3, [n]) => vec![1, *n as isize, 1],
            (3, [m, n]) => vec![*m as isize, *n as isize, 1],
            (_, s) => to_isize(s),
        };
        parts.push(tape.reshape(&t, &shape).map_err(rt_err)?);
    }
    // vstack joins along dim 0, hstack along 1 (0 when every part is 1-D), the others last.
    let dim = match rank {
        0 => 0,
        1 if parts.iter().all(|p| p.ndim() == 1) => 0,
        1 => 1,
        r => r as isize - 1,
    };
    Ok(out(tape.concat(&parts, dim).map_err(rt_err)?))
}

// ------------------------------------------------------------------ host-computed searches

fn searchsorted_of(
    it: &mut dyn Interpreter,
    sequence: &Array,
    values: &Value,
    right: bool,
    int32: bool,
) -> Result<Value, Exc> {
    let (vals, shape, device) = match values {
        Value::Array(v) => (
            v.array.try_to_host().map_err(rt_err)?.to_f64_vec(),
            v.array.shape().to_vec(),
            v.array.device(),
        ),
        other => (
            vec![crate::object::ops::as_f64(other).ok_or_else(|| {
                Exc::type_error("searchsorted(): values must be a Tensor or a number")
            })?],
            Vec::new(),
            sequence.device(),
        ),
    };
    let seq = sequence.try_to_host().map_err(rt_err)?.to_f64_vec();
    let result = if sequence.ndim() <= 1 {
        sel::search_sorted(&seq, &vals, right)
    } else {
        let lead = &sequence.shape()[..sequence.ndim() - 1];
        if shape.len() != sequence.ndim() || &shape[..shape.len() - 1] != lead {
            return Err(runtime_error(format!(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {} and input value tensor {}",
                size_text(sequence.shape()),
                size_text(&shape)
            )));
        }
        let n = *sequence.shape().last().unwrap_or(&1);
        let m = *shape.last().unwrap_or(&1);
        let rows = seq.len() / n.max(1);
        (0..rows)
            .flat_map(|r| {
                sel::search_sorted(&seq[r * n..(r + 1) * n], &vals[r * m..(r + 1) * m], right)
            })
            .collect()
    };
    let y = it
        .state()
        .rt
        .from_host(HostData::I64(result), &shape, device)
        .map_err(rt_err)?;
    Ok(out(if int32 {
        y.astype(DType::Int32).map_err(rt_err)?
    } else {
        y
    }))
}

fn side_right(a: &mut Args) -> Result<bool, Exc> {
    let right = flag(a.take_kw("right"), false)?;
    match &a.take_kw("side") {
        None | Some(Value::None) => Ok(right),
        Some(Value::Str(s)) if &**s == "right" => Ok(true),
        Some(Value::Str(s)) if &**s == "left" => {
            if right {
                return Err(runtime_error("torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True"));
            }
            Ok(false)
        }
        Some(Value::Str(s)) => Err(runtime_error(format!(
            "torch.searchsorted(): side can only be 'left' or 'right' but got {s}"
        ))),
        Some(other) => Err(Exc::type_error(format!(
            "searchsorted(): argument 'side' must be str, not {}",
            other.type_name()
        ))),
    }
}

fn searchsorted(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let sequence = tensor(&a.required(0, "sorted_sequence")?)?;
    let values = a.required(1, "input")?;
    let int32 = flag(a.take_kw("out_int32"), false)?;
    let right = side_right(&mut a)?;
    if let Some(s) = a.take_kw("sorter") {
        if !matches!(s, Value::None) {
            return Err(Exc::new(
                ExcKind::NotImplementedError,
                "searchsorted(sorter=...): sort the sequence first",
            ));
        }
    }
    a.finish(2)?;
    searchsorted_of(it, &sequence, &values, right, int32)
}

fn bucketize(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let values = a.required(0, "input")?;
    let boundaries = tensor(&a.required(1, "boundaries")?)?;
    let int32 = flag(a.take_kw("out_int32"), false)?;
    let right = flag(a.take_kw("right"), false)?;
    a.finish(2)?;
    if boundaries.ndim() != 1 {
        return Err(runtime_error(format!(
            "boundaries tensor must be 1 dimension, but got dim({})",
            boundaries.ndim()
        )));
    }
    searchsorted_of(it, &boundaries, &values, right, int32)
}

// ------------------------------------------------------------------ running and frequent values

/// Positions per lane of `axis` chosen on the host by `choose` (lane values in order -> one
/// position per output element), as int64 of the lane layout `out_len` long.
fn lane_positions(
    x: &Array,
    axis: usize,
    out_len: usize,
    choose: impl Fn(&[f64]) -> Vec<i64>,
) -> Result<Vec<i64>, Exc> {
    let host = x.try_to_host().map_err(rt_err)?.to_f64_vec();
    let shape = x.shape();
    let len = shape.get(axis).copied().unwrap_or(1);
    let outer: usize = shape[..axis.min(shape.len())].iter().product();
    let inner: usize = shape.iter().skip(axis + 1).product();
    let mut result = vec![0i64; outer * out_len * inner];
    let mut lane = Vec::with_capacity(len);
    for o in 0..outer {
        for k in 0..inner {
            lane.clear();
            lane.extend((0..len).map(|j| host[(o * len + j) * inner + k]));
            for (j, p) in choose(&lane).into_iter().enumerate() {
                result[(o * out_len + j) * inner + k] = p;
            }
        }
    }
    Ok(result)
}

fn cumulative(it: &mut dyn Interpreter, r: &Value, mut a: Args, max: bool) -> Result<Value, Exc> {
    let fname = if max { "cummax" } else { "cummin" };
    let x = tensor(r)?;
    let dim = a.required(0, "dim")?;
    a.finish(1)?;
    let axis = norm_axis(int(&dim, fname, "dim")?, x.ndim().max(1), T)?;
    let len = x.shape().get(axis).copied().unwrap_or(1);
    let positions = lane_positions(&x, axis, len, |lane| {
        let mut best = 0usize;
        (0..lane.len())
            .map(|j| {
                let (v, b) = (lane[j], lane[best]);
                // Ties move to the later element, as PyTorch's `>=`; NaN wins and stays.
                let better = if max { v >= b } else { v <= b };
                if j == 0 || b.is_nan() && !v.is_nan() {
                    if j == 0 {
                        best = 0;
                    }
                } else if v.is_nan() || better {
                    best = j;
                }
                best as i64
            })
            .collect()
    })?;
    let (tape, rt) = tape_rt(it);
    let index = rt
        .from_host(HostData::I64(positions), x.shape(), x.device())
        .map_err(rt_err)?;
    let source = if x.ndim() == 0 {
        x.reshape(&[1]).map_err(rt_err)?
    } else {
        x.clone()
    };
    let index = if x.ndim() == 0 {
        index.reshape(&[1]).map_err(rt_err)?
    } else {
        index
    };
    let mut values = tape
        .take_along(&source, &index, axis as isize, true)
        .map_err(rt_err)?;
    let mut indices = index;
    if x.ndim() == 0 {
        values = tape.reshape(&values, &[]).map_err(rt_err)?;
        indices = indices.reshape(&[]).map_err(rt_err)?;
    }
    tape.rename(
        &values,
        if max {
            "CummaxBackward0"
        } else {
            "CumminBackward0"
        },
    );
    return_type(it, fname, values, indices)
}

fn return_type(
    it: &mut dyn Interpreter,
    name: &'static str,
    values: Array,
    indices: Array,
) -> Result<Value, Exc> {
    super::selection::return_type(it, name, values, indices)
}

fn mode(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    let dim = a.take(0, "dim")?;
    let keepdim = flag(a.take(1, "keepdim")?, false)?;
    a.finish(2)?;
    let axis = norm_axis(
        dim.map_or(Ok(-1), |v| int(&v, "mode", "dim"))?,
        x.ndim().max(1),
        T,
    )?;
    let source = if x.ndim() == 0 {
        x.reshape(&[1]).map_err(rt_err)?
    } else {
        x.clone()
    };
    let positions = lane_positions(&source, axis, 1, |lane| {
        // The smallest of the most frequent values, at its last occurrence.
        let mut order: Vec<usize> = (0..lane.len()).collect();
        order.sort_by(|&i, &j| {
            lane[i]
                .partial_cmp(&lane[j])
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(i.cmp(&j))
        });
        let (mut best, mut best_count, mut run) = (0usize, 0usize, 0usize);
        for (n, &i) in order.iter().enumerate() {
            run = if n > 0 && lane[order[n - 1]] == lane[i] {
                run + 1
            } else {
                1
            };
            if run > best_count {
                best_count = run;
                best = i;
            } else if run == best_count && lane[i] == lane[best] {
                best = i;
            }
        }
        vec![best as i64]
    })?;
    let mut lined = source.shape().to_vec();
    if let Some(d) = lined.get_mut(axis) {
        *d = 1;
    }
    let (tape, rt) = tape_rt(it);
    let index = rt
        .from_host(HostData::I64(positions), &lined, x.device())
        .map_err(rt_err)?;
    let mut values = tape
        .take_along(&source, &index, axis as isize, true)
        .map_err(rt_err)?;
    let mut indices = index;
    if !keepdim || x.ndim() == 0 {
        let mut shape = source.shape().to_vec();
        shape.remove(axis);
        if x.ndim() == 0 {
            shape.clear();
        }
        values = tape.reshape(&values, &to_isize(&shape)).map_err(rt_err)?;
        indices = indices.reshape(&to_isize(&shape)).map_err(rt_err)?;
    }
    tape.rename(&values, "ModeBackward0");
    return_type(it, "mode", values, indices)
}

fn unique(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?;
    a.take(0, "sorted")?;
    let inverse = flag(a.take(1, "return_inverse")?, false)?;
    let counts = flag(a.take(2, "return_counts")?, false)?;
    let dim = a.take(3, "dim")?;
    a.finish(4)?;
    if !matches!(dim, None | Some(Value::None)) {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            "unique(dim=...): devarray finds the distinct elements of the flattened tensor only",
        ));
    }
    let host = x.try_to_host().map_err(rt_err)?.to_f64_vec();
    let (values, inv, cnt) = sel::unique_values(&host);
    let rt = &it.state().rt;
    let n = values.len();
    let vals = rt
        .from_host(HostData::F64(values), &[n], x.device())
        .and_then(|v| v.astype(x.dtype()))
        .map_err(rt_err)?;
    let mut parts = vec![out(vals)];
    if inverse {
        parts.push(out(rt
            .from_host(HostData::I64(inv), x.shape(), x.device())
            .map_err(rt_err)?));
    }
    if counts {
        parts.push(out(rt
            .from_host(HostData::I64(cnt), &[n], x.device())
            .map_err(rt_err)?));
    }
    Ok(if parts.len() == 1 {
        parts.remove(0)
    } else {
        Value::tuple(parts)
    })
}

/// `hsplit`/`vsplit`/`dsplit`: equal sections of dim `dim` (dim 0 for a 1-D `hsplit`), or the
/// pieces before each index of a list.
fn split_at(it: &mut dyn Interpreter, r: &Value, mut a: Args, dim: usize) -> Result<Value, Exc> {
    let fname = a.fname;
    let x = tensor(r)?;
    let how = a.required(0, "sections")?;
    a.finish(1)?;
    let need = if dim == 1 { 1 } else { dim + 1 };
    if x.ndim() < need {
        return Err(runtime_error(format!(
            "torch.{fname} requires a tensor with at least {need} dimension, but got a tensor with {} dimensions!",
            x.ndim()
        )));
    }
    let dim = if dim == 1 && x.ndim() == 1 { 0 } else { dim };
    let len = x.shape()[dim];
    let sizes: Vec<usize> = match &how {
        Value::Int(n) => {
            let n = *n;
            if n <= 0 || len % n as usize != 0 {
                return Err(runtime_error(format!(
                    "torch.{fname} attempted to split along dimension {dim}, but the size of the dimension {len} is not divisible by the split_size {n}!"
                )));
            }
            vec![len / n as usize; n as usize]
        }
        other => {
            let mut sizes = Vec::new();
            let mut prev = 0usize;
            for c in ints(other, fname, "indices")?
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
    let (tape, _) = tape_rt(it);
    let parts = sel::split_sizes(tape, &x, dim, &sizes).map_err(rt_err)?;
    Ok(Value::tuple(parts.into_iter().map(out).collect()))
}

/// `quantile`: linear interpolation between the sorted values around position q * (n - 1),
/// through recorded ops (so it is differentiable), from the nearer end as PyTorch's `lerp`.
fn quantile(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    use crate::runtime::{BinaryOp, Operand, Scalar};
    let x = tensor(r)?;
    let q = a.required(0, "q")?;
    let dim = a.take(1, "dim")?.filter(|v| !matches!(v, Value::None));
    let keepdim = flag(a.take(2, "keepdim")?, false)?;
    if let Some(Value::Str(s)) = &a.take(3, "interpolation")? {
        if &**s != "linear" {
            return Err(Exc::new(
                ExcKind::NotImplementedError,
                "quantile(interpolation=...): devarray interpolates linearly only",
            ));
        }
    }
    a.finish(4)?;
    if !x.dtype().is_float() {
        return Err(runtime_error(
            "quantile() input tensor must be either float or double dtype",
        ));
    }
    let (qs, q_shape): (Vec<f64>, Vec<usize>) = match &q {
        Value::Array(t) => (
            t.array.try_to_host().map_err(rt_err)?.to_f64_vec(),
            t.array.shape().to_vec(),
        ),
        other => (
            vec![crate::object::ops::as_f64(other).ok_or_else(|| {
                Exc::type_error("quantile(): argument 'q' must be float or Tensor")
            })?],
            Vec::new(),
        ),
    };
    if let Some(bad) = qs.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        return Err(runtime_error(format!(
            "quantile() q must be in the range [0, 1] but got {bad}"
        )));
    }
    let (tape, _) = tape_rt(it);
    let (source, axis) = match &dim {
        None => (tape.reshape(&x, &[-1]).map_err(rt_err)?, 0),
        Some(d) => (
            x.clone(),
            norm_axis(int(d, "quantile", "dim")?, x.ndim(), T)?,
        ),
    };
    let n = source.shape().get(axis).copied().unwrap_or(0);
    if n == 0 {
        return Err(runtime_error("quantile() input tensor must be non-empty"));
    }
    let (sorted, _) = sel::sort(tape, &source, axis as isize, false).map_err(rt_err)?;
    let mut shape: Vec<isize> = to_isize(source.shape());
    match (&dim, keepdim) {
        (None, true) => shape = vec![1; x.ndim()],
        (Some(_), true) => shape[axis] = 1,
        _ => {
            shape.remove(axis);
        }
    }
    let mut results = Vec::with_capacity(qs.len());
    for &q in &qs {
        let pos = q * (n - 1) as f64;
        let (lo, hi) = (pos.floor() as i64, pos.ceil() as i64);
        let w = pos - lo as f64;
        let low = tape
            .index(&sorted, &sel::axis_slice(axis, lo, lo + 1))
            .map_err(rt_err)?;
        let high = tape
            .index(&sorted, &sel::axis_slice(axis, hi, hi + 1))
            .map_err(rt_err)?;
        let span = tape
            .binary(BinaryOp::Sub, Operand::Array(&high), Operand::Array(&low))
            .map_err(rt_err)?;
        let (from, factor, op) = if w < 0.5 {
            (&low, w, BinaryOp::Add)
        } else {
            (&high, 1.0 - w, BinaryOp::Sub)
        };
        let step = tape
            .binary(
                BinaryOp::Mul,
                Operand::Array(&span),
                Operand::Scalar(Scalar::Float(factor)),
            )
            .map_err(rt_err)?;
        let v = tape
            .binary(op, Operand::Array(from), Operand::Array(&step))
            .map_err(rt_err)?;
        results.push(tape.reshape(&v, &shape).map_err(rt_err)?);
    }
    let y = if q_shape.is_empty() {
        results.remove(0)
    } else {
        tape.stack(&results, 0).map_err(rt_err)?
    };
    Ok(out(y))
}
