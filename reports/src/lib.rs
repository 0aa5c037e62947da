//! lockstep-reports: what users read. A [`RunReport`] summarises one judged run; it renders as
//! a terminal table ([`RunReport::table`]) or as JSON ([`RunReport::json`]), whose fields are
//! specified in docs/report-format.md.
//!
//! This crate knows the checker's verdicts and nothing of the simulator or the models: the
//! `lockstep` package fills a [`RunReport`] in. It does no IO.
#![deny(missing_docs)]

mod run_report;
pub mod sweepmap;
mod table;
pub mod timeline;

pub use run_report::{Counter, FailoverMs, LatencyMs, RunReport, RunSource};
