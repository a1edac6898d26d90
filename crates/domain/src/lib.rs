//! Sleuth's domain: the enums of the interface and the values that flow between the
//! engine, the store and the server. No I/O lives here, and nothing here knows a wire shape.
#![forbid(unsafe_code)]

pub mod alert;
pub mod enums;
pub mod facts;
pub mod history;
pub mod investigation;
pub mod mitre;
pub mod signals;
pub mod strategy;
pub mod user;

pub use alert::{Entity, EntityKind, ParsedAlert};
pub use enums::{
    Canceled, CustomOutcomeValue, FeedbackStatus, FindingOutcome, HandlerVersion,
    InvestigationStatus, Outcome, Priority, Role, ScriptRunStatus, UnknownValue,
};
pub use facts::{
    AnswerResult, Fact, FactKind, FactType, FactValue, Facts, SourceAnswer, SourceKind,
};
pub use history::{History, Likeness, MemoryItem, MemoryVerdict, PriorVerdict, RelatedAlert};
pub use investigation::{Evidence, Finding, InvestigationResult};
pub use signals::{
    ActionTaken, AlertCategory, AttachmentSignal, CloudSignal, Direction, EmailSignal,
    NetworkSignal, ProcessSignal, SecretSignal, SeverityLevel, SignInSignal, Signals,
    SourceVerdict,
};
pub use strategy::{
    Strategy, StrategyEffects, StrategyInstruction, StrategyOutcome, StrategyPriority,
};
pub use user::{EmailAddress, UserFieldError, parse_person_name};

/// Timestamps everywhere in Sleuth are UTC.
pub type Timestamp = chrono::DateTime<chrono::Utc>;
