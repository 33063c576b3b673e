//! Offline replay of a recovery policy against a recorded shipping cassette: the policy's
//! calls are answered from the recording (no tool runs, no time passes), and the first call
//! that differs is reported with the closest recorded call and a per-argument diff.

use std::cell::RefCell;

use crate::cassette::{Cassette, ClosestRecord, Replay};
use crate::error::{ConfigError, Error, Result};
use crate::json::Value;
use crate::obj;

use super::Policy;
use super::shipping::{INVENTORY, SHIP, ShippingTools, shipment_args};

/// One call the policy made during the replay.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayStep {
    /// Tool called.
    pub tool: String,
    /// Arguments given.
    pub arguments: Value,
    /// What the recording answered: the output, or the error's type name.
    pub answer: std::result::Result<Value, String>,
}

/// Where the replay left the recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    /// 1-based index of the policy's call that diverged (`None`: the policy stopped early).
    pub step: Option<usize>,
    /// The reference's mismatch message.
    pub message: String,
    /// The closest pending recorded call, for a mismatch.
    pub closest: Option<ClosestRecord>,
}

/// The result of replaying a policy.
#[derive(Clone, Debug, PartialEq)]
pub struct OfflineReplay {
    /// The policy's calls in order.
    pub steps: Vec<ReplayStep>,
    /// The task outcome the policy reached on recorded answers.
    pub outcome: Value,
    /// The first divergence, if any.
    pub divergence: Option<Divergence>,
}

impl OfflineReplay {
    /// The policy's calls matched the recording and consumed all of it.
    pub fn matched(&self) -> bool {
        self.divergence.is_none()
    }
}

struct Recorded<'a> {
    replay: &'a Replay,
    steps: RefCell<Vec<ReplayStep>>,
    divergence: RefCell<Option<Divergence>>,
}

impl Recorded<'_> {
    fn call(&self, tool: &str, arguments: Value) -> Result<Value> {
        // Look for the nearest record before consuming, so a mismatch can be explained.
        let closest = self.replay.closest_record(tool, &arguments);
        let answer = self.replay.call(tool, &arguments);
        let step = self.steps.borrow().len() + 1;
        if let Err(Error::ReplayMismatch(message)) = &answer
            && self.divergence.borrow().is_none()
        {
            *self.divergence.borrow_mut() = Some(Divergence {
                step: Some(step),
                message: message.clone(),
                closest,
            });
        }
        self.steps.borrow_mut().push(ReplayStep {
            tool: tool.to_owned(),
            arguments,
            answer: answer.clone().map_err(|e| e.type_name().to_owned()),
        });
        answer
    }
}

impl ShippingTools for Recorded<'_> {
    fn check_inventory(&self, sku: &Value) -> Result<Value> {
        self.call(INVENTORY, obj! {"sku" => sku.clone()})
    }
    fn create_shipment(
        &self,
        order_id: &str,
        warehouse: &Value,
        idempotency_key: Option<&str>,
    ) -> Result<Value> {
        self.call(SHIP, shipment_args(order_id, warehouse, idempotency_key))
    }
    fn sleep(&self, _seconds: f64) -> Result<()> {
        Ok(())
    }
}

/// Replays `policy` against a recorded shipping run. Refuses recordings that cannot replay
/// (no captured payloads, refused calls, running calls) or that are not of the shipping lab.
pub fn replay_policy(
    cassette: &Cassette,
    policy: Policy,
) -> std::result::Result<OfflineReplay, ConfigError> {
    if let Some(call) = cassette
        .report
        .calls
        .iter()
        .find(|c| c.tool != INVENTORY && c.tool != SHIP)
    {
        return Err(ConfigError::new("Not a shipping-lab recording")
            .at(format!("calls[{}].tool", call.id - 1))
            .because(format!(
                "the lab's policies call only {INVENTORY} and {SHIP}, found {:?}",
                call.tool.to_lossy()
            )));
    }
    let replay = Replay::new(cassette, None)?;
    let tools = Recorded {
        replay: &replay,
        steps: RefCell::new(Vec::new()),
        divergence: RefCell::new(None),
    };
    let outcome = policy.run(&tools);
    let mut divergence = tools.divergence.into_inner();
    if divergence.is_none()
        && let Err(e) = replay.assert_consumed()
    {
        divergence = Some(Divergence {
            step: None,
            message: e.to_string(),
            closest: None,
        });
    }
    Ok(OfflineReplay {
        steps: tools.steps.into_inner(),
        outcome,
        divergence,
    })
}
