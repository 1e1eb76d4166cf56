//! Every manifest read as a cluster reads it, and what only a cluster would show checked
//! (see the module above).

use super::*;

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
