//! Laws of the engine, checked on generated inputs.

use proptest::prelude::*;
use toolstorm::json::{Int, Object, Text, Value, canonical, parse};
use toolstorm::lab::{self, Policy, RunConfig, scenario};
use toolstorm::report::Report;
use toolstorm::rule::{FaultKind, Rule, RuleSpec};
use toolstorm::{Storm, obj};

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "-?[1-9][0-9]{19,40}"
            .prop_map(|s| Value::Int(Int::parse_decimal(&s).unwrap_or(Int::Small(0)))),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::Float),
        any::<String>().prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6).prop_map(|m| {
                Value::Object(
                    m.into_iter()
                        .map(|(k, v)| (Text::from(k), v))
                        .collect::<Object>(),
                )
            }),
        ]
    })
}

fn kind() -> impl Strategy<Value = FaultKind> {
    prop::sample::select(FaultKind::ALL.to_vec())
}

fn rules() -> impl Strategy<Value = Vec<Rule>> {
    prop::collection::vec(
        (
            prop::sample::select(vec!["a", "b", "*", "[ab]", "c?"]),
            kind(),
            prop::collection::btree_set(1i64..6, 0..3),
            prop::sample::select(vec![0.0, 0.3, 0.5, 1.0]),
            prop::option::of(1i64..3),
        ),
        0..5,
    )
    .prop_map(|specs| {
        specs
            .into_iter()
            .enumerate()
            .filter_map(|(i, (tool, kind, calls, p, limit))| {
                let mut spec = RuleSpec::new(&format!("r{i}"), tool, kind)
                    .calls(calls)
                    .probability(p);
                if let Some(l) = limit {
                    spec = spec.limit(l);
                }
                spec.build().ok()
            })
            .collect()
    })
}

fn run_calls(rules: Vec<Rule>, seed: i64, tools: &[&str]) -> Report {
    let storm = Storm::builder()
        .rules(rules)
        .seed(seed)
        .build()
        .expect("storm");
    for (i, tool) in tools.iter().enumerate() {
        let _ = storm.call(tool, obj! {"i" => i}, || {
            storm.sleep(0.01)?;
            Ok(obj! {"ok" => true})
        });
    }
    storm.report()
}

proptest! {
    #[test]
    fn canonical_round_trips(v in value()) {
        let text = canonical(&v);
        let again = parse(&text).expect("canonical text parses");
        prop_assert_eq!(canonical(&again), text);
    }

    #[test]
    fn same_seed_same_digest(
        sc in prop::sample::select(scenario::names().collect::<Vec<_>>()),
        policy in prop::sample::select(Policy::ALL.to_vec()),
        seed in -1000i64..1000,
        p in 0.0f64..=1.0,
        max_calls in 1i64..=20,
    ) {
        let sc = scenario::bundled(sc).expect("scenario");
        let config = RunConfig { seed, probability: Some(p), max_calls };
        let a = lab::run(&sc, policy, &config).expect("run");
        let b = lab::run(&sc, policy, &config).expect("run");
        prop_assert_eq!(&a.digest, &b.digest);
        prop_assert_eq!(a.report.digest(), a.digest);
    }

    #[test]
    fn coverage_is_ordered(rules in rules(), seed in any::<i32>(), tools in prop::collection::vec(prop::sample::select(vec!["a", "b", "c1"]), 0..12)) {
        let report = run_calls(rules, i64::from(seed), &tools);
        for (name, c) in &report.coverage {
            prop_assert!(c.triggered <= c.selected && c.selected <= c.eligible, "{:?}: {:?}", name, c);
        }
    }

    #[test]
    fn another_tools_rule_never_shifts_decisions(rules in rules(), seed in any::<i32>(), n in 1usize..10) {
        // Calls to tool "a" only; an extra rule that can only match "zz" must not change them.
        let tools = vec!["a"; n];
        let base = run_calls(rules.clone(), i64::from(seed), &tools);
        let mut more = rules;
        more.insert(0, RuleSpec::new("other-tool", "zz", FaultKind::Timeout).build().expect("rule"));
        let with_extra = run_calls(more, i64::from(seed), &tools);
        let faults = |r: &Report| r.calls.iter().map(|c| (c.fault.clone(), c.status)).collect::<Vec<_>>();
        prop_assert_eq!(faults(&base), faults(&with_extra));
    }
}

