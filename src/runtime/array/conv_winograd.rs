//! The one place that decides whether a batch-folded 3x3 stride-1 convolution (forward product
//! and input gradient) runs by Winograd F(2x2, 3x3) (`backend/cpu/conv_winograd.rs`) instead of
//! im2col and one GEMM: host devices (the CPU and the simulated GPUs), float32/float64, and
//! shapes where it measured faster (`winograd_pays`). CUDA, the plain paths
//! (`nn::conv::plain_paths`, which never reach here) keep im2col. Opt-in for now
//! (`DEVARRAY_WINOGRAD=1`, see `mode`).
use super::{patches_refused, Array, Patches, Result, Storage};
use crate::backend::cpu::conv_winograd::{Layout, Weights};
use crate::runtime::timeline::op_scope;

/// When Winograd runs: `DEVARRAY_WINOGRAD=1` where `winograd_pays`, `=all` on every 3x3
/// stride-1 window whether it pays or not (what bench/winograd.py measures the choice with),
/// otherwise never: on this stop's loaded-machine measurement of the ResNet-18 step the
/// forward and input-gradient path was not yet faster than im2col (ARCHITECTURE.md), so it is
/// opt-in until a quiet measurement says otherwise. `with_winograd` turns it on for a thread.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Off,
    All,
    WherePays,
}

