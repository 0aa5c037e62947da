//! Job queue metrics: jobs done, done twice, lost and left, and the queue lag, from the
//! `Enqueued`, `Dequeued` and `Done` events. A job done twice or lost makes both verdicts
//! invalid; a backlog at the end does not.

use lockstep_check::{DoneTwice, Percentiles, Validity, check};

use crate::support::{C1, C2, history, ms, verdict};

#[test]
fn a_history_without_jobs_has_no_queue_figures() {
    let h = history().grant(0, C1, 1).release(10, C1, 1).end(20);
    assert_eq!(verdict(&h).queue, None);
}

#[test]
fn jobs_done_once_each_are_valid_with_their_lag_and_a_backlog_is_not_a_loss() {
    // Job 1 waits 5 ms for client-1; job 2 waits 2 ms for client-2; job 3 is never taken.
    let h = history()
        .enqueued(0, 1)
        .enqueued(1, 2)
        .dequeued(3, C2, 2)
        .dequeued(5, C1, 1)
        .done(8, C2, 2)
        .done(9, C1, 1)
        .enqueued(10, 3)
        .end(20);
    let v = verdict(&h);
    let q = v.queue.as_ref().expect("jobs");
    assert_eq!((q.enqueued, q.done, q.left), (3, 2, 1));
    assert_eq!((q.done_twice.count, q.lost.count), (0, 0));
    assert_eq!(
        q.lag,
        Some(Percentiles {
            p50_ns: ms(2),
            p99_ns: ms(5),
            max_ns: ms(5),
            count: 2
        })
    );
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Valid, Validity::Valid)
    );
}

#[test]
fn a_job_done_again_by_another_worker_is_invalid_and_explained() {
    // client-1 does job 1 and loses its claim before the commit; client-2 takes it again.
    let h = history()
        .enqueued(0, 1)
        .dequeued(1, C1, 1)
        .done(4, C1, 1)
        .dequeued(6, C2, 1)
        .done(9, C2, 1)
        .end(20);
    let v = verdict(&h);
    let q = v.queue.as_ref().expect("jobs");
    assert_eq!(q.done, 1);
    assert_eq!(
        q.done_twice.examples,
        [DoneTwice {
            job: 1,
            first_client: C1,
            first_ns: ms(4),
            client: C2,
            time_ns: ms(9),
            entry: 4,
        }]
    );
    assert_eq!(
        q.lag.map(|l| l.count),
        Some(1),
        "the lag counts the first dequeue"
    );
    assert_eq!(
        (v.resource, v.mutual_exclusion),
        (Validity::Invalid, Validity::Invalid)
    );
    let why = v.explain(&h);
    assert!(
        why.iter()
            .any(|l| l.contains("job 1 done twice: by client-1 at 0.004000s")
                && l.contains("client-2 at 0.009000s")),
        "{why:#?}"
    );
}

#[test]
fn a_job_left_behind_while_later_ones_are_done_is_lost() {
    let h = history()
        .enqueued(0, 1)
        .enqueued(1, 2)
        .enqueued(2, 3)
        .dequeued(3, C1, 1)
        .dequeued(3, C2, 3)
        .done(5, C2, 3)
        .crash(6, C1)
        .end(20);
    let v = verdict(&h);
    let q = v.queue.as_ref().expect("jobs");
    // Job 1 was taken by a worker that crashed with it, job 2 never taken: both behind job 3.
    assert_eq!(q.lost.examples, [1, 2]);
    assert_eq!(q.left, 0);
    assert_eq!(v.resource, Validity::Invalid);
    assert!(
        v.explain(&h)
            .iter()
            .any(|l| l.contains("job 1 was never done, though jobs enqueued after it were")),
    );
}

