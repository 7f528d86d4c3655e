//! PTX text to instructions with resolved registers, labels and symbols.
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F32,
    F64,
    Pred,
    None,
}

impl Ty {
    fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "b8" => Ty::B8,
            "b16" => Ty::B16,
            "b32" => Ty::B32,
            "b64" => Ty::B64,
            "u8" => Ty::U8,
            "u16" => Ty::U16,
            "u32" => Ty::U32,
            "u64" => Ty::U64,
            "s8" => Ty::S8,
            "s16" => Ty::S16,
            "s32" => Ty::S32,
            "s64" => Ty::S64,
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            "pred" => Ty::Pred,
            _ => return None,
        })
    }

    pub fn bytes(self) -> usize {
        match self {
            Ty::B8 | Ty::U8 | Ty::S8 | Ty::Pred => 1,
            Ty::B16 | Ty::U16 | Ty::S16 => 2,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 => 4,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 8,
            Ty::None => 0,
        }
    }

    pub fn bits(self) -> u32 {
        self.bytes() as u32 * 8
    }

    pub fn signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    pub fn float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Mov,
    Add,
    Sub,
    Mul,
    Mad,
    Fma,
    Div,
    Rem,
    Neg,
    Abs,
    Min,
    Max,
    And,
    Or,
    Xor,
    Not,
    Shl,
    Shr,
    Clz,
    Popc,
    Bfi,
    Selp,
    Setp,
    Cvt,
    Cvta,
    Ld,
    St,
    Bra,
    Call,
    Ret,
    Exit,
    Bar,
    Rcp,
    Sqrt,
    Rsqrt,
    Ex2,
    Lg2,
    Sin,
    Cos,
    Copysign,
}

/// Rounding: none given, to nearest even, towards zero, down, up; `Int` variants round to an
/// integral value (cvt.rni etc.).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rnd {
    Default,
    Rn,
    Rz,
    Rm,
    Rp,
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Generic,
    Global,
    Shared,
    Local,
    Param,
    Const,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MulMode {
    Lo,
    Hi,
    Wide,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Special {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
}

/// Where a value or an address comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Reg(u32),
    Imm(u64),
    Special(Special),
    /// Address of a module `.global` variable (index into the module's globals).
    Global(u32),
    /// Address of a `.shared` variable (index into the module's shared variables).
    Shared(u32),
    /// Address in the frame's incoming parameters (kernel or function params and retval).
    Param(u32),
    /// Address in the frame's outgoing call parameters (`param0`, `retval0` of a call sequence).
    Out(u32),
    /// Address in the frame's local depot.
    Local(u32),
    Label(u32),
    Vector(Vec<u32>),
    /// Two predicate destinations `%p|%q` (setp).
    PredPair(u32, u32),
    /// `[base + offset]`.
    Addr(Box<Operand>, i64),
    /// A name not yet known (a label before resolution).
    Name(String),
}

#[derive(Clone, Debug)]
pub struct Call {
    pub func: u32,
    /// Outgoing-area offset and size of the return slot.
    pub ret: Option<(u32, u32)>,
    /// Outgoing-area offset and size of each argument.
    pub args: Vec<(u32, u32)>,
}

#[derive(Clone, Debug)]
pub struct Inst {
    pub op: Op,
    pub ty: Ty,
    /// Second type: cvt's source type.
    pub ty2: Ty,
    pub rnd: Rnd,
    pub ftz: bool,
    pub sat: bool,
    pub approx: bool,
    /// Sets the carry flag (`.cc`).
    pub cc: bool,
    /// Reads the carry flag (addc, subc, madc).
    pub carry_in: bool,
    pub mode: MulMode,
    pub cmp: Cmp,
    pub boolop: Option<BoolOp>,
    pub space: Space,
    /// cvta.to.<space> (true) or cvta.<space> (false).
    pub to_space: bool,
    pub guard: Option<(u32, bool)>,
    pub args: Vec<Operand>,
    pub call: Option<Box<Call>>,
    /// Source line, for error messages.
    pub line: u32,
    pub text: String,
}

