//! Keyed decisions (spec §4.3): SHA-256 of the canonical `[seed, rule, tool, key]`, the first
//! 64 bits as an unsigned integer, compared exactly against `probability × 2^64`.
//!
//! No floating-point conversion of the draw ever happens: `p = 1.0` always hits, even for the
//! largest draw.

use sha2::{Digest, Sha256};

use crate::json::{Text, write_int, write_text};

/// One decision's draw. Only the number is kept: the hashed text can be as long as the
/// tool name, so [`Draw::input`] rebuilds it when someone wants to see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
    /// The first 64 bits of the SHA-256, big-endian.
    pub value: u64,
}

impl Draw {
    /// Computes the draw for a seed, rule name, called tool and raw invocation key.
    pub fn new(seed: i64, rule: &Text, tool: &Text, key: &Text) -> Draw {
        Drawer::new(seed, tool, key).draw(rule)
    }

    /// The canonical JSON the hash is taken over: `[seed,"rule","tool","key"]`.
    pub fn input(seed: i64, rule: &Text, tool: &Text, key: &Text) -> String {
        let bytes = rule.as_wtf8().len() + tool.as_wtf8().len() + key.as_wtf8().len();
        let mut out = String::with_capacity(24 + bytes);
        out.push('[');
        write_int(seed, &mut out);
        for t in [rule, tool, key] {
            out.push(',');
            write_text(t, &mut out);
        }
        out.push(']');
        out
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

/// The draws of one call for any number of rules: the call's part of the hashed text (seed,
/// tool, key) is encoded once, and each rule's draw hashes it without copying.
#[derive(Clone, Debug)]
pub struct Drawer {
    head: String,
    tail: String,
}

impl Drawer {
    /// Prepares the draws for `tool`'s call keyed `key` under `seed`.
    pub fn new(seed: i64, tool: &Text, key: &Text) -> Drawer {
        let mut tail = String::with_capacity(tool.as_wtf8().len() + key.as_wtf8().len() + 8);
        tail.push(',');
        write_text(tool, &mut tail);
        tail.push(',');
        write_text(key, &mut tail);
        tail.push(']');
        let mut head = String::with_capacity(24);
        head.push('[');
        write_int(seed, &mut head);
        head.push(',');
        Drawer { head, tail }
    }

    /// The draw for `rule`.
    pub fn draw(&self, rule: &Text) -> Draw {
        let mut name = String::with_capacity(rule.as_wtf8().len() + 2);
        write_text(rule, &mut name);
        let mut h = Sha256::new();
        h.update(self.head.as_bytes());
        h.update(name.as_bytes());
        h.update(self.tail.as_bytes());
        let digest = h.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        Draw {
            value: u64::from_be_bytes(first),
        }
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
            Draw::input(
                42,
                &"lost-receipt".into(),
                &"create_shipment".into(),
                &"#1".into()
            ),
            r##"[42,"lost-receipt","create_shipment","#1"]"##
        );
        assert_eq!(d.value, 618255713456486337);
    }
}
