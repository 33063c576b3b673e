//! Python-compatible float text: `repr` (shortest round-trip digits in Python's layout),
//! `round(x, n)` and `format(x, '.nf')`, all correctly rounded with ties to even.

/// Python `repr(float)`: the shortest round-trip digits, in fixed notation for exponents
/// -4..16 and `d.ddde±XX` otherwise (`0.1`, `1e-05`, `1e+16`, `-0.0`).
pub fn py_repr(x: f64) -> String {
    let mut out = String::with_capacity(24);
    write_py_repr(x, &mut out);
    out
}

/// A small buffer on the stack that `write!` can fill.
struct StackText {
    buf: [u8; 40],
    len: usize,
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// [`py_repr`] appended to `out` (no allocation but `out`'s own growth).
pub fn write_py_repr(x: f64, out: &mut String) {
    if x == 0.0 {
        out.push_str(if x.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    if !x.is_finite() {
        // Never stored in a Value; kept total for messages.
        out.push_str(if x.is_nan() {
            "nan"
        } else if x > 0.0 {
            "inf"
        } else {
            "-inf"
        });
        return;
    }
    if write_micros(x, out) {
        return;
    }
    write_shortest(x, out);
}

/// [`write_py_repr`] for a value that is, to the bit, the float nearest a decimal with at
/// most six places in `[0.0001, 1e9)` (times and durations as reports round them): its text
/// is that decimal. No other decimal of as few digits is as near, because any two such
/// decimals differ by at least 10^-6 while a float below 2^33 has an ulp under 10^-6; so the
/// shortest round-trip digits are the decimal's own, and Python's layout is fixed. False (and
/// nothing written) for any other value.
fn write_micros(x: f64, out: &mut String) -> bool {
    let a = x.abs();
    if !(1e-4..1e9).contains(&a) {
        return false;
    }
    let k = (a * 1e6).round();
    // Both exact (k < 2^53), so the quotient is the float nearest k / 10^6.
    if k / 1e6 != a {
        return false;
    }
    let k = k as u64;
    let (int, mut frac) = (k / 1_000_000, k % 1_000_000);
    let mut buf = [0u8; 24];
    let mut at = buf.len();
    let mut places = 6;
    while places > 1 && frac % 10 == 0 {
        frac /= 10;
        places -= 1;
    }
    for _ in 0..places {
        at -= 1;
        buf[at] = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    at -= 1;
    buf[at] = b'.';
    let mut n = int;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if x < 0.0 {
        at -= 1;
        buf[at] = b'-';
    }
    // Only ASCII digits, a point and a sign were written.
    match std::str::from_utf8(&buf[at..]) {
        Ok(text) => {
            out.push_str(text);
            true
        }
        Err(_) => false,
    }
}

/// [`write_py_repr`] from Rust's shortest round-trip digits, for any finite non-zero value.
fn write_shortest(x: f64, out: &mut String) {
    use std::fmt::Write;
    // Rust's `{:e}` prints the shortest round-trip digits: "-1.2345e-5" (at most 24 bytes).
    let mut sci = StackText {
        buf: [0; 40],
        len: 0,
    };
    if write!(sci, "{x:e}").is_err() {
        return;
    }
    let text = &sci.buf[..sci.len];
    let (neg, rest) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        _ => (false, text),
    };
    let e = rest.iter().position(|&c| c == b'e').unwrap_or(rest.len());
    let (mantissa, exp_text) = (&rest[..e], rest.get(e + 1..).unwrap_or(&[]));
    let exp: i32 = std::str::from_utf8(exp_text)
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    // The significant digits, without the point (at most 17).
    let mut digit_buf = [0u8; 24];
    let mut n = 0;
    for &c in mantissa.iter().filter(|c| c.is_ascii_digit()) {
        if n < digit_buf.len() {
            digit_buf[n] = c;
            n += 1;
        }
    }
    let digits = std::str::from_utf8(&digit_buf[..n]).unwrap_or("0");
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(digits);
                for _ in digits.len()..int_len {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let mag = exp.unsigned_abs();
        if mag < 10 {
            out.push('0');
        }
        let _ = write!(out, "{mag}");
    }
}

/// Python `format(x, '.{places}f')`: the exact binary value correctly rounded, ties to even.
pub fn py_fixed(x: f64, places: usize) -> String {
    // Rust's fixed-precision formatting is exact and rounds ties to even.
    format!("{x:.places$}")
}

/// Python `round(x, places)` for floats: correctly rounded decimal, then back to the nearest
/// float. Tiny negatives become `-0.0`, as in Python.
pub fn py_round(x: f64, places: usize) -> f64 {
    if !x.is_finite() {
        return x;
    }
    if let Some(r) = round_scaled(x, places) {
        return r;
    }
    py_fixed(x, places).parse::<f64>().unwrap_or(x)
}

/// [`py_round`] without text, where that is exact: `x·10^places` scaled in floating point is
/// within half an ulp of the exact product, so below 2^40 (an ulp of at most 2^-12) its
/// nearest integer is the exact product's unless the fraction is within 1/1000 of a half
/// (a tie, or near one: those take the exact path). The integer divided by the power of ten
/// (both exact) is the float nearest the decimal, as parsing its text gives. `None` when
/// the exact path is needed.
fn round_scaled(x: f64, places: usize) -> Option<f64> {
    const POWERS: [f64; 10] = [1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];
    let p = *POWERS.get(places)?;
    let y = x * p;
    if y.abs() >= (1u64 << 40) as f64 {
        return None;
    }
    let fraction = (y - y.trunc()).abs();
    if (fraction - 0.5).abs() < 1e-3 {
        return None;
    }
    // `round` keeps the sign: a tiny negative gives -0.0, as Python's does.
    Some(y.round() / p)
}

/// Rounds a time to microseconds as the engine records it.
pub fn round6(x: f64) -> f64 {
    py_round(x, 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_matches_python_layout() {
        let cases = [
            (1.0, "1.0"),
            (100.0, "100.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (-0.0, "-0.0"),
            (-2.5, "-2.5"),
            (0.15 + 0.3, "0.44999999999999996"),
            (1.6000000000000003, "1.6000000000000003"),
        ];
        for (x, want) in cases {
            assert_eq!(py_repr(x), want, "{x:e}");
        }
    }

    #[test]
    fn the_six_place_text_is_the_shortest_digits_text() {
        use rand_chacha::rand_core::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (mut fast, mut total) = (0, 0);
        let mut check = |x: f64| {
            let mut short = String::new();
            write_shortest(x, &mut short);
            let mut micros = String::new();
            if write_micros(x, &mut micros) {
                assert_eq!(micros, short, "{x:e}");
                fast += 1;
            } else {
                assert!(micros.is_empty(), "{x:e}");
            }
            total += 1;
        };
        for x in [
            1e-4,
            0.000101,
            0.5,
            1.0,
            10.25,
            999_999_999.999_999,
            123.456_789,
            1e9,
        ] {
            check(x);
            check(-x);
            check(f64::from_bits(x.to_bits() + 1));
            check(f64::from_bits(x.to_bits() - 1));
        }
        for _ in 0..200_000 {
            let r = rng.next_u64();
            // Decimals of up to six places at every scale, their neighbours, and any floats.
            let k = (r >> 12) % 10u64.pow(1 + (r % 15) as u32);
            let d = k as f64 / 1e6;
            check(d);
            check(-d);
            check(f64::from_bits(d.to_bits() ^ 1));
            check(f64::from_bits(rng.next_u64() >> 2));
        }
        assert!(
            fast > 300_000 && fast < total,
            "{fast} of {total} took the six-place path"
        );
    }

    #[test]
    fn the_scaled_rounding_agrees_with_the_exact_one() {
        use rand_chacha::rand_core::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let exact = |x: f64, places: usize| py_fixed(x, places).parse::<f64>().expect("float");
        let mut checked = 0;
        for i in 0..50_000u64 {
            let r = rng.next_u64();
            let x = match i % 4 {
                // Times as the engine has them: seconds since the start, to a few hours.
                0 => (r >> 11) as f64 / (1u64 << 53) as f64 * 10_000.0,
                // Halves of the last place, and their neighbours one or two ulps away.
                1 => {
                    let k = (r % 100_000_000) as f64 + 0.5;
                    let half = k / 1e6;
                    let step = (r >> 60) as i64 % 5 - 2;
                    f64::from_bits((half.to_bits() as i64 + step) as u64)
                }
                // Any bit pattern (huge, tiny, negative, subnormal).
                2 => f64::from_bits(r),
                // Exact binary ties such as 2^-7 = 0.0078125, and small negatives.
                _ => -((r % 1_000_000) as f64) / 128.0 / 1e6,
            };
            if !x.is_finite() {
                continue;
            }
            for places in [0, 3, 6, 9] {
                let want = exact(x, places);
                let got = py_round(x, places);
                assert_eq!(got.to_bits(), want.to_bits(), "round({x:e}, {places})");
                checked += usize::from(round_scaled(x, places).is_some());
            }
        }
        // Most values take the scaled path.
        assert!(checked > 100_000, "only {checked} took it");
    }

    #[test]
    fn round_ties_to_even_on_the_binary_value() {
        assert_eq!(py_round(0.0078125, 6), 0.007812);
        assert_eq!(py_round(0.44999999999999996, 6), 0.45);
        assert_eq!(py_round(1.6000000000000003, 6), 1.6);
        let z = py_round(-1e-12, 6);
        assert!(z == 0.0 && z.is_sign_negative());
        assert_eq!(py_fixed(0.125, 2), "0.12");
        assert_eq!(py_fixed(0.375, 2), "0.38");
        assert_eq!(py_fixed(2.5, 0), "2");
    }
}
