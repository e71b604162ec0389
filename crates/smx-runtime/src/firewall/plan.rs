//! Planning hook: the time-triggered edges of a run, turned into firewall pairs.
//!
//! An edge is time-triggered when its timing is `tt` and at least one end has a period.
//! Following spec runtime.md §3.1, with `Ts`/`Td` the source/destination periods:
//!
//! | case | producer→firewall | firewall→consumer |
//! |---|---|---|
//! | `Ts == Td` | one firewall, length 1 | length 1 |
//! | both set, different | firewall `Ts` (length 1) → firewall `Td` (length 1, overwriting) | length 1 |
//! | only `Ts` | length 1 | the user's length |
//! | only `Td` | the user's length | length 1 |
//!
//! All pairs of one period form one [`Firewall`], which [`Firewall::into_shards`] spreads
//! over threads. The firewalls' SCHED_FIFO level is one above the highest level of any box
//! they serve, and at least [`DEFAULT_FIREWALL_PRIORITY`].

use std::collections::BTreeMap;
use std::time::Duration;

use crate::channel::{self, ChannelKind, Reader, Writer};
use crate::firewall::{Firewall, FirewallOptions, Shard, input_kind, output_kind};
use crate::plan::{ChannelPlan, Plan};
use smx_graph::Timing;
use smx_timing::sched;

use crate::{PinMode, RunOptions};
use smx_timing::lateness::human_ns;

/// Whether `c` goes through a firewall.
pub fn is_time_triggered(c: &ChannelPlan) -> bool {
    c.timing == Timing::TimeTriggered && !(c.src_period.is_zero() && c.dst_period.is_zero())
}

/// Length of the firewall→consumer channel of `c` (the one its report row describes): the
/// user's length when only the source side is time-triggered, else 1.
pub fn consumer_side_len(c: &ChannelPlan) -> usize {
    if c.dst_period.is_zero() { c.len } else { 1 }
}

/// How many message slots the queues of channel `c` hold together, as [`TtWiring::wire`]
/// creates them: a time-triggered side holds one message (spec §3.1), the other side the
/// channel's length, and two periods meet through a third queue of one. A queue that drops its
/// oldest keeps [`DROP_OLDEST_SPARE`] slots more; a firewall's queues are counted with them
/// all, an upper bound of a few slots.
pub fn queue_slots(c: &ChannelPlan) -> usize {
    let len = c.len.max(1);
    if !is_time_triggered(c) {
        let spare = if c.kind.producer_decoupled() {
            DROP_OLDEST_SPARE
        } else {
            0
        };
        return len + spare;
    }
    let (ts, td) = (c.src_period, c.dst_period);
    let (slots, queues) = if ts.is_zero() || td.is_zero() {
        (len + 1, 2)
    } else if ts == td {
        (2, 2)
    } else {
        (3, 3)
    };
    slots + queues * DROP_OLDEST_SPARE
}

/// The slots a queue that drops its oldest message keeps beyond its length (`smx_spsc`: one
/// for the message published before the oldest is evicted, one for the consumer's last claim).
const DROP_OLDEST_SPARE: usize = 2;

/// The firewalls of one run while its channels are being created.
#[derive(Default)]
pub struct TtWiring {
    firewalls: BTreeMap<Duration, Firewall>,
}

impl TtWiring {
    pub fn new() -> Self {
        TtWiring::default()
    }

    pub fn is_empty(&self) -> bool {
        self.firewalls.is_empty()
    }

    fn firewall(&mut self, period: Duration) -> &mut Firewall {
        self.firewalls.entry(period).or_insert_with(|| Firewall::new(period))
    }

    /// Creates the channels of the time-triggered edge `c` and returns the producer's writer
    /// and the consumer's reader. A producer run by a cyclic executive (`producer_in_executive`)
    /// gets a writer that never blocks: it shares the firewall's thread.
    pub fn wire(
        &mut self,
        c: &ChannelPlan,
        producer: &str,
        consumer: &str,
        producer_in_executive: bool,
    ) -> (Writer, Reader) {
        let (ts, td) = (c.src_period, c.dst_period);
        let dsrc = c.kind.producer_decoupled() || producer_in_executive;
        let ddst = c.kind.consumer_decoupled();
        let ends = if ts.is_zero() {
            self.firewall(td).connect(producer, consumer, dsrc, c.len, ddst, 1)
        } else if td.is_zero() {
            self.firewall(ts).connect(producer, consumer, dsrc, 1, ddst, c.len)
        } else if ts == td {
            self.firewall(ts).connect(producer, consumer, dsrc, 1, ddst, 1)
        } else {
            let (box_writer, first_in) = channel::channel(input_kind(dsrc), 1);
            let (first_out, second_in) = channel::channel(ChannelKind::Decoupled, 1);
            let (second_out, box_reader) = channel::channel(output_kind(ddst), 1);
            let first_name = format!("tf_{}", human_ns(ts.as_nanos() as u64));
            let second_name = format!("tf_{}", human_ns(td.as_nanos() as u64));
            self.firewall(ts).add_pair(producer, &second_name, first_in, first_out);
            self.firewall(td).add_pair(&first_name, consumer, second_in, second_out);
            (box_writer, box_reader)
        };
        // An executive runs a box whose sides are all at its period, so a producer in an
        // executive feeds the pair just added to the firewall of period `ts`.
        if producer_in_executive && !ts.is_zero() {
            self.firewall(ts).last_producer_in_pass();
        }
        ends
    }

    /// Every firewall's threads, ready to start.
    /// Each period's first thread starts at the next core of `opts.cores`, so that the
    /// executives of two periods do not meet on one core.
    pub fn into_shards(self, opts: &FirewallOptions) -> Vec<Shard> {
        self.firewalls
            .into_values()
            .enumerate()
            .flat_map(|(k, f)| {
                let mut mine = opts.clone();
                if !mine.cores.is_empty() {
                    let turn = k % mine.cores.len();
                    mine.cores.rotate_left(turn);
                }
                f.into_shards(&mine)
            })
            .collect()
    }
}

/// The firewalls' SCHED_FIFO level for `plan`: above every time-triggered box, or `None`
/// when `requested` is `None` (real-time priority switched off).
pub fn firewall_priority(plan: &Plan, requested: Option<u8>) -> Option<u8> {
    let requested = requested?;
    let served = plan
        .channels
        .iter()
        .filter(|c| is_time_triggered(c))
        .flat_map(|c| [plan.nets[c.from].priority, plan.nets[c.to].priority])
        .flatten()
        .max()
        .unwrap_or(0);
    Some(requested.max(served.saturating_add(1)).min(99))
}

/// The firewall threads of a run: [`RunOptions::firewall`] with the priority raised above the
/// served boxes, one thread per allowed core unless configured, pinned as the run's nets are.
pub fn shards(plan: &Plan, tt: TtWiring, opts: &RunOptions) -> Vec<Shard> {
    if tt.is_empty() {
        return Vec::new();
    }
    let mut fw = opts.firewall.clone();
    fw.priority = firewall_priority(plan, fw.priority);
    let allowed = sched::allowed_cores();
    if fw.cores.is_empty() {
        fw.cores = match &opts.pin {
            PinMode::Auto => allowed.clone(),
            PinMode::Off => Vec::new(),
            PinMode::List(list) => list.clone(),
        };
    }
    fw.shards = Some(fw.shards.unwrap_or(allowed.len()).max(1));
    if fw.mode == super::TtMode::Cyclic {
        // One executive per period: it runs that period's boxes and all its pairs.
        fw.shards = Some(1);
    }
    tt.into_shards(&fw)
}
