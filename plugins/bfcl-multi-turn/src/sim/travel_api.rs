//! `TravelAPI` (`travel_booking.py`): flights, credit cards, budget and
//! insurance.
//!
//! `verify_traveler_information` computes the traveler's age from today's
//! date (UTC here, local time in Python).

use super::{get_or, not_ported, Attrs, Globals, Simulator};
use crate::call::Args;
use crate::mt::PyRandom;
use crate::py::{arith, contains, dict, lt, py_eq, s, to_float, Op, Py, PyResult};

/// The public methods.
pub const METHODS: &[&str] = &[
    "authenticate_travel",
    "book_flight",
    "cancel_booking",
    "compute_exchange_rate",
    "contact_customer_support",
    "get_all_credit_cards",
    "get_booking_history",
    "get_budget_fiscal_year",
    "get_credit_card_balance",
    "get_flight_cost",
    "get_nearest_airport_by_city",
    "list_all_airports",
    "purchase_insurance",
    "register_credit_card",
    "retrieve_invoice",
    "set_budget_limit",
    "travel_get_login_status",
    "verify_traveler_information",
];

/// `base_costs` of `get_flight_cost`, in dict order.
const BASE_COSTS: &[(&str, &str, i64)] = &[
    ("SFO", "LAX", 200),
    ("SFO", "JFK", 500),
    ("SFO", "ORD", 400),
    ("SFO", "BOS", 450),
    ("SFO", "RMS", 300),
    ("SFO", "SBK", 350),
    ("SFO", "MPC", 370),
    ("SFO", "SVP", 320),
    ("SFO", "SHD", 330),
    ("SFO", "SSV", 340),
    ("SFO", "OKD", 360),
    ("SFO", "WLB", 310),
    ("SFO", "CRH", 380),
    ("SFO", "ATV", 390),
    ("SFO", "PHV", 420),
    ("SFO", "GFD", 430),
    ("SFO", "CIA", 700),
    ("LAX", "SFO", 100),
    ("LAX", "JFK", 600),
    ("LAX", "ORD", 500),
    ("LAX", "BOS", 550),
    ("LAX", "RMS", 310),
    ("LAX", "SBK", 320),
    ("LAX", "MPC", 330),
    ("LAX", "SVP", 340),
    ("LAX", "SHD", 350),
    ("LAX", "SSV", 360),
    ("LAX", "OKD", 370),
    ("LAX", "WLB", 380),
    ("LAX", "CRH", 390),
    ("LAX", "ATV", 400),
    ("LAX", "PHV", 410),
    ("LAX", "GFD", 420),
    ("LAX", "HND", 430),
    ("JFK", "ORD", 300),
    ("JFK", "BOS", 250),
    ("JFK", "RMS", 450),
    ("JFK", "SBK", 460),
    ("JFK", "MPC", 470),
    ("JFK", "SVP", 480),
    ("JFK", "SHD", 490),
    ("JFK", "SSV", 500),
    ("JFK", "OKD", 510),
    ("JFK", "WLB", 520),
    ("JFK", "CRH", 530),
    ("JFK", "ATV", 540),
    ("JFK", "PHV", 550),
    ("JFK", "GFD", 560),
    ("JFK", "LAX", 570),
    ("JFK", "HND", 800),
    ("JFK", "PVG", 950),
    ("JFK", "PEK", 1000),
    ("ORD", "LAX", 180),
    ("ORD", "BOS", 200),
    ("ORD", "RMS", 350),
    ("ORD", "SBK", 360),
    ("ORD", "MPC", 370),
    ("ORD", "SVP", 380),
    ("ORD", "SHD", 390),
    ("ORD", "SSV", 400),
    ("ORD", "OKD", 410),
    ("ORD", "WLB", 420),
    ("ORD", "CRH", 430),
    ("ORD", "ATV", 440),
    ("ORD", "PHV", 450),
    ("ORD", "GFD", 460),
    ("BOS", "RMS", 400),
    ("BOS", "SBK", 410),
    ("BOS", "MPC", 420),
    ("BOS", "SVP", 430),
    ("BOS", "SHD", 440),
    ("BOS", "SSV", 450),
    ("BOS", "OKD", 460),
    ("BOS", "WLB", 470),
    ("BOS", "CRH", 480),
    ("BOS", "ATV", 490),
    ("BOS", "PHV", 500),
    ("BOS", "GFD", 510),
    ("RMS", "BOS", 200),
    ("RMS", "JFK", 210),
    ("RMS", "SBK", 220),
    ("RMS", "MPC", 230),
    ("RMS", "SVP", 240),
    ("RMS", "SHD", 250),
    ("RMS", "SSV", 260),
    ("RMS", "OKD", 270),
    ("RMS", "WLB", 280),
    ("RMS", "CRH", 290),
    ("RMS", "ATV", 300),
    ("RMS", "PHV", 310),
    ("RMS", "GFD", 320),
    ("RMS", "LAX", 330),
    ("SBK", "MPC", 200),
    ("SBK", "SVP", 210),
    ("SBK", "SHD", 220),
    ("SBK", "SSV", 230),
    ("SBK", "OKD", 240),
    ("SBK", "WLB", 250),
    ("SBK", "CRH", 260),
    ("SBK", "ATV", 270),
    ("SBK", "PHV", 280),
    ("SBK", "GFD", 290),
    ("MPC", "SVP", 210),
    ("MPC", "SHD", 220),
    ("MPC", "SSV", 230),
    ("MPC", "OKD", 240),
    ("MPC", "WLB", 250),
    ("MPC", "CRH", 260),
    ("MPC", "ATV", 270),
    ("MPC", "PHV", 280),
    ("MPC", "GFD", 290),
    ("SVP", "SHD", 230),
    ("SVP", "SSV", 240),
    ("SVP", "OKD", 250),
    ("SVP", "WLB", 260),
    ("SVP", "CRH", 270),
    ("SVP", "ATV", 280),
    ("SVP", "PHV", 290),
    ("SVP", "GFD", 300),
    ("SHD", "SSV", 220),
    ("SHD", "OKD", 230),
    ("SHD", "WLB", 240),
    ("SHD", "CRH", 250),
    ("SHD", "ATV", 260),
    ("SHD", "PHV", 270),
    ("SHD", "GFD", 280),
    ("SSV", "OKD", 240),
    ("SSV", "WLB", 250),
    ("SSV", "CRH", 260),
    ("SSV", "ATV", 270),
    ("SSV", "PHV", 280),
    ("SSV", "GFD", 290),
    ("OKD", "WLB", 230),
    ("OKD", "CRH", 240),
    ("OKD", "ATV", 250),
    ("OKD", "PHV", 260),
    ("OKD", "GFD", 270),
    ("WLB", "CRH", 250),
    ("WLB", "ATV", 260),
    ("WLB", "PHV", 270),
    ("WLB", "GFD", 280),
    ("CRH", "ATV", 240),
    ("CRH", "PHV", 250),
    ("CRH", "GFD", 260),
    ("CRH", "SFO", 270),
    ("CRH", "RMS", 280),
    ("CRH", "HKG", 290),
    ("CRH", "JFK", 300),
    ("ATV", "PHV", 230),
    ("ATV", "GFD", 240),
    ("PHV", "GFD", 220),
    ("LHR", "CDG", 100),
    ("OKD", "LAX", 220),
];

