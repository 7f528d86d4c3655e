//! Compiles every CUDA kernel source through NVRTC for sm_80 and sm_90, with register spills as
//! errors, and checks that every entry name the launch code uses is in the output. Needs no GPU
//! and no driver, only the NVRTC library:
//!
//!     export DEVARRAY_NVRTC_LIB="$(tests/cuda/setup_nvrtc.sh)"
//!     cargo test --test cuda_nvrtc
//!
//! Without the library the test fails under CI (CI=true) and is skipped locally with a message.
use devarray::backend::cuda::kernels::{Module, Program};
use devarray::backend::cuda::{fused, nvrtc};
use std::path::{Path, PathBuf};

const ARCHS: [(i32, i32); 2] = [(8, 0), (9, 0)];
const PTXAS_STRICT: [&str; 2] = [
    "--ptxas-options=--warn-on-spills",
    "--ptxas-options=--warning-as-error",
];

/// Finds libnvrtc: $DEVARRAY_NVRTC_LIB, else the wheel in the repository's .venv.
fn nvrtc_library() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("DEVARRAY_NVRTC_LIB") {
        return Some(PathBuf::from(path));
    }
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/lib");
    for python in std::fs::read_dir(lib).ok()?.flatten() {
        let candidate = python
            .path()
            .join("site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
        if candidate.exists() {
            return Some(candidate);
        }
    }
    None
}

/// Loads NVRTC from its path so that cudarc's later lookup by soname finds it already loaded.
/// Returns false (after saying why) when the test has to be skipped.
fn load_nvrtc() -> bool {
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let Some(path) = nvrtc_library() else {
        let message = "NVRTC not found: run `export DEVARRAY_NVRTC_LIB=\"$(tests/cuda/setup_nvrtc.sh)\"` first";
        assert!(!in_ci, "{message}");
        eprintln!("skipping the NVRTC kernel test: {message}");
        return false;
    };
    // SAFETY: loading NVRTC runs no initialisers with preconditions; it stays loaded for the
    // whole test process (leaked on purpose).
    match unsafe { libloading::Library::new(&path) } {
        Ok(library) => std::mem::forget(library),
        Err(e) => panic!("cannot load NVRTC from {}: {e}", path.display()),
    }
    assert!(
        nvrtc::is_available(),
        "{} loaded but cudarc cannot find NVRTC by name",
        path.display()
    );
    true
}

fn programs() -> Vec<Program> {
    let mut all: Vec<Program> = Module::ALL.iter().map(|m| m.program()).collect();
    all.extend(fused::examples().iter().map(|e| e.program()));
    all
}

#[test]
fn every_kernel_compiles_for_sm80_and_sm90_without_spills() {
    if !load_nvrtc() {
        return;
    }
    let version = nvrtc::version().expect("nvrtc version");
    let archs = nvrtc::supported_archs().expect("supported archs");
    eprintln!("NVRTC {}.{}, archs {archs:?}", version.0, version.1);
    let mut checked = 0;
    for program in programs() {
        for (major, minor) in ARCHS {
            // Machine code through ptxas, spills as errors: what a device of this arch runs when
            // its driver is older than NVRTC.
            let cubin = nvrtc::compile(
                &program.name,
                &program.source,
                nvrtc::Target::Cubin { major, minor },
                &PTXAS_STRICT,
            )
            .unwrap_or_else(|e| panic!("{e}"));
            // PTX: what the launch code loads when the driver can JIT it.
            let ptx = nvrtc::compile(
                &program.name,
                &program.source,
                nvrtc::Target::Ptx { major, minor },
                &[],
            )
            .unwrap_or_else(|e| panic!("{e}"));
            let ptx = String::from_utf8(ptx).expect("PTX is text");
            let entries = nvrtc::ptx_entries(&ptx);
            for entry in &program.entries {
                assert!(
                    entries.contains(entry),
                    "{}.cu for compute_{major}{minor}: entry {entry} is missing from the PTX",
                    program.name
                );
                assert!(
                    contains(&cubin, entry.as_bytes()),
                    "{}.cu for sm_{major}{minor}: entry {entry} is missing from the cubin",
                    program.name
                );
                checked += 1;
            }
        }
    }
    eprintln!("{checked} entry checks passed");
    assert!(checked > 500, "only {checked} entries were checked");
}

#[test]
fn a_broken_kernel_is_an_error_with_the_compiler_log() {
    if !load_nvrtc() {
        return;
    }
    let err = nvrtc::compile(
        "broken",
        "extern \"C\" __global__ void k(float* x) { x[0] = undefined_name; }",
        nvrtc::Target::Ptx { major: 8, minor: 0 },
        &[],
    )
    .expect_err("must not compile");
    assert!(
        err.starts_with("NVRTC could not compile broken.cu for --gpu-architecture=compute_80"),
        "{err}"
    );
    assert!(err.contains("undefined_name"), "{err}");
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
