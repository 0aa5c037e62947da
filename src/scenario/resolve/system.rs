//! The workload every family's clients run (`[workload]`). The family's own keys are its own
//! (`lockstep_models::Family::resolve`), and where the resource lives is read with the
//! family's storage mode in `super::super::family`. `kind = "leader"` runs the leader loop
//! (`lockstep_models::workload`), whose keys a counter refuses; `kind = "queue"` runs a job
//! queue's workers, for a family whose recipe dequeues.

use lockstep_models::keys::{Check, DistSpec};
use lockstep_models::{LeaderConfig, OnStoppedLeading, WorkloadConfig, WorkloadKind};

use crate::scenario::schema::{OnStoppedSpec, WorkloadKindSpec, WorkloadSection};

/// A leader's task period when `task_every_ms` is absent.
const DEFAULT_TASK_EVERY: DistSpec = DistSpec::Constant(1_000.0);
/// The cancelled work's delay when `stop_delay_ms` is absent.
const DEFAULT_STOP_DELAY: DistSpec = DistSpec::Uniform(0.0, 5_000.0);

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
        kind: kind(check, w),
    };
    (w.clients.clamp(1, 1000), workload)
}

/// The loop, with the keys that only a leader takes refused for a counter.
fn kind(check: &mut Check, w: &WorkloadSection) -> WorkloadKind {
    let leader = w.kind == Some(WorkloadKindSpec::Leader);
    if !leader {
        let queue = w.kind == Some(WorkloadKindSpec::Queue);
        let set = [
            ("task_every_ms", w.task_every_ms.is_some()),
            ("on_stopped_leading", w.on_stopped_leading.is_some()),
            ("stop_delay_ms", w.stop_delay_ms.is_some()),
        ];
        for (key, _) in set.iter().filter(|(_, present)| *present) {
            check.problems.push(
                format!("workload.{key}"),
                "applies only to a leader workload: needs `kind = \"leader\"`".to_string(),
            );
        }
        return if queue {
            WorkloadKind::Queue
        } else {
            WorkloadKind::Counter
        };
    }
    let mode = w.on_stopped_leading.unwrap_or(OnStoppedSpec::Exit);
    if mode != OnStoppedSpec::Cancel && w.stop_delay_ms.is_some() {
        check.problems.push(
            "workload.stop_delay_ms",
            "applies only with `on_stopped_leading = \"cancel\"`",
        );
    }
    let on_stopped_leading = match mode {
        OnStoppedSpec::Exit => OnStoppedLeading::Exit,
        OnStoppedSpec::Cancel => OnStoppedLeading::Cancel {
            stop_delay: check.dist(
                "workload.stop_delay_ms",
                w.stop_delay_ms.unwrap_or(DEFAULT_STOP_DELAY),
            ),
        },
        OnStoppedSpec::Ignore => OnStoppedLeading::Ignore,
    };
    WorkloadKind::Leader(LeaderConfig {
        task_every: check.dist(
            "workload.task_every_ms",
            w.task_every_ms.unwrap_or(DEFAULT_TASK_EVERY),
        ),
        on_stopped_leading,
    })
}
