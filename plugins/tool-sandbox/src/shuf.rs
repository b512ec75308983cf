//! `shuf`, drawn from the call's seed.
//!
//! bashkit's `shuf` seeds itself from the wall clock and a stack address:
//! the same permutation for every call in the sandbox (whose clock is
//! frozen), and one that moves with the code path. This one draws from the
//! call's seeded generator ([`crate::rng`]), a new draw for each `shuf` of
//! the call, as separate processes would. GNU's surface: `-e`, `-i LO-HI`,
//! `-n COUNT` (the smallest of several), `-o FILE`, `-r`, `-z` and
//! `--random-source=FILE` (the file's bytes are the seed, so the same file
//! gives the same order), with GNU's messages. `-r` without `-n` repeats
//! until the call's output budget is spent. `--help` and `--version` are
//! bashkit's.

use crate::delegate::bashkits_own;
use crate::output::{deliver, resolve};
use crate::rng::{seed_of, SplitMix};
use crate::shell::failure;
use bashkit::{BuiltinContext, ExecResult, ExecutionLimits};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// `shuf` for one call.
pub struct SeededShuf {
    rng: Mutex<SplitMix>,
    limits: ExecutionLimits,
}

impl SeededShuf {
    /// The `shuf` of the call seeded with `seed`, under the call's `limits`.
    pub fn new(seed: u64, limits: ExecutionLimits) -> Self {
        Self {
            rng: Mutex::new(SplitMix::new(seed ^ 0x7368_7566_0000_0000)),
            limits,
        }
    }
}

/// What the arguments ask for.
#[derive(Debug, Default, PartialEq)]
struct Options {
    echo: bool,
    range: Option<String>,
    count: Option<u64>,
    output: Option<String>,
    source: Option<String>,
    repeat: bool,
    zero: bool,
    help: bool,
    operands: Vec<String>,
}

/// Reads GNU `shuf`'s command line; an error is GNU's message.
fn parse(args: &[String]) -> Result<Options, String> {
    let usage = |what: String| format!("shuf: {what}\nTry 'shuf --help' for more information.\n");
    let mut o = Options::default();
    let mut it = args.iter();
    let count = |o: &mut Options, v: &str| match v.trim().parse::<u64>() {
        Ok(n) => {
            o.count = Some(o.count.map_or(n, |c| c.min(n)));
            Ok(())
        }
        Err(_) => Err(format!("shuf: invalid line count: '{v}'\n")),
    };
    while let Some(arg) = it.next() {
        if arg == "--" {
            o.operands.extend(it.by_ref().cloned());
        } else if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let mut value = || inline.clone().or_else(|| it.next().cloned());
            match name {
                "echo" => o.echo = true,
                "repeat" => o.repeat = true,
                "zero-terminated" => o.zero = true,
                "input-range" => o.range = value(),
                "head-count" => count(&mut o, &value().unwrap_or_default())?,
                "output" => o.output = value(),
                "random-source" => o.source = value(),
                "help" | "version" => o.help = true,
                _ => return Err(usage(format!("unrecognized option '{arg}'"))),
            }
        } else if arg.len() > 1 && arg.starts_with('-') {
            let cluster = &arg[1..];
            for (i, c) in cluster.char_indices() {
                match c {
                    'e' => o.echo = true,
                    'r' => o.repeat = true,
                    'z' => o.zero = true,
                    'i' | 'n' | 'o' => {
                        let rest = &cluster[i + 1..];
                        let v = if rest.is_empty() {
                            it.next().cloned().unwrap_or_default()
                        } else {
                            rest.to_owned()
                        };
                        match c {
                            'i' => o.range = Some(v),
                            'n' => count(&mut o, &v)?,
                            _ => o.output = Some(v),
                        }
                        break;
                    }
                    _ => return Err(usage(format!("invalid option -- '{c}'"))),
                }
            }
        } else {
            o.operands.push(arg.clone());
        }
    }
    if o.echo && o.range.is_some() {
        return Err(usage("cannot combine -e and -i options".into()));
    }
    let most = if o.echo {
        usize::MAX
    } else if o.range.is_some() {
        0
    } else {
        1
    };
    if let Some(extra) = o.operands.get(most) {
        return Err(usage(format!("extra operand '{extra}'")));
    }
    Ok(o)
}

/// GNU's `LO-HI` (`5-4` is an empty range).
fn range(spec: &str) -> Result<(u64, u64), String> {
    let invalid = || format!("shuf: invalid input range: '{spec}'\n");
    let (lo, hi) = spec.split_once('-').ok_or_else(invalid)?;
    let lo: u64 = lo.parse().map_err(|_| invalid())?;
    let hi: u64 = hi.parse().map_err(|_| invalid())?;
    if lo <= hi.saturating_add(1) && hi < u64::MAX {
        Ok((lo, hi + 1))
    } else {
        Err(invalid())
    }
}

/// A number below `n` (`n > 0`), unbiased enough for a shuffle.
fn below(rng: &mut SplitMix, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// The first `k` of a random permutation of `0..n` (Fisher-Yates, the
/// swaps kept sparse so a range of any size costs only what it prints).
fn sample(rng: &mut SplitMix, n: u64, k: u64) -> impl Iterator<Item = u64> + '_ {
    let mut swapped: BTreeMap<u64, u64> = BTreeMap::new();
    (0..k.min(n)).map(move |i| {
        let j = i + below(rng, n - i);
        let at_j = *swapped.get(&j).unwrap_or(&j);
        let at_i = *swapped.get(&i).unwrap_or(&i);
        swapped.insert(j, at_i);
        at_j
    })
}

