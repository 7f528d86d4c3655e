//! Values of the language. Cheap to clone: everything with identity is behind
//! an `Rc` (or, for arrays, the runtime's `Arc`), so `is` compares pointers.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

use crate::lang::ast::{FuncDef, Ident, Param};
use crate::lang::Span;
use crate::runtime::{Array, DType, Device};

use super::class::{BoundMethod, Class, Instance};
use super::error::{Exc, ExcKind};
use super::interpreter::Interpreter;
use super::state::Env;

/// How an array prints: the dialect that created it. Operations keep the flavor
/// of their first array operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// MXNet's legacy NDArray: `\n[1. 2. 3.]\n<NDArray 3 @cpu(0)>`.
    Nd,
    /// MXNet's numpy mode: `array([1., 2., 3.])`.
    Np,
    /// PyTorch: `tensor([1., 2., 3.])`.
    Torch,
    /// A host numpy array, as `asnumpy()`/`numpy()` return:
    /// `array([1., 2., 3.], dtype=float32)`.
    Numpy,
}

/// An array as the language sees it: the runtime array plus its print flavor.
#[derive(Clone)]
pub struct ArrayValue {
    pub array: Array,
    pub flavor: Flavor,
}

pub type BuiltinFn = fn(&mut dyn Interpreter, Args) -> Result<Value, Exc>;
pub type MethodFn = fn(&mut dyn Interpreter, &Value, Args) -> Result<Value, Exc>;

/// A function written in Rust, possibly bound to a receiver (a method).
pub struct Builtin {
    pub name: &'static str,
    pub doc: &'static str,
    pub kind: BuiltinKind,
}

pub enum BuiltinKind {
    Free(BuiltinFn),
    /// A method of a class written in Rust (`nn.Block.collect_params`): called on the class it
    /// takes the instance first, read through an instance it binds to it like a `def`.
    Unbound(BuiltinFn),
    Method {
        receiver: Value,
        f: MethodFn,
    },
}

/// A function written in the language (`def` or `lambda`).
pub struct Function {
    pub name: Ident,
    pub params: Rc<[Param]>,
    pub defaults: Vec<Option<Value>>,
    pub body: FunctionBody,
    pub doc: Option<Rc<str>>,
    /// The source text the body's spans point into (the cell that defined it).
    pub source: Rc<str>,
    /// The enclosing function's scope, for closures; None at top level.
    pub closure: Option<Env>,
    pub span: Span,
    /// The class whose body defined it, for zero-argument `super()`.
    pub owner: RefCell<Option<std::rc::Weak<Class>>>,
    /// Attributes a program sets on the function (`f.calls = 0`, what `functools.wraps`
    /// copies: `__name__`, `__qualname__`, `__doc__`, `__wrapped__`).
    pub dict: RefCell<super::class::Attrs>,
    /// The module whose source defined it, whose attributes are its globals; None for the
    /// session's own code (`__main__`, whose globals are the session's).
    pub module: Option<std::rc::Weak<Module>>,
}

impl Function {
    /// `__qualname__`: `C.m` for a method, `outer.<locals>.inner` for a nested function.
    pub fn qualname(&self) -> String {
        if let Some(Value::Str(q)) = self.dict.borrow().get("__qualname__") {
            return q.to_string();
        }
        if let Some(class) = self.owner.borrow().as_ref().and_then(|w| w.upgrade()) {
            return format!("{}.{}", class.qualname, self.name);
        }
        let mut scope = self.closure.clone();
        while let Some(env) = scope {
            let next = {
                let frame = env.borrow();
                if let Some(class) = frame.class_qualname() {
                    return format!("{class}.{}", self.name);
                }
                if let Some(f) = &frame.function {
                    return format!("{}.<locals>.{}", f.qualname(), self.name);
                }
                frame.parent.clone()
            };
            scope = next;
        }
        self.name.to_string()
    }
}

pub enum FunctionBody {
    Def(Rc<FuncDef>),
    Lambda(Rc<crate::lang::ast::Expr>),
}

/// A built-in module (`mxnet`, `mxnet.nd`, `time`, ...). Members are filled
/// when the module is first imported.
pub struct Module {
    pub name: String,
    pub doc: &'static str,
    pub attrs: RefCell<HashMap<Rc<str>, Value>>,
    /// The globals of code run by `exec(code, ns)`: the dictionary itself holds the names
    /// (read and written live, as CPython's functions see their `__globals__`), not `attrs`.
    /// Weak: the dictionary's owner keeps it alive, and functions keep this module.
    pub namespace: Option<std::rc::Weak<RefCell<Dict>>>,
    /// For `exec(code, globals, locals)`: the module over the globals, where a name not in
    /// this one's (the locals') is looked up, and the globals of the functions the code
    /// defines.
    pub outer: Option<Rc<Module>>,
}

