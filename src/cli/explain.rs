//! `decide` and `canonical`: explain the two primitives every file depends on — one keyed
//! fault decision, and the canonical bytes (and digest) of a JSON document.

use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;

use super::{Io, parse_python_float};
use crate::decision::Draw;
use crate::json::{self, MAX_DOCUMENT_BYTES, Object, Text, Value, float::py_repr, one_line};
use crate::{document, exit};

/// Flags of `decide`.
#[derive(Args, Debug)]
pub struct DecideArgs {
    /// The run's seed
    #[arg(long, allow_hyphen_values = true)]
    seed: i64,
    /// Rule name
    #[arg(long)]
    rule: String,
    /// The called tool's name (not the rule's pattern)
    #[arg(long)]
    tool: String,
    /// The raw invocation key (`#1` for the first call of a tool)
    #[arg(long, allow_hyphen_values = true)]
    key: String,
    /// Probability to compare against
    #[arg(long, default_value = "1.0", value_parser = parse_python_float)]
    probability: f64,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

/// Runs `decide`.
pub fn decide(a: &DecideArgs, io: &mut Io<'_>) -> i32 {
    if !(a.probability.is_finite() && (0.0..=1.0).contains(&a.probability)) {
        return io.fail("ConfigurationError: Rule probability must be between 0 and 1");
    }
    let (rule, tool, key) = (
        Text::from(a.rule.as_str()),
        Text::from(a.tool.as_str()),
        Text::from(a.key.as_str()),
    );
    let input = Draw::input(a.seed, &rule, &tool, &key);
    let draw = Draw::new(a.seed, &rule, &tool, &key);
    let selected = draw.hits(a.probability);
    if a.json {
        let mut o = Object::new();
        o.push("canonical", input.as_str());
        o.push("u64", draw.value.to_string());
        o.push("fraction", Value::Float(draw.fraction()));
        o.push("probability", Value::Float(a.probability));
        o.push("selected", selected);
        io.emit_line(&one_line(&Value::Object(o)));
    } else {
        io.println(&format!("input      {input}"));
        io.println(&format!(
            "sha256     {}",
            json::sha256_hex(input.as_bytes())
        ));
        io.println(&format!(
            "draw       {} (0x{:016x})",
            draw.value, draw.value
        ));
        io.println(&format!("fraction   {} of 2^64", py_repr(draw.fraction())));
        io.println(&format!(
            "threshold  probability {}",
            py_repr(a.probability)
        ));
        io.println(&format!(
            "selected   {}",
            if selected {
                "yes (draw < probability x 2^64)"
            } else {
                "no (draw >= probability x 2^64)"
            }
        ));
    }
    0
}

/// Flags of `canonical`.
#[derive(Args, Debug)]
pub struct CanonicalArgs {
    /// JSON file, or `-` for standard input (default)
    file: Option<PathBuf>,
    /// Print only the SHA-256 of the canonical form
    #[arg(long)]
    digest: bool,
}

/// Runs `canonical`.
pub fn canonical(a: &CanonicalArgs, io: &mut Io<'_>) -> i32 {
    let value = match &a.file {
        Some(p) if p.as_os_str() != "-" => document::read_json(p),
        _ => {
            let mut buf = Vec::new();
            if let Err(e) = std::io::stdin()
                .take(MAX_DOCUMENT_BYTES as u64 + 1)
                .read_to_end(&mut buf)
            {
                return io.fail(format!("OSError: standard input: {e}"));
            }
            document::parse_json(Path::new("<stdin>"), &buf)
        }
    };
    match value {
        Ok(v) => {
            if a.digest {
                io.emit_line(&json::fingerprint(&v));
            } else {
                io.emit_line(&json::canonical(&v));
            }
            exit::OK
        }
        Err(e) => io.fail(e),
    }
}
