//! Reading PTX text: a cursor over its tokens, the declarations (`.param .align 4 .b8
//! name[12]`, a body's `.reg`, `.local`, `.param` and `.shared`), the module's top-level
//! directives, function headers, initial values, guards and operands.

use std::collections::HashMap;

use super::decode::{FnDecoder, Name};
use super::LoadResult;
use crate::ir::*;
use crate::lex::{Tok, Token};

pub(super) struct Cursor<'a> {
    pub(super) toks: &'a [Token],
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }
    pub(super) fn line(&self) -> u32 {
        self.toks
            .get(self.pos.min(self.toks.len().saturating_sub(1)))
            .map_or(0, |t| t.line)
    }
    pub(super) fn next(&mut self) -> LoadResult<&'a Tok> {
        let t = self
            .toks
            .get(self.pos)
            .ok_or_else(|| "the PTX ends in the middle of a statement".to_string())?;
        self.pos += 1;
        Ok(&t.tok)
    }
    pub(super) fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }
    pub(super) fn is_name(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Name(n)) if n == s)
    }
    pub(super) fn eat_punct(&mut self, c: char) -> bool {
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
    pub(super) fn name(&mut self) -> LoadResult<&'a str> {
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
    pub(super) fn skip_to_semicolon(&mut self) -> LoadResult<()> {
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

pub(super) fn parse_int(s: &str) -> Option<i128> {
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
pub(super) struct Decl {
    pub(super) align: u32,
    pub(super) ty: Ty,
    pub(super) name: String,
    count: u64,
    vector: u32,
    /// `[]`: an unsized array (dynamic shared memory).
    pub(super) unsized_array: bool,
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
    pub(super) fn bytes(&self) -> u64 {
        u64::from(self.ty.bytes().max(1) * self.vector).saturating_mul(self.count)
    }
}

/// A function's header, found in the first pass; its body is decoded in the second.
pub(super) struct Header {
    pub(super) name: String,
    pub(super) entry: bool,
    pub(super) params: Vec<Decl>,
    pub(super) retval: Option<Decl>,
    pub(super) body: Option<(usize, usize)>,
}

pub(super) enum Init {
    Num(u64),
    Sym(String),
}

pub(super) struct VarDecl {
    pub(super) space: Space,
    pub(super) decl: Decl,
    pub(super) init: Vec<Init>,
}

/// The module's functions, variables and source files, from its top-level directives.
pub(super) type Directives = (Vec<Header>, Vec<VarDecl>, HashMap<u64, String>);

/// The module's directives, in order: its functions' headers (a declaration and its
/// definition merged) and its variables' declarations.
pub(super) fn directives(c: &mut Cursor) -> LoadResult<Directives> {
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
pub(super) fn immediate(n: &str) -> Option<u64> {
    if let Some(bits) = n.strip_prefix("0d").or_else(|| n.strip_prefix("0D")) {
        return u64::from_str_radix(bits, 16).ok();
    }
    if let Some(bits) = n.strip_prefix("0f").or_else(|| n.strip_prefix("0F")) {
        return u32::from_str_radix(bits, 16).ok().map(u64::from);
    }
    // A hexadecimal integer may hold an E (cuda_fp16.h's `0XC1EFU`): not an exponent.
    let hex = n.starts_with("0x") || n.starts_with("0X");
    if n.contains('.') || (n.contains(['e', 'E']) && !hex) {
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

/// A parsed operand, before it is resolved against the function's names.
#[derive(Debug, Clone)]
pub(super) enum Operand {
    Name(String),
    Num(String, bool),
    Address(Box<Operand>, i64),
    Vector(Vec<Operand>),
    Not(Box<Operand>),
    Pair(Box<Operand>, Box<Operand>),
    Sink,
}

/// A declaration inside the body (`.reg`, `.local`, `.param`, `.shared`) or a `.pragma`
/// starting with `word`: read it and say so, or say that `word` starts an instruction.
pub(super) fn declaration(d: &mut FnDecoder, c: &mut Cursor, word: &str) -> LoadResult<bool> {
    match word {
        w if w == ".reg" || w.starts_with(".reg.") => {
            // cuda_fp16.h's inline PTX writes `.reg.b32 f;`, the type glued on.
            let ty_word = match w.strip_prefix(".reg").filter(|t| !t.is_empty()) {
                Some(glued) => glued.to_string(),
                None => c.name()?.to_string(),
            };
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
pub(super) fn guard(d: &FnDecoder, c: &mut Cursor) -> LoadResult<Option<(Reg, bool)>> {
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
pub(super) fn operands(c: &mut Cursor) -> LoadResult<Vec<Operand>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::tokens;
    use crate::load::decoded;

    /// parse: `.reg .b32 %r<4>` declares %r0..%r3, and a use of %r4 is refused by name.
    #[test]
    fn a_register_range_declares_exactly_its_count() {
        assert!(decoded(".reg .b32 %r<4>;\nmov.u32 %r3, 1;").is_ok());
        let err = decoded(".reg .b32 %r<4>;\nmov.u32 %r4, 1;").expect_err("%r4 is undeclared");
        assert!(err.contains("`%r4` is not a register"), "{err}");
    }

    /// parse: `.align 16 .v4 .f32 x[2][3]` is six 16-byte vectors (every dimension counts),
    /// and without `.align` a declaration is aligned to its element.
    #[test]
    fn a_declaration_reads_alignment_vector_and_every_dimension() {
        let toks = tokens(".align 8 .v4 .f32 x[2][3] .v2 .u16 y").expect("lexed");
        let mut c = Cursor {
            toks: &toks,
            pos: 0,
        };
        let x = decl(&mut c).expect("x");
        assert_eq!(
            (x.name.as_str(), x.align, x.count, x.bytes()),
            ("x", 8, 6, 96)
        );
        let y = decl(&mut c).expect("y");
        assert_eq!((y.align, y.bytes()), (4, 4));
    }
}
