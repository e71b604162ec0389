//! Which boxes share a thread, and the report's lines on it: the chains of a plan, decided
//! before any thread starts, for [`super`] to run.

use crate::lever::{Lever, LeverWords};
use crate::options::ChainMode;
use crate::plan::{Plan, Role};

/// The chains of `plan` (net ids, head first, at least two each) when `mode` and the machine
/// call for them, and the report's line saying why. `own_thread`: per net, whether it would
/// have a thread of its own (not in a cyclic executive); `cores`: how many cores the box
/// threads may use.
pub fn decide(
    plan: &Plan,
    own_thread: &[bool],
    cores: usize,
    mode: ChainMode,
    words: LeverWords,
) -> (Vec<Vec<usize>>, Option<String>) {
    let threads = own_thread.iter().filter(|own| **own).count();
    if mode == ChainMode::Off || cores == 0 || threads <= cores {
        return (Vec::new(), None);
    }
    let chains = find(plan, own_thread);
    if chains.is_empty() {
        return (chains, None);
    }
    let note = decision_note(plan, &chains, threads, cores, words);
    (chains, Some(note))
}

/// The nets on threads of their own that never wait, when box threads share cores: a box
/// whose inputs are all decoupled fires again at once (a decoupled input never holds it back),
/// as does a source whose outputs are all decoupled; writing nowhere it could block, it keeps
/// its core busy, so the threads placed beside it would run only when the scheduler takes the
/// core from it (a decoupled source's consumer then reads a message or two of the whole run).
/// Such a thread offers its core after each step. `own_thread` and `cores` as for [`decide`];
/// `chains`: what [`decide`] chose.
pub fn never_waiting(plan: &Plan, own_thread: &[bool], cores: usize, chains: &[Vec<usize>]) -> Vec<usize> {
    let followers: usize = chains.iter().map(|c| c.len() - 1).sum();
    let threads = own_thread.iter().filter(|own| **own).count().saturating_sub(followers);
    if cores == 0 || threads <= cores {
        return Vec::new();
    }
    (0..plan.nets.len())
        .filter(|&net| own_thread[net] && never_waits(plan, net).is_some())
        .collect()
}

