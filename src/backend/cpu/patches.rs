//! im2col and its adjoint for convolution and pooling (`Patches`): one pass over the input per
//! kernel tap, padding read as the fill value instead of being materialised, split across
//! rayon's threads. Two layouts: per plane (`patches`, (N, C, kh*kw, Ho, Wo), what pooling and
//! the CUDA path use) and batch-folded (`patches_cols`, (C*kh*kw, N*Ho*Wo)), which makes a
//! convolution one wide GEMM over the whole batch instead of one per sample: on ResNet's 3x3 and
//! 6x6 feature maps a per-sample product is 9 or 36 columns wide, mostly padding to the GEMM's
//! micro-kernel.
use super::element::{Element, Num};
use super::kernels::{alloc, PARALLEL_THRESHOLD};
use crate::vocab::error::Result;
use crate::vocab::Patches;
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::ops::AddAssign;

/// For each output position along one axis and one tap: the input index, or None in padding.
fn sources(p: &Patches, axis: usize, tap: usize, size: usize) -> Vec<Option<usize>> {
    (0..p.out[axis])
        .map(|o| p.source(axis, o, tap, size))
        .collect()
}

/// `dst = src` (equal lengths) for the short runs of im2col (a tap's row of a 10- or 28-wide
/// map): fixed-size moves, the last one ending at the end (overlapping writes of the same
/// values), where a `copy_from_slice` is a libc `memcpy` call per run that costs more than the
/// copy.
#[inline(always)]
fn copy_run<T: Copy>(dst: &mut [MaybeUninit<T>], src: &[T]) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    #[inline(always)]
    fn block<T: Copy, const B: usize>(dst: &mut [MaybeUninit<T>], src: &[T], at: usize) {
        for (d, v) in dst[at..at + B].iter_mut().zip(&src[at..at + B]) {
            d.write(*v);
        }
    }
    match n {
        0 => {}
        1 => {
            dst[0].write(src[0]);
        }
        2..=3 => {
            block::<T, 2>(dst, src, 0);
            block::<T, 2>(dst, src, n - 2);
        }
        4..=7 => {
            block::<T, 4>(dst, src, 0);
            block::<T, 4>(dst, src, n - 4);
        }
        _ => {
            let mut at = 0;
            while at + 8 < n {
                block::<T, 8>(dst, src, at);
                at += 8;
            }
            block::<T, 8>(dst, src, n - 8);
        }
    }
}

/// `dst += src` (equal lengths) for the short runs of im2col's adjoint: fixed-size blocks and
/// no libc call or loop set-up per run.
#[inline(always)]
fn add_run<T: Copy + AddAssign>(dst: &mut [T], src: &[T]) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    #[inline(always)]
    fn block<T: Copy + AddAssign, const B: usize>(dst: &mut [T], src: &[T], at: usize) {
        for (d, v) in dst[at..at + B].iter_mut().zip(&src[at..at + B]) {
            *d += *v;
        }
    }
    let mut at = 0;
    while at + 8 <= n {
        block::<T, 8>(dst, src, at);
        at += 8;
    }
    if at + 4 <= n {
        block::<T, 4>(dst, src, at);
        at += 4;
    }
    if at + 2 <= n {
        block::<T, 2>(dst, src, at);
        at += 2;
    }
    if at < n {
        dst[at] += src[at];
    }
}

/// Where each kernel tap reads: per tap row the source row of every output row, per tap column
/// the source column of every output column, and with stride 1 the one contiguous in-bounds run
/// of each tap column (first output column, length, first input column).
struct Taps {
    rows: Vec<Vec<Option<usize>>>,
    cols: Vec<Vec<Option<usize>>>,
    runs: Vec<Option<(usize, usize, usize)>>,
    w: usize,
    wo: usize,
}

impl Taps {
    fn new(p: &Patches, [h, w]: [usize; 2]) -> Taps {
        let rows: Vec<_> = (0..p.kernel[0]).map(|i| sources(p, 0, i, h)).collect();
        let cols: Vec<_> = (0..p.kernel[1]).map(|j| sources(p, 1, j, w)).collect();
        let runs = cols
            .iter()
            .map(|cj| {
                if p.stride[1] != 1 {
                    return None;
                }
                let first = cj.iter().position(Option::is_some)?;
                let len = cj[first..].iter().take_while(|c| c.is_some()).count();
                Some((first, len, cj[first]?))
            })
            .collect();
        Taps {
            rows,
            cols,
            runs,
            w,
            wo: p.out[1],
        }
    }

