//! Byte-level byte-pair encoding over a rank table (the `.tiktoken` format):
//! a piece is split into bytes, then the adjacent pair whose concatenation
//! has the lowest rank is merged, the leftmost one on ties, until no pair is
//! in the table. A piece that is itself in the table is one token.

use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Pieces at least this long are merged with a heap (`O(n log n)`) rather
/// than by rescanning every pair after each merge (`O(n²)`, faster when
/// short).
const HEAP_MIN_LEN: usize = 64;

/// The rank table: token bytes to id.
pub(crate) struct Bpe {
    ranks: FxHashMap<Vec<u8>, u32>,
    byte_ranks: [u32; 256],
}

impl Bpe {
    /// Builds the table; `None` when a single byte has no rank, which
    /// byte-level encoding needs for every byte.
    pub(crate) fn new(ranks: FxHashMap<Vec<u8>, u32>) -> Option<Bpe> {
        let mut byte_ranks = [0u32; 256];
        for (b, slot) in byte_ranks.iter_mut().enumerate() {
            *slot = *ranks.get([b as u8].as_slice())?;
        }
        Some(Bpe { ranks, byte_ranks })
    }

    /// Number of ranked tokens.
    pub(crate) fn len(&self) -> usize {
        self.ranks.len()
    }

    fn rank(&self, bytes: &[u8]) -> Option<u32> {
        self.ranks.get(bytes).copied()
    }

    /// Appends the ids of one piece to `out`.
    pub(crate) fn encode_piece(&self, piece: &[u8], out: &mut Vec<u32>) {
        match piece.len() {
            0 => {}
            1 => out.push(self.byte_ranks[piece[0] as usize]),
            _ => match self.rank(piece) {
                Some(id) => out.push(id),
                None => self.emit(piece, &self.merge(piece), out),
            },
        }
    }

    /// Appends the byte length of each token of one piece to `out`.
    pub(crate) fn token_lens(&self, piece: &[u8], out: &mut Vec<usize>) {
        match piece.len() {
            0 => {}
            1 => out.push(1),
            n if self.rank(piece).is_some() => out.push(n),
            _ => out.extend(self.merge(piece).windows(2).map(|w| w[1] - w[0])),
        }
    }

    /// Start offsets of the merged parts of a piece, then its length.
    fn merge(&self, piece: &[u8]) -> Vec<usize> {
        if piece.len() < HEAP_MIN_LEN {
            self.merge_scan(piece)
        } else {
            self.merge_heap(piece)
        }
    }

    /// Rank of the pair of parts `starts[i]..starts[i + 2]`, if both exist.
    fn pair_rank(&self, piece: &[u8], starts: &[usize], i: usize) -> u32 {
        match (starts.get(i), starts.get(i + 2)) {
            (Some(&a), Some(&b)) => self.rank(&piece[a..b]).unwrap_or(u32::MAX),
            _ => u32::MAX,
        }
    }

    /// Emits the final parts, given their start offsets.
    fn emit(&self, piece: &[u8], starts: &[usize], out: &mut Vec<u32>) {
        for w in starts.windows(2) {
            let part = &piece[w[0]..w[1]];
            let id = if part.len() == 1 {
                self.byte_ranks[part[0] as usize]
            } else {
                self.rank(part).expect("merged parts are ranked tokens")
            };
            out.push(id);
        }
    }

    /// Merging for short pieces: rescan the pair ranks for the minimum.
    fn merge_scan(&self, piece: &[u8]) -> Vec<usize> {
        // Part i spans starts[i]..starts[i + 1]; the last entry is the end.
        let mut starts: Vec<usize> = (0..=piece.len()).collect();
        // pair[i]: rank of parts i and i + 1 merged.
        let mut pair: Vec<u32> = (0..piece.len())
            .map(|i| self.pair_rank(piece, &starts, i))
            .collect();
        // The lowest ranked pair, the leftmost on ties.
        while let Some((i, _)) = pair
            .iter()
            .enumerate()
            .filter(|&(_, &r)| r != u32::MAX)
            .min_by_key(|&(i, &r)| (r, i))
        {
            starts.remove(i + 1);
            pair.remove(i + 1);
            pair[i] = self.pair_rank(piece, &starts, i);
            if i > 0 {
                pair[i - 1] = self.pair_rank(piece, &starts, i - 1);
            }
        }
        starts
    }

