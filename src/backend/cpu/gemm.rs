//! Float matrix products. Three regimes, chosen by the product's size (m*k*n multiply-adds):
//! - small: the `gemm` crate on the calling thread (handing a 100x100 product to the pool costs
//!   more than it saves);
//! - medium: the `gemm` crate, threaded on rayon's pool;
//! - large: the output is cut into tiles that rayon's threads take as they free up, each tile one
//!   single-thread product, by the system OpenBLAS when it is installed (`blas.rs`), else by
//!   the `gemm` crate.
//!
//! Why, by measurement on this 2-core AVX-512 machine (one thread, CPU time, 4096^2 sgemm):
//! the `gemm` crate reached ~90 GFLOP/s, OpenBLAS 0.3.21 ~115; at 256^2-1024^2 the crate was as
//! fast or faster (131 vs 101 GFLOP/s at 256^2). Tiles taken dynamically keep both cores busy when
//! one of them is slowed by a neighbour (this is a shared virtual machine), where a static split,
//! the crate's own or OpenBLAS's, waits for the slower core.
use super::blas::{self, CblasGemm, CBLAS_NO_TRANS, CBLAS_ROW_MAJOR, CBLAS_TRANS};
use super::kernels::alloc;
use crate::backend::MatmulLayout;
use crate::vocab::error::Result;
use gemm::Parallelism;
use rayon::prelude::*;

use super::cancel::Cancel;
use std::mem::MaybeUninit;

/// Below this many multiply-adds one thread is fastest.
const PARALLEL_FLOPS: usize = 192 * 192 * 192;
/// From this many multiply-adds up, products are tiled (and use OpenBLAS when present).
const TILED_FLOPS: usize = 1536 * 1536 * 1536;
/// Tiles are not cut thinner than this on either side: each tile packs its own panels of `a`
/// and `b`, and thin tiles pay that packing for little work.
const MIN_TILE: usize = 512;
/// The most multiply-adds in one tile (see `tile_shape`).
const MAX_TILE_FLOPS: usize = 2048 * 2048 * 4096;

pub trait GemmFloat:
    super::element::Element + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    /// This type's CBLAS routine in a loaded OpenBLAS.
    fn cblas(blas: &blas::SystemBlas) -> CblasGemm<Self>;
}

impl GemmFloat for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    fn cblas(blas: &blas::SystemBlas) -> CblasGemm<f32> {
        blas.sgemm
    }
}

impl GemmFloat for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    fn cblas(blas: &blas::SystemBlas) -> CblasGemm<f64> {
        blas.dgemm
    }
}

/// One product c (m x n, row-major with row stride ldc, or column-major with column stride ldc
/// when `c_col`) = a (m x k) * b (k x n), computed on the calling thread unless `parallelism`
/// says otherwise. Element (i, p) of a is at `a + i * a_rs + p * a_cs` (likewise b): one of the
/// two strides is 1, the other the leading dimension, so a transposed operand is read where it
/// lies.
#[derive(Clone, Copy)]
struct Product<T> {
    m: usize,
    k: usize,
    n: usize,
    a: *const T,
    a_rs: usize,
    a_cs: usize,
    b: *const T,
    b_rs: usize,
    b_cs: usize,
    c: *mut T,
    ldc: usize,
    c_col: bool,
}

// SAFETY: a Product is only a description of memory that the caller of `gemm_into` borrows for
// the whole call; tiles handed to other threads write disjoint parts of c.
unsafe impl<T> Send for Product<T> {}
unsafe impl<T> Sync for Product<T> {}

impl<T: GemmFloat> Product<T> {
    /// The sub-product for output rows i0..i0+m and columns j0..j0+n.
    fn tile(&self, i0: usize, m: usize, j0: usize, n: usize) -> Self {
        debug_assert!(!self.c_col, "tiles are cut from row-major outputs only");
        // SAFETY (of the pointer offsets): callers keep i0+m <= self.m and j0+n <= self.n.
        unsafe {
            Product {
                m,
                n,
                a: self.a.add(i0 * self.a_rs),
                b: self.b.add(j0 * self.b_cs),
                c: self.c.add(i0 * self.ldc + j0),
                ..*self
            }
        }
    }

