//! Python's string formatting: the format-spec mini-language (`format(x, spec)`,
//! f-strings, `str.format`) and printf-style `%` formatting, with CPython 3.11's
//! results and error messages.

use std::fmt;

use super::floatfmt::{
    exponent_text, py_float_repr, rounded_fixed, rounded_sig, shortest_f64, Digits,
};

/// A value to format. `Obj` is any other object, carried as its `str()` and
/// `repr()` (and type name, for error messages).
#[derive(Debug, Clone, PartialEq)]
pub enum FmtValue<'a> {
    Int(i64),
    /// An int past i64.
    BigInt(&'a num_bigint::BigInt),
    Float(f64),
    Str(&'a str),
    Bool(bool),
    Obj {
        type_name: String,
        str: String,
        repr: String,
    },
}

impl FmtValue<'_> {
    fn type_name(&self) -> &str {
        match self {
            FmtValue::Int(_) | FmtValue::BigInt(_) => "int",
            FmtValue::Float(_) => "float",
            FmtValue::Str(_) => "str",
            FmtValue::Bool(_) => "bool",
            FmtValue::Obj { type_name, .. } => type_name,
        }
    }

    /// Python's `str(value)`.
    pub fn to_str(&self) -> String {
        match self {
            FmtValue::Int(i) => i.to_string(),
            FmtValue::BigInt(n) => n.to_string(),
            FmtValue::Float(x) => py_float_repr(*x),
            FmtValue::Str(s) => (*s).to_string(),
            FmtValue::Bool(b) => bool_text(*b).into(),
            FmtValue::Obj { str, .. } => str.clone(),
        }
    }

    /// Python's `repr(value)`.
    pub fn to_repr(&self) -> String {
        match self {
            FmtValue::Str(s) => py_str_repr(s),
            FmtValue::Obj { repr, .. } => repr.clone(),
            other => other.to_str(),
        }
    }
}

fn bool_text(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// A formatting failure: the Python exception class and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// `ValueError`, `TypeError` or `OverflowError`.
    pub ename: &'static str,
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FormatError {}

impl From<FormatError> for String {
    fn from(err: FormatError) -> String {
        err.message
    }
}

fn value_error(message: impl Into<String>) -> FormatError {
    FormatError {
        ename: "ValueError",
        message: message.into(),
    }
}

fn type_error(message: impl Into<String>) -> FormatError {
    FormatError {
        ename: "TypeError",
        message: message.into(),
    }
}

/// Widths and precisions beyond this are refused rather than allocated.
const MAX_WIDTH: usize = 1_000_000;

/// Python's `repr(str)`: single quotes unless the text has a `'` and no `"`.
pub fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => {
                let n = c as u32;
                out.push_str(&if n < 0x100 {
                    format!("\\x{n:02x}")
                } else if n < 0x10000 {
                    format!("\\u{n:04x}")
                } else {
                    format!("\\U{n:08x}")
                });
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// CPython's `str.isprintable` for one character, as `repr` uses it: not a control or format
/// character, not a separator other than the space, not private use (`'\u202f'` and `'\xa0'`
/// are escaped). Unassigned code points print as they are here (CPython escapes them).
fn printable(c: char) -> bool {
    let n = c as u32;
    !(n < 0x20
        || (0x7f..=0xa0).contains(&n)
        || n == 0xad
        || (0x600..=0x605).contains(&n)
        || n == 0x61c
        || n == 0x6dd
        || n == 0x70f
        || n == 0x1680
        || n == 0x180e
        || (0x2000..=0x200f).contains(&n)
        || (0x2028..=0x202f).contains(&n)
        || (0x205f..=0x2064).contains(&n)
        || (0x2066..=0x206f).contains(&n)
        || n == 0x3000
        || (0xe000..=0xf8ff).contains(&n)
        || n == 0xfeff
        || (0xfff9..=0xfffb).contains(&n)
        || n >= 0xf0000)
}

// ---------------------------------------------------------------------------
// Float bodies (no sign), shared by both formatting styles
// ---------------------------------------------------------------------------

/// How a float is laid out, after the type letter is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FloatStyle {
    Fixed,
    Exp,
    General,
    /// The empty type: repr without a precision, 'g'-like (with `.0`) with one.
    Repr,
}

/// The digits of `|x|` in `style` (lower-case; callers upper-case for E/F/G).
fn float_body(x: f64, style: FloatStyle, precision: Option<usize>, alt: bool) -> String {
    let x = x.abs();
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return "inf".into();
    }
    match style {
        FloatStyle::Fixed => {
            let (int_part, frac_part) = rounded_fixed(x, precision.unwrap_or(6));
            if frac_part.is_empty() && !alt {
                int_part
            } else {
                format!("{int_part}.{frac_part}")
            }
        }
        FloatStyle::Exp => {
            let precision = precision.unwrap_or(6);
            let digits = rounded_sig(x, precision + 1);
            let (first, rest) = digits.digits.split_at(1);
            let rest = format!("{rest:0<precision$}");
            let dot = if precision > 0 || alt { "." } else { "" };
            format!("{first}{dot}{rest}e{}", exponent_text(digits.exp10(), 2))
        }
        FloatStyle::General => general(x, precision.unwrap_or(6), alt, false),
        FloatStyle::Repr => match precision {
            None => repr_alt(x, alt),
            Some(p) => general(x, p, alt, true),
        },
    }
}

