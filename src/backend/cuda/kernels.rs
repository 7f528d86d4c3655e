//! The CUDA kernel sources and the one table of entry names the launch code uses.
//!
//! Kernels are `.cu` files beside this module, compiled by NVRTC at run time for the device's
//! architecture (see `nvrtc.rs`). Every source gets `common.cuh` prepended, so NVRTC needs no
//! include paths. Entry names are `extern "C"` (unmangled) and built here from the op and dtype
//! names; `tests/cuda_nvrtc.rs` compiles every program and checks each name in
//! [`Program::entries`] is in the output, so the table and the sources cannot drift apart.
use crate::vocab::{BinaryOp, DType, ReduceOp, UnaryOp};

const COMMON: &str = include_str!("kernels/common.cuh");
/// Scalar helpers (`da_exp`, `da_floor_div`, ...) for elementwise.cu and fused kernels.
pub const MATH: &str = include_str!("kernels/math.cuh");
const ELEMENTWISE: &str = include_str!("kernels/elementwise.cu");
const REDUCE: &str = include_str!("kernels/reduce.cu");
const COPY: &str = include_str!("kernels/copy.cu");
const WINDOW: &str = include_str!("kernels/window.cu");
const NORM: &str = include_str!("kernels/norm.cu");

/// Threads per block for every launch; the `_rows` reductions rely on it (shared memory size).
pub const BLOCK: u32 = 256;

/// One NVRTC compilation unit and the entries the launch code may look up in it.
#[derive(Clone, Debug)]
pub struct Program {
    /// Stable module name: the per-device cache key and NVRTC's program name.
    pub name: String,
    /// Full source text, prelude included.
    pub source: String,
    pub entries: Vec<String>,
}

/// Which fixed module an entry lives in.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Module {
    Elementwise,
    Reduce,
    Copy,
    /// im2col for convolution and pooling, and its adjoint; pooling read in place.
    Window,
    /// Batch normalization: statistics, forward, backward.
    Norm,
}

impl Module {
    pub const ALL: [Module; 5] = [
        Module::Elementwise,
        Module::Reduce,
        Module::Copy,
        Module::Window,
        Module::Norm,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Module::Elementwise => "elementwise",
            Module::Reduce => "reduce",
            Module::Copy => "copy",
            Module::Window => "window",
            Module::Norm => "norm",
        }
    }

    fn body(self) -> &'static str {
        match self {
            Module::Elementwise => ELEMENTWISE,
            Module::Reduce => REDUCE,
            Module::Copy => COPY,
            Module::Window => WINDOW,
            Module::Norm => NORM,
        }
    }

    pub fn program(self) -> Program {
        let body = match self {
            Module::Elementwise => format!("{MATH}\n{}", self.body()),
            _ => self.body().to_string(),
        };
        Program {
            name: self.name().to_string(),
            source: with_prelude(&body),
            entries: self.entries(),
        }
    }

    /// Every entry name the launch code can ask this module for.
    pub fn entries(self) -> Vec<String> {
        let mut names = Vec::new();
        match self {
            Module::Elementwise => {
                for dtype in DTYPES {
                    names.extend(UNARY_OPS.iter().filter_map(|&op| unary_entry(op, dtype)));
                    for op in BinaryOp::ALL {
                        names.extend(binary_entry(op, dtype, false));
                        names.extend(binary_entry(op, dtype, true));
                    }
                }
            }
            Module::Reduce => {
                for dtype in DTYPES {
                    for op in REDUCE_OPS {
                        names.extend(reduce_entry(op, dtype, false));
                        names.extend(reduce_entry(op, dtype, true));
                    }
                }
            }
            Module::Copy => {
                for dtype in DTYPES {
                    names.push(fill_entry(dtype));
                    names.push(gather_entry(dtype));
                    names.push(scatter_entry(dtype));
                    names.extend(select_entries(dtype));
                    names.extend(DTYPES.iter().map(|&to| cast_entry(dtype, to)));
                }
            }
            Module::Window => {
                for dtype in [DType::Float32, DType::Float64] {
                    names.extend(patches_entry(dtype, false));
                    names.extend(patches_entry(dtype, true));
                    names.extend(POOL_KERNELS.iter().filter_map(|k| norm_entry(k, dtype)));
                    names.extend(
                        BATCH_PATCH_KERNELS
                            .iter()
                            .filter_map(|k| norm_entry(k, dtype)),
                    );
                }
            }
            Module::Norm => {
                for dtype in [DType::Float32, DType::Float64] {
                    names.extend(NORM_KERNELS.iter().filter_map(|k| norm_entry(k, dtype)));
                }
            }
        }
        names
    }
}