    /// Runs it with the `gemm` crate.
    ///
    /// # Safety
    /// The pointers must cover the described matrices; c is only written (read_dst = false).
    unsafe fn with_gemm_crate(&self, parallelism: Parallelism) {
        // The crate takes (column stride, row stride) of c, and computes the transposed product
        // when c's rows are contiguous (it keeps c's columns contiguous for its micro-kernel).
        let (c_cs, c_rs) = if self.c_col {
            (self.ldc, 1)
        } else {
            (1, self.ldc)
        };
        gemm::gemm(
            self.m,
            self.n,
            self.k,
            self.c,
            c_cs as isize,
            c_rs as isize,
            false,
            self.a,
            self.a_cs as isize,
            self.a_rs as isize,
            self.b,
            self.b_cs as isize,
            self.b_rs as isize,
            T::ZERO,
            T::ONE,
            false,
            false,
            false,
            parallelism,
        );
    }

    /// Runs it on this thread with OpenBLAS if it is loaded and the sizes fit its 32-bit
    /// integers; else with the `gemm` crate.
    ///
    /// # Safety
    /// As for `with_gemm_crate`; with beta = 0, BLAS only writes c.
    unsafe fn on_this_thread(&self) {
        // Row-major BLAS: a unit column stride is "no transpose" with the row stride as the
        // leading dimension; a unit row stride is "transpose" with the column stride.
        let blas_side = |rs: usize, cs: usize| {
            if cs == 1 {
                (CBLAS_NO_TRANS, rs)
            } else {
                (CBLAS_TRANS, cs)
            }
        };
        let (ta, lda) = blas_side(self.a_rs, self.a_cs);
        let (tb, ldb) = blas_side(self.b_rs, self.b_cs);
        let dims = [self.m, self.n, self.k, lda, ldb, self.ldc].map(i32::try_from);
        match (blas::system().filter(|_| !self.c_col), dims) {
            (Some(lib), [Ok(m), Ok(n), Ok(k), Ok(lda), Ok(ldb), Ok(ldc)]) => (T::cblas(lib))(
                CBLAS_ROW_MAJOR,
                ta,
                tb,
                m,
                n,
                k,
                T::ONE,
                self.a,
                lda,
                self.b,
                ldb,
                T::ZERO,
                self.c,
                ldc,
            ),
            _ => self.with_gemm_crate(Parallelism::None),
        }
    }
}

/// Split-k: a small output over a long inner dimension (a convolution's weight gradient, the
/// batch's positions summed into (O, C*kh*kw)) has too few output blocks for the crate's
/// threads to share, so one core did it all. Instead each of `parts` threads takes a slice of
/// k and the partial products are added in order (the same bits for the same thread count).
/// With `b` stored transposed (`b_transposed`, a weight gradient `g @ patches^T`) the crate,
/// threaded, first packs all of `b` on the calling thread while the others wait (a ResNet
/// step's largest serial stretch, by profile); split along k each thread packs only its own
/// slice, so there outputs up to `MAX_OUTPUT_B_TRANSPOSED` are split too.
fn split_k_parts(
    m: usize,
    k: usize,
    n: usize,
    threads: usize,
    b_transposed: bool,
) -> Option<usize> {
    const MAX_OUTPUT: usize = 128 * 128;
    const MAX_OUTPUT_B_TRANSPOSED: usize = 1 << 20;
    const MIN_K_PER_PART: usize = 2048;
    let parts = threads.min(k / MIN_K_PER_PART);
    let max_output = if b_transposed {
        MAX_OUTPUT_B_TRANSPOSED
    } else {
        MAX_OUTPUT
    };
    (m * n <= max_output && parts >= 2).then_some(parts)
}

impl<T: GemmFloat> Product<T> {
    /// The product as `parts` partial products over slices of k on rayon's threads, summed
    /// into c in slice order.
    ///
    /// # Safety
    /// As for `with_gemm_crate`.
    unsafe fn split_k(&self, parts: usize, c: &mut [MaybeUninit<T>], cancel: &Cancel) {
        let (m, n) = (self.m, self.n);
        if m == 0 || n == 0 {
            return;
        }
        let chunk = self.k.div_ceil(parts);
        // With both operands contiguous along k (a weight gradient: g (O x N*L) times the patch
        // matrix read transposed), the crate transposes one of them while packing, the one that
        // becomes its left operand: b when c is row-major. That is the patch matrix, k x n with
        // n = C*kh*kw, nine times the size of g for a 3x3 kernel, and by profile the packing was
        // a third of the product's time. With m < n the partial products are written
        // column-major instead, so the crate packs a, and the sum below transposes them back.
        let col = self.a_cs == 1 && self.b_rs == 1 && m < n;
        let partials: Vec<Vec<T>> = (0..parts)
            .into_par_iter()
            .map(|p| {
                let k0 = p * chunk;
                let len = chunk.min(self.k.saturating_sub(k0));
                if len == 0 || cancel.requested() {
                    return vec![T::ZERO; m * n];
                }
                // Not zeroed first: the crate writes every element (read_dst = false).
                let mut buf = Vec::with_capacity(m * n);
                let part = Product {
                    k: len,
                    a: self.a.add(k0 * self.a_cs),
                    b: self.b.add(k0 * self.b_rs),
                    c: buf.as_mut_ptr(),
                    ldc: if col { m } else { n },
                    c_col: col,
                    ..*self
                };
                part.with_gemm_crate(Parallelism::None);
                // SAFETY: the product wrote all m*n elements.
                buf.set_len(m * n);
                buf
            })
            .collect();
        sum_partials(&partials, m, n, col, c, self.ldc);
    }

