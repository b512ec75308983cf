//! BFCL quirks the port reproduces on purpose (no fixture needed).

use bfcl_multi_turn::exec::{Outcome, Session};
use bfcl_multi_turn::py::Py;
use bfcl_multi_turn::sim::Globals;

fn run(s: &mut Session, g: &mut Globals, classes: &[&str], calls: &[&str]) -> Vec<String> {
    let calls: Vec<String> = calls.iter().map(|c| c.to_string()).collect();
    let classes: Vec<String> = classes.iter().map(|c| c.to_string()).collect();
    s.execute(&calls, &classes, g)
        .into_iter()
        .map(|o| match o {
            Outcome::Result(r) => r,
            Outcome::NotPorted(w) => format!("<not ported: {w}>"),
        })
        .collect()
}

/// `post_tweet`'s `mentions=[]` default is one list shared by every tweet
/// posted without mentions, in every instance; `mention()` extends it.
#[test]
fn twitter_default_mentions_are_shared() {
    let mut g = Globals::new(Py::Dict(vec![]));
    let cfg = serde_json::json!({"TwitterAPI": {"authenticated": true}});
    let mut a = Session::new("m_eval", "e1", &cfg, false);
    let out = run(
        &mut a,
        &mut g,
        &["TwitterAPI"],
        &[
            "post_tweet(content='x')",
            "mention(tweet_id=0, mentioned_usernames=['@a'])",
        ],
    );
    assert_eq!(
        out[1],
        r#"{"mention_status": "Users mentioned successfully"}"#
    );
    let mut b = Session::new("m_eval", "e2", &cfg, false);
    let out = run(
        &mut b,
        &mut g,
        &["TwitterAPI"],
        &["post_tweet(content='y')"],
    );
    assert_eq!(
        out[0],
        r#"{"id": 0, "username": "john", "content": "y", "tags": [], "mentions": ["@a"]}"#
    );
}

/// The method-name rewriting also rewrites text inside string literals.
#[test]
fn rewriting_reaches_string_literals() {
    let mut g = Globals::new(Py::Dict(vec![]));
    let cfg = serde_json::json!({});
    let mut s = Session::new("m_eval", "t-1", &cfg, false);
    let out = run(
        &mut s,
        &mut g,
        &["GorillaFileSystem"],
        &["echo(content='run ls() now, f (x)')", "exit()", "nope(x=1)"],
    );
    assert_eq!(
        out[0],
        r#"{"terminal_output": "run m_eval_t_1_GorillaFileSystem_instance.ls() now, f(x)"}"#
    );
    assert_eq!(
        out[1],
        "Error during execution: Function call exit is not allowed."
    );
    assert_eq!(out[2], "Error during execution: name 'nope' is not defined");
}

/// Long-context `TravelAPI` instances adopt `CREDIT_CARD_EXTENSION`'s card
/// dicts by reference: paying with one changes the balance every instance
/// sees (checked against BFCL's Python: 5000.0 -> 4600.0 for SFO-LAX economy
/// on 2024-11-15).
#[test]
fn travel_extension_cards_are_shared() {
    let data: serde_json::Value = serde_json::json!({
        "CREDIT_CARD_EXTENSION": {"1234567812345678": {
            "card_number": "1234567812345678", "expiration_date": "12/25",
            "cardholder_name": "John Doe", "card_verification_number": 123, "balance": 5000.0}},
        "BOOKING_RECORD_EXTENSION": {}
    });
    let mut g = Globals::new(bfcl_multi_turn::py::from_json(&data));
    let cfg = serde_json::json!({});
    let mut a = Session::new("m_eval", "multi_turn_long_context_0", &cfg, true);
    let mut b = Session::new(
        "m_ground_truth_eval",
        "multi_turn_long_context_0",
        &cfg,
        true,
    );
    let out = run(
        &mut a,
        &mut g,
        &["TravelAPI"],
        &["authenticate_travel(client_id='c', client_secret='s', refresh_token='r', grant_type='read_write', user_first_name='A', user_last_name='B')"],
    );
    let token = out[0].split("\"access_token\": \"").nth(1).unwrap()[..6].to_string();
    let out = run(
        &mut a,
        &mut g,
        &["TravelAPI"],
        &[&format!("book_flight(access_token='{token}', card_id='1234567812345678', travel_date='2024-11-15', travel_from='SFO', travel_to='LAX', travel_class='economy')")],
    );
    assert!(out[0].contains("\"booking_status\": true"), "{}", out[0]);
    let out = run(&mut b, &mut g, &["TravelAPI"], &["get_all_credit_cards()"]);
    assert!(out[0].contains("\"balance\": 4600.0"), "{}", out[0]);
}
