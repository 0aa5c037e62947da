//! The `lockstep` command line. Only this binary touches the environment, the terminal and
//! exit codes; everything it runs is deterministic library code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use lockstep::files::{self, Input, Output};
use lockstep::suite::{self, WallTimes, run_report};
use lockstep::sweep::{self, Shard, SweepConfig, SweepSummary, WallTime};
use lockstep::{Loaded, MAX_SEEDS, load};

const EXIT_CODES: &str = "\
Exit codes:
  0  every verdict matches its scenario's [expect]
  1  a verdict does not match its scenario's [expect]
  2  a bad scenario file, bad usage, or an output file that cannot be written

A miss (exit 1) is classed in the JSON and JUnit output as safety, liveness or unknown.";

/// `0.1.0 (commit 1a2b3c4)`: the commit is the one built, `unknown` outside git (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("LOCKSTEP_COMMIT"),
    ")"
);

/// Deterministic simulation and chaos tests for distributed locks and leader election.
#[derive(Debug, Parser)]
#[command(name = "lockstep", version = VERSION, after_help = EXIT_CODES)]
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
    /// Judge a history file (JSON Lines, docs/history.md), recorded by `run --history` or by
    /// a real system: the verdict and explanations of `run`, without seed or trace hash.
    #[command(after_help = JUDGE_EXIT_CODES)]
    Judge(JudgeArgs),
    /// Check every scenario under the paths over its seeds against its [expect]: a summary
    /// table, JSON or JUnit XML for CI.
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
    /// Run one scenario over many consecutive seeds on several threads: rates of each
    /// verdict and violation with confidence intervals, liveness percentiles, the first
    /// failing seeds with reproduce commands.
    #[command(after_help = EXIT_CODES)]
    Sweep(SweepArgs),
    /// Combine the JSON summaries of the shards of one sweep (`sweep --shard I/N --format
    /// json`) into the summary of the whole.
    #[command(after_help = EXIT_CODES)]
    Merge(MergeArgs),
    /// Search seeds for a run that violates the scenario's property, shrink its fault
    /// schedule to a minimal one, and write a scenario file that replays it.
    #[command(after_help = HUNT_EXIT_CODES)]
    Hunt(HuntArgs),
    /// Run a scenario over the grid of its [sweep] section: the violation rate of its
    /// property in each cell, as a table or JSON, and drawn as SVG with --out.
    #[command(after_help = MAP_EXIT_CODES)]
    Map(MapArgs),
    /// Compare scenarios (each run over its seeds) and sweep summaries side by side, with the
    /// first failing seeds of each explained: HTML, Markdown or JSON by the extension of --out,
    /// and a table on stdout.
    #[command(after_help = REPORT_EXIT_CODES)]
    Report(ReportArgs),
    /// Review candidate lock designs for one job: each design swept under each fault class
    /// alone, a matrix of violation rates, safety against cost, and a recommendation derived
    /// from the figures; a page (.html), Markdown or JSON with --out, and text on stdout.
    #[command(after_help = REVIEW_EXIT_CODES)]
    Review(ReviewArgs),
    /// List the checker's metrics: the figures `[expect]` bounds, sweeps, reports and reviews
    /// read by key, with their units, which way is better and what a bound on each is.
    Metrics,
    /// Print a completion script for a shell (`lockstep completions bash >
    /// ~/.local/share/bash-completion/completions/lockstep`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

const JUDGE_EXIT_CODES: &str = "\
Exit codes:
  0  the verdict of the property is the one expected (--expect, valid by default)
  1  it is not (an invalid or unknown verdict when valid is expected)
  2  a malformed history (each problem as FILE:LINE: problem), or bad usage";

