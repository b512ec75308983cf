//! Python's `repr` of containers, shared by every value model that prints
//! like Python: [`crate::value::Value`] (what `json.loads` produces) and the
//! BFCL simulators' runtime objects (tuples, sets, instances), so that the
//! separators, the one-element tuple's comma and the empty set are written
//! in one place.

use crate::value::str_repr;

/// A value that writes its own Python `repr`.
pub trait Repr {
    /// Appends `repr(self)` to `out`.
    fn write_repr(&self, out: &mut String);
}

impl Repr for str {
    fn write_repr(&self, out: &mut String) {
        out.push_str(&str_repr(self));
    }
}

impl Repr for String {
    fn write_repr(&self, out: &mut String) {
        self.as_str().write_repr(out);
    }
}

/// `repr` of a sequence between `open` and `close`, items joined by `", "`.
fn seq<'a, T: Repr + 'a>(
    out: &mut String,
    items: impl IntoIterator<Item = &'a T>,
    open: char,
    close: char,
) {
    out.push(open);
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        item.write_repr(out);
    }
    out.push(close);
}

/// `repr(list)`: `[a, b]`.
pub fn list<T: Repr>(out: &mut String, items: &[T]) {
    seq(out, items, '[', ']');
}

/// `repr(tuple)`: `(a, b)`, `(a,)` for one item, `()` for none.
pub fn tuple<T: Repr>(out: &mut String, items: &[T]) {
    match items {
        [one] => {
            out.push('(');
            one.write_repr(out);
            out.push_str(",)");
        }
        _ => seq(out, items, '(', ')'),
    }
}

/// `repr(set)` in the items' order: `{a, b}`, `set()` for none.
pub fn set<T: Repr>(out: &mut String, items: &[T]) {
    if items.is_empty() {
        out.push_str("set()");
    } else {
        seq(out, items, '{', '}');
    }
}

/// `repr(dict)` in insertion order: `{k: v, ...}`.
pub fn dict<'a, K: Repr + ?Sized + 'a, V: Repr + 'a>(
    out: &mut String,
    items: impl IntoIterator<Item = (&'a K, &'a V)>,
) {
    out.push('{');
    for (i, (k, v)) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        k.write_repr(out);
        out.push_str(": ");
        v.write_repr(out);
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Int(i64);

    impl Repr for Int {
        fn write_repr(&self, out: &mut String) {
            out.push_str(&self.0.to_string());
        }
    }

    fn written(f: impl FnOnce(&mut String)) -> String {
        let mut out = String::new();
        f(&mut out);
        out
    }

    #[test]
    fn containers_print_as_python_does() {
        let two = [Int(1), Int(2)];
        assert_eq!(written(|o| list(o, &two)), "[1, 2]");
        assert_eq!(written(|o| list::<Int>(o, &[])), "[]");
        assert_eq!(written(|o| tuple(o, &two)), "(1, 2)");
        assert_eq!(written(|o| tuple(o, &[Int(1)])), "(1,)");
        assert_eq!(written(|o| tuple::<Int>(o, &[])), "()");
        assert_eq!(written(|o| set(o, &two)), "{1, 2}");
        assert_eq!(written(|o| set::<Int>(o, &[])), "set()");
        let items = [("a".to_string(), Int(1)), ("it's".to_string(), Int(2))];
        assert_eq!(
            written(|o| dict(o, items.iter().map(|(k, v)| (k, v)))),
            r#"{'a': 1, "it's": 2}"#
        );
    }
}
