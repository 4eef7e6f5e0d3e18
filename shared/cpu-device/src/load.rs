//! PTX text to the decoded program: the module's variables laid out in memory, every
//! function's instructions decoded, every name resolved. An instruction the interpreter does
//! not know is an error naming it, its function and its line, here, before anything runs.

use std::collections::HashMap;

use crate::ir::*;
use crate::lex::{tokens, Tok, Token};
use crate::memory::{Memory, Region};

/// A module-level variable.
#[derive(Debug)]
pub struct Variable {
    pub name: String,
    pub space: Space,
    /// For global and constant variables, its memory; for shared ones, its offset.
    pub address: u64,
    pub size: u64,
}

/// A loaded module: code, functions, and the memory of its variables.
#[derive(Debug)]
pub struct Module {
    pub code: Vec<Inst>,
    pub functions: Vec<Function>,
    pub by_name: HashMap<String, u32>,
    pub variables: Vec<Variable>,
    /// Bytes of static shared memory a block needs, and where dynamic shared memory starts.
    pub shared_bytes: u32,
    /// The memory regions this module owns (its global and constant variables).
    pub regions: Vec<Region>,
    /// The CUDA C++ files that NVRTC's `-lineinfo` names (`.file 1 "mandelbrot.cu"`).
    pub files: HashMap<u64, String>,
    /// Each instruction's place in them, as its `.loc` gave it: (file, line), or none.
    pub sources: Vec<Option<(u64, u64)>>,
}

impl Module {
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.by_name.get(name).map(|&i| &self.functions[i as usize])
    }

    /// Where the instruction at `pc` came from, for a message: `mandelbrot.cu line 47; PTX
    /// line 299` where the PTX has NVRTC's line information, else `PTX line 299`.
    pub fn place(&self, pc: u32) -> String {
        let ptx = self.code.get(pc as usize).map_or(0, |i| i.line);
        match self.sources.get(pc as usize).copied().flatten() {
            Some((file, line)) => format!(
                "{} line {line}; PTX line {ptx}",
                self.files
                    .get(&file)
                    .map_or("the kernel's file", String::as_str)
            ),
            None => format!("PTX line {ptx}"),
        }
    }
}

/// An error while loading: what, and where.
pub type LoadResult<T> = Result<T, String>;

struct Cursor<'a> {
    toks: &'a [Token],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }
    fn line(&self) -> u32 {
        self.toks
            .get(self.pos.min(self.toks.len().saturating_sub(1)))
            .map_or(0, |t| t.line)
    }
    fn next(&mut self) -> LoadResult<&'a Tok> {
        let t = self
            .toks
            .get(self.pos)
            .ok_or_else(|| "the PTX ends in the middle of a statement".to_string())?;
        self.pos += 1;
        Ok(&t.tok)
    }
    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }
    fn is_name(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Name(n)) if n == s)
    }
    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect_punct(&mut self, c: char) -> LoadResult<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            Err(format!(
                "line {}: expected `{c}`, found {}",
                self.line(),
                describe(self.peek())
            ))
        }
    }
    fn name(&mut self) -> LoadResult<&'a str> {
        match self.next()? {
            Tok::Name(n) => Ok(n),
            other => Err(format!(
                "line {}: expected a name, found {}",
                self.line(),
                describe(Some(other))
            )),
        }
    }
    fn number(&mut self) -> LoadResult<u64> {
        match self.next()? {
            Tok::Num(n) => parse_int(n)
                .map(|v| v as u64)
                .ok_or_else(|| format!("line {}: `{n}` is not a whole number", self.line())),
            other => Err(format!(
                "line {}: expected a number, found {}",
                self.line(),
                describe(Some(other))
            )),
        }
    }
    fn skip_to_semicolon(&mut self) -> LoadResult<()> {
        while !self.eat_punct(';') {
            self.next()?;
        }
        Ok(())
    }
}

fn describe(t: Option<&Tok>) -> String {
    match t {
        None => "the end".to_string(),
        Some(Tok::Name(s) | Tok::Num(s)) => format!("`{s}`"),
        Some(Tok::Str(s)) => format!("\"{s}\""),
        Some(Tok::Punct(c)) => format!("`{c}`"),
    }
}

