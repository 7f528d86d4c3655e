//! `_struct`: packing values into bytes and back by a format string (`<hf?3s`), as CPython
//! 3.11's C module does: byte orders `@ = < > !` (native `@` aligns each item to its size),
//! the codes `x c b B ? h H i I l L q Q n N e f d s p P`, counts, and CPython's `struct.error`
//! messages. The public `struct` module (`library/struct.da`) adds the `Struct` class.

use std::rc::Rc;

use super::{module, set_fns};
use crate::modules::python::bytes::{self, Bytes};
use crate::object::class::Class;
use crate::object::value::Module;
use crate::object::{Args, Exc, ExcKind, Interpreter, Value};

pub fn build() -> Rc<Module> {
    let m = module(
        "_struct",
        "pack values into bytes and back by a format string",
    );
    m.set("error", Value::Class(error_class()));
    set_fns(
        &m,
        &[
            (
                "pack",
                "pack(format, v1, v2, ...): the values packed into bytes.",
                pack,
            ),
            (
                "unpack",
                "unpack(format, buffer): the tuple of values in buffer (exactly calcsize(format) bytes).",
                |it, mut a| {
                    let fmt = Format::parse(&a.required(0, "format")?)?;
                    let data = buffer(&a.required(1, "buffer")?)?;
                    a.finish(2)?;
                    if data.len() != fmt.size {
                        return Err(error(it, format!("unpack requires a buffer of {} bytes", fmt.size)));
                    }
                    fmt.unpack(it, &data)
                },
            ),
            (
                "unpack_from",
                "unpack_from(format, buffer, offset=0): the values at offset in buffer.",
                |it, mut a| {
                    let fmt = Format::parse(&a.required(0, "format")?)?;
                    let data = buffer(&a.required(1, "buffer")?)?;
                    let offset = a.take(2, "offset")?.map_or(Ok(0), |v| super::int(&v))?;
                    a.finish(3)?;
                    let len = data.len() as i64;
                    let start = if offset < 0 { len + offset } else { offset };
                    if start < 0 || start + fmt.size as i64 > len {
                        let msg = if offset < 0 && start < 0 {
                            format!("offset {offset} out of range for {len}-byte buffer")
                        } else {
                            format!(
                                "unpack_from requires a buffer of at least {} bytes for unpacking {} bytes at offset {offset} (actual buffer size is {len})",
                                fmt.size as i64 + offset,
                                fmt.size
                            )
                        };
                        return Err(error(it, msg));
                    }
                    let start = start as usize;
                    fmt.unpack(it, &data[start..start + fmt.size])
                },
            ),
            (
                "iter_unpack",
                "iter_unpack(format, buffer): the tuples of values, one per calcsize(format) bytes.",
                |it, mut a| {
                    let fmt = Format::parse(&a.required(0, "format")?)?;
                    let data = buffer(&a.required(1, "buffer")?)?;
                    a.finish(2)?;
                    if fmt.size == 0 {
                        return Err(error(it, "cannot iteratively unpack with a struct of length 0".into()));
                    }
                    if data.len() % fmt.size != 0 {
                        return Err(error(
                            it,
                            format!("iterative unpacking requires a buffer of a multiple of {} bytes", fmt.size),
                        ));
                    }
                    let mut out = Vec::new();
                    for chunk in data.chunks(fmt.size) {
                        out.push(fmt.unpack(it, chunk)?);
                    }
                    super::iter_of(it, &Value::list(out))
                },
            ),
            ("calcsize", "calcsize(format): the number of bytes the format packs.", |_, mut a| {
                let fmt = Format::parse(&a.required(0, "format")?)?;
                a.finish(1)?;
                Ok(Value::Int(fmt.size as i64))
            }),
        ],
    );
    m
}

thread_local! {
    static ERROR: Rc<Class> = super::exc_class("error", "struct", ExcKind::Exception);
}

fn error_class() -> Rc<Class> {
    ERROR.with(|c| c.clone())
}

fn error(_it: &mut dyn Interpreter, msg: String) -> Exc {
    super::raise(&error_class(), msg)
}

