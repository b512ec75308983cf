//! `sort`, whose random order (`-R`) comes from the call's seed.
//!
//! bashkit's `sort -R` hashes lines with std's `RandomState`, whose keys a
//! WebAssembly instance draws once and steps for every hash map any of its
//! sessions makes, so its order would depend on what ran in the instance
//! before. This `sort` orders `-R` itself, by a hash keyed from the call's
//! seeded generator ([`crate::rng`]), and leaves every other sort to
//! bashkit's own ([`crate::delegate`]).
//!
//! The random order is GNU's: lines with the same key (after `-b`, `-d`,
//! `-f`, `-i`) sort together, in a random order of keys; `-r`, `-u`, `-s`,
//! `-z`, `-o FILE` and `--random-source=FILE` (the file's bytes are the
//! seed, so the same file gives the same order) apply. `-R` with `-n`,
//! `-g`, `-h` or `-M` is refused as GNU refuses it. `-R` inside a key
//! (`-k2,2R`) or with `-c`, `-C`, `-m`, `--files0-from` or `--debug` is not
//! available: the call gets `sort: random order with keys, checking or
//! merging is not available in this sandbox` (exit 2) and is tagged
//! `stubbed`.

use crate::delegate::{bashkits_own, bashkits_own_with, is_proc_sub};
use crate::output::{deliver, resolve};
use crate::rng::{keyed_hash, seed_of, SplitMix};
use crate::shell::failure;
use bashkit::{BuiltinContext, ExecResult, ExecutionLimits};
use std::sync::{Arc, Mutex};

/// What a stubbed random sort answers.
pub const STUB_MESSAGE: &str =
    "sort: random order with keys, checking or merging is not available in this sandbox\n";

/// `sort` for one call.
pub struct SeededSort {
    rng: Mutex<SplitMix>,
    limits: ExecutionLimits,
    stubbed: Arc<Mutex<Vec<String>>>,
}

impl SeededSort {
    /// The `sort` of the call seeded with `seed`, under the call's `limits`.
    pub fn new(seed: u64, limits: ExecutionLimits, stubbed: Arc<Mutex<Vec<String>>>) -> Self {
        Self {
            rng: Mutex::new(SplitMix::new(seed ^ 0x736f_7274_2d52_0000)),
            limits,
            stubbed,
        }
    }
}

/// What the arguments ask for, as far as a random order goes.
#[derive(Debug, Default, PartialEq)]
struct Request {
    random: bool,
    /// A key (`-k`), or checking, merging, `--files0-from`, `--debug`.
    beyond_random: bool,
    /// `--help` or `--version`: bashkit's own answers.
    help: bool,
    /// The first option GNU's `sort` does not have, as GNU names it.
    unknown: Option<String>,
    blanks: bool,
    dictionary: bool,
    fold: bool,
    general: bool,
    human: bool,
    nonprinting: bool,
    month: bool,
    numeric: bool,
    reverse: bool,
    version: bool,
    stable: bool,
    unique: bool,
    zero: bool,
    output: Option<String>,
    source: Option<String>,
    files: Vec<String>,
    /// The arguments less the operands (and a `--`) and less a merge
    /// (`-m`): what sorts the inputs given as one stream (merging sorted
    /// inputs is sorting them together).
    stream_options: Vec<String>,
}

impl Request {
    fn flag(&mut self, c: char) {
        match c {
            'b' => self.blanks = true,
            'd' => self.dictionary = true,
            'f' => self.fold = true,
            'g' => self.general = true,
            'h' => self.human = true,
            'i' => self.nonprinting = true,
            'M' => self.month = true,
            'n' => self.numeric = true,
            'R' => self.random = true,
            'r' => self.reverse = true,
            'V' => self.version = true,
            's' => self.stable = true,
            'u' => self.unique = true,
            'z' => self.zero = true,
            'c' | 'C' | 'm' => self.beyond_random = true,
            'y' => {}
            _ => {
                self.unknown
                    .get_or_insert_with(|| format!("invalid option -- '{c}'"));
            }
        }
    }

    /// A key's modifiers (the letters of `2,3Rn`): a random key.
    fn key(&mut self, spec: &str) {
        self.beyond_random = true;
        self.random |= spec.contains('R');
    }