impl Module {
    pub fn new(name: &str, doc: &'static str) -> Module {
        Module {
            name: name.to_string(),
            doc,
            attrs: RefCell::new(HashMap::new()),
            namespace: None,
            outer: None,
        }
    }
    /// A module whose names live in a dictionary (`exec(code, ns)`).
    pub fn over_dict(name: &str, dict: &Rc<RefCell<Dict>>) -> Module {
        Module {
            namespace: Some(Rc::downgrade(dict)),
            ..Module::new(name, "")
        }
    }
    pub fn set(&self, name: &str, value: Value) {
        match self.namespace.as_ref().map(std::rc::Weak::upgrade) {
            Some(Some(d)) => {
                let key = HashKey::Str(Rc::from(name));
                d.borrow_mut().insert(key, Value::str(name), value);
            }
            Some(None) => {}
            None => {
                self.attrs.borrow_mut().insert(Rc::from(name), value);
            }
        }
    }
    pub fn get(&self, name: &str) -> Option<Value> {
        let own = match self.namespace.as_ref().map(std::rc::Weak::upgrade) {
            Some(d) => d.and_then(|d| d.borrow().get(&HashKey::Str(Rc::from(name))).cloned()),
            None => self.attrs.borrow().get(name).cloned(),
        };
        own.or_else(|| self.outer.as_ref()?.get(name))
    }
    /// The module whose names the functions defined here see as their globals.
    pub fn for_functions(self: &Rc<Module>) -> &Rc<Module> {
        self.outer.as_ref().unwrap_or(self)
    }
    /// Unbinds a name (`del name` at the module's top level, `global` then `del`).
    pub fn remove(&self, name: &str) -> Option<Value> {
        match self.namespace.as_ref().map(std::rc::Weak::upgrade) {
            Some(d) => d?.borrow_mut().remove(&HashKey::Str(Rc::from(name))),
            None => self.attrs.borrow_mut().remove(name),
        }
    }
    /// The names bound now (for "Did you mean").
    pub fn names(&self) -> Vec<Rc<str>> {
        match self.namespace.as_ref().map(std::rc::Weak::upgrade) {
            Some(Some(d)) => d
                .borrow()
                .entries
                .iter()
                .filter_map(|(k, _)| match k {
                    Value::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            Some(None) => Vec::new(),
            None => self.attrs.borrow().keys().cloned().collect(),
        }
    }
}

/// A raised exception, as a value (`except E as e`).
pub struct ExcValue {
    pub kind: ExcKind,
    pub message: String,
    /// The arguments it was made with (`KeyError('a', 1)`); None for an error raised by
    /// devarray itself, whose `args` is its message.
    pub args: Option<Rc<Vec<Value>>>,
    /// Its `__context__`/`__cause__` and identity, from the exception it was made from.
    pub links: Option<Box<super::error::ExcLinks>>,
}

impl ExcValue {
    /// `e.args`.
    pub fn args(&self) -> Vec<Value> {
        match &self.args {
            Some(a) => a.to_vec(),
            None if self.message.is_empty() => Vec::new(),
            None => match self.os_error() {
                // CPython's OSError keeps (errno, strerror); the file is `filename`.
                Some((errno, strerror, _)) => vec![Value::Int(errno), Value::str(&strerror)],
                None => vec![Value::str(&self.message)],
            },
        }
    }

    /// An OS error devarray raised, `[Errno N] reason` or `[Errno N] reason: 'file'`, as
    /// CPython's fields (errno, strerror, filename).
    pub fn os_error(&self) -> Option<(i64, String, Option<String>)> {
        if !self.kind.is_subclass_of(super::error::ExcKind::OSError) || self.args.is_some() {
            return None;
        }
        let rest = self.message.strip_prefix("[Errno ")?;
        let (number, rest) = rest.split_once("] ")?;
        let errno = number.parse().ok()?;
        Some(match rest.split_once(": '") {
            Some((reason, file)) if file.ends_with('\'') => (
                errno,
                reason.to_string(),
                Some(file[..file.len() - 1].to_string()),
            ),
            _ => (errno, rest.to_string(), None),
        })
    }

    /// A built-in exception's own fields (CPython's `SystemExit.code`, `OSError.errno`,
    /// `strerror`, `filename`, `filename2`, `ImportError.name`), or None for another name.
    pub fn field(&self, name: &str) -> Option<Value> {
        use super::error::ExcKind;
        let args = self.args();
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::None);
        match name {
            "code" if self.kind == ExcKind::SystemExit => Some(match args.len() {
                0 => Value::None,
                1 => arg(0),
                _ => Value::tuple(args.clone()),
            }),
            "errno" | "strerror" | "filename" | "filename2"
                if self.kind.is_subclass_of(ExcKind::OSError) =>
            {
                if let Some((errno, strerror, file)) = self.os_error() {
                    return Some(match name {
                        "errno" => Value::Int(errno),
                        "strerror" => Value::str(&strerror),
                        "filename" => file.map_or(Value::None, |f| Value::str(&f)),
                        _ => Value::None,
                    });
                }
                // OSError(errno, strerror[, filename[, winerror, filename2]]), as CPython
                // reads its arguments.
                let numbered = (2..=5).contains(&args.len());
                Some(match name {
                    "errno" if numbered => arg(0),
                    "strerror" if numbered => arg(1),
                    "filename" if numbered => arg(2),
                    "filename2" if numbered => arg(4),
                    _ => Value::None,
                })
            }
            "name" | "path" if self.kind.is_subclass_of(ExcKind::ImportError) => {
                let module = self
                    .message
                    .strip_prefix("No module named '")
                    .and_then(|m| m.split('\'').next());
                Some(match (name, module) {
                    ("name", Some(m)) => Value::str(m),
                    _ => Value::None,
                })
            }
            _ => None,
        }
    }
}

/// Python's built-in types, as values (`int`, `str`, `list`, ...): callable to
/// convert, and usable with `isinstance`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeKind {
    NoneType,
    Bool,
    Int,
    Float,
    Str,
    List,
    Tuple,
    Dict,
    Set,
    FrozenSet,
    Range,
    Function,
    Module,
    Device,
    DType,
    Generator,
    /// MXNet's legacy `mxnet.ndarray.ndarray.NDArray`.
    NDArray,
    /// MXNet's numpy-mode `mxnet.numpy.ndarray`.
    MxNumpyArray,
    /// `torch.Tensor`.
    Tensor,
    /// NumPy's `numpy.ndarray` (host arrays from `asnumpy()` / `numpy()`).
    NumpyArray,
    Object,
}

