//! PyTorch's sorting, selection and indexing family as `torch.X` functions and `Tensor.X`
//! methods (in-place `X_` forms too), with PyTorch's signatures, `torch.return_types` results
//! and messages, over the shared compositions of `array::selection`.
use crate::modules::array::array_more::norm_axis;
use crate::modules::array::selection as sel;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::as_f64;
use crate::object::value::{Args, ArrayValue, BuiltinFn, MethodFn, Module, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{Array, DType, IndexItem, Operand, RuntimeError};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::tensor_args::{
    flag, int_arg, out, rt_err, runtime_error, size_text, tape_rt, tensor_arg, TensorMethod, T,
};

fn tensor(v: &Value) -> Result<&ArrayValue, Exc> {
    v.as_array()
        .ok_or_else(|| Exc::type_error(format!("expected a Tensor, got {}", v.type_name())))
}

/// The dim argument (`-1` when absent), checked against `ndim` in PyTorch's words.
fn dim_of(
    v: Option<Value>,
    default: i64,
    ndim: usize,
    fname: &str,
    pos: usize,
) -> Result<usize, Exc> {
    let d = match v {
        None => default,
        Some(v) => int_arg(&v, fname, "dim", pos)?,
    };
    norm_axis(d, ndim.max(1), T)
}

/// PyTorch's scalar type name of a dtype (`Float`, `Long`), as its messages print it.
fn scalar_type(d: DType) -> &'static str {
    crate::nn::autograd::torch_scalar_type(d)
}

// ------------------------------------------------------------------ torch.return_types

thread_local! {
    static RETURN_TYPES: RefCell<HashMap<&'static str, Value>> = RefCell::new(HashMap::new());
}

/// `torch.return_types.<name>(values=..., indices=...)`: a named tuple printed as PyTorch's.
pub(super) fn return_type(
    it: &mut dyn Interpreter,
    name: &'static str,
    values: Array,
    indices: Array,
) -> Result<Value, Exc> {
    let known = RETURN_TYPES.with(|m| m.borrow().get(name).cloned());
    let class = match known {
        Some(c) => c,
        None => {
            let mut a = Args::new(
                "namedtuple",
                vec![Value::str(name), Value::str("values indices")],
            );
            a.kw.push((Rc::from("module"), Value::str("torch.return_types")));
            let class = crate::modules::python::stdlib::collections::namedtuple(it, a)?;
            if let Value::Class(c) = &class {
                c.attrs
                    .borrow_mut()
                    .set_str("__repr__", builtin("__repr__", "", return_type_repr));
            }
            RETURN_TYPES.with(|m| m.borrow_mut().insert(name, class.clone()));
            class
        }
    };
    it.call_value(&class, Args::positional(vec![out(values), out(indices)]))
}

fn return_type_repr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let this = a.required(0, "self")?;
    let name = match &this {
        Value::Instance(i) => i.class().name.to_string(),
        _ => String::new(),
    };
    let values = it.get_attr(&this, "values")?;
    let indices = it.get_attr(&this, "indices")?;
    let (v, i) = (
        crate::object::format::repr(it, &values)?,
        crate::object::format::repr(it, &indices)?,
    );
    Ok(Value::str(&format!(
        "torch.return_types.{name}(\nvalues={v},\nindices={i})"
    )))
}

// ------------------------------------------------------------------ the methods

