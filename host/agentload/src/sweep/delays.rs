//! Tool delays drawn per tool message from a log-normal distribution chosen
//! by the tool called, seeded by (seed, phase, session, turn) so a phase
//! replays the same delays every time.

use agentload_config::{DelayDistribution, SweepConfig};
use agentload_plugin_host::types::Role;
use agentload_plugin_host::TurnRequest;
use sha2::{Digest, Sha256};

/// z of the 90th percentile of the standard normal.
const Z90: f64 = 1.281_551_565_544_600_5;

/// The delay before `req` (ms): one draw per trailing tool message, each by
/// the name of the tool call it answers; 0 when the turn follows no tool.
pub fn draw(config: &SweepConfig, phase: usize, req: &TurnRequest) -> u64 {
    let tools = answered_tools(req);
    let mut total = 0.0;
    for (i, tool) in tools.iter().enumerate() {
        let dist = config
            .tool_delays
            .get(tool.as_str())
            .or_else(|| config.tool_delays.get("default"))
            .copied()
            .unwrap_or_default();
        let (u1, u2) = uniforms(config.seed, phase, &req.session_id, req.turn, i);
        total += sample(&dist, u1, u2);
    }
    (total * 1000.0).round() as u64
}

/// The tool names answered by the trailing `tool` messages of a request.
fn answered_tools(req: &TurnRequest) -> Vec<String> {
    let trailing: Vec<_> = req
        .messages
        .iter()
        .rev()
        .take_while(|m| m.role() == Role::Tool)
        .collect();
    let calls: Vec<(&str, &str)> = req
        .messages
        .iter()
        .rev()
        .skip(trailing.len())
        .find(|m| m.role() == Role::Assistant)
        .map(|m| m.tool_calls().collect())
        .unwrap_or_default();
    trailing
        .iter()
        .rev()
        .map(|m| {
            calls
                .iter()
                .find(|(id, _)| Some(*id) == m.tool_call_id())
                .map_or("default", |(_, name)| name)
                .to_owned()
        })
        .collect()
}

/// Two uniforms in (0, 1) from a hash of the draw's coordinates.
fn uniforms(seed: u64, phase: usize, session: &str, turn: u32, i: usize) -> (f64, f64) {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update((phase as u64).to_le_bytes());
    h.update(session.as_bytes());
    h.update(turn.to_le_bytes());
    h.update((i as u64).to_le_bytes());
    let d = h.finalize();
    let u = |b: &[u8]| {
        let x = u64::from_le_bytes(b.try_into().expect("8 bytes")) >> 11;
        (x as f64 + 0.5) / (1u64 << 53) as f64
    };
    (u(&d[0..8]), u(&d[8..16]))
}

/// A clamped log-normal draw (Box-Muller): median `m`, `sigma = ln(p90/m) / z90`.
fn sample(d: &DelayDistribution, u1: f64, u2: f64) -> f64 {
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    let sigma = (d.p90_s / d.median_s).ln() / Z90;
    (d.median_s * (sigma * z).exp()).clamp(d.min_s, d.max_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_follow_the_distribution() {
        let d = DelayDistribution::default();
        let mut xs: Vec<f64> = (0..20_000)
            .map(|i| {
                let (a, b) = uniforms(1, 0, "s", i, 0);
                sample(&d, a, b)
            })
            .collect();
        xs.sort_by(f64::total_cmp);
        let median = xs[xs.len() / 2];
        let p90 = xs[xs.len() * 9 / 10];
        assert!((median - 1.0).abs() < 0.05, "median {median}");
        assert!((p90 - 3.0).abs() < 0.15, "p90 {p90}");
        assert!(xs[0] >= d.min_s && xs[xs.len() - 1] <= d.max_s);
    }

    #[test]
    fn draws_are_deterministic_and_stratified_by_tool() {
        use agentload_plugin_host::types::{ChatMessage, ToolCall};
        let msg = |role, id: Option<&str>, calls: Vec<ToolCall>| ChatMessage {
            role,
            content: Some(String::new()),
            reasoning_content: None,
            tool_calls: calls,
            tool_call_id: id.map(str::to_owned),
            name: None,
        };
        let call = |id: &str, name: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        };
        let req = TurnRequest::new(
            "s",
            3,
            vec![
                msg(Role::User, None, vec![]),
                msg(
                    Role::Assistant,
                    None,
                    vec![call("a", "bash"), call("b", "read")],
                ),
                msg(Role::Tool, Some("a"), vec![]),
                msg(Role::Tool, Some("b"), vec![]),
            ],
        );
        assert_eq!(answered_tools(&req), ["bash", "read"]);
        let mut config = SweepConfig::default();
        let a = draw(&config, 0, &req);
        assert_eq!(a, draw(&config, 0, &req));
        assert_ne!(a, draw(&config, 1, &req));
        // A fixed 2 s for bash and 3 s for the rest.
        let fixed = |s: f64| DelayDistribution {
            median_s: s,
            p90_s: s,
            min_s: 0.0,
            max_s: 10.0,
        };
        config.tool_delays.insert("bash".into(), fixed(2.0));
        config.tool_delays.insert("default".into(), fixed(3.0));
        assert_eq!(draw(&config, 0, &req), 5000);
        let mut first = req.clone();
        first.messages.truncate(1);
        assert_eq!(draw(&config, 0, &first), 0);
    }
}
