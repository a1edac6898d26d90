//! The operator's context as the process holds it: a freshly loaded one (`Loaded`) and
//! what is known about the one in force (`Status`). Plain data, shared by the loader
//! (`context_source`) and the runtime that keeps it (`runtime`).

use std::path::PathBuf;
use std::time::SystemTime;

use sleuth_domain::Timestamp;
use sleuth_engine::{Context, ContextDocument};

/// A loaded, compiled context and what went into it.
pub struct Loaded {
    pub context: Context,
    /// The document as merged (files, then the API's copy).
    pub document: ContextDocument,
    /// Every file read, feeds included, for change detection and reports.
    pub files: Vec<PathBuf>,
    /// Problems that did not stop loading: feed rows skipped, with their reasons.
    pub warnings: Vec<String>,
    /// How many threat-intel indicators are loaded (entries and feeds).
    pub intel_count: usize,
    /// Each file as it was when read: a later change to any of them reloads.
    pub fingerprint: Fingerprint,
}

/// Files with their modification time and length.
pub type Fingerprint = Vec<(PathBuf, Option<SystemTime>, u64)>;

/// What is known about the context in force, for `GET …/context/effective` and `/readyz`.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub document: ContextDocument,
    pub files: Vec<PathBuf>,
    pub warnings: Vec<String>,
    pub intel_count: usize,
    /// The files of the context in force, as they were when read.
    pub fingerprint: Fingerprint,
    pub loaded_at: Option<Timestamp>,
    /// The last reload that failed, and why (the context before it stays in force).
    pub last_error: Option<String>,
    /// When the API document last changed, as seen by this process.
    pub api_updated_at: Option<Timestamp>,
}
