//! `VehicleControlAPI` (`vehicle_control.py`): a car's doors, engine, brakes,
//! fuel and navigation.

use super::{get_or, not_ported, Attrs, Globals, Simulator};
use crate::call::Args;
use crate::mt::PyRandom;
use crate::py::{arith, dict, gt, le, lt, py_eq, s, to_float, Op, Py, PyResult};

/// A constant of `long_context.py`.
fn ext(g: &Globals, name: &str) -> Py {
    g.long_context.get(name).cloned().unwrap_or(Py::None)
}

/// The public methods.
pub const METHODS: &[&str] = &[
    "activateParkingBrake",
    "adjustClimateControl",
    "check_tire_pressure",
    "displayCarStatus",
    "display_log",
    "estimate_distance",
    "estimate_drive_feasibility_by_mileage",
    "fillFuelTank",
    "find_nearest_tire_shop",
    "gallon_to_liter",
    "get_current_speed",
    "get_outside_temperature_from_google",
    "get_outside_temperature_from_weather_com",
    "get_zipcode_based_on_city",
    "liter_to_gallon",
    "lockDoors",
    "pressBrakePedal",
    "releaseBrakePedal",
    "setCruiseControl",
    "setHeadlights",
    "set_navigation",
    "startEngine",
];

/// `VehicleControlAPI` with its public and private attributes.
#[derive(Default)]
pub struct VehicleControlApi {
    a: Attrs,
    random: Option<PyRandom>,
}

fn error(msg: &str) -> Py {
    dict([("error", s(msg))])
}

const DISTANCES: &[(&str, &str, f64)] = &[
    ("83214", "74532", 750.0),
    ("56108", "62947", 320.0),
    ("71354", "83462", 450.0),
    ("47329", "52013", 290.0),
    ("69238", "51479", 630.0),
    ("94016", "83214", 980.0),
    ("94016", "94704", 600.0),
    ("94704", "08540", 2550.0),
    ("94016", "08540", 1950.0),
    ("62947", "47329", 1053.0),
    ("94016", "62947", 780.0),
    ("74532", "94016", 880.0),
];

const ZIPCODES: &[(&str, &str)] = &[
    ("Rivermist", "83214"),
    ("Stonebrook", "74532"),
    ("Maplecrest", "56108"),
    ("Silverpine", "62947"),
    ("Shadowridge", "71354"),
    ("Sunset Valley", "83462"),
    ("Oakendale", "47329"),
    ("Willowbend", "52013"),
    ("Crescent Hollow", "69238"),
    ("Autumnville", "51479"),
    ("San Francisco", "94016"),
];

impl VehicleControlApi {
    fn long_context(&self) -> bool {
        self.a.get("long_context").truthy()
    }

    fn doors(&self) -> Vec<(Py, Py)> {
        match self.a.get("doorStatus") {
            Py::Dict(items) => items.clone(),
            _ => Vec::new(),
        }
    }
}

