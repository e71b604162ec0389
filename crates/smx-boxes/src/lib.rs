//! The built-in boxes of smx, written against the box contract (`smx-box`) alone, as a user's
//! boxes are: a seeded random source, a null sink that checks order, a dump sink, a forwarder.
//! The ZeroMQ boxes are in `smx-zmq`.

pub mod fwd;
pub mod snk_dump;
pub mod snk_null;
pub mod src_rand;

use smx_box::BoxSpec;

/// The specs of these boxes.
pub fn specs() -> Vec<BoxSpec> {
    vec![src_rand::SPEC, snk_null::SPEC, snk_dump::SPEC, fwd::SPEC]
}
