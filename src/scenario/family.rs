//! Lock families as the loader sees them: what `model.kind` names. [`Entry`] gives any
//! [`Family`] the face of [`Registered`]; the registry (`crate::families`) lists one per family.
//!
//! A file is read in the types of its family: its `[model]` section is the family's keys, its
//! `[storage]` the storage node's mode or the family's own resource. Which keys belong to which
//! family, and which fencing values and storage modes, is asked of the registry, so an error
//! about another family's key names the families that take it.

use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

use lockstep_models::StorageMode;
use lockstep_models::family::{Family, Fencing, ResourceOf, Role, Tokens};
use lockstep_models::keys::{Check, fields};
use lockstep_models::system::{Resource, System, SystemSpec};
use lockstep_models::workload::{WorkloadConfig, WorkloadKind};
use serde::de::DeserializeOwned;

use super::Scenario;
use super::error::ScenarioError;
use super::resolve::{self, Resolver};
use super::schema::{AcquireName, File, StorageSection};
use crate::families;

/// A lock family in the registry.
pub trait Registered: Sync {
    /// Its `model.kind`, which is also its folder under `models/src/`.
    fn kind(&self) -> &'static str;
    /// Its name in sentences.
    fn name(&self) -> &'static str;
    /// Its `[model]` keys.
    fn model_keys(&self) -> &'static [&'static str];
    /// Its fencing values besides `none`.
    fn fencing(&self) -> &'static [Fencing];
    /// The storage mode under which its service keeps the resource, if any.
    fn resource_mode(&self) -> Option<&'static str>;
    /// The `[storage]` keys of that mode besides `mode`.
    fn resource_keys(&self) -> &'static [&'static str];
    /// Reads and checks a scenario file of this family: its text, and the same parsed.
    ///
    /// # Errors
    /// The first problem of syntax or type, or every problem of meaning.
    fn parse(
        &self,
        text: &str,
        table: &toml::Table,
        path: &Path,
    ) -> Result<Scenario, ScenarioError>;
}

/// The registry's face of family `F`.
#[derive(Debug)]
pub struct Entry<F>(PhantomData<fn() -> F>);

impl<F> Entry<F> {
    /// The entry.
    pub const NEW: Entry<F> = Entry(PhantomData);
}

/// The registered family of kind `kind`.
pub(crate) fn find(kind: &str) -> Option<&'static dyn Registered> {
    families::all().iter().copied().find(|f| f.kind() == kind)
}

/// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
pub(crate) fn quoted_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("\"{i}\"")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl<F: Family> Registered for Entry<F> {
    fn kind(&self) -> &'static str {
        F::KIND
    }

    fn name(&self) -> &'static str {
        F::NAME
    }

    fn model_keys(&self) -> &'static [&'static str] {
        fields::<F::Keys>()
    }

    fn fencing(&self) -> &'static [Fencing] {
        F::FENCING
    }

    fn resource_mode(&self) -> Option<&'static str> {
        F::RESOURCE_MODE
    }

    fn resource_keys(&self) -> &'static [&'static str] {
        fields::<F::ResourceKeys>()
    }

    fn parse(
        &self,
        text: &str,
        table: &toml::Table,
        path: &Path,
    ) -> Result<Scenario, ScenarioError> {
        // Keys and fencing values of other families are problems of meaning, reported all at
        // once with the families that take them; the rest of the file is then read without
        // them (losing line numbers, which those reports do not need).
        let foreign = foreign_model_keys(self, table);
        let file: File<F::Keys> = if foreign.is_empty() {
            super::deserialize(toml::Deserializer::parse(text), text, path)?
        } else {
            let keys: Vec<&str> = foreign.iter().map(|(k, _)| k.as_str()).collect();
            match without_keys(text, "model", &keys) {
                Some(rest) => super::deserialize(toml::Deserializer::parse(&rest), &rest, path)?,
                None => {
                    // A key whose place the text does not show (a dotted key): read the table.
                    let mut cleaned = table.clone();
                    if let Some(m) = cleaned.get_mut("model").and_then(toml::Value::as_table_mut) {
                        for key in keys {
                            m.remove(key);
                        }
                    }
                    from_table(toml::Value::Table(cleaned), path)?
                }
            }
        };
        resolve::resolve(&file, |r| system::<F>(r, &file, foreign))
            .map_err(|problems| ScenarioError::from_problems(path, problems))
    }
}

