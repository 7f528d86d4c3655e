//! `torch.randperm`, `torch.bernoulli` (and `Tensor.bernoulli`) and `torch.multinomial` with
//! replacement, drawn from the device's PyTorch generator as PyTorch's CPU kernels draw: the
//! `random() % (n - i)` swaps, `uniform < p` with 24 random bits (float), and a binary search
//! of the normalised cumulative distribution with 53-bit doubles.

use crate::object::error::{Exc, ExcKind};
use crate::object::ops::{as_f64, as_i64, wrap};
use crate::object::value::{Args, ArrayValue, Flavor, Module, Value};
use crate::object::{builtin, method, Interpreter};
use crate::runtime::{Device, HostData};

fn tensor(v: &Value, fname: &str, name: &str) -> Result<ArrayValue, Exc> {
    match v {
        Value::Array(a) => Ok(a.clone()),
        other => Err(Exc::type_error(format!(
            "{fname}(): argument '{name}' (position 1) must be Tensor, not {}",
            other.type_name()
        ))),
    }
}

fn device_arg(v: Option<Value>) -> Result<Device, Exc> {
    match v {
        None => Ok(Device::cpu(0)),
        Some(Value::None) => Ok(Device::cpu(0)),
        Some(v) => crate::modules::array::arrays::device_arg(&v),
    }
}

/// `torch.randperm(n, *, dtype=torch.int64, device=None)`.
fn randperm(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let n = a.required(0, "n")?;
    let dtype = a.take_kw("dtype");
    let device = a.take_kw("device");
    a.take_kw("generator");
    a.take_kw("requires_grad");
    a.take_kw("layout");
    a.take_kw("pin_memory");
    a.finish(1)?;
    let n = as_i64(&n).ok_or_else(|| {
        Exc::type_error(format!(
            "randperm(): argument 'n' (position 1) must be int, not {}",
            n.type_name()
        ))
    })?;
    if n < 0 {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!("n must be non-negative, got{n}"),
        ));
    }
    let device = device_arg(device)?;
    crate::object::alloc::vec::<usize>(n as usize)?;
    let rt = it.state().rt.clone();
    let order = rt.with_torch_gen(Device::cpu(0), |g| g.randperm(n as usize))?;
    let values: Vec<i64> = order.into_iter().map(|i| i as i64).collect();
    let len = values.len();
    let mut arr = rt.from_host(HostData::I64(values), &[len], Device::cpu(0))?;
    if let Some(d) = dtype.as_ref().filter(|d| !matches!(d, Value::None)) {
        if let Some(d) = crate::modules::array::arrays::dtype_arg(d)? {
            arr = arr.astype(d)?;
        }
    }
    Ok(wrap(arr.copy_to(&rt, device)?, Flavor::Torch))
}

/// `torch.bernoulli(input)`: 1 where a uniform draw is below the element's probability.
fn bernoulli_of(it: &mut dyn Interpreter, x: &ArrayValue, p: Option<f64>) -> Result<Value, Exc> {
    if !x.array.dtype().is_float() {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            format!(
                "\"bernoulli_tensor_cpu_self_\" not implemented for '{}'",
                crate::modules::array::math_more::torch_type_name(x.array.dtype())
            ),
        ));
    }
    let probs = x.array.to_host().to_f64_vec();
    if let Some(bad) = probs
        .iter()
        .chain(p.iter())
        .find(|v| !(0.0..=1.0).contains(*v))
    {
        let _ = bad;
        return Err(Exc::new(ExcKind::RuntimeError, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)"));
    }
    let rt = it.state().rt.clone();
    let draws: Vec<f64> = rt.with_torch_gen(Device::cpu(0), |g| {
        probs
            .iter()
            .map(|q| {
                let u = g.uniform_f32(0.0, 1.0);
                let p = p.unwrap_or(*q) as f32;
                if u < p {
                    1.0
                } else {
                    0.0
                }
            })
            .collect()
    })?;
    let host = rt.from_host(HostData::F64(draws), x.array.shape(), Device::cpu(0))?;
    let out = host
        .astype(x.array.dtype())?
        .copy_to(&rt, x.array.device())?;
    Ok(wrap(out, x.flavor))
}

fn bernoulli(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "input")?;
    let p = a.take(1, "p")?.and_then(|v| as_f64(&v));
    a.take_kw("generator");
    a.take_kw("out");
    a.finish(2)?;
    let x = tensor(&x, "bernoulli", "input")?;
    bernoulli_of(it, &x, p)
}

