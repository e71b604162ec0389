//! Where each thread of a run goes, decided from the graph (which threads talk to which, which
//! boxes a cyclic executive runs) and the machine (the cores this process may use).
//!
//! The rules, and why (`--pin auto`, the default):
//! - **A cyclic executive gets a core of its own** when the machine has more cores than there are
//!   executives. Nothing else of the run is placed there, so the executive may spin towards each
//!   release and run at real-time priority (`--rt auto`) without starving a thread of the run: on
//!   a shared core a spinning executive keeps the box it just released from running until the
//!   scheduler's next tick, and a real-time one can starve it for good.
//! - **Box threads that fit spread out**: one per core, a channel's two ends on different cores,
//!   so that they run in parallel and a waiting end can spin.
//! - **Box threads that outnumber their cores stay with the threads they talk to**: the nets are
//!   laid out along their channels (sources first, each chain in one piece) and cut into one
//!   block per core. A channel then mostly joins two threads of one core, whose ends yield to
//!   each other instead of spinning ([`crate::channel::share_core`]), and only the cut channels
//!   cross cores. On shorter channels they are spread. Either way the boxes that can be
//!   chained onto one thread are ([`crate::chain`]): a follower takes its head's core, and a
//!   chain with no channel to another thread is not pinned at all when no executive reserves a
//!   core, so the scheduler can move it to a core that others left idle ([`unpin_lone_chains`]).
//!
//! `--pin LIST` spreads over the list as the fitting case does, `--pin off` pins nothing, and a
//! net's own `core` setting always wins.

use crate::lever::{Lever, LeverWords};
use std::time::Duration;

use crate::PinMode;
use crate::plan::Plan;

/// The decisions that are not a net's core (those are written into the plan).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// Cores of the firewall threads, round-robin (empty: not pinned).
    pub firewall_cores: Vec<usize>,
    /// Each cyclic executive has a core that no other thread of the run uses.
    pub exclusive_executives: bool,
    /// One line per decision, for the report's notes.
    pub notes: Vec<String>,
}

/// Writes a core into every net of `plan` and decides the firewalls' cores. `executive` is,
/// per net, the period of the cyclic executive that runs it; `followers` marks the nets that
/// run on the thread of their chain's head ([`crate::chain`]: the caller gives them the head's
/// core); `executives` is how many executive threads the run has (one per period, zero in
/// the threads mode).
pub fn place(
    plan: &mut Plan,
    executive: &[Option<Duration>],
    followers: &[bool],
    executives: usize,
    pin: &PinMode,
    allowed: &[usize],
    words: LeverWords,
) -> Placement {
    let overrides: Vec<Option<usize>> = plan.nets.iter().map(|n| n.settings.core).collect();
    let links: Vec<(usize, usize)> = plan.channels.iter().map(|c| (c.from, c.to)).collect();
    let own_thread: Vec<bool> = executive
        .iter()
        .zip(followers.iter().chain(std::iter::repeat(&false)))
        .map(|(period, follower)| period.is_none() && !follower)
        .collect();
    let (cores, mut placement) = match pin {
        PinMode::Off => (Vec::new(), Placement::default()),
        PinMode::List(list) => (
            list.clone(),
            Placement {
                firewall_cores: list.clone(),
                ..Placement::default()
            },
        ),
        PinMode::Auto => reserve_for_executives(allowed, executives, &overrides, &own_thread),
    };
    let threads = own_thread
        .iter()
        .zip(&overrides)
        .filter(|(own, o)| **own && o.is_none())
        .count();
    // With one core there is nothing to choose.
    let oversubscribed = matches!(pin, PinMode::Auto) && cores.len() > 1 && threads > cores.len();
    let typical_len = median_len(plan, &own_thread);
    let grouped = oversubscribed && typical_len >= GROUP_MIN_LEN;
    if oversubscribed && !grouped && typical_len > 0 {
        placement.notes.push(format!(
            "placement: {threads} box threads on {}, spread so that a channel's two ends run on different cores: \
             its channels (typically of length {typical_len}) are too short for threads of one core to take turns \
             (from length {GROUP_MIN_LEN} on, each chain would stay on one core)",
            cores_phrase(cores.len())
        ));
    }
    let placed = if grouped {
        placement.notes.push(format!(
            "placement: {threads} box threads share {}, so the threads of each chain stay on one core and take \
             turns, a channel (typically of length {typical_len}) at a time, instead of spinning ({} \
             spreads them)",
            cores_phrase(cores.len()),
            words.name(Lever::CoreList)
        ));
        group_cores(&cores, &links, &overrides, &own_thread)
    } else {
        assign_cores_except(&cores, &links, &overrides, followers)
    };
    for (net, core) in plan.nets.iter_mut().zip(placed) {
        net.core = core;
    }
    if let PinMode::List(list) = pin {
        placement.exclusive_executives = executives_alone(list, executives, plan, &own_thread);
    }
    placement
}

