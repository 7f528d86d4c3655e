//! MXNet's symbolic graphs: `mx.sym` (`var`, arithmetic, the operators the Gluon layers use),
//! the `F` a hybridized block's `hybrid_forward` receives, MXNet 1.9.1's JSON (`tojson`,
//! `export`, `sym.load`), and the compiled plan a hybridized block runs on each later call.
//!
//! A `Symbol` is a node of a graph: a variable (the input `data`, a parameter, or a free
//! `sym.var`) or an operator applied to other nodes. Tracing a block (`trace_block`) calls its
//! forward once with `data` symbols, named as MXNet names them (the block's prefix and a
//! counter per operator); `Plan::compile` orders the graph once and `Plan::run` evaluates it
//! with the runtime ops of the imperative layers (the same functions, so the same bits, and
//! recorded on the autograd tape like them), with no interpreter in between. The graph holds no
//! shapes: like MXNet's cached graph it serves every input shape, dtype and training mode, and
//! deferred parameter shapes are inferred on the first run.
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::modules::array::blocks::{self, Core};
pub use crate::modules::array::graph::{run_plan, Op, Plan};
use crate::modules::array::graph::{topo, Node};
use crate::nn::cnn::{
    BatchNormLayer, ConvLayer, ConvPad, DropoutLayer, LayerOp, PadMode, Pool1dLayer, PoolLayer,
    PoolSpan, Style,
};
use crate::nn::layers::{Activation, Block, BlockKind, Init, Parameter};
use crate::object::class::{Class, Instance};
use crate::object::error::{Exc, ExcKind};
use crate::object::ops::wrap;
use crate::object::value::{Args, Flavor, Module, NativeObject, Value};
use crate::object::{builtin, Interpreter};
use crate::runtime::host::Scalar;
use crate::runtime::ops::{BinaryOp, ReduceOp, UnaryOp};

// ---- naming ---------------------------------------------------------------------------------

thread_local! {
    /// MXNet's name managers: one per block whose forward is being traced (its prefix and a
    /// counter per operator hint, fresh at each call as `with self.name_scope()` makes it), and
    /// the global one outside any block.
    static SCOPES: RefCell<Vec<(String, HashMap<String, usize>)>> = const { RefCell::new(Vec::new()) };
    static GLOBAL: RefCell<HashMap<String, usize>> = RefCell::new(HashMap::new());
    static CLASSES: RefCell<Option<(Rc<Class>, Rc<Class>)>> = const { RefCell::new(None) };
}

/// The name of a new node: `name` when given (under the block's prefix), else the hint and
/// its counter (`hybridnet0_relu0`).
fn node_name(name: Option<String>, hint: &str) -> String {
    SCOPES.with(|s| {
        let mut s = s.borrow_mut();
        let bump = |counts: &mut HashMap<String, usize>| {
            let c = counts.entry(hint.to_string()).or_insert(0);
            let n = format!("{hint}{c}");
            *c += 1;
            n
        };
        match s.last_mut() {
            Some((prefix, counts)) => format!(
                "{prefix}{}",
                match name {
                    Some(n) => n,
                    None => bump(counts),
                }
            ),
            None => name.unwrap_or_else(|| GLOBAL.with(|g| bump(&mut g.borrow_mut()))),
        }
    })
}

// ---- the Symbol class -----------------------------------------------------------------------

/// What a Symbol instance holds: its node and whether it is numpy mode's `_Symbol`.
pub struct SymState {
    pub node: Rc<Node>,
    pub np: bool,
}

