//! Products and linear algebra in NumPy's and PyTorch's spellings: `einsum` (subscripts parsed
//! and composed from the tape's transpose, reshape, matmul, index and sum, so gradients flow),
//! `tensordot`, `inner`, `outer`, `kron`, `vdot`, `cross`, `trace`, `dist`, `cdist`,
//! `multi_dot`, `matrix_power`, and `numpy.linalg`'s `solve`, `lstsq`, `cholesky`, `qr`, `eigh`,
//! `eigvalsh`, `svd`, `pinv`, `matrix_rank`, `slogdet` (also `torch.linalg`'s names where they
//! return one tensor). The factorisations run in double precision on the host on one matrix
//! (small matrices): LU with partial pivoting as LAPACK's `getrf`, Householder QR as
//! `geqrf`/`orgqr` (R's diagonal signs as LAPACK's), cyclic Jacobi for `eigh` and one-sided
//! Jacobi for `svd`, whose vectors' signs are normalised (the largest component of each
//! eigenvector, and of each right singular vector, positive): LAPACK's signs depend on its
//! algorithm, so they may differ from NumPy's for some matrices.

// Matrix code reads clearest with index loops over rows and columns.
#![allow(clippy::needless_range_loop)]

use std::rc::Rc;

use crate::modules::array::arrays::{NUMPY, TORCH};
use crate::modules::array::numpy_fns::as_array;
use crate::nn::autograd::Tape;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{self, as_i64, wrap};
use crate::object::value::{Args, ArrayValue, BuiltinFn, Flavor, Module, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{Array, BinaryOp, DType, Device, HostData, IndexItem, Operand, ReduceOp};

type RtResult<T> = crate::runtime::Result<T>;

use crate::modules::array::fn_args::{array_arg, flavor_of, result};

fn isz(v: &[usize]) -> Vec<isize> {
    v.iter().map(|d| *d as isize).collect()
}

/// Two arrays in a common dtype (the wider; integers meet floats as the float).
fn common(tape: &mut Tape, a: &Array, b: &Array) -> RtResult<(Array, Array)> {
    let (da, db) = (a.dtype(), b.dtype());
    if da == db {
        return Ok((a.clone(), b.clone()));
    }
    let rank = |d: DType| match d {
        DType::Bool => 0,
        DType::Int32 => 1,
        DType::Int64 => 2,
        DType::Float32 => 3,
        _ => 4,
    };
    let to = if rank(da) >= rank(db) { da } else { db };
    let cast = |tape: &mut Tape, x: &Array| {
        if x.dtype() == to {
            Ok(x.clone())
        } else {
            tape.astype(x, to)
        }
    };
    Ok((cast(tape, a)?, cast(tape, b)?))
}

// ------------------------------------------------------------------ contraction

/// The product of `a` (axes labelled `la`) and `b` (`lb`) keeping the labels `keep` (each in
/// a or b), summing the others: labels in both and kept are batch axes, in both and not kept
/// are contracted by one batched matmul. Returns the result and its labels.
fn contract(
    tape: &mut Tape,
    a: &Array,
    la: &[char],
    b: &Array,
    lb: &[char],
    keep: &[char],
) -> RtResult<(Array, Vec<char>)> {
    let (a, la) = sum_unique(tape, a, la, lb, keep)?;
    let (b, lb) = sum_unique(tape, b, lb, &la, keep)?;
    let batch: Vec<char> = la
        .iter()
        .filter(|c| lb.contains(c) && keep.contains(c))
        .copied()
        .collect();
    let summed: Vec<char> = la
        .iter()
        .filter(|c| lb.contains(c) && !keep.contains(c))
        .copied()
        .collect();
    let only_a: Vec<char> = la.iter().filter(|c| !lb.contains(c)).copied().collect();
    let only_b: Vec<char> = lb.iter().filter(|c| !la.contains(c)).copied().collect();
    let dim = |labels: &[char], x: &Array, c: char| {
        labels
            .iter()
            .position(|l| *l == c)
            .map_or(1, |k| x.shape()[k])
    };
    let size = |labels: &[char], x: &Array, set: &[char]| -> usize {
        set.iter().map(|c| dim(labels, x, *c)).product()
    };
    let order = |labels: &[char], groups: [&[char]; 3]| -> Vec<isize> {
        groups
            .iter()
            .flat_map(|g| g.iter())
            .filter_map(|c| labels.iter().position(|l| l == c).map(|k| k as isize))
            .collect()
    };
    let (nb, nk) = (size(&la, &a, &batch), size(&la, &a, &summed));
    let (na, nbo) = (size(&la, &a, &only_a), size(&lb, &b, &only_b));
    let at = tape.transpose(&a, Some(&order(&la, [&batch, &only_a, &summed])))?;
    let a3 = tape.reshape(&at, &[nb as isize, na as isize, nk as isize])?;
    let bt = tape.transpose(&b, Some(&order(&lb, [&batch, &summed, &only_b])))?;
    let b3 = tape.reshape(&bt, &[nb as isize, nk as isize, nbo as isize])?;
    let (a3, b3) = common(tape, &a3, &b3)?;
    let p = tape.matmul(&a3, &b3)?;
    let mut shape = Vec::new();
    for c in &batch {
        shape.push(dim(&la, &a, *c));
    }
    for c in &only_a {
        shape.push(dim(&la, &a, *c));
    }
    for c in &only_b {
        shape.push(dim(&lb, &b, *c));
    }
    let out = tape.reshape(&p, &isz(&shape))?;
    let labels = batch
        .iter()
        .chain(&only_a)
        .chain(&only_b)
        .copied()
        .collect();
    Ok((out, labels))
}

/// `x` with the axes summed whose labels appear neither in `other` nor in `keep`.
fn sum_unique(
    tape: &mut Tape,
    x: &Array,
    labels: &[char],
    other: &[char],
    keep: &[char],
) -> RtResult<(Array, Vec<char>)> {
    let gone: Vec<isize> = labels
        .iter()
        .enumerate()
        .filter(|(_, c)| !other.contains(c) && !keep.contains(c))
        .map(|(k, _)| k as isize)
        .collect();
    if gone.is_empty() {
        return Ok((x.clone(), labels.to_vec()));
    }
    let out = tape.reduce(x, ReduceOp::Sum, Some(&gone), false)?;
    let left = labels
        .iter()
        .enumerate()
        .filter(|(k, _)| !gone.contains(&(*k as isize)))
        .map(|(_, c)| *c)
        .collect();
    Ok((out, left))
}

/// `x` with a repeated label reduced to its diagonal (`'ii->i'`), as many times as needed.
fn diagonals(
    tape: &mut Tape,
    rt: &crate::runtime::Runtime,
    x: &Array,
    labels: &[char],
) -> Result<(Array, Vec<char>), Exc> {
    let mut x = x.clone();
    let mut labels = labels.to_vec();
    while let Some((i, j)) = (0..labels.len())
        .flat_map(|i| (i + 1..labels.len()).map(move |j| (i, j)))
        .find(|(i, j)| labels[*i] == labels[*j])
    {
        let n = x.shape()[i];
        if x.shape()[j] != n {
            return Err(Exc::value_error(format!(
                "dimensions in operand 0 for collapsing index '{}' don't match ({} != {})",
                labels[i],
                n,
                x.shape()[j]
            )));
        }
        // Move i and j to the front and merge them: the diagonal is every (n + 1)-th row.
        let mut perm: Vec<isize> = vec![i as isize, j as isize];
        perm.extend(
            (0..labels.len())
                .filter(|k| *k != i && *k != j)
                .map(|k| k as isize),
        );
        let moved = tape.transpose(&x, Some(&perm))?;
        let mut merged: Vec<isize> = vec![(n * n) as isize];
        merged.extend(moved.shape()[2..].iter().map(|d| *d as isize));
        let flat = tape.reshape(&moved, &merged)?;
        let idx = rt.from_host(
            HostData::I64((0..n as i64).map(|k| k * (n as i64 + 1)).collect()),
            &[n],
            x.device(),
        )?;
        x = tape.index(&flat, &[IndexItem::Array(idx)])?;
        let c = labels[i];
        labels = perm[2..].iter().map(|k| labels[*k as usize]).collect();
        labels.insert(0, c);
    }
    Ok((x, labels))
}

/// `einsum(subscripts, *operands)`.
fn einsum_impl(it: &mut dyn Interpreter, flavor: Flavor, mut a: Args) -> Result<Value, Exc> {
    let spec = match a.pos.first() {
        Some(Value::Str(s)) => s.to_string(),
        Some(other) => {
            return Err(Exc::type_error(format!(
                "einsum(): argument 'equation' must be str, not {}",
                other.type_name()
            )))
        }
        None => {
            return Err(Exc::type_error(
                "einsum() missing required argument 'subscripts'",
            ))
        }
    };
    a.pos.remove(0);
    for kw in ["optimize", "out", "dtype", "order", "casting"] {
        a.take_kw(kw);
    }
    a.finish(usize::MAX)?;
    // PyTorch also takes the operands as one list.
    let raw: Vec<Value> = match a.pos.as_slice() {
        [Value::List(_) | Value::Tuple(_)] if flavor == Flavor::Torch => it.iterate(&a.pos[0])?,
        _ => a.pos.clone(),
    };
    let mut operands = Vec::new();
    for (k, v) in raw.iter().enumerate() {
        operands.push(array_arg(it, flavor, "einsum", "operands", k + 2, v)?);
    }
    let spec: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
    if spec.contains("...") {
        return Err(Exc::value_error(
            "einsum: '...' (broadcast dimensions) is not supported here",
        ));
    }
    let (lhs, rhs) = match spec.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (spec.clone(), None),
    };
    let inputs: Vec<Vec<char>> = lhs.split(',').map(|s| s.chars().collect()).collect();
    let bad = |msg: String| match flavor {
        Flavor::Torch => Exc::new(ExcKind::RuntimeError, format!("einsum(): {msg}")),
        _ => Exc::value_error(msg),
    };
    if inputs.len() != operands.len() {
        return Err(bad(match flavor {
            Flavor::Torch => {
                "more operands were provided than specified in the equation".to_string()
            }
            _ => "more operands provided to einstein sum function than specified in the subscripts string".to_string(),
        }));
    }
    for (k, (labels, x)) in inputs.iter().zip(&operands).enumerate() {
        if let Some(c) = labels.iter().find(|c| !c.is_ascii_alphabetic()) {
            return Err(bad(format!("invalid subscript '{c}' in einstein sum subscripts string, subscripts must be letters")));
        }
        if labels.len() != x.array.ndim() {
            return Err(bad(match flavor {
                Flavor::Torch => format!(
                    "the number of subscripts in the equation ({}) does not match the number of dimensions ({}) for operand {k} and no ellipsis was given",
                    labels.len(),
                    x.array.ndim()
                ),
                _ => "operand has more dimensions than subscripts given in einstein sum, but no '...' ellipsis provided to broadcast the extra dimensions.".to_string(),
            }));
        }
    }
    let output: Vec<char> = match &rhs {
        Some(r) => r.chars().collect(),
        None => {
            let mut once: Vec<char> = inputs
                .iter()
                .flatten()
                .copied()
                .filter(|c| inputs.iter().flatten().filter(|d| *d == c).count() == 1)
                .collect();
            once.sort_unstable();
            once
        }
    };
    for c in &output {
        if !inputs.iter().flatten().any(|d| d == c) {
            return Err(bad(format!(
                "einstein sum subscripts string included output subscript '{c}' which never appeared in an input"
            )));
        }
    }
    // Each label's size must agree across operands.
    let mut sizes: Vec<(char, usize)> = Vec::new();
    for (labels, x) in inputs.iter().zip(&operands) {
        for (c, d) in labels.iter().zip(x.array.shape()) {
            match sizes.iter().find(|(l, _)| l == c) {
                Some((_, s)) if *s != *d && *s != 1 && *d != 1 => {
                    return Err(bad(format!(
                        "operands could not be broadcast together with remapped shapes [original->remapped]: label '{c}' has sizes {s} and {d}"
                    )))
                }
                Some(_) => {}
                None => sizes.push((*c, *d)),
            }
        }
    }
    let out_flavor = operands.first().map_or(flavor, |x| x.flavor);
    let st = it.state_mut();
    let (rt, tape) = (&st.rt, &mut st.nn.tape);
    let mut terms = Vec::new();
    for (labels, x) in inputs.iter().zip(&operands) {
        terms.push(diagonals(tape, rt, &x.array, labels)?);
    }
    let mut terms = terms.into_iter();
    let Some((mut acc, mut acc_labels)) = terms.next() else {
        return Err(bad(
            "einsum(): must provide at least one operand".to_string()
        ));
    };
    let rest: Vec<(Array, Vec<char>)> = terms.collect();
    for (k, (x, labels)) in rest.iter().enumerate() {
        // Keep what the output or a later operand still needs.
        let mut keep = output.clone();
        for (_, later) in &rest[k + 1..] {
            keep.extend(later.iter().copied());
        }
        let (p, pl) = contract(tape, &acc, &acc_labels, x, labels, &keep)?;
        acc = p;
        acc_labels = pl;
    }
    // Sum what the output lacks, then order the axes as the output.
    let (acc, acc_labels) = sum_unique(tape, &acc, &acc_labels, &[], &output)?;
    let perm: Vec<isize> = output
        .iter()
        .filter_map(|c| acc_labels.iter().position(|l| l == c).map(|k| k as isize))
        .collect();
    let out = if perm.iter().enumerate().all(|(k, p)| *p == k as isize) {
        acc
    } else {
        tape.transpose(&acc, Some(&perm))?
    };
    result(out, out_flavor)
}

