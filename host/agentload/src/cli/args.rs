//! The command line's shape: every subcommand and flag (clap derive).

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "agentload",
    version,
    about = "Benchmark harness for agentic LLM inference",
    after_help = "Exit codes: 0 success; 1 an error stopped the command (its cause is printed); \
2 usage error; 3 --require-valid and the run is not VALID; 4 a phase issued turns and every one \
failed; 5 a shard of a sharded run was lost (the others' records merged, run INVALID); 130 interrupted by SIGINT/SIGTERM (results written, marked INCOMPLETE; `agentload resume DIR` \
continues)."
)]
pub struct Opts {
    /// Show plugin debug logs.
    #[arg(short, long, global = true)]
    pub(super) verbose: bool,
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Run a benchmark config against an endpoint.
    #[command(
        after_help = "Examples:\n  agentload run configs/edge-full-run.toml --endpoint http://127.0.0.1:8080 --out results/edge\n  agentload run configs/agentperf-sweep-demo.toml --endpoint http://127.0.0.1:8090 --shards 4 --out results/sweep"
    )]
    Run {
        /// The run config (TOML).
        config: PathBuf,
        /// Base URL of the server (overrides `endpoint.url`).
        #[arg(long)]
        endpoint: Option<String>,
        /// The served model's name, sent as `model` (overrides `model.name`).
        #[arg(long, conflicts_with = "shards")]
        model: Option<String>,
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
        grants: Vec<agentload_config::data::ExplicitGrant>,
        /// Split the run over N local processes, each an `agentload shard`
        /// as a Kubernetes pod runs it (shard 0 coordinates and merges into
        /// the output directory; see docs/distributed.md).
        #[arg(long, value_name = "N", conflicts_with = "grants")]
        shards: Option<u32>,
        /// One full run per concurrency into OUT/r<C>/ (a datacenter
        /// submission's points), then OUT/points.json with each point's
        /// system_tps and e2e_interactivity and the non-dominated ones.
        #[arg(
            long,
            value_delimiter = ',',
            value_name = "C1,C2,...",
            conflicts_with = "shards"
        )]
        points: Vec<u64>,
        /// With --points: the declared C_max; the region checks of
        /// `agentload check` run on the points.
        #[arg(long, requires = "points")]
        max_supported_concurrency: Option<u64>,
        /// With --max-supported-concurrency: the region checks' minimum
        /// durations multiplied by this, in [0, 1] (development runs).
        #[arg(long, default_value_t = 1.0, requires = "max_supported_concurrency")]
        min_duration_scale: f64,
        /// With --shards: seconds a shard may stay silent before the run
        /// fails (closed, naming the shard).
        #[arg(long, default_value_t = 10.0, requires = "shards")]
        silence_timeout_s: f64,
        /// Run agentload's threads at real-time priority (Linux `SCHED_FIFO`,
        /// priority 1; needs root or CAP_SYS_NICE): on a busy host, other
        /// processes cannot hold its sends back by a scheduler's time slice.
        /// Refused where the system does not allow it. See docs/load-shapes.md.
        #[arg(long)]
        realtime: bool,
        #[command(flatten)]
        tls: TlsArgs,
    },
    /// One shard of a sharded run (a Kubernetes pod runs this; `run
    /// --shards N` starts N of them locally). Shard 0 also runs the
    /// coordinator and writes the merged run into --out.
    #[command(
        after_help = "Examples:\n  agentload shard run.toml --shards 4 --index 0 --run-id r1 --listen 0.0.0.0:7070 --out results/run\n  agentload shard run.toml --shards 4 --index 1 --run-id r1 --coordinator http://shard-0:7070 --out results/run"
    )]
    Shard(ShardArgs),
    /// Write a sharded run's result files from its shards' directories
    /// (their uploads in OUT/shards/<i>, or their own): percentiles are
    /// order statistics over the union of the raw records.
    #[command(
        after_help = "Examples:\n  agentload merge --out results/merged results/run/shards/0 results/run/shards/1"
    )]
    Merge {
        /// Output directory for the merged run.
        #[arg(long)]
        out: PathBuf,
        /// Shard directories (each with its shard.json).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// Check a datacenter submission's points (DIR/r<C>/, one full run per
    /// concurrency) against the Endpoints Rules v1.0 regions: directory
    /// names, 7-32 points, every point in range, coverage of Ultra Low, Low,
    /// Medium and High, and each point's minimum duration. Exits 3 when a
    /// check fails.
    #[command(
        after_help = "Examples:\n  agentload check results/points --max-supported-concurrency 1024\n  agentload check results/points --max-supported-concurrency 1024 --osl-bands readme"
    )]
    Check {
        /// The directory holding the r<C> points.
        dir: PathBuf,
        /// The declared max_supported_concurrency (C_max, above 32).
        #[arg(long)]
        max_supported_concurrency: u64,
        /// Also gate the points' inline scores, full-run OSL means and
        /// SWE-bench mean by this model's published thresholds (kimi-k3,
        /// qwen3.6-35b-a3b, deepseek-v4.1-flash, or the catalog's
        /// qwen3_6-35b-a3b, deepseek-v4_1-flash).
        #[arg(long)]
        model: Option<String>,
        /// Which OSL bands: the checker's catalog or the reference README's.
        #[arg(long, value_enum, default_value_t = OslBandSet::Checker)]
        osl_bands: OslBandSet,
        /// Multiply the minimum point durations (600 s / 1200 s) by this, in
        /// [0, 1]: a development check of short runs, which it says.
        #[arg(long, default_value_t = 1.0)]
        min_duration_scale: f64,
    },
    /// Write each datacenter point's point.yaml (DIR/r<C>/point.yaml): what
    /// the runs recorded, and the submitter's declarations from a TOML file
    /// (division, model_precision, link_to_model, dataset_type, dataset_link,
    /// shared_src, shared_docs, seed_set, target_cohort, checkpoint, ...).
    #[command(
        after_help = "Examples:\n  agentload point-yaml results/points --max-supported-concurrency 1024 --disclosure disclosure.toml\n  agentload point-yaml results/points --max-supported-concurrency 1024 --draft"
    )]
    PointYaml {
        /// The directory holding the r<C> points (agentload run directories).
        dir: PathBuf,
        /// The declared max_supported_concurrency (C_max).
        #[arg(long)]
        max_supported_concurrency: u64,
        /// TOML whose top-level keys are point.yaml keys.
        #[arg(long)]
        disclosure: Option<PathBuf>,
        /// Write required fields nobody gave as null instead of refusing.
        #[arg(long)]
        draft: bool,
    },
    /// The closed-loop tool sandbox: run tool calls over a workspace
    /// archive; measure the sandbox against real bash.
    #[command(
        after_help = "Examples:\n  agentload tools exec --workspace repo.tar 'grep -rn TODO . | head' 'git status'\n  agentload tools fidelity --generated"
    )]
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// Build data sets for tests and comparisons.
    #[command(
        after_help = "Examples:\n  agentload dataset datacenter --edge data/agentic_coding_2.5h.jsonl --out data/agentic_combined.jsonl"
    )]
    Dataset {
        #[command(subcommand)]
        command: DatasetCommand,
    },
    /// Kubernetes: the objects that run a sharded run, and its results.
    #[command(
        after_help = "Examples:\n  agentload k8s manifest run.toml --shards 16 --image registry.example/agentload:1.0 > objects.yaml\n  agentload k8s fetch http://127.0.0.1:7070 results/k8s"
    )]
    K8s {
        #[command(subcommand)]
        command: K8sCommand,
    },
    /// Continue an interrupted or killed run from its own files: completed
    /// turns are kept, sessions cut short continue after their last
    /// recorded turn, then every summary and report is written anew.
    #[command(
        after_help = "Examples:\n  agentload resume results/edge\n  agentload resume results/edge --endpoint http://new-host:8080 --require-valid"
    )]
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
        grants: Vec<agentload_config::data::ExplicitGrant>,
    },
    /// Score a finished run's recorded completions again (no endpoint).
    #[command(
        after_help = "Examples:\n  agentload rescore results/edge                    # same scorers: reports reproduced byte for byte\n  agentload rescore results/edge --phase accuracy --scorer target/plugins/bfcl_ast_v2.wasm --out results/edge-v2   # the accuracy gate alone, with another scorer"
    )]
    Rescore {
        /// The run's output directory.
        run_dir: PathBuf,
        /// Scorer to use instead of each phase's own: a name or a `.wasm` path.
        #[arg(long)]
        scorer: Option<String>,
        /// Re-score this phase alone (default: every phase with a scorer).
        #[arg(long, value_enum)]
        phase: Option<RescorePhase>,
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
    #[command(
        after_help = "Examples:\n  agentload diff results/edge results/edge-v2\n  agentload diff results/a results/b --all --json > diff.json"
    )]
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
    #[command(
        after_help = "Examples:\n  agentload report results/demo                     # results/demo/report.html\n  agentload report results/a results/b --label before --label after --out compare.html"
    )]
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
    /// Read every telemetry source of a run config once (`[telemetry]`, the
    /// sweep's power command) and show what each maps to: a check before a
    /// long run. Exits 1 when a source fails.
    #[command(
        after_help = "Examples:\n  agentload telemetry configs/edge-full-run.toml --endpoint http://127.0.0.1:8080"
    )]
    Telemetry {
        /// The run config (TOML).
        config: PathBuf,
        /// Base URL of the server (overrides `endpoint.url`; scrape paths
        /// alone are on it).
        #[arg(long)]
        endpoint: Option<String>,
    },
    /// Run config files: check one as a run reads it, print its JSON Schema
    /// or the reference page of every key.
    #[command(
        after_help = "Examples:\n  agentload config check configs/edge-full-run.toml\n  agentload config schema > agentload.schema.json"
    )]
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Export a result directory's turns, sessions and phases as tables, or
    /// its run as Artificial Analysis's agentperf-local files.
    #[command(
        after_help = "Examples:\n  agentload export results/demo --csv              # results/demo/export/{turns,sessions,phases}.csv\n  agentload export results/demo --aa --out aa-files"
    )]
    Export {
        /// The result directory.
        dir: PathBuf,
        /// CSV tables: turns.csv, sessions.csv, phases.csv (default DIR/export).
        #[arg(long, required_unless_present = "aa", conflicts_with = "aa")]
        csv: bool,
        /// AA's result files from the run's records: turns.jsonl, tasks.json,
        /// tools.json, failures.json, summary.json (default DIR/aa; never
        /// replaced: an existing set is refused).
        #[arg(long)]
        aa: bool,
        /// Output directory.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Lay out finished runs as an MLPerf endpoints submission tree, as the
    /// reference's publish_submission.py does, checking the fields the
    /// submission checker reads.
    #[command(
        after_help = "Examples:\n  agentload submission --run results/edge --submitter Org --system Box --benchmark qwen3.6-27b --output submission --scaffold"
    )]
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
        /// Replace an existing submission tree's files and templates.
        #[arg(long)]
        force: bool,
    },
    /// The Pareto frontier (total throughput vs P25 output speed) across
    /// several sweeps: run directories or their `sweep/pareto.json` files.
    #[command(
        after_help = "Examples:\n  agentload pareto results/sweep results/tuned --label base --label tuned\n  agentload pareto results/sweep --x mlperf-tps-per-user --out pareto.json"
    )]
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
        /// The interactivity the frontier is over (its x axis).
        #[arg(long, value_enum, default_value_t = Interactivity::AaP25)]
        x: Interactivity,
    },
    /// Measure the harness's own costs and print a table.
    #[command(
        after_help = "Examples:\n  agentload bench                                   # the default sections, a table\n  agentload bench --sections streams --levels 1,1000 --sim-cpus 1"
    )]
    Bench {
        /// Sections to run: streams, tls, agents, aa-agents, build, answers, counting, load,
        /// edge, shards, tools, closed (agents, aa-agents, counting, shards, tools and closed
        /// are not in the default set: they run for minutes).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "streams,tls,build,answers,load,edge"
        )]
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
        sim_cpus: Option<crate::bench::affinity::CpuList>,
        /// Agents kept alive (agents and aa-agents sections); closed-loop agents (closed
        /// section).
        #[arg(long, default_value_t = 1000)]
        agents: usize,
        /// Seconds of steady state measured (agents and aa-agents sections, each level; after
        /// 5 s of warm-up).
        #[arg(long, default_value_t = 60.0)]
        agents_seconds: f64,
        /// Tokens per second of every simulated stream (agents and aa-agents sections).
        #[arg(long, default_value_t = 5.0)]
        agents_tps: f64,
        /// Factor on the synthetic workload's lengths (agents section; 1 is
        /// AA-AgentPerf's shape, a mean prompt of about 27K tokens).
        #[arg(long, default_value_t = 1.0)]
        agents_scale: f64,
        /// Per-stream output speed assumed at AA-AgentPerf's rack point, for
        /// the projection (agents section).
        #[arg(long, default_value_t = 50.0)]
        rack_stream_tps: f64,
        /// Workload instances the sessions are spread over (agents section).
        #[arg(long, default_value_t = 1)]
        agents_instances: usize,
        /// Agents of the aa-agents section's first level: memory per agent is the growth
        /// from it to `--agents`.
        #[arg(long, default_value_t = 100)]
        aa_base_agents: usize,
        /// Rounds of the aa-agents section, each a run of AA's traces and one of
        /// agentic-synth (their order swapped every other round).
        #[arg(long, default_value_t = 2)]
        aa_rounds: usize,
        /// Streams of the TLS section's CPU comparison.
        #[arg(long, default_value_t = 1000)]
        tls_streams: usize,
        /// Connections the TLS section opens to time handshakes (full, then resumed).
        #[arg(long, default_value_t = 200)]
        tls_handshakes: usize,
        /// Rounds of the TLS section's CPU comparison, each a plain and a TLS level (their
        /// order swapped every other round).
        #[arg(long, default_value_t = 3)]
        tls_rounds: usize,
        /// Write the rows (and the streams levels) as JSON here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Serve the simulated OpenAI-compatible endpoint until stopped.
    #[command(
        after_help = "Examples:\n  agentload sim --port 8090 --responder oracle --dataset data/agentic_coding_2.5h.jsonl --time-scale 0.02\n  agentload sim --port 8443 --responder fill --tls-self-signed certs"
    )]
    Sim(SimArgs),
    /// Run the edge config (performance, then the BFCL accuracy gate when
    /// its data is there) against the in-process simulator.
    #[command(
        after_help = "Examples:\n  agentload demo                                    # results/demo: report.txt, report.html\n  agentload demo --out /tmp/demo --time-scale 0.0005"
    )]
    Demo {
        /// Output directory.
        #[arg(long, default_value = "results/demo")]
        out: PathBuf,
        /// Simulated time scale (1.0 = real llama.cpp-like speeds).
        #[arg(long, default_value_t = crate::demo::TIME_SCALE)]
        time_scale: f64,
    },
    /// Plugin authoring: scaffold a plugin crate, check a built component.
    #[command(
        after_help = "Examples:\n  agentload plugin new my-workload --dir plugins\n  agentload plugin check target/wasm32-wasip2/plugin/my_workload.wasm --data prompts=prompts.jsonl"
    )]
    Plugin {
        #[command(subcommand)]
        command: crate::authoring::PluginCommand,
    },
}