const AIRPORTS: &[&str] = &[
    "RMS", "SBK", "MPC", "SVP", "SHD", "CDG", "LHR", "SSV", "OKD", "WLB", "PEK", "HND", "HKG",
    "CIA", "CRH", "ATV", "PHV", "GFD", "SFO", "LAX", "JFK", "ORD", "BOS",
];

const NEAREST: &[(&str, &str)] = &[
    ("Rivermist", "RMS"),
    ("Stonebrook", "SBK"),
    ("Maplecrest", "MPC"),
    ("Silverpine", "SVP"),
    ("Shadowridge", "SHD"),
    ("London", "LHR"),
    ("Paris", "CDG"),
    ("Sunset Valley", "SSV"),
    ("Oakendale", "OKD"),
    ("Willowbend", "WLB"),
    ("Crescent Hollow", "CRH"),
    ("Autumnville", "ATV"),
    ("Pinehaven", "PHV"),
    ("Greenfield", "GFD"),
    ("San Francisco", "SFO"),
    ("Los Angeles", "LAX"),
    ("New York", "JFK"),
    ("Chicago", "ORD"),
    ("Boston", "BOS"),
    ("Beijing", "PEK"),
    ("Hong Kong", "HKG"),
    ("Rome", "CIA"),
    ("Tokyo", "HND"),
];

