//! Random numbers that reproduce MXNet 1.9.1's CPU sampler bit for bit.
//!
//! MXNet keeps 1024 `std::mt19937` engines per device, engine `i` seeded with `seed + i`. A sampling
//! op over N elements splits them into `min(ceil(N / 64), 1024)` equal chunks and chunk `t` draws
//! from engine `t` (src/operator/random/sampler.h, `LaunchRNG`). Floats come from libstdc++'s
//! `generate_canonical` and normals from `std::normal_distribution`'s Marsaglia polar method; MXNet
//! builds a fresh distribution object for every sample, so the polar method's cached second value
//! is never used: each normal sample costs one accepted pair. Engines are created lazily so a
//! session that never samples large arrays does not pay for 1024 states.
//!
//! MXNet's numpy mode (`np.random.uniform`/`normal`) draws from another resource: one mt19937
//! seeded with the seed, used in sequence (mshadow's `Random<cpu>`), with one distribution object
//! per call, so both values of each polar pair are used ([`Mt19937::normal_pairs_f32`]).
//!
//! PyTorch's CPU generator ([`TorchGen`]) is one mt19937 with PyTorch's own transforms
//! (ATen/core/TransformationHelper.h, DistributionsHelper.h, native/cpu/DistributionKernels.cpp).

const STATE_WORDS: usize = 624;
const MIN_SAMPLES_PER_CHUNK: usize = 64;
const MAX_ENGINES: usize = 1024;

/// The 32-bit Mersenne Twister (`std::mt19937`).
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; STATE_WORDS],
    index: usize,
}

