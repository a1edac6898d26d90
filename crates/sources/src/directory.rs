//! The directory source: who a user is and what a host is, from LDAP or Active Directory.
//! Active Directory speaks `sAMAccountName`, `userPrincipalName`, `userAccountControl`,
//! `memberOf`, `pwdLastSet` (Windows file times); plain LDAP speaks `uid`,
//! `inetOrgPerson`, group entries that list their members, `shadowExpire` and
//! `pwdChangedTime` (generalized times). Both become the same facts.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{NaiveDateTime, TimeZone, Utc};
use ldap3::{Ldap, LdapConnAsync, LdapConnSettings, Scope, SearchEntry, ldap_escape};
use sleuth_domain::{AnswerResult, Entity, EntityKind, Fact, FactKind, FactValue, Timestamp};

use crate::definition::{DirectoryDefinition, DirectoryFlavour};
use crate::secrets::{Scrub, Secrets};
use crate::template::local_account;
use crate::{Failure, Lookup};

/// `userAccountControl` bits (Microsoft's documented values).
const ACCOUNT_DISABLED: i64 = 0x2;
const SERVER_TRUST_ACCOUNT: i64 = 0x2000;

/// The groups whose members administer the directory, always treated as privileged.
const ACTIVE_DIRECTORY_ADMIN_GROUPS: &[&str] = &[
    "Domain Admins",
    "Enterprise Admins",
    "Schema Admins",
    "Administrators",
    "Account Operators",
    "Backup Operators",
    "Server Operators",
    "Print Operators",
    "Group Policy Creator Owners",
    "DnsAdmins",
    "Key Admins",
    "Enterprise Key Admins",
];
const OPENLDAP_ADMIN_GROUPS: &[&str] = &["admins", "wheel", "sudo", "ldap-admins"];

#[derive(Debug)]
pub(crate) struct DirectorySource {
    pub definition: DirectoryDefinition,
    /// One bound connection, shared by concurrent lookups (LDAP multiplexes them) and made
    /// again when it breaks.
    connection: tokio::sync::Mutex<Option<Ldap>>,
}

impl DirectorySource {
    pub(crate) fn new(definition: DirectoryDefinition) -> DirectorySource {
        DirectorySource {
            definition,
            connection: tokio::sync::Mutex::new(None),
        }
    }

    pub(crate) async fn lookup(
        &self,
        entity: &Entity,
        secrets: &dyn Secrets,
        timeout: Duration,
    ) -> Result<Lookup, Failure> {
        let mut scrub = Scrub::default();
        let mut ldap = self.connect(secrets, timeout, &mut scrub).await?;
        let outcome = match entity.kind {
            EntityKind::User | EntityKind::Email => self.user(&mut ldap, entity).await,
            EntityKind::Host => self.host(&mut ldap, entity).await,
            other => {
                return Err(Failure::new(format!(
                    "a directory answers for users, e-mail addresses and hosts, not {other}"
                )));
            }
        };
        if outcome.is_err() {
            // The connection may be what failed: the next lookup makes a new one.
            *self.connection.lock().await = None;
        }
        outcome.map_err(|error| Failure::new(scrub.clean(&error)))
    }

    async fn connect(
        &self,
        secrets: &dyn Secrets,
        timeout: Duration,
        scrub: &mut Scrub,
    ) -> Result<Ldap, Failure> {
        let mut kept = self.connection.lock().await;
        if let Some(ldap) = kept.as_mut()
            && !ldap.is_closed()
        {
            return Ok(ldap.clone());
        }
        let definition = &self.definition;
        let settings = LdapConnSettings::new()
            .set_conn_timeout(timeout)
            .set_starttls(definition.starttls);
        let (connection, mut ldap) = LdapConnAsync::with_settings(settings, &definition.url)
            .await
            .map_err(|error| {
                Failure::new(format!("the directory could not be reached: {error}"))
            })?;
        tokio::spawn(async move {
            if let Err(error) = connection.drive().await {
                tracing::debug!("a directory connection ended: {error}");
            }
        });
        if let (Some(bind_dn), Some(secret_name)) =
            (&definition.bind_dn, &definition.bind_password_secret)
        {
            let password = secrets.secret(secret_name).await.map_err(Failure::new)?;
            scrub.add(&password);
            let bound = ldap
                .simple_bind(bind_dn, password.expose())
                .await
                .and_then(ldap3::LdapResult::success);
            if let Err(error) = bound {
                return Err(Failure::new(scrub.clean(&format!(
                    "the directory refused Sleuth's bind as '{bind_dn}': {error}"
                ))));
            }
        }
        *kept = Some(ldap.clone());
        Ok(ldap)
    }

