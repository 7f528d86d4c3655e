//! Max and average pooling read straight from the input (`Array::pool`), without laying the
//! windows out first (im2col, `patches.rs`), and their gradients. Planes (one sample's channel)
//! run on rayon's threads. The sums are taken in the order the im2col path takes them (taps in
//! row-major kernel order), so both give the same bits.
use super::element::Float;
use super::kernels::{alloc, PARALLEL_THRESHOLD};
use crate::vocab::error::Result;
use crate::vocab::{Patches, PoolKind};
use rayon::prelude::*;

/// Per tap, the input index each output position reads along one axis (None in padding).
struct Taps {
    rows: Vec<Vec<Option<usize>>>,
    cols: Vec<Vec<Option<usize>>>,
}

impl Taps {
    fn new(p: &Patches, [h, w]: [usize; 2]) -> Taps {
        let along = |axis: usize, k: usize, size: usize| -> Vec<Vec<Option<usize>>> {
            (0..k)
                .map(|t| {
                    (0..p.out[axis])
                        .map(|o| p.source(axis, o, t, size))
                        .collect()
                })
                .collect()
        };
        Taps {
            rows: along(0, p.kernel[0], h),
            cols: along(1, p.kernel[1], w),
        }
    }
}

/// Is `v` (a later tap) strictly better than `best`? NaN wins, the first NaN stays (the im2col
/// path's argmax rule).
/// Written without short-circuits, so the compiler can select instead of branch: on
/// activations, which tap wins is a coin toss a branch predictor loses half the time.
#[inline(always)]
fn better<T: Float>(v: T, best: T) -> bool {
    !best.is_nan() & (v.is_nan() | (v > best))
}

/// No maximum: a window wholly in the padding.
const NONE: usize = usize::MAX;

/// For each output position of one plane, the input index of its first maximum (`NONE` for a
/// window wholly in the padding), written into `arg` (Ho*Wo). Taps in row-major kernel order,
/// so the first maximum is the one a tap-by-tap sweep finds. The windows of an output row that
/// lie wholly inside the plane read their taps at fixed offsets from corners `sw` apart: there
/// the sweep goes tap by tap over the whole row run, keeping each output's running best, so the
/// outputs are independent chains the processor overlaps (output by output, each window's taps
/// were one chain of dependent compares: 5% of a ResNet-18 step). A window that touches the
/// padding looks each tap up.
fn argmax_plane<T: Float>(
    src: &[T],
    w: usize,
    t: &Taps,
    [out, stride]: [[usize; 2]; 2],
    offsets: &[usize],
    arg: &mut [usize],
) {
    let [ho, wo] = out;
    let sw = stride[1];
    let (Some(first_rows), Some(last_rows)) = (t.rows.first(), t.rows.last()) else {
        return;
    };
    let (Some(first_cols), Some(last_cols)) = (t.cols.first(), t.cols.last()) else {
        return;
    };
    if offsets.is_empty() {
        return;
    }
    // The run of output columns whose windows lie inside the plane's columns, and the input
    // column of the first one's corner.
    let inside_col = |ow: usize| first_cols[ow].is_some() && last_cols[ow].is_some();
    let lo = (0..wo).position(inside_col).unwrap_or(wo);
    let hi = lo + (lo..wo).take_while(|&ow| inside_col(ow)).count();
    let c_lo = first_cols.get(lo).copied().flatten().unwrap_or(0);
    let mut best = vec![T::zero(); hi - lo];
    let mut tap = vec![0u32; hi - lo];
    // Without a NaN in the plane "better" is a plain comparison. A fold, not `any`: one pass
    // that vectorises.
    let has_nan = src.iter().fold(false, |seen, v| seen | v.is_nan());
    for oh in 0..ho {
        let inside_rows = last_rows[oh].and(first_rows[oh]);
        let arg_row = &mut arg[oh * wo..][..wo];
        let run = match inside_rows {
            Some(r) if hi > lo => {
                let base = r * w + c_lo;
                if has_nan {
                    sweep_nan(src, [base, sw], offsets, &mut best, &mut tap);
                } else {
                    sweep_ordered(src, base, sw, offsets, &mut best, &mut tap);
                }
                for (i, (a, &t)) in arg_row[lo..hi].iter_mut().zip(&tap).enumerate() {
                    *a = base + i * sw + offsets[t as usize];
                }
                lo..hi
            }
            _ => 0..0,
        };
        for (ow, slot) in arg_row.iter_mut().enumerate() {
            if run.contains(&ow) {
                continue;
            }
            let mut best_at = NONE;
            let mut best = T::zero();
            for rows in &t.rows {
                let Some(r) = rows[oh] else { continue };
                let row = &src[r * w..][..w];
                for cols in &t.cols {
                    let Some(c) = cols[ow] else { continue };
                    let v = row[c];
                    if best_at == NONE || better(v, best) {
                        best_at = r * w + c;
                        best = v;
                    }
                }
            }
            *slot = best_at;
        }
    }
}

