//! Elementwise fusion at the expression level: `(z + 2).exp() * y` runs as one pass over `z` and
//! `y` (`Array::fused`) instead of three ops with two temporaries.
//!
//! The interpreter asks [`try_fuse`] before evaluating an arithmetic operator, a unary minus, an
//! elementwise method call (`.exp()`, `.sqrt()`, ...) or a call of a built-in elementwise
//! function (`np.exp(x)`, `nd.relu(x)`, `torch.tanh(x)`, `abs(x)`). Fusion applies only where it
//! cannot change what the program sees:
//! - the tree has at least two fusable ops, and its leaves are *pure*: names, number literals,
//!   `a @ b` of arrays, and a few attributes (`x.T`, `x.grad`, `x.size`, `x.ndim`, a module's
//!   members). Evaluating a pure leaf has no effect but its value, so when the attempt fails the
//!   expression is evaluated the usual way and every error (unknown name, device mismatch, shape
//!   mismatch) is the usual one, in the usual order;
//! - a function call fuses only when its callee is the built-in function itself (the user may
//!   rebind `np`), with one positional argument;
//! - every op has an array operand: `(0.1 * k) * z` computes `0.1 * k` as Python arithmetic
//!   first, exactly as the one-op path does, and uses it as a scalar;
//! - every array leaf is a float array of one dtype, shape and device (the runtime checks this
//!   and answers None otherwise), and the result takes the flavor the one-op path would give;
//! - autograd is not recording (the tape needs each op), nor would record an op on the leaves
//!   (PyTorch's tensors that require grad).
//!
//! A failed attempt leaves a [`Fallback`] for the usual evaluation of its expression: the leaves
//! it computed (so `a @ b` is not multiplied twice) and the op nodes that cannot fuse with these
//! values (so a deep expression over int arrays is not tried again at every level).
//!
//! The fused kernels apply the same per-element functions in the same dtype as the one-op
//! kernels, so the result is bit-for-bit the unfused one.
use super::interp::Interp;
use crate::lang::ast::{Arg, BinOp, Expr, ExprKind, UnaryOp as AstUnary};
use crate::object::guard::grow;
use crate::object::ops::{as_scalar, runtime_binop, wrap};
use crate::object::value::{BuiltinFn, BuiltinKind, Flavor, Value};
use crate::runtime::{Array, FusedExpr, UnaryOp};

/// The elementwise methods of an array that take no arguments, by name; also the names of the
/// built-in elementwise functions (`np.exp`, `abs`), whose callee is checked when evaluated.
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

/// The op of a built-in elementwise function, when `callee` is one. The namespace functions are
/// shared by every dialect (`nd`, `np`, `torch`, the native globals), so one table covers them.
/// Functions are compared by address: two equal addresses are the same code, and a function that
/// is not found is simply left unfused.
fn builtin_op(callee: &Value) -> Option<UnaryOp> {
    let Value::Builtin(b) = callee else {
        return None;
    };
    let BuiltinKind::Free(f) = b.kind else {
        return None;
    };
    use crate::modules::array::arrays as a;
    let table: [(BuiltinFn, UnaryOp); 9] = [
        (a::ns_exp, UnaryOp::Exp),
        (a::ns_log, UnaryOp::Log),
        (a::ns_sqrt, UnaryOp::Sqrt),
        (a::ns_abs, UnaryOp::Abs),
        (a::ns_tanh, UnaryOp::Tanh),
        (a::ns_sigmoid, UnaryOp::Sigmoid),
        (a::ns_relu, UnaryOp::Relu),
        (a::ns_square, UnaryOp::Square),
        (crate::modules::python::builtins::abs, UnaryOp::Abs),
    ];
    table
        .iter()
        .find(|(g, _)| std::ptr::fn_addr_eq(f, *g))
        .map(|(_, op)| *op)
}

/// Attributes of an array that only read it (and give an array or a number).
const PURE_ARRAY_ATTRS: [&str; 5] = ["T", "grad", "data", "size", "ndim"];

