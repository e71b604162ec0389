//! The channels of a run: `smx-channel`'s queues, carrying [`Message`]s.

use smx_box::Message;

pub use smx_channel::{
    ChannelKind, ChannelState, Closed, CountSnapshot, Counters, DEFAULT_SPIN, Halt, Poll, Refused, share_core, wait_any,
};

pub type Reader = smx_channel::Reader<Message>;
pub type Writer = smx_channel::Writer<Message>;

/// A channel of `kind` holding up to `len` messages (at least 1).
pub fn channel(kind: ChannelKind, len: usize) -> (Writer, Reader) {
    smx_channel::channel(kind, len)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_message_and_its_stamp_fill_one_cache_line() {
        // One line per hand-over between threads (`smx_box::INLINE_CAPACITY` says why).
        assert_eq!(smx_channel::slot_bytes::<smx_box::Message>(), 64);
    }
}
