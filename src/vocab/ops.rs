//! Op vocabulary: the primitive elementwise and reduction operations every backend implements,
//! and the fused elementwise expressions built from them.

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum UnaryOp {
    Neg,
    Abs,
    Exp,
    Log,
    Log2,
    Log10,
    Sqrt,
    Square,
    Tanh,
    Sigmoid,
    Relu,
    Sin,
    Cos,
    Tan,
    Sign,
    Floor,
    Ceil,
    /// Half to even, like numpy and PyTorch.
    Round,
    Trunc,
    Reciprocal,
    /// Logical not: true where the element is zero.
    Not,
}

impl UnaryOp {
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "negative",
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Log2 => "log2",
            UnaryOp::Log10 => "log10",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Square => "square",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Relu => "relu",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tan => "tan",
            UnaryOp::Sign => "sign",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
            UnaryOp::Trunc => "trunc",
            UnaryOp::Reciprocal => "reciprocal",
            UnaryOp::Not => "logical_not",
        }
    }

    /// Ops that only make sense in floating point: integer inputs are computed in float32.
    pub fn is_float_only(self) -> bool {
        matches!(
            self,
            UnaryOp::Exp
                | UnaryOp::Log
                | UnaryOp::Log2
                | UnaryOp::Log10
                | UnaryOp::Sqrt
                | UnaryOp::Tanh
                | UnaryOp::Sigmoid
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Tan
                | UnaryOp::Reciprocal
        )
    }

    /// Rounding ops leave integers unchanged.
    pub fn is_rounding(self) -> bool {
        matches!(
            self,
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    /// True division: integers give float32.
    Div,
    FloorDiv,
    Mod,
    Pow,
    Maximum,
    Minimum,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Bitwise on integers, logical on bools.
    And,
    Or,
    Xor,
}

impl BinaryOp {
    /// Every binary op, for code and tests that go through them all.
    pub const ALL: [BinaryOp; 18] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::FloorDiv,
        BinaryOp::Mod,
        BinaryOp::Pow,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "subtract",
            BinaryOp::Mul => "multiply",
            BinaryOp::Div => "divide",
            BinaryOp::FloorDiv => "floor_divide",
            BinaryOp::Mod => "mod",
            BinaryOp::Pow => "power",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Eq => "equal",
            BinaryOp::Ne => "not_equal",
            BinaryOp::Lt => "less",
            BinaryOp::Le => "less_equal",
            BinaryOp::Gt => "greater",
            BinaryOp::Ge => "greater_equal",
            BinaryOp::And => "bitwise_and",
            BinaryOp::Or => "bitwise_or",
            BinaryOp::Xor => "bitwise_xor",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }

    pub fn is_bitwise(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor)
    }
}

/// A tree of elementwise float ops over same-shape inputs, evaluated in one pass (one read of
/// each input, one write, no temporaries) by `Array::fused`. Every node rounds to the array's
/// dtype exactly as the one-op kernels do, so a fused result equals the unfused one bit for bit.
#[derive(Clone, Debug, PartialEq)]
pub enum FusedExpr {
    /// The i-th input array.
    Input(usize),
    /// A Python scalar; converted to the inputs' dtype as the one-op kernels convert it.
    Scalar(f64),
    Unary(UnaryOp, Box<FusedExpr>),
    Binary(BinaryOp, Box<FusedExpr>, Box<FusedExpr>),
}

impl FusedExpr {
    /// Ops whose result has the (float) dtype of their inputs: these fuse. Comparisons, bitwise
    /// ops and logical not change the dtype and end a fused expression.
    pub fn fuses_unary(op: UnaryOp) -> bool {
        op != UnaryOp::Not
    }

    pub fn fuses_binary(op: BinaryOp) -> bool {
        !op.is_comparison() && !op.is_bitwise()
    }

    /// How many ops the expression has (fusing a single op gains nothing).
    pub fn op_count(&self) -> usize {
        match self {
            FusedExpr::Input(_) | FusedExpr::Scalar(_) => 0,
            FusedExpr::Unary(_, x) => 1 + x.op_count(),
            FusedExpr::Binary(_, a, b) => 1 + a.op_count() + b.op_count(),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ReduceOp {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    ArgMax,
    ArgMin,
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
            ReduceOp::ArgMax => "argmax",
            ReduceOp::ArgMin => "argmin",
        }
    }
}

/// The windows of a convolution or pooling over the last two axes of a (N, C, H, W) array:
/// `Array::patches` lays every window out as (N, C, kh*kw, Ho, Wo) (im2col), reading `fill`
/// where a window reaches into the padding, and `Array::patches_adjoint` sums such an array
/// back onto (N, C, H, W), what the gradient of the first needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Patches {
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    /// Padding before the first row and column; after is whatever `out` needs.
    pub pad: [usize; 2],
    /// Output rows and columns (Ho, Wo).
    pub out: [usize; 2],
    pub fill: f64,
}

/// How a pooling window combines its elements (`Array::pool`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PoolKind {
    /// The window's maximum; its gradient goes to the first maximum in tap order.
    Max,
    /// `count_include_pad`: divide by the window's size inside the padded input, else by the
    /// number of input elements it covers.
    Avg { count_include_pad: bool },
}

impl Patches {
    /// Average pooling's divisor for output index `o` on `axis` of an input of `size`: the
    /// window clipped to the padded input (`count_include_pad`) or to the input itself.
    pub fn avg_count(&self, axis: usize, o: usize, size: usize, count_include_pad: bool) -> usize {
        let pad = self.pad[axis] as i64;
        let start = (o * self.stride[axis]) as i64 - pad;
        let end = start + self.kernel[axis] as i64;
        let (lo, hi) = if count_include_pad {
            (-pad, size as i64 + pad)
        } else {
            (0, size as i64)
        };
        (end.min(hi) - start.max(lo)).max(1) as usize
    }

    /// For output index `o` and kernel tap `k` on `axis`, the input index, or None in padding.
    #[inline]
    pub fn source(&self, axis: usize, o: usize, k: usize, size: usize) -> Option<usize> {
        (o * self.stride[axis] + k * self.dilation[axis])
            .checked_sub(self.pad[axis])
            .filter(|&i| i < size)
    }
}
