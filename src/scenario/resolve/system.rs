//! The workload every family's clients run (`[workload]`). The family's own keys are its own
//! (`lockstep_models::Family::resolve`), and where the resource lives is read with the
//! family's storage mode in `super::super::family`. The keys every kind shares are typed in
//! the section; `kind` names one of the workload registry's kinds
//! (`lockstep_models::workload`), which reads its own keys and says what it needs of the
//! family. A key of another kind is named with the kind that takes it.

use lockstep_models::keys::Check;
use lockstep_models::system::client_name;
use lockstep_models::workload::PerClient;
use lockstep_models::workload::{
    Acquire, Shared, VisitWorkload, Workload, WorkloadConfig, WorkloadKind, for_each_workload,
};
use lockstep_models::{Counter, keys::fields};
use std::sync::Arc;

use crate::scenario::error::{key_path, toml_key};
use crate::scenario::schema::{AcquireName, SHARED_WORKLOAD_KEYS, WorkloadSection, default_think};

/// The number of clients and their workload.
pub(crate) fn workload(check: &mut Check, w: &WorkloadSection) -> (u32, WorkloadConfig) {
    if !(1..=1000).contains(&w.clients) {
        check.problems.push(
            "workload.clients",
            format!("must be between 1 and 1000, not {}", w.clients),
        );
    }
    let workload = WorkloadConfig {
        think: check.dist(
            "workload.think_ms",
            w.think_ms.unwrap_or_else(default_think),
        ),
        work: check.dist("workload.work_ms", w.work_ms),
        check_validity_before_write: w.check_validity_before_write,
        storage_timeout: check.positive_ms("workload.storage_timeout_ms", w.storage_timeout_ms),
        kind: kind(check, w),
        acquire: w.acquire.map(|a| match a {
            AcquireName::Block => Acquire::Block,
            AcquireName::Try => Acquire::Try,
        }),
        // Set with the family, which must count its requests too (`super::super::family`).
        count_herd: false,
        reenter: w.reenter,
        per_client: Arc::from([]),
    };
    let clients = w.clients.clamp(1, 1000);
    let per_client = per_client(check, w, clients, &workload);
    (
        clients,
        WorkloadConfig {
            per_client,
            ..workload
        },
    )
}

/// `[workload.per_client]`: each client named is one of the run's, its start within the
/// bounds of a time, its rows (with `kind = "keys"`) among the workload's, none twice.
fn per_client(
    check: &mut Check,
    w: &WorkloadSection,
    clients: u32,
    workload: &WorkloadConfig,
) -> Arc<[PerClient]> {
    let Some(table) = &w.per_client else {
        return Arc::from([]);
    };
    let mut own = vec![PerClient::default(); clients as usize];
    for (name, section) in table {
        let path = format!("workload.per_client.{}", toml_key(name));
        let index = name
            .strip_prefix("client-")
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| (1..=clients).contains(n) && *name == client_name(*n));
        let Some(index) = index else {
            check.problems.push(
                path,
                format!(
                    "no client named `{name}`: the clients are client-1 ... client-{clients} \
                     (workload.clients = {clients})"
                ),
            );
            continue;
        };
        let mine = &mut own[index as usize - 1];
        if let Some(ms) = section.start_ms {
            mine.start = check.ms(&format!("{path}.start_ms"), ms);
        }
        if let Some(rows) = &section.rows {
            let at = format!("{path}.rows");
            match workload.keys() {
                None => check
                    .problems
                    .push(at, "applies only to many keys: needs `kind = \"keys\"`"),
                Some(_) if rows.is_empty() => check.problems.push(at, "names no row"),
                Some(keys) => {
                    let mut seen = std::collections::BTreeSet::new();
                    for (i, &row) in rows.iter().enumerate() {
                        let p = format!("{at}[{i}]");
                        if row >= keys.rows {
                            check.problems.push(
                                p,
                                format!(
                                    "row {row} does not exist: rows are 0 to {} \
                                     (workload.rows = {})",
                                    keys.rows - 1,
                                    keys.rows
                                ),
                            );
                        } else if !seen.insert(row) {
                            check.problems.push(p, format!("row {row} is named twice"));
                        }
                    }
                    mine.rows = Some(rows.as_slice().into());
                }
            }
        }
    }
    own.into()
}

