//! 3x3 stride-1 convolutions by Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, 2015):
//! each 2x2 block of outputs ("tile") comes from a 4x4 block of inputs, and the 9 multiply-adds
//! per output and input channel of the direct form become 16 per tile, 4 per output, 2.25x
//! fewer. The transforms are batched so the products are 16 GEMMs, one per position ξ of the
//! 4x4 transformed tile: M[ξ] (K x tiles) = U[ξ] (K x C) · V[ξ] (C x tiles), with U the
//! transformed weights and V the transformed input tiles, through the same GEMM as every other
//! product (`gemm::gemm_strided_serial`).
//!
//! Work is cut into blocks of tiles, one block per task on rayon's threads: a block's V and M
//! stay in cache between the input transform, its 16 products and the output transform.
//!
//! One kernel serves the forward product and the input gradient: the gradient of a 3x3
//! stride-1 convolution with padding p is a 3x3 stride-1 convolution of the output gradient
//! with the kernel flipped and its channel axes swapped (`Weights::FlippedTransposed`) and
//! padding 2 - p. Input and output are read and written through plane strides (`Layout`), so
//! the batch-folded (O, N*L) gradient is read, and the (O, N*L) product written, in place.
//!
//! Accuracy: the transforms' coefficients are 0, ±1 and ±1/2 (exact in binary) and each
//! output is still a sum of the same 9*C products, regrouped: the rounding error grows by a
//! small constant factor over the direct sum, as measured and bounded in tests/conformance.rs.
use super::cancel::Cancel;
use super::gemm::{gemm_strided_serial, GemmFloat};
use super::kernels::alloc;
use crate::vocab::error::{Result, RuntimeError};
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::ops::Sub;

/// A float the transforms run on.
pub trait WinogradFloat: GemmFloat + Sub<Output = Self> {
    const HALF: Self;
}

impl WinogradFloat for f32 {
    const HALF: f32 = 0.5;
}

impl WinogradFloat for f64 {
    const HALF: f64 = 0.5;
}

/// How the weight array is read: (K, C, 3, 3) as it is (a forward product), or (C', K', 3, 3)
/// read as the kernel of the input gradient, out channel k from its second axis and the taps
/// reversed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Weights {
    AsIs,
    FlippedTransposed,
}

/// Where the planes lie. Input element (n, c, y, x) is at
/// `n * in_strides[0] + c * in_strides[1] + y * in_hw[1] + x`, output element (n, k, y, x) at
/// `n * out_strides[0] + k * out_strides[1] + y * out_hw[1] + x`. NCHW has plane strides
/// (C*H*W, H*W), the batch-folded (C, N*H*W) has (H*W, N*H*W).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layout {
    /// Samples, input channels, output channels.
    pub nck: [usize; 3],
    pub in_hw: [usize; 2],
    pub in_strides: [usize; 2],
    pub out_hw: [usize; 2],
    pub out_strides: [usize; 2],
    /// Rows and columns of zeros before the input.
    pub pad: [usize; 2],
}

impl Layout {
    fn tiles_per_sample(&self) -> [usize; 2] {
        [self.out_hw[0].div_ceil(2), self.out_hw[1].div_ceil(2)]
    }

    /// The highest element index each side reads or writes, plus one.
    fn extents(&self) -> (usize, usize) {
        let [n, c, k] = self.nck;
        let span = |hw: [usize; 2], [sn, sc]: [usize; 2], planes: usize| {
            if n == 0 || planes == 0 || hw[0] * hw[1] == 0 {
                0
            } else {
                (n - 1) * sn + (planes - 1) * sc + hw[0] * hw[1]
            }
        };
        (
            span(self.in_hw, self.in_strides, c),
            span(self.out_hw, self.out_strides, k),
        )
    }
}

impl super::CpuStorage {
    /// The 3x3 stride-1 convolution of this input by the weights `w` of the same float dtype
    /// (`conv3x3`); None for other dtypes.
    pub fn winograd_conv3x3(
        &self,
        w: &super::CpuStorage,
        order: Weights,
        l: &Layout,
    ) -> Option<Result<super::CpuStorage>> {
        use super::CpuStorage::{F32, F64};
        match (self, w) {
            (F32(x), F32(w)) => Some(conv3x3(x, w, order, l).map(F32)),
            (F64(x), F64(w)) => Some(conv3x3(x, w, order, l).map(F64)),
            _ => None,
        }
    }

