//! Array bytes on a CUDA device and the backend primitive ops on them (the same list as
//! `BackendStorage`: fill, cast, unary, binary with broadcast strides, axis reduce, batched
//! matmul, strided gather/scatter, concat), plus host transfers through pinned staging buffers
//! and peer copies between GPUs.
//!
//! Work is queued on the device's stream and returns at once; reading values (`to_host`)
//! synchronises, like MXNet's engine.
use super::blas::{self, Gemm};
use super::device::{driver_error, launch_config, CudaDevice, DeviceBuffer};
use super::kernels::{self, Module};
use super::random::Distribution;
use crate::backend::{MatmulLayout, StridedView};
use crate::vocab::{
    BinaryOp, DType, FusedExpr, HostData, Patches, PoolKind, ReduceOp, Result, RuntimeError,
    Scalar, UnaryOp,
};
use cudarc::driver::{DeviceRepr, PushKernelArg};
use std::sync::Arc;

const MAX_DIMS: usize = 8;

/// `DaView` in kernels/common.cuh (same field order and C layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DaView {
    offset: i64,
    rank: i32,
    shape: [i64; MAX_DIMS],
    strides: [i64; MAX_DIMS],
}
// SAFETY: plain old data with the C layout the kernels declare.
unsafe impl DeviceRepr for DaView {}

/// `DaBroadcast` in kernels/common.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DaBroadcast {
    rank: i32,
    shape: [i64; MAX_DIMS],
    lhs: [i64; MAX_DIMS],
    rhs: [i64; MAX_DIMS],
}
// SAFETY: as above.
unsafe impl DeviceRepr for DaBroadcast {}

/// `DaWindow` in kernels/window.cu: the geometry of `Patches` over one (h, w) plane.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DaWindow {
    h: i64,
    w: i64,
    kh: i64,
    kw: i64,
    sh: i64,
    sw: i64,
    dh: i64,
    dw: i64,
    ph: i64,
    pw: i64,
    ho: i64,
    wo: i64,
}
// SAFETY: as above.
unsafe impl DeviceRepr for DaWindow {}

impl DaWindow {
    fn new([h, w]: [usize; 2], p: &Patches) -> DaWindow {
        let i = |v: usize| v as i64;
        DaWindow {
            h: i(h),
            w: i(w),
            kh: i(p.kernel[0]),
            kw: i(p.kernel[1]),
            sh: i(p.stride[0]),
            sw: i(p.stride[1]),
            dh: i(p.dilation[0]),
            dw: i(p.dilation[1]),
            ph: i(p.pad[0]),
            pw: i(p.pad[1]),
            ho: i(p.out[0]),
            wo: i(p.out[1]),
        }
    }
}

fn rank_error(rank: usize) -> RuntimeError {
    RuntimeError::Shape(format!(
        "arrays on a CUDA GPU have at most {MAX_DIMS} dimensions, this one has {rank}; reshape it first"
    ))
}

fn view_arg(offset: usize, shape: &[usize], strides: &[isize]) -> Result<DaView> {
    if shape.len() > MAX_DIMS || strides.len() != shape.len() {
        return Err(rank_error(shape.len()));
    }
    let mut view = DaView {
        offset: offset as i64,
        rank: shape.len() as i32,
        ..DaView::default()
    };
    for (d, (&len, &stride)) in shape.iter().zip(strides).enumerate() {
        view.shape[d] = len as i64;
        view.strides[d] = stride as i64;
    }
    Ok(view)
}

fn is_row_major(shape: &[usize], strides: &[usize]) -> bool {
    let mut expected = 1;
    for (&len, &stride) in shape.iter().zip(strides).rev() {
        if len != 1 && stride != expected {
            return false;
        }
        expected *= len;
    }
    true
}

#[derive(Debug)]
pub struct CudaStorage {
    buffer: DeviceBuffer,
    dtype: DType,
    len: usize,
}

impl CudaStorage {
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn device(&self) -> &Arc<CudaDevice> {
        self.buffer.device()
    }

    /// Uninitialised storage for `len` elements (kernels fill it before anyone reads it).
    pub(crate) fn alloc(device: &Arc<CudaDevice>, len: usize, dtype: DType) -> Result<CudaStorage> {
        let bytes = len.checked_mul(dtype.size_bytes()).ok_or_else(|| {
            RuntimeError::Value(format!("{len} elements of {dtype} do not fit in memory"))
        })?;
        Ok(CudaStorage {
            buffer: device.alloc(bytes)?,
            dtype,
            len,
        })
    }

    pub(crate) fn ptr(&self) -> u64 {
        self.buffer.ptr()
    }

    /// The raw device address (for NCCL and other library calls).
    pub fn device_ptr(&self) -> u64 {
        self.buffer.ptr()
    }

    /// Launches `entry` of `module` over `n` elements with the arguments `push` adds.
    pub(crate) fn launch(&self, module: Module, entry: &str, n: usize, args: &[Arg]) -> Result<()> {
        launch_on(self.device(), module, entry, n, args)
    }