/// `text` with the `key = value` of each of `keys` in table `section` blanked out (spaces;
/// line breaks kept), so that the rest reads, line for line, as if they were not there; `None`
/// when the text does not show where one of them is, or the rest does not parse.
fn without_keys(text: &str, section: &str, keys: &[&str]) -> Option<String> {
    let doc = toml_edit::Document::parse(text).ok()?;
    let table = doc.as_table().get(section)?.as_table_like()?;
    let mut bytes = text.as_bytes().to_vec();
    for key in keys {
        let (k, v) = table.get_key_value(key)?;
        let (start, end) = (k.span()?.start, v.span()?.end);
        for b in bytes.get_mut(start..end)? {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }
    let rest = String::from_utf8(bytes).ok()?;
    rest.parse::<toml::Table>().ok()?;
    Some(rest)
}

/// A file read from a table (whose line numbers are gone).
fn from_table<T: DeserializeOwned>(table: toml::Value, path: &Path) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(table).map_err(|e| {
        let key = super::error::key_path(e.path());
        ScenarioError::one(path, &key, None, e.inner().message().to_string())
    })
}

/// The `[model]` keys of `table` that `family` does not take but another does, each with its
/// problem; and a `fencing` value of another family's.
fn foreign_model_keys(family: &dyn Registered, table: &toml::Table) -> Vec<(String, String)> {
    let Some(model) = table.get("model").and_then(toml::Value::as_table) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for key in model.keys() {
        if family.model_keys().contains(&key.as_str()) {
            continue;
        }
        let takers: Vec<&str> = families::all()
            .iter()
            .filter(|f| f.model_keys().contains(&key.as_str()))
            .map(|f| f.kind())
            .collect();
        if !takers.is_empty() {
            let problem = format!(
                "applies to kind = {} only, not to \"{}\"",
                quoted_list(&takers),
                family.kind()
            );
            out.push((key.clone(), problem));
        }
    }
    let fencing = model.get("fencing").and_then(toml::Value::as_str);
    let ours = |v: &str| v == "none" || family.fencing().iter().any(|f| f.name == v);
    if let Some(v) = fencing.filter(|v| !ours(v)) {
        let owner = families::all()
            .iter()
            .find_map(|f| f.fencing().iter().find(|x| x.name == v).map(|x| (f, x)));
        if let Some((f, token)) = owner {
            let ours: Vec<String> = family
                .fencing()
                .iter()
                .map(|x| format!("\"{}\" ({})", x.name, x.what))
                .collect();
            let ours = match ours.split_last() {
                None => "none".to_string(),
                Some((last, [])) => last.clone(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            };
            let problem = format!(
                "\"{v}\" is {}'s token ({}); {}'s: {ours}",
                f.name(),
                token.what,
                family.name(),
            );
            out.push(("fencing".to_string(), problem));
        }
    }
    out
}

/// The system of a file of family `F`: its settings, the workload and where the resource
/// lives, every problem noted in `r` in the order the keys come.
fn system<F: Family>(
    r: &mut Resolver,
    file: &File<F::Keys>,
    foreign: Vec<(String, String)>,
) -> Arc<dyn System> {
    let check: &mut Check = &mut r.check;
    for (key, problem) in foreign {
        check.problems.push(format!("model.{key}"), problem);
    }
    let mut family = F::resolve(&file.model, check);
    if file.workload.acquire == Some(AcquireName::Try) && !family.try_once() {
        check.problems.push(
            "workload.acquire",
            format!(
                "\"try\" needs a lock client with a try form (see the families' pages in \
                 docs/families/); {} as set has none",
                F::NAME
            ),
        );
    }
    let (clients, mut workload) = resolve::workload(check, &file.workload);
    if workload.reenter {
        let kind = workload.kind.kind();
        if !matches!(
            workload.kind,
            WorkloadKind::Counter(_) | WorkloadKind::Keys(_)
        ) {
            check.problems.push(
                "workload.reenter",
                format!(
                    "a nested acquisition takes the lock again inside the critical section of \
                     the counter or keys loop; \"{kind}\" has no such section"
                ),
            );
        } else if family.reentry().is_none() {
            check.problems.push(
                "workload.reenter",
                format!(
                    "needs a lock client that can take its lock again (see the families' pages \
                     in docs/families/); {} as set cannot",
                    F::NAME
                ),
            );
        }
    }
    // The herd figure, when the file sets `acquire` and the family's clients count requests.
    workload.count_herd = workload.acquire.is_some() && family.count_requests();
    let resource = resource::<F>(check, &file.storage, family.tokens());
    fits::<F>(check, &family, &workload, resource);
    let spec = SystemSpec {
        family,
        clients,
        workload,
        resource,
    };
    named_nodes(check, &spec);
    Arc::new(spec)
}

/// Whether every node the family's keys name ([`Family::named_nodes`]) is a node of the
/// system with the role it needs: a participant's section for a client the workload does not
/// have would otherwise change nothing, silently.
fn named_nodes<F: Family>(check: &mut Check, spec: &SystemSpec<F>) {
    let layout = spec.layout();
    for (path, name, role) in spec.family.named_nodes() {
        if layout.nodes.iter().any(|(n, r)| *n == name && *r == role) {
            continue;
        }
        let these: Vec<&str> = layout
            .nodes
            .iter()
            .filter(|(_, r)| *r == role)
            .map(|(n, _)| n.as_str())
            .collect();
        let group = match role {
            Role::Client => "workload clients",
            Role::Server => "servers",
            Role::Coordinator { group } => group,
            Role::Storage => "storage nodes",
        };
        let these = match these.as_slice() {
            [] => "none".to_string(),
            these => these.join(", "),
        };
        let problem = if layout.nodes.iter().any(|(n, _)| *n == name) {
            format!("`{name}` is not one of the {group} ({these})")
        } else {
            format!("no node named `{name}`: the {group} are {these}")
        };
        check.problems.push(path, problem);
    }
}

/// Whether the family and the storage give the workload what its kind needs
/// (`lockstep_models::workload::Needs`), each thing missing a problem that names it; and a
/// family whose recipe dequeues gets its workers.
fn fits<F: Family>(
    check: &mut Check,
    family: &F,
    workload: &WorkloadConfig,
    resource: Resource<ResourceOf<F>>,
) {
    let needs = workload.kind.needs();
    let kind = workload.kind.kind();
    if family.dequeues() && !needs.dequeues {
        check.problems.push(
            "workload.kind",
            "the job queue recipe needs its workers: set workload.kind = \"queue\"",
        );
    }
    let wanted = [
        (
            needs.dequeues,
            family.dequeues(),
            "a family recipe whose clients dequeue jobs",
        ),
        (
            needs.many_locks,
            family.many_locks(),
            "a lock client that takes many locks",
        ),
        (
            needs.read_write,
            family.read_write(),
            "a lock client with a read-write lock",
        ),
    ];
    for (_, _, what) in wanted.iter().filter(|(need, has, _)| *need && !*has) {
        check.problems.push(
            "workload.kind",
            format!(
                "\"{kind}\" needs {what} (see the families' pages in docs/families/); {} as set \
                 has none",
                F::NAME
            ),
        );
    }
    if let Some(why) = family.lapses().filter(|_| needs.held) {
        check.problems.push(
            "workload.kind",
            format!(
                "\"{kind}\" keeps its grant for as long as it runs, and {} as set lets it lapse: \
                 {why}",
                F::NAME
            ),
        );
    }
    match resource {
        Resource::Service(_) if needs.storage_node => check.problems.push(
            "storage.mode",
            format!(
                "\"{kind}\" keeps its resource in the storage node: leave out a mode that keeps \
                 it in the lock service"
            ),
        ),
        Resource::Storage(StorageMode::CasToken) if needs.shared_storage => check.problems.push(
            "storage.mode",
            format!(
                "\"cas-token\" lets one claimant in at a time, so the holders of \"{kind}\" \
                     could not share: use \"unfenced\" or \"fenced-writes\""
            ),
        ),
        _ => {}
    }
}

/// Where the resource lives: a storage node in one of its modes, or the family's service
/// under its own mode; and whether the storage can use the family's tokens.
fn resource<F: Family>(
    check: &mut Check,
    s: &StorageSection,
    tokens: Tokens,
) -> Resource<ResourceOf<F>> {
    let mode = s.mode.as_deref().unwrap_or("unfenced");
    if let Some((_, storage)) = StorageMode::ALL.iter().find(|(name, _)| *name == mode) {
        for key in s.keys.keys() {
            let owners: Vec<String> = families::all()
                .iter()
                .filter(|f| f.resource_keys().contains(&key.as_str()))
                .filter_map(|f| f.resource_mode().map(|m| format!("mode = \"{m}\"")))
                .collect();
            let problem = match owners.as_slice() {
                [] => format!("unknown field `{key}`, expected `mode`"),
                owners => format!(
                    "applies only with {} (the resource kept in the lock service itself)",
                    owners.join(" or ")
                ),
            };
            check.problems.push(format!("storage.{key}"), problem);
        }
        tokens_fit::<F>(check, *storage, tokens);
        return Resource::Storage(*storage);
    }
    if F::RESOURCE_MODE == Some(mode) {
        // Read as TOML text, so that a wrong value is named as everywhere else.
        let text = toml::to_string(&s.keys).unwrap_or_default();
        let keys: Result<F::ResourceKeys, _> = toml::Deserializer::parse(&text)
            .map_err(|e| (String::new(), e.message().to_string()))
            .and_then(|de| {
                serde_path_to_error::deserialize(de)
                    .map_err(|e| (e.path().to_string(), e.inner().message().to_string()))
            });
        match keys {
            Ok(keys) => {
                if let Some(r) = F::resource(&keys, check) {
                    return Resource::Service(r);
                }
            }
            Err((key, message)) => check.problems.push(format!("storage.{key}"), message),
        }
        return Resource::Storage(StorageMode::Unfenced);
    }
    let owner = families::all()
        .iter()
        .find(|f| f.resource_mode() == Some(mode));
    // The mode is not this family's: its keys are unknown unless some family takes them.
    for key in s.keys.keys() {
        let known = families::all()
            .iter()
            .any(|f| f.resource_keys().contains(&key.as_str()));
        if !known {
            let problem = format!("unknown field `{key}`, expected `mode`");
            check.problems.push(format!("storage.{key}"), problem);
        }
    }
    let problem = match owner {
        Some(f) => format!(
            "\"{mode}\" keeps the resource in {}'s own service and needs model.kind = \"{}\", not \"{}\"",
            f.name(),
            f.kind(),
            F::KIND
        ),
        None => {
            let mut modes: Vec<&str> = StorageMode::ALL.iter().map(|(n, _)| *n).collect();
            modes.extend(families::all().iter().filter_map(|f| f.resource_mode()));
            let modes: Vec<String> = modes.iter().map(|m| format!("`{m}`")).collect();
            format!(
                "unknown variant `{mode}`, expected one of {}",
                modes.join(", ")
            )
        }
    };
    check.problems.push("storage.mode", problem);
    // A placeholder, so that the nodes can still be named for the other checks.
    Resource::Storage(StorageMode::Unfenced)
}

/// Fenced storage compares tokens by size; compare-and-set storage needs random values.
fn tokens_fit<F: Family>(check: &mut Check, storage: StorageMode, tokens: Tokens) {
    let ordered: Vec<&str> = F::FENCING
        .iter()
        .filter(|f| f.ordered)
        .map(|f| f.name)
        .collect();
    let problem = match (storage, tokens) {
        (StorageMode::Unfenced, _)
        | (StorageMode::FencedWrites | StorageMode::FencedAll, Tokens::Ordered { .. })
        | (StorageMode::CasToken, Tokens::Random) => return,
        (StorageMode::FencedWrites | StorageMode::FencedAll, Tokens::Random) => format!(
            "fenced storage compares tokens by size, and {}'s random values have no order (use \"cas-token\")",
            F::NAME
        ),
        (StorageMode::CasToken, _) => {
            let random: Vec<String> = families::all()
                .iter()
                .flat_map(|f| {
                    f.fencing()
                        .iter()
                        .filter(|x| !x.ordered)
                        .map(move |x| format!("\"{}\" of kind = \"{}\"", x.name, f.kind()))
                })
                .collect();
            format!(
                "\"cas-token\" needs the lock's random value as the token (model.fencing = {})",
                random.join(" or ")
            )
        }
        (StorageMode::FencedWrites | StorageMode::FencedAll, Tokens::None)
            if ordered.is_empty() =>
        {
            format!(
                "fenced storage needs fencing tokens, and kind = \"{}\" has none it can order",
                F::KIND
            )
        }
        (StorageMode::FencedWrites | StorageMode::FencedAll, Tokens::None) => format!(
            "fenced storage needs fencing tokens, and this model sends none (set model.fencing = {})",
            quoted_list(&ordered)
        ),
    };
    check.problems.push("storage.mode", problem);
}

/// Reads the kind of a scenario file from its table: the registered family it names.
///
/// # Errors
/// A missing `[model]` or `kind`, a `kind` that is not a string, or one that names no family.
pub(crate) fn kind_of(
    table: &toml::Table,
    text: &str,
    path: &Path,
) -> Result<&'static dyn Registered, ScenarioError> {
    let kinds: Vec<String> = families::all()
        .iter()
        .map(|f| format!("`{}`", f.kind()))
        .collect();
    let kinds = kinds.join(", ");
    let fail = |key: &str, at: &[&str], message: String| {
        Err(ScenarioError::one(
            path,
            key,
            line_of_key(text, at),
            message,
        ))
    };
    let Some(model) = table.get("model") else {
        return fail("", &[], "missing field `model`".to_string());
    };
    let Some(model) = model.as_table() else {
        let message = format!(
            "must be a table with `kind` and the family's keys, not {}",
            model.type_str()
        );
        return fail("model", &["model"], message);
    };
    match model.get("kind") {
        None => fail("model", &["model"], "missing field `kind`".to_string()),
        Some(toml::Value::String(kind)) => match find(kind) {
            Some(f) => Ok(f),
            None => fail(
                "model.kind",
                &["model", "kind"],
                format!("unknown variant `{kind}`, expected one of {kinds}"),
            ),
        },
        Some(other) => fail(
            "model.kind",
            &["model", "kind"],
            format!(
                "must name a family, one of {kinds}, not {}",
                other.type_str()
            ),
        ),
    }
}

/// The line of the key at `path` in `text` (of the table, for a table), if the text shows it.
fn line_of_key(text: &str, path: &[&str]) -> Option<usize> {
    let doc = toml_edit::Document::parse(text).ok()?;
    let (last, tables) = path.split_last()?;
    let mut table = doc.as_table() as &dyn toml_edit::TableLike;
    for name in tables {
        table = table.get(name)?.as_table_like()?;
    }
    let (key, item) = table.get_key_value(last)?;
    let at = key.span().or_else(|| item.span())?.start;
    Some(super::line_of(text, at))
}
