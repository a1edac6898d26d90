//! The list endpoint's query parameters: parsed and validated into the store's
//! `InvestigationQuery` (DESIGN.md §1: repeatable filters match any value; an unknown enum
//! value is a 400, never an empty page; `limit` defaults to 20 and is clamped to 1000).

use chrono::{NaiveDate, NaiveDateTime, TimeZone, Utc};
use sleuth_domain::{InvestigationStatus, Priority, Timestamp};
use sleuth_store::{InvestigationQuery, SortDirection, SortKey, StopReason, TimeRange};
use utoipa::IntoParams;

use crate::error::{ApiError, ApiResult};
use crate::extract::{QueryPairs, query_integer};

pub(crate) const DEFAULT_LIMIT: u32 = 20;
pub(crate) const MAX_LIMIT: u32 = 1000;
const MAX_SEARCH_CHARACTERS: usize = 500;
const MAX_VALUES_PER_FILTER: usize = 100;

/// The parameters, for the OpenAPI description.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Read by utoipa's derive for the OpenAPI description only.
pub(crate) struct ListParameters {
    /// Alert creation time from (ISO 8601 date or date-time; inclusive).
    alert_create_from: Option<String>,
    /// Alert creation time until (inclusive; a date alone means the end of that day).
    alert_create_until: Option<String>,
    alert_start_from: Option<String>,
    alert_start_until: Option<String>,
    /// Alert tenant: the tenant union's name, or the alert's own tenant label or id. Repeatable.
    alert_tenants: Option<Vec<String>>,
    /// Alert type (handler key). Repeatable.
    alert_types: Option<Vec<String>>,
    /// Alert source label. Repeatable.
    direct_source_labels: Option<Vec<String>>,
    feedback_updated_from: Option<String>,
    feedback_updated_until: Option<String>,
    /// Insight tag name. Repeatable.
    insight_tag_names: Option<Vec<String>>,
    inv_complete_from: Option<String>,
    inv_complete_until: Option<String>,
    /// not_asked, loading, success (default) or error. Repeatable.
    investigation_state: Option<Vec<String>>,
    /// Results per page: default 20, at most 1000 (larger values are clamped).
    limit: Option<i64>,
    /// Results to skip.
    offset: Option<i64>,
    /// urgent, notable, informational or none. Repeatable.
    priority_statuses: Option<Vec<String>>,
    /// Free text: every word must appear in the title, entities, summaries, conclusion or findings.
    search: Option<String>,
    /// asc or desc (default).
    sort_dir: Option<String>,
    /// alert_create (default), alert_start, inv_create, inv_complete, inv_update or priority.
    sort_type: Option<String>,
    /// CANCEL_MANUAL, CANCEL_THRESHOLD or ERROR; without investigation_state, lists stopped
    /// (error) investigations. Repeatable.
    stopped_reasons: Option<Vec<String>>,
    tenant_id: Option<String>,
    tenant_integration_key: Option<String>,
}

/// `limit` (default 20, at least 1, clamped to 1000) and `offset` (default 0), as every
/// list of ours takes them.
pub(crate) fn page_parameters(pairs: &QueryPairs) -> ApiResult<(u32, u64)> {
    page_parameters_or(pairs, DEFAULT_LIMIT)
}

/// `page_parameters` with another default limit: the most a page holds, for a list whose
/// clients have always had it whole (an investigation's notes).
pub(crate) fn page_parameters_or(pairs: &QueryPairs, default_limit: u32) -> ApiResult<(u32, u64)> {
    let limit = match query_integer(pairs, "limit")? {
        None => default_limit.min(MAX_LIMIT),
        Some(limit) if limit < 1 => {
            return Err(ApiError::invalid_field("limit", "must be at least 1"));
        }
        Some(limit) => u32::try_from(limit).unwrap_or(MAX_LIMIT).min(MAX_LIMIT),
    };
    let offset = match query_integer(pairs, "offset")? {
        None => 0,
        Some(offset) if offset < 0 => {
            return Err(ApiError::invalid_field("offset", "must not be negative"));
        }
        Some(offset) => u64::try_from(offset).unwrap_or(0),
    };
    Ok((limit, offset))
}

