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
    use std::fmt::Write;
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
    py_fixed(x, places).parse::<f64>().unwrap_or(x)
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