fn einsum<const F: u8>(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    einsum_impl(it, flavor_of::<F>(), a)
}

/// Labels for tensordot: a's free axes, then b's, contracted pairs sharing labels.
fn tensordot_impl(
    it: &mut dyn Interpreter,
    flavor: Flavor,
    a: &ArrayValue,
    b: &ArrayValue,
    axes_a: &[usize],
    axes_b: &[usize],
) -> Result<Array, Exc> {
    let letters: Vec<char> = ('a'..='z').chain('A'..='Z').collect();
    let (na, nb) = (a.array.ndim(), b.array.ndim());
    if na + nb > letters.len() {
        return Err(Exc::value_error("tensordot: too many dimensions"));
    }
    for (i, j) in axes_a.iter().zip(axes_b) {
        let (x, y) = (a.array.shape()[*i], b.array.shape()[*j]);
        if x != y {
            return Err(match flavor {
                Flavor::Torch => Exc::new(
                    ExcKind::RuntimeError,
                    format!("contracted dimensions need to match, but first has size {x} in dim {i} and second has size {y} in dim {j}"),
                ),
                _ => Exc::value_error("shape-mismatch for sum"),
            });
        }
    }
    let la: Vec<char> = letters[..na].to_vec();
    let mut lb: Vec<char> = letters[na..na + nb].to_vec();
    for (i, j) in axes_a.iter().zip(axes_b) {
        lb[*j] = la[*i];
    }
    let keep: Vec<char> = la
        .iter()
        .enumerate()
        .filter(|(k, _)| !axes_a.contains(k))
        .map(|(_, c)| *c)
        .chain(
            lb.iter()
                .enumerate()
                .filter(|(k, _)| !axes_b.contains(k))
                .map(|(_, c)| *c),
        )
        .collect();
    let tape = &mut it.state_mut().nn.tape;
    let (out, labels) = contract(tape, &a.array, &la, &b.array, &lb, &keep)?;
    let perm: Vec<isize> = keep
        .iter()
        .filter_map(|c| labels.iter().position(|l| l == c).map(|k| k as isize))
        .collect();
    let out = if perm.iter().enumerate().all(|(k, p)| *p == k as isize) {
        out
    } else {
        tape.transpose(&out, Some(&perm))?
    };
    Ok(out)
}

fn axis_list(it: &mut dyn Interpreter, v: &Value, ndim: usize) -> Result<Vec<usize>, Exc> {
    let items = match v {
        Value::List(_) | Value::Tuple(_) => it.iterate(v)?,
        other => vec![other.clone()],
    };
    items
        .iter()
        .map(|x| {
            let i = as_i64(x).ok_or_else(|| Exc::type_error("axes must be integers"))?;
            let n = ndim as i64;
            if i < -n || i >= n {
                return Err(Exc::new(
                    ExcKind::IndexError,
                    format!("axis {i} is out of bounds for array of dimension {ndim}"),
                ));
            }
            Ok(if i < 0 { (i + n) as usize } else { i as usize })
        })
        .collect()
}

fn tensordot<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let (n1, n2, n3) = if flavor == Flavor::Torch {
        ("a", "b", "dims")
    } else {
        ("a", "b", "axes")
    };
    let x = a.required(0, n1)?;
    let y = a.required(1, n2)?;
    let axes = a.take(2, n3)?.unwrap_or(Value::Int(2));
    a.finish(3)?;
    let x = array_arg(it, flavor, "tensordot", n1, 1, &x)?;
    let y = array_arg(it, flavor, "tensordot", n2, 2, &y)?;
    let (ax, ay) = match as_i64(&axes) {
        Some(n) => {
            let n = n.max(0) as usize;
            if n > x.array.ndim() || n > y.array.ndim() {
                return Err(Exc::value_error("shape-mismatch for sum"));
            }
            (
                (x.array.ndim() - n..x.array.ndim()).collect::<Vec<_>>(),
                (0..n).collect::<Vec<_>>(),
            )
        }
        None => {
            let pair = it.iterate(&axes)?;
            let [p, q] = pair.as_slice() else {
                return Err(Exc::value_error(
                    "axes must be an int or a pair of axis lists",
                ));
            };
            let (p, q) = (
                axis_list(it, p, x.array.ndim())?,
                axis_list(it, q, y.array.ndim())?,
            );
            if p.len() != q.len() {
                return Err(Exc::value_error("shape-mismatch for sum"));
            }
            (p, q)
        }
    };
    // A full contraction is a 0-d array here, not a scalar.
    Ok(wrap(
        tensordot_impl(it, flavor, &x, &y, &ax, &ay)?,
        x.flavor,
    ))
}

/// `inner(a, b)`: the sum over the last axes (scalars multiply).
fn inner<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let (x, y) = two(it, flavor, &mut a, ["a", "b"])?;
    if x.array.ndim() == 0 || y.array.ndim() == 0 {
        return ops::binary(
            it,
            crate::lang::ast::BinOp::Mul,
            &Value::Array(x),
            &Value::Array(y),
        );
    }
    let (nx, ny) = (x.array.ndim(), y.array.ndim());
    if x.array.shape()[nx - 1] != y.array.shape()[ny - 1] {
        return Err(match flavor {
            Flavor::Torch => Exc::new(ExcKind::RuntimeError, format!(
                "inner() the last dimension must match on both input tensors but got shapes {:?} and {:?}",
                x.array.shape(), y.array.shape()
            )),
            _ => Exc::value_error("shapes not aligned"),
        });
    }
    let out = tensordot_impl(it, flavor, &x, &y, &[nx - 1], &[ny - 1])?;
    result(out, x.flavor)
}

fn two(
    it: &mut dyn Interpreter,
    flavor: Flavor,
    a: &mut Args,
    names: [&str; 2],
) -> Result<(ArrayValue, ArrayValue), Exc> {
    let fname = a.fname;
    let x = a.required(0, names[0])?;
    let y = a.required(1, names[1])?;
    a.take_kw("out");
    a.finish(2)?;
    Ok((
        array_arg(it, flavor, fname, names[0], 1, &x)?,
        array_arg(it, flavor, fname, names[1], 2, &y)?,
    ))
}

/// `outer(a, b)` (PyTorch's `outer`/`ger`): a[:, None] * b[None, :], flattened first.
fn outer_impl(it: &mut dyn Interpreter, x: &ArrayValue, y: &ArrayValue) -> Result<Value, Exc> {
    let tape = &mut it.state_mut().nn.tape;
    let p = tape.reshape(&x.array, &[-1, 1])?;
    let q = tape.reshape(&y.array, &[1, -1])?;
    let (p, q) = common(tape, &p, &q)?;
    let out = tape.binary(BinaryOp::Mul, Operand::Array(&p), Operand::Array(&q))?;
    Ok(wrap(out, x.flavor))
}

fn outer<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let names = if flavor == Flavor::Torch {
        ["input", "vec2"]
    } else {
        ["a", "b"]
    };
    let (x, y) = two(it, flavor, &mut a, names)?;
    if flavor == Flavor::Torch && (x.array.ndim() != 1 || y.array.ndim() != 1) {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "outer: Expected 1-D argument self, but got {}-D",
                x.array.ndim()
            ),
        ));
    }
    outer_impl(it, &x, &y)
}

