//! The two ends of the raw PUSH/PULL program: where its frames come from and where they go.
//!
//! Plain PUSH/PULL ([`Feed::direct`], [`Drain::direct`]) fills and checks frames on the socket
//! threads themselves. The net-shaped peer ([`Feed::queued`], [`Drain::queued`]) has the shape
//! of the report's ZeroMQ net: a producer thread hands messages through an in-process queue of
//! the net's length to the PUSH thread, and the PULL thread hands them through another such
//! queue to a consumer thread, which checks and reads them. Both queues are crossbeam's
//! bounded channels with blocking ends.

use crossbeam_channel::{Receiver, Sender};
use smx_box::{Message, now_ns};

use super::{PayloadRng, touch};

/// Bytes before the payload in a frame: sequence number and send time, little-endian.
pub const HEADER: usize = 16;

/// Where the PUSH thread's frames come from.
pub enum Feed {
    Direct {
        rng: PayloadRng,
        next: u64,
        count: u64,
    },
    Queued {
        rx: Receiver<Message>,
        producer: std::thread::JoinHandle<()>,
    },
}

impl Feed {
    pub fn direct(count: u64) -> Feed {
        Feed::Direct {
            rng: PayloadRng::new(7),
            next: 0,
            count,
        }
    }

    /// A producer thread writing `count` messages of `size` bytes into a queue of `len`.
    pub fn queued(count: u64, size: usize, len: usize) -> Feed {
        let (tx, rx) = crossbeam_channel::bounded(len.max(1));
        let producer = std::thread::spawn(move || {
            let mut rng = PayloadRng::new(7);
            let mut buf = vec![0u8; size];
            for seq in 0..count {
                rng.fill(&mut buf);
                if tx.send(Message::new(seq, now_ns(), &buf)).is_err() {
                    return;
                }
            }
        });
        Feed::Queued { rx, producer }
    }

    /// Fills `frame` (header and payload) with the next message; false when there is none.
    pub fn next(&mut self, frame: &mut Vec<u8>) -> bool {
        match self {
            Feed::Direct { rng, next, count } => {
                if *next == *count {
                    return false;
                }
                frame[..8].copy_from_slice(&next.to_le_bytes());
                frame[8..16].copy_from_slice(&now_ns().to_le_bytes());
                rng.fill(&mut frame[HEADER..]);
                *next += 1;
                true
            }
            Feed::Queued { rx, .. } => match rx.recv() {
                Ok(msg) => {
                    frame.clear();
                    frame.extend_from_slice(&msg.seq.to_le_bytes());
                    frame.extend_from_slice(&msg.sent_ns.to_le_bytes());
                    frame.extend_from_slice(msg.payload());
                    true
                }
                Err(_) => false,
            },
        }
    }

    /// Stops the producer (if any) once the PUSH thread is done.
    pub fn finish(self) {
        if let Feed::Queued { rx, producer } = self {
            drop(rx);
            let _ = producer.join();
        }
    }
}

/// Where the PULL thread's frames go.
pub enum Drain {
    Direct {
        received: u64,
        in_order: bool,
        checksum: u64,
    },
    Queued {
        tx: Sender<Message>,
        consumer: std::thread::JoinHandle<(u64, bool)>,
    },
}

impl Drain {
    pub fn direct() -> Drain {
        Drain::Direct {
            received: 0,
            in_order: true,
            checksum: 0,
        }
    }

    /// A consumer thread behind a queue of `len`, checking and reading every message.
    pub fn queued(len: usize) -> Drain {
        let (tx, rx) = crossbeam_channel::bounded::<Message>(len.max(1));
        let consumer = std::thread::spawn(move || {
            let (mut received, mut in_order, mut checksum) = (0u64, true, 0u64);
            for msg in rx.iter() {
                in_order &= msg.seq == received;
                checksum ^= touch(msg.payload());
                received += 1;
            }
            std::hint::black_box(checksum);
            (received, in_order)
        });
        Drain::Queued { tx, consumer }
    }

    /// Takes one frame of at least [`HEADER`] bytes.
    pub fn put(&mut self, frame: &[u8]) {
        let seq = u64::from_le_bytes(frame[..8].try_into().unwrap_or_default());
        match self {
            Drain::Direct {
                received,
                in_order,
                checksum,
            } => {
                *in_order &= seq == *received;
                *checksum ^= touch(&frame[HEADER..]);
                *received += 1;
            }
            Drain::Queued { tx, .. } => {
                let sent = u64::from_le_bytes(frame[8..16].try_into().unwrap_or_default());
                // A consumer that is gone shows as missing messages.
                let _ = tx.send(Message::new(seq, sent, &frame[HEADER..]));
            }
        }
    }

    /// Messages checked and whether they came in order.
    pub fn finish(self) -> (u64, bool) {
        match self {
            Drain::Direct {
                received,
                in_order,
                checksum,
            } => {
                std::hint::black_box(checksum);
                (received, in_order)
            }
            Drain::Queued { tx, consumer } => {
                drop(tx);
                consumer.join().unwrap_or((0, false))
            }
        }
    }
}
