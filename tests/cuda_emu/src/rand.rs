//! cuRAND: a pseudo-random generator per handle, on the handle's stream. The sequence is not
//! cuRAND's (XORWOW/Philox), but the distributions are: uniform in (0, 1] and normal by the
//! Box-Muller transform, normal counts even as cuRAND requires.
use crate::driver::{emu, lock};
use crate::splitmix;
use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::{Mutex, OnceLock};

pub type Status = u32;
pub const SUCCESS: Status = 0;
pub const NOT_INITIALIZED: Status = 101;
pub const TYPE_ERROR: Status = 103;
pub const LENGTH_NOT_MULTIPLE: Status = 105;
pub const LAUNCH_FAILURE: Status = 201;

#[derive(Clone, Copy, Default)]
struct Generator {
    seed: u64,
    offset: u64,
    stream: u64,
}

fn generators() -> &'static Mutex<HashMap<u64, Generator>> {
    static G: OnceLock<Mutex<HashMap<u64, Generator>>> = OnceLock::new();
    G.get_or_init(Default::default)
}

/// The `i`-th 64 random bits of the sequence for `seed`.
pub fn bits(seed: u64, i: u64) -> u64 {
    splitmix(
        splitmix(seed ^ 0x5EED_0000_0000_0000).wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
    )
}

/// Uniform in (0, 1] with 53 random bits (24 kept for f32 by rounding the f64).
pub fn uniform(seed: u64, i: u64) -> f64 {
    ((bits(seed, i) >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Normal pairs (Box-Muller): values 2j and 2j+1 from uniforms 2j and 2j+1.
pub fn normal(seed: u64, i: u64, mean: f64, std: f64) -> f64 {
    let pair = i & !1;
    let (u1, u2) = (uniform(seed, pair), uniform(seed, pair + 1));
    let r = (-2.0 * u1.ln()).sqrt();
    let theta = 2.0 * std::f64::consts::PI * u2;
    let z = if i % 2 == 0 {
        r * theta.cos()
    } else {
        r * theta.sin()
    };
    mean + std * z
}

#[no_mangle]
pub unsafe extern "C" fn curandCreateGenerator(generator: *mut u64, _rng_type: c_int) -> Status {
    if generator.is_null() {
        return NOT_INITIALIZED;
    }
    let h = emu().handle();
    lock(generators()).insert(
        h,
        Generator {
            seed: 0,
            offset: 0,
            stream: 0,
        },
    );
    *generator = h;
    SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn curandDestroyGenerator(generator: u64) -> Status {
    lock(generators())
        .remove(&generator)
        .map_or(NOT_INITIALIZED, |_| SUCCESS)
}

#[no_mangle]
pub unsafe extern "C" fn curandSetStream(generator: u64, stream: u64) -> Status {
    lock(generators())
        .get_mut(&generator)
        .map_or(NOT_INITIALIZED, |g| {
            g.stream = stream;
            SUCCESS
        })
}

#[no_mangle]
pub unsafe extern "C" fn curandSetPseudoRandomGeneratorSeed(generator: u64, seed: u64) -> Status {
    lock(generators())
        .get_mut(&generator)
        .map_or(NOT_INITIALIZED, |g| {
            // As in cuRAND: the state restarts from the new seed at the generator's current
            // offset, which generating has advanced; only curandSetGeneratorOffset rewinds it
            // (a real H200 showed this; the emulator used to rewind here and hid the bug).
            g.seed = seed;
            SUCCESS
        })
}

#[no_mangle]
pub unsafe extern "C" fn curandSetGeneratorOffset(generator: u64, offset: u64) -> Status {
    lock(generators())
        .get_mut(&generator)
        .map_or(NOT_INITIALIZED, |g| {
            g.offset = offset;
            SUCCESS
        })
}

fn generate(
    generator: u64,
    out: u64,
    n: usize,
    width: usize,
    value: impl Fn(u64, u64) -> f64 + Send + 'static,
) -> Status {
    let (seed, start, stream) = {
        let mut table = lock(generators());
        let Some(g) = table.get_mut(&generator) else {
            return NOT_INITIALIZED;
        };
        let at = g.offset;
        g.offset += n as u64;
        (g.seed, at, g.stream)
    };
    let Ok(s) = emu().stream(stream) else {
        return NOT_INITIALIZED;
    };
    let job = move || {
        let mut raw = Vec::with_capacity(n * width);
        for i in 0..n as u64 {
            let v = value(seed, start + i);
            if width == 4 {
                raw.extend_from_slice(&(v as f32).to_le_bytes());
            } else {
                raw.extend_from_slice(&v.to_le_bytes());
            }
        }
        emu().memory.write(out, &raw).inspect_err(|_| {
            crate::report(&format!(
                "curandGenerate: {n} values at {out:#x} do not fit in an allocation"
            ));
        })
    };
    match s.submit(Box::new(job)) {
        Ok(_) => SUCCESS,
        Err(_) => LAUNCH_FAILURE,
    }
}

/// f32 uniforms must stay in (0, 1]: rounding 1 - 2^-53 to f32 gives 1.0, which is allowed.
#[no_mangle]
pub unsafe extern "C" fn curandGenerateUniform(generator: u64, out: u64, n: usize) -> Status {
    generate(generator, out, n, 4, uniform)
}

#[no_mangle]
pub unsafe extern "C" fn curandGenerateUniformDouble(generator: u64, out: u64, n: usize) -> Status {
    generate(generator, out, n, 8, uniform)
}

#[no_mangle]
pub unsafe extern "C" fn curandGenerateNormal(
    generator: u64,
    out: u64,
    n: usize,
    mean: f32,
    std: f32,
) -> Status {
    if n % 2 != 0 {
        return LENGTH_NOT_MULTIPLE;
    }
    generate(generator, out, n, 4, move |s, i| {
        normal(s, i, mean as f64, std as f64)
    })
}

#[no_mangle]
pub unsafe extern "C" fn curandGenerateNormalDouble(
    generator: u64,
    out: u64,
    n: usize,
    mean: f64,
    std: f64,
) -> Status {
    if n % 2 != 0 {
        return LENGTH_NOT_MULTIPLE;
    }
    generate(generator, out, n, 8, move |s, i| normal(s, i, mean, std))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_have_the_right_moments() {
        let n = 200_000u64;
        let u: Vec<f64> = (0..n).map(|i| uniform(7, i)).collect();
        assert!(u.iter().all(|&x| x > 0.0 && x <= 1.0));
        let mean = u.iter().sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.005, "{mean}");
        let z: Vec<f64> = (0..n).map(|i| normal(7, i, 1.0, 2.0)).collect();
        let m = z.iter().sum::<f64>() / n as f64;
        let var = z.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
        assert!(
            (m - 1.0).abs() < 0.02 && (var.sqrt() - 2.0).abs() < 0.02,
            "{m} {var}"
        );
        assert_ne!(uniform(1, 0), uniform(2, 0));
    }
}
