//! `np.random.default_rng(seed)`: NumPy's `Generator` on the PCG64 bit generator, number for
//! number with NumPy 1.23 for `random`, `integers`, `uniform`, `choice` (with replacement,
//! with `p`, and without replacement by Floyd's algorithm or a tail shuffle), `permutation` and
//! `shuffle`: the seed goes through `SeedSequence` (its hash mixing and `generate_state`),
//! PCG64 is the 128-bit LCG with the XSL-RR output, doubles take the top 53 bits, bounded
//! integers use Lemire's method on 32-bit halves of the 64-bit draws (64-bit products for wide ranges) and
//! shuffles `random_interval`'s masked rejection. `standard_normal`/`normal` use NumPy's
//! ziggurat with tables computed here from the Marsaglia-Tsang recursion (NumPy ships them
//! precomputed): the same algorithm and draws, but a table entry may differ in its last bits
//! from NumPy's, so a sample may differ far down its digits.

use std::cell::RefCell;
use std::rc::Rc;

use super::random::BitSource;
use crate::modules::array::numpy_fns::as_array;
use crate::modules::array::scalars::scalar;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, Flavor, Module, NativeObject, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{DType, Device, HostData, Scalar};

// ------------------------------------------------------------------ SeedSequence

const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
const XSHIFT: u32 = 16;

fn hashmix(value: u32, hash_const: &mut u32) -> u32 {
    let mut v = value ^ *hash_const;
    *hash_const = hash_const.wrapping_mul(MULT_A);
    v = v.wrapping_mul(*hash_const);
    v ^ (v >> XSHIFT)
}

fn mix(x: u32, y: u32) -> u32 {
    let r = MIX_MULT_L
        .wrapping_mul(x)
        .wrapping_sub(MIX_MULT_R.wrapping_mul(y));
    r ^ (r >> XSHIFT)
}

/// `SeedSequence(entropy).generate_state(n_words)` (32-bit words).
fn seed_sequence_state(entropy: &[u32], n_words: usize) -> Vec<u32> {
    let mut pool = [0u32; 4];
    let mut hc = INIT_A;
    for (i, slot) in pool.iter_mut().enumerate() {
        *slot = hashmix(entropy.get(i).copied().unwrap_or(0), &mut hc);
    }
    for src in 0..4 {
        for dst in 0..4 {
            if src != dst {
                let h = hashmix(pool[src], &mut hc);
                pool[dst] = mix(pool[dst], h);
            }
        }
    }
    for &e in entropy.iter().skip(4) {
        for slot in pool.iter_mut() {
            let h = hashmix(e, &mut hc);
            *slot = mix(*slot, h);
        }
    }
    let mut hb = INIT_B;
    (0..n_words)
        .map(|i| {
            let mut v = pool[i % 4] ^ hb;
            hb = hb.wrapping_mul(MULT_B);
            v = v.wrapping_mul(hb);
            v ^ (v >> XSHIFT)
        })
        .collect()
}

// ------------------------------------------------------------------ PCG64

const PCG_MULT: u128 = 0x2360_ED05_1FC6_5DA4_4385_DF64_9FCC_F645;

struct Pcg64 {
    state: u128,
    inc: u128,
    /// The upper half of the last 64-bit draw, for the next 32-bit one.
    buffered: Option<u32>,
}

impl BitSource for Pcg64 {
    fn next_u64(&mut self) -> u64 {
        self.step();
        let s = self.state;
        let x = ((s >> 64) as u64) ^ (s as u64);
        x.rotate_right((s >> 122) as u32)
    }
    fn next_u32(&mut self) -> u32 {
        if let Some(b) = self.buffered.take() {
            return b;
        }
        let n = self.next_u64();
        self.buffered = Some((n >> 32) as u32);
        n as u32
    }
}

