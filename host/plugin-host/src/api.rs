//! Which WIT contract a component was built against, read from the names of
//! its imports and exports (`agentload:plugin/workload@0.1.0`...) before
//! anything is instantiated.
//!
//! Versioning policy (`wit/README.md`): a released `agentload:plugin`
//! package is frozen; every change is a new package version, and the host
//! keeps bindings for each released version it supports and dispatches on
//! the version a component declares. A component built against a version
//! this host does not know is refused up front, with an error naming the
//! plugin, its version and the supported ones, rather than failing to link
//! with a wasmtime type error.

use super::PluginFailure;
use serde::Serialize;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::Component;
use wasmtime::Engine;

/// The WIT package every agentload plugin targets.
pub const PACKAGE: &str = "agentload:plugin";

/// The `agentload:plugin` versions this host has bindings for, oldest
/// first: one directory `wit/agentload-plugin@<version>` each.
pub const SUPPORTED_VERSIONS: &[&str] = &["0.1.0", "0.2.0", "0.3.0", "0.4.0"];

/// The WIT versions this host dispatches to. Each has a bindings module
/// (`bindings.rs` for the current one, `bindings_v<version>.rs` for older
/// ones, with conversions to the current records), a linker entry for its
/// `host` interface (`compiler.rs`), and an arm wherever a plugin of a world
/// it supports is instantiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum WitVersion {
    /// `agentload:plugin@0.1.0`, frozen: a turn request carries the whole
    /// history; a scorer's gate is the `gate` key of its report JSON.
    V0_1_0,
    /// `agentload:plugin@0.2.0`, frozen: `next-turn` returns the next
    /// request alone (no live-reply review).
    V0_2_0,
    /// `agentload:plugin@0.3.0`, frozen: typed messages only, no nonce, no
    /// facts, no pause after a turn, no closed-loop sessions.
    V0_3_0,
    /// `agentload:plugin@0.4.0`: the current version.
    V0_4_0,
}

impl WitVersion {
    /// The version a component declares, when this host supports it (for
    /// some world: see [`supports`](Self::supports)).
    pub fn parse(version: &str) -> Option<Self> {
        match version {
            "0.1.0" => Some(Self::V0_1_0),
            "0.2.0" => Some(Self::V0_2_0),
            "0.3.0" => Some(Self::V0_3_0),
            "0.4.0" => Some(Self::V0_4_0),
            _ => None,
        }
    }

    /// The version number, e.g. `0.2.0`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V0_1_0 => "0.1.0",
            Self::V0_2_0 => "0.2.0",
            Self::V0_3_0 => "0.3.0",
            Self::V0_4_0 => "0.4.0",
        }
    }

    /// Whether this host runs `world` plugins built against this version
    /// (every supported version serves both worlds).
    pub fn supports(self, world: World) -> bool {
        match self {
            Self::V0_1_0 | Self::V0_2_0 | Self::V0_3_0 | Self::V0_4_0 => {
                matches!(world, World::Workload | World::Scorer)
            }
        }
    }
}

/// What a plugin is, by the interface it exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum World {
    /// Exports `agentload:plugin/workload`: the `workload-plugin` world.
    Workload,
    /// Exports `agentload:plugin/scorer`: the `scorer-plugin` world.
    Scorer,
}

impl World {
    /// The WIT world's name.
    pub fn wit_name(self) -> &'static str {
        match self {
            Self::Workload => "workload-plugin",
            Self::Scorer => "scorer-plugin",
        }
    }

    fn interface(self) -> &'static str {
        match self {
            Self::Workload => "workload",
            Self::Scorer => "scorer",
        }
    }
}

/// A component's contract, as its import and export names declare it.
#[derive(Debug, Clone, Serialize)]
pub struct ComponentApi {
    /// The world, by the `agentload:plugin` interface exported (none when
    /// it exports neither or both).
    pub world: Option<World>,
    /// The `agentload:plugin` version(s) named by its imports and exports,
    /// sorted (`""` for an unversioned name); one for a well-formed plugin.
    pub versions: Vec<String>,
    /// Every import name (WASI's included).
    pub imports: Vec<String>,
    /// Every export name, with the functions of exported instances
    /// (`agentload:plugin/workload@0.1.0#describe`).
    pub exports: Vec<String>,
}

/// `(interface, version)` of an `agentload:plugin/<interface>[@<version>]` name.
fn agentload_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(PACKAGE)?.strip_prefix('/')?;
    Some(match rest.split_once('@') {
        Some((interface, version)) => (interface, version),
        None => (rest, ""),
    })
}

