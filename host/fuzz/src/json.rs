//! Strategies for JSON: arbitrary values (with the awkward numbers and
//! strings), and text that is mostly JSON.

use proptest::prelude::*;
use serde_json::Value;

/// Strings with the characters parsers trip on: quotes, backslashes,
/// control characters, multi-byte and astral characters.
pub fn awkward_string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z_]{0,8}",
        2 => any::<String>().prop_map(|s| s.chars().take(24).collect()),
        2 => proptest::collection::vec(
            prop_oneof![
                Just('"'), Just('\\'), Just('\n'), Just('\r'), Just('\t'), Just('\u{0}'),
                Just('('), Just(')'), Just('['), Just(']'), Just('{'), Just('}'),
                Just(','), Just('='), Just(':'), Just('\''), Just('é'), Just('\u{1F600}'),
                Just('\u{2028}'), Just(' '), Just('a'), Just('1'), Just('.'),
            ],
            0..16,
        )
        .prop_map(|cs| cs.into_iter().collect()),
    ]
}

/// Numbers at the edges: zero, negative zero, huge, tiny, integers past 2^53.
pub fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1e308),
            Just(5e-324),
            Just(1.5),
            Just(-2.0)
        ]
        .prop_map(Value::from),
    ]
}

/// Any JSON value, nested a few levels.
pub fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        awkward_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((awkward_string(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A value's JSON text, sometimes cut or with a byte changed.
pub fn text() -> impl Strategy<Value = String> {
    (value(), any::<u8>(), any::<prop::sample::Index>(), 0u8..4).prop_map(|(v, byte, at, how)| {
        let mut s = v.to_string();
        if s.is_empty() {
            return s;
        }
        let i = at.index(s.len());
        let i = (0..=i).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
        match how {
            0 => s.truncate(i),
            1 => s.insert(i, char::from(byte % 128)),
            _ => {}
        }
        s
    })
}
