//! CSV feeds: a header row naming the indicator column, then one indicator a row. Reads
//! the abuse.ch exports as published: their `#` preamble is skipped and the header that
//! is itself a comment (`# id,dateadded,url,...`) is read; ThreatFox's `", "` separators
//! are accepted.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::indicator::normalize_indicator;
use crate::{Collector, DEFAULT_CONFIDENCE, Details, FeedError, categorize, parse_confidence};

/// Header names of each role, case-insensitive, the first present winning. The first
/// four indicator names are the documented ones; `ioc_value` (ThreatFox) and `dst_ip`
/// (Feodo Tracker) let the abuse.ch exports load as published.
const VALUE_COLUMNS: &[&str] = &["value", "indicator", "ioc", "ioc_value", "url", "dst_ip"];
const TYPE_COLUMNS: &[&str] = &["type", "ioc_type", "indicator_type"];
const CATEGORY_COLUMNS: &[&str] = &["category", "threat", "threat_type"];
const DESCRIPTION_COLUMNS: &[&str] = &["description"];
/// The malware family, as a description when there is no description column.
const FAMILY_COLUMNS: &[&str] = &["malware_printable", "malware"];
const CONFIDENCE_COLUMNS: &[&str] = &["confidence", "confidence_level"];

/// Where each role is in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Columns {
    value: usize,
    kind: Option<usize>,
    category: Option<usize>,
    description: Option<usize>,
    confidence: Option<usize>,
}

impl Columns {
    /// The roles of a header line, or `None` when it names no indicator column.
    fn of_header(line: &str) -> Option<Columns> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(line.as_bytes());
        let record = reader.records().next()?.ok()?;
        let names: Vec<String> = record
            .iter()
            .map(|name| name.trim().trim_matches('"').trim().to_ascii_lowercase())
            .collect();
        let find = |candidates: &[&str]| {
            candidates
                .iter()
                .find_map(|candidate| names.iter().position(|name| name == candidate))
        };
        Some(Columns {
            value: find(VALUE_COLUMNS)?,
            kind: find(TYPE_COLUMNS),
            category: find(CATEGORY_COLUMNS),
            description: find(DESCRIPTION_COLUMNS).or_else(|| find(FAMILY_COLUMNS)),
            confidence: find(CONFIDENCE_COLUMNS),
        })
    }
}

/// Where the header is and where the rows begin.
struct Layout {
    columns: Columns,
    /// Byte offset of the first row.
    data_start: usize,
    /// Lines before `data_start`, to report rows by their line in the file.
    lines_before: u64,
}

/// Finds the header: the first line that is not a comment, when it names an indicator
/// column; otherwise the last comment before it that does (the abuse.ch exports).
fn find_layout(text: &str) -> Result<Layout, FeedError> {
    let mut commented_header = None;
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let line_start = offset;
        offset += line.len();
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix('#') {
            if let Some(columns) = Columns::of_header(comment.trim_start_matches('#')) {
                commented_header = Some(columns);
            }
            continue;
        }
        if let Some(columns) = Columns::of_header(trimmed) {
            return Ok(Layout {
                columns,
                data_start: offset,
                lines_before: index as u64 + 1,
            });
        }
        return commented_header
            .map(|columns| Layout {
                columns,
                data_start: line_start,
                lines_before: index as u64,
            })
            .ok_or(FeedError::NoIndicatorColumn);
    }
    // Only comments: a feed that lists nothing today is still a feed, if it has a header.
    commented_header
        .map(|columns| Layout {
            columns,
            data_start: text.len(),
            lines_before: 0,
        })
        .ok_or(FeedError::NoIndicatorColumn)
}

pub(crate) fn read(text: &str, collector: &mut Collector) -> Result<(), FeedError> {
    let layout = find_layout(text)?;
    let data = tighten_quoted_fields(&text[layout.data_start..]);
    let columns = &layout.columns;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .comment(Some(b'#'))
        .from_reader(data.as_bytes());
    // A feed repeats a handful of category words over thousands of rows.
    let mut categories: HashMap<String, Option<&'static str>> = HashMap::new();
    let mut record = csv::StringRecord::new();
    loop {
        let line = reader.position().line() + layout.lines_before;
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(error) => {
                collector.skip(|| format!("line {line}: unreadable CSV: {error}"));
                // The csv reader resumes after a bad record; a reader stuck on one
                // error would be a loop, so stop if the position did not move.
                if reader.position().line() + layout.lines_before <= line {
                    break;
                }
                continue;
            }
        }
        read_row(&record, columns, line, &mut categories, collector);
    }
    Ok(())
}

