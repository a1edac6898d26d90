//! Where the operator's context comes from (docs/context.md): one TOML file, or every
//! `*.toml` of a directory merged in name order, plus the intel feeds they name (paths
//! relative to the file that names them), merged with the document kept in the database
//! through the API, then compiled. A watcher reloads it when any of those change; a
//! context that fails to load is logged and the previous one stays in force.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sleuth_domain::Timestamp;
use sleuth_engine::{Context, ContextDocument, Intel};
use sleuth_store::Store;

use crate::context_status::{Fingerprint, Loaded};
use crate::runtime::Runtime;

/// A compiled context reloads at least this often even when nothing changed, so that
/// feed indicators past their `valid_until` stop matching.
const MAX_CONTEXT_AGE: Duration = Duration::from_secs(6 * 3600);

/// The `*.toml` files a context path stands for: the file itself, or a directory's
/// files in name order.
pub fn documents_at(path: &Path) -> Result<Vec<PathBuf>, String> {
    if path.is_dir() {
        let entries = std::fs::read_dir(path).map_err(|error| {
            format!(
                "cannot list the context directory {}: {error}",
                path.display()
            )
        })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|file| {
                file.is_file()
                    && file
                        .extension()
                        .is_some_and(|extension| extension == "toml")
            })
            .collect();
        files.sort();
        Ok(files)
    } else if path.is_file() {
        Ok(vec![path.to_path_buf()])
    } else {
        Err(format!(
            "the context path {} does not exist",
            path.display()
        ))
    }
}

/// Loads and compiles the context at `path` (if any), merged with the API's document.
/// `now` drops feed indicators already past their `valid_until`.
pub fn load(
    path: Option<&Path>,
    api_document: Option<ContextDocument>,
    now: Timestamp,
) -> Result<Loaded, String> {
    let mut merged = ContextDocument::default();
    let mut files = Vec::new();
    let mut feeds = Vec::new();
    // Each file's fingerprint is taken before it is read, so an edit during the load is
    // seen as a change afterwards.
    let mut fingerprints = Fingerprint::new();
    if let Some(path) = path {
        for file in documents_at(path)? {
            fingerprints.extend(fingerprint(std::slice::from_ref(&file)));
            let text = std::fs::read_to_string(&file)
                .map_err(|error| format!("cannot read {}: {error}", file.display()))?;
            let document = ContextDocument::from_toml(&text)
                .map_err(|error| format!("{}: {error}", file.display()))?;
            let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
            feeds.extend(
                document
                    .intel_feeds
                    .iter()
                    .map(|feed| (base.join(&feed.path), feed.clone())),
            );
            merged.merge(document);
            files.push(file);
        }
    }
    if let Some(api_document) = api_document {
        // Feeds named through the API are read from the server's own disk, as written.
        feeds.extend(
            api_document
                .intel_feeds
                .iter()
                .map(|feed| (PathBuf::from(&feed.path), feed.clone())),
        );
        merged.merge(api_document);
    }
    let mut context = Context::build(merged.clone()).map_err(|error| error.to_string())?;
    let mut warnings = Vec::new();
    for (feed_path, feed) in feeds {
        fingerprints.extend(fingerprint(std::slice::from_ref(&feed_path)));
        let text = std::fs::read_to_string(&feed_path).map_err(|error| {
            format!(
                "cannot read the intel feed {}: {error}",
                feed_path.display()
            )
        })?;
        let format = sleuth_intel::FeedFormat::parse(&feed.format)
            .map_err(|error| format!("intel feed {}: {error}", feed_path.display()))?;
        let report = sleuth_intel::read_feed_at(format, &text, feed.source.as_deref(), Some(now))
            .map_err(|error| format!("intel feed {}: {error}", feed_path.display()))?;
        if report.skipped > 0 {
            warnings.push(format!(
                "intel feed {}: {} entries skipped ({})",
                feed_path.display(),
                report.skipped,
                report.problems.join("; ")
            ));
        }
        for indicator in report.indicators {
            context.add_intel(Intel::from(indicator));
        }
        files.push(feed_path);
    }
    let intel_count = context.intel_count();
    fingerprints.sort();
    Ok(Loaded {
        context,
        document: merged,
        files,
        warnings,
        intel_count,
        fingerprint: fingerprints,
    })
}

