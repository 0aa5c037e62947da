//! Bad scenario files: a clear one-line error per problem, naming the file and the key path,
//! and exit code 2 — never a panic.

use crate::support::{GOOD, errors_of, lockstep, stderr, temp_scenario};

#[test]
fn the_good_base_file_runs() {
    let path = temp_scenario("good", GOOD);
    let out = lockstep(&["run", path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn an_unknown_key_is_named_with_its_path_and_line() {
    let lines = errors_of(
        "unknown",
        &GOOD.replace("ttl_ms = 1_000", "ttl_ms = 1_000\nttl = 5"),
    );
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].contains(":9: model.ttl: unknown field `ttl`"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_wrong_type_is_named_with_its_path() {
    let lines = errors_of(
        "type",
        &GOOD.replace("ttl_ms = 1_000", "ttl_ms = \"ten seconds\""),
    );
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].contains("model.ttl_ms: invalid type: string"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_zero_ttl_is_rejected() {
    let lines = errors_of("ttl", &GOOD.replace("ttl_ms = 1_000", "ttl_ms = 0"));
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].ends_with("model.ttl_ms: must be greater than 0"),
        "{}",
        lines[0]
    );
}

#[test]
fn an_undefined_node_in_a_fault_is_named() {
    let text =
        format!("{GOOD}\n[[fault]]\nat_ms = 100\npause = {{ node = \"client-9\", for_ms = 5 }}\n");
    let lines = errors_of("node", &text);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].contains("fault[0].pause.node: no node named `client-9` (nodes: redis, storage, client-1, client-2)"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_fault_after_the_end_is_rejected() {
    let text = format!("{GOOD}\n[[fault]]\nat_ms = 20_000\ncrash = {{ node = \"redis\" }}\n");
    let lines = errors_of("late", &text);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].ends_with(
            "fault[0].at_ms: 20000 ms is after the end of the run (scenario.duration_ms = 10000)"
        ),
        "{}",
        lines[0]
    );
}

#[test]
fn every_problem_of_meaning_is_reported_at_once() {
    let text = format!(
        "{}\n[storage]\nmode = \"fenced-all\"\n\n[[fault]]\nat_ms = 100\n\n[[fault]]\non = {{ node = \"x\", mark = \"granted\" }}\nresume = {{ node = \"redis\" }}\n",
        GOOD.replace("ttl_ms = 1_000", "ttl_ms = -1")
    );
    let lines = errors_of("many", &text);
    let joined = lines.join("\n");
    assert_eq!(lines.len(), 4, "{joined}");
    assert!(joined.contains("model.ttl_ms: must be a non-negative number"));
    assert!(joined.contains("storage.mode: fenced storage needs fencing tokens"));
    assert!(joined.contains("fault[0]: needs one action"));
    assert!(joined.contains("fault[1].on.node: no node named `x`"));
}

#[test]
fn a_syntax_error_gives_its_line() {
    let lines = errors_of("syntax", "[scenario\nname = 1\n");
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains(":1: "), "{}", lines[0]);
}

#[test]
fn a_missing_section_is_named() {
    let lines = errors_of("missing", "[scenario]\nname = \"t\"\nduration_ms = 5\n");
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains("missing field `model`"), "{}", lines[0]);
}

#[test]
fn a_bad_distribution_is_named() {
    let text = format!("{GOOD}\n[workload]\nwork_ms = {{ uniform = [200, 50] }}\n");
    let lines = errors_of("dist", &text);
    assert!(
        lines[0].contains("workload.work_ms: uniform range is empty"),
        "{}",
        lines[0]
    );
}

