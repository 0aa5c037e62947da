//! The `lockstep` command line. Only this binary touches the environment, the terminal and
//! exit codes; everything it runs is deterministic library code.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use lockstep::{RunResult, load, run};
use lockstep_reports::{RunReport, RunSource};
use lockstep_sim::Outcome;

const EXIT_CODES: &str = "\
Exit codes:
  0  every verdict matches its scenario's [expect]
  1  a verdict does not match its scenario's [expect]
  2  a bad scenario file or bad usage";

/// Deterministic simulation and chaos tests for distributed locks and leader election.
#[derive(Debug, Parser)]
#[command(name = "lockstep", version, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one scenario with one seed and judge it: verdict, seed, trace hash and a
    /// reproduce command.
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The scenario file (TOML).
    file: PathBuf,
    /// The seed; defaults to the scenario's `seed`.
    #[arg(long)]
    seed: Option<u64>,
    /// Print every event of the run (messages, timers, faults, history) before the verdict.
    #[arg(long)]
    trace: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Human-readable text and tables.
    Table,
    /// One JSON object (docs/report-format.md).
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => cmd_run(&args),
    }
}

fn cmd_run(args: &RunArgs) -> ExitCode {
    let loaded = match load(&args.file) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let scenario = &loaded.scenario;
    let seed = args.seed.unwrap_or(scenario.seed);
    let result = run(scenario, seed, args.trace);
    let mut report = report(&args.file.display().to_string(), &scenario.name, &result);
    let trace = result
        .trace
        .as_ref()
        .map(|t| render_trace(t, &scenario.node_names()));
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        Format::Table => {
            if let Some(lines) = &trace {
                for l in lines {
                    let _ = writeln!(out, "{l}");
                }
                let _ = writeln!(out);
            }
            write!(out, "{}", report.table())
        }
        Format::Json => {
            report.trace = trace;
            writeln!(out, "{}", report.json())
        }
    };
    // A closed pipe (`| head`) is not an error of the run.
    drop(written);
    if result.expected() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The report of one run of the scenario `name` from `file`.
fn report(file: &str, name: &str, result: &RunResult) -> RunReport {
    let source = RunSource {
        scenario: name.to_string(),
        file: file.to_string(),
        seed: result.seed,
        trace_hash: result.trace_hash,
        complete: result.outcome == Outcome::Completed,
        events: result.events,
        end_ns: result.history.end_ns,
    };
    let explanations = result.verdict.explain(&result.history);
    let verdict = result.verdict.clone();
    RunReport::new(
        source,
        result.property,
        verdict,
        result.unmet.clone(),
        explanations,
    )
}

/// One line per trace entry: true time, node, kind, text.
fn render_trace(entries: &[lockstep_sim::TraceEntry], names: &[String]) -> Vec<String> {
    let width = names.iter().map(String::len).max().unwrap_or(4);
    entries
        .iter()
        .map(|e| {
            let node = names.get(e.node.index()).map_or("?", String::as_str);
            format!(
                "{:>14}  {node:<width$}  {:<7}  {}",
                e.time.to_string(),
                kind(e.kind),
                e.text
            )
        })
        .collect()
}

fn kind(k: lockstep_sim::TraceKind) -> &'static str {
    use lockstep_sim::TraceKind as K;
    match k {
        K::Deliver => "recv",
        K::Drop => "lost",
        K::Hold => "held",
        K::Defer => "waits",
        K::Timer => "timer",
        K::Fault => "FAULT",
        K::Mark => "mark",
        K::Record => "history",
        K::Start => "start",
    }
}
