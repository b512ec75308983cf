//! The prefix cache shared by all slots: a radix tree over the bytes of cached sequences
//! (prompt, then prompt plus answer), with a token capacity and least-recently-used eviction.
//!
//! - [`PrefixCache::lookup`] returns the length of the longest prefix of a text that the tree
//!   holds (a path from the root, possibly ending inside an edge), in O(text length).
//! - [`PrefixCache::insert`] adds a text; shared prefixes are stored once. Each edge carries the
//!   number of token pieces that end inside it (from the inserted text's piece boundaries), and
//!   the sum over all edges is what the capacity bounds.
//! - Every node on a looked-up or inserted path is stamped with a new tick. While the tree holds
//!   more tokens than the capacity, the leaf with the oldest stamp is evicted from its tail: cut
//!   short when that is enough, removed whole otherwise (its parent may become a leaf in turn).
//!   Freeing a sequence's tail first is what block-based engines do as well.

use std::collections::BTreeSet;

/// One edge of the tree, with the node it leads to.
#[derive(Debug, Default)]
struct Node {
    /// Bytes on the edge from the parent (may cut a UTF-8 char; only bytes are compared).
    edge: Vec<u8>,
    /// Token pieces attributed to this edge.
    tokens: u64,
    parent: usize,
    children: Vec<usize>,
    last_used: u64,
}

/// Shared prefix cache; see the module docs.
#[derive(Debug)]
pub(crate) struct PrefixCache {
    /// Arena; index 0 is the root (empty edge). Freed indices are reused.
    nodes: Vec<Node>,
    free: Vec<usize>,
    capacity: u64,
    tokens: u64,
    tick: u64,
    /// `(last_used, node)` of every leaf but the root: eviction order.
    leaves: BTreeSet<(u64, usize)>,
}

pub(crate) use agentload_tokenizer::common_prefix_len;

/// Number of pieces whose end offset (`ends`, ascending) lies in `(from, to]`.
fn pieces_ending_in(ends: &[u32], from: usize, to: usize) -> u64 {
    let upto = |x: usize| ends.partition_point(|&e| e as usize <= x);
    (upto(to) - upto(from)) as u64
}

impl PrefixCache {
    /// An empty cache holding at most `capacity` tokens.
    pub(crate) fn new(capacity: u64) -> Self {
        Self {
            nodes: vec![Node::default()],
            free: Vec::new(),
            capacity,
            tokens: 0,
            tick: 0,
            leaves: BTreeSet::new(),
        }
    }

    /// Tokens currently held.
    #[cfg(test)]
    pub(crate) fn tokens(&self) -> u64 {
        self.tokens
    }

    fn is_leaf(&self, node: usize) -> bool {
        node != 0 && self.nodes[node].children.is_empty()
    }

    /// Stamps `node` as used at `tick`, keeping the leaf index in step.
    fn touch(&mut self, node: usize, tick: u64) {
        if self.is_leaf(node) {
            self.leaves.remove(&(self.nodes[node].last_used, node));
            self.leaves.insert((tick, node));
        }
        self.nodes[node].last_used = tick;
    }

    fn child_starting_with(&self, node: usize, byte: u8) -> Option<usize> {
        self.nodes[node]
            .children
            .iter()
            .copied()
            .find(|&c| self.nodes[c].edge.first() == Some(&byte))
    }