#[derive(Debug, clap::Args)]
struct JudgeArgs {
    /// The history file (JSON Lines, docs/history.md); `-` reads it from standard input.
    file: PathBuf,
    /// The property to judge; defaults to the header's `property`, else resource.
    #[arg(long, value_enum)]
    property: Option<PropertyArg>,
    /// The verdict expected of the property; any other exits 1.
    #[arg(long, value_enum, default_value_t = ExpectArg::Valid)]
    expect: ExpectArg,
    /// Check that fencing tokens increase in grant order, whatever the header says.
    #[arg(long)]
    tokens_monotonic: bool,
    /// Measure leadership (terms, two leaders, failover), whatever the header says.
    #[arg(long)]
    leadership: bool,
    /// True time (ns) from which no fault is in force, to measure recovery; overrides the
    /// header's `quiet_from_ns`.
    #[arg(long, value_name = "NS")]
    quiet_from_ns: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PropertyArg {
    /// The protected data was not harmed.
    Resource,
    /// No two holders acted at once, and the data was not harmed.
    MutualExclusion,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ExpectArg {
    /// No violation in a complete history.
    Valid,
    /// At least one violation.
    Invalid,
    /// No violation, but the history is incomplete.
    Unknown,
}

const REPORT_EXIT_CODES: &str = "\
Exit codes:
  0  the report was written (whatever its verdicts)
  2  a bad scenario or sweep file, bad usage, or an output file that cannot be written";

#[derive(Debug, clap::Args)]
struct ReportArgs {
    /// Scenario files, directories searched recursively for *.toml files, and sweep summaries
    /// (*.json, from `lockstep sweep --format json`).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// The report to write: .html (one self-contained page), .md (Markdown) or .json (replaced
    /// whole, never left half-written).
    #[arg(long, value_name = "FILE", required_unless_present = "list")]
    out: Option<PathBuf>,
    /// Run each scenario with the N seeds from its `seed` (seed, seed+1, ...) instead of the
    /// `seeds` it declares.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_SEEDS))]
    seeds: Option<u64>,
    #[command(flatten)]
    select: Select,
}

/// Which scenarios `check` and `report` run, and on how many threads.
#[derive(Debug, clap::Args)]
struct Select {
    /// Only the scenarios whose name or file path contains NAME, or matches it as a glob
    /// (`*` any text, `?` one character).
    #[arg(long, value_name = "NAME")]
    filter: Option<String>,
    /// Print the scenarios that would run (name, file, seeds) and run nothing.
    #[arg(long)]
    list: bool,
    /// Worker threads; defaults to the available cores. The results do not depend on it.
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
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
    /// Bound on the runs each shrink may make.
    #[arg(long, value_name = "N", default_value_t = 2_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_tries: u64,
    /// How many failing seeds to shrink (the first ones found); the smallest reproduction is
    /// written.
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u64).range(1..=100))]
    candidates: u64,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The scenario file (TOML); `-` reads it from standard input.
    file: PathBuf,
    /// The seed; defaults to $LOCKSTEP_SEED when set, else to the scenario's `seed`.
    #[arg(long)]
    seed: Option<u64>,
    /// Print every event of the run (messages, timers, faults, history) before the verdict.
    #[arg(long)]
    trace: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Run the seed twice and compare the trace hashes; a difference exits 1.
    #[arg(long)]
    check_determinism: bool,
    /// Also write the run's history to FILE (JSON Lines, docs/history.md, what `lockstep
    /// judge` reads; replaced whole, never left half-written).
    #[arg(long, value_name = "FILE")]
    history: Option<PathBuf>,
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
    /// Run every seed twice and compare the trace hashes; a difference fails the scenario.
    #[arg(long)]
    check_determinism: bool,
    #[command(flatten)]
    select: Select,
}

#[derive(Debug, clap::Args)]
struct SweepArgs {
    /// The scenario file (TOML).
    file: PathBuf,
    /// How many consecutive seeds to run.
    #[arg(long, value_name = "N", value_parser = seed_count)]
    seeds: u64,
    /// The first seed; defaults to the scenario's `seed`.
    #[arg(long, value_name = "S")]
    from: Option<u64>,
    /// Worker threads; defaults to the available cores. The results do not depend on it.
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Run only shard I of N (from 1): the seeds at positions i (from 0) with i % N = I - 1.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// Output format; the JSON is what `lockstep merge` reads.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Run every seed twice and compare the trace hashes; a difference exits 1.
    #[arg(long)]
    check_determinism: bool,
    /// Replace the file's [[fault]] list and [chaos] section with this chaos profile.
    #[arg(long, value_name = "PROFILE")]
    chaos: Option<String>,
}

#[derive(Debug, clap::Args)]
struct MergeArgs {
    /// JSON summaries written by `lockstep sweep --format json`, one per shard.
    #[arg(required = true)]
    files: Vec<PathBuf>,
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
    match input_wait_ms() {
        Ok(Some(ms)) => files::set_input_wait_ms(ms),
        Ok(None) => {}
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    }
    match cli.command {
        Command::Run(args) => cmd_run(&args),
        Command::Judge(args) => cmd_judge(&args),
        Command::Check(args) => cmd_check(&args),
        Command::Hunt(args) => cmd_hunt(&args),
        Command::Sweep(args) => cmd_sweep(&args),
        Command::Merge(args) => cmd_merge(&args),
        Command::Map(args) => cmd_map(&args),
        Command::Report(args) => cmd_report(&args),
        Command::Review(args) => cmd_review(&args),
        Command::Metrics => {
            print!("{}", lockstep_check::metrics::markdown_table());
            ExitCode::SUCCESS
        }
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "lockstep", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
    }
}