    /// The weight gradient of the forward convolution laid out as `l`, for this input and the
    /// output gradient `g` of the same float dtype (`weight_grad3x3`); None for other dtypes.
    pub fn winograd_weight_grad3x3(
        &self,
        g: &super::CpuStorage,
        l: &Layout,
    ) -> Option<Result<super::CpuStorage>> {
        use super::CpuStorage::{F32, F64};
        match (self, g) {
            (F32(x), F32(g)) => Some(weight_grad3x3(x, g, l).map(F32)),
            (F64(x), F64(g)) => Some(weight_grad3x3(x, g, l).map(F64)),
            _ => None,
        }
    }
}

/// The output's length (`Layout::out_strides` tile it exactly: N*K*Ho*Wo elements).
fn out_len(l: &Layout) -> usize {
    l.nck[0] * l.nck[2] * l.out_hw[0] * l.out_hw[1]
}

/// U: the 16 transformed 3x3 kernels, (16, K, C): G g G^T with
/// G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]].
fn transform_weights<T: WinogradFloat>(w: &[T], [_, c, k]: [usize; 3], order: Weights) -> Vec<T> {
    let mut u = vec![T::ZERO; 16 * k * c];
    for ko in 0..k {
        for ci in 0..c {
            let mut g = [T::ZERO; 9];
            for (t, gt) in g.iter_mut().enumerate() {
                *gt = match order {
                    Weights::AsIs => w[(ko * c + ci) * 9 + t],
                    Weights::FlippedTransposed => w[(ci * k + ko) * 9 + 8 - t],
                };
            }
            // Rows: (G g) is 4x3.
            let mut gg = [T::ZERO; 12];
            for j in 0..3 {
                let (a, b, cc) = (g[j], g[3 + j], g[6 + j]);
                gg[j] = a;
                gg[3 + j] = T::HALF * (a + b + cc);
                gg[6 + j] = T::HALF * (a - b + cc);
                gg[9 + j] = cc;
            }
            // Columns: (G g) G^T is 4x4.
            for i in 0..4 {
                let (a, b, cc) = (gg[3 * i], gg[3 * i + 1], gg[3 * i + 2]);
                let row = [a, T::HALF * (a + b + cc), T::HALF * (a - b + cc), cc];
                for (j, v) in row.into_iter().enumerate() {
                    u[((4 * i + j) * k + ko) * c + ci] = v;
                }
            }
        }
    }
    u
}

/// B^T d B for one 4x4 input block d, B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0],
/// [0, 1, 0, -1]].
#[inline(always)]
fn transform_input<T: WinogradFloat>(d: &[T; 16]) -> [T; 16] {
    let mut t = [T::ZERO; 16];
    for j in 0..4 {
        let (d0, d1, d2, d3) = (d[j], d[4 + j], d[8 + j], d[12 + j]);
        t[j] = d0 - d2;
        t[4 + j] = d1 + d2;
        t[8 + j] = d2 - d1;
        t[12 + j] = d1 - d3;
    }
    let mut v = [T::ZERO; 16];
    for i in 0..4 {
        let (a, b, c, e) = (t[4 * i], t[4 * i + 1], t[4 * i + 2], t[4 * i + 3]);
        v[4 * i] = a - c;
        v[4 * i + 1] = b + c;
        v[4 * i + 2] = c - b;
        v[4 * i + 3] = b - e;
    }
    v
}

/// A^T m A for one transformed 4x4 product m, A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]: the 2x2
/// outputs, row-major.
#[inline(always)]
fn transform_output<T: WinogradFloat>(m: &[T; 16]) -> [T; 4] {
    let mut t = [T::ZERO; 8];
    for j in 0..4 {
        let (m0, m1, m2, m3) = (m[j], m[4 + j], m[8 + j], m[12 + j]);
        t[j] = m0 + m1 + m2;
        t[4 + j] = m1 - m2 - m3;
    }
    let mut y = [T::ZERO; 4];
    for i in 0..2 {
        let (a, b, c, e) = (t[4 * i], t[4 * i + 1], t[4 * i + 2], t[4 * i + 3]);
        y[2 * i] = a + b + c;
        y[2 * i + 1] = b - c - e;
    }
    y
}