/// The op of an expression node that fuses, with its operands.
enum Node<'e> {
    Unary(UnaryOp, &'e Expr),
    Binary(crate::runtime::BinaryOp, &'e Expr, &'e Expr),
    /// A call of a function that may be a built-in elementwise one: (callee, argument).
    Call(&'e Expr, &'e Expr),
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
        ExprKind::Call { func, args } => match (&func.kind, args.as_slice()) {
            (ExprKind::Attribute { value, attr, .. }, []) => {
                method_op(attr).map(|op| Node::Unary(op, value.as_ref()))
            }
            (ExprKind::Attribute { value, attr, .. }, [Arg::Positional(x)]) => {
                (method_op(attr).is_some() && is_pure(value)).then_some(Node::Call(func, x))
            }
            (ExprKind::Name(name), [Arg::Positional(x)]) => {
                method_op(name).is_some().then_some(Node::Call(func, x))
            }
            _ => None,
        },
        _ => None,
    }
}

/// Whether evaluating `e` can have no effect but its value (and maybe an error): names, number
/// literals, matrix products and attributes of such expressions. Which attributes are really
/// pure depends on the object, so [`pure_value`] checks that again.
fn is_pure(e: &Expr) -> bool {
    grow(|| is_pure_inner(e))
}

fn is_pure_inner(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Name(_) | ExprKind::Int(_) | ExprKind::Float(_) => true,
        ExprKind::Binary {
            op: BinOp::MatMul,
            left,
            right,
        } => is_pure(left) && is_pure(right),
        ExprKind::Attribute { value, .. } => is_pure(value),
        _ => false,
    }
}

/// Fusable ops in the tree under `e` (0 when some part of it cannot fuse).
fn fusable_ops(e: &Expr) -> usize {
    grow(|| fusable_ops_inner(e))
}

fn fusable_ops_inner(e: &Expr) -> usize {
    let count = |child: &Expr| match fusable_ops(child) {
        0 if is_pure(child) => Some(0),
        0 => None,
        n => Some(n),
    };
    let total = match node(e) {
        Some(Node::Unary(_, x) | Node::Call(_, x)) => count(x).map(|n| n + 1),
        Some(Node::Binary(_, a, b)) => count(a).and_then(|x| count(b).map(|y| x + y + 1)),
        None => None,
    };
    total.unwrap_or(0)
}

/// The value of a pure expression, or None when it errs or is not pure after all (an attribute
/// of some other object): then the usual evaluation computes it, with its usual error.
fn pure_value(it: &mut Interp, e: &Expr) -> Option<Value> {
    grow(|| pure_value_inner(it, e))
}

fn pure_value_inner(it: &mut Interp, e: &Expr) -> Option<Value> {
    match &e.kind {
        ExprKind::Name(name) => it.lookup_name(name),
        ExprKind::Int(i) => Some(Value::Int(*i)),
        ExprKind::Float(f) => Some(Value::Float(*f)),
        ExprKind::Binary {
            op: BinOp::MatMul,
            left,
            right,
        } => {
            let l = pure_value(it, left)?;
            let r = pure_value(it, right)?;
            // Only array @ array: `x @ gpu(0)` copies (the transfer is counted), so it is not pure.
            if !(matches!(l, Value::Array(_)) && matches!(r, Value::Array(_))) {
                return None;
            }
            #[cfg(test)]
            tests::count(|c| c.products += 1);
            crate::object::ops::binary(it, BinOp::MatMul, &l, &r).ok()
        }
        ExprKind::Attribute { value, attr, .. } => match pure_value(it, value)? {
            Value::Module(ref m) => m.get(attr),
            obj @ Value::Array(_) if PURE_ARRAY_ATTRS.contains(&&**attr) => {
                crate::modules::python::builtins::get_attr(it, &obj, attr).ok()
            }
            _ => None,
        },
        _ => None,
    }
}

/// What a failed attempt leaves for the usual evaluation of its expression (see the module
/// docs). Nodes are keyed by address: they belong to the tree being evaluated, which outlives
/// this record (the interpreter drops it when that evaluation ends).
#[derive(Default)]
pub struct Fallback {
    /// Leaves computed by an attempt (matrix products, attributes), taken by their evaluation.
    values: Vec<(*const Expr, Value)>,
    /// Op nodes that cannot fuse with these values: trying them again would fail again.
    no_retry: Vec<*const Expr>,
}

/// What [`try_fuse`] decided.
pub enum Attempt {
    /// The value: fused, or a leaf an earlier attempt computed.
    Done(Value),
    /// Evaluate the expression the usual way.
    Usual,
    /// Evaluate the expression the usual way, then drop the interpreter's fallback record,
    /// which this attempt started.
    UsualThenForget,
}

/// A part of the tree being built.
enum Part<'e> {
    /// Numbers only: Python arithmetic, computed (by the usual path's functions) only when an
    /// array op needs it as a scalar.
    Numbers(&'e Expr),
    /// Array ops: the fused tree, the flavor of its result, and one input it reads (all its
    /// inputs share its dtype, device and shape).
    Array(FusedExpr, Flavor, usize),
}

