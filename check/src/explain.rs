//! Explanations: a verdict's findings as sentences a reader can check against the trace.
//!
//! Each sentence names the processes, grants, ops, fencing tokens and true times involved,
//! looked up in the history the verdict was computed from. The text depends only on the
//! verdict and the history, so it is as deterministic as they are.

use std::collections::BTreeMap;

use crate::history::{Event, GrantId, History, OpKind, StorageOp};
use crate::text::{counted, grant_label, op_label, seconds};
use crate::verdict::{
    DuplicateItem, Leadership, LostUpdate, Overlap, StaleOp, TokenInversion, Validity, Verdict,
};

impl Verdict {
    /// One sentence per reported example, plus a summary of the overlaps, a count of the
    /// findings beyond the examples, what fencing rejected, and why a verdict is unknown.
    ///
    /// `history` must be the history the verdict was computed from; entries or grants it does
    /// not have are described as unknown rather than causing a panic.
    pub fn explain(&self, history: &History) -> Vec<String> {
        let tokens = grant_tokens(history);
        let picks = crate::checker::grant_picks(history);
        let mut lines = Vec::new();
        let holders = &self.double_holders;
        if holders.pairs > 0 {
            lines.push(format!(
                "critical sections overlapped: {} of holders, {} in total with two or more \
                 holders, at most {} holders at once.",
                counted(holders.pairs, "pair", "pairs"),
                seconds(holders.overlap_ns),
                holders.max_concurrent
            ));
        }
        let overlaps = ("overlapping pair", "overlapping pairs");
        push_found(
            &mut lines,
            holders.pairs,
            &holders.examples,
            overlaps,
            |overlap| overlap_sentence(history, &tokens, &picks, overlap),
        );
        let (stale, lost, order) = (&self.stale_accepted, &self.lost_updates, &self.token_order);
        let kind = ("stale op accepted", "stale ops accepted");
        push_found(&mut lines, stale.count, &stale.examples, kind, |stale| {
            stale_sentence(history, &picks, stale)
        });
        let kind = ("lost update", "lost updates");
        push_found(&mut lines, lost.count, &lost.examples, kind, |lost| {
            lost_sentence(history, &picks, lost)
        });
        let kind = ("token order violation", "token order violations");
        push_found(
            &mut lines,
            order.count,
            &order.examples,
            kind,
            |inversion| inversion_sentence(history, inversion),
        );
        if let Some(leadership) = &self.leadership {
            leadership_lines(&mut lines, history, &tokens, leadership);
        }
        if let Some(queue) = &self.queue {
            let kind = ("job done twice", "jobs done twice");
            let twice = &queue.done_twice;
            push_found(&mut lines, twice.count, &twice.examples, kind, |d| {
                format!(
                    "job {} done twice: by {} at {}, and again by {} at {}.",
                    d.job,
                    history.name(d.first_client),
                    seconds(d.first_ns),
                    history.name(d.client),
                    seconds(d.time_ns)
                )
            });
            let kind = ("job lost", "jobs lost");
            push_found(
                &mut lines,
                queue.lost.count,
                &queue.lost.examples,
                kind,
                |job| format!("job {job} was never done, though jobs enqueued after it were."),
            );
        }
        if let Some(cron) = &self.cron {
            let kind = ("tick run twice", "ticks run twice");
            let twice = &cron.run_twice;
            push_found(&mut lines, twice.count, &twice.examples, kind, |r| {
                format!(
                    "tick {} run twice: by {} granted at {}, and again by {} granted at {}.",
                    r.tick,
                    grant_label(history, r.first),
                    seconds(r.first_ns),
                    grant_label(history, r.second),
                    seconds(r.second_ns)
                )
            });
            let kind = ("tick missed", "ticks missed");
            push_found(
                &mut lines,
                cron.missed.count,
                &cron.missed.examples,
                kind,
                |tick| format!("tick {tick} never ran, though a later tick came due."),
            );
        }
        if self.stale_rejected > 0 {
            lines.push(format!(
                "fencing worked: storage rejected {} (not a violation).",
                counted(self.stale_rejected, "op", "ops")
            ));
        }
        if self.resource == Validity::Unknown || self.mutual_exclusion == Validity::Unknown {
            lines.push(
                "the run hit its event or time bound before its planned end, so a property \
                 without violations is unknown rather than valid."
                    .to_owned(),
            );
        }
        lines
    }
}