/// How many tiles a block takes: a block's V (16 x C x tiles) near 512 KiB, at least 16 tiles
/// (narrower, each of the 16 products repacks U for too little work), at most 256, and enough
/// blocks to give every thread two where there are tiles for it.
fn block_tiles(tiles: usize, c: usize, elem: usize, threads: usize) -> usize {
    let by_cache = (512 << 10) / (16 * c.max(1) * elem);
    let by_threads = tiles.div_ceil(2 * threads.max(1));
    by_cache.min(by_threads).clamp(16, 256)
}

/// Output written by several tasks at disjoint elements (each tile owns its 2x2 outputs).
#[derive(Clone, Copy)]
struct Out<T>(*mut T);
// SAFETY: tasks write disjoint elements (distinct tiles) and nothing reads them until all end.
unsafe impl<T> Send for Out<T> {}
unsafe impl<T> Sync for Out<T> {}

impl<T> Out<T> {
    /// # Safety
    /// `i` is inside the output, and no other task writes it.
    unsafe fn write(&self, i: usize, v: T) {
        self.0.add(i).write(v)
    }
}

/// Where tile `t` lies: its sample and its top-left output (row, column).
#[derive(Clone, Copy)]
struct Tiles {
    per_sample: usize,
    per_row: usize,
}

impl Tiles {
    fn of(l: &Layout) -> Self {
        let [th, tw] = l.tiles_per_sample();
        Tiles {
            per_sample: th * tw,
            per_row: tw,
        }
    }

    fn at(&self, t: usize) -> (usize, usize, usize) {
        let (s, r) = (t / self.per_sample, t % self.per_sample);
        (s, 2 * (r / self.per_row), 2 * (r % self.per_row))
    }
}

/// The operands' sizes against the layout: an internal error if they do not fit. The output
/// planes must tile the output: NCHW or the batch-folded (K, N*L).
fn check(x_len: usize, w_len: usize, l: &Layout) -> Result<()> {
    let [n, c, k] = l.nck;
    let (in_end, out_end) = l.extents();
    let plane = l.out_hw[0] * l.out_hw[1];
    let tiled = l.out_strides == [k * plane, plane] || l.out_strides == [plane, n * plane];
    if x_len < in_end || w_len < 9 * c * k || out_end > out_len(l) || !tiled {
        return Err(RuntimeError::Value(
            "internal error: a Winograd convolution got operands of the wrong size; please report this as a devarray bug".into(),
        ));
    }
    Ok(())
}

/// V for tiles `first..first + count`: (16, C, count), B^T d B of each channel's 4x4 input block
/// (zeros outside the input).
fn transformed_inputs<T: WinogradFloat>(
    x: &[T],
    l: &Layout,
    first: usize,
    count: usize,
) -> Result<Vec<T>> {
    let c = l.nck[1];
    let [h, wd] = l.in_hw;
    let tiles = Tiles::of(l);
    let mut v = alloc::<T>(16 * c * count)?;
    let vs = &mut v.spare_capacity_mut()[..16 * c * count];
    for ci in 0..c {
        for p in 0..count {
            let (s, oy, ox) = tiles.at(first + p);
            let plane = &x[s * l.in_strides[0] + ci * l.in_strides[1]..];
            let y0 = oy as isize - l.pad[0] as isize;
            let x0 = ox as isize - l.pad[1] as isize;
            let mut d = [T::ZERO; 16];
            if y0 >= 0 && x0 >= 0 && y0 as usize + 4 <= h && x0 as usize + 4 <= wd {
                let at = y0 as usize * wd + x0 as usize;
                for i in 0..4 {
                    d[4 * i..4 * i + 4].copy_from_slice(&plane[at + i * wd..][..4]);
                }
            } else {
                for i in 0..4 {
                    let y = y0 + i as isize;
                    if y < 0 || y as usize >= h {
                        continue;
                    }
                    for j in 0..4 {
                        let xx = x0 + j as isize;
                        if xx >= 0 && (xx as usize) < wd {
                            d[4 * i + j] = plane[y as usize * wd + xx as usize];
                        }
                    }
                }
            }
            for (xi, val) in transform_input(&d).into_iter().enumerate() {
                vs[(xi * c + ci) * count + p] = MaybeUninit::new(val);
            }
        }
    }
    // SAFETY: the loops above wrote every (ξ, channel, tile) element.
    unsafe { v.set_len(16 * c * count) };
    Ok(v)
}