/// Under `--pin LIST`, whether each cyclic executive (the `i`-th on the list's `i`-th core,
/// as the firewall threads are placed) has its core to itself: no two on one core, and no box
/// thread there. Such an executive may spin and take real-time priority, as one on a core
/// that `--pin auto` reserved.
fn executives_alone(list: &[usize], executives: usize, plan: &Plan, own_thread: &[bool]) -> bool {
    if executives == 0 || executives > list.len() {
        return false;
    }
    let theirs = &list[..executives];
    if (1..theirs.len()).any(|i| theirs[..i].contains(&theirs[i])) {
        return false;
    }
    plan.nets
        .iter()
        .zip(own_thread)
        .filter(|(_, own)| **own)
        .all(|(net, _)| net.core.is_some_and(|core| !theirs.contains(&core)))
}

/// Under `--pin auto` without a cyclic executive, unpins the chains that have no channel to a
/// thread outside them, with the report's line saying so. Such a thread hands nothing over
/// between cores, so a core of its own buys nothing, and pinned it cannot move to a core that
/// others left idle (`smxrun bench tune` compares it with pinned chains). With an executive the
/// chains stay pinned, off its core.
pub fn unpin_lone_chains(plan: &mut Plan, chains: &[Vec<usize>], pin: &PinMode, executives: usize) -> Option<String> {
    if !matches!(pin, PinMode::Auto) || executives > 0 {
        return None;
    }
    let member = plan.chain_of(chains);
    let mut talks_out = vec![false; chains.len()];
    for c in &plan.channels {
        match (member[c.from], member[c.to]) {
            (Some(a), Some(b)) if a == b => {}
            (a, b) => {
                for k in [a, b].into_iter().flatten() {
                    talks_out[k] = true;
                }
            }
        }
    }
    let lone: Vec<usize> = (0..chains.len()).filter(|&k| !talks_out[k]).collect();
    if lone.is_empty() {
        return None;
    }
    for &k in &lone {
        for &net in &chains[k] {
            if plan.nets[net].settings.core.is_none() {
                plan.nets[net].core = None;
            }
        }
    }
    let which = match (lone.len(), chains.len()) {
        (1, 1) => "the chain talks".to_string(),
        (l, c) if l == c => "no chain talks".to_string(),
        (1, _) => "1 chain talks".to_string(),
        (l, _) => format!("{l} chains talk"),
    };
    let to = if lone.len() == chains.len() && lone.len() > 1 {
        "another"
    } else {
        "no other"
    };
    Some(format!(
        "placement: {which} to {to} thread of the run, so {} not pinned: the scheduler moves a chain to whichever \
         core is free",
        if lone.len() == 1 { "it is" } else { "they are" }
    ))
}

/// How many cores the box threads may use: those of `--pin LIST`, or the allowed ones less
/// the cores `--pin auto` reserves for cyclic executives (as [`place`] decides).
pub fn box_cores(pin: &PinMode, allowed: &[usize], executives: usize, own_thread: &[bool]) -> usize {
    match pin {
        PinMode::List(list) => distinct_cores(list),
        PinMode::Off => allowed.len(),
        PinMode::Auto => {
            let box_threads = own_thread.iter().filter(|own| **own).count();
            if executives > 0 && allowed.len() > executives && box_threads > 0 {
                allowed.len() - executives
            } else {
                allowed.len()
            }
        }
    }
}