fn buffer(v: &Value) -> Result<Vec<u8>, Exc> {
    bytes::of(v).map(|b| b.to_vec()).ok_or_else(|| {
        Exc::type_error(format!(
            "a bytes-like object is required, not '{}'",
            v.type_name()
        ))
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Order {
    Native,
    Little,
    Big,
}

/// One item of a format: its code, count (for `s`/`p`, the byte length) and offset.
struct Item {
    code: char,
    count: usize,
    offset: usize,
}

struct Format {
    order: Order,
    items: Vec<Item>,
    size: usize,
}

impl Format {
    fn parse(v: &Value) -> Result<Format, Exc> {
        let text: String = match v {
            Value::Str(s) => s.to_string(),
            other => match bytes::of(other) {
                Some(b) => String::from_utf8_lossy(&b).into_owned(),
                None => {
                    return Err(Exc::type_error(format!(
                        "Struct() argument 1 must be a str or bytes object, not {}",
                        other.type_name()
                    )))
                }
            },
        };
        let mut chars = text.chars().peekable();
        let (order, native_align) = match chars.peek() {
            Some('@') => (Order::Native, true),
            Some('=') => (Order::Native, false),
            Some('<') => (Order::Little, false),
            Some('>') | Some('!') => (Order::Big, false),
            _ => (Order::Native, true),
        };
        if matches!(chars.peek(), Some('@' | '=' | '<' | '>' | '!')) {
            chars.next();
        }
        let mut items = Vec::new();
        let mut offset = 0usize;
        while let Some(c) = chars.next() {
            if c.is_whitespace() {
                continue;
            }
            let mut count = None;
            let mut code = c;
            if c.is_ascii_digit() {
                let mut n = c.to_digit(10).unwrap_or(0) as usize;
                loop {
                    match chars.next() {
                        Some(d) if d.is_ascii_digit() => {
                            n = n
                                .checked_mul(10)
                                .and_then(|n| n.checked_add(d.to_digit(10).unwrap_or(0) as usize))
                                .ok_or_else(|| struct_error("total struct size too long"))?;
                        }
                        Some(d) => {
                            code = d;
                            break;
                        }
                        None => {
                            return Err(struct_error("repeat count given without format specifier"))
                        }
                    }
                }
                count = Some(n);
            }
            let size = item_size(code, native_align)
                .ok_or_else(|| struct_error("bad char in struct format"))?;
            if native_align && size > 1 && !matches!(code, 's' | 'p' | 'x' | 'c') {
                offset = offset.div_ceil(size) * size;
            }
            match code {
                's' | 'p' => {
                    let n = count.unwrap_or(1);
                    items.push(Item {
                        code,
                        count: n,
                        offset,
                    });
                    offset += n;
                }
                _ => {
                    for _ in 0..count.unwrap_or(1) {
                        if code != 'x' {
                            items.push(Item {
                                code,
                                count: 1,
                                offset,
                            });
                        }
                        offset += size;
                    }
                }
            }
        }
        Ok(Format {
            order,
            items,
            size: offset,
        })
    }

    fn unpack(&self, it: &mut dyn Interpreter, data: &[u8]) -> Result<Value, Exc> {
        let mut out = Vec::with_capacity(self.items.len());
        for item in &self.items {
            let at = item.offset;
            let raw = |n: usize| -> u64 {
                let b = &data[at..at + n];
                let mut v = 0u64;
                match self.order {
                    Order::Big => {
                        for x in b {
                            v = (v << 8) | *x as u64;
                        }
                    }
                    _ => {
                        for x in b.iter().rev() {
                            v = (v << 8) | *x as u64;
                        }
                    }
                }
                v
            };
            let signed = |n: usize| -> i64 {
                let v = raw(n);
                let shift = 64 - 8 * n as u32;
                ((v << shift) as i64) >> shift
            };
            let size = item_size(item.code, self.order == Order::Native).unwrap_or(1);
            out.push(match item.code {
                'c' => Bytes::value(vec![data[at]]),
                '?' => Value::Bool(data[at] != 0),
                'b' | 'h' | 'i' | 'l' | 'q' | 'n' => Value::Int(signed(size)),
                'B' | 'H' | 'I' | 'L' | 'Q' | 'N' | 'P' => {
                    crate::object::bigint::int_value(raw(size).into())
                }
                'e' => Value::Float(half_to_f64(raw(2) as u16)),
                'f' => Value::Float(f32::from_bits(raw(4) as u32) as f64),
                'd' => Value::Float(f64::from_bits(raw(8))),
                's' => Bytes::value(data[at..at + item.count].to_vec()),
                'p' => {
                    let n = item.count;
                    if n == 0 {
                        Bytes::value(Vec::new())
                    } else {
                        let len = (data[at] as usize).min(n - 1);
                        Bytes::value(data[at + 1..at + 1 + len].to_vec())
                    }
                }
                _ => Value::None,
            });
        }
        let _ = it;
        Ok(Value::tuple(out))
    }
}

fn struct_error(msg: &str) -> Exc {
    super::raise(&error_class(), msg.to_string())
}

/// The size of a code's item (`l`/`L` are 8 bytes natively, 4 in the standard sizes).
fn item_size(code: char, native: bool) -> Option<usize> {
    Some(match code {
        'x' | 'c' | 'b' | 'B' | '?' | 's' | 'p' => 1,
        'h' | 'H' | 'e' => 2,
        'i' | 'I' | 'f' => 4,
        'l' | 'L' => {
            if native {
                8
            } else {
                4
            }
        }
        'q' | 'Q' | 'd' => 8,
        'n' | 'N' | 'P' if native => 8,
        _ => return None,
    })
}

fn pack(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let fmt = Format::parse(&a.required(0, "format")?)?;
    a.finish(usize::MAX)?;
    let values: Vec<Value> = a.pos.iter().skip(1).cloned().collect();
    if values.len() != fmt.items.len() {
        return Err(error(
            it,
            format!(
                "pack expected {} items for packing (got {})",
                fmt.items.len(),
                values.len()
            ),
        ));
    }
    let mut out = vec![0u8; fmt.size];
    for (item, v) in fmt.items.iter().zip(values.iter()) {
        let at = item.offset;
        let size = item_size(item.code, fmt.order == Order::Native).unwrap_or(1);
        let mut put = |bits: u64, n: usize| {
            for k in 0..n {
                let byte = (bits >> (8 * k)) as u8;
                let i = match fmt.order {
                    Order::Big => at + n - 1 - k,
                    _ => at + k,
                };
                out[i] = byte;
            }
        };
        match item.code {
            'c' => match bytes::of(v) {
                Some(b) if b.len() == 1 => put(b[0] as u64, 1),
                _ => {
                    return Err(struct_error(
                        "char format requires a bytes object of length 1",
                    ))
                }
            },
            '?' => {
                let t = crate::object::class::truthy(it, v)?;
                put(t as u64, 1);
            }
            'b' | 'h' | 'i' | 'l' | 'q' | 'n' => {
                let x = integer(v)?;
                let (lo, hi) = match size {
                    1 => (i8::MIN as i64, i8::MAX as i64),
                    2 => (i16::MIN as i64, i16::MAX as i64),
                    4 => (i32::MIN as i64, i32::MAX as i64),
                    _ => (i64::MIN, i64::MAX),
                };
                if x < lo as i128 || x > hi as i128 {
                    // Past a C long long: CPython's conversion error.
                    if size == 8 {
                        return Err(struct_error("argument out of range"));
                    }
                    return Err(struct_error(&match item.code {
                        'b' => format!("byte format requires {lo} <= number <= {hi}"),
                        'h' => format!("short format requires {lo} <= number <= {hi}"),
                        c => format!("'{c}' format requires {lo} <= number <= {hi}"),
                    }));
                }
                put(x as u64, size);
            }
            'B' | 'H' | 'I' | 'L' | 'Q' | 'N' | 'P' => {
                let x = integer(v)?;
                let hi: u64 = if size == 8 {
                    u64::MAX
                } else {
                    (1u64 << (8 * size)) - 1
                };
                if x < 0 {
                    return Err(struct_error(&match item.code {
                        'B' => format!("ubyte format requires 0 <= number <= {hi}"),
                        'H' => format!("ushort format requires 0 <= number <= {hi}"),
                        'Q' | 'N' | 'P' => "argument out of range".to_string(),
                        c => format!("'{c}' format requires 0 <= number <= {hi}"),
                    }));
                }
                if x > hi as i128 {
                    return Err(struct_error(&match item.code {
                        _ if size == 8 => "argument out of range".to_string(),
                        'B' => format!("ubyte format requires 0 <= number <= {hi}"),
                        'H' => format!("ushort format requires 0 <= number <= {hi}"),
                        c => format!("'{c}' format requires 0 <= number <= {hi}"),
                    }));
                }
                put(x as u64, size);
            }
            'e' | 'f' | 'd' => {
                let x = match v {
                    Value::Float(f) => *f,
                    Value::Int(i) => *i as f64,
                    Value::Bool(b) => *b as i64 as f64,
                    _ => return Err(struct_error("required argument is not a float")),
                };
                match item.code {
                    'd' => put(x.to_bits(), 8),
                    'f' => {
                        let y = x as f32;
                        if y.is_infinite() && x.is_finite() {
                            return Err(Exc::new(
                                ExcKind::OverflowError,
                                "float too large to pack with f format",
                            ));
                        }
                        put(y.to_bits() as u64, 4)
                    }
                    _ => {
                        let h = f64_to_half(x).ok_or_else(|| {
                            Exc::new(
                                ExcKind::OverflowError,
                                "float too large to pack with e format",
                            )
                        })?;
                        put(h as u64, 2)
                    }
                }
            }
            's' | 'p' => {
                let Some(b) = bytes::of(v).map(|b| b.to_vec()) else {
                    return Err(struct_error(&format!(
                        "argument for '{}' must be a bytes object",
                        item.code
                    )));
                };
                if item.code == 's' {
                    let n = b.len().min(item.count);
                    out[at..at + n].copy_from_slice(&b[..n]);
                } else if item.count > 0 {
                    let n = b.len().min(item.count - 1).min(255);
                    out[at] = n as u8;
                    out[at + 1..at + 1 + n].copy_from_slice(&b[..n]);
                }
            }
            _ => {}
        }
    }
    Ok(Bytes::value(out))
}

/// An int to pack, widened so every C type's range check can be made; one past i128 reads as
/// i128's end of its sign (out of every range).
fn integer(v: &Value) -> Result<i128, Exc> {
    match v {
        Value::Int(i) => Ok(*i as i128),
        Value::Bool(b) => Ok(*b as i128),
        Value::BigInt(n) => Ok(num_traits::ToPrimitive::to_i128(&**n).unwrap_or(
            if n.sign() == num_bigint::Sign::Minus {
                i128::MIN
            } else {
                i128::MAX
            },
        )),
        _ => Err(struct_error("required argument is not an integer")),
    }
}

/// IEEE 754 half precision to double.
fn half_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let frac = (h & 0x3ff) as f64;
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 => {
            if frac == 0.0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            }
        }
        e => sign * (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

/// Double to IEEE 754 half precision, rounded half to even; None when too large.
fn f64_to_half(x: f64) -> Option<u16> {
    let sign: u16 = if x.is_sign_negative() { 0x8000 } else { 0 };
    if x.is_nan() {
        return Some(sign | 0x7e00);
    }
    let a = x.abs();
    if a.is_infinite() {
        return Some(sign | 0x7c00);
    }
    if a == 0.0 {
        return Some(sign);
    }
    // In units of the smallest subnormal (2**-24), then rounded to the nearest even.
    let (e, m) = {
        let e = a.log2().floor() as i32;
        if e < -14 {
            (0i32, round_even(a / 2f64.powi(-24)))
        } else {
            let m = round_even((a / 2f64.powi(e) - 1.0) * 1024.0);
            if m >= 1024.0 {
                (e + 1 + 15, 0.0)
            } else {
                (e + 15, m)
            }
        }
    };
    if e == 0 {
        // A subnormal that rounds up to the smallest normal is encoded the same way.
        return Some(sign | m as u16);
    }
    if e >= 31 {
        return None;
    }
    Some(sign | ((e as u16) << 10) | m as u16)
}

fn round_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - x.signum()
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::{f64_to_half, half_to_f64};

    #[test]
    fn half_precision_round_trips_and_rounds_to_even() {
        for x in [
            0.0,
            1.0,
            -2.5,
            65504.0,
            6.103515625e-05,
            5.960464477539063e-08,
        ] {
            assert_eq!(half_to_f64(f64_to_half(x).unwrap()), x);
        }
        // 0.1 is not a half; CPython packs it as 0x2e66 (0.0999755859375).
        assert_eq!(f64_to_half(0.1), Some(0x2e66));
        // Halfway between 1 and the next half (1 + 2**-10): rounds to the even one, 1.
        assert_eq!(f64_to_half(1.0 + 2f64.powi(-11)), Some(0x3c00));
        assert_eq!(f64_to_half(65520.0), None);
        assert_eq!(f64_to_half(f64::INFINITY), Some(0x7c00));
    }
}