fn parse_int(s: &str) -> Option<i128> {
    let s = s.trim_end_matches('U');
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i128::from_str_radix(hex, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit()) {
        i128::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

/// A declaration parsed from `.param .align 4 .b8 name[12]` and the like.
struct Decl {
    align: u32,
    ty: Ty,
    name: String,
    count: u64,
    vector: u32,
    /// `[]`: an unsized array (dynamic shared memory).
    unsized_array: bool,
}

fn decl(c: &mut Cursor) -> LoadResult<Decl> {
    let mut align = 0;
    let mut vector = 1;
    let ty = loop {
        let word = c.name()?;
        match word {
            ".align" => align = c.number()? as u32,
            ".v2" => vector = 2,
            ".v4" => vector = 4,
            ".ptr" | ".global" | ".const" | ".shared" | ".local" => {}
            _ => {
                if let Some(ty) = word.strip_prefix('.').and_then(Ty::parse) {
                    break ty;
                }
                return Err(format!(
                    "line {}: `{word}` is not a type the CPU device knows",
                    c.line()
                ));
            }
        }
    };
    let name = c.name()?.to_string();
    let mut count = 1u64;
    let mut unsized_array = false;
    while c.eat_punct('[') {
        if c.eat_punct(']') {
            unsized_array = true;
            continue;
        }
        count = count
            .checked_mul(c.number()?)
            .ok_or_else(|| format!("line {}: `{name}` has more elements than 2^64", c.line()))?;
        c.expect_punct(']')?;
    }
    let size = ty.bytes().max(1) * vector;
    Ok(Decl {
        align: if align == 0 { size } else { align },
        ty,
        name,
        count,
        vector,
        unsized_array,
    })
}

impl Decl {
    fn bytes(&self) -> u64 {
        u64::from(self.ty.bytes().max(1) * self.vector).saturating_mul(self.count)
    }
}

/// A function's header, found in the first pass; its body is decoded in the second.
struct Header {
    name: String,
    entry: bool,
    params: Vec<Decl>,
    retval: Option<Decl>,
    body: Option<(usize, usize)>,
}

enum Init {
    Num(u64),
    Sym(String),
}

struct VarDecl {
    space: Space,
    decl: Decl,
    init: Vec<Init>,
}

/// Load `ptx` into `memory`: variables allocated and initialised, code decoded.
pub fn load(ptx: &str, memory: &Memory) -> LoadResult<Module> {
    let toks = tokens(ptx)?;
    let mut c = Cursor {
        toks: &toks,
        pos: 0,
    };
    let (headers, vars, files) = directives(&mut c)?;
    let mut module = Module {
        code: Vec::new(),
        functions: Vec::new(),
        by_name: HashMap::new(),
        variables: Vec::new(),
        shared_bytes: 0,
        regions: Vec::new(),
        files,
        sources: Vec::new(),
    };
    for (i, h) in headers.iter().enumerate() {
        module.by_name.insert(h.name.clone(), i as u32);
    }
    place_variables(&mut module, &vars, memory)?;
    initialise_variables(&module, &vars, memory)?;
    for h in &headers {
        let function = decode_function(&toks, h, &mut module)?;
        module.functions.push(function);
    }
    builtins(&mut module);
    Ok(module)
}

/// Calls of the functions the GPU's driver provides rather than the module (declared
/// `.extern`, with no body), which the interpreter runs itself: `vprintf`.
fn builtins(module: &mut Module) {
    for inst in &mut module.code {
        let Op::Call {
            target: CallTarget::Direct(i),
            args,
            ret,
        } = &inst.op
        else {
            continue;
        };
        let f = &module.functions[*i as usize];
        if f.name == "vprintf" && f.start == f.end && args.len() == 2 {
            inst.op = Op::Printf {
                format: args[0].0,
                args: args[1].0,
                ret: ret.map(|r| r.0),
            };
        }
    }
}

/// The module's directives, in order: its functions' headers (a declaration and its
/// definition merged) and its variables' declarations.
/// The module's functions, variables and source files, from its top-level directives.
type Directives = (Vec<Header>, Vec<VarDecl>, HashMap<u64, String>);

fn directives(c: &mut Cursor) -> LoadResult<Directives> {
    let mut headers: Vec<Header> = Vec::new();
    let mut vars: Vec<VarDecl> = Vec::new();
    let mut files = HashMap::new();
    while let Some(tok) = c.peek() {
        let Tok::Name(word) = tok else {
            return Err(format!(
                "line {}: unexpected {}",
                c.line(),
                describe(Some(tok))
            ));
        };
        match word.as_str() {
            ".version" => {
                c.next()?;
                c.next()?;
            }
            ".target" => {
                c.next()?;
                c.name()?;
                while c.eat_punct(',') {
                    c.name()?;
                }
            }
            ".address_size" => {
                c.next()?;
                if c.number()? != 64 {
                    return Err("the CPU device runs 64-bit PTX only".to_string());
                }
            }
            ".visible" | ".extern" | ".weak" | ".common" => {
                c.next()?;
            }
            ".entry" | ".func" => {
                let entry = word == ".entry";
                c.next()?;
                let header = function_header(c, entry)?;
                if let Some(known) = headers.iter_mut().find(|h| h.name == header.name) {
                    if header.body.is_some() {
                        known.body = header.body;
                    }
                } else {
                    headers.push(header);
                }
            }
            ".global" | ".const" | ".shared" => {
                let space = match word.as_str() {
                    ".global" => Space::Global,
                    ".const" => Space::Const,
                    _ => Space::Shared,
                };
                c.next()?;
                let decl = decl(c)?;
                let mut init = Vec::new();
                if c.eat_punct('=') {
                    init_values(c, &mut init)?;
                }
                c.expect_punct(';')?;
                vars.push(VarDecl { space, decl, init });
            }
            ".pragma" => c.skip_to_semicolon()?,
            ".file" => {
                // `.file 1 "k.cu"` (NVRTC's -lineinfo), with no semicolon; optionally
                // followed by the file's timestamp and size.
                c.next()?;
                let index = c.number()?;
                if let Tok::Str(name) = c.next()? {
                    // NVRTC writes the program's name after the folder it ran in: the name
                    // alone is the student's, and no host path reaches a message.
                    let name = name.rsplit(['/', '\\']).next().unwrap_or(name);
                    files.insert(index, name.to_string());
                }
                while c.eat_punct(',') {
                    c.number()?;
                }
            }
            ".loc" => {
                c.next()?;
                read_loc(c)?;
            }
            ".section" => {
                // `.section .debug_info { ... }` (NVRTC's -G): debugging data, skipped.
                c.next()?;
                c.name()?;
                c.expect_punct('{')?;
                let mut depth = 1;
                while depth > 0 {
                    match c.next()? {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') => depth -= 1,
                        _ => {}
                    }
                }
            }
            _ => {
                return Err(format!(
                    "line {}: the module-level directive `{word}` is not known to the CPU device",
                    c.line()
                ))
            }
        }
    }
    Ok((headers, vars, files))
}

/// Give each variable its address: global and constant ones get memory of their own (their
/// address is what `mov` of their name gives); shared ones an offset in each block's shared
/// memory.
fn place_variables(module: &mut Module, vars: &[VarDecl], memory: &Memory) -> LoadResult<()> {
    let mut shared = 0u64;
    for v in vars {
        let size = v.decl.bytes();
        let address = match v.space {
            Space::Shared => {
                let align = u64::from(v.decl.align.max(1));
                shared = shared.div_ceil(align) * align;
                let at = shared;
                if !v.decl.unsized_array {
                    shared = shared.saturating_add(size);
                }
                at
            }
            _ => {
                let region = memory.alloc(size.max(1), &format!("`{}`", v.decl.name))?;
                let at = region.address;
                module.regions.push(region);
                at
            }
        };
        module.variables.push(Variable {
            name: v.decl.name.clone(),
            space: v.space,
            address,
            size,
        });
    }
    module.shared_bytes = u32::try_from(shared).map_err(|_| "too much shared memory")?;
    Ok(())
}

/// Write the initial values of global and constant variables, now that every name has an
/// address.
fn initialise_variables(module: &Module, vars: &[VarDecl], memory: &Memory) -> LoadResult<()> {
    for (v, var) in vars.iter().zip(&module.variables) {
        if v.init.is_empty() || var.space == Space::Shared {
            continue;
        }
        let width = u64::from(v.decl.ty.bytes().max(1));
        let mut bytes = Vec::with_capacity(var.size as usize);
        for item in &v.init {
            let value = match item {
                Init::Num(n) => *n,
                Init::Sym(s) => symbol_address(module, s).ok_or_else(|| {
                    format!(
                        "`{}` is initialised with `{s}`, which is not defined",
                        var.name
                    )
                })?,
            };
            bytes.extend_from_slice(&value.to_le_bytes()[..width as usize]);
        }
        bytes.truncate(var.size as usize);
        memory.write(var.address, &bytes)?;
    }
    Ok(())
}

fn init_values(c: &mut Cursor, out: &mut Vec<Init>) -> LoadResult<()> {
    if c.eat_punct('{') {
        loop {
            if c.is_punct('{') {
                init_values(c, out)?;
            } else {
                out.push(init_value(c)?);
            }
            if !c.eat_punct(',') {
                break;
            }
        }
        c.expect_punct('}')
    } else {
        out.push(init_value(c)?);
        Ok(())
    }
}

fn init_value(c: &mut Cursor) -> LoadResult<Init> {
    let negative = c.eat_punct('-');
    match c.next()? {
        Tok::Num(n) => {
            let v = immediate(n).ok_or_else(|| format!("line {}: bad number `{n}`", c.line()))?;
            Ok(Init::Num(if negative { v.wrapping_neg() } else { v }))
        }
        Tok::Name(n) if n == "generic" => {
            c.expect_punct('(')?;
            let s = c.name()?.to_string();
            c.expect_punct(')')?;
            Ok(Init::Sym(s))
        }
        Tok::Name(n) => Ok(Init::Sym(n.clone())),
        other => Err(format!(
            "line {}: unexpected {} in an initial value",
            c.line(),
            describe(Some(other))
        )),
    }
}

/// An immediate's bits: integers as written, `0d` and `0f` floats as their bit patterns,
/// decimal floats as an f64's bits.
fn immediate(n: &str) -> Option<u64> {
    if let Some(bits) = n.strip_prefix("0d").or_else(|| n.strip_prefix("0D")) {
        return u64::from_str_radix(bits, 16).ok();
    }
    if let Some(bits) = n.strip_prefix("0f").or_else(|| n.strip_prefix("0F")) {
        return u32::from_str_radix(bits, 16).ok().map(u64::from);
    }
    if n.contains('.') || (n.contains(['e', 'E']) && !n.starts_with("0x")) {
        return n.parse::<f64>().ok().map(f64::to_bits);
    }
    parse_int(n).map(|v| v as u64)
}

fn function_header(c: &mut Cursor, entry: bool) -> LoadResult<Header> {
    let mut retval = None;
    if c.eat_punct('(') {
        if !c.is_name(".param") {
            return Err(format!(
                "line {}: the CPU device runs functions that return through .param only",
                c.line()
            ));
        }
        c.next()?;
        retval = Some(decl(c)?);
        c.expect_punct(')')?;
    }
    let name = c.name()?.to_string();
    let mut params = Vec::new();
    if c.eat_punct('(') {
        while !c.eat_punct(')') {
            match c.next()? {
                Tok::Name(n) if n == ".param" => params.push(decl(c)?),
                Tok::Punct(',') => {}
                other => {
                    return Err(format!(
                        "line {}: `{name}` takes a parameter the CPU device cannot pass: {}",
                        c.line(),
                        describe(Some(other))
                    ))
                }
            }
        }
    }
    // Performance directives (`.maxntid 256, 1, 1`, `.noreturn`, ...) say nothing the
    // interpreter needs.
    while let Some(Tok::Name(n)) = c.peek() {
        if !n.starts_with('.') {
            break;
        }
        c.next()?;
        while matches!(c.peek(), Some(Tok::Num(_))) {
            c.next()?;
            c.eat_punct(',');
        }
    }
    let body = if c.eat_punct(';') {
        None
    } else {
        c.expect_punct('{')?;
        let start = c.pos;
        let mut depth = 1;
        while depth > 0 {
            match c.next()? {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => depth -= 1,
                _ => {}
            }
        }
        Some((start, c.pos - 1))
    };
    Ok(Header {
        name,
        entry,
        params,
        retval,
        body,
    })
}

fn symbol_address(module: &Module, name: &str) -> Option<u64> {
    if let Some(v) = module.variables.iter().find(|v| v.name == name) {
        return Some(v.address);
    }
    module
        .by_name
        .get(name)
        .map(|&i| FUNCTION_ADDRESS_BASE + u64::from(i) * 16)
}

/// A parsed operand, before it is resolved against the function's names.
#[derive(Debug, Clone)]
enum Operand {
    Name(String),
    Num(String, bool),
    Address(Box<Operand>, i64),
    Vector(Vec<Operand>),
    Not(Box<Operand>),
    Pair(Box<Operand>, Box<Operand>),
    Sink,
}

/// What a name means inside a function.
#[derive(Clone, Copy, Debug)]
enum Name {
    Reg(Reg),
    FrameParam(u32),
    KernelParam(u32),
    Local(u32),
    /// A shared variable declared inside the function: its offset in shared memory.
    Shared(u64),
}

struct Scope {
    names: HashMap<String, Name>,
    next_param: u32,
}

struct FnDecoder<'m> {
    module: &'m Module,
    scopes: Vec<Scope>,
    regs: u32,
    param_bytes: u32,
    local_bytes: u32,
    /// Where the next shared variable declared inside a function goes.
    shared_end: u64,
    function: String,
    line: u32,
    /// The `.cu` file and line of the last `.loc`.
    source: Option<(u64, u64)>,
}

impl FnDecoder<'_> {
    fn lookup(&self, name: &str) -> Option<Name> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.names.get(name).copied())
    }
    fn declare(&mut self, name: &str, what: Name) {
        if let Some(s) = self.scopes.last_mut() {
            s.names.insert(name.to_string(), what);
        }
    }
    fn new_reg(&mut self) -> Reg {
        self.regs += 1;
        self.regs - 1
    }
    fn param_slot(&mut self, size: u32, align: u32) -> u32 {
        let scope = self
            .scopes
            .last_mut()
            .map_or(&mut self.param_bytes, |s| &mut s.next_param);
        // Saturating: a frame past 2^32 bytes is far past the GPU's limit, which the launch
        // refuses.
        let align = align.max(1);
        let at = scope.div_ceil(align).saturating_mul(align);
        *scope = at.saturating_add(size);
        let end = *scope;
        self.param_bytes = self.param_bytes.max(end);
        at
    }
    /// A `{` inside a body: its names are its own, its `.param`s go after the enclosing
    /// scope's.
    fn open_scope(&mut self) {
        let next_param = self.scopes.last().map_or(0, |s| s.next_param);
        self.scopes.push(Scope {
            names: HashMap::new(),
            next_param,
        });
    }
    fn err(&self, what: impl std::fmt::Display) -> String {
        match self.source {
            Some((file, line)) => format!(
                "{} ({} line {line}; PTX line {}): {what}",
                self.function,
                self.module
                    .files
                    .get(&file)
                    .map_or("the kernel's file", String::as_str),
                self.line
            ),
            None => format!("{} (PTX line {}): {what}", self.function, self.line),
        }
    }
    fn unknown(&self, opcode: &str) -> String {
        self.err(format!(
            "the CPU device does not know the instruction `{opcode}`, so it refuses to run the kernel rather than guess"
        ))
    }
}

