//! `operator`: the operators as functions (`operator.add`, `operator.itemgetter(1)`), as programs
//! pass them to `sorted`, `map` and `functools.reduce`. Each is the language's own operator.

use std::rc::Rc;

use super::{module, set_fns};
use crate::lang::ast::{BinOp, CmpOp};
use crate::object::ops::{self, Index, IndexItem};
use crate::object::value::Module;
use crate::object::{method, Args, Exc, Interpreter, Value};

fn two(a: &mut Args) -> Result<(Value, Value), Exc> {
    let x = a.required(0, "a")?;
    let y = a.required(1, "b")?;
    a.finish(2)?;
    Ok((x, y))
}

fn binary(it: &mut dyn Interpreter, mut a: Args, op: BinOp) -> Result<Value, Exc> {
    let (x, y) = two(&mut a)?;
    ops::binary(it, op, &x, &y)
}

fn compare(it: &mut dyn Interpreter, mut a: Args, op: CmpOp) -> Result<Value, Exc> {
    let (x, y) = two(&mut a)?;
    ops::compare(it, op, &x, &y)
}

fn item(it: &mut dyn Interpreter, obj: &Value, key: &Value) -> Result<Value, Exc> {
    ops::get_item(it, obj, Index::Single(IndexItem::Value(key.clone())))
}

/// `itemgetter(k)(obj)` is obj[k]; with several keys, the tuple of them.
fn itemgetter(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    if a.pos.is_empty() {
        return Err(Exc::type_error("itemgetter expected 1 argument, got 0"));
    }
    let keys = Value::tuple(a.pos);
    Ok(method(
        &keys,
        "itemgetter",
        "obj[key] (a tuple for several keys)",
        |it, keys, mut a| {
            let obj = a.required(0, "obj")?;
            a.finish(1)?;
            let Value::Tuple(keys) = keys else {
                return Err(Exc::type_error("bad itemgetter"));
            };
            if keys.len() == 1 {
                return item(it, &obj, &keys[0]);
            }
            let mut out = Vec::with_capacity(keys.len());
            for k in keys.iter() {
                out.push(item(it, &obj, k)?);
            }
            Ok(Value::tuple(out))
        },
    ))
}

/// `attrgetter('a.b')(obj)` is obj.a.b; with several names, the tuple of them.
fn attrgetter(_it: &mut dyn Interpreter, a: Args) -> Result<Value, Exc> {
    if a.pos.is_empty() {
        return Err(Exc::type_error("attrgetter expected 1 argument, got 0"));
    }
    for n in &a.pos {
        if !matches!(n, Value::Str(_)) {
            return Err(Exc::type_error("attribute name must be a string"));
        }
    }
    let names = Value::tuple(a.pos);
    Ok(method(
        &names,
        "attrgetter",
        "obj.name (a tuple for several names)",
        |it, names, mut a| {
            let obj = a.required(0, "obj")?;
            a.finish(1)?;
            let Value::Tuple(names) = names else {
                return Err(Exc::type_error("bad attrgetter"));
            };
            let mut out = Vec::with_capacity(names.len());
            for n in names.iter() {
                let Value::Str(path) = n else { continue };
                let mut v = obj.clone();
                for part in path.split('.') {
                    v = it.get_attr(&v, part)?;
                }
                out.push(v);
            }
            Ok(if out.len() == 1 {
                out.remove(0)
            } else {
                Value::tuple(out)
            })
        },
    ))
}

pub fn build() -> Rc<Module> {
    let m = module("operator", "Standard operators as functions.");
    set_fns(
        &m,
        &[
            ("add", "add(a, b): a + b.", |it, a| {
                binary(it, a, BinOp::Add)
            }),
            ("sub", "sub(a, b): a - b.", |it, a| {
                binary(it, a, BinOp::Sub)
            }),
            ("mul", "mul(a, b): a * b.", |it, a| {
                binary(it, a, BinOp::Mul)
            }),
            ("truediv", "truediv(a, b): a / b.", |it, a| {
                binary(it, a, BinOp::Div)
            }),
            ("floordiv", "floordiv(a, b): a // b.", |it, a| {
                binary(it, a, BinOp::FloorDiv)
            }),
            ("mod", "mod(a, b): a % b.", |it, a| {
                binary(it, a, BinOp::Mod)
            }),
            ("pow", "pow(a, b): a ** b.", |it, a| {
                binary(it, a, BinOp::Pow)
            }),
            ("matmul", "matmul(a, b): a @ b.", |it, a| {
                binary(it, a, BinOp::MatMul)
            }),
            ("eq", "eq(a, b): a == b.", |it, a| compare(it, a, CmpOp::Eq)),
            ("ne", "ne(a, b): a != b.", |it, a| {
                compare(it, a, CmpOp::NotEq)
            }),
            ("lt", "lt(a, b): a < b.", |it, a| compare(it, a, CmpOp::Lt)),
            ("le", "le(a, b): a <= b.", |it, a| {
                compare(it, a, CmpOp::LtE)
            }),
            ("gt", "gt(a, b): a > b.", |it, a| compare(it, a, CmpOp::Gt)),
            ("ge", "ge(a, b): a >= b.", |it, a| {
                compare(it, a, CmpOp::GtE)
            }),
            ("contains", "contains(a, b): b in a.", |it, mut a| {
                let (x, y) = two(&mut a)?;
                ops::compare(it, CmpOp::In, &y, &x)
            }),
            ("neg", "neg(a): -a.", |it, mut a| {
                let x = a.required(0, "a")?;
                a.finish(1)?;
                ops::unary(it, crate::lang::ast::UnaryOp::Neg, &x)
            }),
            ("not_", "not_(a): not a.", |it, mut a| {
                let x = a.required(0, "a")?;
                a.finish(1)?;
                Ok(Value::Bool(!crate::object::class::truthy(it, &x)?))
            }),
            ("truth", "truth(a): bool(a).", |it, mut a| {
                let x = a.required(0, "a")?;
                a.finish(1)?;
                Ok(Value::Bool(crate::object::class::truthy(it, &x)?))
            }),
            ("getitem", "getitem(a, b): a[b].", |it, mut a| {
                let (x, y) = two(&mut a)?;
                item(it, &x, &y)
            }),
            (
                "itemgetter",
                "itemgetter(*keys): a callable giving obj[key].",
                itemgetter,
            ),
            (
                "attrgetter",
                "attrgetter(*names): a callable giving obj.name.",
                attrgetter,
            ),
        ],
    );
    m
}
