//! A tiny, fixed pseudo-random generator (SplitMix64), so dumps are byte-identical across
//! platforms and dependency upgrades.

pub struct Rng(u64);

impl Rng {
    /// An independent stream for row `index` of a dump seeded with `seed`.
    pub fn for_row(seed: u64, index: u64) -> Rng {
        let mut r = Rng(seed ^ 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(index.wrapping_add(1)));
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn hex(&mut self, digits: usize) -> String {
        let mut s = String::with_capacity(digits);
        while s.len() < digits {
            s.push_str(&format!("{:016x}", self.next_u64()));
        }
        s.truncate(digits);
        s
    }

    pub fn uuid(&mut self) -> String {
        let h = self.hex(32);
        format!("{}-{}-4{}-{}-{}", &h[0..8], &h[8..12], &h[13..16], &h[16..20], &h[20..32])
    }

    pub fn choose<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}
