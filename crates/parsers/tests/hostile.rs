//! Hostile input, as property tests: no JSON value makes any parser, format detection or
//! the generic reader panic or hang, and what they return stays sane.
//!
//! Three families: arbitrary JSON (deep, wide, unicode, defanged, numbers at their edges);
//! the real corpus alerts with random subtrees replaced, deleted or retyped, which reaches
//! the deep paths of each parser; and a few explicit monsters (10,000 levels of nesting,
//! a 5 MB string, 100,000-element arrays) that must finish in bounded time.
//!
//! Runs are deterministic: a fixed case count and a fixed seed, so CI sees the same cases
//! every time and a failure reproduces. `PROPTEST_RNG_SEED=<n>` (and `PROPTEST_CASES`)
//! explore further; a failure found is written to `hostile.proptest-regressions` beside
//! this file, which is committed and replayed first on every run.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};
use serde_json::{Map, Number, Value};
use sleuth_domain::{ParsedAlert, Timestamp};
use sleuth_normalize::entities::MAX_ENTITIES;
use sleuth_parsers::{ParseError, detect, parse_alert, schemas};

/// The seed used unless `PROPTEST_RNG_SEED` names another.
const SEED: u64 = 0x5_1e07_4a1e;

fn config(cases: u32) -> Config {
    let base = Config::default();
    Config {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            base.cases
        } else {
            cases
        },
        rng_seed: match base.rng_seed {
            RngSeed::Random => RngSeed::Fixed(SEED),
            fixed => fixed,
        },
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        // Shrinking a value of thousands of nodes through 32 parsers takes long; a
        // failure is reported with the first few hundred simplifications applied.
        max_shrink_iters: 512,
        ..base
    }
}

fn received_at() -> Timestamp {
    chrono::DateTime::parse_from_rfc3339("2026-03-01T12:00:00Z")
        .expect("a valid time")
        .to_utc()
}

/// Every way a raw alert enters the parsers: detection (as `create/custom` does), the
/// detected parser, and every parser by its schema key, the generic one included.
fn parse_everything(raw: &Value) {
    let detected = detect(raw);
    let result = parse_alert(None, raw, received_at());
    if raw.is_object() {
        assert_sane(detected.key, &result);
    } else {
        assert_eq!(result, Err(ParseError::NotAnObject));
    }
    if !raw.is_object() {
        return;
    }
    for schema in schemas() {
        assert_sane(
            schema.key,
            &parse_alert(Some(schema.key), raw, received_at()),
        );
    }
}

/// What a parser returns is a failure that names the format, or an alert whose shape
/// holds whatever came in.
fn assert_sane(key: &str, result: &Result<ParsedAlert, ParseError>) {
    let parsed = match result {
        Ok(parsed) => parsed,
        Err(ParseError::DoesNotFit { schema_key, reason }) => {
            assert_eq!(*schema_key, key);
            assert!(reason.chars().count() < 2000, "{key}: reason too long");
            return;
        }
        Err(other) => panic!("{key}: unexpected error {other}"),
    };
    assert_eq!(parsed.schema_key, key);
    let title_chars = parsed.title.chars().count();
    assert!(
        title_chars > 0 && title_chars <= 300,
        "{key}: title of {title_chars} chars"
    );
    assert!(
        !parsed.title.chars().any(char::is_control),
        "{key}: control character in title {:?}",
        parsed.title
    );
    assert!(parsed.original_title.chars().count() <= 4000, "{key}");
    assert!(parsed.alert_type.chars().count() <= 400, "{key}");
    assert!(parsed.entities.len() <= MAX_ENTITIES, "{key}");
    for (index, entity) in parsed.entities.iter().enumerate() {
        assert!(!entity.value.trim().is_empty(), "{key}: empty {entity:?}");
        assert!(
            entity.value.len() <= 4 * 2048 + 16,
            "{key}: huge {}",
            entity.kind
        );
        assert!(
            !parsed.entities[..index].contains(entity),
            "{key}: {entity:?} twice"
        );
    }
}

// --- Arbitrary JSON ---------------------------------------------------------------------

