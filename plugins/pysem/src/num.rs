//! Python numbers: arbitrary-size `int` kept as decimal text, `float` repr,
//! `round`, and the `int(str)` / `float(str)` conversions.

use crate::chars::{decimal_value, is_space};

/// CPython (3.11 on) refuses to convert decimal strings longer than this
/// (`sys.get_int_max_str_digits()`), raising `ValueError`.
pub const MAX_STR_DIGITS: usize = 4300;

/// A Python `int` of any size: sign and decimal magnitude without leading
/// zeros (zero is `"0"`, never negative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyInt {
    neg: bool,
    mag: String,
}

impl PyInt {
    /// From ASCII decimal digits (leading zeros allowed).
    pub fn from_digits(neg: bool, digits: &str) -> PyInt {
        let mag = digits.trim_start_matches('0');
        let mag = if mag.is_empty() { "0" } else { mag };
        PyInt {
            neg: neg && mag != "0",
            mag: mag.to_owned(),
        }
    }

    pub fn from_i64(v: i64) -> PyInt {
        PyInt::from_digits(v < 0, &v.unsigned_abs().to_string())
    }

    /// From digits in `radix` (2, 8 or 16), already validated.
    pub fn from_radix(digits: &str, radix: u32) -> PyInt {
        let mut dec: Vec<u8> = vec![0];
        for c in digits.chars() {
            let d = c.to_digit(radix).unwrap_or(0);
            let mut carry = d;
            for x in dec.iter_mut().rev() {
                let v = u32::from(*x) * radix + carry;
                *x = (v % 10) as u8;
                carry = v / 10;
            }
            while carry > 0 {
                dec.insert(0, (carry % 10) as u8);
                carry /= 10;
            }
        }
        let s: String = dec.iter().map(|d| char::from(b'0' + d)).collect();
        PyInt::from_digits(false, &s)
    }

    pub fn is_zero(&self) -> bool {
        self.mag == "0"
    }

    pub fn is_negative(&self) -> bool {
        self.neg
    }

    pub fn magnitude(&self) -> &str {
        &self.mag
    }

    /// Python `repr(int)`.
    pub fn repr(&self) -> String {
        if self.neg {
            format!("-{}", self.mag)
        } else {
            self.mag.clone()
        }
    }

    /// `float(int)`: the nearest double, or `None` where Python raises
    /// `OverflowError`.
    pub fn to_f64(&self) -> Option<f64> {
        let v: f64 = self.repr().parse().ok()?;
        v.is_finite().then_some(v)
    }

    /// Whether this int equals the float exactly (Python compares int and
    /// float without rounding).
    pub fn eq_f64(&self, f: f64) -> bool {
        match f64_exact_int(f) {
            Some(i) => &i == self,
            None => false,
        }
    }
}

/// The exact integer value of an integral finite float.
pub fn f64_exact_int(f: f64) -> Option<PyInt> {
    if !f.is_finite() || f.fract() != 0.0 {
        return None;
    }
    if f.abs() < 9.0e15 {
        return Some(PyInt::from_i64(f as i64));
    }
    // f = m * 2^e exactly with an integer mantissa.
    let bits = f.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let mant = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
    let shift = exp - 1075; // f = mant * 2^shift, shift >= 0 here
    let mut dec: Vec<u8> = mant.to_string().bytes().map(|b| b - b'0').collect();
    for _ in 0..shift.max(0) {
        let mut carry = 0u8;
        for x in dec.iter_mut().rev() {
            let v = *x * 2 + carry;
            *x = v % 10;
            carry = v / 10;
        }
        if carry > 0 {
            dec.insert(0, carry);
        }
    }
    let s: String = dec.iter().map(|d| char::from(b'0' + d)).collect();
    Some(PyInt::from_digits(f < 0.0, &s))
}

/// Python `repr(float)`: shortest round-trip digits, fixed notation for
/// decimal exponents in [-4, 16), else `d.ddde+XX`.
pub fn float_repr(f: f64) -> String {
    let mut out = String::new();
    write_float_repr(&mut out, f);
    out
}