/// TLS settings on the command line, over the config's `[endpoint.tls]`.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct TlsArgs {
    /// Trust the CA certificates in this PEM file besides the roots
    /// (`endpoint.tls.ca_file`).
    #[arg(long, value_name = "PEM")]
    pub(crate) ca_file: Option<PathBuf>,
    /// Do not verify the server's certificate (`endpoint.tls.insecure`):
    /// said on the console, recorded in the results, refused with
    /// --submission.
    #[arg(long)]
    pub(crate) insecure: bool,
}

impl TlsArgs {
    /// The transport these flags describe (Mozilla's roots, the CA file, no proxy), for a
    /// command with no run config.
    pub(crate) fn transport(&self) -> anyhow::Result<agentload_client::Transport> {
        Ok(agentload_client::Transport::new(
            &agentload_client::TlsOptions {
                ca_file: self.ca_file.clone(),
                insecure: self.insecure,
                ..Default::default()
            },
            &agentload_client::ProxyOptions::None,
        )?)
    }

    /// The config with these settings over its own.
    pub(crate) fn apply(&self, config: &mut agentload_config::RunConfig) {
        if let Some(ca) = &self.ca_file {
            config.endpoint.tls.ca_file = Some(ca.clone());
        }
        config.endpoint.tls.insecure |= self.insecure;
    }