/// Why a part cannot fuse.
enum Miss {
    /// Not with these values (an int array, an op on numbers only that is not arithmetic...):
    /// the rest of the tree is still built, so its leaves are computed once.
    Unfusable,
    /// A leaf erred or is not an array or a number: stop evaluating anything.
    Stop,
}

struct Builder {
    /// The arrays the fused tree reads, by input index.
    leaves: Vec<Array>,
    /// Leaves computed here, for the usual evaluation should the attempt fail.
    computed: Vec<(*const Expr, Value)>,
    /// Op nodes that did not fuse.
    no_retry: Vec<*const Expr>,
}

impl Builder {
    fn build<'e>(&mut self, it: &mut Interp, e: &'e Expr) -> Result<Part<'e>, Miss> {
        let Some(n) = node(e) else {
            return self.leaf(it, e);
        };
        let part = grow(|| self.op(it, e, n));
        if part.is_err() || matches!(part, Ok(Part::Numbers(_))) {
            self.no_retry.push(e);
        }
        part
    }

    fn op<'e>(&mut self, it: &mut Interp, e: &'e Expr, n: Node<'e>) -> Result<Part<'e>, Miss> {
        match n {
            Node::Unary(op, x) => match self.build(it, x)? {
                Part::Array(x, flavor, input) => Ok(Part::Array(
                    FusedExpr::Unary(op, Box::new(x)),
                    flavor,
                    input,
                )),
                Part::Numbers(_) if op == UnaryOp::Neg => Ok(Part::Numbers(e)),
                // A method of a number (`k.exp()`) is not an array op.
                Part::Numbers(_) => Err(Miss::Unfusable),
            },
            Node::Call(func, x) => {
                // The callee first, as the usual path evaluates it: a rebound name or a user
                // function stops the attempt before anything else is evaluated.
                let op = pure_value(it, func)
                    .as_ref()
                    .and_then(builtin_op)
                    .ok_or(Miss::Stop)?;
                match self.build(it, x)? {
                    Part::Array(x, flavor, input) => Ok(Part::Array(
                        FusedExpr::Unary(op, Box::new(x)),
                        flavor,
                        input,
                    )),
                    Part::Numbers(_) => Err(Miss::Unfusable),
                }
            }
            Node::Binary(op, a, b) => {
                let left = self.build(it, a);
                if let Err(Miss::Stop) = left {
                    return Err(Miss::Stop);
                }
                // Even when the left side cannot fuse, the right side's leaves are computed now,
                // once, and its nodes that cannot fuse are marked.
                let right = self.build(it, b);
                let (left, right) = match (left, right) {
                    (Err(Miss::Stop), _) | (_, Err(Miss::Stop)) => return Err(Miss::Stop),
                    (Err(_), _) | (_, Err(_)) => return Err(Miss::Unfusable),
                    (Ok(l), Ok(r)) => (l, r),
                };
                // As in the usual path: the left array operand's flavor wins.
                let (flavor, input) = match (&left, &right) {
                    (Part::Array(_, f, l), Part::Array(_, _, r)) => {
                        if !self.one_pass(*l, *r) {
                            return Err(Miss::Unfusable);
                        }
                        (*f, *l)
                    }
                    (Part::Array(_, f, i), _) | (Part::Numbers(_), Part::Array(_, f, i)) => {
                        (*f, *i)
                    }
                    (Part::Numbers(_), Part::Numbers(_)) => return Ok(Part::Numbers(e)),
                };
                let a = self.operand(it, left)?;
                let b = self.operand(it, right)?;
                Ok(Part::Array(
                    FusedExpr::Binary(op, Box::new(a), Box::new(b)),
                    flavor,
                    input,
                ))
            }
        }
    }

    /// Whether inputs `a` and `b` can be read in one pass (as `Array::fused` checks): when not,
    /// no op above them fuses, though each side may on its own (a broadcast bias).
    fn one_pass(&self, a: usize, b: usize) -> bool {
        match (self.leaves.get(a), self.leaves.get(b)) {
            (Some(a), Some(b)) => {
                a.dtype() == b.dtype() && a.device() == b.device() && a.shape() == b.shape()
            }
            _ => false,
        }
    }

    /// A part as an operand of an array op: numbers become the scalar they compute.
    fn operand(&mut self, it: &mut Interp, part: Part<'_>) -> Result<FusedExpr, Miss> {
        match part {
            Part::Array(x, ..) => Ok(x),
            Part::Numbers(e) => {
                let v = numbers_value(it, e).ok_or(Miss::Stop)?;
                let s = as_scalar(&v).ok_or(Miss::Stop)?;
                Ok(FusedExpr::Scalar(s.as_f64()))
            }
        }
    }

    fn leaf<'e>(&mut self, it: &mut Interp, e: &'e Expr) -> Result<Part<'e>, Miss> {
        let value = match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) => return Ok(Part::Numbers(e)),
            ExprKind::Name(name) => it.lookup_name(name),
            _ => match cached(it, e) {
                Some(v) => Some(v),
                None => {
                    let v = pure_value(it, e);
                    if let Some(v) = &v {
                        self.computed.push((e, v.clone()));
                    }
                    v
                }
            },
        };
        match &value.ok_or(Miss::Stop)? {
            // One pass reads float arrays only (as `Array::fused` checks): an int array
            // makes every op above it unfusable, and they are marked so at once.
            Value::Array(a) if !a.array.dtype().is_float() => Err(Miss::Unfusable),
            Value::Array(a) => {
                // Inputs are distinct buffers. The same buffer in another leaf reads the same
                // values only when the shape is the same too; anything else is left unfused.
                let index = match self.leaves.iter().position(|b| b.shares_buffer(&a.array)) {
                    Some(i) if self.leaves.get(i).map(Array::shape) == Some(a.array.shape()) => i,
                    Some(_) => return Err(Miss::Unfusable),
                    None => {
                        self.leaves.push(a.array.clone());
                        self.leaves.len() - 1
                    }
                };
                Ok(Part::Array(FusedExpr::Input(index), a.flavor, index))
            }
            v if as_scalar(v).is_some() => Ok(Part::Numbers(e)),
            // Anything else (a list, an object) may behave in its own way under an operator.
            _ => Err(Miss::Stop),
        }
    }
}