impl NativeObject for SymState {
    fn type_name(&self) -> &str {
        "Symbol"
    }
    fn repr(&self) -> String {
        sym_repr(&self.node, self.np)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn sym_repr(node: &Node, np: bool) -> String {
    format!("<{} {}>", if np { "_Symbol" } else { "Symbol" }, node.name)
}

fn classes() -> (Rc<Class>, Rc<Class>) {
    CLASSES.with(|c| {
        c.borrow_mut()
            .get_or_insert_with(|| {
                let methods: Vec<(&'static str, crate::object::value::BuiltinFn)> = vec![
                    ("__repr__", sym_repr_fn),
                    ("__str__", sym_repr_fn),
                    ("__add__", |it, a| arith(it, a, BinaryOp::Add, false)),
                    ("__radd__", |it, a| arith(it, a, BinaryOp::Add, true)),
                    ("__sub__", |it, a| arith(it, a, BinaryOp::Sub, false)),
                    ("__rsub__", |it, a| arith(it, a, BinaryOp::Sub, true)),
                    ("__mul__", |it, a| arith(it, a, BinaryOp::Mul, false)),
                    ("__rmul__", |it, a| arith(it, a, BinaryOp::Mul, true)),
                    ("__truediv__", |it, a| arith(it, a, BinaryOp::Div, false)),
                    ("__rtruediv__", |it, a| arith(it, a, BinaryOp::Div, true)),
                    ("__gt__", |it, a| arith(it, a, BinaryOp::Gt, false)),
                    ("__lt__", |it, a| arith(it, a, BinaryOp::Lt, false)),
                    ("__ge__", |it, a| arith(it, a, BinaryOp::Ge, false)),
                    ("__le__", |it, a| arith(it, a, BinaryOp::Le, false)),
                    ("__neg__", sym_neg),
                    ("__bool__", |_, _| Err(not_for_symbol("__bool__ (namely operator \"bool\")"))),
                    ("__len__", |_, _| Err(not_for_symbol("__len__"))),
                    ("__getattr__", sym_getattr),
                    ("sum", |it, a| reduce_method(it, a, ReduceOp::Sum)),
                    ("mean", |it, a| reduce_method(it, a, ReduceOp::Mean)),
                    ("max", |it, a| reduce_method(it, a, ReduceOp::Max)),
                    ("min", |it, a| reduce_method(it, a, ReduceOp::Min)),
                    ("list_arguments", list_arguments),
                    ("list_outputs", list_outputs),
                    ("tojson", tojson),
                    ("save", sym_save),
                ];
                let make = |name: &str, module: &str| {
                    blocks::native_block_class(
                        name,
                        module,
                        Value::Type(crate::object::value::TypeKind::Object),
                        "Symbol is the basic building block of MXNet's symbolic graphs: a variable or an operator's output.",
                        &methods,
                    )
                };
                (
                    make("Symbol", "mxnet.symbol.symbol"),
                    make("_Symbol", "mxnet.symbol.numpy._symbol"),
                )
            })
            .clone()
    })
}

/// A Symbol value for `node`.
pub fn symbol_value(node: Rc<Node>, np: bool) -> Value {
    let (legacy, numpy) = classes();
    Value::Instance(Rc::new(Instance::new(
        if np { numpy } else { legacy },
        Value::Object(Rc::new(SymState { node, np })),
    )))
}

/// The node and mode of a Symbol value.
pub fn as_symbol(v: &Value) -> Option<(Rc<Node>, bool)> {
    if let Value::Instance(inst) = v {
        if let Value::Object(o) = &*inst.base_state.borrow() {
            if let Some(s) = o.as_any().downcast_ref::<SymState>() {
                return Some((s.node.clone(), s.np));
            }
        }
    }
    None
}

fn this_sym(a: &mut Args) -> Result<(Rc<Node>, bool), Exc> {
    let this = a.required(0, "self")?;
    a.pos.remove(0);
    as_symbol(&this).ok_or_else(|| Exc::type_error("the method needs a Symbol"))
}

/// MXNet's `NotImplementedForSymbol`.
fn not_for_symbol(what: &str) -> Exc {
    Exc::new(
        ExcKind::NotImplementedForSymbol,
        format!("Function {what} is not implemented for Symbol and only available in NDArray."),
    )
}

fn sym_repr_fn(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (node, np) = this_sym(&mut a)?;
    Ok(Value::str(&sym_repr(&node, np)))
}

/// Methods of NDArray that a Symbol has no value for.
const NDARRAY_ONLY: [&str; 12] = [
    "asnumpy",
    "asscalar",
    "item",
    "tolist",
    "wait_to_read",
    "copyto",
    "as_in_context",
    "as_in_ctx",
    "attach_grad",
    "backward",
    "grad",
    "context",
];

fn sym_getattr(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (node, np) = this_sym(&mut a)?;
    let name = match &a.required(0, "name")? {
        Value::Str(s) => s.clone(),
        _ => return Err(Exc::type_error("attribute name must be a string")),
    };
    if &*name == "name" {
        return Ok(Value::str(&node.name));
    }
    if NDARRAY_ONLY.contains(&&*name) {
        return Err(not_for_symbol(&name));
    }
    Err(Exc::new(
        ExcKind::AttributeError,
        format!(
            "'{}' object has no attribute '{name}'",
            if np { "_Symbol" } else { "Symbol" }
        ),
    ))
}

/// MXNet's operator name and name hint for an op with a scalar, per mode.
fn scalar_names(op: BinaryOp, reverse: bool, np: bool) -> Option<(&'static str, &'static str)> {
    use BinaryOp::*;
    Some(match (op, reverse, np) {
        (Add, _, false) => ("_plus_scalar", "_plusscalar"),
        (Add, _, true) => ("_npi_add_scalar", "add_scalar"),
        (Sub, false, false) => ("_minus_scalar", "_minusscalar"),
        (Sub, true, false) => ("_rminus_scalar", "_rminusscalar"),
        (Sub, false, true) => ("_npi_subtract_scalar", "subtract_scalar"),
        (Sub, true, true) => ("_npi_rsubtract_scalar", "rsubtract_scalar"),
        (Mul, _, false) => ("_mul_scalar", "_mulscalar"),
        (Mul, _, true) => ("_npi_multiply_scalar", "multiply_scalar"),
        (Div, false, false) => ("_div_scalar", "_divscalar"),
        (Div, true, false) => ("_rdiv_scalar", "_rdivscalar"),
        (Div, false, true) => ("_npi_true_divide_scalar", "true_divide_scalar"),
        (Div, true, true) => ("_npi_rtrue_divide_scalar", "rtrue_divide_scalar"),
        (Gt, _, false) => ("_greater_scalar", "_greaterscalar"),
        (Gt, _, true) => ("_npi_greater_scalar", "greater_scalar"),
        (Lt, _, false) => ("_lesser_scalar", "_lesserscalar"),
        (Lt, _, true) => ("_npi_less_scalar", "less_scalar"),
        (Ge, _, false) => ("_greater_equal_scalar", "_greaterequalscalar"),
        (Ge, _, true) => ("_npi_greater_equal_scalar", "greater_equal_scalar"),
        (Le, _, false) => ("_lesser_equal_scalar", "_lesserequalscalar"),
        (Le, _, true) => ("_npi_less_equal_scalar", "less_equal_scalar"),
        _ => return None,
    })
}

/// MXNet's operator name and name hint for an op of two symbols, per mode.
fn binary_names(op: BinaryOp, np: bool) -> Option<(&'static str, &'static str)> {
    use BinaryOp::*;
    Some(match (op, np) {
        (Add, false) => ("elemwise_add", "_plus"),
        (Add, true) => ("_npi_add", "add"),
        (Sub, false) => ("elemwise_sub", "_minus"),
        (Sub, true) => ("_npi_subtract", "subtract"),
        (Mul, false) => ("elemwise_mul", "_mul"),
        (Mul, true) => ("_npi_multiply", "multiply"),
        (Div, false) => ("elemwise_div", "_div"),
        (Div, true) => ("_npi_true_divide", "true_divide"),
        (Gt, false) => ("_greater", "_greater"),
        (Gt, true) => ("_npi_greater", "greater"),
        (Lt, false) => ("_lesser", "_lesser"),
        (Lt, true) => ("_npi_less", "less"),
        (Ge, false) => ("_greater_equal", "_greater_equal"),
        (Ge, true) => ("_npi_greater_equal", "greater_equal"),
        (Le, false) => ("_lesser_equal", "_lesser_equal"),
        (Le, true) => ("_npi_less_equal", "less_equal"),
        _ => return None,
    })
}

fn scalar_of(v: &Value) -> Option<Scalar> {
    match v {
        Value::Bool(b) => Some(Scalar::Bool(*b)),
        Value::Int(i) => Some(Scalar::Int(*i)),
        Value::Float(f) => Some(Scalar::Float(*f)),
        _ => None,
    }
}

/// MXNet's `scalar` attribute: Python's `str` of the number in legacy mode, a float in numpy
/// mode (with `is_int` beside it).
fn scalar_attrs(s: Scalar, np: bool) -> Vec<(String, String)> {
    let float = crate::object::format::float_repr;
    let text = match (s, np) {
        (Scalar::Int(i), false) => i.to_string(),
        (Scalar::Bool(b), false) => if b { "True" } else { "False" }.into(),
        (s, _) => float(s.as_f64()),
    };
    let mut out = vec![("scalar".to_string(), text)];
    if np {
        let int = !matches!(s, Scalar::Float(_));
        out.insert(
            0,
            ("is_int".into(), if int { "True" } else { "False" }.into()),
        );
    }
    out
}

fn scalar_node(
    x: Rc<Node>,
    op: BinaryOp,
    s: Scalar,
    reverse: bool,
    np: bool,
) -> Result<Rc<Node>, Exc> {
    let (json, hint) = scalar_names(op, reverse, np)
        .ok_or_else(|| Exc::type_error("this operator is not defined for a Symbol and a number"))?;
    Ok(Rc::new(Node {
        op: Op::Scalar {
            op,
            scalar: s,
            reverse,
        },
        name: node_name(None, hint),
        json_op: json.into(),
        attrs: scalar_attrs(s, np),
        inputs: vec![x],
    }))
}

fn arith(_: &mut dyn Interpreter, mut a: Args, op: BinaryOp, reverse: bool) -> Result<Value, Exc> {
    let (x, np) = this_sym(&mut a)?;
    let other = a.required(0, "other")?;
    let node = if let Some((y, _)) = as_symbol(&other) {
        let (json, hint) = binary_names(op, np)
            .ok_or_else(|| Exc::type_error("this operator is not defined for two Symbols"))?;
        let (l, r) = if reverse { (y, x) } else { (x, y) };
        Rc::new(Node {
            op: Op::Binary(op),
            name: node_name(None, hint),
            json_op: json.into(),
            attrs: Vec::new(),
            inputs: vec![l, r],
        })
    } else if let Some(s) = scalar_of(&other) {
        scalar_node(x, op, s, reverse, np)?
    } else {
        return Err(Exc::type_error(format!(
            "type {} not supported with a Symbol: use a Symbol or a number",
            other.type_name()
        )));
    };
    Ok(symbol_value(node, np))
}

/// `x.sum(axis=None, keepdims=False)` and the other reductions.
fn reduce_method(_: &mut dyn Interpreter, mut a: Args, op: ReduceOp) -> Result<Value, Exc> {
    let (x, np) = this_sym(&mut a)?;
    let axes = match &a.take(0, "axis")? {
        None | Some(Value::None) => None,
        Some(Value::Int(i)) => Some(vec![*i as isize]),
        Some(Value::Tuple(t)) => Some(
            t.iter()
                .map(|v| match v {
                    Value::Int(i) => Ok(*i as isize),
                    _ => Err(Exc::type_error("axis must be an int or a tuple of ints")),
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(_) => return Err(Exc::type_error("axis must be an int or a tuple of ints")),
    };
    let keepdims = a.flag(1, "keepdims", false)?;
    a.finish(2)?;
    let name = match op {
        ReduceOp::Sum => "sum",
        ReduceOp::Mean => "mean",
        ReduceOp::Max => "max",
        _ => "min",
    };
    let axis_text = match &axes {
        None => "None".to_string(),
        Some(v) if v.len() == 1 => v[0].to_string(),
        Some(v) => format!(
            "({})",
            v.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let node = Rc::new(Node {
        op: Op::Reduce { op, axes, keepdims },
        name: node_name(None, name),
        json_op: if np {
            format!("_np_{name}")
        } else {
            name.to_string()
        },
        attrs: vec![
            ("axis".into(), axis_text),
            (
                "keepdims".into(),
                if keepdims { "True" } else { "False" }.into(),
            ),
        ],
        inputs: vec![x],
    });
    Ok(symbol_value(node, np))
}

fn sym_neg(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (x, np) = this_sym(&mut a)?;
    let node = if np {
        unary_node(x, UnaryOp::Neg, "_npi_negative", "negative", None)
    } else {
        // Legacy MXNet negates as a product with -1.0.
        scalar_node(x, BinaryOp::Mul, Scalar::Float(-1.0), false, false)?
    };
    Ok(symbol_value(node, np))
}

fn unary_node(x: Rc<Node>, op: UnaryOp, json: &str, hint: &str, name: Option<String>) -> Rc<Node> {
    Rc::new(Node {
        op: Op::Unary(op),
        name: node_name(name, hint),
        json_op: json.into(),
        attrs: Vec::new(),
        inputs: vec![x],
    })
}

/// The graph's auxiliary states: what batch norm updates (its running mean and variance, the
/// inputs after data, gamma and beta), as MXNet's `list_auxiliary_states` has them. A fixed
/// gamma is a buffer here but an argument there.
fn aux_states(nodes: &[Rc<Node>]) -> std::collections::HashSet<*const Node> {
    nodes
        .iter()
        .filter(|n| n.json_op == "BatchNorm")
        .flat_map(|n| n.inputs.iter().skip(3).map(Rc::as_ptr))
        .collect()
}

fn list_arguments(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (node, _) = this_sym(&mut a)?;
    a.finish(0)?;
    let nodes = topo(&[node]);
    let aux = aux_states(&nodes);
    Ok(Value::list(
        nodes
            .iter()
            .filter(|n| n.is_var() && !aux.contains(&Rc::as_ptr(n)))
            .map(|n| Value::str(&n.name))
            .collect(),
    ))
}

fn list_outputs(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (node, _) = this_sym(&mut a)?;
    a.finish(0)?;
    let name = if node.is_var() {
        node.name.clone()
    } else {
        format!("{}_output", node.name)
    };
    Ok(Value::list(vec![Value::str(&name)]))
}

// ---- JSON -----------------------------------------------------------------------------------

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// MXNet 1.9.1's JSON of a graph, as dmlc's writer lays it out (an array of more than ten
/// numbers, an object of more than one entry and the node list go one item per line; ", "
/// ends each item).
pub fn graph_json(heads: &[Rc<Node>], np_shape: bool) -> String {
    let nodes = topo(heads);
    let aux = aux_states(&nodes);
    let index: HashMap<*const Node, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (Rc::as_ptr(n), i))
        .collect();
    let ind = |level: usize| " ".repeat(level * 2);
    let mut out = String::from("{\n");
    out.push_str(&format!("{}\"nodes\": [", ind(1)));
    for (i, n) in nodes.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("\n{}{{", ind(2)));
        out.push_str(&format!("\n{}\"op\": {}, ", ind(3), quote(&n.json_op)));
        out.push_str(&format!("\n{}\"name\": {}, ", ind(3), quote(&n.name)));
        let mut attrs = n.attrs.clone();
        attrs.sort();
        match attrs.len() {
            0 => {}
            1 => out.push_str(&format!(
                "\n{}\"attrs\": {{{}: {}}}, ",
                ind(3),
                quote(&attrs[0].0),
                quote(&attrs[0].1)
            )),
            _ => {
                out.push_str(&format!("\n{}\"attrs\": {{", ind(3)));
                for (k, (key, v)) in attrs.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&format!("\n{}{}: {}", ind(4), quote(key), quote(v)));
                }
                out.push_str(&format!("\n{}}}, ", ind(3)));
            }
        }
        let inputs: Vec<String> = n
            .inputs
            .iter()
            // An auxiliary state is written by its operator: MXNet's version 1.
            .map(|i| {
                let version = u8::from(aux.contains(&Rc::as_ptr(i)));
                format!("[{}, 0, {version}]", index[&Rc::as_ptr(i)])
            })
            .collect();
        out.push_str(&format!("\n{}\"inputs\": [{}]", ind(3), inputs.join(", ")));
        out.push_str(&format!("\n{}}}", ind(2)));
    }
    out.push_str(&format!("\n{}], ", ind(1)));
    let numbers = |v: &[usize]| -> String {
        if v.len() > 10 {
            let items: Vec<String> = v.iter().map(|x| format!("\n{}{x}", ind(2))).collect();
            format!("[{}\n{}]", items.join(", "), ind(1))
        } else {
            let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            format!("[{}]", items.join(", "))
        }
    };
    let args: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].is_var()).collect();
    let rows: Vec<usize> = std::iter::once(0)
        .chain(nodes.iter().scan(0, |row, n| {
            *row += n_outputs(n);
            Some(*row)
        }))
        .collect();
    out.push_str(&format!("\n{}\"arg_nodes\": {}, ", ind(1), numbers(&args)));
    out.push_str(&format!(
        "\n{}\"node_row_ptr\": {}, ",
        ind(1),
        numbers(&rows)
    ));
    let heads_text: Vec<String> = heads
        .iter()
        .map(|h| format!("[{}, 0, 0]", index[&Rc::as_ptr(h)]))
        .collect();
    out.push_str(&format!(
        "\n{}\"heads\": [{}], ",
        ind(1),
        heads_text.join(", ")
    ));
    if np_shape {
        out.push_str(&format!(
            "\n{}\"attrs\": {{\n{}\"is_np_shape\": [\"int\", 1], \n{}\"mxnet_version\": [\"int\", 10901]\n{}}}",
            ind(1),
            ind(2),
            ind(2),
            ind(1)
        ));
    } else {
        out.push_str(&format!(
            "\n{}\"attrs\": {{\"mxnet_version\": [\"int\", 10901]}}",
            ind(1)
        ));
    }
    out.push_str("\n}");
    out
}

