//! `agentload config`: check config files as a run reads them, print the
//! run config's JSON Schema and the reference page generated from it.

use agentload_config::{located, rules, schema, RunConfig};
use agentload_results::exit;
use anyhow::Result;
use std::fmt::Write as _;
use std::path::PathBuf;

/// `agentload config check`: each file loaded and checked as `run` loads
/// it (nothing is compiled, read or sent); its ruleset's deviations listed,
/// and with `submission` refused as a submission run refuses them.
pub(super) fn check(files: &[PathBuf], submission: bool) -> Result<u8> {
    let mut failed = false;
    for file in files {
        let config = match RunConfig::load(file) {
            Ok(config) => config,
            Err(e) => {
                agentload_console::line(&format!("error: {e}"));
                failed = true;
                continue;
            }
        };
        let text = std::fs::read_to_string(file)?;
        let compliance = rules::check(
            &serde_json::to_value(&config)?,
            &toml::to_string(&config)?,
            rules::Phases {
                performance: true,
                accuracy: true,
            },
        );
        let mut out = String::new();
        for d in &compliance.deviations {
            let at = located::find_key(&text, &d.key)
                .map(|at| format!("{}:{at}", file.display()))
                .unwrap_or_else(|| file.display().to_string());
            let _ = writeln!(out, "{at}: not compliant: {d}");
        }
        let refusal = submission
            .then(|| rules::require(&compliance).err())
            .flatten();
        match (&refusal, compliance.rules) {
            (Some(refusal), _) => {
                let _ = writeln!(out, "error: {}: {refusal}", file.display());
                failed = true;
            }
            (None, Some(name)) if compliance.compliant => {
                let _ = writeln!(out, "{}: ok, compliant with {name}", file.display());
            }
            (None, Some(name)) => {
                let n = compliance.deviations.len();
                let _ = writeln!(
                    out,
                    "{}: ok as a development run; {n} deviation{} from {name} \
                     (a submission run is refused)",
                    file.display(),
                    if n == 1 { "" } else { "s" }
                );
            }
            (None, None) => {
                let _ = writeln!(out, "{}: ok (no ruleset named)", file.display());
            }
        }
        agentload_console::out(&out);
    }
    Ok(if failed { exit::FAILURE } else { exit::SUCCESS })
}

/// `agentload config schema`: the JSON Schema, pretty.
pub(super) fn print_schema() -> u8 {
    agentload_console::out(&schema::run_config_text());
    exit::SUCCESS
}

/// `agentload config reference`: the reference page (Markdown).
pub(super) fn print_reference() -> u8 {
    agentload_console::out(&schema::reference());
    exit::SUCCESS
}
