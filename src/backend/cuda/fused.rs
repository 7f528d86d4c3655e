//! Fused elementwise expressions: a tree of unary and binary float ops over same-shape,
//! contiguous inputs becomes one generated kernel, so `(z + 2).exp() * y` reads each input once
//! and writes once instead of making two temporaries. Sources are generated from the tree (the
//! operator spellings are the same `da_*` helpers as elementwise.cu, from math.cuh) and compiled
//! once per distinct expression. Each device keeps the compiled functions in a [`FusedCache`]
//! keyed by the expression's structure ([`fused_key`]), so a repeated launch builds no text.
use super::kernels::{dtype_tag, with_prelude, Program, MATH};
use crate::vocab::{BinaryOp, DType, FusedExpr, UnaryOp};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// A fused kernel for one expression and one float dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct FusedKernel {
    pub expr: FusedExpr,
    pub dtype: DType,
    pub inputs: usize,
}

impl FusedKernel {
    /// None when the expression has an op or dtype this form does not fuse (the caller then runs
    /// the ops one by one).
    pub fn new(expr: FusedExpr, dtype: DType) -> Option<FusedKernel> {
        let inputs = fusable_inputs(&expr, dtype)?;
        Some(FusedKernel {
            expr,
            dtype,
            inputs,
        })
    }

    fn body(&self) -> String {
        let mut count = 0;
        // `new` checked every node, so this is Some.
        expression(&self.expr, &mut count).unwrap_or_default()
    }

    /// `fused_<dtype>_<hash of the expression>`.
    pub fn entry(&self) -> String {
        let mut hasher = DefaultHasher::new();
        self.body().hash(&mut hasher);
        self.inputs.hash(&mut hasher);
        format!("fused_{}_{:016x}", dtype_tag(self.dtype), hasher.finish())
    }

    pub fn program(&self) -> Program {
        let t = if self.dtype == DType::Float32 {
            "float"
        } else {
            "double"
        };
        let params: String = (0..self.inputs)
            .map(|i| format!(", const T* __restrict__ in{i}"))
            .collect();
        let entry = self.entry();
        let source = format!(
            "{MATH}\n\
             typedef {t} T;\n\
             {MUL_RN}\
             extern \"C\" __global__ void {entry}(T* __restrict__ out{params}, i64 n) {{\n\
             \x20   DA_FOR_EACH(i, n) {{ out[i] = (T)({body}); }}\n\
             }}\n",
            body = self.body(),
        );
        Program {
            name: entry.clone(),
            source: with_prelude(&source),
            entries: vec![entry],
        }
    }
}

/// Products that NVRTC may not contract into an FMA with a following add: the one-op kernels
/// round every product, and the fused result must equal theirs bit for bit.
const MUL_RN: &str =
    "__device__ __forceinline__ float da_mul_rn(float a, float b) { return __fmul_rn(a, b); }\n\
     __device__ __forceinline__ double da_mul_rn(double a, double b) { return __dmul_rn(a, b); }\n";

/// How many inputs `expr` reads (one more than the largest input index), or None when this
/// form does not fuse it: a non-float dtype, an op that changes the dtype, or a constant with no
/// C literal. It answers what `expression` would, without building text, because the runtime
/// asks before every fused op.
pub fn fusable_inputs(expr: &FusedExpr, dtype: DType) -> Option<usize> {
    fn walk(expr: &FusedExpr, inputs: &mut usize) -> Option<()> {
        match expr {
            FusedExpr::Input(i) => *inputs = (*inputs).max(i.checked_add(1)?),
            FusedExpr::Scalar(v) if v.is_finite() => {}
            FusedExpr::Scalar(_) => return None,
            FusedExpr::Unary(UnaryOp::Not, _) => return None,
            FusedExpr::Unary(_, x) => walk(x, inputs)?,
            FusedExpr::Binary(op, a, b) => {
                binary_spelling(*op)?;
                walk(a, inputs)?;
                walk(b, inputs)?;
            }
        }
        Some(())
    }
    if !dtype.is_float() {
        return None;
    }
    let mut inputs = 0;
    walk(expr, &mut inputs)?;
    Some(inputs)
}

