//! Run-time choice of vector instructions for the hot loops.
//!
//! The crate is built for baseline x86-64 (SSE2), so it runs on any 64-bit x86 CPU. A loop that
//! should use the CPU's widest vectors is written once as a plain function and wrapped with
//! [`multiversion!`], which compiles it three times (AVX-512, AVX2 + FMA, baseline) and calls
//! the best the CPU supports. Rust never fuses a multiply and an add on its own, so every
//! version computes the same bits; only the speed differs.

/// `multiversion! { pub fn name<T: Bound>(args) -> Ret { body } }` (the type parameter is optional): `body` compiled for
/// AVX-512, AVX2 + FMA and the baseline, the widest the CPU has picked on each call (one cached
/// feature check).
macro_rules! multiversion {
    ($(#[$meta:meta])* $vis:vis fn $name:ident $(<$T:ident: $bound:path>)? ($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$meta])*
        $vis fn $name $(<$T: $bound>)? ($($arg: $ty),*) -> $ret {
            #[inline(always)]
            fn body $(<$T: $bound>)? ($($arg: $ty),*) -> $ret $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
                unsafe fn v4 $(<$T: $bound>)? ($($arg: $ty),*) -> $ret {
                    body($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn v3 $(<$T: $bound>)? ($($arg: $ty),*) -> $ret {
                    body($($arg),*)
                }
                match $crate::backend::cpu::simd::level() {
                    // SAFETY: `level` reported every feature the version is compiled for.
                    $crate::backend::cpu::simd::Level::Avx512 => return unsafe { v4($($arg),*) },
                    // SAFETY: as above.
                    $crate::backend::cpu::simd::Level::Avx2 => return unsafe { v3($($arg),*) },
                    $crate::backend::cpu::simd::Level::Baseline => {}
                }
            }
            body($($arg),*)
        }
    };
}
pub(crate) use multiversion;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Level {
    Baseline,
    Avx2,
    Avx512,
}

/// The widest instruction set this CPU has (detected once).
pub fn level() -> Level {
    use std::sync::OnceLock;
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let avx2 = has!("avx2") && has!("fma");
            if avx2 && has!("avx512f") && has!("avx512dq") && has!("avx512vl") {
                return Level::Avx512;
            }
            if avx2 {
                return Level::Avx2;
            }
        }
        Level::Baseline
    })
}