fn tojson(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (node, _) = this_sym(&mut a)?;
    a.finish(0)?;
    Ok(Value::str(&graph_json(&[node], it.state().np_mode)))
}

fn write_text(path: &std::path::Path, text: &str) -> Result<(), Exc> {
    std::fs::write(path, text).map_err(|e| {
        Exc::new(
            ExcKind::OSError,
            format!("cannot write '{}': {e}", path.display()),
        )
    })
}

fn sym_save(it: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let (node, _) = this_sym(&mut a)?;
    let fname = str_arg(a.required(0, "fname")?, "fname")?;
    a.kw.clear();
    a.finish(1)?;
    write_text(
        std::path::Path::new(&fname),
        &graph_json(&[node], it.state().np_mode),
    )?;
    Ok(Value::None)
}

fn str_arg(v: Value, what: &str) -> Result<String, Exc> {
    match &v {
        Value::Str(s) => Ok(s.to_string()),
        other => Err(Exc::type_error(format!(
            "{what} must be a string, got {}",
            other.type_name()
        ))),
    }
}

/// A parameter's variable with the attributes Gluon gives it (`__shape__` with the sizes
/// the first call infers unknown, even once known: -1 in numpy mode, 0 in legacy mode).
fn param_var(p: &Rc<Parameter>, np: bool) -> Rc<Node> {
    let shape = p.shape_text(if np { -1 } else { 0 }, true);
    let mut attrs = vec![
        ("__dtype__".to_string(), "0".to_string()),
        ("__lr_mult__".into(), "1.0".into()),
        ("__shape__".into(), shape),
        ("__storage_type__".into(), "0".into()),
        ("__wd_mult__".into(), "1.0".into()),
    ];
    if p.own_init.get() {
        match p.init.get() {
            Init::Zeros | Init::Constant(0.0) => attrs.push(("__init__".into(), "zeros".into())),
            Init::Constant(1.0) => attrs.push(("__init__".into(), "ones".into())),
            _ => {}
        }
    }
    Rc::new(Node {
        op: Op::Var(Some(p.clone())),
        name: p.name.clone(),
        json_op: "null".into(),
        attrs,
        inputs: Vec::new(),
    })
}

