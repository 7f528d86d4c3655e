//! `bytes`, as far as programs here read it: what a command prints without `text=True`, what a
//! file opened with `'rb'` reads, what `str.encode` and `hashlib`'s `digest()` give. It has
//! CPython's repr, `len`, truth, `==`, `decode` and `hex`; devarray has no bytes literals and no
//! byte-level indexing.

use std::rc::Rc;

use crate::modules::python::native::{bound, downcast};
use crate::object::value::NativeObject;
use crate::object::{Exc, ExcKind, Value};

pub struct Bytes(pub Vec<u8>);

impl Bytes {
    pub fn value(bytes: Vec<u8>) -> Value {
        crate::modules::python::native::object(Bytes(bytes))
    }
}

/// The bytes of `v` when it is a `bytes` object.
pub fn of(v: &Value) -> Option<&[u8]> {
    match v {
        Value::Object(o) => o.as_any().downcast_ref::<Bytes>().map(|b| b.0.as_slice()),
        _ => None,
    }
}

impl NativeObject for Bytes {
    fn type_name(&self) -> &str {
        "bytes"
    }
    fn repr(&self) -> String {
        let quote = if self.0.contains(&b'\'') && !self.0.contains(&b'"') {
            '"'
        } else {
            '\''
        };
        let mut s = format!("b{quote}");
        for &c in &self.0 {
            match c {
                b'\\' => s.push_str("\\\\"),
                b'\n' => s.push_str("\\n"),
                b'\r' => s.push_str("\\r"),
                b'\t' => s.push_str("\\t"),
                c if c == quote as u8 => {
                    s.push('\\');
                    s.push(c as char);
                }
                0x20..=0x7e => s.push(c as char),
                c => s.push_str(&format!("\\x{c:02x}")),
            }
        }
        s.push(quote);
        s
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        Some(match name {
            "decode" => bound(
                this,
                "decode",
                "decode(encoding='utf-8', errors='strict'): the text.",
                |_, this, _| {
                    let b = downcast::<Bytes>(this, "bytes")?;
                    match std::str::from_utf8(&b.0) {
                        Ok(s) => Ok(Value::str(s)),
                        Err(e) => Err(Exc::new(
                            ExcKind::ValueError,
                            format!(
                                "'utf-8' codec can't decode byte 0x{:02x} in position {}: invalid start byte",
                                b.0[e.valid_up_to()],
                                e.valid_up_to()
                            ),
                        )),
                    }
                },
            ),
            "hex" => bound(
                this,
                "hex",
                "hex(): two hexadecimal digits per byte.",
                |_, this, a| {
                    a.finish(0)?;
                    let b = downcast::<Bytes>(this, "bytes")?;
                    Ok(Value::str(&hex(&b.0)))
                },
            ),
            "__len__" => bound(this, "__len__", "Return len(self).", |_, this, a| {
                a.finish(0)?;
                Ok(Value::Int(downcast::<Bytes>(this, "bytes")?.0.len() as i64))
            }),
            _ => return None,
        })
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["decode", "hex"]
    }
    fn truth(&self) -> Option<bool> {
        Some(!self.0.is_empty())
    }
    fn equals(&self, other: &Value) -> Option<bool> {
        Some(of(other) == Some(self.0.as_slice()))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Lower-case hexadecimal, two digits per byte (`bytes.hex()`, `hexdigest()`).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
