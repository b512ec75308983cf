//! `agentload-fuzz [--seconds N] [--seed S] [TARGET...]`: runs each target
//! (all by default) for N seconds and prints how many inputs it ran; exits
//! non-zero on the first failure, with the seed that reproduces it.
//! `--list` names the targets.

use agentload_fuzz::{find, Budget, TARGETS};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let mut seconds = 10.0f64;
    let mut seed = 1u64;
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |what: &str| {
            args.next()
                .unwrap_or_else(|| usage(&format!("{what} needs a value")))
        };
        match arg.as_str() {
            "--seconds" => {
                seconds = value("--seconds")
                    .parse()
                    .unwrap_or_else(|_| usage("--seconds: a number"))
            }
            "--seed" => {
                seed = value("--seed")
                    .parse()
                    .unwrap_or_else(|_| usage("--seed: an integer"))
            }
            "--list" => {
                for t in TARGETS {
                    println!("{:<20} {}", t.name, t.about);
                }
                return ExitCode::SUCCESS;
            }
            name if !name.starts_with('-') => names.push(name.to_string()),
            other => usage(&format!("unknown option {other}")),
        }
    }
    let targets: Vec<_> = if names.is_empty() {
        TARGETS.iter().collect()
    } else {
        names
            .iter()
            .map(|n| find(n).unwrap_or_else(|| usage(&format!("no target {n} (--list)"))))
            .collect()
    };
    println!(
        "{:<20} {:>12} {:>9} {:>12}",
        "target", "inputs", "seconds", "inputs/s"
    );
    for t in targets {
        match (t.run)(Budget::Time(Duration::from_secs_f64(seconds)), seed) {
            Ok(r) => {
                let secs = r.elapsed.as_secs_f64();
                println!(
                    "{:<20} {:>12} {:>9.1} {:>12.0}",
                    r.target,
                    r.inputs,
                    secs,
                    r.inputs as f64 / secs.max(1e-9)
                );
            }
            Err(failure) => {
                eprintln!("{failure}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn usage(problem: &str) -> ! {
    eprintln!("agentload-fuzz: {problem}\nusage: agentload-fuzz [--seconds N] [--seed S] [--list] [TARGET...]");
    std::process::exit(2)
}