impl ComponentApi {
    /// Reads a compiled component's import and export names.
    pub fn inspect(engine: &Engine, component: &Component) -> Self {
        let ty = component.component_type();
        let imports = ty.imports(engine).map(|(n, _)| n.to_string()).collect();
        let mut exports = Vec::new();
        for (name, item) in ty.exports(engine) {
            exports.push(name.to_string());
            if let ComponentItem::ComponentInstance(instance) = item.ty {
                for (func, item) in instance.exports(engine) {
                    if matches!(item.ty, ComponentItem::ComponentFunc(_)) {
                        exports.push(format!("{name}#{func}"));
                    }
                }
            }
        }
        Self::from_names(imports, exports)
    }

    /// Classifies a component by its import and export names.
    pub fn from_names(imports: Vec<String>, exports: Vec<String>) -> Self {
        let exported: Vec<&str> = exports
            .iter()
            .filter(|n| !n.contains('#'))
            .filter_map(|n| agentload_name(n).map(|(i, _)| i))
            .collect();
        let world = match (
            exported.contains(&World::Workload.interface()),
            exported.contains(&World::Scorer.interface()),
        ) {
            (true, false) => Some(World::Workload),
            (false, true) => Some(World::Scorer),
            _ => None,
        };
        let mut versions: Vec<String> = imports
            .iter()
            .chain(exports.iter().filter(|n| !n.contains('#')))
            .filter_map(|n| agentload_name(n).map(|(_, v)| v.to_string()))
            .collect();
        versions.sort();
        versions.dedup();
        Self {
            world,
            versions,
            imports,
            exports,
        }
    }

    /// The single `agentload:plugin` version, when there is exactly one.
    pub fn version(&self) -> Option<&str> {
        match self.versions.as_slice() {
            [v] => Some(v),
            _ => None,
        }
    }

