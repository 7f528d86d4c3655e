//! `range` at any size, as CPython's: a range whose bounds or step do not fit an i64
//! (`range(2**70)`) is a `BigRange`, computed with big ints. `Value::Range` stays the i64 fast
//! path; what both need and `Value::Range` lacks (`start`/`stop`/`step`, `count`, `index`,
//! equality across the two) is written once here over big ints.

use std::cell::RefCell;
use std::rc::Rc;

use num_bigint::BigInt;
use num_traits::{One, Signed, ToPrimitive, Zero};

use crate::object::bigint::{as_big, int_value};
use crate::object::value::{Args, HashKey, NativeObject, TypeKind, Value};
use crate::object::{method, Exc, ExcKind};

/// A range with big-int bounds; `step` is never zero.
#[derive(Clone, Debug, PartialEq)]
pub struct BigRange {
    start: BigInt,
    stop: BigInt,
    step: BigInt,
}

impl BigRange {
    /// The range of these bounds as a value: `Value::Range` when all three fit an i64.
    pub fn value(start: BigInt, stop: BigInt, step: BigInt) -> Value {
        match (start.to_i64(), stop.to_i64(), step.to_i64()) {
            (Some(a), Some(b), Some(c)) => Value::Range(a, b, c),
            _ => Value::Object(Rc::new(BigRange { start, stop, step })),
        }
    }

    /// The range a value is (either representation), or None.
    pub fn of(v: &Value) -> Option<BigRange> {
        match v {
            Value::Range(a, b, c) => Some(BigRange {
                start: BigInt::from(*a),
                stop: BigInt::from(*b),
                step: BigInt::from(*c),
            }),
            Value::Object(o) => o.as_any().downcast_ref::<BigRange>().cloned(),
            _ => None,
        }
    }

    /// CPython's `compute_range_length`.
    fn len(&self) -> BigInt {
        let (lo, hi, step) = if self.step.is_positive() {
            (&self.start, &self.stop, self.step.clone())
        } else {
            (&self.stop, &self.start, -&self.step)
        };
        if lo >= hi {
            return BigInt::zero();
        }
        (hi - lo - BigInt::one()) / step + BigInt::one()
    }

    fn at(&self, k: &BigInt) -> BigInt {
        &self.start + k * &self.step
    }

    /// The position of `x` in the range, if it is there.
    fn position(&self, x: &BigInt) -> Option<BigInt> {
        let in_bounds = if self.step.is_positive() {
            *x >= self.start && *x < self.stop
        } else {
            *x <= self.start && *x > self.stop
        };
        let offset = x - &self.start;
        (in_bounds && (&offset % &self.step).is_zero()).then(|| offset / &self.step)
    }

    /// The reversed range: `reversed(r)` iterates it.
    fn reversed(&self) -> BigRange {
        let n = self.len();
        let last = self.at(&(&n - BigInt::one()));
        BigRange {
            stop: &self.start - &self.step,
            start: if n.is_zero() {
                self.start.clone()
            } else {
                last
            },
            step: -&self.step,
        }
        .clamped_if_empty(n.is_zero())
    }

    fn clamped_if_empty(self, empty: bool) -> BigRange {
        if empty {
            BigRange {
                stop: self.start.clone(),
                ..self
            }
        } else {
            self
        }
    }

    /// `r[i]` and `r[a:b:c]`.
    fn item(&self, key: &Value) -> Result<Value, Exc> {
        let n = self.len();
        if let Some(s) = crate::object::class::as_slice(key) {
            let (i, j, k) = slice_indices(&n, &s.start, &s.stop, &s.step)?;
            return Ok(BigRange::value(self.at(&i), self.at(&j), &self.step * k));
        }
        let Some(i) = index_of(key) else {
            return Err(Exc::type_error(format!(
                "range indices must be integers or slices, not {}",
                key.type_name()
            )));
        };
        let i = if i.is_negative() { i + &n } else { i };
        if i.is_negative() || i >= n {
            return Err(Exc::new(
                ExcKind::IndexError,
                "range object index out of range",
            ));
        }
        Ok(int_value(self.at(&i)))
    }

    /// `x in r`: ints by arithmetic, whole floats as their int, anything else never.
    pub fn contains(&self, x: &Value) -> bool {
        number_of(x).is_some_and(|x| self.position(&x).is_some())
    }

