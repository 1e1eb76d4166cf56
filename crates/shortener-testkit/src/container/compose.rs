//! A compose project of the repository's `deploy/compose.yaml`, run by podman-compose
//! (from PyPI, pinned, installed once under `target/`), taken down with its volumes on drop.

use std::io;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::{Podman, bases, succeeded};
use crate::process::output_within;

/// The podman-compose release the tests run.
pub const PODMAN_COMPOSE_VERSION: &str = "1.6.0";

/// A compose project that is up.
#[derive(Debug)]
pub struct Compose {
    podman: Podman,
    python: PathBuf,
    file: PathBuf,
    project: String,
    environment: Vec<(String, String)>,
}

impl Compose {
    /// `podman-compose -f FILE -p PROJECT up --detach --no-build`, with `environment` for
    /// the file's `${...}`, after the images the file pulls are made when missing and any
    /// earlier run of the project is taken down.
    ///
    /// # Errors
    /// The failing step, with its output.
    pub fn up(
        podman: &Podman,
        file: PathBuf,
        project: &str,
        environment: &[(&str, &str)],
    ) -> io::Result<Self> {
        bases::make_stand_ins(podman)?;
        let venv = crate::pip::venv_with(
            "podman-compose",
            "podman-compose",
            PODMAN_COMPOSE_VERSION,
            |venv| {
                std::fs::read_dir(venv.join("lib")).is_ok_and(|mut versions| {
                    versions.any(|version| {
                        version.is_ok_and(|version| {
                            version
                                .path()
                                .join("site-packages/podman_compose.py")
                                .is_file()
                        })
                    })
                })
            },
        )?;
        let compose = Self {
            podman: podman.clone(),
            python: venv.join("bin/python"),
            file,
            project: project.to_owned(),
            environment: environment
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
        };
        compose.down();
        // Verbose: a hung `up` (killed at its timeout) shows the last podman command it ran.
        compose.run(
            &["--verbose", "up", "--detach", "--no-build"],
            Duration::from_secs(300),
        )?;
        Ok(compose)
    }

    /// `podman-compose ARGS` on this project; its stdout.
    ///
    /// # Errors
    /// When it fails or takes longer than `timeout`.
    pub fn run(&self, args: &[&str], timeout: Duration) -> io::Result<String> {
        let output = output_within(self.command().args(args), timeout)?;
        succeeded(&format!("podman-compose {}", args.join(" ")), &output)?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// The name podman gives the first container of `service`.
    #[must_use]
    pub fn container(&self, service: &str) -> String {
        format!("{}_{service}_1", self.project)
    }

    /// `podman ARGS` (podman-compose names its containers `PROJECT_SERVICE_1`).
    ///
    /// # Errors
    /// As [`Podman::run`].
    pub fn podman(&self, args: &[&str]) -> io::Result<String> {
        self.podman.run(args)
    }

    /// What the container of `service` wrote, for a failing test's message.
    #[must_use]
    pub fn service_logs(&self, service: &str) -> String {
        self.podman.logs(&self.container(service))
    }

    /// What every container of the project wrote, for a failing test's message.
    #[must_use]
    pub fn logs(&self) -> String {
        super::output_text(self.command().args(["logs", "--tail", "30"]).output())
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.python);
        // podman-compose runs `podman` with the configuration podman is given.
        command
            .env("CONTAINERS_CONF", self.podman.containers_conf())
            .args(["-m", "podman_compose", "--file"])
            .arg(&self.file)
            .args(["--project-name", &self.project]);
        for (name, value) in &self.environment {
            command.env(name, value);
        }
        command
    }

    fn down(&self) {
        let _ = output_within(
            self.command().args(["down", "--volumes", "--timeout", "5"]),
            Duration::from_secs(120),
        );
    }
}

impl Drop for Compose {
    fn drop(&mut self) {
        self.down();
    }
}
