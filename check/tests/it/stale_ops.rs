//! Check 2: storage accepted an op from a grant after it had accepted an op of a later grant.

use lockstep_check::{History, NodeId, StaleOp, Validity};

use crate::support::{C1, C2, C3, grant, history, ms, op, verdict};

#[test]
fn write_of_an_older_grant_after_a_newer_grants_write_is_one_stale_op() {
    let history = history()
        .grant(0, C1, 1)
        .release(10, C1, 1)
        .grant(20, C2, 1)
        .write(25, C2, 1, 1, 0)
        .write(30, C1, 1, 1, 1)
        .release(35, C2, 1)
        .end(40);
    let verdict = verdict(&history);
    let expected = StaleOp {
        entry: 4,
        op: op(C1, 1),
        grant: grant(C1, 1),
        newer_entry: 3,
        newer_op: op(C2, 1),
        newer_grant: grant(C2, 1),
        time_ns: ms(30),
    };
    assert_eq!(verdict.stale_accepted.count, 1);
    assert_eq!(verdict.stale_accepted.examples, vec![expected]);
    assert_eq!(verdict.resource, Validity::Invalid);
    assert_eq!(
        verdict.mutual_exclusion,
        Validity::Invalid,
        "a harmed resource breaks both"
    );
}

#[test]
fn older_grants_op_landing_before_any_newer_op_is_not_stale() {
    // client-1's write was delayed past its release, but storage saw it before anything of
    // client-2: consistent with client-1 having finished first.
    let history = history()
        .grant(0, C1, 1)
        .release(10, C1, 1)
        .grant(20, C2, 1)
        .write(22, C1, 1, 1, 0)
        .read(25, C2, 1, 1, 1)
        .write(26, C2, 2, 1, 1)
        .release(30, C2, 1)
        .end(40);
    let verdict = verdict(&history);
    assert_eq!(verdict.stale_accepted.count, 0);
    assert_eq!(verdict.resource, Validity::Valid);
    assert_eq!(verdict.mutual_exclusion, Validity::Valid);
}

#[test]
fn accepted_stale_read_counts_as_a_stale_op() {
    let history = history()
        .grant(0, C1, 1)
        .grant(20, C2, 1)
        .write(25, C2, 1, 1, 0)
        .read(30, C1, 1, 1, 1)
        .end(40);
    let verdict = verdict(&history);
    assert_eq!(verdict.stale_accepted.count, 1);
    assert_eq!(verdict.resource, Validity::Invalid);
}

#[test]
fn rejected_ops_count_only_as_stale_rejected() {
    let history = history()
        .grant_token(0, C1, 1, 33)
        .grant_token(20, C2, 1, 34)
        .write(25, C2, 1, 1, 0)
        .token(34)
        .write(30, C1, 1, 1, 0)
        .token(33)
        .rejected()
        .read(31, C1, 2, 1, 1)
        .token(33)
        .rejected()
        .end(40);
    let verdict = verdict(&history);
    assert_eq!(verdict.stale_accepted.count, 0);
    assert_eq!(verdict.stale_rejected, 2);
    assert_eq!(verdict.resource, Validity::Valid);
}

#[test]
fn every_stale_op_counts_against_the_first_op_of_the_newest_grant() {
    let history = history()
        .grant(0, C1, 1)
        .grant(10, C2, 1)
        .grant(20, C3, 1)
        .read(25, C3, 1, 1, 0)
        .write(26, C3, 2, 1, 0)
        .write(27, C2, 1, 1, 0)
        .write(28, C1, 1, 1, 0)
        .end(40);
    let stale = verdict(&history).stale_accepted;
    assert_eq!(stale.count, 2);
    let culprits: Vec<_> = stale
        .examples
        .iter()
        .map(|found| (found.op, found.newer_op))
        .collect();
    assert_eq!(
        culprits,
        vec![(op(C2, 1), op(C3, 1)), (op(C1, 1), op(C3, 1))]
    );
}

#[test]
fn ops_of_the_newest_grant_are_never_stale_among_themselves() {
    let history = history()
        .grant(0, C1, 1)
        .read(1, C1, 1, 1, 0)
        .write(2, C1, 2, 1, 0)
        .write(3, C1, 3, 1, 1)
        .release(4, C1, 1)
        .end(10);
    assert_eq!(verdict(&history).stale_accepted.count, 0);
}

/// The service issues client-1's grant (ticket 104), then client-2's (ticket 105); client-2
/// learns first, at 6 ms, client-1 at 8 ms. Storage then takes a write of `first`, then one of
/// `second`. Without `tickets` the grants name nothing the service issued.
fn crossed(first: NodeId, second: NodeId, tickets: bool) -> History {
    let mut h = history();
    if tickets {
        h = h.issued(0, C1, 104).issued(5, C2, 105);
    }
    h = h.grant(6, C2, 1);
    if tickets {
        h = h.ticket(105);
    }
    h = h.grant(8, C1, 1);
    if tickets {
        h = h.ticket(104);
    }
    h.write(10, first, 1, 1, 0)
        .write(12, second, 1, 1, 1)
        .release(14, C1, 1)
        .release(15, C2, 1)
        .end(20)
}

#[test]
fn grants_are_ordered_by_when_the_service_issued_them_not_when_clients_learned() {
    // client-2's reply overtook client-1's. Storage took client-1's write, then client-2's:
    // the order the service gave, so nothing is stale (the two overlapping sections still
    // break mutual exclusion).
    let judged = verdict(&crossed(C1, C2, true));
    assert_eq!(judged.stale_accepted.count, 0);
    assert_eq!(judged.resource, Validity::Valid);
    assert_eq!(judged.double_holders.pairs, 1);
    assert_eq!(judged.mutual_exclusion, Validity::Invalid);

    // The same history without tickets is judged by when the clients learned: client-1's
    // write, after client-2's grant, came first, and client-2's write after it is stale.
    assert_eq!(verdict(&crossed(C1, C2, false)).stale_accepted.count, 1);

    // And with the tickets, storage taking the writes the other way round took the older
    // holder's op after the newer one's.
    let judged = verdict(&crossed(C2, C1, true));
    assert_eq!(judged.stale_accepted.count, 1);
    assert_eq!(judged.stale_accepted.examples[0].grant, grant(C1, 1));
    assert_eq!(judged.stale_accepted.examples[0].newer_grant, grant(C2, 1));
}

#[test]
fn only_the_first_issue_of_a_ticket_counts() {
    // A replica applying client-1's acquisition after client-2's was issued does not move
    // client-1's grant after client-2's.
    let history = history()
        .issued(0, C1, 7)
        .issued(2, C2, 8)
        .issued(3, C1, 7)
        .grant(4, C2, 1)
        .ticket(8)
        .grant(5, C1, 1)
        .ticket(7)
        .write(6, C1, 1, 1, 0)
        .write(7, C2, 1, 1, 1)
        .end(10);
    assert_eq!(verdict(&history).stale_accepted.count, 0);
}