    /// GNU's refusal of `-R` with another ordering (`options '-nR' are
    /// incompatible`), its letters in GNU's order (a global `-b` or `-r`
    /// is not among them).
    fn incompatible(&self) -> Option<String> {
        let orderings = [self.numeric, self.general, self.human, self.month]
            .iter()
            .filter(|&&x| x)
            .count();
        if orderings == 0 {
            return None;
        }
        let letters: String = [
            (self.dictionary, 'd'),
            (self.fold, 'f'),
            (self.general, 'g'),
            (self.human, 'h'),
            (self.nonprinting, 'i'),
            (self.month, 'M'),
            (self.numeric, 'n'),
            (true, 'R'),
            (self.version, 'V'),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, c)| *c)
        .collect();
        Some(format!("sort: options '-{letters}' are incompatible\n"))
    }
}

/// Reads GNU `sort`'s command line.
fn parse(args: &[String]) -> Request {
    let mut r = Request::default();
    let mut it = args.iter();
    // Where the operands (and a `--`) are, and the options' own values.
    let mut operands = Vec::new();
    let mut values = Vec::new();
    while let Some(arg) = it.next() {
        let at = args.len() - it.len() - 1;
        if arg == "--" {
            operands.extend(at..args.len());
            r.files.extend(it.by_ref().cloned());
        } else if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let mut value = || {
                inline.clone().or_else(|| {
                    values.push(args.len() - it.len());
                    it.next().cloned()
                })
            };
            match name {
                "random-sort" => r.random = true,
                "sort" => match value().as_deref() {
                    Some("random") => r.random = true,
                    Some("numeric") => r.numeric = true,
                    Some("general-numeric") => r.general = true,
                    Some("human-numeric") => r.human = true,
                    Some("month") => r.month = true,
                    Some("version") => r.version = true,
                    other => {
                        r.unknown.get_or_insert_with(|| {
                            format!(
                                "invalid argument '{}' for '--sort'\nValid arguments are:\n  \
                                 - 'general-numeric'\n  - 'human-numeric'\n  - 'month'\n  \
                                 - 'numeric'\n  - 'random'\n  - 'version'",
                                other.unwrap_or("")
                            )
                        });
                    }
                },
                "random-source" => r.source = value(),
                "output" => r.output = value(),
                "key" => {
                    let spec = value().unwrap_or_default();
                    r.key(&spec);
                }
                "field-separator"
                | "buffer-size"
                | "temporary-directory"
                | "parallel"
                | "batch-size"
                | "compress-program" => {
                    value();
                }
                "files0-from" | "debug" | "merge" => r.beyond_random = true,
                "check" => r.beyond_random = true,
                "ignore-leading-blanks" => r.blanks = true,
                "dictionary-order" => r.dictionary = true,
                "ignore-case" => r.fold = true,
                "general-numeric-sort" => r.general = true,
                "human-numeric-sort" => r.human = true,
                "ignore-nonprinting" => r.nonprinting = true,
                "month-sort" => r.month = true,
                "numeric-sort" => r.numeric = true,
                "reverse" => r.reverse = true,
                "version-sort" => r.version = true,
                "stable" => r.stable = true,
                "unique" => r.unique = true,
                "zero-terminated" => r.zero = true,
                "help" | "version" => r.help = true,
                _ => {
                    r.unknown
                        .get_or_insert_with(|| format!("unrecognized option '{arg}'"));
                }
            }
        } else if arg.len() > 1 && arg.starts_with('-') {
            let cluster = &arg[1..];
            for (i, c) in cluster.char_indices() {
                if matches!(c, 'k' | 'o' | 't' | 'S' | 'T') {
                    let rest = &cluster[i + 1..];
                    let value = if rest.is_empty() {
                        values.push(args.len() - it.len());
                        it.next().cloned().unwrap_or_default()
                    } else {
                        rest.to_owned()
                    };
                    match c {
                        'k' => r.key(&value),
                        'o' => r.output = Some(value),
                        _ => {}
                    }
                    break;
                }
                r.flag(c);
            }
        } else {
            operands.push(at);
            r.files.push(arg.clone());
        }
    }
    r.stream_options = (0..args.len())
        .filter(|i| !operands.contains(i))
        .filter_map(|i| {
            let arg = &args[i];
            if values.contains(&i) || !arg.starts_with('-') {
                Some(arg.clone())
            } else if arg.starts_with("--") {
                (arg != "--merge").then(|| arg.clone())
            } else {
                // The flags before an option that takes a value, less `m`.
                let cut = arg[1..]
                    .find(['k', 'o', 't', 'S', 'T'])
                    .map_or(arg.len(), |at| at + 1);
                let flags: String = arg[1..cut].chars().filter(|&c| c != 'm').collect();
                let kept = format!("-{flags}{}", &arg[cut..]);
                (kept != "-").then_some(kept)
            }
        })
        .collect();
    r
}

