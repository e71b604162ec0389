//! The defined functions of a shared library, read from its ELF dynamic symbol table
//! (`.dynsym`), what `nm -D --defined-only` shows: enough for `smxrun boxes --boxes LIB.so` to
//! list the box implementations a library offers without a net.

use std::path::Path;

const SHT_DYNSYM: u32 = 11;
const STT_FUNC: u8 = 2;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;
const STV_HIDDEN: u8 = 2;

/// Names of the global (or weak), visible, defined functions in `path`'s `.dynsym`, sorted.
pub fn defined_functions(path: &Path) -> Result<Vec<String>, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut names = parse(&bytes)?;
    names.sort();
    names.dedup();
    Ok(names)
}

fn parse(b: &[u8]) -> Result<Vec<String>, String> {
    let bad = || "not a 64-bit little-endian ELF file (nm -D LIB lists its symbols)".to_string();
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return Err(bad());
    }
    let u16_at = |o: usize| b.get(o..o + 2).map(|s| u16::from_le_bytes([s[0], s[1]]));
    let u32_at = |o: usize| {
        b.get(o..o + 4)
            .map(|s| u32::from_le_bytes(s.try_into().unwrap_or_default()))
    };
    let u64_at = |o: usize| {
        b.get(o..o + 8)
            .map(|s| u64::from_le_bytes(s.try_into().unwrap_or_default()))
    };
    let truncated = || "truncated ELF file".to_string();
    let shoff = u64_at(0x28).ok_or_else(truncated)? as usize;
    let shentsize = u16_at(0x3a).ok_or_else(truncated)? as usize;
    let shnum = u16_at(0x3c).ok_or_else(truncated)? as usize;
    if shentsize < 64 {
        return Err(bad());
    }
    let section = |k: usize| -> Option<(u32, usize, usize, u32, usize)> {
        let o = shoff.checked_add(k.checked_mul(shentsize)?)?;
        Some((
            u32_at(o + 4)?,
            u64_at(o + 24)? as usize,
            u64_at(o + 32)? as usize,
            u32_at(o + 40)?,
            u64_at(o + 56)? as usize,
        ))
    };
    let mut names = Vec::new();
    for k in 0..shnum {
        let Some((kind, offset, size, link, entsize)) = section(k) else {
            return Err(truncated());
        };
        if kind != SHT_DYNSYM {
            continue;
        }
        let (_, str_off, str_size, _, _) = section(link as usize).ok_or_else(truncated)?;
        let strings = b.get(str_off..str_off.saturating_add(str_size)).ok_or_else(truncated)?;
        let entsize = if entsize == 0 { 24 } else { entsize };
        let table = b.get(offset..offset.saturating_add(size)).ok_or_else(truncated)?;
        for sym in table.chunks_exact(entsize) {
            let name = u32::from_le_bytes([sym[0], sym[1], sym[2], sym[3]]) as usize;
            let (info, other) = (sym[4], sym[5]);
            let shndx = u16::from_le_bytes([sym[6], sym[7]]);
            let bind = info >> 4;
            if shndx == 0 || info & 0xf != STT_FUNC || (bind != STB_GLOBAL && bind != STB_WEAK) {
                continue;
            }
            if other & 3 == STV_HIDDEN {
                continue;
            }
            let Some(rest) = strings.get(name..) else { continue };
            let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
            if let Ok(s) = std::str::from_utf8(&rest[..end])
                && !s.is_empty()
            {
                names.push(s.to_string());
            }
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_files_are_refused() {
        assert!(parse(b"#!/bin/sh\n").is_err());
        assert!(parse(&[0u8; 100]).is_err());
    }

    #[test]
    fn the_c_library_has_malloc() {
        // Any 64-bit glibc system has it; skipped elsewhere.
        for path in ["/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6"] {
            if let Ok(names) = defined_functions(Path::new(path)) {
                assert!(names.iter().any(|n| n == "malloc"), "{path}");
            }
        }
    }
}
