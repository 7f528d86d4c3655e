//! `hashlib`: `sha1`, `sha256` and `new(name)`, the hash objects' `update`, `digest`,
//! `hexdigest`, `copy`, `name`, `digest_size`, `block_size` (CPython 3.11's). What d2l's
//! `download` checks a cached data file with.

use std::cell::RefCell;
use std::rc::Rc;

use sha2::Digest;

use super::{module, set_fns, string};
use crate::modules::python::bytes::{self, Bytes};
use crate::modules::python::native::downcast;
use crate::object::value::{Module, NativeObject};
use crate::object::{method, Args, Exc, ExcKind, Value};

pub fn build() -> Rc<Module> {
    let m = module(
        "hashlib",
        "hashlib module - A common interface to many hash functions.",
    );
    set_fns(
        &m,
        &[
            (
                "sha1",
                "sha1(string=b'', *, usedforsecurity=True): a sha1 hash object.",
                |_, a| named("sha1", a, 0),
            ),
            (
                "sha256",
                "sha256(string=b'', *, usedforsecurity=True): a sha256 hash object.",
                |_, a| named("sha256", a, 0),
            ),
            (
                "new",
                "new(name, data=b'', **kwargs): a hash object of the algorithm `name`.",
                |_, mut a| {
                    let name = string(&a.required(0, "name")?, "name")?;
                    named(&name.to_lowercase(), a, 1)
                },
            ),
        ],
    );
    for name in ["algorithms_guaranteed", "algorithms_available"] {
        if let Ok(algos) =
            crate::object::set::from_values(true, &[Value::str("sha1"), Value::str("sha256")])
        {
            m.set(name, algos);
        }
    }
    m
}

#[derive(Clone)]
enum State {
    Sha1(sha1_smol::Sha1),
    Sha256(sha2::Sha256),
}

struct Hash(RefCell<State>);

impl Hash {
    fn name(&self) -> &'static str {
        match &*self.0.borrow() {
            State::Sha1(_) => "sha1",
            State::Sha256(_) => "sha256",
        }
    }
    fn digest(&self) -> Vec<u8> {
        match self.0.borrow().clone() {
            State::Sha1(h) => h.digest().bytes().to_vec(),
            State::Sha256(h) => h.finalize().to_vec(),
        }
    }
    fn update(&self, data: &Value) -> Result<(), Exc> {
        let Some(b) = bytes::of(data) else {
            return Err(Exc::type_error(match data {
                Value::Str(_) => "Strings must be encoded before hashing".to_string(),
                other => format!(
                    "object supporting the buffer API required, not '{}'",
                    other.type_name()
                ),
            }));
        };
        match &mut *self.0.borrow_mut() {
            State::Sha1(h) => h.update(&b),
            State::Sha256(h) => h.update(&*b),
        }
        Ok(())
    }
}

fn named(name: &str, mut a: Args, first: usize) -> Result<Value, Exc> {
    let data = match a.take(first, "string")? {
        Some(d) => Some(d),
        None => a.take_kw("data"),
    };
    a.take_kw("usedforsecurity");
    a.finish(first + 1)?;
    let state = match name {
        "sha1" => State::Sha1(sha1_smol::Sha1::new()),
        "sha256" => State::Sha256(sha2::Sha256::new()),
        other => {
            return Err(Exc::new(
                ExcKind::ValueError,
                format!("unsupported hash type {other}"),
            ))
        }
    };
    let h = Hash(RefCell::new(state));
    if let Some(d) = data {
        h.update(&d)?;
    }
    Ok(Value::Object(Rc::new(h)))
}

fn this(r: &Value) -> Result<&Hash, Exc> {
    downcast::<Hash>(r, "a hash object")
}

impl NativeObject for Hash {
    fn type_name(&self) -> &str {
        "_hashlib.HASH"
    }
    fn repr(&self) -> String {
        format!("<{} _hashlib.HASH object>", self.name())
    }
    fn get_attr(&self, this_: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let r = Value::Object(this_.clone());
        let (name, f): (&'static str, crate::object::value::MethodFn) = match name {
            "name" => return Some(Value::str(self.name())),
            "digest_size" => return Some(Value::Int(self.digest().len() as i64)),
            "block_size" => return Some(Value::Int(64)),
            "update" => ("update", |_, r, mut a| {
                let d = a.required(0, "data")?;
                a.finish(1)?;
                this(r)?.update(&d)?;
                Ok(Value::None)
            }),
            "digest" => ("digest", |_, r, a| {
                a.finish(0)?;
                Ok(Bytes::value(this(r)?.digest()))
            }),
            "hexdigest" => ("hexdigest", |_, r, a| {
                a.finish(0)?;
                Ok(Value::str(&bytes::hex(&this(r)?.digest())))
            }),
            "copy" => ("copy", |_, r, a| {
                a.finish(0)?;
                let copy = this(r)?.0.borrow().clone();
                Ok(Value::Object(Rc::new(Hash(RefCell::new(copy)))))
            }),
            _ => return None,
        };
        Some(method(&r, name, "a method of a hash object", f))
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec![
            "block_size",
            "copy",
            "digest",
            "digest_size",
            "hexdigest",
            "name",
            "update",
        ]
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