/// CPython's 'g' layout: `precision` significant digits, exponent when the
/// decimal point is far away; `add_dot_0` (the empty type) keeps a `.0` and
/// switches to exponent one digit earlier.
fn general(x: f64, precision: usize, alt: bool, add_dot_0: bool) -> String {
    let precision = precision.max(1);
    let digits = rounded_sig(x, precision).trimmed();
    let limit = if add_dot_0 { precision - 1 } else { precision } as i64;
    let decpt = i64::from(digits.decpt);
    let use_exp = decpt <= -4 || decpt > limit;
    let end = if alt { precision } else { digits.digits.len() } as i64;
    layout_digits(&digits, use_exp, end, add_dot_0, alt)
}

/// The empty type without precision: repr, except that `#` keeps a bare point.
fn repr_alt(x: f64, alt: bool) -> String {
    let digits = shortest_f64(x);
    let decpt = i64::from(digits.decpt);
    let use_exp = digits.digits != "0" && (decpt <= -4 || decpt > 16);
    layout_digits(&digits, use_exp, digits.digits.len() as i64, true, alt)
}

/// Write `digits` with the decimal point placed, padding with zeros on either
/// side so that at least `end` digit positions are written (CPython's
/// `format_float_short` layout).
fn layout_digits(digits: &Digits, use_exp: bool, end: i64, add_dot_0: bool, alt: bool) -> String {
    let digit_text = digits.digits.as_bytes();
    let len = digit_text.len() as i64;
    let mut decpt = i64::from(digits.decpt);
    let exp = decpt - 1;
    if use_exp {
        decpt = 1;
    }
    let end = if !use_exp && add_dot_0 {
        end.max(decpt + 1)
    } else {
        end.max(decpt)
    };
    // Walk the digits padded with zeros on both sides, from min(0, decpt - 1)
    // to `end`, writing the point before position `decpt`.
    let start = if decpt <= 0 { decpt - 1 } else { 0 };
    let mut out = String::new();
    for position in start..end {
        if position == decpt {
            out.push('.');
        }
        let digit = usize::try_from(position)
            .ok()
            .and_then(|i| digit_text.get(i))
            .map_or('0', |&b| char::from(b));
        out.push(digit);
    }
    if end == decpt {
        out.push('.');
    }
    if out.ends_with('.') && !alt {
        out.pop();
    }
    if use_exp {
        out.push('e');
        out.push_str(&exponent_text(exp as i32, 2));
    }
    let _ = len;
    out
}

// ---------------------------------------------------------------------------
// Grouping and padding
// ---------------------------------------------------------------------------

/// Insert `separator` every `group` digits from the right; with `min_width`,
/// pad with zeros (themselves grouped) until the result is at least that
/// wide, as CPython does for `'0'`-filled numbers.
fn group_digits(digits: &str, separator: Option<char>, group: usize, min_width: usize) -> String {
    let Some(separator) = separator else {
        return format!("{digits:0>min_width$}");
    };
    let digits: Vec<char> = digits.chars().collect();
    let mut remaining = digits.len() as i64;
    let mut min_width = min_width as i64;
    let group = group as i64;
    let mut pieces: Vec<String> = Vec::new();
    loop {
        let take = group.min(remaining.max(min_width).max(1));
        let zeros = (take - remaining).max(0);
        let chars = remaining.min(take).max(0);
        let from = (remaining - chars) as usize;
        let piece: String = std::iter::repeat_n('0', zeros as usize)
            .chain(digits[from..remaining as usize].iter().copied())
            .collect();
        pieces.push(piece);
        remaining -= chars;
        min_width -= take;
        if remaining <= 0 && min_width <= 0 {
            break;
        }
        min_width -= 1;
    }
    pieces.reverse();
    pieces.join(&separator.to_string())
}

/// Parsed `[[fill]align][sign][z][#][0][width][grouping][.precision][type]`.
#[derive(Debug, Clone, Default)]
struct Spec {
    fill: Option<char>,
    align: Option<char>,
    sign: Option<char>,
    coerce_zero: bool,
    alt: bool,
    zero: bool,
    width: usize,
    grouping: Option<char>,
    precision: Option<usize>,
    kind: Option<char>,
}

fn parse_number(chars: &[char], pos: &mut usize) -> Result<Option<usize>, FormatError> {
    let start = *pos;
    let mut value: usize = 0;
    while let Some(d) = chars.get(*pos).and_then(|c| c.to_digit(10)) {
        value = value.saturating_mul(10).saturating_add(d as usize);
        *pos += 1;
    }
    if *pos == start {
        return Ok(None);
    }
    if value > MAX_WIDTH {
        return Err(value_error("Too many decimal digits in format string"));
    }
    Ok(Some(value))
}

