//! PTX text to the decoded program: the module's variables laid out in memory, every
//! function's instructions decoded, every name resolved. An instruction the interpreter does
//! not know is an error naming it, its function and its line, here, before anything runs.
//!
//! Here, the flow: the module's directives read, its variables placed, each function's body
//! decoded. `parse` reads the text (declarations, directives, function headers, operands);
//! `layout` places and initialises the module's `.global`, `.const` and `.shared` variables
//! and gives each name its address; `decode` turns an instruction's words and operands into
//! the IR, one file per family; `contract` fuses multiplies into adds as ptxas does, which
//! the results' bits depend on.

mod contract;
mod decode;
mod layout;
mod parse;

use std::collections::HashMap;

use crate::heap::{Heap, HEAP_BYTES};
use crate::ir::*;
use crate::lex::{tokens, Token};
use crate::memory::{Memory, Region};

use contract::loose_rounding;
use decode::{decode, FnDecoder, Name, Scope};
use layout::{initialise_variables, place_variables};
use parse::{declaration, directives, guard, operands, Cursor, Header};

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
    /// The heap of its kernels' `malloc` and `free`, where they call them.
    pub heap: Option<Heap>,
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

/// Load `ptx` into `memory`: variables allocated and initialised, code decoded, as ptxas
/// compiles it by default (fusing what it may).
pub fn load(ptx: &str, memory: &Memory) -> LoadResult<Module> {
    load_with(ptx, memory, true)
}

/// [`load`], with `contract` false as ptxas compiles when NVRTC's options turn contraction
/// off (NVRTC hands ptxas the same choice): no multiply is fused into an add. NVRTC writes
/// `.rn` on every multiply and add it must not fuse, so its own code reads the same either
/// way; the flag decides the loose ones a kernel writes in inline PTX (cuda_fp16.h's `__hmul`
/// and `__hadd`): on an H100, `hadd(hmul(a, b), c)` of such loose instructions rounded twice
/// with contraction off and once with it on (the differential test, 51 threads of a kernel).
pub fn load_with(ptx: &str, memory: &Memory, contract: bool) -> LoadResult<Module> {
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
        heap: None,
        files,
        sources: Vec::new(),
    };
    for (i, h) in headers.iter().enumerate() {
        module.by_name.insert(h.name.clone(), i as u32);
    }
    place_variables(&mut module, &vars, memory)?;
    initialise_variables(&module, &vars, memory)?;
    for h in &headers {
        let function = decode_function(&toks, h, &mut module, contract)?;
        module.functions.push(function);
    }
    builtins(&mut module, memory)?;
    Ok(module)
}

/// Calls of the functions the GPU's driver provides rather than the module (declared
/// `.extern`, with no body), which the interpreter runs itself: `vprintf`, `__assertfail`,
/// and `malloc` and `free` (on a heap the module is given where it calls them).
fn builtins(module: &mut Module, memory: &Memory) -> LoadResult<()> {
    let mut heap = false;
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
        if f.start != f.end {
            continue;
        }
        match (f.name.as_str(), args.len()) {
            ("vprintf", 2) => {
                inst.op = Op::Printf {
                    format: args[0].0,
                    args: args[1].0,
                    ret: ret.map(|r| r.0),
                }
            }
            ("__assertfail", 5) => {
                inst.op = Op::AssertFail {
                    params: [args[0].0, args[1].0, args[2].0, args[3].0],
                }
            }
            ("malloc", 1) => {
                if let Some(ret) = ret {
                    inst.op = Op::Malloc {
                        size: args[0].0,
                        ret: ret.0,
                    };
                    heap = true;
                }
            }
            ("free", 1) => {
                inst.op = Op::Free { ptr: args[0].0 };
                heap = true;
            }
            _ => {}
        }
    }
    if heap {
        let region = memory
            .alloc(HEAP_BYTES, "the device heap (malloc)")
            .map_err(|e| format!("cannot make the kernels' heap: {e}"))?;
        module.regions.push(region);
        module.heap = Some(Heap::new(region));
    }
    Ok(())
}

fn decode_function(
    toks: &[Token],
    h: &Header,
    module: &mut Module,
    contract: bool,
) -> LoadResult<Function> {
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
    if contract {
        self::contract::contract(&mut code, &loose, &labels, start);
    }
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

/// The ops `body` decodes to as the body of a kernel `k` (less the `ret` the loader adds at
/// its end), or the load's error: for the sub-modules' tests.
#[cfg(test)]
fn decoded(body: &str) -> LoadResult<Vec<Op>> {
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n{body}\n}}\n"
    );
    let module = load(&ptx, &Memory::default())?;
    let k = module.function("k").expect("the kernel k");
    Ok(module.code[k.start as usize..k.end as usize - 1]
        .iter()
        .map(|i| i.op.clone())
        .collect())
}
