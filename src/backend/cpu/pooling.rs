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
#[inline]
fn better<T: Float>(v: T, best: T) -> bool {
    !best.is_nan() && (v.is_nan() || v > best)
}

/// No maximum: a window wholly in the padding.
const NONE: usize = usize::MAX;

/// For each output position of one plane, the input index of its first maximum (`NONE` for a
/// window wholly in the padding), written into `arg` (Ho*Wo). Output by output, taps in
/// row-major kernel order: the same first maximum as a tap-by-tap sweep finds, without keeping
/// a running best per output.
fn argmax_plane<T: Float>(src: &[T], w: usize, t: &Taps, out: [usize; 2], arg: &mut [usize]) {
    let [ho, wo] = out;
    for oh in 0..ho {
        for ow in 0..wo {
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
            arg[oh * wo + ow] = best_at;
        }
    }
}

/// Whether no two windows share an input element (stride at least the dilated kernel on both
/// axes): then each input element takes at most one output's gradient, and the order in which
/// they are added does not matter.
fn disjoint(p: &Patches) -> bool {
    (0..2).all(|a| p.stride[a] >= p.dilation[a] * (p.kernel[a].max(1) - 1) + 1)
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
    match kind {
        PoolKind::Max => {
            let lowest = T::from_f64(p.fill);
            planes(x, h * w, &mut out, ho * wo, |src, dst| {
                let mut arg = vec![NONE; ho * wo];
                argmax_plane(src, w, &taps, p.out, &mut arg);
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
            planes(x, h * w, &mut out, ho * wo, |src, dst| {
                for rows in &taps.rows {
                    for cols in &taps.cols {
                        for (oh, r) in rows.iter().enumerate() {
                            let Some(r) = *r else { continue };
                            let row = &src[r * w..][..w];
                            let out_row = &mut dst[oh * wo..][..wo];
                            for (d, c) in out_row.iter_mut().zip(cols) {
                                if let Some(c) = *c {
                                    *d = d.add(row[c]);
                                }
                            }
                        }
                    }
                }
                for (d, &k) in dst.iter_mut().zip(&div) {
                    *d = d.div(k);
                }
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
    let div: Vec<T> = match kind {
        PoolKind::Avg { count_include_pad } => divisors(p, hw, count_include_pad)
            .into_iter()
            .map(T::from_f64)
            .collect(),
        PoolKind::Max => Vec::new(),
    };
    // Each plane of dx with its plane of x and of g.
    let plane_in = h * w;
    let plane_out = ho * wo;
    if plane_in == 0 || plane_out == 0 {
        return Ok(dx);
    }
    let disjoint = disjoint(p);
    let one = |((src, gs), dst): ((&[T], &[T]), &mut [T])| {
        let arg = match kind {
            PoolKind::Max => {
                let mut arg = vec![NONE; plane_out];
                argmax_plane(src, w, &taps, p.out, &mut arg);
                if disjoint {
                    // One contribution per input element at most: any order gives the same bits.
                    for (&at, &gv) in arg.iter().zip(gs) {
                        if at != NONE {
                            let d = &mut dst[at];
                            *d = d.add(gv);
                        }
                    }
                    return;
                }
                arg
            }
            PoolKind::Avg { .. } => Vec::new(),
        };
        // Taps in row-major kernel order, as the im2col path's adjoint adds them.
        for rows in &taps.rows {
            for cols in &taps.cols {
                for (oh, r) in rows.iter().enumerate() {
                    let Some(r) = *r else { continue };
                    for (ow, c) in cols.iter().enumerate() {
                        let Some(c) = *c else { continue };
                        let o = oh * wo + ow;
                        let at = r * w + c;
                        match kind {
                            PoolKind::Max => {
                                if arg[o] == at {
                                    dst[at] = dst[at].add(gs[o]);
                                }
                            }
                            PoolKind::Avg { .. } => dst[at] = dst[at].add(gs[o].div(div[o])),
                        }
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
