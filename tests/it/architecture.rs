//! The dependency direction of ARCHITECTURE.md, enforced: a crate that depends against it, or
//! that pulls a heavy dependency into `sim` or `check`, fails here.

use crate::support::root;

/// Each crate's allowed dependencies, lockstep crates and external crates alike.
const ALLOWED: &[(&str, &[&str])] = &[
    ("sim", &["rand_chacha", "rand_core", "serde"]),
    // serde_json: the history's JSON Lines format (check/src/jsonl.rs, docs/history.md), so
    // that a history from a real system is read by the crate that owns `History`.
    ("check", &["serde", "serde_json"]),
    ("models", &["lockstep-sim", "lockstep-check", "serde"]),
    (
        "reports",
        &["lockstep-check", "serde", "serde_json", "tabled"],
    ),
    (
        "bridge",
        &[
            "lockstep",
            "lockstep-check",
            "lockstep-models",
            "lockstep-sim",
            "toml",
            "turmoil",
            "madsim",
            "tokio",
        ],
    ),
];

fn dependencies(manifest: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join(manifest)).expect("manifest");
    let doc: toml::Table = text.parse().expect("valid manifest");
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn every_crate_depends_only_in_the_allowed_direction() {
    for (krate, allowed) in ALLOWED {
        for dep in dependencies(&format!("{krate}/Cargo.toml")) {
            assert!(
                allowed.contains(&dep.as_str()),
                "{krate} must not depend on {dep} (ARCHITECTURE.md)"
            );
        }
    }
}

#[test]
fn sim_and_check_know_nothing_of_each_other_or_of_locks() {
    let sim = dependencies("sim/Cargo.toml");
    let check = dependencies("check/Cargo.toml");
    assert!(!sim.iter().any(|d| d.starts_with("lockstep")), "{sim:?}");
    assert!(
        !check.iter().any(|d| d.starts_with("lockstep")),
        "{check:?}"
    );
}

#[test]
fn no_lockstep_crate_depends_on_the_bridge() {
    // The bridge sits on top (`bridge` → `lockstep`, `models`, `sim`, `check`); nothing
    // below may reach back up to it, nor to an async runtime.
    for manifest in [
        "Cargo.toml",
        "sim/Cargo.toml",
        "check/Cargo.toml",
        "models/Cargo.toml",
        "reports/Cargo.toml",
    ] {
        for dep in dependencies(manifest) {
            assert!(
                !["lockstep-bridge", "turmoil", "tokio", "madsim"].contains(&dep.as_str()),
                "{manifest} must not depend on {dep} (ARCHITECTURE.md)"
            );
        }
    }
    // The async runtimes are optional: the bridge builds without them.
    let text = std::fs::read_to_string(root().join("bridge/Cargo.toml")).expect("manifest");
    let doc: toml::Table = text.parse().expect("valid manifest");
    for runtime in ["turmoil", "madsim", "tokio"] {
        let optional = doc["dependencies"][runtime].get("optional");
        assert_eq!(
            optional.and_then(|o| o.as_bool()),
            Some(true),
            "bridge: {runtime} must sit behind a feature"
        );
    }
}

#[test]
fn only_the_binary_touches_the_process_environment() {
    // Library code of every crate: no exit codes, no environment, no stdout.
    for dir in [
        "sim/src",
        "check/src",
        "models/src",
        "reports/src",
        "src/scenario",
        "bridge/src",
    ] {
        for entry in walk(&root().join(dir)) {
            let text = std::fs::read_to_string(&entry).expect("source");
            for banned in [
                "std::process::exit",
                "std::env::var",
                "println!",
                "eprintln!",
            ] {
                assert!(!text.contains(banned), "{} uses {banned}", entry.display());
            }
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// Code of `text` without its comments (`//` to the end of the line), so that a family may be
/// named as an example in documentation, and without the registry (`families! { .. }`).
fn code_of(text: &str) -> String {
    let mut registry = false;
    text.lines()
        .map(|l| {
            registry |= l.starts_with("families! {");
            let code = if registry {
                ""
            } else {
                l.find("//").map_or(l, |i| &l[..i])
            };
            registry &= l != "}";
            code
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every family is one folder and one registry line (`families!` in models/src/lib.rs): shared
/// code — the engine, the checker, the reports, the root crate, the shared models (workload,
/// storage, nodes, the Raft core), the benchmarks — names no family. The names come from the registry itself, so a new family
/// is held to it the moment it is listed.
#[test]
fn no_family_is_named_in_shared_code() {
    let families = lockstep::families::all();
    assert!(families.len() >= 4, "the registry lists the families");
    let mut names: Vec<String> = Vec::new();
    for f in families {
        names.push(f.kind().to_lowercase());
        names.push(f.name().to_lowercase());
    }
    names.sort();
    names.dedup();
    let folders: Vec<std::path::PathBuf> = families
        .iter()
        .map(|f| root().join("models/src").join(f.kind()))
        .collect();
    let mut shared = Vec::new();
    for dir in [
        "sim/src",
        "check/src",
        "models/src",
        "reports/src",
        "src",
        "benches",
    ] {
        shared.extend(
            walk(&root().join(dir))
                .into_iter()
                .filter(|p| !folders.iter().any(|f| p.starts_with(f))),
        );
    }
    assert!(
        shared.len() > 40,
        "found the shared sources: {}",
        shared.len()
    );
    let mut found = Vec::new();
    for path in &shared {
        let code = code_of(&std::fs::read_to_string(path).expect("source")).to_lowercase();
        for name in &names {
            if let Some(at) = code.find(name.as_str()) {
                let line = code[..at].lines().count();
                found.push(format!("{}:{line}: `{name}`", path.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "shared code names a family (move it into the family's folder, or ask the registry):\n{}",
        found.join("\n")
    );
}

/// Models are written against the environment trait (`lockstep_sim::Env`), so that a host
/// other than the simulator can run them: no model source names the simulator's context.
#[test]
fn no_model_names_the_simulators_context() {
    let sources = walk(&root().join("models/src"));
    assert!(
        sources.len() > 30,
        "found the model sources: {}",
        sources.len()
    );
    for path in sources {
        let code = code_of(&std::fs::read_to_string(&path).expect("source"));
        let named = code
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|word| word == "Ctx");
        assert!(!named, "{} names the simulator's `Ctx`", path.display());
    }
}
