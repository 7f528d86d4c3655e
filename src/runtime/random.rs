//! Random numbers that reproduce MXNet 1.9.1's CPU sampler bit for bit.
//!
//! MXNet keeps 1024 `std::mt19937` engines per device, engine `i` seeded with `seed + i`. A sampling
//! op over N elements splits them into `min(ceil(N / 64), 1024)` equal chunks and chunk `t` draws
//! from engine `t` (src/operator/random/sampler.h, `LaunchRNG`). Floats come from libstdc++'s
//! `generate_canonical` and normals from `std::normal_distribution`'s Marsaglia polar method; MXNet
//! builds a fresh distribution object for every sample, so the polar method's cached second value
//! is never used: each normal sample costs one accepted pair. Engines are created lazily so a
//! session that never samples large arrays does not pay for 1024 states.

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

/// One device's generator: MXNet's bank of engines.
pub struct DeviceRng {
    seed: u32,
    engines: Vec<Mt19937>,
}

impl DeviceRng {
    pub fn new(seed: u64) -> Self {
        DeviceRng {
            seed: seed as u32,
            engines: Vec::new(),
        }
    }

    /// `mx.random.seed`: MXNet passes the seed through a C `int`, so only its low 32 bits count.
    pub fn reseed(&mut self, seed: u64) {
        self.seed = seed as u32;
        self.engines.clear();
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
            for _ in start..end {
                out.push(draw(engine));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
