//! `zlib`: DEFLATE compression in the zlib, gzip and raw containers (by `wbits`, as CPython's
//! `zlib` reads it), `crc32` and `adler32`, on the flate2 crate. What `gzip` is written on.
//! The compressed bytes are flate2's (miniz), so they may differ from CPython's zlib's, while
//! each decompresses the other's.

use std::io::{Read, Write};
use std::rc::Rc;

use super::{module, set_fns};
use crate::modules::python::bytes::{self, Bytes};
use crate::object::class::Class;
use crate::object::value::Module;
use crate::object::{Args, Exc, ExcKind, Value};

pub fn build() -> Rc<Module> {
    let m = module("zlib", "compression compatible with gzip");
    m.set("error", Value::Class(error_class()));
    for (name, v) in [
        ("MAX_WBITS", 15),
        ("DEFLATED", 8),
        ("DEF_MEM_LEVEL", 8),
        ("DEF_BUF_SIZE", 16384),
        ("Z_NO_COMPRESSION", 0),
        ("Z_BEST_SPEED", 1),
        ("Z_BEST_COMPRESSION", 9),
        ("Z_DEFAULT_COMPRESSION", -1),
    ] {
        m.set(name, Value::Int(v));
    }
    set_fns(
        &m,
        &[
            (
                "compress",
                "compress(data, /, level=-1, wbits=15): data compressed (wbits 9..15 zlib, 25..31 gzip, -9..-15 raw).",
                compress,
            ),
            (
                "decompress",
                "decompress(data, /, wbits=15, bufsize=16384): the bytes data compressed (wbits 40..47: zlib or gzip, by the header).",
                decompress,
            ),
            ("crc32", "crc32(data, value=0): the CRC-32 checksum, continuing value.", |_, mut a| {
                let data = data_arg(&a.required(0, "data")?)?;
                let start = a.take(1, "value")?.map_or(Ok(0), |v| super::int(&v))?;
                a.finish(2)?;
                let mut h = crc32fast::Hasher::new_with_initial(start as u32);
                h.update(&data);
                Ok(Value::Int(h.finalize() as i64))
            }),
            ("adler32", "adler32(data, value=1): the Adler-32 checksum, continuing value.", |_, mut a| {
                let data = data_arg(&a.required(0, "data")?)?;
                let start = a.take(1, "value")?.map_or(Ok(1), |v| super::int(&v))? as u32;
                a.finish(2)?;
                let (mut s1, mut s2) = (start & 0xffff, start >> 16);
                for b in data {
                    s1 = (s1 + b as u32) % 65521;
                    s2 = (s2 + s1) % 65521;
                }
                Ok(Value::Int(((s2 << 16) | s1) as i64))
            }),
        ],
    );
    m
}

thread_local! {
    static ERROR: Rc<Class> = super::exc_class("error", "zlib", ExcKind::Exception);
}

fn error_class() -> Rc<Class> {
    ERROR.with(|c| c.clone())
}

fn data_arg(v: &Value) -> Result<Vec<u8>, Exc> {
    bytes::of(v).map(|b| b.to_vec()).ok_or_else(|| {
        Exc::type_error(format!(
            "a bytes-like object is required, not '{}'",
            v.type_name()
        ))
    })
}

#[derive(Clone, Copy)]
enum Container {
    Zlib,
    Gzip,
    Raw,
    Auto,
}

fn container(wbits: i64, decompressing: bool) -> Result<Container, Exc> {
    Ok(match wbits {
        8..=15 | 0 => Container::Zlib,
        -15..=-8 => Container::Raw,
        24..=31 => Container::Gzip,
        40..=47 if decompressing => Container::Auto,
        _ => return Err(Exc::value_error("Invalid initialization option")),
    })
}

fn compress(_: &mut dyn crate::object::Interpreter, mut a: Args) -> Result<Value, Exc> {
    let data = data_arg(&a.required(0, "data")?)?;
    let level = a.take(1, "level")?.map_or(Ok(-1), |v| super::int(&v))?;
    let wbits = a.take(2, "wbits")?.map_or(Ok(15), |v| super::int(&v))?;
    a.finish(3)?;
    if !(-1..=9).contains(&level) {
        return Err(super::raise(&error_class(), "Bad compression level".into()));
    }
    let level = if level < 0 {
        flate2::Compression::default()
    } else {
        flate2::Compression::new(level as u32)
    };
    let io = |e: std::io::Error| super::raise(&error_class(), e.to_string());
    let out = match container(wbits, false)? {
        Container::Zlib | Container::Auto => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
            e.write_all(&data).map_err(io)?;
            e.finish().map_err(io)?
        }
        Container::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
            e.write_all(&data).map_err(io)?;
            e.finish().map_err(io)?
        }
        Container::Raw => {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), level);
            e.write_all(&data).map_err(io)?;
            e.finish().map_err(io)?
        }
    };
    Ok(Bytes::value(out))
}

fn decompress(_: &mut dyn crate::object::Interpreter, mut a: Args) -> Result<Value, Exc> {
    let data = data_arg(&a.required(0, "data")?)?;
    let wbits = a.take(1, "wbits")?.map_or(Ok(15), |v| super::int(&v))?;
    a.take(2, "bufsize")?;
    a.finish(3)?;
    let kind = match container(wbits, true)? {
        Container::Auto if data.starts_with(&[0x1f, 0x8b]) => Container::Gzip,
        Container::Auto => Container::Zlib,
        k => k,
    };
    let mut out = Vec::new();
    let result = match kind {
        Container::Gzip => flate2::read::MultiGzDecoder::new(data.as_slice()).read_to_end(&mut out),
        Container::Raw => flate2::read::DeflateDecoder::new(data.as_slice()).read_to_end(&mut out),
        _ => {
            if data.len() >= 2 && ((data[0] as u16) << 8 | data[1] as u16) % 31 != 0 {
                return Err(super::raise(
                    &error_class(),
                    "Error -3 while decompressing data: incorrect header check".into(),
                ));
            }
            flate2::read::ZlibDecoder::new(data.as_slice()).read_to_end(&mut out)
        }
    };
    result.map_err(|e| {
        let what = match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "incomplete or truncated stream".to_string(),
            _ => e.to_string(),
        };
        super::raise(
            &error_class(),
            format!("Error -3 while decompressing data: {what}"),
        )
    })?;
    Ok(Bytes::value(out))
}