impl TypeKind {
    /// The class as `repr(type(x))` names it: `<class 'torch.Tensor'>`.
    pub fn qualified_name(self) -> &'static str {
        match self {
            TypeKind::NDArray => "mxnet.ndarray.ndarray.NDArray",
            TypeKind::MxNumpyArray => "mxnet.numpy.ndarray",
            TypeKind::Tensor => "torch.Tensor",
            TypeKind::NumpyArray => "numpy.ndarray",
            TypeKind::Device => "mxnet.context.Context",
            other => other.name(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TypeKind::NoneType => "NoneType",
            TypeKind::Bool => "bool",
            TypeKind::Int => "int",
            TypeKind::Float => "float",
            TypeKind::Str => "str",
            TypeKind::List => "list",
            TypeKind::Tuple => "tuple",
            TypeKind::Dict => "dict",
            TypeKind::Set => "set",
            TypeKind::FrozenSet => "frozenset",
            TypeKind::Range => "range",
            TypeKind::Function => "function",
            TypeKind::Module => "module",
            TypeKind::Device => "Context",
            TypeKind::DType => "dtype",
            TypeKind::Generator => "generator",
            TypeKind::NDArray => "NDArray",
            TypeKind::MxNumpyArray | TypeKind::NumpyArray => "ndarray",
            TypeKind::Tensor => "Tensor",
            TypeKind::Object => "object",
        }
    }
}