impl Simulator for VehicleControlApi {
    fn load_scenario(&mut self, sc: Py, long_context: bool, _: &mut Globals) {
        let seed = match sc.get("random_seed") {
            Some(Py::Int(i)) => *i,
            _ => 141053,
        };
        self.random = Some(PyRandom::new(seed as i128));
        let a = &mut self.a;
        a.set("fuelLevel", get_or(&sc, "fuelLevel", Py::Float(0.0)));
        a.set(
            "batteryVoltage",
            get_or(&sc, "batteryVoltage", Py::Float(12.6)),
        );
        a.set("engine_state", get_or(&sc, "engineState", s("stopped")));
        a.set(
            "remainingUnlockedDoors",
            get_or(&sc, "remainingUnlockedDoors", Py::Int(4)),
        );
        let default_doors = dict(
            ["driver", "passenger", "rear_left", "rear_right"]
                .iter()
                .map(|d| (*d, s("unlocked"))),
        );
        a.set("doorStatus", get_or(&sc, "doorStatus", default_doors));
        let locked = match a.get("doorStatus") {
            Py::Dict(items) => items.iter().filter(|(_, v)| py_eq(v, &s("locked"))).count(),
            _ => 0,
        };
        a.set("remainingUnlockedDoors", Py::Int(4 - locked as i64));
        a.set(
            "acTemperature",
            get_or(&sc, "acTemperature", Py::Float(25.0)),
        );
        a.set("fanSpeed", get_or(&sc, "fanSpeed", Py::Int(50)));
        a.set("acMode", get_or(&sc, "acMode", s("auto")));
        a.set(
            "humidityLevel",
            get_or(&sc, "humidityLevel", Py::Float(50.0)),
        );
        a.set("headLightStatus", get_or(&sc, "headLightStatus", s("off")));
        a.set(
            "parkingBrakeStatus",
            get_or(&sc, "parkingBrakeStatus", s("released")),
        );
        a.set(
            "_parkingBrakeForce",
            get_or(&sc, "parkingBrakeForce", Py::Float(0.0)),
        );
        a.set("_slopeAngle", get_or(&sc, "slopeAngle", Py::Float(0.0)));
        a.set(
            "brakePedalStatus",
            get_or(&sc, "brakePedalStatus", s("released")),
        );
        a.set(
            "_brakePedalForce",
            get_or(&sc, "brakePedalForce", Py::Float(0.0)),
        );
        a.set(
            "distanceToNextVehicle",
            get_or(&sc, "distanceToNextVehicle", Py::Float(50.0)),
        );
        a.set("cruiseStatus", get_or(&sc, "cruiseStatus", s("inactive")));
        a.set("destination", get_or(&sc, "destination", s("None")));
        for (k, d) in [
            ("frontLeftTirePressure", 32.0),
            ("frontRightTirePressure", 32.0),
            ("rearLeftTirePressure", 30.0),
            ("rearRightTirePressure", 30.0),
        ] {
            a.set(k, get_or(&sc, k, Py::Float(d)));
        }
        a.set("long_context", Py::Bool(long_context));
    }

