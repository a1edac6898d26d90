//! Data sources that investigations query: the team's directory (LDAP, Active Directory),
//! HTTP JSON sources declared instead of coded (threat intelligence, registration data,
//! identity providers, the EDR), and enrichment scripts. Before the engine runs, the
//! pipeline asks every source that answers for the alert's entity kinds, concurrently and
//! within a time budget ([`Sources::gather`]); the answers become the engine's `Facts`.
//!
//! Around every source: a per-source timeout, a cache shared by every investigation of the
//! process (one call per source, entity and TTL, however many alerts ask at once), a rate
//! limit that honours the vendor's 429 and `Retry-After`, and a circuit breaker, so that a
//! dead source costs one timeout per cooldown. A source that fails is an answer too
//! (`AnswerResult::Failed`), with a reason that never holds a secret.
#![forbid(unsafe_code)]

mod breaker;
mod cache;
pub mod definition;
mod directory;
mod extract;
mod http;
mod limiter;
mod script;
pub mod secrets;
pub mod shipped;
mod template;

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use sleuth_domain::{AnswerResult, Entity, Facts, ParsedAlert, SourceAnswer, SourceKind};
use sleuth_sandbox::Sandbox;

pub use breaker::BreakerState;
pub use cache::Origin;
pub use definition::{Definition, Limits};
pub use http::retry_after;
pub use secrets::{NoSecrets, Secret, Secrets, StaticSecrets};

use breaker::{Admission, Breaker};
use cache::{Cache, Cached};
use definition::Compiled;
use directory::DirectorySource;
use http::{Clients, HttpSource};
use limiter::{Limiter, Turn};
use script::ScriptSource;

/// Locks a mutex whose value is a few plain fields, which a panic elsewhere cannot leave
/// half-written: a poisoned lock is taken as it is.
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The time one investigation may spend on its sources, all of them together.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(10);

/// A source as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceConfig {
    pub id: i64,
    pub name: String,
    /// Changes whenever the definition changes (the store's update time): answers cached
    /// under another version are not used.
    pub version: i64,
    /// The tenant union whose alerts it answers for; `None`: every union's.
    pub tenant_union_id: Option<i64>,
    pub enabled: bool,
    pub definition: Definition,
    pub limits: Limits,
}

/// What one lookup gave: the answer, and the source's raw words (for `test`).
#[derive(Debug, Clone)]
pub struct Lookup {
    pub result: AnswerResult,
    pub raw: Option<serde_json::Value>,
}

/// Why a lookup failed, in words that hold no secret.
#[derive(Debug, Clone)]
pub struct Failure {
    pub reason: String,
    /// The vendor asked for a pause this long (429).
    pub retry_after: Option<Duration>,
    /// Counts toward the circuit breaker (a 429 does not: the source is alive).
    pub breaker: bool,
    /// An OAuth token was refused: fetch a new one and try once more.
    pub token_refused: bool,
}

impl Failure {
    pub fn new(reason: impl Into<String>) -> Failure {
        Failure {
            reason: reason.into(),
            retry_after: None,
            breaker: true,
            token_refused: false,
        }
    }
}

/// The answers of one gathering, and what each cost (for metrics).
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    pub facts: Facts,
    pub calls: Vec<Call>,
}

/// One lookup as metrics see it.
#[derive(Debug, Clone)]
pub struct Call {
    pub source: Arc<str>,
    pub origin: Origin,
    pub elapsed: Duration,
    pub failed: bool,
}

/// The result of `test`: the raw answer and the facts taken from it.
#[derive(Debug, Clone)]
pub struct Tested {
    pub result: AnswerResult,
    pub raw: Option<serde_json::Value>,
    pub elapsed: Duration,
}

/// One configured source with what it keeps between lookups.
struct Source {
    config: SourceConfig,
    name: Arc<str>,
    source_kind: SourceKind,
    entity_kinds: Vec<sleuth_domain::EntityKind>,
    backend: Backend,
    breaker: Breaker,
    limiter: Limiter,
}

enum Backend {
    Http(HttpSource),
    Directory(DirectorySource),
    Script(ScriptSource),
}

impl Source {
    fn new(config: SourceConfig) -> Result<Source, String> {
        config.limits.check()?;
        let compiled = config.definition.compile()?;
        let source_kind = compiled.source_kind();
        let entity_kinds = compiled.entity_kinds();
        let backend = match compiled {
            Compiled::Http(http) => Backend::Http(HttpSource::new(*http)),
            Compiled::Directory(directory) => Backend::Directory(DirectorySource::new(directory)),
            Compiled::Script(script) => Backend::Script(ScriptSource { definition: script }),
        };
        Ok(Source {
            name: Arc::from(config.name.as_str()),
            breaker: Breaker::new(
                config.limits.breaker_failures,
                Duration::from_secs(config.limits.breaker_cooldown_seconds),
            ),
            limiter: Limiter::new(config.limits.rate_limit_per_minute, Instant::now()),
            source_kind,
            entity_kinds,
            backend,
            config,
        })
    }

