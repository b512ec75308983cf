//! The `agentload` command line as a library: [`Opts`] (the parsed
//! arguments) and [`run`] (one command to its exit code), as `main` calls
//! them; [`execute`] runs a command on a caller's runtime (the tests do).
//! Exit codes are `agentload_results::exit`.

mod args;
mod config;
mod help;
mod realtime;
mod sim;
mod telemetry;

pub use args::Opts;

use crate::run::{Mode as RunMode, Overrides};
use agentload_config::RunConfig;
use agentload_results::exit;
use anyhow::Result;
use args::{Command, ConfigCommand, DatasetCommand, K8sCommand, Mode, SimArgs, ToolsCommand};
use clap::FromArgMatches;
use std::path::PathBuf;
use std::process::ExitCode;

/// Parses the process's arguments and runs the command (`main` is this).
pub fn main() -> ExitCode {
    agentload_wire::clock::mark_process_start();
    let opts = Opts::from_arg_matches(&help::command().get_matches());
    run(opts.unwrap_or_else(|e| e.exit()))
}

/// Runs one parsed command line to its exit code (errors printed).
pub fn run(cli: Opts) -> ExitCode {
    // Pinned before the runtime starts: its threads inherit the pinning, and it starts one
    // worker per CPU the process may use (not more workers than CPUs, preempting each other).
    let pinned = match &cli.command {
        Command::Sim(SimArgs {
            cpus: Some(cpus), ..
        }) => Some((cpus.0.clone(), "--cpus")),
        Command::Bench {
            sim_cpus: Some(sim),
            ..
        } => match crate::bench::affinity::others(&sim.0) {
            Ok(client) => Some((client, "--sim-cpus")),
            Err(e) => return fail(&anyhow::Error::new(e).context("--sim-cpus")),
        },
        _ => None,
    };
    if let Some((cpus, option)) = pinned {
        if let Err(e) = crate::bench::affinity::pin_process(&cpus) {
            return fail(&anyhow::Error::new(e).context(option));
        }
    }
    // Before the runtime starts: its threads inherit the policy.
    let realtime = match &cli.command {
        Command::Run { realtime, .. } => *realtime,
        Command::Shard(a) => a.realtime,
        _ => false,
    };
    if realtime {
        if let Err(e) = realtime::fifo() {
            return fail(&anyhow::Error::new(e).context("--realtime"));
        }
    }
    agentload_console::set_verbose(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&anyhow::Error::new(e).context("cannot start the async runtime")),
    };
    match runtime.block_on(execute(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => fail(&e),
    }
}

/// The writer locks of the distinct run directories among `dirs` (a
/// command that reads a run whole, or writes into it, holds them).
fn lock_runs<'a>(
    dirs: impl Iterator<Item = &'a PathBuf>,
    command: &str,
) -> Result<Vec<agentload_results::run_dir::WriterLock>> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut locks = Vec::new();
    for dir in dirs {
        let key = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        if seen.contains(&key) || !dir.is_dir() {
            continue;
        }
        locks.push(agentload_results::run_dir::lock(dir, command)?);
        seen.push(key);
    }
    Ok(locks)
}

/// A user error: its cause chain on one line, never a backtrace.
fn fail(e: &anyhow::Error) -> ExitCode {
    agentload_console::line(&format!("error: {}", cause_chain(e)));
    ExitCode::from(exit::FAILURE)
}

/// `e` and its causes, `: `-joined, leaving out a cause that the text before
/// it already ends with (an error whose message quotes its source: "cannot
/// read X: it is a FIFO" then "it is a FIFO" again).
fn cause_chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.is_empty() {
            text = part;
        } else if !text.ends_with(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
    }
    text
}

/// The run mode a `--mode` value selects.
fn run_mode(mode: Mode) -> RunMode {
    match mode {
        Mode::Accuracy => RunMode::Accuracy,
        Mode::Perf => RunMode::Performance,
        Mode::Both => RunMode::Both,
    }
}

/// A duration in seconds from the command line.
fn seconds(s: f64, flag: &str) -> Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(s)
        .map_err(|_| anyhow::anyhow!("{flag} {s}: not a number of seconds"))
}

