//! The manifests run by `podman kube play` (see the module above for what it runs).

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use shortener_rls::proto::rate_limit_response::Code;
use shortener_tests::container::{Container, KubePlay, Podman, PodmanSecret, stand_ins};
use shortener_tests::{Api, answers_ok, client, free_port};

use super::*;
use crate::support::{secret, sha256_hex};

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

/// Waits until `GET url` answers 200; how long that took since `since`.
async fn ok_within(
    http: &reqwest::Client,
    url: &str,
    since: Instant,
    podman: &Podman,
    container: &str,
) -> Duration {
    if answers_ok(http, url, WAIT).await {
        return since.elapsed();
    }
    panic!(
        "{url} never answered 200; {container} said:\n{}",
        podman.logs(container)
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
            podman.logs(&migrate_container)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let migrated = started.elapsed();
    let said = podman.logs(&migrate_container);
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
    let owner = Api::at(&base).with_key(&key);
    let created = owner
        .create(&json!({"url": "https://example.com/kube"}))
        .await;
    assert_eq!(
        created.status,
        StatusCode::CREATED,
        "{}",
        podman.logs(node_container)
    );
    let link = created.body;
    let code = link["code"].as_str().unwrap();
    assert_eq!(link["short_url"], format!("{public_url}/{code}"));
    let listed = owner.list("").await.body;
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
        let answer = crate::support::ask_rls(
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
        .unwrap_or_else(|status| panic!("{status}:\n{}", podman.logs(ratelimit_container)));
        codes.push(answer.overall_code());
    }
    let mut expected = vec![Code::Ok; usize::try_from(allowed).unwrap()];
    expected.push(Code::OverLimit);
    assert_eq!(codes, expected, "{}", podman.logs(ratelimit_container));
}
