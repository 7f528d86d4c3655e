//! The form a displayed value takes: IPython's `RepresentationPrinter` (IPython/lib/pretty.py)
//! ported line for line, so tuples and lists of multi-line arrays break where Jupyter breaks
//! them. The algorithm is Oppen/Wadler-style: text and breakables queue in a buffer; a group
//! whose content overflows the width, or that contains a hard line break (a line of a multi-line
//! repr), breaks its breakables. Its quirks are kept on purpose (the group queue's `deq` deletes
//! by a reversed index, as IPython's does), since the point is to print what IPython prints.

use std::collections::VecDeque;

use super::error::Exc;
use super::format::repr;
use super::guard::{self, Walk};
use super::interpreter::Interpreter;
use super::value::{TypeKind, Value};

/// IPython's `max_width` and `max_seq_length`.
const MAX_WIDTH: usize = 79;
const MAX_SEQ_LENGTH: usize = 1000;

struct Group {
    depth: usize,
    /// Breakables of this group still in the buffer (IPython keeps the objects; only their
    /// number matters).
    breakables: usize,
    want_break: bool,
}

enum Item {
    Text {
        parts: Vec<String>,
        width: usize,
    },
    Breakable {
        sep: &'static str,
        indentation: usize,
        group: usize,
    },
}

impl Item {
    fn width(&self) -> usize {
        match self {
            Item::Text { width, .. } => *width,
            Item::Breakable { sep, .. } => sep.len(),
        }
    }
}

struct Printer {
    output: String,
    output_width: usize,
    buffer_width: usize,
    buffer: VecDeque<Item>,
    groups: Vec<Group>,
    stack: Vec<usize>,
    /// Groups by depth, as IPython's `GroupQueue`.
    queue: Vec<Vec<usize>>,
    indentation: usize,
}

impl Printer {
    fn new() -> Printer {
        let mut p = Printer {
            output: String::new(),
            output_width: 0,
            buffer_width: 0,
            buffer: VecDeque::new(),
            groups: vec![Group {
                depth: 0,
                breakables: 0,
                want_break: false,
            }],
            stack: vec![0],
            queue: Vec::new(),
            indentation: 0,
        };
        p.enq(0);
        p
    }

    fn enq(&mut self, g: usize) {
        let depth = self.groups[g].depth;
        while self.queue.len() <= depth {
            self.queue.push(Vec::new());
        }
        self.queue[depth].push(g);
    }

    fn deq(&mut self) -> Option<usize> {
        for d in 0..self.queue.len() {
            let stack = &self.queue[d];
            let found = stack
                .iter()
                .rev()
                .enumerate()
                .find(|(_, g)| self.groups[**g].breakables > 0)
                .map(|(idx, g)| (idx, *g));
            if let Some((idx, g)) = found {
                // IPython deletes `stack[idx]` with idx counted from the end.
                self.queue[d].remove(idx);
                self.groups[g].want_break = true;
                return Some(g);
            }
            for g in std::mem::take(&mut self.queue[d]) {
                self.groups[g].want_break = true;
            }
        }
        None
    }

    fn remove_from_queue(&mut self, g: usize) {
        let depth = self.groups[g].depth;
        if let Some(stack) = self.queue.get_mut(depth) {
            if let Some(i) = stack.iter().position(|x| *x == g) {
                stack.remove(i);
            }
        }
    }

    /// Writes one buffered item, as IPython's `Text.output` / `Breakable.output`.
    fn output_item(&mut self, item: Item) {
        match item {
            Item::Text { parts, width } => {
                for p in parts {
                    self.output.push_str(&p);
                }
                self.output_width += width;
            }
            Item::Breakable {
                sep,
                indentation,
                group,
            } => {
                self.groups[group].breakables -= 1;
                if self.groups[group].want_break {
                    self.output.push('\n');
                    self.output.push_str(&" ".repeat(indentation));
                    self.output_width = indentation;
                    return;
                }
                if self.groups[group].breakables == 0 {
                    self.remove_from_queue(group);
                }
                self.output.push_str(sep);
                self.output_width += sep.len();
            }
        }
    }

