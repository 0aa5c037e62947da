//! lockstep-reports: what users read. A [`RunReport`] summarises one judged run; it renders as
//! a terminal table ([`RunReport::table`]) or as JSON ([`RunReport::json`]). A [`Comparison`]
//! puts many scenarios side by side (`lockstep report`); it renders as a terminal table, as
//! Markdown, as one self-contained HTML page and as JSON. Both JSON forms are specified in
//! docs/report-format.md. The result of `lockstep check` ([`suite::SuiteResult`]) renders as a
//! terminal table and as JSON, and a sweep's summary, seen through a [`sweep::SweepView`], as
//! the terminal text of `lockstep sweep` and `lockstep merge`.
//!
//! This crate knows the checker's verdicts and histories and nothing of the simulator or the
//! models: the `lockstep` package fills the reports in. It does no IO. User-provided text
//! (names, descriptions, paths, explanations) reaches HTML and Markdown only through
//! [`escape`].
#![deny(missing_docs)]

mod compare;
pub mod escape;
pub mod format;
mod html;
mod markdown;
pub mod review;
mod run_report;
pub mod suite;
pub mod sweep;
pub mod sweepmap;
mod table;
pub mod timeline;

pub use compare::{
    Comparison, CronStats, FORMAT, FailingSeed, FaultEntry, HerdStats, KEPT_FAILING, KEPT_FAULTS,
    KeysStats, LeadershipStats, MetricRow, QuantilesMs, QueueStats, Rate, Rates, ReadWriteStats,
    RecoveryStats, ReentryStats, Row, Source, Verdicts, Visuals,
};
pub use markdown::KEPT_EXPLANATIONS;
pub use run_report::{
    Counter, CronMs, FailoverMs, LatencyMs, LeadershipMs, RunReport, RunSource, Unfired,
};
