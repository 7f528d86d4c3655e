//! Exceptions: the class hierarchy the language shows, and `Exc`, the error
//! that unwinds through the interpreter carrying where it was raised.

use std::rc::Rc;

use crate::lang::Span;
use crate::runtime::RuntimeError;

/// The built-in exception classes. `parent` gives the hierarchy, so that
/// `except MXNetError` catches a `DeviceError` and `except Exception` catches
/// everything but `KeyboardInterrupt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExcKind {
    BaseException,
    Exception,
    KeyboardInterrupt,
    SystemExit,
    GeneratorExit,
    ArithmeticError,
    ZeroDivisionError,
    OverflowError,
    FloatingPointError,
    LookupError,
    IndexError,
    KeyError,
    TypeError,
    ValueError,
    NameError,
    /// A function's local read before it is bound.
    UnboundLocalError,
    AttributeError,
    RuntimeError,
    RecursionError,
    NotImplementedError,
    ImportError,
    ModuleNotFoundError,
    AssertionError,
    StopIteration,
    SyntaxError,
    OSError,
    FileNotFoundError,
    MemoryError,
    /// MXNet's error class; every runtime error is one of these.
    MXNetError,
    DeviceError,
    ShapeError,
    OutOfMemoryError,
    /// MXNet's `mxnet.base.NotImplementedForSymbol` (an NDArray-only function on a Symbol).
    NotImplementedForSymbol,
    /// NumPy's `numpy.AxisError` (a ValueError and an IndexError there; a ValueError here).
    AxisError,
    /// NumPy's `numpy.linalg.LinAlgError`.
    LinAlgError,
    /// `input()` at end of input.
    EOFError,
}

impl ExcKind {
    pub const ALL: [ExcKind; 36] = [
        ExcKind::BaseException,
        ExcKind::Exception,
        ExcKind::KeyboardInterrupt,
        ExcKind::SystemExit,
        ExcKind::GeneratorExit,
        ExcKind::ArithmeticError,
        ExcKind::ZeroDivisionError,
        ExcKind::OverflowError,
        ExcKind::FloatingPointError,
        ExcKind::LookupError,
        ExcKind::IndexError,
        ExcKind::KeyError,
        ExcKind::TypeError,
        ExcKind::ValueError,
        ExcKind::NameError,
        ExcKind::UnboundLocalError,
        ExcKind::AttributeError,
        ExcKind::RuntimeError,
        ExcKind::RecursionError,
        ExcKind::NotImplementedError,
        ExcKind::ImportError,
        ExcKind::ModuleNotFoundError,
        ExcKind::AssertionError,
        ExcKind::StopIteration,
        ExcKind::SyntaxError,
        ExcKind::OSError,
        ExcKind::FileNotFoundError,
        ExcKind::MemoryError,
        ExcKind::MXNetError,
        ExcKind::DeviceError,
        ExcKind::ShapeError,
        ExcKind::OutOfMemoryError,
        ExcKind::NotImplementedForSymbol,
        ExcKind::AxisError,
        ExcKind::LinAlgError,
        ExcKind::EOFError,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ExcKind::BaseException => "BaseException",
            ExcKind::Exception => "Exception",
            ExcKind::KeyboardInterrupt => "KeyboardInterrupt",
            ExcKind::SystemExit => "SystemExit",
            ExcKind::GeneratorExit => "GeneratorExit",
            ExcKind::ArithmeticError => "ArithmeticError",
            ExcKind::ZeroDivisionError => "ZeroDivisionError",
            ExcKind::OverflowError => "OverflowError",
            ExcKind::FloatingPointError => "FloatingPointError",
            ExcKind::LookupError => "LookupError",
            ExcKind::IndexError => "IndexError",
            ExcKind::KeyError => "KeyError",
            ExcKind::TypeError => "TypeError",
            ExcKind::ValueError => "ValueError",
            ExcKind::NameError => "NameError",
            ExcKind::UnboundLocalError => "UnboundLocalError",
            ExcKind::AttributeError => "AttributeError",
            ExcKind::RuntimeError => "RuntimeError",
            ExcKind::RecursionError => "RecursionError",
            ExcKind::NotImplementedError => "NotImplementedError",
            ExcKind::ImportError => "ImportError",
            ExcKind::ModuleNotFoundError => "ModuleNotFoundError",
            ExcKind::AssertionError => "AssertionError",
            ExcKind::StopIteration => "StopIteration",
            ExcKind::SyntaxError => "SyntaxError",
            ExcKind::OSError => "OSError",
            ExcKind::FileNotFoundError => "FileNotFoundError",
            ExcKind::MemoryError => "MemoryError",
            ExcKind::MXNetError => "MXNetError",
            ExcKind::DeviceError => "DeviceError",
            ExcKind::ShapeError => "ShapeError",
            ExcKind::OutOfMemoryError => "OutOfMemoryError",
            ExcKind::NotImplementedForSymbol => "NotImplementedForSymbol",
            ExcKind::AxisError => "AxisError",
            ExcKind::LinAlgError => "LinAlgError",
            ExcKind::EOFError => "EOFError",
        }
    }

    pub fn from_name(name: &str) -> Option<ExcKind> {
        ExcKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    pub fn parent(self) -> Option<ExcKind> {
        use ExcKind::*;
        Some(match self {
            BaseException => return None,
            Exception | KeyboardInterrupt | SystemExit | GeneratorExit => BaseException,
            ZeroDivisionError | OverflowError | FloatingPointError => ArithmeticError,
            IndexError | KeyError => LookupError,
            RecursionError | NotImplementedError => RuntimeError,
            ModuleNotFoundError => ImportError,
            UnboundLocalError => NameError,
            FileNotFoundError => OSError,
            DeviceError | ShapeError | OutOfMemoryError | NotImplementedForSymbol => MXNetError,
            AxisError | LinAlgError => ValueError,
            _ => Exception,
        })
    }

    /// True when `self` is `other` or derives from it.
    pub fn is_subclass_of(self, other: ExcKind) -> bool {
        let mut k = Some(self);
        while let Some(c) = k {
            if c == other {
                return true;
            }
            k = c.parent();
        }
        false
    }
}

