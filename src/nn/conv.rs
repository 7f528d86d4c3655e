//! Convolution and pooling on the tape, for both dialects.
//!
//! A convolution is im2col followed by one batched matmul through the backend's GEMM; windowed
//! pooling of float arrays reads its windows in place (`Array::pool`). Both have a plain form
//! composed from recorded runtime ops (one strided slice per kernel offset, stacked), which every
//! device runs and which differentiates without op-specific rules: `plain_paths` selects it, and
//! the conformance suite checks the fast forms against it. One-dimensional forms run as
//! two-dimensional ones with a height of 1.
use super::autograd::Tape;
use crate::runtime::{
    Array, BinaryOp, DType, IndexItem, Operand, Patches, ReduceOp, Result, Runtime, RuntimeError,
    UnaryOp,
};
use std::cell::Cell;

thread_local! {
    /// Set by `plain_paths`, or for the whole process by `DEVARRAY_PLAIN_CONV=1` (what
    /// `bench/train.py --plain` measures against): the windows are composed from slices even
    /// where `patches` runs.
    static PLAIN: Cell<bool> = Cell::new(plain_from_env());
}

fn plain_from_env() -> bool {
    static ENV: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENV.get_or_init(|| std::env::var_os("DEVARRAY_PLAIN_CONV").is_some_and(|v| v == "1"))
}

/// Runs `f` with convolution and pooling built the plain way (padding by concatenation, one
/// strided slice per kernel offset) and batch norm composed from elementwise ops and
/// reductions, on this thread: what the conformance suite compares the one-pass im2col
/// (`Array::patches`) and the batch-norm primitive (`Array::batch_norm`) against.
pub fn plain_paths<R>(f: impl FnOnce() -> R) -> R {
    let before = PLAIN.with(|p| p.replace(true));
    let r = f();
    PLAIN.with(|p| p.set(before));
    r
}

/// Whether `plain_paths` (or `DEVARRAY_PLAIN_CONV=1`) is in force on this thread.
pub(crate) fn plain() -> bool {
    PLAIN.with(Cell::get)
}

/// The geometry of a convolution or pooling window over the two spatial axes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    /// Padding before and after, per axis (PyTorch's `'same'` may pad one more after).
    pub pad: [(usize, usize); 2],
    pub dilation: [usize; 2],
}

impl Window {
    pub fn new(kernel: [usize; 2], stride: [usize; 2], pad: [usize; 2]) -> Window {
        Window {
            kernel,
            stride,
            pad: [(pad[0], pad[0]), (pad[1], pad[1])],
            dilation: [1, 1],
        }
    }

    /// The one-pass im2col of this window, producing `out` positions, padding read as `fill`.
    fn patches(&self, out: [usize; 2], fill: f64) -> Patches {
        Patches {
            kernel: self.kernel,
            stride: self.stride,
            dilation: self.dilation,
            pad: [self.pad[0].0, self.pad[1].0],
            out,
            fill,
        }
    }

    fn extent(&self, axis: usize) -> usize {
        self.dilation[axis] * (self.kernel[axis] - 1) + 1
    }
}

fn shape_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

fn slice(start: usize, stop: usize, step: usize) -> IndexItem {
    IndexItem::Slice {
        start: Some(start as i64),
        stop: Some(stop as i64),
        step: Some(step as i64),
    }
}

fn all() -> IndexItem {
    IndexItem::Slice {
        start: None,
        stop: None,
        step: None,
    }
}

/// `x` with `pad` (before, after) of constant `value` on axes 2 and 3, as concatenations so the
/// gradient flows back to `x`.
pub fn pad2d(
    rt: &Runtime,
    tape: &mut Tape,
    x: &Array,
    pad: [(usize, usize); 2],
    value: f64,
) -> Result<Array> {
    let mut h = x.clone();
    for (axis, (lo, hi)) in [(2usize, pad[0]), (3, pad[1])] {
        if lo == 0 && hi == 0 {
            continue;
        }
        let mut parts = Vec::with_capacity(3);
        for (n, first) in [(lo, true), (hi, false)] {
            if n == 0 {
                continue;
            }
            let mut shape = h.shape().to_vec();
            if let Some(d) = shape.get_mut(axis) {
                *d = n;
            }
            let block = rt.full(&shape, value, h.dtype(), h.device())?;
            if first {
                parts.push(block);
                parts.push(h.clone());
            } else {
                if parts.is_empty() {
                    parts.push(h.clone());
                }
                parts.push(block);
            }
        }
        h = tape.concat(&parts, axis as isize)?;
    }
    Ok(h)
}

