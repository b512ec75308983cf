//! `TwitterAPI` (`posting_api.py`): tweets, retweets, comments, following.

use super::{get_or, not_ported, Attrs, Globals, Simulator};
use crate::call::Args;
use crate::py::{arith, contains, dict, py_eq, s, Op, Py, PyResult};

/// The public methods.
pub const METHODS: &[&str] = &[
    "authenticate_twitter",
    "comment",
    "follow_user",
    "get_tweet",
    "get_tweet_comments",
    "get_user_stats",
    "get_user_tweets",
    "list_all_following",
    "mention",
    "post_tweet",
    "posting_get_login_status",
    "retweet",
    "search_tweets",
    "unfollow_user",
];

/// `TwitterAPI`: `username`, `password`, `authenticated`, `tweets` (int
/// keys), `comments`, `retweets`, `following_list`, `tweet_counter`.
#[derive(Default)]
pub struct TwitterApi {
    a: Attrs,
    /// Keys of the tweets whose `mentions` is the shared default list
    /// ([`Globals::twitter_default_mentions`]).
    default_mentions: Vec<Py>,
}

fn error(msg: String) -> Py {
    dict([("error", s(msg))])
}

fn not_auth(what: &str) -> Py {
    error(format!(
        "User not authenticated. Please authenticate before {what}."
    ))
}

/// `int(x)` for a dict key loaded from JSON.
fn py_int(k: &Py) -> PyResult<Py> {
    match k {
        Py::Int(_) => Ok(k.clone()),
        Py::Bool(b) => Ok(Py::Int(*b as i64)),
        Py::Float(f) => Ok(Py::Int(f.trunc() as i64)),
        Py::Str(t) => t
            .trim()
            .replace('_', "")
            .parse::<i64>()
            .map(Py::Int)
            .map_err(|_| format!("invalid literal for int() with base 10: {}", k.repr())),
        o => Err(format!(
            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
            o.type_name()
        )),
    }
}

impl TwitterApi {
    fn tweets(&self) -> Vec<Py> {
        match self.a.get("tweets") {
            Py::Dict(items) => items.iter().map(|(_, v)| v.clone()).collect(),
            _ => Vec::new(),
        }
    }
}

impl Simulator for TwitterApi {
    fn load_scenario(&mut self, sc: Py, _: bool, _: &mut Globals) {
        self.a.set("username", get_or(&sc, "username", s("john")));
        self.a
            .set("password", get_or(&sc, "password", s("john123")));
        self.a.set(
            "authenticated",
            get_or(&sc, "authenticated", Py::Bool(false)),
        );
        let tweets = get_or(&sc, "tweets", Py::Dict(vec![]));
        let mut converted = Py::Dict(vec![]);
        if let Py::Dict(items) = tweets {
            for (k, v) in items {
                // A bad key would raise inside _load_scenario; keep it as is.
                converted.set_key(py_int(&k).unwrap_or(k), v);
            }
        }
        self.a.set("tweets", converted);
        self.a
            .set("comments", get_or(&sc, "comments", Py::Dict(vec![])));
        self.a
            .set("retweets", get_or(&sc, "retweets", Py::Dict(vec![])));
        self.a.set(
            "following_list",
            get_or(&sc, "following_list", Py::List(vec![s("alice"), s("bob")])),
        );
        self.a
            .set("tweet_counter", get_or(&sc, "tweet_counter", Py::Int(0)));
    }

    fn call(&mut self, method: &str, args: &Args, g: &mut Globals) -> PyResult<Py> {
        // Tweets posted without mentions alias one process-wide list.
        self.pull_default_mentions(g);
        let mut out = self.call_inner(method, args);
        if method == "post_tweet" && out.as_ref().is_ok_and(|v| v.get("error").is_none()) {
            let key = arith(self.a.get("tweet_counter"), Op::Sub, &Py::Int(1))?;
            let defaulted = args.pos.len() < 3 && !args.kw.iter().any(|(k, _)| k == "mentions");
            self.default_mentions.retain(|k| !py_eq(k, &key));
            if defaulted {
                self.default_mentions.push(key);
                self.pull_default_mentions(g);
                if let Ok(tweet) = out.as_mut() {
                    tweet.set("mentions", Py::List(g.twitter_default_mentions.clone()));
                }
            }
        }
        for k in &self.default_mentions {
            if let Some(m) = self
                .a
                .get("tweets")
                .get_key(k)
                .and_then(|t| t.get("mentions"))
            {
                if let Some(items) = m.items() {
                    if !py_eq(m, &Py::List(g.twitter_default_mentions.clone())) {
                        g.twitter_default_mentions = items.clone();
                        break;
                    }
                }
            }
        }
        out
    }

