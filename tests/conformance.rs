//! Backend conformance: the same ops on every backend present, each compared with the CPU.
//!
//! One macro, `conformance!`, instantiates every case once per backend (candle style): `cpu`
//! (compares the CPU with itself, which checks the cases are deterministic), `sim` (a simulated
//! GPU, asynchronous, always present) and `cuda` (a real GPU; compiled always, and each test
//! returns early with a note when `backend::cuda_backend::device_count()` is 0). A case builds arrays on
//! the device it is given and returns its results; `check` runs it on cpu(0) and on the
//! backend's device and compares shape, dtype, device and values.
//!
//! On a GPU machine: `cargo test --test conformance cuda` (see README).
use devarray::backend::cuda as cuda_backend;

#[path = "cuda/emu.rs"]
mod emu;

/// The `cuda` cases again, in a child process whose CUDA driver, cuBLAS, cuRAND and NCCL are the
/// emulator (tests/cuda_emu) running the real NVRTC output: two cards of sm_90, one pass of
/// sm_80 PTX, and one in chaos mode (random stream delays, pinned-buffer reuse checks).
#[test]
fn the_cuda_cases_pass_on_the_emulated_driver() {
    emu::rerun_under_emulator("cuda", &[]);
    emu::rerun_under_emulator("cuda", &[("CUDA_EMU_SM", "80")]);
    emu::rerun_under_emulator("cuda", &[("CUDA_EMU_CHAOS", "1")]);
}

/// What the CUDA probe found, printed for the GPU kit's report (tests/gpu/kit.py runs this with
/// `--nocapture`): libraries, versions, notes, and every card with its architecture and the
/// kernels' compile target. With DEVARRAY_REQUIRE_CUDA set, every card the driver reports must
/// open.
#[test]
fn cuda_probe_report() {
    let probe = cuda_backend::probe();
    eprintln!("KIT-PROBE {probe:?}");
    for card in cuda_backend::devices() {
        eprintln!(
            "KIT-CARD gpu({}) {:?}, compute capability {}.{}, {} MiB, kernels as {:?}",
            card.ordinal,
            card.name,
            card.compute_capability.0,
            card.compute_capability.1,
            card.total_memory >> 20,
            card.target()
        );
    }
    let open_errors = cuda_backend::device::open_errors();
    for error in &open_errors {
        eprintln!("KIT-OPEN-ERROR {error}");
    }
    if std::env::var_os("DEVARRAY_REQUIRE_CUDA").is_some() {
        assert!(
            probe.device_count > 0 && open_errors.is_empty(),
            "DEVARRAY_REQUIRE_CUDA is set: {probe:?} {open_errors:?}"
        );
    }
}

/// The backend's own multi-GPU paths, below the runtime: NCCL all-reduce across two cards and
/// a peer copy, on a machine (or emulator) with two CUDA GPUs.
mod cuda_backend_paths {
    use super::cuda_backend::{self, CudaAllReduce, CudaStorage};
    use devarray::backend::AllReduce;
    use devarray::runtime::HostData;

    fn two_cards() -> Option<(
        std::sync::Arc<cuda_backend::CudaDevice>,
        std::sync::Arc<cuda_backend::CudaDevice>,
    )> {
        if cuda_backend::device_count() < 2 {
            return None;
        }
        Some((cuda_backend::device(0).ok()?, cuda_backend::device(1).ok()?))
    }

    #[test]
    fn all_reduce_sums_across_two_cards() {
        let Some((a, b)) = two_cards() else { return };
        for (x, y, want) in [
            (
                HostData::F32(vec![1.0, 2.5, -3.0]),
                HostData::F32(vec![10.0, 0.5, 3.0]),
                HostData::F32(vec![11.0, 3.0, 0.0]),
            ),
            (
                HostData::I64(vec![1, 2]),
                HostData::I64(vec![40, -2]),
                HostData::I64(vec![41, 0]),
            ),
        ] {
            let mut parts = vec![
                CudaStorage::from_host(&a, &x).expect("to gpu(0)"),
                CudaStorage::from_host(&b, &y).expect("to gpu(1)"),
            ];
            CudaAllReduce
                .all_reduce_sum(&mut parts)
                .expect("all-reduce");
            for part in &parts {
                assert_eq!(part.to_host().expect("to host"), want);
            }
        }
    }

    #[test]
    fn peer_copy_keeps_values_and_the_source_usable() {
        let Some((a, b)) = two_cards() else { return };
        let data = HostData::F64((0..1000).map(f64::from).collect());
        let src = CudaStorage::from_host(&a, &data).expect("to gpu(0)");
        let copy = src.copy_to_device(&b).expect("peer copy");
        assert_eq!(copy.to_host().expect("read"), data);
        assert_eq!(src.to_host().expect("read"), data);
    }
}
use devarray::nn::autograd::Tape;
use devarray::nn::conv::{self, PoolKind, Window};
use devarray::nn::norm::{self, RunningUpdate};
use devarray::runtime::{
    Array, BinaryOp, DType, Device, HostData, IndexItem, Operand, ReduceOp, Runtime, RuntimeConfig,
    Scalar, UnaryOp,
};

#[derive(Clone, Copy, Debug)]
enum Backend {
    Cpu,
    Sim,
    Cuda,
}

impl Backend {
    /// A runtime that has this backend and the device to test on.
    fn setup(self) -> Option<(Runtime, Device)> {
        match self {
            Backend::Cpu => Some((Runtime::new(RuntimeConfig::default()), Device::cpu(0))),
            Backend::Sim => Some((
                Runtime::new(RuntimeConfig {
                    sim_gpus: 2,
                    ..RuntimeConfig::default()
                }),
                // gpu(1): nothing may assume the first GPU.
                Device::gpu(1),
            )),
            Backend::Cuda => {
                if cuda_backend::device_count() == 0 {
                    // On a GPU machine's test run a missing GPU must not pass as a skip.
                    assert!(
                        std::env::var_os("DEVARRAY_REQUIRE_CUDA").is_none(),
                        "DEVARRAY_REQUIRE_CUDA is set but there is no usable CUDA GPU: {:?}",
                        cuda_backend::notes()
                    );
                    return None;
                }
                // No simulated GPUs: the runtime's GPUs are the machine's cards. The last one,
                // so that a machine with two tests a GPU other than gpu(0).
                let rt = Runtime::new(RuntimeConfig::default());
                let last = rt.num_gpus().checked_sub(1)?;
                Some((rt, Device::gpu(last)))
            }
        }
    }

    /// Largest relative difference allowed against the CPU: the simulated GPU runs the CPU's
    /// kernels, so it must agree exactly; CUDA's math library and summation order differ in
    /// the last bits.
    fn tolerance(self) -> f64 {
        match self {
            Backend::Cpu | Backend::Sim => 0.0,
            Backend::Cuda => 1e-5,
        }
    }

    /// Whether random samples are MXNet's CPU sequence. A CUDA GPU draws with cuRAND, so its
    /// samples (outputs named `random ...`) are checked for shape, dtype, range and
    /// reproducibility instead of values.
    fn same_random_stream(self) -> bool {
        !matches!(self, Backend::Cuda)
    }
}

