//! Histories the checker refuses to judge: each is a `HistoryError` naming the first entry at
//! fault, never a panic and never a verdict.

use lockstep_check::{Entry, Event, ExitReason, FaultKind, History, HistoryError, Options, check};

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
fn grants_of_any_client_id_are_told_apart() {
    // A judged history may number its processes as it likes: far apart. Each grant is still
    // found by its id, and a repeat still refused.
    let far = lockstep_check::NodeId(4_000_000);
    let apart = history()
        .request(0, far)
        .grant(1, far, 1)
        .read(2, far, 1, 1, 0)
        .write(3, far, 2, 1, 0)
        .release(4, far, 1)
        .grant(5, C1, 1)
        .grant(6, C2, 1)
        .read(7, C1, 1, 1, 1)
        .release(8, C1, 1)
        .release(9, C2, 1)
        .end(10);
    let v = crate::support::verdict(&apart);
    assert_eq!(v.liveness.grants, 3);
    assert_eq!(v.stale_accepted.count, 0);
    let twice = history()
        .grant(0, far, 1)
        .release(1, far, 1)
        .grant(2, far, 1)
        .end(10);
    assert_eq!(error(&twice).entry, Some(2));
}

#[test]
fn a_clients_grants_out_of_order_or_with_one_missing_are_refused() {
    // Grant #2 before #1: a client's grants are numbered in the order it learns of them.
    let early = history()
        .request(0, C1)
        .grant(1, C1, 2)
        .release(2, C1, 2)
        .request(3, C1)
        .grant(4, C1, 1)
        .end(10);
    let found = error(&early);
    assert_eq!(found.entry, Some(1));
    assert_eq!(
        found.message,
        "grant client-1#2 is client-1's first: a client's grants are numbered 1, 2, 3, ... in \
         the order it learns of them"
    );
    // #1 then #3: #2, and its critical section, are missing.
    let gap = history()
        .grant(0, C1, 1)
        .release(1, C1, 1)
        .grant(2, C2, 1)
        .grant(3, C1, 3)
        .end(10);
    let found = error(&gap);
    assert_eq!(found.entry, Some(3));
    assert_eq!(
        found.message,
        "grant client-1#3 follows client-1#1: a client's grants are numbered 1, 2, 3, ... in \
         the order it learns of them"
    );
}

#[test]
fn a_grant_that_exits_twice_is_refused_but_an_exit_after_a_crash_is_not() {
    let twice = history()
        .grant(0, C1, 1)
        .exit(1, C1, 1, ExitReason::Lost)
        .release(2, C1, 1)
        .end(10);
    let found = error(&twice);
    assert_eq!(found.entry, Some(2));
    assert_eq!(
        found.message,
        "grant client-1#1 exits twice: a client stops acting for a grant once"
    );
    // The crash ends the section; a recorder may still note the grant's exit as crashed.
    let noted = history()
        .grant(0, C1, 1)
        .crash(1, C1)
        .exit(2, C1, 1, ExitReason::Crashed)
        .end(10);
    assert_eq!(crate::support::verdict(&noted).liveness.grants, 1);
}

#[test]
fn a_nested_acquisition_outside_a_section_or_granted_with_none_begun_is_refused() {
    let outside = history()
        .grant(0, C1, 1)
        .release(1, C1, 1)
        .nest(2, C1)
        .end(10);
    let found = error(&outside);
    assert_eq!(found.entry, Some(2));
    assert_eq!(
        found.message,
        "client-1 takes the lock again (nest) outside a critical section: it holds no grant"
    );
    let unasked = history().grant(0, C1, 1).nested(1, C1).end(10);
    let found = error(&unasked);
    assert_eq!(found.entry, Some(1));
    assert_eq!(
        found.message,
        "client-1 holds the lock again (nested) with no nested acquisition (nest) waiting in \
         its critical section"
    );
    // A nest left unanswered when its section ended is not answered in the next one.
    let stale = history()
        .grant(0, C1, 1)
        .nest(1, C1)
        .release(2, C1, 1)
        .grant(3, C1, 2)
        .nested(4, C1)
        .end(10);
    assert_eq!(error(&stale).entry, Some(4));
    let answered = history()
        .grant(0, C1, 1)
        .nest(1, C1)
        .nested(2, C1)
        .nest(3, C1)
        .nested(4, C1)
        .release(5, C1, 1)
        .end(10);
    assert_eq!(
        crate::support::verdict(&answered)
            .reentry
            .map(|r| r.granted),
        Some(2)
    );
}

#[test]
fn a_crashed_client_acting_before_a_restart_is_refused() {
    let acting = history()
        .request(0, C1)
        .crash(1, C1)
        .request(2, C2)
        .request(3, C1)
        .end(10);
    let found = error(&acting);
    assert_eq!(found.entry, Some(3));
    assert_eq!(
        found.message,
        "client-1 requests the lock after a crash and before any restart: a crashed process \
         does nothing until it restarts"
    );
    let restarted = history()
        .request(0, C1)
        .crash(1, C1)
        .fault(2, FaultKind::Restart, &[C1])
        .request(3, C1)
        .grant(4, C1, 1)
        .end(10);
    assert_eq!(crate::support::verdict(&restarted).liveness.grants, 1);
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
