//! `agentload plugin new NAME [--kind scorer]`: a workload or scorer plugin
//! crate built on `agentload-sdk` (plugins/sdk), ready to build, test and
//! check.

use anyhow::{bail, Context as _, Result};
use std::path::{Component, Path, PathBuf};

const CARGO_TOML: &str = include_str!("template/Cargo.toml.tmpl");
const STANDALONE_TOML: &str = include_str!("template/standalone.toml.tmpl");
const LIB_RS: &str = include_str!("template/lib.rs.tmpl");
const README: &str = include_str!("template/README.md.tmpl");
const SCORER_LIB_RS: &str = include_str!("template/scorer_lib.rs.tmpl");
const SCORER_README: &str = include_str!("template/scorer_README.md.tmpl");
const RUN_TOML: &str = include_str!("template/run.toml.tmpl");
const PROMPTS: &str = include_str!("template/prompts.jsonl.tmpl");

/// The SDK of the checkout this binary was built from.
const BUILT_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../plugins/sdk");

/// Which world the scaffolded plugin implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Kind {
    /// One-turn sessions from a JSONL file of prompts.
    #[default]
    Workload,
    /// Passes a turn whose answer contains the expected one.
    Scorer,
}

/// What to scaffold.
#[derive(Debug, Clone)]
pub struct ScaffoldOptions {
    /// Crate name, kebab-case.
    pub name: String,
    /// Workload or scorer.
    pub kind: Kind,
    /// The crate goes into `DIR/NAME`.
    pub dir: PathBuf,
    /// The `agentload-sdk` crate (default: `$AGENTLOAD_SDK`, else the
    /// checkout this binary was built from).
    pub sdk: Option<PathBuf>,
}

/// What was written.
#[derive(Debug)]
pub struct Scaffolded {
    /// The new crate's folder.
    pub path: PathBuf,
    /// The SDK it depends on.
    pub sdk: PathBuf,
    /// Workload or scorer.
    pub kind: Kind,
    /// Whether the crate is inside the agentload workspace (a member to add)
    /// rather than a workspace of its own.
    pub in_workspace: bool,
    /// The build command, run from `build_dir`.
    pub build_command: String,
    pub build_dir: PathBuf,
    /// The component's path once built, relative to `build_dir`.
    pub wasm: PathBuf,
}

/// Checks a crate name: lowercase ASCII letters, digits and single dashes,
/// starting with a letter.
pub fn validate_name(name: &str) -> Result<()> {
    let ok = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
        && !name.contains("--");
    if !ok {
        bail!("plugin name `{name}` must be kebab-case: lowercase letters, digits and single dashes, starting with a letter (e.g. `my-workload`)");
    }
    Ok(())
}

/// `demo-workload` -> `DemoWorkload`.
fn type_name(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut c = part.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Where the SDK is, checked.
fn find_sdk(explicit: Option<&Path>) -> Result<PathBuf> {
    let (path, from) = match (explicit, std::env::var_os("AGENTLOAD_SDK")) {
        (Some(p), _) => (p.to_path_buf(), "--sdk"),
        (None, Some(p)) => (PathBuf::from(p), "AGENTLOAD_SDK"),
        (None, None) => (PathBuf::from(BUILT_SDK), "the agentload checkout"),
    };
    let manifest = path.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).with_context(|| {
        format!(
            "agentload-sdk not found at {} (from {from}): pass --sdk PATH or set AGENTLOAD_SDK \
             to the plugins/sdk folder of an agentload checkout",
            path.display()
        )
    })?;
    if !text.contains("name = \"agentload-sdk\"") {
        bail!("{} is not the agentload-sdk crate", manifest.display());
    }
    path.canonicalize()
        .with_context(|| format!("cannot resolve {}", path.display()))
}

/// `to` relative to `from` (both absolute, normalized).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let a: Vec<Component> = from.components().collect();
    let b: Vec<Component> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..a.len() {
        out.push("..");
    }
    for c in &b[common..] {
        out.push(c);
    }
    out
}