/// One call level of a traceback: the function's name, the source its body
/// came from, and the span of the call or statement being run there.
#[derive(Debug, Clone)]
pub struct Frame {
    pub function: Rc<str>,
    pub source: Rc<str>,
    pub span: Span,
}

/// An exception in flight.
#[derive(Debug, Clone)]
pub struct Exc {
    pub kind: ExcKind,
    pub message: String,
    /// Where it was raised, once known (filled in by the interpreter as the
    /// error passes the innermost expression that has a span).
    pub span: Option<Span>,
    /// The source `span` points into.
    pub source: Option<Rc<str>>,
    /// Calls it unwound through, outermost first (filled while unwinding).
    pub frames: Vec<Frame>,
    /// The instance raised, for an exception of a user class (`class MyError(ValueError)`):
    /// `kind` is then its nearest built-in base, so `except ValueError` catches it.
    pub instance: Option<std::rc::Rc<super::class::Instance>>,
    /// The arguments of a built-in exception a program made (`raise KeyError('a', 1)`), or of a
    /// missing key (`Exc::key_error`); None: `args` is the message.
    pub args: Option<Rc<Vec<super::value::Value>>>,
    /// `__context__`, `__cause__` and who it is; None for most (boxed: an `Exc` travels in
    /// every `Result`).
    pub links: Option<Box<ExcLinks>>,
}

/// The "Did you mean" of a NameError or AttributeError the interpreter raised.
#[derive(Debug, Clone)]
pub enum Suggestion {
    /// The nearest name, found when the error was raised.
    Found(Rc<str>),
    /// An attribute `obj` lacks: searched in `dir(obj)` only if the traceback is printed (a
    /// program that catches it, `hasattr`'s way, pays nothing).
    Attribute {
        obj: super::value::Value,
        name: Rc<str>,
    },
}