/// `kron(a, b)`: every element of a times b, laid out blockwise.
fn kron<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let names = if flavor == Flavor::Torch {
        ["input", "other"]
    } else {
        ["a", "b"]
    };
    let (x, y) = two(it, flavor, &mut a, names)?;
    let n = x.array.ndim().max(y.array.ndim());
    let pad = |s: &[usize]| -> Vec<usize> {
        let mut v = vec![1; n - s.len()];
        v.extend_from_slice(s);
        v
    };
    let (sx, sy) = (pad(x.array.shape()), pad(y.array.shape()));
    // x as (d0, 1, d1, 1, ...), y as (1, e0, 1, e1, ...): the product is (d0, e0, d1, e1, ...).
    let mut shx = Vec::new();
    let mut shy = Vec::new();
    for k in 0..n {
        shx.extend([sx[k] as isize, 1]);
        shy.extend([1, sy[k] as isize]);
    }
    let tape = &mut it.state_mut().nn.tape;
    let p = tape.reshape(&x.array, &shx)?;
    let q = tape.reshape(&y.array, &shy)?;
    let (p, q) = common(tape, &p, &q)?;
    let prod = tape.binary(BinaryOp::Mul, Operand::Array(&p), Operand::Array(&q))?;
    let shape: Vec<isize> = (0..n).map(|k| (sx[k] * sy[k]) as isize).collect();
    let out = tape.reshape(&prod, &shape)?;
    Ok(wrap(out, x.flavor))
}

/// `vdot(a, b)`: the dot product of the flattened arrays.
fn vdot<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let names = if flavor == Flavor::Torch {
        ["input", "other"]
    } else {
        ["a", "b"]
    };
    let (x, y) = two(it, flavor, &mut a, names)?;
    if x.array.size() != y.array.size() {
        return Err(match flavor {
            Flavor::Torch => Exc::new(ExcKind::RuntimeError, format!(
                "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
                x.array.size(), y.array.size(), x.array.size(), y.array.size()
            )),
            _ => Exc::value_error("vdot: the arrays have different sizes"),
        });
    }
    let tape = &mut it.state_mut().nn.tape;
    let p = tape.reshape(&x.array, &[-1])?;
    let q = tape.reshape(&y.array, &[-1])?;
    let (p, q) = common(tape, &p, &q)?;
    let out = tape.dot(&p, &q)?;
    result(out, x.flavor)
}

/// `cross(a, b, axis=-1)` / `torch.cross(input, other, dim=None)`: 3-vectors along an axis.
fn cross<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let names = if flavor == Flavor::Torch {
        ["input", "other"]
    } else {
        ["a", "b"]
    };
    let fname = a.fname;
    let x = a.required(0, names[0])?;
    let y = a.required(1, names[1])?;
    let axis = if flavor == Flavor::Torch {
        a.take(2, "dim")?
    } else {
        a.take_kw("axis")
    };
    a.finish(3)?;
    let x = array_arg(it, flavor, fname, names[0], 1, &x)?;
    let y = array_arg(it, flavor, fname, names[1], 2, &y)?;
    let nd = x.array.ndim();
    let axis = match axis.as_ref().and_then(as_i64) {
        Some(i) => crate::modules::array::array_more::norm_axis(i, nd, flavor)?,
        // PyTorch's default: the first axis of length 3 (deprecated); NumPy's: the last.
        None if flavor == Flavor::Torch => x
            .array
            .shape()
            .iter()
            .position(|d| *d == 3)
            .unwrap_or(nd.saturating_sub(1)),
        None => nd.saturating_sub(1),
    };
    if x.array.shape() != y.array.shape() || x.array.shape().get(axis) != Some(&3) {
        return Err(match flavor {
            Flavor::Torch => Exc::new(
                ExcKind::RuntimeError,
                format!(
                    "linalg.cross: inputs dimension {axis} must have length 3. Got {} and {}",
                    x.array.shape().get(axis).copied().unwrap_or(0),
                    y.array.shape().get(axis).copied().unwrap_or(0)
                ),
            ),
            _ => Exc::value_error(
                "incompatible dimensions for cross product\n(dimension must be 2 or 3)",
            ),
        });
    }
    let tape = &mut it.state_mut().nn.tape;
    let (p, q) = common(tape, &x.array, &y.array)?;
    let comp = |tape: &mut Tape, v: &Array, k: i64| -> RtResult<Array> {
        let mut items = vec![
            IndexItem::Slice {
                start: None,
                stop: None,
                step: None
            };
            axis
        ];
        items.push(IndexItem::Int(k));
        tape.index(v, &items)
    };
    let mut parts = Vec::new();
    for (i, j) in [(1, 2), (2, 0), (0, 1)] {
        let a1 = comp(tape, &p, i)?;
        let b2 = comp(tape, &q, j)?;
        let a2 = comp(tape, &p, j)?;
        let b1 = comp(tape, &q, i)?;
        let l = tape.binary(BinaryOp::Mul, Operand::Array(&a1), Operand::Array(&b2))?;
        let r = tape.binary(BinaryOp::Mul, Operand::Array(&a2), Operand::Array(&b1))?;
        parts.push(tape.binary(BinaryOp::Sub, Operand::Array(&l), Operand::Array(&r))?);
    }
    let out = tape.stack(&parts, axis as isize)?;
    Ok(wrap(out, x.flavor))
}

/// `torch.trace(input)`: the sum of the main diagonal, on the tape.
fn trace_torch(it: &mut dyn Interpreter, x: &ArrayValue) -> Result<Value, Exc> {
    if x.array.ndim() != 2 {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "trace: expected a matrix, but got tensor with dim ".to_string()
                + &x.array.ndim().to_string(),
        ));
    }
    let n = x.array.shape()[0].min(x.array.shape()[1]);
    let cols = x.array.shape()[1];
    let idx = it.state().rt.from_host(
        HostData::I64((0..n as i64).map(|k| k * (cols as i64 + 1)).collect()),
        &[n],
        x.array.device(),
    )?;
    let tape = &mut it.state_mut().nn.tape;
    let flat = tape.reshape(&x.array, &[-1])?;
    let d = tape.index(&flat, &[IndexItem::Array(idx)])?;
    let d = if d.dtype().is_float() {
        d
    } else {
        tape.astype(&d, DType::Int64)?
    };
    let out = tape.reduce(&d, ReduceOp::Sum, None, false)?;
    Ok(wrap(out, x.flavor))
}

/// `torch.dist(input, other, p=2)`: the p-norm of the difference.
fn dist(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "input")?;
    let y = a.required(1, "other")?;
    let p = a.take(2, "p")?.and_then(|v| ops::as_f64(&v)).unwrap_or(2.0);
    a.finish(3)?;
    let x = array_arg(it, Flavor::Torch, "dist", "input", 1, &x)?;
    let y = array_arg(it, Flavor::Torch, "dist", "other", 2, &y)?;
    let tape = &mut it.state_mut().nn.tape;
    let d = tape.binary(
        BinaryOp::Sub,
        Operand::Array(&x.array),
        Operand::Array(&y.array),
    )?;
    let flat = tape.reshape(&d, &[-1])?;
    let out = tape.norm(&flat, Some(p), None, false)?;
    Ok(wrap(out, x.flavor))
}

/// `torch.cdist(x1, x2, p=2)`: the p-norm distance between each row of x1 and each of x2
/// (batched over leading axes), composed so that gradients flow.
fn cdist(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x1")?;
    let y = a.required(1, "x2")?;
    let p = a.take(2, "p")?.and_then(|v| ops::as_f64(&v)).unwrap_or(2.0);
    a.take_kw("compute_mode");
    a.finish(3)?;
    let x = array_arg(it, Flavor::Torch, "cdist", "x1", 1, &x)?;
    let y = array_arg(it, Flavor::Torch, "cdist", "x2", 2, &y)?;
    let (sx, sy) = (x.array.shape().to_vec(), y.array.shape().to_vec());
    if sx.len() < 2 || sy.len() < 2 {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "cdist only supports at least 2D tensors, X1 got: {}D",
                sx.len().min(sy.len())
            ),
        ));
    }
    if sx[sx.len() - 1] != sy[sy.len() - 1] {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "X1 and X2 must have the same number of columns. X1: {} X2: {}",
                sx[sx.len() - 1],
                sy[sy.len() - 1]
            ),
        ));
    }
    let tape = &mut it.state_mut().nn.tape;
    let mut ex: Vec<isize> = isz(&sx);
    ex.insert(sx.len() - 1, 1);
    let mut ey: Vec<isize> = isz(&sy);
    ey.insert(sy.len() - 2, 1);
    let p3 = tape.reshape(&x.array, &ex)?;
    let q3 = tape.reshape(&y.array, &ey)?;
    let d = tape.binary(BinaryOp::Sub, Operand::Array(&p3), Operand::Array(&q3))?;
    let out = tape.norm(&d, Some(p), Some(&[-1]), false)?;
    Ok(wrap(out, x.flavor))
}

// ------------------------------------------------------------------ host matrices

/// One matrix on the host, row-major, with the dtype its results take.
#[derive(Clone)]
struct Mat {
    rows: usize,
    cols: usize,
    d: Vec<f64>,
}

impl Mat {
    fn at(&self, i: usize, j: usize) -> f64 {
        self.d[i * self.cols + j]
    }
    fn set(&mut self, i: usize, j: usize, v: f64) {
        self.d[i * self.cols + j] = v;
    }
    fn zeros(rows: usize, cols: usize) -> Mat {
        Mat {
            rows,
            cols,
            d: vec![0.0; rows * cols],
        }
    }
    fn eye(n: usize) -> Mat {
        let mut m = Mat::zeros(n, n);
        for i in 0..n {
            m.set(i, i, 1.0);
        }
        m
    }
    fn t(&self) -> Mat {
        let mut m = Mat::zeros(self.cols, self.rows);
        for i in 0..self.rows {
            for j in 0..self.cols {
                m.set(j, i, self.at(i, j));
            }
        }
        m
    }
    fn mul(&self, o: &Mat) -> Mat {
        let mut m = Mat::zeros(self.rows, o.cols);
        for i in 0..self.rows {
            for k in 0..self.cols {
                let a = self.at(i, k);
                for j in 0..o.cols {
                    m.d[i * o.cols + j] += a * o.at(k, j);
                }
            }
        }
        m
    }
}

