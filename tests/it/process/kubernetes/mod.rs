//! The Kubernetes manifests of `deploy/kubernetes/`, read from the repository as they are.
//!
//! `the_manifests_keep_their_promises` reads every file `kustomization.yaml` lists as a
//! cluster would, and checks what a cluster alone would show: the probes' paths and ports,
//! the non-root, read-only, capability-less containers, the preStop pause and a grace period
//! longer than it plus the drain, the migration Job running `shortener migrate`, and every
//! ConfigMap, Secret, key and port that something names existing.
//!
//! `podman_kube_play_runs_the_manifests` runs them with `podman kube play` (podman 4.3),
//! against stand-in Redis and PostgreSQL containers on podman's network. Only what must
//! differ here is changed: the image (the one built from the `Dockerfile`), the Redis and
//! PostgreSQL addresses, the placeholder API key's digest, one replica per Deployment, and a
//! loopback host port for each container port (podman publishes every container port on the
//! host, at the same number when no `hostPort` is given, so replicas and the two
//! Deployments' port 8080 would collide). What podman 4.3 does with each kind, found by
//! trying:
//! - ConfigMap: its volumes work (as named volumes), with the files a cluster mounts.
//! - Deployment: its pods run with their volumes, environment, user, read-only root file
//!   system and dropped capabilities. The probes become podman health checks, which need
//!   systemd to run (absent here), so the test probes `/readyz` and `/healthcheck` itself;
//!   the preStop hook and the rollout strategy are not run (no rollout happens).
//! - Secret: kube play stores it so that a secret volume's files hold base64 text, and a
//!   `stringData` key gives no file at all; so the test creates the podman secret itself
//!   (`podman secret create`) from the manifest's Secret, its `stringData` as podman's
//!   plain-text `data`, and leaves the document out of what kube play gets.
//! - Job: ignored. Its pod template is played as a Pod, first; the test waits for it to
//!   exit 0 having applied every migration, to the Secret's database.
//! - Service: ignored (there is no cluster DNS or proxy); the test reaches the pods through
//!   their host ports, and the Services are only checked by the first test.
//!
//! What only a cluster runs: the Services, the preStop sleep (Kubernetes 1.30 or later),
//! the probes' effect on endpoints and restarts, the rolling update, the Job's retries and
//! three nodes of one Deployment.

mod kube_play;
mod manifests;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_yaml::Value;
use shortener_tests::workspace;

/// The image the manifests name, which users retag.
const IMAGE: &str = "shortener:latest";
/// The placeholders the test replaces with what it runs here.
const REDIS_PLACEHOLDER: &str = "redis.example.internal:6379";
const DATABASE_PLACEHOLDER: &str =
    "postgres://shortener:change-me@postgres.example.internal:5432/shortener";
const KEY_PLACEHOLDER: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How long any one wait of the test may last.
const WAIT: Duration = Duration::from_secs(60);

/// The files `kustomization.yaml` lists, in its order: (file name, text).
fn manifest_files() -> Vec<(String, String)> {
    let directory = workspace().join("deploy/kubernetes");
    let read = |name: &str| {
        std::fs::read_to_string(directory.join(name))
            .unwrap_or_else(|error| panic!("deploy/kubernetes/{name}: {error}"))
    };
    let kustomization: Value = serde_yaml::from_str(&read("kustomization.yaml")).unwrap();
    let listed: Vec<String> = kustomization["resources"]
        .as_sequence()
        .expect("kustomization.yaml lists its resources")
        .iter()
        .map(|name| name.as_str().unwrap().to_owned())
        .collect();
    // Every manifest of the directory is applied by `kubectl apply -k`.
    let present: BTreeSet<String> = std::fs::read_dir(&directory)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml") && name != "kustomization.yaml")
        .collect();
    assert_eq!(
        listed.iter().cloned().collect::<BTreeSet<_>>(),
        present,
        "kustomization.yaml lists every manifest"
    );
    listed
        .into_iter()
        .map(|name| {
            let text = read(&name);
            (name, text)
        })
        .collect()
}