#[test]
fn two_actions_in_one_fault_are_rejected() {
    let text =
        format!("{GOOD}\n[[fault]]\nat_ms = 1\nheal = true\ncrash = {{ node = \"redis\" }}\n");
    let lines = errors_of("two", &text);
    assert!(
        lines[0].contains("fault[0]: has 2 actions (crash, heal)"),
        "{}",
        lines[0]
    );
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let out = lockstep(&["run", "no/such/scenario.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("no/such/scenario.toml: cannot read the file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn keys_of_one_model_kind_are_errors_on_the_other() {
    let lines = errors_of(
        "kind-keys",
        &GOOD.replace(
            "ttl_ms = 1_000",
            "ttl_ms = 1_000\ninstances = 5\nflavour = \"redsync\"\nfencing = \"value\"",
        ),
    );
    let text = lines.join("\n");
    assert!(
        text.contains("model.instances: applies to kind = \"redlock\" only"),
        "{text}"
    );
    assert!(
        text.contains("model.flavour: applies to kind = \"redlock\" only"),
        "{text}"
    );
    assert!(
        text.contains("model.fencing: \"value\" is Redlock's"),
        "{text}"
    );
    let redlock = GOOD.replace("kind = \"redis\"", "kind = \"redlock\"");
    let lines = errors_of(
        "redlock-keys",
        &redlock.replace(
            "ttl_ms = 1_000",
            "ttl_ms = 1_000\nrelease = \"del\"\ninstances = 0",
        ),
    );
    let text = lines.join("\n");
    assert!(
        text.contains("model.release: applies to kind = \"redis\" only"),
        "{text}"
    );
    assert!(
        text.contains("model.instances: must be between 1 and 99"),
        "{text}"
    );
}

#[test]
fn storage_modes_need_the_right_tokens() {
    let redlock = GOOD.replace("kind = \"redis\"", "kind = \"redlock\"");
    let lines = errors_of(
        "cas-without-value",
        &format!("{redlock}\n[storage]\nmode = \"cas-token\"\n"),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("storage.mode: \"cas-token\" needs"),
        "{}",
        lines[0]
    );
    let lines = errors_of(
        "fenced-with-value",
        &format!(
            "{}\n[storage]\nmode = \"fenced-writes\"\n",
            redlock.replace("ttl_ms = 1_000", "ttl_ms = 1_000\nfencing = \"value\"")
        ),
    );
    assert!(
        lines[0].contains("random values have no order"),
        "{}",
        lines[0]
    );
}

#[test]
fn redlock_retry_delays_are_whole_milliseconds() {
    let redlock = GOOD.replace("kind = \"redis\"", "kind = \"redlock\"");
    let lines = errors_of(
        "redlock-delay",
        &redlock.replace(
            "ttl_ms = 1_000",
            "ttl_ms = 1_000\nretry_delay_ms = { exponential = { mean = 10 } }",
        ),
    );
    assert!(lines[0].contains("model.retry_delay_ms: Redlock draws whole milliseconds"));
    let lines = errors_of(
        "redlock-delay-frac",
        &redlock.replace(
            "ttl_ms = 1_000",
            "ttl_ms = 1_000\nretry_delay_ms = { uniform = [0.5, 10] }\nacquire_tries = 0",
        ),
    );
    let text = lines.join("\n");
    assert!(text.contains("must be whole milliseconds"), "{text}");
    assert!(
        text.contains("model.acquire_tries: Redlock needs at least 1 try"),
        "{text}"
    );
}

#[test]
fn the_redis_persistence_and_replication_keys_are_checked_with_their_paths() {
    let bad = GOOD.replace(
        "ttl_ms = 1_000",
        r#"ttl_ms = 1_000
persistence = "aof-always"
save = [[60, 0]]
restart_delay_ms = -1
sentinels = 3
sentinel_quorum = 4
wait_replicas = 1
replication_lag_ms = 5"#,
    );
    let lines = errors_of("redis-ha", &bad);
    for expected in [
        "model.save: applies only with persistence = \"rdb\"",
        "model.restart_delay_ms: must be a non-negative number",
        "model.sentinels: Sentinel needs a replica",
        "model.sentinel_quorum: must be between 1 and the number of sentinels (3), not 4",
        "model.wait_replicas: cannot exceed model.replicas (0), not 1",
        "model.replication_lag_ms: needs model.replicas ≥ 1",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "no `{expected}` in {lines:#?}"
        );
    }
}

#[test]
fn fault_schedules_name_replicas_and_sentinels() {
    let text = GOOD.replace(
        "ttl_ms = 1_000",
        "ttl_ms = 1_000\nreplicas = 2\ndown_after_ms = 2_000",
    ) + r#"
[[fault]]
at_ms = 1_000
partition = { groups = [["redis-1", "client-1"], ["redis-2", "redis-3", "sentinels", "client-2"]] }

[[fault]]
at_ms = 2_000
crash = { node = "sentinel-4" }
"#;
    let lines = errors_of("redis-ha-names", &text);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].contains("fault[1].crash.node: no node named `sentinel-4` (nodes: redis-1, redis-2, redis-3, sentinel-1, sentinel-2, sentinel-3, storage, client-1, client-2)"),
        "{}",
        lines[0]
    );
}

