//! A request's prompt from its hash blocks (see the crate docs).

use super::trace::Line;

/// The words (four letters each, one token with a leading space).
pub fn words() -> &'static [&'static str] {
    static WORDS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    WORDS.get_or_init(|| include_str!("words.txt").split_whitespace().collect())
}

/// Words in [`words`].
pub const VOCABULARY: u64 = 1024;

/// Word `i` of the block with id `id`: the first is `id mod 1024`, the rest drawn from the
/// id and the place.
pub fn block_word(id: u64, i: u32) -> usize {
    if i == 0 {
        return (id % VOCABULARY) as usize;
    }
    (mix(id, u64::from(i)) % VOCABULARY) as usize
}

/// Word `t` of request `index`'s own text past its hash blocks.
fn own_word(index: u64, t: u32) -> usize {
    (mix(!index, u64::from(t) | 1 << 40) % VOCABULARY) as usize
}

/// A SplitMix64 finalizer over two numbers.
fn mix(a: u64, b: u64) -> u64 {
    let mut z = a
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The prompt of line `index`: `input_length` words, space-separated.
pub fn text(line: &Line, index: u64, block_tokens: u32) -> String {
    let words = words();
    let n = line.input_length;
    let mut out = String::with_capacity(n as usize * 5);
    for t in 0..n {
        let (block, i) = (t / block_tokens, t % block_tokens);
        let word = match line.hash_ids.get(block as usize) {
            Some(&id) => block_word(id, i),
            None => own_word(index, t),
        };
        if t > 0 {
            out.push(' ');
        }
        out.push_str(words[word]);
    }
    out
}
