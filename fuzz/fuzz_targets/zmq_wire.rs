//! Fuzz target `zmq_wire`: any bytes as a sequence of ZeroMQ messages arriving at a source,
//! through the wire decoder (header, batch records, end-of-stream body) and into the books, as
//! `Receiver` does. Must never panic or loop; every figure of the books must stay within what
//! was received, and books that call themselves consistent must balance.
//!
//! Input layout: messages one after another, each `[u8 topic length][topic][u16 LE body
//! length][body]` (a short tail is one last, truncated message).

#![no_main]

use libfuzzer_sys::fuzz_target;
use smx::boxes::zmq::batch::Records;
use smx::boxes::zmq::books::SourceBooks;
use smx::boxes::zmq::eos::EndOfStream;
use smx::boxes::zmq::wire::{HEADER_LEN, Header, Kind, MAX_SEQ};

fuzz_target!(|data: &[u8]| {
    let mut books = SourceBooks::default();
    let mut rest = data;
    let mut received = 0u64;
    let mut corrupt = 0u64;
    while !rest.is_empty() {
        let topic_len = rest[0] as usize;
        rest = &rest[1..];
        let topic = &rest[..topic_len.min(rest.len())];
        rest = &rest[topic.len()..];
        let body_len = match rest {
            [a, b, ..] => u16::from_le_bytes([*a, *b]) as usize,
            _ => rest.len(),
        };
        rest = &rest[2.min(rest.len())..];
        let body = &rest[..body_len.min(rest.len())];
        rest = &rest[body.len()..];
        match book(&mut books, topic, body) {
            Ok(n) => received += n,
            Err(()) => corrupt += 1,
        }
    }
    let t = books.totals();
    assert_eq!(t.received, received, "every booked message counted once");
    assert!(t.duplicates <= t.received);
    assert!(corrupt <= data.len() as u64);
    if t.inconsistent == 0 {
        assert_eq!(t.sent, t.received - t.duplicates + t.lost, "{t:?}");
        assert!(t.sent <= MAX_SEQ.saturating_mul(16_384));
    }
    let _ = books.complete(1);
});

/// Books one message as the receiver does; the data messages it carried, or `Err` for a
/// message the receiver counts as corrupt.
fn book(books: &mut SourceBooks, topic: &[u8], body: &[u8]) -> Result<u64, ()> {
    let (header, rest) = Header::parse(body).map_err(drop)?;
    match header.kind {
        Kind::Data => books.record(header.sender, topic, header.seq).map(|()| 1).map_err(drop),
        Kind::Batch => {
            let mut records = Records::parse(rest, header.seq).map_err(drop)?;
            let stream = books.stream_of(header.sender, topic).map_err(drop)?;
            let mut n = 0;
            while let Some((seq, range)) = records.next(rest) {
                assert!(range.end <= rest.len() && seq < MAX_SEQ);
                assert!(books.record_in(stream, seq), "a parsed batch books every number");
                n += 1;
            }
            assert!(body.len() >= HEADER_LEN);
            Ok(n)
        }
        Kind::EndOfStream | Kind::Abort => {
            let eos = EndOfStream::decode(rest).map_err(drop)?;
            books.finish(header.sender, rest, &eos.topics, |_| true).map_err(drop)?;
            Ok(0)
        }
    }
}