/// `x.name`'s documentation and code, or None when this file has no such method.
pub fn tensor_method(name: &str) -> Option<TensorMethod> {
    let (mname, doc, f): (&'static str, &'static str, MethodFn) = match name {
        "sort" => ("sort", "x.sort(dim=-1, descending=False, stable=False): (values, indices) sorted along dim.", sort),
        "argsort" => ("argsort", "x.argsort(dim=-1, descending=False, stable=False): the indices that sort x along dim.", argsort),
        "topk" => ("topk", "x.topk(k, dim=-1, largest=True, sorted=True): the k largest (or smallest) elements along dim, with their indices.", topk),
        "kthvalue" => ("kthvalue", "x.kthvalue(k, dim=-1, keepdim=False): the k-th smallest element along dim, with its index.", kthvalue),
        "median" => ("median", "x.median(dim=None, keepdim=False): the lower median of all elements, or (values, indices) along dim.", median),
        "gather" => ("gather", "x.gather(dim, index): out[i][j] = x[index[i][j]][j] (dim=0) and so on.", gather),
        "take_along_dim" => ("take_along_dim", "x.take_along_dim(indices, dim=None): x's elements at indices along dim (of the flattened x without dim).", take_along_dim),
        "take" => ("take", "x.take(index): the elements of the flattened x at index, shaped as index.", take),
        "index_select" => ("index_select", "x.index_select(dim, index): the slices of x at the positions of the 1-D index along dim.", index_select),
        "scatter" => ("scatter", "x.scatter(dim, index, src): a copy of x with src's elements written at index along dim (src may be a number).", |it, r, a| scatter(it, r, a, false, false)),
        "scatter_" => ("scatter_", "x.scatter_(dim, index, src): write src's elements at index along dim, in place.", |it, r, a| scatter(it, r, a, false, true)),
        "scatter_add" => ("scatter_add", "x.scatter_add(dim, index, src): a copy of x with src's elements added at index along dim.", |it, r, a| scatter(it, r, a, true, false)),
        "scatter_add_" => ("scatter_add_", "x.scatter_add_(dim, index, src): add src's elements at index along dim, in place.", |it, r, a| scatter(it, r, a, true, true)),
        "masked_fill" => ("masked_fill", "x.masked_fill(mask, value): x with value where the bool mask is True.", |it, r, a| masked_fill(it, r, a, false)),
        "masked_fill_" => ("masked_fill_", "x.masked_fill_(mask, value): set x to value where the bool mask is True, in place.", |it, r, a| masked_fill(it, r, a, true)),
        "masked_select" => ("masked_select", "x.masked_select(mask): the elements of x where the bool mask is True, as a 1-D tensor.", masked_select),
        "where" => ("where", "x.where(condition, y): x where condition holds, else y.", tensor_where),
        "flip" => ("flip", "x.flip(dims): x reversed along each of dims.", flip),
        "fliplr" => ("fliplr", "x.fliplr(): x reversed along dim 1.", |it, r, a| flip_fixed(it, r, a, 1)),
        "flipud" => ("flipud", "x.flipud(): x reversed along dim 0.", |it, r, a| flip_fixed(it, r, a, 0)),
        "roll" => ("roll", "x.roll(shifts, dims=None): x rolled by shifts along dims (the flattened x without dims).", roll),
        "tril" => ("tril", "x.tril(diagonal=0): the lower triangle of the last two dims, zeros above.", |it, r, a| tri(it, r, a, true, false)),
        "triu" => ("triu", "x.triu(diagonal=0): the upper triangle of the last two dims, zeros below.", |it, r, a| tri(it, r, a, false, false)),
        "tril_" => ("tril_", "x.tril_(diagonal=0): zero x above the diagonal, in place.", |it, r, a| tri(it, r, a, true, true)),
        "triu_" => ("triu_", "x.triu_(diagonal=0): zero x below the diagonal, in place.", |it, r, a| tri(it, r, a, false, true)),
        "narrow" => ("narrow", "x.narrow(dim, start, length): the slice start:start+length along dim.", narrow),
        "unbind" => ("unbind", "x.unbind(dim=0): the slices along dim, as a tuple.", unbind),
        "chunk" => ("chunk", "x.chunk(chunks, dim=0): at most chunks pieces of equal size along dim (the last smaller).", chunk),
        "nonzero" => ("nonzero", "x.nonzero(as_tuple=False): the indices of the nonzero elements, as an (n, x.dim()) tensor or a tuple per dim.", nonzero),
        "argwhere" => ("argwhere", "x.argwhere(): the indices of the nonzero elements, as an (n, x.dim()) tensor.", argwhere),
        "count_nonzero" => ("count_nonzero", "x.count_nonzero(dim=None): how many elements are nonzero (along dim).", count_nonzero),
        _ => return None,
    };
    Some((mname, doc, f))
}

/// A bound tensor method of this file, or None.
pub fn tensor_attr(v: &Value, name: &str) -> Option<Value> {
    let Some((mname, doc, f)) = tensor_method(name) else {
        return super::reshaping::tensor_attr(v, name);
    };
    Some(method(v, mname, doc, f))
}

/// The functions of `torch` this file adds: each the method on its first argument `input`.
pub fn install(m: &Module) {
    const FUNCTIONS: [&str; 26] = [
        "nonzero",
        "argwhere",
        "count_nonzero",
        "sort",
        "argsort",
        "topk",
        "kthvalue",
        "median",
        "gather",
        "take_along_dim",
        "take",
        "index_select",
        "scatter",
        "scatter_add",
        "masked_fill",
        "masked_select",
        "flip",
        "fliplr",
        "flipud",
        "roll",
        "tril",
        "triu",
        "narrow",
        "unbind",
        "chunk",
        "where",
    ];
    for name in FUNCTIONS {
        let Some((fname, doc, _)) = tensor_method(name) else {
            continue;
        };
        let f: BuiltinFn = match fname {
            "where" => torch_where,
            _ => function_form,
        };
        m.set(fname, builtin_named(fname, doc, f));
    }
}

fn builtin_named(name: &'static str, doc: &'static str, f: BuiltinFn) -> Value {
    builtin(name, doc, f)
}

/// `torch.name(input, ...)`: the method on `input`.
fn function_form(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    super::tensor_args::function_form(it, a, tensor_method)
}

// ------------------------------------------------------------------ sorting

fn sort_args(r: &Value, a: &mut Args) -> Result<(Array, usize, bool), Exc> {
    let x = tensor(r)?.array.clone();
    let mut dim = a.take(0, "dim")?;
    let mut descending = a.take(1, "descending")?;
    // `sort(stable, *, dim, descending)`: a bool first is `stable`.
    if let Some(Value::Bool(_)) = dim {
        dim = a.take_kw("dim");
        descending = descending.or_else(|| a.take_kw("descending"));
    }
    a.take_kw("stable");
    a.finish(2)?;
    let dim = dim_of(
        dim.filter(|v| !matches!(v, Value::None)),
        -1,
        x.ndim(),
        a.fname,
        1,
    )?;
    Ok((x, dim, flag(descending, false)?))
}

fn sort(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let (x, dim, descending) = sort_args(r, &mut a)?;
    let (tape, _) = tape_rt(it);
    let (values, indices) = sel::sort(tape, &x, dim as isize, descending).map_err(rt_err)?;
    tape.rename(&values, "SortBackward0");
    return_type(it, "sort", values, indices)
}

