//! `mktemp`, named from the call's seed.
//!
//! bashkit's own `mktemp` names its files from std's `RandomState`, whose
//! keys a WebAssembly instance draws once and then steps for every hash map
//! any session of the instance makes: a name would depend on what else ran
//! in the instance before. This one draws from the call's seeded generator
//! ([`crate::rng`]), so the same calls give the same names wherever they run.
//! GNU's surface: `-d`, `-u`, `-q`, `-t`, `-p DIR`, `--tmpdir[=DIR]`,
//! `--suffix=SUFF` and a TEMPLATE ending in at least three `X`s.

use crate::output::resolve;
use crate::rng::SplitMix;
use crate::shell::failure;
use bashkit::{BuiltinContext, ExecResult};
use std::path::Path;
use std::sync::Mutex;

/// Names tried before giving up (each already taken).
const ATTEMPTS: usize = 100;

/// The characters a name's `X`s become.
const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// `mktemp` for one call; `rng` is seeded from the call's seed.
pub struct SeededMktemp {
    rng: Mutex<SplitMix>,
}

impl SeededMktemp {
    /// The `mktemp` of the call seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Mutex::new(SplitMix::new(seed ^ 0x6d6b_7465_6d70_0000)),
        }
    }

    fn random(&self, n: usize) -> String {
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        (0..n)
            .map(|_| CHARS[(rng.next_u64() % CHARS.len() as u64) as usize] as char)
            .collect()
    }
}

/// What the arguments ask for.
#[derive(Debug, Default, PartialEq)]
struct Options {
    directory: bool,
    dry_run: bool,
    quiet: bool,
    t: bool,
    /// `-p DIR` / `--tmpdir[=DIR]` given (its value, empty when none).
    tmpdir: Option<String>,
    suffix: Option<String>,
    template: Option<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut rest = args.iter();
    let mut operands = Vec::new();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--" => {
                operands.extend(rest.by_ref().cloned());
                break;
            }
            "-d" | "--directory" => o.directory = true,
            "-u" | "--dry-run" => o.dry_run = true,
            "-q" | "--quiet" => o.quiet = true,
            "-t" => o.t = true,
            "-p" => {
                let dir = rest
                    .next()
                    .ok_or("mktemp: option requires an argument -- 'p'\n")?;
                o.tmpdir = Some(dir.clone());
            }
            "--tmpdir" => o.tmpdir = Some(String::new()),
            "--suffix" => {
                let s = rest
                    .next()
                    .ok_or("mktemp: option '--suffix' requires an argument\n")?;
                o.suffix = Some(s.clone());
            }
            a if a.starts_with("--tmpdir=") => o.tmpdir = Some(a["--tmpdir=".len()..].into()),
            a if a.starts_with("--suffix=") => o.suffix = Some(a["--suffix=".len()..].into()),
            a if a.starts_with("-p") && a.len() > 2 => o.tmpdir = Some(a[2..].into()),
            a if a.starts_with('-') && a.len() > 1 && !a.starts_with("--") => {
                // Clustered short flags: -dq, -tu, ...
                for c in a[1..].chars() {
                    match c {
                        'd' => o.directory = true,
                        'u' => o.dry_run = true,
                        'q' => o.quiet = true,
                        't' => o.t = true,
                        _ => return Err(format!("mktemp: invalid option -- '{c}'\n")),
                    }
                }
            }
            a if a.starts_with("--") => {
                return Err(format!("mktemp: unrecognized option '{a}'\n"));
            }
            _ => operands.push(arg.clone()),
        }
    }
    if operands.len() > 1 {
        return Err("mktemp: too many templates\n".into());
    }
    o.template = operands.pop();
    Ok(o)
}

/// TEMPLATE as (prefix, number of `X`s, suffix), the GNU way.
fn split<'a>(
    template: &'a str,
    suffix: Option<&'a str>,
) -> Result<(&'a str, usize, &'a str), String> {
    let (body, suffix) = match suffix {
        Some(s) => (template, s),
        None => match template.rfind('X') {
            Some(i) => (&template[..=i], &template[i + 1..]),
            None => (template, ""),
        },
    };
    let xs = body.bytes().rev().take_while(|b| *b == b'X').count();
    if xs < 3 {
        return Err(format!("mktemp: too few X's in template '{template}'\n"));
    }
    Ok((&body[..body.len() - xs], xs, suffix))
}

