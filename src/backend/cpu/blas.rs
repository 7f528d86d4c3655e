//! The system's OpenBLAS, loaded at run time when it is installed (`libopenblas.so.0`; Debian:
//! `apt-get install libopenblas0-pthread`). Its single-thread SGEMM/DGEMM kernels are faster
//! than the `gemm` crate's on large products (see `gemm.rs`); without it everything runs on the
//! `gemm` crate, so the library is an optional speed-up, never a requirement.
//!
//! `DEVARRAY_BLAS` chooses: unset tries the usual names; `none` turns it off; anything else is
//! the path of an OpenBLAS library to load (the PyPI `scipy-openblas32` build, with its
//! `scipy_`-prefixed names, works too). OpenBLAS is asked for one thread: devarray splits
//! a large product into tiles itself and hands them to rayon's pool (`gemm.rs`).
use libloading::Library;
use std::ffi::{c_char, c_int, CStr};
use std::sync::OnceLock;

/// `cblas_sgemm` / `cblas_dgemm`: (order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
/// beta, c, ldc), with 32-bit integers (the LP64 interface Debian and most systems ship).
pub type CblasGemm<T> = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    T,
    *const T,
    c_int,
    *const T,
    c_int,
    T,
    *mut T,
    c_int,
);

pub const CBLAS_ROW_MAJOR: c_int = 101;
pub const CBLAS_NO_TRANS: c_int = 111;
pub const CBLAS_TRANS: c_int = 112;

/// A loaded OpenBLAS. The library stays loaded for the life of the process (it is kept in a
/// static), so the function pointers stay valid.
pub struct SystemBlas {
    _library: Library,
    pub sgemm: CblasGemm<f32>,
    pub dgemm: CblasGemm<f64>,
    /// `openblas_get_config()`, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64".
    pub config: String,
}

/// Library names tried, in order, when `DEVARRAY_BLAS` is unset.
const DEFAULT_NAMES: &[&str] = &["libopenblas.so.0", "libopenblas.so", "libopenblas.dylib"];

static SYSTEM: OnceLock<Result<SystemBlas, String>> = OnceLock::new();

/// The system OpenBLAS, loaded on first use (the first large product), or None.
pub fn system() -> Option<&'static SystemBlas> {
    SYSTEM.get_or_init(load).as_ref().ok()
}

/// One line for `devarray --version`: which GEMM runs large products, and why.
pub fn describe() -> String {
    match SYSTEM.get_or_init(load) {
        Ok(blas) => format!("system OpenBLAS ({})", blas.config.trim()),
        Err(why) => format!("gemm crate only ({why})"),
    }
}

fn load() -> Result<SystemBlas, String> {
    match std::env::var("DEVARRAY_BLAS") {
        Ok(v) if v.eq_ignore_ascii_case("none") => Err("DEVARRAY_BLAS=none".into()),
        Ok(path) if !path.is_empty() => {
            // Asked for by name: say so when it cannot be used, rather than silently run slower.
            let loaded = load_from(&path);
            if let Err(why) = &loaded {
                eprintln!("devarray: DEVARRAY_BLAS={path:?} cannot be used ({why}); large products use the gemm crate");
            }
            loaded
        }
        _ => {
            let mut reasons = Vec::new();
            for name in DEFAULT_NAMES {
                match load_from(name) {
                    Ok(blas) => return Ok(blas),
                    // Found but not used: that is the reason to give, not "not found".
                    Err(e) if e.starts_with(WEAK) => return Err(e),
                    Err(e) => reasons.push(e),
                }
            }
            Err(format!(
                "no OpenBLAS found; install libopenblas0-pthread or set DEVARRAY_BLAS to its path: {}",
                reasons.first().map(String::as_str).unwrap_or("")
            ))
        }
    }
}

/// libloading's own message is only "dlopen failed"; the reason (dlerror) is its source.
fn failure(name: &str, e: libloading::Error) -> String {
    use std::error::Error;
    match e.source() {
        Some(reason) => reason.to_string(),
        None => format!("{name}: {e}"),
    }
}

/// Symbol prefixes tried, in order: plain OpenBLAS, and the `scipy_` names of the OpenBLAS that
/// PyPI ships as `scipy-openblas32` (the build numpy and SciPy bundle).
const PREFIXES: &[&str] = &["", "scipy_"];