type Outputs = Vec<(&'static str, Array)>;
type Case = fn(&Runtime, Device) -> Outputs;

fn check(case: Case, backend: Backend) {
    let Some((rt, device)) = backend.setup() else {
        eprintln!(
            "note: {backend:?} is not available here (no GPU: {:?}); skipped",
            cuda_backend::notes()
        );
        return;
    };
    let reference_rt = Runtime::new(RuntimeConfig::default());
    let expected = case(&reference_rt, Device::cpu(0));
    let actual = case(&rt, device);
    assert_eq!(expected.len(), actual.len());
    for ((name, want), (_, got)) in expected.iter().zip(&actual) {
        assert_eq!(
            got.device(),
            device,
            "{name}: result is on the wrong device"
        );
        assert_eq!(got.shape(), want.shape(), "{name}: shape");
        assert_eq!(got.dtype(), want.dtype(), "{name}: dtype");
        let (w, g) = (want.to_host(), got.to_host());
        if name.starts_with("random") && !backend.same_random_stream() {
            // Only the properties the case states by its own outputs (ranges, reseeding) are
            // compared, through the outputs that are not named `random ...`.
            continue;
        }
        if backend.tolerance() == 0.0 {
            // Bit for bit (a NaN equals the same NaN).
            assert!(
                g.dtype() == w.dtype() && g.to_le_bytes() == w.to_le_bytes(),
                "{name}: values {g:?} vs {w:?}"
            );
        } else {
            for (a, b) in w.to_f64_vec().iter().zip(g.to_f64_vec()) {
                let scale = a.abs().max(1.0);
                // Equal infinities (inf - inf is NaN) and NaN against NaN agree.
                let same = *a == b || (a.is_nan() && b.is_nan());
                assert!(
                    same || (a - b).abs() <= backend.tolerance() * scale,
                    "{name}: {a} vs {b}"
                );
            }
        }
    }
    rt.synchronize().expect("no queued error");
}

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod cpu {
            $( #[test] fn $case() { super::check(super::$case, super::Backend::Cpu) } )*
        }
        mod sim {
            $( #[test] fn $case() { super::check(super::$case, super::Backend::Sim) } )*
        }
        mod cuda {
            $( #[test] fn $case() { super::check(super::$case, super::Backend::Cuda) } )*
        }
    };
}

conformance!(
    creation,
    elementwise_with_broadcasting,
    reductions_with_axes,
    matmul_and_dot,
    indexing_and_set_index,
    concat_and_stack,
    take_and_scatter_along_axis,
    astype_and_clip,
    random_with_seed,
    copies_between_devices,
    fused_expressions,
    convolution_and_gradients,
    pooling_and_gradients,
    batch_norm_and_gradients,
    small_ints_and_half,
);

fn f32s(rt: &Runtime, d: Device, data: &[f64], shape: &[usize]) -> Array {
    rt.from_f64(data.to_vec(), shape, DType::Float32, d)
        .expect("array")
}

fn range(rt: &Runtime, d: Device, n: usize, shape: &[isize]) -> Array {
    rt.arange(0.0, n as f64, 1.0, DType::Float32, d)
        .and_then(|a| a.reshape(shape))
        .expect("arange")
}

fn bin(op: BinaryOp, a: &Array, b: &Array) -> Array {
    Array::binary(op, Operand::Array(a), Operand::Array(b)).expect("binary")
}

fn bin_s(op: BinaryOp, a: &Array, s: Scalar) -> Array {
    Array::binary(op, Operand::Array(a), Operand::Scalar(s)).expect("binary with scalar")
}

fn creation(rt: &Runtime, d: Device) -> Outputs {
    vec![
        ("ones", rt.ones(&[2, 3], DType::Float32, d).unwrap()),
        ("zeros i64", rt.zeros(&[4], DType::Int64, d).unwrap()),
        (
            "full f64",
            rt.full(&[2, 2], 2.5, DType::Float64, d).unwrap(),
        ),
        (
            "arange",
            rt.arange(1.0, 4.0, 0.5, DType::Float32, d).unwrap(),
        ),
        ("eye k=1", rt.eye(3, 4, 1, DType::Float32, d).unwrap()),
        (
            "from host",
            rt.from_host(HostData::I32(vec![1, -2, 3]), &[3], d)
                .unwrap(),
        ),
        ("empty", rt.zeros(&[0, 3], DType::Float32, d).unwrap()),
    ]
}

fn elementwise_with_broadcasting(rt: &Runtime, d: Device) -> Outputs {
    let a = range(rt, d, 6, &[2, 3]);
    let col = f32s(rt, d, &[10.0, 20.0], &[2, 1]);
    let row = f32s(rt, d, &[1.0, -2.0, 3.0], &[3]);
    let ints = rt
        .from_host(HostData::I64(vec![7, -7, 9]), &[3], d)
        .unwrap();
    vec![
        ("add col", bin(BinaryOp::Add, &a, &col)),
        ("mul row", bin(BinaryOp::Mul, &a, &row)),
        ("sub scalar", bin_s(BinaryOp::Sub, &a, Scalar::Float(0.5))),
        ("div", bin(BinaryOp::Div, &row, &a)),
        ("pow", bin_s(BinaryOp::Pow, &a, Scalar::Int(2))),
        (
            "floordiv ints",
            bin_s(BinaryOp::FloorDiv, &ints, Scalar::Int(2)),
        ),
        ("compare", bin(BinaryOp::Gt, &a, &row)),
        ("maximum", bin(BinaryOp::Maximum, &a, &col)),
        ("exp", a.unary(UnaryOp::Exp).unwrap()),
        ("sqrt", a.unary(UnaryOp::Sqrt).unwrap()),
        ("tanh", row.unary(UnaryOp::Tanh).unwrap()),
        ("sigmoid", row.unary(UnaryOp::Sigmoid).unwrap()),
        ("relu", row.unary(UnaryOp::Relu).unwrap()),
        ("neg ints", ints.unary(UnaryOp::Neg).unwrap()),
    ]
}

/// A fused expression equals its ops run one at a time, bit for bit, on the device itself (and
/// the device agrees with the CPU like any other op). Large enough to span parallel tasks.
fn fused_expressions(rt: &Runtime, d: Device) -> Outputs {
    use devarray::runtime::FusedExpr::{self, Binary, Input, Scalar as S, Unary};
    let n = 100_003;
    let mut outputs = Vec::new();
    for dtype in [DType::Float32, DType::Float64] {
        let z = rt
            .arange(-40.0, -40.0 + n as f64 * 0.001, 0.001, dtype, d)
            .unwrap();
        let y = rt.arange(0.0, n as f64, 1.0, dtype, d).unwrap();
        let y = bin_s(BinaryOp::Sub, &y, Scalar::Float(50_000.5));
        // (z + 2).exp() * y and y / (z * z).sqrt() - 1.5
        let bench: FusedExpr = Binary(
            BinaryOp::Mul,
            Box::new(Unary(
                UnaryOp::Exp,
                Box::new(Binary(BinaryOp::Add, Box::new(Input(0)), Box::new(S(2.0)))),
            )),
            Box::new(Input(1)),
        );
        let other = Binary(
            BinaryOp::Sub,
            Box::new(Binary(
                BinaryOp::Div,
                Box::new(Input(1)),
                Box::new(Unary(
                    UnaryOp::Sqrt,
                    Box::new(Binary(
                        BinaryOp::Mul,
                        Box::new(Input(0)),
                        Box::new(Input(0)),
                    )),
                )),
            )),
            Box::new(S(1.5)),
        );
        let inputs = [z.clone(), y.clone()];
        let fused_bench = Array::fused(&bench, &inputs).unwrap().expect("fuses");
        let fused_other = Array::fused(&other, &inputs).unwrap().expect("fuses");
        let unfused_bench = bin(
            BinaryOp::Mul,
            &bin_s(BinaryOp::Add, &z, Scalar::Int(2))
                .unary(UnaryOp::Exp)
                .unwrap(),
            &y,
        );
        let unfused_other = bin_s(
            BinaryOp::Sub,
            &bin(
                BinaryOp::Div,
                &y,
                &bin(BinaryOp::Mul, &z, &z).unary(UnaryOp::Sqrt).unwrap(),
            ),
            Scalar::Float(1.5),
        );
        assert_eq!(fused_bench.to_host(), unfused_bench.to_host(), "{dtype}");
        assert_eq!(fused_other.to_host(), unfused_other.to_host(), "{dtype}");
        outputs.push(("fused (z + 2).exp() * y", fused_bench));
        outputs.push(("fused y / (z * z).sqrt() - 1.5", fused_other));
        // The ops that `np.tanh(x)`, `nd.relu(x)`, `abs(x)`... fuse as:
        // (np.tanh(z) + nd.sigmoid(y)).relu() * abs(y).log() - (-z).square()
        let un = |op: UnaryOp, x: FusedExpr| Unary(op, Box::new(x));
        let bi = |op: BinaryOp, a: FusedExpr, b: FusedExpr| Binary(op, Box::new(a), Box::new(b));
        let calls = bi(
            BinaryOp::Sub,
            bi(
                BinaryOp::Mul,
                un(
                    UnaryOp::Relu,
                    bi(
                        BinaryOp::Add,
                        un(UnaryOp::Tanh, Input(0)),
                        un(UnaryOp::Sigmoid, Input(1)),
                    ),
                ),
                un(UnaryOp::Log, un(UnaryOp::Abs, Input(1))),
            ),
            un(UnaryOp::Square, un(UnaryOp::Neg, Input(0))),
        );
        let fused_calls = Array::fused(&calls, &inputs).unwrap().expect("fuses");
        let one = |x: &Array, op: UnaryOp| x.unary(op).expect("unary");
        let unfused_calls = bin(
            BinaryOp::Sub,
            &bin(
                BinaryOp::Mul,
                &one(
                    &bin(
                        BinaryOp::Add,
                        &one(&z, UnaryOp::Tanh),
                        &one(&y, UnaryOp::Sigmoid),
                    ),
                    UnaryOp::Relu,
                ),
                &one(&one(&y, UnaryOp::Abs), UnaryOp::Log),
            ),
            &one(&one(&z, UnaryOp::Neg), UnaryOp::Square),
        );
        assert_eq!(fused_calls.to_host(), unfused_calls.to_host(), "{dtype}");
        outputs.push(("fused elementwise calls", fused_calls));
    }
    // Inputs that do not fit one pass are refused (the caller runs the ops one by one).
    let ints = rt.arange(0.0, 4.0, 1.0, DType::Int32, d).unwrap();
    let more_ints = rt.arange(1.0, 5.0, 1.0, DType::Int32, d).unwrap();
    let small = rt.arange(0.0, 3.0, 1.0, DType::Float32, d).unwrap();
    let four = rt.arange(0.0, 4.0, 1.0, DType::Float32, d).unwrap();
    let add = Binary(BinaryOp::Add, Box::new(Input(0)), Box::new(Input(1)));
    assert!(Array::fused(&add, &[ints, more_ints]).unwrap().is_none());
    assert!(Array::fused(&add, &[small, four]).unwrap().is_none());
    outputs
}

fn reductions_with_axes(rt: &Runtime, d: Device) -> Outputs {
    let a = range(rt, d, 24, &[2, 3, 4]);
    vec![
        ("sum all", a.reduce(ReduceOp::Sum, None, false).unwrap()),
        (
            "sum axis 1",
            a.reduce(ReduceOp::Sum, Some(&[1]), false).unwrap(),
        ),
        (
            "mean axes 0,2 keepdims",
            a.reduce(ReduceOp::Mean, Some(&[0, 2]), true).unwrap(),
        ),
        (
            "max axis -1",
            a.reduce(ReduceOp::Max, Some(&[-1]), false).unwrap(),
        ),
        ("min", a.reduce(ReduceOp::Min, None, true).unwrap()),
        (
            "argmax axis 1",
            a.reduce(ReduceOp::ArgMax, Some(&[1]), false).unwrap(),
        ),
        ("norm", a.norm(None, None, false).unwrap()),
        (
            "norm ord 1 axis 0",
            a.norm(Some(1.0), Some(&[0]), false).unwrap(),
        ),
    ]
}

fn matmul_and_dot(rt: &Runtime, d: Device) -> Outputs {
    let a = range(rt, d, 6, &[2, 3]);
    let b = range(rt, d, 12, &[3, 4]);
    let batch = range(rt, d, 24, &[2, 3, 4]);
    let v = f32s(rt, d, &[1.0, 2.0, 3.0], &[3]);
    let square = range(rt, d, 10000, &[100, 100]);
    vec![
        ("matmul", a.matmul(&b).unwrap()),
        ("batched", a.matmul(&batch).unwrap()),
        ("matrix-vector", a.matmul(&v).unwrap()),
        ("dot vectors", v.dot(&v).unwrap()),
        ("100x100", square.matmul(&square).unwrap()),
        ("transpose", b.transpose(None).unwrap()),
    ]
}

fn indexing_and_set_index(rt: &Runtime, d: Device) -> Outputs {
    let a = range(rt, d, 12, &[3, 4]);
    let slice = |start, stop, step| IndexItem::Slice { start, stop, step };
    let x = a.copy_to(rt, d).unwrap();
    x.set_index(
        &[IndexItem::Int(1), slice(None, None, Some(2))],
        Operand::Scalar(Scalar::Int(-1)),
    )
    .unwrap();
    let rows = rt.from_host(HostData::I64(vec![2, 0]), &[2], d).unwrap();
    let mask = bin_s(BinaryOp::Gt, &a, Scalar::Int(6));
    let y = a.copy_to(rt, d).unwrap();
    let src = f32s(rt, d, &[5.0, 6.0, 7.0, 8.0], &[4]);
    y.set_index(&[slice(Some(1), None, None)], Operand::Array(&src))
        .unwrap();
    let overlap = a.copy_to(rt, d).unwrap();
    let shifted = overlap.index(&[slice(None, Some(-1), None)]).unwrap();
    overlap
        .set_index(&[slice(Some(1), None, None)], Operand::Array(&shifted))
        .unwrap();
    vec![
        ("row", a.index(&[IndexItem::Int(1)]).unwrap()),
        (
            "column slice",
            a.index(&[slice(None, None, None), slice(Some(1), Some(3), None)])
                .unwrap(),
        ),
        ("reversed", a.index(&[slice(None, None, Some(-1))]).unwrap()),
        ("by int array", a.index(&[IndexItem::Array(rows)]).unwrap()),
        ("by mask", a.index(&[IndexItem::Array(mask)]).unwrap()),
        ("set scalar", x),
        ("set broadcast array", y),
        ("set overlapping", overlap),
    ]
}

fn concat_and_stack(rt: &Runtime, d: Device) -> Outputs {
    let a = range(rt, d, 6, &[2, 3]);
    let b = bin_s(BinaryOp::Mul, &a, Scalar::Int(10));
    let c = range(rt, d, 3, &[1, 3]);
    vec![
        (
            "concat 0",
            Array::concat(&[a.clone(), c.clone(), b.clone()], 0).unwrap(),
        ),
        (
            "concat 1",
            Array::concat(&[a.clone(), b.clone()], 1).unwrap(),
        ),
        ("stack 0", Array::stack(&[a.clone(), b.clone()], 0).unwrap()),
        ("stack -1", Array::stack(&[a, b], -1).unwrap()),
    ]
}

/// The selection primitives (`gather`, `index_select`, `where`, a gather's gradient): picks
/// along the middle axis with repeats and negative positions, scatters that overwrite and add
/// at repeated positions, in every dtype's kernel.
fn take_and_scatter_along_axis(rt: &Runtime, d: Device) -> Outputs {
    let a = range(rt, d, 24, &[2, 3, 4]);
    let index = rt
        .from_host(
            HostData::I64(vec![2, 0, -1, 1, 0, 0, 2, 2, 1, 1, 1, 0, 0, 1, 2, -3]),
            &[2, 2, 4],
            d,
        )
        .unwrap();
    let taken = a.take_along_axis(&index, 1).unwrap();
    let ints = a.astype(DType::Int64).unwrap();
    let taken_int = ints.take_along_axis(&index, 1).unwrap();
    let mask = bin_s(BinaryOp::Gt, &a, Scalar::Int(10));
    let taken_bool = mask.take_along_axis(&index, 1).unwrap();
    let src = bin_s(BinaryOp::Add, &taken, Scalar::Int(100));
    let added = rt.zeros(&[2, 3, 4], DType::Float32, d).unwrap();
    added.scatter_along_axis(&index, &src, 1, true).unwrap();
    let written = a.copy_to(rt, d).unwrap();
    written.scatter_along_axis(&index, &src, 1, false).unwrap();
    let written_int = ints.copy_to(rt, d).unwrap();
    written_int
        .scatter_along_axis(&index, &taken_int, 1, false)
        .unwrap();
    vec![
        ("take f32", taken),
        ("take i64", taken_int),
        ("take bool", taken_bool),
        ("scatter add", added),
        ("scatter write", written),
        ("scatter write i64", written_int),
    ]
}

fn astype_and_clip(rt: &Runtime, d: Device) -> Outputs {
    let a = f32s(rt, d, &[-1.5, 0.0, 2.7, 9.0], &[4]);
    vec![
        ("to int32", a.astype(DType::Int32).unwrap()),
        ("to f64", a.astype(DType::Float64).unwrap()),
        ("to bool", a.astype(DType::Bool).unwrap()),
        ("clip", a.clip(Some(0.0), Some(3.0)).unwrap()),
        ("reshape", a.reshape(&[2, -1]).unwrap()),
    ]
}

/// uint8, int8, int16, the unsigned types and float16: NumPy's x86 casts (wrapping, NaN and
/// out-of-range values to the minimum), wrapping integer arithmetic, reductions, fills, data
/// movement, and float16 computed through float32 (CUDA's conversion is its own bit code).
fn small_ints_and_half(rt: &Runtime, d: Device) -> Outputs {
    let wide = rt
        .from_f64(
            vec![300.7, -1.0, 3e9, -3e9, 0.5, f64::NAN, 65519.0, 1e-6],
            &[8],
            DType::Float64,
            d,
        )
        .unwrap();
    let mut out: Outputs = Vec::new();
    for to in [
        DType::UInt8,
        DType::Int8,
        DType::Int16,
        DType::UInt16,
        DType::Int32,
        DType::UInt32,
        DType::UInt64,
        DType::Float16,
    ] {
        out.push(("cast from float64", wide.astype(to).unwrap()));
        out.push((
            "cast from float32",
            wide.astype(DType::Float32).unwrap().astype(to).unwrap(),
        ));
    }
    let u = rt
        .from_host(HostData::U8(vec![1, 200, 255, 7, 0, 128]), &[2, 3], d)
        .unwrap();
    let i = rt
        .from_host(HostData::I8(vec![-128, -7, 5, 127, 3, -1]), &[2, 3], d)
        .unwrap();
    let row16 = rt
        .from_host(HostData::I16(vec![-300, 2, 30000]), &[3], d)
        .unwrap();
    out.push(("u8 add wraps", bin(BinaryOp::Add, &u, &u)));
    out.push(("u8 mul scalar", bin_s(BinaryOp::Mul, &u, Scalar::Int(3))));
    out.push(("u8 neg", u.unary(UnaryOp::Neg).unwrap()));
    out.push(("i8 floordiv", bin_s(BinaryOp::FloorDiv, &i, Scalar::Int(2))));
    out.push(("i8 mod", bin_s(BinaryOp::Mod, &i, Scalar::Int(-3))));
    out.push(("i8 abs", i.unary(UnaryOp::Abs).unwrap()));
    out.push((
        "i16 broadcast max",
        bin(BinaryOp::Maximum, &u.astype(DType::Int16).unwrap(), &row16),
    ));
    out.push((
        "u8 > i8 as i16",
        bin(
            BinaryOp::Gt,
            &u.astype(DType::Int16).unwrap(),
            &i.astype(DType::Int16).unwrap(),
        ),
    ));
    out.push(("u8 and", bin_s(BinaryOp::And, &u, Scalar::Int(0x0f))));
    out.push((
        "u8 sum wraps",
        u.reduce(ReduceOp::Sum, None, false).unwrap(),
    ));
    out.push((
        "u8 sum axis 0",
        u.reduce(ReduceOp::Sum, Some(&[0]), false).unwrap(),
    ));
    out.push((
        "u8 argmax",
        u.reduce(ReduceOp::ArgMax, Some(&[1]), false).unwrap(),
    ));
    out.push((
        "i8 min",
        i.reduce(ReduceOp::Min, Some(&[0]), false).unwrap(),
    ));
    out.push((
        "u8 to u64 sum",
        u.astype(DType::UInt64)
            .unwrap()
            .reduce(ReduceOp::Sum, None, false)
            .unwrap(),
    ));
    out.push((
        "u8 transpose",
        u.transpose(None).unwrap().astype(DType::UInt8).unwrap(),
    ));
    out.push(("u8 fill", rt.full(&[3], 300.0, DType::UInt8, d).unwrap()));
    out.push(("u32 fill", rt.full(&[2], 4e9, DType::UInt32, d).unwrap()));
    out.push(("f16 fill", rt.full(&[2], 0.1, DType::Float16, d).unwrap()));
    out.push((
        "i16 concat",
        Array::concat(&[row16.clone(), row16.clone()], 0).unwrap(),
    ));
    let h = rt
        .from_f64(
            vec![0.1, 2.5, 1000.7, -3.0, 65504.0, 1e-5],
            &[2, 3],
            DType::Float16,
            d,
        )
        .unwrap();
    out.push(("f16 add", bin(BinaryOp::Add, &h, &h)));
    out.push((
        "f16 mul scalar",
        bin_s(BinaryOp::Mul, &h, Scalar::Float(1.5)),
    ));
    out.push((
        "f16 div",
        bin(
            BinaryOp::Div,
            &h,
            &h.transpose(None).unwrap().reshape(&[2, 3]).unwrap(),
        ),
    ));
    out.push((
        "f16 sqrt",
        h.unary(UnaryOp::Abs).unwrap().unary(UnaryOp::Sqrt).unwrap(),
    ));
    out.push((
        "f16 sum axis 1",
        h.reduce(ReduceOp::Sum, Some(&[1]), false).unwrap(),
    ));
    out.push((
        "f16 mean",
        h.reduce(ReduceOp::Mean, Some(&[0]), false).unwrap(),
    ));
    out.push(("f16 max", h.reduce(ReduceOp::Max, None, false).unwrap()));
    out.push(("f16 compare", bin_s(BinaryOp::Lt, &h, Scalar::Float(2.0))));
    out.push(("f16 matmul", h.matmul(&h.transpose(None).unwrap()).unwrap()));
    out.push(("f16 to u8", h.astype(DType::UInt8).unwrap()));
    out.push(("f16 to f64", h.astype(DType::Float64).unwrap()));
    out
}

fn random_with_seed(rt: &Runtime, d: Device) -> Outputs {
    rt.seed(42);
    let u = rt.uniform(-1.0, 1.0, &[3, 4], DType::Float32, d).unwrap();
    let n = rt.normal(0.0, 2.0, &[5], DType::Float64, d).unwrap();
    rt.seed(42);
    let again = rt.uniform(-1.0, 1.0, &[3, 4], DType::Float32, d).unwrap();
    // Backend-independent facts, compared on every backend: the bounds hold and a reseed
    // repeats the sequence.
    let in_range = bin(
        BinaryOp::And,
        &bin_s(BinaryOp::Ge, &u, Scalar::Float(-1.0)),
        &bin_s(BinaryOp::Le, &u, Scalar::Float(1.0)),
    )
    .reduce(ReduceOp::Min, None, false)
    .unwrap();
    let repeats = bin(BinaryOp::Eq, &u, &again)
        .reduce(ReduceOp::Min, None, false)
        .unwrap();
    vec![
        ("random uniform", u),
        ("random normal", n),
        ("random reseeded", again),
        ("uniform within bounds", in_range),
        ("reseed repeats the samples", repeats),
    ]
}

fn copies_between_devices(rt: &Runtime, d: Device) -> Outputs {
    let host = rt.ones(&[2, 3], DType::Float32, Device::cpu(0)).unwrap();
    let on = host.copy_to(rt, d).unwrap();
    let doubled = bin_s(BinaryOp::Mul, &on, Scalar::Int(2));
    let back = doubled.copy_to(rt, Device::cpu(0)).unwrap();
    let into = rt.zeros(&[2, 3], DType::Float64, d).unwrap();
    back.copy_into(&into).unwrap();
    let same = on.as_in_device(rt, d).unwrap();
    assert!(
        same.same(&on),
        "as_in_device to its own device is the same array"
    );
    let round_trip = back.copy_to(rt, d).unwrap();
    vec![("copy_into", into), ("round trip", round_trip)]
}

/// Values in [-1, 1) that differ from element to element and from input to input.
fn varied(rt: &Runtime, d: Device, shape: &[usize], seed: u64, dtype: DType) -> Array {
    let n: usize = shape.iter().product();
    let data: Vec<f64> = (0..n)
        .map(|i| ((i as u64 * 2654435761 + seed * 97) % 1000) as f64 / 500.0 - 1.0)
        .collect();
    rt.from_f64(data, shape, dtype, d).expect("input")
}

type Layer<'a> = &'a dyn Fn(&Runtime, &mut Tape, &[Array]) -> devarray::runtime::Result<Array>;

/// `f` over `inputs`, recorded: its output, then the gradient of sum(output * projection) for
/// each input (a projection, so every output element's gradient differs and a transposed or
/// misplaced one shows).
fn recorded(rt: &Runtime, inputs: &[Array], f: Layer) -> Vec<Array> {
    recorded_projected(rt, inputs, f, false)
}

/// `recorded`, with the projection's absolute value when `abs`.
fn recorded_projected(rt: &Runtime, inputs: &[Array], f: Layer, abs: bool) -> Vec<Array> {
    let mut tape = Tape::default();
    for x in inputs {
        tape.attach_grad(rt, x, false).expect("attach");
    }
    let prev = tape.set_recording(true, true);
    let y = f(rt, &mut tape, inputs).expect("forward");
    let mut proj = varied(rt, y.device(), y.shape(), 7, y.dtype());
    if abs {
        proj = proj.unary(devarray::runtime::UnaryOp::Abs).expect("abs");
    }
    let head = tape
        .binary(BinaryOp::Mul, Operand::Array(&y), Operand::Array(&proj))
        .expect("mul");
    let head = tape.reduce(&head, ReduceOp::Sum, None, false).expect("sum");
    tape.restore(prev);
    tape.backward(rt, &head, None, false).expect("backward");
    let grads = inputs.iter().map(|x| tape.grad(x).expect("grad"));
    std::iter::once(y).chain(grads).collect()
}

/// `recorded` on inputs of `shapes` on `d`, each output named.
fn with_gradients(
    rt: &Runtime,
    d: Device,
    dtype: DType,
    shapes: &[&[usize]],
    names: [&'static str; 4],
    f: Layer,
) -> Outputs {
    let inputs: Vec<Array> = shapes
        .iter()
        .enumerate()
        .map(|(k, s)| varied(rt, d, s, k as u64, dtype))
        .collect();
    names.into_iter().zip(recorded(rt, &inputs, f)).collect()
}

/// Convolutions (im2col + GEMM; on CUDA kernels/window.cu and cuBLAS) and their gradients.
fn convolution_and_gradients(rt: &Runtime, d: Device) -> Outputs {
    let win = Window {
        kernel: [3, 2],
        stride: [2, 1],
        pad: [(1, 1), (2, 2)],
        dilation: [1, 2],
    };
    let mut out = with_gradients(
        rt,
        d,
        DType::Float32,
        &[&[2, 3, 7, 6], &[4, 3, 3, 2], &[4]],
        ["conv2d", "conv2d grad x", "conv2d grad w", "conv2d grad b"],
        &move |rt, t, xs| conv::conv2d(rt, t, &xs[0], &xs[1], Some(&xs[2]), &win, 1),
    );
    let grouped = Window::new([3, 3], [1, 1], [1, 1]);
    out.extend(with_gradients(
        rt,
        d,
        DType::Float64,
        &[&[1, 4, 5, 5], &[6, 2, 3, 3]],
        ["grouped f64", "grouped grad x", "grouped grad w", ""],
        &move |rt, t, xs| conv::conv2d(rt, t, &xs[0], &xs[1], None, &grouped, 2),
    ));
    out.extend(with_gradients(
        rt,
        d,
        DType::Float32,
        &[&[2, 3, 9], &[2, 3, 3]],
        ["conv1d", "conv1d grad x", "conv1d grad w", ""],
        &|rt, t, xs| conv::conv1d(rt, t, &xs[0], &xs[1], None, 2, (1, 1), 1, 1),
    ));
    // The ReLU fused into the batch-folded convolution, forward and backward (its mask).
    let relu = Window::new([3, 3], [1, 1], [1, 1]);
    out.extend(with_gradients(
        rt,
        d,
        DType::Float32,
        &[&[3, 2, 4, 4], &[5, 2, 3, 3], &[5]],
        [
            "conv relu",
            "conv relu grad x",
            "conv relu grad w",
            "conv relu grad b",
        ],
        &move |rt, t, xs| conv::conv2d_act(rt, t, &xs[0], &xs[1], Some(&xs[2]), &relu, 1, true),
    ));
    out
}

/// Max and average pooling (padding, ceil_mode, count_include_pad), adaptive and global, with
/// gradients: windowed pooling reads its windows in place (`Array::pool`; kernels/window.cu on
/// CUDA), adaptive pooling is im2col reduced along the taps.
fn pooling_and_gradients(rt: &Runtime, d: Device) -> Outputs {
    let shape: &[&[usize]] = &[&[2, 3, 8, 7]];
    let win = Window::new([3, 3], [2, 2], [1, 1]);
    let mut out = Vec::new();
    for (names, kind, ceil) in [
        (["max", "max grad", "", ""], PoolKind::Max, false),
        (["max ceil", "max ceil grad", "", ""], PoolKind::Max, true),
        (
            ["avg", "avg grad", "", ""],
            PoolKind::Avg {
                count_include_pad: true,
            },
            false,
        ),
        (
            ["avg ceil no pad", "avg ceil no pad grad", "", ""],
            PoolKind::Avg {
                count_include_pad: false,
            },
            true,
        ),
    ] {
        out.extend(with_gradients(
            rt,
            d,
            DType::Float32,
            shape,
            names,
            &move |rt, t, xs| conv::pool2d(rt, t, &xs[0], &win, kind, ceil, true),
        ));
    }
    out.extend(with_gradients(
        rt,
        d,
        DType::Float32,
        shape,
        ["adaptive avg", "adaptive avg grad", "", ""],
        &|rt, t, xs| conv::adaptive_pool2d(rt, t, &xs[0], [3, 2], false),
    ));
    out.extend(with_gradients(
        rt,
        d,
        DType::Float32,
        shape,
        ["global max", "global max grad", "", ""],
        &|rt, t, xs| conv::global_pool2d(rt, t, &xs[0], true),
    ));
    out
}

/// Batch norm with batch statistics (and the running ones they update), then with running
/// statistics (eval), with gradients for the input, scale and shift: the primitive
/// (`Array::batch_norm`; kernels/norm.cu on CUDA).
fn batch_norm_and_gradients(rt: &Runtime, d: Device) -> Outputs {
    let running_mean = varied(rt, d, &[3], 3, DType::Float32);
    let running_var = rt.full(&[3], 1.5, DType::Float32, d).unwrap();
    let update = RunningUpdate {
        batch_weight: 0.1,
        unbiased: true,
    };
    let updated = std::cell::RefCell::new(None);
    let shapes: &[&[usize]] = &[&[4, 3, 5, 2], &[3], &[3]];
    let mut out = with_gradients(
        rt,
        d,
        DType::Float32,
        shapes,
        [
            "train",
            "train grad x",
            "train grad gamma",
            "train grad beta",
        ],
        &|_, t, xs| {
            let r = Some((&running_mean, &running_var));
            let bn =
                norm::batch_norm(t, &xs[0], Some(&xs[1]), Some(&xs[2]), r, true, update, 1e-5)?;
            *updated.borrow_mut() = bn.running;
            Ok(bn.y)
        },
    );
    let (mean, var) = updated.into_inner().expect("running statistics updated");
    out.push(("running mean", mean));
    out.push(("running var", var));
    out.extend(with_gradients(
        rt,
        d,
        DType::Float32,
        shapes,
        ["eval", "eval grad x", "eval grad gamma", "eval grad beta"],
        &|_, t, xs| {
            let r = Some((&running_mean, &running_var));
            let bn = norm::batch_norm(
                t,
                &xs[0],
                Some(&xs[1]),
                Some(&xs[2]),
                r,
                false,
                update,
                1e-5,
            )?;
            Ok(bn.y)
        },
    ));
    out
}

/// Fast paths against the plain ones: the same convolutions and poolings, forward and backward,
/// with the one-pass im2col (`Array::patches`; for ungrouped convolutions the batch-folded
/// `Array::patches_cols`) or pooling read in place (`Array::pool`), and composed from strided
/// slices (`conv::plain_paths`), on the CPU and a simulated GPU. The forward values are copies either
/// way and must agree exactly; gradients sum the same terms in another order.
mod fast_paths {
    use devarray::nn::autograd::Tape;
    use devarray::nn::conv::{self, PoolKind, Window};
    use devarray::runtime::{
        Array, BinaryOp, DType, Device, Operand, ReduceOp, Runtime, RuntimeConfig,
    };

    fn runtime() -> Runtime {
        Runtime::new(RuntimeConfig {
            sim_gpus: 1,
            ..RuntimeConfig::default()
        })
    }

    use super::{recorded, varied as input};

    type Op = dyn Fn(&Runtime, &mut Tape, &[Array]) -> devarray::runtime::Result<Array>;

    /// The output and the gradient of sum(output * projection) for every input.
    fn run(rt: &Runtime, inputs: &[Array], f: &Op) -> Vec<Vec<f64>> {
        recorded(rt, inputs, f)
            .iter()
            .map(|a| a.to_host().to_f64_vec())
            .collect()
    }

    fn compare(shapes: &[&[usize]], f: &Op) {
        let rt = runtime();
        for d in [Device::cpu(0), Device::gpu(0)] {
            for dtype in [DType::Float32, DType::Float64] {
                let inputs: Vec<Array> = shapes
                    .iter()
                    .enumerate()
                    .map(|(k, s)| input(&rt, d, s, k as u64, dtype))
                    .collect();
                assert!(inputs[0].has_patches(), "{d}: the fast path runs here");
                let fast = run(&rt, &inputs, f);
                let plain = conv::plain_paths(|| run(&rt, &inputs, f));
                assert_eq!(fast[0], plain[0], "{d} {dtype}: forward values");
                for (k, (a, b)) in fast.iter().zip(&plain).enumerate().skip(1) {
                    assert_eq!(a.len(), b.len());
                    for (i, (x, y)) in a.iter().zip(b).enumerate() {
                        assert!(
                            (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
                            "{d} {dtype}: gradient of input {} element {i}: {x} vs {y}",
                            k - 1
                        );
                    }
                }
            }
        }
    }

    /// Batch norm's primitive (`Array::batch_norm`, one tape node) against its composed form:
    /// batch and running statistics, with and without scale and shift, 2-d and 4-d inputs, both
    /// float dtypes, cpu and a simulated GPU. The statistics are summed in another order, so
    /// values and gradients agree to rounding.
    #[test]
    fn batch_norm_against_composed() {
        use devarray::nn::norm::{self, RunningUpdate};
        let rt = runtime();
        let update = RunningUpdate {
            batch_weight: 0.1,
            unbiased: true,
        };
        for d in [Device::cpu(0), Device::gpu(0)] {
            for dtype in [DType::Float32, DType::Float64] {
                for shape in [&[4usize, 3, 5, 2][..], &[6, 3], &[2, 3, 4]] {
                    let inputs: Vec<Array> = [shape, &[3], &[3]]
                        .iter()
                        .enumerate()
                        .map(|(k, s)| input(&rt, d, s, k as u64, dtype))
                        .collect();
                    let rm = input(&rt, d, &[3], 5, dtype);
                    let rv = rt.full(&[3], 1.5, dtype, d).unwrap();
                    for (training, affine) in [(true, true), (false, true), (true, false)] {
                        let (rm, rv) = (rm.clone(), rv.clone());
                        let f = move |_: &Runtime, t: &mut Tape, xs: &[Array]| {
                            let (g, b) = if affine {
                                (Some(&xs[1]), Some(&xs[2]))
                            } else {
                                (None, None)
                            };
                            let r = Some((&rm, &rv));
                            let out = norm::batch_norm(t, &xs[0], g, b, r, training, update, 1e-5)?;
                            let (m, v) = out.running.unwrap_or((rm.clone(), rv.clone()));
                            // The running statistics ride along in the output's sum.
                            let s =
                                Array::concat(&[m, v], 0)?.reduce(ReduceOp::Sum, None, false)?;
                            t.binary(BinaryOp::Add, Operand::Array(&out.y), Operand::Array(&s))
                        };
                        let fast = run(&rt, &inputs, &f);
                        let plain = conv::plain_paths(|| run(&rt, &inputs, &f));
                        let tol = if dtype == DType::Float32 { 1e-5 } else { 1e-12 };
                        for (k, (a, b)) in fast.iter().zip(&plain).enumerate() {
                            assert_eq!(a.len(), b.len());
                            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                                assert!(
                                    (x - y).abs() <= tol * (1.0 + y.abs()),
                                    "{d} {dtype} {shape:?} training={training} affine={affine}: output {k} element {i}: {x} vs {y}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn convolution_strided_padded_dilated() {
        let win = Window {
            kernel: [3, 2],
            stride: [2, 1],
            pad: [(1, 1), (2, 2)],
            dilation: [1, 2],
        };
        compare(&[&[2, 3, 7, 6], &[4, 3, 3, 2], &[4]], &move |rt, t, xs| {
            conv::conv2d(rt, t, &xs[0], &xs[1], Some(&xs[2]), &win, 1)
        });
    }

    #[test]
    fn convolution_grouped_and_one_by_one() {
        let win = Window::new([3, 3], [1, 1], [1, 1]);
        compare(&[&[2, 4, 5, 5], &[6, 2, 3, 3]], &move |rt, t, xs| {
            conv::conv2d(rt, t, &xs[0], &xs[1], None, &win, 2)
        });
        let one = Window::new([1, 1], [2, 2], [0, 0]);
        compare(&[&[1, 3, 6, 6], &[2, 3, 1, 1]], &move |rt, t, xs| {
            conv::conv2d(rt, t, &xs[0], &xs[1], None, &one, 1)
        });
    }

    /// A ReLU fused into the batch-folded convolution (applied where the bias is added, its
    /// mask taken where the gradient is laid out) against the convolution followed by the ReLU
    /// op, with and without a bias.
    #[test]
    fn convolution_fused_relu() {
        let win = Window::new([3, 3], [1, 1], [1, 1]);
        compare(&[&[4, 3, 5, 5], &[6, 3, 3, 3], &[6]], &move |rt, t, xs| {
            conv::conv2d_act(rt, t, &xs[0], &xs[1], Some(&xs[2]), &win, 1, true)
        });
        let strided = Window::new([2, 2], [2, 2], [0, 0]);
        compare(&[&[3, 2, 6, 6], &[5, 2, 2, 2]], &move |rt, t, xs| {
            conv::conv2d_act(rt, t, &xs[0], &xs[1], None, &strided, 1, true)
        });
    }

    /// The batch-folded GEMM (`Array::patches_cols`, one product over the whole batch) on
    /// ResNet's shapes in miniature: a 3x3 map padded by 1 and a strided 1x1 shortcut, several
    /// samples each.
    #[test]
    fn convolution_batch_folded_small_maps() {
        let win = Window::new([3, 3], [1, 1], [1, 1]);
        compare(&[&[5, 4, 3, 3], &[6, 4, 3, 3], &[6]], &move |rt, t, xs| {
            conv::conv2d(rt, t, &xs[0], &xs[1], Some(&xs[2]), &win, 1)
        });
        let one = Window::new([1, 1], [2, 2], [0, 0]);
        compare(&[&[3, 4, 5, 5], &[7, 4, 1, 1]], &move |rt, t, xs| {
            conv::conv2d(rt, t, &xs[0], &xs[1], None, &one, 1)
        });
    }

    /// The input gradient made a block of samples at a time (`Array::conv_input_grad`: at
    /// least 256 columns per block and two blocks per thread, so 16x16 maps and 8 samples on
    /// up to 4 threads) against the plain path, with and without a fused ReLU.
    #[test]
    fn convolution_input_gradient_in_blocks() {
        let win = Window::new([3, 3], [1, 1], [1, 1]);
        compare(
            &[&[8, 3, 16, 16], &[9, 3, 3, 3], &[9]],
            &move |rt, t, xs| conv::conv2d(rt, t, &xs[0], &xs[1], Some(&xs[2]), &win, 1),
        );
        compare(&[&[8, 2, 16, 16], &[8, 2, 3, 3]], &move |rt, t, xs| {
            conv::conv2d_act(rt, t, &xs[0], &xs[1], None, &win, 1, true)
        });
    }

    #[test]
    fn max_and_average_pooling_padded_ceil_mode() {
        let win = Window::new([3, 3], [2, 2], [1, 1]);
        for ceil in [false, true] {
            compare(&[&[2, 3, 8, 7]], &move |rt, t, xs| {
                conv::pool2d(rt, t, &xs[0], &win, PoolKind::Max, ceil, true)
            });
            for count_include_pad in [false, true] {
                let kind = PoolKind::Avg { count_include_pad };
                compare(&[&[2, 3, 8, 7]], &move |rt, t, xs| {
                    conv::pool2d(rt, t, &xs[0], &win, kind, ceil, false)
                });
            }
        }
        let two = Window::new([2, 2], [2, 2], [0, 0]);
        compare(&[&[3, 2, 6, 6]], &move |rt, t, xs| {
            conv::pool2d(rt, t, &xs[0], &two, PoolKind::Max, false, true)
        });
        // Windows that share no input (the book's LeNet's AvgPool2d(2, 2)), with and without
        // padding and a ceil_mode window past the edge.
        for (pad, ceil) in [(0, false), (1, false), (0, true)] {
            let win = Window::new([2, 2], [2, 2], [pad, pad]);
            let kind = PoolKind::Avg {
                count_include_pad: pad == 0,
            };
            compare(&[&[3, 2, 7, 6]], &move |rt, t, xs| {
                conv::pool2d(rt, t, &xs[0], &win, kind, ceil, true)
            });
        }
    }
}

/// 3x3 stride-1 convolutions by Winograd F(2x2, 3x3) (`backend/cpu/conv_winograd.rs`: the
/// forward product, the input gradient and the weight gradient) against the plain path (`conv::plain_paths`: one
/// strided slice per tap, summed by the GEMM), on the CPU and a simulated GPU, both float
/// dtypes. Winograd sums the same 9*C products regrouped, so the two differ by rounding only.
///
/// The tolerance, per element: |winograd - plain| <= 16 * u * S, with u the unit roundoff
/// (2^-24 for float32, 2^-53 for float64) and S the sum of the absolute values of the products
/// that element adds up (the same convolution and gradients of |x|, |w|, |b| projected by |p|).
/// A dot product of n terms summed in any order is within n * u * S of the exact value; both
/// paths are far inside that (the observed worst ratio is printed on failure), and Winograd's
/// transforms (coefficients 0, ±1, ±1/2) add a small constant factor. 16 * u * S is still a
/// thousand times smaller than what a wrong tap, tile or channel gives (about S itself).
mod winograd {
    use super::{recorded_projected, varied};
    use devarray::nn::autograd::Tape;
    use devarray::nn::conv::{self, Window};
    use devarray::runtime::array::conv_winograd::with_winograd;
    use devarray::runtime::{Array, DType, Device, Runtime, RuntimeConfig, UnaryOp};

    type Op = dyn Fn(&Runtime, &mut Tape, &[Array]) -> devarray::runtime::Result<Array>;

    fn host(arrays: Vec<Array>) -> Vec<Vec<f64>> {
        arrays.iter().map(|a| a.to_host().to_f64_vec()).collect()
    }

    fn compare(shapes: &[&[usize]], f: &Op) {
        let rt = Runtime::new(RuntimeConfig {
            sim_gpus: 1,
            ..RuntimeConfig::default()
        });
        for d in [Device::cpu(0), Device::gpu(0)] {
            for (dtype, u) in [
                (DType::Float32, 2f64.powi(-24)),
                (DType::Float64, 2f64.powi(-53)),
            ] {
                let inputs: Vec<Array> = shapes
                    .iter()
                    .enumerate()
                    .map(|(k, s)| varied(&rt, d, s, k as u64, dtype))
                    .collect();
                let abs: Vec<Array> = inputs
                    .iter()
                    .map(|x| x.unary(UnaryOp::Abs).unwrap())
                    .collect();
                let fast = host(with_winograd(|| recorded_projected(&rt, &inputs, f, false)));
                let plain = host(conv::plain_paths(|| {
                    recorded_projected(&rt, &inputs, f, false)
                }));
                let sums = host(conv::plain_paths(|| recorded_projected(&rt, &abs, f, true)));
                // im2col gives the plain path's bits (fast_paths checks it), so a difference
                // shows that Winograd ran.
                assert_ne!(
                    fast[0], plain[0],
                    "{d} {dtype} {shapes:?}: Winograd did not run"
                );
                for (k, ((a, b), s)) in fast.iter().zip(&plain).zip(&sums).enumerate() {
                    assert_eq!(a.len(), b.len());
                    let worst = a
                        .iter()
                        .zip(b)
                        .zip(s)
                        .map(|((x, y), s)| (x - y).abs() / (u * s.max(f64::MIN_POSITIVE)))
                        .fold(0.0, f64::max);
                    assert!(
                        worst <= 16.0,
                        "{d} {dtype} {shapes:?}: output {k} (0 the forward, then each input's gradient) differs by {worst:.2} u*S"
                    );
                }
            }
        }
    }

    /// Odd and even map sizes (a last tile half outside), one sample, channel counts that are
    /// no multiple of anything (17 in, 19 out), a bias, and padding 1 (ResNet's), 0 and 2.
    #[test]
    fn against_the_plain_convolution() {
        for (shape, pad) in [
            ([3, 17, 7, 9], 1),
            ([1, 16, 6, 6], 1),
            ([2, 18, 9, 8], 0),
            ([1, 17, 5, 4], 2),
        ] {
            let win = Window::new([3, 3], [1, 1], [pad, pad]);
            compare(
                &[&shape, &[19, shape[1], 3, 3], &[19]],
                &move |rt, t, xs| conv::conv2d(rt, t, &xs[0], &xs[1], Some(&xs[2]), &win, 1),
            );
        }
    }
}

/// `Array::matmul_t` (a gradient's transposed operand read in place by the GEMM) against the
/// plain path (the operand transposed into a copy, then `matmul`), on the CPU and a simulated
/// GPU, in both float dtypes, for single, batched and broadcast products, and every size regime
/// of the CPU GEMM. Small integer values keep every sum exact, so the two must agree exactly.
mod transposed_matmul {
    use devarray::runtime::{Array, DType, Device, Runtime, RuntimeConfig};

    fn swapped(x: &Array) -> Array {
        let n = x.ndim() as isize;
        let mut axes: Vec<isize> = (0..n).collect();
        axes.swap((n - 1) as usize, (n - 2) as usize);
        x.transpose(Some(&axes)).expect("transpose")
    }

    #[test]
    fn matches_a_copied_transpose() {
        let rt = Runtime::new(RuntimeConfig {
            sim_gpus: 1,
            ..RuntimeConfig::default()
        });
        let cases: &[(&[usize], &[usize])] = &[
            (&[3, 5], &[5, 4]),
            (&[2, 3, 5], &[2, 5, 4]),
            (&[6, 9], &[4, 9, 7]),
            (&[4, 6, 9], &[9, 7]),
            (&[200, 300], &[300, 250]),
            (&[3, 40, 60], &[3, 60, 50]),
        ];
        for d in [Device::cpu(0), Device::gpu(0)] {
            for dtype in [DType::Float32, DType::Float64] {
                for &(a_shape, b_shape) in cases {
                    let make = |shape: &[usize], seed: usize| {
                        let n: usize = shape.iter().product();
                        let data = (0..n).map(|i| ((i * 7 + seed) % 11) as f64 - 5.0).collect();
                        rt.from_f64(data, shape, dtype, d).expect("input")
                    };
                    let (a, b) = (make(a_shape, 1), make(b_shape, 2));
                    let want = a.matmul(&b).expect("matmul").to_host().to_f64_vec();
                    for trans in [[true, false], [false, true], [true, true]] {
                        // The operands as stored: the transposed ones hold the swapped matrices.
                        let x = if trans[0] { swapped(&a) } else { a.clone() };
                        let y = if trans[1] { swapped(&b) } else { b.clone() };
                        let got = x.matmul_t(&y, trans).expect("matmul_t");
                        assert_eq!(got.shape(), a.matmul(&b).expect("matmul").shape());
                        assert_eq!(
                            got.to_host().to_f64_vec(),
                            want,
                            "{d} {dtype} {a_shape:?} @ {b_shape:?} {trans:?}"
                        );
                    }
                }
            }
        }
    }
}

/// A dense layer's bias and activation as one op (`Tape::bias_act`, what the compiled plans of
/// `hybridize()` and `torch.jit` run) against the composed ops (`z + b`, then the activation):
/// the same values and gradients, bit for bit, for one row and batches (the fused pass over
/// rows, whose blocks split rows of odd widths), every activation, both float dtypes, on the
/// CPU and a simulated GPU.
#[test]
fn bias_activation_fused_equals_composed() {
    use devarray::runtime::UnaryOp;
    let rt = Runtime::new(RuntimeConfig {
        sim_gpus: 1,
        ..RuntimeConfig::default()
    });
    for d in [Device::cpu(0), Device::gpu(0)] {
        for dtype in [DType::Float32, DType::Float64] {
            for (rows, width) in [(1usize, 7usize), (5, 7), (300, 13), (3, 2000)] {
                let inputs = [
                    varied(&rt, d, &[rows, width], 1, dtype),
                    varied(&rt, d, &[width], 2, dtype),
                ];
                for act in [UnaryOp::Relu, UnaryOp::Sigmoid, UnaryOp::Tanh] {
                    let fused = recorded(&rt, &inputs, &|_, t, xs| t.bias_act(&xs[0], &xs[1], act));
                    let composed = recorded(&rt, &inputs, &|_, t, xs| {
                        let s = t.binary(
                            BinaryOp::Add,
                            Operand::Array(&xs[0]),
                            Operand::Array(&xs[1]),
                        )?;
                        t.unary(&s, act)
                    });
                    for (k, (a, b)) in fused.iter().zip(&composed).enumerate() {
                        assert_eq!(a.shape(), b.shape());
                        assert_eq!(
                            a.to_host().to_f64_vec(),
                            b.to_host().to_f64_vec(),
                            "{d} {dtype} rows={rows} {act:?}: output {k}"
                        );
                    }
                }
            }
        }
    }
}

/// ReLU's gradient, one fused pass (g * sign(relu(x))), against the mask it stands for,
/// g * (x > 0), bit for bit: NaN, infinities and zeros of both signs included (a gradient of
/// either sign times a zero mask keeps its sign: -0.0 where g < 0). Both float dtypes, on the
/// CPU and a simulated GPU.
#[test]
fn relu_gradient_is_the_gradient_times_its_mask() {
    use devarray::runtime::UnaryOp;
    let rt = Runtime::new(RuntimeConfig {
        sim_gpus: 1,
        ..RuntimeConfig::default()
    });
    let special = [
        f64::NAN,
        0.0,
        -0.0,
        1e-30,
        -1e-30,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    let shape = [3usize, 70_000];
    for d in [Device::cpu(0), Device::gpu(0)] {
        for dtype in [DType::Float32, DType::Float64] {
            let mut data = varied(&rt, d, &shape, 1, dtype).to_host().to_f64_vec();
            for (i, v) in special.iter().enumerate() {
                data[i * 977] = *v;
            }
            let x = rt.from_f64(data.clone(), &shape, dtype, d).expect("input");
            let got = recorded(&rt, &[x], &|_, t, xs| t.unary(&xs[0], UnaryOp::Relu));
            let proj = varied(&rt, d, &shape, 7, dtype).to_host().to_f64_vec();
            let want: Vec<u64> = data
                .iter()
                .zip(&proj)
                .map(|(&x, &g)| (g * if x > 0.0 { 1.0 } else { 0.0 }).to_bits())
                .collect();
            let bits: Vec<u64> = got[1]
                .to_host()
                .to_f64_vec()
                .iter()
                .map(|v| v.to_bits())
                .collect();
            assert!(
                bits == want,
                "{d} {dtype}: ReLU's gradient is not g * (x > 0)"
            );
        }
    }
}