pub fn with_prelude(body: &str) -> String {
    format!("{COMMON}\n{body}")
}

pub const DTYPES: [DType; 13] = DType::ALL;

pub(crate) const UNARY_OPS: [UnaryOp; 21] = [
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Log2,
    UnaryOp::Log10,
    UnaryOp::Sqrt,
    UnaryOp::Square,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Relu,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Tan,
    UnaryOp::Sign,
    UnaryOp::Floor,
    UnaryOp::Ceil,
    UnaryOp::Round,
    UnaryOp::Trunc,
    UnaryOp::Reciprocal,
    UnaryOp::Not,
];

const REDUCE_OPS: [ReduceOp; 6] = [
    ReduceOp::Sum,
    ReduceOp::Prod,
    ReduceOp::Max,
    ReduceOp::Min,
    ReduceOp::ArgMax,
    ReduceOp::ArgMin,
];

/// The dtype's name inside entry names.
pub fn dtype_tag(dtype: DType) -> &'static str {
    match dtype {
        DType::Float32 => "f32",
        DType::Float64 => "f64",
        DType::Int32 => "i32",
        DType::Int64 => "i64",
        DType::Bool => "bool",
        DType::Float16 => "f16",
        DType::BFloat16 => "bf16",
        DType::Int8 => "i8",
        DType::Int16 => "i16",
        DType::UInt8 => "u8",
        DType::UInt16 => "u16",
        DType::UInt32 => "u32",
        DType::UInt64 => "u64",
    }
}

/// The kernel for `op` on `dtype`, or None where the runtime never sends that pair (float-only
/// ops on integers are computed in float32 by the runtime; bools only know logical not;
/// float16 computes in float32, `CudaStorage` casting around the float32 kernels).
pub fn unary_entry(op: UnaryOp, dtype: DType) -> Option<String> {
    let supported = match dtype {
        DType::Float32 | DType::Float64 => true,
        DType::Float16 | DType::BFloat16 => false,
        DType::Bool => op == UnaryOp::Not,
        _ => !op.is_float_only(),
    };
    supported.then(|| format!("unary_{}_{}", op.name(), dtype_tag(dtype)))
}

/// The broadcasting (strided) kernel, or its `_contig` twin for same-shape contiguous operands.
pub fn binary_entry(op: BinaryOp, dtype: DType, contiguous: bool) -> Option<String> {
    let supported = match dtype {
        DType::Float32 | DType::Float64 => !op.is_bitwise(),
        DType::Float16 | DType::BFloat16 => false,
        DType::Bool => {
            op.is_comparison()
                || op.is_bitwise()
                || matches!(op, BinaryOp::Maximum | BinaryOp::Minimum)
        }
        _ => op != BinaryOp::Div,
    };
    let suffix = if contiguous { "_contig" } else { "" };
    supported.then(|| format!("binary_{}_{}{suffix}", op.name(), dtype_tag(dtype)))
}

/// `rows` is the block-per-output form for reducing the last axis (inner == 1).
pub fn reduce_entry(op: ReduceOp, dtype: DType, rows: bool) -> Option<String> {
    let arg = matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin);
    let supported = match op {
        ReduceOp::Mean => false,
        _ if dtype.is_half() => false,
        ReduceOp::Sum | ReduceOp::Prod => dtype != DType::Bool,
        _ => true,
    };
    // Arg reductions have only the general form: one thread per output is enough for them.
    if !supported || (rows && arg) {
        return None;
    }
    let suffix = if rows { "_rows" } else { "" };
    Some(format!("reduce_{}_{}{suffix}", op.name(), dtype_tag(dtype)))
}

