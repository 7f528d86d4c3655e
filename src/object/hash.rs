//! CPython's hash values: numbers (modulo 2**61 - 1, equal numbers hash equal), tuples
//! (xxHash's mixing) and frozensets; other keys hash by their `HashKey` (CPython salts str
//! hashes per run, so no value is "right" for them). Sets order their items by these.

/// The modulus of CPython's numeric hash: 2**61 - 1.
const HASH_MODULUS: u64 = (1 << 61) - 1;

/// The hash of a key: CPython's for numbers, tuples and frozensets.
pub fn key_hash(k: &super::value::HashKey) -> i64 {
    use super::value::HashKey;
    use std::hash::{Hash, Hasher};
    match k {
        HashKey::Int(n) => int_hash(*n),
        HashKey::BigInt(n) => super::bigint::hash(n),
        HashKey::Float(bits) => float_hash(f64::from_bits(*bits)),
        HashKey::FrozenSet(f) => f.hash,
        HashKey::Object(o) => o.hash,
        HashKey::Tuple(items) => {
            // CPython 3.8+'s tuple hash (xxHash's mixing).
            const P1: u64 = 11400714785074694791;
            const P2: u64 = 14029467366897019727;
            const P5: u64 = 2870177450012600261;
            let mut acc = P5;
            for item in items {
                let lane = key_hash(item) as u64;
                acc = acc.wrapping_add(lane.wrapping_mul(P2));
                acc = acc.rotate_left(31);
                acc = acc.wrapping_mul(P1);
            }
            acc = acc.wrapping_add(items.len() as u64 ^ (P5 ^ 3527539));
            if acc == u64::MAX {
                1546275796
            } else {
                acc as i64
            }
        }
        other => {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            other.hash(&mut h);
            h.finish() as i64
        }
    }
}

fn int_hash(n: i64) -> i64 {
    let r = (n.unsigned_abs() % HASH_MODULUS) as i64;
    let h = if n < 0 { -r } else { r };
    if h == -1 {
        -2
    } else {
        h
    }
}

/// CPython's `_Py_HashDouble`: a float equal to an integer hashes as that integer.
pub fn float_hash(v: f64) -> i64 {
    const BITS: i32 = 61;
    if v.is_infinite() {
        return if v > 0.0 { 314159 } else { -314159 };
    }
    if v.is_nan() {
        return 0;
    }
    let (mut m, e) = frexp(v);
    let mut e = e as i32;
    let sign: i64 = if m < 0.0 {
        m = -m;
        -1
    } else {
        1
    };
    let mut x: u64 = 0;
    while m != 0.0 {
        x = ((x << 28) & HASH_MODULUS) | x >> (BITS - 28);
        m *= 268435456.0;
        e -= 28;
        let y = m as u64;
        m -= y as f64;
        x += y;
        if x >= HASH_MODULUS {
            x -= HASH_MODULUS;
        }
    }
    let e = if e >= 0 {
        e % BITS
    } else {
        BITS - 1 - ((-1 - e) % BITS)
    };
    x = ((x << e) & HASH_MODULUS) | x >> (BITS - e);
    let h = (x as i64).wrapping_mul(sign);
    if h == -1 {
        -2
    } else {
        h
    }
}

/// C's `frexp`: `x = m * 2**e` with 0.5 <= |m| < 1, read from the bits (subnormals scaled up
/// first). `math.frexp` is this one.
pub fn frexp(x: f64) -> (f64, i64) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let (x, shift) = if x.abs() < f64::MIN_POSITIVE {
        (x * 2f64.powi(54), -54)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (m, exp - 1022 + shift)
}
