//! `MessageAPI` (`message_api.py`): workspace messaging with random ids.

use super::{get_or, not_ported, Attrs, Globals, Simulator};
use crate::call::Args;
use crate::mt::PyRandom;
use crate::py::{arith, contains, dict, py_eq, s, Op, Py, PyResult};

/// The public methods.
pub const METHODS: &[&str] = &[
    "add_contact",
    "delete_message",
    "get_message_stats",
    "get_user_id",
    "list_users",
    "message_get_login_status",
    "message_login",
    "search_messages",
    "send_message",
    "view_messages_sent",
];

/// `MessageAPI`: `generated_ids`, `user_count`, `user_map`, `inbox`,
/// `message_count`, `current_user` (and the private `_random`).
#[derive(Default)]
pub struct MessageApi {
    a: Attrs,
    random: Option<PyRandom>,
}

fn error(msg: String) -> Py {
    dict([("error", s(msg))])
}

fn no_user() -> Py {
    error("No user is currently logged in.".into())
}

/// The first `(key, value)` of a one-entry inbox message.
fn first_item(m: &Py) -> PyResult<(Py, Py)> {
    match m {
        Py::Dict(items) => items
            .first()
            .cloned()
            .ok_or_else(|| "list index out of range".into()),
        o => Err(format!(
            "'{}' object has no attribute 'items'",
            o.type_name()
        )),
    }
}

impl MessageApi {
    fn user_ids(&self) -> Vec<Py> {
        match self.a.get("user_map") {
            Py::Dict(items) => items.iter().map(|(_, v)| v.clone()).collect(),
            _ => Vec::new(),
        }
    }

    fn generate_id(&mut self) -> PyResult<Py> {
        let rng = self.random.as_mut().expect("loaded");
        let mut id = Py::Int(rng.randint(10000, 99999));
        while contains(self.a.get("generated_ids"), &id)? {
            id = Py::Int(rng.randint(10000, 99999));
        }
        match self.a.get_mut("generated_ids") {
            Py::Set(v) => v.push(id.clone()),
            o => return Err(format!("'{}' object has no attribute 'add'", o.type_name())),
        }
        Ok(dict([("new_id", id)]))
    }

    fn inbox(&self) -> Vec<Py> {
        self.a.get("inbox").items().cloned().unwrap_or_default()
    }
}

impl Simulator for MessageApi {
    fn load_scenario(&mut self, sc: Py, _: bool, _: &mut Globals) {
        let seed = match sc.get("random_seed") {
            Some(Py::Int(i)) => *i,
            _ => 200191,
        };
        self.random = Some(PyRandom::new(seed as i128));
        self.a.set(
            "generated_ids",
            get_or(&sc, "generated_ids", Py::Set(vec![])),
        );
        self.a
            .set("user_count", get_or(&sc, "user_count", Py::Int(4)));
        let users = ["Alice", "Bob", "Catherine", "Daniel"];
        let default_map = dict(
            users
                .iter()
                .enumerate()
                .map(|(i, u)| (*u, s(format!("USR00{}", i + 1)))),
        );
        self.a.set("user_map", get_or(&sc, "user_map", default_map));
        let default_inbox = Py::List(vec![
            dict([("USR002", s("My name is Alice. I want to connect."))]),
            dict([("USR003", s("Could you upload the file?"))]),
            dict([("USR004", s("Could you upload the file?"))]),
        ]);
        self.a.set("inbox", get_or(&sc, "inbox", default_inbox));
        self.a
            .set("message_count", get_or(&sc, "message_count", Py::Int(3)));
        self.a
            .set("current_user", get_or(&sc, "current_user", Py::None));
    }

