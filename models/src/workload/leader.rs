//! Leader election as a workload (`kind = "leader"`): campaign, then lead, a task every
//! `task_every` until leadership is lost; what the application then does is
//! [`OnStoppedLeading`] (see the module's documentation, "Leader election as a workload").

use lockstep_sim::Distribution;
use serde::Deserialize;

use super::{Needs, Shared, Workload};
use crate::keys::{Check, DistSpec};

/// A leader's task period when `task_every_ms` is absent.
const DEFAULT_TASK_EVERY: DistSpec = DistSpec::Constant(1_000.0);
/// The cancelled work's delay when `stop_delay_ms` is absent.
const DEFAULT_STOP_DELAY: DistSpec = DistSpec::Uniform(0.0, 5_000.0);

/// How a leader client behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderConfig {
    /// Time from the end of one task to the start of the next.
    pub task_every: Distribution,
    /// What the application does when its lock client says leadership is lost.
    pub on_stopped_leading: OnStoppedLeading,
}

/// What a leader does when its lock client says it lost leadership (client-go's
/// `OnStoppedLeading` callback, `tools/leaderelection/leaderelection.go`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OnStoppedLeading {
    /// The process exits at once (`klog.Fatal`): the task in flight is dropped, the lock
    /// released (`ReleaseOnCancel`), the lock client starts afresh, and it campaigns again
    /// after thinking.
    Exit,
    /// The work notices the cancelled context only after `stop_delay`, and goes on under the
    /// old grant until then; then it releases, thinks and campaigns again (same process).
    Cancel {
        /// The delay before the work stops.
        stop_delay: Distribution,
    },
    /// The application never notices: tasks go on under the old grant for the rest of the run.
    Ignore,
}

/// A leader's `[workload]` keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaderKeys {
    /// Time from one task's end to the next task.
    task_every_ms: Option<DistSpec>,
    /// What the application does when leadership is lost.
    on_stopped_leading: Option<OnStoppedName>,
    /// With `on_stopped_leading = "cancel"` only: the delay before the work stops.
    stop_delay_ms: Option<DistSpec>,
}

/// `workload.on_stopped_leading`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum OnStoppedName {
    Exit,
    Cancel,
    Ignore,
}

impl Workload for LeaderConfig {
    const KIND: &'static str = "leader";
    const WHAT: &'static str = "a leader workload";
    const MEASURES: &'static [&'static str] = &["leadership"];
    const NEEDS: Needs = Needs {
        held: true,
        ..Needs::NONE
    };
    type Keys = LeaderKeys;

    fn resolve(keys: &LeaderKeys, _: &Shared, check: &mut Check) -> LeaderConfig {
        let mode = keys.on_stopped_leading.unwrap_or(OnStoppedName::Exit);
        if mode != OnStoppedName::Cancel && keys.stop_delay_ms.is_some() {
            check.problems.push(
                "workload.stop_delay_ms",
                "applies only with `on_stopped_leading = \"cancel\"`",
            );
        }
        let on_stopped_leading = match mode {
            OnStoppedName::Exit => OnStoppedLeading::Exit,
            OnStoppedName::Cancel => OnStoppedLeading::Cancel {
                stop_delay: check.dist(
                    "workload.stop_delay_ms",
                    keys.stop_delay_ms.unwrap_or(DEFAULT_STOP_DELAY),
                ),
            },
            OnStoppedName::Ignore => OnStoppedLeading::Ignore,
        };
        LeaderConfig {
            task_every: check.dist(
                "workload.task_every_ms",
                keys.task_every_ms.unwrap_or(DEFAULT_TASK_EVERY),
            ),
            on_stopped_leading,
        }
    }
}
