//! A small backtracking matcher for the regular expressions the reference
//! code uses, with Python `re` semantics on `str` (code points): Unicode
//! `\s`, `\w`, `\d`, `\b`; `$` also matching before a final newline; `.`
//! excluding `\n` unless DOTALL; leftmost match with greedy/lazy
//! backtracking; `(?:...)`, `(?=...)`, alternation, classes.
//!
//! Written instead of using the `regex` crate because that crate has no
//! backtracking semantics or lookahead, and several reference patterns
//! (`(.+?)` followed by optional groups, `(?=[^,]+:)`) depend on both. The
//! patterns are the reference's own, copied literally into the converters.

use crate::chars::{is_decimal, is_space, is_word};

#[derive(Debug, Clone)]
enum ClassItem {
    Char(char),
    Range(char, char),
    Space(bool),
    Word(bool),
    Digit(bool),
}

#[derive(Debug, Clone)]
enum Node {
    Char(char),
    Any,
    Class(Vec<ClassItem>, bool),
    Start,
    End,
    WordBoundary,
    Group(Box<Node>, Option<usize>),
    Look(Box<Node>, bool),
    Alt(Vec<Vec<Node>>),
    Repeat(Box<Node>, usize, usize, bool),
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub struct Regex {
    root: Node,
    groups: usize,
    dotall: bool,
}

/// Group spans (in chars) of one match; index 0 is the whole match.
#[derive(Debug, Clone)]
pub struct Captures {
    spans: Vec<Option<(usize, usize)>>,
}

impl Captures {
    pub fn span(&self, i: usize) -> Option<(usize, usize)> {
        self.spans.get(i).copied().flatten()
    }

    pub fn start(&self) -> usize {
        self.spans[0].map_or(0, |s| s.0)
    }

    pub fn end(&self) -> usize {
        self.spans[0].map_or(0, |s| s.1)
    }

    /// The text of group `i`, `None` when it did not participate.
    pub fn group(&self, text: &[char], i: usize) -> Option<String> {
        self.span(i).map(|(a, b)| text[a..b].iter().collect())
    }
}

struct Compiler<'a> {
    p: &'a [char],
    i: usize,
    groups: usize,
}

