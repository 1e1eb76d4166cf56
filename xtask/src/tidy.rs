//! Tidy checks: architecture invariants that a reviewer would otherwise have to remember.

mod cycles;

use std::fs;

use crate::root;

/// Architecture invariant: within each crate, the modules depend on each other one way:
/// no top-level module names another that names it back, directly or around a loop.
#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let mut found = Vec::new();
    let mut crates: Vec<String> = fs::read_dir(root().join("crates"))
        .unwrap()
        .flatten()
        .map(|entry| format!("crates/{}/src", entry.file_name().to_string_lossy()))
        .collect();
    crates.push("xtask/src".to_owned());
    crates.sort();
    for source in crates {
        let files: Vec<(String, String)> = rust_sources()
            .into_iter()
            .filter_map(|(path, text)| {
                let inside = path.strip_prefix(&format!("{source}/"))?;
                Some((inside.to_owned(), text))
            })
            .collect();
        for cycle in cycles::cycles(&cycles::graph(&files)) {
            found.push(format!("{source}: {}", cycle.join(" <-> ")));
        }
    }
    assert!(
        found.is_empty(),
        "modules that depend on each other:\n{}",
        found.join("\n")
    );
}

/// Architecture invariant: `shortener-core` depends on no adapter library.
#[test]
fn core_depends_on_no_adapter_library() {
    let manifest = fs::read_to_string(root().join("crates/shortener-core/Cargo.toml")).unwrap();
    let dependencies = manifest
        .split("[dependencies]")
        .nth(1)
        .unwrap()
        .split("\n[")
        .next()
        .unwrap();
    for forbidden in [
        "tokio",
        "sqlx",
        "redis",
        "poem",
        "moka",
        "quick_cache",
        "reqwest",
        "figment",
        "shortener-",
    ] {
        assert!(
            !dependencies
                .lines()
                .any(|line| line.trim_start().starts_with(forbidden)),
            "shortener-core must not depend on {forbidden}"
        );
    }
}

/// Architecture invariant: every crate is in `crates/<package name>`, unpublished, with the workspace lints.
#[test]
fn crates_follow_the_layout() {
    for entry in fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "{name}: folder name = package name"
        );
        assert!(
            manifest.contains("publish = false"),
            "{name}: publish = false"
        );
        assert!(
            manifest.contains("[lints]\nworkspace = true"),
            "{name}: workspace lints"
        );
        let lib = fs::read_to_string(dir.join("src/lib.rs")).unwrap();
        assert!(
            lib.starts_with("//!"),
            "{name}: lib.rs opens with module docs"
        );
    }
}

/// Every Lua script opens with its KEYS / ARGV / return header.
#[test]
fn lua_scripts_have_headers() {
    for entry in fs::read_dir(root().join("lua")).unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read_to_string(&path).unwrap();
        let head: String = text.lines().take(40).collect::<Vec<_>>().join("\n");
        for word in ["KEYS", "ARGV", "Return"] {
            assert!(
                head.to_lowercase().contains(&word.to_lowercase()),
                "{}: header lacks {word}",
                path.display()
            );
        }
    }
}

/// `cargo run --release` at the root must start the server (the README's quick start), which in a
/// workspace with several binaries only holds when the server is the one default member.
#[test]
fn cargo_run_at_the_root_means_the_server() {
    let manifest = fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(manifest.contains("default-members = [\"crates/shortener-server\"]"));
    let server = fs::read_to_string(root().join("crates/shortener-server/Cargo.toml")).unwrap();
    assert!(
        server.contains("name = \"shortener\""),
        "the binary is `shortener`"
    );
}

/// The repository explains itself: no file points at a document that is not in it.
#[test]
fn no_reference_to_documents_outside_the_repository() {
    let forbidden = ["SPEC.md", "DESIGN.md", "STYLE.md", "TARGETS.md", "shared/"];
    let mut offenders = Vec::new();
    let mut stack = vec![root()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    stack.push(path);
                }
                continue;
            }
            let checked = [
                "rs", "md", "toml", "lua", "json", "conf", "sh", "html", "js", "css",
            ];
            if !checked.iter().any(|ext| name.ends_with(&format!(".{ext}"))) {
                continue;
            }
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            for document in forbidden {
                // This test names them, to forbid them.
                if text.contains(document) && !path.ends_with("xtask/src/tidy.rs") {
                    offenders.push(format!("{} mentions {document}", path.display()));
                }
            }
        }
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