fn argsort(_it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let (x, dim, descending) = sort_args(r, &mut a)?;
    Ok(out(x
        .sort_positions(dim as isize, descending)
        .map_err(rt_err)?))
}

fn topk(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let k = a.required(0, "k")?;
    let k = int_arg(&k, "topk", "k", 1)?;
    let dim = a.take(1, "dim")?;
    let largest = flag(a.take(2, "largest")?, true)?;
    a.take(3, "sorted")?;
    a.finish(4)?;
    let dim = dim_of(dim, -1, x.ndim(), "topk", 2)?;
    let len = x.shape().get(dim).copied().unwrap_or(1) as i64;
    if k < 0 || k > len {
        return Err(runtime_error("selected index k out of range"));
    }
    let (tape, _) = tape_rt(it);
    let (values, indices) = if x.ndim() == 0 {
        // A 0-d tensor is one lane of one element, and stays 0-d.
        let lane = tape.reshape(&x, &[1]).map_err(rt_err)?;
        let (v, i) = sel::topk(tape, &lane, k as usize, 0, largest).map_err(rt_err)?;
        let shape: &[isize] = if k == 1 { &[] } else { &[0] };
        (
            tape.reshape(&v, shape).map_err(rt_err)?,
            i.reshape(shape).map_err(rt_err)?,
        )
    } else {
        sel::topk(tape, &x, k as usize, dim, largest).map_err(rt_err)?
    };
    tape.rename(&values, "TopkBackward0");
    return_type(it, "topk", values, indices)
}

fn kthvalue(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let k = a.required(0, "k")?;
    let k = int_arg(&k, "kthvalue", "k", 1)?;
    let dim = a.take(1, "dim")?;
    let keepdim = flag(a.take(2, "keepdim")?, false)?;
    a.finish(3)?;
    let dim = dim_of(dim, -1, x.ndim(), "kthvalue", 2)?;
    let len = x.shape().get(dim).copied().unwrap_or(1) as i64;
    if k < 1 || k > len {
        return Err(runtime_error(format!(
            "kthvalue(): selected number k out of range for dimension {dim}"
        )));
    }
    let (tape, _) = tape_rt(it);
    let (values, indices) = if x.ndim() == 0 {
        let lane = tape.reshape(&x, &[1]).map_err(rt_err)?;
        sel::kth(tape, &lane, 0, 0, false).map_err(rt_err)?
    } else {
        sel::kth(tape, &x, (k - 1) as usize, dim, keepdim).map_err(rt_err)?
    };
    tape.rename(&values, "KthvalueBackward0");
    return_type(it, "kthvalue", values, indices)
}

fn median(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let dim = a.take(0, "dim")?.filter(|v| !matches!(v, Value::None));
    let keepdim = flag(a.take(1, "keepdim")?, false)?;
    a.finish(2)?;
    let Some(dim) = dim else {
        if x.size() == 0 {
            let (_, rt) = tape_rt(it);
            return Ok(out(rt
                .full(&[], f64::NAN, x.dtype(), x.device())
                .map_err(rt_err)?));
        }
        let (tape, _) = tape_rt(it);
        let flat = tape.reshape(&x, &[-1]).map_err(rt_err)?;
        let rank = (x.size() - 1) / 2;
        let (values, _) = sel::kth(tape, &flat, rank, 0, false).map_err(rt_err)?;
        tape.rename(&values, "MedianBackward0");
        return Ok(out(values));
    };
    let dim = dim_of(Some(dim), -1, x.ndim(), "median", 1)?;
    let len = x.shape().get(dim).copied().unwrap_or(1);
    if len == 0 {
        return Err(Exc::new(
            ExcKind::IndexError,
            format!("median(): Expected reduction dim {dim} to have non-zero size."),
        ));
    }
    let (tape, _) = tape_rt(it);
    let (values, indices) =
        sel::kth(tape, &x, (len - 1) / 2, dim, keepdim && x.ndim() > 0).map_err(rt_err)?;
    tape.rename(&values, "MedianBackward1");
    return_type(it, "median", values, indices)
}

// ------------------------------------------------------------------ gathers

/// An index tensor argument: int64 (PyTorch's gather and scatter take no other).
fn index_tensor<'a>(v: &'a Value, fname: &str, pos: usize) -> Result<&'a Array, Exc> {
    let index = tensor_arg(v, fname, "index", pos)?;
    if !matches!(index.dtype(), DType::Int64 | DType::Int32) {
        return Err(runtime_error(format!(
            "{fname}(): Expected dtype int32/int64 for index"
        )));
    }
    Ok(index)
}

/// Every position of `index` lies in 0..len (PyTorch counts no negative positions here).
fn check_index(index: &Array, len: usize, dim: usize) -> Result<(), Exc> {
    let host = index.try_to_host().map_err(rt_err)?;
    for v in host.to_f64_vec() {
        let i = v as i64;
        if i < 0 || i >= len as i64 {
            return Err(runtime_error(format!(
                "index {i} is out of bounds for dimension {dim} with size {len}"
            )));
        }
    }
    Ok(())
}