fn decode_function(toks: &[Token], h: &Header, module: &mut Module) -> LoadResult<Function> {
    let start = module.code.len() as u32;
    let mut f = Function {
        name: h.name.clone(),
        entry: h.entry,
        start,
        end: start,
        ..Function::default()
    };
    let Some((body_start, body_end)) = h.body else {
        return Ok(f);
    };
    let mut d = FnDecoder {
        module,
        scopes: vec![Scope {
            names: HashMap::new(),
            next_param: 0,
        }],
        regs: 0,
        param_bytes: 0,
        local_bytes: 0,
        shared_end: u64::from(module.shared_bytes),
        function: h.name.clone(),
        line: 0,
        source: None,
    };
    declare_params(&mut d, h, &mut f);
    let mut code: Vec<Inst> = Vec::new();
    let mut sources: Vec<Option<(u64, u64)>> = Vec::new();
    // Which instructions name no rounding: a multiply and an add ptxas may fuse.
    let mut loose: Vec<bool> = Vec::new();
    let mut labels: HashMap<String, u32> = HashMap::new();
    let mut fixups: Vec<(usize, String)> = Vec::new();
    let mut c = Cursor {
        toks: &toks[..body_end],
        pos: body_start,
    };
    while c.peek().is_some() {
        d.line = c.line();
        if c.eat_punct('{') {
            d.open_scope();
            continue;
        }
        if c.eat_punct('}') {
            d.scopes.pop();
            continue;
        }
        let guard = guard(&d, &mut c)?;
        let word = c.name()?.to_string();
        // A label, or a call prototype's name.
        if c.is_punct(':') {
            c.next()?;
            if c.is_name(".callprototype") {
                c.skip_to_semicolon()?;
            } else {
                labels.insert(word, (start as usize + code.len()) as u32);
            }
            continue;
        }
        if declaration(&mut d, &mut c, &word)? {
            continue;
        }
        let operands = operands(&mut c)?;
        let index = code.len();
        let op = decode(&mut d, &word, &operands, |label| {
            fixups.push((index, label.to_string()));
        })?;
        loose.push(loose_rounding(&word));
        if matches!(op, Op::Bar | Op::BarRed { .. }) {
            f.barriers = true;
        }
        code.push(Inst {
            guard,
            op,
            line: d.line,
        });
        sources.push(d.source);
    }
    resolve_branches(&mut code, fixups, &labels, &h.name)?;
    contract(&mut code, &loose, &labels, start);
    // A function that runs off its end returns.
    code.push(Inst {
        guard: None,
        op: Op::Ret,
        line: d.line,
    });
    sources.push(d.source);
    f.regs = d.regs;
    f.param_bytes = d.param_bytes;
    f.local_bytes = d.local_bytes;
    let shared_end = d.shared_end;
    f.shared_bytes = u32::try_from(shared_end - u64::from(module.shared_bytes))
        .map_err(|_| "too much shared memory")?;
    module.shared_bytes = u32::try_from(shared_end).map_err(|_| "too much shared memory")?;
    module.code.extend(code);
    module.sources.extend(sources);
    f.end = module.code.len() as u32;
    Ok(f)
}

/// Point each branch (`fixups`: its index in `code`, its label) at its label's instruction.
fn resolve_branches(
    code: &mut [Inst],
    fixups: Vec<(usize, String)>,
    labels: &HashMap<String, u32>,
    function: &str,
) -> LoadResult<()> {
    for (index, label) in fixups {
        let target = *labels
            .get(&label)
            .ok_or_else(|| format!("{function}: the label `{label}` is not defined"))?;
        if let Op::Bra { target: t } = &mut code[index].op {
            *t = target;
        }
    }
    Ok(())
}

/// Declare the function's parameters and return value, and record their layout in `f`.
fn declare_params(d: &mut FnDecoder, h: &Header, f: &mut Function) {
    // Formal parameters: an entry's live in the launch's buffer, laid out as the driver
    // lays out kernel arguments (each at its own alignment); a function's in its frame.
    let mut kernel_offset = 0u32;
    for p in &h.params {
        let size = u32::try_from(p.bytes()).unwrap_or(u32::MAX);
        let off = if h.entry {
            kernel_offset = kernel_offset
                .div_ceil(p.align.max(1))
                .saturating_mul(p.align.max(1));
            let at = kernel_offset;
            kernel_offset = kernel_offset.saturating_add(size);
            d.declare(&p.name, Name::KernelParam(at));
            at
        } else {
            let at = d.param_slot(size, p.align);
            d.declare(&p.name, Name::FrameParam(at));
            at
        };
        f.params.push((off, size, p.align));
    }
    if let Some(r) = &h.retval {
        let size = r.bytes() as u32;
        let at = d.param_slot(size, r.align);
        d.declare(&r.name, Name::FrameParam(at));
        f.retval = Some((at, size));
    }
}