#[bashkit::async_trait]
impl bashkit::Builtin for SeededMktemp {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let o = match parse(ctx.args) {
            Ok(o) => o,
            Err(msg) => return Ok(failure(&msg, 1)),
        };
        let fail = |msg: String| Ok(failure(if o.quiet { "" } else { &msg }, 1));
        // No TEMPLATE means --tmpdir; -t prefers $TMPDIR to -p's directory.
        let in_dir = o.template.is_none() || o.tmpdir.is_some() || o.t;
        let template = o
            .template
            .clone()
            .unwrap_or_else(|| "tmp.XXXXXXXXXX".into());
        if o.suffix.as_deref().is_some_and(|s| s.contains('/')) {
            return fail(format!(
                "mktemp: invalid suffix '{}', contains directory separator\n",
                o.suffix.as_deref().unwrap_or_default()
            ));
        }
        let (prefix, xs, suffix) = match split(&template, o.suffix.as_deref()) {
            Ok(parts) => parts,
            Err(msg) => return fail(msg),
        };
        let env_dir = ctx.env.get("TMPDIR").filter(|d| !d.is_empty()).cloned();
        let given = o.tmpdir.clone().filter(|d| !d.is_empty());
        let dir = in_dir.then(|| {
            if o.t {
                env_dir.or(given)
            } else {
                given.or(env_dir)
            }
            .unwrap_or_else(|| "/tmp".into())
        });
        if dir.is_some() && template.starts_with('/') {
            return fail(format!(
                "mktemp: invalid template, '{template}'; with --tmpdir, it may not be absolute\n"
            ));
        }
        if o.t && template.contains('/') {
            return fail(format!(
                "mktemp: invalid template, '{template}', contains directory separator\n"
            ));
        }
        if dir.as_deref() == Some("/tmp")
            && !ctx.fs.exists(Path::new("/tmp")).await.unwrap_or(false)
        {
            let _ = ctx.fs.mkdir(Path::new("/tmp"), true).await;
        }
        let shown_template = match &dir {
            Some(d) => format!("{}/{template}", d.trim_end_matches('/')),
            None => template.clone(),
        };
        for _ in 0..ATTEMPTS {
            let name = format!("{prefix}{}{suffix}", self.random(xs));
            let shown = match &dir {
                Some(d) => format!("{}/{name}", d.trim_end_matches('/')),
                None => name,
            };
            let path = resolve(ctx.cwd, &shown);
            if ctx.fs.exists(&path).await.unwrap_or(false) {
                continue;
            }
            if o.dry_run {
                return Ok(ExecResult::ok(format!("{shown}\n")));
            }
            let made = if o.directory {
                ctx.fs.mkdir(&path, false).await
            } else {
                ctx.fs.write_file(&path, &[]).await
            };
            match made {
                Ok(()) => return Ok(ExecResult::ok(format!("{shown}\n"))),
                Err(_) if ctx.fs.exists(&path).await.unwrap_or(false) => continue,
                Err(_) => {
                    let what = if o.directory { "directory" } else { "file" };
                    let missing = match path.parent() {
                        Some(p) => !ctx.fs.exists(p).await.unwrap_or(false),
                        None => false,
                    };
                    let why = if missing {
                        "No such file or directory"
                    } else {
                        "Permission denied"
                    };
                    return fail(format!(
                        "mktemp: failed to create {what} via template '{shown_template}': {why}\n"
                    ));
                }
            }
        }
        fail(format!(
            "mktemp: failed to create file via template '{shown_template}': File exists\n"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn gnu_options_are_read() {
        let o = parse(&args(&["-dq", "--suffix=.txt", "-p", "/w", "a.XXXX"])).unwrap();
        assert!(o.directory && o.quiet && !o.dry_run);
        assert_eq!(o.suffix.as_deref(), Some(".txt"));
        assert_eq!(o.tmpdir.as_deref(), Some("/w"));
        assert_eq!(o.template.as_deref(), Some("a.XXXX"));
        assert_eq!(
            parse(&args(&["--tmpdir"])).unwrap().tmpdir.as_deref(),
            Some("")
        );
        assert!(parse(&args(&["-z"])).is_err());
        assert!(parse(&args(&["a.XXX", "b.XXX"])).is_err());
        assert_eq!(split("f.XXXXX.c", None), Ok(("f.", 5, ".c")));
        assert!(split("f.XX", None).is_err());
    }

    #[test]
    fn names_come_from_the_seed_alone() {
        // Hash maps made between two draws (what other sessions of an
        // instance do) change nothing.
        let a = SeededMktemp::new(42).random(10);
        let _maps: Vec<std::collections::HashMap<u8, u8>> =
            (0..100).map(|_| std::collections::HashMap::new()).collect();
        assert_eq!(SeededMktemp::new(42).random(10), a);
        assert_ne!(SeededMktemp::new(43).random(10), a);
        let two = SeededMktemp::new(42);
        assert_ne!(
            two.random(10),
            two.random(10),
            "a call's second name is another"
        );
    }
}