#[test]
fn a_job_dequeued_before_its_enqueue_or_done_by_a_stranger_is_a_history_error() {
    let h = history().dequeued(1, C1, 7).end(5);
    let e = check(&h, &Default::default()).unwrap_err();
    assert_eq!(e.entry, Some(0));
    assert!(
        e.message
            .contains("client-1 dequeued job 7 before it was enqueued"),
        "{e}"
    );
    let h = history()
        .enqueued(0, 7)
        .dequeued(1, C1, 7)
        .done(2, C2, 7)
        .end(5);
    let e = check(&h, &Default::default()).unwrap_err();
    assert!(
        e.message
            .contains("client-2 finished job 7 without having dequeued it"),
        "{e}"
    );
    let h = history().enqueued(0, 7).enqueued(1, 7).end(5);
    assert!(
        check(&h, &Default::default())
            .unwrap_err()
            .message
            .contains("job 7 enqueued twice")
    );
}

#[test]
fn a_job_in_progress_at_the_end_is_left_unless_its_worker_crashed() {
    let base = || {
        history()
            .enqueued(0, 1)
            .enqueued(1, 2)
            .dequeued(2, C1, 1)
            .dequeued(3, C2, 2)
            .done(5, C2, 2)
    };
    // client-1 still works on job 1 when the run ends: the backlog, not a loss.
    let q = verdict(&base().end(20)).queue.expect("jobs");
    assert_eq!((q.left, q.lost.count), (1, 0));
    // client-1 crashed with it: its claim went with it, and nobody took job 1 again.
    let q = verdict(&base().crash(6, C1).end(20)).queue.expect("jobs");
    assert_eq!((q.left, q.lost.examples), (0, vec![1]));
}

#[test]
fn a_job_claimed_for_a_worker_that_has_not_heard_yet_is_left_not_lost() {
    // The queue gives job 1 to client-1 and job 2 to client-2; client-2's answer arrives
    // first and it does job 2; client-1's is still on its way when the run ends.
    let base = || {
        history()
            .enqueued(0, 1)
            .enqueued(1, 2)
            .claimed(2, C1, 1)
            .claimed(3, C2, 2)
            .dequeued(4, C2, 2)
            .done(4, C2, 2)
    };
    let v = verdict(&base().end(20));
    let q = v.queue.as_ref().expect("jobs");
    assert_eq!((q.done, q.left, q.lost.count), (1, 1, 0));
    assert_eq!(v.resource, Validity::Valid);
    assert_eq!(
        q.lag.map(|l| l.count),
        Some(1),
        "the lag counts dequeues, not claims"
    );
    // A claim lost and never redone is still a loss: client-1 crashed with its answer on
    // the way, or it went on to another job, and nobody took job 1 again.
    let q = verdict(&base().crash(6, C1).end(20)).queue.expect("jobs");
    assert_eq!((q.left, q.lost.examples), (0, vec![1]));
    let q = verdict(
        &base()
            .enqueued(5, 3)
            .claimed(6, C1, 3)
            .dequeued(7, C1, 3)
            .done(8, C1, 3)
            .end(20),
    )
    .queue
    .expect("jobs");
    assert_eq!((q.left, q.lost.examples), (0, vec![1]));
    // A claim never takes the place of the job a worker works on: a late statement of a
    // connection client-1 gave up claims job 3 for it while it works on job 1.
    let q = verdict(
        &base()
            .dequeued(5, C1, 1)
            .enqueued(6, 3)
            .claimed(7, C1, 3)
            .enqueued(8, 4)
            .claimed(9, C2, 4)
            .dequeued(10, C2, 4)
            .done(11, C2, 4)
            .end(20),
    )
    .queue
    .expect("jobs");
    assert_eq!(
        (q.left, q.lost.count),
        (2, 0),
        "jobs 1 and 3 are client-1's"
    );
    // A claim of a job never enqueued is refused.
    let e = check(&history().claimed(1, C1, 7).end(5), &Default::default()).unwrap_err();
    assert_eq!(e.entry, Some(0));
    assert_eq!(
        e.message,
        "the queue gave job 7 to client-1 before it was enqueued"
    );
}