fn free_var(name: String) -> Rc<Node> {
    Rc::new(Node {
        op: Op::Var(None),
        name,
        json_op: "null".into(),
        attrs: Vec::new(),
        inputs: Vec::new(),
    })
}

// ---- the mxnet.symbol modules ---------------------------------------------------------------

fn sym_arg(v: &Value, what: &str) -> Result<(Rc<Node>, bool), Exc> {
    as_symbol(v).ok_or_else(|| {
        Exc::type_error(format!(
            "{what} must be a Symbol, got {} (inside a hybridized block every array is a Symbol)",
            v.type_name()
        ))
    })
}

fn name_kw(a: &mut Args) -> Result<Option<String>, Exc> {
    match a.take_kw("name") {
        None | Some(Value::None) => Ok(None),
        Some(v) => Ok(Some(str_arg(v, "name")?)),
    }
}

fn var_fn(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let name = str_arg(a.required(0, "name")?, "name")?;
    a.kw.clear();
    a.finish(1)?;
    Ok(symbol_value(free_var(name), false))
}

/// `F.relu(x)` and its kin, for legacy (`np` false) and numpy-mode modules.
fn unary_fn(a: &mut Args, op: UnaryOp, json: &str, hint: &str) -> Result<Value, Exc> {
    let x = a.required(0, "data")?;
    let (x, np) = sym_arg(&x, "data")?;
    let name = name_kw(a)?;
    a.finish(1)?;
    Ok(symbol_value(unary_node(x, op, json, hint, name), np))
}

fn activation_fn(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "data")?;
    let (x, np) = sym_arg(&x, "data")?;
    let act = match &a.required(1, "act_type")? {
        Value::Str(s) => Activation::parse(s).map_err(Exc::from)?,
        _ => return Err(Exc::type_error("act_type must be a string such as 'relu'")),
    };
    let name = name_kw(&mut a)?;
    a.finish(2)?;
    Ok(symbol_value(activation_node(x, act, name), np))
}

fn activation_node(x: Rc<Node>, act: Activation, name: Option<String>) -> Rc<Node> {
    Rc::new(Node {
        op: Op::Activation(act),
        name: node_name(name, "activation"),
        json_op: "Activation".into(),
        attrs: vec![("act_type".into(), act.name().into())],
        inputs: vec![x],
    })
}

fn flatten_node(x: Rc<Node>, np: bool, name: Option<String>) -> Rc<Node> {
    Rc::new(Node {
        op: Op::Flatten,
        name: node_name(name, "flatten"),
        json_op: if np { "_npx_batch_flatten" } else { "Flatten" }.into(),
        attrs: Vec::new(),
        inputs: vec![x],
    })
}

fn flatten_fn(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "data")?;
    let (x, np) = sym_arg(&x, "data")?;
    let name = name_kw(&mut a)?;
    a.finish(1)?;
    Ok(symbol_value(flatten_node(x, np, name), np))
}

fn fc_node(
    inputs: Vec<Rc<Node>>,
    units: usize,
    flatten: bool,
    layer: Option<Rc<Block>>,
    name: String,
) -> Rc<Node> {
    let no_bias = inputs.len() < 3;
    let t = |b: bool| if b { "True" } else { "False" }.to_string();
    Rc::new(Node {
        op: Op::FullyConnected {
            units,
            no_bias,
            flatten,
            layer,
        },
        name,
        json_op: "FullyConnected".into(),
        attrs: vec![
            ("flatten".into(), t(flatten)),
            ("no_bias".into(), t(no_bias)),
            ("num_hidden".into(), units.to_string()),
        ],
        inputs,
    })
}

fn fully_connected_fn(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let x = a.required(0, "data")?;
    let (x, np) = sym_arg(&x, "data")?;
    let mut inputs = vec![x];
    for (i, what) in [(1, "weight"), (2, "bias")] {
        if let Some(v) = a.take(i, what)? {
            if !matches!(v, Value::None) {
                inputs.push(sym_arg(&v, what)?.0);
            }
        }
    }
    let units = match a.take_kw("num_hidden") {
        Some(Value::Int(n)) if n > 0 => n as usize,
        _ => {
            return Err(Exc::type_error(
                "FullyConnected needs num_hidden=N (the number of outputs, a positive int)",
            ))
        }
    };
    let no_bias = a
        .take_kw("no_bias")
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(false);
    let flatten = a
        .take_kw("flatten")
        .map(|v| v.truthy())
        .transpose()?
        .unwrap_or(true);
    let name = name_kw(&mut a)?;
    a.finish(3)?;
    if no_bias {
        inputs.truncate(2);
    }
    let name = node_name(name, "fullyconnected");
    if inputs.len() == 1 {
        // MXNet names the missing weight and bias after the operator.
        inputs.push(free_var(format!("{name}_weight")));
        if !no_bias {
            inputs.push(free_var(format!("{name}_bias")));
        }
    }
    Ok(symbol_value(
        fc_node(inputs, units, flatten, None, name),
        np,
    ))
}

fn load_fn(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let fname = str_arg(a.required(0, "fname")?, "fname")?;
    a.finish(1)?;
    let text = std::fs::read_to_string(&fname).map_err(|e| {
        Exc::new(
            if e.kind() == std::io::ErrorKind::NotFound {
                ExcKind::FileNotFoundError
            } else {
                ExcKind::OSError
            },
            format!("cannot read '{fname}': {e}"),
        )
    })?;
    // MXNet gives the legacy Symbol class whatever mode wrote the file.
    let (heads, _) = parse_graph(&text, &[], &HashMap::new())?;
    Ok(symbol_value(heads[0].clone(), false))
}