/// A run of inside windows (corners `base + i * sw`) swept tap by tap: per window the running
/// best value and its tap's number (into `offsets`), taking a later tap where `better(tap,
/// best)`. Tap numbers are u32 like the f32 values, so a compare's mask selects both in one
/// vector; the windows are independent chains, so nothing waits on a compare.
#[inline(always)]
fn sweep_with<T: Float, const S: usize>(
    src: &[T],
    [base, sw]: [usize; 2],
    offsets: &[usize],
    best: &mut [T],
    tap: &mut [u32],
    better: impl Fn(T, T) -> bool + Copy,
) {
    // A stride known here (1 and 2 are what networks use) makes the loads a fixed pattern:
    // the compiler then loads whole vectors (and deinterleaves them for stride 2).
    let sw = if S > 0 { S } else { sw };
    let n = best.len().min(tap.len());
    let Some(span) = n.checked_sub(1).map(|last| last * sw + 1) else {
        return;
    };
    for (t, &o) in offsets.iter().enumerate() {
        let row = &src[base + o..][..span];
        let (first, t) = (t == 0, t as u32);
        match S {
            1 => take_better(best, tap, row.iter().copied(), first, t, better),
            2 => {
                // Every window's tap but the last window's (the last element) as the first
                // of a pair.
                let pairs = row.chunks_exact(2).map(|p| p[0]);
                let (head, last) = best.split_at_mut(n - 1);
                let (head_tap, last_tap) = tap.split_at_mut(n - 1);
                take_better(head, head_tap, pairs, first, t, better);
                take_better(
                    last,
                    last_tap,
                    row[span - 1..].iter().copied(),
                    first,
                    t,
                    better,
                );
            }
            _ => take_better(best, tap, row.iter().step_by(sw).copied(), first, t, better),
        }
    }
}

/// One tap of a sweep: each window's value `vals` taken where `better` than its running best
/// (or always, for the `first` tap). A loop over slices with selects, which the compiler turns
/// into vector compares and blends (a loop over fixed-size blocks it left scalar, branching).
#[inline(always)]
fn take_better<T: Float>(
    best: &mut [T],
    tap: &mut [u32],
    vals: impl Iterator<Item = T>,
    first: bool,
    t: u32,
    better: impl Fn(T, T) -> bool,
) {
    for ((b, a), v) in best.iter_mut().zip(tap.iter_mut()).zip(vals) {
        let take = first | better(v, *b);
        *a = if take { t } else { *a };
        *b = if take { v } else { *b };
    }
}

multiversion! {
    /// `sweep_with` on a plane without NaN: a plain comparison, in the widest vectors the CPU
    /// has.
    fn sweep_ordered<T: Float>(
        src: &[T],
        base: usize,
        sw: usize,
        offsets: &[usize],
        best: &mut [T],
        tap: &mut [u32],
    ) -> () {
        let better = |v: T, b: T| v > b;
        match sw {
            1 => sweep_with::<T, 1>(src, [base, sw], offsets, best, tap, better),
            2 => sweep_with::<T, 2>(src, [base, sw], offsets, best, tap, better),
            _ => sweep_with::<T, 0>(src, [base, sw], offsets, best, tap, better),
        }
    }
}

/// `sweep_with` on a plane holding a NaN (which wins; the first stays).
fn sweep_nan<T: Float>(
    src: &[T],
    at: [usize; 2],
    offsets: &[usize],
    best: &mut [T],
    tap: &mut [u32],
) {
    sweep_with::<T, 0>(src, at, offsets, best, tap, better);
}

/// Each tap's offset from its window's top-left input element, row-major kernel order.
fn tap_offsets(p: &Patches, w: usize) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(p.kernel[0] * p.kernel[1]);
    for i in 0..p.kernel[0] {
        for j in 0..p.kernel[1] {
            offsets.push(i * p.dilation[0] * w + j * p.dilation[1]);
        }
    }
    offsets
}

/// Where an output's window lies: wholly inside the plane (its top-left input element, the
/// taps at `tap_offsets` from it), or touching the padding (its output row and column).
#[derive(Clone, Copy)]
enum Window {
    Inside(usize),
    Edge(usize, usize),
}