    /// Whether any flag was given.
    pub(crate) fn given(&self) -> bool {
        self.ca_file.is_some() || self.insecure
    }
}

/// `agentload shard`'s arguments.
#[derive(clap::Args)]
pub(super) struct ShardArgs {
    /// The run config (TOML); every shard must run the same.
    pub(super) config: PathBuf,
    /// Shards in the run.
    #[arg(long)]
    pub(super) shards: u32,
    /// This shard's index (default: $JOB_COMPLETION_INDEX).
    #[arg(long)]
    pub(super) index: Option<u32>,
    /// The run's id (every shard gives the same).
    #[arg(long)]
    pub(super) run_id: String,
    /// Shard 0's coordinator, `http://HOST:PORT` (shard 0 itself may leave it out).
    #[arg(long)]
    pub(super) coordinator: Option<String>,
    /// Where shard 0's coordinator listens.
    #[arg(long, default_value = "0.0.0.0:7070")]
    pub(super) listen: std::net::SocketAddr,
    /// Shard 0 writes the address it listens on to this file.
    #[arg(long)]
    pub(super) addr_file: Option<PathBuf>,
    /// The merged run's directory (shard 0); shards' uploads go to OUT/shards/<i>.
    #[arg(long)]
    pub(super) out: PathBuf,
    /// This shard's own run directory (default OUT/work/<i>).
    #[arg(long)]
    pub(super) work: Option<PathBuf>,
    /// Base URL of the server (overrides `endpoint.url`).
    #[arg(long)]
    pub(super) endpoint: Option<String>,
    #[arg(long, value_enum, default_value_t = Mode::Both)]
    pub(super) mode: Mode,
    #[arg(long)]
    pub(super) submission: bool,
    /// Continue this shard's run in its directory.
    #[arg(long)]
    pub(super) resume: bool,
    /// Seconds the start barrier waits for the last shard.
    #[arg(long, default_value_t = 300.0)]
    pub(super) barrier_timeout_s: f64,
    /// Seconds a shard may stay silent before the run fails.
    #[arg(long, default_value_t = 10.0)]
    pub(super) silence_timeout_s: f64,
    /// Seconds shard 0 serves the merged results after writing them.
    #[arg(long, default_value_t = 0.0)]
    pub(super) linger_s: f64,
    /// Run this shard's threads at real-time priority (as `run --realtime`).
    #[arg(long)]
    pub(super) realtime: bool,
    /// MiB the shards' uploads may take together on shard 0 (past it an
    /// upload is refused, and its shard fails the run closed).
    #[arg(long, default_value_t = agentload_shards::coordinator::DEFAULT_UPLOAD_BUDGET >> 20)]
    pub(super) upload_budget_mib: u64,
    /// Exit 3 unless the merged run is VALID (shard 0).
    #[arg(long)]
    pub(super) require_valid: bool,
}