/// The free-text `search` parameter, at most 500 characters.
pub(crate) fn search_parameter(pairs: &QueryPairs) -> ApiResult<Option<String>> {
    let search = pairs.one("search").map(str::to_string);
    if search
        .as_ref()
        .is_some_and(|text| text.chars().count() > MAX_SEARCH_CHARACTERS)
    {
        return Err(ApiError::invalid_field(
            "search",
            format!("must be at most {MAX_SEARCH_CHARACTERS} characters"),
        ));
    }
    Ok(search)
}

/// A time range from two parameters (`from` and `until`, say); `until` may not precede
/// `from`.
pub(crate) fn time_range(
    pairs: &QueryPairs,
    from_name: &str,
    until_name: &str,
) -> ApiResult<TimeRange> {
    let from = pairs
        .one(from_name)
        .map(|raw| parse_time(raw, false).ok_or_else(|| bad_time(from_name, raw)))
        .transpose()?;
    let until = pairs
        .one(until_name)
        .map(|raw| parse_time(raw, true).ok_or_else(|| bad_time(until_name, raw)))
        .transpose()?;
    if let (Some(from), Some(until)) = (from, until)
        && until < from
    {
        return Err(ApiError::invalid_field(
            until_name,
            format!("must not be before {from_name}"),
        ));
    }
    Ok(TimeRange { from, until })
}

pub(crate) fn parse(pairs: &QueryPairs) -> ApiResult<InvestigationQuery> {
    let (limit, offset) = page_parameters(pairs)?;
    let search = search_parameter(pairs)?;
    Ok(InvestigationQuery {
        states: enum_values(pairs, "investigation_state", |value| {
            InvestigationStatus::parse(value).map_err(|error| error.to_string())
        })?,
        alert_create: range(pairs, "alert_create")?,
        alert_start: range(pairs, "alert_start")?,
        investigation_complete: range(pairs, "inv_complete")?,
        feedback_updated: range(pairs, "feedback_updated")?,
        alert_tenants: strings(pairs, "alert_tenants")?,
        alert_types: strings(pairs, "alert_types")?,
        direct_source_labels: strings(pairs, "direct_source_labels")?,
        insight_tag_names: strings(pairs, "insight_tag_names")?,
        priorities: enum_values(pairs, "priority_statuses", |value| match value {
            "none" => Ok(None),
            other => Priority::parse(other).map(Some).map_err(|_| {
                format!(
                    "'{other}' is not a priority; allowed: urgent, notable, informational, none"
                )
            }),
        })?,
        stopped_reasons: enum_values(pairs, "stopped_reasons", |value| {
            StopReason::parse(value).ok_or_else(|| {
                format!(
                    "'{value}' is not a stop reason; allowed: {}",
                    StopReason::SPELLINGS.join(", ")
                )
            })
        })?,
        search,
        tenant_id: pairs.one("tenant_id").map(str::to_string),
        tenant_integration_key: pairs.one("tenant_integration_key").map(str::to_string),
        // The caller's, set by the handler.
        scope: Default::default(),
        sort: match pairs.one("sort_type") {
            None => SortKey::default(),
            Some(value) => SortKey::parse(value).ok_or_else(|| {
                ApiError::invalid_field(
                    "sort_type",
                    format!(
                        "'{}' is not a sort; allowed: {}",
                        clip(value),
                        SortKey::SPELLINGS.join(", ")
                    ),
                )
            })?,
        },
        direction: match pairs.one("sort_dir") {
            None | Some("desc") => SortDirection::Descending,
            Some("asc") => SortDirection::Ascending,
            Some(other) => {
                return Err(ApiError::invalid_field(
                    "sort_dir",
                    format!("'{}' is not a direction; allowed: asc, desc", clip(other)),
                ));
            }
        },
        limit,
        offset,
    })
}

fn clip(value: &str) -> String {
    value.chars().take(60).collect()
}

/// The non-empty values of a repeatable parameter; a comma inside a value is data.
pub(crate) fn strings(pairs: &QueryPairs, name: &str) -> ApiResult<Vec<String>> {
    let values: Vec<String> = pairs
        .all(name)
        .filter(|value| !value.is_empty())
        .map(str::to_string)
        .collect();
    if values.len() > MAX_VALUES_PER_FILTER {
        return Err(ApiError::invalid_field(
            name,
            format!("at most {MAX_VALUES_PER_FILTER} values"),
        ));
    }
    Ok(values)
}

