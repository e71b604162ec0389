//! The crossbeam peer with blocking ends: `crossbeam_channel::bounded(len)`, `send` and `recv`
//! (which spin briefly and then park).

use crossbeam_channel::{Receiver, Sender};
use smx_box::Message;

use super::pairs::Link;

pub struct Blocking;

impl Link for Blocking {
    type Tx = Sender<Message>;
    type Rx = Receiver<Message>;

    fn make(len: usize) -> (Self::Tx, Self::Rx) {
        crossbeam_channel::bounded(len)
    }

    fn send(tx: &mut Self::Tx, msg: Message) -> bool {
        tx.send(msg).is_ok()
    }

    fn recv(rx: &mut Self::Rx) -> Option<Message> {
        rx.recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::super::pairs::{PairShape, run};

    #[test]
    fn every_message_of_every_pair_arrives() {
        let run = run::<super::Blocking>(PairShape {
            pairs: 3,
            count: 500,
            len: 1,
            size: 20,
            pin: false,
        });
        assert!(run.valid, "{:?}", run.problems);
        assert_eq!(run.metrics["messages"], 1500.0);
        assert!(run.metrics["msg_rate_hz"] > 0.0 && run.metrics.contains_key("cpu_s_per_m"));
    }
}