/// How many cores a `--pin` list names (a core listed twice is still one).
pub fn distinct_cores(list: &[usize]) -> usize {
    let mut cores = list.to_vec();
    cores.sort_unstable();
    cores.dedup();
    cores.len()
}

/// From this channel length on, threads that share a core hand over enough messages per turn
/// to beat threads on different cores that spin; below it a turn per message or two costs more
/// than spinning across cores (docs/performance.md, "Placement").
pub const GROUP_MIN_LEN: usize = 16;

/// The median length of the channels between nets with threads of their own (0: none).
fn median_len(plan: &Plan, own_thread: &[bool]) -> usize {
    let own = |net: usize| own_thread.get(net).copied().unwrap_or(true);
    let mut lens: Vec<usize> = plan
        .channels
        .iter()
        .filter(|c| c.from != c.to && own(c.from) && own(c.to) && !crate::firewall::plan::is_time_triggered(c))
        .map(|c| c.len)
        .collect();
    lens.sort_unstable();
    lens.get(lens.len() / 2).copied().unwrap_or(0)
}

pub(crate) fn cores_phrase(cores: usize) -> String {
    if cores == 1 {
        "1 core".to_string()
    } else {
        format!("{cores} cores")
    }
}

/// With `--pin auto`: the cores left to the box threads, and the executives' own cores when the
/// machine has a core to spare for each.
fn reserve_for_executives(
    allowed: &[usize],
    executives: usize,
    overrides: &[Option<usize>],
    own_thread: &[bool],
) -> (Vec<usize>, Placement) {
    let box_threads = own_thread.iter().filter(|own| **own).count();
    let spare = executives > 0 && allowed.len() > executives && box_threads > 0;
    if !spare {
        let placement = Placement {
            firewall_cores: allowed.to_vec(),
            // Nothing else runs, so the lone executive's core is its own.
            exclusive_executives: executives == 1 && box_threads == 0,
            notes: Vec::new(),
        };
        return (allowed.to_vec(), placement);
    }
    let (rest, reserved) = allowed.split_at(allowed.len() - executives);
    // A net pinned by its own `core` setting onto a reserved core shares it after all.
    let clash = overrides
        .iter()
        .zip(own_thread)
        .any(|(core, own)| *own && core.is_some_and(|c| reserved.contains(&c)));
    let list = |cores: &[usize]| cores.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let note = if clash {
        format!(
            "placement: cyclic executive on core {}, shared with a net whose `core` setting puts it there \
             (no spinning or real-time priority for the executive)",
            list(reserved)
        )
    } else {
        format!(
            "placement: cyclic executive alone on core {}, the {box_threads} other thread{} on core {}",
            list(reserved),
            if box_threads == 1 { "" } else { "s" },
            list(rest)
        )
    };
    let placement = Placement {
        firewall_cores: reserved.to_vec(),
        exclusive_executives: !clash,
        notes: vec![note],
    };
    (rest.to_vec(), placement)
}

/// Spreads nets over `cores`, preferring for each net a core that none of its already placed
/// neighbours uses (so a channel's producer and consumer run in parallel), and among those the
/// least loaded, round-robin. `overrides` (the per-net `core` setting) win. An empty `cores`
/// list leaves every net without an override unpinned. The nets marked in `skip` (chain
/// followers, which take their head's core) get no core and weigh on no core's load.
///
/// The nets are placed in net order, and again with the nets that have the most neighbours
/// first: a net that talks to many (a fan-in's consumer) placed last can find every core taken
/// by one of them, where placed first it leaves them a core apart from it. The second wins
/// when it loads no core more and leaves fewer channels within one core.
fn assign_cores_except(
    cores: &[usize],
    links: &[(usize, usize)],
    overrides: &[Option<usize>],
    skip: &[bool],
) -> Vec<Option<usize>> {
    if cores.is_empty() {
        return overrides.to_vec();
    }
    let n = overrides.len();
    let mut neighbours: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in links {
        if a < n && b < n && a != b {
            neighbours[a].push(b);
            neighbours[b].push(a);
        }
    }
    let order: Vec<usize> = (0..n)
        .filter(|&net| overrides[net].is_none() && !skip.get(net).copied().unwrap_or(false))
        .collect();
    let mut hubs_first = order.clone();
    hubs_first.sort_by_key(|&net| std::cmp::Reverse(neighbours[net].len()));
    let in_order = spread_in_order(cores, &neighbours, overrides, &order);
    if hubs_first == order {
        return in_order;
    }
    let by_hubs = spread_in_order(cores, &neighbours, overrides, &hubs_first);
    let cost = |placed: &[Option<usize>]| {
        let mut load = std::collections::HashMap::new();
        for core in placed.iter().flatten() {
            *load.entry(*core).or_insert(0usize) += 1;
        }
        let busiest = load.values().copied().max();
        let within = links
            .iter()
            .filter(|&&(a, b)| a != b && placed[a].is_some() && placed[a] == placed[b])
            .count();
        (busiest, within)
    };
    if cost(&by_hubs) < cost(&in_order) {
        by_hubs
    } else {
        in_order
    }
}