    fn call(&mut self, method: &str, args: &Args, g: &mut Globals) -> PyResult<Py> {
        let q = format!("VehicleControlAPI.{method}");
        let lc = self.long_context();
        match method {
            "startEngine" => {
                let a = args.bind(&q, &[("ignitionMode", None)])?;
                if py_eq(&a[0], &s("STOP")) {
                    self.a.set("engine_state", s("stopped"));
                }
                if gt(self.a.get("remainingUnlockedDoors"), &Py::Int(0))? {
                    let unlocked: Vec<String> = self
                        .doors()
                        .iter()
                        .filter(|(_, v)| py_eq(v, &s("unlocked")))
                        .map(|(k, _)| k.to_str())
                        .collect();
                    return Ok(dict([(
                        "error",
                        s(format!(
                            "All doors must be locked before starting the engine. Here are the unlocked doors: {}",
                            unlocked.join(", ")
                        )),
                    )]));
                }
                if !py_eq(self.a.get("brakePedalStatus"), &s("pressed")) {
                    return Ok(error(
                        "Brake pedal needs to be pressed when starting the engine.",
                    ));
                }
                if !py_eq(self.a.get("_brakePedalForce"), &Py::Float(1000.0)) {
                    return Ok(error(
                        "Must press the brake fully before starting the engine.",
                    ));
                }
                if lt(self.a.get("fuelLevel"), &Py::Float(0.0))? {
                    return Ok(error("Fuel tank is empty."));
                }
                if py_eq(&a[0], &s("START")) {
                    self.a.set("engine_state", s("running"));
                } else {
                    return Ok(error("Invalid ignition mode."));
                }
                Ok(dict([
                    ("engineState", self.a.get("engine_state").clone()),
                    ("fuelLevel", self.a.get("fuelLevel").clone()),
                    ("batteryVoltage", self.a.get("batteryVoltage").clone()),
                ]))
            }
            "fillFuelTank" => {
                let a = args.bind(&q, &[("fuelAmount", None)])?;
                if lt(&a[0], &Py::Int(0))? {
                    return Ok(error("Fuel amount cannot be negative."));
                }
                let total = arith(self.a.get("fuelLevel"), Op::Add, &a[0])?;
                if gt(&total, &Py::Int(50))? {
                    return Ok(error("Cannot fill gas above the tank capacity."));
                }
                if lt(&total, &Py::Float(0.0))? {
                    return Ok(error("Fuel tank is empty. Min fuel level is 0 gallons."));
                }
                self.a.set("fuelLevel", total.clone());
                Ok(dict([("fuelLevel", total)]))
            }
            "lockDoors" => {
                let a = args.bind(&q, &[("unlock", None), ("door", None)])?;
                let Some(doors) = a[1].items().cloned() else {
                    return not_ported("lockDoors with a non-list door");
                };
                let (from, to, delta) = if a[0].truthy() {
                    ("locked", "unlocked", 1)
                } else {
                    ("unlocked", "locked", -1)
                };
                for d in doors {
                    let status = self
                        .a
                        .get("doorStatus")
                        .get_key(&d)
                        .cloned()
                        .ok_or_else(|| d.repr())?;
                    if py_eq(&status, &s(to)) {
                        continue;
                    }
                    let _ = from;
                    self.a.get_mut("doorStatus").set_key(d, s(to));
                    let n = arith(
                        self.a.get("remainingUnlockedDoors"),
                        Op::Add,
                        &Py::Int(delta),
                    )?;
                    self.a.set("remainingUnlockedDoors", n);
                }
                Ok(dict([
                    ("lockStatus", s(to)),
                    (
                        "remainingUnlockedDoors",
                        self.a.get("remainingUnlockedDoors").clone(),
                    ),
                ]))
            }
            "adjustClimateControl" => {
                let a = args.bind(
                    &q,
                    &[
                        ("temperature", None),
                        ("unit", Some(s("celsius"))),
                        ("fanSpeed", Some(Py::Int(50))),
                        ("mode", Some(s("auto"))),
                    ],
                )?;
                if !(le(&Py::Int(0), &a[2])? && le(&a[2], &Py::Int(100))?) {
                    return Ok(error("Fan speed must be between 0 and 100."));
                }
                self.a.set("acTemperature", a[0].clone());
                if py_eq(&a[1], &s("fahrenheit")) {
                    let t = arith(&a[0], Op::Sub, &Py::Int(32))?;
                    let t = arith(&arith(&t, Op::Mul, &Py::Int(5))?, Op::Div, &Py::Int(9))?;
                    self.a.set("acTemperature", t);
                }
                self.a.set("fanSpeed", a[2].clone());
                self.a.set("acMode", a[3].clone());
                Ok(dict([
                    ("currentACTemperature", a[0].clone()),
                    ("climateMode", a[3].clone()),
                    ("humidityLevel", self.a.get("humidityLevel").clone()),
                ]))
            }
            "get_outside_temperature_from_google" => {
                args.bind(&q, &[])?;
                let t = Py::Float(self.random.as_mut().expect("loaded").uniform(-10.0, 40.0));
                if lc {
                    // The module-level dict is updated in place and returned.
                    let mut ext = ext(g, "LONG_WEATHER_EXTENSION");
                    ext.set("outsideTemperature", t);
                    g.long_context.set("LONG_WEATHER_EXTENSION", ext.clone());
                    return Ok(ext);
                }
                Ok(dict([("outsideTemperature", t)]))
            }
            "get_outside_temperature_from_weather_com" => {
                args.bind(&q, &[])?;
                Ok(dict([("error", Py::Int(404))]))
            }
            "setHeadlights" => {
                let a = args.bind(&q, &[("mode", None)])?;
                let mode = a[0].as_str().unwrap_or("");
                if !matches!(a[0], Py::Str(_)) || !["on", "off", "auto"].contains(&mode) {
                    return Ok(error("Invalid headlight mode."));
                }
                let v = if mode == "on" { "on" } else { "off" };
                self.a.set("headLightStatus", s(v));
                Ok(dict([("headlightStatus", s(v))]))
            }
            "displayCarStatus" => {
                let a = args.bind(&q, &[("option", None)])?;
                let mut st = Py::Dict(vec![]);
                if lc {
                    st.set("metadata", ext(g, "CAR_STATUS_METADATA_EXTENSION"));
                }
                let g = |k: &str| self.a.get(k).clone();
                let fields: Vec<(&str, Py)> = match a[0].as_str().unwrap_or("\u{0}") {
                    "fuel" => vec![("fuelLevel", g("fuelLevel"))],
                    "battery" => vec![("batteryVoltage", g("batteryVoltage"))],
                    "doors" => vec![("doorStatus", g("doorStatus"))],
                    "climate" => vec![
                        ("currentACTemperature", g("acTemperature")),
                        ("fanSpeed", g("fanSpeed")),
                        ("climateMode", g("acMode")),
                        ("humidityLevel", g("humidityLevel")),
                    ],
                    "headlights" => vec![("headlightStatus", g("headLightStatus"))],
                    "parkingBrake" => vec![
                        ("parkingBrakeStatus", g("parkingBrakeStatus")),
                        ("parkingBrakeForce", g("_parkingBrakeForce")),
                        ("slopeAngle", g("_slopeAngle")),
                    ],
                    "brakePedal" => vec![
                        ("brakePedalStatus", g("brakePedalStatus")),
                        ("brakePedalForce", g("_brakePedalForce")),
                    ],
                    "engine" => vec![("engineState", g("engine_state"))],
                    _ => vec![("error", s("Invalid option"))],
                };
                for (k, v) in fields {
                    st.set(k, v);
                }
                Ok(st)
            }
            "activateParkingBrake" => {
                let a = args.bind(&q, &[("mode", None)])?;
                let mode = a[0].as_str().unwrap_or("");
                if !matches!(a[0], Py::Str(_)) || !["engage", "release"].contains(&mode) {
                    return Ok(error("Invalid mode"));
                }
                let (status, force) = if mode == "engage" {
                    ("engaged", 500.0)
                } else {
                    ("released", 0.0)
                };
                self.a.set("parkingBrakeStatus", s(status));
                self.a.set("_parkingBrakeForce", Py::Float(force));
                self.a.set("_slopeAngle", Py::Float(10.0));
                let mut out = Py::Dict(vec![]);
                if lc {
                    out.set(
                        "parkingBrakeInstruction",
                        ext(g, "PARKING_BRAKE_INSTRUCTION"),
                    );
                }
                out.set("parkingBrakeStatus", s(status));
                out.set("_parkingBrakeForce", Py::Float(force));
                out.set("_slopeAngle", Py::Float(10.0));
                Ok(out)
            }
            "pressBrakePedal" => {
                let a = args.bind(&q, &[("pedalPosition", None)])?;
                if !(le(&Py::Int(0), &a[0])? && le(&a[0], &Py::Int(1))?) {
                    return Ok(error("Pedal position must be between 0 and 1."));
                }
                if py_eq(&a[0], &Py::Int(0)) {
                    self.a.set("brakePedalStatus", s("released"));
                    self.a.set("_brakePedalForce", Py::Float(0.0));
                    return Ok(dict([
                        ("brakePedalStatus", s("released")),
                        ("brakePedalForce", Py::Float(0.0)),
                    ]));
                }
                let force = arith(&a[0], Op::Mul, &Py::Int(1000))?;
                self.a.set("brakePedalStatus", s("pressed"));
                self.a.set("_brakePedalForce", force.clone());
                Ok(dict([
                    ("brakePedalStatus", s("pressed")),
                    ("brakePedalForce", Py::Float(to_float(&force)?)),
                ]))
            }
            "releaseBrakePedal" => {
                args.bind(&q, &[])?;
                self.a.set("brakePedalStatus", s("released"));
                self.a.set("_brakePedalForce", Py::Float(0.0));
                Ok(dict([
                    ("brakePedalStatus", s("released")),
                    ("brakePedalForce", Py::Float(0.0)),
                ]))
            }
            "setCruiseControl" => {
                let a = args.bind(
                    &q,
                    &[
                        ("speed", None),
                        ("activate", None),
                        ("distanceToNextVehicle", None),
                    ],
                )?;
                let dist = Py::Float(to_float(&a[2])?);
                let speed = Py::Float(to_float(&a[0])?);
                if py_eq(self.a.get("engine_state"), &s("stopped")) {
                    return Ok(error(
                        "Start the engine before activating the cruise control.",
                    ));
                }
                self.a.set("distanceToNextVehicle", dist.clone());
                let status = if a[1].truthy() {
                    let sp = speed.as_f64().unwrap_or(0.0);
                    let m = arith(&speed, Op::Mod, &Py::Int(5))?;
                    if !(0.0..=120.0).contains(&sp) || !py_eq(&m, &Py::Int(0)) {
                        return Ok(error("Invalid speed"));
                    }
                    "active"
                } else {
                    "inactive"
                };
                self.a.set("cruiseStatus", s(status));
                Ok(dict([
                    ("cruiseStatus", s(status)),
                    ("currentSpeed", speed),
                    ("distanceToNextVehicle", dist),
                ]))
            }
            "get_current_speed" => {
                args.bind(&q, &[])?;
                let v = self.random.as_mut().expect("loaded").uniform(0.0, 120.0);
                Ok(dict([("currentSpeed", Py::Float(v))]))
            }
            "display_log" => {
                let a = args.bind(&q, &[("messages", None)])?;
                Ok(dict([("log", a[0].clone())]))
            }
            "estimate_drive_feasibility_by_mileage" => {
                let a = args.bind(&q, &[("distance", None)])?;
                let range = arith(self.a.get("fuelLevel"), Op::Mul, &Py::Float(20.0))?;
                Ok(dict([("canDrive", Py::Bool(!lt(&range, &a[0])?))]))
            }
            "liter_to_gallon" => {
                let a = args.bind(&q, &[("liter", None)])?;
                Ok(dict([(
                    "gallon",
                    arith(&a[0], Op::Mul, &Py::Float(0.264172))?,
                )]))
            }
            "gallon_to_liter" => {
                let a = args.bind(&q, &[("gallon", None)])?;
                Ok(dict([(
                    "liter",
                    arith(&a[0], Op::Mul, &Py::Float(3.78541))?,
                )]))
            }
            "estimate_distance" => {
                let a = args.bind(&q, &[("cityA", None), ("cityB", None)])?;
                let (x, y) = (a[0].as_str(), a[1].as_str());
                let found = DISTANCES.iter().find(|(p, r, _)| {
                    (x == Some(p) && y == Some(r)) || (x == Some(r) && y == Some(p))
                });
                let mut out = match found {
                    Some((_, _, d)) => dict([("distance", Py::Float(*d))]),
                    None => error("distance not found in database."),
                };
                if lc {
                    out.set("intermediaryCities", ext(g, "INTERMEDIARY_CITIES"));
                }
                Ok(out)
            }
            "get_zipcode_based_on_city" => {
                let a = args.bind(&q, &[("city", None)])?;
                let zip = ZIPCODES
                    .iter()
                    .find(|(c, _)| a[0].as_str() == Some(c))
                    .map_or("00000", |(_, z)| z);
                Ok(dict([("zipcode", s(zip))]))
            }
            "set_navigation" => {
                let a = args.bind(&q, &[("destination", None)])?;
                self.a.set("destination", a[0].clone());
                Ok(dict([(
                    "status",
                    arith(&s("Navigating to "), Op::Add, &a[0])?,
                )]))
            }
            "check_tire_pressure" => {
                args.bind(&q, &[])?;
                let mut total = Py::Int(0);
                let names = [
                    "frontLeftTirePressure",
                    "frontRightTirePressure",
                    "rearLeftTirePressure",
                    "rearRightTirePressure",
                ];
                for (i, n) in names.iter().enumerate() {
                    total = if i == 0 {
                        self.a.get(n).clone()
                    } else {
                        arith(&total, Op::Add, self.a.get(n))?
                    };
                }
                let avg = arith(&total, Op::Div, &Py::Int(4))?;
                let healthy = le(&Py::Int(30), &avg)? && le(&avg, &Py::Int(35))?;
                let mut out = Py::Dict(vec![]);
                for n in names {
                    out.set(n, self.a.get(n).clone());
                }
                out.set("healthy_tire_pressure", Py::Bool(healthy));
                out.set(
                    "car_info",
                    if lc {
                        ext(g, "CAR_STATUS_METADATA_EXTENSION")
                    } else {
                        Py::Dict(vec![])
                    },
                );
                Ok(out)
            }
            "find_nearest_tire_shop" => {
                args.bind(&q, &[])?;
                Ok(dict([(
                    "shopLocation",
                    s("456 Oakwood Avenue, Rivermist, 83214"),
                )]))
            }
            _ => not_ported(method),
        }
    }

    fn state(&self, _g: &Globals) -> Vec<(String, Py)> {
        self.a.public()
    }
}
