//! The module's variables in memory: global and constant ones in regions of their own,
//! shared ones at offsets in each block's shared memory, their initial values written, and
//! the address a variable's or function's name stands for.

use super::parse::{Init, VarDecl};
use super::{LoadResult, Module, Variable};
use crate::ir::*;
use crate::memory::Memory;

/// Give each variable its address: global and constant ones get memory of their own (their
/// address is what `mov` of their name gives); shared ones an offset in each block's shared
/// memory.
pub(super) fn place_variables(
    module: &mut Module,
    vars: &[VarDecl],
    memory: &Memory,
) -> LoadResult<()> {
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
pub(super) fn initialise_variables(
    module: &Module,
    vars: &[VarDecl],
    memory: &Memory,
) -> LoadResult<()> {
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

pub(super) fn symbol_address(module: &Module, name: &str) -> Option<u64> {
    if let Some(v) = module.variables.iter().find(|v| v.name == name) {
        return Some(v.address);
    }
    module
        .by_name
        .get(name)
        .map(|&i| FUNCTION_ADDRESS_BASE + u64::from(i) * 16)
}

#[cfg(test)]
mod tests {
    use crate::load::load;
    use crate::memory::Memory;

    const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

    /// layout: a `.shared .align 16` array after a 1-byte shared variable starts at offset
    /// 16, and an unsized `[]` array (dynamic shared memory) adds no bytes of its own.
    #[test]
    fn shared_variables_are_aligned_and_an_unsized_array_is_free() {
        let ptx = format!(
            "{HEADER}.shared .u8 a;\n.shared .align 16 .b8 b[20];\n.shared .align 8 .b8 dyn[];\n"
        );
        let module = load(&ptx, &Memory::default()).expect("loads");
        let at: Vec<u64> = module.variables.iter().map(|v| v.address).collect();
        assert_eq!(at, [0, 16, 40]);
        assert_eq!(module.shared_bytes, 40);
    }

    /// layout: a `.global .align 16` array after a 1-byte global gets a 16-byte aligned
    /// address with its initial values written at their width, and a `.u64` initialised
    /// with the array's name holds its address.
    #[test]
    fn globals_are_aligned_and_initialised() {
        let ptx = format!(
            "{HEADER}.global .u8 a = 7;\n.global .align 16 .u16 h[3] = {{1, 2, 0xFFFF}};\n\
             .global .u64 p = h;\n"
        );
        let memory = Memory::default();
        let module = load(&ptx, &memory).expect("loads");
        let [a, h, p] = &module.variables[..] else {
            panic!("three variables");
        };
        assert_eq!(h.address % 16, 0);
        let mut bytes = [0u8; 1];
        memory.read(a.address, &mut bytes).expect("a");
        assert_eq!(bytes, [7]);
        let mut bytes = [0u8; 6];
        memory.read(h.address, &mut bytes).expect("h");
        assert_eq!(bytes, [1, 0, 2, 0, 0xFF, 0xFF]);
        let mut bytes = [0u8; 8];
        memory.read(p.address, &mut bytes).expect("p");
        assert_eq!(u64::from_le_bytes(bytes), h.address);
    }
}