/// `agentload dataset`.
#[derive(Subcommand)]
pub(super) enum DatasetCommand {
    /// A datacenter-shaped stand-in for the unpublished
    /// `agentic_combined.jsonl`: the edge trajectories as `dc-<id>` and
    /// `sim_N` workflow conversations with intent codes and tool delays.
    #[command(
        after_help = "Examples:\n  agentload dataset datacenter --edge data/agentic_coding_2.5h.jsonl --out data/agentic_combined.jsonl --workflow 24"
    )]
    Datacenter {
        /// The edge trajectories (agentic_coding_2.5h.jsonl).
        #[arg(long)]
        edge: PathBuf,
        /// Where the JSONL goes.
        #[arg(long)]
        out: PathBuf,
        /// How many sim_N workflow conversations.
        #[arg(long, default_value_t = 24)]
        workflow: u32,
        /// Every recorded tool delay is multiplied by this.
        #[arg(long, default_value_t = 1.0)]
        delay_scale: f64,
        /// Draws the workflow conversations.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Replace an existing --out (never the --edge input).
        #[arg(long)]
        force: bool,
    },
    /// Pack a repository as a workspace archive of the tool sandbox: a
    /// deterministic tar of the files git tracks (every file outside a git
    /// repository) and the HEAD commit; prints its sha256.
    #[command(
        after_help = "Examples:\n  agentload dataset workspace ~/src/myrepo --out myrepo.tar"
    )]
    Workspace {
        /// The repository (or any directory).
        dir: PathBuf,
        /// The archive to write (`.tar`, or `.tar.gz` to compress).
        #[arg(long)]
        out: PathBuf,
    },
    /// Pack the workspaces of an AA replay's tasks (each task's
    /// `tool_environment.workspace_path`) as workspace archives, one per
    /// task; prints the `[tools.workspaces.<task>]` tables of a closed-loop
    /// run.
    #[command(
        after_help = "Examples:\n  agentload dataset aa-workspaces ~/.cache/agentload/data/aa_replays/agentperf-default-v1/manifest-x86_64.json --out ~/.cache/agentload/data/aa_replays/workspaces"
    )]
    AaWorkspaces {
        /// The replay's manifest.
        manifest: PathBuf,
        /// The folder the archives are written to (`<task_id>.tar`).
        #[arg(long)]
        out: PathBuf,
    },
}