    pub fn full(
        device: &Arc<CudaDevice>,
        n: usize,
        value: f64,
        dtype: DType,
    ) -> Result<CudaStorage> {
        let out = CudaStorage::alloc(device, n, dtype)?;
        if n == 0 {
            return Ok(out);
        }
        let entry = kernels::fill_entry(dtype);
        // The value is passed as the kernel's own element type; the later dtypes take the
        // bits of one element (converted as the host converts) in a u64.
        let value = match dtype {
            DType::Float32 => Arg::F32(value as f32),
            DType::Float64 => Arg::F64(value),
            DType::Int32 => Arg::I32(value as i32),
            DType::Int64 => Arg::I64(value as i64),
            DType::Bool => Arg::U8(u8::from(value != 0.0)),
            other => {
                let mut bits = [0u8; 8];
                let one = HostData::from_f64_values(&[value], other).to_le_bytes();
                bits[..one.len().min(8)].copy_from_slice(&one[..one.len().min(8)]);
                Arg::I64(i64::from_le_bytes(bits))
            }
        };
        out.launch(
            Module::Copy,
            &entry,
            n,
            &[Arg::Ptr(out.ptr()), value, Arg::I64(n as i64)],
        )?;
        Ok(out)
    }

    /// Uniform samples in (low, high] from the device's cuRAND generator, computed as
    /// `low + (high - low) * u` with u in (0, 1], as MXNet's GPU sampler does.
    pub fn uniform(
        device: &Arc<CudaDevice>,
        n: usize,
        low: f64,
        high: f64,
        dtype: DType,
    ) -> Result<CudaStorage> {
        if dtype.is_half() {
            return CudaStorage::uniform(device, n, low, high, DType::Float32)?.cast(dtype);
        }
        let unit = CudaStorage::alloc(device, n, dtype)?;
        if n == 0 {
            return Ok(unit);
        }
        super::random::fill(device, unit.ptr(), n, dtype, Distribution::StandardUniform)?;
        let span = CudaStorage::full(device, 1, high - low, dtype)?;
        let offset = CudaStorage::full(device, 1, low, dtype)?;
        unit.binary(&[1], &span, &[0], &[n], BinaryOp::Mul)?.binary(
            &[1],
            &offset,
            &[0],
            &[n],
            BinaryOp::Add,
        )
    }

    /// Normal samples from the device's cuRAND generator.
    pub fn normal(
        device: &Arc<CudaDevice>,
        n: usize,
        mean: f64,
        std: f64,
        dtype: DType,
    ) -> Result<CudaStorage> {
        if dtype.is_half() {
            return CudaStorage::normal(device, n, mean, std, DType::Float32)?.cast(dtype);
        }
        if n == 0 {
            return CudaStorage::alloc(device, 0, dtype);
        }
        // cuRAND makes normal samples in pairs: an odd count is drawn one longer and trimmed.
        let even = n + n % 2;
        let drawn = CudaStorage::alloc(device, even, dtype)?;
        super::random::fill(
            device,
            drawn.ptr(),
            even,
            dtype,
            Distribution::Normal { mean, std },
        )?;
        if even == n {
            return Ok(drawn);
        }
        drawn.gather(&StridedView {
            offset: 0,
            shape: vec![n],
            strides: vec![1],
        })
    }

    /// Host to device through a pinned staging buffer (pageable memory would make the driver
    /// stage it anyway, synchronously and slower).
    pub fn from_host(device: &Arc<CudaDevice>, data: &HostData) -> Result<CudaStorage> {
        match data {
            HostData::Bool(v) => CudaStorage::from_bools(device, v),
            other => {
                crate::host_any!(other, v => CudaStorage::from_values(device, v, other.dtype()))
            }
        }
    }

    /// Uploads host numbers of `dtype` (any but bool) straight from the caller's memory:
    /// a host array is not cloned first.
    pub fn from_values<T: Copy>(
        device: &Arc<CudaDevice>,
        values: &[T],
        dtype: DType,
    ) -> Result<CudaStorage> {
        let out = CudaStorage::alloc(device, values.len(), dtype)?;
        super::transfer::host_to_device(device, bytes_of(values), out.ptr())?;
        Ok(out)
    }

    /// Booleans are stored as one byte each on the device.
    pub fn from_bools(device: &Arc<CudaDevice>, values: &[bool]) -> Result<CudaStorage> {
        let bytes: Vec<u8> = values.iter().map(|&x| u8::from(x)).collect();
        let out = CudaStorage::alloc(device, values.len(), DType::Bool)?;
        super::transfer::host_to_device(device, &bytes, out.ptr())?;
        Ok(out)
    }

    /// Device to host; waits for the queued work that produces the values. Numbers land in
    /// their final vector directly (no byte buffer in between).
    pub fn to_host(&self) -> Result<HostData> {
        Ok(match self.dtype {
            DType::Float32 => HostData::F32(self.read_values(0.0)?),
            DType::Float64 => HostData::F64(self.read_values(0.0)?),
            DType::Int32 => HostData::I32(self.read_values(0)?),
            DType::Int64 => HostData::I64(self.read_values(0)?),
            DType::Float16 => HostData::F16(self.read_values(crate::vocab::f16::ZERO)?),
            DType::BFloat16 => HostData::BF16(self.read_values(crate::vocab::bf16::ZERO)?),
            DType::Int8 => HostData::I8(self.read_values(0)?),
            DType::Int16 => HostData::I16(self.read_values(0)?),
            DType::UInt8 => HostData::U8(self.read_values(0)?),
            DType::UInt16 => HostData::U16(self.read_values(0)?),
            DType::UInt32 => HostData::U32(self.read_values(0)?),
            DType::UInt64 => HostData::U64(self.read_values(0)?),
            DType::Bool => {
                let mut raw = vec![0u8; self.len];
                super::transfer::device_to_host(self.device(), self.ptr(), &mut raw)?;
                HostData::Bool(raw.iter().map(|&b| b != 0).collect())
            }
        })
    }