/// PyTorch's shape rule for gather/scatter: the index has the input's rank and no larger a
/// size than `bound` on any other dim.
fn check_index_shape(
    index: &Array,
    x: &Array,
    dim: usize,
    fname: &str,
    bound: Option<(&Array, &str)>,
) -> Result<(), Exc> {
    if index.ndim() != x.ndim().max(1) && !(index.ndim() <= 1 && x.ndim() <= 1) {
        return Err(runtime_error(
            "Index tensor must have the same number of dimensions as input tensor",
        ));
    }
    for d in 0..index.ndim().min(x.ndim()) {
        if d != dim && index.shape()[d] > x.shape()[d] {
            return Err(runtime_error(format!(
                "Size does not match at dimension {d} expected index {} to be smaller than self {} apart from dimension {dim}",
                size_text(index.shape()),
                size_text(x.shape()),
            )));
        }
        if let Some((src, what)) = bound {
            if index.shape()[d] > src.shape().get(d).copied().unwrap_or(0) {
                return Err(runtime_error(format!(
                    "Size does not match at dimension {d} expected index {} to be smaller than self {} apart from dimension {dim} and to be smaller size than {what} {}",
                    size_text(index.shape()),
                    size_text(x.shape()),
                    size_text(src.shape()),
                )));
            }
        }
    }
    let _ = fname;
    Ok(())
}

fn gather(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let dim = a.required(0, "dim")?;
    let index = a.required(1, "index")?;
    a.take_kw("sparse_grad");
    a.finish(2)?;
    let dim = dim_of(Some(dim), 0, x.ndim(), "gather", 2)?;
    let index = index_tensor(&index, "gather", 3)?.clone();
    check_index_shape(&index, &x, dim, "gather", None)?;
    check_index(&index, x.shape().get(dim).copied().unwrap_or(1), dim)?;
    let (tape, _) = tape_rt(it);
    let y = sel::gather(tape, &x, dim, &index).map_err(rt_err)?;
    tape.rename(&y, "GatherBackward0");
    Ok(out(y))
}

fn take_along_dim(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let index = a.required(0, "indices")?;
    let dim = a.take(1, "dim")?.filter(|v| !matches!(v, Value::None));
    a.finish(2)?;
    let index = tensor_arg(&index, "take_along_dim", "indices", 2)?.clone();
    if index.dtype() != DType::Int64 {
        return Err(runtime_error(format!(
            "torch.take_along_dim(): dtype of indices should be Long but got {}",
            scalar_type(index.dtype())
        )));
    }
    let (source, index, dim) = match dim {
        None => (
            x.reshape(&[-1]).map_err(rt_err)?,
            index.reshape(&[-1]).map_err(rt_err)?,
            0,
        ),
        Some(d) => {
            let dim = dim_of(Some(d), 0, x.ndim(), "take_along_dim", 3)?;
            if index.ndim() != x.ndim() {
                return Err(runtime_error(format!(
                    "torch.take_along_dim(): input and indices should have the same number of dimensions, but got {} dimensions for input, and {} dimensions for indices",
                    x.ndim(),
                    index.ndim()
                )));
            }
            // Broadcast the two apart from dim.
            let mut xs = x.shape().to_vec();
            let mut is = index.shape().to_vec();
            xs[dim] = 1;
            is[dim] = 1;
            let common = crate::runtime::shape::broadcast_shapes(&xs, &is).map_err(rt_err)?;
            let mut xt = common.clone();
            xt[dim] = x.shape()[dim];
            let mut it_shape = common;
            it_shape[dim] = index.shape()[dim];
            let (tape, rt) = tape_rt(it);
            let xb = sel::broadcast(tape, rt, &x, &xt).map_err(rt_err)?;
            let ib = sel::broadcast(tape, rt, &index, &it_shape).map_err(rt_err)?;
            (xb, ib, dim)
        }
    };
    check_index(&index, source.shape().get(dim).copied().unwrap_or(1), dim)?;
    let (tape, _) = tape_rt(it);
    let y = tape
        .take_along(&source, &index, dim as isize, false)
        .map_err(rt_err)?;
    tape.rename(&y, "TakeAlongDimBackward0");
    Ok(out(y))
}

fn take(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let index = a.required(0, "index")?;
    a.finish(1)?;
    let index = tensor_arg(&index, "take", "index", 2)?.clone();
    if index.dtype() != DType::Int64 {
        return Err(runtime_error(
            "take(): Expected a long tensor for index, but got ".to_string()
                + scalar_type(index.dtype()),
        ));
    }
    let n = x.size() as i64;
    let host = index.try_to_host().map_err(rt_err)?;
    for v in host.to_f64_vec() {
        let i = v as i64;
        if i < -n || i >= n {
            return Err(Exc::new(
                ExcKind::IndexError,
                format!("out of range: tried to access index {i} on a tensor of {n} elements."),
            ));
        }
    }
    let (tape, _) = tape_rt(it);
    let flat = tape.reshape(&x, &[-1]).map_err(rt_err)?;
    let positions = index.reshape(&[-1]).map_err(rt_err)?;
    let picked = tape
        .take_along(&flat, &positions, 0, false)
        .map_err(rt_err)?;
    let shape: Vec<isize> = index.shape().iter().map(|&d| d as isize).collect();
    let y = tape.reshape(&picked, &shape).map_err(rt_err)?;
    tape.rename(&y, "TakeBackward0");
    Ok(out(y))
}

