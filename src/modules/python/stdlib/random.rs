//! `random`: CPython's generator exactly — MT19937 seeded by `init_by_array` from an int's
//! 32-bit words, `random()` as genrand_res53, integers by rejection from `getrandbits` (as
//! CPython 3.11's `_randbelow_with_getrandbits`), `gauss` by CPython's cached Box-Muller pair —
//! so `random.seed(0); random.random()` gives 0.8444218515250481 as CPython does. The module's
//! functions are methods bound to one hidden generator (`random._inst`); `random.Random(x)`
//! makes another.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::{int, module, num};
use crate::object::value::{MethodFn, Module, NativeObject};
use crate::object::{builtin, method, Args, Exc, ExcKind, Interpreter, Value};

const N: usize = 624;
const M: usize = 397;

/// The Mersenne Twister state (mt19937ar.c, as CPython's `_randommodule.c` has it).
pub struct Mt {
    state: [u32; N],
    index: usize,
}

impl Mt {
    /// MT19937's own seeding from one word (NumPy's `RandomState.seed(int)` uses it).
    pub(crate) fn init_genrand(s: u32) -> Mt {
        let mut mt = [0u32; N];
        mt[0] = s;
        for i in 1..N {
            mt[i] = 1812433253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        Mt {
            state: mt,
            index: N,
        }
    }

    pub fn from_key(key: &[u32]) -> Mt {
        let mut g = Mt::init_genrand(19650218);
        let mt = &mut g.state;
        let (mut i, mut j) = (1usize, 0usize);
        let klen = key.len().max(1);
        for _ in 0..N.max(klen) {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1664525))
                .wrapping_add(key.get(j).copied().unwrap_or(0))
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= klen {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1566083941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        g
    }

    /// Seeded from an integer as CPython does: the 32-bit words of |n|, least significant first.
    /// Seeded by a non-negative integer given as big-endian bytes (CPython's `init_by_array`
    /// over its 32-bit words, least significant first, without leading zero words).
    pub fn from_be_bytes(bytes: &[u8]) -> Mt {
        let mut key: Vec<u32> = bytes
            .rchunks(4)
            .map(|c| c.iter().fold(0u32, |acc, &b| (acc << 8) | b as u32))
            .collect();
        while key.len() > 1 && key.last() == Some(&0) {
            key.pop();
        }
        if key.is_empty() {
            key.push(0);
        }
        Mt::from_key(&key)
    }

    pub fn from_int(n: i64) -> Mt {
        let mut a = n.unsigned_abs();
        let mut key = Vec::new();
        while a != 0 {
            key.push(a as u32);
            a >>= 32;
        }
        if key.is_empty() {
            key.push(0);
        }
        Mt::from_key(&key)
    }

    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            let mt = &mut self.state;
            for k in 0..N {
                let y = (mt[k] & 0x8000_0000) | (mt[(k + 1) % N] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                mt[k] = mt[(k + M) % N] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// genrand_res53: a float in [0, 1) with 53 random bits.
    pub fn random(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = (self.next_u32() >> 6) as f64;
        (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)
    }

    /// `getrandbits(k)` for k <= 64: whole 32-bit words, the last one cut to size, as CPython.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return (self.next_u32() >> (32 - k)) as u64;
        }
        let lo = self.next_u32() as u64;
        let hi = (self.next_u32() >> (64 - k)) as u64;
        lo | (hi << 32)
    }

    /// `getrandbits(k)` for any k: 32-bit words from the least significant up, the last one
    /// cut to size (CPython's `_random_Random_getrandbits_impl`).
    pub fn getrandbits_big(&mut self, k: u64) -> num_bigint::BigInt {
        let mut words = Vec::with_capacity(k.div_ceil(32) as usize);
        let mut left = k;
        while left > 0 {
            let r = self.next_u32();
            words.push(if left < 32 { r >> (32 - left) } else { r });
            left = left.saturating_sub(32);
        }
        num_bigint::BigInt::from_biguint(
            num_bigint::Sign::Plus,
            num_bigint::BigUint::from_slice(&words),
        )
    }

    /// A uniform int in [0, n) for n > 0 of any size (`_randbelow_with_getrandbits`).
    pub fn below_big(&mut self, n: &num_bigint::BigInt) -> num_bigint::BigInt {
        let k = n.bits();
        loop {
            let r = self.getrandbits_big(k);
            if r < *n {
                return r;
            }
        }
    }

    /// A uniform int in [0, n), n > 0.
    pub fn below(&mut self, n: u64) -> u64 {
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }
}

/// The module's hidden generator (`random._inst`, as CPython names it).
struct State {
    mt: RefCell<Mt>,
    gauss_next: Cell<Option<f64>>,
}

impl NativeObject for State {
    fn type_name(&self) -> &str {
        "Random"
    }
    fn repr(&self) -> String {
        format!("<random.Random object at {:#x}>", self as *const _ as usize)
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let (name, doc, f) = methods().into_iter().find(|(n, _, _)| *n == name)?;
        Some(method(&Value::Object(this.clone()), name, doc, f))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        methods().into_iter().map(|(n, _, _)| n).collect()
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn entropy_seed() -> Mt {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let pid = std::process::id() as u128;
    let x = t ^ (pid << 64);
    Mt::from_key(&[
        x as u32,
        (x >> 32) as u32,
        (x >> 64) as u32,
        (x >> 96) as u32,
    ])
}

pub fn build() -> Rc<Module> {
    let m = module("random", "random numbers (CPython's Mersenne Twister)");
    let inst = new_state(entropy_seed());
    // As in CPython, the module's functions are the methods of one hidden Random instance.
    for (name, doc, f) in methods() {
        m.set(name, method(&inst, name, doc, f));
    }
    m.set("_inst", inst);
    m.set(
        "Random",
        builtin(
            "Random",
            "Random(x=None): a generator of its own, seeded like random.seed(x).",
            |it, mut a| {
                let x = a.take(0, "x")?.unwrap_or(Value::None);
                a.finish(1)?;
                let r = new_state(entropy_seed());
                seed(it, &r, Args::new("seed", vec![x]))?;
                Ok(r)
            },
        ),
    );
    m
}

fn new_state(mt: Mt) -> Value {
    Value::Object(Rc::new(State {
        mt: RefCell::new(mt),
        gauss_next: Cell::new(None),
    }))
}

type Methods = Vec<(&'static str, &'static str, MethodFn)>;

/// What a Random object offers (and the module, bound to its hidden instance).
fn methods() -> Methods {
    vec![
        (
            "seed",
            "seed(a=None): restart the generator; an int gives CPython's sequence.",
            seed,
        ),
        ("random", "random(): a float in [0.0, 1.0).", |_, r, a| {
            a.finish(0)?;
            with(r, |s| Ok(Value::Float(s.mt.borrow_mut().random())))
        }),
        (
            "uniform",
            "uniform(a, b): a float between a and b.",
            |_, r, mut a| {
                let lo = num(&a.required(0, "a")?)?;
                let hi = num(&a.required(1, "b")?)?;
                a.finish(2)?;
                with(r, |s| {
                    Ok(Value::Float(lo + (hi - lo) * s.mt.borrow_mut().random()))
                })
            },
        ),
        (
            "randint",
            "randint(a, b): an int in [a, b], both ends included.",
            |_, r, mut a| {
                let lo = a.required(0, "a")?;
                let hi = a.required(1, "b")?;
                a.finish(2)?;
                let hi1 = Value::Int(index(&hi, 2)?.checked_add(1).ok_or_else(too_big)?);
                randrange_impl(r, lo, Some(hi1), Value::Int(1))
            },
        ),
        (
            "randrange",
            "randrange(start, stop=None, step=1): a random item of range(start, stop, step).",
            |_, r, mut a| {
                let start = a.required(0, "start")?;
                let stop = a.take(1, "stop")?.filter(|v| !matches!(v, Value::None));
                let step = a.take(2, "step")?.unwrap_or(Value::Int(1));
                a.finish(3)?;
                randrange_impl(r, start, stop, step)
            },
        ),
        (
            "getrandbits",
            "getrandbits(k): an int with k random bits.",
            |_, r, mut a| {
                let k = int(&a.required(0, "k")?)?;
                a.finish(1)?;
                if k < 0 {
                    return Err(Exc::value_error("number of bits must be non-negative"));
                }
                if k > 1 << 32 {
                    return Err(crate::object::alloc::memory_error());
                }
                with(r, |s| {
                    if k <= 63 {
                        return Ok(Value::Int(s.mt.borrow_mut().getrandbits(k as u32) as i64));
                    }
                    Ok(crate::object::bigint::int_value(
                        s.mt.borrow_mut().getrandbits_big(k as u64),
                    ))
                })
            },
        ),
        (
            "choice",
            "choice(seq): a random item of a non-empty sequence.",
            choice,
        ),
        (
            "shuffle",
            "shuffle(x): shuffle the list x in place.",
            shuffle,
        ),
        (
            "sample",
            "sample(population, k): k distinct items, in selection order.",
            sample,
        ),
        (
            "gauss",
            "gauss(mu=0.0, sigma=1.0): a normal deviate (CPython's cached pair).",
            gauss,
        ),
        (
            "normalvariate",
            "normalvariate(mu=0.0, sigma=1.0): a normal deviate (Kinderman-Monahan).",
            normalvariate,
        ),
    ]
}

fn too_big() -> Exc {
    Exc::new(
        ExcKind::OverflowError,
        "the result does not fit in devarray's 64-bit integers",
    )
}

fn with<T>(r: &Value, f: impl FnOnce(&State) -> Result<T, Exc>) -> Result<T, Exc> {
    match r {
        Value::Object(o) => match o.as_any().downcast_ref::<State>() {
            Some(s) => f(s),
            None => Err(Exc::type_error("expected a random.Random object")),
        },
        _ => Err(Exc::type_error("expected a random.Random object")),
    }
}

fn below(r: &Value, n: u64) -> Result<u64, Exc> {
    with(r, |s| Ok(s.mt.borrow_mut().below(n)))
}

fn seed(_it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let v = a.take(0, "a")?.unwrap_or(Value::None);
    a.finish(1)?;
    let mt = match &v {
        Value::None => entropy_seed(),
        Value::Int(n) => Mt::from_int(*n),
        Value::Bool(b) => Mt::from_int(*b as i64),
        // A big int seeds by the bytes of its absolute value, as CPython's.
        Value::BigInt(n) => Mt::from_be_bytes(&n.magnitude().to_bytes_be()),
        // As CPython: a float seeds by its hash, a str by the integer its UTF-8 bytes and
        // their SHA-512 spell (version 2 seeding).
        Value::Float(f) => Mt::from_int(crate::modules::python::builtins::float_hash(*f)),
        Value::Str(s) => {
            use sha2::Digest;
            let mut bytes = s.as_bytes().to_vec();
            bytes.extend_from_slice(&sha2::Sha512::digest(s.as_bytes()));
            Mt::from_be_bytes(&bytes)
        }
        other => {
            return Err(Exc::type_error(format!(
                "The only supported seed types are: None,\nint, float, str, bytes, and bytearray. (got {})",
                other.type_name()
            )))
        }
    };
    with(r, |s| {
        *s.mt.borrow_mut() = mt;
        s.gauss_next.set(None);
        Ok(Value::None)
    })
}

/// `randrange` with a bound past i64: the same steps on big ints.
fn randrange_big(
    r: &Value,
    start: &Value,
    stop: Option<&Value>,
    step: &Value,
) -> Result<Value, Exc> {
    use num_bigint::BigInt;
    use num_integer::Integer;
    let big = |v: &Value, pos: usize| -> Result<BigInt, Exc> {
        match crate::object::bigint::as_big(v) {
            Some(n) => Ok(n.into_owned()),
            None => index(v, pos).map(BigInt::from),
        }
    };
    let (start, stop) = match stop {
        None => (BigInt::from(0), big(start, 1)?),
        Some(stop) => (big(start, 1)?, big(stop, 2)?),
    };
    let step = big(step, 3)?;
    let zero = BigInt::from(0);
    if step == zero {
        return Err(Exc::value_error("zero step for randrange()"));
    }
    let width = &stop - &start;
    let n: BigInt = if step > zero {
        (width + &step - 1u32).div_floor(&step)
    } else {
        (width + &step + 1u32).div_floor(&step)
    };
    if n <= zero {
        return Err(Exc::value_error("empty range for randrange()"));
    }
    let k = with(r, |s| Ok(s.mt.borrow_mut().below_big(&n)))?;
    Ok(crate::object::bigint::int_value(start + step * k))
}

/// An int argument of randrange: floats with an integer value pass, as in CPython 3.11.
fn index(v: &Value, pos: usize) -> Result<i64, Exc> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(*b as i64),
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(*f as i64),
        Value::Float(_) => Err(Exc::value_error(format!(
            "non-integer arg {pos} for randrange()"
        ))),
        other => Err(Exc::type_error(format!(
            "'{}' object cannot be interpreted as an integer",
            other.type_name()
        ))),
    }
}

fn randrange_impl(r: &Value, start: Value, stop: Option<Value>, step: Value) -> Result<Value, Exc> {
    let is_big = |v: &Value| matches!(v, Value::BigInt(_));
    if is_big(&start) || stop.as_ref().is_some_and(is_big) || is_big(&step) {
        return randrange_big(r, &start, stop.as_ref(), &step);
    }
    let istart = index(&start, 1)?;
    let Some(stop) = stop else {
        if istart > 0 {
            return Ok(Value::Int(below(r, istart as u64)? as i64));
        }
        return Err(Exc::value_error("empty range for randrange()"));
    };
    let istop = index(&stop, 2)?;
    let width = istop as i128 - istart as i128;
    let istep = index(&step, 3)? as i128;
    if istep == 1 {
        if width > 0 {
            return Ok(Value::Int(
                (istart as i128 + below(r, width as u64)? as i128) as i64,
            ));
        }
        return Err(Exc::value_error(format!(
            "empty range for randrange() ({istart}, {istop}, {width})"
        )));
    }
    let n = if istep > 0 {
        (width + istep - 1).div_euclid(istep)
    } else if istep < 0 {
        (width + istep + 1).div_euclid(istep)
    } else {
        return Err(Exc::value_error("zero step for randrange()"));
    };
    if n <= 0 {
        return Err(Exc::value_error("empty range for randrange()"));
    }
    let r = below(r, n as u64)? as i128;
    Ok(Value::Int((istart as i128 + istep * r) as i64))
}

fn choice(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let seq = a.required(0, "seq")?;
    a.finish(1)?;
    let items = sequence(it, &seq, "choice")?;
    if items.is_empty() {
        return Err(Exc::new(
            ExcKind::IndexError,
            "Cannot choose from an empty sequence",
        ));
    }
    let i = below(r, items.len() as u64)? as usize;
    Ok(items[i].clone())
}

/// The items of a sequence argument; sets and dicts are refused as CPython refuses them.
fn sequence(it: &mut dyn Interpreter, v: &Value, what: &str) -> Result<Vec<Value>, Exc> {
    match v {
        Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Range(..) | Value::Array(_) => {
            it.iterate(v)
        }
        Value::Instance(_) => it.iterate(v),
        Value::Dict(_) if what == "choice" => Err(Exc::new(ExcKind::KeyError, "0")),
        other if what == "sample" => {
            let _ = other;
            Err(Exc::type_error(
                "Population must be a sequence.  For dicts or sets, use sorted(d).",
            ))
        }
        other => Err(Exc::type_error(format!(
            "object of type '{}' has no len()",
            other.type_name()
        ))),
    }
}

fn shuffle(_it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "x")?;
    a.finish(1)?;
    let Value::List(l) = &x else {
        return Err(Exc::type_error(format!(
            "'{}' object does not support item assignment",
            x.type_name()
        )));
    };
    let n = l.borrow().len();
    for i in (1..n).rev() {
        let j = below(r, i as u64 + 1)? as usize;
        let mut v = l.borrow_mut();
        if i < v.len() && j < v.len() {
            v.swap(i, j);
        }
    }
    Ok(Value::None)
}

