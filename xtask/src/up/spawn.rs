//! One process of `up` (a node, a rate limit service) in a directory of its own, started
//! by the test kit's `Launch` (so no `SHORTENER_*` variable of the shell leaks in).

use std::fs::{self, File};
use std::path::Path;

use shortener_testkit::{Guard, Launch};

/// `binary SUBCOMMAND --config shortener.toml` in `home` (made now, with `config` as its
/// `shortener.toml`), its output in `home/shortener.log` for `serve`, else in
/// `home/<subcommand>.log`.
pub(crate) fn spawn_in(
    home: &Path,
    name: &str,
    binary: &Path,
    subcommand: &str,
    config: &str,
) -> anyhow::Result<Guard> {
    fs::create_dir_all(home)?;
    fs::write(home.join("shortener.toml"), config)?;
    let log = if subcommand == "serve" {
        "shortener.log".to_owned()
    } else {
        format!("{subcommand}.log")
    };
    let log = File::create(home.join(log))?;
    Ok(
        Launch::new(binary, subcommand, home, Path::new("shortener.toml"))
            .name(name)
            .env("RUST_LOG", "info")
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?,
    )
}