/// The 3x3 stride-1 convolution of `x` by `w` (read as `order` says) with the planes laid out
/// as `l` says: the output, `out_len(l)` elements.
pub fn conv3x3<T: WinogradFloat>(x: &[T], w: &[T], order: Weights, l: &Layout) -> Result<Vec<T>> {
    check(x.len(), w.len(), l)?;
    let [n, c, k] = l.nck;
    let total = out_len(l);
    let mut out = alloc::<T>(total)?;
    if total == 0 {
        return Ok(out);
    }
    if c == 0 {
        out.resize(total, T::ZERO);
        return Ok(out);
    }
    let u = transform_weights(w, l.nck, order);
    let tiles = Tiles::of(l);
    let count_all = n * tiles.per_sample;
    let per_block = block_tiles(
        count_all,
        c,
        std::mem::size_of::<T>(),
        rayon::current_num_threads(),
    );
    let dst = Out(out.spare_capacity_mut().as_mut_ptr().cast::<T>());
    let cancel = Cancel::current();
    let [oh, ow] = l.out_hw;
    let block = |b: usize| -> Result<()> {
        if cancel.requested() {
            return Ok(());
        }
        let first = b * per_block;
        let count = per_block.min(count_all - first);
        let v = transformed_inputs(x, l, first, count)?;
        // M: (16, K, count).
        let mut m = alloc::<T>(16 * k * count)?;
        let ms = &mut m.spare_capacity_mut()[..16 * k * count];
        for (xi, mx) in ms.chunks_exact_mut(k * count).enumerate() {
            gemm_strided_serial(
                [k, c, count],
                &u[xi * k * c..],
                [c, 1],
                &v[xi * c * count..],
                [count, 1],
                mx,
                count,
            );
        }
        // SAFETY: the 16 products wrote all of M.
        unsafe { m.set_len(16 * k * count) };
        for ko in 0..k {
            for p in 0..count {
                let (s, oy, ox) = tiles.at(first + p);
                let mut mt = [T::ZERO; 16];
                for (xi, e) in mt.iter_mut().enumerate() {
                    *e = m[(xi * k + ko) * count + p];
                }
                let y = transform_output(&mt);
                let base = s * l.out_strides[0] + ko * l.out_strides[1];
                for i in 0..2 {
                    for j in 0..2 {
                        if oy + i < oh && ox + j < ow {
                            // SAFETY: in range by `check` (extents within the output); this
                            // tile alone writes its outputs.
                            unsafe { dst.write(base + (oy + i) * ow + ox + j, y[2 * i + j]) };
                        }
                    }
                }
            }
        }
        Ok(())
    };
    (0..count_all.div_ceil(per_block))
        .into_par_iter()
        .try_for_each(block)?;
    // Before `set_len`: an interrupted product is never read.
    cancel.check()?;
    // SAFETY: the tiles cover every output position of every (sample, channel) plane, and the
    // planes tile the `total` elements (`check`).
    unsafe { out.set_len(total) };
    Ok(out)
}

