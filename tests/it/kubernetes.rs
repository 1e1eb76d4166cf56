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

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use serde_yaml::Value;
use shortener_rls::proto::rate_limit_response::Code;
use shortener_tests::container::{Container, KubePlay, Podman, PodmanSecret, stand_ins};
use shortener_tests::{client, free_port, workspace};

use crate::support::{secret, sha256_hex};

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

/// Checks what every workload of the manifests shares, and that what it mounts exists.
fn check_workload(documents: &[Value], workload: &Value) {
    let what = name(workload);
    let spec = pod_spec(workload);
    let container = the_container(workload);
    assert_eq!(container["image"], IMAGE, "{what}: the image users retag");
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true, "{what}");
    assert_eq!(spec["securityContext"]["runAsUser"], 10001, "{what}");
    let security = &container["securityContext"];
    assert_eq!(security["allowPrivilegeEscalation"], false, "{what}");
    assert_eq!(security["readOnlyRootFilesystem"], true, "{what}");
    assert_eq!(
        items(&security["capabilities"]["drop"]),
        [Value::from("ALL")],
        "{what}"
    );
    for bound in ["requests", "limits"] {
        assert!(
            container["resources"][bound]["memory"].is_string(),
            "{what}: resources.{bound}.memory"
        );
    }
    for volume in items(&spec["volumes"]) {
        if volume["configMap"].is_mapping() {
            let config_map = find(documents, "ConfigMap", text(&volume["configMap"]["name"]));
            for item in items(&volume["configMap"]["items"]) {
                assert!(keys(config_map).contains(text(&item["key"])), "{what}");
            }
        }
        if volume["secret"].is_mapping() {
            let secret = find(documents, "Secret", text(&volume["secret"]["secretName"]));
            for item in items(&volume["secret"]["items"]) {
                assert!(keys(secret).contains(text(&item["key"])), "{what}");
            }
            // podman kube play (4.3) crashes on a secret volume without it.
            assert_eq!(volume["secret"]["optional"], false, "{what}");
        }
    }
    // Every file a variable names is one of a mounted ConfigMap's or Secret's keys.
    for (variable, value) in environment(container) {
        if variable != "SHORTENER_CONFIG" && !variable.ends_with("_FILE") {
            continue;
        }
        let found = mounts(workload).into_iter().any(|(source, named, path)| {
            let Some(key) = value.strip_prefix(&format!("{path}/")) else {
                return false;
            };
            let kind = if source == "secret" {
                "Secret"
            } else {
                "ConfigMap"
            };
            source != "emptyDir" && keys(find(documents, kind, &named)).contains(key)
        });
        assert!(found, "{what}: {variable}={value} is no mounted key");
    }
}