fn index_select(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let dim = a.required(0, "dim")?;
    let index = a.required(1, "index")?;
    a.finish(2)?;
    let dim = dim_of(Some(dim), 0, x.ndim(), "index_select", 2)?;
    let index = tensor_arg(&index, "index_select", "index", 3)?.clone();
    if !matches!(index.dtype(), DType::Int64 | DType::Int32) {
        return Err(runtime_error(
            "index_select(): Expected dtype int32 or int64 for index",
        ));
    }
    if index.ndim() > 1 {
        return Err(Exc::new(
            ExcKind::IndexError,
            "index_select(): Index is supposed to be a vector",
        ));
    }
    let len = x.shape().get(dim).copied().unwrap_or(1) as i64;
    for v in index.try_to_host().map_err(rt_err)?.to_f64_vec() {
        if v < 0.0 || v as i64 >= len {
            return Err(runtime_error(format!(
                "INDICES element is out of DATA bounds, id={} axis_dim={len}",
                v as i64
            )));
        }
    }
    let (tape, rt) = tape_rt(it);
    let y = if x.ndim() == 0 {
        x.clone()
    } else {
        sel::index_select(tape, rt, &x, dim, &index).map_err(rt_err)?
    };
    tape.rename(&y, "IndexSelectBackward0");
    Ok(out(y))
}

fn scatter(
    it: &mut dyn Interpreter,
    r: &Value,
    mut a: Args,
    add: bool,
    in_place: bool,
) -> Result<Value, Exc> {
    let fname = a.fname;
    let x = tensor(r)?.array.clone();
    let dim = a.required(0, "dim")?;
    let index = a.required(1, "index")?;
    let src = match a.take(2, "src")? {
        Some(v) => v,
        None => a.take_kw("value").ok_or_else(|| {
            Exc::type_error(format!(
                "{fname}() missing 1 required positional argument: \"src\""
            ))
        })?,
    };
    if let Some(reduce) = a.take_kw("reduce") {
        if !matches!(reduce, Value::None) {
            return Err(Exc::new(
                ExcKind::NotImplementedError,
                format!("{fname}(reduce=...): devarray supports scatter without reduce, and scatter_add"),
            ));
        }
    }
    a.finish(3)?;
    let dim = dim_of(Some(dim), 0, x.ndim(), fname, 1)?;
    let index = index_tensor(&index, fname.trim_end_matches('_'), 2)?.clone();
    let src = match &src {
        Value::Array(s) => {
            if s.array.dtype() != x.dtype() {
                return Err(runtime_error(format!(
                    "{}(): Expected self.dtype to be equal to src.dtype",
                    fname.trim_end_matches('_')
                )));
            }
            check_index_shape(&index, &x, dim, fname, Some((&s.array, "src")))?;
            // Only the index's extent of src is read.
            let items: Vec<IndexItem> = index
                .shape()
                .iter()
                .map(|&d| IndexItem::Slice {
                    start: None,
                    stop: Some(d as i64),
                    step: None,
                })
                .collect();
            s.array.index(&items).map_err(rt_err)?
        }
        other if !add => {
            check_index_shape(&index, &x, dim, fname, None)?;
            let v = as_f64(other).ok_or_else(|| {
                Exc::type_error(format!(
                    "{fname}() received an invalid combination of arguments - got (int, Tensor, {})",
                    other.type_name()
                ))
            })?;
            it.state()
                .rt
                .full(index.shape(), v, x.dtype(), x.device())
                .map_err(rt_err)?
        }
        other => {
            return Err(Exc::type_error(format!(
                "{fname}(): argument 'src' (position 3) must be Tensor, not {}",
                other.type_name()
            )))
        }
    };
    // The index may be smaller than x on the other dims: scatter into that corner of x.
    let len = x.shape().get(dim).copied().unwrap_or(1);
    check_index(&index, len, dim)?;
    let corner: Vec<IndexItem> = (0..x.ndim())
        .map(|d| IndexItem::Slice {
            start: None,
            stop: (d != dim).then(|| index.shape().get(d).copied().unwrap_or(1) as i64),
            step: None,
        })
        .collect();
    let whole = (0..x.ndim()).all(|d| d == dim || index.shape().get(d) == x.shape().get(d));
    let write = move |target: &Array| -> Result<(), RuntimeError> {
        if whole {
            target.scatter_along_axis(&index, &src, dim as isize, add)
        } else {
            let part = target.index(&corner)?;
            part.scatter_along_axis(&index, &src, dim as isize, add)?;
            target.set_index(&corner, Operand::Array(&part))
        }
    };
    if in_place {
        let x_val = r.clone();
        super::autograd::inplace_value(it, &x_val, &[], move |_tape, _rt, current| {
            let copy = current.astype(current.dtype())?;
            write(&copy)?;
            Ok(copy)
        })
    } else {
        let copy = x.astype(x.dtype()).map_err(rt_err)?;
        write(&copy).map_err(rt_err)?;
        Ok(out(copy))
    }
}

// ------------------------------------------------------------------ masks and where

fn bool_mask<'a>(v: &'a Value, fname: &str) -> Result<&'a Array, Exc> {
    let mask = tensor_arg(v, fname, "mask", 1)?;
    if mask.dtype() != DType::Bool {
        return Err(runtime_error(format!(
            "{fname} only supports boolean masks, but got mask with dtype {}",
            match mask.dtype() {
                DType::Float32 => "float",
                DType::Float64 => "double",
                DType::Int32 => "int",
                DType::Int64 => "long int",
                DType::Bool => "bool",
                DType::Float16 => "c10::Half",
                DType::BFloat16 => "c10::BFloat16",
                DType::Int8 => "signed char",
                DType::Int16 => "short int",
                DType::UInt8 => "unsigned char",
                DType::UInt16 => "unsigned short",
                DType::UInt32 => "unsigned int",
                DType::UInt64 => "unsigned long",
            }
        )));
    }
    Ok(mask)
}