fn load_json_fn(_: &mut dyn Interpreter, mut a: Args) -> Result<Value, Exc> {
    let text = str_arg(a.required(0, "json_str")?, "json_str")?;
    a.finish(1)?;
    // MXNet gives the legacy Symbol class whatever mode wrote the file.
    let (heads, _) = parse_graph(&text, &[], &HashMap::new())?;
    Ok(symbol_value(heads[0].clone(), false))
}

/// `mxnet.symbol` (legacy names, with `np` and `npx` for numpy mode) and its submodules.
pub fn build(dotted: &str) -> Option<Rc<Module>> {
    let m = |name: &str, doc: &'static str| Rc::new(Module::new(name, doc));
    Some(match dotted {
        "mxnet.symbol" | "mxnet.sym" => {
            let s = m(
                "mxnet.symbol",
                "MXNet's symbolic API: graphs of variables and operators",
            );
            s.set(
                "var",
                builtin(
                    "var",
                    "var(name): a variable Symbol (a graph input).",
                    var_fn,
                ),
            );
            s.set(
                "Variable",
                builtin(
                    "Variable",
                    "Variable(name): a variable Symbol (a graph input).",
                    var_fn,
                ),
            );
            set_unary_ops(&s, "mxnet.symbol");
            s.set(
                "Activation",
                builtin(
                    "Activation",
                    "Activation(data, act_type): relu, sigmoid or tanh.",
                    activation_fn,
                ),
            );
            s.set(
                "FullyConnected",
                builtin(
                    "FullyConnected",
                    "FullyConnected(data, weight, bias, num_hidden, no_bias=False, flatten=True).",
                    fully_connected_fn,
                ),
            );
            s.set(
                "Flatten",
                builtin("Flatten", "Flatten(data): (N, ...) to (N, -1).", flatten_fn),
            );
            s.set(
                "load",
                builtin(
                    "load",
                    "load(fname): the Symbol of a JSON file (Symbol.save, HybridBlock.export).",
                    load_fn,
                ),
            );
            s.set(
                "load_json",
                builtin(
                    "load_json",
                    "load_json(json_str): the Symbol of a JSON text (Symbol.tojson).",
                    load_json_fn,
                ),
            );
            let (legacy, _) = classes();
            s.set("Symbol", Value::Class(legacy));
            s.set("np", Value::Module(build("mxnet.symbol.numpy")?));
            s.set("npx", Value::Module(build("mxnet.symbol.numpy_extension")?));
            s
        }
        "mxnet.symbol.numpy" => {
            let s = m(
                "mxnet.symbol.numpy",
                "MXNet's numpy-compatible symbolic API",
            );
            set_unary_ops(&s, "mxnet.symbol.numpy");
            let (_, numpy) = classes();
            s.set("_Symbol", Value::Class(numpy));
            s
        }
        "mxnet.symbol.numpy_extension" => {
            let s = m(
                "mxnet.symbol.numpy_extension",
                "MXNet's numpy extensions, symbolic",
            );
            set_unary_ops(&s, "mxnet.symbol.numpy_extension");
            s.set(
                "activation",
                builtin(
                    "activation",
                    "activation(data, act_type): relu, sigmoid or tanh.",
                    activation_fn,
                ),
            );
            s.set(
                "fully_connected",
                builtin(
                    "fully_connected",
                    "fully_connected(x, weight, bias, num_hidden, no_bias=False, flatten=True).",
                    fully_connected_fn,
                ),
            );
            s.set(
                "batch_flatten",
                builtin(
                    "batch_flatten",
                    "batch_flatten(data): (N, ...) to (N, -1).",
                    flatten_fn,
                ),
            );
            s
        }
        _ => return None,
    })
}

/// The elementwise operators of the symbol modules: (module, function, op, MXNet's operator
/// name, node name hint). One table serves building the modules and reading a graph's JSON.
#[rustfmt::skip]
const UNARY_OPS: [(&str, &str, UnaryOp, &str, &str); 17] = [
    ("mxnet.symbol",                  "relu",      UnaryOp::Relu,     "relu", "relu"),
    ("mxnet.symbol",                  "sigmoid",   UnaryOp::Sigmoid,  "sigmoid", "sigmoid"),
    ("mxnet.symbol",                  "tanh",      UnaryOp::Tanh,     "tanh", "tanh"),
    ("mxnet.symbol",                  "exp",       UnaryOp::Exp,      "exp", "exp"),
    ("mxnet.symbol",                  "log",       UnaryOp::Log,      "log", "log"),
    ("mxnet.symbol",                  "sqrt",      UnaryOp::Sqrt,     "sqrt", "sqrt"),
    ("mxnet.symbol.numpy",            "tanh",      UnaryOp::Tanh,     "_npi_tanh", "tanh"),
    ("mxnet.symbol.numpy",            "exp",       UnaryOp::Exp,      "_npi_exp", "exp"),
    ("mxnet.symbol.numpy",            "log",       UnaryOp::Log,      "_npi_log", "log"),
    ("mxnet.symbol.numpy",            "sqrt",      UnaryOp::Sqrt,     "_npi_sqrt", "sqrt"),
    ("mxnet.symbol.numpy",            "abs",       UnaryOp::Abs,      "_npi_absolute", "absolute"),
    ("mxnet.symbol.numpy",            "square",    UnaryOp::Square,   "_npi_square", "square"),
    ("mxnet.symbol.numpy",            "negative",  UnaryOp::Neg,      "_npi_negative", "negative"),
    ("mxnet.symbol.numpy_extension",  "relu",      UnaryOp::Relu,     "_npx_relu", "relu"),
    ("mxnet.symbol.numpy_extension",  "sigmoid",   UnaryOp::Sigmoid,  "_npx_sigmoid", "sigmoid"),
    // Legacy `negative` and `abs`, read back from files only (negation is written as `* -1.0`).
    ("", "negative", UnaryOp::Neg, "negative", "negative"),
    ("", "abs", UnaryOp::Abs, "abs", "abs"),
];

/// The row of `UNARY_OPS` a function stands for, held by the function (its receiver).
struct UnarySpec(usize);

