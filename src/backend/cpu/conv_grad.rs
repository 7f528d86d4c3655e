//! A batch-folded convolution's input gradient, `dx = adjoint(w^T g)` (w: (O, C*kh*kw), g:
//! (O, N*L)), a block of samples at a time: each block's product rows (C*kh*kw, block*L) are
//! made in a scratch buffer and summed onto the block's input planes right away, while they are
//! still in cache. The whole product (`Array::matmul_t` then `patches_cols_adjoint`) is a column
//! matrix nine times the input for a 3x3 kernel (42 MiB per ResNet-18 64-channel layer at batch
//! 32), written to memory by the GEMM and read back by the scatter; by profile the scatter was
//! the largest cost of a step beside the GEMM. Each element gets the same products summed in
//! the same order (taps in row-major kernel order, each tap's value one GEMM dot product), so
//! the values are the two-pass path's (tests/conformance.rs checks them against the plain
//! path, the unit test below against the two passes, bit for bit).
use super::cancel::Cancel;
use super::gemm::{gemm_strided_serial, GemmFloat, SEQUENTIAL_K};
use super::kernels::alloc;
use super::patches::Taps;
use crate::vocab::error::{Result, RuntimeError};
use crate::vocab::Patches;
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::ops::AddAssign;

/// A block's product is at least this many columns wide: narrower, the GEMM repacks w for too
/// little work.
const MIN_BLOCK_COLUMNS: usize = 256;

/// How many samples each block takes, or None where the two passes are kept: too few blocks to
/// give every thread two (ResNet's 3x3 maps, whose column matrix is small anyway), or an inner
/// dimension short enough that the whole product rounds as NumPy's (`gemm.rs`'s
/// `multiply_then_add`), which a block's strided product does not.
pub fn block_samples(n: usize, l: usize, o: usize, threads: usize) -> Option<usize> {
    if o <= SEQUENTIAL_K || l == 0 {
        return None;
    }
    let per = MIN_BLOCK_COLUMNS.div_ceil(l);
    (n.div_ceil(per) >= 2 * threads.max(1)).then_some(per)
}

/// dx (N, C, h, w) for the weight `w` (O rows of C*kh*kw) and the gradient `g` (O rows of N*L)
/// of a batch-folded convolution with window `p`, `per` samples per block (`block_samples`).
pub fn conv_input_grad<T: GemmFloat + AddAssign>(
    w: &[T],
    g: &[T],
    [n, c, h, wd]: [usize; 4],
    o: usize,
    p: &Patches,
    per: usize,
) -> Result<Vec<T>> {
    let taps = p.kernel[0] * p.kernel[1];
    let l = p.out[0] * p.out[1];
    let (rows, nl, plane) = (c * taps, n * l, h * wd);
    let total = n * c * plane;
    if w.len() < o * rows || g.len() < o * nl || per == 0 {
        return Err(RuntimeError::Value(
            "internal error: a convolution's input gradient got operands of the wrong size; please report this as a devarray bug".into(),
        ));
    }
    let mut out = alloc::<T>(total)?;
    if total == 0 {
        return Ok(out);
    }
    let tp = Taps::new(p, [h, wd]);
    let cancel = Cancel::current();
    let block = |(k, dst): (usize, &mut [MaybeUninit<T>])| -> Result<()> {
        if cancel.requested() {
            return Ok(());
        }
        let samples = dst.len() / (c * plane);
        let cols = samples * l;
        let mut scratch = alloc::<T>(rows * cols)?;
        // Rows (c, tap) by this block's columns: w read transposed in place, g's columns
        // from sample k * per on.
        gemm_strided_serial(
            [rows, o, cols],
            w,
            [1, rows],
            &g[k * per * l..],
            [nl, 1],
            &mut scratch.spare_capacity_mut()[..rows * cols],
            cols,
        );
        // SAFETY: the product wrote all rows * cols elements.
        unsafe { scratch.set_len(rows * cols) };
        dst.fill(MaybeUninit::new(T::ZERO));
        // SAFETY: the fill above initialised every element.
        let dst = unsafe { &mut *(dst as *mut [MaybeUninit<T>] as *mut [T]) };
        for (s, planes) in dst.chunks_exact_mut(c * plane).enumerate() {
            for (ch, into) in planes.chunks_exact_mut(plane).enumerate() {
                for t in 0..taps {
                    tp.scatter(t, &scratch[(ch * taps + t) * cols + s * l..][..l], into);
                }
            }
        }
        Ok(())
    };
    out.spare_capacity_mut()[..total]
        .par_chunks_mut(per * c * plane)
        .enumerate()
        .try_for_each(block)?;
    // Before `set_len`: an interrupted gradient is never read.
    cancel.check()?;
    // SAFETY: the blocks tile the output and each one filled all of its planes.
    unsafe { out.set_len(total) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::gemm::gemm_batched;
    use crate::backend::cpu::patches::patches_cols_adjoint;
    use crate::backend::MatmulLayout;

    fn window(k: usize, s: usize, pad: usize, size: usize) -> Patches {
        let out = (size + 2 * pad - k) / s + 1;
        Patches {
            kernel: [k, k],
            stride: [s, s],
            pad: [pad, pad],
            dilation: [1, 1],
            out: [out, out],
            fill: 0.0,
        }
    }

    /// Blocks against the whole product and the adjoint pass, bit for bit: "same" 3x3 maps,
    /// a strided one, a 1x1 shortcut, blocks of one sample and of several, a last block short.
    #[test]
    fn blocks_match_the_two_passes() {
        let cases: [([usize; 4], usize, Patches); 5] = [
            ([4, 3, 16, 16], 8, window(3, 1, 1, 16)),
            ([7, 5, 9, 9], 12, window(3, 2, 1, 9)),
            ([9, 6, 6, 6], 10, window(1, 1, 0, 6)),
            ([3, 2, 20, 20], 9, window(5, 1, 2, 20)),
            // Large enough that the whole product is threaded (`gemm.rs`'s PARALLEL_FLOPS).
            ([8, 16, 16, 16], 32, window(3, 1, 1, 16)),
        ];
        for ([n, c, h, w], o, p) in cases {
            let taps = p.kernel[0] * p.kernel[1];
            let (rows, nl) = (c * taps, n * p.out[0] * p.out[1]);
            let weights: Vec<f32> = (0..o * rows)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 17.0)
                .collect();
            let grads: Vec<f32> = (0..o * nl)
                .map(|i| ((i * 53 % 97) as f32 - 48.0) / 13.0)
                .collect();
            let layout = MatmulLayout {
                batch: 1,
                m: rows,
                k: o,
                n: nl,
                lhs_offsets: vec![0],
                rhs_offsets: vec![0],
                trans: [true, false],
            };
            let cols = gemm_batched(&weights, &grads, &layout).unwrap();
            let want = patches_cols_adjoint(&cols, [n, c, h, w], &p, 0.0);
            for per in [1, 2, n] {
                let got = conv_input_grad(&weights, &grads, [n, c, h, w], o, &p, per).unwrap();
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(
                    same && got.len() == want.len(),
                    "{:?} o={o} per={per}",
                    [n, c, h, w]
                );
            }
        }
    }

    #[test]
    fn short_inner_dimensions_and_few_blocks_keep_the_two_passes() {
        assert_eq!(block_samples(32, 576, 64, 2), Some(1));
        assert_eq!(block_samples(32, 9, 512, 2), None);
        assert_eq!(block_samples(32, 576, 6, 2), None);
    }
}