    /// CPython's `range_equals`: equal when they give the same items.
    pub fn same_items(&self, other: &BigRange) -> bool {
        let (n, m) = (self.len(), other.len());
        if n != m {
            return false;
        }
        n.is_zero() || (self.start == other.start && (n.is_one() || self.step == other.step))
    }

    fn repr_text(&self) -> String {
        if self.step.is_one() {
            format!("range({}, {})", self.start, self.stop)
        } else {
            format!("range({}, {}, {})", self.start, self.stop, self.step)
        }
    }
}

/// An int argument (`int`, `bool`, a big int, NumPy's integer scalars).
fn index_of(v: &Value) -> Option<BigInt> {
    as_big(v).map(|b| b.into_owned())
}

/// An int, or a float that equals one (`2.0 in range(3)`).
fn number_of(v: &Value) -> Option<BigInt> {
    match v {
        Value::Float(f) if f.is_finite() && f.fract() == 0.0 => {
            let whole = crate::object::bigint::from_float(*f).ok()?;
            index_of(&whole)
        }
        other => index_of(other),
    }
}

/// CPython's `_PySlice_GetLongIndices`: a slice's start, stop and step over a length `n`, at any
/// size.
fn slice_indices(
    n: &BigInt,
    start: &Value,
    stop: &Value,
    step: &Value,
) -> Result<(BigInt, BigInt, BigInt), Exc> {
    let get = |v: &Value| -> Result<Option<BigInt>, Exc> {
        match v {
            Value::None => Ok(None),
            x => index_of(x).map(Some).ok_or_else(|| {
                Exc::type_error(
                    "slice indices must be integers or None or have an __index__ method",
                )
            }),
        }
    };
    let step = get(step)?.unwrap_or_else(BigInt::one);
    if step.is_zero() {
        return Err(Exc::value_error("slice step cannot be zero"));
    }
    let backwards = step.is_negative();
    let (lower, upper) = if backwards {
        (BigInt::from(-1), n - BigInt::one())
    } else {
        (BigInt::zero(), n.clone())
    };
    let bound = |v: Option<BigInt>, default: &BigInt| match v {
        None => default.clone(),
        Some(i) if i.is_negative() => (i + n).max(lower.clone()),
        Some(i) => i.min(upper.clone()),
    };
    let start = bound(get(start)?, if backwards { &upper } else { &lower });
    let stop = bound(get(stop)?, if backwards { &lower } else { &upper });
    Ok((start, stop, step))
}