/// `exchange_rates` of `compute_exchange_rate` (ints stay ints).
const RATES: &[(&str, &str, Option<i64>, f64)] = &[
    ("USD", "RMB", Some(7), 7.0),
    ("USD", "EUR", None, 0.8),
    ("USD", "JPY", Some(110), 110.0),
    ("USD", "GBP", None, 0.7),
    ("USD", "CAD", None, 1.3),
    ("USD", "AUD", None, 1.4),
    ("USD", "INR", Some(70), 70.0),
    ("USD", "RUB", Some(60), 60.0),
    ("USD", "BRL", None, 3.8),
    ("USD", "MXN", Some(20), 20.0),
];

/// `TravelAPI` with its public attributes, `_random` and `_flight_cost_lookup`.
#[derive(Default)]
pub struct TravelApi {
    a: Attrs,
    /// Card ids whose dict is one of [`Globals::travel_shared_cards`].
    shared_cards: Vec<Py>,
    random: Option<PyRandom>,
    flight_cost_lookup: Vec<(String, f64)>,
}

fn error(msg: impl Into<String>) -> Py {
    dict([("error", s(msg))])
}

fn fail(flag: &str, msg: impl Into<String>) -> Py {
    dict([(flag, Py::Bool(false)), ("error", s(msg))])
}

/// `datetime.strptime(text, "%Y-%m-%d")` as `(year, month, day)`, or `None`
/// where Python raises `ValueError` (CPython's `_strptime` patterns:
/// `%Y` = 4 digits, `%m` = `1[0-2]|0[1-9]|[1-9]`, `%d` = `3[01]|[12]\d|0[1-9]|[1-9]| [1-9]`,
/// the whole text matched, then the date validated).
pub fn strptime_ymd(text: &str) -> Option<(i64, i64, i64)> {
    let c: Vec<char> = text.chars().collect();
    if c.len() < 8 || !c[..4].iter().all(|x| x.is_ascii_digit()) || c[4] != '-' {
        return None;
    }
    let year: i64 = c[..4].iter().collect::<String>().parse().ok()?;
    let rest = &c[5..];
    let months = |r: &[char]| -> Vec<(i64, usize)> {
        let mut out = Vec::new();
        let d = |i: usize| r.get(i).and_then(|x| x.to_digit(10)).map(i64::from);
        if let (Some(1), Some(x)) = (d(0), d(1)) {
            if x <= 2 {
                out.push((10 + x, 2));
            }
        }
        if let (Some(0), Some(x)) = (d(0), d(1)) {
            if x >= 1 {
                out.push((x, 2));
            }
        }
        if let Some(x) = d(0) {
            if x >= 1 {
                out.push((x, 1));
            }
        }
        out
    };
    let days = |r: &[char]| -> Option<i64> {
        let d = |i: usize| r.get(i).and_then(|x| x.to_digit(10)).map(i64::from);
        match r.len() {
            2 if r[0] == ' ' => d(1).filter(|x| *x >= 1),
            2 => match (d(0), d(1)) {
                (Some(3), Some(x)) if x <= 1 => Some(30 + x),
                (Some(t), Some(x)) if t == 1 || t == 2 => Some(t * 10 + x),
                (Some(0), Some(x)) if x >= 1 => Some(x),
                _ => None,
            },
            1 => d(0).filter(|x| *x >= 1),
            _ => None,
        }
    };
    for (m, used) in months(rest) {
        if rest.get(used) != Some(&'-') {
            continue;
        }
        if let Some(day) = days(&rest[used + 1..]) {
            if year < 1 || day > i64::from(pysem::date::days_in_month(year, m as u32)) {
                return None;
            }
            return Some((year, m, day));
        }
    }
    None
}

/// Today's date in UTC.
fn today() -> (i64, i64, i64) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (y, m, d) = pysem::date::civil_from_days(secs.div_euclid(86_400));
    (y, i64::from(m), i64::from(d))
}

/// Python `round(x, 2)` for a float.
fn round2(x: f64) -> f64 {
    pysem::num::round(x, 2).unwrap_or(x)
}

impl TravelApi {
    fn lc(&self) -> bool {
        self.a.get("long_context").truthy()
    }

    fn expired(&self) -> bool {
        py_eq(self.a.get("token_expires_in"), &Py::Int(0))
    }

    fn bad_token(&self, token: &Py) -> bool {
        !py_eq(token, self.a.get("access_token"))
    }