/// The cache key of a fused kernel: its dtype and the expression's structure, constants by their
/// bits (0.0 and -0.0 compile to different literals). Computed without allocating. Equal
/// expressions always share a key; a [`FusedCache`] also compares the expression itself, so two
/// different expressions whose keys collide still get their own kernels.
pub fn fused_key(expr: &FusedExpr, dtype: DType) -> u64 {
    fn walk(expr: &FusedExpr, hasher: &mut DefaultHasher) {
        match expr {
            FusedExpr::Input(i) => (0u8, *i).hash(hasher),
            FusedExpr::Scalar(v) => (1u8, v.to_bits()).hash(hasher),
            FusedExpr::Unary(op, x) => {
                (2u8, op).hash(hasher);
                walk(x, hasher);
            }
            FusedExpr::Binary(op, a, b) => {
                (3u8, op).hash(hasher);
                walk(a, hasher);
                walk(b, hasher);
            }
        }
    }
    let mut hasher = DefaultHasher::new();
    dtype.hash(&mut hasher);
    walk(expr, &mut hasher);
    hasher.finish()
}

/// Whether two expressions compile to the same kernel: the same tree, constants equal bit for
/// bit (the derived `PartialEq` compares floats by value, so 0.0 would equal -0.0).
fn same_kernel(a: &FusedExpr, b: &FusedExpr) -> bool {
    match (a, b) {
        (FusedExpr::Input(i), FusedExpr::Input(j)) => i == j,
        (FusedExpr::Scalar(x), FusedExpr::Scalar(y)) => x.to_bits() == y.to_bits(),
        (FusedExpr::Unary(op, x), FusedExpr::Unary(op2, y)) => op == op2 && same_kernel(x, y),
        (FusedExpr::Binary(op, a1, b1), FusedExpr::Binary(op2, a2, b2)) => {
            op == op2 && same_kernel(a1, a2) && same_kernel(b1, b2)
        }
        _ => false,
    }
}

/// What one device has compiled, by expression and dtype. Generic over the compiled value so the
/// lookup logic is tested without a GPU.
#[derive(Debug)]
pub struct FusedCache<F> {
    by_key: HashMap<u64, Vec<(DType, FusedExpr, F)>>,
}

impl<F> Default for FusedCache<F> {
    fn default() -> Self {
        FusedCache {
            by_key: HashMap::new(),
        }
    }
}

impl<F: Clone> FusedCache<F> {
    /// The value compiled for `expr` over `dtype`, if any; allocates nothing.
    pub fn get(&self, expr: &FusedExpr, dtype: DType) -> Option<F> {
        self.by_key
            .get(&fused_key(expr, dtype))?
            .iter()
            .find(|(d, e, _)| *d == dtype && same_kernel(e, expr))
            .map(|(_, _, value)| value.clone())
    }

    /// Remembers `value` for `expr` over `dtype` (replacing an earlier one for the same).
    pub fn insert(&mut self, expr: &FusedExpr, dtype: DType, value: F) {
        let bucket = self.by_key.entry(fused_key(expr, dtype)).or_default();
        bucket.retain(|(d, e, _)| !(*d == dtype && same_kernel(e, expr)));
        bucket.push((dtype, expr.clone(), value));
    }