/// `torch.multinomial(input, num_samples, replacement=False)`: rows of weights sampled by the
/// cumulative distribution (with replacement; one sample without it is the same draw in
/// PyTorch only through its exponential trick, which is not reproduced here).
fn multinomial(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "input")?;
    let n = a.required(1, "num_samples")?;
    let replacement = a.flag(2, "replacement", false)?;
    a.take_kw("generator");
    a.take_kw("out");
    a.finish(3)?;
    let x = tensor(&x, "multinomial", "input")?;
    let n = as_i64(&n)
        .ok_or_else(|| Exc::type_error("multinomial(): argument 'num_samples' must be int"))?;
    let shape = x.array.shape().to_vec();
    if shape.is_empty() || shape.len() > 2 {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "prob_dist must be 1 or 2 dim",
        ));
    }
    if !x.array.dtype().is_float() {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "multinomial only supports floating-point dtypes for input",
        ));
    }
    if n <= 0 {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "cannot sample n_sample <= 0 samples",
        ));
    }
    let cats = shape[shape.len() - 1];
    if !replacement && n as usize > cats {
        return Err(Exc::new(
            ExcKind::RuntimeError,
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement",
        ));
    }
    if !replacement {
        return Err(Exc::new(ExcKind::NotImplementedError, "devarray's multinomial draws with replacement=True only (PyTorch's draw without replacement goes through exponential_, not reproduced here)"));
    }
    let rows = if shape.len() == 2 { shape[0] } else { 1 };
    let w = x.array.to_host().to_f64_vec();
    let mut cdfs = Vec::with_capacity(rows);
    for r in 0..rows {
        let row = &w[r * cats..(r + 1) * cats];
        if row.iter().any(|v| *v < 0.0 || !v.is_finite()) {
            return Err(Exc::new(
                ExcKind::RuntimeError,
                "probability tensor contains either `inf`, `nan` or element < 0",
            ));
        }
        let total: f64 = row.iter().sum();
        if total <= 0.0 {
            return Err(Exc::new(
                ExcKind::RuntimeError,
                "invalid multinomial distribution (sum of probabilities <= 0)",
            ));
        }
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = row
            .iter()
            .map(|v| {
                acc += v / total;
                acc
            })
            .collect();
        if let Some(last) = cdf.last_mut() {
            *last = 1.0;
        }
        cdfs.push(cdf);
    }
    let rt = it.state().rt.clone();
    let picks: Vec<i64> = rt.with_torch_gen(Device::cpu(0), |g| {
        let mut out = Vec::with_capacity(rows * n as usize);
        for cdf in &cdfs {
            for _ in 0..n {
                let u = g.uniform_f64(0.0, 1.0);
                // The first category whose cumulative probability reaches u.
                let k = cdf.partition_point(|c| *c < u).min(cats - 1);
                out.push(k as i64);
            }
        }
        out
    })?;
    let out_shape: Vec<usize> = if shape.len() == 2 {
        vec![rows, n as usize]
    } else {
        vec![n as usize]
    };
    let arr = rt
        .from_host(HostData::I64(picks), &out_shape, Device::cpu(0))?
        .copy_to(&rt, x.array.device())?;
    Ok(wrap(arr, Flavor::Torch))
}

/// Adds the functions to `torch`.
pub fn install(m: &Module) {
    let fns: [(&'static str, &'static str, crate::object::value::BuiltinFn); 3] = [
        ("randperm", "randperm(n, *, dtype=torch.int64, device=None): a random permutation of 0..n-1.", randperm),
        ("bernoulli", "bernoulli(input, p=None): 0/1 samples with the probabilities in input.", bernoulli),
        ("multinomial", "multinomial(input, num_samples, replacement=False): category indices sampled by the weights in each row.", multinomial),
    ];
    for (name, doc, f) in fns {
        if m.get(name).is_none() {
            m.set(name, builtin(name, doc, f));
        }
    }
}

/// `x.bernoulli()` / `x.multinomial(n)`, or None.
pub fn tensor_attr(v: &Value, name: &str) -> Option<Value> {
    let x = v.as_array()?;
    if x.flavor != Flavor::Torch {
        return None;
    }
    type M = crate::object::value::MethodFn;
    let (n, doc, f): (&'static str, &'static str, M) = match name {
        "bernoulli" => (
            "bernoulli",
            "x.bernoulli(p=None): 0/1 samples with the probabilities in x.",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                bernoulli(it, a)
            },
        ),
        "multinomial" => (
            "multinomial",
            "x.multinomial(num_samples, replacement=False): sampled category indices.",
            |it, r, mut a| {
                a.pos.insert(0, r.clone());
                multinomial(it, a)
            },
        ),
        _ => return None,
    };
    Some(method(v, n, doc, f))
}
