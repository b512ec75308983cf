//! `TradingBot` (`trading_bot.py`): stocks, orders, an account and a watch list.
//!
//! Transaction timestamps come from `datetime.fromtimestamp`, i.e. the local
//! time zone of the Python process; the port assumes UTC (as on the machine
//! that produced the parity fixture).

use super::{get_or, not_ported, Attrs, Globals, Simulator};
use crate::call::Args;
use crate::mt::PyRandom;
use crate::py::{
    arith, contains, dict, from_json, gt, le, lt, py_eq, s, to_float, Op, Py, PyResult,
};

/// A constant of `long_context.py`.
fn ext(g: &Globals, name: &str) -> Py {
    g.long_context.get(name).cloned().unwrap_or(Py::None)
}

/// The public methods.
pub const METHODS: &[&str] = &[
    "add_to_watchlist",
    "cancel_order",
    "filter_stocks_by_price",
    "fund_account",
    "get_account_info",
    "get_available_stocks",
    "get_current_time",
    "get_order_details",
    "get_order_history",
    "get_stock_info",
    "get_symbol_by_name",
    "get_transaction_history",
    "get_watchlist",
    "notify_price_change",
    "place_order",
    "remove_stock_from_watchlist",
    "trading_get_login_status",
    "trading_login",
    "trading_logout",
    "withdraw_funds",
];

/// `DEFAULT_STATE` (order keys as text; `_load_scenario` turns them into ints).
const DEFAULT_STATE: &str = r#"{"orders": {"12345": {"id": 12345, "order_type": "Buy", "symbol": "AAPL", "price": 210.65, "amount": 10, "status": "Completed"}, "12446": {"id": 12446, "order_type": "Sell", "symbol": "GOOG", "price": 2840.56, "amount": 5, "status": "Pending"}}, "account_info": {"account_id": 12345, "balance": 10000.0, "binding_card": 1974202140965533}, "authenticated": false, "market_status": "Closed", "order_counter": 12446, "stocks": {"AAPL": {"price": 227.16, "percent_change": 0.17, "volume": 2.552, "MA(5)": 227.11, "MA(20)": 227.09}, "GOOG": {"price": 2840.34, "percent_change": 0.24, "volume": 1.123, "MA(5)": 2835.67, "MA(20)": 2842.15}, "TSLA": {"price": 667.92, "percent_change": -0.12, "volume": 1.654, "MA(5)": 671.15, "MA(20)": 668.2}, "MSFT": {"price": 310.23, "percent_change": 0.09, "volume": 3.234, "MA(5)": 309.88, "MA(20)": 310.11}, "NVDA": {"price": 220.34, "percent_change": 0.34, "volume": 1.234, "MA(5)": 220.45, "MA(20)": 220.67}, "ALPH": {"price": 1320.45, "percent_change": -0.08, "volume": 1.567, "MA(5)": 1321.12, "MA(20)": 1325.78}, "OMEG": {"price": 457.23, "percent_change": 0.12, "volume": 2.345, "MA(5)": 456.78, "MA(20)": 458.12}, "QUAS": {"price": 725.89, "percent_change": -0.03, "volume": 1.789, "MA(5)": 726.45, "MA(20)": 728.0}, "NEPT": {"price": 88.34, "percent_change": 0.19, "volume": 0.654, "MA(5)": 88.21, "MA(20)": 88.67}, "SYNX": {"price": 345.67, "percent_change": 0.11, "volume": 2.112, "MA(5)": 345.34, "MA(20)": 346.12}, "ZETA": {"price": 22.09, "percent_change": -0.05, "volume": 0.789, "MA(5)": 22.12, "MA(20)": 22.34}}, "watch_list": ["NVDA"], "transaction_history": [], "random_seed": 1053520}"#;

/// `int(CURRENT_TIME.timestamp())` in UTC: 2024-09-01 10:30:00.
const CURRENT_TIMESTAMP: i64 = 1_725_186_600;

const SYMBOLS: &[(&str, &str)] = &[
    ("Apple", "AAPL"),
    ("Google", "GOOG"),
    ("Tesla", "TSLA"),
    ("Microsoft", "MSFT"),
    ("Nvidia", "NVDA"),
    ("Zeta Corp", "ZETA"),
    ("Alpha Tech", "ALPH"),
    ("Omega Industries", "OMEG"),
    ("Quasar Ltd.", "QUAS"),
    ("Neptune Systems", "NEPT"),
    ("Synex Solutions", "SYNX"),
    ("Amazon", "AMZN"),
    ("Gorilla", "GORI"),
];

