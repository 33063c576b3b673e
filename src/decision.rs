//! Keyed decisions (spec §4.3): SHA-256 of the canonical `[seed, rule, tool, key]`, the first
//! 64 bits as an unsigned integer, compared exactly against `probability × 2^64`.
//!
//! No floating-point conversion of the draw ever happens: `p = 1.0` always hits, even for the
//! largest draw.

use sha2::{Digest, Sha256};

use crate::json::{Text, Value, canonical};

/// One explained decision.
#[derive(Clone, Debug, PartialEq)]
pub struct Draw {
    /// The canonical JSON the hash is taken over.
    pub canonical: String,
    /// The first 64 bits of the SHA-256, big-endian.
    pub value: u64,
}

impl Draw {
    /// Computes the draw for a seed, rule name, called tool and raw invocation key.
    pub fn new(seed: i64, rule: &Text, tool: &Text, key: &Text) -> Draw {
        let input = Value::Array(vec![
            Value::from(seed),
            Value::Str(rule.clone()),
            Value::Str(tool.clone()),
            Value::Str(key.clone()),
        ]);
        let canonical = canonical(&input);
        let digest = Sha256::digest(canonical.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        Draw {
            canonical,
            value: u64::from_be_bytes(first),
        }
    }

    /// The draw as a fraction of 2^64 (for display only).
    pub fn fraction(&self) -> f64 {
        self.value as f64 / 18_446_744_073_709_551_616.0
    }

    /// Whether the draw selects at `probability` (exact comparison).
    pub fn hits(&self, probability: f64) -> bool {
        hits(self.value, probability)
    }
}

/// `u < probability × 2^64`, computed exactly.
pub fn hits(u: u64, probability: f64) -> bool {
    if probability.is_nan() || probability <= 0.0 {
        return false;
    }
    let t = probability * 18_446_744_073_709_551_616.0; // exact: a power of two
    if t >= 18_446_744_073_709_551_616.0 {
        return true;
    }
    let floor = t.floor();
    let f = floor as u64; // exact: floor(t) < 2^64 and integral
    if floor == t { u < f } else { u <= f }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extremes() {
        assert!(hits(u64::MAX, 1.0));
        assert!(!hits(0, 0.0));
        assert!(hits(0, 5e-324));
        assert!(!hits(1, 5e-324));
        assert!(hits(1u64 << 63, 0.5000000000000001));
        assert!(!hits(1u64 << 63, 0.5));
    }

    #[test]
    fn canonical_input() {
        let d = Draw::new(
            42,
            &"lost-receipt".into(),
            &"create_shipment".into(),
            &"#1".into(),
        );
        assert_eq!(
            d.canonical,
            r##"[42,"lost-receipt","create_shipment","#1"]"##
        );
        assert_eq!(d.value, 618255713456486337);
    }
}
