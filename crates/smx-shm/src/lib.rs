//! Shared-memory link boxes: one channel of a net cut between two processes of one machine.
//!
//! `smx_link_shm_snk(in data)` runs in the producer's process, `smx_link_shm_src(out data)` in
//! the consumer's; both name the same file with `path`. Between them is a ring of `len` slots
//! of `max_payload` bytes in one shared mapping of that file, so the cut channel keeps its
//! length (a full ring holds back the producer), its order, end of stream in both directions,
//! and each message's sequence number and creation time.
//!
//! **Keys.** `path` (both; the file, e.g. `/dev/shm/smx-RUN-EDGE`, unique per run and link),
//! `len` (sink; the ring's length: `smxrun` gives it three quarters of the cut channel's length
//! and the consumer's half of the channel a quarter), `max_payload` (sink; bytes per slot,
//! default 64 KiB: a larger message fails the sink with an error naming the key),
//! `shrink_to_fit` (sink; default false: when the file system has too little room for `len`
//! slots of `max_payload`, more than half its free room, the slots are made smaller, a
//! multiple of 64 bytes and at least 64 KiB, so that the ring takes at most that half; the sink
//! warns once, and a larger message fails it with an error naming that limit and the room it
//! came from), `timeout` (both; how long to wait for the peer to appear, default 5 s),
//! `copy_limit` (source; see below).
//!
//! **The file.** The sink creates it with `O_CREAT | O_EXCL`, mode 0600, sized by `ftruncate`
//! (tmpfs is sparse: only touched pages cost memory), and removes it at its end. A file already
//! at `path` is refused, unless it is a link file whose creator's process is dead (then it is
//! replaced, as the consumer removes the file of a creator it saw die); nothing else is ever
//! removed, but by [`remove_stale_links`], which sweeps a directory of the link files whose
//! creator and consumer have both died. The source waits for the file, its ready word and
//! a live creator: a file whose creator died is waited past, for the one that replaces it.
//!
//! **Copies.** The sink copies each payload once, from the message into its slot; a payload
//! that the producing box builds in place ([`smx_box::Io::write_filled`]) while the sink runs
//! on its thread (a chain) is built in the slot, and not copied at all. The source copies a
//! payload of up to `copy_limit` bytes (default 4 KiB) into an ordinary message and frees the
//! slot at once; a larger one is read in place: the message's payload is the slot, and
//! dropping the message (and its clones), on any thread, frees the slot. So from 4 KiB up the
//! link costs at most one copy whatever the size.
//!
//! **Books** (report section `shm`, see `books`): the sink's `written` = the source's
//! `received` + `left` (the source closed, or the run stopped, with messages in the ring) +
//! `lost` (the source's process died, or none attached within `timeout`), each message in one
//! of them. On a stop the source's process may run on: the sink gives it a short grace to take
//! what is in the ring, then cuts the ring and waits for the source's answer, the count of what
//! it took: the source looks at the cut before each message it takes, and from the cut on it
//! takes nothing. What it had not taken is `left` and is never taken. A source frozen in the
//! middle of handing a message on does not answer; after a short wait the sink books from the
//! source's last count and its row says the cut went unanswered (that one message may then be
//! counted on both sides). The source ends with the stream, with the cut (`producer
//! stopped`), or with `peer_died` when the producer's process died without ending it.
//!
//! **Why not iceoryx2.** The boxes need a payload a [`smx_box::Message`] can own and move
//! across threads and drop anywhere, blocking waits that wake on the peer's death and on the
//! run's stop as well as on data, and exact books of what was in flight when a peer died. A
//! ring written for that over one mapping (futex waits in slices, a liveness check of the
//! peer's process between slices) is a few hundred lines; an outside framework's service, node and
//! sample lifetimes would have to be bent to each of these.
//!
//! * `segment`: the file and its mapping.
//! * `ring`: the layout, the futex waits, the liveness check.
//! * `producer`, `consumer`: the two sides, usable without the runtime.
//! * `settings`, `books`: the keys and the report rows.
//! * `sink`, `source`: the boxes.

mod books;
mod consumer;
mod error;
mod producer;
mod ring;
mod segment;
mod settings;
mod sink;
mod source;

pub use consumer::{Consumer, ConsumerBooks, Next, ProducerEnd};
pub use error::ShmError;
pub use producer::{ConsumerEnd, Producer, ProducerBooks, Sent};
pub use segment::{check_free, remove_stale_links};

use smx_box::BoxSpec;

/// The specs of both boxes.
pub fn specs() -> Vec<BoxSpec> {
    vec![
        BoxSpec::named("smx_link_shm_snk")
            .summary("publishes each message into a shared-memory ring read by smx_link_shm_src in another process")
            .inputs(sink::INPUTS)
            .config(settings::SINK_KEYS)
            .validate(sink::validate)
            .bridge()
            .chainable()
            .passes_on()
            .create(sink::create),
        BoxSpec::named("smx_link_shm_src")
            .summary("emits each message smx_link_shm_snk published into its shared-memory ring in another process")
            .outputs(source::OUTPUTS)
            .config(settings::SOURCE_KEYS)
            .validate(source::validate)
            .writes_in_batches()
            .brings_in()
            .create(source::create),
    ]
}
