//! The registry's families as the loader sees them: every family that
//! `lockstep_models::for_each_family` lists, each behind [`Registered`]. Shared code asks this
//! list and never names a family (`tests/it/architecture.rs` holds it to that).

use std::sync::OnceLock;

use lockstep_models::family::{Family, Visit};

use crate::scenario::family::{Entry, Registered};

/// Every family of the registry, in its order (the order errors list them in).
pub fn all() -> &'static [&'static dyn Registered] {
    static ALL: OnceLock<Vec<&'static dyn Registered>> = OnceLock::new();
    ALL.get_or_init(|| {
        struct Collect(Vec<&'static dyn Registered>);
        impl Visit for Collect {
            fn visit<F: Family>(&mut self) {
                // An entry is zero-sized: leaking one allocates nothing.
                let entry: &'static Entry<F> = Box::leak(Box::new(Entry::<F>::NEW));
                self.0.push(entry);
            }
        }
        let mut all = Collect(Vec::new());
        lockstep_models::for_each_family(&mut all);
        all.0
    })
}
