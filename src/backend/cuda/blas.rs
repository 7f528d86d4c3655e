//! cuBLAS GEMM for row-major matrices. cuBLAS is column-major, so C = A·B (row-major) is computed
//! as Cᵀ = Bᵀ·Aᵀ: the same bytes read column-major, with the operands swapped.
use super::device::{driver_error, lock, CudaDevice, DevicePtr};
use crate::vocab::{DType, Result, RuntimeError};
use cudarc::cublas::{result as br, sys as bs};
use std::ffi::c_int;

pub struct BlasHandle(bs::cublasHandle_t);

// SAFETY: the handle is only used under the device's blas mutex.
unsafe impl Send for BlasHandle {}

impl Drop for BlasHandle {
    fn drop(&mut self) {
        // SAFETY: created by create_handle, destroyed once.
        let _ = unsafe { br::destroy_handle(self.0) };
    }
}

/// One batch of row-major products; batch `i` reads `lhs + i*lhs_stride` etc. (in elements).
pub struct Gemm {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub batch: usize,
    pub lhs: DevicePtr,
    pub lhs_stride: usize,
    pub rhs: DevicePtr,
    pub rhs_stride: usize,
    pub out: DevicePtr,
}

fn dim(value: usize, what: &str) -> Result<c_int> {
    c_int::try_from(value).map_err(|_| {
        RuntimeError::Shape(format!(
            "matmul: {what} {value} is larger than cuBLAS accepts (2^31 - 1)"
        ))
    })
}

pub fn gemm(device: &CudaDevice, dtype: DType, g: &Gemm) -> Result<()> {
    // SAFETY: probe found the driver; checking for the library is always safe.
    if !unsafe { bs::is_culib_present() } {
        return Err(RuntimeError::Value(
            "matmul on a GPU needs cuBLAS (libcublas.so.12), which was not found: install the CUDA \
             libraries or `pip install nvidia-cublas-cu12` and put its lib directory on LD_LIBRARY_PATH"
                .into(),
        ));
    }
    device.bind()?;
    let mut guard = lock(&device.blas);
    if guard.is_none() {
        let handle = br::create_handle().map_err(|e| driver_error("cublasCreate", e))?;
        let handle = BlasHandle(handle);
        // SAFETY: both handles are live; cuBLAS then orders its work on the device's stream.
        unsafe { br::set_stream(handle.0, device.stream.cu_stream() as _) }
            .map_err(|e| driver_error("cublasSetStream", e))?;
        *guard = Some(handle);
    }
    let Some(handle) = guard.as_ref() else {
        return Err(RuntimeError::Value("cuBLAS handle missing".into()));
    };
    let (m, n, k) = (
        dim(g.m, "rows")?,
        dim(g.n, "columns")?,
        dim(g.k, "inner size")?,
    );
    let batch = dim(g.batch, "batch")?;
    let no = bs::cublasOperation_t::CUBLAS_OP_N;
    let (sa, sb, sc) = (g.rhs_stride as i64, g.lhs_stride as i64, (g.m * g.n) as i64);
    // SAFETY: the pointers are live device buffers holding the extents described by `g`, checked
    // by the runtime; leading dimensions are the row lengths of the row-major operands.
    unsafe {
        match dtype {
            DType::Float32 => {
                let (one, zero) = (1.0f32, 0.0f32);
                br::sgemm_strided_batched(
                    handle.0, no, no, n, m, k, &one, g.rhs as *const f32, n, sa,
                    g.lhs as *const f32, k, sb, &zero, g.out as *mut f32, n, sc, batch,
                )
            }
            DType::Float64 => {
                let (one, zero) = (1.0f64, 0.0f64);
                br::dgemm_strided_batched(
                    handle.0, no, no, n, m, k, &one, g.rhs as *const f64, n, sa,
                    g.lhs as *const f64, k, sb, &zero, g.out as *mut f64, n, sc, batch,
                )
            }
            other => {
                return Err(RuntimeError::DType(format!(
                    "matmul on a GPU supports float32 and float64, not {other}; convert with astype('float32')"
                )))
            }
        }
    }
    .map_err(|e| driver_error("cuBLAS gemm", e))
}