    /// Tap `t`'s windows of one input plane into `dst` (Ho*Wo), `fill` in the padding: every
    /// element is written, so `dst` may be uninitialised.
    #[inline]
    fn gather<T: Copy>(&self, t: usize, src: &[T], dst: &mut [MaybeUninit<T>], fill: T) {
        let kw = self.cols.len();
        let (i, j) = (t / kw, t % kw);
        let (w, wo, cj) = (self.w, self.wo, &self.cols[j]);
        for (oh, r) in self.rows[i].iter().enumerate() {
            let dst_row = &mut dst[oh * wo..][..wo];
            let Some(r) = *r else {
                dst_row.fill(MaybeUninit::new(fill));
                continue;
            };
            let row = &src[r * w..][..w];
            if let Some((first, len, c0)) = self.runs[j] {
                for d in &mut dst_row[..first] {
                    d.write(fill);
                }
                copy_run(&mut dst_row[first..first + len], &row[c0..c0 + len]);
                for d in &mut dst_row[first + len..] {
                    d.write(fill);
                }
            } else {
                for (d, c) in dst_row.iter_mut().zip(cj) {
                    d.write(c.map_or(fill, |c| row[c]));
                }
            }
        }
    }

    /// The adjoint of `gather`: tap `t`'s windows `g` (Ho*Wo) summed onto one plane.
    #[inline]
    fn scatter<T: Copy + AddAssign>(&self, t: usize, g: &[T], dst: &mut [T]) {
        let kw = self.cols.len();
        let (i, j) = (t / kw, t % kw);
        let (w, wo, cj) = (self.w, self.wo, &self.cols[j]);
        for (oh, r) in self.rows[i].iter().enumerate() {
            let Some(r) = *r else { continue };
            let row = &mut dst[r * w..][..w];
            let g_row = &g[oh * wo..][..wo];
            if let Some((first, len, c0)) = self.runs[j] {
                add_run(&mut row[c0..c0 + len], &g_row[first..first + len]);
            } else {
                for (v, c) in g_row.iter().zip(cj) {
                    if let Some(c) = *c {
                        row[c] += *v;
                    }
                }
            }
        }
    }
}

/// Runs `f` over matching chunks of `a` and `b`, on rayon's threads when `work` is large.
fn for_chunks<A: Sync, B: Send>(
    a: &[A],
    a_chunk: usize,
    b: &mut [B],
    b_chunk: usize,
    work: usize,
    f: impl Fn((&[A], &mut [B])) + Sync + Send,
) {
    if work >= PARALLEL_THRESHOLD {
        a.par_chunks(a_chunk)
            .zip(b.par_chunks_mut(b_chunk))
            .for_each(f);
    } else {
        a.chunks(a_chunk).zip(b.chunks_mut(b_chunk)).for_each(f);
    }
}

/// `x` (planes of h x w, row-major) laid out as planes of (kh*kw, Ho, Wo).
pub fn patches<T: Element>(x: &[T], hw: [usize; 2], p: &Patches, fill: T) -> Result<Vec<T>> {
    let plane_in = hw[0] * hw[1];
    let taps = p.kernel[0] * p.kernel[1];
    let l = p.out[0] * p.out[1];
    let planes = x.len().checked_div(plane_in).unwrap_or(0);
    let total = planes * taps * l;
    let mut out = alloc::<T>(total)?;
    if total > 0 {
        let tp = Taps::new(p, hw);
        let spare = &mut out.spare_capacity_mut()[..total];
        for_chunks(x, plane_in, spare, taps * l, total, |(src, dst)| {
            for (t, tap) in dst.chunks_mut(l).enumerate() {
                tp.gather(t, src, tap, fill);
            }
        });
    }
    // SAFETY: the planes tile the output exactly and `gather` writes every element of its tap.
    unsafe { out.set_len(total) };
    Ok(out)
}

/// The adjoint of `patches`: planes of (kh*kw, Ho, Wo) summed back onto planes of h x w.
pub fn patches_adjoint<T: Copy + Send + Sync + AddAssign>(
    g: &[T],
    hw: [usize; 2],
    p: &Patches,
    zero: T,
) -> Vec<T> {
    let plane_in = hw[0] * hw[1];
    let taps = p.kernel[0] * p.kernel[1];
    let l = p.out[0] * p.out[1];
    let planes = g.len().checked_div(taps * l).unwrap_or(0);
    let mut out = vec![zero; planes * plane_in];
    if plane_in == 0 || l == 0 || taps == 0 {
        return out;
    }
    let tp = Taps::new(p, hw);
    let work = g.len();
    for_chunks(g, taps * l, &mut out, plane_in, work, |(src, dst)| {
        for (t, tap) in src.chunks(l).enumerate() {
            tp.scatter(t, tap, dst);
        }
    });
    out
}