fn masked_fill(
    it: &mut dyn Interpreter,
    r: &Value,
    mut a: Args,
    in_place: bool,
) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let mask = a.required(0, "mask")?;
    let value = a.required(1, "value")?;
    a.finish(2)?;
    let mask = bool_mask(&mask, "masked_fill_")?.clone();
    let fill = match &value {
        Value::Array(v) if v.array.ndim() == 0 => v.array.to_scalar("masked_fill")?.as_f64(),
        Value::Array(v) => {
            return Err(runtime_error(format!(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                v.array.ndim()
            )))
        }
        other => as_f64(other).ok_or_else(|| {
            Exc::type_error(format!(
                "masked_fill() received an invalid combination of arguments - got (Tensor, {})",
                other.type_name()
            ))
        })?,
    };
    if in_place {
        let shape =
            crate::runtime::shape::broadcast_shapes(x.shape(), mask.shape()).map_err(rt_err)?;
        if shape != x.shape() {
            return Err(runtime_error(format!(
                "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension 0",
                x.shape().first().copied().unwrap_or(1),
                mask.shape().first().copied().unwrap_or(1)
            )));
        }
        return super::autograd::inplace_value(it, r, &[], move |tape, rt, current| {
            fill_where(tape, rt, current, &mask, fill)
        });
    }
    let (tape, rt) = tape_rt(it);
    let y = fill_where(tape, rt, &x, &mask, fill).map_err(rt_err)?;
    tape.rename(&y, "MaskedFillBackward0");
    Ok(out(y))
}

/// `x` with `fill` where `mask` holds (broadcast together).
fn fill_where(
    tape: &mut crate::nn::autograd::Tape,
    rt: &crate::runtime::Runtime,
    x: &Array,
    mask: &Array,
    fill: f64,
) -> Result<Array, RuntimeError> {
    let value = rt.full(&[], fill, x.dtype(), x.device())?;
    sel::select_where(tape, rt, mask, &value, x)
}

fn masked_select(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let mask = a.required(0, "mask")?;
    a.finish(1)?;
    let mask = bool_mask(&mask, "masked_select")?.clone();
    let shape = crate::runtime::shape::broadcast_shapes(x.shape(), mask.shape()).map_err(rt_err)?;
    let (tape, rt) = tape_rt(it);
    let xb = sel::broadcast(tape, rt, &x, &shape).map_err(rt_err)?;
    let mb = sel::broadcast(tape, rt, &mask, &shape).map_err(rt_err)?;
    let flat = tape.reshape(&xb, &[-1]).map_err(rt_err)?;
    let m = mb.reshape(&[-1]).map_err(rt_err)?;
    let y = tape.index(&flat, &[IndexItem::Array(m)]).map_err(rt_err)?;
    tape.rename(&y, "MaskedSelectBackward0");
    Ok(out(y))
}

/// An operand of `where`: a tensor, or a number as a 0-d tensor of `like`'s kind.
fn choice(
    it: &mut dyn Interpreter,
    v: &Value,
    like: Option<&Array>,
    device: crate::runtime::Device,
) -> Result<Array, Exc> {
    match v {
        Value::Array(a) => Ok(a.array.clone()),
        Value::Bool(b) => {
            Ok(it
                .state()
                .rt
                .full(&[], f64::from(u8::from(*b)), DType::Bool, device)?)
        }
        other => {
            let f = as_f64(other).ok_or_else(|| {
                Exc::type_error(format!(
                    "where(): argument 'input' must be Tensor, not {}",
                    other.type_name()
                ))
            })?;
            let is_int = matches!(other, Value::Int(_));
            let dtype = match like.map(Array::dtype) {
                Some(d) if d.is_float() => d,
                Some(d) if is_int && d != DType::Bool => d,
                _ if is_int => DType::Int64,
                _ => DType::Float32,
            };
            Ok(it.state().rt.full(&[], f, dtype, device)?)
        }
    }
}

fn where_of(it: &mut dyn Interpreter, cond: &Value, x: &Value, y: &Value) -> Result<Value, Exc> {
    let cond = tensor_arg(cond, "where", "condition", 1)?.clone();
    if cond.dtype() != DType::Bool {
        return Err(runtime_error(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            scalar_type(cond.dtype())
        )));
    }
    let device = cond.device();
    let xa = x.as_array().map(|a| a.array.clone());
    let ya = y.as_array().map(|a| a.array.clone());
    let xv = choice(it, x, ya.as_ref(), device)?;
    let yv = choice(it, y, xa.as_ref(), device)?;
    let dtype = promote(xv.dtype(), yv.dtype());
    let (tape, rt) = tape_rt(it);
    let xv = if xv.dtype() == dtype {
        xv
    } else {
        tape.astype(&xv, dtype).map_err(rt_err)?
    };
    let yv = if yv.dtype() == dtype {
        yv
    } else {
        tape.astype(&yv, dtype).map_err(rt_err)?
    };
    let z = sel::select_where(tape, rt, &cond, &xv, &yv).map_err(rt_err)?;
    tape.rename(&z, "WhereBackward0");
    Ok(out(z))
}

