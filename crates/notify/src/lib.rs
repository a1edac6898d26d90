//! What Sleuth tells people and systems, decided and written without I/O.
//!
//! An [`Event`] (an investigation concluded or was closed, a response-action run failed, a
//! system event) is matched against each destination's [`Rule`]; a matching destination
//! gets the event rendered in its own wire shape ([`render`]): a signed generic webhook,
//! Slack Block Kit, a Teams Adaptive Card, a PagerDuty Events v2 event, an RFC 5424 syslog
//! line carrying CEF, or an email, headed by the destination's own [`Template`] or the
//! default headline. [`retry`] says when a failed delivery is tried again
//! and when it is given up (dead-lettered).
//!
//! Everything an alert supplies (titles, entity values, summaries) was written by an
//! attacker: every renderer escapes it for its medium, so a title cannot mention
//! `@channel`, forge a link, end a syslog field or add a mail header.
//!
//! Pure: the caller owns the clock, the randomness, the secrets and the network.
#![forbid(unsafe_code)]

pub mod destination;
pub mod event;
pub mod render;
pub mod retry;
pub mod rule;
pub mod signature;
pub mod template;

pub use event::{Closed, Concluded, Event, EventKind, EventName, RunFailed, SystemNotice};
pub use rule::Rule;
pub use template::Template;