/// The float dtype of a linalg result in a dialect: float32 stays, the rest is float64
/// (PyTorch refuses integers, as its LAPACK wrappers do).
fn matrix_arg(
    it: &mut dyn Interpreter,
    flavor: Flavor,
    fname: &str,
    v: &Value,
    square: bool,
) -> Result<(Mat, DType, Device), Exc> {
    let x = array_arg(it, flavor, fname, "A", 1, v)?;
    let shape = x.array.shape();
    if shape.len() != 2 {
        if shape.len() < 2 {
            return Err(match flavor {
                Flavor::Torch => Exc::new(
                    ExcKind::RuntimeError,
                    format!("linalg.{fname}: The input tensor A must have at least 2 dimensions."),
                ),
                _ => Exc::new(
                    ExcKind::LinAlgError,
                    format!(
                        "{}-dimensional array given. Array must be at least two-dimensional",
                        shape.len()
                    ),
                ),
            });
        }
        return Err(Exc::type_error(
            "devarray's linalg takes one matrix (no stacks of them)",
        ));
    }
    if square && shape[0] != shape[1] {
        return Err(match flavor {
            Flavor::Torch => Exc::new(ExcKind::RuntimeError, format!(
                "linalg.{fname}: A must be batches of square matrices, but they are {} by {} matrices",
                shape[0], shape[1]
            )),
            _ => Exc::new(ExcKind::LinAlgError, "Last 2 dimensions of the array must be square"),
        });
    }
    let dtype = match x.array.dtype() {
        DType::Float32 => DType::Float32,
        DType::Float64 => DType::Float64,
        other if flavor == Flavor::Torch => {
            return Err(Exc::new(
                ExcKind::NotImplementedError,
                format!(
                    "linalg.{fname}: Expected a floating point or complex tensor as input. Got {}",
                    super::math_more::torch_type_name(other)
                ),
            ))
        }
        _ => DType::Float64,
    };
    let m = Mat {
        rows: shape[0],
        cols: shape[1],
        d: x.array.to_host().to_f64_vec(),
    };
    Ok((m, dtype, x.array.device()))
}

fn to_array(
    it: &mut dyn Interpreter,
    m: &Mat,
    shape: &[usize],
    dtype: DType,
    device: Device,
    flavor: Flavor,
) -> Result<Value, Exc> {
    let rt = &it.state().rt;
    let host = rt.from_host(HostData::F64(m.d.clone()), shape, Device::cpu(0))?;
    let cast = if dtype == DType::Float64 {
        host
    } else {
        host.astype(dtype)?
    };
    result(cast.copy_to(rt, device)?, flavor)
}

fn mat_value(
    it: &mut dyn Interpreter,
    m: &Mat,
    dtype: DType,
    device: Device,
    flavor: Flavor,
) -> Result<Value, Exc> {
    to_array(it, m, &[m.rows, m.cols], dtype, device, flavor)
}

fn vec_value(
    it: &mut dyn Interpreter,
    v: Vec<f64>,
    dtype: DType,
    device: Device,
    flavor: Flavor,
) -> Result<Value, Exc> {
    let n = v.len();
    to_array(
        it,
        &Mat {
            rows: 1,
            cols: n,
            d: v,
        },
        &[n],
        dtype,
        device,
        flavor,
    )
}

fn singular(flavor: Flavor, fname: &str) -> Exc {
    match flavor {
        Flavor::Torch => Exc::new(
            ExcKind::LinAlgError,
            format!(
                "torch.linalg.{fname}: The solver failed because the input matrix is singular."
            ),
        ),
        _ => Exc::new(ExcKind::LinAlgError, "Singular matrix"),
    }
}

/// LU with partial pivoting (LAPACK's `getf2`): factors in place, the row order, the swaps'
/// parity, and whether a pivot was exactly zero.
fn lu(m: &mut Mat) -> (Vec<usize>, bool, bool) {
    let n = m.rows;
    let mut perm: Vec<usize> = (0..n).collect();
    let (mut odd, mut sing) = (false, false);
    for j in 0..n {
        let mut p = j;
        for i in j + 1..n {
            if m.at(i, j).abs() > m.at(p, j).abs() {
                p = i;
            }
        }
        if m.at(p, j) == 0.0 {
            sing = true;
            continue;
        }
        if p != j {
            for k in 0..n {
                m.d.swap(j * n + k, p * n + k);
            }
            perm.swap(j, p);
            odd = !odd;
        }
        let r = 1.0 / m.at(j, j);
        for i in j + 1..n {
            let l = m.at(i, j) * r;
            m.set(i, j, l);
            for k in j + 1..n {
                let v = m.at(i, k) - l * m.at(j, k);
                m.set(i, k, v);
            }
        }
    }
    (perm, odd, sing)
}

/// Solves A X = B from A's LU factors.
fn lu_solve(lu: &Mat, perm: &[usize], b: &Mat) -> Mat {
    let n = lu.rows;
    let mut x = Mat::zeros(n, b.cols);
    for c in 0..b.cols {
        let mut col: Vec<f64> = (0..n).map(|i| b.at(perm[i], c)).collect();
        for i in 0..n {
            for k in 0..i {
                col[i] -= lu.at(i, k) * col[k];
            }
        }
        for i in (0..n).rev() {
            for k in i + 1..n {
                col[i] -= lu.at(i, k) * col[k];
            }
            col[i] /= lu.at(i, i);
        }
        for i in 0..n {
            x.set(i, c, col[i]);
        }
    }
    x
}

/// `C -= tau v (C^T v)^T` on rows `from..` and columns `cols`, as LAPACK's `dlarf` (a
/// `dgemv` then a `dger`, in their rounding order).
fn reflect(c: &mut Mat, v: &[f64], tau: f64, from: usize, cols: std::ops::Range<usize>) {
    if tau == 0.0 {
        return;
    }
    for col in cols {
        let w: f64 = (from..c.rows).fold(0.0, |acc, i| acc + c.at(i, col) * v[i]);
        let t = -tau * w;
        for i in from..c.rows {
            let val = c.at(i, col) + v[i] * t;
            c.set(i, col, val);
        }
    }
}

/// Householder QR as LAPACK's `geqr2` + `org2r`: (Q m x k, R k x n), k = min(m, n), with
/// LAPACK's signs (R's diagonal is -sign(a_jj) * the column norm).
fn qr(a: &Mat) -> (Mat, Mat) {
    let (m, n) = (a.rows, a.cols);
    let k = m.min(n);
    let mut r = Mat {
        rows: m,
        cols: n,
        d: a.d.clone(),
    };
    let mut vs: Vec<(Vec<f64>, f64)> = Vec::new();
    for j in 0..k {
        let alpha = r.at(j, j);
        let xnorm = (j + 1..m).map(|i| r.at(i, j).powi(2)).sum::<f64>().sqrt();
        let mut v = vec![0.0; m];
        v[j] = 1.0;
        if xnorm == 0.0 {
            vs.push((v, 0.0));
            continue;
        }
        let beta = -alpha.signum() * alpha.hypot(xnorm);
        let tau = (beta - alpha) / beta;
        let scale = 1.0 / (alpha - beta);
        for (i, vi) in v.iter_mut().enumerate().skip(j + 1) {
            *vi = r.at(i, j) * scale;
        }
        reflect(&mut r, &v, tau, j, j + 1..n);
        r.set(j, j, beta);
        for i in j + 1..m {
            r.set(i, j, 0.0);
        }
        vs.push((v, tau));
    }
    // org2r: the columns from the last reflector back.
    let mut q = Mat::zeros(m, k);
    for (j, (v, tau)) in vs.iter().enumerate().rev() {
        if j + 1 < k {
            q.set(j, j, 1.0);
            reflect(&mut q, v, *tau, j, j + 1..k);
        }
        for i in j + 1..m {
            q.set(i, j, -tau * v[i]);
        }
        q.set(j, j, 1.0 - tau);
        for i in 0..j {
            q.set(i, j, 0.0);
        }
    }
    let mut rk = Mat::zeros(k, n);
    for i in 0..k {
        for c in 0..n {
            rk.set(i, c, r.at(i, c));
        }
    }
    (q, rk)
}

/// The eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix, by cyclic
/// Jacobi rotations; each vector's largest component is made positive.
fn eigh(a: &Mat) -> (Vec<f64>, Mat) {
    let n = a.rows;
    let mut m = Mat {
        rows: n,
        cols: n,
        d: a.d.clone(),
    };
    let mut v = Mat::eye(n);
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |j| *j != i).map(move |j| (i, j)))
            .map(|(i, j)| m.at(i, j).powi(2))
            .sum();
        if off == 0.0 || off.sqrt() < 1e-300 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = m.at(p, q);
                if apq == 0.0 {
                    continue;
                }
                let theta = (m.at(q, q) - m.at(p, p)) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (mkp, mkq) = (m.at(k, p), m.at(k, q));
                    m.set(k, p, c * mkp - s * mkq);
                    m.set(k, q, s * mkp + c * mkq);
                }
                for k in 0..n {
                    let (mpk, mqk) = (m.at(p, k), m.at(q, k));
                    m.set(p, k, c * mpk - s * mqk);
                    m.set(q, k, s * mpk + c * mqk);
                }
                for k in 0..n {
                    let (vkp, vkq) = (v.at(k, p), v.at(k, q));
                    v.set(k, p, c * vkp - s * vkq);
                    v.set(k, q, s * vkp + c * vkq);
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|i, j| m.at(*i, *i).total_cmp(&m.at(*j, *j)));
    let values = order.iter().map(|i| m.at(*i, *i)).collect();
    let mut vecs = Mat::zeros(n, n);
    for (c, src) in order.iter().enumerate() {
        let col: Vec<f64> = (0..n).map(|r| v.at(r, *src)).collect();
        let flip = sign_flip(&col);
        for r in 0..n {
            vecs.set(r, c, flip * col[r]);
        }
    }
    (values, vecs)
}

/// -1 when the component of largest magnitude (the first of equals) is negative.
fn sign_flip(col: &[f64]) -> f64 {
    let mut best = 0;
    for (k, x) in col.iter().enumerate() {
        if x.abs() > col[best].abs() * (1.0 + 1e-12) {
            best = k;
        }
    }
    if col.get(best).copied().unwrap_or(0.0) < 0.0 {
        -1.0
    } else {
        1.0
    }
}

