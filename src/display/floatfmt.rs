//! Decimal digit generation shared by the numpy, PyTorch and Python formatters.
//!
//! Everything is built on Rust's float formatting, which is exact: `{:e}` gives
//! the shortest digits that round-trip (for the value's own type, so f32 values
//! get f32 digits) and `{:.N}` / `{:.Ne}` round the exact binary value, ties to
//! even — the same results as C's printf, Python and numpy's Dragon4.

/// The decimal digits of a finite, non-negative value: `0.DIGITS x 10^decpt`.
/// `digits` is never empty; zero is `"0"` with `decpt == 1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Digits {
    pub digits: String,
    pub decpt: i32,
}

impl Digits {
    /// Parse Rust's `{:e}` output (`"1.2345e-7"`, `"0e0"`) of a non-negative value.
    fn from_rust_exp(text: &str) -> Digits {
        let (mantissa, exponent) = text.split_once('e').unwrap_or((text, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        if digits.chars().all(|c| c == '0') {
            return Digits {
                digits: "0".into(),
                decpt: 1,
            };
        }
        Digits {
            digits,
            decpt: exponent + 1,
        }
    }

    /// Drop trailing zeros (keeping at least one digit).
    pub fn trimmed(mut self) -> Digits {
        while self.digits.len() > 1 && self.digits.ends_with('0') {
            self.digits.pop();
        }
        self
    }

    /// Number of digits after the decimal point when written positionally.
    pub fn frac_len(&self) -> usize {
        let len = self.digits.len() as i64;
        (len - i64::from(self.decpt)).max(0) as usize
    }

    /// Integer and fractional parts when written positionally (no sign).
    /// The fractional part has exactly `frac_len()` digits.
    pub fn positional_parts(&self) -> (String, String) {
        let decpt = i64::from(self.decpt);
        let len = self.digits.len() as i64;
        if decpt <= 0 {
            let zeros = "0".repeat((-decpt) as usize);
            ("0".into(), format!("{zeros}{}", self.digits))
        } else if decpt >= len {
            let zeros = "0".repeat((decpt - len) as usize);
            (format!("{}{zeros}", self.digits), String::new())
        } else {
            let (int_part, frac_part) = self.digits.split_at(decpt as usize);
            (int_part.into(), frac_part.into())
        }
    }

    /// The decimal exponent of the first digit (`x = d.ddd x 10^exp10`).
    pub fn exp10(&self) -> i32 {
        if self.digits == "0" {
            0
        } else {
            self.decpt - 1
        }
    }
}

/// Shortest round-trip digits of `|x|` as an f64.
pub(crate) fn shortest_f64(x: f64) -> Digits {
    let shortest = Digits::from_rust_exp(&format!("{:e}", x.abs()));
    prefer_nearest_even(shortest, x.abs(), |text| {
        text.parse::<f64>().is_ok_and(|y| y == x.abs())
    })
}

/// Shortest round-trip digits of `|x|` as an f32.
pub(crate) fn shortest_f32(x: f32) -> Digits {
    let shortest = Digits::from_rust_exp(&format!("{:e}", x.abs()));
    prefer_nearest_even(shortest, f64::from(x.abs()), |text| {
        text.parse::<f32>().is_ok_and(|y| y == x.abs())
    })
}

/// Shortest round-trip digits of `|x|` as a float16: the fewest significant digits whose
/// nearest (ties to even) rounding reads back as the same half.
pub(crate) fn shortest_f16(x: half::f16) -> Digits {
    let exact = x.to_f64().abs();
    if exact == 0.0 || !exact.is_finite() {
        return shortest_f64(exact);
    }
    for sig in 1..=5 {
        let d = rounded_sig(exact, sig);
        let text = format!("0.{}e{}", d.digits, d.decpt);
        if text
            .parse::<f64>()
            .is_ok_and(|y| half::f16::from_f64(y).to_f64() == exact)
        {
            return d.trimmed();
        }
    }
    shortest_f64(exact)
}

/// When two shortest candidates are equally near the exact value, Rust rounds
/// up but Dragon4 (numpy) and dtoa (Python) pick the even digit: use the exact
/// value rounded (ties to even) to the same length whenever it still round-trips.
fn prefer_nearest_even(shortest: Digits, exact: f64, roundtrips: impl Fn(&str) -> bool) -> Digits {
    let nearest = rounded_sig(exact, shortest.digits.len());
    if nearest == shortest || nearest.digits.len() != shortest.digits.len() {
        return shortest;
    }
    let text = format!("0.{}e{}", nearest.digits, nearest.decpt);
    if roundtrips(&text) {
        nearest
    } else {
        shortest
    }
}

/// `|x|` rounded (exactly, ties to even) to `sig` significant digits; trailing
/// zeros are kept so the result has exactly `sig` digits (unless zero).
pub(crate) fn rounded_sig(x: f64, sig: usize) -> Digits {
    let sig = sig.max(1);
    Digits::from_rust_exp(&format!("{:.*e}", sig - 1, x.abs()))
}

/// `|x|` rounded (exactly, ties to even) to `frac` digits after the point,
/// as integer and fractional parts.
pub(crate) fn rounded_fixed(x: f64, frac: usize) -> (String, String) {
    let text = format!("{:.*}", frac, x.abs());
    match text.split_once('.') {
        Some((int_part, frac_part)) => (int_part.into(), frac_part.into()),
        None => (text, String::new()),
    }
}

/// A decimal exponent as C and Python write it: sign and at least `min_digits` digits.
pub(crate) fn exponent_text(exp: i32, min_digits: usize) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{sign}{:0>width$}", exp.unsigned_abs(), width = min_digits)
}

/// Python's `repr(float)`: shortest round-trip digits, positional when
/// `1e-4 <= |x| < 1e16`, otherwise scientific (`1e+16`, `1e-05`).
pub fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    let digits = shortest_f64(x);
    let scientific = digits.digits != "0" && (digits.decpt <= -4 || digits.decpt > 16);
    format!("{sign}{}", repr_style(&digits, scientific, true))
}