    async fn user(&self, ldap: &mut Ldap, entity: &Entity) -> Result<Lookup, String> {
        let value = entity.value.as_str();
        let account = ldap_escape(local_account(value)).into_owned();
        let full = ldap_escape(value).into_owned();
        let (filter, attributes): (String, &[&str]) = match self.definition.flavour {
            DirectoryFlavour::ActiveDirectory => (
                format!(
                    "(&(objectClass=user)(!(objectClass=computer))(|(sAMAccountName={account})\
                     (userPrincipalName={full})(mail={full})))"
                ),
                &[
                    "sAMAccountName",
                    "userPrincipalName",
                    "displayName",
                    "title",
                    "department",
                    "manager",
                    "memberOf",
                    "userAccountControl",
                    "pwdLastSet",
                    "lastLogonTimestamp",
                ],
            ),
            DirectoryFlavour::Openldap => (
                format!(
                    "(&(|(objectClass=inetOrgPerson)(objectClass=posixAccount))\
                     (|(uid={account})(mail={full})))"
                ),
                &[
                    "uid",
                    "cn",
                    "displayName",
                    "title",
                    "departmentNumber",
                    "ou",
                    "manager",
                    "memberOf",
                    "shadowExpire",
                    "pwdChangedTime",
                    "pwdAccountLockedTime",
                    "authTimestamp",
                ],
            ),
        };
        let Some(entry) = self.first(ldap, &filter, attributes).await? else {
            return Ok(Lookup {
                result: AnswerResult::NotFound,
                raw: None,
            });
        };
        let attributes = Attributes::of(&entry);
        let mut groups: Vec<String> = attributes
            .all("memberOf")
            .iter()
            .map(|dn| common_name(dn))
            .collect();
        if self.definition.flavour == DirectoryFlavour::Openldap && groups.is_empty() {
            groups = self
                .openldap_groups(ldap, &entry.dn, attributes.first("uid"))
                .await?;
        }
        let mut facts = Vec::new();
        let mut text = |kind: FactKind, value: Option<&str>| {
            if let Some(value) = value.filter(|value| !value.is_empty()) {
                facts.push(Fact {
                    kind,
                    value: FactValue::Text(value.to_string()),
                });
            }
        };
        text(
            FactKind::DisplayName,
            attributes.first("displayName").or(attributes.first("cn")),
        );
        text(FactKind::Title, attributes.first("title"));
        text(
            FactKind::Department,
            attributes
                .first("department")
                .or(attributes.first("departmentNumber"))
                .or(attributes.first("ou")),
        );
        let manager = attributes.first("manager").map(common_name);
        text(FactKind::Manager, manager.as_deref());
        let privileged_groups = self.privileged(&groups);
        facts.push(Fact {
            kind: FactKind::Privileged,
            value: FactValue::Flag(!privileged_groups.is_empty()),
        });
        if !privileged_groups.is_empty() {
            facts.push(Fact {
                kind: FactKind::PrivilegedGroups,
                value: FactValue::List(privileged_groups),
            });
        }
        if !groups.is_empty() {
            facts.push(Fact {
                kind: FactKind::Groups,
                value: FactValue::List(groups),
            });
        }
        let (enabled, password_set, last_logon) = match self.definition.flavour {
            DirectoryFlavour::ActiveDirectory => (
                attributes
                    .first("userAccountControl")
                    .and_then(|flags| flags.parse::<i64>().ok())
                    .map(|flags| flags & ACCOUNT_DISABLED == 0),
                attributes.first("pwdLastSet").and_then(file_time),
                attributes.first("lastLogonTimestamp").and_then(file_time),
            ),
            DirectoryFlavour::Openldap => (
                Some(openldap_enabled(&attributes, Utc::now())),
                attributes
                    .first("pwdChangedTime")
                    .and_then(generalized_time),
                attributes.first("authTimestamp").and_then(generalized_time),
            ),
        };
        if let Some(enabled) = enabled {
            facts.push(Fact {
                kind: FactKind::AccountEnabled,
                value: FactValue::Flag(enabled),
            });
        }
        for (kind, date) in [
            (FactKind::PasswordLastSet, password_set),
            (FactKind::LastLogon, last_logon),
        ] {
            if let Some(date) = date {
                facts.push(Fact {
                    kind,
                    value: FactValue::Date(date),
                });
            }
        }
        Ok(Lookup {
            result: AnswerResult::Found(facts),
            raw: Some(attributes.to_json(&entry.dn)),
        })
    }