    /// Checks that the component implements `world` against a supported
    /// WIT version, and returns that version. `plugin` names it in errors.
    pub fn require(&self, plugin: &str, world: World) -> Result<WitVersion, PluginFailure> {
        let invalid = |reason: String| PluginFailure::Instantiate {
            plugin: plugin.to_string(),
            world: world.wit_name(),
            reason,
        };
        let found = match self.versions.as_slice() {
            [] => {
                return Err(invalid(format!(
                    "it is not an agentload plugin: none of its imports or exports is an \
                     `{PACKAGE}` interface (exports: {})",
                    self.top_level_exports().join(", ")
                )))
            }
            [v] => v.as_str(),
            many => {
                return Err(invalid(format!(
                    "it mixes `{PACKAGE}` versions {}",
                    many.iter()
                        .map(|v| display_version(v))
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        };
        let Some(version) = WitVersion::parse(found).filter(|v| v.supports(world)) else {
            return Err(PluginFailure::UnsupportedWit {
                plugin: plugin.to_string(),
                found: format!("{PACKAGE}{}", display_version(found)),
                supported: supported_list(world),
            });
        };
        match self.world {
            Some(w) if w == world => Ok(version),
            Some(other) => Err(invalid(format!(
                "it exports `{PACKAGE}/{}@{found}`: it is a {}, not a {}",
                other.interface(),
                other.interface(),
                world.interface()
            ))),
            None => Err(invalid(format!(
                "it exports neither `{PACKAGE}/workload` nor `{PACKAGE}/scorer` alone (exports: {})",
                self.top_level_exports().join(", ")
            ))),
        }
    }

    fn top_level_exports(&self) -> Vec<&str> {
        let names: Vec<&str> = self
            .exports
            .iter()
            .filter(|n| !n.contains('#'))
            .map(String::as_str)
            .collect();
        if names.is_empty() {
            vec!["none"]
        } else {
            names
        }
    }
}

fn display_version(v: &str) -> String {
    if v.is_empty() {
        " (unversioned)".into()
    } else {
        format!("@{v}")
    }
}

/// The versions this host runs `world` plugins of, oldest first:
/// `agentload:plugin@0.1.0`.
pub fn supported_list(world: World) -> String {
    SUPPORTED_VERSIONS
        .iter()
        .filter(|v| WitVersion::parse(v).is_some_and(|v| v.supports(world)))
        .map(|v| format!("{PACKAGE}@{v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads and checks `component`'s contract for `world` (see [`ComponentApi::require`]).
pub(crate) fn require(
    engine: &Engine,
    component: &Component,
    plugin: &str,
    world: World,
) -> Result<WitVersion, PluginFailure> {
    ComponentApi::inspect(engine, component).require(plugin, world)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn workload(version: &str) -> ComponentApi {
        ComponentApi::from_names(
            names(&[
                "wasi:cli/stderr@0.2.6",
                &format!("agentload:plugin/types@{version}"),
                &format!("agentload:plugin/host@{version}"),
            ]),
            names(&[
                &format!("agentload:plugin/workload@{version}"),
                &format!("agentload:plugin/workload@{version}#describe"),
            ]),
        )
    }

    #[test]
    fn a_current_workload_is_accepted() {
        let api = workload("0.4.0");
        assert_eq!(api.world, Some(World::Workload));
        assert_eq!(api.version(), Some("0.4.0"));
        assert_eq!(
            api.require("demo", World::Workload).unwrap(),
            WitVersion::V0_4_0
        );
    }

    #[test]
    fn an_older_version_is_refused_naming_plugin_and_versions() {
        let err = workload("0.0.1")
            .require("old-demo", World::Workload)
            .unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, PluginFailure::UnsupportedWit { .. }),
            "{text}"
        );
        assert!(text.contains("old-demo"), "{text}");
        assert!(text.contains("agentload:plugin@0.0.1"), "{text}");
        assert!(
            text.contains(&format!("supported: {})", supported_list(World::Workload))),
            "{text}"
        );
    }

    #[test]
    fn the_previous_version_is_accepted_for_both_worlds() {
        assert_eq!(
            workload("0.1.0").require("old", World::Workload).unwrap(),
            WitVersion::V0_1_0
        );
        let scorer = ComponentApi::from_names(
            names(&["agentload:plugin/host@0.1.0"]),
            names(&["agentload:plugin/scorer@0.1.0"]),
        );
        assert_eq!(
            scorer.require("old-scorer", World::Scorer).unwrap(),
            WitVersion::V0_1_0
        );
        assert_eq!(
            supported_list(World::Scorer),
            "agentload:plugin@0.1.0, agentload:plugin@0.2.0, agentload:plugin@0.3.0, \
             agentload:plugin@0.4.0"
        );
        assert_eq!(
            workload("0.2.0").require("older", World::Workload).unwrap(),
            WitVersion::V0_2_0
        );
        assert_eq!(
            workload("0.3.0")
                .require("previous", World::Workload)
                .unwrap(),
            WitVersion::V0_3_0
        );
    }

    #[test]
    fn a_scorer_is_not_a_workload() {
        let api = ComponentApi::from_names(
            names(&["agentload:plugin/host@0.1.0"]),
            names(&["agentload:plugin/scorer@0.1.0"]),
        );
        assert_eq!(api.world, Some(World::Scorer));
        let text = api.require("s", World::Workload).unwrap_err().to_string();
        assert!(text.contains("it is a scorer, not a workload"), "{text}");
    }

    #[test]
    fn a_foreign_component_is_not_a_plugin() {
        let api = ComponentApi::from_names(names(&[]), names(&["wasi:cli/run@0.2.0"]));
        let text = api.require("x", World::Workload).unwrap_err().to_string();
        assert!(text.contains("not an agentload plugin"), "{text}");
        assert!(text.contains("wasi:cli/run@0.2.0"), "{text}");
    }

    #[test]
    fn mixed_versions_are_refused() {
        let api = ComponentApi::from_names(
            names(&["agentload:plugin/host@0.1.0"]),
            names(&["agentload:plugin/workload@0.2.0"]),
        );
        let text = api.require("m", World::Workload).unwrap_err().to_string();
        assert!(text.contains("mixes"), "{text}");
    }

    /// Every released package under `wit/` is a supported version, and the
    /// other way round: adding `wit/agentload-plugin@X.Y.Z` without host
    /// bindings for it (or the reverse) fails here.
    #[test]
    fn supported_versions_match_the_wit_directory() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
        let mut released: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                name.strip_prefix("agentload-plugin@").map(str::to_owned)
            })
            .collect();
        released.sort();
        assert_eq!(released, SUPPORTED_VERSIONS);
        for v in &released {
            let version = WitVersion::parse(v).unwrap_or_else(|| panic!("no dispatch arm for {v}"));
            assert_eq!(version.as_str(), v);
        }
    }
}
