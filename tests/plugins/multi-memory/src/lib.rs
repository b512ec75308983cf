//! Builds the multi-memory test fixture: a
//! copy of a working workload component (the `misbehave` fixture) with one
//! more core module appended, instantiated several times. Each instance
//! defines its own linear memory of the given size and, in its start
//! function, writes to every 4 KiB page of it, so memory the host lets it
//! have becomes resident.
//!
//! A per-memory cap lets every instance through (each memory is under it);
//! only a cap on all memories of the store together stops the component.
//!
//! Used by `tests/all/plugin_sandbox.rs`, which wraps the built `misbehave`
//! fixture at test time ([`wrap`]).

/// The component header (`\0asm`, version 0x0d, layer 1).
const COMPONENT_HEADER: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
/// Component section ids.
const CORE_MODULE: u8 = 1;
const CORE_INSTANCE: u8 = 2;
const ALIAS: u8 = 6;

/// `component` with `instances` core instances of a module whose memory is
/// `mib` MiB appended after its own sections.
/// `component` with `instances` extra core instances, each defining and
/// touching a `mib` MiB linear memory.
pub fn wrap(component: &[u8], instances: u32, mib: u32) -> Result<Vec<u8>, String> {
    if component.get(..8) != Some(&COMPONENT_HEADER[..]) {
        return Err("not a component (wrong header)".into());
    }
    let modules = count_core_modules(&component[8..])?;
    let mut out = component.to_vec();
    section(&mut out, CORE_MODULE, &memory_module(mib * 16));
    let mut body = uleb(instances);
    for _ in 0..instances {
        body.push(0x00); // instantiate
        body.extend(uleb(modules));
        body.push(0x00); // no arguments
    }
    section(&mut out, CORE_INSTANCE, &body);
    Ok(out)
}

/// Core modules in the component's top-level index space: module sections
/// and core-module aliases.
fn count_core_modules(mut sections: &[u8]) -> Result<u32, String> {
    let mut count = 0;
    while !sections.is_empty() {
        let id = sections[0];
        let mut at = 1;
        let size = read_uleb(sections, &mut at)? as usize;
        let body = sections
            .get(at..at + size)
            .ok_or("a section runs past the end")?;
        match id {
            CORE_MODULE => count += 1,
            ALIAS => count += core_module_aliases(body)?,
            _ => {}
        }
        sections = &sections[at + size..];
    }
    Ok(count)
}

fn core_module_aliases(body: &[u8]) -> Result<u32, String> {
    let mut at = 0;
    let n = read_uleb(body, &mut at)?;
    let mut modules = 0;
    for _ in 0..n {
        let sort = *body.get(at).ok_or("truncated alias")?;
        at += 1;
        let core_sort = if sort == 0x00 {
            let s = *body.get(at).ok_or("truncated alias")?;
            at += 1;
            Some(s)
        } else {
            None
        };
        if core_sort == Some(0x11) {
            modules += 1;
        }
        let target = *body.get(at).ok_or("truncated alias")?;
        at += 1;
        match target {
            0x00 | 0x01 => {
                read_uleb(body, &mut at)?;
                let len = read_uleb(body, &mut at)? as usize;
                at += len;
            }
            0x02 => {
                read_uleb(body, &mut at)?;
                read_uleb(body, &mut at)?;
            }
            other => return Err(format!("unknown alias target {other:#x}")),
        }
    }
    Ok(modules)
}

/// A core module with one memory of `pages` 64 KiB pages, exported, and a
/// start function that stores to every 4 KiB of it.
fn memory_module(pages: u32) -> Vec<u8> {
    let mut m = vec![0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
    section(&mut m, 1, &[0x01, 0x60, 0x00, 0x00]); // type 0: [] -> []
    section(&mut m, 3, &[0x01, 0x00]); // func 0: type 0
    let mut memory = vec![0x01, 0x00];
    memory.extend(uleb(pages));
    section(&mut m, 5, &memory);
    let mut export = vec![0x01];
    export.extend(uleb(6));
    export.extend_from_slice(b"memory");
    export.extend([0x02, 0x00]);
    section(&mut m, 7, &export);
    section(&mut m, 8, &[0x00]); // start: func 0
    let mut code = vec![0x01, 0x01, 0x7f]; // one i32 local
    code.extend([0x03, 0x40]); // loop
    code.extend([0x20, 0x00, 0x41, 0x01, 0x36, 0x02, 0x00]); // mem[i] = 1
    code.extend([0x20, 0x00, 0x41]);
    code.extend(sleb(4096));
    code.extend([0x6a, 0x22, 0x00, 0x41]); // i += 4096
    code.extend(sleb(i64::from(pages) * 65536));
    code.extend([0x49, 0x0d, 0x00, 0x0b, 0x0b]); // br_if i < size; end; end
    let mut bodies = vec![0x01];
    bodies.extend(uleb(code.len() as u32));
    bodies.extend(code);
    section(&mut m, 10, &bodies);
    m
}

fn section(out: &mut Vec<u8>, id: u8, body: &[u8]) {
    out.push(id);
    out.extend(uleb(body.len() as u32));
    out.extend_from_slice(body);
}

fn uleb(mut v: u32) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

fn sleb(mut v: i64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if (v == 0 && b & 0x40 == 0) || (v == -1 && b & 0x40 != 0) {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

fn read_uleb(bytes: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *bytes.get(*at).ok_or("truncated LEB128")?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 35 {
            return Err("LEB128 too long".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128_encodings() {
        assert_eq!(uleb(960), [0xc0, 0x07]);
        assert_eq!(sleb(4096), [0x80, 0x20]);
        assert_eq!(sleb(62_914_560), [0x80, 0x80, 0x80, 0x1e]);
        let mut at = 0;
        assert_eq!(read_uleb(&[0xc0, 0x07], &mut at), Ok(960));
    }

    #[test]
    fn appends_a_module_and_its_instances() {
        let mut component = COMPONENT_HEADER.to_vec();
        section(&mut component, CORE_MODULE, &memory_module(1));
        let out = wrap(&component, 3, 2).unwrap();
        assert_eq!(count_core_modules(&out[8..]).unwrap(), 2);
        assert!(wrap(b"\0asm\x01\0\0\0", 1, 1).is_err());
    }
}