#[derive(Clone, Debug)]
pub struct ParamDecl {
    pub name: String,
    pub size: u32,
    pub align: u32,
    pub offset: u32,
}

#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub entry: bool,
    pub params: Vec<ParamDecl>,
    pub retval: Option<ParamDecl>,
    /// Bytes of the incoming area (params, then retval).
    pub in_size: u32,
    pub out_size: u32,
    pub local_size: u32,
    pub regs: u32,
    pub body: Vec<Inst>,
    pub defined: bool,
    /// Shared variables this function names.
    pub shared_used: Vec<u32>,
}

#[derive(Clone, Debug)]
pub struct Variable {
    pub name: String,
    pub size: u32,
    pub align: u32,
    pub init: Vec<u8>,
}

#[derive(Clone, Debug, Default)]
pub struct Program {
    pub target: String,
    pub functions: Vec<Function>,
    pub globals: Vec<Variable>,
    pub shared: Vec<Variable>,
}

impl Program {
    pub fn function(&self, name: &str) -> Option<usize> {
        self.functions
            .iter()
            .position(|f| f.name == name && f.entry)
    }
}

// ---- tokens ---------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    Str(String),
    Punct(char),
}

struct Lexer {
    toks: Vec<(Tok, u32)>,
    pos: usize,
}

fn lex(text: &str) -> Result<Vec<(Tok, u32)>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let (mut i, mut line) = (0, 1u32);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                if chars[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 2;
        } else if c == '"' {
            let start = i + 1;
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            out.push((
                Tok::Str(chars[start..i.min(chars.len())].iter().collect()),
                line,
            ));
            i += 1;
        } else if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '%' | '$') {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | '.' | '%' | '$'))
            {
                i += 1;
            }
            out.push((Tok::Word(chars[start..i].iter().collect()), line));
        } else if ",;{}()[]+-=@!<>|:".contains(c) {
            out.push((Tok::Punct(c), line));
            i += 1;
        } else {
            return Err(format!("line {line}: unexpected character {c:?}"));
        }
    }
    Ok(out)
}

impl Lexer {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }
    fn line(&self) -> u32 {
        self.toks
            .get(self.pos.min(self.toks.len().saturating_sub(1)))
            .map_or(0, |(_, l)| *l)
    }
    fn next(&mut self) -> Result<Tok, String> {
        let t = self
            .toks
            .get(self.pos)
            .map(|(t, _)| t.clone())
            .ok_or("unexpected end of PTX")?;
        self.pos += 1;
        Ok(t)
    }
    fn word(&mut self) -> Result<String, String> {
        match self.next()? {
            Tok::Word(w) => Ok(w),
            other => Err(format!(
                "line {}: expected a name, found {other:?}",
                self.line()
            )),
        }
    }
    fn expect(&mut self, c: char) -> Result<(), String> {
        match self.next()? {
            Tok::Punct(p) if p == c => Ok(()),
            other => Err(format!(
                "line {}: expected `{c}`, found {other:?}",
                self.line()
            )),
        }
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn eat_word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Word(x)) if x == w) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn number(&mut self) -> Result<i64, String> {
        let negative = self.eat('-');
        let w = self.word()?;
        let v = parse_int(&w)
            .ok_or_else(|| format!("line {}: expected a number, found {w}", self.line()))?;
        Ok(if negative {
            (v as i64).wrapping_neg()
        } else {
            v as i64
        })
    }
}

fn parse_int(w: &str) -> Option<u64> {
    let w = w.trim_end_matches('U');
    if let Some(hex) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if w.len() > 1 && w.starts_with('0') && w.bytes().all(|b| b.is_ascii_digit()) {
        u64::from_str_radix(&w[1..], 8).ok()
    } else {
        w.parse().ok()
    }
}

/// `0fXXXXXXXX` (f32 bits), `0dXXXXXXXXXXXXXXXX` (f64 bits) or an integer.
fn parse_imm(w: &str) -> Option<u64> {
    if w.len() == 10 && (w.starts_with("0f") || w.starts_with("0F")) {
        return u32::from_str_radix(&w[2..], 16).ok().map(u64::from);
    }
    if w.len() == 18 && (w.starts_with("0d") || w.starts_with("0D")) {
        return u64::from_str_radix(&w[2..], 16).ok();
    }
    parse_int(w)
}