fn load_from(name: &str) -> Result<SystemBlas, String> {
    // SAFETY: loading OpenBLAS runs its initialiser, which only sets up its own state.
    let library = unsafe { Library::new(name) }.map_err(|e| failure(name, e))?;
    let mut first_error = None;
    for prefix in PREFIXES {
        // SAFETY: each symbol is looked up with the C signature OpenBLAS documents (cblas.h).
        match unsafe { symbols(&library, prefix) } {
            Ok((sgemm, dgemm, set_threads, config)) => {
                if let Some(why) = weak_kernels(&config) {
                    return Err(why);
                }
                // devarray tiles large products over its own pool; OpenBLAS threads on top
                // would oversubscribe the cores.
                // SAFETY: documented as callable at any time; takes a thread count.
                unsafe { set_threads(1) };
                return Ok(SystemBlas {
                    _library: library,
                    sgemm,
                    dgemm,
                    config,
                });
            }
            Err(e) => {
                first_error.get_or_insert_with(|| failure(name, e));
            }
        }
    }
    let why = first_error.unwrap_or_default();
    Err(format!("{why} (not an OpenBLAS library)"))
}

/// OpenBLAS's kernels for CPUs with AVX2 and FMA (or AVX-512). A DYNAMIC_ARCH build that does
/// not recognise a virtual machine's CPU model falls back to SSE3 kernels ("Prescott"), ten
/// times slower than the `gemm` crate there; such a library is not used.
const WIDE_CORES: &[&str] = &["haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"];

/// How `weak_kernels`' reason begins.
const WEAK: &str = "OpenBLAS chose kernels without AVX2";

/// Why the kernels OpenBLAS picked (named in its config line) are too narrow for this CPU, if
/// they are.
fn weak_kernels(config: &str) -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        let wide = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma");
        let lower = config.to_ascii_lowercase();
        // A build for one target is taken as it is; a run-time choice is checked.
        if wide && lower.contains("dynamic_arch") && !WIDE_CORES.iter().any(|c| lower.contains(c)) {
            return Some(format!(
                "{WEAK} for this AVX2 CPU ({}); set OPENBLAS_CORETYPE=Haswell (or SkylakeX) to use it",
                config.trim()
            ));
        }
    }
    let _ = config;
    None
}

type Symbols = (
    CblasGemm<f32>,
    CblasGemm<f64>,
    unsafe extern "C" fn(c_int),
    String,
);

/// The functions devarray uses, with `prefix` before each name.
///
/// # Safety
/// The library must be an OpenBLAS whose symbols have the documented C signatures; the returned
/// pointers are valid while `library` stays loaded.
unsafe fn symbols(library: &Library, prefix: &str) -> Result<Symbols, libloading::Error> {
    let name = |base: &str| format!("{prefix}{base}");
    let sgemm = *library.get::<CblasGemm<f32>>(name("cblas_sgemm"))?;
    let dgemm = *library.get::<CblasGemm<f64>>(name("cblas_dgemm"))?;
    let set_threads =
        *library.get::<unsafe extern "C" fn(c_int)>(name("openblas_set_num_threads"))?;
    let config =
        match library.get::<unsafe extern "C" fn() -> *const c_char>(name("openblas_get_config")) {
            Ok(get) => {
                let text = get();
                if text.is_null() {
                    "OpenBLAS".to_string()
                } else {
                    CStr::from_ptr(text).to_string_lossy().into_owned()
                }
            }
            Err(_) => "OpenBLAS".to_string(),
        };
    Ok((sgemm, dgemm, set_threads, config))
}

#[cfg(test)]
mod tests {
    use super::weak_kernels;

    #[test]
    fn sse_kernels_on_an_avx2_cpu_are_refused() {
        let prescott =
            "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64";
        let skylake = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64";
        let fixed = "OpenBLAS 0.3.21 NO_LAPACKE Prescott MAX_THREADS=64";
        #[cfg(target_arch = "x86_64")]
        let wide = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma");
        #[cfg(not(target_arch = "x86_64"))]
        let wide = false;
        assert_eq!(weak_kernels(prescott).is_some(), wide);
        assert!(weak_kernels(skylake).is_none());
        assert!(weak_kernels(fixed).is_none());
    }
}