    fn break_one_group(&mut self, g: usize) {
        while self.groups[g].breakables > 0 {
            let Some(x) = self.buffer.pop_front() else {
                break;
            };
            self.buffer_width -= x.width();
            self.output_item(x);
        }
        while matches!(self.buffer.front(), Some(Item::Text { .. })) {
            if let Some(x) = self.buffer.pop_front() {
                self.buffer_width -= x.width();
                self.output_item(x);
            }
        }
    }

    fn break_outer_groups(&mut self) {
        while MAX_WIDTH < self.output_width + self.buffer_width {
            let Some(g) = self.deq() else {
                return;
            };
            self.break_one_group(g);
        }
    }

    fn text(&mut self, s: &str) {
        let width = s.chars().count();
        if self.buffer.is_empty() {
            self.output.push_str(s);
            self.output_width += width;
            return;
        }
        if !matches!(self.buffer.back(), Some(Item::Text { .. })) {
            self.buffer.push_back(Item::Text {
                parts: Vec::new(),
                width: 0,
            });
        }
        if let Some(Item::Text { parts, width: w }) = self.buffer.back_mut() {
            parts.push(s.to_string());
            *w += width;
        }
        self.buffer_width += width;
        self.break_outer_groups();
    }

    fn newline(&mut self) {
        self.output.push('\n');
        self.output.push_str(&" ".repeat(self.indentation));
        self.output_width = self.indentation;
        self.buffer_width = 0;
    }

    fn breakable(&mut self) {
        let g = *self.stack.last().unwrap_or(&0);
        if self.groups[g].want_break {
            self.flush();
            self.newline();
        } else {
            self.groups[g].breakables += 1;
            self.buffer.push_back(Item::Breakable {
                sep: " ",
                indentation: self.indentation,
                group: g,
            });
            self.buffer_width += 1;
            self.break_outer_groups();
        }
    }

    /// A forced line break (a line of a multi-line repr).
    fn hard_break(&mut self) {
        if let Some(g) = self.deq() {
            self.break_one_group(g);
        }
        self.flush();
        self.newline();
    }

    fn flush(&mut self) {
        while let Some(x) = self.buffer.pop_front() {
            self.output_item(x);
        }
        self.buffer_width = 0;
    }

    fn begin_group(&mut self, indent: usize, open: &str) {
        if !open.is_empty() {
            self.text(open);
        }
        let depth = self.groups[*self.stack.last().unwrap_or(&0)].depth + 1;
        self.groups.push(Group {
            depth,
            breakables: 0,
            want_break: false,
        });
        let g = self.groups.len() - 1;
        self.stack.push(g);
        self.enq(g);
        self.indentation += indent;
    }

    fn end_group(&mut self, dedent: usize, close: &str) {
        self.indentation -= dedent;
        if let Some(g) = self.stack.pop() {
            if self.groups[g].breakables == 0 {
                self.remove_from_queue(g);
            }
        }
        if !close.is_empty() {
            self.text(close);
        }
    }
}

/// The text IPython shows for `v` as a cell's result.
pub fn pretty(it: &mut dyn Interpreter, v: &Value) -> Result<String, Exc> {
    let mut p = Printer::new();
    pp(it, &mut p, v)?;
    p.flush();
    Ok(p.output)
}

/// IPython's `_repr_pprint`: the repr, its lines joined by hard breaks inside one group.
fn repr_lines(p: &mut Printer, text: &str) {
    p.begin_group(0, "");
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            p.hard_break();
        }
        p.text(line);
    }
    p.end_group(0, "");
}