/// A declaration inside the body (`.reg`, `.local`, `.param`, `.shared`) or a `.pragma`
/// starting with `word`: read it and say so, or say that `word` starts an instruction.
fn declaration(d: &mut FnDecoder, c: &mut Cursor, word: &str) -> LoadResult<bool> {
    match word {
        ".reg" => {
            let ty_word = c.name()?;
            if let Some(v) = ty_word.strip_prefix(".v") {
                return Err(d.err(format!("vector registers (.v{v}) are not supported")));
            }
            loop {
                let name = c.name()?.to_string();
                if c.eat_punct('<') {
                    let n = c.number()?;
                    c.expect_punct('>')?;
                    if u64::from(d.regs).saturating_add(n) > crate::exec::MAX_REGISTER_SLOTS {
                        return Err(d.err(format!(
                            "`{name}<{n}>` declares more registers than the {} the CPU device holds",
                            crate::exec::MAX_REGISTER_SLOTS
                        )));
                    }
                    for i in 0..n {
                        let r = d.new_reg();
                        d.declare(&format!("{name}{i}"), Name::Reg(r));
                    }
                } else {
                    let r = d.new_reg();
                    d.declare(&name, Name::Reg(r));
                }
                if !c.eat_punct(',') {
                    break;
                }
            }
            c.expect_punct(';')?;
            Ok(true)
        }
        ".local" => {
            let v = decl(c)?;
            c.expect_punct(';')?;
            let align = u64::from(v.align.max(1));
            let at = u64::from(d.local_bytes).div_ceil(align) * align;
            // Saturating: the launch refuses past 512 KiB a thread.
            let at = u32::try_from(at).unwrap_or(u32::MAX);
            d.local_bytes = u32::try_from(u64::from(at) + v.bytes()).unwrap_or(u32::MAX);
            d.declare(&v.name, Name::Local(at));
            Ok(true)
        }
        ".param" => {
            let v = decl(c)?;
            c.expect_punct(';')?;
            let at = d.param_slot(u32::try_from(v.bytes()).unwrap_or(u32::MAX), v.align);
            d.declare(&v.name, Name::FrameParam(at));
            Ok(true)
        }
        ".shared" => {
            // A `static __shared__` used by one kernel: laid out after the module's.
            let v = decl(c)?;
            c.expect_punct(';')?;
            let align = u64::from(v.align.max(1));
            let at = d.shared_end.div_ceil(align).saturating_mul(align);
            d.shared_end = at.saturating_add(v.bytes());
            d.declare(&v.name, Name::Shared(at));
            Ok(true)
        }
        ".pragma" => {
            c.skip_to_semicolon()?;
            Ok(true)
        }
        ".loc" => {
            d.source = read_loc(c)?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// What follows `.loc` (NVRTC's -lineinfo and -G, no semicolon): `file line column`, with
/// its optional `, function_name name` and `, inlined_at file line column` parts. The file
/// and line (those of the code itself, inlined or not), or none for line 0 (no line).
fn read_loc(c: &mut Cursor) -> LoadResult<Option<(u64, u64)>> {
    let (file, line) = (c.number()?, c.number()?);
    c.number()?;
    while c.eat_punct(',') {
        match c.name()? {
            "inlined_at" => {
                for _ in 0..3 {
                    c.number()?;
                }
            }
            _ => {
                c.name()?;
            }
        }
    }
    Ok((line > 0).then_some((file, line)))
}

/// An instruction's guard, `@p` or `@!p`, if it has one.
fn guard(d: &FnDecoder, c: &mut Cursor) -> LoadResult<Option<(Reg, bool)>> {
    if !c.eat_punct('@') {
        return Ok(None);
    }
    let negate = c.eat_punct('!');
    let p = c.name()?;
    match d.lookup(p) {
        Some(Name::Reg(r)) => Ok(Some((r, negate))),
        _ => Err(d.err(format!("`{p}` is not a predicate register"))),
    }
}

/// An instruction's operands, up to and including its `;`.
fn operands(c: &mut Cursor) -> LoadResult<Vec<Operand>> {
    let mut operands = Vec::new();
    if !c.is_punct(';') {
        loop {
            operands.push(operand(c)?);
            if !c.eat_punct(',') {
                break;
            }
        }
    }
    c.expect_punct(';')?;
    Ok(operands)
}

/// Whether `opcode` is an f32 or f64 multiply, add or subtract that names no rounding: PTX
/// leaves ptxas free to fuse such a multiply into the add that uses it.
fn loose_rounding(opcode: &str) -> bool {
    let parts: Vec<&str> = opcode.split('.').collect();
    matches!(parts[0], "mul" | "add" | "sub")
        && parts.iter().any(|p| matches!(*p, "f32" | "f64"))
        && !parts
            .iter()
            .any(|p| matches!(*p, "rn" | "rz" | "rm" | "rp"))
}

/// Fuse as ptxas does (seen on an H100 by the differential test): a loose multiply whose
/// result is read once, by a loose add or subtract of the same type later in its block, with
/// its operands unchanged in between, becomes one fused multiply-add there. lab03's loop
/// keeps its multiplies: their results are read twice.
fn contract(code: &mut [Inst], loose: &[bool], labels: &HashMap<String, u32>, start: u32) {
    let targets: std::collections::HashSet<usize> =
        labels.values().map(|&t| (t - start) as usize).collect();
    let mut reads: HashMap<Reg, usize> = HashMap::new();
    for inst in code.iter() {
        for r in reads_of(&inst.op) {
            *reads.entry(r).or_insert(0) += 1;
        }
        if let Some((p, _)) = inst.guard {
            *reads.entry(p).or_insert(0) += 1;
        }
    }
    for i in 0..code.len() {
        let Op::Float {
            op: FloatOp::Mul,
            ty,
            ftz,
            d: m,
            a: x,
            b: y,
            ..
        } = code[i].op.clone()
        else {
            continue;
        };
        if !loose[i] || code[i].guard.is_some() || reads.get(&m) != Some(&1) {
            continue;
        }
        for j in i + 1..code.len() {
            if targets.contains(&j)
                || matches!(
                    code[j].op,
                    Op::Bra { .. } | Op::Call { .. } | Op::Ret | Op::Exit
                )
            {
                break;
            }
            if !reads_of(&code[j].op).contains(&m) {
                if writes_of(&code[j].op)
                    .iter()
                    .any(|w| Src::R(*w) == x || Src::R(*w) == y || *w == m)
                {
                    break;
                }
                continue;
            }
            if let Op::Float {
                op: add @ (FloatOp::Add | FloatOp::Sub),
                ty: t2,
                ftz: ftz2,
                rnd,
                sat,
                d,
                a,
                b,
                ..
            } = code[j].op.clone()
            {
                if loose[j]
                    && t2 == ty
                    && ftz2 == ftz
                    && code[j].guard.is_none()
                    && (a == Src::R(m)) != (b == Src::R(m))
                {
                    let (fused, c) = match (add, a == Src::R(m)) {
                        (FloatOp::Add, true) => (FloatOp::Fma, b),
                        (FloatOp::Add, false) => (FloatOp::Fma, a),
                        (_, true) => (FloatOp::FmaSub, b),
                        (_, false) => (FloatOp::FmaRev, a),
                    };
                    code[j].op = Op::Float {
                        op: fused,
                        ty,
                        rnd,
                        ftz,
                        sat,
                        d,
                        a: x,
                        b: y,
                        c,
                    };
                }
            }
            break;
        }
    }
}

/// The registers an instruction reads.
fn reads_of(op: &Op) -> Vec<Reg> {
    let mut out = Vec::new();
    let mut src = |s: &Src| {
        if let Src::R(r) = s {
            out.push(*r);
        }
    };
    match op {
        Op::Mov { a, .. } | Op::Unpack { a, .. } | Op::Cvt { a, .. } | Op::Cvta { a, .. } => src(a),
        Op::Pack { parts, .. } => parts.iter().for_each(&mut src),
        Op::Int { a, b, c, .. } | Op::Float { a, b, c, .. } => {
            [a, b, c].into_iter().for_each(&mut src)
        }
        Op::Setp { a, b, comb, .. } => {
            src(a);
            src(b);
            if let Some((_, p, _)) = comb {
                src(p);
            }
        }
        Op::Selp { a, b, p, .. } => [a, b, p].into_iter().for_each(&mut src),
        Op::PredLogic { a, b, .. } => [&a.0, &b.0].into_iter().for_each(&mut src),
        Op::Ld {
            addr: Addr::Reg(r, _),
            ..
        } => out.push(*r),
        Op::St { srcs, addr, .. } => {
            srcs.iter().for_each(&mut src);
            if let Addr::Reg(r, _) = addr {
                out.push(*r);
            }
        }
        Op::Atom { addr, b, c, .. } => {
            src(b);
            src(c);
            if let Addr::Reg(r, _) = addr {
                out.push(*r);
            }
        }
        Op::WarpSync { mask } => src(mask),
        Op::Shfl { a, b, c, mask, .. } => [a, b, c, mask].into_iter().for_each(&mut src),
        Op::Vote { a, mask, .. } => [a, mask].into_iter().for_each(&mut src),
        Op::Carry { a, b, c, .. } => [a, b, c].into_iter().for_each(&mut src),
        Op::Redux { a, mask, .. } | Op::Match { a, mask, .. } => {
            [a, mask].into_iter().for_each(&mut src)
        }
        Op::BarRed { p, .. } => src(p),
        Op::Call {
            target: CallTarget::Indirect(s),
            ..
        } => src(s),
        _ => {}
    }
    out
}

/// The registers an instruction writes.
fn writes_of(op: &Op) -> Vec<Reg> {
    match op {
        Op::Mov { d, .. }
        | Op::Special { d, .. }
        | Op::LocalAddr { d, .. }
        | Op::Pack { d, .. }
        | Op::Int { d, .. }
        | Op::Float { d, .. }
        | Op::Selp { d, .. }
        | Op::PredLogic { d, .. }
        | Op::Cvt { d, .. }
        | Op::Cvta { d, .. }
        | Op::Vote { d, .. }
        | Op::Carry { d, .. }
        | Op::Redux { d, .. }
        | Op::BarRed { d, .. }
        | Op::Activemask { d } => vec![*d],
        Op::Match { d, p, .. } => std::iter::once(*d).chain(*p).collect(),
        Op::Setp { d, d2, .. } => std::iter::once(*d).chain(*d2).collect(),
        Op::Shfl { d, p, .. } => std::iter::once(*d).chain(*p).collect(),
        Op::Unpack { ds, .. } | Op::Ld { ds, .. } => ds.iter().flatten().copied().collect(),
        Op::Atom { d, .. } => d.iter().copied().collect(),
        _ => Vec::new(),
    }
}

fn operand(c: &mut Cursor) -> LoadResult<Operand> {
    let first = single_operand(c)?;
    if c.eat_punct('|') {
        let second = single_operand(c)?;
        return Ok(Operand::Pair(Box::new(first), Box::new(second)));
    }
    Ok(first)
}

fn single_operand(c: &mut Cursor) -> LoadResult<Operand> {
    if c.eat_punct('!') {
        return Ok(Operand::Not(Box::new(single_operand(c)?)));
    }
    if c.eat_punct('-') {
        return match c.next()? {
            Tok::Num(n) => Ok(Operand::Num(n.clone(), true)),
            other => Err(format!(
                "line {}: unexpected {} after `-`",
                c.line(),
                describe(Some(other))
            )),
        };
    }
    if c.eat_punct('[') {
        let base = single_operand(c)?;
        let mut offset = 0i64;
        while c.eat_punct('+') {
            let negative = c.eat_punct('-');
            // Wrapping, as addresses do: `[%rd+-1]` is one byte below, whatever the size.
            let n = c.number()? as i64;
            offset = offset.wrapping_add(if negative { n.wrapping_neg() } else { n });
        }
        c.expect_punct(']')?;
        return Ok(Operand::Address(Box::new(base), offset));
    }
    if c.eat_punct('{') {
        let mut items = Vec::new();
        loop {
            items.push(single_operand(c)?);
            if !c.eat_punct(',') {
                break;
            }
        }
        c.expect_punct('}')?;
        return Ok(Operand::Vector(items));
    }
    if c.eat_punct('(') {
        // A call's argument list: a vector of names.
        let mut items = Vec::new();
        while !c.eat_punct(')') {
            items.push(single_operand(c)?);
            c.eat_punct(',');
        }
        return Ok(Operand::Vector(items));
    }
    match c.next()? {
        Tok::Num(n) => Ok(Operand::Num(n.clone(), false)),
        Tok::Name(n) if n == "_" => Ok(Operand::Sink),
        Tok::Name(n) => Ok(Operand::Name(n.clone())),
        other => Err(format!(
            "line {}: unexpected {} in an operand",
            c.line(),
            describe(Some(other))
        )),
    }
}

fn special(name: &str) -> Option<Special> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, d)) = name.split_once('.') {
        let d = dim(d)?;
        return Some(match base {
            "%tid" => Special::Tid(d),
            "%ntid" => Special::Ntid(d),
            "%ctaid" => Special::Ctaid(d),
            "%nctaid" => Special::Nctaid(d),
            _ => return None,
        });
    }
    Some(match name {
        "%laneid" => Special::LaneId,
        "%warpid" => Special::WarpId,
        "%nwarpid" => Special::NWarpId,
        "%smid" => Special::SmId,
        "%nsmid" => Special::NSmId,
        "%lanemask_eq" => Special::LaneMaskEq,
        "%lanemask_lt" => Special::LaneMaskLt,
        "%lanemask_le" => Special::LaneMaskLe,
        "%lanemask_gt" => Special::LaneMaskGt,
        "%lanemask_ge" => Special::LaneMaskGe,
        "%clock" => Special::Clock,
        "%clock64" => Special::Clock64,
        "%globaltimer" => Special::GlobalTimer,
        _ => return None,
    })
}

