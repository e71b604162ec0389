//! The crossbeam peer with busy-polling ends: the same bounded channel, but `try_send` and
//! `try_recv` in a loop, so no end ever parks.

use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};
use smx_box::Message;

use super::pairs::{Link, backoff};

pub struct Spin;

impl Link for Spin {
    type Tx = Sender<Message>;
    type Rx = Receiver<Message>;

    fn make(len: usize) -> (Self::Tx, Self::Rx) {
        crossbeam_channel::bounded(len)
    }

    fn send(tx: &mut Self::Tx, mut msg: Message) -> bool {
        let mut polls = 0;
        loop {
            match tx.try_send(msg) {
                Ok(()) => return true,
                Err(TrySendError::Full(back)) => msg = back,
                Err(TrySendError::Disconnected(_)) => return false,
            }
            backoff(&mut polls);
        }
    }

    fn recv(rx: &mut Self::Rx) -> Option<Message> {
        let mut polls = 0;
        loop {
            match rx.try_recv() {
                Ok(msg) => return Some(msg),
                Err(TryRecvError::Empty) => backoff(&mut polls),
                Err(TryRecvError::Disconnected) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::pairs::{PairShape, run};

    #[test]
    fn every_message_of_every_pair_arrives() {
        let run = run::<super::Spin>(PairShape {
            pairs: 3,
            count: 500,
            len: 2,
            size: 20,
            pin: false,
        });
        assert!(run.valid, "{:?}", run.problems);
        assert_eq!(run.metrics["messages"], 1500.0);
    }
}