/// Objects implemented natively outside the core (context managers such as
/// `autograd.record()`, later nn layers). The interpreter reaches them only
/// through this trait.
pub trait NativeObject {
    fn type_name(&self) -> &str;
    fn repr(&self) -> String;
    fn get_attr(&self, _this: &Rc<dyn NativeObject>, _name: &str) -> Option<Value> {
        None
    }
    fn attr_names(&self) -> Vec<&'static str> {
        Vec::new()
    }
    /// `with obj:` — entering and leaving.
    fn enter(&self, _interp: &mut dyn Interpreter) -> Result<Value, Exc> {
        Err(Exc::new(
            ExcKind::TypeError,
            format!(
                "'{}' object does not support the context manager protocol",
                self.type_name()
            ),
        ))
    }
    fn exit(&self, _interp: &mut dyn Interpreter) -> Result<(), Exc> {
        Ok(())
    }
    /// What `with obj as x` binds: [`NativeObject::enter`]'s value, unless the object binds
    /// itself (an open file).
    fn enter_value(
        &self,
        _this: &Rc<dyn NativeObject>,
        interp: &mut dyn Interpreter,
    ) -> Result<Value, Exc> {
        self.enter(interp)
    }
    /// `self == other` when the object defines value equality (such as
    /// `torch.device`); None falls back to identity.
    fn equals(&self, _other: &Value) -> Option<bool> {
        None
    }
    /// `bool(obj)` when the object is false sometimes (an empty `bytes`); None is always true.
    fn truth(&self) -> Option<bool> {
        None
    }
    /// The class `type(obj)` gives, when the library defines one (`gluon.Parameter`); None is a
    /// plain object.
    /// The error for an attribute `get_attr` does not give, when it is not an AttributeError
    /// (an uninitialized PyTorch parameter's `shape`).
    fn missing_attr(&self, _name: &str) -> Option<Exc> {
        None
    }
    /// The error for this object as an operand of `op` (`+`, `-`, unary `-`, ...) when it is
    /// not the usual TypeError (an uninitialized PyTorch parameter's ValueError).
    fn operand_error(&self, _op: &str) -> Option<Exc> {
        None
    }
    fn class_value(&self) -> Option<Value> {
        None
    }
    /// `self op other`, or `other op self` when `reflected`, for an object with operators of its
    /// own (`bytes + bytes`); None when it does not define `op` for that operand.
    fn binary(
        &self,
        _op: crate::lang::ast::BinOp,
        _other: &Value,
        _reflected: bool,
    ) -> Option<Result<Value, Exc>> {
        None
    }
    /// `self < other` when the object is ordered against `other`; None: they do not compare.
    fn less(&self, _other: &Value) -> Option<bool> {
        None
    }
    /// `item in self` for a native container; None: not a container.
    fn contains(&self, _item: &Value) -> Option<Result<bool, Exc>> {
        None
    }
    /// The key a dict or set files the object under when it hashes by value; None: by identity.
    fn hash_key(&self) -> Option<HashKey> {
        None
    }
    /// The Python number the object stands for wherever one is expected (`float(x)`,
    /// `range(x)`, an index, a format spec, an array operand): NumPy's scalars. None: not a
    /// number.
    fn number(&self) -> Option<Value> {
        None
    }
    /// `self op other` (`other op self` when `reflected`) for an object whose comparisons
    /// return something other than a bool (NumPy's `numpy.bool_`); None: the usual rules.
    fn compare(
        &self,
        _op: crate::lang::ast::CmpOp,
        _other: &Value,
        _reflected: bool,
    ) -> Option<Result<Value, Exc>> {
        None
    }
    /// `-self`, `+self`, `~self`, `abs(self)` for an object with arithmetic of its own.
    fn unary(&self, _op: crate::lang::ast::UnaryOp) -> Option<Result<Value, Exc>> {
        None
    }
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Positional and keyword arguments of one call.
#[derive(Default)]
pub struct Args {
    pub pos: Vec<Value>,
    pub kw: Vec<(Rc<str>, Value)>,
    /// Name of the callee, for error messages ("ones() got an unexpected keyword argument 'x'").
    pub fname: &'static str,
}

/// The dictionary: insertion-ordered, keys hashed by their Python value.
#[derive(Default, Clone)]
pub struct Dict {
    pub entries: Vec<(Value, Value)>,
    index: HashMap<HashKey, usize>,
    /// The keys whose equality is a class's `__eq__` (`HashKey::needs_eq`), by hash: where a
    /// lookup of an equal but distinct object finds them (`object::keys`).
    by_hash: HashMap<i64, Vec<HashKey>>,
}

/// The hashable part of a key. Arrays, lists and dicts are unhashable.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HashKey {
    None,
    Int(i64),
    /// An int past i64 (a whole float past i64 too, so `2.0**70` and `2**70` are one key).
    BigInt(Rc<num_bigint::BigInt>),
    /// Floats that are not whole numbers, by bit pattern (whole floats hash as Int like Python: 1.0 == 1).
    Float(u64),
    Str(Rc<str>),
    /// A value hashed by its bytes (`bytes`).
    Bytes(Rc<[u8]>),
    Tuple(Vec<HashKey>),
    /// A frozenset (or a set looked up as one).
    FrozenSet(super::set::FrozenKey),
    Device(Device),
    Ptr(usize),
    /// An instance whose class defines `__hash__`: equal to another such key only when it is
    /// the same object; `object::keys` finds an equal one by `__eq__` before a lookup.
    Object(super::keys::ObjectKey),
}