    fn randint(&mut self, a: i64, b: i64) -> i64 {
        self.random.as_mut().expect("loaded").randint(a, b)
    }

    fn card_mut(&mut self, card: &Py) -> PyResult<&mut Py> {
        self.a
            .get_mut("credit_card_list")
            .get_key_mut(card)
            .ok_or_else(|| card.repr())
    }

    /// `get_flight_cost`: the cost list, or the `ValueError` text.
    fn flight_cost(
        &mut self,
        from: &Py,
        to: &Py,
        date: &Py,
        class: &Py,
    ) -> PyResult<Result<Py, String>> {
        let (f, t) = (from.as_str(), to.as_str());
        let Some(&(_, _, base)) = BASE_COSTS
            .iter()
            .find(|(x, y, _)| f == Some(x) && t == Some(y))
        else {
            return Ok(Err("No available route for the given airports.".into()));
        };
        let factor = match class.as_str() {
            Some("economy") => 1,
            Some("business") => 2,
            Some("first") => 5,
            _ => {
                return Ok(Err(
                    "Invalid travel class. Options are: economy, business, first.".into(),
                ))
            }
        };
        let Some(date_text) = date.as_str() else {
            return Err(format!("'{}' object is not iterable", date.type_name()));
        };
        let digit_sum: u32 = date_text.chars().filter_map(|c| c.to_digit(10)).sum();
        let mult = if digit_sum.is_multiple_of(2) { 2 } else { 1 };
        let key_tail = format!("{}|{}", class.to_str(), date_text);
        let mut list = Vec::new();
        self.flight_cost_lookup.clear();
        if self.lc() {
            for (x, y, b) in BASE_COSTS {
                let cost = (b * factor * mult) as f64;
                let key = format!("{x}|{y}|{key_tail}");
                match self.flight_cost_lookup.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = cost,
                    None => self.flight_cost_lookup.push((key, cost)),
                }
                list.push(Py::Float(cost));
            }
        } else {
            let cost = (base * factor * mult) as f64;
            list.push(Py::Float(cost));
            self.flight_cost_lookup.push((
                format!("{}|{}|{key_tail}", from.to_str(), to.to_str()),
                cost,
            ));
        }
        Ok(Ok(dict([("travel_cost_list", Py::List(list))])))
    }
}

impl Simulator for TravelApi {
    fn load_scenario(&mut self, sc: Py, long_context: bool, g: &mut Globals) {
        if long_context && g.travel_shared_cards.is_none() {
            g.travel_shared_cards = g.long_context.get("CREDIT_CARD_EXTENSION").cloned();
        }
        let data = &g.long_context;
        let seed = match sc.get("random_seed") {
            Some(Py::Int(i)) => *i,
            _ => 141_053,
        };
        self.random = Some(PyRandom::new(seed as i128));
        self.a.set(
            "credit_card_list",
            get_or(&sc, "credit_card_list", Py::Dict(vec![])),
        );
        self.a.set(
            "booking_record",
            get_or(&sc, "booking_record", Py::Dict(vec![])),
        );
        for k in [
            "access_token",
            "token_type",
            "token_expires_in",
            "token_scope",
            "user_first_name",
            "user_last_name",
            "budget_limit",
        ] {
            self.a.set(k, get_or(&sc, k, Py::None));
        }
        self.a.set("long_context", Py::Bool(long_context));
        if long_context {
            if let Some(Py::Dict(items)) = &g.travel_shared_cards {
                for (k, v) in items {
                    if self.a.get("credit_card_list").get_key(k).is_none() {
                        self.a
                            .get_mut("credit_card_list")
                            .set_key(k.clone(), v.clone());
                        self.shared_cards.push(k.clone());
                    }
                }
            }
            // The booking dicts are shared too, but nothing changes them in place.
            if let Some(Py::Dict(items)) = data.get("BOOKING_RECORD_EXTENSION") {
                for (k, v) in items {
                    if self.a.get("booking_record").get_key(k).is_none() {
                        self.a
                            .get_mut("booking_record")
                            .set_key(k.clone(), v.clone());
                    }
                }
            }
        }
    }