/// A leaf computed by an earlier attempt in the same evaluation, read without taking it.
fn cached(it: &Interp, e: &Expr) -> Option<Value> {
    let key: *const Expr = e;
    let fallback = it.fuse_fallback.as_ref()?;
    fallback
        .values
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.clone())
}

/// The value of a tree of numbers, computed by the usual path's operator functions (so with its
/// rounding and overflow rules); None on any error (the usual evaluation then raises it).
fn numbers_value(it: &mut Interp, e: &Expr) -> Option<Value> {
    grow(|| numbers_value_inner(it, e))
}

fn numbers_value_inner(it: &mut Interp, e: &Expr) -> Option<Value> {
    match &e.kind {
        ExprKind::Binary { op, left, right } if *op != BinOp::MatMul => {
            let l = numbers_value(it, left)?;
            let r = numbers_value(it, right)?;
            crate::object::ops::binary(it, *op, &l, &r).ok()
        }
        ExprKind::Unary {
            op: AstUnary::Neg,
            operand,
        } => {
            let v = numbers_value(it, operand)?;
            crate::object::ops::unary(it, AstUnary::Neg, &v).ok()
        }
        _ => match cached(it, e) {
            Some(v) => Some(v),
            None => pure_value(it, e),
        },
    }
}

/// The most ops one fused pass takes: a longer chain (`x + x + ... + x`, thousands of terms)
/// runs as passes over its subtrees of at most this size, so the fused expression, which the
/// backends walk recursively per block, stays shallow.
const MAX_FUSED_OPS: usize = 64;

