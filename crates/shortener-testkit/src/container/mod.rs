//! Containers with podman: the repository's `Dockerfile` built into an image, exactly as a
//! user's `podman build .` builds it, and containers of it that are removed on drop.
//!
//! No image registry answers on the machines the tests run on, so the one base image the
//! `Dockerfile` pulls (its `RUST_IMAGE`, the Rust toolchain's) is made here when podman does
//! not have it: a Debian bookworm root file system by `debootstrap` (kept under
//! `target/container/`), with the C compiler the build needs, this machine's CA roots (its
//! registries may be reached through a TLS proxy), and this machine's Rust toolchain in the
//! official image's places (`/usr/local/rustup`, `/usr/local/cargo/bin`), imported under the
//! name the `Dockerfile` uses. Builds run with `--pull=never`.
//!
//! The images that `deploy/compose.yaml` and the Kubernetes manifests pull (Redis,
//! PostgreSQL, nginx) are made here too when missing: stand-ins built from Debian's
//! packages (see `bases`). [`Compose`] runs the compose file with podman-compose.
//!
//! podman runs with runc and without default ulimits (`target/container/containers.conf`):
//! crun fails on these machines' cgroups, and the default ulimits cannot be set here.

mod bases;
mod compose;
mod kube;

pub use compose::Compose;
pub use kube::{KubePlay, PodmanSecret, stand_ins};

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::cargo::workspace;
use crate::process::{output_within, require_binary};

/// The tag the tests build the repository's `Dockerfile` under.
pub const IMAGE: &str = "localhost/shortener:test";

/// How long a build may take: a cold one compiles the whole server in release mode.
const BUILD_TIMEOUT: Duration = Duration::from_secs(40 * 60);

/// How long any other podman command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// `podman`, configured for these machines.
#[derive(Debug, Clone)]
pub struct Podman {
    containers_conf: PathBuf,
}

impl Podman {
    /// Checks that podman and runc are installed, and writes the configuration they run with.
    ///
    /// # Errors
    /// One line naming the Debian package to install, or why the configuration cannot be
    /// written.
    pub fn new() -> io::Result<Self> {
        require_binary("podman")?;
        require_binary("runc")?;
        let directory = container_dir();
        std::fs::create_dir_all(&directory)?;
        let containers_conf = directory.join("containers.conf");
        std::fs::write(
            &containers_conf,
            "[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = \"runc\"\n",
        )?;
        Ok(Self { containers_conf })
    }

    /// The `containers.conf` podman runs with (`CONTAINERS_CONF`).
    #[must_use]
    pub fn containers_conf(&self) -> &Path {
        &self.containers_conf
    }

    /// A `podman` command with this configuration.
    #[must_use]
    pub fn command(&self) -> Command {
        let mut command = Command::new("podman");
        command.env("CONTAINERS_CONF", &self.containers_conf);
        command
    }

    /// Runs `podman ARGS` to its end within two minutes; its stdout, trimmed.
    ///
    /// # Errors
    /// When it cannot run, times out, or exits non-zero (with its stderr).
    pub fn run(&self, args: &[&str]) -> io::Result<String> {
        let output = output_within(self.command().args(args), COMMAND_TIMEOUT)?;
        succeeded(&format!("podman {}", args.join(" ")), &output)?;
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// What the container `name` wrote to stdout and stderr so far (empty if it cannot
    /// be read), for a failing test's message.
    #[must_use]
    pub fn logs(&self, name: &str) -> String {
        output_text(self.command().args(["logs", name]).output())
    }

    /// Whether podman has an image of this name.
    #[must_use]
    pub fn has_image(&self, name: &str) -> bool {
        self.command()
            .args(["image", "exists", name])
            .status()
            .is_ok_and(|status| status.success())
    }

    /// The repository's `Dockerfile` built as [`IMAGE`], once per process: the base image
    /// made first when missing. Prints how long each step took.
    ///
    /// # Errors
    /// Why the image could not be made (the failing command and its output).
    pub fn image(&self) -> io::Result<&'static str> {
        static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
        static BUILDING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = BUILDING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let built = BUILT.get_or_init(|| self.build().map_err(|error| error.to_string()));
        built.clone().map_err(io::Error::other).map(|()| IMAGE)
    }

    fn build(&self) -> io::Result<()> {
        let dockerfile = std::fs::read_to_string(workspace().join("Dockerfile"))?;
        let base = build_arg_default(&dockerfile, "RUST_IMAGE")
            .ok_or_else(|| io::Error::other("the Dockerfile names no `ARG RUST_IMAGE=` default"))?;
        if !self.has_image(&base) {
            let started = Instant::now();
            bases::make_rust_image(self, &base)?;
            eprintln!("container: made {base} in {:.0?}", started.elapsed());
        }
        let commit = git_head()?;
        let started = Instant::now();
        let output = output_within(
            self.command()
                .current_dir(workspace())
                .args(["build", "--pull=never", "--format", "docker"])
                .args(["--build-arg", &format!("COMMIT={commit}")])
                .args(["--tag", IMAGE, "."]),
            BUILD_TIMEOUT,
        )?;
        succeeded("podman build", &output)?;
        // Each build of a new commit leaves its build stage (the toolchain and the source)
        // as an untagged image: removed, so that runs do not fill the disk. The compiled
        // crates stay in the build's cache mounts.
        // Not fatal: another build of this machine may hold an image a moment longer.
        if let Err(error) = self.run(&["image", "prune", "--force"]) {
            eprintln!("container: untagged images not removed: {error}");
        }
        eprintln!(
            "container: built {IMAGE} from the Dockerfile in {:.0?}",
            started.elapsed()
        );
        Ok(())
    }
}