#[test]
fn the_etcd_keys_are_checked_with_their_paths() {
    let etcd = GOOD.replace("kind = \"redis\"", "kind = \"etcd\"");
    let lines = errors_of(
        "etcd-keys",
        &etcd.replace(
            "ttl_ms = 1_000",
            "ttl_ms = 1_000\nmembers = 12\nelection_ms = 250\ntick_ms = 100\nfencing = \"incr\"\nflavour = \"redsync\"\nrenew = true",
        ),
    );
    for expected in [
        "model.members: must be between 1 and 9, not 12",
        "model.election_ms: must be a whole number of ticks (100ms), at least two, not 250ms",
        "model.fencing: \"incr\" is Redis's token (a counter `INCR`ed after the `SET NX`); etcd's: \"revision\" (the lock key's create revision)",
        "model.flavour: applies to kind = \"redlock\" only, not to \"etcd\"",
        "model.renew: applies to kind = \"redis\" or \"redlock\" only, not to \"etcd\"",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "no `{expected}` in {lines:#?}"
        );
    }
    let lines = errors_of(
        "etcd-keys-on-redis",
        &GOOD.replace(
            "ttl_ms = 1_000",
            "ttl_ms = 1_000\nmembers = 3\nfencing = \"revision\"",
        ),
    );
    let text = lines.join("\n");
    assert!(
        text.contains(
            "model.members: applies to kind = \"etcd\", \"zookeeper\", \"kubernetes\" or \"consul\" only, not to \"redis\""
        ),
        "{text}"
    );
    assert!(
        text.contains("model.fencing: \"revision\" is etcd's token"),
        "{text}"
    );
}

#[test]
fn the_etcd_resource_keys_are_checked_with_their_paths() {
    let etcd = GOOD.replace("kind = \"redis\"", "kind = \"etcd\"");
    let good = format!("{etcd}\n[storage]\nmode = \"etcd\"\nguard = \"owner\"\n");
    let path = temp_scenario("etcd-resource", &good);
    let out = lockstep(&["run", path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = errors_of(
        "etcd-resource-on-redis",
        &format!("{GOOD}\n[storage]\nmode = \"etcd\"\nguard = \"key-exists\"\n"),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(
            "storage.mode: \"etcd\" keeps the resource in etcd's own service and needs model.kind = \"etcd\", not \"redis\""
        ),
        "{}",
        lines[0]
    );
    let lines = errors_of(
        "guard-without-etcd-mode",
        &format!("{etcd}\n[storage]\nmode = \"unfenced\"\nguard = \"owner\"\n"),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(
            "storage.guard: applies only with mode = \"etcd\" or mode = \"consul\" (the \
             resource kept in the lock service itself)"
        ),
        "{}",
        lines[0]
    );
    let lines = errors_of("bad-guard", &good.replace("\"owner\"", "\"exists\""));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("storage.guard: unknown value `exists`"),
        "{}",
        lines[0]
    );
    // The resource is in etcd: there is no storage node to put a fault on.
    let lines = errors_of(
        "no-storage-node",
        &format!("{good}\n[[fault]]\nat_ms = 1\npause = {{ node = \"storage\" }}\n"),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(
            "fault[0].pause.node: no node named `storage` (nodes: etcd-1, etcd-2, etcd-3, client-1, client-2)"
        ),
        "{}",
        lines[0]
    );
}

#[test]
fn the_zookeeper_keys_are_checked_with_their_paths() {
    let zk = GOOD.replace("kind = \"redis\"", "kind = \"zookeeper\"");
    let lines = errors_of(
        "zk-keys",
        &zk.replace(
            "ttl_ms = 1_000",
            "ttl_ms = 1_000\nmembers = 0\nsync_limit = 0\nmin_session_timeout_ms = 9_000\nmax_session_timeout_ms = 8_000\nfencing = \"revision\"\nelection_ms = 1_000\nrecipe = \"mutex\"\nrequest_timeout_ms = 50\nwatch = \"everyone\"",
        ),
    );
    // An unknown value is a parse error, reported alone.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("model.watch") && l.contains("everyone")),
        "{lines:#?}"
    );
    let lines = errors_of(
        "zk-keys",
        &zk.replace(
            "ttl_ms = 1_000",
            "ttl_ms = 1_000\nmembers = 0\nsync_limit = 0\nmin_session_timeout_ms = 9_000\nmax_session_timeout_ms = 8_000\nfencing = \"revision\"\nelection_ms = 1_000\nrecipe = \"mutex\"\nrequest_timeout_ms = 50",
        ),
    );
    for expected in [
        "model.members: must be between 1 and 9, not 0",
        "model.sync_limit: must be between 1 and 100 ticks, not 0",
        "model.max_session_timeout_ms: must not be below the minimum session timeout",
        "model.fencing: \"revision\" is etcd's token (the lock key's create revision); ZooKeeper's: \"czxid\" (the lock node's creation zxid)",
        "model.election_ms: applies to kind = \"etcd\" or \"consul\" only, not to \"zookeeper\"",
        "model.recipe: applies to kind = \"etcd\" or \"postgres\" only, not to \"zookeeper\"",
        "model.request_timeout_ms: applies to kind = \"redis\", \"redlock\", \"etcd\" or \"consul\" only, not to \"zookeeper\"",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "no `{expected}` in {lines:#?}"
        );
    }
    for kind in ["redis", "etcd"] {
        let lines = errors_of(
            &format!("zk-keys-on-{kind}"),
            &GOOD.replace("kind = \"redis\"", &format!("kind = \"{kind}\"")).replace(
                "ttl_ms = 1_000",
                "ttl_ms = 1_000\nstop_work_on = \"suspended\"\nwatch = \"parent\"\nprotection = \"guid\"\nsync_limit = 5\nfencing = \"czxid\"",
            ),
        );
        let text = lines.join("\n");
        for key in ["stop_work_on", "watch", "protection", "sync_limit"] {
            let expected =
                format!("model.{key}: applies to kind = \"zookeeper\" only, not to \"{kind}\"");
            assert!(text.contains(&expected), "no `{expected}` in {text}");
        }
        assert!(
            text.contains("model.fencing: \"czxid\" is ZooKeeper's token"),
            "{text}"
        );
    }
}