impl NativeObject for UnarySpec {
    fn type_name(&self) -> &str {
        "builtin_function_or_method"
    }
    fn repr(&self) -> String {
        format!("<built-in function {}>", UNARY_OPS[self.0].1)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Puts `module`'s elementwise functions of `UNARY_OPS` into `s`.
fn set_unary_ops(s: &Module, module: &str) {
    for (row, (m, name, ..)) in UNARY_OPS.iter().enumerate() {
        if *m == module {
            let spec = Value::Object(Rc::new(UnarySpec(row)));
            s.set(
                name,
                crate::object::method(&spec, name, "elementwise, on a Symbol", |_, spec, mut a| {
                    let row = match spec {
                        Value::Object(o) => o.as_any().downcast_ref::<UnarySpec>().map(|u| u.0),
                        _ => None,
                    }
                    .ok_or_else(|| Exc::type_error("not a symbol operator"))?;
                    let (_, _, op, json, hint) = UNARY_OPS[row];
                    unary_fn(&mut a, op, json, hint)
                }),
            );
        }
    }
}

// ---- reading JSON ---------------------------------------------------------------------------

fn bad_json(why: String) -> Exc {
    Exc::new(
        ExcKind::MXNetError,
        format!("not a symbol file MXNet or devarray writes: {why}"),
    )
}

/// The graph of a JSON text: its heads and whether it was written in numpy mode. A variable
/// named in `inputs` is an input; one in `params` is that parameter; others are free.
pub fn parse_graph(
    text: &str,
    inputs: &[String],
    params: &HashMap<String, Rc<Parameter>>,
) -> Result<(Vec<Rc<Node>>, bool), Exc> {
    let j: serde_json::Value = serde_json::from_str(text).map_err(|e| bad_json(e.to_string()))?;
    let np = j
        .pointer("/attrs/is_np_shape/1")
        .and_then(|v| v.as_i64())
        .is_some_and(|v| v == 1);
    let nodes = j
        .get("nodes")
        .and_then(|n| n.as_array())
        .ok_or_else(|| bad_json("no \"nodes\" list".into()))?;
    let mut built: Vec<Rc<Node>> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let op = n.get("op").and_then(|v| v.as_str()).unwrap_or("");
        let name = n
            .get("name")
            .and_then(|v| v.as_str())
            .ok_or_else(|| bad_json("a node without a name".into()))?
            .to_string();
        let attrs: Vec<(String, String)> = n
            .get("attrs")
            .or_else(|| n.get("param"))
            .and_then(|a| a.as_object())
            .map(|o| {
                o.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let attr = |k: &str| attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str());
        let mut ins = Vec::new();
        for e in n
            .get("inputs")
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
        {
            let i = e
                .get(0)
                .and_then(|v| v.as_u64())
                .filter(|&i| (i as usize) < built.len())
                .ok_or_else(|| {
                    bad_json(format!(
                        "node '{name}' has an input that is not an earlier node"
                    ))
                })?;
            ins.push(built[i as usize].clone());
        }
        let unsupported = || {
            Exc::new(
                ExcKind::NotImplementedError,
                format!("operator '{op}' (node '{name}') is not one devarray can run from a symbol file; it runs FullyConnected, Convolution, Pooling, BatchNorm, Dropout, Activation, relu/sigmoid/tanh/exp, Flatten and arithmetic with scalars and between arrays"),
            )
        };
        let op_kind = match op {
            "null" => {
                if inputs.contains(&name) {
                    Op::Var(None)
                } else {
                    Op::Var(params.get(&name).cloned())
                }
            }
            "FullyConnected" => Op::FullyConnected {
                units: attr("num_hidden")
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| bad_json(format!("node '{name}' has no num_hidden")))?,
                no_bias: attr("no_bias") == Some("True"),
                flatten: attr("flatten") != Some("False"),
                layer: None,
            },
            "Activation" => Op::Activation(
                Activation::parse(attr("act_type").unwrap_or("")).map_err(Exc::from)?,
            ),
            json if UNARY_OPS.iter().any(|r| r.3 == json) => Op::Unary(
                UNARY_OPS
                    .iter()
                    .find(|r| r.3 == json)
                    .map_or(UnaryOp::Neg, |r| r.2),
            ),
            "Flatten" | "_npx_batch_flatten" => Op::Flatten,
            "Convolution" | "Pooling" | "BatchNorm" | "Dropout" => {
                let text = |k: &str| attr(k).map(str::to_string);
                match imported_layer(op, &name, &text, &ins)? {
                    Some(layer) => Op::Layer {
                        block: Rc::new(Block {
                            name: name.clone(),
                            kind: BlockKind::Op(layer),
                        }),
                        linear: false,
                    },
                    None => return Err(unsupported()),
                }
            }
            other => {
                let binary = [
                    BinaryOp::Add,
                    BinaryOp::Sub,
                    BinaryOp::Mul,
                    BinaryOp::Div,
                    BinaryOp::Gt,
                    BinaryOp::Lt,
                    BinaryOp::Ge,
                    BinaryOp::Le,
                ];
                let mut found = None;
                for b in binary {
                    for np_mode in [false, true] {
                        if binary_names(b, np_mode).map(|x| x.0) == Some(other) {
                            found = Some(Op::Binary(b));
                        }
                        for rev in [false, true] {
                            if scalar_names(b, rev, np_mode).map(|x| x.0) == Some(other) {
                                let text = attr("scalar").unwrap_or("0");
                                let int = attr("is_int") == Some("True")
                                    || (!np_mode && !text.contains(['.', 'e', 'n', 'i']));
                                let v: f64 = text.parse().map_err(|_| {
                                    bad_json(format!("node '{name}': scalar '{text}'"))
                                })?;
                                found = Some(Op::Scalar {
                                    op: b,
                                    scalar: if int {
                                        Scalar::Int(v as i64)
                                    } else {
                                        Scalar::Float(v)
                                    },
                                    reverse: rev,
                                });
                            }
                        }
                    }
                }
                found.ok_or_else(unsupported)?
            }
        };
        built.push(Rc::new(Node {
            op: op_kind,
            name,
            json_op: op.to_string(),
            attrs,
            inputs: ins,
        }));
    }
    let mut heads = Vec::new();
    for h in j
        .get("heads")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        let i = h
            .get(0)
            .and_then(|v| v.as_u64())
            .filter(|&i| (i as usize) < built.len())
            .ok_or_else(|| bad_json("a head that is not a node".into()))?;
        heads.push(built[i as usize].clone());
    }
    if heads.is_empty() {
        return Err(bad_json("no \"heads\"".into()));
    }
    Ok((heads, np))
}

// ---- tracing Gluon blocks -------------------------------------------------------------------

/// The symbolic forward of a Gluon block called with Symbols: a built-in layer's nodes, a
/// container's children in order, or the program's `hybrid_forward` with `F` = `mxnet.symbol`
/// and the parameters as variables; inside the block's name scope.
pub fn block_symbolic(
    it: &mut dyn Interpreter,
    this: &Value,
    core: &Core,
    mut a: Args,
) -> Result<Value, Exc> {
    let np = a
        .pos
        .first()
        .and_then(as_symbol)
        .map(|s| s.1)
        .unwrap_or(false);
    let prefix = format!("{}_", core.name);
    SCOPES.with(|s| s.borrow_mut().push((prefix, HashMap::new())));
    let out = symbolic_inner(it, this, core, &mut a, np);
    SCOPES.with(|s| s.borrow_mut().pop());
    out
}

fn symbolic_inner(
    it: &mut dyn Interpreter,
    this: &Value,
    core: &Core,
    a: &mut Args,
    np: bool,
) -> Result<Value, Exc> {
    if let Some(layer) = core.layer.clone() {
        let x = a.required(0, "x")?;
        a.finish(1)?;
        let (x, _) = sym_arg(&x, "x")?;
        return Ok(symbol_value(layer_node(&layer, x, np), np));
    }
    if core.sequential {
        let mut x = a.required(0, "x")?;
        a.finish(1)?;
        for c in blocks::children(core) {
            x = it.call_value(&c.block, Args::positional(vec![x]))?;
        }
        return Ok(x);
    }
    if let Value::Instance(inst) = this {
        if inst.class().lookup("hybrid_forward").is_some() {
            let f = it.import("mxnet.symbol")?;
            let hf = it.get_attr(this, "hybrid_forward")?;
            let mut args = vec![Value::Module(f)];
            args.append(&mut a.pos);
            let mut call_args = Args::positional(args);
            call_args.kw = std::mem::take(&mut a.kw);
            for (k, p) in core.params.borrow().iter() {
                call_args
                    .kw
                    .push((k.clone(), symbol_value(param_var(p, np), np)));
            }
            return it.call_value(&hf, call_args);
        }
    }
    let forward = it.get_attr(this, "forward")?;
    it.call_value(&forward, std::mem::take(a))
}