impl Mt19937 {
    /// `init_genrand`, as `std::mt19937::seed` does it.
    pub fn new(seed: u32) -> Self {
        let mut state = [0u32; STATE_WORDS];
        state[0] = seed;
        for i in 1..STATE_WORDS {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 {
            state,
            index: STATE_WORDS,
        }
    }

    fn twist(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        for i in 0..STATE_WORDS {
            let y = (self.state[i] & UPPER) | (self.state[(i + 1) % STATE_WORDS] & LOWER);
            let mut next = self.state[(i + 397) % STATE_WORDS] ^ (y >> 1);
            if y & 1 != 0 {
                next ^= 0x9908_b0df;
            }
            self.state[i] = next;
        }
        self.index = 0;
    }

    pub fn next_u32(&mut self) -> u32 {
        if self.index >= STATE_WORDS {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `generate_canonical<float, 24>`: one word, converted to float, divided by 2^32 in float.
    pub fn canonical_f32(&mut self) -> f32 {
        let u = self.next_u32() as f32 / 4_294_967_296.0f32;
        if u >= 1.0 {
            1.0 - f32::EPSILON / 2.0
        } else {
            u
        }
    }

    /// `generate_canonical<double, 53>`: two words, the second the high half.
    pub fn canonical_f64(&mut self) -> f64 {
        let low = f64::from(self.next_u32());
        let high = f64::from(self.next_u32());
        let u = (low + high * 4_294_967_296.0) / 18_446_744_073_709_551_616.0;
        if u >= 1.0 {
            1.0 - f64::EPSILON / 2.0
        } else {
            u
        }
    }

    /// One `std::normal_distribution<float>` sample from a fresh distribution object.
    pub fn normal_f32(&mut self) -> f32 {
        loop {
            // libstdc++ computes `2.0f * u - 1.0` with a double constant, then narrows.
            let x = (f64::from(2.0f32 * self.canonical_f32()) - 1.0) as f32;
            let y = (f64::from(2.0f32 * self.canonical_f32()) - 1.0) as f32;
            let r2 = x * x + y * y;
            if r2 <= 1.0 && r2 != 0.0 {
                let mult = (-2.0f32 * r2.ln() / r2).sqrt();
                return y * mult;
            }
        }
    }

    /// One `std::normal_distribution<double>` sample from a fresh distribution object.
    pub fn normal_f64(&mut self) -> f64 {
        loop {
            let x = 2.0 * self.canonical_f64() - 1.0;
            let y = 2.0 * self.canonical_f64() - 1.0;
            let r2 = x * x + y * y;
            if r2 <= 1.0 && r2 != 0.0 {
                let mult = (-2.0 * r2.ln() / r2).sqrt();
                return y * mult;
            }
        }
    }
}

impl Mt19937 {
    /// `count` samples of one `std::normal_distribution<float>` object: the polar method's
    /// second value is kept and returned by the next call, as libstdc++ does.
    pub fn normal_pairs_f32(&mut self, count: usize, out: &mut Vec<f32>) {
        let mut saved: Option<f32> = None;
        for _ in 0..count {
            if let Some(v) = saved.take() {
                out.push(v);
                continue;
            }
            loop {
                let x = (f64::from(2.0f32 * self.canonical_f32()) - 1.0) as f32;
                let y = (f64::from(2.0f32 * self.canonical_f32()) - 1.0) as f32;
                let r2 = x * x + y * y;
                if r2 <= 1.0 && r2 != 0.0 {
                    let mult = (-2.0f32 * r2.ln() / r2).sqrt();
                    saved = Some(x * mult);
                    out.push(y * mult);
                    break;
                }
            }
        }
    }
}

/// PyTorch's CPU generator (`at::CPUGeneratorImpl`): one mt19937 seeded with the seed's low 32
/// bits, plus the cached second value of the last Box-Muller pair (float and double apart).
#[derive(Clone)]
pub struct TorchGen {
    engine: Mt19937,
    next_double_normal: Option<f64>,
}

impl TorchGen {
    pub fn new(seed: u64) -> Self {
        TorchGen {
            engine: Mt19937::new(seed as u32),
            next_double_normal: None,
        }
    }

    /// `random()`: one 32-bit word.
    pub fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }

    /// `random64()`: two words, the first the high half.
    pub fn random64(&mut self) -> u64 {
        let hi = u64::from(self.engine.next_u32());
        let lo = u64::from(self.engine.next_u32());
        (hi << 32) | lo
    }

    /// `torch.randperm(n, generator=g)` on the CPU: `random() % (n - i)` swaps, PyTorch's loop
    /// for every n below 2^32 / 20 (larger n draw `random64()`).
    pub fn randperm(&mut self, n: usize) -> Vec<usize> {
        let mut r: Vec<usize> = (0..n).collect();
        let small = (n as u64) < u64::from(u32::MAX) / 20;
        for i in 0..n.saturating_sub(1) {
            let span = (n - i) as u64;
            let z = if small {
                u64::from(self.random()) % span
            } else {
                self.random64() % span
            };
            r.swap(i, i + z as usize);
        }
        r
    }

    /// `uniform_real_distribution<float>(from, to)`: 24 random bits scaled in float.
    pub fn uniform_f32(&mut self, from: f32, to: f32) -> f32 {
        let x = (self.random() & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32);
        x * (to - from) + from
    }

    /// `uniform_real_distribution<double>(from, to)`: 53 random bits of `random64()`.
    pub fn uniform_f64(&mut self, from: f64, to: f64) -> f64 {
        let x = (self.random64() & ((1 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64);
        x * (to - from) + from
    }

    /// `normal_distribution<double>`: Box-Muller on two doubles, the sine kept for the next call.
    pub fn normal_f64(&mut self, mean: f64, std: f64) -> f64 {
        if let Some(v) = self.next_double_normal.take() {
            return v * std + mean;
        }
        let u1 = self.uniform_f64(0.0, 1.0);
        let u2 = self.uniform_f64(0.0, 1.0);
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_double_normal = Some(r * theta.sin());
        r * theta.cos() * std + mean
    }

    /// `torch.rand` of `n` float32 values in [from, to).
    pub fn fill_uniform_f32(&mut self, n: usize, from: f32, to: f32, out: &mut Vec<f32>) {
        out.extend((0..n).map(|_| self.uniform_f32(from, to)));
    }

    pub fn fill_uniform_f64(&mut self, n: usize, from: f64, to: f64, out: &mut Vec<f64>) {
        out.extend((0..n).map(|_| self.uniform_f64(from, to)));
    }

    /// `normal_kernel` for float32: below 16 values, one double sample each (narrowed);
    /// from 16 on, `normal_fill`: uniforms first, then Box-Muller on blocks of 16 (the first 8
    /// values paired with the next 8), the last partial block recomputed from 16 fresh uniforms.
    pub fn fill_normal_f32(&mut self, n: usize, mean: f32, std: f32, out: &mut Vec<f32>) {
        if n < 16 {
            out.extend((0..n).map(|_| self.normal_f64(f64::from(mean), f64::from(std)) as f32));
            return;
        }
        let start = out.len();
        out.extend((0..n).map(|_| self.uniform_f32(0.0, 1.0)));
        let data = &mut out[start..];
        let mut i = 0;
        while i + 16 <= n {
            normal_fill_16_f32(&mut data[i..i + 16], mean, std);
            i += 16;
        }
        if n % 16 != 0 {
            let tail = n - 16;
            for j in 0..16 {
                data[tail + j] = self.uniform_f32(0.0, 1.0);
            }
            normal_fill_16_f32(&mut data[tail..], mean, std);
        }
    }

    /// `normal_kernel` for float64, the same two paths in double.
    pub fn fill_normal_f64(&mut self, n: usize, mean: f64, std: f64, out: &mut Vec<f64>) {
        if n < 16 {
            out.extend((0..n).map(|_| self.normal_f64(mean, std)));
            return;
        }
        let start = out.len();
        out.extend((0..n).map(|_| self.uniform_f64(0.0, 1.0)));
        let data = &mut out[start..];
        let fill16 = |d: &mut [f64]| {
            for j in 0..8 {
                let u1 = 1.0 - d[j];
                let u2 = d[j + 8];
                let radius = (-2.0 * u1.ln()).sqrt();
                let theta = 2.0 * std::f64::consts::PI * u2;
                d[j] = radius * theta.cos() * std + mean;
                d[j + 8] = radius * theta.sin() * std + mean;
            }
        };
        let mut i = 0;
        while i + 16 <= n {
            fill16(&mut data[i..i + 16]);
            i += 16;
        }
        if n % 16 != 0 {
            let tail = n - 16;
            for j in 0..16 {
                data[tail + j] = self.uniform_f64(0.0, 1.0);
            }
            fill16(&mut data[tail..]);
        }
    }
}

/// `normal_fill_16` in float: `u1 = 1 - u` so the logarithm never sees 0; theta is computed in
/// double (`2.0f * c10::pi<double> * u2`) and narrowed.
fn normal_fill_16_f32(d: &mut [f32], mean: f32, std: f32) {
    for j in 0..8 {
        let u1 = 1.0f32 - d[j];
        let u2 = d[j + 8];
        let radius = (-2.0f32 * u1.ln()).sqrt();
        let theta = (2.0 * std::f64::consts::PI * f64::from(u2)) as f32;
        d[j] = radius * theta.cos() * std + mean;
        d[j + 8] = radius * theta.sin() * std + mean;
    }
}

/// One device's generator: MXNet's bank of engines, and PyTorch's generator beside it.
pub struct DeviceRng {
    seed: u32,
    engines: Vec<Mt19937>,
    /// MXNet numpy mode's sequential engine.
    pub np: Mt19937,
    pub torch: TorchGen,
}

impl DeviceRng {
    pub fn new(seed: u64) -> Self {
        DeviceRng {
            seed: seed as u32,
            engines: Vec::new(),
            np: Mt19937::new(seed as u32),
            torch: TorchGen::new(seed),
        }
    }

    /// `mx.random.seed`: MXNet passes the seed through a C `int`, so only its low 32 bits count.
    pub fn reseed(&mut self, seed: u64) {
        self.seed = seed as u32;
        self.engines.clear();
        self.np = Mt19937::new(seed as u32);
        self.torch = TorchGen::new(seed);
    }

    fn engine(&mut self, index: usize) -> &mut Mt19937 {
        while self.engines.len() <= index {
            let offset = self.engines.len() as u32;
            self.engines
                .push(Mt19937::new(self.seed.wrapping_add(offset)));
        }
        &mut self.engines[index]
    }

    /// Fills `out` with `n` samples, chunked across engines exactly as MXNet's `LaunchRNG` does.
    pub fn sample<T>(
        &mut self,
        n: usize,
        out: &mut Vec<T>,
        mut draw: impl FnMut(&mut Mt19937) -> T,
    ) {
        self.sample_chunks(n, out, |engine, count, out| {
            for _ in 0..count {
                out.push(draw(engine));
            }
        });
    }

    /// [`Self::sample`] with one call per chunk (`count` samples from the chunk's engine).
    pub fn sample_chunks<T>(
        &mut self,
        n: usize,
        out: &mut Vec<T>,
        mut draw: impl FnMut(&mut Mt19937, usize, &mut Vec<T>),
    ) {
        if n == 0 {
            return;
        }
        let chunks = n.div_ceil(MIN_SAMPLES_PER_CHUNK).min(MAX_ENGINES);
        let step = n.div_ceil(chunks);
        for chunk in 0..chunks {
            let start = chunk * step;
            let end = (start + step).min(n);
            if start >= end {
                break;
            }
            let engine = self.engine(chunk);
            draw(engine, end - start, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_randperm_and_int64_draw_match_pytorch() {
        // torch.Generator().manual_seed(s); torch.randperm(n, generator=g).tolist()
        assert_eq!(
            TorchGen::new(5).randperm(10),
            [1, 4, 9, 6, 3, 5, 0, 2, 8, 7]
        );
        assert_eq!(
            TorchGen::new(123_456_789).randperm(7),
            [5, 0, 2, 4, 3, 6, 1]
        );
        assert!(TorchGen::new(1).randperm(0).is_empty());
        // torch.manual_seed(0); torch.empty((), dtype=torch.int64).random_().item()
        assert_eq!(
            TorchGen::new(0).random64() % (1u64 << 63),
            900_450_186_894_289_455
        );
    }

    #[test]
    fn mt19937_reference_words() {
        // The C++ standard fixes the 10000th output of a default-seeded (5489) mt19937.
        let mut mt = Mt19937::new(5489);
        let mut last = 0;
        for _ in 0..10000 {
            last = mt.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
        let mut mt0 = Mt19937::new(0);
        assert_eq!(mt0.next_u32(), 2_357_136_044);
    }

    #[test]
    fn uniform_matches_mxnet_seed_0() {
        let mut rng = DeviceRng::new(0);
        let mut out = Vec::new();
        rng.sample(6, &mut out, |e| e.canonical_f32());
        assert_eq!(
            out,
            vec![
                0.5488135f32,
                0.5928446,
                0.71518934,
                0.84426576,
                0.60276335,
                0.8579456
            ]
        );
    }

    #[test]
    fn dense_init_continues_the_stream() {
        let mut rng = DeviceRng::new(0);
        let mut first = Vec::new();
        rng.sample(6, &mut first, |e| e.canonical_f32());
        let (low, high) = (-0.07f32, 0.07f32);
        let mut weights = Vec::new();
        rng.sample(2, &mut weights, |e| low + (high - low) * e.canonical_f32());
        // MXNet prints these with 8 decimals: 0.00628365 and 0.04861524.
        assert_eq!(weights, vec![0.006_283_648_3f32, 0.04861524]);
        assert_eq!(format!("{:.8}", weights[0]), "0.00628365");
    }

    #[test]
    fn large_samples_use_one_engine_per_chunk() {
        // 130 samples -> 3 chunks of 44: the second chunk starts engine 1 (seed + 1).
        let mut rng = DeviceRng::new(7);
        let mut out = Vec::new();
        rng.sample(130, &mut out, |e| e.next_u32());
        assert_eq!(out[44], Mt19937::new(8).next_u32());
        assert_eq!(out[88], Mt19937::new(9).next_u32());
    }

    #[test]
    fn torch_rand_matches_pytorch_seed_0() {
        // torch.manual_seed(0); torch.rand(6) -> tensor([0.4963, 0.7682, 0.0885, 0.1320, 0.3074, 0.6341])
        let mut g = TorchGen::new(0);
        let mut out = Vec::new();
        g.fill_uniform_f32(6, 0.0, 1.0, &mut out);
        let shown: Vec<String> = out.iter().map(|x| format!("{x:.4}")).collect();
        assert_eq!(
            shown,
            ["0.4963", "0.7682", "0.0885", "0.1320", "0.3074", "0.6341"]
        );
        // 24 random bits over 2^24: the first word of mt19937(0) is 2357136044.
        assert_eq!(out[0], (2_357_136_044u32 & 0xff_ffff) as f32 / 16_777_216.0);
    }

    #[test]
    fn torch_randn_matches_pytorch_seed_0() {
        // torch.manual_seed(0); torch.randn(3, 4): the scalar Box-Muller path (below 16 values),
        // the cached sine used for every second value.
        let mut g = TorchGen::new(0);
        let mut out = Vec::new();
        g.fill_normal_f32(12, 0.0, 1.0, &mut out);
        let shown: Vec<String> = out.iter().map(|x| format!("{x:.4}")).collect();
        assert_eq!(
            shown,
            [
                "1.5410", "-0.2934", "-2.1788", "0.5684", "-1.0845", "-1.3986", "0.4033", "0.8380",
                "-0.7193", "-0.4033", "-0.5966", "0.1820"
            ]
        );
        // manual_seed clears the cached value.
        let mut h = TorchGen::new(0);
        let _ = h.normal_f64(0.0, 1.0);
        h = TorchGen::new(0);
        assert_eq!(format!("{:.4}", h.normal_f64(0.0, 1.0)), "1.5410");
    }

    #[test]
    fn torch_randn_vectorised_path_pairs_halves_of_16() {
        // From 16 values on, PyTorch draws all uniforms first and pairs value j with j + 8.
        let mut g = TorchGen::new(0);
        let mut out = Vec::new();
        g.fill_normal_f32(16, 0.0, 1.0, &mut out);
        let mut u = TorchGen::new(0);
        let us: Vec<f32> = (0..16).map(|_| u.uniform_f32(0.0, 1.0)).collect();
        let radius = (-2.0f32 * (1.0f32 - us[0]).ln()).sqrt();
        let theta = (2.0 * std::f64::consts::PI * f64::from(us[8])) as f32;
        assert_eq!(out[0], radius * theta.cos());
        assert_eq!(out[8], radius * theta.sin());
        // A partial last block is recomputed from 16 fresh uniforms: 17 values use 32 words.
        let mut g17 = TorchGen::new(0);
        let mut v = Vec::new();
        g17.fill_normal_f32(17, 0.0, 1.0, &mut v);
        assert_eq!(v.len(), 17);
        assert_eq!(v[0], out[0]);
    }

    #[test]
    fn mxnet_numpy_normal_uses_both_values_of_a_pair() {
        // MXNet 1.9.1: mx.random.seed(0); np.random.normal(0, 1, size=(4,))
        // -> [2.2122064, 1.1630787, 0.7740038, 0.4838046]; legacy nd gives 2.2122064, 0.7740038, ...
        let mut rng = DeviceRng::new(0);
        let mut out = Vec::new();
        rng.np.normal_pairs_f32(4, &mut out);
        assert_eq!(out, vec![2.2122064f32, 1.1630787, 0.7740038, 0.4838046]);
        // One engine in sequence, not chunked: np.random.uniform(size=130)[64] is 0.45615032.
        let mut rng = DeviceRng::new(0);
        let u: Vec<f32> = (0..130).map(|_| rng.np.canonical_f32()).collect();
        assert_eq!(u[64], 0.45615032);
    }
}
