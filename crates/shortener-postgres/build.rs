//! `sqlx::migrate!` embeds the files of `migrations/`, but the compiler only notices
//! changes to files it has already seen: this makes a new migration file rebuild the crate.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
