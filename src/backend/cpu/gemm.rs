//! Float matrix products through a tuned GEMM (matrixmultiply: packed AVX2/FMA kernels, threaded).
use super::kernels::alloc;
use crate::backend::MatmulLayout;
use crate::runtime::error::Result;

pub trait GemmFloat: Copy + Default {
    /// c (m x n, row-major) = a (m x k) * b (k x n), overwriting c.
    fn gemm(m: usize, k: usize, n: usize, a: &[Self], b: &[Self], c: &mut [Self]);
}

impl GemmFloat for f32 {
    fn gemm(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
        assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
        // SAFETY: the assert above keeps every access of the row-major (m,k), (k,n), (m,n)
        // matrices in bounds; beta = 0 means c is only written.
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                k as isize,
                1,
                b.as_ptr(),
                n as isize,
                1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            );
        }
    }
}

impl GemmFloat for f64 {
    fn gemm(m: usize, k: usize, n: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
        assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
        // SAFETY: as for f32.
        unsafe {
            matrixmultiply::dgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                k as isize,
                1,
                b.as_ptr(),
                n as isize,
                1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            );
        }
    }
}

pub fn gemm_batched<T: GemmFloat>(a: &[T], b: &[T], l: &MatmulLayout) -> Result<Vec<T>> {
    let (m, k, n) = (l.m, l.k, l.n);
    let total = l.batch * m * n;
    let mut out = alloc(total)?;
    // The GEMM overwrites (beta = 0); zero-filling first keeps the code free of uninitialised memory.
    out.resize(total, T::default());
    if m * n == 0 {
        return Ok(out);
    }
    for ((&oa, &ob), c) in l
        .lhs_offsets
        .iter()
        .zip(&l.rhs_offsets)
        .zip(out.chunks_exact_mut(m * n))
    {
        T::gemm(m, k, n, &a[oa..oa + m * k], &b[ob..ob + k * n], c);
    }
    Ok(out)
}