/// `x` (N, C, h, w) as the batch-folded patch matrix (C*kh*kw, N*Ho*Wo): row (c, tap), column
/// (n, oh, ow). Rows are filled in parallel, each from the N planes of its channel.
pub fn patches_cols<T: Element>(
    x: &[T],
    [n, c, h, w]: [usize; 4],
    p: &Patches,
    fill: T,
) -> Result<Vec<T>> {
    let taps = p.kernel[0] * p.kernel[1];
    let l = p.out[0] * p.out[1];
    let total = c * taps * n * l;
    let plane = h * w;
    let mut out = alloc::<T>(total)?;
    if total > 0 && x.len() >= n * c * plane {
        let tp = Taps::new(p, [h, w]);
        let row = |(r, dst): (usize, &mut [MaybeUninit<T>])| {
            let (ch, t) = (r / taps, r % taps);
            for (b, block) in dst.chunks_mut(l).enumerate() {
                tp.gather(t, &x[(b * c + ch) * plane..][..plane], block, fill);
            }
        };
        let spare = &mut out.spare_capacity_mut()[..total];
        if total >= PARALLEL_THRESHOLD {
            spare.par_chunks_mut(n * l).enumerate().for_each(row);
        } else {
            spare.chunks_mut(n * l).enumerate().for_each(row);
        }
    } else {
        out.resize(total, fill);
    }
    // SAFETY: the rows tile the output exactly, each of its n blocks is one tap's gather, which
    // writes every element (or the resize above filled it).
    unsafe { out.set_len(total) };
    Ok(out)
}

/// The adjoint of `patches_cols`: (C*kh*kw, N*Ho*Wo) summed back onto (N, C, h, w). Each
/// channel is one task that zeroes its N planes (in the task, not one serial fill before)
/// and reads its kh*kw rows of `g` front to back (sequential reads, where plane by plane would
/// jump between rows for every block), adding them onto its planes, which stay in cache; every
/// element still receives its taps in row-major kernel order.
pub fn patches_cols_adjoint<T: Element + AddAssign>(
    g: &[T],
    [n, c, h, w]: [usize; 4],
    p: &Patches,
    zero: T,
) -> Vec<T> {
    let taps = p.kernel[0] * p.kernel[1];
    let l = p.out[0] * p.out[1];
    let plane = h * w;
    let total = n * c * plane;
    if total == 0 || l == 0 || taps == 0 || g.len() < c * taps * n * l {
        return vec![zero; total];
    }
    let Ok(mut out) = alloc::<T>(total) else {
        return vec![zero; total];
    };
    let tp = Taps::new(p, [h, w]);
    let base = Planes(out.spare_capacity_mut().as_mut_ptr());
    let one = |ch: usize| {
        let base = &base;
        let plane_at = |b: usize| {
            // SAFETY: plane (b, ch) lies inside `out`'s capacity (b < n, ch < c) and only
            // this channel's task touches it; `out` outlives the tasks.
            unsafe { std::slice::from_raw_parts_mut(base.0.add((b * c + ch) * plane), plane) }
        };
        for b in 0..n {
            plane_at(b).fill(MaybeUninit::new(zero));
        }
        for t in 0..taps {
            let row = &g[(ch * taps + t) * n * l..][..n * l];
            for (b, block) in row.chunks_exact(l).enumerate() {
                let dst = plane_at(b);
                // SAFETY: the loop above initialised every element of this plane.
                let dst = unsafe { &mut *(dst as *mut [MaybeUninit<T>] as *mut [T]) };
                tp.scatter(t, block, dst);
            }
        }
    };
    if g.len() >= PARALLEL_THRESHOLD && c > 1 {
        (0..c).into_par_iter().for_each(one);
    } else {
        (0..c).for_each(one);
    }
    // SAFETY: the channels' planes tile the output and each task zeroed all of its planes.
    unsafe { out.set_len(total) };
    out
}

/// The output planes of `patches_cols_adjoint`, shared by its channel tasks, which write
/// disjoint planes.
struct Planes<T>(*mut T);
// SAFETY: each task writes only its own channel's planes (see `patches_cols_adjoint`).
unsafe impl<T: Send> Sync for Planes<T> {}