#[bashkit::async_trait]
impl bashkit::Builtin for SeededShuf {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let o = match parse(ctx.args) {
            Ok(o) if o.help => return bashkits_own("shuf", &ctx, &self.limits).await,
            Ok(o) => o,
            Err(message) => return Ok(failure(&message, 1)),
        };
        let sep = if o.zero { b'\0' } else { b'\n' };
        let input: Vec<u8>;
        let items: Vec<&[u8]>;
        let numbers = match &o.range {
            Some(spec) => match range(spec) {
                Ok(r) => Some(r),
                Err(message) => return Ok(failure(&message, 1)),
            },
            None => None,
        };
        if o.echo {
            items = o.operands.iter().map(|a| a.as_bytes()).collect();
        } else if numbers.is_some() {
            items = Vec::new();
        } else {
            input = match o.operands.first().filter(|f| *f != "-") {
                Some(file) => match ctx.fs.read_file(&resolve(ctx.cwd, file)).await {
                    Ok(bytes) => bytes,
                    Err(_) => {
                        return Ok(failure(
                            &format!("shuf: {file}: No such file or directory\n"),
                            1,
                        ))
                    }
                },
                None => ctx.stdin.map(|s| s.as_bytes().to_vec()).unwrap_or_default(),
            };
            let body = input.strip_suffix(&[sep]).unwrap_or(&input);
            items = if input.is_empty() {
                Vec::new()
            } else {
                body.split(|&c| c == sep).collect()
            };
        }
        let n = match numbers {
            Some((lo, end)) => end - lo,
            None => items.len() as u64,
        };
        let item = |i: u64| -> Vec<u8> {
            match numbers {
                Some((lo, _)) => (lo + i).to_string().into_bytes(),
                None => items[i as usize].to_vec(),
            }
        };
        let mut rng = match &o.source {
            Some(source) => match ctx.fs.read_file(&resolve(ctx.cwd, source)).await {
                Ok(bytes) => SplitMix::new(seed_of(&[&bytes])),
                Err(_) => {
                    return Ok(failure(
                        &format!("shuf: {source}: No such file or directory\n"),
                        1,
                    ))
                }
            },
            None => SplitMix::new(
                self.rng
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .next_u64(),
            ),
        };
        // One byte past the budget: the shell then cuts and says so.
        let budget = self.limits.max_stdout_bytes.saturating_add(1);
        let mut out = Vec::new();
        let mut push = |line: Vec<u8>| {
            out.extend_from_slice(&line);
            out.push(sep);
            out.len() < budget
        };
        if o.repeat {
            if n == 0 && o.count != Some(0) {
                return Ok(failure("shuf: no lines to repeat\n", 1));
            }
            let mut left = o.count;
            while left != Some(0) && push(item(below(&mut rng, n.max(1)))) {
                left = left.map(|l| l - 1);
            }
        } else {
            for i in sample(&mut rng, n, o.count.unwrap_or(u64::MAX)) {
                if !push(item(i)) {
                    break;
                }
            }
        }
        Ok(deliver(&ctx, "shuf", o.output.as_deref(), out, 1).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn gnu_options_and_messages() {
        let o = parse(&args(&["-n", "5", "-rz", "-n2", "--output=f", "x"])).unwrap();
        assert_eq!(o.count, Some(2));
        assert!(o.repeat && o.zero);
        assert_eq!(o.output.as_deref(), Some("f"));
        assert_eq!(o.operands, ["x"]);
        assert_eq!(
            parse(&args(&["-n", "x"])).unwrap_err(),
            "shuf: invalid line count: 'x'\n"
        );
        assert_eq!(
            parse(&args(&["a", "b"])).unwrap_err(),
            "shuf: extra operand 'b'\nTry 'shuf --help' for more information.\n"
        );
        assert_eq!(
            parse(&args(&["-i", "1-3", "x"])).unwrap_err(),
            "shuf: extra operand 'x'\nTry 'shuf --help' for more information.\n"
        );
        assert!(parse(&args(&["-e", "-i1-3"]))
            .unwrap_err()
            .starts_with("shuf: cannot combine -e and -i options\n"));
        assert!(parse(&args(&["-x"]))
            .unwrap_err()
            .starts_with("shuf: invalid option -- 'x'\n"));
        assert_eq!(
            parse(&args(&["-e", "a", "b", "c"])).unwrap().operands.len(),
            3
        );
        assert_eq!(range("1-3"), Ok((1, 4)));
        assert_eq!(range("3-2"), Ok((3, 3)));
        assert_eq!(
            range("5-3").unwrap_err(),
            "shuf: invalid input range: '5-3'\n"
        );
    }

    #[test]
    fn a_sample_is_a_permutation_of_distinct_indices() {
        let mut rng = SplitMix::new(3);
        let mut all: Vec<u64> = sample(&mut rng, 50, u64::MAX).collect();
        all.sort_unstable();
        assert_eq!(all, (0..50).collect::<Vec<_>>());
        let mut rng = SplitMix::new(3);
        let few: Vec<u64> = sample(&mut rng, 1 << 60, 5).collect();
        assert_eq!(few.len(), 5);
        let mut distinct = few.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 5);
        let mut rng = SplitMix::new(4);
        assert_ne!(sample(&mut rng, 1 << 60, 5).collect::<Vec<_>>(), few);
    }
}