    pub fn len(&self) -> usize {
        self.by_key.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

/// The C spelling of a binary op over operands `a` and `b`, or None when it does not fuse.
fn binary_spelling(op: BinaryOp) -> Option<fn(&str, &str) -> String> {
    Some(match op {
        BinaryOp::Add => |a, b| format!("(({a}) + ({b}))"),
        BinaryOp::Sub => |a, b| format!("(({a}) - ({b}))"),
        BinaryOp::Mul => |a, b| format!("da_mul_rn((T)({a}), (T)({b}))"),
        BinaryOp::Div => |a, b| format!("(({a}) / ({b}))"),
        BinaryOp::FloorDiv => |a, b| format!("da_floor_div((T)({a}), (T)({b}))"),
        BinaryOp::Mod => |a, b| format!("da_mod((T)({a}), (T)({b}))"),
        BinaryOp::Pow => |a, b| format!("da_pow((T)({a}), (T)({b}))"),
        BinaryOp::Maximum => |a, b| format!("da_max<T>({a}, {b})"),
        BinaryOp::Minimum => |a, b| format!("da_min<T>({a}, {b})"),
        // Comparisons and bitwise ops change the dtype: not fused.
        _ => return None,
    })
}

/// The C expression for a node (None for ops that do not fuse); counts the inputs it reads.
fn expression(expr: &FusedExpr, inputs: &mut usize) -> Option<String> {
    Some(match expr {
        FusedExpr::Input(i) => {
            *inputs = (*inputs).max(i + 1);
            format!("in{i}[i]")
        }
        // `{:?}` prints a round-tripping literal; inf/nan have no C literal so are refused.
        FusedExpr::Scalar(v) if v.is_finite() => format!("(T){v:?}"),
        FusedExpr::Scalar(_) => return None,
        FusedExpr::Unary(op, x) => {
            let x = expression(x, inputs)?;
            let f = match op {
                UnaryOp::Neg => return Some(format!("(-({x}))")),
                UnaryOp::Square => return Some(format!("da_mul_rn((T)({x}), (T)({x}))")),
                UnaryOp::Reciprocal => return Some(format!("((T)1 / ({x}))")),
                UnaryOp::Sigmoid => return Some(format!("((T)1 / ((T)1 + da_exp(-({x}))))")),
                UnaryOp::Abs => "da_fabs",
                UnaryOp::Exp => "da_exp",
                UnaryOp::Log => "da_log",
                UnaryOp::Log2 => "da_log2",
                UnaryOp::Log10 => "da_log10",
                UnaryOp::Sqrt => "da_sqrt",
                UnaryOp::Tanh => "da_tanh",
                UnaryOp::Relu => "da_relu",
                UnaryOp::Sin => "da_sin",
                UnaryOp::Cos => "da_cos",
                UnaryOp::Tan => "da_tan",
                UnaryOp::Sign => "da_sign",
                UnaryOp::Floor => "da_floor",
                UnaryOp::Ceil => "da_ceil",
                UnaryOp::Round => "da_rint",
                UnaryOp::Trunc => "da_trunc",
                UnaryOp::Not => return None,
            };
            format!("{f}({x})")
        }
        FusedExpr::Binary(op, a, b) => {
            let spell = binary_spelling(*op)?;
            spell(&expression(a, inputs)?, &expression(b, inputs)?)
        }
    })
}

/// Representative expressions, compiled by tests/cuda_nvrtc.rs so the generator is checked by
/// the real compiler: the design's benchmark `(z + 2).exp() * y`, and one using every fusable op.
pub fn examples() -> Vec<FusedKernel> {
    use FusedExpr::*;
    let input = |i| Box::new(Input(i));
    let bench = Binary(
        BinaryOp::Mul,
        Box::new(Unary(
            UnaryOp::Exp,
            Box::new(Binary(BinaryOp::Add, input(0), Box::new(Scalar(2.0)))),
        )),
        input(1),
    );
    let mut every = Input(0);
    // Every unary op the kernels know, except logical not (bool only).
    for op in super::kernels::UNARY_OPS
        .into_iter()
        .filter(|op| *op != UnaryOp::Not)
    {
        every = Unary(op, Box::new(every));
    }
    for op in BinaryOp::ALL
        .into_iter()
        .filter(|&op| FusedExpr::fuses_binary(op))
    {
        every = Binary(op, Box::new(every), Box::new(Scalar(-1.5)));
    }
    every = Binary(BinaryOp::Add, Box::new(every), input(2));
    let mut kernels = Vec::new();
    for dtype in [DType::Float32, DType::Float64] {
        kernels.extend(FusedKernel::new(bench.clone(), dtype));
        kernels.extend(FusedKernel::new(every.clone(), dtype));
    }
    kernels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_one_expression() {
        let kernels = examples();
        assert_eq!(kernels.len(), 4);
        let bench = &kernels[0];
        assert_eq!(bench.inputs, 2);
        assert_eq!(
            bench.body(),
            "da_mul_rn((T)(da_exp(((in0[i]) + ((T)2.0)))), (T)(in1[i]))"
        );
        assert!(bench.entry().starts_with("fused_f32_"));
        assert_ne!(bench.entry(), kernels[1].entry());
        assert_eq!(kernels[1].inputs, 3);
        assert!(kernels[2].entry().starts_with("fused_f64_"));
    }

    /// `(in0 + c) * in1` with the op and constant given.
    fn sample(op: BinaryOp, constant: f64) -> FusedExpr {
        FusedExpr::Binary(
            op,
            Box::new(FusedExpr::Binary(
                BinaryOp::Add,
                Box::new(FusedExpr::Input(0)),
                Box::new(FusedExpr::Scalar(constant)),
            )),
            Box::new(FusedExpr::Input(1)),
        )
    }

    #[test]
    fn equal_expressions_share_a_key_and_different_ones_do_not() {
        let f32 = DType::Float32;
        let base = fused_key(&sample(BinaryOp::Mul, 2.0), f32);
        assert_eq!(base, fused_key(&sample(BinaryOp::Mul, 2.0), f32));
        let others = [
            fused_key(&sample(BinaryOp::Mul, 3.0), f32),
            fused_key(&sample(BinaryOp::Mul, 2.0), DType::Float64),
            fused_key(&sample(BinaryOp::Sub, 2.0), f32),
            fused_key(&sample(BinaryOp::Mul, -0.0), f32),
            fused_key(&sample(BinaryOp::Mul, 0.0), f32),
            // The same ops over other inputs.
            fused_key(
                &FusedExpr::Binary(
                    BinaryOp::Mul,
                    Box::new(FusedExpr::Input(1)),
                    Box::new(FusedExpr::Input(0)),
                ),
                f32,
            ),
            fused_key(
                &FusedExpr::Unary(UnaryOp::Exp, Box::new(FusedExpr::Input(0))),
                f32,
            ),
            fused_key(
                &FusedExpr::Unary(UnaryOp::Log, Box::new(FusedExpr::Input(0))),
                f32,
            ),
        ];
        let mut all = vec![base];
        all.extend(others);
        let distinct: std::collections::HashSet<u64> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len(), "{all:x?}");
    }

    #[test]
    fn the_cache_finds_what_was_compiled_for_that_expression_and_dtype() {
        let mut cache = FusedCache::default();
        assert!(cache.is_empty());
        cache.insert(&sample(BinaryOp::Mul, 2.0), DType::Float32, "mul 2 f32");
        cache.insert(&sample(BinaryOp::Mul, 2.0), DType::Float64, "mul 2 f64");
        cache.insert(&sample(BinaryOp::Mul, -0.0), DType::Float32, "mul -0 f32");
        assert_eq!(
            cache.get(&sample(BinaryOp::Mul, 2.0), DType::Float32),
            Some("mul 2 f32")
        );
        assert_eq!(
            cache.get(&sample(BinaryOp::Mul, 2.0), DType::Float64),
            Some("mul 2 f64")
        );
        assert_eq!(
            cache.get(&sample(BinaryOp::Mul, -0.0), DType::Float32),
            Some("mul -0 f32")
        );
        // 0.0 == -0.0 as numbers, but they are different literals in the kernel.
        assert_eq!(cache.get(&sample(BinaryOp::Mul, 0.0), DType::Float32), None);
        assert_eq!(cache.get(&sample(BinaryOp::Div, 2.0), DType::Float32), None);
        cache.insert(&sample(BinaryOp::Mul, 2.0), DType::Float32, "again");
        assert_eq!(cache.len(), 3);
        assert_eq!(
            cache.get(&sample(BinaryOp::Mul, 2.0), DType::Float32),
            Some("again")
        );
    }

    #[test]
    fn fusable_inputs_agrees_with_the_generator() {
        let leaf = || Box::new(FusedExpr::Input(0));
        let mut exprs: Vec<FusedExpr> = super::super::kernels::UNARY_OPS
            .into_iter()
            .map(|op| FusedExpr::Unary(op, leaf()))
            .collect();
        exprs.extend(
            BinaryOp::ALL
                .into_iter()
                .map(|op| FusedExpr::Binary(op, leaf(), Box::new(FusedExpr::Input(2)))),
        );
        exprs.push(FusedExpr::Scalar(f64::NAN));
        exprs.push(FusedExpr::Scalar(1.5));
        for expr in exprs {
            let mut counted = 0;
            let generated = expression(&expr, &mut counted).map(|_| counted);
            assert_eq!(fusable_inputs(&expr, DType::Float64), generated, "{expr:?}");
            assert_eq!(fusable_inputs(&expr, DType::Int64), None);
        }
    }

    #[test]
    fn refuses_what_does_not_fuse() {
        let cmp = FusedExpr::Binary(
            BinaryOp::Lt,
            Box::new(FusedExpr::Input(0)),
            Box::new(FusedExpr::Scalar(1.0)),
        );
        assert_eq!(FusedKernel::new(cmp, DType::Float32), None);
        assert_eq!(FusedKernel::new(FusedExpr::Input(0), DType::Int32), None);
        assert_eq!(
            FusedKernel::new(FusedExpr::Scalar(f64::INFINITY), DType::Float32),
            None
        );
    }
}
