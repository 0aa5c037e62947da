//! Who a replicated lock service's members consider the lock's owner, as each applies its log.
//!
//! Some services have no "owner" field: a client owns the lock when its key is first in line
//! (the lowest create revision under the lock prefix, the lowest sequence number under the
//! lock node). Each member works that out from its own applied state after every apply and
//! keeps an [`OwnerAudit`]. A change to a new owner is the service-side instant of that
//! acquisition, recorded in the history as `Issued` (docs/checker.md, service order), and
//! noted for observers as the member's view of the holder.

use lockstep_check::{Event, NodeId as HistNode};
use lockstep_sim::NodeId;

use crate::env::Host;
use crate::observe::{HolderView, Observation};

/// A client's acquisition, as the service names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The client whose key is first in line.
    pub client: NodeId,
    /// The acquisition: the key's create revision, the node's czxid.
    pub ticket: u64,
}

/// One member's current owners, as its applied state shows them: one, or the readers who share
/// a read-write lock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnerAudit {
    current: Vec<Owner>,
}

impl OwnerAudit {
    /// Notes the owner after an apply: a change is observed, and a new owner is recorded in
    /// the history as the service issuing that acquisition.
    pub(crate) fn observe<M, T>(&mut self, ctx: &mut impl Host<M, T>, owner: Option<Owner>) {
        self.observe_all(ctx, owner.as_slice());
    }

    /// Notes the owners after an apply (the readers sharing a read-write lock, in line order):
    /// each owner that is new is recorded as issued, and a change of the first is observed
    /// as the member's view of the holder.
    pub(crate) fn observe_all<M, T>(&mut self, ctx: &mut impl Host<M, T>, owners: &[Owner]) {
        if owners == self.current.as_slice() {
            return;
        }
        if owners.first() != self.current.first() {
            let view = match owners.first() {
                Some(o) => HolderView::Granted {
                    client: o.client,
                    expires: None,
                },
                None => HolderView::Free,
            };
            ctx.observe(Observation::Holder(view));
        }
        for o in owners {
            if !self.current.contains(o) {
                ctx.record(Event::Issued {
                    client: HistNode(o.client.0),
                    ticket: o.ticket,
                });
            }
        }
        self.current.clear();
        self.current.extend_from_slice(owners);
    }

    /// The member crashed: its applied state is gone, and the replay after its restart notes
    /// the owner again. (The report ends the member's view at the crash from the fault log.)
    pub(crate) fn crashed(&mut self) {
        self.current.clear();
    }

    /// The owner now: the first in line when readers share.
    pub fn current(&self) -> Option<Owner> {
        self.current.first().copied()
    }
}
