//! The object model every layer above the runtime shares: [`value::Value`] and its arguments,
//! exceptions, operators and indexing, repr/str/format, the session state and output protocol,
//! and the [`interpreter::Interpreter`] trait through which built-ins call back into the
//! interpreter. CPython keeps the same split between `Objects/` and `Python/`.
//!
//! - `value.rs` — the `Value` enum and argument binding (`Args`);
//! - `class.rs` — user classes, instances, bound methods, `super`, property/static/class methods;
//! - `error.rs` — `Exc`, the exception classes and their hierarchy;
//! - `ops.rs` — operators and indexing (arrays are sent to the runtime);
//! - `format.rs` — repr/str/format;
//! - `set.rs` — `set` and `frozenset`, CPython's hash table re-done for its iteration order;
//! - `pretty.rs` — the display form of a result, IPython's pretty printer ported;
//! - `globals.rs` — the global scope as slots that name nodes cache;
//! - `hash.rs` — CPython's hash values for numbers, tuples and frozensets;
//! - `keys.rs` — dict keys and set members through a class's `__hash__` and `__eq__`;
//! - `make_class.rs` — a class from its name, bases and namespace (`class`, `type(n, b, d)`);
//! - `suggest.rs` — the "Did you mean" of NameError and AttributeError tracebacks;
//! - `guard.rs` — the one recursion guard for walks over values (compare, hash, repr, copy, drop);
//! - `stack.rs` — native stack growth, and the pooled stacks generators run on;
//! - `alloc.rs` — allocation that can fail (MemoryError) for user-sized strings and lists;
//! - `state.rs` — what a session keeps between evals, scopes, the interrupt handle;
//! - `output.rs` — the output sink a frontend supplies;
//! - `interpreter.rs` — the `Interpreter` trait and the registration API (`builtin`, `method`).
pub mod alloc;
pub mod big_range;
pub mod bigint;
pub mod class;
pub mod error;
pub mod finalize;
pub mod format;
pub mod generic_alias;
pub mod globals;
pub mod guard;
pub mod hash;
pub mod interpreter;
pub mod keys;
pub mod make_class;
pub mod ops;
pub mod output;
pub mod pretty;
pub mod set;
pub mod stack;
pub mod state;
pub mod suggest;
pub mod traceback;
pub mod value;

pub use error::{Exc, ExcKind};
pub use interpreter::{builtin, hash_key, method, unbound_method, Interpreter};
pub use output::{DisplayData, OutputSink, ProgressState, StdinReply, StdinRequest};
pub use state::{Env, InterruptHandle, NameMap, NameSet, Scope, State, Vars};
pub use value::{Args, Value};