impl Pcg64 {
    fn from_entropy(entropy: &[u32]) -> Pcg64 {
        let w = seed_sequence_state(entropy, 8);
        let u = |k: usize| u64::from(w[2 * k]) | (u64::from(w[2 * k + 1]) << 32);
        let initstate = (u128::from(u(0)) << 64) | u128::from(u(1));
        let initseq = (u128::from(u(2)) << 64) | u128::from(u(3));
        let mut g = Pcg64 {
            state: 0,
            inc: (initseq << 1) | 1,
            buffered: None,
        };
        g.step();
        g.state = g.state.wrapping_add(initstate);
        g.step();
        g
    }
    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }
    fn next_double(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }
}

/// A draw in [0, rng] by Lemire's method (NumPy's `random_bounded_uint64`): 32-bit draws from
/// `draw32` when the range fits them, else 64-bit products.
fn bounded(g: &mut Pcg64, rng: u64, draw32: &mut dyn FnMut(&mut Pcg64) -> u32) -> u64 {
    if rng == 0 {
        return 0;
    }
    if rng <= 0xFFFF_FFFF {
        if rng == 0xFFFF_FFFF {
            return u64::from(draw32(g));
        }
        let excl = rng as u32 + 1;
        let mut m = u64::from(draw32(g)) * u64::from(excl);
        let mut leftover = m as u32;
        if leftover < excl {
            let threshold = (u32::MAX - rng as u32) % excl;
            while leftover < threshold {
                m = u64::from(draw32(g)) * u64::from(excl);
                leftover = m as u32;
            }
        }
        return m >> 32;
    }
    if rng == u64::MAX {
        return g.next_u64();
    }
    let excl = rng + 1;
    let mut m = u128::from(g.next_u64()) * u128::from(excl);
    let mut leftover = m as u64;
    if leftover < excl {
        let threshold = (u64::MAX - rng) % excl;
        while leftover < threshold {
            m = u128::from(g.next_u64()) * u128::from(excl);
            leftover = m as u64;
        }
    }
    (m >> 64) as u64
}

// ------------------------------------------------------------------ the ziggurat

struct Ziggurat {
    ki: [u64; 256],
    wi: [f64; 256],
    fi: [f64; 256],
}

const ZIG_R: f64 = 3.654_152_885_361_009;
const ZIG_INV_R: f64 = 0.273_661_237_329_758_3;

fn ziggurat() -> &'static Ziggurat {
    static TABLES: std::sync::OnceLock<Ziggurat> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| {
        let f = |x: f64| (-0.5 * x * x).exp();
        // The area of each layer: the base strip's rectangle and tail.
        let v = ZIG_R * f(ZIG_R)
            + (std::f64::consts::PI / 2.0).sqrt() * libm::erfc(ZIG_R / std::f64::consts::SQRT_2);
        let m = 4_503_599_627_370_496.0; // 2^52
        let mut x = [0.0f64; 256];
        x[255] = ZIG_R;
        for i in (2..=255).rev() {
            x[i - 1] = (-2.0 * (v / x[i] + f(x[i])).ln()).sqrt();
        }
        let x0 = v / f(ZIG_R);
        let mut z = Ziggurat {
            ki: [0; 256],
            wi: [0.0; 256],
            fi: [0.0; 256],
        };
        z.ki[0] = (ZIG_R / x0 * m) as u64;
        z.wi[0] = x0 / m;
        z.fi[0] = 1.0;
        for i in 1..256 {
            z.ki[i] = if i == 1 {
                0
            } else {
                (x[i - 1] / x[i] * m) as u64
            };
            z.wi[i] = x[i] / m;
            z.fi[i] = f(x[i]);
        }
        z
    })
}

fn standard_normal(g: &mut Pcg64) -> f64 {
    let z = ziggurat();
    loop {
        let mut r = g.next_u64();
        let idx = (r & 0xff) as usize;
        r >>= 8;
        let sign = r & 1;
        let rabs = (r >> 1) & 0x000f_ffff_ffff_ffff;
        let mut x = rabs as f64 * z.wi[idx];
        if sign == 1 {
            x = -x;
        }
        if rabs < z.ki[idx] {
            return x;
        }
        if idx == 0 {
            loop {
                let xx = -ZIG_INV_R * (-g.next_double()).ln_1p();
                let yy = -(-g.next_double()).ln_1p();
                if yy + yy > xx * xx {
                    return if (rabs >> 8) & 1 == 1 {
                        -(ZIG_R + xx)
                    } else {
                        ZIG_R + xx
                    };
                }
            }
        } else if (z.fi[idx - 1] - z.fi[idx]) * g.next_double() + z.fi[idx] < (-0.5 * x * x).exp() {
            return x;
        }
    }
}