/// Runs one parsed command line on the current runtime (a multi-threaded
/// one) and returns its exit code; errors are returned, not printed. Tests
/// drive commands in process through it.
pub async fn execute(cli: Opts) -> Result<u8> {
    match cli.command {
        Command::Run {
            config,
            endpoint,
            model,
            out,
            mode,
            accuracy_only,
            submission,
            require_valid,
            force,
            grants,
            shards,
            silence_timeout_s,
            points,
            max_supported_concurrency,
            min_duration_scale,
            tls,
            realtime: _,
        } => {
            let mode = match (mode, accuracy_only) {
                (_, true) => RunMode::Accuracy,
                (mode, false) => run_mode(mode),
            };
            if let Some(shards) = shards {
                if tls.given() {
                    anyhow::bail!(
                        "--ca-file and --insecure are not passed on to shards: set \
                         endpoint.tls in the config of a sharded run"
                    );
                }
                return crate::shard_commands::launch::launch(
                    crate::shard_commands::launch::Launch {
                        config,
                        shards,
                        out,
                        endpoint,
                        mode,
                        submission,
                        force,
                        require_valid,
                        silence_timeout: seconds(silence_timeout_s, "--silence-timeout-s")?,
                    },
                )
                .await;
            }
            let mut cfg = RunConfig::load(&config)?;
            tls.apply(&mut cfg);
            if let Some(model) = model {
                cfg.model.name = model;
            }
            let overrides = Overrides {
                endpoint,
                out,
                mode,
                submission,
                force,
                handle_signals: true,
                grants,
                ..Overrides::default()
            };
            if !points.is_empty() {
                return crate::points::run_points(
                    cfg,
                    &points,
                    max_supported_concurrency,
                    min_duration_scale,
                    &overrides,
                    require_valid,
                )
                .await;
            }
            let result = crate::run::run(cfg, &overrides).await?;
            Ok(result.exit_code(require_valid))
        }
        Command::Resume {
            dir, require_valid, ..
        } if crate::shard_commands::launch::is_sharded(&dir) => {
            crate::shard_commands::launch::resume(&dir, require_valid).await
        }
        Command::Resume {
            dir,
            endpoint,
            require_valid,
            grants,
        } => {
            let result = crate::resume::resume(&crate::resume::ResumeOptions {
                dir,
                endpoint,
                grants,
                quiet: false,
            })
            .await?;
            Ok(result.exit_code(require_valid))
        }
        Command::Rescore {
            run_dir,
            scorer,
            phase,
            out,
            instances,
        } => {
            let result = tokio::task::block_in_place(|| {
                crate::rescore::rescore(&crate::rescore::RescoreOptions {
                    run_dir,
                    scorer,
                    phase: phase.map(Into::into),
                    out,
                    instances,
                })
            })?;
            agentload_console::out(&crate::rescore::summary(&result));
            Ok(exit::SUCCESS)
        }
        Command::Config { command } => match command {
            ConfigCommand::Check { files, submission } => config::check(&files, submission),
            ConfigCommand::Schema => Ok(config::print_schema()),
            ConfigCommand::Reference => Ok(config::print_reference()),
        },
        Command::Diff { a, b, json, all } => {
            let diffs = agentload_report::diff::diff(&a, &b)?;
            if json {
                agentload_console::out(&(serde_json::to_string_pretty(&diffs)? + "\n"));
            } else {
                agentload_console::out(&agentload_report::diff::render(&diffs, all));
            }
            Ok(exit::SUCCESS)
        }
        Command::Submission {
            run,
            performance_run,
            accuracy_run,
            output,
            division,
            submitter,
            system,
            benchmark,
            scenario,
            scaffold,
            force,
        } => {
            use agentload_results::submission::{publish, SubmissionOptions};
            let performance_run = performance_run.or_else(|| run.clone());
            let accuracy_run = accuracy_run.or(run);
            // The runs are read whole, never while another process writes them.
            let _locks = lock_runs(
                performance_run.iter().chain(accuracy_run.iter()),
                "submission",
            )?;
            let published = publish(&SubmissionOptions {
                performance_run,
                accuracy_run,
                output,
                division,
                submitter,
                system,
                benchmark,
                scenario,
                scaffold,
                force,
            })?;
            let mut text = String::new();
            for line in &published.findings {
                text.push_str(&format!("{line}\n"));
            }
            text.push_str(&format!(
                "submission tree in {}\n",
                published.results_root.display()
            ));
            agentload_console::out(&text);
            Ok(exit::SUCCESS)
        }
        Command::Report { dirs, out, label } => {
            let out = out.unwrap_or_else(|| match dirs.as_slice() {
                [one] => one.join("report.html"),
                _ => PathBuf::from("report.html"),
            });
            // A page written into a run directory waits for no writer there.
            let _locks = lock_runs(dirs.iter().filter(|d| out.starts_with(d)), "report")?;
            let started = std::time::Instant::now();
            tokio::task::block_in_place(|| agentload_report::write(&dirs, &label, &out))?;
            let bytes = std::fs::metadata(&out).map_or(0, |m| m.len());
            agentload_console::out(&format!(
                "{} ({bytes} bytes, {:.2} s)\n",
                out.display(),
                started.elapsed().as_secs_f64()
            ));
            Ok(exit::SUCCESS)
        }
        Command::Export {
            dir, out, aa: true, ..
        } => {
            let _lock = lock_runs(std::iter::once(&dir), "export")?;
            let written = crate::aa::export(&dir, out.as_deref())?;
            agentload_console::out(&crate::aa::lines(&written));
            Ok(exit::SUCCESS)
        }
        Command::Export { dir, out, .. } => {
            let _lock = lock_runs(std::iter::once(&dir), "export")?;
            let mut text = String::new();
            for path in agentload_report::export::csv(&dir, out.as_deref())? {
                text.push_str(&format!("{}\n", path.display()));
            }
            agentload_console::out(&text);
            Ok(exit::SUCCESS)
        }
        Command::Pareto {
            sweeps,
            out,
            label,
            x,
        } => {
            let x = x.into();
            let combined = crate::sweep::pareto_of(&sweeps, &label, x)?;
            match out {
                Some(path) => {
                    let (dir, name) = agentload_fs::OutDir::of_file(&path)?;
                    dir.write_json(name, &combined)?;
                }
                None => {
                    let mut text = format!(
                        "{:<24} {:>6} {:>12}  {}\n",
                        "run",
                        "agents",
                        "total tok/s",
                        x.label()
                    );
                    for p in &combined.frontier {
                        text.push_str(&format!(
                            "{:<24} {:>6} {:>12.1}  {:.1}{}\n",
                            p.run,
                            p.level,
                            p.total_tps,
                            p.x(x).unwrap_or(f64::NAN),
                            if p.live {
                                "  (live replies: not official)"
                            } else {
                                ""
                            }
                        ));
                    }
                    agentload_console::out(&text);
                }
            }
            Ok(exit::SUCCESS)
        }
        Command::Bench {
            sections,
            levels,
            requests,
            samples,
            answer_tokens,
            sim_cpus,
            agents,
            agents_seconds,
            agents_tps,
            agents_scale,
            rack_stream_tps,
            agents_instances,
            aa_base_agents,
            aa_rounds,
            tls_streams,
            tls_handshakes,
            tls_rounds,
            out,
        } => {
            let tls = crate::bench::tls::Options {
                samples,
                streams: tls_streams,
                requests_per_stream: requests,
                handshakes: tls_handshakes,
                rounds: tls_rounds,
                answer_tokens,
            };
            let streams = crate::bench::streams::Options {
                levels,
                requests_per_stream: requests,
                samples,
                answer_tokens,
                sim_cpus: sim_cpus.map(|c| c.0),
            };
            let agents = crate::bench::agents::Options {
                agents,
                seconds: agents_seconds,
                stream_tps: agents_tps,
                scale: agents_scale,
                rack_stream_tps,
                instances: agents_instances,
            };
            let aa_agents = crate::bench::aa_agents::Options {
                agents: agents.agents,
                base_agents: aa_base_agents,
                seconds: agents.seconds,
                stream_tps: agents.stream_tps,
                rounds: aa_rounds,
            };
            crate::bench::sections(&sections, &streams, &agents, &aa_agents, &tls, out)
                .await
                .map(|()| exit::SUCCESS)
        }
        Command::Shard(a) => {
            crate::shard_commands::shard(crate::shard_commands::ShardOpts {
                config: a.config,
                shards: a.shards,
                index: a.index,
                run_id: a.run_id,
                coordinator: a.coordinator,
                listen: a.listen,
                addr_file: a.addr_file,
                out: a.out,
                work: a.work,
                endpoint: a.endpoint,
                mode: run_mode(a.mode),
                submission: a.submission,
                resume: a.resume,
                barrier_timeout: seconds(a.barrier_timeout_s, "--barrier-timeout-s")?,
                silence_timeout: seconds(a.silence_timeout_s, "--silence-timeout-s")?,
                linger: seconds(a.linger_s, "--linger-s")?,
                upload_budget: a.upload_budget_mib.saturating_mul(1 << 20),
                require_valid: a.require_valid,
            })
            .await
        }
        Command::Merge { out, dirs } => {
            let result = crate::shard_commands::merge_dirs(&out, &dirs).await?;
            Ok(result.exit_code(false))
        }
        Command::Check {
            dir,
            max_supported_concurrency,
            model,
            osl_bands,
            min_duration_scale,
        } => {
            let gating = crate::points::Gating {
                model: model.as_deref(),
                bands: match osl_bands {
                    args::OslBandSet::Checker => agentload_results::regions::OslBands::Checker,
                    args::OslBandSet::Readme => agentload_results::regions::OslBands::Readme,
                },
                duration_scale: min_duration_scale,
            };
            let (text, passed) = crate::points::check(&dir, max_supported_concurrency, gating)?;
            agentload_console::out(&text);
            Ok(if passed { exit::SUCCESS } else { exit::INVALID })
        }
        Command::PointYaml {
            dir,
            max_supported_concurrency,
            disclosure,
            draft,
        } => {
            let disclosure = match &disclosure {
                Some(path) => crate::point_yaml::read_disclosure(path)?,
                None => Default::default(),
            };
            let written =
                crate::point_yaml::write(&dir, max_supported_concurrency, &disclosure, draft)?;
            let mut text = String::new();
            for path in written {
                text.push_str(&format!(
                    "{}
",
                    path.display()
                ));
            }
            agentload_console::out(&text);
            Ok(exit::SUCCESS)
        }
        Command::Dataset {
            command:
                DatasetCommand::Datacenter {
                    edge,
                    out,
                    workflow,
                    delay_scale,
                    seed,
                    force,
                },
        } => {
            let options = crate::standin_data::Options {
                workflow,
                delay_scale,
                seed,
                force,
            };
            let w = crate::standin_data::write(&edge, &out, &options)?;
            agentload_console::line(&format!(
                "wrote {}: {} coding and {} workflow conversations, {} rows",
                out.display(),
                w.coding,
                w.workflow,
                w.rows
            ));
            Ok(exit::SUCCESS)
        }
        Command::Dataset {
            command: DatasetCommand::Workspace { dir, out },
        } => {
            let packed = crate::workspace::pack(&dir, &out)?;
            agentload_console::line(&format!(
                "wrote {}: {} files, {} bytes{}",
                out.display(),
                packed.files,
                packed.bytes,
                packed
                    .commit
                    .map(|c| format!(", commit {c}"))
                    .unwrap_or_default()
            ));
            agentload_console::out(&format!(
                "archive = \"{}\"\nsha256 = \"{}\"\n",
                out.file_name().map_or_else(
                    || out.display().to_string(),
                    |n| n.to_string_lossy().into_owned()
                ),
                packed.sha256
            ));
            Ok(exit::SUCCESS)
        }
        Command::Dataset {
            command: DatasetCommand::AaWorkspaces { manifest, out },
        } => {
            use crate::tools::aa_workspaces::{pack, tables, Task};
            let tasks = pack(&manifest, &out)?;
            for t in &tasks {
                if let Task::Packed {
                    task,
                    archive,
                    files,
                    ..
                } = t
                {
                    agentload_console::line(&format!(
                        "wrote {archive}: task {task}, {files} files"
                    ));
                }
            }
            agentload_console::out(&tables(&tasks));
            Ok(exit::SUCCESS)
        }
        Command::Tools { command } => match command {
            ToolsCommand::Exec(args) => crate::tools::cli::exec(args).await.map(|()| exit::SUCCESS),
            ToolsCommand::Fidelity(args) => crate::tools::fidelity::run(args)
                .await
                .map(|()| exit::SUCCESS),
        },
        Command::K8s { command } => match command {
            K8sCommand::Manifest(opts) => {
                let yaml = crate::shards::k8s::manifest(&opts)?;
                agentload_console::out(&yaml);
                Ok(exit::SUCCESS)
            }
            K8sCommand::Fetch {
                url,
                out,
                timeout_s,
                force,
                tls,
            } => {
                let transport = tls.transport()?;
                let n = crate::shards::k8s::fetch(&url, &out, timeout_s, force, &transport).await?;
                agentload_console::out(&format!("{n} files in {}\n", out.display()));
                Ok(exit::SUCCESS)
            }
        },
        Command::Sim(args) => sim::serve_sim(args).await.map(|()| exit::SUCCESS),
        Command::Telemetry { config, endpoint } => telemetry::probe(&config, endpoint).await,
        Command::Demo { out, time_scale } => crate::demo::demo(out, time_scale).await,
        Command::Plugin { command } => crate::authoring::run(command).await.map(|()| exit::SUCCESS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_the_message_already_quotes_is_said_once() {
        let io = std::io::Error::new(std::io::ErrorKind::InvalidInput, "it is a FIFO");
        let quoted = anyhow::Error::new(io).context("cannot read turns.jsonl: it is a FIFO");
        assert_eq!(
            cause_chain(&quoted),
            "cannot read turns.jsonl: it is a FIFO"
        );
        let chained = anyhow::anyhow!("disk full")
            .context("cannot write report.html")
            .context("report");
        assert_eq!(
            cause_chain(&chained),
            "report: cannot write report.html: disk full"
        );
    }
}
