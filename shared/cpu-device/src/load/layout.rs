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
