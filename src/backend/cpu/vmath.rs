//! Vectorised float32 `exp`, the one transcendental the benchmark workloads lean on.
//!
//! libm's `expf` is scalar (~20 cycles an element). This one is straight-line arithmetic the
//! compiler vectorises, compiled for AVX-512, AVX2 and the baseline, the widest the CPU has
//! picked at run time. It computes in f64 and rounds once to f32, so it is the correctly rounded
//! exp for all but a vanishing fraction of inputs (glibc's `expf`, < 0.502 ULP, is one ULP off
//! in about 7 of 100,000 inputs). Its multiply-adds are `mul_add`, which rounds once on every
//! CPU, so every instruction set gives the same bits.

/// exp of every element of `buf`, in place.
pub fn exp_f32_inplace(buf: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        let fma = std::arch::is_x86_feature_detected!("fma");
        if fma
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            // SAFETY: the CPU has every feature the function is compiled for (checked above).
            return unsafe { exp_avx512(buf) };
        }
        if fma && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            return unsafe { exp_avx2(buf) };
        }
    }
    exp_portable(buf);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,fma")]
unsafe fn exp_avx512(buf: &mut [f32]) {
    exp_portable(buf);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_avx2(buf: &mut [f32]) {
    exp_portable(buf);
}

#[inline(always)]
fn exp_portable(buf: &mut [f32]) {
    for x in buf.iter_mut() {
        *x = exp_one(*x);
    }
}

/// 1.5 * 2^52: adding it rounds a double (|t| < 2^51) to an integer held in the low mantissa bits.
const ROUNDER: f64 = 6755399441055744.0;

/// 1/k! for k = 0..=10: the Taylor series of exp.
const COEFFS: [f64; 11] = [
    1.0,
    1.0,
    0.5,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362880.0,
    1.0 / 3628800.0,
];

/// exp(x) = 2^n * exp(r), n = round(x / ln 2), |r| <= ln2 / 2, exp(r) by its Taylor series to
/// r^10 (truncation error below 2.3e-13 relative; an f32 half-ULP is 3e-8).
#[inline(always)]
fn exp_one(x: f32) -> f32 {
    // Beyond +-200 the result is inf or 0 in f32 either way; clamping keeps 2^n a normal double.
    let xc = f64::from(x.clamp(-200.0, 200.0));
    let t = xc * std::f64::consts::LOG2_E + ROUNDER;
    let n = t - ROUNDER;
    let r = (-n).mul_add(std::f64::consts::LN_2, xc);
    // 2^n built from its exponent bits; the rounder's bit pattern holds n in its low bits.
    let scale = f64::from_bits(t.to_bits().wrapping_add(1023) << 52);
    // Horner with fused multiply-adds: `mul_add` rounds once on every CPU (in hardware where
    // the CPU has FMA, else in libm), so each instruction set gives the same bits.
    // Estrin's scheme: the same series as Horner's rule but a dependency chain of 5 steps
    // instead of 10, so the vectorised loop is not bound by multiply-add latency.
    let c = |k: usize| COEFFS[k];
    let r2 = r * r;
    let r4 = r2 * r2;
    let r8 = r4 * r4;
    let q01 = c(1).mul_add(r, c(0));
    let q23 = c(3).mul_add(r, c(2));
    let q45 = c(5).mul_add(r, c(4));
    let q67 = c(7).mul_add(r, c(6));
    let q89 = c(9).mul_add(r, c(8));
    let s0 = q23.mul_add(r2, q01);
    let s1 = q67.mul_add(r2, q45);
    let s2 = c(10).mul_add(r2, q89);
    let p = s2.mul_add(r8, s1.mul_add(r4, s0));
    let y = (p * scale) as f32;
    // NaN in, NaN out (the clamp would have turned it into a number).
    if x.is_nan() {
        x
    } else {
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn special_values() {
        let mut v = [
            0.0,
            -0.0,
            1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            88.72283,
            88.72284,
            -103.97208,
            -87.33655,
            -104.0,
            1e-30,
        ];
        exp_f32_inplace(&mut v);
        assert_eq!(v[0], 1.0);
        assert_eq!(v[1], 1.0);
        assert_eq!(v[2], std::f32::consts::E);
        assert_eq!(v[3], f32::INFINITY);
        assert_eq!(v[4], 0.0);
        assert!(v[5].is_nan());
        assert_eq!(v[6], f32::MAX.min(88.72283f32.exp()));
        assert_eq!(v[7], f32::INFINITY);
        assert_eq!(v[8], (-103.97208f32).exp()); // subnormal
        assert_eq!(v[9], (-87.33655f32).exp());
        assert_eq!(v[10], 0.0);
        assert_eq!(v[11], 1.0);
    }

    /// Every 997th float (every n-th with DEVARRAY_EXP_STEP=n) in the range where exp is finite
    /// and nonzero: the result is exp computed in f64 and rounded once, i.e. correctly rounded.
    /// glibc's `expf` (< 0.502 ULP) is one ULP away in a few near-halfway cases.
    #[test]
    fn correctly_rounded() {
        let step = std::env::var("DEVARRAY_EXP_STEP")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(997);
        let lo = (-104.0f32).to_bits();
        let hi = 89.0f32.to_bits();
        let inputs: Vec<f32> = (0..=hi)
            .step_by(step)
            .chain((0x8000_0000..=lo).step_by(step))
            .map(f32::from_bits)
            .collect();
        let mut got = inputs.clone();
        exp_f32_inplace(&mut got);
        let mut libm_off = 0usize;
        for (x, y) in inputs.iter().zip(&got) {
            let want = f64::from(*x).exp() as f32;
            assert_eq!(y.to_bits(), want.to_bits(), "exp({x:e}) = {y:e}, not {want:e}");
            match ulps(*y, x.exp()) {
                0 => {}
                1 => libm_off += 1,
                _ => panic!("libm's expf({x:e}) = {:e} is more than one ULP away", x.exp()),
            }
        }
        eprintln!("{} values; libm one ULP off in {libm_off}", inputs.len());
    }

    /// Throughput on one thread (`cargo test --release --lib exp_speed -- --ignored --nocapture`).
    #[test]
    #[ignore = "a measurement, not a check"]
    fn exp_speed() {
        let mut buf: Vec<f32> = (0..1 << 14).map(|i| (i % 200) as f32 * 0.5 - 50.0).collect();
        let start = std::time::Instant::now();
        for _ in 0..2000 {
            exp_f32_inplace(&mut buf);
            buf.iter_mut().for_each(|x| *x = x.min(50.0));
        }
        let per = start.elapsed().as_secs_f64() / (2000.0 * buf.len() as f64);
        eprintln!("exp: {:.3} ns per element", per * 1e9);
    }
}
