//! NVRTC: compiles kernel sources at run time. Calls the C API through cudarc's bindings (not its
//! safe wrapper, which unwraps internally and only returns PTX) so that every failure is an error
//! value and cubin output is available.
//!
//! Callers must check [`is_available`] first: with dynamic loading, a call into a library that
//! is not installed panics inside cudarc.
use cudarc::nvrtc::sys;
use std::ffi::{c_char, c_int, CStr, CString};

/// What NVRTC should produce.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Target {
    /// PTX for `compute_XY`: the driver JIT-compiles it, so it must not be newer than the driver.
    Ptx { major: i32, minor: i32 },
    /// A cubin for `sm_XY`: machine code that needs no JIT (and runs ptxas here, so
    /// `--ptxas-options` apply).
    Cubin { major: i32, minor: i32 },
}

impl Target {
    pub fn arch_option(self) -> String {
        match self {
            Target::Ptx { major, minor } => format!("--gpu-architecture=compute_{major}{minor}"),
            Target::Cubin { major, minor } => format!("--gpu-architecture=sm_{major}{minor}"),
        }
    }
}

/// Is the NVRTC library loadable? Nothing else in this module may be called when it is not.
pub fn is_available() -> bool {
    // SAFETY: only tries to dlopen the library by its usual names.
    unsafe { sys::is_culib_present() }
}

/// NVRTC's (major, minor) version.
pub fn version() -> Result<(i32, i32), String> {
    if !is_available() {
        return Err(missing());
    }
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: the library is present; both pointers are valid for writes.
    check(
        unsafe { sys::nvrtcVersion(&mut major, &mut minor) },
        "nvrtcVersion",
    )?;
    Ok((major, minor))
}

/// The SM versions this NVRTC can target, e.g. [50, 52, ..., 90, 100, 120].
pub fn supported_archs() -> Result<Vec<i32>, String> {
    if !is_available() {
        return Err(missing());
    }
    let mut count: c_int = 0;
    // SAFETY: the library is present; the buffer has `count` slots.
    unsafe {
        check(
            sys::nvrtcGetNumSupportedArchs(&mut count),
            "nvrtcGetNumSupportedArchs",
        )?;
        let mut archs = vec![0 as c_int; usize::try_from(count).unwrap_or(0)];
        check(
            sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()),
            "nvrtcGetSupportedArchs",
        )?;
        Ok(archs)
    }
}

/// Compiles `source` and returns PTX text (NUL-free) or cubin bytes. Errors carry NVRTC's log.
pub fn compile(
    name: &str,
    source: &str,
    target: Target,
    extra_options: &[&str],
) -> Result<Vec<u8>, String> {
    if !is_available() {
        return Err(missing());
    }
    let source_c = CString::new(source).map_err(|_| format!("{name}: source contains NUL"))?;
    let name_c = CString::new(format!("{name}.cu")).map_err(|_| "name contains NUL".to_string())?;
    let mut options: Vec<CString> = vec![
        CString::new(target.arch_option()).map_err(|e| e.to_string())?,
        // The kernels index with 64-bit integers and never use relocatable device code.
        CString::new("--std=c++17").map_err(|e| e.to_string())?,
    ];
    for option in extra_options {
        options.push(CString::new(*option).map_err(|_| format!("option {option:?} has NUL"))?);
    }
    let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let option_count = c_int::try_from(option_ptrs.len()).map_err(|e| e.to_string())?;

    let mut program: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: the library is present; every pointer outlives the program, which is destroyed
    // below on every path.
    unsafe {
        check(
            sys::nvrtcCreateProgram(
                &mut program,
                source_c.as_ptr(),
                name_c.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            ),
            "nvrtcCreateProgram",
        )?;
        let result = compile_created(program, option_count, &option_ptrs, target, name);
        sys::nvrtcDestroyProgram(&mut program);
        result
    }
}

/// # Safety
/// `program` is a live program created by nvrtcCreateProgram.
unsafe fn compile_created(
    program: sys::nvrtcProgram,
    option_count: c_int,
    option_ptrs: &[*const c_char],
    target: Target,
    name: &str,
) -> Result<Vec<u8>, String> {
    let status = sys::nvrtcCompileProgram(program, option_count, option_ptrs.as_ptr());
    let log = program_log(program);
    if status != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!(
            "NVRTC could not compile {name}.cu for {} ({}):\n{log}",
            target.arch_option(),
            error_string(status)
        ));
    }
    let mut size: usize = 0;
    let mut out;
    match target {
        Target::Ptx { .. } => {
            check(sys::nvrtcGetPTXSize(program, &mut size), "nvrtcGetPTXSize")?;
            out = vec![0u8; size];
            check(
                sys::nvrtcGetPTX(program, out.as_mut_ptr().cast()),
                "nvrtcGetPTX",
            )?;
            // The PTX text ends in a NUL; the driver wants it, callers add their own.
            while out.last() == Some(&0) {
                out.pop();
            }
        }
        Target::Cubin { .. } => {
            check(
                sys::nvrtcGetCUBINSize(program, &mut size),
                "nvrtcGetCUBINSize",
            )?;
            out = vec![0u8; size];
            check(
                sys::nvrtcGetCUBIN(program, out.as_mut_ptr().cast()),
                "nvrtcGetCUBIN",
            )?;
        }
    }
    Ok(out)
}

/// # Safety
/// `program` is a live program.
unsafe fn program_log(program: sys::nvrtcProgram) -> String {
    let mut size: usize = 0;
    if sys::nvrtcGetProgramLogSize(program, &mut size) != sys::nvrtcResult::NVRTC_SUCCESS {
        return String::new();
    }
    let mut log = vec![0u8; size.max(1)];
    if sys::nvrtcGetProgramLog(program, log.as_mut_ptr().cast()) != sys::nvrtcResult::NVRTC_SUCCESS
    {
        return String::new();
    }
    let text = CStr::from_bytes_until_nul(&log)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    text.trim_end().to_string()
}

fn error_string(status: sys::nvrtcResult) -> String {
    // SAFETY: NVRTC returns a static string for any status.
    let text = unsafe { sys::nvrtcGetErrorString(status) };
    if text.is_null() {
        return format!("{status:?}");
    }
    // SAFETY: non-null, NUL-terminated, static.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

fn check(status: sys::nvrtcResult, call: &str) -> Result<(), String> {
    if status == sys::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed: {}", error_string(status)))
    }
}

fn missing() -> String {
    "the NVRTC library (libnvrtc.so.12) was not found: install the CUDA toolkit or the \
     nvidia-cuda-nvrtc-cu12 wheel and put its lib directory on LD_LIBRARY_PATH"
        .to_string()
}

/// The names of the `.entry` directives in PTX text.
pub fn ptx_entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix(".visible .entry ")?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_options() {
        assert_eq!(
            Target::Ptx { major: 8, minor: 0 }.arch_option(),
            "--gpu-architecture=compute_80"
        );
        assert_eq!(
            Target::Cubin { major: 9, minor: 0 }.arch_option(),
            "--gpu-architecture=sm_90"
        );
    }

    #[test]
    fn finds_entries_in_ptx() {
        let ptx = ".version 8.8\n.target sm_80\n.visible .entry unary_exp_f32(\n\t.param .u64 a\n)\n.visible .entry fill_bool(\n";
        assert_eq!(ptx_entries(ptx), vec!["unary_exp_f32", "fill_bool"]);
    }
}
