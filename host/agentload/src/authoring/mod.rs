//! Tools for plugin authors: `agentload plugin new` ([`scaffold`]) and
//! `agentload plugin check` ([`check`]).

pub mod check;
pub mod scaffold;

use anyhow::Result;
use std::path::PathBuf;

/// `agentload plugin ...`.
#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Scaffold a workload or scorer plugin crate that uses agentload-sdk.
    #[command(
        after_help = "Examples:\n  agentload plugin new my-workload --dir plugins\n  agentload plugin new my-scorer --kind scorer --dir plugins"
    )]
    New {
        /// Crate name, kebab-case (e.g. `my-workload`).
        name: String,
        /// What the plugin is.
        #[arg(long, value_enum, default_value_t = scaffold::Kind::Workload)]
        kind: scaffold::Kind,
        /// Parent folder of the new crate (default: the current folder).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// The agentload-sdk crate (plugins/sdk of an agentload checkout;
        /// default: $AGENTLOAD_SDK, else the checkout agentload was built from).
        #[arg(long)]
        sdk: Option<PathBuf>,
    },
    /// Validate a plugin component: its world and WIT version, whether it
    /// loads in the sandbox, and what it does (a workload runs a few turns
    /// against the in-process simulator; a scorer scores synthetic items).
    #[command(
        after_help = "Examples:\n  agentload plugin check target/wasm32-wasip2/plugin/my_workload.wasm --data prompts=prompts.jsonl\n  agentload plugin check target/plugins/shell_iou.wasm --json"
    )]
    Check {
        /// The component (`.wasm`).
        path: PathBuf,
        /// Turns to run (workloads).
        #[arg(long, default_value_t = 4)]
        turns: usize,
        /// The plugin's settings, a JSON object.
        #[arg(long)]
        settings: Option<String>,
        /// Grant a data file under a logical name (repeatable).
        #[arg(long = "data", value_name = "NAME=FILE", value_parser = check::parse_grant)]
        data: Vec<(String, PathBuf)>,
        /// Expected data (JSON) of the synthetic scorer items.
        #[arg(long)]
        expected: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `plugin` subcommand.
pub async fn run(command: PluginCommand) -> Result<()> {
    match command {
        PluginCommand::New {
            name,
            kind,
            dir,
            sdk,
        } => {
            let done = scaffold::scaffold(&scaffold::ScaffoldOptions {
                name: name.clone(),
                kind,
                dir,
                sdk,
            })?;
            agentload_console::out(&scaffold::next_steps(&done, &name));
            Ok(())
        }
        PluginCommand::Check {
            path,
            turns,
            settings,
            data,
            expected,
            json,
        } => {
            let opts = check::CheckOptions {
                path,
                turns,
                settings,
                data,
                expected,
                limits: agentload_plugin_host::Limits::default(),
            };
            let print = |report: &check::CheckReport| -> Result<()> {
                if json {
                    agentload_console::out(&(serde_json::to_string_pretty(report)? + "\n"));
                } else {
                    agentload_console::out(&check::render(report));
                }
                Ok(())
            };
            match check::check(&opts).await {
                Ok(report) => {
                    print(&report)?;
                    agentload_console::out("check passed\n");
                    Ok(())
                }
                Err(e) => match e.downcast::<check::CheckFailed>() {
                    Ok(failed) => {
                        print(&failed.report)?;
                        Err(failed.error.context("check failed"))
                    }
                    Err(e) => Err(e),
                },
            }
        }
    }
}