/// `TradingBot` with its public attributes and `_random`.
#[derive(Default)]
pub struct TradingBot {
    a: Attrs,
    random: Option<PyRandom>,
}

fn error(msg: String) -> Py {
    dict([("error", s(msg))])
}

/// Python `format(x, ".2f")` for an int or float.
fn fmt2(v: &Py) -> PyResult<String> {
    match v {
        Py::Int(_) | Py::Bool(_) | Py::Float(_) => Ok(format!("{:.2}", v.as_f64().unwrap_or(0.0))),
        o => Err(format!(
            "Unknown format code 'f' for object of type '{}'",
            o.type_name()
        )),
    }
}

/// `template.format(symbol=symbol)`: `{symbol}` replaced, `{{`/`}}` unescaped;
/// `Err(name)` for another field (Python's `KeyError`).
fn format_symbol(template: &str, symbol: &str) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut it = template.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '{' if it.peek() == Some(&'{') => {
                it.next();
                out.push('{');
            }
            '}' if it.peek() == Some(&'}') => {
                it.next();
                out.push('}');
            }
            '{' => {
                let mut field = String::new();
                for d in it.by_ref() {
                    if d == '}' {
                        break;
                    }
                    field.push(d);
                }
                if field == "symbol" {
                    out.push_str(symbol);
                } else {
                    return Err(field);
                }
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// `datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")` in UTC.
fn timestamp_text(ts: i64) -> String {
    let ((y, m, d), (hh, mm, ss)) = pysem::date::utc_from_timestamp(ts);
    format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}")
}

/// `isinstance(k, str) and k.isdigit()` → `int(k)`.
fn order_key(k: Py) -> Py {
    match &k {
        Py::Str(t) if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) => {
            t.parse().map(Py::Int).unwrap_or(k)
        }
        _ => k,
    }
}

impl TradingBot {
    fn lc(&self) -> bool {
        self.a.get("long_context").truthy()
    }

    fn timestamp(&mut self) -> String {
        let r = self.random.as_mut().expect("loaded");
        timestamp_text(r.randint(CURRENT_TIMESTAMP, CURRENT_TIMESTAMP + 86_400))
    }

    fn list_mut(&mut self, name: &str) -> PyResult<&mut Vec<Py>> {
        match self.a.get_mut(name) {
            Py::List(v) => Ok(v),
            _ => not_ported(&format!("{name} that is not a list")),
        }
    }

    fn transaction(&mut self, kind: &str, amount: &Py) -> PyResult<()> {
        let ts = self.timestamp();
        let entry = dict([
            ("type", s(kind)),
            ("amount", amount.clone()),
            ("timestamp", s(ts)),
        ]);
        self.list_mut("transaction_history")?.push(entry);
        Ok(())
    }
}

impl Simulator for TradingBot {
    fn load_scenario(&mut self, sc: Py, long_context: bool, _: &mut Globals) {
        thread_local! {
            // Parsed once: every entry that involves the class loads it twice.
            static DEFAULT: Py = from_json(&serde_json::from_str(DEFAULT_STATE).expect("default state"));
        }
        let d = |k: &str| DEFAULT.with(|def| def.get(k).cloned().unwrap_or(Py::None));
        let orders = get_or(&sc, "orders", d("orders"));
        let orders = match orders {
            Py::Dict(items) => {
                let mut out = Py::Dict(vec![]);
                for (k, v) in items {
                    out.set_key(order_key(k), v);
                }
                out
            }
            o => o,
        };
        self.a.set("orders", orders);
        for k in [
            "account_info",
            "authenticated",
            "market_status",
            "order_counter",
            "stocks",
            "watch_list",
            "transaction_history",
        ] {
            self.a.set(k, get_or(&sc, k, d(k)));
        }
        self.a.set("long_context", Py::Bool(long_context));
        let seed = match sc.get("random_seed") {
            Some(Py::Int(i)) => *i,
            _ => 1_053_520,
        };
        self.random = Some(PyRandom::new(seed as i128));
    }

