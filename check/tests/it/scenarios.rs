//! Known shapes from the failure catalogue (docs/catalogue.md), judged end to end.

use lockstep_check::Validity;

use crate::support::{C1, C2, gc_pause_after_read, grant, ms, op, verdict};

#[test]
fn unfenced_write_after_a_gc_pause_harms_the_resource() {
    let verdict = verdict(&gc_pause_after_read(false));
    assert_eq!(verdict.resource, Validity::Invalid);
    assert_eq!(verdict.mutual_exclusion, Validity::Invalid);
    assert_eq!(verdict.double_holders.pairs, 1);
    assert_eq!(verdict.stale_accepted.count, 1);
    let stale = verdict.stale_accepted.examples[0];
    assert_eq!(
        (stale.op, stale.newer_op, stale.time_ns),
        (op(C1, 2), op(C2, 1), ms(18))
    );
    assert_eq!(verdict.lost_updates.count, 1);
    assert_eq!(verdict.stale_rejected, 0);
    assert_eq!(verdict.liveness.final_value, 1, "two increments, one lost");
}

#[test]
fn fenced_storage_rejects_stale_write_but_overlap_is_still_reported() {
    let verdict = verdict(&gc_pause_after_read(true));
    assert_eq!(verdict.resource, Validity::Valid);
    assert_eq!(verdict.mutual_exclusion, Validity::Invalid);
    assert_eq!(verdict.stale_accepted.count, 0);
    assert_eq!(verdict.stale_rejected, 1);
    assert_eq!(verdict.lost_updates.count, 0);
    let overlap = verdict.double_holders.examples[0];
    assert_eq!(
        (overlap.first, overlap.second),
        (grant(C1, 1), grant(C2, 1))
    );
    // client-2 held from 12 ms to its release at 15 ms, all inside client-1's paused section.
    assert_eq!((overlap.from_ns, overlap.to_ns), (ms(12), ms(15)));
    assert_eq!(
        verdict.liveness.failover.count, 1,
        "the pause took the holder away"
    );
    assert_eq!(verdict.liveness.failover.max_ns, Some(ms(9)));
}
