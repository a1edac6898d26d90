//! The closed value sets of the interface (SPEC.md "Enumerations"), parsed at the edge.

use serde::{Deserialize, Serialize};

/// A value that is not one of an enumeration's allowed values. The message lists them,
/// so a client learns what to send instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{value}' is not a valid {name}; allowed: {allowed}")]
pub struct UnknownValue {
    pub name: &'static str,
    pub value: String,
    pub allowed: String,
}

/// Declares a string enumeration with its wire spelling, `as_str`, `parse`, `ALL`, serde and
/// Display, so that the spelling of each value is written exactly once.
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident, $label:literal { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            pub fn parse(value: &str) -> Result<Self, UnknownValue> {
                match value {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownValue {
                        name: $label,
                        value: value.chars().take(100).collect(),
                        allowed: [$($text),+].join(", "),
                    }),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownValue;
            fn from_str(value: &str) -> Result<Self, Self::Err> {
                Self::parse(value)
            }
        }
    };
}

string_enum!(
    /// The conclusion of an investigation (also of feedback and priority rules).
    Outcome, "outcome" {
        BreachedConfirmed => "COMPLETED_BREACHED_CONFIRMED",
        BreachedSuspicious => "COMPLETED_BREACHED_SUSPICIOUS",
        FalseAlert => "COMPLETED_FALSE_ALERT",
        Incomplete => "INCOMPLETE",
        Ignored => "IGNORED",
    }
);

string_enum!(
    /// The outcome a custom strategy may force.
    CustomOutcomeValue, "custom outcome" {
        BreachedConfirmed => "COMPLETED_BREACHED_CONFIRMED",
        BreachedSuspicious => "COMPLETED_BREACHED_SUSPICIOUS",
        FalseAlert => "COMPLETED_FALSE_ALERT",
    }
);

impl From<CustomOutcomeValue> for Outcome {
    fn from(value: CustomOutcomeValue) -> Self {
        match value {
            CustomOutcomeValue::BreachedConfirmed => Outcome::BreachedConfirmed,
            CustomOutcomeValue::BreachedSuspicious => Outcome::BreachedSuspicious,
            CustomOutcomeValue::FalseAlert => Outcome::FalseAlert,
        }
    }
}

string_enum!(
    /// What one finding says about the alert.
    FindingOutcome, "finding outcome" {
        BreachedConfirmed => "COMPLETED_BREACHED_CONFIRMED",
        BreachedSuspicious => "COMPLETED_BREACHED_SUSPICIOUS",
        FalseAlert => "COMPLETED_FALSE_ALERT",
        ActionInfo => "COMPLETED_ACTION_INFO",
        Incomplete => "INCOMPLETE",
    }
);

string_enum!(
    /// How urgently a human should look. Ordered: informational < notable < urgent.
    Priority, "priority" {
        Informational => "informational",
        Notable => "notable",
        Urgent => "urgent",
    }
);

string_enum!(
    /// Where an investigation is in its life.
    InvestigationStatus, "investigation state" {
        NotAsked => "not_asked",
        Loading => "loading",
        Success => "success",
        Error => "error",
    }
);

string_enum!(
    /// Why an investigation was stopped before it concluded.
    Canceled, "stop reason" {
        Manual => "CANCEL_MANUAL",
        Threshold => "CANCEL_THRESHOLD",
    }
);

string_enum!(
    /// Which generation of alert handler produced the alert fields.
    HandlerVersion, "handler version" {
        V1 => "v1",
        V2 => "v2",
    }
);

string_enum!(
    /// What a user may do. Ordered by power: restricted-read-only < member < admin.
    Role, "role" {
        RestrictedReadOnly => "restricted-read-only",
        Member => "member",
        Admin => "admin",
    }
);

impl Role {
    /// True when this role includes everything `required` may do.
    pub fn allows(self, required: Role) -> bool {
        self >= required
    }
}

string_enum!(
    /// Whether an analyst has finished reviewing an investigation.
    FeedbackStatus, "feedback status" {
        InReview => "in_review",
        Reviewed => "reviewed",
    }
);

string_enum!(
    /// The state of one script run.
    ScriptRunStatus, "script run status" {
        Running => "running",
        Success => "success",
        Failed => "failed",
        TimedOut => "timed_out",
        Error => "error",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_round_trips_through_its_wire_spelling() {
        for outcome in Outcome::ALL {
            assert_eq!(Outcome::parse(outcome.as_str()), Ok(*outcome));
            let json = serde_json::to_string(outcome).unwrap();
            assert_eq!(json, format!("\"{}\"", outcome.as_str()));
        }
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Ok(*role));
        }
    }

    #[test]
    fn an_unknown_value_names_the_allowed_ones() {
        let error = Priority::parse("high").unwrap_err();
        assert_eq!(
            error.to_string(),
            "'high' is not a valid priority; allowed: informational, notable, urgent"
        );
    }

    #[test]
    fn roles_are_ordered_by_power() {
        assert!(Role::Admin.allows(Role::Member));
        assert!(Role::Member.allows(Role::RestrictedReadOnly));
        assert!(!Role::RestrictedReadOnly.allows(Role::Member));
        assert!(!Role::Member.allows(Role::Admin));
    }

    #[test]
    fn priorities_are_ordered_by_urgency() {
        assert!(Priority::Urgent > Priority::Notable);
        assert!(Priority::Notable > Priority::Informational);
    }
}
