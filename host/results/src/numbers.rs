//! Numbers read out of a server's JSON objects kept verbatim (`usage`, llama.cpp `timings`,
//! the simulator's stamps): one pass over the text, nothing built but the numbers asked for.
//! A turn's record keeps those objects as their raw text; the metrics need a few numbers of
//! them, and a `serde_json::Value` of each (maps of strings) cost more than the rest of a
//! short answer's parse.

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A JSON number as `serde_json::Value` holds it, or none: read with the same meaning as
/// `Value::as_u64` and `Value::as_f64`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Num {
    #[default]
    Absent,
    PosInt(u64),
    NegInt(i64),
    Float(f64),
}

impl Num {
    /// A non-negative integer (`Value::as_u64`).
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Self::PosInt(n) => Some(n),
            _ => None,
        }
    }

    /// Any number, as a float (`Value::as_f64`).
    pub fn as_f64(self) -> Option<f64> {
        match self {
            Self::PosInt(n) => Some(n as f64),
            Self::NegInt(n) => Some(n as f64),
            Self::Float(f) => Some(f),
            Self::Absent => None,
        }
    }
}

/// The numbers at `paths` (keys, an object's within an object's) of the JSON text `json`,
/// as `value.get(a)?.get(b)?` reads them from its `serde_json::Value`: a path to anything but
/// a number, or through anything but an object, reads as absent; of a key given twice the
/// last counts. Text that is not JSON reads as all absent.
pub fn pick<const N: usize>(json: &str, paths: [&[&str]; N]) -> [Num; N] {
    assert!(N <= 64, "at most 64 paths");
    let mut out = [Num::Absent; N];
    let seed = Pick {
        paths: &paths,
        depth: 0,
        live: if N == 64 { u64::MAX } else { (1 << N) - 1 },
        out: &mut out,
    };
    let mut de = serde_json::Deserializer::from_str(json);
    if seed.deserialize(&mut de).and_then(|()| de.end()).is_err() {
        return [Num::Absent; N];
    }
    out
}

/// Reads one value `depth` keys down the paths in `live` (a bit per path).
struct Pick<'a, 'p> {
    paths: &'a [&'p [&'p str]],
    depth: usize,
    live: u64,
    out: &'a mut [Num],
}

impl Pick<'_, '_> {
    /// The live paths that end at this value.
    fn ending(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.paths.len())
            .filter(|&i| self.live & (1 << i) != 0 && self.paths[i].len() == self.depth)
    }

    fn number(self, n: Num) {
        let ending: SmallSet = self.ending().collect();
        for i in ending.iter() {
            self.out[i] = n;
        }
    }
}

/// Path indices, without allocating (at most 64).
struct SmallSet(u64);

impl FromIterator<usize> for SmallSet {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        Self(iter.into_iter().fold(0, |set, i| set | (1 << i)))
    }
}

impl SmallSet {
    /// The indices in the set, lowest first (one step per index, not per bit).
    fn iter(&self) -> impl Iterator<Item = usize> {
        let mut left = self.0;
        std::iter::from_fn(move || {
            let i = (left != 0).then(|| left.trailing_zeros() as usize)?;
            left &= left - 1;
            Some(i)
        })
    }
}

impl<'de> DeserializeSeed<'de> for Pick<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Pick<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_u64<E>(self, n: u64) -> Result<(), E> {
        self.number(Num::PosInt(n));
        Ok(())
    }

    fn visit_i64<E>(self, n: i64) -> Result<(), E> {
        // serde_json hands a non-negative integer to `visit_u64`.
        self.number(Num::NegInt(n));
        Ok(())
    }

    fn visit_f64<E>(self, f: f64) -> Result<(), E> {
        self.number(Num::Float(f));
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Pick {
            paths,
            depth,
            live,
            out,
        } = self;
        while let Some(under) = map.next_key_seed(Key { paths, depth, live })? {
            if under == 0 {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            // A key given again replaces what its first value held.
            for i in SmallSet(under).iter() {
                out[i] = Num::Absent;
            }
            map.next_value_seed(Pick {
                paths,
                depth: depth + 1,
                live: under,
                out: &mut *out,
            })?;
        }
        Ok(())
    }
}

/// A key, read as the live paths that go on through it.
struct Key<'a, 'p> {
    paths: &'a [&'p [&'p str]],
    depth: usize,
    live: u64,
}

impl<'de> DeserializeSeed<'de> for Key<'_, '_> {
    type Value = u64;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<u64, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_, '_> {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, key: &str) -> Result<u64, E> {
        Ok((0..self.paths.len())
            .filter(|&i| {
                let path = self.paths[i];
                self.live & (1 << i) != 0 && path.len() > self.depth && path[self.depth] == key
            })
            .fold(0, |set, i| set | (1 << i)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const PATHS: [&[&str]; 4] = [
        &["prompt_tokens"],
        &["completion_tokens"],
        &["prompt_tokens_details", "cached_tokens"],
        &["prompt_ms"],
    ];

    /// What `Value::get` reads of `text`, path by path.
    fn by_value(text: &str) -> [(Option<u64>, Option<f64>); 4] {
        let v: Value = serde_json::from_str(text).unwrap();
        PATHS.map(|path| {
            let at = path.iter().try_fold(&v, |v, k| v.get(k));
            (at.and_then(Value::as_u64), at.and_then(Value::as_f64))
        })
    }

    fn by_pick(text: &str) -> [(Option<u64>, Option<f64>); 4] {
        pick(text, PATHS).map(|n| (n.as_u64(), n.as_f64()))
    }

    #[test]
    fn numbers_read_as_value_reads_them() {
        for text in [
            r#"{"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 8}}"#,
            r#"{"prompt_ms": 1.5, "prompt_tokens": -4, "completion_tokens": 2.0}"#,
            r#"{"prompt_tokens": "12", "completion_tokens": null, "prompt_tokens_details": 7}"#,
            r#"{"prompt_tokens_details": {"cached_tokens": {"x": 1}}, "prompt_ms": [1, 2]}"#,
            r#"{"prompt_tokens": 1, "prompt_tokens": 2, "prompt_tokens_details": {"cached_tokens": 5}, "prompt_tokens_details": {}}"#,
            r#"{"other": {"prompt_tokens": 9}, "pr\u006fmpt_tokens": 18446744073709551615}"#,
            r#"{"prompt_ms": 1e3, "completion_tokens": 0}"#,
            r#"[1, 2]"#,
            r#"42"#,
            r#"{}"#,
        ] {
            assert_eq!(by_pick(text), by_value(text), "{text}");
        }
    }

    #[test]
    fn text_that_is_not_json_reads_as_absent() {
        for text in [r#"{"prompt_tokens": 12"#, r#"{"prompt_tokens": 12} x"#, ""] {
            assert_eq!(pick(text, PATHS), [Num::Absent; 4], "{text}");
        }
    }

    #[test]
    fn a_usage_object_as_servers_send_it() {
        let usage = json!({"completion_tokens": 736, "prompt_tokens": 5303, "total_tokens": 6039,
                           "prompt_tokens_details": {"cached_tokens": 4936}});
        let [p, c, cached, _] = pick(&usage.to_string(), PATHS);
        assert_eq!(
            (p.as_u64(), c.as_u64(), cached.as_u64()),
            (Some(5303), Some(736), Some(4936))
        );
    }
}