fn sample(it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let population = a.required(0, "population")?;
    let k = a.required(1, "k")?;
    a.finish(2)?;
    let pool = sequence(it, &population, "sample")?;
    let n = pool.len() as i64;
    let k = int(&k)?;
    if !(0..=n).contains(&k) {
        return Err(Exc::value_error(
            "Sample larger than population or is negative",
        ));
    }
    let k = k as usize;
    let n = n as usize;
    let mut setsize = 21usize;
    if k > 5 {
        // 4 ** ceil(log(k * 3, 4)), as CPython sizes its set.
        setsize = setsize.saturating_add(
            4usize
                .checked_pow(((k * 3) as f64).log(4.0).ceil() as u32)
                .unwrap_or(usize::MAX),
        );
    }
    let mut result = Vec::with_capacity(k);
    if n <= setsize {
        let mut pool = pool;
        for i in 0..k {
            let j = below(r, (n - i) as u64)? as usize;
            result.push(pool[j].clone());
            pool[j] = pool[n - i - 1].clone();
        }
    } else {
        let mut selected = std::collections::HashSet::new();
        for _ in 0..k {
            let mut j = below(r, n as u64)? as usize;
            while selected.contains(&j) {
                j = below(r, n as u64)? as usize;
            }
            selected.insert(j);
            result.push(pool[j].clone());
        }
    }
    Ok(Value::list(result))
}

