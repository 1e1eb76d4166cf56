//! nginx in front of the nodes, from the repository's `deploy/nginx.conf` with this run's
//! listen port and node lines.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};
use shortener_testkit::Guard;

/// Writes `dir/nginx/nginx.conf` and runs nginx from it in the foreground.
pub fn start(dir: &Path, port: u16, nodes: &[u16]) -> anyhow::Result<Guard> {
    let template = fs::read_to_string(crate::root().join("deploy/nginx.conf"))
        .context("cannot read deploy/nginx.conf")?;
    let prefix = dir.join("nginx");
    fs::create_dir_all(&prefix)?;
    fs::write(prefix.join("nginx.conf"), render(&template, port, nodes)?)?;
    let log = fs::File::create(prefix.join("error.log"))?;
    let guard = Guard::spawn(
        "nginx",
        Command::new("nginx")
            .arg("-p")
            .arg(&prefix)
            .args(["-c", "nginx.conf", "-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log),
    )?;
    Ok(guard)
}

/// The template with its `# up: listen` line on `port` and one `# up: node` line per node.
pub fn render(template: &str, port: u16, nodes: &[u16]) -> anyhow::Result<String> {
    let mut out = String::new();
    let (mut listens, mut upstreams) = (0, 0);
    for line in template.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        if line.ends_with("# up: listen") {
            out.push_str(&format!("{indent}listen 127.0.0.1:{port}; # up: listen\n"));
            listens += 1;
        } else if line.ends_with("# up: node") {
            if upstreams == 0 {
                for node in nodes {
                    out.push_str(&format!("{indent}server 127.0.0.1:{node}; # up: node\n"));
                }
            }
            upstreams += 1;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if listens != 1 || upstreams == 0 {
        bail!("deploy/nginx.conf lost its `# up: listen` or `# up: node` lines");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_template_takes_the_port_and_the_nodes() {
        let template = std::fs::read_to_string(crate::root().join("deploy/nginx.conf")).unwrap();
        let rendered = super::render(&template, 9000, &[9001, 9002]).unwrap();
        assert!(rendered.contains("listen 127.0.0.1:9000;"), "{rendered}");
        assert!(rendered.contains("server 127.0.0.1:9001;"));
        assert!(rendered.contains("server 127.0.0.1:9002;"));
        assert!(!rendered.contains("server 127.0.0.1:8081"));
        assert!(rendered.contains("X-Forwarded-For $proxy_add_x_forwarded_for"));
    }
}
