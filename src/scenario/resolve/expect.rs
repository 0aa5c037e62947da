//! `[expect]`: what a run is expected to show.

use lockstep_check::{Property, Validity};

use crate::expect::{Count, Expect};
use crate::scenario::schema::{ExpectSection, PropertyName, VerdictName};

pub(super) fn expect(e: &ExpectSection) -> Expect {
    let property = match e.property {
        PropertyName::Resource => Property::Resource,
        PropertyName::MutualExclusion => Property::MutualExclusion,
    };
    let verdict = match e.verdict {
        None | Some(VerdictName::Valid) => Some(Validity::Valid),
        Some(VerdictName::Invalid) => Some(Validity::Invalid),
        Some(VerdictName::Unknown) => Some(Validity::Unknown),
        Some(VerdictName::Any) => None,
    };
    let bounds = [
        (Count::DoubleHolders, e.double_holders),
        (Count::StaleAccepted, e.stale_accepted),
        (Count::StaleRejected, e.stale_rejected),
        (Count::LostUpdates, e.lost_updates),
        (Count::TokenOrder, e.token_order),
        (Count::Grants, e.grants),
    ]
    .into_iter()
    .filter_map(|(c, b)| b.map(|b| (c, b.min, b.max)))
    .collect();
    Expect {
        property,
        verdict,
        bounds,
        recovery: None,
    }
}
