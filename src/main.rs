//! The `lockstep` command line. Only this binary touches the environment, the terminal and
//! exit codes; everything it runs is deterministic library code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use lockstep::suite::{self, WallTimes, run_report};
use lockstep::{Loaded, MAX_SEEDS, load, run};

const EXIT_CODES: &str = "\
Exit codes:
  0  every verdict matches its scenario's [expect]
  1  a verdict does not match its scenario's [expect]
  2  a bad scenario file, bad usage, or an output file that cannot be written";

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
    /// Check every scenario under the paths over its seeds against its [expect]: a summary
    /// table, JSON or JUnit XML for CI.
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
    /// Search seeds for a run that violates the scenario's property, shrink its fault
    /// schedule to a minimal one, and write a scenario file that replays it.
    #[command(after_help = HUNT_EXIT_CODES)]
    Hunt(HuntArgs),
}

const HUNT_EXIT_CODES: &str = "\
Exit codes:
  0  no seed of the range violated the property
  1  a violation was found, shrunk and written to --out
  2  a bad scenario file, bad usage, or an output file that cannot be written";

#[derive(Debug, clap::Args)]
struct HuntArgs {
    /// The scenario file (TOML).
    file: PathBuf,
    /// Where to write the minimal scenario (replaced whole, never left half-written).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// How many seeds to search, from --from.
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=MAX_SEEDS))]
    seeds: u64,
    /// The first seed; defaults to the scenario's `seed`.
    #[arg(long, value_name = "SEED")]
    from: Option<u64>,
    /// Worker threads for the search; defaults to the machine's cores. The seed found does
    /// not depend on it.
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Replace the file's [[fault]] list and [chaos] section with this chaos profile.
    #[arg(long, value_name = "PROFILE")]
    chaos: Option<String>,
    /// Bound on the runs the shrink may make.
    #[arg(long, value_name = "N", default_value_t = 2_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_tries: u64,
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

#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// Scenario files, and directories searched recursively for *.toml files.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Run each scenario with the N seeds from its `seed` (seed, seed+1, ...) instead of the
    /// `seeds` it declares.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_SEEDS))]
    seeds: Option<u64>,
    /// Also write the result as JUnit XML to FILE (replaced whole, never left half-written).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
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
        Command::Check(args) => cmd_check(&args),
        Command::Hunt(args) => cmd_hunt(&args),
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
    let mut report = run_report(&args.file.display().to_string(), &scenario.name, &result);
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