/// Pieces hostile strings are built from: defang markers, characters that confuse byte
/// offsets, direction and width (RTL override, zero-width, BOM, the last characters
/// before and after the surrogate range), placeholders and things that look like
/// entities, times and numbers.
const PIECES: &[&str] = &[
    "hxxp://",
    "hxxps://",
    "HXXPS://",
    "[.]",
    "(.)",
    "{.}",
    "[dot]",
    "(dot)",
    " dot ",
    "[:]",
    "[://]",
    "[@]",
    "[at]",
    "(AT)",
    "é",
    "Ω",
    "Ж",
    "中",
    "🦀",
    "\u{200B}",
    "\u{200D}",
    "\u{202E}",
    "\u{2066}",
    "\u{FEFF}",
    "\u{D7FF}",
    "\u{E000}",
    "\u{FFFD}",
    "\u{10FFFF}",
    "\u{0301}",
    "İ",
    "ß",
    "\0",
    "\n",
    "\t",
    "\u{7}",
    " ",
    "",
    "N/A",
    "-",
    "null",
    "@",
    ".",
    ":",
    "/",
    "\\",
    "[",
    "]",
    "=",
    ",",
    ";",
    "|",
    "\"",
    "'",
    "<",
    ">",
    "203.0.113.9",
    "10.0.0.1",
    "::ffff:198.51.100.7",
    "[2001:db8::1]:443",
    "999.1.1.1",
    "evil.co.uk",
    "example.com",
    "r.patel@example.com",
    "CORP\\r.patel",
    "WKS-0231",
    "mailto:",
    "prvs=1a2b=",
    "44d88612fea8a8f36de82e1278abb02f",
    "T1059.001",
    "TA0001",
    "2026-03-01T12:00:00Z",
    "2026-13-45T99:99:99Z",
    "1772366400",
    "1772366400000",
    "-62135596800",
    "1e308",
    "NaN",
    "-0",
    "18446744073709551615",
    "9223372036854775808",
    "{\"a\":[1,{\"b\":\"c\"}]}",
    "[[[[[[[[",
    "powershell.exe -enc ",
    "C:\\Windows\\",
    "/bin/sh -c ",
    "TruePositive",
    "Blocked",
    "High",
    "sev 3",
];

fn hostile_string() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::collection::vec(prop::sample::select(PIECES), 0..12)
            .prop_map(|pieces| pieces.concat()),
        2 => any::<String>(),
        1 => "[a-z0-9.:/@\\[\\]()-]{0,40}",
        1 => (prop::sample::select(PIECES), 1..2000usize)
            .prop_map(|(piece, times)| piece.repeat(times)),
    ]
    .boxed()
}

/// Numbers at the edges: integer extremes, float extremes, epochs in seconds,
/// milliseconds, microseconds and nanoseconds, negative epochs, tiny and huge floats.
fn edge_number() -> BoxedStrategy<Number> {
    let integers = prop_oneof![
        Just(i64::MIN),
        Just(i64::MAX),
        Just(-1i64),
        Just(0i64),
        Just(1i64),
        Just(5i64),
        Just(101i64),
        Just(1_772_366_400i64),
        Just(1_772_366_400_000i64),
        Just(1_772_366_400_000_000i64),
        Just(1_772_366_400_000_000_000i64),
        Just(-62_135_596_800i64),
        Just(-1_772_366_400_000i64),
        any::<i64>(),
    ]
    .prop_map(Number::from);
    let unsigned =
        prop_oneof![Just(u64::MAX), Just(1u64 << 63), any::<u64>()].prop_map(Number::from);
    let floats = prop_oneof![
        Just(1e308),
        Just(-1e308),
        Just(f64::MAX),
        Just(f64::MIN),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        Just(-0.0),
        Just(1_772_366_400.123_456),
        Just(1.772_366_4e12),
        any::<f64>(),
    ]
    .prop_filter_map("finite", Number::from_f64);
    prop_oneof![integers, unsigned, floats].boxed()
}

/// Every key the corpus alerts use, at any depth: random objects built from them walk
/// into the parsers' real paths far more often than random words would.
fn corpus_keys() -> &'static [String] {
    static KEYS: OnceLock<Vec<String>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = Vec::new();
        let mut stack: Vec<&Value> = corpus().iter().map(|case| &case.alert).collect();
        while let Some(value) = stack.pop() {
            match value {
                Value::Object(map) => {
                    keys.extend(map.keys().cloned());
                    stack.extend(map.values());
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    })
}

