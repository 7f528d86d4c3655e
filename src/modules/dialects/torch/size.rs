//! `torch.Size`: the tuple subclass a tensor's `.shape` and `.size()` return. It is a native
//! class over `tuple` (the tuple is the instance's `base_state`), so `len`, iteration,
//! unpacking, `==` with a tuple and hashing behave as for the tuple; it adds PyTorch's repr
//! (`torch.Size([2, 3])`), slices that stay `torch.Size`, and `numel()`.

use std::rc::Rc;

use crate::modules::python::stdlib::{native_class, new_instance, this_state};
use crate::object::class::Class;
use crate::object::ops::{self, Index, IndexItem};
use crate::object::value::TypeKind;
use crate::object::{method, Args, Exc, Interpreter, Value};

/// The class, made once per session with the `torch` module.
pub fn class() -> Rc<Class> {
    native_class(
        "Size",
        "torch",
        Value::Type(TypeKind::Tuple),
        "torch.Size(iterable=(), /): the shape of a tensor, a tuple of ints.",
        &[
            ("__init__", init),
            ("__repr__", size_repr),
            ("__getitem__", getitem),
            ("__add__", add),
            ("__getattr__", getattr),
        ],
    )
}

/// A `torch.Size` of `dims`, of this session's class.
pub fn value(it: &mut dyn Interpreter, dims: &[usize]) -> Result<Value, Exc> {
    let torch = it.import("torch")?;
    let tuple = Value::tuple(dims.iter().map(|d| Value::Int(*d as i64)).collect());
    Ok(match &torch.get("Size") {
        Some(Value::Class(c)) => new_instance(c, tuple),
        // The user replaced `torch.Size`: a plain tuple still carries the shape.
        _ => tuple,
    })
}

fn items_of(v: &Value) -> Rc<Vec<Value>> {
    match v {
        Value::Tuple(t) => t.clone(),
        _ => Rc::new(Vec::new()),
    }
}

fn init(it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    let mut pos = a.pos.into_iter();
    let this = pos.next().unwrap_or(Value::None);
    let src = pos.next();
    if pos.next().is_some() || !a.kw.is_empty() {
        return Err(Exc::type_error(
            "torch.Size() takes at most 1 positional argument, an iterable of ints",
        ));
    }
    let items = match src {
        None => Vec::new(),
        Some(v) => it.iterate(&v)?,
    };
    for (i, x) in items.iter().enumerate() {
        if !matches!(x, Value::Int(_) | Value::Bool(_)) {
            return Err(Exc::type_error(format!(
                "torch.Size() takes an iterable of 'int' (item {i} is '{}')",
                x.type_name()
            )));
        }
    }
    if let Value::Instance(inst) = &this {
        *inst.base_state.borrow_mut() = Value::tuple(items);
    }
    Ok(Value::None)
}

pub fn text(dims: &[Value]) -> String {
    let parts: Vec<String> = dims
        .iter()
        .map(|d| match d {
            Value::Int(i) => i.to_string(),
            Value::Bool(b) => (*b as i64).to_string(),
            _ => "?".to_string(),
        })
        .collect();
    format!("torch.Size([{}])", parts.join(", "))
}

fn size_repr(_it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (_, s) = this_state(&mut a)?;
    Ok(Value::str(&text(&items_of(&s))))
}

fn getitem(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, s) = this_state(&mut a)?;
    let k = a.required(1, "index")?;
    let out = ops::get_item(it, &s, Index::Single(IndexItem::Value(k)))?;
    // A slice of a torch.Size is a torch.Size.
    match (&out, &this) {
        (Value::Tuple(_), Value::Instance(inst)) => Ok(new_instance(&inst.class(), out)),
        _ => Ok(out),
    }
}

/// `size + (3,)`: a torch.Size, as PyTorch's concatenation gives.
fn add(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, s) = this_state(&mut a)?;
    let other = a.required(1, "other")?;
    let other = crate::modules::array::array_more::tuple_like(&other);
    if !matches!(other, Value::Tuple(_)) {
        return Ok(crate::object::class::not_implemented());
    }
    let joined = ops::binary(it, crate::lang::ast::BinOp::Add, &s, &other)?;
    match &this {
        Value::Instance(inst) => Ok(new_instance(&inst.class(), joined)),
        _ => Ok(joined),
    }
}

fn getattr(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (this, s) = this_state(&mut a)?;
    let name = a.required(1, "name")?;
    match &name {
        Value::Str(n) if &**n == "numel" => Ok(method(
            &this,
            "numel",
            "numel(): the number of elements a tensor of this shape holds.",
            |_, r, a| {
                a.finish(0)?;
                let s = match r {
                    Value::Instance(i) => i.base_state.borrow().clone(),
                    _ => Value::None,
                };
                let mut n: i64 = 1;
                for d in items_of(&s).iter() {
                    n = n.saturating_mul(ops::as_i64(d).unwrap_or(0));
                }
                Ok(Value::Int(n))
            },
        )),
        // The tuple's own methods (`index`, `count`).
        Value::Str(n) => it.get_attr(&s, n).map_err(|_| {
            Exc::new(
                crate::object::ExcKind::AttributeError,
                format!("'torch.Size' object has no attribute '{n}'"),
            )
        }),
        _ => Err(Exc::type_error("attribute name must be string")),
    }
}