/// IPython's `_type_pprint`: a class shows as `module.name`, a built-in one by its bare name.
pub fn type_text(v: &Value) -> Option<String> {
    match v {
        Value::Type(t) => Some(match t {
            TypeKind::Device => "mxnet.context.Context".to_string(),
            other => other.qualified_name().to_string(),
        }),
        Value::ExcType(k) => Some(k.name().to_string()),
        // MXNet's legacy dtypes are NumPy's scalar classes (`<class 'numpy.float32'>`).
        Value::DType(d, super::value::Flavor::Nd) => Some(format!("numpy.{}", d.name())),
        // A class written in Rust outside the class machinery (NumPy's `numpy.float32`).
        Value::Object(o) if o.type_name() == "type" => {
            let text = |name| match &o.get_attr(o, name) {
                Some(Value::Str(s)) => Some(s.to_string()),
                _ => None,
            };
            Some(format!("{}.{}", text("__module__")?, text("__name__")?))
        }
        Value::Class(c) => Some(if &*c.module == "builtins" {
            c.qualname.to_string()
        } else {
            format!("{}.{}", c.module, c.qualname)
        }),
        _ => None,
    }
}

fn pp(it: &mut dyn Interpreter, p: &mut Printer, v: &Value) -> Result<(), Exc> {
    // A class whose metaclass has a `__repr__` (`<enum 'Color'>`) shows that, as IPython does.
    if let Value::Class(c) = v {
        if super::class::metaclass_of(c).is_some_and(|m| m.lookup("__repr__").is_some()) {
            let text = super::format::repr(it, v)?;
            p.text(&text);
            return Ok(());
        }
    }
    if let Some(t) = type_text(v) {
        p.text(&t);
        return Ok(());
    }
    if let Some(call) = collections_call(v) {
        return call_expression(it, p, v, call);
    }
    if let Value::Set(s) = v {
        return pp_set(it, p, v, s);
    }
    let (open, close) = match v {
        Value::List(_) => ("[", "]"),
        Value::Tuple(_) => ("(", ")"),
        Value::Dict(_) => ("{", "}"),
        _ => {
            let text = repr(it, v)?;
            if matches!(v, Value::Instance(_)) && text == super::class::default_repr(v) {
                // IPython's `_default_pprint` for a class without its own repr.
                if let Value::Instance(inst) = v {
                    p.text(&format!(
                        "<{}.{} at {:#x}>",
                        inst.class().module,
                        inst.class().qualname,
                        v.identity()
                    ));
                }
                return Ok(());
            }
            repr_lines(p, &text);
            return Ok(());
        }
    };
    let Some(_entry) = guard::repr_enter(v.identity()) else {
        p.text(&format!("{open}...{close}"));
        return Ok(());
    };
    guard::nest(Walk::Repr, || {
        p.begin_group(open.len(), open);
        match v {
            Value::Dict(d) => {
                let entries = d.borrow().entries.clone();
                for (idx, (k, val)) in entries.iter().enumerate() {
                    if !seq_item(p, idx) {
                        break;
                    }
                    pp(it, p, k)?;
                    p.text(": ");
                    pp(it, p, val)?;
                }
            }
            _ => {
                let items: Vec<Value> = match v {
                    Value::List(l) => l.borrow().clone(),
                    Value::Tuple(t) => t.as_ref().clone(),
                    _ => Vec::new(),
                };
                for (idx, x) in items.iter().enumerate() {
                    if !seq_item(p, idx) {
                        break;
                    }
                    pp(it, p, x)?;
                }
                if items.len() == 1 && matches!(v, Value::Tuple(_)) {
                    p.text(",");
                }
            }
        }
        p.end_group(open.len(), close);
        Ok(())
    })
}

/// IPython's `_set_pprinter_factory`: items sorted (by value, else by their str, else as
/// they are) unless there are `max_seq_length` or more.
fn pp_set(
    it: &mut dyn Interpreter,
    p: &mut Printer,
    v: &Value,
    s: &super::set::SetObj,
) -> Result<(), Exc> {
    let mut items = s.table.borrow().values();
    if items.is_empty() {
        p.text(&format!("{}()", s.type_name()));
        return Ok(());
    }
    let (open, close) = if s.frozen {
        ("frozenset({", "})")
    } else {
        ("{", "}")
    };
    let Some(_entry) = guard::repr_enter(v.identity()) else {
        p.text(&format!("{open}...{close}"));
        return Ok(());
    };
    if items.len() < MAX_SEQ_LENGTH {
        if let Ok(order) = super::ops::sort_order(&items) {
            items = order.into_iter().map(|i| items[i].clone()).collect();
        } else {
            let mut keyed = Vec::with_capacity(items.len());
            for x in items.drain(..) {
                keyed.push((super::format::to_str(it, &x)?, x));
            }
            keyed.sort_by(|a, b| a.0.cmp(&b.0));
            items = keyed.into_iter().map(|(_, x)| x).collect();
        }
    }
    guard::nest(Walk::Repr, || {
        p.begin_group(open.len(), open);
        for (idx, x) in items.iter().enumerate() {
            if !seq_item(p, idx) {
                break;
            }
            pp(it, p, x)?;
        }
        p.end_group(open.len(), close);
        Ok(())
    })
}

