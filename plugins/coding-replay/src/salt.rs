//! The MLPerf datacenter agentic benchmark's trajectory salts
//! (`enable_salt`): the first system message of every turn of a
//! conversation instance becomes `"[salt: R]\n\n" + system + "\n\n[salt: C]"`,
//! so a trajectory reuses its own KV cache, one dataset pass shares the
//! system prompt, and nothing is shared across passes.
//!
//! - `reference` (the default): byte-exact with the reference harness. R is
//!   the 2-byte BLAKE2b digest (4 hex characters) of the repeat number in
//!   ASCII decimal (1 on the first pass), C the same hash of the source
//!   conversation id. No seed: every run sends the same prompts.
//! - `seeded64`: the rules' reading (at least 64 bits per instance, from a
//!   declared seed). R is the 8-byte BLAKE2b digest of the seed and the
//!   instance's logical id, C that of the seed and the source id; same
//!   positions, one salt per instance, never per request.

use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;
use serde::Deserialize;

/// Which salts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SaltMode {
    #[default]
    Reference,
    Seeded64,
}

/// A BLAKE2b digest of `size` bytes (the digest length is a parameter of
/// the hash, not a truncation), in lowercase hex.
fn blake2b_hex(size: usize, parts: &[&[u8]]) -> String {
    let mut h = Blake2bVar::new(size).expect("1 to 64 bytes");
    for p in parts {
        h.update(p);
    }
    let mut out = vec![0u8; size];
    h.finalize_variable(&mut out).expect("the size asked for");
    out.iter().map(|b| format!("{b:02x}")).collect()
}

/// The salted system prompt of an instance: pass `pass` (1-based) of
/// conversation `source`, logical id `logical`.
pub fn salted(
    system: &str,
    mode: SaltMode,
    seed: u64,
    pass: u32,
    source: &str,
    logical: &str,
) -> String {
    let (r, c) = match mode {
        SaltMode::Reference => (
            blake2b_hex(2, &[pass.to_string().as_bytes()]),
            blake2b_hex(2, &[source.as_bytes()]),
        ),
        SaltMode::Seeded64 => {
            let seed = seed.to_le_bytes();
            (
                blake2b_hex(8, &[&seed, b"instance\0", logical.as_bytes()]),
                blake2b_hex(8, &[&seed, b"source\0", source.as_bytes()]),
            )
        }
    };
    format!("[salt: {r}]\n\n{system}\n\n[salt: {c}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's vectors (`reference-datacenter-agentic.md` §2.4; the
    /// third is its own unit test's), checked against Python's
    /// `hashlib.blake2b(data, digest_size=2)`.
    #[test]
    fn reference_salts_match_the_reference_byte_for_byte() {
        let r: Vec<String> = (1..=5)
            .map(|i: u32| blake2b_hex(2, &[i.to_string().as_bytes()]))
            .collect();
        assert_eq!(r, ["4461", "ba75", "0967", "88ed", "56d5"]);
        assert_eq!(blake2b_hex(2, &[b"conv1"]), "e643");
        assert_eq!(blake2b_hex(2, &[b"django__django-16899"]), "edc0");
        assert_eq!(
            salted(
                "Be helpful",
                SaltMode::Reference,
                0,
                2,
                "conv1",
                "conv1__repeat_2"
            ),
            "[salt: ba75]\n\nBe helpful\n\n[salt: e643]"
        );
        // Repeats 182 and 644 collide, as the reference's do.
        assert_eq!(blake2b_hex(2, &[b"182"]), blake2b_hex(2, &[b"644"]));
        assert_eq!(blake2b_hex(2, &[b"182"]), "2a3a");
    }

    #[test]
    fn seeded_salts_are_64_bits_per_instance_and_follow_the_seed() {
        let a = salted("S", SaltMode::Seeded64, 42, 2, "conv1", "conv1__repeat_2");
        let tag = |s: &str| s[7..s.find(']').unwrap()].to_owned();
        assert_eq!(tag(&a).len(), 16);
        assert_eq!(
            a,
            salted("S", SaltMode::Seeded64, 42, 2, "conv1", "conv1__repeat_2")
        );
        assert_ne!(
            a,
            salted("S", SaltMode::Seeded64, 43, 2, "conv1", "conv1__repeat_2")
        );
        assert_ne!(
            tag(&a),
            tag(&salted(
                "S",
                SaltMode::Seeded64,
                42,
                3,
                "conv1",
                "conv1__repeat_3"
            ))
        );
        assert!(a.starts_with("[salt: ") && a.contains("]\n\nS\n\n[salt: "));
    }
}