fn key() -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::sample::select(corpus_keys()),
        1 => hostile_string(),
    ]
    .boxed()
}

fn leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        3 => edge_number().prop_map(Value::Number),
        5 => hostile_string().prop_map(Value::String),
    ]
    .boxed()
}

fn json_value() -> BoxedStrategy<Value> {
    leaf()
        .prop_recursive(10, 400, 24, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..24).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..24)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
        .boxed()
}

/// An object at the top, as alerts are, most of the time; anything else sometimes.
fn alert_like() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => prop::collection::vec((key(), json_value()), 0..30)
            .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        1 => json_value(),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn no_json_value_makes_any_parser_panic(raw in alert_like()) {
        parse_everything(&raw);
    }
}

fn has_children(value: &Value) -> bool {
    match value {
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => false,
    }
}

/// The child a step chooses, by index modulo the number of children.
fn child_mut(value: &mut Value, step: usize) -> Option<&mut Value> {
    match value {
        Value::Object(map) => {
            let count = map.len().max(1);
            map.values_mut().nth(step % count)
        }
        Value::Array(items) => {
            let count = items.len().max(1);
            items.get_mut(step % count)
        }
        _ => None,
    }
}

// --- Mutated corpus alerts ---------------------------------------------------------------

struct Case {
    path: PathBuf,
    schema_key: String,
    alert: Value,
}

fn corpus() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/alerts");
        let mut cases = Vec::new();
        let mut directories = vec![root];
        while let Some(directory) = directories.pop() {
            for entry in std::fs::read_dir(&directory).expect("the corpus directory") {
                let path = entry.expect("a directory entry").path();
                if path.is_dir() {
                    directories.push(path);
                } else if path
                    .extension()
                    .is_some_and(|extension| extension == "json")
                {
                    let text = std::fs::read_to_string(&path).expect("a corpus case");
                    let mut case: Value = serde_json::from_str(&text).expect("corpus JSON");
                    cases.push(Case {
                        schema_key: case["schema_key"].as_str().unwrap_or("generic").to_string(),
                        alert: case["alert"].take(),
                        path,
                    });
                }
            }
        }
        cases.sort_by(|left, right| left.path.cmp(&right.path));
        assert!(cases.len() > 50, "the corpus is missing");
        cases
    })
}

/// One change to a tree: where (each step picks a child by index, modulo the count) and
/// what.
#[derive(Debug, Clone)]
enum Change {
    Replace(Value),
    Delete,
    /// The same content as another JSON type: a string, a number, wrapped in an array,
    /// or an object of one key.
    Retype(u8),
    /// An embedded copy of the node's own serialisation, as Microsoft formats nest
    /// JSON in strings.
    Stringify,
}

fn change() -> BoxedStrategy<(Vec<usize>, Change)> {
    let what = prop_oneof![
        4 => json_value().prop_map(Change::Replace),
        2 => Just(Change::Delete),
        2 => (0u8..4).prop_map(Change::Retype),
        1 => Just(Change::Stringify),
    ];
    (prop::collection::vec(any::<usize>(), 0..8), what).boxed()
}