impl FnDecoder<'_> {
    fn reg(&self, o: &Operand) -> LoadResult<Reg> {
        match o {
            Operand::Name(n) => match self.lookup(n) {
                Some(Name::Reg(r)) => Ok(r),
                _ => Err(self.err(format!("`{n}` is not a register"))),
            },
            _ => Err(self.err(format!("expected a register, found {o:?}"))),
        }
    }

    fn maybe_reg(&self, o: &Operand) -> LoadResult<Option<Reg>> {
        match o {
            Operand::Sink => Ok(None),
            _ => self.reg(o).map(Some),
        }
    }

    /// A source operand of type `ty`: a register, an immediate, or the address of a
    /// module variable or function.
    fn src(&self, o: &Operand, ty: Ty) -> LoadResult<Src> {
        match o {
            Operand::Num(n, negative) => {
                let mut v = immediate(n).ok_or_else(|| self.err(format!("bad number `{n}`")))?;
                let decimal_float = n.contains('.') && !n.starts_with("0d") && !n.starts_with("0f");
                if ty == Ty::F32 && (decimal_float || n.starts_with("0d")) {
                    v = u64::from((f64::from_bits(v) as f32).to_bits());
                } else if ty == Ty::F64 && n.starts_with("0f") {
                    v = f64::from(f32::from_bits(v as u32)).to_bits();
                } else if ty.float()
                    && !decimal_float
                    && !n.starts_with("0d")
                    && !n.starts_with("0f")
                {
                    let int = parse_int(n).unwrap_or(0) as f64;
                    v = if ty == Ty::F32 {
                        u64::from((int as f32).to_bits())
                    } else {
                        int.to_bits()
                    };
                }
                if *negative {
                    v = match ty {
                        Ty::F32 => u64::from((-f32::from_bits(v as u32)).to_bits()),
                        Ty::F64 => (-f64::from_bits(v)).to_bits(),
                        _ => v.wrapping_neg(),
                    };
                }
                Ok(Src::I(v & mask(ty)))
            }
            Operand::Name(n) => match self.lookup(n) {
                Some(Name::Reg(r)) => Ok(Src::R(r)),
                Some(Name::Shared(at)) => Ok(Src::I(at)),
                Some(_) => Err(self.err(format!(
                    "`{n}` is a parameter or local variable used as a value"
                ))),
                // PTX's one predefined constant (`warpSize` in CUDA C++).
                None if n == "WARP_SZ" => Ok(Src::I(32)),
                None => symbol_address(self.module, n)
                    .map(Src::I)
                    .ok_or_else(|| self.err(format!("`{n}` is not defined"))),
            },
            _ => Err(self.err(format!("expected a value, found {o:?}"))),
        }
    }

    fn address(&self, o: &Operand, space: Space) -> LoadResult<Addr> {
        let Operand::Address(base, offset) = o else {
            return Err(self.err("expected an address in brackets"));
        };
        match &**base {
            Operand::Name(n) => match self.lookup(n) {
                Some(Name::Reg(r)) => Ok(Addr::Reg(r, *offset)),
                Some(Name::KernelParam(at)) => Ok(Addr::KernelParam(add(at, *offset))),
                Some(Name::FrameParam(at)) => Ok(Addr::FrameParam(add(at, *offset))),
                Some(Name::Local(at)) => Ok(Addr::FrameLocal(add(at, *offset))),
                Some(Name::Shared(at)) => Ok(Addr::Abs(at.wrapping_add(*offset as u64))),
                None => {
                    let at = symbol_address(self.module, n)
                        .ok_or_else(|| self.err(format!("`{n}` is not defined")))?;
                    if space == Space::Generic {
                        let v = self.module.variables.iter().find(|v| v.name == *n);
                        if v.is_some_and(|v| v.space == Space::Shared) {
                            return Err(self.err(format!(
                                "`{n}` is shared: a generic access needs its generic address (cvta.shared)"
                            )));
                        }
                    }
                    Ok(Addr::Abs(at.wrapping_add(*offset as u64)))
                }
            },
            Operand::Num(n, negative) => {
                let v = immediate(n).ok_or_else(|| self.err(format!("bad number `{n}`")))?;
                let v = if *negative { v.wrapping_neg() } else { v };
                Ok(Addr::Abs(v.wrapping_add(*offset as u64)))
            }
            other => Err(self.err(format!("unsupported address {other:?}"))),
        }
    }
}

/// A parameter's or local's offset plus an address's: one outside 0 to 2^32 - 1 (a negative
/// or huge offset) is u32::MAX, which every access there finds outside its memory, rather
/// than a number wrapped back inside.
fn add(at: u32, offset: i64) -> u32 {
    i64::from(at)
        .checked_add(offset)
        .and_then(|v| u32::try_from(v).ok())
        .unwrap_or(u32::MAX)
}

/// The bits a value of `ty` keeps in its register.
pub fn mask(ty: Ty) -> u64 {
    match ty.bits() {
        64 => u64::MAX,
        bits => (1u64 << bits) - 1,
    }
}

fn rounding(word: &str) -> Option<Rnd> {
    Some(match word {
        "rn" => Rnd::N,
        "rz" => Rnd::Z,
        "rm" => Rnd::M,
        "rp" => Rnd::P,
        _ => return None,
    })
}

fn int_rounding(word: &str) -> Option<Rnd> {
    Some(match word {
        "rni" => Rnd::N,
        "rzi" => Rnd::Z,
        "rmi" => Rnd::M,
        "rpi" => Rnd::P,
        _ => return None,
    })
}

fn space_of(word: &str) -> Option<Space> {
    Some(match word {
        "global" => Space::Global,
        "const" => Space::Const,
        "shared" => Space::Shared,
        "local" => Space::Local,
        "param" => Space::Param,
        _ => return None,
    })
}