fn read_row(
    record: &csv::StringRecord,
    columns: &Columns,
    line: u64,
    categories: &mut HashMap<String, Option<&'static str>>,
    collector: &mut Collector,
) {
    let cell = |index: Option<usize>| {
        index
            .and_then(|index| record.get(index))
            .map(unquote)
            .filter(|text| !text.is_empty())
    };
    let Some(value) = cell(Some(columns.value)) else {
        collector.skip(|| format!("line {line}: no indicator value"));
        return;
    };
    let (kind, value) = match normalize_indicator(cell(columns.kind), value) {
        Ok(found) => found,
        Err(rejected) => {
            collector.skip(|| format!("line {line}: {rejected}"));
            return;
        }
    };
    let category = cell(columns.category).and_then(|text| {
        if let Some(known) = categories.get(text) {
            return *known;
        }
        let found = categorize(text);
        if categories.len() < 10_000 {
            categories.insert(text.to_string(), found);
        }
        found
    });
    let confidence = match cell(columns.confidence) {
        None => DEFAULT_CONFIDENCE,
        Some(text) => parse_confidence(text).unwrap_or_else(|| {
            collector.problem(|| {
                format!(
                    "line {line}: confidence {:?} is not 0..100 or 0..1; {DEFAULT_CONFIDENCE} used",
                    crate::indicator::shorten(text)
                )
            });
            DEFAULT_CONFIDENCE
        }),
    };
    let details = Details {
        category,
        description: cell(columns.description),
        confidence,
        valid_until: None,
    };
    collector.keep(kind, value, &details);
}

/// A cell without the quotes a `", "`-separated file leaves when it was not tightened.
fn unquote(cell: &str) -> &str {
    let cell = cell.trim();
    cell.strip_prefix('"')
        .and_then(|inner| inner.strip_suffix('"'))
        .map_or(cell, str::trim)
}

