//! The cores of the processes on this machine that name none: left alone, each would place its
//! threads as if it had the machine to itself, and the processes' busiest threads would meet on
//! the same cores. Instead the allowed cores are shared out, each process getting a contiguous
//! share in proportion to its boxes (at least one core); where there are more processes than
//! cores, one core each, in turn, the processes with the most boxes first. Beside a slice with
//! a temporal firewall, which places its own threads over the cores no other process names,
//! the others keep off its cyclic executives' cores.

use std::collections::BTreeMap;

/// Per process name, its share of `allowed`. `local` lists the processes on this machine
/// without cores of their own, each with its number of boxes. Empty when there is nothing to
/// share: fewer than two such processes, or no core.
///
/// With fewer cores than processes each gets one core, in turn: left to itself each would
/// begin its placement on the first core, and all their first threads would meet there while
/// the other cores idled.
pub fn share(local: &[(String, usize)], allowed: &[usize]) -> BTreeMap<String, Vec<usize>> {
    let mut shares = BTreeMap::new();
    if local.len() < 2 || allowed.is_empty() {
        return shares;
    }
    if allowed.len() < local.len() {
        let mut biggest_first: Vec<&(String, usize)> = local.iter().collect();
        biggest_first.sort_by_key(|(_, boxes)| std::cmp::Reverse(*boxes));
        for (k, (name, _)) in biggest_first.into_iter().enumerate() {
            shares.insert(name.clone(), vec![allowed[k % allowed.len()]]);
        }
        return shares;
    }
    let counts = proportional(
        &local.iter().map(|(_, boxes)| (*boxes).max(1)).collect::<Vec<_>>(),
        allowed.len(),
    );
    let mut next = 0;
    for ((name, _), count) in local.iter().zip(counts) {
        shares.insert(name.clone(), allowed[next..next + count].to_vec());
        next += count;
    }
    shares
}

/// Per process of `placed` (its name and the cores its threads may run on), the cores that
/// others of the list may run on as well, and their names; processes that share none are left
/// out.
pub fn overlaps(placed: &[(String, Vec<usize>)]) -> BTreeMap<String, (Vec<usize>, Vec<String>)> {
    let mut shared = BTreeMap::new();
    for (name, cores) in placed {
        let mut common: Vec<usize> = Vec::new();
        let mut with: Vec<String> = Vec::new();
        for (other, theirs) in placed.iter().filter(|(other, _)| other != name) {
            let met: Vec<usize> = cores.iter().copied().filter(|c| theirs.contains(c)).collect();
            if !met.is_empty() {
                common.extend(met);
                with.push(other.clone());
            }
        }
        if !with.is_empty() {
            common.sort_unstable();
            common.dedup();
            shared.insert(name.clone(), (common, with));
        }
    }
    shared
}

/// Beside slices whose cyclic executives have cores to themselves (`kept`: per process, its
/// executives' cores, as its own placement will reserve them), the cores of the `others`
/// (without cores of their own, each with its number of boxes): all of the rest for a single
/// one, else shares of the rest as [`share`] makes them (one core each, in turn, where there
/// are more of them than cores); and the line that says so. Nothing when no core is kept, or
/// none would be left.
pub fn beside_executives(
    kept: &[(String, Vec<usize>)],
    others: &[(String, usize)],
    allowed: &[usize],
) -> (BTreeMap<String, Vec<usize>>, Option<String>) {
    let owners: Vec<&(String, Vec<usize>)> = kept.iter().filter(|(_, cores)| !cores.is_empty()).collect();
    let rest: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|c| !owners.iter().any(|(_, cores)| cores.contains(c)))
        .collect();
    if owners.is_empty() || others.is_empty() || rest.is_empty() {
        return (BTreeMap::new(), None);
    }
    let mut shares = share(others, &rest);
    if shares.is_empty() {
        shares = others.iter().map(|(name, _)| (name.clone(), rest.clone())).collect();
    }
    let owners: Vec<String> = owners
        .iter()
        .map(|(process, cores)| format!("the cyclic executive of {process} has {} to itself", list(cores)))
        .collect();
    let names: Vec<&str> = others.iter().map(|(name, _)| name.as_str()).collect();
    let note = format!(
        "placement: {}, so {} {} {} (the `cores` of a process decide instead)",
        owners.join(" and "),
        names.join(", "),
        if names.len() == 1 { "runs on" } else { "share" },
        list(&rest)
    );
    (shares, Some(note))
}