/// `agentload tools`.
#[derive(Subcommand)]
pub(super) enum ToolsCommand {
    /// Run tool calls in one sandbox session over a workspace archive;
    /// print what each gave.
    #[command(
        after_help = "Examples:\n  agentload tools exec --workspace repo.tar 'grep -rn TODO . | head' \"sed -i 's/a/b/' x.py\" 'git diff'\n  agentload tools exec --json --workspace repo.tar --calls calls.jsonl"
    )]
    Exec(crate::tools::cli::ExecArgs),
    /// The sandbox's fidelity to real bash, call by call, with every miss's
    /// cause: AA's recorded tool calls, or a generated repository.
    #[command(
        after_help = "Examples:\n  agentload tools fidelity --generated\n  agentload tools fidelity --aa ~/.cache/agentload/data/aa_replays/agentperf-default-v1 --out fidelity.json"
    )]
    Fidelity(crate::tools::fidelity::FidelityArgs),
}

/// `agentload config`.
#[derive(Subcommand)]
pub(super) enum ConfigCommand {
    /// Load and check config files as `run` does, sending nothing: an
    /// unknown key, a value of the wrong type or one the checks refuse is
    /// named with FILE:LINE:COLUMN and its key's path. A named ruleset's
    /// deviations are listed the same way. Exits 1 when a file fails.
    #[command(
        after_help = "Examples:\n  agentload config check configs/*.toml\n  agentload config check --submission configs/edge-full-run.toml"
    )]
    Check {
        /// The run configs (TOML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Also refuse what a submission run refuses: no ruleset, or a
        /// deviation from it.
        #[arg(long)]
        submission: bool,
    },
    /// Print the run config's JSON Schema (draft 2020-12), generated from
    /// the config types: for editors and validators.
    #[command(after_help = "Examples:\n  agentload config schema > agentload.schema.json")]
    Schema,
    /// Print the configuration reference (Markdown) generated from the
    /// schema: docs/reference/config.md is this output.
    #[command(after_help = "Examples:\n  agentload config reference > config.md")]
    Reference,
}

