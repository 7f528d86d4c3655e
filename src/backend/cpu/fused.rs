//! Elementwise kernels on blocks, shared by the one-op kernels and fused expressions.
//!
//! A fused expression (`FusedExpr`) is evaluated block by block (`kernels::map_blocks`): each
//! node of the tree is applied to a whole block before the next node runs, so intermediates
//! live in L1 and every op is a simple loop the compiler vectorises; inputs are read once and
//! the output written once. The per-element functions are the same `Num`/`Float` ones the
//! one-op kernels use, applied in the same dtype, so fused and unfused results are identical.
use super::element::{Float, Num};
use super::kernels::map_blocks;
use crate::vocab::error::{Result, RuntimeError};
use crate::vocab::{BinaryOp, FusedExpr, UnaryOp};

multiversion! {
/// `op` applied to every element of `buf` in place. Only `Not` (it changes the dtype) is refused.
pub fn unary_inplace<T: Float>(op: UnaryOp, buf: &mut [T]) -> Result<()> {
    #[inline(always)]
    fn each<T: Copy>(buf: &mut [T], f: impl Fn(T) -> T) {
        for x in buf.iter_mut() {
            *x = f(*x);
        }
    }
    match op {
        UnaryOp::Exp => T::exp_inplace(buf),
        UnaryOp::Log => each(buf, T::ln),
        UnaryOp::Log2 => each(buf, T::log2),
        UnaryOp::Log10 => each(buf, T::log10),
        UnaryOp::Sqrt => each(buf, T::sqrt),
        UnaryOp::Tanh => each(buf, T::tanh),
        UnaryOp::Sigmoid => {
            // 1 / (1 + exp(-x)) with the block exp (vectorised for float32), as `exp` computes
            // it: a composed `1 / (1 + exp(-x))` gives the same bits.
            each(buf, T::neg);
            T::exp_inplace(buf);
            each(buf, |e| T::one().div(T::one().add(e)));
        }
        UnaryOp::Sin => each(buf, T::sin),
        UnaryOp::Cos => each(buf, T::cos),
        UnaryOp::Tan => each(buf, T::tan),
        UnaryOp::Floor => each(buf, T::floor),
        UnaryOp::Ceil => each(buf, T::ceil),
        UnaryOp::Round => each(buf, T::round_even),
        UnaryOp::Trunc => each(buf, T::trunc),
        UnaryOp::Reciprocal => each(buf, T::recip),
        UnaryOp::Neg => each(buf, T::neg),
        UnaryOp::Abs => each(buf, T::abs),
        UnaryOp::Square => each(buf, |x| x.mul(x)),
        UnaryOp::Relu => each(buf, |x| if x > T::zero() { x } else { T::zero() }),
        UnaryOp::Sign => each(buf, T::sign),
        UnaryOp::Not => return Err(not_fusable(op.name())),
    }
    Ok(())
}
}

/// The other operand of a binary op applied in place: a block of values or one scalar.
#[derive(Clone, Copy)]
enum Other<'a, T> {
    Block(&'a [T]),
    Scalar(T),
}

multiversion! {
/// `buf = op(buf, other)`, or `op(other, buf)` when `other_first`.
fn binary_inplace<T: Num>(
    op: BinaryOp,
    buf: &mut [T],
    other: Other<'_, T>,
    other_first: bool,
) -> Result<()> {
    #[inline(always)]
    fn each<T: Copy>(buf: &mut [T], other: Other<'_, T>, other_first: bool, f: impl Fn(T, T) -> T) {
        match (other, other_first) {
            (Other::Block(o), false) => buf.iter_mut().zip(o).for_each(|(x, &y)| *x = f(*x, y)),
            (Other::Block(o), true) => buf.iter_mut().zip(o).for_each(|(x, &y)| *x = f(y, *x)),
            (Other::Scalar(y), false) => buf.iter_mut().for_each(|x| *x = f(*x, y)),
            (Other::Scalar(y), true) => buf.iter_mut().for_each(|x| *x = f(y, *x)),
        }
    }
    match op {
        BinaryOp::Add => each(buf, other, other_first, T::add),
        BinaryOp::Sub => each(buf, other, other_first, T::sub),
        BinaryOp::Mul => each(buf, other, other_first, T::mul),
        BinaryOp::Div => each(buf, other, other_first, T::div),
        BinaryOp::FloorDiv => each(buf, other, other_first, T::floor_div),
        BinaryOp::Mod => each(buf, other, other_first, T::modulo),
        BinaryOp::Pow => each(buf, other, other_first, T::pow),
        BinaryOp::Maximum => each(buf, other, other_first, T::maximum),
        BinaryOp::Minimum => each(buf, other, other_first, T::minimum),
        _ => return Err(not_fusable(op.name())),
    }
    Ok(())
}
}