    async fn host(&self, ldap: &mut Ldap, entity: &Entity) -> Result<Lookup, String> {
        let value = entity.value.as_str();
        let short = ldap_escape(value.split('.').next().unwrap_or(value)).into_owned();
        let full = ldap_escape(value).into_owned();
        let (filter, attributes): (String, &[&str]) = match self.definition.flavour {
            DirectoryFlavour::ActiveDirectory => (
                format!(
                    "(&(objectClass=computer)(|(cn={short})(dNSHostName={full})\
                     (sAMAccountName={short}$)))"
                ),
                &[
                    "cn",
                    "dNSHostName",
                    "operatingSystem",
                    "managedBy",
                    "userAccountControl",
                ],
            ),
            DirectoryFlavour::Openldap => (
                format!("(&(objectClass=device)(cn={short}))"),
                &["cn", "ou", "owner", "description"],
            ),
        };
        let Some(entry) = self.first(ldap, &filter, attributes).await? else {
            return Ok(Lookup {
                result: AnswerResult::NotFound,
                raw: None,
            });
        };
        let attributes = Attributes::of(&entry);
        let mut facts = Vec::new();
        let operating_system = attributes.first("operatingSystem");
        if let Some(system) = operating_system {
            facts.push(Fact {
                kind: FactKind::OperatingSystem,
                value: FactValue::Text(system.to_string()),
            });
        }
        let flags = attributes
            .first("userAccountControl")
            .and_then(|flags| flags.parse::<i64>().ok())
            .unwrap_or(0);
        let role = if flags & SERVER_TRUST_ACCOUNT != 0 {
            Some("domain_controller")
        } else {
            operating_system.map(|system| {
                if system.to_ascii_lowercase().contains("server") {
                    "server"
                } else {
                    "workstation"
                }
            })
        };
        if let Some(role) = role {
            facts.push(Fact {
                kind: FactKind::HostRole,
                value: FactValue::Text(role.to_string()),
            });
        }
        let unit = attributes
            .first("ou")
            .map(str::to_string)
            .or_else(|| organizational_unit(&entry.dn));
        if let Some(unit) = unit {
            facts.push(Fact {
                kind: FactKind::OrganizationalUnit,
                value: FactValue::Text(unit),
            });
        }
        if let Some(owner) = attributes.first("managedBy").or(attributes.first("owner")) {
            facts.push(Fact {
                kind: FactKind::Owner,
                value: FactValue::Text(common_name(owner)),
            });
        }
        Ok(Lookup {
            result: AnswerResult::Found(facts),
            raw: Some(attributes.to_json(&entry.dn)),
        })
    }

    async fn first(
        &self,
        ldap: &mut Ldap,
        filter: &str,
        attributes: &[&str],
    ) -> Result<Option<SearchEntry>, String> {
        let (entries, _) = ldap
            .search(
                &self.definition.base_dn,
                Scope::Subtree,
                filter,
                attributes.to_vec(),
            )
            .await
            .and_then(ldap3::SearchResult::success)
            .map_err(|error| format!("the directory search failed: {error}"))?;
        Ok(entries.into_iter().next().map(SearchEntry::construct))
    }

    async fn openldap_groups(
        &self,
        ldap: &mut Ldap,
        dn: &str,
        uid: Option<&str>,
    ) -> Result<Vec<String>, String> {
        let dn = ldap_escape(dn).into_owned();
        let by_uid = uid
            .map(|uid| {
                format!(
                    "(&(objectClass=posixGroup)(memberUid={}))",
                    ldap_escape(uid)
                )
            })
            .unwrap_or_default();
        let filter = format!(
            "(|(&(objectClass=groupOfNames)(member={dn}))\
             (&(objectClass=groupOfUniqueNames)(uniqueMember={dn})){by_uid})"
        );
        let (entries, _) = ldap
            .search(
                &self.definition.base_dn,
                Scope::Subtree,
                &filter,
                vec!["cn"],
            )
            .await
            .and_then(ldap3::SearchResult::success)
            .map_err(|error| format!("the directory's group search failed: {error}"))?;
        Ok(entries
            .into_iter()
            .map(SearchEntry::construct)
            .filter_map(|entry| Attributes::of(&entry).first("cn").map(str::to_string))
            .collect())
    }

    fn privileged(&self, groups: &[String]) -> Vec<String> {
        let built_in = match self.definition.flavour {
            DirectoryFlavour::ActiveDirectory => ACTIVE_DIRECTORY_ADMIN_GROUPS,
            DirectoryFlavour::Openldap => OPENLDAP_ADMIN_GROUPS,
        };
        groups
            .iter()
            .filter(|group| {
                built_in.iter().any(|name| name.eq_ignore_ascii_case(group))
                    || self
                        .definition
                        .privileged_groups
                        .iter()
                        .any(|name| name.eq_ignore_ascii_case(group))
            })
            .cloned()
            .collect()
    }
}