impl Compiler<'_> {
    fn alt(&mut self) -> Node {
        let mut branches = vec![self.seq()];
        while self.p.get(self.i) == Some(&'|') {
            self.i += 1;
            branches.push(self.seq());
        }
        if branches.len() == 1 {
            Node::Group(Box::new(Node::Alt(branches)), None)
        } else {
            Node::Alt(branches)
        }
    }

    fn seq(&mut self) -> Vec<Node> {
        let mut out = Vec::new();
        while let Some(&c) = self.p.get(self.i) {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom();
            let atom = self.quantifier(atom);
            out.push(atom);
        }
        out
    }

    fn quantifier(&mut self, atom: Node) -> Node {
        let (min, max) = match self.p.get(self.i) {
            Some('*') => (0, usize::MAX),
            Some('+') => (1, usize::MAX),
            Some('?') => (0, 1),
            // `braces` consumes the whole `{m,n}`.
            Some('{') => match self.braces() {
                Some(r) => {
                    self.i -= 1;
                    r
                }
                None => return atom,
            },
            _ => return atom,
        };
        // Past the quantifier's (last) character.
        self.i += 1;
        let lazy = self.p.get(self.i) == Some(&'?');
        if lazy {
            self.i += 1;
        }
        Node::Repeat(Box::new(atom), min, max, !lazy)
    }

    /// `{m}`, `{m,}`, `{m,n}`; leaves `{` literal otherwise.
    fn braces(&mut self) -> Option<(usize, usize)> {
        let rest: String = self.p[self.i..].iter().collect();
        let close = rest.find('}')?;
        let inner = &rest[1..close];
        let (a, b) = match inner.split_once(',') {
            Some((a, b)) => (a, Some(b)),
            None => (inner, None),
        };
        let min: usize = if a.is_empty() { 0 } else { a.parse().ok()? };
        let max = match b {
            None => min,
            Some("") => usize::MAX,
            Some(b) => b.parse().ok()?,
        };
        self.i += rest[..=close].chars().count();
        Some((min, max))
    }

    fn escape(&mut self, in_class: bool) -> ClassItem {
        let c = self.p[self.i];
        self.i += 1;
        match c {
            's' => ClassItem::Space(true),
            'S' => ClassItem::Space(false),
            'w' => ClassItem::Word(true),
            'W' => ClassItem::Word(false),
            'd' => ClassItem::Digit(true),
            'D' => ClassItem::Digit(false),
            'n' => ClassItem::Char('\n'),
            't' => ClassItem::Char('\t'),
            'r' => ClassItem::Char('\r'),
            'b' if in_class => ClassItem::Char('\u{8}'),
            other => ClassItem::Char(other),
        }
    }

    fn atom(&mut self) -> Node {
        let c = self.p[self.i];
        self.i += 1;
        match c {
            '.' => Node::Any,
            '^' => Node::Start,
            '$' => Node::End,
            '(' => {
                let mut capture = true;
                let mut look = None;
                if self.p.get(self.i) == Some(&'?') {
                    capture = false;
                    match self.p.get(self.i + 1) {
                        Some(':') => {}
                        Some('=') => look = Some(true),
                        Some('!') => look = Some(false),
                        other => panic!("unsupported group {other:?}"),
                    }
                    self.i += 2;
                }
                let index = if capture {
                    self.groups += 1;
                    Some(self.groups)
                } else {
                    None
                };
                let inner = self.alt();
                assert_eq!(self.p.get(self.i), Some(&')'), "unbalanced pattern");
                self.i += 1;
                match look {
                    Some(positive) => Node::Look(Box::new(inner), positive),
                    None => Node::Group(Box::new(inner), index),
                }
            }
            '[' => {
                let negated = self.p.get(self.i) == Some(&'^');
                if negated {
                    self.i += 1;
                }
                let mut items = Vec::new();
                let mut first = true;
                while self.p[self.i] != ']' || first {
                    first = false;
                    let item = if self.p[self.i] == '\\' {
                        self.i += 1;
                        self.escape(true)
                    } else {
                        self.i += 1;
                        ClassItem::Char(self.p[self.i - 1])
                    };
                    if let ClassItem::Char(lo) = item {
                        if self.p[self.i] == '-' && self.p[self.i + 1] != ']' {
                            self.i += 1;
                            let hi = if self.p[self.i] == '\\' {
                                self.i += 1;
                                match self.escape(true) {
                                    ClassItem::Char(h) => h,
                                    _ => panic!("bad range"),
                                }
                            } else {
                                self.i += 1;
                                self.p[self.i - 1]
                            };
                            items.push(ClassItem::Range(lo, hi));
                            continue;
                        }
                    }
                    items.push(item);
                }
                self.i += 1;
                Node::Class(items, negated)
            }
            '\\' => {
                if self.p[self.i] == 'b' {
                    self.i += 1;
                    return Node::WordBoundary;
                }
                match self.escape(false) {
                    ClassItem::Char(c) => Node::Char(c),
                    item => Node::Class(vec![item], false),
                }
            }
            c => Node::Char(c),
        }
    }
}

fn class_item_matches(item: &ClassItem, c: char) -> bool {
    match *item {
        ClassItem::Char(x) => x == c,
        ClassItem::Range(a, b) => (a..=b).contains(&c),
        ClassItem::Space(yes) => is_space(c) == yes,
        ClassItem::Word(yes) => is_word(c) == yes,
        ClassItem::Digit(yes) => is_decimal(c) == yes,
    }
}

type Spans = Vec<Option<(usize, usize)>>;
type Cont<'k> = &'k mut dyn FnMut(usize, &mut Spans) -> bool;

impl Regex {
    /// Compiles a pattern; panics on syntax this matcher does not support
    /// (patterns are constants, each exercised by tests).
    pub fn new(pattern: &str, dotall: bool) -> Regex {
        let p: Vec<char> = pattern.chars().collect();
        let mut c = Compiler {
            p: &p,
            i: 0,
            groups: 0,
        };
        let root = c.alt();
        assert_eq!(c.i, p.len(), "unbalanced pattern {pattern}");
        Regex {
            root,
            groups: c.groups,
            dotall,
        }
    }

    /// Number of capturing groups.
    pub fn groups(&self) -> usize {
        self.groups
    }

    fn single(&self, node: &Node, t: &[char], pos: usize) -> Option<bool> {
        let c = t.get(pos).copied();
        Some(match node {
            Node::Char(x) => c == Some(*x),
            Node::Any => matches!(c, Some(ch) if self.dotall || ch != '\n'),
            Node::Class(items, neg) => match c {
                Some(ch) => items.iter().any(|i| class_item_matches(i, ch)) != *neg,
                None => false,
            },
            _ => return None,
        })
    }