fn special(w: &str) -> Option<Special> {
    let dim = |s: &str| match s {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    let (base, axis) = w.split_once('.').unwrap_or((w, ""));
    Some(match base {
        "%tid" => Special::Tid(dim(axis)?),
        "%ntid" => Special::Ntid(dim(axis)?),
        "%ctaid" => Special::Ctaid(dim(axis)?),
        "%nctaid" => Special::Nctaid(dim(axis)?),
        "%laneid" => Special::LaneId,
        "%warpid" => Special::WarpId,
        _ => return None,
    })
}

// ---- module level ---------------------------------------------------------------------------

/// Parses PTX text.
pub fn parse(text: &str) -> Result<Program, String> {
    let mut lx = Lexer {
        toks: lex(text)?,
        pos: 0,
    };
    let mut program = Program::default();
    while let Some(tok) = lx.peek().cloned() {
        let line = lx.line();
        match tok {
            Tok::Word(w) => match w.as_str() {
                ".version" | ".address_size" => {
                    lx.pos += 1;
                    lx.word()?;
                }
                ".target" => {
                    lx.pos += 1;
                    program.target = lx.word()?;
                    while lx.eat(',') {
                        lx.word()?;
                    }
                }
                ".visible" | ".weak" => lx.pos += 1,
                ".global" | ".const" | ".shared" => {
                    lx.pos += 1;
                    let var = variable(&mut lx)?;
                    if w == ".shared" {
                        program.shared.push(var);
                    } else {
                        program.globals.push(var);
                    }
                }
                ".entry" | ".func" => {
                    lx.pos += 1;
                    function(&mut lx, &mut program, w == ".entry")?;
                }
                other => {
                    return Err(format!(
                        "line {line}: directive `{other}` is not implemented"
                    ))
                }
            },
            other => return Err(format!("line {line}: unexpected {other:?} at module level")),
        }
    }
    for f in &program.functions {
        if f.entry && !f.defined {
            return Err(format!("kernel {} is declared but not defined", f.name));
        }
    }
    Ok(program)
}

/// `[.align N] .type name[N]? (= init)? ;` (after the state space).
fn variable(lx: &mut Lexer) -> Result<Variable, String> {
    let mut align = 1;
    if lx.eat_word(".align") {
        align = lx.number()? as u32;
    }
    let tyw = lx.word()?;
    let ty = tyw
        .strip_prefix('.')
        .and_then(Ty::parse)
        .ok_or_else(|| format!("line {}: type `{tyw}` is not implemented", lx.line()))?;
    let name = lx.word()?;
    let mut count = 1u32;
    if lx.eat('[') {
        count = lx.number()? as u32;
        lx.expect(']')?;
    }
    let size = count * ty.bytes() as u32;
    let mut init = Vec::new();
    if lx.eat('=') {
        let mut values = Vec::new();
        if lx.eat('{') {
            loop {
                values.push(lx.number()?);
                if !lx.eat(',') {
                    break;
                }
            }
            lx.expect('}')?;
        } else {
            values.push(lx.number()?);
        }
        for v in values {
            init.extend_from_slice(&v.to_le_bytes()[..ty.bytes()]);
        }
    }
    lx.expect(';')?;
    Ok(Variable {
        name,
        size,
        align: align.max(ty.bytes() as u32),
        init,
    })
}

fn param_decl(lx: &mut Lexer) -> Result<ParamDecl, String> {
    let space = lx.word()?;
    if space != ".param" {
        return Err(format!(
            "line {}: expected .param, found {space}",
            lx.line()
        ));
    }
    let mut align = 0;
    if lx.eat_word(".align") {
        align = lx.number()? as u32;
    }
    let tyw = lx.word()?;
    let ty = tyw.strip_prefix('.').and_then(Ty::parse).ok_or_else(|| {
        format!(
            "line {}: parameter type `{tyw}` is not implemented",
            lx.line()
        )
    })?;
    if matches!(lx.peek(), Some(Tok::Word(w)) if w == ".ptr") {
        return Err(format!(
            "line {}: .ptr parameters are not implemented",
            lx.line()
        ));
    }
    let name = lx.word()?;
    let mut count = 1;
    if lx.eat('[') {
        count = lx.number()? as u32;
        lx.expect(']')?;
    }
    let align = if align == 0 { ty.bytes() as u32 } else { align };
    Ok(ParamDecl {
        name,
        size: count * ty.bytes() as u32,
        align: align.max(1),
        offset: 0,
    })
}

fn layout(decls: &mut [ParamDecl], start: u32) -> u32 {
    let mut at = start;
    for d in decls {
        at = at.div_ceil(d.align) * d.align;
        d.offset = at;
        at += d.size;
    }
    at
}

fn function(lx: &mut Lexer, program: &mut Program, entry: bool) -> Result<(), String> {
    let mut retval = None;
    if lx.eat('(') {
        retval = Some(param_decl(lx)?);
        lx.expect(')')?;
    }
    let name = lx.word()?;
    let mut params = Vec::new();
    if lx.eat('(') && !lx.eat(')') {
        loop {
            params.push(param_decl(lx)?);
            if lx.eat(')') {
                break;
            }
            lx.expect(',')?;
        }
    }
    let mut end = layout(&mut params, 0);
    if let Some(r) = retval.as_mut() {
        end = layout(std::slice::from_mut(r), end);
    }
    // Performance hints (.maxntid etc.) do not change what the code computes.
    while let Some(Tok::Word(w)) = lx.peek() {
        match w.as_str() {
            ".maxntid" | ".reqntid" | ".minnctapersm" | ".maxnreg" | ".maxclusterrank"
            | ".noreturn" => {
                lx.pos += 1;
                while matches!(lx.peek(), Some(Tok::Word(_))) || lx.peek() == Some(&Tok::Punct(','))
                {
                    if matches!(lx.peek(), Some(Tok::Word(w)) if w.starts_with('.')) {
                        break;
                    }
                    lx.pos += 1;
                }
            }
            other => {
                return Err(format!(
                    "line {}: function directive `{other}` is not implemented",
                    lx.line()
                ))
            }
        }
    }
    let index = match program.functions.iter().position(|f| f.name == name) {
        Some(i) => i,
        None => {
            program.functions.push(Function {
                name: name.clone(),
                entry,
                params: params.clone(),
                retval: retval.clone(),
                in_size: end,
                out_size: 0,
                local_size: 0,
                regs: 0,
                body: Vec::new(),
                defined: false,
                shared_used: Vec::new(),
            });
            program.functions.len() - 1
        }
    };
    if lx.eat(';') {
        return Ok(());
    }
    lx.expect('{')?;
    let f = Body::new(program, &params, retval.as_ref()).parse(lx, program)?;
    program.shared.extend(f.new_shared);
    let slot = &mut program.functions[index];
    slot.params = params;
    slot.retval = retval;
    slot.in_size = end;
    slot.out_size = f.out_size;
    slot.local_size = f.local_size;
    slot.regs = f.regs;
    slot.body = f.body;
    slot.defined = true;
    slot.shared_used = f.shared_used;
    Ok(())
}

// ---- function bodies ------------------------------------------------------------------------

struct Body {
    regs: HashMap<String, u32>,
    nregs: u32,
    symbols: HashMap<String, Operand>,
    labels: HashMap<String, u32>,
    /// Instructions whose label operands wait for resolution: (inst, arg, label).
    pending: Vec<(usize, usize, String)>,
    out_size: u32,
    local_size: u32,
    body: Vec<Inst>,
    shared_used: Vec<u32>,
    /// Out-area params (name -> (offset, size)) of the current call sequence.
    out_params: HashMap<String, (u32, u32)>,
    shared_base: usize,
    new_shared: Vec<Variable>,
}

struct Parsed {
    new_shared: Vec<Variable>,
    regs: u32,
    out_size: u32,
    local_size: u32,
    body: Vec<Inst>,
    shared_used: Vec<u32>,
}

impl Body {
    fn new(program: &Program, params: &[ParamDecl], retval: Option<&ParamDecl>) -> Body {
        let mut symbols = HashMap::new();
        for (i, g) in program.globals.iter().enumerate() {
            symbols.insert(g.name.clone(), Operand::Global(i as u32));
        }
        for (i, s) in program.shared.iter().enumerate() {
            symbols.insert(s.name.clone(), Operand::Shared(i as u32));
        }
        for p in params.iter().chain(retval) {
            symbols.insert(p.name.clone(), Operand::Param(p.offset));
        }
        Body {
            regs: HashMap::new(),
            nregs: 0,
            symbols,
            labels: HashMap::new(),
            pending: Vec::new(),
            out_size: 0,
            local_size: 0,
            body: Vec::new(),
            shared_used: Vec::new(),
            out_params: HashMap::new(),
            shared_base: program.shared.len(),
            new_shared: Vec::new(),
        }
    }

    fn parse(mut self, lx: &mut Lexer, program: &Program) -> Result<Parsed, String> {
        let mut depth = 1;
        loop {
            let line = lx.line();
            match lx.next()? {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Tok::Punct('@') => {
                    let negate = lx.eat('!');
                    let p = lx.word()?;
                    let reg = self.reg(&p, line)?;
                    let op = lx.word()?;
                    self.instruction(lx, program, &op, Some((reg, negate)), line)?;
                }
                Tok::Word(w) if lx.peek() == Some(&Tok::Punct(':')) => {
                    lx.pos += 1;
                    self.labels.insert(w, self.body.len() as u32);
                }
                Tok::Word(w) if w.starts_with('.') => self.directive(lx, program, &w, line)?,
                Tok::Word(w) => self.instruction(lx, program, &w, None, line)?,
                other => return Err(format!("line {line}: unexpected {other:?}")),
            }
        }
        for (inst, arg, label) in std::mem::take(&mut self.pending) {
            let target = *self
                .labels
                .get(&label)
                .ok_or_else(|| format!("label {label} is not defined"))?;
            self.body[inst].args[arg] = Operand::Label(target);
        }
        Ok(Parsed {
            new_shared: self.new_shared,
            regs: self.nregs,
            out_size: self.out_size,
            local_size: self.local_size,
            body: self.body,
            shared_used: self.shared_used,
        })
    }

    fn reg(&self, name: &str, line: u32) -> Result<u32, String> {
        self.regs
            .get(name)
            .copied()
            .ok_or_else(|| format!("line {line}: register {name} is not declared"))
    }

    fn directive(
        &mut self,
        lx: &mut Lexer,
        _program: &Program,
        w: &str,
        line: u32,
    ) -> Result<(), String> {
        match w {
            ".reg" => {
                let tyw = lx.word()?;
                if tyw.strip_prefix('.').and_then(Ty::parse).is_none() {
                    return Err(format!(
                        "line {line}: register type `{tyw}` is not implemented"
                    ));
                }
                loop {
                    let name = lx.word()?;
                    if lx.eat('<') {
                        let n = lx.number()?;
                        lx.expect('>')?;
                        for i in 0..n {
                            self.regs.insert(format!("{name}{i}"), self.nregs);
                            self.nregs += 1;
                        }
                    } else {
                        self.regs.insert(name, self.nregs);
                        self.nregs += 1;
                    }
                    if !lx.eat(',') {
                        break;
                    }
                }
                lx.expect(';')
            }
            ".local" => {
                let var = variable(lx)?;
                let at = self.local_size.div_ceil(var.align) * var.align;
                self.local_size = at + var.size;
                self.symbols.insert(var.name, Operand::Local(at));
                Ok(())
            }
            ".param" => {
                lx.pos -= 1;
                let mut decl = param_decl(lx)?;
                lx.expect(';')?;
                let at = self.out_size.div_ceil(decl.align) * decl.align;
                decl.offset = at;
                self.out_size = at + decl.size;
                self.out_params.insert(decl.name.clone(), (at, decl.size));
                self.symbols.insert(decl.name, Operand::Out(at));
                Ok(())
            }
            ".pragma" => {
                while !lx.eat(';') {
                    lx.next()?;
                }
                Ok(())
            }
            ".shared" => {
                // Function-scoped shared variables live with the module's (one copy per block).
                let var = variable(lx)?;
                let index = (self.shared_base + self.new_shared.len()) as u32;
                self.symbols
                    .insert(var.name.clone(), Operand::Shared(index));
                self.new_shared.push(var);
                Ok(())
            }
            ".global" | ".const" => Err(format!(
                "line {line}: function-scoped {w} variables are not implemented"
            )),
            other => Err(format!(
                "line {line}: directive `{other}` is not implemented"
            )),
        }
    }

    fn operand(&mut self, lx: &mut Lexer, line: u32) -> Result<Operand, String> {
        if lx.eat('[') {
            let base = if matches!(lx.peek(), Some(Tok::Word(_))) {
                self.value(lx, line)?
            } else {
                Operand::Imm(lx.number()? as u64)
            };
            let mut offset = 0;
            if lx.eat('+') {
                offset = lx.number()?;
            } else if lx.eat('-') {
                offset = -lx.number()?;
            }
            lx.expect(']')?;
            return Ok(Operand::Addr(Box::new(base), offset));
        }
        if lx.eat('{') {
            let mut regs = Vec::new();
            loop {
                let w = lx.word()?;
                regs.push(self.reg(&w, line)?);
                if !lx.eat(',') {
                    break;
                }
            }
            lx.expect('}')?;
            return Ok(Operand::Vector(regs));
        }
        if lx.eat('-') {
            let w = lx.word()?;
            let v = parse_imm(&w).ok_or_else(|| format!("line {line}: bad number -{w}"))?;
            return Ok(Operand::Imm(v.wrapping_neg()));
        }
        let first = self.value(lx, line)?;
        if let Operand::Reg(p) = first {
            if lx.peek() == Some(&Tok::Punct('|')) {
                lx.pos += 1;
                let w = lx.word()?;
                return Ok(Operand::PredPair(p, self.reg(&w, line)?));
            }
        }
        Ok(first)
    }

    /// A register, special register, immediate, symbol or label name.
    fn value(&mut self, lx: &mut Lexer, line: u32) -> Result<Operand, String> {
        let w = lx.word()?;
        if let Some(&r) = self.regs.get(&w) {
            return Ok(Operand::Reg(r));
        }
        if let Some(s) = special(&w) {
            return Ok(Operand::Special(s));
        }
        if w.starts_with('%') {
            return Err(format!(
                "line {line}: register or special register {w} is not implemented"
            ));
        }
        if w.as_bytes()[0].is_ascii_digit() {
            return parse_imm(&w)
                .map(Operand::Imm)
                .ok_or_else(|| format!("line {line}: bad number {w}"));
        }
        if let Some(sym) = self.symbols.get(&w) {
            if let Operand::Shared(i) = sym {
                if !self.shared_used.contains(i) {
                    self.shared_used.push(*i);
                }
            }
            return Ok(sym.clone());
        }
        // A label (resolved at the end of the body).
        Ok(Operand::Name(w))
    }

    fn instruction(
        &mut self,
        lx: &mut Lexer,
        program: &Program,
        opcode: &str,
        guard: Option<(u32, bool)>,
        line: u32,
    ) -> Result<(), String> {
        let mut inst = decode(opcode).map_err(|e| format!("line {line}: {e}"))?;
        inst.guard = guard;
        inst.line = line;
        inst.text = opcode.to_string();
        if inst.op == Op::Call {
            inst.call = Some(Box::new(self.call(lx, program, line)?));
            self.body.push(inst);
            return Ok(());
        }
        if inst.op == Op::Bar {
            // bar.sync a{, b}: only the whole-block barrier form.
            let id = self.operand(lx, line)?;
            if lx.eat(',') {
                return Err(format!(
                    "line {line}: bar.sync with a thread count is not implemented"
                ));
            }
            lx.expect(';')?;
            inst.args.push(id);
            self.body.push(inst);
            return Ok(());
        }
        if !lx.eat(';') {
            loop {
                let arg = match self.operand(lx, line)? {
                    Operand::Name(name) if inst.op == Op::Bra => {
                        self.pending.push((self.body.len(), inst.args.len(), name));
                        Operand::Label(u32::MAX)
                    }
                    Operand::Name(name) => {
                        return Err(format!(
                            "line {line}: {name} is not a register, symbol or label"
                        ))
                    }
                    other => other,
                };
                inst.args.push(arg);
                if lx.eat(';') {
                    break;
                }
                lx.expect(',')?;
            }
        }
        self.body.push(inst);
        Ok(())
    }

    /// `call(.uni) (ret), name, (args);`
    fn call(&mut self, lx: &mut Lexer, program: &Program, line: u32) -> Result<Call, String> {
        let mut ret = None;
        if lx.eat('(') {
            let w = lx.word()?;
            ret =
                Some(*self.out_params.get(&w).ok_or_else(|| {
                    format!("line {line}: call return {w} is not a declared .param")
                })?);
            lx.expect(')')?;
            lx.expect(',')?;
        }
        let name = lx.word()?;
        let func = program
            .functions
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| format!("line {line}: call to undeclared function {name}"))?
            as u32;
        let mut args = Vec::new();
        if lx.eat(',') {
            lx.expect('(')?;
            if !lx.eat(')') {
                loop {
                    let w = lx.word()?;
                    args.push(*self.out_params.get(&w).ok_or_else(|| {
                        format!("line {line}: call argument {w} is not a declared .param")
                    })?);
                    if lx.eat(')') {
                        break;
                    }
                    lx.expect(',')?;
                }
            }
        }
        lx.expect(';')?;
        Ok(Call { func, ret, args })
    }
}

