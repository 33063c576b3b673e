//! The in-memory shipping world (spec §13.1): `check_inventory` and `create_shipment`, whose
//! commit is recorded as a `shipment` effect. Fresh per run; time passes on the run's clock.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::json::{Object, Value};
use crate::obj;
use crate::storm::Storm;

/// The inventory tool's name.
pub const INVENTORY: &str = "check_inventory";
/// The shipping tool's name.
pub const SHIP: &str = "create_shipment";

/// What a recovery policy can do in the shipping world: call its two tools and wait. Live runs
/// go through the fault engine ([`Live`]); offline replays answer from a recording.
pub trait ShippingTools {
    /// `check_inventory(sku)`.
    fn check_inventory(&self, sku: &Value) -> Result<Value>;
    /// `create_shipment(order_id, warehouse, idempotency_key)`.
    fn create_shipment(
        &self,
        order_id: &str,
        warehouse: &Value,
        idempotency_key: Option<&str>,
    ) -> Result<Value>;
    /// Waits between attempts.
    fn sleep(&self, seconds: f64) -> Result<()>;
}

/// The arguments object `create_shipment` is called with, in signature order.
pub fn shipment_args(order_id: &str, warehouse: &Value, idempotency_key: Option<&str>) -> Value {
    obj! {
        "order_id" => order_id,
        "warehouse" => warehouse.clone(),
        "idempotency_key" => idempotency_key,
    }
}

/// The live world: the in-memory service behind a run of the fault engine.
pub struct Live<'a> {
    /// The run.
    pub storm: &'a Storm,
    /// The service.
    pub service: &'a Shipping,
}

impl ShippingTools for Live<'_> {
    fn check_inventory(&self, sku: &Value) -> Result<Value> {
        self.service.check_inventory(self.storm, sku)
    }
    fn create_shipment(
        &self,
        order_id: &str,
        warehouse: &Value,
        idempotency_key: Option<&str>,
    ) -> Result<Value> {
        self.service
            .create_shipment(self.storm, order_id, warehouse, idempotency_key)
    }
    fn sleep(&self, seconds: f64) -> Result<()> {
        self.storm.sleep(seconds)
    }
}

/// The shipping service: shipments made so far and receipts stored by idempotency key.
#[derive(Default)]
pub struct Shipping {
    shipments: RefCell<Vec<Value>>,
    by_key: RefCell<HashMap<String, Value>>,
}

impl Shipping {
    /// A service with no shipments.
    pub fn new() -> Self {
        Shipping::default()
    }

    /// Every receipt created, in order.
    pub fn shipments(&self) -> Vec<Value> {
        self.shipments.borrow().clone()
    }

    /// `check_inventory(sku)`: 0.08 s, always in stock at AMS-01.
    pub fn check_inventory(&self, storm: &Storm, sku: &Value) -> Result<Value> {
        storm.call(INVENTORY, obj! {"sku" => sku.clone()}, || {
            storm.sleep(0.08)?;
            Ok(obj! {"sku" => sku.clone(), "available" => true, "warehouse" => "AMS-01"})
        })
    }

    /// `create_shipment(order_id, warehouse, idempotency_key=None)`: 0.12 s; a repeated
    /// idempotency key returns the stored receipt without a new commit.
    pub fn create_shipment(
        &self,
        storm: &Storm,
        order_id: &str,
        warehouse: &Value,
        idempotency_key: Option<&str>,
    ) -> Result<Value> {
        storm.call(
            SHIP,
            shipment_args(order_id, warehouse, idempotency_key),
            || {
                storm.sleep(0.12)?;
                if !matches!(warehouse.as_text(), Some(t) if !t.is_empty()) {
                    return Err(Error::raised(
                        "ValueError",
                        "warehouse must be a non-empty string",
                    ));
                }
                if let Some(key) = idempotency_key.filter(|k| !k.is_empty())
                    && let Some(stored) = self.by_key.borrow().get(key)
                {
                    return Ok(stored.clone());
                }
                let number = self.shipments.borrow().len() + 1;
                let mut receipt = Object::new();
                receipt.push("shipment_id", format!("SHP-{number:04}"));
                receipt.push("order_id", order_id);
                receipt.push("warehouse", warehouse.clone());
                let receipt = Value::Object(receipt);
                self.shipments.borrow_mut().push(receipt.clone());
                storm.effect("shipment", order_id)?;
                if let Some(key) = idempotency_key.filter(|k| !k.is_empty()) {
                    self.by_key
                        .borrow_mut()
                        .insert(key.to_owned(), receipt.clone());
                }
                Ok(receipt)
            },
        )
    }
}
