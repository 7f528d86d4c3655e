//! Summing same-shape arrays that live on several GPUs (data-parallel gradients): NCCL where the
//! library is present, otherwise through the host.
use super::device::{driver_error, lock};
use super::storage::CudaStorage;
use crate::backend::AllReduce;
use crate::vocab::{DType, HostData, Result, RuntimeError};
use cudarc::nccl::sys as nccl;

/// The CUDA implementation of [`AllReduce`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CudaAllReduce;

impl AllReduce<CudaStorage> for CudaAllReduce {
    fn all_reduce_sum(&self, parts: &mut [CudaStorage]) -> Result<()> {
        check_parts(parts)?;
        if parts.len() < 2 {
            return Ok(());
        }
        // SAFETY: only tries to dlopen the library.
        let have_nccl = unsafe { nccl::is_culib_present() };
        let distinct = {
            let mut ordinals: Vec<usize> = parts.iter().map(|p| p.device().ordinal).collect();
            ordinals.sort_unstable();
            ordinals.dedup();
            ordinals.len() == parts.len()
        };
        if have_nccl && distinct && nccl_type(parts[0].dtype()).is_some() {
            nccl_all_reduce(parts)
        } else {
            host_all_reduce(parts)
        }
    }
}

fn check_parts(parts: &[CudaStorage]) -> Result<()> {
    let Some(first) = parts.first() else {
        return Ok(());
    };
    for part in parts {
        if part.len() != first.len() || part.dtype() != first.dtype() {
            return Err(RuntimeError::Shape(format!(
                "all_reduce: every array must have the same size and dtype; got {} {} and {} {}",
                first.len(),
                first.dtype(),
                part.len(),
                part.dtype()
            )));
        }
    }
    Ok(())
}

fn nccl_type(dtype: DType) -> Option<nccl::ncclDataType_t> {
    Some(match dtype {
        DType::Float32 => nccl::ncclDataType_t::ncclFloat32,
        DType::Float64 => nccl::ncclDataType_t::ncclFloat64,
        DType::Int32 => nccl::ncclDataType_t::ncclInt32,
        DType::Int64 => nccl::ncclDataType_t::ncclInt64,
        DType::Float16 => nccl::ncclDataType_t::ncclFloat16,
        DType::BFloat16 => nccl::ncclDataType_t::ncclBfloat16,
        DType::Int8 => nccl::ncclDataType_t::ncclInt8,
        DType::UInt8 => nccl::ncclDataType_t::ncclUint8,
        DType::UInt32 => nccl::ncclDataType_t::ncclUint32,
        DType::UInt64 => nccl::ncclDataType_t::ncclUint64,
        DType::Bool | DType::Int16 | DType::UInt16 => return None,
    })
}

/// One communicator per participating device set, created once and kept for the process.
struct Comms(Vec<nccl::ncclComm_t>);
// SAFETY: NCCL communicators may be used from any thread, one call at a time (mutex below).
unsafe impl Send for Comms {}

static COMMS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<Vec<i32>, Comms>>> =
    std::sync::OnceLock::new();

fn nccl_all_reduce(parts: &mut [CudaStorage]) -> Result<()> {
    let dtype = nccl_type(parts[0].dtype())
        .ok_or_else(|| RuntimeError::DType("all_reduce: bool cannot be summed".into()))?;
    let ordinals: Vec<i32> = parts.iter().map(|p| p.device().ordinal as i32).collect();
    let mut table = lock(COMMS.get_or_init(Default::default));
    if !table.contains_key(&ordinals) {
        let mut comms = vec![std::ptr::null_mut(); ordinals.len()];
        // SAFETY: `comms` has one slot per device in `ordinals`.
        let status = unsafe {
            nccl::ncclCommInitAll(comms.as_mut_ptr(), ordinals.len() as i32, ordinals.as_ptr())
        };
        if status != nccl::ncclResult_t::ncclSuccess {
            drop(table);
            return host_all_reduce(parts);
        }
        table.insert(ordinals.clone(), Comms(comms));
    }
    let Some(comms) = table.get(&ordinals) else {
        return host_all_reduce(parts);
    };
    // SAFETY: one in-place all-reduce per device inside a group; every buffer holds len()
    // elements of `dtype` and its device's stream orders it after the work that wrote it.
    unsafe {
        nccl::ncclGroupStart();
        for (part, comm) in parts.iter().zip(&comms.0) {
            part.device().bind()?;
            let ptr = part.device_ptr() as *mut std::ffi::c_void;
            let status = nccl::ncclAllReduce(
                ptr,
                ptr,
                part.len(),
                dtype,
                nccl::ncclRedOp_t::ncclSum,
                *comm,
                part.device().stream.cu_stream() as _,
            );
            if status != nccl::ncclResult_t::ncclSuccess {
                nccl::ncclGroupEnd();
                return Err(driver_error("ncclAllReduce", status));
            }
        }
        let status = nccl::ncclGroupEnd();
        if status != nccl::ncclResult_t::ncclSuccess {
            return Err(driver_error("ncclGroupEnd", status));
        }
    }
    Ok(())
}

/// Without NCCL: read every part to the host, sum there, write the sum back to every device.
fn host_all_reduce(parts: &mut [CudaStorage]) -> Result<()> {
    let hosts: Vec<HostData> = parts.iter().map(|p| p.to_host()).collect::<Result<_>>()?;
    let sum = crate::backend::host_sum(&hosts)?;
    for part in parts.iter_mut() {
        let fresh = CudaStorage::from_host(part.device(), &sum)?;
        *part = fresh;
    }
    Ok(())
}
