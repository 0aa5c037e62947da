//! Who a replicated lock service's members consider the lock's owner, as each applies its log.
//!
//! etcd and ZooKeeper have no "owner" field: a client owns the lock when its key is first in
//! line (the lowest create revision under the lock prefix, the lowest sequence number under
//! the lock node). Each member works that out from its own applied state after every apply
//! and keeps an [`OwnerAudit`]. A change to a new owner is also the service-side instant of
//! that acquisition, recorded in the history as `Issued` (docs/checker.md, service order).
//!
//! The audit is an observer's record, never read by the model, so it moves no trace; its times
//! are the member's monotonic clock (a model cannot read true time), mapped back to true time
//! by the report with the member's clocks.

use lockstep_check::{Event, NodeId as HistNode};
use lockstep_sim::{Ctx, NodeId};

use crate::node::Node;

/// A client's acquisition, as the service names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The client whose key is first in line.
    pub client: NodeId,
    /// The acquisition: the key's create revision (etcd) or the node's czxid (ZooKeeper).
    pub ticket: u64,
}

/// A member's view of the owner changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnerChange {
    /// The member's monotonic reading when it applied the change.
    pub mono_ns: i64,
    /// The owner from then on; `None` when no key is in line.
    pub owner: Option<Owner>,
}

/// One member's owner changes, in the order it applied them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnerAudit {
    changes: Vec<OwnerChange>,
    current: Option<Owner>,
}

impl OwnerAudit {
    /// Notes the owner after an apply: a change is kept, and a new owner is recorded in the
    /// history as the service issuing that acquisition.
    pub(crate) fn observe(&mut self, ctx: &mut Ctx<'_, Node>, owner: Option<Owner>) {
        if owner == self.current {
            return;
        }
        self.current = owner;
        self.changes.push(OwnerChange {
            mono_ns: ctx.mono().as_nanos(),
            owner,
        });
        if let Some(o) = owner {
            ctx.record(Event::Issued {
                client: HistNode(o.client.0),
                ticket: o.ticket,
            });
        }
    }

    /// The member crashed: its applied state is gone, and the replay after its restart notes
    /// the owner again. (The report ends the member's view at the crash from the fault log.)
    pub(crate) fn crashed(&mut self) {
        self.current = None;
    }

    /// The changes, in order.
    pub fn changes(&self) -> &[OwnerChange] {
        &self.changes
    }
}