/// `range(...)`: CPython's argument checks, and a `BigRange` when a bound is past i64.
pub fn construct(a: Args) -> Result<Value, Exc> {
    if !a.kw.is_empty() {
        return Err(Exc::type_error("range() takes no keyword arguments"));
    }
    let n = a
        .pos
        .iter()
        .map(|v| {
            index_of(v).ok_or_else(|| {
                Exc::type_error(format!(
                    "'{}' object cannot be interpreted as an integer",
                    v.type_name()
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>();
    let (start, stop, step) = match a.pos.len() {
        0 => return Err(Exc::type_error("range expected at least 1 argument, got 0")),
        1..=3 => {
            let mut n = n?.into_iter();
            let (first, second, third) = (n.next(), n.next(), n.next());
            match (first, second, third) {
                (Some(stop), None, _) => (BigInt::zero(), stop, BigInt::one()),
                (Some(start), Some(stop), step) => (start, stop, step.unwrap_or_else(BigInt::one)),
                _ => return Err(Exc::type_error("range expected at least 1 argument, got 0")),
            }
        }
        k => {
            return Err(Exc::type_error(format!(
                "range expected at most 3 arguments, got {k}"
            )))
        }
    };
    if step.is_zero() {
        return Err(Exc::value_error("range() arg 3 must not be zero"));
    }
    Ok(BigRange::value(start, stop, step))
}

/// `len(r)`: CPython's ssize_t limit.
pub fn length_of(r: &BigRange) -> Result<usize, Exc> {
    r.len()
        .to_i64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            Exc::new(
                ExcKind::OverflowError,
                "Python int too large to convert to C ssize_t",
            )
        })
}

/// The attributes and methods of a range, `Value::Range` or `BigRange` (`receiver`).
pub fn attr(receiver: &Value, name: &str) -> Option<Value> {
    let r = BigRange::of(receiver)?;
    Some(match name {
        "start" => int_value(r.start),
        "stop" => int_value(r.stop),
        "step" => int_value(r.step),
        "count" => method(
            receiver,
            "count",
            "rangeobject.count(value) -> integer -- return number of occurrences of value",
            |_, r, mut a| {
                let x = a.required(0, "value")?;
                a.finish(1)?;
                let r = BigRange::of(r).ok_or_else(|| Exc::type_error("expected a range"))?;
                Ok(Value::Int(r.contains(&x) as i64))
            },
        ),
        "index" => method(
            receiver,
            "index",
            "rangeobject.index(value) -> integer -- return index of value.",
            |it, r, mut a| {
                let x = a.required(0, "value")?;
                a.finish(1)?;
                let r = BigRange::of(r).ok_or_else(|| Exc::type_error("expected a range"))?;
                match number_of(&x).and_then(|x| r.position(&x)) {
                    Some(k) => Ok(int_value(k)),
                    None => Err(Exc::value_error(format!(
                        "{} is not in range",
                        crate::object::format::repr(it, &x)?
                    ))),
                }
            },
        ),
        _ => return None,
    })
}

impl NativeObject for BigRange {
    fn type_name(&self) -> &str {
        "range"
    }
    fn repr(&self) -> String {
        self.repr_text()
    }
    fn class_value(&self) -> Option<Value> {
        Some(Value::Type(TypeKind::Range))
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let receiver = Value::Object(this.clone());
        match name {
            "__len__" => Some(method(&receiver, "__len__", "len(self)", |_, r, a| {
                a.finish(0)?;
                let r = BigRange::of(r).ok_or_else(|| Exc::type_error("expected a range"))?;
                Ok(Value::Int(length_of(&r)? as i64))
            })),
            "__getitem__" => Some(method(
                &receiver,
                "__getitem__",
                "self[key]",
                |_, r, mut a| {
                    let key = a.required(0, "key")?;
                    a.finish(1)?;
                    let r = BigRange::of(r).ok_or_else(|| Exc::type_error("expected a range"))?;
                    r.item(&key)
                },
            )),
            "__iter__" => Some(method(&receiver, "__iter__", "iter(self)", |_, r, a| {
                a.finish(0)?;
                let r = BigRange::of(r).ok_or_else(|| Exc::type_error("expected a range"))?;
                Ok(RangeIterator::value(r))
            })),
            "__reversed__" => Some(method(
                &receiver,
                "__reversed__",
                "Return a reverse iterator.",
                |_, r, a| {
                    a.finish(0)?;
                    let r = BigRange::of(r).ok_or_else(|| Exc::type_error("expected a range"))?;
                    Ok(RangeIterator::value(r.reversed()))
                },
            )),
            // Drawn one item at a time by for loops and `list()`.
            "__lazy_iter__" => Some(Value::Bool(true)),
            _ => attr(&receiver, name),
        }
    }
    fn attr_names(&self) -> Vec<&'static str> {
        vec!["count", "index", "start", "step", "stop"]
    }
    fn equals(&self, other: &Value) -> Option<bool> {
        Some(BigRange::of(other).is_some_and(|o| self.same_items(&o)))
    }
    fn truth(&self) -> Option<bool> {
        Some(!self.len().is_zero())
    }
    fn contains(&self, item: &Value) -> Option<Result<bool, Exc>> {
        Some(Ok(BigRange::contains(self, item)))
    }
    /// CPython hashes a range as `(len, start, step)`, with `None` for what does not matter.
    fn hash_key(&self) -> Option<HashKey> {
        let n = self.len();
        let big = |b: &BigInt| match b.to_i64() {
            Some(i) => HashKey::Int(i),
            None => HashKey::BigInt(Rc::new(b.clone())),
        };
        Some(HashKey::Tuple(vec![
            HashKey::Str("range".into()),
            big(&n),
            if n.is_zero() {
                HashKey::None
            } else {
                big(&self.start)
            },
            if n <= BigInt::one() {
                HashKey::None
            } else {
                big(&self.step)
            },
        ]))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The items a range iterator has left: machine integers while every item fits (the common
/// `range_iterator`), big ints otherwise.
enum Left {
    Small { next: i64, count: u64, step: i64 },
    Big(BigRange),
}

/// How many items `range(start, stop, step)` has, for machine-integer bounds (up to 2**64 - 1,
/// which i64 cannot hold).
fn small_count(start: i64, stop: i64, step: i64) -> u64 {
    let (start, stop, step) = (i128::from(start), i128::from(stop), i128::from(step));
    let n = if step > 0 && start < stop {
        (stop - start + step - 1) / step
    } else if step < 0 && start > stop {
        (start - stop - step - 1) / -step
    } else {
        0
    };
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// CPython's `range_iterator` / `longrange_iterator`: the items left of a range, drawn one
/// at a time.
struct RangeIterator {
    left: RefCell<Left>,
    /// CPython's type name: `range_iterator` when every item fits a C long.
    name: &'static str,
}

impl RangeIterator {
    fn value(r: BigRange) -> Value {
        let left = match BigRange::value(r.start.clone(), r.stop.clone(), r.step.clone()) {
            Value::Range(start, stop, step) => Left::Small {
                next: start,
                count: small_count(start, stop, step),
                step,
            },
            _ => Left::Big(r),
        };
        let name = match left {
            Left::Small { .. } => "range_iterator",
            Left::Big(_) => "longrange_iterator",
        };
        Value::Object(Rc::new(RangeIterator {
            left: RefCell::new(left),
            name,
        }))
    }

    fn next(&self) -> Option<Value> {
        match &mut *self.left.borrow_mut() {
            Left::Small { next, count, step } => {
                if *count == 0 {
                    return None;
                }
                let item = *next;
                *count -= 1;
                // Past the last item the sum may leave i64; it is never read then.
                *next = next.wrapping_add(*step);
                Some(Value::Int(item))
            }
            Left::Big(r) => {
                if r.len().is_zero() {
                    return None;
                }
                let item = r.start.clone();
                r.start = &item + &r.step;
                Some(int_value(item))
            }
        }
    }
}

impl NativeObject for RangeIterator {
    fn type_name(&self) -> &str {
        self.name
    }
    fn repr(&self) -> String {
        format!("<{} object at {:#x}>", self.name, self as *const _ as usize)
    }
    /// `type(iter(r)).__name__`: one class per name, made once per thread.
    fn class_value(&self) -> Option<Value> {
        thread_local! {
            static CLASSES: RefCell<Vec<(&'static str, Value)>> = const { RefCell::new(Vec::new()) };
        }
        CLASSES.with(|c| {
            let mut c = c.borrow_mut();
            if let Some((_, v)) = c.iter().find(|(n, _)| *n == self.name) {
                return Some(v.clone());
            }
            let class = Value::Class(Rc::new(super::class::Class {
                name: Rc::from(self.name),
                qualname: Rc::from(self.name),
                module: Rc::from("builtins"),
                bases: vec![Value::Type(TypeKind::Object)],
                mro: vec![Value::Type(TypeKind::Object)],
                has_properties: std::cell::Cell::new(false),
                native: true,
                attrs: RefCell::new(Default::default()),
                doc: None,
                source: None,
                subclasses: Default::default(),
            }));
            c.push((self.name, class.clone()));
            Some(class)
        })
    }
    fn get_attr(&self, this: &Rc<dyn NativeObject>, name: &str) -> Option<Value> {
        let receiver = Value::Object(this.clone());
        match name {
            "__next__" => Some(method(&receiver, "__next__", "next(self)", |_, r, a| {
                a.finish(0)?;
                let Value::Object(o) = r else {
                    return Err(Exc::type_error("expected a range iterator"));
                };
                let Some(iter) = o.as_any().downcast_ref::<RangeIterator>() else {
                    return Err(Exc::type_error("expected a range iterator"));
                };
                iter.next()
                    .ok_or_else(|| Exc::new(ExcKind::StopIteration, ""))
            })),
            "__iter__" => Some(method(&receiver, "__iter__", "iter(self)", |_, r, _| {
                Ok(r.clone())
            })),
            "__lazy_iter__" => Some(Value::Bool(true)),
            _ => None,
        }
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `reversed(r)` of either representation, as a lazy iterator (never materialised).
pub fn reversed(v: &Value) -> Option<Value> {
    let r = BigRange::of(v)?;
    Some(RangeIterator::value(r.reversed()))
}

/// `iter(r)` of either representation.
pub fn iterator(v: &Value) -> Option<Value> {
    BigRange::of(v).map(RangeIterator::value)
}

/// `r[a:b:c]` of an i64 range whose result is past i64 (`range(-2**63, 2**63-1)[::-1]`).
pub fn slice_of(start: i64, stop: i64, step: i64, key: &Value) -> Result<Value, Exc> {
    BigRange::of(&Value::Range(start, stop, step))
        .ok_or_else(|| Exc::type_error("expected a range"))?
        .item(key)
}