    fn call(&mut self, method: &str, args: &Args, g: &mut Globals) -> PyResult<Py> {
        self.pull_shared_cards(g);
        let out = self.call_inner(method, args);
        // Push the shared cards back (only balances change in place).
        if let Some(shared) = g.travel_shared_cards.as_mut() {
            for k in &self.shared_cards {
                if let Some(card) = self.a.get("credit_card_list").get_key(k) {
                    shared.set_key(k.clone(), card.clone());
                }
            }
        }
        out
    }

    fn state(&self, g: &Globals) -> Vec<(String, Py)> {
        let mut a = self.a.clone();
        if let Some(shared) = &g.travel_shared_cards {
            for k in &self.shared_cards {
                if let (Some(v), Some(slot)) = (
                    shared.get_key(k),
                    a.get_mut("credit_card_list").get_key_mut(k),
                ) {
                    *slot = v.clone();
                }
            }
        }
        a.public()
    }
}

impl TravelApi {
    fn pull_shared_cards(&mut self, g: &Globals) {
        let Some(shared) = &g.travel_shared_cards else {
            return;
        };
        for k in &self.shared_cards {
            if let (Some(v), Some(slot)) = (
                shared.get_key(k),
                self.a.get_mut("credit_card_list").get_key_mut(k),
            ) {
                *slot = v.clone();
            }
        }
    }