fn cmp_of(word: &str) -> Option<Cmp> {
    Some(match word {
        "eq" => Cmp::Eq,
        "ne" => Cmp::Ne,
        "lt" => Cmp::Lt,
        "le" => Cmp::Le,
        "gt" => Cmp::Gt,
        "ge" => Cmp::Ge,
        "lo" => Cmp::Lo,
        "ls" => Cmp::Ls,
        "hi" => Cmp::Hi,
        "hs" => Cmp::Hs,
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

/// Decode one instruction. `label` records a branch target to resolve once every label of
/// the function is known.
fn decode(
    d: &mut FnDecoder,
    opcode: &str,
    ops: &[Operand],
    mut label: impl FnMut(&str),
) -> LoadResult<Op> {
    let parts: Vec<&str> = opcode.split('.').collect();
    let base = parts[0];
    let mods = &parts[1..];
    let ty = mods.iter().rev().find_map(|m| Ty::parse(m));
    let op = match base {
        "mov" => decode_mov(d, opcode, ops, ty)?,
        "ld" | "ldu" | "st" => decode_load_store(d, opcode, base == "st", mods, ops, ty)?,
        "cvta" => decode_cvta(d, opcode, mods, ops)?,
        "cvt" => decode_cvt(d, opcode, mods, ops)?,
        "setp" => decode_setp(d, opcode, mods, ops, ty)?,
        "selp" => {
            need(d, opcode, ops, 4)?;
            let ty = ty.ok_or_else(|| d.unknown(opcode))?;
            Op::Selp {
                d: d.reg(&ops[0])?,
                a: d.src(&ops[1], ty)?,
                b: d.src(&ops[2], ty)?,
                p: d.src(&ops[3], Ty::Pred)?,
                mask: mask(ty),
            }
        }
        "bra" | "brx" => {
            if base == "brx" {
                return Err(d.unknown(opcode));
            }
            need(d, opcode, ops, 1)?;
            let Operand::Name(target) = &ops[0] else {
                return Err(d.err("a branch needs a label"));
            };
            label(target);
            Op::Bra { target: u32::MAX }
        }
        "ret" => Op::Ret,
        "exit" => Op::Exit,
        "trap" => Op::Trap,
        "membar" | "fence" | "prefetch" | "prefetchu" | "discard" | "nanosleep" => Op::Nop,
        "bar" | "barrier" => decode_barrier(d, opcode, mods, ops)?,
        "shfl" => decode_shfl(d, opcode, mods, ops)?,
        "vote" => decode_vote(d, opcode, mods, ops)?,
        "activemask" => {
            need(d, opcode, ops, 1)?;
            Op::Activemask { d: d.reg(&ops[0])? }
        }
        "atom" | "red" => decode_atomic(d, opcode, base == "atom", mods, ops, ty)?,
        "call" => decode_call(d, ops)?,
        "addc" | "subc" | "madc" => decode_carry(d, opcode, base, mods, ops, ty)?,
        "add" | "sub" | "mad" if mods.contains(&"cc") => {
            decode_carry(d, opcode, base, mods, ops, ty)?
        }
        "redux" => decode_redux(d, opcode, mods, ops, ty)?,
        "match" => decode_match(d, opcode, mods, ops, ty)?,
        "dp4a" | "dp2a" => decode_dot(d, opcode, base, mods, ops)?,
        _ => arithmetic(d, opcode, base, mods, ops, ty)?,
    };
    Ok(op)
}

/// `mov`: a register or immediate copy, a vector packed or unpacked, a special register, a
/// local variable's address.
fn decode_mov(d: &FnDecoder, opcode: &str, ops: &[Operand], ty: Option<Ty>) -> LoadResult<Op> {
    need(d, opcode, ops, 2)?;
    let ty = ty.ok_or_else(|| d.unknown(opcode))?;
    Ok(match (&ops[0], &ops[1]) {
        (Operand::Vector(parts), src) => Op::Unpack {
            ds: parts
                .iter()
                .map(|p| d.maybe_reg(p))
                .collect::<LoadResult<_>>()?,
            a: d.src(src, ty)?,
            bits: ty.bits() / parts.len() as u32,
        },
        (dst, Operand::Vector(parts)) => Op::Pack {
            d: d.reg(dst)?,
            parts: parts
                .iter()
                .map(|p| d.src(p, Ty::B64))
                .collect::<LoadResult<_>>()?,
            bits: ty.bits() / parts.len() as u32,
        },
        (dst, Operand::Name(n)) if n.starts_with('%') && d.lookup(n).is_none() => {
            let s = special(n).ok_or_else(|| {
                d.err(format!(
                    "the special register `{n}` is not known to the CPU device"
                ))
            })?;
            Op::Special { d: d.reg(dst)?, s }
        }
        (dst, Operand::Name(n)) if matches!(d.lookup(n), Some(Name::Local(_))) => {
            let Some(Name::Local(off)) = d.lookup(n) else {
                unreachable!("matched above")
            };
            Op::LocalAddr {
                d: d.reg(dst)?,
                off,
            }
        }
        (dst, src) => Op::Mov {
            d: d.reg(dst)?,
            a: d.src(src, ty)?,
            mask: mask(ty),
        },
    })
}

/// `ld`, `ldu` and `st` (`store`), scalar or vector.
fn decode_load_store(
    d: &FnDecoder,
    opcode: &str,
    store: bool,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let ty = ty.ok_or_else(|| d.unknown(opcode))?;
    let mut space = Space::Generic;
    let mut width = 1;
    for m in mods {
        if let Some(s) = space_of(m) {
            space = s;
        } else if *m == "v2" {
            width = 2;
        } else if *m == "v4" {
            width = 4;
        } else if Ty::parse(m).is_none() && !ignorable(m) {
            return Err(d.unknown(opcode));
        }
    }
    need(d, opcode, ops, 2)?;
    let (value, at) = if store {
        (&ops[1], &ops[0])
    } else {
        (&ops[0], &ops[1])
    };
    let addr = d.address(at, space)?;
    let items: Vec<Operand> = match value {
        Operand::Vector(v) => v.clone(),
        other => vec![other.clone()],
    };
    if items.len() != width {
        return Err(d.err(format!(
            "`{opcode}` moves {width} values, found {}",
            items.len()
        )));
    }
    Ok(if store {
        Op::St {
            space,
            ty,
            srcs: items
                .iter()
                .map(|o| d.src(o, ty))
                .collect::<LoadResult<_>>()?,
            addr,
        }
    } else {
        Op::Ld {
            space,
            ty,
            ds: items
                .iter()
                .map(|o| d.maybe_reg(o))
                .collect::<LoadResult<_>>()?,
            addr,
        }
    })
}

/// `cvta` and `cvta.to`: between a space's addresses and generic ones.
fn decode_cvta(d: &FnDecoder, opcode: &str, mods: &[&str], ops: &[Operand]) -> LoadResult<Op> {
    need(d, opcode, ops, 2)?;
    let to = mods.contains(&"to");
    let space = mods
        .iter()
        .find_map(|m| space_of(m))
        .ok_or_else(|| d.unknown(opcode))?;
    if space == Space::Param {
        return Err(d.unknown(opcode));
    }
    Ok(Op::Cvta {
        to,
        space,
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], Ty::U64)?,
    })
}

/// `cvt`: between types, with rounding and saturation.
fn decode_cvt(d: &FnDecoder, opcode: &str, mods: &[&str], ops: &[Operand]) -> LoadResult<Op> {
    need(d, opcode, ops, 2)?;
    let types: Vec<Ty> = mods.iter().filter_map(|m| Ty::parse(m)).collect();
    let [dty, sty] = types[..] else {
        return Err(d.unknown(opcode));
    };
    let mut rnd = None;
    let mut int_rnd = None;
    for m in mods {
        if let Some(r) = rounding(m) {
            rnd = Some(r);
        } else if let Some(r) = int_rounding(m) {
            int_rnd = Some(r);
        } else if !matches!(*m, "ftz" | "sat") && Ty::parse(m).is_none() {
            return Err(d.unknown(opcode));
        }
    }
    if dty == Ty::Pred || sty == Ty::Pred {
        return Err(d.unknown(opcode));
    }
    let ftz = mods.contains(&"ftz");
    if ftz && dty != Ty::F32 && sty != Ty::F32 {
        // As ptxas: `.ftz` is for f32 sources and results only.
        return Err(d.err(format!(
            "`{opcode}`: .ftz applies only to a conversion from or to .f32"
        )));
    }
    Ok(Op::Cvt {
        dty,
        sty,
        rnd,
        int_rnd,
        ftz,
        sat: mods.contains(&"sat"),
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], sty)?,
    })
}

/// `setp`, with an optional second destination and combining predicate.
fn decode_setp(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let ty = ty.ok_or_else(|| d.unknown(opcode))?;
    let cmp = mods
        .iter()
        .find_map(|m| cmp_of(m))
        .ok_or_else(|| d.unknown(opcode))?;
    let comb_op = mods.iter().find_map(|m| match *m {
        "and" => Some(BoolOp::And),
        "or" => Some(BoolOp::Or),
        "xor" => Some(BoolOp::Xor),
        _ => None,
    });
    let (dst, d2) = match &ops[0] {
        Operand::Pair(a, b) => (d.reg(a)?, d.maybe_reg(b)?),
        other => (d.reg(other)?, None),
    };
    let comb = match comb_op {
        Some(op) => {
            need(d, opcode, ops, 4)?;
            let (p, neg) = negated(&ops[3]);
            Some((op, d.src(p, Ty::Pred)?, neg))
        }
        None => {
            need(d, opcode, ops, 3)?;
            None
        }
    };
    Ok(Op::Setp {
        cmp,
        ty,
        ftz: ftz_of(d, opcode, mods, ty)?,
        d: dst,
        d2,
        a: d.src(&ops[1], ty)?,
        b: d.src(&ops[2], ty)?,
        comb,
    })
}

/// `bar` and `barrier`: whole-block barriers and `bar.warp.sync`.
fn decode_barrier(d: &FnDecoder, opcode: &str, mods: &[&str], ops: &[Operand]) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    let n = ops.len();
    if has("warp") {
        need(d, opcode, ops, 1)?;
        Ok(Op::WarpSync {
            mask: d.src(&ops[0], Ty::B32)?,
        })
    } else if (has("sync") || mods.is_empty() || has("cta")) && n == 1 {
        Ok(Op::Bar)
    } else if has("red") && n == 3 {
        // bar.red.popc.u32 d, 0, {!}p; bar.red.and.pred d, 0, {!}p.
        let op = if has("popc") {
            BarRedOp::Popc
        } else if has("and") {
            BarRedOp::And
        } else if has("or") {
            BarRedOp::Or
        } else {
            return Err(d.unknown(opcode));
        };
        let (p, neg) = negated(&ops[2]);
        Ok(Op::BarRed {
            op,
            d: d.reg(&ops[0])?,
            p: d.src(p, Ty::Pred)?,
            neg,
        })
    } else {
        Err(d.err(format!(
            "`{opcode}` with {n} operands: only whole-block barriers (`bar.sync 0`) are supported"
        )))
    }
}

/// `shfl.sync`.
fn decode_shfl(d: &FnDecoder, opcode: &str, mods: &[&str], ops: &[Operand]) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    if !has("sync") {
        return Err(d.unknown(opcode));
    }
    need(d, opcode, ops, 5)?;
    let mode = if has("up") {
        ShflMode::Up
    } else if has("down") {
        ShflMode::Down
    } else if has("bfly") {
        ShflMode::Bfly
    } else if has("idx") {
        ShflMode::Idx
    } else {
        return Err(d.unknown(opcode));
    };
    let (dst, p) = match &ops[0] {
        Operand::Pair(a, b) => (d.reg(a)?, d.maybe_reg(b)?),
        other => (d.reg(other)?, None),
    };
    Ok(Op::Shfl {
        mode,
        d: dst,
        p,
        a: d.src(&ops[1], Ty::B32)?,
        b: d.src(&ops[2], Ty::B32)?,
        c: d.src(&ops[3], Ty::B32)?,
        mask: d.src(&ops[4], Ty::B32)?,
    })
}

/// `vote.sync`.
fn decode_vote(d: &FnDecoder, opcode: &str, mods: &[&str], ops: &[Operand]) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    if !has("sync") {
        return Err(d.unknown(opcode));
    }
    need(d, opcode, ops, 3)?;
    let mode = if has("all") {
        VoteMode::All
    } else if has("any") {
        VoteMode::Any
    } else if has("uni") {
        VoteMode::Uni
    } else if has("ballot") {
        VoteMode::Ballot
    } else {
        return Err(d.unknown(opcode));
    };
    let (p, neg) = negated(&ops[1]);
    Ok(Op::Vote {
        mode,
        d: d.reg(&ops[0])?,
        a: d.src(p, Ty::Pred)?,
        neg,
        mask: d.src(&ops[2], Ty::B32)?,
    })
}

