//! Bad `[model]` keys of `kind = "kubernetes"`: client-go's timing constraints, unknown keys
//! and participants that are not clients, each one line naming the file and the key path.

use crate::support::errors_of;

fn file(model: &str) -> String {
    format!(
        "[scenario]\nname = \"k8s\"\nduration_ms = 10_000\n\n[model]\nkind = \"kubernetes\"\n\
         {model}\n\n[workload]\nclients = 2\n"
    )
}

#[test]
fn a_lease_duration_not_above_the_renew_deadline_names_both_keys() {
    let lines = errors_of(
        "k8s-ld",
        &file("ttl_ms = 10_000\nrenew_deadline_ms = 10_000"),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(
            ": model.ttl_ms: model.ttl_ms (10000 ms) must be greater than \
             model.renew_deadline_ms (10000 ms), as client-go requires"
        ),
        "{}",
        lines[0]
    );
}

#[test]
fn a_renew_deadline_not_above_the_jittered_retry_period_names_both_keys() {
    let lines = errors_of(
        "k8s-rd",
        &file("ttl_ms = 15_000\nrenew_deadline_ms = 2_400\nretry_period_ms = 2_000"),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(
            "model.renew_deadline_ms: model.renew_deadline_ms (2400 ms) must be greater than \
             1.2 × model.retry_period_ms (2000 ms)"
        ),
        "{}",
        lines[0]
    );
    // Just above 1.2 × RetryPeriod is accepted.
    let ok = file("ttl_ms = 15_000\nrenew_deadline_ms = 2_401\nretry_period_ms = 2_000");
    let path = crate::support::temp_scenario("k8s-rd-ok", &ok);
    let out = crate::support::lockstep(&["run", path.to_str().expect("utf-8")]);
    assert_ne!(
        out.status.code(),
        Some(2),
        "{}",
        crate::support::stderr(&out)
    );
}

#[test]
fn an_unknown_key_is_named_with_the_keys_the_family_takes() {
    let lines = errors_of("k8s-unknown", &file("ttl_ms = 15_000\nlease_seconds = 15"));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("model.lease_seconds: unknown field `lease_seconds`"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("`renew_deadline_ms`"), "{}", lines[0]);
}

#[test]
fn a_participant_must_be_a_client_and_keep_client_gos_constraints() {
    let lines = errors_of(
        "k8s-participants",
        &file(
            "ttl_ms = 30_000\nrenew_deadline_ms = 20_000\n\n\
             [model.participants.worker-1]\nlease_duration = \"own\"\n\n\
             [model.participants.client-2]\nttl_ms = 10_000",
        ),
    );
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines.iter().any(|l| l.ends_with(
            ": model.participants.client-2: its ttl_ms (10000 ms) must be greater than its \
             renew_deadline_ms (20000 ms), as client-go requires"
        )),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l
            .contains("model.participants.worker-1: `worker-1` is not a workload client's name")),
        "{lines:?}"
    );
    // An unknown key inside a participant's section is named with its path.
    let lines = errors_of(
        "k8s-participant-key",
        &file("ttl_ms = 15_000\n\n[model.participants.client-1]\nfencing = \"transitions\""),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("model.participants.client-1.fencing: unknown field"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_participant_the_workload_does_not_have_is_refused() {
    // Two clients: a section for client-9 would change no elector.
    let lines = errors_of(
        "k8s-participant-absent",
        &file("ttl_ms = 15_000\n\n[model.participants.client-9]\nttl_ms = 20_000"),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(
            ": model.participants.client-9: no node named `client-9`: the workload clients \
             are client-1, client-2"
        ),
        "{}",
        lines[0]
    );
}
