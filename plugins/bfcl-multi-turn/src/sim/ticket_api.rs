//! `TicketAPI` (`ticket_api.py`): a support-ticket queue.

use super::{get_or, not_ported, Attrs, Globals, Simulator};
use crate::call::Args;
use crate::py::{dict, lt, py_eq, s, Py, PyResult};

/// The public methods.
pub const METHODS: &[&str] = &[
    "close_ticket",
    "create_ticket",
    "edit_ticket",
    "get_ticket",
    "get_user_tickets",
    "logout",
    "resolve_ticket",
    "ticket_get_login_status",
    "ticket_login",
];

/// `TicketAPI`: `ticket_queue`, `ticket_counter`, `current_user`.
#[derive(Default)]
pub struct TicketApi {
    a: Attrs,
}

fn error(msg: String) -> Py {
    dict([("error", s(msg))])
}

impl TicketApi {
    fn find(&self, id: &Py) -> PyResult<Option<usize>> {
        let Some(queue) = self.a.get("ticket_queue").items() else {
            return not_ported("ticket_queue that is not a list");
        };
        for (i, t) in queue.iter().enumerate() {
            let tid = t.get("id").ok_or("'id'")?;
            if py_eq(tid, id) {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    fn ticket_mut(&mut self, i: usize) -> &mut Py {
        match self.a.get_mut("ticket_queue") {
            Py::List(v) => &mut v[i],
            _ => unreachable!("find checked the queue"),
        }
    }
}

impl Simulator for TicketApi {
    fn load_scenario(&mut self, sc: Py, _: bool, _: &mut Globals) {
        self.a.set(
            "ticket_queue",
            get_or(&sc, "ticket_queue", Py::List(vec![])),
        );
        self.a
            .set("ticket_counter", get_or(&sc, "ticket_counter", Py::Int(1)));
        self.a
            .set("current_user", get_or(&sc, "current_user", Py::None));
    }

    fn call(&mut self, method: &str, args: &Args, _g: &mut Globals) -> PyResult<Py> {
        let q = format!("TicketAPI.{method}");
        match method {
            "create_ticket" => {
                let a = args.bind(
                    &q,
                    &[
                        ("title", None),
                        ("description", Some(s(""))),
                        ("priority", Some(Py::Int(1))),
                    ],
                )?;
                if !self.a.get("current_user").truthy() {
                    return Ok(error(
                        "User not authenticated. Please log in to create a ticket.".into(),
                    ));
                }
                if lt(&a[2], &Py::Int(1))? || lt(&Py::Int(5), &a[2])? {
                    return Ok(error(
                        "Invalid priority. Priority must be between 1 and 5.".into(),
                    ));
                }
                let ticket = dict([
                    ("id", self.a.get("ticket_counter").clone()),
                    ("title", a[0].clone()),
                    ("description", a[1].clone()),
                    ("status", s("Open")),
                    ("priority", a[2].clone()),
                    ("created_by", self.a.get("current_user").clone()),
                ]);
                match self.a.get_mut("ticket_queue") {
                    Py::List(v) => v.push(ticket.clone()),
                    _ => return not_ported("ticket_queue that is not a list"),
                }
                let c = crate::py::arith(
                    self.a.get("ticket_counter"),
                    crate::py::Op::Add,
                    &Py::Int(1),
                )?;
                self.a.set("ticket_counter", c);
                Ok(ticket)
            }
            "get_ticket" => {
                let a = args.bind(&q, &[("ticket_id", None)])?;
                Ok(match self.find(&a[0])? {
                    None => error(format!("Ticket with ID {} not found.", a[0].to_str())),
                    Some(i) => self.ticket_mut(i).clone(),
                })
            }
            "close_ticket" | "resolve_ticket" => {
                let a = if method == "close_ticket" {
                    args.bind(&q, &[("ticket_id", None)])?
                } else {
                    args.bind(&q, &[("ticket_id", None), ("resolution", None)])?
                };
                let id = a[0].to_str();
                let Some(i) = self.find(&a[0])? else {
                    return Ok(error(format!("Ticket with ID {id} not found.")));
                };
                let (status, done, verb) = if method == "close_ticket" {
                    ("Closed", "closed", "closed")
                } else {
                    ("Resolved", "resolved", "resolved")
                };
                let t = self.ticket_mut(i);
                if py_eq(t.get("status").ok_or("'status'")?, &s(status)) {
                    return Ok(error(format!("Ticket with ID {id} is already {done}.")));
                }
                t.set("status", s(status));
                if method == "resolve_ticket" {
                    t.set("resolution", a[1].clone());
                }
                Ok(dict([(
                    "status",
                    s(format!("Ticket {id} has been {verb} successfully.")),
                )]))
            }
            "edit_ticket" => {
                let a = args.bind(&q, &[("ticket_id", None), ("updates", None)])?;
                let id = a[0].to_str();
                let Some(i) = self.find(&a[0])? else {
                    return Ok(error(format!("Ticket with ID {id} not found.")));
                };
                let Py::Dict(updates) = &a[1] else {
                    return Err(format!(
                        "'{}' object has no attribute 'keys'",
                        a[1].type_name()
                    ));
                };
                let valid = ["title", "description", "status", "priority"];
                let invalid: Vec<String> = updates
                    .iter()
                    .filter(|(k, _)| !k.as_str().is_some_and(|k| valid.contains(&k)))
                    .map(|(k, _)| k.to_str())
                    .collect();
                if !invalid.is_empty() {
                    // Python joins a set: with several fields the order depends
                    // on the process's string hashing; this keeps the given order.
                    return Ok(error(format!(
                        "Invalid fields for update: {}",
                        invalid.join(", ")
                    )));
                }
                let t = self.ticket_mut(i);
                for (k, v) in updates {
                    if !matches!(v, Py::None) {
                        t.set_key(k.clone(), v.clone());
                    }
                }
                Ok(dict([(
                    "status",
                    s(format!("Ticket {id} has been updated successfully.")),
                )]))
            }
            "ticket_login" => {
                let a = args.bind(&q, &[("username", None), ("password", None)])?;
                if a[0].truthy() && a[1].truthy() {
                    self.a.set("current_user", a[0].clone());
                    return Ok(dict([("success", Py::Bool(true))]));
                }
                Ok(dict([("success", Py::Bool(false))]))
            }
            "ticket_get_login_status" => {
                args.bind(&q, &[])?;
                Ok(dict([(
                    "login_status",
                    Py::Bool(self.a.get("current_user").truthy()),
                )]))
            }
            "logout" => {
                args.bind(&q, &[])?;
                if self.a.get("current_user").truthy() {
                    self.a.set("current_user", Py::None);
                    return Ok(dict([("success", Py::Bool(true))]));
                }
                Ok(dict([("success", Py::Bool(false))]))
            }
            "get_user_tickets" => {
                let a = args.bind(&q, &[("status", Some(Py::None))])?;
                if !self.a.get("current_user").truthy() {
                    return Ok(Py::List(vec![error(
                        "User not authenticated. Please log in to view tickets.".into(),
                    )]));
                }
                let user = self.a.get("current_user").clone();
                let queue = self
                    .a
                    .get("ticket_queue")
                    .items()
                    .cloned()
                    .unwrap_or_default();
                let mut out = Vec::new();
                for t in queue {
                    if !py_eq(t.get("created_by").ok_or("'created_by'")?, &user) {
                        continue;
                    }
                    if a[0].truthy() {
                        let (Some(st), Some(want)) =
                            (t.get("status").and_then(Py::as_str), a[0].as_str())
                        else {
                            return not_ported("get_user_tickets with non-str status");
                        };
                        if st.to_lowercase() != want.to_lowercase() {
                            continue;
                        }
                    }
                    out.push(t);
                }
                Ok(Py::List(out))
            }
            _ => not_ported(method),
        }
    }

    fn state(&self, _g: &Globals) -> Vec<(String, Py)> {
        self.a.public()
    }
}
