//! Read-write locks (`Shared` events): readers share the lock, a writer excludes everyone.
//! Two readers at once are no double holder and no stale op; a reader beside a writer is
//! both. The figures are each side's waits, and the longest, a starved writer's included.

use lockstep_check::{Percentiles, Validity};

use crate::support::{C1, C2, C3, grant, history, ms, verdict};

/// client-1 and client-2 hold the lock from 1-2 ms to 10-11 ms, each reading the counter;
/// `shared` says which of them asked as readers.
fn two_holders(first_shared: bool, second_shared: bool) -> lockstep_check::History {
    let mut h = history();
    if first_shared {
        h = h.shared(0, C1);
    }
    h = h.request(0, C1);
    if second_shared {
        h = h.shared(0, C2);
    }
    h.request(0, C2)
        .grant(1, C1, 1)
        .grant(2, C2, 1)
        .read(4, C2, 1, 1, 0)
        .read(5, C1, 1, 1, 0)
        .release(10, C1, 1)
        .release(11, C2, 1)
        .end(20)
}

#[test]
fn two_readers_at_once_share_the_lock() {
    let v = verdict(&two_holders(true, true));
    assert_eq!(v.double_holders.pairs, 0);
    assert_eq!(v.double_holders.overlap_ns, 0);
    assert_eq!(v.double_holders.max_concurrent, 2, "readers included");
    assert_eq!(
        v.stale_accepted.count, 0,
        "an older reader reads after a newer one"
    );
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Valid, Validity::Valid)
    );
    let rw = v.read_write.expect("readers");
    assert_eq!((rw.readers, rw.writers), (2, 0));
}

#[test]
fn a_reader_beside_a_writer_is_a_double_holder_and_its_late_read_is_stale() {
    // client-2 writes (exclusive, the newer grant); client-1, an older reader, reads after
    // client-2's read: stale, and the two overlapped.
    let v = verdict(&two_holders(true, false));
    assert_eq!(v.double_holders.pairs, 1);
    assert_eq!(v.double_holders.overlap_ns, ms(8));
    assert_eq!(v.stale_accepted.count, 1);
    assert_eq!(v.stale_accepted.examples[0].grant, grant(C1, 1));
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Invalid, Validity::Invalid)
    );
    // An older writer's op after a newer reader's is stale too: the reader saw a value the
    // writer then changed.
    let v = verdict(&two_holders(false, true));
    assert_eq!((v.double_holders.pairs, v.stale_accepted.count), (1, 1));
    assert_eq!(v.stale_accepted.examples[0].newer_grant, grant(C2, 1));
}

#[test]
fn only_time_with_a_writer_among_two_or_more_holders_is_overlap() {
    // Readers 1 and 2 from 0 to 30 ms; writer 3 from 10 to 20 ms: 10 ms of conflict, two
    // pairs (each reader with the writer), three at once.
    let h = history()
        .shared(0, C1)
        .request(0, C1)
        .shared(0, C2)
        .request(0, C2)
        .request(0, C3)
        .grant(0, C1, 1)
        .grant(0, C2, 1)
        .grant(10, C3, 1)
        .release(20, C3, 1)
        .release(30, C1, 1)
        .release(30, C2, 1)
        .end(40);
    let v = verdict(&h);
    assert_eq!(v.double_holders.pairs, 2);
    assert_eq!(v.double_holders.overlap_ns, ms(10));
    assert_eq!(v.double_holders.max_concurrent, 3);
}

#[test]
fn the_waits_of_each_side_count_a_writer_still_waiting_at_the_end() {
    // Readers get the lock in 1 and 3 ms; the writer asks at 5 ms and never gets it.
    let h = history()
        .shared(0, C1)
        .request(0, C1)
        .grant(1, C1, 1)
        .shared(2, C2)
        .request(2, C2)
        .grant(5, C2, 1)
        .request(5, C3)
        .release(50, C1, 1)
        .end(100);
    let rw = verdict(&h).read_write.expect("readers");
    assert_eq!((rw.readers, rw.writers), (2, 0));
    assert_eq!(
        rw.reader_wait,
        Some(Percentiles {
            p50_ns: ms(1),
            p99_ns: ms(3),
            max_ns: ms(3),
            count: 2
        })
    );
    assert_eq!(rw.writer_wait, None);
    assert_eq!(rw.longest_reader_wait_ns, ms(3));
    assert_eq!(rw.longest_writer_wait_ns, ms(95), "starved until the end");
}

#[test]
fn a_shared_request_that_gave_up_leaves_the_next_one_exclusive() {
    // client-1 asks as a reader and gives up, then asks as a writer: its grant excludes
    // client-2's reader.
    let h = history()
        .shared(0, C1)
        .request(0, C1)
        .acquire_failed(1, C1)
        .request(2, C1)
        .shared(2, C2)
        .request(2, C2)
        .grant(3, C1, 1)
        .grant(4, C2, 1)
        .release(10, C1, 1)
        .release(10, C2, 1)
        .end(20);
    let v = verdict(&h);
    assert_eq!(v.double_holders.pairs, 1);
    let rw = v.read_write.expect("a reader");
    assert_eq!((rw.readers, rw.writers), (1, 1));
}

#[test]
fn a_history_without_readers_has_no_read_write_figures() {
    assert_eq!(verdict(&two_holders(false, false)).read_write, None);
}

#[test]
fn shared_events_read_back_from_json_lines() {
    let h = two_holders(true, false);
    let text = lockstep_check::jsonl::write(&h, &Default::default());
    assert!(
        text.contains("{\"time_ns\":0,\"event\":\"shared\",\"client\":\"client-1\"}"),
        "{text}"
    );
    let back = lockstep_check::jsonl::parse(text.as_bytes()).expect("reads back");
    assert_eq!(back.history, h);
}

#[test]
fn readers_take_tokens_in_either_order_but_not_below_a_writers() {
    let monotonic = lockstep_check::Options {
        tokens_monotonic: true,
        ..lockstep_check::Options::default()
    };
    // Writer client-3 holds token 5; readers client-1 and client-2 then learn of tokens 8 and
    // 7, in that order: readers share, so that is no inversion.
    let readers = || {
        history()
            .request(0, C3)
            .grant_token(1, C3, 1, 5)
            .release(2, C3, 1)
            .shared(3, C1)
            .request(3, C1)
            .shared(3, C2)
            .request(3, C2)
            .grant_token(4, C1, 1, 8)
            .grant_token(5, C2, 1, 7)
            .release(6, C1, 1)
            .release(7, C2, 1)
    };
    let v = lockstep_check::check(&readers().end(20), &monotonic).expect("judged");
    assert_eq!(v.token_order.count, 0);
    assert_eq!(v.resource, Validity::Valid);
    // A writer after them must exceed both: 8 does not.
    let h = readers()
        .request(8, C3)
        .grant_token(9, C3, 2, 8)
        .release(10, C3, 2)
        .end(20);
    let v = lockstep_check::check(&h, &monotonic).expect("judged");
    assert_eq!(v.token_order.count, 1);
    assert_eq!(v.token_order.examples[0].later, grant(C3, 2));
    assert_eq!(v.token_order.examples[0].earlier_token, 8);
    // A reader below the earlier writer's token is one too.
    let h = readers()
        .shared(8, C2)
        .request(8, C2)
        .grant_token(9, C2, 2, 4)
        .release(10, C2, 2)
        .end(20);
    let v = lockstep_check::check(&h, &monotonic).expect("judged");
    assert_eq!(v.token_order.count, 1);
    assert_eq!(v.token_order.examples[0].earlier, grant(C3, 1));
}