/// The thin SVD A = U diag(s) V^T (s descending) by one-sided Jacobi.
fn svd(a: &Mat) -> (Mat, Vec<f64>, Mat) {
    if a.rows < a.cols {
        let (u, s, v) = svd(&a.t());
        return (v, s, u);
    }
    let (m, n) = (a.rows, a.cols);
    let mut u = Mat {
        rows: m,
        cols: n,
        d: a.d.clone(),
    };
    let mut v = Mat::eye(n);
    for _sweep in 0..100 {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for i in 0..m {
                    alpha += u.at(i, p).powi(2);
                    beta += u.at(i, q).powi(2);
                    gamma += u.at(i, p) * u.at(i, q);
                }
                if gamma == 0.0 || gamma.abs() <= 1e-15 * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let t = if zeta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for i in 0..m {
                    let (x, y) = (u.at(i, p), u.at(i, q));
                    u.set(i, p, c * x - s * y);
                    u.set(i, q, s * x + c * y);
                }
                for i in 0..n {
                    let (x, y) = (v.at(i, p), v.at(i, q));
                    v.set(i, p, c * x - s * y);
                    v.set(i, q, s * x + c * y);
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> = (0..n)
        .map(|j| (0..m).map(|i| u.at(i, j).powi(2)).sum::<f64>().sqrt())
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|i, j| norms[*j].total_cmp(&norms[*i]));
    let mut uo = Mat::zeros(m, n);
    let mut vo = Mat::zeros(n, n);
    let mut s = Vec::with_capacity(n);
    for (c, src) in order.iter().enumerate() {
        let sv = norms[*src];
        s.push(sv);
        let vcol: Vec<f64> = (0..n).map(|r| v.at(r, *src)).collect();
        let flip = sign_flip(&vcol);
        for r in 0..n {
            vo.set(r, c, flip * vcol[r]);
        }
        for r in 0..m {
            let x = if sv == 0.0 {
                0.0
            } else {
                flip * u.at(r, *src) / sv
            };
            uo.set(r, c, x);
        }
    }
    (uo, s, vo)
}

/// The pseudo-inverse V diag(1/s) U^T, singular values below `rcond * max(s)` dropped.
/// The least-squares solution of `a x = b` (a: rows x cols row-major, b: rows x k), with
/// singular values below `rcond * max` dropped: what `polyfit` solves.
pub(super) fn least_squares(
    rows: usize,
    cols: usize,
    a: &[f64],
    b: &[f64],
    k: usize,
    rcond: f64,
) -> Vec<f64> {
    let m = Mat {
        rows,
        cols,
        d: a.to_vec(),
    };
    let rhs = Mat {
        rows,
        cols: k,
        d: b.to_vec(),
    };
    pinv_of(&m, rcond).mul(&rhs).d
}

fn pinv_of(a: &Mat, rcond: f64) -> Mat {
    let (u, s, v) = svd(a);
    let cutoff = rcond * s.iter().copied().fold(0.0, f64::max);
    let mut vs = v.clone();
    for (j, sv) in s.iter().enumerate() {
        let inv = if *sv > cutoff { 1.0 / sv } else { 0.0 };
        for i in 0..vs.rows {
            let x = vs.at(i, j) * inv;
            vs.set(i, j, x);
        }
    }
    vs.mul(&u.t())
}

// ------------------------------------------------------------------ numpy.linalg

fn solve<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let x = a.required(0, if flavor == Flavor::Torch { "A" } else { "a" })?;
    let b = a.required(1, if flavor == Flavor::Torch { "B" } else { "b" })?;
    a.take_kw("left");
    a.take_kw("out");
    a.finish(2)?;
    let (mut m, dtype, device) = matrix_arg(it, flavor, "solve", &x, true)?;
    let bv = array_arg(it, flavor, "solve", "B", 2, &b)?;
    let n = m.rows;
    let vector = bv.array.ndim() == 1;
    let rhs_shape = bv.array.shape().to_vec();
    if rhs_shape.first() != Some(&n) || rhs_shape.len() > 2 {
        return Err(match flavor {
            Flavor::Torch => Exc::new(ExcKind::RuntimeError, "linalg.solve: Incompatible shapes of A and B for the equation AX = B"),
            _ => Exc::value_error(format!(
                "{}: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature (m,m),{}->{} (size {} is different from {n})",
                if vector { "solve1" } else { "solve" },
                if vector { "(m)" } else { "(m,n)" },
                if vector { "(m)" } else { "(m,n)" },
                rhs_shape.first().copied().unwrap_or(0)
            )),
        });
    }
    let cols = if vector { 1 } else { rhs_shape[1] };
    let rhs = Mat {
        rows: n,
        cols,
        d: bv.array.to_host().to_f64_vec(),
    };
    let dtype = if bv.array.dtype() == DType::Float64 {
        DType::Float64
    } else {
        dtype
    };
    let (perm, _, sing) = lu(&mut m);
    if sing {
        return Err(singular(flavor, "solve"));
    }
    let x = lu_solve(&m, &perm, &rhs);
    if vector {
        return vec_value(it, x.d, dtype, device, flavor);
    }
    mat_value(it, &x, dtype, device, flavor)
}

fn one_matrix(a: &mut Args, flavor: Flavor) -> Result<Value, Exc> {
    let x = a.required(0, if flavor == Flavor::Torch { "A" } else { "a" })?;
    Ok(x)
}

fn cholesky<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let x = one_matrix(&mut a, flavor)?;
    let upper = a
        .take_kw("upper")
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(false);
    a.take_kw("out");
    a.finish(1)?;
    let (m, dtype, device) = matrix_arg(it, flavor, "cholesky", &x, true)?;
    let n = m.rows;
    let mut l = Mat::zeros(n, n);
    for j in 0..n {
        let mut d = m.at(j, j);
        for k in 0..j {
            d -= l.at(j, k).powi(2);
        }
        if d <= 0.0 || d.is_nan() {
            return Err(match flavor {
                Flavor::Torch => Exc::new(ExcKind::LinAlgError, format!(
                    "linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the leading minor of order {} is not positive-definite).",
                    j + 1
                )),
                _ => Exc::new(ExcKind::LinAlgError, "Matrix is not positive definite"),
            });
        }
        let d = d.sqrt();
        l.set(j, j, d);
        for i in j + 1..n {
            let mut s = m.at(i, j);
            for k in 0..j {
                s -= l.at(i, k) * l.at(j, k);
            }
            l.set(i, j, s / d);
        }
    }
    let l = if upper { l.t() } else { l };
    mat_value(it, &l, dtype, device, flavor)
}

fn qr_fn<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let x = one_matrix(&mut a, flavor)?;
    let mode = match &a.take(1, "mode")? {
        Some(Value::Str(s)) => s.to_string(),
        _ => "reduced".to_string(),
    };
    a.finish(2)?;
    let (m, dtype, device) = matrix_arg(it, flavor, "qr", &x, false)?;
    let (q, r) = qr(&m);
    match mode.as_str() {
        "reduced" => {}
        "r" => return mat_value(it, &r, dtype, device, flavor),
        "complete" if m.rows <= m.cols => {}
        other => {
            return Err(Exc::value_error(format!("Unrecognized mode '{other}'")));
        }
    }
    let qv = mat_value(it, &q, dtype, device, flavor)?;
    let rv = mat_value(it, &r, dtype, device, flavor)?;
    Ok(Value::tuple(vec![qv, rv]))
}

fn symmetric_arg(
    it: &mut dyn Interpreter,
    flavor: Flavor,
    a: &mut Args,
    fname: &str,
) -> Result<(Mat, DType, Device), Exc> {
    let x = one_matrix(a, flavor)?;
    let uplo = match &a.take(1, "UPLO")? {
        Some(Value::Str(s)) => s.to_string(),
        _ => "L".to_string(),
    };
    a.finish(2)?;
    let (mut m, dtype, device) = matrix_arg(it, flavor, fname, &x, true)?;
    // Only one triangle is read, as LAPACK's.
    let n = m.rows;
    for i in 0..n {
        for j in 0..n {
            let lower = i > j;
            let src = if (uplo == "L") == lower {
                m.at(i, j)
            } else {
                m.at(j, i)
            };
            m.set(i, j, src);
        }
    }
    Ok((m, dtype, device))
}

fn eigh_fn<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let (m, dtype, device) = symmetric_arg(it, flavor, &mut a, "eigh")?;
    let (w, v) = eigh(&m);
    let wv = vec_value(it, w, dtype, device, flavor)?;
    let vv = mat_value(it, &v, dtype, device, flavor)?;
    Ok(Value::tuple(vec![wv, vv]))
}

fn eigvalsh<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let (m, dtype, device) = symmetric_arg(it, flavor, &mut a, "eigvalsh")?;
    let (w, _) = eigh(&m);
    vec_value(it, w, dtype, device, flavor)
}

/// The eigenvalues (and with `vectors` the unit eigenvectors, as columns) of a general real
/// square matrix (`array::eig`); complex ones are refused, devarray having no complex dtype.
fn eig_general<const F: u8>(
    it: &mut dyn Interpreter,
    mut a: Args,
    vectors: bool,
) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let x = one_matrix(&mut a, flavor)?;
    a.finish(1)?;
    let (m, dtype, device) = matrix_arg(it, flavor, a.fname, &x, true)?;
    let n = m.rows;
    let values = crate::modules::array::eig::eigenvalues(n, &m.d)
        .ok_or_else(|| Exc::new(ExcKind::LinAlgError, "Eigenvalues did not converge"))?;
    if let Some(&(re, im)) = values.iter().find(|(_, im)| *im != 0.0) {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            format!(
                "{}: the matrix has complex eigenvalues ({re}{im:+}j, ...), and devarray has no complex dtype",
                a.fname
            ),
        ));
    }
    let w: Vec<f64> = values.iter().map(|(re, _)| *re).collect();
    let wv = vec_value(it, w.clone(), dtype, device, flavor)?;
    if !vectors {
        return Ok(wv);
    }
    let mut v = Mat {
        rows: n,
        cols: n,
        d: vec![0.0; n * n],
    };
    for (c, lambda) in w.iter().enumerate() {
        for (r, x) in crate::modules::array::eig::eigenvector(n, &m.d, *lambda)
            .into_iter()
            .enumerate()
        {
            v.set(r, c, x);
        }
    }
    let vv = mat_value(it, &v, dtype, device, flavor)?;
    Ok(Value::tuple(vec![wv, vv]))
}