/// Appends Python's `repr(f)` to `out` (see [`float_repr`]), without
/// allocating: serialisers call it for every float they write.
pub fn write_float_repr(out: &mut String, f: f64) {
    if f.is_nan() {
        return out.push_str("nan");
    }
    if f.is_infinite() {
        return out.push_str(if f > 0.0 { "inf" } else { "-inf" });
    }
    let (digits, exp) = shortest_digits(f);
    let digits = digits.as_str();
    if f.is_sign_negative() {
        out.push('-');
    }
    let zeros = |out: &mut String, n: usize| out.extend(std::iter::repeat_n('0', n));
    if (-4..16).contains(&exp) {
        if exp >= 0 {
            let e = exp as usize;
            if digits.len() <= e + 1 {
                out.push_str(digits);
                zeros(out, e + 1 - digits.len());
                out.push_str(".0");
            } else {
                out.push_str(&digits[..=e]);
                out.push('.');
                out.push_str(&digits[e + 1..]);
            }
        } else {
            out.push_str("0.");
            zeros(out, (-exp - 1) as usize);
            out.push_str(digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        // Writing into a String cannot fail.
        let _ = std::fmt::Write::write_fmt(out, format_args!("{:02}", exp.unsigned_abs()));
    }
}

/// Python `round(x, ndigits)` for a float: the exact binary value of `x`
/// rounded to `ndigits` decimal places (negative: to tens, hundreds...),
/// ties to even, read back as the nearest float. `None` where Python raises
/// `OverflowError` (`rounded value too large to represent`).
pub fn round(x: f64, ndigits: i32) -> Option<f64> {
    // CPython's NDIGITS_MAX and NDIGITS_MIN for doubles.
    if !x.is_finite() || x == 0.0 || ndigits > 323 {
        return Some(x);
    }
    if ndigits < -308 {
        return Some(0.0 * x);
    }
    let rounded: f64 = if ndigits >= 0 {
        // Rust's fixed-precision formatting is exact, ties to even.
        format!("{x:.*}", ndigits as usize).parse().ok()?
    } else {
        let k = ndigits.unsigned_abs() as usize;
        // The integer part's exact digits, padded so that at least one digit
        // stands above the rounding position.
        let int = format!("{:.0}", x.abs().trunc());
        let int = format!("{}{int}", "0".repeat((k + 1).saturating_sub(int.len())));
        let (head, tail) = int.split_at(int.len() - k);
        let half = format!("5{}", "0".repeat(k - 1));
        let up = match tail.cmp(half.as_str()) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => {
                x.fract() != 0.0 || head.bytes().last().is_some_and(|d| (d - b'0') % 2 == 1)
            }
        };
        let head: String = if up { increment(head) } else { head.to_owned() };
        let magnitude: f64 = format!("{head}e{k}").parse().ok()?;
        magnitude.copysign(x)
    };
    rounded.is_finite().then_some(rounded)
}

/// A decimal digit string plus one.
fn increment(digits: &str) -> String {
    let mut out: Vec<u8> = digits.bytes().collect();
    for d in out.iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return String::from_utf8(out).expect("ASCII digits");
        }
    }
    format!("1{}", String::from_utf8(out).expect("ASCII digits"))
}

/// `repr` of a complex number's imaginary part: like float repr without a
/// forced `.0` (`1j`, `1.5j`, `1e+16j`).
pub fn imag_repr(f: f64) -> String {
    let r = float_repr(f);
    let r = r.strip_suffix(".0").map(str::to_owned).unwrap_or(r);
    format!("{r}j")
}

/// The shortest significant digits of a finite float's magnitude (no
/// leading or trailing zeros; `0` for zero), and the decimal exponent of
/// the first. Żmij (`zmij`, also serde_json's) finds the digits; its text,
/// `int[.frac][e±x]`, is read back into digits and exponent.
fn shortest_digits(f: f64) -> (Digits, i32) {
    let mut buf = zmij::Buffer::new();
    let text = buf.format_finite(f.abs());
    let (mant, e) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let mut exp = int.len() as i32 - 1 + e;
    let mut digits = Digits::default();
    // Zeros after a significant digit, written only when another follows.
    let mut zeros = 0;
    for b in int.bytes().chain(frac.bytes()) {
        match b {
            b'0' if digits.len == 0 => exp -= 1,
            b'0' => zeros += 1,
            _ => {
                for _ in 0..std::mem::take(&mut zeros) {
                    digits.push(b'0');
                }
                digits.push(b);
            }
        }
    }
    if digits.len == 0 {
        digits.push(b'0');
        exp = 0;
    }
    (digits, exp)
}

/// ASCII digits on the stack (a float has at most 17 significant digits).
#[derive(Default)]
struct Digits {
    len: usize,
    bytes: [u8; 32],
}

impl Digits {
    fn push(&mut self, b: u8) {
        self.bytes[self.len] = b;
        self.len += 1;
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).expect("ASCII")
    }
}

