//! ZeroMQ boxes: `smx_snk_zmq` sends a stream out of a net, `smx_src_zmq` brings one in, in
//! the same process or across processes and hosts, with exact, explained loss accounting.
//!
//! * [`wire`]: the two-frame message format (topic, then header and payload).
//! * [`batch`]: several waiting messages of one topic in one frame.
//! * [`eos`]: the end-of-stream marker and why it is reliable over PUB/SUB.
//! * [`books`]: the receiver's per-stream loss accounting.
//! * [`endpoint`], [`settings`]: validation before the net starts.
//! * [`loopback`]: a free tcp port for a net started beside another (benches, tests).
//! * [`socket`], [`sender`], [`receiver`]: the ZeroMQ side, usable without the runtime.
//! * [`sink`], [`source`]: the boxes.
//! * [`verdict`]: what a row's books say about its link, in one word.

// Links the libzmq that has CURVE (.cargo/config.toml makes zmq-sys only declare the symbols).
extern crate smx_libzmq;

pub mod batch;
pub mod books;
pub mod curve;
pub mod endpoint;
pub mod eos;
pub mod loopback;
mod peers;
pub mod receiver;
pub mod sender;
pub mod settings;
pub mod sink;
pub mod socket;
pub mod source;
pub mod verdict;
pub mod wire;

#[cfg(test)]
mod tests;

use smx_box::BoxSpec;

/// Descriptors a ZMQ box holds: its own context (epoll, mailboxes of the I/O thread and the
/// reaper), the socket and its mailbox, the connection, the monitor pair: 16 measured for one
/// sink and one source over tcp, with some to spare. libzmq aborts the process when it runs out.
pub const FDS_PER_BOX: u32 = 20;

/// The specs of both boxes.
pub fn specs() -> Vec<BoxSpec> {
    vec![
        BoxSpec::named("smx_snk_zmq")
            .summary("sends each message over ZeroMQ (pubsub or pipeline), ending with an end-of-stream marker")
            .inputs(sink::INPUTS)
            .config(settings::SINK_KEYS)
            .validate(sink::validate)
            .bridge()
            .file_descriptors(FDS_PER_BOX)
            .chainable()
            .create(sink::create),
        BoxSpec::named("smx_src_zmq")
            .summary("emits each message received over ZeroMQ and accounts for every lost one")
            .outputs(source::OUTPUTS)
            .config(settings::SOURCE_KEYS)
            .validate(source::validate)
            .file_descriptors(FDS_PER_BOX)
            .writes_in_batches()
            .brings_in()
            .create(source::create),
    ]
}

pub(crate) fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}