/// Every kernel offset of `w` over the (already padded) 4-d `x`, stacked on a new axis 2:
/// (N, C, kh*kw, Ho, Wo).
fn im2col(tape: &mut Tape, x: &Array, w: &Window) -> Result<(Array, usize, usize)> {
    let (h, wd) = (x.shape()[2], x.shape()[3]);
    let (eh, ew) = (w.extent(0), w.extent(1));
    let ho = (h - eh) / w.stride[0] + 1;
    let wo = (wd - ew) / w.stride[1] + 1;
    let mut parts = Vec::with_capacity(w.kernel[0] * w.kernel[1]);
    for i in 0..w.kernel[0] {
        for j in 0..w.kernel[1] {
            let (r, c) = (i * w.dilation[0], j * w.dilation[1]);
            let items = [
                all(),
                all(),
                slice(r, r + w.stride[0] * (ho - 1) + 1, w.stride[0]),
                slice(c, c + w.stride[1] * (wo - 1) + 1, w.stride[1]),
            ];
            parts.push(tape.index(x, &items)?);
        }
    }
    Ok((tape.stack(&parts, 2)?, ho, wo))
}

/// Whether `x`'s device builds patches in one pass (`Array::patches`), and the plain path is not
/// forced.
fn one_pass_patches(x: &Array) -> bool {
    x.has_patches() && !PLAIN.with(Cell::get)
}

/// Every window of `win` over `x` (padding read as `fill`) as (N, C, kh*kw, out[0], out[1]):
/// one pass where the device has `patches`, else slices of the padded input, cropped to `out`
/// (a `ceil_mode` pooling pads past the input on the right).
fn windows(
    rt: &Runtime,
    tape: &mut Tape,
    x: &Array,
    win: &Window,
    out: [usize; 2],
    fill: f64,
) -> Result<Array> {
    if one_pass_patches(x) {
        return tape.patches(x, &win.patches(out, fill));
    }
    let padded = pad2d(rt, tape, x, win.pad, fill)?;
    let (cols, ho, wo) = im2col(tape, &padded, win)?;
    if (ho, wo) == (out[0], out[1]) {
        return Ok(cols);
    }
    tape.index(
        &cols,
        &[
            all(),
            all(),
            all(),
            slice(0, out[0], 1),
            slice(0, out[1], 1),
        ],
    )
}

fn check_window(w: &Window, what: &str) -> Result<()> {
    if w.kernel.contains(&0) || w.stride.contains(&0) || w.dilation.contains(&0) {
        return Err(RuntimeError::Value(format!(
            "{what}: kernel size, stride and dilation must be at least 1"
        )));
    }
    Ok(())
}

/// A 2-d convolution (cross-correlation, as both frameworks compute it): `x` is (N, C, H, W),
/// `weight` (O, C/groups, kh, kw), `bias` (O,).
pub fn conv2d(
    rt: &Runtime,
    tape: &mut Tape,
    x: &Array,
    weight: &Array,
    bias: Option<&Array>,
    win: &Window,
    groups: usize,
) -> Result<Array> {
    conv2d_act(rt, tape, x, weight, bias, win, groups, false)
}

/// `conv2d`, then ReLU when `relu`: on the batch-folded path the activation is applied in the
/// pass that adds the bias and its mask taken in the pass that lays the gradient out (one tape
/// node); elsewhere it is the ReLU op after the convolution. Both give the same values.
#[allow(clippy::too_many_arguments)]
pub fn conv2d_act(
    rt: &Runtime,
    tape: &mut Tape,
    x: &Array,
    weight: &Array,
    bias: Option<&Array>,
    win: &Window,
    groups: usize,
    relu: bool,
) -> Result<Array> {
    let y = conv2d_fused(rt, tape, x, weight, bias, win, groups, relu)?;
    match y {
        (y, false) if relu => tape.unary(&y, UnaryOp::Relu),
        (y, _) => Ok(y),
    }
}