    fn alloc(&mut self, node: Node) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.nodes[i] = node;
                i
            }
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        }
    }

    /// Length in bytes of the longest prefix of `text` the cache holds; marks it used.
    pub(crate) fn lookup(&mut self, text: &str) -> usize {
        let bytes = text.as_bytes();
        self.tick += 1;
        let tick = self.tick;
        let mut node = 0;
        let mut pos = 0;
        loop {
            self.touch(node, tick);
            let Some(child) = bytes
                .get(pos)
                .and_then(|&b| self.child_starting_with(node, b))
            else {
                return pos;
            };
            let edge_len = self.nodes[child].edge.len();
            let common = common_prefix_len(&self.nodes[child].edge, &bytes[pos..]);
            pos += common;
            if common < edge_len {
                self.touch(child, tick);
                return pos;
            }
            node = child;
        }
    }

    /// Adds `text`, whose token pieces end at the byte offsets `ends` (ascending, the last one
    /// `text.len()`), then evicts down to the capacity.
    pub(crate) fn insert(&mut self, text: &str, ends: &[u32]) {
        let bytes = text.as_bytes();
        self.tick += 1;
        let tick = self.tick;
        let mut node = 0;
        let mut pos = 0;
        loop {
            self.touch(node, tick);
            if pos == bytes.len() {
                break;
            }
            let Some(child) = self.child_starting_with(node, bytes[pos]) else {
                self.add_leaf(
                    node,
                    &bytes[pos..],
                    pieces_ending_in(ends, pos, bytes.len()),
                );
                break;
            };
            let edge_len = self.nodes[child].edge.len();
            let common = common_prefix_len(&self.nodes[child].edge, &bytes[pos..]);
            if common < edge_len {
                // Split the edge: a new inner node takes the common part.
                let head_tokens =
                    pieces_ending_in(ends, pos, pos + common).min(self.nodes[child].tokens);
                let tail = self.nodes[child].edge.split_off(common);
                let head = std::mem::replace(&mut self.nodes[child].edge, tail);
                self.nodes[child].tokens -= head_tokens;
                let mid = self.alloc(Node {
                    edge: head,
                    tokens: head_tokens,
                    parent: node,
                    children: vec![child],
                    last_used: tick,
                });
                self.nodes[child].parent = mid;
                for c in &mut self.nodes[node].children {
                    if *c == child {
                        *c = mid;
                    }
                }
                pos += common;
                node = mid;
                continue;
            }
            pos += common;
            node = child;
        }
        self.evict();
    }

    fn add_leaf(&mut self, parent: usize, edge: &[u8], tokens: u64) {
        let was_leaf = self.is_leaf(parent);
        let leaf = self.alloc(Node {
            edge: edge.to_vec(),
            tokens,
            parent,
            children: Vec::new(),
            last_used: self.tick,
        });
        if was_leaf {
            self.leaves.remove(&(self.nodes[parent].last_used, parent));
        }
        self.nodes[parent].children.push(leaf);
        self.leaves.insert((self.tick, leaf));
        self.tokens += tokens;
    }

    /// Evicts least recently used tails until the capacity holds.
    fn evict(&mut self) {
        while self.tokens > self.capacity {
            let Some(&(stamp, leaf)) = self.leaves.first() else {
                break;
            };
            let over = self.tokens - self.capacity;
            let node = &mut self.nodes[leaf];
            if node.tokens > over {
                // Cut the tail: keep the share of bytes matching the tokens kept.
                let keep = node.tokens - over;
                let keep_bytes =
                    (node.edge.len() as u128 * u128::from(keep) / u128::from(node.tokens)) as usize;
                node.edge.truncate(keep_bytes.max(1));
                node.tokens = keep;
                self.tokens -= over;
                break;
            }
            self.tokens -= node.tokens;
            let parent = node.parent;
            self.leaves.remove(&(stamp, leaf));
            self.nodes[leaf] = Node::default();
            self.free.push(leaf);
            self.nodes[parent].children.retain(|&c| c != leaf);
            if self.is_leaf(parent) {
                self.leaves.insert((self.nodes[parent].last_used, parent));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{ApproxTokenCounter, TokenCounter};

    fn ends(text: &str) -> Vec<u32> {
        let mut end = 0;
        ApproxTokenCounter
            .split(text)
            .iter()
            .map(|p| {
                end += p.len() as u32;
                end
            })
            .collect()
    }

    fn insert(cache: &mut PrefixCache, text: &str) {
        cache.insert(text, &ends(text));
    }

    #[test]
    fn common_prefix() {
        assert_eq!(common_prefix_len(b"", b"abc"), 0);
        let a = "x".repeat(40) + "abc";
        let b = "x".repeat(40) + "abd";
        assert_eq!(common_prefix_len(a.as_bytes(), b.as_bytes()), 42);
        assert_eq!(common_prefix_len(a.as_bytes(), a.as_bytes()), 43);
    }

    #[test]
    fn longest_prefix_over_all_entries_and_shared_storage() {
        let mut cache = PrefixCache::new(1_000_000);
        let system = "<|system|>\nYou are a helpful coding agent.<|end|>\n";
        let a = format!("{system}<|user|>\nfix the bug in parser.rs<|end|>\n");
        let b = format!("{system}<|user|>\nwrite tests for lexer.rs<|end|>\n");
        insert(&mut cache, &a);
        let after_a = cache.tokens();
        assert_eq!(after_a, ends(&a).len() as u64);
        insert(&mut cache, &b);
        // The shared system prompt is stored once: b adds only about its own tail.
        let b_tail = &b[common_prefix_len(a.as_bytes(), b.as_bytes())..];
        assert!(cache.tokens() <= after_a + ends(b_tail).len() as u64 + 1);
        assert_eq!(cache.lookup(&a), a.len());
        assert_eq!(cache.lookup(&b), b.len());
        let c = format!("{system}<|user|>\nfix the typo");
        assert_eq!(
            cache.lookup(&c),
            common_prefix_len(a.as_bytes(), c.as_bytes())
        );
        assert_eq!(cache.lookup("unrelated"), 0);
        // Extending a cached text adds only the extension.
        let a2 = format!("{a}<|assistant|>\nDone.");
        let before = cache.tokens();
        insert(&mut cache, &a2);
        assert!(cache.tokens() > before && cache.tokens() < before + 10);
        assert_eq!(cache.lookup(&a2), a2.len());
    }

    #[test]
    fn least_recently_used_tails_are_evicted() {
        let texts: Vec<String> = (0..3)
            .map(|i| format!("<|user|>\nconversation {i}: {}", "lorem ipsum ".repeat(20)))
            .collect();
        let per_text = ends(&texts[0]).len() as u64;
        let mut cache = PrefixCache::new(2 * per_text + 5);
        insert(&mut cache, &texts[0]);
        insert(&mut cache, &texts[1]);
        assert_eq!(cache.lookup(&texts[0]), texts[0].len());
        // texts[1] is now the least recently used: inserting texts[2] evicts it.
        insert(&mut cache, &texts[2]);
        assert!(cache.tokens() <= 2 * per_text + 5);
        assert_eq!(cache.lookup(&texts[0]), texts[0].len());
        assert_eq!(cache.lookup(&texts[2]), texts[2].len());
        let kept = cache.lookup(&texts[1]);
        assert!(
            kept < texts[1].len() / 2,
            "texts[1] evicted: {kept} bytes kept"
        );
        // A tail cut keeps the head of the sequence.
        let mut small = PrefixCache::new(per_text / 2);
        insert(&mut small, &texts[0]);
        assert_eq!(small.tokens(), per_text / 2);
        let kept = small.lookup(&texts[0]);
        assert!(kept > 0 && kept < texts[0].len());
        // Zero capacity holds nothing.
        let mut none = PrefixCache::new(0);
        insert(&mut none, &texts[0]);
        assert_eq!(none.tokens(), 0);
        assert_eq!(none.lookup(&texts[0]), 0);
    }

    #[test]
    fn freed_nodes_are_reused() {
        let mut cache = PrefixCache::new(50);
        for i in 0..200 {
            insert(&mut cache, &format!("sequence number {i} with some text"));
        }
        assert!(cache.tokens() <= 50);
        assert!(cache.nodes.len() < 40, "{} nodes", cache.nodes.len());
    }
}