    fn read_values<T: Copy>(&self, zero: T) -> Result<Vec<T>> {
        let mut values = vec![zero; self.len];
        super::transfer::device_to_host(self.device(), self.ptr(), bytes_of_mut(&mut values))?;
        Ok(values)
    }

    pub fn scalar_at(&self, index: usize) -> Result<Option<Scalar>> {
        if index >= self.len {
            return Ok(None);
        }
        let size = self.dtype.size_bytes();
        let mut raw = vec![0u8; size];
        super::transfer::device_to_host(
            self.device(),
            self.ptr() + (index * size) as u64,
            &mut raw,
        )?;
        Ok(HostData::from_le_bytes(&raw, self.dtype).scalar_at(0))
    }

    /// A copy of this array on `target` (another GPU): a peer copy where the two cards can reach
    /// each other, else through the host.
    pub fn copy_to_device(&self, target: &Arc<CudaDevice>) -> Result<CudaStorage> {
        let out = CudaStorage::alloc(target, self.len, self.dtype)?;
        super::transfer::device_to_device(
            self.device(),
            self.ptr(),
            target,
            out.ptr(),
            self.buffer.bytes,
        )?;
        Ok(out)
    }

    pub fn cast(&self, dtype: DType) -> Result<CudaStorage> {
        let out = CudaStorage::alloc(self.device(), self.len, dtype)?;
        if self.len > 0 {
            let entry = kernels::cast_entry(self.dtype, dtype);
            out.launch(
                Module::Copy,
                &entry,
                self.len,
                &[
                    Arg::Ptr(out.ptr()),
                    Arg::Ptr(self.ptr()),
                    Arg::I64(self.len as i64),
                ],
            )?;
        }
        Ok(out)
    }

    /// float16 computes in float32: `op` runs on a float32 copy and a float32 result rounds
    /// back (bool and index results stay), as on the host.
    fn via_f32(&self, op: impl FnOnce(&CudaStorage) -> Result<CudaStorage>) -> Result<CudaStorage> {
        let out = op(&self.cast(DType::Float32)?)?;
        if out.dtype == DType::Float32 {
            out.cast(self.dtype)
        } else {
            Ok(out)
        }
    }

    pub fn unary(&self, op: UnaryOp) -> Result<CudaStorage> {
        if self.dtype.is_half() {
            return self.via_f32(|w| w.unary(op));
        }
        let entry = kernels::unary_entry(op, self.dtype)
            .ok_or_else(|| unsupported(op.name(), self.dtype))?;
        let out_dtype = if op == UnaryOp::Not {
            DType::Bool
        } else {
            self.dtype
        };
        let out = CudaStorage::alloc(self.device(), self.len, out_dtype)?;
        if self.len > 0 {
            out.launch(
                Module::Elementwise,
                &entry,
                self.len,
                &[
                    Arg::Ptr(out.ptr()),
                    Arg::Ptr(self.ptr()),
                    Arg::I64(self.len as i64),
                ],
            )?;
        }
        Ok(out)
    }

    pub fn binary(
        &self,
        strides: &[usize],
        rhs: &CudaStorage,
        rhs_strides: &[usize],
        shape: &[usize],
        op: BinaryOp,
    ) -> Result<CudaStorage> {
        same_device(self, rhs, op.name())?;
        if self.dtype.is_half() {
            let rhs = rhs.cast(DType::Float32)?;
            return self.via_f32(|w| w.binary(strides, &rhs, rhs_strides, shape, op));
        }
        let n: usize = shape.iter().product();
        let out_dtype = if op.is_comparison() {
            DType::Bool
        } else {
            self.dtype
        };
        let out = CudaStorage::alloc(self.device(), n, out_dtype)?;
        if n == 0 {
            return Ok(out);
        }
        let contiguous = is_row_major(shape, strides) && is_row_major(shape, rhs_strides);
        let entry = kernels::binary_entry(op, self.dtype, contiguous)
            .ok_or_else(|| unsupported(op.name(), self.dtype))?;
        let (o, a, b, count) = (out.ptr(), self.ptr(), rhs.ptr(), n as i64);
        if contiguous {
            out.launch(
                Module::Elementwise,
                &entry,
                n,
                &[Arg::Ptr(o), Arg::Ptr(a), Arg::Ptr(b), Arg::I64(count)],
            )?;
        } else {
            if shape.len() > MAX_DIMS {
                return Err(rank_error(shape.len()));
            }
            let mut layout = DaBroadcast {
                rank: shape.len() as i32,
                ..DaBroadcast::default()
            };
            for (d, &len) in shape.iter().enumerate() {
                layout.shape[d] = len as i64;
                layout.lhs[d] = strides.get(d).copied().unwrap_or(0) as i64;
                layout.rhs[d] = rhs_strides.get(d).copied().unwrap_or(0) as i64;
            }
            out.launch(
                Module::Elementwise,
                &entry,
                n,
                &[
                    Arg::Ptr(o),
                    Arg::Ptr(a),
                    Arg::Ptr(b),
                    Arg::Broadcast(layout),
                    Arg::I64(count),
                ],
            )?;
        }
        Ok(out)
    }