/// `agentload k8s`.
#[derive(Subcommand)]
pub(super) enum K8sCommand {
    /// Print the ConfigMap, headless Service and Indexed Job (YAML, for
    /// `kubectl apply -f -`).
    #[command(
        after_help = "Examples:\n  agentload k8s manifest run.toml --shards 16 --image registry.example/agentload:1.0 > objects.yaml\n  kubectl apply -f objects.yaml"
    )]
    Manifest(crate::shards::k8s::ManifestOpts),
    /// Download the merged run from shard 0's coordinator (e.g. through
    /// `kubectl port-forward pod/NAME-0 7070`), each file checked against
    /// its size and sha256; OUT gets the files only once all are verified.
    #[command(
        after_help = "Examples:\n  kubectl port-forward pod/agentload-0 7070 &\n  agentload k8s fetch http://127.0.0.1:7070 results/k8s"
    )]
    Fetch {
        /// The coordinator, e.g. http://127.0.0.1:7070 (https:// behind a
        /// TLS ingress).
        url: String,
        /// Where the files go (a new or empty folder, unless --force).
        out: PathBuf,
        /// No byte for this many seconds fails the fetch; each file must
        /// also come whole within it plus its size at 1 MiB/s.
        #[arg(long, default_value_t = 30.0)]
        timeout_s: f64,
        /// Write into an OUT that already holds files (same names replaced).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        tls: TlsArgs,
    },
}