/// The separator before item `idx` (IPython's `_enumerate`); false past `max_seq_length`,
/// after writing the `...` that stands for the rest.
fn seq_item(p: &mut Printer, idx: usize) -> bool {
    if idx > 0 {
        p.text(",");
        p.breakable();
    }
    if idx >= MAX_SEQ_LENGTH {
        p.text("...");
        return false;
    }
    true
}

/// What IPython's printers for `collections` classes show: a call expression
/// (`defaultdict(list, {...})`, `deque([...], maxlen=3)`, `Counter({...})` in insertion order).
struct Call {
    name: String,
    args: Vec<Value>,
    kwargs: Vec<(&'static str, Value)>,
}

fn collections_call(v: &Value) -> Option<Call> {
    let Value::Instance(inst) = v else {
        return None;
    };
    if !inst.class().native || &*inst.class().module != "collections" {
        return None;
    }
    let state = inst.base_state.borrow().clone();
    let len = match &state {
        Value::Dict(d) => d.borrow().entries.len(),
        Value::List(l) => l.borrow().len(),
        _ => 0,
    };
    let name = inst.class().name.to_string();
    let (args, kwargs) = match &*inst.class().name {
        "defaultdict" => {
            let factory = inst
                .attrs
                .borrow()
                .get("default_factory")
                .cloned()
                .unwrap_or(Value::None);
            (vec![factory, state], Vec::new())
        }
        "OrderedDict" if len > 0 => {
            let items = match &state {
                Value::Dict(d) => d
                    .borrow()
                    .entries
                    .iter()
                    .map(|(k, x)| Value::tuple(vec![k.clone(), x.clone()]))
                    .collect(),
                _ => Vec::new(),
            };
            (vec![Value::list(items)], Vec::new())
        }
        "Counter" if len > 0 => (vec![state], Vec::new()),
        "OrderedDict" | "Counter" => (Vec::new(), Vec::new()),
        "deque" => {
            let maxlen = inst.attrs.borrow().get("maxlen").cloned();
            let kwargs = match maxlen {
                Some(m @ Value::Int(_)) => vec![("maxlen", m)],
                _ => Vec::new(),
            };
            (vec![state], kwargs)
        }
        _ => return None,
    };
    Some(Call { name, args, kwargs })
}

/// IPython's `CallExpression._repr_pretty_`.
fn call_expression(
    it: &mut dyn Interpreter,
    p: &mut Printer,
    v: &Value,
    call: Call,
) -> Result<(), Exc> {
    let prefix = format!("{}(", call.name);
    let Some(_entry) = guard::repr_enter(v.identity()) else {
        p.text(&format!("{prefix}...)"));
        return Ok(());
    };
    guard::nest(Walk::Repr, || {
        p.begin_group(prefix.len(), &prefix);
        let mut started = false;
        for arg in &call.args {
            if started {
                p.text(",");
                p.breakable();
            }
            started = true;
            pp(it, p, arg)?;
        }
        for (name, arg) in &call.kwargs {
            if started {
                p.text(",");
                p.breakable();
            }
            started = true;
            let arg_prefix = format!("{name}=");
            p.begin_group(arg_prefix.len(), &arg_prefix);
            pp(it, p, arg)?;
            p.end_group(arg_prefix.len(), "");
        }
        p.end_group(prefix.len(), ")");
        Ok(())
    })
}