fn enum_values<T: PartialEq>(
    pairs: &QueryPairs,
    name: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> ApiResult<Vec<T>> {
    let mut parsed = Vec::new();
    for value in strings(pairs, name)? {
        let value = parse(&value).map_err(|message| ApiError::invalid_field(name, message))?;
        if !parsed.contains(&value) {
            parsed.push(value);
        }
    }
    Ok(parsed)
}

fn range(pairs: &QueryPairs, prefix: &str) -> ApiResult<TimeRange> {
    let from_name = format!("{prefix}_from");
    let until_name = format!("{prefix}_until");
    let from = pairs
        .one(&from_name)
        .map(|raw| parse_time(raw, false).ok_or_else(|| bad_time(&from_name, raw)))
        .transpose()?;
    let until = pairs
        .one(&until_name)
        .map(|raw| parse_time(raw, true).ok_or_else(|| bad_time(&until_name, raw)))
        .transpose()?;
    Ok(TimeRange { from, until })
}

fn bad_time(name: &str, raw: &str) -> ApiError {
    ApiError::invalid_field(
        name,
        format!(
            "'{}' is not an ISO 8601 date or date-time (e.g. 2026-03-01 or 2026-03-01T12:00:00Z)",
            clip(raw)
        ),
    )
}

/// ISO 8601: a date-time with offset, a date-time without one (UTC), or a date alone (its
/// first microsecond, or its last when it ends a range, so `until=2026-03-01` includes
/// the whole day).
pub(crate) fn parse_time(raw: &str, end_of_day: bool) -> Option<Timestamp> {
    let raw = raw.trim();
    if let Ok(time) = chrono::DateTime::parse_from_rfc3339(raw) {
        return Some(time.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(raw, format) {
            return Some(Utc.from_utc_datetime(&naive));
        }
    }
    let date = NaiveDate::parse_from_str(raw, "%Y-%m-%d").ok()?;
    let naive = if end_of_day {
        date.and_hms_micro_opt(23, 59, 59, 999_999)?
    } else {
        date.and_hms_opt(0, 0, 0)?
    };
    Some(Utc.from_utc_datetime(&naive))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(query: &str) -> QueryPairs {
        QueryPairs(
            form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect(),
        )
    }

    #[test]
    fn defaults_list_successes_newest_first_twenty_at_a_time() {
        let query = parse(&pairs("")).unwrap();
        assert!(query.states.is_empty());
        assert_eq!(query.limit, 20);
        assert_eq!(query.sort, SortKey::AlertCreate);
        assert_eq!(query.direction, SortDirection::Descending);
    }

    #[test]
    fn repeatable_filters_collect_every_value() {
        let query = parse(&pairs("alert_types=a&alert_types=b&alert_types[]=c&priority_statuses=urgent&priority_statuses=none")).unwrap();
        assert_eq!(query.alert_types, vec!["a", "b", "c"]);
        assert_eq!(query.priorities, vec![Some(Priority::Urgent), None]);
    }

    #[test]
    fn unknown_enum_values_and_bad_numbers_are_refused() {
        for bad in [
            "investigation_state=done",
            "priority_statuses=high",
            "sort_type=random",
            "sort_dir=up",
            "stopped_reasons=CANCEL",
            "limit=ten",
            "limit=0",
            "offset=-1",
            "alert_create_from=yesterday",
        ] {
            let error = parse(&pairs(bad)).unwrap_err();
            assert_eq!(error.code, crate::error::ErrorCode::BadRequest, "{bad}");
            assert_eq!(error.field_errors.len(), 1, "{bad} names its field");
        }
    }

    #[test]
    fn large_limits_are_clamped() {
        assert_eq!(parse(&pairs("limit=5000")).unwrap().limit, 1000);
        assert_eq!(parse(&pairs("limit=99999999999999")).unwrap().limit, 1000);
    }

    #[test]
    fn dates_alone_cover_whole_days() {
        let from = parse_time("2026-03-01", false).unwrap();
        let until = parse_time("2026-03-01", true).unwrap();
        assert_eq!(from.to_rfc3339(), "2026-03-01T00:00:00+00:00");
        assert_eq!((until - from).num_seconds(), 86_399);
        assert_eq!(
            parse_time("2026-03-01T10:00:00+02:00", false)
                .unwrap()
                .to_rfc3339(),
            "2026-03-01T08:00:00+00:00"
        );
        assert!(parse_time("2026-02-30", false).is_none());
    }
}