fn promote(a: DType, b: DType) -> DType {
    a.promote(b)
}

/// `torch.where(condition, input, other)`, or `torch.where(condition)` (`nonzero` as a tuple).
fn torch_where(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let cond = a.required(0, "condition")?;
    let x = a.take(1, "input")?;
    let y = a.take(2, "other")?;
    a.finish(3)?;
    match (x, y) {
        (Some(x), Some(y)) => where_of(it, &cond, &x, &y),
        (None, None) => {
            let c = tensor_arg(&cond, "where", "condition", 1)?.clone();
            let nonzero = it.get_attr(&out(c), "nonzero")?;
            let mut call = Args::new("nonzero", vec![]);
            call.kw.push((Rc::from("as_tuple"), Value::Bool(true)));
            it.call_value(&nonzero, call)
        }
        _ => Err(Exc::type_error(
            "where() received an invalid combination of arguments - got (Tensor, Tensor), but expected (Tensor condition, Tensor input, Tensor other)",
        )),
    }
}

fn tensor_where(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let cond = a.required(0, "condition")?;
    let y = a.required(1, "other")?;
    a.finish(2)?;
    where_of(it, &cond, r, &y)
}

// ------------------------------------------------------------------ flips, rolls, triangles

fn dims_list(v: &Value, fname: &str, pos: usize) -> Result<Vec<i64>, Exc> {
    match v {
        Value::List(l) => l
            .borrow()
            .iter()
            .map(|d| int_arg(d, fname, "dims", pos))
            .collect(),
        Value::Tuple(t) => t.iter().map(|d| int_arg(d, fname, "dims", pos)).collect(),
        other => Ok(vec![int_arg(other, fname, "dims", pos)?]),
    }
}

fn flip(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let dims = if a.pos.len() > 1 {
        let all: Vec<Value> = std::mem::take(&mut a.pos);
        all.iter()
            .map(|d| int_arg(d, "flip", "dims", 1))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        let d = a.required(0, "dims")?;
        a.finish(1)?;
        dims_list(&d, "flip", 1)?
    };
    let mut axes = Vec::new();
    for d in dims {
        let ax = norm_axis(d, x.ndim(), T)?;
        if axes.contains(&ax) {
            return Err(runtime_error(format!(
                "dim {ax} appears multiple times in the list of dims"
            )));
        }
        axes.push(ax);
    }
    let (tape, _) = tape_rt(it);
    let y = sel::flip(tape, &x, &axes).map_err(rt_err)?;
    tape.rename(&y, "FlipBackward0");
    Ok(out(y))
}

fn flip_fixed(it: &mut dyn Interpreter, r: &Value, a: Args, dim: usize) -> Result<Value, Exc> {
    a.finish(0)?;
    let x = tensor(r)?.array.clone();
    if x.ndim() < dim + 1 {
        let (name, need) = if dim == 1 {
            ("fliplr", 2)
        } else {
            ("flipud", 1)
        };
        let _ = name;
        return Err(runtime_error(format!("Input must be >= {need}-d.")));
    }
    let (tape, _) = tape_rt(it);
    let y = sel::flip(tape, &x, &[dim]).map_err(rt_err)?;
    tape.rename(&y, "FlipBackward0");
    Ok(out(y))
}

fn roll(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let shifts = a.required(0, "shifts")?;
    let dims = a.take(1, "dims")?.filter(|v| !matches!(v, Value::None));
    a.finish(2)?;
    let shifts = dims_list(&shifts, "roll", 1)?;
    let (tape, _) = tape_rt(it);
    let Some(dims) = dims else {
        if shifts.len() != 1 {
            return Err(runtime_error(format!(
                "shifts and dimensions must align. shifts: {}, dims:0",
                shifts.len()
            )));
        }
        let shape: Vec<isize> = x.shape().iter().map(|&d| d as isize).collect();
        let flat = tape.reshape(&x, &[-1]).map_err(rt_err)?;
        let rolled = sel::roll(tape, &flat, shifts[0], 0).map_err(rt_err)?;
        let y = tape.reshape(&rolled, &shape).map_err(rt_err)?;
        tape.rename(&y, "RollBackward0");
        return Ok(out(y));
    };
    let dims = dims_list(&dims, "roll", 2)?;
    if dims.len() != shifts.len() {
        return Err(runtime_error(format!(
            "shifts and dimensions must align. shifts: {}, dims:{}",
            shifts.len(),
            dims.len()
        )));
    }
    let mut y = x.clone();
    for (s, d) in shifts.iter().zip(&dims) {
        let ax = norm_axis(*d, x.ndim(), T)?;
        y = sel::roll(tape, &y, *s, ax).map_err(rt_err)?;
    }
    tape.rename(&y, "RollBackward0");
    Ok(out(y))
}

fn tri(
    it: &mut dyn Interpreter,
    r: &Value,
    mut a: Args,
    lower: bool,
    in_place: bool,
) -> Result<Value, Exc> {
    let fname = a.fname;
    let x = tensor(r)?.array.clone();
    let k = match a.take(0, "diagonal")? {
        None => 0,
        Some(v) => int_arg(&v, fname, "diagonal", 1)?,
    };
    a.finish(1)?;
    if x.ndim() < 2 {
        return Err(runtime_error(format!(
            "{}: input tensor must have at least 2 dimensions",
            fname.trim_end_matches('_')
        )));
    }
    if in_place {
        return super::autograd::inplace_value(it, r, &[], move |tape, rt, current| {
            sel::tri(tape, rt, current, k, lower)
        });
    }
    let (tape, rt) = tape_rt(it);
    let y = sel::tri(tape, rt, &x, k, lower).map_err(rt_err)?;
    tape.rename(
        &y,
        if lower {
            "TrilBackward0"
        } else {
            "TriuBackward0"
        },
    );
    Ok(out(y))
}