/// Writes the crate.
pub fn scaffold(opts: &ScaffoldOptions) -> Result<Scaffolded> {
    validate_name(&opts.name)?;
    let sdk = find_sdk(opts.sdk.as_deref())?;
    // The workspace the SDK belongs to: plugins/sdk/../..
    let agentload_root = sdk
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .context("the SDK has no parent workspace")?;
    std::fs::create_dir_all(&opts.dir)
        .with_context(|| format!("cannot create {}", opts.dir.display()))?;
    let parent = opts
        .dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", opts.dir.display()))?;
    let path = parent.join(&opts.name);
    if path.exists() && std::fs::read_dir(&path)?.next().is_some() {
        bail!("{} already exists and is not empty", path.display());
    }
    let in_workspace = path.starts_with(&agentload_root);
    let sdk_path = if in_workspace {
        relative(&path, &sdk)
    } else {
        sdk.clone()
    };
    let crate_file = opts.name.replace('-', "_");
    let (build_dir, build_command, wasm) = if in_workspace {
        (
            agentload_root.clone(),
            format!(
                "cargo build --profile plugin --target wasm32-wasip2 -p {}",
                opts.name
            ),
            PathBuf::from(format!("target/wasm32-wasip2/plugin/{crate_file}.wasm")),
        )
    } else {
        (
            path.clone(),
            "cargo build --profile plugin --target wasm32-wasip2".to_string(),
            PathBuf::from(format!("target/wasm32-wasip2/plugin/{crate_file}.wasm")),
        )
    };
    // From the crate's folder, where run.toml and the README's commands run.
    let wasm_from_crate = relative(&path, &build_dir.join(&wasm));
    let test_command = if in_workspace {
        format!("cargo test -p {}", opts.name)
    } else {
        "cargo test".to_string()
    };
    let description = match opts.kind {
        Kind::Workload => "agentload workload: one-turn sessions from a JSONL file of prompts",
        Kind::Scorer => "agentload scorer: a turn passes when its answer contains the expected one",
    };
    let fill = |t: &str| {
        t.replace("{{name}}", &opts.name)
            .replace("{{description}}", description)
            .replace("{{type_name}}", &type_name(&opts.name))
            .replace("{{sdk_path}}", &sdk_path.display().to_string())
            .replace(
                "{{build_command}}",
                &if in_workspace {
                    format!(
                        "(cd {} && {build_command})",
                        relative(&path, &build_dir).display()
                    )
                } else {
                    build_command.clone()
                },
            )
            .replace("{{test_command}}", &test_command)
            .replace("{{wasm_path}}", &wasm_from_crate.display().to_string())
    };
    std::fs::create_dir_all(path.join("src"))?;
    let mut cargo_toml = fill(CARGO_TOML);
    if !in_workspace {
        cargo_toml.push_str(STANDALONE_TOML);
    }
    let write = |rel: &str, text: String| -> Result<()> {
        let file = path.join(rel);
        std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))
    };
    write("Cargo.toml", cargo_toml)?;
    match opts.kind {
        Kind::Workload => {
            write("src/lib.rs", fill(LIB_RS))?;
            write("README.md", fill(README))?;
            write("run.toml", fill(RUN_TOML))?;
            write("prompts.jsonl", PROMPTS.to_string())?;
        }
        Kind::Scorer => {
            write("src/lib.rs", fill(SCORER_LIB_RS))?;
            write("README.md", fill(SCORER_README))?;
        }
    }
    if !in_workspace {
        write(".gitignore", "/target\n".to_string())?;
        // Build with the toolchain and dependency versions the official
        // plugins use: the checkout's pinned toolchain and its lock file
        // (cargo adds this crate's own entries to the copy).
        for file in ["rust-toolchain.toml", "Cargo.lock"] {
            let from = agentload_root.join(file);
            if from.is_file() {
                std::fs::copy(&from, path.join(file))
                    .with_context(|| format!("cannot copy {}", from.display()))?;
            }
        }
    }
    Ok(Scaffolded {
        path,
        sdk,
        kind: opts.kind,
        in_workspace,
        build_command,
        build_dir,
        wasm,
    })
}

/// What to do next, for the terminal.
pub fn next_steps(s: &Scaffolded, name: &str) -> String {
    let kind = match s.kind {
        Kind::Workload => "workload",
        Kind::Scorer => "scorer",
    };
    let mut out = format!(
        "created {kind} plugin `{name}` in {} (agentload-sdk at {})\n",
        s.path.display(),
        s.sdk.display()
    );
    if s.in_workspace {
        out.push_str(&format!(
            "\nadd \"{}\" to `members` in {}/Cargo.toml, then:\n",
            relative(&s.build_dir, &s.path).display(),
            s.build_dir.display()
        ));
    } else {
        out.push_str("\nnext:\n");
    }
    let check = match s.kind {
        Kind::Workload => format!("--data prompts={}", s.path.join("prompts.jsonl").display()),
        Kind::Scorer => r#"--expected '{"answer": "hello"}'"#.to_string(),
    };
    out.push_str(&format!(
        "  cd {} && {}\n  agentload plugin check {} {check}\n",
        s.build_dir.display(),
        s.build_command,
        s.build_dir.join(&s.wasm).display(),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(validate_name("demo-workload").is_ok());
        assert!(validate_name("Demo").is_err());
        assert!(validate_name("demo-").is_err());
        assert!(validate_name("9lives").is_err());
        assert_eq!(type_name("demo-workload"), "DemoWorkload");
        assert_eq!(type_name("x2-y"), "X2Y");
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative(Path::new("/a/b/plugins/x"), Path::new("/a/b/plugins/sdk")),
            PathBuf::from("../sdk")
        );
        assert_eq!(
            relative(Path::new("/a/b"), Path::new("/a/b/target/p.wasm")),
            PathBuf::from("target/p.wasm")
        );
    }
}
