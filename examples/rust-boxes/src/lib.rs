//! Three boxes written against the box contract alone (`smx-box`), as a user writes them:
//!
//! * [`csv_source`]: reads one numeric column of a CSV file, one message per row;
//! * [`smoothing`]: a moving average or exponential low-pass filter;
//! * [`threshold`]: a detector that emits an event when a value crosses a threshold, with
//!   hysteresis so noise around the threshold does not flood the output.
//!
//! Numbers travel as 8-byte little-endian `f64` payloads ([`number`], [`number_message`]); each
//! message keeps the sequence number and timestamp its source gave it, so the report can still
//! check order and loss at the end of the chain.

pub mod csv_source;
pub mod smoothing;
pub mod threshold;

use smx_box::{BoxError, BoxSpec, Message};

/// The specs of this crate's boxes, for `smxrun::main_with_boxes`.
pub fn specs() -> Vec<BoxSpec> {
    vec![
        csv_source::spec(csv_source::EXAMPLE_DATA),
        smoothing::SPEC,
        threshold::SPEC,
    ]
}

/// The number a message carries.
pub fn number(msg: &Message) -> Result<f64, BoxError> {
    let bytes: [u8; 8] = msg.payload().try_into().map_err(|_| {
        BoxError::new(format!(
            "message {} is not a number ({} bytes, want 8)",
            msg.seq,
            msg.len()
        ))
    })?;
    Ok(f64::from_le_bytes(bytes))
}

/// `value` in place of `msg`'s payload, keeping its sequence number and timestamp.
pub fn number_message(msg: &Message, value: f64) -> Message {
    msg.with_payload(&value.to_le_bytes())
}