    fn state(&self, g: &Globals) -> Vec<(String, Py)> {
        let mut me = TwitterApi {
            a: self.a.clone(),
            default_mentions: self.default_mentions.clone(),
        };
        me.pull_default_mentions(g);
        me.a.public()
    }
}

impl TwitterApi {
    fn pull_default_mentions(&mut self, g: &Globals) {
        for k in self.default_mentions.clone() {
            if let Some(t) = self.a.get_mut("tweets").get_key_mut(&k) {
                t.set("mentions", Py::List(g.twitter_default_mentions.clone()));
            }
        }
    }

    fn call_inner(&mut self, method: &str, args: &Args) -> PyResult<Py> {
        let q = format!("TwitterAPI.{method}");
        let authed = self.a.get("authenticated").truthy();
        match method {
            "authenticate_twitter" => {
                let a = args.bind(&q, &[("username", None), ("password", None)])?;
                if py_eq(&a[0], self.a.get("username")) && py_eq(&a[1], self.a.get("password")) {
                    self.a.set("authenticated", Py::Bool(true));
                    return Ok(dict([("authentication_status", Py::Bool(true))]));
                }
                Ok(dict([("authentication_status", Py::Bool(false))]))
            }
            "posting_get_login_status" => {
                args.bind(&q, &[])?;
                Ok(dict([("login_status", Py::Bool(authed))]))
            }
            "post_tweet" => {
                let a = args.bind(
                    &q,
                    &[
                        ("content", None),
                        ("tags", Some(Py::List(vec![]))),
                        ("mentions", Some(Py::List(vec![]))),
                    ],
                )?;
                if !authed {
                    return Ok(not_auth("posting"));
                }
                let counter = self.a.get("tweet_counter").clone();
                let tweet = dict([
                    ("id", counter.clone()),
                    ("username", self.a.get("username").clone()),
                    ("content", a[0].clone()),
                    ("tags", a[1].clone()),
                    ("mentions", a[2].clone()),
                ]);
                self.a
                    .get_mut("tweets")
                    .set_key(counter.clone(), tweet.clone());
                self.a
                    .set("tweet_counter", arith(&counter, Op::Add, &Py::Int(1))?);
                Ok(tweet)
            }
            "retweet" => {
                let a = args.bind(&q, &[("tweet_id", None)])?;
                if !authed {
                    return Ok(not_auth("retweeting"));
                }
                if !contains(self.a.get("tweets"), &a[0])? {
                    return Ok(error(format!("Tweet with ID {} not found.", a[0].to_str())));
                }
                let user = self.a.get("username").clone();
                let retweets = self.a.get_mut("retweets");
                if retweets.get_key(&user).is_none() {
                    retweets.set_key(user.clone(), Py::List(vec![]));
                }
                let list = retweets.get_key_mut(&user).expect("just set");
                if contains(list, &a[0])? {
                    return Ok(dict([("retweet_status", s("Already retweeted"))]));
                }
                match list {
                    Py::List(v) => v.push(a[0].clone()),
                    _ => return not_ported("retweets entry that is not a list"),
                }
                Ok(dict([("retweet_status", s("Successfully retweeted"))]))
            }
            "comment" => {
                let a = args.bind(&q, &[("tweet_id", None), ("comment_content", None)])?;
                if !authed {
                    return Ok(not_auth("commenting"));
                }
                if !contains(self.a.get("tweets"), &a[0])? {
                    return Ok(error(format!("Tweet with ID {} not found.", a[0].to_str())));
                }
                let user = self.a.get("username").clone();
                let comments = self.a.get_mut("comments");
                if comments.get_key(&a[0]).is_none() {
                    comments.set_key(a[0].clone(), Py::List(vec![]));
                }
                match comments.get_key_mut(&a[0]) {
                    Some(Py::List(v)) => {
                        v.push(dict([("username", user), ("content", a[1].clone())]))
                    }
                    _ => return not_ported("comments entry that is not a list"),
                }
                Ok(dict([("comment_status", s("Comment added successfully"))]))
            }
            "mention" => {
                let a = args.bind(&q, &[("tweet_id", None), ("mentioned_usernames", None)])?;
                if !contains(self.a.get("tweets"), &a[0])? {
                    return Ok(error(format!("Tweet with ID {} not found.", a[0].to_str())));
                }
                let Some(extra) = a[1].items().cloned() else {
                    return not_ported("mention with non-list usernames");
                };
                let tweet = self
                    .a
                    .get_mut("tweets")
                    .get_key_mut(&a[0])
                    .expect("checked");
                match tweet.get_mut("mentions") {
                    Some(Py::List(v)) => v.extend(extra),
                    _ => return not_ported("tweet without a mentions list"),
                }
                Ok(dict([(
                    "mention_status",
                    s("Users mentioned successfully"),
                )]))
            }
            "follow_user" | "unfollow_user" => {
                let a = args.bind(
                    &q,
                    &[(
                        if method == "follow_user" {
                            "username_to_follow"
                        } else {
                            "username_to_unfollow"
                        },
                        None,
                    )],
                )?;
                let follow = method == "follow_user";
                if !authed {
                    return Ok(not_auth(if follow { "following" } else { "unfollowing" }));
                }
                let present = contains(self.a.get("following_list"), &a[0])?;
                let key = if follow {
                    "follow_status"
                } else {
                    "unfollow_status"
                };
                if present == follow {
                    return Ok(dict([(key, Py::Bool(false))]));
                }
                match self.a.get_mut("following_list") {
                    Py::List(v) if follow => v.push(a[0].clone()),
                    Py::List(v) => {
                        if let Some(i) = v.iter().position(|x| py_eq(x, &a[0])) {
                            v.remove(i);
                        }
                    }
                    _ => return not_ported("following_list that is not a list"),
                }
                Ok(dict([(key, Py::Bool(true))]))
            }
            "list_all_following" => {
                args.bind(&q, &[])?;
                if !authed {
                    return Ok(not_auth("listing following"));
                }
                Ok(dict([(
                    "following_list",
                    self.a.get("following_list").clone(),
                )]))
            }
            "get_tweet" => {
                let a = args.bind(&q, &[("tweet_id", None)])?;
                match self.a.get("tweets").get_key(&a[0]) {
                    None => Ok(error(format!("Tweet with ID {} not found.", a[0].to_str()))),
                    Some(t) => Ok(t.clone()),
                }
            }
            "get_user_tweets" => {
                let a = args.bind(&q, &[("username", None)])?;
                let mut out = Vec::new();
                for t in self.tweets() {
                    if py_eq(t.get("username").ok_or("'username'")?, &a[0]) {
                        out.push(t);
                    }
                }
                Ok(Py::List(out))
            }
            "search_tweets" => {
                let a = args.bind(&q, &[("keyword", None)])?;
                let Some(kw) = a[0].as_str().map(str::to_lowercase) else {
                    return not_ported("search_tweets with a non-str keyword");
                };
                let mut out = Vec::new();
                for t in self.tweets() {
                    let content = t.get("content").and_then(Py::as_str).map(str::to_lowercase);
                    let hit_content = content.is_some_and(|c| c.contains(&kw));
                    let hit_tag = t.get("tags").and_then(Py::items).is_some_and(|tags| {
                        tags.iter()
                            .any(|g| g.as_str().is_some_and(|g| g.to_lowercase() == kw))
                    });
                    if hit_content || hit_tag {
                        out.push(t);
                    }
                }
                Ok(Py::List(out))
            }
            "get_tweet_comments" => {
                let a = args.bind(&q, &[("tweet_id", None)])?;
                if !contains(self.a.get("tweets"), &a[0])? {
                    return Ok(error(format!("Tweet with ID {} not found.", a[0].to_str())));
                }
                Ok(self
                    .a
                    .get("comments")
                    .get_key(&a[0])
                    .cloned()
                    .unwrap_or(Py::List(vec![])))
            }
            "get_user_stats" => {
                let a = args.bind(&q, &[("username", None)])?;
                let mut n = 0;
                for t in self.tweets() {
                    if py_eq(t.get("username").ok_or("'username'")?, &a[0]) {
                        n += 1;
                    }
                }
                let following = if py_eq(&a[0], self.a.get("username")) {
                    self.a.get("following_list").items().map_or(0, Vec::len)
                } else {
                    0
                };
                let retweets = self
                    .a
                    .get("retweets")
                    .get_key(&a[0])
                    .and_then(Py::items)
                    .map_or(0, Vec::len);
                Ok(dict([
                    ("tweet_count", Py::Int(n)),
                    ("following_count", Py::Int(following as i64)),
                    ("retweet_count", Py::Int(retweets as i64)),
                ]))
            }
            _ => not_ported(method),
        }
    }
}