/// Replaces Unicode decimal digits by ASCII ones and Python whitespace by
/// spaces, as `int()`/`float()` do before parsing.
fn to_ascii_number(s: &str) -> String {
    s.chars()
        .map(|c| match decimal_value(c) {
            Some(d) => char::from(b'0' + d as u8),
            None if is_space(c) => ' ',
            None => c,
        })
        .collect()
}

/// Checks Python's underscore rule (single `_` between digits only) and
/// returns the digits without underscores.
fn digits_with_underscores(s: &str) -> Option<String> {
    if s.is_empty() || s.starts_with('_') || s.ends_with('_') || s.contains("__") {
        return None;
    }
    if !s.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return None;
    }
    Some(s.chars().filter(|c| *c != '_').collect())
}

/// Python `int(s)` (base 10); `None` where Python raises `ValueError`.
pub fn py_int(s: &str) -> Option<PyInt> {
    let t = to_ascii_number(s);
    let t = t.trim_matches(' ');
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = digits_with_underscores(body)?;
    if digits.len() > MAX_STR_DIGITS {
        return None;
    }
    Some(PyInt::from_digits(neg, &digits))
}

/// Python `float(s)`; `None` where Python raises `ValueError`.
pub fn py_float(s: &str) -> Option<f64> {
    let t = to_ascii_number(s);
    let t = t.trim_matches(' ');
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let lower = body.to_ascii_lowercase();
    let v = match lower.as_str() {
        "inf" | "infinity" => f64::INFINITY,
        "nan" => f64::NAN,
        _ => {
            let (mant, exp) = match lower.find('e') {
                Some(i) => (&lower[..i], Some(&lower[i + 1..])),
                None => (&lower[..], None),
            };
            let (int_part, frac_part) = match mant.find('.') {
                Some(i) => (&mant[..i], Some(&mant[i + 1..])),
                None => (mant, None),
            };
            let int_digits = if int_part.is_empty() {
                String::new()
            } else {
                digits_with_underscores(int_part)?
            };
            let frac_digits = match frac_part {
                Some("") | None => String::new(),
                Some(f) => digits_with_underscores(f)?,
            };
            if int_digits.is_empty() && frac_digits.is_empty() {
                return None;
            }
            let mut text = format!("{int_digits}.{frac_digits}");
            if text.starts_with('.') {
                text.insert(0, '0');
            }
            if let Some(e) = exp {
                let (esign, edigits) = match e.as_bytes().first() {
                    Some(b'-') => ("-", &e[1..]),
                    Some(b'+') => ("", &e[1..]),
                    _ => ("", e),
                };
                let edigits = digits_with_underscores(edigits)?;
                text.push('e');
                text.push_str(esign);
                text.push_str(&edigits);
            }
            text.parse::<f64>().ok()?
        }
    };
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python() {
        for (f, r) in [
            (5.0, "5.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (123.456, "123.456"),
            (-0.0, "-0.0"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ] {
            assert_eq!(float_repr(f), r);
        }
        assert_eq!(imag_repr(1.0), "1j");
        assert_eq!(imag_repr(1e16), "1e+16j");
    }

    /// CPython's repr of 600 floats (`tests/gen_float_repr.py`): 100 exact
    /// ties between two shortest candidates (half to even, where Rust's
    /// `{:e}` rounds up), 200 other ambiguous ones, 300 of any kind.
    #[test]
    fn float_repr_matches_cpython_on_ties_and_ambiguous_digits() {
        let fixture = include_str!("../tests/float_repr.txt");
        for line in fixture.lines() {
            let (bits, want) = line.split_once(' ').unwrap();
            let f = f64::from_bits(u64::from_str_radix(bits, 16).unwrap());
            assert_eq!(float_repr(f), want, "{bits}");
        }
        assert_eq!(fixture.lines().count(), 600);
    }

    /// Over many floats of every magnitude: the text reads back as the same
    /// float, with as few digits as Rust's shortest `{:e}`, in the notation
    /// Python picks.
    #[test]
    fn float_repr_round_trips_in_pythons_notation() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Any bit pattern, and one of magnitude 1e-6 .. 1e17.
            let scaled = (x >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((x % 24) as i32 - 6);
            for f in [f64::from_bits(x), scaled] {
                if f.is_finite() {
                    check(f);
                }
            }
        }
        fn check(f: f64) {
            let r = float_repr(f);
            assert_eq!(r.parse::<f64>().unwrap().to_bits(), f.to_bits(), "{r}");
            let sci = format!("{:e}", f.abs());
            let (mant, exp) = sci.split_once('e').unwrap();
            let exp: i32 = exp.parse().unwrap();
            let body = r.trim_start_matches('-');
            let (m, e) = body.split_once('e').unwrap_or((body, ""));
            let significant = |t: &str| {
                let d = t.replace('.', "");
                d.trim_matches('0').len().max(1)
            };
            assert_eq!(significant(m), significant(mant), "{r} vs {sci}");
            if (-4..16).contains(&exp) {
                assert!(e.is_empty() && m.contains('.'), "{r}");
            } else {
                assert_eq!(
                    e,
                    format!("{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs()),
                    "{r}"
                );
            }
        }
    }

    #[test]
    fn round_matches_python() {
        // (x, ndigits, python3 round(x, ndigits)) computed with CPython.
        for (x, n, want) in [
            (0.12345, 4, 0.1235),
            (0.00005, 4, 0.0001),
            (0.03125, 4, 0.0312),
            (0.09375, 4, 0.0938),
            (0.28125, 4, 0.2812),
            (0.15625, 4, 0.1562),
            (0.46875, 4, 0.4688),
            (0.71875, 4, 0.7188),
            (0.00015, 4, 0.0001),
            (0.00025, 4, 0.0003),
            (0.6335, 4, 0.6335),
            (2.0 / 3.0, 4, 0.6667),
            (1.0 / 3.0, 4, 0.3333),
            (0.99995, 4, 1.0),
            (0.999949999, 4, 0.9999),
            (0.00004999, 4, 0.0),
            (1e-300, 4, 0.0),
            (5e-324, 4, 0.0),
            (1.0, 4, 1.0),
            (0.5, 4, 0.5),
            (-0.03125, 4, -0.0312),
            (1234.56785, 4, 1234.5678),
            (4503599627370497.0, 4, 4503599627370497.0),
            (0.125, 2, 0.12),
            (0.375, 2, 0.38),
            (86.225, 2, 86.22),
            (2.675, 2, 2.67),
            (0.5, 0, 0.0),
            (1.5, 0, 2.0),
            (2.5, 0, 2.0),
            (-2.5, 0, -2.0),
            (1234.5, -1, 1230.0),
            (1235.0, -1, 1240.0),
            (1225.0, -1, 1220.0),
            (1225.0001, -1, 1230.0),
            (-1250.0, -2, -1200.0),
            (1350.0, -2, 1400.0),
            (49.0, -2, 0.0),
            (50.0, -2, 0.0),
            (51.0, -2, 100.0),
            (950.0, -3, 1000.0),
            (1.5e300, -300, 2e300),
            (123.0, -400, 0.0),
            (1.25, 400, 1.25),
        ] {
            let got = round(x, n).unwrap();
            assert_eq!(got.to_bits(), f64::to_bits(want), "round({x}, {n}) = {got}");
        }
        assert_eq!(round(-0.001, 2).unwrap().to_bits(), (-0.0f64).to_bits());
        assert_eq!(round(-3.0, -400).unwrap().to_bits(), (-0.0f64).to_bits());
        assert!(round(f64::NAN, 2).unwrap().is_nan());
        // OverflowError: rounded value too large to represent.
        assert_eq!(round(1.7e308, -308), None);
    }

    #[test]
    fn int_and_float_parsing() {
        assert_eq!(py_int(" +1_000\n").unwrap().repr(), "1000");
        assert_eq!(py_int("-0").unwrap().repr(), "0");
        assert_eq!(py_int("\u{661}\u{662}").unwrap().repr(), "12");
        assert!(py_int("1__0").is_none() && py_int("1.0").is_none() && py_int("").is_none());
        assert_eq!(py_float("1_0.5"), Some(10.5));
        assert_eq!(py_float(".5"), Some(0.5));
        assert_eq!(py_float("5."), Some(5.0));
        assert_eq!(py_float("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(py_float("nan").unwrap().is_nan());
        assert!(py_float("1e").is_none() && py_float(".").is_none() && py_float("0x1").is_none());
        assert_eq!(py_float("1E5"), Some(1e5));
    }

    #[test]
    fn exact_int_float_comparison() {
        let big = PyInt::from_digits(false, "9007199254740993");
        assert!(!big.eq_f64(9007199254740992.0));
        assert!(PyInt::from_digits(false, "9007199254740992").eq_f64(9007199254740992.0));
        assert_eq!(f64_exact_int(1e20).unwrap().repr(), "100000000000000000000");
        assert!(PyInt::from_i64(-3).eq_f64(-3.0));
        assert_eq!(PyInt::from_radix("ff", 16).repr(), "255");
        assert!(PyInt::from_digits(false, &"9".repeat(400))
            .to_f64()
            .is_none());
    }
}
