//! cuBLAS: the GEMM calls (plain and strided-batched, f32 and f64), computed on the host on the
//! handle's stream, column-major as cuBLAS defines them.
use crate::driver::{emu, lock};
use crate::report;
use std::collections::HashMap;
use std::ffi::{c_int, c_longlong};
use std::sync::{Mutex, OnceLock};

pub type Status = u32;
pub const SUCCESS: Status = 0;
pub const NOT_INITIALIZED: Status = 1;
pub const INVALID_VALUE: Status = 7;
pub const EXECUTION_FAILED: Status = 13;

/// handle -> stream handle.
fn handles() -> &'static Mutex<HashMap<u64, u64>> {
    static H: OnceLock<Mutex<HashMap<u64, u64>>> = OnceLock::new();
    H.get_or_init(Default::default)
}

#[no_mangle]
pub unsafe extern "C" fn cublasCreate_v2(handle: *mut u64) -> Status {
    if handle.is_null() {
        return INVALID_VALUE;
    }
    if emu().card().is_err() {
        return NOT_INITIALIZED;
    }
    let h = emu().handle();
    lock(handles()).insert(h, 0);
    *handle = h;
    SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn cublasDestroy_v2(handle: u64) -> Status {
    match lock(handles()).remove(&handle) {
        Some(_) => SUCCESS,
        None => NOT_INITIALIZED,
    }
}

#[no_mangle]
pub unsafe extern "C" fn cublasSetStream_v2(handle: u64, stream: u64) -> Status {
    match lock(handles()).get_mut(&handle) {
        Some(s) => {
            *s = stream;
            SUCCESS
        }
        None => NOT_INITIALIZED,
    }
}

/// One GEMM call's shape, in cuBLAS's column-major terms.
#[derive(Clone, Copy, Debug)]
pub struct GemmShape {
    pub trans_a: bool,
    pub trans_b: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
    pub batch: usize,
}

/// Elements from the first to one past the last that a column-major (rows x cols, ld) operand
/// spans over the batch.
fn span(rows: usize, cols: usize, ld: usize, stride: usize, batch: usize) -> usize {
    if rows == 0 || cols == 0 || batch == 0 {
        return 0;
    }
    (batch - 1) * stride + (cols - 1) * ld + rows
}

/// C = alpha * op(A) op(B) + beta * C over the batch, in f64.
pub fn gemm_host(s: &GemmShape, alpha: f64, a: &[f64], b: &[f64], beta: f64, c: &mut [f64]) {
    for batch in 0..s.batch {
        let (ao, bo, co) = (batch * s.stride_a, batch * s.stride_b, batch * s.stride_c);
        for j in 0..s.n {
            for i in 0..s.m {
                let mut acc = 0.0;
                for l in 0..s.k {
                    let av = if s.trans_a {
                        a[ao + l + i * s.lda]
                    } else {
                        a[ao + i + l * s.lda]
                    };
                    let bv = if s.trans_b {
                        b[bo + j + l * s.ldb]
                    } else {
                        b[bo + l + j * s.ldb]
                    };
                    acc += av * bv;
                }
                let at = co + i + j * s.ldc;
                c[at] = alpha * acc + if beta == 0.0 { 0.0 } else { beta * c[at] };
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn gemm<const W: usize>(
    handle: u64,
    ta: c_int,
    tb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: f64,
    a: u64,
    lda: c_int,
    sa: c_longlong,
    b: u64,
    ldb: c_int,
    sb: c_longlong,
    beta: f64,
    c: u64,
    ldc: c_int,
    sc: c_longlong,
    batch: c_int,
) -> Status {
    let Some(stream) = lock(handles()).get(&handle).copied() else {
        return NOT_INITIALIZED;
    };
    let dims = [m, n, k, batch].map(usize::try_from);
    let [Ok(m), Ok(n), Ok(k), Ok(batch)] = dims else {
        return INVALID_VALUE;
    };
    let strides = [sa, sb, sc].map(usize::try_from);
    let [Ok(sa), Ok(sb), Ok(sc)] = strides else {
        return INVALID_VALUE;
    };
    let (Ok(lda), Ok(ldb), Ok(ldc)) = (
        usize::try_from(lda),
        usize::try_from(ldb),
        usize::try_from(ldc),
    ) else {
        return INVALID_VALUE;
    };
    if !(0..=1).contains(&ta) || !(0..=1).contains(&tb) {
        report("cublas gemm: only CUBLAS_OP_N and CUBLAS_OP_T are emulated");
        return INVALID_VALUE;
    }
    let s = GemmShape {
        trans_a: ta == 1,
        trans_b: tb == 1,
        m,
        n,
        k,
        lda,
        ldb,
        ldc,
        stride_a: sa,
        stride_b: sb,
        stride_c: sc,
        batch,
    };
    let (ar, ac) = if s.trans_a { (k, m) } else { (m, k) };
    let (br, bc) = if s.trans_b { (n, k) } else { (k, n) };
    if lda < ar.max(1) || ldb < br.max(1) || ldc < m.max(1) {
        report(&format!(
            "cublas gemm: a leading dimension is too small ({s:?})"
        ));
        return INVALID_VALUE;
    }
    let Ok(st) = emu().stream(stream) else {
        return NOT_INITIALIZED;
    };
    let job = move || -> Result<(), u32> {
        let mem = &emu().memory;
        let read = |ptr: u64, len: usize| -> Result<Vec<f64>, u32> {
            let mut raw = vec![0u8; len * W];
            mem.read(ptr, &mut raw).inspect_err(|_| {
                report(&format!(
                    "cublas gemm: operand at {ptr:#x} ({len} elements) is not inside an allocation"
                ));
            })?;
            Ok(raw
                .chunks_exact(W)
                .map(|ch| {
                    if W == 4 {
                        f32::from_le_bytes(ch.try_into().unwrap_or_default()) as f64
                    } else {
                        f64::from_le_bytes(ch.try_into().unwrap_or_default())
                    }
                })
                .collect())
        };
        let (la, lb, lc) = (
            span(ar, ac, lda, sa, batch),
            span(br, bc, ldb, sb, batch),
            span(m, n, ldc, sc, batch),
        );
        let av = read(a, la)?;
        let bv = read(b, lb)?;
        let mut cv = if beta == 0.0 {
            vec![0.0; lc]
        } else {
            read(c, lc)?
        };
        gemm_host(&s, alpha, &av, &bv, beta, &mut cv);
        // Write back only the result elements (not the gaps between batches or rows).
        let mut raw = vec![0u8; lc * W];
        mem.read(c, &mut raw).inspect_err(|_| {
            report(&format!(
                "cublas gemm: the output at {c:#x} ({lc} elements) is not inside an allocation"
            ));
        })?;
        for bi in 0..batch {
            for j in 0..n {
                for i in 0..m {
                    let at = bi * sc + i + j * ldc;
                    let bytes = if W == 4 {
                        (cv[at] as f32).to_le_bytes().to_vec()
                    } else {
                        cv[at].to_le_bytes().to_vec()
                    };
                    raw[at * W..at * W + W].copy_from_slice(&bytes);
                }
            }
        }
        mem.write(c, &raw)
    };
    match st.submit(Box::new(job)) {
        Ok(_) => SUCCESS,
        Err(_) => EXECUTION_FAILED,
    }
}

#[no_mangle]
pub unsafe extern "C" fn cublasSgemmStridedBatched(
    handle: u64,
    ta: c_int,
    tb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f32,
    a: u64,
    lda: c_int,
    sa: c_longlong,
    b: u64,
    ldb: c_int,
    sb: c_longlong,
    beta: *const f32,
    c: u64,
    ldc: c_int,
    sc: c_longlong,
    batch: c_int,
) -> Status {
    if alpha.is_null() || beta.is_null() {
        return INVALID_VALUE;
    }
    gemm::<4>(
        handle,
        ta,
        tb,
        m,
        n,
        k,
        *alpha as f64,
        a,
        lda,
        sa,
        b,
        ldb,
        sb,
        *beta as f64,
        c,
        ldc,
        sc,
        batch,
    )
}

#[no_mangle]
pub unsafe extern "C" fn cublasDgemmStridedBatched(
    handle: u64,
    ta: c_int,
    tb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f64,
    a: u64,
    lda: c_int,
    sa: c_longlong,
    b: u64,
    ldb: c_int,
    sb: c_longlong,
    beta: *const f64,
    c: u64,
    ldc: c_int,
    sc: c_longlong,
    batch: c_int,
) -> Status {
    if alpha.is_null() || beta.is_null() {
        return INVALID_VALUE;
    }
    gemm::<8>(
        handle, ta, tb, m, n, k, *alpha, a, lda, sa, b, ldb, sb, *beta, c, ldc, sc, batch,
    )
}

#[no_mangle]
pub unsafe extern "C" fn cublasSgemm_v2(
    handle: u64,
    ta: c_int,
    tb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f32,
    a: u64,
    lda: c_int,
    b: u64,
    ldb: c_int,
    beta: *const f32,
    c: u64,
    ldc: c_int,
) -> Status {
    cublasSgemmStridedBatched(
        handle, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1,
    )
}

#[no_mangle]
pub unsafe extern "C" fn cublasDgemm_v2(
    handle: u64,
    ta: c_int,
    tb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f64,
    a: u64,
    lda: c_int,
    b: u64,
    ldb: c_int,
    beta: *const f64,
    c: u64,
    ldc: c_int,
) -> Status {
    cublasDgemmStridedBatched(
        handle, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_major_product_with_transposes() {
        // A = [[1, 2], [3, 4]] column-major: [1, 3, 2, 4]; B = I.
        let a = [1.0, 3.0, 2.0, 4.0];
        let b = [1.0, 0.0, 0.0, 1.0];
        let mut c = [0.0; 4];
        let s = GemmShape {
            trans_a: false,
            trans_b: false,
            m: 2,
            n: 2,
            k: 2,
            lda: 2,
            ldb: 2,
            ldc: 2,
            stride_a: 0,
            stride_b: 0,
            stride_c: 0,
            batch: 1,
        };
        gemm_host(&s, 1.0, &a, &b, 0.0, &mut c);
        assert_eq!(c, a);
        gemm_host(&GemmShape { trans_a: true, ..s }, 2.0, &a, &b, 0.0, &mut c);
        assert_eq!(c, [2.0, 4.0, 6.0, 8.0]);
        assert_eq!(span(2, 3, 4, 100, 2), 100 + 8 + 2);
    }
}