/// The documents of a YAML stream (separated by `---` lines, as the manifests are).
fn documents(text: &str) -> Vec<Value> {
    let mut documents = Vec::new();
    let mut current = String::new();
    for line in text.lines().chain(["---"]) {
        if line.trim_end() == "---" {
            let document: Value = serde_yaml::from_str(&current)
                .unwrap_or_else(|error| panic!("{error}:\n{current}"));
            if !document.is_null() {
                documents.push(document);
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    documents
}

fn kind(document: &Value) -> &str {
    document["kind"].as_str().unwrap_or_default()
}

fn name(document: &Value) -> &str {
    document["metadata"]["name"].as_str().unwrap_or_default()
}

fn of_kind<'a>(documents: &'a [Value], wanted: &str) -> Vec<&'a Value> {
    documents.iter().filter(|doc| kind(doc) == wanted).collect()
}

fn find<'a>(documents: &'a [Value], wanted: &str, named: &str) -> &'a Value {
    documents
        .iter()
        .find(|doc| kind(doc) == wanted && name(doc) == named)
        .unwrap_or_else(|| panic!("no {wanted} named {named}"))
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn items(value: &Value) -> &[Value] {
    value.as_sequence().map_or(&[], Vec::as_slice)
}

/// The keys of a ConfigMap's `data` or a Secret's `stringData`/`data`.
fn keys(document: &Value) -> BTreeSet<String> {
    ["data", "stringData"]
        .iter()
        .filter_map(|field| document[*field].as_mapping())
        .flat_map(|mapping| mapping.keys().map(|key| text(key).to_owned()))
        .collect()
}

/// `value` of `key = value` in `[section]` of a TOML text, unquoted.
fn toml_value(toml: &str, section: &str, key: &str) -> Option<String> {
    let mut current = String::new();
    for line in toml.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = header.to_owned();
        } else if current == section
            && let Some((name, value)) = line.split_once('=')
            && name.trim() == key
        {
            return Some(value.trim().trim_matches('"').to_owned());
        }
    }
    None
}

/// The container port a probe's or a Service's `port` names (a number or a port's name).
fn container_port(container: &Value, port: &Value) -> u64 {
    port.as_u64().unwrap_or_else(|| {
        items(&container["ports"])
            .iter()
            .find(|candidate| candidate["name"] == *port)
            .and_then(|candidate| candidate["containerPort"].as_u64())
            .unwrap_or_else(|| panic!("no container port named {port:?}"))
    })
}

fn environment(container: &Value) -> BTreeMap<String, String> {
    items(&container["env"])
        .iter()
        .map(|variable| {
            (
                text(&variable["name"]).to_owned(),
                text(&variable["value"]).to_owned(),
            )
        })
        .collect()
}

/// The pod spec of a Deployment or a Job.
fn pod_spec(workload: &Value) -> &Value {
    &workload["spec"]["template"]["spec"]
}

fn the_container(workload: &Value) -> &Value {
    let containers = items(&pod_spec(workload)["containers"]);
    assert_eq!(containers.len(), 1, "{} runs one container", name(workload));
    &containers[0]
}

/// (volume kind, the ConfigMap or Secret it mounts, its mount path) of each mount.
fn mounts(workload: &Value) -> Vec<(String, String, String)> {
    let spec = pod_spec(workload);
    items(&the_container(workload)["volumeMounts"])
        .iter()
        .map(|mount| {
            let volume = items(&spec["volumes"])
                .iter()
                .find(|volume| volume["name"] == mount["name"])
                .unwrap_or_else(|| panic!("{}: no volume {:?}", name(workload), mount["name"]));
            let (source, what) = if volume["configMap"].is_mapping() {
                ("configMap", text(&volume["configMap"]["name"]))
            } else if volume["secret"].is_mapping() {
                ("secret", text(&volume["secret"]["secretName"]))
            } else if volume["emptyDir"].is_mapping() {
                ("emptyDir", "")
            } else {
                panic!("{}: an unexpected volume {volume:?}", name(workload))
            };
            (
                source.to_owned(),
                what.to_owned(),
                text(&mount["mountPath"]).to_owned(),
            )
        })
        .collect()
}
