//! `report.html`: one self-contained page (inline CSS and SVG, no script,
//! nothing fetched) for a run, a sweep, or several of either compared.
//!
//! The report only reads result files (through [`read`]); `run` and `demo`
//! write it next to `report.txt`, `agentload report` writes it for any
//! result directories.

pub mod charts;
mod compare;
pub mod headline;
mod page;
pub mod read;
mod run;
mod sweep;

use anyhow::{Context as _, Result};
pub use read::RunDir;
use std::path::{Path, PathBuf};

/// Labels for `runs`: `labels` where given, else each run's name, made
/// unique with the directory name (and a number) where names collide.
pub fn labels(runs: &[RunDir], given: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let mut l = given.get(i).cloned().unwrap_or_else(|| r.name());
        let clash = |l: &str, out: &[String]| out.iter().any(|o| o == l);
        let dup_name = given.get(i).is_none() && runs.iter().filter(|o| o.name() == l).count() > 1;
        if dup_name {
            let dir = r
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            l = format!("{l} ({dir})");
        }
        let base = l.clone();
        let mut k = 2;
        while clash(&l, &out) {
            l = format!("{base} #{k}");
            k += 1;
        }
        out.push(l);
    }
    out
}

/// The HTML page for one or several result directories.
pub fn render(runs: &[RunDir], given_labels: &[String]) -> Result<String> {
    anyhow::ensure!(!runs.is_empty(), "no result directory to report");
    let generated_by = format!("agentload {}", env!("CARGO_PKG_VERSION"));
    let page = if let [r] = runs {
        let mut sections = vec![run::header(r)];
        sections.extend(run::performance(r));
        sections.extend(sweep::section(r));
        sections.extend(run::accuracy(r));
        let kind = if r.sweep.is_some() { "sweep" } else { "run" };
        page::Page {
            title: format!("agentload {kind}: {}", r.name()),
            subtitle: format!(
                "{} · model {} · endpoint {} · started {}",
                r.path.display(),
                r.manifest_str("model").unwrap_or("?"),
                r.manifest_str("endpoint").unwrap_or("?"),
                r.manifest_str("test_started_at").unwrap_or("?"),
            ),
            generated_by,
            sections,
        }
    } else {
        let labels = labels(runs, given_labels);
        let mut sections = vec![
            compare::runs_table(runs, &labels),
            compare::deltas(runs, &labels),
        ];
        sections.extend(compare::overlays(runs, &labels));
        page::Page {
            title: format!("agentload: {} runs compared", runs.len()),
            subtitle: format!(
                "baseline {}; deltas are each run minus the baseline",
                labels[0]
            ),
            generated_by,
            sections,
        }
    };
    page::render(&page).context("cannot render the report template")
}

/// Reads `dirs` and writes their page to `out`.
pub fn write(dirs: &[PathBuf], labels: &[String], out: &Path) -> Result<()> {
    let runs = dirs
        .iter()
        .map(|d| RunDir::read(d))
        .collect::<Result<Vec<_>, _>>()?;
    let html = render(&runs, labels)?;
    std::fs::write(out, html).with_context(|| format!("cannot write {}", out.display()))
}

/// Writes `DIR/report.html` for a finished run.
pub fn write_for_run(dir: &Path) -> Result<PathBuf> {
    let out = dir.join("report.html");
    write(&[dir.to_path_buf()], &[], &out)?;
    Ok(out)
}