/// The nodes of a built-in layer, named as Gluon's layers name them (`dense0_fwd`,
/// `dense0_relu_fwd`).
fn layer_node(layer: &Rc<Block>, x: Rc<Node>, np: bool) -> Rc<Node> {
    match &layer.kind {
        BlockKind::Dense {
            units,
            activation,
            weight,
            bias,
            flatten,
            ..
        } => {
            let mut inputs = vec![x, param_var(weight, np)];
            if let Some(b) = bias {
                inputs.push(param_var(b, np));
            }
            let name = node_name(Some("fwd".into()), "fwd");
            let y = fc_node(inputs, *units, *flatten, Some(layer.clone()), name);
            match activation {
                Some(act) => activation_node(y, *act, Some(format!("{}_fwd", act.name()))),
                None => y,
            }
        }
        BlockKind::Flatten => flatten_node(x, np, None),
        BlockKind::Activation(act) => activation_node(x, *act, Some("fwd".into())),
        _ => {
            let mut inputs = vec![x];
            // Sizes the first call infers are unknown (0) in the parameter's shape now.
            for (_, p) in layer.own_params() {
                inputs.push(param_var(&p, np));
            }
            let (json, attrs) = match &layer.kind {
                BlockKind::Conv2D { .. } => ("Convolution".to_string(), Vec::new()),
                BlockKind::MaxPool2D { .. } => ("Pooling".to_string(), Vec::new()),
                BlockKind::Op(op) => layer_json(op.as_ref())
                    .unwrap_or_else(|| (op_json_name(op.repr(np)), Vec::new())),
                _ => ("_devarray_layer".to_string(), Vec::new()),
            };
            // MXNet's Conv2D applies its activation as a node of its own.
            let act = match &layer.kind {
                BlockKind::Op(op) => op
                    .as_any()
                    .downcast_ref::<ConvLayer>()
                    .and_then(|c| c.activation),
                _ => None,
            };
            let y = Rc::new(Node {
                op: Op::Layer {
                    block: layer.clone(),
                    linear: act.is_some(),
                },
                name: node_name(Some("fwd".into()), "fwd"),
                json_op: json,
                attrs,
                inputs,
            });
            match act {
                Some(act) => activation_node(y, act, Some(format!("{}_fwd", act.name()))),
                None => y,
            }
        }
    }
}