/// A container that is removed (killed first if running) when dropped.
#[derive(Debug)]
pub struct Container {
    podman: Podman,
    pub name: String,
}

impl Container {
    /// `podman run --detach --name NAME ARGS`, where ARGS end with the image and its command.
    ///
    /// # Errors
    /// As [`Podman::run`].
    pub fn run(podman: &Podman, name: &str, args: &[&str]) -> io::Result<Self> {
        let _ = podman.run(&["rm", "--force", "--time", "0", name]);
        let mut all = vec!["run", "--detach", "--name", name];
        all.extend_from_slice(args);
        podman.run(&all)?;
        Ok(Self {
            podman: podman.clone(),
            name: name.to_owned(),
        })
    }

    /// `podman inspect --format FORMAT` of this container.
    ///
    /// # Errors
    /// As [`Podman::run`].
    pub fn inspect(&self, format: &str) -> io::Result<String> {
        self.podman.run(&[
            "inspect",
            "--type",
            "container",
            "--format",
            format,
            &self.name,
        ])
    }

    /// `podman ARGS... NAME`: a command on this container (`stop`, `restart`, `logs`...).
    ///
    /// # Errors
    /// As [`Podman::run`].
    pub fn podman(&self, args: &[&str]) -> io::Result<String> {
        let mut all = args.to_vec();
        all.push(&self.name);
        self.podman.run(&all)
    }

    /// What the container wrote to stdout and stderr so far.
    #[must_use]
    pub fn logs(&self) -> String {
        self.podman.logs(&self.name)
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self
            .podman
            .run(&["rm", "--force", "--time", "0", &self.name]);
    }
}

/// A named volume that is removed when dropped (after the containers that use it).
#[derive(Debug)]
pub struct Volume {
    podman: Podman,
    pub name: String,
}

impl Volume {
    /// `podman volume create NAME`.
    ///
    /// # Errors
    /// As [`Podman::run`].
    pub fn create(podman: &Podman, name: &str) -> io::Result<Self> {
        let _ = podman.run(&["volume", "rm", "--force", name]);
        podman.run(&["volume", "create", name])?;
        Ok(Self {
            podman: podman.clone(),
            name: name.to_owned(),
        })
    }

    /// Where the volume's files are on this machine.
    ///
    /// # Errors
    /// As [`Podman::run`].
    pub fn mountpoint(&self) -> io::Result<PathBuf> {
        self.podman
            .run(&[
                "volume",
                "inspect",
                "--format",
                "{{.Mountpoint}}",
                &self.name,
            ])
            .map(PathBuf::from)
    }
}

impl Drop for Volume {
    fn drop(&mut self) {
        let _ = self.podman.run(&["volume", "rm", "--force", &self.name]);
    }
}

/// A command's stdout then stderr, as text; empty when it could not run.
fn output_text(output: io::Result<Output>) -> String {
    output
        .map(|output| {
            format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        })
        .unwrap_or_default()
}

/// `target/container/`: podman's configuration and the base image's root file system.
#[must_use]
pub fn container_dir() -> PathBuf {
    crate::cargo::target_dir().join("container")
}

/// The default of `ARG NAME=default` in a Dockerfile.
fn build_arg_default(dockerfile: &str, name: &str) -> Option<String> {
    dockerfile.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("ARG ")?.trim();
        let value = rest.strip_prefix(name)?.strip_prefix('=')?;
        Some(value.trim().trim_matches('"').to_owned())
    })
}

fn git_head() -> io::Result<String> {
    let output = output_within(
        Command::new("git")
            .current_dir(workspace())
            .args(["rev-parse", "HEAD"]),
        COMMAND_TIMEOUT,
    )?;
    succeeded("git rev-parse HEAD", &output)?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn succeeded(what: &str, output: &Output) -> io::Result<()> {
    if output.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        // A build's error is in the last lines of its output.
        let lines: Vec<&str> = stdout.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        Err(io::Error::other(format!(
            "`{what}` failed ({}): {}\n{tail}",
            output.status,
            stderr.trim()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dockerfile_names_its_rust_image_and_the_version() {
        let dockerfile = std::fs::read_to_string(workspace().join("Dockerfile")).unwrap();
        let base = build_arg_default(&dockerfile, "RUST_IMAGE").unwrap();
        assert!(base.starts_with("docker.io/library/rust:"), "{base}");
        // The image's version label follows the workspace's version.
        assert_eq!(
            build_arg_default(&dockerfile, "VERSION").as_deref(),
            Some(env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(
            build_arg_default("ARG A=\"b\"\n", "A").as_deref(),
            Some("b")
        );
        assert_eq!(build_arg_default("ARG AB=c\n", "A"), None);
    }
}