pub fn cast_entry(from: DType, to: DType) -> String {
    format!("cast_{}_{}", dtype_tag(from), dtype_tag(to))
}

pub fn fill_entry(dtype: DType) -> String {
    format!("fill_{}", dtype_tag(dtype))
}

pub fn gather_entry(dtype: DType) -> String {
    format!("gather_{}", dtype_tag(dtype))
}

/// `take_along_<dtype>` and `scatter_along_<dtype>` (copy.cu's `DA_SELECT`).
pub fn select_entries(dtype: DType) -> [String; 2] {
    let tag = dtype_tag(dtype);
    [format!("take_along_{tag}"), format!("scatter_along_{tag}")]
}

pub fn scatter_entry(dtype: DType) -> String {
    format!("scatter_{}", dtype_tag(dtype))
}

/// im2col (`adjoint` false) or its adjoint; float dtypes only.
pub fn patches_entry(dtype: DType, adjoint: bool) -> Option<String> {
    let name = if adjoint {
        "patches_adjoint"
    } else {
        "patches"
    };
    dtype
        .is_float()
        .then(|| format!("{name}_{}", dtype_tag(dtype)))
}

/// The pooling kernels of kernels/window.cu.
pub const POOL_KERNELS: [&str; 5] = [
    "pool_max",
    "pool_avg",
    "pool_argmax",
    "pool_max_grad",
    "pool_avg_grad",
];

/// The batch-folded convolution kernels of kernels/window.cu (`Array::patches_cols`).
pub const BATCH_PATCH_KERNELS: [&str; 4] = [
    "patches_cols",
    "patches_cols_adjoint",
    "cols_to_batch",
    "batch_to_cols",
];

/// The batch-norm kernels of kernels/norm.cu.
pub const NORM_KERNELS: [&str; 5] = [
    "bn_stats",
    "bn_running",
    "bn_forward",
    "bn_grad_sums",
    "bn_backward",
];

/// A batch-norm (`NORM_KERNELS`), pooling (`POOL_KERNELS`) or batch-folded convolution
/// (`BATCH_PATCH_KERNELS`) kernel for a float dtype.
pub fn norm_entry(kernel: &str, dtype: DType) -> Option<String> {
    dtype
        .is_float()
        .then(|| format!("{kernel}_{}", dtype_tag(dtype)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names() {
        assert_eq!(
            unary_entry(UnaryOp::Exp, DType::Float32).as_deref(),
            Some("unary_exp_f32")
        );
        assert_eq!(unary_entry(UnaryOp::Exp, DType::Int32), None);
        assert_eq!(
            binary_entry(BinaryOp::Add, DType::Float64, true).as_deref(),
            Some("binary_add_f64_contig")
        );
        assert_eq!(binary_entry(BinaryOp::And, DType::Float32, false), None);
        assert_eq!(
            reduce_entry(ReduceOp::Sum, DType::Int64, true).as_deref(),
            Some("reduce_sum_i64_rows")
        );
        assert_eq!(reduce_entry(ReduceOp::ArgMax, DType::Float32, true), None);
        assert_eq!(cast_entry(DType::Bool, DType::Float32), "cast_bool_f32");
    }

    #[test]
    fn every_entry_is_defined_in_its_source() {
        // A cheap check that runs without NVRTC: the macro that defines each entry is in the
        // source with the same op and dtype spelling. tests/cuda_nvrtc.rs checks the real output.
        for module in Module::ALL {
            let program = module.program();
            assert!(!program.entries.is_empty(), "{}", program.name);
            for entry in &program.entries {
                let unique = program
                    .entries
                    .iter()
                    .filter(|other| *other == entry)
                    .count();
                assert_eq!(unique, 1, "{entry} listed twice");
            }
        }
    }
}