fn tuple_attr(v: &[usize]) -> String {
    match v {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            v.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn bool_attr(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

/// The operator and attributes MXNet 1.9.1 writes for a Gluon convolution, pooling, batch norm
/// or dropout layer (None for others).
fn layer_json(op: &dyn LayerOp) -> Option<(String, Vec<(String, String)>)> {
    let any = op.as_any();
    let layout = |dims: usize| if dims == 1 { "NCW" } else { "NCHW" }.to_string();
    // One-dimensional layers keep their sizes in the second slot of each pair.
    let used = |dims: usize, v: [usize; 2]| if dims == 1 { vec![v[1]] } else { v.to_vec() };
    let kv = |pairs: Vec<(&str, String)>| -> Vec<(String, String)> {
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    };
    if let Some(c) = any.downcast_ref::<ConvLayer>() {
        let pad = match c.padding {
            ConvPad::Fixed(p) => p,
            _ => [0, 0],
        };
        return Some((
            "Convolution".into(),
            kv(vec![
                ("dilate", tuple_attr(&used(c.dims, c.dilation))),
                ("kernel", tuple_attr(&used(c.dims, c.kernel))),
                ("layout", layout(c.dims)),
                ("no_bias", bool_attr(c.bias.is_none())),
                ("num_filter", c.channels.to_string()),
                ("num_group", c.groups.to_string()),
                ("pad", tuple_attr(&used(c.dims, pad))),
                ("stride", tuple_attr(&used(c.dims, c.stride))),
            ]),
        ));
    }
    let (pool, dims) = match (
        any.downcast_ref::<PoolLayer>(),
        any.downcast_ref::<Pool1dLayer>(),
    ) {
        (Some(p), _) => (Some(p), 2),
        (_, Some(p)) => (Some(&p.inner), 1),
        _ => (None, 0),
    };
    if let Some(p) = pool {
        let (kernel, stride, pad, global, full) = match &p.span {
            PoolSpan::Window {
                kernel,
                stride,
                pad,
                ceil_mode,
            } => (*kernel, *stride, *pad, false, *ceil_mode),
            PoolSpan::Global => ([1, 1], [1, 1], [0, 0], true, true),
            PoolSpan::Adaptive(_) => return None,
        };
        let mut attrs = kv(vec![
            ("global_pool", bool_attr(global)),
            ("kernel", tuple_attr(&used(dims, kernel))),
            ("layout", layout(dims)),
            ("pad", tuple_attr(&used(dims, pad))),
            ("pool_type", if p.max { "max" } else { "avg" }.into()),
            (
                "pooling_convention",
                if full { "full" } else { "valid" }.into(),
            ),
            ("stride", tuple_attr(&used(dims, stride))),
        ]);
        if !p.max && !global {
            attrs.push(("count_include_pad".into(), bool_attr(p.count_include_pad)));
        }
        return Some(("Pooling".into(), attrs));
    }
    let float = crate::object::format::float_repr;
    if let Some(b) = any.downcast_ref::<BatchNormLayer>() {
        let fix_gamma = b.weight.as_ref().is_some_and(|g| g.buffer.get());
        return Some((
            "BatchNorm".into(),
            kv(vec![
                ("axis", "1".into()),
                ("eps", float(b.eps)),
                ("fix_gamma", bool_attr(fix_gamma)),
                ("momentum", float(b.momentum)),
                ("use_global_stats", bool_attr(b.use_global_stats)),
            ]),
        ));
    }
    if let Some(d) = any.downcast_ref::<DropoutLayer>() {
        return Some((
            "Dropout".into(),
            kv(vec![
                ("axes", "()".into()),
                ("cudnn_off", "False".into()),
                ("p", float(d.p)),
            ]),
        ));
    }
    None
}

/// How many outputs MXNet's operator has (the JSON's `node_row_ptr` counts them): batch norm
/// also gives the batch's mean and variance, dropout its mask, max pooling its argmax.
fn n_outputs(n: &Node) -> usize {
    let attr = |k: &str| {
        n.attrs
            .iter()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
    };
    match n.json_op.as_str() {
        "BatchNorm" => 3,
        "Dropout" => 2,
        "Pooling" if attr("pool_type") == Some("max") => 2,
        _ => 1,
    }
}

/// A Gluon layer for an imported graph's convolution, pooling, batch norm or dropout node,
/// reading its parameters from the node's inputs (a fresh parameter where the file gave none:
/// the graph then has a free variable, which compiling it reports).
fn imported_layer(
    op: &str,
    name: &str,
    attr: &dyn Fn(&str) -> Option<String>,
    ins: &[Rc<Node>],
) -> Result<Option<Rc<dyn LayerOp>>, Exc> {
    let bad = |what: &str| bad_json(format!("node '{name}': {what}"));
    let tuple = |k: &str| -> Result<Vec<usize>, Exc> {
        let text = attr(k).ok_or_else(|| bad(&format!("no {k}")))?;
        text.trim_matches(|c| c == '(' || c == ')' || c == '[' || c == ']')
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().map_err(|_| bad(&format!("{k} '{text}'"))))
            .collect()
    };
    let pair = |v: Vec<usize>, fill: usize| -> [usize; 2] {
        match v.as_slice() {
            [a] => [fill, *a],
            [a, b, ..] => [*a, *b],
            [] => [fill, fill],
        }
    };
    let opt_tuple = |k: &str, dims: usize, fill: usize| -> Result<[usize; 2], Exc> {
        match attr(k) {
            Some(_) => Ok(pair(tuple(k)?, fill)),
            None => Ok(pair(vec![fill; dims], fill)),
        }
    };
    let truth = |k: &str, default: bool| attr(k).map_or(default, |v| v == "True" || v == "1");
    let number = |k: &str, default: f64| -> Result<f64, Exc> {
        attr(k).map_or(Ok(default), |v| {
            v.parse().map_err(|_| bad(&format!("{k} '{v}'")))
        })
    };
    let param = |i: usize| -> Option<Rc<Parameter>> {
        ins.get(i).map(|n| match &n.op {
            Op::Var(Some(p)) => p.clone(),
            _ => Parameter::new(n.name.clone(), Vec::new(), Init::Zeros),
        })
    };
    Ok(Some(match op {
        "Convolution" => {
            let kernel = tuple("kernel")?;
            let dims = kernel.len();
            if !(1..=2).contains(&dims) {
                return Err(bad("only 1-d and 2-d convolutions run"));
            }
            let kernel = pair(kernel, 1);
            let groups = number("num_group", 1.0)? as usize;
            let weight = param(1).ok_or_else(|| bad("no weight input"))?;
            let in_channels = weight.shape().get(1).copied().unwrap_or(0) * groups.max(1);
            let no_bias = truth("no_bias", false);
            Rc::new(ConvLayer {
                name: name.to_string(),
                style: Style::Gluon,
                dims,
                channels: number("num_filter", 0.0)? as usize,
                in_channels: std::cell::Cell::new(in_channels),
                kernel,
                stride: opt_tuple("stride", dims, 1)?,
                padding: ConvPad::Fixed(opt_tuple("pad", dims, 0)?),
                padding_mode: PadMode::Zeros,
                dilation: opt_tuple("dilate", dims, 1)?,
                groups,
                activation: None,
                weight,
                bias: if no_bias { None } else { param(2) },
                lazy: false,
            })
        }
        "Pooling" => {
            let global = truth("global_pool", false);
            let dims = if attr("layout").as_deref() == Some("NCW") {
                1
            } else {
                tuple("kernel").map_or(2, |k| k.len())
            };
            let span = if global {
                PoolSpan::Global
            } else {
                let kernel = pair(tuple("kernel")?, 1);
                PoolSpan::Window {
                    kernel,
                    stride: match attr("stride") {
                        Some(_) => pair(tuple("stride")?, 1),
                        None => [if dims == 1 { 1 } else { kernel[0] }, kernel[1]],
                    },
                    pad: opt_tuple("pad", dims, 0)?,
                    ceil_mode: attr("pooling_convention").as_deref() == Some("full"),
                }
            };
            let inner = PoolLayer {
                name: name.to_string(),
                style: Style::Gluon,
                max: attr("pool_type").as_deref() != Some("avg"),
                span,
                count_include_pad: truth("count_include_pad", true),
                torch_repr: String::new(),
            };
            if dims == 1 {
                Rc::new(Pool1dLayer { inner })
            } else {
                Rc::new(inner)
            }
        }
        "BatchNorm" => {
            let gamma = param(1).ok_or_else(|| bad("no gamma input"))?;
            let features = gamma.shape().first().copied().unwrap_or(0);
            Rc::new(BatchNormLayer {
                name: name.to_string(),
                style: Style::Gluon,
                dims: 0,
                features: std::cell::Cell::new(features),
                eps: number("eps", 1e-3)?,
                momentum: number("momentum", 0.9)?,
                weight: Some(gamma),
                bias: param(2),
                running_mean: param(3),
                running_var: param(4),
                num_batches: None,
                use_global_stats: truth("use_global_stats", false),
                training: std::cell::Cell::new(false),
                lazy: false,
                affine_names: ("gamma", "beta"),
            })
        }
        "Dropout" => Rc::new(DropoutLayer {
            style: Style::Gluon,
            p: number("p", 0.5)?,
            channels: false,
            inplace: false,
            training: std::cell::Cell::new(false),
        }),
        _ => return Ok(None),
    }))
}

/// MXNet's operator for a layer, from its repr's class name.
fn op_json_name(repr: String) -> String {
    let class = repr.split('(').next().unwrap_or("").to_string();
    match class.as_str() {
        c if c.starts_with("Conv") => "Convolution".into(),
        c if c.contains("Pool") => "Pooling".into(),
        "BatchNorm" => "BatchNorm".into(),
        "LayerNorm" => "LayerNorm".into(),
        "Dropout" => "Dropout".into(),
        other => other.to_string(),
    }
}

/// Traces a hybridized block: its forward once on `data` symbols (`data0`, `data1`, ... for
/// more than one input). Returns the graph's heads.
pub fn trace_block(
    it: &mut dyn Interpreter,
    this: &Value,
    n_inputs: usize,
) -> Result<Vec<Rc<Node>>, Exc> {
    let np = it.state().np_mode;
    let names: Vec<String> = if n_inputs == 1 {
        vec!["data".into()]
    } else {
        (0..n_inputs).map(|i| format!("data{i}")).collect()
    };
    let args: Vec<Value> = names
        .iter()
        .map(|n| symbol_value(free_var(n.clone()), np))
        .collect();
    let out = it.call_value(this, Args::positional(args))?;
    let heads: Vec<Value> = match &out {
        Value::Tuple(t) => t.iter().cloned().collect(),
        Value::List(l) => l.borrow().clone(),
        v => vec![v.clone()],
    };
    heads
        .iter()
        .map(|h| {
            as_symbol(h).map(|s| s.0).ok_or_else(|| {
                Exc::type_error(format!(
                    "a hybridized block must return Symbols (the outputs of F's operators), got {}",
                    h.type_name()
                ))
            })
        })
        .collect()
}

/// `export`: the graph's JSON beside the parameters' values (`arg:` names, `aux:` for
/// auxiliary states) as `save` writes them.
pub fn export_files(
    it: &mut dyn Interpreter,
    plan: &Plan,
    path: &str,
    epoch: i64,
) -> Result<(), Exc> {
    let json = graph_json(&plan.head_nodes, it.state().np_mode);
    write_text(std::path::Path::new(&format!("{path}-symbol.json")), &json)?;
    let mut dict = crate::object::value::Dict::default();
    let aux = aux_states(&topo(&plan.head_nodes));
    for node in plan.param_nodes() {
        if let Op::Var(Some(p)) = &node.op {
            let key = format!(
                "{}:{}",
                if aux.contains(&Rc::as_ptr(node)) {
                    "aux"
                } else {
                    "arg"
                },
                node.name
            );
            let value = wrap(p.data(None)?, Flavor::Np);
            let k = Value::str(&key);
            let hk = k
                .hash_key()?
                .ok_or_else(|| Exc::type_error("unhashable key"))?;
            dict.insert(hk, k, value);
        }
    }
    let save = it
        .import("mxnet.npx")?
        .get("save")
        .ok_or_else(|| Exc::new(ExcKind::RuntimeError, "npx.save is missing".to_string()))?;
    it.call_value(
        &save,
        Args::positional(vec![
            Value::str(&format!("{path}-{epoch:04}.params")),
            Value::Dict(Rc::new(RefCell::new(dict))),
        ]),
    )?;
    Ok(())
}

// ---- MXNet's own parameter files (read in `array::mxnet_params`) ----------------------------

pub use crate::modules::array::mxnet_params::{is_mxnet_params, read_mxnet_params};