/// The leadership findings: two leaders' work accepted together, items done twice, items
/// skipped.
fn leadership_lines(
    lines: &mut Vec<String>,
    history: &History,
    tokens: &BTreeMap<GrantId, Option<u64>>,
    leadership: &Leadership,
) {
    let pairs = &leadership.two_leaders;
    if leadership.two_leaders_ns > 0 {
        lines.push(format!(
            "work accepted from two leaders at once: {} of terms, {} in total.",
            counted(pairs.count, "pair", "pairs"),
            seconds(leadership.two_leaders_ns)
        ));
        let kind = ("pair of leaders", "pairs of leaders");
        push_found(lines, pairs.count, &pairs.examples, kind, |overlap| {
            format!(
                "2 leaders' work accepted together: {} and {} from {} to {}.",
                holder_words(history, tokens, overlap.first),
                holder_words(history, tokens, overlap.second),
                seconds(overlap.from_ns),
                seconds(overlap.to_ns)
            )
        });
    }
    let duplicates = &leadership.duplicate_items;
    let kind = ("item done twice", "items done twice");
    push_found(
        lines,
        duplicates.count,
        &duplicates.examples,
        kind,
        |item| duplicate_sentence(history, item),
    );
    let skipped = &leadership.skipped_items;
    if skipped.count > 0 {
        let listed: Vec<String> = skipped.examples.iter().map(u64::to_string).collect();
        let more = match skipped.count.saturating_sub(skipped.examples.len() as u64) {
            0 => String::new(),
            hidden => format!(" and {hidden} more"),
        };
        lines.push(format!(
            "{} skipped: no accepted write of {}{more}, below the highest value accepted.",
            counted(skipped.count, "item", "items"),
            listed.join(", ")
        ));
    }
}

fn duplicate_sentence(history: &History, item: &DuplicateItem) -> String {
    format!(
        "item {} done twice at {}: {} after {}.",
        item.value,
        seconds(item.time_ns),
        op_words(history, item.entry, true),
        op_words(history, item.first_entry, true)
    )
}

/// One sentence per example, then how many findings of the kind (`singular`, `plural`) are
/// not listed.
fn push_found<T>(
    lines: &mut Vec<String>,
    count: u64,
    examples: &[T],
    (singular, plural): (&str, &str),
    sentence: impl Fn(&T) -> String,
) {
    lines.extend(examples.iter().map(sentence));
    let hidden = count.saturating_sub(examples.len() as u64);
    if hidden > 0 {
        let kind = if hidden == 1 { singular } else { plural };
        lines.push(format!("... and {hidden} more {kind}, not listed."));
    }
}

/// Each grant's fencing token, from the `Grant` events.
fn grant_tokens(history: &History) -> BTreeMap<GrantId, Option<u64>> {
    let grants = history
        .entries
        .iter()
        .filter_map(|entry| match entry.event {
            Event::Grant { grant, token, .. } => Some((grant, token)),
            _ => None,
        });
    grants.collect()
}

/// ` of lock 3`, when the history picks locks.
fn lock_words(picks: &BTreeMap<GrantId, (u64, u64)>, grant: GrantId) -> String {
    picks
        .get(&grant)
        .map_or(String::new(), |(lock, _)| format!(" of lock {lock}"))
}