/// Calls `f(output index, window)` for every output of one plane, row-major.
#[inline(always)]
fn each_window(
    w: usize,
    t: &Taps,
    [ho, wo]: [usize; 2],
    offsets: &[usize],
    mut f: impl FnMut(usize, Window),
) {
    let (Some(first_rows), Some(last_rows)) = (t.rows.first(), t.rows.last()) else {
        return;
    };
    let (Some(first_cols), Some(last_cols)) = (t.cols.first(), t.cols.last()) else {
        return;
    };
    if offsets.is_empty() {
        return;
    }
    for oh in 0..ho {
        let inside_rows = last_rows[oh].and(first_rows[oh]);
        for ow in 0..wo {
            let at = match (inside_rows, first_cols[ow], last_cols[ow]) {
                (Some(r), Some(c), Some(_)) => Window::Inside(r * w + c),
                _ => Window::Edge(oh, ow),
            };
            f(oh * wo + ow, at);
        }
    }
}

/// Whether every tap of every window falls inside the plane (no padding read).
fn all_inside(t: &Taps) -> bool {
    t.rows
        .iter()
        .chain(&t.cols)
        .all(|v| v.iter().all(Option::is_some))
}

/// Calls `f(input index)` for the taps of output (oh, ow) that fall inside the plane, in
/// row-major kernel order.
#[inline(always)]
fn for_taps(t: &Taps, w: usize, oh: usize, ow: usize, mut f: impl FnMut(usize)) {
    for rows in &t.rows {
        let Some(r) = rows[oh] else { continue };
        for cols in &t.cols {
            if let Some(c) = cols[ow] {
                f(r * w + c);
            }
        }
    }
}

/// The divisors of average pooling over one plane, row-major (Ho, Wo).
fn divisors(p: &Patches, [h, w]: [usize; 2], count_include_pad: bool) -> Vec<f64> {
    let mut div = Vec::with_capacity(p.out[0] * p.out[1]);
    for oh in 0..p.out[0] {
        for ow in 0..p.out[1] {
            let a = p.avg_count(0, oh, h, count_include_pad);
            let b = p.avg_count(1, ow, w, count_include_pad);
            div.push((a * b) as f64);
        }
    }
    div
}

/// Runs `one(input plane, output plane)` over matching planes, in parallel when large.
fn planes<A: Sync, B: Send>(
    input: &[A],
    plane_in: usize,
    out: &mut [B],
    plane_out: usize,
    one: impl Fn(&[A], &mut [B]) + Sync + Send,
) {
    if plane_in == 0 || plane_out == 0 {
        return;
    }
    if input.len().max(out.len()) >= PARALLEL_THRESHOLD {
        input
            .par_chunks(plane_in)
            .zip(out.par_chunks_mut(plane_out))
            .for_each(|(a, b)| one(a, b));
    } else {
        for (a, b) in input.chunks(plane_in).zip(out.chunks_mut(plane_out)) {
            one(a, b);
        }
    }
}

/// Pooling of planes of `hw` by the window `p` into planes of `p.out`.
pub fn pool<T: Float>(x: &[T], hw: [usize; 2], p: &Patches, kind: PoolKind) -> Result<Vec<T>> {
    let [h, w] = hw;
    let [ho, wo] = p.out;
    let n_planes = x.len().checked_div(h * w).unwrap_or(0);
    let mut out = alloc::<T>(n_planes * ho * wo)?;
    out.resize(n_planes * ho * wo, T::zero());
    let taps = Taps::new(p, hw);
    let offsets = tap_offsets(p, w);
    match kind {
        PoolKind::Max => {
            let lowest = T::from_f64(p.fill);
            planes(x, h * w, &mut out, ho * wo, |src, dst| {
                let mut arg = vec![NONE; ho * wo];
                argmax_plane(src, w, &taps, [p.out, p.stride], &offsets, &mut arg);
                for (d, &at) in dst.iter_mut().zip(&arg) {
                    *d = if at == NONE { lowest } else { src[at] };
                }
            });
        }
        PoolKind::Avg { count_include_pad } => {
            let div: Vec<T> = divisors(p, hw, count_include_pad)
                .into_iter()
                .map(T::from_f64)
                .collect();
            let inside = all_inside(&taps);
            let [sh, sw] = p.stride;
            planes(x, h * w, &mut out, ho * wo, |src, dst| {
                if inside {
                    // No window touches the padding: fixed offsets from each corner.
                    for oh in 0..ho {
                        let row = &src[oh * sh * w..];
                        let dst_row = &mut dst[oh * wo..][..wo];
                        let div_row = &div[oh * wo..][..wo];
                        if let [a, b, c, d] = offsets[..] {
                            for (ow, (out, k)) in dst_row.iter_mut().zip(div_row).enumerate() {
                                let at = ow * sw;
                                let acc = T::zero().add(row[at + a]).add(row[at + b]);
                                *out = acc.add(row[at + c]).add(row[at + d]).div(*k);
                            }
                        } else {
                            for (ow, (out, k)) in dst_row.iter_mut().zip(div_row).enumerate() {
                                let at = ow * sw;
                                let mut acc = T::zero();
                                for &off in &offsets {
                                    acc = acc.add(row[at + off]);
                                }
                                *out = acc.div(*k);
                            }
                        }
                    }
                    return;
                }
                each_window(w, &taps, p.out, &offsets, |o, at| {
                    // Taps in row-major kernel order from zero: the im2col path's sum.
                    let mut acc = T::zero();
                    match at {
                        Window::Inside(corner) => {
                            for &off in &offsets {
                                acc = acc.add(src[corner + off]);
                            }
                        }
                        Window::Edge(oh, ow) => {
                            for_taps(&taps, w, oh, ow, |i| acc = acc.add(src[i]));
                        }
                    }
                    dst[o] = acc.div(div[o]);
                });
            });
        }
    }
    Ok(out)
}