/// `atom`, and `red` (`atom` without a destination).
fn decode_atomic(
    d: &FnDecoder,
    opcode: &str,
    returns: bool,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let ty = ty.ok_or_else(|| d.unknown(opcode))?;
    let space = mods
        .iter()
        .find_map(|m| space_of(m))
        .unwrap_or(Space::Generic);
    let op = mods
        .iter()
        .find_map(|m| {
            Some(match *m {
                "add" => AtomOp::Add,
                "min" => AtomOp::Min,
                "max" => AtomOp::Max,
                "inc" => AtomOp::Inc,
                "dec" => AtomOp::Dec,
                "and" => AtomOp::And,
                "or" => AtomOp::Or,
                "xor" => AtomOp::Xor,
                "exch" => AtomOp::Exch,
                "cas" => AtomOp::Cas,
                _ => return None,
            })
        })
        .ok_or_else(|| d.unknown(opcode))?;
    if mods.iter().any(|m| m.starts_with('v'))
        || (ty.float() && op != AtomOp::Add && op != AtomOp::Exch)
    {
        return Err(d.unknown(opcode));
    }
    let (dst, rest) = if returns {
        (Some(d.reg(&ops[0])?), &ops[1..])
    } else {
        (None, ops)
    };
    let want = if op == AtomOp::Cas { 3 } else { 2 };
    if rest.len() != want {
        return Err(d.err(format!(
            "`{opcode}` takes {} operands",
            want + usize::from(dst.is_some())
        )));
    }
    Ok(Op::Atom {
        space,
        op,
        ty,
        d: dst,
        addr: d.address(&rest[0], space)?,
        b: d.src(&rest[1], ty)?,
        c: if op == AtomOp::Cas {
            d.src(&rest[2], ty)?
        } else {
            Src::I(0)
        },
    })
}

/// The carry chains: `add.cc`, `addc{.cc}`, `sub.cc`, `subc{.cc}`, `mad{.lo,.hi}.cc`,
/// `madc{.lo,.hi}{.cc}`, on 32- and 64-bit integers.
fn decode_carry(
    d: &FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let ty = ty
        .filter(|t| matches!(t, Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64))
        .ok_or_else(|| d.unknown(opcode))?;
    let has = |m: &str| mods.contains(&m);
    let op = match base {
        "add" | "addc" => CarryOp::Add,
        "sub" | "subc" => CarryOp::Sub,
        _ if has("lo") => CarryOp::MadLo,
        _ if has("hi") => CarryOp::MadHi,
        _ => return Err(d.unknown(opcode)),
    };
    let arity = if matches!(op, CarryOp::MadLo | CarryOp::MadHi) {
        4
    } else {
        3
    };
    need(d, opcode, ops, arity)?;
    Ok(Op::Carry {
        op,
        ty,
        d: d.reg(&ops[0])?,
        a: src_at(d, ops, 1, ty)?,
        b: src_at(d, ops, 2, ty)?,
        c: src_at(d, ops, 3, ty)?,
        cin: base.ends_with('c'),
        cout: has("cc"),
    })
}

/// `redux.sync.op.type d, a, membermask` on 32-bit integers.
fn decode_redux(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    let ty = ty
        .filter(|t| matches!(t, Ty::U32 | Ty::S32 | Ty::B32))
        .ok_or_else(|| d.unknown(opcode))?;
    let op = if has("add") {
        ReduxOp::Add
    } else if has("min") {
        ReduxOp::Min
    } else if has("max") {
        ReduxOp::Max
    } else if has("and") {
        ReduxOp::And
    } else if has("or") {
        ReduxOp::Or
    } else if has("xor") {
        ReduxOp::Xor
    } else {
        return Err(d.unknown(opcode));
    };
    if !has("sync") {
        return Err(d.unknown(opcode));
    }
    need(d, opcode, ops, 3)?;
    Ok(Op::Redux {
        op,
        ty,
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], ty)?,
        mask: d.src(&ops[2], Ty::B32)?,
    })
}

/// `match.any.sync.type d, a, membermask` and `match.all.sync.type d{|p}, a, membermask`.
fn decode_match(
    d: &FnDecoder,
    opcode: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    let ty = ty
        .filter(|t| matches!(t, Ty::B32 | Ty::B64))
        .ok_or_else(|| d.unknown(opcode))?;
    if !has("sync") || has("any") == has("all") {
        return Err(d.unknown(opcode));
    }
    need(d, opcode, ops, 3)?;
    let (dst, p) = match &ops[0] {
        Operand::Pair(a, b) if has("all") => (d.reg(a)?, d.maybe_reg(b)?),
        other => (d.reg(other)?, None),
    };
    Ok(Op::Match {
        all: has("all"),
        ty,
        d: dst,
        p,
        a: d.src(&ops[1], ty)?,
        mask: d.src(&ops[2], Ty::B32)?,
    })
}

/// `dp4a.atype.btype d, a, b, c` and `dp2a.mode.atype.btype d, a, b, c`.
fn decode_dot(
    d: &FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
) -> LoadResult<Op> {
    let types: Vec<Ty> = mods.iter().filter_map(|m| Ty::parse(m)).collect();
    let [ta @ (Ty::U32 | Ty::S32), tb @ (Ty::U32 | Ty::S32)] = types[..] else {
        return Err(d.unknown(opcode));
    };
    let (sa, sb) = (ta.signed(), tb.signed());
    let op = if base == "dp4a" {
        IntOp::Dp4a(sa, sb)
    } else if mods.contains(&"lo") || mods.contains(&"hi") {
        IntOp::Dp2a(mods.contains(&"hi"), sa, sb)
    } else {
        return Err(d.unknown(opcode));
    };
    need(d, opcode, ops, 4)?;
    let ty = if sa || sb { Ty::S32 } else { Ty::U32 };
    Ok(Op::Int {
        op,
        ty,
        d: d.reg(&ops[0])?,
        a: d.src(&ops[1], ta)?,
        b: d.src(&ops[2], tb)?,
        c: d.src(&ops[3], ty)?,
        sat: false,
    })
}

/// Modifiers that change nothing the interpreter models: caching hints, memory order
/// and scope (blocks run one at a time per host thread, accesses in program order).
fn ignorable(m: &str) -> bool {
    matches!(
        m,
        "nc" | "ca"
            | "cg"
            | "cs"
            | "lu"
            | "cv"
            | "wb"
            | "wt"
            | "weak"
            | "volatile"
            | "relaxed"
            | "acquire"
            | "release"
            | "acq_rel"
            | "sc"
            | "cta"
            | "gpu"
            | "sys"
            | "uni"
            | "aligned"
            | "L1::evict_last"
            | "L2::64B"
            | "L2::128B"
            | "L2::256B"
    )
}

/// Check that `opcode` has `k` operands.
fn need(d: &FnDecoder, opcode: &str, ops: &[Operand], k: usize) -> LoadResult<()> {
    let n = ops.len();
    if n == k {
        Ok(())
    } else {
        Err(d.err(format!("`{opcode}` takes {k} operands, found {n}")))
    }
}

fn decode_call(d: &mut FnDecoder, ops: &[Operand]) -> LoadResult<Op> {
    // call (ret), target, (args), proto;   call target, (args);   call (ret), target;
    let mut i = 0;
    let mut ret = None;
    let param = |d: &FnDecoder, o: &Operand| -> LoadResult<u32> {
        match o {
            Operand::Name(n) => match d.lookup(n) {
                Some(Name::FrameParam(at)) => Ok(at),
                _ => Err(d.err(format!("`{n}` is not a .param variable of the call"))),
            },
            other => Err(d.err(format!("unexpected call operand {other:?}"))),
        }
    };
    if let Some(Operand::Vector(items)) = ops.first() {
        if items.len() == 1 {
            ret = Some(param(d, &items[0])?);
            i = 1;
        } else if !items.is_empty() {
            return Err(d.err("a call returns one value at most"));
        } else {
            i = 1;
        }
    }
    let target = match ops.get(i) {
        Some(Operand::Name(n)) => match d.lookup(n) {
            Some(Name::Reg(r)) => CallTarget::Indirect(Src::R(r)),
            _ => CallTarget::Direct(
                *d.module
                    .by_name
                    .get(n)
                    .ok_or_else(|| d.err(format!("`{n}` is not a function")))?,
            ),
        },
        other => return Err(d.err(format!("a call needs a target, found {other:?}"))),
    };
    let mut args = Vec::new();
    if let Some(Operand::Vector(items)) = ops.get(i + 1) {
        for item in items {
            args.push(param(d, item)?);
        }
    }
    // Sizes come from the callee at run time (an indirect target is known only then); the
    // decoder keeps offsets, with a size of 0 meaning "the callee's".
    Ok(Op::Call {
        target,
        args: args.into_iter().map(|a| (a, 0)).collect(),
        ret: ret.map(|r| (r, 0)),
    })
}

/// Everything else: integer, floating-point and predicate arithmetic, chosen by the type.
fn arithmetic(
    d: &mut FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Option<Ty>,
) -> LoadResult<Op> {
    let ty = ty.ok_or_else(|| d.unknown(opcode))?;
    if ty == Ty::Pred {
        predicate_logic(d, opcode, base, ops)
    } else if ty.float() {
        float_arithmetic(d, opcode, base, mods, ops, ty)
    } else {
        int_arithmetic(d, opcode, base, mods, ops, ty)
    }
}

