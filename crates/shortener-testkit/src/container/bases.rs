//! The base images that the repository's files pull, made on this machine when podman does
//! not have them (no registry answers here): a Debian bookworm root file system by
//! `debootstrap`, kept under `target/container/`, imported under the name the files use.
//!
//! - the Rust toolchain's image (the `Dockerfile`'s `RUST_IMAGE`): with the C compiler, and
//!   this machine's toolchain in the official image's places;
//! - `debian:bookworm-slim`, and from it, by the `containers/*.Containerfile`s of this
//!   crate, stand-ins for the Redis, PostgreSQL and nginx images of the compose file and
//!   the Kubernetes manifests: Debian's packages of each, started as the official images
//!   start them.
//!
//! Each root file system carries this machine's CA roots: its registries may be reached
//! through a TLS proxy.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{COMMAND_TIMEOUT, Podman, container_dir, succeeded};
use crate::process::{output_within, require_binary};

/// The Debian image the stand-ins are built from.
const DEBIAN: &str = "docker.io/library/debian:bookworm-slim";

/// The stand-ins: the image name the deployment files use, and the file that builds it.
pub const STAND_INS: [(&str, &str); 3] = [
    ("docker.io/library/redis:7-bookworm", "redis.Containerfile"),
    (
        "docker.io/library/postgres:15-bookworm",
        "postgres.Containerfile",
    ),
    (
        "docker.io/library/nginx:1.27-bookworm",
        "nginx.Containerfile",
    ),
];

/// Makes the Rust toolchain's image, `name`.
pub fn make_rust_image(podman: &Podman, name: &str) -> io::Result<()> {
    let rootfs = debootstrap("rust-bookworm", "ca-certificates,gcc,libc6-dev")?;
    let sysroot = rustc_sysroot()?;
    let toolchain = rootfs.join("usr/local/rustup/toolchains/local");
    let bin = rootfs.join("usr/local/cargo/bin");
    let _ = std::fs::remove_dir_all(&toolchain);
    let _ = std::fs::remove_dir_all(&bin);
    std::fs::create_dir_all(&toolchain)?;
    std::fs::create_dir_all(&bin)?;
    // The compiler and its libraries; not its documentation or sources.
    for part in ["bin", "lib", "libexec"] {
        if sysroot.join(part).is_dir() {
            let output = output_within(
                Command::new("cp")
                    .arg("-a")
                    .arg(sysroot.join(part))
                    .arg(&toolchain),
                COMMAND_TIMEOUT,
            )?;
            succeeded("cp", &output)?;
        }
    }
    for tool in ["cargo", "rustc", "rustdoc"] {
        std::os::unix::fs::symlink(
            Path::new("/usr/local/rustup/toolchains/local/bin").join(tool),
            bin.join(tool),
        )?;
    }
    import(
        podman,
        &rootfs,
        name,
        &[
            "ENV=RUSTUP_HOME=/usr/local/rustup",
            "ENV=CARGO_HOME=/usr/local/cargo",
            "ENV=PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        ],
    )
}

/// Makes the stand-ins that podman does not have (and the Debian image they start from).
///
/// # Errors
/// The failing step, with its output.
pub fn make_stand_ins(podman: &Podman) -> io::Result<()> {
    let missing: Vec<_> = STAND_INS
        .iter()
        .filter(|(name, _)| !podman.has_image(name))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !podman.has_image(DEBIAN) {
        let rootfs = debootstrap("debian-bookworm", "ca-certificates")?;
        import(
            podman,
            &rootfs,
            DEBIAN,
            &["ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        )?;
    }
    let context = crate::cargo::workspace().join("crates/shortener-testkit/containers");
    for (name, file) in missing {
        let started = Instant::now();
        let output = output_within(
            podman
                .command()
                .current_dir(&context)
                .args([
                    "build",
                    "--pull=never",
                    "--format",
                    "docker",
                    "--file",
                    file,
                ])
                .args(["--tag", name, "."]),
            Duration::from_secs(10 * 60),
        )?;
        succeeded(&format!("podman build --file {file}"), &output)?;
        eprintln!("container: made {name} in {:.0?}", started.elapsed());
    }
    Ok(())
}

/// A Debian bookworm root file system under `target/container/NAME`, with `include`d
/// packages and this machine's CA roots, made once.
fn debootstrap(name: &str, include: &str) -> io::Result<PathBuf> {
    require_binary("debootstrap")?;
    let rootfs = container_dir().join(name);
    let done = container_dir().join(format!("{name}.done"));
    if !done.is_file() {
        // A root file system left half made by an interrupted run is made again.
        let _ = std::fs::remove_dir_all(&rootfs);
        let output = output_within(
            Command::new("debootstrap")
                .args(["--variant=minbase", &format!("--include={include}")])
                .args(["bookworm".as_ref(), rootfs.as_os_str()])
                .arg("http://deb.debian.org/debian"),
            Duration::from_secs(15 * 60),
        )?;
        succeeded("debootstrap", &output)?;
        std::fs::write(&done, "")?;
    }
    std::fs::copy(
        "/etc/ssl/certs/ca-certificates.crt",
        rootfs.join("etc/ssl/certs/ca-certificates.crt"),
    )?;
    Ok(rootfs)
}

/// `podman import` of `rootfs` as `name`, with Dockerfile-like `changes`.
fn import(podman: &Podman, rootfs: &Path, name: &str, changes: &[&str]) -> io::Result<()> {
    // Through a shell's pipe: the bounded runner gives podman no stdin of its own.
    let mut command = Command::new("sh");
    command
        .env("CONTAINERS_CONF", podman.containers_conf())
        .args([
            "-c",
            "set -e; root=$1; shift; tar -C \"$root\" -c . | podman import \"$@\"",
            "sh",
        ])
        .arg(rootfs);
    for change in changes {
        command.args(["--change", change]);
    }
    let output = output_within(command.args(["-", name]), Duration::from_secs(10 * 60))?;
    succeeded(&format!("podman import of {}", rootfs.display()), &output)
}

fn rustc_sysroot() -> io::Result<PathBuf> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = output_within(
        Command::new(rustc).args(["--print", "sysroot"]),
        COMMAND_TIMEOUT,
    )?;
    succeeded("rustc --print sysroot", &output)?;
    Ok(PathBuf::from(
        String::from_utf8_lossy(&output.stdout).trim(),
    ))
}