    fn call_inner(&mut self, method: &str, args: &Args) -> PyResult<Py> {
        let q = format!("TravelAPI.{method}");
        match method {
            "authenticate_travel" => {
                let a = args.bind(
                    &q,
                    &[
                        ("client_id", None),
                        ("client_secret", None),
                        ("refresh_token", None),
                        ("grant_type", None),
                        ("user_first_name", None),
                        ("user_last_name", None),
                    ],
                )?;
                self.a.set("token_expires_in", Py::Int(2));
                let token = s(self.randint(100_000, 999_999).to_string());
                self.a.set("access_token", token.clone());
                self.a.set("token_type", s("Bearer"));
                self.a.set("token_scope", a[3].clone());
                self.a.set("user_first_name", a[4].clone());
                self.a.set("user_last_name", a[5].clone());
                Ok(dict([
                    ("expires_in", Py::Int(2)),
                    ("access_token", token),
                    ("token_type", s("Bearer")),
                    ("scope", a[3].clone()),
                ]))
            }
            "travel_get_login_status" => {
                args.bind(&q, &[])?;
                let t = self.a.get("token_expires_in");
                let not_logged = matches!(t, Py::None) || py_eq(t, &Py::Int(0));
                Ok(dict([("status", Py::Bool(!not_logged))]))
            }
            "get_budget_fiscal_year" => {
                args.bind(
                    &q,
                    &[
                        ("lastModifiedAfter", Some(Py::None)),
                        ("includeRemoved", Some(Py::None)),
                    ],
                )?;
                Ok(dict([("budget_fiscal_year", s("2018"))]))
            }
            "register_credit_card" => {
                let a = args.bind(
                    &q,
                    &[
                        ("access_token", None),
                        ("card_number", None),
                        ("expiration_date", None),
                        ("cardholder_name", None),
                        ("card_verification_number", None),
                    ],
                )?;
                if matches!(self.a.get("token_expires_in"), Py::None) {
                    return Ok(error("Token not initialized"));
                }
                if self.expired() {
                    return Ok(error("Token expired"));
                }
                if self.bad_token(&a[0]) {
                    return Ok(error("Invalid access token"));
                }
                if contains(self.a.get("credit_card_list"), &a[1])? {
                    return Ok(error("Card already registered"));
                }
                let card_id = s(self.randint(100_000_000_000, 999_999_999_999).to_string());
                let balance = self.randint(10_000, 99_999);
                let card = dict([
                    ("card_number", a[1].clone()),
                    ("expiration_date", a[2].clone()),
                    ("cardholder_name", a[3].clone()),
                    ("card_verification_number", a[4].clone()),
                    ("balance", Py::Int(balance)),
                ]);
                self.a
                    .get_mut("credit_card_list")
                    .set_key(card_id.clone(), card);
                Ok(dict([("card_id", card_id)]))
            }
            "get_flight_cost" => {
                let a = args.bind(
                    &q,
                    &[
                        ("travel_from", None),
                        ("travel_to", None),
                        ("travel_date", None),
                        ("travel_class", None),
                    ],
                )?;
                self.flight_cost(&a[0], &a[1], &a[2], &a[3])?
            }
            "get_credit_card_balance" => {
                let a = args.bind(&q, &[("access_token", None), ("card_id", None)])?;
                if self.expired() {
                    return Ok(error("Token expired"));
                }
                if self.bad_token(&a[0]) {
                    return Ok(error("Invalid access token"));
                }
                let cards = self.a.get("credit_card_list");
                let Some(card) = cards.get_key(&a[1]) else {
                    let keys = match cards {
                        Py::Dict(items) => items.iter().map(|(k, _)| k.clone()).collect(),
                        _ => Vec::new(),
                    };
                    return Ok(error(format!(
                        "Card not registered. Here are a list of card_id's: {}",
                        Py::List(keys).repr()
                    )));
                };
                Ok(dict([(
                    "card_balance",
                    card.get("balance").cloned().ok_or("'balance'")?,
                )]))
            }
            "book_flight" => {
                let a = args.bind(
                    &q,
                    &[
                        ("access_token", None),
                        ("card_id", None),
                        ("travel_date", None),
                        ("travel_from", None),
                        ("travel_to", None),
                        ("travel_class", None),
                    ],
                )?;
                let f = "booking_status";
                if self.expired() {
                    return Ok(fail(f, "Token expired"));
                }
                if self.bad_token(&a[0]) {
                    return Ok(fail(f, "Invalid access token"));
                }
                let Some(card) = self.a.get("credit_card_list").get_key(&a[1]) else {
                    return Ok(fail(f, "Card not registered"));
                };
                if !contains(card, &s("balance"))? {
                    return Ok(fail(f, "Balance not found"));
                }
                let airports = Py::List(AIRPORTS.iter().map(|x| s(*x)).collect());
                if !contains(&airports, &a[3])? {
                    return Ok(fail(
                        f,
                        format!("Invalid departure airport code: {}", a[3].to_str()),
                    ));
                }
                if !contains(&airports, &a[4])? {
                    return Ok(fail(
                        f,
                        format!("Invalid destination airport code: {}", a[4].to_str()),
                    ));
                }
                let Some(date) = a[2].as_str() else {
                    return Err(format!(
                        "strptime() argument 1 must be str, not {}",
                        a[2].type_name()
                    ));
                };
                if strptime_ymd(date).is_none() {
                    return Ok(fail(f, "Invalid date format. Use YYYY-MM-DD."));
                }
                if !matches!(a[5].as_str(), Some("economy" | "business" | "first")) {
                    // Python prints a set of str here: its order depends on the
                    // process's string hashing (PYTHONHASHSEED), so no fixed
                    // text matches every run; this is one of the six orders.
                    return Ok(fail(
                        f,
                        "Invalid travel class. Must be one of {'economy', 'business', 'first'}",
                    ));
                }
                if let Err(e) = self.flight_cost(&a[3], &a[4], &a[2], &a[5])? {
                    return Ok(fail(f, e));
                }
                let key = format!(
                    "{}|{}|{}|{}",
                    a[3].to_str(),
                    a[4].to_str(),
                    a[5].to_str(),
                    date
                );
                let Some(cost) = self
                    .flight_cost_lookup
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|x| x.1)
                else {
                    return Ok(fail(f, "No available route for the given parameters"));
                };
                let cost = Py::Float(cost);
                let balance = self
                    .card_mut(&a[1])?
                    .get("balance")
                    .cloned()
                    .ok_or("'balance'")?;
                if lt(&balance, &cost)? {
                    return Ok(fail(f, "Insufficient funds"));
                }
                let budget = self.a.get("budget_limit").clone();
                if !matches!(budget, Py::None) && lt(&balance, &budget)? {
                    return Ok(fail(f, "Balance is less than budget limit"));
                }
                let nb = arith(&balance, Op::Sub, &cost)?;
                self.card_mut(&a[1])?.set("balance", nb);
                let booking_id = s(self.randint(1_000_000, 9_999_999).to_string());
                let transaction_id = s(self.randint(10_000_000, 99_999_999).to_string());
                let record = dict([
                    ("card_id", a[1].clone()),
                    ("travel_date", a[2].clone()),
                    ("travel_from", a[3].clone()),
                    ("travel_to", a[4].clone()),
                    ("travel_class", a[5].clone()),
                    ("travel_cost", cost),
                    ("transaction_id", transaction_id.clone()),
                ]);
                self.a
                    .get_mut("booking_record")
                    .set_key(booking_id.clone(), record);
                let history = if self.lc() {
                    self.a.get("booking_record").clone()
                } else {
                    Py::Dict(vec![])
                };
                Ok(dict([
                    ("booking_id", booking_id),
                    ("transaction_id", transaction_id),
                    ("booking_status", Py::Bool(true)),
                    ("booking_history", history),
                ]))
            }
            "retrieve_invoice" => {
                let a = args.bind(
                    &q,
                    &[
                        ("access_token", None),
                        ("booking_id", Some(Py::None)),
                        ("insurance_id", Some(Py::None)),
                    ],
                )?;
                if self.expired() {
                    return Ok(error("Token expired"));
                }
                if self.bad_token(&a[0]) {
                    return Ok(error("Invalid access token"));
                }
                let Some(rec) = self.a.get("booking_record").get_key(&a[1]) else {
                    return Ok(error("Booking not found"));
                };
                let mut invoice = dict([("booking_id", a[1].clone())]);
                for k in [
                    "travel_date",
                    "travel_from",
                    "travel_to",
                    "travel_class",
                    "travel_cost",
                    "transaction_id",
                ] {
                    invoice.set(k, rec.get(k).cloned().ok_or_else(|| format!("'{k}'"))?);
                }
                Ok(dict([("invoice", invoice)]))
            }
            "get_booking_history" => {
                let a = args.bind(&q, &[("access_token", None)])?;
                if self.expired() {
                    return Ok(error("Token expired"));
                }
                if self.bad_token(&a[0]) {
                    return Ok(error("Invalid access token"));
                }
                Ok(dict([(
                    "booking_history",
                    self.a.get("booking_record").clone(),
                )]))
            }
            "list_all_airports" => {
                args.bind(&q, &[])?;
                Ok(Py::List(AIRPORTS.iter().map(|x| s(*x)).collect()))
            }
            "cancel_booking" => {
                let a = args.bind(&q, &[("access_token", None), ("booking_id", None)])?;
                let f = "cancel_status";
                if self.expired() {
                    return Ok(fail(f, "Token expired"));
                }
                if self.bad_token(&a[0]) {
                    return Ok(fail(f, "Invalid access token"));
                }
                let Some(rec) = self.a.get("booking_record").get_key(&a[1]).cloned() else {
                    return Ok(fail(f, "Booking not found"));
                };
                let card_id = rec.get("card_id").cloned().ok_or("'card_id'")?;
                let cost = rec.get("travel_cost").cloned().ok_or("'travel_cost'")?;
                let card = self.card_mut(&card_id)?;
                let balance = card.get("balance").cloned().ok_or("'balance'")?;
                card.set("balance", arith(&balance, Op::Add, &cost)?);
                self.a.get_mut("booking_record").del_key(&a[1]);
                Ok(dict([(f, Py::Bool(true))]))
            }
            "compute_exchange_rate" => {
                let a = args.bind(
                    &q,
                    &[
                        ("base_currency", None),
                        ("target_currency", None),
                        ("value", None),
                    ],
                )?;
                let (b, t) = (a[0].as_str(), a[1].as_str());
                for (x, y, int_rate, rate) in RATES {
                    let r = int_rate.map_or(Py::Float(*rate), Py::Int);
                    if b == Some(x) && t == Some(y) {
                        let v = arith(&a[2], Op::Mul, &r)?;
                        return Ok(dict([("exchanged_value", Py::Float(to_float(&v)?))]));
                    }
                    if b == Some(y) && t == Some(x) {
                        let v = arith(&a[2], Op::Div, &r)?;
                        let Py::Float(v) = v else {
                            return not_ported("round of a non-float");
                        };
                        return Ok(dict([("exchanged_value", Py::Float(round2(v)))]));
                    }
                }
                Err("No available exchange rate for the given currencies.".into())
            }
            "verify_traveler_information" => {
                let a = args.bind(
                    &q,
                    &[
                        ("first_name", None),
                        ("last_name", None),
                        ("date_of_birth", None),
                        ("passport_number", None),
                    ],
                )?;
                let first = self.a.get("user_first_name").clone();
                let last = self.a.get("user_last_name").clone();
                let f = "verification_status";
                let failure =
                    |msg: String| dict([(f, Py::Bool(false)), ("verification_failure", s(msg))]);
                if !py_eq(&first, &a[0]) || !py_eq(&last, &a[1]) {
                    return Ok(failure(format!(
                        "Cannot book flight information for another user.Expected {} {}, got {} {}",
                        first.to_str(),
                        last.to_str(),
                        a[0].to_str(),
                        a[1].to_str()
                    )));
                }
                let Some(dob) = a[2].as_str() else {
                    return Err(format!(
                        "strptime() argument 1 must be str, not {}",
                        a[2].type_name()
                    ));
                };
                let Some((y, m, d)) = strptime_ymd(dob) else {
                    return Ok(failure(
                        "Invalid date of birth format. Please use YYYY-MM-DD.".into(),
                    ));
                };
                let (ty, tm, td) = today();
                let age = ty - y - i64::from((tm, td) < (m, d));
                if age < 18 {
                    return Ok(failure("Traveler must be at least 18 years old.".into()));
                }
                let Some(passport) = a[3].as_str() else {
                    return Err(format!(
                        "'{}' object has no attribute 'startswith'",
                        a[3].type_name()
                    ));
                };
                if !passport.starts_with("US") {
                    return Ok(failure(
                        "Passport must be issued by the United States.".into(),
                    ));
                }
                Ok(dict([(f, Py::Bool(true))]))
            }
            "set_budget_limit" => {
                let a = args.bind(&q, &[("access_token", None), ("budget_limit", None)])?;
                if self.expired() {
                    return Ok(error("Token expired"));
                }
                if self.bad_token(&a[0]) {
                    return Ok(error("Invalid access token"));
                }
                let v = Py::Float(to_float(&a[1])?);
                self.a.set("budget_limit", v.clone());
                Ok(dict([("budget_limit", v)]))
            }
            "get_nearest_airport_by_city" => {
                let a = args.bind(&q, &[("location", None)])?;
                let code = NEAREST
                    .iter()
                    .find(|(c, _)| a[0].as_str() == Some(c))
                    .map_or("Unknown", |(_, x)| x);
                Ok(dict([("nearest_airport", s(code))]))
            }
            "purchase_insurance" => {
                let a = args.bind(
                    &q,
                    &[
                        ("access_token", None),
                        ("insurance_type", None),
                        ("booking_id", None),
                        ("insurance_cost", None),
                        ("card_id", None),
                    ],
                )?;
                let f = "insurance_status";
                if self.expired() {
                    return Ok(fail(f, "Token expired"));
                }
                if self.bad_token(&a[0]) {
                    return Ok(fail(f, "Invalid access token"));
                }
                let budget = self.a.get("budget_limit").clone();
                if !matches!(budget, Py::None) && lt(&budget, &a[3])? {
                    return Ok(fail(f, "Exceeded budget limit"));
                }
                if !contains(self.a.get("booking_record"), &a[2])? {
                    return Ok(fail(f, "Booking not found"));
                }
                if !contains(self.a.get("credit_card_list"), &a[4])? {
                    return Ok(fail(f, "Credit card not registered"));
                }
                let card = self.card_mut(&a[4])?;
                let balance = card.get("balance").cloned().ok_or("'balance'")?;
                card.set("balance", arith(&balance, Op::Sub, &a[3])?);
                let id = s(self.randint(100_000_000, 999_999_999).to_string());
                Ok(dict([("insurance_id", id), (f, Py::Bool(true))]))
            }
            "contact_customer_support" => {
                let a = args.bind(&q, &[("booking_id", None), ("message", None)])?;
                if !contains(self.a.get("booking_record"), &a[0])? {
                    return Ok(error("Booking not found"));
                }
                Ok(dict([(
                    "customer_support_message",
                    s("Thank you for contacting customer support. Your message has been received and we will get back to you shortly."),
                )]))
            }
            "get_all_credit_cards" => {
                args.bind(&q, &[])?;
                Ok(dict([(
                    "credit_card_list",
                    self.a.get("credit_card_list").clone(),
                )]))
            }
            _ => not_ported(method),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::strptime_ymd;

    #[test]
    fn strptime_like_cpython() {
        assert_eq!(strptime_ymd("2024-11-15"), Some((2024, 11, 15)));
        assert_eq!(strptime_ymd("2024-1-5"), Some((2024, 1, 5)));
        assert_eq!(strptime_ymd("2024-02-30"), None);
        assert_eq!(strptime_ymd("2024-13-01"), None);
        assert_eq!(strptime_ymd("24-01-01"), None);
    }
}