    fn answers_for(&self, tenant_union_id: i64) -> bool {
        self.config.enabled
            && self
                .config
                .tenant_union_id
                .is_none_or(|union| union == tenant_union_id)
    }
}

/// Every configured source of the process, and the cache they share.
pub struct Sources {
    sources: RwLock<Arc<Vec<Arc<Source>>>>,
    cache: Cache,
    clients: Clients,
    secrets: Arc<dyn Secrets>,
    sandbox: Option<Arc<Sandbox>>,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Sources")
            .field("sources", &self.names())
            .finish_non_exhaustive()
    }
}

impl Sources {
    /// No sources yet; `replace` sets them. `sandbox` runs enrichment scripts (without one,
    /// a script source answers that it cannot run).
    pub fn new(
        secrets: Arc<dyn Secrets>,
        sandbox: Option<Arc<Sandbox>>,
    ) -> Result<Sources, String> {
        Ok(Sources {
            sources: RwLock::new(Arc::new(Vec::new())),
            cache: Cache::default(),
            clients: Clients::new()?,
            secrets,
            sandbox,
        })
    }

    /// Puts these sources in force. A source whose id and version did not change keeps its
    /// breaker, rate limit and token; one that changed starts afresh. A source that does not
    /// compile (it was stored by an older Sleuth that allowed it) is left out and named in
    /// the returned errors.
    pub fn replace(&self, configs: Vec<SourceConfig>) -> Vec<(String, String)> {
        let current = self.current();
        let mut errors = Vec::new();
        let mut next = Vec::new();
        for config in configs {
            if let Some(kept) = current.iter().find(|source| source.config == config) {
                next.push(kept.clone());
                continue;
            }
            if let Some(old) = current.iter().find(|source| source.config.id == config.id) {
                self.cache.forget(&old.config.name);
            }
            match Source::new(config.clone()) {
                Ok(source) => next.push(Arc::new(source)),
                Err(error) => errors.push((config.name, error)),
            }
        }
        for old in current.iter() {
            if !next.iter().any(|source| source.config.id == old.config.id) {
                self.cache.forget(&old.config.name);
            }
        }
        *self
            .sources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(next);
        errors
    }

    /// The names of the sources in force.
    pub fn names(&self) -> Vec<String> {
        self.current()
            .iter()
            .map(|source| source.config.name.clone())
            .collect()
    }

    /// Each source's breaker, for metrics.
    pub fn breaker_states(&self) -> Vec<(String, BreakerState)> {
        self.current()
            .iter()
            .map(|source| (source.config.name.clone(), source.breaker.state()))
            .collect()
    }