#[test]
fn mono_expiry_cannot_replicate() {
    let lines = errors_of(
        "mono-replicas",
        &GOOD.replace(
            "ttl_ms = 1_000",
            "ttl_ms = 1_000\nexpiry_clock = \"mono\"\nreplicas = 1\nsentinels = 0",
        ),
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("model.expiry_clock: \"mono\" cannot replicate")),
        "{lines:#?}"
    );
}

#[test]
fn renewal_modes_are_checked() {
    let lines = errors_of(
        "renew-unknown",
        &GOOD.replace("ttl_ms = 1_000", "ttl_ms = 1_000\nrenew = \"forever\""),
    );
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].contains("model.renew"), "{}", lines[0]);
    let redlock = GOOD.replace("kind = \"redis\"", "kind = \"redlock\"");
    let lines = errors_of(
        "renew-redlock-mode",
        &redlock.replace("ttl_ms = 1_000", "ttl_ms = 1_000\nrenew = \"watchdog\""),
    );
    assert!(
        lines[0]
            .contains("model.renew: the renewal modes are Redis's; Redlock takes true or false"),
        "{}",
        lines[0]
    );
}

#[test]
fn degrade_and_clock_strobe_keys_are_checked_with_their_paths() {
    let faults = [
        r#"degrade = { from = "clients", to = "redis", loss = 1.5 }"#,
        r#"degrade = { from = "clients", to = "client-9", duplicate = 0.1 }"#,
        r#"degrade = { from = "clients", to = "redis", for_ms = 100 }"#,
        r#"clock_strobe = { node = "redis", delta_ms = 0, period_ms = 10, for_ms = 100 }"#,
        r#"clock_strobe = { node = "redis", delta_ms = 5, period_ms = 0, for_ms = 100 }"#,
        r#"clock_strobe = { node = "redis", delta_ms = 5, period_ms = 10, for_ms = -1 }"#,
        r#"clock_strobe = { node = "redis", delta_ms = 5, period_ms = 0.001, for_ms = 2000 }"#,
        r#"clock_strobe = { node = "redis", delta_ms = 5, period_ms = 1e-9, for_ms = 2000 }"#,
    ];
    let mut text = GOOD.to_string();
    for f in faults {
        text.push_str(&format!("\n[[fault]]\nat_ms = 100\n{f}\n"));
    }
    let lines = errors_of("degrade-strobe", &text);
    let joined = lines.join("\n");
    let expect = [
        "fault[0].degrade.loss: must be a probability between 0 and 1, not 1.5",
        "fault[1].degrade.to: no node named `client-9`",
        "fault[2].degrade: changes nothing: give `loss` or `duplicate` above 0",
        "fault[3].clock_strobe.delta_ms: must not be 0",
        "fault[4].clock_strobe.period_ms: must be greater than 0",
        "fault[5].clock_strobe.for_ms: must be a non-negative number of milliseconds",
        "fault[6].clock_strobe: takes 2000000 steps (2000 ms every 0.001 ms); at most 1000000",
        "fault[7].clock_strobe.period_ms: must be at least a nanosecond",
    ];
    for e in expect {
        assert!(joined.contains(e), "missing `{e}` in:\n{joined}");
    }
    assert_eq!(lines.len(), expect.len(), "{joined}");
}