/// `LOCKSTEP_INPUT_WAIT_MS`: how long an input that is a FIFO, a pipe or a device may give no
/// data before it is refused (files::INPUT_WAIT_MS when unset).
fn input_wait_ms() -> Result<Option<u64>, String> {
    const MAX: u64 = i32::MAX as u64;
    match std::env::var("LOCKSTEP_INPUT_WAIT_MS") {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(text)
            if text
                .trim()
                .parse::<u64>()
                .is_ok_and(|ms| (1..=MAX).contains(&ms)) =>
        {
            Ok(text.trim().parse().ok())
        }
        _ => Err(format!(
            "LOCKSTEP_INPUT_WAIT_MS: not a wait: a whole number of milliseconds from 1 to {MAX}"
        )),
    }
}

/// The seed of `lockstep run`: `--seed`, else `LOCKSTEP_SEED` (as madsim's
/// `MADSIM_TEST_SEED`), else the scenario's.
fn run_seed(flag: Option<u64>, scenario_seed: u64) -> Result<u64, String> {
    if let Some(seed) = flag {
        return Ok(seed);
    }
    match std::env::var("LOCKSTEP_SEED") {
        Err(std::env::VarError::NotPresent) => Ok(scenario_seed),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err("LOCKSTEP_SEED: not a seed: it is not text".to_string())
        }
        Ok(text) => text.trim().parse::<u64>().map_err(|_| {
            // Cut and escaped: the variable may hold anything.
            let shown: String = text.chars().take(40).flat_map(char::escape_debug).collect();
            let cut = if text.chars().count() > 40 { "..." } else { "" };
            format!(
                "LOCKSTEP_SEED: not a seed: `{shown}{cut}`; a seed is a whole number from 0 to {}",
                u64::MAX
            )
        }),
    }
}

/// The scenario of `lockstep run`: the file, or standard input for `-` (errors name
/// `<stdin>`).
fn load_run(file: &Path) -> Result<Loaded, String> {
    if file != Path::new("-") {
        return load(file).map_err(|e| e.to_string());
    }
    let stdin = Path::new("<stdin>");
    let text = files::read_stdin(Input::SCENARIO)
        .and_then(files::text)
        .map_err(|e| format!("<stdin>: cannot read the scenario: {e}"))?;
    let scenario = lockstep::parse(&text, stdin).map_err(|e| e.to_string())?;
    Ok(Loaded {
        path: stdin.to_path_buf(),
        scenario,
    })
}

