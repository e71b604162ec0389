//! The lock-free ring peer: an `rtrb` single-producer single-consumer ring buffer of `len`
//! slots, busy-polled (`push` / `pop` in a loop; the ring has no blocking ends).

use rtrb::{Consumer, Producer, PushError, RingBuffer};
use smx_box::Message;

use super::pairs::{Link, backoff};

pub struct Rtrb;

impl Link for Rtrb {
    type Tx = Producer<Message>;
    type Rx = Consumer<Message>;

    fn make(len: usize) -> (Self::Tx, Self::Rx) {
        RingBuffer::new(len)
    }

    fn send(tx: &mut Self::Tx, mut msg: Message) -> bool {
        let mut polls = 0;
        loop {
            match tx.push(msg) {
                Ok(()) => return true,
                Err(PushError::Full(back)) if !tx.is_abandoned() => msg = back,
                Err(PushError::Full(_)) => return false,
            }
            backoff(&mut polls);
        }
    }

    fn recv(rx: &mut Self::Rx) -> Option<Message> {
        let mut polls = 0;
        loop {
            if let Ok(msg) = rx.pop() {
                return Some(msg);
            }
            // The producer's drop comes after its last push: one more look after seeing it.
            if rx.is_abandoned() {
                return rx.pop().ok();
            }
            backoff(&mut polls);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::pairs::{PairShape, run};

    #[test]
    fn every_message_of_every_pair_arrives() {
        let run = run::<super::Rtrb>(PairShape {
            pairs: 3,
            count: 500,
            len: 1,
            size: 20,
            pin: false,
        });
        assert!(run.valid, "{:?}", run.problems);
        assert_eq!(run.metrics["messages"], 1500.0);
        // The span of the threads' own clocks: positive, and the rate is taken over it.
        let wall = run.metrics["wall_s"];
        assert!(wall > 0.0 && wall.is_finite(), "{wall}");
        assert_eq!(run.metrics["msg_rate_hz"], 1500.0 / wall);
    }
}
