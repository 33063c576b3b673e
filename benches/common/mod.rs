//! A large synthetic cassette shared by the benchmarks: 10,000 calls of the shipping tools
//! with faults, effects and duplicates, about 3.6 MB on disk.

use toolstorm::cassette::Cassette;
use toolstorm::rule::{FaultKind, RuleSpec};
use toolstorm::{Storm, obj};

/// Writes the cassette to `path`.
pub fn big_cassette(path: &std::path::Path) {
    let rules = [
        RuleSpec::new("lost", "create_*", FaultKind::ResponseLost)
            .probability(0.1)
            .build(),
        RuleSpec::new("slow", "check_*", FaultKind::Latency)
            .probability(0.2)
            .delay(0.05)
            .build(),
        RuleSpec::new("busy", "*", FaultKind::RateLimit)
            .probability(0.05)
            .delay(0.6)
            .build(),
    ];
    let storm = Storm::builder()
        .rules(rules.into_iter().map(|r| r.expect("rule")))
        .seed(7)
        .max_calls(10_000)
        .build()
        .expect("storm");
    for i in 0..10_000u32 {
        let tool = if i % 2 == 0 {
            "check_inventory"
        } else {
            "create_shipment"
        };
        let _ = storm.call(tool, obj! {"order_id" => format!("order-{i:05}")}, || {
            storm.sleep(0.01)?;
            if tool == "create_shipment" && i % 7 != 0 {
                storm.effect("shipment", &format!("order-{:05}", i / 3))?;
            }
            Ok(obj! {"shipment_id" => format!("SHP-{i:05}"), "warehouse" => "AMS-01"})
        });
    }
    Cassette::from_report(&storm.report())
        .expect("valid")
        .save(path)
        .expect("save");
}