/// Every `.rs` file of the repository (not `target/`, not hidden directories), relative to
/// the root, with its text.
fn rust_sources() -> Vec<(String, String)> {
    let root = root();
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                let relative = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.push((relative, fs::read_to_string(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// Every source file says what it is before anything else: its `//!` module doc.
#[test]
fn every_source_file_opens_with_a_module_doc() {
    let offenders: Vec<String> = rust_sources()
        .into_iter()
        .filter(|(_, text)| {
            !text
                .lines()
                .find(|line| !line.trim().is_empty())
                .is_some_and(|line| line.starts_with("//!"))
        })
        .map(|(path, _)| path)
        .collect();
    assert!(
        offenders.is_empty(),
        "no `//!` at the top:\n{}",
        offenders.join("\n")
    );
}

/// A file that does one thing fits in 400 lines of code; a longer one is split. Its inline
/// test module does not count: tests stay beside what they test, with no folder made
/// only to hold them.
#[test]
fn no_source_file_is_over_400_lines() {
    let offenders: Vec<String> = rust_sources()
        .into_iter()
        .filter(|(_, text)| product_lines(text) > 400)
        .map(|(path, text)| format!("{path}: {} product lines", product_lines(&text)))
        .collect();
    assert!(
        offenders.is_empty(),
        "over 400 lines:\n{}",
        offenders.join("\n")
    );
}

/// The lines of a file before its inline test module (`#[cfg(test)]` then `mod tests {`):
/// the length rule is about the code a reader must hold, and a file's tests sit beside it.
fn product_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    (lines.windows(2))
        .position(|pair| pair[0].trim() == "#[cfg(test)]" && pair[1].trim() == "mod tests {")
        .unwrap_or(lines.len())
}

/// The HTTP adapter's operations live in its application service (`service/`), where a
/// reader looks for them: outside it and the state's own constructor, no `impl AppState`.
#[test]
fn the_http_operations_live_in_the_service() {
    let home = "crates/shortener-http/src/";
    let offenders: Vec<String> = rust_sources()
        .into_iter()
        .filter(|(path, _)| path.starts_with(home))
        .filter(|(path, _)| {
            let inside = &path[home.len()..];
            inside != "state.rs" && !inside.starts_with("service/")
        })
        .filter(|(_, text)| text.lines().any(|line| line.starts_with("impl AppState")))
        .map(|(path, _)| path)
        .collect();
    assert!(
        offenders.is_empty(),
        "`impl AppState` outside service/:\n{}",
        offenders.join("\n")
    );
}

/// Processes, ports and temp dirs have one home, the test kit: no copy elsewhere.
#[test]
fn test_support_lives_in_the_test_kit() {
    let forbidden = [
        "struct TempDir",
        "fn free_port",
        "fn temp_dir",
        // A process guard: a struct that holds a child process to kill.
        ": Child,",
        ": Option<Child>",
        "process::Child,",
        "process::Child>",
        "fn after_exit",
        // PATH lookup.
        "split_paths(",
    ];
    let mut offenders = Vec::new();
    for (path, text) in rust_sources() {
        // This test names them, to forbid them.
        if path.starts_with("crates/shortener-testkit/") || path == "xtask/src/tidy.rs" {
            continue;
        }
        for pattern in forbidden {
            if text.contains(pattern) {
                offenders.push(format!("{path} defines `{pattern}`"));
            }
        }
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

/// The test kit is dev-only: no library or binary of the product depends on it.
#[test]
fn only_tests_benchmarks_and_xtask_depend_on_the_test_kit() {
    // Test-only crates, which may use it as a normal dependency.
    let allowed = [
        "shortener-conformance",
        "shortener-bench",
        "shortener-testkit",
    ];
    for entry in fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if allowed.contains(&name.as_str()) {
            continue;
        }
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let dependencies = manifest
            .split("[dependencies]")
            .nth(1)
            .unwrap_or_default()
            .split("\n[")
            .next()
            .unwrap_or_default();
        assert!(
            !dependencies.contains("shortener-testkit"),
            "{name} depends on shortener-testkit outside [dev-dependencies]"
        );
    }
}

/// Architecture invariant: the crates depend on each other along the hexagon's arrows:
/// core on no crate of ours, each driven adapter on core alone, the driving adapters
/// (`shortener-rls`) and the file formats (`shortener-transfer`) on core, the choice of
/// backends on core and the driven adapters, the HTTP adapter on those (never on the
/// rate limit service), and
/// only the composition root (`shortener-server`) on all of them. Test-only crates
/// (`-testkit`, `-conformance`, `-bench`) are checked by the test kit's own rule.
#[test]
fn crates_depend_on_each_other_along_the_arrows() {
    let driven = [
        "shortener-memory",
        "shortener-cache",
        "shortener-sqlite",
        "shortener-postgres",
        "shortener-redis",
    ];
    let allowed = |name: &str| -> Option<Vec<&str>> {
        Some(match name {
            "shortener-core" => vec![],
            "shortener-rls" | "shortener-transfer" => vec!["shortener-core"],
            "shortener-backends" => [&["shortener-core"][..], &driven].concat(),
            // The HTTP driving adapter: the cross-node invalidations are on the limiter's
            // Redis, and the state holds the chosen backends.
            "shortener-http" => vec![
                "shortener-core",
                "shortener-redis",
                "shortener-backends",
                "shortener-transfer",
            ],
            "shortener-server" => return None,
            name if driven.contains(&name) => vec!["shortener-core"],
            // Test-only crates.
            _ => return None,
        })
    };
    let mut offenders = Vec::new();
    for entry in fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Some(allowed) = allowed(&name) else {
            continue;
        };
        let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let dependencies = manifest
            .split("[dependencies]")
            .nth(1)
            .unwrap_or_default()
            .split("\n[")
            .next()
            .unwrap_or_default();
        for line in dependencies.lines() {
            let Some(dependency) = line.split(['.', ' ', '=']).next() else {
                continue;
            };
            if dependency.starts_with("shortener-") && !allowed.contains(&dependency) {
                offenders.push(format!("{name} depends on {dependency}"));
            }
        }
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}