/// The gradient of `pool` with respect to its input `x`, from the output gradient `g`.
pub fn pool_grad<T: Float>(
    x: &[T],
    g: &[T],
    hw: [usize; 2],
    p: &Patches,
    kind: PoolKind,
) -> Result<Vec<T>> {
    let [h, w] = hw;
    let [ho, wo] = p.out;
    let mut dx = alloc::<T>(x.len())?;
    dx.resize(x.len(), T::zero());
    let taps = Taps::new(p, hw);
    let offsets = tap_offsets(p, w);
    let div: Vec<T> = match kind {
        PoolKind::Avg { count_include_pad } => divisors(p, hw, count_include_pad)
            .into_iter()
            .map(T::from_f64)
            .collect(),
        PoolKind::Max => Vec::new(),
    };
    let inside = all_inside(&taps);
    // Windows that share no input element (a stride at least the window's extent).
    let disjoint = (0..2).all(|a| p.stride[a] > p.dilation[a] * (p.kernel[a] - 1));
    // Each plane of dx with its plane of x and of g.
    let plane_in = h * w;
    let plane_out = ho * wo;
    if plane_in == 0 || plane_out == 0 {
        return Ok(dx);
    }
    let one = |((src, gs), dst): ((&[T], &[T]), &mut [T])| {
        if kind == PoolKind::Max {
            let mut arg = vec![NONE; plane_out];
            argmax_plane(src, w, &taps, [p.out, p.stride], &offsets, &mut arg);
            // Outputs last to first: the windows that share an input element then add their
            // gradients to it in row-major tap order (a later window reads it at an earlier
            // tap), the im2col path's order, so both give the same bits.
            for (&at, &gv) in arg.iter().zip(gs).rev() {
                if at != NONE {
                    let d = &mut dst[at];
                    *d = d.add(gv);
                }
            }
            return;
        }
        // Average: each output's share, g / count, divided once.
        let share: Vec<T> = gs.iter().zip(&div).map(|(g, k)| g.div(*k)).collect();
        if disjoint && inside {
            // Every window inside the plane, none sharing an input: plain stores (of the
            // share added to zero, as the general sum gives).
            for oh in 0..ho {
                let row = &mut dst[oh * p.stride[0] * w..];
                let share_row = &share[oh * wo..][..wo];
                for (ow, &v) in share_row.iter().enumerate() {
                    let at = ow * p.stride[1];
                    let v = T::zero().add(v);
                    for &off in &offsets {
                        row[at + off] = v;
                    }
                }
            }
            return;
        }
        if disjoint {
            // No input element is in two windows: one sum (onto zero) each, in any order.
            each_window(w, &taps, p.out, &offsets, |o, at| match at {
                Window::Inside(corner) => {
                    for &off in &offsets {
                        dst[corner + off] = T::zero().add(share[o]);
                    }
                }
                Window::Edge(oh, ow) => {
                    for_taps(&taps, w, oh, ow, |i| dst[i] = dst[i].add(share[o]));
                }
            });
            return;
        }
        // Overlapping windows: taps in row-major kernel order, as the im2col path's adjoint
        // adds them.
        for rows in &taps.rows {
            for cols in &taps.cols {
                for (oh, r) in rows.iter().enumerate() {
                    let Some(r) = *r else { continue };
                    for (ow, c) in cols.iter().enumerate() {
                        let Some(c) = *c else { continue };
                        let at = r * w + c;
                        dst[at] = dst[at].add(share[oh * wo + ow]);
                    }
                }
            }
        }
    };
    let parallel = x.len() >= PARALLEL_THRESHOLD;
    if parallel {
        x.par_chunks(plane_in)
            .zip(g.par_chunks(plane_out))
            .zip(dx.par_chunks_mut(plane_in))
            .for_each(one);
    } else {
        x.chunks(plane_in)
            .zip(g.chunks(plane_out))
            .zip(dx.chunks_mut(plane_in))
            .for_each(one);
    }
    Ok(dx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Max pooling and its gradient against a window-by-window search for the first maximum
    /// (row-major taps; NaN wins, the first NaN stays), on inputs of a few distinct values, so
    /// most windows hold ties, with windows inside the plane (swept tap by tap over a row) and
    /// across its padded edges.
    #[test]
    fn max_pooling_takes_the_first_maximum_of_each_window() {
        // The wide planes' rows hold blocks of 16 inside windows and a tail.
        let sizes = [(3, 11, 13), (2, 7, 45), (2, 6, 77)];
        for ((planes, h, w), (k, s, pad, dil)) in sizes.into_iter().flat_map(|size| {
            [(3, 2, 1, 1), (3, 1, 1, 1), (2, 2, 0, 1), (3, 2, 2, 2)].map(|win| (size, win))
        }) {
            let out = |size: usize| (size + 2 * pad - dil * (k - 1) - 1) / s + 1;
            let p = Patches {
                kernel: [k, k],
                stride: [s, s],
                dilation: [dil, dil],
                pad: [pad, pad],
                out: [out(h), out(w)],
                fill: f64::NEG_INFINITY,
            };
            // With NaNs, and without (a plane without any takes a plain comparison).
            for nan in [f64::NAN, 1.5] {
                let x: Vec<f64> = (0..planes * h * w)
                    .map(|i| match (i * 7919) % 23 {
                        0 => nan,
                        v => (v % 3) as f64,
                    })
                    .collect();
                let [ho, wo] = p.out;
                let g: Vec<f64> = (0..planes * ho * wo).map(|i| (i + 1) as f64).collect();
                let y = pool(&x, [h, w], &p, PoolKind::Max).unwrap();
                let dx = pool_grad(&x, &g, [h, w], &p, PoolKind::Max).unwrap();
                let mut want_dx = vec![0.0; x.len()];
                for plane in 0..planes {
                    for o in (0..ho * wo).rev() {
                        let (oh, ow) = (o / wo, o % wo);
                        let mut best: Option<usize> = None;
                        for i in 0..k {
                            for j in 0..k {
                                let (Some(r), Some(c)) =
                                    (p.source(0, oh, i, h), p.source(1, ow, j, w))
                                else {
                                    continue;
                                };
                                let at = plane * h * w + r * w + c;
                                let better = best.is_none_or(|b| {
                                    !x[b].is_nan() && (x[at].is_nan() || x[at] > x[b])
                                });
                                if better {
                                    best = Some(at);
                                }
                            }
                        }
                        let at = best.expect("every window here reaches into the plane");
                        let got = y[plane * ho * wo + o];
                        assert!(got == x[at] || got.is_nan() && x[at].is_nan(), "output {o}");
                        want_dx[at] += g[plane * ho * wo + o];
                    }
                }
                assert_eq!(
                    dx, want_dx,
                    "kernel {k}, stride {s}, pad {pad}, dilation {dil}"
                );
                // float32 (its own vectorised sweep) finds the same maxima: these values and
                // sums are exact in it.
                let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                let g32: Vec<f32> = g.iter().map(|&v| v as f32).collect();
                let y32 = pool(&x32, [h, w], &p, PoolKind::Max).unwrap();
                let dx32 = pool_grad(&x32, &g32, [h, w], &p, PoolKind::Max).unwrap();
                for (a, b) in y32.iter().zip(&y) {
                    assert!(
                        *a as f64 == *b || a.is_nan() && b.is_nan(),
                        "float32 output"
                    );
                }
                let dx32: Vec<f64> = dx32.iter().map(|&v| v as f64).collect();
                assert_eq!(dx32, want_dx, "float32, kernel {k}, stride {s}, pad {pad}");
            }
        }
    }
}