#[test]
fn the_manifests_keep_their_promises() {
    let files = manifest_files();
    let documents: Vec<Value> = files.iter().flat_map(|(_, text)| documents(text)).collect();
    for document in &documents {
        assert!(
            document["apiVersion"].is_string() && !name(document).is_empty(),
            "every document has apiVersion, kind and a name: {document:?}"
        );
    }
    let config = find(&documents, "ConfigMap", "shortener-config");
    let toml = text(&config["data"]["shortener.toml"]);
    let setting = |section: &str, key: &str| {
        toml_value(toml, section, key).unwrap_or_else(|| panic!("no {section}.{key}"))
    };
    assert_eq!(setting("storage", "kind"), "postgres");
    assert_eq!(setting("storage", "migrate"), "false", "the Job migrates");
    assert_eq!(setting("limiter", "kind"), "redis");
    assert_eq!(setting("log", "format"), "json");
    assert!(setting("server", "trusted_proxies").starts_with("[\""));
    let secret = find(&documents, "Secret", "shortener-secrets");
    assert!(
        secret["stringData"]["database-url"]
            .as_str()
            .is_some_and(|url| url == DATABASE_PLACEHOLDER),
        "the database URL is the Secret's placeholder"
    );
    assert!(text(&secret["stringData"]["api-keys.toml"]).starts_with("[{"));

    // The nodes.
    let nodes = find(&documents, "Deployment", "shortener");
    check_workload(&documents, nodes);
    let node = the_container(nodes);
    assert_eq!(node["args"], Value::from(vec!["serve"]));
    assert_eq!(nodes["spec"]["replicas"], 3);
    assert_eq!(
        setting("limiter", "nodes"),
        nodes["spec"]["replicas"].as_u64().unwrap().to_string(),
        "each node's share while Redis fails"
    );
    let rolling = &nodes["spec"]["strategy"]["rollingUpdate"];
    assert_eq!(rolling["maxUnavailable"], 0);
    assert_eq!(rolling["maxSurge"], 1);
    let bind_port: u64 = setting("server", "bind")
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")] {
        let get = &node[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert_eq!(container_port(node, &get["port"]), bind_port, "{probe}");
    }
    let pause = node["lifecycle"]["preStop"]["sleep"]["seconds"]
        .as_u64()
        .expect("a preStop sleep: the image has no shell");
    assert!(pause > 0);
    let drain_ms: u64 = setting("server", "shutdown_timeout_ms").parse().unwrap();
    let grace = pod_spec(nodes)["terminationGracePeriodSeconds"]
        .as_u64()
        .unwrap();
    assert!(
        grace * 1000 > pause * 1000 + drain_ms,
        "the grace period ({grace} s) outlasts the preStop pause ({pause} s) and the drain \
         ({drain_ms} ms)"
    );
    assert!(
        mounts(nodes)
            .iter()
            .any(|(source, _, path)| source == "emptyDir" && path == "/tmp"),
        "/tmp is writable under a read-only root"
    );
    let variables = environment(node);
    assert!(variables.contains_key("SHORTENER_STORAGE__URL_FILE"));
    assert!(variables.contains_key("SHORTENER_API_KEYS_FILE"));

    // The migration Job: the nodes' config and database, `shortener migrate`.
    let jobs = of_kind(&documents, "Job");
    assert_eq!(jobs.len(), 1);
    let job = jobs[0];
    check_workload(&documents, job);
    let migrate = the_container(job);
    assert_eq!(migrate["args"], Value::from(vec!["migrate"]));
    assert_eq!(
        environment(migrate)["SHORTENER_STORAGE__URL_FILE"],
        variables["SHORTENER_STORAGE__URL_FILE"]
    );
    assert_eq!(
        environment(migrate)["SHORTENER_CONFIG"],
        variables["SHORTENER_CONFIG"]
    );

    // The rate limit service.
    let ratelimit = find(&documents, "Deployment", "ratelimit");
    check_workload(&documents, ratelimit);
    let service = the_container(ratelimit);
    assert_eq!(service["args"], Value::from(vec!["ratelimit-server"]));
    assert_eq!(ratelimit["spec"]["replicas"], 2);
    let theirs = environment(service);
    let http_port: u64 = theirs["PORT"].parse().unwrap();
    let grpc_port: u64 = theirs["GRPC_PORT"].parse().unwrap();
    assert_eq!(grpc_port, 8081);
    assert_eq!(theirs["REDIS_URL"], REDIS_PLACEHOLDER);
    for probe in ["readinessProbe", "livenessProbe"] {
        let get = &service[probe]["httpGet"];
        assert_eq!(get["path"], "/healthcheck", "{probe}");
        assert_eq!(container_port(service, &get["port"]), http_port, "{probe}");
    }
    let limits_path = format!(
        "{}/{}/config",
        theirs["RUNTIME_ROOT"], theirs["RUNTIME_SUBDIRECTORY"]
    );
    let (_, limits_name, _) = mounts(ratelimit)
        .into_iter()
        .find(|(source, _, path)| source == "configMap" && *path == limits_path)
        .expect("a ConfigMap of limits at RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/config");
    let limits = find(&documents, "ConfigMap", &limits_name);
    for file in keys(limits) {
        let parsed: Value = serde_yaml::from_str(text(&limits["data"][file.as_str()])).unwrap();
        assert!(parsed["domain"].is_string(), "{file} names its domain");
        assert!(!items(&parsed["descriptors"]).is_empty(), "{file}");
    }

    // Each Service selects a Deployment's pods and targets one of its ports.
    let services = of_kind(&documents, "Service");
    assert_eq!(services.len(), 2);
    for service in services {
        let selector = service["spec"]["selector"].as_mapping().unwrap();
        let selected = of_kind(&documents, "Deployment")
            .into_iter()
            .find(|deployment| {
                let labels = &deployment["spec"]["template"]["metadata"]["labels"];
                selector.iter().all(|(key, value)| labels[key] == *value)
            })
            .unwrap_or_else(|| panic!("the Service {} selects no Deployment", name(service)));
        for port in items(&service["spec"]["ports"]) {
            container_port(the_container(selected), &port["targetPort"]);
        }
    }
    assert_eq!(
        items(&find(&documents, "Service", "ratelimit")["spec"]["ports"])[0]["port"],
        8081,
        "gRPC"
    );
}