fn svd_fn<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let x = one_matrix(&mut a, flavor)?;
    let full = a
        .take(1, "full_matrices")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true);
    let uv = a
        .take(2, "compute_uv")?
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true);
    a.take_kw("hermitian");
    a.take_kw("driver");
    a.finish(3)?;
    let (m, dtype, device) = matrix_arg(it, flavor, "svd", &x, false)?;
    let (u, s, v) = svd(&m);
    let sv = vec_value(it, s, dtype, device, flavor)?;
    if !uv {
        return Ok(sv);
    }
    if full && m.rows != m.cols {
        return Err(Exc::value_error(
            "svd: full_matrices=True of a non-square matrix is not supported here; pass full_matrices=False",
        ));
    }
    let uu = mat_value(it, &u, dtype, device, flavor)?;
    let vt = mat_value(it, &v.t(), dtype, device, flavor)?;
    Ok(Value::tuple(vec![uu, sv, vt]))
}

fn svdvals(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = one_matrix(&mut a, Flavor::Torch)?;
    a.finish(1)?;
    let (m, dtype, device) = matrix_arg(it, Flavor::Torch, "svdvals", &x, false)?;
    let (_, s, _) = svd(&m);
    vec_value(it, s, dtype, device, Flavor::Torch)
}

fn pinv<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let x = one_matrix(&mut a, flavor)?;
    let rcond = a.take(1, "rcond")?.and_then(|v| ops::as_f64(&v));
    a.take_kw("hermitian");
    a.take_kw("rtol");
    a.take_kw("atol");
    a.finish(2)?;
    let (m, dtype, device) = matrix_arg(it, flavor, "pinv", &x, false)?;
    let default = if flavor == Flavor::Torch {
        f64::from(f32::EPSILON) * m.rows.max(m.cols) as f64
    } else {
        1e-15
    };
    let p = pinv_of(&m, rcond.unwrap_or(default));
    mat_value(it, &p, dtype, device, flavor)
}

fn matrix_rank<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let x = one_matrix(&mut a, flavor)?;
    let tol = a.take(1, "tol")?.and_then(|v| ops::as_f64(&v));
    a.take_kw("hermitian");
    a.take_kw("atol");
    a.take_kw("rtol");
    a.finish(2)?;
    let xv = array_arg(it, flavor, "matrix_rank", "A", 1, &x)?;
    if xv.array.ndim() < 2 {
        let any = xv.array.to_host().to_f64_vec().iter().any(|v| *v != 0.0);
        let r = crate::modules::array::scalars::scalar(
            DType::Int64,
            crate::runtime::Scalar::Int(i64::from(any)),
        );
        return Ok(r);
    }
    let (m, dtype, device) = matrix_arg(it, flavor, "matrix_rank", &x, false)?;
    let (_, s, _) = svd(&m);
    let smax = s.iter().copied().fold(0.0, f64::max);
    let eps = if dtype == DType::Float32 {
        f64::from(f32::EPSILON)
    } else {
        f64::EPSILON
    };
    let tol = tol.unwrap_or(smax * m.rows.max(m.cols) as f64 * eps);
    let rank = s.iter().filter(|v| **v > tol).count() as i64;
    if flavor == Flavor::Torch {
        let rt = &it.state().rt;
        let arr = rt
            .from_host(HostData::I64(vec![rank]), &[], Device::cpu(0))?
            .copy_to(rt, device)?;
        return Ok(wrap(arr, flavor));
    }
    Ok(crate::modules::array::scalars::scalar(
        DType::Int64,
        crate::runtime::Scalar::Int(rank),
    ))
}

fn slogdet<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let x = one_matrix(&mut a, flavor)?;
    a.finish(1)?;
    let (mut m, dtype, device) = matrix_arg(it, flavor, "slogdet", &x, true)?;
    let (_, odd, sing) = lu(&mut m);
    let (sign, logdet) = if sing {
        (0.0, f64::NEG_INFINITY)
    } else {
        let mut sign = if odd { -1.0 } else { 1.0 };
        let mut logdet = 0.0;
        for i in 0..m.rows {
            let d = m.at(i, i);
            if d < 0.0 {
                sign = -sign;
            }
            logdet += d.abs().ln();
        }
        (sign, logdet)
    };
    let s = to_array(
        it,
        &Mat {
            rows: 1,
            cols: 1,
            d: vec![sign],
        },
        &[],
        dtype,
        device,
        flavor,
    )?;
    let l = to_array(
        it,
        &Mat {
            rows: 1,
            cols: 1,
            d: vec![logdet],
        },
        &[],
        dtype,
        device,
        flavor,
    )?;
    Ok(Value::tuple(vec![s, l]))
}

/// `lstsq(a, b, rcond='warn')`: (x, residuals, rank, s), by the SVD (LAPACK's `gelsd`).
fn lstsq(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = Flavor::Numpy;
    let x = a.required(0, "a")?;
    let b = a.required(1, "b")?;
    let rcond = a.take(2, "rcond")?;
    a.finish(3)?;
    let (m, dtype, device) = matrix_arg(it, flavor, "lstsq", &x, false)?;
    let bv = array_arg(it, flavor, "lstsq", "b", 2, &b)?;
    let vector = bv.array.ndim() == 1;
    if bv.array.shape().first() != Some(&m.rows) || bv.array.ndim() > 2 {
        return Err(Exc::new(ExcKind::LinAlgError, "Incompatible dimensions"));
    }
    let eps = if dtype == DType::Float32 {
        f64::from(f32::EPSILON)
    } else {
        f64::EPSILON
    };
    let rcond = match &rcond {
        None => {
            crate::modules::python::stdlib::warnings::warn(
                it,
                "FutureWarning",
                "`rcond` parameter will change to the default of machine precision times ``max(M, N)`` where M and N are the input matrix dimensions.\nTo use the future default and silence this warning we advise to pass `rcond=None`, to keep using the old, explicitly pass `rcond=-1`.",
            )?;
            eps
        }
        Some(Value::None) => eps * m.rows.max(m.cols) as f64,
        Some(v) => {
            let r = ops::as_f64(v).unwrap_or(-1.0);
            if r < 0.0 {
                eps
            } else {
                r
            }
        }
    };
    let cols = if vector { 1 } else { bv.array.shape()[1] };
    let rhs = Mat {
        rows: m.rows,
        cols,
        d: bv.array.to_host().to_f64_vec(),
    };
    let (_, s, _) = svd(&m);
    let smax = s.iter().copied().fold(0.0, f64::max);
    let rank = s.iter().filter(|v| **v > rcond * smax).count();
    let sol = pinv_of(&m, rcond).mul(&rhs);
    let resid = if rank == m.cols && m.rows > m.cols {
        let fit = m.mul(&sol);
        (0..cols)
            .map(|c| {
                (0..m.rows)
                    .map(|r| (rhs.at(r, c) - fit.at(r, c)).powi(2))
                    .sum()
            })
            .collect()
    } else {
        Vec::new()
    };
    let xs = if vector {
        vec_value(it, sol.d, dtype, device, flavor)?
    } else {
        mat_value(it, &sol, dtype, device, flavor)?
    };
    let rs = vec_value(it, resid, dtype, device, flavor)?;
    let sv = vec_value(it, s, dtype, device, flavor)?;
    let rank = crate::modules::array::scalars::scalar(
        DType::Int32,
        crate::runtime::Scalar::Int(rank as i64),
    );
    Ok(Value::tuple(vec![xs, rs, rank, sv]))
}

/// `matrix_power(a, n)`: NumPy's binary decomposition (the inverse for negative n).
fn matrix_power<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let x = a.required(0, if flavor == Flavor::Torch { "A" } else { "a" })?;
    let n = a.required(1, "n")?;
    a.finish(2)?;
    let xv = array_arg(it, flavor, "matrix_power", "A", 1, &x)?;
    let n = as_i64(&n).ok_or_else(|| Exc::type_error("exponent must be an integer"))?;
    let shape = xv.array.shape().to_vec();
    if shape.len() < 2 || shape[shape.len() - 1] != shape[shape.len() - 2] {
        return Err(match flavor {
            Flavor::Torch => Exc::new(
                ExcKind::RuntimeError,
                "linalg.matrix_power: A must be batches of square matrices",
            ),
            _ => Exc::new(
                ExcKind::LinAlgError,
                "Last 2 dimensions of the array must be square",
            ),
        });
    }
    let mut base = xv.array.clone();
    if n < 0 {
        let inv = inv_any(it, Args::new("inv", vec![Value::Array(xv.clone())]))?;
        let Value::Array(i) = &inv else {
            return Err(Exc::type_error("inv gave no array"));
        };
        base = i.array.clone();
    }
    let k = n.unsigned_abs();
    if k == 0 {
        let m = shape[shape.len() - 1];
        let eye: Vec<f64> = (0..m * m)
            .map(|p| if p / m == p % m { 1.0 } else { 0.0 })
            .collect();
        let rt = &it.state().rt;
        let e = rt.from_host(HostData::F64(eye), &[m, m], Device::cpu(0))?;
        let e = e.astype(xv.array.dtype())?.copy_to(rt, xv.array.device())?;
        return Ok(wrap(e, xv.flavor));
    }
    let tape = &mut it.state_mut().nn.tape;
    let mut z: Option<Array> = None;
    let mut acc: Option<Array> = None;
    let mut rest = k;
    while rest > 0 {
        z = Some(match z {
            None => base.clone(),
            Some(z) => tape.matmul(&z, &z)?,
        });
        let bit = rest % 2;
        rest /= 2;
        if bit == 1 {
            if let Some(zv) = &z {
                acc = Some(match acc {
                    None => zv.clone(),
                    Some(r) => tape.matmul(&r, zv)?,
                });
            }
        }
    }
    let out = acc.unwrap_or(base);
    Ok(wrap(out, xv.flavor))
}

fn inv_any(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "a")?;
    a.finish(1)?;
    let flavor = x.as_array().map_or(Flavor::Numpy, |x| x.flavor);
    let (mut m, dtype, device) = matrix_arg(it, flavor, "inv", &x, true)?;
    let (perm, _, sing) = lu(&mut m);
    if sing {
        return Err(singular(flavor, "inv"));
    }
    let x = lu_solve(&m, &perm, &Mat::eye(m.rows));
    mat_value(it, &x, dtype, device, flavor)
}

