//! Sweeps on many machines, on engines users already run (`deploy/`): the Kubernetes Indexed
//! Job and the GitHub Actions workflow are YAML with the fields their engines require, and the
//! Job's own command, run as N separate processes each told only its index and the count (as
//! the Job's pods are), gives shards whose merge is byte for byte the one-process sweep.

use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

use crate::support::{lockstep, root};

fn load(path: &str) -> Yaml {
    let text = std::fs::read_to_string(root().join(path)).expect(path);
    let mut docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(docs.len(), 1, "{path}: one document");
    docs.remove(0)
}

fn str_of<'a>(y: &'a Yaml, what: &str) -> &'a str {
    y.as_str()
        .unwrap_or_else(|| panic!("{what} is a string: {y:?}"))
}

/// The Job's container's environment variable `name`.
fn env_of<'a>(container: &'a Yaml, name: &str) -> &'a str {
    let env = container["env"].as_vec().expect("env is a list");
    let var = env
        .iter()
        .find(|v| v["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("env {name}"));
    str_of(&var["value"], name)
}

#[test]
fn the_indexed_job_has_what_kubernetes_requires_and_its_shards_merge_into_the_whole_sweep() {
    let job = load("deploy/kubernetes/sweep-job.yaml");
    assert_eq!(str_of(&job["apiVersion"], "apiVersion"), "batch/v1");
    assert_eq!(str_of(&job["kind"], "kind"), "Job");
    assert!(job["metadata"]["name"].as_str().is_some());
    let spec = &job["spec"];
    assert_eq!(str_of(&spec["completionMode"], "completionMode"), "Indexed");
    let completions = spec["completions"].as_i64().expect("completions");
    assert!(completions >= 1 && spec["parallelism"].as_i64().is_some());
    let pod = &spec["template"]["spec"];
    // A Job's pods may only be restarted Never or OnFailure.
    assert!(matches!(
        pod["restartPolicy"].as_str(),
        Some("Never" | "OnFailure")
    ));
    let containers = pod["containers"].as_vec().expect("containers");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert!(c["name"].as_str().is_some() && c["image"].as_str().is_some());
    // Its shard count is its completion count, and its volume is mounted.
    assert_eq!(env_of(c, "SHARDS"), completions.to_string());
    let mount = str_of(&c["volumeMounts"][0]["name"], "volumeMounts[0].name");
    let volumes = pod["volumes"].as_vec().expect("volumes");
    assert!(volumes.iter().any(|v| v["name"].as_str() == Some(mount)));
    let command: Vec<&str> = c["command"]
        .as_vec()
        .expect("command")
        .iter()
        .map(|a| str_of(a, "command"))
        .collect();
    assert_eq!(command, ["sh", "-c"]);
    let script = str_of(&c["args"][0], "args[0]");
    assert!(script.contains("JOB_COMPLETION_INDEX"), "{script}");

    // The Job's own script, as its pods run it: N processes, each told only its index (from
    // 0) and the count, writing to /results, here a temporary directory. A smaller sweep of a
    // scenario with failing seeds (so a shard exits 1 and the script keeps its summary).
    let dir = crate::support::TempDir::new("deploy");
    let results = dir.to_str().expect("UTF-8 path");
    let script = script.replace("/results", results);
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_lockstep"))
        .parent()
        .expect("the binary's directory")
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The script must be the one that ran: mutate it and the shards must fail.
    let broken = Command::new("sh")
        .args(["-c", &script.replace("--shard", "--shards")])
        .current_dir(root())
        .env("PATH", &path)
        .env(
            "SCENARIO",
            "scenarios/catalogue/j1-sentinel-partition-wait.toml",
        )
        .env("SEEDS", "4")
        .env("SHARDS", "4")
        .env("JOB_COMPLETION_INDEX", "0")
        .output()
        .expect("sh runs");
    assert!(!broken.status.success(), "a bad flag fails the pod");
    // J1 with WAIT fails [expect] on some seeds: 3 of the first 24.
    let (scenario, seeds, shards) = ("scenarios/catalogue/j1-sentinel-partition-wait.toml", 24, 4);
    for index in 0..shards {
        let status = Command::new("sh")
            .args(["-c", &script])
            .current_dir(root())
            .env("PATH", &path)
            .env("SCENARIO", scenario)
            .env("SEEDS", seeds.to_string())
            .env("SHARDS", shards.to_string())
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .output()
            .expect("sh runs");
        assert!(
            status.status.success(),
            "shard {index}: {}",
            String::from_utf8_lossy(&status.stderr)
        );
    }
    let mut args = vec!["merge".to_string(), "--format".into(), "json".into()];
    args.extend((0..shards).map(|i| format!("{results}/shard-{i}.json")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let merged = lockstep(&args);
    let whole = lockstep(&[
        "sweep",
        scenario,
        "--seeds",
        &seeds.to_string(),
        "--format",
        "json",
    ]);
    assert!(!whole.stdout.is_empty());
    // Some seeds failed: the shards that had them exited 1, and the script kept their
    // summaries all the same.
    assert_eq!(whole.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&merged.stdout),
        String::from_utf8_lossy(&whole.stdout),
        "the merged shards are the one-process sweep"
    );
    assert_eq!(merged.status.code(), whole.status.code());
}

#[test]
fn the_workflow_has_what_github_actions_requires_a_shard_matrix_and_a_merge() {
    let wf = load("deploy/github/sweep.yml");
    assert!(wf["name"].as_str().is_some());
    // `on` (a YAML 1.1 boolean to some parsers, a key to GitHub's and this one).
    let on = &wf["on"];
    assert!(!on.is_badvalue(), "the workflow has triggers");
    assert!(!on["workflow_dispatch"].is_badvalue());
    let jobs = wf["jobs"].as_hash().expect("jobs");
    for (name, job) in jobs {
        let name = str_of(name, "job name");
        assert!(job["runs-on"].as_str().is_some(), "{name}: runs-on");
        let steps = job["steps"].as_vec().expect("steps");
        for step in steps {
            assert!(
                step["uses"].as_str().is_some() != step["run"].as_str().is_some(),
                "{name}: each step either uses an action or runs a command: {step:?}"
            );
        }
    }
    let shards: Vec<i64> = wf["jobs"]["sweep"]["strategy"]["matrix"]["shard"]
        .as_vec()
        .expect("a matrix of shards")
        .iter()
        .map(|s| s.as_i64().expect("a shard number"))
        .collect();
    let count = wf["env"]["SHARDS"].as_i64().expect("SHARDS");
    assert_eq!(shards, (1..=count).collect::<Vec<_>>(), "shards 1..=SHARDS");
    assert_eq!(str_of(&wf["jobs"]["merge"]["needs"], "needs"), "sweep");
    let sweep_steps = format!("{:?}", wf["jobs"]["sweep"]["steps"]);
    assert!(sweep_steps.contains("--shard") && sweep_steps.contains("matrix.shard"));
    let merge_steps = format!("{:?}", wf["jobs"]["merge"]["steps"]);
    assert!(merge_steps.contains("lockstep merge"));
}
