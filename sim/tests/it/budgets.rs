//! The memory budget: what the world counts, including what the processes say they hold,
//! stops a run at the same event every time.

use lockstep_sim::{Outcome, World};

use crate::support::*;

/// A sender of 5,000 notes, one a millisecond, to a receiver that holds `held_per_note`
/// bytes for each, under a 2 MB budget.
fn notes(held_per_note: u64) -> (World<Probe>, Outcome) {
    let mut cfg = config(1, 10, 2);
    cfg.memory_budget = 2 << 20;
    let receiver = Probe {
        held_per_note,
        ..Probe::default()
    };
    let mut w = world_with(cfg, vec![Probe::sender(1, 1, 5_000), receiver]);
    let outcome = w.run();
    (w, outcome)
}

#[test]
fn what_a_process_holds_counts_toward_the_memory_budget() {
    // The world's own records fit: the run completes.
    let (light, outcome) = notes(0);
    assert_eq!(outcome, Outcome::Completed);
    assert_eq!(records(&light, 1).len(), 5_000);
    // 10 KB a note passes 2 MB after about 200 notes: the run stops at the next check.
    let (heavy, outcome) = notes(10 << 10);
    assert!(matches!(outcome, Outcome::OverMemory { .. }), "{outcome:?}");
    let got = records(&heavy, 1).len();
    assert!((200..1_000).contains(&got), "{got} notes");
    assert!(heavy.memory_estimate() > 2 << 20);
    // At the same event every time.
    let (again, _) = notes(10 << 10);
    assert_eq!(
        (again.events(), again.trace_hash()),
        (heavy.events(), heavy.trace_hash())
    );
}
