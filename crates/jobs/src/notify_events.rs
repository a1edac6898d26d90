//! What destinations are told of a system event (`Told`), and the process's shared
//! memory of it (`ToldEvents`).
//!
//! Turning a conclusion into an event reads its system event and its investigation from
//! the store. Every destination of a process reads the same events past its cursor, so
//! without a shared memory each would be read once per destination: with two
//! destinations, twice. `ToldEvents` makes each event once per process, for whichever
//! destination reaches it first (the system events of a round in one read, of the kinds
//! ever told only, `TOLD_TRIGGERS`; their investigations in one more, and only what a
//! message says of them: `Store::investigations_to_tell`); the others find it made, and
//! read nothing. Making an event from what was read is a pure function (`told_event`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use sleuth_domain::Outcome;
use sleuth_notify::{
    Closed, Concluded, Event, EventKind, EventName, Rule, RunFailed, SystemNotice,
};
use sleuth_store::{InvestigationToTell, Store, StoreResult, SystemEventRecord, SystemEventsAfter};
use uuid::Uuid;

use crate::notify_conclusions::RecentConclusions;
use crate::trigger_catalog as triggers;

/// The namespace of event idempotency ids: an event's id is derived from its system
/// event's, so every attempt, by any process, carries the same one. Never change it.
pub(crate) const EVENT_NAMESPACE: Uuid = Uuid::from_u128(0x5d1e_7a0b_3c4f_4e8e_9a61_2b7c_d0e4_f913);

/// How many entities a message names.
const ENTITIES_SHOWN: usize = 5;

/// How many made events the process keeps: enough for destinations a few rounds apart;
/// one further behind makes its events again, which costs reads, not correctness.
const KEPT: usize = 4096;

/// The events told, by system event id, shared by the process's deliverers. Cheap to
/// clone.
#[derive(Clone, Default)]
pub(crate) struct ToldEvents {
    /// `None`: the system event is told to nobody. Locked while events are made, so a
    /// second destination waits for the first's reads instead of doing them again.
    made: Arc<tokio::sync::Mutex<BTreeMap<i64, Option<Arc<Told>>>>>,
}

/// The system events destinations may be told of (`told_event` answers nothing for any
/// other): the deliverer reads only these, not the narrower triggers that fire with a
/// conclusion, nor their arguments.
const TOLD_TRIGGERS: &[&str] = &[
    triggers::INVESTIGATION_COMPLETED,
    triggers::FEEDBACK_APPLIED,
    triggers::REVIEW_COMPLETED,
    triggers::INVESTIGATION_STOPPED,
    triggers::API_KEY_CREATED,
    triggers::API_KEY_REVOKED,
    triggers::USER_CREATED,
    sleuth_store::RESPONSE_ACTION_RUN_FAILED,
];

impl ToldEvents {
    /// The events told for the system events after `after_id` through `through_id`, by
    /// system event id, in id order. `ids` are the ids the caller saw in that span; those
    /// not yet made are read (in one statement, with the investigations they name in one
    /// more, but for the conclusions found in `recent`) and made, once per process: a
    /// destination that finds them all made reads nothing.
    pub(crate) async fn of(
        &self,
        store: &dyn Store,
        after_id: i64,
        through_id: i64,
        ids: &[i64],
        base_url: &str,
        recent: &RecentConclusions,
    ) -> StoreResult<Vec<(i64, Arc<Told>)>> {
        let mut made = self.made.lock().await;
        let unmade_ids = unmade(ids, after_id, through_id, |id| made.contains_key(&id));
        let records = match read_of(&unmade_ids) {
            Some(read) => store.system_events_after(&read).await?,
            None => Vec::new(),
        };
        let unmade: Vec<&SystemEventRecord> = records
            .iter()
            .filter(|record| !made.contains_key(&record.id))
            .collect();
        // Conclusions this process's workers handed over are not read back.
        let mut investigations: HashMap<i64, InvestigationToTell> = HashMap::new();
        for record in &unmade {
            if record.trigger_name == triggers::INVESTIGATION_COMPLETED
                && let Some(investigation_id) = record.investigation_id
                && let Some(told) = recent.take(investigation_id, record.created_at)
            {
                investigations.insert(investigation_id, told);
            }
        }
        let mut wanted: Vec<i64> = unmade
            .iter()
            .filter_map(|record| investigation_needed(record))
            .filter(|id| !investigations.contains_key(id))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        if !wanted.is_empty() {
            for investigation in store.investigations_to_tell(&wanted).await? {
                investigations.insert(investigation.investigation_id, investigation);
            }
        }
        for record in unmade {
            let told = told_event(record, &investigations, base_url).map(Arc::new);
            made.insert(record.id, told);
        }
        // The ids not read are of kinds never told (or gone): told to nobody.
        for id in unmade_ids {
            made.entry(id).or_insert(None);
        }
        let told = made
            .range(after_id.saturating_add(1)..=through_id)
            .filter_map(|(id, told)| told.clone().map(|told| (*id, told)))
            .collect();
        while made.len() > KEPT {
            made.pop_first();
        }
        Ok(told)
    }
}