    /// The product threaded by the crate into a column-major scratch buffer, then transposed
    /// into c: for `col_major_pays` shapes, where the crate would otherwise transpose all of b
    /// while packing it, on one thread while the others wait.
    ///
    /// # Safety
    /// As for `with_gemm_crate`.
    unsafe fn via_column_major(&self, threads: usize, c: &mut [MaybeUninit<T>]) {
        let (m, n) = (self.m, self.n);
        // Without memory for the scratch buffer, the product is made the usual way.
        let Ok(mut scratch) = alloc::<T>(m * n) else {
            return self.with_gemm_crate(Parallelism::Rayon(threads));
        };
        let part = Product {
            c: scratch.spare_capacity_mut().as_mut_ptr().cast::<T>(),
            ldc: m,
            c_col: true,
            ..*self
        };
        part.with_gemm_crate(Parallelism::Rayon(threads));
        // SAFETY: the crate wrote all m*n elements (k > 0: `gemm_batched` handles k = 0).
        scratch.set_len(m * n);
        sum_partials(&[scratch], m, n, true, c, self.ldc);
    }
}

/// Whether a product whose operands are both contiguous along k (a weight gradient, g times the
/// patch matrix read transposed) is cheaper with a column-major result: the crate then packs
/// (transposing) a, m x k, instead of b, k x n, at the cost of transposing the m x n result.
fn col_major_pays(m: usize, k: usize, n: usize, trans: [bool; 2]) -> bool {
    !trans[0] && trans[1] && n > m && (n - m).saturating_mul(k) > 2 * m * n
}

/// c (m x n, row-major, row stride ldc) = the sum of `partials` in order, each m x n,
/// row-major or (`col`) column-major.
fn sum_partials<T: GemmFloat>(
    partials: &[Vec<T>],
    m: usize,
    n: usize,
    col: bool,
    c: &mut [MaybeUninit<T>],
    ldc: usize,
) {
    if m == 0 || n == 0 || partials.is_empty() {
        return;
    }
    // Rows in blocks of `rb`; column-major partials are summed a tile of rb x rb at a time
    // (reads along their columns, writes along c's rows, the transpose in a local tile).
    const TILE: usize = 16;
    let rb = if col { TILE } else { 1 };
    let (first, rest) = (&partials[0], &partials[1..]);
    // The same additions in the same order as one accumulator per element: the first partial,
    // then each further one added.
    let sum_run = |dst: &mut [T], at: usize| {
        let len = dst.len();
        dst.copy_from_slice(&first[at..at + len]);
        for part in rest {
            for (d, v) in dst.iter_mut().zip(&part[at..at + len]) {
                *d = *d + *v;
            }
        }
    };
    let sum_rows = |(blk, rows): (usize, &mut [MaybeUninit<T>])| {
        let i0 = blk * rb;
        let count = rows.len().div_ceil(ldc);
        if !col {
            let out = &mut rows[..n];
            for (d, v) in out.iter_mut().zip(&first[i0 * n..][..n]) {
                d.write(*v);
            }
            // SAFETY: every element was written just above.
            let out = unsafe { &mut *(out as *mut [MaybeUninit<T>] as *mut [T]) };
            for part in rest {
                for (d, v) in out.iter_mut().zip(&part[i0 * n..][..n]) {
                    *d = *d + *v;
                }
            }
            return;
        }
        let mut tile = [T::ZERO; TILE * TILE];
        for j0 in (0..n).step_by(TILE) {
            let jn = TILE.min(n - j0);
            for jj in 0..jn {
                sum_run(&mut tile[jj * TILE..][..count], (j0 + jj) * m + i0);
            }
            for r in 0..count {
                let out = &mut rows[r * ldc + j0..][..jn];
                for (jj, d) in out.iter_mut().enumerate() {
                    d.write(tile[jj * TILE + r]);
                }
            }
        }
    };
    let c = &mut c[..(m - 1) * ldc + n];
    // A large output (a weight gradient over a few hundred thousand weights) is summed on every
    // thread.
    if m * n >= 1 << 16 {
        c.par_chunks_mut(rb * ldc).enumerate().for_each(sum_rows);
    } else {
        c.chunks_mut(rb * ldc).enumerate().for_each(sum_rows);
    }
}