/// ` on resource 5`, for the op at `entry`, when the history picks resources.
fn resource_words(
    history: &History,
    picks: &BTreeMap<GrantId, (u64, u64)>,
    entry: usize,
) -> String {
    storage_op(history, entry)
        .and_then(|op| picks.get(&op.grant))
        .map_or(String::new(), |(_, resource)| {
            format!(" on resource {resource}")
        })
}

/// `, token 33` or `, no token`.
fn token_words(token: Option<u64>) -> String {
    match token {
        Some(token) => format!(", token {token}"),
        None => ", no token".to_owned(),
    }
}

/// `client-1 (grant client-1#1, token 33)`.
fn holder_words(
    history: &History,
    tokens: &BTreeMap<GrantId, Option<u64>>,
    grant: GrantId,
) -> String {
    let token = tokens.get(&grant).copied().flatten();
    format!(
        "{} (grant {}{})",
        history.name(grant.client),
        grant_label(history, grant),
        token_words(token)
    )
}

fn overlap_sentence(
    history: &History,
    tokens: &BTreeMap<GrantId, Option<u64>>,
    picks: &BTreeMap<GrantId, (u64, u64)>,
    overlap: &Overlap,
) -> String {
    format!(
        "2 holders at once{}: {} and {} from {} to {}.",
        lock_words(picks, overlap.second),
        holder_words(history, tokens, overlap.first),
        holder_words(history, tokens, overlap.second),
        seconds(overlap.from_ns),
        seconds(overlap.to_ns)
    )
}

/// The storage op at `entry`, if the history has one there.
fn storage_op(history: &History, entry: usize) -> Option<&StorageOp> {
    match &history.entries.get(entry)?.event {
        Event::Storage(op) => Some(op),
        _ => None,
    }
}

/// `client-1's write (op client-1#3, grant client-1#1, token 33)`, for the op at `entry`;
/// with `show_value`, a write says what it wrote: `client-1's write of 5 (...)`.
fn op_words(history: &History, entry: usize, show_value: bool) -> String {
    let Some(op) = storage_op(history, entry) else {
        return format!("an unknown op (entry {entry})");
    };
    let kind = match op.kind {
        OpKind::Read { .. } => "read".to_owned(),
        OpKind::Write { value, .. } if show_value => format!("write of {value}"),
        OpKind::Write { .. } => "write".to_owned(),
        OpKind::Claim => "claim".to_owned(),
    };
    format!(
        "{}'s {kind} (op {}, grant {}{})",
        history.name(op.op.client),
        op_label(history, op.op),
        grant_label(history, op.grant),
        token_words(op.token)
    )
}

fn stale_sentence(
    history: &History,
    picks: &BTreeMap<GrantId, (u64, u64)>,
    stale: &StaleOp,
) -> String {
    format!(
        "stale op accepted at {}{}: {} after {} from a later grant.",
        seconds(stale.time_ns),
        resource_words(history, picks, stale.entry),
        op_words(history, stale.entry, false),
        op_words(history, stale.newer_entry, false)
    )
}

fn lost_sentence(
    history: &History,
    picks: &BTreeMap<GrantId, (u64, u64)>,
    lost: &LostUpdate,
) -> String {
    format!(
        "lost update at {}{}: {} was computed from {} but storage held {}, so it overwrote a \
         write it never saw.",
        seconds(lost.time_ns),
        resource_words(history, picks, lost.entry),
        op_words(history, lost.entry, true),
        lost.base,
        lost.current
    )
}

fn inversion_sentence(history: &History, inversion: &TokenInversion) -> String {
    format!(
        "fencing token did not increase at {}: {} got token {} in grant {}, not above token {} \
         of {}'s earlier grant {}.",
        seconds(inversion.time_ns),
        history.name(inversion.later.client),
        inversion.later_token,
        grant_label(history, inversion.later),
        inversion.earlier_token,
        history.name(inversion.earlier.client),
        grant_label(history, inversion.earlier)
    )
}
