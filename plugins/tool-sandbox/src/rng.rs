//! A small seeded generator (SplitMix64): the sandbox's only source of
//! randomness, so `$RANDOM`, `mktemp` names, `sort -R` and `shuf` orders and
//! `/dev/urandom` are the same on every run of the same calls.

/// SplitMix64 (Steele, Lea and Flood, 2014).
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(n);
        out
    }
}

/// A 64-bit digest of `parts` (FNV-1a), for seeds derived from names.
pub fn seed_of(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.iter().chain(std::iter::once(&0xff)) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// A 64-bit hash of `bytes` under `key`: the order a seeded random sort
/// puts lines in (SplitMix64's finalizer over 8-byte words).
pub fn keyed_hash(key: u64, bytes: &[u8]) -> u64 {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut h = mix(key ^ bytes.len() as u64);
    for word in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..word.len()].copy_from_slice(word);
        h = mix(h.wrapping_add(0x9e37_79b9_7f4a_7c15) ^ u64::from_le_bytes(w));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_bytes() {
        assert_eq!(SplitMix::new(7).bytes(20), SplitMix::new(7).bytes(20));
        assert_ne!(SplitMix::new(7).bytes(20), SplitMix::new(8).bytes(20));
        assert_ne!(seed_of(&[b"a", b"bc"]), seed_of(&[b"ab", b"c"]));
    }

    #[test]
    fn a_keyed_hash_depends_on_key_and_every_byte() {
        assert_eq!(keyed_hash(1, b"line"), keyed_hash(1, b"line"));
        assert_ne!(keyed_hash(1, b"line"), keyed_hash(2, b"line"));
        assert_ne!(keyed_hash(1, b"line"), keyed_hash(1, b"line\0"));
        assert_ne!(keyed_hash(1, b"abcdefgh1"), keyed_hash(1, b"abcdefgh2"));
    }
}
