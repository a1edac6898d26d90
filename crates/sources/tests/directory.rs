//! The directory source against a real OpenLDAP server (`slapd`, Debian's package), started
//! by the test with a seeded directory: entries shaped as Active Directory holds them
//! (`tests/slapd/ad.schema` gives slapd Microsoft's attribute names) and as plain LDAP does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // A test says what failed by failing.
#![allow(clippy::disallowed_methods)] // The test starts its own slapd.

mod common;

use common::{ask, fact};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use sleuth_domain::{AnswerResult, EntityKind, FactKind, FactValue};
use sleuth_sources::{Definition, Limits, Secret, SourceConfig, Sources, StaticSecrets};

const ADMIN_PASSWORD: &str = "slapd-test-admin-password";

/// A slapd of its own, stopped when dropped.
struct Slapd {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Slapd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_slapd() -> Slapd {
    let dir = tempfile::tempdir().unwrap();
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slapd");
    let database = dir.path().join("db");
    std::fs::create_dir(&database).unwrap();
    let config = dir.path().join("slapd.conf");
    std::fs::write(
        &config,
        format!(
            "include /etc/ldap/schema/core.schema\n\
             include /etc/ldap/schema/cosine.schema\n\
             include /etc/ldap/schema/inetorgperson.schema\n\
             include /etc/ldap/schema/nis.schema\n\
             include {schema}\n\
             pidfile {pid}\n\
             modulepath /usr/lib/ldap\n\
             moduleload back_mdb\n\
             moduleload ppolicy\n\
             database mdb\n\
             maxsize 104857600\n\
             suffix \"dc=example,dc=org\"\n\
             rootdn \"cn=admin,dc=example,dc=org\"\n\
             rootpw {ADMIN_PASSWORD}\n\
             directory {database}\n",
            schema = here.join("ad.schema").display(),
            pid = dir.path().join("slapd.pid").display(),
            database = database.display(),
        ),
    )
    .unwrap();
    let seeded = Command::new("/usr/sbin/slapadd")
        .arg("-f")
        .arg(&config)
        .arg("-l")
        .arg(here.join("seed.ldif"))
        .output()
        .expect("slapadd runs (Debian package slapd; .ci/run installs it)");
    assert!(
        seeded.status.success(),
        "slapadd: {}",
        String::from_utf8_lossy(&seeded.stderr)
    );
    // A free port from the kernel, handed to slapd (which cannot take port 0).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("ldap://127.0.0.1:{port}");
    let child = Command::new("/usr/sbin/slapd")
        .arg("-f")
        .arg(&config)
        .arg("-h")
        .arg(format!("{url}/"))
        .arg("-d")
        .arg("0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("slapd starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "slapd did not listen on {url}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Slapd {
        child,
        url,
        _dir: dir,
    }
}

fn directory(url: &str, base: &str, flavour: &str, password_secret: &str) -> SourceConfig {
    SourceConfig {
        id: 1,
        name: "corp-directory".into(),
        version: 1,
        tenant_union_id: None,
        enabled: true,
        definition: serde_json::from_value::<Definition>(json!({
            "type": "directory",
            "url": url,
            "bind_dn": "cn=admin,dc=example,dc=org",
            "bind_password_secret": password_secret,
            "base_dn": base,
            "flavour": flavour,
            "privileged_groups": ["Payroll Admins"]
        }))
        .unwrap(),
        limits: Limits {
            timeout_seconds: 5.0,
            ..Limits::default()
        },
    }
}

fn sources(password: &str) -> Sources {
    Sources::new(
        Arc::new(StaticSecrets(vec![(
            "ldap_bind_password".into(),
            Secret::new(password),
        )])),
        None,
    )
    .unwrap()
}

fn text(value: &str) -> Option<FactValue> {
    Some(FactValue::Text(value.into()))
}

#[tokio::test]
async fn active_directory_users_and_hosts_become_facts() {
    let slapd = start_slapd();
    let sources = sources(ADMIN_PASSWORD);
    let config = directory(
        &slapd.url,
        "ou=ad,dc=example,dc=org",
        "active_directory",
        "ldap_bind_password",
    );

    // By sAMAccountName, written with its domain as Windows logs write it.
    let john = ask(&sources, &config, EntityKind::User, "CORP\\jdoe").await;
    assert_eq!(fact(&john, FactKind::DisplayName), text("John Doe"));
    assert_eq!(fact(&john, FactKind::Title), text("Systems Engineer"));
    assert_eq!(fact(&john, FactKind::Department), text("IT Operations"));
    assert_eq!(fact(&john, FactKind::Manager), text("Maria Garcia"));
    assert_eq!(
        fact(&john, FactKind::AccountEnabled),
        Some(FactValue::Flag(false))
    );
    assert_eq!(
        fact(&john, FactKind::Privileged),
        Some(FactValue::Flag(true))
    );
    assert_eq!(
        fact(&john, FactKind::PrivilegedGroups),
        Some(FactValue::List(vec!["Domain Admins".into()]))
    );
    assert_eq!(
        fact(&john, FactKind::Groups),
        Some(FactValue::List(vec![
            "Domain Admins".into(),
            "VPN Users".into()
        ]))
    );
    assert_eq!(
        fact(&john, FactKind::PasswordLastSet).map(|value| value.to_string()),
        Some("2024-11-16T06:00:00+00:00".into())
    );
    assert_eq!(fact(&john, FactKind::LastLogon), None, "0 means never");

    // By userPrincipalName.
    let ann = ask(&sources, &config, EntityKind::Email, "asmith@corp.example").await;
    assert_eq!(
        fact(&ann, FactKind::AccountEnabled),
        Some(FactValue::Flag(true))
    );
    assert_eq!(
        fact(&ann, FactKind::Privileged),
        Some(FactValue::Flag(false))
    );
    assert!(fact(&ann, FactKind::LastLogon).is_some());

    let server = ask(
        &sources,
        &config,
        EntityKind::Host,
        "srv-db-01.corp.example",
    )
    .await;
    assert_eq!(fact(&server, FactKind::HostRole), text("server"));
    assert_eq!(
        fact(&server, FactKind::OperatingSystem),
        text("Windows Server 2019 Datacenter")
    );
    assert_eq!(fact(&server, FactKind::OrganizationalUnit), text("Servers"));
    assert_eq!(fact(&server, FactKind::Owner), text("Maria Garcia"));
    let controller = ask(&sources, &config, EntityKind::Host, "DC01").await;
    assert_eq!(
        fact(&controller, FactKind::HostRole),
        text("domain_controller")
    );

    assert_eq!(
        ask(&sources, &config, EntityKind::User, "nobody").await,
        AnswerResult::NotFound
    );
    // A value that would be a filter if it were not escaped finds nothing.
    assert_eq!(
        ask(&sources, &config, EntityKind::User, "*)(sAMAccountName=*").await,
        AnswerResult::NotFound
    );
}

#[tokio::test]
async fn plain_ldap_accounts_groups_and_devices_become_the_same_facts() {
    let slapd = start_slapd();
    let sources = sources(ADMIN_PASSWORD);
    let config = directory(
        &slapd.url,
        "ou=plain,dc=example,dc=org",
        "openldap",
        "ldap_bind_password",
    );
    let bob = ask(&sources, &config, EntityKind::User, "bob").await;
    assert_eq!(fact(&bob, FactKind::DisplayName), text("Bob Builder"));
    assert_eq!(fact(&bob, FactKind::Department), text("Platform"));
    assert_eq!(
        fact(&bob, FactKind::AccountEnabled),
        Some(FactValue::Flag(false))
    );
    assert_eq!(
        fact(&bob, FactKind::Privileged),
        Some(FactValue::Flag(true))
    );
    assert_eq!(
        fact(&bob, FactKind::PasswordLastSet).map(|value| value.to_string()),
        Some("2026-10-01T12:00:00+00:00".into())
    );
    let carol = ask(&sources, &config, EntityKind::Email, "carol@plain.example").await;
    assert_eq!(
        fact(&carol, FactKind::AccountEnabled),
        Some(FactValue::Flag(true))
    );
    assert_eq!(
        fact(&carol, FactKind::Groups),
        Some(FactValue::List(vec!["sales".into()]))
    );
    let workstation = ask(&sources, &config, EntityKind::Host, "wks-7.plain.example").await;
    assert_eq!(
        fact(&workstation, FactKind::OrganizationalUnit),
        text("Workstations")
    );
    assert_eq!(fact(&workstation, FactKind::Owner), text("carol"));
}

#[tokio::test]
async fn a_refused_bind_and_a_dead_directory_are_failures_that_hold_no_password() {
    let slapd = start_slapd();
    let wrong = sources("the-wrong-bind-password");
    let config = directory(
        &slapd.url,
        "ou=ad,dc=example,dc=org",
        "active_directory",
        "ldap_bind_password",
    );
    let refused = ask(&wrong, &config, EntityKind::User, "jdoe").await;
    let AnswerResult::Failed { reason } = refused else {
        panic!("a wrong password must fail: {refused:?}");
    };
    assert!(reason.contains("refused Sleuth's bind"), "{reason}");
    assert!(!reason.contains("the-wrong-bind-password"));

    let url = slapd.url.clone();
    drop(slapd);
    let right = sources(ADMIN_PASSWORD);
    let config = directory(
        &url,
        "ou=ad,dc=example,dc=org",
        "active_directory",
        "ldap_bind_password",
    );
    let down = ask(&right, &config, EntityKind::User, "jdoe").await;
    let AnswerResult::Failed { reason } = down else {
        panic!("a stopped directory must fail: {down:?}");
    };
    assert!(reason.contains("could not be reached"), "{reason}");
}