/// The convolution, and whether it applied `relu` itself.
#[allow(clippy::too_many_arguments)]
fn conv2d_fused(
    rt: &Runtime,
    tape: &mut Tape,
    x: &Array,
    weight: &Array,
    bias: Option<&Array>,
    win: &Window,
    groups: usize,
    relu: bool,
) -> Result<(Array, bool)> {
    let [n, c, h, wd] = *x.shape() else {
        return Err(RuntimeError::Shape(format!(
            "conv2d: expected a 4-d input (batch, channels, height, width), got shape {}",
            shape_text(x.shape())
        )));
    };
    let [o, cg, kh, kw] = *weight.shape() else {
        return Err(RuntimeError::Shape(format!(
            "conv2d: expected a 4-d weight (out_channels, in_channels/groups, kh, kw), got shape {}",
            shape_text(weight.shape())
        )));
    };
    let mut win = *win;
    win.kernel = [kh, kw];
    check_window(&win, "conv2d")?;
    if groups == 0 || c % groups != 0 || o % groups != 0 || cg * groups != c {
        return Err(RuntimeError::Shape(format!(
            "conv2d: weight of shape {} with groups={groups} expects {} input channels, but the input has {c} (shape {})",
            shape_text(weight.shape()),
            cg * groups.max(1),
            shape_text(x.shape())
        )));
    }
    let (ph, pw) = (
        h + win.pad[0].0 + win.pad[0].1,
        wd + win.pad[1].0 + win.pad[1].1,
    );
    if win.extent(0) > ph || win.extent(1) > pw {
        return Err(RuntimeError::Shape(format!(
            "conv2d: the kernel ({kh}, {kw}) (dilated: ({}, {})) is larger than the padded input ({ph}, {pw})",
            win.extent(0),
            win.extent(1)
        )));
    }
    if x.device() != weight.device() {
        return Err(RuntimeError::DeviceMismatch {
            op: "conv2d".into(),
            first: x.device(),
            second: weight.device(),
        });
    }
    let ho = (ph - win.extent(0)) / win.stride[0] + 1;
    let wo = (pw - win.extent(1)) / win.stride[1] + 1;
    let k = (cg * kh * kw) as isize;
    let (g, og) = (groups as isize, (o / groups) as isize);
    let l = (ho * wo) as isize;
    if let Some(b) = bias {
        if b.size() != o {
            return Err(RuntimeError::Shape(format!(
                "conv2d: bias of shape {} for {o} output channels; give one value per output channel",
                shape_text(b.shape())
            )));
        }
    }
    if one_pass_patches(x) && groups == 1 && x.has_patches_cols() && x.size() > 0 {
        // One GEMM over the whole batch (host devices), the bias added as the output is laid
        // out when it has the product's dtype and device. An empty batch has nothing to fold
        // and takes the per-sample path, which gives the empty (0, O, Ho, Wo) result.
        let p = win.patches([ho, wo], 0.0);
        let w2 = tape.reshape(weight, &[o as isize, k])?;
        let same = |b: &&Array| {
            b.dtype() == x.dtype() && weight.dtype() == x.dtype() && b.device() == x.device()
        };
        let fused = match bias.filter(same) {
            Some(b) => Some(tape.reshape(b, &[o as isize])?),
            None => None,
        };
        let unfused = bias.filter(|b| !same(b));
        let relu_here = relu && unfused.is_none();
        let y = tape.batch_patch_matmul(x, &w2, fused.as_ref(), &p, relu_here)?;
        return match unfused {
            Some(b) => {
                let b4 = tape.reshape(b, &[1, o as isize, 1, 1])?;
                let y = tape.binary(BinaryOp::Add, Operand::Array(&y), Operand::Array(&b4))?;
                Ok((y, false))
            }
            None => Ok((y, relu_here)),
        };
    }
    let y = if one_pass_patches(x) {
        // One tape node that recomputes the patches in backward instead of keeping them.
        let p = win.patches([ho, wo], 0.0);
        if groups == 1 {
            let w2 = tape.reshape(weight, &[o as isize, k])?;
            tape.patch_matmul(x, &w2, &p, &[n as isize, k, l])?
        } else {
            let w3 = tape.reshape(weight, &[g, og, k])?;
            tape.patch_matmul(x, &w3, &p, &[n as isize, g, k, l])?
        }
    } else if groups == 1 {
        let cols = windows(rt, tape, x, &win, [ho, wo], 0.0)?;
        // (O, K) @ (N, K, L): one GEMM per sample through the backend's matmul.
        let cols = tape.reshape(&cols, &[n as isize, k, l])?;
        let w2 = tape.reshape(weight, &[o as isize, k])?;
        tape.matmul(&w2, &cols)?
    } else {
        let cols = windows(rt, tape, x, &win, [ho, wo], 0.0)?;
        let cols = tape.reshape(&cols, &[n as isize, g, k, l])?;
        let w3 = tape.reshape(weight, &[g, og, k])?;
        tape.matmul(&w3, &cols)?
    };
    let mut y = tape.reshape(&y, &[n as isize, o as isize, ho as isize, wo as isize])?;
    if let Some(b) = bias {
        let b4 = tape.reshape(b, &[1, o as isize, 1, 1])?;
        y = tape.binary(BinaryOp::Add, Operand::Array(&y), Operand::Array(&b4))?;
    }
    Ok((y, false))
}

