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

/// Where each kernel tap reads: per tap row the source row of every output row, and per tap
/// column the one contiguous run of output columns whose source is inside the plane (first
/// output column, length, first input column; the source then advances by the stride).
pub(super) struct Taps {
    rows: Vec<Vec<Option<usize>>>,
    runs: Vec<(usize, usize, usize)>,
    /// The source row of output row 0 for each tap row, as a signed offset (with `rows`).
    row0: Vec<isize>,
    stride: usize,
    /// Stride 1 on both axes and as many output columns as input columns (a "same" 3x3
    /// convolution): output row r of a tap is input row r + `row0` shifted by a fixed column
    /// offset, so a tap's block is one contiguous copy of the plane, with the columns that fall
    /// in the padding fixed afterwards.
    shifted: bool,
    w: usize,
    wo: usize,
}

impl Taps {
    pub(super) fn new(p: &Patches, [h, w]: [usize; 2]) -> Taps {
        let rows: Vec<_> = (0..p.kernel[0]).map(|i| sources(p, 0, i, h)).collect();
        let runs = (0..p.kernel[1])
            .map(|j| {
                // The sources of one tap column rise with the output column, so the ones inside
                // the plane are one run.
                let cj = sources(p, 1, j, w);
                let Some(first) = cj.iter().position(Option::is_some) else {
                    return (0, 0, 0);
                };
                let len = cj[first..].iter().take_while(|c| c.is_some()).count();
                (first, len, cj[first].unwrap_or(0))
            })
            .collect();
        let row0 = (0..p.kernel[0])
            .map(|i| (i * p.dilation[0]) as isize - p.pad[0] as isize)
            .collect();
        Taps {
            rows,
            runs,
            row0,
            stride: p.stride[1],
            shifted: p.stride == [1, 1] && p.out[1] == w,
            w,
            wo: p.out[1],
        }
    }

    /// Tap `t`'s windows of one input plane into `dst` (Ho*Wo), `fill` in the padding: every
    /// element is written, so `dst` may be uninitialised.
    #[inline]
    fn gather<T: Copy>(&self, t: usize, src: &[T], dst: &mut [MaybeUninit<T>], fill: T) {
        let kw = self.runs.len();
        let (i, j) = (t / kw, t % kw);
        let (w, wo) = (self.w, self.wo);
        let (first, len, c0) = self.runs[j];
        if self.shifted {
            return self.gather_shifted(i, (first, len, c0), src, dst, fill);
        }
        for (oh, r) in self.rows[i].iter().enumerate() {
            let dst_row = &mut dst[oh * wo..][..wo];
            let Some(r) = *r else {
                dst_row.fill(MaybeUninit::new(fill));
                continue;
            };
            let row = &src[r * w..][..w];
            for d in &mut dst_row[..first] {
                d.write(fill);
            }
            if self.stride == 1 {
                copy_run(&mut dst_row[first..first + len], &row[c0..c0 + len]);
            } else {
                let taken = row[c0..].iter().step_by(self.stride);
                for (d, v) in dst_row[first..first + len].iter_mut().zip(taken) {
                    d.write(*v);
                }
            }
            for d in &mut dst_row[first + len..] {
                d.write(fill);
            }
        }
    }

    /// `gather` for a `shifted` window: the rows whose source is inside the plane as one copy,
    /// then `fill` in the rows and columns outside.
    #[inline]
    fn gather_shifted<T: Copy>(
        &self,
        i: usize,
        (first, len, c0): (usize, usize, usize),
        src: &[T],
        dst: &mut [MaybeUninit<T>],
        fill: T,
    ) {
        let w = self.w;
        let rows = &self.rows[i];
        let lo = rows.iter().position(Option::is_some).unwrap_or(rows.len());
        let hi = lo + rows[lo..].iter().take_while(|r| r.is_some()).count();
        if lo == hi {
            dst.fill(MaybeUninit::new(fill));
            return;
        }
        // Output element e (in rows lo..hi) reads input element e + off.
        let off = self.row0[i] * w as isize + c0 as isize - first as isize;
        let from = ((lo * w) as isize).max(-off) as usize;
        let to = ((hi * w) as isize)
            .min(src.len() as isize - off)
            .max(from as isize) as usize;
        let s0 = (from as isize + off) as usize;
        copy_long(&mut dst[from..to], &src[s0..s0 + (to - from)]);
        for d in &mut dst[..lo * w] {
            d.write(fill);
        }
        for d in &mut dst[hi * w..] {
            d.write(fill);
        }
        if len < w {
            for row in dst[lo * w..hi * w].chunks_exact_mut(w) {
                for d in &mut row[..first] {
                    d.write(fill);
                }
                for d in &mut row[first + len..] {
                    d.write(fill);
                }
            }
        }
    }