/// Reads the API's document from the store: `None` when none was ever set; an error when
/// the store fails or the stored text no longer parses (it was validated on the way in).
pub async fn api_document(
    store: &Arc<dyn Store>,
) -> Result<Option<(ContextDocument, Timestamp)>, String> {
    let stored = store
        .get_context_document()
        .await
        .map_err(|error| format!("cannot read the context document from the database: {error}"))?;
    stored
        .map(|stored| {
            ContextDocument::from_toml(&stored.document)
                .map(|document| (document, stored.updated_at))
                .map_err(|error| format!("the context document in the database: {error}"))
        })
        .transpose()
}

/// Loads the context (file and API document) and puts it in force. Reading files is
/// blocking, so it runs off the async workers.
pub async fn reload(runtime: &Runtime, store: Option<&Arc<dyn Store>>) -> Result<(), String> {
    let api = match store {
        Some(store) => api_document(store).await?,
        None => None,
    };
    let api_updated_at = api.as_ref().map(|(_, at)| *at);
    let path = runtime.settings().engine.context_file.clone();
    let now = chrono::Utc::now();
    let loaded = tokio::task::spawn_blocking(move || {
        load(path.as_deref(), api.map(|(document, _)| document), now)
    })
    .await
    .map_err(|error| format!("the context loader stopped: {error}"))??;
    for warning in &loaded.warnings {
        tracing::warn!("{warning}");
    }
    tracing::info!(
        files = loaded.files.len(),
        intel = loaded.intel_count,
        "operator context loaded"
    );
    runtime.put_context(loaded, api_updated_at, now);
    Ok(())
}

/// When each file was last changed and how long it is: a change of either reloads.
pub fn fingerprint(files: &[PathBuf]) -> Fingerprint {
    files
        .iter()
        .map(|file| {
            let metadata = std::fs::metadata(file).ok();
            (
                file.clone(),
                metadata
                    .as_ref()
                    .and_then(|metadata| metadata.modified().ok()),
                metadata.map_or(0, |metadata| metadata.len()),
            )
        })
        .collect()
}

/// Reloads the context whenever a file it came from, the set of files in its directory,
/// or the API's document changes; also every few hours so expired indicators drop out.
/// Runs until `stop` turns true.
pub async fn watch(
    runtime: Runtime,
    store: Option<Arc<dyn Store>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let interval = Duration::from_secs(runtime.settings().engine.context_reload_seconds.max(1));
    // The files as they were when a reload last failed: not retried until they change.
    let mut failed: Option<Fingerprint> = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
        let status = runtime.context_status();
        let now_fingerprint = current_fingerprint(&runtime);
        let files_changed =
            now_fingerprint != status.fingerprint && failed.as_ref() != Some(&now_fingerprint);
        let api_changed = match &store {
            Some(store) => match store.get_context_document().await {
                Ok(stored) => stored.map(|stored| stored.updated_at) != status.api_updated_at,
                Err(error) => {
                    tracing::warn!("cannot check the context document for changes: {error}");
                    false
                }
            },
            None => false,
        };
        let stale = status.loaded_at.is_some_and(|loaded_at| {
            chrono::Utc::now() - loaded_at
                > chrono::Duration::from_std(MAX_CONTEXT_AGE).unwrap_or_default()
        });
        if !files_changed && !api_changed && !stale {
            continue;
        }
        match reload(&runtime, store.as_ref()).await {
            Ok(()) => failed = None,
            Err(error) => {
                tracing::error!(
                    "the context did not reload, the previous one stays in force: {error}"
                );
                runtime.context_failed(error);
                failed = Some(now_fingerprint);
            }
        }
    }
}

/// The files of the context in force plus the files the context path names now (a new
/// file dropped into the directory counts as a change).
fn current_fingerprint(runtime: &Runtime) -> Fingerprint {
    let mut files = runtime.context_status().files;
    if let Some(path) = &runtime.settings().engine.context_file
        && let Ok(now_present) = documents_at(path)
    {
        for file in now_present {
            if !files.contains(&file) {
                files.push(file);
            }
        }
    }
    files.sort();
    fingerprint(&files)
}