    /// Reduces the middle axis of a row-major (outer, len, inner) block. Never `Mean`.
    pub fn reduce(
        &self,
        op: ReduceOp,
        outer: usize,
        len: usize,
        inner: usize,
    ) -> Result<CudaStorage> {
        if self.dtype.is_half() {
            return self.via_f32(|w| w.reduce(op, outer, len, inner));
        }
        let arg = matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin);
        let out_dtype = if arg { DType::Int64 } else { self.dtype };
        let n = outer * inner;
        let out = CudaStorage::alloc(self.device(), n, out_dtype)?;
        if n == 0 {
            return Ok(out);
        }
        let rows = inner == 1 && !arg && len > 1;
        let entry = kernels::reduce_entry(op, self.dtype, rows)
            .ok_or_else(|| unsupported(op.name(), self.dtype))?;
        let (o, i) = (out.ptr(), self.ptr());
        let (outer, len, inner) = (outer as i64, len as i64, inner as i64);
        if rows {
            let function = self.device().function(Module::Reduce, &entry)?;
            let config = cudarc::driver::LaunchConfig {
                grid_dim: ((outer as u32).clamp(1, 65_535), 1, 1),
                block_dim: (kernels::BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            let stream = &self.device().stream;
            let mut args = stream.launch_builder(&function);
            args.arg(&o).arg(&i).arg(&outer).arg(&len);
            // SAFETY: the argument list matches the kernel's signature in reduce.cu.
            unsafe { args.launch(config) }.map_err(|e| driver_error(&entry, e))?;
        } else {
            out.launch(
                Module::Reduce,
                &entry,
                n,
                &[
                    Arg::Ptr(o),
                    Arg::Ptr(i),
                    Arg::I64(outer),
                    Arg::I64(len),
                    Arg::I64(inner),
                ],
            )?;
        }
        Ok(out)
    }

    pub fn matmul(&self, rhs: &CudaStorage, layout: &MatmulLayout) -> Result<CudaStorage> {
        same_device(self, rhs, "matmul")?;
        if self.dtype.is_half() {
            let rhs = rhs.cast(DType::Float32)?;
            return self.via_f32(|w| w.matmul(&rhs, layout));
        }
        let MatmulLayout { batch, m, k, n, .. } = *layout;
        let out = CudaStorage::alloc(self.device(), batch * m * n, self.dtype)?;
        if batch * m * n == 0 {
            return Ok(out);
        }
        if k == 0 {
            return CudaStorage::full(self.device(), batch * m * n, 0.0, self.dtype);
        }
        let size = self.dtype.size_bytes() as u64;
        // One strided-batched call when the batch offsets are evenly spaced (including a
        // broadcast operand, stride 0); otherwise one call per batch.
        let lhs_stride = even_stride(&layout.lhs_offsets);
        let rhs_stride = even_stride(&layout.rhs_offsets);
        match (lhs_stride, rhs_stride) {
            (Some(ls), Some(rs)) => blas::gemm(
                self.device(),
                self.dtype,
                &Gemm {
                    m,
                    k,
                    n,
                    batch,
                    lhs: self.ptr()
                        + layout.lhs_offsets.first().copied().unwrap_or(0) as u64 * size,
                    lhs_stride: ls,
                    rhs: rhs.ptr() + layout.rhs_offsets.first().copied().unwrap_or(0) as u64 * size,
                    rhs_stride: rs,
                    out: out.ptr(),
                },
            )?,
            _ => {
                for (b, (lo, ro)) in layout
                    .lhs_offsets
                    .iter()
                    .zip(&layout.rhs_offsets)
                    .enumerate()
                {
                    blas::gemm(
                        self.device(),
                        self.dtype,
                        &Gemm {
                            m,
                            k,
                            n,
                            batch: 1,
                            lhs: self.ptr() + *lo as u64 * size,
                            lhs_stride: 0,
                            rhs: rhs.ptr() + *ro as u64 * size,
                            rhs_stride: 0,
                            out: out.ptr() + (b * m * n) as u64 * size,
                        },
                    )?;
                }
            }
        }
        Ok(out)
    }

    pub fn gather(&self, view: &StridedView) -> Result<CudaStorage> {
        let n: usize = view.shape.iter().product();
        let out = CudaStorage::alloc(self.device(), n, self.dtype)?;
        if n > 0 {
            let src = view_arg(view.offset, &view.shape, &view.strides)?;
            let entry = kernels::gather_entry(self.dtype);
            out.launch(
                Module::Copy,
                &entry,
                n,
                &[
                    Arg::Ptr(out.ptr()),
                    Arg::Ptr(self.ptr()),
                    Arg::View(src),
                    Arg::I64(n as i64),
                ],
            )?;
        }
        Ok(out)
    }

    /// im2col (kernels/window.cu): planes of `hw` laid out as planes of (kh*kw, Ho, Wo), `p.fill`
    /// in the padding. Float dtypes only, as on the CPU.
    pub fn patches(&self, hw: [usize; 2], p: &Patches) -> Result<CudaStorage> {
        self.window(hw, p, false)
    }

    /// The adjoint of `patches`: planes of (kh*kw, Ho, Wo) summed back onto planes of `hw`.
    pub fn patches_adjoint(&self, hw: [usize; 2], p: &Patches) -> Result<CudaStorage> {
        self.window(hw, p, true)
    }

    fn window(&self, hw: [usize; 2], p: &Patches, adjoint: bool) -> Result<CudaStorage> {
        let entry = kernels::patches_entry(self.dtype, adjoint)
            .ok_or_else(|| unsupported("im2col", self.dtype))?;
        let (plane_in, plane_out) = (
            hw[0] * hw[1],
            p.kernel[0] * p.kernel[1] * p.out[0] * p.out[1],
        );
        let (from, to) = if adjoint {
            (plane_out, plane_in)
        } else {
            (plane_in, plane_out)
        };
        let n = self.len.checked_div(from).unwrap_or(0) * to;
        let out = CudaStorage::alloc(self.device(), n, self.dtype)?;
        if n > 0 {
            let mut args = vec![
                Arg::Ptr(out.ptr()),
                Arg::Ptr(self.ptr()),
                Arg::Window(DaWindow::new(hw, p)),
            ];
            if !adjoint {
                args.push(Arg::F64(p.fill));
            }
            args.push(Arg::I64(n as i64));
            out.launch(Module::Window, &entry, n, &args)?;
        }
        Ok(out)
    }

    /// Batch-folded im2col of this (N, C, H, W) array: (C*kh*kw, N*Ho*Wo), so a convolution
    /// is one GEMM over the whole batch (kernels/window.cu).
    pub fn patches_cols(&self, nchw: [usize; 4], p: &Patches) -> Result<CudaStorage> {
        let [n, c, h, w] = nchw;
        let len = c * p.kernel[0] * p.kernel[1] * n * p.out[0] * p.out[1];
        let args = [
            Arg::Window(DaWindow::new([h, w], p)),
            Arg::I64(n as i64),
            Arg::I64(c as i64),
            Arg::F64(p.fill),
        ];
        self.batch_window("patches_cols", len, None, &args)
    }

    /// The adjoint of `patches_cols`: this (C*kh*kw, N*Ho*Wo) gradient summed back onto an
    /// (N, C, H, W) array.
    pub fn patches_cols_adjoint(&self, nchw: [usize; 4], p: &Patches) -> Result<CudaStorage> {
        let [n, c, h, w] = nchw;
        let geometry = [
            Arg::Window(DaWindow::new([h, w], p)),
            Arg::I64(n as i64),
            Arg::I64(c as i64),
        ];
        self.batch_window("patches_cols_adjoint", n * c * h * w, None, &geometry)
    }

    /// This (O, N*L) product as (N, O, L), plus `bias` (O values) per channel when given, then
    /// ReLU when `relu`.
    pub fn cols_to_batch(
        &self,
        [o, n, l]: [usize; 3],
        bias: Option<&CudaStorage>,
        relu: bool,
    ) -> Result<CudaStorage> {
        let shape = [
            Arg::I32(i32::from(relu)),
            Arg::I64(o as i64),
            Arg::I64(n as i64),
            Arg::I64(l as i64),
        ];
        self.batch_window("cols_to_batch", o * n * l, Some(bias), &shape)
    }

    /// The way back of `cols_to_batch`: this (N, O, L) gradient as (O, N*L), each value times
    /// `mask > 0` (the fused ReLU's output) when given.
    pub fn batch_to_cols(
        &self,
        [o, n, l]: [usize; 3],
        mask: Option<&CudaStorage>,
    ) -> Result<CudaStorage> {
        let shape = [Arg::I64(o as i64), Arg::I64(n as i64), Arg::I64(l as i64)];
        self.batch_window("batch_to_cols", o * n * l, Some(mask), &shape)
    }

    /// One launch of a batch-folded convolution kernel (`BATCH_PATCH_KERNELS`) writing `len`
    /// elements: (out, this, [second, has_second,] args..., len). `second` is the
    /// optional per-element or per-channel operand; when absent the kernel never reads its
    /// pointer, which is then this array's.
    fn batch_window(
        &self,
        kernel: &str,
        len: usize,
        second: Option<Option<&CudaStorage>>,
        args: &[Arg],
    ) -> Result<CudaStorage> {
        if let Some(Some(other)) = second {
            same_device(self, other, "a convolution")?;
        }
        let entry = kernels::norm_entry(kernel, self.dtype)
            .ok_or_else(|| unsupported("a convolution", self.dtype))?;
        let out = CudaStorage::alloc(self.device(), len, self.dtype)?;
        if len > 0 {
            let mut all = vec![Arg::Ptr(out.ptr()), Arg::Ptr(self.ptr())];
            if let Some(other) = second {
                all.push(Arg::Ptr(other.map_or(self.ptr(), |o| o.ptr())));
                all.push(Arg::I32(i32::from(other.is_some())));
            }
            all.extend_from_slice(args);
            all.push(Arg::I64(len as i64));
            out.launch(Module::Window, &entry, len, &all)?;
        }
        Ok(out)
    }

    /// Max or average pooling of planes of `hw` read in place (kernels/window.cu).
    pub fn pool(&self, hw: [usize; 2], p: &Patches, kind: PoolKind) -> Result<CudaStorage> {
        let planes = self.len.checked_div(hw[0] * hw[1]).unwrap_or(0);
        let n = planes * p.out[0] * p.out[1];
        let out = CudaStorage::alloc(self.device(), n, self.dtype)?;
        if n > 0 {
            let (name, last) = match kind {
                PoolKind::Max => ("pool_max", Arg::F64(p.fill)),
                PoolKind::Avg { count_include_pad } => {
                    ("pool_avg", Arg::I32(i32::from(count_include_pad)))
                }
            };
            let entry = kernels::norm_entry(name, self.dtype)
                .ok_or_else(|| unsupported("pooling", self.dtype))?;
            out.launch(
                Module::Window,
                &entry,
                n,
                &[
                    Arg::Ptr(out.ptr()),
                    Arg::Ptr(self.ptr()),
                    Arg::Window(DaWindow::new(hw, p)),
                    last,
                    Arg::I64(n as i64),
                ],
            )?;
        }
        Ok(out)
    }

    /// The gradient of `pool` for this input and the output gradient `g`, gathered per input
    /// element (kernels/window.cu; max pooling finds each window's maximum first).
    pub fn pool_grad(
        &self,
        g: &CudaStorage,
        hw: [usize; 2],
        p: &Patches,
        kind: PoolKind,
    ) -> Result<CudaStorage> {
        same_device(self, g, "pooling")?;
        let dev = self.device();
        let entry = |k: &str| {
            kernels::norm_entry(k, self.dtype).ok_or_else(|| unsupported("pooling", self.dtype))
        };
        let n = self.len;
        let dx = CudaStorage::alloc(dev, n, self.dtype)?;
        if n == 0 || g.len == 0 {
            return Ok(dx);
        }
        let win = Arg::Window(DaWindow::new(hw, p));
        match kind {
            PoolKind::Max => {
                let arg = CudaStorage::alloc(dev, g.len, DType::Int64)?;
                arg.launch(
                    Module::Window,
                    &entry("pool_argmax")?,
                    g.len,
                    &[
                        Arg::Ptr(arg.ptr()),
                        Arg::Ptr(self.ptr()),
                        win,
                        Arg::I64(g.len as i64),
                    ],
                )?;
                dx.launch(
                    Module::Window,
                    &entry("pool_max_grad")?,
                    n,
                    &[
                        Arg::Ptr(dx.ptr()),
                        Arg::Ptr(g.ptr()),
                        Arg::Ptr(arg.ptr()),
                        win,
                        Arg::I64(n as i64),
                    ],
                )?;
            }
            PoolKind::Avg { count_include_pad } => dx.launch(
                Module::Window,
                &entry("pool_avg_grad")?,
                n,
                &[
                    Arg::Ptr(dx.ptr()),
                    Arg::Ptr(g.ptr()),
                    win,
                    Arg::I32(i32::from(count_include_pad)),
                    Arg::I64(n as i64),
                ],
            )?,
        }
        Ok(dx)
    }

    /// Batch norm's forward over (n, c, inner) (kernels/norm.cu): the output and the
    /// per-channel mean, biased variance and 1/sqrt(var + eps), from the batch or, given, from
    /// `running` (mean, var). One float dtype throughout, as on the CPU.
    pub fn batch_norm(
        &self,
        [n, c, inner]: [usize; 3],
        running: Option<(&CudaStorage, &CudaStorage)>,
        gamma: &CudaStorage,
        beta: &CudaStorage,
        eps: f64,
    ) -> Result<[CudaStorage; 4]> {
        for other in [
            Some(gamma),
            Some(beta),
            running.map(|r| r.0),
            running.map(|r| r.1),
        ]
        .into_iter()
        .flatten()
        {
            same_device(self, other, "batch_norm")?;
        }
        let dev = self.device();
        let entry = |k: &str| {
            kernels::norm_entry(k, self.dtype).ok_or_else(|| unsupported("batch_norm", self.dtype))
        };
        let stat = || CudaStorage::alloc(dev, c, self.dtype);
        let (mean, var, invstd) = (stat()?, stat()?, stat()?);
        let y = CudaStorage::alloc(dev, self.len, self.dtype)?;
        if c > 0 {
            match running {
                Some((rm, rv)) => launch_on(
                    dev,
                    Module::Norm,
                    &entry("bn_running")?,
                    c,
                    &[
                        Arg::Ptr(mean.ptr()),
                        Arg::Ptr(var.ptr()),
                        Arg::Ptr(invstd.ptr()),
                        Arg::Ptr(rm.ptr()),
                        Arg::Ptr(rv.ptr()),
                        Arg::F64(eps),
                        Arg::I64(c as i64),
                    ],
                )?,
                None => launch_blocks(
                    dev,
                    &entry("bn_stats")?,
                    c,
                    &[
                        Arg::Ptr(mean.ptr()),
                        Arg::Ptr(var.ptr()),
                        Arg::Ptr(invstd.ptr()),
                        Arg::Ptr(self.ptr()),
                        Arg::I64(n as i64),
                        Arg::I64(c as i64),
                        Arg::I64(inner as i64),
                        Arg::F64(eps),
                    ],
                )?,
            }
        }
        if self.len > 0 {
            launch_on(
                dev,
                Module::Norm,
                &entry("bn_forward")?,
                self.len,
                &[
                    Arg::Ptr(y.ptr()),
                    Arg::Ptr(self.ptr()),
                    Arg::Ptr(mean.ptr()),
                    Arg::Ptr(invstd.ptr()),
                    Arg::Ptr(gamma.ptr()),
                    Arg::Ptr(beta.ptr()),
                    Arg::I64(c as i64),
                    Arg::I64(inner.max(1) as i64),
                    Arg::I64(self.len as i64),
                ],
            )?;
        }
        Ok([y, mean, var, invstd])
    }

    /// Batch norm's backward (kernels/norm.cu): (dx, dgamma, dbeta) from this input, the output
    /// gradient `g` and the saved mean and 1/sqrt(var + eps).
    #[allow(clippy::too_many_arguments)]
    pub fn batch_norm_backward(
        &self,
        g: &CudaStorage,
        [n, c, inner]: [usize; 3],
        mean: &CudaStorage,
        invstd: &CudaStorage,
        gamma: &CudaStorage,
        batch_stats: bool,
    ) -> Result<[CudaStorage; 3]> {
        for other in [g, mean, invstd, gamma] {
            same_device(self, other, "batch_norm")?;
        }
        let dev = self.device();
        let entry = |k: &str| {
            kernels::norm_entry(k, self.dtype).ok_or_else(|| unsupported("batch_norm", self.dtype))
        };
        let dgamma = CudaStorage::alloc(dev, c, self.dtype)?;
        let dbeta = CudaStorage::alloc(dev, c, self.dtype)?;
        let coef = CudaStorage::alloc(dev, 3 * c, self.dtype)?;
        let dx = CudaStorage::alloc(dev, self.len, self.dtype)?;
        let batch = Arg::I32(i32::from(batch_stats));
        if c > 0 {
            launch_blocks(
                dev,
                &entry("bn_grad_sums")?,
                c,
                &[
                    Arg::Ptr(dgamma.ptr()),
                    Arg::Ptr(dbeta.ptr()),
                    Arg::Ptr(coef.ptr()),
                    Arg::Ptr(self.ptr()),
                    Arg::Ptr(g.ptr()),
                    Arg::Ptr(mean.ptr()),
                    Arg::Ptr(invstd.ptr()),
                    Arg::Ptr(gamma.ptr()),
                    Arg::I64(n as i64),
                    Arg::I64(c as i64),
                    Arg::I64(inner as i64),
                    batch,
                ],
            )?;
        }
        if self.len > 0 {
            launch_on(
                dev,
                Module::Norm,
                &entry("bn_backward")?,
                self.len,
                &[
                    Arg::Ptr(dx.ptr()),
                    Arg::Ptr(self.ptr()),
                    Arg::Ptr(g.ptr()),
                    Arg::Ptr(mean.ptr()),
                    Arg::Ptr(coef.ptr()),
                    Arg::I64(c as i64),
                    Arg::I64(inner.max(1) as i64),
                    Arg::I64(self.len as i64),
                    batch,
                ],
            )?;
        }
        Ok([dx, dgamma, dbeta])
    }

    /// Writes `src`, broadcast to `view.shape` by `src_strides`, into the view.
    pub fn scatter(
        &mut self,
        view: &StridedView,
        src: &CudaStorage,
        src_strides: &[usize],
    ) -> Result<()> {
        same_device(self, src, "assignment")?;
        let n: usize = view.shape.iter().product();
        if n == 0 {
            return Ok(());
        }
        let dst = view_arg(view.offset, &view.shape, &view.strides)?;
        let src_strides: Vec<isize> = src_strides.iter().map(|&s| s as isize).collect();
        let src_view = view_arg(0, &view.shape, &src_strides)?;
        let entry = kernels::scatter_entry(self.dtype);
        self.launch(
            Module::Copy,
            &entry,
            n,
            &[
                Arg::Ptr(self.ptr()),
                Arg::View(dst),
                Arg::Ptr(src.ptr()),
                Arg::View(src_view),
                Arg::I64(n as i64),
            ],
        )
    }

    /// Joins parts that each contribute `chunks[i]` contiguous elements per outer step: each
    /// part is scattered into its column window of the (outer, total) result.
    pub fn concat(parts: &[&CudaStorage], chunks: &[usize], outer: usize) -> Result<CudaStorage> {
        let Some(first) = parts.first() else {
            return Err(RuntimeError::Value("concat: no arrays to join".into()));
        };
        let total: usize = chunks.iter().sum();
        let mut out = CudaStorage::alloc(first.device(), outer * total, first.dtype)?;
        let mut column = 0;
        for (part, &chunk) in parts.iter().zip(chunks) {
            same_device(first, part, "concat")?;
            let view = StridedView {
                offset: column,
                shape: vec![outer, chunk],
                strides: vec![total as isize, 1],
            };
            out.scatter(&view, part, &[chunk, 1])?;
            column += chunk;
        }
        Ok(out)
    }
}

impl CudaStorage {
    /// A fused elementwise expression as one generated kernel (compiled once per expression).
    pub fn fused(inputs: &[&CudaStorage], expr: &FusedExpr, len: usize) -> Result<CudaStorage> {
        let Some(first) = inputs.first() else {
            return Err(RuntimeError::Value(
                "fused expression with no inputs".into(),
            ));
        };
        for input in inputs {
            same_device(first, input, "fused expression")?;
        }
        let kernel = first
            .device()
            .fused_function(expr, first.dtype)?
            .filter(|kernel| kernel.inputs == inputs.len())
            .ok_or_else(|| unsupported("this fused expression", first.dtype))?;
        let out = CudaStorage::alloc(first.device(), len, first.dtype)?;
        if len > 0 {
            let mut list = Vec::with_capacity(inputs.len() + 2);
            list.push(Arg::Ptr(out.ptr()));
            list.extend(inputs.iter().map(|input| Arg::Ptr(input.ptr())));
            list.push(Arg::I64(len as i64));
            launch_function(first.device(), &kernel.function, &kernel.entry, len, &list)?;
        }
        Ok(out)
    }
}

/// One kernel argument, by value (the launch passes pointers to these).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg {
    Ptr(u64),
    I64(i64),
    I32(i32),
    U8(u8),
    F32(f32),
    F64(f64),
    View(DaView),
    Broadcast(DaBroadcast),
    Window(DaWindow),
}