/// A 1-d convolution: `x` (N, C, L), `weight` (O, C/groups, k); runs as a 2-d one of height 1.
#[allow(clippy::too_many_arguments)]
pub fn conv1d(
    rt: &Runtime,
    tape: &mut Tape,
    x: &Array,
    weight: &Array,
    bias: Option<&Array>,
    stride: usize,
    pad: (usize, usize),
    dilation: usize,
    groups: usize,
) -> Result<Array> {
    let [n, c, l] = *x.shape() else {
        return Err(RuntimeError::Shape(format!(
            "conv1d: expected a 3-d input (batch, channels, length), got shape {}",
            shape_text(x.shape())
        )));
    };
    let [o, cg, k] = *weight.shape() else {
        return Err(RuntimeError::Shape(format!(
            "conv1d: expected a 3-d weight (out_channels, in_channels/groups, k), got shape {}",
            shape_text(weight.shape())
        )));
    };
    let x4 = tape.reshape(x, &[n as isize, c as isize, 1, l as isize])?;
    let w4 = tape.reshape(weight, &[o as isize, cg as isize, 1, k as isize])?;
    let win = Window {
        kernel: [1, k],
        stride: [1, stride],
        pad: [(0, 0), pad],
        dilation: [1, dilation],
    };
    let y = conv2d(rt, tape, &x4, &w4, bias, &win, groups)?;
    let s = y.shape().to_vec();
    tape.reshape(&y, &[s[0] as isize, s[1] as isize, s[3] as isize])
}

/// PyTorch's `padding='same'`: the dilated kernel's extent less one, split with the odd one
/// after, per axis.
pub fn same_padding(kernel: [usize; 2], dilation: [usize; 2]) -> [(usize, usize); 2] {
    let half = |axis: usize| {
        let total = dilation[axis] * kernel[axis].saturating_sub(1);
        (total / 2, total - total / 2)
    };
    [half(0), half(1)]
}

/// Output size of a pooling window on one axis. PyTorch's `ceil_mode` drops a last window that
/// would start inside the right padding (`torch_rule`); MXNet's "full" convention does not.
pub fn pool_out(
    size: usize,
    k: usize,
    s: usize,
    pad: usize,
    dilation: usize,
    ceil: bool,
    torch_rule: bool,
) -> Option<usize> {
    let ext = dilation * (k - 1) + 1;
    let span = (size + 2 * pad).checked_sub(ext)?;
    let mut out = if ceil { span.div_ceil(s) } else { span / s } + 1;
    if ceil && torch_rule && (out - 1) * s >= size + pad {
        out -= 1;
    }
    Some(out)
}