/// `and`, `or`, `xor` and `not` on predicates, each operand possibly negated (`!p`).
fn predicate_logic(d: &FnDecoder, opcode: &str, base: &str, ops: &[Operand]) -> LoadResult<Op> {
    let op = match base {
        "and" => IntOp::And,
        "or" => IntOp::Or,
        "xor" => IntOp::Xor,
        "not" => IntOp::Not,
        _ => return Err(d.unknown(opcode)),
    };
    let pred = |i: usize| -> LoadResult<(Src, bool)> {
        match ops.get(i) {
            Some(Operand::Not(p)) => Ok((d.src(p, Ty::Pred)?, true)),
            Some(p) => Ok((d.src(p, Ty::Pred)?, false)),
            None => Ok((Src::I(0), false)),
        }
    };
    Ok(Op::PredLogic {
        op,
        d: d.reg(&ops[0])?,
        a: pred(1)?,
        b: pred(2)?,
    })
}

/// Floating-point arithmetic, with its rounding modifier.
fn float_arithmetic(
    d: &FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Ty,
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    let n = ops.len();
    let mut rnd = Rnd::N;
    let mut approx = false;
    for m in mods {
        if let Some(r) = rounding(m) {
            rnd = r;
        } else if *m == "approx" {
            approx = true;
        } else if *m == "full" {
            return Err(d.err(format!(
                "`{opcode}` is an approximation whose exact bits the CPU device cannot reproduce"
            )));
        } else if !matches!(
            *m,
            "ftz" | "sat" | "f32" | "f64" | "NaN" | "xorsign" | "abs"
        ) {
            return Err(d.unknown(opcode));
        }
    }
    let op = match (base, approx) {
        ("add", false) => FloatOp::Add,
        ("sub", false) => FloatOp::Sub,
        ("mul", false) => FloatOp::Mul,
        ("fma", false) => FloatOp::Fma,
        ("mad", false) if has("rn") || has("rz") || has("rm") || has("rp") => FloatOp::Fma,
        ("div", false) => FloatOp::Div,
        ("abs", _) => FloatOp::Abs,
        ("neg", _) => FloatOp::Neg,
        ("min", _) if !has("NaN") && !has("xorsign") => FloatOp::Min,
        ("max", _) if !has("NaN") && !has("xorsign") => FloatOp::Max,
        ("sqrt", false) => FloatOp::Sqrt,
        ("rcp", false) => FloatOp::Rcp,
        ("copysign", _) => FloatOp::Copysign,
        ("rcp", true) if ty == Ty::F64 && has("ftz") => FloatOp::RcpApprox,
        ("rsqrt", true) if ty == Ty::F64 && has("ftz") => FloatOp::RsqrtApprox,
        (_, true) => {
            return Err(d.err(format!(
                "`{opcode}` is an approximation whose exact bits the CPU device cannot reproduce; \
                 it runs `rcp.approx.ftz.f64` and `rsqrt.approx.ftz.f64` from tables read on an H100"
            )))
        }
        _ => return Err(d.unknown(opcode)),
    };
    let arity = match op {
        FloatOp::Abs
        | FloatOp::Neg
        | FloatOp::Sqrt
        | FloatOp::Rcp
        | FloatOp::RcpApprox
        | FloatOp::RsqrtApprox => 2,
        FloatOp::Fma => 4,
        _ => 3,
    };
    if n != arity {
        return Err(d.err(format!("`{opcode}` takes {arity} operands, found {n}")));
    }
    // `.ftz` of the f64 approximations is their tables' own behaviour.
    let ftz =
        !matches!(op, FloatOp::RcpApprox | FloatOp::RsqrtApprox) && ftz_of(d, opcode, mods, ty)?;
    // A multiply and an add without a rounding modifier may be fused by ptxas;
    // NVRTC writes `.rn` wherever it must not be, so these are exact as written.
    Ok(Op::Float {
        op,
        ty,
        rnd,
        ftz,
        sat: has("sat"),
        d: d.reg(&ops[0])?,
        a: src_at(d, ops, 1, ty)?,
        b: src_at(d, ops, 2, ty)?,
        c: src_at(d, ops, 3, ty)?,
    })
}

/// Whether an f32 instruction flushes subnormals (`.ftz`); the modifier on any other type
/// is refused, as ptxas refuses it.
fn ftz_of(d: &FnDecoder, opcode: &str, mods: &[&str], ty: Ty) -> LoadResult<bool> {
    let ftz = mods.contains(&"ftz");
    if ftz && ty != Ty::F32 {
        return Err(d.err(format!(
            "`{opcode}`: .ftz applies only to .f32 instructions"
        )));
    }
    Ok(ftz)
}

/// Integer arithmetic.
fn int_arithmetic(
    d: &FnDecoder,
    opcode: &str,
    base: &str,
    mods: &[&str],
    ops: &[Operand],
    ty: Ty,
) -> LoadResult<Op> {
    let has = |m: &str| mods.contains(&m);
    let n = ops.len();
    let (op, arity) = match base {
        "add" if !has("cc") => (IntOp::Add, 3),
        "sub" if !has("cc") => (IntOp::Sub, 3),
        "mul" if has("lo") => (IntOp::MulLo, 3),
        "mul" if has("hi") => (IntOp::MulHi, 3),
        "mul" if has("wide") => (IntOp::MulWide, 3),
        "mad" if has("lo") && !has("cc") => (IntOp::MadLo, 4),
        "mad" if has("hi") && !has("cc") => (IntOp::MadHi, 4),
        "mad" if has("wide") => (IntOp::MadWide, 4),
        "div" => (IntOp::Div, 3),
        "rem" => (IntOp::Rem, 3),
        "min" => (IntOp::Min, 3),
        "max" => (IntOp::Max, 3),
        "abs" => (IntOp::Abs, 2),
        "neg" => (IntOp::Neg, 2),
        "and" => (IntOp::And, 3),
        "or" => (IntOp::Or, 3),
        "xor" => (IntOp::Xor, 3),
        "not" => (IntOp::Not, 2),
        "cnot" => (IntOp::CNot, 2),
        "shl" => (IntOp::Shl, 3),
        "shr" => (IntOp::Shr, 3),
        "popc" => (IntOp::Popc, 2),
        "clz" => (IntOp::Clz, 2),
        "brev" => (IntOp::Brev, 2),
        "bfe" => (IntOp::Bfe, 4),
        "bfi" => (IntOp::Bfi, 5),
        "prmt" if mods.len() == 1 => (IntOp::Prmt, 4),
        "prmt" if mods.len() == 2 => {
            let mode = ["f4e", "b4e", "rc8", "ecl", "ecr", "rc16"]
                .iter()
                .position(|m| has(m))
                .ok_or_else(|| d.unknown(opcode))?;
            (IntOp::PrmtMode(mode as u8), 4)
        }
        "sad" => (IntOp::Sad, 4),
        "bfind" => (IntOp::Bfind(has("shiftamt")), 2),
        "fns" => (IntOp::Fns, 4),
        "shf" if has("l") || has("r") => (IntOp::Shf(has("l"), has("clamp")), 4),
        "mul24" if has("lo") || has("hi") => (IntOp::Mul24(has("hi")), 3),
        "mad24" if (has("lo") || has("hi")) && !has("sat") => (IntOp::Mad24(has("hi")), 4),
        "bmsk" if has("clamp") || has("wrap") => (IntOp::Bmsk(has("clamp")), 3),
        "szext" if has("clamp") || has("wrap") => (IntOp::Szext(has("clamp")), 3),
        _ => return Err(d.unknown(opcode)),
    };
    if n != arity {
        return Err(d.err(format!("`{opcode}` takes {arity} operands, found {n}")));
    }
    if op == IntOp::Bfi {
        // bfi d, a, b, pos, len: the position and length ride in `c` (pos | len << 32).
        let (Src::I(pos), Src::I(len)) = (src_at(d, ops, 3, Ty::U32)?, src_at(d, ops, 4, Ty::U32)?)
        else {
            return Err(d.err("bfi with a register position or length is not supported"));
        };
        return Ok(Op::Int {
            op,
            ty,
            d: d.reg(&ops[0])?,
            a: src_at(d, ops, 1, ty)?,
            b: src_at(d, ops, 2, ty)?,
            c: Src::I(pos | len << 32),
            sat: false,
        });
    }
    // Shift amounts, bfe's position and length are 32-bit whatever the type.
    let second = if matches!(op, IntOp::Shl | IntOp::Shr | IntOp::Bfe) {
        Ty::U32
    } else {
        ty
    };
    let third = match op {
        IntOp::Bfe => Ty::U32,
        IntOp::MadWide => wide(ty),
        _ => ty,
    };
    Ok(Op::Int {
        op,
        ty,
        d: d.reg(&ops[0])?,
        a: src_at(d, ops, 1, ty)?,
        b: src_at(d, ops, 2, second)?,
        c: src_at(d, ops, 3, third)?,
        sat: has("sat"),
    })
}

/// Operand `i` as a source of type `ty`, 0 where there is none (the unused operands of a
/// shorter instruction).
fn src_at(d: &FnDecoder, ops: &[Operand], i: usize, ty: Ty) -> LoadResult<Src> {
    ops.get(i).map(|o| d.src(o, ty)).unwrap_or(Ok(Src::I(0)))
}

fn wide(ty: Ty) -> Ty {
    match ty {
        Ty::U16 => Ty::U32,
        Ty::S16 => Ty::S32,
        Ty::U32 => Ty::U64,
        Ty::S32 => Ty::S64,
        other => other,
    }
}

/// A predicate operand and whether it is negated (`!p`), as `setp`'s combining predicate,
/// `bar.red` and `vote` take it.
fn negated(operand: &Operand) -> (&Operand, bool) {
    match operand {
        Operand::Not(p) => (p, true),
        p => (p, false),
    }
}