impl HashKey {
    /// Whether finding this key takes the program's `__eq__` (it holds an `Object` key).
    pub fn needs_eq(&self) -> bool {
        match self {
            HashKey::Object(_) => true,
            HashKey::Tuple(items) => items.iter().any(HashKey::needs_eq),
            _ => false,
        }
    }
}

impl Dict {
    pub fn get(&self, key: &HashKey) -> Option<&Value> {
        self.index
            .get(key)
            .and_then(|&i| self.entries.get(i))
            .map(|(_, v)| v)
    }
    pub fn insert(&mut self, hk: HashKey, key: Value, value: Value) {
        if let Some(&i) = self.index.get(&hk) {
            if let Some(slot) = self.entries.get_mut(i) {
                slot.1 = value;
                return;
            }
        }
        if hk.needs_eq() {
            let hash = super::hash::key_hash(&hk);
            self.by_hash.entry(hash).or_default().push(hk.clone());
        }
        self.index.insert(hk, self.entries.len());
        self.entries.push((key, value));
    }
    /// Whether some key's equality is a class's `__eq__`.
    pub fn has_object_keys(&self) -> bool {
        !self.by_hash.is_empty()
    }
    /// The keys and values filed under `hash` whose equality is a class's `__eq__`.
    pub fn same_hash(&self, hash: i64) -> Vec<(HashKey, Value)> {
        let Some(keys) = self.by_hash.get(&hash) else {
            return Vec::new();
        };
        keys.iter()
            .filter_map(|k| {
                let i = *self.index.get(k)?;
                Some((k.clone(), self.entries.get(i)?.0.clone()))
            })
            .collect()
    }
    pub fn remove(&mut self, hk: &HashKey) -> Option<Value> {
        let i = self.index.remove(hk)?;
        if hk.needs_eq() {
            let hash = super::hash::key_hash(hk);
            if let Some(keys) = self.by_hash.get_mut(&hash) {
                keys.retain(|k| k != hk);
                if keys.is_empty() {
                    self.by_hash.remove(&hash);
                }
            }
        }
        let (_, v) = self.entries.remove(i);
        for idx in self.index.values_mut() {
            if *idx > i {
                *idx -= 1;
            }
        }
        Some(v)
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[derive(Clone)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An int that does not fit an i64 (never one that does: `bigint::int_value` normalises).
    BigInt(Rc<num_bigint::BigInt>),
    Float(f64),
    Str(Rc<str>),
    List(Rc<RefCell<Vec<Value>>>),
    Tuple(Rc<Vec<Value>>),
    Dict(Rc<RefCell<Dict>>),
    /// A `set` or `frozenset`.
    Set(Rc<super::set::SetObj>),
    Range(i64, i64, i64),
    Array(ArrayValue),
    Device(Device),
    DType(DType, Flavor),
    Func(Rc<Function>),
    Builtin(Rc<Builtin>),
    Module(Rc<Module>),
    Type(TypeKind),
    ExcType(ExcKind),
    Exception(Rc<ExcValue>),
    Object(Rc<dyn NativeObject>),
    /// A class made by a `class` statement.
    Class(Rc<Class>),
    /// An instance of a user class.
    Instance(Rc<Instance>),
    /// A function bound to its first argument.
    Method(Rc<BoundMethod>),
    /// A suspended generator function call.
    Generator(Rc<Generator>),
}

/// A generator: the call of a function whose body has `yield`, suspended between items. The
/// interpreter owns what its state means (`crate::eval::generator`); here it is opaque.
pub struct Generator {
    pub name: Ident,
    /// The suspended execution; None while it runs (a re-entrant `next` is an error) and once
    /// it has finished.
    pub state: RefCell<Option<Box<dyn std::any::Any>>>,
    /// Set once the body has returned or raised: every later `next` is StopIteration.
    pub finished: std::cell::Cell<bool>,
}

/// A generator dropped while suspended is closed as CPython closes it: its execution is queued
/// for the interpreter (`super::finalize`), which runs its `finally` blocks and `__exit__`s.
impl Drop for Generator {
    fn drop(&mut self) {
        if self.finished.get() {
            return;
        }
        if let Some(state) = self.state.get_mut().take() {
            super::finalize::defer(super::finalize::Dropped {
                name: self.name.clone(),
                addr: self as *const Generator as usize,
                state,
            });
        }
    }
}

/// What resuming a generator does at the `yield` it is suspended at.
pub enum GenAction {
    /// `next(g)` (None) or `g.send(v)`: the `yield` evaluates to the value.
    Send(Value),
    /// `g.throw(e)`: the `yield` raises it. (Boxed: what a resume passes stays small.)
    Throw(Box<super::error::Exc>),
    /// `g.close()`: the `yield` raises GeneratorExit; a generator that yields again is an error.
    Close,
}

/// How a resumed generator stopped.
pub enum GenStep {
    Yield(Value),
    /// The body returned (`return v`, or its end: None); for `close`, it is closed.
    Return(Value),
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}>", self.type_name())
    }
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(Rc::from(s))
    }
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(RefCell::new(items)))
    }
    pub fn tuple(items: Vec<Value>) -> Value {
        Value::Tuple(Rc::new(items))
    }

    /// The type's name as Python spells it, for error messages.
    pub fn type_name(&self) -> String {
        match self {
            Value::None => "NoneType".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) | Value::BigInt(_) => "int".into(),
            Value::Float(_) => "float".into(),
            Value::Str(_) => "str".into(),
            Value::List(_) => "list".into(),
            Value::Tuple(_) => "tuple".into(),
            Value::Dict(_) => "dict".into(),
            Value::Set(s) => s.type_name().into(),
            Value::Range(..) => "range".into(),
            Value::Array(a) => match a.flavor {
                Flavor::Nd => "NDArray".into(),
                Flavor::Np | Flavor::Numpy => "ndarray".into(),
                Flavor::Torch => "Tensor".into(),
            },
            Value::Device(_) => "Context".into(),
            Value::DType(..) => "dtype".into(),
            Value::Func(_) => "function".into(),
            Value::Builtin(b) => match b.kind {
                BuiltinKind::Free(_) | BuiltinKind::Unbound(_) => "builtin_function".into(),
                BuiltinKind::Method { .. } => "method".into(),
            },
            Value::Module(_) => "module".into(),
            Value::Type(_) | Value::ExcType(_) => "type".into(),
            Value::Exception(e) => e.kind.name().into(),
            Value::Object(o) => o.type_name().to_string(),
            Value::Class(_) => "type".into(),
            Value::Instance(i) => i.class().name.to_string(),
            Value::Method(_) => "method".into(),
            Value::Generator(_) => "generator".into(),
        }
    }

    /// Python truthiness. Arrays of one element convert; larger ones are ambiguous.
    pub fn truthy(&self) -> Result<bool, Exc> {
        Ok(match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::BigInt(_) => true,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.borrow().is_empty(),
            Value::Tuple(t) => !t.is_empty(),
            Value::Dict(d) => !d.borrow().is_empty(),
            Value::Set(s) => !s.table.borrow().is_empty(),
            Value::Range(start, stop, step) => range_len(*start, *stop, *step) > 0,
            Value::Array(a) => {
                if a.array.size() != 1 {
                    return Err(Exc::new(
                        ExcKind::ValueError,
                        format!(
                            "the truth value of an array with {} elements is ambiguous; use a.any() or a.all()",
                            a.array.size()
                        ),
                    ));
                }
                match a.array.to_scalar("bool").map_err(Exc::from)? {
                    crate::runtime::Scalar::Bool(b) => b,
                    crate::runtime::Scalar::Int(i) => i != 0,
                    crate::runtime::Scalar::Float(f) => f != 0.0,
                }
            }
            Value::Object(o) => o.truth().unwrap_or(true),
            _ => true,
        })
    }

    /// The key for dicts and `in` on dicts; None for unhashable values. Tuples nest under the
    /// recursion guard (`RecursionError` past its limit).
    pub fn hash_key(&self) -> Result<Option<HashKey>, Exc> {
        Ok(Some(match self {
            Value::None => HashKey::None,
            Value::Bool(b) => HashKey::Int(*b as i64),
            Value::Int(i) => HashKey::Int(*i),
            Value::BigInt(n) => HashKey::BigInt(n.clone()),
            Value::Float(f) => {
                if f.fract() == 0.0 && f.abs() < 9.2e18 {
                    HashKey::Int(*f as i64)
                } else if f.fract() == 0.0 && f.is_finite() {
                    match &super::bigint::from_float(*f) {
                        Ok(Value::BigInt(n)) => HashKey::BigInt(n.clone()),
                        Ok(Value::Int(i)) => HashKey::Int(*i),
                        _ => HashKey::Float(f.to_bits()),
                    }
                } else {
                    HashKey::Float(f.to_bits())
                }
            }
            Value::Str(s) => HashKey::Str(s.clone()),
            Value::Tuple(t) => {
                let items = super::guard::nest(super::guard::Walk::Hash, || {
                    let mut keys = Vec::with_capacity(t.len());
                    for v in t.iter() {
                        match v.hash_key()? {
                            Some(k) => keys.push(k),
                            None => return Ok(None),
                        }
                    }
                    Ok(Some(keys))
                })?;
                match items {
                    Some(keys) => HashKey::Tuple(keys),
                    None => return Ok(None),
                }
            }
            Value::Device(d) => HashKey::Device(*d),
            // By its items, as CPython's (`range(0)` and `range(5, 5)` are one key).
            Value::Range(..) => match super::big_range::BigRange::of(self) {
                Some(r) => r.hash_key().unwrap_or(HashKey::Ptr(self.identity())),
                None => HashKey::Ptr(self.identity()),
            },
            Value::Object(o) => match o.hash_key() {
                Some(k) => k,
                None => HashKey::Ptr(self.identity()),
            },
            Value::Set(s) if s.frozen => super::set::frozen_key(s),
            Value::List(_) | Value::Dict(_) | Value::Set(_) | Value::Array(_) => return Ok(None),
            // Keyed by its class's `__hash__` when that ran (`object::keys`), or unhashable.
            Value::Instance(i) if i.remembered_hash().is_some() => {
                HashKey::Object(super::keys::ObjectKey {
                    hash: i.remembered_hash().unwrap_or_default(),
                    value: self.clone(),
                })
            }
            Value::Instance(i) if matches!(i.class().lookup("__hash__"), Some(Value::None)) => {
                return Ok(None)
            }
            // A tuple subclass (a namedtuple) hashes as its tuple, as CPython's tuple.__hash__
            // does, unless the class defines __hash__ in Python.
            Value::Instance(i)
                if matches!(&*i.base_state.borrow(), Value::Tuple(_))
                    && !matches!(i.class().lookup("__hash__"), Some(Value::Func(_))) =>
            {
                let t = i.base_state.borrow().clone();
                return t.hash_key();
            }
            other => HashKey::Ptr(other.identity()),
        }))
    }

    /// A number identifying the object, for `is` and `id()`. Values without
    /// identity (ints, floats) use their value.
    pub fn identity(&self) -> usize {
        match self {
            Value::None => 0,
            Value::Bool(b) => 1 + *b as usize,
            Value::Int(i) => *i as usize,
            Value::BigInt(n) => Rc::as_ptr(n) as usize,
            Value::Float(f) => f.to_bits() as usize,
            Value::Str(s) => Rc::as_ptr(s) as *const u8 as usize,
            Value::List(l) => Rc::as_ptr(l) as *const u8 as usize,
            Value::Tuple(t) => Rc::as_ptr(t) as *const u8 as usize,
            Value::Dict(d) => Rc::as_ptr(d) as *const u8 as usize,
            Value::Set(s) => Rc::as_ptr(s) as *const u8 as usize,
            Value::Range(a, b, c) => (*a as usize) ^ (*b as usize).rotate_left(21) ^ (*c as usize),
            Value::Array(a) => a.array.id(),
            Value::Device(d) => 3 + d.id * 2 + (d.kind == crate::runtime::DeviceKind::Gpu) as usize,
            Value::DType(d, _) => *d as usize,
            Value::Func(f) => Rc::as_ptr(f) as *const u8 as usize,
            Value::Builtin(b) => Rc::as_ptr(b) as *const u8 as usize,
            Value::Module(m) => Rc::as_ptr(m) as *const u8 as usize,
            Value::Type(t) => *t as usize,
            Value::ExcType(k) => *k as usize + 1000,
            Value::Exception(e) => Rc::as_ptr(e) as *const u8 as usize,
            Value::Object(o) => Rc::as_ptr(o) as *const u8 as usize,
            Value::Class(c) => Rc::as_ptr(c) as *const u8 as usize,
            Value::Instance(i) => Rc::as_ptr(i) as *const u8 as usize,
            Value::Method(m) => Rc::as_ptr(m) as *const u8 as usize,
            Value::Generator(g) => Rc::as_ptr(g) as *const u8 as usize,
        }
    }

    /// `a is b`.
    pub fn is(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::None, Value::None) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            (Value::Str(a), Value::Str(b)) => Rc::ptr_eq(a, b) || (a.len() <= 1 && a == b),
            (Value::Array(a), Value::Array(b)) => a.array.same(&b.array),
            (Value::Device(a), Value::Device(b)) => a == b,
            (Value::DType(a, _), Value::DType(b, _)) => a == b,
            (Value::Type(a), Value::Type(b)) => a == b,
            (Value::ExcType(a), Value::ExcType(b)) => a == b,
            (Value::Range(..), Value::Range(..)) => false,
            // A built-in exception is remade as a value each time it is read (`except E as e`,
            // `__context__`, `sys.exc_info()`); once caught it has a serial, which is who it is.
            (Value::Exception(a), Value::Exception(b)) => {
                Rc::ptr_eq(a, b)
                    || match (&a.links, &b.links) {
                        (Some(x), Some(y)) => x.serial != 0 && x.serial == y.serial,
                        _ => false,
                    }
            }
            (a, b) => {
                std::mem::discriminant(a) == std::mem::discriminant(b)
                    && a.identity() == b.identity()
            }
        }
    }

    pub fn as_array(&self) -> Option<&ArrayValue> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// Number of elements of `range(start, stop, step)`.
