//! Embeds every workload file of `scenarios/workloads/` (sorted by name), so that a new
//! workload is a new file and `memlineage eval` runs from any directory.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let wl = dir.join("workloads");
    println!("cargo:rerun-if-changed={}", wl.display());
    let mut names: Vec<String> = std::fs::read_dir(&wl)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".toml"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let mut out = String::from(
        "/// Every workload file, `(path relative to scenarios/, text)`, sorted by name.\n",
    );
    out.push_str("pub(crate) const WORKLOAD_FILES: &[(&str, &str)] = &[\n");
    for n in &names {
        let path = wl.join(n);
        println!("cargo:rerun-if-changed={}", path.display());
        let _ = writeln!(
            out,
            "    (\"workloads/{n}\", include_str!({:?})),",
            path.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest =
        Path::new(&std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into())).join("workloads.rs");
    if let Err(e) = std::fs::write(&dest, out) {
        panic!("writing {}: {e}", dest.display());
    }
}
