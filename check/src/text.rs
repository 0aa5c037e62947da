//! Wording shared by the checker's errors and the verdict's explanations.
//!
//! Errors and explanations must name a grant, an op or a true time the same way, so a reader
//! can search a trace for what a message names. Nothing here decides anything.

use crate::history::{GrantId, History, OpId};

/// A true time as seconds with six decimals, such as `12.345678s`.
///
/// Integer arithmetic only, so the text is the same on every platform; the sub-microsecond
/// part is cut off, never rounded up into the next second.
pub(crate) fn seconds(time_ns: u64) -> String {
    let whole = time_ns / 1_000_000_000;
    let micros = time_ns % 1_000_000_000 / 1_000;
    format!("{whole}.{micros:06}s")
}

/// A grant as `client-1#2`: the holder's name and its per-client sequence number.
pub(crate) fn grant_label(history: &History, grant: GrantId) -> String {
    format!("{}#{}", history.name(grant.client), grant.seq)
}

/// An op as `client-1#3`: the sender's name and its per-client sequence number.
pub(crate) fn op_label(history: &History, op: OpId) -> String {
    format!("{}#{}", history.name(op.client), op.seq)
}

/// `1 pair` or `2 pairs`: English plurals for counts in explanations.
pub(crate) fn counted(count: u64, singular: &str, plural: &str) -> String {
    if count == 1 {
        format!("1 {singular}")
    } else {
        format!("{count} {plural}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::NodeId;

    #[test]
    fn seconds_keep_six_decimals_and_truncate_below_a_microsecond() {
        assert_eq!(seconds(0), "0.000000s");
        assert_eq!(seconds(12_345_678_999), "12.345678s");
        assert_eq!(seconds(10_000_000_000), "10.000000s");
        assert_eq!(seconds(999), "0.000000s");
    }

    #[test]
    fn labels_use_history_names_and_fall_back_to_node_index() {
        let history = History {
            names: vec!["client-1".into()],
            ..History::default()
        };
        let named = GrantId {
            client: NodeId(0),
            seq: 2,
        };
        let unnamed = OpId {
            client: NodeId(7),
            seq: 3,
        };
        assert_eq!(grant_label(&history, named), "client-1#2");
        assert_eq!(op_label(&history, unnamed), "node-7#3");
    }

    #[test]
    fn counted_picks_singular_only_for_one() {
        assert_eq!(counted(1, "pair", "pairs"), "1 pair");
        assert_eq!(counted(0, "pair", "pairs"), "0 pairs");
        assert_eq!(counted(3, "pair", "pairs"), "3 pairs");
    }
}