/// `default_kind` is the type letter the object uses when the spec has none
/// (`s` for str, `d` for int); Python validates grouping against it.
fn parse_spec(
    spec: &str,
    type_name: &str,
    default_kind: Option<char>,
) -> Result<Spec, FormatError> {
    let chars: Vec<char> = spec.chars().collect();
    let mut s = Spec::default();
    let mut pos = 0;
    let is_align = |c: Option<&char>| matches!(c, Some('<' | '>' | '=' | '^'));
    if is_align(chars.get(1)) {
        s.fill = chars.first().copied();
        s.align = chars.get(1).copied();
        pos = 2;
    } else if is_align(chars.first()) {
        s.align = chars.first().copied();
        pos = 1;
    }
    if let Some(&c @ ('+' | '-' | ' ')) = chars.get(pos) {
        s.sign = Some(c);
        pos += 1;
    }
    if chars.get(pos) == Some(&'z') {
        s.coerce_zero = true;
        pos += 1;
    }
    if chars.get(pos) == Some(&'#') {
        s.alt = true;
        pos += 1;
    }
    if chars.get(pos) == Some(&'0') {
        s.zero = true;
        pos += 1;
    }
    s.width = parse_number(&chars, &mut pos)?.unwrap_or(0);
    if let Some(&c @ (',' | '_')) = chars.get(pos) {
        s.grouping = Some(c);
        pos += 1;
        if let Some(&other @ (',' | '_')) = chars.get(pos) {
            let _ = other;
            return Err(value_error("Cannot specify both ',' and '_'."));
        }
    }
    if chars.get(pos) == Some(&'.') {
        pos += 1;
        s.precision = Some(
            parse_number(&chars, &mut pos)?
                .ok_or_else(|| value_error("Format specifier missing precision"))?,
        );
    }
    match chars.len() - pos {
        0 => {}
        1 => s.kind = chars.get(pos).copied(),
        _ => {
            return Err(value_error(format!(
                "Invalid format specifier '{spec}' for object of type '{type_name}'"
            )))
        }
    }
    if let (Some(sep), Some(kind)) = (s.grouping, s.kind.or(default_kind)) {
        let allowed = match sep {
            ',' => matches!(kind, 'd' | 'e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%'),
            _ => matches!(
                kind,
                'd' | 'e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%' | 'b' | 'o' | 'x' | 'X'
            ),
        };
        if !allowed {
            return Err(value_error(format!(
                "Cannot specify '{sep}' with '{kind}'."
            )));
        }
    }
    Ok(s)
}

/// Assemble sign, prefix and the digits-with-tail of a number, padded to the
/// spec's width. `int_digits` is the run of integer digits that grouping and
/// zero padding apply to; `tail` is everything after it (`.5e+03`, `%`).
fn pad_number(
    s: &Spec,
    sign: &str,
    prefix: &str,
    int_digits: &str,
    tail: &str,
    group: usize,
) -> String {
    let fill = s.fill.unwrap_or(if s.zero { '0' } else { ' ' });
    let align = s
        .align
        .unwrap_or(if s.zero && s.fill.is_none() { '=' } else { '>' });
    let lead = format!("{sign}{prefix}");
    let zero_fill_inside = fill == '0' && align == '=';
    let min_digits = if zero_fill_inside {
        s.width
            .saturating_sub(lead.chars().count() + tail.chars().count())
    } else {
        0
    };
    // nan and inf have no digits to group, but '0' filling still applies
    let digits = if int_digits.is_empty() {
        "0".repeat(min_digits)
    } else {
        group_digits(int_digits, s.grouping, group, min_digits)
    };
    let body = format!("{digits}{tail}");
    let used = lead.chars().count() + body.chars().count();
    let pad = s.width.saturating_sub(used);
    let fill_text = |n: usize| fill.to_string().repeat(n);
    match align {
        '<' => format!("{lead}{body}{}", fill_text(pad)),
        '^' => format!(
            "{}{lead}{body}{}",
            fill_text(pad / 2),
            fill_text(pad - pad / 2)
        ),
        '=' => format!("{lead}{}{body}", fill_text(pad)),
        _ => format!("{}{lead}{body}", fill_text(pad)),
    }
}

fn sign_text(negative: bool, sign: Option<char>) -> &'static str {
    match (negative, sign) {
        (true, _) => "-",
        (false, Some('+')) => "+",
        (false, Some(' ')) => " ",
        _ => "",
    }
}

/// Split a float body into its leading integer digits and the rest.
fn split_int_digits(body: &str) -> (&str, &str) {
    let end = body
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(body.len());
    body.split_at(end)
}

/// An int to format: its sign and the digits of its magnitude in a base.
trait IntDigits {
    fn negative(&self) -> bool;
    fn digits(&self, radix: u32, upper: bool) -> String;
    /// The value as a character code, where it fits an i64.
    fn code(&self) -> Option<i64>;
}

impl IntDigits for i64 {
    fn negative(&self) -> bool {
        *self < 0
    }
    fn digits(&self, radix: u32, upper: bool) -> String {
        let magnitude = self.unsigned_abs();
        match (radix, upper) {
            (2, _) => format!("{magnitude:b}"),
            (8, _) => format!("{magnitude:o}"),
            (16, false) => format!("{magnitude:x}"),
            (16, true) => format!("{magnitude:X}"),
            _ => magnitude.to_string(),
        }
    }
    fn code(&self) -> Option<i64> {
        Some(*self)
    }
}