fn not_fusable(op: &str) -> RuntimeError {
    RuntimeError::Value(format!(
        "internal error: {op} reached the fused elementwise kernel; please report this as a devarray bug"
    ))
}

/// The one-op float kernel: `op` on every element of `v`, into a new vector.
pub fn unary<T: Float>(v: &[T], op: UnaryOp) -> Result<Vec<T>> {
    if !FusedExpr::fuses_unary(op) {
        return Err(not_fusable(op.name()));
    }
    map_blocks(v.len(), |start, block| {
        block.copy_from_slice(&v[start..start + block.len()]);
        // Checked above: every op but Not succeeds.
        let _ = unary_inplace(op, block);
    })
}

/// `expr` over `inputs` (each of `n` elements), into a new vector of `n` elements.
pub fn fused<T: Float>(inputs: &[&[T]], expr: &FusedExpr, n: usize) -> Result<Vec<T>> {
    check(expr, inputs.len())?;
    if inputs.iter().any(|input| input.len() != n) {
        return Err(RuntimeError::Value(
            "internal error: fused inputs differ in length; please report this as a devarray bug"
                .into(),
        ));
    }
    map_blocks(n, |start, block| {
        // `check` accepted every node and index, so evaluation cannot fail.
        let _ = eval(expr, inputs, start, block);
    })
}

/// `act(z + b)` with `b` added to every row of `z` (rows of `b.len()` elements), into a new
/// vector: a dense layer's bias and activation over a batch in one pass. Each block gets the
/// broadcast add's values, then the activation's in place, the one-op kernels' functions in
/// the same dtype, so the result equals the two ops run one at a time, bit for bit.
pub fn bias_act_rows<T: Float>(z: &[T], b: &[T], act: UnaryOp) -> Result<Vec<T>> {
    let m = b.len();
    if m == 0 || z.len() % m != 0 {
        return Err(RuntimeError::Value(
            "internal error: a bias that does not divide the rows; please report this as a devarray bug"
                .into(),
        ));
    }
    if !FusedExpr::fuses_unary(act) {
        return Err(not_fusable(act.name()));
    }
    map_blocks(z.len(), |start, block| {
        block.copy_from_slice(&z[start..start + block.len()]);
        // A block may start mid-row and span rows: add the bias segment by segment.
        let mut i = 0;
        while i < block.len() {
            let col = (start + i) % m;
            let seg = (m - col).min(block.len() - i);
            // Add never fails; `act` fuses (checked above).
            let _ = binary_inplace(
                BinaryOp::Add,
                &mut block[i..i + seg],
                Other::Block(&b[col..col + seg]),
                false,
            );
            i += seg;
        }
        let _ = unary_inplace(act, block);
    })
}

/// Every input index is in range and every op fuses.
fn check(expr: &FusedExpr, inputs: usize) -> Result<()> {
    match expr {
        FusedExpr::Input(i) if *i < inputs => Ok(()),
        FusedExpr::Input(i) => Err(RuntimeError::Value(format!(
            "internal error: fused expression reads input {i} of {inputs}; please report this as a devarray bug"
        ))),
        FusedExpr::Scalar(_) => Ok(()),
        FusedExpr::Unary(op, x) if FusedExpr::fuses_unary(*op) => check(x, inputs),
        FusedExpr::Binary(op, a, b) if FusedExpr::fuses_binary(*op) => {
            check(a, inputs)?;
            check(b, inputs)
        }
        FusedExpr::Unary(op, _) => Err(not_fusable(op.name())),
        FusedExpr::Binary(op, _, _) => Err(not_fusable(op.name())),
    }
}

/// A leaf read straight from its input (no copy into a scratch block).
fn leaf<'a, T: Float>(
    expr: &FusedExpr,
    inputs: &[&'a [T]],
    start: usize,
    len: usize,
) -> Option<Other<'a, T>> {
    match expr {
        FusedExpr::Input(i) => inputs
            .get(*i)
            .and_then(|input| input.get(start..start + len))
            .map(Other::Block),
        FusedExpr::Scalar(s) => Some(Other::Scalar(T::from_f64(*s))),
        _ => None,
    }
}