/// Why the box `net` never waits, if it never does: it reads only decoupled inputs, or reads
/// nothing, writes only decoupled outputs and its spec says its step waits on nothing; either
/// way it writes nowhere it could block.
fn never_waits(plan: &Plan, net: usize) -> Option<NeverWaits> {
    let inputs: Vec<_> = plan.channels.iter().filter(|c| c.to == net && c.from != net).collect();
    let mut outputs = plan.channels.iter().filter(|c| c.from == net && c.to != net).peekable();
    let writes = outputs.peek().is_some();
    let blocks_on_write = outputs.any(|c| !c.kind.producer_decoupled());
    if !matches!(plan.nets[net].role, Role::Box(_)) || blocks_on_write {
        return None;
    }
    if inputs.is_empty() {
        // Only a source whose spec says its step waits on nothing: one that waits for the
        // world (a ZeroMQ source, a C source that sleeps) gives its core away by itself.
        let waits_on_nothing = matches!(&plan.nets[net].role, Role::Box(spec) if spec.never_waits);
        (writes && waits_on_nothing).then_some(NeverWaits::DecoupledSource)
    } else {
        inputs
            .iter()
            .all(|c| c.kind.consumer_decoupled())
            .then_some(NeverWaits::DecoupledInputs)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum NeverWaits {
    DecoupledInputs,
    DecoupledSource,
}

impl NeverWaits {
    fn reason(self) -> &'static str {
        match self {
            NeverWaits::DecoupledInputs => "reads only decoupled inputs",
            NeverWaits::DecoupledSource => "reads nothing and writes only decoupled outputs",
        }
    }
}

/// The report's line naming the [`never_waiting`] threads.
pub fn never_waiting_note(
    plan: &Plan,
    own_thread: &[bool],
    cores: usize,
    chains: &[Vec<usize>],
    words: LeverWords,
) -> Option<String> {
    let spinning: Vec<(String, NeverWaits)> = never_waiting(plan, own_thread, cores, chains)
        .into_iter()
        .filter_map(|net| Some((plan.nets[net].thread_name(), never_waits(plan, net)?)))
        .collect();
    let (first_name, first_why) = spinning.first()?.clone();
    let followers: usize = chains.iter().map(|c| c.len() - 1).sum();
    let threads = own_thread.iter().filter(|own| **own).count().saturating_sub(followers);
    let why = if spinning.len() == 1 {
        format!("{first_name} {}, so its thread never waits", first_why.reason())
    } else if spinning.iter().all(|(_, why)| *why == first_why) {
        let names: Vec<&str> = spinning.iter().map(|(name, _)| name.as_str()).collect();
        let reason = match first_why {
            NeverWaits::DecoupledInputs => "read only decoupled inputs",
            NeverWaits::DecoupledSource => "read nothing and write only decoupled outputs",
        };
        format!("{} {reason}, so their threads never wait", names.join(", "))
    } else {
        let each: Vec<String> = spinning
            .iter()
            .map(|(name, why)| format!("{name} ({})", why.reason()))
            .collect();
        format!("{}: their threads never wait", each.join(", "))
    };
    Some(format!(
        "busy threads: {why}, while {threads} box threads share {}: each step ends by \
         offering the core to the others, so every hand-over there costs a switch of threads (a \
         `core` of its own, or {} with more cores, helps)",
        if cores == 1 {
            "1 core".to_string()
        } else {
            format!("{cores} cores")
        },
        words.name(Lever::CoreList),
    ))
}

/// The report's line for `chains`, decided because `threads` box threads would share `cores`.
fn decision_note(plan: &Plan, chains: &[Vec<usize>], threads: usize, cores: usize, words: LeverWords) -> String {
    let chained: usize = chains.iter().map(|c| c.len() - 1).sum();
    let mut listed: Vec<String> = chains.iter().take(3).map(|chain| shape(plan, chain)).collect();
    if chains.len() > 3 {
        listed.push(format!("and {} more", chains.len() - 3));
    }
    let plural = |n: usize, word: &str| {
        if n == 1 {
            format!("1 {word}")
        } else {
            format!("{n} {word}s")
        }
    };
    let runs = if chains.len() == 1 {
        "1 chain runs on one thread".to_string()
    } else {
        format!("{} chains run on a thread each", chains.len())
    };
    format!(
        "chaining: {threads} box threads would share {}, so {runs} ({}), {} fewer \
         ({} keeps a thread per box)",
        plural(cores, "core"),
        listed.join("; "),
        plural(chained, "thread"),
        words.name(Lever::ChainOff),
    )
}

/// A chain as the note writes it: `A -> B`, a box before what follows it, and its followers in
/// parentheses when it has several (`Src#0 -> smx_rn#3 -> (Snk#1 | Snk#2)`).
fn shape(plan: &Plan, chain: &[usize]) -> String {
    let members: std::collections::HashSet<usize> = chain.iter().copied().collect();
    let mut followers: std::collections::HashMap<usize, Vec<usize>> = std::collections::HashMap::new();
    for c in &plan.channels {
        if c.from != c.to && members.contains(&c.to) && members.contains(&c.from) {
            followers.entry(c.from).or_default().push(c.to);
        }
    }
    for list in followers.values_mut() {
        list.sort_unstable();
        list.dedup();
    }
    let mut out = String::new();
    if let Some(&head) = chain.first() {
        write_shape(plan, head, &followers, &mut out);
    }
    out
}

/// How many of a box's followers the note names before it counts the rest.
const SHOWN_FOLLOWERS: usize = 3;

/// Writes the part of a chain from `at` on; a line of single followers without recursion.
fn write_shape(plan: &Plan, mut at: usize, followers: &std::collections::HashMap<usize, Vec<usize>>, out: &mut String) {
    loop {
        out.push_str(&plan.nets[at].thread_name());
        match followers.get(&at).map(Vec::as_slice) {
            None | Some([]) => return,
            Some([one]) => {
                out.push_str(" -> ");
                at = *one;
            }
            Some(many) => {
                out.push_str(" -> (");
                for (k, &f) in many.iter().take(SHOWN_FOLLOWERS).enumerate() {
                    if k > 0 {
                        out.push_str(" | ");
                    }
                    write_shape(plan, f, followers, out);
                }
                if many.len() > SHOWN_FOLLOWERS {
                    out.push_str(&format!(" | and {} more", many.len() - SHOWN_FOLLOWERS));
                }
                out.push(')');
                return;
            }
        }
    }
}

/// From this channel length on, nothing chains: threads of one core taking turns hand over a
/// channelful per turn, and from about this many messages per turn the two switches of a turn
/// cost less than the chain's own work per message (`smxrun bench scaling` measures both sides
/// of this limit).
pub const CHAIN_MAX_LEN: usize = 256;

/// Every chain the rules of the module docs allow, heads first in net order.
pub fn find(plan: &Plan, own_thread: &[bool]) -> Vec<Vec<usize>> {
    let n = plan.nets.len();
    let own = |net: usize| own_thread.get(net).copied().unwrap_or(true);
    // A routing node chains as a box ([`crate::routing::CHAINED`]); a fan-in has several
    // feeders, so it may only lead a chain.
    static ROUTING: smx_box::BoxSpec = crate::routing::CHAINED;
    let spec = |net: usize| match &plan.nets[net].role {
        Role::Box(spec) => spec,
        Role::Routing => &ROUTING,
    };
    // A routing node fed over a decoupled or time-triggered channel keeps its own thread: its
    // wait there is not a firing rule's.
    let mut unplain_in = vec![false; n];
    for c in &plan.channels {
        unplain_in[c.to] |= c.kind != crate::channel::ChannelKind::Coupled || c.timing != smx_graph::Timing::None;
    }
    let free = |net: usize| {
        let p = &plan.nets[net];
        own(net)
            && p.settings.core.is_none()
            && p.priority.is_none()
            && p.settings.nice.is_none()
            && !(matches!(p.role, Role::Routing) && unplain_in[net])
    };
    let Feeders {
        feeder,
        unchainable,
        long_in,
    } = feeders(plan);
    let consumers = consumers(plan);
    let mut followers: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut has_prev = vec![false; n];
    for a in (0..n).filter(|&a| free(a)) {
        let runs_ahead = {
            let s = spec(a);
            s.never_waits || s.writes_in_batches
        };
        let may_follow = |b: usize| {
            feeder[b] == Some(a) && !unchainable[b] && (!long_in[b] || runs_ahead) && spec(b).chainable && free(b)
        };
        // Several followers only when none of them writes anywhere: a follower blocked on a
        // write of its own would hold its siblings up, which on threads of their own it would
        // not.
        let chained = match consumers[a].as_slice() {
            [b] => may_follow(*b),
            many => many.len() > 1 && many.iter().all(|&b| may_follow(b) && consumers[b].is_empty()),
        };
        if chained {
            followers[a] = consumers[a].clone();
            for &b in &consumers[a] {
                has_prev[b] = true;
            }
        }
    }
    let chains = lay_out(&followers, &has_prev);
    without_cycles(plan, chains, &followers)
}

/// What the channels into each net allow.
struct Feeders {
    /// Per net, the one net that feeds all its inputs, if there is one.
    feeder: Vec<Option<usize>>,
    /// Per net, whether a channel into it may not be chained (several feeders, a decoupled,
    /// time-triggered, looping or long channel).
    unchainable: Vec<bool>,
    /// Per net, whether a channel into it is long enough for threads of one core to take turns.
    long_in: Vec<bool>,
}

fn feeders(plan: &Plan) -> Feeders {
    let n = plan.nets.len();
    let mut f = Feeders {
        feeder: vec![None; n],
        unchainable: vec![false; n],
        long_in: vec![false; n],
    };
    for c in &plan.channels {
        let short = c.len < crate::placement::GROUP_MIN_LEN;
        let plain = c.kind == crate::channel::ChannelKind::Coupled && c.timing == smx_graph::Timing::None;
        match f.feeder[c.to] {
            Some(a) if a != c.from => f.unchainable[c.to] = true,
            _ => f.feeder[c.to] = Some(c.from),
        }
        f.long_in[c.to] |= !short;
        if !plain || c.from == c.to || c.len >= CHAIN_MAX_LEN {
            f.unchainable[c.to] = true;
        }
    }
    f
}

/// The chains that `followers` make, from the nets that follow nobody (which leaves a ring of
/// followers unchained), each listing a box before its followers.
fn lay_out(followers: &[Vec<usize>], has_prev: &[bool]) -> Vec<Vec<usize>> {
    (0..followers.len())
        .filter(|&head| !has_prev[head] && !followers[head].is_empty())
        .map(|head| {
            let mut chain = Vec::new();
            let mut pending = vec![head];
            while let Some(at) = pending.pop() {
                chain.push(at);
                pending.extend(followers[at].iter().rev());
            }
            chain
        })
        .collect()
}

/// `chains` less those with a channel from a member back to an earlier one (a head with a
/// feeder of its own down its line, as a ring through a fan-in makes): a write into that
/// channel, full, would wait for the thread that is writing.
fn without_cycles(plan: &Plan, chains: Vec<Vec<usize>>, followers: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut parent = vec![None; plan.nets.len()];
    for (a, list) in followers.iter().enumerate() {
        for &b in list {
            parent[b] = Some(a);
        }
    }
    let chain_of = plan.chain_of(&chains);
    let mut cyclic = vec![false; chains.len()];
    for c in &plan.channels {
        if let (Some(a), Some(b)) = (chain_of[c.from], chain_of[c.to])
            && a == b
            && parent[c.to] != Some(c.from)
        {
            cyclic[a] = true;
        }
    }
    chains
        .into_iter()
        .zip(cyclic)
        .filter_map(|(chain, cyclic)| (!cyclic).then_some(chain))
        .collect()
}

/// Per net, the nets its channels go to, each once, in net order.
fn consumers(plan: &Plan) -> Vec<Vec<usize>> {
    let mut pairs: Vec<(usize, usize)> = plan.channels.iter().map(|c| (c.from, c.to)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let mut consumers = vec![Vec::new(); plan.nets.len()];
    for (from, to) in pairs {
        consumers[from].push(to);
    }
    consumers
}