impl IntDigits for num_bigint::BigInt {
    fn negative(&self) -> bool {
        self.sign() == num_bigint::Sign::Minus
    }
    fn digits(&self, radix: u32, upper: bool) -> String {
        let digits = self.magnitude().to_str_radix(radix);
        if upper {
            digits.to_uppercase()
        } else {
            digits
        }
    }
    fn code(&self) -> Option<i64> {
        None
    }
}

/// A big int as a float for the float format codes: CPython's OverflowError past the range.
fn big_as_float(n: &num_bigint::BigInt) -> Result<f64, FormatError> {
    num_traits::ToPrimitive::to_f64(n)
        .filter(|f| f.is_finite())
        .ok_or_else(|| FormatError {
            ename: "OverflowError",
            message: "int too large to convert to float".into(),
        })
}

fn format_int(value: &dyn IntDigits, s: &Spec) -> Result<String, FormatError> {
    if s.precision.is_some() {
        return Err(value_error(
            "Precision not allowed in integer format specifier",
        ));
    }
    if s.coerce_zero {
        return Err(value_error(
            "Negative zero coercion (z) not allowed in integer format specifier",
        ));
    }
    let kind = s.kind.unwrap_or('d');
    let (digits, prefix, group) = match kind {
        'd' | 'n' => (value.digits(10, false), "", 3),
        'b' => (value.digits(2, false), "0b", 4),
        'o' => (value.digits(8, false), "0o", 4),
        'x' => (value.digits(16, false), "0x", 4),
        'X' => (value.digits(16, true), "0X", 4),
        'c' => {
            if s.sign.is_some() {
                return Err(value_error(
                    "Sign not allowed with integer format specifier 'c'",
                ));
            }
            if s.alt {
                return Err(value_error(
                    "Alternate form (#) not allowed with integer format specifier 'c'",
                ));
            }
            let c = value
                .code()
                .and_then(|i| u32::try_from(i).ok())
                .and_then(char::from_u32)
                .ok_or_else(|| FormatError {
                    ename: "OverflowError",
                    message: "%c arg not in range(0x110000)".into(),
                })?;
            // a character still pads like a number (right-aligned, '=' allowed)
            return Ok(pad_number(s, "", "", "", &c.to_string(), 3));
        }
        other => {
            return Err(value_error(format!(
                "Unknown format code '{other}' for object of type 'int'"
            )))
        }
    };
    let prefix = if s.alt { prefix } else { "" };
    Ok(pad_number(
        s,
        sign_text(value.negative(), s.sign),
        prefix,
        &digits,
        "",
        group,
    ))
}

fn format_float(value: f64, s: &Spec, type_name: &str) -> Result<String, FormatError> {
    let kind = s.kind;
    let (style, upper, percent) = match kind {
        None => (FloatStyle::Repr, false, false),
        Some('f') => (FloatStyle::Fixed, false, false),
        Some('F') => (FloatStyle::Fixed, true, false),
        Some('e') => (FloatStyle::Exp, false, false),
        Some('E') => (FloatStyle::Exp, true, false),
        Some('g' | 'n') => (FloatStyle::General, false, false),
        Some('G') => (FloatStyle::General, true, false),
        Some('%') => (FloatStyle::Fixed, false, true),
        Some(other) => {
            return Err(value_error(format!(
                "Unknown format code '{other}' for object of type '{type_name}'"
            )))
        }
    };
    let value = if percent { value * 100.0 } else { value };
    let mut body = float_body(value, style, s.precision, s.alt);
    if upper {
        body = body.to_uppercase();
    }
    let mut negative = value.is_sign_negative() && !value.is_nan();
    if s.coerce_zero
        && negative
        && body
            .chars()
            .all(|c| matches!(c, '0' | '.' | 'e' | 'E' | '+' | '-'))
    {
        negative = false;
    }
    if percent {
        body.push('%');
    }
    let (int_digits, tail) = split_int_digits(&body);
    Ok(pad_number(
        s,
        sign_text(negative, s.sign),
        "",
        int_digits,
        tail,
        3,
    ))
}

fn format_str(text: &str, s: &Spec) -> Result<String, FormatError> {
    if let Some(kind) = s.kind.filter(|&k| k != 's') {
        return Err(value_error(format!(
            "Unknown format code '{kind}' for object of type 'str'"
        )));
    }
    match s.sign {
        Some(' ') => return Err(value_error("Space not allowed in string format specifier")),
        Some(_) => return Err(value_error("Sign not allowed in string format specifier")),
        None => {}
    }
    if s.coerce_zero {
        return Err(value_error(
            "Negative zero coercion (z) not allowed in string format specifier",
        ));
    }
    if s.alt {
        return Err(value_error(
            "Alternate form (#) not allowed in string format specifier",
        ));
    }
    if s.align == Some('=') {
        return Err(value_error(
            "'=' alignment not allowed in string format specifier",
        ));
    }
    if let Some(sep) = s.grouping {
        return Err(value_error(format!("Cannot specify '{sep}' with 's'.")));
    }
    let text: String = match s.precision {
        Some(p) => text.chars().take(p).collect(),
        None => text.to_string(),
    };
    let fill = s.fill.unwrap_or(if s.zero { '0' } else { ' ' });
    let pad = s.width.saturating_sub(text.chars().count());
    let fill_text = |n: usize| fill.to_string().repeat(n);
    Ok(match s.align.unwrap_or('<') {
        '>' => format!("{}{text}", fill_text(pad)),
        '^' => format!("{}{text}{}", fill_text(pad / 2), fill_text(pad - pad / 2)),
        _ => format!("{text}{}", fill_text(pad)),
    })
}