/// The ids in `ids` after `after_id` through `through_id` that are not `made` yet, in
/// their order.
fn unmade(ids: &[i64], after_id: i64, through_id: i64, made: impl Fn(i64) -> bool) -> Vec<i64> {
    ids.iter()
        .copied()
        .filter(|id| *id > after_id && *id <= through_id && !made(*id))
        .collect()
}

/// The read that makes the `unmade` ids: the span from the first to the last, of the
/// kinds ever told; none when every id is made.
fn read_of(unmade: &[i64]) -> Option<SystemEventsAfter> {
    let first = *unmade.iter().min()?;
    let last = *unmade.iter().max()?;
    Some(SystemEventsAfter {
        after_id: first - 1,
        through_id: last,
        trigger_names: TOLD_TRIGGERS
            .iter()
            .map(|name| (*name).to_string())
            .collect(),
        // No more rows than ids in the span: none is cut off.
        limit: u32::try_from(last - first + 1).unwrap_or(u32::MAX),
        ..SystemEventsAfter::default()
    })
}

/// A system event as destinations are told of it, with what its rule is matched on.
pub(crate) struct Told {
    pub(crate) event: Event,
    /// For a close: the conclusion it closes, which the rule's conclusion filters judge
    /// (a destination is told of the close of what it was told of).
    closes: Option<Event>,
    /// `event` as JSON text, made once for every destination that stores it.
    json: OnceLock<String>,
}

impl Told {
    fn new(event: Event, closes: Option<Event>) -> Told {
        Told {
            event,
            closes,
            json: OnceLock::new(),
        }
    }

    /// The event as JSON text, as a delivery stores it.
    pub(crate) fn json(&self) -> &str {
        self.json
            .get_or_init(|| serde_json::to_string(&self.event).unwrap_or_default())
    }

    pub(crate) fn wanted_by(&self, rule: &Rule) -> bool {
        if !rule.matches(&self.event) {
            return false;
        }
        let Some(concluded) = &self.closes else {
            return true;
        };
        let conclusion_rule = Rule {
            events: vec![EventName::InvestigationConcluded],
            ..rule.clone()
        };
        conclusion_rule.matches(concluded)
    }
}

/// The idempotency id of the event told for system event `system_event_id`.
pub fn event_id(system_event_id: i64) -> Uuid {
    Uuid::new_v5(
        &EVENT_NAMESPACE,
        format!("system-event:{system_event_id}").as_bytes(),
    )
}

/// The investigation a system event needs read to be told, if any.
fn investigation_needed(record: &SystemEventRecord) -> Option<i64> {
    let name = record.trigger_name.as_str();
    let needs = name == triggers::INVESTIGATION_COMPLETED
        || closing_reason(record).is_some()
        || name == sleuth_store::RESPONSE_ACTION_RUN_FAILED;
    needs.then_some(record.investigation_id).flatten()
}

/// Why an analyst's act closes an investigation, when it does: feedback that marks it a
/// false alert, or a completed review.
fn closing_reason(record: &SystemEventRecord) -> Option<&'static str> {
    match record.trigger_name.as_str() {
        triggers::FEEDBACK_APPLIED
            if record.trigger_args.get("outcome").and_then(Value::as_str)
                == Some(Outcome::FalseAlert.as_str()) =>
        {
            Some("marked a false alert by an analyst")
        }
        triggers::REVIEW_COMPLETED => Some("review completed by an analyst"),
        _ => None,
    }
}