/// How an exception is chained to others (PEP 3134), and which one it is.
#[derive(Debug, Clone, Default)]
pub struct ExcLinks {
    /// The exception being handled when this one was raised (`__context__`).
    pub context: Option<Rc<Exc>>,
    /// `raise X from Y`: Y (`__cause__`; None after `from None`).
    pub cause: Option<Rc<Exc>>,
    /// Set by `raise ... from`: the report shows the cause, not the context.
    pub suppress_context: bool,
    /// Which exception this is, once an `except` clause caught it (0: none yet): a bare
    /// `raise` or `raise e` of it is the same exception, never chained to itself.
    pub serial: u64,
    /// Where it had been when an `except` clause caught it, outermost frame first
    /// (`__traceback__`; a later `raise e` or `raise X from e` shows it again).
    pub trace: Option<Rc<[Frame]>>,
    /// What a printed traceback adds after the message ("Did you mean: 'print'?"), as CPython
    /// 3.11's excepthook does; `str(e)` never shows it.
    pub suggestion: Option<Suggestion>,
}

/// `e.__context__`, `e.__cause__`, `e.__suppress_context__` or `e.__traceback__` from its
/// links.
pub fn link_attr(links: Option<&ExcLinks>, name: &str) -> super::value::Value {
    use super::value::Value;
    let linked = |e: &Option<Rc<Exc>>| e.as_deref().map_or(Value::None, value_of);
    match (links, name) {
        (None, "__suppress_context__") => Value::Bool(false),
        (None, _) => Value::None,
        (_, "__traceback__") => super::traceback::traceback_value(links),
        (Some(l), "__context__") => linked(&l.context),
        (Some(l), "__cause__") => linked(&l.cause),
        (Some(l), _) => Value::Bool(l.suppress_context),
    }
}

/// The exception as a value (`except E as e`): its instance of a user class, or a built-in
/// exception value; either carries its links.
pub fn value_of(exc: &Exc) -> super::value::Value {
    use super::value::{ExcValue, Value};
    match &exc.instance {
        Some(instance) => {
            if exc.links.is_some() {
                *instance.exc_links.borrow_mut() = exc.links.clone();
            }
            Value::Instance(instance.clone())
        }
        None => Value::Exception(Rc::new(ExcValue {
            kind: exc.kind,
            message: exc.message.clone(),
            args: exc.args.clone(),
            links: exc.links.clone(),
        })),
    }
}

