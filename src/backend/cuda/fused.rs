//! Fused elementwise expressions: a tree of unary and binary float ops over same-shape,
//! contiguous inputs becomes one generated kernel, so `(z + 2).exp() * y` reads each input once
//! and writes once instead of making two temporaries. Sources are generated from the tree (the
//! operator spellings are the same `da_*` helpers as elementwise.cu, from math.cuh), compiled
//! once per distinct expression and cached by its source text.
use super::kernels::{dtype_tag, with_prelude, Program, MATH};
use crate::runtime::{BinaryOp, DType, FusedExpr, UnaryOp};
use std::collections::hash_map::DefaultHasher;
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
        if !dtype.is_float() {
            return None;
        }
        let mut inputs = 0;
        expression(&expr, &mut inputs)?;
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
const MUL_RN: &str = "__device__ __forceinline__ float da_mul_rn(float a, float b) { return __fmul_rn(a, b); }\n\
     __device__ __forceinline__ double da_mul_rn(double a, double b) { return __dmul_rn(a, b); }\n";

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
            let a = expression(a, inputs)?;
            let b = expression(b, inputs)?;
            match op {
                BinaryOp::Add => format!("(({a}) + ({b}))"),
                BinaryOp::Sub => format!("(({a}) - ({b}))"),
                BinaryOp::Mul => format!("da_mul_rn((T)({a}), (T)({b}))"),
                BinaryOp::Div => format!("(({a}) / ({b}))"),
                BinaryOp::FloorDiv => format!("da_floor_div((T)({a}), (T)({b}))"),
                BinaryOp::Mod => format!("da_mod((T)({a}), (T)({b}))"),
                BinaryOp::Pow => format!("da_pow((T)({a}), (T)({b}))"),
                BinaryOp::Maximum => format!("da_max<T>({a}, {b})"),
                BinaryOp::Minimum => format!("da_min<T>({a}, {b})"),
                // Comparisons and bitwise ops change the dtype: not fused.
                _ => return None,
            }
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
    for op in [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::FloorDiv,
        BinaryOp::Mod,
        BinaryOp::Pow,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
    ] {
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