/// A batch-folded convolution's product `y` (O, N*L) laid out as (N, O, L), plus `bias[o]` on
/// channel o when given, then ReLU when `relu` (`x > 0 ? x : 0`, the one-op kernel's rule): the
/// move, the bias and the activation in one pass over the output.
pub fn cols_to_batch<T: Num>(
    y: &[T],
    [o, n, l]: [usize; 3],
    bias: Option<&[T]>,
    relu: bool,
) -> Result<Vec<T>> {
    let total = o * n * l;
    let mut out = alloc::<T>(total)?;
    if total > 0 && y.len() >= total && bias.is_none_or(|b| b.len() >= o) {
        let one = |(i, dst): (usize, &mut [MaybeUninit<T>])| {
            let (b, ch) = (i / o, i % o);
            let src = &y[(ch * n + b) * l..][..l];
            let act = |v: T| {
                if !relu || v > T::zero() {
                    v
                } else {
                    T::zero()
                }
            };
            match bias {
                Some(bias) => {
                    for (d, v) in dst.iter_mut().zip(src) {
                        d.write(act(v.add(bias[ch])));
                    }
                }
                None => {
                    for (d, v) in dst.iter_mut().zip(src) {
                        d.write(act(*v));
                    }
                }
            }
        };
        let spare = &mut out.spare_capacity_mut()[..total];
        if total >= PARALLEL_THRESHOLD {
            spare.par_chunks_mut(l).enumerate().for_each(one);
        } else {
            spare.chunks_mut(l).enumerate().for_each(one);
        }
    } else {
        out.resize(total, T::default());
    }
    // SAFETY: the (n, o) blocks of l tile the output and each is written whole (or the resize
    // above filled it).
    unsafe { out.set_len(total) };
    Ok(out)
}

/// The way back of `cols_to_batch`: a gradient `g` (N, O, L) laid out as (O, N*L), each value
/// multiplied by 1 or 0 as `mask` (the ReLU's output, (N, O, L)) is above zero when given —
/// what the one-op ReLU's backward computes (`g * (x > 0)`), fused with the move.
pub fn batch_to_cols<T: Num>(g: &[T], [o, n, l]: [usize; 3], mask: Option<&[T]>) -> Result<Vec<T>> {
    let total = o * n * l;
    let mut out = alloc::<T>(total)?;
    if total > 0 && g.len() >= total && mask.is_none_or(|m| m.len() >= total) {
        // Output row block i is channel ch's gradient for sample b: source block (b, ch).
        let one = |(i, dst): (usize, &mut [MaybeUninit<T>])| {
            let (ch, b) = (i / n, i % n);
            let at = (b * o + ch) * l;
            let src = &g[at..][..l];
            match mask {
                Some(m) => {
                    for ((d, v), m) in dst.iter_mut().zip(src).zip(&m[at..at + l]) {
                        let keep = if *m > T::zero() { T::one() } else { T::zero() };
                        d.write(v.mul(keep));
                    }
                }
                None => {
                    for (d, v) in dst.iter_mut().zip(src) {
                        d.write(*v);
                    }
                }
            }
        };
        let spare = &mut out.spare_capacity_mut()[..total];
        if total >= PARALLEL_THRESHOLD {
            spare.par_chunks_mut(l).enumerate().for_each(one);
        } else {
            spare.chunks_mut(l).enumerate().for_each(one);
        }
    } else {
        out.resize(total, T::default());
    }
    // SAFETY: as in `cols_to_batch`, the (o, n) blocks of l tile the output.
    unsafe { out.set_len(total) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(k: usize, s: usize, pad: usize, out: usize) -> Patches {
        Patches {
            kernel: [k, k],
            stride: [s, s],
            dilation: [1, 1],
            pad: [pad, pad],
            out: [out, out],
            fill: 0.0,
        }
    }

    #[test]
    fn batch_folded_patches_are_the_per_plane_ones_rearranged() {
        // (N, C, kh*kw, L) -> (C, kh*kw, N, L), with stride 1 and 2, and the adjoints agree.
        let (n, c, h, w) = (3, 2, 7, 7);
        let x: Vec<f64> = (0..n * c * h * w).map(|i| (i % 13) as f64 - 6.0).collect();
        for p in [window(3, 1, 1, 7), window(3, 2, 1, 4), window(1, 2, 0, 4)] {
            let taps = p.kernel[0] * p.kernel[1];
            let l = p.out[0] * p.out[1];
            let planes = patches(&x, [h, w], &p, 0.0).unwrap();
            let cols = patches_cols(&x, [n, c, h, w], &p, 0.0).unwrap();
            for (b, ch, t, j) in (0..n * c * taps * l)
                .map(|i| (i / (c * taps * l), i / (taps * l) % c, i / l % taps, i % l))
            {
                assert_eq!(
                    planes[((b * c + ch) * taps + t) * l + j],
                    cols[((ch * taps + t) * n + b) * l + j]
                );
            }
            let back_planes = patches_adjoint(&planes, [h, w], &p, 0.0);
            let back_cols = patches_cols_adjoint(&cols, [n, c, h, w], &p, 0.0);
            assert_eq!(back_planes, back_cols);
        }
    }
}
