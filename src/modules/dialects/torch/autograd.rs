//! PyTorch's autograd on the session's one tape (`crate::nn::autograd`): the tensor attributes
//! (`requires_grad`, `is_leaf`, `grad`, `grad_fn`, `data`), `backward`/`detach`/`clone`, the
//! in-place `_` methods, grad mode (`torch.no_grad()`, `enable_grad`, `set_grad_enabled`,
//! `inference_mode`, usable as decorators) and `requires_grad=` on the factories.
//!
//! `arrays::get_attr`/`set_attr` ask [`tensor_attr`]/[`set_tensor_attr`] first for tensors, so
//! a name here takes precedence over the shared array method of the same name.

use std::cell::RefCell;
use std::rc::Rc;

use crate::nn::autograd::{Tape, TorchBackwardError};
use crate::runtime::{Array, BinaryOp, DType, Operand, Result as RtResult, Scalar, UnaryOp};

use crate::modules::array::arrays::{self, TORCH};
use crate::object::error::{inplace_exc, torch_error, Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, as_scalar, wrap};
use crate::object::value::{Args, ArrayValue, Flavor, MethodFn, Module, NativeObject, Value};
use crate::object::{builtin, method, Interpreter};

/// The names [`tensor_attr`] answers (for completion).
pub const TENSOR_ATTRS: &[&str] = &[
    "sinh",
    "cosh",
    "allclose",
    "equal",
    "bmm",
    "requires_grad",
    "requires_grad_",
    "is_leaf",
    "grad",
    "grad_fn",
    "retain_grad",
    "retains_grad",
    "register_hook",
    "data",
    "numpy",
    "backward",
    "detach",
    "detach_",
    "clone",
    "zero_",
    "fill_",
    "copy_",
    "scatter_",
    "add_",
    "sub_",
    "mul_",
    "div_",
    "pow_",
    "clamp_",
    "clip_",
    "normal_",
    "uniform_",
    "exp_",
    "log_",
    "sqrt_",
    "abs_",
    "neg_",
    "relu_",
    "sigmoid_",
    "tanh_",
    "sin_",
    "cos_",
    "square_",
    "reciprocal_",
    "floor_",
    "ceil_",
    "round_",
    "trunc_",
    "sign_",
];

fn runtime_error(message: impl Into<String>) -> Exc {
    Exc::new(ExcKind::RuntimeError, message)
}

fn tensor_of(v: &Value) -> Result<&ArrayValue, Exc> {
    v.as_array()
        .ok_or_else(|| Exc::type_error(format!("expected a tensor, got {}", v.type_name())))
}

/// A new tensor object over the same memory (what `.data` and `detach()` return).
fn alias(a: &Array) -> Result<Array, Exc> {
    let shape: Vec<isize> = a.shape().iter().map(|&d| d as isize).collect();
    Ok(a.reshape(&shape)?)
}

/// PyTorch's `torch.Size([2, 3])`.
fn torch_size(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("torch.Size([{}])", dims.join(", "))
}

fn device_name(d: crate::runtime::Device) -> String {
    crate::object::format::torch_device_name(d)
}

const NON_LEAF_FLAG: &str = "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().";

/// `x.requires_grad_(flag)` / `x.requires_grad = flag`.
pub(crate) fn set_requires(it: &mut dyn Interpreter, x: &Array, flag: bool) -> Result<(), Exc> {
    let tape = &mut it.state_mut().nn.tape;
    if !tape.is_leaf(x) {
        if flag {
            return Ok(());
        }
        return Err(runtime_error(NON_LEAF_FLAG));
    }
    if flag && !x.dtype().is_float() {
        return Err(runtime_error(
            "only Tensors of floating point dtype can require gradients",
        ));
    }
    tape.set_requires_grad(x, flag);
    Ok(())
}

/// Marks a tensor as a leaf that requires grad (what `nn.Parameter` does with its data).
pub fn mark_requires_grad(it: &mut dyn Interpreter, x: &Array) -> Result<(), Exc> {
    set_requires(it, x, true)
}

/// `y.grad_fn`: an object named as PyTorch names the op's backward.
struct GradFn {
    name: &'static str,
}