/// Elements `start..start + buf.len()` of `expr`, into `buf`.
fn eval<T: Float>(expr: &FusedExpr, inputs: &[&[T]], start: usize, buf: &mut [T]) -> Result<()> {
    let len = buf.len();
    match expr {
        FusedExpr::Input(_) | FusedExpr::Scalar(_) => match leaf(expr, inputs, start, len) {
            Some(Other::Block(values)) => buf.copy_from_slice(values),
            Some(Other::Scalar(value)) => buf.fill(value),
            None => return check(expr, inputs.len()),
        },
        FusedExpr::Unary(op, x) => {
            eval(x, inputs, start, buf)?;
            unary_inplace(*op, buf)?;
        }
        FusedExpr::Binary(op, a, b) => {
            if let Some(rhs) = leaf(b, inputs, start, len) {
                eval(a, inputs, start, buf)?;
                binary_inplace(*op, buf, rhs, false)?;
            } else if let Some(lhs) = leaf(a, inputs, start, len) {
                eval(b, inputs, start, buf)?;
                binary_inplace(*op, buf, lhs, true)?;
            } else {
                eval(a, inputs, start, buf)?;
                let mut rhs = vec![T::zero(); len];
                eval(b, inputs, start, &mut rhs)?;
                binary_inplace(*op, buf, Other::Block(&rhs), false)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::kernels::{map2, BLOCK};

    fn input(i: usize) -> Box<FusedExpr> {
        Box::new(FusedExpr::Input(i))
    }

    /// A bias and activation over rows equals the broadcast add then the activation, bit for
    /// bit, for rows that blocks split (odd widths) and rows shorter than a block.
    #[test]
    fn bias_act_rows_equals_unfused() {
        for m in [1usize, 7, 300, BLOCK + 3] {
            let rows = 3 * BLOCK / m + 5;
            let n = rows * m;
            let z: Vec<f32> = (0..n)
                .map(|i| ((i * 7919) % 2000) as f32 / 97.0 - 12.0)
                .collect();
            let b: Vec<f32> = (0..m)
                .map(|i| ((i * 104729) % 1000) as f32 / 333.0 - 1.5)
                .collect();
            for act in [UnaryOp::Relu, UnaryOp::Sigmoid, UnaryOp::Tanh] {
                let got = bias_act_rows(&z, &b, act).unwrap();
                let plus = map2(&z, &[m, 1], &b, &[0, 1], &[rows, m], |a, c| a + c).unwrap();
                let want = unary(&plus, act).unwrap();
                assert_eq!(got.len(), n);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g.to_bits(), w.to_bits(), "m {m} {act:?} element {i}");
                }
            }
        }
    }

    /// `(z + 2).exp() * y` fused equals the three one-op kernels bit for bit, across block and
    /// parallel-task boundaries.
    #[test]
    fn fused_equals_unfused() {
        let n = 40 * BLOCK + 7;
        let z: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 2000) as f32 / 97.0 - 12.0)
            .collect();
        let y: Vec<f32> = (0..n)
            .map(|i| ((i * 104729) % 1000) as f32 / 333.0 - 1.5)
            .collect();
        let expr = FusedExpr::Binary(
            BinaryOp::Mul,
            Box::new(FusedExpr::Unary(
                UnaryOp::Exp,
                Box::new(FusedExpr::Binary(
                    BinaryOp::Add,
                    input(0),
                    Box::new(FusedExpr::Scalar(2.0)),
                )),
            )),
            input(1),
        );
        let fused = fused(&[&z, &y], &expr, n).unwrap();
        let shape = [n];
        let plus = map2(&z, &[1], &[2.0f32], &[0], &shape, |a, b| a + b).unwrap();
        let exp = unary(&plus, UnaryOp::Exp).unwrap();
        let want = map2(&exp, &[1], &y, &[1], &shape, |a, b| a * b).unwrap();
        assert_eq!(fused.len(), n);
        for (i, (f, w)) in fused.iter().zip(&want).enumerate() {
            assert_eq!(f.to_bits(), w.to_bits(), "element {i}: {f} vs {w}");
        }
    }

    /// Scalars on the left, a complex right-hand side, and float64.
    #[test]
    fn operand_orders() {
        let x = [0.5f64, -1.0, 2.0, 9.0];
        // 1 - sqrt(x) / (x * x - 3)
        let expr = FusedExpr::Binary(
            BinaryOp::Sub,
            Box::new(FusedExpr::Scalar(1.0)),
            Box::new(FusedExpr::Binary(
                BinaryOp::Div,
                Box::new(FusedExpr::Unary(UnaryOp::Sqrt, input(0))),
                Box::new(FusedExpr::Binary(
                    BinaryOp::Sub,
                    Box::new(FusedExpr::Binary(BinaryOp::Mul, input(0), input(0))),
                    Box::new(FusedExpr::Scalar(3.0)),
                )),
            )),
        );
        let got = fused(&[&x], &expr, 4).unwrap();
        for (g, v) in got.iter().zip(x) {
            let want = 1.0 - v.sqrt() / (v * v - 3.0);
            assert!(g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()));
        }
    }

    #[test]
    fn refuses_bad_trees() {
        let not = FusedExpr::Unary(UnaryOp::Not, input(0));
        assert!(fused(&[&[1.0f32][..]], &not, 1).is_err());
        let out_of_range = FusedExpr::Unary(UnaryOp::Exp, input(3));
        assert!(fused(&[&[1.0f32][..]], &out_of_range, 1).is_err());
        let cmp = FusedExpr::Binary(BinaryOp::Lt, input(0), input(0));
        assert!(fused(&[&[1.0f32][..]], &cmp, 1).is_err());
    }
}