/// The report's line for the processes (`kept`, each with a temporal firewall) that place
/// their own threads within `allowed`, the cores no other process names; nothing when there
/// are none.
pub fn kept_to_note(kept: &[String], allowed: &[usize]) -> Option<String> {
    if kept.is_empty() {
        return None;
    }
    Some(format!(
        "placement: {} {} threads on {}, which no other process names as its own \
         (the `cores` of a process decide instead)",
        kept.join(", "),
        if kept.len() == 1 { "places its" } else { "place their" },
        list(allowed),
    ))
}

/// The report's line for processes that [`share`] put on one core, with fewer cores than
/// processes: a message between two of them waits for the scheduler to switch, which a user
/// who never named a core would not guess; nothing when each has a core of its own.
pub fn crowded_note(shares: &BTreeMap<String, Vec<usize>>) -> Option<String> {
    let mut by_core: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for (name, cores) in shares {
        if let [core] = cores.as_slice() {
            by_core.entry(*core).or_default().push(name);
        }
    }
    let crowded: Vec<String> = by_core
        .iter()
        .filter(|(_, names)| names.len() > 1)
        .map(|(core, names)| format!("{} on {}", names.join(" and "), list(&[*core])))
        .collect();
    if crowded.is_empty() {
        return None;
    }
    let cores = shares
        .values()
        .flatten()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    Some(format!(
        "placement: {} processes on {}, so {} run together: a message between processes on one \
         core waits for the scheduler to switch between them, twice per message on a channel of length 1 \
         (a longer channel, such as `--channel-len 64`, lets each take turns by the channelful; `cores` of \
         its own for each, or fewer processes on this machine, keep them apart)",
        shares.len(),
        if cores == 1 {
            "1 core".to_string()
        } else {
            format!("{cores} cores")
        },
        crowded.join(", ")
    ))
}

/// "core 3" or "cores 0,1,2".
fn list(cores: &[usize]) -> String {
    let numbers = cores.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    if cores.len() == 1 {
        format!("core {numbers}")
    } else {
        format!("cores {numbers}")
    }
}

/// `total` split in proportion to `weights`, each part at least 1 (largest remainders first).
fn proportional(weights: &[usize], total: usize) -> Vec<usize> {
    let sum: usize = weights.iter().sum();
    let spare = total - weights.len();
    let exact: Vec<f64> = weights.iter().map(|w| spare as f64 * *w as f64 / sum as f64).collect();
    let mut parts: Vec<usize> = exact.iter().map(|e| 1 + e.floor() as usize).collect();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|a, b| (exact[*b] - exact[*b].floor()).total_cmp(&(exact[*a] - exact[*a].floor())));
    let mut left = total - parts.iter().sum::<usize>();
    for i in order.into_iter().cycle() {
        if left == 0 {
            break;
        }
        parts[i] += 1;
        left -= 1;
    }
    parts
}