pub(crate) fn launch_on(
    device: &Arc<CudaDevice>,
    module: Module,
    entry: &str,
    n: usize,
    list: &[Arg],
) -> Result<()> {
    let function = device.function(module, entry)?;
    launch_function(device, &function, entry, n, list)
}

/// A kernel of kernels/norm.cu that gives each of `blocks` channels one block of
/// `kernels::BLOCK` threads (its shared-memory tree is that size).
fn launch_blocks(device: &Arc<CudaDevice>, entry: &str, blocks: usize, list: &[Arg]) -> Result<()> {
    let function = device.function(Module::Norm, entry)?;
    device.bind()?;
    let mut args = device.stream.launch_builder(&function);
    push_args(&mut args, list);
    let config = cudarc::driver::LaunchConfig {
        grid_dim: ((blocks as u32).clamp(1, 65_535), 1, 1),
        block_dim: (kernels::BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the argument list matches the kernel's signature in kernels/norm.cu, with pointers
    // to live buffers of the sizes it reads.
    unsafe { args.launch(config) }.map_err(|e| driver_error(entry, e))?;
    Ok(())
}

fn launch_function(
    device: &Arc<CudaDevice>,
    function: &cudarc::driver::CudaFunction,
    entry: &str,
    n: usize,
    list: &[Arg],
) -> Result<()> {
    device.bind()?;
    let mut args = device.stream.launch_builder(function);
    push_args(&mut args, list);
    // SAFETY: every caller pushes the argument list its kernel declares, with pointers to live
    // buffers of the sizes the kernel reads.
    unsafe { args.launch(launch_config(n)) }.map_err(|e| driver_error(entry, e))?;
    Ok(())
}

fn push_args<'a>(args: &mut cudarc::driver::LaunchArgs<'a>, list: &'a [Arg]) {
    for arg in list {
        match arg {
            Arg::Ptr(v) => args.arg(v),
            Arg::I64(v) => args.arg(v),
            Arg::I32(v) => args.arg(v),
            Arg::U8(v) => args.arg(v),
            Arg::F32(v) => args.arg(v),
            Arg::F64(v) => args.arg(v),
            Arg::View(v) => args.arg(v),
            Arg::Broadcast(v) => args.arg(v),
            Arg::Window(v) => args.arg(v),
        };
    }
}

fn even_stride(offsets: &[usize]) -> Option<usize> {
    match offsets {
        [] | [_] => Some(0),
        [a, b, ..] => {
            let stride = b.checked_sub(*a)?;
            offsets
                .windows(2)
                .all(|w| w[1].checked_sub(w[0]) == Some(stride))
                .then_some(stride)
        }
    }
}

fn same_device(a: &CudaStorage, b: &CudaStorage, op: &str) -> Result<()> {
    if Arc::ptr_eq(a.device(), b.device()) {
        Ok(())
    } else {
        Err(RuntimeError::DeviceMismatch {
            op: op.to_string(),
            first: a.device().device(),
            second: b.device().device(),
        })
    }
}

fn unsupported(op: &str, dtype: DType) -> RuntimeError {
    RuntimeError::DType(format!(
        "{op} is not available for {dtype} on a CUDA GPU; convert with astype('float32') first"
    ))
}

fn bytes_of<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: T is a plain number type (f32/f64/i32/i64); any byte pattern of it is readable.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

fn bytes_of_mut<T: Copy>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: T is a plain number type (f32/f64/i32/i64): every byte pattern is a valid value.
    unsafe {
        std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), std::mem::size_of_val(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_strides() {
        assert_eq!(even_stride(&[0, 6, 12]), Some(6));
        assert_eq!(even_stride(&[0, 0, 0]), Some(0));
        assert_eq!(even_stride(&[0, 6, 7]), None);
        assert_eq!(even_stride(&[3]), Some(0));
    }

    #[test]
    fn row_major_detection() {
        assert!(is_row_major(&[2, 3], &[3, 1]));
        assert!(!is_row_major(&[2, 3], &[0, 1]));
        assert!(is_row_major(&[1, 3], &[0, 1]));
    }

    #[test]
    fn view_layout_matches_the_kernel_struct() {
        // i64 offset, i32 rank (+4 padding), 8 + 8 i64: 8 + 8 + 128 = 144 bytes, as in C.
        assert_eq!(std::mem::size_of::<DaView>(), 144);
        assert_eq!(std::mem::size_of::<DaBroadcast>(), 8 + 3 * 64);
        assert_eq!(std::mem::size_of::<DaWindow>(), 12 * 8);
        assert!(view_arg(0, &[1; 9], &[1; 9]).is_err());
    }
}
