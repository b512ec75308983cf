use crate::wit::agentload::plugin::types::PluginError;
use crate::*;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
struct Settings {
    temperature: Option<f64>,
    limit: Option<u32>,
}

#[test]
fn settings_parse_and_name_unknown_keys() {
    let s: Settings = Config::with_settings(r#"{"temperature": 0.5}"#)
        .settings()
        .unwrap();
    assert_eq!(s.temperature, Some(0.5));
    let empty: Settings = Config::with_settings("").settings().unwrap();
    assert_eq!(empty, Settings::default());
    let err = Config::with_settings(r#"{"limt": 3}"#)
        .settings::<Settings>()
        .unwrap_err();
    assert!(matches!(err, Error::Config(_)));
    assert!(err.to_string().contains("unknown field `limt`"), "{err}");
    let err = Config::with_settings(r#"{"limit": "x"}"#)
        .settings::<Settings>()
        .unwrap_err();
    assert!(err.to_string().contains("invalid type"), "{err}");
}

#[test]
fn no_settings_accepts_nothing_but_an_empty_table() {
    for empty in ["", "  ", "{}", " { } "] {
        assert_eq!(
            Config::with_settings(empty).no_settings(),
            Ok(()),
            "{empty:?}"
        );
    }
    let err = Config::with_settings(r#"{"mode": "strict", "limit": 1}"#)
        .no_settings()
        .unwrap_err();
    assert_eq!(
        err,
        Error::config("settings: unknown field `mode`, this plugin takes no settings")
    );
    for not_a_table in ["[]", "null", "{"] {
        let err = Config::with_settings(not_a_table)
            .no_settings()
            .unwrap_err();
        assert!(
            matches!(&err, Error::Config(m) if m.starts_with("settings: ")),
            "{err}"
        );
    }
    // Granted files are another matter (`refuse_files`).
    let config = Config::with_settings("{}").grant("a", "a.jsonl", "");
    assert_eq!(config.no_settings(), Ok(()));
}

#[test]
fn missing_grant_names_the_file_and_the_grants() {
    let config = Config::with_settings("{}").grant("a", "a.jsonl", "x");
    let err = config.file("prompts").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("`prompts`") && text.contains("granted: a"),
        "{text}"
    );
    assert!(text.contains("--data prompts=FILE"), "{text}");
}

#[derive(Debug, Deserialize)]
struct Row {
    n: u32,
}

#[test]
fn jsonl_errors_carry_file_and_line() {
    let config =
        Config::with_settings("{}").grant("rows", "rows.jsonl", "{\"n\": 1}\n\n{\"n\": 2}\n");
    let rows: Vec<Row> = config.jsonl("rows").unwrap();
    assert_eq!(rows.iter().map(|r| r.n).collect::<Vec<_>>(), [1, 2]);
    let config =
        Config::with_settings("{}").grant("rows", "rows.jsonl", "{\"n\": 1}\n\n{\"n\": x}\n");
    let err = config.jsonl::<Row>("rows").unwrap_err();
    match &err {
        Error::Data { file, line, .. } => assert_eq!((file.as_str(), *line), ("rows.jsonl", 3)),
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("invalid data: rows.jsonl:3: invalid JSON"),
        "{err}"
    );
    let lines: Vec<(u32, &str)> = config
        .lines("rows")
        .unwrap()
        .map(|l| (l.number, l.text))
        .collect();
    assert_eq!(lines[2], (3, "{\"n\": x}"));
    let bad = Config::with_settings("{}").grant("b", "b.bin", vec![0xff, 0xfe]);
    assert!(bad
        .text("b")
        .unwrap_err()
        .to_string()
        .contains("b.bin: not UTF-8"));
}

#[test]
fn errors_map_onto_the_wit_variants() {
    let e: PluginError = Error::data("f.jsonl", 4, "turns must count 1..N").into();
    match e {
        PluginError::InvalidData(d) => {
            assert_eq!((d.file.as_str(), d.line), ("f.jsonl", 4));
            assert_eq!(d.message, "turns must count 1..N");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        PluginError::from(Error::config("x")),
        PluginError::InvalidConfig(_)
    ));
    assert!(matches!(
        PluginError::from(Error::input("x")),
        PluginError::InvalidInput(_)
    ));
    assert!(matches!(
        PluginError::from(Error::internal("x")),
        PluginError::Internal(_)
    ));
}

#[test]
fn messages_and_tools() {
    let m = Message::tool("call-1", "ok");
    assert_eq!(m.role, Role::Tool);
    assert_eq!(m.tool_call_id.as_deref(), Some("call-1"));
    let c = Completion {
        tool_calls: vec![ToolCall::new("c1", "bash", r#"{"command":"ls"}"#)],
        ..Completion::text("")
    };
    let a = Message::from_completion(&c);
    assert_eq!(a.role, Role::Assistant);
    assert_eq!(a.content, None, "tool calls without text send no content");
    let t = Tool::function("bash", "Run a command", r#"{"type": "object"}"#).unwrap();
    assert_eq!(t.name(), Some("bash"));
    assert_eq!(t.0["type"], "function");
    assert!(Tool::function("bad", "", "{").is_err());
}

#[test]
fn turns_become_requests() {
    let req: TurnRequest = Turn::new(2, vec![Message::user("hi")]).into_request("s1");
    assert_eq!(req.session_id, "s1");
    assert_eq!(req.item_id, "s1:2");
    assert_eq!(req.tools_json, None);
    assert_eq!(req.expected_json, "{}");
    let tool = Tool::function_value("f", "d", json!({"type": "object"}));
    let req = Turn::new(1, vec![])
        .with_item_id("x")
        .with_tools(vec![tool])
        .with_sampling(Sampling {
            temperature: Some(0.0),
            ..Sampling::default()
        })
        .with_delay_ms(5)
        .with_expected(json!({"answer": 42}))
        .into_request("s");
    assert_eq!(req.item_id, "x");
    let tools: serde_json::Value =
        serde_json::from_str(req.tools_json.as_deref().unwrap()).unwrap();
    assert_eq!(tools[0]["function"]["name"], "f");
    assert_eq!(req.sampling.temperature, Some(0.0));
    assert_eq!(req.delay_ms, 5);
    assert_eq!(req.expected_json, r#"{"answer":42}"#);
    // Verbatim JSON: passed on byte for byte.
    let verbatim = r#"{"n": 12345678901234567890123, "f": 5.0}"#;
    let req = Turn::new(1, vec![Message::new(Role::System, "s")])
        .with_tools_json(Some("[ {\"type\": \"function\"} ]".into()))
        .with_expected_json(verbatim)
        .into_request("s");
    assert_eq!(req.expected_json, verbatim);
    assert_eq!(
        req.tools_json.as_deref(),
        Some("[ {\"type\": \"function\"} ]")
    );
    assert_eq!(req.messages[0].role, Role::System);
    let req = Turn::new(1, vec![]).with_tools(vec![]).into_request("s");
    assert_eq!(req.tools_json, None, "no tools, no `tools` key");
}

#[test]
fn settings_over_defaults_and_refused_files() {
    #[derive(Debug, PartialEq, Deserialize, serde::Serialize)]
    #[serde(deny_unknown_fields)]
    struct S {
        a: u32,
        b: bool,
    }
    let defaults = S { a: 1, b: true };
    let c = Config::with_settings(r#"{"b": false}"#);
    assert_eq!(c.settings_over(&defaults).unwrap(), S { a: 1, b: false });
    assert_eq!(
        Config::with_settings("").settings_over(&defaults).unwrap(),
        defaults
    );
    let e = Config::with_settings(r#"{"c": 1}"#)
        .settings_over(&defaults)
        .unwrap_err();
    assert!(
        matches!(&e, Error::Config(m) if m.contains("unknown field `c`")),
        "{e}"
    );
    let e = Config::with_settings(r#"{"a": "x"}"#)
        .settings_over(&defaults)
        .unwrap_err();
    assert!(
        matches!(&e, Error::Config(m) if m.contains("invalid type")),
        "{e}"
    );
    let e = Config::with_settings("[1]")
        .settings_over(&defaults)
        .unwrap_err();
    assert!(matches!(e, Error::Config(_)), "{e}");
    assert!(Config::with_settings("{}").refuse_files().is_ok());
    let e = Config::with_settings("{}")
        .grant("trajectories", "t.jsonl", "")
        .refuse_files()
        .unwrap_err();
    assert!(
        matches!(&e, Error::Config(m) if m.contains("`trajectories` (t.jsonl)")),
        "{e}"
    );
}

#[derive(Default)]
struct Twice;

impl Workload for Twice {
    fn configure(&mut self, _config: Config) -> Result<Vec<Session>, Error> {
        Ok(vec![Session::new("a", 1), Session::new("a", 1)])
    }
    fn start(&mut self, _session: &str) -> Result<Turn, Error> {
        Ok(Turn::new(1, vec![]))
    }
    fn next(&mut self, _session: &str, _outcome: Outcome) -> Result<Option<Turn>, Error> {
        Ok(None)
    }
}

#[test]
fn glue_checks_session_ids_and_order_of_calls() {
    use crate::workload::glue;
    let state = std::cell::RefCell::new(None::<Twice>);
    let err = glue::start(&state, "a".into()).unwrap_err();
    assert!(matches!(err, PluginError::InvalidInput(m) if m.contains("before configure")));
    let err = glue::configure(&state, Config::with_settings("{}").into()).unwrap_err();
    assert!(matches!(err, PluginError::Internal(m) if m.contains("`a` returned twice")));
    let info = glue::describe::<Twice>(package_info!());
    assert_eq!(info.name, "agentload-sdk");
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
}

/// Greets with the granted file's text, then continues the conversation
/// with each completion until a turn fails.
#[derive(Default)]
struct Echo {
    greeting: String,
    messages: Vec<Message>,
}

impl Workload for Echo {
    fn configure(&mut self, config: Config) -> Result<Vec<Session>, Error> {
        config.no_settings()?;
        self.greeting = config.text("greeting")?.to_owned();
        Ok(vec![Session::new("e", 3)])
    }
    fn start(&mut self, _session: &str) -> Result<Turn, Error> {
        self.messages = vec![Message::user(&self.greeting)];
        Ok(Turn::new(1, self.messages.clone()))
    }
    fn next(&mut self, _session: &str, outcome: Outcome) -> Result<Option<Turn>, Error> {
        let Some(completion) = outcome.completion() else {
            return Ok(None);
        };
        self.messages.push(Message::from_completion(completion));
        self.messages.push(Message::user("more"));
        Ok(Some(Turn::new(2, self.messages.clone())))
    }
}

#[test]
fn workload_glue_converts_at_the_edge() {
    use crate::wit::agentload::plugin::types as wit;
    use crate::workload::glue;
    let state = std::cell::RefCell::new(None::<Echo>);
    let err = glue::configure(&state, Config::with_settings(r#"{"x": 1}"#).into()).unwrap_err();
    assert!(matches!(err, PluginError::InvalidConfig(m) if m.contains("`x`")));
    let config = Config::with_settings("").grant("greeting", "g.txt", "hello");
    let (sessions, facts) = glue::configure(&state, config.into()).unwrap();
    assert_eq!(sessions, [Session::new("e", 3)]);
    // A workload that does not override `facts` reports none.
    assert_eq!(facts, "{}");
    let first = glue::start(&state, "e".into()).unwrap();
    assert_eq!(first.session_id, "e");
    assert_eq!(first.item_id, "e:1");
    let wit::Message::Chat(hello) = &first.messages[0] else {
        panic!("a typed message crosses as one");
    };
    assert_eq!(hello.role, wit::Role::User);
    assert_eq!(hello.content.as_deref(), Some("hello"));
    let completion = wit::Completion {
        content: "hi".into(),
        reasoning_content: "greet back".into(),
        tool_calls: vec![wit::ToolCall {
            id: "c".into(),
            name: "wave".into(),
            arguments: "{}".into(),
        }],
        finish_reason: Some("tool_calls".into()),
        usage: None,
    };
    let (review, second, pause) =
        glue::next(&state, "e".into(), wit::TurnOutcome::Completed(completion)).unwrap();
    // A workload that does not override `review` or `pause_ms` reviews nothing and asks
    // for no pause.
    assert_eq!((review, pause), (None, 0));
    let second = second.expect("a second turn");
    let wit::Message::Chat(reply) = &second.messages[1] else {
        panic!("a typed message crosses as one");
    };
    assert_eq!(reply.role, wit::Role::Assistant);
    assert_eq!(reply.content.as_deref(), Some("hi"));
    assert_eq!(reply.reasoning_content.as_deref(), Some("greet back"));
    assert_eq!(reply.tool_calls[0].name, "wave");
    let failed = wit::TurnOutcome::Failed("HTTP 500".into());
    assert_eq!(
        glue::next(&state, "e".into(), failed).unwrap(),
        (None, None, 0)
    );
}

#[test]
fn report_mean_skips_excluded_items() {
    let item = |id: &str| Item {
        item_id: id.into(),
        session_id: "s".into(),
        turn: 1,
        expected_json: r#"{"k": 1}"#.into(),
        completion: None,
    };
    let verdicts = vec![
        Verdict::new(&item("a"), 1.0),
        Verdict::new(&item("b"), 0.0),
        Verdict::excluded(&item("c"), "missing"),
    ];
    let r = Report::mean(&verdicts);
    assert_eq!(r.score, 0.5);
    let report: serde_json::Value = serde_json::from_str(&r.json).unwrap();
    assert_eq!(report["excluded"], 1);
    assert!(
        r.json.contains("\n  \"excluded\": 1"),
        "pretty-printed: {}",
        r.json
    );
    #[derive(Deserialize)]
    struct K {
        k: u32,
    }
    assert_eq!(item("a").expected::<K>().unwrap().k, 1);
    assert!(item("a")
        .expected::<Vec<u8>>()
        .unwrap_err()
        .to_string()
        .contains("item a"));
    assert_eq!(API_VERSION, format!("agentload:plugin@{WIT_VERSION}"));
}

/// Verdicts that depend on the whole batch: each item's score is its share
/// of the batch; a broken one returns a verdict too few.
#[derive(Default)]
struct Shares {
    short: bool,
}

impl Scorer for Shares {
    fn score(&mut self, item: &Item) -> Result<Verdict, Error> {
        Ok(self.score_all(std::slice::from_ref(item))?.remove(0))
    }

    fn score_all(&mut self, items: &[Item]) -> Result<Vec<Verdict>, Error> {
        let n = items.len() - usize::from(self.short);
        Ok(items[..n]
            .iter()
            .map(|i| Verdict::new(i, 1.0 / items.len() as f64))
            .collect())
    }
}

#[test]
fn score_all_sees_the_whole_batch_and_must_answer_each_item() {
    use crate::scorer::glue;
    let item = |id: &str| Item {
        item_id: id.into(),
        session_id: "s".into(),
        turn: 1,
        expected_json: "{}".into(),
        completion: None,
    };
    let items = vec![item("a"), item("b"), item("c"), item("d")];
    let state = std::cell::RefCell::new(None::<Shares>);
    glue::configure(&state, Config::with_settings("{}").into()).unwrap();
    let verdicts = glue::score(&state, &items).unwrap();
    assert!(verdicts.iter().all(|v| v.score == 0.25), "{verdicts:?}");
    assert_eq!(Shares::default().score(&items[0]).unwrap().score, 1.0);
    *state.borrow_mut() = Some(Shares { short: true });
    let err = glue::score(&state, &items).unwrap_err();
    assert!(
        matches!(&err, PluginError::Internal(m) if m.contains("3 verdicts for 4 items")),
        "{err:?}"
    );
}

#[test]
fn reports_keep_their_text() {
    let r = Report::from_json(0.5, "{\n  \"x\": 1e-05\n}".into());
    assert_eq!(r.json, "{\n  \"x\": 1e-05\n}");
    let r = Report::new(1.0, &json!({"a": [1, 2], "b": {}}));
    assert_eq!(r.json, "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}");
}

#[derive(Default)]
struct Lengths;

impl Scorer for Lengths {
    fn score(&mut self, item: &Item) -> Result<Verdict, Error> {
        Ok(match &item.completion {
            Some(c) => Verdict::new(item, (c.content.len() as f64).min(1.0)),
            None => Verdict::excluded(item, "missing"),
        })
    }
}

#[test]
fn scorer_glue_scores_and_aggregates() {
    use crate::scorer::glue;
    let state = std::cell::RefCell::new(None::<Lengths>);
    let err = glue::configure(&state, Config::with_settings(r#"{"x": 1}"#).into()).unwrap_err();
    assert!(matches!(err, PluginError::InvalidConfig(m) if m.contains("unknown field `x`")));
    glue::configure(&state, Config::with_settings("").into()).unwrap();
    // As the host hands them over.
    let items = vec![
        glue::item(
            "a".into(),
            "s".into(),
            1,
            "{}".into(),
            Some(Completion::text("yes").into()),
        ),
        glue::item("b".into(), "s".into(), 2, "{}".into(), None),
    ];
    let a = &items[0];
    assert_eq!(
        (a.item_id.as_str(), a.session_id.as_str(), a.turn),
        ("a", "s", 1)
    );
    assert_eq!(
        (a.expected_json.as_str(), &a.completion),
        ("{}", &Some(Completion::text("yes")))
    );
    let verdicts = glue::score(&state, &items).unwrap();
    assert_eq!(verdicts[1].excluded.as_deref(), Some("missing"));
    let report = glue::aggregate(&state, &items, &verdicts).unwrap();
    assert_eq!(report.score, 1.0);
    let err = glue::aggregate(&state, &items, &verdicts[..1]).unwrap_err();
    assert!(matches!(err, PluginError::InvalidInput(_)));
    let info = glue::describe::<Lengths>(Info::new("x", "1.0.0", ""));
    assert_eq!(info.description, "agentload scorer x");
}