/// What destinations are told of a system event, if anything: a conclusion
/// (`investigation_completed`; the narrower completion triggers fire with it and are not
/// told again), a close (feedback that marks it a false alert, a completed review), a
/// failed response-action run, or a system notice (an investigation stopped, keys and
/// users made or revoked). `investigations` holds what was read of the investigations
/// the events name (`investigation_needed`); one missing is gone or unconcluded.
fn told_event(
    record: &SystemEventRecord,
    investigations: &HashMap<i64, InvestigationToTell>,
    base_url: &str,
) -> Option<Told> {
    let name = record.trigger_name.as_str();
    let investigation = record
        .investigation_id
        .and_then(|investigation_id| investigations.get(&investigation_id));
    let closing = closing_reason(record);
    if name == triggers::INVESTIGATION_COMPLETED || closing.is_some() {
        let concluded = concluded_event(record, investigation?, base_url);
        let Some(reason) = closing else {
            return Some(Told::new(concluded, None));
        };
        let EventKind::InvestigationConcluded(conclusion) = &concluded.kind else {
            return None;
        };
        let closed = Event {
            id: event_id(record.id),
            occurred_at: record.created_at,
            tenant: concluded.tenant.clone(),
            tenant_unions: concluded.tenant_unions.clone(),
            kind: EventKind::InvestigationClosed(Closed {
                investigation_id: conclusion.investigation_id,
                title: conclusion.title.clone(),
                reason: reason.into(),
                link: conclusion.link.clone(),
            }),
        };
        return Some(Told::new(closed, Some(concluded)));
    }
    if name == sleuth_store::RESPONSE_ACTION_RUN_FAILED {
        return run_failed_event(record, investigation, base_url);
    }
    let message = match name {
        triggers::INVESTIGATION_STOPPED => {
            let investigation = record.investigation_id.unwrap_or_default();
            match record.trigger_args.get("error_msg").and_then(Value::as_str) {
                Some(error) => format!("investigation {investigation} stopped: {error}"),
                None => format!("investigation {investigation} stopped"),
            }
        }
        triggers::API_KEY_CREATED | triggers::API_KEY_REVOKED | triggers::USER_CREATED => {
            let args = &record.trigger_args;
            let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or("");
            match name {
                triggers::USER_CREATED => {
                    format!("user {} made with role {}", text("email"), text("role"))
                }
                triggers::API_KEY_CREATED => format!(
                    "API key '{}' ({}) made for {}",
                    text("name"),
                    text("prefix"),
                    text("user_email")
                ),
                _ => format!("API key '{}' ({}) revoked", text("name"), text("prefix")),
            }
        }
        _ => return None,
    };
    Some(Told::new(
        Event {
            id: event_id(record.id),
            occurred_at: record.created_at,
            tenant: None,
            tenant_unions: Vec::new(),
            kind: EventKind::SystemEvent(SystemNotice {
                name: name.to_string(),
                message,
            }),
        },
        None,
    ))
}

/// A failed response-action run as destinations are told of it. It belongs to the tenant
/// of the investigation it ran on, if any (so tenant-union rules apply to it).
fn run_failed_event(
    record: &SystemEventRecord,
    investigation: Option<&InvestigationToTell>,
    base_url: &str,
) -> Option<Told> {
    let args = &record.trigger_args;
    let text = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let script_run_id = args.get("script_run_id").and_then(Value::as_i64)?;
    Some(Told::new(
        Event {
            id: event_id(record.id),
            occurred_at: record.created_at,
            tenant: investigation.and_then(|investigation| investigation.tenant_id.clone()),
            tenant_unions: investigation
                .map(|investigation| vec![investigation.tenant_union.clone()])
                .unwrap_or_default(),
            kind: EventKind::ResponseRunFailed(RunFailed {
                run_id: Uuid::new_v5(
                    &EVENT_NAMESPACE,
                    format!("script-run:{script_run_id}").as_bytes(),
                ),
                action_name: text("script_name"),
                investigation_id: record.investigation_id.map(investigation_uuid),
                status: text("status"),
                detail: text("detail"),
                link: format!(
                    "{}/app/api/v1/response-actions/runs/{script_run_id}",
                    base_url.trim_end_matches('/')
                ),
            }),
        },
        None,
    ))
}

/// The conclusion of a stored investigation as destinations are told of it.
fn concluded_event(
    record: &SystemEventRecord,
    investigation: &InvestigationToTell,
    base_url: &str,
) -> Event {
    let investigation_id = investigation.investigation_id;
    Event {
        id: event_id(record.id),
        occurred_at: record.created_at,
        tenant: investigation.tenant_id.clone(),
        tenant_unions: vec![investigation.tenant_union.clone()],
        kind: EventKind::InvestigationConcluded(Concluded {
            investigation_id: investigation_uuid(investigation_id),
            title: investigation.title.clone(),
            outcome: investigation.outcome,
            priority: investigation.priority,
            source: investigation.source.clone(),
            conclusion: investigation.conclusion.clone(),
            mitre_tactic: investigation.mitre_tactic.clone(),
            insight_tags: investigation.insight_tags.clone(),
            entities: investigation
                .entities
                .iter()
                .take(ENTITIES_SHOWN)
                .map(|entity| format!("{} {}", entity.kind.as_str(), entity.value))
                .collect(),
            link: crate::dto::investigation::investigation_url(base_url, investigation_id),
        }),
    }
}

