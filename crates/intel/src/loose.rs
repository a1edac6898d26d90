//! Reading JSON feeds without building a `serde_json::Value` of the whole document: each
//! reader names the fields it wants, strings are borrowed from the text, everything else
//! is skipped unread, and a field of the wrong type reads as absent instead of failing
//! the document. A 100k-indicator bundle is read in a fraction of the time and memory a
//! `Value` takes, and one odd object cannot make the rest of a feed unusable.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

/// Any JSON value, kept when it is a scalar.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Scalar<'a> {
    /// Absent, null, a list or an object.
    #[default]
    Other,
    Text(Cow<'a, str>),
    Bool(bool),
    Integer(i128),
    Float(f64),
}

impl Scalar<'_> {
    /// The string, trimmed; `None` when it is not one or says nothing ("", "N/A", "-").
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Scalar::Text(text) => {
                let text = text.trim();
                // Placeholders are short; a long description is not copied to find out.
                (text.len() > 12 || !sleuth_normalize::text::is_placeholder(text)).then_some(text)
            }
            _ => None,
        }
    }

    /// A flag as JSON or as tools write it: true/false, "true"/"false", 1/0, "1"/"0".
    pub(crate) fn flag(&self) -> Option<bool> {
        match self {
            Scalar::Bool(flag) => Some(*flag),
            Scalar::Integer(1) => Some(true),
            Scalar::Integer(0) => Some(false),
            Scalar::Text(text) => match text.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => Some(true),
                "false" | "0" | "no" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    /// A whole number, also when written as a string ("3").
    pub(crate) fn whole_number(&self) -> Option<i128> {
        match self {
            Scalar::Integer(number) => Some(*number),
            Scalar::Text(text) => text.trim().parse().ok(),
            _ => None,
        }
    }

    /// The value as it would be written in JSON, for a problem report.
    pub(crate) fn shown(&self) -> String {
        match self {
            Scalar::Other => "a list or object".into(),
            Scalar::Text(text) => format!("{:?}", crate::indicator::shorten(text)),
            Scalar::Bool(flag) => flag.to_string(),
            Scalar::Integer(number) => number.to_string(),
            Scalar::Float(number) => number.to_string(),
        }
    }
}

/// Implements the visitor methods of every JSON type a reader does not want, returning
/// `$value` after skipping whatever was there.
macro_rules! skip_unwanted_types {
    ($value:expr; $($skip:ident),*) => {
        $(skip_unwanted_types!(@one $skip, $value);)*
    };
    (@one scalars, $value:expr) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> { Ok($value) }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> { Ok($value) }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> { Ok($value) }
        fn visit_i128<E: serde::de::Error>(self, _: i128) -> Result<Self::Value, E> { Ok($value) }
        fn visit_u128<E: serde::de::Error>(self, _: u128) -> Result<Self::Value, E> { Ok($value) }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> { Ok($value) }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> { Ok($value) }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> { Ok($value) }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> { Ok($value) }
    };
    (@one lists, $value:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($value)
        }
    };
    (@one objects, $value:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($value)
        }
    };
}

pub(crate) use skip_unwanted_types;

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, text: &'de str) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Text(Cow::Borrowed(text)))
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Text(Cow::Owned(text.to_string())))
    }

    fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Text(Cow::Owned(text)))
    }

    fn visit_bool<E: serde::de::Error>(self, flag: bool) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Bool(flag))
    }

    fn visit_i64<E: serde::de::Error>(self, number: i64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Integer(number.into()))
    }

    fn visit_u64<E: serde::de::Error>(self, number: u64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Integer(number.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, number: f64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Float(number))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other)
    }

    skip_unwanted_types!(Scalar::Other; lists, objects);
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

/// A list of `T`; empty, with `is_list` false, when the value is anything else.
#[derive(Debug)]
pub(crate) struct List<T> {
    pub items: Vec<T>,
    pub is_list: bool,
}

impl<T> Default for List<T> {
    fn default() -> Self {
        List {
            items: Vec::new(),
            is_list: false,
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(ForEach::new(Vec::new(), |items: &mut Vec<T>, item| {
                items.push(item);
            }))
            .map(|(items, is_list)| List { items, is_list })
    }
}

/// A list read one item at a time, each handed to `each` with `state` as it is read, so
/// a feed of a million entries is never held as a million parsed entries.
pub(crate) struct ForEach<S, T, F> {
    state: S,
    each: F,
    item: PhantomData<fn() -> T>,
}

impl<S, T, F: FnMut(&mut S, T)> ForEach<S, T, F> {
    pub(crate) fn new(state: S, each: F) -> Self {
        ForEach {
            state,
            each,
            item: PhantomData,
        }
    }
}

impl<'de, S, T: Deserialize<'de>, F: FnMut(&mut S, T)> DeserializeSeed<'de> for ForEach<S, T, F> {
    /// The state, and whether the value was a list at all.
    type Value = (S, bool);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, S, T: Deserialize<'de>, F: FnMut(&mut S, T)> Visitor<'de> for ForEach<S, T, F> {
    type Value = (S, bool);

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a list")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Self::Value, A::Error> {
        while let Some(item) = seq.next_element::<T>()? {
            (self.each)(&mut self.state, item);
        }
        Ok((self.state, true))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok((self.state, false))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok((self.state, false))
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok((self.state, false))
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok((self.state, false))
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok((self.state, false))
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok((self.state, false))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok((self.state, false))
    }
}

/// The fields a reader wants from a JSON object.
pub(crate) trait Fields<'de>: Default {
    /// Reads the value of `key` into `self` when the key is wanted, and says whether it
    /// did; the value of an unwanted key is skipped by the caller.
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error>;
}