#[test]
fn an_unknown_key_in_a_degrade_is_named() {
    let text = format!(
        "{GOOD}\n[[fault]]\nat_ms = 100\ndegrade = {{ from = \"all\", to = \"all\", loss_ppm = 5 }}\n"
    );
    let lines = errors_of("degrade-key", &text);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].contains("fault[0].degrade.loss_ppm: unknown field `loss_ppm`"),
        "{}",
        lines[0]
    );
}

#[test]
fn keys_of_another_family_leave_the_rest_of_the_file_read_as_written() {
    // The other family's key is reported, and the file's other errors keep their lines and
    // their usual wording.
    let lines = errors_of(
        "foreign-and-type",
        &format!(
            "{}\n[expect]\nverdict = 1\n",
            GOOD.replace("ttl_ms = 1_000", "ttl_ms = 1_000\nmembers = 3")
        ),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(":12: expect.verdict: expected a name in quotes"),
        "{}",
        lines[0]
    );
    let lines = errors_of(
        "foreign-and-meaning",
        &GOOD.replace("ttl_ms = 1_000", "ttl_ms = 0\nmembers = 3"),
    );
    let text = lines.join("\n");
    assert!(text.contains("model.members: applies to kind"), "{text}");
    assert!(
        text.contains("model.ttl_ms: must be greater than 0"),
        "{text}"
    );
}

#[test]
fn a_bad_kind_or_storage_key_is_named_in_the_files_words() {
    let lines = errors_of("kind-type", &GOOD.replace("kind = \"redis\"", "kind = 3"));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(":7: model.kind: must name a family, one of `redis`"),
        "{}",
        lines[0]
    );
    let etcd = GOOD.replace("kind = \"redis\"", "kind = \"etcd\"");
    let lines = errors_of(
        "guard-type",
        &format!("{etcd}\n[storage]\nmode = \"etcd\"\nguard = 1\n"),
    );
    assert!(
        lines[0].ends_with("storage.guard: expected a name in quotes"),
        "{lines:?}"
    );
    let lines = errors_of(
        "storage-bad-mode-and-key",
        &format!("{GOOD}\n[storage]\nmode = \"bogus\"\nfoo = 1\n"),
    );
    let text = lines.join("\n");
    assert!(text.contains("storage.foo: unknown field `foo`"), "{text}");
    assert!(
        text.contains("storage.mode: unknown value `bogus`"),
        "{text}"
    );
}