/// `agentload check --osl-bands`.
#[derive(clap::ValueEnum, Clone, Copy)]
pub(super) enum OslBandSet {
    /// The checker's catalog (EV @131fe1b2): what the automated checks apply.
    Checker,
    /// The reference README's.
    Readme,
}

/// The interactivity definitions (`agentload pareto --x`).
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Interactivity {
    /// AA-AgentPerf: P25 of per-request output speed after the first token.
    AaP25,
    /// MLPerf Endpoints: Σ output tokens / Σ turn seconds (e2e_interactivity).
    MlperfE2e,
    /// MLPerf Endpoints: 1000 / TPOT p90 ms (tps_per_user).
    MlperfTpsPerUser,
    /// InferenceX AgentX: 1 / P90(E2EL / OSL).
    AgentxP90,
}

impl From<Interactivity> for agentload_results::metrics::Definition {
    fn from(i: Interactivity) -> Self {
        match i {
            Interactivity::AaP25 => Self::AaP25,
            Interactivity::MlperfE2e => Self::MlperfE2e,
            Interactivity::MlperfTpsPerUser => Self::MlperfTpsPerUser,
            Interactivity::AgentxP90 => Self::AgentxP90,
        }
    }
}

/// A run's phase that `agentload rescore --phase` re-scores alone.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum RescorePhase {
    /// The performance phase (`turns.jsonl`).
    Performance,
    /// The accuracy gate (`accuracy/turns.jsonl`).
    Accuracy,
}