/// Implements [`Fields`] for a struct whose every field is itself a loose type
/// ([`Scalar`], [`List`], [`Object`], or an `Option` of one), one JSON key per field.
macro_rules! json_fields {
    ($type:ident { $($key:literal => $field:ident),* $(,)? }) => {
        impl<'de> $crate::loose::Fields<'de> for $type<'de> {
            fn field<A: serde::de::MapAccess<'de>>(
                &mut self,
                key: &str,
                map: &mut A,
            ) -> Result<bool, A::Error> {
                match key {
                    $($key => self.$field = map.next_value()?,)*
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }
    };
}

pub(crate) use json_fields;

/// A JSON object read into `T`; `None` when the value is not an object. A repeated key
/// is read again, the last one winning, as `serde_json::Value` does.
#[derive(Debug)]
pub(crate) struct Object<T>(pub Option<T>);

impl<T> Default for Object<T> {
    fn default() -> Self {
        Object(None)
    }
}

struct ObjectVisitor<T>(PhantomData<fn() -> T>);

impl<'de, T: Fields<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = Object<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object<T>, A::Error> {
        let mut fields = T::default();
        while let Some(key) = map.next_key::<Scalar<'de>>()? {
            let wanted = match &key {
                Scalar::Text(key) => fields.field(key, &mut map)?,
                _ => false,
            };
            if !wanted {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Object(Some(fields)))
    }

    skip_unwanted_types!(Object(None); scalars, lists);
}

impl<'de, T: Fields<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ObjectVisitor(PhantomData))
    }
}

/// Reads a whole document as `T`, mapping a syntax error to the feed error.
pub(crate) fn from_str<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, crate::FeedError> {
    serde_json::from_str(text).map_err(|error| crate::FeedError::InvalidJson(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default)]
    struct Sample<'a> {
        name: Scalar<'a>,
        flag: Scalar<'a>,
        tags: List<Scalar<'a>>,
        child: Object<Child<'a>>,
    }

    #[derive(Debug, Default)]
    struct Child<'a> {
        value: Scalar<'a>,
    }

    impl<'de> Fields<'de> for Sample<'de> {
        fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
            match key {
                "name" => self.name = map.next_value()?,
                "flag" => self.flag = map.next_value()?,
                "tags" => self.tags = map.next_value()?,
                "child" => self.child = map.next_value()?,
                _ => return Ok(false),
            }
            Ok(true)
        }
    }

    impl<'de> Fields<'de> for Child<'de> {
        fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
            if key != "value" {
                return Ok(false);
            }
            self.value = map.next_value()?;
            Ok(true)
        }
    }

    fn read(text: &str) -> Sample<'_> {
        let object: Object<Sample<'_>> = from_str(text).expect("valid JSON");
        object.0.expect("an object")
    }

    #[test]
    fn wanted_fields_are_read_and_borrowed_and_the_rest_skipped() {
        let sample = read(
            r#"{"ignored": {"deep": [1, {"x": null}]}, "name": " Emotet C2 ", "flag": "1",
                "tags": ["a", 2, {"b": 1}, "c"], "child": {"value": 7, "other": "x"}}"#,
        );
        assert_eq!(sample.name.text(), Some("Emotet C2"));
        assert!(matches!(sample.name, Scalar::Text(Cow::Borrowed(_))));
        assert_eq!(sample.flag.flag(), Some(true));
        let tags: Vec<Option<&str>> = sample.tags.items.iter().map(Scalar::text).collect();
        assert_eq!(tags, [Some("a"), None, None, Some("c")]);
        assert!(sample.tags.is_list);
        let child = sample.child.0.expect("an object");
        assert_eq!(child.value.whole_number(), Some(7));
    }

    #[test]
    fn wrong_types_read_as_absent_and_repeated_keys_as_the_last() {
        let sample = read(
            r#"{"name": ["x"], "flag": {"a": 1}, "tags": "not a list", "child": 3,
                "name": "second", "unknown\u0041": 1}"#,
        );
        assert_eq!(sample.name.text(), Some("second"));
        assert_eq!(sample.flag.flag(), None);
        assert!(!sample.tags.is_list);
        assert!(sample.child.0.is_none());
        let escaped = read(r#"{"n\u0061me": "caf\u00e9"}"#);
        assert_eq!(escaped.name.text(), Some("café"));
    }

    #[test]
    fn scalars_answer_as_flags_numbers_and_text() {
        assert_eq!(Scalar::Integer(0).flag(), Some(false));
        assert_eq!(Scalar::Text("False".into()).flag(), Some(false));
        assert_eq!(Scalar::Text("maybe".into()).flag(), None);
        assert_eq!(Scalar::Text(" 3 ".into()).whole_number(), Some(3));
        assert_eq!(Scalar::Float(2.5).whole_number(), None);
        assert_eq!(Scalar::Text("N/A".into()).text(), None);
        assert_eq!(Scalar::Bool(true).text(), None);
        assert_eq!(Scalar::Integer(250).shown(), "250");
    }

    #[test]
    fn documents_that_are_not_objects_or_not_json_are_told_apart() {
        let not_object: Object<Sample<'_>> = from_str("[1, 2]").expect("valid JSON");
        assert!(not_object.0.is_none());
        assert!(from_str::<Object<Sample<'_>>>("{").is_err());
        assert!(from_str::<Object<Sample<'_>>>("{} trailing").is_err());
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let _ = from_str::<Object<Sample<'_>>>(&deep);
        let deep_objects = format!("{}1{}", "{\"name\":".repeat(100_000), "}".repeat(100_000));
        let _ = from_str::<Object<Sample<'_>>>(&deep_objects);
    }
}