pub use crate::runtime::PoolKind;

/// Max or average pooling over axes 2 and 3 of a 4-d `x` (padding symmetric, `ceil_mode`).
/// Max pooling passes the gradient to the first maximum of each window, as both frameworks do.
pub fn pool2d(
    rt: &Runtime,
    tape: &mut Tape,
    x: &Array,
    win: &Window,
    kind: PoolKind,
    ceil_mode: bool,
    torch_rule: bool,
) -> Result<Array> {
    let [_, _, h, wd] = *x.shape() else {
        return Err(RuntimeError::Shape(format!(
            "pooling: expected a 4-d input (batch, channels, height, width), got shape {}",
            shape_text(x.shape())
        )));
    };
    check_window(win, "pooling")?;
    let dims = [h, wd];
    let mut outs = [0usize; 2];
    for axis in 0..2 {
        let (k, p) = (win.kernel[axis], win.pad[axis].0);
        outs[axis] = pool_out(
            dims[axis],
            k,
            win.stride[axis],
            p,
            win.dilation[axis],
            ceil_mode,
            torch_rule,
        )
        .filter(|&o| o > 0)
        .ok_or_else(|| {
            RuntimeError::Shape(format!(
                "pooling: the window {} is larger than the padded input ({}, {})",
                shape_text(&win.kernel),
                h + 2 * win.pad[0].0,
                wd + 2 * win.pad[1].0
            ))
        })?;
    }
    // Extra padding after, so that a ceil_mode window that runs past the padded input fits.
    let mut full = *win;
    for axis in 0..2 {
        let need = (outs[axis] - 1) * win.stride[axis] + win.extent(axis);
        let have = dims[axis] + 2 * win.pad[axis].0;
        full.pad[axis].1 = win.pad[axis].0 + need.saturating_sub(have);
    }
    let fill = match kind {
        // The lowest finite value, not -inf: the one-hot pick below multiplies by zero.
        PoolKind::Max => lowest(x.dtype()),
        PoolKind::Avg { .. } => 0.0,
    };
    if one_pass_patches(x) {
        // Read in place: no window array, and backward finds the maxima again from `x`.
        return tape.pool(x, &full.patches(outs, fill), kind);
    }
    let [ho, wo] = outs;
    let cols = windows(rt, tape, x, &full, outs, fill)?;
    match kind {
        PoolKind::Max => {
            let kk = win.kernel[0] * win.kernel[1];
            let arg = cols.reduce(ReduceOp::ArgMax, Some(&[2]), true)?;
            let offsets = rt
                .arange(0.0, kk as f64, 1.0, arg.dtype(), cols.device())?
                .reshape(&[1, 1, kk as isize, 1, 1])?;
            let onehot =
                Array::binary(BinaryOp::Eq, Operand::Array(&arg), Operand::Array(&offsets))?
                    .astype(cols.dtype())?;
            let picked = tape.binary(
                BinaryOp::Mul,
                Operand::Array(&cols),
                Operand::Array(&onehot),
            )?;
            tape.reduce(&picked, ReduceOp::Sum, Some(&[2]), false)
        }
        PoolKind::Avg { count_include_pad } => {
            let sum = tape.reduce(&cols, ReduceOp::Sum, Some(&[2]), false)?;
            let mut div = Vec::with_capacity(ho * wo);
            let count = |axis: usize, o: usize| {
                let start = (o * win.stride[axis]) as i64 - win.pad[axis].0 as i64;
                let end = start + win.kernel[axis] as i64;
                let (lo, hi) = if count_include_pad {
                    (
                        -(win.pad[axis].0 as i64),
                        (dims[axis] + win.pad[axis].0) as i64,
                    )
                } else {
                    (0, dims[axis] as i64)
                };
                (end.min(hi) - start.max(lo)).max(1) as f64
            };
            for i in 0..ho {
                for j in 0..wo {
                    div.push(count(0, i) * count(1, j));
                }
            }
            let div = rt.from_f64(div, &[ho, wo], x.dtype(), x.device())?;
            tape.binary(BinaryOp::Div, Operand::Array(&sum), Operand::Array(&div))
        }
    }
}

