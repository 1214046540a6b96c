//! Where the model file is looked for.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::{MODEL_FILE_NAME, ModelError};

/// Environment variable naming the model file itself.
pub const ENV_MODEL: &str = "MEMLINEAGE_MODEL";
/// Environment variable naming the directory that holds [`MODEL_FILE_NAME`].
pub const ENV_MODEL_DIR: &str = "MEMLINEAGE_MODEL_DIR";

/// The default model directory: `$MEMLINEAGE_MODEL_DIR`, else `$HOME/.cache/memlineage/models`.
pub fn default_model_dir() -> Option<PathBuf> {
    model_dir_from(&|k| std::env::var_os(k))
}

fn model_dir_from(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(d) = env(ENV_MODEL_DIR).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    env("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".cache/memlineage/models"))
}

/// The lookup order of [`crate::Embedder::locate`], with the environment injected: like the
/// language model's, with a directory in place of a file.
pub(crate) fn locate_embedder_with(
    explicit: Option<&Path>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<PathBuf, ModelError> {
    use crate::embed::{EMBEDDING_FILES, EMBEDDING_MODEL_DIR_NAME, ENV_EMBEDDING_MODEL};
    let complete = |d: &Path| EMBEDDING_FILES.iter().all(|f| d.join(f).is_file());
    let (dir, hint) = if let Some(p) = explicit {
        (
            p.to_path_buf(),
            "The directory was given explicitly.".to_string(),
        )
    } else if let Some(p) = env(ENV_EMBEDDING_MODEL).filter(|p| !p.is_empty()) {
        (
            PathBuf::from(p),
            format!("The directory came from ${ENV_EMBEDDING_MODEL}."),
        )
    } else if let Some(d) = model_dir_from(env) {
        (
            d.join(EMBEDDING_MODEL_DIR_NAME),
            format!(
                "Neither an explicit directory nor ${ENV_EMBEDDING_MODEL} was given, so the \
                 default (${ENV_MODEL_DIR}, else $HOME/.cache/memlineage/models) was used."
            ),
        )
    } else {
        return Err(ModelError::EmbeddingModelNotFound {
            searched: vec![],
            hint: format!("Neither ${ENV_EMBEDDING_MODEL}, ${ENV_MODEL_DIR} nor $HOME is set."),
        });
    };
    if complete(&dir) {
        Ok(dir)
    } else {
        Err(ModelError::EmbeddingModelNotFound {
            searched: vec![dir],
            hint,
        })
    }
}

/// The lookup order of [`crate::LocalModel::locate`], with the environment injected.
pub(crate) fn locate_with(
    explicit: Option<&Path>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<PathBuf, ModelError> {
    let found = |p: &Path| p.is_file();
    if let Some(p) = explicit {
        return if found(p) {
            Ok(p.to_path_buf())
        } else {
            Err(ModelError::NotFound {
                searched: vec![p.to_path_buf()],
                hint: "The path was given explicitly.".into(),
            })
        };
    }
    if let Some(p) = env(ENV_MODEL).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if found(&p) {
            Ok(p)
        } else {
            Err(ModelError::NotFound {
                searched: vec![p],
                hint: format!("The path came from ${ENV_MODEL}."),
            })
        };
    }
    match model_dir_from(env) {
        Some(dir) => {
            let p = dir.join(MODEL_FILE_NAME);
            if found(&p) {
                Ok(p)
            } else {
                Err(ModelError::NotFound {
                    searched: vec![p],
                    hint: format!(
                        "Neither an explicit path nor ${ENV_MODEL} was given, so the default \
                         directory (${ENV_MODEL_DIR}, else $HOME/.cache/memlineage/models) was used."
                    ),
                })
            }
        }
        None => Err(ModelError::NotFound {
            searched: vec![],
            hint: format!("Neither ${ENV_MODEL}, ${ENV_MODEL_DIR} nor $HOME is set."),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let m: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |k| m.get(k).cloned()
    }

    fn tmp_model() -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "memlineage-models-locate-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join(MODEL_FILE_NAME);
        std::fs::write(&file, b"GGUF").expect("temp file");
        (dir, file)
    }

    #[test]
    fn order_is_explicit_then_env_file_then_dir() {
        let (dir, file) = tmp_model();
        let d = dir.to_str().expect("utf8");
        let f = file.to_str().expect("utf8");
        // The directory default.
        let got = locate_with(None, &env(&[(ENV_MODEL_DIR, d)])).expect("dir");
        assert_eq!(got, file);
        // $HOME fallback.
        let home = std::env::temp_dir().join("memlineage-models-no-such-home");
        let e = locate_with(None, &env(&[("HOME", home.to_str().expect("utf8"))]))
            .expect_err("missing");
        assert!(e.to_string().contains("scripts/fetch-model.sh"), "{e}");
        assert!(e.to_string().contains(".cache/memlineage/models"), "{e}");
        // The env file wins over the dir, and a missing env file is an error, not a fallback.
        let got = locate_with(
            None,
            &env(&[(ENV_MODEL, f), (ENV_MODEL_DIR, "/nonexistent")]),
        )
        .expect("env file");
        assert_eq!(got, file);
        let e = locate_with(
            None,
            &env(&[(ENV_MODEL, "/nonexistent/x.gguf"), (ENV_MODEL_DIR, d)]),
        )
        .expect_err("missing env file");
        assert!(e.to_string().contains("MEMLINEAGE_MODEL"), "{e}");
        // The explicit path wins over everything.
        let e = locate_with(
            Some(Path::new("/nonexistent/y.gguf")),
            &env(&[(ENV_MODEL, f)]),
        )
        .expect_err("missing explicit");
        assert!(e.to_string().contains("/nonexistent/y.gguf"), "{e}");
        assert_eq!(locate_with(Some(&file), &env(&[])).expect("explicit"), file);
        // Nothing at all.
        let e = locate_with(None, &env(&[])).expect_err("nothing");
        assert!(e.to_string().contains("fetch-model.sh"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn embedder_order_is_explicit_then_env_dir_then_model_dir() {
        use crate::embed::{EMBEDDING_FILES, EMBEDDING_MODEL_DIR_NAME, ENV_EMBEDDING_MODEL};
        let (root, _) = tmp_model();
        let dir = root.join(EMBEDDING_MODEL_DIR_NAME);
        std::fs::create_dir_all(&dir).expect("dir");
        let r = root.to_str().expect("utf8");
        let d = dir.to_str().expect("utf8");
        // Incomplete: an error naming the directory and the fetch script.
        let e = locate_embedder_with(None, &env(&[(ENV_MODEL_DIR, r)])).expect_err("incomplete");
        assert!(e.to_string().contains("fetch-embedding-model.sh"), "{e}");
        assert!(e.to_string().contains(d), "{e}");
        for f in EMBEDDING_FILES {
            std::fs::write(dir.join(f), b"x").expect("file");
        }
        assert_eq!(
            locate_embedder_with(None, &env(&[(ENV_MODEL_DIR, r)])).expect("default"),
            dir
        );
        // The env directory wins, and a wrong one is an error, not a fallback.
        let e = locate_embedder_with(
            None,
            &env(&[(ENV_EMBEDDING_MODEL, "/nonexistent"), (ENV_MODEL_DIR, r)]),
        )
        .expect_err("env");
        assert!(e.to_string().contains("MEMLINEAGE_EMBEDDING_MODEL"), "{e}");
        assert_eq!(
            locate_embedder_with(None, &env(&[(ENV_EMBEDDING_MODEL, d)])).expect("env"),
            dir
        );
        // The explicit directory wins over everything.
        let e = locate_embedder_with(
            Some(Path::new("/nonexistent")),
            &env(&[(ENV_EMBEDDING_MODEL, d)]),
        )
        .expect_err("explicit");
        assert!(e.to_string().contains("explicitly"), "{e}");
        let e = locate_embedder_with(None, &env(&[])).expect_err("nothing");
        assert!(e.to_string().contains("fetch-embedding-model.sh"), "{e}");
        std::fs::remove_dir_all(&root).ok();
    }
}
