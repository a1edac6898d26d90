//! The one typed configuration of Sleuth, loaded once: built-in defaults, then the config
//! file (TOML), then the environment (`SLEUTH_LISTEN`, `SLEUTH_DATABASE_URL`, and
//! `SLEUTH_<SECTION>__<KEY>` for any key), then command-line flags (applied by the CLI).
//! Nothing else in Sleuth reads the environment.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub server: ServerSettings,
    pub database: DatabaseSettings,
    pub workers: WorkerSettings,
    pub connectors: ConnectorSettings,
    pub notifications: NotificationSettings,
    pub guards: GuardSettings,
    pub engine: EngineSettings,
    pub log: LogSettings,
    pub sandbox: crate::script_sandbox::SandboxSettings,
    pub secrets: SecretSettings,
    pub retention: RetentionSettings,
    pub data_sources: DataSourceSettings,
    pub console: ConsoleSettings,
}

/// How investigations ask the data sources (docs/data-sources.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DataSourceSettings {
    /// The time one investigation may spend on all its sources together.
    pub budget_seconds: f64,
    /// How often a process reads the stored sources again, so that a change made through
    /// another process applies.
    pub refresh_seconds: u64,
}

impl Default for DataSourceSettings {
    fn default() -> DataSourceSettings {
        DataSourceSettings {
            budget_seconds: 10.0,
            refresh_seconds: 10,
        }
    }
}

impl DataSourceSettings {
    pub fn budget(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.budget_seconds)
    }

    fn problem(&self) -> Option<String> {
        if !(self.budget_seconds.is_finite()
            && self.budget_seconds > 0.0
            && self.budget_seconds <= 120.0)
        {
            return Some("data_sources.budget_seconds must be more than 0 and at most 120".into());
        }
        if self.refresh_seconds == 0 {
            return Some("data_sources.refresh_seconds must be at least 1".into());
        }
        None
    }
}

/// The analyst console's sign-in (docs/console.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsoleSettings {
    /// Set when browsers reach the console over HTTPS (directly or through a proxy that
    /// ends TLS): the session cookie is then `__Host-sleuth_session` with `Secure`, which
    /// browsers refuse to send over plain HTTP. Off, the cookie is `sleuth_session`
    /// without `Secure`, so that the console works on `http://127.0.0.1:8080/`.
    pub behind_tls: bool,
    /// A session unused for this long ends.
    pub session_idle_minutes: u64,
    /// A session ends this long after sign-in, however busy.
    pub session_absolute_hours: u64,
    /// Failed sign-ins allowed per email address, and per client address, within
    /// `sign_in_window_minutes`; past either, sign-in refuses until the window moves on.
    pub sign_in_failures_per_email: u32,
    pub sign_in_failures_per_address: u32,
    pub sign_in_window_minutes: u64,
}

impl Default for ConsoleSettings {
    fn default() -> ConsoleSettings {
        ConsoleSettings {
            behind_tls: false,
            session_idle_minutes: 60,
            session_absolute_hours: 12,
            sign_in_failures_per_email: 5,
            sign_in_failures_per_address: 20,
            sign_in_window_minutes: 15,
        }
    }
}

impl ConsoleSettings {
    fn problem(&self) -> Option<String> {
        let at_least_one = [
            ("session_idle_minutes", self.session_idle_minutes),
            ("session_absolute_hours", self.session_absolute_hours),
            (
                "sign_in_failures_per_email",
                u64::from(self.sign_in_failures_per_email),
            ),
            (
                "sign_in_failures_per_address",
                u64::from(self.sign_in_failures_per_address),
            ),
            ("sign_in_window_minutes", self.sign_in_window_minutes),
        ];
        at_least_one
            .iter()
            .find(|(_, value)| *value == 0)
            .map(|(name, _)| format!("console.{name} must be at least 1"))
    }
}

/// How long concluded investigations are kept (docs/operations.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionSettings {
    /// Investigations that ended and were last changed more than this many days ago are
    /// deleted with their alerts, and system events older than that too. 0 keeps
    /// everything.
    pub days: u32,
    /// How often the purge runs.
    pub interval_minutes: u64,
}