/// The tile shape for a large m x n output: halve the longer side until every thread can take
/// two tiles (so a core slowed by a neighbour takes fewer), never below MIN_TILE. Two per thread
/// and not more: each tile repacks its panels of a and b, and on 4096^2 (one machine, 8
/// alternating runs each, medians) 4 tiles reached 216 GFLOP/s, 8 tiles 193, OpenBLAS's own two
/// threads 207.
///
/// A tile also does at most [`MAX_TILE_FLOPS`] multiply-adds (the 4096^2 tile measured above), so
/// a larger product gets more tiles of that size: an interrupt is seen between tiles, so this
/// bounds how long one takes to stop a product (about a third of a second per core).
fn tile_shape(m: usize, n: usize, k: usize, threads: usize) -> (usize, usize) {
    let wanted = 2 * threads.max(2);
    let (mut tm, mut tn) = (m.max(1), n.max(1));
    while m.div_ceil(tm) * n.div_ceil(tn) < wanted
        || tm.saturating_mul(tn).saturating_mul(k) > MAX_TILE_FLOPS
    {
        if tm >= tn && tm >= 2 * MIN_TILE {
            tm = tm.div_ceil(2);
        } else if tn >= 2 * MIN_TILE {
            tn = tn.div_ceil(2);
        } else if tm >= 2 * MIN_TILE {
            tm = tm.div_ceil(2);
        } else {
            break;
        }
    }
    (tm, tn)
}

/// Products whose inner dimension is at most this long round as NumPy's do (`multiply_then_add`).
pub(super) const SEQUENTIAL_K: usize = 7;

/// c = a * b with each product rounded and then added, in order k = 0, 1, ..., from zero: no
/// fused multiply-add. NumPy 1.23.5 (its OpenBLAS) and MXNet 1.9.1 give these bits for every
/// matrix-matrix and matrix-vector shape tried up to k = 7 (from k = 8 their kernels differ by
/// shape), and programs compare such products with the sum written out (d2l's 1x1 convolution
/// as `np.dot(K, X)` against the channel-by-channel sum, within 1e-6). Arguments as `gemm_into`.
fn multiply_then_add<T: GemmFloat>(
    [m, k, n]: [usize; 3],
    a: &[T],
    b: &[T],
    trans: [bool; 2],
    c: &mut [MaybeUninit<T>],
) {
    if n == 0 {
        return;
    }
    let a_at = |i: usize, p: usize| if trans[0] { a[p * m + i] } else { a[i * k + p] };
    let mut acc = vec![T::ZERO; n];
    for (i, row) in c.chunks_exact_mut(n).take(m).enumerate() {
        acc.fill(T::ZERO);
        for p in 0..k {
            let x = a_at(i, p);
            if trans[1] {
                for (j, s) in acc.iter_mut().enumerate() {
                    *s = *s + x * b[j * k + p];
                }
            } else {
                // A row of b: the loop vectorises.
                for (s, &y) in acc.iter_mut().zip(&b[p * n..][..n]) {
                    *s = *s + x * y;
                }
            }
        }
        for (out, &v) in row.iter_mut().zip(&acc) {
            out.write(v);
        }
    }
}

