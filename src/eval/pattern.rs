//! Running a `match` statement (PEP 634): which case's pattern matches the subject, with the
//! names it binds. A case's names are bound only once its whole pattern has matched (CPython
//! keeps captures on its stack until then), before its guard runs: a guard that is false or
//! raises leaves them bound, as in CPython.

use std::rc::Rc;

use crate::lang::ast::{CmpOp, Expr, Ident};
use crate::lang::pattern::{MatchCase, Pattern, PatternKind};
use crate::modules::python::builtins;
use crate::object::class::truthy;
use crate::object::error::{Exc, ExcKind};
use crate::object::ops;
use crate::object::value::{Args, TypeKind, Value};
use crate::object::Interpreter;

use super::interp::Interp;

/// The built-in types whose class pattern `int(x)` matches the subject itself.
const SELF_MATCHING: &[&str] = &[
    "bool",
    "bytearray",
    "bytes",
    "dict",
    "float",
    "frozenset",
    "int",
    "list",
    "set",
    "str",
    "tuple",
];

impl Interp<'_> {
    /// Evaluates the subject and picks the case to run (its names bound), None when none
    /// matches.
    pub(super) fn choose_case(
        &mut self,
        subject: &Expr,
        cases: &[MatchCase],
    ) -> Result<Option<usize>, Exc> {
        let subject = self.eval(subject)?;
        for (i, case) in cases.iter().enumerate() {
            let mut bound = Vec::new();
            if !self.match_pattern(&case.pattern, &subject, &mut bound)? {
                continue;
            }
            for (name, value) in bound {
                self.set_var(&name, value);
            }
            match &case.guard {
                Some(guard) if !self.eval_truthy(guard)? => {}
                _ => return Ok(Some(i)),
            }
        }
        Ok(None)
    }

    fn match_pattern(
        &mut self,
        p: &Pattern,
        subject: &Value,
        bound: &mut Vec<(Ident, Value)>,
    ) -> Result<bool, Exc> {
        self.check_interrupt()?;
        match &p.kind {
            PatternKind::Value(e) => {
                let value = self.eval(e)?;
                let same = ops::compare(self, CmpOp::Eq, subject, &value)?;
                truthy(self, &same)
            }
            PatternKind::Singleton(e) => {
                let value = self.eval(e)?;
                let same = ops::compare(self, CmpOp::Is, subject, &value)?;
                truthy(self, &same)
            }
            PatternKind::Capture(name) | PatternKind::Star(name) => {
                if let Some(name) = name {
                    bound.push((name.clone(), subject.clone()));
                }
                Ok(true)
            }
            PatternKind::Sequence(items) => self.match_sequence(items, subject, bound),
            PatternKind::Mapping { keys, values, rest } => {
                self.match_mapping(keys, values, rest.as_ref(), subject, bound)
            }
            PatternKind::Class {
                cls,
                positional,
                keywords,
            } => self
                .match_class(cls, positional, keywords, subject, bound)
                .map_err(|e| e.at(p.span, &self.source)),
            PatternKind::Or(alts) => {
                for alt in alts {
                    let mark = bound.len();
                    if self.match_pattern(alt, subject, bound)? {
                        return Ok(true);
                    }
                    bound.truncate(mark);
                }
                Ok(false)
            }
            PatternKind::As(inner, name) => {
                if !self.match_pattern(inner, subject, bound)? {
                    return Ok(false);
                }
                bound.push((name.clone(), subject.clone()));
                Ok(true)
            }
        }
    }

    fn is_instance(&mut self, v: &Value, cls: &Value) -> Result<bool, Exc> {
        let result = builtins::isinstance(self, Args::positional(vec![v.clone(), cls.clone()]))?;
        Ok(matches!(result, Value::Bool(true)))
    }

    /// What a sequence pattern reads: a list, tuple, range or deque (or a subclass), never a
    /// str, bytes or bytearray, nor an array (CPython's `collections.abc.Sequence` check).
    fn sequence_items(
        &mut self,
        v: &Value,
        wanted: usize,
        star: bool,
    ) -> Result<Option<Vec<Value>>, Exc> {
        let fits = |len: usize| if star { len >= wanted } else { len == wanted };
        match v {
            Value::List(items) => {
                let items = items.borrow();
                Ok(fits(items.len()).then(|| items.clone()))
            }
            Value::Tuple(items) => Ok(fits(items.len()).then(|| items.to_vec())),
            Value::Range(start, stop, step) => {
                let len = crate::object::value::range_len(*start, *stop, *step);
                if !fits(usize::try_from(len).unwrap_or(0)) {
                    return Ok(None);
                }
                self.iterate(v).map(Some)
            }
            Value::Instance(_) | Value::Object(_) => {
                let sequence = v.type_name() == "deque"
                    || self.is_instance(v, &Value::Type(TypeKind::List))?
                    || self.is_instance(v, &Value::Type(TypeKind::Tuple))?;
                if !sequence {
                    return Ok(None);
                }
                let items = self.iterate(v)?;
                Ok(fits(items.len()).then_some(items))
            }
            _ => Ok(None),
        }
    }

    fn match_sequence(
        &mut self,
        patterns: &[Pattern],
        subject: &Value,
        bound: &mut Vec<(Ident, Value)>,
    ) -> Result<bool, Exc> {
        let star = patterns
            .iter()
            .position(|p| matches!(p.kind, PatternKind::Star(_)));
        let fixed = patterns.len() - usize::from(star.is_some());
        let Some(items) = self.sequence_items(subject, fixed, star.is_some())? else {
            return Ok(false);
        };
        match star {
            None => {
                for (p, item) in patterns.iter().zip(&items) {
                    if !self.match_pattern(p, item, bound)? {
                        return Ok(false);
                    }
                }
            }
            Some(at) => {
                let after = patterns.len() - at - 1;
                let tail_start = items.len() - after;
                for (p, item) in patterns[..at].iter().zip(&items[..at]) {
                    if !self.match_pattern(p, item, bound)? {
                        return Ok(false);
                    }
                }
                let rest = Value::list(items[at..tail_start].to_vec());
                if !self.match_pattern(&patterns[at], &rest, bound)? {
                    return Ok(false);
                }
                for (p, item) in patterns[at + 1..].iter().zip(&items[tail_start..]) {
                    if !self.match_pattern(p, item, bound)? {
                        return Ok(false);
                    }
                }
            }
        }
        Ok(true)
    }

    fn match_mapping(
        &mut self,
        keys: &[Expr],
        values: &[Pattern],
        rest: Option<&Ident>,
        subject: &Value,
        bound: &mut Vec<(Ident, Value)>,
    ) -> Result<bool, Exc> {
        let mapping = match subject {
            Value::Dict(_) => true,
            Value::Instance(_) | Value::Object(_) => {
                self.is_instance(subject, &Value::Type(TypeKind::Dict))?
            }
            _ => false,
        };
        if !mapping {
            return Ok(false);
        }
        let mut key_values = Vec::with_capacity(keys.len());
        for key in keys {
            key_values.push(self.eval(key)?);
        }
        // CPython looks every key up (`subject.get(key)`) before matching any value.
        let mut found = Vec::with_capacity(keys.len());
        for key in &key_values {
            let present = ops::compare(self, CmpOp::In, key, subject)?;
            if !truthy(self, &present)? {
                return Ok(false);
            }
            let get = self.get_attr(subject, "get")?;
            found.push(self.call_value(&get, Args::positional(vec![key.clone()]))?);
        }
        for (p, v) in values.iter().zip(&found) {
            if !self.match_pattern(p, v, bound)? {
                return Ok(false);
            }
        }
        if let Some(rest) = rest {
            let copy = self.call_value(
                &Value::Type(TypeKind::Dict),
                Args::positional(vec![subject.clone()]),
            )?;
            let pop = self.get_attr(&copy, "pop")?;
            for key in key_values {
                self.call_value(&pop, Args::positional(vec![key]))?;
            }
            bound.push((rest.clone(), copy));
        }
        Ok(true)
    }

    fn match_class(
        &mut self,
        cls: &Expr,
        positional: &[Pattern],
        keywords: &[(Ident, crate::lang::Span, Pattern)],
        subject: &Value,
        bound: &mut Vec<(Ident, Value)>,
    ) -> Result<bool, Exc> {
        let class = self.eval(cls)?;
        let is_type = match &class {
            Value::Type(_) | Value::Class(_) | Value::ExcType(_) => true,
            Value::Object(o) => o.type_name() == "type",
            _ => false,
        };
        if !is_type {
            return Err(Exc::type_error("called match pattern must be a type"));
        }
        if !self.is_instance(subject, &class)? {
            return Ok(false);
        }
        let class_name = match &self.get_attr(&class, "__name__")? {
            Value::Str(s) => s.clone(),
            _ => Rc::from("?"),
        };
        let mut attributes: Vec<Rc<str>> = Vec::new();
        if !positional.is_empty() {
            let match_args = match self.get_attr(&class, "__match_args__") {
                Ok(v) => Some(v),
                Err(e) if e.kind == ExcKind::AttributeError => None,
                Err(e) => return Err(e),
            };
            let names = match &match_args {
                Some(Value::Tuple(items)) => items.to_vec(),
                Some(other) => {
                    return Err(Exc::type_error(format!(
                        "{class_name}.__match_args__ must be a tuple (got {})",
                        other.type_name()
                    )))
                }
                None if SELF_MATCHING.contains(&&*class_name)
                    && matches!(class, Value::Type(_)) =>
                {
                    if positional.len() > 1 {
                        return Err(accepts(&class_name, 1, positional.len()));
                    }
                    if !self.match_pattern(&positional[0], subject, bound)? {
                        return Ok(false);
                    }
                    return self.match_keywords(&class_name, &[], keywords, subject, bound);
                }
                None => Vec::new(),
            };
            if positional.len() > names.len() {
                return Err(accepts(&class_name, names.len(), positional.len()));
            }
            for (name, p) in names.iter().zip(positional) {
                let Value::Str(name) = name else {
                    return Err(Exc::type_error(format!(
                        "__match_args__ elements must be strings (got {})",
                        name.type_name()
                    )));
                };
                if attributes.contains(name) {
                    return Err(Exc::type_error(format!(
                        "{class_name}() got multiple sub-patterns for attribute '{name}'"
                    )));
                }
                attributes.push(name.clone());
                match self.attribute(subject, name)? {
                    Some(v) if self.match_pattern(p, &v, bound)? => {}
                    _ => return Ok(false),
                }
            }
        }
        self.match_keywords(&class_name, &attributes, keywords, subject, bound)
    }

    fn match_keywords(
        &mut self,
        class_name: &str,
        taken: &[Rc<str>],
        keywords: &[(Ident, crate::lang::Span, Pattern)],
        subject: &Value,
        bound: &mut Vec<(Ident, Value)>,
    ) -> Result<bool, Exc> {
        for (name, _, p) in keywords {
            if taken.contains(name) {
                return Err(Exc::type_error(format!(
                    "{class_name}() got multiple sub-patterns for attribute '{name}'"
                )));
            }
            match self.attribute(subject, name)? {
                Some(v) if self.match_pattern(p, &v, bound)? => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// `getattr(v, name)`, None where it has no such attribute.
    fn attribute(&mut self, v: &Value, name: &str) -> Result<Option<Value>, Exc> {
        match self.get_attr(v, name) {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.kind == ExcKind::AttributeError => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn accepts(class_name: &str, accepted: usize, given: usize) -> Exc {
    Exc::type_error(format!(
        "{class_name}() accepts {accepted} positional sub-pattern{} ({given} given)",
        if accepted == 1 { "" } else { "s" }
    ))
}