/// Applies a change at the node `steps` lead to; a step into a leaf stops the walk there.
/// A deletion removes the child its last step chooses.
fn apply(root: &mut Value, steps: &[usize], change: Change) {
    let (walk, delete_at) = match (&change, steps.split_last()) {
        (Change::Delete, Some((last, walk))) => (walk, Some(*last)),
        _ => (steps, None),
    };
    let mut node = root;
    for step in walk {
        if !has_children(node) {
            break;
        }
        node = child_mut(node, *step).expect("a node with children has this one");
    }
    if let Some(step) = delete_at {
        match node {
            Value::Object(map) if !map.is_empty() => {
                let key = map.keys().nth(step % map.len()).cloned();
                if let Some(key) = key {
                    map.shift_remove(&key);
                }
            }
            Value::Array(items) if !items.is_empty() => {
                items.remove(step % items.len());
            }
            _ => {}
        }
        return;
    }
    let old = node.take();
    *node = match change {
        Change::Replace(value) => value,
        Change::Delete => Value::Null,
        Change::Stringify => Value::String(old.to_string()),
        Change::Retype(kind) => match kind {
            0 => Value::String(match &old {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            }),
            1 => match &old {
                Value::String(text) => text
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(Number::from_f64)
                    .map_or(Value::Number(Number::from(-1)), Value::Number),
                Value::Bool(flag) => Value::Number(Number::from(u8::from(*flag))),
                _ => Value::Number(Number::from(u64::MAX)),
            },
            2 => Value::Array(vec![old]),
            _ => {
                let mut map = Map::new();
                map.insert("value".to_string(), old);
                Value::Object(map)
            }
        },
    };
}

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn mutated_corpus_alerts_never_make_a_parser_panic(
        index in any::<prop::sample::Index>(),
        changes in prop::collection::vec(change(), 1..6),
    ) {
        let case = index.get(corpus());
        let mut alert = case.alert.clone();
        for (steps, change) in changes {
            apply(&mut alert, &steps, change);
        }
        // The format the case names (it may no longer be detected as that), detection,
        // and every other parser.
        let named = parse_alert(Some(&case.schema_key), &alert, received_at());
        if alert.is_object() {
            assert_sane(&case.schema_key, &named);
        }
        parse_everything(&alert);
    }
}

// --- Monsters -----------------------------------------------------------------------------

/// Generous enough for a loaded CI machine in a debug build; a quadratic walk over the
/// inputs below takes minutes.
const TIME_LIMIT: Duration = Duration::from_secs(20);

fn parse_everything_in_time(what: &str, raw: &Value) {
    let started = Instant::now();
    parse_everything(raw);
    let elapsed = started.elapsed();
    assert!(elapsed < TIME_LIMIT, "{what} took {elapsed:?}");
}

/// A changed corpus alert through the parser its case names, and detection.
fn parse_case_in_time(case: &Case, alert: &Value) {
    let started = Instant::now();
    assert_sane(
        &case.schema_key,
        &parse_alert(Some(&case.schema_key), alert, received_at()),
    );
    let _ = detect(alert);
    let elapsed = started.elapsed();
    assert!(
        elapsed < TIME_LIMIT,
        "{} took {elapsed:?}",
        case.path.display()
    );
}

