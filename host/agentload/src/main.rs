//! The `agentload` command line.

use agentload::config::RunConfig;
use agentload::exit;
use agentload::run::{run, Mode as RunMode, Overrides, RunResult};
use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "agentload",
    version,
    about = "Benchmark harness for agentic LLM inference",
    after_help = "Exit codes: 0 success; 1 an error stopped the command (its cause is printed); \
2 usage error; 3 --require-valid and the run is not VALID; 4 a phase issued turns and every one \
failed; 130 interrupted by SIGINT/SIGTERM (results written, marked INCOMPLETE; `agentload resume DIR` \
continues)."
)]
struct Cli {
    /// Show plugin debug logs.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a benchmark config against an endpoint.
    Run {
        /// The run config (TOML).
        config: PathBuf,
        /// Base URL of the server (overrides `endpoint.url`).
        #[arg(long)]
        endpoint: Option<String>,
        /// Output directory (overrides `report_dir`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Which phases to run (`both`: every phase the config has).
        #[arg(long, value_enum, default_value_t = Mode::Both)]
        mode: Mode,
        /// Accept only the official plugins of plugins/official.lock, checked
        /// before they are compiled (as `mode = "submission"` in the config).
        #[arg(long)]
        submission: bool,
        /// The accuracy gate alone, at concurrency 1 (same as `--mode accuracy`).
        #[arg(long, conflicts_with = "mode")]
        accuracy_only: bool,
        /// Exit non-zero (3) unless the run is valid: no expected
        /// performance turn missing and the accuracy gate passed.
        #[arg(long)]
        require_valid: bool,
        /// Replace the results of an earlier run in the output directory
        /// (without it, a non-empty output directory is refused).
        #[arg(long)]
        force: bool,
        /// Grant a file outside the data directory: PHASE.NAME=PATH
        /// replaces the file of grant NAME of PHASE (performance or
        /// accuracy); repeatable. Config grants stay inside the data
        /// directory and the cache.
        #[arg(long = "grant", value_name = "PHASE.NAME=PATH")]
        grants: Vec<agentload::data::ExplicitGrant>,
    },
    /// Continue an interrupted or killed run from its own files: completed
    /// turns are kept, sessions cut short continue after their last
    /// recorded turn, then every summary and report is written anew.
    Resume {
        /// The run's output directory.
        dir: PathBuf,
        /// Base URL of the server, when it moved (default: the run's own).
        #[arg(long)]
        endpoint: Option<String>,
        /// Exit non-zero (3) unless the finished run is valid.
        #[arg(long)]
        require_valid: bool,
        /// As for `run`: the files the run was granted outside the data
        /// directory (they are not recorded, so they are given again).
        #[arg(long = "grant", value_name = "PHASE.NAME=PATH")]
        grants: Vec<agentload::data::ExplicitGrant>,
    },
    /// Score a finished run's recorded completions again (no endpoint).
    Rescore {
        /// The run's output directory.
        run_dir: PathBuf,
        /// Scorer to use instead of each phase's own: a name or a `.wasm` path.
        #[arg(long)]
        scorer: Option<String>,
        /// Output directory (default RUN_DIR/rescore/<scorer>@<version>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The most scorer instances scoring side by side (default: the
        /// run config's plugins.scorer_instances, else one per core).
        #[arg(long)]
        instances: Option<usize>,
    },
    /// Show the per-sample verdicts and aggregates that differ between two
    /// results (e.g. a run and its re-score with another scorer version).
    Diff {
        /// The first result directory.
        a: PathBuf,
        /// The second result directory.
        b: PathBuf,
        /// Print JSON instead of text (always complete).
        #[arg(long)]
        json: bool,
        /// List every number and every changed sample (the text form
        /// otherwise shows changed numbers and the first changes).
        #[arg(long)]
        all: bool,
    },
    /// Write one self-contained HTML page for a run, a sweep, or several
    /// result directories compared (the first is the baseline).
    Report {
        /// Result directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Output file (default DIR/report.html for one directory,
        /// ./report.html for several).
        #[arg(long)]
        out: Option<PathBuf>,
        /// A label per directory, in order (default: each run's name).
        #[arg(long)]
        label: Vec<String>,
    },
    /// Export a result directory's turns, sessions and phases as tables.
    Export {
        /// The result directory.
        dir: PathBuf,
        /// CSV (the one format so far): turns.csv, sessions.csv, phases.csv.
        #[arg(long, required = true)]
        csv: bool,
        /// Output directory (default DIR/export).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Lay out finished runs as an MLPerf endpoints submission tree, as the
    /// reference's publish_submission.py does, checking the fields the
    /// submission checker reads.
    Submission {
        /// A combined run (performance and accuracy in one directory).
        #[arg(long, conflicts_with_all = ["performance_run", "accuracy_run"])]
        run: Option<PathBuf>,
        /// The performance run's directory.
        #[arg(long)]
        performance_run: Option<PathBuf>,
        /// The accuracy run's directory.
        #[arg(long)]
        accuracy_run: Option<PathBuf>,
        /// Where the tree goes.
        #[arg(long, default_value = "submission")]
        output: PathBuf,
        /// closed, open or network.
        #[arg(long, default_value = "closed")]
        division: String,
        #[arg(long)]
        submitter: String,
        /// System name (e.g. AGX_Thor).
        #[arg(long)]
        system: String,
        /// MLPerf benchmark name (e.g. qwen3.6-27b).
        #[arg(long)]
        benchmark: String,
        #[arg(long, default_value = "SingleStream")]
        scenario: String,
        /// Also write measurements.json and systems/SYSTEM.json templates.
        #[arg(long)]
        scaffold: bool,
        /// Overwrite existing templates.
        #[arg(long)]
        force: bool,
    },
    /// The Pareto frontier (total throughput vs P25 output speed) across
    /// several sweeps: run directories or their `sweep/pareto.json` files.
    Pareto {
        /// Sweep results to combine.
        #[arg(required = true)]
        sweeps: Vec<PathBuf>,
        /// Write the combined frontier here (JSON) instead of printing it.
        #[arg(long)]
        out: Option<PathBuf>,
        /// A label per sweep, in order, replacing its run name (two runs of
        /// one config otherwise carry the same).
        #[arg(long)]
        label: Vec<String>,
    },
    /// Measure the harness's own costs and print a table.
    Bench {
        /// Sections to run: streams, build, load, edge.
        #[arg(long, value_delimiter = ',', default_value = "streams,build,load,edge")]
        sections: Vec<String>,
        /// Concurrent streams per level (streams section).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "1,2,4,8,16,32,64,128,256,512,1000"
        )]
        levels: Vec<usize>,
        /// Requests each stream sends at least, one after another.
        #[arg(long, default_value_t = 5)]
        requests: usize,
        /// Requests per level at least (low levels send more per stream, for a stable p99;
        /// the floor client sends as many as c=1).
        #[arg(long, default_value_t = 500)]
        samples: usize,
        /// Tokens in each streamed answer (the simulator decodes 100 tokens/s per stream).
        #[arg(long, default_value_t = 16)]
        answer_tokens: usize,
        /// Pin the simulator to these CPUs (e.g. `1`, `2-3`) and agentload to the others.
        #[arg(long, value_name = "LIST")]
        sim_cpus: Option<agentload::bench::affinity::CpuList>,
        /// Write the rows (and the streams levels) as JSON here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Serve the simulated OpenAI-compatible endpoint until stopped.
    Sim(SimArgs),
    /// Run the edge config (performance, then the BFCL accuracy gate when
    /// its data is there) against the in-process simulator.
    Demo {
        /// Output directory.
        #[arg(long, default_value = "results/demo")]
        out: PathBuf,
        /// Simulated time scale (1.0 = real llama.cpp-like speeds).
        #[arg(long, default_value_t = 0.001)]
        time_scale: f64,
    },
    /// Plugin authoring: scaffold a plugin crate, check a built component.
    Plugin {
        #[command(subcommand)]
        command: agentload::authoring::PluginCommand,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    Perf,
    Accuracy,
    Both,
}

#[derive(clap::Args)]
struct SimArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Run on these CPUs only (e.g. `1`, `2-3`): keeps the simulator off the client's cores.
    #[arg(long, value_name = "LIST")]
    cpus: Option<agentload::bench::affinity::CpuList>,
    /// What the assistant answers.
    #[arg(long, value_enum, default_value_t = ResponderKind::Echo)]
    responder: ResponderKind,
    /// Trajectory dataset for `oracle`.
    #[arg(long)]
    dataset: Option<PathBuf>,
    /// BFCL v4 data folder (`bfcl_v4`) for `oracle`: BFCL entry ids as
    /// session ids get the gold calls.
    #[arg(long)]
    bfcl: Option<PathBuf>,
    /// Canned completions for `script`.
    #[arg(long)]
    script: Option<PathBuf>,
    /// Probability that `oracle` perturbs a turn's tool calls.
    #[arg(long, default_value_t = 0.0)]
    error_rate: f64,
    /// Seed of the perturbation draws.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Make `oracle` cut answers at the request's `max_tokens` as llama.cpp
    /// would (by default it replays each recorded turn whole).
    #[arg(long)]
    oracle_cap: bool,
    /// Prefill rate, tokens per second.
    #[arg(long, default_value_t = 1000.0)]
    prefill_tps: f64,
    /// Decode rate, tokens per second.
    #[arg(long, default_value_t = 50.0)]
    decode_tps: f64,
    /// Context size in tokens.
    #[arg(long, default_value_t = 32768)]
    ctx_size: u32,
    /// Multiplies every simulated duration.
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
    /// Sequences decoded at once (continuous batching); more requests queue.
    #[arg(long, default_value_t = 1)]
    slots: u32,
    /// Decode step growth per extra active sequence: a step takes
    /// (1 + s·(n−1)) / decode-tps.
    #[arg(long, default_value_t = 0.1)]
    decode_batch_slowdown: f64,
    /// Prompt tokens prefilled per batch iteration (chunked prefill).
    #[arg(long, default_value_t = 512)]
    prefill_chunk_tokens: u32,
    /// Capacity of a prefix cache shared by all slots, in tokens (0: each
    /// slot reuses only its own previous prompt, as llama.cpp).
    #[arg(long, default_value_t = 0)]
    cache_tokens: u64,
    /// How the simulator counts and cuts tokens: `qwen` (the Qwen3.6 BPE,
    /// found in the data directory or cache) or `approx` (about 4 bytes a
    /// token, needs no data).
    #[arg(long, value_enum, default_value_t = SimTokenizer::Qwen)]
    tokenizer: SimTokenizer,
    /// Inject a fault into the N-th chat-completions request (repeatable;
    /// `--help` lists the kinds).
    #[arg(long = "fault", value_name = "KIND@N", long_help = agentload_sim::FAULT_HELP)]
    faults: Vec<agentload_sim::Fault>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SimTokenizer {
    Qwen,
    Approx,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ResponderKind {
    Echo,
    Oracle,
    Script,
}

/// The demo runs the shipped edge config.
const EDGE_CONFIG: &str = include_str!("../../../configs/edge-full-run.toml");

fn main() -> ExitCode {
    agentload::clock::mark_process_start();
    let cli = Cli::parse();
    if let Command::Sim(SimArgs {
        cpus: Some(cpus), ..
    }) = &cli.command
    {
        // Before the runtime starts: its threads inherit the pinning.
        if let Err(e) = agentload::bench::affinity::pin_process(&cpus.0) {
            return fail(&anyhow::Error::new(e).context("--cpus"));
        }
    }
    agentload::log::set_verbose(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&anyhow::Error::new(e).context("cannot start the async runtime")),
    };
    match runtime.block_on(dispatch(cli.command)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => fail(&e),
    }
}

/// A user error: its cause chain on one line, never a backtrace.
fn fail(e: &anyhow::Error) -> ExitCode {
    agentload::log::line(&format!("error: {e:#}"));
    ExitCode::from(exit::FAILURE)
}

/// The exit code of a finished (or interrupted) run.
fn run_exit(result: &RunResult, require_valid: bool) -> u8 {
    agentload::log::out(&format!("results in {}\n", result.out.display()));
    if result.interrupted.is_some() {
        return exit::INTERRUPTED;
    }
    if !result.all_failed.is_empty() {
        agentload::log::line(&format!(
            "error: every issued turn failed in the {} phase (causes in report.txt and turns.jsonl)",
            result.all_failed.join(" and ")
        ));
        return exit::ALL_FAILED;
    }
    if require_valid && !result.valid() {
        agentload::log::line(&format!(
            "error: run invalid (see report.txt in {})",
            result.out.display()
        ));
        return exit::INVALID;
    }
    exit::SUCCESS
}

async fn dispatch(command: Command) -> Result<u8> {
    match command {
        Command::Run {
            config,
            endpoint,
            out,
            mode,
            accuracy_only,
            submission,
            require_valid,
            force,
            grants,
        } => {
            let mode = match (mode, accuracy_only) {
                (_, true) | (Mode::Accuracy, _) => RunMode::Accuracy,
                (Mode::Perf, _) => RunMode::Performance,
                (Mode::Both, _) => RunMode::Both,
            };
            let cfg = RunConfig::load(&config)?;
            let result = run(
                cfg,
                &Overrides {
                    endpoint,
                    out,
                    mode,
                    submission,
                    force,
                    handle_signals: true,
                    grants,
                    ..Overrides::default()
                },
            )
            .await?;
            Ok(run_exit(&result, require_valid))
        }
        Command::Resume {
            dir,
            endpoint,
            require_valid,
            grants,
        } => {
            let result = agentload::resume::resume(&agentload::resume::ResumeOptions {
                dir,
                endpoint,
                grants,
                quiet: false,
            })
            .await?;
            Ok(run_exit(&result, require_valid))
        }
        Command::Rescore {
            run_dir,
            scorer,
            out,
            instances,
        } => {
            let result = tokio::task::block_in_place(|| {
                agentload::rescore::rescore(&agentload::rescore::RescoreOptions {
                    run_dir,
                    scorer,
                    out,
                    instances,
                })
            })?;
            agentload::log::out(&agentload::rescore::summary(&result));
            Ok(exit::SUCCESS)
        }
        Command::Diff { a, b, json, all } => {
            let diffs = agentload::diff::diff(&a, &b)?;
            if json {
                agentload::log::out(&(serde_json::to_string_pretty(&diffs)? + "\n"));
            } else {
                agentload::log::out(&agentload::diff::render(&diffs, all));
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
            use agentload::results::submission::{publish, SubmissionOptions};
            let published = publish(&SubmissionOptions {
                performance_run: performance_run.or_else(|| run.clone()),
                accuracy_run: accuracy_run.or(run),
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
            agentload::log::out(&text);
            Ok(exit::SUCCESS)
        }
        Command::Report { dirs, out, label } => {
            let out = out.unwrap_or_else(|| match dirs.as_slice() {
                [one] => one.join("report.html"),
                _ => PathBuf::from("report.html"),
            });
            let started = std::time::Instant::now();
            tokio::task::block_in_place(|| agentload::report::write(&dirs, &label, &out))?;
            let bytes = std::fs::metadata(&out).map_or(0, |m| m.len());
            agentload::log::out(&format!(
                "{} ({bytes} bytes, {:.2} s)\n",
                out.display(),
                started.elapsed().as_secs_f64()
            ));
            Ok(exit::SUCCESS)
        }
        Command::Export { dir, out, csv: _ } => {
            let mut text = String::new();
            for path in agentload::export::csv(&dir, out.as_deref())? {
                text.push_str(&format!("{}\n", path.display()));
            }
            agentload::log::out(&text);
            Ok(exit::SUCCESS)
        }
        Command::Pareto { sweeps, out, label } => {
            let combined = agentload::sweep::pareto_of(&sweeps, &label)?;
            match out {
                Some(path) => agentload::results::write_json(&path, &combined)?,
                None => {
                    let mut text = format!(
                        "{:<24} {:>6} {:>12} {:>14}\n",
                        "run", "agents", "total tok/s", "P25 tok/s"
                    );
                    for p in &combined.frontier {
                        text.push_str(&format!(
                            "{:<24} {:>6} {:>12.1} {:>14.1}\n",
                            p.run, p.level, p.total_tps, p.speed_p25_tps
                        ));
                    }
                    agentload::log::out(&text);
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
            out,
        } => {
            let streams = agentload::bench::streams::Options {
                levels,
                requests_per_stream: requests,
                samples,
                answer_tokens,
                sim_cpus: sim_cpus.map(|c| c.0),
            };
            bench(&sections, &streams, out)
                .await
                .map(|()| exit::SUCCESS)
        }
        Command::Sim(args) => serve_sim(args).await.map(|()| exit::SUCCESS),
        Command::Demo { out, time_scale } => demo(out, time_scale).await,
        Command::Plugin { command } => agentload::authoring::run(command)
            .await
            .map(|()| exit::SUCCESS),
    }
}

fn sim_config(args: &SimArgs) -> Result<agentload_sim::SimConfig> {
    use agentload_sim::ResponderConfig;
    let responder = match args.responder {
        ResponderKind::Echo => ResponderConfig::Echo,
        ResponderKind::Oracle => ResponderConfig::Oracle {
            dataset: args.dataset.clone(),
            bfcl: args.bfcl.clone(),
            error_rate: args.error_rate,
            seed: args.seed,
            cap_to_max_tokens: args.oracle_cap,
        },
        ResponderKind::Script => ResponderConfig::Script {
            path: args
                .script
                .clone()
                .context("--responder script needs --script FILE")?,
        },
    };
    Ok(agentload_sim::SimConfig {
        prefill_tokens_per_s: args.prefill_tps,
        decode_tokens_per_s: args.decode_tps,
        ctx_size: args.ctx_size,
        time_scale: args.time_scale,
        slots: args.slots,
        decode_batch_slowdown: args.decode_batch_slowdown,
        prefill_chunk_tokens: args.prefill_chunk_tokens,
        cache_tokens: args.cache_tokens,
        responder,
        faults: args.faults.clone(),
        ..Default::default()
    })
}

async fn bench(
    sections: &[String],
    streams_options: &agentload::bench::streams::Options,
    out: Option<PathBuf>,
) -> Result<()> {
    use agentload::bench;
    let data_dir = agentload::data::data_dir(None);
    let mut rows = Vec::new();
    let mut streams = None;
    for section in sections {
        eprintln!("bench: {section}");
        match section.as_str() {
            "streams" => {
                let (measured, r) = bench::streams::run(streams_options).await?;
                streams = Some(measured);
                rows.extend(r);
            }
            "build" => rows.extend(tokio::task::block_in_place(|| {
                bench::build::requests(&data_dir)
            })?),
            "load" => rows.extend(tokio::task::block_in_place(bench::build::loads)?),
            "edge" => {
                let dir = std::env::temp_dir()
                    .join(format!("agentload-bench-edge-{}", std::process::id()));
                let r = tokio::task::block_in_place(|| bench::edge::run(&dir, 5));
                std::fs::remove_dir_all(&dir).ok();
                rows.extend(r?);
            }
            other => anyhow::bail!("unknown bench section `{other}` (streams, build, load, edge)"),
        }
    }
    agentload::log::out(&bench::table(&rows));
    if let Some(path) = out {
        agentload::results::write_json(
            &path,
            &serde_json::json!({"rows": rows, "streams": streams}),
        )?;
    }
    Ok(())
}

async fn serve_sim(args: SimArgs) -> Result<()> {
    let config = sim_config(&args)?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], args.port));
    let counter: Arc<dyn agentload_sim::TokenCounter> = match args.tokenizer {
        SimTokenizer::Approx => Arc::new(agentload_sim::ApproxTokenCounter),
        SimTokenizer::Qwen => {
            let data_dir = agentload::data::data_dir(None);
            Arc::new(agentload::tokens::load_qwen(&data_dir).map_err(anyhow::Error::msg)?)
        }
    };
    let sim = agentload_sim::start(config, counter, addr).await?;
    agentload::log::out(&format!("{}\n", sim.url()));
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    eprintln!(
        "connections accepted: {}, chat requests received: {}",
        sim.connections_accepted(),
        sim.chat_requests_received()
    );
    sim.shutdown().await;
    Ok(())
}

async fn demo(dir: PathBuf, time_scale: f64) -> Result<u8> {
    let config = RunConfig::parse(
        std::path::Path::new("configs/edge-full-run.toml"),
        EDGE_CONFIG,
    )?;
    let data_dir = agentload::data::data_dir(config.data_dir.as_deref());
    let max = agentload::plugin::Limits::bytes(config.plugins.limits.granted_file_mib);
    let dataset = agentload::data::read(&data_dir, "agentic_coding_2.5h.jsonl", max)?;
    // The accuracy gate runs when the BFCL data is there.
    let bfcl = agentload::data::locate(&data_dir, "bfcl_v4/possible_answer");
    let mode = if bfcl.is_some() {
        RunMode::Both
    } else {
        eprintln!(
            "note: BFCL v4 data not found in {} or the cache: performance phase only \
             (scripts/fetch-data.sh fetches it)",
            data_dir.display()
        );
        RunMode::Performance
    };
    // The oracle cuts answers at Qwen3.6 token boundaries, so the edge
    // config's 1024-token cap truncates exactly what a Qwen server would.
    let tokenizer = agentload::tokens::load_qwen(&data_dir)
        .map(Arc::new)
        .map_err(anyhow::Error::msg)
        .context("the demo simulates a Qwen3.6 server")?;
    let sim = agentload_sim::start(
        agentload_sim::SimConfig {
            time_scale,
            responder: agentload_sim::ResponderConfig::Oracle {
                dataset: Some(dataset.path.clone()),
                bfcl: bfcl.as_ref().and_then(|p| p.parent()).map(PathBuf::from),
                error_rate: 0.0,
                seed: 0,
                cap_to_max_tokens: false,
            },
            ..Default::default()
        },
        tokenizer.clone(),
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await?;
    eprintln!(
        "simulator (oracle responder, time scale {time_scale}) at {}",
        sim.url()
    );
    let result = run(
        config,
        &Overrides {
            endpoint: Some(sim.url()),
            out: Some(dir),
            mode,
            tokenizer: Some(tokenizer),
            // The demo's directory is its own: each demo replaces the last.
            force: true,
            handle_signals: true,
            ..Overrides::default()
        },
    )
    .await;
    sim.shutdown().await;
    Ok(run_exit(&result?, false))
}