fn lowest(dtype: DType) -> f64 {
    match dtype {
        DType::Float64 => f64::MIN,
        DType::Float32 => f32::MIN as f64,
        DType::Float16 => -65504.0,
        DType::BFloat16 => crate::runtime::bf16::MIN.to_f64(),
        DType::Int32 => i32::MIN as f64,
        DType::Int8 => i8::MIN as f64,
        DType::Int16 => i16::MIN as f64,
        DType::UInt8 | DType::UInt16 | DType::UInt32 | DType::UInt64 => 0.0,
        DType::Int64 | DType::Bool => i64::MIN as f64,
    }
}

/// Adaptive pooling to `out` (oh, ow): output cell i covers rows floor(i*H/oh) to
/// ceil((i+1)*H/oh), as both frameworks compute it. Windows that tile the input evenly run
/// as one ordinary pooling; others are reduced cell by cell.
pub fn adaptive_pool2d(
    rt: &Runtime,
    tape: &mut Tape,
    x: &Array,
    out: [usize; 2],
    max: bool,
) -> Result<Array> {
    let [_, _, h, w] = *x.shape() else {
        return Err(RuntimeError::Shape(format!(
            "adaptive pooling: expected a 4-d input (batch, channels, height, width), got shape {}",
            shape_text(x.shape())
        )));
    };
    if out.contains(&0) {
        return Err(RuntimeError::Value(
            "adaptive pooling: the output size must be at least 1".into(),
        ));
    }
    let op = if max { ReduceOp::Max } else { ReduceOp::Mean };
    if out == [1, 1] && !max {
        return tape.reduce(x, op, Some(&[2, 3]), true);
    }
    if h % out[0] == 0 && w % out[1] == 0 {
        let k = [h / out[0], w / out[1]];
        let win = Window::new(k, k, [0, 0]);
        let kind = if max {
            PoolKind::Max
        } else {
            PoolKind::Avg {
                count_include_pad: true,
            }
        };
        return pool2d(rt, tape, x, &win, kind, false, true);
    }
    let mut rows = Vec::with_capacity(out[0]);
    for i in 0..out[0] {
        let (r0, r1) = (i * h / out[0], ((i + 1) * h).div_ceil(out[0]));
        let mut cells = Vec::with_capacity(out[1]);
        for j in 0..out[1] {
            let (c0, c1) = (j * w / out[1], ((j + 1) * w).div_ceil(out[1]));
            let part = tape.index(x, &[all(), all(), slice(r0, r1, 1), slice(c0, c1, 1)])?;
            let cell = if max {
                // A window as big as the cell gives `pool2d`'s first-maximum gradient.
                let k = [r1 - r0, c1 - c0];
                let r = pool2d(
                    rt,
                    tape,
                    &part,
                    &Window::new(k, k, [0, 0]),
                    PoolKind::Max,
                    false,
                    true,
                )?;
                let s = r.shape().to_vec();
                tape.reshape(&r, &[s[0] as isize, s[1] as isize])?
            } else {
                tape.reduce(&part, op, Some(&[2, 3]), false)?
            };
            cells.push(cell);
        }
        rows.push(tape.stack(&cells, 2)?);
    }
    tape.stack(&rows, 2)
}

/// Max pooling over the whole spatial extent of a 4-d `x`, keeping (N, C, 1, 1).
pub fn global_pool2d(rt: &Runtime, tape: &mut Tape, x: &Array, max: bool) -> Result<Array> {
    if x.ndim() != 4 {
        return Err(RuntimeError::Shape(format!(
            "global pooling: expected a 4-d input (batch, channels, height, width), got shape {}",
            shape_text(x.shape())
        )));
    }
    if max {
        let k = [x.shape()[2], x.shape()[3]];
        pool2d(
            rt,
            tape,
            x,
            &Window::new(k, k, [0, 0]),
            PoolKind::Max,
            false,
            true,
        )
    } else {
        tape.reduce(x, ReduceOp::Mean, Some(&[2, 3]), true)
    }
}

#[cfg(test)]
#[path = "conv/tests.rs"]
mod tests;
