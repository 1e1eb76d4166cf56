//! The OpenAPI document against the server, by schemathesis (PyPI, pinned, installed once
//! under `target/`): every operation called with generated valid and invalid input and
//! an admin key, every answer checked against what the document declares (`--checks
//! all`: no 5xx, each status, content type, header and body as declared, input that
//! breaks the document refused). A generated client validates what the server will, and
//! expects every status it answers.
//!
//! `tests/contract/schemathesis.toml` sets what schemathesis cannot know: 413 and 414 are
//! refusals of input too large, and `positive_data_acceptance` (input the document
//! allows must never get a 400 or 422) is off, with the server's rules that no schema
//! states (an expiry in the past, an `Idempotency-Key` reused with another body, ...).

use std::process::Command;
use std::time::Duration;

use shortener_testkit::pip;
use shortener_tests::{TestConfig, spawn_in_process, workspace};

use crate::support::{Keys as _, secret};

/// The schemathesis release the test runs: its latest when the test was written.
const SCHEMATHESIS_VERSION: &str = "4.32.5";

#[test]
fn every_answer_is_one_the_openapi_document_declares() {
    let venv = pip::venv_with(
        "schemathesis",
        "schemathesis",
        SCHEMATHESIS_VERSION,
        |venv| venv.join("bin/st").is_file(),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    // No policy refuses: the test is of the contract, not of the limits.
    let unlimited = ["create", "lookup", "unlock", "unlock_link"];
    let app = spawn_in_process(
        &(unlimited.iter())
            .fold(TestConfig::default().in_memory(), |config, name| {
                config.policy(name, 100_000, 50_000.0)
            })
            .keys(&[("root", "admin")]),
    );
    let run = shortener_testkit::output_within(
        Command::new(venv.join("bin/python"))
            // Where schemathesis keeps its own files (`.schemathesis/`), out of the tree.
            .current_dir(venv.parent().unwrap_or(&venv))
            .args(["-m", "schemathesis.cli", "--config-file"])
            .arg(workspace().join("tests/contract/schemathesis.toml"))
            .arg("run")
            .arg(app.url("/openapi.json"))
            // `--checks all` enables every check: the one left out is named again.
            .args([
                "--checks",
                "all",
                "--exclude-checks",
                "positive_data_acceptance",
            ])
            .args(["--max-examples", "30", "--seed", "1"])
            .args(["--header", &format!("X-API-Key: {}", secret("root"))])
            .env("SCHEMATHESIS_HOOKS", "")
            .env("NO_COLOR", "1"),
        Duration::from_secs(600),
    )
    .unwrap_or_else(|error| panic!("schemathesis runs: {error}"));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "schemathesis found answers the document does not declare:\n{stdout}\n{stderr}"
    );
    eprintln!(
        "{}",
        stdout.lines().rev().take(12).collect::<Vec<_>>().join("\n")
    );
}