/// Python's `format(value, spec)`: the format-spec mini-language for ints,
/// floats, strings and bools (`f"{x:>10.3f}"`, `"{:,}".format(n)`).
pub fn format_spec(value: FmtValue, spec: &str) -> Result<String, FormatError> {
    let type_name = value.type_name().to_string();
    if spec.is_empty() {
        return Ok(value.to_str());
    }
    let default_kind = match value {
        FmtValue::Str(_) => Some('s'),
        FmtValue::Int(_) | FmtValue::BigInt(_) | FmtValue::Bool(_) => Some('d'),
        _ => None,
    };
    let s = parse_spec(spec, &type_name, default_kind)?;
    match value {
        FmtValue::Int(i) => format_number_from_int(i, &s, &type_name),
        FmtValue::BigInt(n) => match s.kind {
            Some('e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%') => {
                format_float(big_as_float(n)?, &s, &type_name)
            }
            None | Some('d' | 'n' | 'b' | 'o' | 'x' | 'X' | 'c') => format_int(n, &s),
            Some(other) => Err(value_error(format!(
                "Unknown format code '{other}' for object of type '{type_name}'"
            ))),
        },
        // bool formats as an int once there is a spec (format(True, '>5') == '    1')
        FmtValue::Bool(b) => format_number_from_int(i64::from(b), &s, &type_name),
        FmtValue::Float(x) => format_float(x, &s, &type_name),
        FmtValue::Str(text) => format_str(text, &s),
        FmtValue::Obj { type_name, .. } => Err(type_error(format!(
            "unsupported format string passed to {type_name}.__format__"
        ))),
    }
}

fn format_number_from_int(i: i64, s: &Spec, type_name: &str) -> Result<String, FormatError> {
    match s.kind {
        Some('e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%') => format_float(i as f64, s, type_name),
        None | Some('d' | 'n' | 'b' | 'o' | 'x' | 'X' | 'c') => format_int(&i, s),
        Some(other) => Err(value_error(format!(
            "Unknown format code '{other}' for object of type '{type_name}'"
        ))),
    }
}

// ---------------------------------------------------------------------------
// printf-style % formatting
// ---------------------------------------------------------------------------

#[derive(Debug, Default)]
struct PercentFlags {
    left: bool,
    plus: bool,
    space: bool,
    zero: bool,
    alt: bool,
}

/// Pad a converted number or string to `width` the way `%` does: `-` left
/// justifies, `0` zero-fills after the sign and prefix (numbers only).
fn percent_pad(
    flags: &PercentFlags,
    width: usize,
    lead: &str,
    body: &str,
    numeric: bool,
) -> String {
    let len = lead.chars().count() + body.chars().count();
    let pad = width.saturating_sub(len);
    if flags.left {
        format!("{lead}{body}{}", " ".repeat(pad))
    } else if flags.zero && numeric {
        format!("{lead}{}{body}", "0".repeat(pad))
    } else {
        format!("{}{lead}{body}", " ".repeat(pad))
    }
}

fn percent_sign(negative: bool, flags: &PercentFlags) -> &'static str {
    if negative {
        "-"
    } else if flags.plus {
        "+"
    } else if flags.space {
        " "
    } else {
        ""
    }
}

/// The integer a `%d`/`%x` conversion takes from `value`, as its sign and
/// magnitude digits in the conversion's base (floats beyond i64 stay exact).
fn percent_int(value: &FmtValue, conversion: char) -> Result<(bool, String), FormatError> {
    let in_base = |i: i64| {
        let magnitude = i.unsigned_abs();
        let digits = match conversion {
            'x' => format!("{magnitude:x}"),
            'X' => format!("{magnitude:X}"),
            'o' => format!("{magnitude:o}"),
            _ => magnitude.to_string(),
        };
        (i < 0, digits)
    };
    match value {
        FmtValue::Int(i) => Ok(in_base(*i)),
        FmtValue::BigInt(n) => {
            let (radix, upper) = match conversion {
                'x' => (16, false),
                'X' => (16, true),
                'o' => (8, false),
                _ => (10, false),
            };
            Ok((n.negative(), n.digits(radix, upper)))
        }
        FmtValue::Bool(b) => Ok(in_base(i64::from(*b))),
        FmtValue::Float(x) if matches!(conversion, 'd' | 'i' | 'u') => {
            if x.is_nan() {
                Err(value_error("cannot convert float NaN to integer"))
            } else if x.is_infinite() {
                Err(FormatError {
                    ename: "OverflowError",
                    message: "cannot convert float infinity to integer".into(),
                })
            } else {
                let truncated = x.trunc();
                let negative = truncated < 0.0;
                Ok((negative, format!("{:.0}", truncated.abs())))
            }
        }
        other if matches!(conversion, 'd' | 'i' | 'u') => Err(type_error(format!(
            "%{conversion} format: a real number is required, not {}",
            other.type_name()
        ))),
        other => Err(type_error(format!(
            "%{conversion} format: an integer is required, not {}",
            other.type_name()
        ))),
    }
}

