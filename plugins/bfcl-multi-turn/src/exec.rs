//! `execute_multi_turn_func_call` for one test entry: instances created from
//! `initial_config` on first use and kept across turns, each call string
//! rewritten, checked against the blocklist, evaluated and stringified.

use crate::call::{self, Callee, Parsed};
use crate::py::{from_json, Py};
use crate::sim::{self, Globals, Simulator};

/// An instance's public attributes, in assignment order.
pub type State = Vec<(String, Py)>;

/// The result of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The string BFCL records (a result or `Error during execution: …`).
    Result(String),
    /// The call reaches a class this port does not simulate yet, or an
    /// expression it does not evaluate.
    NotPorted(String),
}

struct Instance {
    class: String,
    name: String,
    sim: Option<Box<dyn Simulator>>,
}

/// The persistent instances of one entry for one run (`model_name` plus
/// `_eval` in the checker; ground truth uses `<model>_ground_truth`).
pub struct Session {
    model_name: String,
    test_id: String,
    long_context: bool,
    initial_config: Py,
    instances: Vec<Instance>,
}

/// `re.sub(r'[-./:]', '_', f"{model}_{test_id}_{class}_instance")`.
pub fn instance_name(model_name: &str, test_id: &str, class: &str) -> String {
    format!("{model_name}_{test_id}_{class}_instance")
        .chars()
        .map(|c| {
            if matches!(c, '-' | '.' | '/' | ':') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

impl Session {
    /// A session; `model_name` is the final one (with `_eval` when the
    /// checker sets `is_evaL_run`).
    pub fn new(
        model_name: &str,
        test_id: &str,
        initial_config: &serde_json::Value,
        long_context: bool,
    ) -> Session {
        Session {
            model_name: model_name.into(),
            test_id: test_id.into(),
            long_context,
            initial_config: from_json(initial_config),
            instances: Vec::new(),
        }
    }

    fn ensure(&mut self, class: &str, g: &mut Globals) {
        if self.instances.iter().any(|i| i.class == class) {
            return;
        }
        let mut sim = sim::new_instance(class);
        if let Some(s) = sim.as_mut() {
            if !sim::is_stateless(class) {
                let cfg = self
                    .initial_config
                    .get(class)
                    .cloned()
                    .unwrap_or(Py::Dict(vec![]));
                s.load_scenario(cfg, self.long_context, g);
            }
        }
        self.instances.push(Instance {
            class: class.into(),
            name: instance_name(&self.model_name, &self.test_id, class),
            sim,
        });
    }

    /// Runs one step's call strings (`func_call_list`) with the classes of
    /// `involved_classes`; `g` stands for the Python process's globals.
    pub fn execute(
        &mut self,
        calls: &[String],
        involved: &[String],
        g: &mut Globals,
    ) -> Vec<Outcome> {
        for c in involved {
            self.ensure(c, g);
        }
        // method name -> instance name; later classes win, as in the dict.
        let mut mapping: Vec<(&'static str, String)> = Vec::new();
        for c in involved {
            let inst = instance_name(&self.model_name, &self.test_id, c);
            for m in sim::methods_of(c) {
                match mapping.iter_mut().find(|(n, _)| n == m) {
                    Some(slot) => slot.1 = inst.clone(),
                    None => mapping.push((m, inst.clone())),
                }
            }
        }
        let lookup = |name: &str| {
            mapping
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, i)| i.clone())
        };
        calls
            .iter()
            .map(|c| {
                let rewritten = call::rewrite(c, &lookup);
                self.eval(&rewritten, g)
            })
            .collect()
    }

    fn eval(&mut self, rewritten: &str, g: &mut Globals) -> Outcome {
        let err = |e: String| Outcome::Result(format!("Error during execution: {e}"));
        if let Some(e) = call::blocked(rewritten) {
            return err(e);
        }
        match call::parse(rewritten) {
            Parsed::Error(e) => err(e),
            Parsed::Unsupported(why) => Outcome::NotPorted(why),
            Parsed::Call(Callee::Name(n), _) => err(format!("name '{n}' is not defined")),
            Parsed::Call(Callee::Method(inst, method), args) => {
                let Some(instance) = self.instances.iter_mut().find(|i| i.name == inst) else {
                    return err(format!("name '{inst}' is not defined"));
                };
                let class = instance.class.clone();
                let Some(sim) = instance.sim.as_mut() else {
                    return Outcome::NotPorted(class);
                };
                if !sim::methods_of(&class).contains(&method.as_str()) {
                    return err(format!("'{class}' object has no attribute '{method}'"));
                }
                match sim.call(&method, &args, g) {
                    Ok(v) => Outcome::Result(stringify(&v)),
                    Err(e) => match e.strip_prefix(sim::NOT_PORTED) {
                        Some(what) => Outcome::NotPorted(format!("{class}: {what}")),
                        None => err(e),
                    },
                }
            }
        }
    }

    /// The public state of every instance created so far, by class; `None`
    /// for classes not ported.
    pub fn states(&self, g: &Globals) -> Vec<(String, Option<State>)> {
        self.instances
            .iter()
            .map(|i| (i.class.clone(), i.sim.as_ref().map(|s| s.state(g))))
            .collect()
    }
}

/// BFCL's stringification of a call result: `str` as is, `dict` through
/// `json.dumps` (falling back to `str`), anything else through `str`.
pub fn stringify(v: &Py) -> String {
    match v {
        Py::Str(s) => s.clone(),
        Py::Dict(_) => v.json_dumps().unwrap_or_else(|| v.repr()),
        other => other.to_str(),
    }
}

/// A canonical text of a state value, as `gen_multi_parity.py`'s `canon`
/// writes it (repr, with set members sorted by their text).
pub fn canon(v: &Py) -> String {
    match v {
        Py::Set(items) if items.is_empty() => "set()".into(),
        Py::Set(items) => {
            let mut parts: Vec<String> = items.iter().map(canon).collect();
            parts.sort();
            format!("{{{}}}", parts.join(", "))
        }
        Py::List(items) => format!(
            "[{}]",
            items.iter().map(canon).collect::<Vec<_>>().join(", ")
        ),
        Py::Tuple(items) if items.len() == 1 => format!("({},)", canon(&items[0])),
        Py::Tuple(items) => format!(
            "({})",
            items.iter().map(canon).collect::<Vec<_>>().join(", ")
        ),
        Py::Dict(items) => format!(
            "{{{}}}",
            items
                .iter()
                .map(|(k, x)| format!("{}: {}", canon(k), canon(x)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Py::Object(class, attrs) => format!(
            "<{class} {{{}}}>",
            attrs
                .iter()
                .map(|(k, x)| format!("{}: {}", crate::py::str_repr(k), canon(x)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.repr(),
    }
}
