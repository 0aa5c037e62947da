//! Deterministic randomness: ChaCha8 streams forked from one root seed by label.
//!
//! Every draw in a run comes from a [`Rng`] made by [`Rng::fork`]: the same root seed and label
//! always give the same stream, on every platform and version (ChaCha8 is value-stable), and
//! streams with different labels are independent, so adding a client does not change the
//! network's draws. Floating point appears only in [`det_ln`] and [`det_exp`], which use the
//! basic IEEE operations alone (no platform `libm`), so their results are bit-identical
//! everywhere.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng as _, SeedableRng};

/// One deterministic random stream.
#[derive(Clone, Debug)]
pub struct Rng(ChaCha8Rng);

impl Rng {
    /// The stream named `label` of the run with seed `root_seed`.
    ///
    /// The root seed is expanded into the ChaCha key (by `rand_core`'s portable
    /// `seed_from_u64`) and the label, hashed with FNV-1a, picks the ChaCha stream.
    pub fn fork(root_seed: u64, label: &str) -> Rng {
        let mut inner = ChaCha8Rng::seed_from_u64(root_seed);
        inner.set_stream(fnv1a(label.as_bytes()));
        Rng(inner)
    }

    /// 64 uniformly random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A uniform integer in `0..n` (unbiased, by Lemire's multiply-and-reject). `n` must be
    /// positive.
    ///
    /// A draw is rejected when its low half falls below `2^64 mod n`, which is below `n`: so
    /// the division that finds that threshold is needed only for a low half below `n`, one
    /// draw in `2^64 / n`. Same draws, same results as taking the threshold first.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Rng::below(0)");
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }

    /// A uniform integer in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "Rng::between({lo}, {hi})");
        if lo == 0 && hi == u64::MAX {
            return self.next_u64();
        }
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `ppm` per million. Draws nothing when `ppm` is zero, so turning
    /// a probability off does not shift the stream.
    #[inline]
    pub fn chance_ppm(&mut self, ppm: u32) -> bool {
        ppm > 0 && (ppm >= 1_000_000 || self.below(1_000_000) < u64::from(ppm))
    }

    /// A uniform float in `(0, 1]` with 53 random bits (never zero, so its logarithm is finite).
    pub fn unit_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// FNV-1a, 64-bit: a stable hash for labels.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

const LN_2: f64 = std::f64::consts::LN_2;

/// Natural logarithm of a positive finite `x`, bit-identical on every platform.
///
/// `x = m * 2^e` with `m` in `[sqrt(1/2), sqrt(2))`; `ln m = 2 atanh(s)` with
/// `s = (m - 1) / (m + 1)`, `|s| < 0.172`, summed to `s^23` (error below 1e-18).
pub fn det_ln(x: f64) -> f64 {
    assert!(x > 0.0 && x.is_finite(), "det_ln({x})");
    let (mut m, mut e) = frexp(x);
    if m < std::f64::consts::FRAC_1_SQRT_2 {
        m *= 2.0;
        e -= 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut term = s;
    let mut sum = 0.0;
    let mut k = 1.0;
    for _ in 0..12 {
        sum += term / k;
        term *= s2;
        k += 2.0;
    }
    2.0 * sum + f64::from(e) * LN_2
}

/// `e^x`, bit-identical on every platform. Saturates to 0 below -700 and to infinity
/// above 700.
pub fn det_exp(x: f64) -> f64 {
    assert!(!x.is_nan(), "det_exp(NaN)");
    if x < -700.0 {
        return 0.0;
    }
    if x > 700.0 {
        return f64::INFINITY;
    }
    // x = k ln2 + r with |r| <= ln2 / 2; e^r by its Taylor series to r^22.
    let k = (x / LN_2 + if x >= 0.0 { 0.5 } else { -0.5 }) as i32;
    // Cody-Waite: ln2 split in two so that k * LN2_HI is exact and r keeps full precision.
    // fdlibm's split: the high part has 32 trailing zero bits.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    let r = (x - f64::from(k) * LN2_HI) - f64::from(k) * LN2_LO;
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in 1..23 {
        term *= r / f64::from(i);
        sum += term;
    }
    sum * pow2(k)
}

/// Splits a positive normal or subnormal `x` into `m * 2^e` with `m` in `[0.5, 1)`.
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        // Subnormal: scale into the normal range first.
        let (m, e) = frexp(x * (1u64 << 54) as f64);
        return (m, e - 54);
    }
    let m = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (m, exp - 1022)
}

/// `2^k` for `k` in the range `det_exp` needs, built from two exact factors.
fn pow2(k: i32) -> f64 {
    let half = k / 2;
    let one = |k: i32| f64::from_bits(((k + 1023) as u64) << 52);
    one(half) * one(k - half)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn det_ln_matches_std_closely() {
        for &x in &[
            1e-300, 1e-9, 0.001, 0.5, 0.7, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e300,
        ] {
            let (a, b) = (det_ln(x), x.ln());
            assert!(
                (a - b).abs() <= 1e-15 * b.abs().max(1.0),
                "ln({x}): {a} vs {b}"
            );
        }
        assert_eq!(det_ln(1.0), 0.0);
    }

    #[test]
    fn det_exp_matches_std_closely() {
        for &x in &[-700.0, -50.0, -1.0, -1e-9, 0.0, 0.3, 1.0, 2.5, 20.0, 700.0] {
            let (a, b) = (det_exp(x), f64::exp(x));
            assert!((a - b).abs() <= 1e-14 * b.abs(), "exp({x}): {a} vs {b}");
        }
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut rng = Rng::fork(7, "test");
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let v = rng.below(5);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    /// `below` finds its threshold only when a draw might fall under it: the same numbers,
    /// and the same draws taken, as the threshold-first form it replaced.
    #[test]
    fn below_draws_as_the_threshold_first_form() {
        fn threshold_first(rng: &mut Rng, n: u64) -> u64 {
            let threshold = n.wrapping_neg() % n;
            loop {
                let m = u128::from(rng.next_u64()) * u128::from(n);
                if (m as u64) >= threshold {
                    return (m >> 64) as u64;
                }
            }
        }
        // Rejection is common just above 2^63 (almost half the draws) and near u64::MAX.
        let ns = [
            1,
            2,
            3,
            5,
            1_000_000,
            (1 << 63) + 1,
            (1 << 63) + 12345,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut a = Rng::fork(21, "below");
        let mut b = a.clone();
        for i in 0..200_000 {
            let n = ns[i % ns.len()];
            assert_eq!(a.below(n), threshold_first(&mut b, n), "draw {i}, n = {n}");
        }
        assert_eq!(a.next_u64(), b.next_u64(), "the streams stay in step");
    }

    #[test]
    fn chance_ppm_zero_draws_nothing() {
        let mut a = Rng::fork(1, "x");
        let mut b = Rng::fork(1, "x");
        assert!(!a.chance_ppm(0));
        assert_eq!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut rng = Rng::fork(3, "shuffle");
        let mut v: Vec<u32> = (0..10).collect();
        rng.shuffle(&mut v);
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
    }
}