fn percent_float(value: &FmtValue) -> Result<f64, FormatError> {
    match value {
        FmtValue::Int(i) => Ok(*i as f64),
        FmtValue::BigInt(n) => big_as_float(n),
        FmtValue::Bool(b) => Ok(f64::from(u8::from(*b))),
        FmtValue::Float(x) => Ok(*x),
        other => Err(type_error(format!(
            "must be real number, not {}",
            other.type_name()
        ))),
    }
}

fn convert_percent(
    conversion: char,
    value: &FmtValue,
    flags: &PercentFlags,
    width: usize,
    precision: Option<usize>,
) -> Result<String, FormatError> {
    match conversion {
        'd' | 'i' | 'u' | 'x' | 'X' | 'o' => {
            let (negative, digits) = percent_int(value, conversion)?;
            let prefix = match conversion {
                'x' => "0x",
                'X' => "0X",
                'o' => "0o",
                _ => "",
            };
            let digits = format!("{digits:0>width$}", width = precision.unwrap_or(0));
            let prefix = if flags.alt { prefix } else { "" };
            let lead = format!("{}{prefix}", percent_sign(negative, flags));
            Ok(percent_pad(flags, width, &lead, &digits, true))
        }
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' => {
            let x = percent_float(value)?;
            let style = match conversion.to_ascii_lowercase() {
                'e' => FloatStyle::Exp,
                'f' => FloatStyle::Fixed,
                _ => FloatStyle::General,
            };
            let mut body = float_body(x, style, Some(precision.unwrap_or(6)), flags.alt);
            if conversion.is_ascii_uppercase() {
                body = body.to_uppercase();
            }
            let lead = percent_sign(x.is_sign_negative() && !x.is_nan(), flags);
            Ok(percent_pad(flags, width, lead, &body, true))
        }
        'c' => {
            let code = match value {
                FmtValue::Int(i) => Some(*i),
                FmtValue::Bool(b) => Some(i64::from(*b)),
                _ => None,
            };
            let c = match (value, code) {
                (_, Some(i)) => {
                    u32::try_from(i)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| FormatError {
                            ename: "OverflowError",
                            message: "%c arg not in range(0x110000)".into(),
                        })?
                }
                (FmtValue::Str(s), None) if s.chars().count() == 1 => {
                    s.chars().next().unwrap_or(' ')
                }
                _ => return Err(type_error("%c requires int or char")),
            };
            Ok(percent_pad(flags, width, "", &c.to_string(), false))
        }
        's' | 'r' | 'a' => {
            let text = if conversion == 's' {
                value.to_str()
            } else {
                value.to_repr()
            };
            let text: String = match precision {
                Some(p) => text.chars().take(p).collect(),
                None => text,
            };
            Ok(percent_pad(flags, width, "", &text, false))
        }
        _ => unsupported_conversion(conversion),
    }
}

fn unsupported_conversion(conversion: char) -> Result<String, FormatError> {
    Err(value_error(format!(
        "unsupported format character '{conversion}'"
    )))
}