/// A name no other run of this test uses.
fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("shortener-test-kube-{what}-{}-{nanos}", std::process::id())
}

/// Runs `podman exec CONTAINER ARGS` until it succeeds, within [`WAIT`].
fn exec_until_success(podman: &Podman, container: &Container, args: &[&str]) {
    let started = Instant::now();
    let mut all = vec!["exec", container.name.as_str()];
    all.extend_from_slice(args);
    loop {
        match podman.run(&all) {
            Ok(_) => return,
            Err(error) => assert!(
                started.elapsed() < WAIT,
                "{args:?} never succeeded ({error}):\n{}",
                container.logs()
            ),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn logs(podman: &Podman, container: &str) -> String {
    podman
        .command()
        .args(["logs", container])
        .output()
        .map(|output| {
            format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        })
        .unwrap_or_default()
}

/// Waits until `GET url` answers 200; how long that took since `since`.
async fn ok_within(
    http: &reqwest::Client,
    url: &str,
    since: Instant,
    podman: &Podman,
    container: &str,
) -> Duration {
    let started = Instant::now();
    while started.elapsed() < WAIT {
        if let Ok(answer) = http.get(url).send().await
            && answer.status() == StatusCode::OK
        {
            return since.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{url} never answered 200; {container} said:\n{}",
        logs(podman, container)
    );
}

#[tokio::test]
async fn podman_kube_play_runs_the_manifests() {
    let podman = Podman::new().unwrap_or_else(|error| panic!("{error}"));
    let image = podman.image().unwrap_or_else(|error| panic!("{error}"));
    stand_ins(&podman).unwrap_or_else(|error| panic!("{error}"));

    // The operator's Redis and PostgreSQL, on podman's network as the pods will be.
    let redis = Container::run(
        &podman,
        &unique("redis"),
        &["docker.io/library/redis:7-bookworm"],
    )
    .unwrap();
    let password = format!("kube-{}", std::process::id());
    let postgres = Container::run(
        &podman,
        &unique("postgres"),
        &[
            // The data directory in memory: no volume is left behind.
            "--tmpfs",
            "/var/lib/postgresql/data",
            "--env",
            "POSTGRES_USER=shortener",
            "--env",
            "POSTGRES_DB=shortener",
            "--env",
            &format!("POSTGRES_PASSWORD={password}"),
            "docker.io/library/postgres:15-bookworm",
        ],
    )
    .unwrap();
    let address =
        |container: &Container| container.inspect("{{.NetworkSettings.IPAddress}}").unwrap();
    let (redis_ip, postgres_ip) = (address(&redis), address(&postgres));
    exec_until_success(&podman, &redis, &["redis-cli", "ping"]);
    exec_until_success(
        &podman,
        &postgres,
        &[
            "pg_isready",
            "--host",
            "127.0.0.1",
            "--username",
            "shortener",
        ],
    );

    // The manifests as they are, but for what must point at this machine.
    let mut stream = String::new();
    for (_, text) in manifest_files() {
        stream.push_str(&text);
        stream.push_str("\n---\n");
    }
    let database_url = format!("postgres://shortener:{password}@{postgres_ip}:5432/shortener");
    let key = secret("kube");
    for (placeholder, value) in [
        (IMAGE, image.to_owned()),
        (REDIS_PLACEHOLDER, format!("{redis_ip}:6379")),
        (DATABASE_PLACEHOLDER, database_url),
        (KEY_PLACEHOLDER, sha256_hex(&key)),
    ] {
        assert!(
            stream.contains(placeholder),
            "the manifests hold {placeholder}"
        );
        stream = stream.replace(placeholder, &value);
    }
    let documents = documents(&stream);
    let config_maps: Vec<&Value> = of_kind(&documents, "ConfigMap");
    let config_map_names: Vec<&str> = config_maps.iter().map(|doc| name(doc)).collect();
    let config = find(&documents, "ConfigMap", "shortener-config");
    let public_url = toml_value(
        text(&config["data"]["shortener.toml"]),
        "server",
        "public_url",
    )
    .unwrap();

    // The Secret, as podman's secret volumes read it.
    let mut secret_document = find(&documents, "Secret", "shortener-secrets").clone();
    let plain = secret_document
        .as_mapping_mut()
        .unwrap()
        .remove("stringData")
        .unwrap();
    secret_document["data"] = plain;
    let _secret = PodmanSecret::create(
        &podman,
        name(&secret_document),
        &serde_yaml::to_string(&secret_document).unwrap(),
    )
    .unwrap();
    let mut volumes = config_map_names.clone();
    volumes.push(name(&secret_document));

    // The Job's pod, first: the nodes refuse a database it has not migrated.
    let job = of_kind(&documents, "Job")[0];
    let job_pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name(job), "labels": job["spec"]["template"]["metadata"]["labels"]},
        "spec": pod_spec(job),
    });
    let mut migration_stream = String::new();
    for document in config_maps
        .iter()
        .copied()
        .chain([&serde_yaml::to_value(&job_pod).unwrap()])
    {
        migration_stream.push_str(&serde_yaml::to_string(document).unwrap());
        migration_stream.push_str("---\n");
    }
    let started = Instant::now();
    let migration = KubePlay::play(
        &podman,
        "shortener-migrate",
        &migration_stream,
        &["--network", "podman"],
        &volumes,
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let migrate_container = format!("{}-{}", name(job), text(&the_container(job)["name"]));
    loop {
        let state = podman
            .run(&[
                "inspect",
                "--format",
                "{{.State.Status}} {{.State.ExitCode}}",
                &migrate_container,
            ])
            .unwrap();
        if state == "exited 0" {
            break;
        }
        assert!(
            started.elapsed() < WAIT,
            "the migration never exited 0 ({state}):\n{}",
            logs(&podman, &migrate_container)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let migrated = started.elapsed();
    let said = logs(&podman, &migrate_container);
    let migrations = std::fs::read_dir(workspace().join("crates/shortener-postgres/migrations"))
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|entry| entry.file_name().to_string_lossy().ends_with(".sql"))
        })
        .count();
    // The URL the Secret holds, redacted, names the database that was migrated.
    let applied_to = format!("postgres://shortener:***@{postgres_ip}:5432/shortener: applied ");
    assert_eq!(
        said.lines()
            .filter(|line| line.starts_with(&applied_to))
            .count(),
        migrations,
        "every migration applied to the Secret's database:\n{said}"
    );
    eprintln!(
        "kubernetes: the migration Job's pod applied {migrations} migrations in {migrated:.0?}"
    );
    drop(migration);

    // The Deployments, one replica each, each container port on its own loopback port.
    let mut host_ports: BTreeMap<(String, String), u16> = BTreeMap::new();
    let mut deployments: Vec<Value> = of_kind(&documents, "Deployment")
        .into_iter()
        .cloned()
        .collect();
    for deployment in &mut deployments {
        let deployment_name = name(deployment).to_owned();
        deployment["spec"]["replicas"] = 1.into();
        let containers = deployment["spec"]["template"]["spec"]["containers"]
            .as_sequence_mut()
            .unwrap();
        for container in containers {
            for port in container["ports"].as_sequence_mut().unwrap() {
                let host_port = free_port().unwrap();
                port["hostPort"] = host_port.into();
                port["hostIP"] = "127.0.0.1".into();
                host_ports.insert(
                    (deployment_name.clone(), text(&port["name"]).to_owned()),
                    host_port,
                );
            }
        }
    }
    let mut main_stream = String::new();
    for document in config_maps.iter().copied().chain(deployments.iter()) {
        main_stream.push_str(&serde_yaml::to_string(document).unwrap());
        main_stream.push_str("---\n");
    }
    let started = Instant::now();
    let _pods = KubePlay::play(
        &podman,
        "shortener",
        &main_stream,
        &["--network", "podman"],
        &volumes,
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let played = started.elapsed();
    let port = |deployment: &str, port: &str| host_ports[&(deployment.to_owned(), port.to_owned())];
    let node_container = "shortener-pod-0-shortener";
    let http = client();
    let base = format!("http://127.0.0.1:{}", port("shortener", "http"));
    let ready = ok_within(
        &http,
        &format!("{base}/readyz"),
        started,
        &podman,
        node_container,
    )
    .await;
    eprintln!(
        "kubernetes: kube play took {played:.0?}; the node was ready on /readyz {ready:.0?} after it began"
    );

    // The pod's securityContext, as podman applied it.
    assert_eq!(
        podman
            .run(&[
                "inspect",
                "--format",
                "{{.HostConfig.ReadonlyRootfs}} {{.Config.User}}",
                node_container,
            ])
            .unwrap(),
        "true 10001:10001"
    );

    // A create with the key of the Secret, its short URL from the ConfigMap's config,
    // and the redirect.
    let created = http
        .post(format!("{base}/api/v1/links"))
        .header("x-api-key", &key)
        .json(&json!({"url": "https://example.com/kube"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        created.status(),
        StatusCode::CREATED,
        "{}",
        logs(&podman, node_container)
    );
    let link: serde_json::Value = created.json().await.unwrap();
    let code = link["code"].as_str().unwrap();
    assert_eq!(link["short_url"], format!("{public_url}/{code}"));
    let listed: serde_json::Value = http
        .get(format!("{base}/api/v1/links"))
        .header("x-api-key", &key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        listed["items"][0]["code"], code,
        "the Secret's key owns it: {listed}"
    );
    let public_host = public_url.split("://").nth(1).unwrap();
    let redirect = http
        .get(format!("{base}/{code}"))
        .header("host", public_host)
        .send()
        .await
        .unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
    assert_eq!(redirect.headers()["location"], "https://example.com/kube");

    // The rate limit service, with the ConfigMap's limits.
    let ratelimit_container = "ratelimit-pod-0-ratelimit";
    let healthy = ok_within(
        &http,
        &format!("http://127.0.0.1:{}/healthcheck", port("ratelimit", "http")),
        started,
        &podman,
        ratelimit_container,
    )
    .await;
    eprintln!(
        "kubernetes: ratelimit-server answered /healthcheck {healthy:.0?} after kube play began"
    );
    let limits = find(&documents, "ConfigMap", "ratelimit-limits");
    let sample: Value = serde_yaml::from_str(text(&limits["data"]["shortener.yaml"])).unwrap();
    let outer = &items(&sample["descriptors"])[0];
    let inner = &items(&outer["descriptors"])[0];
    let allowed = inner["rate_limit"]["requests_per_unit"].as_u64().unwrap();
    let client_address = unique("client");
    let grpc = format!("http://127.0.0.1:{}", port("ratelimit", "grpc"));
    let mut codes = Vec::new();
    for _ in 0..=allowed {
        let answer = crate::rls::ask(
            &grpc,
            shortener_rls::request(
                text(&sample["domain"]),
                &[&[
                    (text(&outer["key"]), text(&outer["value"])),
                    (text(&inner["key"]), &client_address),
                ]],
            ),
        )
        .await
        .unwrap_or_else(|status| panic!("{status}:\n{}", logs(&podman, ratelimit_container)));
        codes.push(answer.overall_code());
    }
    let mut expected = vec![Code::Ok; usize::try_from(allowed).unwrap()];
    expected.push(Code::OverLimit);
    assert_eq!(codes, expected, "{}", logs(&podman, ratelimit_container));
}