/// Splits `add.rn.ftz.f32` etc. into an instruction template.
pub fn decode(opcode: &str) -> Result<Inst, String> {
    let mut parts = opcode.split('.');
    let name = parts.next().unwrap_or("");
    let (op, carry_in) = match name {
        "mov" => (Op::Mov, false),
        "add" => (Op::Add, false),
        "addc" => (Op::Add, true),
        "sub" => (Op::Sub, false),
        "subc" => (Op::Sub, true),
        "mul" => (Op::Mul, false),
        "mad" => (Op::Mad, false),
        "madc" => (Op::Mad, true),
        "fma" => (Op::Fma, false),
        "div" => (Op::Div, false),
        "rem" => (Op::Rem, false),
        "neg" => (Op::Neg, false),
        "abs" => (Op::Abs, false),
        "min" => (Op::Min, false),
        "max" => (Op::Max, false),
        "and" => (Op::And, false),
        "or" => (Op::Or, false),
        "xor" => (Op::Xor, false),
        "not" => (Op::Not, false),
        "shl" => (Op::Shl, false),
        "shr" => (Op::Shr, false),
        "clz" => (Op::Clz, false),
        "popc" => (Op::Popc, false),
        "bfi" => (Op::Bfi, false),
        "selp" => (Op::Selp, false),
        "setp" => (Op::Setp, false),
        "cvt" => (Op::Cvt, false),
        "cvta" => (Op::Cvta, false),
        "ld" => (Op::Ld, false),
        "st" => (Op::St, false),
        "bra" => (Op::Bra, false),
        "call" => (Op::Call, false),
        "ret" => (Op::Ret, false),
        "exit" => (Op::Exit, false),
        "bar" | "barrier" => (Op::Bar, false),
        "rcp" => (Op::Rcp, false),
        "sqrt" => (Op::Sqrt, false),
        "rsqrt" => (Op::Rsqrt, false),
        "ex2" => (Op::Ex2, false),
        "lg2" => (Op::Lg2, false),
        "sin" => (Op::Sin, false),
        "cos" => (Op::Cos, false),
        "copysign" => (Op::Copysign, false),
        _ => return Err(format!("instruction `{opcode}` is not implemented")),
    };
    let mut inst = Inst {
        op,
        ty: Ty::None,
        ty2: Ty::None,
        rnd: Rnd::Default,
        ftz: false,
        sat: false,
        approx: false,
        cc: false,
        carry_in,
        mode: MulMode::Lo,
        cmp: Cmp::Eq,
        boolop: None,
        space: Space::Generic,
        to_space: false,
        guard: None,
        args: Vec::new(),
        call: None,
        line: 0,
        text: String::new(),
    };
    let mut types = Vec::new();
    let mut vector = 1;
    for part in parts {
        if let Some(t) = Ty::parse(part) {
            types.push(t);
            continue;
        }
        match (op, part) {
            (_, "rn") => inst.rnd = Rnd::Rn,
            (_, "rz") => inst.rnd = Rnd::Rz,
            (_, "rm") => inst.rnd = Rnd::Rm,
            (_, "rp") => inst.rnd = Rnd::Rp,
            (Op::Cvt, "rni") => inst.rnd = Rnd::Rni,
            (Op::Cvt, "rzi") => inst.rnd = Rnd::Rzi,
            (Op::Cvt, "rmi") => inst.rnd = Rnd::Rmi,
            (Op::Cvt, "rpi") => inst.rnd = Rnd::Rpi,
            (_, "ftz") => inst.ftz = true,
            (_, "sat") => inst.sat = true,
            (_, "approx") => inst.approx = true,
            (Op::Div, "full") => inst.approx = true,
            (Op::Add | Op::Sub | Op::Mad, "cc") => inst.cc = true,
            (Op::Mul | Op::Mad, "lo") => inst.mode = MulMode::Lo,
            (Op::Mul | Op::Mad, "hi") => inst.mode = MulMode::Hi,
            (Op::Mul | Op::Mad, "wide") => inst.mode = MulMode::Wide,
            (Op::Bra | Op::Call | Op::Ret, "uni") => {}
            (Op::Bar, "sync") => {}
            (Op::Ld, "nc") => {}
            (Op::Ld | Op::St | Op::Cvta, "global") => inst.space = Space::Global,
            (Op::Ld | Op::St | Op::Cvta, "shared") => inst.space = Space::Shared,
            (Op::Ld | Op::St | Op::Cvta, "local") => inst.space = Space::Local,
            (Op::Ld | Op::St | Op::Cvta, "param") => inst.space = Space::Param,
            (Op::Ld | Op::Cvta, "const") => inst.space = Space::Const,
            (Op::Cvta, "to") => inst.to_space = true,
            (Op::Ld | Op::St, "v2") => vector = 2,
            (Op::Ld | Op::St, "v4") => vector = 4,
            (Op::Setp, c) if cmp(c).is_some() && inst.boolop.is_none() && types.is_empty() => {
                if let Some(c) = cmp(c) {
                    inst.cmp = c;
                }
            }
            (Op::Setp, "and") => inst.boolop = Some(BoolOp::And),
            (Op::Setp, "or") => inst.boolop = Some(BoolOp::Or),
            (Op::Setp, "xor") => inst.boolop = Some(BoolOp::Xor),
            _ => {
                return Err(format!(
                    "modifier `.{part}` of `{opcode}` is not implemented"
                ))
            }
        }
    }
    let _ = vector;
    match (op, types.as_slice()) {
        (Op::Bra | Op::Call | Op::Ret | Op::Exit | Op::Bar, []) => {}
        (Op::Cvt, [d, s]) => {
            inst.ty = *d;
            inst.ty2 = *s;
        }
        (_, [t]) => inst.ty = *t,
        _ => return Err(format!("the types of `{opcode}` are not implemented")),
    }
    if matches!(inst.ty, Ty::None)
        && !matches!(op, Op::Bra | Op::Call | Op::Ret | Op::Exit | Op::Bar)
    {
        return Err(format!("`{opcode}` has no type"));
    }
    Ok(inst)
}

fn cmp(s: &str) -> Option<Cmp> {
    Some(match s {
        "eq" => Cmp::Eq,
        "ne" => Cmp::Ne,
        "lt" => Cmp::Lt,
        "le" => Cmp::Le,
        "gt" => Cmp::Gt,
        "ge" => Cmp::Ge,
        "equ" => Cmp::Equ,
        "neu" => Cmp::Neu,
        "ltu" => Cmp::Ltu,
        "leu" => Cmp::Leu,
        "gtu" => Cmp::Gtu,
        "geu" => Cmp::Geu,
        "num" => Cmp::Num,
        "nan" => Cmp::Nan,
        _ => return None,
    })
}