/// A line's key after `-b`, `-d`, `-i` and `-f`.
fn key_of(line: &[u8], r: &Request) -> Vec<u8> {
    let start = if r.blanks {
        line.iter()
            .position(|&c| c != b' ' && c != b'\t')
            .unwrap_or(line.len())
    } else {
        0
    };
    line[start..]
        .iter()
        .filter(|&&c| {
            (!r.dictionary || c.is_ascii_alphanumeric() || c == b' ' || c == b'\t')
                && (!r.nonprinting || (0x20..0x7f).contains(&c))
        })
        .map(|&c| if r.fold { c.to_ascii_uppercase() } else { c })
        .collect()
}

/// `lines` in the random order of `key`, as `r` asks.
fn random_order<'a>(lines: Vec<&'a [u8]>, r: &Request, key: u64) -> Vec<&'a [u8]> {
    let mut keyed: Vec<(u64, Vec<u8>, &[u8])> = lines
        .into_iter()
        .map(|line| {
            let k = key_of(line, r);
            (keyed_hash(key, &k), k, line)
        })
        .collect();
    let last_resort = !(r.stable || r.unique);
    keyed.sort_by(|a, b| {
        let by_key = a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1));
        let d = if last_resort {
            by_key.then_with(|| a.2.cmp(b.2))
        } else {
            by_key
        };
        if r.reverse {
            d.reverse()
        } else {
            d
        }
    });
    if r.unique {
        keyed.dedup_by(|b, a| a.0 == b.0 && a.1 == b.1);
    }
    keyed.into_iter().map(|(_, _, line)| line).collect()
}

/// The records of `data`, split at `sep` (a last one without it counts).
fn records(data: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    let body = data.strip_suffix(&[sep]).unwrap_or(data);
    body.split(move |&c| c == sep)
        .take(if data.is_empty() { 0 } else { usize::MAX })
}

impl SeededSort {
    /// bashkit's own sort of inputs among which the calling shell's process
    /// substitutions are: sort reads its inputs as one stream of lines, so
    /// they go to it as its stdin, in order, each ending its last line.
    async fn sort_proc_subs(
        &self,
        ctx: &BuiltinContext<'_>,
        r: &Request,
    ) -> bashkit::Result<ExecResult> {
        let sep = if r.zero { b'\0' } else { b'\n' };
        let mut input = Vec::new();
        for file in &r.files {
            let bytes = if file == "-" {
                ctx.stdin.map(|s| s.as_bytes().to_vec()).unwrap_or_default()
            } else {
                match ctx.fs.read_file(&resolve(ctx.cwd, file)).await {
                    Ok(bytes) => bytes,
                    Err(_) => {
                        return Ok(failure(
                            &format!("sort: cannot read: {file}: No such file or directory\n"),
                            2,
                        ))
                    }
                }
            };
            input.extend_from_slice(&bytes);
            if !bytes.is_empty() && !bytes.ends_with(&[sep]) {
                input.push(sep);
            }
        }
        let args = &r.stream_options;
        bashkits_own_with("sort", ctx, &self.limits, args, Some(input.into())).await
    }
}