/// Takes a deep value apart without recursion: serde_json's own drop recurses once per
/// level, and 10,000 levels would overflow a test thread's stack in the test, not in the
/// code under test.
fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(mut value) = stack.pop() {
        match &mut value {
            Value::Array(items) => stack.append(items),
            Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    if let Some(child) = map.shift_remove(&key) {
                        stack.push(child);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `levels` nested objects and arrays, alternating; the objects' keys cycle through
/// `keys` from `offset`, so one value leads many parsers' paths down as far as they go.
/// A corpus-like leaf sits at the bottom.
fn deep(keys: &[&str], offset: usize, levels: usize) -> Value {
    let mut value = serde_json::json!({"ip": "203.0.113.9", "title": "bottom"});
    for level in 0..levels {
        value = if level % 2 == 0 {
            Value::Array(vec![value])
        } else {
            let mut map = Map::new();
            let key = keys
                .get((offset + level) % keys.len().max(1))
                .unwrap_or(&"a");
            map.insert((*key).to_string(), value);
            Value::Object(map)
        };
    }
    value
}

/// One case of each source.
fn one_case_per_source() -> impl Iterator<Item = &'static Case> {
    let mut seen = std::collections::HashSet::new();
    corpus()
        .iter()
        .filter(move |case| seen.insert(case.schema_key.as_str()))
}

#[test]
fn ten_thousand_levels_of_nesting_finish() {
    let keys: Vec<&str> = corpus_keys()
        .iter()
        .map(String::as_str)
        .filter(|key| key.len() < 40)
        .collect();
    // Under the keys parsers read, at every level, through every parser.
    for offset in [0, keys.len() / 3, 2 * keys.len() / 3] {
        let mut map = Map::new();
        for key in keys.iter().skip(offset).take(3) {
            map.insert((*key).to_string(), deep(&keys, offset, 10_000));
        }
        let raw = Value::Object(map);
        parse_everything_in_time("10,000 levels", &raw);
        dismantle(raw);
    }
    // In place of each top-level field of a real alert, so each parser is past its
    // detection and reads every field it knows into the depths.
    let mut nested = deep(&keys, 0, 10_000);
    for case in one_case_per_source() {
        let mut alert = case.alert.clone();
        let fields: Vec<String> = alert
            .as_object()
            .map(|map| map.keys().cloned().collect())
            .unwrap_or_default();
        for field in fields {
            let original = std::mem::replace(&mut alert[field.as_str()], nested);
            parse_case_in_time(case, &alert);
            nested = std::mem::replace(&mut alert[field.as_str()], original);
        }
    }
    dismantle(nested);
}

/// A 5 MB string dense with everything a sweep and refang look at.
fn five_megabytes() -> String {
    let unit = "hxxp://evil[.]example/ü?x=1 203.0.113[.]9:443 ΩΩ[@]evil(dot)co(dot)uk \u{202E}\u{200B}44d88612fea8a8f36de82e1278abb02f ";
    let mut text = unit.repeat(5 * 1024 * 1024 / unit.len() + 1);
    let cut = (0..=5 * 1024 * 1024)
        .rev()
        .find(|index| text.is_char_boundary(*index))
        .unwrap_or(0);
    text.truncate(cut);
    text
}

/// Every string leaf of `value` replaced by `text` (at most `limit` of them).
fn replace_strings(value: &mut Value, text: &str, limit: &mut usize) {
    match value {
        Value::String(old) if *limit > 0 => {
            *limit -= 1;
            *old = text.to_string();
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| replace_strings(item, text, limit)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|item| replace_strings(item, text, limit)),
        _ => {}
    }
}

#[test]
fn a_five_megabyte_string_anywhere_finishes() {
    let huge = five_megabytes();
    // One case of each source, every string of it (up to 12) five megabytes long; and
    // the generic reader with the string under every key it looks at.
    for case in one_case_per_source() {
        let mut alert = case.alert.clone();
        replace_strings(&mut alert, &huge, &mut 12);
        parse_case_in_time(case, &alert);
    }
    let generic: Map<String, Value> = [
        "title",
        "description",
        "message",
        "command_line",
        "src_ip",
        "url",
        "email",
        "hostname",
        "user",
        "sha256",
        "timestamp",
        "severity",
        "domain",
        "process",
    ]
    .iter()
    .map(|key| ((*key).to_string(), Value::String(huge.clone())))
    .collect();
    parse_everything_in_time("5 MB strings", &Value::Object(generic));
}

/// Every array of `value` grown to `length` elements (copies of its first element when
/// that is small, else an address), at most `limit` arrays.
fn grow_arrays(value: &mut Value, length: usize, limit: &mut usize) {
    match value {
        Value::Array(items) => {
            for item in items.iter_mut() {
                grow_arrays(item, length, limit);
            }
            if *limit == 0 {
                return;
            }
            *limit -= 1;
            let filler = items
                .first()
                .filter(|first| first.to_string().len() <= 512)
                .cloned()
                .unwrap_or_else(|| Value::String("203.0.113.9".to_string()));
            items.resize(length, filler);
        }
        Value::Object(map) => map
            .values_mut()
            .for_each(|item| grow_arrays(item, length, limit)),
        _ => {}
    }
}

#[test]
fn hundred_thousand_element_arrays_finish() {
    for case in one_case_per_source() {
        let mut alert = case.alert.clone();
        grow_arrays(&mut alert, 100_000, &mut 3);
        parse_case_in_time(case, &alert);
    }
    let wide: Map<String, Value> = (0..100_000)
        .map(|index| {
            (
                format!("src_ip_{index}"),
                Value::from(format!("10.0.{}.{}", index / 250 % 250, index % 250 + 1)),
            )
        })
        .collect();
    let mut raw = Value::Object(wide);
    if let Value::Object(map) = &mut raw {
        map.insert(
            "Entities".to_string(),
            Value::Array(vec![
                serde_json::json!({"Type": "ip", "Address": "203.0.113.9"});
                100_000
            ]),
        );
        map.insert(
            "recipients".to_string(),
            Value::Array(vec![Value::from("a@evil.co.uk"); 100_000]),
        );
    }
    parse_everything_in_time("100,000-element arrays and keys", &raw);
}