    /// Merging for long pieces: a min-heap of candidate pairs keyed by
    /// (rank, start offset), so ties go to the leftmost pair as in the scan.
    /// Parts live in a linked list indexed by start offset; a heap entry is
    /// stale once either of its parts has changed.
    fn merge_heap(&self, piece: &[u8]) -> Vec<usize> {
        let n = piece.len();
        // For a part starting at i: next[i] is the end (next part's start),
        // prev[i] the previous part's start; alive[i] while it starts a part.
        let mut next: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let mut heap = BinaryHeap::new();
        for i in 0..n - 1 {
            if let Some(r) = self.rank(&piece[i..i + 2]) {
                heap.push(Reverse((r, i, i + 2)));
            }
        }
        while let Some(Reverse((_, left, end))) = heap.pop() {
            // Valid while `left` still starts a part whose right neighbour
            // still ends at `end`.
            if !alive[left] {
                continue;
            }
            let mid = next[left];
            if mid >= n || next[mid] != end {
                continue;
            }
            alive[mid] = false;
            next[left] = end;
            if end < n {
                prev[end] = left;
                if let Some(r) = self.rank(&piece[left..next[end]]) {
                    heap.push(Reverse((r, left, next[end])));
                }
            }
            if left > 0 {
                let p = prev[left];
                if let Some(r) = self.rank(&piece[p..end]) {
                    heap.push(Reverse((r, p, end)));
                }
            }
        }
        let mut starts = Vec::new();
        let mut i = 0;
        while i < n {
            starts.push(i);
            i = next[i];
        }
        starts.push(n);
        starts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// All single bytes, then the merges "ab", "bc", "abc", "aa", "aaaa",
    /// "cd" in rank order.
    fn toy() -> Bpe {
        let mut ranks: FxHashMap<Vec<u8>, u32> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        for (i, t) in ["ab", "bc", "abc", "aa", "aaaa", "cd"].iter().enumerate() {
            ranks.insert(t.as_bytes().to_vec(), 256 + i as u32);
        }
        Bpe::new(ranks).expect("all bytes ranked")
    }

    fn both(bpe: &Bpe, piece: &[u8]) -> (Vec<usize>, Vec<usize>) {
        (bpe.merge_scan(piece), bpe.merge_heap(piece))
    }

    #[test]
    fn merges_lowest_rank_first() {
        let bpe = toy();
        let mut out = Vec::new();
        // "abcd": ab (256) first, then abc (258) before cd (261).
        bpe.encode_piece(b"abcd", &mut out);
        assert_eq!(out, [258, 100]);
        out.clear();
        // "bcd": bc (257) before cd (261).
        bpe.encode_piece(b"bcd", &mut out);
        assert_eq!(out, [257, 100]);
        out.clear();
        // "abc" is a token itself.
        bpe.encode_piece(b"abc", &mut out);
        assert_eq!(out, [258]);
        out.clear();
        // "aaaaa": aa, aa, a; then aaaa + a.
        bpe.encode_piece(b"aaaaa", &mut out);
        assert_eq!(out, [260, 97]);
        let mut lens = Vec::new();
        bpe.token_lens(b"aaaaa", &mut lens);
        assert_eq!(lens, [4, 1]);
    }

    #[test]
    fn missing_byte_is_rejected() {
        let ranks: FxHashMap<Vec<u8>, u32> = (0..255u8).map(|b| (vec![b], b as u32)).collect();
        assert!(Bpe::new(ranks).is_none());
    }

    #[test]
    fn heap_and_scan_agree() {
        let bpe = toy();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..5_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = 2 + (state % 40) as usize;
            let piece: Vec<u8> = (0..len)
                .map(|i| b"abcdx"[((state >> (i % 60)) % 5) as usize])
                .collect();
            let (a, b) = both(&bpe, &piece);
            assert_eq!(a, b, "piece {:?}", String::from_utf8_lossy(&piece));
        }
    }
}