/// Python's 'r'-style layout of `digits`, scientific (`1.5e+16`) or positional.
/// `add_dot_0` appends `.0` to integral positional output (repr and str do).
pub(crate) fn repr_style(digits: &Digits, scientific: bool, add_dot_0: bool) -> String {
    if scientific {
        let (first, rest) = digits.digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        format!("{first}{dot}{rest}e{}", exponent_text(digits.exp10(), 2))
    } else {
        let (int_part, frac_part) = digits.positional_parts();
        if frac_part.is_empty() {
            if add_dot_0 {
                format!("{int_part}.0")
            } else {
                int_part
            }
        } else {
            format!("{int_part}.{frac_part}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_digits_for_each_width() {
        assert_eq!(
            shortest_f32(20.085_537),
            Digits {
                digits: "20085537".into(),
                decpt: 2
            }
        );
        assert_eq!(shortest_f64(0.1).digits, "1");
        assert_eq!(shortest_f64(0.1).decpt, 0);
        assert_eq!(shortest_f64(0.0).digits, "0");
    }

    #[test]
    fn shortest_ties_go_to_the_even_digit() {
        // 137890.625 is exactly between the 8-digit candidates ...62 and ...63
        // the literal parses to exactly 137890.625f32
        assert_eq!(shortest_f32(137_890.62).digits, "13789062");
    }

    #[test]
    fn positional_parts_cover_all_point_positions() {
        assert_eq!(
            shortest_f64(0.00123).positional_parts(),
            ("0".into(), "00123".into())
        );
        assert_eq!(
            shortest_f64(1200.0).positional_parts(),
            ("1200".into(), String::new())
        );
        assert_eq!(
            shortest_f64(12.5).positional_parts(),
            ("12".into(), "5".into())
        );
    }

    #[test]
    fn python_float_repr() {
        assert_eq!(py_float_repr(1e16), "1e+16");
        assert_eq!(py_float_repr(1e-5), "1e-05");
        assert_eq!(py_float_repr(f64::INFINITY), "inf");
        assert_eq!(py_float_repr(f64::NEG_INFINITY), "-inf");
        assert_eq!(py_float_repr(f64::NAN), "nan");
        assert_eq!(py_float_repr(-0.0), "-0.0");
        assert_eq!(py_float_repr(6.0), "6.0");
        assert_eq!(py_float_repr(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(py_float_repr(0.0001), "0.0001");
        assert_eq!(py_float_repr(9_999_999_999_999_998.0), "9999999999999998.0");
        assert_eq!(py_float_repr(1.5e300), "1.5e+300");
        assert_eq!(py_float_repr(123456.789), "123456.789");
        assert_eq!(py_float_repr(-2.5e-7), "-2.5e-07");
    }

    #[test]
    fn rounding_is_exact_and_ties_go_to_even() {
        assert_eq!(rounded_fixed(2.0005, 3), ("2".into(), "001".into()));
        assert_eq!(rounded_fixed(0.125, 2), ("0".into(), "12".into()));
        assert_eq!(rounded_sig(12345.678, 3).digits, "123");
        assert_eq!(rounded_sig(9.99, 2).digits, "10");
        assert_eq!(rounded_sig(9.99, 2).decpt, 2);
    }

    #[test]
    fn float16_shortest_digits() {
        let digits = |x: f64| {
            let d = shortest_f16(half::f16::from_f64(x));
            (d.digits, d.decpt)
        };
        assert_eq!(digits(0.1), ("1".to_string(), 0));
        assert_eq!(digits(1000.7), ("10005".to_string(), 4));
        assert_eq!(digits(65504.0), ("655".to_string(), 5));
        assert_eq!(digits(1e-5), ("1".to_string(), -4));
    }
}