fn cmd_run(args: &RunArgs) -> ExitCode {
    let loaded = match load_run(&args.file) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let scenario = &loaded.scenario;
    let seed = match run_seed(args.seed, scenario.seed) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let history_out = match args
        .history
        .as_deref()
        .map(|f| Output::check(f, "history", &[&args.file]))
        .transpose()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let bar = run_progress(scenario.duration);
    let watched = bar.clone();
    let watch = std::sync::Arc::new(move |now: lockstep_sim::Time| {
        // A run over in a second needs no bar; a longer one shows how far it has got.
        if watched.elapsed() >= std::time::Duration::from_secs(1) {
            watched.set_position(now.as_nanos() / 1_000_000);
        }
    });
    let result = lockstep::run::run_watched(scenario, seed, args.trace, watch);
    bar.finish_and_clear();
    if let Some(out) = &history_out {
        let judging =
            lockstep_check::jsonl::Judging::of(&scenario.check_options, scenario.expect.property);
        if let Err(e) = out.write(&lockstep_check::jsonl::write(&result.history, &judging)) {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    }
    let determinism = args
        .check_determinism
        .then(|| lockstep::run::rerun_matches(scenario, &result, args.trace));
    let mut report = run_report(&loaded.path.display().to_string(), &scenario.name, &result);
    if args.file == Path::new("-") {
        // `<stdin>` names no file: the same scenario on standard input runs it again.
        report.reproduce = format!("lockstep run - --seed {seed}");
    }
    let trace = result
        .trace
        .as_ref()
        .map(|t| lockstep::trace::render(t, &scenario.node_names()));
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        Format::Table => {
            if let Some(lines) = &trace {
                for l in lines {
                    let _ = writeln!(out, "{l}");
                }
                let _ = writeln!(out);
            }
            let written = write!(out, "{}", report.table());
            match &determinism {
                Some(Ok(())) => writeln!(
                    out,
                    "determinism: ran twice, trace {:016x} both times",
                    result.trace_hash
                ),
                Some(Err(mismatch)) => writeln!(out, "{mismatch}"),
                None => written,
            }
        }
        Format::Json => {
            report.trace = trace;
            if let Some(Err(mismatch)) = &determinism {
                eprintln!("{mismatch}");
            }
            writeln!(out, "{}", report.json())
        }
    };
    // A closed pipe (`| head`) is not an error of the run.
    drop(written);
    if result.expected() && determinism.is_none_or(|d| d.is_ok()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn cmd_judge(args: &JudgeArgs) -> ExitCode {
    use lockstep::judge::{self, Overrides};
    use lockstep_check::{Property, Validity};
    let (name, read) = if args.file == Path::new("-") {
        ("<stdin>".to_string(), files::read_stdin(Input::HISTORY))
    } else {
        let name = args.file.display().to_string();
        (name, files::read_bytes(&args.file, Input::HISTORY))
    };
    let text = match read {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{name}: cannot read the history: {e}");
            return ExitCode::from(2);
        }
    };
    let overrides = Overrides {
        property: args.property.map(|p| match p {
            PropertyArg::Resource => Property::Resource,
            PropertyArg::MutualExclusion => Property::MutualExclusion,
        }),
        tokens_monotonic: args.tokens_monotonic,
        leadership: args.leadership,
        quiet_from_ns: args.quiet_from_ns,
    };
    let judged = match judge::judge(&text, &overrides) {
        Ok(j) => j,
        Err(errors) => {
            for e in &errors {
                eprintln!("{}", e.in_file(&name));
            }
            return ExitCode::from(2);
        }
    };
    let expect = match args.expect {
        ExpectArg::Valid => Validity::Valid,
        ExpectArg::Invalid => Validity::Invalid,
        ExpectArg::Unknown => Validity::Unknown,
    };
    let report = judge::report(&name, &judged, expect);
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        Format::Table => write!(out, "{}", judge::table(&report)),
        Format::Json => writeln!(out, "{}", judge::json(&report)),
    };
    // A closed pipe (`| head`) is not an error of the judging.
    drop(written);
    if judged.judged == expect {
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
    let Some((loaded, junit)) = load_suite(args) else {
        return ExitCode::from(2);
    };
    let Some(loaded) = select(loaded, &args.select, |l| (&l.scenario.name, &l.path)) else {
        return ExitCode::from(2);
    };
    let runs: u64 = loaded
        .iter()
        .map(|l| suite::seeds_of(&l.scenario, args.seeds).len())
        .sum();
    if args.select.list {
        return list(loaded.iter().map(|l| {
            let n = suite::seeds_of(&l.scenario, args.seeds).len();
            (l.scenario.name.as_str(), l.path.as_path(), n)
        }));
    }
    // Scenarios finish in order, on `--jobs` threads: each one's time is from the previous
    // one's end to its own, a share of the whole rather than its cost alone.
    let mut times = WallTimes::default();
    let mut last = now();
    let options = suite::CheckOptions {
        seeds: args.seeds,
        check_determinism: args.check_determinism,
        jobs: jobs(args.select.jobs),
    };
    let bar = progress(runs, "runs");
    let mut failed = 0u64;
    let result = suite::check_suite_progress(&loaded, options, |p| match p {
        suite::Progress::Seed(expected) => {
            if !expected {
                failed += 1;
                bar.set_message(format!("{failed} failed"));
            }
            bar.inc(1);
        }
        suite::Progress::Scenario(_) => {
            let t = now();
            times.scenarios.push(t - last);
            last = t;
        }
    });
    bar.finish_and_clear();
    times.total = now() - start;
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        Format::Table => write!(out, "{}", result.table_fitting(&times, table_width())),
        Format::Json => writeln!(out, "{}", result.json()),
    };
    // A closed pipe (`| head`) is not an error of the check.
    drop(written);
    if let Some(junit) = &junit {
        let xml = lockstep::junit::render(&result, &times);
        if let Err(e) = junit.write(&xml) {
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

/// `--jobs J`, else the available cores.
fn jobs(flag: Option<u64>) -> usize {
    flag.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        |j| j as usize,
    )
}

/// A progress bar of `len` `unit` on stderr, hidden when stderr is not a terminal (CI logs,
/// pipes).
fn progress(len: u64, unit: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    let template = format!("{{bar:40}} {{pos}}/{{len}} {unit}  {{per_sec}}  eta {{eta}}  {{msg}}");
    bar.set_style(
        indicatif::ProgressStyle::with_template(&template).expect("a valid progress template"),
    );
    bar
}

/// The progress bar of one run of `duration` of true time, in milliseconds of it, on stderr
/// and hidden when stderr is not a terminal, as a sweep's is.
fn run_progress(duration: lockstep_sim::Dur) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(duration.as_millis());
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} ms of true time  eta {eta}")
            .expect("a valid progress template"),
    );
    bar
}

