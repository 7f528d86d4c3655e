//! `string`: the character-class constants (`string.ascii_letters`, `digits`, `punctuation`...).

use std::rc::Rc;

use super::module;
use crate::object::value::Module;
use crate::object::Value;

pub fn build() -> Rc<Module> {
    let m = module("string", "Common string constants.");
    let lower = "abcdefghijklmnopqrstuvwxyz";
    let upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let punctuation = r##"!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~"##;
    m.set("ascii_lowercase", Value::str(lower));
    m.set("ascii_uppercase", Value::str(upper));
    m.set("ascii_letters", Value::str(&format!("{lower}{upper}")));
    m.set("digits", Value::str("0123456789"));
    m.set("hexdigits", Value::str("0123456789abcdefABCDEF"));
    m.set("octdigits", Value::str("01234567"));
    m.set("punctuation", Value::str(punctuation));
    m.set("whitespace", Value::str(" \t\n\r\x0b\x0c"));
    m.set(
        "printable",
        Value::str(&format!(
            "0123456789{lower}{upper}{punctuation} \t\n\r\x0b\x0c"
        )),
    );
    m
}