#[test]
fn a_familys_own_group_may_be_named_when_it_is_empty() {
    // `sentinels` is the Redis family's group, empty without sentinels.
    let text = format!(
        "{GOOD}\n[[fault]]\nat_ms = 100\npartition = {{ groups = [[\"redis\", \"client-1\"], [\"sentinels\", \"client-2\"]], for_ms = 1_000 }}\n"
    );
    let path = temp_scenario("empty-group", &text);
    let out = lockstep(&["run", path.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn errors_speak_of_keys_and_values_not_of_rust_types() {
    // (file text, a piece of the one error line)
    let cases = [
        (
            format!("{GOOD}\n[[fault]]\nat_ms = 1\non = 3\n"),
            "fault[0].on: invalid type: integer `3`, expected a table",
        ),
        (
            GOOD.replace("seed = 1", "")
                .replace("duration_ms = 10_000", "duration_ms = 10_000\nseed = -1"),
            "scenario.seed: invalid value: integer `-1`, expected a whole number ≥ 0",
        ),
        (
            GOOD.replace(
                "duration_ms = 10_000",
                "duration_ms = 1000000000000000000000000000000",
            ),
            "scenario.duration_ms: the number is too large",
        ),
        (
            format!("{GOOD}\n[network]\nlatency_ms = {{ exponential = 1 }}\n"),
            "network.latency_ms.exponential: invalid type: integer `1`, expected a table",
        ),
        (
            GOOD.replace("name = \"t\"", "name = \"t\"\nname = \"u\""),
            "duplicate key `name`",
        ),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let lines = errors_of(&format!("words-{i}"), text);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains(expected),
            "{} lacks `{expected}`",
            lines[0]
        );
        for word in ["struct", "enum", "i128", "u64", "Tagged", "variant"] {
            assert!(!lines[0].contains(word), "{} says `{word}`", lines[0]);
        }
    }
}

#[test]
fn a_value_in_an_error_is_cut_short_and_cannot_break_the_line() {
    let long = "x".repeat(100_000);
    let text = format!(
        "{GOOD}\n[[fault]]\nat_ms = 1\npause = {{ node = \"{long}\" }}\n\n[[fault]]\nat_ms = 1\npause = {{ node = \"a\\nb\\u001b[31m\" }}\n"
    );
    // `errors_of` checks that every line names the file: a newline in a value would break that.
    let lines = errors_of("long-value", &text);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].len() < 300, "{} characters", lines[0].len());
    assert!(lines[0].contains("(100002 characters)"), "{}", lines[0]);
    assert!(lines[1].contains("`a\\nb\\u{1b}[31m`"), "{}", lines[1]);
    assert!(!lines[1].contains('\u{1b}'), "{}", lines[1]);
}

#[test]
fn the_postgres_keys_are_checked_with_their_paths() {
    let pg = GOOD.replace("kind = \"redis\"", "kind = \"postgres\"");
    let lines = errors_of(
        "pg-keys",
        &pg.replace(
            "ttl_ms = 1_000",
            "failover_after_ms = 5_000\npool_size = 4\ntcp_keepalives_count = 0",
        ),
    );
    for expected in [
        "model.failover_after_ms: is the standby's setting: set model.replica = true too",
        "model.pool_size: is a pgbouncer setting: set model.pooler too",
        "model.tcp_keepalives_count: 0 is out of range: expected 1 to 127",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "no `{expected}` in {lines:#?}"
        );
    }
    let lines = errors_of(
        "pg-replica-pooler",
        &pg.replace(
            "ttl_ms = 1_000",
            "replica = true\npooler = \"transaction\"\nfailover_after_ms = 0",
        ),
    );
    for expected in [
        "model.replica: a standby behind pgbouncer is not modelled",
        "model.failover_after_ms: must be greater than 0",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "no `{expected}` in {lines:#?}"
        );
    }
    // The lock table's keys belong to its recipe, which needs a TTL and never waits.
    let lines = errors_of(
        "pg-table-keys",
        &pg.replace(
            "ttl_ms = 1_000",
            "cleanup_ttl_ms = 5_000\nacquired_at = \"client\"",
        ),
    );
    for expected in [
        "model.cleanup_ttl_ms: is a lock table setting: set model.recipe = \"table\" too",
        "model.acquired_at: is a lock table setting: set model.recipe = \"table\" too",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "no `{expected}` in {lines:#?}"
        );
    }
    let lines = errors_of(
        "pg-table-recipe",
        &pg.replace(
            "ttl_ms = 1_000",
            "recipe = \"table\"\nwait = \"block\"\ncleanup_every_ms = 0",
        ),
    );
    for expected in [
        "model.cleanup_ttl_ms: is required with recipe = \"table\"",
        "model.wait: the lock table has no blocking form",
        "model.cleanup_every_ms: must be greater than 0",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "no `{expected}` in {lines:#?}"
        );
    }
    // The job queue's keys belong to its recipe, which runs the queue workload and only it.
    let lines = errors_of(
        "pg-queue-keys",
        &pg.replace("ttl_ms = 1_000", "skip_locked = false\njobs = 5"),
    );
    for expected in [
        "model.skip_locked: is a job queue setting: set model.recipe = \"queue\" too",
        "model.jobs: is a job queue setting: set model.recipe = \"queue\" too",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "no `{expected}` in {lines:#?}"
        );
    }
    let lines = errors_of(
        "pg-queue-workload",
        &pg.replace(
            "ttl_ms = 1_000",
            "recipe = \"queue\"\nwait = \"try\"\nreplica = true",
        ),
    );
    for expected in [
        "workload.kind: the job queue recipe needs its workers: set workload.kind = \"queue\"",
        "model.wait: a dequeue waits for a locked row unless model.skip_locked = true",
        "model.replica: a standby of the job queue is not modelled",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(expected)),
            "no `{expected}` in {lines:#?}"
        );
    }
    let lines = errors_of(
        "queue-on-redis",
        &format!("{GOOD}\n[workload]\nkind = \"queue\"\n"),
    );
    assert!(
        lines.iter().any(|l| l.contains(
            "workload.kind: \"queue\" needs a family recipe whose clients dequeue jobs (see the families' pages in docs/families/); Redis as set has none"
        )),
        "{lines:#?}"
    );
    // A good standby file names the replica among its nodes.
    let lines = errors_of(
        "pg-replica-node",
        &format!(
            "{}\n[[fault]]\nat_ms = 1\ncrash = {{ node = \"postgres-2\" }}\n",
            pg.replace("ttl_ms = 1_000", "replica = true")
        ),
    );
    assert!(
        lines.iter().any(|l| l.contains(
            "fault[0].crash.node: no node named `postgres-2` (nodes: postgres, postgres-replica, storage, client-1, client-2)"
        )),
        "{lines:#?}"
    );
}