/// The width tables on stdout fit in: `COLUMNS` when it is a number, else the terminal's;
/// `None` off a terminal (a file, a pipe), where nothing wraps: a line there has no width
/// to fit, and a word cut to fit one is a name no one can search for.
fn table_width() -> Option<usize> {
    let columns = std::env::var("COLUMNS").ok();
    if let Some(n) = columns.and_then(|c| c.trim().parse::<usize>().ok()) {
        if n > 0 {
            return Some(n);
        }
    }
    let term = console::Term::stdout();
    if term.is_term() {
        return term.size_checked().map(|(_, width)| usize::from(width));
    }
    None
}

/// The items `--filter` keeps (all without it); `name_path` gives an item's scenario name and
/// file. Says so and gives `None` when the filter keeps nothing.
fn select<T>(
    items: Vec<T>,
    select: &Select,
    name_path: impl Fn(&T) -> (&String, &PathBuf),
) -> Option<Vec<T>> {
    let Some(filter) = &select.filter else {
        return Some(items);
    };
    let kept: Vec<T> = items
        .into_iter()
        .filter(|item| {
            let (name, path) = name_path(item);
            matches_filter(filter, name, &path.display().to_string())
        })
        .collect();
    if kept.is_empty() {
        eprintln!("--filter {filter}: no scenario under the paths has a name or file like it");
        return None;
    }
    Some(kept)
}

/// True when `name` or `path` contains `filter`, or, when `filter` has a `*` or `?`, when
/// it matches the name, the path or the file name as a glob.
fn matches_filter(filter: &str, name: &str, path: &str) -> bool {
    if filter.contains(['*', '?']) {
        let file_name = path.rsplit('/').next().unwrap_or(path);
        [name, path, file_name].iter().any(|t| glob(filter, t))
    } else {
        name.contains(filter) || path.contains(filter)
    }
}

/// `*` matches any text (even none), `?` one character, anything else itself.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Iterative matching with one backtrack point: linear-ish, no recursion.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// `--list`: one line per scenario (name, file, seeds), and nothing run.
fn list<'a>(items: impl Iterator<Item = (&'a str, &'a Path, u64)>) -> ExitCode {
    let mut out = std::io::stdout().lock();
    for (name, file, seeds) in items {
        let _ = writeln!(
            out,
            "{name}  {}  {seeds} seed{}",
            file.display(),
            if seeds == 1 { "" } else { "s" }
        );
    }
    ExitCode::SUCCESS
}

fn cmd_sweep(args: &SweepArgs) -> ExitCode {
    #[allow(
        clippy::disallowed_methods,
        reason = "wall-clock time of the whole sweep, for people; no run reads it"
    )]
    let start = std::time::Instant::now();
    let target = match sweep::load(&args.file, args.chaos.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let from = match seed_range(&args.file, args.from, target.scenario.seed, args.seeds) {
        Ok(from) => from,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let config = SweepConfig {
        from,
        count: args.seeds,
        shard: args.shard,
        jobs: args.jobs.map_or(cores, |j| j as usize),
        check_determinism: args.check_determinism,
    };
    // Drawn on stderr, and hidden when stderr is not a terminal (CI logs, pipes).
    let bar = indicatif::ProgressBar::new(config.runs());
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} seeds  {per_sec}  eta {eta}  {msg}",
        )
        .expect("a valid progress template"),
    );
    let mut failed = 0u64;
    let summary = sweep::sweep(&target, &config, |o| {
        if !o.expected {
            failed += 1;
            bar.set_message(format!("{failed} failed"));
        }
        bar.inc(1);
    });
    bar.finish_and_clear();
    let wall = WallTime {
        elapsed: start.elapsed(),
        jobs: config.jobs,
    };
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        Format::Table => write!(out, "{}", summary.view().table(Some(wall))),
        Format::Json => {
            use lockstep_reports::format::{plural, seconds, seeds_per_second};
            eprintln!(
                "{} seeds in {} on {} thread{} ({})",
                summary.runs,
                seconds(wall.elapsed),
                wall.jobs,
                plural(wall.jobs),
                seeds_per_second(summary.runs, wall.elapsed)
            );
            writeln!(out, "{}", summary.json())
        }
    };
    // A closed pipe (`| head`) is not an error of the sweep.
    drop(written);
    exit_code(&summary)
}

