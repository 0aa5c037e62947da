//! The workload every family's clients run (`[workload]`). The family's own keys are its own
//! (`lockstep_models::Family::resolve`), and where the resource lives is read with the
//! family's storage mode in `super::super::family`.

use lockstep_models::WorkloadConfig;
use lockstep_models::keys::Check;

use crate::scenario::schema::WorkloadSection;

/// The number of clients and their workload.
pub(crate) fn workload(check: &mut Check, w: &WorkloadSection) -> (u32, WorkloadConfig) {
    if !(1..=1000).contains(&w.clients) {
        check.problems.push(
            "workload.clients",
            format!("must be between 1 and 1000, not {}", w.clients),
        );
    }
    let workload = WorkloadConfig {
        think: check.dist("workload.think_ms", w.think_ms),
        work: check.dist("workload.work_ms", w.work_ms),
        check_validity_before_write: w.check_validity_before_write,
        storage_timeout: check.positive_ms("workload.storage_timeout_ms", w.storage_timeout_ms),
    };
    (w.clients.clamp(1, 1000), workload)
}