// ------------------------------------------------------------------ the Generator object

struct Generator {
    bits: RefCell<Pcg64>,
}

impl NativeObject for Generator {
    fn type_name(&self) -> &str {
        "Generator"
    }
    fn repr(&self) -> String {
        format!("Generator(PCG64) at {:#X}", self as *const _ as usize)
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let (n, doc, f) = METHODS.iter().find(|(n, _, _)| *n == name)?;
        Some(method(&Value::Object(this.clone()), n, doc, *f))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        METHODS.iter().map(|(n, _, _)| *n).collect()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

type M = crate::object::value::MethodFn;

const METHODS: &[(&str, &str, M)] = &[
    ("random", "random(size=None): uniform samples in [0, 1).", random),
    ("integers", "integers(low, high=None, size=None, dtype=np.int64, endpoint=False): integers in [low, high).", integers),
    ("uniform", "uniform(low=0.0, high=1.0, size=None): uniform samples in [low, high).", uniform),
    ("standard_normal", "standard_normal(size=None): standard normal samples.", std_normal),
    ("normal", "normal(loc=0.0, scale=1.0, size=None): Gaussian samples.", normal),
    ("choice", "choice(a, size=None, replace=True, p=None, shuffle=True): samples from a 1-D array, or from arange(a).", choice),
    ("permutation", "permutation(x): a shuffled arange(x), or a shuffled copy of x along its first axis.", permutation),
    ("shuffle", "shuffle(x): shuffle an array along its first axis, or a list, in place.", shuffle),
];

fn with<T>(r: &Value, f: impl FnOnce(&mut Pcg64) -> T) -> Result<T, Exc> {
    match r {
        Value::Object(o) => match o.as_any().downcast_ref::<Generator>() {
            Some(g) => Ok(f(&mut g.bits.borrow_mut())),
            None => Err(Exc::type_error("expected a numpy.random.Generator")),
        },
        _ => Err(Exc::type_error("expected a numpy.random.Generator")),
    }
}

fn size_arg(v: Option<Value>) -> Result<Option<Vec<usize>>, Exc> {
    match v {
        None => Ok(None),
        Some(Value::None) => Ok(None),
        Some(v) => crate::modules::array::arrays::shape_arg(&v).map(Some),
    }
}

fn host(it: &mut dyn Interpreter, data: HostData, shape: &[usize]) -> Result<Value, Exc> {
    let arr = it.state_mut().rt.from_host(data, shape, Device::cpu(0))?;
    Ok(wrap(arr, Flavor::Numpy))
}

/// The number of elements of `shape`, or MemoryError when it cannot be held.
fn count(shape: &[usize]) -> Result<usize, Exc> {
    let n = shape
        .iter()
        .try_fold(1usize, |n, d| n.checked_mul(*d))
        .filter(|n| *n <= isize::MAX as usize / 8)
        .ok_or_else(crate::object::alloc::memory_error)?;
    // Reserve once, so a refused size is an error here rather than an abort later.
    crate::object::alloc::vec::<u64>(n)?;
    Ok(n)
}

fn floats(
    it: &mut dyn Interpreter,
    r: &Value,
    shape: Option<Vec<usize>>,
    mut draw: impl FnMut(&mut Pcg64) -> f64,
) -> Result<Value, Exc> {
    let Some(shape) = shape else {
        return Ok(Value::Float(with(r, |g| draw(g))?));
    };
    let n = count(&shape)?;
    let out: Vec<f64> = with(r, |g| (0..n).map(|_| draw(g)).collect())?;
    host(it, HostData::F64(out), &shape)
}

fn num(v: Option<Value>, name: &str, default: f64) -> Result<f64, Exc> {
    match v {
        None => Ok(default),
        Some(Value::None) => Ok(default),
        Some(v) => as_f64(&v).ok_or_else(|| {
            Exc::type_error(format!("{name} must be a number, not {}", v.type_name()))
        }),
    }
}

fn random(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let size = size_arg(a.take(0, "size")?)?;
    a.take(1, "dtype")?;
    a.take(2, "out")?;
    a.finish(3)?;
    floats(it, r, size, |g| g.next_double())
}

fn uniform(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let low = num(a.take(0, "low")?, "low", 0.0)?;
    let high = num(a.take(1, "high")?, "high", 1.0)?;
    let size = size_arg(a.take(2, "size")?)?;
    a.finish(3)?;
    let range = high - low;
    if !range.is_finite() {
        return Err(Exc::new(
            ExcKind::OverflowError,
            "Range exceeds valid bounds",
        ));
    }
    floats(it, r, size, move |g| low + range * g.next_double())
}

fn std_normal(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let size = size_arg(a.take(0, "size")?)?;
    a.take(1, "dtype")?;
    a.take(2, "out")?;
    a.finish(3)?;
    floats(it, r, size, standard_normal)
}

fn normal(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let loc = num(a.take(0, "loc")?, "loc", 0.0)?;
    let scale = num(a.take(1, "scale")?, "scale", 1.0)?;
    let size = size_arg(a.take(2, "size")?)?;
    a.finish(3)?;
    if scale < 0.0 {
        return Err(Exc::value_error("scale < 0"));
    }
    floats(it, r, size, move |g| loc + scale * standard_normal(g))
}

fn integers(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let low = a.required(0, "low")?;
    let high = a.take(1, "high")?;
    let size = size_arg(a.take(2, "size")?)?;
    let dtype = a.take(3, "dtype")?;
    let endpoint = a.flag(4, "endpoint", false)?;
    a.finish(5)?;
    let int = |v: &Value, name: &str| {
        as_i64(v).ok_or_else(|| {
            Exc::type_error(format!("{name} must be an integer, not {}", v.type_name()))
        })
    };
    let (lo, hi) = match &high {
        None | Some(Value::None) => (0, int(&low, "low")?),
        Some(h) => (int(&low, "low")?, int(h, "high")?),
    };
    let hi_incl = if endpoint { hi } else { hi - 1 };
    if hi_incl < lo {
        return Err(Exc::value_error(if endpoint {
            "low > high"
        } else {
            "low >= high"
        }));
    }
    let dtype = match dtype.as_ref().filter(|d| !matches!(d, Value::None)) {
        Some(d) => crate::modules::array::arrays::dtype_arg(d)?.unwrap_or(DType::Int64),
        None => DType::Int64,
    };
    let rng = (hi_incl as i128 - lo as i128) as u64;
    let n = size.as_deref().map_or(Ok(1), count)?;
    let out: Vec<i64> = with(r, |g| {
        (0..n)
            .map(|_| lo.wrapping_add(bounded(g, rng, &mut |g| g.next_u32()) as i64))
            .collect()
    })?;
    match size {
        None => Ok(scalar(
            dtype,
            Scalar::Int(out.first().copied().unwrap_or(lo)),
        )),
        Some(shape) => {
            let arr = it
                .state_mut()
                .rt
                .from_host(HostData::I64(out), &shape, Device::cpu(0))?;
            let arr = if dtype == DType::Int64 {
                arr
            } else {
                arr.astype(dtype)?
            };
            Ok(wrap(arr, Flavor::Numpy))
        }
    }
}

/// Fisher-Yates from the end, as NumPy's `_shuffle_raw` (first index kept at `first`).
fn shuffle_indices(g: &mut Pcg64, data: &mut [usize], first: usize) {
    for i in (first.max(1)..data.len()).rev() {
        let j = g.interval(i as u64) as usize;
        data.swap(i, j);
    }
}

/// NumPy's `_shuffle_int`: as `shuffle_indices`, the swaps drawn by Lemire's method.
fn shuffle_bounded(g: &mut Pcg64, data: &mut [usize], first: usize) {
    for i in (first..data.len()).rev() {
        let j = bounded(g, i as u64, &mut |g| g.next_u32()) as usize;
        data.swap(i, j);
    }
}

fn choice(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let pop = a.required(0, "a")?;
    let size = size_arg(a.take(1, "size")?)?;
    let replace = a.flag(2, "replace", true)?;
    let p = a.take(3, "p")?;
    a.take(4, "axis")?;
    let do_shuffle = a.flag(5, "shuffle", true)?;
    a.finish(6)?;
    let (items, n) = match as_i64(&pop) {
        Some(k) if !matches!(pop, Value::Array(_)) => {
            if k <= 0 {
                return Err(Exc::value_error(
                    "a must be a positive integer unless no samples are taken",
                ));
            }
            (None, k as usize)
        }
        _ => {
            let arr = as_array(it, &pop)?;
            if arr.array.ndim() == 0 {
                return Err(Exc::value_error(
                    "a must be a sequence or an integer, not 0-d array",
                ));
            }
            let n = arr.array.shape()[0];
            if n == 0 {
                return Err(Exc::value_error(
                    "a cannot be empty unless no samples are taken",
                ));
            }
            (Some(arr), n)
        }
    };
    let count = size.as_deref().map_or(Ok(1), count)?;
    let probs = match &p {
        None | Some(Value::None) => None,
        Some(v) => {
            let pv = as_array(it, v)?.array.to_host().to_f64_vec();
            if pv.len() != n {
                return Err(Exc::value_error("'a' and 'p' must have same size"));
            }
            if pv.iter().any(|x| *x < 0.0) {
                return Err(Exc::value_error("probabilities are not non-negative"));
            }
            let total: f64 = pv.iter().sum();
            if (total - 1.0).abs() > f64::EPSILON.sqrt() {
                return Err(Exc::value_error("probabilities do not sum to 1"));
            }
            Some(pv)
        }
    };
    if !replace && count > n {
        return Err(Exc::value_error(
            "Cannot take a larger sample than population when replace is False",
        ));
    }
    let idx: Vec<usize> = with(r, |g| -> Result<Vec<usize>, Exc> {
        Ok(match (replace, &probs) {
            (true, Some(pv)) => {
                let mut cdf: Vec<f64> = pv
                    .iter()
                    .scan(0.0, |s, x| {
                        *s += x;
                        Some(*s)
                    })
                    .collect();
                let last = cdf.last().copied().unwrap_or(1.0);
                for c in &mut cdf {
                    *c /= last;
                }
                (0..count)
                    .map(|_| {
                        let u = g.next_double();
                        cdf.partition_point(|c| *c <= u)
                    })
                    .collect()
            }
            (true, None) => (0..count)
                .map(|_| bounded(g, (n - 1) as u64, &mut |g| g.next_u32()) as usize)
                .collect(),
            (false, Some(_)) => {
                return Err(Exc::value_error(
                    "choice(replace=False, p=...) is not supported here",
                ));
            }
            (false, None) => {
                let cutoff = if do_shuffle { 50 } else { 20 };
                if n > 10000 && count > n / cutoff {
                    let mut all: Vec<usize> = (0..n).collect();
                    // Tail shuffle: only the last `count` places are drawn.
                    shuffle_bounded(g, &mut all, (n - count).max(1));
                    all[n - count..].to_vec()
                } else {
                    let set_size = (1.2 * count as f64) as u64;
                    let mask = if set_size == 0 {
                        0
                    } else {
                        u64::MAX >> set_size.leading_zeros()
                    };
                    let mut set = vec![u64::MAX; (mask + 1) as usize];
                    let mut out = vec![0usize; count];
                    for j in (n - count)..n {
                        let val = bounded(g, j as u64, &mut |g| g.next_u32());
                        let mut loc = (val & mask) as usize;
                        while set[loc] != u64::MAX && set[loc] != val {
                            loc = (loc + 1) & mask as usize;
                        }
                        if set[loc] == u64::MAX {
                            set[loc] = val;
                            out[j + count - n] = val as usize;
                        } else {
                            let mut loc = (j as u64 & mask) as usize;
                            while set[loc] != u64::MAX {
                                loc = (loc + 1) & mask as usize;
                            }
                            set[loc] = j as u64;
                            out[j + count - n] = j;
                        }
                    }
                    if do_shuffle {
                        shuffle_bounded(g, &mut out, 1);
                    }
                    out
                }
            }
        })
    })??;
    let picked: Vec<i64> = idx.iter().map(|i| *i as i64).collect();
    match (items, size) {
        (None, None) => Ok(scalar(DType::Int64, Scalar::Int(picked[0]))),
        (None, Some(shape)) => host(it, HostData::I64(picked), &shape),
        (Some(arr), size) => {
            let index =
                it.state_mut()
                    .rt
                    .from_host(HostData::I64(picked), &[count], Device::cpu(0))?;
            let taken = arr
                .array
                .index(&[crate::runtime::IndexItem::Array(index)])?;
            match size {
                None => {
                    let one = taken.index(&[crate::runtime::IndexItem::Int(0)])?;
                    if one.ndim() == 0 {
                        crate::object::ops::numpy_scalar(&one)
                    } else {
                        Ok(wrap(one, Flavor::Numpy))
                    }
                }
                Some(shape) => {
                    let mut full: Vec<isize> = shape.iter().map(|d| *d as isize).collect();
                    full.extend(arr.array.shape()[1..].iter().map(|d| *d as isize));
                    Ok(wrap(taken.reshape(&full)?, Flavor::Numpy))
                }
            }
        }
    }
}

/// The rows of `x` (or of `arange(n)`) in a shuffled order.
fn shuffled_order(r: &Value, n: usize) -> Result<Vec<usize>, Exc> {
    with(r, |g| {
        let mut idx: Vec<usize> = (0..n).collect();
        shuffle_indices(g, &mut idx, 1);
        idx
    })
}

fn permutation(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    a.take(1, "axis")?;
    a.finish(2)?;
    if let (Some(n), false) = (as_i64(&x), matches!(x, Value::Array(_))) {
        let n = count(&[n.max(0) as usize])?;
        let order = shuffled_order(r, n)?;
        let len = order.len();
        return host(
            it,
            HostData::I64(order.into_iter().map(|i| i as i64).collect()),
            &[len],
        );
    }
    let arr = as_array(it, &x)?;
    if arr.array.ndim() == 0 {
        return Err(Exc::new(
            ExcKind::AxisError,
            "axis 0 is out of bounds for array of dimension 0",
        ));
    }
    let n = arr.array.shape()[0];
    let order = shuffled_order(r, n)?;
    let index = it.state_mut().rt.from_host(
        HostData::I64(order.into_iter().map(|i| i as i64).collect()),
        &[n],
        Device::cpu(0),
    )?;
    Ok(wrap(
        arr.array
            .index(&[crate::runtime::IndexItem::Array(index)])?,
        Flavor::Numpy,
    ))
}

fn shuffle(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    a.take(1, "axis")?;
    a.finish(2)?;
    match &x {
        Value::Array(arr) => {
            if arr.array.ndim() == 0 {
                return Err(Exc::type_error(
                    "shuffle requires an array with at least one dimension",
                ));
            }
            let n = arr.array.shape()[0];
            let order = shuffled_order(r, n)?;
            let index = it.state_mut().rt.from_host(
                HostData::I64(order.into_iter().map(|i| i as i64).collect()),
                &[n],
                Device::cpu(0),
            )?;
            let taken = arr
                .array
                .index(&[crate::runtime::IndexItem::Array(index)])?;
            taken.copy_into(&arr.array)?;
            Ok(Value::None)
        }
        Value::List(l) => {
            let n = l.borrow().len();
            let order = shuffled_order(r, n)?;
            let old = l.borrow().clone();
            let mut items = l.borrow_mut();
            for (k, i) in order.into_iter().enumerate() {
                items[k] = old[i].clone();
            }
            Ok(Value::None)
        }
        other => Err(Exc::type_error(format!(
            "shuffle: expected an array or a list, not {}",
            other.type_name()
        ))),
    }
}

/// The entropy words of a seed: an int's 32-bit words (low first), or a sequence's.
fn entropy_of(it: &mut dyn Interpreter, seed: &Value) -> Result<Vec<u32>, Exc> {
    let words = |n: i64| -> Result<Vec<u32>, Exc> {
        if n < 0 {
            return Err(Exc::value_error("expected non-negative integer"));
        }
        let mut v = n as u64;
        let mut out = vec![(v & 0xFFFF_FFFF) as u32];
        v >>= 32;
        while v > 0 {
            out.push((v & 0xFFFF_FFFF) as u32);
            v >>= 32;
        }
        Ok(out)
    };
    match seed {
        Value::None => {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            Ok(vec![
                t as u32,
                (t >> 32) as u32,
                (t >> 64) as u32,
                std::process::id(),
            ])
        }
        Value::List(_) | Value::Tuple(_) => {
            let mut out = Vec::new();
            for v in it.iterate(seed)? {
                let n = as_i64(&v).ok_or_else(|| {
                    Exc::type_error("SeedSequence expects int or sequence of ints for entropy")
                })?;
                // Each element of a sequence is one 32-bit word when it fits.
                out.extend(words(n)?);
            }
            Ok(out)
        }
        other => match as_i64(other) {
            Some(n) if !matches!(other, Value::Float(_)) => words(n),
            _ => {
                let text = crate::object::format::repr(it, other)?;
                Err(Exc::type_error(format!(
                    "SeedSequence expects int or sequence of ints for entropy not {text}"
                )))
            }
        },
    }
}

fn default_rng(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let seed = a.take(0, "seed")?.unwrap_or(Value::None);
    a.finish(1)?;
    if let Value::Object(o) = &seed {
        if o.as_any().downcast_ref::<Generator>().is_some() {
            return Ok(seed.clone());
        }
    }
    let entropy = entropy_of(it, &seed)?;
    Ok(Value::Object(Rc::new(Generator {
        bits: RefCell::new(Pcg64::from_entropy(&entropy)),
    })))
}

/// Adds `default_rng` to `numpy.random`.
pub fn install(m: &Module) {
    m.set(
        "default_rng",
        builtin(
            "default_rng",
            "default_rng(seed=None): a Generator on PCG64, the same numbers as NumPy for a seed.",
            default_rng,
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcg64_streams_match_numpy() {
        // np.random.default_rng(42).random(), default_rng(0).random(2)
        assert_eq!(Pcg64::from_entropy(&[42]).next_double(), 0.7739560485559633);
        let mut g = Pcg64::from_entropy(&[0]);
        assert_eq!(g.next_double(), 0.6369616873214543);
        assert_eq!(g.next_double(), 0.2697867137638703);
    }

    #[test]
    fn bounded_integers_match_numpy() {
        // np.random.default_rng(12345).integers(1, 7, 10)
        let mut g = Pcg64::from_entropy(&[12345]);
        let got: Vec<u64> = (0..10)
            .map(|_| 1 + bounded(&mut g, 5, &mut |g| g.next_u32()))
            .collect();
        assert_eq!(got, [5, 2, 5, 2, 2, 5, 4, 5, 6, 3]);
    }

    #[test]
    fn ziggurat_tables_are_consistent() {
        let z = ziggurat();
        // Layer widths grow from the top (index 1) to r (index 255).
        assert!(z.wi[1] < z.wi[2] && z.wi[254] < z.wi[255]);
        assert!((z.wi[255] * 4_503_599_627_370_496.0 - ZIG_R).abs() < 1e-12);
        assert_eq!(z.fi[0], 1.0);
    }
}
