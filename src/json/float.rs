//! Python-compatible float text: `repr` (shortest round-trip digits in Python's layout),
//! `round(x, n)` and `format(x, '.nf')`, all correctly rounded with ties to even.

/// Python `repr(float)` for a finite value: `1.0`, `0.0001`, `1e-05`, `1e+16`, `-0.0`.
pub fn py_repr(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    if !x.is_finite() {
        // Never stored in a Value; kept total for messages.
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    // Rust's `{:e}` prints the shortest round-trip digits: "-1.2345e-5".
    let sci = format!("{x:e}");
    let (neg, rest) = match sci.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, sci.as_str()),
    };
    let (mantissa, exp) = rest.split_once('e').unwrap_or((rest, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if neg {
        out.push('-');
    }
    if (-4..16).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
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
        out.push_str(&mag.to_string());
    }
    out
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