// ------------------------------------------------------------------ pieces

fn narrow(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let dim = a.required(0, "dim")?;
    let start = a.required(1, "start")?;
    let length = a.required(2, "length")?;
    a.finish(3)?;
    if x.ndim() == 0 {
        return Err(runtime_error(
            "narrow() cannot be applied to a 0-dim tensor.",
        ));
    }
    let dim = dim_of(Some(dim), 0, x.ndim(), "narrow", 1)?;
    let len = x.shape()[dim] as i64;
    let mut start = int_arg(&start, "narrow", "start", 2)?;
    let length = int_arg(&length, "narrow", "length", 3)?;
    if start < -len || start > len {
        return Err(Exc::new(
            ExcKind::IndexError,
            format!(
                "start out of range (expected to be in range of [{}, {len}], but got {start})",
                -len
            ),
        ));
    }
    if start < 0 {
        start += len;
    }
    if length < 0 || start > len - length {
        return Err(runtime_error(format!(
            "start ({start}) + length ({length}) exceeds dimension size ({len})."
        )));
    }
    let (tape, _) = tape_rt(it);
    let y = tape
        .index(&x, &sel::axis_slice(dim, start, start + length))
        .map_err(rt_err)?;
    Ok(out(y))
}

fn unbind(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let dim = a.take(0, "dim")?;
    a.finish(1)?;
    if x.ndim() == 0 {
        return Err(Exc::new(
            ExcKind::IndexError,
            "Dimension specified as 0 but tensor has no dimensions",
        ));
    }
    let dim = dim_of(dim, 0, x.ndim(), "unbind", 1)?;
    let (tape, _) = tape_rt(it);
    let mut parts = Vec::new();
    for i in 0..x.shape()[dim] {
        let mut items = sel::axis_slice(dim, 0, 0);
        items.pop();
        items.push(IndexItem::Int(i as i64));
        let y = tape.index(&x, &items).map_err(rt_err)?;
        tape.rename(&y, "UnbindBackward0");
        parts.push(out(y));
    }
    Ok(Value::tuple(parts))
}

fn chunk(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let chunks = a.required(0, "chunks")?;
    let dim = a.take(1, "dim")?;
    a.finish(2)?;
    let chunks = int_arg(&chunks, "chunk", "chunks", 1)?;
    if x.ndim() == 0 {
        return Err(runtime_error(
            "chunk expects at least a 1-dimensional tensor",
        ));
    }
    if chunks <= 0 {
        return Err(runtime_error(format!(
            "chunk expects `chunks` to be greater than 0, got: {chunks}"
        )));
    }
    let dim = dim_of(dim, 0, x.ndim(), "chunk", 2)?;
    let len = x.shape()[dim] as i64;
    let size = ((len + chunks - 1) / chunks).max(1);
    let (tape, _) = tape_rt(it);
    let mut parts = Vec::new();
    let mut start = 0;
    while start < len || (len == 0 && parts.is_empty()) {
        let stop = (start + size).min(len);
        let y = tape
            .index(&x, &sel::axis_slice(dim, start, stop))
            .map_err(rt_err)?;
        tape.rename(&y, "SplitBackward0");
        parts.push(out(y));
        start += size;
        if len == 0 {
            break;
        }
    }
    Ok(Value::tuple(parts))
}

// ------------------------------------------------------------------ nonzero

fn nonzero(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let as_tuple = flag(a.take_kw("as_tuple"), false)?;
    a.finish(0)?;
    let rt = &it.state().rt;
    if as_tuple {
        let parts = sel::nonzero_per_axis(rt, &x).map_err(rt_err)?;
        return Ok(Value::tuple(parts.into_iter().map(out).collect()));
    }
    Ok(out(sel::nonzero_coords(rt, &x).map_err(rt_err)?))
}

fn argwhere(it: &mut dyn Interpreter, r: &Value, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let x = tensor(r)?.array.clone();
    Ok(out(sel::nonzero_coords(&it.state().rt, &x).map_err(rt_err)?))
}

fn count_nonzero(_it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = tensor(r)?.array.clone();
    let dim = a.take(0, "dim")?.filter(|v| !matches!(v, Value::None));
    a.finish(1)?;
    let axes = match &dim {
        None => None,
        Some(d) => Some(
            dims_list(d, "count_nonzero", 1)?
                .into_iter()
                .map(|d| norm_axis(d, x.ndim(), T).map(|a| a as isize))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let nonzero = Array::binary(
        crate::runtime::BinaryOp::Ne,
        Operand::Array(&x),
        Operand::Scalar(crate::runtime::Scalar::Int(0)),
    )
    .and_then(|m| m.astype(DType::Int64))
    .map_err(rt_err)?;
    let counted = nonzero
        .reduce(crate::runtime::ReduceOp::Sum, axes.as_deref(), false)
        .map_err(rt_err)?;
    Ok(out(counted))
}