    fn call(&mut self, method: &str, args: &Args, g: &mut Globals) -> PyResult<Py> {
        let q = format!("TradingBot.{method}");
        let authed = self.a.get("authenticated").truthy();
        let lc = self.lc();
        match method {
            "get_current_time" => {
                args.bind(&q, &[])?;
                Ok(dict([("current_time", s("10:30 AM"))]))
            }
            "get_symbol_by_name" => {
                let a = args.bind(&q, &[("name", None)])?;
                let sym = SYMBOLS
                    .iter()
                    .find(|(n, _)| a[0].as_str() == Some(n))
                    .map_or("Stock not found", |(_, s)| s);
                Ok(dict([("symbol", s(sym))]))
            }
            "get_stock_info" => {
                let a = args.bind(&q, &[("symbol", None)])?;
                let Some(stock) = self.a.get("stocks").get_key(&a[0]).cloned() else {
                    return Ok(error(format!(
                        "Stock with symbol '{}' not found.",
                        a[0].to_str()
                    )));
                };
                if lc {
                    let mut stock = stock;
                    stock.set("MA(5)", ext(g, "MA_5_EXTENSION"));
                    stock.set("MA(20)", ext(g, "MA_20_EXTENSION"));
                    return Ok(stock);
                }
                Ok(stock)
            }
            "get_order_details" => {
                let a = args.bind(&q, &[("order_id", None)])?;
                let orders = self.a.get("orders");
                let Some(order) = orders.get_key(&a[0]).cloned() else {
                    let keys = match orders {
                        Py::Dict(items) => items.iter().map(|(k, _)| k.clone()).collect(),
                        _ => Vec::new(),
                    };
                    return Ok(error(format!(
                        "Order with ID {} not found.Here is the list of orders_id: {}",
                        a[0].to_str(),
                        Py::List(keys).repr()
                    )));
                };
                if lc {
                    let mut order = order;
                    let symbol = order.get("symbol").ok_or("'symbol'")?.to_str();
                    let mut meta = Py::Dict(vec![]);
                    if let Py::Dict(items) = ext(g, "ORDER_DETAIL_EXTENSION") {
                        for (k, v) in items {
                            match format_symbol(&v.to_str(), &symbol) {
                                Ok(t) => meta.set_key(k, s(t)),
                                Err(field) => {
                                    return Ok(error(format!(
                                        "KeyError during formatting: '{field}'"
                                    )))
                                }
                            }
                        }
                    }
                    order.set("metadata", meta);
                    return Ok(order);
                }
                Ok(order)
            }
            "cancel_order" => {
                let a = args.bind(&q, &[("order_id", None)])?;
                let id = a[0].to_str();
                let Some(order) = self.a.get_mut("orders").get_key_mut(&a[0]) else {
                    return Ok(error(format!("Order with ID {id} not found.")));
                };
                if py_eq(order.get("status").ok_or("'status'")?, &s("Completed")) {
                    return Ok(error(format!(
                        "Can't cancel order {id}. Order is already completed."
                    )));
                }
                order.set("status", s("Cancelled"));
                Ok(dict([
                    ("order_id", a[0].clone()),
                    ("status", s("Cancelled")),
                ]))
            }
            "place_order" => {
                let a = args.bind(
                    &q,
                    &[
                        ("order_type", None),
                        ("symbol", None),
                        ("price", None),
                        ("amount", None),
                    ],
                )?;
                if !authed {
                    return Ok(error(
                        "User not authenticated. Please log in to place an order.".into(),
                    ));
                }
                if !contains(self.a.get("stocks"), &a[1])? {
                    return Ok(error(format!("Invalid stock symbol: {}", a[1].to_str())));
                }
                if le(&a[2], &Py::Int(0))? || le(&a[3], &Py::Int(0))? {
                    return Ok(error("Price and amount must be positive values.".into()));
                }
                let Some(kind) = a[0].as_str() else {
                    return Err(format!(
                        "'{}' object has no attribute 'lower'",
                        a[0].type_name()
                    ));
                };
                if kind.to_lowercase() == "buy" {
                    let n = match &a[3] {
                        Py::Int(i) => *i,
                        Py::Bool(b) => *b as i64,
                        Py::Float(f) => f.trunc() as i64,
                        _ => return not_ported("place_order with a non-numeric amount"),
                    };
                    let cost = Py::Float(to_float(&a[2])? * n as f64);
                    let balance = self
                        .a
                        .get("account_info")
                        .get("balance")
                        .cloned()
                        .unwrap_or(Py::Int(0));
                    if gt(&cost, &balance)? {
                        return Ok(error(format!(
                            "Insufficient funds: required ${} but only ${} available.",
                            fmt2(&cost)?,
                            fmt2(&balance)?
                        )));
                    }
                }
                let price = Py::Float(to_float(&a[2])?);
                let id = self.a.get("order_counter").clone();
                let order = dict([
                    ("id", id.clone()),
                    ("order_type", a[0].clone()),
                    ("symbol", a[1].clone()),
                    ("price", price.clone()),
                    ("amount", a[3].clone()),
                    ("status", s("Open")),
                ]);
                self.a.get_mut("orders").set_key(id.clone(), order);
                self.a
                    .set("order_counter", arith(&id, Op::Add, &Py::Int(1))?);
                Ok(dict([
                    ("order_id", id),
                    ("order_type", a[0].clone()),
                    ("status", s("Pending")),
                    ("price", price),
                    ("amount", a[3].clone()),
                ]))
            }
            "withdraw_funds" | "fund_account" => {
                let a = args.bind(&q, &[("amount", None)])?;
                let withdraw = method == "withdraw_funds";
                if !authed {
                    return Ok(error(format!(
                        "User not authenticated. Please log in to {}.",
                        if withdraw {
                            "make a transaction"
                        } else {
                            "fund the account"
                        }
                    )));
                }
                if withdraw && !py_eq(self.a.get("market_status"), &s("Open")) {
                    return Ok(error(
                        "Market is closed. Transactions are not allowed.".into(),
                    ));
                }
                if le(&a[0], &Py::Int(0))? {
                    return Ok(error(
                        if withdraw {
                            "Transaction amount must be positive."
                        } else {
                            "Funding amount must be positive."
                        }
                        .into(),
                    ));
                }
                let balance = self
                    .a
                    .get("account_info")
                    .get("balance")
                    .cloned()
                    .ok_or("'balance'")?;
                if withdraw && gt(&a[0], &balance)? {
                    return Ok(error("Insufficient funds for withdrawal.".into()));
                }
                let op = if withdraw { Op::Sub } else { Op::Add };
                let nb = arith(&balance, op, &a[0])?;
                self.a.get_mut("account_info").set("balance", nb.clone());
                self.transaction(if withdraw { "withdrawal" } else { "deposit" }, &a[0])?;
                Ok(dict([
                    (
                        "status",
                        s(if withdraw {
                            "Withdrawal successful"
                        } else {
                            "Account funded successfully"
                        }),
                    ),
                    ("new_balance", nb),
                ]))
            }
            "get_account_info" => {
                args.bind(&q, &[])?;
                if !authed {
                    return Ok(error(
                        "User not authenticated. Please log in to view account information.".into(),
                    ));
                }
                Ok(self.a.get("account_info").clone())
            }
            "trading_login" => {
                args.bind(&q, &[("username", None), ("password", None)])?;
                if authed {
                    return Ok(dict([("status", s("Already logged in"))]));
                }
                self.a.set("authenticated", Py::Bool(true));
                Ok(dict([("status", s("Logged in successfully"))]))
            }
            "trading_get_login_status" => {
                args.bind(&q, &[])?;
                Ok(dict([("status", Py::Bool(authed))]))
            }
            "trading_logout" => {
                args.bind(&q, &[])?;
                if !authed {
                    return Ok(dict([("status", s("No user is currently logged in"))]));
                }
                self.a.set("authenticated", Py::Bool(false));
                Ok(dict([("status", s("Logged out successfully"))]))
            }
            "remove_stock_from_watchlist" => {
                let a = args.bind(&q, &[("symbol", None)])?;
                if !authed {
                    return Ok(error(
                        "User not authenticated. Please log in to modify the watchlist.".into(),
                    ));
                }
                if !contains(self.a.get("watch_list"), &a[0])? {
                    return Ok(error(format!(
                        "Stock {} not found in watchlist.",
                        a[0].to_str()
                    )));
                }
                let list = self.list_mut("watch_list")?;
                if let Some(i) = list.iter().position(|x| py_eq(x, &a[0])) {
                    list.remove(i);
                }
                Ok(dict([(
                    "status",
                    s(format!(
                        "Stock {} removed from watchlist successfully.",
                        a[0].to_str()
                    )),
                )]))
            }
            "get_watchlist" => {
                args.bind(&q, &[])?;
                if !authed {
                    return Ok(Py::List(vec![s(
                        "Error: User not authenticated. Please log in to view the watchlist.",
                    )]));
                }
                if lc {
                    let mut list = self
                        .a
                        .get("watch_list")
                        .items()
                        .cloned()
                        .unwrap_or_default();
                    list.extend(
                        ext(g, "WATCH_LIST_EXTENSION")
                            .items()
                            .cloned()
                            .unwrap_or_default(),
                    );
                    return Ok(Py::List(list));
                }
                Ok(dict([("watchlist", self.a.get("watch_list").clone())]))
            }
            "get_order_history" => {
                args.bind(&q, &[])?;
                if !authed {
                    return Ok(Py::List(vec![error(
                        "User not authenticated. Please log in to view order history.".into(),
                    )]));
                }
                let keys = match self.a.get("orders") {
                    Py::Dict(items) => items.iter().map(|(k, _)| k.clone()).collect(),
                    _ => Vec::new(),
                };
                Ok(dict([("history", Py::List(keys))]))
            }
            "get_transaction_history" => {
                let a = args.bind(
                    &q,
                    &[("start_date", Some(Py::None)), ("end_date", Some(Py::None))],
                )?;
                if !authed {
                    return Ok(Py::List(vec![error(
                        "User not authenticated. Please log in to view transaction history.".into(),
                    )]));
                }
                if a[0].truthy() || a[1].truthy() {
                    return not_ported("get_transaction_history with dates (strptime)");
                }
                let mut list = self
                    .a
                    .get("transaction_history")
                    .items()
                    .cloned()
                    .unwrap_or_default();
                if lc {
                    list.extend(
                        ext(g, "TRANSACTION_HISTORY_EXTENSION")
                            .items()
                            .cloned()
                            .unwrap_or_default(),
                    );
                }
                Ok(dict([("transaction_history", Py::List(list))]))
            }
            "get_available_stocks" => {
                let a = args.bind(&q, &[("sector", None)])?;
                let mut tech: Vec<Py> = ["AAPL", "GOOG", "MSFT", "NVDA"]
                    .iter()
                    .map(|x| s(*x))
                    .collect();
                let mut auto: Vec<Py> = ["TSLA", "F", "GM"].iter().map(|x| s(*x)).collect();
                if lc {
                    tech.extend(
                        ext(g, "TECHNOLOGY_EXTENSION")
                            .items()
                            .cloned()
                            .unwrap_or_default(),
                    );
                    auto.extend(
                        ext(g, "AUTOMOBILE_EXTENSION")
                            .items()
                            .cloned()
                            .unwrap_or_default(),
                    );
                }
                let list = match a[0].as_str() {
                    Some("Technology") => tech,
                    Some("Automobile") => auto,
                    _ => Vec::new(),
                };
                Ok(dict([("stock_list", Py::List(list))]))
            }
            "filter_stocks_by_price" => {
                let a = args.bind(
                    &q,
                    &[("stocks", None), ("min_price", None), ("max_price", None)],
                )?;
                let Some(symbols) = a[0].items().cloned() else {
                    return not_ported("filter_stocks_by_price with non-list stocks");
                };
                let mut out = Vec::new();
                for sym in symbols {
                    let price = self
                        .a
                        .get("stocks")
                        .get_key(&sym)
                        .and_then(|st| st.get("price").cloned())
                        .unwrap_or(Py::Int(0));
                    if le(&a[1], &price)? && le(&price, &a[2])? {
                        out.push(sym);
                    }
                }
                Ok(dict([("filtered_stocks", Py::List(out))]))
            }
            "add_to_watchlist" => {
                let a = args.bind(&q, &[("stock", None)])?;
                if !contains(self.a.get("watch_list"), &a[0])?
                    && contains(self.a.get("stocks"), &a[0])?
                {
                    self.list_mut("watch_list")?.push(a[0].clone());
                }
                Ok(dict([("watchlist", self.a.get("watch_list").clone())]))
            }
            "notify_price_change" => {
                let a = args.bind(&q, &[("stocks", None), ("threshold", None)])?;
                let Some(symbols) = a[0].items().cloned() else {
                    return not_ported("notify_price_change with non-list stocks");
                };
                let mut changed = Vec::new();
                for sym in symbols {
                    let Some(st) = self.a.get("stocks").get_key(&sym) else {
                        continue;
                    };
                    let pc = st.get("percent_change").ok_or("'percent_change'")?;
                    let abs = match pc {
                        Py::Int(i) => Py::Int(i.abs()),
                        Py::Float(f) => Py::Float(f.abs()),
                        o => o.clone(),
                    };
                    if !lt(&abs, &a[1])? {
                        changed.push(sym.to_str());
                    }
                }
                Ok(dict([(
                    "notification",
                    s(if changed.is_empty() {
                        "No significant price changes in the selected stocks.".to_string()
                    } else {
                        format!(
                            "Stocks {} have significant price changes.",
                            changed.join(", ")
                        )
                    }),
                )]))
            }
            _ => not_ported(method),
        }
    }

    fn state(&self, _g: &Globals) -> Vec<(String, Py)> {
        self.a.public()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_format() {
        assert_eq!(timestamp_text(CURRENT_TIMESTAMP), "2024-09-01 10:30:00");
        assert_eq!(
            timestamp_text(CURRENT_TIMESTAMP + 86_400 - 1),
            "2024-09-02 10:29:59"
        );
        assert_eq!(
            format_symbol("{symbol}'s {{x}}", "AAPL").unwrap(),
            "AAPL's {x}"
        );
        assert_eq!(format_symbol("{other}", "A").unwrap_err(), "other");
    }
}