fn cmd_check(args: &CheckArgs) -> ExitCode {
    #[allow(
        clippy::disallowed_methods,
        reason = "wall-clock time of the whole command, for people and CI; no run reads it"
    )]
    let now = std::time::Instant::now;
    let start = now();
    let Some(loaded) = load_suite(args) else {
        return ExitCode::from(2);
    };
    let mut times = WallTimes::default();
    let mut last = now();
    let result = suite::check_suite_observed(&loaded, args.seeds, |_| {
        let t = now();
        times.scenarios.push(t - last);
        last = t;
    });
    times.total = now() - start;
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        Format::Table => write!(out, "{}", result.table(&times)),
        Format::Json => writeln!(out, "{}", result.json()),
    };
    // A closed pipe (`| head`) is not an error of the check.
    drop(written);
    if let Some(junit) = &args.junit {
        let xml = lockstep::junit::render(&result, &times);
        if let Err(e) = write_atomically(junit, &xml, "JUnit file") {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    }
    if result.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn cmd_hunt(args: &HuntArgs) -> ExitCode {
    let file = &args.file;
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: cannot read the file: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let text = match &args.chaos {
        Some(profile) => match lockstep::scenario::with_chaos(&text, file, profile) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        },
        None => text,
    };
    let scenario = match lockstep::parse(&text, file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = output_writable(&args.out, "minimal scenario") {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        |j| j as usize,
    );
    let options = lockstep::hunt::HuntOptions {
        from: args.from.unwrap_or(scenario.seed),
        seeds: args.seeds,
        jobs,
        max_tries: args.max_tries,
    };
    let profile = args
        .chaos
        .as_deref()
        .map(|p| format!(" under chaos profile {p}"))
        .unwrap_or_default();
    let found = match lockstep::hunt::hunt(&text, file, &scenario, options) {
        Ok(lockstep::hunt::Hunted::Clean { seeds }) => {
            println!(
                "hunt     {}{profile}\nclean    no violation of {} in {seeds} seeds from {}",
                scenario.name, scenario.expect.property, options.from
            );
            return ExitCode::SUCCESS;
        }
        Ok(lockstep::hunt::Hunted::Found(found)) => found,
        Err(e) => {
            eprintln!("{}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    if let Err(e) = write_atomically(&args.out, &found.text, "minimal scenario") {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    let out = args.out.display();
    let faults: Vec<&str> = found
        .text
        .split("[[fault]]")
        .skip(1)
        .map(|f| f.split("\n\n").next().unwrap_or("").trim())
        .collect();
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "hunt     {}{profile}", scenario.name);
    let _ = writeln!(
        o,
        "found    seed {} (seed {} of the search): {} {}",
        found.seed, found.seeds_tried, scenario.expect.property, found.replay.judged
    );
    let _ = writeln!(
        o,
        "shrunk   {} faults -> {}, run {} -> {}, in {} runs{}",
        found.original.faults.len(),
        found.shrunk.faults.len(),
        found.original.duration,
        found.shrunk.duration,
        found.tries,
        if found.complete {
            ""
        } else {
            " (stopped at --max-tries)"
        }
    );
    for f in faults {
        let _ = writeln!(o, "  - {}", f.replace('\n', "; "));
    }
    let _ = writeln!(o, "wrote    {out}");
    let _ = writeln!(
        o,
        "replay   lockstep run {out}   (trace {:016x}, {} events)",
        found.replay.trace_hash, found.replay.events
    );
    let why = found.replay.verdict.explain(&found.replay.history);
    if !why.is_empty() {
        let _ = writeln!(o, "why:");
        for w in why.iter().take(5) {
            let _ = writeln!(o, "  - {w}");
        }
    }
    ExitCode::from(1)
}

/// Finds and loads every scenario file under the paths and checks the JUnit file's path,
/// printing each problem. Everything that can be wrong with the input is found before the
/// first run, so a bad file gives errors only, never a partial table or JUnit file.
fn load_suite(args: &CheckArgs) -> Option<Vec<Loaded>> {
    let files = match suite::scenario_files(&args.paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{e}");
            return None;
        }
    };
    let mut loaded = Vec::new();
    let mut bad = false;
    for f in &files {
        match load(f) {
            Ok(l) => loaded.push(l),
            Err(e) => {
                eprintln!("{e}");
                bad = true;
            }
        }
    }
    if let Some(Err(e)) = args
        .junit
        .as_deref()
        .map(|f| output_writable(f, "JUnit file"))
    {
        eprintln!("{e}");
        bad = true;
    }
    (!bad).then_some(loaded)
}

/// Fails early, before any run, when an output file (`what`) could plainly not be written: its
/// directory does not exist, or it is a directory.
fn output_writable(file: &Path, what: &str) -> Result<(), String> {
    let dir = parent_dir(file);
    let problem = if !dir.is_dir() {
        format!("no directory {}", dir.display())
    } else if file.is_dir() {
        "it is a directory".to_string()
    } else {
        return Ok(());
    };
    Err(format!(
        "{}: cannot write the {what}: {problem}",
        file.display()
    ))
}

/// The directory of `file`; `.` for a bare file name.
fn parent_dir(file: &Path) -> &Path {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes `text` to a temporary file beside `file` and renames it over `file`, so that a
/// reader (a CI server collecting reports) sees the old file or the whole new one, never a
/// part.
fn write_atomically(file: &Path, text: &str, what: &str) -> Result<(), String> {
    let name = file
        .file_name()
        .ok_or_else(|| format!("{}: not a file name", file.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = parent_dir(file).join(tmp_name);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&tmp, file));
    renamed.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: cannot write the {what}: {e}", file.display())
    })
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