/// `e` evaluated as one fused pass, or what to do instead.
pub fn try_fuse(it: &mut Interp, e: &Expr) -> Attempt {
    let key: *const Expr = e;
    if let Some(fallback) = it.fuse_fallback.as_mut() {
        if let Some(i) = fallback.values.iter().position(|(k, _)| *k == key) {
            #[cfg(test)]
            tests::count(|c| c.leaves_reused += 1);
            return Attempt::Done(fallback.values.swap_remove(i).1);
        }
        if fallback.no_retry.contains(&key) {
            return Attempt::Usual;
        }
    }
    let ops = fusable_ops(e);
    if !(2..=MAX_FUSED_OPS).contains(&ops) || it.st.nn.tape.is_recording() {
        return Attempt::Usual;
    }
    #[cfg(test)]
    tests::count(|c| c.attempts += 1);
    let mut builder = Builder {
        leaves: Vec::new(),
        computed: Vec::new(),
        no_retry: Vec::new(),
    };
    if let Ok(Part::Array(expr, flavor, _)) = builder.build(it, e) {
        // A runtime refusal or error: the usual path gives the result, or the error, as usual.
        // Tensors that require grad are recorded op by op (PyTorch records without record()).
        if !it.st.nn.tape.would_record(&builder.leaves) {
            if let Ok(Some(out)) = Array::fused(&expr, &builder.leaves) {
                // NumPy reports a division by zero, an overflow or an invalid value op by op
                // (`object::ops::NUMPY_FP_CHECK`): a non-finite NumPy result takes that path.
                let reported = flavor == crate::object::value::Flavor::Numpy
                    && !out.to_host().to_f64_vec().iter().all(|v| v.is_finite());
                if !reported {
                    #[cfg(test)]
                    tests::count(|c| c.fused += 1);
                    return Attempt::Done(wrap(out, flavor));
                }
            }
        }
    }
    let Builder {
        computed, no_retry, ..
    } = builder;
    match it.fuse_fallback.as_mut() {
        Some(fallback) => {
            fallback.values.extend(computed);
            fallback.no_retry.extend(no_retry);
            Attempt::Usual
        }
        // Two ops have no subtree of two ops to retry: a record pays only for computed leaves.
        None if computed.is_empty() && ops < 3 => Attempt::Usual,
        None => {
            it.fuse_fallback = Some(Box::new(Fallback {
                values: computed,
                no_retry,
            }));
            Attempt::UsualThenForget
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::eval::session::{Output, Session, SessionConfig};
    use std::cell::Cell;

    /// What fusion did on this thread (each test runs on its own thread).
    #[derive(Clone, Copy, Default, Debug, PartialEq)]
    pub(super) struct Counts {
        pub attempts: usize,
        pub fused: usize,
        pub leaves_reused: usize,
        /// Matrix products computed by attempts.
        pub products: usize,
    }

    thread_local! {
        static COUNTS: Cell<Counts> = Cell::new(Counts::default());
    }

    pub(super) fn count(f: impl FnOnce(&mut Counts)) {
        COUNTS.with(|c| {
            let mut counts = c.get();
            f(&mut counts);
            c.set(counts);
        });
    }

    fn session(setup: &str) -> Session {
        let mut s = Session::new(SessionConfig::default());
        let out = s.eval(setup);
        assert!(out.error.is_none(), "{setup}: {:?}", out.error);
        s
    }

    /// Runs `code` (no error expected) and answers what it printed and what fusion did.
    fn run(s: &mut Session, code: &str) -> (String, Counts) {
        COUNTS.with(|c| c.set(Counts::default()));
        let out = s.eval(code);
        assert!(out.error.is_none(), "{code}: {:?}", out.error);
        let printed = out
            .outputs
            .iter()
            .filter_map(|o| match o {
                Output::Stdout(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        (printed, COUNTS.with(Cell::get))
    }

    const SETUP: &str = "from mxnet import nd\n\
        z = nd.array([0.5, 1, -3, 20])\n\
        y = nd.array([1, 2, 3, 4])\n\
        a = nd.array([[1, 2], [3, 4]])\n\
        b = nd.array([[0.5, -1], [2, 1]])\n\
        row = nd.array([1, 2])\n\
        i = nd.array([1, 2, 3, 4], dtype='int32')\n";

    #[test]
    fn builtin_function_calls_fuse_with_the_unfused_bits() {
        let mut s = session(SETUP);
        let (printed, counts) = run(
            &mut s,
            "f = nd.exp(z + 2) * y\nt = z + 2\nt = t.exp()\nprint((f == t * y).sum().asscalar())",
        );
        assert_eq!(printed, "4.0\n");
        assert_eq!((counts.attempts, counts.fused), (1, 1));
        let (_, counts) = run(&mut s, "f = abs(z) * 2 + nd.relu(z)");
        assert_eq!(counts.fused, 1);
    }

    #[test]
    fn a_rebound_module_name_is_not_fused_as_the_builtin() {
        let mut s = session(SETUP);
        let code = "\
            def loud(x):\n    print('loud')\n    return x\n\
            exp = loud\n\
            print(exp(z * 2) + 1)";
        let (printed, counts) = run(&mut s, code);
        assert_eq!(printed, "loud\n\n[ 2.  3. -5. 41.]\n<NDArray 4 @cpu(0)>\n");
        assert_eq!(counts.fused, 0);
    }

    #[test]
    fn matmul_and_transpose_leaves_fuse() {
        let mut s = session(SETUP);
        let (printed, counts) = run(&mut s, "print((a @ b).relu() + a.T * 2)");
        assert_eq!(
            printed,
            "\n[[ 6.5  7. ]\n [13.5  9. ]]\n<NDArray 2x2 @cpu(0)>\n"
        );
        assert_eq!(counts.fused, 1);
    }

    #[test]
    fn a_failed_attempt_hands_its_matmul_to_the_usual_path() {
        let mut s = session(SETUP);
        // The row broadcasts, which one pass does not do: the product is computed once, by the
        // attempt, and the subtree without the row then fuses on its own.
        let (printed, counts) = run(&mut s, "print(((a @ b).relu() + 1).exp() * row)");
        assert_eq!((counts.products, counts.leaves_reused), (1, 0));
        assert_eq!((counts.attempts, counts.fused), (2, 1));
        let (expected, _) = run(
            &mut s,
            "m = a @ b\nm = m.relu()\nm = m + 1\nm = m.exp()\nprint(m * row)",
        );
        assert_eq!(printed, expected);
        // Nothing fuses: the usual path takes the product the attempt computed.
        let (printed, counts) = run(&mut s, "print((a @ b) * row + 1)");
        assert_eq!((counts.products, counts.leaves_reused), (1, 1));
        assert_eq!((counts.attempts, counts.fused), (1, 0));
        assert_eq!(
            printed,
            "\n[[ 5.5  3. ]\n [10.5  3. ]]\n<NDArray 2x2 @cpu(0)>\n"
        );
    }

    #[test]
    fn a_function_called_twice_in_one_expression_computes_its_leaves_each_time() {
        let mut s = session(SETUP);
        // The caller's expression fails to fuse (the body is not a built-in); the body's own
        // failed attempt keeps `x @ a` for its usual path, which must not leak to the next call.
        let code = "\
            def body(x):\n    return ((x @ a).relu() + 1).log() * row\n\
            exp = body\n\
            got = exp(a) * 2 + exp(b) * 3\n\
            def plain(x):\n    m = x @ a\n    m = m.relu()\n    m = m + 1\n    m = m.log()\n    return m * row\n\
            want = plain(a) * 2\n\
            want = want + plain(b) * 3\n\
            print((got == want).sum().asscalar())";
        let (printed, counts) = run(&mut s, code);
        assert_eq!(printed, "4.0\n");
        assert!(counts.fused >= 2, "{counts:?}");
    }

    #[test]
    fn a_deep_int_expression_is_tried_once() {
        let mut s = session(SETUP);
        let (printed, counts) = run(
            &mut s,
            "print((((((i + 1) * 2 + 3) * 4 - 1) * 2 + 1) * 3).asnumpy())",
        );
        assert_eq!(printed, "[165 213 261 309]\n");
        assert_eq!((counts.attempts, counts.fused), (1, 0));
        let (printed, counts) = run(&mut s, "print(1 + 2 + 3 + 4 * 5 - 6 + 7)");
        assert_eq!(printed, "27\n");
        assert_eq!(counts.attempts, 1);
    }

    #[test]
    fn numbers_combine_as_python_arithmetic_first() {
        let mut s = session(SETUP);
        let (printed, counts) = run(
            &mut s,
            "k = 3\nt = 0.1 * k\nprint(((0.1 * k) * z + 1 == t * z + 1).sum().asscalar())",
        );
        assert_eq!(printed, "4.0\n");
        assert_eq!(counts.fused, 2);
    }

    #[test]
    fn errors_are_the_unfused_ones() {
        let mut s = session(SETUP);
        for (code, expected) in [
            (
                "nd.exp(undefined_x + 2) * undefined_y",
                "NameError: name 'undefined_x' is not defined",
            ),
            (
                "w = nd.ones((3, 3))\n(a @ w).relu() + a",
                "ShapeError: matmul: shapes (2,2) and (3,3) are not aligned: 2 (last axis of the first) != 3 (second-to-last axis of the second)",
            ),
            ("(1 / 0) * z + 1", "ZeroDivisionError: division by zero"),
            (
                "nd = 5\nnd.exp(z + 2) * y",
                "AttributeError: 'int' object has no attribute 'exp'",
            ),
        ] {
            let out = s.eval(code);
            let error = out.error.map(|e| e.summary());
            assert_eq!(error.as_deref(), Some(expected), "{code}");
        }
    }
}
