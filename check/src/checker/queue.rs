//! Job queue metrics: a history whose service is a job queue (`Enqueued`, `Claimed`,
//! `Dequeued`, `Done` events). Each job must be done exactly once: a job whose work finished twice (a worker that
//! lost its claim and still worked, the job then handed to another) and a job left behind
//! while later jobs were done both harm the resource, so they make both verdicts invalid.
//!
//! The definitions are in `docs/checker.md`, section "Job queue". They follow Jepsen's queue
//! checkers (every acknowledged enqueue dequeued once, none twice) with the work itself as the
//! effect: the queue is judged by what the workers did, not by what its table says.

use std::collections::{BTreeMap, BTreeSet};

use crate::history::{Event, FaultKind, History, NodeId};
use crate::verdict::{DoneTwice, Found, Queue};

use super::HistoryError;
use super::liveness::percentiles;

/// One job's life in the history.
#[derive(Clone, Copy, Debug)]
struct Job {
    enqueued_ns: u64,
    /// The first `Done`: its worker and time.
    done: Option<(NodeId, u64)>,
}

/// Every job's queue lag (enqueue to first dequeue) in `history`, in job order: the samples
/// of [`Queue::lag`], for pooling over runs. Jobs never dequeued give none.
pub fn queue_lags_ns(history: &History) -> Vec<u64> {
    let mut enqueued: BTreeMap<u64, (u64, Option<u64>)> = BTreeMap::new();
    for e in &history.entries {
        match e.event {
            Event::Enqueued { job } => {
                enqueued.entry(job).or_insert((e.time_ns, None));
            }
            Event::Dequeued { job, .. } => {
                if let Some((_, started)) = enqueued.get_mut(&job) {
                    started.get_or_insert(e.time_ns);
                }
            }
            _ => {}
        }
    }
    enqueued
        .values()
        .filter_map(|&(at, started)| started.map(|s| s - at))
        .collect()
}

/// The queue metrics of `history`, `None` when it has no `Enqueued` event.
///
/// # Errors
/// A [`HistoryError`] for a job enqueued twice, claimed or dequeued before it was enqueued,
/// or done by a worker that had not dequeued it.
pub(super) fn measure(history: &History, limit: usize) -> Result<Option<Queue>, HistoryError> {
    let mut jobs: BTreeMap<u64, Job> = BTreeMap::new();
    // The jobs each worker dequeued and has not yet reported done.
    let mut working: BTreeMap<(NodeId, u64), ()> = BTreeMap::new();
    // Each worker's job in progress: its last dequeue, until it is done or the worker crashes.
    let mut current: BTreeMap<NodeId, u64> = BTreeMap::new();
    // Each worker's last job claimed for it (`Claimed`, the queue's side) that it has not
    // dequeued since: its answer may still be on its way, the row held by its transaction.
    // Its next dequeue or its crash ends the claim; a claim never takes the place of the job
    // a worker is working on (a late statement of a connection it gave up may claim another).
    let mut claimed: BTreeMap<NodeId, u64> = BTreeMap::new();
    let mut done_twice = Found::default();
    for (entry, e) in history.entries.iter().enumerate() {
        match e.event {
            Event::Enqueued { job } => {
                if jobs.contains_key(&job) {
                    return Err(HistoryError::at(entry, format!("job {job} enqueued twice")));
                }
                jobs.insert(
                    job,
                    Job {
                        enqueued_ns: e.time_ns,
                        done: None,
                    },
                );
            }
            Event::Dequeued { job, client } => {
                if !jobs.contains_key(&job) {
                    return Err(HistoryError::at(
                        entry,
                        format!(
                            "{} dequeued job {job} before it was enqueued",
                            history.name(client)
                        ),
                    ));
                }
                working.insert((client, job), ());
                current.insert(client, job);
                if !claimed.is_empty() {
                    claimed.remove(&client);
                }
            }
            Event::Claimed { job, client } => {
                if !jobs.contains_key(&job) {
                    return Err(HistoryError::at(
                        entry,
                        format!(
                            "the queue gave job {job} to {} before it was enqueued",
                            history.name(client)
                        ),
                    ));
                }
                claimed.insert(client, job);
            }
            Event::Done { job, client } => {
                if working.remove(&(client, job)).is_none() {
                    return Err(HistoryError::at(
                        entry,
                        format!(
                            "{} finished job {job} without having dequeued it",
                            history.name(client)
                        ),
                    ));
                }
                if current.get(&client) == Some(&job) {
                    current.remove(&client);
                }
                let j = jobs.get_mut(&job).expect("dequeued, so enqueued");
                match j.done {
                    None => j.done = Some((client, e.time_ns)),
                    Some((first_client, first_ns)) => done_twice.record(
                        DoneTwice {
                            job,
                            first_client,
                            first_ns,
                            client,
                            time_ns: e.time_ns,
                            entry,
                        },
                        limit,
                    ),
                }
            }
            Event::Fault(ref f) if f.kind == FaultKind::Crash => {
                for n in &f.nodes {
                    current.remove(n);
                    claimed.remove(n);
                }
            }
            _ => {}
        }
    }
    if jobs.is_empty() {
        return Ok(None);
    }
    // Jobs never done: left when a worker still has it in progress at the end (dequeued by
    // it, or claimed for it and not dequeued since, the worker not crashed since) or when no
    // job enqueued after it was done (the backlog at the end of the run), lost otherwise.
    let last_done = jobs
        .iter()
        .filter(|(_, j)| j.done.is_some())
        .map(|(_, j)| j.enqueued_ns)
        .max();
    let in_progress: BTreeSet<u64> = current.into_values().chain(claimed.into_values()).collect();
    let mut lost = Found::default();
    let mut left = 0;
    for (&id, j) in &jobs {
        if j.done.is_some() {
            continue;
        }
        if in_progress.contains(&id) {
            left += 1;
            continue;
        }
        match last_done {
            Some(last) if j.enqueued_ns < last => lost.record(id, limit),
            _ => left += 1,
        }
    }
    Ok(Some(Queue {
        enqueued: jobs.len() as u64,
        done: jobs.values().filter(|j| j.done.is_some()).count() as u64,
        done_twice,
        lost,
        left,
        lag: percentiles(queue_lags_ns(history)),
    }))
}