/// Investigations are numbered; the notification shapes carry a uuid. It is derived from
/// the number, so a close and its conclusion name the same investigation (PagerDuty's
/// dedup key).
fn investigation_uuid(investigation_id: i64) -> Uuid {
    Uuid::new_v5(
        &EVENT_NAMESPACE,
        format!("investigation:{investigation_id}").as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use chrono::Utc;
    use serde_json::json;
    use sleuth_domain::{EntityKind, Priority};

    use super::*;

    fn record(trigger_name: &str, args: Value, investigation_id: Option<i64>) -> SystemEventRecord {
        SystemEventRecord {
            id: 7,
            trigger_name: trigger_name.into(),
            trigger_args: args.as_object().cloned().unwrap_or_default(),
            investigation_id,
            entity: None,
            created_at: Utc::now(),
        }
    }

    fn investigations() -> HashMap<i64, InvestigationToTell> {
        let told = InvestigationToTell {
            investigation_id: 3,
            outcome: Outcome::BreachedConfirmed,
            priority: Priority::Urgent,
            title: "Mimikatz on WKS-0231".into(),
            tenant_id: Some("acme".into()),
            tenant_union: "EMEA".into(),
            source: "CrowdStrike Falcon".into(),
            entities: (0..7)
                .map(|n| sleuth_domain::Entity::new(EntityKind::Host, format!("wks-{n}")))
                .collect(),
            conclusion: "Credentials were dumped.".into(),
            mitre_tactic: Some("Credential Access".into()),
            insight_tags: vec!["credential_dumping".into()],
        };
        HashMap::from([(3, told)])
    }

    /// What `record` is told as: the event's kind name, its tenant unions, and whether it
    /// closes a conclusion.
    fn check(record: SystemEventRecord, expected: Option<(&str, Vec<&str>, bool)>) {
        let told = told_event(&record, &investigations(), "https://sleuth.example");
        let actual = told.as_ref().map(|told| {
            let kind = match &told.event.kind {
                EventKind::InvestigationConcluded(_) => "concluded",
                EventKind::InvestigationClosed(_) => "closed",
                EventKind::ResponseRunFailed(_) => "run_failed",
                EventKind::SystemEvent(_) => "notice",
            };
            (
                kind,
                told.event
                    .tenant_unions
                    .iter()
                    .map(String::as_str)
                    .collect(),
                told.closes.is_some(),
            )
        });
        assert_eq!(
            actual, expected,
            "{} {:?}",
            record.trigger_name, record.investigation_id
        );
        if let Some(told) = told {
            assert_eq!(told.event.id, event_id(record.id));
        }
    }

    #[test]
    fn each_system_event_is_told_as_its_kind_from_what_was_read() {
        let completed = triggers::INVESTIGATION_COMPLETED;
        let run_failed = sleuth_store::RESPONSE_ACTION_RUN_FAILED;
        check(
            record(completed, json!({}), Some(3)),
            Some(("concluded", vec!["EMEA"], false)),
        );
        // Gone (retention) or never concluded: not read, so not told.
        check(record(completed, json!({}), Some(4)), None);
        check(record(completed, json!({}), None), None);
        check(
            record(
                triggers::INVESTIGATION_COMPLETED_CONFIRMED,
                json!({}),
                Some(3),
            ),
            None,
        );
        check(
            record(
                triggers::FEEDBACK_APPLIED,
                json!({"outcome": "COMPLETED_FALSE_ALERT"}),
                Some(3),
            ),
            Some(("closed", vec!["EMEA"], true)),
        );
        check(
            record(
                triggers::FEEDBACK_APPLIED,
                json!({"outcome": "COMPLETED_BREACHED_CONFIRMED"}),
                Some(3),
            ),
            None,
        );
        check(
            record(triggers::REVIEW_COMPLETED, json!({}), Some(3)),
            Some(("closed", vec!["EMEA"], true)),
        );
        check(
            record(
                run_failed,
                json!({"script_run_id": 9, "status": "failed"}),
                Some(3),
            ),
            Some(("run_failed", vec!["EMEA"], false)),
        );
        check(
            record(run_failed, json!({"script_run_id": 9}), None),
            Some(("run_failed", vec![], false)),
        );
        check(record(run_failed, json!({}), Some(3)), None);
        check(
            record(
                triggers::INVESTIGATION_STOPPED,
                json!({"error_msg": "boom"}),
                Some(3),
            ),
            Some(("notice", vec![], false)),
        );
        check(record(triggers::NOTE_ADDED, json!({}), Some(3)), None);
    }

    #[test]
    fn a_conclusion_names_its_first_entities_and_links_the_investigation() {
        let told = told_event(
            &record(triggers::INVESTIGATION_COMPLETED, json!({}), Some(3)),
            &investigations(),
            "https://sleuth.example",
        )
        .expect("told");
        let EventKind::InvestigationConcluded(concluded) = told.event.kind else {
            panic!("{:?}", told.event.kind);
        };
        assert_eq!(concluded.entities.len(), ENTITIES_SHOWN);
        assert_eq!(concluded.entities[0], "host wks-0");
        assert_eq!(concluded.investigation_id, investigation_uuid(3));
        assert!(
            concluded.link.starts_with("https://sleuth.example/"),
            "{}",
            concluded.link
        );
        assert_eq!(told.event.tenant.as_deref(), Some("acme"));
    }

    #[test]
    fn only_the_events_that_name_an_investigation_need_it_read() {
        let needed = |name: &str, args: Value| investigation_needed(&record(name, args, Some(3)));
        assert_eq!(
            needed(triggers::INVESTIGATION_COMPLETED, json!({})),
            Some(3)
        );
        assert_eq!(needed(triggers::REVIEW_COMPLETED, json!({})), Some(3));
        assert_eq!(
            needed(sleuth_store::RESPONSE_ACTION_RUN_FAILED, json!({})),
            Some(3)
        );
        assert_eq!(
            needed(triggers::INVESTIGATION_COMPLETED_CONFIRMED, json!({})),
            None
        );
        assert_eq!(
            needed(
                triggers::FEEDBACK_APPLIED,
                json!({"outcome": "COMPLETED_BREACHED_CONFIRMED"})
            ),
            None
        );
        assert_eq!(needed(triggers::INVESTIGATION_STOPPED, json!({})), None);
    }

    #[test]
    fn only_the_kinds_of_system_event_ever_told_are_read() {
        // Arguments that make every kind tellable: a false-alert feedback, a run id.
        let args = json!({
            "outcome": "COMPLETED_FALSE_ALERT",
            "script_run_id": 9,
            "error_msg": "boom",
            "name": "ci",
            "email": "a@example.com",
        });
        let names = crate::trigger_catalog::catalog()
            .into_iter()
            .map(|entry| entry.fn_name)
            .chain([sleuth_store::RESPONSE_ACTION_RUN_FAILED.to_string()]);
        for name in names {
            let told = told_event(
                &record(&name, args.clone(), Some(3)),
                &investigations(),
                "https://sleuth.example",
            );
            assert_eq!(
                told.is_some(),
                TOLD_TRIGGERS.contains(&name.as_str()),
                "{name}: told, yet never read (or read, yet never told)"
            );
        }
    }

    #[test]
    fn a_span_made_for_one_destination_is_not_read_again_for_another() {
        let made: BTreeSet<i64> = (11..=20).collect();
        let is_made = |id: i64| made.contains(&id);
        // The second destination reaches the span the first made: nothing to read.
        let ids: Vec<i64> = (11..=20).collect();
        assert_eq!(unmade(&ids, 10, 20, is_made), Vec::<i64>::new());
        assert!(read_of(&unmade(&ids, 10, 20, is_made)).is_none());
        // One further ahead reads only past what is made, and only through its horizon.
        let ids: Vec<i64> = (11..=30).collect();
        let read = read_of(&unmade(&ids, 10, 25, is_made)).expect("a read");
        assert_eq!((read.after_id, read.through_id), (20, 25));
        assert!(read.limit >= 5, "{}", read.limit);
        // A gap in the ids: the read spans it, with room for every id it may hold.
        let read = read_of(&unmade(&[21, 22, 29], 20, 29, is_made)).expect("a read");
        assert_eq!((read.after_id, read.through_id, read.limit), (20, 29, 9));
        assert_eq!(
            read.trigger_names,
            TOLD_TRIGGERS
                .iter()
                .map(|name| name.to_string())
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn an_event_id_is_stable_per_system_event() {
        assert_eq!(event_id(42), event_id(42));
        assert_ne!(event_id(42), event_id(43));
        assert_ne!(investigation_uuid(42), event_id(42));
    }
}