/// An entry's attributes, found by name in any case (directories differ in spelling).
struct Attributes<'a>(&'a HashMap<String, Vec<String>>);

impl<'a> Attributes<'a> {
    fn of(entry: &'a SearchEntry) -> Attributes<'a> {
        Attributes(&entry.attrs)
    }

    fn all(&self, name: &str) -> &'a [String] {
        self.0
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, values)| values.as_slice())
            .unwrap_or_default()
    }

    fn first(&self, name: &str) -> Option<&'a str> {
        self.all(name).first().map(String::as_str)
    }

    fn to_json(&self, dn: &str) -> serde_json::Value {
        let mut object = serde_json::Map::new();
        object.insert("dn".into(), serde_json::Value::String(dn.to_string()));
        let mut names: Vec<&String> = self.0.keys().collect();
        names.sort();
        for name in names {
            object.insert(name.clone(), serde_json::json!(self.0[name]));
        }
        serde_json::Value::Object(object)
    }
}

/// The value of a DN's first component (`CN=Domain Admins,CN=Users,...` → `Domain Admins`);
/// a value that is not a DN is returned as it is.
fn common_name(dn: &str) -> String {
    let first = first_component(dn);
    match first.split_once('=') {
        Some((_, value)) => value.trim().to_string(),
        None => dn.to_string(),
    }
}

/// A DN's first component, up to the first comma that is not escaped.
fn first_component(dn: &str) -> String {
    let mut out = String::new();
    let mut escaped = false;
    for character in dn.chars() {
        if escaped {
            out.push(character);
            escaped = false;
        } else if character == '\\' {
            escaped = true;
        } else if character == ',' {
            break;
        } else {
            out.push(character);
        }
    }
    out
}

/// The nearest organisational unit a DN sits in (`CN=SRV1,OU=Servers,OU=HQ,...` →
/// `Servers`).
fn organizational_unit(dn: &str) -> Option<String> {
    dn.split(',').map(str::trim).find_map(|component| {
        component
            .split_once('=')
            .filter(|(name, _)| name.eq_ignore_ascii_case("ou"))
            .map(|(_, value)| value.to_string())
    })
}

/// A Windows file time (100-nanosecond intervals since 1601); 0 and the largest value mean
/// "never".
fn file_time(text: &str) -> Option<Timestamp> {
    let ticks: i64 = text.trim().parse().ok()?;
    if ticks <= 0 || ticks == i64::MAX {
        return None;
    }
    const SECONDS_1601_TO_1970: i64 = 11_644_473_600;
    Utc.timestamp_opt(ticks / 10_000_000 - SECONDS_1601_TO_1970, 0)
        .single()
}

/// An LDAP generalized time (`20261124093000Z`, fractions allowed).
fn generalized_time(text: &str) -> Option<Timestamp> {
    let text = text.trim().trim_end_matches('Z');
    let whole = text.split(['.', ',']).next().unwrap_or(text);
    NaiveDateTime::parse_from_str(whole, "%Y%m%d%H%M%S")
        .ok()
        .map(|date| Utc.from_utc_datetime(&date))
}

/// A plain LDAP account is disabled when locked by the password policy overlay or past its
/// `shadowExpire` day.
fn openldap_enabled(attributes: &Attributes<'_>, now: Timestamp) -> bool {
    if attributes.first("pwdAccountLockedTime").is_some() {
        return false;
    }
    let today = now.timestamp().div_euclid(86_400);
    !attributes
        .first("shadowExpire")
        .and_then(|days| days.parse::<i64>().ok())
        .is_some_and(|days| days >= 0 && days <= today)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_times_read_as_directories_write_them() {
        assert_eq!(
            common_name("CN=Domain Admins,CN=Users,DC=corp,DC=example"),
            "Domain Admins"
        );
        assert_eq!(
            common_name("CN=Smith\\, Ann,OU=Staff,DC=corp"),
            "Smith, Ann"
        );
        assert_eq!(
            organizational_unit("CN=SRV1,OU=Servers,OU=HQ,DC=corp").as_deref(),
            Some("Servers")
        );
        assert_eq!(
            file_time("133762104000000000").map(|date| date.to_rfc3339()),
            Some("2024-11-16T06:00:00+00:00".to_string())
        );
        assert_eq!(file_time("0"), None);
        assert_eq!(file_time("9223372036854775807"), None);
        assert_eq!(
            generalized_time("20261124093000Z").map(|date| date.to_rfc3339()),
            Some("2026-11-24T09:30:00+00:00".to_string())
        );
        assert_eq!(
            generalized_time("20261124093000.123Z").map(|date| date.to_rfc3339()),
            Some("2026-11-24T09:30:00+00:00".to_string())
        );
    }
}
