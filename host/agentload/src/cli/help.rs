//! The top-level help: the commands grouped by task instead of clap's one
//! list. Each subcommand's own help ends with its examples (`after_help`
//! in `args.rs`); the tests below hold both to every command there is.

use super::args::Opts;
use clap::CommandFactory;
use std::fmt::Write as _;

/// The tasks and their commands, in the order `agentload --help` lists them.
const GROUPS: &[(&str, &[&str])] = &[
    (
        "Run",
        &["run", "demo", "resume", "sim", "telemetry", "bench"],
    ),
    ("Inspect", &["report", "diff", "pareto", "export"]),
    ("Audit", &["rescore", "check", "point-yaml", "submission"]),
    ("Scale", &["shard", "merge", "k8s"]),
    ("Author", &["config", "plugin", "dataset", "tools"]),
];

/// The command line, its top-level help grouped by task.
pub(super) fn command() -> clap::Command {
    let command = Opts::command();
    let groups = grouped(&command);
    command.help_template(format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{groups}\
         Options:\n{{options}}{{after-help}}"
    ))
}

/// Each group's heading and its commands, one per line with their summary.
fn grouped(command: &clap::Command) -> String {
    let width = GROUPS
        .iter()
        .flat_map(|(_, names)| names.iter().map(|n| n.len()))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (group, names) in GROUPS {
        let _ = writeln!(out, "{group}:");
        for name in *names {
            let about = command
                .find_subcommand(name)
                .and_then(clap::Command::get_about)
                .map(|a| summary(&a.to_string()))
                .unwrap_or_default();
            let _ = writeln!(out, "  {name:width$}  {about}");
        }
        out.push('\n');
    }
    out
}

/// A command's about cut to one line's worth: its first sentence, and of a
/// long one the part before its colon (`COMMAND --help` has the rest).
fn summary(about: &str) -> String {
    // A sentence ends at a period before a capital (`e.g. a run` goes on).
    let end = about
        .match_indices(". ")
        .find(|(i, _)| about[i + 2..].starts_with(|c: char| c.is_uppercase()))
        .map_or(about.len(), |(i, _)| i);
    let first = &about[..end];
    let first = first.strip_suffix('.').unwrap_or(first);
    match first.split_once(": ") {
        Some((head, _)) if first.len() > 100 && head.len() >= 25 => head.to_owned(),
        _ => first.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand below `command`, by its full name (`config check`).
    fn all(command: &clap::Command, prefix: &str, out: &mut Vec<(String, clap::Command)>) {
        for sub in command.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            let name = format!("{prefix}{}", sub.get_name());
            out.push((name.clone(), sub.clone()));
            all(sub, &format!("{name} "), out);
        }
    }

    #[test]
    fn every_command_is_in_exactly_one_group() {
        let command = Opts::command();
        let listed: Vec<&str> = GROUPS.iter().flat_map(|(_, n)| n.iter().copied()).collect();
        for sub in command.get_subcommands() {
            let n = listed.iter().filter(|l| **l == sub.get_name()).count();
            assert_eq!(n, 1, "`{}` is in {n} groups of GROUPS", sub.get_name());
        }
        for name in &listed {
            assert!(
                command.find_subcommand(name).is_some(),
                "no command `{name}`"
            );
        }
    }

    #[test]
    fn the_top_level_help_lists_the_commands_by_task() {
        let help = command().render_help().to_string();
        let at = |s: &str| help.find(s).unwrap_or_else(|| panic!("{s:?} in\n{help}"));
        assert!(at("Run:\n  run ") < at("Inspect:\n  report "), "{help}");
        assert!(at("Audit:\n  rescore ") < at("Scale:\n  shard "), "{help}");
        at("  config      Run config files");
        at("Options:\n");
        at("Exit codes: 0 success");
        // A long about is cut to its first sentence (and before its colon).
        at("  resume      Continue an interrupted or killed run from its own files\n");
        at("two results (e.g. a run and its re-score with another scorer version)\n");
    }

    #[test]
    fn every_command_help_ends_with_examples_of_itself() {
        let mut commands = Vec::new();
        all(&Opts::command(), "", &mut commands);
        assert!(commands.len() > 20, "{}", commands.len());
        for (name, command) in commands {
            let after = command
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            let examples = after
                .strip_prefix("Examples:\n")
                .unwrap_or_else(|| panic!("`agentload {name} --help` ends with no examples"));
            let lines: Vec<&str> = examples.lines().collect();
            assert!((1..=2).contains(&lines.len()), "{name}: {lines:?}");
            let own = format!("  agentload {name}");
            assert!(
                lines.iter().any(|l| l.starts_with(&own)),
                "`agentload {name} --help`: no example runs it: {lines:?}"
            );
        }
    }
}