thread_local! {
    static FORCED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with Winograd taken where it pays on this thread, whatever `DEVARRAY_WINOGRAD`
/// says (the conformance suite's switch).
pub fn with_winograd<R>(f: impl FnOnce() -> R) -> R {
    let before = FORCED.with(|c| c.replace(true));
    let r = f();
    FORCED.with(|c| c.set(before));
    r
}

fn mode() -> Mode {
    static ENV: std::sync::OnceLock<Mode> = std::sync::OnceLock::new();
    let env = *ENV.get_or_init(|| match std::env::var_os("DEVARRAY_WINOGRAD") {
        Some(v) if v == "1" => Mode::WherePays,
        Some(v) if v == "all" => Mode::All,
        _ => Mode::Off,
    });
    if env == Mode::Off && FORCED.with(std::cell::Cell::get) {
        Mode::WherePays
    } else {
        env
    }
}

/// Whether to run Winograd for `c` input and `k` output channels on maps of `hw` outputs.
fn chosen(c: usize, k: usize, hw: [usize; 2]) -> bool {
    match mode() {
        Mode::Off => false,
        Mode::All => true,
        Mode::WherePays => winograd_pays(c, k, hw),
    }
}

/// A 3x3 window, stride 1, no dilation, zero padding of at most 2 (the input gradient's
/// padding, 2 - p, is then not negative).
fn window_fits(p: &Patches) -> bool {
    p.kernel == [3, 3]
        && p.stride == [1, 1]
        && p.dilation == [1, 1]
        && p.fill == 0.0
        && p.pad[0] <= 2
        && p.pad[1] <= 2
}

/// Whether Winograd beats im2col for `c` input and `k` output channels on maps of `hw`
/// outputs, by measurement (bench/winograd.py, ARCHITECTURE.md): the transforms cost per
/// channel what one output channel's product costs, so few channels lose; a map with an odd
/// side computes a tile row or column of which half is thrown away, which small maps feel.
fn winograd_pays(c: usize, k: usize, [h, w]: [usize; 2]) -> bool {
    c >= 16 && k >= 16 && h >= 4 && w >= 4
}

impl Array {
    /// Whether the convolution of `x` (this array) by the weight `w` and the output gradient
    /// `g` (or the input) can run by Winograd here: same float dtype, both on the host.
    fn winograd_operands(&self, other: &Array) -> bool {
        self.dtype() == other.dtype()
            && self.dtype().has_float_kernels()
            && !self.ctx().placement.is_cuda()
            && self.device() == other.device()
    }

    /// `w @ patches_cols(self)` for this (N, C, h, w) input and the weight `w` (K, C*9) of a
    /// 3x3 stride-1 window `p`: (K, N*Ho*Wo) by Winograd, or None where it does not run or
    /// does not pay (the caller then takes im2col).
    pub fn winograd_cols(&self, w: &Array, p: &Patches) -> Result<Option<Array>> {
        let (&[n, c, h, wd], &[k, rows]) = (self.shape(), w.shape()) else {
            return Ok(None);
        };
        let l = p.out[0] * p.out[1];
        if !(window_fits(p) && rows == 9 * c && chosen(c, k, p.out) && self.winograd_operands(w)) {
            return Ok(None);
        }
        let layout = Layout {
            nck: [n, c, k],
            in_hw: [h, wd],
            in_strides: [c * h * wd, h * wd],
            out_hw: p.out,
            out_strides: [l, n * l],
            pad: p.pad,
        };
        self.winograd(w, Weights::AsIs, layout, vec![k, n * l])
            .map(Some)
    }

    /// dx (shape `nchw`) of the convolution `w @ patches_cols(x)` with the 3x3 stride-1 window
    /// `p`, for this weight (K, C*9) and the output gradient `g` (K, N*Ho*Wo): the convolution of
    /// `g` by the flipped, transposed kernel with padding 2 - p, by Winograd; None where it does
    /// not run or pay.
    pub(super) fn winograd_input_grad(
        &self,
        g: &Array,
        p: &Patches,
        [n, c, h, wd]: [usize; 4],
    ) -> Result<Option<Array>> {
        let (&[k, rows], &[kg, nl]) = (self.shape(), g.shape()) else {
            return Ok(None);
        };
        let l = p.out[0] * p.out[1];
        if !(window_fits(p)
            && rows == 9 * c
            && kg == k
            && nl == n * l
            && chosen(k, c, [h, wd])
            && self.winograd_operands(g))
        {
            return Ok(None);
        }
        let layout = Layout {
            nck: [n, k, c],
            in_hw: p.out,
            in_strides: [l, n * l],
            out_hw: [h, wd],
            out_strides: [c * h * wd, h * wd],
            pad: [2 - p.pad[0], 2 - p.pad[1]],
        };
        g.winograd(self, Weights::FlippedTransposed, layout, vec![n, c, h, wd])
            .map(Some)
    }

    /// dw (K, C*9) of the convolution `w @ patches_cols(x)` (x this (N, C, h, w) input, `w` of
    /// shape (K, C*9)) with the 3x3 stride-1 window `p`, for the output gradient `g`
    /// (K, N*Ho*Wo), by Winograd; None where it does not run or pay.
    pub fn winograd_weight_grad(&self, g: &Array, p: &Patches, k: usize) -> Result<Option<Array>> {
        let (&[n, c, h, wd], &[kg, nl]) = (self.shape(), g.shape()) else {
            return Ok(None);
        };
        let l = p.out[0] * p.out[1];
        if !(window_fits(p)
            && kg == k
            && nl == n * l
            && chosen(c, k, p.out)
            && self.winograd_operands(g))
        {
            return Ok(None);
        }
        let layout = Layout {
            nck: [n, c, k],
            in_hw: [h, wd],
            in_strides: [c * h * wd, h * wd],
            out_hw: p.out,
            out_strides: [l, n * l],
            pad: p.pad,
        };
        let _op = op_scope("winograd_weight_grad3x3");
        let (x, g) = (self.clone(), g.clone());
        self.derive(vec![k, 9 * c], self.dtype(), move || {
            let (xs, gs) = (x.read(), g.read());
            match (&*xs, &*gs) {
                (Storage::Cpu(xs), Storage::Cpu(gs)) => xs.winograd_weight_grad3x3(gs, &layout),
                _ => None,
            }
            .ok_or_else(|| patches_refused("winograd_weight_grad3x3", &x))?
            .map(Storage::Cpu)
        })
        .map(Some)
    }

    /// The backend's Winograd convolution of this input by `w`, laid out as `layout` says.
    fn winograd(
        &self,
        w: &Array,
        order: Weights,
        layout: Layout,
        shape: Vec<usize>,
    ) -> Result<Array> {
        let _op = op_scope("winograd_conv3x3");
        let (x, w) = (self.clone(), w.clone());
        self.derive(shape, self.dtype(), move || {
            let (xs, ws) = (x.read(), w.read());
            match (&*xs, &*ws) {
                (Storage::Cpu(xs), Storage::Cpu(ws)) => xs.winograd_conv3x3(ws, order, &layout),
                _ => None,
            }
            .ok_or_else(|| patches_refused("winograd_conv3x3", &x))?
            .map(Storage::Cpu)
        })
    }
}