/// `multi_dot(arrays)`: the chained matrix product (1-D ends as row and column vectors).
fn multi_dot<const F: u8>(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let flavor = flavor_of::<F>();
    let seq = a.required(
        0,
        if flavor == Flavor::Torch {
            "tensors"
        } else {
            "arrays"
        },
    )?;
    a.take_kw("out");
    a.finish(1)?;
    let items = it.iterate(&seq)?;
    if items.len() < 2 {
        return Err(match flavor {
            Flavor::Torch => Exc::new(
                ExcKind::RuntimeError,
                format!(
                    "multi_dot(): expected at least 2 tensors but got {}",
                    items.len()
                ),
            ),
            _ => Exc::value_error("Expecting at least two arrays."),
        });
    }
    let mut arrays = Vec::new();
    for (k, v) in items.iter().enumerate() {
        arrays.push(array_arg(it, flavor, "multi_dot", "tensors", k + 1, v)?);
    }
    let out_flavor = arrays[0].flavor;
    let first_1d = arrays[0].array.ndim() == 1;
    let last_1d = arrays[arrays.len() - 1].array.ndim() == 1;
    let tape = &mut it.state_mut().nn.tape;
    let mut acc = arrays[0].array.clone();
    if first_1d {
        acc = tape.reshape(&acc, &[1, -1])?;
    }
    let n = arrays.len();
    for (k, x) in arrays.iter().enumerate().skip(1) {
        let mut m = x.array.clone();
        if k == n - 1 && last_1d {
            m = tape.reshape(&m, &[-1, 1])?;
        }
        let (p, q) = common(tape, &acc, &m)?;
        acc = tape.matmul(&p, &q)?;
    }
    let shape: Vec<isize> = match (first_1d, last_1d) {
        (true, true) => vec![],
        (true, false) => vec![acc.shape()[1] as isize],
        (false, true) => vec![acc.shape()[0] as isize],
        _ => isz(acc.shape()),
    };
    if first_1d || last_1d {
        acc = tape.reshape(&acc, &shape)?;
    }
    result(acc, out_flavor)
}

/// `addmm(input, mat1, mat2, *, beta=1, alpha=1)` and `baddbmm` (batches): beta * input +
/// alpha * (mat1 @ mat2), on the tape.
fn add_product(it: &mut dyn Interpreter, x: &Value, mut a: Args) -> Result<Value, Exc> {
    let fname = a.fname;
    let x = array_arg(it, Flavor::Torch, fname, "input", 1, x)?;
    let (n1, n2) = if fname.starts_with("baddbmm") {
        ("batch1", "batch2")
    } else {
        ("mat1", "mat2")
    };
    let p = a.required(0, n1)?;
    let q = a.required(1, n2)?;
    let beta = a
        .take_kw("beta")
        .and_then(|v| ops::as_f64(&v))
        .unwrap_or(1.0);
    let alpha = a
        .take_kw("alpha")
        .and_then(|v| ops::as_f64(&v))
        .unwrap_or(1.0);
    a.take_kw("out");
    a.finish(2)?;
    let p = array_arg(it, Flavor::Torch, fname, n1, 2, &p)?;
    let q = array_arg(it, Flavor::Torch, fname, n2, 3, &q)?;
    let want = if fname.starts_with("baddbmm") { 3 } else { 2 };
    if p.array.ndim() != want || q.array.ndim() != want {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "{}: Expected {want}-D tensors, but got {}-D and {}-D tensors",
                if want == 3 {
                    "batch1 and batch2"
                } else {
                    "mat1 and mat2"
                },
                p.array.ndim(),
                q.array.ndim()
            ),
        ));
    }
    let tape = &mut it.state_mut().nn.tape;
    let k = |v: f64| Operand::Scalar(crate::runtime::Scalar::Float(v));
    let mut prod = tape.matmul(&p.array, &q.array)?;
    if alpha != 1.0 {
        prod = tape.binary(BinaryOp::Mul, Operand::Array(&prod), k(alpha))?;
    }
    let out = if beta == 0.0 {
        prod
    } else {
        let base = if beta == 1.0 {
            x.array.clone()
        } else {
            tape.binary(BinaryOp::Mul, Operand::Array(&x.array), k(beta))?
        };
        tape.binary(BinaryOp::Add, Operand::Array(&base), Operand::Array(&prod))?
    };
    Ok(wrap(out, x.flavor))
}

fn add_product_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = if a.pos.is_empty() {
        a.take_kw("input").ok_or_else(|| {
            Exc::type_error(format!("{}() missing required argument 'input'", a.fname))
        })?
    } else {
        a.pos.remove(0)
    };
    add_product(it, &x, a)
}

/// NumPy's `linalg.norm(x, ord=None, axis=None, keepdims=False)`: the matrix norms ('fro',
/// 'nuc', 1, -1, 2, -2, inf, -inf) of a 2-D array (or over a pair of axes of one), here;
/// vector norms go to the shared `linalg.norm`.
fn np_norm(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    let ord = a.take(1, "ord")?;
    let axis = a.take(2, "axis")?;
    let keepdims = a.flag(3, "keepdims", false)?;
    a.finish(4)?;
    let xv = as_array(it, &x)?;
    let nd = xv.array.ndim();
    let pair = match &axis {
        None | Some(Value::None) => (nd == 2).then_some((0usize, 1usize)),
        Some(v @ (Value::Tuple(_) | Value::List(_))) => {
            let axes = axis_list(it, v, nd)?;
            match axes.as_slice() {
                [p, q] if p != q => Some((*p, *q)),
                [_, _] => return Err(Exc::value_error("Duplicate axes given.")),
                _ => None,
            }
        }
        Some(_) => None,
    };
    let ord_name = match &ord {
        Some(Value::Str(s)) => Some(s.to_string()),
        _ => None,
    };
    let ord_num = ord.as_ref().and_then(ops::as_f64);
    let matrix_ord = ord_name.is_some() || (ord_num.is_some() && pair.is_some());
    if !matrix_ord || pair.is_none() {
        if let Some(name) = &ord_name {
            return Err(Exc::value_error(format!(
                "Invalid norm order '{name}' for vectors"
            )));
        }
        let mut call = Args::new("norm", vec![Value::Array(xv)]);
        for (k, v) in [("ord", ord), ("axis", axis)] {
            if let Some(v) = v {
                call.kw.push((Rc::from(k), v));
            }
        }
        if keepdims {
            call.kw.push((Rc::from("keepdims"), Value::Bool(true)));
        }
        return super::array_more::linalg_norm(it, call);
    }
    let Some((p, q)) = pair else {
        return Err(Exc::value_error("Improper number of dimensions to norm."));
    };
    if nd != 2 {
        return Err(Exc::value_error("matrix norms over a pair of axes of an array of more than 2 dimensions are not supported here"));
    }
    let shape = xv.array.shape().to_vec();
    let data = xv.array.to_host().to_f64_vec();
    let mut m = Mat {
        rows: shape[0],
        cols: shape[1],
        d: data,
    };
    if (p, q) == (1, 0) {
        m = m.t();
    }
    let col_sums = || -> Vec<f64> {
        (0..m.cols)
            .map(|c| (0..m.rows).map(|r| m.at(r, c).abs()).sum())
            .collect()
    };
    let row_sums = || -> Vec<f64> {
        (0..m.rows)
            .map(|r| (0..m.cols).map(|c| m.at(r, c).abs()).sum())
            .collect()
    };
    let max = |v: Vec<f64>| v.into_iter().fold(f64::NEG_INFINITY, f64::max);
    let min = |v: Vec<f64>| v.into_iter().fold(f64::INFINITY, f64::min);
    let value = match (ord_name.as_deref(), ord_num) {
        (Some("fro"), _) => m.d.iter().map(|v| v * v).sum::<f64>().sqrt(),
        (Some("nuc"), _) => svd(&m).1.iter().sum(),
        (None, Some(o)) => {
            if o == 1.0 {
                max(col_sums())
            } else if o == -1.0 {
                min(col_sums())
            } else if o == f64::INFINITY {
                max(row_sums())
            } else if o == f64::NEG_INFINITY {
                min(row_sums())
            } else if o == 2.0 {
                max(svd(&m).1)
            } else if o == -2.0 {
                min(svd(&m).1)
            } else {
                return Err(Exc::value_error("Invalid norm order for matrices."));
            }
        }
        _ => return Err(Exc::value_error("Invalid norm order for matrices.")),
    };
    let out_shape: Vec<usize> = if keepdims { vec![1, 1] } else { vec![] };
    to_array(
        it,
        &Mat {
            rows: 1,
            cols: 1,
            d: vec![value],
        },
        &out_shape,
        DType::Float64,
        Device::cpu(0),
        Flavor::Numpy,
    )
}

// ------------------------------------------------------------------ installation

fn torch_trace_fn(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "input")?;
    a.finish(1)?;
    let x = array_arg(it, Flavor::Torch, "trace", "input", 1, &x)?;
    trace_torch(it, &x)
}