    fn m(&self, node: &Node, t: &[char], pos: usize, st: &mut Spans, k: Cont) -> bool {
        if let Some(ok) = self.single(node, t, pos) {
            return ok && k(pos + 1, st);
        }
        match node {
            Node::Start => pos == 0 && k(pos, st),
            Node::End => (pos == t.len() || (pos + 1 == t.len() && t[pos] == '\n')) && k(pos, st),
            Node::WordBoundary => {
                let before = pos > 0 && is_word(t[pos - 1]);
                let after = pos < t.len() && is_word(t[pos]);
                before != after && k(pos, st)
            }
            Node::Group(inner, idx) => match idx {
                None => self.m(inner, t, pos, st, k),
                Some(i) => {
                    let i = *i;
                    self.m(inner, t, pos, st, &mut |p, st: &mut Spans| {
                        let old = st[i];
                        st[i] = Some((pos, p));
                        if k(p, st) {
                            return true;
                        }
                        st[i] = old;
                        false
                    })
                }
            },
            Node::Look(inner, positive) => {
                let mut scratch = st.clone();
                let found = self.m(inner, t, pos, &mut scratch, &mut |_, _| true);
                found == *positive && k(pos, st)
            }
            Node::Alt(branches) => branches.iter().any(|b| self.seq(b, t, pos, st, k)),
            Node::Repeat(inner, min, max, greedy) => {
                if self.single(inner, t, pos).is_some() {
                    // Single-character atom: count the run iteratively.
                    let mut n = 0;
                    while n < *max && self.single(inner, t, pos + n) == Some(true) {
                        n += 1;
                    }
                    if n < *min {
                        return false;
                    }
                    if *greedy {
                        (*min..=n).rev().any(|c| k(pos + c, st))
                    } else {
                        (*min..=n).any(|c| k(pos + c, st))
                    }
                } else {
                    self.rep(inner, *min, *max, *greedy, 0, t, pos, st, k)
                }
            }
            Node::Char(_) | Node::Any | Node::Class(..) => unreachable!(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn rep(
        &self,
        node: &Node,
        min: usize,
        max: usize,
        greedy: bool,
        count: usize,
        t: &[char],
        pos: usize,
        st: &mut Spans,
        k: Cont,
    ) -> bool {
        if !greedy && count >= min && k(pos, st) {
            return true;
        }
        if count < max {
            let more = self.m(node, t, pos, st, &mut |p, st: &mut Spans| {
                p != pos && self.rep(node, min, max, greedy, count + 1, t, p, st, k)
            });
            if more {
                return true;
            }
        }
        greedy && count >= min && k(pos, st)
    }

    fn seq(&self, items: &[Node], t: &[char], pos: usize, st: &mut Spans, k: Cont) -> bool {
        match items.split_first() {
            None => k(pos, st),
            Some((first, rest)) => self.m(first, t, pos, st, &mut |p, st: &mut Spans| {
                self.seq(rest, t, p, st, k)
            }),
        }
    }

    fn run(&self, t: &[char], start: usize, full: bool) -> Option<Captures> {
        let mut st: Spans = vec![None; self.groups + 1];
        let mut result = None;
        self.m(&self.root, t, start, &mut st, &mut |p, st: &mut Spans| {
            if full && p != t.len() {
                return false;
            }
            let mut spans = st.clone();
            spans[0] = Some((start, p));
            result = Some(Captures { spans });
            true
        });
        result
    }

    /// `re.match`: anchored at `start`.
    pub fn match_at(&self, t: &[char], start: usize) -> Option<Captures> {
        self.run(t, start, false)
    }

    /// `re.fullmatch`.
    pub fn fullmatch(&self, t: &[char]) -> Option<Captures> {
        self.run(t, 0, true)
    }

    /// `re.search` from `start`.
    pub fn search(&self, t: &[char], start: usize) -> Option<Captures> {
        (start..=t.len()).find_map(|s| self.run(t, s, false))
    }

    /// `re.finditer`: non-overlapping matches, left to right.
    pub fn finditer(&self, t: &[char]) -> Vec<Captures> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos <= t.len() {
            match self.search(t, pos) {
                Some(c) => {
                    pos = if c.end() == c.start() {
                        c.end() + 1
                    } else {
                        c.end()
                    };
                    out.push(c);
                }
                None => break,
            }
        }
        out
    }

    /// `re.sub(pattern, repl, s)` with a literal replacement.
    pub fn sub(&self, s: &str, repl: &str) -> String {
        let t: Vec<char> = s.chars().collect();
        let mut out = String::new();
        let mut last = 0;
        for c in self.finditer(&t) {
            out.extend(&t[last..c.start()]);
            out.push_str(repl);
            last = c.end();
        }
        out.extend(&t[last..]);
        out
    }
}

/// Code points of a string, for matching.
pub fn chars(s: &str) -> Vec<char> {
    s.chars().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(re: &Regex, s: &str, i: usize) -> Option<String> {
        let t = chars(s);
        re.search(&t, 0).and_then(|c| c.group(&t, i))
    }

    #[test]
    fn anchors_and_final_newline() {
        let re = Regex::new(r"^-?\d+$", false);
        assert!(re.match_at(&chars("-12"), 0).is_some());
        assert!(re.match_at(&chars("12\n"), 0).is_some());
        assert!(re.match_at(&chars("12\n\n"), 0).is_none());
        assert!(re.match_at(&chars("\u{661}2"), 0).is_some());
        assert!(Regex::new(r"^\'.$\'", false)
            .match_at(&chars("'a'"), 0)
            .is_none());
        assert_eq!(Regex::new(r"[fF]$", false).sub("3.5f", ""), "3.5");
    }

    #[test]
    fn lazy_and_backtracking() {
        let re = Regex::new(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", true);
        assert_eq!(
            g(&re, "new ArrayList<>() {{ add(1); add(2); }}", 1).unwrap(),
            "add(1); add(2);"
        );
        assert_eq!(g(&re, "new ArrayList<>() {{ }}", 1).unwrap(), " ");
        let hm = Regex::new(
            r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}",
            true,
        );
        assert_eq!(
            g(
                &hm,
                r#"new HashMap<String, String>() {{ put("k", "v"); }}"#,
                1
            )
            .unwrap(),
            r#"put("k", "v");"#
        );
        assert_eq!(g(&hm, "new HashMap<>() {}", 1).unwrap(), "");
        let pairs = Regex::new(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", false);
        let t = chars("'a': 1, 'b': [x, y], c: z");
        let found: Vec<(String, String)> = pairs
            .finditer(&t)
            .iter()
            .map(|c| (c.group(&t, 1).unwrap(), c.group(&t, 2).unwrap()))
            .collect();
        assert_eq!(
            found,
            vec![
                ("'a'".into(), "1".into()),
                ("'b'".into(), "[x, y]".into()),
                ("c".into(), "z".into())
            ]
        );
        let alt = Regex::new(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)", false);
        let t = chars("new Array(1, 2)");
        let c = alt.match_at(&t, 0).unwrap();
        assert!(c.group(&t, 1).is_none());
        assert_eq!(c.group(&t, 2).unwrap(), "1, 2");
    }

    /// `{m}`, `{m,}` and `{m,n}` consume exactly themselves (what follows
    /// is still pattern), greedy unless `?` follows; a `{` that is no
    /// quantifier is literal.
    #[test]
    fn counted_repetition() {
        let re = Regex::new(r"\b(I\d{3})\b", false);
        let t = chars("I12 I1234 I123.");
        let m = re.search(&t, 0).unwrap();
        assert_eq!(m.group(&t, 1).as_deref(), Some("I123"));
        let re = Regex::new(r"a{2,}?(a{1,2})x{,1}$", false);
        let t = chars("aaaaax");
        assert_eq!(
            re.fullmatch(&t).unwrap().group(&t, 1).as_deref(),
            Some("aa")
        );
        let re = Regex::new(r"a{x}", false);
        assert!(re.fullmatch(&chars("a{x}")).is_some());
    }

    #[test]
    fn function_start_pattern() {
        let re = Regex::new(r"\b([A-Za-z_]\w*)\s*\(", false);
        let t = chars("spotify.play (x) éfoo(1) _g(2)");
        let names: Vec<String> = re
            .finditer(&t)
            .iter()
            .map(|c| c.group(&t, 1).unwrap())
            .collect();
        assert_eq!(names, vec!["play", "_g"]);
        let sig = Regex::new(r"[A-Za-z_]\w*(?:\s*:\s*\w+)?", false);
        assert!(sig.fullmatch(&chars("x : int")).is_some());
        assert!(sig.fullmatch(&chars("x = 1")).is_none());
    }
}