fn cmd_merge(args: &MergeArgs) -> ExitCode {
    let mut inputs = Vec::new();
    let mut bad = false;
    for file in &args.files {
        let name = file.display().to_string();
        let read = files::read_text(file, Input::SUMMARY).map_err(|e| format!("cannot read: {e}"));
        match read.and_then(|text| SweepSummary::from_json(&text)) {
            Ok(s) => inputs.push((name, s)),
            Err(e) => {
                eprintln!("{name}: {e}");
                bad = true;
            }
        }
    }
    if bad {
        return ExitCode::from(2);
    }
    let summary = match sweep::merge(&inputs) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    let written = match args.format {
        Format::Table => write!(out, "{}", summary.view().table(None)),
        Format::Json => writeln!(out, "{}", summary.json()),
    };
    drop(written);
    exit_code(&summary)
}

fn cmd_report(args: &ReportArgs) -> ExitCode {
    use lockstep::report::{self, Input, ReportFormat, ReportOptions};
    // Everything that can be wrong with the command is found before the first run.
    let out_file = args.out.as_deref().filter(|_| !args.select.list);
    let format = out_file.map(ReportFormat::of).transpose();
    let mut bad = false;
    if let Err(e) = &format {
        eprintln!("{e}");
        bad = true;
    }
    let inputs = report::load_inputs(&args.paths);
    // The files it reads: every scenario and summary, and the scenario each summary names.
    let mut read: Vec<&Path> = args.paths.iter().map(PathBuf::as_path).collect();
    for input in inputs.iter().flatten() {
        match input {
            report::Input::Scenario(l) => read.push(&l.path),
            report::Input::Sweep(s) => read.push(Path::new(&s.summary.file)),
        }
    }
    let output = out_file
        .map(|f| Output::check(f, "report", &read))
        .transpose();
    if let Err(e) = &output {
        eprintln!("{e}");
        bad = true;
    }
    let inputs = match inputs {
        Ok(i) => i,
        Err(errors) => {
            for e in errors {
                eprintln!("{e}");
            }
            return ExitCode::from(2);
        }
    };
    for input in &inputs {
        if let (report::Input::Scenario(l), Some(n)) = (input, args.seeds) {
            if let Err(e) = seed_range(&l.path, None, l.scenario.seed, n) {
                eprintln!("{e}");
                bad = true;
            }
        }
    }
    let (false, Ok(format), Ok(output)) = (bad, format, output) else {
        return ExitCode::from(2);
    };
    let name_path = |i: &Input| match i {
        Input::Scenario(l) => (l.scenario.name.clone(), l.path.clone()),
        Input::Sweep(s) => (s.summary.scenario.clone(), s.path.clone()),
    };
    let keep = |i: &Input| {
        let (name, path) = name_path(i);
        args.select
            .filter
            .as_deref()
            .is_none_or(|f| matches_filter(f, &name, &path.display().to_string()))
    };
    let inputs: Vec<Input> = inputs.into_iter().filter(keep).collect();
    if inputs.is_empty() {
        let filter = args.select.filter.as_deref().unwrap_or_default();
        eprintln!("--filter {filter}: no scenario under the paths has a name or file like it");
        return ExitCode::from(2);
    }
    let seeds_of = |i: &Input| match i {
        Input::Scenario(l) => lockstep::suite::seeds_of(&l.scenario, args.seeds).len(),
        Input::Sweep(s) => s.summary.runs,
    };
    if args.select.list {
        let items: Vec<(String, PathBuf, u64)> = inputs
            .iter()
            .map(|i| {
                let (name, path) = name_path(i);
                (name, path, seeds_of(i))
            })
            .collect();
        return list(items.iter().map(|(n, p, k)| (n.as_str(), p.as_path(), *k)));
    }
    let (Some(output), Some(format)) = (output, format) else {
        eprintln!("--out FILE: the report to write is missing");
        return ExitCode::from(2);
    };
    let options = ReportOptions {
        seeds: args.seeds,
        jobs: jobs(args.select.jobs),
    };
    let runs = inputs
        .iter()
        .filter(|i| matches!(i, Input::Scenario(_)))
        .map(seeds_of)
        .sum();
    let bar = progress(runs, "runs");
    let built = report::build_observed(&inputs, options, || bar.inc(1), |_| {});
    bar.finish_and_clear();
    // Only the HTML page draws pictures.
    let visuals = if format == ReportFormat::Html {
        match report::visuals(&inputs, &built, options.jobs) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        }
    } else {
        lockstep_reports::Visuals::default()
    };
    let text = built.render(format, &visuals);
    if let Err(e) = output.write(&text) {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    let mut out = std::io::stdout().lock();
    let written = write!(out, "{}", built.comparison.table_fitting(table_width()))
        .and_then(|()| writeln!(out, "wrote {} ({} bytes)", output.display(), text.len()));
    // A closed pipe (`| head`) is not an error of the report.
    drop(written);
    ExitCode::SUCCESS
}