#[bashkit::async_trait]
impl bashkit::Builtin for SeededSort {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let r = parse(ctx.args);
        if !r.random || r.help {
            if r.files.iter().any(|f| is_proc_sub(f)) {
                return self.sort_proc_subs(&ctx, &r).await;
            }
            return bashkits_own("sort", &ctx, &self.limits).await;
        }
        if let Some(unknown) = &r.unknown {
            return Ok(failure(
                &format!("sort: {unknown}\nTry 'sort --help' for more information.\n"),
                2,
            ));
        }
        if let Some(refusal) = r.incompatible() {
            return Ok(failure(&refusal, 2));
        }
        if r.beyond_random {
            self.stubbed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push("sort -R".into());
            return Ok(failure(STUB_MESSAGE, 2));
        }
        let key = match &r.source {
            Some(source) => match ctx.fs.read_file(&resolve(ctx.cwd, source)).await {
                Ok(bytes) => seed_of(&[&bytes]),
                Err(_) => {
                    return Ok(failure(
                        &format!("sort: open failed: {source}: No such file or directory\n"),
                        2,
                    ))
                }
            },
            None => self
                .rng
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .next_u64(),
        };
        let files = if r.files.is_empty() {
            vec!["-".to_owned()]
        } else {
            r.files.clone()
        };
        let mut inputs = Vec::with_capacity(files.len());
        for file in &files {
            if file == "-" {
                inputs.push(ctx.stdin.map(|s| s.as_bytes().to_vec()).unwrap_or_default());
            } else {
                match ctx.fs.read_file(&resolve(ctx.cwd, file)).await {
                    Ok(bytes) => inputs.push(bytes),
                    // Its message, whatever the order would have been.
                    Err(_) => return bashkits_own("sort", &ctx, &self.limits).await,
                }
            }
        }
        let sep = if r.zero { b'\0' } else { b'\n' };
        let lines: Vec<&[u8]> = inputs.iter().flat_map(|i| records(i, sep)).collect();
        let mut out = Vec::new();
        for line in random_order(lines, &r, key) {
            out.extend_from_slice(line);
            out.push(sep);
        }
        Ok(deliver(&ctx, "sort", r.output.as_deref(), out, 2).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn random_is_found_wherever_gnu_reads_it() {
        assert!(parse(&args(&["-R"])).random);
        assert!(parse(&args(&["-uR", "f"])).random);
        assert!(parse(&args(&["--random-sort"])).random);
        assert!(parse(&args(&["--sort=random"])).random);
        assert!(parse(&args(&["--sort", "random"])).random);
        let keyed = parse(&args(&["-k2,2R"]));
        assert!(keyed.random && keyed.beyond_random);
        // An option's value is not a cluster of flags.
        assert!(!parse(&args(&["-t", "R"])).random);
        assert!(!parse(&args(&["-tR"])).random);
        assert!(!parse(&args(&["-o", "R", "f"])).random);
        assert!(!parse(&args(&["--", "-R"])).random);
        assert_eq!(
            parse(&args(&["-R", "-o", "out", "a", "-"])).files,
            ["a", "-"]
        );
        assert!(parse(&args(&["-R", "--help"])).help);
        assert_eq!(
            parse(&args(&["-Rx"])).unknown.as_deref(),
            Some("invalid option -- 'x'")
        );
        assert_eq!(
            parse(&args(&["-R", "--shuffle"])).unknown.as_deref(),
            Some("unrecognized option '--shuffle'")
        );
    }

    #[test]
    fn gnu_refuses_random_with_another_ordering() {
        let r = parse(&args(&["-nR"]));
        assert_eq!(
            r.incompatible().as_deref(),
            Some("sort: options '-nR' are incompatible\n")
        );
        let r = parse(&args(&["-R", "-r", "-f", "--month-sort"]));
        assert_eq!(
            r.incompatible().as_deref(),
            Some("sort: options '-fMR' are incompatible\n")
        );
        let r = parse(&args(&["-Rnbd"]));
        assert_eq!(
            r.incompatible().as_deref(),
            Some("sort: options '-dnR' are incompatible\n")
        );
        assert_eq!(parse(&args(&["-R", "-d", "-f", "-V"])).incompatible(), None);
    }

    #[test]
    fn equal_keys_sort_together_and_the_key_decides_the_order() {
        let lines: Vec<&[u8]> = vec![b"b", b"A", b"a", b"c", b"B", b"a"];
        let r = parse(&args(&["-R", "-f"]));
        let once = random_order(lines.clone(), &r, 1);
        assert_eq!(once, random_order(lines.clone(), &r, 1));
        // Each key's lines are adjacent, in byte order (the last resort).
        let pos = |l: &[u8]| once.iter().position(|x| *x == l).unwrap();
        assert_eq!(pos(b"a"), pos(b"A") + 1);
        assert_eq!(pos(b"b"), pos(b"B") + 1);
        let unique = random_order(lines.clone(), &parse(&args(&["-Ruf"])), 1);
        assert_eq!(unique.len(), 3);
        let reversed = random_order(lines.clone(), &parse(&args(&["-Rrf"])), 1);
        assert_eq!(reversed, once.iter().rev().copied().collect::<Vec<_>>());
        let orders: std::collections::BTreeSet<Vec<&[u8]>> = (0..20)
            .map(|k| random_order(lines.clone(), &r, k))
            .collect();
        assert!(orders.len() > 5, "{orders:?}");
    }

    #[test]
    fn records_split_like_gnu() {
        let split = |d: &'static [u8]| records(d, b'\n').collect::<Vec<_>>();
        assert_eq!(split(b"a\nb\n"), [b"a", b"b"]);
        assert_eq!(split(b"a\nb"), [b"a", b"b"]);
        assert_eq!(split(b"a\n\n"), [&b"a"[..], b""]);
        assert!(split(b"").is_empty());
    }
}
