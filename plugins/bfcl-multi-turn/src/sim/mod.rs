//! The BFCL multi-turn simulated APIs (`func_source_code/*.py`), one module
//! per class. Each keeps its public attributes as Python values so that
//! results and state print exactly as BFCL's do.

use crate::call::Args;
use crate::py::{Py, PyResult};

pub mod file_system;
pub mod math_api;
pub mod message_api;
pub mod ticket_api;
pub mod trading_bot;
pub mod travel_api;
pub mod twitter_api;
pub mod vehicle_control;

/// The padding data of `long_context.py`, by constant name (a dict).
pub type LongContext = Py;

/// What the simulators share through Python module globals within one
/// process (the checker runs every entry, model and ground truth, in one).
#[derive(Debug, Clone, Default)]
pub struct Globals {
    /// `long_context.py`'s constants.
    pub long_context: LongContext,
    /// The mutable default `mentions=[]` of `TwitterAPI.post_tweet`: one
    /// list object, shared by every tweet posted without mentions (in any
    /// instance) and extended by `mention()` on any of them.
    pub twitter_default_mentions: Vec<Py>,
    /// `CREDIT_CARD_EXTENSION`'s card dicts, which every long-context
    /// `TravelAPI` instance adopts by reference: a booking paid with one of
    /// them changes its balance for every instance and later entry.
    pub travel_shared_cards: Option<Py>,
}

impl Globals {
    /// Fresh globals (a new Python process) with the long-context data.
    pub fn new(long_context: LongContext) -> Globals {
        Globals {
            long_context,
            twitter_default_mentions: Vec::new(),
            travel_shared_cards: None,
        }
    }
}

/// One simulated API instance.
pub trait Simulator {
    /// `_load_scenario(deepcopy(initial_config[Class]), long_context)`.
    fn load_scenario(&mut self, scenario: Py, long_context: bool, g: &mut Globals);
    /// Calls a public method; `Err` carries `str(e)` of the exception raised.
    fn call(&mut self, method: &str, args: &Args, g: &mut Globals) -> PyResult<Py>;
    /// The public attributes (`vars()` without `_` names), in assignment order.
    fn state(&self, g: &Globals) -> Vec<(String, Py)>;
}

/// The public methods of every class (`inspect.getmembers(..., ismethod)`
/// without `_` names), ported or not: the name rewriting needs them all.
pub fn methods_of(class: &str) -> &'static [&'static str] {
    match class {
        "GorillaFileSystem" => file_system::METHODS,
        "MathAPI" => math_api::METHODS,
        "MessageAPI" => message_api::METHODS,
        "TwitterAPI" => twitter_api::METHODS,
        "TicketAPI" => ticket_api::METHODS,
        "TradingBot" => trading_bot::METHODS,
        "TravelAPI" => travel_api::METHODS,
        "VehicleControlAPI" => vehicle_control::METHODS,
        _ => &[],
    }
}

/// A fresh instance of a ported class (`class_()`), or `None`.
pub fn new_instance(class: &str) -> Option<Box<dyn Simulator>> {
    Some(match class {
        "MathAPI" => Box::new(math_api::MathApi),
        "GorillaFileSystem" => Box::<file_system::FileSystem>::default(),
        "TradingBot" => Box::<trading_bot::TradingBot>::default(),
        "TravelAPI" => Box::<travel_api::TravelApi>::default(),
        "MessageAPI" => Box::<message_api::MessageApi>::default(),
        "TicketAPI" => Box::<ticket_api::TicketApi>::default(),
        "TwitterAPI" => Box::<twitter_api::TwitterApi>::default(),
        "VehicleControlAPI" => Box::<vehicle_control::VehicleControlApi>::default(),
        _ => return None,
    })
}

/// Whether `_load_scenario` is skipped (`STATELESS_CLASSES`).
pub fn is_stateless(class: &str) -> bool {
    class == "MathAPI"
}

/// `scenario.get(key, default)`.
pub fn get_or(scenario: &Py, key: &str, default: Py) -> Py {
    scenario.get(key).cloned().unwrap_or(default)
}

/// A `KeyError`'s `str(e)`: the repr of the key.
pub fn key_error(key: &Py) -> String {
    key.repr()
}

/// The prefix of an `Err` that means "this path is not ported" rather than
/// a Python exception; the executor reports such calls as not ported.
pub const NOT_PORTED: &str = "\u{0}not ported: ";

/// An instance's attributes (`vars(self)`), in assignment order.
#[derive(Debug, Clone, Default)]
pub struct Attrs(pub Vec<(String, Py)>);

impl Attrs {
    /// `self.name` (`None` before assignment).
    pub fn get(&self, name: &str) -> &Py {
        const NONE: Py = Py::None;
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
            .unwrap_or(&NONE)
    }

    /// Mutable `self.name` (created as `None` if missing).
    pub fn get_mut(&mut self, name: &str) -> &mut Py {
        if let Some(i) = self.0.iter().position(|(k, _)| k == name) {
            return &mut self.0[i].1;
        }
        self.0.push((name.into(), Py::None));
        &mut self.0.last_mut().expect("just pushed").1
    }

    /// `self.name = value`.
    pub fn set(&mut self, name: &str, value: Py) {
        *self.get_mut(name) = value;
    }

    /// The public attributes.
    pub fn public(&self) -> Vec<(String, Py)> {
        self.0
            .iter()
            .filter(|(k, _)| !k.starts_with('_'))
            .cloned()
            .collect()
    }
}

/// `Err` for a method this port has not written.
pub fn not_ported<T>(what: &str) -> PyResult<T> {
    Err(format!("{NOT_PORTED}{what}"))
}