/// The weight gradient (K, C, 3, 3) of the forward convolution laid out as `l` (`Weights::AsIs`)
/// for its input `x` and output gradient `g` (laid out as the output): dU[ξ] (K x C) = the sum
/// over tiles of dM[ξ] (K x tiles) · V[ξ]^T, dM = A g A^T of each 2x2 gradient tile, then
/// G^T dU G. Blocks are summed into one accumulator per group of consecutive blocks, the groups
/// then added in order, so the result does not depend on which thread ran what.
pub fn weight_grad3x3<T: WinogradFloat>(x: &[T], g: &[T], l: &Layout) -> Result<Vec<T>> {
    check(x.len(), 9 * l.nck[1] * l.nck[2], l)?;
    let [n, c, k] = l.nck;
    if g.len() < out_len(l) {
        return Err(RuntimeError::Value(
            "internal error: a Winograd weight gradient got an output gradient of the wrong size; please report this as a devarray bug".into(),
        ));
    }
    let tiles = Tiles::of(l);
    let count_all = n * tiles.per_sample;
    if count_all == 0 || c * k == 0 {
        return Ok(vec![T::ZERO; 9 * c * k]);
    }
    let threads = rayon::current_num_threads().max(1);
    let per_block = block_tiles(count_all, c.max(k), std::mem::size_of::<T>(), threads);
    let blocks = count_all.div_ceil(per_block);
    let groups = blocks.min(2 * threads);
    let cancel = Cancel::current();
    let [oh, ow] = l.out_hw;
    let group = |gi: usize| -> Result<Vec<T>> {
        let mut acc = vec![T::ZERO; 16 * k * c];
        let mut part = alloc::<T>(16 * k * c)?;
        for b in (gi * blocks / groups)..((gi + 1) * blocks / groups) {
            if cancel.requested() {
                break;
            }
            let first = b * per_block;
            let count = per_block.min(count_all - first);
            let v = transformed_inputs(x, l, first, count)?;
            // dM: (16, K, count).
            let mut dm = vec![T::ZERO; 16 * k * count];
            for ko in 0..k {
                for p in 0..count {
                    let (s, oy, ox) = tiles.at(first + p);
                    let base = s * l.out_strides[0] + ko * l.out_strides[1];
                    let at = |i: usize, j: usize| {
                        if oy + i < oh && ox + j < ow {
                            g[base + (oy + i) * ow + ox + j]
                        } else {
                            T::ZERO
                        }
                    };
                    let gy = [at(0, 0), at(0, 1), at(1, 0), at(1, 1)];
                    for (xi, val) in gradient_to_tile(&gy).into_iter().enumerate() {
                        dm[(xi * k + ko) * count + p] = val;
                    }
                }
            }
            let ps = &mut part.spare_capacity_mut()[..16 * k * c];
            for (xi, px) in ps.chunks_exact_mut(k * c).enumerate() {
                // dM[ξ] (K x count) times V[ξ] (C x count) read transposed.
                gemm_strided_serial(
                    [k, count, c],
                    &dm[xi * k * count..],
                    [count, 1],
                    &v[xi * c * count..],
                    [1, count],
                    px,
                    c,
                );
            }
            // SAFETY: the 16 products wrote all of `part`.
            unsafe { part.set_len(16 * k * c) };
            for (a, p) in acc.iter_mut().zip(&part) {
                *a = *a + *p;
            }
            // SAFETY: shrinking; the next block writes it all again.
            unsafe { part.set_len(0) };
        }
        Ok(acc)
    };
    let parts: Vec<Vec<T>> = (0..groups)
        .into_par_iter()
        .map(group)
        .collect::<Result<_>>()?;
    cancel.check()?;
    let mut du = vec![T::ZERO; 16 * k * c];
    for part in &parts {
        for (a, p) in du.iter_mut().zip(part) {
            *a = *a + *p;
        }
    }
    Ok(weights_from_transformed(&du, k, c))
}

/// A g A^T for a 2x2 gradient tile g (row-major), A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]: the
/// adjoint of `transform_output`.
#[inline(always)]
fn gradient_to_tile<T: WinogradFloat>(g: &[T; 4]) -> [T; 16] {
    let mut t = [T::ZERO; 8];
    for j in 0..2 {
        let (a, b) = (g[j], g[2 + j]);
        t[j] = a;
        t[2 + j] = a + b;
        t[4 + j] = a - b;
        t[6 + j] = T::ZERO - b;
    }
    let mut m = [T::ZERO; 16];
    for i in 0..4 {
        let (a, b) = (t[2 * i], t[2 * i + 1]);
        m[4 * i] = a;
        m[4 * i + 1] = a + b;
        m[4 * i + 2] = a - b;
        m[4 * i + 3] = T::ZERO - b;
    }
    m
}