/// One kind of the registry, as the loader sees it.
struct Kind {
    name: &'static str,
    what: &'static str,
    keys: &'static [&'static str],
}

/// Every kind of the registry, in its order.
fn kinds() -> Vec<Kind> {
    struct List(Vec<Kind>);
    impl VisitWorkload for List {
        fn visit<W: Workload>(&mut self) {
            self.0.push(Kind {
                name: W::KIND,
                what: W::WHAT,
                keys: fields::<W::Keys>(),
            });
        }
    }
    let mut list = List(Vec::new());
    for_each_workload(&mut list);
    list.0
}

/// `"a"`, `` `a` and `b` ``: the keys, quoted as serde does.
fn ticked(keys: &[&str]) -> String {
    let keys: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    keys.join(", ")
}

/// The kind `w` names (the counter loop when it names none), from its own keys. A key of
/// another kind is a problem naming that kind; an unknown key lists the keys there are.
fn kind(check: &mut Check, w: &WorkloadSection) -> WorkloadKind {
    let kinds = kinds();
    let name = w.kind.as_deref().unwrap_or(Counter::KIND);
    let Some(ours) = kinds.iter().find(|k| k.name == name) else {
        let names: Vec<&str> = kinds.iter().map(|k| k.name).collect();
        check.problems.push(
            "workload.kind",
            format!("unknown value `{name}`, expected one of {}", ticked(&names)),
        );
        return Counter.into();
    };
    if w.own.keys().any(|k| k.starts_with("$__toml_private")) {
        // The TOML reader's own key: the section was a date, read as a table.
        check
            .problems
            .push("workload", "a date or time is not a value this key takes");
        return Counter.into();
    }
    let mut own = toml::Table::new();
    for (key, value) in &w.own {
        if ours.keys.contains(&key.as_str()) {
            own.insert(key.clone(), value.clone());
            continue;
        }
        let takers: Vec<&Kind> = kinds
            .iter()
            .filter(|k| k.keys.contains(&key.as_str()))
            .collect();
        let problem = match takers.as_slice() {
            [] => {
                let mut known = SHARED_WORKLOAD_KEYS.to_vec();
                known.extend_from_slice(ours.keys);
                format!("unknown field `{key}`, expected one of {}", ticked(&known))
            }
            [one] => format!(
                "applies only to {}: needs `kind = \"{}\"`",
                one.what, one.name
            ),
            many => {
                let names: Vec<String> = many.iter().map(|k| format!("\"{}\"", k.name)).collect();
                format!(
                    "applies to kind = {} only, not to \"{name}\"",
                    names.join(", ")
                )
            }
        };
        check.problems.push(format!("workload.{key}"), problem);
    }
    let shared = Shared {
        clients: w.clients.clamp(1, 1000),
        think_given: w.think_ms.is_some(),
    };
    let mut resolve = Resolve {
        name,
        own,
        shared,
        check,
        kind: None,
    };
    for_each_workload(&mut resolve);
    resolve.kind.unwrap_or_else(|| Counter.into())
}

/// Reads kind `name`'s own keys and resolves its settings.
struct Resolve<'a> {
    name: &'a str,
    own: toml::Table,
    shared: Shared,
    check: &'a mut Check,
    kind: Option<WorkloadKind>,
}

impl VisitWorkload for Resolve<'_> {
    fn visit<W: Workload>(&mut self) {
        if W::KIND != self.name {
            return;
        }
        let table = toml::Value::Table(std::mem::take(&mut self.own));
        match serde_path_to_error::deserialize::<_, W::Keys>(table) {
            Ok(keys) => self.kind = Some(W::resolve(&keys, &self.shared, self.check).into()),
            Err(e) => {
                let key = match key_path(e.path()) {
                    p if p.is_empty() => "workload".to_string(),
                    p => format!("workload.{p}"),
                };
                self.check
                    .problems
                    .push(key, e.inner().message().to_string());
            }
        }
    }
}