/// Python's `fmt % args` for a tuple of arguments (a single non-tuple right
/// side is passed as a one-element slice).
pub fn percent_format(fmt: &str, args: &[FmtValue]) -> Result<String, FormatError> {
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = String::with_capacity(fmt.len());
    let mut next_arg = args.iter();
    let mut take_arg = || {
        next_arg
            .next()
            .ok_or_else(|| type_error("not enough arguments for format string"))
    };
    let mut pos = 0;
    while let Some(&c) = chars.get(pos) {
        pos += 1;
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.get(pos) == Some(&'(') {
            return Err(type_error("format requires a mapping"));
        }
        let mut flags = PercentFlags::default();
        while let Some(&flag) = chars.get(pos) {
            match flag {
                '-' => flags.left = true,
                '+' => flags.plus = true,
                ' ' => flags.space = true,
                '0' => flags.zero = true,
                '#' => flags.alt = true,
                _ => break,
            }
            pos += 1;
        }
        let mut width = 0;
        if chars.get(pos) == Some(&'*') {
            pos += 1;
            match take_arg()? {
                FmtValue::Int(w) => {
                    if *w < 0 {
                        flags.left = true;
                    }
                    width = usize::try_from(w.unsigned_abs()).unwrap_or(usize::MAX);
                }
                _ => return Err(type_error("* wants int")),
            }
        } else if let Some(w) = parse_number(&chars, &mut pos)? {
            width = w;
        }
        if width > MAX_WIDTH {
            return Err(value_error("width too big"));
        }
        let mut precision = None;
        if chars.get(pos) == Some(&'.') {
            pos += 1;
            if chars.get(pos) == Some(&'*') {
                pos += 1;
                match take_arg()? {
                    FmtValue::Int(p) => precision = Some(usize::try_from(*p).unwrap_or(0)),
                    _ => return Err(type_error("* wants int")),
                }
            } else {
                precision = Some(parse_number(&chars, &mut pos)?.unwrap_or(0));
            }
        }
        if precision.is_some_and(|p| p > MAX_WIDTH) {
            return Err(value_error("precision too big"));
        }
        while matches!(chars.get(pos), Some('h' | 'l' | 'L')) {
            pos += 1;
        }
        let Some(&conversion) = chars.get(pos) else {
            return Err(value_error("incomplete format"));
        };
        pos += 1;
        if conversion == '%' {
            out.push('%');
            continue;
        }
        if !"diuxXoeEfFgGcsra".contains(conversion) {
            return Err(value_error(format!(
                "unsupported format character '{conversion}' ({:#x}) at index {}",
                conversion as u32,
                pos - 1
            )));
        }
        let value = take_arg()?;
        out.push_str(&convert_percent(
            conversion, value, &flags, width, precision,
        )?);
    }
    if next_arg.next().is_some() {
        return Err(type_error(
            "not all arguments converted during string formatting",
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: FmtValue, s: &str) -> String {
        format_spec(value, s).unwrap_or_else(|e| format!("error: {e}"))
    }

    fn pct(fmt: &str, args: &[FmtValue]) -> String {
        percent_format(fmt, args).unwrap_or_else(|e| format!("{}: {e}", e.ename))
    }

    #[test]
    fn chapter_training_log_line() {
        assert_eq!(
            pct(
                "Epoch %d: loss %.3f, in %.1f sec",
                &[
                    FmtValue::Int(0),
                    FmtValue::Float(0.5214),
                    FmtValue::Float(3.21)
                ]
            ),
            "Epoch 0: loss 0.521, in 3.2 sec"
        );
    }

    #[test]
    fn floats_round_like_c() {
        assert_eq!(pct("%.3f", &[FmtValue::Float(2.0005)]), "2.001");
        assert_eq!(pct("%.2f", &[FmtValue::Float(0.125)]), "0.12");
        assert_eq!(pct("%g", &[FmtValue::Float(1e-5)]), "1e-05");
        assert_eq!(pct("%.2e", &[FmtValue::Float(12345.678)]), "1.23e+04");
        assert_eq!(spec(FmtValue::Float(1e16), ""), "1e+16");
        assert_eq!(FmtValue::Float(0.1 + 0.2).to_str(), "0.30000000000000004");
        assert_eq!(
            pct("%s", &[FmtValue::Float(0.1 + 0.2)]),
            "0.30000000000000004"
        );
    }

    #[test]
    fn spec_for_floats() {
        assert_eq!(spec(FmtValue::Float(123.0), ".3"), "1.23e+02");
        assert_eq!(spec(FmtValue::Float(1.0), ".3"), "1.0");
        assert_eq!(spec(FmtValue::Float(0.0), ".3"), "0.0");
        assert_eq!(spec(FmtValue::Float(123.0), ".3g"), "123");
        assert_eq!(spec(FmtValue::Float(123.0), "#.3g"), "123.");
        assert_eq!(spec(FmtValue::Float(1e-5), ""), "1e-05");
        assert_eq!(spec(FmtValue::Float(12345.678), "_"), "12_345.678");
        assert_eq!(spec(FmtValue::Float(-1234.5), "012,.1f"), "-0,001,234.5");
        assert_eq!(spec(FmtValue::Float(f64::INFINITY), "010"), "0000000inf");
        assert_eq!(spec(FmtValue::Float(-0.0001), "z.2f"), "0.00");
        assert_eq!(spec(FmtValue::Float(0.5), ".1%"), "50.0%");
        assert_eq!(spec(FmtValue::Float(3.14659), "*^12.2f"), "****3.15****");
        assert_eq!(spec(FmtValue::Float(2.5), "+E"), "+2.500000E+00");
        assert_eq!(spec(FmtValue::Float(f64::NAN), "F"), "NAN");
        assert_eq!(spec(FmtValue::Float(1.5), "n"), "1.5");
    }

    #[test]
    fn spec_for_ints_bools_and_strings() {
        assert_eq!(spec(FmtValue::Int(1234), "08,"), "0,001,234");
        assert_eq!(spec(FmtValue::Int(1_234_567), ","), "1,234,567");
        assert_eq!(spec(FmtValue::Int(255), "#x"), "0xff");
        assert_eq!(spec(FmtValue::Int(255), "#010b"), "0b11111111");
        assert_eq!(spec(FmtValue::Int(65535), "_X"), "FFFF");
        assert_eq!(spec(FmtValue::Int(-42), "=+8"), "-     42");
        assert_eq!(spec(FmtValue::Int(5), ".2f"), "5.00");
        assert_eq!(spec(FmtValue::Int(65), "c"), "A");
        assert_eq!(spec(FmtValue::Bool(true), ""), "True");
        assert_eq!(spec(FmtValue::Bool(true), ">5"), "    1");
        assert_eq!(spec(FmtValue::Str("ab"), "05"), "ab000");
        assert_eq!(spec(FmtValue::Str("ab"), "^6"), "  ab  ");
        assert_eq!(spec(FmtValue::Str("abcdef"), ".3"), "abc");
    }

    #[test]
    fn spec_errors_read_like_python() {
        assert_eq!(
            spec(FmtValue::Float(1.5), "d"),
            "error: Unknown format code 'd' for object of type 'float'"
        );
        assert_eq!(
            spec(FmtValue::Str("a"), "+"),
            "error: Sign not allowed in string format specifier"
        );
        assert_eq!(
            spec(FmtValue::Int(1), ".2"),
            "error: Precision not allowed in integer format specifier"
        );
        assert_eq!(
            spec(FmtValue::Int(1), ",x"),
            "error: Cannot specify ',' with 'x'."
        );
        assert_eq!(
            spec(FmtValue::Float(1.5), ".2fx"),
            "error: Invalid format specifier '.2fx' for object of type 'float'"
        );
        assert_eq!(
            spec(FmtValue::Str("a"), "=5"),
            "error: '=' alignment not allowed in string format specifier"
        );
        assert_eq!(
            spec(FmtValue::Int(1), ",_"),
            "error: Cannot specify both ',' and '_'."
        );
        assert_eq!(
            spec(FmtValue::Float(1.5), "."),
            "error: Format specifier missing precision"
        );
        let err = format_spec(FmtValue::Int(-1), "c").err();
        assert_eq!(err.map(|e| e.ename), Some("OverflowError"));
    }

    #[test]
    fn percent_conversions() {
        assert_eq!(pct("%08.3d", &[FmtValue::Int(5)]), "00000005");
        assert_eq!(pct("%-08.3d|", &[FmtValue::Int(-5)]), "-005    |");
        assert_eq!(
            pct(
                "%#o %#x %X",
                &[FmtValue::Int(8), FmtValue::Int(255), FmtValue::Int(255)]
            ),
            "0o10 0xff FF"
        );
        assert_eq!(
            pct(
                "%.0e %#.0e",
                &[FmtValue::Float(12345.0), FmtValue::Float(12345.0)]
            ),
            "1e+04 1.e+04"
        );
        assert_eq!(pct("%#.0f", &[FmtValue::Float(2.5)]), "2.");
        assert_eq!(
            pct("%5s|%.1s", &[FmtValue::Str("ab"), FmtValue::Str("ab")]),
            "   ab|a"
        );
        assert_eq!(pct("%05s", &[FmtValue::Str("ab")]), "   ab");
        assert_eq!(pct("%c%c", &[FmtValue::Int(65), FmtValue::Str("b")]), "Ab");
        assert_eq!(pct("%r", &[FmtValue::Str("it's")]), "\"it's\"");
        assert_eq!(pct("%x", &[FmtValue::Bool(true)]), "1");
        assert_eq!(pct("%d%%", &[FmtValue::Float(99.9)]), "99%");
        assert_eq!(
            pct(
                "%*d|%-*d|",
                &[
                    FmtValue::Int(4),
                    FmtValue::Int(7),
                    FmtValue::Int(3),
                    FmtValue::Int(1)
                ]
            ),
            "   7|1  |"
        );
        assert_eq!(
            pct("%+.2f % d", &[FmtValue::Float(1.0), FmtValue::Int(3)]),
            "+1.00  3"
        );
        let obj = FmtValue::Obj {
            type_name: "Device".into(),
            str: "gpu(0)".into(),
            repr: "gpu(0)".into(),
        };
        assert_eq!(pct("on %s", &[obj]), "on gpu(0)");
    }

    #[test]
    fn percent_errors_read_like_python() {
        assert_eq!(
            pct("%d", &[FmtValue::Str("a")]),
            "TypeError: %d format: a real number is required, not str"
        );
        assert_eq!(
            pct("%f", &[FmtValue::Str("a")]),
            "TypeError: must be real number, not str"
        );
        assert_eq!(
            pct("%x", &[FmtValue::Float(1.5)]),
            "TypeError: %x format: an integer is required, not float"
        );
        assert_eq!(
            pct("%c", &[FmtValue::Str("ab")]),
            "TypeError: %c requires int or char"
        );
        assert_eq!(
            pct("%d %d", &[FmtValue::Int(1)]),
            "TypeError: not enough arguments for format string"
        );
        assert_eq!(
            pct("%d", &[FmtValue::Int(1), FmtValue::Int(2)]),
            "TypeError: not all arguments converted during string formatting"
        );
        assert_eq!(pct("%", &[]), "ValueError: incomplete format");
        assert_eq!(
            pct("%z", &[FmtValue::Int(1)]),
            "ValueError: unsupported format character 'z' (0x7a) at index 1"
        );
        assert_eq!(
            pct("%d", &[FmtValue::Float(f64::NAN)]),
            "ValueError: cannot convert float NaN to integer"
        );
        assert_eq!(
            pct("%*d", &[FmtValue::Str("a"), FmtValue::Int(1)]),
            "TypeError: * wants int"
        );
        assert_eq!(
            pct("%(a)s", &[FmtValue::Int(1)]),
            "TypeError: format requires a mapping"
        );
    }

    #[test]
    fn string_repr_picks_quotes_and_escapes() {
        assert_eq!(py_str_repr("abc"), "'abc'");
        assert_eq!(py_str_repr("it's"), "\"it's\"");
        assert_eq!(py_str_repr("a'b\"c\n"), "'a\\'b\"c\\n'");
        assert_eq!(py_str_repr("\u{1}é"), "'\\x01é'");
    }
}
