//! PyTorch names composed from the tape's ops: `torch.t`/`Tensor.t`, `torch.diff`/`Tensor.diff`,
//! `Tensor.unfold` (windows along a dim, one gather), `Tensor.softmax`, `Tensor.type_as`,
//! `Tensor.is_contiguous`, the type `torch.dtype`, and `torch.backends` (flags programs set,
//! e.g. `torch.backends.cudnn.benchmark = True`; there is no cuDNN or MPS here).
use std::rc::Rc;

use super::tensor_args::{
    function_form, install_forms, int_arg, out, rt_err, runtime_error, tape_rt, tensor_arg,
    TensorMethod,
};
use crate::modules::array::array_more::norm_axis;
use crate::modules::array::selection::axis_slice;
use crate::object::error::Exc;
use crate::object::value::{Args, Module, TypeKind, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::{BinaryOp, DType, Device, HostData, IndexItem, Operand};

use super::tensor_args::T;

/// `x.name`'s documentation and code, or None when this file has no such method.
pub fn tensor_method(name: &str) -> Option<TensorMethod> {
    let (mname, doc, f): TensorMethod = match name {
        "t" => ("t", "x.t(): a 2-D x transposed (0-D and 1-D x as it is).", t),
        "diff" => ("diff", "x.diff(n=1, dim=-1, prepend=None, append=None): the n-th forward difference along dim (prepend and append joined first).", diff),
        "unfold" => ("unfold", "x.unfold(dimension, size, step): the windows of size elements every step along dimension, as a new last dim.", unfold),
        "softmax" => ("softmax", "x.softmax(dim, dtype=None): exp(x) normalised along dim.", super::functional::softmax_method),
        "type_as" => ("type_as", "x.type_as(other): x in other's dtype (x itself when it has it).", type_as),
        "is_contiguous" => ("is_contiguous", "x.is_contiguous(memory_format=torch.contiguous_format): False for a transposed view (t(), transpose, permute, .T), as PyTorch's strides say.", |_, r, mut a| {
            a.take(0, "memory_format")?;
            a.finish(1)?;
            Ok(Value::Bool(!r.as_array().is_some_and(|x| x.array.strided())))
        }),
        _ => return None,
    };
    Some((mname, doc, f))
}

/// A bound tensor method of this file, or None.
pub fn tensor_attr(v: &Value, name: &str) -> Option<Value> {
    super::tensor_args::bound_method(tensor_method, v, name)
}

/// Adds `torch.t`, `torch.diff`, `torch.dtype` and `torch.backends`.
pub fn install(m: &Module) {
    install_forms(m, &["t", "diff"], tensor_method, |it, a| {
        function_form(it, a, tensor_method)
    });
    m.set("dtype", Value::Type(TypeKind::DType));
    m.set("backends", Value::Module(backends()));
}

fn t(it: &mut dyn Interpreter, r: &Value, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    let x = tensor_arg(r, "t", "input", 1)?.clone();
    match x.ndim() {
        0 | 1 => Ok(r.clone()),
        2 => {
            let (tape, _) = tape_rt(it);
            let y = tape.transpose(&x, Some(&[1, 0])).map_err(rt_err)?;
            tape.rename(&y, "TBackward0");
            Ok(out(y))
        }
        n => Err(runtime_error(format!(
            "t() expects a tensor with <= 2 dimensions, but self is {n}D"
        ))),
    }
}

fn diff(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let n = a.take(0, "n")?;
    let dim = a.take(1, "dim")?;
    let prepend = a.take(2, "prepend")?;
    let append = a.take(3, "append")?;
    a.finish(4)?;
    let x = tensor_arg(r, "diff", "input", 1)?.clone();
    if x.ndim() == 0 {
        return Err(runtime_error(
            "diff expects input to be at least one-dimensional",
        ));
    }
    let n = match &n {
        None => 1,
        Some(v) => int_arg(v, "diff", "n", 2)?,
    };
    if n < 0 {
        return Err(runtime_error(format!(
            "order must be non-negative but got {n}"
        )));
    }
    let dim = match &dim {
        None => -1,
        Some(v) => int_arg(v, "diff", "dim", 3)?,
    };
    let axis = norm_axis(dim, x.ndim(), T)?;
    let mut parts = Vec::new();
    for (v, name, pos) in [
        (&prepend, "prepend", 4),
        (&None, "", 0),
        (&append, "append", 5),
    ] {
        match v {
            Some(Value::None) => {}
            Some(v) => parts.push(tensor_arg(v, "diff", name, pos)?.clone()),
            None if pos == 0 => parts.push(x.clone()),
            None => {}
        }
    }
    let (tape, _) = tape_rt(it);
    let mut y = if parts.len() == 1 {
        x
    } else {
        tape.concat(&parts, axis as isize).map_err(rt_err)?
    };
    for _ in 0..n {
        let len = y.shape().get(axis).copied().unwrap_or(0) as i64;
        if len == 0 {
            break;
        }
        let later = tape.index(&y, &axis_slice(axis, 1, len)).map_err(rt_err)?;
        let earlier = tape
            .index(&y, &axis_slice(axis, 0, len - 1))
            .map_err(rt_err)?;
        // PyTorch: booleans differ where they are unequal (logical_xor).
        let op = if y.dtype() == DType::Bool {
            BinaryOp::Ne
        } else {
            BinaryOp::Sub
        };
        y = tape
            .binary(op, Operand::Array(&later), Operand::Array(&earlier))
            .map_err(rt_err)?;
    }
    Ok(out(y))
}

fn unfold(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let dimension = a.required(0, "dimension")?;
    let size = a.required(1, "size")?;
    let step = a.required(2, "step")?;
    a.finish(3)?;
    let x = tensor_arg(r, "unfold", "input", 1)?.clone();
    let dim = norm_axis(int_arg(&dimension, "unfold", "dimension", 1)?, x.ndim(), T)?;
    let size = int_arg(&size, "unfold", "size", 2)?;
    let step = int_arg(&step, "unfold", "step", 3)?;
    let len = x.shape().get(dim).copied().unwrap_or(1) as i64;
    if size > len {
        return Err(runtime_error(format!(
            "maximum size for tensor at dimension {dim} is {len} but size is {size}"
        )));
    }
    if size < 0 {
        return Err(runtime_error(format!("size is {size} but must be >= 0")));
    }
    if step <= 0 {
        return Err(runtime_error(format!("step is {step} but must be > 0")));
    }
    let windows = ((len - size) / step + 1) as usize;
    let size = size as usize;
    // Window w holds the positions w*step .. w*step+size: one gather of them along dim.
    let positions: Vec<i64> = (0..windows)
        .flat_map(|w| (0..size).map(move |j| (w * step as usize + j) as i64))
        .collect();
    let (tape, rt) = tape_rt(it);
    let index = rt
        .from_host(HostData::I64(positions), &[windows * size], Device::cpu(0))
        .and_then(|i| i.copy_to(rt, x.device()))
        .map_err(rt_err)?;
    let nd = x.ndim().max(1);
    let x = if x.ndim() == 0 {
        tape.reshape(&x, &[1]).map_err(rt_err)?
    } else {
        x
    };
    // dim first, gathered, then back in place with the window's elements last.
    let mut front: Vec<isize> = vec![dim as isize];
    front.extend((0..nd).filter(|&d| d != dim).map(|d| d as isize));
    let moved = tape.transpose(&x, Some(&front)).map_err(rt_err)?;
    let picked = tape
        .index(&moved, &[IndexItem::Array(index)])
        .map_err(rt_err)?;
    let mut split: Vec<isize> = vec![windows as isize, size as isize];
    split.extend(moved.shape().iter().skip(1).map(|&d| d as isize));
    let picked = tape.reshape(&picked, &split).map_err(rt_err)?;
    let mut order: Vec<isize> = Vec::with_capacity(nd + 1);
    for d in 0..nd {
        order.push(match d.cmp(&dim) {
            std::cmp::Ordering::Less => d as isize + 2,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Greater => d as isize + 1,
        });
    }
    order.push(1);
    let y = tape.transpose(&picked, Some(&order)).map_err(rt_err)?;
    tape.rename(&y, "UnfoldBackward0");
    Ok(out(y))
}

fn type_as(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let other = a.required(0, "other")?;
    a.finish(1)?;
    let x = tensor_arg(r, "type_as", "input", 1)?.clone();
    let dtype = tensor_arg(&other, "type_as", "other", 1)?.dtype();
    if x.dtype() == dtype {
        return Ok(r.clone());
    }
    let (tape, _) = tape_rt(it);
    Ok(out(tape.astype(&x, dtype).map_err(rt_err)?))
}

// ------------------------------------------------------------------ torch.backends

/// `torch.backends`: the flags programs set for cuDNN, CUDA matmuls and MPS, kept as plain
/// module attributes (nothing here reads them), and the availability tests.
fn backends() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "torch.backends",
        "settings of the backends PyTorch may use (kept; devarray's kernels do not read them)",
    ));
    let cudnn = Rc::new(Module::new(
        "torch.backends.cudnn",
        "cuDNN's flags (kept as set; there is no cuDNN here)",
    ));
    cudnn.set("benchmark", Value::Bool(false));
    cudnn.set("deterministic", Value::Bool(false));
    cudnn.set("enabled", Value::Bool(true));
    cudnn.set("allow_tf32", Value::Bool(true));
    cudnn.set(
        "is_available",
        builtin(
            "is_available",
            "is_available(): False (no cuDNN here).",
            |_, a| {
                a.finish(0)?;
                Ok(Value::Bool(false))
            },
        ),
    );
    let matmul = Rc::new(Module::new(
        "torch.backends.cuda.matmul",
        "CUDA matmul flags (kept as set)",
    ));
    matmul.set("allow_tf32", Value::Bool(false));
    matmul.set("allow_fp16_reduced_precision_reduction", Value::Bool(true));
    matmul.set("allow_bf16_reduced_precision_reduction", Value::Bool(true));
    let cuda = Rc::new(Module::new("torch.backends.cuda", "CUDA backend flags"));
    cuda.set("matmul", Value::Module(matmul));
    let mps = Rc::new(Module::new(
        "torch.backends.mps",
        "Apple's Metal backend (absent here)",
    ));
    for name in ["is_available", "is_built"] {
        mps.set(
            name,
            builtin(name, "False: there is no Metal backend here.", |_, a| {
                a.finish(0)?;
                Ok(Value::Bool(false))
            }),
        );
    }
    m.set("cudnn", Value::Module(cudnn));
    m.set("cuda", Value::Module(cuda));
    m.set("mps", Value::Module(mps));
    m
}