impl NativeObject for GradFn {
    fn type_name(&self) -> &str {
        self.name
    }
    fn repr(&self) -> String {
        format!("<{} object at {:#x}>", self.name, self as *const _ as usize)
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        match name {
            "__name__" => Some(Value::str(self.name)),
            "name" => Some(crate::modules::python::native::bound(
                this,
                "name",
                "grad_fn.name(): the node's class name, e.g. 'AddBackward0'.",
                |_, r, a| {
                    a.finish(0)?;
                    let node = crate::modules::python::native::downcast::<GradFn>(r, "a grad_fn")?;
                    Ok(Value::str(node.name))
                },
            )),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub(super) fn torch_backward_exc(e: TorchBackwardError) -> Exc {
    match e {
        TorchBackwardError::NotRequiring => runtime_error(
            "element 0 of tensors does not require grad and does not have a grad_fn",
        ),
        TorchBackwardError::ImplicitNonScalar => {
            runtime_error("grad can be implicitly created only for scalar outputs")
        }
        TorchBackwardError::ShapeMismatch(grad, out) => runtime_error(format!(
            "Mismatch in shape: grad_output[0] has a shape of {} and output[0] has a shape of {}.",
            torch_size(&grad),
            torch_size(&out)
        )),
        TorchBackwardError::DeviceMismatch(expected, got) => runtime_error(format!(
            "invalid gradient at index 0 - expected device {} but got {}",
            device_name(expected),
            device_name(got)
        )),
        TorchBackwardError::Freed => runtime_error(
            "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.",
        ),
        TorchBackwardError::Modified(message) => runtime_error(message),
        TorchBackwardError::InputNotRequiring => {
            runtime_error("One of the differentiated Tensors does not require grad")
        }
        TorchBackwardError::Runtime(e) => torch_error(e),
    }
}

/// `y.backward(gradient, retain_graph)` for a tensor head.
fn run_backward(
    it: &mut dyn Interpreter,
    head: &Array,
    gradient: Option<&Value>,
    retain: bool,
) -> Result<(), Exc> {
    let gradient = match gradient {
        None | Some(Value::None) => None,
        Some(Value::Array(g)) => Some(g.array.clone()),
        Some(other) => {
            // PyTorch takes a number for a scalar head too.
            let Some(s) = as_scalar(other) else {
                return Err(Exc::type_error(format!(
                    "backward(): argument 'gradient' must be Tensor, not {}",
                    other.type_name()
                )));
            };
            let st = it.state_mut();
            Some(
                st.rt
                    .full(head.shape(), s.as_f64(), head.dtype(), head.device())?,
            )
        }
    };
    super::hooks::backward_with_hooks(it, head, gradient.as_ref(), retain)
}

fn flag_arg(v: Option<Value>, default: bool) -> Result<bool, Exc> {
    match v {
        None | Some(Value::None) => Ok(default),
        Some(v) => v.truthy(),
    }
}

// ------------------------------------------------------------------ in-place

/// Runs an in-place op on tensor `r` (PyTorch's leaf check and recording) and returns `r`.
fn inplace(
    it: &mut dyn Interpreter,
    r: &Value,
    others: &[&Array],
    compute: impl FnOnce(&mut Tape, &Array) -> RtResult<Array>,
) -> Result<Value, Exc> {
    let x = tensor_of(r)?;
    let st = it.state_mut();
    st.nn
        .tape
        .inplace(&st.rt, &x.array, others, compute)
        .map_err(inplace_exc)?;
    Ok(r.clone())
}

/// [`inplace`] for the compositions of other files, whose `compute` needs the runtime too.
pub(super) fn inplace_value(
    it: &mut dyn Interpreter,
    r: &Value,
    others: &[&Array],
    compute: impl FnOnce(&mut Tape, &crate::runtime::Runtime, &Array) -> RtResult<Array>,
) -> Result<Value, Exc> {
    let x = tensor_of(r)?;
    let st = it.state_mut();
    let rt = &st.rt;
    st.nn
        .tape
        .inplace(rt, &x.array, others, |tape, src| compute(tape, rt, src))
        .map_err(inplace_exc)?;
    Ok(r.clone())
}

fn number(v: &Value, what: &str) -> Result<f64, Exc> {
    match v {
        Value::Array(a) if a.array.size() == 1 => Ok(a.array.to_scalar(what)?.as_f64()),
        other => as_f64(other).ok_or_else(|| {
            Exc::type_error(format!(
                "{what}(): expected a number, got {}",
                other.type_name()
            ))
        }),
    }
}

/// `x.add_(other, alpha=1)` and the other binary in-place ops.
fn binary_inplace(
    it: &mut dyn Interpreter,
    r: &Value,
    mut a: Args,
    op: BinaryOp,
) -> Result<Value, Exc> {
    let other = a.required(0, "other")?;
    let alpha = a.take(1, "alpha")?;
    a.finish(2)?;
    if alpha.is_some() && !matches!(op, BinaryOp::Add | BinaryOp::Sub) {
        return Err(Exc::type_error(format!(
            "{}() got an unexpected keyword argument 'alpha'",
            a.fname
        )));
    }
    let alpha = match &alpha {
        None | Some(Value::None) => None,
        Some(v) => Some(number(v, a.fname)?),
    };
    let operand_array = match &other {
        Value::Array(o) => Some(o.array.clone()),
        _ => None,
    };
    let scalar = match &other {
        Value::Array(_) => None,
        v => Some(as_scalar(v).ok_or_else(|| {
            Exc::type_error(format!(
                "{}(): argument 'other' must be Tensor or Number, not {}",
                a.fname,
                v.type_name()
            ))
        })?),
    };
    let others: Vec<&Array> = operand_array.iter().collect();
    inplace(it, r, &others, |tape, src| {
        let rhs = match (&operand_array, scalar) {
            (Some(o), _) => match alpha {
                Some(k) => tape.binary(
                    BinaryOp::Mul,
                    Operand::Array(o),
                    Operand::Scalar(Scalar::Float(k)),
                )?,
                None => o.clone(),
            },
            (None, Some(s)) => {
                let s = match alpha {
                    Some(k) => Scalar::Float(s.as_f64() * k),
                    None => s,
                };
                return tape.binary(op, Operand::Array(src), Operand::Scalar(s));
            }
            (None, None) => unreachable_operand()?,
        };
        tape.binary(op, Operand::Array(src), Operand::Array(&rhs))
    })
}

fn unreachable_operand() -> RtResult<Array> {
    Err(crate::runtime::RuntimeError::Value(
        "in-place op: missing operand".into(),
    ))
}

fn unary_inplace(it: &mut dyn Interpreter, r: &Value, a: Args, op: UnaryOp) -> Result<Value, Exc> {
    a.finish(0)?;
    inplace(it, r, &[], |tape, src| tape.unary(src, op))
}

/// `zero_`, `fill_`, `normal_`, `uniform_`: new values that do not depend on the old ones.
fn constant_inplace(
    it: &mut dyn Interpreter,
    r: &Value,
    make: impl FnOnce(&crate::runtime::Runtime, &Array) -> RtResult<Array>,
) -> Result<Value, Exc> {
    let x = tensor_of(r)?;
    let values = {
        let st = it.state_mut();
        make(&st.rt, &x.array)?
    };
    inplace(it, r, &[], move |_, _| Ok(values))
}

/// `x.scatter_(dim, index, src)` / `x.scatter_(dim, index, value=v)`: for each position p of
/// index, x at p with p[dim] replaced by index[p] gets src[p] (or v). Computed on the host:
/// programs scatter small one-hot labels and masks.
fn scatter_(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let dim = a.required(0, "dim")?;
    let index = a.required(1, "index")?;
    let src = a.take(2, "src")?;
    let value = a.take_kw("value");
    if let Some(reduce) = a.take_kw("reduce") {
        if !matches!(reduce, Value::None) {
            return Err(Exc::value_error(
                "scatter_: reduce= is not supported; scatter into zeros and combine with the usual operators",
            ));
        }
    }
    a.finish(3)?;
    let x = tensor_of(r)?.array.clone();
    let ndim = x.ndim();
    let dim = as_i64(&dim).ok_or_else(|| {
        Exc::type_error(format!(
            "scatter_(): argument 'dim' must be int, not {}",
            dim.type_name()
        ))
    })?;
    let d = if dim < 0 {
        dim + ndim.max(1) as i64
    } else {
        dim
    };
    if d < 0 || d >= ndim.max(1) as i64 {
        return Err(Exc::new(
            ExcKind::IndexError,
            format!(
                "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
                -(ndim.max(1) as i64),
                ndim.max(1) as i64 - 1
            ),
        ));
    }
    let d = d as usize;
    let index = match &index {
        Value::Array(i) if matches!(i.array.dtype(), DType::Int64 | DType::Int32) => {
            i.array.clone()
        }
        Value::Array(_) => {
            return Err(runtime_error(
                "scatter(): Expected dtype int32/int64 for index",
            ))
        }
        other => {
            return Err(Exc::type_error(format!(
                "scatter_(): argument 'index' must be Tensor, not {}",
                other.type_name()
            )))
        }
    };
    // A 0-d index (or src) counts as one element, as PyTorch treats it.
    let as_dims = |s: &[usize]| if s.is_empty() { vec![1] } else { s.to_vec() };
    let xshape = as_dims(x.shape());
    let ishape = as_dims(index.shape());
    if ishape.len() != xshape.len() {
        return Err(runtime_error(
            "Index tensor must have the same number of dimensions as self tensor",
        ));
    }
    let fill: Result<Vec<f64>, f64> = match (&src, &value) {
        (Some(Value::Array(s)), None) => Ok(s.array.try_to_host()?.to_f64_vec()),
        (Some(v), None) | (None, Some(v)) => Err(number(v, "scatter_")?),
        (None, None) => {
            return Err(Exc::type_error(
                "scatter_() needs src (a tensor) or value (a number)",
            ))
        }
        (Some(_), Some(_)) => {
            return Err(Exc::type_error("scatter_() takes src or value, not both"))
        }
    };
    let positions = index.try_to_host()?.to_f64_vec();
    let mut values = x.try_to_host()?.to_f64_vec();
    let strides = |shape: &[usize]| {
        let mut st = vec![1usize; shape.len()];
        for k in (0..shape.len().saturating_sub(1)).rev() {
            st[k] = st[k + 1] * shape[k + 1];
        }
        st
    };
    let (xs, is) = (strides(&xshape), strides(&ishape));
    for (flat, target) in positions.iter().enumerate() {
        let t = *target as i64;
        if t < 0 || t >= xshape[d] as i64 {
            return Err(runtime_error(format!(
                "index {t} is out of bounds for dimension {d} with size {}",
                xshape[d]
            )));
        }
        let mut at = 0;
        for k in 0..ishape.len() {
            let coord = (flat / is[k]) % ishape[k];
            let coord = if k == d { t as usize } else { coord };
            if coord >= xshape[k] {
                return Err(runtime_error(format!(
                    "index {coord} is out of bounds for dimension {k} with size {}",
                    xshape[k]
                )));
            }
            at += coord * xs[k];
        }
        let v = match &fill {
            Err(v) => *v,
            Ok(src) => *src
                .get(flat)
                .ok_or_else(|| runtime_error("scatter_(): src has fewer elements than index"))?,
        };
        if let Some(slot) = values.get_mut(at) {
            *slot = v;
        }
    }
    constant_inplace(it, r, move |rt, x| {
        rt.from_f64(values, x.shape(), x.dtype(), x.device())
    })
}

fn float_kw(a: &mut Args, i: usize, name: &str, default: f64) -> Result<f64, Exc> {
    match a.take(i, name)? {
        None | Some(Value::None) => Ok(default),
        Some(v) => number(&v, a.fname),
    }
}

fn sample_dtype(x: &Array, what: &str) -> Result<DType, Exc> {
    if x.dtype().is_float() {
        Ok(x.dtype())
    } else {
        Err(runtime_error(format!(
            "\"{what}\" not implemented for '{}'",
            crate::modules::array::arrays::torch_scalar_type_name(x.dtype())
        )))
    }
}

// ------------------------------------------------------------------ attributes

/// A tensor attribute or method that autograd owns; None for the shared array API.
pub fn tensor_attr(it: &mut dyn Interpreter, v: &Value, name: &str) -> Result<Option<Value>, Exc> {
    let x = tensor_of(v)?;
    let arr = &x.array;
    let tape = &it.state().nn.tape;
    Ok(Some(match name {
        "requires_grad" => Value::Bool(tape.requires_grad(arr)),
        "is_leaf" => Value::Bool(tape.is_leaf(arr)),
        "retains_grad" => Value::Bool(tape.retains_grad(arr)),
        "grad" => tape
            .grad(arr)
            .map_or(Value::None, |g| wrap(g, Flavor::Torch)),
        "grad_fn" => match tape.grad_fn(arr) {
            Some(name) => Value::Object(Rc::new(GradFn { name })),
            None => Value::None,
        },
        "data" => wrap(alias(arr)?, Flavor::Torch),
        _ => {
            let Some((mname, doc, f)) = tensor_method(name) else {
                return Ok(super::math::tensor_attr(v, name)
                    .or_else(|| super::random_more::tensor_attr(v, name))
                    .or_else(|| super::selection::tensor_attr(v, name))
                    .or_else(|| super::api_more::tensor_attr(v, name))
                    .or_else(|| super::dtype_info::tensor_attr(v, name))
                    .or_else(|| super::hooks::tensor_attr(v, name)));
            };
            method(v, mname, doc, f)
        }
    }))
}

fn tensor_method(name: &str) -> Option<(&'static str, &'static str, MethodFn)> {
    let (doc, f): (&'static str, MethodFn) = match name {
        "requires_grad_" => ("x.requires_grad_(requires_grad=True): record ops on this leaf so that backward() fills x.grad; returns x.", |it, r, mut a| {
            let flag = flag_arg(a.take(0, "requires_grad")?, true)?;
            a.finish(1)?;
            set_requires(it, &tensor_of(r)?.array, flag)?;
            Ok(r.clone())
        }),
        "retain_grad" => ("y.retain_grad(): keep y.grad for this non-leaf tensor when backward runs.", |it, r, a| {
            a.finish(0)?;
            let x = tensor_of(r)?;
            let tape = &mut it.state_mut().nn.tape;
            if !tape.requires_grad(&x.array) {
                return Err(runtime_error("can't retain_grad on Tensor that has requires_grad=False"));
            }
            tape.retain_grad(&x.array);
            Ok(Value::None)
        }),
        "backward" => ("y.backward(gradient=None, retain_graph=None): accumulate dy/dx into x.grad of every leaf x that requires grad (gradient= for a non-scalar y).", |it, r, mut a| {
            let gradient = a.take(0, "gradient")?;
            let retain = a.take(1, "retain_graph")?;
            let create = flag_arg(a.take(2, "create_graph")?, false)?;
            if let Some(inputs) = a.take(3, "inputs")? {
                if !matches!(inputs, Value::None) {
                    return Err(Exc::new(ExcKind::NotImplementedError, "backward(inputs=...): devarray accumulates into every leaf; call backward() without inputs="));
                }
            }
            a.finish(4)?;
            if create {
                return Err(Exc::new(ExcKind::NotImplementedError, "backward(create_graph=True): devarray computes first-order gradients only"));
            }
            let retain = flag_arg(retain, create)?;
            let head = tensor_of(r)?.array.clone();
            run_backward(it, &head, gradient.as_ref(), retain)?;
            Ok(Value::None)
        }),
        "numpy" => ("x.numpy(): a NumPy array sharing x's memory (CPU tensors that do not require grad).", |it, r, mut a| {
            a.take_kw("force");
            a.finish(0)?;
            let x = tensor_of(r)?;
            if it.state().nn.tape.requires_grad(&x.array) {
                return Err(runtime_error("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."));
            }
            if x.array.device().kind != crate::runtime::DeviceKind::Cpu {
                return Err(Exc::type_error(format!(
                    "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
                    device_name(x.array.device())
                )));
            }
            // PyTorch shares the memory: t.add_(1) shows in the array.
            Ok(wrap(alias(&x.array)?, Flavor::Numpy))
        }),
        "detach" => ("x.detach(): a tensor sharing x's memory, cut off from the graph (requires_grad=False).", |_, r, a| {
            a.finish(0)?;
            Ok(wrap(alias(&tensor_of(r)?.array)?, Flavor::Torch))
        }),
        "detach_" => ("x.detach_(): cut x itself off from the graph; returns x.", |it, r, a| {
            a.finish(0)?;
            let x = tensor_of(r)?;
            let st = it.state_mut();
            if !st.nn.tape.is_leaf(&x.array) {
                let before = x.array.copy_to(&st.rt, x.array.device())?;
                st.nn.tape.cut(&x.array, &before);
            }
            st.nn.tape.set_requires_grad(&x.array, false);
            Ok(r.clone())
        }),
        "clone" => ("x.clone(): a copy in new memory, recorded (gradients flow back to x).", |it, r, mut a| {
            a.take_kw("memory_format");
            a.finish(0)?;
            let x = tensor_of(r)?;
            let st = it.state_mut();
            let out = st.nn.tape.copy_to(&st.rt, &x.array, x.array.device())?;
            st.nn.tape.rename(&out, "CloneBackward0");
            Ok(wrap(out, Flavor::Torch))
        }),
        "zero_" => ("x.zero_(): fill x with zeros in place; returns x.", |it, r, a| {
            a.finish(0)?;
            constant_inplace(it, r, |rt, x| rt.zeros(x.shape(), x.dtype(), x.device()))
        }),
        "fill_" => ("x.fill_(value): fill x with value in place; returns x.", |it, r, mut a| {
            let v = a.required(0, "value")?;
            a.finish(1)?;
            let v = number(&v, "fill_")?;
            constant_inplace(it, r, move |rt, x| rt.full(x.shape(), v, x.dtype(), x.device()))
        }),
        "copy_" => ("x.copy_(src): copy src's values (broadcast, converted, from any device) into x; returns x.", |it, r, mut a| {
            let src = a.required(0, "src")?;
            a.take_kw("non_blocking");
            a.finish(1)?;
            let src = match &src {
                Value::Array(s) => s.array.clone(),
                other => return Err(Exc::type_error(format!("copy_(): argument 'src' must be Tensor, not {}", other.type_name()))),
            };
            let x = tensor_of(r)?.array.clone();
            let st = it.state_mut();
            // The source comes to x's device first (PyTorch's copy_ crosses devices).
            let src = st.nn.tape.as_in_device(&st.rt, &src, x.device())?;
            inplace(it, r, &[&src], |tape, before| {
                let zero = tape.binary(BinaryOp::Mul, Operand::Array(before), Operand::Scalar(Scalar::Int(0)))?;
                let out = tape.binary(BinaryOp::Add, Operand::Array(&zero), Operand::Array(&src))?;
                let out = if out.dtype() == before.dtype() { out } else { tape.astype(&out, before.dtype())? };
                tape.rename(&out, "CopyBackwards");
                Ok(out)
            })
        }),
        "scatter_" => ("x.scatter_(dim, index, src=None, value=None): x[..., index[i], ...] = src[i] (or value) along dim, in place; returns x.", scatter_),
        "add_" => ("x.add_(other, alpha=1): x += alpha * other in place; returns x.", |it, r, a| binary_inplace(it, r, a, BinaryOp::Add)),
        "sub_" => ("x.sub_(other, alpha=1): x -= alpha * other in place; returns x.", |it, r, a| binary_inplace(it, r, a, BinaryOp::Sub)),
        "mul_" => ("x.mul_(other): x *= other in place; returns x.", |it, r, a| binary_inplace(it, r, a, BinaryOp::Mul)),
        "div_" => ("x.div_(other): x /= other in place; returns x.", |it, r, a| binary_inplace(it, r, a, BinaryOp::Div)),
        "pow_" => ("x.pow_(exponent): x **= exponent in place; returns x.", |it, r, a| binary_inplace(it, r, a, BinaryOp::Pow)),
        "clamp_" | "clip_" => ("x.clamp_(min=None, max=None): limit x to [min, max] in place; returns x.", |it, r, mut a| {
            let lo = a.take(0, "min")?;
            let hi = a.take(1, "max")?;
            a.finish(2)?;
            let bound = |v: Option<Value>| -> Result<Option<f64>, Exc> {
                match v {
                    None | Some(Value::None) => Ok(None),
                    Some(v) => number(&v, "clamp_").map(Some),
                }
            };
            let (lo, hi) = (bound(lo)?, bound(hi)?);
            if lo.is_none() && hi.is_none() {
                return Err(runtime_error("torch.clamp: At least one of 'min' or 'max' must not be None"));
            }
            inplace(it, r, &[], move |tape, src| tape.clip(src, lo, hi))
        }),
        "normal_" => ("x.normal_(mean=0, std=1): fill x with normal samples in place; returns x.", |it, r, mut a| {
            let mean = float_kw(&mut a, 0, "mean", 0.0)?;
            let std = float_kw(&mut a, 1, "std", 1.0)?;
            a.take_kw("generator");
            a.finish(2)?;
            let dtype = sample_dtype(&tensor_of(r)?.array, "normal_kernel_cpu")?;
            constant_inplace(it, r, move |rt, x| rt.normal(mean, std, x.shape(), dtype, x.device()))
        }),
        "uniform_" => ("x.uniform_(a=0, b=1): fill x with uniform samples from [a, b) in place; returns x.", |it, r, mut a| {
            let lo = float_kw(&mut a, 0, "a", 0.0)?;
            let hi = float_kw(&mut a, 1, "b", 1.0)?;
            a.take_kw("generator");
            a.finish(2)?;
            let dtype = sample_dtype(&tensor_of(r)?.array, "check_uniform_bounds")?;
            constant_inplace(it, r, move |rt, x| rt.uniform(lo, hi, x.shape(), dtype, x.device()))
        }),
        "exp_" => ("x.exp_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Exp)),
        "log_" => ("x.log_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Log)),
        "sqrt_" => ("x.sqrt_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Sqrt)),
        "abs_" => ("x.abs_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Abs)),
        "neg_" => ("x.neg_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Neg)),
        "relu_" => ("x.relu_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Relu)),
        "sigmoid_" => ("x.sigmoid_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Sigmoid)),
        "tanh_" => ("x.tanh_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Tanh)),
        "sin_" => ("x.sin_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Sin)),
        "cos_" => ("x.cos_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Cos)),
        "square_" => ("x.square_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Square)),
        "reciprocal_" => ("x.reciprocal_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Reciprocal)),
        "floor_" => ("x.floor_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Floor)),
        "ceil_" => ("x.ceil_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Ceil)),
        "round_" => ("x.round_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Round)),
        "trunc_" => ("x.trunc_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Trunc)),
        "sign_" => ("x.sign_(): in place; returns x.", |it, r, a| unary_inplace(it, r, a, UnaryOp::Sign)),
        _ => return None,
    };
    let name = TENSOR_ATTRS.iter().find(|n| **n == name).copied()?;
    Some((name, doc, f))
}

/// `x.requires_grad = b`, `x.grad = g`, `x.data = t`; Ok(false) for names autograd does not own.
pub fn set_tensor_attr(
    it: &mut dyn Interpreter,
    obj: &Value,
    name: &str,
    value: &Value,
) -> Result<bool, Exc> {
    let x = tensor_of(obj)?;
    match name {
        "requires_grad" => {
            let flag = value.truthy()?;
            set_requires(it, &x.array, flag)?;
        }
        "grad" => {
            let grad = match value {
                Value::None => None,
                Value::Array(g) => {
                    let (g, var) = (&g.array, &x.array);
                    if g.shape() != var.shape() {
                        return Err(runtime_error("assigned grad has data of a different size"));
                    }
                    if g.dtype() != var.dtype() {
                        return Err(runtime_error("assigned grad has data of a different type"));
                    }
                    if g.device() != var.device() {
                        return Err(runtime_error(
                            "assigned grad has data located on a different device",
                        ));
                    }
                    Some(g.clone())
                }
                other => {
                    return Err(Exc::type_error(format!(
                        "assigned grad expected to be a Tensor or None but got grad of type {}",
                        other.type_name()
                    )))
                }
            };
            it.state_mut().nn.tape.set_grad(&x.array, grad);
        }
        "data" => {
            let Value::Array(src) = value else {
                return Err(Exc::type_error(format!(
                    "data must be a Tensor, not {}",
                    value.type_name()
                )));
            };
            if src.array.shape() != x.array.shape() {
                return Err(runtime_error(format!(
                    "x.data = t: devarray keeps a tensor's shape, and t has shape {} where x has {}; assign a tensor of the same shape or make a new tensor",
                    torch_size(src.array.shape()),
                    torch_size(x.array.shape())
                )));
            }
            src.array.copy_into(&x.array).map_err(torch_error)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

// ------------------------------------------------------------------ grad mode

/// `torch.no_grad()`, `torch.enable_grad()`, `torch.inference_mode()`,
/// `torch.set_grad_enabled(b)`: a context manager and a decorator.
struct GradMode {
    kind: &'static str,
    enabled: bool,
    /// set_grad_enabled applies at the call; leaving its `with` restores this.
    applied: Option<bool>,
    saved: RefCell<Vec<bool>>,
}

impl NativeObject for GradMode {
    fn type_name(&self) -> &str {
        self.kind
    }
    fn repr(&self) -> String {
        format!(
            "<torch.autograd.grad_mode.{} object at {:#x}>",
            self.kind, self as *const _ as usize
        )
    }
    fn enter(&self, interp: &mut dyn Interpreter) -> Result<Value, Exc> {
        let prev = match self.applied {
            Some(prev) => prev,
            None => interp.state_mut().nn.tape.set_grad_enabled(self.enabled),
        };
        self.saved.borrow_mut().push(prev);
        Ok(Value::None)
    }
    fn exit(&self, interp: &mut dyn Interpreter) -> Result<(), Exc> {
        if let Some(prev) = self.saved.borrow_mut().pop() {
            interp.state_mut().nn.tape.set_grad_enabled(prev);
        }
        Ok(())
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        (name == "__call__").then(|| {
            method(
                &Value::Object(this.clone()),
                "__call__",
                "decorate a function so that it runs in this grad mode",
                |_, r, mut a| {
                    let func = a.required(0, "func")?;
                    a.finish(1)?;
                    let enabled = match r {
                        Value::Object(o) => o
                            .as_any()
                            .downcast_ref::<GradMode>()
                            .is_some_and(|m| m.enabled),
                        _ => false,
                    };
                    Ok(Value::Object(Rc::new(GradModeFunc { enabled, func })))
                },
            )
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A function decorated with `@torch.no_grad()`: runs it in that grad mode.
struct GradModeFunc {
    enabled: bool,
    func: Value,
}

impl NativeObject for GradModeFunc {
    fn type_name(&self) -> &str {
        "function"
    }
    fn repr(&self) -> String {
        format!("<decorated function at {:#x}>", self as *const _ as usize)
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        (name == "__call__").then(|| {
            method(
                &Value::Object(this.clone()),
                "__call__",
                "call the function in its grad mode",
                |it, r, a| {
                    let Some(f) = (match r {
                        Value::Object(o) => o.as_any().downcast_ref::<GradModeFunc>(),
                        _ => None,
                    }) else {
                        return Err(Exc::type_error("expected a decorated function"));
                    };
                    let (enabled, func) = (f.enabled, f.func.clone());
                    let prev = it.state_mut().nn.tape.set_grad_enabled(enabled);
                    let out = it.call_value(&func, a);
                    it.state_mut().nn.tape.set_grad_enabled(prev);
                    out
                },
            )
        })
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn grad_mode(kind: &'static str, enabled: bool) -> Value {
    Value::Object(Rc::new(GradMode {
        kind,
        enabled,
        applied: None,
        saved: RefCell::new(Vec::new()),
    }))
}

fn no_grad(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(grad_mode("no_grad", false))
}

fn enable_grad(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(grad_mode("enable_grad", true))
}

fn inference_mode(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let mode = flag_arg(a.take(0, "mode")?, true)?;
    a.finish(1)?;
    Ok(grad_mode("inference_mode", !mode))
}

fn set_grad_enabled(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let mode = a.required(0, "mode")?.truthy()?;
    a.finish(1)?;
    let prev = it.state_mut().nn.tape.set_grad_enabled(mode);
    Ok(Value::Object(Rc::new(GradMode {
        kind: "set_grad_enabled",
        enabled: mode,
        applied: Some(prev),
        saved: RefCell::new(Vec::new()),
    })))
}

fn is_grad_enabled(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    a.finish(0)?;
    Ok(Value::Bool(it.state().nn.tape.grad_enabled()))
}

/// `torch.autograd.backward(tensors, grad_tensors=None, retain_graph=None)`.
fn autograd_backward(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let heads = a.required(0, "tensors")?;
    let grads = a.take(1, "grad_tensors")?;
    let retain = flag_arg(a.take(2, "retain_graph")?, false)?;
    a.finish(3)?;
    let heads = match &heads {
        Value::Array(_) => vec![heads.clone()],
        other => it.iterate(other)?,
    };
    let grads = match &grads {
        None | Some(Value::None) => vec![Value::None; heads.len()],
        Some(g @ Value::Array(_)) => vec![g.clone()],
        Some(other) => it.iterate(other)?,
    };
    if grads.len() != heads.len() {
        return Err(runtime_error(format!(
            "grad can be implicitly created only for scalar outputs: got {} tensors and {} gradients",
            heads.len(),
            grads.len()
        )));
    }
    for (h, g) in heads.iter().zip(&grads) {
        let head = tensor_of(h)?.array.clone();
        run_backward(it, &head, Some(g), retain)?;
    }
    Ok(Value::None)
}

/// One tensor or a sequence of them, as a list.
fn tensors(it: &mut dyn Interpreter, v: &Value) -> Result<Vec<Value>, Exc> {
    match v {
        Value::Array(_) => Ok(vec![v.clone()]),
        other => it.iterate(other),
    }
}

/// `torch.autograd.grad(outputs, inputs, grad_outputs=None, retain_graph=None,
/// allow_unused=False)`: a tuple of gradients, one per input; no `.grad` changes.
fn autograd_grad(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let outputs = a.required(0, "outputs")?;
    let inputs = a.required(1, "inputs")?;
    let grad_outputs = a.take(2, "grad_outputs")?;
    let retain = a.take(3, "retain_graph")?;
    let create = flag_arg(a.take(4, "create_graph")?, false)?;
    a.take_kw("only_inputs");
    let allow_unused = flag_arg(a.take(6, "allow_unused")?, false)?;
    a.take_kw("materialize_grads");
    a.finish(7)?;
    if create {
        return Err(Exc::new(
            ExcKind::NotImplementedError,
            "grad(create_graph=True): devarray computes first-order gradients only",
        ));
    }
    let retain = flag_arg(retain, false)?;
    let heads = tensors(it, &outputs)?;
    let inputs: Vec<Array> = tensors(it, &inputs)?
        .iter()
        .map(|v| tensor_of(v).map(|x| x.array.clone()))
        .collect::<Result<_, _>>()?;
    let seeds = match &grad_outputs {
        None | Some(Value::None) => vec![Value::None; heads.len()],
        Some(g) => tensors(it, g)?,
    };
    if seeds.len() != heads.len() {
        return Err(runtime_error(format!(
            "grad_outputs: expected {} gradients (one per output), got {}",
            heads.len(),
            seeds.len()
        )));
    }
    let mut total: Vec<Option<Array>> = vec![None; inputs.len()];
    let last = heads.len().saturating_sub(1);
    for (i, (h, g)) in heads.iter().zip(&seeds).enumerate() {
        // One backward pass in PyTorch: the graph is freed after the last head only.
        let retain = retain || i < last;
        let head = tensor_of(h)?.array.clone();
        let seed = match g {
            Value::None => None,
            other => Some(tensor_of(other)?.array.clone()),
        };
        let st = it.state_mut();
        let grads = st
            .nn
            .tape
            .torch_grad(&st.rt, &head, seed.as_ref(), &inputs, retain)
            .map_err(torch_backward_exc)?;
        for (slot, g) in total.iter_mut().zip(grads) {
            *slot = match (slot.take(), g) {
                (Some(a), Some(b)) => Some(Array::binary(
                    BinaryOp::Add,
                    Operand::Array(&a),
                    Operand::Array(&b),
                )?),
                (a, b) => a.or(b),
            };
        }
    }
    let mut out = Vec::with_capacity(total.len());
    for g in total {
        match g {
            Some(g) => out.push(wrap(g, Flavor::Torch)),
            None if allow_unused => out.push(Value::None),
            None => return Err(runtime_error(
                "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.",
            )),
        }
    }
    Ok(Value::tuple(out))
}

/// `torch.autograd`: `backward`, `grad`, and the grad-mode managers again.
pub fn autograd_module() -> Rc<Module> {
    let m = Rc::new(Module::new(
        "torch.autograd",
        "automatic differentiation on the session's tape",
    ));
    m.set(
        "backward",
        builtin(
            "backward",
            "backward(tensors, grad_tensors=None, retain_graph=None): t.backward(g) for each pair.",
            autograd_backward,
        ),
    );
    m.set(
        "grad",
        builtin(
            "grad",
            "grad(outputs, inputs, grad_outputs=None, retain_graph=None, allow_unused=False): the gradients of outputs with respect to inputs, as a tuple (no .grad changes).",
            autograd_grad,
        ),
    );
    for (name, doc, f) in grad_mode_fns() {
        m.set(name, builtin(name, doc, f));
    }
    m
}

type Fns = [(&'static str, &'static str, crate::object::value::BuiltinFn); 5];

fn grad_mode_fns() -> Fns {
    [
        (
            "no_grad",
            "with torch.no_grad(): (or @torch.no_grad()) run without recording ops for autograd.",
            no_grad,
        ),
        (
            "enable_grad",
            "with torch.enable_grad(): record ops again inside no_grad().",
            enable_grad,
        ),
        (
            "inference_mode",
            "with torch.inference_mode(): like no_grad().",
            inference_mode,
        ),
        (
            "set_grad_enabled",
            "set_grad_enabled(mode): turn recording on or off (now, or for a with block).",
            set_grad_enabled,
        ),
        (
            "is_grad_enabled",
            "is_grad_enabled(): whether ops on tensors that require grad are recorded.",
            is_grad_enabled,
        ),
    ]
}

// ------------------------------------------------------------------ factories

/// `requires_grad=` of a factory: the tensor becomes a leaf that requires grad.
fn finish_factory(it: &mut dyn Interpreter, out: Value, requires: bool) -> Result<Value, Exc> {
    if requires {
        if let Value::Array(x) = &out {
            if !x.array.dtype().is_float() {
                return Err(runtime_error(
                    "Only Tensors of floating point and complex dtype can require gradients",
                ));
            }
            it.state_mut().nn.tape.set_requires_grad(&x.array, true);
        }
    }
    Ok(out)
}

macro_rules! factories {
    ($($name:ident => $f:expr),* $(,)?) => {
        $(fn $name(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
            let requires = flag_arg(a.take_kw("requires_grad"), false)?;
            let out = $f(it, a)?;
            finish_factory(it, out, requires)
        })*
        /// The factories that take `requires_grad=`, by their name in `torch`.
        fn factory_fns() -> Vec<(&'static str, crate::object::value::BuiltinFn)> {
            vec![$((stringify!($name), $name as crate::object::value::BuiltinFn)),*]
        }
    };
}

factories! {
    tensor => arrays::array::<TORCH>,
    ones => arrays::ones::<TORCH>,
    zeros => arrays::zeros::<TORCH>,
    empty => arrays::zeros::<TORCH>,
    full => arrays::full::<TORCH>,
    arange => arrays::arange::<TORCH>,
    eye => arrays::eye::<TORCH>,
    rand => arrays::rand::<TORCH>,
    randn => arrays::randn::<TORCH>,
    normal => crate::modules::array::array_more::torch_normal,
    ones_like => crate::modules::array::array_more::ones_like::<TORCH>,
    zeros_like => crate::modules::array::array_more::zeros_like::<TORCH>,
    empty_like => crate::modules::array::array_more::zeros_like::<TORCH>,
    full_like => crate::modules::array::array_more::full_like::<TORCH>,
    rand_like => crate::modules::array::array_more::rand_like::<TORCH>,
    randn_like => crate::modules::array::array_more::randn_like::<TORCH>,
}

/// Installs autograd into `torch`: the grad-mode functions, `torch.autograd`, and
/// `requires_grad=` on the factories (their docs kept).
pub fn install(m: &Module) {
    for (name, doc, f) in grad_mode_fns() {
        m.set(name, builtin(name, doc, f));
    }
    m.set("autograd", Value::Module(autograd_module()));
    for (name, f) in factory_fns() {
        let doc = match &m.get(name) {
            Some(Value::Builtin(b)) => b.doc,
            _ => "a new tensor (requires_grad=True makes it a leaf that records ops).",
        };
        m.set(name, builtin(name, doc, f));
    }
}