    fn current(&self) -> Arc<Vec<Arc<Source>>> {
        self.sources
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Asks every source in force for `tenant_union_id` about the alert's entities of the
    /// kinds it answers for, all at once, and returns what came back within `budget`.
    pub async fn gather(
        &self,
        alert: &ParsedAlert,
        tenant_union_id: i64,
        budget: Duration,
    ) -> Gathered {
        let sources = self.current();
        if sources.is_empty() {
            return Gathered::default();
        }
        let deadline = Instant::now() + budget;
        let mut asks = Vec::new();
        for source in sources
            .iter()
            .filter(|source| source.answers_for(tenant_union_id))
        {
            let mut entities: Vec<&Entity> = alert
                .entities
                .iter()
                .filter(|entity| source.entity_kinds.contains(&entity.kind))
                .collect();
            entities.dedup();
            for entity in entities
                .into_iter()
                .take(source.config.limits.max_entities_per_alert)
            {
                asks.push(self.ask(source, entity, deadline, budget));
            }
        }
        let mut gathered = Gathered::default();
        for (answer, call) in join_all(asks).await {
            gathered.facts.answers.push(answer);
            gathered.calls.push(call);
        }
        gathered
    }

    /// One source about one entity, from the cache or a call, cut off at `deadline`.
    async fn ask(
        &self,
        source: &Arc<Source>,
        entity: &Entity,
        deadline: Instant,
        budget: Duration,
    ) -> (SourceAnswer, Call) {
        let started = Instant::now();
        let ttl = Duration::from_secs(source.config.limits.cache_ttl_seconds);
        let fetch = || async {
            let result = self.call(source, entity, deadline).await;
            Cached {
                result,
                at: chrono::Utc::now(),
                fetched: Instant::now(),
            }
        };
        let within = deadline.saturating_duration_since(started);
        let asked = tokio::time::timeout(
            within,
            self.cache
                .get_or_fetch(&source.name, source.config.version, entity, ttl, fetch),
        )
        .await;
        let (result, at, origin) = match asked {
            Ok((cached, origin)) => (cached.result, cached.at, origin),
            Err(_) => (
                AnswerResult::Failed {
                    reason: format!(
                        "the investigation's budget of {} s for data sources ran out before \
                         this source answered",
                        budget.as_secs_f64()
                    ),
                },
                chrono::Utc::now(),
                Origin::Called,
            ),
        };
        let failed = matches!(result, AnswerResult::Failed { .. });
        let call = Call {
            source: source.name.clone(),
            origin,
            elapsed: started.elapsed(),
            failed,
        };
        let answer = SourceAnswer {
            source: source.config.name.clone(),
            source_kind: source.source_kind,
            entity: entity.clone(),
            at,
            result,
        };
        (answer, call)
    }

    /// A call past the breaker and the rate limit, under the source's timeout; a 429 that
    /// asks for a pause shorter than the time left is waited out once.
    async fn call(&self, source: &Source, entity: &Entity, deadline: Instant) -> AnswerResult {
        let timeout = source.config.limits.timeout();
        let source_deadline = Instant::now() + timeout;
        // When the investigation's budget ends first, running out of time is not the
        // source's fault: the breaker does not count it.
        let budget_first = deadline < source_deadline;
        let deadline = deadline.min(source_deadline);
        let admission = source.breaker.admit(Instant::now());
        if let Admission::Refused { retry_in } = admission {
            return AnswerResult::Failed {
                reason: format!(
                    "not asked: the source failed {} times in a row; it is tried again in {} s",
                    source.config.limits.breaker_failures,
                    retry_in.as_secs().max(1)
                ),
            };
        }
        let mut retried = false;
        loop {
            match source.limiter.turn(Instant::now()) {
                Turn::Now => {}
                Turn::After(wait) if Instant::now() + wait < deadline => {
                    tokio::time::sleep(wait).await;
                }
                Turn::After(_) => {
                    source.limiter.give_back();
                    return AnswerResult::Failed {
                        reason: format!(
                            "not asked: its rate limit of {} calls a minute is used up",
                            source.config.limits.rate_limit_per_minute
                        ),
                    };
                }
                Turn::Paused(left) => {
                    return AnswerResult::Failed {
                        reason: format!(
                            "not asked: the vendor asked for a pause (429), {} s left",
                            left.as_secs().max(1)
                        ),
                    };
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let outcome =
                match tokio::time::timeout(left, self.backend_lookup(source, entity, left)).await {
                    Ok(outcome) => outcome,
                    Err(_) if budget_first => Err(Failure {
                        breaker: false,
                        ..Failure::new(
                            "the investigation's budget for data sources ran out before this \
                         source answered",
                        )
                    }),
                    Err(_) => Err(Failure::new(format!(
                        "no answer within {} s",
                        timeout.as_secs_f64()
                    ))),
                };
            match outcome {
                Ok(lookup) => {
                    source.breaker.success();
                    return lookup.result;
                }
                Err(failure) => {
                    if let Some(pause) = failure.retry_after {
                        source.limiter.pause_until(Instant::now() + pause);
                        if !retried && Instant::now() + pause < deadline {
                            retried = true;
                            tokio::time::sleep(pause).await;
                            continue;
                        }
                    }
                    if failure.breaker {
                        source.breaker.failure(Instant::now());
                    }
                    return AnswerResult::Failed {
                        reason: failure.reason,
                    };
                }
            }
        }
    }

    async fn backend_lookup(
        &self,
        source: &Source,
        entity: &Entity,
        left: Duration,
    ) -> Result<Lookup, Failure> {
        let secrets = self.secrets.as_ref();
        match &source.backend {
            Backend::Http(http) => http.lookup(&self.clients, entity, secrets).await,
            Backend::Directory(directory) => directory.lookup(entity, secrets, left).await,
            Backend::Script(script) => script.lookup(self.sandbox.as_ref(), entity, secrets).await,
        }
    }

    /// Asks one source (in force or not, e.g. a definition about to be stored) about one
    /// entity, past the cache, breaker and rate limit: what an admin's `test` shows.
    pub async fn test(&self, config: SourceConfig, entity: &Entity) -> Result<Tested, String> {
        let source = Source::new(config)?;
        if !source.entity_kinds.contains(&entity.kind) {
            return Err(format!(
                "this source answers for {}, not {}",
                source
                    .entity_kinds
                    .iter()
                    .map(|kind| kind.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                entity.kind
            ));
        }
        let started = Instant::now();
        let timeout = source.config.limits.timeout();
        let outcome = match tokio::time::timeout(
            timeout,
            self.backend_lookup(&source, entity, timeout),
        )
        .await
        {
            Ok(outcome) => outcome,
            Err(_) => Err(Failure::new(format!(
                "no answer within {} s",
                timeout.as_secs_f64()
            ))),
        };
        let elapsed = started.elapsed();
        Ok(match outcome {
            Ok(lookup) => Tested {
                result: lookup.result,
                raw: lookup.raw,
                elapsed,
            },
            Err(failure) => Tested {
                result: AnswerResult::Failed {
                    reason: failure.reason,
                },
                raw: None,
                elapsed,
            },
        })
    }
}
