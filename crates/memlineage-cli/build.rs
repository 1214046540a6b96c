//! Records the Cargo profile this binary is built with as `MEMLINEAGE_BUILD_PROFILE`, so that
//! `memlineage bench --service` says which build its figures are for: the service's throughput
//! in docs/performance.md is measured with the `dist` profile (fat LTO, the workspace's
//! Cargo.toml), and a `release` build takes ≈ 8 % more CPU per request.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    println!(
        "cargo:rustc-env=MEMLINEAGE_BUILD_PROFILE={}",
        profile_of(Path::new(&out))
    );
}

/// The profile of a build script's `OUT_DIR`, which Cargo lays out as
/// `<target dir>/[<target triple>/]<profile dir>/build/<package>-<hash>/out`; the `dev`
/// profile's directory is `debug`. `unknown` for any other layout.
fn profile_of(out_dir: &Path) -> String {
    let parts: Vec<&str> = out_dir
        .components()
        .filter_map(|c| c.as_os_str().to_str())
        .collect();
    let found = parts
        .len()
        .checked_sub(3)
        .filter(|&i| i > 0 && parts.get(i) == Some(&"build") && parts.last() == Some(&"out"))
        .and_then(|i| parts.get(i - 1));
    match found {
        Some(&"debug") => "dev".to_string(),
        Some(dir) => (*dir).to_string(),
        None => "unknown".to_string(),
    }
}