fn mu_sigma(a: &mut Args) -> Result<(f64, f64), Exc> {
    let mu = a
        .take(0, "mu")?
        .map(|v| num(&v))
        .transpose()?
        .unwrap_or(0.0);
    let sigma = a
        .take(1, "sigma")?
        .map(|v| num(&v))
        .transpose()?
        .unwrap_or(1.0);
    a.finish(2)?;
    Ok((mu, sigma))
}

fn gauss(_it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let (mu, sigma) = mu_sigma(&mut a)?;
    with(r, |s| {
        let z = match s.gauss_next.take() {
            Some(z) => z,
            None => {
                let mut mt = s.mt.borrow_mut();
                let x2pi = mt.random() * std::f64::consts::TAU;
                let g2rad = (-2.0 * (1.0 - mt.random()).ln()).sqrt();
                s.gauss_next.set(Some(x2pi.sin() * g2rad));
                x2pi.cos() * g2rad
            }
        };
        Ok(Value::Float(mu + z * sigma))
    })
}

fn normalvariate(_it: &mut dyn Interpreter, r: &Value, mut a: Args) -> Result<Value, Exc> {
    let (mu, sigma) = mu_sigma(&mut a)?;
    const NV_MAGICCONST: f64 = 1.7155277699214135; // 4 * exp(-0.5) / sqrt(2.0)
    with(r, |s| {
        let mut mt = s.mt.borrow_mut();
        loop {
            let u1 = mt.random();
            let u2 = 1.0 - mt.random();
            let z = NV_MAGICCONST * (u1 - 0.5) / u2;
            if z * z / 4.0 <= -u2.ln() {
                return Ok(Value::Float(mu + z * sigma));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::Mt;

    #[test]
    fn cpython_sequence() {
        assert_eq!(Mt::from_int(0).random(), 0.8444218515250481);
        assert_eq!(Mt::from_int(-5).random(), 0.6229016948897019);
        assert_eq!(Mt::from_int((1 << 40) + 3).random(), 0.21978710637116716);
    }
}
