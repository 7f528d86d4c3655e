//! im2col and its adjoint for convolution and pooling (`Patches`): one pass over the input per
//! kernel tap, padding read as the fill value instead of being materialised, planes (one sample's
//! channel) split across rayon's threads.
use super::kernels::PARALLEL_THRESHOLD;
use crate::vocab::Patches;
use rayon::prelude::*;
use std::ops::AddAssign;

/// For each output position along one axis and one tap: the input index, or None in padding.
fn sources(p: &Patches, axis: usize, tap: usize, size: usize) -> Vec<Option<usize>> {
    (0..p.out[axis])
        .map(|o| p.source(axis, o, tap, size))
        .collect()
}

/// `x` (planes of h x w, row-major) laid out as planes of (kh*kw, Ho, Wo).
pub fn patches<T: Copy + Send + Sync>(x: &[T], hw: [usize; 2], p: &Patches, fill: T) -> Vec<T> {
    let [h, w] = hw;
    let plane_in = h * w;
    let [kh, kw] = p.kernel;
    let [ho, wo] = p.out;
    let plane_out = kh * kw * ho * wo;
    let planes = x.len().checked_div(plane_in).unwrap_or(0);
    let mut out = vec![fill; planes * plane_out];
    if plane_out == 0 {
        return out;
    }
    let rows: Vec<Vec<Option<usize>>> = (0..kh).map(|i| sources(p, 0, i, h)).collect();
    let cols: Vec<Vec<Option<usize>>> = (0..kw).map(|j| sources(p, 1, j, w)).collect();
    let unit_stride = p.stride[1] == 1;
    let one = |(src, dst): (&[T], &mut [T])| {
        for i in 0..kh {
            for j in 0..kw {
                let tap = &mut dst[(i * kw + j) * ho * wo..][..ho * wo];
                let cj = &cols[j];
                // With stride 1 the in-bounds columns are one contiguous run of the input row.
                let run = unit_stride
                    .then(|| {
                        let first = cj.iter().position(Option::is_some)?;
                        let len = cj[first..].iter().take_while(|c| c.is_some()).count();
                        Some((first, len, cj[first]?))
                    })
                    .flatten();
                for (oh, r) in rows[i].iter().enumerate() {
                    let Some(r) = *r else { continue };
                    let row = &src[r * w..][..w];
                    let dst_row = &mut tap[oh * wo..][..wo];
                    if let Some((first, len, c0)) = run {
                        dst_row[first..first + len].copy_from_slice(&row[c0..c0 + len]);
                    } else {
                        for (d, c) in dst_row.iter_mut().zip(cj) {
                            if let Some(c) = *c {
                                *d = row[c];
                            }
                        }
                    }
                }
            }
        }
    };
    if out.len() >= PARALLEL_THRESHOLD {
        x.par_chunks(plane_in)
            .zip(out.par_chunks_mut(plane_out))
            .for_each(one);
    } else {
        x.chunks(plane_in)
            .zip(out.chunks_mut(plane_out))
            .for_each(one);
    }
    out
}

/// The adjoint of `patches`: planes of (kh*kw, Ho, Wo) summed back onto planes of h x w.
pub fn patches_adjoint<T: Copy + Send + Sync + AddAssign>(
    g: &[T],
    hw: [usize; 2],
    p: &Patches,
    zero: T,
) -> Vec<T> {
    let [h, w] = hw;
    let plane_in = h * w;
    let [kh, kw] = p.kernel;
    let [ho, wo] = p.out;
    let plane_out = kh * kw * ho * wo;
    let planes = g.len().checked_div(plane_out).unwrap_or(0);
    let mut out = vec![zero; planes * plane_in];
    if plane_in == 0 || plane_out == 0 {
        return out;
    }
    let rows: Vec<Vec<Option<usize>>> = (0..kh).map(|i| sources(p, 0, i, h)).collect();
    let cols: Vec<Vec<Option<usize>>> = (0..kw).map(|j| sources(p, 1, j, w)).collect();
    let one = |(src, dst): (&[T], &mut [T])| {
        for i in 0..kh {
            for j in 0..kw {
                let tap = &src[(i * kw + j) * ho * wo..][..ho * wo];
                for (oh, r) in rows[i].iter().enumerate() {
                    let Some(r) = *r else { continue };
                    let row = &mut dst[r * w..][..w];
                    for (v, c) in tap[oh * wo..][..wo].iter().zip(&cols[j]) {
                        if let Some(c) = *c {
                            row[c] += *v;
                        }
                    }
                }
            }
        }
    };
    if g.len() >= PARALLEL_THRESHOLD {
        g.par_chunks(plane_out)
            .zip(out.par_chunks_mut(plane_in))
            .for_each(one);
    } else {
        g.chunks(plane_out)
            .zip(out.chunks_mut(plane_in))
            .for_each(one);
    }
    out
}