pub fn range_len(start: i64, stop: i64, step: i64) -> i64 {
    if step > 0 && start < stop {
        ((stop as i128 - start as i128 + step as i128 - 1) / step as i128) as i64
    } else if step < 0 && start > stop {
        ((start as i128 - stop as i128 - step as i128 - 1) / (-(step as i128))) as i64
    } else {
        0
    }
}

impl Args {
    /// Positional arguments only, for calls the interpreter makes itself (special methods).
    pub fn positional(pos: Vec<Value>) -> Args {
        Args {
            pos,
            ..Args::default()
        }
    }

    pub fn new(fname: &'static str, pos: Vec<Value>) -> Args {
        Args {
            pos,
            kw: Vec::new(),
            fname,
        }
    }

    /// An optional yes/no argument (`endpoint=True`), by position or keyword, read by truth.
    pub fn flag(&mut self, index: usize, name: &str, default: bool) -> Result<bool, Exc> {
        Ok(match self.take(index, name)? {
            Some(v) => v.truthy()?,
            None => default,
        })
    }

    /// Take the argument named `name` that may also be given at position
    /// `index` (None when absent). A value given both ways is an error.
    pub fn take(&mut self, index: usize, name: &str) -> Result<Option<Value>, Exc> {
        let kw = self
            .kw
            .iter()
            .position(|(k, _)| &**k == name)
            .map(|i| self.kw.remove(i).1);
        let pos = self
            .pos
            .get_mut(index)
            .map(|v| std::mem::replace(v, Value::None));
        match (pos, kw) {
            (Some(_), Some(_)) => Err(Exc::new(
                ExcKind::TypeError,
                format!(
                    "{}() got multiple values for argument '{}'",
                    self.fname, name
                ),
            )),
            (Some(v), None) | (None, Some(v)) => Ok(Some(v)),
            (None, None) => Ok(None),
        }
    }

