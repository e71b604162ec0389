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

/// `e_machine` of the architecture this program runs on (`None`: not checked).
const fn this_machine() -> Option<u16> {
    if cfg!(target_arch = "x86_64") {
        Some(62)
    } else if cfg!(target_arch = "aarch64") {
        Some(183)
    } else if cfg!(target_arch = "riscv64") {
        Some(243)
    } else if cfg!(target_arch = "powerpc64") {
        Some(21)
    } else if cfg!(target_arch = "s390x") {
        Some(22)
    } else {
        None
    }
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const ET_DYN: u16 = 3;

/// Whether the dynamic loader can map `path` without harm: a regular file (a FIFO would block
/// the loader forever) holding a 64-bit little-endian ELF shared object for this machine,
/// every segment the loader maps lying inside the file (a truncated copy would make the loader
/// touch pages past its end and die of SIGBUS). Checked before `dlopen`, whose own messages
/// for these cases are misleading ("No such file or directory" for another architecture) or
/// never come.
pub fn check_loadable(path: &Path) -> Result<(), String> {
    use std::io::Read;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file (a shared library is one)".to_string());
    }
    let len = meta.len();
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64 * 1024).read_to_end(&mut head))
        .map_err(|e| e.to_string())?;
    check_header(&head, len)
}

fn check_header(b: &[u8], len: u64) -> Result<(), String> {
    if b.len() < 64 || &b[..4] != b"\x7fELF" {
        return Err("not an ELF shared library".to_string());
    }
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    if b[4] != 2 || b[5] != 1 {
        return Err("built for another architecture (not 64-bit little-endian ELF)".to_string());
    }
    let machine = u16_at(18);
    if let Some(here) = this_machine()
        && machine != here
    {
        return Err(format!(
            "built for another architecture (ELF machine {machine}; this program runs on machine {here}, {})",
            std::env::consts::ARCH
        ));
    }
    if u16_at(16) != ET_DYN {
        return Err("not an ELF shared library (an executable or object file: link it with -shared)".to_string());
    }
    let u32_at = |o: usize| b.get(o..o + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
    let u64_at = |o: usize| {
        b.get(o..o + 8)
            .map(|s| u64::from_le_bytes(s.try_into().unwrap_or_default()))
    };
    let truncated = |what: &str| format!("truncated or corrupt: {what} lies past the end of the file ({len} bytes)");
    let phoff = u64_at(0x20).unwrap_or(u64::MAX);
    let (phentsize, phnum) = (u64::from(u16_at(0x36)), u64::from(u16_at(0x38)));
    let table_end = phentsize.checked_mul(phnum).and_then(|n| n.checked_add(phoff));
    if phentsize < 56 || table_end.is_none_or(|end| end > len) {
        return Err(truncated("the program header table"));
    }
    for k in 0..phnum {
        let o = usize::try_from(phoff + k * phentsize).unwrap_or(usize::MAX);
        let (Some(kind), Some(offset), Some(size)) = (u32_at(o), u64_at(o + 8), u64_at(o + 32)) else {
            return Err("program header table too far into the file to check".to_string());
        };
        if matches!(kind, PT_LOAD | PT_DYNAMIC) && offset.checked_add(size).is_none_or(|end| end > len) {
            return Err(truncated(if kind == PT_LOAD {
                "a loadable segment"
            } else {
                "the dynamic section"
            }));
        }
    }
    Ok(())
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
    fn only_a_whole_library_for_this_machine_is_loadable() {
        for path in ["/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6"] {
            let Ok(bytes) = std::fs::read(path) else { continue };
            if this_machine() != Some(u16::from_le_bytes([bytes[18], bytes[19]])) {
                continue;
            }
            assert_eq!(check_header(&bytes, bytes.len() as u64), Ok(()));
            let cut = check_header(&bytes, 4096).unwrap_err();
            assert!(cut.contains("truncated"), "{cut}");
            let mut foreign = bytes.clone();
            foreign[18] ^= 0x40;
            let other = check_header(&foreign, bytes.len() as u64).unwrap_err();
            assert!(other.contains("another architecture"), "{other}");
        }
        assert!(check_header(b"#!/bin/sh\n", 10).unwrap_err().contains("not an ELF"));
        assert!(
            check_loadable(Path::new("/"))
                .unwrap_err()
                .contains("not a regular file")
        );
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
