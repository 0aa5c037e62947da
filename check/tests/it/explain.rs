//! `Verdict::explain`: one sentence per finding, naming processes, grants, ops, tokens and
//! true times.

use lockstep_check::Options;

use crate::support::{C1, C2, gc_pause_after_read, history, verdict, verdict_with};

#[test]
fn unfenced_gc_pause_is_explained_by_overlap_stale_write_and_lost_update() {
    let history = gc_pause_after_read(false);
    let lines = verdict(&history).explain(&history);
    let expected = [
        "critical sections overlapped: 1 pair of holders, 0.003000s in total with two or more \
         holders, at most 2 holders at once.",
        "2 holders at once: client-1 (grant client-1#1, token 33) and client-2 (grant \
         client-2#1, token 34) from 0.012000s to 0.015000s.",
        "stale op accepted at 0.018000s: client-1's write (op client-1#2, grant client-1#1, \
         token 33) after client-2's read (op client-2#1, grant client-2#1, token 34) from a \
         later grant.",
        "lost update at 0.018000s: client-1's write of 1 (op client-1#2, grant client-1#1, \
         token 33) was computed from 0 but storage held 1, so it overwrote a write it never saw.",
    ];
    assert_eq!(lines, expected);
}

#[test]
fn fenced_gc_pause_explains_the_overlap_and_what_fencing_rejected() {
    let history = gc_pause_after_read(true);
    let lines = verdict(&history).explain(&history);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(lines[1].starts_with("2 holders at once: client-1 (grant client-1#1, token 33)"));
    assert_eq!(
        lines[2],
        "fencing worked: storage rejected 1 op (not a violation)."
    );
}

#[test]
fn token_inversion_names_both_grants_and_tokens() {
    let history = history()
        .grant_token(0, C1, 1, 34)
        .release(10, C1, 1)
        .grant_token(20, C2, 1, 33)
        .end(30);
    let options = Options {
        tokens_monotonic: true,
        ..Options::default()
    };
    let lines = verdict_with(&history, &options).explain(&history);
    let expected = "fencing token did not increase at 0.020000s: client-2 got token 33 in grant \
                    client-2#1, not above token 34 of client-1's earlier grant client-1#1.";
    assert_eq!(lines, [expected]);
}

#[test]
fn findings_beyond_the_examples_are_counted() {
    let history = history().grant(0, C1, 1).grant(1, C2, 1).end(10);
    let options = Options {
        example_limit: 0,
        ..Options::default()
    };
    let lines = verdict_with(&history, &options).explain(&history);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert_eq!(lines[1], "... and 1 more overlapping pair, not listed.");
}

#[test]
fn an_incomplete_run_says_why_its_verdict_is_unknown() {
    let history = history().grant(0, C1, 1).incomplete().end(10);
    let lines = verdict(&history).explain(&history);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("the run hit its event or time bound"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_clean_complete_run_needs_no_explanation() {
    let history = history().grant(0, C1, 1).release(10, C1, 1).end(20);
    assert!(verdict(&history).explain(&history).is_empty());
}