thread_local! {
    static SERIAL: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A new exception identity (`ExcLinks::serial`).
pub fn fresh_serial() -> u64 {
    SERIAL.with(|s| {
        s.set(s.get() + 1);
        s.get()
    })
}

impl Exc {
    pub fn new(kind: ExcKind, message: impl Into<String>) -> Exc {
        Exc {
            kind,
            message: message.into(),
            span: None,
            source: None,
            frames: Vec::new(),
            instance: None,
            args: None,
            links: None,
        }
    }

    /// With a "Did you mean" for its printed traceback.
    pub fn suggesting(mut self, suggestion: Suggestion) -> Exc {
        self.links_mut().suggestion = Some(suggestion);
        self
    }

    /// Its "Did you mean", if it has one.
    pub fn suggestion(&self) -> Option<&Suggestion> {
        self.links.as_ref()?.suggestion.as_ref()
    }

    /// Its links, made when first needed.
    pub fn links_mut(&mut self) -> &mut ExcLinks {
        self.links.get_or_insert_with(Box::default)
    }

    /// Gives it an identity (once), as an `except` clause catches it.
    pub fn mark_caught(&mut self) -> u64 {
        let links = self.links_mut();
        if links.serial == 0 {
            links.serial = fresh_serial();
        }
        links.serial
    }

    /// Whether `self` is `other` (a re-raise): the same caught exception or instance.
    pub fn is_same(&self, other: &Exc) -> bool {
        if let (Some(a), Some(b)) = (&self.instance, &other.instance) {
            return Rc::ptr_eq(a, b);
        }
        let serial = |e: &Exc| e.links.as_ref().map_or(0, |l| l.serial);
        serial(self) != 0 && serial(self) == serial(other)
    }

    /// Records `handled` as its `__context__` (PEP 3134): it was raised while `handled` was
    /// being handled. An exception that has one keeps it, and one is never its own.
    pub fn chain_to(&mut self, handled: &Exc) {
        if self.is_same(handled) || self.links.as_ref().is_some_and(|l| l.context.is_some()) {
            return;
        }
        self.links_mut().context = Some(Rc::new(handled.clone()));
    }

    /// `KeyError: 'k'`: the message shows the key's repr and `e.args` holds the key itself.
    pub fn key_error(
        it: &mut dyn super::interpreter::Interpreter,
        key: &super::value::Value,
    ) -> Exc {
        let message = super::format::repr(it, key).unwrap_or_else(|e| e.message);
        let mut x = Exc::new(ExcKind::KeyError, message);
        x.args = Some(Rc::new(vec![key.clone()]));
        x
    }

    /// `StopIteration` carrying what a generator returned: `StopIteration: 5` when shown, and
    /// `e.value` (its first argument).
    pub fn stop_iteration(value: super::value::Value, message: String) -> Exc {
        let mut e = Exc::new(ExcKind::StopIteration, message);
        if !matches!(value, super::value::Value::None) {
            e.args = Some(Rc::new(vec![value]));
        }
        e
    }

    /// What a generator returned, carried by its StopIteration (None: it returned None).
    pub fn stop_value(&self) -> Option<super::value::Value> {
        self.args.as_ref().and_then(|a| a.first().cloned())
    }

    /// The class name shown for it: the user class's, else the built-in one's.
    pub fn class_name(&self) -> String {
        match &self.instance {
            // CPython qualifies a class from another module: `json.decoder.JSONDecodeError`.
            Some(i) if !matches!(&*i.class().module, "__main__" | "builtins") => {
                format!("{}.{}", i.class().module, i.class().qualname)
            }
            Some(i) => i.class().name.to_string(),
            None => self.kind.name().to_string(),
        }
    }

    pub fn type_error(message: impl Into<String>) -> Exc {
        Exc::new(ExcKind::TypeError, message)
    }

    pub fn value_error(message: impl Into<String>) -> Exc {
        Exc::new(ExcKind::ValueError, message)
    }

    /// Attach a location if none is set yet: the innermost span wins.
    pub fn at(mut self, span: Span, source: &Rc<str>) -> Exc {
        if self.span.is_none() {
            self.span = Some(span);
            self.source = Some(source.clone());
        }
        self
    }
}

impl From<RuntimeError> for Exc {
    fn from(e: RuntimeError) -> Exc {
        let kind = ExcKind::from_name(e.ename()).unwrap_or(ExcKind::MXNetError);
        Exc::new(kind, e.to_string())
    }
}

/// A runtime error in PyTorch's words: devices spelled `cpu` / `cuda:1` (as `tensor.device`
/// prints them), and the way out spelled with `.to()`.
pub fn torch_error(e: RuntimeError) -> Exc {
    let text = |d: crate::runtime::Device| match d.kind {
        crate::runtime::DeviceKind::Cpu => "cpu".to_string(),
        crate::runtime::DeviceKind::Gpu => format!("cuda:{}", d.id),
    };
    match &e {
        RuntimeError::DeviceMismatch { op, first, second } => {
            let (first, second) = (text(*first), text(*second));
            Exc::new(
                ExcKind::from_name(e.ename()).unwrap_or(ExcKind::RuntimeError),
                format!(
                    "{op}: tensors are on different devices: the first is on {first}, the second on {second}. Move one explicitly, e.g. x.to('{second}') or y.to('{first}')"
                ),
            )
        }
        _ => Exc::from(e),
    }
}

/// A refused PyTorch in-place op (`x.add_(1)`, `x += 1`, `x[0] = 1`) in PyTorch's words.
pub fn inplace_exc(e: crate::nn::autograd::InplaceError) -> Exc {
    use crate::nn::autograd::{InplaceError, LEAF_INPLACE};
    match e {
        InplaceError::Leaf => Exc::new(ExcKind::RuntimeError, LEAF_INPLACE),
        InplaceError::Mismatch(message) => Exc::new(ExcKind::RuntimeError, message),
        InplaceError::Runtime(e) => torch_error(e),
    }
}