    /// Like `take`, but the argument must be there.
    pub fn required(&mut self, index: usize, name: &str) -> Result<Value, Exc> {
        self.take(index, name)?.ok_or_else(|| {
            Exc::new(
                ExcKind::TypeError,
                format!("{}() missing required argument '{}'", self.fname, name),
            )
        })
    }

    /// Take a keyword-only argument.
    pub fn take_kw(&mut self, name: &str) -> Option<Value> {
        self.kw
            .iter()
            .position(|(k, _)| &**k == name)
            .map(|i| self.kw.remove(i).1)
    }

    /// After taking everything known: reject extra positional or unknown
    /// keyword arguments. `max_pos` is how many positional arguments the
    /// callee accepts.
    pub fn finish(&self, max_pos: usize) -> Result<(), Exc> {
        if self.pos.len() > max_pos {
            return Err(Exc::new(
                ExcKind::TypeError,
                format!(
                    "{}() takes {} positional argument{} but {} were given",
                    self.fname,
                    max_pos,
                    if max_pos == 1 { "" } else { "s" },
                    self.pos.len()
                ),
            ));
        }
        if let Some((k, _)) = self.kw.first() {
            return Err(Exc::new(
                ExcKind::TypeError,
                format!(
                    "{}() got an unexpected keyword argument '{}'",
                    self.fname, k
                ),
            ));
        }
        Ok(())
    }
}

/// Dropping a value frees what only it holds; nested containers are freed from a heap stack
/// (`guard::drop_nested`), so a list 200,000 levels deep cannot overflow the native stack.
impl Drop for Value {
    #[inline]
    fn drop(&mut self) {
        if super::guard::owns_nested(self) {
            super::guard::drop_nested(self);
        }
    }
}
