//! Checks against behaviours confirmed with CPython 3.11.

use super::parser::*;
use super::*;

fn kws(args: &str) -> Vec<(String, String)> {
    match parse_dict_call(args) {
        CallArgs::Keywords(k) => k
            .into_iter()
            .map(|(n, e)| {
                let v = match literal_eval(&e) {
                    Ok(l) => match lit_to_value(&l) {
                        Ok(v) => v.repr(),
                        Err(e) => format!("raise {}", e.kind),
                    },
                    Err(LitError::Malformed) => format!("unparse {}", unparse(&e)),
                    Err(LitError::Raised(e)) => format!("raise {}", e.kind),
                };
                (n, v)
            })
            .collect(),
        CallArgs::Invalid => vec![("_raw".into(), args.into())],
        CallArgs::NotCall => vec![],
    }
}

fn one(args: &str) -> String {
    kws(args)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";")
}

#[test]
fn literals() {
    assert_eq!(
        one("a=1, b='x', c=[1, 2.5], d={'k': None}"),
        "a=1;b='x';c=[1, 2.5];d={'k': None}"
    );
    assert_eq!(
        one("a=-5, b=+2.0, c=(1, 2), d=1_000, e=0x1F"),
        "a=-5;b=2.0;c=[1, 2];d=1000;e=31"
    );
    assert_eq!(
        one("a=True, b=true, c=null"),
        "a=True;b=unparse true;c=unparse null"
    );
    assert_eq!(
        one("a={1: 'x', True: 'y', 2.5: 3}"),
        "a={'1': 'y', '2.5': 3}"
    );
    assert_eq!(one("a=1e400, b='it\\'s'"), "a=inf;b=\"it's\"");
    assert_eq!(one("a=1j"), "a=raise TypeError");
    assert_eq!(one("a={1, 2}"), "a=raise TypeError");
    assert_eq!(one("a={[1]: 2}"), "a=raise TypeError");
    assert_eq!(one("a=1, a=2"), "a=1;a=2");
    assert_eq!(one("1, x=2"), "x=2");
    assert_eq!(one("**k, x=2"), "x=2");
}

#[test]
fn unparse_like_python() {
    assert_eq!(
        one("e=x.y[1:2], f=-(-1), g=not a, h=a if b else c, i=lambda: 1, l=2**-1, m=(a, *b), n={**a}"),
        "e=unparse x.y[1:2];f=unparse --1;g=unparse not a;h=unparse a if b else c;i=unparse lambda: 1;l=unparse 2 ** (-1);m=unparse (a, *b);n=unparse {**a}"
    );
    assert_eq!(one("a=f(x, k=1)(y)"), "a=unparse f(x, k=1)(y)");
    assert_eq!(one("a=(x:=1)"), "a=unparse (x := 1)");
    assert_eq!(
        one("a=[i for i in range(3) if i]"),
        "a=unparse [i for i in range(3) if i]"
    );
    assert_eq!(
        one("a=1 .real, b=a or b and not c"),
        "a=unparse 1 .real;b=unparse a or (b and (not c))"
    );
    assert_eq!(
        one("a=x < y <= z, b=(a+b)*c, c=a-(b-c)"),
        "a=unparse x < y <= z;b=unparse (a + b) * c;c=unparse a - (b - c)"
    );
    assert_eq!(
        one("a=Math.PI, b=1+2j"),
        "a=unparse Math.PI;b=raise TypeError"
    );
}

#[test]
fn syntax_errors_and_non_calls() {
    for bad in [
        "a=1, 2",
        "in square units",
        "a=1 # c",
        "new Date()",
        "a=07",
        "a=1__0",
        "True=1",
        "a.b=1",
        "x for x in y, 1",
        "a='unterminated",
        "a=1 2",
        "a=$x",
        "a=*b",
        "(*a)",
        "a=\\N{DASH}",
    ] {
        assert!(
            matches!(parse_dict_call(bad), CallArgs::Invalid),
            "{bad:?} must be a syntax error"
        );
    }
    let deep = format!("a={}1{}", "(".repeat(250), ")".repeat(250));
    assert!(matches!(parse_dict_call(&deep), CallArgs::Invalid));
    let unary = format!("a={}1", "-".repeat(5000));
    assert!(matches!(parse_dict_call(&unary), CallArgs::Invalid));
    assert!(matches!(parse_dict_call("a) + (b"), CallArgs::NotCall));
    assert!(matches!(parse_dict_call("a), (b"), CallArgs::NotCall));
    for ok in [
        "x for x in y",
        "a=1,",
        "a=\"\"\"x\ny\"\"\"",
        "a=f'{x}'",
        "a=b'\\x00'",
        "a=1 if b else 2",
        "*a, b=1",
        "a=(\n1)",
    ] {
        assert!(
            matches!(parse_dict_call(ok), CallArgs::Keywords(_)),
            "{ok:?} must parse"
        );
    }
}
