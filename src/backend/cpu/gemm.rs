//! Float matrix products through the `gemm` crate: packed kernels chosen at run time for the CPU
//! (AVX-512 where present, else AVX2/FMA), threaded on rayon's pool for large products.
//! Picked by measurement against matrixmultiply (bench/run.sh; bench/results-*.txt).
use super::kernels::alloc;
use crate::backend::MatmulLayout;
use crate::runtime::error::Result;
use gemm::Parallelism;

/// Below this many multiply-adds (m*k*n) one thread is faster: handing a 100x100 product to the
/// pool costs more than it saves.
const PARALLEL_FLOPS: usize = 192 * 192 * 192;

pub trait GemmFloat: super::element::Element {
    const ZERO: Self;
    const ONE: Self;
}

impl GemmFloat for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
}

impl GemmFloat for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
}

/// c (m x n, row-major) = a (m x k) * b (k x n), overwriting c (which may be uninitialised:
/// it is only written).
fn gemm_into<T: GemmFloat>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    b: &[T],
    c: &mut [std::mem::MaybeUninit<T>],
) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    let parallelism = if m.saturating_mul(k).saturating_mul(n) >= PARALLEL_FLOPS {
        Parallelism::Rayon(rayon::current_num_threads())
    } else {
        Parallelism::None
    };
    // SAFETY: the assert keeps every access of the row-major (m,k), (k,n), (m,n) matrices in
    // bounds (column stride 1, row strides k, n, n); read_dst = false means c is only written, so
    // its uninitialised contents are never read.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr().cast::<T>(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            T::ZERO,
            T::ONE,
            false,
            false,
            false,
            parallelism,
        );
    }
}

pub fn gemm_batched<T: GemmFloat>(a: &[T], b: &[T], l: &MatmulLayout) -> Result<Vec<T>> {
    let (m, k, n) = (l.m, l.k, l.n);
    let total = l.batch * m * n;
    if l.lhs_offsets.len() != l.batch || l.rhs_offsets.len() != l.batch {
        return Err(crate::runtime::error::RuntimeError::DType(
            "internal error: matmul batch offsets do not match the batch; please report this as a devarray bug".into(),
        ));
    }
    let mut out: Vec<T> = alloc(total)?;
    if k == 0 {
        // An empty inner dimension: every element is an empty sum.
        out.resize(total, T::ZERO);
        return Ok(out);
    }
    if m * n > 0 {
        let spare = &mut out.spare_capacity_mut()[..total];
        for ((&oa, &ob), c) in l
            .lhs_offsets
            .iter()
            .zip(&l.rhs_offsets)
            .zip(spare.chunks_exact_mut(m * n))
        {
            gemm_into(m, k, n, &a[oa..oa + m * k], &b[ob..ob + k * n], c);
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

    fn layout(batch: usize, m: usize, k: usize, n: usize) -> MatmulLayout {
        MatmulLayout {
            batch,
            m,
            k,
            n,
            lhs_offsets: (0..batch).map(|i| i * m * k).collect(),
            rhs_offsets: (0..batch).map(|i| i * k * n).collect(),
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
