//! The values that alerts and intel feeds name, made comparable.
//!
//! Two alerts, or an alert and a feed's indicator, that name the same host, address or
//! time must name it with the same value, or correlation and matching quietly miss. This
//! crate holds that normalisation and nothing else: no vendor's field names (those are
//! `sleuth-parsers`), no I/O. The engine and the intel readers depend on it alone, so a
//! change to one vendor's parser never rebuilds them.
//!
//! - [`entities`]: typed entity values, validated, refanged and normalised, and a bounded
//!   collector that sweeps free text for them;
//! - [`time`]: a time written as text (RFC 3339, RFC 2822, the common zone-less forms) or
//!   as an epoch number of any unit;
//! - [`text`]: placeholders that say nothing ("n/a", "null") and cutting text to a length.

pub mod entities;
pub mod text;
pub mod time;
