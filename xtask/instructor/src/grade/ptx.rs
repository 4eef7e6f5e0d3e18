//! What a PTX module shows of its calls: which functions each kernel reaches, and whether it
//! calls through a register. lab06's GPU check reads the PTX of the student's kernels built
//! with the grader's `add.cuh` (`planted::lab06_header`), whose `add` calls a function of the
//! grade's own name kept out of line: each abstract kernel must reach that function, and the
//! virtual and pointer kernels must do it through an indirect call, the cost the lab
//! measures.
//!
//! The reading is NVRTC's PTX as it prints it: a function is `.entry NAME(...)` or
//! `.func (RETURN) NAME(...)` followed by its body in braces; a direct call is
//! `call[.uni] (RET), NAME, (ARGS);`, an indirect one names a register (`call (RET), %rd41,
//! (ARGS), prototype_23;`), spread over several lines; a function's address is taken by a
//! `mov.u64 %rd3, NAME;` or an initialiser (`_ZTV5Adder[3] = {0, 0, NAME};`, a vtable).

use std::collections::{BTreeMap, BTreeSet};

/// The functions of one PTX module and what they call.
#[derive(Debug, Default)]
pub struct Module {
    functions: BTreeMap<String, Function>,
    /// Every function whose address the module takes: what an indirect call may reach.
    address_taken: BTreeSet<String>,
}

#[derive(Debug, Default)]
struct Function {
    direct: BTreeSet<String>,
    indirect: bool,
}

impl Module {
    pub fn parse(ptx: &str) -> Module {
        let text = without_comments(ptx);
        let mut module = Module::default();
        // Each function body, and the identifiers met outside calls (addresses taken).
        let mut named = BTreeSet::new();
        let mut header = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            match c {
                '{' => {
                    let end = matching_brace(&text, at);
                    let body = &text[at + 1..end];
                    match function_name(&header) {
                        Some(name) => {
                            let function = read_body(body, &mut named);
                            module.functions.insert(name, function);
                        }
                        // An initialiser: every name in it is an address.
                        None => named.extend(identifiers(body).map(str::to_string)),
                    }
                    while chars.peek().is_some_and(|&(i, _)| i <= end) {
                        chars.next();
                    }
                    header.clear();
                }
                ';' => header.clear(),
                c => header.push(c),
            }
        }
        module.address_taken = named
            .into_iter()
            .filter(|name| module.functions.contains_key(name))
            .collect();
        module
    }

    /// Whether the module defines `name` (a kernel or a device function).
    pub fn defines(&self, name: &str) -> bool {
        self.functions.contains_key(name)
    }

    /// The functions `kernel` may run: those it calls directly, and, where it or one of
    /// them calls through a register, every function whose address the module takes; and so
    /// on from each.
    pub fn reachable(&self, kernel: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![kernel.to_string()];
        while let Some(name) = todo.pop() {
            let Some(function) = self.functions.get(&name) else {
                continue;
            };
            let mut next: Vec<&String> = function.direct.iter().collect();
            if function.indirect {
                next.extend(&self.address_taken);
            }
            for callee in next {
                if seen.insert(callee.clone()) {
                    todo.push(callee.clone());
                }
            }
        }
        seen
    }

    /// Whether `kernel`, or a function it calls directly, calls through a register.
    pub fn calls_indirectly(&self, kernel: &str) -> bool {
        let mut seen = BTreeSet::new();
        let mut todo = vec![kernel];
        while let Some(name) = todo.pop() {
            let Some(function) = self.functions.get(name) else {
                continue;
            };
            if function.indirect {
                return true;
            }
            for callee in &function.direct {
                if seen.insert(callee.as_str()) {
                    todo.push(callee);
                }
            }
        }
        false
    }
}