/// c (m x n, row-major) = a (m x k) * b (k x n), overwriting c (which may be uninitialised:
/// it is only written). `trans[0]`: a is stored as (k x m); `trans[1]`: b as (n x k).
#[allow(clippy::too_many_arguments)]
fn gemm_into<T: GemmFloat>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    b: &[T],
    trans: [bool; 2],
    c: &mut [MaybeUninit<T>],
    cancel: &Cancel,
) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    // Not with b read transposed: that is a dense layer's `x @ W^T`, which MXNet (oneDNN's inner
    // product) and PyTorch compute with fused multiply-adds, as the crate does
    // (tests/transcripts/programs/mxnet_crash_create_nn.txt holds MXNet's digits).
    if k <= SEQUENTIAL_K && !trans[1] {
        multiply_then_add([m, k, n], a, b, trans, c);
        return;
    }
    let (a_rs, a_cs) = if trans[0] { (1, m) } else { (k, 1) };
    let (b_rs, b_cs) = if trans[1] { (1, k) } else { (n, 1) };
    let whole = Product {
        m,
        k,
        n,
        a: a.as_ptr(),
        a_rs,
        a_cs,
        b: b.as_ptr(),
        b_rs,
        b_cs,
        c: c.as_mut_ptr().cast::<T>(),
        ldc: n,
        c_col: false,
    };
    let work = m.saturating_mul(k).saturating_mul(n);
    let threads = rayon::current_num_threads();
    // SAFETY: the assert keeps every product in bounds of the three slices, which outlive this
    // call; tiles write disjoint blocks of c.
    unsafe {
        if work < PARALLEL_FLOPS || threads == 1 {
            whole.with_gemm_crate(Parallelism::None);
        } else if let Some(parts) = split_k_parts(m, k, n, threads, trans[1]) {
            whole.split_k(parts, c, cancel);
        } else if work < TILED_FLOPS && col_major_pays(m, k, n, trans) {
            whole.via_column_major(threads, c);
        } else if work < TILED_FLOPS {
            whole.with_gemm_crate(Parallelism::Rayon(threads));
        } else {
            let (tm, tn) = tile_shape(m, n, k, threads);
            let (rows, cols) = (m.div_ceil(tm), n.div_ceil(tn));
            (0..rows * cols).into_par_iter().for_each(|t| {
                // An interrupt skips the tiles not started yet; the caller then discards c.
                if cancel.requested() {
                    return;
                }
                let (i0, j0) = ((t / cols) * tm, (t % cols) * tn);
                whole
                    .tile(i0, tm.min(m - i0), j0, tn.min(n - j0))
                    .on_this_thread();
            });
        }
    }
}

/// c (m x n, row-major, row stride `ldc`) = a (m x k) * b (k x n) on the calling thread by the
/// `gemm` crate, each operand read by its (row, column) strides: element (i, p) of a is
/// `a[i * a_rs + p * a_cs]`. For products inside an already parallel loop (a convolution's
/// input gradient block by block, `conv_grad.rs`); each element is the dot product the crate's
/// whole product computes (same micro-kernel, same order along k).
pub fn gemm_strided_serial<T: GemmFloat>(
    [m, k, n]: [usize; 3],
    a: &[T],
    [a_rs, a_cs]: [usize; 2],
    b: &[T],
    [b_rs, b_cs]: [usize; 2],
    c: &mut [MaybeUninit<T>],
    ldc: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    assert!(ldc >= n && c.len() >= (m - 1) * ldc + n);
    if k == 0 {
        for row in c.chunks_mut(ldc).take(m) {
            row[..n].fill(MaybeUninit::new(T::ZERO));
        }
        return;
    }
    assert!(a.len() > (m - 1) * a_rs + (k - 1) * a_cs && b.len() > (k - 1) * b_rs + (n - 1) * b_cs);
    let product = Product {
        m,
        k,
        n,
        a: a.as_ptr(),
        a_rs,
        a_cs,
        b: b.as_ptr(),
        b_rs,
        b_cs,
        c: c.as_mut_ptr().cast::<T>(),
        ldc,
        c_col: false,
    };
    // SAFETY: the asserts keep every element the product reads or writes inside the slices.
    unsafe { product.with_gemm_crate(Parallelism::None) }
}

