//! Integration tests of lockstep-check: hand-written histories, each judged through the public
//! API, one module per kind of finding. Histories that must not be flagged sit beside the ones
//! that must, so a check that flags too much fails as surely as one that flags too little.

mod cron;
mod double_holders;
mod examples;
mod explain;
mod keys;
mod leadership;
mod liveness;
mod lost_updates;
mod malformed;
mod queue;
mod read_write;
mod reentry;
mod scenarios;
mod stale_ops;
mod support;
mod token_order;
mod validity;