/// The text without `//` and `/* */` comments (NVRTC writes both).
fn without_comments(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut rest = ptx;
    while !rest.is_empty() {
        let line = rest.find("//");
        let block = rest.find("/*");
        match (line, block) {
            (Some(line), block) if block.is_none_or(|b| line < b) => {
                out.push_str(&rest[..line]);
                rest = rest[line..]
                    .find('\n')
                    .map_or("", |end| &rest[line + end..]);
            }
            (_, Some(block)) => {
                out.push_str(&rest[..block]);
                rest = rest[block..]
                    .find("*/")
                    .map_or("", |end| &rest[block + end + 2..]);
            }
            _ => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
    out
}

/// Where the brace opened at `open` closes (the end of the text if it never does).
fn matching_brace(text: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + i;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// The function a body's header names: `.entry NAME(` or `.func (RETURN) NAME(`; `None` for
/// anything else (an initialiser's `= {`).
fn function_name(header: &str) -> Option<String> {
    let header = header.trim();
    let after = if let Some(at) = header.find(".entry") {
        &header[at + ".entry".len()..]
    } else {
        let at = header.find(".func")?;
        let rest = header[at + ".func".len()..].trim_start();
        match rest.strip_prefix('(') {
            // The return value's parameters, then the name.
            Some(inside) => &inside[inside.find(')')? + 1..],
            None => rest,
        }
    };
    identifiers(after).next().map(str::to_string)
}

/// A function body's calls; the names it uses elsewhere go to `named`.
fn read_body(body: &str, named: &mut BTreeSet<String>) -> Function {
    let mut function = Function::default();
    for statement in body.split(['{', '}', ';']) {
        let statement = statement.trim();
        let opcode = statement.split_whitespace().next().unwrap_or_default();
        let is_call = opcode == "call" || opcode.starts_with("call.");
        if !is_call {
            named.extend(identifiers(statement).map(str::to_string));
            continue;
        }
        // `call[.uni] [(RET),] TARGET, (ARGS)[, PROTOTYPE]`: the target is the first operand
        // outside parentheses.
        let operands = statement[opcode.len()..].trim_start();
        let operands = match operands.strip_prefix('(') {
            Some(inside) => inside.find(')').map_or("", |end| &inside[end + 1..]),
            None => operands,
        };
        let target = operands
            .trim_start_matches([',', ' ', '\t', '\n', '\r'])
            .split([',', '(', ' ', '\t', '\n', '\r'])
            .next()
            .unwrap_or_default();
        if target.starts_with('%') {
            function.indirect = true;
        } else if !target.is_empty() {
            function.direct.insert(target.to_string());
        }
    }
    function
}

/// The identifiers of PTX text: names of functions, variables, registers (`%rd3`) and
/// labels, one by one.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')))
        .filter(|word| word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NVRTC 12.9's PTX (compute_90) of `ptx/cases.cu`, kernels written as lab06's are, built
    /// with a grader's add.cuh whose `add` calls `grade_add_0123abcd` (kept out of line); and
    /// of the same file with one kernel's abstraction skipped, as the corpus's cheats do.
    const SOLUTION: &str = include_str!("ptx/solution.ptx");
    const VIRTUAL_ADDS_ITSELF: &str = include_str!("ptx/virtual-adds-itself.ptx");
    const POINTER_CALLS_ADD: &str = include_str!("ptx/pointer-calls-add.ptx");
    const GENERIC_ADDS_ITSELF: &str = include_str!("ptx/generic-adds-itself.ptx");
    const PLANTED: &str = "grade_add_0123abcd";

    fn reaches(ptx: &str, kernel: &str) -> bool {
        Module::parse(ptx).reachable(kernel).contains(PLANTED)
    }

    #[test]
    fn the_solution_reaches_the_planted_function_from_every_abstract_kernel() {
        let module = Module::parse(SOLUTION);
        for kernel in ["reduce_generic", "reduce_virtual", "reduce_fn_ptr_hoisted"] {
            assert!(module.defines(kernel), "{kernel}");
            assert!(module.reachable(kernel).contains(PLANTED), "{kernel}");
        }
        assert!(!module.calls_indirectly("reduce_generic"));
        assert!(module.calls_indirectly("reduce_virtual"));
        assert!(module.calls_indirectly("reduce_fn_ptr_hoisted"));
        // A kernel that calls nothing reaches nothing.
        assert!(module.reachable("build_adder").is_empty());
        assert!(!module.defines("reduce_plain"));
    }

    /// The vtable's initialiser and the pointer's `mov` take the two addresses an indirect
    /// call may reach; the planted function itself is only ever called directly.
    #[test]
    fn addresses_are_taken_by_initialisers_and_moves() {
        let module = Module::parse(SOLUTION);
        let taken: Vec<&str> = module.address_taken.iter().map(String::as_str).collect();
        assert_eq!(taken, ["_Z3addff", "_ZNK5Adder7combineEff"]);
    }

    #[test]
    fn a_virtual_kernel_adding_itself_makes_no_call() {
        let module = Module::parse(VIRTUAL_ADDS_ITSELF);
        assert!(!module.calls_indirectly("reduce_virtual"));
        assert!(!module.reachable("reduce_virtual").contains(PLANTED));
        assert!(reaches(VIRTUAL_ADDS_ITSELF, "reduce_generic"));
        assert!(reaches(VIRTUAL_ADDS_ITSELF, "reduce_fn_ptr_hoisted"));
    }

    /// Calling `add` directly reaches the planted function, but through no pointer.
    #[test]
    fn a_pointer_kernel_calling_add_directly_makes_no_indirect_call() {
        let module = Module::parse(POINTER_CALLS_ADD);
        assert!(module.reachable("reduce_fn_ptr_hoisted").contains(PLANTED));
        assert!(!module.calls_indirectly("reduce_fn_ptr_hoisted"));
        assert!(module.calls_indirectly("reduce_virtual"));
    }

    #[test]
    fn a_generic_kernel_adding_itself_never_reaches_the_planted_function() {
        assert!(!reaches(GENERIC_ADDS_ITSELF, "reduce_generic"));
        assert!(reaches(GENERIC_ADDS_ITSELF, "reduce_virtual"));
    }

    #[test]
    fn calls_are_read_across_lines_and_comments() {
        let ptx = "\
            .func (.param .b32 func_retval0) f(.param .b32 p) { ret; }\n\
            .func g() { ret; }\n\
            .visible .entry k(.param .u64 a)\n{\n\
            \t// call.uni nothing, (x);\n\
            \tmov.u64 %rd1, g;\n\
            \tcall.uni (retval0), \n\tf, \n\t(\n\tparam0\n\t);\n\
            \tcall \n\t%rd1, \n\t(\n\t)\n\t, prototype_1;\n\
            \tret;\n}\n\
            .visible .entry j() { /* call f; */ ret; }\n";
        let module = Module::parse(ptx);
        let reached: Vec<String> = module.reachable("k").into_iter().collect();
        assert_eq!(reached, ["f", "g"]);
        assert!(module.calls_indirectly("k"));
        assert!(module.reachable("j").is_empty());
        assert!(!module.calls_indirectly("j"));
        assert!(!module.defines("nothing"));
    }
}