/// The first of the `count` seeds from `--from` (or, without it, from the scenario's `seed`),
/// when the last of them is at most the largest seed; else the problem, naming the flags or
/// the file's key that gave the range.
fn seed_range(file: &Path, from: Option<u64>, seed: u64, count: u64) -> Result<u64, String> {
    let start = from.unwrap_or(seed);
    match (lockstep::Seeds::range(start, count), from) {
        (Ok(_), _) => Ok(start),
        (Err(e), Some(f)) => Err(format!("--from {f} --seeds {count}: {e}")),
        (Err(e), None) => Err(format!(
            "{}: scenario.seed = {seed} with --seeds {count}: {e}",
            file.display()
        )),
    }
}

/// `--seeds N` of a sweep: any count from 1 (a range is never expanded into a list).
fn seed_count(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("a sweep runs at least 1 seed".to_string()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a seed count: {e}")),
    }
}

fn exit_code(summary: &SweepSummary) -> ExitCode {
    if summary.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn cmd_hunt(args: &HuntArgs) -> ExitCode {
    let file = &args.file;
    // Everything that can be wrong with the command is found before the first run.
    let output = Output::check(&args.out, "minimal scenario", &[file]);
    if let Err(e) = &output {
        eprintln!("{e}");
    }
    let text = match files::read_text(file, Input::SCENARIO) {
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
    let from = seed_range(file, args.from, scenario.seed, args.seeds);
    if let Err(e) = &from {
        eprintln!("{e}");
    }
    let (Ok(output), Ok(from)) = (output, from) else {
        return ExitCode::from(2);
    };
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        |j| j as usize,
    );
    let options = lockstep::hunt::HuntOptions {
        from,
        seeds: args.seeds,
        jobs,
        max_tries: args.max_tries,
        candidates: args.candidates,
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
    if let Err(e) = output.write(&found.text) {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    let out = output.display();
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
        "found    seed {} (seed {} of the search): {} {}{}",
        found.seed,
        found.seeds_tried,
        scenario.expect.property,
        found.replay.judged,
        if found.candidates > 1 {
            format!(
                ", the smallest of {} failing seeds shrunk",
                found.candidates
            )
        } else {
            String::new()
        }
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
fn load_suite(args: &CheckArgs) -> Option<(Vec<Loaded>, Option<Output>)> {
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
    for l in &loaded {
        if let Some(Err(e)) = args
            .seeds
            .map(|n| seed_range(&l.path, None, l.scenario.seed, n))
        {
            eprintln!("{e}");
            bad = true;
        }
    }
    let inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let junit = match args
        .junit
        .as_deref()
        .map(|f| Output::check(f, "JUnit file", &inputs))
    {
        Some(Ok(junit)) => Some(junit),
        Some(Err(e)) => {
            eprintln!("{e}");
            bad = true;
            None
        }
        None => None,
    };
    (!bad).then_some((loaded, junit))
}

const MAP_EXIT_CODES: &str = "\
Exit codes:
  0  every cell ran (a map has no expectation to meet)
  2  a bad scenario file or [sweep] section, bad usage, or an output file that cannot be written";

#[derive(Debug, clap::Args)]
struct MapArgs {
    /// The scenario file (TOML), with a [sweep] section.
    file: PathBuf,
    /// Also draw the map as SVG to FILE (replaced whole, never left half-written).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Worker threads; defaults to the available cores. The map does not depend on it.
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Output format of stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

fn cmd_map(args: &MapArgs) -> ExitCode {
    use lockstep::sweepmap;
    // Everything that can be wrong with the command is found before the first run.
    let output = args
        .out
        .as_deref()
        .map(|out| Output::check(out, "map", &[&args.file]))
        .transpose();
    if let Err(e) = &output {
        eprintln!("{e}");
    }
    let grid = files::read_text(&args.file, Input::SCENARIO)
        .map_err(|e| format!("{}: cannot read the file: {e}", args.file.display()))
        .and_then(|text| sweepmap::grid(&text, &args.file).map_err(|e| e.to_string()));
    let (grid, output) = match (grid, output) {
        (Ok(g), Ok(o)) => (g, o),
        (Err(e), _) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
        (Ok(_), Err(_)) => return ExitCode::from(2),
    };
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let jobs = args.jobs.map_or(cores, |j| j as usize);
    // Drawn on stderr, and hidden when stderr is not a terminal (CI logs, pipes).
    let bar = indicatif::ProgressBar::new(grid.cells.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} cells  eta {eta}")
            .expect("a valid progress template"),
    );
    let map = sweepmap::run_grid_observed(&grid, jobs, |done, _| bar.set_position(done as u64));
    bar.finish_and_clear();
    if let Some(output) = &output {
        let svg = lockstep_reports::sweepmap::svg(&map);
        if let Err(e) = output.write(&svg) {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    }
    let mut stdout = std::io::stdout().lock();
    let written = match args.format {
        Format::Table => writeln!(stdout, "{}", map.table()),
        Format::Json => writeln!(stdout, "{}", map.json()),
    };
    // A closed pipe (`| head`) is not an error of the map.
    drop(written);
    ExitCode::SUCCESS
}

const REVIEW_EXIT_CODES: &str = "\
Exit codes:
  0  the review ran (whatever its verdicts), or --scenario printed a cell
  2  a bad review or scenario file, bad usage, or an output file that cannot be written";

#[derive(Debug, clap::Args)]
struct ReviewArgs {
    /// The review file (TOML; see docs/review.md).
    file: PathBuf,
    /// The review to write: .html (one self-contained page), .md (Markdown for a pull-request
    /// comment) or .json (replaced whole, never left half-written).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Run each cell with N seeds instead of the file's `seeds`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=lockstep::sweepmap::MAX_MAP_SEEDS))]
    seeds: Option<u64>,
    /// Worker threads; defaults to the available cores. The review does not depend on it.
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Output format of stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Print the scenario of one cell (a design by number or name, and a fault class, as in
    /// `2/pauses`) and run nothing: `... --scenario 2/pauses > cell.toml && lockstep run
    /// cell.toml --seed S` replays a seed of it.
    #[arg(long, value_name = "DESIGN/CLASS")]
    scenario: Option<String>,
}

fn cmd_review(args: &ReviewArgs) -> ExitCode {
    use lockstep::report::ReportFormat;
    use lockstep::review;
    // Everything that can be wrong with the command is found before the first run.
    let mut bad = false;
    let format = args.out.as_deref().map(ReportFormat::of).transpose();
    if let Err(e) = &format {
        eprintln!("{e}");
        bad = true;
    }
    let plan = review::load(&args.file, args.seeds);
    let mut read: Vec<&Path> = vec![&args.file];
    if let Ok(plan) = &plan {
        read.extend(plan.designs.iter().map(|d| d.file.as_path()));
    }
    let output = args
        .out
        .as_deref()
        .map(|f| Output::check(f, "review", &read))
        .transpose();
    if let Err(e) = &output {
        eprintln!("{e}");
        bad = true;
    }
    let plan = match plan {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Some(cell) = &args.scenario {
        let Some((design, class)) = cell.rsplit_once('/') else {
            eprintln!("--scenario {cell}: give a design and a fault class, as in 2/pauses");
            return ExitCode::from(2);
        };
        return match review::cell_text(&plan, design, class) {
            Ok(text) => {
                // A closed pipe is not an error of the review.
                drop(write!(std::io::stdout().lock(), "{text}"));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("--scenario {cell}: {e}");
                ExitCode::from(2)
            }
        };
    }
    let (false, Ok(format), Ok(output)) = (bad, format, output) else {
        return ExitCode::from(2);
    };
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let jobs = args.jobs.map_or(cores, |j| j as usize);
    let cells = plan.designs.len() * plan.classes.len();
    // Drawn on stderr, and hidden when stderr is not a terminal (CI logs, pipes).
    let bar = indicatif::ProgressBar::new(cells as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} cells  eta {eta}")
            .expect("a valid progress template"),
    );
    let result = review::run(&plan, jobs, |done, _| bar.set_position(done as u64));
    bar.finish_and_clear();
    if let (Some(output), Some(format)) = (&output, format) {
        let text = match format {
            ReportFormat::Html => result.html(&review::timelines(&plan, &result)),
            ReportFormat::Markdown => result.markdown(),
            ReportFormat::Json => result.json(),
        };
        if let Err(e) = output.write(&text) {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    }
    let mut stdout = std::io::stdout().lock();
    let written = match args.format {
        Format::Table => write!(stdout, "{}", result.table()),
        Format::Json => writeln!(stdout, "{}", result.json()),
    };
    // A closed pipe (`| head`) is not an error of the review.
    drop(written);
    ExitCode::SUCCESS
}
