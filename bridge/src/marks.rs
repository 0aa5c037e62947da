//! The marks clients reach: counts per node and mark, the plan's triggers, which fired,
//! and the faults they handed to the runtime's driver. What a runtime does with a fired
//! trigger is its own ([`crate::sim::Sim::reach`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::plan::{Effect, MarkPause, Plan};
use crate::recorder::Recorder;

/// The marks of one run (a clone shares them).
#[derive(Clone, Debug)]
pub struct Marks {
    inner: Rc<RefCell<Inner>>,
}

#[derive(Debug)]
struct Inner {
    plan: Rc<Plan>,
    reached: BTreeMap<(String, String), u32>,
    fired: Vec<bool>,
    pending: Vec<Effect>,
    recorder: Recorder,
}

impl Marks {
    /// The marks of `plan`, none reached yet.
    pub fn new(plan: Rc<Plan>, recorder: Recorder) -> Marks {
        let fired = vec![false; plan.on_mark.len()];
        Marks {
            inner: Rc::new(RefCell::new(Inner {
                plan,
                reached: BTreeMap::new(),
                fired,
                pending: Vec::new(),
                recorder,
            })),
        }
    }

    /// `node` reached `mark` once more: the triggers this fires, in the plan's order (each
    /// fires once; a trigger whose `before` has passed lapses).
    pub fn hit(&self, node: &str, mark: &str) -> Vec<Result<MarkPause, Effect>> {
        let mut inner = self.inner.borrow_mut();
        let count = inner
            .reached
            .entry((node.to_string(), mark.to_string()))
            .or_insert(0);
        *count += 1;
        let count = *count;
        let now = inner.recorder.now_ns();
        let plan = inner.plan.clone();
        let mut fired = Vec::new();
        for (i, t) in plan.on_mark.iter().enumerate() {
            let lapsed = t.before.is_some_and(|b| now > b.as_nanos());
            if inner.fired[i] || t.node != node || t.mark != mark || t.occurrence != count || lapsed
            {
                continue;
            }
            inner.fired[i] = true;
            fired.push(t.what.clone());
        }
        fired
    }

    /// The recorder of the run.
    pub fn recorder(&self) -> Recorder {
        self.inner.borrow().recorder.clone()
    }

    /// Hands `effect` to the driver, which starts it at its next look.
    pub fn hand(&self, effect: Effect) {
        self.inner.borrow_mut().pending.push(effect);
    }

    /// The effects handed since the last call.
    pub fn take_pending(&self) -> Vec<Effect> {
        std::mem::take(&mut self.inner.borrow_mut().pending)
    }

    /// Triggers that never fired (by their index in the plan's `on_mark`).
    pub fn unfired(&self) -> Vec<usize> {
        let inner = self.inner.borrow();
        inner
            .fired
            .iter()
            .enumerate()
            .filter(|(_, f)| !**f)
            .map(|(i, _)| i)
            .collect()
    }
}