impl Default for RetentionSettings {
    fn default() -> RetentionSettings {
        RetentionSettings {
            days: 0,
            interval_minutes: 60,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSettings {
    /// Address to listen on.
    pub listen: String,
    /// The address clients use to reach Sleuth (behind a proxy, say), for `inv_url` and
    /// page links. When unset, links are built from each request's Host header.
    pub public_url: Option<String>,
    /// Larger request bodies are refused with 413.
    pub body_limit_bytes: usize,
    /// How long a client is told to wait (Retry-After) while Sleuth is not ready or is
    /// shedding load.
    pub retry_after_seconds: u64,
    /// A longer request URL (path and query) is refused with 414.
    pub max_uri_bytes: usize,
    /// A larger request header section (names, values and separators) is refused with 431.
    pub max_header_bytes: usize,
    /// At most this many connections are open at once; further clients wait in the
    /// operating system's accept queue until one closes.
    pub max_connections: usize,
    /// A client must send a request's headers within this long of connecting (or of
    /// starting them, on a kept-alive connection), or the connection is closed.
    pub header_read_timeout_seconds: u64,
    /// A request's whole body must arrive within this long, or it is answered 408.
    pub body_read_timeout_seconds: u64,
    /// A kept-alive connection with no request for this long is closed; so is one whose
    /// client stops reading an answer for this long.
    pub keep_alive_idle_seconds: u64,
    /// At most this many API requests are worked on at once; the health, readiness and
    /// metrics endpoints have their own bound (`max_health_requests_in_flight`), so they
    /// keep answering under a flood.
    pub max_requests_in_flight: usize,
    pub max_health_requests_in_flight: usize,
    /// Creates and push deliveries have their own bound too, so that a flood of lists
    /// never sheds the alerts coming in.
    pub max_ingest_requests_in_flight: usize,
    /// How long a request waits for a free slot before it is shed with 503 and
    /// Retry-After. 0 sheds at once.
    pub queue_wait_ms: u64,
    /// A list answer stops adding items once it holds this many bytes (always at least
    /// one item); its next page starts after the last item it holds. The audit export
    /// streams in pieces of this size.
    pub max_list_answer_bytes: usize,
    /// At most this many event streams (`GET /app/api/v1/events/stream`) are open at once;
    /// a stream holds no request slot, so this is its own bound.
    pub max_event_streams: usize,
}

impl Default for ServerSettings {
    fn default() -> ServerSettings {
        ServerSettings {
            listen: "127.0.0.1:8080".into(),
            public_url: None,
            body_limit_bytes: 10 * 1024 * 1024,
            retry_after_seconds: 5,
            max_uri_bytes: 16 * 1024,
            max_header_bytes: 32 * 1024,
            max_connections: 1024,
            header_read_timeout_seconds: 10,
            body_read_timeout_seconds: 60,
            keep_alive_idle_seconds: 60,
            max_requests_in_flight: 64,
            max_health_requests_in_flight: 16,
            max_ingest_requests_in_flight: 32,
            queue_wait_ms: 1000,
            max_list_answer_bytes: 4 * 1024 * 1024,
            max_event_streams: 100,
        }
    }
}

impl ServerSettings {
    fn problem(&self) -> Option<String> {
        let at_least_one = [
            ("max_connections", self.max_connections as u64),
            (
                "header_read_timeout_seconds",
                self.header_read_timeout_seconds,
            ),
            ("body_read_timeout_seconds", self.body_read_timeout_seconds),
            ("keep_alive_idle_seconds", self.keep_alive_idle_seconds),
            ("max_requests_in_flight", self.max_requests_in_flight as u64),
            (
                "max_health_requests_in_flight",
                self.max_health_requests_in_flight as u64,
            ),
            (
                "max_ingest_requests_in_flight",
                self.max_ingest_requests_in_flight as u64,
            ),
            ("max_event_streams", self.max_event_streams as u64),
        ];
        if let Some((name, _)) = at_least_one.iter().find(|(_, value)| *value == 0) {
            return Some(format!("server.{name} must be at least 1"));
        }
        if self.max_list_answer_bytes < 64 * 1024 {
            return Some("server.max_list_answer_bytes must be at least 65536".into());
        }
        None
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    /// `sqlite://sleuth.db` (the default; created on first start) or `postgres://...`.
    pub url: String,
    pub max_connections: u32,
}

impl Default for DatabaseSettings {
    fn default() -> DatabaseSettings {
        DatabaseSettings {
            url: "sqlite://sleuth.db".into(),
            max_connections: 8,
        }
    }
}

/// The pull connectors' runtime (`connector_runtime`): every process that runs it polls
/// the connectors that are due, one process per connector at a time (a lease).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConnectorSettings {
    /// Whether this process polls connectors.
    pub enabled: bool,
    /// How often the runtime looks for connectors that are due.
    pub tick_ms: u64,
    /// A poller silent this long (its process died) loses the connector to another.
    pub lease_seconds: u64,
}

impl Default for ConnectorSettings {
    fn default() -> ConnectorSettings {
        ConnectorSettings {
            enabled: true,
            tick_ms: 1000,
            lease_seconds: 120,
        }
    }
}

/// The notification deliverer (`notify_delivery`, docs/notifications.md): every process
/// that runs it sends to the enabled destinations, one process per destination at a time
/// (a lease).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotificationSettings {
    /// Whether this process delivers notifications.
    pub enabled: bool,
    /// How often the deliverer looks for new events and deliveries that are due.
    pub tick_ms: u64,
    /// A deliverer silent this long (its process died) loses the destination to another,
    /// which sends again what the first had not recorded.
    pub lease_seconds: u64,
    /// The wait after a delivery's first failed attempt, doubled after each further one
    /// (with jitter), up to an hour.
    pub retry_first_delay_ms: u64,
    /// No wait between two attempts is longer (a `Retry-After` included).
    pub retry_max_delay_ms: u64,
    /// Attempts in all before a delivery is dead-lettered.
    pub retry_max_attempts: u32,
    /// Events read, and deliveries sent, per destination per round at most. A busy
    /// destination writes once a round, and each write takes the database's write turn
    /// from the pipeline (on SQLite, one writer at a time): large rounds keep those few.
    pub batch: u32,
    /// Delivered deliveries are deleted from the log this many days after delivery
    /// (pending and dead ones stay until handled); 0 keeps them forever.
    pub keep_delivered_days: u32,
}

impl Default for NotificationSettings {
    fn default() -> NotificationSettings {
        NotificationSettings {
            enabled: true,
            tick_ms: 1000,
            lease_seconds: 60,
            retry_first_delay_ms: 5000,
            retry_max_delay_ms: 3_600_000,
            retry_max_attempts: 12,
            batch: 1000,
            keep_delivered_days: 30,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSettings {
    /// Whether this process runs investigations (a `serve` process may leave it to
    /// dedicated `sleuth worker` processes).
    pub enabled: bool,
    /// At most this many investigations run at once in this process. An investigation
    /// spends most of its time waiting: for its reads, and for the group-committed write
    /// of its end, which every investigation finishing meanwhile shares. Many in flight
    /// keep the cores busy and the write batches large.
    pub concurrency: usize,
    /// A claimed job whose worker is silent this long is given to another worker.
    pub lease_seconds: u64,
    /// How often an idle worker looks for jobs even without a wake-up.
    pub poll_interval_ms: u64,
    /// After this many tries (each ended by a crash or lost lease) a job ends in error.
    pub max_attempts: u32,
    /// On shutdown, running investigations get this long to finish before being released.
    pub shutdown_grace_seconds: u64,
}

impl Default for WorkerSettings {
    fn default() -> WorkerSettings {
        WorkerSettings {
            enabled: true,
            concurrency: 128,
            lease_seconds: 300,
            poll_interval_ms: 1000,
            max_attempts: 3,
            shutdown_grace_seconds: 20,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuardSettings {
    /// More than this many alerts from one source and tenant inside the burst window:
    /// the excess is stopped with CANCEL_THRESHOLD. 0 turns the guard off.
    pub burst_threshold: u64,
    pub burst_window_seconds: u64,
    /// Alerts sharing a coalesce key inside this window are IGNORED in favour of the
    /// first. 0 turns coalescing off.
    pub coalesce_window_seconds: u64,
}

impl Default for GuardSettings {
    fn default() -> GuardSettings {
        GuardSettings {
            burst_threshold: 1000,
            burst_window_seconds: 600,
            coalesce_window_seconds: 3600,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSettings {
    /// The operator's context file (TOML); reloaded when it changes.
    pub context_file: Option<PathBuf>,
    /// Earlier alerts sharing entities inside this window are correlated.
    pub correlation_window_hours: u64,
    /// How often the context file, its directory and the API's document are checked for
    /// changes.
    pub context_reload_seconds: u64,
}

impl Default for EngineSettings {
    fn default() -> EngineSettings {
        EngineSettings {
            context_file: None,
            correlation_window_hours: 72,
            context_reload_seconds: 10,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSettings {
    /// `text` for people, `json` for log pipelines.
    pub format: String,
    /// A tracing filter: `info`, `sleuth=debug,info`, ...
    pub level: String,
}

impl Default for LogSettings {
    fn default() -> LogSettings {
        LogSettings {
            format: "text".into(),
            level: "info".into(),
        }
    }
}

/// The key that seals script secrets at rest (docs/secrets.md): inline (`key`, for
/// `SLEUTH_SECRETS__KEY`) or in a file (`key_file`), never both; and, while a key is being
/// rotated, the previous key, which only opens secrets sealed with it.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct SecretSettings {
    /// A file holding the key as base64 (`sleuth secret generate-key`).
    pub key_file: Option<PathBuf>,
    /// The key itself, as base64.
    pub key: Option<Redacted>,
    pub previous_key_file: Option<PathBuf>,
    pub previous_key: Option<Redacted>,
}

/// A setting that is a secret: `Debug` and serialization (`sleuth config`) show `***`.
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct Redacted(String);

impl Redacted {
    pub fn new(value: impl Into<String>) -> Redacted {
        Redacted(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Redacted {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("***")
    }
}

impl Serialize for Redacted {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("***")
    }
}

impl SecretSettings {
    fn problem(&self) -> Option<String> {
        if self.key.is_some() && self.key_file.is_some() {
            return Some("set either secrets.key or secrets.key_file, not both".into());
        }
        if self.previous_key.is_some() && self.previous_key_file.is_some() {
            return Some(
                "set either secrets.previous_key or secrets.previous_key_file, not both".into(),
            );
        }
        None
    }
}

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("config file {path}: {message}")]
    File { path: String, message: String },
    #[error("environment variable {name}: {message}")]
    Environment { name: String, message: String },
    #[error("configuration: {0}")]
    Invalid(String),
}

impl Settings {
    /// Loads defaults, then `file_text` (the config file's content, with its path for
    /// messages), then the `SLEUTH_*` variables among `environment`.
    pub fn load(
        file: Option<(&str, &str)>,
        environment: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Settings, SettingsError> {
        let mut table = toml::Table::new();
        if let Some((path, text)) = file {
            table = text
                .parse::<toml::Table>()
                .map_err(|error| SettingsError::File {
                    path: path.to_string(),
                    message: error.to_string(),
                })?;
        }
        for (name, value) in environment {
            let Some((section, key)) = environment_key(&name) else {
                continue;
            };
            let section_table = table
                .entry(section.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let toml::Value::Table(section_table) = section_table else {
                return Err(SettingsError::Environment {
                    name,
                    message: format!("[{section}] is not a section"),
                });
            };
            section_table.insert(key, environment_value(&value));
        }
        let settings: Settings =
            toml::Value::Table(table)
                .try_into()
                .map_err(|error: toml::de::Error| {
                    SettingsError::Invalid(error.message().to_string())
                })?;
        settings.validate()?;
        Ok(settings)
    }

    pub fn validate(&self) -> Result<(), SettingsError> {
        if self.workers.concurrency == 0 {
            return Err(SettingsError::Invalid(
                "workers.concurrency must be at least 1".into(),
            ));
        }
        if self.server.body_limit_bytes < 1024 {
            return Err(SettingsError::Invalid(
                "server.body_limit_bytes must be at least 1024".into(),
            ));
        }
        if self.server.max_uri_bytes < 1024 || self.server.max_header_bytes < 4096 {
            return Err(SettingsError::Invalid(
                "server.max_uri_bytes must be at least 1024 and server.max_header_bytes at least 4096"
                    .into(),
            ));
        }
        if let Some(problem) = self.server.problem() {
            return Err(SettingsError::Invalid(problem));
        }
        if self.retention.interval_minutes == 0 {
            return Err(SettingsError::Invalid(
                "retention.interval_minutes must be at least 1".into(),
            ));
        }
        if let Some(problem) = self.sandbox.problem() {
            return Err(SettingsError::Invalid(problem));
        }
        if let Some(problem) = self.data_sources.problem() {
            return Err(SettingsError::Invalid(problem));
        }
        if let Some(problem) = self.secrets.problem() {
            return Err(SettingsError::Invalid(problem));
        }
        if let Some(problem) = self.console.problem() {
            return Err(SettingsError::Invalid(problem));
        }
        if !matches!(self.log.format.as_str(), "text" | "json") {
            return Err(SettingsError::Invalid(
                "log.format must be text or json".into(),
            ));
        }
        Ok(())
    }

    /// The effective configuration as TOML, with secrets (passwords in URLs, keys)
    /// redacted.
    pub fn redacted_toml(&self) -> String {
        let mut shown = self.clone();
        shown.database.url = redact_url_password(&shown.database.url);
        toml::to_string_pretty(&shown).unwrap_or_else(|error| format!("# cannot render: {error}"))
    }
}

/// `SLEUTH_LISTEN` and `SLEUTH_DATABASE_URL` are shorthands; `SLEUTH_A__B` sets key `b` of
/// section `a`.
fn environment_key(name: &str) -> Option<(String, String)> {
    match name {
        "SLEUTH_LISTEN" => return Some(("server".into(), "listen".into())),
        "SLEUTH_DATABASE_URL" => return Some(("database".into(), "url".into())),
        _ => {}
    }
    let rest = name.strip_prefix("SLEUTH_")?;
    let (section, key) = rest.split_once("__")?;
    if section.is_empty() || key.is_empty() {
        return None;
    }
    Some((section.to_lowercase(), key.to_lowercase()))
}

/// Environment values are strings; numbers and booleans are read as such so that
/// `SLEUTH_WORKERS__CONCURRENCY=4` sets an integer.
fn environment_value(raw: &str) -> toml::Value {
    if let Ok(integer) = raw.parse::<i64>() {
        return toml::Value::Integer(integer);
    }
    match raw {
        "true" => toml::Value::Boolean(true),
        "false" => toml::Value::Boolean(false),
        _ => toml::Value::String(raw.to_string()),
    }
}

/// `postgres://user:secret@host/db` -> `postgres://user:***@host/db`.
pub fn redact_url_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let after_scheme = &url[scheme_end + 3..];
    let Some(at) = after_scheme.find('@') else {
        return url.to_string();
    };
    let credentials = &after_scheme[..at];
    match credentials.split_once(':') {
        Some((user, _password)) => {
            format!(
                "{}{user}:***{}",
                &url[..scheme_end + 3],
                &after_scheme[at..]
            )
        }
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn a_secrets_key_is_never_shown() {
        let key = "KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=";
        let settings = Settings::load(None, environment(&[("SLEUTH_SECRETS__KEY", key)])).unwrap();
        assert_eq!(
            settings.secrets.key.as_ref().map(Redacted::expose),
            Some(key)
        );
        assert!(!settings.redacted_toml().contains(key));
        assert!(!format!("{settings:?}").contains(key));
        let both = Settings::load(
            None,
            environment(&[
                ("SLEUTH_SECRETS__KEY", key),
                ("SLEUTH_SECRETS__KEY_FILE", "/etc/sleuth/secrets.key"),
            ]),
        );
        assert!(both.is_err());
    }

    #[test]
    fn defaults_serve_sqlite_on_loopback() {
        let settings = Settings::load(None, Vec::new()).unwrap();
        assert_eq!(settings.server.listen, "127.0.0.1:8080");
        assert_eq!(settings.database.url, "sqlite://sleuth.db");
        assert_eq!(settings.workers.concurrency, 128);
    }

    #[test]
    fn the_environment_overrides_the_file() {
        let file = "[server]\nlisten = \"0.0.0.0:9000\"\n[workers]\nconcurrency = 3\n";
        let settings = Settings::load(
            Some(("sleuth.toml", file)),
            environment(&[
                ("SLEUTH_WORKERS__CONCURRENCY", "4"),
                ("SLEUTH_DATABASE_URL", "postgres://u:p@db/sleuth"),
                ("SLEUTH_GUARDS__BURST_THRESHOLD", "7"),
                ("HOME", "/root"),
            ]),
        )
        .unwrap();
        assert_eq!(settings.server.listen, "0.0.0.0:9000");
        assert_eq!(settings.workers.concurrency, 4);
        assert_eq!(settings.guards.burst_threshold, 7);
        assert_eq!(settings.database.url, "postgres://u:p@db/sleuth");
        assert!(
            settings
                .redacted_toml()
                .contains("postgres://u:***@db/sleuth")
        );
        assert!(!settings.redacted_toml().contains(":p@"));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_with_their_name() {
        let error = Settings::load(Some(("s.toml", "[server]\nlisen = \"x\"\n")), Vec::new());
        assert!(error.unwrap_err().to_string().contains("lisen"));
        let error = Settings::load(None, environment(&[("SLEUTH_WORKERS__CONCURRENCY", "0")]));
        assert!(error.unwrap_err().to_string().contains("concurrency"));
        let error = Settings::load(Some(("s.toml", "not toml [")), Vec::new());
        assert!(error.unwrap_err().to_string().contains("s.toml"));
    }
}