    fn call(&mut self, method: &str, args: &Args, _g: &mut Globals) -> PyResult<Py> {
        let q = format!("MessageAPI.{method}");
        match method {
            "list_users" => {
                args.bind(&q, &[])?;
                let keys = match self.a.get("user_map") {
                    Py::Dict(items) => items.iter().map(|(k, _)| k.clone()).collect(),
                    _ => Vec::new(),
                };
                Ok(dict([("user_list", Py::List(keys))]))
            }
            "get_user_id" => {
                let a = args.bind(&q, &[("user", None)])?;
                match self.a.get("user_map").get_key(&a[0]) {
                    None => Ok(error(format!(
                        "User '{}' not found in the workspace.",
                        a[0].to_str()
                    ))),
                    Some(id) => Ok(dict([("user_id", id.clone())])),
                }
            }
            "message_login" => {
                let a = args.bind(&q, &[("user_id", None)])?;
                let id = a[0].to_str();
                if !self.user_ids().iter().any(|x| py_eq(x, &a[0])) {
                    return Ok(dict([
                        ("login_status", Py::Bool(false)),
                        ("message", s(format!("User ID '{id}' not found."))),
                    ]));
                }
                self.a.set("current_user", a[0].clone());
                Ok(dict([
                    ("login_status", Py::Bool(true)),
                    ("message", s(format!("User '{id}' logged in successfully."))),
                ]))
            }
            "message_get_login_status" => {
                args.bind(&q, &[])?;
                Ok(dict([(
                    "login_status",
                    Py::Bool(self.a.get("current_user").truthy()),
                )]))
            }
            "send_message" => {
                let a = args.bind(&q, &[("receiver_id", None), ("message", None)])?;
                if !self.a.get("current_user").truthy() {
                    return Ok(no_user());
                }
                if !self.user_ids().iter().any(|x| py_eq(x, &a[0])) {
                    return Ok(error(format!("Receiver ID '{}' not found.", a[0].to_str())));
                }
                let id = self.generate_id()?;
                match self.a.get_mut("inbox") {
                    Py::List(v) => v.push(Py::Dict(vec![(a[0].clone(), a[1].clone())])),
                    _ => return not_ported("inbox that is not a list"),
                }
                let c = arith(self.a.get("message_count"), Op::Add, &Py::Int(1))?;
                self.a.set("message_count", c);
                Ok(dict([
                    ("sent_status", Py::Bool(true)),
                    ("message_id", id),
                    (
                        "message",
                        s(format!("Message sent to '{}' successfully.", a[0].to_str())),
                    ),
                ]))
            }
            "delete_message" => {
                let a = args.bind(&q, &[("receiver_id", None)])?;
                if !self.a.get("current_user").truthy() {
                    return Ok(no_user());
                }
                let inbox = self.inbox();
                for m in inbox.iter().rev() {
                    let (receiver, _) = first_item(m)?;
                    if py_eq(&receiver, &a[0]) {
                        // list.remove drops the first equal message.
                        if let Py::List(v) = self.a.get_mut("inbox") {
                            if let Some(i) = v.iter().position(|x| py_eq(x, m)) {
                                v.remove(i);
                            }
                        }
                        return Ok(dict([
                            ("deleted_status", Py::Bool(true)),
                            ("receiver_id", receiver),
                            (
                                "message",
                                s(format!(
                                    "Receiver {}'s latest message deleted successfully.",
                                    a[0].to_str()
                                )),
                            ),
                        ]));
                    }
                }
                Ok(error(format!("Receiver ID {} not found.", a[0].to_str())))
            }
            "view_messages_sent" => {
                args.bind(&q, &[])?;
                if !self.a.get("current_user").truthy() {
                    return Ok(no_user());
                }
                let mut sent = Py::Dict(vec![]);
                for m in self.inbox() {
                    let (receiver, content) = first_item(&m)?;
                    match sent.get_key_mut(&receiver) {
                        Some(Py::List(v)) => v.push(content),
                        _ => sent.set_key(receiver, Py::List(vec![content])),
                    }
                }
                Ok(dict([("messages", sent)]))
            }
            "add_contact" => {
                let a = args.bind(&q, &[("user_name", None)])?;
                if self.a.get("user_map").get_key(&a[0]).is_some() {
                    return Ok(error(format!(
                        "User name '{}' already exists.",
                        a[0].to_str()
                    )));
                }
                let c = arith(self.a.get("user_count"), Op::Add, &Py::Int(1))?;
                self.a.set("user_count", c.clone());
                let n = c.to_str();
                let id = if n.len() < 3 {
                    format!("USR{}{n}", "0".repeat(3 - n.len()))
                } else {
                    format!("USR{n}")
                };
                if self.user_ids().iter().any(|x| py_eq(x, &s(id.clone()))) {
                    return Ok(error(format!("User ID '{id}' already exists.")));
                }
                self.a
                    .get_mut("user_map")
                    .set_key(a[0].clone(), s(id.clone()));
                Ok(dict([
                    ("added_status", Py::Bool(true)),
                    ("user_id", s(id)),
                    (
                        "message",
                        s(format!("Contact '{}' added successfully.", a[0].to_str())),
                    ),
                ]))
            }
            "search_messages" => {
                let a = args.bind(&q, &[("keyword", None)])?;
                if !self.a.get("current_user").truthy() {
                    return Ok(no_user());
                }
                let Some(kw) = a[0].as_str() else {
                    return not_ported("search_messages with a non-str keyword");
                };
                let kw = kw.to_lowercase();
                let mut out = Vec::new();
                for m in self.inbox() {
                    let (receiver, content) = first_item(&m)?;
                    let Some(c) = content.as_str() else {
                        return not_ported("search_messages over non-str content");
                    };
                    if c.to_lowercase().contains(&kw) {
                        out.push(dict([
                            ("receiver_id", receiver),
                            ("message", content.clone()),
                        ]));
                    }
                }
                Ok(dict([("results", Py::List(out))]))
            }
            "get_message_stats" => {
                args.bind(&q, &[])?;
                if !self.a.get("current_user").truthy() {
                    return Ok(no_user());
                }
                let mut contacts: Vec<Py> = Vec::new();
                let inbox = self.inbox();
                for m in &inbox {
                    let (receiver, _) = first_item(m)?;
                    if !contacts.iter().any(|c| py_eq(c, &receiver)) {
                        contacts.push(receiver);
                    }
                }
                Ok(dict([(
                    "stats",
                    dict([
                        ("received_count", Py::Int(inbox.len() as i64)),
                        ("total_contacts", Py::Int(contacts.len() as i64)),
                    ]),
                )]))
            }
            _ => not_ported(method),
        }
    }

    fn state(&self, _g: &Globals) -> Vec<(String, Py)> {
        self.a.public()
    }
}