/// The cores this process may run on.
pub fn allowed() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, filled in by the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|c| libc::CPU_ISSET(*c, &set))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[(&str, usize)]) -> Vec<(String, usize)> {
        list.iter().map(|(n, b)| (n.to_string(), *b)).collect()
    }

    #[test]
    fn processes_on_the_same_cores_each_learn_which_and_with_whom() {
        let placed: Vec<(String, Vec<usize>)> = [("a", vec![0]), ("b", vec![1]), ("c", vec![0, 1]), ("d", vec![2])]
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .collect();
        let shared = overlaps(&placed);
        assert_eq!(shared["a"], (vec![0], vec!["c".to_string()]));
        assert_eq!(shared["b"], (vec![1], vec!["c".to_string()]));
        assert_eq!(shared["c"], (vec![0, 1], vec!["a".to_string(), "b".to_string()]));
        assert!(!shared.contains_key("d"), "a process alone on its cores shares none");
        assert!(overlaps(&placed[..2]).is_empty());
    }

    #[test]
    fn two_processes_on_two_cores_get_one_each() {
        let shares = share(&names(&[("main", 2), ("sinks", 2)]), &[0, 1]);
        assert_eq!(shares["main"], [0]);
        assert_eq!(shares["sinks"], [1]);
        assert_eq!(crowded_note(&shares), None);
    }

    #[test]
    fn processes_put_on_one_core_are_named_with_it() {
        let shares = share(&names(&[("main", 2), ("a", 3), ("b", 2)]), &[0, 1]);
        assert_eq!(
            (&shares["a"], &shares["main"], &shares["b"]),
            (&vec![0], &vec![1], &vec![0])
        );
        let note = crowded_note(&shares).unwrap();
        assert!(
            note.starts_with("placement: 3 processes on 2 cores, so a and b on core 0 run together:"),
            "{note}"
        );
    }

    #[test]
    fn shares_follow_the_boxes_and_every_process_gets_a_core() {
        let shares = share(&names(&[("big", 9), ("small", 1), ("tiny", 0)]), &[2, 3, 4, 5, 6, 7]);
        assert_eq!(shares["big"], [2, 3, 4, 5]);
        assert_eq!(shares["small"], [6]);
        assert_eq!(shares["tiny"], [7]);
        let all: Vec<usize> = shares.values().flatten().copied().collect();
        assert_eq!(all.len(), 6, "every core once: {shares:?}");
    }

    #[test]
    fn beside_an_executive_the_others_keep_off_its_cores() {
        let kept = [("main".to_string(), vec![3])];
        let (shares, note) = beside_executives(&kept, &names(&[("sinks", 2)]), &[0, 1, 2, 3]);
        assert_eq!(shares["sinks"], [0, 1, 2]);
        assert_eq!(
            note.as_deref(),
            Some(
                "placement: the cyclic executive of main has core 3 to itself, so sinks runs on cores 0,1,2 \
                 (the `cores` of a process decide instead)"
            )
        );
        // Two of them share the rest out; on two cores both get the one left.
        let (shares, note) = beside_executives(&kept, &names(&[("a", 1), ("b", 1)]), &[0, 1, 2, 3]);
        assert_eq!((&shares["a"][..], &shares["b"][..]), (&[0, 1][..], &[2][..]));
        assert!(note.unwrap().contains("so a, b share cores 0,1,2 ("));
        let kept = [("main".to_string(), vec![1])];
        let (shares, _) = beside_executives(&kept, &names(&[("a", 1), ("b", 1)]), &[0, 1]);
        assert_eq!((&shares["a"][..], &shares["b"][..]), (&[0][..], &[0][..]));
    }

    #[test]
    fn without_an_executive_or_a_core_left_nothing_is_kept() {
        let none = [("main".to_string(), vec![])];
        assert_eq!(
            beside_executives(&none, &names(&[("sinks", 1)]), &[0, 1]),
            (BTreeMap::new(), None)
        );
        let all = [("main".to_string(), vec![0])];
        assert_eq!(
            beside_executives(&all, &names(&[("sinks", 1)]), &[0]),
            (BTreeMap::new(), None)
        );
        let kept = [("main".to_string(), vec![1])];
        assert_eq!(beside_executives(&kept, &[], &[0, 1]), (BTreeMap::new(), None));
    }

    #[test]
    fn nothing_is_shared_for_one_process_or_no_core() {
        assert!(share(&names(&[("main", 3)]), &[0, 1]).is_empty());
        assert!(share(&names(&[("a", 1), ("b", 1)]), &[]).is_empty());
    }

    #[test]
    fn more_processes_than_cores_take_one_core_each_in_turn_the_biggest_first() {
        let shares = share(&names(&[("p1", 1), ("p2", 1), ("main", 2)]), &[0, 1]);
        assert_eq!(shares["main"], [0]);
        assert_eq!(shares["p1"], [1]);
        assert_eq!(shares["p2"], [0]);
        let shares = share(&names(&[("a", 1), ("b", 1), ("c", 1), ("d", 1), ("e", 1)]), &[4, 5, 6]);
        let cores: Vec<usize> = shares.values().flatten().copied().collect();
        assert_eq!(cores, [4, 5, 6, 4, 5], "{shares:?}");
    }
}