/// The error lines of the base file with `faults` appended.
fn fault_errors(test: &str, faults: &str) -> Vec<String> {
    errors_of(test, &format!("{GOOD}\n{faults}"))
}

/// Whether `text` loads.
fn loads(text: &str) -> Result<(), String> {
    lockstep::parse(text, std::path::Path::new("t.toml"))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn a_restart_after_a_terminate_of_the_node_is_refused_naming_both() {
    let terminate =
        "[[fault]]\nat_ms = 1_000\nterminate = { node = \"client-1\", grace_ms = 500 }\n";
    let lines = fault_errors(
        "restart-terminated",
        &format!("{terminate}\n[[fault]]\nat_ms = 5_000\nrestart = {{ node = \"client-1\" }}\n"),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(
            "fault[1].restart: client-1 is told to stop for good at 1000 ms \
             (fault[0].terminate), so this restart at 5000 ms can never apply: a terminated \
             node does not come back (crash it instead for one that does)"
        ),
        "{}",
        lines[0]
    );
    // A crash after it cannot bring it back either.
    let lines = fault_errors(
        "crash-restart-terminated",
        &format!(
            "{terminate}\n[[fault]]\nat_ms = 1_200\ncrash = {{ node = \"client-1\", \
             restart_after_ms = 100 }}\n"
        ),
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(
            "fault[1].crash.restart_after_ms: client-1 is told to stop for good at 1000 ms \
             (fault[0].terminate), so this crash at 1200 ms can never be followed by a \
             restart: leave restart_after_ms out"
        ),
        "{}",
        lines[0]
    );
    // Allowed: another node; a restart before the terminate; a terminate that may find the
    // node down already (crashed before it, at a time or on a mark), whose later restart
    // brings it back; a crash after the terminate without a restart.
    for (what, faults) in [
        (
            "another node",
            "[[fault]]\nat_ms = 1_000\nterminate = { node = \"client-1\" }\n\n[[fault]]\n\
             at_ms = 2_000\ncrash = { node = \"client-2\" }\n\n[[fault]]\nat_ms = 3_000\n\
             restart = { node = \"client-2\" }\n",
        ),
        (
            "restart first",
            "[[fault]]\nat_ms = 500\ncrash = { node = \"client-1\" }\n\n[[fault]]\n\
             at_ms = 800\nrestart = { node = \"client-1\" }\n\n[[fault]]\nat_ms = 1_000\n\
             terminate = { node = \"client-1\" }\n",
        ),
        (
            "down before",
            "[[fault]]\nat_ms = 500\ncrash = { node = \"client-1\" }\n\n[[fault]]\n\
             at_ms = 1_000\nterminate = { node = \"client-1\" }\n\n[[fault]]\nat_ms = 3_000\n\
             restart = { node = \"client-1\" }\n",
        ),
        (
            "crashed on a mark",
            "[[fault]]\non = { node = \"client-1\", mark = \"granted\" }\n\
             crash = { node = \"client-1\" }\n\n[[fault]]\nat_ms = 1_000\n\
             terminate = { node = \"client-1\" }\n\n[[fault]]\nat_ms = 3_000\n\
             restart = { node = \"client-1\" }\n",
        ),
        (
            "a crash aimed at the holder first (the terminate may find client-1 down)",
            "[[fault]]\nat_ms = 500\ncrash = { node = \"holder\" }\n\n[[fault]]\n\
             at_ms = 1_000\nterminate = { node = \"client-1\" }\n\n[[fault]]\nat_ms = 3_000\n\
             restart = { node = \"client-1\" }\n",
        ),
        (
            "crash for good",
            "[[fault]]\nat_ms = 1_000\nterminate = { node = \"client-1\" }\n\n[[fault]]\n\
             at_ms = 1_200\ncrash = { node = \"client-1\" }\n",
        ),
    ] {
        let text = format!("{GOOD}\n{faults}");
        assert_eq!(loads(&text), Ok(()), "{what}");
    }
}

#[test]
fn a_resume_of_a_node_no_pause_holds_is_refused() {
    let lines = fault_errors(
        "resume-never-paused",
        "[[fault]]\nat_ms = 2_000\nresume = { node = \"client-2\" }\n",
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(
            "fault[0].resume: no fault pauses client-2 before 2000 ms, so this resume does \
             nothing (it runs a paused node again)"
        ),
        "{}",
        lines[0]
    );
    let lines = fault_errors(
        "resume-pause-over",
        "[[fault]]\nat_ms = 1_000\npause = { node = \"client-2\", for_ms = 500 }\n\n\
         [[fault]]\nat_ms = 2_000\nresume = { node = \"client-2\" }\n",
    );
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(
            "fault[1].resume: client-2 is no longer paused at 2000 ms: the last pause, \
             fault[0].pause, ends at 1500 ms, so this resume does nothing (it runs a paused \
             node again)"
        ),
        "{}",
        lines[0]
    );
    // Allowed: a pause in force (open, or not yet over), one on a mark, or a chaos profile's.
    for (what, faults) in [
        (
            "open pause",
            "[[fault]]\nat_ms = 1_000\npause = { node = \"client-2\" }\n\n[[fault]]\n\
             at_ms = 2_000\nresume = { node = \"client-2\" }\n",
        ),
        (
            "pause until then",
            "[[fault]]\nat_ms = 1_000\npause = { node = \"client-2\", for_ms = 1_000 }\n\n\
             [[fault]]\nat_ms = 2_000\nresume = { node = \"client-2\" }\n",
        ),
        (
            "pause on a mark",
            "[[fault]]\non = { node = \"client-2\", mark = \"granted\" }\n\
             pause = { node = \"client-2\" }\n\n[[fault]]\nat_ms = 2_000\n\
             resume = { node = \"client-2\" }\n",
        ),
        (
            "chaos",
            "[chaos]\nstart_ms = 0\nquiet_tail_ms = 5_000\nliveness_ms = 5_000\n\n[[fault]]\nat_ms = 2_000\n\
             resume = { node = \"client-2\" }\n",
        ),
        (
            "a pause aimed at the holder (any client may be it)",
            "[[fault]]\nat_ms = 1_000\npause = { node = \"holder\" }\n\n[[fault]]\n\
             at_ms = 2_000\nresume = { node = \"client-2\" }\n",
        ),
        (
            "a resume aimed at the holder, whoever it is",
            "[[fault]]\nat_ms = 1_000\npause = { node = \"client-2\", for_ms = 100 }\n\n\
             [[fault]]\nat_ms = 2_000\nresume = { node = \"holder\" }\n",
        ),
    ] {
        let text = format!("{GOOD}\n{faults}");
        assert_eq!(loads(&text), Ok(()), "{what}");
    }
}