/// G^T dU G for each (k, c) of dU (16, K, C): the 3x3 weight gradients as (K, C, 3, 3), the
/// adjoint of `transform_weights`.
fn weights_from_transformed<T: WinogradFloat>(du: &[T], k: usize, c: usize) -> Vec<T> {
    let mut dw = vec![T::ZERO; 9 * k * c];
    // G^T's rows applied to a 4-vector.
    let gt = |v: [T; 4]| {
        [
            v[0] + T::HALF * (v[1] + v[2]),
            T::HALF * (v[1] - v[2]),
            T::HALF * (v[1] + v[2]) + v[3],
        ]
    };
    for ko in 0..k {
        for ci in 0..c {
            let e = |xi: usize| du[(xi * k + ko) * c + ci];
            // Each row of dU times G (4 to 3), then each column: G^T dU G.
            let mut r = [[T::ZERO; 3]; 4];
            for (i, ri) in r.iter_mut().enumerate() {
                *ri = gt([e(4 * i), e(4 * i + 1), e(4 * i + 2), e(4 * i + 3)]);
            }
            for j in 0..3 {
                let col = gt([r[0][j], r[1][j], r[2][j], r[3][j]]);
                for (i, v) in col.into_iter().enumerate() {
                    dw[(ko * c + ci) * 9 + 3 * i + j] = v;
                }
            }
        }
    }
    dw
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct sum in f64, for (N, C, h, w) NCHW input and (K, C, 3, 3) weights.
    fn direct(x: &[f64], w: &[f64], [n, c, h, wd]: [usize; 4], k: usize, pad: usize) -> Vec<f64> {
        let (oh, ow) = (h + 2 * pad - 2, wd + 2 * pad - 2);
        let mut y = vec![0.0; n * k * oh * ow];
        for s in 0..n {
            for ko in 0..k {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let mut acc = 0.0;
                        for ci in 0..c {
                            for i in 0..3 {
                                for j in 0..3 {
                                    let (yy, xx) = (oy + i, ox + j);
                                    if yy < pad || xx < pad || yy - pad >= h || xx - pad >= wd {
                                        continue;
                                    }
                                    acc += w[((ko * c + ci) * 3 + i) * 3 + j]
                                        * x[((s * c + ci) * h + yy - pad) * wd + xx - pad];
                                }
                            }
                        }
                        y[((s * k + ko) * oh + oy) * ow + ox] = acc;
                    }
                }
            }
        }
        y
    }

    fn data(len: usize, seed: usize) -> Vec<f64> {
        (0..len)
            .map(|i| ((i * 37 + seed * 11) % 23) as f64 - 11.0)
            .collect()
    }

    /// Small integer data: every transform and sum is exact in f64, so Winograd must equal the
    /// direct sum exactly, for odd and even sizes, padding 0, 1 and 2, and a block of fewer
    /// tiles than the rest.
    #[test]
    fn forward_matches_the_direct_sum_exactly() {
        for ([n, c, h, w], k, pad) in [
            ([1, 1, 3, 3], 1, 1),
            ([2, 3, 5, 7], 4, 1),
            ([3, 5, 8, 6], 2, 0),
            ([1, 2, 4, 5], 3, 2),
            ([5, 17, 9, 11], 19, 1),
        ] {
            let x = data(n * c * h * w, 1);
            let wt = data(k * c * 9, 2);
            let (oh, ow) = (h + 2 * pad - 2, w + 2 * pad - 2);
            let l = Layout {
                nck: [n, c, k],
                in_hw: [h, w],
                in_strides: [c * h * w, h * w],
                out_hw: [oh, ow],
                out_strides: [k * oh * ow, oh * ow],
                pad: [pad, pad],
            };
            let got = conv3x3(&x, &wt, Weights::AsIs, &l).unwrap();
            assert_eq!(got, direct(&x, &wt, [n, c, h, w], k, pad), "{:?}", l);
        }
    }

    /// The input gradient: the batch-folded (K, N*L) output gradient read in place, the kernel
    /// flipped and transposed, against the direct adjoint sum.
    #[test]
    fn input_gradient_matches_the_adjoint_exactly() {
        for ([n, c, h, w], k, pad) in [([2, 3, 5, 7], 4, 1), ([3, 2, 6, 6], 5, 0)] {
            let (oh, ow) = (h + 2 * pad - 2, w + 2 * pad - 2);
            let wt = data(k * c * 9, 3);
            let g = data(k * n * oh * ow, 4);
            // dx[s][ci][y][x] = sum over ko, i, j of w[ko][ci][i][j] * g[ko][s][y + pad - i][x + pad - j].
            let mut want = vec![0.0; n * c * h * w];
            for s in 0..n {
                for ci in 0..c {
                    for y in 0..h {
                        for x in 0..w {
                            let mut acc = 0.0;
                            for ko in 0..k {
                                for i in 0..3 {
                                    for j in 0..3 {
                                        let (gy, gx) = (y + pad, x + pad);
                                        if gy < i || gx < j || gy - i >= oh || gx - j >= ow {
                                            continue;
                                        }
                                        acc += wt[((ko * c + ci) * 3 + i) * 3 + j]
                                            * g[ko * n * oh * ow
                                                + s * oh * ow
                                                + (gy - i) * ow
                                                + gx
                                                - j];
                                    }
                                }
                            }
                            want[((s * c + ci) * h + y) * w + x] = acc;
                        }
                    }
                }
            }
            let l = Layout {
                nck: [n, k, c],
                in_hw: [oh, ow],
                in_strides: [oh * ow, n * oh * ow],
                out_hw: [h, w],
                out_strides: [c * h * w, h * w],
                pad: [2 - pad, 2 - pad],
            };
            let got = conv3x3(&g, &wt, Weights::FlippedTransposed, &l).unwrap();
            assert_eq!(got, want);
        }
    }

    /// The weight gradient from the batch-folded (K, N*L) output gradient against the direct
    /// sum, exactly (small integers), with enough tiles for several blocks and groups.
    #[test]
    fn weight_gradient_matches_the_direct_sum_exactly() {
        for ([n, c, h, w], k, pad) in [
            ([2, 3, 5, 7], 4, 1),
            ([3, 2, 6, 6], 5, 0),
            ([9, 2, 16, 15], 3, 1),
        ] {
            let (oh, ow) = (h + 2 * pad - 2, w + 2 * pad - 2);
            let x = data(n * c * h * w, 5);
            let g = data(k * n * oh * ow, 6);
            let mut want = vec![0.0; k * c * 9];
            for ko in 0..k {
                for ci in 0..c {
                    for i in 0..3 {
                        for j in 0..3 {
                            let mut acc = 0.0;
                            for s in 0..n {
                                for oy in 0..oh {
                                    for ox in 0..ow {
                                        let (yy, xx) = (oy + i, ox + j);
                                        if yy < pad || xx < pad || yy - pad >= h || xx - pad >= w {
                                            continue;
                                        }
                                        acc += g[ko * n * oh * ow + s * oh * ow + oy * ow + ox]
                                            * x[((s * c + ci) * h + yy - pad) * w + xx - pad];
                                    }
                                }
                            }
                            want[(ko * c + ci) * 9 + 3 * i + j] = acc;
                        }
                    }
                }
            }
            let l = Layout {
                nck: [n, c, k],
                in_hw: [h, w],
                in_strides: [c * h * w, h * w],
                out_hw: [oh, ow],
                out_strides: [oh * ow, n * oh * ow],
                pad: [pad, pad],
            };
            assert_eq!(weight_grad3x3(&x, &g, &l).unwrap(), want, "{l:?}");
        }
    }

    #[test]
    fn blocks_are_cache_sized_and_shared_out() {
        // ResNet-18 at 96x96, batch 32: 64 channels on 24x24 maps, 512 on 3x3.
        assert_eq!(block_tiles(32 * 144, 64, 4, 2), 128);
        assert_eq!(block_tiles(32 * 4, 512, 4, 2), 16);
        assert_eq!(block_tiles(10, 4, 4, 2), 16);
    }

    #[test]
    fn operands_of_the_wrong_size_are_an_error() {
        let l = Layout {
            nck: [1, 1, 1],
            in_hw: [4, 4],
            in_strides: [16, 16],
            out_hw: [4, 4],
            out_strides: [16, 16],
            pad: [1, 1],
        };
        assert!(conv3x3(&[0.0f32; 15], &[0.0; 9], Weights::AsIs, &l).is_err());
        assert!(conv3x3(&[0.0f32; 16], &[0.0; 9], Weights::AsIs, &l).is_ok());
    }
}