/// ThreatFox writes `"a", "b, c"`: a space before each opening quote. A CSV reader sees
/// a quote only at the very start of a field, so `b, c` would be split in two and every
/// later column shifted. This drops blanks between a separator (or a line start) and an
/// opening quote, outside quoted fields, and leaves everything else as it was.
fn tighten_quoted_fields(text: &str) -> Cow<'_, str> {
    if !text.contains(", \"") && !text.contains(",\t\"") && !text.contains("\n \"") {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut tightened = Vec::with_capacity(bytes.len());
    let mut in_quotes = false;
    let mut at_field_start = true;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if in_quotes {
            tightened.push(byte);
            if byte == b'"' {
                if bytes.get(index + 1) == Some(&b'"') {
                    tightened.push(b'"');
                    index += 1;
                } else {
                    in_quotes = false;
                }
            }
            index += 1;
            continue;
        }
        if at_field_start && (byte == b' ' || byte == b'\t') {
            let blanks_end = bytes[index..]
                .iter()
                .position(|next| *next != b' ' && *next != b'\t')
                .map_or(bytes.len(), |position| index + position);
            if bytes.get(blanks_end) != Some(&b'"') {
                tightened.extend_from_slice(&bytes[index..blanks_end]);
                at_field_start = false;
            }
            index = blanks_end;
            continue;
        }
        if at_field_start && byte == b'"' {
            in_quotes = true;
        }
        at_field_start = matches!(byte, b',' | b'\n' | b'\r');
        tightened.push(byte);
        index += 1;
    }
    // Only ASCII blanks were removed, between ASCII delimiters: still UTF-8.
    match String::from_utf8(tightened) {
        Ok(text) => Cow::Owned(text),
        Err(_) => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FeedFormat, FeedReport, Indicator, IndicatorKind, read_feed};

    fn read(text: &str) -> FeedReport {
        read_feed(FeedFormat::Csv, text, Some("test feed")).expect("a readable CSV")
    }

    fn summary(report: &FeedReport) -> Vec<(IndicatorKind, &str, Option<&str>, u8)> {
        report
            .indicators
            .iter()
            .map(|indicator| {
                (
                    indicator.kind,
                    indicator.value.as_str(),
                    indicator.category.as_deref(),
                    indicator.confidence,
                )
            })
            .collect()
    }

    fn find<'a>(report: &'a FeedReport, value: &str) -> &'a Indicator {
        report
            .indicators
            .iter()
            .find(|indicator| indicator.value == value)
            .unwrap_or_else(|| panic!("{value} not in {report:#?}"))
    }

    #[test]
    fn a_urlhaus_export_is_read_through_its_commented_header() {
        let text = "\
################################################################
# abuse.ch URLhaus Database Dump (CSV - recent URLs only)      #
# Last updated: 2026-02-03 06:00:00 (UTC)                      #
#                                                              #
# Terms Of Use: https://urlhaus.abuse.ch/api/                  #
################################################################
#
# id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter
\"901\",\"2026-02-03 05:59:01\",\"http://203.0.113.61:40123/Mozi.m\",\"online\",\"2026-02-03 05:59:01\",\"malware_download\",\"elf,Mozi\",\"https://urlhaus.abuse.ch/url/901/\",\"someone\"
\"902\",\"2026-02-03 05:58:12\",\"https://Files.Example.net/invoice_0231.js\",\"online\",\"\",\"malware_download\",\"js,AsyncRAT\",\"https://urlhaus.abuse.ch/url/902/\",\"someone\"
\"903\",\"2026-02-03 05:57:40\",\"hxxp://login-portal.example.com/owa/\",\"offline\",\"\",\"phishing\",\"\",\"https://urlhaus.abuse.ch/url/903/\",\"someone\"
\"904\",\"2026-02-03 05:57:00\",\"not a url at all\",\"online\",\"\",\"malware_download\",\"\",\"https://urlhaus.abuse.ch/url/904/\",\"someone\"
";
        let report = read(text);
        assert_eq!(
            summary(&report),
            vec![
                (
                    IndicatorKind::Url,
                    "http://203.0.113.61:40123/Mozi.m",
                    Some("malware_delivery"),
                    80
                ),
                (
                    IndicatorKind::Url,
                    "https://files.example.net/invoice_0231.js",
                    Some("malware_delivery"),
                    80
                ),
                (
                    IndicatorKind::Url,
                    "http://login-portal.example.com/owa/",
                    Some("phishing"),
                    80
                ),
            ]
        );
        assert_eq!(report.skipped, 1);
        assert_eq!(report.problems.len(), 1);
        assert!(
            report.problems[0].starts_with("line 12:"),
            "{:?}",
            report.problems
        );
        assert_eq!(report.indicators[0].source.as_deref(), Some("test feed"));
    }

    #[test]
    fn a_feodo_blocklist_is_read_through_its_quoted_commented_header() {
        let text = "\
################################################################
# abuse.ch Feodo Tracker Botnet C2 IP Blocklist (CSV)          #
################################################################
#
# \"first_seen_utc\",\"dst_ip\",\"dst_port\",\"c2_status\",\"last_online\",\"malware\"
\"2026-01-17 07:44:46\",\"198.51.100.23\",\"443\",\"online\",\"2026-02-02\",\"Dridex\"
\"2026-01-18 11:02:13\",\"203.0.113.145\",\"8080\",\"offline\",\"2026-01-30\",\"QakBot\"
# \"Number of entries: 2\"
";
        let report = read(text);
        assert_eq!(
            summary(&report),
            vec![
                (IndicatorKind::Ip, "198.51.100.23", None, 80),
                (IndicatorKind::Ip, "203.0.113.145", None, 80),
            ]
        );
        assert_eq!(report.indicators[0].description.as_deref(), Some("Dridex"));
        assert_eq!(report.skipped, 0);
    }

    #[test]
    fn a_threatfox_export_with_spaced_separators_keeps_its_columns_aligned() {
        let text = "\
################################################################
# ThreatFox IOCs: recent                                        #
################################################################
#
# \"first_seen_utc\",\"ioc_id\",\"ioc_value\",\"ioc_type\",\"threat_type\",\"fk_malware\",\"malware_alias\",\"malware_printable\",\"last_seen_utc\",\"confidence_level\",\"reference\",\"tags\",\"anonymous\",\"reporter\"
\"2026-02-01 10:00:00\", \"5001\", \"203.0.113.77:8443\", \"ip:port\", \"botnet_cc\", \"win.cobalt_strike\", \"Agentemis,BEACON,CobaltStrike\", \"Cobalt Strike\", \"\", \"100\", \"None\", \"c2,CobaltStrike\", \"0\", \"someone\"
\"2026-02-01 10:01:00\", \"5002\", \"update-check.example.org\", \"domain\", \"payload_delivery\", \"win.agent_tesla\", \"None\", \"Agent Tesla\", \"\", \"75\", \"None\", \"AgentTesla\", \"0\", \"someone\"
\"2026-02-01 10:02:00\", \"5003\", \"ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789\", \"sha256_hash\", \"payload\", \"win.redline_stealer\", \"RECORDSTEALER, RedLine\", \"RedLine Stealer\", \"\", \"50\", \"None\", \"exe\", \"0\", \"someone\"
\"2026-02-01 10:03:00\", \"5004\", \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\", \"sha3_384_hash\", \"payload\", \"win.x\", \"None\", \"X\", \"\", \"50\", \"None\", \"\", \"0\", \"someone\"
";
        let report = read(text);
        assert_eq!(
            summary(&report),
            vec![
                (IndicatorKind::Ip, "203.0.113.77", Some("c2"), 100),
                (
                    IndicatorKind::Domain,
                    "update-check.example.org",
                    Some("malware_delivery"),
                    75
                ),
                (
                    IndicatorKind::HashSha256,
                    "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
                    Some("malware"),
                    50
                ),
            ]
        );
        assert_eq!(
            find(&report, "203.0.113.77").description.as_deref(),
            Some("Cobalt Strike")
        );
        assert_eq!(report.skipped, 1);
        assert!(
            report.problems[0].contains("sha3_384_hash"),
            "{:?}",
            report.problems
        );
    }

    #[test]
    fn a_hand_made_list_uses_its_type_category_description_and_confidence_columns() {
        let text = "\
Indicator,Type,Category,Description,Confidence
203.0.113.50,ip,c2,Team server seen in the February intrusion,90
198.51.100.0/24,ip,scanner,Scanning range,0.6
c2.example.net,domain,Cobalt Strike C2,,
evil-invoices.example.com,hostname,phishing,Invoice lure,1.0
0123456789ABCDEF0123456789ABCDEF,md5,malware,Loader,55
ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12,sha1,ransomware,,
billing@invoices.example.com,email-src,spam,,
203.0.113.51,domain,c2,type says domain,90
203.0.113.52,ip,c2,confidence is nonsense,high
";
        let report = read(text);
        assert_eq!(
            summary(&report),
            vec![
                (IndicatorKind::Ip, "203.0.113.50", Some("c2"), 90),
                (
                    IndicatorKind::IpNetwork,
                    "198.51.100.0/24",
                    Some("scanner"),
                    60
                ),
                (IndicatorKind::Domain, "c2.example.net", Some("c2"), 80),
                (
                    IndicatorKind::Domain,
                    "evil-invoices.example.com",
                    Some("phishing"),
                    100
                ),
                (
                    IndicatorKind::HashMd5,
                    "0123456789abcdef0123456789abcdef",
                    Some("malware"),
                    55
                ),
                (
                    IndicatorKind::HashSha1,
                    "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12",
                    Some("ransomware"),
                    80
                ),
                (
                    IndicatorKind::Email,
                    "billing@invoices.example.com",
                    Some("spam"),
                    80
                ),
                (IndicatorKind::Ip, "203.0.113.52", Some("c2"), 80),
            ]
        );
        assert_eq!(
            find(&report, "203.0.113.50").description.as_deref(),
            Some("Team server seen in the February intrusion")
        );
        assert_eq!(report.skipped, 1);
        assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
        assert!(
            report.problems[0].starts_with("line 9:"),
            "{:?}",
            report.problems
        );
        assert!(
            report.problems[1].contains("\"high\""),
            "{:?}",
            report.problems
        );
    }

    #[test]
    fn without_a_type_column_the_kind_is_recognised_from_the_value() {
        let text = "ioc,threat\n\
            203.0.113.9,TOR exit\n\
            2001:db8::53,\n\
            files.example.org,malware_download\n\
            http://203.0.113.9/x.sh,\n\
            ops@invoices.example.com,\n\
            cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34,\n\
            report.docx,\n\
            ,\n";
        let report = read(text);
        assert_eq!(
            summary(&report),
            vec![
                (IndicatorKind::Ip, "203.0.113.9", Some("tor_exit"), 80),
                (IndicatorKind::Ip, "2001:db8::53", None, 80),
                (
                    IndicatorKind::Domain,
                    "files.example.org",
                    Some("malware_delivery"),
                    80
                ),
                (IndicatorKind::Url, "http://203.0.113.9/x.sh", None, 80),
                (IndicatorKind::Email, "ops@invoices.example.com", None, 80),
                (
                    IndicatorKind::HashSha256,
                    "cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34",
                    None,
                    80
                ),
            ]
        );
        assert_eq!(report.skipped, 2);
    }

    #[test]
    fn windows_line_endings_and_a_byte_order_mark_are_accepted() {
        let text = "\u{feff}value,category\r\n203.0.113.40,c2\r\n\r\nc2.example.net,c2\r\n";
        let report = read(text);
        assert_eq!(
            summary(&report),
            vec![
                (IndicatorKind::Ip, "203.0.113.40", Some("c2"), 80),
                (IndicatorKind::Domain, "c2.example.net", Some("c2"), 80),
            ]
        );
        assert_eq!(report.skipped, 0, "{:?}", report.problems);
    }

    #[test]
    fn a_repeated_indicator_is_kept_once_with_its_first_details() {
        let text =
            "value,description\n203.0.113.5,first\n203.0.113.5:80,second\n203.0.113[.]5,third\n";
        let report = read(text);
        assert_eq!(report.indicators.len(), 1);
        assert_eq!(report.indicators[0].description.as_deref(), Some("first"));
        assert_eq!(report.duplicates, 2);
    }

    #[test]
    fn documents_without_an_indicator_column_are_refused() {
        for text in [
            "",
            "\n\n",
            "# only a comment\n",
            "name,address\nfoo,203.0.113.1\n",
            "203.0.113.1\n203.0.113.2\n",
            "{\"type\": \"bundle\"}",
        ] {
            assert_eq!(
                read_feed(FeedFormat::Csv, text, None),
                Err(FeedError::NoIndicatorColumn),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_header_with_no_rows_is_an_empty_feed() {
        for text in ["value,type\n", "# id,dateadded,url\n# no entries today\n"] {
            let report = read(text);
            assert!(report.indicators.is_empty(), "{text:?}");
            assert_eq!(report.skipped, 0, "{text:?}");
        }
    }

    #[test]
    fn hostile_rows_are_skipped_without_panicking() {
        let text = format!(
            "\u{feff}VALUE;x,Type\n\
             \"203.0.113.1\",ip\n\
             \u{0}\u{1}\u{2},ip\n\
             http://example.com/{long},url\n\
             ☃.example.com,domain\n\
             203.0.113.2,ip,extra,columns,are,fine\n\
             \"203.0.113.3\"\"\",ip\n\
             \"unterminated,ip\n203.0.113.4,ip\n\
             ",
            long = "a".repeat(10_000),
        );
        // "VALUE;x" is not "value": the header names no indicator column.
        assert_eq!(
            read_feed(FeedFormat::Csv, &text, None),
            Err(FeedError::NoIndicatorColumn)
        );
        let text = text.replace("VALUE;x", "VALUE");
        let report = read(&text);
        let values: Vec<&str> = report
            .indicators
            .iter()
            .map(|indicator| indicator.value.as_str())
            .collect();
        // An unterminated quote runs to the end of the file: one bad row, not a panic.
        assert_eq!(values, ["203.0.113.1", "203.0.113.2"], "{report:#?}");
        assert_eq!(report.skipped, 5, "{report:#?}");
        assert!(
            report
                .problems
                .iter()
                .all(|problem| problem.chars().count() <= 300)
        );
        assert!(
            report
                .problems
                .iter()
                .all(|problem| !problem.chars().any(char::is_control)),
            "{:?}",
            report.problems
        );
    }

    #[test]
    fn a_hundred_thousand_rows_read_and_problems_stay_capped() {
        let mut text = String::from("value,category,confidence\n");
        for index in 0..100_000u32 {
            let [_, _, high, low] = index.to_be_bytes();
            if index % 10 == 0 {
                text.push_str("not-an-indicator,c2,90\n");
            } else {
                text.push_str(&format!("10.{high}.{low}.{},c2,90\n", index % 7 + 1));
            }
        }
        let report = read(&text);
        assert_eq!(report.skipped, 10_000);
        assert_eq!(report.problems.len(), crate::MAX_PROBLEMS);
        assert_eq!(
            report.indicators.len() + report.duplicates,
            90_000,
            "every good row is kept or a duplicate"
        );
    }

    #[test]
    fn spaced_separators_are_tightened_only_outside_quotes() {
        assert_eq!(
            tighten_quoted_fields("\"a\", \"b, \"\"c\"\"\", d, \"e\"\n \"f\""),
            "\"a\",\"b, \"\"c\"\"\", d,\"e\"\n\"f\""
        );
        assert_eq!(tighten_quoted_fields("a,b"), "a,b");
        assert_eq!(unquote(" \"x\" "), "x");
        assert_eq!(unquote("\""), "\"");
    }
}