impl From<RescorePhase> for crate::scoring::PhaseKind {
    fn from(p: RescorePhase) -> Self {
        match p {
            RescorePhase::Performance => Self::Performance,
            RescorePhase::Accuracy => Self::Accuracy,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Mode {
    Perf,
    Accuracy,
    Both,
}

#[derive(clap::Args)]
pub(super) struct SimArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8080)]
    pub(super) port: u16,
    /// Run on these CPUs only (e.g. `1`, `2-3`): keeps the simulator off the client's cores.
    #[arg(long, value_name = "LIST")]
    pub(super) cpus: Option<crate::bench::affinity::CpuList>,
    /// What the assistant answers.
    #[arg(long, value_enum, default_value_t = ResponderKind::Echo)]
    pub(super) responder: ResponderKind,
    /// Trajectory dataset for `oracle`.
    #[arg(long)]
    pub(super) dataset: Option<PathBuf>,
    /// BFCL v4 data folder (`bfcl_v4`) for `oracle`: BFCL entry ids as
    /// session ids get the gold calls.
    #[arg(long)]
    pub(super) bfcl: Option<PathBuf>,
    /// Canned completions for `script`.
    #[arg(long)]
    pub(super) script: Option<PathBuf>,
    /// Probability that `oracle` perturbs a turn's tool calls.
    #[arg(long, default_value_t = 0.0)]
    pub(super) error_rate: f64,
    /// Seed of the perturbation draws.
    #[arg(long, default_value_t = 0)]
    pub(super) seed: u64,
    /// Make `oracle` cut answers at the request's `max_tokens` as llama.cpp
    /// would (by default it replays each recorded turn whole).
    #[arg(long)]
    pub(super) oracle_cap: bool,
    /// Prefill rate, tokens per second.
    #[arg(long, default_value_t = 1000.0)]
    pub(super) prefill_tps: f64,
    /// Decode rate, tokens per second.
    #[arg(long, default_value_t = 50.0)]
    pub(super) decode_tps: f64,
    /// Context size in tokens.
    #[arg(long, default_value_t = 32768)]
    pub(super) ctx_size: u32,
    /// Multiplies every simulated duration.
    #[arg(long, default_value_t = 1.0)]
    pub(super) time_scale: f64,
    /// Sequences decoded at once (continuous batching); more requests queue.
    #[arg(long, default_value_t = 1)]
    pub(super) slots: u32,
    /// Decode step growth per extra active sequence: a step takes
    /// (1 + s·(n−1)) / decode-tps.
    #[arg(long, default_value_t = 0.1)]
    pub(super) decode_batch_slowdown: f64,
    /// Prompt tokens prefilled per batch iteration (chunked prefill).
    #[arg(long, default_value_t = 512)]
    pub(super) prefill_chunk_tokens: u32,
    /// Capacity of a prefix cache shared by all slots, in tokens (0: each
    /// slot reuses only its own previous prompt, as llama.cpp).
    #[arg(long, default_value_t = 0)]
    pub(super) cache_tokens: u64,
    /// How the simulator counts and cuts tokens: `qwen` (the Qwen3.6 BPE,
    /// found in the data directory or cache) or `approx` (about 4 bytes a
    /// token, needs no data).
    #[arg(long, value_enum, default_value_t = SimTokenizer::Qwen)]
    pub(super) tokenizer: SimTokenizer,
    /// Whose model facts to report: `llama-cpp` (`GET /props` with
    /// `default_generation_settings.n_ctx`, `meta.n_ctx` in `/v1/models`) or
    /// `vllm` (no `/props`; `max_model_len` in `/v1/models`).
    #[arg(long, value_enum, default_value_t = SimServeAs::LlamaCpp)]
    pub(super) serve_as: SimServeAs,
    /// Inject a fault into the N-th chat-completions request (repeatable;
    /// `--help` lists the kinds).
    #[arg(long = "fault", value_name = "KIND@N", long_help = agentload_sim::FAULT_HELP)]
    pub(super) faults: Vec<agentload_sim::Fault>,
    /// Append every chat request (number, X-Session-ID, body, and the body's
    /// bytes and sha256 as sent) to this JSONL file, to compare what two
    /// clients sent byte for byte.
    #[arg(long, value_name = "FILE")]
    pub(super) log_requests: Option<PathBuf>,
    /// Write one JSON line per chat request to this file when it ends: its number,
    /// X-Session-ID, arrival on CLOCK_MONOTONIC (`received_mono_ns`), outcome, and prompt,
    /// cached and completion tokens (what a client delivered, on the server's own clock).
    #[arg(long, value_name = "FILE")]
    pub(super) request_stamps: Option<PathBuf>,
    /// Serve HTTPS with this certificate chain (PEM; needs --tls-key).
    #[arg(
        long,
        value_name = "PEM",
        requires = "tls_key",
        conflicts_with = "tls_self_signed"
    )]
    pub(super) tls_cert: Option<PathBuf>,
    /// The --tls-cert's private key (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub(super) tls_key: Option<PathBuf>,
    /// Require client certificates issued by a CA in this PEM file (mTLS).
    #[arg(long, value_name = "PEM")]
    pub(super) tls_client_ca: Option<PathBuf>,
    /// Serve HTTPS with a throwaway CA made now: DIR/ca.pem (the file a client
    /// trusts: --ca-file), DIR/server.pem and DIR/server.key (for localhost,
    /// 127.0.0.1 and ::1), DIR/client.pem and DIR/client.key (for mTLS).
    #[arg(long, value_name = "DIR")]
    pub(super) tls_self_signed: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum SimServeAs {
    LlamaCpp,
    Vllm,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum SimTokenizer {
    Qwen,
    Approx,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ResponderKind {
    Echo,
    /// Exactly the request's `max_tokens` tokens of filler (the synthetic
    /// agentic workload's drawn output lengths).
    Fill,
    Oracle,
    Script,
}
