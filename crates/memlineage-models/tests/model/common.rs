//! Shared model instance for the integration tests.

use std::sync::OnceLock;

use memlineage_models::{Compute, LocalModel};

/// The model (default [`Compute::F32`]), loaded once for the whole test binary; `None` (after
/// printing why) when the file is missing and `CI` is not set. Panics when it is missing and
/// `CI` is set, or fails to load.
pub fn model() -> Option<&'static LocalModel> {
    static MODEL: OnceLock<Option<LocalModel>> = OnceLock::new();
    load(&MODEL, Compute::F32)
}

/// The same model loaded with [`Compute::Quantized`].
pub fn quantized_model() -> Option<&'static LocalModel> {
    static MODEL: OnceLock<Option<LocalModel>> = OnceLock::new();
    load(&MODEL, Compute::Quantized)
}

fn load(
    cell: &'static OnceLock<Option<LocalModel>>,
    compute: Compute,
) -> Option<&'static LocalModel> {
    cell.get_or_init(|| match LocalModel::locate(None) {
        Ok(path) => {
            let t = std::time::Instant::now();
            let m = LocalModel::load_with(&path, compute)
                .unwrap_or_else(|e| panic!("loading {}: {e}", path.display()));
            eprintln!("loaded {} in {:?}", m.model_id(), t.elapsed());
            Some(m)
        }
        Err(e) => {
            if std::env::var_os("CI").is_some() {
                panic!("CI is set but the model is missing: {e}");
            }
            eprintln!("skipping model test: {e}");
            None
        }
    })
    .as_ref()
}

/// The embedding model (all-MiniLM-L6-v2), loaded once; `None` (after printing why) when its
/// files are missing and `CI` is not set. Panics when they are missing and `CI` is set.
pub fn embedder() -> Option<&'static memlineage_models::Embedder> {
    static EMBEDDER: OnceLock<Option<memlineage_models::Embedder>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| match memlineage_models::Embedder::locate(None) {
            Ok(dir) => {
                let t = std::time::Instant::now();
                let e = memlineage_models::Embedder::load(&dir)
                    .unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()));
                eprintln!("loaded {} in {:?}", e.model_id(), t.elapsed());
                Some(e)
            }
            Err(e) => {
                if std::env::var_os("CI").is_some() {
                    panic!("CI is set but the embedding model is missing: {e}");
                }
                eprintln!("skipping embedding test: {e}");
                None
            }
        })
        .as_ref()
}