/// Adds the products to dialect `F`'s module and the factorisations to its `linalg`
/// (names the module already has are kept).
pub fn install<const F: u8>(m: &Module) {
    let flavor = flavor_of::<F>();
    let set = |m: &Module, name: &'static str, doc: &'static str, f: BuiltinFn| {
        if m.get(name).is_none() && !super::math_more::mxnet_lacks(flavor, name) {
            m.set(name, builtin(name, doc, f));
        }
    };
    set(
        m,
        "einsum",
        "einsum(subscripts, *operands): the Einstein summation of the operands ('ij,jk->ik').",
        einsum::<F>,
    );
    set(
        m,
        "tensordot",
        "tensordot(a, b, axes=2): the sum of products over the given axes.",
        tensordot::<F>,
    );
    set(
        m,
        "inner",
        "inner(a, b): the sum of products over the last axes.",
        inner::<F>,
    );
    set(m, "kron", "kron(a, b): the Kronecker product.", kron::<F>);
    set(
        m,
        "cross",
        "cross(a, b): the cross product of 3-vectors.",
        cross::<F>,
    );
    if flavor == Flavor::Torch {
        set(
            m,
            "outer",
            "outer(input, vec2): the outer product of two vectors.",
            outer::<F>,
        );
        set(
            m,
            "ger",
            "ger(input, vec2): the outer product of two vectors (outer's old name).",
            outer::<F>,
        );
        set(
            m,
            "vdot",
            "vdot(input, other): the dot product of two vectors.",
            vdot::<F>,
        );
        set(
            m,
            "trace",
            "trace(input): the sum of the main diagonal of a matrix.",
            torch_trace_fn,
        );
        set(
            m,
            "addmm",
            "addmm(input, mat1, mat2, *, beta=1, alpha=1): beta * input + alpha * (mat1 @ mat2).",
            add_product_fn,
        );
        set(m, "baddbmm", "baddbmm(input, batch1, batch2, *, beta=1, alpha=1): beta * input + alpha * (batch1 @ batch2), batch by batch.", add_product_fn);
        set(
            m,
            "dist",
            "dist(input, other, p=2): the p-norm of input - other.",
            dist,
        );
        set(
            m,
            "cdist",
            "cdist(x1, x2, p=2.0): the p-norm distances between the rows of x1 and of x2.",
            cdist,
        );
        set(
            m,
            "matrix_power",
            "matrix_power(input, n): the n-th power of a square matrix.",
            matrix_power::<F>,
        );
        set(
            m,
            "inverse",
            "inverse(input): the inverse of a square matrix.",
            inv_any,
        );
        set(
            m,
            "det",
            "det(input): the determinant of a square matrix.",
            inv_any_det,
        );
    } else {
        set(
            m,
            "vdot",
            "vdot(a, b): the dot product of the flattened arrays.",
            vdot::<F>,
        );
    }
    let linalg = match &m.get("linalg") {
        Some(Value::Module(l)) => l.clone(),
        _ => {
            let l = Rc::new(Module::new(&format!("{}.linalg", m.name), "linear algebra"));
            m.set("linalg", Value::Module(l.clone()));
            l
        }
    };
    let l = &*linalg;
    if flavor == Flavor::Numpy {
        l.set("norm", builtin("norm", "norm(x, ord=None, axis=None, keepdims=False): a vector norm, or a matrix norm ('fro', 'nuc', 1, -1, 2, -2, inf, -inf) of a 2-D array.", np_norm));
    }
    set(
        l,
        "solve",
        "solve(a, b): x with a @ x = b (LinAlgError when a is singular).",
        solve::<F>,
    );
    set(
        l,
        "inv",
        "inv(a): the inverse of a square matrix (LinAlgError when singular).",
        inv_any,
    );
    set(
        l,
        "cholesky",
        "cholesky(a): the lower-triangular L with L @ L.T = a.",
        cholesky::<F>,
    );
    set(
        l,
        "qr",
        "qr(a, mode='reduced'): Q with orthonormal columns and upper-triangular R, a = Q @ R.",
        qr_fn::<F>,
    );
    set(
        l,
        "eigh",
        "eigh(a, UPLO='L'): the eigenvalues (ascending) and eigenvectors of a symmetric matrix.",
        eigh_fn::<F>,
    );
    set(
        l,
        "eigvalsh",
        "eigvalsh(a, UPLO='L'): the eigenvalues (ascending) of a symmetric matrix.",
        eigvalsh::<F>,
    );
    if F == NUMPY {
        set(
            l,
            "eig",
            "eig(a): the eigenvalues and unit eigenvectors (columns) of a real square matrix with real eigenvalues.",
            |it, a| eig_general::<F>(it, a, true),
        );
        set(
            l,
            "eigvals",
            "eigvals(a): the eigenvalues of a real square matrix with real eigenvalues.",
            |it, a| eig_general::<F>(it, a, false),
        );
    }
    set(
        l,
        "svd",
        "svd(a, full_matrices=True, compute_uv=True): U, S, Vh with a = U @ diag(S) @ Vh.",
        svd_fn::<F>,
    );
    set(
        l,
        "pinv",
        "pinv(a, rcond=1e-15): the Moore-Penrose pseudo-inverse.",
        pinv::<F>,
    );
    set(
        l,
        "matrix_rank",
        "matrix_rank(A, tol=None): the number of singular values above the tolerance.",
        matrix_rank::<F>,
    );
    set(
        l,
        "slogdet",
        "slogdet(a): (sign, log|det a|).",
        slogdet::<F>,
    );
    set(
        l,
        "matrix_power",
        "matrix_power(a, n): the n-th power of a square matrix.",
        matrix_power::<F>,
    );
    set(
        l,
        "multi_dot",
        "multi_dot(arrays): the chained matrix product.",
        multi_dot::<F>,
    );
    l.set("LinAlgError", Value::ExcType(ExcKind::LinAlgError));
    if flavor == Flavor::Torch {
        set(
            l,
            "svdvals",
            "svdvals(A): the singular values, descending.",
            svdvals,
        );
        set(
            l,
            "det",
            "det(A): the determinant of a square matrix.",
            inv_any_det,
        );
        set(
            l,
            "cross",
            "cross(input, other, dim=-1): the cross product of 3-vectors.",
            cross::<F>,
        );
    } else {
        set(l, "lstsq", "lstsq(a, b, rcond='warn'): the least-squares solution, residuals, rank and singular values.", lstsq);
    }
}

/// `det(A)` for PyTorch: a 0-d tensor, through the LU factors.
fn inv_any_det(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "A")?;
    a.finish(1)?;
    let flavor = x.as_array().map_or(Flavor::Torch, |x| x.flavor);
    let (mut m, dtype, device) = matrix_arg(it, flavor, "det", &x, true)?;
    let (_, odd, sing) = lu(&mut m);
    let mut det = if sing {
        0.0
    } else if odd {
        -1.0
    } else {
        1.0
    };
    if !sing {
        for i in 0..m.rows {
            det *= m.at(i, i);
        }
    }
    to_array(
        it,
        &Mat {
            rows: 1,
            cols: 1,
            d: vec![det],
        },
        &[],
        dtype,
        device,
        flavor,
    )
}

/// The tensor methods of this file (PyTorch's), or None.
pub fn get_attr(v: &Value, name: &str) -> Option<Value> {
    let x = v.as_array()?;
    if x.flavor != Flavor::Torch {
        return None;
    }
    type M = crate::object::value::MethodFn;
    let (mname, doc, f): (&'static str, &'static str, M) = match name {
        "outer" | "ger" => (
            if name == "outer" { "outer" } else { "ger" },
            "x.outer(vec2): the outer product.",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                outer::<TORCH>(it, a)
            },
        ),
        "kron" => (
            "kron",
            "x.kron(other): the Kronecker product.",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                kron::<TORCH>(it, a)
            },
        ),
        "inner" => (
            "inner",
            "x.inner(other): the sum of products over the last axes.",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                inner::<TORCH>(it, a)
            },
        ),
        "cross" => (
            "cross",
            "x.cross(other, dim=None): the cross product of 3-vectors.",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                cross::<TORCH>(it, a)
            },
        ),
        "vdot" => ("vdot", "x.vdot(other): the dot product.", |it, r, mut a| {
            a.pos.insert(0, r.clone());
            vdot::<TORCH>(it, a)
        }),
        "trace" => (
            "trace",
            "x.trace(): the sum of the main diagonal.",
            |it, r, a| {
                a.finish(0)?;
                let x = array_arg(it, Flavor::Torch, "trace", "input", 1, r)?;
                trace_torch(it, &x)
            },
        ),
        "dist" => (
            "dist",
            "x.dist(other, p=2): the p-norm of x - other.",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                dist(it, a)
            },
        ),
        "matrix_power" => (
            "matrix_power",
            "x.matrix_power(n): the n-th power of a square matrix.",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                matrix_power::<TORCH>(it, a)
            },
        ),
        "inverse" => (
            "inverse",
            "x.inverse(): the inverse of a square matrix.",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                inv_any(it, a)
            },
        ),
        "addmm" => (
            "addmm",
            "x.addmm(mat1, mat2, *, beta=1, alpha=1): beta * x + alpha * (mat1 @ mat2).",
            add_product,
        ),
        "baddbmm" => (
            "baddbmm",
            "x.baddbmm(batch1, batch2, *, beta=1, alpha=1): beta * x + alpha * (batch1 @ batch2).",
            add_product,
        ),
        "det" => ("det", "x.det(): the determinant.", |it, r, mut a| {
            a.pos.insert(0, r.clone());
            inv_any_det(it, a)
        }),
        _ => return None,
    };
    Some(method(v, mname, doc, f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn qr_has_lapack_signs_and_reconstructs() {
        let a = Mat {
            rows: 3,
            cols: 2,
            d: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        };
        let (q, r) = qr(&a);
        // numpy: r = [[-5.91607978, -7.43735744], [0., 0.82807867]]
        assert!((r.at(0, 0) + 5.916_079_783_099_616).abs() < 1e-12);
        assert!((r.at(1, 1) - 0.828_078_671_210_825).abs() < 1e-12);
        assert!(close(&q.mul(&r).d, &a.d));
    }

    #[test]
    fn eigh_and_svd_values() {
        let a = Mat {
            rows: 2,
            cols: 2,
            d: vec![3.0, 1.0, 1.0, 2.0],
        };
        let (w, v) = eigh(&a);
        let s5 = 5f64.sqrt();
        assert!(close(&w, &[(5.0 - s5) / 2.0, (5.0 + s5) / 2.0]));
        let av = a.mul(&v);
        for c in 0..2 {
            for r in 0..2 {
                assert!((av.at(r, c) - w[c] * v.at(r, c)).abs() < 1e-12);
            }
        }
        let (u, s, vv) = svd(&Mat {
            rows: 2,
            cols: 2,
            d: vec![1.0, 2.0, 3.0, 4.0],
        });
        assert!(close(&s, &[5.464_985_704_219_043, 0.365_966_190_626_257_5]));
        let mut us = u.clone();
        for c in 0..2 {
            for r in 0..2 {
                us.set(r, c, u.at(r, c) * s[c]);
            }
        }
        assert!(close(&us.mul(&vv.t()).d, &[1.0, 2.0, 3.0, 4.0]));
    }

    #[test]
    fn lu_solves_with_partial_pivoting() {
        let mut m = Mat {
            rows: 2,
            cols: 2,
            d: vec![1.0, 2.0, 3.0, 4.0],
        };
        let (perm, odd, singular) = lu(&mut m);
        assert_eq!(
            (perm.as_slice(), odd, singular),
            (&[1usize, 0][..], true, false)
        );
        let x = lu_solve(
            &m,
            &perm,
            &Mat {
                rows: 2,
                cols: 1,
                d: vec![5.0, 6.0],
            },
        );
        assert!(close(&x.d, &[-4.0, 4.5]));
    }
}