proptest! {
    /// For any report the engine produces, load(save(report)) is the same report and
    /// re-saving gives the same bytes.
    #[test]
    fn cassettes_round_trip(rules in rules(), seed in any::<i32>(), tools in prop::collection::vec(prop::sample::select(vec!["a", "b", "c1"]), 0..12)) {
        use toolstorm::cassette::Cassette;
        let report = run_calls(rules, i64::from(seed), &tools);
        let saved = Cassette::from_report(&report).expect("valid report").dumps();
        let loaded = Cassette::loads(&saved).expect("loads");
        // Files are key-sorted, so the loaded report equals the original up to key order.
        prop_assert_eq!(canonical(&loaded.report.to_value()), canonical(&report.to_value()));
        prop_assert_eq!(loaded.report.calls.len(), report.calls.len());
        prop_assert_eq!(&loaded.report.effects, &report.effects);
        prop_assert_eq!(loaded.dumps(), saved);
        prop_assert_eq!(loaded.digest(), report.digest());
    }
}

proptest! {
    /// Stepping never panics, whatever the step, and the state as of the last step is the
    /// report's own: coverage, effects and the clock.
    #[test]
    fn time_travel_ends_at_the_report(rules in rules(), seed in any::<i32>(), tools in prop::collection::vec(prop::sample::select(vec!["a", "b", "c1"]), 0..12)) {
        use toolstorm::timeline::Timeline;
        let report = run_calls(rules, i64::from(seed), &tools);
        let t = Timeline::new(report.clone());
        for step in (0..t.len() + 3).map(Some).chain([None]) {
            let _ = (t.coverage_at(step), t.effects_at(step), t.verdicts_at(step, 8), t.clock_at(step));
            if let Some(s) = step {
                let _ = t.decisions(s);
            }
        }
        let last = t.len().checked_sub(1);
        let cov: Vec<_> = report.coverage.iter().map(|(_, c)| *c).collect();
        prop_assert_eq!(t.coverage_at(last), cov);
        if last.is_some() {
            prop_assert_eq!(t.effects_at(last).len(), report.effects.len());
        }
    }
}

proptest! {
    /// The canonical text written from the typed report is byte for byte the canonical text of
    /// its value tree, whatever the payloads, names and keys hold.
    #[test]
    fn typed_canonical_text_equals_the_value_tree(
        rules in rules(),
        seed in any::<i32>(),
        calls in prop::collection::vec(
            ("[ab]|c1|\\PC{1,12}", value(), value(), "\\PC{1,8}", prop::option::of("\\PC{1,8}")),
            0..8,
        ),
    ) {
        let storm = Storm::builder().rules(rules).seed(i64::from(seed)).build().expect("storm");
        for (tool, args, output, effect, key) in calls {
            let call = || {
                storm.call(&tool, args.clone(), || {
                    storm.sleep(0.013)?;
                    let _ = storm.effect(&effect, &tool);
                    Ok(output.clone())
                })
            };
            let _ = match key {
                Some(k) => storm.invocation(&k, call).unwrap_or_else(Err),
                None => call(),
            };
        }
        let report = storm.report();
        prop_assert_eq!(report.canonical(), canonical(&report.to_value()));
    }
}

#[test]
fn typed_canonical_text_equals_the_value_tree_on_every_reference_trace() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference");
    let mut seen = 0;
    for dir in ["api", "demo", "demo-variants"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(cassettes) = toolstorm::cassette::load_document(&path) else {
                continue;
            };
            for c in cassettes {
                assert_eq!(
                    c.report.canonical(),
                    canonical(&c.report.to_value()),
                    "{}",
                    path.display()
                );
                seen += 1;
            }
        }
    }
    assert!(seen > 50, "{seen} traces");
}
