//! Kubernetes YAML run by `podman kube play`, taken down on drop with what podman made for
//! it: its pods and their anonymous volumes (`podman kube down`), the named volumes it made
//! of ConfigMaps and Secrets, and a podman secret.

use std::io;
use std::path::PathBuf;

use super::{Podman, bases, container_dir};

/// Makes the stand-ins for the Redis, PostgreSQL and nginx images when podman lacks them.
///
/// # Errors
/// As the failing `podman build`.
pub fn stand_ins(podman: &Podman) -> io::Result<()> {
    bases::make_stand_ins(podman)
}

/// Pods that `podman kube play` started from one YAML stream.
#[derive(Debug)]
pub struct KubePlay {
    podman: Podman,
    file: PathBuf,
    volumes: Vec<String>,
}

impl KubePlay {
    /// Writes `yaml` to `target/container/kube/NAME.yaml` and runs `podman kube play ARGS`
    /// on it, after taking down an earlier run of the same name. `volumes` are the named
    /// volumes podman makes of the ConfigMaps and Secrets the pods mount: removed before
    /// (podman would reuse a stale one) and on drop.
    ///
    /// # Errors
    /// When podman fails; what was made is taken down first.
    pub fn play(
        podman: &Podman,
        name: &str,
        yaml: &str,
        args: &[&str],
        volumes: &[&str],
    ) -> io::Result<Self> {
        let directory = container_dir().join("kube");
        std::fs::create_dir_all(&directory)?;
        let file = directory.join(format!("{name}.yaml"));
        std::fs::write(&file, yaml)?;
        let play = Self {
            podman: podman.clone(),
            file,
            volumes: volumes.iter().map(|&volume| volume.to_owned()).collect(),
        };
        play.down();
        let path = play.file.to_string_lossy().into_owned();
        let mut all = vec!["kube", "play"];
        all.extend_from_slice(args);
        all.push(&path);
        podman.run(&all)?;
        Ok(play)
    }

    /// `podman kube down`, then the named volumes removed; errors are ignored (nothing
    /// may be left to remove).
    pub fn down(&self) {
        let path = self.file.to_string_lossy();
        let _ = self.podman.run(&["kube", "down", &path]);
        for volume in &self.volumes {
            let _ = self.podman.run(&["volume", "rm", "--force", volume]);
        }
    }
}

impl Drop for KubePlay {
    fn drop(&mut self) {
        self.down();
    }
}

/// A podman secret (`podman secret create NAME FILE`), removed on drop.
#[derive(Debug)]
pub struct PodmanSecret {
    podman: Podman,
    pub name: String,
}

impl PodmanSecret {
    /// Creates the secret `name` holding `content`, replacing one of that name.
    ///
    /// # Errors
    /// As [`Podman::run`].
    pub fn create(podman: &Podman, name: &str, content: &str) -> io::Result<Self> {
        let directory = container_dir().join("kube");
        std::fs::create_dir_all(&directory)?;
        let file = directory.join(format!("{name}.secret"));
        std::fs::write(&file, content)?;
        let _ = podman.run(&["secret", "rm", name]);
        let created = podman.run(&["secret", "create", name, &file.to_string_lossy()]);
        // podman keeps its own copy; the file is not left behind.
        let _ = std::fs::remove_file(&file);
        created?;
        Ok(Self {
            podman: podman.clone(),
            name: name.to_owned(),
        })
    }
}

impl Drop for PodmanSecret {
    fn drop(&mut self) {
        let _ = self.podman.run(&["secret", "rm", &self.name]);
    }
}