pub fn gemm_batched<T: GemmFloat>(a: &[T], b: &[T], l: &MatmulLayout) -> Result<Vec<T>> {
    let (m, k, n) = (l.m, l.k, l.n);
    let total = l.batch * m * n;
    if l.lhs_offsets.len() != l.batch || l.rhs_offsets.len() != l.batch {
        return Err(crate::vocab::error::RuntimeError::DType(
            "internal error: matmul batch offsets do not match the batch; please report this as a devarray bug".into(),
        ));
    }
    let mut out: Vec<T> = alloc(total)?;
    if k == 0 {
        // An empty inner dimension: every element is an empty sum.
        out.resize(total, T::ZERO);
        return Ok(out);
    }
    let work = m.saturating_mul(k).saturating_mul(n);
    let threads = rayon::current_num_threads();
    // Products below the tiled size, in a batch that gives each thread at least two of them:
    // one product per thread beats threading each product, whose split of a medium output
    // leaves the micro-kernels' edges half empty.
    let by_batch = work < PARALLEL_FLOPS || (work < TILED_FLOPS && l.batch >= 2 * threads);
    if m * n > 0 && by_batch && l.batch > 1 && threads > 1 {
        // Many small products (a convolution's per-sample GEMMs): each on one thread, the batch
        // shared by rayon's threads, rather than one product at a time on the calling thread.
        let cancel = Cancel::current();
        let spare = &mut out.spare_capacity_mut()[..total];
        spare
            .par_chunks_exact_mut(m * n)
            .zip(l.lhs_offsets.par_iter().zip(&l.rhs_offsets))
            .for_each(|(c, (&oa, &ob))| {
                if !cancel.requested() {
                    gemm_into(
                        m,
                        k,
                        n,
                        &a[oa..oa + m * k],
                        &b[ob..ob + k * n],
                        l.trans,
                        c,
                        &cancel,
                    );
                }
            });
        // Before `set_len`: an interrupted batch is never read.
        cancel.check()?;
    } else if m * n > 0 {
        let cancel = Cancel::current();
        let spare = &mut out.spare_capacity_mut()[..total];
        for ((&oa, &ob), c) in l
            .lhs_offsets
            .iter()
            .zip(&l.rhs_offsets)
            .zip(spare.chunks_exact_mut(m * n))
        {
            gemm_into(
                m,
                k,
                n,
                &a[oa..oa + m * k],
                &b[ob..ob + k * n],
                l.trans,
                c,
                &cancel,
            );
            // Before `set_len`: an interrupted product is never read.
            cancel.check()?;
        }
    }
    // SAFETY: every one of the `total` elements was written above: the batches tile the output
    // exactly (`batch` chunks of m*n, checked above) and the GEMM writes all of each chunk.
    // With m*n = 0, total is 0.
    unsafe { out.set_len(total) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_are_two_per_thread_and_not_thin() {
        assert_eq!(tile_shape(4096, 4096, 64, 2), (2048, 2048));
        // The measured tile at 4096^2, and no larger one for larger products.
        assert_eq!(tile_shape(4096, 4096, 4096, 2), (2048, 2048));
        assert_eq!(tile_shape(10000, 10000, 10000, 2), (1250, 1250));
        assert_eq!(tile_shape(2048, 2048, 64, 2), (1024, 1024));
        assert_eq!(tile_shape(4096, 4096, 64, 4), (1024, 2048));
        // A short, wide output is cut along its columns only.
        assert_eq!(tile_shape(8, 1 << 20, 64, 2), (8, 1 << 18));
        // Nothing to cut below the minimum.
        assert_eq!(tile_shape(600, 600, 64, 2), (600, 600));
    }

    #[test]
    fn tiled_products_match_the_naive_product() {
        // Large enough to be tiled; small integers keep every sum exact, so whichever kernel
        // computes a tile (OpenBLAS when installed, else the gemm crate) must agree exactly.
        let (m, k, n) = (1100, 3000, 1300);
        assert!(m * k * n >= TILED_FLOPS);
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 3) % 3) as f32 - 1.0).collect();
        let got = gemm_batched(&a, &b, &layout(1, m, k, n)).unwrap();
        let mut want = vec![0.0f32; m * n];
        let whole = Product {
            m,
            k,
            n,
            a: a.as_ptr(),
            a_rs: k,
            a_cs: 1,
            b: b.as_ptr(),
            b_rs: n,
            b_cs: 1,
            c: want.as_mut_ptr(),
            ldc: n,
            c_col: false,
        };
        // SAFETY: the three buffers hold exactly the described matrices.
        unsafe { whole.with_gemm_crate(Parallelism::None) };
        assert!(got == want, "tiled product differs from the untiled one");
        let corner: f32 = (0..k).map(|p| a[(m - 1) * k + p] * b[p * n + n - 1]).sum();
        assert_eq!(got[m * n - 1], corner);
    }

    #[test]
    fn split_k_products_match_the_naive_product() {
        // A convolution weight gradient's shape (a small output, a long k, b read transposed);
        // small integers keep every partial sum exact.
        assert_eq!(split_k_parts(6, 20000, 25, 2, true), Some(2));
        assert_eq!(split_k_parts(6, 3000, 25, 2, true), None);
        assert_eq!(split_k_parts(256, 20000, 256, 2, false), None);
        assert_eq!(split_k_parts(256, 20000, 256, 2, true), Some(2));
        assert_eq!(split_k_parts(2048, 20000, 2048, 2, true), None);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        // m < n: the partial products are column-major (the crate packs `a`); m > n: row-major;
        // 40 rows: a last block of 8 rows in the column-major sum; and b not transposed.
        for (m, k, n, trans_b) in [
            (6, 20000, 25, true),
            (40, 9000, 70, true),
            (25, 20000, 6, true),
            (6, 20000, 25, false),
        ] {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 3) % 4) as f32 - 1.0).collect();
            let mut l = layout(1, m, k, n);
            l.trans = [false, trans_b];
            let got = pool.install(|| gemm_batched(&a, &b, &l)).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let bv = |p: usize| if trans_b { b[j * k + p] } else { b[p * n + j] };
                    let want: f32 = (0..k).map(|p| a[i * k + p] * bv(p)).sum();
                    assert_eq!(got[i * n + j], want, "{m}x{k}x{n}: element ({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn short_inner_products_round_as_numpy_does() {
        // Inputs and NumPy 1.23.5's `np.dot(a, b)` bits (random normals x3, float32); a fused
        // multiply-add gives other bits in 5 and 3 of these elements. a is also given
        // transposed, and each product in a batch of two (the threaded path).
        // (m, k, n), a, b, the product's bits.
        type Case = ([usize; 3], &'static [u32], &'static [u32], &'static [u32]);
        let cases: [Case; 2] = [
            (
                [3, 3, 4],
                &[
                    0x3b71dba5, 0x3f656fc3, 0xbf5289b2, 0xc02afe5f, 0xbfae97f5, 0xc03e6569,
                    0x3e38c2db, 0x4080a921, 0xbfbd01df,
                ],
                &[
                    0xbfee432a, 0x3fbc196f, 0x3f890b6c, 0x3ea1ea92, 0xc032a65e, 0xbdb3b923,
                    0x40057f8b, 0xc0810b6b, 0xbfafb976, 0xc0b68473, 0xc077975c, 0xc0b0ce7b,
                ],
                &[
                    0xbfb09613, 0x4093c2f3, 0x40a1c2b9, 0x3f6e53e4, 0x414dd6dd, 0x41529599,
                    0x40b9b326, 0x41a8be0c, 0xc11882cc, 0x410559f5, 0x4164ad7b, 0xc0fff0cc,
                ],
            ),
            (
                [2, 7, 3],
                &[
                    0xbf348ccc, 0xc0735988, 0x3f5054be, 0x3ef0c509, 0xbf0f901f, 0xc0f19be3,
                    0xbfcedbab, 0xbe14feb2, 0x3eae0ae8, 0xc092e49e, 0xbfb7750f, 0xc03be02b,
                    0xc01b4bf8, 0x404bb14a,
                ],
                &[
                    0xc01b0bf2, 0xbdc7d038, 0x4029cd88, 0xbfe01a42, 0xbeab92fe, 0x3ea9ac45,
                    0x3e43f007, 0xc06b35f2, 0x3e69e71d, 0x40827272, 0xc09486a1, 0x40250061,
                    0x3eb753ea, 0xbff6531b, 0x40c00a3d, 0x40125a97, 0xc0664373, 0x3e64e9f2,
                    0x3fdd72e5, 0xbf10fc13, 0x40031e68,
                ],
                &[
                    0xc11d2f97, 0x41caa189, 0xc1218e41, 0xc100eafc, 0x42100029, 0xc1853f9e,
                ],
            ),
        ];
        let transpose = |x: &[f32], rows: usize, cols: usize| -> Vec<f32> {
            (0..rows * cols)
                .map(|t| x[(t % rows) * cols + t / rows])
                .collect()
        };
        for ([m, k, n], a, b, want) in cases {
            let a: Vec<f32> = a.iter().map(|&v| f32::from_bits(v)).collect();
            let b: Vec<f32> = b.iter().map(|&v| f32::from_bits(v)).collect();
            for trans in [[false, false], [true, false]] {
                let a = if trans[0] {
                    transpose(&a, m, k)
                } else {
                    a.clone()
                };
                let b = if trans[1] {
                    transpose(&b, k, n)
                } else {
                    b.clone()
                };
                let one = MatmulLayout {
                    trans,
                    ..layout(1, m, k, n)
                };
                let got = gemm_batched(&a, &b, &one).unwrap();
                let bits: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
                assert_eq!(bits, want, "{m}x{k}x{n}, transposed {trans:?}");
                let two = MatmulLayout {
                    trans,
                    lhs_offsets: vec![0, 0],
                    rhs_offsets: vec![0, 0],
                    ..layout(2, m, k, n)
                };
                let got = gemm_batched(&a, &b, &two).unwrap();
                let bits: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
                assert_eq!(bits, [want, want].concat(), "batch of two, {trans:?}");
            }
        }
    }

    fn layout(batch: usize, m: usize, k: usize, n: usize) -> MatmulLayout {
        MatmulLayout {
            batch,
            m,
            k,
            n,
            lhs_offsets: (0..batch).map(|i| i * m * k).collect(),
            rhs_offsets: (0..batch).map(|i| i * k * n).collect(),
            trans: [false, false],
        }
    }

    fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        c
    }

    #[test]
    fn matches_the_naive_product_on_odd_and_threaded_sizes() {
        // Small integers: every product and sum is exact, so any order agrees exactly.
        for &(m, k, n) in &[(1, 1, 1), (3, 5, 7), (17, 33, 9), (200, 210, 190)] {
            let a: Vec<f64> = (0..m * k).map(|i| ((i * 7) % 11) as f64 - 5.0).collect();
            let b: Vec<f64> = (0..k * n).map(|i| ((i * 3) % 13) as f64 - 6.0).collect();
            let want = naive(&a, &b, m, k, n);
            let got = gemm_batched(&a, &b, &layout(1, m, k, n)).unwrap();
            assert_eq!(got, want, "f64 {m}x{k}x{n}");
            let a32: Vec<f32> = a.iter().map(|&x| x as f32).collect();
            let b32: Vec<f32> = b.iter().map(|&x| x as f32).collect();
            let got32 = gemm_batched(&a32, &b32, &layout(1, m, k, n)).unwrap();
            let want32: Vec<f32> = want.iter().map(|&x| x as f32).collect();
            assert_eq!(got32, want32, "f32 {m}x{k}x{n}");
        }
    }

    /// `x` (r x c, row-major) stored as its transpose (c x r).
    fn transposed<T: Copy>(x: &[T], r: usize, c: usize) -> Vec<T> {
        (0..c * r).map(|t| x[(t % r) * c + t / r]).collect()
    }

    #[test]
    fn transposed_operands_are_read_in_place() {
        // ResNet-18's weight gradients at 96x96: the 6x6 stage's (256 x 2304 over 1152) is
        // made column-major, the 3x3 stage's (512 x 4608 over 288) is not (its result is the
        // larger part).
        assert!(col_major_pays(256, 1152, 2304, [false, true]));
        assert!(!col_major_pays(512, 288, 4608, [false, true]));
        assert!(!col_major_pays(256, 1152, 2304, [false, false]));
        assert!(col_major_pays(40, 1500, 700, [false, true]));
        // Every regime: one thread, rayon-threaded, batched small products, tiled (OpenBLAS's
        // transposed calls when it is installed). Small integers keep every sum exact.
        for &(batch, m, k, n) in &[
            (1, 3, 5, 7),
            (3, 17, 33, 9),
            (1, 200, 210, 190),
            (1, 1100, 3000, 1300),
            // Threaded into a column-major result (`col_major_pays`).
            (1, 40, 1500, 700),
        ] {
            let a: Vec<f32> = (0..batch * m * k)
                .map(|i| ((i * 7) % 11) as f32 - 5.0)
                .collect();
            let b: Vec<f32> = (0..batch * k * n)
                .map(|i| ((i * 3) % 13) as f32 - 6.0)
                .collect();
            let want = gemm_batched(&a, &b, &layout(batch, m, k, n)).unwrap();
            let at: Vec<f32> = a.chunks(m * k).flat_map(|x| transposed(x, m, k)).collect();
            let bt: Vec<f32> = b.chunks(k * n).flat_map(|x| transposed(x, k, n)).collect();
            for (trans, x, y) in [
                ([true, false], &at, &b),
                ([false, true], &a, &bt),
                ([true, true], &at, &bt),
            ] {
                let mut l = layout(batch, m, k, n);
                l.trans = trans;
                let got = gemm_batched(x, y, &l).unwrap();
                assert!(got == want, "{batch}x{m}x{k}x{n} with {trans:?}");
            }
        }
    }

    #[test]
    fn batches_and_empty_inner_dimension() {
        let a: Vec<f32> = (0..2 * 2 * 3).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..2 * 3 * 2).map(|i| i as f32).collect();
        let got = gemm_batched(&a, &b, &layout(2, 2, 3, 2)).unwrap();
        assert_eq!(got, vec![10., 13., 28., 40., 172., 193., 244., 274.]);
        let zeros = gemm_batched::<f32>(&[], &[], &layout(2, 2, 0, 3)).unwrap();
        assert_eq!(zeros, vec![0.0; 12]);
        let mut bad = layout(2, 2, 3, 2);
        bad.rhs_offsets.pop();
        assert!(gemm_batched(&a, &b, &bad).is_err());
    }
}
