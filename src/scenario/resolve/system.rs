//! The workload every family's clients run (`[workload]`). The family's own keys are its own
//! (`lockstep_models::Family::resolve`), and where the resource lives is read with the
//! family's storage mode in `super::super::family`. `kind = "leader"` runs the leader loop
//! (`lockstep_models::workload`), whose keys a counter refuses; `kind = "queue"` runs a job
//! queue's workers, for a family whose recipe dequeues; `kind = "cron"` a job on a schedule
//! (`lockstep_models::workload::cron`), whose keys only it takes; `kind = "keys"` many rows
//! under many locks; `kind = "read-write"` readers and writers of one read-write lock.

use lockstep_models::keys::{Check, DistSpec};
use lockstep_models::workload::keys::MAX_LOCKS;
use lockstep_models::{
    CronConfig, KeysConfig, LeaderConfig, OnStoppedLeading, ReadWriteConfig, WorkloadConfig,
    WorkloadKind,
};
use lockstep_sim::Dur;

use crate::scenario::schema::{OnStoppedSpec, WorkloadKindSpec, WorkloadSection, default_think};

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
        think: check.dist(
            "workload.think_ms",
            w.think_ms.unwrap_or_else(default_think),
        ),
        work: check.dist("workload.work_ms", w.work_ms),
        check_validity_before_write: w.check_validity_before_write,
        storage_timeout: check.positive_ms("workload.storage_timeout_ms", w.storage_timeout_ms),
        kind: kind(check, w),
    };
    (w.clients.clamp(1, 1000), workload)
}

/// The loop, with the keys that only a leader (or only a scheduled job) takes refused for
/// the others.
fn kind(check: &mut Check, w: &WorkloadSection) -> WorkloadKind {
    let leader = w.kind == Some(WorkloadKindSpec::Leader);
    let cron = w.kind == Some(WorkloadKindSpec::Cron);
    let keys = w.kind == Some(WorkloadKindSpec::Keys);
    let read_write = w.kind == Some(WorkloadKindSpec::ReadWrite);
    if !read_write && w.writers.is_some() {
        check.problems.push(
            "workload.writers",
            "applies only to a read-write lock: needs `kind = \"read-write\"`",
        );
    }
    if !keys {
        let set = [
            ("rows", w.rows.is_some()),
            ("locks", w.locks.is_some()),
            ("zipf", w.zipf.is_some()),
        ];
        for (key, _) in set.iter().filter(|(_, present)| *present) {
            check.problems.push(
                format!("workload.{key}"),
                "applies only to many keys: needs `kind = \"keys\"`".to_string(),
            );
        }
    }
    if !cron {
        let set = [
            ("period_ms", w.period_ms.is_some()),
            ("lock_at_least_ms", w.lock_at_least_ms.is_some()),
        ];
        for (key, _) in set.iter().filter(|(_, present)| *present) {
            check.problems.push(
                format!("workload.{key}"),
                "applies only to a scheduled job: needs `kind = \"cron\"`".to_string(),
            );
        }
    }
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
        } else if cron {
            WorkloadKind::Cron(cron_config(check, w))
        } else if keys {
            WorkloadKind::Keys(keys_config(check, w))
        } else if read_write {
            WorkloadKind::ReadWrite(read_write_config(check, w))
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

/// A scheduled job's settings: `period_ms` is required, a client idles between ticks (no
/// `think_ms`).
fn cron_config(check: &mut Check, w: &WorkloadSection) -> CronConfig {
    if w.think_ms.is_some() {
        check.problems.push(
            "workload.think_ms",
            "a scheduled job does not think between tries: its clients wait for the next tick \
             (`period_ms`); leave out think_ms",
        );
    }
    let period = match w.period_ms {
        Some(ms) => check.positive_ms("workload.period_ms", ms),
        None => {
            check.problems.push(
                "workload.period_ms",
                "is required with `kind = \"cron\"`: the time between ticks, in ms",
            );
            Dur::from_secs(60)
        }
    };
    let lock_at_least = w
        .lock_at_least_ms
        .map_or(Dur::ZERO, |ms| check.ms("workload.lock_at_least_ms", ms));
    CronConfig {
        period,
        lock_at_least,
    }
}

/// Many keys: `rows` rows (100 when absent) under `locks` locks (one per row when absent),
/// picked uniformly or Zipf-skewed.
fn keys_config(check: &mut Check, w: &WorkloadSection) -> KeysConfig {
    let rows = check.count("workload.rows", w.rows.unwrap_or(100), 1, MAX_LOCKS);
    let locks = w.locks.unwrap_or(rows);
    if !(1..=rows).contains(&locks) {
        check.problems.push(
            "workload.locks",
            format!(
                "must be between 1 (one lock for every row) and workload.rows ({rows}, a lock \
                 per row), not {locks}"
            ),
        );
    }
    let zipf = w.zipf.map(|s| {
        let s = check.number("workload.zipf", s, 0.0, 10.0);
        (s * 1000.0).round() as u32
    });
    KeysConfig::new(rows, locks.clamp(1, rows), zipf)
}

/// Readers and writers: the first `writers` clients write (1 when absent), the rest read; at
/// least one of them writes.
fn read_write_config(check: &mut Check, w: &WorkloadSection) -> ReadWriteConfig {
    let writers = w.writers.unwrap_or(1);
    if !(1..=w.clients).contains(&writers) {
        check.problems.push(
            "workload.writers",
            format!(
                "must be between 1 and workload.clients ({}): the first clients write and the \
                 others read, not {writers}",
                w.clients
            ),
        );
    }
    ReadWriteConfig {
        writers: writers.clamp(1, w.clients.max(1)),
    }
}
