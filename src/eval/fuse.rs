//! Elementwise fusion at the expression level: `(z + 2).exp() * y` runs as one pass over `z` and
//! `y` (`Array::fused`) instead of three ops with two temporaries.
//!
//! The interpreter asks [`try_fuse`] before evaluating an arithmetic operator, a unary minus or
//! an elementwise method call (`.exp()`, `.sqrt()`, ...). Fusion applies only where it cannot
//! change what the program sees:
//! - the tree has at least two fusable ops, and its leaves are names and number literals, which
//!   have no side effects: a failed attempt simply evaluates the expression again the usual way,
//!   so every error (unknown name, device mismatch, shape mismatch) is the usual one;
//! - every op has an array operand: `(0.1 * 3) * x` is Python arithmetic first, left unfused;
//! - every array leaf is a float array of one dtype, shape and device (the runtime checks this
//!   and answers None otherwise), and the result takes the flavor the one-op path would give;
//! - autograd is not recording (the tape needs each op).
//!
//! The fused kernels apply the same per-element functions in the same dtype as the one-op
//! kernels, so the result is bit-for-bit the unfused one.
use super::interp::Interp;
use super::ops::{as_scalar, runtime_binop, wrap};
use super::value::{Flavor, Value};
use crate::lang::ast::{BinOp, Expr, ExprKind, UnaryOp as AstUnary};
use crate::runtime::{Array, FusedExpr, UnaryOp};

/// The elementwise methods of an array that take no arguments, by name.
fn method_op(name: &str) -> Option<UnaryOp> {
    Some(match name {
        "exp" => UnaryOp::Exp,
        "log" => UnaryOp::Log,
        "sqrt" => UnaryOp::Sqrt,
        "abs" => UnaryOp::Abs,
        "tanh" => UnaryOp::Tanh,
        "sigmoid" => UnaryOp::Sigmoid,
        "relu" => UnaryOp::Relu,
        "square" => UnaryOp::Square,
        _ => return None,
    })
}

/// The op of an expression node that fuses, with its operands.
enum Node<'e> {
    Unary(UnaryOp, &'e Expr),
    Binary(crate::runtime::BinaryOp, &'e Expr, &'e Expr),
}

fn node(e: &Expr) -> Option<Node<'_>> {
    match &e.kind {
        ExprKind::Binary { op, left, right } if *op != BinOp::MatMul => {
            let (rop, _) = runtime_binop(*op)?;
            FusedExpr::fuses_binary(rop).then_some(Node::Binary(rop, left, right))
        }
        ExprKind::Unary {
            op: AstUnary::Neg,
            operand,
        } => Some(Node::Unary(UnaryOp::Neg, operand)),
        ExprKind::Call { func, args } if args.is_empty() => match &func.kind {
            ExprKind::Attribute { value, attr, .. } => {
                method_op(attr).map(|op| Node::Unary(op, value.as_ref()))
            }
            _ => None,
        },
        _ => None,
    }
}

fn is_leaf(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Name(_) | ExprKind::Int(_) | ExprKind::Float(_)
    )
}

/// Fusable ops in the tree under `e` (0 when some part of it cannot fuse).
fn fusable_ops(e: &Expr) -> usize {
    let count = |child: &Expr| {
        if is_leaf(child) {
            Some(0)
        } else {
            match fusable_ops(child) {
                0 => None,
                n => Some(n),
            }
        }
    };
    let total = match node(e) {
        Some(Node::Unary(_, x)) => count(x).map(|n| n + 1),
        Some(Node::Binary(_, a, b)) => count(a).and_then(|x| count(b).map(|y| x + y + 1)),
        None => None,
    };
    total.unwrap_or(0)
}

/// The fused tree for `e` and the flavor its result takes (None: a scalar leaf), adding the
/// arrays it reads to `leaves`; Err(()) when something cannot fuse: then no fusion.
fn build(
    it: &mut Interp,
    e: &Expr,
    leaves: &mut Vec<Array>,
) -> Result<(FusedExpr, Option<Flavor>), ()> {
    let scalar = |v: &Value| as_scalar(v).map(|s| (FusedExpr::Scalar(s.as_f64()), None));
    match &e.kind {
        ExprKind::Int(i) => scalar(&Value::Int(*i)).ok_or(()),
        ExprKind::Float(f) => scalar(&Value::Float(*f)).ok_or(()),
        ExprKind::Name(name) => match it.lookup(name) {
            Some(Value::Array(a)) => {
                // Inputs are distinct buffers. The same buffer under another name reads the same
                // values only when the shape is the same too; anything else is left unfused.
                let index = match leaves.iter().position(|b| b.shares_buffer(&a.array)) {
                    Some(i) if leaves[i].shape() == a.array.shape() => i,
                    Some(_) => return Err(()),
                    None => {
                        leaves.push(a.array.clone());
                        leaves.len() - 1
                    }
                };
                Ok((FusedExpr::Input(index), Some(a.flavor)))
            }
            Some(other) => scalar(&other).ok_or(()),
            None => Err(()),
        },
        // An op over scalars only is Python arithmetic (in f64 or exact integers, with its own
        // errors), not an array op: such a tree is left to the one-op path.
        _ => match node(e).ok_or(())? {
            Node::Unary(op, x) => {
                let (x, flavor) = build(it, x, leaves)?;
                let flavor = flavor.ok_or(())?;
                Ok((FusedExpr::Unary(op, Box::new(x)), Some(flavor)))
            }
            Node::Binary(op, a, b) => {
                let (a, fa) = build(it, a, leaves)?;
                let (b, fb) = build(it, b, leaves)?;
                // As in the one-op path: the left array operand's flavor wins.
                let flavor = fa.or(fb).ok_or(())?;
                Ok((
                    FusedExpr::Binary(op, Box::new(a), Box::new(b)),
                    Some(flavor),
                ))
            }
        },
    }
}

/// `e` evaluated as one fused pass, or None: evaluate it the usual way.
pub fn try_fuse(it: &mut Interp, e: &Expr) -> Option<Value> {
    if fusable_ops(e) < 2 || it.st.nn.tape.is_recording() {
        return None;
    }
    let mut leaves = Vec::new();
    let (expr, flavor) = build(it, e, &mut leaves).ok()?;
    // Any runtime refusal or error: the one-op path gives the result, or the error, as usual.
    let out = Array::fused(&expr, &leaves).ok()??;
    Some(wrap(out, flavor?))
}
