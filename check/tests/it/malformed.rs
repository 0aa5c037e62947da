//! Histories the checker refuses to judge: each is a `HistoryError` naming the first entry at
//! fault, never a panic and never a verdict.

use lockstep_check::{Entry, Event, History, HistoryError, Options, check};

use crate::support::{C1, C2, grant, history, ms};

fn error(history: &History) -> HistoryError {
    check(history, &Options::default()).expect_err("the history is malformed")
}

#[test]
fn storage_op_naming_a_grant_never_granted_is_refused() {
    let history = history().grant(0, C1, 1).write(1, C1, 3, 2, 0).end(10);
    let found = error(&history);
    assert_eq!(found.entry, Some(1));
    assert_eq!(
        found.to_string(),
        "entry 1: storage op client-1#3 names grant client-1#2, which was never granted"
    );
}

#[test]
fn exit_before_its_grant_is_refused() {
    let history = history().release(0, C1, 1).grant(5, C1, 1).end(10);
    let found = error(&history);
    assert_eq!(found.entry, Some(0));
    assert_eq!(
        found.message,
        "exit names grant client-1#1, which is granted only later, at entry 1"
    );
}

#[test]
fn a_grant_id_granted_twice_is_refused() {
    let history = history()
        .grant(0, C1, 1)
        .release(1, C1, 1)
        .grant(2, C1, 1)
        .end(10);
    let found = error(&history);
    assert_eq!(found.entry, Some(2));
    assert_eq!(
        found.message,
        "grant client-1#1 is granted twice (first at entry 0)"
    );
}

#[test]
fn grants_of_any_client_id_and_sequence_number_are_told_apart() {
    // A judged history may number its clients and grants as it likes: far apart, out of
    // order, from 0. Each grant is still found by its id, and a repeat still refused.
    let far = lockstep_check::NodeId(4_000_000);
    let apart = history()
        .request(0, far)
        .grant(1, far, 3_000_000_000)
        .read(2, far, 1, 3_000_000_000, 0)
        .write(3, far, 2, 3_000_000_000, 0)
        .release(4, far, 3_000_000_000)
        .grant(5, C1, 7)
        .grant(6, C2, 0)
        .read(7, C1, 1, 7, 1)
        .release(8, C1, 7)
        .release(9, C2, 0)
        .end(10);
    let v = crate::support::verdict(&apart);
    assert_eq!(v.liveness.grants, 3);
    assert_eq!(v.stale_accepted.count, 0);
    let twice = history()
        .grant(0, far, 3_000_000_000)
        .release(1, far, 3_000_000_000)
        .grant(2, far, 3_000_000_000)
        .end(10);
    assert_eq!(error(&twice).entry, Some(2));
}

#[test]
fn storage_op_under_another_clients_grant_is_refused() {
    let mut history = history().grant(0, C1, 1).write(1, C2, 1, 1, 0).end(10);
    // The builder names the op's own client as the grant's holder: point it at client-1's grant.
    if let Event::Storage(op) = &mut history.entries[1].event {
        op.grant = grant(C1, 1);
    }
    let found = error(&history);
    assert_eq!(found.entry, Some(1));
    assert_eq!(
        found.message,
        "storage op client-2#1 names grant client-1#1, which another client holds"
    );
}

#[test]
fn entries_out_of_true_time_order_are_refused() {
    let mut history = history().grant(0, C1, 1).end(10);
    // `History::push` refuses this, so the entries are written directly, as a file could be.
    history.entries.push(Entry {
        time_ns: ms(5),
        event: Event::Request { client: C2 },
    });
    history.entries.push(Entry {
        time_ns: ms(4),
        event: Event::Request { client: C1 },
    });
    let found = error(&history);
    assert_eq!(found.entry, Some(2));
    assert!(
        found
            .message
            .contains("is before the previous entry's time 5000000 ns"),
        "{found}"
    );
}

#[test]
fn entries_after_the_run_end_are_refused() {
    let history = history().grant(0, C1, 1).release(20, C1, 1).end(10);
    let found = error(&history);
    assert_eq!(found.entry, Some(1));
    assert_eq!(
        found.message,
        "time 20000000 ns is after the run's end (10000000 ns, end_ns)"
    );
}

#[test]
fn a_grant_naming_a_ticket_never_issued_to_its_client_is_refused() {
    let history = history().issued(0, C2, 5).grant(1, C1, 1).ticket(5).end(10);
    let found = error(&history);
    assert_eq!(found.entry, Some(1));
    assert_eq!(
        found.message,
        "grant client-1#1 names ticket 5, which no service issued to its client before it"
    );
}