    /// The adjoint of `gather`: tap `t`'s windows `g` (Ho*Wo) summed onto one plane.
    #[inline]
    pub(super) fn scatter<T: Copy + AddAssign>(&self, t: usize, g: &[T], dst: &mut [T]) {
        let kw = self.runs.len();
        let (i, j) = (t / kw, t % kw);
        let (w, wo) = (self.w, self.wo);
        let (first, len, c0) = self.runs[j];
        for (oh, r) in self.rows[i].iter().enumerate() {
            let Some(r) = *r else { continue };
            let row = &mut dst[r * w..][..w];
            let g_row = &g[oh * wo..][..wo];
            if self.stride == 1 {
                add_run(&mut row[c0..c0 + len], &g_row[first..first + len]);
            } else {
                let taken = row[c0..].iter_mut().step_by(self.stride);
                for (d, v) in taken.zip(&g_row[first..first + len]) {
                    *d += *v;
                }
            }
        }
    }
}

/// `dst = src` (equal lengths) for a long run: one `memcpy`.
#[inline]
fn copy_long<T: Copy>(dst: &mut [MaybeUninit<T>], src: &[T]) {
    let n = dst.len().min(src.len());
    // SAFETY: both ranges hold n elements of T (MaybeUninit<T> has T's layout) and a shared
    // and a mutable borrow cannot overlap.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst.as_mut_ptr().cast::<T>(), n) };
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

    /// im2col element by element, from `Patches::source`: (N, C, kh*kw, Ho, Wo).
    fn reference(x: &[f64], [n, c, h, w]: [usize; 4], p: &Patches, fill: f64) -> Vec<f64> {
        let (taps, [ho, wo]) = (p.kernel[0] * p.kernel[1], p.out);
        let mut out = Vec::with_capacity(n * c * taps * ho * wo);
        for plane in x.chunks(h * w).take(n * c) {
            for t in 0..taps {
                let (i, j) = (t / p.kernel[1], t % p.kernel[1]);
                for oh in 0..ho {
                    for ow in 0..wo {
                        let v = match (p.source(0, oh, i, h), p.source(1, ow, j, w)) {
                            (Some(r), Some(q)) => plane[r * w + q],
                            _ => fill,
                        };
                        out.push(v);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn patches_match_a_window_by_window_reference() {
        // Every fast form of a tap's gather: whole-plane shifted copies (stride 1, as many
        // output columns as input columns), runs (stride 1), strided runs (stride 2 and 3),
        // dilation, taps wholly in the padding, and 1-wide planes; the adjoint against the
        // transposed reference (sums of small integers are exact in any order).
        let mut tried = 0;
        for (h, w) in [(7usize, 7usize), (5, 9), (1, 1), (2, 3), (6, 1)] {
            for k in [1, 3, 5] {
                for s in [1, 2, 3] {
                    for pad in [0, 1, 2, 4] {
                        for d in [1, 2] {
                            let ext = d * (k - 1) + 1;
                            let (Some(sh), Some(sw)) = (
                                (h + 2 * pad).checked_sub(ext),
                                (w + 2 * pad).checked_sub(ext),
                            ) else {
                                continue;
                            };
                            let mut p = window(k, s, pad, 0);
                            p.dilation = [d, d];
                            p.out = [sh / s + 1, sw / s + 1];
                            let (n, c) = (2, 3);
                            let x: Vec<f64> =
                                (0..n * c * h * w).map(|i| (i % 17) as f64 - 8.0).collect();
                            let want = reference(&x, [n, c, h, w], &p, -100.0);
                            let got = patches(&x, [h, w], &p, -100.0).unwrap();
                            assert_eq!(got, want, "{h}x{w} k{k} s{s} p{pad} d{d}");
                            let g: Vec<f64> =
                                (0..want.len()).map(|i| (i % 5) as f64 - 2.0).collect();
                            let mut back = vec![0.0; n * c * h * w];
                            let mask = reference(
                                &(0..n * c * h * w).map(|i| i as f64).collect::<Vec<_>>(),
                                [n, c, h, w],
                                &p,
                                -1.0,
                            );
                            for (src, v) in mask.iter().zip(&g) {
                                if *src >= 0.0 {
                                    back[*src as usize] += v;
                                }
                            }
                            assert_eq!(
                                patches_adjoint(&g, [h, w], &p, 0.0),
                                back,
                                "adjoint {h}x{w} k{k} s{s} p{pad} d{d}"
                            );
                            tried += 1;
                        }
                    }
                }
            }
        }
        assert!(tried > 100);
    }
}