/// [`assign_cores_except`] for the nets of `order`, placed one after the other.
fn spread_in_order(
    cores: &[usize],
    neighbours: &[Vec<usize>],
    overrides: &[Option<usize>],
    order: &[usize],
) -> Vec<Option<usize>> {
    let mut placed: Vec<Option<usize>> = overrides.to_vec();
    let mut load = vec![0usize; cores.len()];
    for core in overrides.iter().flatten() {
        if let Some(slot) = cores.iter().position(|c| c == core) {
            load[slot] += 1;
        }
    }
    let mut next = 0;
    for &net in order {
        let taken = |core: usize| neighbours[net].iter().any(|&m| placed[m] == Some(core));
        let best = (0..cores.len())
            .map(|k| (next + k) % cores.len())
            .min_by_key(|&slot| (taken(cores[slot]), load[slot]))
            .unwrap_or(0);
        load[best] += 1;
        placed[net] = Some(cores[best]);
        next = (best + 1) % cores.len();
    }
    placed
}

/// Lays the nets that have a thread of their own and no `core` setting out along their
/// channels (a depth-first walk from each source, so a chain is contiguous) and cuts that order
/// into `cores.len()` blocks of nearly equal size, one per core.
pub fn group_cores(
    cores: &[usize],
    links: &[(usize, usize)],
    overrides: &[Option<usize>],
    own_thread: &[bool],
) -> Vec<Option<usize>> {
    let n = overrides.len();
    let mut placed = overrides.to_vec();
    let movable = |net: usize| own_thread.get(net).copied().unwrap_or(true) && overrides[net].is_none();
    let mut neighbours: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut has_input = vec![false; n];
    for &(a, b) in links {
        if a < n && b < n && a != b {
            neighbours[a].push(b);
            neighbours[b].push(a);
            has_input[b] = true;
        }
    }
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let starts = (0..n).filter(|&v| !has_input[v]).chain(0..n);
    for start in starts {
        let mut stack = vec![start];
        while let Some(v) = stack.pop() {
            if std::mem::replace(&mut seen[v], true) {
                continue;
            }
            if movable(v) {
                order.push(v);
            }
            // Reversed so that the first neighbour is visited first.
            stack.extend(neighbours[v].iter().rev().filter(|&&w| !seen[w]));
        }
    }
    let blocks = cores.len().max(1);
    for (position, &net) in order.iter().enumerate() {
        placed[net] = Some(cores[position * blocks / order.len().max(1)]);
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executives_have_listed_cores_to_themselves_only_on_distinct_cores() {
        let plan = Plan {
            nets: Vec::new(),
            channels: Vec::new(),
        };
        assert!(executives_alone(&[0], 1, &plan, &[]));
        assert!(executives_alone(&[0, 1], 2, &plan, &[]));
        // A core listed twice would give two executives one core, each thinking it its own.
        assert!(!executives_alone(&[0, 0], 2, &plan, &[]));
        assert!(!executives_alone(&[0], 2, &plan, &[]));
        assert!(!executives_alone(&[0, 1], 0, &plan, &[]));
    }

    #[test]
    fn pairs_get_producer_and_consumer_on_different_cores() {
        let links = [(0, 1), (2, 3), (4, 5)];
        let placed = assign_cores_except(&[0, 1], &links, &[None; 6], &[]);
        for &(a, b) in &links {
            assert_ne!(placed[a], placed[b], "{placed:?}");
        }
        let on_zero = placed.iter().filter(|c| **c == Some(0)).count();
        assert_eq!(on_zero, 3, "balanced: {placed:?}");
    }

    #[test]
    fn a_consumer_of_two_producers_gets_a_core_apart_from_both() {
        // In net order the producers would take a core each and leave the consumer none apart.
        let links = [(0, 2), (1, 2)];
        let placed = assign_cores_except(&[0, 1], &links, &[None; 3], &[]);
        assert_eq!(placed[0], placed[1], "{placed:?}");
        assert_ne!(placed[0], placed[2], "{placed:?}");
        // Where hubs first leaves no fewer channels within a core, net order stays.
        let links = [(0, 1), (1, 2), (1, 3)];
        let placed = assign_cores_except(&[0, 1], &links, &[None; 4], &[]);
        assert_eq!(placed, vec![Some(0), Some(1), Some(0), Some(0)], "{placed:?}");
    }

    #[test]
    fn overrides_win_and_no_cores_means_unpinned() {
        let placed = assign_cores_except(&[0, 1, 2], &[(0, 1)], &[Some(2), None], &[]);
        assert_eq!(placed[0], Some(2));
        assert_ne!(placed[1], Some(2));
        assert_eq!(
            assign_cores_except(&[], &[(0, 1)], &[None, Some(1)], &[]),
            vec![None, Some(1)]
        );
    }

    #[test]
    fn a_chain_alternates_over_a_core_list() {
        let placed = assign_cores_except(&[5, 7], &[(0, 1), (1, 2), (2, 3)], &[None; 4], &[]);
        assert_eq!(placed, vec![Some(5), Some(7), Some(5), Some(7)]);
    }

    #[test]
    fn grouped_pairs_keep_both_ends_on_one_core_and_balance() {
        let links: Vec<(usize, usize)> = (0..8).map(|p| (2 * p, 2 * p + 1)).collect();
        let placed = group_cores(&[0, 1], &links, &[None; 16], &[true; 16]);
        for &(a, b) in &links {
            assert_eq!(placed[a], placed[b], "{placed:?}");
        }
        assert_eq!(placed.iter().filter(|c| **c == Some(0)).count(), 8, "{placed:?}");
    }

    #[test]
    fn grouped_chains_are_cut_once_and_skip_executive_boxes() {
        // Two chains 0->1->2 and 3->4->5; net 6 runs in an executive.
        let links = [(0, 1), (1, 2), (3, 4), (4, 5), (6, 0)];
        let mut own = [true; 7];
        own[6] = false;
        let placed = group_cores(&[0, 1], &links, &[None; 7], &own);
        assert!(placed[..3].iter().all(|c| *c == placed[0]), "{placed:?}");
        assert!(placed[3..6].iter().all(|c| *c == placed[3]), "{placed:?}");
        assert_ne!(placed[0], placed[3], "{placed:?}");
        assert_eq!(placed[6], None);
    }

    #[test]
    fn an_executive_gets_a_core_of_its_own_when_one_is_spare() {
        let own = [false, false, true, true];
        let (cores, placement) = reserve_for_executives(&[0, 1], 1, &[None; 4], &own);
        assert_eq!(cores, vec![0]);
        assert_eq!(placement.firewall_cores, vec![1]);
        assert!(placement.exclusive_executives);
        assert_eq!(placement.notes.len(), 1);
        let (_, shared) = reserve_for_executives(&[0, 1], 1, &[None, None, Some(1), None], &own);
        assert!(
            !shared.exclusive_executives,
            "a `core` setting onto the reserved core shares it"
        );
        let (cores, none_spare) = reserve_for_executives(&[0], 1, &[None; 4], &own);
        assert_eq!((cores, none_spare.exclusive_executives), (vec![0], false));
    }
}
